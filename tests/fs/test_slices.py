#!/usr/bin/python3
"""tests/fs/test_slices.py - slices through a real mount (docs/trace.md "Slices").

An independent check: the full trace.json of each host is parsed here and
its events are filtered by overlap with the window ([ts, ts + dur) against
[from, to), times as exact picoseconds from the printed microseconds); the
slice steps/<n>/trace.json or window/<from>-<to>/trace.json must hold
exactly those events (X and C events as multisets; the process metadata
equal; thread names and async b/e a subset of the full file's). Profiles:
three generated ones (tpu with big lines so that the checkpoints are used,
gpu, cpu) and every ../shared/samples/*/*.xplane.pb (skipped with a message
when absent). Also: steps/ lists steps.json's indexes, a slice directory
lists trace.json and trace.pftrace (the latter equal to xprofs-decode --step),
bad names are ENOENT, 2^63 and empty windows render.

TAP output; skipped without /dev/fuse or fusermount3.
"""
import errno
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from decimal import Decimal

import xmount

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
DECODE = os.path.join(BUILD, "tools", "xprofs-decode")
SRCROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(os.path.dirname(SRCROOT), "shared", "samples")


def ps(us):
    """A trace.json time (µs, printed with every ps digit; a "dur" may carry more, docs/trace.md
    "Times") as exact ps, to the nearest."""
    return int((Decimal(repr(us) if isinstance(us, float) else str(us)) * 1000000).to_integral_value())


def us_name(p):
    """Exact ps as a µs window bound: "<int>[.<frac>]"."""
    i, f = divmod(p, 1000000)
    return "%d.%06d" % (i, f) if f else "%d" % i


def load(path):
    with open(path, "rb") as f:
        return json.loads(f.read(), parse_float=Decimal)


def key(e):
    return json.dumps(e, sort_keys=True, default=str)


class Full:
    """The full trace.json of a host, indexed once for all its slices: its X and C
    events as (start ps, duration ps, key), the keys of its process metadata, and
    the keys of all its events."""

    def __init__(self, full):
        evs = full["traceEvents"]
        self.xc = []
        for e in evs:
            if e["ph"] in ("X", "C"):
                self.xc.append((ps(e["ts"]), ps(e["dur"]) if "dur" in e else 1, e["ph"], key(e)))
        self.procs = [key(e) for e in evs if e["ph"] == "M" and "process" in e["name"]]
        self.keys = set(k for _, _, _, k in self.xc)
        self.keys.update(key(e) for e in evs if e["ph"] not in ("X", "C"))


def overlapping(full, lo, hi):
    """The X and C events of @full (a Full) overlapping [lo, hi) (ps), as sorted keys."""
    return sorted(k for s, d, _, k in full.xc if s < hi and s + max(d, 1) > lo)


def compare(t, full, sl, lo, hi, what):
    want = overlapping(full, lo, hi)
    got = sorted(key(e) for e in sl["traceEvents"] if e["ph"] in ("X", "C"))
    t.ok(got == want, "%s: %d events, exactly those overlapping the window" % (what, len(got)),
         "got %d want %d; extra %s; missing %s" % (
             len(got), len(want), sorted(set(got) - set(want))[:3],
             sorted(set(want) - set(got))[:3]))
    procs = full.procs
    sprocs = [key(e) for e in sl["traceEvents"] if e["ph"] == "M" and "process" in e["name"]]
    rest = [key(e) for e in sl["traceEvents"] if e["ph"] not in ("X", "C")]
    foreign = [k for k in rest if k not in full.keys]
    t.ok(procs == sprocs and not foreign,
         "%s: same processes; thread names and async events from the full trace" % what,
         "processes %s / %s; not in the full trace: %s" % (
             procs[:2] if procs != sprocs else "same", sprocs[:2] if procs != sprocs else "",
             foreign[:3]))
    return len(got)


def windows(full):
    """A few windows over @full's (a Full) X events: a third, a point, before all, all."""
    xs = [(s, d) for s, d, ph, _ in full.xc if ph == "X"]
    if not xs:
        return []
    lo = min(s for s, _ in xs)
    hi = max(s + max(d, 1) for s, d in xs)
    span = hi - lo
    mid = sorted(xs)[len(xs) // 2]
    return [(lo + span // 3, lo + 2 * span // 3), (mid[0], mid[0] + 1),
            (lo + span // 2 + 1, lo + span // 2 + 7), (max(lo - 1000000, 0), max(lo, 1)),
            (0, hi + 1)]


def check_host(t, hd, name, src):
    full = Full(load(os.path.join(hd, "trace.json")))
    steps = load(os.path.join(hd, "steps.json"))["steps"]
    listed = sorted(os.listdir(os.path.join(hd, "steps")), key=int) \
        if steps else os.listdir(os.path.join(hd, "steps"))
    t.ok(listed == [str(i) for i in range(len(steps))],
         "%s: steps/ lists %d steps" % (name, len(steps)), str(listed[:10]))
    for i in sorted(set([0, len(steps) // 2, len(steps) - 1])) if steps else []:
        s = steps[i]
        lo = s["start_ps"]
        hi = lo + max(s["duration_ps"], 1)
        sd = os.path.join(hd, "steps", str(i))
        t.ok(sorted(os.listdir(sd)) == ["lod", "trace.json", "trace.pftrace"],
             "%s: steps/%d lists lod/, trace.json and trace.pftrace" % (name, i))
        compare(t, full, load(os.path.join(sd, "trace.json")), lo, hi, "%s steps/%d" % (name, i))
        # the Perfetto slice is the CLI's of the same step (its format: decode-pftrace)
        want = subprocess.run([DECODE, src, "--view", "trace.pftrace", "--host", name,
                               "--step", str(i)], stdout=subprocess.PIPE, check=True).stdout
        with open(os.path.join(sd, "trace.pftrace"), "rb") as f:
            t.same(f.read(), want, "%s steps/%d/trace.pftrace: %d bytes, as xprofs-decode --step"
                   % (name, i, len(want)))
    for lo, hi in windows(full):
        n = "%s-%s" % (us_name(lo), us_name(hi))
        compare(t, full, load(os.path.join(hd, "window", n, "trace.json")), lo, hi,
                "%s window/%s" % (name, n))


def check_names(t, hd):
    bad = ["abc", "5-5", "6-5", "1-", "-1", "1e3-2e3", "+1-2", "1.-2", ".5-2", "1-2-3",
           "1" * 21 + "-" + "2" * 21, "1.1234567-2", "0-" + "9" * 70, "1 -2", ""]
    for b in bad:
        p = os.path.join(hd, "window", b, "trace.json")
        try:
            os.stat(p)
            t.ok(False, "window/%r is ENOENT" % b)
        except OSError as e:
            t.ok(e.errno == errno.ENOENT or (b == "" and e.errno == errno.ENOENT),
                 "window/%r: ENOENT" % b, str(e))
    for b in ["01", "-1", "x", "1048576", "1.5", "99999999"]:
        try:
            os.stat(os.path.join(hd, "steps", b))
            t.ok(False, "steps/%r is ENOENT" % b)
        except OSError as e:
            t.ok(e.errno == errno.ENOENT, "steps/%r: ENOENT" % b, str(e))
    try:
        open(os.path.join(hd, "steps", "1048575", "trace.json")).read()
        t.ok(False, "a step past the last fails to open")
    except OSError as e:
        t.ok(e.errno == errno.ENOENT, "a step past the last: ENOENT on open", str(e))
    for n in ["window/1-2/ops.json", "window/1-2/x", "steps/0/steps.json"]:
        t.ok(not os.path.exists(os.path.join(hd, n)), "%s does not exist" % n)
    t.ok(os.listdir(os.path.join(hd, "window")) == [], "window/ lists nothing")
    # 2^63 ps and the largest names: render, no crash, no hang
    for n in ["9223372036854.775807-9223372036854.775809", "99999999999999999998-"
              "99999999999999999999.999999", "0-99999999999999999999.999999"]:
        t0 = time.monotonic()
        j = load(os.path.join(hd, "window", n, "trace.json"))
        t.ok("traceEvents" in j and time.monotonic() - t0 < 60, "window/%s renders" % n)


def counters(mnt):
    with open(os.path.join(mnt, "status.json")) as f:
        return json.load(f)["counters"]


def check_kept_index(t, mnt, hd, src):
    """A slice after `ls steps/` reuses the index that listing built (fs/views.c kept indexes);
    a replaced profile is indexed again."""
    os.listdir(os.path.join(hd, "steps"))
    c0 = counters(mnt)
    load(os.path.join(hd, "window", "0-1.25", "trace.json"))  # not rendered before
    c1 = counters(mnt)
    t.ok(c1["profile_indexes"] == c0["profile_indexes"] and
         c1["index_reuses"] == c0["index_reuses"] + 1,
         "a new slice reuses the kept index", "%r -> %r" % (c0, c1))
    tmp = src + ".new"
    shutil.copy(src, tmp)
    os.utime(tmp, ns=(os.stat(src).st_mtime_ns + 10**9,) * 2)
    os.replace(tmp, src)
    c2 = counters(mnt)
    t.eventually(lambda: load(os.path.join(hd, "window", "0-1.5", "trace.json")),
                 "the replaced profile's slice renders", 60, check=lambda j: "traceEvents" in j)
    c3 = counters(mnt)
    t.ok(c3["profile_indexes"] > c2["profile_indexes"],
         "a replaced profile is indexed again, not served from the kept index",
         "%r -> %r" % (c2, c3))


def body(t, w):
    """The test, in the work dir @w (xmount.Workdir); results to @t."""
    work = w.path
    sess = w.session()
    for kind, size in (("tpu", "6M"), ("gpu", "1M"), ("cpu", "1M")):
        subprocess.check_call([GEN, "--kind", kind, "--size", size, "--seed", "5", "-o",
                               os.path.join(sess, "gen-%s.xplane.pb" % kind)])
    samples = sorted(glob.glob(os.path.join(SAMPLES, "*", "*.xplane.pb")))
    if not samples:
        print("# no shared samples under %s: generated profiles only" % SAMPLES)
    for i, p in enumerate(samples):
        shutil.copy(p, os.path.join(sess, "s%d-%s" % (i, os.path.basename(p))))
    m = w.mount(os.path.join(work, "src"))
    sd = os.path.join(m.mnt, "runs", "run", "s1")
    for h in sorted(os.listdir(sd)):
        if h == "summary.json":
            continue
        hd = os.path.join(sd, h)
        try:
            os.stat(os.path.join(hd, "trace.json"))
            open(os.path.join(hd, "trace.json"), "rb").read(1)
        except OSError as e:
            print("# %s: trace.json fails (%s): skipped" % (h, e))
            continue
        check_host(t, hd, h, os.path.join(sess, h + ".xplane.pb"))
    check_names(t, os.path.join(sd, "gen-tpu"))
    check_kept_index(t, m.mnt, os.path.join(sd, "gen-tpu"), os.path.join(sess, "gen-tpu.xplane.pb"))


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-slices-", body))
