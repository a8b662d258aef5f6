#!/usr/bin/python3
"""test_straggler.py - the one straggler ratio of a session (docs/stats.md "Session summary").

Made-up sessions of TPU hosts whose step times are chosen (python3-protobuf,
stats_profiles.Plane): hosts that tie (no straggler, every ratio 1), one host
with steps beside one without (no ratio at all), and three hosts of 100, 300
and 200 us (the median 200: ratios 0.5, 1.5, 1.0, the straggler the 300 us
host). summary.json's straggler and per-host straggler_ratio must equal
oracle_session.straggler_model() and the numbers worked out by hand, and
compare/<base>/steps.json must give each host the same ratio as that
session's summary.json (straggler_ratio_new, straggler_ratio_base).

Exit status: 0 pass, 1 mismatch, 77 skip (protoc absent).
"""
import json
import os
import shutil
import subprocess
import sys

import oracle_session
import oracle_stats
import stats_profiles
import xproto

from xproto import CLI, fail

# session -> {host: step durations in ps (None: a host without steps)}
SESSIONS = {
    "tie": {"a": [100000000, 100000000], "b": [100000000, 100000000]},
    "lone": {"a": [100000000], "b": None},
    "three": {"a": [100000000], "b": [300000000], "c": [200000000]},
}
HAND = {  # session: (straggler host, its ratio, {host: ratio})
    "tie": (None, None, {"a": 1.0, "b": 1.0}),
    "lone": (None, None, {"a": None, "b": None}),
    "three": ("b", 1.5, {"a": 0.5, "b": 1.5, "c": 1.0}),
}


def host_profile(pb2, path, host, steps):
    xs = pb2.XSpace()
    xs.hostnames.append(host)
    pl = stats_profiles.Plane(xs, 1, "/device:TPU:0")
    ops = pl.line(1, "XLA Ops", 1)
    if not steps:
        pl.event(ops, "fusion.1", 0, 1000, {"hlo_category": "loop fusion"})
    else:
        # XProf's TPU steps: the Steps line's events with a group_id, each
        # with an XLA op of its group (ConvertTpuDeviceTraceXLineToStepEvents())
        sl = pl.line(2, "Steps", 1)
        t = 0
        for i, d in enumerate(steps):
            pl.event(ops, "fusion.1", t, 1000, {"hlo_category": "loop fusion"}, group_id=i)
            pl.event(sl, "step %d" % i, t, d, group_id=i)
            t += d
    with open(path, "wb") as f:
        f.write(xs.SerializeToString())


def cli(args):
    r = subprocess.run([CLI] + args, capture_output=True)
    if r.returncode != 0:
        fail("xprofs-decode %s: exit %d: %s" % (args, r.returncode, r.stderr.decode()[:300]))
        return None
    return json.loads(r.stdout)


def main():
    pb2, tmp = xproto.load("xplane")
    try:
        dirs, summaries = {}, {}
        for name, hosts in SESSIONS.items():
            d = dirs[name] = os.path.join(tmp, name)
            os.makedirs(d)
            for h, steps in hosts.items():
                host_profile(pb2, os.path.join(d, h + ".xplane.pb"), h, steps)
            s = summaries[name] = cli([d, "--session", "--view", "summary"])
            if s is None:
                continue
            avgs = {h: sum(st) / len(st) for h, st in hosts.items() if st}
            ratios, want = oracle_session.straggler_model(avgs)
            oracle_stats.same(s["straggler"], want, name + " straggler", fail)
            got = {jh["host"]: jh["straggler_ratio"] for jh in s["hosts"]}
            oracle_stats.same(got, {h: ratios.get(h) for h in hosts}, name + " ratios", fail)
            host, ratio, per = HAND[name]
            st = s["straggler"]
            if (st and (st["host"], st["ratio"])) != (host and (host, ratio)) or got != per:
                fail("%s: straggler %r, ratios %r; by hand %r %r, ratios %r" %
                     (name, st, got, host, ratio, per))
        for base, new in (("tie", "three"), ("three", "lone")):
            c = cli(["--compare", dirs[base], dirs[new], "--view", "steps"])
            if c is None or summaries[base] is None or summaries[new] is None:
                continue
            for side, sess in (("base", base), ("new", new)):
                want = {jh["host"]: jh["straggler_ratio"] for jh in summaries[sess]["hosts"]}
                got = {r["host"]: r["straggler_ratio_" + side] for r in c["hosts"]
                       if r["host"] in want}
                if got != want:
                    fail("compare %s -> %s: straggler_ratio_%s %r, summary.json of %s %r" %
                         (base, new, side, got, sess, want))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xproto.status()


if __name__ == "__main__":
    sys.exit(main())
