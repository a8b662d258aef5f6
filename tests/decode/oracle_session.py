"""oracle_session.py - the session-wide views recomputed (docs/stats.md "Session ops", "Compare").

Written from XProf's rules, not from stats/view-session.c:

- session ops.json: every host's op tables (oracle_stats.op_table() per
  plane) folded into a device and a host table as CombineAllOpStats() folds
  each host's device_op_metrics_db / host_op_metrics_db with
  OpMetricsDbCombiner: ops keyed by (program, name)
  (LookupOrInsertNewOpMetrics(hlo_module_id, name)), CombineOpMetrics()'s
  sums and minimum (the source's when the destination has no occurrences),
  CopyOpMetricsMetadata()'s first non-empty category; the peak rates as
  CombinePerfEnv() (FLOP/s: the last host's positive one; bandwidth: the
  first), each host's from its first device plane with ops;
- compare/<base>/ops.json: both sessions' tables, ops matched by name (all
  programs of a name added up), sorted by the absolute change of self time;
- compare/<base>/steps.json: each host's step-time summary (overview.json's
  step_time: the host's steps), the session's as
  the step-weighted average over its hosts, hosts matched by name.

Every model returns the JSON object the view must equal (oracle_stats.same():
times exact, rates within 1e-9 relative).
"""
import oracle_stats
from oracle_stats import BD_KEYS, op_fields, op_table, plane_facts, rollup


def _table():
    return {"ops": {}, "planes": 0, "events": 0, "total": 0, "self": 0, "pf": 0.0, "pb": 0.0,
            "has_f": False}


def _combine(dst, src):
    """CombineOpMetrics() + CopyOpMetricsMetadata() of op dict @src into @dst."""
    if not dst["category"] and src["category"]:
        dst["category"] = src["category"]
    for k in ("provenance", "source"):
        if dst.get(k) is None:
            dst[k] = src.get(k)
    if dst["occurrences"] == 0 or src["min"] < dst["min"]:
        dst["min"] = src["min"]
    dst["max"] = src["max"] if dst["max"] is None else max(dst["max"], src["max"])
    for k in ("count", "occurrences", "total", "self"):
        dst[k] += src[k]
    for k in ("flops", "bytes", "model_flops"):
        if src[k] is not None:
            dst[k] = src[k] if dst[k] is None else dst[k] + src[k]


def _fold(table, ops):
    for o in ops:
        key = (o["program"], o["name"])
        d = table["ops"].get(key)
        if d is None:
            d = table["ops"][key] = {"name": o["name"], "category": "", "program": o["program"],
                                     "count": 0, "occurrences": 0, "total": 0, "self": 0,
                                     "min": None, "max": None, "flops": None, "bytes": None,
                                     "model_flops": None}
        _combine(d, o)


def host_tables(xs, sv, sn, names):
    """One host's (device, host) tables, keyed by (program, name)."""
    tabs = {"device": _table(), "host": _table()}
    for p in xs.planes:
        events, total, ops = op_table(p, sv, sn, names, oracle_stats.hlo_of(xs))
        if not events:
            continue
        dev = p.name.startswith("/device:")
        t = tabs["device" if dev else "host"]
        _fold(t, ops.values())
        t["planes"] += 1
        t["events"] += events
        t["total"] += total
        t["self"] += sum(o["self"] for o in ops.values())
        if dev and not t["has_f"]:
            f = plane_facts(p, sv, sn)
            t["pf"], t["pb"], t["has_f"] = f["peak_flops"], f["peak_bw"], True
    return tabs


def session_tables(xss, sv, sn, names):
    """@xss: [(host, XSpace)]: the session's (device, host) tables."""
    tabs = {"device": _table(), "host": _table()}
    for _, xs in xss:
        h = host_tables(xs, sv, sn, names)
        for k in tabs:
            s, d = h[k], tabs[k]
            _fold(d, s["ops"].values())
            for f in ("planes", "events", "total", "self"):
                d[f] += s[f]
            if s["has_f"] and s["pf"] > 0:
                d["pf"] = s["pf"]
            if s["has_f"] and s["pb"] > 0 and not d["pb"] > 0:
                d["pb"] = s["pb"]
            d["has_f"] = d["has_f"] or s["has_f"]
    return tabs


def _table_json(t):
    if not t["planes"]:
        return None
    pf, pb, self_ = t["pf"], t["pb"], t["self"]
    facts = {"peak_flops": pf, "peak_bw": pb}
    order = sorted(t["ops"].values(), key=lambda o: (
        -o["self"], -o["total"], o["name"].encode("utf-8", "replace"),
        o["program"] is not None, (o["program"] or "").encode("utf-8", "replace")))
    out = {"planes": t["planes"], "events": t["events"], "total_ps": t["total"], "self_ps": self_,
           "peak_flops_per_s": pf if pf > 0 else None,
           "peak_hbm_bytes_per_s": pb if pb > 0 else None,
           "ridge_flops_per_byte": pf / pb if pf > 0 and pb > 0 else None,
           "ops": [op_fields(o, facts, self_) for o in order]}
    for jkey, key in (("by_category", "category"), ("by_program", "program")):
        groups = rollup(t["ops"], key, self_)
        out[jkey] = sorted(groups.values(), key=lambda g: (
            -g["self_ps"], g["name"] is not None, (g["name"] or "").encode("utf-8", "replace")))
    return out


def _hosts(xss):
    return [{"host": h, "error": None} for h, _ in xss]


def session_ops_model(session, xss, sv, sn, names):
    """runs/<run>/<session>/ops.json of the hosts @xss ([(host, XSpace)], in name order)."""
    tabs = session_tables(xss, sv, sn, names)
    return {"session": session, "hosts": _hosts(xss), "device": _table_json(tabs["device"]),
            "host": _table_json(tabs["host"])}


def _by_name(t):
    """{name: (category, occurrences, self)}: a name's ops (all programs) added up."""
    out = {}
    for o in sorted(t["ops"].values(), key=lambda o: (
            o["name"].encode("utf-8", "replace"), o["program"] is not None,
            (o["program"] or "").encode("utf-8", "replace"))):
        cat, occ, self_ = out.get(o["name"], ("", 0, 0))
        out[o["name"]] = (cat or o["category"], occ + o["occurrences"], self_ + o["self"])
    return out


def _diff(a, b):
    if not a["planes"] and not b["planes"]:
        return None
    na, nb = _by_name(a), _by_name(b)
    rows = []
    for name in set(na) | set(nb):
        ca, oa, sa = na.get(name, ("", 0, 0))
        cb, ob, sb = nb.get(name, ("", 0, 0))
        rows.append({
            "name": name, "category": cb if name in nb and cb else ca,
            "in": "both" if name in na and name in nb else "base" if name in na else "new",
            "occurrences_base": oa, "occurrences_new": ob, "delta_occurrences": ob - oa,
            "self_ps_base": sa, "self_ps_new": sb, "delta_self_ps": sb - sa,
            "share_base": sa / a["self"] if a["self"] > 0 else None,
            "share_new": sb / b["self"] if b["self"] > 0 else None,
            "delta_share": (sb / b["self"] - sa / a["self"]
                            if a["self"] > 0 and b["self"] > 0 else None)})
    rows.sort(key=lambda r: (-abs(r["delta_self_ps"]), -abs(r["delta_occurrences"]),
                             r["name"].encode("utf-8", "replace")))
    return {"planes_base": a["planes"], "planes_new": b["planes"], "self_ps_base": a["self"],
            "self_ps_new": b["self"], "delta_self_ps": b["self"] - a["self"],
            "ops_base": len(na), "ops_new": len(nb), "ops": rows}


def compare_ops_model(base, new, sv, sn, names):
    """compare/<base>/ops.json of session @new: @base/@new are (session, [(host, XSpace)])."""
    ta = session_tables(base[1], sv, sn, names)
    tb = session_tables(new[1], sv, sn, names)
    return {"base": {"session": base[0], "hosts": _hosts(base[1])},
            "new": {"session": new[0], "hosts": _hosts(new[1])},
            "device": _diff(ta["device"], tb["device"]), "host": _diff(ta["host"], tb["host"])}


def host_step_summary(xs, sv, sn):
    """overview.json's step_time: the summary of the host's steps (XProf's step database)."""
    _, summ = oracle_stats.breakdown_model(xs, sv, sn)
    return summ.get("host")


def straggler_model(avgs):
    """The straggler ratios of a session (docs/stats.md "Session summary"): {host: ratio},
    and the straggler object of summary.json. @avgs: {host: average step ps} of the hosts
    with steps. A ratio is a host's average over the median of the averages (the mean of
    the middle two for an even count); none with fewer than two hosts; no straggler
    unless the slowest host's ratio is above 1."""
    if len(avgs) < 2:
        return {}, None
    srt = sorted(avgs.values())
    k = len(srt)
    med = srt[k // 2] if k % 2 else (srt[k // 2 - 1] + srt[k // 2]) / 2
    if not med > 0:
        return {}, None
    ratios = {h: a / med for h, a in avgs.items()}
    worst = max(avgs, key=lambda h: avgs[h])
    if not ratios[worst] > 1:
        return ratios, None
    return ratios, {"host": worst, "step_avg_ps": avgs[worst], "median_step_avg_ps": med,
                    "ratio": ratios[worst]}


def _three(out, k, a, b):
    out[k + "_base"], out[k + "_new"] = a, b
    out["delta_" + k] = b - a if a is not None and b is not None else None


def compare_steps_model(base, new, sv, sn):
    """compare/<base>/steps.json of session @new (see compare_ops_model())."""
    sums = []
    per_host = []
    for _, xss in (base, new):
        hs = {h: host_step_summary(xs, sv, sn) for h, xs in xss}
        per_host.append(hs)
        have = [s for s in hs.values() if s]
        n = sum(s["steps"] for s in have)
        if not n:
            sums.append({"hosts": 0, "n": 0, "avg": None, "min": None, "max": None,
                         "bd": {k: None for k in BD_KEYS}})
            continue
        avg = sum(s["avg_ps"] * s["steps"] for s in have) / n
        bd = {k: sum(s["breakdown_avg"][k] * s["steps"] for s in have) / n for k in BD_KEYS}
        sums.append({"hosts": len(have), "n": n, "avg": avg, "min": min(s["min_ps"] for s in have),
                     "max": max(s["max_ps"] for s in have), "bd": bd})
    a, b = sums
    st = {"hosts_base": a["hosts"], "hosts_new": b["hosts"], "steps_base": a["n"],
          "steps_new": b["n"]}
    _three(st, "avg_ps", a["avg"], b["avg"])
    st["ratio"] = (b["avg"] / a["avg"]
                   if a["avg"] is not None and b["avg"] is not None and a["avg"] > 0 else None)
    _three(st, "min_ps", a["min"], b["min"])
    _three(st, "max_ps", a["max"], b["max"])
    st["breakdown_avg"] = {k: {"base": a["bd"][k], "new": b["bd"][k],
                               "delta": (b["bd"][k] - a["bd"][k]
                                         if a["n"] and b["n"] else None)} for k in BD_KEYS}
    hosts = []
    ha, hb = per_host
    ra = straggler_model({h: s["avg_ps"] for h, s in ha.items() if s})[0]
    rb = straggler_model({h: s["avg_ps"] for h, s in hb.items() if s})[0]
    for h in sorted(set(ha) | set(hb), key=lambda h: h.encode("utf-8", "replace")):
        sa, sb = ha.get(h), hb.get(h)
        row = {"host": h, "in": "both" if h in ha and h in hb else "base" if h in ha else "new",
               "steps_base": sa["steps"] if sa else 0, "steps_new": sb["steps"] if sb else 0}
        _three(row, "avg_ps", sa["avg_ps"] if sa else None, sb["avg_ps"] if sb else None)
        row["ratio"] = (sb["avg_ps"] / sa["avg_ps"]
                        if sa and sb and sa["avg_ps"] > 0 else None)
        row["straggler_ratio_base"] = ra.get(h) if h in ha else None
        row["straggler_ratio_new"] = rb.get(h) if h in hb else None
        hosts.append(row)
    return {"base": {"session": base[0], "hosts": _hosts(base[1])},
            "new": {"session": new[0], "hosts": _hosts(new[1])},
            "step_time": st, "hosts": hosts}
