#!/usr/bin/python3
"""tests/fs/test_soak.py - crash soak: kill -9 the daemon under a mixed workload, 20 rounds.

Each round mounts the logdir, runs four workers through the mount at once --
TensorBoard/XProf-style cache writes in logdir/ (write a .tmp, rename it to
its final name), new profiles copied into logdir/, captures from the test
profiler peer (tests/capture/profiler_server.py, slowed down) written to the
capture control file, and view renders -- and SIGKILLs the daemon after a
random delay (seeded: SOAK_SEED, SOAK_ROUNDS override). After every kill it
lazily unmounts, remounts (the remount is the next round's mount) and checks
on the SOURCE directory, not through the mount:
  - every profile that existed before the first round is byte-identical;
  - no partial profile anywhere: every *.xplane.pb is an original, a complete
    copy of what a worker copied in (sha256 equal), or a complete capture
    (xprofs-decode reads it, and it is the peer's XSpace);
  - a cache file whose rename() returned is complete under its final name;
  - nothing xprofs creates is left half-done: no ".xprofs-tmp-*" file, and
    staging directories only with xprofs's marker, hidden from the mount and
    removed by a remount once old enough (their age rule is 60 s: the test
    backdates the markers' mtime, as the rule is about age);
  - the remount answers (runs/ lists the runs).
TAP output; exit 77 (skip plan) without /dev/fuse, the binaries or grpcio.
"""
import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import xmount
import xtap

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
ROOT = os.environ.get("XPROFS_SOURCE_ROOT", ".")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
DECODE = os.path.join(BUILD, "tools", "xprofs-decode")
SERVER = os.path.join(ROOT, "tests", "capture", "profiler_server.py")
PY = "/usr/bin/python3"


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def gen(path, seed, kind="tpu", size="150K"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    subprocess.check_call([GEN, "--kind", kind, "--size", size, "--seed", str(seed), "-o", path],
                          stdout=subprocess.DEVNULL)


def walk_files(top):
    for d, dirs, files in os.walk(top):
        for f in files:
            yield os.path.join(d, f)


class Peer:
    """The test profiler server, each capture slowed down so kills land mid-capture."""

    def __init__(self, work, xspace):
        self.dir = tempfile.mkdtemp(dir=work, prefix="peer-")
        pf = os.path.join(self.dir, "port")
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen([PY, SERVER, "--port-file", pf, "--xspace", xspace,
                                      "--slow-ms", "150"], stdout=self.log, stderr=subprocess.STDOUT)
        if not xmount.poll(lambda: os.path.exists(pf) or self.proc.poll() is not None):
            raise RuntimeError("profiler server did not start")
        if self.proc.poll() is not None:
            raise RuntimeError("profiler server exited: " + open(self.log.name).read())
        self.port = int(xmount.poll(lambda: open(pf).read().strip()))

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


class Soak:
    def __init__(self, t, w, rng):
        self.t, self.w, self.rng = t, w, rng
        self.src = os.path.join(w.path, "src")
        self.stash = os.path.join(w.path, "stash")
        self.originals = {}   # path -> sha256 before the first round
        self.copied = {}      # path a worker copied in -> the sha256 it copied
        self.renamed = {}     # final cache file whose rename() returned -> its bytes
        self.known_good = {}  # path -> sha256 already checked complete
        self.round = 0

    def setup(self):
        for run, seed in (("r0", 1), ("r1", 2)):
            for host in ("h0", "h1"):
                gen(os.path.join(self.src, run, "plugins", "profile", "s0", host + ".xplane.pb"),
                    seed * 10 + len(host) + (host == "h1"))
        for p in walk_files(self.src):
            self.originals[p] = sha(p)
        os.makedirs(self.stash)
        self.peer_xspace = os.path.join(self.stash, "peer.xplane.pb")
        gen(self.peer_xspace, 99, "gpu", "100K")
        self.peer_sha = sha(self.peer_xspace)
        self.peer = Peer(self.w.path, self.peer_xspace)

    # ---- workers (every error is expected once the daemon is killed) ----
    def cache_writer(self, mnt, stop):
        d = os.path.join(mnt, "logdir", "r0", "plugins", "profile", "s0")
        i = 0
        while not stop.is_set():
            data = os.urandom(self.rng_bytes(i))
            tmp = os.path.join(d, "tb_cache_%d_%d.tmp" % (self.round, i))
            final = os.path.join(d, "tb_cache_%d_%d.json" % (self.round, i))
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                os.rename(tmp, final)
            except OSError:
                return
            self.renamed[os.path.join(self.src, "r0", "plugins", "profile", "s0",
                                      os.path.basename(final))] = data
            i += 1

    def rng_bytes(self, i):
        return 1000 + (self.round * 7919 + i * 104729) % 300000

    def copier(self, mnt, stop):
        i = 0
        while not stop.is_set():
            name = "c%d_%d" % (self.round, i)
            stash = os.path.join(self.stash, name + ".xplane.pb")
            gen(stash, 1000 + self.round * 100 + i, "cpu", "300K")
            rel = os.path.join("new", "plugins", "profile", name, "host.xplane.pb")
            self.copied[os.path.join(self.src, rel)] = sha(stash)
            try:
                os.makedirs(os.path.dirname(os.path.join(mnt, "logdir", rel)), exist_ok=True)
                shutil.copyfile(stash, os.path.join(mnt, "logdir", rel))
            except OSError:
                return
            i += 1

    def capturer(self, mnt, stop):
        i = 0
        while not stop.is_set():
            line = "run=cap localhost:%d duration_ms=50 session=k%d_%d\n" % (self.peer.port,
                                                                            self.round, i)
            try:
                with open(os.path.join(mnt, "capture"), "w") as f:
                    f.write(line)
            except OSError:
                return
            # a capture runs in the background: wait for it to land or the mount to die
            want = os.path.join(self.src, "cap", "plugins", "profile", "k%d_%d" % (self.round, i))
            xmount.poll(lambda: os.path.isdir(want) or stop.is_set(), 30)
            i += 1

    def reader(self, mnt, stop):
        views = ["ops.json", "trace.json", "steps.json", "trace.pftrace", "summary.json"]
        i = 0
        while not stop.is_set():
            run, host = ("r0", "r1")[i % 2], ("h0", "h1")[(i // 2) % 2]
            try:
                with open(os.path.join(mnt, "runs", run, "s0", host, views[i % len(views)]),
                          "rb") as f:
                    while f.read(1 << 20):
                        pass
            except OSError:
                return
            i += 1

    # ---- one round ----
    def run_round(self, m):
        stop = threading.Event()
        ths = [threading.Thread(target=fn, args=(m.mnt, stop))
               for fn in (self.cache_writer, self.copier, self.capturer, self.reader)]
        for th in ths:
            th.start()
        time.sleep(self.rng.uniform(0.05, 2.5))  # the kill's random moment: the soak's point
        m.proc.send_signal(signal.SIGKILL)
        m.proc.wait()
        stop.set()
        subprocess.call(["fusermount3", "-uz", m.mnt])
        for th in ths:
            th.join(60)
        m.closed = True
        m.log.close()
        return not any(th.is_alive() for th in ths)

    def check(self, mnt, where):
        t, bad = self.t, []
        for p, h in self.originals.items():
            if not os.path.exists(p) or sha(p) != h:
                bad.append("original %s changed or gone" % p)
        for p in walk_files(self.src):
            base = os.path.basename(p)
            if base.startswith(".xprofs-tmp-"):
                bad.append("temporary file left: %s" % p)
            if not p.endswith(".xplane.pb") or p in self.originals:
                continue
            if self.known_good.get(p) == os.path.getsize(p):
                continue
            if p in self.copied:
                if sha(p) != self.copied[p]:
                    bad.append("partial copy visible: %s" % p)
            elif "/cap/" in p:
                if sha(p) != self.peer_sha or subprocess.call(
                        [DECODE, p, "--view", "summary"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL) != 0:
                    bad.append("partial capture visible: %s" % p)
            else:
                bad.append("unexpected profile %s" % p)
            self.known_good[p] = os.path.getsize(p)
        for p, data in self.renamed.items():
            try:
                ok = open(p, "rb").read() == data
            except OSError:
                ok = False
            if not ok:
                bad.append("cache file renamed into place is not complete: %s" % p)
        for e in os.listdir(self.src):
            if e.startswith(".xprofs-tmp-stage-"):
                # a kill between its mkdir and its marker leaves it empty, or with
                # part of the marker: that shape is swept too (store/local.c)
                inside = os.listdir(os.path.join(self.src, e))
                if ".xprofs-staging" not in inside and inside:
                    bad.append("staging dir without xprofs's marker, not empty: %s %s" % (e, inside))
                if os.path.exists(os.path.join(mnt, "logdir", e)):
                    bad.append("staging dir visible through the mount: %s" % e)
        try:
            runs = set(os.listdir(os.path.join(mnt, "runs")))
            if not {"r0", "r1"} <= runs:
                bad.append("runs/ lists %s" % sorted(runs))
        except OSError as e:
            bad.append("runs/ does not answer: %s" % e)
        t.ok(not bad, "%s: originals intact, no partial profile, renames whole, no leftovers"
             % where, "\n".join(bad[:20]))
        return not bad


def main():
    why = xmount.usable()
    for p in (GEN, DECODE, SERVER):
        if not why and not os.path.exists(p):
            why = "no %s" % p
    if not why and subprocess.call([PY, "-c", "import grpc"], stderr=subprocess.DEVNULL) != 0:
        why = "python3-grpcio absent"
    if why:
        return xtap.skip_all(why)
    seed = int(os.environ.get("SOAK_SEED", random.SystemRandom().randrange(1 << 30)))
    rounds = int(os.environ.get("SOAK_ROUNDS", "20"))
    print("# seed %d (SOAK_SEED=%d SOAK_ROUNDS=%d reproduces the kill times)" % (seed, seed, rounds))
    t = xtap.Tap()
    with xmount.Workdir(t, "xprofs-soak-") as w:
        s = Soak(t, w, random.Random(seed))
        s.setup()
        try:
            m = w.mount(s.src, "mnt0")
            s.check(m.mnt, "first mount")
            for r in range(rounds):
                s.round = r
                joined = s.run_round(m)
                t.ok(joined, "round %d: workers ended after the kill (seed %d)" % (r, seed))
                m = w.mount(s.src, "mnt%d" % (r + 1))
                if not s.check(m.mnt, "round %d remount (seed %d)" % (r, seed)):
                    break
            # staging directories left by kills are removed once old enough
            old = time.time() - 3600
            for e in os.listdir(s.src):
                if e.startswith(".xprofs-tmp-stage-"):
                    mk = os.path.join(s.src, e, ".xprofs-staging")
                    if os.path.exists(mk):
                        os.utime(mk, (old, old))
                    os.utime(os.path.join(s.src, e), (old, old))
            t.ok(m.close() == 0, "unmount after the rounds: xprofs exits with 0")
            m = w.mount(s.src, "mnt-final")
            left = [e for e in os.listdir(s.src) if e.startswith(".xprofs-tmp-")]
            copies = sum(1 for p in s.copied if os.path.exists(p))
            caps = sum(1 for p in walk_files(os.path.join(s.src, "cap"))) \
                if os.path.isdir(os.path.join(s.src, "cap")) else 0
            # a capture takes about a second and a copy first generates its profile: on a
            # loaded machine none may finish between kills (a run beside two more copies
            # of the suite had 0 copies), so they are counted here and each is required
            # on the final, unkilled mount
            t.ok(s.renamed, "the workload did its work between kills: %d copies, %d captures, "
                 "%d cache renames landed" % (copies, caps, len(s.renamed)))
            stop = threading.Event()
            s.round = rounds
            ths = [threading.Thread(target=fn, args=(m.mnt, stop))
                   for fn in (s.capturer, s.copier)]
            for th in ths:
                th.start()
            want = os.path.join(s.src, "cap", "plugins", "profile", "k%d_0" % rounds)
            landed = xmount.poll(lambda: os.path.isdir(want) and any(
                f.endswith(".xplane.pb") for f in os.listdir(want)), 120)
            copy = os.path.join(s.src, "new", "plugins", "profile", "c%d_0" % rounds,
                                "host.xplane.pb")
            copied = xmount.poll(lambda: os.path.exists(copy) and copy in s.copied and
                                 sha(copy) == s.copied[copy], 120)
            stop.set()
            for th in ths:
                th.join(60)
            t.ok(landed, "a capture on the remounted logdir lands")
            t.ok(copied, "a copy into the remounted logdir lands whole")
            t.ok(not left, "a remount sweeps every aged staging directory (%d left)" % len(left),
                 "\n".join(left))
            s.check(m.mnt, "final remount")
        finally:
            s.peer.close()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
