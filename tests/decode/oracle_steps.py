"""oracle_steps.py - XProf's step database, verdict and TPU duty cycle, recomputed.

Written from XProf's functions (openxla/xprof, named in docs/stats.md), not
from stats/'s C code, for oracle_stats.py's overview model and steps.json:

- tpu_duty(): ConstructDutyCycleTracker() per "/device:TPU:" plane ("XLA
  Ops" events active unless IsOffDutyOp() by their metadata hlo_category,
  "XLA Modules" events only widening the span), DutyCycleTracker's union
  (touching spans merged), DutyCycleCombiner (planes of one core_details
  local_chip_id united, a plane without one a chip of its own); and the
  span IdleTimeRatio() divides by: per TensorCore plane, last - first of
  the XLA Ops and Steps events' GetDeviceEventTimespan().
"""
import re

OFF_DUTY = ("infeed", "outfeed", "host send", "host send-done", "host recv",
            "host recv-done", "megacore fusion")


def _varint(b, i):
    """(value, next index) of the varint at b[i], or None when truncated or overlong."""
    v, sh = 0, 0
    while i < len(b) and sh <= 63:
        v |= (b[i] & 0x7F) << sh
        sh += 7
        i += 1
        if b[i - 1] < 0x80:
            return v, i
    return None


def _varints(b):
    """([(field, wire type, value) of the varint fields of message bytes @b], parsed whole)."""
    i, out = 0, []
    while i < len(b):
        got = _varint(b, i)
        if got is None or got[0] >> 3 == 0:
            return out, False
        f, wt, i = got[0] >> 3, got[0] & 7, got[1]
        if wt in (0, 2):
            got = _varint(b, i)
            if got is None:
                return out, False
            i = got[1]
            if wt == 0:
                out.append((f, wt, got[0] & 0xFFFFFFFFFFFFFFFF))
            elif got[0] > len(b) - i:
                return out, False
            else:
                i += got[0]
        elif wt in (1, 5) and i + (8 if wt == 1 else 4) <= len(b):
            i += 8 if wt == 1 else 4
        else:
            return out, False
    return out, True


def chip_of(p, stat_name):
    """core_details' local_chip_id (field 4, a uint32), or None."""
    chip = None
    for st in p.stats:
        if stat_name(p, st.metadata_id) == "core_details" and \
                st.WhichOneof("value") == "bytes_value":
            fields, ok = _varints(st.bytes_value[:256])
            chip = None
            if ok:  # proto3: an absent local_chip_id is 0
                chip = 0
                for f, wt, v in fields:
                    if f == 4 and wt == 0:
                        chip = v & 0xFFFFFFFF
    return chip


def _start_end(l, e):
    s = l.timestamp_ns * 1000 + (e.offset_ps if e.WhichOneof("data") == "offset_ps" else 0)
    return s, max(s, s + e.duration_ps)


def tpu_duty(xs, stat_value, stat_name):
    """(active, idle, op_span) over the host's TPU planes, or None without any."""
    from oracle_stats import union  # oracle_stats imports this module
    chips, own, op_span, seen = {}, [], 0, False
    for p in xs.planes:
        if not p.name.startswith("/device:TPU:"):
            continue
        seen = True
        spans, lo, hi = [], None, None
        first = last = None
        tc = re.fullmatch(r"/device:TPU:[0-9]+", p.name) is not None
        for l in p.lines:
            if l.name not in ("XLA Ops", "XLA Modules", "Steps"):
                continue
            for e in l.events:
                s, t = _start_end(l, e)
                if l.name != "Steps":
                    lo = s if lo is None else min(lo, s)
                    hi = t if hi is None else max(hi, t)
                    if l.name == "XLA Ops":
                        m = p.event_metadata[e.metadata_id] \
                            if e.metadata_id in p.event_metadata else None
                        cat = None
                        for st in (m.stats if m is not None else []):
                            if stat_name(p, st.metadata_id) == "hlo_category":
                                v = stat_value(p, st)
                                cat = v if isinstance(v, str) else cat
                        if cat not in OFF_DUTY and t > s:
                            spans.append((s, t))
                if l.name == "XLA Modules" or not tc:
                    continue
                ds, dd = None, None
                for st in e.stats:
                    k = stat_name(p, st.metadata_id)
                    if k in ("device_offset_ps", "device_duration_ps") and \
                            st.WhichOneof("value") in ("uint64_value", "int64_value"):
                        v = getattr(st, st.WhichOneof("value"))
                        v = v - (1 << 64) if v >= 1 << 63 else v
                        if k == "device_offset_ps":
                            ds = v
                        else:
                            dd = v
                if ds is not None and dd is not None:
                    s, t = ds, ds + dd
                else:
                    s = l.timestamp_ns * 1000 + \
                        (e.offset_ps if e.WhichOneof("data") == "offset_ps" else 0)
                    t = s + e.duration_ps
                first = s if first is None else min(first, s)
                last = t if last is None else max(last, t)
        if first is not None:
            op_span += last - first
        chip = chip_of(p, stat_name)
        if chip is None:
            own.append((lo, hi, spans))
        else:
            c = chips.setdefault(chip, [None, None, []])
            if lo is not None:
                c[0] = lo if c[0] is None else min(c[0], lo)
                c[1] = hi if c[1] is None else max(c[1], hi)
            c[2].extend(spans)
    if not seen:
        return None
    active = idle = 0
    for lo, hi, spans in list(chips.values()) + own:
        a = sum(b - x for x, b in union(spans))
        active += a
        if lo is not None:
            idle += hi - lo - a
    return active, idle, op_span


# ---- overview.json's bottleneck and diagnostics ------------------------------

BD = ("idle_ps", "host_compute_ps", "host_to_host_ps", "host_to_device_ps",
      "device_collectives_ps", "host_wait_input_ps", "device_to_device_ps",
      "device_to_host_ps", "device_compute_ps")


def _cls(pct, high, moderate, what):
    if pct >= high:
        return "high", "%.1f%s" % (pct, what)
    if pct >= moderate:
        return "moderate", "%.1f%s" % (pct, what)
    return "no", ""


def bottleneck(steps):
    """ComputeBottleneckAnalysis() over @steps [(duration_ps, {breakdown key: ps})]:
    PicoToMilli() sums, InputAnalysis(), DeviceCollectivesAnalysis(),
    KernelLaunchAnalysis() (no kernel launch time, tf.data never in use),
    AllOtherAnalysis()."""
    t = inp = out = comp = coll = unk = 0.0
    for dur, bd in steps:
        t += dur / 1e9
        inp += bd["host_wait_input_ps"] / 1e9 + bd["host_to_device_ps"] / 1e9
        out += bd["device_to_host_ps"] / 1e9
        comp += bd["device_compute_ps"] / 1e9
        coll += bd["device_collectives_ps"] / 1e9
        unk += bd["idle_ps"] / 1e9
    none = {"device_collectives": "no", "device_collectives_statement": "",
            "kernel_launch": "no", "kernel_launch_statement": "",
            "all_other": "no", "all_other_statement": ""}
    if t == 0:
        r = {"kind": "unknown", "statement": "No step time measured. Therefore we cannot tell "
             "where the performance bottleneck is."}
        for k in ("input", "output", "idle", "compute", "device_collectives", "kernel_launch",
                  "all_other"):
            r[k + "_percent"] = None
        r.update(none)
        return r
    pin, pout, pcomp, pcoll = 100.0 * inp / t, 100.0 * out / t, 100.0 * comp / t, 100.0 * coll / t
    pother = 100.0 * unk / t
    reported = False
    if pin >= 20:
        kind, text = "host", ("Your program is HIGHLY input-bound because %.1f%% of the total "
                              "step time sampled is waiting for input. Therefore, you should "
                              "first focus on reducing the input time." % pin)
    elif pin >= 5:
        kind, text = "both", ("Your program is MODERATELY input-bound because %.1f%% of the "
                              "total step time sampled is waiting for input. Therefore, you "
                              "would need to reduce both the input time and other time." % pin)
    elif pother >= 3:
        reported = True
        kind, text = "both", ("Your program is POTENTIALLY input-bound because %.1f%% of the "
                              "total step time sampled is spent on 'All Others' time (which "
                              "could be due to I/O or Python execution or both)." % pother)
    else:
        kind, text = "device", ("Your program is NOT input-bound because only %.1f%% of the "
                                "total step time sampled is waiting for input. Therefore, you "
                                "should focus on reducing other time." % pin)
    r = {"kind": kind, "statement": text, "input_percent": pin, "output_percent": pout,
         "idle_percent": max(0.0, 100.0 - pin - pout - pcomp - pcoll),
         "compute_percent": pcomp, "device_collectives_percent": pcoll,
         "kernel_launch_percent": 0.0, "all_other_percent": pother}
    r.update(none)
    r["device_collectives"], r["device_collectives_statement"] = _cls(
        pcoll, 15, 3, " % of the total step time sampled is spent on 'Device Collective "
        "Communication'.")
    if not reported:
        r["all_other"], r["all_other_statement"] = _cls(
            pother, 15, 3, " % of the total step time sampled is spent on 'All Others' time. "
            "This could be due to Python execution overhead.")
    return r


NO_STEP_MARKER = ("No step marker observed and hence the step time is unknown. This may happen "
                  "if (1) training steps are not instrumented (e.g., if you are not using "
                  "Keras) or (2) the profiling duration is shorter than the step time. For (1), "
                  "you need to add step instrumentation; for (2), you may try to profile longer.")
NO_DEVICE_TRACE = ("No TensorCore device trace was collected. This might happen if your job "
                   "hadn't been run on the device when sampling was turned on. You could try "
                   "the sampling again later.")


def diagnostics(xs, has_steps, device_type, core_count):
    """PopulateOverviewDiagnostics(): the XSpace's errors and warnings, each once, sorted
    (by bytes), the run-environment error, the step diagnostic."""
    def uniq(v):
        return sorted(set(v), key=lambda s: s.encode("utf-8", "surrogateescape"))
    errors = uniq(xs.errors)
    if not errors and device_type != "CPU" and core_count <= 0:
        errors.append(NO_DEVICE_TRACE)
    warnings = uniq(xs.warnings)
    if not has_steps:
        warnings.append(NO_STEP_MARKER)
    return {"info": [], "warnings": warnings, "errors": errors}


# ---- steps.json: XProf's step database -----------------------------------------

STEP_INFO = -559038737  # kThreadIdStepInfo: 0xdeadbeef as an int
DERIVED_MAX = STEP_INFO + 290 + 99


def _int_stats(p, stats, stat_name):
    """{name: int} of the integer stats (uint64 as int64, the last one wins)."""
    out = {}
    for st in stats:
        kind = st.WhichOneof("value")
        if kind in ("int64_value", "uint64_value"):
            v = getattr(st, kind)
            out[stat_name(p, st.metadata_id)] = v - (1 << 64) if v >= 1 << 63 else v
    return out


def _has_step_name(p, e, stat_name):
    for st in e.stats:
        if stat_name(p, st.metadata_id) == "step_name":
            kind = st.WhichOneof("value")
            if kind == "ref_value" or (kind == "str_value" and st.str_value):
                return True
    return False


def _timed(l):
    base = l.timestamp_ns * 1000
    for e in l.events:
        if e.WhichOneof("data") != "num_occurrences":
            s = base + e.offset_ps
            yield e, s, max(s, s + e.duration_ps)


def _host_marker_or_real(name):
    """(IsExplicitHostStepMarker(), IsRealCpuCompute())."""
    marker = name.startswith(("train", "test", "TraceContext")) and "/" not in name
    real = not (name.startswith(("EagerExecute", "EagerLocalExecute", "EagerKernelExecute",
                                 "FunctionRun")) or marker)
    return marker, real


def _device_plane_events(p, tpu, stat_value, stat_name):
    """ConvertDeviceTraceXPlaneToStepEvents(): {group: [markers], [events]} of one plane."""
    import oracle_stats
    tc = re.fullmatch(r"/device:TPU:[0-9]+", p.name) is not None
    markers, events = {}, {}
    for l in p.lines:
        if l.id == STEP_INFO or (tc and l.name == "Steps"):
            for e, s, t in _timed(l):
                v = _int_stats(p, e.stats, stat_name)
                if "group_id" not in v:
                    continue
                if "device_offset_ps" in v and "device_duration_ps" in v:
                    s = v["device_offset_ps"]
                    t = max(s, s + v["device_duration_ps"])
                markers.setdefault(v["group_id"], []).append((s, t))
            continue
        if STEP_INFO <= l.id <= DERIVED_MAX or (tpu and not (tc and l.name == "XLA Ops")):
            continue
        for e, s, t in _timed(l):
            v = _int_stats(p, e.stats, stat_name)
            g = v.get("group_id")
            if g is None or (not tpu and (v.get("correlation_id", -1) < 0 or g < 0)):
                continue
            m = p.event_metadata[e.metadata_id] if e.metadata_id in p.event_metadata else None
            typ = oracle_stats.classify(True, m, None, p, stat_value, stat_name)
            events.setdefault(g, []).append((s, t, typ))
    # A GPU plane without a step line has no markers: XProf derives its Steps line
    # (DeriveStepEventsFromGroups()) only in the preprocessing of a space not grouped yet
    # (PreprocessSingleHostXSpace(): !IsXSpaceGrouped()), and a space whose events carry
    # group_id is grouped; IntersectCombineStepEvents() of no markers keeps no step.
    if not events:
        return {}
    return {g: (markers[g], events[g]) for g in events if g in markers}


def _host_events(p, stat_value, stat_name):
    """ConvertHostThreadsXPlaneToStepEvents() of a host without devices."""
    import oracle_stats
    out = {}
    for l in p.lines:
        for e, s, t in _timed(l):
            g = _int_stats(p, e.stats, stat_name).get("group_id")
            if g is None or g < 0:
                continue
            m = p.event_metadata[e.metadata_id] if e.metadata_id in p.event_metadata else None
            name = (m.display_name or m.name) if m is not None else ""
            marker, real = _host_marker_or_real(name)
            d = out.setdefault(g, ([], []))
            if marker or _has_step_name(p, e, stat_name):
                d[0].append((s, t))
            elif real:
                d[1].append((s, t, oracle_stats.classify(False, m, None, p, stat_value,
                                                         stat_name)))
    return out


def steps_model(xs, stat_value, stat_name):
    """(steps [plane, start, duration, breakdown list, step, device_ps] by step,
    {"host": summary} or {}) as steps.json: StepEventsToStepsDb()."""
    import math
    import oracle_stats
    planes = list(enumerate(xs.planes))
    tpu = [q for q, p in planes if p.name.startswith("/device:TPU:")]
    devs = tpu or [q for q, p in planes if p.name.startswith("/device:GPU:")]
    steps = {}  # group -> (markers [(plane, b, e)], events)
    if devs:
        seen = None
        for q in devs:
            res = _device_plane_events(xs.planes[q], bool(tpu), stat_value, stat_name)
            if not res:
                continue
            if tpu:  # IntersectCombineStepEvents()
                seen = set(res) if seen is None else seen & set(res)
            for g, (mk, ev) in res.items():
                d = steps.setdefault(g, ([], []))
                d[0].extend((q, b, e) for b, e in mk)
                d[1].extend(ev)
        if tpu:
            steps = {g: d for g, d in steps.items() if g in (seen or set())}
    else:
        host = next((q for q, p in planes if p.name == "/host:CPU"), None)
        if host is not None:
            for g, (mk, ev) in _host_events(xs.planes[host], stat_value,
                                            stat_name).items():
                steps[g] = ([(host, b, e) for b, e in mk], ev)
    want = "device_compute_ps" if devs else "host_compute_ps"
    out = []
    for g in sorted(steps):
        mk, ev = steps[g]
        best = None
        for m in mk:  # StepTime(): the longest marker, the first of equals
            if best is None or m[2] - m[1] > best[2] - best[1]:
                best = m
        if best is None or best[2] <= best[1]:
            continue
        pieces = oracle_stats.non_overlapped(ev)
        if BD_KEYS_INDEX[want] not in {t for _, _, t in pieces}:
            continue  # not well formed
        q, b, e = best
        bd = [0] * len(BD)
        for s, t, typ in pieces:
            bd[typ] += max(0, min(t, e) - max(s, b))
        bd[0] = max(0, (e - b) - sum(bd[1:]))
        out.append([q, b, e - b, bd, g, (e - b) - bd[0] if devs else 0])
    summ = {}
    if out:
        n = len(out)
        avg = 0.0
        for s in out:
            avg += float(s[2])
        avg /= n
        var = 0.0
        for s in out:
            var += (float(s[2]) - avg) * (float(s[2]) - avg)
        bdavg = {}
        for k, key in enumerate(BD):
            acc = 0.0
            for s in out:
                acc += float(s[3][k])
            bdavg[key] = acc / n
        summ["host"] = {"steps": n, "avg_ps": avg, "stddev_ps": math.sqrt(var / n),
                        "min_ps": min(s[2] for s in out), "max_ps": max(s[2] for s in out),
                        "breakdown_avg": bdavg}
    return out, summ


BD_KEYS_INDEX = {k: i for i, k in enumerate(BD)}
