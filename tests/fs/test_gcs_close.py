#!/usr/bin/python3
"""tests/fs/test_gcs_close.py - writes to a gs:// mount report upload failures
from close() and fsync(), never from release() (whose result FUSE drops).

Through a real /dev/fuse mount of the daemon, against the offline GCS
emulator behind tests/lib/fault_proxy.py (the gs:// tests' harness):
- a file written and closed is an object in the bucket the moment close()
  returns (read with plain HTTP from the emulator, not through xprofs), for a
  plain file and a new profile (exclusive create);
- with every upload answered 403 (permanent), os.close() raises (and so does
  os.fsync()), and no object appears: the failure is the caller's to see;
- with every upload answered 503 (retried), os.close() raises EIO when the
  retry deadline (60 s) ends;
- once uploads work again, a second close() of a dup()ed descriptor after more
  writes uploads the new content (flush on every close, not only the last).
TAP output; exit 77 when FUSE, the xprofs binary or the emulator is absent.
"""
import errno
import os
import sys
import time

import gcs_harness as gh
from fault_proxy import Rule

URL = "gs://bkt/logs"
UPLOAD = r"^(POST|PUT) /upload/"
# -o retry_deadline (short, so the suite does not wait out the 60 s default)
# plus a backoff step and slack; EIO may not come before the deadline
RETRY_DEADLINE_S = 8
PERMANENT_LIMIT_S = RETRY_DEADLINE_S + 40


def main(t, h):
    h.seed_files(URL, {"run/plugins/profile/s1/seed.txt": b"seed\n"})
    p = h.proxy()
    mnt, proc, log = h.mount(URL, p.url, ["anonymous", "no_cache",
                                          "retry_deadline=%d" % RETRY_DEADLINE_S])
    d = os.path.join(mnt, "logdir", "run", "plugins", "profile", "s1")

    def obj(rel):
        return h.object("logs/" + rel)

    def write_close(name, data):
        return gh.write_close(os.path.join(d, name), data)

    rel = "run/plugins/profile/s1/"
    data = os.urandom(300000)
    err = write_close("ok.bin", data)
    t.ok(err is None and obj(rel + "ok.bin") == data,
         "a closed file is in the bucket when close() returns", "close: %s\n%s" % (err, h.log(log)))
    err = write_close("new.xplane.pb", data[:1000])
    t.ok(err is None and obj(rel + "new.xplane.pb") == data[:1000],
         "a new profile is in the bucket when close() returns", "close: %s\n%s" % (err, h.log(log)))

    with p.lock:
        p.rules.append(Rule.parse("403,match=" + UPLOAD))
    t0 = time.monotonic()
    err = write_close("fail.bin", b"lost?" * 1000)
    dt = time.monotonic() - t0
    t.ok(isinstance(err, OSError) and err.errno in (errno.EACCES, errno.EPERM, errno.EIO),
         "uploads refused (403): os.close() raises (%s, %.1f s)" % (err, dt), h.log(log))
    t.ok(obj(rel + "fail.bin") is None, "and no object was created")
    err = write_close("fail.xplane.pb", b"P" * 5000)
    t.ok(isinstance(err, OSError), "a new profile's failed upload: os.close() raises (%s)" % err)
    fd = os.open(os.path.join(d, "sync.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"s" * 100)
    try:
        os.fsync(fd)
        serr = None
    except OSError as e:
        serr = e
    try:
        os.close(fd)
    except OSError:
        pass
    t.ok(isinstance(serr, OSError), "uploads refused: os.fsync() raises (%s)" % serr)
    fired = p.stats["faults"].get("403", 0)
    t.ok(fired >= 3, "the proxy refused the uploads (%d)" % fired)

    with p.lock:
        p.rules.clear()
        p.rules.append(Rule.parse("503,match=" + UPLOAD))
    t0 = time.monotonic()
    err = write_close("retry.bin", b"r" * 1000)
    dt = time.monotonic() - t0
    t.ok(isinstance(err, OSError) and err.errno == errno.EIO
         and RETRY_DEADLINE_S - 1 <= dt < PERMANENT_LIMIT_S and obj(rel + "retry.bin") is None,
         "uploads always 503: os.close() raises EIO once retries end (%s, %.0f s; retry_deadline=%d)"
         % (err, dt, RETRY_DEADLINE_S), h.log(log))

    with p.lock:
        p.rules.clear()
    fd = os.open(os.path.join(d, "dup.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"first")
    fd2 = os.dup(fd)
    os.close(fd2)
    first = obj(rel + "dup.bin")
    os.write(fd, b"+second")
    os.close(fd)
    t.ok(first == b"first" and obj(rel + "dup.bin") == b"first+second",
         "each close() uploads what was written so far (dup: %r, last: %r)" % (first, obj(rel + "dup.bin")))
    t.ok(gh.Harness.log(log).count("flush/upload failed") >= 1 and "commit failed" not in gh.Harness.log(log, 200),
         "failures are logged once, from flush (release retries nothing)", h.log(log))
    rc = h.umount(mnt)
    t.ok(rc == 0, "clean unmount (%s)" % rc, h.log(log))


if __name__ == "__main__":
    sys.exit(gh.run(main))
