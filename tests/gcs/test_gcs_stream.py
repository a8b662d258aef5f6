#!/usr/bin/python3
"""tests/gcs/test_gcs_stream.py - streaming sequential reads of gs:// objects
(gcs/stream.c) through a real FUSE mount, with tests/lib/fault_proxy.py
between the daemon and the emulator.

A sequential reader of a 64 MiB object must cost one long GET (plus the
ranged GETs of its first blocks), not one GET per few MiB; a reset, a cut
(RST or FIN) or a stall in the middle of that stream is retried from the
byte where it stopped (the retry's Range says so), 503s are retried; a seek
in the middle of a stream drops it (status.json's streams_ended) and reads
go on correctly with each byte downloaded about once, and random reads
start no stream. The stream's blocks reach the disk cache as group entries
(a few files, not one per MiB) that a remount reads back with no GET. An
object replaced in the middle of a stream never gives spliced bytes: the
reader gets its version's bytes and then ESTALE (after a seek to bytes not
fetched yet, or when the stream is cut and its retry finds the generation
gone), and one FUSE read across a block it has and one it lacks is ESTALE,
not a short count (which the kernel would take for the end of the file).
Every byte read is compared with the object. Every mount must exit 0
(under ASan: no error or leak report).

The faults are aimed at the stream's request alone: the only GET whose
Range ends at the object's last byte (fault_proxy's range= option). No
fixed sleeps: every wait is a read that blocks until its bytes arrive, the
stall is detected by the daemon's -o stall_timeout, and the one poll
(streams_ended) has a deadline. TAP output; exit 77 without FUSE, the
daemon or the emulator.
"""
import errno
import json
import mmap
import os
import random
import sys
import time
import urllib.parse
import urllib.request

import gcs_harness as gh
from fault_proxy import Rule

URL = "gs://bkt/logs"
MIB = 1 << 20
SIZE = 64 * MIB + 12345  # a short last block
LAST = SIZE - 1
STALL_TIMEOUT_S = 4
OPTS = ["anonymous", "no_cache", "stall_timeout=%d" % STALL_TIMEOUT_S, "retry_deadline=60"]
STREAM_RANGE = r"-%d$" % LAST  # the stream asks up to the last byte; ranged GETs never here
CUT = 24 * MIB  # where body faults stop the stream's answer
REPLACE_CUT = 46 * MIB
# Case 5b pauses its reader for an upload between two reads; on a loaded machine
# that pause can outlast a stream's 10 s idle end (then no cut is ever met and
# the case tests nothing it means to): the mounts here wait for their readers.
os.environ["XPROFS_TEST_STREAM_IDLE_MS"] = "600000"


def upload(h, name, data):
    q = urllib.parse.urlencode({"uploadType": "media", "name": "logs/" + name})
    rq = urllib.request.Request("%s/upload/storage/v1/b/bkt/o?%s" % (h.emu_url, q), data=data,
                                method="POST", headers={"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(rq, timeout=120) as r:
        return json.loads(r.read())


def status(mnt):
    with open(os.path.join(mnt, "status.json")) as f:
        return json.load(f)["store"]


def stream_requests(p, name="big.bin"):
    """(first byte asked, fault fired or None) of each stream request for
    @name the proxy saw, in order."""
    with p.lock:
        log = list(p.log)
    out = []
    for _, method, path, rng, fault in log:
        if (method == "GET" and "alt=media" in path and "%2F" + name + "?" in path and rng
                and rng.endswith("-%d" % LAST)):
            out.append((int(rng.split("=")[1].split("-")[0]), fault))
    return out


def stream_starts(p, name="big.bin"):
    return [a for a, _ in stream_requests(p, name)]


def media_gets(p):
    with p.lock:
        return sum(1 for e in p.log if e[1] == "GET" and "alt=media" in e[2])


def read_seq(fd, start, end, step=MIB):
    """Sequential reads [start, end) in @step pieces; (bytes, errno or None)."""
    out = bytearray()
    off = start
    while off < end:
        try:
            b = os.pread(fd, min(step, end - off), off)
        except OSError as e:
            return bytes(out), e.errno
        if not b:
            break
        out += b
        off += len(b)
    return bytes(out), None


def main(t, h):
    rng = random.Random(12)
    h.start_emulator()
    want = rng.randbytes(SIZE)
    upload(h, "big.bin", want)

    def mount(rules=()):
        p = h.proxy(faults=rules)
        mnt, _, log = h.mount(URL, p.url, OPTS)
        return p, mnt, log

    exits = []

    def done(p, mnt):
        exits.append((h.umount(mnt), h.log(h.mounts[-1][2])))
        p.stop()
        h.proxies.remove(p)

    # 1. A clean sequential read: one stream.
    p, mnt, log = mount()
    fd = os.open(os.path.join(mnt, "logdir", "big.bin"), os.O_RDONLY)
    got, e = read_seq(fd, 0, SIZE)
    os.close(fd)
    st = status(mnt)
    starts, gets = stream_starts(p), media_gets(p)
    t.ok(e is None and got == want, "sequential read of %d bytes is byte-identical" % SIZE,
         "errno %s, %d bytes\n%s" % (e, len(got), h.log(log)))
    # (a read the kernel's read-ahead reordered past the "near miss" slack
    # would count as a seek and start a second stream: allowed, rare)
    t.ok(1 <= len(starts) <= 2 and starts[0] % MIB == 0 and starts[0] <= 8 * MIB and gets <= 8
         and 1 <= st["blocks"]["streams"] <= 2,
         "one stream (from %s) and %d media GETs for 64 MiB (ranged GETs alone take about 20)"
         % (starts, gets), json.dumps(st))
    done(p, mnt)

    # 2. Faults in the middle of the stream: retried, resumed where it stopped.
    for name, spec, resumes_at_cut in [
            ("503 on the stream's request", "503", False),
            ("reset of the stream's request", "reset", False),
            ("RST in the middle of the stream", "truncate,cut=%d" % CUT, None),
            ("FIN (short body) in the middle of the stream", "close_body,cut=%d" % CUT, True),
            ("stall in the middle of the stream", "stall_body,stall=120,cut=%d" % CUT, True)]:
        p, mnt, log = mount()
        with p.lock:
            p.rules.append(Rule.parse("%s,count=1,range=%s,match=alt=media" % (spec, STREAM_RANGE)))
        fd = os.open(os.path.join(mnt, "logdir", "big.bin"), os.O_RDONLY)
        got, e = read_seq(fd, 0, SIZE)
        os.close(fd)
        st = status(mnt)
        reqs, fired = stream_requests(p), sum(p.stats["faults"].values())
        starts = [a for a, _ in reqs]
        hit = [i for i, (_, f) in enumerate(reqs) if f]
        ok = e is None and got == want and fired == 1 and st["retries"] >= 1 and len(hit) == 1
        ok = ok and hit[0] + 1 < len(reqs)  # the faulted request and its retry
        if ok:
            a, b = reqs[hit[0]][0], reqs[hit[0] + 1][0]
            if resumes_at_cut is True:  # every byte before the cut was taken: the retry asks for the rest
                ok = b == a + CUT
            elif resumes_at_cut is None:  # an RST may drop what was in flight, but not go back
                ok = a < b <= a + CUT
            else:  # no body came: the same range again
                ok = b == a
        t.ok(ok, "%s: byte-identical, retried (stream requests from %s, %d retries)"
             % (name, starts, st["retries"]),
             "errno %s, %d bytes equal %s, fired %d\n%s\n%s"
             % (e, len(got), got == want, fired, json.dumps(st), h.log(log)))
        done(p, mnt)

    # 3. A seek in the middle of a stream drops it (status.json's
    # streams_ended, polled: the stream's thread ends on its own), and
    # reads go on right; once sequential again a new stream may start, or
    # ranged GETs and prefetch jobs cover the rest if the dropped one is
    # still ending. Each byte is downloaded once, plus at most what a dropped
    # stream had fetched ahead of its reader.
    p, mnt, log = mount()
    fd = os.open(os.path.join(mnt, "logdir", "big.bin"), os.O_RDONLY)
    parts = [(0, 16 * MIB), (44 * MIB, 46 * MIB), (20 * MIB, 24 * MIB), (46 * MIB, SIZE)]
    bad = []
    for a, b in parts:
        got, e = read_seq(fd, a, b)
        if e is not None or got != want[a:b]:
            bad.append((a, b, e, len(got)))
    end = time.monotonic() + 60
    while status(mnt)["blocks"]["streams_ended"] < 1 and time.monotonic() < end:
        time.sleep(0.05)  # polling for the event, with a deadline
    st = status(mnt)
    starts = stream_starts(p)
    # a dropped stream wastes at most what it ran ahead of its reader (32 MiB by
    # design); how far ahead it was at the seek depends on the machine's load
    budget = SIZE + st["blocks"]["streams_ended"] * 32 * MIB + 2 * MIB
    t.ok(not bad and st["blocks"]["streams_ended"] >= 1 and st["bytes_downloaded"] <= budget,
         "seek in the middle of a stream: bytes right, the stream dropped (%d ended early), "
         "%d bytes downloaded for %d (streams from %s)"
         % (st["blocks"]["streams_ended"], st["bytes_downloaded"], SIZE, starts),
         "bad %s\n%s\n%s" % (bad, json.dumps(st), h.log(log)))
    os.close(fd)
    done(p, mnt)

    p, mnt, log = mount()
    fd = os.open(os.path.join(mnt, "logdir", "big.bin"), os.O_RDONLY)
    bad = []
    off = 0
    for _ in range(40):
        prev = off
        while abs(off - prev) < 4 * MIB:  # never "sequential" by chance
            off = rng.randrange(0, SIZE - 4096)
        if os.pread(fd, 4096, off) != want[off:off + 4096]:
            bad.append(off)
    os.close(fd)
    st = status(mnt)
    t.ok(not bad and st["blocks"]["streams"] == 0 and not stream_starts(p),
         "40 random 4 KiB reads: bytes right, no stream (%d media GETs)" % media_gets(p),
         "bad %s\n%s" % (bad, json.dumps(st)))
    done(p, mnt)

    # 4. The disk cache: a stream stores its blocks 16 to an entry (a few
    # files, not one per MiB); a remount reads them all back from there.
    p = h.proxy()
    mnt, _, log = h.mount(URL, p.url, [o for o in OPTS if o != "no_cache"])
    cache_dir = os.path.join(h.work, "cache-%d" % (len(h.mounts) - 1))
    fd = os.open(os.path.join(mnt, "logdir", "big.bin"), os.O_RDONLY)
    got, e = read_seq(fd, 0, SIZE)
    os.close(fd)
    done(p, mnt)  # joins the disk writer: every entry is on disk now
    files = sum(len(fs) for d, _, fs in os.walk(cache_dir) if os.path.basename(d) != "tmp")
    os.symlink(cache_dir, os.path.join(h.work, "cache-%d" % len(h.mounts)))  # the next mount's
    p = h.proxy()
    mnt, _, log = h.mount(URL, p.url, [o for o in OPTS if o != "no_cache"])
    fd = os.open(os.path.join(mnt, "logdir", "big.bin"), os.O_RDONLY)
    got2, e2 = read_seq(fd, 0, SIZE)
    os.close(fd)
    st, gets = status(mnt), media_gets(p)
    t.ok(e is None and got == want and files <= 32,  # one per block: 65
         "the stream's blocks went to the disk cache as %d files (65 blocks; the first group one by one)" % files,
         "errno %s, bytes equal %s" % (e, got == want))
    t.ok(e2 is None and got2 == want and gets == 0 and st["blocks"]["disk_hits"] >= 64,
         "after a remount every block comes from the disk cache: %d GETs, %d disk hits"
         % (gets, st["blocks"]["disk_hits"]), "errno %s, bytes equal %s\n%s\n%s"
         % (e2, got2 == want, json.dumps(st), h.log(log)))
    done(p, mnt)

    # 4b. gs:// blocks are stored in the disk cache as they are (docs/gcs.md
    # "Disk cache": lz4 cost more CPU than the transfer): a compressible
    # object takes its whole size there, and reads back right after a remount.
    text = b"".join(b"op %08d fusion.%d\n" % (i, i % 97) for i in range(8 * MIB // 20))
    upload(h, "text.bin", text)
    p = h.proxy()
    mnt, _, log = h.mount(URL, p.url, [o for o in OPTS if o != "no_cache"])
    cache_dir = os.path.join(h.work, "cache-%d" % (len(h.mounts) - 1))
    fd = os.open(os.path.join(mnt, "logdir", "text.bin"), os.O_RDONLY)
    got, e = read_seq(fd, 0, len(text))
    os.close(fd)
    done(p, mnt)
    stored = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(cache_dir)
                 if os.path.basename(d) != "tmp" for f in fs)
    os.symlink(cache_dir, os.path.join(h.work, "cache-%d" % len(h.mounts)))
    p = h.proxy()
    mnt, _, log = h.mount(URL, p.url, [o for o in OPTS if o != "no_cache"])
    fd = os.open(os.path.join(mnt, "logdir", "text.bin"), os.O_RDONLY)
    got2, e2 = read_seq(fd, 0, len(text))
    os.close(fd)
    gets = media_gets(p)
    t.ok(e is None and got == text and stored >= len(text) and e2 is None and got2 == text
         and gets == 0,
         "a compressible object's blocks are stored uncompressed (%d bytes on disk for %d) "
         "and read back after a remount with %d GETs" % (stored, len(text), gets),
         "errno %s / %s, bytes equal %s / %s\n%s" % (e, e2, got == text, got2 == text, h.log(log)))
    done(p, mnt)

    # 5. The object replaced in the middle of a stream.
    old = [rng.randbytes(SIZE), rng.randbytes(SIZE)]
    upload(h, "r0.bin", old[0])
    for attempt in range(3):  # case b's objects (the mount lists them once)
        upload(h, "r1-%d.bin" % attempt, old[1])
    upload(h, "r2.bin", old[0])
    p, mnt, log = mount()
    # a) replaced, then a seek past what the stream fetched: ESTALE there; the
    # bytes this reader had stay its version's, the rest is ESTALE too.
    fd = os.open(os.path.join(mnt, "logdir", "r0.bin"), os.O_RDONLY)
    got, e = read_seq(fd, 0, 8 * MIB)
    ok_before = e is None and got == old[0][:8 * MIB]
    upload(h, "r0.bin", rng.randbytes(SIZE))
    try:
        os.pread(fd, MIB, 56 * MIB)
        e_seek = None
    except OSError as x:
        e_seek = x.errno
    got, e = read_seq(fd, 8 * MIB, SIZE)
    os.close(fd)
    t.ok(ok_before and e_seek == errno.ESTALE and e == errno.ESTALE
         and got == old[0][8 * MIB:8 * MIB + len(got)],
         "replaced during a stream, then a seek: ESTALE (then %d more bytes of the old version, "
         "then ESTALE)" % len(got),
         "before ok %s, seek errno %s, rest errno %s\n%s" % (ok_before, e_seek, e, h.log(log)))
    # b) replaced while the stream runs, and the stream is cut: its retry
    # finds the generation gone: ESTALE, after nothing but old bytes. The
    # cut lies past where the stream can be before the replacement (at most
    # 32 blocks past a reader at 8 MiB, plus the kernel's read-ahead).
    # Whatever the timing, the reader gets only old bytes and then ESTALE.
    # That the ESTALE came from the cut stream's retry (a second stream
    # request) needs the stream to outlive the replacement: a read the
    # kernel reordered past the "near miss" slack counts as a seek and ends
    # the stream early (then a ranged GET meets the new generation). Such an
    # attempt is told apart, and the case runs again on a fresh object, at
    # most three times.
    tries = []
    for attempt in range(3):
        name = "r1-%d.bin" % attempt
        with p.lock:
            p.rules.append(Rule.parse("close_body,count=1,cut=%d,range=%s,match=%s.*alt=media"
                                      % (REPLACE_CUT, STREAM_RANGE, name.replace(".", "\\."))))
        ended0 = status(mnt)["blocks"]["streams_ended"]
        fd = os.open(os.path.join(mnt, "logdir", name), os.O_RDONLY)
        got, e = read_seq(fd, 0, 8 * MIB)
        ok_before = e is None and got == old[1][:8 * MIB]
        upload(h, name, rng.randbytes(SIZE))
        got, e = read_seq(fd, 8 * MIB, SIZE)
        seeks = status(mnt)["blocks"]["streams_ended"] - ended0
        os.close(fd)
        starts = stream_starts(p, name)
        tries.append("attempt %d: before ok %s, errno %s at %d MiB, streams %s, %d streams cancelled"
                     % (attempt, ok_before, e, (8 * MIB + len(got)) // MIB, starts, seeks))
        if not (ok_before and e == errno.ESTALE and got == old[1][8 * MIB:8 * MIB + len(got)]):
            break  # wrong bytes or no ESTALE: a failure whatever the timing
        if len(starts) >= 2 and 8 * MIB + len(got) <= starts[0] + REPLACE_CUT:
            break
    t.ok(ok_before and e == errno.ESTALE and got == old[1][8 * MIB:8 * MIB + len(got)]
         and len(starts) >= 2 and 8 * MIB + len(got) <= starts[0] + REPLACE_CUT,
         "replaced during a stream that is then cut: ESTALE at %d MiB, only old bytes before "
         "(%d attempts)" % ((8 * MIB + len(got)) // MIB, len(tries)),
         h.log(log), "\n".join(tries))
    # c) one FUSE read that spans a block this reader has and one of the
    # replaced generation: ESTALE, not the first block's bytes alone (a
    # short reply reads as the end of the file: the kernel shrinks the
    # file, and a reader saw a clean end where data was lost). O_DIRECT
    # makes the request exactly the span asked, and a first read far from
    # the start counts as a seek (a read-ahead window of one block): the
    # reader has block 40 and not 41.
    fd = os.open(os.path.join(mnt, "logdir", "r2.bin"), os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 128 * 1024)  # page-aligned, as O_DIRECT wants
    n0 = os.preadv(fd, [buf], 40 * MIB)
    ok_before = n0 == len(buf) and buf[:] == old[0][40 * MIB:40 * MIB + len(buf)]
    upload(h, "r2.bin", rng.randbytes(SIZE))
    try:
        n1, e = os.preadv(fd, [buf], 41 * MIB - 4096), None
    except OSError as x:
        n1, e = -1, x.errno
    os.close(fd)
    t.ok(ok_before and e == errno.ESTALE,
         "one read across a kept block and a replaced one: ESTALE, not a short count",
         h.log(log), "first read %d bytes (ok %s); across the boundary: %d bytes, errno %s"
         % (n0, ok_before, n1, e))
    done(p, mnt)
    bad = [(rc, log) for rc, log in exits if rc != 0]
    t.ok(not bad, "every mount exited 0 after its streams (%d mounts)" % len(exits),
         "\n".join("rc %s\n%s" % b for b in bad[:2]))


if __name__ == "__main__":
    sys.exit(gh.run(main))
