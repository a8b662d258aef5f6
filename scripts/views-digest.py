#!/usr/bin/env /usr/bin/python3
"""scripts/views-digest.py - one digest line per rendered view, to prove a
change kept every output byte.

    scripts/views-digest.py [--build build] [--out FILE]    # writes the digests
    scripts/views-digest.py --check BEFORE.txt [--build build]

Renders, with the CLI (build/tools/xprofs-decode), every view of every
profile it can find: the samples in ../shared/samples (skipped with a note
when absent), profiles xprofs-gen makes (tpu, gpu, cpu; a 3-host session),
and the made-up profiles of tests/decode (flows, offload, stats edge cases).
Per profile: each whole-host view on 1 and 2 threads, every track (at most
64), the first steps as slices, a window, the level-of-detail trace (whole and
a window), and the session and compare views.
A line is "<sha256> <what>", or "<exit code> <what>" when the CLI failed
(failures are outputs too: the same errors must stay). --check compares with
an earlier run and prints each line that differs; exit 1 when any does.
Restructurings (docs/HACKING.md) run it before and after.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))
sys.path.insert(0, os.path.join(SRC, "tests", "decode"))

VIEWS = ["summary", "trace", "ops", "steps", "trace.json.gz", "trace.pftrace", "overview",
         "kernels", "overview.svg", "memory_profile", "hlo_stats", "roofline", "op_profile",
         "framework_op_stats", "memory_viewer", "memory.svg"]
SESSION_VIEWS = ["summary", "ops", "hlo_stats", "roofline", "op_profile", "framework_op_stats"]
MAX_TRACKS = 64
MAX_STEPS = 3


TMP = [b""]  # the run's temporary directory: left out of error messages


def run(cli, args):
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        err = p.stderr.replace(TMP[0], b"TMP") if TMP[0] else p.stderr
        return "exit%d:%s" % (p.returncode, hashlib.sha256(err).hexdigest()[:16]), p.stdout
    return hashlib.sha256(p.stdout).hexdigest(), p.stdout


def profiles(build, tmp):
    """(name, path) of every single-host profile, and (name, dir) of sessions."""
    gen = os.path.join(build, "tools", "xprofs-gen")
    hosts, sessions = [], []
    shared = os.path.realpath(os.path.join(SRC, "..", "shared", "samples"))
    if os.path.isdir(shared):
        for root, _, files in sorted(os.walk(shared)):
            for f in sorted(files):
                if f.endswith(".xplane.pb"):
                    hosts.append(("sample:" + os.path.relpath(os.path.join(root, f), shared),
                                  os.path.join(root, f)))
        sessions.append(("sample:conv", os.path.join(shared, "gpu_mi300_jax_conv_session")))
    else:
        print("views-digest: ../shared/samples absent: generated profiles only", file=sys.stderr)
    for kind, size in (("tpu", "6M"), ("gpu", "6M"), ("cpu", "2M")):
        p = os.path.join(tmp, "gen-%s.xplane.pb" % kind)
        subprocess.run([gen, "--kind", kind, "--size", size, "--seed", "7", "-o", p], check=True)
        hosts.append(("gen:" + kind, p))
    for seed in (3, 4):
        logdir = os.path.join(tmp, "logdir%d" % seed)
        subprocess.run([gen, "--hosts", "3", "--size", "1M", "--seed", str(seed), "--logdir",
                        logdir, "--run", "r", "--session", "s"], check=True,
                       stdout=subprocess.DEVNULL)
        sessions.append(("gen:session%d" % seed,
                         os.path.join(logdir, "r", "plugins", "profile", "s")))
    import flows_profile
    import offload_profile
    import stats_profiles
    import xproto
    for grouped in (False, True):
        p = os.path.join(tmp, "flows-%d.xplane.pb" % grouped)
        flows_profile.write(p, grouped=grouped)
        hosts.append(("made:flows-%d" % grouped, p))
    p = os.path.join(tmp, "offload.xplane.pb")
    offload_profile.write(p)
    hosts.append(("made:offload", p))
    pb2, ptmp = xproto.load("xplane")
    for name, p in sorted(stats_profiles.build(pb2, tmp).items()):
        hosts.append(("made:" + name, p))
    return hosts, sessions


def digest_host(cli, name, path, out):
    for v in VIEWS:
        for t in ("1", "2"):
            out.append("%s %s --view %s --threads %s" % (run(cli, [path, "--view", v, "--threads",
                                                                   t])[0], name, v, t))
    h, tracks = run(cli, [path, "--tracks"])
    out.append("%s %s --tracks" % (h, name))
    for line in tracks.decode("utf-8", "replace").splitlines()[:MAX_TRACKS]:
        tr = line.split("\t")[0].strip()
        if tr:
            out.append("%s %s --track %s" % (run(cli, [path, "--track", tr])[0], name, tr))
    for s in range(MAX_STEPS):
        for v in ("trace", "trace.pftrace", "ops"):
            out.append("%s %s --step %d --view %s" % (run(cli, [path, "--step", str(s), "--view",
                                                                v])[0], name, s, v))
    for w in ("0-1000", "500.5-20000.25"):
        for v in ("trace", "trace.pftrace", "ops", "steps"):
            out.append("%s %s --window %s --view %s" % (run(cli, [path, "--window", w, "--view",
                                                                  v])[0], name, w, v))
    # the level-of-detail trace (docs/trace.md): whole, on 1 and 2 threads, and a window
    for v in ("trace", "trace.pftrace"):
        for t in ("1", "2"):
            out.append("%s %s --lod --view %s --threads %s"
                       % (run(cli, [path, "--lod", "--view", v, "--threads", t])[0], name, v, t))
        w = "500.5-20000.25"
        out.append("%s %s --lod --window %s --view %s"
                   % (run(cli, [path, "--lod", "--window", w, "--view", v])[0], name, w, v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--out")
    ap.add_argument("--check")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    os.environ["XPROFS_BUILD_ROOT"] = build
    cli = os.path.join(build, "tools", "xprofs-decode")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        TMP[0] = tmp.encode()
        hosts, sessions = profiles(build, tmp)
        for name, path in hosts:
            digest_host(cli, name, path, out)
        for name, d in sessions:
            for v in SESSION_VIEWS:
                out.append("%s %s --session --view %s" % (run(cli, [d, "--session", "--view",
                                                                    v])[0], name, v))
        if len(sessions) >= 2:
            for v in ("ops", "steps", "op_profile", "summary"):
                b, c = sessions[-2][1], sessions[-1][1]
                out.append("%s compare %s %s --view %s" % (run(cli, ["--compare", b, c, "--view",
                                                                     v])[0], sessions[-2][0],
                                                           sessions[-1][0], v))
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    if a.check:
        with open(a.check) as f:
            before = dict(reversed(l.split(" ", 1)) for l in f.read().splitlines())
        after = dict(reversed(l.split(" ", 1)) for l in text.splitlines())
        bad = [w for w in after if w in before and before[w] != after[w]]
        gone = [w for w in before if w not in after]
        new = [w for w in after if w not in before]
        for w in bad[:40]:
            print("differs: %s (%s, was %s)" % (w, after[w][:16], before[w][:16]))
        for w in gone[:10]:
            print("gone: %s" % w)
        for w in new[:10]:
            print("new: %s" % w)
        print("views-digest: %d outputs, %d differ, %d gone, %d new" %
              (len(after), len(bad), len(gone), len(new)))
        return 1 if bad or gone else 0
    if not a.out:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
