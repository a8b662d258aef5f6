#!/usr/bin/python3
"""test_memory.py - memory_profile.json against oracle_memory.py (TAP).

Profiles: the made-up ones of memory_profiles.py (bad input, sampling, no
host plane, and "hand", whose numbers are also checked as worked out by
hand), three generated ones (xprofs-gen --kind tpu/gpu/cpu, whose allocator
traffic has a peak the generator states in its --stats record), and every
shared sample (skipped with a message when ../shared/samples is absent).
Each render must be strict JSON (no NaN) and equal the oracle's
recomputation field by field. Each jq recipe of docs/memory.md must run
with output on the "hand" profile's file. Session level: two sessions of
these profiles (one host corrupt, one without a host plane): each host's
"memory" in the session summary.json and its "memory_peak" are recomputed
from the hosts' memory_profile.json, and compare/<a>/summary.json from
the two summaries; their recipes run. Through a real mount (when one
can be made) the host directory lists memory_profile.json and it is the
CLI's bytes.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import memory_profiles
import oracle_memory
import xmount
import xproto
import xtap

from xproto import CLI, GEN, SHARED


def render(path):
    """(exit status, stdout bytes, stderr text) of the CLI's memory_profile view."""
    r = subprocess.run([CLI, path, "--view", "memory_profile"], capture_output=True)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")[:300]


def strict(raw):
    def bad(c):
        raise ValueError("non-JSON constant %s" % c)
    return json.loads(raw, parse_constant=bad)


def check_file(t, pb2, path, name):
    """The view of @path equals the oracle; returns the parsed view (or None)."""
    rc, raw, err = render(path)
    if not t.ok(rc == 0, "%s: memory_profile.json renders" % name, err):
        return None
    try:
        got = strict(raw)
    except ValueError as e:
        t.ok(False, "%s: strict JSON" % name, str(e))
        return None
    xs = pb2.XSpace()
    with open(path, "rb") as f:
        xs.ParseFromString(f.read())
    diffs = []
    oracle_memory.check(name, xs, got, diffs.append)
    t.ok(not diffs, "%s: equals the oracle (%d memory ids, %d snapshots)" % (
        name, len(got.get("memory_ids", [])),
        sum(a["num_snapshots"] for a in got.get("memory_profile_per_allocator", {}).values())),
        diffs[:1])
    return got


def hand_checks(t, got):
    h = memory_profiles.HAND
    a = got["memory_profile_per_allocator"]["hand"]
    s = a["profile_summary"]
    t.ok((s["peak_stats"]["peak_bytes_in_use"], s["peak_stats_time_ps"], s["memory_capacity"],
          s["peak_stats"]["stack_reserved_bytes"]) ==
         (h["peak"], h["time"], h["capacity"], h["stack"]),
         "hand: peak 1280 B (stack 1000 + heap 280) at 50 ps, capacity 2000 B", s)
    sizes = []
    for row in a["active_allocations"]:
        if row["special_index"] >= 0:
            sizes.append(a["special_allocations"][row["special_index"]]["allocation_bytes"])
        else:
            sizes.append(a["memory_profile_snapshots"][row["snapshot_index"]]
                         ["activity_metadata"]["allocation_bytes"])
    t.ok(sizes == h["active_bytes"], "hand: live at the peak: stack 1000, 200, 50, 30", sizes)
    t.ok(a["peak_step_id"] == 7 and [m["tf_op_name"] for m in a["special_allocations"]] ==
         ["stack"], "hand: the peak's step is group_id 7; one special row, the stack",
         (a["peak_step_id"], a["special_allocations"]))
    t.ok([m["name"] for m in got["hlo_modules"]] == ["jit_step(1)"] * 2 and
         got["hlo_modules"][1]["end_time_ps"] == 270, "hand: hlo_modules from XLA Modules",
         got["hlo_modules"])


def bad_checks(t, got):
    a = got["memory_profile_per_allocator"]
    t.ok(got["memory_ids"] == ["0", "3", "A"], "bad: ids from device_ordinal (uint64: 0), "
         "index_on_host and allocator_name; the second /host:CPU ignored", got["memory_ids"])
    A = a["A"]
    # frees at 5 ps (0x10), 30 ps (0x30) and the num_occurrences one (offset 0, before 0x50's
    # allocation); left live: 0x20 (the second allocation there), 2^64-1 (address 0), 0x40
    t.ok((A["unmatched_deallocations"], A["unfreed_allocations"]) == (3, 3),
         "bad: frees without an allocation counted, allocations never freed counted",
         (A["unmatched_deallocations"], A["unfreed_allocations"]))
    t.ok(A["profile_summary"]["peak_stats"]["peak_bytes_in_use"] == 512,
         "bad: a wrapped (negative) sum is never the peak; 2^64-1 as uint64 reads 0",
         A["profile_summary"])
    dts = {s["activity_metadata"]["data_type"] for s in A["sampled_timeline_snapshots"]}
    t.ok({"float_ref", "unknown dtype enum (31)", "unknown dtype enum (-5)",
          "unknown dtype enum (100)", "float"} <= dts, "bad: data types as DataTypeString()",
         sorted(dts))


def recipes(view="memory_profile.json"):
    """The jq recipes of docs/memory.md for @view (a "<!-- recipe: VIEW -->" line, then jq)."""
    out, on = [], False
    with open(os.path.join(xproto.SRC, "docs", "memory.md")) as f:
        for line in f.read().split("\n"):
            if line.startswith("<!-- recipe: %s -->" % view):
                on = True
            elif line.startswith("jq ") and on:
                out.append(line)
                on = False
    return out


def run_recipes(t, view, path, want=3):
    rs = recipes(view)
    t.ok(len(rs) >= want, "docs/memory.md has jq recipes for %s" % view, rs)
    for cmd in rs:
        r = subprocess.run(["bash", "-c", cmd + " " + path], capture_output=True)
        t.ok(r.returncode == 0 and r.stdout.strip() != b"", "recipe on %s: %s" % (view, cmd),
             r.stderr.decode()[:200])


def host_memory(path):
    """A host's "memory" in the session summary, from its memory_profile.json (None: none)."""
    rc, raw, _ = render(path)
    if rc != 0:
        return None
    mp = json.loads(raw)
    per = {i: mp["memory_profile_per_allocator"][i]["profile_summary"] for i in mp["memory_ids"]}
    if not per:
        return None
    top = max(mp["memory_ids"], key=lambda i: per[i]["peak_stats"]["peak_bytes_in_use"])
    return {"memory_id": top, "peak_bytes": per[top]["peak_stats"]["peak_bytes_in_use"],
            "peak_time_ps": per[top]["peak_stats_time_ps"],
            "peak_bytes_per_memory_id": {i: per[i]["peak_stats"]["peak_bytes_in_use"]
                                         for i in mp["memory_ids"]}}


def session_summary(t, d, name):
    """summary.json of session @d: each host's memory and memory_peak from memory_profile.json."""
    r = subprocess.run([CLI, d, "--session"], capture_output=True)
    if not t.ok(r.returncode == 0, "%s: session summary.json renders" % name, r.stderr[-300:]):
        return None
    got = strict(r.stdout)
    want = {h["host"]: host_memory(os.path.join(d, h["host"] + ".xplane.pb")) for h in got["hosts"]}
    have = {h["host"]: h["memory"] for h in got["hosts"]}
    t.ok(have == want, "%s: each host's memory peaks are its memory_profile.json's" % name,
         (have, want))
    best = None
    for h in got["hosts"]:
        m = want[h["host"]]
        if m and (best is None or m["peak_bytes"] > best["peak_bytes"]):
            best = {"host": h["host"], "memory_id": m["memory_id"], "peak_bytes": m["peak_bytes"],
                    "peak_time_ps": m["peak_time_ps"]}
    t.ok(got["memory_peak"] == best, "%s: memory_peak is the host with the highest peak" % name,
         (got["memory_peak"], best))
    return got


def compare_want(a, b):
    """compare/<a>/summary.json of session b, from the two sessions' summary.json."""
    def delta(x, y):
        return {"peak_bytes_base": x, "peak_bytes_new": y,
                "delta_peak_bytes": y - x if x is not None and y is not None else None}
    ha = {h["host"]: h["memory"] for h in a["hosts"]}
    hb = {h["host"]: h["memory"] for h in b["hosts"]}
    hosts = []
    for n in sorted(set(ha) | set(hb), key=lambda x: x.encode()):
        ma, mb = ha.get(n), hb.get(n)
        pa = ma["peak_bytes_per_memory_id"] if ma else {}
        pb = mb["peak_bytes_per_memory_id"] if mb else {}
        ids = [dict(memory_id=i, **delta(pa.get(i), pb.get(i)))
               for i in sorted(set(pa) | set(pb), key=lambda x: x.encode())]
        hosts.append(dict(host=n, **{"in": "both" if n in ha and n in hb else
                                     "base" if n in ha else "new"},
                          **delta(ma and ma["peak_bytes"], mb and mb["peak_bytes"]),
                          memory_ids=ids))
    pa, pb = a["memory_peak"], b["memory_peak"]
    peak = dict(host_base=pa and pa["host"], host_new=pb and pb["host"],
                **delta(pa and pa["peak_bytes"], pb and pb["peak_bytes"]))
    return peak, hosts


def session_checks(t, tmp, paths, gens):
    """Session level (docs/memory.md): summary.json's peaks and compare/<other>/summary.json."""
    da, db = os.path.join(tmp, "sa"), os.path.join(tmp, "sb")
    os.makedirs(da)
    os.makedirs(db)
    for d, files in ((da, {"h1": paths["hand"], "h2": paths["bad"], "h3": paths["nohost"]}),
                     (db, {"h1": paths["many"], "h5": paths["hand"]})):
        for h, p in files.items():
            shutil.copy(p, os.path.join(d, h + ".xplane.pb"))
    for i, (_, f, _) in enumerate(gens[:2]):
        shutil.copy(f, os.path.join(da if i == 0 else db, "h4.xplane.pb"))
    with open(os.path.join(da, "broken.xplane.pb"), "wb") as f:
        f.write(b"\x0a\x75junk")
    a, b = session_summary(t, da, "session a"), session_summary(t, db, "session b")
    if a is None or b is None:
        return
    bad = [h for h in a["hosts"] if h["host"] == "broken"]
    t.ok(bad and bad[0]["error"] and bad[0]["memory"] is None,
         "session a: a host that does not open has memory null and its error", bad)
    r = subprocess.run([CLI, "--compare", da, db, "--view", "summary"], capture_output=True)
    if not t.ok(r.returncode == 0, "compare summary.json renders", r.stderr[-300:]):
        return
    got = strict(r.stdout)
    peak, hosts = compare_want(a, b)
    t.ok(got["memory_peak"] == peak, "compare: the sessions' highest peaks and their delta",
         (got["memory_peak"], peak))
    t.ok(got["hosts"] == hosts, "compare: per host and memory id, by name, with deltas",
         (got["hosts"], hosts))
    t.ok([h["error"] for h in got["base"]["hosts"]] == [h["error"] for h in a["hosts"]] and
         got["new"]["session"] == "sb", "compare: the sessions' hosts with their errors",
         got["base"])
    for view, path, raw in (("session/summary.json", "summary.json", json.dumps(b)),
                            ("compare/summary.json", "compare.json", r.stdout.decode())):
        with open(os.path.join(tmp, path), "w") as f:
            f.write(raw)
        run_recipes(t, view, os.path.join(tmp, path), 1)


def generated(t, tmp):
    """xprofs-gen profiles: their paths and the peaks --stats states."""
    out = []
    if not os.access(GEN, os.X_OK):
        t.ok(False, "xprofs-gen built", GEN)
        return out
    for kind in ("tpu", "gpu", "cpu"):
        f = os.path.join(tmp, "gen-%s.xplane.pb" % kind)
        r = subprocess.run([GEN, "--kind", kind, "--size", "2M", "--seed", "7", "--stats",
                            "-o", f], capture_output=True)
        if not t.ok(r.returncode == 0, "xprofs-gen --kind %s" % kind, r.stderr[:300]):
            continue
        st = json.loads(r.stdout)["files"][0]
        out.append((kind, f, st.get("memory", [])))
    return out


def mount_check(t, tmp, path, want):
    why = xmount.usable()
    if why:
        print("# mount part skipped: %s" % why)
        return
    with xmount.Workdir(t, "xprofs-mem-") as w:
        sess = w.session()
        shutil.copy(path, os.path.join(sess, "host0.xplane.pb"))
        m = w.mount(os.path.join(w.path, "src"))
        d = os.path.join(m.mnt, "runs", "run", "s1", "host0")
        t.ok("memory_profile.json" in os.listdir(d), "mount: the host lists memory_profile.json",
             os.listdir(d))
        _, got = xmount.read_whole(os.path.join(d, "memory_profile.json"))
        t.same(got, want, "mount: memory_profile.json is the CLI's bytes", m.log_tail)


def main():
    if not os.access(CLI, os.X_OK):
        print("not ok 1 - %s built" % CLI)
        return 1
    pb2, tmp = xproto.load("xplane")
    t = xtap.Tap()
    try:
        paths = memory_profiles.build(pb2, tmp)
        for name, p in paths.items():
            got = check_file(t, pb2, p, name)
            if got and name == "hand":
                hand_checks(t, got)
            if got and name == "bad":
                bad_checks(t, got)
            if got and name == "many":
                a = got["memory_profile_per_allocator"]["GPU_0_bfc"]
                t.ok(len(a["sampled_timeline_snapshots"]) == 1000,
                     "many: 2503 snapshots sampled to 1000", a["num_snapshots"])
            if got and name == "nohost":
                t.ok(got["num_hosts"] == 0 and got["memory_ids"] == [], "nohost: num_hosts 0",
                     got)
        gens = generated(t, tmp)
        for kind, f, peaks in gens:
            got = check_file(t, pb2, f, "gen-" + kind)
            if got is None:
                continue
            have = {k: a["profile_summary"]["peak_stats"]["peak_bytes_in_use"]
                    for k, a in got["memory_profile_per_allocator"].items()}
            want = {m["memory_id"]: m["peak_bytes"] for m in peaks}
            t.ok(want and have == want, "gen-%s: the peaks xprofs-gen states" % kind,
                 (have, want))
        samples = sorted(glob.glob(os.path.join(SHARED, "samples", "*", "*.xplane.pb")))
        if not samples:
            print("# shared samples absent (%s): skipping them" % SHARED)
        for p in samples:
            check_file(t, pb2, p, os.path.relpath(p, SHARED))
        out = os.path.join(tmp, "memory_profile.json")
        with open(out, "wb") as f:
            f.write(render(paths["hand"])[1])
        run_recipes(t, "memory_profile.json", out)
        session_checks(t, tmp, paths, gens)
        mount_check(t, tmp, paths["hand"], render(paths["hand"])[1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
