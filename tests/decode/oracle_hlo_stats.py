"""oracle_hlo_stats.py - hlo_stats.json and roofline.json recomputed (docs/stats.md).

Written from XProf's rules, not from stats/'s C code:

- the device op database: the op table of every "/device:" plane
  (oracle_stats.op_table(), so what that table learns flows in) combined as
  OpMetricsDbCombiner keys and folds ops: by (hlo_module_id, name),
  CombineOpMetrics() sums, CopyOpMetricsMetadata()'s first category;
  SetRunEnvironment() / GetPerfEnvFromXPlane() for the device and its peaks;
  CombineAllOpStats() / CombinePerfEnv() across a session's hosts;
- hlo_stats.json: ConvertOpStatsToHloStats() with SortedOpMetricsDb(),
  SetExecutionTimes(), SetRankAndTimeFractions(), SetRooflineMetrics(),
  tsl IsRematerialization() / IsOutsideCompilationOp();
- roofline.json: ConvertOpStatsToRooflineModel()'s device and its "Total"
  records (GenerateRooflineModelProgramRecord(),
  ConvertOpMetricsToRooflineModelRecord(), kMaxNumRecords, infeed/outfeed
  left out).

Times exact, rates within 1e-9 relative (oracle_stats.close()).
"""
import os
import re

import oracle_hlo_facts
import oracle_stats
import oracle_trace

U64 = 1 << 64
MAX_RECORDS = 1000  # kMaxNumRecords


def program_id(o):
    """hlo_module_id: the op's own program id, else "(<id>)" ending its program name, else 0."""
    if o.get("pid") is not None:
        return o["pid"]
    m = re.search(r"\(([0-9]+)\)$", o["program"] or "")
    return int(m.group(1)) if m and int(m.group(1)) < U64 else 0


def sources(xs, sidecars=()):
    """{(program id, instruction): source_info()}: "<basename of source_file>:<line>" or ""."""
    seen, out = set(), {}
    protos = oracle_trace.metadata_protos(xs) + oracle_hlo_facts.sidecar_protos(sidecars)
    for pid, data in protos:
        h = oracle_trace.hlo_pb2().HloProto()
        try:
            h.ParseFromString(data)
        except Exception:
            continue
        if (pid % U64) in seen:
            continue
        seen.add(pid % U64)
        for ins in (i for c in h.hlo_module.computations for i in c.instructions):
            md = ins.metadata
            src = "%s:%d" % (os.path.basename(md.source_file), md.source_line) \
                if md.source_file else ""
            out.setdefault((pid % U64, ins.name), src)
    return out


def fold(db, key, o, tf, src):
    """CombineOpMetrics() of op @o (with its facts) into the row @key of @db."""
    rows = db["rows"]
    w = rows.get(key)
    if w is None:
        w = rows[key] = {"pid": key[0], "name": key[1], "category": "", "program": None,
                         "tf_op": "", "source": "", "occurrences": 0, "total": 0, "self": 0,
                         "flops": None, "bytes": None, "model_flops": None}
    for k, v in (("category", o["category"]), ("tf_op", tf), ("source", src)):
        if not w[k]:
            w[k] = v
    if w["program"] is None:
        w["program"] = o["program"]
    for k in ("occurrences", "total", "self"):
        w[k] += o[k]
    for k in ("flops", "bytes", "model_flops"):
        if o[k] is not None:
            w[k] = o[k] if w[k] is None else w[k] + o[k]


def host_db(xs, path, stat_value, stat_name, names):
    """The device op database of one host, with its run environment and peaks."""
    gpus = [p for p in xs.planes if p.name.startswith("/device:GPU:")]
    tcs = [p for p in xs.planes if re.fullmatch(r"/device:TPU:[0-9]+", p.name)]
    cores = gpus or tcs
    db = {"rows": {}, "planes": 0, "events": 0, "self": 0, "cores": len(cores),
          "hw": "GPU" if gpus else "TPU" if tcs else "CPU", "device_type": None,
          "peak_flops": 0.0, "peak_bw": 0.0, "has_f": bool(cores), "tpu": None}
    if cores:
        dt, _ = oracle_stats.run_environment(xs, stat_value, stat_name)
        db["device_type"] = dt
        f = oracle_stats.plane_facts(cores[0], stat_value, stat_name)
        db["peak_flops"], db["peak_bw"] = f["peak_flops"], f["peak_bw"]
    if tcs and not gpus:  # GetPerfEnvFromXPlane()'s TPU peaks per memory (GB/s) and flags
        s = f["stats"]
        peaks = [s.number("peak_%s_bw_gigabytes_per_second" % m)
                 for m in ("cmem_rd", "cmem_wr", "vmem_rd", "vmem_wr")]
        db["tpu"] = {"peaks": [v * 1e9 if v is not None and v > 0 else 0.0 for v in peaks],
                     "merged_vmem": (s.number("has_merged_vmem") or 0) != 0,
                     "megacore": (s.number("has_megacore") or 0) != 0}
    facts = oracle_stats.hlo_of(xs, path)
    srcs = sources(xs, oracle_stats.SIDECARS.get(path, ()))
    for p in xs.planes:
        if not p.name.startswith("/device:"):
            continue
        events, _, ops = oracle_stats.op_table(p, stat_value, stat_name, names, facts)
        for o in ops.values():
            pid = program_id(o)
            fact = facts.get((pid, o["name"]))
            fold(db, (pid, o["name"]), o, fact["tf_op_name"] if fact else "",
                 srcs.get((pid, o["name"]), "") if fact else "")
        if events:
            db["planes"] += 1
            db["events"] += events
            db["self"] += sum(o["self"] for o in ops.values())
    return db


def session_db(dbs):
    """CombineAllOpStats() of the hosts' databases @dbs (in host order)."""
    out = {"rows": {}, "planes": 0, "events": 0, "self": 0, "cores": 0, "hw": "CPU",
           "device_type": None, "peak_flops": 0.0, "peak_bw": 0.0, "has_f": False,
           "tpu": None}  # CombinePerfEnv() keeps no per-memory peaks
    for db in dbs:
        for key, w in db["rows"].items():
            fold(out, key, w, w["tf_op"], w["source"])
        for k in ("planes", "events", "self", "cores"):
            out[k] += db[k]
        if db["has_f"] and db["peak_flops"] > 0:  # CombinePerfEnv(): the last one
            out["peak_flops"] = db["peak_flops"]
        if db["has_f"] and db["peak_bw"] > 0 and not out["peak_bw"] > 0:  # the first one
            out["peak_bw"] = db["peak_bw"]
        out["has_f"] = out["has_f"] or db["has_f"]
        if db["hw"] != "CPU":  # CombineRunEnvironment(): the last accelerator host's
            out["hw"], out["device_type"] = db["hw"], db["device_type"]
    return out


def sorted_rows(db):
    """SortedOpMetricsDb(): self time descending, then name (then program id)."""
    return sorted(db["rows"].values(),
                  key=lambda w: (-w["self"], w["name"].encode("utf-8", "replace"), w["pid"]))


def roofline_numbers(w, db):
    """SetRooflineMetrics(): rates, utilizations against the peaks, bound_by."""
    t = w["total"]
    flops, nbytes = w["flops"] or 0.0, w["bytes"] or 0.0
    rate = flops / t * 1e12 if t else 0.0
    hbm = nbytes / t * 1e12 if t else 0.0
    fu = rate / db["peak_flops"] if db["peak_flops"] > 0 else 0.0
    hu = hbm / db["peak_bw"] if db["peak_bw"] > 0 else 0.0
    inten = flops / nbytes if nbytes else 0.0
    bound, bott = "Unknown", 0.0
    if fu > 0:
        bound, bott = "Compute", inten
    if hu > fu:  # HBM beats a smaller utilization; Shm/L1, CMEM, VMEM never win here
        bound, bott = "HBM", inten
    return {"rate": rate, "fu": fu, "hu": hu, "bound": bound, "bott": bott}


def per_s(amount, ps):
    return amount / ps * 1e12 if amount is not None and ps > 0 else None


def common(w, table_ps, cum, rn):
    """The fields hlo_stats and roofline rows share; @cum: [running fraction sum]."""
    occ = w["occurrences"]
    frac = w["self"] / table_ps if table_ps > 0 else 0.0
    cum[0] += frac
    nbytes = w["bytes"] or 0.0
    return {
        "occurrences": occ, "total_time_ps": w["total"],
        "avg_time_ps": w["total"] / occ if occ > 0 else None,
        "total_self_time_ps": w["self"],
        "avg_self_time_ps": w["self"] / occ if occ > 0 else None,
        "total_self_time_fraction": frac if table_ps > 0 else None,
        "cumulative_total_self_time_fraction": cum[0] if table_ps > 0 else None,
        "measured_flops_per_s": per_s(w["flops"], w["total"]),
        "model_flops_per_s": per_s(w["model_flops"], w["total"]),
        "measured_memory_bytes_per_s": per_s(w["bytes"], w["total"]),
        "hbm_bytes_per_s": per_s(w["bytes"], w["total"]),
        "operational_intensity": w["flops"] / nbytes
        if w["flops"] is not None and nbytes else None,
        "bound_by": rn["bound"],
        "flops": w["flops"], "model_flops": w["model_flops"], "bytes_accessed": w["bytes"],
    }


def env(db):
    return {"hardware_type": db["hw"], "device_type": db["device_type"],
            "device_core_count": db["cores"], "device_planes": db["planes"],
            "peak_flops_per_s": db["peak_flops"] if db["peak_flops"] > 0 else None,
            "peak_hbm_bytes_per_s": db["peak_bw"] if db["peak_bw"] > 0 else None}


def remat(expr, tf):
    """tsl IsRematerialization()."""
    return ".remat" in expr.split("=", 1)[0] or "/rematted_computation/" in tf


def outside(tf, expr):
    """tsl IsOutsideCompilationOp()."""
    return (tf.endswith(":XlaSendToHost") or tf.endswith(":XlaRecvFromHost") or
            ("send-done" in expr and "is_host_transfer=true" in expr))


def hlo_stats_model(db):
    """hlo_stats.json of database @db (without a session's head)."""
    rows, cum = [], [0.0]
    for w in sorted_rows(db):
        if w["occurrences"] == 0:
            continue
        expr = w["name"]  # no HLO text: the name, XProf's fallback
        row = {"rank": len(rows) + 1, "program_id": str(w["pid"]), "program": w["program"],
               "category": w["category"], "hlo_op_name": w["name"], "hlo_op_expression": expr,
               "tf_op_name": w["tf_op"]}
        row.update(common(w, db["self"], cum, roofline_numbers(w, db)))
        row.update({"rematerialization": remat(expr, w["tf_op"]),
                    "outside_compilation": outside(w["tf_op"], expr),
                    "source_info": w["source"]})
        rows.append(row)
    out = env(db)
    out["total_self_time_ps"] = db["self"]
    out["ops"] = rows
    return out


def feed(cat):
    return "infeed" in cat or "outfeed" in cat


def record(w, db, rank, name, cat, pid, src, table_ps, cum):
    rn = roofline_numbers(w, db)
    mem = rn["hu"]
    eff = max(mem, rn["fu"])
    r = {"step": "Total", "rank": rank, "category": cat, "operation": name,
         "program_id": str(pid)}
    r.update(common(w, table_ps, cum, rn))
    ok = w["flops"] is not None and w["bytes"] is not None and w["bytes"] != 0
    r.update({
        "hbm_operational_intensity": w["flops"] / w["bytes"] if ok else None,
        "bottleneck_operational_intensity": rn["bott"],
        "total_time_per_core_ps": w["total"] / db["cores"] if db["cores"] else None,
        "total_time_fraction": w["total"] / table_ps if table_ps > 0 else None,
        "optimal_flops_per_s": (rn["rate"] / eff if eff > 1e-10 else 0.0)
        if w["flops"] is not None and w["total"] > 0 else None,
        "roofline_efficiency": eff, "compute_efficiency": rn["fu"],
        "max_mem_bw_utilization": mem, "source_info": src})
    return r


def roofline_model(db):
    """roofline.json of database @db (without a session's head)."""
    gpu, tpu, pf = db["hw"] == "GPU", db["tpu"], db["peak_flops"]
    out = env(db)
    peaks = [0.0] * 4
    cmem = tpu is not None and (tpu["peaks"][0] > 0 or tpu["peaks"][1] > 0)
    if cmem:  # InitializeRooflineModelDatabaseFromOpStats(): CMEM, else merged VMEM
        peaks[:2] = tpu["peaks"][:2]
    elif tpu is not None and tpu["merged_vmem"]:
        peaks[2:] = tpu["peaks"][2:]
    known = gpu or tpu is not None
    out.update({
        "megacore": (tpu is not None and tpu["megacore"]) if known else None,
        "has_cmem": cmem if known else None,
        "has_merged_vmem": (gpu or tpu["merged_vmem"]) if known else None,
        "hbm_ridge_point": pf / db["peak_bw"] if pf > 0 and db["peak_bw"] > 0 else None,
        "memory_access_breakdown": False, "include_infeed_outfeed": False, "records": []})
    for k, bw in zip(("cmem_read", "cmem_write", "vmem_read", "vmem_write"), peaks):
        out["peak_%s_bytes_per_s" % k] = bw if bw > 0 else None
        out["%s_ridge_point" % k] = pf / bw if bw > 0 and pf > 0 else None
    if db["hw"] == "CPU":
        return out
    rows = db["rows"].values()
    table_ps = max(0, db["self"] - sum(w["total"] for w in rows if feed(w["category"])))
    prog = {"occurrences": 1, "total": table_ps, "self": 0, "flops": None, "bytes": None,
            "model_flops": None}
    for w in rows:
        if w["category"] in ("call", "conditional", "while", "megacore fusion") or \
                feed(w["category"]):
            continue
        for k in ("flops", "bytes", "model_flops"):
            if w[k] is not None:
                prog[k] = w[k] if prog[k] is None else prog[k] + w[k]
    cum = [0.0]
    recs = [record(prog, db, 0, "Program", "Program", 0, "", table_ps, cum)]
    for w in sorted_rows(db)[:MAX_RECORDS]:
        if w["occurrences"] == 0 or feed(w["category"]):
            continue
        recs.append(record(w, db, len(recs), w["name"], w["category"], w["pid"], w["source"],
                           table_ps, cum))
    out["records"] = recs
    return out


def compare(where, got, want, fail):
    """Every key of @want in @got (and no other key), rows one by one."""
    extra = (set(got) ^ set(want)) - {"session", "hosts"}  # a session's head: checked apart
    if extra:
        fail("%s: keys %s differ (oracle: %s)" % (where, sorted(extra), sorted(want)))
    for k, v in want.items():
        if k in ("ops", "records"):
            g = got.get(k) or []
            if len(g) != len(v):
                fail("%s: %d %s, oracle %d (first %r vs %r)" % (
                    where, len(g), k, len(v), [r.get("hlo_op_name", r.get("operation"))
                                               for r in g[:3]],
                    [r.get("hlo_op_name", r.get("operation")) for r in v[:3]]))
                continue
            for i, (a, b) in enumerate(zip(g, v)):
                compare("%s %s[%d]" % (where, k, i), a, b, fail)
        elif k not in ("session", "hosts") and not oracle_stats.close(got.get(k), v):
            fail("%s: %s %r vs %r" % (where, k, got.get(k), v))
