#!/usr/bin/python3
"""test_hlo_views.py - the views that read a profile's HLO (TAP).

kernels.json names an XLA kernel's framework op (TfOpName() of its HLO
instruction) and ops.json gives a GPU op without a category its
instruction's (docs/stats.md), both equal to the independent
recomputation (oracle_hlo_facts.py through oracle_stats.py):

- a generated GPU host whose metadata plane is stripped of its HloProtos,
  so the session's sidecar files (xprofs-gen --sidecars) are its only HLO:
  through the CLI with --hlo (and not without: the sidecars must matter),
  and through a real mount of the session (host views and the session's
  ops.json, the CLI's bytes with the same programs);
- the shared samples (skipped with a message without ../shared): the
  GPU hosts with HLO in their metadata plane, and the session with
  sidecars (gpu_mi300_jax_conv_session), where every device op row of a
  GPU plane gets a category.

And the FLOPs the GPU op rows take from the HLO (XProf's
PerformanceInfoWrapper over HloCostAnalysis): the generated dot,
convolution and gemm custom-call rows carry the FLOPs worked out by hand
times their occurrences; on the samples every dot / gemm / convolution row
has FLOPs, at a rate no higher than the device's peak; a kernel whose
instruction the present HLO lacks (a program whose sidecar is left out)
goes to "unattributed".
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import oracle
import oracle_hlo_facts
import oracle_stats
import xmount
import xproto

from xproto import CLI, GEN, SHARED


def cli(path, view, sidecars=()):
    args = [CLI, path, "--view", view]
    for s in sidecars:
        args += ["--hlo", s]
    r = subprocess.run(args, capture_output=True, check=False)
    return r.returncode, r.stdout, r.stderr.decode()[-300:]


def oracle_ok(t, label, path, xs, sidecars):
    """ops.json and kernels.json of @path (rendered with @sidecars) against the oracle."""
    oracle_stats.SIDECARS[path] = tuple(sidecars)
    before = len(xproto.failures)
    rc, out, err = cli(path, "ops", sidecars)
    if rc == 0:
        oracle_stats.check_ops(path, xs, json.loads(out), oracle.obj, oracle.stat_value,
                               oracle.stat_name, oracle.names, oracle.fail)
    else:
        oracle.fail("%s: ops.json failed: %s" % (path, err))
    t.ok(len(xproto.failures) == before, "%s: ops.json equals the recomputation" % label,
         xproto.failures[before:][:3])
    before = len(xproto.failures)

    def run_view():
        rc, out, _ = cli(path, "kernels", sidecars)
        return rc, json.loads(out) if rc == 0 else None
    oracle_stats.check_kernels(path, xs, run_view, oracle.stat_value, oracle.stat_name,
                               oracle.names, oracle.fail)
    t.ok(len(xproto.failures) == before, "%s: kernels.json equals the recomputation" % label,
         xproto.failures[before:][:3])


def gpu_rows(ops_json):
    """(plane, row) of every op row of a GPU plane in ops.json."""
    return [(p["name"], o) for p in ops_json["planes"] if p["name"].startswith("/device:GPU:")
            for o in p["ops"]]


def categorized(t, label, rows, facts):
    """Every row (plane, op) named after an HLO instruction of @facts has a category;
    the others (memcpys, kernels of no XLA op) are counted."""
    hlo_names = {name for _, name in facts}
    mine = [(p, o) for p, o in rows if o["name"].split("::")[-1] in hlo_names]
    empty = [(p, o["name"]) for p, o in mine if not o["category"]]
    t.ok(mine and not empty, "%s: every HLO op row has a category (%d of %d rows)" %
         (label, len(mine), len(rows)), empty[:5])


# FLOPs of one occurrence of the generator's instructions, by hand (docs/hlo.md)
HAND_FLOPS = {
    "dot.4": 2 * 256 * 1024 * 512,                      # [256,1024] x [1024,512]
    "custom-call.13": 2 * 256 * 1024 * 512,             # the same as a cuBLAS gemm
    "convolution.2": 2 * 16 * 32 * 8 * 94 * 94,         # 3x3, padding 1, over 32x32
}


def by_hand(t, label, ops_json):
    """Every generated row named in HAND_FLOPS: FLOPs = by hand x occurrences, model
    FLOPs the same (16/32-bit operands: no device discount), a rate within the peak."""
    rows = [(p, o) for p, o in gpu_rows(ops_json) if o["name"] in HAND_FLOPS]
    bad = [(p, o["name"], o["program"], o["occurrences"], o["flops"]) for p, o in rows
           if o["flops"] != HAND_FLOPS[o["name"]] * o["occurrences"] or
           o["model_flops"] != o["flops"]]
    t.ok(len({o["name"] for _, o in rows}) == len(HAND_FLOPS) and not bad,
         "%s: dot / gemm / convolution rows carry the FLOPs by hand x occurrences (%d rows)"
         % (label, len(rows)), bad[:5])
    within_peak(t, label, ops_json, rows)


def within_peak(t, label, ops_json, rows):
    """Each (plane, row) of @rows has a FLOP rate, no higher than its plane's peak where
    ops.json has one (the generator writes no device capabilities: no peak)."""
    peak = {p["name"]: p["peak_flops_per_s"] for p in ops_json["planes"]}
    over = [(p, o["name"], o["flops_per_s"], peak[p]) for p, o in rows
            if o["flops_per_s"] is None or (peak[p] is not None and o["flops_per_s"] > peak[p])]
    t.ok(rows and not over, "%s: %d rows' FLOP rates within the peak %s" % (
        label, len(rows), sorted({str(v) for v in peak.values()})), over[:5])


def missing_program(t, host, xs, sidecars):
    """One program's sidecar left out while the others are there: its kernels are
    unattributed (GetHloInstruction() finds nothing), the other rows stay."""
    left = [s for s in sidecars if os.path.basename(s).startswith("jit_forward(")]
    rest = [s for s in sidecars if s not in left]
    if not t.ok(left, "a sidecar of jit_forward to leave out", sidecars):
        return
    full = json.loads(cli(host, "ops", sidecars)[1])
    part = json.loads(cli(host, "ops", rest)[1])
    # (events of the table, unattributed events) per plane, with and without it
    counts = [{p["name"]: (p["events"], p["unattributed"]["events"]) for p in j["planes"]
               if p["name"].startswith("/device:GPU:")} for j in (full, part)]
    moved = {k: counts[1][k][1] - v[1] for k, v in counts[0].items()}
    kept = [o["name"] for _, o in gpu_rows(part) if o["program"] == "jit_forward(9)"]
    t.ok(all(counts[0][k][0] - counts[1][k][0] == moved[k] for k in moved) and
         sum(moved.values()) > 0 and not kept,
         "without jit_forward(9)'s HLO its %d kernels are unattributed, none kept" %
         sum(moved.values()), (counts, kept[:3]))
    oracle_ok(t, "CLI --hlo without jit_forward", host, xs, rest)


def matmul_or_conv(o, facts):
    """A row of a dot, convolution, gemm / cuDNN convolution custom call, or a fusion
    XLA names after one."""
    m = re.search(r"\((\d+)\)$", o["program"] or "")
    f = facts.get((int(m.group(1)), o["name"]), {}) if m else {}
    return f.get("opcode") in ("dot", "convolution") or \
        any(w in o["name"] for w in ("dot", "conv", "gemm")) or \
        any(w in f.get("target", "") for w in ("cublas", "cudnn"))


def sample_rows(t, label, ops_json, facts):
    """Every device op row has a category; dot / gemm / convolution rows have FLOPs at a
    rate within the peak."""
    rows = gpu_rows(ops_json)
    t.ok(rows and all(o["category"] for _, o in rows), "%s: every device op row has a "
         "category (%d rows)" % (label, len(rows)),
         [o["name"] for _, o in rows if not o["category"]][:5])
    mm = [(p, o) for p, o in rows if matmul_or_conv(o, facts)]
    t.ok(mm and all(o["flops"] for _, o in mm), "%s: %d dot / gemm / convolution rows have "
         "FLOPs" % (label, len(mm)), [(o["name"], o["flops"]) for _, o in mm][:5])
    within_peak(t, label, ops_json, mm)


def load(pb2, path):
    xs = pb2.XSpace()
    with open(path, "rb") as fh:
        xs.ParseFromString(fh.read())
    return xs


def generated(t, w, pb2):
    tmp = os.path.join(w.path, "gen")
    r = subprocess.run([GEN, "--kind", "gpu", "--events", "3000", "--hosts", "1", "--logdir",
                        tmp, "--run", "r", "--session", "s", "--sidecars"],
                       capture_output=True, check=False)
    if not t.ok(r.returncode == 0, "xprofs-gen writes a GPU session with sidecars",
                r.stderr.decode()[-300:]):
        return
    gdir = os.path.join(tmp, "r", "plugins", "profile", "s")
    sidecars = sorted(glob.glob(os.path.join(gdir, "*.hlo_proto.pb")))
    hosts = sorted(glob.glob(os.path.join(gdir, "*.xplane.pb")))
    t.ok(sidecars and hosts, "the session has hosts and sidecars", (hosts, sidecars))
    sess = w.session()
    # the host without the HLO of its metadata plane: the sidecars are all there is
    xs = load(pb2, hosts[0])
    for p in xs.planes:
        if p.name == "/host:metadata":
            del p.stats[:]
            for m in p.event_metadata.values():
                del m.stats[:]
    host = os.path.join(sess, "gpuhost.xplane.pb")
    with open(host, "wb") as fh:
        fh.write(xs.SerializeToString())
    t.ok(not oracle_hlo_facts.facts(xs), "the stripped host carries no HLO of its own")
    mine = []
    for s in sidecars:
        shutil.copy(s, sess)
        mine.append(os.path.join(sess, os.path.basename(s)))
    with_hlo = oracle_hlo_facts.facts(xs, mine)
    t.ok(len(with_hlo) > 0, "the sidecars hold instructions", len(with_hlo))
    oracle_ok(t, "CLI --hlo", host, xs, mine)
    # the sidecars matter: without them kernels.json names other ops
    _, plain, _ = cli(host, "kernels")
    _, hlo, _ = cli(host, "kernels", mine)
    k_plain = [k["op"] for k in json.loads(plain)["kernels"]]
    k_hlo = [k["op"] for k in json.loads(hlo)["kernels"]]
    t.ok(k_plain != k_hlo and any(":" in op for op in k_hlo),
         "kernels.json: --hlo gives framework ops (op_name:op_type)", k_hlo[:5])
    categorized(t, "CLI --hlo ops.json", gpu_rows(json.loads(cli(host, "ops", mine)[1])),
                with_hlo)
    by_hand(t, "CLI --hlo ops.json", json.loads(cli(host, "ops", mine)[1]))
    missing_program(t, host, xs, mine)
    # through a mount: the host views see the session's sidecars
    m = w.mount(os.path.join(w.path, "src"))
    base = os.path.join(m.mnt, "runs", "run", "s1")
    for view in ("kernels", "ops", "overview"):
        _, got = xmount.read_whole(os.path.join(base, "gpuhost", view + ".json"))
        t.same(got, cli(host, view, mine)[1], "mount gpuhost/%s.json: the CLI's bytes with "
               "the session's sidecars" % view, m.log_tail)
    _, got = xmount.read_whole(os.path.join(base, "ops.json"))
    r = subprocess.run([CLI, sess, "--session", "--view", "ops"], capture_output=True)
    t.same(got, r.stdout, "mount s1/ops.json: the CLI's session bytes", m.log_tail)
    categorized(t, "mount s1/ops.json",
                [("device", o) for o in json.loads(got)["device"]["ops"]], with_hlo)


def samples(t, pb2):
    root = os.path.join(SHARED, "samples")
    if not os.path.isdir(root):
        print("# SKIP: %s is absent: no shared samples checked" % root)
        return
    for path in sorted(glob.glob(os.path.join(root, "*", "*.xplane.pb"))):
        xs = load(pb2, path)
        if not any(p.name.startswith("/device:GPU:") for p in xs.planes):
            continue
        sidecars = sorted(glob.glob(os.path.join(os.path.dirname(path), "*.hlo_proto.pb")))
        if not oracle_hlo_facts.facts(xs, sidecars):
            continue
        label = os.path.relpath(path, root)
        oracle_ok(t, label, path, xs, sidecars)
        ops_json = json.loads(cli(path, "ops", sidecars)[1])
        facts = oracle_hlo_facts.facts(xs, sidecars)
        categorized(t, label + " ops.json", gpu_rows(ops_json), facts)
        sample_rows(t, label + " ops.json", ops_json, facts)


def body(t, w):
    pb2, tmp = xproto.load("xplane")
    shutil.rmtree(tmp, ignore_errors=True)
    generated(t, w, pb2)
    samples(t, pb2)


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-hlo-views-", body))
