#!/usr/bin/env bash
# The suite on a loaded machine: scripts/test.sh RUNS times in a row (default
# 3) in one clean clone of HEAD while OTHERS more clones (default 2) run it in
# a loop beside it, so the measured runs share the machine with two whole
# suites (mounts, emulators, compilers, fuzzers) from start to end.
#
#   scripts/loaded-proof.sh [DIR]     # DIR: where the clones go (default /tmp/xprofs-loaded)
#
# Each clone gets ../shared (a symlink to this checkout's ../shared, when there
# is one) and, when this checkout has them, the GCS emulator's npm packages, so
# no clone waits on the network. Prints one line per measured run (exit status,
# seconds, its "tests:" line) and the load average seen every 30 s (min, median,
# max); logs stay in DIR. Exit status: 0 when every measured run passed.
# Needs about RUNS x 3 x one suite's time: ~90 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
DIR=${1:-/tmp/xprofs-loaded}
RUNS=${RUNS:-3}
OTHERS=${OTHERS:-2}

rm -rf "$DIR"
mkdir -p "$DIR"
clone() { # $1 = name: a clean clone of HEAD at $DIR/$1/xprofs
	mkdir -p "$DIR/$1"
	git clone -q "$SRC" "$DIR/$1/xprofs"
	[ -d "$SRC/../shared" ] && ln -s "$(cd "$SRC/.." && pwd)/shared" "$DIR/$1/shared"
	if [ -d "$SRC/tests/gcs/emulator/node_modules" ]; then
		cp -r "$SRC/tests/gcs/emulator/node_modules" "$DIR/$1/xprofs/tests/gcs/emulator/"
	fi
}
clone measured
for i in $(seq "$OTHERS"); do clone "other$i"; done

stop=$DIR/stop
pids=()
for i in $(seq "$OTHERS"); do
	# its own session, so that it can be stopped whole when the measured runs end
	# shellcheck disable=SC2016 # the inner script expands its own arguments
	setsid bash -c 'cd "$1/other$2/xprofs" && n=0 &&
		while [ ! -e "$3" ]; do
			n=$((n + 1))
			bash scripts/test.sh >"$1/other$2.$n.log" 2>&1 || true
		done' loaded "$DIR" "$i" "$stop" &
	pids+=($!)
done
(while [ ! -e "$stop" ]; do
	cut -d' ' -f1 /proc/loadavg >>"$DIR/load.txt"
	sleep 30 # a sampling period, not a wait for anything
done) &
sampler=$!

status=0
for r in $(seq "$RUNS"); do
	start=$SECONDS
	rc=0
	(cd "$DIR/measured/xprofs" && bash scripts/test.sh) >"$DIR/measured.$r.log" 2>&1 || rc=$?
	[ "$rc" = 0 ] || status=1
	echo "run $r: exit $rc, $((SECONDS - start)) s, $(grep '^tests:' "$DIR/measured.$r.log" | tail -1)"
done
touch "$stop"
# The other copies are cut off mid-run: their last log is partial.
for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
wait "${pids[@]}" "$sampler" 2>/dev/null || true
# their daemons died with them: lazily unmount what is left of their mounts
awk '$3 ~ /^fuse/ {print $2}' /proc/mounts | while read -r m; do
	stat "$m" >/dev/null 2>&1 || fusermount3 -uz "$m" 2>/dev/null || true
done
sort -n "$DIR/load.txt" | awk '{v[NR] = $1} END {
	if (NR) printf "load average (1 min), %d samples: min %s, median %s, max %s\n",
		NR, v[1], v[int((NR + 1) / 2)], v[NR] }'
for i in $(seq "$OTHERS"); do
	echo "other$i: whole runs: $(grep -h '^tests:' "$DIR"/other"$i".*.log | tr '\n' ';')"
done
exit "$status"
