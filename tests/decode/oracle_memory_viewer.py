"""oracle_memory_viewer.py - memory_viewer.json written again from XProf's source.

Follows xprof/convert/hlo_proto_to_memory_visualization_utils.cc on an
HloProto parsed with python3-protobuf (hlo/proto/hlo.proto):
HloProtoBufferWrapper (Init(), GetHeapSimulatorTraceId(),
LogicalBuffersWithIndefiniteLifetime()), HeapSimulatorStats and
ProcessHeapSimulatorTrace() (the replay, XProf's std::list of live ids
copied at each new peak), PeakUsageSnapshot / CreatePeakUsageSnapshot(),
GeneratePreprocessResult() and NoteSpecialAllocations(); memory color 0
and kSmallBufferSize 16 KiB as XProf's memory viewer processor uses them.

Where docs/memory.md says xprofs differs, so does this file: allocations
go by index (XProf iterates a hash map), sort ties keep XProf's order of
max_heap, shapes print without their layout, a SHARE_WITH cycle (where
XProf would not return) is an error, int64 sums wrap.
"""

SMALL = 16 * 1024
MIB = float(1 << 20)
TUPLE, OPAQUE, TOKEN = 13, 14, 17
# bits per element of xla::PrimitiveType (xla_data.proto); 0: no array
BITS = {1: 8, 2: 8, 3: 16, 4: 32, 5: 64, 6: 8, 7: 16, 8: 32, 9: 64, 10: 16, 11: 32, 12: 64,
        15: 64, 16: 16, 18: 128, 19: 8, 20: 8, 21: 4, 22: 4, 23: 8, 24: 8, 25: 8, 26: 2,
        27: 2, 28: 8, 29: 8, 30: 1, 31: 1, 32: 4, 33: 8}
NAMES = {1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32",
         9: "u64", 10: "f16", 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64",
         16: "bf16", 17: "token", 18: "c128", 19: "f8e5m2", 20: "f8e4m3fn",
         21: "s4", 22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz",
         26: "s2", 27: "u2", 28: "f8e4m3", 29: "f8e3m4", 30: "s1", 31: "u1", 32: "f4e2m1fn",
         33: "f8e8m0fnu", 34: "buffer"}


def i64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def u64(v):
    return v & ((1 << 64) - 1)


def mib(b):
    return b / MIB


class Error(Exception):
    pass


def human(s):
    """ShapeUtil::HumanString() (no layout)."""
    if s.element_type == TUPLE:
        return "(" + ", ".join(human(t) for t in s.tuple_shapes) + ")"
    return "%s[%s]" % (NAMES.get(s.element_type, "?"), ",".join(str(d) for d in s.dimensions))


def byte_size(s):
    """ShapeUnpaddedSize(): ByteSizeOf() with the default layout, 8-byte pointers."""
    if s.element_type == TUPLE:
        return 8 * len(s.tuple_shapes)
    if s.element_type == OPAQUE:
        return 8
    bits = BITS.get(s.element_type, 0)
    n = 1
    for d in s.dimensions:
        n *= d
    return n * ((bits + 7) // 8) if bits else 0


def category(a):
    if a.is_entry_computation_parameter:
        return "Parameter"
    if a.maybe_live_out:
        return "Output"
    if a.is_thread_local:
        return "Thread-local"
    return "Constant" if a.is_constant else "Temporary"


def indefinite(a):
    return a.is_thread_local or a.is_entry_computation_parameter or a.is_constant or \
        a.maybe_live_out


class Alloc:
    def __init__(self, proto):
        self.proto = proto
        self.trace = None


class LB:
    def __init__(self, proto, alloc, instr, offset):
        self.proto, self.alloc, self.instr, self.offset = proto, alloc, instr, offset
        shape = instr.shape
        si = list(proto.defined_at.shape_index)
        if si and 0 <= si[-1] < len(shape.tuple_shapes):   # ResolveShapeIndex()
            shape = shape.tuple_shapes[si[-1]]
        self.shape = shape
        self.unpadded = byte_size(shape)
        self.span, self.ref, self.canonical = None, 0, None

    def size(self):
        return self.proto.size

    def root(self):
        return self.canonical.root() if self.canonical else self

    def inc(self):
        if self.canonical:
            return self.canonical.inc()
        self.ref += 1
        return self.ref

    def dec(self):
        if self.canonical:
            return self.canonical.dec()
        self.ref -= 1
        return self.ref

    def name_with_index(self):
        si = list(self.proto.defined_at.shape_index)
        n = self.instr.name
        return n + "{" + ",".join(str(x) for x in si) + "}" if si else n


class Wrapper:
    """HloProtoBufferWrapper::Init()."""

    def __init__(self, h):
        self.h = h
        by_id = {}
        for c in h.hlo_module.computations:
            for ins in c.instructions:
                by_id[ins.id] = ins
        lbp = {}
        for lb in h.buffer_assignment.logical_buffers:
            lbp[lb.id] = lb
        self.allocs, self.lbs = {}, {}
        self.unusable_assigned = 0
        for a in h.buffer_assignment.buffer_allocations:
            st = Alloc(a)
            self.allocs[a.index] = st
            for asg in a.assigned:
                lb = lbp.get(asg.logical_buffer_id)
                if lb is None or lb.defined_at.instruction_id not in by_id:
                    self.unusable_assigned += 1
                    continue
                self.lbs[asg.logical_buffer_id] = LB(lb, st, by_id[lb.defined_at.instruction_id],
                                                     asg.offset)
        for i, tr in enumerate(h.buffer_assignment.heap_simulator_traces):
            if not tr.events or tr.events[0].buffer_id not in self.lbs:
                continue
            self.allocs[self.lbs[tr.events[0].buffer_id].alloc.proto.index].trace = i

    def allocations(self, color):
        return [self.allocs[k] for k in sorted(self.allocs)
                if self.allocs[k].proto.color == color]

    def trace_id(self, color):
        for a in self.allocations(color):
            if not indefinite(a.proto) and a.trace is not None:
                return a.trace
        best, best_n = -1, 0
        for i, tr in enumerate(self.h.buffer_assignment.heap_simulator_traces):
            n = sum(1 for e in tr.events
                    if e.buffer_id in self.lbs and self.lbs[e.buffer_id].proto.color == color)
            if n > best_n:
                best, best_n = i, n
        return best


def replay(w, color):
    """ProcessHeapSimulatorTrace(): the stats, or Error with XProf's message."""
    for lb in w.lbs.values():
        lb.span, lb.ref, lb.canonical = None, 0, None
    st = {"heap": 0, "unpadded": 0, "peak": 0, "peak_unpadded": 0, "pos": 0, "live": [],
          "peak_live": [], "heap_t": [], "unpadded_t": [], "names": [], "seen": {},
          "seen_allocs": set(), "trace": w.trace_id(color), "unusable": 0}
    traces = w.h.buffer_assignment.heap_simulator_traces
    if st["trace"] < 0 or st["trace"] >= len(traces):
        return st
    events = traces[st["trace"]].events
    n = len(events)

    def increase(lb, init_span):
        st["live"].append(lb.proto.id)
        st["heap"] = i64(st["heap"] + lb.size())
        st["unpadded"] = i64(st["unpadded"] + lb.unpadded)
        if st["heap"] > st["peak"]:
            st["peak"], st["pos"] = st["heap"], len(st["heap_t"]) - 1
            st["peak_unpadded"] = st["unpadded"]
            st["peak_live"] = list(st["live"])
        if init_span:
            lb.span = [len(st["heap_t"]) - 1, n - 1]

    for e in events:
        st["heap_t"].append(st["heap"])
        st["unpadded_t"].append(st["unpadded"])
        st["names"].append(e.instruction_name)
        lb = w.lbs.get(e.buffer_id)
        if lb is None:
            st["unusable"] += 1
            continue
        st["seen"].setdefault(id(lb), lb)
        st["seen_allocs"].add(id(lb.alloc))
        if e.kind == 0:
            lb.inc()
            increase(lb, True)
        elif e.kind == 1:
            if lb.dec() < 0:
                raise Error("Buffer %d is freed multiple times." % lb.proto.id)
            if lb.root().ref == 0:
                c = lb.root()
                st["live"] = [x for x in st["live"] if x != c.proto.id]
                st["heap"] = i64(st["heap"] - c.size())
                if st["heap"] < 0:
                    raise Error("Heap size should be non-negative, but get: %d" % st["heap"])
                st["unpadded"] = i64(st["unpadded"] - c.unpadded)
                if c.span:
                    c.span[1] = len(st["heap_t"]) - 1
        elif e.kind == 2:
            c = w.lbs.get(e.share_with_canonical_id)
            if c is None:
                continue
            k = c
            while k is not None:      # where XProf would recurse for ever
                if k is lb:
                    raise Error("SHARE_WITH of buffer %d with %d makes a cycle of canonical "
                                "buffers" % (lb.proto.id, c.proto.id))
                k = k.canonical
            lb.canonical = c
            if c.inc() == 1:
                increase(c, False)
        else:
            raise Error("Unhandled event kind: %d" % e.kind)
    st["heap_t"].append(st["heap"])
    st["unpadded_t"].append(st["unpadded"])
    st["names"].append("")
    if len(st["seen_allocs"]) != 1:
        raise Error("All heap simulation should work out of a single buffer allocation, "
                    "actual seen_buffer_allocations.size():%d" % len(st["seen_allocs"]))
    return st


def analyse(w, color):
    """(replay stats, snapshot, sums) of @color, or Error."""
    st = replay(w, color)
    snap = {"objects": [], "small": 0, "indefinite": 0}

    def add(lb):
        if u64(lb.size()) < SMALL:
            snap["small"] = i64(snap["small"] + lb.size())
        else:
            snap["objects"].append(lb)
    sums = dict(params=0, nonreuse=0, live=0, total=0, indef=0, n=0)
    for a in w.h.buffer_assignment.buffer_allocations:
        if a.color == color:
            sums["total"] = i64(sums["total"] + a.size)
    for a in w.allocations(color):
        p = a.proto
        sums["n"] += 1
        if p.is_entry_computation_parameter:
            sums["params"] = i64(sums["params"] + p.size)
        if p.is_thread_local or p.is_tuple:
            sums["nonreuse"] = i64(sums["nonreuse"] + p.size)
        if p.maybe_live_out:
            sums["live"] = i64(sums["live"] + p.size)
        if not indefinite(p):
            continue
        sums["indef"] = i64(sums["indef"] + p.size)
        best, best_size = None, 0
        for asg in p.assigned:
            lb = w.lbs.get(asg.logical_buffer_id)
            if lb is not None and u64(lb.size()) > best_size:
                best, best_size = lb, u64(lb.size())
        if best:
            snap["indefinite"] = i64(snap["indefinite"] + best.alloc.proto.size)
            add(best)
    for i in st["peak_live"]:
        add(w.lbs[i])
    if snap["small"]:
        snap["objects"].append(None)
    return st, snap, sums


def heap_object(lb, i, small):
    if lb is None:
        return {"numbered": i, "label": "small (<%d bytes)" % SMALL, "logical_buffer_id": -1,
                "logical_buffer_size_mib": mib(small), "unpadded_shape_mib": 0,
                "size_bytes": small, "unpadded_size_bytes": 0}
    ins = lb.instr
    o = {"numbered": i, "label": "%s: %s # %s" % (ins.name, human(lb.shape), ins.metadata.op_name),
         "logical_buffer_id": lb.proto.id, "logical_buffer_size_mib": mib(lb.size()),
         "unpadded_shape_mib": mib(lb.unpadded), "instruction_name": lb.name_with_index(),
         "group_name": category(lb.alloc.proto), "tf_op_name": ins.metadata.op_name,
         "shape_string": human(lb.shape), "op_code": ins.opcode, "size_bytes": lb.size(),
         "unpadded_size_bytes": lb.unpadded}
    if ins.metadata.source_file:
        o["source_info"] = {"file_name": ins.metadata.source_file,
                            "line_number": ins.metadata.source_line}
    return o


def lifetimes(w, color):
    out = []
    for a in w.allocations(color):
        p = a.proto
        if not indefinite(p):
            continue
        attrs = []
        if p.is_entry_computation_parameter:
            attrs.append("entry computation parameter")
        if p.maybe_live_out:
            attrs.append("may-be live out")
        if not p.is_thread_local and not p.is_tuple:
            attrs.append("reusable")
        lbs = []
        for asg in p.assigned:
            d = {"id": asg.logical_buffer_id, "size_mib": mib(asg.size)}
            lb = w.lbs.get(asg.logical_buffer_id)
            if lb is not None:
                d.update(hlo_name=lb.instr.name, shape_index=list(lb.proto.defined_at.shape_index),
                         shape=human(lb.shape))
            lbs.append(d)
        o = {"id": p.index, "size_mib": mib(p.size), "attributes": attrs, "logical_buffers": lbs}
        shapes = [d.get("shape", "") for d in lbs]
        if shapes and shapes[0] and all(s == shapes[0] for s in shapes):
            o["common_shape"] = shapes[0]
        out.append(o)
    return out


def program(h, program_id, source):
    """The program's object of memory_viewer.json, and its lines of "errors"."""
    w = Wrapper(h)
    spaces = []
    for c in sorted({a.color for a in h.buffer_assignment.buffer_allocations}):
        s = {"memory_color": c, "heap_simulator_trace_id": w.trace_id(c),
             "buffer_allocations": len(w.allocations(c))}
        try:
            st, snap, sums = analyse(w, c)
            s.update(error=None, peak_heap_bytes=i64(st["peak"] + snap["indefinite"]),
                     peak_unpadded_heap_bytes=i64(st["peak_unpadded"] + snap["indefinite"]),
                     indefinite_memory_usage_bytes=snap["indefinite"],
                     peak_heap_mib=mib(st["peak"]) + mib(snap["indefinite"]))
        except Error as e:
            s["error"] = str(e)
            sums = analyse_sums(w, c)
        s.update(total_buffer_allocation_bytes=sums["total"],
                 indefinite_buffer_allocation_bytes=sums["indef"])
        spaces.append(s)
    m = h.hlo_module
    out = {"program_id": program_id, "module_name": m.name,
           "entry_computation_name": m.entry_computation_name, "source": source,
           "memory_spaces": spaces, "memory_color": 0}
    try:
        st, snap, sums = analyse(w, 0)
    except Error as e:
        out["error"] = "Failed to process heap simulator trace: %s" % e
        return out, notes(w, program_id, None)
    add = snap["indefinite"]
    objs = snap["objects"]
    order = sorted(range(len(objs)), key=lambda i: (-mib(objs[i].size() if objs[i] else
                                                          snap["small"]), i))
    out.update({
        "error": None, "heap_simulator_trace_id": st["trace"],
        "peak_heap_mib": mib(st["peak"]) + mib(add),
        "peak_unpadded_heap_mib": mib(st["peak_unpadded"]) + mib(add),
        "peak_heap_size_position": st["pos"],
        "peak_heap_bytes": i64(st["peak"] + add),
        "peak_unpadded_heap_bytes": i64(st["peak_unpadded"] + add),
        "indefinite_memory_usage_bytes": add,
        "entry_computation_parameters_mib": mib(sums["params"]),
        "non_reusable_mib": mib(sums["nonreuse"]), "maybe_live_out_mib": mib(sums["live"]),
        "total_buffer_allocation_mib": mib(sums["total"]),
        "indefinite_buffer_allocation_mib": mib(sums["indef"]),
        "heap_sizes": [mib(x) + mib(add) for x in st["heap_t"]],
        "unpadded_heap_sizes": [mib(x) + mib(add) for x in st["unpadded_t"]],
        "hlo_instruction_names": st["names"],
        "max_heap": [heap_object(lb, i, snap["small"]) for i, lb in enumerate(objs)],
        "by_size_to_max_heap": order,
        "max_heap_to_by_size": [order.index(i) for i in range(len(objs))],
        "peak_logical_buffer_ids": st["peak_live"],
        "logical_buffer_spans": {str(lb.proto.id): {"start": i32(lb.span[0]),
                                                    "limit": i32(lb.span[1])}
                                 for lb in st["seen"].values() if lb.span},
        "indefinite_lifetimes": lifetimes(w, 0)})
    return out, notes(w, program_id, st)


def analyse_sums(w, c):
    """NoteSpecialAllocations()'s sums alone (the breakdown shows them beside an error)."""
    total = indef = 0
    for a in w.h.buffer_assignment.buffer_allocations:
        if a.color == c:
            total = i64(total + a.size)
    for a in w.allocations(c):
        if indefinite(a.proto):
            indef = i64(indef + a.proto.size)
    return {"total": total, "indef": indef}


def i32(v):
    v &= (1 << 32) - 1
    return v - (1 << 32) if v >= 1 << 31 else v


def notes(w, program_id, st):
    out = []
    if w.unusable_assigned:
        out.append("program %d: %d assigned logical buffers name no logical buffer or no "
                   "instruction: left out" % (program_id, w.unusable_assigned))
    if st and st["unusable"]:
        out.append("program %d: %d events of heap simulator trace %d name no usable logical "
                   "buffer: skipped" % (program_id, st["unusable"], st["trace"]))
    return out


def view(protos, hlo_pb2):
    """memory_viewer.json of the programs [(program id, HloProto bytes, source)] in index
    order: {program id: object} and the notes, for those with a buffer assignment."""
    progs, errs = {}, []
    for pid, raw, source in protos:
        h = hlo_pb2.HloProto()
        h.ParseFromString(raw)
        if pid in progs or not h.HasField("buffer_assignment"):
            continue
        progs[pid], n = program(h, pid, source)
        errs += n
    return progs, errs
