#!/usr/bin/python3
"""tests/decode/test_json_times.py - trace.json's ts and dur as a JSON reader adds them
(issue 26, "JSON readers and back-to-back events"; docs/trace.md "Times").

A reader parses ts and dur into IEEE doubles and adds them; with the exact
picosecond digits, an event ending exactly where the next starts can end past
it (62719.239 + 300.321 = 63019.560000000005), and Chrome DevTools then drops
the next one. For a made-up profile of back-to-back kernels and nested events
(b2b_profile.py), generated tpu/gpu/cpu profiles and the shared samples
(skipped, saying so, when absent), through xprofs-decode --view trace:

- in Python, independent of npm: every "dur" rounds to a whole picosecond; the
  double ts + dur is the double of the exact end, or the double just below it;
  no event's double end passes the double start of the next event of its
  thread that starts at or after its exact end; and DevTools' nesting rule
  (TreeHelpers.treify(), written again here) run on the doubles drops exactly
  the events it drops on the exact times. On the made-up profile the exact
  digits alone would overlap (so the test can fail);
- with the real reader, Chrome DevTools' trace engine from npm
  (tests/decode/jsreader/overlaps.mjs; tests/decode/setup-jsreader.sh
  installs it; skipped, saying so, when absent): it drops exactly the events
  the exact times make it drop (none on the made-up profile).

TAP output.
"""
import bisect
import collections
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal

import b2b_profile
import xtap
from xproto import CLI, GEN, SHARED

PS = Decimal("0.000001")
READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jsreader")


def treify_drops(evs):
    """How many events DevTools' TreeHelpers.treify() leaves out of one thread's tree:
    @evs are (begin, end) in any number type, sorted as sortTraceEventsInPlace() sorts."""
    evs = sorted(evs, key=lambda be: (be[0], -be[1]))
    stack, dropped, i = [], 0, 0
    while i < len(evs):
        b, e = evs[i]
        if stack and b >= stack[-1][1]:  # starts after the parent: pop, look again
            stack.pop()
            continue
        if stack and e > stack[-1][1]:  # starts inside, ends after: left out
            dropped += 1
        else:
            stack.append((b, e))
        i += 1
    return dropped


def check_trace(t, name, data):
    """The Python checks of one trace.json; returns the exact drop count."""
    tj = json.loads(data, parse_float=Decimal)
    threads = collections.defaultdict(list)
    bad_ps, bad_sum = [], []
    for ev in tj["traceEvents"]:
        if ev.get("ph") != "X":
            continue
        ts, dur = Decimal(ev["ts"]), Decimal(ev["dur"])
        q = dur.quantize(PS)
        if abs(dur - q) * 2 >= PS:
            bad_ps.append((ev["ts"], ev["dur"]))
        exact_end = ts + q
        e = float(exact_end)
        got = float(ts) + float(dur)
        if not (got == e or got == math.nextafter(e, -math.inf)):
            bad_sum.append((ev["ts"], ev["dur"], got, e))
        old = float(ts) + float(q)  # what the exact digits alone give
        threads[(ev["pid"], ev["tid"])].append((int(ts / PS), int(exact_end / PS), float(ts), got,
                                                old))
    t.ok(not bad_ps, "%s: every dur is a whole ps once rounded" % name, why=str(bad_ps[:3]))
    t.ok(not bad_sum, "%s: a double reader's ts + dur is the double of the exact end" % name,
         why=str(bad_sum[:3]))
    over = old_over = b2b = 0
    drops = {"exact": 0, "double": 0, "old": 0}
    for evs in threads.values():
        evs.sort()
        starts = [v[0] for v in evs]
        for b, end, fb, fe, fo in evs:
            i = bisect.bisect_left(starts, end)
            if i < len(evs):
                b2b += starts[i] == end
                over += fe > evs[i][2]
                old_over += fo > evs[i][2]
        drops["exact"] += treify_drops([(b, end) for b, end, _, _, _ in evs])
        drops["double"] += treify_drops([(fb, fe) for _, _, fb, fe, _ in evs])
        drops["old"] += treify_drops([(fb, fo) for _, _, fb, _, fo in evs])
    t.ok(over == 0, "%s: no double end passes the next start (%d back to back; the exact "
         "digits alone: %d overlaps)" % (name, b2b, old_over))
    t.ok(drops["double"] == drops["exact"],
         "%s: DevTools' nesting rule on the doubles drops what the exact times drop (%d; the "
         "exact digits alone: %d)" % (name, drops["exact"], drops["old"]),
         why="doubles drop %d" % drops["double"])
    return drops["exact"], old_over


def check_reader(t, name, path, want):
    """Chrome DevTools' trace engine drops exactly @want events of @path."""
    if not os.path.isdir(os.path.join(READER, "node_modules", "@paulirish")):
        print("ok %d - %s: Chrome DevTools' trace engine # SKIP not installed "
              "(tests/decode/setup-jsreader.sh)" % (t.n + 1, name))
        t.n += 1
        return
    p = subprocess.run(["node", os.path.join(READER, "overlaps.mjs"), path],
                       capture_output=True, text=True, timeout=300)
    try:
        got = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        t.ok(False, "%s: Chrome DevTools' trace engine reads trace.json" % name,
             why="exit %d: %s" % (p.returncode, p.stderr[-2000:]))
        return
    t.ok(p.returncode == 0 and got["dropped"] == want,
         "%s: Chrome DevTools' trace engine keeps every event it should (%d events, %d "
         "threads, %d dropped, %d by the exact times)" % (name, got["events"], got["threads"],
                                                        got["dropped"], want),
         why=json.dumps(got["examples"]))


def main():
    if not os.path.exists(CLI):
        return xtap.skip_all("no %s" % CLI)
    t = xtap.Tap()
    tmp = tempfile.mkdtemp(prefix="xprofs-json-times-")
    try:
        profiles = []
        b2b = os.path.join(tmp, "b2b.xplane.pb")
        b2b_profile.write(b2b)
        profiles.append((b2b, "back to back"))
        for kind in ("tpu", "gpu", "cpu"):
            out = os.path.join(tmp, kind + ".xplane.pb")
            subprocess.run([GEN, "--kind", kind, "--size", "2M", "-o", out], check=True)
            profiles.append((out, "generated " + kind))
        samples = sorted(glob.glob(os.path.join(SHARED, "samples", "*", "*.xplane.pb")))
        if not samples:
            print("# SKIP the shared samples: none under %s" % os.path.join(SHARED, "samples"))
        profiles += [(p, os.path.relpath(p, os.path.join(SHARED, "samples"))) for p in samples]
        for path, name in profiles:
            out = os.path.join(tmp, "trace.json")
            with open(out, "wb") as f:
                subprocess.run([CLI, path, "--view", "trace"], stdout=f, check=True)
            with open(out, "rb") as f:
                want, old_over = check_trace(t, name, f.read())
            if path == b2b:
                t.ok(old_over > 100 and want == 0, "back to back: the exact digits alone would "
                     "overlap (%d times); the exact times nest (%d drops)" % (old_over, want))
            check_reader(t, name, out, want)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
