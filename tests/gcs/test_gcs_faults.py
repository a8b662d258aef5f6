#!/usr/bin/python3
"""tests/gcs/test_gcs_faults.py - gs:// mounts through fault_proxy.py.

A logdir (shared samples + random blobs up to 9 MiB) is seeded into the
emulator with the official Node client; then, for each fault, a fresh
`xprofs gs://bkt/logs MNT -f -o endpoint=PROXY,anonymous` must still show a
byte-identical MNT/logdir: 503s, 429s, connection resets, truncated bodies,
a body that stalls half way, a random 30 % of reads reset, faults on the
mount-time listing, and a retried upload that the Node client then reads
back. Ranged GETs that every answer with 200 (issue 25 item 5): with the
range's Content-Range (storage-testbench's broken-stream faults) or with the
whole object; both read right, at an offset and whole, not EIO after the
deadline. Permanent failures must end, not hang: reads of an object that always
fails (503, or a stall) give EIO, and a mount whose listing always fails
exits non-zero, all within the retry deadline plus the stall timeout (short
ones, -o retry_deadline= and -o stall_timeout=, so the suite does not wait
out the 60 s / 30 s defaults; the permanent failures also show the deadline
is honoured: no EIO before it).
TAP output; exit 77 when FUSE, the xprofs binary or the emulator is absent.
"""
import errno
import json
import os
import shutil
import sys
import threading
import time

import gcs_harness as gh
from fault_proxy import Rule

URL = "gs://bkt/logs"
MEDIA = r"alt=media|/download/"
LIST = r"^GET /storage/v1/b/bkt/o\?"
# -o retry_deadline + -o stall_timeout + one backoff step + slack.
RETRY_DEADLINE_S = 10
STALL_TIMEOUT_S = 4
SHORT = ["retry_deadline=%d" % RETRY_DEADLINE_S, "stall_timeout=%d" % STALL_TIMEOUT_S]
# faults a mount recovers from: the stall timeout short, the deadline ample
RECOVER = ["retry_deadline=60", "stall_timeout=%d" % STALL_TIMEOUT_S]
PERMANENT_LIMIT_S = RETRY_DEADLINE_S + STALL_TIMEOUT_S + 40


def first_diff(got, want):
    """Why @got is not @want: None when equal, else sizes and the first differing byte."""
    if got == want:
        return None
    if got is None:
        return "nothing read"
    i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
    return "%d bytes, want %d; first difference at byte %d" % (len(got), len(want), i)


def main(t, h):
    src, rels = h.seed_logdir(URL)

    def scenario(name, rules, list_rules=(), expect_kinds=None):
        try:
            run_scenario(name, rules, list_rules, expect_kinds)
        except (RuntimeError, OSError) as e:
            t.ok(False, "%s: %s" % (name, e))

    def run_scenario(name, rules, list_rules, expect_kinds):
        p = h.proxy(faults=list_rules)
        mnt, proc, log = h.mount(URL, p.url, ["anonymous", "no_cache"] + RECOVER)
        with p.lock:  # armed after the mount: the listing is clean
            p.rules.extend(Rule.parse(r) for r in rules)
        diff = gh.compare_tree(src, os.path.join(mnt, "logdir"), rels)
        fired = dict(p.stats["faults"])
        rc = h.umount(mnt)
        ok = diff is None and rc == 0
        for k in expect_kinds or []:
            ok = ok and fired.get(k, 0) > 0
        t.ok(ok, "%s: byte-identical (faults fired %s)" % (name, fired),
             "diff: %s\nxprofs rc %s\n%s" % (diff, rc, h.log(log)))
        p.stop()
        h.proxies.remove(p)

    scenario("no faults", [])
    scenario("503 then 429 on reads", ["503,nth=1,count=2,match=" + MEDIA, "429,nth=3,count=2,match=" + MEDIA],
             expect_kinds=["503", "429"])
    scenario("connection resets on reads", ["reset,nth=2,count=3,match=" + MEDIA], expect_kinds=["reset"])
    scenario("truncated bodies", ["truncate,nth=1,count=3,match=" + MEDIA], expect_kinds=["truncate"])
    scenario("30% of reads reset", ["reset,fraction=0.3,count=20,seed=3,match=" + MEDIA],
             expect_kinds=["reset"])
    scenario("body stalls half way (stall timeout, then retry)",
             ["stall_body,nth=1,stall=120,match=blob4\\.bin.*alt=media"], expect_kinds=["stall_body"])
    scenario("503 and reset on the mount-time listing", [],
             list_rules=["reset,nth=1,match=" + LIST, "503,nth=1,count=2,match=" + LIST],
             expect_kinds=["503", "reset"])

    # Ranged GETs answered 200 by every request: with the range's
    # Content-Range (read like a 206) or with the whole object (read from
    # the offset asked). A random read at 5 MiB first (one ranged GET), then
    # the whole object (parallel ranges, read-ahead). The short deadline
    # makes a wrong answer fail fast: before the fix every retry of the
    # first kind met the same 200 and the read gave EIO after it.
    big = "blobs/plugins/profile/s1/blob4.bin"
    with open(os.path.join(src, big), "rb") as f:
        want = f.read()
    at, n = 5 << 20, 100000

    def downloaded(mnt):
        with open(os.path.join(mnt, "status.json")) as f:
            return json.load(f)["store"]["bytes_downloaded"]

    for kind in ("range200", "whole200"):
        p = h.proxy(faults=["%s,match=blob4\\.bin.*alt=media" % kind])
        mnt, proc, log = h.mount(URL, p.url, ["anonymous", "no_cache"] + SHORT)
        part = whole = err = None
        got0 = downloaded(mnt)
        t0 = time.monotonic()
        try:
            with open(os.path.join(mnt, "logdir", big), "rb") as f:
                f.seek(at)
                part = f.read(n)
                f.seek(0)
                whole = f.read()
        except OSError as e:
            err = e
        dt = time.monotonic() - t0
        got = downloaded(mnt) - got0
        fired = p.stats["faults"].get(kind, 0)
        gets = [x for x in p.log if "blob4" in x[2]]
        rc = h.umount(mnt)
        t.ok(err is None and part == want[at:at + n] and whole == want and fired >= 2 and rc == 0,
             "every ranged GET answered %s: right bytes at %d and whole (%s, %.1f s, fired %d)"
             % (kind, at, err, dt, fired),
             "offset read: %s; whole read: %s; unmount rc %s\n%s\n%s"
             % (first_diff(part, want[at:at + n]), first_diff(whole, want), rc, gets[-6:], h.log(log)))
        # Each GET stops once its range is in: at most up to its last byte
        # and one 512 KiB receive past it (a relisting's few KiB aside), not
        # on to the object's end.
        ends = [int(x[3].rpartition("-")[2]) + 1 for x in gets if x[3] and x[3].startswith("bytes=")]
        bound = sum(ends) + len(ends) * (512 << 10) + (64 << 10)
        t.ok(0 < got <= bound, "%s: %d bytes downloaded for %d GETs, at most %d" % (kind, got, len(gets), bound),
             "ranges asked: %s" % [x[3] for x in gets])
        p.stop()
        h.proxies.remove(p)

    # A retried upload through the mount, read back by the Node client.
    p = h.proxy(faults=["503,nth=1,match=^(POST|PUT) /upload/"])
    mnt, proc, log = h.mount(URL, p.url, ["anonymous", "no_cache"])
    expect = os.path.join(h.work, "expect")
    new_rel = os.path.join("newrun", "plugins", "profile", "s9", "host.xplane.pb")
    os.makedirs(os.path.dirname(os.path.join(expect, new_rel)))
    shutil.copyfile(os.path.join(src, "blobs/plugins/profile/s1/blob3.bin"), os.path.join(expect, new_rel))
    err = None
    try:
        os.makedirs(os.path.dirname(os.path.join(mnt, "logdir", new_rel)), exist_ok=True)
        shutil.copyfile(os.path.join(expect, new_rel), os.path.join(mnt, "logdir", new_rel))
    except OSError as e:
        err = e
    rc_node, out = h.node("check.js", URL, expect, "--allow-extra")
    t.ok(err is None and rc_node == 0 and p.stats["faults"].get("503", 0) == 1,
         "upload retried after a 503 is byte-identical for the Node client",
         "copy: %s\nnode: %s\nfaults %s\n%s" % (err, out, p.stats["faults"], h.log(log)))
    h.umount(mnt)

    # Permanent failures, in parallel so the test takes one deadline.
    p = h.proxy(faults=["503,match=blob3\\.bin.*alt=media", "stall,stall=600,match=blob4\\.bin.*alt=media"])
    bad = h.proxy(faults=["503,match=" + LIST])
    mnt, proc, log = h.mount(URL, p.url, ["anonymous", "no_cache"] + SHORT)
    results = {}

    def read(name):
        t0 = time.monotonic()
        try:
            with open(os.path.join(mnt, "logdir/blobs/plugins/profile/s1", name), "rb") as f:
                f.read()
            results[name] = (None, time.monotonic() - t0)
        except OSError as e:
            results[name] = (e.errno, time.monotonic() - t0)

    ths = [threading.Thread(target=read, args=(n,)) for n in ("blob3.bin", "blob4.bin")]
    for th in ths:
        th.start()
    t0 = time.monotonic()
    _, bad_proc, bad_log = h.mount(URL, bad.url, ["anonymous", "no_cache"] + SHORT, wait=False)
    try:
        bad_rc = bad_proc.wait(timeout=PERMANENT_LIMIT_S + 30)
    except Exception:
        bad_rc = None
    bad_dt = time.monotonic() - t0
    for th in ths:
        th.join(PERMANENT_LIMIT_S + 30)
    for name, kind in (("blob3.bin", "503"), ("blob4.bin", "stall")):
        e, dt = results.get(name, (None, -1))
        t.ok(e == errno.EIO and RETRY_DEADLINE_S - 1 <= dt < PERMANENT_LIMIT_S,
             "permanent %s on a read: EIO after %.0f s (limit %d s)" % (kind, dt, PERMANENT_LIMIT_S),
             "errno %s\n%s" % (e, h.log(log)))
    # The mount still serves other files after those failures.
    try:
        with open(os.path.join(mnt, "logdir/blobs/plugins/profile/s1/blob2.bin"), "rb") as f, \
                open(os.path.join(src, "blobs/plugins/profile/s1/blob2.bin"), "rb") as g:
            ok_other = f.read() == g.read()
    except OSError:
        ok_other = False
    t.ok(ok_other, "the mount keeps serving other objects after permanent failures")
    t.ok(bad_rc not in (None, 0) and RETRY_DEADLINE_S - 1 <= bad_dt < PERMANENT_LIMIT_S,
         "a listing that always fails: mount exits %s after %.0f s" % (bad_rc, bad_dt), h.log(bad_log))
    h.umount(mnt)


if __name__ == "__main__":
    sys.exit(gh.run(main))
