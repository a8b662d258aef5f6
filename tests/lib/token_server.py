#!/usr/bin/python3
"""tests/lib/token_server.py - a local OAuth2 token endpoint and GCE metadata
server for the credential tests, strict enough to catch real mistakes.

POST /token
    grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT
        The JWT must be RS256 over "header.claims", verified with the public
        key given (RSASSA-PKCS1-v1_5 verified in plain Python; the key's numbers
        are read once with the openssl CLI), with
        claims iss == --email, aud == this endpoint's URL, scope containing
        devstorage, exp - iat == 3600 and iat within 5 minutes of now.
    grant_type=refresh_token&client_id&client_secret&refresh_token
        Must match --client-id / --client-secret / --refresh-token.
    grant_type=urn:ietf:params:oauth:grant-type:token-exchange (STS, RFC 8693,
        what external_account credentials send): audience, subject_token and
        subject_token_type must match the server's (subject_token=,
        audience=, subject_token_type=), requested_token_type must be an
        access token and scope must name cloud-platform.
POST /v1/projects/-/serviceAccounts/EMAIL:generateAccessToken
    IAM's impersonation: "Authorization: Bearer T" with T issued here and
    still valid, a JSON body with a non-empty "scope" list (and optional
    "delegates", recorded); answers {"accessToken", "expireTime"} (RFC 3339).
GET /subject[?format=json]
    The subject token a URL-sourced external_account reads: as text, or as
    {"id_token": TOKEN} (--subject-token).
    Anything else: 400 {"error": "invalid_grant", ...} like Google's.
GET /computeMetadata/v1/instance/service-accounts/default/token
    Requires "Metadata-Flavor: Google" (403 otherwise).
Every token issued is random, lives --expires-in seconds, and is recorded.

Control (for tests and the fault proxy):
    GET  /_control/state            {"issued": [...], "grants": {...}, "rejected": [...]}
    POST /_control/fail?count=K&status=S   the next K token requests answer S
    GET  /_control/check?token=T    200 if T was issued here and has not expired, else 401
                                    (with .check_kind set: and is of that kind)

CLI: token_server.py --pubkey PEM [--email E] [--client-id I --client-secret S
     --refresh-token R] [--expires-in N] [--port 0] [--parent-pid PID]
prints "ready PORT". As a module: TokenServer(...).start() in a thread.
"""
import argparse
import base64
import hashlib
import json
import re
import secrets
import subprocess
import sys
import threading
import time
import urllib.parse

import httpd

JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
STS_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
IMP_PATH = re.compile(r"/v1/projects/-/serviceAccounts/([^/]+):generateAccessToken")
METADATA_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def rsa_public_numbers(pubkey_pem_path):
    """(n, e) of an RSA public key, read once with the openssl CLI."""
    out = subprocess.run(["openssl", "rsa", "-pubin", "-in", pubkey_pem_path, "-noout", "-text"],
                         capture_output=True, check=True, text=True).stdout
    hexdigits, e, in_modulus = [], None, False
    for line in out.splitlines():
        if line.startswith("Modulus:"):
            in_modulus = True
        elif line.startswith("Exponent:"):
            in_modulus = False
            e = int(line.split()[1])
        elif in_modulus:
            hexdigits.append(line.strip().replace(":", ""))
    return int("".join(hexdigits), 16), e


# DER prefix of a PKCS#1 v1.5 DigestInfo for SHA-256 (RFC 8017, section 9.2).
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


def rs256_verify(numbers, signing_input, signature):
    """RSASSA-PKCS1-v1_5 with SHA-256, in plain Python.

    Verification runs in the server's threads while the test process may be
    blocked in a write to the FUSE mount: a fork() there (openssl as a
    subprocess) would duplicate the mount's open file, and the child's close
    would send a flush to the daemon that waits for this very token request.
    """
    n, e = numbers
    k = (n.bit_length() + 7) // 8
    if len(signature) != k:
        return False
    em = pow(int.from_bytes(signature, "big"), e, n).to_bytes(k, "big")
    t = SHA256_DIGEST_INFO + hashlib.sha256(signing_input).digest()
    return em == b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t


class TokenServer(httpd.Served):
    def __init__(self, pubkey=None, email=None, client_id=None, client_secret=None,
                 refresh_token=None, expires_in=3600, port=0, subject_token=None, audience=None,
                 subject_token_type="urn:ietf:params:oauth:token-type:jwt"):
        self.pubkey = pubkey
        self.pubkey_numbers = rsa_public_numbers(pubkey) if pubkey else None
        self.email = email
        self.client_id = client_id
        self.client_secret = client_secret
        self.refresh_token = refresh_token
        self.subject_token = subject_token
        self.audience = audience
        self.subject_token_type = subject_token_type
        self.expires_in = expires_in
        self.lock = threading.Lock()
        self.issued = []      # {"token", "kind", "expires_at"}
        self.grants = {"jwt": 0, "refresh": 0, "metadata": 0, "sts": 0, "subject": 0, "impersonate": 0}
        self.impersonations = []  # {"email", "source_kind", "delegates"}
        self.rejected = []    # reasons
        self.failed = 0       # injected failures served
        self.fail_count = 0
        self.fail_status = 503
        self.delay = 0.0      # seconds to wait before answering a token request
        self.check_kind = None  # /_control/check accepts only tokens of this kind
        self.httpd = httpd.QuietServer(("127.0.0.1", port), self._handler())
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.token_url = self.url + "/token"

    # -- state helpers ------------------------------------------------------
    def issue(self, kind):
        tok = "ya29.test-%s-%s" % (kind, secrets.token_urlsafe(24))
        with self.lock:
            self.issued.append({"token": tok, "kind": kind,
                                "expires_at": time.time() + self.expires_in})
        return tok

    def valid(self, tok):
        now = time.time()
        with self.lock:
            return any(i["token"] == tok and i["expires_at"] > now for i in self.issued)

    def tokens(self, kind=None):
        with self.lock:
            return [i["token"] for i in self.issued if kind is None or i["kind"] == kind]

    def set_fail(self, count, status=503):
        with self.lock:
            self.fail_count = count
            self.fail_status = status

    def _take_fail(self):
        with self.lock:
            if self.fail_count > 0:
                self.fail_count -= 1
                self.failed += 1
                return self.fail_status
        return 0

    def _reject(self, why):
        with self.lock:
            self.rejected.append(why)
        return why

    def check_jwt(self, assertion):
        """None if the assertion is a valid grant, else the reason."""
        parts = assertion.split(".")
        if len(parts) != 3:
            return "assertion is not a JWS compact serialisation"
        try:
            hdr = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            sig = b64url_decode(parts[2])
        except (ValueError, json.JSONDecodeError) as e:
            return "undecodable JWT: %s" % e
        if hdr.get("alg") != "RS256" or hdr.get("typ") != "JWT":
            return "bad JWT header %r" % hdr
        if not self.pubkey_numbers or not rs256_verify(self.pubkey_numbers,
                                                      (parts[0] + "." + parts[1]).encode(), sig):
            return "invalid JWT signature"
        now = time.time()
        if claims.get("iss") != self.email:
            return "iss %r is not %r" % (claims.get("iss"), self.email)
        if claims.get("aud") != self.token_url:
            return "aud %r is not %r" % (claims.get("aud"), self.token_url)
        if "devstorage" not in str(claims.get("scope", "")):
            return "scope %r lacks devstorage" % claims.get("scope")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int) or exp - iat != 3600:
            return "iat/exp %r/%r not a 3600 s window" % (iat, exp)
        if abs(iat - now) > 300:
            return "iat %d is %d s off" % (iat, iat - now)
        return None

    def _handler(self):
        server = self

        class Handler(httpd.Handler):
            _send = httpd.Handler.send_json

            def _token(self, kind):
                if server.delay:
                    time.sleep(server.delay)
                tok = server.issue(kind)
                self._send(200, {"access_token": tok, "expires_in": server.expires_in,
                                 "token_type": "Bearer"})

            def _grant(self, grant, kind, why, said=None):
                """A token of @kind, counted in grants[@grant]; or, with @why,
                an invalid_grant described as @said (else @why), why kept in
                rejected."""
                if why:
                    server._reject(why)
                    return self._send(400, {"error": "invalid_grant", "error_description": said or why})
                with server.lock:
                    server.grants[grant] += 1
                return self._token(kind)

            def _impersonate(self, email, body):
                auth = self.headers.get("Authorization", "")
                tok = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
                with server.lock:
                    src = [i["kind"] for i in server.issued if i["token"] == tok and i["expires_at"] > time.time()]
                try:
                    req = json.loads(body)
                except ValueError:
                    req = None
                if not src or src[0] == "impersonated":
                    server._reject("impersonation without a valid source token")
                    return self._send(401, {"error": {"code": 401, "message": "bad source token"}})
                if not isinstance(req, dict) or not req.get("scope") or not isinstance(req["scope"], list):
                    server._reject("impersonation without scope")
                    return self._send(400, {"error": {"code": 400, "message": "scope required"}})
                with server.lock:
                    server.grants["impersonate"] += 1
                    server.impersonations.append({"email": email, "source_kind": src[0],
                                                  "delegates": req.get("delegates")})
                new = server.issue("impersonated")
                exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + server.expires_in))
                self._send(200, {"accessToken": new, "expireTime": exp})

            def do_GET(self):
                u = urllib.parse.urlsplit(self.path)
                q = urllib.parse.parse_qs(u.query)
                if u.path == "/_control/state":
                    with server.lock:
                        self._send(200, {"issued": list(server.issued), "grants": dict(server.grants),
                                         "rejected": list(server.rejected), "failed": server.failed})
                elif u.path == "/_control/check":
                    tok = q.get("token", [""])[0]
                    ok = server.valid(tok) and (not server.check_kind or tok in server.tokens(server.check_kind))
                    self._send(200 if ok else 401, {"valid": ok})
                elif u.path == "/subject" and server.subject_token:
                    with server.lock:
                        server.grants["subject"] += 1
                    if "format=json" in u.query:
                        self._send(200, {"id_token": server.subject_token})
                    else:
                        data = (server.subject_token + "\n").encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "text/plain")
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                elif u.path == METADATA_PATH:
                    if self.headers.get("Metadata-Flavor") != "Google":
                        server._reject("metadata request without Metadata-Flavor: Google")
                        return self._send(403, {"error": "missing Metadata-Flavor header"})
                    st = server._take_fail()
                    if st:
                        return self._send(st, {"error": "injected"})
                    with server.lock:
                        server.grants["metadata"] += 1
                    self._token("metadata")
                else:
                    self._send(404, {"error": "not_found"})

            def do_POST(self):
                u = urllib.parse.urlsplit(self.path)
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
                if u.path == "/_control/fail":
                    q = urllib.parse.parse_qs(u.query)
                    server.set_fail(int(q.get("count", ["1"])[0]), int(q.get("status", ["503"])[0]))
                    return self._send(200, {})
                m = IMP_PATH.fullmatch(u.path)
                if m:
                    return self._impersonate(urllib.parse.unquote(m.group(1)), body)
                if u.path != "/token":
                    return self._send(404, {"error": "not_found"})
                if self.headers.get("Content-Type", "").split(";")[0] != "application/x-www-form-urlencoded":
                    return self._send(400, {"error": "invalid_request",
                                            "error_description": server._reject("bad content type")})
                st = server._take_fail()
                if st:
                    return self._send(st, {"error": "injected", "error_description": "injected failure"})
                f = {k: v[0] for k, v in urllib.parse.parse_qs(body, keep_blank_values=True).items()}
                grant = f.get("grant_type")
                if grant == JWT_GRANT:
                    return self._grant("jwt", "service_account", server.check_jwt(f.get("assertion", "")))
                if grant == "refresh_token":
                    bad = (f.get("client_id") != server.client_id or f.get("client_secret") != server.client_secret
                           or f.get("refresh_token") != server.refresh_token or not server.refresh_token)
                    return self._grant("refresh", "authorized_user", "bad refresh_token grant" if bad else None,
                                       "Token has been expired or revoked.")
                if grant == STS_GRANT:
                    why = None
                    if not server.subject_token or f.get("subject_token") != server.subject_token:
                        why = "bad subject_token"
                    elif f.get("audience") != server.audience:
                        why = "bad audience %r" % f.get("audience")
                    elif f.get("subject_token_type") != server.subject_token_type:
                        why = "bad subject_token_type %r" % f.get("subject_token_type")
                    elif f.get("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token":
                        why = "bad requested_token_type"
                    elif "cloud-platform" not in f.get("scope", ""):
                        why = "no cloud-platform scope"
                    return self._grant("sts", "external_account", why)
                server._reject("unsupported grant %r" % grant)
                self._send(400, {"error": "unsupported_grant_type"})

        return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pubkey")
    ap.add_argument("--email")
    ap.add_argument("--client-id")
    ap.add_argument("--client-secret")
    ap.add_argument("--refresh-token")
    ap.add_argument("--expires-in", type=int, default=3600)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--parent-pid", type=int, default=0)
    a = ap.parse_args()
    s = TokenServer(a.pubkey, a.email, a.client_id, a.client_secret, a.refresh_token,
                    a.expires_in, a.port).start()
    httpd.announce_and_wait(s.port, a.parent_pid)
    s.stop()


if __name__ == "__main__":
    sys.exit(main())
