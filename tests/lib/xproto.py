"""tests/lib/xproto.py - the project's .proto files as Python modules, for oracles.

    xplane_pb2, tmp = xproto.load("xplane")          # xspace/proto/xplane.proto
    pf_pb2, _ = xproto.load("perfetto_trace")

Runs Debian's protoc --python_out into a temporary directory (returned, the
caller may remove it) and imports the module from there with python3-protobuf.
Without protoc the test is skipped: "SKIP: ..." and exit 77 (exit-code tests).
Also the paths oracles share (SRC, BUILD, SHARED, CLI, GEN) and fail().
"""
import importlib
import os
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
