#!/usr/bin/python3
"""test_regions.py - XProf's threadpool regions in both trace views (TAP).

PreprocessXPlane()'s ThreadpoolLineMutator adds one "ThreadpoolListener::Region"
event per StartRegion ... StopRegion span of a line, with the StartRegion's
consumer id and type 15, so each ends a flow (category threadpool_event).
A generated CPU profile with threadpool markers (xprofs-gen --ungrouped
--regions) must show exactly the regions recomputed here
(oracle_trace.threadpool_regions()) on their threads in trace.json, each
with flow_in and the flow id of its consumer id, and the same regions as
slices ending those flows in trace.pftrace; the same profile grouped (no
--ungrouped) gets none, as XProf preprocesses only ungrouped spaces.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal

import check_pftrace
import oracle_trace
import xproto
import xtap

from check_pftrace import decode
from xproto import GEN

NAME = "ThreadpoolListener::Region"


def want_regions(pb2, path):
    """{(ts ps, dur ps, tid): flow id} the rules give (oracle_trace's own recomputation)."""
    xs = pb2.XSpace()
    with open(path, "rb") as f:
        xs.ParseFromString(f.read())
    host = oracle_trace.fnv1a64(xs.hostnames[0].encode()) if xs.hostnames else 0
    out = {}
    for p in xs.planes:
        if not p.name.startswith("/host:CPU"):
            continue
        for l in p.lines:
            for b, e, rid in oracle_trace.threadpool_regions(p, l):
                f = {"flow": None}
                oracle_trace.preprocess_flow(f, {"_ct": 15, "_c": rid}, False, host)
                _, fid, cat = oracle_trace.xflow(f["flow"])
                out[(b, max(e - b, 1), (l.display_id or l.id) & 0xffffffff)] = (fid, cat)
    return out


def main():
    t = xtap.Tap()
    d = tempfile.mkdtemp(prefix="xprofs-regions-")
    pb2, tmp = xproto.load("xplane")
    ppb, ptmp = xproto.load("perfetto_trace")
    try:
        path = os.path.join(d, "regions.xplane.pb")
        grouped = os.path.join(d, "grouped.xplane.pb")
        for p, extra in ((path, ["--ungrouped"]), (grouped, [])):
            subprocess.run([GEN, "--kind", "cpu", "--size", "1M", "--seed", "5", "--regions",
                            "-o", p] + extra, check=True, stdout=subprocess.DEVNULL)
        want = want_regions(pb2, path)
        t.ok(len(want) >= 50, "the generated profile has threadpool regions (%d)" % len(want))
        tj = json.loads(decode(path, "trace"), parse_float=Decimal)["traceEvents"]
        got = {}
        for e in tj:
            if e.get("ph") == "X" and e["name"] == NAME:
                got[(oracle_trace.ps(e["ts"]), oracle_trace.ps(e["dur"]), e["tid"])] = \
                    (e.get("bind_id"), e.get("cat"), e.get("flow_in"), e["args"])
        t.ok(set(got) == set(want), "trace.json: the regions recomputed (%d of %d)" %
             (len(got), len(want)), why="missing %r, extra %r" % (
                 sorted(set(want) - set(got))[:2], sorted(set(got) - set(want))[:2]))
        bad = [k for k, v in got.items() if k in want and
               v != (want[k][0], "threadpool_event", True, {})]
        t.ok(not bad, "trace.json: each region ends its consumer's flow (threadpool_event), "
             "no args", why=repr([(k, got[k], want[k]) for k in bad[:2]]))
        starts = {e.get("bind_id") for e in tj if e.get("flow_out")}
        t.ok(any(v[0] in starts for v in got.values()),
             "trace.json: some region's flow starts at a Record")
        pf = check_pftrace.check_structure(ppb, decode(path, "trace.pftrace"), "regions")
        t.ok(not xproto.failures, "trace.pftrace is well formed", xproto.failures[:3])
        pr = [s for s in pf["slices"] if s[1] == NAME]
        pflows = sorted(f for s in pr for f in s[5])
        wflows = sorted(("t", (cat << 56 | fid) + 1) for fid, cat in got_flows(got))
        t.ok(len(pr) == len(want), "trace.pftrace: %d region slices (want %d)" %
             (len(pr), len(want)))
        t.ok(pflows == wflows, "trace.pftrace: each region slice ends trace.json's flow",
             why="%r vs %r" % (pflows[:2], wflows[:2]))
        gj = decode(grouped, "trace").decode()
        t.ok(NAME not in gj and NAME.encode() not in decode(grouped, "trace.pftrace"),
             "grouped twin: no region (IsXSpaceGrouped())")
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(ptmp, ignore_errors=True)
    return t.done()


def got_flows(got):
    """(flow id, category) of each region trace.json wrote (category 15: threadpool_event)."""
    return [(v[0], 15) for v in got.values()]


if __name__ == "__main__":
    sys.exit(main())
