#!/usr/bin/python3
"""check_pftrace.py - strict checker of trace.pftrace (Perfetto's protobuf trace).

Usage: check_pftrace.py [PROFILE...] (env XPROFS_SOURCE_ROOT, XPROFS_BUILD_ROOT, XPROFS_SHARED;
with PROFILEs, only those are checked)

For each profile (shared samples, generated tpu/gpu/cpu profiles, the edge-case
sample, two hostile ones; and a generated profile through a real mount, its
host file and its steps/0 slice) it decodes trace.pftrace with protoc-generated
code from trace/proto/perfetto_trace.proto and checks:
- structure: every event on a described track (its own or the sequence's
  TrackEventDefaults track); the first packet of each sequence clears
  incremental state and later ones need it; interned ids (event names,
  annotation names, annotation string values) defined on the sequence before
  use, reset by SEQ_INCREMENTAL_STATE_CLEARED, and never naming two values in
  one trace; timestamps resolved through the sequence's clocks (ClockSnapshot,
  incremental clock, TracePacketDefaults.timestamp_clock_id) and monotonic per
  sequence; slices balance and nest per track;
- content against trace.json of the same profile: process names; every "X"
  event and every async "b"/"e" pair (paired as view-pftrace.c pairs them) is
  one slice with the same pid, name, begin and end (ns), args (same keys, order,
  values and types; begin and end args merged for async pairs) and flow
  (bind_id/flow_in/flow_out as flow_ids/terminating_flow_ids); counters at the
  same times; flow ids that dangle (a start without an end or the reverse) are
  exactly those trace.json's own flows leave dangling; each process's "plane
  stats" instant holds its plane's stats as summary.json shows them, at the
  first event's start (so Perfetto's first view starts where the events do).

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

import flows_profile
import offload_profile
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


def ps_dur(us):
    """A trace.json "dur" rounded to the picosecond: it may carry more digits, so that a
    double reader's ts + dur is the exact end (docs/trace.md "Times")."""
    return Decimal(us).quantize(Decimal("0.000001"))


class Seq:
    """One packet sequence's incremental state."""

    def __init__(self):
        self.tables = collections.defaultdict(dict)  # InternedData field -> iid -> value
        self.clock = 6          # TracePacketDefaults.timestamp_clock_id (BOOTTIME if unset)
        self.track = None       # TrackEventDefaults.track_uuid
        self.incr = {}          # incremental clock id -> its last value
        self.last_ts = 0


def ann_value(a, tab, where):
    """A DebugAnnotation's value as json.loads gives trace.json's."""
    for f in ("bool_value", "int_value", "uint_value", "double_value", "string_value"):
        if a.HasField(f):
            return getattr(a, f)
    if a.HasField("string_value_iid"):
        if a.string_value_iid not in tab["debug_annotation_string_values"]:
            fail("%s: undefined string value iid %d" % (where, a.string_value_iid))
            return None
        return tab["debug_annotation_string_values"][a.string_value_iid].decode(
            "utf-8", "surrogateescape")
    fail("%s: annotation without a value" % where)
    return None


def event_args(te, tab, where):
    """The (name, value) pairs of a TrackEvent's debug annotations, names resolved."""
    out = []
    for a in te.debug_annotations:
        if a.HasField("name_iid"):
            if a.name_iid not in tab["debug_annotation_names"]:
                fail("%s: undefined annotation name iid %d" % (where, a.name_iid))
            name = tab["debug_annotation_names"].get(a.name_iid, "")
        else:
            name = a.name
        out.append((name, ann_value(a, tab, where)))
    return out


def intern(p, st, glob_tabs, where):
    """Add packet @p's InternedData to @st; an iid never names two values in one trace."""
    idata = p.interned_data
    for field, key in (("event_names", "name"), ("debug_annotation_names", "name"),
                       ("debug_annotation_string_values", "str")):
        for e in getattr(idata, field):
            v = getattr(e, key)
            if not e.iid:
                fail("%s: iid 0 in %s" % (where, field))
            old = glob_tabs[field].setdefault(e.iid, v)
            if old != v:
                fail("%s: %s iid %d names %r and %r" % (where, field, e.iid, old, v))
            st.tables[field][e.iid] = v


def packet_time(p, st, where):
    """The packet's absolute time (ns) on its sequence's clocks, or None without one."""
    if p.HasField("clock_snapshot"):
        for c in p.clock_snapshot.clocks:
            if c.is_incremental:
                if not 64 <= c.clock_id <= 127:
                    fail("%s: incremental clock %d is not sequence-scoped" % (where, c.clock_id))
                st.incr[c.clock_id] = c.timestamp
    if not p.HasField("timestamp"):
        return None
    cid = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else st.clock
    if cid in st.incr:
        st.incr[cid] += p.timestamp
        return st.incr[cid]
    if cid in (0, 6):
        return p.timestamp
    fail("%s: timestamp on unknown clock %d" % (where, cid))
    return p.timestamp


def track_pid(tracks, uuid):
    """The pid of track @uuid (its own, or its parent's)."""
    while uuid in tracks:
        td = tracks[uuid]
        if td.HasField("thread"):
            return td.thread.pid
        if td.HasField("process"):
            return td.process.pid
        uuid = td.parent_uuid if td.HasField("parent_uuid") else None
    return None


def check_structure(pb, data, where):
    """Check the structural rules; return what the trace holds."""
    tr = pb.Trace()
    tr.ParseFromString(data)
    tracks, seqs = {}, {}
    glob_tabs = collections.defaultdict(dict)
    stacks = collections.defaultdict(list)
    out = {"slices": [], "counters": [], "procs": {}, "instants": [], "async_tracks": set(),
           "flows": []}
    T = pb.TrackEvent
    for i, p in enumerate(tr.packet):
        w = "%s: packet %d" % (where, i)
        seq = p.trusted_packet_sequence_id
        if not seq:
            fail("%s has no sequence id" % w)
            continue
        if p.sequence_flags & 1:
            seqs[seq] = Seq()
        elif seq not in seqs:
            fail("%s: first packet of sequence %d does not clear state" % (w, seq))
            seqs[seq] = Seq()
        elif not p.sequence_flags & 2:
            fail("%s of sequence %d lacks NEEDS_INCREMENTAL_STATE" % (w, seq))
        st = seqs[seq]
        if p.HasField("trace_packet_defaults"):
            d = p.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                st.clock = d.timestamp_clock_id
            if d.track_event_defaults.HasField("track_uuid"):
                st.track = d.track_event_defaults.track_uuid
        intern(p, st, glob_tabs, w)
        ts = packet_time(p, st, w)
        if ts is not None:
            if ts < st.last_ts:
                fail("%s: sequence %d goes back in time" % (w, seq))
            st.last_ts = ts
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.uuid in tracks:
                fail("%s: track %d described twice" % (w, td.uuid))
            if td.HasField("parent_uuid") and td.parent_uuid not in tracks:
                fail("%s: track %d's parent is not described" % (w, td.uuid))
            tracks[td.uuid] = td
            if td.HasField("process"):
                out["procs"][td.process.pid] = td.process.process_name
            elif not td.HasField("thread") and not td.HasField("counter") and \
                    tracks.get(td.parent_uuid, td).HasField("process"):
                out["async_tracks"].add(td.uuid)
        if not p.HasField("track_event"):
            if not (p.HasField("track_descriptor") or p.HasField("clock_snapshot") or
                    p.HasField("interned_data")):
                fail("%s is neither a track, a clock, interned data nor an event" % w)
            continue
        if ts is None:
            fail("%s: an event without a timestamp" % w)
            continue
        te = p.track_event
        if (te.HasField("name_iid") or p.HasField("interned_data")) and \
                not p.sequence_flags & 2 and not p.sequence_flags & 1:
            fail("%s uses interned data without NEEDS flag" % w)
        name = te.name
        if te.HasField("name_iid"):
            if te.name_iid not in st.tables["event_names"]:
                fail("%s uses undefined name iid %d" % (w, te.name_iid))
            name = st.tables["event_names"].get(te.name_iid, "")
        track = te.track_uuid if te.HasField("track_uuid") else st.track
        if track not in tracks:
            fail("%s: event on undescribed track %r" % (w, track))
            continue
        td = tracks[track]
        pid = track_pid(tracks, track)
        args = event_args(te, st.tables, w)
        flows = tuple(("f", f) for f in te.flow_ids) + \
            tuple(("t", f) for f in te.terminating_flow_ids)
        if te.type == T.TYPE_SLICE_BEGIN:
            stacks[track].append((name, ts, pid, args, flows))
        elif te.type == T.TYPE_SLICE_END:
            st_ = stacks[track]
            if not st_:
                fail("%s: end without begin" % w)
                continue
            name, b, pid, bargs, flows = st_.pop()
            out["slices"].append((pid, name, b, ts, tuple(bargs + args), flows,
                                  track in out["async_tracks"]))
            out["flows"].extend(flows)
        elif te.type == T.TYPE_COUNTER:
            if not td.HasField("counter"):
                fail("%s: counter event on a non-counter track" % w)
            out["counters"].append((pid, ts))
        elif te.type == T.TYPE_INSTANT:
            out["instants"].append((pid, name, ts, tuple(args)))
        else:
            fail("%s: unexpected event type %d" % (w, te.type))
    for u, st_ in stacks.items():
        if st_:
            fail("%s: track %d ends with %d open slices" % (where, u, len(st_)))
    return out


def json_value(v):
    """trace.json's arg value as the checker compares it."""
    return float(v) if isinstance(v, Decimal) else v


def norm_args(pairs):
    return tuple((k, float(v) if isinstance(v, float) else v) for k, v in pairs)


def json_flow(e):
    """A trace.json X event's flow as (kind, id): flow_out starts ("f"), flow_in alone ends."""
    if "bind_id" not in e:
        return ()
    return (("t" if e.get("flow_in") and not e.get("flow_out") else "f", e["bind_id"]),)


def pftrace_flow(flows):
    """pftrace's flow ids back to trace.json's bind_id (the low 56 bits of id - 1)."""
    return tuple((k, (f - 1) & ((1 << 56) - 1)) for k, f in flows)


def want_from_json(tj):
    """trace.json's slices (X events, async pairs), counters, processes, as pftrace has them."""
    want, partial, counters, procs = [], [], [], {}
    groups = collections.defaultdict(list)
    evs = tj["traceEvents"]
    i = 0
    while i < len(evs):
        e = evs[i]
        ph = e["ph"]
        args = norm_args((k, json_value(v)) for k, v in e.get("args", []))
        if ph == "M" and e["name"] == "process_name" and e["pid"] != 0:
            procs[e["pid"]] = dict(e["args"])["name"]
        elif ph == "X":
            b = ns(e["ts"])
            want.append((e["pid"], e["name"], b, max(ns(e["ts"] + ps_dur(e["dur"])), b), args,
                         json_flow(e)))
        elif ph == "C":
            counters.append((e["pid"], ns(e["ts"])))
        elif ph == "b" and i + 1 < len(evs) and evs[i + 1]["ph"] == "e" and \
                "args" not in evs[i + 1]:  # an in-out async event: b and its argless e
            b = ns(e["ts"])
            want.append((e["pid"], e["name"], b, max(ns(evs[i + 1]["ts"]), b), args, ()))
            i += 1
        elif ph in ("b", "e"):
            groups[(e["pid"], e["cat"], e["id"])].append((ns(e["ts"]), ph == "e", i, e, args))
        i += 1
    for key, g in groups.items():  # pair as view-pftrace.c's async_pair()
        g.sort(key=lambda x: (x[0], x[1], x[2]))
        opened = collections.deque()
        for ts, is_end, _, e, args in g:
            if not is_end:
                opened.append((ts, e, args))
            elif opened:
                b, be, bargs = opened.popleft()
                want.append((key[0], be["name"], b, max(ts, b), bargs + args, ()))
            else:
                partial.append((key[0], e["name"], ts))
        partial.extend((key[0], be["name"], b) for b, be, _ in opened)
    return want, partial, counters, procs


def deep_profile(path):
    """A line of 12 events each partly overlapping the one before (more than the overlap
    tracks hold: some are dropped), whose stat names first appear on dropped events."""
    x, tmp = xproto.load("xplane")
    shutil.rmtree(tmp, ignore_errors=True)
    sp = x.XSpace()
    p = sp.planes.add()
    p.id, p.name = 1, "/device:TPU:0"
    p.event_metadata[1].id, p.event_metadata[1].name = 1, "deep"
    p.stat_metadata[1].id, p.stat_metadata[1].name = 1, "late"
    ln = p.lines.add()
    ln.id, ln.name, ln.timestamp_ns = 1, "XLA Ops", 100
    for i in range(13):
        e = ln.events.add()
        e.metadata_id, e.offset_ps, e.duration_ps = 1, i * 10000 + (10**7 if i == 12 else 0), \
            100000 + i * 1000
        if i >= 9:
            st = e.stats.add()
            st.metadata_id, st.int64_value = 1, i
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())


def check(pb, path, where, structure_only=False, data=None, tj_data=None):
    data = data if data is not None else decode(path, "trace.pftrace")
    got = check_structure(pb, data, where)
    if structure_only == "deep":  # events past the overlap tracks are dropped (documented)
        if not any(dict(s[4]).get("late") == 12 for s in got["slices"]):
            fail("%s: the event after the dropped ones lost its args" % where)
        print("ok %s: %d slices, structure only" % (where, len(got["slices"])))
        return got
    tj = json.loads(tj_data if tj_data is not None else decode(path, "trace"),
                    parse_float=Decimal, object_pairs_hook=list)
    tj = dict(tj)
    tj["traceEvents"] = [dict(e) for e in tj["traceEvents"]]
    want, partial, want_c, want_p = want_from_json(tj)
    if got["procs"] != want_p:
        fail("%s: process names differ: %r vs %r" % (where, got["procs"], want_p))
    if sorted(got["counters"]) != sorted(want_c):
        fail("%s: %d counter events, trace.json has %d (or times differ)" %
             (where, len(got["counters"]), len(want_c)))
    slices = collections.Counter((pid, n, b, e, norm_args(a), pftrace_flow(f))
                                 for pid, n, b, e, a, f, _ in got["slices"])
    wantc = collections.Counter(want)
    extra, missing = slices - wantc, wantc - slices
    # unpaired async events of a key with both ends: trace.json has "b"/"e", pftrace a span
    part = collections.Counter(partial)
    for k in list(extra):
        pk = (k[0], k[1], k[2])
        while extra[k] and part[pk]:
            extra[k] -= 1
            part[pk] -= 1
    extra += collections.Counter()
    if +part:
        fail("%s: %d unpaired async events missing" % (where, sum((+part).values())))
    check_first_view(got, where)
    if structure_only:  # unsorted starts are moved: counts only
        if len(got["slices"]) != len(want) + len(partial):
            fail("%s: %d slices, trace.json has %d" % (where, len(got["slices"]),
                                                      len(want) + len(partial)))
    elif extra or missing:
        fail("%s: slices differ from trace.json: %d extra %r, %d missing %r" %
             (where, sum(extra.values()), list(extra)[:2], sum(missing.values()),
              list(missing)[:2]))
    check_flows(got, want, where)
    if path is not None:
        check_plane_stats(got, json.loads(decode(path, "summary"), parse_float=Decimal,
                                          object_pairs_hook=list), where)
    print("ok %s: %d slices (%d async), %d counters, %d flow ends (%d dangling as in "
          "trace.json), %d plane stats, %d bytes" %
          (where, len(got["slices"]), sum(1 for s in got["slices"] if s[6]),
           len(got["counters"]), len(got["flows"]), got["dangling"], len(got["instants"]),
           len(data)))
    return got


def check_first_view(got, where):
    """The plane-stats instants sit at the first event's start, so Perfetto's trace bounds
    (and its first view) begin where the events begin, not at an earlier line timestamp."""
    starts = [s[2] for s in got["slices"]] + [c[1] for c in got["counters"]]
    if not starts or not got["instants"]:
        return
    bad = sorted({i[2] for i in got["instants"] if i[2] != min(starts)})
    if bad:
        fail("%s: plane stats instants at %r ns, the first event at %d ns: Perfetto's first "
             "view would start before the events" % (where, bad[:3], min(starts)))


def check_plane_stats(got, summary, where):
    """Each process's "plane stats" instant holds its plane's stats as summary.json has them;
    planes without stats have none."""
    want = collections.Counter()
    for name, pid in ((n, pid) for pid, n in got["procs"].items()):
        for pl in (dict(p) for p in dict(summary)["planes"]):
            if name == pl["name"] or name.endswith(" " + pl["name"]):
                if pl["stats"]:
                    want[(pid, norm_args((k, json_value(v)) for k, v in pl["stats"]))] += 1
                break
    have = collections.Counter((pid, a) for pid, n, ts, a in got["instants"]
                               if n == "plane stats")
    if have != want:
        fail("%s: plane stats differ from summary.json: %r vs %r" %
             (where, list(have)[:2], list(want)[:2]))


def dangling(flows):
    """(ids that end without a start, ids that start and never end)."""
    started = {f for k, f in flows if k == "f"}
    ended = {f for k, f in flows if k == "t"}
    return ended - started, started - ended


def check_flows(got, want, where):
    """Every flow id that ends was started and every started one ends, except where
    trace.json's own flows dangle (partners missing from the profile): the same ids."""
    mine = dangling(pftrace_flow(got["flows"]))
    theirs = dangling([f for w in want for f in w[5]])
    if mine != theirs:
        fail("%s: dangling flows (no start, no end) %r, trace.json's %r" % (where, mine, theirs))
    got["dangling"] = sum(len(d) for d in mine)


def xflow(fid, direction, cat=0):
    """An XFlow stat value: bits 0-1 direction (1 in, 2 out, 3 both), 2-57 id, 58-63 category."""
    return (cat << 58) | (fid << 2) | direction


def hostile_profile(path, flowy=False):
    """Partial overlaps, unsorted starts, 2^63 and negative times; or (@flowy) flow ids
    without partners, async ends without begins, begins without ends, overlapping pairs."""
    x, tmp = xproto.load("xplane")
    shutil.rmtree(tmp, ignore_errors=True)
    sp = x.XSpace()
    p = sp.planes.add()
    p.id, p.name = 1, "/device:TPU:0"
    for i, nm in ((1, "a"), (2, "b"), (3, "flowy"), (4, "async op")):
        p.event_metadata[i].id, p.event_metadata[i].name = i, nm
    for i, nm in ((1, "flow"), (2, "_a"), (3, "group_id"), (4, "note")):
        p.stat_metadata[i].id, p.stat_metadata[i].name = i, nm
    lines = [(1, "XLA Ops", 1000, 1, [(0, 10000), (5000, 10000), (6000, 20000), (7000, 30000),
                                      (7000, 1), (0, 0)]),
             (2, "huge", 2**63 - 1, 2, [(0, 2**63 - 1), (2**62, 2**62), (-5, 10)]),
             (3, "neg", -2**63, 2, [(0, 5)])]
    for lid, name, ts, md, evs in lines if not flowy else ():
        ln = p.lines.add()
        ln.id, ln.name, ln.timestamp_ns = lid, name, ts
        for off, dur in evs:
            e = ln.events.add()
            e.metadata_id, e.offset_ps, e.duration_ps = md, off, dur
    # (offset, duration, flow value, async, group): paired, lone in, lone out, in-out chain
    flows = [(0, 1000, xflow(7, 2), False, 5), (2000, 1000, xflow(7, 1), False, None),
             (4000, 1000, xflow(9, 1), False, None), (6000, 1000, xflow(11, 2, 5), False, 6),
             (8000, 1000, xflow(13, 2), False, None), (9000, 500, xflow(13, 3), False, None),
             (10000, 500, xflow(13, 1), False, None)]
    # async: a pair, overlapping pairs, an end without begin, two begins and one end, in-out
    asyncs = [(0, 100, xflow(20, 2), True, None), (5000, 100, xflow(20, 1), True, 1),
              (1000, 100, xflow(24, 2, 11), True, None), (3000, 100, xflow(25, 2, 11), True, None),
              (7000, 100, xflow(24, 1, 11), True, None), (9000, 100, xflow(25, 1, 11), True, None),
              (2000, 100, xflow(21, 1), True, None),
              (100, 50, xflow(22, 2), True, None), (200, 50, xflow(22, 2), True, None),
              (300, 50, xflow(22, 1), True, None), (400, 700, xflow(23, 3), True, 2),
              (500, 0, xflow(26, 3), True, None)]
    for lid, name, md, evs in ((4, "Flows", 3, flows), (5, "Async XLA Ops", 4, asyncs)) \
            if flowy else ():
        ln = p.lines.add()
        ln.id, ln.name, ln.timestamp_ns = lid, name, 50
        for off, dur, fv, is_async, group in evs:
            e = ln.events.add()
            e.metadata_id, e.offset_ps, e.duration_ps = md, off * 1000, dur * 1000
            st = e.stats.add()
            st.metadata_id, st.uint64_value = 1, fv
            if is_async:
                st = e.stats.add()
                st.metadata_id, st.int64_value = 2, 1
            if group is not None:
                st = e.stats.add()
                st.metadata_id, st.int64_value = 3, group
            st = e.stats.add()
            st.metadata_id, st.str_value = 4, "x\n\"y\u00e9"
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())


def check_mount(pb, tmp):
    """Through a real mount: a generated tpu profile's host trace.pftrace and its
    steps/0 slice, each against the mount's own trace.json."""
    import xmount
    why = xmount.usable()
    if why:
        print("note: no mount check (%s)" % why)
        return
    sess = os.path.join(tmp, "src", "run", "plugins", "profile", "s1")
    os.makedirs(sess)
    subprocess.run([GEN, "--kind", "tpu", "--size", "3M", "--seed", "9", "-o",
                    os.path.join(sess, "mnt-host.xplane.pb")], check=True)
    m = xmount.Mount(tmp, os.path.join(tmp, "src"))
    try:
        hd = os.path.join(m.mnt, "runs", "run", "s1", "mnt-host")
        for sub in ("", os.path.join("steps", "0")):
            d = os.path.join(hd, sub)
            data = xmount.read_whole(os.path.join(d, "trace.pftrace"))[1]
            tj = xmount.read_whole(os.path.join(d, "trace.json"))[1]
            xproto.verdict(check, pb, None, "mount " + (sub or "host"), data=data, tj_data=tj)
    finally:
        rc = m.close()
        if rc != 0:
            fail("mount: xprofs exited with %d" % rc)


def main():
    pb = load_pb2()
    tmp = tempfile.mkdtemp(prefix="xprofs-pftrace-gen-")
    profiles = [(p, p) for p in sys.argv[1:]]
    samples = os.path.join(SHARED, "samples")
    found = [] if profiles else sorted(glob.glob(os.path.join(samples, "*", "**", "*.xplane.pb"), recursive=True))
    if not found and not profiles:
        print("note: no shared samples under %s: that part is skipped" % samples)
    profiles += [(p, os.path.relpath(p, samples)) for p in found]
    # tpu and gpu ungrouped: XProf's preprocessing (derived lines) runs on them
    for kind in ("tpu", "gpu", "cpu") if len(sys.argv) == 1 else ():
        out = os.path.join(tmp, kind + ".xplane.pb")
        subprocess.run([GEN, "--kind", kind, "--size", "2M", "-o", out] +
                       (["--ungrouped"] if kind != "cpu" else []), check=True)
        profiles.append((out, "generated " + kind))
    if len(sys.argv) == 1:
        hostile_profile(os.path.join(tmp, "hostile.xplane.pb"))
        profiles.append((os.path.join(tmp, "hostile.xplane.pb"), "hostile"))
        hostile_profile(os.path.join(tmp, "flows.xplane.pb"), True)
        profiles.append((os.path.join(tmp, "flows.xplane.pb"), "hostile flows"))
        deep_profile(os.path.join(tmp, "deep.xplane.pb"))
        profiles.append((os.path.join(tmp, "deep.xplane.pb"), "hostile deep"))
        offload_profile.write(os.path.join(tmp, "offload.xplane.pb"))  # host-offload rows
        profiles.append((os.path.join(tmp, "offload.xplane.pb"), "host offload"))
        flows_profile.write(os.path.join(tmp, "xflows.xplane.pb"))  # preprocessing flows
        profiles.append((os.path.join(tmp, "xflows.xplane.pb"), "preprocessing flows"))
    for path, where in profiles:
        try:
            so = {"hostile": True, "hostile deep": "deep"}.get(where, False)
            xproto.verdict(check, pb, path, where, so, data=decode(path, "trace.pftrace"),
                           tj_data=None if so == "deep" else decode(path, "trace"))
        except Exception as e:  # noqa: BLE001
            fail("%s: %s" % (where, e))
    if len(sys.argv) == 1:
        try:
            check_mount(pb, tmp)
        except Exception as e:  # noqa: BLE001
            fail("mount: %s" % e)
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
