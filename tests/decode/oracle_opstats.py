"""oracle_opstats.py - op_profile.json, framework_op_stats.json and overview.json's
top_ops recomputed from a python3-protobuf parse, on the op table of
oracle_stats.op_table() (so its rules decide the rows here too).

Written from XProf's C++, not from stats/'s C code:

- a host's OpStats: the device planes' OpMetricsDbs (ConvertDeviceTraceXPlaneToOpMetricsDb())
  each with its total time (first op start to last op end, SetTotalTimePs()) and
  its "IDLE" op (AddIdleOp(): total - op time), combined by (program, name)
  (OpMetricsDbCombiner), the host db, the PerfEnv of the first device plane;
  an op's provenance is TfOpName() of its HLO instruction (oracle_hlo_facts.py);
- op_profile.json: ConvertOpStatsToOpProfile() / OpProfileBuilder (AddOp(),
  UpdateNodeMetrics(), CombineOpMetrics(), SortAndPruneChildren(),
  FinalizeDeduplicatedNodes(), PopulateOpMetricsNode()), built with maps as
  XProf builds it;
- framework_op_stats.json: ConvertOpStatsToTfStats(), GenerateTfStatsTable(),
  CreateTfMetricsDbFromDeviceOpMetricsDb(), SortedOpMetricsDb(),
  SetRooflineMetrics() over compute and HBM;
- overview.json's top_ops: ComputeAnalysisResult().
"""
import oracle_stats
from oracle_trace import parse_tf_op

U64 = 1 << 64
LIMIT = 100  # op_profile_limit
TF_ROWS = 500  # kMaxNumOfOps


def safe_div(a, b):
    """tsl SafeDivide()."""
    return 0.0 if abs(b) < 1e-10 else a / b


def giga_to_gibi(x):
    return x * 1e9 / (1 << 30)


def program_id(o):
    if o.get("pid"):
        return o["pid"]
    prog = o["program"] or ""
    i = prog.rfind("(")
    if not prog.endswith(")") or i < 0:
        return None
    digits = prog[i + 1:-1]
    if not digits:
        return None
    v = 0
    for c in digits:
        if not "0" <= c <= "9" or v > (U64 - 1 - 9) // 10:
            return None
        v = v * 10 + ord(c) - 48
    return v


def row_of(o, facts):
    """One db row of op @o (an oracle_stats op), with its framework op."""
    fl = o["flops"] or 0.0
    mf = o["model_flops"]
    r = {"name": o["name"], "category": o["category"], "program": o["program"],
         "program_id": 0, "occ": o["occurrences"], "total": o["total"], "self": o["self"],
         "flops": fl, "bytes": o["bytes"] or 0.0,
         "model_flops": mf if mf is not None and mf != 0 else fl,
         "provenance": None, "tf": None, "idle": False}
    pid = program_id(o)
    if pid is not None:
        r["program_id"] = pid
    f = facts.get((pid, o["name"])) if pid is not None else None
    if f is not None:
        prov = f["tf_op_name"]
        if prov:
            r["provenance"] = prov
            _, name, typ = parse_tf_op(prov)
            r["tf"] = (name, typ)
    elif o.get("pid") == 0 and o["category"] and "/" in o["name"]:
        name = o["name"][:o["name"].rfind("/")]
        typ = "" if o["category"] == "unknown" else o["category"]
        r["tf"] = (name, typ)
        r["provenance"] = name + (":" + typ if typ else "")
    return r


def idle_row(ps):
    return {"name": "IDLE", "category": "IDLE", "program": None, "program_id": 0, "occ": 0,
            "total": ps, "self": ps, "flops": 0.0, "bytes": 0.0, "model_flops": 0.0,
            "provenance": None, "tf": None, "idle": True}


def prog_key(p):
    return (p is not None, (p or "").encode())


def combine_db(rows):
    """OpMetricsDbCombiner: one row per (program, name), first-seen metadata."""
    out = {}
    for r in rows:
        k = (r["program"], r["name"])
        if k not in out:
            out[k] = dict(r)
            continue
        b = out[k]
        for f in ("occ", "total", "self", "flops", "bytes", "model_flops"):
            b[f] += r[f]
        b["idle"] = b["idle"] or r["idle"]
        for f in ("category", "provenance"):
            if not b[f] and r[f]:
                b[f] = r[f]
        if b["tf"] is None and r["tf"] is not None and r["tf"][0]:
            b["tf"] = r["tf"]
        if not b["program_id"]:
            b["program_id"] = r["program_id"]
    return sorted(out.values(), key=lambda r: (prog_key(r["program"]), r["name"].encode()))


def new_db():
    return {"rows": [], "planes": 0, "total_time": 0, "total_op_time": 0}


def host_opstats(xs, path, stat_value, stat_name, names):
    facts = oracle_stats.hlo_of(xs, path)
    st = {"dev": new_db(), "host": new_db(), "peak_flops": 0.0, "peak_bw": 0.0, "gpu": False}
    for p in xs.planes:
        events, _, ops = oracle_stats.op_table(p, stat_value, stat_name, names, facts)
        if not events:
            continue
        dev = p.name.startswith("/device:")
        d = st["dev" if dev else "host"]
        d["rows"] += [row_of(o, facts) for o in ops.values()]
        d["planes"] += 1
        pself = sum(o["self"] for o in ops.values())
        d["total_op_time"] += pself
        if not dev:
            d["total_time"] += pself
            continue
        _, first, last = oracle_stats.device_busy(p)
        span = last - first if first is not None else 0
        d["total_time"] += max(span, pself)
        d["rows"].append(idle_row(max(span - pself, 0)))
        if d["planes"] == 1:
            f = oracle_stats.plane_facts(p, stat_value, stat_name)
            st["peak_flops"], st["peak_bw"] = f["peak_flops"], f["peak_bw"]
            st["gpu"] = any(k == "stream" for _, k in oracle_stats.op_lines(p))
    for side in ("dev", "host"):
        st[side]["rows"] = combine_db(st[side]["rows"])
    return st


def merge(a, b):
    """CombineAllOpStats() of two hosts' op stats (@a's first)."""
    out = {"peak_flops": b["peak_flops"] if b["peak_flops"] > 0 else a["peak_flops"],
           "peak_bw": a["peak_bw"] if a["peak_bw"] > 0 else b["peak_bw"],
           "gpu": a["gpu"] or b["gpu"]}
    for side in ("dev", "host"):
        x, y = a[side], b[side]
        out[side] = {"rows": combine_db(x["rows"] + y["rows"]),
                     "planes": x["planes"] + y["planes"],
                     "total_time": x["total_time"] + y["total_time"],
                     "total_op_time": x["total_op_time"] + y["total_op_time"]}
    return out


def device_type(st):
    return "GPU" if st["gpu"] else "TPU" if st["dev"]["planes"] else "CPU_ONLY"


def bound_by(flops, nbytes, ps, peak_flops, peak_bw):
    """SetRooflineMetrics() over compute and HBM: (bound, flop util, hbm util, hbm GiB/s)."""
    ns = ps / 1000.0
    futil = safe_div(safe_div(flops, ns), peak_flops / 1e9)
    gib = giga_to_gibi(safe_div(nbytes, ns))
    butil = safe_div(gib, giga_to_gibi(peak_bw / 1e9))
    bound = "Unknown"
    if futil > 0:
        bound = "Compute"
    if butil > futil:
        bound = "HBM"
    return bound, futil, butil, gib


# ---- op_profile.json -----------------------------------------------------------

def node(name, row=None):
    return {"name": name, "row": row, "dup": False, "kids": [],
            "m": {"time": 0, "self": 0, "occ": 0, "flops": 0.0, "mflops": 0.0, "bytes": 0.0}}


def update(m, r):
    m["time"] += r["self"]
    m["self"] += r["self"]
    if r["total"] == r["self"]:
        m["flops"] += r["flops"]
        m["mflops"] += r["model_flops"]
        m["bytes"] += r["bytes"]


def combine(m, r):
    m["occ"] += r["occ"]
    m["time"] += r["total"]
    m["self"] += r["self"]
    m["flops"] += r["flops"]
    m["mflops"] += r["model_flops"]
    m["bytes"] += r["bytes"]


def build(db, by_program, excl):
    root = node("by_program" if by_program else "by_category")
    progs, cats, dups = {}, {}, {}
    for r in db["rows"]:
        if r["name"].startswith("region") or (excl and r["idle"]):
            continue
        update(root["m"], r)
        prog = None
        if not r["idle"] and by_program:
            pname = r["program"] if r["program"] is not None else "main"
            if pname not in progs:
                progs[pname] = node(pname)
                root["kids"].append(progs[pname])
            prog = progs[pname]
            update(prog["m"], r)
        if (r["total"] - r["self"]) % U64 > 0:  # ChildrenTimePs(), uint64
            continue
        groups = []
        if r["idle"]:
            leaf = node(r["name"], r)
            root["kids"].append(leaf)
            groups.append(leaf)
        else:
            ck = (id(prog), r["category"])
            if ck not in cats:
                cats[ck] = node(r["category"])
                (prog or root)["kids"].append(cats[ck])
            cat = cats[ck]
            dk = (id(cat), r["name"])
            if dk not in dups:
                dups[dk] = node(r["name"])
                cat["kids"].append(dups[dk])
            leaf = node(r["name"], r)
            dups[dk]["kids"].append(leaf)
            groups += [cat, dups[dk], leaf]
        for g in groups:
            combine(g["m"], r)
    root["m"]["time"] = db["total_op_time"] if excl else db["total_time"]

    def sort_prune(n, level):
        for k in n["kids"]:
            sort_prune(k, level - 1)
        n["kids"].sort(key=lambda k: (-k["m"]["time"], k["name"].encode(),
                                      prog_key(k["row"]["program"] if k["row"] else None)))
        if level <= 0:
            del n["kids"][LIMIT:]

    def finalize(n):
        group = bool(n["kids"]) and n["row"] is None and all(k["row"] for k in n["kids"])
        if not group:
            for k in n["kids"]:
                finalize(k)
            return
        if len(n["kids"]) == 1:
            n.update(n["kids"][0])
            return
        n["row"], n["dup"] = n["kids"][0]["row"], True
        n["name"] = n["kids"][0]["name"] + " and its duplicate(s)"

    sort_prune(root, 2 if by_program else 1)
    finalize(root)
    return root


def metrics(m, peak_flops, peak_bw, total):
    bound, futil, butil, gib = bound_by(m["flops"], m["bytes"], m["time"], peak_flops, peak_bw)
    ns = m["time"] / 1000.0
    return {"raw_time_ps": m["time"], "self_time_ps": m["self"], "occurrences": m["occ"],
            "avg_time_ps": safe_div(m["time"], m["occ"]), "raw_flops": m["mflops"],
            "bf16_flops": m["flops"], "flops": min(futil, 1.0) * safe_div(m["time"], total),
            "flops_per_s": safe_div(m["flops"], m["time"]) * 1e12,
            "model_flops_per_s": safe_div(m["mflops"], m["time"]) * 1e12,
            "bytes_accessed": m["bytes"],
            "memory_bw_bytes_per_s": safe_div(m["bytes"], m["time"]) * 1e12,
            "bandwidth_utils": [min(butil, 1.0), 0, 0],
            "raw_bytes_accessed_array": [gib * (1 << 30) / 1e9 * ns, 0, 0],
            "bound_by": bound}


def to_json(n, st, total):
    r = n["row"]
    xla = None
    if r is not None:
        fusion = r["category"].endswith(" fusion")
        xla = {"program_id": r["program_id"], "program": r["program"], "category": r["category"],
               "provenance": None if n["dup"] and fusion else r["provenance"]}
    return {"name": n["name"], "num_children": len(n["kids"]), "xla": xla,
            "metrics": metrics(n["m"], st["peak_flops"], st["peak_bw"], total),
            "children": [to_json(k, st, total) for k in n["kids"]]}


def op_profile(st):
    d = st["dev"]
    out = {"device_type": device_type(st), "device_planes": d["planes"],
           "total_time_ps": d["total_time"], "total_op_time_ps": d["total_op_time"],
           "peak_flops_per_s": st["peak_flops"] if st["peak_flops"] > 0 else None,
           "peak_hbm_bytes_per_s": st["peak_bw"] if st["peak_bw"] > 0 else None,
           "children_limit": LIMIT}
    for key, byp, excl in (("by_program", True, False), ("by_program_exclude_idle", True, True),
                           ("by_category", False, False),
                           ("by_category_exclude_idle", False, True)):
        if not d["rows"]:
            out[key] = None
            continue
        root = build(d, byp, excl)
        out[key] = to_json(root, st, d["total_op_time"] if excl else d["total_time"])
    return out


# ---- framework_op_stats.json -----------------------------------------------------

def tf_db(db, with_idle):
    """CreateTfMetricsDbFromDeviceOpMetricsDb()."""
    out = {}
    for r in db["rows"]:
        if r["idle"]:
            if not with_idle:
                continue
            name, typ = "IDLE", "IDLE"
        elif not r["provenance"] or r["tf"] is None:
            name, typ = r["name"], ""
        else:
            name, typ = r["tf"]
        if name not in out:
            out[name] = {"name": name, "category": typ or "Unknown", "program": None,
                         "occ": 0, "total": 0, "self": 0, "flops": 0.0, "bytes": 0.0,
                         "model_flops": 0.0, "idle": r["idle"]}
        t = out[name]
        t["occ"] = max(t["occ"], r["occ"])
        for f in ("total", "self", "flops", "bytes"):
            t[f] += r[f]
    return {"rows": list(out.values()), "total_op_time": db["total_op_time"],
            "total_time": db["total_time"] if with_idle else db["total_op_time"]}


def sorted_db(rows):
    """SortedOpMetricsDb(): self time (desc), then name."""
    return sorted(rows, key=lambda r: (-r["self"], r["name"].encode(), prog_key(r["program"])))


def tf_table(st, excl):
    dev = tf_db(st["dev"], True)
    rows, rank = [], 0
    for side, d in (("Device", dev), ("Host", st["host"])):
        total = d["total_op_time"] if excl else d["total_time"]
        cum = 0.0
        for r in sorted_db(d["rows"])[:TF_ROWS]:
            if excl and r["idle"]:
                continue
            rank += 1
            frac = safe_div(r["self"], total)
            cum += frac
            bound, _, _, _ = bound_by(r["flops"], r["bytes"], r["total"], st["peak_flops"],
                                      st["peak_bw"])
            isdev = side == "Device"
            rows.append({
                "rank": rank, "host_or_device": side, "type": r["category"],
                "operation": r["name"], "occurrences": r["occ"], "total_time_ps": r["total"],
                "avg_time_ps": safe_div(r["total"], r["occ"]),
                "total_self_time_ps": r["self"], "avg_self_time_ps": safe_div(r["self"], r["occ"]),
                "device_total_self_time_fraction": frac if isdev else 0,
                "device_cumulative_total_self_time_fraction": cum if isdev else 0,
                "host_total_self_time_fraction": 0 if isdev else frac,
                "host_cumulative_total_self_time_fraction": 0 if isdev else cum,
                "flops": r["flops"], "bytes_accessed": r["bytes"],
                "measured_flop_rate": safe_div(r["flops"], r["total"]) * 1e12,
                "model_flop_rate": safe_div(r["model_flops"], r["total"]) * 1e12,
                "measured_memory_bw": safe_div(r["bytes"], r["total"]) * 1e12,
                "operational_intensity": safe_div(r["flops"], r["bytes"]),
                "bound_by": bound})
    h = st["host"]
    return {"device_total_time_ps": dev["total_op_time"] if excl else dev["total_time"],
            "host_total_time_ps": h["total_op_time"] if excl else h["total_time"],
            "rows": rows}


def tf_stats(st):
    return {"device_type": device_type(st),
            "peak_flops_per_s": st["peak_flops"] if st["peak_flops"] > 0 else None,
            "peak_hbm_bytes_per_s": st["peak_bw"] if st["peak_bw"] > 0 else None,
            "with_idle": tf_table(st, False), "without_idle": tf_table(st, True)}


def top_ops(st, n=10):
    """ComputeAnalysisResult()'s top device ops, by framework op, without IDLE."""
    d = tf_db(st["dev"], False)
    out, cum = [], 0.0
    for r in sorted_db(d["rows"])[:n]:
        frac = safe_div(r["self"], d["total_time"])
        cum += frac
        out.append({"name": r["name"], "category": r["category"], "self_ps": r["self"],
                    "self_share": frac, "cumulative_share": cum,
                    "flops_per_s": safe_div(r["flops"], r["total"]) * 1e12})
    return out


def check_host(path, xs, views, stat_value, stat_name, names, fail):
    """@views: {"op_profile": parsed JSON, "framework_op_stats": ...} of @path."""
    st = host_opstats(xs, path, stat_value, stat_name, names)
    if "op_profile" in views:
        oracle_stats.same(views["op_profile"], op_profile(st), path + ": op_profile", fail)
    if "framework_op_stats" in views:
        oracle_stats.same(views["framework_op_stats"], tf_stats(st),
                          path + ": framework_op_stats", fail)
    return st

