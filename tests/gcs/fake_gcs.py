#!/usr/bin/python3
"""tests/gcs/fake_gcs.py - a tiny JSON-API server that misbehaves on purpose,
for the GCS client's fault tests (store-probe --faults). The real emulator is
too well-behaved to show these paths.

  /usr/bin/python3 fake_gcs.py     # prints "ready PORT", serves until killed

Buckets: "no-such-bucket" answers 404, "forbidden-bucket" 403; any other
bucket lists 1000 objects "many/NNNN" plus full200.bin, flaky.bin, broken.bin
and an unusable name, 400 items a page, and the first listing request of the
process answers 503. Media reads of the three .bin objects (3000000 bytes,
byte i = (i*7+3) & 0xff):
  full200.bin  ignores Range and answers 200 with the whole body (as the
               firebase emulator does for some ranges);
  flaky.bin    cycles 503 / a body cut short (connection closed) / a correct 206;
  broken.bin   always 503.
Resumable uploads (POST /upload/storage/v1/b/B/o?uploadType=resumable) get a
session on this server, except names containing "evil", whose session URI
points at another host. For names containing "flaky" the second chunk is
half stored and answered 503, so the client must ask the session what it
has ("bytes */N") and resume. Uploaded objects (generation 99) can be read
back with alt=media.
"""
import re
import sys
import threading
import urllib.parse

import httpd  # tests/lib, through PYTHONPATH

SIZE = 3000000
DATA = bytes((i * 7 + 3) & 0xFF for i in range(SIZE))
GZ = __import__("gzip").compress(b"decompress me and the sizes no longer match\n" * 1000, mtime=0)
NAMES = ["many/%04d" % i for i in range(1000)] + ["full200.bin", "flaky.bin", "broken.bin", "weird//x", "gz.bin"]
NAMES.sort()
PAGE = 400
lock = threading.Lock()
state = {"lists": 0, "flaky": 0}
sessions = {}
uploads = {}


class Handler(httpd.Handler):
    def error(self, code, msg):
        self.send_json(code, {"error": {"code": code, "message": msg}})

    def send_range(self, data, generation, encoding=None):
        """Answer 206 with the bytes of @data that the Range header asks for."""
        rng = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        a, b = int(rng.group(1)), min(int(rng.group(2)), len(data) - 1)
        self.send_response(206)
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, len(data)))
        self.send_header("Content-Length", str(b - a + 1))
        self.send_header("x-goog-generation", generation)
        self.end_headers()
        self.wfile.write(data[a:b + 1])

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        m = re.fullmatch(r"/storage/v1/b/([^/]+)/o(?:/([^/]+))?", u.path)
        if not m:
            return self.error(404, "no route")
        bucket = urllib.parse.unquote(m.group(1))
        if bucket == "no-such-bucket":
            return self.error(404, "The specified bucket does not exist.")
        if bucket == "forbidden-bucket":
            return self.error(403, "caller does not have storage.objects.list access")
        if m.group(2) is None:
            with lock:
                state["lists"] += 1
                first = state["lists"] == 1
            if first:
                return self.error(503, "try again")
            start = int(q.get("pageToken", ["0"])[0])
            items = [{"name": n, "size": str(len(GZ) if n == "gz.bin" else SIZE if n.endswith(".bin") else 1),
                      "generation": "17", "updated": "2024-05-06T07:08:09.123Z"}
                     for n in NAMES[start:start + PAGE]]
            page = {"items": items}
            if start + PAGE < len(NAMES):
                page["nextPageToken"] = str(start + PAGE)
            return self.send_json(200, page)
        name = urllib.parse.unquote(m.group(2))
        if q.get("alt") == ["media"] and name in uploads:
            return self.send_range(uploads[name], "99")
        if q.get("alt") == ["media"] and name == "gz.bin":
            # stored with Content-Encoding: gzip: GCS sends the stored bytes
            # only to a client that says it accepts gzip (else it transcodes)
            if "gzip" not in self.headers.get("Accept-Encoding", ""):
                return self.error(400, "this fake only serves gz.bin raw")
            return self.send_range(GZ, "17", encoding="gzip")
        if q.get("alt") != ["media"] or name not in ("full200.bin", "flaky.bin", "broken.bin"):
            return self.error(404, "No such object")
        rng = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        a, b = (int(rng.group(1)), min(int(rng.group(2)), SIZE - 1)) if rng else (0, SIZE - 1)
        if name == "broken.bin":
            return self.error(503, "backend error")
        if name == "full200.bin":
            self.send_response(200)
            self.send_header("Content-Length", str(SIZE))
            self.send_header("x-goog-generation", "17")
            self.end_headers()
            self.wfile.write(DATA)
            return
        with lock:
            state["flaky"] += 1
            mode = state["flaky"] % 3
        if mode == 1:
            return self.error(503, "flaky")
        body = DATA[a:b + 1]
        self.send_response(206)
        self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, SIZE))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-goog-generation", "17")
        self.end_headers()
        if mode == 2:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def finish_upload(self, name, data):
        uploads[name] = bytes(data)
        self.send_json(200, {"name": name, "size": str(len(data)), "generation": "99",
                             "updated": "2024-05-06T07:08:09.123Z"})

    def do_POST(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        self.body()
        if not re.fullmatch(r"/upload/storage/v1/b/[^/]+/o", u.path) or q.get("uploadType") != ["resumable"]:
            return self.error(501, "not implemented here")
        name = q["name"][0]
        with lock:
            sid = str(len(sessions) + 1)
            sessions[sid] = {"name": name, "data": bytearray(), "chunks": 0}
        host = "http://evil.invalid:1" if "evil" in name else "http://127.0.0.1:%d" % self.server.server_address[1]
        self.send_response(200)
        self.send_header("Location", "%s/upload/session/%s" % (host, sid))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_PUT(self):
        m = re.fullmatch(r"/upload/session/(\d+)", self.path)
        data = self.body()
        if not m or m.group(1) not in sessions:
            return self.error(404, "no such session")
        sess = sessions[m.group(1)]
        cr = self.headers.get("Content-Range", "")
        q = re.fullmatch(r"bytes \*/(\d+)", cr)
        c = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", cr)
        if q:
            total = int(q.group(1))
        elif c:
            a, total = int(c.group(1)), int(c.group(3))
            have = len(sess["data"])
            if a > have:
                return self.error(400, "gap")
            sess["chunks"] += 1
            part = data[have - a:]
            if "flaky" in sess["name"] and sess["chunks"] == 2:
                sess["data"] += part[: len(part) // 2]
                return self.error(503, "chunk lost half way")
            sess["data"] += part
        else:
            return self.error(400, "bad Content-Range")
        if len(sess["data"]) == total:
            return self.finish_upload(sess["name"], sess["data"])
        self.send_response(308)
        if sess["data"]:
            self.send_header("Range", "bytes=0-%d" % (len(sess["data"]) - 1))
        self.send_header("Content-Length", "0")
        self.end_headers()


def main():
    srv = httpd.QuietServer(("127.0.0.1", 0), Handler)
    print("ready %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
