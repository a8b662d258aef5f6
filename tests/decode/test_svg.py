#!/usr/bin/python3
"""tests/decode/test_svg.py - overview.svg (stats/view-svg.c) against the JSON views.

For generated profiles (steps within and past the 200-bar cap) and the
shared samples (skipped with a message when absent): the SVG parses as XML;
it has one <g class="bar"> per step of the host (overview.json's step_time
summarizes) (or per group of consecutive steps past 200 bars, saying so);
each bar's segments stack to its step's duration scaled like the others
(the breakdown of steps.json); one <rect class="op"> per top op, in
overview.json's top_ops order and names; "no steps" when there are none.
Through a real mount: the host's overview.svg is the CLI's bytes.
TAP output.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import struct
import zlib

import xmount
import xtap

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
DECODE = os.path.join(BUILD, "tools", "xprofs-decode")
SHARED = os.environ.get("XPROFS_SHARED", "../shared")
NS = "{http://www.w3.org/2000/svg}"


def view(path, v):
    return subprocess.run([DECODE, path, "--view", v], check=True, capture_output=True).stdout


def png_rgb(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB/RGBA PNG, pure Python."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), "8-bit RGB(A) only"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def runs(pixels):
    """How many runs of non-white pixels."""
    n, inside = 0, False
    for px in pixels:
        ink = min(px) < 235
        n += ink and not inside
        inside = ink
    return n


def chromium_png(t, tmp, svg, name):
    """Render file @svg (a view @name) with headless chromium at its own size: the PNG's
    png_rgb(), or None (skipped without chromium, a failed check when it fails)."""
    chromium = shutil.which("chromium")
    if not chromium:
        print("# chromium absent (scripts/setup-debian.sh installs it): PNG check skipped")
        return None
    root, png = ET.parse(svg).getroot(), svg[:-4] + ".png"
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--user-data-dir=" + os.path.join(tmp, "chromium"),
                        "--window-size=%s,%s" % (root.get("width"), root.get("height")),
                        "--screenshot=" + png, "file://" + svg], capture_output=True, timeout=120)
    if not t.ok(r.returncode == 0 and os.path.exists(png), "chromium renders %s to PNG" % name,
                r.stderr.decode(errors="replace")[-800:]):
        return None
    return png_rgb(png)


def check_chromium(t, tmp):
    """Render a few-step overview.svg with headless chromium: bars and op rows on the PNG."""
    prof = os.path.join(tmp, "few.xplane.pb")
    subprocess.check_call([GEN, "--kind", "tpu", "--events", "3000", "-o", prof],
                          stdout=subprocess.DEVNULL)
    svg = os.path.join(tmp, "few.svg")
    open(svg, "wb").write(view(prof, "overview.svg"))
    root = ET.parse(svg).getroot()
    nbars = len([g for g in root.iter(NS + "g") if g.get("class") == "bar"])
    nops = len([r for r in root.iter(NS + "rect") if r.get("class") == "op"])
    png = chromium_png(t, tmp, svg, "overview.svg")
    if png is None:
        return
    w, h, rows = png
    ink = sum(1 for row in rows for px in row if min(px) < 235)
    t.ok(ink > w * h // 20, "the PNG is not blank (%d of %d pixels drawn)" % (ink, w * h))
    bars = runs(rows[358][70:970])        # just above the chart's base line (y 360)
    t.ok(nbars > 1 and bars == nbars, "the PNG shows %d bars (the SVG has %d)" % (bars, nbars))
    oprows = runs([rows[y][425] for y in range(425, h)])   # down the op bars' left edge
    t.ok(oprows == nops, "the PNG shows %d op rows (the SVG has %d)" % (oprows, nops))


def mount_check(t, prefix, prof, name):
    """Through a real mount of @prof as host0: the host lists view @name; it is the CLI's bytes."""
    why = xmount.usable()
    if why:
        print("# mount part skipped: %s" % why)
        return
    with xmount.Workdir(t, prefix) as w:
        sess = w.session()
        host0 = os.path.join(sess, "host0.xplane.pb")  # the host name is the file's
        shutil.copyfile(prof, host0)
        m = w.mount(os.path.join(w.path, "src"))
        d = os.path.join(m.mnt, "runs", "run", "s1", "host0")
        t.ok(name in os.listdir(d), "mount: the host lists %s" % name, os.listdir(d))
        _, got = xmount.read_whole(os.path.join(d, name))
        t.same(got, view(host0, name), "through the mount: %s is the CLI's bytes" % name,
               m.log_tail)


def check_profile(t, path, name):
    svg = view(path, "overview.svg")
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as e:
        t.ok(False, "%s: overview.svg parses as XML" % name, str(e))
        return
    ov = json.loads(view(path, "overview"))
    steps = json.loads(view(path, "steps"))["steps"]
    bars = [g for g in root.iter(NS + "g") if g.get("class") == "bar"]
    st = ov["step_time"]
    texts = "".join(root.itertext())
    if st is None:
        t.ok(not bars and "no steps" in texts, "%s: no steps: no bars, says so" % name)
    else:
        mine = steps  # the host's steps (XProf's step database)
        n = len(mine)
        per = 1 if n <= 200 else math.ceil(n / 200)
        t.ok(len(mine) == st["steps"] and len(bars) == math.ceil(n / per),
             "%s: %d bars for %d steps (%d per bar)" % (name, len(bars), n, per))
        if per > 1:
            t.ok("average of %d steps" % per in texts, "%s: the title says bars are averages" % name)
        # heights: each bar's segments sum to its (averaged) duration, on one common scale
        hs = [sum(float(r.get("height")) for r in g.iter(NS + "rect")) for g in bars]
        durs = [sum(s["duration_ps"] for s in mine[i * per:(i + 1) * per]) /
                len(mine[i * per:(i + 1) * per]) for i in range(len(bars))]
        scale = max(hs) / max(durs) if durs and max(durs) > 0 else 0
        bad = [i for i, (h, d) in enumerate(zip(hs, durs)) if abs(h - d * scale) > 0.05 * len(
            list(bars[i].iter(NS + "rect"))) + 1e-6]
        # each segment's height is rounded to 0.01 px: the tallest sums to 300 within that
        tall = max(range(len(hs)), key=lambda i: hs[i]) if hs else 0
        slack = 0.005 * len(list(bars[tall].iter(NS + "rect"))) + 1e-6 if bars else 0.01
        t.ok(not bad and abs(max(hs) - 300) <= slack,
             "%s: stacked segments add up to each step's duration (tallest 300 px)" % name,
             "bars off: %s" % bad[:5])
        seg = {r.get("fill") for g in bars for r in g.iter(NS + "rect")}
        keys = [k for k in mine[0].get("breakdown", {})] if mine else []
        t.ok(seg and len(seg) <= len(keys), "%s: segments coloured by breakdown type (%d of %d)"
             % (name, len(seg), len(keys)))
        # the time axis: ticks from 0 up, evenly spaced, labelled in increasing ms
        ticks = [float(e.text) for e in root.iter(NS + "text") if e.get("class") == "tick"]
        steps_ms = [b - a for a, b in zip(ticks, ticks[1:])]
        t.ok(len(ticks) >= 2 and ticks[0] == 0 and max(steps_ms) - min(steps_ms) < 1e-6 * ticks[-1]
             and ticks[-1] <= max(durs) / 1e9 * (1 + 1e-9) + 1e-9,
             "%s: a time axis with %d ticks from 0 ms" % (name, len(ticks)), "ticks %s" % ticks)
        # the legend: exactly the breakdown types with time in some step
        legend = {r.get("fill") for r in root.iter(NS + "rect") if r.get("class") == "key"}
        t.ok(legend == seg, "%s: the legend lists the %d types with time" % (name, len(seg)),
             "legend %s, segments %s" % (sorted(legend), sorted(seg)))
    ops = [r for r in root.iter(NS + "rect") if r.get("class") == "op"]
    top = [(o["name"], o["self_ps"]) for o in ov["top_ops"]]
    host = "Top host ops" in texts
    if not top:
        # no device ops: the host planes' ops, combined by name, by self time (ops.json)
        comb = {}
        for pl in json.loads(view(path, "ops"))["planes"]:
            if not pl["name"].startswith("/device:"):
                for o in pl["ops"]:
                    comb[o["name"]] = comb.get(o["name"], 0) + o["self_ps"]
        top = sorted(comb.items(), key=lambda kv: -kv[1])
        t.ok(host or not top, "%s: no device ops: the host's ops, said so" % name)
    names = [e.text or "" for e in root.iter(NS + "text") if e.get("text-anchor") == "end"]
    # by self time; ops of equal self time may come in any order
    want = [n[:60] for n, _ in top[:10]]
    tied = [{n[:60] for n, v in top if v == sv} for _, sv in top[:10]]
    t.ok(len(ops) == min(10, len(top)) and len(names) == len(want) and
         all(nm in tied[i] for i, nm in enumerate(names)),
         "%s: %d op rows in top_ops (or the host ops') order" % (name, len(ops)),
         "svg %s\nwant %s" % (names, want))


def main():
    for p in (GEN, DECODE):
        if not os.path.exists(p):
            return xtap.skip_all("no %s" % p)
    t = xtap.Tap()
    tmp = tempfile.mkdtemp(prefix="xprofs-svg-")
    try:
        for kind, size in (("tpu", "3M"), ("gpu", "2M"), ("cpu", "1M"), ("tpu", "40M")):
            p = os.path.join(tmp, "%s-%s.xplane.pb" % (kind, size))
            subprocess.check_call([GEN, "--kind", kind, "--size", size, "-o", p],
                                  stdout=subprocess.DEVNULL)
            check_profile(t, p, "generated %s %s" % (kind, size))
        samples = os.path.join(SHARED, "samples")
        if os.path.isdir(samples):
            for d in sorted(x for x in os.listdir(samples) if os.path.isdir(os.path.join(samples, x))):
                for f in sorted(os.listdir(os.path.join(samples, d))):
                    if f.endswith(".xplane.pb"):
                        check_profile(t, os.path.join(samples, d, f), "%s/%s" % (d, f))
        else:
            print("# %s absent: shared samples skipped" % samples)
        check_chromium(t, tmp)
        mount_check(t, "xprofs-svg-mnt-", os.path.join(tmp, "tpu-3M.xplane.pb"), "overview.svg")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
