"""tests/lib/xtap.py - TAP output and skips for the Python tests.

    t = xtap.Tap()
    t.ok(cond, "name", detail)   # "ok N - name" / "not ok N - name" + "# detail"
    return t.done()              # prints the plan "1..N" last; 0 or 1
    return xtap.skip_all(why)    # "1..0 # SKIP why"; returns 0

SKIP (77) is meson's "skipped" exit status for exit-code tests; with protocol: 'tap' the
"1..0 # SKIP" plan says why. Raise Skip where a prerequisite turns out to be
truly absent and let the caller turn it into skip_all(). Tests registered
with meson's default exit-code protocol (check_gen.py, oracle.py and the
shell tests through tests/lib/lib.sh's xp_skip) print "SKIP: why" and exit
77 instead; their "ok" lines are information only.
"""
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

    def ok(self, cond, name, detail=""):
        """One numbered result; on failure the last 30 lines of @detail
        follow as TAP comments. Returns @cond."""
        self.n += 1
        if not cond:
            self.failed += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.n, name), flush=True)
        if not cond and detail:
            for ln in str(detail).splitlines()[-30:]:
                print("# " + ln)
        return cond

    def done(self):
        """Print the plan; return the exit status (1 when anything failed)."""
        print("1..%d" % self.n, flush=True)
        return 1 if self.failed else 0

