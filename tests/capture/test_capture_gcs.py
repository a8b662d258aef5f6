#!/usr/bin/python3
"""test_capture_gcs.py - captures into a gs:// source through a real mount
against the offline GCS emulator (tests/lib/gcs_harness.py): the XSpace a
real gRPC peer (profiler_server.py) sends is uploaded to the bucket as
<run>/plugins/profile/<session>/<host>.xplane.pb (checked with plain HTTP
against the emulator, not through xprofs), repository_root is the gs:// URL,
an existing object is never overwritten, and a large profile streams with a
bounded daemon RSS. TAP; exit 77 without FUSE, the daemon or the emulator.
"""
import hashlib
import json
import os
import sys
import time
import urllib.parse
import urllib.request

import gcs_harness as gh
from test_capture import Server, captures, vmhwm_kb  # this script's own folder

URL = "gs://bkt/logs"


def get_object(emu, name):
    u = "%s/download/storage/v1/b/bkt/o/%s?alt=media" % (emu, urllib.parse.quote(name, safe=""))
    try:
        with urllib.request.urlopen(u) as r:
            h = hashlib.sha256()
            n = 0
            while True:
                b = r.read(1 << 20)
                if not b:
                    return h.hexdigest(), n
                h.update(b)
                n += len(b)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None, 0
        raise


def submit(mnt, line):
    fd = os.open(os.path.join(mnt, "capture"), os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def wait_done(mnt, run, session, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        with open(os.path.join(mnt, "capture")) as f:
            caps = [c for c in captures(f.read()) if c["run"] == run and c["session"] == session]
        if caps and caps[-1]["state"] != "running":
            return caps[-1]
        time.sleep(0.1)
    raise RuntimeError("capture %s/%s still running" % (run, session))


def main(t, h):
    servers = []
    h.cleanups.append(lambda: [s.stop() for s in servers])
    src = os.path.join(h.work, "src")
    os.makedirs(os.path.join(src, "old", "plugins", "profile", "s"))
    with open(os.path.join(src, "old", "plugins", "profile", "s", "h.xplane.pb"), "wb") as f:
        f.write(b"\x0a\x00")
    emu = h.start_emulator()
    h.seed(src, URL)
    mnt, proc, log = h.mount(URL, emu, ["anonymous", "no_cache"])
    s = Server(h.work)
    servers.append(s)
    host = s.addr.replace(":", "_")
    obj = "logs/g1/plugins/profile/gs1/%s.xplane.pb" % host

    submit(mnt, "run=g1 %s duration_ms=100 session=gs1" % s.addr)
    c = wait_done(mnt, "g1", "gs1")
    rec = s.records("Profile")[0]
    digest, n = get_object(emu, obj)
    t.ok(c["state"] == "ok", "capture into gs:// ends ok", json.dumps(c))
    t.ok(digest == rec["sha256"] and n == rec["bytes"] == c["hosts"][0]["bytes"],
         "the bucket object is byte-identical to what the server sent", "%s %d %r" % (digest, n, rec))
    t.ok(rec["repository_root"] == URL + "/g1/plugins/profile",
         "repository_root is the gs:// URL", rec["repository_root"])
    listed = os.path.isdir(os.path.join(mnt, "runs", "g1")) and "gs1" in os.listdir(os.path.join(mnt, "runs", "g1"))
    t.ok(listed, "the new session appears under runs/g1/")
    if listed:
        summ = json.load(open(os.path.join(mnt, "runs", "g1", "gs1", host, "summary.json")))
        t.ok(isinstance(summ, dict) and summ, "its summary.json decodes")

    # the same session again: the object exists, nothing is overwritten
    submit(mnt, "run=g1 %s duration_ms=50 session=gs1" % s.addr)
    c = wait_done(mnt, "g1", "gs1")
    digest2, _ = get_object(emu, obj)
    t.ok(c["state"] == "error" and "exists" in (c["hosts"][0]["error"] or "") and digest2 == digest,
         "an existing object is never overwritten", json.dumps(c))

    # a large profile streams through the GCS writer with bounded memory
    mb = int(os.environ.get("XPROFS_CAPTURE_GCS_BIG_MB", "200"))
    big = Server(h.work, "--big-mb", str(mb))
    servers.append(big)
    t0 = time.time()
    submit(mnt, "run=g2 %s duration_ms=50 session=big" % big.addr)
    c = wait_done(mnt, "g2", "big", timeout=300)
    dt = time.time() - t0
    rec = big.records("Profile")[0]
    digest, n = get_object(emu, "logs/g2/plugins/profile/big/%s.xplane.pb" % big.addr.replace(":", "_"))
    hwm = vmhwm_kb(proc.pid)
    print("# gs:// big: %d MiB in %.1fs, daemon VmHWM %d MiB" % (n >> 20, dt, hwm >> 10))
    t.ok(c["state"] == "ok" and digest == rec["sha256"], "a %d MiB capture lands intact in the bucket" % mb,
         json.dumps(c))
    t.ok(hwm < 300 * 1024, "daemon RSS stays bounded (VmHWM %d MiB < 300)" % (hwm >> 10))
    rc = h.umount(mnt)
    t.ok(rc == 0, "clean unmount", gh.Harness.log(log))


if __name__ == "__main__":
    sys.exit(gh.run(main))
