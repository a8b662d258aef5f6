#!/usr/bin/python3
"""tests/fs/test_names.py - names the mount cannot serve are absent, and its
errors say why (issue 26, "Errors that say why"; docs/fs.md "Errors").

Through a real mount of generated profiles (tpu with steps, gpu, cpu):
- a bad window or step name (window/abc, window/2000-1000, window/1e6-2e6,
  steps/x) is ENOENT, and the daemon's log says why once, however often
  the name is looked up;
- steps/ lists exactly steps.json's steps, and steps/<count> (and its views)
  is ENOENT at lookup: `test -d`/`test -f` fail, not only an open; the
  lookup is logged with the count;
- kernels.json is absent from ls and stat on the tpu and cpu hosts once the
  mount has indexed them (any view), present on the gpu host;
- the host's errors file describes the current state: with -o no_cache and
  the temporary-render directory removed, summary.json and a window slice
  fail (each named in errors, with a UTC time); once the directory is back
  they render and errors is empty again.

TAP output; skipped without /dev/fuse or fusermount3.
"""
import errno
import json
import os
import re
import subprocess
import sys

import xmount
from xmount import errno_of

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def log_text(m):
    m.log.flush()
    with open(m.log.name, "r", errors="replace") as f:
        return f.read()


def check_bad_names(t, m, hd):
    """Bad slice names: ENOENT, and one log line each that says why."""
    cases = [("window/abc", "has no '-'"), ("window/2000-1000", "is not before"),
             ("window/1e6-2e6", "is not a time"), ("steps/x", "is not a step")]
    for name, why in cases:
        p = os.path.join(hd, name)
        got = [errno_of(os.stat, p) for _ in range(3)]
        got.append(errno_of(os.stat, os.path.join(p, "trace.json")))
        t.ok(got == [errno.ENOENT] * 4, "%s: ENOENT on every lookup" % name, why=str(got))
        pat = "/" + name + ": no such slice: "

        def lines(pat=pat):
            return [ln for ln in log_text(m).splitlines() if pat in ln]
        got_lines = t.eventually(lines, "%s: the log says why" % name, 30, m.log_tail,
                                 check=lambda ls: len(ls) >= 1)
        t.ok(len(got_lines) == 1 and why in got_lines[0] and "notice" in got_lines[0],
             "%s: logged once (4 lookups), at notice, saying %r" % (name, why),
             m.log_tail, "\n".join(got_lines))
    wline = [ln for ln in log_text(m).splitlines() if "/window/abc: no such slice" in ln]
    t.ok(wline and "<from>-<to>: microseconds" in wline[0],
         "a bad window name's log line recalls the syntax", m.log_tail, "\n".join(wline))


def check_steps(t, m, hd, name):
    """steps/<n> exists exactly for n < the step count, at lookup."""
    sd = os.path.join(hd, "steps")
    # looked up before any listing: the lookup counts the steps itself
    n = len(json.loads(read(os.path.join(hd, "steps.json")))["steps"])
    past = os.path.join(sd, str(n))
    t.ok(errno_of(os.stat, past) == errno.ENOENT,
         "%s: stat steps/%d (the step count) is ENOENT" % (name, n), m.log_tail)
    t.ok(not os.path.isdir(past) and not os.path.isfile(os.path.join(past, "trace.json")) and
         errno_of(os.stat, os.path.join(past, "trace.pftrace")) == errno.ENOENT,
         "%s: test -d steps/%d and test -f steps/%d/trace.json fail" % (name, n, n))
    listed = os.listdir(sd)
    t.ok(sorted(listed, key=int) == [str(i) for i in range(n)],
         "%s: ls steps/ lists exactly %d steps" % (name, n), why=str(listed[:10]))
    if n:
        last = os.path.join(sd, str(n - 1))
        t.ok(os.path.isdir(last) and os.path.isfile(os.path.join(last, "trace.json")),
             "%s: steps/%d (the last) is a directory with trace.json" % (name, n - 1))
    t.eventually(lambda: [ln for ln in log_text(m).splitlines()
                          if "steps/%d: the profile has %d steps" % (n, n) in ln],
                 "%s: the log says steps/%d is past the last of %d" % (name, n, n), 30,
                 m.log_tail, check=lambda ls: len(ls) == 1)
    return n


def check_kernels(t, m, hd, name, gpu):
    """kernels.json exists only on a GPU host, known from the index."""
    read(os.path.join(hd, "summary.json"))  # indexes the profile
    listed = os.listdir(hd)
    e = errno_of(os.stat, os.path.join(hd, "kernels.json"))
    if gpu:
        t.ok("kernels.json" in listed and e == 0, "%s: kernels.json listed and stat-able" % name,
             why="listed %s, stat errno %d" % ("kernels.json" in listed, e))
    else:
        t.ok("kernels.json" not in listed and e == errno.ENOENT,
             "%s: no GPU plane: kernels.json absent from ls and stat" % name,
             why="listed %s, stat errno %d" % ("kernels.json" in listed, e))
        t.ok("summary.json" in listed and "steps" in listed,
             "%s: the other names stay" % name, why=str(sorted(listed)))


ERR_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (\S+): (.*)$")


def check_errors_current(t, w, src):
    """errors says what fails now: a failure is named with its time, a later success clears it.

    Each render stays in the daemon's table 1 s after its end
    (XPROFS_TEST_RENDER_END_DELAY_MS), as a loaded machine may leave it: an
    open that comes then must render again, not join the failed render.
    """
    tmp = os.path.join(w.path, "render-tmp")
    os.mkdir(tmp)
    m = w.mount(src, "nocache", ",no_cache,tmp_dir=" + tmp,
                env={"XPROFS_TEST_RENDER_END_DELAY_MS": "1000"})
    hd = os.path.join(m.mnt, "runs", "run", "s1", "gen-cpu")
    errors = os.path.join(hd, "errors")
    os.rmdir(tmp)  # renders go to unlinked files there: each one fails now
    files = ["summary.json", "window/0-1.5/trace.json"]
    for f in files:
        t.ok(errno_of(read, os.path.join(hd, f)) == errno.EIO,
             "%s fails while the render directory is gone: EIO" % f, m.log_tail)
    text = read(errors).decode()
    got = [ERR_LINE.match(ln) for ln in text.splitlines()]
    t.ok(all(got) and sorted(g.group(1) for g in got) == sorted(files),
         "errors names each failing file once, with a UTC time", why=text)
    t.ok(errno_of(read, os.path.join(hd, "summary.json")) == errno.EIO and
         read(errors).decode().count("summary.json:") == 1,
         "failing again keeps one entry for it", why=read(errors).decode())
    os.mkdir(tmp)
    t.ok(read(os.path.join(hd, "summary.json")).startswith(b"{"), "summary.json renders again")
    text = read(errors).decode()
    t.ok([ln.split(" ")[1] for ln in text.splitlines()] == ["window/0-1.5/trace.json:"],
         "errors drops summary.json once it renders; the slice still failed last", why=text)
    t.ok(b"traceEvents" in read(os.path.join(hd, "window", "0-1.500", "trace.json")),
         "the slice renders again (another name of the same window)")
    t.ok(read(errors) == b"" and os.stat(errors).st_size == 0,
         "errors is empty again: nothing fails now", why=read(errors).decode())


def body(t, w):
    sess = w.session()
    for kind, size in (("tpu", "2M"), ("gpu", "1M"), ("cpu", "1M")):
        subprocess.check_call([GEN, "--kind", kind, "--size", size, "--seed", "5", "-o",
                               os.path.join(sess, "gen-%s.xplane.pb" % kind)])
    src = os.path.join(w.path, "src")
    m = w.mount(src)
    sd = os.path.join(m.mnt, "runs", "run", "s1")
    check_bad_names(t, m, os.path.join(sd, "gen-tpu"))
    n = check_steps(t, m, os.path.join(sd, "gen-tpu"), "tpu")
    t.ok(n > 0, "the tpu profile has steps (%d)" % n)
    check_steps(t, m, os.path.join(sd, "gen-cpu"), "cpu")
    for h, gpu in (("gen-tpu", False), ("gen-cpu", False), ("gen-gpu", True)):
        check_kernels(t, m, os.path.join(sd, h), h, gpu)
    check_errors_current(t, w, src)


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-names-", body))
