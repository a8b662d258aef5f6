#!/usr/bin/python3
"""tests/fs/test_gcs_perms.py - permissions of a gs:// mount (docs/fs.md "Permissions").

GCS has no modes or owners, so a gs:// mount shows fixed ones, as gcsfuse
(--uid/--gid/--file-mode/--dir-mode) and rclone (--uid/--gid/--umask) do.
Through a real mount of a bucket in the offline emulator (the gs:// tests'
harness), with a generated profile and a plain file:
- by default: files 0644 and directories 0755, owned by the mounting user;
- with -o uid=65534,gid=65534,umask=027: files 0640 and directories 0750,
  owned by 65534:65534; runs/ follows the profile (host directory 0550,
  views 0440); the mount's own files stay the mounting user's;
- chmod of a plain file is accepted without effect (nothing to change in the
  bucket), chmod/utimens of a profile is EPERM, as on a local source;
- the kernel checks them (default_permissions): nobody cannot read a view
  of the 0640 profile owned by another user.
TAP output; exit 77 when FUSE, the xprofs binary or the emulator is absent.
"""
import errno
import os
import stat
import subprocess
import sys

import gcs_harness as gh

URL = "gs://bkt/logs"
SESS = os.path.join("run", "plugins", "profile", "s1")


def mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


def main(t, h):
    src = os.path.join(h.work, "src")
    os.makedirs(os.path.join(src, SESS))
    gen = os.path.join(gh.build_root(), "tools", "xprofs-gen")
    subprocess.check_call([gen, "--kind", "cpu", "--size", "64K", "-o",
                           os.path.join(src, SESS, "h.xplane.pb")])
    with open(os.path.join(src, SESS, "notes.txt"), "w") as f:
        f.write("notes\n")
    h.start_emulator()
    h.seed(src, URL)

    mnt, _, log = h.mount(URL, h.emu_url, ["anonymous"])
    L = os.path.join(mnt, "logdir", SESS)
    st = os.stat(os.path.join(L, "notes.txt"))
    t.ok(mode(os.path.join(L, "notes.txt")) == 0o644 and st.st_uid == os.getuid(),
         "default: a file is 0644, the mounting user's", oct(st.st_mode))
    t.ok(mode(L) == 0o755, "default: a directory is 0755", oct(mode(L)))
    t.ok(h.umount(mnt) == 0, "unmount", h.log(log))

    os.chmod(h.work, 0o755)
    mnt, _, log = h.mount(URL, h.emu_url, ["anonymous", "uid=65534", "gid=65534", "umask=027",
                                           "allow_other"])
    L = os.path.join(mnt, "logdir", SESS)
    st = os.stat(os.path.join(L, "notes.txt"))
    t.ok(mode(os.path.join(L, "notes.txt")) == 0o640 and st.st_uid == 65534 and st.st_gid == 65534,
         "uid=65534,gid=65534,umask=027: a file is 0640 65534:65534", oct(st.st_mode))
    t.ok(mode(L) == 0o750 and os.stat(L).st_uid == 65534, "a directory is 0750", oct(mode(L)))
    H = os.path.join(mnt, "runs", "run", "s1", "h")
    t.ok(mode(H) == 0o550 and mode(os.path.join(H, "summary.json")) == 0o440 and
         os.stat(H).st_uid == 65534, "runs/: the host directory 0550, its views 0440")
    t.ok(os.stat(os.path.join(mnt, "capture")).st_uid == os.getuid() and
         mode(os.path.join(mnt, "capture")) == 0o644, "capture stays the mounting user's, 0644")
    before = mode(os.path.join(L, "notes.txt"))
    os.chmod(os.path.join(L, "notes.txt"), 0o600)
    t.ok(mode(os.path.join(L, "notes.txt")) == before, "chmod of a plain file: accepted, no effect")
    for fn, name in ((lambda p: os.chmod(p, 0o600), "chmod"), (lambda p: os.utime(p, None), "utimens")):
        try:
            fn(os.path.join(L, "h.xplane.pb"))
            e = 0
        except OSError as x:
            e = x.errno
        t.ok(e == errno.EPERM, "%s of a profile: EPERM" % name, str(e))
    # nobody is the owner here: it may read; a user of another group may not
    p = subprocess.run(["setpriv", "--reuid=65533", "--regid=65533", "--clear-groups", "cat",
                        os.path.join(H, "summary.json")], capture_output=True, text=True)
    t.ok(p.returncode != 0 and "Permission denied" in p.stderr,
         "uid 65533 (not owner, not group) cannot read a view", p.stderr)
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat",
                        os.path.join(H, "summary.json")], capture_output=True, text=True)
    t.ok(p.returncode == 0 and "planes" in p.stdout, "the owner (65534) reads it", p.stderr)
    t.ok(h.umount(mnt) == 0, "unmount", h.log(log))


if __name__ == "__main__":
    if os.getuid() != 0:
        print("1..0 # SKIP needs root (allow_other and other users)")
        sys.exit(0)
    sys.exit(gh.run(main))
