#!/usr/bin/python3
"""tests/gcs/test_gcs_billing.py - `-o billing_project=P` (requester pays):
every storage request of a gs:// mount carries userProject=P.

Through a real /dev/fuse mount of the daemon against the offline emulator
behind tests/lib/fault_proxy.py (which logs every request): the mount-time
listing, metadata, ranged reads, media and resumable uploads, rename and
delete all name the project (a resumable session's chunks go to the
session URI, which carries its own billing); a mount without the option
sends none; a malformed project fails the mount with a clear message.
TAP output; exit 77 when FUSE, the xprofs binary or the emulator is absent.
"""
import os
import sys

import gcs_harness as gh

URL = "gs://bkt/logs"
REL = "run/plugins/profile/s1/"
PROJECT = "my-billing-proj-42"


def main(t, h):
    seeded = os.urandom(3 << 20)
    h.seed_files(URL, {REL + "seed.bin": seeded})

    p = h.proxy()
    mnt, proc, log = h.mount(URL, p.url, ["anonymous", "no_cache", "billing_project=" + PROJECT])
    d = os.path.join(mnt, "logdir", REL)
    with open(os.path.join(d, "seed.bin"), "rb") as f:
        got = f.read()
    with open(os.path.join(d, "small.bin"), "wb") as f:
        f.write(b"s" * 1000)
    with open(os.path.join(d, "big.bin"), "wb") as f:
        f.write(os.urandom(9 << 20))  # resumable
    os.rename(os.path.join(d, "small.bin"), os.path.join(d, "moved.bin"))
    os.unlink(os.path.join(d, "moved.bin"))
    with p.lock:
        reqs = [(m, path) for _, m, path, _, _ in p.log]
    kinds = {(m, path.split("?")[0].split("/")[1]) for m, path in reqs}
    missing = [(m, path) for m, path in reqs if "upload_id=" not in path and "userProject=" + PROJECT not in path]
    t.same(got, seeded, "reads with billing_project are byte-identical", h.log(log))
    t.ok(len(reqs) >= 6 and not missing,
         "every storage request carries userProject=%s (%d requests, %s; missing: %s)"
         % (PROJECT, len(reqs), sorted(kinds), missing[:3]), h.log(log))
    methods = {m for m, _ in reqs}
    t.ok({"GET", "POST", "DELETE"} <= methods, "listing, reads, uploads, rewrite and delete were seen (%s)" % methods)
    h.umount(mnt)

    p2 = h.proxy()
    mnt, proc, log = h.mount(URL, p2.url, ["anonymous", "no_cache"])
    with open(os.path.join(mnt, "logdir", REL, "seed.bin"), "rb") as f:
        f.read(4096)
    with p2.lock:
        sent = [path for _, _, path, _, _ in p2.log if "userProject" in path]
    t.ok(len(p2.log) > 0 and not sent, "without the option no request names a project (%s)" % sent[:2])
    h.umount(mnt)

    _, bad, bad_log = h.mount(URL, p.url, ["anonymous", "billing_project=Not A Project!"], wait=False)
    try:
        rc = bad.wait(timeout=60)
    except Exception:
        rc = None
    t.ok(rc not in (None, 0) and "billing_project" in h.log(bad_log),
         "a malformed billing project fails the mount (rc %s) with a clear message" % rc, h.log(bad_log))


if __name__ == "__main__":
    sys.exit(gh.run(main))
