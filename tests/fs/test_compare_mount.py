#!/usr/bin/python3
"""test_compare_mount.py - session ops.json and compare/ through a real mount (TAP).

A logdir with run "r" (sessions s1: 2 TPU hosts plus a corrupt one, s2: 3
TPU hosts, s3: 2 GPU hosts) and run "team/other" (session o1) is mounted:

- a session directory lists ops.json and compare; compare/ lists the run's
  other sessions only (not itself, not other runs); compare/<s>/ lists
  ops.json, steps.json, op_profile.json and summary.json;
- runs/r/s2/ops.json and compare/s1/{ops,steps,summary}.json are the bytes of
  `xprofs-decode DIR --session --view ops` / `--compare S1 S2 --view V`;
  the other-run form compare/team/other/o1/ops.json resolves (unlisted:
  compare/team lists nothing) and is the CLI's bytes too;
- the corrupt host is listed with its error in the session's ops.json;
- bad names are ENOENT (a session that does not exist, a view compare does
  not have, a run path without a session) or ENOTDIR, never a crash: the
  daemon still answers and exits 0 at unmount;
- a `find` over runs/r terminates, never enters another run through
  compare/, and renders nothing (status.json's render counter unchanged);
- in a run of 70 sessions compare/ lists the 64 nearest by name (so a walk
  is not N x N), and an unlisted one still resolves;
- compare/s3/ (s3's directory is 0700) is 0400, compare/s1/ 0444: what
  both sessions allow.
"""
import errno
import json
import os
import subprocess
import sys

import xmount
from xmount import errno_of

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
DECODE = os.path.join(BUILD, "tools", "xprofs-decode")


def gen(src, run, session, hosts, seed, kind="tpu"):
    subprocess.check_call([GEN, "--kind", kind, "--hosts", str(hosts), "--logdir", src, "--run",
                           run, "--session", session, "--size", "200K", "--seed", str(seed)],
                          stdout=subprocess.DEVNULL)
    return os.path.join(src, run, "plugins", "profile", session)


def renders(mnt):
    with open(os.path.join(mnt, "status.json")) as f:
        return json.load(f)["counters"]["renders"]


def body(t, w):
    src = os.path.join(w.path, "src")
    d1 = gen(src, "r", "s1", 2, 3)
    d2 = gen(src, "r", "s2", 3, 4)
    d3 = gen(src, "r", "s3", 2, 5, "gpu")
    os.chmod(d3, 0o700)  # compare/s3/ may be read only as both sessions allow
    do = gen(src, "team/other", "o1", 1, 6)
    # run "many": 70 sessions (hard links of one host): compare/ lists 64 of them
    for i in range(70):
        d = os.path.join(src, "many", "plugins", "profile", "m%02d" % i)
        os.makedirs(d)
        os.link(os.path.join(d1, "host0.xplane.pb"), os.path.join(d, "h.xplane.pb"))
    with open(os.path.join(d1, "broken.xplane.pb"), "wb") as f:
        f.write(b"\x0a\x75junk")
    m = w.mount(src)
    sd = os.path.join(m.mnt, "runs", "r", "s2")
    cmp_dir = os.path.join(sd, "compare")
    names = set(os.listdir(sd))
    t.ok({"ops.json", "compare", "summary.json", "host0"} <= names,
         "a session lists ops.json and compare/", sorted(names))
    t.ok(sorted(os.listdir(cmp_dir)) == ["s1", "s3"],
         "compare/ lists the run's other sessions only", os.listdir(cmp_dir))
    t.ok(sorted(os.listdir(os.path.join(cmp_dir, "s1"))) ==
         ["op_profile.json", "ops.json", "steps.json", "summary.json"],
         "compare/s1/ lists ops.json, steps.json, op_profile.json and summary.json")

    modes = {b: os.stat(os.path.join(cmp_dir, b, "ops.json")).st_mode & 0o777
             for b in ("s1", "s3")}
    t.ok(modes == {"s1": 0o444, "s3": 0o400},
         "compare/<base>/ files: the modes both sessions allow (s3 is 0700)", modes)
    many = os.path.join(m.mnt, "runs", "many")
    lists = {s: sorted(os.listdir(os.path.join(many, s, "compare")))
             for s in ("m00", "m35", "m69")}
    want = {"m00": ["m%02d" % i for i in range(1, 65)],
            "m35": ["m%02d" % i for i in range(3, 68) if i != 35],
            "m69": ["m%02d" % i for i in range(5, 69)]}
    t.ok(lists == want, "70 sessions: compare/ lists the 64 nearest by name",
         {k: (v[0], v[-1], len(v)) for k, v in lists.items()})
    t.ok(os.path.exists(os.path.join(many, "m00", "compare", "m69", "steps.json")),
         "an unlisted session of the run still resolves (m00/compare/m69/)")
    n0 = renders(m.mnt)
    walk = subprocess.run(["find", os.path.join(m.mnt, "runs", "r"), "-name", "planes", "-prune",
                           "-o", "-name", "steps", "-prune", "-o", "-print"],
                          capture_output=True, timeout=120)
    paths = walk.stdout.decode().splitlines()
    t.ok(walk.returncode == 0 and len(paths) < 500,
         "find over runs/r terminates (%d entries)" % len(paths), walk.stderr.decode()[-300:])
    t.ok(not any("/compare/team" in p or "/compare/r/" in p for p in paths),
         "find never enters another run through compare/")
    t.ok(any(p.endswith("/compare/s1/ops.json") for p in paths),
         "find sees compare/<session>/ops.json as a file")
    t.ok(renders(m.mnt) == n0, "the walk rendered nothing (renders %d -> %d)" %
         (n0, renders(m.mnt)))

    _, got = xmount.read_whole(os.path.join(sd, "ops.json"))
    want = subprocess.run([DECODE, d2, "--session", "--view", "ops"], capture_output=True).stdout
    t.ok(got == want and got, "s2/ops.json: the CLI's bytes (%d)" % len(got))
    j = json.loads(got)
    t.ok(j["device"] and j["device"]["planes"] > 0 and len(j["hosts"]) == 3,
         "s2/ops.json: 3 hosts, a device table")
    _, got = xmount.read_whole(os.path.join(m.mnt, "runs", "r", "s1", "ops.json"))
    hosts = {h["host"]: h["error"] for h in json.loads(got)["hosts"]}
    t.ok(hosts.get("broken") and hosts.get("host0") is None,
         "the corrupt host is listed with its error", hosts)
    for view in ("ops", "steps", "summary"):
        p = os.path.join(cmp_dir, "s1", view + ".json")
        size, got = xmount.read_whole(p)
        want = subprocess.run([DECODE, "--compare", d1, d2, "--view", view],
                              capture_output=True).stdout
        t.ok(got == want and got and size in (0, len(got)),
             "compare/s1/%s.json: the CLI's bytes (%d)" % (view, len(got)))
        t.ok(os.stat(p).st_size == len(got), "compare/s1/%s.json: stat after read" % view)
    j = json.loads(xmount.read_whole(os.path.join(cmp_dir, "s1", "ops.json"))[1])
    ops = j["device"]["ops"]
    t.ok(all(abs(a["delta_self_ps"]) >= abs(b["delta_self_ps"]) for a, b in zip(ops, ops[1:])),
         "compare ops sorted by |delta self time|")
    t.ok(j["base"]["session"] == "s1" and j["new"]["session"] == "s2",
         "s2/compare/s1: base s1, new s2")

    other = os.path.join(cmp_dir, "team", "other", "o1", "ops.json")
    _, got = xmount.read_whole(other)
    want = subprocess.run([DECODE, "--compare", do, d2], capture_output=True).stdout
    t.ok(got == want and got, "compare/team/other/o1/ops.json (another run): the CLI's bytes")
    t.ok(os.listdir(os.path.join(cmp_dir, "team")) == [],
         "compare/team/ (a run path) lists nothing")

    bad = {"compare/nope": errno.ENOENT, "compare/nope/ops.json": errno.ENOENT,
           "compare/s1/trace.json": errno.ENOENT, "compare/team/nope": errno.ENOENT,
           "compare/team/other/nope/ops.json": errno.ENOENT,
           "compare/s1/ops.json/x": errno.ENOTDIR, "ops.json/x": errno.ENOTDIR,
           "compare/" + "x" * 300: errno.ENAMETOOLONG}
    for rel, want in bad.items():
        e = errno_of(lambda: os.stat(os.path.join(sd, rel)))
        t.ok(e == want, "%s: %s" % (rel[:60], errno.errorcode.get(want)),
             os.strerror(e) if e else "it exists")
    t.ok(renders(m.mnt) >= n0, "the daemon still answers after the bad names")


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-compare-", body))
