#!/usr/bin/env bash
# bench/mount.sh - reading generated views through a real xprofs mount.
#
# Uses the profiles bench/decode.sh generates (bench/out/<kind>-<size>-s<seed>
# .xplane.pb, made here if missing), hard-links each into a one-run logdir
# under bench/out/, mounts it with the xprofs daemon (-f, a private cache
# dir wiped first) and times `cat MOUNT/runs/<run>/<session>/<host>/<view>`:
#   cold    first read: the daemon decodes the profile (source file dropped
#           from the page cache, empty view cache); also its time to first
#           byte (views stream while they render: fs/live.c)
#   warm    the same read again (kernel page cache / daemon's view cache)
#   restart after unmount and remount with the same cache dir (disk cache)
# plus the daemon's peak RSS (VmHWM). Writes bench/out/mount-results.md.
#
#   bench/mount.sh                                  # 100M and 1G, build dir "build"
#   BUILD=build-x SIZES="100M" VIEWS="ops.json summary.json" bench/mount.sh
#   TRACE_MAX_MB=200   trace.json only for profiles up to this size (it is
#                      ~12x the profile: 1 GB would push 12 GB through FUSE)
#
# Needs /dev/fuse and fusermount3. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${BUILD:-build}
bench_profile_set
VIEWS=${VIEWS:-summary.json ops.json steps.json trace.json}
TRACE_MAX_MB=${TRACE_MAX_MB:-200}
bench_paths mount-results.md
bench_mount_setup mnt
trap 'bench_mount_cleanup "$MNT"' EXIT

mount_it() { bench_mount "$XPROFS" "$1" "$MNT" "$OUT/mount-xprofs.log" -o cache_dir="$2"; } # logdir cachedir

timed_cat() { # path -> prints "seconds bytes" (or "fail 0")
	local t0 t1 n
	t0=$(date +%s.%N)
	if n=$(cat "$1" | wc -c); then
		t1=$(date +%s.%N)
		awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "%.2f %d\n", b - a, n }'
	else
		echo "fail 0"
	fi
}

bench_head "xprofs mount benchmark" \
	"$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, build \`$BUILD\`; profiles from \`xprofs-gen --kind $KIND --seed $SEED --size N\`." \
	"cold = first read after mount (empty view cache, source dropped from the page cache);" \
	"first byte = time from open to the first bytes of that cold read;" \
	"warm = read again; restart = after unmount + remount with the same cache dir." \
	-- profile view "view MB" "cold first byte s" "cold s" "cold MB/s of profile" "warm s" "restart s" "daemon peak RSS MB" \
	>"$RES.tmp"

for size in $SIZES; do
	f=$(bench_profile "$GEN" "$OUT" "$KIND" "$SEED" "$size")
	bytes=$(stat -c %s "$f")
	views=
	for v in $VIEWS; do
		[ "$v" = trace.json ] && [ "$bytes" -gt $((TRACE_MAX_MB * 1048576)) ] && continue
		views="$views $v"
	done
	logdir=$OUT/mount-logdir-$size
	cache=$OUT/mount-cache-$size
	rm -rf "$logdir" "$cache"
	mkdir -p "$cache"
	bench_logdir "$f" "$logdir"
	declare -A cold=() first=() warm=() vbytes=()
	bench_drop_cache "$f" >/dev/null
	mount_it "$logdir" "$cache"
	for v in $views; do
		read -r fb t n < <(bench_timed_first "$HOST/$v")
		cold[$v]=$t first[$v]=$fb vbytes[$v]=$n
		read -r t _ < <(timed_cat "$HOST/$v")
		warm[$v]=$t
		echo "$size $v: cold ${cold[$v]} s (first byte ${first[$v]} s), warm ${warm[$v]} s, $n bytes" >&2
	done
	rss=$(bench_hwm_mb)
	bench_umount "$MNT"
	bench_drop_cache "$f" >/dev/null
	mount_it "$logdir" "$cache"
	for v in $views; do
		read -r t _ < <(timed_cat "$HOST/$v")
		rst=$t
		printf '| %s (%s B) | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$size" "$bytes" "$v" \
			"$(awk -v n="${vbytes[$v]}" 'BEGIN { printf "%.1f", n / 1048576 }')" "${first[$v]}" "${cold[$v]}" \
			"$(awk -v b="$bytes" -v t="${cold[$v]}" 'BEGIN { if (t == "fail" || t <= 0) print "-"; else printf "%.0f", b / 1048576 / t }')" \
			"${warm[$v]}" "$rst" "$rss" >>"$RES.tmp"
	done
	bench_umount "$MNT"
	unset cold first warm vbytes
	rm -rf "$logdir" "$cache"
done
mv "$RES.tmp" "$RES"
cat "$RES"
