#!/usr/bin/python3
"""tests/gcs/test_auth_flows.py - gcs/auth.c's token flows over real HTTP.

Runs tests/gcs/auth_probe (which resolves credentials exactly as a mount does
and prints the Authorization headers it gets) against token_server.py:
service-account JWT grants verified with the public half of a key generated
here with `openssl genpkey`, the refresh-token flow, the metadata server,
the gcloud well-known file, short-lived tokens refreshed on time, one
refresh for many concurrent callers, a failed refresh that keeps a
still-valid token, fail-fast errors for wrong or missing credentials, and
that no token appears in debug logs.

usage: test_auth_flows.py PATH/TO/auth-probe     (TAP output)
"""
import errno
import json
import os
import subprocess
import sys
import tempfile
import time

import xtap
from token_server import TokenServer

PROBE = sys.argv[1] if len(sys.argv) > 1 else None
EMAIL = "xprofs-test@example-project.iam.gserviceaccount.com"
T = xtap.Tap()


def tap_run(name, fn):
    try:
        fn()
        T.ok(True, name)
    except AssertionError as e:
        T.ok(False, name, str(e))
    except Exception as e:  # a broken test is a failed test
        T.ok(False, name, "%s: %s" % (type(e).__name__, e))


def read_line(p):
    """One line of @p's stdout, read a byte at a time (unbuffered): a buffered
    readline() may read ahead lines that communicate() then never returns,
    which happened when the probe was quicker than this test."""
    b = bytearray()
    while not b.endswith(b"\n"):
        c = p.stdout.read(1)
        if not c:
            break
        b += c
    return b.decode()


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


class Env:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="xprofs-auth-flows-")
        self.key = os.path.join(self.dir, "key.pem")
        self.pub = os.path.join(self.dir, "pub.pem")
        self.wrong_key = os.path.join(self.dir, "wrong.pem")
        for k in (self.key, self.wrong_key):
            subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                            "-out", k], check=True, capture_output=True)
        subprocess.run(["openssl", "pkey", "-in", self.key, "-pubout", "-out", self.pub], check=True,
                       capture_output=True)
        self.empty = os.path.join(self.dir, "empty")
        os.mkdir(self.empty)

    def write(self, name, obj):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            json.dump(obj, f)
        return p

    def sa_file(self, ts, key=None, name="sa.json"):
        with open(key or self.key) as f:
            pem = f.read()
        return self.write(name, {"type": "service_account", "project_id": "p", "private_key_id": "k1",
                                 "private_key": pem, "client_email": EMAIL, "client_id": "1",
                                 "token_uri": ts.token_url})

    def user_file(self, ts, refresh="1//refresh-xyz", name="user.json"):
        return self.write(name, {"type": "authorized_user", "client_id": "cid.apps.example",
                                 "client_secret": "csecret", "refresh_token": refresh,
                                 "token_uri": ts.token_url})

    def base_env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if k not in ("GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST",
                            "CLOUD_STORAGE_EMULATOR_ENDPOINT", "GCE_METADATA_HOST", "GCE_METADATA_ROOT")}
        env["CLOUDSDK_CONFIG"] = self.empty
        env["HOME"] = self.empty
        # Refused at once: a fall-through to the metadata server would fail loudly.
        env["GCE_METADATA_HOST"] = "127.0.0.1:1"
        env.update(extra)
        return env


def probe(args, env, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run([PROBE] + args, env=env, capture_output=True, text=True, timeout=timeout)
    lines = p.stdout.splitlines()
    headers = [ln[len("header "):] for ln in lines if ln.startswith("header ")]
    kind = next((ln.split()[1] for ln in lines if ln.startswith("kind ")), None)
    return p.returncode, kind, headers, p.stdout + p.stderr, time.monotonic() - t0


def bearer(h):
    check(h.startswith("Authorization: Bearer "), "not a bearer header: %r" % h)
    return h[len("Authorization: Bearer "):]


def main():
    if not PROBE or not os.access(PROBE, os.X_OK):
        return xtap.skip_all("auth-probe not built")
    if subprocess.run(["which", "openssl"], capture_output=True).returncode != 0:
        return xtap.skip_all("openssl CLI not installed")
    E = Env()

    def service_account_refresh():
        ts = TokenServer(pubkey=E.pub, email=EMAIL, expires_in=4).start()
        try:
            # Lifetime 4 s -> refreshed once 2 s remain: calls at 0, 2.5, 5 s.
            rc, kind, hdrs, out, _ = probe(["-c", E.sa_file(ts), "-n", "3", "-s", "2500"], E.base_env())
            check(rc == 0, "probe failed rc=%d: %s" % (rc, out))
            check(kind == "service_account", "kind %r" % kind)
            toks = [bearer(h) for h in hdrs]
            check(len(toks) == 3, "headers: %r" % hdrs)
            issued = ts.tokens("service_account")
            check(all(t in issued for t in toks), "a header carries a token the server never issued")
            check(toks[0] != toks[1] != toks[2], "short-lived token not refreshed: %r" % toks)
            check(ts.grants["jwt"] == 3, "jwt grants %d, want 3 (%r)" % (ts.grants["jwt"], ts.rejected))
            check(not ts.rejected, "server rejected: %r" % ts.rejected)
        finally:
            ts.stop()

    def service_account_long_lived_cached():
        ts = TokenServer(pubkey=E.pub, email=EMAIL, expires_in=3600).start()
        try:
            rc, _, hdrs, out, _ = probe(["-c", E.sa_file(ts), "-n", "5", "-t", "4"], E.base_env())
            check(rc == 0, out)
            check(len(set(hdrs)) == 1 and len(hdrs) == 20, "token not reused: %d distinct" % len(set(hdrs)))
            check(ts.grants["jwt"] == 1, "jwt grants %d, want 1" % ts.grants["jwt"])
        finally:
            ts.stop()

    def concurrent_callers_one_refresh():
        ts = TokenServer(pubkey=E.pub, email=EMAIL, expires_in=4).start()
        try:
            # At 2.5 s a refresh is due but the token still valid: 16 threads,
            # one refresh; the others may use the old token meanwhile.
            rc, _, hdrs, out, _ = probe(["-c", E.sa_file(ts), "-n", "2", "-s", "2500", "-t", "16"],
                                        E.base_env())
            check(rc == 0, out)
            check(ts.grants["jwt"] == 2, "jwt grants %d, want 2" % ts.grants["jwt"])
            check(set(hdrs[16:]) <= set(hdrs[:1]) | set("Authorization: Bearer " + t for t in ts.tokens()),
                  "unknown token")
            check(len(set(hdrs[16:])) <= 2, "second round used %d tokens" % len(set(hdrs[16:])))
            # At 4.5 s the token has expired: all 16 wait for one refresh.
            rc, _, hdrs, out, _ = probe(["-c", E.sa_file(ts), "-n", "2", "-s", "4500", "-t", "16"],
                                        E.base_env())
            check(rc == 0, out)
            check(ts.grants["jwt"] == 4, "jwt grants %d, want 4" % ts.grants["jwt"])
            check(len(set(hdrs[16:])) == 1 and hdrs[16] != hdrs[0],
                  "after expiry the second round used %d tokens" % len(set(hdrs[16:])))
        finally:
            ts.stop()

    def slow_refresh_does_not_block():
        ts = TokenServer(pubkey=E.pub, email=EMAIL, expires_in=8).start()
        try:
            # Refresh due at 4 s; the endpoint then takes 2 s per answer.
            # Callers at 4.5 s (16 threads) must not wait for it.
            p = subprocess.Popen([PROBE, "-c", E.sa_file(ts), "-n", "2", "-s", "4500", "-t", "16"],
                                 env=E.base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
            first = read_line(p)  # "kind ..."
            check(first.startswith("kind "), first)
            ts.delay = 2.0
            t0 = time.monotonic()
            out, err = (x.decode() for x in p.communicate(timeout=60))
            dt = time.monotonic() - t0
            hdrs = [ln for ln in out.splitlines() if ln.startswith("header ")]
            check(p.returncode == 0 and len(hdrs) == 32, "rc %d: %s %s" % (p.returncode, out, err))
            # 16 headers at once; only the refresher waited ~2 s.
            check(ts.grants["jwt"] == 2, "grants %r" % ts.grants)
            check(dt < 4.5 + 2.0 + 4.0, "took %.1f s" % dt)
            check(len(set(hdrs[16:])) == 2, "expected old + new token, got %d" % len(set(hdrs[16:])))
        finally:
            ts.stop()

    def wrong_key_fails_fast():
        ts = TokenServer(pubkey=E.pub, email=EMAIL).start()
        try:
            rc, kind, _, out, dt = probe(["-c", E.sa_file(ts, key=E.wrong_key, name="wrong.json")],
                                         E.base_env())
            check(rc == errno.EACCES, "rc %d, want EACCES: %s" % (rc, out))
            check("invalid_grant" in out and "invalid JWT signature" in out, "no clear message: %s" % out)
            check(dt < 10, "took %.1f s" % dt)
            check(ts.grants["jwt"] == 0, "a bad signature was accepted")
        finally:
            ts.stop()

    def authorized_user_flow():
        ts = TokenServer(client_id="cid.apps.example", client_secret="csecret",
                         refresh_token="1//refresh-xyz", expires_in=3600).start()
        try:
            # Through GOOGLE_APPLICATION_CREDENTIALS this time.
            rc, kind, hdrs, out, _ = probe([], E.base_env(GOOGLE_APPLICATION_CREDENTIALS=E.user_file(ts)))
            check(rc == 0, out)
            check(kind == "authorized_user", "kind %r" % kind)
            check(bearer(hdrs[0]) in ts.tokens("authorized_user"), "token not issued by the server")
            # A revoked refresh token: EACCES at once, no fall-through.
            rc, _, _, out, dt = probe(["-c", E.user_file(ts, refresh="revoked", name="revoked.json")],
                                      E.base_env())
            check(rc == errno.EACCES, "rc %d: %s" % (rc, out))
            check("expired or revoked" in out, "no clear message: %s" % out)
        finally:
            ts.stop()

    def gcloud_well_known_file():
        ts = TokenServer(client_id="cid.apps.example", client_secret="csecret",
                         refresh_token="1//refresh-xyz").start()
        try:
            d = tempfile.mkdtemp(dir=E.dir)
            os.rename(E.user_file(ts, name="adc.json"), os.path.join(d, "application_default_credentials.json"))
            rc, kind, hdrs, out, _ = probe([], E.base_env(CLOUDSDK_CONFIG=d))
            check(rc == 0 and kind == "authorized_user", "rc %d kind %r: %s" % (rc, kind, out))
            check(ts.grants["refresh"] == 1, "grants %r" % ts.grants)
        finally:
            ts.stop()

    def metadata_server_flow():
        ts = TokenServer(expires_in=3600).start()
        try:
            rc, kind, hdrs, out, _ = probe([], E.base_env(GCE_METADATA_HOST="127.0.0.1:%d" % ts.port))
            check(rc == 0, out)
            check(kind == "metadata", "kind %r" % kind)
            check(bearer(hdrs[0]) in ts.tokens("metadata"), "token not from the metadata server")
            check(not ts.rejected, "rejected: %r" % ts.rejected)
        finally:
            ts.stop()

    def no_credentials_fails_fast():
        rc, _, _, out, dt = probe([], E.base_env())
        check(rc == errno.ECONNREFUSED, "rc %d: %s" % (rc, out))
        check("metadata server" in out and "-o anonymous" in out, "unclear message: %s" % out)
        check(dt < 5, "took %.1f s" % dt)

    def failed_refresh_keeps_valid_token():
        ts = TokenServer(pubkey=E.pub, email=EMAIL, expires_in=6).start()
        try:
            # Calls at 0, 3.5 (refresh due, fails -> old token), 7 s (expired,
            # refresh backing off -> the refresh's error).
            p = subprocess.Popen([PROBE, "-c", E.sa_file(ts), "-n", "3", "-s", "3500"], env=E.base_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
            first = [read_line(p), read_line(p)]
            ts.set_fail(1000, 503)
            rest, err = (x.decode() for x in p.communicate(timeout=60))
            lines = first + rest.splitlines()
            hdrs = [ln.split(" ", 1)[1].strip() for ln in lines if ln.startswith("header ")]
            check(len(hdrs) == 2 and hdrs[0] == hdrs[1], "old token not kept: %r" % lines)
            check(any(ln.startswith("error ") for ln in lines), "expired token still used: %r" % lines)
            # The error is the refresh's own: 503s until the retries ran out.
            check(p.returncode == errno.EIO, "rc %d" % p.returncode)
            check(ts.failed >= 1, "no refresh was attempted")
            check("keeping the current token" in err, "no warning logged: %s" % err)
        finally:
            ts.stop()

    def tokens_never_logged():
        ts = TokenServer(pubkey=E.pub, email=EMAIL, expires_in=4).start()
        try:
            p = subprocess.run([PROBE, "-v", "-c", E.sa_file(ts), "-n", "2", "-s", "2500"], env=E.base_env(),
                               capture_output=True, text=True, timeout=60)
            check(p.returncode == 0, p.stderr)
            check("new service_account token" in p.stderr, "debug log missing: %s" % p.stderr)
            for t in ts.tokens():
                check(t not in p.stderr, "a token appears in the log")
            with open(E.key) as f:
                body = f.read().splitlines()[1]
            check(body not in p.stderr, "the private key appears in the log")
        finally:
            ts.stop()

    def anonymous_and_emulator():
        rc, kind, hdrs, out, _ = probe(["-a", "-c", "/nonexistent.json"], E.base_env())
        check(rc == 0 and kind == "anonymous" and hdrs == [""], "%d %r %r" % (rc, kind, hdrs))
        rc, kind, _, out, _ = probe([], E.base_env(STORAGE_EMULATOR_HOST="127.0.0.1:9"))
        check(rc == 0 and kind == "anonymous", out)

    for name, fn in [
        ("service_account JWT verified, short-lived token refreshed", service_account_refresh),
        ("long-lived token cached across calls and threads", service_account_long_lived_cached),
        ("16 concurrent callers share one refresh", concurrent_callers_one_refresh),
        ("a slow refresh does not block callers holding a valid token", slow_refresh_does_not_block),
        ("wrong private key fails fast with EACCES", wrong_key_fails_fast),
        ("authorized_user refresh-token flow, revoked token", authorized_user_flow),
        ("gcloud application_default_credentials.json", gcloud_well_known_file),
        ("metadata server flow (GCE_METADATA_HOST)", metadata_server_flow),
        ("no credentials: fails fast naming the metadata server", no_credentials_fails_fast),
        ("failed refresh keeps a still-valid token, then expires", failed_refresh_keeps_valid_token),
        ("tokens and keys never logged at debug level", tokens_never_logged),
        ("anonymous and emulator need no credentials", anonymous_and_emulator),
    ]:
        tap_run(name, fn)
    subprocess.run(["rm", "-rf", E.dir])
    return T.done()


if __name__ == "__main__":
    sys.exit(main())
