#!/usr/bin/python3
"""test_hlo_stats.py - hlo_stats.json and roofline.json against oracle_hlo_stats.py (TAP).

- generated GPU and TPU sessions of two hosts with their HLO as sidecars
  (xprofs-gen --sidecars): each host's views through the CLI with --hlo,
  and the session's (--session) against the hosts' databases combined;
- a hand-worked case: one GPU dot of known FLOPs and bytes on a plane with
  known peaks, its rates, bound and fractions written out here;
- the shared samples (skipped with a message without ../shared), each with
  its directory's sidecars, and the conv session as a session;
- a real mount of the generated GPU session: each host's files and the
  session's are the CLI's bytes, and the directories list them.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import oracle
import oracle_hlo_stats
import oracle_stats
import xmount
import xproto

from xproto import CLI, GEN, SHARED

VIEWS = (("hlo_stats", oracle_hlo_stats.hlo_stats_model),
         ("roofline", oracle_hlo_stats.roofline_model))


def fail(msg):
    """A mismatch, kept for the next t.ok()'s diagnostics (no plain line in the TAP)."""
    xproto.failures.append(msg)


def cli(args):
    r = subprocess.run([CLI] + args, capture_output=True, check=False)
    return r.returncode, r.stdout, r.stderr.decode()[-300:]


def host_db(pb2, path, sidecars):
    """oracle_hlo_stats.host_db() of the profile at @path, rendered with @sidecars."""
    oracle_stats.SIDECARS[path] = tuple(sidecars)
    with open(path, "rb") as fh:
        xs = pb2.XSpace.FromString(fh.read())
    return oracle_hlo_stats.host_db(xs, path, oracle.stat_value, oracle.stat_name, oracle.names)


def check_view(t, label, args, want):
    """The view `xprofs-decode ARGS` as strict JSON equals @want."""
    rc, out, err = cli(args)
    if not t.ok(rc == 0, "%s: renders" % label, err):
        return None
    before = len(xproto.failures)
    got = json.loads(out, parse_constant=lambda c: fail("%s: %s in JSON" % (label, c)))
    oracle_hlo_stats.compare(label, got, want, fail)
    t.ok(len(xproto.failures) == before, "%s equals the recomputation (%d rows)" % (
        label, len(want.get("ops", want.get("records", [])))), xproto.failures[before:][:3])
    return got


def check_host(t, pb2, label, path, sidecars):
    db = host_db(pb2, path, sidecars)
    hlo = [a for s in sidecars for a in ("--hlo", s)]
    for view, model in VIEWS:
        check_view(t, "%s %s.json" % (label, view), [path, "--view", view] + hlo, model(db))
    return db


def check_session(t, label, sdir, dbs, hosts):
    for view, model in VIEWS:
        got = check_view(t, "%s session %s.json" % (label, view),
                         [sdir, "--session", "--view", view],
                         model(oracle_hlo_stats.session_db(dbs)))
        if got is not None:
            t.ok([h["host"] for h in got["hosts"]] == hosts and
                 all(h["error"] is None for h in got["hosts"]),
                 "%s session %s.json: its hosts, no errors" % (label, view), got["hosts"])


def gen_session(t, w, kind):
    """A generated session of two hosts with sidecars: (dir, [host paths], [sidecars])."""
    logdir = os.path.join(w.path, "gen-" + kind)
    r = subprocess.run([GEN, "--kind", kind, "--events", "3000", "--hosts", "2", "--logdir",
                        logdir, "--run", "r", "--session", "s", "--sidecars"],
                       capture_output=True, check=False)
    t.ok(r.returncode == 0, "xprofs-gen writes a %s session with sidecars" % kind,
         r.stderr.decode()[-300:])
    d = os.path.join(logdir, "r", "plugins", "profile", "s")
    return (d, sorted(glob.glob(os.path.join(d, "*.xplane.pb"))),
            sorted(glob.glob(os.path.join(d, "*.hlo_proto.pb"))))


def generated(t, w, pb2):
    out = {}
    for kind in ("gpu", "tpu"):
        d, hosts, sidecars = gen_session(t, w, kind)
        t.ok(len(hosts) == 2 and sidecars, "%s: two hosts and sidecars" % kind,
             (hosts, sidecars))
        dbs = [check_host(t, pb2, "gen %s %s" % (kind, os.path.basename(h)), h, sidecars)
               for h in hosts]
        rows = [w_ for db in dbs for w_ in db["rows"].values()]
        t.ok(any(r["tf_op"] for r in rows) and any(r["source"] for r in rows)
             if kind == "gpu" else rows,
             "gen %s: rows carry their HLO's framework ops and source lines" % kind,
             [(r["name"], r["tf_op"], r["source"]) for r in rows[:3]])
        check_session(t, "gen " + kind, d, dbs,
                      [os.path.basename(h)[:-len(".xplane.pb")] for h in hosts])
        out[kind] = (d, hosts, sidecars)
    return out


def hand_worked(t, w, pb2):
    """One GPU plane: a dot of 2*8*16*32 = 8192 FLOPs and 4*(8*32+32*16+8*16) = 3584 bytes
    run twice for 1 µs and 3 µs, an H100-like peak (1e15 FLOP/s, 1e12 B/s)."""
    X = pb2
    xs = X.XSpace()
    p = xs.planes.add(id=1, name="/device:GPU:0")
    names = {1: "program_id", 2: "hlo_op", 3: "flops", 4: "bytes_accessed",
             5: "peak_teraflops_per_second", 6: "memory_bandwidth", 7: "hlo_module",
             8: "group_id"}
    for i, n in names.items():
        p.stat_metadata[i].id = i
        p.stat_metadata[i].name = n
    p.stats.add(metadata_id=5, double_value=1000.0)
    p.stats.add(metadata_id=6, uint64_value=10 ** 12)
    p.event_metadata[1].id = 1
    p.event_metadata[1].name = "dot_kernel"
    line = p.lines.add(id=1, name="Stream #1", timestamp_ns=1000)
    for off, dur, grp in ((0, 1000000, 1), (5000000, 3000000, 2)):
        e = line.events.add(metadata_id=1, offset_ps=off, duration_ps=dur)
        e.stats.add(metadata_id=1, uint64_value=7)
        e.stats.add(metadata_id=2, str_value="dot.1")
        e.stats.add(metadata_id=3, uint64_value=8192)
        e.stats.add(metadata_id=4, uint64_value=3584)
        e.stats.add(metadata_id=8, int64_value=grp)
    path = os.path.join(w.path, "hand.xplane.pb")
    with open(path, "wb") as fh:
        fh.write(xs.SerializeToString())
    rc, out, err = cli([path, "--view", "hlo_stats"])
    if not t.ok(rc == 0, "hand: hlo_stats.json renders", err):
        return
    ops = json.loads(out)["ops"]
    want = {"rank": 1, "program_id": "7", "hlo_op_name": "dot.1", "occurrences": 2,
            "total_time_ps": 4000000, "avg_time_ps": 2000000, "total_self_time_fraction": 1,
            "flops": 16384, "bytes_accessed": 7168,
            "measured_flops_per_s": 16384 / 4e-6, "hbm_bytes_per_s": 7168 / 4e-6,
            "operational_intensity": 16384 / 7168,
            # 4.096e9 FLOP/s of 1e15 is 4.1e-6; 1.792e9 B/s of 1e12 is 1.8e-3: HBM
            "bound_by": "HBM"}
    got = {k: ops[0].get(k) for k in want} if len(ops) == 1 else ops
    t.ok(len(ops) == 1 and all(oracle_stats.close(got[k], v) for k, v in want.items()),
         "hand: the dot's row, worked out by hand", (got, want))
    rc, out, err = cli([path, "--view", "roofline"])
    rec = json.loads(out)["records"] if rc == 0 else []
    want_p = {"operation": "Program", "rank": 0, "total_time_ps": 4000000, "flops": 16384,
              "roofline_efficiency": 1.792e9 / 1e12, "compute_efficiency": 4.096e9 / 1e15}
    t.ok(len(rec) == 2 and all(oracle_stats.close(rec[0].get(k), v)
                               for k, v in want_p.items()) and
         oracle_stats.close(json.loads(out)["hbm_ridge_point"], 1000.0),
         "hand: roofline's Program record and ridge point (1e15 / 1e12)", rec[:1])


def samples(t, pb2):
    """Every shared sample directory's profiles with its sidecars; skipped without ../shared."""
    root = os.path.join(SHARED, "samples")
    dirs = sorted({os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", "*.xplane.pb"))})
    if not dirs:
        print("# SKIP: no shared samples under %s" % root)
    for d in dirs:
        sidecars = sorted(glob.glob(os.path.join(d, "*.hlo_proto.pb")))
        for path in sorted(glob.glob(os.path.join(d, "*.xplane.pb"))):
            db = check_host(t, pb2, os.path.relpath(path, root), path, sidecars)
            if sidecars:  # the conv session: as a session too (the CLI attaches its sidecars)
                check_session(t, os.path.basename(d), d, [db],
                              [os.path.basename(path)[:-len(".xplane.pb")]])


def mounted(t, w, gen):
    d, hosts, _ = gen["gpu"]
    m = w.mount(os.path.join(w.path, "gen-gpu"))
    base = os.path.join(m.mnt, "runs", "r", "s")
    names = set(os.listdir(base))
    t.ok({"hlo_stats.json", "roofline.json"} <= names, "the session lists hlo_stats.json and "
         "roofline.json", sorted(names))
    for view, _ in VIEWS:
        _, got = xmount.read_whole(os.path.join(base, view + ".json"))
        t.same(got, cli([d, "--session", "--view", view])[1],
               "mount s/%s.json: the CLI's session bytes" % view, m.log_tail)
        for h in hosts:
            host = os.path.basename(h)[:-len(".xplane.pb")]
            sidecars = sorted(glob.glob(os.path.join(d, "*.hlo_proto.pb")))
            _, got = xmount.read_whole(os.path.join(base, host, view + ".json"))
            want = cli([h, "--view", view] + [a for s in sidecars for a in ("--hlo", s)])[1]
            t.same(got, want, "mount s/%s/%s.json: the CLI's bytes with the sidecars" % (
                host, view), m.log_tail)


def body(t, w):
    pb2, tmp = xproto.load("xplane")
    shutil.rmtree(tmp, ignore_errors=True)
    gen = generated(t, w, pb2)
    hand_worked(t, w, pb2)
    samples(t, pb2)
    mounted(t, w, gen)


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-hlo-stats-", body))
