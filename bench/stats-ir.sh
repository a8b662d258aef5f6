#!/usr/bin/env bash
# bench/stats-ir.sh - instructions executed (callgrind "Ir") per stats view:
# a number that, unlike wall time, does not move with the machine's load, so
# that a change's effect can be measured on a busy machine.
#
# Generates a TPU and a GPU profile of SIZE (default 100M) and a TPU session
# of 4 hosts x SESSION_SIZE (default 20M) with tools/xprofs-gen in bench/out/
# (kept for the next run), then runs `valgrind --tool=callgrind` on
# `xprofs-decode --threads 1 FILE --view V` for ops, steps, overview (and
# kernels on GPU), and on the session summary. One thread: the count is then
# the work done, whatever the thread allowance. Writes a Markdown table to
# bench/out/stats-ir.md.
#
#   bench/stats-ir.sh                     # build dir "build"
#   BUILD=build-x SIZE=20M bench/stats-ir.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${BUILD:-build}
SIZE=${SIZE:-100M}
SESSION_SIZE=${SESSION_SIZE:-20M}
SEED=${SEED:-2}
bench_paths stats-ir.md

command -v valgrind >/dev/null || { echo "stats-ir.sh: valgrind missing" >&2; exit 1; }
bench_need_built "$BUILD" "$GEN" "$DEC"

# ir CMD...: the instructions callgrind counted for CMD
ir() {
	local log
	log=$(mktemp)
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>"$log" || true
	grep -o 'Collected : [0-9]*' "$log" | awk '{ print $3 }'
	rm -f "$log"
}

bench_head "stats views, instructions (callgrind Ir, 1 thread)" \
	"$(date -u '+%F %H:%M UTC'), build $BUILD, $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
	-- kind size view Ir >"$RES"
for kind in tpu gpu; do
	f=$(bench_profile "$GEN" "$OUT" "$kind" "$SEED" "$SIZE")
	views="summary ops steps overview"
	[ "$kind" = gpu ] && views="$views kernels"
	for v in $views; do
		echo "| $kind | $SIZE | $v | $(ir "$DEC" --threads 1 "$f" --view "$v") |" | tee -a "$RES"
	done
done
sd=$OUT/session-tpu-4x$SESSION_SIZE-s$SEED
dir=$sd/r/plugins/profile/s
[ -d "$dir" ] || "$GEN" --kind tpu --seed "$SEED" --size "$SESSION_SIZE" --hosts 4 \
	--logdir "$sd" --run r --session s >/dev/null
echo "| tpu session | 4x$SESSION_SIZE | summary.json | $(ir "$DEC" --threads 1 "$dir" --session) |" |
	tee -a "$RES"
echo "results: $RES"
