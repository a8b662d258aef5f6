"""tests/hlo/oracle_cost.py - FLOPs and bytes per HLO instruction (hlo/cost.c)
against a recomputation from XLA's HloCostAnalysis.

    oracle_cost.py HLO_DUMP XPROFS_GEN

For every instruction of the generator's sidecar programs and the shared
samples' programs, `hlo-dump --cost` (xprofs_hlo_cost_get()) must give what
this file computes from the parsed HloProto, written from XLA's
xla/service/hlo_cost_analysis.cc and GpuHloCostAnalysis's custom calls
(gpu_hlo_cost_analysis.cc), and a few figures worked out by hand must come
out (a dot [8,64]x[64,32] is 32768 flops, ...). A figure the C code calls
unknown must be one this model cannot compute either, and the reverse.
"""
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import oracle_hlo
import xproto
from oracle_hlo import hlo_pb2
from xproto import fail

DUMP, GEN = oracle_hlo.DUMP, oracle_hlo.GEN
T = hlo_pb2.PrimitiveType
TUPLE, TOKEN, OPAQUE = T.Value("TUPLE"), T.Value("TOKEN"), T.Value("OPAQUE_TYPE")
PTR = 8  # XLA's kDefaultPointerSize

# HloCostAnalysis::HandleElementwiseOp(): these count as transcendentals
TRANSCENDENTAL = {"erf", "exponential", "log", "logistic", "power", "sqrt", "cbrt", "rsqrt",
                  "tanh", "sine", "cosine", "exponential-minus-one", "log-plus-one", "atan2",
                  "tan"}
# DfsHloVisitor's elementwise unary/binary handlers, compare, clamp, convert, select, ...
ELEMENTWISE = {"abs", "add", "and", "bitcast-convert", "ceil", "clamp", "compare", "complex",
               "convert", "count-leading-zeros", "divide", "floor", "imag", "is-finite",
               "maximum", "minimum", "multiply", "negate", "not", "or", "popcnt", "real",
               "reduce-precision", "remainder", "round-nearest-afz", "round-nearest-even",
               "select", "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign",
               "stochastic-convert", "subtract", "xor"}
# handlers that leave Preprocess()'s figures: no flops, operands + output bytes
PLAIN = {"all-gather", "all-gather-done", "all-gather-start", "all-reduce-done", "all-to-all",
         "async-done", "async-update", "batch-norm-grad", "batch-norm-inference",
         "batch-norm-training", "broadcast", "collective-broadcast", "collective-permute",
         "collective-permute-done", "collective-permute-start", "concatenate", "copy",
         "copy-done", "copy-start", "dynamic-reshape", "get-dimension-size", "iota",
         "optimization-barrier", "pad", "partition-id", "ragged-all-to-all", "recv",
         "recv-done", "reduce-scatter", "replica-id", "reshape", "reverse",
         "rng-get-and-update-state", "send", "send-done", "set-dimension-size", "topk"}
# no flops, no bytes
NOTHING = {"parameter", "constant", "get-tuple-element", "bitcast", "domain", "after-all",
           "add-dependency"}
GEMM = {"__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8"}
DNN_CONV = {"__cudnn$convForward", "__cudnn$convForwardGraph", "__cudnn$convBackwardInput",
            "__cudnn$convBackwardFilter", "__cudnn$convBiasActivationForward"}


U = None  # a figure the proto does not determine


def add(a, b):
    return U if a is U or b is U else a + b


def bits(t):
    name = T.Name(t)
    if name == "PRED":
        return 8
    m = re.match(r"[A-Z]+?(\d+)", name)
    return int(m.group(1)) if m else 0


def elements(s):
    return math.prod(s.dimensions) if s.element_type != TUPLE else 0


def is_array(s):
    return s.element_type not in (TUPLE, TOKEN, OPAQUE)


def size(s):
    """ShapeUtil::ByteSizeOf(shape, 8): the top level only."""
    if s.element_type == TUPLE:
        return PTR * len(s.tuple_shapes)
    if s.element_type == TOKEN:
        return 0
    if s.element_type == OPAQUE:
        return PTR
    return elements(s) * ((bits(s.element_type) + 7) // 8)


def leaves(s, what):
    if s.element_type == TUPLE:
        return sum(leaves(t, what) for t in s.tuple_shapes)
    return (elements(s) if what == "el" else size(s)) if is_array(s) else 0


def first(s):
    return s.tuple_shapes[0] if s.element_type == TUPLE and s.tuple_shapes else s


class Model:
    def __init__(self, module):
        self.comps = {c.id: c for c in module.computations}
        self.ins = {}
        for c in module.computations:
            for i in c.instructions:
                self.ins[(c.id, i.id)] = i
        self.comp_of = {}
        for c in module.computations:
            for i in c.instructions:
                self.comp_of[id(i)] = c

    def op(self, i, k):
        return self.ins[(self.comp_of[id(i)].id, i.operand_ids[k])]

    def sub(self, cid):
        """ProcessSubcomputation(): sums over every instruction."""
        fl = tr = by = 0
        for i in self.comps[cid].instructions:
            f, t, b, _, _ = self.cost(i)
            fl, tr, by = add(fl, f), add(tr, t), add(by, b)
        return fl, tr, by

    def calls(self, i):
        """call, async-start: the computation's sums; while: all called; conditional: max."""
        cids = list(i.called_computation_ids)
        if i.opcode in ("call", "async-start"):
            cids = cids[:1]
        subs = [self.sub(c) for c in cids]
        if i.opcode == "conditional":
            out = [U if any(x[k] is U for x in subs) else max(x[k] for x in subs)
                   for k in range(3)]
        else:
            out = [0, 0, 0]
            for x in subs:
                out = [add(a, b) for a, b in zip(out, x)]
        return out[0], out[1], out[2], U, U

    def dot_flops(self, lhs, out, contracting):
        w = 1
        for d in contracting:
            w *= lhs.dimensions[d]
        return 2 * elements(first(out)) * w

    def positions(self, wd, n_in, ker, out):
        """The valid (output, kernel) pairs of one spatial dimension, by brute force."""
        n = 0
        for k in range(ker):
            for o in range(out):
                u = o * wd.stride - wd.padding_low + k * wd.window_dilation
                if u >= 0 and u % wd.base_dilation == 0 and u // wd.base_dilation < n_in:
                    n += 1
        return n

    def conv_flops(self, i, out):
        d = i.convolution_dimension_numbers
        lhs, rhs = self.op(i, 0).shape, self.op(i, 1).shape
        pos = 1
        for k, wd in enumerate(i.window.dimensions):
            pos *= self.positions(wd, lhs.dimensions[d.input_spatial_dimensions[k]],
                                  rhs.dimensions[d.kernel_spatial_dimensions[k]],
                                  out.dimensions[d.output_spatial_dimensions[k]])
        fgc, bgc = max(i.feature_group_count, 1), max(i.batch_group_count, 1)
        return 2 * (lhs.dimensions[d.input_feature_dimension] // fgc) * \
            out.dimensions[d.output_feature_dimension] * \
            (lhs.dimensions[d.input_batch_dimension] // bgc) * pos

    def users(self, comp, h):
        return [u for u in comp.instructions if h.id in u.operand_ids]

    def fused_param(self, cid, n):
        return next(p for p in self.comps[cid].instructions
                    if p.opcode == "parameter" and p.parameter_number == n)

    def param_reads(self, comp, h):
        """FusionParameterReadBytes()."""
        n, seen = 0, False
        for u in self.users(comp, h):
            if u.opcode == "fusion":
                for j, o in enumerate(u.operand_ids):
                    if o == h.id:
                        cid = u.called_computation_ids[0]
                        n += self.param_reads(self.comps[cid], self.fused_param(cid, j))
            elif u.opcode == "slice" or (u.opcode == "dynamic-slice" and
                                         u.operand_ids[0] == h.id):
                n += size(u.shape)
            elif u.opcode == "dynamic-update-slice" and u.operand_ids[0] == h.id:
                pass
            elif u.opcode in ("broadcast", "reshape"):
                n += size(h.shape)
            elif not seen:
                seen = True
                n += size(h.shape)
        return n

    def fusion(self, i, fl_tr):
        cid = i.called_computation_ids[0]
        comp = self.comps[cid]
        root = next(x for x in comp.instructions if x.id == comp.root_id)
        fl, tr, _ = fl_tr
        s = i.shape
        if s.element_type != TUPLE:
            out = size(self.ins[(cid, root.operand_ids[1])].shape) \
                if root.opcode == "dynamic-update-slice" else (size(s) if is_array(s) else 0)
        else:
            out = 0
            for k, t in enumerate(s.tuple_shapes):
                e = self.ins[(cid, root.operand_ids[k])] if root.opcode == "tuple" else None
                if e is not None and is_array(t) and e.opcode == "dynamic-update-slice":
                    out += size(self.ins[(cid, e.operand_ids[1])].shape)
                else:
                    out += leaves(t, "size")
        by = out + sum(size(x.shape) for x in comp.instructions
                       if x.opcode == "constant" and elements(x.shape) > 1)
        rd = 0
        for k in range(len(i.operand_ids)):
            rd += self.param_reads(comp, self.fused_param(cid, k))
        return fl, tr, by + rd, rd, out

    def cost(self, i):
        """(flops, transcendentals, bytes, read, written) of instruction @i."""
        s, op = i.shape, i.opcode
        ops = [self.op(i, k).shape for k in range(len(i.operand_ids))]
        by = size(s) + sum(size(o) for o in ops)
        rd = sum(size(o) for o in ops if is_array(o))
        wr = size(s) if is_array(s) else 0
        if op in ELEMENTWISE:
            return elements(s), 0, by, rd, wr
        if op in TRANSCENDENTAL:
            return 0, elements(s), by, rd, wr
        if op in PLAIN:
            return 0, 0, by, rd, wr
        if op in NOTHING:
            return 0, 0, 0, 0, 0
        if op == "tuple":
            return 0, 0, size(s), 0, 0
        if op == "slice":
            return 0, 0, 2 * size(s), size(s), size(s)
        if op == "dynamic-slice":
            return 0, 0, 2 * size(s) + size(ops[1]), size(s) + rd - size(ops[0]), size(s)
        if op == "dynamic-update-slice":
            return 0, 0, 2 * size(ops[1]) + size(ops[2]), rd - size(ops[0]), size(ops[1])
        if op == "gather":
            return 0, 0, 2 * size(s) + size(ops[1]), size(s) + size(ops[1]), size(s)
        if op == "sort":
            n = elements(ops[0])
            return n * max(0, math.ceil(math.log2(n)) if n else 0), 0, by, rd, wr
        if op in ("call", "async-start", "while", "conditional"):
            return self.calls(i)
        if op == "dot":
            dn = i.dot_dimension_numbers
            return self.dot_flops(ops[0], s, dn.lhs_contracting_dimensions), 0, by, rd, wr
        if op == "convolution":
            return self.conv_flops(i, s), 0, by, rd, wr
        if op == "all-reduce":
            lb = leaves(s, "size")
            return leaves(s, "el"), 0, lb + sum(size(o) for o in ops), rd, \
                lb if is_array(s) else 0
        if op in ("reduce", "reduce-window", "map"):
            fl, tr, _ = self.sub(i.called_computation_ids[0])
            if fl is U or tr is U:
                return U, U, by, rd, wr
            if op == "map":
                n = elements(s)
            elif op == "reduce":
                n = elements(first(ops[0])) - elements(first(s))
            else:
                w = math.prod(d.size for d in i.window.dimensions)
                n = (w - 1) * elements(first(s))  # no reduce-then-broadcast window here
            return fl * n, tr * n, by, rd, wr
        if op == "fusion":
            return self.fusion(i, self.sub(i.called_computation_ids[0]))
        if op == "custom-call":
            t = i.custom_call_target
            if t in GEMM:
                cfg = json.loads(i.backend_config)["gemm_backend_config"]
                lc = [int(x) for x in cfg["dot_dimension_numbers"]["lhs_contracting_dimensions"]]
                return self.dot_flops(ops[0], s, lc), 0, by, rd, wr
            if t in DNN_CONV:
                out = first(s)
                if s.element_type == TUPLE:
                    by += size(out) - size(s)
                return self.conv_flops(i, out), 0, by, rd, wr
            return U, U, U, U, U
        if op == "transpose":
            return 0, 0, U, U, U
        return U, U, U, U, U


KEYS = ("flops", "transcendentals", "bytes", "read", "written")


def check_program(label, got, data):
    h = hlo_pb2.HloProto()
    h.ParseFromString(data)
    m = Model(h.hlo_module)
    n = bad = 0
    byname = {}
    for c, gc in zip(h.hlo_module.computations, got["computations"]):
        for i, gi in zip(c.instructions, gc["instructions"]):
            have = gi["cost"]
            byname[i.name] = have
            want = dict(zip(KEYS, m.cost(i)))
            if (None in [have[k] for k in KEYS]) != bool(have.get("reason")):
                fail("%s %s: unknown figures and a reason do not go together: %r" % (
                    label, i.name, have))
            diff = [k for k in KEYS if have[k] != want[k]]
            if diff and bad < 10:
                fail("%s %s (%s): %s: C %s, oracle %s" % (
                    label, i.name, i.opcode, ",".join(diff), [have[k] for k in diff],
                    [want[k] for k in diff]))
            bad += bool(diff)
            n += 1
    return n, byname


# figures worked out by hand for the generator's program (docs/hlo.md)
HAND = {
    "dot.62": {"flops": 32768, "bytes": (8 * 64 + 64 * 32 + 8 * 32) * 4},
    "dot.4": {"flops": 2 * 256 * 1024 * 512},
    "dot.20": {"flops": 2 * 8 * 128 * 32 * 64},
    # 3x3 padding 1 over 32: 31 + 32 + 31 positions per dimension
    "convolution.2": {"flops": 2 * 16 * 32 * 8 * 94 * 94},
    "convolution.18": {"flops": 2 * 8 * 32 * 8 * 94 * 94},
    "convolution.34": {"flops": 2 * 16 * 32 * 8 * 47 * 47},
    "convolution.63": {"flops": 2 * 16 * 32 * 8 * 92 * 92},
    "convolution.65": {"flops": 2 * 4 * 8 * 8 * 22 * 22},
    "cudnn-conv.1": {"flops": 2 * 16 * 32 * 8 * 94 * 94,
                     "bytes": (8 * 32 * 32 * 16 + 3 * 3 * 16 * 32 + 8 * 32 * 32 * 32) * 4},
    "custom-call.13": {"flops": 2 * 256 * 1024 * 512},
    "cublas-lt.68": {"flops": 2 * 4 * 64 * 32 * 128},
    "tanh.50": {"flops": 0, "transcendentals": 256 * 512},
    "add.10": {"flops": 256 * 512, "transcendentals": 0, "bytes": 3 * 256 * 512 * 4},
    "reduce.12": {"flops": 256 * 512 - 256},
    "reduce-window.66": {"flops": 2 * 256 * 510},
    "fusion.0": {"flops": 2 * 256 * 512, "transcendentals": 256 * 512,
                 "bytes": 3 * 256 * 512 * 4},
    "fusion.1": {"flops": 2 * 256 * 1024 * 512 + 256 * 1024,
                 "bytes": (256 * 512 + 512 * 1024 + 1024 + 256 * 1024) * 4},
    "fusion.69": {"flops": 128 * 512, "transcendentals": 2 * 128 * 512,
                  "bytes": 3 * 128 * 512 * 4},
    "tuple.root": {"bytes": 16},
}


def check_hand(label, byname):
    n = 0
    for name, want in HAND.items():
        have = byname.get(name)
        if have is None:
            fail("%s: no instruction %s" % (label, name))
            continue
        for k, v in want.items():
            n += 1
            if have[k] != v:
                fail("%s %s: %s is %r, by hand %r" % (label, name, k, have[k], v))
    return n


def dump(mode, paths):
    r = subprocess.run([DUMP, "--cost", mode] + list(paths), capture_output=True, check=False)
    if r.returncode != 0:
        fail("hlo-dump --cost %s: exit %d: %s" % (mode, r.returncode, r.stderr.decode()[-500:]))
        return []
    return json.loads(r.stdout)["programs"]


def check_files(label, files, hand=False):
    n = 0
    for f, p in zip(files, dump("--sidecar", files)):
        if p.get("error"):
            fail("%s %s: %s" % (label, f, p["error"]))
            continue
        with open(f, "rb") as fh:
            k, byname = check_program("%s %s" % (label, os.path.basename(f)), p, fh.read())
        n += k
        if hand:
            print("ok: %d figures by hand in %s" % (check_hand(label, byname),
                                                     os.path.basename(f)))
            hand = False
    print("ok: %s: %d programs, %d instructions' costs" % (label, len(files), n))


def hostile_costs(tmp):
    """Programs that must give unknown figures, with their reason, quickly."""
    from oracle_hlo import comp, ins, module
    cases = []
    # a convolution whose base-dilated window needs 2^20 x 2^19 positions
    x = ins(1, "x", "parameter", dims=(1, 1 << 20, 1))
    k = ins(2, "k", "parameter", dims=(1 << 19, 1, 1), ops=())
    k.parameter_number = 1
    c = ins(3, "conv", "convolution", dims=(1, 1 << 19, 1), ops=(1, 2))
    wd = c.window.dimensions.add()
    wd.size, wd.stride, wd.base_dilation, wd.window_dilation = 1 << 19, 1, 2, 1
    d = c.convolution_dimension_numbers
    d.input_batch_dimension, d.input_feature_dimension = 0, 2
    d.input_spatial_dimensions.append(1)
    d.kernel_input_feature_dimension, d.kernel_output_feature_dimension = 1, 2
    d.kernel_spatial_dimensions.append(0)
    d.output_batch_dimension, d.output_feature_dimension = 0, 2
    d.output_spatial_dimensions.append(1)
    cases.append(("huge window", module([comp(9, "main", [x, k, c])]), "conv", "flops",
                  "XPROFS_HLO_COST_WORK_MAX"))
    # calls nested 100 deep
    comps = [comp(100, "c0", [ins(1000, "p0", "parameter")])]
    for j in range(1, 100):
        comps.append(comp(100 + j, "c%d" % j, [ins(1000 + 2 * j, "q%d" % j, "parameter"),
                                               ins(1001 + 2 * j, "call%d" % j, "call",
                                                   ops=[1000 + 2 * j], called=[99 + j])]))
    cases.append(("deep calls", module(comps), "call99", "flops", "deeper"))
    # a reduce whose output has more elements than its input
    r = comp(5, "region", [ins(50, "a", "parameter", dims=()), ins(51, "b", "parameter",
                                                                   dims=()),
                           ins(52, "s", "add", dims=(), ops=(50, 51))])
    r.instructions[1].parameter_number = 1
    red = ins(3, "red", "reduce", dims=(64,), ops=(1,), called=(5,))
    cases.append(("negative count", module([r, comp(9, "main", [ins(1, "x", "parameter"),
                                                               red])]), "red", "flops",
                  "negative"))
    for label, h, name, key, word in cases:
        path = os.path.join(tmp, "cost-%s.pb" % label.replace(" ", "-"))
        with open(path, "wb") as fh:
            fh.write(h.SerializeToString())
        progs = dump("--raw", [path])
        got = [i["cost"] for c in (progs[0].get("computations") or [] if progs else [])
               for i in c["instructions"] if i["name"] == name]
        if len(got) != 1 or got[0][key] is not None or word not in (got[0]["reason"] or ""):
            fail("hostile cost %s: %s of %s is %r, want unknown saying %r" % (
                label, key, name, got, word))
    print("ok: %d hostile programs give unknown figures with their reason" % len(cases))


def check_samples():
    samples = os.path.join(xproto.SHARED, "samples")
    conv = sorted(glob.glob(os.path.join(samples, "*", "*.hlo_proto.pb")))
    if not conv:
        print("SKIP: no sidecars under %s" % samples)
        return
    check_files("samples", conv)
    for x in sorted(glob.glob(os.path.join(samples, "*", "*.xplane.pb"))):
        label, n = os.path.relpath(x, samples), 0
        for p, (pid, data) in zip(dump("--xspace", [x]), oracle_hlo.metadata_protos(x)):
            n += check_program("%s program %d" % (label, pid), p, data)[0]
        print("ok: %s: %d instructions' costs" % (label, n))


def main():
    with tempfile.TemporaryDirectory(prefix="xprofs-hcost-") as tmp:
        r = subprocess.run([GEN, "--kind", "gpu", "--events", "3000", "--hosts", "1",
                            "--logdir", tmp, "--run", "r", "--session", "s", "--sidecars"],
                           capture_output=True, check=False)
        if r.returncode:
            fail("xprofs-gen: %s" % r.stderr.decode()[-500:])
        sidecars = sorted(glob.glob(os.path.join(tmp, "r", "plugins", "profile", "s",
                                                 "*.hlo_proto.pb")))
        if not sidecars:
            fail("xprofs-gen wrote no sidecars")
        check_files("gen", sidecars, hand=True)
        hostile_costs(tmp)
    check_samples()
    sys.exit(xproto.status())


if __name__ == "__main__":  # imported by tests/decode/oracle_hlo_facts.py
    main()
