#!/usr/bin/python3
"""test_gpu_ops.py - the GPU op table as XProf's ConvertDeviceTraceXPlaneToOpMetricsDb().

A made-up GPU plane (python3-protobuf, stats_profiles.Plane) with every case
of the rule (docs/stats.md "ops.json", GPU): kernels with an hlo_op and a
program_id (XLA ops keyed (program_id, name)); one op name in two programs;
contiguous kernels of one name and group_id merged into one run (each kernel
an occurrence, one occurrence's flops stat, the run in its first kernel's
program: xprof beea666b's HLOTracker), and the kernels that break such a run
or do not (another group, no group_id, a kernel XProf leaves out, a
framework op, another program); an hlo_op with a "::" scope; a
framework kernel (tf_op, no hlo_op); kernels XProf leaves out (no hlo_op
and no tf_op, an empty tf_op, an hlo_op without a program_id), which
ops.json lists under "unattributed"; a kernel nested in another on one
stream (GPU self time = time, children_time_ps = 0).

ops.json must equal oracle_stats.op_table_full() (the rule written again
from XProf's source) and the numbers worked out by hand below.

Exit status: 0 pass, 1 mismatch, 77 skip (protoc absent).
"""
import json
import os
import shutil
import sys

import oracle
import stats_profiles
import xproto

from xproto import fail

# (line, event name, offset, duration, stats); the hand numbers are in check()
KERNELS = [
    (1, "fusion_kernel", 0, 100, {"hlo_op": "fusion.1", "program_id": 5,
                                  "hlo_module": "jit_a", "group_id": 1}),
    (1, "fusion_kernel", 200, 50, {"hlo_op": "fusion.1", "program_id": 5, "group_id": 1,
                                   "flops": 7}),
    (1, "copyBuffer", 300, 40, {}),  # left out; does not break the run
    # the run's last flops stat is one occurrence's: 9 x 3 kernels
    (1, "fusion_kernel", 400, 30, {"hlo_op": "fusion.1", "program_id": 5, "group_id": 1,
                                   "flops": 9}),
    (1, "fusion_kernel", 500, 20, {"hlo_op": "fusion.1", "program_id": 5, "group_id": 2}),
    (1, "fusion_kernel", 600, 10, {"hlo_op": "fusion.1", "program_id": 5}),
    (1, "fusion_kernel", 700, 10, {"hlo_op": "fusion.1", "program_id": 5}),
    (1, "fusion_kernel_b", 800, 60, {"hlo_op": "fusion.1", "program_id": 9,
                                     "hlo_module": "jit_b", "group_id": 3}),
    # same name and group in another program: the run stays jit_b's, and jit_c gets no row
    (1, "fusion_kernel_c", 860, 5, {"hlo_op": "fusion.1", "program_id": 7,
                                    "hlo_module": "jit_c", "group_id": 3}),
    (1, "tf_kernel", 900, 70, {"tf_op": "model/dense/MatMul:MatMul", "group_id": 3}),
    (1, "orphan_kernel", 1000, 80, {"hlo_op": "dot.2", "tf_op": "x/Y:Y", "group_id": 3}),
    (1, "scoped_kernel", 1100, 25, {"hlo_op": "while.3::dot.4", "program_id": 5,
                                    "group_id": 4}),
    (1, "emptytf", 1200, 15, {"tf_op": ""}),
    (2, "outer", 2000, 500, {"hlo_op": "custom-call.5", "program_id": 5, "group_id": 5}),
    (2, "inner", 2100, 100, {"hlo_op": "fusion.6", "program_id": 5, "group_id": 5}),
]


def build(pb2, out_dir):
    xs = pb2.XSpace()
    xs.hostnames.append("gpuops")
    pl = stats_profiles.Plane(xs, 1, "/device:GPU:0")
    lines = {1: pl.line(1, "Stream #1(Kernel)", 1), 2: pl.line(2, "Stream #2(Kernel)", 1)}
    for lid, name, off, dur, stats in KERNELS:
        pl.event(lines[lid], name, off, dur, **stats)
    path = os.path.join(out_dir, "gpuops.xplane.pb")
    with open(path, "wb") as f:
        f.write(xs.SerializeToString())
    return path, xs


def check(jops):
    planes = [p for p in jops["planes"] if p["name"] == "/device:GPU:0"]
    if len(planes) != 1:
        fail("ops.json planes %r" % [p["name"] for p in jops["planes"]])
        return
    p = planes[0]
    rows = {(o["name"], o["program"]): o for o in p["ops"]}
    want = {  # (name, program): (count, occurrences, total, self, min, max, category)
        # each kernel of a merged run is an occurrence; min/max see the runs (180, 20, 10, 10)
        ("fusion.1", "jit_a(5)"): (6, 6, 220, 220, 10, 180, ""),
        ("fusion.1", "jit_b(9)"): (2, 2, 65, 65, 65, 65, ""),
        ("model/dense/MatMul/tf_kernel", None): (1, 1, 70, 70, 70, 70, "MatMul"),
        ("dot.4", None): (1, 1, 25, 25, 25, 25, ""),
        ("custom-call.5", None): (1, 1, 500, 500, 500, 500, ""),
        ("fusion.6", None): (1, 1, 100, 100, 100, 100, ""),
    }
    if set(rows) != set(want):
        fail("ops rows %r, by hand %r" % (sorted(rows, key=str), sorted(want, key=str)))
    for k, w in want.items():
        o = rows.get(k)
        got = o and (o["count"], o["occurrences"], o["total_ps"], o["self_ps"], o["min_ps"],
                     o["max_ps"], o["category"])
        if got != w:
            fail("ops %r: %r, by hand %r" % (k, got, w))
    a = rows.get(("fusion.1", "jit_a(5)")) or {}
    if a.get("flops") != 27:
        fail("fusion.1 jit_a(5) flops %r, by hand 27 (the run's last stat, 9, x 3)" %
             a.get("flops"))
    if (p["events"], p["total_ps"], p["self_ps"]) != (12, 980, 980):
        fail("plane events/total/self %r, by hand (12, 980, 980)" %
             ((p["events"], p["total_ps"], p["self_ps"]),))
    un = p.get("unattributed") or {}
    got = {o["name"]: (o["count"], o["total_ps"], o["self_ps"]) for o in un.get("ops", [])}
    if (un.get("events"), un.get("total_ps")) != (3, 135) or got != {
            "orphan_kernel": (1, 80, 80), "copyBuffer": (1, 40, 40), "emptytf": (1, 15, 15)}:
        fail("unattributed %r, by hand 3 events, 135 ps: orphan_kernel 80, copyBuffer 40, "
             "emptytf 15" % un)


def main():
    pb2, tmp = xproto.load("xplane")
    try:
        path, xs = build(pb2, tmp)
        oracle.check_ops(path, xs, oracle.run([path, "--view", "ops"]))
        oracle.check_analyses(path, xs)
        check(json.loads(oracle.run([path, "--view", "ops"], parse=False)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xproto.status()


if __name__ == "__main__":
    sys.exit(main())
