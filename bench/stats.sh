#!/usr/bin/env bash
# bench/stats.sh - the analyses of docs/stats.md on generated profiles.
#
# Generates a TPU and a GPU profile with tools/xprofs-gen (bench/out/,
# git-ignored), then measures each view cold (the file dropped from the page
# cache first, bench_drop_cache) with /usr/bin/time: wall time and peak RSS
# of `xprofs-decode FILE --view V > /dev/null` for ops, steps, overview,
# hlo_stats, roofline, op_profile, framework_op_stats, memory_profile,
# memory_viewer, memory.svg and kernels (kernels only on GPU: it does not exist on
# TPU hosts). Then the
# session summary.json (`xprofs-decode DIR --session`) of a generated session
# of SESSION_HOSTS hosts x SESSION_SIZE (TPU: steps on every device plane),
# every host file dropped from the page cache first. Each measurement is
# taken REPEAT times (cold each time) and the fastest run reported, since
# other work on the machine only ever adds time. Writes a Markdown table to
# bench/out/stats-results.md with the load average, and deletes the
# generated profiles at the end unless KEEP=1.
#
#   bench/stats.sh                       # 1G TPU and GPU, 8 x 100M session, build dir "build"
#   BUILD=build-x SIZE=100M KINDS=gpu SESSION_HOSTS=0 bench/stats.sh
#   REPEAT=3 KEEP=1 bench/stats.sh       # min of 3, keep the profiles for the next run
#   VIEWS="op_profile steps" bench/stats.sh   # only those views
#   BEFORE=/tmp/old-build bench/stats.sh # also that build's xprofs-decode, run by turns
#                                        # with this one (same load), in a "before s" column
#
# Targets (issue 10): each view of a 1 GiB profile < 3 s and < 64 MB RSS,
# cold; the session summary of 8 x 100 MB < 10 s cold; misses are marked,
# exit status 0 (a benchmark measures). bench/stats-ir.sh counts
# instructions instead (callgrind), which other work does not disturb.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_cold_set "tpu gpu" stats-results.md
SESSION_HOSTS=${SESSION_HOSTS:-8}
SESSION_SIZE=${SESSION_SIZE:-100M}
SESSION_KIND=${SESSION_KIND:-tpu}
BEFORE=${BEFORE:-}

bench_head "stats views, cold" "$(date -u '+%F %H:%M UTC'), $(nproc) CPUs, build $BUILD${BEFORE:+, before: $BEFORE}" \
	-- kind size view "wall s" "RSS MB" "load (1 min)" target "before s" >"$RES"
made=()

row() { # kind size view target_s before_s result...
	local kind=$1 size=$2 v=$3 target=$4 before=$5 t mb method rc rest load ok
	shift 5
	read -r t mb method rc rest <<<"$*"
	load=$(cut -d' ' -f1 /proc/loadavg)
	if [ "$rc" != 0 ]; then
		echo "| $kind | $size | $v | fail | | $load | $rest | $before |"
		return
	fi
	ok=$(awk -v t="$t" -v m="$mb" -v T="$target" 'BEGIN { print (t < T && m < 64) ? "ok" : "MISS" }')
	echo "| $kind | $size | $v | $t | $mb | $load | < $target s, < 64 MB: $ok ($method, min of $REPEAT) | $before |"
}

# timed FILES... -- ARGS...: bench_cold_min of this build's xprofs-decode ARGS; with BEFORE,
# that build's too, by turns (REPEAT rounds of one run each), so both see the same load.
# Prints "before_s result..." (before_s "-" without BEFORE).
timed() {
	local files=() a b t bt="" r="" rep=$REPEAT
	while [ "$1" != -- ]; do
		files+=("$1")
		shift
	done
	shift
	if [ -z "$BEFORE" ]; then
		echo "- $(bench_cold_min "${files[@]}" -- "$DEC" "$@")"
		return
	fi
	REPEAT=1
	for _ in $(seq "$rep"); do
		b=$(bench_cold_min "${files[@]}" -- "$BEFORE/tools/xprofs-decode" "$@")
		a=$(bench_cold_min "${files[@]}" -- "$DEC" "$@")
		t=${b%% *}
		if [ -z "$bt" ] || awk -v x="$t" -v y="$bt" 'BEGIN { exit !(x < y) }'; then bt=$t; fi
		if [ -z "$r" ] || awk -v x="${a%% *}" -v y="${r%% *}" 'BEGIN { exit !(x < y) }'; then r=$a; fi
	done
	REPEAT=$rep
	echo "$bt $r"
}

for kind in $KINDS; do
	f=$(bench_profile "$GEN" "$OUT" "$kind" "$SEED" "$SIZE")
	made+=("$f" "$f.stats.json")
	views="ops steps overview hlo_stats roofline op_profile framework_op_stats memory_profile memory_viewer memory.svg"
	[ "$kind" = gpu ] && views="$views kernels"
	views=${VIEWS:-$views}
	for v in $views; do
		row "$kind" "$SIZE" "$v" 3 $(timed "$f" -- "$f" --view "$v") | tee -a "$RES"
	done
done
if [ "$SESSION_HOSTS" -gt 0 ]; then
	sd=$OUT/session-$SESSION_KIND-${SESSION_HOSTS}x$SESSION_SIZE
	dir=$sd/r/plugins/profile/s
	if [ ! -d "$dir" ]; then
		echo "generating $dir ..." >&2
		"$GEN" --kind "$SESSION_KIND" --seed "$SEED" --size "$SESSION_SIZE" \
			--hosts "$SESSION_HOSTS" --logdir "$sd" --run r --session s >/dev/null
	fi
	row "$SESSION_KIND session" "${SESSION_HOSTS}x$SESSION_SIZE" summary.json 10 \
		$(timed "$dir"/*.xplane.pb -- "$dir" --session) | tee -a "$RES"
	[ "${KEEP:-0}" != 1 ] && rm -rf "$sd"
fi
if [ "${KEEP:-0}" != 1 ]; then
	rm -f "${made[@]}"
fi
echo "results: $RES"
