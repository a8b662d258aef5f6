#!/usr/bin/python3
"""test_steps.py - XProf's steps, bottleneck verdict and TPU duty cycle.

The profiles come from steps_profiles.py. For each, steps.json and
overview.json must equal the independent recomputation of oracle_stats.py /
oracle_steps.py, and a few numbers are checked against values worked out by
hand from XProf's functions (docs/stats.md).

Exit status: 0 pass, 1 mismatch, 77 skip (protoc absent).
"""
import json
import shutil
import subprocess
import sys

import oracle
import oracle_stats
import steps_profiles
import xproto

from xproto import CLI, fail, failures


def view(path, name):
    r = subprocess.run([CLI, path, "--view", name], capture_output=True)
    if r.returncode != 0:
        fail("%s --view %s: exit %d: %s" % (path, name, r.returncode, r.stderr.decode()[:300]))
        return None
    return json.loads(r.stdout)


def near(a, b):
    return a is not None and abs(a - b) <= 1e-12 * max(1.0, abs(b))


def hand_tpuduty(ov, st):
    # chip 0 (TPU:0 + TPU:1): span [0, 10 us) from XLA Modules; active [1, 4) + [6, 8) us
    # (the infeed [3, 5) is off duty); TPU:2 alone: [0, 2) us, all active; chip 3
    # (TPU:3 alone): span [20, 29) us from XLA Modules, active [21, 23) + [26, 27) us
    # (the infeed off duty, the zero-length op nothing, own times, not device ones)
    d = ov["device"]
    if d["busy_ps"] != 10000000 or d["span_ps"] != 21000000 or \
            not near(d["duty_cycle"], 10 / 21):
        fail("tpuduty: busy %r span %r duty %r, by hand 10e6 21e6 10/21"
             % (d["busy_ps"], d["span_ps"], d["duty_cycle"]))
    # op time 15.5 us of self time over op spans 6 + 6 + 4 + 6.5 us (TPU:2's Steps event
    # to 4 us; TPU:3's last op by its device timespan, to 27.5 us)
    if not near(d["idle_share"], 1 - 15.5 / 22.5):
        fail("tpuduty: idle_share %r, by hand %r" % (d["idle_share"], 1 - 15.5 / 22.5))


def hand_nomarker(ov, st):
    b, d = ov["bottleneck"], ov["diagnostics"]
    if b["kind"] != "unknown" or b["statement"] != ("No step time measured. Therefore we "
                                                    "cannot tell where the performance "
                                                    "bottleneck is."):
        fail("nomarker: bottleneck %r, want XProf's unknown verdict" % b)
    w = d["warnings"]
    if w[:2] != ["w1", "w2"] or len(w) != 3 or not w[2].startswith(
            "No step marker observed and hence the step time is unknown. This may happen"):
        fail("nomarker: warnings %r, want w1, w2 and XProf's no-step-marker warning" % w)
    if d["errors"] != ["e"] or d["info"] != []:
        fail("nomarker: errors %r info %r" % (d["errors"], d["info"]))


def nonzero(bd):
    return {k: v for k, v in bd.items() if v}


def want_steps(name, st, want):
    """steps.json's steps against [(step, plane, start, duration, device_ps, breakdown)]."""
    got = [(s["step"], s["plane"], s["start_ps"], s["duration_ps"], s["device_ps"],
            nonzero(s["breakdown"])) for s in st["steps"]]
    if got != want:
        fail("%s: steps %r, by hand %r" % (name, got, want))


def hand_gpus(ov, st):
    # step 0: GPU:1's marker (10.5 us) is longer than GPU:0's; gemm [0, 6) us owns the
    # start of the nccl kernel, which owns [6, 8); the MemcpyHtoD without correlation_id is
    # left out, the MEMCPYHtoD [9, 9.5) is host to device; GPU:1's gemm lies under GPU:0's
    want_steps("gpus", st, [
        (0, "/device:GPU:1", 500000, 10500000, 8000000,
         {"device_compute_ps": 5500000, "device_collectives_ps": 2000000,
          "host_to_device_ps": 500000, "idle_ps": 2500000}),
        (1, "/device:GPU:0", 12000000, 8000000, 6000000,
         {"device_compute_ps": 6000000, "idle_ps": 2000000})])
    b = ov["bottleneck"]
    # of 18.5 us: input 0.5 (2.7 %), all other 4.5 (24.3 %), collectives 2 (10.8 %)
    if b["kind"] != "both" or b["statement"] != (
            "Your program is POTENTIALLY input-bound because 24.3% of the total step time "
            "sampled is spent on 'All Others' time (which could be due to I/O or Python "
            "execution or both)."):
        fail("gpus: verdict %r %r" % (b["kind"], b["statement"]))
    if b["device_collectives"] != "moderate" or b["device_collectives_statement"] != (
            "10.8 % of the total step time sampled is spent on 'Device Collective "
            "Communication'.") or b["all_other"] != "no":
        fail("gpus: classifications %r" % b)
    if ov["step_time"]["avg_ps"] != 9250000 or ov["step_time"]["steps"] != 2:
        fail("gpus: step_time %r" % ov["step_time"])
    if any("No step marker" in w for w in ov["diagnostics"]["warnings"]):
        fail("gpus: a no-step-marker warning with steps")


def hand_tpusteps(ov, st):
    # group 2 is on TPU:0 only (intersection), group 3 has only infeed (not well formed)
    want_steps("tpusteps", st, [
        (0, "/device:TPU:1", 0, 5000000, 4500000,
         {"device_compute_ps": 4500000, "idle_ps": 500000}),
        (1, "/device:TPU:0", 4000000, 4000000, 4000000,
         {"device_compute_ps": 3000000, "device_collectives_ps": 1000000})])


def hand_hostonly(ov, st):
    want_steps("hostonly", st, [
        (0, "/host:CPU", 0, 10000000, 0,
         {"host_compute_ps": 4000000, "host_wait_input_ps": 2000000, "idle_ps": 4000000}),
        (1, "/host:CPU", 10000000, 10000000, 0,
         {"host_compute_ps": 1000000, "host_to_device_ps": 1000000, "idle_ps": 8000000})])
    b = ov["bottleneck"]
    # of 20 us: input 3 (15 %), all other 12 (60 %)
    if b["kind"] != "both" or not b["statement"].startswith(
            "Your program is MODERATELY input-bound because 15.0% of the total step time") \
            or b["all_other"] != "high" or not b["all_other_statement"].startswith("60.0 % of"):
        fail("hostonly: verdict %r" % b)


def hand_gpunosteps(ov, st):
    # grouped kernels and no step line: no markers, so no step (XProf derives none)
    want_steps("gpunosteps", st, [])
    b, w = ov["bottleneck"], ov["diagnostics"]["warnings"]
    if b["kind"] != "unknown" or not (w and w[-1].startswith("No step marker observed")):
        fail("gpunosteps: verdict %r, warnings %r: want XProf's no-step-marker ones" % (b, w))


HAND = {"gpunosteps": hand_gpunosteps, "tpuduty": hand_tpuduty, "nomarker": hand_nomarker, "gpus": hand_gpus,
        "tpusteps": hand_tpusteps, "hostonly": hand_hostonly}


def main():
    pb2, tmp = xproto.load("xplane")
    try:
        paths = steps_profiles.build(pb2, tmp)
        for name, path in paths.items():
            before = len(failures)
            xs = pb2.XSpace()
            with open(path, "rb") as f:
                xs.ParseFromString(f.read())
            oracle.check_analyses(path, xs)
            ov, st = view(path, "overview"), view(path, "steps")
            if st is not None:
                pairs = oracle.run([path, "--view", "steps"])
                oracle.check_steps(path, xs, pairs)
                oracle_stats.check_breakdown(path, xs, pairs, oracle.obj, oracle.stat_value,
                                             oracle.stat_name, fail)
            if ov is not None and st is not None and name in HAND:
                HAND[name](ov, st)
            print("ok %s" % name if len(failures) == before else "FAIL %s" % name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xproto.status()


if __name__ == "__main__":
    sys.exit(main())
