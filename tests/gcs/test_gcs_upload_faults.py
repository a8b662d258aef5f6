#!/usr/bin/python3
"""tests/gcs/test_gcs_upload_faults.py - uploads (and one read fault) of a
gs:// mount through tests/lib/fault_proxy.py: close() succeeds exactly when
the object is stored, and a retried upload never leaves a truncated object.

Through a real /dev/fuse mount of the daemon against the offline emulator,
each fault fired once on the upload (checked in the proxy's stats):
- media upload (below 8 MiB): the connection reset half way through the
  request body (libcurl must rewind the body), the answer lost after the
  emulator stored the object (the retry's 412 is our own object: recognised
  by generation, size and CRC-32C), the answer truncated, the answer's body
  garbled; for a plain file and an exclusive create (a new profile);
- resumable upload (9 MiB: two chunks): the final chunk's answer truncated,
  garbled, or lost after the emulator stored it (the session is asked);
- the control: an exclusive create whose object another writer made in the
  meantime, with the first attempt refused (503) so that ours is retried:
  its 412 is not ours (other bytes), close() raises EEXIST and the other
  writer's object stays;
- a ranged GET answered 200 with only the range (partial 200): the read is
  retried and byte-identical, not ESTALE;
- status.json's gcs retries grow by at least one per fault, libcurl's own
  resends included.
Objects are read back with plain HTTP from the emulator, not through xprofs.
TAP output; exit 77 when FUSE, the xprofs binary or the emulator is absent.
"""
import json
import errno
import os
import sys
import urllib.parse
import urllib.request

import gcs_harness as gh
from fault_proxy import Rule

URL = "gs://bkt/logs"
REL = "run/plugins/profile/s1/"
MEDIA_UP = r"^POST /upload/.*uploadType=media"
FINAL_PUT = r"^PUT /upload/"


def main(t, h):
    seeded = os.urandom(3 << 20)
    h.seed_files(URL, {REL + "seed.bin": seeded})
    p = h.proxy()
    mnt, proc, log = h.mount(URL, p.url, ["anonymous", "no_cache"])
    d = os.path.join(mnt, "logdir", REL)

    def emu(rel, meta=False):
        return h.object("logs/" + rel, meta)

    def retries():
        with open(os.path.join(mnt, "status.json")) as f:
            st = json.load(f)

        def find(o):
            if isinstance(o, dict):
                if "retries" in o and "requests" in o:
                    return o["retries"]
                for v in o.values():
                    r = find(v)
                    if r is not None:
                        return r
            return None
        return find(st)

    def faulted(kind, match, name, size, excl=False, nth=1):
        with p.lock:
            p.rules.clear()
            p.rules.append(Rule.parse("%s,nth=%d,match=%s" % (kind, nth, match)))
        p.stats["faults"].clear()
        r0 = retries()
        data = os.urandom(size)
        err = gh.write_close(os.path.join(d, name), data, excl)
        stored = emu(REL + name)
        fired = p.stats["faults"].get(kind, 0)
        r1 = retries()
        with p.lock:
            p.rules.clear()
        t.ok(fired == 1 and err is None and stored == data,
             "%s on %s: close() succeeds and the object is ours (%s, %d bytes stored, fired %d)"
             % (kind, name, err, len(stored or b""), fired), h.log(log))
        if kind != "garble":  # an answer that came, unreadable: the object is checked, not resent
            t.ok(r1 - r0 >= 1, "%s: counted as a retry in status.json (%d -> %d)" % (kind, r0, r1))

    small = 300000
    faulted("reset_body", MEDIA_UP, "reset-body.bin", small)
    faulted("reset_after", MEDIA_UP, "lost.bin", small)
    faulted("reset_after", MEDIA_UP, "lost.xplane.pb", small, excl=True)
    faulted("truncate", MEDIA_UP, "truncated.bin", small)
    faulted("garble", MEDIA_UP, "garbled.xplane.pb", small, excl=True)
    big = 9 << 20  # above the 8 MiB resumable threshold: two chunks
    faulted("truncate", FINAL_PUT, "final-truncated.bin", big, nth=2)
    faulted("garble", FINAL_PUT, "final-garbled.bin", big, nth=2)
    faulted("reset_after", FINAL_PUT, "final-lost.xplane.pb", big, excl=True, nth=2)

    # The control: a 412 that is not ours is EEXIST, and the other object stays.
    other = os.urandom(small)
    fd = os.open(os.path.join(d, "race.xplane.pb"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, os.urandom(small))
    up = "%s/upload/storage/v1/b/bkt/o?uploadType=media&ifGenerationMatch=0&name=%s" % (
        h.emu_url, urllib.parse.quote("logs/" + REL + "race.xplane.pb", safe=""))
    urllib.request.urlopen(urllib.request.Request(up, data=other, method="POST",
                                                  headers={"Content-Type": "application/octet-stream"}),
                           timeout=30).read()
    with p.lock:
        p.rules.append(Rule.parse("503,nth=1,match=" + MEDIA_UP))
    try:
        os.close(fd)
        err = None
    except OSError as e:
        err = e
    with p.lock:
        p.rules.clear()
    t.ok(isinstance(err, OSError) and err.errno == errno.EEXIST and emu(REL + "race.xplane.pb") == other,
         "another writer's object: the retried exclusive upload fails with EEXIST (%s), theirs stays" % err,
         h.log(log))

    # A ranged GET answered 200 with only the range: retried, not ESTALE.
    with p.lock:
        p.rules.append(Rule.parse(r"partial200,nth=1,match=seed\.bin.*alt=media"))
    p.stats["faults"].clear()
    r0 = retries()
    try:
        with open(os.path.join(d, "seed.bin"), "rb") as f:
            f.seek(1 << 20)
            got, err = f.read(), None
    except OSError as e:
        got, err = None, e
    fired = p.stats["faults"].get("partial200", 0)
    with p.lock:
        p.rules.clear()
    t.ok(fired == 1 and err is None and got == seeded[1 << 20:],
         "a partial 200 to a ranged GET is retried, not ESTALE (%s, fired %d)" % (err, fired),
         "%s\n%s" % ([x for x in p.log if "seed" in x[2]][-6:], h.log(log)))
    t.ok(retries() - r0 >= 1, "and counted as a retry")
    rc = h.umount(mnt)
    t.ok(rc == 0, "clean unmount (%s)" % rc, h.log(log))


if __name__ == "__main__":
    sys.exit(gh.run(main))
