"""oracle_memory.py - XProf's memory profile recomputed from a python3-protobuf parse.

model(xs) gives what memory_profile.json must hold for XSpace @xs, written
from openxla/xprof xprof/convert/xplane_to_memory_profile.cc function by
function (docs/memory.md names them), not from stats/memory-profile.c: the
whole host plane is held in memory here, as XProf holds it, where the C
code streams it in three passes.

Where XProf leaves a choice to its containers, the rule docs/memory.md
states is taken: snapshots at the same time keep their visiting order (a
stable sort), equal active allocations keep the earliest snapshot, and the
memory ids are sorted as bytes. int64 sums wrap as two's complement.
"""
import math

import xcheck

U64 = 1 << 64
MAX_SNAPSHOTS = 1000  # ConvertXPlaneToMemoryProfile()'s default

# DataTypeStringInternal(): TensorflowDataType 0..30 (xprof/utils/tensorflow_utils.cc)
DTYPES = ("INVALID float double int32 uint8 int16 int8 string complex64 int64 bool qint8 "
          "quint8 qint32 bfloat16 qint16 quint16 uint16 complex128 half resource variant "
          "uint32 uint64 float8_e5m2 float8_e4m3fn float8_e4m3fnuz float8_e4m3b11fnuz "
          "float8_e5m2fnuz int4 uint4").split()


def w64(v):
    """@v wrapped to int64 (two's complement)."""
    v %= U64
    return v - U64 if v >= 1 << 63 else v


def data_type_string(v):
    """DataTypeString(static_cast<TensorflowDataType>(IntValue())): an int32."""
    d = w64(v) & 0xFFFFFFFF
    d = d - (1 << 32) if d >= 1 << 31 else d

    def name(x):
        return DTYPES[x] if 0 <= x < len(DTYPES) else "unknown dtype enum (%d)" % x
    if d > 100:  # IsRefType()
        return name(d - 100) + "_ref"
    return name(d)


def int_value(st):
    """XStatVisitor::IntValue(): the int64 field, 0 for any other kind."""
    return st.int64_value if st.WhichOneof("value") == "int64_value" else 0


def double_value(st):
    return st.double_value if st.WhichOneof("value") == "double_value" else 0.0


def str_or_ref(plane, st):
    kind = st.WhichOneof("value")
    if kind == "str_value":
        return st.str_value
    if kind == "ref_value":
        return plane.stat_metadata[st.ref_value].name if st.ref_value in plane.stat_metadata \
            else ""
    return ""


# The stats of an allocation event that set a field of the snapshot's
# MemoryAggregationStats, and of its MemoryActivityMetadata: {stat: field},
# each read as stat_value() says (GenerateMemoryProfile()).
AGG_FIELDS = {"bytes_reserved": "stack_reserved_bytes", "bytes_allocated": "heap_allocated_bytes",
              "bytes_available": "free_memory_bytes", "fragmentation": "fragmentation",
              "peak_bytes_in_use": "peak_bytes_in_use"}
META_FIELDS = {"requested_bytes": "requested_bytes", "allocation_bytes": "allocation_bytes",
               "addr": "address", "tf_op": "tf_op_name", "group_id": "step_id",
               "region_type": "region_type", "data_type": "data_type", "shape": "tensor_shape"}


def stat_value(plane, st, name):
    """Stat @st (named @name) as the AGG_FIELDS/META_FIELDS field it sets holds it."""
    if name in ("tf_op", "region_type", "shape"):
        return str_or_ref(plane, st)
    if name == "fragmentation":
        return double_value(st)
    v = int_value(st)
    return v % U64 if name == "addr" else data_type_string(v) if name == "data_type" else v


def zero_stats():
    """A MemoryAggregationStats with every field 0."""
    return {"stack_reserved_bytes": 0, "heap_allocated_bytes": 0, "free_memory_bytes": 0,
            "fragmentation": 0.0, "peak_bytes_in_use": 0}


def generate(plane):
    """GenerateMemoryProfile(): {memory_id: {"summary": ..., "snapshots": [...]}}."""
    types = {k: m.name for k, m in plane.event_metadata.items()}
    snames = {k: m.name for k, m in plane.stat_metadata.items()}
    per = {}
    for line in plane.lines:
        for e in line.events:
            t = types.get(e.metadata_id)
            if t not in ("MemoryAllocation", "MemoryDeallocation"):
                continue
            stats = zero_stats()
            meta = {"memory_activity": "ALLOCATION" if t == "MemoryAllocation" else
                    "DEALLOCATION", "requested_bytes": 0, "allocation_bytes": 0, "address": 0,
                    "tf_op_name": "", "step_id": -1, "region_type": "",
                    "data_type": data_type_string(0), "tensor_shape": ""}
            memory_id = ""
            for st in e.stats:
                n = snames.get(st.metadata_id)
                if n in ("index_on_host", "device_ordinal"):
                    memory_id = str(int_value(st))
                elif n == "allocator_name":
                    memory_id = str_or_ref(plane, st)
                elif n in AGG_FIELDS:
                    stats[AGG_FIELDS[n]] = stat_value(plane, st, n)
                elif n in META_FIELDS:
                    meta[META_FIELDS[n]] = stat_value(plane, st, n)
            a = per.setdefault(memory_id, {"summary": {
                "peak_bytes_usage_lifetime": 0, "peak_stats": zero_stats(),
                "peak_stats_time_ps": 0, "memory_capacity": 0}, "snapshots": []})
            off = e.offset_ps  # OffsetPs(): 0 for a num_occurrences event
            update_profile_summary(stats, off, a["summary"])
            a["snapshots"].append({"time_offset_ps": off, "aggregation_stats": stats,
                                   "activity_metadata": meta})
    return per


def update_profile_summary(stats, t, summary):
    summary["peak_bytes_usage_lifetime"] = stats["peak_bytes_in_use"]
    used = w64(stats["stack_reserved_bytes"] + stats["heap_allocated_bytes"])
    if used >= summary["peak_stats"]["peak_bytes_in_use"]:
        summary["peak_stats"] = dict(stats, peak_bytes_in_use=used)
        summary["peak_stats_time_ps"] = t
        summary["memory_capacity"] = w64(used + stats["free_memory_bytes"])


def used(s):
    a = s["aggregation_stats"]
    return w64(a["heap_allocated_bytes"] + a["stack_reserved_bytes"])


def update_step_id(snaps):
    last = -1
    for s in snaps:
        m = s["activity_metadata"]
        if m["step_id"] == -1:
            m["step_id"] = last + 1
        else:
            last = m["step_id"]


def update_deallocation(snaps):
    """UpdateDeallocation(); returns (unmatched deallocations, allocations left in the map)."""
    amap, unmatched = {}, 0
    for s in snaps:
        m = s["activity_metadata"]
        addr = m["address"]
        if m["memory_activity"] == "DEALLOCATION":
            if addr in amap:
                src = amap.pop(addr)
                for k in ("tf_op_name", "region_type", "data_type", "tensor_shape"):
                    m[k] = src[k]
            else:
                unmatched += 1
        elif addr not in amap:
            amap[addr] = m
    return unmatched, len(amap)


def sample_timeline(snaps, max_n=MAX_SNAPSHOTS):
    n = len(snaps)
    if n <= max_n:
        return list(snaps)
    out = []
    width = n // max_n
    count1 = max_n * (width + 1) - n
    count2 = max_n - count1

    def box(fw, count, start):
        for i in range(count):
            best = start + fw * i
            for j in range(start + fw * i + 1, start + fw * (i + 1)):
                if used(snaps[j]) > used(snaps[best]):
                    best = j
            out.append(snaps[best])
    box(width, count1, 0)
    box(width + 1, count2, width * count1)
    return out


def peak_memory_step(peak, snaps):
    step = 0
    for s in snaps:
        if used(s) == peak:
            step = s["activity_metadata"]["step_id"]
    return step


def special(nbytes, step, op, region):
    return {"memory_activity": "ALLOCATION", "requested_bytes": nbytes,
            "allocation_bytes": nbytes, "address": 0, "tf_op_name": op, "step_id": step,
            "region_type": region, "data_type": data_type_string(0), "tensor_shape": "unknown"}


def meta_key(m):
    return (w64(-m["allocation_bytes"]), w64(-m["requested_bytes"]), m["tf_op_name"].encode(),
            m["region_type"].encode(), m["data_type"].encode(), m["tensor_shape"].encode())


def process_active_allocations(step, a):
    """ProcessActiveAllocations() with InsertSpecialAllocations() and the merge."""
    summ = a["summary"]
    unmapped = summ["peak_stats"]["heap_allocated_bytes"]
    unmapped_dealloc = 0
    active = {}
    for i, s in enumerate(a["snapshots"]):
        m = s["activity_metadata"]
        if s["time_offset_ps"] > summ["peak_stats_time_ps"]:
            break
        if m["step_id"] != step:
            continue
        if m["memory_activity"] == "ALLOCATION":
            active[m["address"]] = (i, m)
            unmapped = w64(unmapped - m["allocation_bytes"])
        else:
            if m["address"] in active:
                del active[m["address"]]
            else:
                unmapped_dealloc = w64(unmapped_dealloc + m["allocation_bytes"])
            unmapped = w64(unmapped + m["allocation_bytes"])
    unmapped = w64(unmapped - unmapped_dealloc)
    rows = list(active.values())
    specials = []
    if unmapped > 0:
        specials.append(special(unmapped, step, "unused preallocated device memory",
                                "persist/dynamic"))
        rows.append((-len(specials), specials[-1]))
    stack = summ["peak_stats"]["stack_reserved_bytes"]
    if stack > 0:
        specials.append(special(stack, step, "stack", "stack"))
        rows.append((-len(specials), specials[-1]))
    rows.sort(key=lambda r: (meta_key(r[1]), r[0]))
    out = []
    i = 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and meta_key(rows[j + 1][1]) == meta_key(rows[i][1]):
            j += 1
        idx = rows[i][0]
        out.append({"snapshot_index": idx, "special_index": -idx - 1 if idx < 0 else -1,
                    "num_occurrences": j - i + 1})
        i = j + 1
    return out, specials


def save_active_snapshots(snaps, active):
    kept = []
    for r in active:
        if r["snapshot_index"] < 0:
            continue
        kept.append(snaps[r["snapshot_index"]])
        r["snapshot_index"] = len(kept) - 1
    return kept


def model(xs):
    """memory_profile.json of @xs, as a dict (floats as Python floats, NaN as None)."""
    host = next((p for p in xs.planes if p.name == "/host:CPU"), None)
    if host is None:
        return {"num_hosts": 0, "memory_ids": [], "version": 1,
                "memory_profile_per_allocator": {}, "hlo_modules": [], "errors": []}
    per = generate(host)
    out = {}
    for mid, a in per.items():
        snaps = a["snapshots"]
        snaps.sort(key=lambda s: s["time_offset_ps"])  # stable: visiting order on ties
        update_step_id(snaps)
        unmatched, unfreed = update_deallocation(snaps)
        sampled = sample_timeline(snaps)
        step = peak_memory_step(a["summary"]["peak_stats"]["peak_bytes_in_use"], snaps)
        active, specials = process_active_allocations(step, a)
        kept = save_active_snapshots(snaps, active)
        out[mid] = {"profile_summary": a["summary"], "memory_profile_snapshots": kept,
                    "active_allocations": active, "special_allocations": specials,
                    "sampled_timeline_snapshots": sampled, "num_snapshots": len(snaps),
                    "peak_step_id": step, "unmatched_deallocations": unmatched,
                    "unfreed_allocations": unfreed}
    mods = []
    for p in xs.planes:  # GenerateHloModules()
        if not p.name.startswith("/device:TPU:"):
            continue
        for line in p.lines:
            if line.name != "XLA Modules":
                continue
            for e in line.events:
                name = p.event_metadata[e.metadata_id].name \
                    if e.metadata_id in p.event_metadata else ""
                mods.append({"name": name, "start_time_ps": e.offset_ps,
                             "end_time_ps": w64(e.offset_ps + e.duration_ps), "id": len(mods),
                             "plane_name": p.name[len("/device:"):]})
    ids = sorted(per, key=lambda k: k.encode())
    return {"num_hosts": 1, "memory_ids": ids, "version": 1,
            "memory_profile_per_allocator": {k: out[k] for k in ids}, "hlo_modules": mods,
            "errors": []}


def clean(v):
    """@v with NaN / infinite floats as None (JSON null) and ints kept."""
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [clean(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def check(path, xs, got, fail):
    """memory_profile.json @got (parsed) against the model of @xs."""
    want = clean(model(xs))
    d = xcheck.diff_json(got, want, key_order=True)
    if d:
        fail("%s: memory_profile.json%s" % (path, d))
