"""steps_profiles.py - small XSpaces for XProf's steps, verdict and duty cycle.

build(pb2, dir) writes them and returns {name: path}; each holds one rule
of docs/stats.md (steps.json, overview.json):

- tpuduty: three TPU planes, two naming the same chip (core_details), one
           without; an off-duty "infeed" op under another core's op, an
           "XLA Modules" event wider than the ops, ops touching end to
           start, a Steps event past the ops (ConstructDutyCycleTracker(),
           DutyCycleCombiner, IdleTimeRatio()).
"""
import os

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


PROFILES = {"tpuduty": tpuduty}


def build(pb2, out_dir):
    paths = {}
    for name, fn in PROFILES.items():
        xs = pb2.XSpace()
        xs.hostnames.append("steps-" + name)
        fn(xs)
        path = os.path.join(out_dir, "steps-%s.xplane.pb" % name)
        with open(path, "wb") as f:
            f.write(xs.SerializeToString())
        paths[name] = path
    return paths
