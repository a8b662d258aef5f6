"""tests/decode/b2b_profile.py - made-up planes whose events are back to back to the
picosecond, at times where a JSON reader's IEEE double ts + dur passes the next start.

trace.json writes ts and dur in microseconds; a reader (DevTools, speedscope) adds
them in double: 62719.239 + 300.321 = 63019.560000000005, past a kernel starting at
63019.56 (docs/trace.md "Times"). This profile holds, 60 ms into the profile:

  - /device:GPU:0: three streams of kernels, each starting exactly where the one
    before it ends, with random picosecond durations (the first two are the
    example above);
  - /host:CPU: parents whose back-to-back children fill them exactly (the last
    child ends where its parent ends), so nesting is at stake too.

Ungrouped, no stats: nothing is derived. write(path, seed) is deterministic.
"""
import random

import xproto


def write(path, seed=26, kernels=3000):
    x, _ = xproto.load("xplane")
    rnd = random.Random(seed)
    sp = x.XSpace()
    sp.hostnames.append("b2bhost")
    planes = []
    for pid, pname in enumerate(("/device:GPU:0", "/host:CPU"), 1):
        p = sp.planes.add()
        p.id, p.name = pid, pname
        for mid, name in enumerate(("kernel_a", "kernel_b", "parent", "child"), 1):
            p.event_metadata[mid].id, p.event_metadata[mid].name = mid, name
        planes.append(p)
    gpu, host = planes

    def event(line, mid, off, dur):
        e = line.events.add()
        e.metadata_id, e.offset_ps, e.duration_ps = mid, off, dur

    for s in range(3):
        line = gpu.lines.add()
        line.id, line.name, line.timestamp_ns = s + 1, "Stream #%d" % (s + 1), 60000000
        t = 2719239000 if s == 0 else rnd.randrange(10**9)
        durs = [300321000] if s == 0 else []
        for k in range(kernels):
            d = durs[k] if k < len(durs) else rnd.randrange(1, 10**9)
            event(line, 1 + k % 2, t, d)
            t += d
    line = host.lines.add()
    line.id, line.name, line.timestamp_ns = 7, "main", 60000000
    t = rnd.randrange(10**9)
    for _ in range(kernels // 10):
        kids = [rnd.randrange(1, 10**8) for _ in range(rnd.randrange(1, 6))]
        event(line, 3, t, sum(kids))
        for d in kids:
            event(line, 4, t, d)
            t += d
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())
