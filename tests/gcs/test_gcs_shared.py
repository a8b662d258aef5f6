#!/usr/bin/python3
"""tests/gcs/test_gcs_shared.py - `-o shared_cache=gs://BUCKET/PREFIX`, the
shared view cache (docs/gcs.md "Shared view cache"), through real /dev/fuse
mounts of the daemon against the offline emulator behind
tests/lib/fault_proxy.py (which logs every request).

- A first mount renders ops.json, misses the shared copy and uploads it
  (ifGenerationMatch=0) after the render, off the reader's path.
- A second mount with an empty local cache gets the same bytes with one GET of
  the shared object: no render, no index pass, not one byte of the profile read.
  trace.json is not shared (its render streams faster than a copy arrives).
- A shared object with a flipped payload byte (damaged), a truncated one, one
  that is not ours at all, and one holding another view's copy (a foreign
  key) are rejected: the view is rendered and the bytes are right. A damaged
  one is then replaced by the rendered copy (ifGenerationMatch = its
  generation); the foreign one is left alone (our upload meets it: 412).
- A replaced profile (a new generation) never gets the old view: its key, and
  so its object, differ; the view is rendered from the new profile.
- A mount the bucket refuses uploads to (403) fetches and renders as usual,
  reports read_only and stops trying after the first refusal; a read-only
  mount (-o ro) never tries.
- An upload that gets no answer for 4 s does not delay the reader: the read
  ends with the render, and the upload is retried after the reset.
- A shared cache that resets every fetch costs one retry deadline, then
  fetching pauses; views render correctly meanwhile.
- A fetch stalled half way (90 s) is given up after the shared client's
  stall timeout (at most 10 s, though -o stall_timeout=40) and the view
  rendered.
- The option needs a gs:// SOURCE and a gs:// URL, and a shared bucket
  that cannot be read (403 at mount) fails the mount.
TAP output; exit 77 when FUSE, the xprofs binary or the emulator is absent.
"""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import fault_proxy
import gcs_harness as gh

URL = "gs://bkt/logs"
SHARED = "gs://bkt/shared"
REL = "run/plugins/profile/s1"
HOST = "host0"
VIEW = "runs/run/s1/%s/ops.json" % HOST


def status(mnt):
    with open(os.path.join(mnt, "status.json")) as f:
        return json.load(f)


def shared_of(mnt):
    return status(mnt)["shared_cache"]


def wait_for(mnt, pred, what, timeout=60):
    """Poll status.json until pred(status) holds; the last status either way."""
    end = time.monotonic() + timeout
    st = status(mnt)
    while not pred(st) and time.monotonic() < end:
        time.sleep(0.05)
        st = status(mnt)
    return st


def read(mnt, rel):
    with open(os.path.join(mnt, rel), "rb") as f:
        return f.read()


def emu_get(h, path):
    with urllib.request.urlopen(h.emu_url + path, timeout=30) as r:
        return r.read()


def emu_put(h, name, data):
    """Store @data as object @name of bkt (replacing it: no precondition)."""
    q = urllib.parse.urlencode({"uploadType": "media", "name": name})
    req = urllib.request.Request(h.emu_url + "/upload/storage/v1/b/bkt/o?" + q, data=data, method="POST",
                                 headers={"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def shared_objects(h):
    q = urllib.parse.urlencode({"prefix": "shared/"})
    items = json.loads(emu_get(h, "/storage/v1/b/bkt/o?" + q)).get("items", [])
    return sorted(i["name"] for i in items)


def obj_bytes(h, name):
    return emu_get(h, "/storage/v1/b/bkt/o/%s?alt=media" % urllib.parse.quote(name, safe=""))


def requests_for(p, needle):
    with p.lock:
        return [(m, path) for _, m, path, _, _ in p.log if needle in path]


def gen(out, seed, size="3M"):
    subprocess.run([os.path.join(gh.build_root(), "tools", "xprofs-gen"), "--size", size, "--seed",
                    str(seed), "-o", out], check=True, capture_output=True)


def main(t, h):
    src = os.path.join(h.work, "src")
    os.makedirs(os.path.join(src, REL))
    gen(os.path.join(src, REL, HOST + ".xplane.pb"), 1)
    h.start_emulator()
    h.seed(src, URL)
    opts = ["anonymous", "shared_cache=" + SHARED, "retry_deadline=5"]
    rcs = []  # every unmount's exit status: in an ASan build, errors and leaks make it non-zero
    umount = h.umount
    logs = {m: lg for m, _, lg in h.mounts}

    def umount_checked(m):
        logs.update({mm: lg for mm, _, lg in h.mounts})
        rc = umount(m)
        rcs.append(rc)
        if rc != 0:
            print("# unmount of %s exited %s; its log:\n# %s" % (m, rc, h.log(logs[m], 40).replace("\n", "\n# ")))
        return rc
    h.umount = umount_checked

    # 1. the first mount renders and uploads
    p = h.proxy()
    mnt, _, log = h.mount(URL, p.url, opts)
    want = read(mnt, VIEW)
    st = wait_for(mnt, lambda s: s["shared_cache"]["uploads"] >= 1, "upload")
    sh = st["shared_cache"]
    t.ok(len(want) > 100 and sh["misses"] == 1 and sh["uploads"] == 1 and st["counters"]["renders"] == 1,
         "first mount: rendered ops.json (%d bytes), shared miss then upload (%s)" % (len(want), sh), h.log(log))
    names = shared_objects(h)
    t.ok(len(names) == 1 and names[0].endswith("-ops.json"), "one shared object, named for its view: %s" % names)
    ups = [path for m, path in requests_for(p, "uploadType=media") if m == "POST"]
    t.ok(len(ups) == 1 and "ifGenerationMatch=0" in ups[0], "the upload carries ifGenerationMatch=0: %s" % ups)
    h.umount(mnt)
    obj = names[0]
    good = obj_bytes(h, obj)

    # 2. a second mount with an empty local cache fetches instead of rendering
    p2 = h.proxy()
    mnt, _, log = h.mount(URL, p2.url, opts)
    with p2.lock:
        p2.log.clear()
    got = read(mnt, VIEW)
    st = status(mnt)
    sh, c = st["shared_cache"], st["counters"]
    media = [(m, path) for m, path in requests_for(p2, "alt=media")]
    profile_reads = [x for x in media if "xplane.pb" in urllib.parse.unquote(x[1])]
    t.same(got, want, "second mount: ops.json byte-identical (%d bytes)" % len(got), h.log(log))
    t.ok(sh["hits"] == 1 and c["renders"] == 0 and c["profile_indexes"] == 0,
         "second mount: a shared hit, no render, no index pass (%s, renders %d, indexes %d)"
         % (sh, c["renders"], c["profile_indexes"]), h.log(log))
    t.ok(len(media) == 1 and not profile_reads and urllib.parse.quote(obj, safe="") in media[0][1],
         "second mount: exactly one GET, of the shared object; no byte of the profile read: %s" % media)
    t.ok(read(mnt, VIEW) == want and status(mnt)["counters"]["view_cache_hits"] >= 1,
         "second mount: the fetched view is a local cache hit from then on")
    st = status(mnt)
    t.ok(st["cache"]["hits"] == st["counters"]["view_cache_hits"] + st["store"]["blocks"]["disk_hits"],
         "second mount: cache.hits = view_cache_hits + disk_hits (an imported entry is a reopen: %s, %s, %s)"
         % (st["cache"]["hits"], st["counters"]["view_cache_hits"], st["store"]["blocks"]["disk_hits"]))
    with p2.lock:
        p2.log.clear()
    trace = read(mnt, "runs/run/s1/%s/trace.json" % HOST)
    sh2 = shared_of(mnt)
    t.ok(len(trace) > 1000 and sh2["misses"] == 0 and sh2["hits"] == 1 and not requests_for(p2, "shared"),
         "trace.json is rendered, never looked up in the shared cache (%s)" % sh2)
    h.umount(mnt)

    # 3. damaged and foreign shared objects are rejected, the view is rendered
    bad = bytearray(good)
    bad[len(bad) * 2 // 3] ^= 0x40
    other = shared_objects(h)
    # a sound copy of another view: summary.json's object, made by a mount
    mnt, _, log = h.mount(URL, p2.url, opts)
    read(mnt, "runs/run/s1/%s/summary.json" % HOST)
    wait_for(mnt, lambda s: s["shared_cache"]["uploads"] >= 1, "upload")
    h.umount(mnt)
    summary_obj = [n for n in shared_objects(h) if n.endswith("-summary.json")]
    t.ok(len(summary_obj) == 1, "a second view was shared: %s (before: %s)" % (summary_obj, other))
    foreign = obj_bytes(h, summary_obj[0]) if summary_obj else b"x"
    for what, data in [("damaged", bytes(bad)), ("truncated", good[: len(good) // 2]),
                       ("foreign", foreign), ("not an object of ours", b"{}\n" * 100)]:
        dgen = emu_put(h, obj, data)["generation"]
        mnt, _, log = h.mount(URL, p2.url, opts)
        got = read(mnt, VIEW)
        st = wait_for(mnt, lambda s: s["shared_cache"]["upload_exists"] + s["shared_cache"]["uploads"] >= 1,
                      "upload")
        sh, c = st["shared_cache"], st["counters"]
        t.ok(got == want and sh["rejects"] == 1 and sh["hits"] == 0 and c["renders"] == 1,
             "%s shared object: rejected, rendered, right bytes (%s)" % (what, sh), h.log(log))
        h.umount(mnt)
        ups = [path for m, path in requests_for(p2, "uploadType=media") if m == "POST"]
        if what == "foreign":
            t.ok(sh["upload_exists"] == 1 and sh["upload_errors"] == 0 and obj_bytes(h, obj) == data,
                 "foreign shared object: our upload meets it (412), no error, it is left alone")
        else:
            t.ok(sh["repairs"] == 1 and sh["upload_errors"] == 0 and obj_bytes(h, obj) == good and
                 ups and "ifGenerationMatch=%s" % dgen in ups[-1],
                 "%s shared object: replaced by the rendered copy, only that generation (%s)"
                 % (what, ups[-1:]))
    emu_put(h, obj, good)

    # 3b. two mounts rendering the same view at once: one object, never clobbered
    svg = "runs/run/s1/%s/overview.svg" % HOST
    pair = [h.mount(URL, p2.url, opts)[0] for _ in range(2)]
    out = [None, None]
    ths = [threading.Thread(target=lambda i=i: out.__setitem__(i, read(pair[i], svg))) for i in range(2)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    done = lambda s: s["shared_cache"]["upload_queued"] == 0 and (
        s["shared_cache"]["hits"] + s["shared_cache"]["uploads"] + s["shared_cache"]["upload_exists"] >= 1)
    sts = [wait_for(m, done, "upload")["shared_cache"] for m in pair]
    for m in pair:
        h.umount(m)
    svg_obj = [n for n in shared_objects(h) if n.endswith("-overview.svg")]
    mnt, _, log = h.mount(URL, p2.url, opts)
    again = read(mnt, svg)
    sh = shared_of(mnt)
    h.umount(mnt)
    t.ok(out[0] == out[1] == again and len(again) > 100 and sum(x["uploads"] for x in sts) == 1 and
         all(x["hits"] + x["uploads"] + x["upload_exists"] == 1 for x in sts) and len(svg_obj) == 1 and
         sh["hits"] == 1,
         "two mounts rendering one view at once: one upload wins, the other hits or meets 412; "
         "the object serves the next mount (%s)" % [(x["hits"], x["uploads"], x["upload_exists"]) for x in sts])

    # 4. a replaced profile (new generation) never gets the old view
    src2 = os.path.join(h.work, "src2")
    os.makedirs(os.path.join(src2, REL))
    gen(os.path.join(src2, REL, HOST + ".xplane.pb"), 2)
    h.seed(src2, URL)
    ref, _, log = h.mount(URL, p2.url, ["anonymous"])
    want2 = read(ref, VIEW)
    h.umount(ref)
    mnt, _, log = h.mount(URL, p2.url, opts)
    got = read(mnt, VIEW)
    st = wait_for(mnt, lambda s: s["shared_cache"]["uploads"] >= 1, "upload")
    sh = st["shared_cache"]
    t.ok(want2 != want and got == want2 and sh["hits"] == 0 and sh["misses"] == 1 and sh["uploads"] == 1,
         "replaced profile: its own view (rendered, %d bytes, not the old %d), a miss, then its upload (%s)"
         % (len(got), len(want), sh), h.log(log))
    t.ok(len([n for n in shared_objects(h) if n.endswith("-ops.json")]) == 2,
         "replaced profile: a second ops.json object beside the old one")
    h.umount(mnt)
    mnt, _, log = h.mount(URL, p2.url, opts)
    got = read(mnt, VIEW)
    sh = shared_of(mnt)
    t.ok(got == want2 and sh["hits"] == 1, "replaced profile: the next mount fetches the new view (%s)" % sh)
    h.umount(mnt)

    # 4b. a fetch whose body is cut half way is retried from the start: a hit, the right bytes
    p7 = h.proxy(faults=["truncate,match=^GET /storage/v1/b/bkt/o/shared%2F,count=1"])
    mnt, _, log = h.mount(URL, p7.url, opts)
    got = read(mnt, VIEW)
    sh = shared_of(mnt)
    t.ok(got == want2 and sh["hits"] == 1 and sh["rejects"] == 0 and sh["store"]["retries"] >= 1 and
         p7.stats["faults"].get("truncate") == 1,
         "a truncated fetch is retried: a hit with the right bytes (%s)" % sh, h.log(log))
    h.umount(mnt)

    # 5. no write access: fetch and render as usual, stop uploading after one 403
    p3 = h.proxy(faults=["403,match=^POST /upload"])
    mnt, _, log = h.mount(URL, p3.url, opts)
    steps = read(mnt, "runs/run/s1/%s/steps.json" % HOST)
    st = wait_for(mnt, lambda s: s["shared_cache"]["read_only"], "403")
    read(mnt, "runs/run/s1/%s/overview.json" % HOST)
    got = read(mnt, VIEW)
    st = wait_for(mnt, lambda s: s["shared_cache"]["misses"] >= 2 and s["shared_cache"]["upload_queued"] == 0,
                  "idle")
    sh = st["shared_cache"]
    ups = [x for x in requests_for(p3, "uploadType=media")]
    t.ok(len(steps) > 10 and got == want2 and sh["read_only"] and sh["upload_errors"] == 0 and sh["hits"] == 1,
         "read-only bucket: views served, read_only reported, no upload error (%s)" % sh, h.log(log))
    t.ok(len(ups) == 1, "read-only bucket: one refused upload, then no more tries (%d)" % len(ups))
    h.umount(mnt)

    # 5a. a read-only mount (-o ro) fetches but never uploads: not one upload request
    p8 = h.proxy()
    mnt, _, log = h.mount(URL, p8.url, opts + ["ro"])
    st0 = status(mnt)["shared_cache"]
    got = read(mnt, VIEW)
    summ = read(mnt, "runs/run/s1/%s/summary.json" % HOST)
    st = wait_for(mnt, lambda s: s["counters"]["renders"] >= 1 and s["shared_cache"]["upload_queued"] == 0,
                  "idle")
    sh = st["shared_cache"]
    ups = requests_for(p8, "uploadType")
    t.ok(st0["read_only"] and got == want2 and len(summ) > 10 and sh["hits"] >= 1 and sh["misses"] >= 1 and
         sh["uploads"] == 0 and sh["upload_errors"] == 0 and not ups,
         "-o ro: read_only from the start, a hit served, a miss rendered, no upload request (%s; %s)" %
         (sh, ups), h.log(log))
    h.umount(mnt)

    # 5b. the reader never waits for the upload: the first upload gets no answer for 4 s (then
    # a reset; the client retries it), yet the read ends as soon as the render does
    p6 = h.proxy(faults=["stall,match=^POST /upload,count=1,stall=4"])
    mnt, _, log = h.mount(URL, p6.url, opts + ["retry_deadline=20"])
    t0 = time.monotonic()
    svg2 = read(mnt, "runs/run/s1/%s/overview.svg" % HOST)
    took = time.monotonic() - t0
    at_eof = shared_of(mnt)
    st = wait_for(mnt, lambda s: s["shared_cache"]["uploads"] >= 1, "upload", timeout=90)
    t.ok(len(svg2) > 100 and at_eof["uploads"] == 0 and st["shared_cache"]["uploads"] == 1 and
         st["shared_cache"]["store"]["retries"] >= 1,
         "a stalled upload does not delay the reader: read in %.2f s with no upload done (%s), "
         "then the retried upload (%s)" % (took, at_eof["uploads"], st["shared_cache"]), h.log(log))
    h.umount(mnt)

    # 6. a shared cache whose fetches fail: one deadline, then fetching pauses
    p4 = h.proxy()
    mnt, _, log = h.mount(URL, p4.url, opts + ["retry_deadline=2"])
    with p4.lock:
        p4.rules.append(fault_proxy.Rule("reset", match=r"^GET /storage/v1/b/bkt/o/shared%2F"))
    got = read(mnt, VIEW)
    summary = read(mnt, "runs/run/s1/%s/summary.json" % HOST)
    sh = shared_of(mnt)
    t.ok(got == want2 and len(summary) > 10 and sh["fetch_errors"] == 1 and sh["skipped"] >= 1,
         "failing shared cache: views rendered, one fetch error, later fetches skipped (%s)" % sh, h.log(log))
    h.umount(mnt)

    t.ok(len(rcs) >= 10 and all(rc == 0 for rc in rcs), "every daemon exited 0 at unmount: %s" % rcs)

    # 6b. a fetch that stalls half way is given up after the shared client's stall timeout
    # (at most 10 s, whatever -o stall_timeout says: 40 here), not after the server's 90 s
    # stall nor the 40 s (libcurl notices a stall some seconds late: 10 s gives about 16)
    p8 = h.proxy(faults=["stall_body,match=^GET /storage/v1/b/bkt/o/shared%2F,stall=90"])
    mnt, _, log = h.mount(URL, p8.url, ["anonymous", "shared_cache=" + SHARED, "stall_timeout=40"])
    t0 = time.monotonic()
    got = read(mnt, VIEW)
    took = time.monotonic() - t0
    sh = shared_of(mnt)
    t.ok(got == want2 and sh["fetch_errors"] == 1 and sh["hits"] == 0 and took < 38,
         "a stalled fetch: given up in %.1f s (the server stalls 90 s, stall_timeout=40), the view "
         "rendered (%s)" % (took, sh),
         h.log(log))
    h.umount(mnt)

    # 7. option checks
    local = os.path.join(h.work, "local")
    os.makedirs(local)
    p5 = h.proxy(faults=["403,match=^GET /storage/v1/b/bkt/o\\?.*prefix=shared"])
    for url, opt, why in [(local, "shared_cache=" + SHARED, "gs:// SOURCE"),
                          (URL, "shared_cache=/tmp/x", "gs://BUCKET"),
                          (URL, "shared_cache=" + SHARED, "Permission denied")]:
        _, proc, blog = h.mount(url, p5.url, ["anonymous", opt], wait=False)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = None
        t.ok(rc not in (None, 0) and why in h.log(blog), "%s on %s fails the mount (rc %s)" % (opt, url, rc),
             h.log(blog))


if __name__ == "__main__":
    sys.exit(gh.run(main))
