#!/usr/bin/python3
"""test_stats_mount.py - XProf's analyses through a real mount (TAP).

A session with a GPU host (edge-streams: concurrent streams, kernels) and a
TPU host (edge-nested) from stats_profiles.py is mounted. For each host the
directory lists overview.json and kernels.json; ops.json, steps.json and
overview.json read through the mount are the CLI's bytes and equal the
independent recomputation (oracle_stats.py); kernels.json equals the oracle
on the GPU host and does not exist (ENOENT) on the TPU host. Each jq recipe
of docs/stats.md runs on the mounted GPU host's file and must succeed with
output (the session and compare recipes on the session's ops.json and on
compare/s2/ against a second session). The session's summary.json gives
each host's step time and device busy share, and the straggler against the
median, as recomputed.
"""
import errno
import json
import os
import shutil
import subprocess
import sys

import oracle
import oracle_session
import oracle_stats
import stats_profiles
import steps_profiles
import xmount
import xproto

from xproto import CLI


def recipes():
    """The jq recipes of docs/stats.md: (view, filter) for each ```jq block."""
    path = os.path.join(xproto.SRC, "docs", "stats.md")
    out, view = [], None
    with open(path) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("<!-- recipe: ") and line.endswith(" -->"):
            view = line[len("<!-- recipe: "):-len(" -->")]
        elif line.startswith("jq ") and view:
            out.append((view, line))
            view = None
    return out


def body(t, w):
    pb2, tmp = xproto.load("xplane")
    try:
        paths = stats_profiles.build(pb2, tmp)
        spaths = steps_profiles.build(pb2, tmp)  # hosts with steps (XProf's group_id steps)
        sess = w.session()
        hosts = {"gpuhost": spaths["gpus"], "tpuhost": spaths["tpusteps"]}
        for h, p in hosts.items():
            shutil.copy(p, os.path.join(sess, h + ".xplane.pb"))
        # a second session of the run, for the compare recipes (s1/compare/s2/)
        sess2 = w.session(session="s2")
        shutil.copy(paths["streams"], os.path.join(sess2, "gpuhost.xplane.pb"))
        shutil.copy(spaths["tpusteps"], os.path.join(sess2, "tpuhost.xplane.pb"))
        m = w.mount(os.path.join(w.path, "src"))
        base = os.path.join(m.mnt, "runs", "run", "s1")
        for h, p in hosts.items():
            d = os.path.join(base, h)
            names = set(os.listdir(d))
            t.ok({"overview.json", "kernels.json", "ops.json", "steps.json"} <= names,
                 "%s: ls shows the analyses" % h, sorted(names))
            xs = pb2.XSpace()
            with open(p, "rb") as f:
                xs.ParseFromString(f.read())
            for view in ("ops", "steps", "overview"):
                _, got = xmount.read_whole(os.path.join(d, view + ".json"))
                want = subprocess.run([CLI, p, "--view", view], capture_output=True).stdout
                t.same(got, want, "%s/%s.json: the CLI's bytes" % (h, view), m.log_tail)
            before = len(xproto.failures)
            _, raw = xmount.read_whole(os.path.join(d, "overview.json"))
            oracle_stats.check_overview(h, xs, json.loads(raw), oracle.stat_value,
                                        oracle.stat_name, oracle.names, oracle.fail)
            t.ok(len(xproto.failures) == before, "%s/overview.json equals the recomputation" % h,
                 xproto.failures[before:][:3])
            kpath = os.path.join(d, "kernels.json")
            if h == "gpuhost":
                _, raw = xmount.read_whole(kpath)
                oracle_stats.check_kernels(h, xs, lambda: (0, json.loads(raw)), oracle.stat_value,
                                           oracle.stat_name, oracle.names, oracle.fail)
                t.ok(len(xproto.failures) == before, "gpuhost/kernels.json equals the oracle",
                     xproto.failures[before:][:3])
            else:
                try:
                    xmount.read_whole(kpath)
                    err = 0
                except OSError as e:
                    err = e.errno
                t.ok(err == errno.ENOENT, "tpuhost/kernels.json: ENOENT (no GPU plane)",
                     os.strerror(err) if err else "it opened")
        # the session summary: per host step time and device busy share, the straggler
        _, raw = xmount.read_whole(os.path.join(base, "summary.json"))
        ss = json.loads(raw)
        avgs = {}
        for jh in ss["hosts"]:
            xs = pb2.XSpace()
            with open(hosts[jh["host"]], "rb") as f:
                xs.ParseFromString(f.read())
            ov = oracle_stats.overview_model(xs, oracle.stat_value, oracle.stat_name, oracle.names)
            st, dev = ov["step_time"], ov["device"]
            want = {"step_avg_ps": st["avg_ps"] if st else None,
                    "step_max_ps": st["max_ps"] if st else None,
                    "steps": st["steps"] if st else 0,
                    "device_busy_share": dev["duty_cycle"] if dev else None}
            before = len(xproto.failures)
            oracle_stats.same({k: jh.get(k) for k in want}, want, "session " + jh["host"],
                              oracle.fail)
            t.ok(len(xproto.failures) == before, "session summary.json: %s's step time and "
                 "device busy share" % jh["host"], xproto.failures[before:][:3])
            if st:
                avgs[jh["host"]] = st["avg_ps"]
        ratios, want = oracle_session.straggler_model(avgs)
        before = len(xproto.failures)
        oracle_stats.same(ss["straggler"], want, "straggler", oracle.fail)
        oracle_stats.same({jh["host"]: jh["straggler_ratio"] for jh in ss["hosts"]},
                          {jh["host"]: ratios.get(jh["host"]) for jh in ss["hosts"]},
                          "straggler_ratio", oracle.fail)
        t.ok(len(xproto.failures) == before, "session summary.json: the straggler against the "
             "median", ss["straggler"])
        rs = recipes()
        t.ok(len(rs) >= 4, "docs/stats.md has a jq recipe per view", rs)
        for view, cmd in rs:
            if view.startswith("session/"):  # the session's own files
                f = os.path.join(base, view[len("session/"):])
            elif view.startswith("compare/"):  # s1 compared with s2
                f = os.path.join(base, "compare", "s2", view[len("compare/"):])
            else:
                f = os.path.join(base, "gpuhost", view)
            r = subprocess.run(["bash", "-c", cmd + " " + f], capture_output=True)
            t.ok(r.returncode == 0 and r.stdout.strip() != b"",
                 "recipe on %s: %s" % (view, cmd), r.stderr.decode()[:200])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-stats-", body))
