#!/usr/bin/env bash
# bench/trace.sh - issue 9's trace targets, cold through a real xprofs mount.
#
# For each generated TPU profile (xprofs-gen, 100M and 1G by default; made in
# bench/out/ when missing) and each view below, a fresh mount (empty view
# cache, the profile dropped from the page cache) reads the view once and
# reports: time to the first byte, total time, MB/s of profile (input), the
# view's size, and the daemon's peak RSS (VmHWM). Views:
#   trace.json, trace.json.gz, trace.pftrace     the whole host
#   lod/trace.json, lod/trace.pftrace            the level-of-detail trace (docs/trace.md
#                                                "Level of detail"): target <= 64 MB, and
#                                                < 5 s cold on a 512 MiB profile
#   steps/<n>/trace.json                         the middle step of steps.json, read
#                                                after `ls steps/` (timed apart: it
#                                                indexes the profile, which the mount
#                                                keeps for the slice, fs/views.c)
# Targets (issue 9): trace.json >= 100 MB/s of input, trace.json.gz >= 60,
# trace.pftrace >= 150 and <= 1.5x the profile, a step slice of the 1 GiB
# profile < 1 s, first byte of any view < 1 s, daemon RSS < 128 MB.
# It also reports the daemon's CPU time for the read (user + system, from
# /proc/PID/stat), that time per 100 MB of profile (issue 26: the number a
# shared machine skews least, beside the wall time), and the ceiling that
# puts on the speed: the profile's MB over (CPU seconds / online CPUs), what
# the view would reach if that work spread perfectly over every core with
# nothing else running. A target above the ceiling needs less work per byte,
# or more cores, not better overlap.
# For the whole-host views (trace.json, trace.json.gz, trace.pftrace) the same
# run also times the CLI (xprofs-decode --view V, to /dev/null, the profile
# dropped from the page cache first), and again piped to cat (a reader
# process, as the mount's bytes have), and reports the mount's time over
# each (issue 26: within 1.2x). A profile at least the mount's stream_min
# (256M by default) streams those two traces uncached (docs/trace.md); set
# MOUNT_OPTS=,stream_min=0 to measure them going through the cache instead.
# The load average (uptime) is written with the results: this is a shared
# machine. Writes bench/out/trace-results.md.
#
#   bench/trace.sh                          # 100M and 1G, build dir "build"
#   SIZES=100M VIEWS="trace.json.gz" bench/trace.sh
#   SIZES=512M VIEWS="lod/trace.json lod/trace.pftrace" bench/trace.sh   # issue 26's lod
#   TRACE_MAX_MB=200  trace.json only for profiles up to this size (it is ~12x the
#                     profile and lands in the cache dir: 1 GiB gives ~12 GB)
#   KEEP=1            keep the generated profiles (default: deleted at the end)
#
# Needs /dev/fuse and fusermount3. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${BUILD:-build}
bench_profile_set
VIEWS=${VIEWS:-trace.json trace.json.gz trace.pftrace lod/trace.json lod/trace.pftrace step}
TRACE_MAX_MB=${TRACE_MAX_MB:-200}
bench_paths trace-results.md
bench_mount_setup trace
MADE=
cleanup() {
	bench_mount_cleanup "$MNT"
	rm -rf "$OUT"/trace-logdir-* "$OUT"/trace-cache-*
	if [ -z "${KEEP:-}" ] && [ -n "$MADE" ]; then
		rm -f $MADE # the big generated profiles: the disk is shared
	fi
}
trap cleanup EXIT

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$BENCH_PID/stat" 2>/dev/null || echo 0; }
TICKS=$(getconf CLK_TCK)
NCPU=$(nproc)

bench_head "xprofs trace views, cold through the mount" \
	"$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, build \`$BUILD\`; profiles from \`xprofs-gen --kind tpu --seed $SEED --size N\`." \
	"Each row: a fresh mount (empty view cache, profile dropped from the page cache), one read." \
	"Load before: $(uptime | sed 's/.*load average/load average/')" \
	-- profile view "view MB" "first byte s" "total s" "MB/s of profile" "view/profile" "daemon peak RSS MB" \
	"daemon CPU s" "CPU s per 100 MB" "CPU-bound ceiling MB/s ($NCPU CPUs)" "CLI s (> /dev/null)" "mount / CLI" \
	"CLI | cat s" "mount / (CLI | cat)" \
	"load (1 min)" \
	>"$RES.tmp"

for size in $SIZES; do
	f=$OUT/tpu-$size-s$SEED.xplane.pb
	[ -s "$f" ] || MADE="$MADE $f $f.stats.json"
	f=$(bench_profile "$GEN" "$OUT" tpu "$SEED" "$size")
	bytes=$(stat -c %s "$f")
	logdir=$OUT/trace-logdir-$size
	rm -rf "$logdir"
	bench_logdir "$f" "$logdir"
	for v in $VIEWS; do
		[ "$v" = trace.json ] && [ "$bytes" -gt $((TRACE_MAX_MB * 1048576)) ] && continue
		cache=$OUT/trace-cache-$size
		rm -rf "$cache"
		mkdir -p "$cache"
		bench_drop_cache "$f" >/dev/null
		bench_mount "$XPROFS" "$logdir" "$MNT" "$OUT/trace-xprofs.log" -o cache_dir="$cache${MOUNT_OPTS:-}"
		path=$HOST/$v
		if [ "$v" = step ]; then
			# a person lists steps/ first: that builds the index the slice then reuses
			t0=$(now)
			n=$(ls "$HOST/steps" | wc -l)
			lst=$(secs "$t0" "$(now)")
			path=$HOST/steps/$((n / 2))/trace.json
			v="steps/$((n / 2))/trace.json (after ls steps/: $lst s)"
		fi
		c0=$(cpu_ticks)
		read -r fb t nb < <(bench_timed_first "$path")
		c1=$(cpu_ticks)
		cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$TICKS" 'BEGIN { printf "%.2f", (b - a) / hz }')
		per100=$(awk -v c="$cpu" -v b="$bytes" 'BEGIN { printf "%.2f", c * 100 / (b / 1048576) }')
		ceil=$(awk -v c="$cpu" -v b="$bytes" -v n="$NCPU" 'BEGIN { if (c <= 0) print "-"; else printf "%.0f", b / 1048576 / (c / n) }')
		rss=$(bench_hwm_mb)
		# a whole trace of a big profile streams uncached; a restart into the cache would show here
		streams=$(jq -c '.counters | {streamed, stream_restarts, stream_dropped}' "$MNT/status.json" 2>/dev/null || echo -)
		load=$(awk '{ print $1 }' /proc/loadavg)
		bench_umount "$MNT"
		rm -rf "$cache"
		cli=- ratio=- clip=- ratiop=-
		case "$v" in
		trace.json | trace.json.gz | trace.pftrace)
			cv=$v
			[ "$v" = trace.json ] && cv=trace # the CLI's name for it
			bench_drop_cache "$f" >/dev/null
			t0=$(now)
			"$DEC" "$f" --view "$cv" --host "$(basename "$HOST")" >/dev/null
			cli=$(secs "$t0" "$(now)")
			ratio=$(awk -v a="$t" -v b="$cli" 'BEGIN { if (b <= 0) print "-"; else printf "%.2f", a / b }')
			# the same with a reader process, as the mount's bytes have one
			bench_drop_cache "$f" >/dev/null
			t0=$(now)
			"$DEC" "$f" --view "$cv" --host "$(basename "$HOST")" | cat >/dev/null
			clip=$(secs "$t0" "$(now)")
			ratiop=$(awk -v a="$t" -v b="$clip" 'BEGIN { if (b <= 0) print "-"; else printf "%.2f", a / b }')
			;;
		esac
		echo "$size $v: first byte $fb s, total $t s, $nb bytes, RSS $rss MB, CPU $cpu s ($per100 s per 100 MB, ceiling $ceil MB/s), CLI $cli s (mount/CLI $ratio), CLI|cat $clip s (mount/that $ratiop), streams $streams, load $load" >&2
		printf '| %s (%s B) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$size" "$bytes" "$v" \
			"$(awk -v n="$nb" 'BEGIN { printf "%.1f", n / 1048576 }')" "$fb" "$t" \
			"$(awk -v b="$bytes" -v t="$t" 'BEGIN { if (t == "fail" || t <= 0) print "-"; else printf "%.0f", b / 1048576 / t }')" \
			"$(awk -v n="$nb" -v b="$bytes" 'BEGIN { printf "%.2f", n / b }')" "$rss" "$cpu" "$per100" "$ceil" "$cli" "$ratio" "$clip" "$ratiop" "$load" >>"$RES.tmp"
	done
	rm -rf "$logdir"
done
echo >>"$RES.tmp"
echo "Load after: $(uptime | sed 's/.*load average/load average/')" >>"$RES.tmp"
mv "$RES.tmp" "$RES"
cat "$RES"
