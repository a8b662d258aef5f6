"""memory_profiles.py - small XSpaces with the cases of memory_profile.json (docs/memory.md).

build(pb2, dir) writes them and returns {name: path}:

- hand:    one allocator ("hand") with a peak worked out by hand (see
           HAND below), its stack reservation, a step (group_id), and a
           TPU plane with two "XLA Modules" events (hlo_modules);
- bad:     the bad input of docs/memory.md: a deallocation before any
           allocation, a free never allocated, an allocation never freed,
           two allocations at one address, negative and 2^64-1 byte counts
           (as int64 and as uint64, which XProf reads as 0), sums that wrap,
           NaN and integer fragmentation, data types 1, 101, 31, -5, 100,
           2^32 + 1, stats without metadata, memory ids from index_on_host,
           device_ordinal (uint64: "0") and allocator_name (a ref and a
           string), a num_occurrences event, equal times on two lines, an
           event whose display name only says MemoryAllocation, and a
           second "/host:CPU" plane (ignored: the first one counts);
- many:    2,503 events on one allocator over three lines, so the timeline
           is sampled (widths 2 and 3 of SampleMemoryProfileTimeline());
- nohost:  no "/host:CPU" plane at all (num_hosts 0).
"""

from stats_profiles import Plane, write

U64MAX = (1 << 64) - 1
INT64_MAX = (1 << 63) - 1

# "hand": heap after each event, at offsets 10..60 ps, stack 1000 throughout
#   alloc A 100 (heap 100) / alloc B 50 (150) / free A (50) / alloc C 200 (250)
#   / alloc D 30 (280, the peak, t=50) / free C (80)
# peak 280 + stack 1000 = 1280 at t=50; capacity 1280 + free 720 = 2000;
# active at the peak: C 200, B 50, D 30 and the stack row 1000; no
# unmapped heap (280 - 100 - 50 - 200 - 30 + 100 = 0).
HAND = {"peak": 1280, "time": 50, "capacity": 2000, "stack": 1000,
        "active_bytes": [1000, 200, 50, 30]}


def memory_event(pl, line, off, kind, stats, md_name=None):
    e = line.events.add()
    e.metadata_id = pl.md(md_name or kind)
    e.offset_ps = off
    for k, v in stats:
        pl.set_stat(e, k, v)
    return e


def hand(xs):
    pl = Plane(xs, 1, "/host:CPU")
    line = pl.line(1, "main", 1000)
    heap = 0
    seq = [("MemoryAllocation", 0x100, 100), ("MemoryAllocation", 0x200, 50),
           ("MemoryDeallocation", 0x100, 100), ("MemoryAllocation", 0x300, 200),
           ("MemoryAllocation", 0x400, 30), ("MemoryDeallocation", 0x300, 200)]
    for i, (kind, addr, n) in enumerate(seq):
        heap += n if kind == "MemoryAllocation" else -n
        memory_event(pl, line, 10 * (i + 1), kind, [
            ("allocator_name", "hand"), ("bytes_reserved", ("i", 1000)),
            ("bytes_allocated", ("i", heap)), ("bytes_available", ("i", 2000 - 1000 - heap)),
            ("fragmentation", 0.25), ("peak_bytes_in_use", ("i", 1280)),
            ("requested_bytes", ("i", n)), ("allocation_bytes", ("i", n)),
            ("addr", ("i", addr)), ("tf_op", "model/dense_%d/MatMul" % (addr >> 8)),
            ("group_id", ("i", 7)), ("region_type", "output"), ("data_type", ("i", 1)),
            ("shape", "[%d]" % (n // 4))])
    tpu = Plane(xs, 2, "/device:TPU:0")
    mods = tpu.line(1, "XLA Modules", 0)
    for off, dur, name in ((100, 50, "jit_step(1)"), (200, 70, "jit_step(1)")):
        e = mods.events.add()
        e.metadata_id = tpu.md(name)
        e.offset_ps = off
        e.duration_ps = dur


def bad(xs):
    pl = Plane(xs, 1, "/host:CPU")
    a = pl.line(1, "thread_a", 1000)
    b = pl.line(2, "thread_b", 5000)  # another base: XProf still compares offsets
    common = [("bytes_available", ("i", 1 << 30)), ("peak_bytes_in_use", ("i", 4096))]
    # "A" (allocator_name as a ref is what set_stat cannot make: a str here, a ref below)
    memory_event(pl, a, 5, "MemoryDeallocation", [  # a free before any allocation
        ("allocator_name", "A"), ("bytes_allocated", ("i", 0)), ("allocation_bytes", ("i", 64)),
        ("addr", ("i", 0x10))] + common)
    memory_event(pl, a, 10, "MemoryAllocation", [
        ("allocator_name", "A"), ("bytes_allocated", ("i", 128)),
        ("allocation_bytes", ("i", 128)), ("requested_bytes", ("i", -5)), ("addr", ("i", 0x20)),
        ("data_type", ("i", 101)), ("tf_op", "never_freed"), ("fragmentation", float("nan"))]
        + common)
    memory_event(pl, a, 20, "MemoryAllocation", [  # a second allocation at 0x20
        ("allocator_name", "A"), ("bytes_allocated", ("i", 256)),
        ("allocation_bytes", ("i", 128)), ("addr", ("i", 0x20)), ("data_type", ("i", 31)),
        ("tf_op", "twice"), ("fragmentation", ("i", 3))] + common)
    memory_event(pl, b, 20, "MemoryDeallocation", [  # same time, another line
        ("allocator_name", "A"), ("bytes_allocated", ("i", 128)),
        ("allocation_bytes", ("i", 128)), ("addr", ("i", 0x20))] + common)
    memory_event(pl, b, 30, "MemoryDeallocation", [  # never allocated
        ("allocator_name", "A"), ("bytes_allocated", ("i", -64)),
        ("allocation_bytes", ("i", 64)), ("addr", ("i", 0x30)), ("group_id", ("i", 3))]
        + common)
    memory_event(pl, b, 40, "MemoryAllocation", [  # 2^64-1: as uint64 IntValue() is 0
        ("allocator_name", "A"), ("bytes_allocated", ("u", U64MAX)),
        ("allocation_bytes", ("u", U64MAX)), ("requested_bytes", ("i", -1)),
        ("addr", ("u", U64MAX)), ("data_type", ("i", -5))] + common)
    memory_event(pl, a, 50, "MemoryAllocation", [  # the sum wraps negative: never a peak
        ("allocator_name", "A"), ("bytes_allocated", ("i", INT64_MAX)),
        ("bytes_reserved", ("i", INT64_MAX)), ("allocation_bytes", ("i", 1)),
        ("addr", ("i", 0x40)), ("data_type", ("i", (1 << 32) + 1))] + common)
    memory_event(pl, a, 60, "MemoryAllocation", [  # a ref allocator name, a ref tf_op
        ("allocator_name", "A"), ("bytes_allocated", ("i", 512)),
        ("allocation_bytes", ("i", 256)), ("addr", ("i", 0x50)), ("data_type", ("i", 100))]
        + common)
    e = a.events[-1]
    ref = pl.stat_id("A")  # a stat metadata whose name is the value
    e.stats[0].ClearField("str_value")
    e.stats[0].ref_value = ref
    # index_on_host / device_ordinal (uint64 reads as 0) / a stat without metadata
    memory_event(pl, b, 70, "MemoryAllocation", [
        ("index_on_host", ("i", 3)), ("bytes_allocated", ("i", 9)),
        ("allocation_bytes", ("i", 9)), ("addr", ("i", 1))])
    memory_event(pl, b, 80, "MemoryAllocation", [
        ("device_ordinal", ("u", 2)), ("bytes_allocated", ("i", 7)),
        ("allocation_bytes", ("i", 7)), ("addr", ("i", 2))])
    e = b.events[-1]
    st = e.stats.add()
    st.metadata_id = 999  # no such stat metadata: no type, skipped
    st.int64_value = 5
    # a num_occurrences event: OffsetPs() is 0
    e = memory_event(pl, b, 0, "MemoryDeallocation", [
        ("allocator_name", "A"), ("bytes_allocated", ("i", 0)), ("allocation_bytes", ("i", 512)),
        ("addr", ("i", 0x50))] + common)
    e.num_occurrences = 2
    # display name "MemoryAllocation", name something else: not a memory event
    k = pl.md("not_memory")
    pl.p.event_metadata[k].display_name = "MemoryAllocation"
    e = b.events.add()
    e.metadata_id = k
    e.offset_ps = 90
    pl.set_stat(e, "allocator_name", "A")
    pl.set_stat(e, "bytes_allocated", ("i", 1 << 40))
    # a second host plane of the same name: FindPlaneWithName() takes the first
    p2 = Plane(xs, 2, "/host:CPU")
    memory_event(p2, p2.line(1, "t", 0), 1, "MemoryAllocation", [
        ("allocator_name", "second"), ("bytes_allocated", ("i", 1))])


def many(xs):
    pl = Plane(xs, 1, "/host:CPU")
    lines = [pl.line(i + 1, "t%d" % i, 1000) for i in range(3)]
    live, heap, t = [], 0, 0
    for i in range(2503):
        t += 1 + (i * 7919) % 13
        free = live and (i % 3 == 2 or len(live) > 40)
        if free:
            addr, n = live.pop((i * 31) % len(live))
            heap -= n
            kind = "MemoryDeallocation"
        else:
            addr, n = 0x1000 + i * 64, 64 * (1 + (i * 2654435761) % 97)
            live.append((addr, n))
            heap += n
            kind = "MemoryAllocation"
        memory_event(pl, lines[i % 3], t, kind, [
            ("allocator_name", "GPU_0_bfc"), ("bytes_allocated", ("i", heap)),
            ("bytes_available", ("i", (1 << 30) - heap)), ("peak_bytes_in_use", ("i", heap)),
            ("allocation_bytes", ("i", n)), ("requested_bytes", ("i", n - 3)),
            ("addr", ("i", addr)), ("group_id", ("i", i // 500)),
            ("tf_op", "op_%d" % (i % 5)), ("shape", "[%d]" % (n // 4)),
            ("data_type", ("i", 1 + i % 3))])


def nohost(xs):
    pl = Plane(xs, 1, "/device:TPU:0")
    e = pl.line(1, "XLA Ops", 0).events.add()
    e.metadata_id = pl.md("fusion")
    e.offset_ps = 1


def build(pb2, d):
    return write(pb2, d, {"hand": hand, "bad": bad, "many": many, "nohost": nohost}, "mem",
                 hostname=False)
