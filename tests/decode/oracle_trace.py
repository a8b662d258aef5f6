"""oracle_trace.py - trace.json as XProf defines it, recomputed independently.

Written from XProf's sources, not from xprofs' C code: the plane choice and
pids of ConvertXSpaceToTraceEventsContainer() (xprof/convert/
xplane_to_trace_container.cc) with the constants of TSL's trace_utils.h;
lines, hidden events and stats, step_name, flow, _a and group_id of
ConvertXLineToTraceEventsContainer() / ConvertXStatsToTraceEventArguments()
(IsInternalEvent(), IsInternalStat(), XFlow in TSL's xplane_schema); the
JSON phases of JsonEventWriter (trace_events_to_json.h). xprofs' documented
differences (docs/trace.md) are applied on top: an async event whose flow id
has only one end on its plane is a complete event.

check(path, xs, raw, gz, host, fail) compares the CLI's trace.json with the
expectation: the same multiset of events (phase, name, ts, dur, pid, tid,
flow/async id), their args, process and thread names; then that flows are
paired or reported, async b/e balanced per (pid, cat, id), no internal stat
in any args, and trace.json.gz gunzips to trace.json.
"""
import collections
import gzip
import json
import zlib
from decimal import Decimal

FIRST_DEVICE, LAST_DEVICE = 1, 500
FIRST_CUSTOM = LAST_DEVICE + 1
HOST_THREADS = FIRST_CUSTOM + 200
INTERNAL_EVENTS = {
    "MemoryAllocation", "MemoryDeallocation", "PrefetchProduce", "PrefetchConsume",
    "ParallelInterleaveProduce", "ParallelInterleaveConsume", "ParallelInterleaveInitializeInput",
    "ParallelMapProduce", "ParallelMapConsume", "MapAndBatchProduce", "MapAndBatchConsume",
    "ParseExampleProduce", "ParseExampleConsume"}
INTERNAL_STATS = {"kernel_details", "_pt", "_p", "_ct", "_c", "_r", "flops", "program_id", "symbol_id"}
CATEGORIES = ["", "", "tf_exec", "tfrt_exec", "batch_sched", "PjRt", "as_batch_sched", "tfrt_rt",
              "tpu_embed", "gpu_launch", "batcher", "tpu_stream", "tpu_launch", "pathways_exec",
              "pjrt_library_call"]
U32 = 0xffffffff
U64 = 0xffffffffffffffff


def planes(xs):
    """(plane, pid) in XProf's order."""
    host = sorted((p for p in xs.planes if p.name.startswith("/host:CPU")),
                  key=lambda p: p.name.encode())
    out = [(p, HOST_THREADS + i) for i, p in enumerate(host)]
    dev = [p for p in xs.planes if p.name.startswith("/device:GPU:")]
    if not dev:
        dev = [p for p in xs.planes if p.name.startswith("/device:TPU:")]
    for p in dev:
        pid = (FIRST_DEVICE + p.id) & U32
        out.append((p, FIRST_DEVICE if pid > LAST_DEVICE else pid))
    out += [(p, (FIRST_CUSTOM + p.id) & U32) for p in xs.planes
            if p.name.startswith("/device:CUSTOM:")]
    return [(p, pid) for p, pid in out if len(p.lines) > 0]


def xflow(v):
    v &= U64
    return v & 3, (v >> 2) & ((1 << 56) - 1), v >> 58


def category(c):
    return CATEGORIES[c] if c < len(CATEGORIES) else ""


def arg_int(v):
    return str(v) if abs(v) > (1 << 53) else v


def event_facts(p, e, value_of):
    """name, args and the special stats of event @e of plane @p."""
    md = p.event_metadata[e.metadata_id] if e.metadata_id in p.event_metadata else None
    full = md.name if md is not None else ""
    disp = md.display_name if md is not None else ""
    f = {"internal": full in INTERNAL_EVENTS, "name": disp or full, "args": {},
         "flow": None, "group": None, "async": False, "step": ""}
    if disp:
        b = full.encode()
        f["args"]["long_name"] = full if len(b) <= 10000 else \
            b[:10000].decode("utf-8", "replace") + "...<truncated>"
    for st in list(md.stats if md is not None else []) + list(e.stats):
        kind = st.WhichOneof("value")
        name = p.stat_metadata[st.metadata_id].name if st.metadata_id in p.stat_metadata else ""
        if kind is None or kind == "bytes_value" or name in INTERNAL_STATS:
            continue
        if kind in ("int64_value", "uint64_value"):
            v = getattr(st, kind)
            if name == "flow":
                f["flow"] = v
            elif name == "group_id":
                f["group"] = v if kind == "int64_value" else (v - (1 << 64) if v >> 63 else v)
            elif name == "_a":
                f["async"] = True
            else:
                f["args"][name] = arg_int(v)
            continue
        if kind == "double_value":
            d = st.double_value
            f["args"][name] = "NaN" if d != d else "Infinity" if d == float("inf") else \
                "-Infinity" if d == float("-inf") else d
            continue
        v = value_of(p, st)
        if name == "step_name" and kind in ("str_value", "ref_value"):
            f["step"] = v
        f["args"][name] = v
    if f["step"]:
        f["name"] = f["step"]
    if f["group"] is not None:
        f["args"] = dict([("group_id", f["group"])] + list(f["args"].items()))
    return f


def expected(xs, host, value_of):
    """The events XProf's rules give: (key, args) pairs, process and thread names."""
    evs, procs, threads = [], {}, {}
    for p, pid in planes(xs):
        procs[pid] = "%s %s" % (host, p.name) if host else p.name
        facts = []
        ends = collections.defaultdict(int)
        for l in p.lines:
            if not l.events or l.name.startswith("counters_"):
                continue
            counters = l.name == "_counters_"
            tid = (l.display_id or l.id) & U32
            if not counters:
                threads[(pid, tid)] = l.display_name or l.name
            for e in l.events:
                f = event_facts(p, e, value_of)
                if f["internal"]:
                    continue
                off = e.offset_ps if e.WhichOneof("data") == "offset_ps" else 0
                facts.append((counters, tid, l.timestamp_ns * 1000 + off, e.duration_ps, f))
                if not counters and f["async"] and f["flow"] is not None:
                    d, i, c = xflow(f["flow"])
                    if d in (1, 2):
                        ends[(i, c)] |= d
        for counters, tid, ts, dur, f in facts:
            if counters:
                evs.append((("C", f["name"], ts, None, pid, None, None), f["args"]))
                continue
            d, i, c = xflow(f["flow"]) if f["flow"] is not None else (0, 0, 0)
            if f["async"] and f["flow"] is not None and d and (d == 3 or ends[(i, c)] == 3):
                ph = "e" if d == 1 else "b"
                evs.append(((ph, f["name"], ts, None, pid, tid, ("id", i, category(c))), f["args"]))
                if d == 3:
                    evs.append((("e", f["name"], ts + dur, None, pid, tid,
                                 ("id", i, category(c))), None))
                continue
            bind = None
            if f["flow"] is not None and not f["async"] and d:
                bind = ("bind", i, category(c) or None, bool(d & 1), bool(d & 2))
            evs.append((("X", f["name"], ts, dur if dur > 0 else 1, pid, tid, bind), f["args"]))
    return evs, procs, threads


def ps(v):
    return int(Decimal(v) * 1000000)


def got_key(ev):
    ph = ev["ph"]
    if ph == "C":
        return ("C", ev["name"], ps(ev["ts"]), None, ev["pid"], None, None)
    if ph in ("b", "e"):
        return (ph, ev["name"], ps(ev["ts"]), None, ev["pid"], ev["tid"],
                ("id", ev["id"], ev["cat"]))
    bind = None
    if "bind_id" in ev:
        bind = ("bind", ev["bind_id"], ev.get("cat"), ev.get("flow_in", False),
                ev.get("flow_out", False))
    return ("X", ev["name"], ps(ev["ts"]), ps(ev["dur"]), ev["pid"], ev["tid"], bind)


def same_args(a, b):
    if a is None or b is None:
        return a == b or not (a or b)
    if list(a) != list(b):
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, (Decimal, float)) or isinstance(y, (Decimal, float)):
            if float(x) != float(y):
                return False
        elif x != y:
            return False
    return True


def check(path, xs, raw, gz, host, value_of, fail):
    if not raw.startswith(b'{"displayTimeUnit":"ns"'):
        fail("%s: trace.json does not start with displayTimeUnit" % path)
    try:
        t = json.loads(raw, parse_float=Decimal)
    except ValueError as err:
        fail("%s: trace.json is not JSON: %s" % (path, err))
        return
    if gzip.decompress(gz) != raw:
        fail("%s: trace.json.gz does not gunzip to trace.json" % path)
    want, procs, threads = expected(xs, host, value_of)
    got, gprocs, gthreads = [], {}, {}
    for ev in t["traceEvents"]:
        if ev["ph"] == "M":
            if ev["name"] == "process_name" and ev["pid"] != 0:
                gprocs[ev["pid"]] = ev["args"]["name"]
            elif ev["name"] == "thread_name":
                gthreads[(ev["pid"], ev["tid"])] = ev["args"]["name"]
            continue
        got.append((got_key(ev), ev.get("args")))
        for k in ev.get("args") or {}:
            if k in INTERNAL_STATS or k in ("flow", "_a"):
                fail("%s: trace: internal stat %r in args of %r" % (path, k, ev["name"]))
    if procs != gprocs:
        fail("%s: trace processes %r vs %r" % (path, sorted(gprocs.items())[:5],
                                               sorted(procs.items())[:5]))
    if threads != gthreads:
        fail("%s: trace threads differ (%d vs %d)" % (path, len(gthreads), len(threads)))
    wc = collections.Counter(k for k, _ in want)
    gc = collections.Counter(k for k, _ in got)
    if wc != gc:
        extra, missing = list((gc - wc).items())[:3], list((wc - gc).items())[:3]
        fail("%s: trace events: %d vs %d; unexpected %r; missing %r"
             % (path, sum(gc.values()), sum(wc.values()), extra, missing))
        return
    wargs = collections.defaultdict(list)
    for k, a in want:
        wargs[k].append(a)
    for k, a in got:
        if not any(same_args(a, w) for w in wargs[k]):
            fail("%s: trace args of %r: %r vs %r" % (path, k[:3], a, wargs[k][:1]))
            break
    # async b/e balanced per (pid, cat, id); flows: every bind id has both ends, or is reported
    bal = collections.Counter()
    flows = collections.defaultdict(set)
    for k, _ in got:
        if k[0] in ("b", "e"):
            bal[(k[4], k[6][2], k[6][1])] += 1 if k[0] == "b" else -1
        elif k[6]:
            if k[6][3]:
                flows[k[6][1]].add("in")
            if k[6][4]:
                flows[k[6][1]].add("out")
    for key, n in bal.items():
        if n:
            fail("%s: trace: async %r has %+d unbalanced b/e" % (path, key, n))
            break
    lone = [i for i, ends in flows.items() if ends != {"in", "out"}]
    if lone:
        print("note: %s: %d of %d flow ids have one end only (kept, as XProf does)"
              % (path, len(lone), len(flows)))
    steps = sum(1 for k, _ in want if k[0] == "X")
    print("  trace: %d events (%d complete), %d flows, %d async ids"
          % (len(got), steps, len(flows), len(bal)))
