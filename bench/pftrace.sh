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
bench_mount_args pftrace "$@" || exit 1
in=$(stat -c %s "$PROF")
drop=$(bench_drop_cache "$PROF")
t0=$(now); out=$(cat $W/mnt/runs/r/s1/h/trace.pftrace | wc -c); t1=$(now)
s=$(secs $t0 $t1)
echo "$LABEL: input $((in / 1048576)) MiB; trace.pftrace $out bytes ($(echo "scale=2; $out/$in" | bc)x);" \
	"cold $s s = $(echo "scale=1; $in/1048576/$s" | bc) MiB/s of input; daemon peak RSS $(bench_hwm_mb) MiB;" \
	"page cache: $drop; load $(cut -d' ' -f1-3 /proc/loadavg)"
bench_umount $W/mnt; rm -rf $W
