#!/bin/bash
# bench/render.sh - time and disk of the first render of trace.json
# (not part of the test suite; run by hand):
#   bash bench/render.sh build/fs/xprofs LABEL PROFILE.xplane.pb
# Mounts a one-host logdir around PROFILE with a fresh cache dir, reads
# trace.json twice (render, then cache hit) and samples the cache
# filesystem's used bytes every 50 ms during the render (unlinked temporary
# files count there, unlike in du). Make a profile with
#   build/tools/xprofs-gen --kind tpu --size 100M -o /tmp/p.xplane.pb
set -u
. "$(dirname "$0")/lib.sh"
bench_mount_args render "$@" || exit 1
base=$(df --output=used -B1 $W/cache | tail -1); echo $base > $W/peak
( while :; do u=$(df --output=used -B1 $W/cache | tail -1); p=$(cat $W/peak); [ $u -gt $p ] && echo $u > $W/peak; sleep 0.05; done ) & mon=$!
t0=$(date +%s.%N); cat $W/mnt/runs/r/s1/h/trace.json | wc -c > $W/size; t1=$(date +%s.%N)
kill $mon; wait $mon 2>/dev/null
t2=$(date +%s.%N); cat $W/mnt/runs/r/s1/h/trace.json >/dev/null; t3=$(date +%s.%N)
echo "$LABEL: trace.json $(cat $W/size) bytes; first open+read $(echo "$t1-$t0"|bc) s; cached $(echo "$t3-$t2"|bc) s; peak extra disk $(( ($(cat $W/peak)-base)/1048576 )) MiB; cache entry $(du -sm $W/cache|cut -f1) MiB; $(jq -c '{renders:.counters.renders,hits:.cache.hits,raw:.cache.raw_bytes_written}' $W/mnt/status.json)"
bench_umount $W/mnt; rm -rf $W
