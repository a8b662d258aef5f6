#!/usr/bin/env bash
# bench/shared.sh - the shared view cache (-o shared_cache=gs://BUCKET/PREFIX):
# what the first read of a view costs a mount that renders it, and a second
# mount (empty local cache) that fetches it from the bucket instead.
# A benchmark, not a test: it prints and records numbers; it asserts only
# that both mounts read the same bytes.
#
#   bench/shared.sh [BUILD_DIR]              (default: build)
#   SIZE=1G VIEWS="ops.json trace.json" bench/shared.sh
#
# One generated TPU profile of $SIZE (default 100M) is seeded into the
# offline emulator (tests/gcs/emulator) as gs://bkt/logs/run/plugins/profile/
# s1/host0.xplane.pb. Mount A (cold local cache, shared_cache=gs://bkt/shared)
# reads each of $VIEWS once: a render, which reads the profile from the
# bucket, then uploads the view after the render (waited for before the next
# step, not timed). The first view pays for the profile's download and its
# index; later ones reuse both (kept indexes, docs/fs.md), as a person
# browsing one host does. trace.json is not shared: both mounts render it. Mount B (another empty local cache, same options) reads
# the same views: each a shared hit. For each view and mount: wall time of
# `cat VIEW >/dev/null` (from open to EOF), the daemon's CPU seconds
# (utime+stime from /proc), and the GCS requests it made (status.json:
# store.requests.get for the profile, shared_cache.store.requests.get and
# .upload for the shared objects), plus the view's size and the shared
# object's size. Results: bench/out/shared-results.md. Needs fusermount3,
# jq, node (tests/gcs/setup-emulator.sh) and a built xprofs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
case "${1:-}" in
-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
XPROFS="$BUILD/fs/xprofs"
GEN="$BUILD/tools/xprofs-gen"
SIZE=${SIZE:-100M}
VIEWS=${VIEWS:-"ops.json summary.json steps.json overview.json overview.svg trace.json.gz trace.pftrace trace.json"}
OUT="$ROOT/bench/out"
RES=${RES:-"$OUT/shared-results.md"}
bench_need_tools fusermount3 jq node
bench_need_built "$BUILD" "$XPROFS"
bash "$ROOT/tests/gcs/setup-emulator.sh" >/dev/null
mkdir -p "$OUT"

bench_emu_workdir shared

PROF=$(bench_profile "$GEN" "$OUT" tpu 1 "$SIZE")
mkdir -p "$W/src/run/plugins/profile/s1"
ln "$PROF" "$W/src/run/plugins/profile/s1/host0.xplane.pb" 2>/dev/null ||
	cp "$PROF" "$W/src/run/plugins/profile/s1/host0.xplane.pb"
EMU_PORT=$(EMULATOR_PARENT_PID=$$ bash "$ROOT/tests/lib/emulator.sh" start "$W/emu")
EMU=http://127.0.0.1:$EMU_PORT
STORAGE_EMULATOR_HOST=$EMU node "$ROOT/tests/gcs/emulator/seed.js" "$W/src" gs://bkt/logs >/dev/null

# mount NAME: a foreground daemon on $W/NAME with its own cache; sets PID
mount_one() {
	local m=$W/$1
	mkdir -p "$m"
	"$XPROFS" gs://bkt/logs "$m" -f -o "endpoint=$EMU,anonymous,cache_dir=$W/cache-$1,shared_cache=gs://bkt/shared" \
		>"$W/$1.log" 2>&1 &
	PID=$!
	MOUNTS+=("$m")
	PIDS+=("$PID")
	for _ in $(seq 600); do mountpoint -q "$m" && return 0; sleep 0.1; done
	echo "bench/shared.sh: mount $1 did not appear" >&2
	cat "$W/$1.log" >&2
	exit 1
}
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; } # seconds, 3 decimals
cpu() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat"; } # utime + stime, s (USER_HZ 100)
st() { jq -r "$2" "$W/$1/status.json"; }

H=run/s1/host0
declare -A TA CA GA SA TB CB GB SB BYTES OBJ
mount_one a
PA=$PID
for v in $VIEWS; do
	g0=$(st a .store.requests.get) s0=$(st a .shared_cache.store.requests.get) c0=$(cpu $PA)
	t0=$(now)
	cat "$W/a/runs/$H/$v" >"$W/a-$v"
	t1=$(now)
	TA[$v]=$(ms "$t0" "$t1")
	# the upload runs after the render, off the reader's path: wait until every
	# lookup that found nothing has had its upload (trace.json has no lookup)
	for _ in $(seq 1200); do
		[ "$(st a '.shared_cache | .upload_queued == 0 and .uploads + .upload_exists + .upload_errors >= .misses + .rejects + .fetch_errors + .skipped')" = true ] && break
		sleep 0.05
	done
	CA[$v]=$(awk -v a="$c0" -v b="$(cpu $PA)" 'BEGIN { printf "%.2f", b - a }')
	GA[$v]=$(($(st a .store.requests.get) - g0))
	SA[$v]=$(($(st a .shared_cache.store.requests.get) - s0))
	BYTES[$v]=$(stat -c %s "$W/a-$v")
done
UPLOADED=$(st a .shared_cache.bytes_uploaded)
fusermount3 -u "$W/a"
mount_one b
PB=$PID
for v in $VIEWS; do
	g0=$(st b .store.requests.get) s0=$(st b .shared_cache.store.requests.get) c0=$(cpu $PB)
	b0=$(st b .shared_cache.bytes_fetched)
	t0=$(now)
	cat "$W/b/runs/$H/$v" >"$W/b-$v"
	t1=$(now)
	TB[$v]=$(ms "$t0" "$t1")
	CB[$v]=$(awk -v a="$c0" -v b="$(cpu $PB)" 'BEGIN { printf "%.2f", b - a }')
	GB[$v]=$(($(st b .store.requests.get) - g0))
	SB[$v]=$(($(st b .shared_cache.store.requests.get) - s0))
	OBJ[$v]=$(($(st b .shared_cache.bytes_fetched) - b0))
	cmp -s "$W/a-$v" "$W/b-$v" || { echo "bench/shared.sh: $v differs between the mounts" >&2; exit 1; }
done
HITS=$(st b .shared_cache.hits) RENDERS=$(st b .counters.renders)
fusermount3 -u "$W/b"

{
	bench_head "Shared view cache: render (mount A) vs fetch from the bucket (mount B)" \
		"$(date -u +%F) $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); profile $(basename "$PROF") ($(stat -c %s "$PROF") bytes) in the emulator." \
		"A: cold local cache, renders (reading the profile from the bucket), then uploads (not timed). B: another cold local cache, fetches. CPU = the daemon's utime+stime." \
		"Mount B: $HITS shared hits, $RENDERS renders. Mount A uploaded $UPLOADED bytes of shared objects." \
		-- view "view bytes" "shared object bytes" "A: render s" "A: CPU s" "A: GETs profile / shared" "B: fetch s" "B: CPU s" "B: GETs profile / shared" "speed-up"
	for v in $VIEWS; do
		echo "| $v | ${BYTES[$v]} | ${OBJ[$v]} | ${TA[$v]} | ${CA[$v]} | ${GA[$v]} / ${SA[$v]} | ${TB[$v]} | ${CB[$v]} | ${GB[$v]} / ${SB[$v]} | $(awk -v a="${TA[$v]}" -v b="${TB[$v]}" 'BEGIN { if (b < 0.001) b = 0.001; printf "%.1fx", a / b }') |"
	done
} | tee "$RES"
