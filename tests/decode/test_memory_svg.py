#!/usr/bin/python3
"""test_memory_svg.py - memory.svg (stats/view-memory-svg.c) against memory_profile.json (TAP).

For the made-up profiles of memory_profiles.py (hand, bad input, a sampled
timeline, no host plane), generated ones (tpu, gpu, cpu) and the shared
samples (skipped with a message when absent), the SVG parses as XML and
says what memory_profile.json says: one <g class="allocator"> per memory
id up to 4, highest peak first (ties in memory_ids order), whose
data-peak-bytes / data-peak-time-ps are profile_summary's; the peak's dot
sits where that time and byte count fall on the chart; the timeline's
step line has one vertex per sampled_timeline_snapshots entry, at its time
and stack + heap; the bars are the first merged rows of
active_allocations, in order, named by op, as long as their bytes. A
profile without memory events says so. Headless chromium draws it: the
peak's red dot is where the SVG puts it, one bar per row. Through a real
mount the host lists memory.svg and it is the CLI's bytes.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import memory_profiles
import xproto
import xtap
from test_svg import chromium_png, mount_check, runs
from xproto import CLI, GEN, SHARED

NS = "{http://www.w3.org/2000/svg}"
SHOWN, TOP, PANEL, CHART_DY, CHART_H, X0, CW = 4, 60, 520, 50, 180, 70, 900


def view(path, v):
    r = subprocess.run([CLI, path, "--view", v], capture_output=True)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")[:300]


def wadd(a, b):
    """int64 sum wrapping as XProf's."""
    return (a + b + (1 << 63)) % (1 << 64) - (1 << 63)


def in_use(s):
    a = s["aggregation_stats"]
    return wadd(a["stack_reserved_bytes"], a["heap_allocated_bytes"])


def rows_of(a):
    """The merged active_allocations rows: (allocation_bytes, num_occurrences, tf_op_name)."""
    out = []
    for row in a["active_allocations"]:
        m = (a["special_allocations"][row["special_index"]] if row["special_index"] >= 0 else
             a["memory_profile_snapshots"][row["snapshot_index"]]["activity_metadata"])
        out.append((m["allocation_bytes"], row["num_occurrences"], m["tf_op_name"]))
    return out


def close(a, b):
    return abs(a - b) <= 0.011


def check_panel(t, name, g, k, mid, a):
    s = a["profile_summary"]
    peak, when = s["peak_stats"]["peak_bytes_in_use"], s["peak_stats_time_ps"]
    t.ok((g.get("data-memory-id"), int(g.get("data-peak-bytes")), int(g.get("data-peak-time-ps")))
         == (mid[:60], peak, when), "%s: panel %d is %s, peak %d B at %d ps" %
         (name, k, mid, peak, when), dict(g.attrib))
    tl = a["sampled_timeline_snapshots"]
    if a["peak_step_id"] is None:  # summary only: nothing drawn
        return
    t0 = min([x["time_offset_ps"] for x in tl] + [when])
    t1 = max([x["time_offset_ps"] for x in tl] + [when])
    ymax = max([peak, 0] + [in_use(x) for x in tl])
    top = TOP + k * PANEL + CHART_DY

    def fx(v):
        return X0 + ((v - t0) / (t1 - t0) * CW if t1 > t0 else 0)

    def fy(v):
        return top + CHART_H - (min(v, ymax) / ymax * CHART_H if ymax > 0 and v > 0 else 0)
    dot = [c for c in g.iter(NS + "circle") if c.get("class") == "peak"]
    t.ok(len(dot) == 1 and close(float(dot[0].get("cx")), fx(when)) and
         close(float(dot[0].get("cy")), fy(peak)),
         "%s/%s: the peak is marked at %.2f,%.2f" % (name, mid, fx(when), fy(peak)),
         [d.attrib for d in dot])
    path = [p for p in g.iter(NS + "path") if p.get("class") == "timeline"]
    d = path[0].get("d").replace("M", "").replace("H", "").replace("V", "").split() if path else []
    xs, ys = [float(v) for v in d[0::2]], [float(v) for v in d[1::2]]
    want = [(fx(x["time_offset_ps"]), fy(in_use(x))) for x in tl]
    bad = [i for i, (wx, wy) in enumerate(want)
           if i >= len(xs) or not close(xs[i], wx) or not close(ys[i], wy)]
    t.ok(len(xs) == len(tl) and not bad, "%s/%s: the timeline's %d points at each sampled "
         "snapshot's time and stack + heap" % (name, mid, len(tl)), "off at %s" % bad[:5])
    rows = rows_of(a)[:10]
    bars = [r for r in g.iter(NS + "rect") if r.get("class") == "alloc"]
    labels = [e.text or "" for e in g.iter(NS + "text") if e.get("text-anchor") == "end"]
    big = max([b for b, _, _ in rows] + [0])
    widths = [max(b / big * 480 if big > 0 else 0, 0.5) for b, _, _ in rows]
    t.ok(len(bars) == len(rows) and labels == [(op or "(no op)")[:60] for _, _, op in rows] and
         all(close(float(r.get("width")), w) for r, w in zip(bars, widths)),
         "%s/%s: %d bars, the first rows of active_allocations by bytes" % (name, mid, len(rows)),
         "labels %s\nwidths %s\nwant %s" % (labels, [r.get("width") for r in bars], widths))


def check_profile(t, path, name):
    rc, svg, err = view(path, "memory.svg")
    rj, raw, _ = view(path, "memory_profile")
    if not t.ok(rc == 0 and rj == 0, "%s: memory.svg renders" % name, err):
        return None
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as e:
        t.ok(False, "%s: memory.svg parses as XML" % name, str(e))
        return None
    mp = json.loads(raw)
    ids = mp["memory_ids"]
    per = mp["memory_profile_per_allocator"]
    order = sorted(range(len(ids)), key=lambda i: (
        -per[ids[i]]["profile_summary"]["peak_stats"]["peak_bytes_in_use"], i))[:SHOWN]
    groups = [g for g in root.iter(NS + "g") if g.get("class") == "allocator"]
    t.ok([g.get("data-memory-id") for g in groups] == [ids[i][:60] for i in order],
         "%s: %d of %d allocators drawn, highest peak first" % (name, len(groups), len(ids)),
         [g.get("data-memory-id") for g in groups])
    if not ids:
        t.ok("no memory events" in "".join(root.itertext()), "%s: says there is no memory" % name)
    for k, (g, i) in enumerate(zip(groups, order)):
        check_panel(t, name, g, k, ids[i], per[ids[i]])
    return svg


def check_chromium(t, svg_bytes, tmp):
    svg = os.path.join(tmp, "mem.svg")
    with open(svg, "wb") as f:
        f.write(svg_bytes)
    root = ET.parse(svg).getroot()
    dot = next(c for c in root.iter(NS + "circle") if c.get("class") == "peak")
    nbars = len([r for g in root.iter(NS + "g") if g.get("class") == "allocator"
                 for r in g.iter(NS + "rect") if r.get("class") == "alloc"][:10])
    png = chromium_png(t, tmp, svg, "memory.svg")
    if png is None:
        return
    w, h, rows = png
    cx, cy = round(float(dot.get("cx"))), round(float(dot.get("cy")))
    red = [(x, y) for y in range(max(cy - 3, 0), min(cy + 4, h))
           for x in range(max(cx - 3, 0), min(cx + 4, w))
           if rows[y][x][0] > 180 and rows[y][x][1] < 90 and rows[y][x][2] < 90]
    t.ok(len(red) >= 12, "the PNG shows the red peak dot at %d,%d (%d red pixels)" %
         (cx, cy, len(red)))
    ink = sum(1 for x in range(X0, X0 + CW) if min(rows[TOP + CHART_DY + CHART_H // 2][x]) < 235)
    t.ok(ink > 0, "the PNG shows the timeline across the chart")
    # down the bars' first pixel column: the shortest bar is half a pixel wide
    bars = runs([rows[y][420] for y in range(TOP + 280, min(TOP + PANEL, h))])
    t.ok(bars == nbars, "the PNG shows %d allocation bars (the SVG has %d)" % (bars, nbars))


def main():
    if not os.access(CLI, os.X_OK) or not os.access(GEN, os.X_OK):
        return xtap.skip_all("no %s or %s" % (CLI, GEN))
    pb2, tmp = xproto.load("xplane")
    t = xtap.Tap()
    try:
        paths = memory_profiles.build(pb2, tmp)
        for name, p in paths.items():
            check_profile(t, p, name)
        gpu = None
        for kind in ("tpu", "gpu", "cpu"):
            f = os.path.join(tmp, "gen-%s.xplane.pb" % kind)
            subprocess.check_call([GEN, "--kind", kind, "--size", "2M", "--seed", "7", "-o", f],
                                  stdout=subprocess.DEVNULL)
            svg = check_profile(t, f, "gen-" + kind)
            gpu = svg if kind == "gpu" else gpu
        samples = sorted(glob.glob(os.path.join(SHARED, "samples", "*", "*.xplane.pb")))
        if not samples:
            print("# shared samples absent (%s): skipping them" % SHARED)
        for p in samples:
            check_profile(t, p, os.path.relpath(p, SHARED))
        if gpu:
            check_chromium(t, gpu, tmp)
        mount_check(t, "xprofs-memsvg-", paths["hand"], "memory.svg")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
