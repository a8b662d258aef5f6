"""steps_profiles.py - small XSpaces for XProf's steps, verdict and duty cycle.

build(pb2, dir) writes them and returns {name: path}; each holds one rule
of docs/stats.md (steps.json, overview.json):

- tpuduty: three TPU planes, two naming the same chip (core_details), one
           without; an off-duty "infeed" op under another core's op, an
           "XLA Modules" event wider than the ops, ops touching end to
           start, a Steps event past the ops (ConstructDutyCycleTracker(),
           DutyCycleCombiner, IdleTimeRatio()).
- nomarker: a GPU kernel and no step marker, XSpace warnings (one twice)
           and an error: XProf's "no step marker" diagnostic and verdict.
"""
import stats_profiles
from stats_profiles import Plane


def core_details(pl, raw):
    st = pl.p.stats.add()
    st.metadata_id = pl.stat_id("core_details")
    st.bytes_value = raw


def tpuduty(xs):
    md = {"hlo_category": "convolution", "program_id": 5}
    t0 = Plane(xs, 1, "/device:TPU:0")
    core_details(t0, b"\x10\x00\x20\x00")  # device_ordinal 0, local_chip_id 0
    mods = t0.line(1, "XLA Modules")
    t0.event(mods, "jit_f(5)", 0, 10000000)
    ops = t0.line(2, "XLA Ops")
    t0.event(ops, "conv.1", 1000000, 2000000, dict(md), symbol_id=1)
    t0.event(ops, "infeed.2", 3000000, 2000000, {"hlo_category": "infeed", "program_id": 5},
             symbol_id=2)
    t0.event(ops, "conv.3", 6000000, 1000000, dict(md), symbol_id=3)
    t1 = Plane(xs, 2, "/device:TPU:1")
    core_details(t1, b"\x10\x01")  # local_chip_id absent: proto3's 0, the same chip
    ops = t1.line(2, "XLA Ops")
    t1.event(ops, "conv.4", 2000000, 2000000, dict(md), symbol_id=4)
    t1.event(ops, "conv.5", 7000000, 1000000, dict(md), symbol_id=5)
    t2 = Plane(xs, 3, "/device:TPU:2")  # no core_details: a chip of its own
    ops = t2.line(2, "XLA Ops")
    t2.event(ops, "conv.6", 0, 1000000, dict(md), symbol_id=6)
    t2.event(ops, "conv.7", 500000, 1500000, dict(md), symbol_id=7)
    steps = t2.line(3, "Steps")
    t2.event(steps, "0", 0, 4000000, group_id=0, device_offset_ps=0,
             device_duration_ps=4000000)


def nomarker(xs):
    g = Plane(xs, 1, "/device:GPU:0")
    g.set_stat(g.p, "device_vendor", "Nvidia")
    k = g.line(1, "Stream #1(Kernel)")
    g.event(k, "gemm", 0, 1000000, group_id=0, correlation_id=1)
    xs.warnings.extend(["w2", "w1", "w2"])
    xs.errors.append("e")


PROFILES = {"tpuduty": tpuduty, "nomarker": nomarker}


def build(pb2, out_dir):
    return stats_profiles.build(pb2, out_dir, PROFILES, "steps")
