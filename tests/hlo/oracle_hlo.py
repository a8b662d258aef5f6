"""tests/hlo/oracle_hlo.py - the HLO reader (hlo/) against python3-protobuf.

    oracle_hlo.py HLO_DUMP XPROFS_GEN

Parses the same HloProtos with the generated module of hlo/proto/hlo.proto
and compares every program, computation and instruction field that
hlo-dump prints (what xprofs_hlo_instr_get() gives): on the generator's
sidecars and metadata plane, on the shared samples' sidecars and metadata
planes (skipped with a message when ../shared is absent), and on hostile
protos, each of which must fail with its errno and a reason that names
what is wrong.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import xcheck
import xproto
from xproto import fail

sys.path.insert(0, os.path.join(xproto.SRC, "tests", "decode"))
import oracle_hlo_facts  # noqa: E402  (XLA's ToCategory(), written again)

DUMP, GEN = (sys.argv + ["", ""])[1:3]
hlo_pb2, _tmp = xproto.load("hlo")
shutil.rmtree(_tmp, ignore_errors=True)
ELEMENTS_MAX = 1 << 40
EINVAL, E2BIG = 22, 7


def s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def dump(mode, paths):
    r = subprocess.run([DUMP, mode] + list(paths), capture_output=True, check=False)
    if r.returncode != 0:
        fail("hlo-dump %s %s: exit %d: %s" % (mode, paths, r.returncode, r.stderr.decode()[-500:]))
        return []
    return json.loads(r.stdout)["programs"]


def shape_of(s):
    tup = [shape_of(t) for t in s.tuple_shapes]
    el = 0
    if not tup and s.element_type != hlo_pb2.TUPLE:
        el = 1
        for d in s.dimensions:
            el *= d
    return {"type": s.element_type, "dims": list(s.dimensions), "tuple": tup, "elements": el}


def expect_program(h):
    """What hlo-dump must print for HloProto @h (a parsed message)."""
    m = h.hlo_module
    comps, first_of, gi = [], {}, 0
    for c in m.computations:
        for ins in c.instructions:
            first_of.setdefault(ins.name, gi)
            gi += 1
    gi = 0
    for c in m.computations:
        ins_of = {i.id: i for i in c.instructions}
        by_id = {}
        base = gi
        for k, ins in enumerate(c.instructions):
            by_id[ins.id] = base + k
        out = []
        for ins in c.instructions:
            md = ins.metadata
            w = [{"size": d.size, "stride": d.stride, "padding_low": d.padding_low,
                  "padding_high": d.padding_high, "window_dilation": d.window_dilation,
                  "base_dilation": d.base_dilation, "window_reversal": d.window_reversal}
                 for d in ins.window.dimensions]
            conv = None
            if ins.HasField("convolution_dimension_numbers"):
                cd = ins.convolution_dimension_numbers
                conv = {"input_batch": cd.input_batch_dimension,
                        "input_feature": cd.input_feature_dimension,
                        "input_spatial": list(cd.input_spatial_dimensions),
                        "kernel_input_feature": cd.kernel_input_feature_dimension,
                        "kernel_output_feature": cd.kernel_output_feature_dimension,
                        "kernel_spatial": list(cd.kernel_spatial_dimensions),
                        "output_batch": cd.output_batch_dimension,
                        "output_feature": cd.output_feature_dimension,
                        "output_spatial": list(cd.output_spatial_dimensions)}
            dot = None
            if ins.HasField("dot_dimension_numbers"):
                dd = ins.dot_dimension_numbers
                dot = {"lhs_contracting": list(dd.lhs_contracting_dimensions),
                       "rhs_contracting": list(dd.rhs_contracting_dimensions),
                       "lhs_batch": list(dd.lhs_batch_dimensions),
                       "rhs_batch": list(dd.rhs_batch_dimensions)}
            out.append({
                "id": ins.id, "name": ins.name, "opcode": ins.opcode,
                "shape": shape_of(ins.shape), "op_name": md.op_name, "op_type": md.op_type,
                "source_file": md.source_file, "source_line": md.source_line,
                "custom_call_target": ins.custom_call_target, "fusion_kind": ins.fusion_kind,
                "parameter_number": ins.parameter_number, "tuple_index": ins.tuple_index,
                "dimensions": list(ins.dimensions),
                "feature_group_count": max(ins.feature_group_count, 1),
                "batch_group_count": max(ins.batch_group_count, 1),
                "operands": list(ins.operand_ids), "called": list(ins.called_computation_ids),
                "window": w, "conv": conv, "dot": dot,
                "backend_config": ins.backend_config.decode("utf-8", "replace"),
                "category": oracle_hlo_facts.category(ins, ins_of),
                "found": first_of[ins.name]})
            gi += 1
        comps.append({"name": c.name, "id": c.id,
                      "root": by_id[c.root_id] if c.instructions else -1,
                      "is_fusion": c.is_fusion_computation, "instructions": out})
    entry = -1
    for i, c in enumerate(m.computations):
        if c.id == m.entry_computation_id:
            entry = i
            break
    else:
        entry = next((i for i, c in enumerate(m.computations)
                      if c.name == m.entry_computation_name), -1)
    return {"name": m.name, "id": m.id, "entry": entry,
            "entry_computation_name": m.entry_computation_name, "computations": comps}


KEYS = ("name", "id", "entry", "entry_computation_name", "computations")


def compare(label, got, data):
    h = hlo_pb2.HloProto()
    h.ParseFromString(data)
    want = expect_program(h)
    if got.get("error"):
        fail("%s: the reader failed: %s" % (label, got["error"]))
        return 0
    have = {k: got.get(k) for k in KEYS}
    d = xcheck.diff_json(have, want)
    if d:
        fail("%s: C and oracle differ at %s" % (label, d))
    return sum(len(c["instructions"]) for c in want["computations"])


def check_sidecars(label, files):
    progs = dump("--sidecar", files)
    if len(progs) != len(files):
        fail("%s: %d programs for %d sidecars" % (label, len(progs), len(files)))
        return
    n = 0
    for f, p in zip(files, progs):
        base = os.path.basename(f)
        mod, pid = base[:-len(").hlo_proto.pb")].rsplit("(", 1)
        if (p["module"], p["program_id"], p["source"]) != (mod, int(pid), "sidecar"):
            fail("%s: index entry %r for %s" % (label, p, base))
        with open(f, "rb") as fh:
            n += compare("%s %s" % (label, base), p, fh.read())
    print("ok: %s: %d sidecars, %d instructions" % (label, len(files), n))


def metadata_protos(xs_path):
    """ParseHloProtosFromXSpace(): [(program id, bytes)] of the first /host:metadata plane."""
    xplane_pb2, tmp = xproto.load("xplane")
    shutil.rmtree(tmp, ignore_errors=True)
    xs = xplane_pb2.XSpace()
    with open(xs_path, "rb") as fh:
        xs.ParseFromString(fh.read())
    return xproto.hlo_protos(xs)


def check_xspace(label, path):
    progs = dump("--xspace", [path])
    want = metadata_protos(path)
    if [(p["program_id"], p["length"]) for p in progs] != [(s64(i), len(b)) for i, b in want]:
        fail("%s: programs %r, oracle %r" % (label, [(p["program_id"], p["length"]) for p in progs],
                                            [(i, len(b)) for i, b in want]))
        return
    n = 0
    for p, (pid, data) in zip(progs, want):
        n += compare("%s program %d" % (label, pid), p, data)
    print("ok: %s: %d metadata-plane programs, %d instructions" % (label, len(progs), n))


# ---- hostile protos -------------------------------------------------------

def module(comps, **kw):
    h = hlo_pb2.HloProto()
    m = h.hlo_module
    m.name = kw.get("name", "hostile")
    m.id = 1
    for c in comps:
        m.computations.append(c)
    if comps:
        m.entry_computation_id = comps[-1].id
        m.entry_computation_name = comps[-1].name
    return h


def comp(cid, name, instrs, root=None):
    c = hlo_pb2.HloComputationProto(name=name, id=cid)
    for i in instrs:
        c.instructions.append(i)
    c.root_id = instrs[-1].id if root is None and instrs else (root or 0)
    return c


def ins(iid, name, opcode="add", dims=(4,), ops=(), called=()):
    i = hlo_pb2.HloInstructionProto(name=name, opcode=opcode, id=iid)
    i.shape.element_type = hlo_pb2.F32
    i.shape.dimensions.extend(dims)
    i.operand_ids.extend(ops)
    i.called_computation_ids.extend(called)
    return i


def good():
    fused = comp(10, "fused", [ins(1, "p0", "parameter"), ins(2, "neg", "negate", ops=[1])])
    main = comp(20, "main", [ins(3, "x", "parameter"),
                             ins(4, "fusion", "fusion", ops=[3], called=[10])])
    return module([fused, main])


def categories():
    """One instruction per category rule, and the category XLA's ToCategory() gives it."""
    want = []

    def add(i, cat, **kw):
        for k, v in kw.items():
            if isinstance(v, list):
                getattr(i, k).extend(v)
            else:
                setattr(i, k, v)
        want.append((i, cat))
        return i
    fused = comp(10, "fused", [ins(1, "p0", "parameter"), ins(2, "neg", "negate", ops=[1])])
    p = ins(3, "x", "parameter", dims=(4, 8))
    s16 = ins(4, "h", "parameter", dims=(4, 8))
    s16.shape.element_type = hlo_pb2.F16
    main = [p, s16]
    n = [100]

    def nxt(name, opcode, **kw):
        n[0] += 1
        return ins(n[0], "%s.%d" % (name, n[0]), opcode, dims=kw.pop("dims", (4, 8)),
                   ops=kw.pop("ops", [3]), called=kw.pop("called", []))
    for kind, cat in (("kLoop", "loop fusion"), ("kInput", "input fusion"),
                      ("kOutput", "output fusion"), ("kCustom", "custom fusion"),
                      ("kWhatever", "fusion")):
        main.append(add(nxt("fusion", "fusion", called=[10]), cat, fusion_kind=kind))
    for op in ("transpose", "copy", "reshape", "dynamic-reshape"):
        main.append(add(nxt(op, op), "data formatting"))
    for op in ("add", "exponential", "select", "clamp", "convert", "compare", "constant",
               "rng", "tanh", "stochastic-convert"):
        main.append(add(nxt(op, op), "non-fusion elementwise"))
    for op in ("convolution", "dot", "reduce", "custom-call", "broadcast", "all-reduce",
               "dynamic-update-slice", "slice", "pad", "parameter"):
        main.append(add(nxt(op, op), op))
    # bitcast-convert: elementwise only between types of one bit width
    same = add(nxt("bc", "bitcast-convert"), "non-fusion elementwise")
    same.shape.element_type = hlo_pb2.S32
    main.append(same)
    narrow = add(nxt("bc", "bitcast-convert", dims=(4, 8, 2), ops=[4]), "bitcast-convert")
    main.append(narrow)
    # map: elementwise with no dimensions or exactly 0..rank-1
    main.append(add(nxt("map", "map"), "non-fusion elementwise", dimensions=[0, 1]))
    main.append(add(nxt("map", "map"), "map", dimensions=[1, 0]))
    main.append(add(nxt("map", "map"), "non-fusion elementwise"))
    return module([fused, comp(20, "main", main)], name="categories"), want


def check_facts_cap(sidecars):
    """The facts table: every (program id, name) once under the default cap; under a small
    cap the instructions read before it, the table saying it was cut, and its memory
    within the cap."""
    want = set()
    for path in sidecars:
        pid = int(os.path.basename(path).rsplit("(", 1)[1].split(")")[0])
        h = hlo_pb2.HloProto()
        with open(path, "rb") as fh:
            h.ParseFromString(fh.read())
        want |= {(pid, i.name) for c in h.hlo_module.computations for i in c.instructions}
    for cap in (0, 48 << 10):
        r = subprocess.run([DUMP, "--summary", "--facts-max", str(cap), "--sidecar"] + sidecars,
                           capture_output=True, check=False)
        f = json.loads(r.stdout)["facts"] if r.returncode == 0 else None
        if f is None:
            fail("hlo-dump --facts-max %d: exit %d" % (cap, r.returncode))
        elif cap == 0 and (f["count"] != len(want) or f["truncated"]):
            fail("facts: %r, want %d instructions, not truncated" % (f, len(want)))
        elif cap and not (0 < f["count"] < len(want) and f["truncated"] and
                          f["bytes"] <= cap + 256):
            fail("facts under a %d-byte cap: %r (of %d)" % (cap, f, len(want)))
        else:
            print("ok: facts under cap %d: %d of %d instructions, %d bytes" %
                  (cap, f["count"], len(want), f["bytes"]))


def check_categories(tmp):
    h, want = categories()
    path = os.path.join(tmp, "categories.pb")
    with open(path, "wb") as fh:
        fh.write(h.SerializeToString())
    progs = dump("--raw", [path])
    if len(progs) != 1 or progs[0].get("error"):
        fail("categories: %r" % (progs[0].get("error") if progs else "no program"))
        return
    got = {i["name"]: i["category"] for c in progs[0]["computations"]
           for i in c["instructions"]}
    bad = [(i.name, got.get(i.name), cat) for i, cat in want if got.get(i.name) != cat]
    for b in bad:
        fail("category of %s: %r, XLA's ToCategory() gives %r" % b)
    compare("categories", progs[0], h.SerializeToString())
    print("ok: %d instructions, each category rule" % len(want))


def hostile_cases():
    """[(label, bytes, errno, words the reason must contain)]"""
    cases = []
    data = good().SerializeToString()
    cases.append(("truncated", data[:len(data) - 3], EINVAL, ["exceeds"]))
    mb = good().hlo_module.SerializeToString()
    n, var = len(mb) + 100, b""
    while n >= 0x80:
        var += bytes([n & 0x7f | 0x80])
        n >>= 7
    # HloProto.hlo_module's length claims 100 bytes more than there are
    cases.append(("bad length", b"\x0a" + var + bytes([n]) + mb, EINVAL, ["length"]))
    h = good()
    h.hlo_module.computations[1].instructions[1].operand_ids[0] = 99
    cases.append(("operand out of range", h.SerializeToString(), EINVAL, ["operand id 99"]))
    h = good()
    h.hlo_module.computations[0].instructions[1].called_computation_ids.append(10)
    cases.append(("fusion calling itself", h.SerializeToString(), EINVAL, ["cycle"]))
    h = good()
    h.hlo_module.computations[0].instructions[1].called_computation_ids.append(20)
    cases.append(("calls in a loop", h.SerializeToString(), EINVAL, ["cycle"]))
    h = good()
    h.hlo_module.computations[1].instructions[0].operand_ids.append(4)
    cases.append(("operand cycle", h.SerializeToString(), EINVAL, ["operand cycle"]))
    h = good()
    del h.hlo_module.computations[1].instructions[0].shape.dimensions[:]
    h.hlo_module.computations[1].instructions[0].shape.dimensions.extend([1 << 20, 1 << 20])
    cases.append(("2^40-element shape", h.SerializeToString(), EINVAL, ["2^40"]))
    h = good()
    h.hlo_module.computations[1].instructions[0].shape.dimensions.extend([-5])
    cases.append(("negative dim", h.SerializeToString(), EINVAL, ["negative"]))
    h = good()
    h.hlo_module.computations[1].instructions[1].called_computation_ids[0] = 77
    cases.append(("unknown computation", h.SerializeToString(), EINVAL, ["computation id 77"]))
    h = good()
    h.hlo_module.computations[1].instructions[1].id = 3
    h.hlo_module.computations[1].root_id = 3
    cases.append(("duplicate id", h.SerializeToString(), EINVAL, ["id 3"]))
    h = good()
    h.hlo_module.computations[1].root_id = 55
    cases.append(("bad root", h.SerializeToString(), EINVAL, ["root id 55"]))
    h = good()
    h.hlo_module.computations[1].id = 10
    cases.append(("duplicate computation id", h.SerializeToString(), EINVAL, ["same id"]))
    h = good()
    h.hlo_module.entry_computation_id = 5
    h.hlo_module.entry_computation_name = "nope"
    cases.append(("bad entry", h.SerializeToString(), EINVAL, ["entry"]))
    h = good()
    s = h.hlo_module.computations[1].instructions[0].shape
    for _ in range(40):
        s = s.tuple_shapes.add()
    cases.append(("deep tuple", h.SerializeToString(), EINVAL, ["nested"]))
    h = good()
    h.hlo_module.computations[1].instructions[0].shape.dimensions.extend([1] * 70)
    cases.append(("rank 71", h.SerializeToString(), EINVAL, ["rank"]))
    h = good()
    h.hlo_module.computations[1].instructions[1].feature_group_count = -2
    cases.append(("negative groups", h.SerializeToString(), EINVAL, ["group"]))
    cases.append(("no module", b"", EINVAL, ["no hlo_module"]))
    cases.append(("wrong wire type", b"\x08\x01", EINVAL, ["wire type"]))
    cases.append(("overlong varint", b"\x0a\x0b\x28" + b"\xff" * 10, EINVAL, []))
    return cases


def check_hostile(tmp):
    n = 0
    # the good base parses and matches
    path = os.path.join(tmp, "good.pb")
    with open(path, "wb") as fh:
        fh.write(good().SerializeToString())
    progs = dump("--raw", [path])
    if progs:
        compare("hostile base", progs[0], good().SerializeToString())
    for label, data, err, words in hostile_cases():
        path = os.path.join(tmp, "h%d.pb" % n)
        n += 1
        with open(path, "wb") as fh:
            fh.write(data)
        progs = dump("--raw", [path])
        if len(progs) != 1:
            fail("hostile %s: %d programs" % (label, len(progs)))
            continue
        p = progs[0]
        if p.get("errno") != err or not p.get("error"):
            fail("hostile %s: errno %r (want %d), error %r" % (label, p.get("errno"), err,
                                                                p.get("error")))
            continue
        for w in words:
            if w not in p["error"]:
                fail("hostile %s: reason %r does not say %r" % (label, p["error"], w))
    print("ok: %d hostile protos rejected with their reason" % n)


def main():
    tmp = tempfile.mkdtemp(prefix="xprofs-hlo-")
    try:
        # the generator's HLO: sidecars of a GPU session, and its metadata plane
        r = subprocess.run([GEN, "--kind", "gpu", "--events", "3000", "--hosts", "1",
                            "--logdir", tmp, "--run", "r", "--session", "s", "--sidecars"],
                           capture_output=True, check=False)
        if r.returncode:
            fail("xprofs-gen: %s" % r.stderr.decode()[-500:])
        sdir = os.path.join(tmp, "r", "plugins", "profile", "s")
        sidecars = sorted(glob.glob(os.path.join(sdir, "*.hlo_proto.pb")))
        if not sidecars:
            fail("xprofs-gen wrote no sidecars in %s" % sdir)
        else:
            check_sidecars("gen", sidecars)
            check_facts_cap(sidecars)
        for x in sorted(glob.glob(os.path.join(sdir, "*.xplane.pb"))):
            check_xspace("gen %s" % os.path.basename(x), x)
        check_hostile(tmp)
        check_categories(tmp)
        samples = os.path.join(xproto.SHARED, "samples")
        if not os.path.isdir(samples):
            print("SKIP: %s is absent: no shared samples checked" % samples)
        else:
            conv = os.path.join(samples, "gpu_mi300_jax_conv_session")
            check_sidecars("samples", sorted(glob.glob(os.path.join(conv, "*.hlo_proto.pb"))))
            for x in sorted(glob.glob(os.path.join(samples, "*", "*.xplane.pb"))):
                check_xspace(os.path.relpath(x, samples), x)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if xproto.failures:
        print("%d failures" % len(xproto.failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
