#!/usr/bin/python3
"""tests/capture/test_control.py - control-file writes, capture leftovers and errors (issue 11, 4-5).

Through a real /dev/fuse mount of the daemon and the test profiler peer
(tests/capture/profiler_server.py, what it received is in its --record log):
- a command is a line: a line split over two write()s is one command (its
  options reach the server); several lines in one write() are several
  commands; an unterminated last line runs at close(); a refused line in the
  middle of a write makes it short (the lines before it ran), and the retry
  fails with EINVAL; a line over the limit fails with a reason naming it,
  also when it grows over two writes;
- a misspelled key (durationms=) is refused with a suggestion and nothing is
  sent; advanced.KEY=VALUE reaches advanced_configuration;
- reading the control file shows the last 8 rejections with reasons and times;
- run= of a run that does not exist says it will be created;
- kill -9 of the daemon while a host's data arrives leaves no directory in
  the source (nothing empty shows after a remount); staging directories left
  by a killed daemon (marked, older than a minute) are swept at start-up,
  and nothing else: foreign look-alikes, unmarked or fresh ones stay;
- a store failure says its errno text (a 1 MiB tmpfs source: "storing the
  profile failed: No space left on device"), and a read-only source refuses
  the write() with EROFS before any server is asked.
TAP output; tmpfs and bind mounts (root) are undone whatever happens.
"""
import errno
import json
import os
import subprocess
import time

import xmount
import xtap
from xmount import poll
from test_capture import Server, captures

MARKER = ".xprofs-staging"
MARKER_TEXT = b"xprofs staging directory: removed by xprofs at start-up if left behind\n"


def status(m, run=None):
    p = os.path.join(m.mnt, "capture") if run is None else os.path.join(m.mnt, "runs", run,
                                                                      "capture")
    with open(p) as f:
        return f.read()


def rejections(m, run=None):
    return [json.loads(l) for l in status(m, run).splitlines() if l.startswith('{"rejected"')]


def done(m, session):
    """The finished capture of @session (polled), or None."""
    def get():
        c = [x for x in captures(status(m)) if x["session"] == session]
        return c[0] if c and c[0]["state"] != "running" else None
    return poll(get, 60)


def write_all(path, pieces):
    """open, one os.write() per piece, close; (results of each write, close's error or 0)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    res = []
    for p in pieces:
        try:
            res.append(os.write(fd, p))
        except OSError as e:
            res.append(-e.errno)
    try:
        os.close(fd)
        return res, 0
    except OSError as e:
        return res, -e.errno


def profiles(srv, session=None):
    return [r for r in srv.records("Profile") if session is None or r["session_id"] == session]


def case_lines(t, m, srv, srv2):
    ctl = os.path.join(m.mnt, "capture")
    a = srv.addr
    res, cl = write_all(ctl, [b"run=l " + a.encode() + b" dura",
                              b"tion_ms=150 session=split host_tracer_level=1\n"])
    c = done(m, "split")
    rec = profiles(srv, "split")
    t.ok(res == [len(b"run=l ") + len(a) + 5, 46] and cl == 0 and c and c["state"] == "ok",
         "a line split over two writes is one command", "%r %r %r" % (res, cl, c))
    t.ok(len(rec) == 1 and rec[0]["duration_ms"] == 150 and rec[0]["host_tracer_level"] == 1,
         "the options of the second piece reached the server", json.dumps(rec))
    line2 = ("run=l2 %s session=two1\nrun=l3 %s session=two2\n" % (srv.addr, srv2.addr)).encode()
    res, cl = write_all(ctl, [line2])
    c1, c2 = done(m, "two1"), done(m, "two2")
    t.ok(res == [len(line2)] and c1 and c2 and c1["state"] == c2["state"] == "ok",
         "two lines in one write are two captures", "%r %r %r" % (res, c1, c2))
    res, cl = write_all(ctl, [("run=l4 %s session=nonl" % a).encode()])
    c = done(m, "nonl")
    t.ok(res[0] > 0 and cl == 0 and c and c["state"] == "ok",
         "an unterminated last line runs at close()", "%r %r %r" % (res, cl, c))
    first = ("run=l5 %s session=mid1\n" % a).encode()
    res, cl = write_all(ctl, [first + b"bogus\nrun=l6 " + a.encode() + b" session=mid2\n",
                              b"bogus\nrun=l6 " + a.encode() + b" session=mid2\n"])
    done(m, "mid1")
    t.ok(res == [len(first), -errno.EINVAL], "a refused line in the middle ends the write short;"
         " the retry starting with it fails with EINVAL", repr(res))
    rej = rejections(m)
    t.ok(len([r for r in rej if r["rejected"] == "bogus"]) == 1,
         "the refused line is recorded once", json.dumps(rej))
    t.ok(not profiles(srv, "mid2"), "nothing after the refused line ran")
    res, cl = write_all(ctl, [b"x" * 9000 + b"\n"])
    rej = rejections(m)
    t.ok(res == [-errno.EINVAL] and "8192" in rej[-1]["reason"],
         "a 9000-byte line fails with a reason naming the limit", json.dumps(rej[-1:]))
    res, cl = write_all(ctl, [b"y" * 5000, b"y" * 5000, b"y\n" + ("run=l7 %s session=after\n" %
                                                                 a).encode()])
    c = done(m, "after")
    t.ok(res[0] == 5000 and res[1] == -errno.EINVAL and res[2] > 0 and c and c["state"] == "ok",
         "a line growing over the limit across writes fails; its rest is dropped and the next "
         "line runs", "%r %r" % (res, c))


def case_keys(t, m, srv):
    ctl = os.path.join(m.mnt, "capture")
    n0 = len(profiles(srv))
    res, _ = write_all(ctl, [("run=k %s durationms=300 session=typo\n" % srv.addr).encode()])
    rej = rejections(m)[-1]
    t.ok(res == [-errno.EINVAL] and "did you mean 'duration_ms'" in rej["reason"] and
         "advanced.KEY=VALUE" in rej["reason"], "a misspelled key is refused with a suggestion",
         json.dumps(rej))
    t.ok(len(profiles(srv)) == n0 and
         not [c for c in captures(status(m)) if c["session"] == "typo"],
         "no capture was started, nothing was sent to the server")
    res, _ = write_all(ctl, [("run=k %s advanced.durationms=300 session=adv\n" %
                              srv.addr).encode()])
    c = done(m, "adv")
    rec = profiles(srv, "adv")
    t.ok(c and c["state"] == "ok" and rec and rec[0]["advanced"] == {"durationms": "int64_value:300"}
         and rec[0]["duration_ms"] == 1000, "advanced.KEY=VALUE goes to advanced_configuration",
         json.dumps(rec))


def case_rejections(t, m, srv):
    ctl = os.path.join(m.mnt, "capture")
    for i in range(10):
        write_all(ctl, [("bad%d\n" % i).encode()])
    rej = rejections(m)
    words = [r["rejected"] for r in rej]
    t.ok(len(rej) == 8 and words == ["bad%d" % i for i in range(2, 10)],
         "the control file shows the last 8 rejections, oldest first", json.dumps(words))
    t.ok(all(r.get("at", "").endswith("Z") and "unknown word" in r["reason"] for r in rej),
         "each with its reason and time", json.dumps(rej[-1]))
    write_all(ctl, [("run=brand/new %s session=fresh\n" % srv.addr).encode()])
    c = done(m, "fresh")
    t.ok(c and c.get("new_run") is True and "did not exist" in c.get("note", ""),
         "run= of a run that does not exist says it will be created", json.dumps(c))


def kill9_during_data(t, w, src, big):
    """kill -9 while a host's data arrives: no directory appears in the source."""
    m = w.mount(src, "k9", ",loglevel=info")
    write_all(os.path.join(m.mnt, "capture"), [("run=k9 %s session=killed\n" %
                                                 big.addr).encode()])
    fddir = "/proc/%d/fd" % m.proc.pid

    def receiving():
        try:
            return any(os.readlink(os.path.join(fddir, f)).endswith("(deleted)") and
                       os.readlink(os.path.join(fddir, f)).startswith(src)
                       for f in os.listdir(fddir))
        except OSError:
            return False
    got = poll(receiving, 60)
    m.proc.kill()
    m.proc.wait()
    subprocess.call(["fusermount3", "-uz", m.mnt])
    m.closed = True
    m.log.close()
    t.ok(got, "the daemon was killed while the profile's data arrived")
    t.ok(not os.path.exists(os.path.join(src, "k9")),
         "no run or session directory was left in the source",
         repr(list(os.walk(os.path.join(src, "k9")))))


def plant(src, name, marker_text, age_s):
    d = os.path.join(src, name)
    os.makedirs(os.path.join(d, "r", "plugins", "profile", "s"))
    if marker_text is not None:
        with open(os.path.join(d, MARKER), "wb") as f:
            f.write(marker_text)
        t = time.time() - age_s
        os.utime(os.path.join(d, MARKER), (t, t))
    return d


def case_sweep(t, w, src):
    ours = plant(src, ".xprofs-tmp-stage-1-0000beef", MARKER_TEXT, 120)
    unmarked = plant(src, ".xprofs-tmp-stage-2-00000001", None, 0)
    wrong = plant(src, ".xprofs-tmp-stage-3-00000002", b"not ours\n", 120)
    fresh = plant(src, ".xprofs-tmp-stage-4-00000003", MARKER_TEXT, 0)
    foreign = plant(src, "stage-like", MARKER_TEXT, 120)
    m = w.mount(src, "sw")
    t.ok(not os.path.exists(ours), "a marked staging directory older than a minute is swept")
    t.ok(all(os.path.exists(d) for d in (unmarked, wrong, fresh, foreign)),
         "unmarked, wrongly marked, fresh and differently named directories stay")
    names = os.listdir(os.path.join(m.mnt, "logdir"))
    t.ok(not [n for n in names if n.startswith(".xprofs-tmp-")],
         "staging directories are not listed in logdir/", repr(names))
    runs = os.listdir(os.path.join(m.mnt, "runs"))
    t.ok("k9" not in runs, "no empty run or session shows after the remount", repr(runs))
    t.ok(m.close() == 0, "unmount: xprofs exits with 0")


def case_errors(t, w, tmpdir, srv):
    """A store failure says its errno; a read-only source refuses the write() itself."""
    small = os.path.join(tmpdir, "small")
    os.makedirs(small)
    if subprocess.call(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", small]) != 0:
        t.ok(False, "mount a 1 MiB tmpfs")
        return
    try:
        big = Server(tmpdir, "--big-mb", "4")
        try:
            m = w.mount(small, "enospc", ",no_cache")
            write_all(os.path.join(m.mnt, "capture"), [("%s session=full\n" %
                                                         big.addr).encode()])
            c = done(m, "full")
            err = c and c["hosts"][0]["error"] or ""
            t.ok(c and c["state"] == "error" and
                 err == "storing the profile failed: No space left on device",
                 "a full source: the error carries its errno text", json.dumps(c))
            t.ok(not os.path.exists(os.path.join(small, "captures")),
                 "and leaves no directory behind")
            t.ok(m.close() == 0, "unmount: xprofs exits with 0")
        finally:
            big.stop()
    finally:
        subprocess.call(["umount", "-l", small])
    ro = os.path.join(tmpdir, "ro")
    os.makedirs(ro)
    rsrc = os.path.join(tmpdir, "rsrc")
    os.makedirs(os.path.join(rsrc, "exp", "plugins", "profile"))
    if subprocess.call(["mount", "--bind", rsrc, ro]) != 0:
        t.ok(False, "bind-mount the source")
        return
    try:
        if subprocess.call(["mount", "-o", "remount,bind,ro", ro]) != 0:
            t.ok(False, "remount the bind mount read-only")
            return
        m = w.mount(ro, "rosrc", ",no_cache")
        n0 = len(profiles(srv))
        res, _ = write_all(os.path.join(m.mnt, "capture"),
                           [("run=exp %s session=ro\n" % srv.addr).encode()])
        rej = rejections(m)
        t.ok(res == [-errno.EROFS], "a read-only source: write() fails with EROFS", repr(res))
        t.ok(rej and "Read-only file system" in rej[-1]["reason"], "the reason says so",
             json.dumps(rej[-1:]))
        t.ok(len(profiles(srv)) == n0 and
             not [c for c in captures(status(m)) if c["session"] == "ro"],
             "no capture was started: no server was asked to profile")
        res, _ = write_all(os.path.join(m.mnt, "runs", "exp", "capture"),
                           [("%s session=ro2\n" % srv.addr).encode()])
        t.ok(res == [-errno.EROFS], "the same through the run's own control file", repr(res))
        t.ok(m.close() == 0, "unmount: xprofs exits with 0")
    finally:
        subprocess.call(["umount", "-l", ro])


def body(t, w):
    src = os.path.join(w.path, "src")
    os.makedirs(src)
    servers = []
    try:
        srv, srv2 = Server(w.path), Server(w.path)
        servers += [srv, srv2]
        m = w.mount(src, "mnt", ",no_cache")
        case_lines(t, m, srv, srv2)
        case_keys(t, m, srv)
        case_rejections(t, m, srv)
        t.ok(m.close() == 0, "unmount")
        big = Server(w.path, "--big-mb", "600")
        servers.append(big)
        kill9_during_data(t, w, src, big)
        case_sweep(t, w, src)
        case_errors(t, w, w.path, srv)
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    if os.geteuid() != 0:
        raise SystemExit(xtap.skip_all("tmpfs and read-only bind mounts need root"))
    try:
        import grpc  # noqa: F401  (the test peer needs it)
    except ImportError:
        raise SystemExit(xtap.skip_all("no grpcio for the test profiler server"))
    raise SystemExit(xmount.run("xprofs-control-", body))
