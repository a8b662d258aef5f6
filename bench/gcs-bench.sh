#!/usr/bin/env bash
# bench/gcs-bench.sh - what a gs:// mount costs, against the offline emulator:
# mount time (the one flat listing), a full tree walk (find + stat of every
# file: answered from memory), a cold sequential read of a large object, a
# warm re-read (memory blocks), a re-read after a remount (lz4 disk cache),
# and the GCS requests each step made (from status.json).
#
#   bench/gcs-bench.sh [BUILD_DIR] [SMALL_OBJECTS] [BIG_MiB]    # defaults: build 2000 64
# Needs /dev/fuse, the emulator (tests/gcs/setup-emulator.sh) and a built
# BUILD_DIR/fs/xprofs. Prints one line per step; writes nothing outside a
# temporary directory.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
SMALL=${2:-2000}
BIG_MIB=${3:-64}
XP=$BUILD/fs/xprofs
W=$(mktemp -d /tmp/xprofs-gcs-bench.XXXXXX)
MNT=$W/mnt
cleanup() {
	fusermount3 -u "$MNT" 2>/dev/null || true
	"$ROOT/tests/gcs/emulator.sh" stop "$W/emu" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT
PORT=$("$ROOT/tests/gcs/emulator.sh" start "$W/emu")
EP=http://127.0.0.1:$PORT
mkdir -p "$W/src/big/plugins/profile/s" "$MNT"
for i in $(seq "$SMALL"); do
	d=$W/src/run$((i % 20))/plugins/profile/s$((i % 7))
	mkdir -p "$d"
	printf 'object %d\n' "$i" >"$d/f$i.json"
done
head -c $((BIG_MIB << 20)) /dev/urandom >"$W/src/big/plugins/profile/s/host.SSTABLE"
STORAGE_EMULATOR_HOST=$EP node "$ROOT/tests/gcs/emulator/seed.js" "$W/src" gs://bench/logs >/dev/null

now() { date +%s.%N; }
reqs() { jq -c '.store.requests' "$MNT/status.json"; }
mount_it() {
	local t0 t1
	t0=$(now)
	"$XP" gs://bench/logs "$MNT" -o "endpoint=$EP,anonymous,cache_dir=$W/cache" # daemonises once mounted
	t1=$(now)
	printf 'mount (%d objects listed)            %6.3f s  %s\n' $((SMALL + 1)) "$(echo "$t1 - $t0" | bc)" "$(reqs)"
}
step() { # LABEL CMD...
	local label=$1 t0 t1; shift
	t0=$(now)
	"$@" >/dev/null
	t1=$(now)
	printf '%-38s %6.3f s  %s\n' "$label" "$(echo "$t1 - $t0" | bc)" "$(reqs)"
}
mb_s() { echo "scale=1; $BIG_MIB / ($2 - $1)" | bc; }

mount_it
step "walk: find + stat of every file" find "$MNT/logdir" -type f -printf '%s\n'
t0=$(now); cat "$MNT/logdir/big/plugins/profile/s/host.SSTABLE" >/dev/null; t1=$(now)
printf '%-38s %6.3f s  %s MB/s  %s\n' "cold read of $BIG_MIB MiB" "$(echo "$t1 - $t0" | bc)" "$(mb_s "$t0" "$t1")" "$(reqs)"
t0=$(now); cat "$MNT/logdir/big/plugins/profile/s/host.SSTABLE" >/dev/null; t1=$(now)
printf '%-38s %6.3f s  %s MB/s  %s\n' "warm re-read (same mount)" "$(echo "$t1 - $t0" | bc)" "$(mb_s "$t0" "$t1")" "$(reqs)"
fusermount3 -u "$MNT"
sleep 0.5
mount_it
t0=$(now); cat "$MNT/logdir/big/plugins/profile/s/host.SSTABLE" >/dev/null; t1=$(now)
printf '%-38s %6.3f s  %s MB/s  %s\n' "re-read after remount (disk cache)" "$(echo "$t1 - $t0" | bc)" "$(mb_s "$t0" "$t1")" "$(reqs)"
t0=$(now); curl -sf -o /dev/null "$EP/storage/v1/b/bench/o/logs%2Fbig%2Fplugins%2Fprofile%2Fs%2Fhost.SSTABLE?alt=media"; t1=$(now)
printf '%-38s %6.3f s  %s MB/s\n' "reference: one curl GET of the object" "$(echo "$t1 - $t0" | bc)" "$(mb_s "$t0" "$t1")"
jq -c '.store.blocks' "$MNT/status.json"
