#!/usr/bin/python3
"""tests/lib/fault_proxy.py - a threaded HTTP/1.1 proxy in front of the GCS
emulator that injects faults, counts requests and can demand OAuth tokens.

    fault_proxy.py --upstream http://127.0.0.1:EMUPORT [--port 0]
                   [--fault SPEC]... [--require-bearer CHECK_URL]
                   [--parent-pid PID]
prints "ready PORT" once listening.

A fault SPEC is "KIND[,nth=N][,count=K][,fraction=F][,match=REGEX][,range=REGEX][,cut=B]
[,stall=S][,seed=N]":
  KIND      503, 429 or any HTTP status (answered with a GCS JSON error),
            reset     (close the connection with a TCP RST, no answer),
            stall     (read the request, then send nothing for S s, default 300),
            stall_body (send headers and half the body, then nothing for S s),
            truncate  (send headers with the full Content-Length, half the
                       body, then reset),
            close_body (the same, then a clean close (FIN) instead of a reset),
            reset_body (read half the request body, then reset: an upload cut
                       in the middle; nothing is forwarded),
            reset_after (forward the request - the upstream acts on it - then
                       reset instead of answering: a lost answer),
            garble    (forward; a 2xx answer's body is replaced by as many
                       bytes that are not JSON),
            partial200 (forward; a 206 answer is sent as a 200 with the same
                       partial body and no Content-Range),
            range200  (forward; a 206 answer is sent as a 200 with the same
                       partial body and its Content-Range, as storage-testbench
                       does for its broken-stream faults),
            whole200  (forward without the Range header: the whole object
                       answered 200, as by a server that ignores Range).
  match     regex searched in "METHOD /path?query" (default: every request).
  range     regex searched in the request's Range header ("" when it has none).
  cut       truncate, close_body, stall_body: stop after B body bytes instead
            of half.
  nth=N     fire on the N-th matching request (1-based) and the count-1 next
            ones (count defaults to 1).
  fraction  fire on each matching request with probability F (seeded RNG),
            at most count times (default unlimited).
  neither   fire on every matching request, at most count times (default
            unlimited) - a permanent failure.
--require-bearer CHECK_URL: every request needs "Authorization: Bearer T"
with CHECK_URL?token=T answering 200 (token_server.py's /_control/check);
otherwise 401.

Control API (never forwarded):
  POST   /_proxy/faults      body: a SPEC string or JSON {"kind":..., ...}; adds a rule
  DELETE /_proxy/faults      removes every rule
  GET    /_proxy/stats       {"requests", "by_class": {list, media, upload, meta, other},
                              "faults": {kind: n}, "unauthorized", "bytes_out"}
  GET    /_proxy/log         the last 2000 requests: [t, method, path, Range, fault]
  POST   /_proxy/reset-stats
"""
import argparse
import collections
import http.client
import json
import random
import re
import select
import socket
import struct
import sys
import threading
import time
import urllib.parse
import urllib.request

import httpd

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
              "trailer", "upgrade"}
CHUNK = 256 * 1024


class Rule:
    def __init__(self, kind, nth=None, count=None, fraction=None, match=None, stall=300.0, seed=1,
                 range=None, cut=None):
        self.kind = str(kind)
        if not (self.kind in ("reset", "stall", "stall_body", "truncate", "close_body", "reset_body",
                              "reset_after", "garble", "partial200", "range200", "whole200") or re.fullmatch(r"[1-5]\d\d", self.kind)):
            raise ValueError("unknown fault kind %r" % kind)
        self.nth = int(nth) if nth is not None else None
        self.fraction = float(fraction) if fraction is not None else None
        if count is not None:
            self.count = int(count)
        else:
            self.count = 1 if self.nth is not None else -1  # -1: unlimited
        self.match = re.compile(match) if match else None
        self.range = re.compile(range) if range else None
        self.cut = int(cut) if cut is not None else None
        self.stall = float(stall)
        self.rng = random.Random(int(seed))
        self.seen = 0
        self.fired = 0

    @classmethod
    def parse(cls, spec):
        if isinstance(spec, dict):
            return cls(**spec)
        parts = spec.split(",")
        kw = {}
        for p in parts[1:]:
            k, _, v = p.partition("=")
            kw[k.strip()] = v
        return cls(parts[0].strip(), **kw)

    def decide(self, line, range_header=""):
        """Called under the proxy lock for each request: fire or not."""
        if self.match and not self.match.search(line):
            return False
        if self.range and not self.range.search(range_header or ""):
            return False
        self.seen += 1
        if self.count >= 0 and self.fired >= self.count:
            return False
        if self.nth is not None and self.seen < self.nth:
            return False
        if self.fraction is not None and self.rng.random() >= self.fraction:
            return False
        self.fired += 1
        return True


class FaultProxy(httpd.Served):
    def __init__(self, upstream, port=0, faults=(), require_bearer=None):
        u = urllib.parse.urlsplit(upstream)
        self.up_host, self.up_port = u.hostname, u.port or 80
        self.require_bearer = require_bearer
        self.lock = threading.Lock()
        self.rules = [Rule.parse(f) for f in faults]
        self.log = collections.deque(maxlen=2000)
        self.reset_stats()
        self.local = threading.local()
        self.httpd = httpd.QuietServer(("127.0.0.1", port), self._handler())
        self.httpd.request_queue_size = 128
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port

    def reset_stats(self):
        with self.lock:
            self.stats = {"requests": 0, "by_class": {"list": 0, "media": 0, "upload": 0, "meta": 0, "other": 0},
                          "faults": {}, "unauthorized": 0, "bytes_out": 0}

    @staticmethod
    def classify(method, path, query):
        if path.startswith("/upload/"):
            return "upload"
        if path.startswith("/download/") or "alt=media" in query:
            return "media"
        if re.fullmatch(r"/(storage/v1/)?b/[^/]+/o/?", path):
            return "list" if method == "GET" else "other"
        if re.fullmatch(r"/(storage/v1/)?b/[^/]+/o/.+", path):
            return "meta"
        return "other"

    def pick_fault(self, line, cls, range_header=""):
        with self.lock:
            self.stats["requests"] += 1
            self.stats["by_class"][cls] += 1
            for r in self.rules:
                if r.decide(line, range_header):
                    self.stats["faults"][r.kind] = self.stats["faults"].get(r.kind, 0) + 1
                    return r
        return None

    def token_ok(self, auth):
        if not auth or not auth.startswith("Bearer "):
            return False
        q = urllib.parse.urlencode({"token": auth[len("Bearer "):]})
        try:
            with urllib.request.urlopen("%s?%s" % (self.require_bearer, q), timeout=5) as r:
                return r.status == 200
        except Exception:
            return False

    def upstream(self, fresh=False):
        c = getattr(self.local, "conn", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            c = http.client.HTTPConnection(self.up_host, self.up_port, timeout=600)
            self.local.conn = c
        return c

    def _handler(self):
        proxy = self

        class Handler(httpd.Handler):
            json_type = "application/json; charset=UTF-8"
            _json = httpd.Handler.send_json

            def _read_body(self):
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    out = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return bytes(out)
                        out += self.rfile.read(size)
                        self.rfile.readline()
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _reset(self):
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                except OSError:
                    pass
                self.close_connection = True

            def _stall(self, seconds):
                """Send nothing until @seconds pass or the client hangs up."""
                end = time.monotonic() + seconds
                while True:
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    r, _, _ = select.select([self.connection], [], [], min(left, 1.0))
                    if r:
                        try:
                            if not self.connection.recv(65536, socket.MSG_PEEK):
                                break  # client closed
                        except OSError:
                            break
                        time.sleep(0.05)
                self._reset()

            def _control(self, u, body):
                if u.path == "/_proxy/stats" and self.command == "GET":
                    with proxy.lock:
                        return self._json(200, proxy.stats)
                if u.path == "/_proxy/log" and self.command == "GET":
                    with proxy.lock:
                        return self._json(200, list(proxy.log))
                if u.path == "/_proxy/reset-stats" and self.command == "POST":
                    proxy.reset_stats()
                    return self._json(200, {})
                if u.path == "/_proxy/faults" and self.command == "POST":
                    text = body.decode().strip()
                    try:
                        rule = Rule.parse(json.loads(text) if text.startswith("{") else text)
                    except (ValueError, TypeError) as e:
                        return self._json(400, {"error": str(e)})
                    with proxy.lock:
                        proxy.rules.append(rule)
                    return self._json(200, {"rules": len(proxy.rules)})
                if u.path == "/_proxy/faults" and self.command == "DELETE":
                    with proxy.lock:
                        proxy.rules = []
                    return self._json(200, {})
                return self._json(404, {"error": "unknown control path"})

            def _proxy(self):
                u = urllib.parse.urlsplit(self.path)
                if u.path.startswith("/_proxy/"):
                    return self._control(u, self._read_body())
                cls = proxy.classify(self.command, u.path, u.query)
                if proxy.require_bearer and not proxy.token_ok(self.headers.get("Authorization")):
                    self._read_body()
                    with proxy.lock:
                        proxy.stats["unauthorized"] += 1
                    return self._json(401, {"error": {"code": 401, "message": "Invalid Credentials",
                                                      "errors": [{"reason": "authError"}]}},
                                      [("WWW-Authenticate", 'Bearer realm="https://accounts.google.com/"')])
                rule = proxy.pick_fault("%s %s" % (self.command, self.path), cls, self.headers.get("Range"))
                with proxy.lock:
                    proxy.log.append([round(time.time(), 3), self.command, self.path,
                                      self.headers.get("Range"), rule.kind if rule else None])
                if rule and rule.kind == "reset_body":
                    n = int(self.headers.get("Content-Length") or 0)
                    self.rfile.read(n // 2)
                    return self._reset()
                body = self._read_body()
                if rule and re.fullmatch(r"\d\d\d", rule.kind):
                    code = int(rule.kind)
                    return self._json(code, {"error": {"code": code, "message": "injected fault",
                                                       "errors": [{"reason": "backendError"}]}})
                if rule and rule.kind == "reset":
                    return self._reset()
                if rule and rule.kind == "stall":
                    return self._stall(rule.stall)
                drop_in = HOP_BY_HOP | ({"range"} if rule and rule.kind == "whole200" else set())
                headers = {k: v for k, v in self.headers.items() if k.lower() not in drop_in}
                headers["Content-Length"] = str(len(body))
                for attempt in (0, 1):
                    try:
                        c = proxy.upstream(fresh=attempt > 0)
                        c.request(self.command, self.path, body=body, headers=headers)
                        resp = c.getresponse()
                        break
                    except (OSError, http.client.HTTPException):
                        if attempt:
                            return self._json(502, {"error": {"code": 502, "message": "upstream down"}})
                if rule and rule.kind == "reset_after":
                    resp.read()
                    return self._reset()
                length = resp.getheader("Content-Length")
                data = None
                status, reason, drop = resp.status, resp.reason, ("content-length",)
                if length is None or (rule and rule.kind in ("garble", "partial200")):
                    data = resp.read()
                    length = str(len(data))
                if rule and rule.kind == "garble" and 200 <= status < 300:
                    data = b"\x00garbled" * (len(data) // 8) + b"\x00" * (len(data) % 8)
                if rule and rule.kind == "partial200" and status == 206:
                    status, reason, drop = 200, "OK", ("content-length", "content-range")
                if rule and rule.kind == "range200" and status == 206:
                    status, reason = 200, "OK"
                total = int(length)
                self.send_response(status, reason)
                for k, v in resp.getheaders():
                    if k.lower() not in HOP_BY_HOP and k.lower() not in drop:
                        self.send_header(k, v)
                self.send_header("Content-Length", length)
                self.end_headers()
                if self.command == "HEAD" or total == 0:
                    resp.read()
                    return
                cut = total
                if rule and rule.kind in ("truncate", "stall_body", "close_body"):
                    cut = min(total, rule.cut) if rule.cut is not None else total // 2
                sent = 0
                try:
                    while sent < total:
                        chunk = data[sent:sent + CHUNK] if data is not None else resp.read(min(CHUNK, total - sent))
                        if not chunk:
                            break
                        if sent + len(chunk) > cut:
                            chunk = chunk[:cut - sent]
                        if chunk:
                            self.wfile.write(chunk)
                            sent += len(chunk)
                        if sent >= cut:
                            break
                    self.wfile.flush()
                except OSError:
                    proxy.upstream(fresh=True)  # the upstream body was not drained
                    self.close_connection = True
                    return
                finally:
                    with proxy.lock:
                        proxy.stats["bytes_out"] += sent
                if sent < total:
                    proxy.upstream(fresh=True)
                    if rule and rule.kind == "stall_body":
                        return self._stall(rule.stall)
                    if rule and rule.kind == "close_body":
                        self.close_connection = True  # the server closes after a short body
                        return
                    return self._reset()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _proxy

        return Handler


def main():
    ap = argparse.ArgumentParser(description="fault-injecting proxy for the GCS emulator")
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--fault", action="append", default=[])
    ap.add_argument("--require-bearer")
    ap.add_argument("--parent-pid", type=int, default=0)
    a = ap.parse_args()
    p = FaultProxy(a.upstream, a.port, a.fault, a.require_bearer).start()
    httpd.announce_and_wait(p.port, a.parent_pid)
    p.stop()


if __name__ == "__main__":
    sys.exit(main())
