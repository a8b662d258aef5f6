#!/usr/bin/env bash
# bench/stats.sh - the analyses of docs/stats.md on generated profiles.
#
# Generates a TPU and a GPU profile with tools/xprofs-gen (bench/out/,
# git-ignored), then measures each view cold (the file dropped from the page
# cache first, bench_drop_cache) with /usr/bin/time: wall time and peak RSS
# of `xprofs-decode FILE --view V > /dev/null` for ops, steps, overview and
# kernels (kernels only on GPU: it does not exist on TPU hosts). Writes a
# Markdown table to bench/out/stats-results.md with the load average, and
# deletes the generated profiles at the end unless KEEP=1.
#
#   bench/stats.sh                       # 1G TPU and GPU, build dir "build"
#   BUILD=build-x SIZE=100M KINDS=gpu bench/stats.sh
#
# Targets (issue 10): each view of a 1 GiB profile < 3 s and < 64 MB RSS,
# cold; misses are marked, exit status 0 (a benchmark measures).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${BUILD:-build}
SIZE=${SIZE:-1G}
KINDS=${KINDS:-tpu gpu}
SEED=${SEED:-1}
OUT=bench/out
GEN=$BUILD/tools/xprofs-gen
DEC=$BUILD/tools/xprofs-decode
RES=$OUT/stats-results.md

for b in "$GEN" "$DEC"; do
	[ -x "$b" ] || { echo "stats.sh: $b missing (meson compile -C $BUILD)" >&2; exit 1; }
done
mkdir -p "$OUT"

bench_head "stats views, cold" "$(date -u '+%F %H:%M UTC'), $(nproc) CPUs, build $BUILD" \
	-- kind size view "wall s" "RSS MB" "load (1 min)" target >"$RES"
made=()
for kind in $KINDS; do
	f=$(bench_profile "$GEN" "$OUT" "$kind" "$SEED" "$SIZE")
	made+=("$f" "$f.stats.json")
	views="ops steps overview"
	[ "$kind" = gpu ] && views="$views kernels"
	for v in $views; do
		method=$(bench_drop_cache "$f")
		log=$(mktemp)
		set +e
		/usr/bin/time -o "$log" -f '%e %M' "$DEC" "$f" --view "$v" >/dev/null 2>"$log.err"
		rc=$?
		set -e
		load=$(cut -d' ' -f1 /proc/loadavg)
		if [ $rc -ne 0 ]; then
			row="| $kind | $SIZE | $v | fail | | $load | $(tail -c 120 "$log.err" | tr '\n|' '  ') |"
		else
			read -r t m <"$log"
			mb=$(( (m + 1023) / 1024 ))
			ok=$(awk -v t="$t" -v m="$mb" 'BEGIN { print (t < 3 && m < 64) ? "ok" : "MISS" }')
			row="| $kind | $SIZE | $v | $t | $mb | $load | < 3 s, < 64 MB: $ok ($method) |"
		fi
		rm -f "$log" "$log.err"
		echo "$row" | tee -a "$RES"
	done
done
if [ "${KEEP:-0}" != 1 ]; then
	rm -f "${made[@]}"
fi
echo "results: $RES"
