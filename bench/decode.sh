#!/usr/bin/env bash
# bench/decode.sh - decode benchmarks of xprofs-decode on generated profiles.
#
# Generates TPU-shaped profiles with tools/xprofs-gen (cached in bench/out/,
# git-ignored), then for each file measures wall time and peak RSS
# (/usr/bin/time -f '%e %M') of:
#   cat FILE > /dev/null                    (read baseline)
#   xprofs-decode FILE --view summary
#   xprofs-decode FILE --track <busiest>    (the line with most events)
#   xprofs-decode FILE --view ops
#   xprofs-decode FILE --view trace         (output to /dev/null)
#   xprofs-decode FILE --unpack             (whole-message protobuf_c baseline,
#                                            under an address-space cap)
# each cold (the file's pages dropped from the page cache first: drop_caches
# when permitted, else posix_fadvise(DONTNEED) on the file) and warm, and
# writes a markdown table to bench/out/decode-results.md.
#
#   bench/decode.sh                      # 100M and 1G, build dir "build"
#   BUILD=build-x SIZES="10M 100M" KIND=gpu bench/decode.sh
#   UNPACK_CAP_MB=6144                   # --unpack address-space cap
#
# Not a test: it prints numbers and checks them against the targets
# (ops of 1 GB < 10 s and < 256 MB RSS; trace >= 100 MB/s of input;
# summary and one track of 1 GB < 2 s), marking misses, exit status 0.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${BUILD:-build}
bench_profile_set
UNPACK_CAP_MB=${UNPACK_CAP_MB:-6144}
bench_paths decode-results.md

bench_need_built "$BUILD" "$GEN" "$DEC"

# run_one CMD... : sets T (s) and M (peak RSS KB), or T=fail
run_one() {
	local log rc
	log=$(mktemp)
	set +e
	/usr/bin/time -o "$log" -f '%e %M' "$@" >/dev/null 2>"$log.err"
	rc=$?
	set -e
	if [ $rc -ne 0 ]; then
		T=fail M=$(awk 'END{print $2}' "$log" 2>/dev/null || echo 0)
		ERR=$(tail -c 200 "$log.err" | tr '\n' ' ')
	else
		read -r T M <"$log"
		ERR=
	fi
	rm -f "$log" "$log.err"
}

mbps() { # bytes seconds
	awk -v b="$1" -v t="$2" 'BEGIN { if (t == "fail") print "-"; else if (t <= 0) print ">" int(b/1048576/0.01); else printf "%.0f", b/1048576/t }'
}

target_note() { # op sizebytes T M
	local op=$1 bytes=$2 t=$3 m=$4 note=""
	[ "$t" = fail ] && { echo "FAILED"; return; }
	local gb; gb=$(awk -v b="$bytes" 'BEGIN { print (b >= 900*1048576) ? 1 : 0 }')
	case $op in
	ops)
		if [ "$gb" = 1 ]; then
			note=$(awk -v t="$t" -v m="$m" 'BEGIN { s = (t < 10 ? "ok" : "MISS") " <10 s"; s = s ", " (m < 262144 ? "ok" : "MISS") " <256 MB"; print s }')
		fi ;;
	trace)
		note=$(awk -v b="$bytes" -v t="$t" 'BEGIN { r = t > 0 ? b/1048576/t : 1e9; print (r >= 100 ? "ok" : "MISS") " >=100 MB/s" }') ;;
	summary|track)
		if [ "$gb" = 1 ]; then
			note=$(awk -v t="$t" 'BEGIN { print (t < 2 ? "ok" : "MISS") " <2 s" }')
		fi ;;
	esac
	echo "$note"
}

bench_head "xprofs-decode benchmark" \
	"$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo) RAM, build \`$BUILD\` ($(meson introspect --buildoptions "$BUILD" 2>/dev/null | /usr/bin/python3 -c 'import json,sys; o={x["name"]:x["value"] for x in json.load(sys.stdin)}; print(o.get("buildtype","?"), "b_sanitize=" + str(o.get("b_sanitize","?")))' 2>/dev/null || echo '?'))," \
	"profiles: \`xprofs-gen --kind $KIND --seed $SEED --size N\`. Cold = file dropped from the page cache first." \
	-- file events op "cold s" "cold MB/s" "cold RSS MB" "warm s" "warm MB/s" "warm RSS MB" target \
	>"$RES.tmp"

for size in $SIZES; do
	f=$(bench_profile "$GEN" "$OUT" "$KIND" "$SEED" "$size")
	bytes=$(stat -c %s "$f")
	events=$(jq '.files[0].events' "$f.stats.json" 2>/dev/null || echo '?')
	# the busiest track, from the decoder's own summary
	track=$("$DEC" "$f" --view summary | jq -r '[.planes[] as $p | $p.lines[] | {f: ($p.file + "/" + .file), e: .events}] | max_by(.e) | .f')
	for op in cat summary track ops trace unpack; do
		case $op in
		cat) cmd=(cat "$f") ;;
		summary) cmd=("$DEC" "$f" --view summary) ;;
		track) cmd=("$DEC" "$f" --track "$track") ;;
		ops) cmd=("$DEC" "$f" --view ops) ;;
		trace) cmd=("$DEC" "$f" --view trace) ;;
		unpack) cmd=(prlimit --as=$((UNPACK_CAP_MB * 1048576)) "$DEC" "$f" --unpack) ;;
		esac
		method=$(bench_drop_cache "$f")
		run_one "${cmd[@]}"; ct=$T cm=$M cerr=$ERR
		run_one "${cmd[@]}"; wt=$T wm=$M
		note=$(target_note "$op" "$bytes" "$wt" "$wm")
		[ "$op" = unpack ] && [ "$wt" = fail ] && note="failed under a ${UNPACK_CAP_MB} MB address-space cap"
		[ "$op" = track ] && note="$note (\`$track\`)"
		printf '| %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
			"$size" "$bytes" "$events" "$op" "$ct" "$(mbps "$bytes" "$ct")" "$((cm / 1024))" \
			"$wt" "$(mbps "$bytes" "$wt")" "$((wm / 1024))" "$note" >>"$RES.tmp"
		echo "$size $op: cold $ct s ($method) $((cm / 1024)) MB, warm $wt s $((wm / 1024)) MB $note ${cerr:+[$cerr]}" >&2
	done
done
mv "$RES.tmp" "$RES"
cat "$RES"
