#!/usr/bin/python3
"""test_grouped.py - XProf's preprocessing gate on generated GPU profiles (TAP).

XProf's PreprocessSingleHostXSpace() preprocesses a space (derived lines, the
GPU streams renumbered 1, 7, 13, ...) only when it is not grouped yet
(IsXSpaceGrouped(): no plane has a stat metadata named "group_id"). A
generated GPU profile with group_id stats (xprofs-gen's default) must keep
each stream's display id as its tid and thread sort index, so the streams
keep their order, and gain no derived line (its own Steps line, which a
capture grouped on the way carries, is shown as it is); the same profile made with
--ungrouped must be renumbered and gain derived lines (so the check can
fail). Both are read through the CLI (trace.json, trace.pftrace) and the
grouped one through a mount.
"""
import os
import shutil
import subprocess
import sys

import xmount
import xproto

from check_pftrace import decode
from xproto import GEN

DERIVED = ("XLA Modules", "XLA Ops", "Framework Ops", "Framework Name Scope", "Source code",
           "Steps")


def streams(pb2, path):
    """{(plane name, display id or id): line name} of the GPU stream lines with events (the
    file's own Steps line and counter lines aside)."""
    xs = pb2.XSpace()
    with open(path, "rb") as f:
        xs.ParseFromString(f.read())
    return {(p.name, (l.display_id or l.id) & 0xffffffff): l.display_name or l.name
            for p in xs.planes if p.name.startswith("/device:GPU:")
            for l in p.lines if l.events and l.name.startswith("Stream #")}


def file_lines(pb2, path):
    """The names of the file's own lines: a derived name among them is not xprofs'."""
    xs = pb2.XSpace()
    with open(path, "rb") as f:
        xs.ParseFromString(f.read())
    return {l.display_name or l.name for p in xs.planes for l in p.lines}


def json_threads(raw):
    """{(pid, tid): (name, sort index)} of trace.json's thread metadata."""
    import json
    names, order = {}, {}
    for e in json.loads(raw)["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_sort_index":
            order[(e["pid"], e["tid"])] = e["args"]["sort_index"]
    return {k: (v, order.get(k)) for k, v in names.items()}


def pf_threads(ppb, raw):
    """{tid: name} of trace.pftrace's thread tracks (pids aside)."""
    tr = ppb.Trace()
    tr.ParseFromString(raw)
    return {(p.track_descriptor.thread.pid, p.track_descriptor.thread.tid):
            p.track_descriptor.thread.thread_name
            for p in tr.packet if p.HasField("track_descriptor") and
            p.track_descriptor.HasField("thread")}


def kept(t, where, want, tj, pf, own):
    """The grouped checks: every stream at its display id (tid and sort index), no derived
    line but the file's own (@own: its line names; a grouped capture carries its Steps)."""
    th = json_threads(tj)
    by_name = {}
    for (pid, tid), (name, order) in th.items():
        by_name.setdefault(name, []).append((tid, order))
    bad = [(n, did, by_name.get(n)) for (_, did), n in want.items()
           if (did, did) not in by_name.get(n, [])]
    t.ok(want and not bad, "%s: trace.json keeps %d GPU streams at their display ids "
         "(tid and sort index)" % (where, len(want)), bad[:3])
    der = sorted({n for n, _ in th.values() if n.startswith(DERIVED) and n not in own})
    t.ok(not der, "%s: trace.json has no derived line" % where, der[:3])
    pth = pf_threads(*pf)
    pnames = {(tid, n) for (_, tid), n in pth.items()}
    pbad = [(n, did) for (_, did), n in want.items() if (did, n) not in pnames]
    t.ok(not pbad, "%s: trace.pftrace keeps the GPU streams' display ids" % where, pbad[:3])
    pder = sorted({n for n in pth.values() if n.startswith(DERIVED) and n not in own})
    t.ok(not pder, "%s: trace.pftrace has no derived line" % where, pder[:3])


def body(t, w):
    pb2, tmp = xproto.load("xplane")
    ppb, ptmp = xproto.load("perfetto_trace")
    try:
        checks(t, w, pb2, ppb)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(ptmp, ignore_errors=True)


def checks(t, w, pb2, ppb):
    sess = w.session()
    grouped = os.path.join(sess, "gpuhost.xplane.pb")
    ungrouped = os.path.join(w.path, "ungrouped.xplane.pb")
    for path, extra in ((grouped, []), (ungrouped, ["--ungrouped"])):
        subprocess.run([GEN, "--kind", "gpu", "--size", "400K", "--seed", "5", "-o", path] +
                       extra, check=True, stdout=subprocess.DEVNULL)
    want, own = streams(pb2, grouped), file_lines(pb2, grouped)
    t.ok(any(n == "Steps" for n in own), "the grouped profile carries its Steps lines")
    tj_cli = decode(grouped, "trace")
    kept(t, "CLI grouped", want, tj_cli, (ppb, decode(grouped, "trace.pftrace")), own)
    # the ungrouped twin is preprocessed: renumbered streams and derived lines
    got = {(n, tid) for (_, tid), (n, _) in json_threads(decode(ungrouped, "trace")).items()}
    moved = [n for (_, did), n in streams(pb2, ungrouped).items() if (n, did) not in got]
    t.ok(len(moved) > 0, "CLI ungrouped: GPU streams renumbered (%d)" % len(moved))
    t.ok(any(n.startswith("XLA Ops - from #") for n, _ in got),
         "CLI ungrouped: derived XLA Ops lines")
    m = w.mount(os.path.join(w.path, "src"))
    d = os.path.join(m.mnt, "runs", "run", "s1", "gpuhost")
    tj = xmount.read_whole(os.path.join(d, "trace.json"))[1]
    pf = xmount.read_whole(os.path.join(d, "trace.pftrace"))[1]
    kept(t, "mount grouped", want, tj, (ppb, pf), own)
    t.ok(tj == tj_cli, "mount trace.json is the CLI's bytes (%d, %d)" % (len(tj), len(tj_cli)))


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-grouped-", body))
