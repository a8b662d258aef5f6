#!/usr/bin/env bash
# bench/mount-read.sh - a short benchmark of the xprofs mount (not part of
# the test suite; run by hand):
#
#   XPROFS_SOURCE_ROOT=$PWD XPROFS_BUILD_ROOT=$PWD/build bash bench/mount-read.sh [SIZE]
#
# Generates one SIZE (default 200M) TPU profile with tools/xprofs-gen, mounts
# it, and measures (page cache warm on both sides):
#   - a TensorBoard-style read of the profile (512 KiB preads until EOF)
#     directly from SOURCE and through MNT/logdir (first read: through FUSE;
#     second: the kernel keeps the page cache while mtime/size are unchanged);
#   - ls -lR of MNT/runs (listings never decode);
#   - first open+read of summary.json and trace.json (a render) and a second
#     one (a cache hit), and after a remount (persistent cache).
# bench/mount.sh is the longer table of every view at 100M and 1G.
. "${XPROFS_SOURCE_ROOT:?}/tests/lib/lib.sh"
. "$XPROFS_SOURCE_ROOT/bench/lib.sh"
xp_require_fuse
xp_workdir
SIZE=${1:-200M}
W=$XP_WORK SRC=$XP_WORK/src MNT=$XP_WORK/mnt
S=$SRC/bench/plugins/profile/s1
mkdir -p "$S" "$MNT"
"$XPROFS_BUILD_ROOT/tools/xprofs-gen" --kind tpu --size "$SIZE" -o "$S/host0.xplane.pb" >/dev/null
bytes=$(stat -c %s "$S/host0.xplane.pb")
tb_read() { /usr/bin/python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); off = 0
while True:
    b = os.pread(fd, 512 * 1024, off)
    if not b: break
    off += len(b)
print(off)' "$1" >/dev/null; }
timeit() { local t0 t1; t0=$(now); "$@" >/dev/null; t1=$(now); echo "$t1 - $t0" | bc; }
mbps() { echo "scale=0; $bytes / 1048576 / $1" | bc; }

xp_mount "$SRC" "$MNT" -o cache_dir="$W/cache"
tb_read "$S/host0.xplane.pb" # warm the page cache
t=$(timeit tb_read "$S/host0.xplane.pb"); echo "profile $((bytes >> 20)) MiB, 512 KiB preads, SOURCE:        ${t}s ($(mbps "$t") MiB/s)"
t=$(timeit tb_read "$MNT/logdir/bench/plugins/profile/s1/host0.xplane.pb"); echo "profile $((bytes >> 20)) MiB, 512 KiB preads, MNT/logdir, 1st: ${t}s ($(mbps "$t") MiB/s)"
t=$(timeit tb_read "$MNT/logdir/bench/plugins/profile/s1/host0.xplane.pb"); echo "profile $((bytes >> 20)) MiB, 512 KiB preads, MNT/logdir, 2nd: ${t}s ($(mbps "$t") MiB/s, page cache kept)"
t=$(timeit ls -lR "$MNT/runs"); echo "ls -lR runs/ (no decode):                        ${t}s"
H=$MNT/runs/bench/s1/host0
for v in summary.json trace.json; do
	t=$(timeit cat "$H/$v"); echo "$v first open+read (render):              ${t}s ($(stat -c %s "$H/$v") bytes)"
	t=$(timeit cat "$H/$v"); echo "$v second open+read (cache hit):          ${t}s"
done
xp_umount "$MNT"
xp_mount "$SRC" "$MNT" -o cache_dir="$W/cache"
t=$(timeit cat "$H/trace.json"); echo "trace.json after remount (persistent cache):    ${t}s"
jq -c '{renders: .counters.renders, hits: .counters.view_cache_hits, cache_bytes: .cache.bytes, raw: .cache.raw_bytes_written}' "$MNT/status.json"
xp_umount "$MNT"
