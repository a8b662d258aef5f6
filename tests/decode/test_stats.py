#!/usr/bin/python3
"""test_stats.py - XProf's analyses on small profiles with the edge cases.

The profiles come from stats_profiles.py (python3-protobuf). For each one,
every view the CLI renders must be strict JSON (no NaN, no Infinity), and
ops.json / steps.json / summary.json must equal the independent
recomputation of oracle.py / oracle_stats.py. A few rules are also checked
against numbers worked out by hand (docs/stats.md explains each):
XProf's self time (only children wholly inside the parent count) and
GetDeviceEventTimespan(); the steps' are test_steps.py's.

Exit status: 0 pass, 1 mismatch, 77 skip (protoc absent).
"""
import json
import os
import shutil
import subprocess
import sys

import oracle
import oracle_stats
import stats_profiles
import xproto

from xproto import CLI, fail, failures

VIEWS = ("summary", "ops", "steps", "overview")


def strict(raw, what):
    """@raw parsed as strict JSON (NaN / Infinity refused), or None after a failure."""
    def bad(c):
        raise ValueError("non-JSON constant %s" % c)
    try:
        return json.loads(raw, parse_constant=bad)
    except ValueError as e:
        fail("%s: invalid JSON: %s" % (what, e))
        return None


def cli(path, view):
    r = subprocess.run([CLI, path, "--view", view], capture_output=True)
    if r.returncode != 0:
        fail("%s --view %s: exit %d: %s" % (path, view, r.returncode, r.stderr.decode()[:300]))
        return None
    return r.stdout


def by_name(items):
    return {o["name"]: o for o in items}


def hand_checks(paths, out):
    """Numbers worked out by hand from the rules (see stats_profiles.py for the shapes)."""
    ot = out["hostops"]["overview"]["op_time"]
    if (ot["host_ops"], ot["device_ops"], ot["host_op_share"]) != (4, 3, 4 / 7):
        fail("hostops: host_ops, device_ops, host_op_share %r, by hand 4, 3, 4/7" % (
            [ot["host_ops"], ot["device_ops"], ot["host_op_share"]]))
    ops = by_name(out["nested"]["ops"]["planes"][0]["ops"])
    want = {"fusion.1": 800000,  # minus conv.2 only: copy.3 overlaps it partly
            "conv.2": 200000, "copy.3": 600000, "tiny.4": 0,
            "twin.5": 0, "twin.6": 100000,  # the same span: twin.6 is twin.5's child
            "agg.7": 5000, "dev.8": 300000, "dev.9": 100000}
    for name, self_ps in want.items():
        if ops[name]["self_ps"] != self_ps:
            fail("nested: %s self_ps %r, by hand %r" % (name, ops[name]["self_ps"], self_ps))
    if ops["dev.8"]["total_ps"] != 400000:  # device_duration_ps, not the event's 500000
        fail("nested: dev.8 total_ps %r" % ops["dev.8"]["total_ps"])
    if ops["agg.7"]["occurrences"] != 3 or ops["agg.7"]["count"] != 1:
        fail("nested: agg.7 occurrences %r" % ops["agg.7"]["occurrences"])
    if ops["fusion.1"]["program"] != "jit_step(77)":
        fail("nested: fusion.1 program %r" % ops["fusion.1"]["program"])
    # ridge = 100e12 / 1000e9 = 100 flop/byte: fusion.1 4000 flop/byte, conv.2 10
    if ops["fusion.1"]["bound"] != "Compute" or ops["conv.2"]["bound"] != "Memory":
        fail("nested: bounds %r %r" % (ops["fusion.1"]["bound"], ops["conv.2"]["bound"]))
    # GPU peak (hardware_type_utils.cc): A100 = cc 8.0, 2048 FLOP/SM/cycle (matrix FP16)
    # x 1.41 GHz x 108 SMs = 311.86944 TFLOP/s; HBM from memory_bandwidth: 2 TB/s
    gp = out["streams"]["ops"]["planes"]
    gp = [p for p in gp if p["name"].startswith("/device:GPU:")]
    if not gp or any(abs(p["peak_flops_per_s"] - 311.86944e12) > 1e-3 or
                     p["ridge_flops_per_byte"] is None for p in gp):
        fail("streams: GPU peak FLOP/s %r, by hand 311.86944e12" %
             [p["peak_flops_per_s"] for p in gp])
    # gemm_kernel: 1000 flops, no bytes: Compute (SetRooflineMetrics()), now that the peak is known
    gops = by_name(gp[0]["ops"]) if gp else {}
    if gops.get("dot.1", {}).get("bound") != "Compute":
        fail("streams: dot.1 bound %r, want Compute" % gops.get("dot.1", {}).get("bound"))
    # every GPU_CAPS row's peak, worked by hand (None: unknown, so bound is null)
    caps = {p["name"]: p for p in out["gpucaps"]["ops"]["planes"]}
    for i, row in enumerate(stats_profiles.GPU_CAPS):
        p = caps.get("/device:GPU:%d" % i)
        got, want = (p or {}).get("peak_flops_per_s"), row[6]
        if p is None or (want is None) != (got is None) or \
                (want is not None and abs(got - want) > 1e-9 * want):
            fail("gpucaps: GPU:%d %r peak %r, by hand %r" % (i, row[:6], got, want))
        elif (p["ops"][0]["bound"] is None) != (want is None):
            fail("gpucaps: GPU:%d bound %r with peak %r" % (i, p["ops"][0]["bound"], got))
    summ = out["nodevice"]["summary"]
    empty = [p for p in summ["planes"] if p["events"] == 0]
    if not empty or any(p["first_ps"] is not None or p["last_ps"] is not None for p in empty):
        fail("nodevice: an empty plane's first_ps/last_ps are not null: %r" % empty)
    # hfu over wall time: 5 flops / (100 TFLOP/s x the plane's span, 100 to 1800 ps), not
    # over the busy 1300 ps
    dev = out["onestep"]["overview"]["device"]
    if abs(dev["hfu"] - 5 / (100e12 * 1700e-12)) > 1e-15 or dev["span_ps"] != 1700:
        fail("onestep: hfu %r over span %r, by hand %r over 1700 ps" %
             (dev["hfu"], dev["span_ps"], 5 / (100e12 * 1700e-12)))
    if out["nosteps"]["steps"]["steps"] != []:
        fail("nosteps: steps %r" % out["nosteps"]["steps"]["steps"])
    hp = out["hostile"]["ops"]["planes"][0]
    if hp["peak_flops_per_s"] is not None or hp["peak_hbm_bytes_per_s"] is not None:
        fail("hostile: NaN / negative peak rates used: %r" % hp)


def main():
    if not os.access(CLI, os.X_OK):
        print("FAIL: %s not built" % CLI)
        return 1
    pb2, tmp = xproto.load("xplane")
    try:
        paths = stats_profiles.build(pb2, tmp)
        out = {}
        for name, path in paths.items():
            xs = pb2.XSpace()
            with open(path, "rb") as f:
                xs.ParseFromString(f.read())
            out[name] = {}
            for view in VIEWS:
                raw = cli(path, view)
                out[name][view] = strict(raw, "%s %s" % (name, view)) if raw is not None else None
            if any(v is None for v in out[name].values()):
                continue
            pairs = {v: oracle.run([path, "--view", v]) for v in VIEWS}
            oracle.check_summary(path, xs, pairs["summary"])
            oracle.check_ops(path, xs, pairs["ops"])
            oracle.check_steps(path, xs, pairs["steps"])
            oracle_stats.check_breakdown(path, xs, pairs["steps"], oracle.obj, oracle.stat_value,
                                         oracle.stat_name, fail)
            oracle.check_analyses(path, xs)
            print("ok %s" % name)
        if not failures:
            hand_checks(paths, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xproto.status()


if __name__ == "__main__":
    sys.exit(main())
