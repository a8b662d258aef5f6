"""steps_profiles.py - small XSpaces for XProf's steps, verdict and duty cycle.

build(pb2, dir) writes them and returns {name: path}; each holds one rule
of docs/stats.md (steps.json, overview.json):

- tpuduty: four TPU planes, two naming the same chip (core_details), one
           without, one alone on its chip; an off-duty "infeed" op under
           another core's op, "XLA Modules" events wider than the ops, ops
           touching end to start, a zero-length op, an op with its device
           timespan, a Steps event past the ops (ConstructDutyCycleTracker(),
           DutyCycleCombiner, IdleTimeRatio()).
- nomarker: a GPU kernel and no step marker, XSpace warnings (one twice)
           and an error: XProf's "no step marker" diagnostic and verdict.
- gpus:    two GPUs whose step lines (kThreadIdStepInfo) mark groups 0 and 1
           with different lengths (StepTime(): the longest), kernels of both
           GPUs in one step, a MemcpyHtoD without correlation_id (left out),
           a group without a marker, a "Steps" line by name only (not a step
           line on GPU), host step markers (unused with devices) and a
           third GPU whose longer marker of group 0 does not count (no
           kernel of group 0 there).
- gpuredo: a stream of 6,000 kernels over ten steps (past an index
           checkpoint) and a second GPU whose longer marker of step 8 has no
           kernel of it: step 8's span changes, so pass 2 runs again over that
           step's time only (stats/steps-sweep.c redo_window()), seeking past
           the checkpoint; copies into and out of the step's time.
- gpunosteps: a grouped GPU without a step line: kernels of two groups, and
           no steps (XProf derives a Steps line only on a space not grouped
           yet: PreprocessSingleHostXSpace(), IsXSpaceGrouped()), with the
           "no step marker" diagnostic.
- tpusteps: two TPU cores: a group on one core only (dropped by the
           intersection), a step with only an infeed op (not well formed),
           markers with device_offset_ps / device_duration_ps.
- hostonly: host steps from an explicit marker ("train...") and a step_name
           stat; IteratorGetNext, MemcpyHtoD, EagerExecute (not real
           compute), a group without a marker, a marked group without host
           compute (not well formed).
"""
import stats_profiles
from stats_profiles import Plane


def core_details(pl, raw):
    st = pl.p.stats.add()
    st.metadata_id = pl.stat_id("core_details")
    st.bytes_value = raw


def tpuduty(xs):
    md = {"hlo_category": "convolution", "program_id": 5}
    t0 = Plane(xs, 1, "/device:TPU:0")
    core_details(t0, b"\x10\x00\x20\x00")  # device_ordinal 0, local_chip_id 0
    mods = t0.line(1, "XLA Modules")
    t0.event(mods, "jit_f(5)", 0, 10000000)
    ops = t0.line(2, "XLA Ops")
    t0.event(ops, "conv.1", 1000000, 2000000, dict(md), symbol_id=1)
    t0.event(ops, "infeed.2", 3000000, 2000000, {"hlo_category": "infeed", "program_id": 5},
             symbol_id=2)
    t0.event(ops, "conv.3", 6000000, 1000000, dict(md), symbol_id=3)
    t1 = Plane(xs, 2, "/device:TPU:1")
    core_details(t1, b"\x10\x01")  # local_chip_id absent: proto3's 0, the same chip
    ops = t1.line(2, "XLA Ops")
    t1.event(ops, "conv.4", 2000000, 2000000, dict(md), symbol_id=4)
    t1.event(ops, "conv.5", 7000000, 1000000, dict(md), symbol_id=5)
    t2 = Plane(xs, 3, "/device:TPU:2")  # no core_details: a chip of its own
    ops = t2.line(2, "XLA Ops")
    t2.event(ops, "conv.6", 0, 1000000, dict(md), symbol_id=6)
    t2.event(ops, "conv.7", 500000, 1500000, dict(md), symbol_id=7)
    steps = t2.line(3, "Steps")
    t2.event(steps, "0", 0, 4000000, group_id=0, device_offset_ps=0,
             device_duration_ps=4000000)
    # a chip of its own by core_details: its lines walked one by one, no merge
    t3 = Plane(xs, 4, "/device:TPU:3")
    core_details(t3, b"\x10\x03\x20\x03")
    mods = t3.line(1, "XLA Modules")
    t3.event(mods, "jit_g(6)", 20000000, 9000000)
    ops = t3.line(2, "XLA Ops")
    t3.event(ops, "conv.8", 21000000, 2000000, dict(md), symbol_id=8)
    t3.event(ops, "infeed.9", 23000000, 2000000, {"hlo_category": "infeed", "program_id": 5},
             symbol_id=9)
    t3.event(ops, "conv.10", 25000000, 0, dict(md), symbol_id=10)
    t3.event(ops, "conv.11", 26000000, 1000000, dict(md), symbol_id=11,
             device_offset_ps=26500000, device_duration_ps=1000000)


def nomarker(xs):
    g = Plane(xs, 1, "/device:GPU:0")
    g.set_stat(g.p, "device_vendor", "Nvidia")
    k = g.line(1, "Stream #1(Kernel)")
    g.event(k, "gemm", 0, 1000000, correlation_id=1)  # no group_id: no derived step either
    xs.warnings.extend(["w2", "w1", "w2"])
    xs.errors.append("e")


STEP_INFO = -559038737  # kThreadIdStepInfo


def gpu(xs, pid, n):
    g = Plane(xs, pid, "/device:GPU:%d" % n)
    g.set_stat(g.p, "device_vendor", "Nvidia")
    return g


def gpus(xs):
    g0, g1 = gpu(xs, 1, 0), gpu(xs, 2, 1)
    st = g0.line(STEP_INFO, "Steps")
    g0.event(st, "0", 0, 10000000, group_id=0)
    g0.event(st, "1", 12000000, 8000000, group_id=1)
    k = g0.line(1, "Stream #1(Kernel)")
    kd = "regs:32 static_shared:0 dynamic_shared:1024 grid:8,1,1 block:128,1,1 occ_pct:50.0"
    g0.event(k, "gemm", 0, 6000000, group_id=0, correlation_id=1, kernel_details=kd,
             hlo_op="dot.1", program_id=7)  # an XLA op: ops.json lists it
    g0.event(k, "nccl_all_reduce", 5000000, 3000000, group_id=0, correlation_id=2)
    g0.event(k, "gemm", 12000000, 6000000, group_id=1, correlation_id=3, hlo_op="dot.1",
             program_id=7)
    c = g0.line(2, "Stream #2(MemcpyH2D)")
    g0.event(c, "MemcpyHtoD", 8000000, 1000000, group_id=0)  # no correlation_id
    g0.event(c, "MEMCPYHtoD", 9000000, 500000, group_id=0, correlation_id=4)
    st = g1.line(STEP_INFO, "Steps")
    g1.event(st, "0", 500000, 10500000, group_id=0)
    g1.event(st, "1", 12000000, 7000000, group_id=1)
    fake = g1.line(99, "Steps")  # a Steps line by name only: not one on GPU
    g1.event(fake, "1", 0, 50000000, group_id=1)
    k = g1.line(1, "Stream #1(Kernel)")
    g1.event(k, "gemm", 1000000, 3000000, group_id=0, correlation_id=5)
    g1.event(k, "gemm", 13000000, 1000000, group_id=1, correlation_id=6)
    g1.event(k, "gemm", 30000000, 1000000, group_id=5, correlation_id=7)  # no marker
    g2 = gpu(xs, 4, 2)  # the longest marker of group 0, but no kernel of it: it does not count
    st = g2.line(STEP_INFO, "Steps")
    g2.event(st, "0", 0, 30000000, group_id=0)
    k = g2.line(1, "Stream #1(Kernel)")
    g2.event(k, "gemm", 0, 1000000, group_id=9, correlation_id=8)
    h = Plane(xs, 3, "/host:CPU")
    t = h.line(1, "python")
    h.event(t, "train_step", 0, 40000000, group_id=0)


def gpuredo(xs):
    g0 = gpu(xs, 1, 0)
    st = g0.line(STEP_INFO, "Steps")
    for s in range(10):
        g0.event(st, str(s), s * 1000000, 1000000, group_id=s)
    k = g0.line(1, "Stream #1(Kernel)")
    for i in range(6000):  # 600 a step, past one index checkpoint (every 4,096 events)
        s = i * 10 // 6000
        g0.event(k, "gemm", s * 1000000 + (i % 600) * 1600 + 100, 1000 + (i % 3) * 400,
                 group_id=s, correlation_id=i + 1)
    c = g0.line(2, "Stream #2(MemcpyH2D)")
    g0.event(c, "MEMCPYHtoD", 7900000, 300000, group_id=8, correlation_id=7001)  # into step 8
    g0.event(c, "MEMCPYHtoD", 8950000, 200000, group_id=8, correlation_id=7002)  # out of it
    g1 = gpu(xs, 2, 1)  # the longest marker of group 8, but no kernel of it: it does not count
    st = g1.line(STEP_INFO, "Steps")
    g1.event(st, "8", 7500000, 2000000, group_id=8)
    k = g1.line(1, "Stream #1(Kernel)")
    g1.event(k, "gemm", 8100000, 1000, group_id=3, correlation_id=7003)


def gpunosteps(xs):
    g = gpu(xs, 1, 0)
    a, b = g.line(1, "Stream #1(Kernel)"), g.line(2, "Stream #2(Kernel)")
    g.event(a, "gemm", 0, 2000000, group_id=0, correlation_id=1)
    g.event(b, "gemm", 1000000, 2000000, group_id=0, correlation_id=2)
    g.event(a, "gemm", 3000000, 1000000, group_id=1, correlation_id=3)
    g.event(a, "gemm", 4000000, 1000000, group_id=0, correlation_id=4)  # group 0 again


def tpusteps(xs):
    md = {"hlo_category": "convolution"}
    t0 = Plane(xs, 1, "/device:TPU:0")
    st = t0.line(1, "Steps")
    for g, (b, d) in enumerate([(0, 4000000), (4000000, 4000000), (8000000, 4000000),
                                (12000000, 2000000)]):
        t0.event(st, str(g), b + 7, d, group_id=g, device_offset_ps=b, device_duration_ps=d)
    ops = t0.line(2, "XLA Ops")
    t0.event(ops, "conv.1", 0, 3000000, dict(md), group_id=0)
    t0.event(ops, "conv.2", 4000000, 3000000, dict(md), group_id=1)
    t0.event(ops, "conv.3", 8000000, 1000000, dict(md), group_id=2)
    t0.event(ops, "infeed.4", 12000000, 1000000, {"hlo_category": "infeed"}, group_id=3)
    t1 = Plane(xs, 2, "/device:TPU:1")
    st = t1.line(1, "Steps")
    t1.event(st, "0", 0, 5000000, group_id=0)
    t1.event(st, "1", 4000000, 4000000, group_id=1)
    t1.event(st, "3", 12000000, 2000000, group_id=3)
    ops = t1.line(2, "XLA Ops")
    t1.event(ops, "conv.5", 1000000, 3500000, dict(md), group_id=0)
    t1.event(ops, "all-reduce.6", 6000000, 2000000, {"hlo_category": "all-reduce"},
             group_id=1)
    t1.event(ops, "infeed.7", 12000000, 1000000, {"hlo_category": "infeed"}, group_id=3)


def hostonly(xs):
    h = Plane(xs, 1, "/host:CPU")
    t = h.line(1, "python")
    h.event(t, "train_step", 0, 10000000, group_id=0)
    h.event(t, "matmul", 1000000, 4000000, group_id=0)
    h.event(t, "IteratorGetNext", 5000000, 2000000, group_id=0)
    h.event(t, "EagerExecute: add", 7000000, 2000000, group_id=0)
    h.event(t, "step", 10000000, 10000000, group_id=1, step_name="s1")
    h.event(t, "matmul", 11000000, 1000000, group_id=1)
    h.event(t, "matmul", 20000000, 1000000, group_id=2)  # no marker
    h.event(t, "train_other", 30000000, 1000000, group_id=3)
    h.event(t, "EagerExecute: mul", 30000000, 1000000, group_id=3)
    u = h.line(2, "copier")
    h.event(u, "MemcpyHtoD", 12000000, 1000000, group_id=1)


PROFILES = {"tpuduty": tpuduty, "nomarker": nomarker, "gpus": gpus, "tpusteps": tpusteps,
            "hostonly": hostonly, "gpunosteps": gpunosteps, "gpuredo": gpuredo}


def build(pb2, out_dir):
    return stats_profiles.write(pb2, out_dir, PROFILES, "steps")
