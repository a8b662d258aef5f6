#!/usr/bin/python3
"""tests/lib/test_selftest.py - the Python test library's own failure
messages (xtap.Tap.same/eventually, tests/lib/xcheck.py): checks made to fail
on a Tap whose output is captured must say why (both sizes, the first
differing offset with context, the errno of a failed read, what a wait
waited for, how long and what it saw last, a daemon log's tail), so the
messages cannot silently regress. TAP."""
import contextlib
import io
import os
import sys
import tempfile

import xcheck
import xproto
import xtap


def failing(check):
    """What check(tap) printed on a fresh Tap, and whether that Tap failed."""
    out = io.StringIO()
    inner = xtap.Tap()
    with contextlib.redirect_stdout(out):
        check(inner)
    return out.getvalue(), inner.failed == 1


def main():
    t = xtap.Tap()
    want = b"abcdefghij0123456789"
    got = b"abcdefghijX123456789tail"

    out, failed = failing(lambda i: i.same(got, want, "differing bytes"))
    t.ok(failed and "not ok 1 - differing bytes" in out, "same() fails", out)
    t.ok("got 24 bytes, want 20" in out, "  and gives both sizes", out)
    t.ok("first difference at offset 10" in out, "  and the first differing offset", out)
    t.ok("abcdefghijX1234" in out, "  and the bytes around it", out)
    out, failed = failing(lambda i: i.same(want[:10], want, "a prefix"))
    t.ok(failed and "offset 10: got ends there" in out, "same(): a short result is a prefix", out)
    out, failed = failing(lambda i: i.same(want, want, "equal"))
    t.ok(not failed and out.startswith("ok 1"), "same() passes on equal bytes", out)
    out, failed = failing(lambda i: i.same(got, want, "with a log", lambda: "the log's tail"))
    t.ok("# the log's tail" in out, "same(): a callable detail is shown on failure", out)

    vals = iter(range(1000000))
    out, failed = failing(lambda i: i.eventually(lambda: next(vals) < 0, "a negative", 0.2))
    t.ok(failed and "for a negative" in out, "eventually() says what it waited for", out)
    t.ok("deadline 0.2 s" in out, "  and how long", out)
    t.ok("last seen: False" in out, "  and what it saw last", out)
    out, failed = failing(lambda i: i.eventually(lambda: {"evictions": 0}, "evictions", 0.05,
                                                 check=lambda s: s["evictions"] > 0))
    t.ok(failed and "last seen: {'evictions': 0}" in out, "eventually(check=): the whole state", out)
    out, failed = failing(lambda i: i.eventually(lambda: {"evictions": 1}, "evictions", 5,
                                                 check=lambda s: s["evictions"] > 0))
    t.ok(not failed, "eventually(check=) passes once the check does", out)

    with tempfile.TemporaryDirectory(prefix="xp-selftest-") as d:
        a, b = os.path.join(d, "a"), os.path.join(d, "b")
        with open(a, "wb") as f:
            f.write(got)
        with open(b, "wb") as f:
            f.write(want)
        why = xcheck.same_files(a, b) or ""
        t.ok("got 24 bytes, want 20" in why and "offset 10" in why, "same_files(): sizes, offset", why)
        why = xcheck.same_files(os.path.join(d, "absent"), b) or ""
        t.ok("(ENOENT)" in why, "same_files(): a failed open gives the errno", why)
        why = xcheck.same_files(d, b) or ""
        t.ok("(EISDIR)" in why and "at offset 0" in why, "same_files(): a failed read, errno and offset",
             why)
        t.ok(xcheck.same_files(b, b) is None, "same_files(): equal files")
        log = os.path.join(d, "x.log")
        with open(log, "w") as f:
            f.write("".join("line %d\n" % i for i in range(50)))
        tail = xcheck.log_tail(log, 20)
        t.ok(tail.splitlines()[1:] == ["line %d" % i for i in range(30, 50)],
             "log_tail(): the last 20 lines", tail)
        with open(log, "w") as f:
            f.write("started\n==77==ERROR: AddressSanitizer: heap-use-after-free on address 0x1\n"
                    "    #0 0x2 in live_main fs/live.c:400\n" +
                    "".join("shadow %d\n" % i for i in range(100)))
        tail = xcheck.log_tail(log, 20)
        t.ok("heap-use-after-free" in tail and "live_main fs/live.c:400" in tail and
             tail.rstrip().endswith("shadow 99") and "shadow 40" in tail,
             "log_tail(): a sanitizer's report above the tail is shown with it", tail)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            xtap.Tap().ok(False, "a daemon died", tail)
        t.ok("live_main fs/live.c:400" in out.getvalue() and "shadow 99" in out.getvalue(),
             "xtap.ok(): a failure's detail keeps the sanitizer's report with the last lines",
             out.getvalue())
        check_verdicts(t, d)
    return t.done()


calls = []


def check(data, path, bad=False):
    """A check for verdict(): counts its calls."""
    calls.append(1)
    if bad:
        xproto.fail("made to fail")
    return len(data)


def check_verdicts(t, d):
    """xproto.verdict(): a pass is remembered for the same arguments only; a
    failure, a closure or other bytes check again."""
    xproto.VERDICTS = os.path.join(d, "verdicts")
    os.mkdir(xproto.VERDICTS)
    a, b = os.path.join(d, "va"), os.path.join(d, "vb")
    os.mkdir(a)
    os.mkdir(b)
    for x in (a, b):
        with open(os.path.join(x, "p.pb"), "wb") as f:
            f.write(b"profile")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        r = [xproto.verdict(check, b"12345", os.path.join(a, "p.pb")),
             xproto.verdict(check, b"12345", os.path.join(b, "p.pb"))]
    t.ok(r == [5, 5] and len(calls) == 1, "verdict(): the same bytes in another directory "
         "pass without checking again", "%r, %d calls" % (r, len(calls)))
    with contextlib.redirect_stdout(out):
        xproto.verdict(check, b"12346", os.path.join(a, "p.pb"))
    t.ok(len(calls) == 2, "verdict(): other output bytes are checked")
    with open(os.path.join(b, "p.pb"), "wb") as f:
        f.write(b"profilf")
    with contextlib.redirect_stdout(out):
        xproto.verdict(check, b"12345", os.path.join(b, "p.pb"))
    t.ok(len(calls) == 3, "verdict(): another profile's bytes are checked")
    n = len(xproto.failures)
    with contextlib.redirect_stdout(out):
        xproto.verdict(check, b"x", a, bad=True)
        xproto.verdict(check, b"x", a, bad=True)
    t.ok(len(calls) == 5 and len(xproto.failures) == n + 2,
         "verdict(): a failed check is not remembered", "%d calls" % len(calls))
    del xproto.failures[n:]
    with contextlib.redirect_stdout(out):
        xproto.verdict(lambda: check(b"y", a))
        xproto.verdict(lambda: check(b"y", a))
    t.ok(len(calls) == 7, "verdict(): a closure's captured values are not digested: checked "
         "every time")
    xproto.VERDICTS = None


if __name__ == "__main__":
    sys.exit(main())
