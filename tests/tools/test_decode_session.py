#!/usr/bin/python3
"""tests/tools/test_decode_session.py - xprofs-decode DIR --session (issue 13).

A generated session of 3 hosts plus a corrupt one: the CLI's session
summary is byte-identical to the mount's runs/<run>/<session>/summary.json
(with or without a trailing slash), lists the corrupt host with its error,
and a directory without --session is refused with exit 1 and one line. TAP.
"""
import json
import os
import subprocess
import sys

import xmount

BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
DECODE = os.path.join(BUILD, "tools", "xprofs-decode")


def body(t, w):
    src = os.path.join(w.path, "src")
    subprocess.check_call([GEN, "--hosts", "3", "--logdir", src, "--run", "r", "--session", "s1",
                           "--size", "300K"], stdout=subprocess.DEVNULL)
    sdir = os.path.join(src, "r", "plugins", "profile", "s1")
    with open(os.path.join(sdir, "broken.xplane.pb"), "wb") as f:
        f.write(b"\x0a\x75junk")
    cli = subprocess.run([DECODE, sdir, "--session"], capture_output=True)
    cli2 = subprocess.run([DECODE, sdir + "/", "--session"], capture_output=True)
    m = w.mount(src)
    mnt = open(os.path.join(m.mnt, "runs", "r", "s1", "summary.json"), "rb").read()
    t.ok(cli.returncode == 0 and cli.stdout == mnt and cli2.stdout == mnt,
         "xprofs-decode DIR --session = the mount's session summary.json (%d bytes)" % len(mnt),
         cli.stderr.decode()[-500:])
    j = json.loads(cli.stdout)
    hosts = {h["host"]: h for h in j["hosts"]}
    t.ok(sorted(hosts) == ["broken", "host0", "host1", "host2"] and hosts["broken"].get("error"),
         "every host listed, the corrupt one with its error")
    d = subprocess.run([DECODE, sdir], capture_output=True)
    t.ok(d.returncode == 1 and len(d.stderr.decode().strip().splitlines()) == 1,
         "a directory without --session: exit %d, one line" % d.returncode)


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-decode-session-", body))
