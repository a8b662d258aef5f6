"""tests/lib/gcs_harness.py - shared pieces of the gs:// mount tests
(tests/gcs/test_*.py, tests/fs/test_gcs_close.py, tests/capture/
test_capture_gcs.py): start/stop the emulator (tests/lib/emulator.sh; the
npm package lives in tests/gcs/emulator), seed it with the Node client,
put fault_proxy.FaultProxy in front, mount and unmount build/fs/xprofs, and
compare a mounted tree with its source byte for byte.

run(body) is every such test's main: skip (77) without the prerequisites,
a Tap and a Harness for body(t, h), a failed "harness" result for anything
body raises, and Harness.close() in all cases. Every process and mount
started here is torn down by close(); the emulator also dies with the test.
"""
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from fault_proxy import FaultProxy
from xmount import reap, wait_released
from xtap import SKIP, Skip, Tap, skip_all

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("XPROFS_SOURCE_ROOT") or os.path.join(HERE, "..", "..")
EMULATOR_DIR = os.path.join(SOURCE_ROOT, "tests", "gcs", "emulator")
EMULATOR_SH = os.path.join(HERE, "emulator.sh")

__all__ = ["SKIP", "Skip", "Tap", "Harness", "run", "require_prereqs", "make_logdir", "compare_tree",
           "xprofs_bin", "build_root", "write_close"]


def build_root():
    return os.environ.get("XPROFS_BUILD_ROOT") or os.path.join(SOURCE_ROOT, "build")


def xprofs_bin():
    return os.path.join(build_root(), "fs", "xprofs")


def require_prereqs():
    """Raise Skip with a clear reason when something truly absent is needed."""
    if not os.path.exists("/dev/fuse") or not shutil.which("fusermount3"):
        raise Skip("no /dev/fuse or fusermount3")
    if not os.access(xprofs_bin(), os.X_OK):
        raise Skip("%s not built" % xprofs_bin())
    if not shutil.which("node") or not os.path.isdir(os.path.join(EMULATOR_DIR, "node_modules", "firebase-tools")):
        raise Skip("GCS emulator not installed (tests/gcs/setup-emulator.sh)")


def make_logdir(root, seed=7):
    """A logdir with the shared sample profiles (when present) and random
    blobs of awkward sizes; returns the list of relative file paths."""
    rng = random.Random(seed)
    samples = os.path.join(os.environ.get("XPROFS_SHARED", os.path.join(SOURCE_ROOT, "..", "shared")),
                           "samples")
    if os.path.isdir(samples):
        for name, dst in [("tpu_v6e_jax", "tpu/plugins/profile/2025_01_01_00_00_00"),
                          ("gpu_mi300_jax_gemm", "gpu/gemm/plugins/profile/sess1"),
                          ("cpu_only_jax", "cpu/plugins/profile/s"),
                          ("gpu_mi300_jax_conv_session", "gpu/conv/plugins/profile/conv_session")]:
            src = os.path.join(samples, name)
            if not os.path.isdir(src):
                continue
            os.makedirs(os.path.join(root, dst), exist_ok=True)
            for f in os.listdir(src):
                if f.endswith(".pbtxt"):
                    continue
                shutil.copyfile(os.path.join(src, f), os.path.join(root, dst, f))
    else:
        print("# shared samples absent (%s): using random blobs only" % samples)
    blobs = os.path.join(root, "blobs", "plugins", "profile", "s1")
    os.makedirs(blobs, exist_ok=True)
    for i, size in enumerate([0, 1, 4097, (1 << 20) + 3, (9 << 20) + 7]):
        with open(os.path.join(blobs, "blob%d.bin" % i), "wb") as f:
            f.write(rng.randbytes(size))
    with open(os.path.join(root, "events.out.tfevents.1.host"), "wb") as f:
        f.write(rng.randbytes(333))
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def compare_tree(src, dst, rels=None, exact=True):
    """None when every file under @src (or just @rels) has a byte-identical
    twin under @dst (and, with @exact, @dst has no other file), else a
    description of the first difference."""
    rels = rels or sorted(os.path.relpath(os.path.join(d, f), src)
                          for d, _, fs in os.walk(src) for f in fs)
    for rel in rels:
        a, b = os.path.join(src, rel), os.path.join(dst, rel)
        try:
            with open(b, "rb") as f:
                got = f.read()
        except OSError as e:
            return "%s: %s" % (rel, e)
        with open(a, "rb") as f:
            want = f.read()
        if got != want:
            return "%s: %d bytes, want %d (first diff at %s)" % (
                rel, len(got), len(want),
                next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want))))
    if not exact:
        return None
    have = sorted(os.path.relpath(os.path.join(d, f), dst) for d, _, fs in os.walk(dst) for f in fs)
    if have != sorted(rels):
        return "file sets differ: extra %s missing %s" % (sorted(set(have) - set(rels))[:5],
                                                          sorted(set(rels) - set(have))[:5])
    return None


def write_close(path, data, excl=False):
    """Create (O_EXCL with @excl, else truncate) and write @path, then
    close it: None, or the OSError close() raised (a gs:// mount uploads
    there)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_EXCL if excl else os.O_TRUNC), 0o644)
    os.write(fd, data)
    try:
        os.close(fd)
        return None
    except OSError as e:
        return e


class Harness:
    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="xprofs-gcs-test-")
        self.emu_dir = os.path.join(self.work, "emu")
        self.emu_port = None
        self.proxies = []
        self.mounts = []  # (mnt, Popen, logpath)
        self.cleanups = []  # callables close() runs last (servers a test started)

    # -- emulator -----------------------------------------------------------
    def start_emulator(self):
        p = subprocess.run(["bash", EMULATOR_SH, "start", self.emu_dir],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, EMULATOR_PARENT_PID=str(os.getpid())))
        if p.returncode == SKIP:
            raise Skip(p.stderr.strip())
        if p.returncode != 0:
            raise RuntimeError("emulator did not start: %s" % p.stderr)
        self.emu_port = int(p.stdout.strip())
        self.emu_url = "http://127.0.0.1:%d" % self.emu_port
        return self.emu_url

    def node(self, script, *args, timeout=600):
        env = dict(os.environ, STORAGE_EMULATOR_HOST=self.emu_url)
        p = subprocess.run(["node", os.path.join(EMULATOR_DIR, script)] + list(args), env=env,
                           capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr

    def seed(self, src, url):
        rc, out = self.node("seed.js", src, url)
        if rc != 0:
            raise RuntimeError("seed failed: %s" % out)

    def seed_files(self, url, files):
        """@files ({relative path: bytes}) written under work/src, the
        emulator started and seeded with them at @url; returns src."""
        src = os.path.join(self.work, "src")
        for rel, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            with open(os.path.join(src, rel), "wb") as f:
                f.write(data)
        self.start_emulator()
        self.seed(src, url)
        return src

    def seed_logdir(self, url):
        """make_logdir() in work/src, the emulator started and seeded with it
        at @url: (src, the relative paths)."""
        src = os.path.join(self.work, "src")
        rels = make_logdir(src)
        self.start_emulator()
        self.seed(src, url)
        return src, rels

    def object(self, name, meta=False, bucket="bkt"):
        """The emulator's object @name in @bucket, read directly (no proxy):
        its bytes, or with @meta its JSON metadata; None when absent."""
        u = "%s/storage/v1/b/%s/o/%s%s" % (self.emu_url, bucket, urllib.parse.quote(name, safe=""),
                                           "" if meta else "?alt=media")
        try:
            data = urllib.request.urlopen(u, timeout=30).read()
            return json.loads(data) if meta else data
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def proxy(self, **kw):
        p = FaultProxy(self.emu_url, **kw).start()
        self.proxies.append(p)
        return p

    # -- mounts -------------------------------------------------------------
    def bare_env(self):
        """os.environ without ambient credentials or emulator settings (gcloud's
        config: the work dir; no metadata server): a mount with it finds only
        the credentials its options or the caller's additions name."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST",
                            "CLOUD_STORAGE_EMULATOR_ENDPOINT", "GCE_METADATA_ROOT")}
        env.update(CLOUDSDK_CONFIG=self.work, GCE_METADATA_HOST="127.0.0.1:1")
        return env

    def write(self, name, data):
        """@data (text, or anything else as JSON) in work/@name; returns its path."""
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write(data if isinstance(data, str) else json.dumps(data))
        return path

    def mount(self, url, endpoint, opts=(), wait=True, timeout=120, env=None):
        """Start xprofs in the foreground on a fresh mount point. With @wait,
        returns once the mount appears (raises if xprofs exits first)."""
        mnt = tempfile.mkdtemp(prefix="mnt-", dir=self.work)
        log = os.path.join(self.work, "xprofs-%d.log" % len(self.mounts))
        o = ["endpoint=" + endpoint, "cache_dir=" + os.path.join(self.work, "cache-%d" % len(self.mounts))]
        o += list(opts)
        f = open(log, "w")
        p = subprocess.Popen([xprofs_bin(), url, mnt, "-f", "-o", ",".join(o)], stdout=f, stderr=subprocess.STDOUT,
                             env=env)
        f.close()
        self.mounts.append((mnt, p, log))
        if not wait:
            return mnt, p, log
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if os.path.ismount(mnt):
                return mnt, p, log
            if p.poll() is not None:
                raise RuntimeError("xprofs exited %d before mounting: %s" % (p.returncode, self.log(log)))
            time.sleep(0.1)
        raise RuntimeError("mount did not appear in %d s" % timeout)

    @staticmethod
    def log(path, tail=20):
        try:
            with open(path) as f:
                return "".join(f.readlines()[-tail:])
        except OSError:
            return ""

    def umount(self, mnt):
        """Unmount and return the daemon's exit status. A busy mount point is
        retried, and the daemon gets minutes to exit: under load an ASan
        build's exit (uploads flushed, threads joined, the leak check) is slow,
        and only a hang should fail here."""
        for m, p, _ in self.mounts:
            if m == mnt:
                wait_released(mnt)
                end = time.monotonic() + 60
                while os.path.ismount(mnt) and p.poll() is None and time.monotonic() < end:
                    if subprocess.run(["fusermount3", "-u", mnt], capture_output=True).returncode == 0:
                        break
                    time.sleep(0.2)
                return reap(p, 180)
        return None

    def last_log(self, tail=20):
        """The tail of the newest mount's log ("" before any mount)."""
        return self.log(self.mounts[-1][2], tail) if self.mounts else ""

    def close(self):
        for mnt, p, _ in self.mounts:
            if os.path.ismount(mnt):
                subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
                if os.path.ismount(mnt):
                    subprocess.run(["fusermount3", "-uz", mnt], capture_output=True)
            if p.poll() is None:
                p.terminate()
                reap(p, 10)
        for p in self.proxies:
            p.stop()
        if self.emu_port:
            subprocess.run(["bash", EMULATOR_SH, "stop", self.emu_dir], capture_output=True)
        for fn in self.cleanups:
            fn()
        shutil.rmtree(self.work, ignore_errors=True)


def run(body, prereqs=require_prereqs):
    """The main of a gs:// test: prereqs() (default: FUSE, the daemon, the
    emulator; None for no check) raising Skip skips; else body(t, h) with a
    fresh Tap and Harness. A Skip raised by body before any result skips;
    any other exception is one failed "harness" result (with the newest
    mount's log). Returns the exit status."""
    try:
        if prereqs:
            prereqs()
    except Skip as e:
        return skip_all(e)
    t = Tap()
    h = Harness()
    try:
        body(t, h)
    except Skip as e:
        return skip_all(e)
    except Exception as e:  # report, then tear down
        t.ok(False, "harness: %s: %s" % (type(e).__name__, e), h.last_log())
    finally:
        h.close()
    return t.done()
