#!/usr/bin/python3
"""tests/fs/test_stream.py - whole traces of big profiles stream to their
readers, uncached (-o stream_min=, fs/live.c live_streamed(); issue 26).

Through a real /dev/fuse mount with stream_min=1 (every profile counts as
big), on generated TPU profiles whose renders are slowed by the test-only
knob XPROFS_TEST_RENDER_DELAY_MS_PER_MB so that each state can be seen:
- a sequential reader gets trace.json and trace.pftrace byte for byte as
  `xprofs-decode` writes them; nothing enters the cache; status.json counts
  the render as streamed; stat gives the size afterwards; a re-open renders
  again (streamed again, same bytes);
- a seek back past the stream's ring, and a second reader starting at 0
  while the first is past the ring: the render starts over into the cache,
  every reader gets every byte, the entry is cached and a re-open is a hit;
- a reader that closes after 100 bytes stops the render (nothing cached,
  status.json's stream_dropped); a reader that stops reading makes the
  render go on into the cache after FS_RING_STALL_MS, and its later reads
  get the right bytes;
- views other than the whole traces (ops.json, a window's trace.json) are
  cached as before; a bad stream_min= is refused, naming it.
Waits are polls with deadlines, never fixed sleeps. TAP output; skipped
without /dev/fuse or fusermount3.
"""
import json
import os
import shutil
import subprocess
import sys

import xcheck
import xmount

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
DECODE = os.path.join(BUILD, "tools", "xprofs-decode")
MIB = 1 << 20
RING = 8 * MIB  # FS_RING_SIZE (fs/fs-internal.h)
HOSTS = ("h1", "h2", "h3", "h4", "h5", "h6")


class Mount(xmount.Mount):
    def __init__(self, work, src, name="mnt", opts="", env=None):
        super().__init__(work, src, name, ",loglevel=info,stream_min=1" + opts,
                         {"XPROFS_TEST_RENDER_DELAY_MS_PER_MB": "40"})

    def counters(self):
        return self.status()["counters"]

    def path(self, host, view="trace.json"):
        return os.path.join(self.mnt, "runs", "run", "s1", host, view)


def read_from(fd, off, end=None):
    """Bytes of @fd from @off to EOF (or @end), in 1 MiB preads."""
    out = []
    while end is None or off < end:
        c = os.pread(fd, MIB if end is None else min(MIB, end - off), off)
        if not c:
            break
        out.append(c)
        off += len(c)
    return b"".join(out)


def idle(m):
    """Poll target: no render in progress."""
    return m.status()["renders"]


def check_sequential(t, m, want, want_pf):
    c0, e0 = m.counters(), m.entries()
    size, data = xmount.read_whole(m.path("h1"))
    t.same(data, want, "a sequential reader gets the streamed trace.json whole", m.log_tail)
    size, data = xmount.read_whole(m.path("h1", "trace.pftrace"))
    t.same(data, want_pf, "... and trace.pftrace, as xprofs-decode writes them", m.log_tail)
    t.eventually(lambda: idle(m), "both renders end once their readers closed", 30, m.log_tail,
                 check=lambda rs: rs == [])
    c1 = m.counters()
    t.ok(c1["streamed"] == c0["streamed"] + 2 and c1["stream_restarts"] == c0["stream_restarts"]
         and c1["renders"] == c0["renders"] + 2,
         "status.json counts two streamed renders, no restart", json.dumps(c1))
    t.ok(m.entries() == e0, "nothing entered the cache (%d entries before and after)" % len(e0),
         "before %s\nafter %s" % (e0, m.entries()))
    t.ok(os.stat(m.path("h1")).st_size == len(want),
         "stat after the streamed render gives its size (%d)" % len(want))
    size, data = xmount.read_whole(m.path("h1"))
    t.same(data, want, "a re-open renders it again, streamed: the same bytes", m.log_tail)
    t.eventually(lambda: m.counters()["streamed"], "... counted as a second streamed trace.json",
                 30, m.log_tail, check=lambda n: n == c0["streamed"] + 3)


def check_seek_back(t, m, want):
    c0, e0 = m.counters(), m.entries()
    fd = os.open(m.path("h2"), os.O_RDONLY)
    head = read_from(fd, 0, 2 * RING)
    back = read_from(fd, 0, MIB)  # bytes that left the ring: the render starts over
    rest = read_from(fd, 2 * RING)
    os.close(fd)
    t.same(head + rest, want, "a reader that seeks back past the ring gets every byte",
           m.log_tail)
    t.same(back, want[:MIB], "... and the bytes it went back for", m.log_tail)
    t.eventually(lambda: idle(m), "the render ends", 60, m.log_tail, check=lambda rs: rs == [])
    c1 = m.counters()
    t.ok(c1["stream_restarts"] == c0["stream_restarts"] + 1 and c1["streamed"] == c0["streamed"],
         "status.json: one stream restarted into the cache", json.dumps(c1))
    t.ok(len(m.entries()) == len(e0) + 1, "the view is in the cache now (%d entries, were %d)"
         % (len(m.entries()), len(e0)))
    h0 = m.counters()["view_cache_hits"]
    size, data = xmount.read_whole(m.path("h2"))
    t.ok(size == len(want) and data == want and m.counters()["view_cache_hits"] == h0 + 1,
         "a re-open is a cache hit with the right size (%d)" % size,
         why=xcheck.diff_bytes(data, want))


def check_second_reader(t, m, want):
    c0 = m.counters()
    fa = os.open(m.path("h3"), os.O_RDONLY)
    a = read_from(fa, 0, RING + 4 * MIB)
    fb = os.open(m.path("h3"), os.O_RDONLY)
    b = read_from(fb, 0)  # from 0: gone from the ring
    a += read_from(fa, len(a))
    os.close(fa)
    os.close(fb)
    t.same(a, want, "reader 1 of a stream joined by a second one gets every byte", m.log_tail)
    t.same(b, want, "reader 2, starting at 0 past the ring, gets every byte", m.log_tail)
    t.eventually(lambda: idle(m), "the render ends", 60, m.log_tail, check=lambda rs: rs == [])
    c1 = m.counters()
    t.ok(c1["stream_restarts"] == c0["stream_restarts"] + 1 and c1["renders"] == c0["renders"] + 1,
         "one render, restarted once into the cache for reader 2", json.dumps(c1))


def check_dropped(t, m, want):
    c0, e0 = m.counters(), m.entries()
    with open(m.path("h4"), "rb") as f:
        first = f.read(100)
    t.same(first, want[:100], "a reader of 100 bytes gets the first 100 bytes", m.log_tail)
    t.eventually(lambda: m.counters()["stream_dropped"],
                 "once it closed, the render stops (status.json stream_dropped)", 60, m.log_tail,
                 check=lambda n: n == c0["stream_dropped"] + 1)
    t.eventually(lambda: idle(m), "... and leaves status.json", 30, m.log_tail,
                 check=lambda rs: rs == [])
    t.ok(m.entries() == e0, "nothing of it was cached")
    size, data = xmount.read_whole(m.path("h4"))
    t.same(data, want, "a later open reads it whole", m.log_tail)


def check_stalled(t, m, want):
    c0 = m.counters()
    fd = os.open(m.path("h5"), os.O_RDONLY)
    first = os.pread(fd, 100, 0)
    # the open holds the render; nobody reads: after FS_RING_STALL_MS it goes on into the cache
    t.eventually(lambda: m.counters()["stream_restarts"],
                 "a full ring nobody reads: the render goes on into the cache", 60, m.log_tail,
                 check=lambda n: n == c0["stream_restarts"] + 1)
    rest = read_from(fd, 100)
    os.close(fd)
    t.same(first + rest, want, "the reader that stopped reads on: every byte", m.log_tail)


def check_others(t, m):
    e0 = m.entries()
    for rel in ("ops.json", "window/0-1000/trace.json"):
        with open(m.path("h6", rel), "rb") as f:
            f.read()
    t.eventually(lambda: idle(m), "renders of ops.json and a window end", 60, m.log_tail,
                 check=lambda rs: rs == [])
    t.ok(len(m.entries()) == len(e0) + 2,
         "ops.json and a window's trace.json are cached as before (%d new entries)"
         % (len(m.entries()) - len(e0)))


def body(t, w):
    sess = w.session()
    prof = os.path.join(sess, "h1.xplane.pb")
    subprocess.check_call([GEN, "--kind", "tpu", "--size", "4M", "--seed", "3", "-o", prof])
    for h in HOSTS[1:]:
        shutil.copy(prof, os.path.join(sess, h + ".xplane.pb"))
    want = {h: subprocess.run([DECODE, prof, "--view", "trace", "--host", h],
                              stdout=subprocess.PIPE, check=True).stdout for h in HOSTS}
    want_pf = subprocess.run([DECODE, prof, "--view", "trace.pftrace", "--host", "h1"],
                             stdout=subprocess.PIPE, check=True).stdout
    t.ok(len(want["h1"]) > 2 * RING + 4 * MIB, "the generated trace.json is %d bytes (ring %d)"
         % (len(want["h1"]), RING))
    m = w.mount(os.path.join(w.path, "src"), cls=Mount)
    opts = m.status()["options"]
    t.ok(opts.get("stream_min_bytes") == 1, "status.json shows the option in force: stream_min_bytes 1",
         json.dumps(opts))
    check_sequential(t, m, want["h1"], want_pf)
    check_seek_back(t, m, want["h2"])
    check_second_reader(t, m, want["h3"])
    check_dropped(t, m, want["h4"])
    check_stalled(t, m, want["h5"])
    check_others(t, m)
    # a bad size is refused before anything is mounted, saying which option
    p = subprocess.run([xmount.XPROFS, os.path.join(w.path, "src"), os.path.join(w.path, "bad"),
                        "-f", "-o", "stream_min=12Q"], capture_output=True, text=True, timeout=60)
    t.ok(p.returncode != 0 and "stream_min" in p.stderr, "a bad stream_min= is refused",
         "exit %d, stderr %r" % (p.returncode, p.stderr))


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-stream-", body))
