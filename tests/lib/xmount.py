"""tests/lib/xmount.py - the xprofs daemon mounted in the foreground, for Python tests.

    with xmount.Workdir(t, "xprofs-slices-") as w:   # a temp dir; every mount
        sess = w.session()                            # still up is unmounted
        m = w.mount(os.path.join(w.path, "src"))      # (and checked) at exit
    m = xmount.Mount(work, src, name, opts, env)      # one mount by hand

Mount() waits (polling, with a deadline) until the mount is live or the
daemon exits; close() unmounts and returns the daemon's exit status;
log_tail() gives the last lines of its log for a failing check:
    t.same(got, want, "trace.json", m.log_tail)
The work directory is removed at exit unless XP_KEEP is set. No fixed sleeps.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import xcheck

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
XPROFS = os.path.join(BUILD, "fs", "xprofs")


def usable():
    """None when a mount can be made here, else why not (for xtap.skip_all)."""
    if not os.path.exists("/dev/fuse") or not shutil.which("fusermount3"):
        return "no /dev/fuse or fusermount3"
    if not os.path.exists(XPROFS):
        return "no %s" % XPROFS
    return None


def wait_released(mnt, deadline_s=120):
    """Before an unmount: wait until the kernel has released what was closed
    (status.json's open counts: no directory, no file but the status read
    itself). A RELEASE still queued when the connection ends is dropped, and
    libfuse's directory handle leaks with it, which an ASan build reports at
    exit. Gives up quietly at the deadline: the exit status still tells."""
    def quiet():
        try:
            with open(os.path.join(mnt, "status.json")) as f:
                o = json.load(f).get("open", {})
            return o.get("dirs", 0) <= 0 and o.get("files", 0) <= 0
        except (OSError, ValueError):
            return True
    poll(quiet, deadline_s)


def poll(cond, deadline_s=60):
    """Poll @cond until true or the deadline; returns its last value."""
    end = time.monotonic() + deadline_s
    while True:
        v = cond()
        if v or time.monotonic() > end:
            return v
        time.sleep(0.01)


def reap(proc, timeout_s):
    """Wait up to @timeout_s for @proc to exit, else kill it; its exit status."""
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def errno_of(fn, *a):
    """The errno @fn(*a) fails with, 0 when it succeeds."""
    try:
        fn(*a)
        return 0
    except OSError as e:
        return e.errno


def read_whole(path):
    """(st_size right after open, every byte read until EOF) of @path, in 1 MiB reads."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        chunks = []
        while True:
            c = os.read(fd, 1 << 20)
            if not c:
                break
            chunks.append(c)
        return size, b"".join(chunks)
    finally:
        os.close(fd)


class Mount:
    """xprofs SRC WORK/NAME -f -o cache_dir=WORK/NAME-cache[OPTS], log in WORK/NAME.log."""

    def __init__(self, work, src, name="mnt", opts="", env=None):
        self.mnt = os.path.join(work, name)
        self.cache = os.path.join(work, name + "-cache")
        self.closed = False
        self.exit_s = 180  # close(): how long the daemon may take to exit after the unmount
        self.why = []      # close(): what went wrong on the way, for a failing check
        os.makedirs(self.mnt)
        self.log = open(os.path.join(work, name + ".log"), "w")
        self.proc = subprocess.Popen(
            [XPROFS, src, self.mnt, "-f", "-o", "cache_dir=" + self.cache + opts],
            env=dict(os.environ, **(env or {})), stdout=self.log, stderr=subprocess.STDOUT)
        if not poll(lambda: os.path.ismount(self.mnt) or self.proc.poll() is not None):
            raise RuntimeError("mount did not come up in 60 s\n" + self.log_tail())
        if self.proc.poll() is not None:
            raise RuntimeError("xprofs exited with %d\n%s" % (self.proc.returncode, self.log_tail()))

    def status(self):
        """The mount's status.json, parsed."""
        with open(os.path.join(self.mnt, "status.json")) as f:
            return json.load(f)

    def entries(self):
        """The view cache's entry files (CACHE_DIR/*.xc), sorted."""
        return sorted(n for n in os.listdir(self.cache) if n.endswith(".xc"))

    def log_tail(self, n=20):
        """The last @n lines of the daemon's log, for a failing check's detail."""
        if not self.log.closed:
            self.log.flush()
        return xcheck.log_tail(self.log.name, n)

    def close(self):
        """Unmount; the daemon's exit status."""
        if self.closed:
            return self.proc.returncode
        self.closed = True
        wait_released(self.mnt)
        # a busy mount point is retried; the daemon gets minutes to exit (an ASan
        # build's exit under load is slow: only a hang should fail)
        end = time.monotonic() + 60
        while os.path.ismount(self.mnt) and self.proc.poll() is None and time.monotonic() < end:
            if subprocess.call(["fusermount3", "-u", self.mnt], stderr=subprocess.DEVNULL) == 0:
                break
            time.sleep(0.2)
        if os.path.ismount(self.mnt) and self.proc.poll() is None:
            self.why.append("fusermount3 -u failed for 60 s (mount point busy)")
        try:
            self.proc.wait(timeout=self.exit_s)
        except subprocess.TimeoutExpired:
            self.why.append("the daemon had not exited %d s after the unmount: killed"
                            % self.exit_s)
            if shutil.which("gdb"):  # where it hangs, into its log (the failure's detail)
                self.log.flush()
                try:
                    subprocess.call(["gdb", "-p", str(self.proc.pid), "-batch", "-ex",
                                     "thread apply all bt"], stdout=self.log,
                                    stderr=subprocess.STDOUT, timeout=120)
                except subprocess.TimeoutExpired:
                    pass
            reap(self.proc, 0)
        if os.path.ismount(self.mnt):  # a dead daemon's mount: nothing left to flush
            subprocess.call(["fusermount3", "-uz", self.mnt], stderr=subprocess.DEVNULL)
        self.log.close()
        return self.proc.returncode


class Workdir:
    """A temporary work directory whose mounts are closed (each checked with
    @t: the daemon exits with 0) when the with-block ends, however it ends."""

    def __init__(self, t, prefix):
        self.t = t
        self.prefix = prefix
        self.mounts = []

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix=self.prefix)
        return self

    def session(self, run="run", session="s1"):
        """Make WORK/src/RUN/plugins/profile/SESSION (a logdir's session dir); its path."""
        d = os.path.join(self.path, "src", run, "plugins", "profile", session)
        os.makedirs(d)
        return d

    def mount(self, src, name="mnt", opts="", env=None, cls=Mount):
        m = cls(self.path, src, name, opts, env)
        self.mounts.append(m)
        return m

    def __exit__(self, *exc):
        for m in self.mounts:
            if not m.closed:
                rc = m.close()
                self.t.ok(rc == 0, "unmount: xprofs exits with 0", lambda m=m: m.log_tail(30),
                          why="; ".join(["exit status %s (negative: killed by that signal)"
                                         % rc] + m.why + ["the daemon's log follows"]))
        if os.environ.get("XP_KEEP"):
            print("# kept " + self.path)
        else:
            shutil.rmtree(self.path, ignore_errors=True)
        return False


def run(prefix, body):
    """A mount test's main: skip (TAP plan) where no mount can be made, else
    body(t, w) with a fresh xtap.Tap and Workdir; the exit status."""
    import xtap

    why = usable()
    if why:
        return xtap.skip_all(why)
    t = xtap.Tap()
    with Workdir(t, prefix) as w:
        body(t, w)
    return t.done()
