#!/usr/bin/python3
"""test_op_profile.py - op_profile.json, framework_op_stats.json and overview's
top_ops against oracle_opstats.py (XProf's OpProfileBuilder,
ConvertOpStatsToTfStats(), ComputeAnalysisResult()), per host and per
session, and compare/<other>/op_profile.json (TAP).

- generated sessions (xprofs-gen --sidecars: GPU with its HLO only in the
  sidecar files, TPU, CPU) through the CLI (--hlo), each host and the
  session combined (oracle_opstats.merge());
- the edge profiles of stats_profiles.py (nested ops, concurrent streams,
  hostile stats, no device ops);
- the shared samples (skipped with a message without ../shared), with the
  sidecars of their directory;
- a real mount of the GPU session: the host files, the session's files and
  compare/<other>/op_profile.json are the CLI's bytes, listed where they
  belong; compare/ against a recomputation from the two sessions' oracles.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import oracle
import oracle_opstats
import oracle_stats
import stats_profiles
import xmount
import xproto

from xproto import CLI, GEN, SHARED


def cli(args):
    r = subprocess.run([CLI] + args, capture_output=True, check=False)
    return r.returncode, r.stdout, r.stderr.decode()[-300:]


def hlo_args(sidecars):
    return sum((["--hlo", s] for s in sidecars), [])


def load(pb2, path):
    xs = pb2.XSpace()
    with open(path, "rb") as fh:
        xs.ParseFromString(fh.read())
    return xs


def check(t, label, got, want):
    """got (bytes of a view or None) equals @want (the oracle's) as oracle_stats.same() says."""
    before = len(xproto.failures)
    if got is None:
        oracle.fail("%s: no output" % label)
    else:
        oracle_stats.same(json.loads(got), want, label, oracle.fail)
    return t.ok(len(xproto.failures) == before, "%s equals the recomputation" % label,
                xproto.failures[before:][:3])


def host(t, label, pb2, path, sidecars):
    """The three host views of @path against the oracle; its op stats."""
    xs = load(pb2, path)
    oracle_stats.SIDECARS[path] = tuple(sidecars)
    st = oracle_opstats.host_opstats(xs, path, oracle.stat_value, oracle.stat_name, oracle.names)
    out = {}
    for view in ("op_profile", "framework_op_stats", "overview"):
        rc, out[view], err = cli([path, "--view", view] + hlo_args(sidecars))
        t.ok(rc == 0, "%s: %s renders" % (label, view), err)
    check(t, label + " op_profile.json", out["op_profile"], oracle_opstats.op_profile(st))
    check(t, label + " framework_op_stats.json", out["framework_op_stats"],
          oracle_opstats.tf_stats(st))
    ov = json.loads(out["overview"])["top_ops"]
    check(t, label + " overview.json top_ops", json.dumps(ov).encode(), oracle_opstats.top_ops(st))
    return st


def session_want(states, hosts):
    st = states[0]
    for s in states[1:]:
        st = oracle_opstats.merge(st, s)
    head = {"session": os.path.basename(hosts[0][0]) if hosts else "",
            "hosts": [{"host": h, "error": None} for _, h in hosts]}
    return st, head


def compare_want(sa, ha, sb, hb):
    """compare/<a>/op_profile.json of session b, recomputed from the two op stats."""
    def leaves(st):
        out = {}
        for r in st["dev"]["rows"]:
            if r["idle"] or r["name"].startswith("region") or r["total"] != r["self"]:
                continue
            e = out.setdefault((r["category"], r["name"]), [0, 0, 0.0])
            e[0] += r["total"]
            e[1] += r["occ"]
            e[2] += r["flops"]
        return out
    la, lb = leaves(sa), leaves(sb)
    ta, tb = sa["dev"]["total_op_time"], sb["dev"]["total_op_time"]
    sd = oracle_opstats.safe_div

    def pair(a, b):
        return {"time_ps_base": a[0], "time_ps_new": b[0], "delta_time_ps": b[0] - a[0],
                "occurrences_base": a[1], "occurrences_new": b[1],
                "share_base": sd(a[0], ta), "share_new": sd(b[0], tb),
                "flops_per_s_base": sd(a[2], a[0]) * 1e12,
                "flops_per_s_new": sd(b[2], b[0]) * 1e12}
    cats = {}
    for k in set(la) | set(lb):
        cats.setdefault(k[0], []).append(k[1])
    zero = [0, 0, 0.0]
    rows = []
    for cat, names in cats.items():
        ca, cb = [0, 0, 0.0], [0, 0, 0.0]
        ops = []
        for n in names:
            a, b = la.get((cat, n), zero), lb.get((cat, n), zero)
            ca = [x + y for x, y in zip(ca, a)]
            cb = [x + y for x, y in zip(cb, b)]
            ops.append((-abs(b[0] - a[0]), n.encode(), dict({"name": n}, **pair(a, b))))
        ops.sort(key=lambda x: x[:2])
        rows.append((-abs(cb[0] - ca[0]), cat.encode(),
                     dict({"category": cat, "num_ops": len(ops)}, **pair(ca, cb),
                          ops=[o[2] for o in ops[:100]])))
    rows.sort(key=lambda x: x[:2])
    return {"base": ha, "new": hb, "total_op_time_ps_base": ta, "total_op_time_ps_new": tb,
            "delta_total_op_time_ps": tb - ta, "categories": [r[2] for r in rows]}


def generated(t, w, pb2):
    tmp = os.path.join(w.path, "gen")
    sessions = {}
    for kind in ("gpu", "tpu", "cpu"):
        r = subprocess.run([GEN, "--kind", kind, "--events", "3000", "--hosts", "2", "--logdir",
                            os.path.join(tmp, kind), "--run", "r", "--session", "s",
                            "--sidecars"], capture_output=True, check=False)
        if not t.ok(r.returncode == 0, "xprofs-gen writes a %s session" % kind,
                    r.stderr.decode()[-300:]):
            continue
        gdir = os.path.join(tmp, kind, "r", "plugins", "profile", "s")
        sidecars = sorted(glob.glob(os.path.join(gdir, "*.hlo_proto.pb")))
        states, hosts = [], []
        for path in sorted(glob.glob(os.path.join(gdir, "*.xplane.pb"))):
            name = os.path.basename(path)[:-len(".xplane.pb")]
            states.append(host(t, "generated %s %s" % (kind, name), pb2, path, sidecars))
            hosts.append((gdir, name))
        st, head = session_want(states, hosts)
        head["session"] = "s"
        sessions[kind] = (gdir, st, head)
        for view, fn in (("op_profile", oracle_opstats.op_profile),
                         ("framework_op_stats", oracle_opstats.tf_stats)):
            rc, got, err = cli([gdir, "--session", "--view", view])
            t.ok(rc == 0, "generated %s session %s renders" % (kind, view), err)
            check(t, "generated %s session %s.json" % (kind, view), got, dict(head, **fn(st)))
    if "gpu" in sessions and "tpu" in sessions:
        (da, sa, ha), (db, sb, hb) = sessions["tpu"], sessions["gpu"]
        rc, got, err = cli(["--compare", da, db, "--view", "op_profile"])
        t.ok(rc == 0, "compare op_profile renders", err)
        check(t, "compare tpu -> gpu op_profile.json", got, compare_want(sa, ha, sb, hb))
        rc, got, err = cli(["--compare", db, db, "--view", "op_profile"])
        same = json.loads(got) if rc == 0 else {"categories": [None]}
        t.ok(all(c["delta_time_ps"] == 0 and c["ops"] for c in same["categories"]) and
             same["categories"], "compare of a session with itself: every change 0")
    return sessions


def mounted(t, w, sessions):
    if "gpu" not in sessions or "tpu" not in sessions:
        return
    src = os.path.join(w.path, "src")
    for kind, name in (("gpu", "s1"), ("tpu", "s2")):
        shutil.copytree(sessions[kind][0], os.path.join(src, "run", "plugins", "profile", name))
    m = w.mount(src)
    base = os.path.join(m.mnt, "runs", "run")
    s1 = os.path.join(base, "s1")
    names = set(os.listdir(s1))
    t.ok({"op_profile.json", "framework_op_stats.json"} <= names,
         "the session directory lists op_profile.json and framework_op_stats.json",
         sorted(names))
    hostdir = os.path.join(s1, "host0")
    hnames = set(os.listdir(hostdir))
    t.ok({"op_profile.json", "framework_op_stats.json"} <= hnames,
         "a host directory lists op_profile.json and framework_op_stats.json", sorted(hnames))
    sidecars = sorted(glob.glob(os.path.join(src, "run", "plugins", "profile", "s1",
                                             "*.hlo_proto.pb")))
    hostpath = os.path.join(src, "run", "plugins", "profile", "s1", "host0.xplane.pb")
    for view in ("op_profile", "framework_op_stats"):
        _, got = xmount.read_whole(os.path.join(hostdir, view + ".json"))
        t.same(got, cli([hostpath, "--view", view] + hlo_args(sidecars))[1],
               "mount s1/host0/%s.json: the CLI's bytes" % view, m.log_tail)
        _, got = xmount.read_whole(os.path.join(s1, view + ".json"))
        t.same(got, cli([os.path.join(src, "run", "plugins", "profile", "s1"), "--session",
                         "--view", view])[1],
               "mount s1/%s.json: the CLI's session bytes" % view, m.log_tail)
    cdir = os.path.join(s1, "compare", "s2")
    t.ok("op_profile.json" in os.listdir(cdir), "compare/s2 lists op_profile.json",
         os.listdir(cdir))
    _, got = xmount.read_whole(os.path.join(cdir, "op_profile.json"))
    t.same(got, cli(["--compare", os.path.join(src, "run", "plugins", "profile", "s2"),
                     os.path.join(src, "run", "plugins", "profile", "s1"), "--view",
                     "op_profile"])[1], "mount s1/compare/s2/op_profile.json: the CLI's bytes",
           m.log_tail)
    # not confused with compare/s2/steps.json in the view cache
    _, steps = xmount.read_whole(os.path.join(cdir, "steps.json"))
    t.ok(steps != got and b"step_time" in steps, "compare/s2/steps.json stays steps.json")


def samples(t, pb2):
    """Every shared sample with the sidecars of its directory (skipped without ../shared)."""
    root = os.path.join(SHARED, "samples")
    paths = sorted(glob.glob(os.path.join(root, "*", "*.xplane.pb")))
    if not paths:
        print("# SKIP: no samples under %s: none checked" % root)
    for path in paths:
        here = os.path.dirname(path)
        host(t, os.path.relpath(path, root), pb2, path,
             sorted(glob.glob(os.path.join(here, "*.hlo_proto.pb"))))


def body(t, w):
    pb2, tmp = xproto.load("xplane")
    try:
        edges_dir = stats_profiles.build(pb2, tmp)
        for name, path in sorted(edges_dir.items()):
            host(t, "edge " + name, pb2, path, ())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sessions = generated(t, w, pb2)
    mounted(t, w, sessions)
    samples(t, pb2)


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-op-profile-", body))
