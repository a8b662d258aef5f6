#!/usr/bin/python3
"""test_lod.py - the level-of-detail trace (lod/, docs/trace.md "Level of detail").

XProf's trace viewer keeps, per row, the events distinguishable at the
screen's resolution (TraceViewerVisibility in openxla/xprof
xprof/convert/trace_viewer/trace_viewer_visibility.cc). Lod below is that
rule written again from XProf's source, independently of trace/lod.c, and
applied by oracle_trace.expected() (XProf's event set) in the walk order
docs/trace.md names: planes in trace order, each with its own flow table
and counter series; lines in order, events in file order; derived events
per line and level. On generated tpu and gpu profiles and a made-up one with
flows, async pairs and counters (write_profile()), and one of more rows than
the budget lets have 10,000 px (write_rows()), it checks, for `xprofs-decode --lod` (whole profile and a window):
- trace.json holds exactly the kept events, with their args, names, flows
  and async pairs (oracle_trace.check());
- trace.pftrace passes the project's Perfetto reader test against it
  (check_pftrace.check());
- the lod drops events (so the test can fail) and never grows the trace;
The shared samples, when present, are checked the same way (without asking
that something be dropped: the smallest have a few events). Then through a
real mount that host/lod/trace.json, host/lod/trace.pftrace
and window/<from>-<to>/lod/trace.json are the CLI's bytes, and that lod/
is listed in the host and slice directories.
"""
import glob
import gzip
import os
import shutil
import subprocess
import tempfile

import check_pftrace
import oracle
import oracle_trace
import xproto

from xproto import CLI, GEN, SHARED, fail

PX = 10000     # TRACE_LOD_PX: the width the span is drawn at
DEPTH = 64     # TRACE_LOD_DEPTH: nesting levels a row keeps
BUDGET = 400000  # TRACE_LOD_EVENTS: sum over rows of min(events, width) at most


def line_spans(xs):
    """(first start, last end, events) of each shown line, in ps."""
    out = []
    for p, _ in oracle_trace.planes(xs):
        for l in p.lines:
            if not l.events or l.name.startswith("counters_"):
                continue
            starts = [l.timestamp_ns * 1000 + (e.offset_ps if e.WhichOneof("data") ==
                                               "offset_ps" else 0) for e in l.events]
            out.append((min(starts), max(b + e.duration_ps for b, e in zip(starts, l.events)),
                        len(l.events)))
    return out


def span(xs):
    """The trace's first start and last end (ps) over the shown lines' events."""
    ls = line_spans(xs)
    return (min(a for a, _, _ in ls), max(b for _, b, _ in ls)) if ls else (None, None)


def width(xs, window):
    """The pixels: PX, or the largest width below for which the rows' events, as many as a
    pixel each at most (a window's rows: the share of their span it covers), fit BUDGET."""
    share = []
    for a, b, n in line_spans(xs):
        if window and b > a:
            lo, hi = max(a, window[0]), min(b, window[1])
            n = 0 if hi <= lo else n * (hi - lo) // (b - a)
        share.append(n)
    lo, hi = 1, PX
    while lo < hi:
        w = lo + (hi - lo + 1) // 2
        if sum(min(n, w) for n in share) <= BUDGET:
            lo = w
        else:
            hi = w - 1
    return lo


class Lod:
    """TraceViewerVisibility::Visible() at llround(span / width()) ps, as a keep for expected()."""

    def __init__(self, xs, window=None):
        first, last = span(xs)
        if window:  # TraceVisibilityFilter::SetUp(): the span clipped to the trace's
            first = window[0] if first is None else max(first, window[0])
            last = window[1] if last is None else min(last, window[1])
        px = self.px = width(xs, window)
        self.res = (max((last or 0) - (first or 0), 0) * 2 + px) // (2 * px)  # llround()
        self.window = window
        self.rows, self.levels, self.shown = {}, {}, set()
        self.kept = self.seen = 0
        # a line's thread is named by its first event in the window, hidden ones too
        for p, pid in oracle_trace.planes(xs):
            tids = oracle_trace.line_tids(p, oracle_trace.is_grouped(xs))[0]
            for li, l in enumerate(p.lines):
                if l.name.startswith(("counters_", "_counters_")):
                    continue
                for e in l.events:
                    b = l.timestamp_ns * 1000 + \
                        (e.offset_ps if e.WhichOneof("data") == "offset_ps" else 0)
                    if self.in_window(b, b + e.duration_ps):
                        self.shown.add((pid, tids[li]))
                        break

    def plane(self):
        self.flows, self.counters = {}, {}

    def named(self, row):
        return row in self.shown

    def in_window(self, b, e):
        return not self.window or (b < self.window[1] and max(e, b + 1) > self.window[0])

    def counter(self, name, ts):
        """A counter row is (device, name): a sample res after the last shown one."""
        last = self.counters.get(name)
        if last is not None and 0 <= ts - last < self.res:
            return False
        self.counters[name] = ts
        return True

    def event(self, pid, tid, counters, ts, dur, f):
        if not self.in_window(ts, ts + dur):
            return False
        self.seen += 1
        keep = True if not self.res else self.counter(f["name"], ts) if counters \
            else self.visible(self.rows.setdefault((pid, tid), {"ends": [], "flow": None}),
                              ts, max(dur, 1), f["flow"])
        self.kept += keep
        return keep

    def visible(self, row, ts, dur, flow):
        """VisibleAtResolution() of an event of @row."""
        res, end, ends = self.res, ts + dur, row["ends"]
        vis = dur >= res
        depth = 0
        while depth < len(ends) and ends[depth] > ts:   # RowVisibility::Depth()
            depth += 1
        if not vis:
            vis = depth >= len(ends) or ts - ends[depth] >= res
        d, fid, _ = oracle_trace.xflow(flow) if flow is not None else (0, 0, 0)
        if d:
            # the flow's first event decides; its FLOW_END (direction in) forgets it
            if fid not in self.flows:
                last = row["flow"]
                # XProf subtracts unsigned: an arrow before the last one passes
                self.flows[fid] = vis or last is None or end < last or end - last >= res
            vis = vis or self.flows[fid]
            if d == 1:
                del self.flows[fid]
            if vis:
                row["flow"] = end
        if vis and depth < DEPTH:
            del ends[depth:]
            ends.append(end)
        return vis

    def derived(self, pid, tid, ev):
        """A derived event: its derivation's level is its depth (docs/trace.md)."""
        b, e = ev["b"], max(ev["e"], ev["b"] + 1)
        if not self.in_window(b, e):
            return False
        self.seen += 1
        key = (pid, tid, ev.get("level", 0))
        last = self.levels.get(key)
        keep = not self.res or e - b >= self.res or last is None or b - last >= self.res
        if keep:
            self.levels[key] = e
            self.shown.add((pid, tid))
        self.kept += keep
        return keep


def write_profile(path):
    """A made-up profile whose flows, async pairs and counters are thinned: a 200 µs host
    event sets the resolution to 20 ns; producers and consumers (_pt/_p, _ct/_c) 15 ns
    apart on two host lines, async pairs (flow and _a) on a third, launches and kernels
    (correlation_id, a flow per plane each) and two counter series on the device plane."""
    x, tmp = xproto.load("xplane")
    sp = x.XSpace()
    sp.hostnames.append("lodhost")
    host, dev = sp.planes.add(), sp.planes.add()
    host.id, host.name, dev.id, dev.name = 1, "/host:CPU", 2, "/device:GPU:0"
    stats = ("correlation_id", "_pt", "_p", "_ct", "_c", "flow", "_a", "value")
    for p in (host, dev):
        for i, nm in enumerate(stats, 1):
            p.stat_metadata[i].id, p.stat_metadata[i].name = i, nm
        for i, nm in enumerate(("span", "produce", "consume", "copy", "launch", "kernel",
                                "power", "util"), 1):
            p.event_metadata[i].id, p.event_metadata[i].name = i, nm

    def line(p, lid, name):
        l = p.lines.add()
        l.id, l.name, l.timestamp_ns = lid, name, 1000
        return l

    def event(l, mid, t, dur, st=(), dbl=None):
        e = l.events.add()
        e.metadata_id, e.offset_ps, e.duration_ps = mid, t, dur
        for sid, v in st:
            s = e.stats.add()
            s.metadata_id, s.uint64_value = sid, v
        if dbl is not None:
            s = e.stats.add()
            s.metadata_id, s.double_value = 8, dbl
    event(line(host, 1, "main"), 1, 0, 200000000)
    prod, cons, cp = line(host, 2, "producer"), line(host, 3, "consumer"), line(host, 4, "async")
    launch = line(host, 5, "launcher")
    stream, ctr = line(dev, 1, "Stream #1(Compute)"), line(dev, 2, "_counters_")
    for i in range(3000):
        t = 1000000 + i * 15000
        event(prod, 2, t, 5000 + (i % 7) * 3000, [(2, 5), (3, 100 + i)])
        event(cons, 3, t + 7000, 3000 + (i % 5) * 10000, [(4, 5), (5, 100 + i)])
    for j in range(2000):
        t = 2000000 + j * 30000
        # a begin (out) and an end (in) of flow j on one line: an async pair
        event(cp, 4, t, 4000 + (j % 4) * 9000, [(6, ((5000 + j) << 2) | 2), (7, 1)])
        event(cp, 4, t + 14000, 4000, [(6, ((5000 + j) << 2) | 1), (7, 1)])
    for k in range(4000):
        t = 1000000 + k * 12000
        event(launch, 5, t, 2000, [(1, 9000 + k)])
        event(stream, 6, t + 5000, 1000 if k % 3 else 30000, [(1, 9000 + k)])
        event(ctr, 7 + k % 2, t, 0, dbl=float(k))
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())
    shutil.rmtree(tmp, ignore_errors=True)


def write_rows(path, rows=420, per=1000):
    """A made-up host of @rows threads with @per events each: more than BUDGET events in
    all, so the width shrinks below PX (lod.c lod_width())."""
    x, tmp = xproto.load("xplane")
    sp = x.XSpace()
    host = sp.planes.add()
    host.id, host.name = 1, "/host:CPU"
    host.event_metadata[1].id, host.event_metadata[1].name = 1, "work"
    for r in range(rows):
        l = host.lines.add()
        l.id, l.name, l.timestamp_ns = 100 + r, "thread %d" % r, 1000 + r
        for i in range(per):
            e = l.events.add()
            e.metadata_id, e.offset_ps, e.duration_ps = 1, i * 1000000 + (r * 7919 + i * 104729) \
                % 500000, 1000 + (i * 7 + r) % 400000
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())
    shutil.rmtree(tmp, ignore_errors=True)


def cli(path, view, *extra):
    p = subprocess.run([CLI, path, "--view", view] + list(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("xprofs-decode %s --view %s %s: exit %d: %s"
                           % (path, view, " ".join(extra), p.returncode, p.stderr.decode()))
    return p.stdout


def us(ps):
    return "%d.%06d" % (ps // 1000000, ps % 1000000)


def check_lod(pb, w, xs, host, window, raw, pf):
    """The lod trace.json @raw of @xs (the window (first, last) ps, or None) against Lod,
    and its trace.pftrace @pf against @raw. (kept, seen, resolution ps, px) when the
    trace matched, else None."""
    keep = Lod(xs, window)
    n = len(xproto.failures)
    oracle_trace.check(w, xs, raw, gzip.compress(raw), host, oracle.stat_value, fail, keep)
    if len(xproto.failures) != n:
        return None
    check_pftrace.check(pb, None, w + " pftrace", data=pf, tj_data=raw)
    return keep.kept, keep.seen, keep.res, keep.px


def check_profile(pb, path, where, windows=True, thin=True):
    """The whole profile's lod and a window's, against Lod; its .pftrace against its .json."""
    xs = oracle.load_pb2()[0].XSpace()
    with open(path, "rb") as f:
        xs.ParseFromString(f.read())
    host = os.path.basename(path)[:-len(".xplane.pb")]
    first, last = span(xs)
    win = (first + (last - first) // 10, first + (last - first) * 9 // 10)
    outs = {}
    for name, extra, window in (("whole", [], None),
                                ("window", ["--window", us(win[0]) + "-" + us(win[1])], win))[
                                    :2 if windows else 1]:
        w = "%s lod %s" % (where, name)
        raw = cli(path, "trace", "--lod", *extra)
        full = cli(path, "trace", *extra)
        pf = cli(path, "trace.pftrace", "--lod", *extra)
        kept = xproto.verdict(check_lod, pb, w, xs, host, window, raw, pf)
        if kept is None:
            continue
        if thin and not kept[0] < kept[1]:
            fail("%s: the lod kept all %d events (resolution %d ps): nothing tested"
                 % (w, kept[1], kept[2]))
        if len(raw) > len(full):
            fail("%s: lod trace.json (%d bytes) is larger than the trace (%d)"
                 % (w, len(raw), len(full)))
        print("ok %s: %d of %d events kept at %d ps (%d px), trace.json %d of %d bytes"
              % (w, kept[0], kept[1], kept[2], kept[3], len(raw), len(full)))
        outs[name] = (raw, pf, us(win[0]) + "-" + us(win[1]))
    return outs


def check_mount(tmp, path, outs):
    """host/lod/ and window/<w>/lod/ through a real mount: the CLI's bytes, listed."""
    import xmount
    if xmount.usable():
        return print("note: no mount check (%s)" % xmount.usable())
    src, host = os.path.join(tmp, "src"), os.path.basename(path)[:-len(".xplane.pb")]
    os.makedirs(os.path.join(src, "run", "plugins", "profile", "s1"))
    shutil.copy(path, os.path.join(src, "run", "plugins", "profile", "s1"))
    m = xmount.Mount(tmp, src)
    try:
        hd = os.path.join(m.mnt, "runs", "run", "s1", host)
        wd = os.path.join(hd, "window", outs["window"][2])
        for d, want in ((hd, "lod"), (wd, "lod"),
                        (os.path.join(hd, "lod"), "trace.pftrace")):
            if want not in os.listdir(d):
                fail("mount: %s lists %r, no %s" % (d, os.listdir(d), want))
        for d, (raw, pf, _) in ((os.path.join(hd, "lod"), outs["whole"]),
                                (os.path.join(wd, "lod"), outs["window"])):
            for f, want in (("trace.json", raw), ("trace.pftrace", pf)):
                got = xmount.read_whole(os.path.join(d, f))[1]
                if got != want:
                    at = next((i for i in range(min(len(got), len(want)))
                               if got[i] != want[i]), min(len(got), len(want)))
                    fail("mount %s/%s: %d bytes, the CLI's %d; first difference at %d\n%s"
                         % (d, f, len(got), len(want), at, m.log_tail()))
                else:
                    print("ok mount %s: %d bytes as the CLI" % (os.path.join(d, f), len(got)))
    finally:
        rc = m.close()
        if rc != 0:
            fail("mount: xprofs exited with %d" % rc)


def main():
    pb = check_pftrace.load_pb2()
    tmp = tempfile.mkdtemp(prefix="xprofs-lod-")
    try:
        profiles = []
        for kind, size in (("tpu", "3M"), ("gpu", "2M")):
            out = os.path.join(tmp, "lod-%s.xplane.pb" % kind)
            subprocess.run([GEN, "--kind", kind, "--size", size, "--seed", "9", "-o", out],
                           check=True)
            profiles.append((out, "generated " + kind))
        made = os.path.join(tmp, "lod.xplane.pb")
        write_profile(made)
        profiles.append((made, "flows, async and counters"))
        rows = os.path.join(tmp, "rows.xplane.pb")
        write_rows(rows)
        profiles.append((rows, "420 busy threads"))
        # --lod thins the trace views only: with another view it is a bad command line
        p = subprocess.run([CLI, profiles[0][0], "--view", "ops", "--lod"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 2 or b"--lod" not in p.stderr:
            fail("--view ops --lod: exit %d (want 2), stderr %r" % (p.returncode, p.stderr[-200:]))
        # the shared samples (real TPU flows and async pairs, GPU launch flows), when present
        samples = sorted(glob.glob(os.path.join(SHARED, "samples", "*", "*.xplane.pb")))
        if not samples:
            print("note: no shared samples: only the generated and made-up profiles")
        outs = {}
        for path in samples:
            try:
                check_profile(pb, path, os.path.relpath(path, SHARED), thin=False)
            except Exception as e:  # noqa: BLE001
                fail("%s: %s" % (path, e))
        for path, where in profiles:
            try:
                outs[path] = check_profile(pb, path, where, path != rows)
            except Exception as e:  # noqa: BLE001
                fail("%s: %s" % (where, e))
        if outs.get(profiles[0][0], {}).get("window"):
            try:
                check_mount(os.path.join(tmp, "m"), profiles[0][0], outs[profiles[0][0]])
            except Exception as e:  # noqa: BLE001
                fail("mount: %s" % e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xproto.status()


if __name__ == "__main__":
    raise SystemExit(main())
