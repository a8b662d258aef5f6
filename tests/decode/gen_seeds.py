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
subprocess.run(["protoc", "--proto_path=" + os.path.join(ROOT, "decode", "proto"),
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
