#!/usr/bin/env bash
# bench/session.sh - the session-wide views of docs/stats.md ("Session ops",
# "Compare") on generated sessions.
#
# Generates two sessions "a" and "b" of HOSTS hosts x SIZE each with
# tools/xprofs-gen (bench/out/session-logdir/, git-ignored), then measures
# with /usr/bin/time, cold (every host file dropped from the page cache
# first, bench_drop_cache) and warm: wall time and peak RSS of
# `xprofs-decode b --session` (summary.json), `--session --view ops`, and
# `--compare a b --view ops|steps`. Writes a Markdown table to
# bench/out/session-results.md with the load average; deletes the logdir
# unless KEEP=1.
#
#   bench/session.sh                        # 8 hosts x 100M, TPU, build dir "build"
#   HOSTS=4 SIZE=25M KIND=gpu bench/session.sh
#
# Target (issue 10): a session of 8 hosts x 100 MB, summary.json < 10 s
# cold; the others are reported against the same mark. Exit status 0 (a
# benchmark measures).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${BUILD:-build}
HOSTS=${HOSTS:-8}
SIZE=${SIZE:-100M}
KIND=${KIND:-tpu}
bench_paths session-results.md
LD=$OUT/session-logdir

bench_need_built "$BUILD" "$GEN" "$DEC"
P=$LD/r/plugins/profile
for s in a b; do
	if [ ! -d "$P/$s" ]; then
		echo "generating session $s: $HOSTS x $SIZE $KIND ..." >&2
		seed=1
		[ $s = b ] && seed=2
		"$GEN" --kind "$KIND" --hosts "$HOSTS" --size "$SIZE" --seed $seed --logdir "$LD" \
			--run r --session $s >/dev/null
	fi
done

drop_all() {
	local f m=none
	for f in "$P"/*/*.xplane.pb; do
		m=$(bench_drop_cache "$f")
	done
	echo "$m"
}

bench_head "session views" "$(date -u '+%F %H:%M UTC'), $(nproc) CPUs, build $BUILD, $HOSTS hosts x $SIZE $KIND per session" \
	-- view cache "wall s" "RSS MB" "load (1 min)" "< 10 s" >"$RES"
while IFS='|' read -r name args; do
	for cache in cold warm; do
		method=warm
		[ $cache = cold ] && method=$(drop_all)
		log=$(mktemp)
		set +e
		# shellcheck disable=SC2086 # the arguments are words
		/usr/bin/time -o "$log" -f '%e %M' "$DEC" $args >/dev/null 2>"$log.err"
		rc=$?
		set -e
		load=$(cut -d' ' -f1 /proc/loadavg)
		if [ $rc -ne 0 ]; then
			row="| $name | $cache | fail | | $load | $(tail -c 120 "$log.err" | tr '\n|' '  ') |"
		else
			read -r t m <"$log"
			ok=$(awk -v t="$t" 'BEGIN { print t < 10 ? "ok" : "MISS" }')
			row="| $name | $cache | $t | $(( (m + 1023) / 1024 )) | $load | $ok ($method) |"
		fi
		rm -f "$log" "$log.err"
		echo "$row" | tee -a "$RES"
	done
done <<EOF
summary.json|$P/b --session
ops.json|$P/b --session --view ops
compare/a/ops.json|--compare $P/a $P/b --view ops
compare/a/steps.json|--compare $P/a $P/b --view steps
EOF
if [ "${KEEP:-0}" != 1 ]; then
	rm -rf "$LD"
fi
echo "results: $RES"
