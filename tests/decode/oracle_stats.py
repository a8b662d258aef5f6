"""oracle_stats.py - XProf's analyses recomputed from a python3-protobuf parse.

Used by oracle.py (every shared sample, generated profiles) and
test_stats.py (small profiles with the edge cases). It follows the XProf
functions named in docs/stats.md, written from those rules and not from
decode/'s C code:

- op table: ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb()'s self time
  (an ancestor stack whose parent test is Timespan::Includes(); a parent
  loses the whole duration of each direct child), GetDeviceEventTimespan()
  on "XLA Ops" lines, SetRooflineMetrics(), op_profile_builder.cc's
  UpdateNodeMetrics() for the rollups;
- the device busy time of steps as a union of the device op lines.

Every time must be equal, every rate within 1e-9 relative.
"""
import math
import re
from decimal import Decimal

import oracle_hlo_facts
import oracle_trace
import oracle_steps

U64 = 1 << 64
# The sidecar files each profile path is rendered with (the CLI's --hlo), set by the tests.
SIDECARS = {}


def hlo_of(xs, path=None):
    """The HLO facts the views of profile @xs (at @path) see."""
    return oracle_hlo_facts.for_profile(xs, SIDECARS.get(path, ()))


def signed(v):
    return v - U64 if v >= 1 << 63 else v


class Stats:
    """The stats of one XEvent / XEventMetadata / XPlane by name, in file order."""

    def __init__(self, plane, stats, stat_value, stat_name):
        self.items = [(stat_name(plane, st.metadata_id), st) for st in stats]
        self.plane = plane
        self.stat_value = stat_value

    def last(self, name, kinds):
        """The last stat @name whose value kind is in @kinds (None: any)."""
        got = None
        for k, st in self.items:
            if k == name and (kinds is None or st.WhichOneof("value") in kinds):
                got = st
        return got

    def number(self, name):
        """stat_number(): finite doubles and integers; the last such stat wins."""
        got = None
        for k, st in self.items:
            if k != name:
                continue
            kind = st.WhichOneof("value")
            if kind == "double_value" and math.isfinite(st.double_value):
                got = st.double_value
            elif kind == "uint64_value":
                got = float(st.uint64_value)
            elif kind == "int64_value":
                got = float(st.int64_value)
        return got

    def integer(self, name):
        st = self.last(name, ("uint64_value", "int64_value"))
        return None if st is None else getattr(st, st.WhichOneof("value")) % U64

    def first_string(self, name):
        """The first stat @name as a string (facts_stat() keeps the first)."""
        for k, st in self.items:
            if k == name:
                return str(self.stat_value(self.plane, st))
        return None

    def string(self, name):
        st = None
        for k, s in self.items:
            if k == name:
                st = s
        return None if st is None else str(self.stat_value(self.plane, st))


# cuda_type_utils.cc / rocm_type_utils.cc GetFlopMaxThroughputPerCore(): per SM (CU) per
# cycle, max(vector FP32/FP16, matrix FP32/FP16)
NVIDIA_PER_CYCLE = [((2, 0), 64), ((3, 0), 384), ((5, 0), 256), ((6, 0), 256), ((6, 1), 256),
                    ((7, 0), 1024), ((7, 5), 1024), ((8, 0), 2048), ((8, 6), 1024),
                    ((8, 9), 1024), ((9, 0), 4096), ((10, 0), 8192)]
AMD_PER_CYCLE = {"gfx908": 1024, "gfx90a": 1024, "gfx942": 2048, "gfx950": 4096}


def gpu_peak_flops(s):
    """GetFlopMaxThroughputPerSM() x num_cores (GetPerfEnvFromXPlane()), FLOP/s; 0: unknown."""
    vendor, clock, cores = s.first_string("device_vendor"), s.number("clock_rate"), \
        s.number("core_count")
    major, minor = s.number("compute_cap_major") or 0.0, s.number("compute_cap_minor") or 0.0
    if vendor is None or clock is None or cores is None:
        return 0.0
    per = 0.0
    if vendor == "Nvidia":
        # the highest capability not above major.minor, else the oldest
        cc = major * 1000 + minor * 10
        per = NVIDIA_PER_CYCLE[0][1]
        for (ma, mi), v in NVIDIA_PER_CYCLE:
            if ma * 1000 + mi * 10 <= cc:
                per = v
    elif vendor == "AMD":
        # ResolveAmdGfxVersion(): GfxVersionIfWellFormed(device name), else by cc
        name = s.first_string("gpu_device_name") or ""
        if re.fullmatch(r"gfx[0-9a-fA-F]{3,}", name):
            gfx = name
        else:
            gfx = {(9, 4): "gfx942", (9, 5): "gfx950"}.get((major, minor), "")
        per = AMD_PER_CYCLE.get(gfx, 0.0)
    peak = per * (clock / 1e6) * cores * 1e9
    return peak if math.isfinite(peak) and peak > 0 and clock > 0 and cores > 0 else 0.0


NVIDIA_ARCH = {2: "Fermi", 3: "Kepler", 5: "Maxwell", 6: "Pascal", 8: "Ampere", 9: "Hopper",
               10: "Blackwell"}


def gpu_model_name(s):
    """GpuModelName() (cuda_type_utils.cc, rocm_type_utils.cc) of a plane's stats."""
    vendor = s.first_string("device_vendor")
    major, minor = s.number("compute_cap_major") or 0.0, s.number("compute_cap_minor") or 0.0
    if vendor == "Nvidia":
        arch = NVIDIA_ARCH.get(int(major))
        if major == 7:
            arch = "Volta" if minor < 5 else "Turing"
        if major == 8 and minor >= 9:
            arch = "Ada Lovelace"
        return "Nvidia GPU (%s)" % arch if arch else "Nvidia GPU"
    if vendor == "AMD":
        name = s.first_string("gpu_device_name") or ""
        if re.fullmatch(r"gfx[0-9a-fA-F]{3,}", name):
            return "AMD GPU - " + name
        gfx = {(9, 4): "gfx942", (9, 5): "gfx950"}.get((major, minor))
        if gfx:
            return "AMD GPU - " + gfx
        if int(major) in (9, 10, 11):
            return "AMD GPU - gfx-%dXX series" % int(major)
        return "AMD GPU"
    return ""


def run_environment(xs, stat_value, stat_name):
    """SetRunEnvironment() (xplane_to_op_stats.cc): (device_type, device_core_count)."""
    gpus = [p for p in xs.planes if p.name.startswith("/device:GPU:")]
    if gpus:
        s = Stats(gpus[0], gpus[0].stats, stat_value, stat_name)
        return gpu_model_name(s) or "GPU", len(gpus)
    tpus = [p for p in xs.planes if re.fullmatch(r"/device:TPU:[0-9]+", p.name)]
    if tpus:
        return first_string(tpus[0], tpus[0].stats, "device_type_string", stat_value,
                            stat_name), len(tpus)
    return "CPU", 0


def plane_facts(p, stat_value, stat_name):
    """Peak FLOP/s and HBM bytes/s from the plane's stats (0: unknown)."""
    s = Stats(p, p.stats, stat_value, stat_name)
    tf, hbm, mem = (s.number("peak_teraflops_per_second"),
                    s.number("peak_hbm_bw_gigabytes_per_second"), s.number("memory_bandwidth"))
    flops = tf * 1e12 if tf is not None and tf > 0 else 0.0
    # GetPerfEnvFromXPlane(): a GPU plane's own positive stat wins, else the tables
    if p.name.startswith("/device:GPU:") and flops <= 0:
        flops = gpu_peak_flops(s)
    if hbm is not None and hbm > 0:
        bw = hbm * 1e9
    elif mem is not None and mem > 0:
        bw = mem
    else:
        bw = 0.0
    if not math.isfinite(flops):
        flops = 0.0
    if not math.isfinite(bw):
        bw = 0.0
    return {"peak_flops": flops, "peak_bw": bw, "stats": s}


DERIVED = ("Steps", "_counters_", "Framework Name Scope", "XLA Modules", "Launch Stats",
           "Source code")


def op_lines(p):
    """The lines feeding ops.json (docs/decode.md), with their kind."""
    if p.name.startswith("/device:"):
        return [(l, "stream" if l.name.startswith("Stream #") else "xla") for l in p.lines
                if l.name == "XLA Ops" or l.name.startswith("Stream #")]
    if p.name != "/host:CPU":
        return []
    fw = [l for l in p.lines if l.name in ("Framework Ops", "TensorFlow Ops")]
    if fw:
        return [(l, "host") for l in fw]
    return [(l, "host") for l in p.lines if l.name not in DERIVED]


def programs(p, names):
    """program_id -> the "XLA Modules" event named "<module>(<id>)" (first name wins)."""
    out = {}
    if not p.name.startswith("/device:"):
        return out
    for l in p.lines:
        if l.name != "XLA Modules":
            continue
        for e in l.events:
            name = names(p, e.metadata_id)[0]
            m = re.fullmatch(r"(.*)\(([0-9]+)\)", name, re.S)
            if m and int(m.group(2)) < U64 and len(out) < 1 << 16:
                out.setdefault(int(m.group(2)), name)
    return out


def new_op(name, cat, prog, pid=None):
    return {"name": name, "category": cat or "", "program": prog, "pid": pid,
            "count": 0, "occurrences": 0, "total": 0, "self": 0, "min": None, "max": None,
            "flops": None, "bytes": None, "model_flops": None, "provenance": None,
            "source": None, "hlo": None}


def account(o, events, occ, d, amounts):
    o["count"] += events
    o["occurrences"] += occ
    o["total"] += d
    o["min"] = d if o["min"] is None else min(o["min"], d)
    o["max"] = d if o["max"] is None else max(o["max"], d)
    for key, v in amounts.items():
        if v is not None:
            o[key] = v if o[key] is None else o[key] + v


def op_table(p, stat_value, stat_name, names, facts=None):
    """(events, total_ps, {key: op}) of plane @p: XProf's OpMetricsDb (op_table_full())."""
    return op_table_full(p, stat_value, stat_name, names, facts)[:3]


# memo(): results by (function, the identities of its arguments), each kept with the
# arguments so that their ids stay theirs; the last _MEMO_MAX only.
_MEMO = {}
_MEMO_MAX = 64


def memo(fn, *args):
    """@fn(*@args), computed once while the same objects are asked about again: the
    oracles ask for one profile's op tables and step model from several checks (ops.json,
    overview.json, steps.json, kernels.json). Callers only read what it returns."""
    key = (fn,) + tuple(id(a) for a in args)
    hit = _MEMO.get(key)
    if hit is not None and all(x is a for x, a in zip(hit[0], args)):
        return hit[1]
    out = fn(*args)
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = (args, out)
    return out


def op_table_full(p, stat_value, stat_name, names, facts=None):
    """op_table_once() of plane @p, made once per plane (memo())."""
    return memo(op_table_once, p, stat_value, stat_name, names, facts)


def op_table_once(p, stat_value, stat_name, names, facts=None):
    """(events, total_ps, {key: op}, (events, total_ps, {name: kernel})) of plane @p.

    TPU "XLA Ops" and host lines: keyed by name, self time by an ancestor stack
    (ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb()). GPU "Stream #" lines, as
    ConvertDeviceTraceXPlaneToOpMetricsDb(): an event with an hlo_op (its last "::"
    piece) and a program_id is an XLA op keyed (program_id, name), contiguous events of
    one name and one group_id making one run, entered into the op of its first event
    with each event an occurrence (xprof beea666b); else with a non-empty tf_op a
    framework op "<ParseTfOpFullname() name>/<event name>" (type as category,
    "unknown" when empty; no flops or bytes; provenance the tf_op); else left out of
    the table, listed by kernel name in the last element. Self time = time on GPU
    (children_time_ps 0). With HLO (@facts not empty) an XLA kernel counts only when
    GetHloInstruction() finds its instruction (else it is left out, and does not end
    the run); a found one's op takes its Category(), TfOpName() (provenance),
    source_info() and, per occurrence, EnterOp()'s amounts (xla_amounts()).
    """
    from oracle_trace import parse_tf_op
    progs = programs(p, names)
    ops, un = {}, {}
    events = total = un_events = un_total = 0

    def either(es, ms, kind, name):
        """The event's stat @name (Stats.string / Stats.integer), else its metadata's."""
        v = getattr(es, kind)(name)
        return getattr(ms, kind)(name) if v is None else v

    def program_of(es, ms):
        mod = either(es, ms, "string", "hlo_module")
        pid = either(es, ms, "integer", "program_id")
        if mod is not None and pid is not None:
            return "%s(%d)" % (mod, pid)
        if mod is not None:
            return mod
        return progs.get(pid) if pid is not None else None

    def category_of(es, ms):
        return either(es, ms, "string", "hlo_category")

    def amounts_of(es, ms):
        out = {}
        for key, stat in (("flops", "flops"), ("bytes", "bytes_accessed"),
                          ("model_flops", "model_flops")):
            v = es.number(stat)
            out[key] = ms.number(stat) if v is None else v
        return out

    for l, kind in op_lines(p):
        base = l.timestamp_ns * 1000
        stack = []  # [start, end, dur, children, key]
        run = None  # [key, name, group, events, dur, amounts]
        run_group = 0  # HLOTracker.group_id: 0 after each flush

        def finish(fr):
            ops[fr[4]]["self"] += max(0, fr[2] - fr[3])

        def flush():
            nonlocal run, run_group
            if run is not None:
                o = ops[run[0]]
                xla_account(o, run[3], run[4], run[5])
                o["self"] += max(0, run[4])
            run, run_group = None, 0

        for e in l.events:
            name, _, m = names(p, e.metadata_id)
            ms = Stats(p, m.stats if m is not None else [], stat_value, stat_name)
            es = Stats(p, e.stats if kind != "host" else [], stat_value, stat_name)
            d = e.duration_ps
            if kind == "stream":
                hlo = either(es, ms, "string", "hlo_op")
                pid = either(es, ms, "integer", "program_id")
                grp = es.integer("group_id")
                grp = None if grp is None else signed(grp)
                leaf = hlo.split("::")[-1] if hlo is not None else None
                f = oracle_hlo_facts.lookup(facts or {}, pid, leaf) if leaf else None
                if leaf and pid is not None and (f is not None or not facts):
                    key = (pid, leaf)
                    if run is None or run[1] != leaf or grp is None or grp != run_group:
                        # a new run: the op of its first kernel (HLOTracker, beea666b)
                        flush()
                        run = [key, leaf, 0, 0, 0, {}]
                        if key not in ops:
                            # HloInstructionWrapper::Category() when found
                            cat = f["category"] if f is not None else category_of(es, ms)
                            ops[key] = new_op(leaf, cat, program_of(es, ms), pid)
                            if f is not None:
                                ops[key].update(provenance=f["tf_op_name"] or None,
                                                source=f["source"] or None, hlo=f)
                    run[3] += 1
                    run[4] += d
                    for k, v in amounts_of(es, ms).items():
                        if v is not None:
                            run[5][k] = v  # one occurrence's: the last one seen
                    if grp is not None:
                        run_group = grp
                    events += 1
                    total += d
                    continue
                tf = either(es, ms, "string", "tf_op")
                if hlo is None and tf:
                    flush()
                    _, tname, ttype = parse_tf_op(tf)
                    key = (0, tname + "/" + name)
                    if key not in ops:
                        ops[key] = new_op(key[1], ttype or "unknown", program_of(es, ms), 0)
                        ops[key]["provenance"] = tf
                    account(ops[key], 1, 1, d, {})
                    ops[key]["self"] += max(0, d)
                    events += 1
                    total += d
                    continue
                if name not in un:
                    un[name] = new_op(name, category_of(es, ms), program_of(es, ms))
                account(un[name], 1, 1, d, amounts_of(es, ms))
                un[name]["self"] += max(0, d)
                un_events += 1
                un_total += d
                continue
            positioned = e.WhichOneof("data") != "num_occurrences"
            s = base + (e.offset_ps if positioned else 0)
            doff, ddur = es.integer("device_offset_ps"), es.integer("device_duration_ps")
            if kind == "xla" and positioned and doff is not None and ddur is not None:
                s, d = signed(doff), signed(ddur)  # GetDeviceEventTimespan()
            if name not in ops:
                ops[name] = new_op(name, category_of(es, ms), program_of(es, ms))
            account(ops[name], 1, max(0, e.num_occurrences) if not positioned else 1, d,
                    amounts_of(es, ms))
            events += 1
            total += d
            if not positioned:
                ops[name]["self"] += max(0, d)
                continue
            end = s + d
            while stack and not (stack[-1][0] <= s and end <= stack[-1][1]):
                finish(stack.pop())
            if stack:
                stack[-1][3] += max(0, d)
            stack.append([s, end, d, 0, name])
        flush()
        while stack:
            finish(stack.pop())
    return events, total, ops, (un_events, un_total, un)


def xla_account(o, events, d, stats):
    """A run of XLA op @o (@events kernels, @d ps, @stats one occurrence's "flops" /
    "bytes_accessed" stats: the run's last) as DeviceOpMetricsDbBuilder::EnterOp() takes
    AggregateHloFunc()'s OpData (xprof beea666b): @events occurrences, each with the
    HLO's DeviceFlops() / bytes_accessed() when > 0, else the stat; model flops
    ModelFlops() when > 0, else the flops stat, and when that is 0 the op's flops so
    far. None only when neither the HLO nor a stat has a figure."""
    h = o["hlo"] or {}

    def pick(hkey, skey):
        hv, sv = h.get(hkey), stats.get(skey)
        if hv is not None and hv > 0:
            v = hv
        else:
            v = sv if sv is not None else (0.0 if hv is not None else None)
        return None if v is None else v * events
    mf = h.get("flops")
    if mf is None or not mf > 0:
        mf = stats.get("flops") or 0
    account(o, events, events, d, {"flops": pick("device_flops", "flops"),
                                   "bytes": pick("bytes", "bytes"),
                                   "model_flops": mf * events or None})
    if not mf:
        o["model_flops"] = o["flops"]


def trunc_div(a, b):
    """C's integer division (towards zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def rate(amount, ps):
    return amount / ps * 1e12 if amount is not None and ps > 0 else None


def op_fields(o, facts, plane_self):
    """Every field of one ops.json op (docs/stats.md)."""
    flops, nbytes = o["flops"], o["bytes"]
    f0, b0 = flops or 0.0, nbytes or 0.0
    pf, pb = facts["peak_flops"], facts["peak_bw"]
    if not (pf > 0 and pb > 0):
        bound = None
    elif b0 != 0:
        bound = "Compute" if f0 / b0 >= pf / pb else "Memory"
    else:
        bound = "Compute" if f0 != 0 else "Unknown"
    return {
        "name": o["name"], "category": o["category"], "program": o["program"],
        "provenance": o.get("provenance"), "source": o.get("source"), "count": o["count"],
        "occurrences": o["occurrences"], "total_ps": o["total"],
        "self_ps": o["self"], "min_ps": o["min"], "max_ps": o["max"],
        "mean_ps": trunc_div(o["total"], o["count"]),
        "avg_ps": o["total"] / o["occurrences"] if o["occurrences"] > 0 else None,
        "flops": flops, "model_flops": o["model_flops"], "bytes_accessed": nbytes,
        "flops_per_s": rate(flops, o["total"]),
        "model_flops_per_s": rate(o["model_flops"], o["total"]),
        "bytes_per_s": rate(nbytes, o["total"]),
        "intensity": f0 / b0 if flops is not None and b0 != 0 else None,
        "bound": bound,
        "share": o["self"] / plane_self if plane_self > 0 else None,
    }


def rollup(ops, key, plane_self):
    """by_category / by_program: UpdateNodeMetrics() over the ops of each group."""
    groups = {}
    for o in ops.values():
        g = groups.setdefault(o[key], {"name": o[key], "ops": 0, "occurrences": 0, "self_ps": 0,
                                       "total_ps": 0, "flops": None, "model_flops": None,
                                       "bytes_accessed": None})
        g["ops"] += 1
        g["occurrences"] += o["occurrences"]
        g["self_ps"] += o["self"]
        g["total_ps"] += o["total"]
        if o["total"] == o["self"]:  # no children time: its flops and bytes count
            for k, ok in (("flops", "flops"), ("model_flops", "model_flops"),
                          ("bytes_accessed", "bytes")):
                if o[ok] is not None:
                    g[k] = o[ok] if g[k] is None else g[k] + o[ok]
    for g in groups.values():
        g["flops_per_s"] = rate(g["flops"], g["self_ps"])
        g["bytes_per_s"] = rate(g["bytes_accessed"], g["self_ps"])
        g["share"] = g["self_ps"] / plane_self if plane_self > 0 else None
    return groups


def close(a, b):
    """Equal, or both floats within 1e-9 relative."""
    if a is None or b is None:
        return a is b
    if isinstance(a, Decimal):
        a = float(a)
    if isinstance(b, Decimal):
        b = float(b)
    if isinstance(a, float) or isinstance(b, float):
        return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    return a == b


def op_order(o):
    """ops.json's order: self time, time (both descending), name, program id (none first)."""
    return (-o["self"], -o["total"], o["name"].encode("utf-8", "replace"),
            o.get("pid") is not None, o.get("pid") or 0)


def check_op_rows(path, where, ops, jops, facts, pself, obj, fail):
    """ops.json rows @jops against the recomputed @ops; False when names differ."""
    order = sorted(ops.values(), key=op_order)
    jnames = [obj(o)["name"] for o in jops]
    if jnames != [o["name"] for o in order]:
        fail("%s: ops %s: order/names differ: %r vs %r" % (
            path, where, jnames[:5], [o["name"] for o in order][:5]))
        return False
    for o, jo in zip(order, jops):
        jo = obj(jo)
        for k, v in op_fields(o, facts, pself).items():
            if not close(jo.get(k, "<absent>"), v):
                fail("%s: ops %s/%s: %s %r vs %r" % (path, where, o["name"], k, jo.get(k), v))
    return True


def check_ops(path, xs, jops, obj, stat_value, stat_name, names, fail):
    """Every number of ops.json against the recomputed op tables."""
    got = {obj(jp)["name"]: obj(jp) for jp in obj(jops)["planes"]}
    for p in xs.planes:
        events, total, ops, (un_events, un_total, un) = op_table_full(
            p, stat_value, stat_name, names, hlo_of(xs, path))
        gpu = any(kind == "stream" for _, kind in op_lines(p))
        if events == 0 and un_events == 0:
            if p.name in got:
                fail("%s: ops has plane %s without op events" % (path, p.name))
            continue
        jp = got.get(p.name)
        if jp is None:
            fail("%s: ops lacks plane %s" % (path, p.name))
            continue
        facts = plane_facts(p, stat_value, stat_name)
        pself = sum(o["self"] for o in ops.values())
        pf, pb = facts["peak_flops"], facts["peak_bw"]
        want = {"events": events, "total_ps": total, "self_ps": pself,
                "peak_flops_per_s": pf if pf > 0 else None,
                "peak_hbm_bytes_per_s": pb if pb > 0 else None,
                "ridge_flops_per_byte": pf / pb if pf > 0 and pb > 0 else None}
        for k, v in want.items():
            if not close(jp[k], v):
                fail("%s: ops %s: %s %r vs %r" % (path, p.name, k, jp[k], v))
        jun = jp.get("unattributed")
        if not gpu:
            if jun is not None:
                fail("%s: ops %s: unattributed on a plane without streams" % (path, p.name))
        elif jun is None:
            fail("%s: ops %s: no unattributed section" % (path, p.name))
        else:
            jun = obj(jun)
            if (jun["events"], jun["total_ps"]) != (un_events, un_total):
                fail("%s: ops %s: unattributed events/total %r vs %r" % (
                    path, p.name, (jun["events"], jun["total_ps"]), (un_events, un_total)))
            check_op_rows(path, p.name + " unattributed", un, jun["ops"], facts, pself, obj,
                          fail)
        if not check_op_rows(path, p.name, ops, jp["ops"], facts, pself, obj, fail):
            continue
        for jkey, key in (("by_category", "category"), ("by_program", "program")):
            groups = rollup(ops, key, pself)
            jg = [obj(g) for g in jp[jkey]]
            order = sorted(groups.values(), key=lambda g: (-g["self_ps"], g["name"] is not None,
                                                           (g["name"] or "").encode()))
            if [g["name"] for g in jg] != [g["name"] for g in order]:
                fail("%s: ops %s: %s names %r vs %r" % (path, p.name, jkey,
                                                        [g["name"] for g in jg][:5],
                                                        [g["name"] for g in order][:5]))
                continue
            for g, w in zip(jg, order):
                for k, v in w.items():
                    if not close(g.get(k, "<absent>"), v):
                        fail("%s: ops %s %s %r: %s %r vs %r" % (path, p.name, jkey, w["name"],
                                                                 k, g.get(k), v))


# ---- steps.json: XProf's step-time breakdown -------------------------------

# event_span.h EventType, in priority order (index 0: UNKNOWN_TIME = idle)
BD_KEYS = ["idle_ps", "host_compute_ps", "host_to_host_ps", "host_to_device_ps",
           "device_collectives_ps", "host_wait_input_ps", "device_to_device_ps",
           "device_to_host_ps", "device_compute_ps"]
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
               "collective-permute", "collective-broadcast", "send", "recv")


def classify(dev, m, names_fn, p, stat_value, stat_name):
    """ClassifyGpuEvent() / ClassifyCpuEvent() (docs/stats.md), by event metadata."""
    if m is None:
        return BD_KEYS.index("device_compute_ps" if dev else "host_compute_ps")
    name = m.display_name or m.name
    low = name.lower()
    if dev:
        cat = Stats(p, m.stats, stat_value, stat_name).string("hlo_category")
        if low.startswith("memcpyhtod"):
            k = "host_to_device_ps"
        elif low.startswith("memcpydtoh"):
            k = "device_to_host_ps"
        elif low.startswith("memcpydtod"):
            k = "device_to_device_ps"
        elif low.startswith("nccl") or (cat is not None and cat.startswith(COLLECTIVES)):
            k = "device_collectives_ps"
        elif cat == "infeed":
            k = "host_to_device_ps"
        elif cat == "outfeed":
            k = "device_to_host_ps"
        else:
            k = "device_compute_ps"
    else:
        if low.startswith("memcpyhtod") or "InfeedEnqueue" in name:
            k = "host_to_device_ps"
        elif low.startswith("memcpyhtoh"):
            k = "host_to_host_ps"
        elif low.startswith("iteratorgetnext"):
            k = "host_wait_input_ps"
        else:
            k = "host_compute_ps"
    return BD_KEYS.index(k)


def non_overlapped(spans):
    """ToNonOverlappedEvents(): boundaries sorted (ends first at equal times, higher type
    first), each piece of time owned by the highest type open."""
    bounds = []
    for s, e, t in spans:
        bounds.append((s, 1, -t, t, True))
        bounds.append((e, 0, -t, t, False))
    bounds.sort(key=lambda b: b[:3])
    count = [0] * len(BD_KEYS)
    out = []
    for i in range(len(bounds) - 1):
        _, _, _, t, start = bounds[i]
        count[t] += 1 if start else -1
        top = max([k for k in range(1, len(BD_KEYS)) if count[k] > 0], default=0)
        if top and bounds[i + 1][0] > bounds[i][0]:
            out.append((bounds[i][0], bounds[i + 1][0], top))
    return out


def timed_events(l):
    """The events of line l that have a time (not num_occurrences): (event, start ps)."""
    base = l.timestamp_ns * 1000
    for e in l.events:
        if e.WhichOneof("data") != "num_occurrences":
            yield e, base + e.offset_ps


def breakdown_model(xs, stat_value, stat_name):
    """(steps [plane, start, duration, breakdown, step, device_ps], {"host": summary})
    as steps.json: oracle_steps.steps_model(), XProf's step database. Made once per
    profile (memo()): steps.json, its breakdown and overview.json all check it."""
    return memo(oracle_steps.steps_model, xs, stat_value, stat_name)


def check_breakdown(path, xs, jsteps, obj, stat_value, stat_name, fail):
    """steps[].breakdown and summary[] of steps.json, recomputed."""
    steps, summaries = breakdown_model(xs, stat_value, stat_name)
    got = [obj(s) for s in obj(jsteps)["steps"]]
    if len(got) != len(steps):
        fail("%s: %d steps, oracle %d" % (path, len(got), len(steps)))
        return
    for g, w in zip(got, steps):
        b = obj(g["breakdown"])
        want = dict(zip(BD_KEYS, w[3]))
        if b != want:
            fail("%s: step %r breakdown %r, oracle %r" % (path, g["step"], b, want))
            return
        if sum(b.values()) > g["duration_ps"] and g["duration_ps"] >= 0:
            fail("%s: step %r breakdown sums past the step" % (path, g["step"]))
    summ = [obj(s) for s in obj(jsteps)["summary"]]
    want = list(summaries.values())
    if len(summ) != len(want):
        fail("%s: %d step summaries, oracle %d" % (path, len(summ), len(want)))
        return
    for g, w in zip(summ, want):
        for k, v in w.items():
            gv = obj(g[k]) if k == "breakdown_avg" else g[k]
            if k == "breakdown_avg":
                if set(gv) != set(v) or not all(close(gv[x], v[x]) for x in v):
                    fail("%s: summary %s %r vs %r" % (path, k, gv, v))
            elif not close(gv, v):
                fail("%s: summary %s %r vs %r" % (path, k, gv, v))


def first_string(p, stats, name, stat_value, stat_name):
    for st in stats:
        if stat_name(p, st.metadata_id) == name:
            return str(stat_value(p, st))
    return None


# ---- overview.json -----------------------------------------------------------

def union(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def device_busy(p):
    """Union of the plane's device op lines: (busy, first, last) or None."""
    spans = []
    for l, kind in op_lines(p):
        if kind == "host":
            continue
        for e, s in timed_events(l):
            spans.append((s, max(s, s + e.duration_ps)))
    u = union(spans)
    if not u:
        return 0, None, None
    return sum(b - a for a, b in u), u[0][0], max(b for _, b in u)


def host_tf_ops(p, stat_value, stat_name):
    """The occurrences of XProf's host op metrics database of plane @p
    (ConvertHostThreadsXPlaneToOpMetricsDb()): on each line that is not
    derived, an event counts once when its name parses to a known TfOp
    category (CollectTfOpsFromHostThreadsXPlane()) and once more when it has a
    non-empty tf_op stat, its own or its metadata's (CollectTfActivities())."""
    n = 0
    for l in p.lines:
        if oracle_trace.is_derived(l.id):
            continue
        for e in l.events:
            m = p.event_metadata.get(e.metadata_id)
            name = m.name if m is not None else ""
            if oracle_trace.parse_tf_op(name)[0] != "unknown":
                n += 1
            tf = Stats(p, e.stats, stat_value, stat_name).string("tf_op")
            if tf is None and m is not None:
                tf = Stats(p, m.stats, stat_value, stat_name).string("tf_op")
            if tf:
                n += 1
    return n


def overview_model(xs, stat_value, stat_name, names, path=None):
    steps, summaries = breakdown_model(xs, stat_value, stat_name)
    pick = "host" if summaries else None
    dev = {"planes": 0, "busy": 0, "span": 0, "flops": None, "model_flops": None,
           "peak_flop_s": 0.0, "all_peaks": True, "facts": None, "p": None}
    host_occ = dev_occ = host_self = dev_self = 0
    for p in xs.planes:
        if p.name == "/host:CPU":
            host_occ += host_tf_ops(p, stat_value, stat_name)
    for p in xs.planes:
        events, _, ops, (un_events, _, _) = op_table_full(p, stat_value, stat_name, names,
                                                          hlo_of(xs, path))
        if not events and not un_events:  # a GPU busy with left-out kernels only still counts
            continue
        isdev = p.name.startswith("/device:")
        for o in ops.values():
            if not isdev:
                continue
            dev_occ += o["occurrences"]
            if o["total"] == o["self"]:
                for k in ("flops", "model_flops"):
                    if o[k] is not None:
                        dev[k] = o[k] if dev[k] is None else dev[k] + o[k]
        pself = sum(o["self"] for o in ops.values())
        if not isdev:
            host_self += pself
            continue
        facts = plane_facts(p, stat_value, stat_name)
        busy, first, last = device_busy(p)
        if facts["peak_flops"] > 0:
            span = (last - first) if first is not None else 0
            dev["peak_flop_s"] += facts["peak_flops"] * float(span) * 1e-12  # wall time
        else:
            dev["all_peaks"] = False
        if dev["planes"] == 0:
            dev["facts"], dev["p"] = facts, p
        dev["planes"] += 1
        dev["busy"] += busy
        dev["span"] += (last - first) if first is not None else 0
        dev_self += pself
    f = dev["facts"]
    p0 = dev["p"]
    dtype, ncores = run_environment(xs, stat_value, stat_name)
    env = {"host": xs.hostnames[0] if xs.hostnames else None,
           "device_type": dtype,
           "device_vendor": (first_string(p0, p0.stats, "device_vendor", stat_value, stat_name)
                             if p0 is not None else None),
           "device_planes": dev["planes"],
           "device_core_count": ncores,
           "peak_flops_per_s": f["peak_flops"] if f and f["peak_flops"] > 0 else None,
           "peak_hbm_bytes_per_s": f["peak_bw"] if f and f["peak_bw"] > 0 else None}
    device = None
    if dev["planes"]:
        b, sp, fl, mf, pk = dev["busy"], dev["span"], dev["flops"], dev["model_flops"], \
            dev["peak_flop_s"]
        ok = dev["all_peaks"] and pk > 0
        bu = b
        duty, idle = oracle_steps.tpu_duty(xs, stat_value, stat_name), None
        if duty is not None:  # ConstructDutyCycleTracker(), IdleTimeRatio()
            b, sp = duty[0], duty[0] + duty[1]
            idle = 1.0 - (dev_self / duty[2] if duty[2] > 0 else 0.0)
        device = {"busy_ps": b, "span_ps": sp,
                  "duty_cycle": b / sp if sp > 0 else None,
                  "idle_share": idle,
                  "flops": fl, "model_flops": mf,
                  "flops_per_s": fl / bu * 1e12 if fl is not None and bu > 0 else None,
                  "hfu": fl / pk if fl is not None and ok else None,
                  "mfu": mf / pk if mf is not None and ok else None}
    allops = host_occ + dev_occ
    op_time = {"host_ops": host_occ, "device_ops": dev_occ,
               "host_op_share": host_occ / allops if allops > 0 else None,
               "device_op_share": dev_occ / allops if allops > 0 else None,
               "host_self_ps": host_self, "device_self_ps": dev_self}
    # ComputeAnalysisResult(): by framework op (oracle_opstats.py)
    import oracle_opstats
    top = oracle_opstats.top_ops(oracle_opstats.host_opstats(xs, path, stat_value, stat_name,
                                                             names))
    summ = summaries.get(pick) if pick is not None else None
    picked = [(s[2], dict(zip(BD_KEYS, s[3]))) for s in steps]
    return {"run_environment": env, "step_time": summ, "device": device, "op_time": op_time,
            "top_ops": top, "bottleneck": oracle_steps.bottleneck(picked),
            "diagnostics": oracle_steps.diagnostics(xs, summ is not None, dtype, ncores)}


def same(a, b, where, fail):
    """Deep comparison: times exact, floats within 1e-9 relative."""
    if isinstance(b, dict):
        if not isinstance(a, dict) or set(a) != set(b):
            fail("%s: keys %r vs %r" % (where, sorted(a) if isinstance(a, dict) else a,
                                        sorted(b)))
            return
        for k in b:
            same(a[k], b[k], "%s.%s" % (where, k), fail)
    elif isinstance(b, list):
        if not isinstance(a, list) or len(a) != len(b):
            fail("%s: %r vs %r" % (where, a, b))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s[%d]" % (where, i), fail)
    elif not close(a, b):
        fail("%s: %r vs %r" % (where, a, b))


def check_overview(path, xs, jov, stat_value, stat_name, names, fail):
    """overview.json (parsed with json.loads) against overview_model()."""
    same(jov, overview_model(xs, stat_value, stat_name, names, path), path + ": overview", fail)


# ---- kernels.json ------------------------------------------------------------

TC_PATTERNS = ("16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2", "direct_group",
               "first_layer_wgrad_kernel", "h1688", "h884", "hmma", "i16832", "i8816", "s884",
               "s1688", "xmma_gemm", "xmma_implicit_gemm", "xmma_sparse_conv",
               "xmma_sparse_gemm", "xmma_warp_specialized_implicit_gemm")
TC_ENDS = ("Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "Conv3D",
           "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropFilter",
           "DepthwiseConv2dNativeBackpropInput", "/MatMul", "FusedMatMul", "/CudnnRNN", "XlaDot",
           "XlaDotV2")
TC_HAS = ("BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop")


def atou32(s):
    t = s[1:] if s.startswith("+") else s
    if not t or not all("0" <= c <= "9" for c in t) or int(t) > 0xFFFFFFFF:
        return None
    return int(t)


def launch_params(details):
    """ParseKernelLaunchParams()."""
    k = {"grid": [1, 1, 1], "block": [1, 1, 1], "regs": 0, "sshm": 0, "dshm": 0}
    for tok in details.replace("\n", " ").split(" "):
        kv = tok.split(":")
        if len(kv) != 2:
            continue
        key, v = kv
        if key in ("regs", "static_shared", "dynamic_shared"):
            n = atou32(v)
            if n is not None:
                k[{"regs": "regs", "static_shared": "sshm", "dynamic_shared": "dshm"}[key]] = n
        elif key in ("grid", "block"):
            parts = v.split(",")
            if len(parts) == 3:
                d = [atou32(x) for x in parts]
                if None not in d:
                    k[key] = d
    return k


def kernels_model(xs, stat_value, stat_name, names, path=None):
    """kernels.json's content, or None without GPU planes. An XLA kernel whose HLO
    instruction is known names the instruction's TfOpName() (XProf's on_kernel_fn)."""
    hlo = hlo_of(xs, path)
    gpus = [p for p in xs.planes if p.name.startswith("/device:GPU:")]
    if not gpus:
        return None
    table = {}
    for p in gpus:
        for l, kind in op_lines(p):
            if kind != "stream":
                continue
            for e in l.events:
                es = Stats(p, e.stats, stat_value, stat_name)
                details = es.string("kernel_details")
                if details is None:
                    continue
                name, _, m = names(p, e.metadata_id)
                ms = Stats(p, m.stats if m is not None else [], stat_value, stat_name)
                op = es.string("hlo_op")
                if op is None:
                    op = ms.string("hlo_op")
                pid = es.integer("program_id")
                if pid is None:
                    pid = ms.integer("program_id")
                f = oracle_hlo_facts.lookup(hlo, pid, op)
                if f is not None:
                    op = f["tf_op_name"]
                if op is None:
                    tf = es.string("tf_op")
                    op = tf.split(":", 1)[0] if tf is not None else ""
                lp = launch_params(details)
                tc = any(x in name for x in TC_PATTERNS)
                el = op.endswith(TC_ENDS) or any(x in op for x in TC_HAS)
                key = (name, tuple(lp["grid"]), tuple(lp["block"]), lp["regs"], lp["sshm"],
                       lp["dshm"], tc, el, op)
                d = e.duration_ps
                k = table.get(key)
                if k is None:
                    k = table[key] = {"occurrences": 0, "total": 0, "min": d, "max": d}
                k["occurrences"] += 1
                k["total"] += d
                k["min"] = min(k["min"], d)
                k["max"] = max(k["max"], d)
    order = sorted(table.items(), key=lambda kv: (-kv[1]["total"], kv[0][0].encode(),
                                                  kv[0][1:8], kv[0][8].encode()))
    out = []
    for key, k in order[:1000]:
        out.append({"name": key[0], "op": key[8], "grid": list(key[1]), "block": list(key[2]),
                    "registers_per_thread": key[3], "static_shmem_bytes": key[4],
                    "dynamic_shmem_bytes": key[5], "tensor_core_used": key[6],
                    "op_tensor_core_eligible": key[7], "occurrences": k["occurrences"],
                    "total_ps": k["total"], "min_ps": k["min"], "max_ps": k["max"],
                    "avg_ps": k["total"] / k["occurrences"]})
    return {"kernels": out, "distinct": len(table), "truncated": len(table) > 1000}


def check_kernels(path, xs, run_view, stat_value, stat_name, names, fail):
    """kernels.json: run_view() gives (exit status, parsed JSON or None)."""
    want = kernels_model(xs, stat_value, stat_name, names, path)
    rc, got = run_view()
    if want is None:
        if rc == 0:
            fail("%s: kernels.json rendered for a host without GPU planes" % path)
        return
    if rc != 0:
        fail("%s: kernels.json failed (%d)" % (path, rc))
        return
    same(got, want, path + ": kernels", fail)
