#!/bin/bash
# bench/pftrace.sh - cold trace.pftrace through the mount: input MB/s, size
# ratio and the daemon's peak RSS (not part of the test suite; run by hand):
#   bash bench/pftrace.sh build/fs/xprofs LABEL PROFILE.xplane.pb
# Mounts a one-host logdir around PROFILE with a fresh cache dir, drops
# PROFILE from the page cache (bench/lib.sh), reads trace.pftrace once (the
# render), then reads the daemon's VmHWM (peak
# resident set) from /proc. Prints the load average with the numbers, as
# benchmarks here must. Make profiles with
#   build/tools/xprofs-gen --kind tpu --size 1G -o /tmp/p.xplane.pb
# (delete them afterwards: the disk is shared). Use a release build
# (meson setup build-rel --buildtype=release) for numbers you report.
set -u
. "$(dirname "$0")/lib.sh"
if [ $# != 3 ] || [ ! -x "$1" ] || [ ! -f "$3" ]; then
	echo "usage: bench/pftrace.sh XPROFS_BIN LABEL PROFILE.xplane.pb" >&2
	exit 2
fi
BIN=$1 LABEL=$2 PROF=$3
W=$(mktemp -d /tmp/xprofs-bench-pftrace.XXXX); mkdir -p $W/src/r/plugins/profile/s1 $W/mnt $W/cache
ln "$PROF" $W/src/r/plugins/profile/s1/h.xplane.pb 2>/dev/null || cp "$PROF" $W/src/r/plugins/profile/s1/h.xplane.pb
$BIN $W/src $W/mnt -f -o cache_dir=$W/cache >$W/log 2>&1 & pid=$!
for i in $(seq 100); do grep -q " $W/mnt fuse" /proc/mounts && break; sleep 0.1; done
in=$(stat -c %s "$PROF")
drop=$(bench_drop_cache "$PROF")
t0=$(now); out=$(cat $W/mnt/runs/r/s1/h/trace.pftrace | wc -c); t1=$(now)
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
s=$(secs $t0 $t1)
echo "$LABEL: input $((in / 1048576)) MiB; trace.pftrace $out bytes ($(echo "scale=2; $out/$in" | bc)x);" \
	"cold $s s = $(echo "scale=1; $in/1048576/$s" | bc) MiB/s of input; daemon peak RSS $((hwm / 1024)) MiB;" \
	"page cache: $drop; load $(cut -d' ' -f1-3 /proc/loadavg)"
fusermount3 -u $W/mnt; wait $pid; rm -rf $W
