#!/usr/bin/python3
"""tests/gcs/test_gcs_rename.py - renames on a gs:// mount (issue 12 item 3).

Through a real /dev/fuse mount of the daemon against the offline emulator
(whose launcher serves rewriteTo with its preconditions, patch 8) behind
tests/lib/fault_proxy.py, objects checked with plain HTTP:
- a file rename is one server-side rewriteTo and a DELETE: no byte of the
  object goes through this machine (no media GET, no upload);
- a directory rename (files and a subdirectory) moves every object, byte-
  identical, and the mount shows the new tree;
- an interrupted directory rename (the DELETE of one source refused, 403)
  fails, and leaves every object in exactly one of the two places; running
  it again finishes it;
- a profile still cannot be renamed (EPERM).
TAP output; exit 77 when FUSE, the xprofs binary or the emulator is absent.
"""
import errno
import json
import os
import sys
import urllib.parse
import urllib.request

import gcs_harness as gh
from fault_proxy import Rule

URL = "gs://bkt/logs"


def main(t, h):
    files = {"run/big.bin": os.urandom(3 << 20)}
    for d in ("d1", "d3", "d5", "d7"):
        for i in range(5):
            files["run/%s/f%d.bin" % (d, i)] = os.urandom(1000 + i)
        files["run/%s/sub/g.bin" % d] = os.urandom(5000)
    files["run/plugins/profile/s1/h.xplane.pb"] = b"x" * 100
    h.seed_files(URL, files)
    p = h.proxy()
    mnt, proc, log = h.mount(URL, p.url, ["anonymous", "no_cache"])
    root = os.path.join(mnt, "logdir")

    def objects(prefix):
        u = "%s/storage/v1/b/bkt/o?prefix=%s" % (h.emu_url, urllib.parse.quote("logs/" + prefix, safe=""))
        items = json.loads(urllib.request.urlopen(u, timeout=30).read()).get("items", [])
        out = {}
        for it in items:
            name = it["name"][len("logs/"):]
            out[name] = h.object(it["name"])
        return out

    def rename(a, b):
        """os.rename() of a to b (paths under the mount's logdir/), then the
        bucket: (the OSError or None, objects("run/"))."""
        try:
            os.rename(os.path.join(root, a), os.path.join(root, b))
        except OSError as e:
            return e, objects("run/")
        return None, objects("run/")

    def moved(got, a, b):
        """Every object of files under a/ is under b/ in got, byte-identical,
        and none is left under a/."""
        want = {k.replace(a + "/", b + "/"): v for k, v in files.items() if k.startswith(a + "/")}
        return ({k: v for k, v in got.items() if k.startswith(b + "/")} == want
                and not any(k.startswith(a + "/") for k in got))

    # A file rename: rewriteTo + DELETE, no bytes through the client.
    with p.lock:
        p.log.clear()
    err, got = rename("run/big.bin", "run/moved.bin")
    with p.lock:
        reqs = [(m, path) for _, m, path, _, _ in p.log]
    rewrites = [x for x in reqs if x[0] == "POST" and "/rewriteTo/" in x[1]]
    through = [x for x in reqs if "alt=media" in x[1] or x[1].startswith("/upload/")]
    t.ok(err is None and got.get("run/moved.bin") == files["run/big.bin"] and "run/big.bin" not in got,
         "a file rename moves the object (%s)" % err, h.log(log))
    t.ok(len(rewrites) == 1 and not through and any(m == "DELETE" for m, _ in reqs),
         "by one server-side rewriteTo and a DELETE (%s)" % reqs, h.log(log))

    # A directory rename.
    err, got = rename("run/d1", "run/d2")
    t.ok(err is None and moved(got, "run/d1", "run/d2"),
         "a directory rename moves every object, byte-identical (%s)" % err, "%s\n%s" % (sorted(got), h.log(log)))
    seen = sorted(os.listdir(os.path.join(root, "run/d2"))) if os.path.isdir(os.path.join(root, "run/d2")) else None
    t.ok(seen == ["f0.bin", "f1.bin", "f2.bin", "f3.bin", "f4.bin", "sub"]
         and not os.path.exists(os.path.join(root, "run/d1")),
         "the mount shows the renamed tree (%s)" % seen)

    # An interrupted directory rename, then run again.
    with p.lock:
        p.rules.append(Rule.parse(r"403,match=^DELETE .*d3%2Ff2\.bin"))
    err, got = rename("run/d3", "run/d4")
    names = {k.split("/", 2)[2] for k in got if k.startswith(("run/d3/", "run/d4/"))}
    both = [n for n in names if "run/d3/" + n in got and "run/d4/" + n in got]
    src_names = {k[len("run/d3/"):] for k in files if k.startswith("run/d3/")}
    intact = all(got.get("run/d3/" + n, got.get("run/d4/" + n)) == files["run/d3/" + n] for n in src_names)
    t.ok(isinstance(err, OSError) and names == src_names and not both and intact,
         "an interrupted rename (%s) leaves every object in exactly one place (in both: %s)" % (err, both),
         "%s\n%s" % (sorted(got), h.log(log)))
    with p.lock:
        p.rules.clear()
    err, got = rename("run/d3", "run/d4")
    t.ok(err is None and moved(got, "run/d3", "run/d4"),
         "running it again finishes it (%s)" % err, "%s\n%s" % (sorted(got), h.log(log)))

    # A crash between copy and delete left an identical copy: it counts as copied.
    def put(rel, data):
        u = "%s/upload/storage/v1/b/bkt/o?uploadType=media&name=%s" % (h.emu_url, urllib.parse.quote("logs/" + rel, safe=""))
        urllib.request.urlopen(urllib.request.Request(u, data=data, method="POST"), timeout=30).read()

    put("run/d6/f1.bin", files["run/d5/f1.bin"])
    put("run/d8/f1.bin", b"someone else's")
    os.listdir(os.path.join(root, "run"))  # the mount sees them after its refresh, or not: both must work
    err, got = rename("run/d5", "run/d6")
    t.ok(err is None and moved(got, "run/d5", "run/d6"),
         "an identical copy already at the destination counts as copied (%s)" % err, h.log(log))
    err, got = rename("run/d7", "run/d8")
    t.ok(isinstance(err, OSError) and err.errno == errno.EEXIST and got.get("run/d8/f1.bin") == b"someone else's"
         and got.get("run/d7/f1.bin") == files["run/d7/f1.bin"],
         "a different file at the destination is not replaced: EEXIST, both kept (%s)" % err, h.log(log))

    # Profiles still cannot be renamed.
    err, got = rename("run/plugins/profile/s1/h.xplane.pb", "run/plugins/profile/s1/x.bin")
    perr = err.errno if err else None
    t.ok(perr == errno.EPERM and got.get("run/plugins/profile/s1/h.xplane.pb") == b"x" * 100,
         "a profile cannot be renamed (%s)" % perr)
    rc = h.umount(mnt)
    t.ok(rc == 0, "clean unmount (%s)" % rc, h.log(log))


if __name__ == "__main__":
    sys.exit(gh.run(main))
