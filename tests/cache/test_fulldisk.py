#!/usr/bin/python3
"""tests/cache/test_fulldisk.py - a full cache disk never turns a view into EIO (issue 11, 3).

Through a real /dev/fuse mount whose cache_dir is a 2 MiB tmpfs (mounted by
the test; it needs root, and is skipped with a message otherwise):
- a trace.json whose lz4 cache entry (~6 MB) is bigger than the whole disk
  reads completely and byte-identical to `xprofs-decode --view trace`: the
  cache meets ENOSPC / its free-space floor, evicts what it can, gives up,
  and the render goes on into a temporary file in tmp_dir (not the cache's
  disk); status.json counts the refusal (cache.nospace);
- views that fit one by one but not all together (four ~650 KB entries with
  cache_min_free=512K): each reads correctly, the cache evicts least recently
  used entries for space (cache.space_evictions > 0) and the disk keeps about
  min_free bytes free; the last view rendered is in the cache (a second read
  is a hit).
TAP output; the tmpfs is unmounted whatever happens.
"""
import json
import os
import subprocess

import xcheck
import xmount

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
DECODE = os.path.join(BUILD, "tools", "xprofs-decode")
BLOCK = 256 << 10


def decode_trace(prof):
    """trace.json of @prof as xprofs-decode renders it: the bytes a mount must serve."""
    return subprocess.run([DECODE, prof, "--view", "trace"], stdout=subprocess.PIPE,
                          check=True).stdout


def status(m):
    with open(os.path.join(m.mnt, "status.json")) as f:
        return json.load(f)


def free_bytes(path):
    sv = os.statvfs(path)
    return sv.f_bavail * sv.f_frsize


def tmpfs(t, path, size):
    os.makedirs(path)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", path],
                       stderr=subprocess.PIPE, universal_newlines=True)
    return r.returncode == 0, r.stderr.strip()


def body(t, w):
    src = os.path.join(w.path, "src")
    sess = w.session()
    big = os.path.join(sess, "big.xplane.pb")
    subprocess.check_call([GEN, "--kind", "tpu", "--size", "4M", "--seed", "3", "-o", big])
    small = []
    for i in range(4):
        p = os.path.join(sess, "h%d.xplane.pb" % i)
        subprocess.check_call([GEN, "--kind", "tpu", "--size", "600K", "--seed", str(10 + i),
                               "-o", p])
        small.append(p)
    tmp = os.path.join(w.path, "tmp")
    os.makedirs(tmp)
    mounted = []
    try:
        # part 1: a view bigger than the cache's whole disk
        cache = os.path.join(w.path, "a-cache")
        ok, err = tmpfs(t, cache, "2m")
        if not t.ok(ok, "a 2 MiB tmpfs for the cache", err):
            return
        mounted.append(cache)
        m = w.mount(src, "a", ",tmp_dir=" + tmp)
        want = decode_trace(big)
        size, got = xmount.read_whole(os.path.join(m.mnt, "runs/run/s1/big/trace.json"))
        t.same(got, want,
               "trace.json (%d bytes, cache entry > 2 MiB disk) reads whole and exact" % len(want),
               m.log_tail)
        st = status(m)["cache"]
        t.ok(st["nospace"] > 0, "the cache counted the refusal for space", json.dumps(st))
        t.ok(st["min_free"] > 0, "a default free-space floor is set (5% of the disk)",
             json.dumps(st))
        t.ok(not [n for n in os.listdir(cache) if n.endswith(".xc")],
             "no entry of the view was published")
        t.ok(not os.listdir(os.path.join(cache, "tmp")), "no temp file left in the cache")
        t.ok(m.close() == 0, "unmount")

        # part 2: entries that fill the disk are evicted, LRU first
        cache = os.path.join(w.path, "b-cache")
        ok, err = tmpfs(t, cache, "2m")
        mounted.append(cache)
        m = w.mount(src, "b", ",tmp_dir=%s,cache_min_free=512K" % tmp)
        bad = []
        for p in small:
            host = os.path.basename(p)[:-len(".xplane.pb")]
            _, got = xmount.read_whole(os.path.join(m.mnt, "runs/run/s1", host, "trace.json"))
            why = xcheck.diff_bytes(got, decode_trace(p), host + "/trace.json")
            if why:
                bad.append(why)
        t.ok(not bad, "all %d views read exactly while the disk fills" % len(small), m.log_tail,
             "\n".join(bad))
        st = status(m)["cache"]
        t.ok(st["space_evictions"] > 0, "the cache evicted entries for space", json.dumps(st))
        fr = free_bytes(cache)
        t.ok(fr >= (512 << 10) - BLOCK, "the disk keeps about cache_min_free free (%d)" % fr)
        hits = st["hits"]
        _, got = xmount.read_whole(os.path.join(m.mnt, "runs/run/s1/h3/trace.json"))
        st = status(m)["cache"]
        t.ok(st["hits"] > hits, "the newest view is still cached (a hit)", json.dumps(st))
        entries = [n for n in os.listdir(cache) if n.endswith(".xc")]
        t.ok(0 < len(entries) < len(small) + 1, "some entries kept, some evicted: %d" %
             len(entries))
        t.ok(m.close() == 0, "unmount")
    finally:
        for m in w.mounts:
            if not m.closed:
                m.close()
        for c in mounted:
            subprocess.call(["umount", "-l", c])


if __name__ == "__main__":
    if os.geteuid() != 0:
        import xtap
        raise SystemExit(xtap.skip_all("mounting a tmpfs for the cache needs root"))
    raise SystemExit(xmount.run("xprofs-fulldisk-", body))
