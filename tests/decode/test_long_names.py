#!/usr/bin/python3
"""test_long_names.py - names are never cut short, and no event is lost unsaid (TAP).

A made-up profile: a GPU stream with kernels named as AMD composable-kernel
kernels are (4,200 and 12,000 bytes; real MI300 profiles have 2.9-4.2 KB
names), and a host line of 9 events each starting inside the one before and
ending after it, so trace.pftrace's 8 tracks of a line (LEVELS_MAX) hold 8
and the 9th fits none. trace.json and trace.pftrace must show both names
whole and byte-equal; trace.json keeps all 9 host events; trace.pftrace
keeps 8 and counts the one it dropped: an instant "1 events dropped" with
arg dropped = 1 on the host process, at the dropped event's start.
"""
import json
import shutil
import subprocess
import sys
import tempfile
import os

import check_pftrace
import xproto
import xtap

from xproto import CLI


def ck_name(n):
    """A composable-kernel-like kernel name of exactly @n bytes."""
    head = "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<"
    body = "ck::tensor_layout::gemm::RowMajor, ck::half_t, float, ck::Sequence<1, 32, 1, 8>, "
    s = head + body * (n // len(body) + 1)
    return s[:n - 2] + ">)"


def write(path, names):
    x, tmp = xproto.load("xplane")
    try:
        sp = x.XSpace()
        sp.hostnames.append("h")
        host = sp.planes.add()
        host.id, host.name = 1, "/host:CPU"
        host.event_metadata[1].id, host.event_metadata[1].name = 1, "staggered"
        ln = host.lines.add()
        ln.id, ln.name, ln.timestamp_ns = 1, "main", 1000
        for i in range(9):  # [10i, 100 + 10i) ns: each overlaps the one before, not nested
            e = ln.events.add()
            e.metadata_id, e.offset_ps, e.duration_ps = 1, i * 10000, 100000
        gpu = sp.planes.add()
        gpu.id, gpu.name = 2, "/device:GPU:0"
        ln = gpu.lines.add()
        ln.id, ln.name, ln.timestamp_ns = 7, "Stream #7(Compute)", 1000
        for k, nm in enumerate(names, 1):
            gpu.event_metadata[k].id, gpu.event_metadata[k].name = k, nm
            e = ln.events.add()
            e.metadata_id, e.offset_ps, e.duration_ps = k, k * 1000000, 500000
        with open(path, "wb") as f:
            f.write(sp.SerializeToString())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    t = xtap.Tap()
    names = [ck_name(4200), ck_name(12000)]
    d = tempfile.mkdtemp(prefix="xprofs-names-")
    ppb, ptmp = xproto.load("perfetto_trace")
    try:
        path = os.path.join(d, "names.xplane.pb")
        write(path, names)
        tj = json.loads(check_pftrace.decode(path, "trace"))["traceEvents"]
        pr = subprocess.run([CLI, path, "--view", "trace.pftrace"], capture_output=True)
        raw, log = pr.stdout, pr.stderr.decode()
        t.ok(pr.returncode == 0, "trace.pftrace renders", log[-300:])
        got = check_pftrace.check_structure(ppb, raw, "names")
        t.ok(not xproto.failures, "trace.pftrace is well formed", xproto.failures[:3])
        jn = {e["name"] for e in tj if e.get("ph") == "X"}
        pn = {s[1] for s in got["slices"]}
        for nm in names:
            t.ok(nm in jn, "trace.json: the %d-byte kernel name whole" % len(nm),
                 why=sorted(len(n) for n in jn))
            t.ok(nm in pn, "trace.pftrace: the %d-byte kernel name whole" % len(nm),
                 why=sorted(len(n) for n in pn))
        jst = [e for e in tj if e.get("ph") == "X" and e["name"] == "staggered"]
        pst = [s for s in got["slices"] if s[1] == "staggered"]
        t.ok(len(jst) == 9, "trace.json keeps the 9 staggered events", len(jst))
        t.ok(len(pst) == 8, "trace.pftrace places 8 of them (8 tracks a line)", len(pst))
        notes = [i for i in got["instants"] if i[1] == "1 events dropped"]
        t.ok(len(notes) == 1 and ("dropped", 1) in notes[0][3],
             "trace.pftrace counts the one dropped (instant with dropped = 1)",
             why=repr(got["instants"])[:300])
        t.ok(notes and notes[0][2] == 1000 + 80, "the count sits at the dropped event's start "
             "(1,080 ns)", why=repr(notes)[:200])
        t.ok("1 events fit no track" in log, "the log says so", log[-300:])
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(ptmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
