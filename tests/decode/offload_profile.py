"""tests/decode/offload_profile.py - a made-up TensorCore plane with host-offload ops.

XProf derives "Host Offload Ops row N" lines (HostOffloadEventProcessor in
DeriveLinesFromStats) from copy / dynamic-slice start and done events whose
name holds the host memory space S(5); xprofs-gen makes none, so the tests
that check those rows (decode-oracle, decode-tpu-slices, decode-pftrace)
write this profile: two op lines whose starts and dones of several keys
interleave (pairs overlap, so several rows are used), a start and a done of
a copy without S(5) (not offload), dones without a start, ops with tf_op,
and metadata args on both ends (raw_bytes_accessed, shape_with_layout).
No group_id: XProf derives lines only on a space not grouped yet
(IsXSpaceGrouped()).
"""
import random

import xproto


def write(path, seed=1, n=300):
    x, tmp = xproto.load("xplane")
    sp = x.XSpace()
    p = sp.planes.add()
    p.id, p.name = 1, "/device:TPU:0"
    for i, nm in ((1, "tf_op"), (2, "raw_bytes_accessed"), (3, "shape_with_layout")):
        p.stat_metadata[i].id, p.stat_metadata[i].name = i, nm

    def md(mid, name, disp, stats=()):
        m = p.event_metadata[mid]
        m.id, m.name = mid, name
        if disp:
            m.display_name = disp
        for sid, v in stats:
            st = m.stats.add()
            st.metadata_id = sid
            if isinstance(v, int):
                st.int64_value = v
            else:
                st.str_value = v

    md(1, "%copy-start.3 = (f32[8]{0:S(5)}, f32[8]) copy-start(f32[8] %p)", "copy-start.3",
       [(3, "(f32[8]{0:S(5)}, f32[8])"), (2, 32)])
    md(2, "%copy-done.3 = f32[8]{0:S(5)} copy-done(%copy-start.3)", "copy-done.3",
       [(2, 64), (3, "f32[8]{0:S(5)}")])
    md(3, "%copy-start.4 = (f32[8], f32[8]) copy-start(f32[8] %p)", "copy-start.4")
    md(4, "fusion.1", None, [(1, "jit(f)/jit(main)/mul")])
    md(5, "%dynamic-slice-start.7 = f32[4]{0:S(5)} dynamic-slice-start()",
       "dynamic-slice-start.7", [(3, "f32[4]{0:S(5)}")])
    md(6, "%dynamic-slice-done.7 = f32[4]{0:S(5)} dynamic-slice-done()", "dynamic-slice-done.7",
       [(2, 16)])
    md(7, "%copy-done.4 = f32[8] copy-done(%copy-start.4)", "copy-done.4")
    md(8, "%dynamic-update-slice-done.9 = f32[2]{0:S(5)} dynamic-update-slice-done()",
       "dynamic-update-slice-done.9")
    rnd = random.Random(seed)
    # starts rise within a line (XProf's lines are sorted) and meet across the two lines
    for li, (lid, start) in enumerate(((3, 0), (4, 100000))):
        ln = p.lines.add()
        ln.id, ln.name, ln.timestamp_ns = lid, "XLA Ops %d" % li, 1000
        t = start
        for i in range(n if li == 0 else n // 2):
            k = rnd.choice([1, 1, 2, 2, 3, 7, 4, 4, 5, 6, 8] if li == 0 else [1, 2, 5, 6])
            e = ln.events.add()
            e.metadata_id, e.offset_ps, e.duration_ps = k, t, rnd.randint(1, 5) * 100000
            rnd.random()  # (was a group_id: the draws stay as they were)
            t += rnd.randint(1, 4) * 100000
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
