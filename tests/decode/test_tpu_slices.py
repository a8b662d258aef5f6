#!/usr/bin/env python3
"""tests/decode/test_tpu_slices.py - slices of the lines derived on TPU planes.

A slice (--window, --step; steps/ and window/ in the mount) derives a
TensorCore plane's Framework Name Scope, Framework Ops and Source code lines
(docs/trace.md, trace_derive_tpu()) from a lookback walk that starts shortly
before its window, checked by a dry run and replaced by a walk from the
plane's start when an event it may have made differently overlaps the
window. Whichever walk ran, the slice must hold exactly the derived events
of the whole trace that overlap its window, times, names and args included.
Checked for seeded random windows (1 us to 5 ms) over a generated TPU
profile (--ungrouped: a profile with group ids is not preprocessed, as in
XProf's PreprocessSingleHostXSpace()), a made-up profile
whose derived events run 40 ms from its start (so every lookback walk
would get them wrong and the walk from the start must be taken), a plane of
24 lines (more than the GPU Steps merge takes), a plane with host-offload
rows (offload_profile.py: their pairs take the walk from the start) and, when
../shared is there, the real TPU sample (no group ids: the gap test decides
merges, and both walks are taken). Exit 0 pass, 1 fail.
"""
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
from decimal import Decimal

import offload_profile
import xproto
from xproto import CLI, GEN, SHARED, fail, failures

# kThreadIdTfNameScope, kThreadIdTfOp, kThreadIdSource, the host-offload rows (kThreadIdHostOffloadOp*)
DERIVED = (0xdeadbef1, 0xdeadbef2, 0xdeadbef6) + tuple(range(0xdeadbef7, 0xdeadbef7 + 41))


def ps(v):
    """µs as ps, to the nearest: a "dur" may carry more digits (docs/trace.md "Times")."""
    return int((Decimal(str(v)) * 1000000).to_integral_value())


def key(e):
    return (e["pid"], e["tid"], e["name"], str(e["ts"]), str(e["dur"]),
            json.dumps(e.get("args", {}), sort_keys=True))


def trace(path, *extra):
    out = subprocess.run([CLI, path, "--view", "trace", *extra], capture_output=True, check=False)
    if out.returncode != 0:
        fail("%s %s: rc %d: %s" % (path, " ".join(extra), out.returncode, out.stderr[-300:]))
        return []
    return [e for e in json.loads(out.stdout)["traceEvents"]
            if e.get("ph") == "X" and e.get("tid") in DERIVED]


def long_chains(path):
    """One TPU plane: 40,000 back-to-back 1 us ops of one tf_op and source (merged by
    the gap test; no group_id, which would make the space grouped and derive nothing):
    each derived line is one event from the start, longer than any lookback."""
    x, tmp = xproto.load("xplane")
    sp = x.XSpace()
    p = sp.planes.add()
    p.id, p.name = 1, "/device:TPU:0"
    for i, nm in ((1, "tf_op"), (3, "source")):
        p.stat_metadata[i].id, p.stat_metadata[i].name = i, nm
    md = p.event_metadata[1]
    md.id, md.name = 1, "dot.1"
    for sid, v in ((1, "jit(f)/jit(main)/dot:dot_general"), (3, "f.py:10")):
        st = md.stats.add()
        st.metadata_id, st.str_value = sid, v
    ln = p.lines.add()
    ln.id, ln.name, ln.timestamp_ns = 3, "XLA Ops", 1000
    for i in range(40000):
        e = ln.events.add()
        e.metadata_id, e.offset_ps, e.duration_ps = 1, i * 1000000, 1000000
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)


def wide(path):
    """One TPU plane of 24 lines (more than the GPU Steps merge takes), each with
    300 ops of one of 7 tf_ops, the lines' events interleaved in time."""
    x, tmp = xproto.load("xplane")
    sp = x.XSpace()
    p = sp.planes.add()
    p.id, p.name = 1, "/device:TPU:3"
    p.stat_metadata[1].id, p.stat_metadata[1].name = 1, "tf_op"
    for m in range(7):
        md = p.event_metadata[m + 1]
        md.id, md.name = m + 1, "op.%d" % m
        st = md.stats.add()
        st.metadata_id, st.str_value = 1, "jit(f)/scope%d/op%d:op_type%d" % (m % 3, m, m)
    for li in range(24):
        ln = p.lines.add()
        ln.id, ln.name, ln.timestamp_ns = li + 1, "line %d" % li, 500
        for i in range(300):
            e = ln.events.add()
            e.metadata_id = (li * 300 + i) // 40 % 7 + 1
            e.offset_ps, e.duration_ps = (i * 24 + li) * 1000000, 700000
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)


def check(path, n, seed, span=None):
    full = trace(path)
    if not full:
        fail("%s: no TPU-derived events in the whole trace" % path)
        return
    # (start ps, duration ps, key) of each event, once for all the windows
    evs = [(ps(e["ts"]), ps(e["dur"]), key(e)) for e in full]
    lo, hi = span if span else (min(s for s, _, _ in evs), max(s for s, _, _ in evs))
    rnd = random.Random(seed)
    for _ in range(n):
        a = rnd.randint(lo, hi) // 1000000
        b = a + rnd.choice([1, 10, 100, 1000, 5000])
        got = sorted(key(e) for e in trace(path, "--window", "%d-%d" % (a, b)))
        want = sorted(k for s, d, k in evs if s < b * 1000000 and s + max(d, 1) > a * 1000000)
        if got != want:
            fail("%s: window %d-%d us: %d derived events, the whole trace has %d there "
                 "(extra %s, missing %s)" % (path, a, b, len(got), len(want),
                                            [g for g in got if g not in want][:2],
                                            [w for w in want if w not in got][:2]))
    print("ok: %s: %d windows" % (os.path.basename(path), n))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        gen = os.path.join(tmp, "tpu.xplane.pb")
        # ungrouped: XProf derives the TensorCore lines the slices must match
        subprocess.run([GEN, "--kind", "tpu", "--size", "6M", "--seed", "3", "--ungrouped", "-o",
                        gen], check=True)
        check(gen, 30, 1)
        chains = os.path.join(tmp, "chains.xplane.pb")
        long_chains(chains)
        check(chains, 12, 2, (ps(5000), ps(40000)))
        w = os.path.join(tmp, "wide.xplane.pb")
        wide(w)
        check(w, 8, 4)
        off = os.path.join(tmp, "offload.xplane.pb")  # host-offload rows: the whole walk
        offload_profile.write(off)
        check(off, 20, 6)
    samples = sorted(glob.glob(os.path.join(SHARED, "samples", "tpu_*", "*.xplane.pb")))
    if not samples:
        print("note: %s/samples absent: the real TPU sample's slices are not checked" % SHARED)
    for s in samples:
        check(s, 40, 7)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
