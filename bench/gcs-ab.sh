#!/usr/bin/env bash
# bench/gcs-ab.sh - cold sequential reads of one gs:// object through two
# xprofs builds and plain curl, interleaved round by round on one emulator,
# so that a loaded machine's swings hit all three alike. A benchmark, not a
# test: it prints numbers and checks only that the bytes read are the
# bytes written (cksum).
#
#   bench/gcs-ab.sh BUILD_A BUILD_B [ROUNDS] [MB]      (defaults: 6 rounds, 300 MB)
#
# Each round: a fresh mount of BUILD_A (empty disk cache, as bench/gcs.sh
# mounts: cache_dir, cache_max=4G) reads the object with dd bs=1M | cksum,
# then one curl GET of it; then the same for BUILD_B. Prints per round the
# MB/s, the GETs the mount made (status.json) and xprofs/curl, and the
# medians at the end. Needs fusermount3, curl, jq, bc, node +
# tests/gcs/setup-emulator.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: bench/gcs-ab.sh BUILD_A BUILD_B [ROUNDS] [MB]" >&2; exit 2; }
A=$1 B=$2 N=${3:-6} MB=${4:-300}
for b in "$A" "$B"; do [ -x "$b/fs/xprofs" ] || { echo "bench/gcs-ab.sh: $b/fs/xprofs not built" >&2; exit 1; }; done
bash "$ROOT/tests/gcs/setup-emulator.sh" >/dev/null
W=$(mktemp -d /tmp/xprofs-bench-ab.XXXXXX)
cleanup() {
	for m in "$W"/m*; do [ -d "$m" ] && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true; }; done
	bash "$ROOT/tests/lib/emulator.sh" stop "$W/emu" || true
	rm -rf "$W"
}
trap cleanup EXIT
EMU=http://127.0.0.1:$(EMULATOR_PARENT_PID=$$ bash "$ROOT/tests/lib/emulator.sh" start "$W/emu")
head -c $((MB * 1000 * 1000)) /dev/urandom >"$W/big.bin"
curl -s -o /dev/null -X POST --data-binary @"$W/big.bin" "$EMU/upload/storage/v1/b/bench/o?uploadType=media&name=big/big.bin"
want=$(cksum <"$W/big.bin" | cut -d' ' -f1)
rm -f "$W/big.bin"
n=0
xread() { # BUILD -> "MB/s GETs"
	local t0 t1 s g
	n=$((n + 1))
	mkdir -p "$W/m$n"
	"$1/fs/xprofs" gs://bench/big "$W/m$n" -f -o "endpoint=$EMU,anonymous,cache_dir=$W/c$n,cache_max=4G" >"$W/x$n.log" 2>&1 &
	for _ in $(seq 600); do mountpoint -q "$W/m$n" && break; sleep 0.05; done
	t0=$(date +%s.%N)
	s=$(dd if="$W/m$n/logdir/big.bin" bs=1M status=none | cksum | cut -d' ' -f1)
	t1=$(date +%s.%N)
	[ "$s" = "$want" ] || { echo "bench/gcs-ab.sh: $1 read wrong bytes" >&2; exit 1; }
	g=$(jq -r '.store.requests.get' "$W/m$n/status.json")
	fusermount3 -u "$W/m$n"
	rm -rf "$W/c$n"
	echo "$(echo "$MB / ($t1 - $t0)" | bc) $g"
}
cread() {
	local t0 t1 s
	t0=$(date +%s.%N)
	s=$(curl -s "$EMU/storage/v1/b/bench/o/big%2Fbig.bin?alt=media" | cksum | cut -d' ' -f1)
	t1=$(date +%s.%N)
	[ "$s" = "$want" ] || { echo "bench/gcs-ab.sh: curl read wrong bytes" >&2; exit 1; }
	echo "$MB / ($t1 - $t0)" | bc
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
ra=() rb=() xa=() xb=()
for i in $(seq "$N"); do
	l=$(cut -d' ' -f1 /proc/loadavg)
	read -r ax ag <<<"$(xread "$A")"; ac=$(cread)
	read -r bx bg <<<"$(xread "$B")"; bc_=$(cread)
	ra+=("$(echo "scale=3; $ax / $ac" | bc)") rb+=("$(echo "scale=3; $bx / $bc_" | bc)") xa+=("$ax") xb+=("$bx")
	echo "round $i (load $l): A $ax MB/s ($ag GETs), curl $ac, ratio ${ra[-1]} | B $bx MB/s ($bg GETs), curl $bc_, ratio ${rb[-1]}"
done
echo "A ($A): median $(printf '%s\n' "${xa[@]}" | median) MB/s, xprofs/curl median $(printf '%s\n' "${ra[@]}" | median)"
echo "B ($B): median $(printf '%s\n' "${xb[@]}" | median) MB/s, xprofs/curl median $(printf '%s\n' "${rb[@]}" | median)"
