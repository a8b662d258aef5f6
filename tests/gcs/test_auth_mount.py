#!/usr/bin/python3
"""tests/gcs/test_auth_mount.py - credentials end to end through a real mount.

The emulator sits behind fault_proxy.py --require-bearer, which answers 401
to any request whose "Authorization: Bearer T" was not issued (and still
valid) by token_server.py. Then:
  - `xprofs gs://bkt/logs MNT -o endpoint=PROXY,credentials=SA.json` (a
    service account whose key was generated here with openssl genpkey, with
    tokens living 6 s) mounts, shows a byte-identical logdir, keeps working
    across token refreshes, and no request is ever refused;
  - an authorized_user file through GOOGLE_APPLICATION_CREDENTIALS mounts too;
  - a wrong private key, a revoked refresh token and no credentials at all
    (anonymous against the bearer-only proxy) make the mount fail fast with a
    clear message and a non-zero exit.
TAP output; exit 77 when FUSE, xprofs, the emulator or openssl is absent.
"""
import os
import shutil
import subprocess
import sys
import time

import gcs_harness as gh
from token_server import TokenServer

URL = "gs://bkt/logs"
EMAIL = "xprofs-mount@example-project.iam.gserviceaccount.com"
FAIL_FAST_S = 15


def prereqs():
    gh.require_prereqs()
    if not shutil.which("openssl"):
        raise gh.Skip("openssl CLI not installed")


def main(t, h):
    keys = {}
    for k in ("good", "wrong"):
        keys[k] = os.path.join(h.work, k + ".pem")
        subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                        "-out", keys[k]], check=True, capture_output=True)
    pub = os.path.join(h.work, "pub.pem")
    subprocess.run(["openssl", "pkey", "-in", keys["good"], "-pubout", "-out", pub], check=True,
                   capture_output=True)
    ts = TokenServer(pubkey=pub, email=EMAIL, client_id="cid", client_secret="cs",
                     refresh_token="1//rt", expires_in=6).start()
    h.cleanups.append(ts.stop)

    def sa(name, key):
        with open(key) as f:
            return h.write(name, {"type": "service_account", "client_email": EMAIL, "private_key": f.read(),
                                  "private_key_id": "k", "token_uri": ts.token_url})

    # No ambient credentials leak into the mounts.
    env = h.bare_env()
    src, rels = h.seed_logdir(URL)
    p = h.proxy(require_bearer=ts.url + "/_control/check")

    # 1. service account, with refreshes during the mount's life.
    mnt, proc, log = h.mount(URL, p.url, ["credentials=" + sa("sa.json", keys["good"]), "no_cache",
                                          "refresh=1"], env=env)
    diff = gh.compare_tree(src, os.path.join(mnt, "logdir"), rels)
    t.ok(diff is None, "service_account mount is byte-identical", "%s\n%s" % (diff, h.log(log)))
    time.sleep(4.5)  # past the refresh point of a 6 s token
    # An upload and a re-listing need a fresh token.
    new_rel = "newrun/plugins/profile/s/new.xplane.pb"
    os.makedirs(os.path.join(src, os.path.dirname(new_rel)))
    shutil.copyfile(os.path.join(src, rels[-1]), os.path.join(src, new_rel))
    err = None
    try:
        os.makedirs(os.path.join(mnt, "logdir", os.path.dirname(new_rel)), exist_ok=True)
        shutil.copyfile(os.path.join(src, new_rel), os.path.join(mnt, "logdir", new_rel))
    except OSError as e:
        err = e
    rels = sorted(rels + [new_rel])
    # refresh=1: the re-listing that shows the upload comes within a refresh interval
    end = time.monotonic() + 30
    while True:
        diff = err or gh.compare_tree(src, os.path.join(mnt, "logdir"), rels)
        if diff is None or err or time.monotonic() > end:
            break
        time.sleep(0.1)
    t.ok(diff is None and ts.grants["jwt"] >= 2,
         "upload and re-listing after the token was refreshed (%d JWT grants)" % ts.grants["jwt"],
         "%s\n%s" % (diff, h.log(log)))
    t.ok(p.stats["unauthorized"] == 0 and p.stats["requests"] > 0,
         "every one of %d GCS requests carried a valid issued token" % p.stats["requests"],
         "unauthorized %d\nrejected %s\n%s" % (p.stats["unauthorized"], ts.rejected, h.log(log)))
    t.ok(h.umount(mnt) == 0, "unmount exits 0")

    # 2. authorized_user through GOOGLE_APPLICATION_CREDENTIALS.
    user = h.write("user.json", {"type": "authorized_user", "client_id": "cid", "client_secret": "cs",
                                 "refresh_token": "1//rt", "token_uri": ts.token_url})
    before = p.stats["unauthorized"]
    mnt, proc, log = h.mount(URL, p.url, ["no_cache"], env=dict(env, GOOGLE_APPLICATION_CREDENTIALS=user))
    diff = gh.compare_tree(src, os.path.join(mnt, "logdir"), rels[:3], exact=False)
    t.ok(diff is None and ts.grants["refresh"] >= 1 and p.stats["unauthorized"] == before,
         "authorized_user mount via GOOGLE_APPLICATION_CREDENTIALS", "%s\n%s" % (diff, h.log(log)))
    h.umount(mnt)

    # 3. failures: fast, clear, non-zero.
    revoked = h.write("revoked.json", {"type": "authorized_user", "client_id": "cid", "client_secret": "cs",
                                       "refresh_token": "revoked", "token_uri": ts.token_url})
    for name, opts, e, want in [
        ("wrong private key", ["credentials=" + sa("wrong.json", keys["wrong"])], env, "invalid_grant"),
        ("revoked refresh token", ["credentials=" + revoked], env, "expired or revoked"),
        ("anonymous against a bucket that needs a token", ["anonymous"], env, "Permission denied"),
        ("missing credentials file", ["credentials=" + os.path.join(h.work, "nope.json")], env, "nope.json"),
    ]:
        t0 = time.monotonic()
        mnt, proc, log = h.mount(URL, p.url, opts + ["no_cache"], wait=False, env=e)
        try:
            rc = proc.wait(timeout=FAIL_FAST_S + 30)
        except subprocess.TimeoutExpired:
            rc = None
        dt = time.monotonic() - t0
        text = h.log(log, 50)
        t.ok(rc not in (None, 0) and dt < FAIL_FAST_S and want in text and not os.path.ismount(mnt),
             "%s: mount fails in %.1f s with exit %s and says why" % (name, dt, rc), text)


if __name__ == "__main__":
    sys.exit(gh.run(main, prereqs))
