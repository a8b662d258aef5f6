#!/usr/bin/python3
"""tests/fs/check_mount.py SRC MNT - generic checks of a live xprofs mount.

Read-only checks that hold for any source tree:
  mirror   every file under SRC equals MNT/logdir/<same path> (whole read,
           random preads incl. TensorBoard's 512 KiB reads, size, mtime)
  walk     a TensorBoard-like run/session/host discovery gives the same
           answer on SRC and on MNT/logdir
  runs     every (run, session, host) is a directory under MNT/runs with
           the expected files
  views    every generated file under MNT/runs opens, st_size after open
           equals the bytes read, *.json parses, trace.json.gz gunzips to
           trace.json (zcat | cmp) (profiles listed in
           XP_BAD_PROFILES may fail with EIO instead)
Prints "ok - ..." lines; exits 1 on the first failure.
"""
import errno
import json
import os
import random
import subprocess
import sys

import xmount

SRC, MNT = sys.argv[1], sys.argv[2]
BAD = set(filter(None, os.environ.get("XP_BAD_PROFILES", "").split(":")))


def fail(msg):
    print("not ok - " + msg)
    sys.exit(1)


def files_under(root):
    for d, _, fs in os.walk(root):
        for f in fs:
            yield os.path.relpath(os.path.join(d, f), root)


def check_mirror():
    rnd = random.Random(1234)
    n = 0
    for rel in sorted(files_under(SRC)):
        a, b = os.path.join(SRC, rel), os.path.join(MNT, "logdir", rel)
        sa, sb = os.stat(a), os.stat(b)
        if sa.st_size != sb.st_size:
            fail("size of %s: %d != %d" % (rel, sb.st_size, sa.st_size))
        if sa.st_mtime_ns != sb.st_mtime_ns:
            fail("mtime of %s: %d != %d" % (rel, sb.st_mtime_ns, sa.st_mtime_ns))
        with open(a, "rb") as fa, open(b, "rb") as fb:
            if fa.read() != fb.read():
                fail("content of %s differs" % rel)
            fda, fdb = fa.fileno(), fb.fileno()
            size = sa.st_size
            for _ in range(40):
                off = rnd.randrange(0, size + 2) if size else rnd.randrange(0, 4)
                ln = rnd.choice([1, 7, 4096, 65536, 512 * 1024, rnd.randrange(1, 200000)])
                if os.pread(fda, ln, off) != os.pread(fdb, ln, off):
                    fail("pread(%d, %d) of %s differs" % (ln, off, rel))
            if os.pread(fdb, 10, 1 << 50) != b"":
                fail("pread at a huge offset of %s is not empty" % rel)
        n += 1
    if n == 0:
        fail("source is empty")
    print("ok - mirror: %d files byte-identical (whole, random preads, size, mtime)" % n)


def tb_walk(logdir):
    """What TensorBoard's profile plugin finds: {run: {session: [hosts]}}."""
    out = {}
    for d, dirs, _ in os.walk(logdir):
        dirs.sort()
        if os.path.basename(d) == "profile" and os.path.basename(os.path.dirname(d)) == "plugins":
            run = os.path.relpath(os.path.dirname(os.path.dirname(d)), logdir)
            sessions = {}
            for s in sorted(os.listdir(d)):
                sp = os.path.join(d, s)
                if os.path.isdir(sp):
                    sessions[s] = sorted(h[: -len(".xplane.pb")] for h in os.listdir(sp)
                                         if h.endswith(".xplane.pb") and len(h) > 10
                                         and os.path.isfile(os.path.join(sp, h)))
            out[run] = sessions
    return out


def check_walk():
    a, b = tb_walk(SRC), tb_walk(os.path.join(MNT, "logdir"))
    if a != b:
        fail("TensorBoard walk differs:\n%s\n%s" % (a, b))
    print("ok - TensorBoard-like walk: %d runs identical on SRC and MNT/logdir" % len(a))
    return a


def run_dir(run):
    return os.path.join(MNT, "runs", "_root" if run == "." else run)


def check_runs(walk):
    n = 0
    for run, sessions in walk.items():
        rd = run_dir(run)
        if not os.path.isdir(rd):
            fail("run dir %s missing" % rd)
        if not os.path.exists(os.path.join(rd, "capture")):
            fail("%s/capture missing" % rd)
        for s, hosts in sessions.items():
            sd = os.path.join(rd, s)
            if sorted(x for x in os.listdir(sd)
                      if x not in ("summary.json", "ops.json", "compare", "hlo_stats.json",
                                   "roofline.json", "op_profile.json",
                                   "framework_op_stats.json")) != sorted(hosts):
                fail("hosts of %s: %s != %s" % (sd, os.listdir(sd), hosts))
            for h in hosts:
                hd = os.path.join(sd, h)
                want = {"summary.json", "trace.json", "ops.json", "steps.json", "trace.json.gz",
                        "trace.pftrace", "errors", "planes", "steps", "window",
                        "lod"}  # docs/trace.md "Level of detail"
                want |= {"overview.json", "kernels.json", "overview.svg"}  # docs/stats.md
                want |= {"hlo_stats.json", "roofline.json"}  # docs/stats.md
                want |= {"memory_profile.json", "memory_viewer.json", "memory.svg"}  # docs/memory.md
                want |= {"op_profile.json", "framework_op_stats.json"}  # docs/stats.md
                if set(os.listdir(hd)) != want:
                    fail("host dir %s has %s" % (hd, sorted(os.listdir(hd))))
                n += 1
    top = set(os.listdir(os.path.join(MNT, "runs")))
    want_top = {("_root" if r == "." else r).split("/")[0] for r in walk}
    if top != want_top:
        fail("runs/ has %s, want %s" % (sorted(top), sorted(want_top)))
    print("ok - runs tree: %d runs, %d hosts, nested runs as nested dirs" % (len(walk), n))


def read_gen(path):
    size, data = xmount.read_whole(path)
    # docs/fs.md: a view still rendering when open() returns (its wait is
    # bounded, so a loaded machine can outlast it) shows size 0 until done
    if size not in (0, len(data)):
        fail("%s: st_size after open %d: neither 0 (rendering) nor the %d bytes read"
             % (path, size, len(data)))
    if os.stat(path).st_size != len(data):
        fail("%s: stat after read %d != %d" % (path, os.stat(path).st_size, len(data)))
    return data


def check_views(walk):
    n = bad = 0
    for run, sessions in walk.items():
        for s, hosts in sessions.items():
            sd = os.path.join(run_dir(run), s)
            try:
                json.loads(read_gen(os.path.join(sd, "summary.json")))
            except OSError as e:
                fail("%s/summary.json: %s" % (sd, e))
            for h in hosts:
                hd = os.path.join(sd, h)
                names = ["summary.json", "trace.json", "ops.json", "steps.json", "trace.json.gz",
                         "trace.pftrace"]
                names += ["overview.json", "kernels.json"]  # kernels.json: ENOENT without GPUs
                names += ["op_profile.json", "framework_op_stats.json"]
                try:
                    for p in sorted(os.listdir(os.path.join(hd, "planes"))):
                        for line in sorted(os.listdir(os.path.join(hd, "planes", p))):
                            names.append(os.path.join("planes", p, line))
                except OSError as e:
                    if h in BAD and e.errno == errno.EIO:
                        bad += 1
                        continue
                    fail("%s/planes: %s" % (hd, e))
                for v in names:
                    try:
                        data = read_gen(os.path.join(hd, v))
                    except OSError as e:
                        if h in BAD and e.errno == errno.EIO:
                            bad += 1
                            continue
                        if v == "kernels.json" and e.errno == errno.ENOENT:
                            continue
                        fail("%s/%s: %s" % (hd, v, e))
                    if v == "trace.json.gz":
                        # zcat MOUNT/.../trace.json.gz | cmp - MOUNT/.../trace.json
                        z = subprocess.run(["zcat", os.path.join(hd, v)], stdout=subprocess.PIPE)
                        c = subprocess.run(["cmp", "-", os.path.join(hd, "trace.json")],
                                           input=z.stdout, stdout=subprocess.PIPE)
                        if z.returncode != 0 or c.returncode != 0:
                            fail("%s: zcat trace.json.gz | cmp - trace.json: %d/%d"
                                 % (hd, z.returncode, c.returncode))
                        n += 1
                        continue
                    if v == "trace.pftrace":
                        # its bytes equal xprofs-decode --view trace.pftrace --host <host>
                        pb = os.path.join(SRC, run, "plugins", "profile", s, h + ".xplane.pb")
                        cli = os.path.join(os.environ.get("XPROFS_BUILD_ROOT", "build"), "tools",
                                           "xprofs-decode")
                        d = subprocess.run([cli, pb, "--view", "trace.pftrace", "--host", h],
                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                        if d.returncode != 0 or d.stdout != data:
                            fail("%s/trace.pftrace differs from xprofs-decode's (exit %d)"
                                 % (hd, d.returncode))
                        n += 1
                        continue
                    try:
                        j = json.loads(data)
                    except ValueError as e:
                        fail("%s/%s is not JSON: %s" % (hd, v, e))
                    if v == "trace.json":  # processes are "<host> <plane>", as in XProf
                        for ev in j["traceEvents"]:
                            if ev["ph"] == "M" and ev["name"] == "process_name" and \
                                    ev["pid"] and not ev["args"]["name"].startswith(h + " "):
                                fail("%s/trace.json: process %r" % (hd, ev["args"]["name"]))
                    n += 1
                err = open(os.path.join(hd, "errors"), "rb").read()
                if h not in BAD and err:
                    fail("%s/errors not empty: %r" % (hd, err[:200]))
    print("ok - views: %d generated files open, parse, st_size == bytes read (%d expected EIO)"
          % (n, bad))


check_mirror()
w = check_walk()
check_runs(w)
check_views(w)
