"""stats_profiles.py - small XSpaces with the edge cases of XProf's analyses.

build(pb2, dir) writes them and returns {name: path}. Each is made to hit
one rule of docs/stats.md:

- nested:   TPU "XLA Ops" with a child wholly inside its parent, a partial
            overlap (not a child), a zero-duration event at the parent's
            end, two events with the same span, a num_occurrences event,
            device_offset_ps/device_duration_ps, peak rates, two steps,
            XLA Modules naming the programs;
- streams:  two GPU planes with concurrent kernels on two streams each,
            host steps, kernel_details, no peak FLOP/s (bandwidth only);
- nosteps:  device ops, no Steps line;
- onestep:  one step on the device plane;
- hostonly: only /host:CPU with framework ops and host steps;
- nodevice: a host plane and an empty device plane (no lines);
- hostile:  NaN / negative / 2^64-1 stat values, negative and zero
            durations, peak rates of 0, NaN and -1;
- gpucaps:  GPU planes whose peak FLOP/s comes from the device
            capabilities (GPU_CAPS: Nvidia by compute capability with the
            fallbacks, AMD by gfx name or capability, unknown vendors and
            architectures, NaN / negative / 2^64-1 values).
"""
import os

U64MAX = (1 << 64) - 1


class Plane:
    def __init__(self, xs, pid, name):
        self.p = xs.planes.add()
        self.p.id = pid
        self.p.name = name
        self.ev = {}
        self.st = {}

    def stat_id(self, name):
        if name not in self.st:
            k = len(self.st) + 1
            self.st[name] = k
            self.p.stat_metadata[k].id = k
            self.p.stat_metadata[k].name = name
        return self.st[name]

    def set_stat(self, msg, name, v):
        st = msg.stats.add()
        st.metadata_id = self.stat_id(name)
        if isinstance(v, float):
            st.double_value = v
        elif isinstance(v, str):
            st.str_value = v
        elif isinstance(v, tuple):  # ("u", n) / ("i", n)
            if v[0] == "u":
                st.uint64_value = v[1]
            else:
                st.int64_value = v[1]
        elif v < 0:
            st.int64_value = v
        else:
            st.uint64_value = v

    def md(self, name, **stats):
        key = (name, tuple(sorted(stats.items())))
        if key not in self.ev:
            k = len(self.ev) + 1
            self.ev[key] = k
            m = self.p.event_metadata[k]
            m.id = k
            m.name = name
            for sk, sv in stats.items():
                self.set_stat(m, sk, sv)
        return self.ev[key]

    def line(self, lid, name, ts_ns=0):
        l = self.p.lines.add()
        l.id = lid
        l.name = name
        l.timestamp_ns = ts_ns
        return l

    def event(self, line, name, off, dur, md_stats=None, num=None, **stats):
        e = line.events.add()
        e.metadata_id = self.md(name, **(md_stats or {}))
        if num is not None:
            e.num_occurrences = num
        else:
            e.offset_ps = off
        e.duration_ps = dur
        for k, v in stats.items():
            self.set_stat(e, k, v)
        return e


def tpu_peaks(pl, tflops=100.0, gbps=1000.0):
    pl.set_stat(pl.p, "device_type_string", "TPU test")
    pl.set_stat(pl.p, "peak_teraflops_per_second", tflops)
    pl.set_stat(pl.p, "peak_hbm_bw_gigabytes_per_second", gbps)


def nested(xs):
    pl = Plane(xs, 1, "/device:TPU:0")
    tpu_peaks(pl)
    mods = pl.line(1, "XLA Modules", 1)
    pl.event(mods, "jit_step(77)", 0, 10000000)
    ops = pl.line(2, "XLA Ops", 1)
    cat = {"hlo_category": "convolution", "program_id": 77}
    # parent [0, 1000000); child [100000, 300000) wholly inside; partial
    # [900000, 1500000) is not a child; zero-duration at the partial's end
    pl.event(ops, "fusion.1", 0, 1000000, dict(cat), flops=4000000, bytes_accessed=1000)
    pl.event(ops, "conv.2", 100000, 200000, dict(cat), flops=1000000, bytes_accessed=100000)
    pl.event(ops, "copy.3", 900000, 600000, {"hlo_category": "copy", "program_id": 77},
             bytes_accessed=600000)
    pl.event(ops, "tiny.4", 1500000, 0, {"hlo_category": "copy"})
    # the same span twice: the second is the first's child (Includes() is inclusive)
    pl.event(ops, "twin.5", 2000000, 100000, {"hlo_category": "twin"}, flops=10)
    pl.event(ops, "twin.6", 2000000, 100000, {"hlo_category": "twin"}, flops=10)
    pl.event(ops, "agg.7", 0, 5000, {"hlo_category": "agg"}, num=3)
    # device clock: the event's own span differs from device_offset/duration_ps
    pl.event(ops, "dev.8", 3000000, 500000, {"hlo_category": "dev"},
             device_offset_ps=3000100, device_duration_ps=400000, model_flops=7)
    pl.event(ops, "dev.9", 3100000, 100000, {"hlo_category": "dev"},
             device_offset_ps=3100100, device_duration_ps=100000)
    steps = pl.line(3, "Steps", 1)
    pl.event(steps, "step", 0, 2000000, step_num=0)
    pl.event(steps, "step", 2000000, 2000000, step_num=1)


def streams(xs):
    for g in range(2):
        pl = Plane(xs, 10 + g, "/device:GPU:%d" % g)
        pl.set_stat(pl.p, "device_vendor", "Nvidia")
        pl.set_stat(pl.p, "memory_bandwidth", 2000000000000)
        pl.set_stat(pl.p, "clock_rate", 1410000)
        pl.set_stat(pl.p, "core_count", 108)
        pl.set_stat(pl.p, "compute_cap_major", 8)
        pl.set_stat(pl.p, "compute_cap_minor", 0)
        a = pl.line(1, "Stream #1(Kernel)", 1)
        b = pl.line(2, "Stream #2(Kernel)", 1)
        kd = "regs:32 static_shared:0 dynamic_shared:1024 grid:8,1,1 block:128,1,1 occ_pct:50.0"
        base = 1000000 * g
        pl.event(a, "gemm_kernel", base + 0, 600000, hlo_op="dot.1", hlo_module="jit_train",
                 program_id=5, kernel_details=kd, flops=1000)
        pl.event(b, "reduce_kernel", base + 400000, 400000, hlo_op="reduce.2",
                 hlo_module="jit_train", program_id=5, kernel_details=kd)
        pl.event(a, "gemm_kernel", base + 700000, 100000, hlo_op="dot.1", hlo_module="jit_train",
                 program_id=5, kernel_details=kd, flops=1000)
        pl.event(b, "nccl_all_reduce", base + 750000, 200000, hlo_op="all-reduce.3",
                 hlo_module="jit_train", program_id=5)
    h = Plane(xs, 100, "/host:CPU")
    steps = h.line(1, "Steps", 1)
    h.event(steps, "train", 0, 1200000, step_num=1)
    h.event(steps, "train", 1200000, 1000000, step_num=2)


def nosteps(xs):
    pl = Plane(xs, 1, "/device:TPU:0")
    tpu_peaks(pl)
    ops = pl.line(1, "XLA Ops", 1)
    pl.event(ops, "fusion.1", 0, 1000, {"hlo_category": "loop fusion"}, flops=5, bytes_accessed=5)


def onestep(xs):
    pl = Plane(xs, 1, "/device:TPU:0")
    tpu_peaks(pl)
    ops = pl.line(1, "XLA Ops", 1)
    pl.event(ops, "fusion.1", 100, 1000, {"hlo_category": "loop fusion"}, flops=5)
    pl.event(ops, "all-reduce.2", 1500, 300, {"hlo_category": "all-reduce"})
    steps = pl.line(2, "Steps", 1)
    pl.event(steps, "step 7", 0, 4000)


def hostonly(xs):
    h = Plane(xs, 1, "/host:CPU")
    fw = h.line(1, "Framework Ops", 5)
    h.event(fw, "MatMul", 0, 1000)
    h.event(fw, "Add", 100, 200)
    h.event(fw, "MatMul", 2000, 500)
    steps = h.line(2, "Steps", 5)
    h.event(steps, "s", 0, 3000, step_name="first")


def nodevice(xs):
    h = Plane(xs, 1, "/host:CPU")
    t = h.line(1, "python", 0)
    h.event(t, "f", 0, 1000)
    h.event(t, "g", 200, 300)
    Plane(xs, 2, "/device:TPU:0")  # no lines at all


def hostile(xs):
    pl = Plane(xs, 1, "/device:TPU:0")
    pl.set_stat(pl.p, "peak_teraflops_per_second", float("nan"))
    pl.set_stat(pl.p, "peak_hbm_bw_gigabytes_per_second", -1.0)
    ops = pl.line(1, "XLA Ops", 1)
    pl.event(ops, "nan", 0, 1000, {"hlo_category": "x"}, flops=float("nan"),
             bytes_accessed=float("inf"))
    pl.event(ops, "neg", 2000, 1000, {"hlo_category": "x"}, flops=-5, bytes_accessed=-7)
    pl.event(ops, "big", 4000, 1000, {"hlo_category": "x"}, flops=("u", U64MAX),
             bytes_accessed=("u", U64MAX), program_id=("u", U64MAX))
    pl.event(ops, "negdur", 6000, -500, {"hlo_category": "y"})
    pl.event(ops, "zero", 7000, 0, {"hlo_category": "y"})
    pl.event(ops, "numneg", 0, 10, {"hlo_category": "y"}, num=-4)
    pl.event(ops, "devneg", 8000, 100, {"hlo_category": "y"}, device_offset_ps=-5,
             device_duration_ps=("u", U64MAX))
    steps = pl.line(2, "Steps", 1)
    pl.event(steps, "s", 0, 5000, step_num=("u", U64MAX))
    pl.event(steps, "s", 5000, -100, step_num=-3)
    pl2 = Plane(xs, 2, "/device:TPU:1")
    pl2.set_stat(pl2.p, "peak_teraflops_per_second", 0.0)
    pl2.set_stat(pl2.p, "peak_hbm_bw_gigabytes_per_second", float("inf"))
    o2 = pl2.line(1, "XLA Ops", 1)
    pl2.event(o2, "a", 0, 10, flops=1, bytes_accessed=0)


# GPU planes for GetPerfEnvFromXPlane() (docs/stats.md): (vendor, clock kHz, cores,
# cc major, cc minor, gpu_device_name, peak FLOP/s worked by hand or None = unknown
# [, the plane's own peak_teraflops_per_second stat]). Per SM/CU per cycle:
# cuda_type_utils.cc / rocm_type_utils.cc (the max of vector and matrix FP32/FP16).
GPU_CAPS = [
    ("Nvidia", 1980000, 132, 9, 0, None, 4096 * 1.98 * 132 * 1e9),   # H100 SXM: 1070.5 T
    ("Nvidia", 1500000, 10, 8, 7, None, 1024 * 1.5 * 10 * 1e9),      # 8.7: the 8.6 entry
    ("Nvidia", 2000000, 10, 12, 0, None, 8192 * 2.0 * 10 * 1e9),     # 12.0: the 10.0 entry
    ("Nvidia", 1000000, 10, 1, 0, None, 64 * 1.0 * 10 * 1e9),        # 1.0: the oldest (2.0)
    # every entry of the NVIDIA table, at 1 GHz x 1 SM
    ("Nvidia", 1000000, 1, 2, 0, None, 64e9), ("Nvidia", 1000000, 1, 3, 0, None, 384e9),
    ("Nvidia", 1000000, 1, 5, 0, None, 256e9), ("Nvidia", 1000000, 1, 6, 0, None, 256e9),
    ("Nvidia", 1000000, 1, 6, 1, None, 256e9), ("Nvidia", 1000000, 1, 7, 0, None, 1024e9),
    ("Nvidia", 1000000, 1, 7, 5, None, 1024e9), ("Nvidia", 1000000, 1, 8, 0, None, 2048e9),
    ("Nvidia", 1000000, 1, 8, 6, None, 1024e9), ("Nvidia", 1000000, 1, 8, 9, None, 1024e9),
    ("Nvidia", 1000000, 1, 9, 0, None, 4096e9), ("Nvidia", 1000000, 1, 10, 0, None, 8192e9),
    ("AMD", 1700000, 104, 9, 0, "gfx90a", 1024 * 1.7 * 104 * 1e9),  # MI250X: 1,024 per CU
    ("AMD", 1700000, 104, 9, 0, "gfx90a", 383.0e12, 383.0),         # its own stat wins
    ("AMD", 1502000, 120, 9, 0, "gfx908", 1024 * 1.502 * 120 * 1e9),  # MI100
    ("AMD", 2400000, 256, 9, 5, "gfx950", 4096 * 2.4 * 256 * 1e9),   # MI355X
    ("AMD", 1700000, 104, 9, 0, "gfx90a:sramecc+:xnack-", None),   # not well formed, cc 9.0
    ("AMD", 2100000, 304, 9, 4, "gfx942:sramecc+", 2048 * 2.1 * 304 * 1e9),  # cc 9.4 decides
    ("AMD", 2100000, 304, 9, 4, "AMD Instinct MI300X", 2048 * 2.1 * 304 * 1e9),  # the same
    ("AMD", 2100000, 304, 9, 4, None, 2048 * 2.1 * 304 * 1e9),      # MI300X by cc 9.4
    ("AMD", 2100000, 304, 11, 0, "gfx1100", None),                   # unknown gfx: unknown
    ("AMD", 2100000, 304, 11, 0, "gfx1100", 61.4e12, 61.4),          # ... but its stat
    ("Intel", 1600000, 64, 1, 0, None, None),                        # unknown vendor
    ("Nvidia", float("nan"), 10, 9, 0, None, None),                  # NaN clock: no clock
    ("Nvidia", 1000000, -5, 9, 0, None, None),                       # negative cores
    ("Nvidia", 1000000, ("u", U64MAX), 9, 0, None, 4096 * 1.0 * float(U64MAX) * 1e9),
]


def gpucaps(xs):
    """One GPU plane per GPU_CAPS row, each with an op that has flops and bytes."""
    for i, row in enumerate(GPU_CAPS):
        vendor, clock, cores, major, minor, name = row[:6]
        pl = Plane(xs, 10 + i, "/device:GPU:%d" % i)
        if len(row) > 7:
            pl.set_stat(pl.p, "peak_teraflops_per_second", row[7])
        pl.set_stat(pl.p, "device_vendor", vendor)
        pl.set_stat(pl.p, "clock_rate", clock)
        pl.set_stat(pl.p, "core_count", cores)
        pl.set_stat(pl.p, "compute_cap_major", major)
        pl.set_stat(pl.p, "compute_cap_minor", minor)
        pl.set_stat(pl.p, "memory_bandwidth", 1000000000000)
        if name:
            pl.set_stat(pl.p, "gpu_device_name", name)
        a = pl.line(1, "Stream #1(Kernel)", 1)
        pl.event(a, "gemm_kernel", 0, 1000000, hlo_op="dot.%d" % i, program_id=1,
                 flops=1000000, bytes_accessed=100)


def hostops(xs):
    """XProf's host framework ops (ConvertHostThreadsXPlaneToOpMetricsDb()): by hand
    4 activities -- one name that parses, one tf_op stat, one event with both -- and
    none from a user TraceMe, a derived line, or an empty tf_op; 3 device ops."""
    h = Plane(xs, 1, "/host:CPU")
    py = h.line(1, "python", 1)
    h.event(py, "train_step", 0, 5000)                      # a user TraceMe: unknown
    h.event(py, "model/dense/MatMul:MatMul", 100, 1000)     # a TF op name: 1
    h.event(py, "pjit_call", 1200, 300, tf_op="jit_f/dot_general:dot_general")  # stat: 1
    h.event(py, "model/add:AddV2", 1600, 100, tf_op="model/add:AddV2")  # both: 2
    h.event(py, "other", 1800, 100, tf_op="")               # an empty tf_op: 0
    der = h.line(0xdeadbeef, "Steps", 1)                    # derived: not counted
    h.event(der, "model/mul:Mul", 0, 100)
    pl = Plane(xs, 2, "/device:TPU:0")
    tpu_peaks(pl)
    ops = pl.line(1, "XLA Ops", 1)
    for i in range(3):
        pl.event(ops, "fusion.%d" % i, 10 * i, 5, {"hlo_category": "loop fusion"})


PROFILES = {"nested": nested, "streams": streams, "nosteps": nosteps, "onestep": onestep,
            "hostonly": hostonly, "nodevice": nodevice, "hostile": hostile, "gpucaps": gpucaps,
            "hostops": hostops}


def write(pb2, out_dir, profiles, prefix, hostname=True):
    """Each of @profiles ({name: fn(xs)}) run on a new XSpace and written to
    @out_dir/<prefix>-<name>.xplane.pb, its host name "<prefix>-<name>" (none
    without @hostname); {name: path}."""
    paths = {}
    for name, fn in profiles.items():
        xs = pb2.XSpace()
        if hostname:
            xs.hostnames.append("%s-%s" % (prefix, name))
        fn(xs)
        path = os.path.join(out_dir, "%s-%s.xplane.pb" % (prefix, name))
        with open(path, "wb") as f:
            f.write(xs.SerializeToString())
        paths[name] = path
    return paths


def build(pb2, out_dir):
    return write(pb2, out_dir, PROFILES, "edge")
