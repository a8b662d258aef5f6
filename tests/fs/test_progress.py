#!/usr/bin/python3
"""tests/fs/test_progress.py - views stream while they render (issue 9).

Through a real /dev/fuse mount of the daemon, on generated TPU profiles whose
render is slowed by the test-only knob XPROFS_TEST_RENDER_DELAY_MS_PER_MB
(fs/live.c), so a render takes seconds on a small profile:
- the first bytes of trace.json arrive while the render is still in progress
  (status.json lists it, with bytes done > 0, right after the first read);
- two concurrent readers get the full content, equal to
  `xprofs-decode --view trace`; after the render a new open is a cache hit
  with the right st_size (fstat and stat);
- during a render, cat | head -c 100 answers before the render ends, and
  cp, jq and Python's open().read() get the whole file;
- with a cache cap below the view, the entry moves out of the cache midway and
  the readers still get the whole view from one render (it goes on in a temporary
  file);
- a file that only its render finds missing (kernels.json on a TPU host, a
  step past the last) is ENOENT on open even when renders start 1.5 s late
  (longer than an open's usual wait);
- a profile that fails to render gives EIO, a note in its errors file, and
  no cache entry; so does one truncated in SOURCE while it renders, after
  its readers got the first bytes (EIO, never a short file that looks whole).
Events are polled with deadlines, never waited for with fixed sleeps.
TAP output; skipped without /dev/fuse or fusermount3.
"""
import errno
import json
import os
import random
import shutil
import subprocess
import sys
import threading

import xcheck
import xmount
from xmount import poll

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
DECODE = os.path.join(BUILD, "tools", "xprofs-decode")
DELAY_MS_PER_MB = "100"  # a 27 MiB trace.json renders in about 3 s


class Mount(xmount.Mount):
    """The daemon with its renders slowed down (the test-only knob) and logging at info."""

    def __init__(self, work, src, name="mnt", opts="", env=None):
        super().__init__(work, src, name, ",loglevel=info" + opts,
                         {"XPROFS_TEST_RENDER_DELAY_MS_PER_MB": DELAY_MS_PER_MB})

    def renders(self):
        return self.status()["renders"]


def read_all(path, out, key):
    try:
        with open(path, "rb") as f:
            out[key] = f.read()
    except OSError as e:
        out[key] = e


def check_stream(t, m, host, want):
    """First bytes before the end, status.json, two concurrent readers, cache hit after."""
    path = os.path.join(m.mnt, "runs", "run", "s1", host, "trace.json")
    r0 = m.status()["counters"]["renders"]
    f = open(path, "rb")
    first = f.read(100)
    rs = m.renders()
    mine = [r for r in rs if r["path"].endswith("/%s/trace.json" % host)]
    t.same(first, want[:100], "the first read of trace.json returns its first bytes", m.log_tail)
    t.ok(len(mine) == 1, "the render is still in progress when the first read returned",
         json.dumps(rs))
    if mine:
        r = mine[0]
        t.ok(r["bytes_done"] > 0 and r["elapsed_s"] >= 0 and r["started_at"].endswith("Z") and
             r["path"] == "/runs/run/s1/%s/trace.json" % host,
             "status.json shows the render: path, bytes done > 0, started_at, elapsed_s",
             json.dumps(r))
    got = {}
    other = threading.Thread(target=read_all, args=(path, got, "b"))
    other.start()
    rest = f.read()
    fst = os.fstat(f.fileno()).st_size
    f.close()
    other.join()
    a = first + rest
    t.same(a, want, "reader 1 gets the whole view (%d bytes, want %d)" % (len(a), len(want)),
           m.log_tail)
    b = got.get("b")
    t.same(b if isinstance(b, bytes) else b"", want, "a concurrent reader 2 gets the same whole view",
           m.log_tail() if isinstance(b, bytes) else "reader 2: %r" % b)
    t.ok(fst == len(want), "fstat after EOF gives the real size (%d)" % fst)
    t.ok(m.status()["counters"]["renders"] == r0 + 1, "the two readers shared one render")
    t.eventually(m.renders, "the render leaves status.json once done", 60, m.log_tail,
                 check=lambda rs: rs == [])
    h0 = m.status()["counters"]["view_cache_hits"]
    t.ok(os.stat(path).st_size == len(want), "stat after the render: the real size")
    size, data = xmount.read_whole(path)
    t.ok(size == len(want) and data == want,
         "a re-open after the render: st_size %d, same bytes" % size,
         why=xcheck.diff_bytes(data, want))
    t.ok(m.status()["counters"]["view_cache_hits"] == h0 + 1, "the re-open is a cache hit")


def check_tools(t, m, host, want, work):
    """cat|head, cp, jq and Python's read() during one render; cat after it."""
    path = os.path.join(m.mnt, "runs", "run", "s1", host, "trace.json")
    events = len(json.loads(want)["traceEvents"])
    cp_to = os.path.join(work, "cp.json")
    cp = subprocess.Popen(["cp", path, cp_to])
    jq = None
    if shutil.which("jq"):
        jq = subprocess.Popen(["jq", ".traceEvents | length", path], stdout=subprocess.PIPE)
    got = {}
    py = threading.Thread(target=read_all, args=(path, got, "py"))
    py.start()
    head = subprocess.run("cat '%s' | head -c 100" % path, shell=True, stdout=subprocess.PIPE)
    busy = [r for r in m.renders() if r["path"].endswith("/%s/trace.json" % host)]
    t.ok(head.stdout == want[:100] and len(busy) == 1,
         "cat | head -c 100 answers while the render runs", json.dumps(m.renders()))
    rc = cp.wait()
    cp_got = open(cp_to, "rb").read() if rc == 0 else b""
    t.ok(rc == 0 and cp_got == want, "cp copies the whole view",
         why="cp: exit status %d\n%s" % (rc, xcheck.diff_bytes(cp_got, want)))
    if jq:
        out = jq.communicate()[0]
        t.ok(jq.returncode == 0 and out.strip() == str(events).encode(),
             "jq reads the whole view (%s events)" % events, out)
    py.join()
    py_got = got.get("py")
    t.same(py_got if isinstance(py_got, bytes) else b"", want,
           "Python open().read() gets the whole view",
           "" if isinstance(py_got, bytes) else "read: %r" % py_got)
    after = subprocess.run(["cat", path], stdout=subprocess.PIPE)
    t.ok(after.returncode == 0 and after.stdout == want, "cat after the render: the whole view",
         why="cat: exit status %d\n%s" % (after.returncode, xcheck.diff_bytes(after.stdout, want)))


def check_failure(t, m, host):
    """A render that fails: EIO, the errors note, no cache entry."""
    hd = os.path.join(m.mnt, "runs", "run", "s1", host)
    before = m.entries()
    got = {}
    read_all(os.path.join(hd, "trace.json"), got, "r")
    e = got["r"]
    t.ok(isinstance(e, OSError) and e.errno == errno.EIO, "a failing render gives EIO",
         repr(e)[:200])
    t.eventually(m.renders, "the failed render leaves status.json", 60, m.log_tail,
                 check=lambda rs: rs == [])
    err = open(os.path.join(hd, "errors"), "rb").read()
    t.ok(b"trace.json" in err, "the errors file says why", err)
    t.ok(m.entries() == before, "no cache entry for the failed render")
    t.ok(m.status()["counters"]["render_errors"] >= 1, "render_errors counted")


def check_midway(t, m, host, src_prof, want):
    """A render that fails after readers got bytes: EIO, not a short file."""
    path = os.path.join(m.mnt, "runs", "run", "s1", host, "trace.json")
    before = m.entries()
    f = open(path, "rb")
    first = f.read(100)
    busy = [r for r in m.renders() if r["path"].endswith("/%s/trace.json" % host)]
    t.ok(first == want[:100] and len(busy) == 1, "midway: first bytes while rendering")
    os.truncate(src_prof, os.path.getsize(src_prof) // 2)  # the profile breaks under it
    e = None
    n = len(first)
    try:
        while True:
            c = f.read(1 << 20)
            if not c:
                break
            n += len(c)
    except OSError as x:
        e = x
    f.close()
    t.ok(isinstance(e, OSError) and e.errno == errno.EIO,
         "midway: the reader gets EIO after %d bytes, not EOF" % n, repr(e))
    t.eventually(m.renders, "midway: the failed render leaves status.json", 60, m.log_tail,
                 check=lambda rs: rs == [])
    t.ok(m.entries() == before, "midway: the cache entry was aborted")
    errors = os.path.join(m.mnt, "runs", "run", "s1", host, "errors")
    # The note names the profile version it is about: once the index has seen
    # the truncated file (refresh_s), the errors file is about that version,
    # and the next open of trace.json fails on it and says why again.
    def says_why():
        b = open(errors, "rb").read()
        if b"trace.json" in b:
            return b
        try:
            with open(path, "rb") as g:
                g.read()
        except OSError:
            pass
        return None
    err = poll(says_why, 30)
    t.ok(err is not None, "midway: the errors file says why", open(errors, "rb").read())


def check_rebuild(t, m, host, want):
    """The runs index is rebuilt (and the old one freed) while a view renders:
    the render keeps its own copy of what it needs (the host name trace.json
    puts in every process name), so the bytes stay whole and right."""
    path = os.path.join(m.mnt, "runs", "run", "s1", host, "trace.json")
    f = open(path, "rb")
    first = f.read(100)
    busy = [r for r in m.renders() if r["path"].endswith("/%s/trace.json" % host)]
    os.mkdir(os.path.join(m.mnt, "runs", "rebuilt"))  # a new run: the index is rebuilt
    t.ok("rebuilt" in os.listdir(os.path.join(m.mnt, "runs")) and len(busy) == 1,
         "rebuild: the index is rebuilt while the render runs")
    rest = f.read()
    f.close()
    t.ok(first + rest == want, "rebuild: the view is whole and names its processes after %s"
         % host)


def tmp_sizes(m):
    """The sizes of the cache writers' temporary files (the cache's tmp/w.*)."""
    d = os.path.join(m.cache, "tmp")
    out = []
    for n in os.listdir(d) if os.path.isdir(d) else []:
        if n.startswith("w."):
            try:
                out.append(os.stat(os.path.join(d, n)).st_size)
            except FileNotFoundError:
                pass
    return out


def check_refused(t, m, host, want):
    """The cache refuses the entry midway (cap): the render goes on uncached but
    compressed, in its writer's temporary file, which serves every reader until
    the last one closes; nothing is written out at its raw size."""
    path = os.path.join(m.mnt, "runs", "run", "s1", host, "trace.json")
    f = open(path, "rb")
    first = f.read(100)
    got = {}
    other = threading.Thread(target=read_all, args=(path, got, "b"))
    other.start()
    try:
        a = first + f.read()
    except OSError as e:
        a = e
    other.join()
    t.ok(a == want and got.get("b") == want,
         "cache_max below the view: both readers get the whole view (uncached midway)",
         repr(a)[:100] if not isinstance(a, bytes) else "")
    sizes = tmp_sizes(m)  # f is still open: its render's private entry is still there
    t.ok(len(sizes) == 1 and 0 < sizes[0] < len(want) // 2,
         "cache_max below the view: it stays compressed in one temporary file (%s bytes "
         "for a %d-byte view)" % (sizes, len(want)))
    f.seek(len(want) - 50)
    t.ok(f.read() == want[-50:], "cache_max below the view: a seek back reads the end again")
    f.close()
    t.eventually(lambda: tmp_sizes(m), "cache_max below the view: the temporary file goes "
                 "with the last reader", 30, check=lambda s: s == [])
    t.ok(m.entries() == [], "cache_max below the view: nothing cached")
    m.log.flush()
    log = open(m.log.name, errors="replace").read()
    t.ok("passes the cache's cap: going on uncached, compressed" in log and
         "rendering to a temporary file" not in log and m.status()["counters"]["renders"] == 1,
         "cache_max below the view: one render, never started over", log[-2000:])



def body(t, w):
    """The test, in the work dir @w (xmount.Workdir); results to @t."""
    work = w.path
    sess = w.session()
    prof = os.path.join(sess, "h1.xplane.pb")
    subprocess.check_call([GEN, "--kind", "tpu", "--size", "4M", "--seed", "3", "-o", prof])
    shutil.copy(prof, os.path.join(sess, "h2.xplane.pb"))
    shutil.copy(prof, os.path.join(sess, "h3.xplane.pb"))
    shutil.copy(prof, os.path.join(sess, "h4.xplane.pb"))
    data = bytearray(open(prof, "rb").read())
    # garbage in the middle of the events: the index may pass, the render fails
    rnd = random.Random(1)
    mid = len(data) * 2 // 3
    for i in range(mid, mid + 400):
        data[i] = rnd.randrange(256)
    open(os.path.join(sess, "bad.xplane.pb"), "wb").write(bytes(data))
    # trace.json names its processes after the host: one expected view per host
    want = {h: subprocess.run([DECODE, prof, "--view", "trace", "--host", h],
                              stdout=subprocess.PIPE, check=True).stdout
            for h in ("h1", "h2", "h3", "h4")}
    t.ok(len(want["h1"]) > 8 << 20, "the generated trace.json is %d bytes" % len(want["h1"]))
    m = w.mount(os.path.join(work, "src"), cls=Mount)
    check_stream(t, m, "h1", want["h1"])
    check_tools(t, m, "h2", want["h2"], work)
    check_failure(t, m, "bad")
    check_midway(t, m, "h3", os.path.join(sess, "h3.xplane.pb"), want["h3"])
    check_rebuild(t, m, "h4", want["h4"])
    # status.json's open counts follow opens and releases (the unmount helpers wait on them)
    fd = os.open(os.path.join(m.mnt, "runs"), os.O_RDONLY | os.O_DIRECTORY)
    f = open(os.path.join(m.mnt, "runs", "run", "s1", "h1", "summary.json"), "rb")
    t.eventually(lambda: m.status()["open"], "status.json counts an open directory and an open file",
                 30, check=lambda o: o["dirs"] >= 1 and o["files"] >= 1)
    os.close(fd)
    f.close()
    t.eventually(lambda: m.status()["open"],
                 "... and their release (a status read does not count itself)", 30,
                 check=lambda o: o == {"files": 0, "dirs": 0})
    st = m.status()
    t.ok(st["cache"]["hits"] == st["counters"]["view_cache_hits"] and st["cache"]["reopens"] > 0,
         "one set of counters: cache.hits %d = view_cache_hits %d; reopens %d (renders and waiters)"
         % (st["cache"]["hits"], st["counters"]["view_cache_hits"], st["cache"]["reopens"]))
    t.ok(m.close() == 0, "unmount: xprofs exits with 0")
    m = w.mount(os.path.join(work, "src"), "small", ",cache_max=2M", cls=Mount)
    check_refused(t, m, "h1", want["h1"])
    check_late(t, w, work)
    check_index_replaced(t, w, work, want["h2"])


def check_late(t, w, work):
    """A file only its render finds missing is ENOENT on open however slow the render."""
    m = w.mount(os.path.join(work, "src"), "late", "",
                env={"XPROFS_TEST_RENDER_START_DELAY_MS": "1500"}, cls=xmount.Mount)
    hd = os.path.join(m.mnt, "runs", "run", "s1", "h1")
    for rel in ["kernels.json", "steps/1048575/trace.json"]:
        try:
            with open(os.path.join(hd, rel), "rb") as f:
                f.read()
            t.ok(False, "%s on a TPU host: ENOENT with renders starting 1.5 s late" % rel)
        except OSError as e:
            t.ok(e.errno == errno.ENOENT,
                 "%s on a TPU host: ENOENT with renders starting 1.5 s late (an open's usual "
                 "wait is 0.4 s)" % rel, str(e))
    with open(os.path.join(hd, "steps", "0", "trace.json"), "rb") as f:
        data = f.read()
    t.ok(data.startswith(b"{") and data.rstrip().endswith(b"}"),
         "steps/0/trace.json exists and reads whole with renders starting late (%d bytes)" % len(data))



def check_index_replaced(t, w, work, want):
    """A render that starts after its open returned, and after the index the
    open resolved it in was replaced and dropped, reads nothing of that index:
    the render holds its own reference (a render's session and run node are
    that index's). Before that fix an ASan daemon aborted here."""
    m = w.mount(os.path.join(work, "src"), "replaced", "",
                env={"XPROFS_TEST_RENDER_START_DELAY_MS": "4000"}, cls=xmount.Mount)
    path = os.path.join(m.mnt, "runs", "run", "s1", "h2", "trace.json")
    data, why, renders, sessions = b"", "", [], []
    try:
        with open(path, "rb") as f:  # returns after an open's usual wait, before the render
            os.mkdir(os.path.join(m.mnt, "logdir", "newrun"))  # a change through the mount
            sessions = os.listdir(os.path.join(m.mnt, "runs", "run"))  # a new index
            with open(os.path.join(m.mnt, "status.json")) as sf:
                renders = [r["path"] for r in json.load(sf)["renders"]]
            data = f.read()
    except (OSError, ValueError) as e:
        why = str(e)
    t.ok(data == want, "trace.json reads whole (%d of %d bytes) when the index its open used "
         "was replaced before its render started (renders then: %s; sessions %s)"
         % (len(data), len(want), renders, sessions), why or m.log_tail(30))


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-progress-", body))
