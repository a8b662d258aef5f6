#!/usr/bin/python3
"""tests/tools/test_docs.py - every example in README.md and docs/*.md runs.

docs/cookbook.md has its own test (test_cookbook.py); this one covers the
rest, so no documented command can rot (issue 13).

Each fenced block of those files must say what it is:
- ```sh   a command example: it is run, as written, with bash -e -o pipefail;
- ```json a JSON example: it must parse (a stream of values, as JSON lines are);
- ```text output, a synopsis, a tree or a config line: shown only. A text
          block may not hold a "$ " transcript (that is a command example).
A sh block that must not run here says why on the line just before it:
`<!-- not run: REASON -->` (the suite itself, a build); each is reported as
a TAP skip with its reason, and the file may have only a few.

The commands run as written, so the test gives them the machine they assume,
in namespaces of their own (unshare -m -n; root is needed, else the test is
skipped): a private /mnt and /tmp (tmpfs), HOME with the demo logdir at
~/logs, an /etc/hosts naming worker0..2, host1 and host2, the addresses
10.0.0.2 and 10.0.0.3 on loopback, a profiler server (tests/capture/
profiler_server.py, real gRPC) on port 9012 of every one of those hosts, and
the GCS emulator on 127.0.0.1:9023 holding the demo logdir at gs://my-bucket/
logs, gs://my-bucket/experiments/logs, gs://public-bucket/logs and gs://bkt/
logs, with STORAGE_EMULATOR_HOST set as Google's client libraries read it.
Nothing outside the namespaces is touched, so two copies of the suite can run
side by side. Two programs the examples name are not installable here and are
stand-ins on PATH, which say so when they run: `tensorboard` (checks that
--logdir holds profiles TensorBoard's profile plugin would list, and lists
them) and `xdg-open` (checks the file is there and not empty, or prints the
URL). Blocks run from a
directory that looks like the clone (its entries, build/ being the build
under test). The blocks of one file run in order in one shell environment's worth
of state (a mount made by one block is used by the next); every xprofs mount
is undone after each file. The namespace first detaches its copies of the
FUSE mounts outside (other tests' mounts: a copy would keep their daemons
serving after their unmount); a mount made before it checks that. TAP output.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import xmount
import xtap

ROOT = os.path.abspath(os.environ.get("XPROFS_SOURCE_ROOT", "."))
BUILD = os.path.abspath(os.environ.get("XPROFS_BUILD_ROOT", "build"))
FILES = ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(ROOT, "docs"))
                               if f.endswith(".md") and f != "cookbook.md")
LANGS = {"sh", "json", "text"}
MAX_NOT_RUN = 6  # blocks that may say "not run" in all the files together
# hostname -> loopback address; every one gets a profiler server on :9012
HOSTS = {"localhost": "127.0.0.1", "worker0": "127.0.0.2", "worker1": "127.0.0.3",
         "worker2": "127.0.0.4", "host1": "127.0.0.5", "host2": "127.0.0.6",
         "10.0.0.2": "10.0.0.2", "10.0.0.3": "10.0.0.3"}
BUCKETS = ["gs://my-bucket/logs", "gs://my-bucket/experiments/logs", "gs://public-bucket/logs",
           "gs://bkt/logs"]
EMU_PORT = 9023

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->\s*$")

TENSORBOARD = r'''#!/bin/sh
# stand-in for TensorBoard (not installable here): lists what its profile
# plugin would under --logdir (tests/tools/tb_walk.py, ../shared/reference/
# tensorboard.md's rules) and fails when that is nothing
echo "tensorboard (test stand-in): what the profile plugin would list" >&2
dir=
while [ $# -gt 0 ]; do
	case "$1" in --logdir) dir=$2; shift ;; --logdir=*) dir=${1#--logdir=} ;; esac
	shift
done
[ -n "$dir" ] && [ -d "$dir" ] || { echo "tensorboard: no --logdir directory" >&2; exit 1; }
/usr/bin/python3 "$XPROFS_SOURCE_ROOT/tests/tools/tb_walk.py" "$dir" >"$TMPDIR/tb.json" || exit 1
cat "$TMPDIR/tb.json"
jq -e '[.runs[] | .[] | .[]] | length > 0' "$TMPDIR/tb.json" >/dev/null
'''
XDG_OPEN = r'''#!/bin/sh
# stand-in for a desktop opener (no desktop here)
echo "xdg-open (test stand-in): $1" >&2
case "$1" in
http://*|https://*) echo "would open $1" ;;
*) n=$(wc -c <"$1") && [ "$n" -gt 0 ] && echo "would open $1 ($n bytes)" ;;  # reads it: a view not rendered yet stats as 0
esac
'''


def blocks(path):
    """[(index, lang, code, not_run_reason or None)] of one markdown file."""
    text = open(path).read()
    out = []
    for i, m in enumerate(FENCE.finditer(text)):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        nr = NOT_RUN.search(before)
        out.append((i + 1, m.group(1), m.group(2), nr.group(1) if nr else None))
    return out


def sh(cmd, **kw):
    subprocess.run(cmd, shell=True, check=True, **kw)


def wait_file(path, proc, what, timeout=60):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > end:
            raise RuntimeError("%s did not start" % what)
        time.sleep(0.05)


def unescape_mount_path(p):
    """A path as /proc/self/mounts writes it (octal escapes for space, tab, newline, backslash)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), p)


def fuse_mounts():
    """The FUSE mount points this namespace sees (not fusectl), in mount order."""
    with open("/proc/self/mounts") as f:
        fields = [ln.split() for ln in f]
    return [unescape_mount_path(f[1]) for f in fields
            if f[2] in ("fuse", "fuseblk") or f[2].startswith("fuse.")]


def unmount_all():
    for m in reversed(fuse_mounts()):
        subprocess.run(["fusermount3", "-u", "-z", m], capture_output=True)


class World:
    """The machine the examples assume, inside our own namespaces."""

    def __init__(self):
        self.procs = []
        sh("ip link set lo up")
        for a in sorted(set(HOSTS.values())):
            if not a.startswith("127."):
                sh("ip addr add %s/32 dev lo" % a)
        sh("mount -t tmpfs xprofs-docs /mnt")
        self.w = "/mnt/.xprofs-docs"
        os.mkdir(self.w)
        # a private /tmp; a checkout or build under the real /tmp (a CI clone)
        # is bound back at its own path so the test still sees itself
        real = os.path.join(self.w, "realtmp")
        os.mkdir(real)
        sh("mount --bind /tmp %s" % real)
        sh("mount -t tmpfs xprofs-docs-tmp /tmp")
        for d in sorted({ROOT, BUILD}):
            if d.startswith("/tmp/"):
                os.makedirs(d, exist_ok=True)
                sh("mount --bind %s %s" % (os.path.join(real, d[len("/tmp/"):]), d))
        hosts = os.path.join(self.w, "hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n::1 localhost ip6-localhost\n")
            for name, a in HOSTS.items():
                if not name[0].isdigit() and name != "localhost":
                    f.write("%s %s\n" % (a, name))
        sh("mount --bind %s /etc/hosts" % hosts)
        # the examples run "from a clone": its files, with build/ the build under test
        self.clone = os.path.join(self.w, "clone")
        os.mkdir(self.clone)
        for e in os.listdir(ROOT):
            if not e.startswith(".") and not e.startswith("build"):
                os.symlink(os.path.join(ROOT, e), os.path.join(self.clone, e))
        os.symlink(BUILD, os.path.join(self.clone, "build"))
        self.home = os.path.join(self.w, "home")
        os.mkdir(self.home)
        self.bin = os.path.join(self.w, "bin")
        os.mkdir(self.bin)
        for name, body in [("tensorboard", TENSORBOARD), ("xdg-open", XDG_OPEN)]:
            p = os.path.join(self.bin, name)
            with open(p, "w") as f:
                f.write(body)
            os.chmod(p, 0o755)
        self.env = dict(os.environ, HOME=self.home, TMPDIR="/tmp", XPROFS_SOURCE_ROOT=ROOT,
                        STORAGE_EMULATOR_HOST="http://127.0.0.1:%d" % EMU_PORT,
                        PATH=":".join([self.bin, os.path.join(BUILD, "fs"), os.path.join(BUILD, "tools"),
                                       os.environ["PATH"]]))
        self.env.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
        demo = os.path.join(self.home, "logs")
        subprocess.check_call([os.path.join(BUILD, "tools", "xprofs-gen"), "--demo", demo],
                              stdout=subprocess.DEVNULL)
        self.start_servers()
        self.start_emulator(demo)

    def start_servers(self):
        server = os.path.join(ROOT, "tests", "capture", "profiler_server.py")
        for a in sorted(set(HOSTS.values())):
            d = os.path.join(self.w, "srv-" + a)
            os.mkdir(d)
            log = open(os.path.join(d, "log"), "w")
            p = subprocess.Popen(["/usr/bin/python3", server, "--bind", a, "--port", "9012",
                                  "--port-file", os.path.join(d, "port")],
                                 stdout=log, stderr=subprocess.STDOUT, env=self.env)
            self.procs.append(p)
            wait_file(os.path.join(d, "port"), p, "profiler server on %s:9012" % a)

    def start_emulator(self, demo):
        d = os.path.join(self.w, "emulator")
        p = subprocess.run(["bash", os.path.join(ROOT, "tests", "lib", "emulator.sh"), "start", d],
                           capture_output=True, text=True, timeout=120,
                           env=dict(self.env, EMULATOR_PORT=str(EMU_PORT),
                                    EMULATOR_PARENT_PID=str(os.getpid())))
        if p.returncode == xtap.SKIP:
            raise xtap.Skip(p.stderr.strip())
        if p.returncode != 0:
            raise RuntimeError("emulator did not start: " + p.stderr)
        seed = os.path.join(ROOT, "tests", "gcs", "emulator", "seed.js")
        for url in BUCKETS:
            subprocess.run(["node", seed, demo, url], check=True, capture_output=True, timeout=300,
                           env=self.env)

    def close(self):
        unmount_all()
        for p in self.procs:
            p.kill()
            p.wait()
        subprocess.run(["bash", os.path.join(ROOT, "tests", "lib", "emulator.sh"), "stop",
                        os.path.join(self.w, "emulator")], capture_output=True)


def check_static(t, name, bl):
    """The rules every block follows; returns the sh blocks to run."""
    run = []
    for i, lang, code, reason in bl:
        where = "%s block %d" % (name, i)
        if lang not in LANGS:
            t.ok(False, "%s is marked sh, json or text" % where, "marked %r:\n%s" % (lang, code[:300]))
            continue
        if lang == "json":
            dec, pos, n, err = json.JSONDecoder(), 0, 0, None
            s = code.strip()
            try:
                while pos < len(s):
                    _, pos = dec.raw_decode(s, pos)
                    n += 1
                    while pos < len(s) and s[pos].isspace():
                        pos += 1
            except ValueError as e:
                err = str(e)
            t.ok(err is None and n > 0, "%s: valid JSON (%d values)" % (where, n), err or "")
        elif lang == "text":
            t.ok(not re.search(r"^\$ ", code, re.M), "%s (text) holds no $ transcript" % where,
                 "a transcript is a command example: mark it sh\n" + code[:300])
        elif reason is not None:
            t.ok(bool(reason.strip()), "%s # SKIP not run: %s" % (where, reason))
        else:
            run.append((where, code))
    return run


def body(t):
    emu = os.path.join(ROOT, "tests", "gcs", "emulator", "node_modules", "firebase-tools")
    if not shutil.which("node") or not os.path.isdir(emu):
        raise xtap.Skip("the GCS emulator is not installed (tests/gcs/setup-emulator.sh): the gs:// examples need it")
    not_run = 0
    plans = []
    for f in FILES:
        bl = blocks(os.path.join(ROOT, f))
        not_run += sum(1 for b in bl if b[1] == "sh" and b[3] is not None)
        plans.append((f, check_static(t, f, bl)))
    t.ok(not_run <= MAX_NOT_RUN, "at most %d blocks are not run (%d)" % (MAX_NOT_RUN, not_run))
    world = World()
    try:
        for f, run in plans:
            for where, code in run:
                script = code
                if re.search(r"^\$ ", code, re.M):
                    # a transcript: the "$ " lines are the commands, the rest their output
                    script = "\n".join(l[2:] for l in code.split("\n") if l.startswith("$ "))
                try:
                    r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], env=world.env,
                                       cwd=world.clone, capture_output=True, timeout=300)
                    rc, out, err = r.returncode, r.stdout, r.stderr
                except subprocess.TimeoutExpired as e:
                    rc, out, err = "timeout", e.stdout or b"", e.stderr or b""
                t.ok(rc == 0, "%s runs" % where,
                     "exit %s\n--- script\n%s\n--- stdout\n%s\n--- stderr\n%s" %
                     (rc, script, out.decode(errors="replace")[-1500:],
                      err.decode(errors="replace")[-1500:]))
            unmount_all()
    finally:
        world.close()


def drop_inherited_fuse_mounts():
    """The new mount namespace starts with a copy of every mount outside, the FUSE
    mounts of tests running beside this one included. A copy keeps its mount
    alive: that test's unmount would leave its daemon serving until this test
    ends, and the test would fail waiting for the daemon to exit. Detach them."""
    unmount_all()
    return fuse_mounts()


def inside():
    t = xtap.Tap()
    left = drop_inherited_fuse_mounts()
    t.ok(not left, "no FUSE mount of the world outside is held in here", why=str(left))
    sig = os.environ.get("XPROFS_DOCS_SIGNAL_DIR")
    sig_fd = None
    if sig:  # main()'s mount outside may now be unmounted: this namespace holds it no more
        open(os.path.join(sig, "dropped"), "w").close()
        sig_fd = os.open(sig, os.O_RDONLY | os.O_DIRECTORY)  # body() hides /tmp behind a tmpfs
    try:
        body(t)
    except xtap.Skip as e:
        return xtap.skip_all(str(e))
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        import traceback
        t.ok(False, "harness", traceback.format_exc())
    if sig_fd is not None:
        def result():
            try:
                fd = os.open("outside.json", os.O_RDONLY, dir_fd=sig_fd)
            except FileNotFoundError:
                return None
            with os.fdopen(fd) as f:
                return json.load(f)
        r = xmount.poll(result, 300) or {"rc": None, "why": ["no result in 300 s"]}
        os.close(sig_fd)
        t.ok(r["rc"] == 0 and not r["why"],
             "a mount made outside before this namespace: its daemon exits after its "
             "unmount while this namespace lives", why=json.dumps(r))
    return t.done()


def outside_mount(work):
    """An xprofs mount of an empty logdir, made before the namespace: its copy is
    one inside() must drop. Returns (mount or None, why)."""
    os.makedirs(os.path.join(work, "src"))
    try:
        m = xmount.Mount(work, os.path.join(work, "src"), "outside")
    except RuntimeError as e:
        return None, "mount: %s" % e
    m.exit_s = 60
    return m, ""


def outside_unmount(m, why, sig, p):
    """Once the namespace said it dropped its copies, unmount @m: its daemon
    must exit (within 60 s) while the namespace lives. The result goes to
    SIG/outside.json for inside() to report."""
    r = {"rc": None, "why": [why]}
    if m:
        if not xmount.poll(lambda: os.path.exists(os.path.join(sig, "dropped")) or
                           p.poll() is not None, 300):
            m.why.append("the namespace never said it dropped its copies")
        rc = m.close()
        r = {"rc": rc, "why": m.why, "log": m.log_tail(5)}
    with open(os.path.join(sig, "outside.json.tmp"), "w") as f:
        json.dump(r, f)
    os.rename(os.path.join(sig, "outside.json.tmp"), os.path.join(sig, "outside.json"))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        return inside()
    if os.geteuid() != 0:
        return xtap.skip_all("needs root (private mount and network namespaces)")
    if not os.path.exists("/dev/fuse") or not shutil.which("fusermount3") or not shutil.which("unshare"):
        return xtap.skip_all("no /dev/fuse, fusermount3 or unshare")
    if not os.path.exists(os.path.join(BUILD, "fs", "xprofs")):
        return xtap.skip_all("xprofs not built")
    # the whole test runs in new mount and network namespaces; they end with it. A
    # mount made here before them checks that they hold no copy of it.
    sig = tempfile.mkdtemp(prefix="xprofs-docs-signal-")
    work = tempfile.mkdtemp(prefix="xprofs-docs-outside-")
    p = None
    try:
        m, why = outside_mount(work)
        env = dict(os.environ, XPROFS_DOCS_SIGNAL_DIR=sig)
        p = subprocess.Popen(["unshare", "-m", "-n", "--propagation", "private", "--kill-child",
                              sys.executable, os.path.abspath(__file__), "--inside"], env=env)
        outside_unmount(m, why, sig, p)
        return p.wait()
    finally:
        if p:
            xmount.reap(p, 0)
        shutil.rmtree(sig, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
