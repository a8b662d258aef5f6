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


def _varints(b):
    """([(field, wire type, value) of the varint fields of message bytes @b], parsed whole)."""
    i, out = 0, []
    while i < len(b):
        t, sh = 0, 0
        while True:
            if i >= len(b) or sh > 63:
                return out, False
            c = b[i]
            i += 1
            t |= (c & 0x7F) << sh
            sh += 7
            if c < 0x80:
                break
        f, wt = t >> 3, t & 7
        if f == 0:
            return out, False
        if wt == 0:
            v, sh = 0, 0
            while True:
                if i >= len(b) or sh > 63:
                    return out, False
                c = b[i]
                i += 1
                v |= (c & 0x7F) << sh
                sh += 7
                if c < 0x80:
                    break
            out.append((f, wt, v & 0xFFFFFFFFFFFFFFFF))
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        elif wt == 2:
            n, sh = 0, 0
            while True:
                if i >= len(b) or sh > 63:
                    return out, False
                c = b[i]
                i += 1
                n |= (c & 0x7F) << sh
                sh += 7
                if c < 0x80:
                    break
            if n > len(b) - i:
                return out, False
            i += n
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


def _union(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def tpu_duty(xs, stat_value, stat_name):
    """(active, idle, op_span) over the host's TPU planes, or None without any."""
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
        a = sum(b - x for x, b in _union(spans))
        active += a
        if lo is not None:
            idle += hi - lo - a
    return active, idle, op_span
