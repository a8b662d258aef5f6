"""oracle_trace.py - trace.json as XProf defines it, recomputed independently.

Written from XProf's sources, not from xprofs' C code: the plane choice and
pids of ConvertXSpaceToTraceEventsContainer() (xprof/convert/
xplane_to_trace_container.cc) with the constants of TSL's trace_utils.h;
lines, hidden events and stats, step_name, flow, _a and group_id of
ConvertXLineToTraceEventsContainer() / ConvertXStatsToTraceEventArguments()
(IsInternalEvent(), IsInternalStat(), XFlow in TSL's xplane_schema); the
JSON phases of JsonEventWriter (trace_events_to_json.h); the flows the
trace viewer's preprocessing adds (PreprocessSingleHostXSpace() in
xprof/convert/preprocess_single_host_xplane.cc: AddFlowsToXplane() and
IsXSpaceGrouped() in TSL's xplane_utils.cc). xprofs' documented
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
import re
import shutil
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
INTERNAL_STATS = {"kernel_details", "_pt", "_p", "_ct", "_c", "_r", "flops", "bytes_accessed", "program_id", "symbol_id"}
CATEGORIES = ["", "", "tf_exec", "tfrt_exec", "batch_sched", "PjRt", "as_batch_sched", "tfrt_rt",
              "tpu_embed", "gpu_launch", "batcher", "tpu_stream", "tpu_launch", "pathways_exec",
              "pjrt_library_call", "threadpool_event", ""]
CONTEXT_LAST = 16      # ContextType::kLastContextType (kJaxServingExecutor)
GPU_LAUNCH = 9         # ContextType::kGpuLaunch
FLOW_STATS = ("correlation_id", "_pt", "_p", "_ct", "_c")
U32 = 0xffffffff
U64 = 0xffffffffffffffff
# TSL trace_utils.h: derived thread ids are C ints (0xdeadbeef wraps negative)
DERIVED_MIN = 0xdeadbeef - (1 << 32)
DEVICE_DERIVED_MIN = DERIVED_MIN + 290          # kThreadIdHostXlaRegionEnd + 1
DEVICE_DERIVED_MAX = DEVICE_DERIVED_MIN + 99
PER_STREAM = 6                                  # kThreadIdSource - kThreadIdTfNameScope + 1


def i32(v):
    v &= U32
    return v - (1 << 32) if v >> 31 else v


def is_derived(line_id):
    """IsDerivedThreadId()."""
    return DERIVED_MIN <= i32(line_id) <= DEVICE_DERIVED_MAX


def gpu_streams(p):
    """DeriveEventsFromAnnotations(): the non-derived lines of GPU plane @p in derivation order."""
    ls = [(i, l) for i, l in enumerate(p.lines) if not is_derived(l.id)]
    ls.sort(key=lambda il: ("Compute" not in il[1].name, -len(il[1].events), il[0]))
    out = []
    nxt = DEVICE_DERIVED_MIN
    for i, l in ls:
        if nxt + PER_STREAM > DEVICE_DERIVED_MAX:
            break
        out.append((i, l))
        nxt += PER_STREAM
    return out


class DerivedLine:
    """DerivedXLineBuilder on a GPU plane: one open event per level."""

    def __init__(self, name, tid, out, gpu=True):
        self.name, self.tid, self.out, self.last, self.deps = name, tid, out, {}, []
        self.gpu = gpu

    def add(self, level, name, disp, span, group):
        last = self.last.get(level)
        # xprof's ExpandOrAddLevelEvent(): off GPU planes an event without a group_id
        # expands only within twice the open event's duration after its end
        if last is not None and last["name"] == name and last["group"] == group and \
                (self.gpu or group is not None or
                 last["e"] + 2 * (last["e"] - last["b"]) >= span[0]):
            last["b"] = min(last["b"], span[0])
            last["e"] = max(last["e"], span[1])
            return
        self.reset(level)
        self.last[level] = {"name": name, "disp": disp, "group": group, "b": span[0], "e": span[1],
                            "level": level}

    def add_levels(self, names, span, group):
        for level, (name, disp) in enumerate(names):
            self.add(level, name, disp, span, group)
        self.reset(len(names))

    def shrink(self, level):
        """AdjustDurationForTraceViewer()."""
        if level not in self.last:
            return
        top = level
        while top + 1 in self.last:
            top += 1
        if top <= level:
            return
        max_shrink = (self.last[top]["e"] - self.last[top]["b"]) // 1000 - 1
        n, prev = 0, None
        for i in range(level, top + 1):
            ev = self.last[i]
            if n < max_shrink and prev == (ev["b"], ev["e"]):
                n += 1
            prev = (ev["b"], ev["e"])
            if n:
                ev["e"] = max(ev["b"], ev["e"] - 1000 * n)

    def reset(self, level):
        self.shrink(level)
        for i in sorted(k for k in self.last if k >= level):
            self.out.append((self, self.last.pop(i)))
        if level == 0:
            for d in self.deps:
                d.reset(0)

    def close(self):
        for i in sorted(self.last):
            self.out.append((self, self.last.pop(i)))


# TSL tf_op_utils.cc: IsTfOpName(), IsTfOpType(), IsJaxOpType() (RE2: '.' stops at newlines,
# as Python's does), GetMemcpyOp()'s prefixes, absl's ASCII whitespace
TF_OP_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\/>-]*")
TF_OP_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
JAX_OP_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?")
MEMCPY_OPS = [(b"memcpyhtod", "MemcpyHToD"), (b"memcpydtoh", "MemcpyDToH"),
              (b"memcpydtod", "MemcpyDToD"), (b"memcpyhtoh", "MemcpyHToH")]
ASCII_WS = " \t\n\v\f\r"
NAME_SCOPE_LEVELS = 16   # xprofs derives at most this many name-scope levels (docs/trace.md)


def simple_atoi(s):
    """absl::SimpleAtoi() into an int64: does @s parse?"""
    m = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?[0-9]+)[ \t\n\v\f\r]*", s)
    return m is not None and -(1 << 63) <= int(m.group(1)) < (1 << 63)


def derive_op_type(full):
    """DeriveOpType(): the last '/' piece without a numeric '_' suffix."""
    op_name = full.split("/")[-1]
    pieces = op_name.split("_")
    if len(pieces) > 1 and simple_atoi(pieces[-1]):
        return op_name[:len(op_name) - len(pieces[-1]) - 1]
    return op_name


def parse_tf_op(full):
    """ParseTfOpFullname(): (category, name, type)."""
    parts = full.split(":", 1)
    if len(parts) != 2:
        for prefix, typ in MEMCPY_OPS:
            if full.encode()[:len(prefix)].lower() == prefix:
                return "memcpy", full, typ
        return "unknown", full, ""
    if parts[0] == "Iterator":
        return "tf_data", full, "Dataset"
    if TF_OP_NAME.fullmatch(parts[0]) and TF_OP_TYPE.fullmatch(parts[1]):
        return "tensorflow", parts[0], parts[1]
    op_type = parts[1] or derive_op_type(parts[0])
    if JAX_OP_TYPE.fullmatch(op_type):
        return "jax", parts[0], op_type.split("[")[0]
    if not parts[1]:
        return "tensorflow", parts[0], op_type
    return "unknown", full, ""


def tf_op_event_name(cat, name, typ):
    """TfOpEventName()."""
    if cat == "unknown":
        return name.rstrip(ASCII_WS)
    if cat == "tf_data":
        return "Iterator::" + name.split("::")[-1]
    return typ


_HLO = []


def hlo_pb2():
    """xla.HloProto (hlo/proto/hlo.proto, the subset xprofs reads) as a Python module."""
    if not _HLO:
        import xproto
        mod, tmp = xproto.load("hlo")
        shutil.rmtree(tmp, ignore_errors=True)
        _HLO.append(mod)
    return _HLO[0]


def metadata_protos(xs):
    """[(program id, HloProto bytes)] of the "/host:metadata" plane (ParseHloProtosFromXSpace())."""
    import xproto
    return xproto.hlo_protos(xs)


def hlo_symbols(xs):
    """XProf's symbol resolver: (program id, instruction name) -> (tf_op_name, source_info),
    from the HLO protos of the "/host:metadata" plane (ParseHloProtosFromXSpace(),
    HloModuleWrapper: op_full_name() = TraceMeOp(op_name, op_type), source_info())."""
    syms = {}
    done = set()
    for pid, data in metadata_protos(xs):
        h = hlo_pb2().HloProto()
        try:
            h.ParseFromString(data)
        except Exception:       # a proto that does not parse resolves nothing
            continue
        if pid & U64 in done:   # HloModuleMap.try_emplace(): the first proto of a program
            continue
        done.add(pid & U64)
        for comp in h.hlo_module.computations:
            for ins in comp.instructions:
                md = ins.metadata
                src = "%s:%d" % (md.source_file.rsplit("/", 1)[-1], md.source_line) \
                    if md.source_file else ""
                syms.setdefault((pid & U64, ins.name), (md.op_name + ":" + md.op_type, src))
    return syms


def derive_stream(p, l, k, value_of, skip, syms):
    """DeriveEventsFromAnnotationsForLines() for stream @l, the k-th: XLA Modules, XLA Ops and,
    from a non-XLA kernel's tf_op (ProcessTfOpEvent()), Framework Name Scope and Framework Ops."""
    out = []
    base = 6 * k + 1
    scopes = DerivedLine("Framework Name Scope - from #%d" % l.id, base + 1, out)
    tf_ops = DerivedLine("Framework Ops - from #%d" % l.id, base + 2, out)
    mods = DerivedLine("XLA Modules - from #%d" % l.id, base + 3, out)
    ops = DerivedLine("XLA Ops - from #%d" % l.id, base + 4, out)
    source = DerivedLine("Source code - from #%d" % l.id, base + 5, out)
    mods.deps = [scopes, ops]
    scopes.deps = [tf_ops]

    def process_tf_op(tf_op, span, group):
        """ProcessTfOpEvent()."""
        cat, name, typ = parse_tf_op(tf_op)
        levels = name.split("/")[:-1][:NAME_SCOPE_LEVELS]
        if cat in ("tensorflow", "jax") and levels and "Framework Name Scope" not in skip:
            scopes.add_levels([(x, "") for x in levels], span, group)
        if "Framework Ops" not in skip:
            tf_ops.add(0, tf_op, tf_op_event_name(cat, name, typ), span, group)
    evs = []
    for e in l.events:
        off = e.offset_ps if e.WhichOneof("data") == "offset_ps" else 0
        evs.append((l.timestamp_ns * 1000 + off, e))
    for start, e in sorted(evs, key=lambda se: (se[0], -se[1].duration_ps)):
        st = {}
        for x in e.stats:
            name = p.stat_metadata[x.metadata_id].name if x.metadata_id in p.stat_metadata else ""
            kind = x.WhichOneof("value")
            if name in ("kernel_details", "hlo_op", "hlo_module", "tf_op") and \
                    kind in ("str_value", "ref_value"):
                st[name] = value_of(p, x)
            elif name in ("program_id", "group_id") and kind in ("int64_value", "uint64_value"):
                v = getattr(x, kind)
                st[name] = v & U64 if name == "program_id" else i64(v)
        if not st.get("kernel_details"):
            continue
        span = (start, start + max(e.duration_ps, 0))
        group = st.get("group_id")
        pid = st.get("program_id")
        module = st.get("hlo_module", "")
        if module and "XLA Modules" not in skip:
            mods.add(0, module if pid is None else "%s(%d)" % (module, pid), "", span, group)
        if "hlo_op" in st:
            if "XLA Ops" not in skip:
                prefix = "%d/" % pid if pid is not None else module + "/"
                ops.add_levels([(prefix + op, op) for op in st["hlo_op"].split("::")],
                               span, group)
            sym = syms.get((pid, st["hlo_op"].split("::")[-1])) if pid is not None else None
            if sym and sym[0]:
                process_tf_op(sym[0], span, group)
            if sym and sym[1] and "Source code" not in skip:
                source.add(0, sym[1], "", span, group)
        elif st.get("tf_op"):
            process_tf_op(st["tf_op"], span, group)
    for dl in (mods, ops, scopes, tf_ops, source):
        dl.close()
    return out


def derive_tpu(p, value_of):
    """DeriveLinesFromStats() on TensorCore plane @p ("/device:TPU:<digits>"): every event of
    every line by (start, longer first); its metadata's then its own stats (last wins): tf_op
    gives Framework Name Scope and Framework Ops (ProcessTfOpEvent()), source gives Source
    code, _a != 0 skips it. Lines the plane holds by id are not derived (at most 32 lines)."""
    if not re.fullmatch(r"/device:TPU:[0-9]*", p.name):
        return []
    ids = {i32(l.id) for l in p.lines}
    lines = [l for l in p.lines if l.ByteSize() > 0]
    if not lines or len(lines) > 32:
        return []
    out = []
    scopes = DerivedLine("Framework Name Scope", (DERIVED_MIN + 2) & U32, out, gpu=False)
    tf_ops = DerivedLine("Framework Ops", (DERIVED_MIN + 3) & U32, out, gpu=False)
    source = DerivedLine("Source code", (DERIVED_MIN + 7) & U32, out, gpu=False)
    scopes.deps = [tf_ops]
    offloads = []
    rows = None
    if not any(DERIVED_MIN + 8 <= i32(l.id) < DERIVED_MIN + 8 + OFFLOAD_ROWS for l in p.lines):
        rows = OffloadRows(offloads)
    evs = []
    for li, l in enumerate(lines):
        for k, e in enumerate(l.events):
            off = e.offset_ps if e.WhichOneof("data") == "offset_ps" else 0
            evs.append((l.timestamp_ns * 1000 + off, -e.duration_ps, li, k, e))
    for start, _, _, _, e in sorted(evs, key=lambda v: v[:4]):
        tf_op = src = group = None
        is_async = 0
        md = p.event_metadata[e.metadata_id].stats if e.metadata_id in p.event_metadata else []
        for x in list(md) + list(e.stats):
            name = p.stat_metadata[x.metadata_id].name if x.metadata_id in p.stat_metadata else ""
            kind = x.WhichOneof("value")
            as_int = i64(getattr(x, kind)) if kind in ("int64_value", "uint64_value") else 0
            as_str = value_of(p, x) if kind in ("str_value", "ref_value") else ""
            if name == "tf_op":
                tf_op = as_str
            elif name == "source":
                src = as_str
            elif name == "group_id":
                group = as_int
            elif name == "_a":
                is_async = as_int
        if is_async:
            continue
        span = (start, start + max(e.duration_ps, 0))
        if tf_op:
            cat, name, typ = parse_tf_op(tf_op)
            levels = name.split("/")[:-1][:NAME_SCOPE_LEVELS]
            if cat in ("tensorflow", "jax") and levels and i32(DERIVED_MIN + 2) not in ids:
                scopes.add_levels([(x, "") for x in levels], span, group)
            if i32(DERIVED_MIN + 3) not in ids:
                tf_ops.add(0, tf_op, tf_op_event_name(cat, name, typ), span, group)
        if src and i32(DERIVED_MIN + 7) not in ids:
            source.add(0, src, "", span, group)
        if rows is not None and e.metadata_id in p.event_metadata:
            m = p.event_metadata[e.metadata_id]
            md_args = {}
            for x in m.stats:  # the metadata's stats, as trace.json shows them
                name = p.stat_metadata[x.metadata_id].name if x.metadata_id in p.stat_metadata else ""
                kind = x.WhichOneof("value")
                if name in ("raw_bytes_accessed", "shape_with_layout"):
                    md_args[name] = value_of(p, x) if kind in ("str_value", "ref_value") else \
                        getattr(x, kind)
            rows.event(m.name, m.display_name or m.name, span, md_args)
    scopes.reset(0)  # xprof resets the name scopes (and Framework Ops) at the end
    for dl in (scopes, tf_ops, source):
        dl.close()
    return out + offloads


OFFLOAD_WORDS = ("copy-start", "copy-done", "dynamic-slice-start", "dynamic-slice-done",
                 "dynamic-update-slice-start", "dynamic-update-slice-done")
OFFLOAD_ROWS = 41  # kThreadIdHostOffloadOpEnd - kThreadIdHostOffloadOpStart + 1


class OffloadRows:
    """HostOffloadEventProcessor: copy/dynamic-slice start and done events on the host memory
    space (S(5) in the name) paired by GetOffloadInstructionName(), first in first out, each
    pair one event on the row whose latest end is the earliest at or before its start."""

    class Row:
        def __init__(self, i):
            self.tid = (DERIVED_MIN + 8 + i) & U32
            self.name = "Host Offload Ops row %d" % i

    def __init__(self, out):
        self.out, self.waiting, self.rows, self.frontier = out, {}, [], []

    @staticmethod
    def key(disp):
        parts = disp.split(".")
        ident = parts[-1] if len(parts) >= 2 else "0"
        st, dn = disp.find("-start"), disp.find("-done")
        op = disp[:st] if st >= 0 else disp[:dn] if dn >= 0 else disp
        return "offload-%s.%s" % (op, ident)

    def event(self, name, disp, span, md_args):
        if "S(5)" not in name or not any(w in disp for w in OFFLOAD_WORDS):
            return
        k = self.key(disp)
        if "-start" in disp:
            self.waiting.setdefault(k, []).append((span[0], md_args.get("shape_with_layout")))
            return
        if "-done" not in disp or not self.waiting.get(k):
            return
        begin, shape = self.waiting[k].pop(0)
        end = max(span[1], begin)
        row, least = -1, begin
        for i, f in enumerate(self.frontier):
            if f <= least:
                row, least = i, f
        if row < 0:
            if len(self.rows) < OFFLOAD_ROWS:
                self.rows.append(self.Row(len(self.rows)))
                self.frontier.append(end)
            row = len(self.rows) - 1
        self.frontier[row] = max(self.frontier[row], end)
        args = {}
        if "raw_bytes_accessed" in md_args:
            args["raw_bytes_accessed"] = md_args["raw_bytes_accessed"]
        if shape is not None:
            args["shape_with_layout"] = shape
        self.out.append((self.rows[row], {"name": "", "disp": k, "group": None, "b": begin,
                                          "e": end, "args": args}))


def i64(v):
    v &= U64
    return v - (1 << 64) if v >> 63 else v


def line_tids(p, grouped):
    """trace tid of each line of @p: DisplayId(), renumbered on GPU planes of a space not
    grouped yet; the derived streams."""
    tids = [(l.display_id or l.id) & U32 for l in p.lines]
    streams = gpu_streams(p) if p.name.startswith("/device:GPU:") and not grouped else []
    for k, (i, _) in enumerate(streams):
        tids[i] = PER_STREAM * k + 1
    return tids, [l for _, l in streams]


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


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & U64
    return h


def flow_id(host, local, ctx_plus1):
    """XFlow::GetFlowId(): XProf's absl::HashOf is salted per process; xprofs documents
    FNV-1a over three little-endian 64-bit words (docs/trace.md)."""
    b = b"".join((v & U64).to_bytes(8, "little") for v in (host, local, ctx_plus1))
    return fnv1a64(b) & ((1 << 56) - 1)


def is_grouped(xs):
    """IsXSpaceGrouped(): some plane has a stat metadata named group_id."""
    return any(m.name == "group_id" for p in xs.planes for m in p.stat_metadata.values())


def is_device_plane(p):
    """IsDevicePlane() for the planes a trace shows."""
    return p.name.startswith(("/device", "#Chip", "/custom:"))


def preprocess_flow(f, own, device, host):
    """AddFlowsToXplane(host_id, is_host_plane=!device, connect_traceme=true): flow stats
    appended after the event's own stats, the last one being the event's flow."""
    def safe(t):
        t &= U32
        return 0 if t > CONTEXT_LAST else t
    if "correlation_id" in own:
        f["flow"] = (1 if device else 2) | flow_id(host, own["correlation_id"], 0) << 2 \
            | GPU_LAUNCH << 58
    if "_pt" in own and "_p" in own:
        t = safe(own["_pt"])
        f["flow"] = 2 | flow_id(host, own["_p"], t + 1) << 2 | t << 58
    if "_ct" in own and "_c" in own:
        t = safe(own["_ct"])
        f["flow"] = 1 | flow_id(host, own["_c"], t + 1) << 2 | t << 58


def event_facts(p, e, value_of):
    """name, args and the special stats of event @e of plane @p; "own" holds the event's own
    correlation_id (uint64_value(): 0 for another kind) and _pt/_p/_ct/_c (IntOrUintValue())."""
    md = p.event_metadata[e.metadata_id] if e.metadata_id in p.event_metadata else None
    full = md.name if md is not None else ""
    disp = md.display_name if md is not None else ""
    f = {"internal": full in INTERNAL_EVENTS, "name": disp or full, "args": {},
         "flow": None, "group": None, "async": False, "step": "", "own": {}}
    for st in e.stats:
        name = p.stat_metadata[st.metadata_id].name if st.metadata_id in p.stat_metadata else ""
        kind = st.WhichOneof("value")
        if name == "correlation_id":
            f["own"][name] = st.uint64_value if kind == "uint64_value" else 0
        elif name in FLOW_STATS:
            f["own"][name] = getattr(st, kind) & U64 if kind in ("int64_value", "uint64_value") \
                else 0
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


def threadpool_regions(p, l):
    """ThreadpoolLineMutator::MutateEventsInLine() on line @l of plane @p: (start ps, end ps,
    consumer id) per StartRegion (with a _c stat: IntOrUintValue(), 0 unless an integer) ...
    StopRegion, a start time of 0 being none; the markers found by metadata name."""
    ids = {m.name: k for k, m in p.event_metadata.items()}
    if "ThreadpoolListener::StartRegion" not in ids or "ThreadpoolListener::StopRegion" not in ids:
        return []
    start_md = {k for k, m in p.event_metadata.items() if m.name == "ThreadpoolListener::StartRegion"}
    stop_md = {k for k, m in p.event_metadata.items() if m.name == "ThreadpoolListener::StopRegion"}
    out, start, rid = [], 0, 0
    for e in l.events:
        ts = l.timestamp_ns * 1000 + (e.offset_ps if e.WhichOneof("data") == "offset_ps" else 0)
        if e.metadata_id in start_md:
            cs = [st for st in e.stats if st.metadata_id in p.stat_metadata and
                  p.stat_metadata[st.metadata_id].name == "_c"]
            if cs:
                kind = cs[0].WhichOneof("value")
                start = ts
                rid = getattr(cs[0], kind) & U64 if kind in ("int64_value", "uint64_value") else 0
        elif e.metadata_id in stop_md and start != 0:
            out.append((start, ts, rid))
    return out


def expected(xs, host, value_of, keep=None):
    """The events XProf's rules give: (key, args) pairs, process and thread names. @keep, when
    given, filters them in walk order (oracle_lod.py): keep.plane() at each plane,
    keep.derived(pid, tid, ev) per derived event, keep.event(pid, tid, counters, ts, dur, f)
    per event of a line."""
    evs, procs, threads = [], {}, {}
    grouped = is_grouped(xs)
    host_id = fnv1a64(xs.hostnames[0].encode()) if xs.hostnames else 0
    for p, pid in planes(xs):
        procs[pid] = "%s %s" % (host, p.name) if host else p.name
        facts = []
        ends = collections.defaultdict(int)
        # PreprocessSingleHostXSpace(): a grouped space keeps its display ids, derives nothing
        tids, streams = line_tids(p, grouped)
        skip = {l.name for l in p.lines}
        derived = [] if grouped else derive_tpu(p, value_of)
        syms = hlo_symbols(xs) if streams else {}
        for k, l in enumerate(streams):
            derived += derive_stream(p, l, k, value_of, skip, syms)
        if keep:
            keep.plane()
        for dl, ev in derived:
            if keep and not keep.derived(pid, dl.tid, ev):
                continue
            threads[(pid, dl.tid)] = dl.name
            args = {}
            if ev["group"] is not None:
                args["group_id"] = ev["group"]
            if ev["disp"]:
                args["long_name"] = ev["name"]
            args.update(ev.get("args", {}))
            evs.append((("X", ev["disp"] or ev["name"], ev["b"], max(ev["e"] - ev["b"], 1),
                         pid, dl.tid, None), args))
        for li, l in enumerate(p.lines):
            if not l.events or l.name.startswith("counters_"):
                continue
            counters = l.name == "_counters_"
            tid = tids[li]
            if not counters:
                threads[(pid, tid)] = l.display_name or l.name
                # PreprocessXPlane()'s threadpool regions: own _c and _ct = 15, so a flow in
                for b, e, rid in ([] if grouped else threadpool_regions(p, l)):
                    # a window shows the regions it overlaps; the level of detail does not
                    # thin them (docs/trace.md)
                    if keep and not keep.in_window(b, e):
                        continue
                    f = {"name": "ThreadpoolListener::Region", "args": {}, "flow": None,
                         "async": False}
                    preprocess_flow(f, {"_ct": 15, "_c": rid}, is_device_plane(p), host_id)
                    facts.append((False, tid, b, e - b, f))
            for e in l.events:
                f = event_facts(p, e, value_of)
                if f["internal"]:
                    continue
                if not grouped:
                    preprocess_flow(f, f["own"], is_device_plane(p), host_id)
                off = e.offset_ps if e.WhichOneof("data") == "offset_ps" else 0
                if keep and not keep.event(pid, tid, counters, l.timestamp_ns * 1000 + off,
                                           e.duration_ps, f):
                    continue
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
    """µs as ps, to the nearest: a "dur" may carry more digits (docs/trace.md "Times")."""
    return int((Decimal(v) * 1000000).to_integral_value())


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


def check(path, xs, raw, gz, host, value_of, fail, keep=None):
    if not raw.startswith(b'{"displayTimeUnit":"ns"'):
        fail("%s: trace.json does not start with displayTimeUnit" % path)
    try:
        t = json.loads(raw, parse_float=Decimal)
    except ValueError as err:
        fail("%s: trace.json is not JSON: %s" % (path, err))
        return
    if gzip.decompress(gz) != raw:
        fail("%s: trace.json.gz does not gunzip to trace.json" % path)
    want, procs, threads = expected(xs, host, value_of, keep)
    if keep:  # a slice names the threads it has events of
        threads = {k: v for k, v in threads.items() if keep.named(k)}
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
