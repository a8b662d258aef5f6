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


def hand_tpuduty(ov):
    # chip 0 (TPU:0 + TPU:1): span [0, 10 us) from XLA Modules; active [1, 4) + [6, 8) us
    # (the infeed [3, 5) is off duty); TPU:2 alone: [0, 2) us, all active
    d = ov["device"]
    if d["busy_ps"] != 7000000 or d["span_ps"] != 12000000 or not near(d["duty_cycle"], 7 / 12):
        fail("tpuduty: busy %r span %r duty %r, by hand 7e6 12e6 7/12"
             % (d["busy_ps"], d["span_ps"], d["duty_cycle"]))
    # op time 10.5 us of self time over op spans 6 + 6 + 4 us (TPU:2's Steps event to 4 us)
    if not near(d["idle_share"], 1 - 10.5 / 16):
        fail("tpuduty: idle_share %r, by hand %r" % (d["idle_share"], 1 - 10.5 / 16))


def hand_nomarker(ov):
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


HAND = {"tpuduty": hand_tpuduty, "nomarker": hand_nomarker}


def main():
    pb2, tmp = xproto.load("xplane")
    try:
        paths = steps_profiles.build(pb2, tmp)
        for name, path in paths.items():
            xs = pb2.XSpace()
            with open(path, "rb") as f:
                xs.ParseFromString(f.read())
            oracle.check_analyses(path, xs)
            ov = view(path, "overview")
            if ov is not None and name in HAND:
                HAND[name](ov)
            print("ok %s" % name if not failures else "FAIL %s" % name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xproto.status()


if __name__ == "__main__":
    sys.exit(main())
