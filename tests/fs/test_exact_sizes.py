#!/usr/bin/python3
"""tests/fs/test_exact_sizes.py - -o exact_sizes: archivers see a view's true size.

A view not rendered yet reports size 0 (its size is unknown until rendered;
docs/fs.md), so tar and rsync, which trust stat, would copy empty files.
With -o exact_sizes, stat renders the view first: `tar -c` of a host's
views through the mount extracts to exactly the bytes xprofs-decode writes,
and a repeated stat is answered from the remembered size (one render per
view, counted in status.json). Without the option, a fresh mount's stat of
an unrendered view is 0 (the documented default). TAP output.
"""
import json
import os
import shutil
import subprocess
import sys

import xmount

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
DECODE = os.path.join(BUILD, "tools", "xprofs-decode")
VIEWS = ["summary.json", "ops.json", "steps.json", "trace.json", "trace.pftrace", "overview.svg"]


def body(t, w):
    sess = w.session()
    prof = os.path.join(sess, "host0.xplane.pb")
    subprocess.check_call([GEN, "--kind", "tpu", "--size", "2M", "-o", prof], stdout=subprocess.DEVNULL)
    m = w.mount(os.path.join(w.path, "src"), "plain")
    hd = os.path.join(m.mnt, "runs", "run", "s1", "host0")
    t.ok(os.stat(os.path.join(hd, "ops.json")).st_size == 0,
         "without exact_sizes: an unrendered view stats as 0 bytes")
    m.close()
    m = w.mount(os.path.join(w.path, "src"), "exact", ",exact_sizes")
    hd = os.path.join(m.mnt, "runs", "run", "s1", "host0")
    out = os.path.join(w.path, "untar")
    os.makedirs(out)
    tar = subprocess.run("tar -cf - -C '%s' %s | tar -xf - -C '%s'" % (hd, " ".join(VIEWS), out),
                         shell=True, capture_output=True)
    t.ok(tar.returncode == 0, "tar through an exact_sizes mount", tar.stderr.decode()[-500:])
    for v in VIEWS:
        want = subprocess.run([DECODE, prof, "--view", v, "--host", "host0"], capture_output=True,
                              check=True).stdout
        got = open(os.path.join(out, v), "rb").read()
        t.ok(got == want and len(got) > 0,
             "tar copied %s whole (%d of %d bytes)" % (v, len(got), len(want)))
    st = json.load(open(os.path.join(m.mnt, "status.json")))
    renders = st["counters"]["renders"]
    for v in VIEWS:
        os.stat(os.path.join(hd, v))
    st = json.load(open(os.path.join(m.mnt, "status.json")))
    t.ok(st["counters"]["renders"] == renders and st["options"]["exact_sizes"] is True,
         "a second stat renders nothing (%d renders)" % renders)


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-exact-", body))
