#!/usr/bin/python3
"""tests/gcs/test_auth_external.py - external_account credentials (workload
identity federation) end to end through a real mount.

The emulator sits behind fault_proxy.py --require-bearer (401 for any token
token_server.py did not issue); token_server.py also plays STS (RFC 8693
token exchange: audience, subject token and its type checked) and serves a
subject token at /subject. Then:
  - a file-sourced external_account (text subject token) mounts, shows a
    byte-identical logdir, every request carries an issued token, and tokens
    living 6 s are exchanged again while the mount works (refresh);
  - a URL-sourced one with a JSON subject ({"id_token": ...}) mounts too;
  - a wrong subject token, a missing subject file and a bad impersonation
    URL fail the mount with a clear message;
  - service-account impersonation (IAM generateAccessToken, played by
    token_server.py), with the proxy now accepting only impersonated tokens:
    an external_account with service_account_impersonation_url, and an
    impersonated_service_account file over authorized_user credentials
    (with delegates) both mount byte-identical.
TAP output; exit 77 when FUSE, xprofs or the emulator is absent.
"""
import os
import sys
import time
import urllib.parse

import gcs_harness as gh
from token_server import TokenServer

URL = "gs://bkt/logs"
AUDIENCE = "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/p/providers/q"
SUBJECT = "eyJhbGciOiJSUzI1NiJ9.test-subject.sig"
JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt"
SA = "target@example-project.iam.gserviceaccount.com"


def main(t, h):
    ts = TokenServer(subject_token=SUBJECT, audience=AUDIENCE, client_id="cid", client_secret="cs",
                     refresh_token="1//rt", expires_in=6).start()
    h.cleanups.append(ts.stop)

    def ext(name, source, **extra):
        obj = {"type": "external_account", "audience": AUDIENCE, "subject_token_type": JWT_TYPE,
               "token_url": ts.token_url, "credential_source": source}
        obj.update(extra)
        return h.write(name, obj)

    env = h.bare_env()
    src, rels = h.seed_logdir(URL)
    p = h.proxy(require_bearer=ts.url + "/_control/check")

    # 1. file-sourced, text; refreshed while mounted.
    subj = h.write("subject.txt", SUBJECT + "\n")
    mnt, proc, log = h.mount(URL, p.url, ["credentials=" + ext("file.json", {"file": subj}), "no_cache",
                                          "refresh=1"], env=env)
    diff = gh.compare_tree(src, os.path.join(mnt, "logdir"), rels)
    t.ok(diff is None and ts.grants["sts"] >= 1, "file-sourced external_account mount is byte-identical",
         "%s\n%s\nrejected %s" % (diff, h.log(log), ts.rejected))
    end = time.monotonic() + 60
    while ts.grants["sts"] < 2 and time.monotonic() < end:
        os.listdir(os.path.join(mnt, "logdir"))  # relistings need tokens
        time.sleep(0.2)
    diff = gh.compare_tree(src, os.path.join(mnt, "logdir"), rels)
    t.ok(ts.grants["sts"] >= 2 and diff is None,
         "the token is exchanged again before it expires (%d exchanges)" % ts.grants["sts"], h.log(log))
    t.ok(p.stats["unauthorized"] == 0 and p.stats["requests"] > 0,
         "every one of %d GCS requests carried an issued token" % p.stats["requests"],
         "rejected %s\n%s" % (ts.rejected, h.log(log)))
    with open(os.path.join(mnt, "status.json")) as f:
        status = f.read()
    t.ok('"external_account"' in status, "status.json names the credential kind")
    h.umount(mnt)

    # 2. URL-sourced, JSON.
    before = ts.grants["subject"]
    cred = ext("url.json", {"url": ts.url + "/subject?format=json",
                            "format": {"type": "json", "subject_token_field_name": "id_token"}})
    mnt, proc, log = h.mount(URL, p.url, ["credentials=" + cred, "no_cache"], env=env)
    diff = gh.compare_tree(src, os.path.join(mnt, "logdir"), rels)
    t.ok(diff is None and ts.grants["subject"] > before,
         "URL-sourced (JSON) external_account mount is byte-identical", "%s\n%s" % (diff, h.log(log)))
    h.umount(mnt)

    # 3. failures at mount time.
    def fails(name, cred, words):
        _, proc, log = h.mount(URL, p.url, ["credentials=" + cred], wait=False, env=env)
        try:
            rc = proc.wait(timeout=60)
        except Exception:
            rc = None
        text = h.log(log)
        t.ok(rc not in (None, 0) and all(w in text for w in words),
             "%s: the mount fails (rc %s) saying so" % (name, rc), text)

    fails("a wrong subject token", ext("wrong.json", {"file": h.write("wrong.txt", "not-it")}),
          ["external_account", "HTTP 400"])
    fails("a missing subject file", ext("missing.json", {"file": os.path.join(h.work, "nope.txt")}),
          ["subject token"])
    fails("an impersonation URL that is not http(s)", ext("imp.json", {"file": subj},
                                                          service_account_impersonation_url="file:///x"),
          ["service_account_impersonation_url"])

    # 4. impersonation: only the impersonated account's tokens are let through now.
    ts.check_kind = "impersonated"
    imp_url = ts.url + "/v1/projects/-/serviceAccounts/%s:generateAccessToken" % urllib.parse.quote(SA)
    cases = [
        ("external_account with service_account_impersonation_url",
         ext("ext-imp.json", {"file": subj}, service_account_impersonation_url=imp_url), "external_account"),
        ("impersonated_service_account from authorized_user",
         h.write("imp-user.json", {"type": "impersonated_service_account", "service_account_impersonation_url": imp_url,
                                   "delegates": ["projects/-/serviceAccounts/d@x.iam.gserviceaccount.com"],
                                   "source_credentials": {"type": "authorized_user", "client_id": "cid",
                                                          "client_secret": "cs", "refresh_token": "1//rt",
                                                          "token_uri": ts.token_url}}), "authorized_user"),
    ]
    for name, cred, kind in cases:
        n0 = len(ts.impersonations)
        mnt, proc, log = h.mount(URL, p.url, ["credentials=" + cred, "no_cache"], env=env)
        diff = gh.compare_tree(src, os.path.join(mnt, "logdir"), rels)
        imps = ts.impersonations[n0:]
        t.ok(diff is None and imps and all(i["source_kind"] == kind and i["email"] == SA for i in imps),
             "%s: byte-identical with only impersonated tokens (%s)" % (name, imps[:1]),
             "%s\nrejected %s\n%s" % (diff, ts.rejected, h.log(log)))
        h.umount(mnt)
    t.ok(ts.impersonations[-1]["delegates"] == ["projects/-/serviceAccounts/d@x.iam.gserviceaccount.com"],
         "delegates are passed on")
    ts.check_kind = None


if __name__ == "__main__":
    sys.exit(gh.run(main))
