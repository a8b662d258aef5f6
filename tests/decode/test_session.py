#!/usr/bin/python3
"""test_session.py - session ops.json and compare (docs/stats.md) against oracle_session.py.

`xprofs-decode DIR --session --view ops` and `xprofs-decode --compare BASE
NEW --view ops|steps` are recomputed from a python3-protobuf parse of every
host (oracle_session.py, XProf's OpMetricsDbCombiner rules) on:

- generated sessions (xprofs-gen): two TPU sessions of 2 and 3 hosts and a
  GPU session, compared TPU to TPU, TPU to GPU (no op in common) and a
  session with itself (every delta 0);
- the edge profiles of stats_profiles.py as the hosts of one session, plus
  two hosts running the same op name in two programs (two rows in the
  session table, keyed by program; one row in compare, matched by name);
- the shared samples split into two sessions (skipped with a note when
  ../shared is absent).

Also: strict JSON (no NaN), a bad --compare directory exits 1 with one
line, a view other than ops/steps exits 2. Exit 0 pass, 1 fail, 77 skip.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import oracle
import oracle_session
import oracle_stats
import stats_profiles
import xproto

from xproto import CLI, GEN, SHARED, fail, failures

SV, SN, NAMES = oracle.stat_value, oracle.stat_name, oracle.names


def strict(raw, what):
    def bad(c):
        raise ValueError("%s: non-JSON constant %s" % (what, c))
    return json.loads(raw, parse_constant=bad)


def cli(args, what):
    p = subprocess.run([CLI] + args, capture_output=True)
    if p.returncode != 0:
        fail("%s: exit %d: %s" % (what, p.returncode, p.stderr.decode()[-300:]))
        return None
    return strict(p.stdout, what)


def load(pb2, d):
    """(session name, [(host, XSpace)]) of session directory @d, hosts in name order."""
    out = []
    for f in sorted(glob.glob(os.path.join(d, "*.xplane.pb")),
                    key=lambda f: os.path.basename(f).encode()):
        xs = pb2.XSpace()
        with open(f, "rb") as fh:
            xs.ParseFromString(fh.read())
        out.append((os.path.basename(f)[:-len(".xplane.pb")], xs))
    return os.path.basename(d.rstrip("/")), out


def check_session(pb2, d):
    got = cli([d, "--session", "--view", "ops"], d + " session ops")
    if got is None:
        return None
    name, xss = load(pb2, d)
    before = len(failures)
    oracle_stats.same(got, oracle_session.session_ops_model(name, xss, SV, SN, NAMES),
                      d + ": session ops", fail)
    print("%s session ops.json %s (%d hosts)" % ("ok" if len(failures) == before else "FAIL",
                                                 name, len(xss)))
    return got


def check_compare(pb2, a, b):
    out = {}
    for view in ("ops", "steps"):
        got = cli(["--compare", a, b, "--view", view], "%s -> %s %s" % (a, b, view))
        if got is None:
            continue
        base, new = load(pb2, a), load(pb2, b)
        want = (oracle_session.compare_ops_model(base, new, SV, SN, NAMES) if view == "ops"
                else oracle_session.compare_steps_model(base, new, SV, SN))
        before = len(failures)
        oracle_stats.same(got, want, "compare %s -> %s %s" % (a, b, view), fail)
        print("%s compare %s -> %s %s.json" % ("ok" if len(failures) == before else "FAIL",
                                               base[0], new[0], view))
        out[view] = got
    return out


def gen(logdir, session, hosts, seed, kind="tpu"):
    subprocess.run([GEN, "--kind", kind, "--hosts", str(hosts), "--logdir", logdir, "--run", "r",
                    "--session", session, "--size", "200K", "--seed", str(seed)], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(logdir, "r", "plugins", "profile", session)


def two_programs(pb2, d):
    """Hosts pa, pb: op "fusion.1" of program jit_a(1) on pa, of jit_b(2) on pb."""
    os.makedirs(d)
    for host, prog, pid, off in (("pa", "jit_a", 1, 0), ("pb", "jit_b", 2, 5000)):
        xs = pb2.XSpace()
        pl = stats_profiles.Plane(xs, 1, "/device:TPU:0")
        stats_profiles.tpu_peaks(pl)
        ops = pl.line(1, "XLA Ops", 1)
        pl.event(ops, "fusion.1", off, 1000, {"hlo_category": "loop fusion"}, hlo_module=prog,
                 program_id=pid)
        pl.event(ops, "copy.2", off + 2000, 500, {"hlo_category": ""}, hlo_module=prog,
                 program_id=pid)
        with open(os.path.join(d, host + ".xplane.pb"), "wb") as f:
            f.write(xs.SerializeToString())


def hand_checks(pb2, tmp, sess):
    """Numbers worked out by hand."""
    d = os.path.join(tmp, "progs")
    two_programs(pb2, d)
    got = check_session(pb2, d)
    if got:
        rows = [(o["name"], o["program"], o["self_ps"]) for o in got["device"]["ops"]]
        want = [("fusion.1", "jit_a(1)", 1000), ("fusion.1", "jit_b(2)", 1000),
                ("copy.2", "jit_a(1)", 500), ("copy.2", "jit_b(2)", 500)]
        if rows != want:
            fail("two programs: session rows %r, by hand %r" % (rows, want))
    one = os.path.join(tmp, "one")
    os.makedirs(one)
    shutil.copy(os.path.join(d, "pa.xplane.pb"), one)
    c = check_compare(pb2, one, d)
    if "ops" in c:
        rows = {o["name"]: (o["in"], o["occurrences_base"], o["occurrences_new"],
                            o["delta_self_ps"]) for o in c["ops"]["device"]["ops"]}
        if rows != {"fusion.1": ("both", 1, 2, 1000), "copy.2": ("both", 1, 2, 500)}:
            fail("two programs: compare rows by name %r" % rows)
        if [o["name"] for o in c["ops"]["device"]["ops"]] != ["fusion.1", "copy.2"]:
            fail("compare: not sorted by |delta self|")
    # a session against itself: every delta 0
    c = check_compare(pb2, sess, sess)
    if "ops" in c:
        for k in ("device", "host"):
            for o in (c["ops"][k] or {"ops": []})["ops"]:
                if o["delta_self_ps"] or o["delta_occurrences"] or o["in"] != "both":
                    fail("self compare: %s %r" % (k, o))
    if "steps" in c and c["steps"]["step_time"]["delta_avg_ps"] not in (0, None):
        fail("self compare: step delta %r" % c["steps"]["step_time"]["delta_avg_ps"])
    # bad input: one line, exit 1; a view compare does not have: exit 2
    p = subprocess.run([CLI, "--compare", os.path.join(tmp, "nope"), sess], capture_output=True)
    if p.returncode != 1 or len(p.stderr.decode().strip().splitlines()) != 1:
        fail("--compare of a missing directory: exit %d, %r" % (p.returncode, p.stderr))
    p = subprocess.run([CLI, "--compare", sess, sess, "--view", "trace"], capture_output=True)
    if p.returncode != 2:
        fail("--compare --view trace: exit %d, want 2" % p.returncode)
    p = subprocess.run([CLI, sess, "--session", "--view", "steps"], capture_output=True)
    if p.returncode != 2:
        fail("--session --view steps: exit %d, want 2" % p.returncode)


def main():
    if not os.access(CLI, os.X_OK) or not os.access(GEN, os.X_OK):
        print("FAIL: %s or %s not built" % (CLI, GEN))
        return 1
    pb2, tmp = xproto.load("xplane")
    try:
        logdir = os.path.join(tmp, "logdir")
        s1 = gen(logdir, "s1", 2, 3)
        s2 = gen(logdir, "s2", 3, 4)
        s3 = gen(logdir, "s3", 2, 5, "gpu")
        for s in (s1, s2, s3):
            check_session(pb2, s)
        check_compare(pb2, s1, s2)
        check_compare(pb2, s2, s3)
        # the edge profiles as the hosts of one session
        edge = os.path.join(tmp, "edge")
        os.makedirs(edge)
        for name, path in stats_profiles.build(pb2, tmp).items():
            shutil.copy(path, os.path.join(edge, name + ".xplane.pb"))
        check_session(pb2, edge)
        check_compare(pb2, s3, edge)
        hand_checks(pb2, tmp, s1)
        samples = sorted(glob.glob(os.path.join(SHARED, "samples", "*", "*.xplane.pb")))
        if not samples:
            print("note: no shared samples under %s (../shared absent): skipping them" % SHARED)
        else:
            halves = [os.path.join(tmp, "sa"), os.path.join(tmp, "sb")]
            for i, f in enumerate(samples):
                d = halves[i % 2]
                os.makedirs(d, exist_ok=True)
                host = "%s-%s" % (os.path.basename(os.path.dirname(f)),
                                  os.path.basename(f)[:-len(".xplane.pb")])
                os.symlink(f, os.path.join(d, host + ".xplane.pb"))
            for d in halves:
                check_session(pb2, d)
            check_compare(pb2, halves[0], halves[1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        for f in failures[:20]:
            print("#", f)
        print("%d mismatches" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
