"""tests/lib/xproto.py - the project's .proto files as Python modules, for oracles.

    xplane_pb2, tmp = xproto.load("xplane")          # xspace/proto/xplane.proto
    pf_pb2, _ = xproto.load("perfetto_trace")

Runs Debian's protoc --python_out into a temporary directory (returned, the
caller may remove it) and imports the module from there with python3-protobuf.
Without protoc the test is skipped: "SKIP: ..." and exit 77 (exit-code tests).
Also the paths oracles share (SRC, BUILD, SHARED, CLI, GEN), fail(), and
verdict(): a check's pass remembered for the suite's second (sanitizer) pass.
"""
import hashlib
import importlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("XPROFS_SOURCE_ROOT",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("XPROFS_BUILD_ROOT", os.path.join(SRC, "build"))
SHARED = os.environ.get("XPROFS_SHARED", os.path.join(SRC, "..", "shared"))
CLI = os.path.join(BUILD, "tools", "xprofs-decode")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")

# An oracle's findings: fail() records one (printing the first 30); the
# script exits non-zero when the list is not empty.
failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 30:
        print("FAIL:", msg)


def status():
    """An oracle's exit status: 1, saying how many mismatches, after any
    fail(); else 0."""
    if failures:
        print("%d mismatches" % len(failures))
        return 1
    return 0



# A check is a pure function of its arguments: the same arguments give the
# same verdict. scripts/test.sh runs every test twice, in the plain build and
# the ASan build, and an oracle's Python (decoding the profile again, walking
# every event) costs the same both times while only the C side differs. So
# when XPROFS_VERDICT_CACHE names a directory (scripts/test.sh makes a fresh
# one per run), verdict() records each check that passed under a digest of
# the checker sources and every argument, and a later call with a digest
# already there returns the recorded result without checking again. The C
# program still runs in both passes, under its sanitizers; only a byte-for-
# byte identical output skips the recomputation. Anything that cannot be
# digested (an object of unknown shape) is checked every time.
VERDICTS = os.environ.get("XPROFS_VERDICT_CACHE")
_sources = None


class _NoDigest(Exception):
    pass


def _sources_digest():
    """The checkers themselves: every .py under tests/ and every .proto."""
    global _sources
    if _sources is None:
        h = hashlib.sha256()
        files = []
        for top, sub in ((os.path.join(SRC, "tests"), ".py"), (SRC, ".proto")):
            for d, dirs, names in os.walk(top):
                dirs[:] = [x for x in dirs if not x.startswith(("build", ".", "node_modules"))]
                files += [os.path.join(d, n) for n in names if n.endswith(sub)]
        for f in sorted(set(files)):
            h.update(f.encode() + b"\0")
            with open(f, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
        _sources = h.digest()
    return _sources


def _digest(h, v, depth=0):
    """Feeds @v into hashlib object @h: its type and its whole value. A
    string naming a file stands for the file's name and bytes (temporary
    directories differ between passes, their files do not)."""
    if depth > 50:
        raise _NoDigest()
    t = type(v)
    h.update(t.__name__.encode() + b":")
    if v is None or t in (bool, int, float) or t.__name__ == "Decimal":
        h.update(repr(v).encode())
    elif t is str:
        if v.startswith("/") and len(v) < 4096 and os.path.isfile(v):
            with open(v, "rb") as f:
                h.update(os.path.basename(v).encode() + hashlib.sha256(f.read()).digest())
        else:
            h.update(v.encode("utf-8", "surrogatepass"))
    elif t in (bytes, bytearray):
        h.update(hashlib.sha256(v).digest())
    elif t in (list, tuple):
        h.update(b"%d[" % len(v))
        for x in v:
            _digest(h, x, depth + 1)
    elif t is dict:
        h.update(b"%d{" % len(v))
        for k in sorted(v, key=repr):
            _digest(h, k, depth + 1)
            _digest(h, v[k], depth + 1)
    elif hasattr(v, "SerializeToString") and hasattr(v, "DESCRIPTOR"):
        h.update(v.DESCRIPTOR.full_name.encode() + v.SerializeToString(deterministic=True))
    elif t.__name__ == "module":
        h.update(v.__name__.encode())
    elif callable(v) and hasattr(v, "__qualname__"):
        if getattr(v, "__closure__", None) or "<lambda>" in v.__qualname__:
            raise _NoDigest()  # its captured values are not in the name
        h.update((getattr(v, "__module__", "") + "." + v.__qualname__).encode())
        if hasattr(v, "__self__") and t.__name__ == "method":
            _digest(h, v.__self__, depth + 1)
    else:
        raise _NoDigest()
    h.update(b";")


def verdict(fn, *args, **kwargs):
    """fn(*args, **kwargs), or the result it returned when it last passed on
    the same arguments (see VERDICTS). A pass is a call that returned without
    adding to the failures of fail(): @fn must report through it. The result
    must pickle. Borrows everything; returns what @fn returns."""
    key = None
    if VERDICTS and os.path.isdir(VERDICTS):
        try:
            h = hashlib.sha256(_sources_digest())
            _digest(h, fn)
            _digest(h, list(args))
            _digest(h, kwargs)
            key = os.path.join(VERDICTS, h.hexdigest())
        except _NoDigest:
            key = None
    if key and os.path.exists(key):
        with open(key, "rb") as f:
            out = pickle.load(f)
        print("ok %s: the same bytes passed this check in an earlier pass"
              % getattr(fn, "__name__", "check"))
        return out
    n = len(failures)
    out = fn(*args, **kwargs)
    if key and len(failures) == n:
        try:
            data = pickle.dumps(out)
        except Exception:  # noqa: BLE001 - an unpicklable result is simply not remembered
            return out
        tmp = "%s.%d.tmp" % (key, os.getpid())
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, key)
    return out


# Where the project's .proto files are: the module that reads each.
PROTO_DIRS = [os.path.join(SRC, m, "proto") for m in ("xspace", "hlo", "trace", "capture")]


def load(name, proto_dir=None):
    """The generated module NAME_pb2 of PROTO_DIR/NAME.proto (default: the
    module folder that has it), and its temp dir."""
    if proto_dir is None:
        proto_dir = next((d for d in PROTO_DIRS
                          if os.path.exists(os.path.join(d, name + ".proto"))), PROTO_DIRS[0])
    protoc = shutil.which("protoc")
    if not protoc:
        print("SKIP: protoc (Debian protobuf-compiler) is not installed")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="xprofs-%s-" % name)
    subprocess.run([protoc, "--proto_path=" + proto_dir, "--python_out=" + tmp,
                    os.path.join(proto_dir, name + ".proto")], check=True)
    sys.path.insert(0, tmp)
    try:
        return importlib.import_module(name + "_pb2"), tmp
    finally:
        sys.path.remove(tmp)


def hlo_protos(xs):
    """[(program id, HloProto bytes)] of the first "/host:metadata" plane of the
    parsed XSpace @xs, as XProf's ParseHloProtosFromXSpace() finds them: every
    bytes plane stat keyed by its metadata id (the legacy form, a plane with
    plane stats), else each event metadata's "Hlo Proto" stat keyed by the
    metadata's id."""
    for p in [p for p in xs.planes if p.name == "/host:metadata"][:1]:   # FindPlaneWithName()
        if len(p.stats):
            return [(st.metadata_id, st.bytes_value) for st in p.stats
                    if st.WhichOneof("value") == "bytes_value"]
        want = sorted(k for k, m in p.stat_metadata.items() if m.name == "Hlo Proto")
        out = []
        for key in sorted(p.event_metadata):
            m = p.event_metadata[key]
            st = [x for x in m.stats if want and x.metadata_id == want[0]]
            if st and st[0].WhichOneof("value") == "bytes_value":
                out.append((m.id, st[0].bytes_value))
        return out
    return []
