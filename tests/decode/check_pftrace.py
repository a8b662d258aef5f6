#!/usr/bin/python3
"""check_pftrace.py - strict checker of trace.pftrace (Perfetto's protobuf trace).

Usage: check_pftrace.py [PROFILE...] (env XPROFS_SOURCE_ROOT, XPROFS_BUILD_ROOT, XPROFS_SHARED;
with PROFILEs, only those are checked)

For each profile (shared samples, generated tpu/gpu/cpu profiles, the edge-case
sample) it decodes trace.pftrace with protoc-generated code from
decode/proto/perfetto_trace.proto and checks: every event is on a described
track; the first packet of each sequence clears incremental state and later
ones need it; slices balance and nest per track; timestamps are monotonic per
sequence; and the complete events ("X"), counters ("C") and process names
equal trace.json's (names, begin/end times in ns).

Exit status: 0 pass, 1 mismatch, 77 skip (protoc absent).
"""
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal

import xproto

from xproto import CLI, GEN, SHARED, fail, failures


def load_pb2():
    return xproto.load("perfetto_trace")[0]


def decode(path, view):
    p = subprocess.run([CLI, path, "--view", view], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s --view %s: exit %d: %s" % (path, view, p.returncode,
                                                           p.stderr.decode()))
    return p.stdout


def ns(us):
    v = int((Decimal(us) * 1000).to_integral_value(rounding="ROUND_FLOOR"))
    return min(max(v, 0), 2**64 - 1)


def check_structure(pb, data, where):
    """Check the structural rules; return (slices, counters, process names)."""
    tr = pb.Trace()
    tr.ParseFromString(data)
    tracks = {}
    seen_seq = set()
    last_ts = {}
    stacks = collections.defaultdict(list)
    slices, counters, procs = [], [], {}
    interned = collections.defaultdict(dict)
    T = pb.TrackEvent
    for i, p in enumerate(tr.packet):
        seq = p.trusted_packet_sequence_id
        if not seq:
            fail("%s: packet %d has no sequence id" % (where, i))
            continue
        if seq not in seen_seq:
            if not p.sequence_flags & 1:
                fail("%s: first packet of sequence %d does not clear state" % (where, seq))
            seen_seq.add(seq)
            interned[seq] = {}
        elif not p.sequence_flags & 2:
            fail("%s: packet %d of sequence %d lacks NEEDS_INCREMENTAL_STATE" % (where, i, seq))
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.uuid in tracks:
                fail("%s: track %d described twice" % (where, td.uuid))
            if td.HasField("parent_uuid") and td.parent_uuid not in tracks:
                fail("%s: track %d's parent is not described" % (where, td.uuid))
            tracks[td.uuid] = td
            if td.HasField("process"):
                procs[td.process.pid] = td.process.process_name
            continue
        if not p.HasField("track_event"):
            fail("%s: packet %d is neither a track nor an event" % (where, i))
            continue
        te = p.track_event
        for en in p.interned_data.event_names:
            interned[seq][en.iid] = en.name
        name = te.name
        if te.HasField("name_iid"):
            if not p.sequence_flags & 2:
                fail("%s: packet %d uses interned data without NEEDS flag" % (where, i))
            if te.name_iid not in interned[seq]:
                fail("%s: packet %d uses undefined iid %d" % (where, i, te.name_iid))
            name = interned[seq].get(te.name_iid, "")
        ts = p.timestamp
        if ts < last_ts.get(seq, 0):
            fail("%s: sequence %d goes back in time at packet %d" % (where, seq, i))
        last_ts[seq] = ts
        if te.track_uuid not in tracks:
            fail("%s: packet %d: event on undescribed track %d" % (where, i, te.track_uuid))
            continue
        td = tracks[te.track_uuid]
        pid = td.thread.pid if td.HasField("thread") else None
        if pid is None and td.HasField("parent_uuid"):
            par = tracks[td.parent_uuid]
            pid = par.thread.pid if par.HasField("thread") else par.process.pid
        if te.type == T.TYPE_SLICE_BEGIN:
            stacks[te.track_uuid].append((name, ts, pid))
        elif te.type == T.TYPE_SLICE_END:
            st = stacks[te.track_uuid]
            if not st:
                fail("%s: packet %d: end without begin" % (where, i))
                continue
            name, b, pid = st.pop()
            slices.append((pid, name, b, ts))
        elif te.type == T.TYPE_COUNTER:
            if not td.HasField("counter"):
                fail("%s: counter event on a non-counter track" % where)
            counters.append((pid, ts))
        else:
            fail("%s: packet %d: unexpected event type %d" % (where, i, te.type))
    for u, st in stacks.items():
        if st:
            fail("%s: track %d ends with %d open slices" % (where, u, len(st)))
    return slices, counters, procs


def hostile_profile(path):
    """Partial overlaps, unsorted starts, 2^63 and negative times (structure-only check)."""
    x, tmp = xproto.load("xplane")
    shutil.rmtree(tmp, ignore_errors=True)
    sp = x.XSpace()
    p = sp.planes.add()
    p.id, p.name = 1, "/device:TPU:0"
    for i, nm in ((1, "a"), (2, "b")):
        p.event_metadata[i].id, p.event_metadata[i].name = i, nm
    lines = [(1, "XLA Ops", 1000, 1, [(0, 10000), (5000, 10000), (6000, 20000), (7000, 30000),
                                      (7000, 1), (0, 0)]),
             (2, "huge", 2**63 - 1, 2, [(0, 2**63 - 1), (2**62, 2**62), (-5, 10)]),
             (3, "neg", -2**63, 2, [(0, 5)])]
    for lid, name, ts, md, evs in lines:
        ln = p.lines.add()
        ln.id, ln.name, ln.timestamp_ns = lid, name, ts
        for off, dur in evs:
            e = ln.events.add()
            e.metadata_id, e.offset_ps, e.duration_ps = md, off, dur
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())


def check(pb, path, where, structure_only=False):
    data = decode(path, "trace.pftrace")
    slices, counters, procs = check_structure(pb, data, where)
    tj = json.loads(decode(path, "trace"), parse_float=Decimal)
    want_x, want_c, want_p = [], [], {}
    has_async = False
    for e in tj["traceEvents"]:
        ph = e["ph"]
        if ph == "M" and e["name"] == "process_name" and e["pid"] != 0:
            want_p[e["pid"]] = e["args"]["name"]
        elif ph == "X":
            b = ns(e["ts"])
            want_x.append((e["pid"], e["name"], b, max(ns(e["ts"] + e["dur"]), b)))
        elif ph == "C":
            want_c.append((e["pid"], ns(e["ts"])))
        elif ph in ("b", "e"):
            has_async = True
    if procs != want_p:
        fail("%s: process names differ: %r vs %r" % (where, procs, want_p))
    if sorted(counters) != sorted(want_c):
        fail("%s: %d counter events, trace.json has %d (or times differ)" %
             (where, len(counters), len(want_c)))
    got = collections.Counter(slices)
    want = collections.Counter(want_x)
    if has_async:
        # async spans are slices here; every "X" of trace.json must be among them
        missing = want - got
        if missing:
            fail("%s: %d trace.json X events missing, e.g. %r" %
                 (where, sum(missing.values()), next(iter(missing))))
    elif structure_only:  # unsorted starts are moved: counts only
        if sum(got.values()) != sum(want.values()):
            fail("%s: %d slices, trace.json has %d X events" %
                 (where, sum(got.values()), sum(want.values())))
    elif got != want:
        extra, missing = got - want, want - got
        fail("%s: slices differ from trace.json: %d extra %r, %d missing %r" %
             (where, sum(extra.values()), list(extra)[:2], sum(missing.values()),
              list(missing)[:2]))
    print("ok %s: %d slices, %d counters, %d bytes" % (where, len(slices), len(counters),
                                                       len(data)))


def main():
    pb = load_pb2()
    tmp = tempfile.mkdtemp(prefix="xprofs-pftrace-gen-")
    profiles = [(p, p) for p in sys.argv[1:]]
    samples = os.path.join(SHARED, "samples")
    found = [] if profiles else sorted(glob.glob(os.path.join(samples, "*", "**", "*.xplane.pb"), recursive=True))
    if not found and not profiles:
        print("note: no shared samples under %s: that part is skipped" % samples)
    profiles += [(p, os.path.relpath(p, samples)) for p in found]
    for kind in ("tpu", "gpu", "cpu") if len(sys.argv) == 1 else ():
        out = os.path.join(tmp, kind + ".xplane.pb")
        subprocess.run([GEN, "--kind", kind, "--size", "2M", "-o", out], check=True)
        profiles.append((out, "generated " + kind))
    if len(sys.argv) == 1:
        hostile_profile(os.path.join(tmp, "hostile.xplane.pb"))
        profiles.append((os.path.join(tmp, "hostile.xplane.pb"), "hostile"))
    for path, where in profiles:
        try:
            check(pb, path, where, where == "hostile")
        except Exception as e:  # noqa: BLE001
            fail("%s: %s" % (where, e))
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
