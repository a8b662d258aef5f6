"""tests/lib/xcheck.py - why a check failed: byte comparisons, reads, waits.

    why = xcheck.diff_bytes(got, want)    # None when equal, else sizes and the
                                          # first differing offset with context
    data, size, err = xcheck.read_all(p)  # every byte until EOF, st_size after
                                          # open, and why a read failed (errno)
    why = xcheck.same_files(got, want)    # both of the above for two paths
    why = xcheck.diff_json(got, want)     # None when parsed JSON values are
                                          # equal, else the path to the first
                                          # difference and both values there
    tail = xcheck.log_tail(path, 20)      # the last lines of a daemon's log
    v, why = xcheck.wait_for(cond, what, deadline_s)    # poll, say what was seen

Used by xtap.Tap.same()/eventually() and, as a command, by tests/lib/lib.sh's
xp_same:  xcheck.py same GOT WANT  (exit 0 equal, 1 different, 2 usage).

Design: a content check always reads both sides to their end and never trusts
st_size (a view still rendering reports 0 until it is done, docs/fs.md;
`cmp -s` gives up on differing sizes without reading a byte). Limits: files
are read whole into memory (the tests compare views of a few MB).
"""
import errno
import os
import re
import sys
import time

CONTEXT = 16  # bytes shown on each side of the first difference


def _show(b):
    """@b (bytes) as a short printable literal."""
    return repr(bytes(b))


def diff_bytes(got, want, what="content", context=CONTEXT):
    """None when @got == @want (bytes or str), else a few lines saying how
    they differ: both sizes, the first differing offset, and up to @context
    bytes of each side around it."""
    if isinstance(got, str):
        got = got.encode()
    if isinstance(want, str):
        want = want.encode()
    if got == want:
        return None
    n = min(len(got), len(want))
    off = 0
    while off < n and got[off:off + 65536] == want[off:off + 65536]:
        off += 65536  # whole chunks first: the byte loop below is slow
    off = min(off, n)
    while off < n and got[off] == want[off]:
        off += 1
    lo, hi = max(0, off - context), off + context
    lines = ["%s differs: got %d bytes, want %d" % (what, len(got), len(want))]
    if off == n:
        lines.append("first difference at offset %d: %s ends there (a prefix of %s)"
                     % ((off,) + (("got", "want") if len(got) < len(want) else ("want", "got"))))
    else:
        lines.append("first difference at offset %d (byte got 0x%02x, want 0x%02x)"
                     % (off, got[off], want[off]))
    lines.append("  got  [%d:%d]: %s" % (lo, min(hi, len(got)), _show(got[lo:hi])))
    lines.append("  want [%d:%d]: %s" % (lo, min(hi, len(want)), _show(want[lo:hi])))
    return "\n".join(lines)


def read_all(path, chunk=1 << 20):
    """(bytes read until EOF or the failure, st_size right after open or
    None, None or why the open/read failed with its errno and offset)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return b"", None, "open %s: %s (%s)" % (path, e.strerror, errno.errorcode.get(e.errno, e.errno))
    parts, done = [], 0
    try:
        size = os.fstat(fd).st_size
        while True:
            try:
                c = os.read(fd, chunk)
            except OSError as e:
                return b"".join(parts), size, "read %s at offset %d: %s (%s)" % (
                    path, done, e.strerror, errno.errorcode.get(e.errno, e.errno))
            if not c:
                return b"".join(parts), size, None
            parts.append(c)
            done += len(c)
    finally:
        os.close(fd)


def same_files(got_path, want_path):
    """None when both files read whole and hold the same bytes; else why not
    (a failed open/read with errno, sizes, the first differing offset)."""
    got, gsize, gerr = read_all(got_path)
    want, wsize, werr = read_all(want_path)
    lines = [e for e in (gerr, werr) if e]
    d = diff_bytes(got, want, "%s vs %s:" % (got_path, want_path))
    if d:
        lines.append(d)
        if gsize is not None and gsize != len(got):
            lines.append("  (st_size of %s right after open: %d)" % (got_path, gsize))
    return "\n".join(lines) or None


def diff_json(got, want, path="", key_order=False):
    """None when the parsed JSON values @got and @want are equal, else where
    they first differ (@path, then ".key" and "[i]" steps) and how: a key
    only one side has (with @key_order, the dicts' key lists when their
    order differs), a list's length, a leaf's two values. A float compares
    by value with any number (as JSON's doubles do); other leaves must also
    have the same type."""
    if isinstance(got, dict) and isinstance(want, dict):
        if key_order and list(got) != list(want):
            return "%s: keys %r, want %r" % (path, list(got), list(want))
        for k in want if key_order else sorted(set(got) | set(want)):
            if k not in got or k not in want:
                return "%s.%s: only in %s" % (path, k, "got" if k in got else "want")
            d = diff_json(got[k], want[k], path + "." + k, key_order)
            if d:
                return d
        return None
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return "%s: %d items, want %d" % (path, len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            d = diff_json(g, w, "%s[%d]" % (path, i), key_order)
            if d:
                return d
        return None
    num = (int, float)
    if isinstance(got, float) or isinstance(want, float):
        if isinstance(got, num) and isinstance(want, num) and float(got) == float(want):
            return None
    elif type(got) is type(want) and got == want:
        return None
    return "%s: %r, want %r" % (path, got, want)


SANITIZER_REPORT = re.compile(r"==\d+==ERROR: |: runtime error: ")


def log_tail(path, n=20):
    """The last @n lines of the file @path (a daemon's log) as one string,
    headed by its name; '' when it cannot be read or is empty. A sanitizer's
    report above them is shown too (its first 80 lines: what and where), since
    its end is only the shadow memory's map."""
    try:
        with open(path, "rb") as f:
            every = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    lines = every[-n:]
    if not lines:
        return ""
    out = []
    first = next((i for i, ln in enumerate(every) if SANITIZER_REPORT.search(ln)), None)
    if first is not None and first < len(every) - n:
        report = every[first:min(first + 80, len(every) - n)]
        out = ["the sanitizer's report in %s (line %d):" % (path, first + 1)] + report + ["..."]
    return "\n".join(out + ["last %d lines of %s:" % (len(lines), path)] + lines)


def wait_for(cond, what, deadline_s=30, interval_s=0.01, check=None):
    """Poll @cond() until its value is true (or passes @check(value), so
    that what is shown can be a whole state) or @deadline_s pass: (the last
    value, None) on success, (the last value, why) on a timeout: what was
    waited for, how long, and the last value seen."""
    t0 = time.monotonic()
    while True:
        v = cond()
        if (check(v) if check else v):
            return v, None
        took = time.monotonic() - t0
        if took > deadline_s:
            seen = repr(v)
            if len(seen) > 500:
                seen = seen[:500] + "... (%d chars)" % len(seen)
            return v, "waited %.1f s (deadline %g s) for %s; last seen: %s" % (
                took, deadline_s, what, seen)
        time.sleep(interval_s)


def main(argv):
    if len(argv) != 4 or argv[1] != "same":
        print("usage: xcheck.py same GOT WANT", file=sys.stderr)
        return 2
    why = same_files(argv[2], argv[3])
    if why:
        print(why)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
