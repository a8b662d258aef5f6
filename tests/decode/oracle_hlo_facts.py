"""oracle_hlo_facts.py - what the views take from a profile's HLO, recomputed.

For each (program id, instruction name): XProf's TfOpName() of the
instruction (tsl TfOpFullname(op_type, op_name)) and its category
(HloInstructionWrapper::Category() = XLA's HloInstruction::ToCategory()),
written from XLA's and XProf's rules (docs/hlo.md), not from hlo/'s C code:
the programs of the profile's "/host:metadata" plane
(ParseHloProtosFromXSpace()), then the session's sidecar files
"<module>(<program id>).hlo_proto.pb"; the first program of an id that
parses wins (HloModuleMap), and in it the first instruction of a name
(HloModuleWrapper).

Each instruction's FLOPs and bytes are XProf's GPU PerformanceInfoWrapper
figures over tests/hlo/oracle_cost.py's independent HloCostAnalysis model:
ModelFlops() its flops, DeviceFlops() those over 2 / 4 when the widest
array operand has 8 / 4 bits (XProfGpuCostAnalysis; a custom call only
when a cuBLASLt gemm, by its first operand), bytes_accessed() its bytes;
None where the model cannot tell.
"""
import os
import re
import sys

import oracle_trace

U64 = (1 << 64) - 1  # program ids are uint64

# XLA's HloInstruction::IsOpElementwise()
ELEMENTWISE = {
    "abs", "round-nearest-afz", "round-nearest-even", "ceil", "clz", "convert",
    "bitcast-convert", "copy", "cosine", "erf", "exponential", "exponential-minus-one",
    "floor", "imag", "is-finite", "log", "log-plus-one", "not", "negate", "popcnt", "real",
    "reduce-precision", "rsqrt", "logistic", "sign", "sine", "sqrt", "cbrt", "tan", "tanh",
    "add", "atan2", "compare", "complex", "divide", "maximum", "minimum", "multiply", "power",
    "remainder", "subtract", "and", "or", "xor", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "stochastic-convert", "select", "clamp"}
FUSION = {"kLoop": "loop fusion", "kInput": "input fusion", "kOutput": "output fusion",
          "kCustom": "custom fusion"}
# primitive_util::BitWidth() of xla::PrimitiveType values (xla_data.proto)
BITS = {1: 8, 2: 8, 3: 16, 4: 32, 5: 64, 6: 8, 7: 16, 8: 32, 9: 64, 10: 16, 11: 32, 12: 64,
        15: 64, 16: 16, 18: 128, 19: 8, 20: 8, 21: 4, 22: 4, 23: 8, 24: 8, 25: 8, 26: 2, 27: 2,
        28: 8, 29: 8, 30: 1, 31: 1, 32: 4, 33: 8}


def category(ins, by_id):
    """HloInstruction::ToCategory() of @ins (@by_id: its computation's instructions)."""
    op = ins.opcode
    if op == "fusion":
        return FUSION.get(ins.fusion_kind, "fusion")
    if op in ("transpose", "copy", "reshape", "dynamic-reshape"):
        return "data formatting"
    if op in ("constant", "rng"):
        ew = True
    elif op == "map":
        ew = not ins.dimensions or list(ins.dimensions) == list(range(len(ins.shape.dimensions)))
    else:
        ew = op in ELEMENTWISE
        if op == "bitcast-convert" and ins.operand_ids:
            o = by_id.get(ins.operand_ids[0])
            if o is not None and BITS.get(ins.shape.element_type, 0) != \
                    BITS.get(o.shape.element_type, 0):
                ew = False
    return "non-fusion elementwise" if ew else op


def tf_op_name(md):
    """tsl TfOpFullname(op_type, op_name)."""
    name, typ = md.op_name, md.op_type
    if not typ:
        if not name:
            return ""
        if name in ("XLA_Args", "XLA_Retvals"):
            typ = name
    return name + ":" + typ


_COST = []


def cost_model():
    """tests/hlo/oracle_cost.py, imported once (it lives beside the HLO reader's tests)."""
    if not _COST:
        import xproto
        sys.path.insert(0, os.path.join(xproto.SRC, "tests", "hlo"))
        import oracle_cost
        _COST.append(oracle_cost)
    return _COST[0]


LT_GEMM = {"__cublas$lt$matmul", "__cublas$lt$matmul$f8"}


def performance(model, ins):
    """(ModelFlops(), DeviceFlops(), bytes_accessed()) of @ins, None where unknown."""
    oc = cost_model()
    flops, _, nbytes, _, _ = model.cost(ins)
    if flops is None:
        return None, None, nbytes
    ops = [model.op(ins, k).shape for k in range(len(ins.operand_ids))]
    if ins.opcode == "custom-call":
        ops = ops[:1] if ins.custom_call_target in LT_GEMM else []
    width = max([oc.bits(o.element_type) for o in ops if oc.is_array(o)] or [0])
    return flops, flops / {8: 2, 4: 4}.get(width, 1), nbytes


def source_info(md):
    """source_info(): "<basename of source_file>:<line>", "" without a file."""
    return "%s:%d" % (md.source_file.rsplit("/", 1)[-1], md.source_line) \
        if md.source_file else ""


def sidecar_protos(paths):
    out = []
    for path in paths:
        m = re.match(r"^(.*)\((\d+)\)\.hlo_proto\.pb$", os.path.basename(path))
        if m:
            with open(path, "rb") as fh:
                out.append((int(m.group(2)), fh.read()))
    return out


def facts(xs, sidecars=()):
    """{(program id, instruction name): {"tf_op_name", "op_full_name", "category",
    "source", "opcode", "target", "flops", "device_flops", "bytes"}}."""
    out, done = {}, set()
    for pid, data in oracle_trace.metadata_protos(xs) + sidecar_protos(sidecars):
        h = oracle_trace.hlo_pb2().HloProto()
        try:
            h.ParseFromString(data)
        except Exception:   # a module XProf cannot convert adds nothing
            continue
        if pid & U64 in done:
            continue
        done.add(pid & U64)
        model = cost_model().Model(h.hlo_module)
        for comp in h.hlo_module.computations:
            by_id = {i.id: i for i in comp.instructions}
            for ins in comp.instructions:
                if (pid & U64, ins.name) in out:
                    continue
                fl, dfl, nb = performance(model, ins)
                out[(pid & U64, ins.name)] = {
                    "tf_op_name": tf_op_name(ins.metadata),
                    "op_full_name": ins.metadata.op_name + ":" + ins.metadata.op_type,
                    "category": category(ins, by_id), "source": source_info(ins.metadata),
                    "opcode": ins.opcode, "target": ins.custom_call_target,
                    "flops": fl, "device_flops": dfl, "bytes": nb}
    return out


_MEMO = {}


def for_profile(xs, sidecars=()):
    """facts() of @xs, remembered while @xs lives."""
    key = (id(xs), tuple(sidecars))
    if key not in _MEMO or _MEMO[key][0] is not xs:
        _MEMO[key] = (xs, facts(xs, sidecars))
    return _MEMO[key][1]


def lookup(table, pid, hlo_op):
    """The facts of a kernel's instruction: the last "::" part of its hlo_op in program @pid."""
    if pid is None or hlo_op is None:
        return None
    return table.get((pid & U64, hlo_op.split("::")[-1]))
