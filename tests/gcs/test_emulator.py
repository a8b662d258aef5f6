#!/usr/bin/python3
"""tests/gcs/test_emulator.py - the launcher patches other tests rely on
(tests/gcs/emulator/launch.js), checked with plain HTTP: ranged reads and
416 past the end, generation-pinned reads, ifGenerationMatch=0 -> 412 for
media, multipart and resumable uploads, rewriteTo's preconditions
(ifGenerationMatch on the destination, sourceGeneration) and new generation, chunked resumable uploads (308 +
Range), a handler that throws (bad multipart JSON) answering 500 without
killing the emulator, and the Node client reading back what was written.
TAP output; exit 77 when the emulator is not installed.
"""
import http.client
import json
import os
import random
import sys
import urllib.parse

import gcs_harness as gh


def main(t, h):
    h.start_emulator()  # raises Skip when the emulator is not installed

    def req(method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", h.emu_port, timeout=30)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    rng = random.Random(5)
    data = rng.randbytes(100000)
    up = "/upload/storage/v1/b/emu/o?uploadType=media&name=%s"
    st, _, body = req("POST", up % "d%2Fa.bin" + "&ifGenerationMatch=0", data)
    gen = json.loads(body).get("generation") if st == 200 else None
    t.ok(st == 200 and gen, "media upload with ifGenerationMatch=0 creates", body[:200])
    st, _, body = req("POST", up % "d%2Fa.bin" + "&ifGenerationMatch=0", b"other")
    t.ok(st == 412 and b"conditionNotMet" in body, "a second create-only upload gets 412", st)
    st, _, body = req("POST", up % "d%2Fa.bin" + "&ifGenerationMatch=" + str(gen), data)
    gen2 = json.loads(body).get("generation") if st == 200 else None
    t.ok(st == 200 and int(gen2) > int(gen), "ifGenerationMatch=<live> overwrites, generation grows",
         (st, gen, gen2))

    media = "/storage/v1/b/emu/o/d%2Fa.bin?alt=media"
    st, hd, body = req("GET", media, headers={"Range": "bytes=10-19"})
    t.ok(st == 206 and body == data[10:20] and hd.get("content-range") == "bytes 10-19/100000",
         "a range answers 206 with exactly those bytes", (st, hd.get("content-range")))
    st, hd, body = req("GET", media, headers={"Range": "bytes=99990-200000"})
    t.ok(st == 206 and body == data[99990:], "a range past the end is clipped", (st, len(body)))
    st, hd, body = req("GET", media, headers={"Range": "bytes=100000-"})
    t.ok(st == 416 and hd.get("content-range") == "bytes */100000", "a range starting at the end gets 416",
         (st, hd))
    st, _, body = req("GET", media + "&generation=" + str(gen2))
    t.ok(st == 200 and body == data, "a read pinned to the live generation", st)
    st, _, _ = req("GET", media + "&generation=" + str(gen))
    t.ok(st == 404, "a read pinned to an old generation gets 404", st)

    def multipart(name, payload, meta=None):
        b = "XPROFS-BOUNDARY"
        m = meta if meta is not None else json.dumps({"name": name})
        body = ("--%s\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n%s\r\n--%s\r\n"
                "Content-Type: application/octet-stream\r\n\r\n" % (b, m, b)).encode() + payload + \
            ("\r\n--%s--\r\n" % b).encode()
        return req("POST", "/upload/storage/v1/b/emu/o?uploadType=multipart&ifGenerationMatch=0", body,
                   {"Content-Type": "multipart/related; boundary=" + b})

    st, _, _ = multipart("m.bin", b"one")
    st2, _, _ = multipart("m.bin", b"two")
    t.ok(st == 200 and st2 == 412, "multipart create-only: 200 then 412", (st, st2))
    st, _, _ = multipart("x.bin", b"boom", meta="{not json")
    st2, _, _ = req("GET", "/storage/v1/b/emu/o?prefix=m")
    t.ok(st == 500 and st2 == 200, "a handler that throws answers 500 and the emulator lives on", (st, st2))

    # Chunked resumable upload: two 256 KiB chunks and a tail.
    big = rng.randbytes(3 * 262144 + 1000)
    st, hd, _ = req("POST", "/upload/storage/v1/b/emu/o?uploadType=resumable&name=r.bin&ifGenerationMatch=0",
                    b"{}", {"Content-Type": "application/json"})
    loc = urllib.parse.urlsplit(hd.get("location", ""))
    path = loc.path + "?" + loc.query
    codes, ranges = [], []
    for a, b in ((0, 262144), (262144, 2 * 262144), (2 * 262144, len(big))):
        st, hd, body = req("PUT", path, big[a:b],
                           {"Content-Range": "bytes %d-%d/%d" % (a, b - 1, len(big))})
        codes.append(st)
        ranges.append(hd.get("range"))
    st, _, got = req("GET", "/storage/v1/b/emu/o/r.bin?alt=media")
    t.ok(codes == [308, 308, 200] and ranges[:2] == ["bytes=0-262143", "bytes=0-524287"] and got == big,
         "chunked resumable upload: 308 + Range until the last chunk", (codes, ranges))
    st, hd, _ = req("POST", "/upload/storage/v1/b/emu/o?uploadType=resumable&name=r.bin&ifGenerationMatch=0",
                    b"{}", {"Content-Type": "application/json"})
    loc = urllib.parse.urlsplit(hd.get("location", ""))
    st, _, _ = req("PUT", loc.path + "?" + loc.query, b"x", {"Content-Range": "bytes 0-0/1"})
    t.ok(st == 412, "resumable create-only over an existing object gets 412", st)

    # rewriteTo: a server-side copy with its preconditions (patch 8).
    st, _, body = req("POST", up % "r%2Fsrc.bin", data)
    sgen = json.loads(body).get("generation") if st == 200 else "0"
    rw = "/storage/v1/b/emu/o/r%%2Fsrc.bin/rewriteTo/b/emu/o/r%%2F%s?sourceGeneration=%s&ifGenerationMatch=%s"
    st, _, body = req("POST", rw % ("dst.bin", sgen, "0"), b"{}", {"Content-Type": "application/json"})
    ans = json.loads(body) if st == 200 else {}
    dgen = ans.get("resource", {}).get("generation", "0")
    st2, _, got = req("GET", "/storage/v1/b/emu/o/r%2Fdst.bin?alt=media")
    t.ok(st == 200 and ans.get("done") is True and int(dgen) > int(sgen) and got == data,
         "rewriteTo with ifGenerationMatch=0 copies, with a new generation", (st, body[:200], sgen, dgen))
    st, _, body = req("POST", rw % ("dst.bin", sgen, "0"), b"{}", {"Content-Type": "application/json"})
    t.ok(st == 412 and b"conditionNotMet" in body, "rewriteTo onto an existing object with 0 gets 412", st)
    st, _, body = req("POST", rw % ("dst.bin", sgen, dgen), b"{}", {"Content-Type": "application/json"})
    t.ok(st == 200, "rewriteTo with the destination's live generation replaces it", (st, body[:200]))
    st, _, body = req("POST", rw % ("other.bin", int(sgen) - 1, "0"), b"{}", {"Content-Type": "application/json"})
    st2, _, _ = req("GET", "/storage/v1/b/emu/o/r%2Fother.bin")
    t.ok(st == 404 and st2 == 404, "rewriteTo of a source generation that is not live gets 404, no copy", (st, st2))

    # The official client reads back what plain HTTP wrote.
    exp = os.path.join(h.work, "expect")
    os.makedirs(os.path.join(exp, "d"))
    with open(os.path.join(exp, "d", "a.bin"), "wb") as f:
        f.write(data)
    rc, out = h.node("check.js", "gs://emu/d", os.path.join(exp, "d"))
    t.ok(rc == 0, "the Node client reads the same bytes", out)


if __name__ == "__main__":
    sys.exit(gh.run(main, prereqs=None))
