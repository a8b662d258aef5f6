#!/usr/bin/env bash
# bench/capture.sh - on-demand capture throughput and memory through a real
# xprofs mount.
#
# For each size, starts tests/capture/profiler_server.py sending an XSpace of
# that size (the base profile repeated: a valid, mergeable XSpace), writes
# "run=bench HOST:PORT duration_ms=1 session=sN" to MOUNT/capture and times
# write() -> status "ok" (the file committed in the logdir), checks the
# sha256 against what the server sent, and reads the daemon's VmHWM. As a
# baseline, a grpcio (C-core) Python client fetches the same response from the
# same server and discards it: the difference is xprofs's own cost (h2c via
# libcurl, incremental parse, store write). Writes bench/out/capture-results.md.
#
#   bench/capture.sh                       # 100 and 500 MiB, build dir "build"
#   BUILD=build-x SIZES_MB="1000" bench/capture.sh
#
# Needs /dev/fuse, fusermount3, python3-grpcio. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
SIZES_MB=${SIZES_MB:-100 500}
XPROFS=$ROOT/$BUILD/fs/xprofs
OUT=$ROOT/bench/out
[ -x "$XPROFS" ] || { echo "capture.sh: $XPROFS missing (meson compile -C $BUILD)" >&2; exit 1; }
mkdir -p "$OUT"
export XPROFS_SOURCE_ROOT=$ROOT XPROFS_BUILD_ROOT=$ROOT/$BUILD XPROFS_SHARED=${XPROFS_SHARED:-$ROOT/../shared}
exec /usr/bin/python3 - "$XPROFS" "$OUT/capture-results.md" $SIZES_MB <<'PY'
import hashlib, json, os, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.environ["XPROFS_SOURCE_ROOT"], "tests", "capture"))
from test_capture import Server, Mount, captures, sha, vmhwm_kb
import grpc

xprofs, res, sizes = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]]
tmp = tempfile.mkdtemp(prefix="xprofs-bench-capture-")
logdir = os.path.join(tmp, "logdir")
os.mkdir(logdir)
m = Mount(xprofs, logdir, tmp)
rows = []
try:
    for i, mb in enumerate(sizes):
        s = Server(tmp, "--big-mb", str(mb))
        try:
            # baseline: grpcio client, same server, response discarded
            ch = grpc.insecure_channel(s.addr, options=[("grpc.max_receive_message_length", -1)])
            call = ch.unary_unary("/tensorflow.ProfilerService/Profile",
                                  request_serializer=lambda b: b, response_deserializer=lambda b: len(b))
            req = b"\x22\x04\x28\x01\x48\x01" + b"\x48\x01"  # opts{version=1,duration_ms=1}, emit_xspace
            t0 = time.time()
            n = call(req, timeout=600)
            base = time.time() - t0
            ch.close()
            t0 = time.time()
            with open(os.path.join(m.mnt, "capture"), "w") as f:
                f.write("run=bench %s duration_ms=1 session=s%d\n" % (s.addr, i))
            while True:
                c = [c for c in captures(open(os.path.join(m.mnt, "capture")).read())
                     if c["session"] == "s%d" % i][-1]
                if c["state"] != "running":
                    break
                time.sleep(0.02)
            dt = time.time() - t0
            rec = s.records("Profile")[-1]
            f = os.path.join(logdir, "bench", "plugins", "profile", "s%d" % i, s.addr.replace(":", "_") + ".xplane.pb")
            ok = c["state"] == "ok" and sha(f) == rec["sha256"]
            rows.append((rec["bytes"] >> 20, base, dt, vmhwm_kb(m.pid) >> 10, ok))
            print("%5d MiB: grpcio client %.2fs, xprofs capture %.2fs (%.0f MiB/s), daemon VmHWM %d MiB, %s"
                  % (rows[-1][0], base, dt, rows[-1][0] / dt, rows[-1][3], "sha256 ok" if ok else "MISMATCH"),
                  flush=True)
            os.unlink(f)
        finally:
            s.stop()
finally:
    m.quit()
    m.close()
with open(res, "w") as o:
    o.write("# bench/capture.sh: capture through a real mount (local logdir)\n\n")
    o.write("| XSpace MiB | grpcio client s | xprofs capture s | MiB/s | daemon VmHWM MiB | sha256 |\n")
    o.write("| --- | --- | --- | --- | --- | --- |\n")
    for r in rows:
        o.write("| %d | %.2f | %.2f | %.0f | %d | %s |\n" % (r[0], r[1], r[2], r[0] / r[2], r[3], "ok" if r[4] else "MISMATCH"))
print("results in " + res)
PY
