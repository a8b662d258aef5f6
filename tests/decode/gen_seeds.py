#!/usr/bin/python3
"""gen_seeds.py - writes the small fuzz seed corpus tests/fuzz/corpus/decode/.

Each seed is a few hundred bytes built with python3-protobuf from the
project's own xplane.proto; together they touch every message, every stat
value kind, num_occurrences, refs, display names, counters and steps, and
trace.json's cases (flows, async events, step_name, internal names, epoch
and 2^63 timestamps).
Run: /usr/bin/python3 tests/decode/gen_seeds.py   (needs protoc)
"""
import gzip
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus", "decode")

tmp = tempfile.mkdtemp()
subprocess.run(["protoc", "--proto_path=" + os.path.join(ROOT, "xspace", "proto"),
                "--python_out=" + tmp, os.path.join(ROOT, "decode", "proto", "xplane.proto")],
               check=True)
sys.path.insert(0, tmp)
import xplane_pb2 as pb  # noqa: E402


def space(kind):
    xs = pb.XSpace(hostnames=["h"], warnings=["w"])
    p = xs.planes.add(id=1, name="/device:GPU:0" if kind != "host" else "/host:CPU")
    for k, n in ((1, "hlo_op"), (2, "fusion.1"), (3, "flops"), (4, "step_num"), (5, "s")):
        p.stat_metadata[k].name = n
    m = p.event_metadata[1]
    m.name, m.display_name = "%fusion.1 = f32[2] fusion()", "fusion.1"
    m.stats.add(metadata_id=3, uint64_value=10)
    p.event_metadata[2].name = "k"
    p.stats.add(metadata_id=5, str_value="plane stat")
    name = {"host": "python", "gpu": "Stream #1(Kernel)", "tpu": "XLA Ops"}[kind]
    l = p.lines.add(id=-5, name=name, timestamp_ns=10, display_name="d")
    e = l.events.add(metadata_id=1, offset_ps=0, duration_ps=1000)
    e.stats.add(metadata_id=1, ref_value=2)
    e.stats.add(metadata_id=5, double_value=1.5)
    l.events.add(metadata_id=2, offset_ps=100, duration_ps=200).stats.add(
        metadata_id=5, bytes_value=b"\x00\x01")
    l.events.add(metadata_id=9, num_occurrences=3, duration_ps=7)
    s = p.lines.add(id=1, name="Steps", timestamp_ns=10)
    s.events.add(metadata_id=2, offset_ps=0, duration_ps=5000).stats.add(metadata_id=4, int64_value=1)
    c = p.lines.add(id=2, name="_counters_")
    c.events.add(metadata_id=2, offset_ps=5).stats.add(
        metadata_id=5, compressed_str_value=gzip.compress(b"zipped"))
    return xs


os.makedirs(OUT, exist_ok=True)
for kind in ("host", "gpu", "tpu"):
    with open(os.path.join(OUT, "seed-%s.pb" % kind), "wb") as f:
        f.write(space(kind).SerializeToString())
env = pb.XSpace()
te = env.planes.add(name="Task Environment")
te.stat_metadata[1].name = "profile_start_time"
te.stats.add(metadata_id=1, uint64_value=1700000000000000000)
with open(os.path.join(OUT, "seed-env.pb"), "wb") as f:
    f.write(env.SerializeToString())
with open(os.path.join(OUT, "seed-empty.pb"), "wb") as f:
    f.write(b"")


def trace_space():
    """trace.json's special cases: flows, async events, step_name, internal names, epoch times."""
    xs = pb.XSpace()
    for pname, pid in (("/host:CPU", 0), ("/device:GPU:0", 600), ("/device:CUSTOM:x", 3)):
        p = xs.planes.add(id=pid, name=pname)
        for k, n in ((1, "flow"), (2, "_a"), (3, "step_name"), (4, "group_id"), (5, "_pt"),
                     (6, "program_id")):
            p.stat_metadata[k].name = n
        p.event_metadata[1].name = "op"
        p.event_metadata[2].name = "MemoryAllocation"
        m = p.event_metadata[3]
        m.name, m.display_name = "%copy-start = f32[8] copy-start(p0)", "copy"
        m.stats.add(metadata_id=2, int64_value=1)
        l = p.lines.add(id=7, display_id=9, name="main", timestamp_ns=1700000000000000000)
        e = l.events.add(metadata_id=1, offset_ps=5, duration_ps=0)
        e.stats.add(metadata_id=1, uint64_value=(5 << 2) | 2 | (2 << 58))
        e.stats.add(metadata_id=3, str_value="step 1")
        e.stats.add(metadata_id=4, int64_value=3)
        e.stats.add(metadata_id=5, int64_value=1)
        l.events.add(metadata_id=2, offset_ps=6, duration_ps=1)
        l = p.lines.add(id=8, name="Async XLA Ops", timestamp_ns=2 ** 63 - 1)
        for fid, d in ((7, 3), (8, 2), (8, 1), (9, 1)):
            e = l.events.add(metadata_id=3, offset_ps=2 ** 63 - 1, duration_ps=10)
            e.stats.add(metadata_id=1, uint64_value=(fid << 2) | d)
        l = p.lines.add(id=9, name="_counters_", timestamp_ns=-(2 ** 63))
        l.events.add(metadata_id=1, offset_ps=-(2 ** 63), duration_ps=0)
        p.lines.add(id=10, name="counters_x").events.add(metadata_id=1)
        p.lines.add(id=11, name="empty")
    return xs


with open(os.path.join(OUT, "seed-trace.pb"), "wb") as f:
    f.write(trace_space().SerializeToString())


def derived_space():
    """A GPU stream of XLA and framework kernels and the HLO proto that resolves them."""
    def ld(field, body):
        n, out = len(body), bytearray([field << 3 | 2])
        while True:
            out.append((n & 127) | (128 if n >= 128 else 0))
            n >>= 7
            if not n:
                return bytes(out) + body
    md = ld(1, b"MatMul") + ld(2, b"model/dense/MatMul") + ld(3, b"/a/model.py") + b"\x20\x0c"
    comp = ld(2, ld(1, b"dot.1") + ld(7, md)) + ld(2, ld(1, b"copy.2"))
    hlo = ld(1, ld(3, comp))
    xs = pb.XSpace()
    meta = xs.planes.add(id=2, name="/host:metadata")
    meta.stat_metadata[1].CopyFrom(pb.XStatMetadata(id=1, name="Hlo Proto"))
    meta.event_metadata[42].CopyFrom(pb.XEventMetadata(id=42, name="jit_f(42)"))
    meta.event_metadata[42].stats.add(metadata_id=1, bytes_value=hlo)
    p = xs.planes.add(id=1, name="/device:GPU:0")
    for k, n in enumerate(["kernel_details", "hlo_op", "program_id", "tf_op", "group_id",
                           "hlo_module"]):
        p.stat_metadata[k + 1].CopyFrom(pb.XStatMetadata(id=k + 1, name=n))
    p.event_metadata[1].CopyFrom(pb.XEventMetadata(id=1, name="kern"))
    ln = p.lines.add(id=7, name="Stream #7(Compute)", timestamp_ns=1000)
    kernels = [("fusion.1::dot.1", None), ("copy.2", None), (None, "a/b/MatMul:MatMul"),
               (None, "jit(f)/transpose:transpose[perm=(1, 0)]"), (None, "Iterator::Map")]
    for i, (op, tf) in enumerate(kernels):
        e = ln.events.add(metadata_id=1, offset_ps=i * 1000, duration_ps=900)
        e.stats.add(metadata_id=1, str_value="regs:32")
        e.stats.add(metadata_id=5, int64_value=i // 2)
        if op:
            e.stats.add(metadata_id=2, str_value=op)
            e.stats.add(metadata_id=3, uint64_value=42)
            e.stats.add(metadata_id=6, str_value="m")
        if tf:
            e.stats.add(metadata_id=4, str_value=tf)
    return xs


with open(os.path.join(OUT, "seed-derived.pb"), "wb") as f:
    f.write(derived_space().SerializeToString())
