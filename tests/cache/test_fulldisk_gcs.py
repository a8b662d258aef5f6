#!/usr/bin/python3
"""tests/cache/test_fulldisk_gcs.py - the gs:// block cache on a full disk (issue 11, 3).

A gs:// mount (the offline emulator) whose cache_dir is a 2 MiB tmpfs (needs
root): a 6 MiB object read through logdir/ comes back byte-identical although
its 1 MiB blocks do not all fit on the cache's disk, and the cache evicts
older blocks for space (cache.space_evictions > 0) instead of giving up on
caching; trace.json of a profile on the same mount equals
`xprofs-decode --view trace` (its entry does not fit either: rendered into
tmp_dir). Skipped without the emulator, /dev/fuse or root.
"""
import json
import os
import subprocess

import gcs_harness
from gcs_harness import Skip

URL = "gs://bkt/logs"


def body(t, h):
    if os.geteuid() != 0:
        raise Skip("mounting a tmpfs for the cache needs root")
    build = gcs_harness.build_root()
    src = os.path.join(h.work, "src")
    sess = os.path.join(src, "run", "plugins", "profile", "s1")
    os.makedirs(sess)
    blob = os.urandom(6 << 20)
    with open(os.path.join(src, "blob.bin"), "wb") as f:
        f.write(blob)
    prof = os.path.join(sess, "h.xplane.pb")
    subprocess.check_call([os.path.join(build, "tools", "xprofs-gen"), "--kind", "tpu",
                           "--size", "2M", "--seed", "5", "-o", prof])
    want = subprocess.run([os.path.join(build, "tools", "xprofs-decode"), prof, "--view",
                           "trace"], stdout=subprocess.PIPE, check=True).stdout
    h.start_emulator()
    h.seed(src, URL)
    cache = os.path.join(h.work, "cache-%d" % len(h.mounts))  # the harness's cache_dir
    tmp = os.path.join(h.work, "tmp")
    os.makedirs(cache)
    os.makedirs(tmp)
    if subprocess.call(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", cache]) != 0:
        raise Skip("cannot mount a tmpfs")
    h.cleanups.append(lambda: subprocess.call(["umount", "-l", cache]))
    mnt, proc, log = h.mount(URL, h.emu_url, ["anonymous", "tmp_dir=" + tmp])
    with open(os.path.join(mnt, "logdir", "blob.bin"), "rb") as f:
        got = f.read()
    t.same(got, blob, "a 6 MiB object reads exactly through a 2 MiB cache disk", h.log(log))
    # blocks reach the disk cache on its writer thread, after the read returned
    def cache_st():
        with open(os.path.join(mnt, "status.json")) as f:
            return json.load(f)["cache"]
    t.eventually(cache_st, "the block cache evicted older blocks for space", 30,
                 lambda: h.log(log), check=lambda st: st["space_evictions"] > 0)
    with open(os.path.join(mnt, "runs", "run", "s1", "h", "trace.json"), "rb") as f:
        got = f.read()
    t.same(got, want, "trace.json (%d bytes) reads whole and exact" % len(want), h.log(log))
    t.ok(h.umount(mnt) == 0, "unmount")


if __name__ == "__main__":
    raise SystemExit(gcs_harness.run(body))
