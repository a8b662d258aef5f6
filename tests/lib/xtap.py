"""tests/lib/xtap.py - TAP output and skips for the Python tests.

    t = xtap.Tap()
    t.ok(cond, "name", detail)   # "ok N - name" / "not ok N - name" + "# detail"
    t.same(got, want, "name", detail)   # bytes equal; else sizes, first differing
                                        # offset with context (xcheck.diff_bytes)
    t.eventually(cond, "name", deadline_s, detail, check)  # poll cond() (until
                                        # check(value)); else how long, last value
    return t.done()              # prints the plan "1..N" last; 0 or 1
    return xtap.skip_all(why)    # "1..0 # SKIP why"; returns 0

SKIP (77) is meson's "skipped" exit status for exit-code tests; with protocol: 'tap' the
"1..0 # SKIP" plan says why. Raise Skip where a prerequisite turns out to be
truly absent and let the caller turn it into skip_all(). Tests registered
with meson's default exit-code protocol (check_gen.py, oracle.py and the
shell tests through tests/lib/lib.sh's xp_skip) print "SKIP: why" and exit
77 instead; their "ok" lines are information only.
"""
import sys

import xcheck

SKIP = 77


class Skip(Exception):
    """A prerequisite is absent: the whole test is skipped, not failed."""


def skip_all(reason):
    """Print the TAP skip plan for @reason and return the exit status 0.

    Under protocol: 'tap' meson reads the skip from the "1..0 # SKIP" plan;
    a non-zero status would turn it into ERROR."""
    print("1..0 # SKIP %s" % reason, flush=True)
    return 0


class Tap:
    """Each check prints ok / not ok right away; the plan comes last."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail="", why=""):
        """One numbered result; on failure @why (a few lines, all shown) and
        the last 30 lines of @detail (a log, say) follow as TAP comments, after
        the sanitizer's report xcheck.log_tail() put above them, if any.
        @detail may be a callable, called only on failure. Returns @cond."""
        self.n += 1
        if not cond:
            self.failed += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.n, name), flush=True)
        if not cond:
            if callable(detail):
                detail = detail()
            for ln in str(why or "").splitlines():
                print("# " + ln)
            lines = str(detail or "").splitlines()
            head = [i for i, ln in enumerate(lines) if ln.startswith("the sanitizer's report in ")]
            if head and head[0] < len(lines) - 30:
                end = lines.index("...", head[0]) if "..." in lines[head[0]:] else head[0] + 80
                lines = lines[head[0]:min(end + 1, len(lines) - 30)] + lines[-30:]
            else:
                lines = lines[-30:]
            for ln in lines:
                print("# " + ln)
            sys.stdout.flush()
        return cond

    def same(self, got, want, name, detail=""):
        """ok() of got == want (bytes or str); a failure says both sizes and
        the first differing offset with the bytes around it. Returns the
        result."""
        why = xcheck.diff_bytes(got, want)
        return self.ok(why is None, name, detail, why)

    def eventually(self, cond, name, deadline_s=30, detail="", check=None):
        """ok() of cond() turning true (or passing @check(value): cond may
        return a whole state, shown on failure) within @deadline_s (polled,
        never a fixed sleep); a timeout says what was waited for, how long,
        and the last value cond() returned. Returns that value."""
        v, why = xcheck.wait_for(cond, name, deadline_s, check=check)
        self.ok(why is None, name, detail, why)
        return v

    def done(self):
        """Print the plan; return the exit status (1 when anything failed)."""
        print("1..%d" % self.n, flush=True)
        return 1 if self.failed else 0

