#!/usr/bin/python3
"""tests/fs/test_safety.py - a mount that can be shared (docs/fs.md "Permissions", "Symlinks").

Through real mounts of a small logdir (generated profiles, a root-only 0600
file, symlinks inside and out of the source):
- identity: findmnt shows SOURCE and fuse.xprofs, `mount` names xprofs, and
  a second xprofs on the same mountpoint is refused (exit != 0, one line)
  without stacking a mount;
- permissions, checked as the real unprivileged user nobody (uid 65534,
  setpriv) against an allow_other mount made by root: a 0600 root file is
  shown 0600 root and cannot be read or appended to, cache files cannot be
  deleted, runs/ takes no mkdir, capture takes no write (root's open works);
  views of a 0600 profile are 0400 and unreadable, of a 0644 one readable;
- session-wide files (summary.json, ops.json, compare/<other>/{ops,steps}.json)
  are readable only by whom may read every profile they combine, also when a
  host is a symlink a user made to a root-only profile (judged by its target,
  as the host view is), and also after root's read left the render cached;
- modes: creates and mkdirs honour the caller's mode and umask exactly,
  chmod/chown/utimens change logdir/ files in the source and are refused on
  an existing profile and under runs/;
- names: mkdir runs/NAME refuses what the capture grammar refuses (newline);
- symlinks: logdir/ shows links as links (readlink), os.walk of logdir/
  equals os.walk of the source (a `loop -> ..` link does not expand), runs/
  lists a linked run inside the root under the link's name and never enters
  the loop, a run linked from outside appears only with
  follow_symlinks=outside.

TAP output; skipped without /dev/fuse, fusermount3, root or setpriv (the
permission checks need a real second user).
"""
import errno
import json
import os
import shutil
import stat
import subprocess
import sys

import xmount
import xtap
from xmount import errno_of

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def as_nobody(*cmd):
    """Run @cmd as uid/gid 65534; (exit status, stderr)."""
    p = subprocess.run(NOBODY + list(cmd), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr.strip()


def gen(path, kind, seed):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    subprocess.check_call([GEN, "--kind", kind, "--size", "64K", "--seed", str(seed), "-o", path])


def walk_set(top):
    """Every (relative dir, sorted dirs, sorted files) os.walk (no link following) sees."""
    out = []
    for d, dirs, files in os.walk(top):
        out.append((os.path.relpath(d, top), sorted(dirs), sorted(files)))
    return sorted(out)


def identity(t, w, src, m):
    fm = subprocess.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", m.mnt], capture_output=True,
                        text=True).stdout.split()
    t.ok(fm == [src, "fuse.xprofs"], "findmnt: SOURCE fuse.xprofs", str(fm))
    mo = subprocess.run(["mount"], capture_output=True, text=True).stdout
    t.ok(any(ln.startswith(src + " on " + m.mnt + " type fuse.xprofs ") for ln in mo.splitlines()),
         "mount: SOURCE on MOUNTPOINT type fuse.xprofs")
    with open("/proc/self/mountinfo") as f:
        opts = [ln for ln in f if " %s " % m.mnt in ln]
    t.ok(len(opts) == 1 and "default_permissions" in opts[0], "default_permissions is on")
    p = subprocess.Popen([xmount.XPROFS, src, m.mnt, "-f", "-o", "cache_dir=" + m.cache],
                         stderr=subprocess.PIPE, text=True)
    try:
        err = p.communicate(timeout=60)[1]
    except subprocess.TimeoutExpired:  # it mounted over the first one: undo that
        subprocess.call(["fusermount3", "-u", m.mnt])
        err = p.communicate()[1]
    lines = err.strip().splitlines()
    t.ok(p.returncode != 0 and len(lines) == 1 and "already a FUSE mount" in lines[0],
         "a second mount on the same mountpoint is refused with one line", err)
    with open("/proc/self/mountinfo") as f:
        n = sum(1 for ln in f if " %s " % m.mnt in ln)
    t.ok(n == 1, "and nothing was stacked (%d mount)" % n)


def permissions(t, src, mnt, sess_rel):
    L = os.path.join(mnt, "logdir")
    st, sst = os.stat(os.path.join(L, "secret")), os.stat(os.path.join(src, "secret"))
    t.ok(stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0 and st.st_gid == 0,
         "a 0600 root file shows 0600 root", oct(st.st_mode))
    t.ok(st.st_mtime_ns == sst.st_mtime_ns and st.st_atime_ns == sst.st_atime_ns and
         st.st_ctime_ns == sst.st_ctime_ns, "and the source's times")
    rc, e = as_nobody("cat", os.path.join(L, "secret"))
    t.ok(rc != 0 and "Permission denied" in e, "nobody cannot read it", e)
    rc, e = as_nobody("sh", "-c", "echo x >> '%s'" % os.path.join(L, "secret"))
    t.ok(rc != 0 and "Permission denied" in e, "nobody cannot append to it", e)
    with open(os.path.join(src, "secret")) as f:
        t.ok(f.read() == "secret\n", "the source file is unchanged")
    with open(os.path.join(L, "secret")) as f:
        t.ok(f.read() == "secret\n", "the mounting user (root) reads it")
    cache = os.path.join(L, sess_rel, ".cached_tools.json")
    rc, e = as_nobody("rm", "-f", cache)
    t.ok(rc != 0 and os.path.exists(os.path.join(src, sess_rel, ".cached_tools.json")),
         "nobody cannot delete a cache file", e)
    rc, e = as_nobody("mkdir", os.path.join(mnt, "runs", "x"))
    t.ok(rc != 0 and not os.path.exists(os.path.join(src, "x")), "nobody cannot mkdir runs/x", e)
    for cap in (os.path.join(mnt, "capture"), os.path.join(mnt, "runs", "run", "capture")):
        rc, e = as_nobody("sh", "-c", "echo localhost:1 duration_ms=10 > '%s'" % cap)
        t.ok(rc != 0 and "Permission denied" in e, "nobody cannot write %s" % cap[len(mnt):], e)
        cst = os.stat(cap)
        t.ok(stat.S_IMODE(cst.st_mode) == 0o644 and cst.st_uid == os.getuid(),
             "  it is 0644, owned by the mounting user")
        rc, e = as_nobody("cat", cap)
        t.ok(rc == 0, "  nobody reads it (as status.json)", e)
        fd = os.open(cap, os.O_WRONLY)
        os.close(fd)
        t.ok(True, "  the mounting user opens it for writing")
    rc, e = as_nobody("cat", os.path.join(mnt, "status.json"))
    t.ok(rc == 0, "nobody reads status.json", e)
    H = os.path.join(mnt, "runs", "run", "s1")
    vst, dst = os.stat(os.path.join(H, "closed", "summary.json")), os.stat(os.path.join(H, "closed"))
    t.ok(stat.S_IMODE(vst.st_mode) == 0o400 and vst.st_uid == 0, "a view of a 0600 profile is 0400",
         oct(vst.st_mode))
    t.ok(stat.S_IMODE(dst.st_mode) == 0o500, "its host directory is 0500", oct(dst.st_mode))
    rc, e = as_nobody("cat", os.path.join(H, "closed", "summary.json"))
    t.ok(rc != 0 and "Permission denied" in e, "nobody cannot read it", e)
    ost = os.stat(os.path.join(H, "open", "trace.json"))
    t.ok(stat.S_IMODE(ost.st_mode) == 0o444, "a view of a 0644 profile is 0444", oct(ost.st_mode))
    p = subprocess.run(NOBODY + ["cat", os.path.join(H, "open", "summary.json")],
                       capture_output=True, timeout=120)
    t.ok(p.returncode == 0 and "planes" in json.loads(p.stdout), "nobody reads it (valid JSON)")


def session_setup(src):
    """run/s2: one 0644 host. shared/ (owned by nobody): s = nobody's 0644 host plus a
    link nobody made to a 0600 root profile behind a 0700 directory; t = one 0644 host."""
    gen(os.path.join(src, "run", "plugins", "profile", "s2", "open2.xplane.pb"), "cpu", 4)
    hidden = os.path.join(src, "hidden")
    gen(os.path.join(hidden, "root.xplane.pb"), "cpu", 5)
    os.chmod(os.path.join(hidden, "root.xplane.pb"), 0o600)
    os.chmod(hidden, 0o700)
    sp = os.path.join(src, "shared", "plugins", "profile")
    gen(os.path.join(sp, "s", "mine.xplane.pb"), "cpu", 6)
    gen(os.path.join(sp, "t", "mine.xplane.pb"), "cpu", 7)
    for d, dirs, files in os.walk(os.path.join(src, "shared")):
        for n in [d] + [os.path.join(d, x) for x in files]:
            os.chown(n, 65534, 65534)
    rc, e = as_nobody("ln", "-s", "../../../../hidden/root.xplane.pb",
                      os.path.join(sp, "s", "k.xplane.pb"))
    if rc != 0:
        raise RuntimeError("nobody could not make the link: " + e)


def session_permissions(t, mnt):
    """Session-wide files combine hosts: readable only if every host is (issue 25 item 0)."""
    R = os.path.join(mnt, "runs")
    denied = [os.path.join("run", "s1", "summary.json"), os.path.join("run", "s1", "ops.json"),
              os.path.join("run", "s1", "compare", "s2", "ops.json"),
              os.path.join("run", "s1", "compare", "s2", "steps.json"),
              os.path.join("run", "s2", "compare", "s1", "ops.json"),
              os.path.join("run", "s2", "compare", "s1", "steps.json"),
              os.path.join("shared", "s", "summary.json"), os.path.join("shared", "s", "ops.json"),
              os.path.join("shared", "t", "compare", "s", "ops.json"),
              os.path.join("shared", "s", "compare", "t", "steps.json"),
              os.path.join("run", "s1", "compare", "s2", "summary.json"),
              os.path.join("run", "s2", "compare", "s1", "summary.json"),
              os.path.join("shared", "t", "compare", "s", "summary.json")]
    allowed = [os.path.join("run", "s2", "summary.json"), os.path.join("run", "s2", "ops.json"),
               os.path.join("shared", "t", "summary.json"), os.path.join("shared", "t", "ops.json"),
               os.path.join("shared", "s", "mine", "ops.json")]
    # root reads everything first, so each render is in the cache when nobody asks
    for rel in denied + allowed:
        with open(os.path.join(R, rel), "rb") as f:
            data = f.read()
        t.ok(len(data) > 0 and json.loads(data) is not None, "root reads runs/%s" % rel)
    rc, e = as_nobody("cat", os.path.join(R, "shared", "s", "k", "ops.json"))
    t.ok(rc != 0 and "Permission denied" in e, "nobody cannot read the linked host's view", e)
    for rel in denied:
        st = os.stat(os.path.join(R, rel))
        rc, e = as_nobody("cat", os.path.join(R, rel))
        t.ok(rc != 0 and "Permission denied" in e,
             "nobody cannot read runs/%s (a host in it is root-only; mode %o uid %d, cached)"
             % (rel, stat.S_IMODE(st.st_mode), st.st_uid), e)
    for rel in allowed:
        p = subprocess.run(NOBODY + ["cat", os.path.join(R, rel)], capture_output=True, timeout=120)
        t.ok(p.returncode == 0 and json.loads(p.stdout) is not None,
             "nobody reads runs/%s (every host readable)" % rel, p.stderr.decode()[-300:])
    st = os.stat(os.path.join(R, "run", "s2", "ops.json"))
    t.ok(stat.S_IMODE(st.st_mode) == 0o444, "run/s2/ops.json stays 0444", oct(st.st_mode))
    st = os.stat(os.path.join(R, "run", "s1", "ops.json"))
    t.ok(stat.S_IMODE(st.st_mode) == 0o400 and st.st_uid == 0,
         "run/s1/ops.json is 0400 root, as its 0600 root host", oct(st.st_mode))


def modes(t, src, mnt, sess_rel):
    L = os.path.join(mnt, "logdir")
    old = os.umask(0o077)
    try:
        fd = os.open(os.path.join(L, "new.txt"), os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
        os.mkdir(os.path.join(L, "d700"), 0o700)
        fd = os.open(os.path.join(L, sess_rel, "made.xplane.pb"), os.O_CREAT | os.O_WRONLY, 0o640)
        os.write(fd, b"x")
        os.close(fd)
    finally:
        os.umask(old)
    m = lambda p: stat.S_IMODE(os.lstat(os.path.join(src, p)).st_mode)
    t.ok(m("new.txt") == 0o600, "umask 077; open(O_CREAT, 0600) -> 0600 in the source",
         oct(m("new.txt")))
    t.ok(m("d700") == 0o700, "mkdir 0700 -> 0700", oct(m("d700")))
    t.ok(m(os.path.join(sess_rel, "made.xplane.pb")) == 0o600,
         "a new profile 0640 under umask 077 -> 0600")
    old = os.umask(0)
    try:
        fd = os.open(os.path.join(L, "open.txt"), os.O_CREAT | os.O_WRONLY, 0o666)
        os.close(fd)
        os.mkdir(os.path.join(L, "d777"), 0o777)
    finally:
        os.umask(old)
    t.ok(m("open.txt") == 0o666 and m("d777") == 0o777,
         "umask 0: 0666 file, 0777 dir, exactly (whatever the daemon's umask)")
    os.chmod(os.path.join(L, "new.txt"), 0o640)
    t.ok(m("new.txt") == 0o640, "chmod changes the source file")
    os.utime(os.path.join(L, "new.txt"), ns=(1000000000, 2000000000))
    sst = os.stat(os.path.join(src, "new.txt"))
    t.ok(sst.st_mtime_ns == 2000000000 and sst.st_atime_ns == 1000000000,
         "utimens changes its times")
    os.chown(os.path.join(L, "new.txt"), 65534, 65534)
    sst = os.stat(os.path.join(src, "new.txt"))
    t.ok(sst.st_uid == 65534 and sst.st_gid == 65534, "chown changes its owner")
    rc, e = as_nobody("touch", os.path.join(L, "d777", "byn"))
    bst = os.lstat(os.path.join(src, "d777", "byn"))
    t.ok(rc == 0 and bst.st_uid == 65534 and bst.st_gid == 65534,
         "nobody creates a file in a 0777 directory, owned by nobody", e)
    rc, e = as_nobody("mkdir", os.path.join(L, "d777", "dbyn"))
    t.ok(rc == 0 and os.lstat(os.path.join(src, "d777", "dbyn")).st_uid == 65534,
         "and a directory", e)
    prof = os.path.join(L, sess_rel, "open.xplane.pb")
    before = os.stat(os.path.join(src, sess_rel, "open.xplane.pb"))
    t.ok(errno_of(os.chmod, prof, 0o600) == errno.EPERM, "chmod of an existing profile: EPERM")
    t.ok(errno_of(os.utime, prof, None) == errno.EPERM, "utimens of it: EPERM")
    t.ok(errno_of(os.chown, prof, 65534, -1) == errno.EPERM, "chown of it: EPERM")
    after = os.stat(os.path.join(src, sess_rel, "open.xplane.pb"))
    t.ok(before.st_mode == after.st_mode and before.st_mtime_ns == after.st_mtime_ns and
         before.st_uid == after.st_uid, "the profile is unchanged")
    view = os.path.join(mnt, "runs", "run", "s1", "open", "summary.json")
    t.ok(errno_of(os.chmod, view, 0o444) == errno.EPERM, "chmod under runs/: EPERM")


def names(t, src, mnt):
    r = os.path.join(mnt, "runs")
    t.ok(errno_of(os.mkdir, os.path.join(r, "a\nb")) == errno.EINVAL,
         "mkdir runs/<name with a newline>: EINVAL")
    t.ok(errno_of(os.mkdir, os.path.join(r, "a\\b")) == errno.EINVAL, "mkdir runs/a\\b: EINVAL")
    t.ok(not [n for n in os.listdir(src) if n in ("a\nb", "a\\b", "a")],
         "nothing made in the source")
    t.ok(errno_of(os.mkdir, os.path.join(r, "good_run")) == 0 and
         os.path.isdir(os.path.join(src, "good_run", "plugins", "profile")),
         "a valid run name is made")


def symlinks(t, src, mnt, ext_run):
    L = os.path.join(mnt, "logdir")
    t.ok(os.path.islink(os.path.join(L, "alias")) and
         os.readlink(os.path.join(L, "alias")) == "run", "logdir/alias is a symlink -> run")
    t.ok(os.path.islink(os.path.join(L, "run", "loop")) and
         os.readlink(os.path.join(L, "run", "loop")) == "..", "logdir/run/loop -> ..")
    t.ok(os.path.islink(os.path.join(L, "dangling")) and
         not os.path.exists(os.path.join(L, "dangling")), "a dangling link is a link")
    t.ok(os.readlink(os.path.join(L, "extlink")) == ext_run,
         "a link out of the source shows its target")
    ws, wm = walk_set(src), walk_set(L)
    t.ok(ws == wm, "os.walk of logdir/ equals os.walk of the source (%d dirs)" % len(wm),
         "%s\n%s" % (ws, wm))
    fo = subprocess.run(["find", L], capture_output=True, text=True, timeout=60)
    t.ok(fo.returncode == 0 and len(fo.stdout.splitlines()) < 100, "find logdir/ terminates: loop not expanded")
    os.symlink("run", os.path.join(L, "made_link"))
    t.ok(os.readlink(os.path.join(src, "made_link")) == "run", "ln -s through the mount makes a link")
    runs = sorted(os.listdir(os.path.join(mnt, "runs")))
    t.ok("alias" in runs and "run" in runs and "extlink" not in runs,
         "runs/ lists the linked run inside the root, not the one outside", str(runs))
    t.ok(sorted(os.listdir(os.path.join(mnt, "runs", "alias", "s1"))) ==
         sorted(os.listdir(os.path.join(mnt, "runs", "run", "s1"))), "runs/alias/s1 = runs/run/s1")
    t.ok("loop" not in os.listdir(os.path.join(mnt, "runs", "run")), "the loop is not a run")
    with open(os.path.join(mnt, "status.json")) as f:
        st = json.load(f)
    t.ok(max(len(p.split("/")) for p in walk_runs(os.path.join(mnt, "runs"))) <= 6,
         "runs/ stays shallow (no loop expansion)")


def walk_runs(top):
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x not in ("planes", "steps", "window")]
        yield os.path.relpath(d, top)


def outside(t, w, src):
    m = w.mount(src, name="mnt-out", opts=",follow_symlinks=outside,allow_other")
    runs = os.listdir(os.path.join(m.mnt, "runs"))
    t.ok("extlink" in runs, "follow_symlinks=outside: the outside run appears", str(runs))
    with open(os.path.join(m.mnt, "runs", "extlink", "s9", "h", "summary.json")) as f:
        t.ok("planes" in json.load(f), "  and its views render")
    t.ok(os.path.islink(os.path.join(m.mnt, "logdir", "extlink")), "  logdir/ still shows a link")
    m.close()
    p = subprocess.run([xmount.XPROFS, src, m.mnt, "-f", "-o", "follow_symlinks=maybe"],
                       capture_output=True, text=True, timeout=60)
    t.ok(p.returncode != 0 and "follow_symlinks" in p.stderr, "a bad follow_symlinks= is refused")
    p = subprocess.run([xmount.XPROFS, src, m.mnt, "-f", "-o", "uid=5"],
                       capture_output=True, text=True, timeout=60)
    t.ok(p.returncode != 0 and "gs://" in p.stderr, "uid= on a local source is refused")


def body(t, w):
    os.chmod(w.path, 0o755)  # nobody must traverse the work dir
    src = os.path.join(w.path, "src")
    sess_rel = os.path.join("run", "plugins", "profile", "s1")
    gen(os.path.join(src, sess_rel, "open.xplane.pb"), "cpu", 1)
    gen(os.path.join(src, sess_rel, "closed.xplane.pb"), "cpu", 2)
    os.chmod(os.path.join(src, sess_rel, "closed.xplane.pb"), 0o600)
    with open(os.path.join(src, sess_rel, ".cached_tools.json"), "w") as f:
        f.write("{}")
    with open(os.path.join(src, "secret"), "w") as f:
        f.write("secret\n")
    os.chmod(os.path.join(src, "secret"), 0o600)
    os.symlink("run", os.path.join(src, "alias"))
    os.symlink("..", os.path.join(src, "run", "loop"))
    os.symlink("nowhere", os.path.join(src, "dangling"))
    ext_run = os.path.join(w.path, "ext", "extrun")
    gen(os.path.join(ext_run, "plugins", "profile", "s9", "h.xplane.pb"), "gpu", 3)
    os.symlink(ext_run, os.path.join(src, "extlink"))
    session_setup(src)

    m = w.mount(src, opts=",allow_other")
    identity(t, w, src, m)
    permissions(t, src, m.mnt, sess_rel)
    session_permissions(t, m.mnt)
    symlinks(t, src, m.mnt, ext_run)
    modes(t, src, m.mnt, sess_rel)
    names(t, src, m.mnt)
    m.close()
    outside(t, w, src)


def main():
    if os.getuid() != 0 or not shutil.which("setpriv") or not shutil.which("findmnt"):
        return xtap.skip_all("needs root (an allow_other mount and a second user), setpriv, findmnt")
    return xmount.run("xprofs-safety-", body)


if __name__ == "__main__":
    sys.exit(main())
