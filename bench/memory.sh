#!/usr/bin/env bash
# bench/memory.sh - memory_profile.json (docs/memory.md) of generated profiles, cold.
#
# Generates one profile per kind with tools/xprofs-gen (bench/out/, git-ignored;
# its host plane carries the generator's allocator traffic), drops it from the
# page cache and measures `xprofs-decode FILE --view memory_profile >
# /dev/null` with bench_cold_min: wall time and peak RSS, the fastest of
# REPEAT cold runs (other work only adds time). Writes a Markdown
# table to bench/out/memory-results.md; deletes the profiles unless KEEP=1.
#
#   bench/memory.sh                      # 1G gpu and tpu, build dir "build"
#   SIZE=100M KINDS=cpu REPEAT=3 KEEP=1 bench/memory.sh
#
# Target (issue 24): a 1 GiB profile < 3 s cold and < 128 MB RSS; misses are
# marked, exit status 0 (a benchmark measures).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_cold_set "gpu tpu" memory-results.md
bench_head "memory_profile.json, cold" "$(date -u '+%F %H:%M UTC'), $(nproc) CPUs, build $BUILD" \
	-- kind size "memory events" "wall s" "RSS MB" "load (1 min)" target >"$RES"
made=()
for kind in $KINDS; do
	f=$(bench_profile "$GEN" "$OUT" "$kind" "$SEED" "$SIZE")
	made+=("$f" "$f.stats.json")
	events=$(jq '[.files[0].memory[].events] | add // 0' "$f.stats.json")
	read -r best mb method rc rest <<<"$(bench_cold_min "$f" -- "$DEC" "$f" --view memory_profile)"
	ok=$(awk -v t="$best" -v m="$mb" 'BEGIN { print (t < 3 && m < 128) ? "ok" : "MISS" }')
	[ "$rc" = 0 ] || ok="FAIL (exit $rc: $rest)"
	echo "| $kind | $SIZE | $events | $best | $mb | $(cut -d' ' -f1 /proc/loadavg) | < 3 s, < 128 MB: $ok ($method, min of $REPEAT) |" >>"$RES"
done
cat "$RES"
[ "${KEEP:-0}" = 1 ] || rm -f "${made[@]}"
