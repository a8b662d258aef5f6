#!/usr/bin/python3
"""test_memory.py - memory_profile.json against oracle_memory.py (TAP).

Profiles: the made-up ones of memory_profiles.py (bad input, sampling, no
host plane, and "hand", whose numbers are also checked as worked out by
hand), three generated ones (xprofs-gen --kind tpu/gpu/cpu, whose allocator
traffic has a peak the generator states in its --stats record), and every
shared sample (skipped with a message when ../shared/samples is absent).
Each render must be strict JSON (no NaN) and equal the oracle's
recomputation field by field. Each jq recipe of docs/memory.md must run
with output on the "hand" profile's file. Through a real mount (when one
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


def recipes():
    """The jq recipes of docs/memory.md (a "<!-- recipe: -->" line, then a jq line)."""
    out, on = [], False
    with open(os.path.join(xproto.SRC, "docs", "memory.md")) as f:
        for line in f.read().split("\n"):
            if line.startswith("<!-- recipe: memory_profile.json -->"):
                on = True
            elif line.startswith("jq ") and on:
                out.append(line)
                on = False
    return out


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
        for kind, f, peaks in generated(t, tmp):
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
        rs = recipes()
        t.ok(len(rs) >= 3, "docs/memory.md has jq recipes", rs)
        out = os.path.join(tmp, "memory_profile.json")
        with open(out, "wb") as f:
            f.write(render(paths["hand"])[1])
        for cmd in rs:
            r = subprocess.run(["bash", "-c", cmd + " " + out], capture_output=True)
            t.ok(r.returncode == 0 and r.stdout.strip() != b"", "recipe: %s" % cmd,
                 r.stderr.decode()[:200])
        mount_check(t, tmp, paths["hand"], render(paths["hand"])[1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
