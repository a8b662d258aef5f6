#!/usr/bin/env bash
# bench/gcs.sh - xprofs' gs:// backend against rclone mount and plain curl,
# all on the same offline GCS emulator (tests/gcs/emulator) in one run.
# A benchmark, not a test: it prints and records numbers, it asserts nothing
# beyond "the bytes read are the bytes written".
#
#   bench/gcs.sh [BUILD_DIR]        (default: build)
#   OBJECTS=10000 BIG_MB=500 bench/gcs.sh build-foo
#   ONLY_READ=1 bench/gcs.sh build-foo   (skip the listing part)
#   bench/gcs.sh --quick [BUILD_DIR] [SMALL_OBJECTS] [BIG_MiB]   (defaults: build 2000 64)
#
# --quick: what one gs:// mount costs, xprofs alone: mount time (the one flat
# listing), a full tree walk (find + stat of every file: answered from
# memory), a cold sequential read of a large object, a warm re-read (memory
# blocks), a re-read after a remount (lz4 disk cache), and the GCS requests
# each step made (from status.json). Prints one line per step; needs only
# fusermount3, jq, bc, curl, node and a built xprofs; writes nothing outside
# a temporary directory. The big object is a generated GPU profile
# (BIG_DATA=random: random bytes, which nothing compresses). The cold read's
# CPU seconds per GB, the daemon's against one curl GET's, are measured in
# the same run.
# PERF_DAEMON=FILE records the machine (perf record -a -g) during the cold read;
# the daemon is the pid in status.json (perf report --pid).
#
# Otherwise:
# 1. Listing: a logdir of $OBJECTS objects (run/plugins/profile/session/
#    host.xplane.pb). `find MNT/logdir` through xprofs (mount + find) and
#    through rclone mount (--gcs-anonymous, --gcs-endpoint), and the plain
#    curl equivalent (paging the JSON listing, 1000 a page). Wall time and
#    the GCS requests each one made, counted by tests/lib/fault_proxy.py
#    (no faults) in front of the emulator.
# 2. Sequential read of a $BIG_MB MB object (dd bs=1M) through xprofs, rclone
#    and curl, straight to the emulator (no proxy: Python would be the
#    bottleneck), then a warm re-read of the same mount (xprofs' block cache
#    and the kernel page cache; rclone with its default --vfs-cache-mode off).
#    The bytes are checked with cksum (CRC, about 2 GB/s here): sha256sum
#    (about 320 MB/s) would cap every number, the local page cache's included.
#    A local 500 MB file read with O_DIRECT and from the page cache is the
#    local-disk reference.
# 3. Random reads: $RANDOM_N (300) preads of 64 KiB at seeded random offsets
#    of that object through a fresh xprofs mount with an empty disk cache.
# Results: bench/out/gcs-results.md. Needs: fusermount3, rclone, curl, jq,
# node + tests/gcs/setup-emulator.sh, /usr/bin/python3, a built xprofs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
QUICK=0
case "${1:-}" in
--quick) QUICK=1; shift ;;
-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
-*) echo "usage: bench/gcs.sh [--quick] [BUILD_DIR] (--quick: [SMALL_OBJECTS] [BIG_MiB])" >&2; exit 2 ;;
esac
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
XPROFS="$BUILD/fs/xprofs"
OBJECTS=${OBJECTS:-10000}
BIG_MB=${BIG_MB:-500}
OUT="$ROOT/bench/out"
RES=${RES:-"$OUT/gcs-results.md"}

if [ $QUICK = 1 ]; then
	tools="fusermount3 curl jq bc node"
else
	tools="fusermount3 rclone curl jq node /usr/bin/python3"
fi
bench_need_tools $tools
bench_need_built "$BUILD" "$XPROFS"
bash "$ROOT/tests/gcs/setup-emulator.sh"

bench_emu_workdir gcs

mbps() { awk -v m="$1" -v s="$2" 'BEGIN { printf "%.0f", (s > 0 ? m / s : 0) }'; } # MB, seconds

EMU_PORT=$(EMULATOR_PARENT_PID=$$ bash "$ROOT/tests/lib/emulator.sh" start "$W/emu")
EMU=http://127.0.0.1:$EMU_PORT

# --quick: xprofs alone, the cost of each step.
quick() { # SMALL_OBJECTS BIG_MiB
	local small=$1 big_mib=$2 mnt=$W/mnt t0 t1 i d
	mkdir -p "$W/src/big/plugins/profile/s" "$mnt"
	for i in $(seq "$small"); do
		d=$W/src/run$((i % 20))/plugins/profile/s$((i % 7))
		mkdir -p "$d"
		printf 'object %d\n' "$i" >"$d/f$i.json"
	done
	# a generated GPU profile (compressible as real ones are), or BIG_DATA=random
	if [ "${BIG_DATA:-profile}" = random ]; then
		head -c $((big_mib << 20)) /dev/urandom >"$W/src/big/plugins/profile/s/host.SSTABLE"
	else
		bench_need_built "$BUILD" "$BUILD/tools/xprofs-gen"
		"$BUILD/tools/xprofs-gen" --kind gpu --size "${big_mib}M" --seed 3 -o "$W/big.pb"
		head -c $((big_mib << 20)) "$W/big.pb" >"$W/src/big/plugins/profile/s/host.SSTABLE"
		rm -f "$W/big.pb"
	fi
	STORAGE_EMULATOR_HOST=$EMU node "$ROOT/tests/gcs/emulator/seed.js" "$W/src" gs://bench/logs >/dev/null
	MOUNTS+=("$mnt")
	qreqs() { jq -c '.store.requests' "$mnt/status.json"; }
	qmount() {
		local t0 t1
		t0=$(now)
		"$XPROFS" gs://bench/logs "$mnt" -o "endpoint=$EMU,anonymous,cache_dir=$W/cache" # daemonises once mounted
		t1=$(now)
		printf 'mount (%d objects listed)            %6.3f s  %s\n' $((small + 1)) "$(echo "$t1 - $t0" | bc)" "$(qreqs)"
	}
	qread() { # LABEL: read the big object, print time, MB/s, requests
		local t0 t1
		t0=$(now); cat "$mnt/logdir/big/plugins/profile/s/host.SSTABLE" >/dev/null; t1=$(now)
		printf '%-38s %6.3f s  %s MB/s  %s\n' "$1" "$(echo "$t1 - $t0" | bc)" \
			"$(echo "scale=1; $big_mib / ($t1 - $t0)" | bc)" "$(qreqs)"
	}
	qmount
	t0=$(now); find "$mnt/logdir" -type f -printf '%s\n' >/dev/null; t1=$(now)
	printf '%-38s %6.3f s  %s\n' "walk: find + stat of every file" "$(echo "$t1 - $t0" | bc)" "$(qreqs)"
	# CPU seconds per GB of the cold read: the daemon's (utime + stime from
	# /proc, its threads included) against one curl GET's, in the same run
	# (issue: at most 1.5x curl's)
	local pid tick c0 c1 dcpu ccpu
	pid=$(jq -r '.pid' "$mnt/status.json")
	tick=$(getconf CLK_TCK)
	local perf_pid=""
	if [ -n "${PERF_DAEMON:-}" ]; then # perf record of the daemon during the cold read
		perf record -q -g -F 999 -a -o "$PERF_DAEMON" 2>/dev/null &
		perf_pid=$!
		sleep 0.5 # perf's start has no event to wait on; a few missed samples are fine
	fi
	c0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	qread "cold read of $big_mib MiB"
	c1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	if [ -n "$perf_pid" ]; then
		kill -INT "$perf_pid"
		wait "$perf_pid" || true
		echo "perf: $PERF_DAEMON, the daemon is pid $pid"
	fi
	dcpu=$(echo "scale=3; ($c1 - $c0) / $tick" | bc)
	ccpu=$( { /usr/bin/time -f '%U %S' curl -sf -o /dev/null \
		"$EMU/storage/v1/b/bench/o/logs%2Fbig%2Fplugins%2Fprofile%2Fs%2Fhost.SSTABLE?alt=media"; } 2>&1 |
		awk '{ print $1 + $2 }')
	printf '%-38s daemon %s s/GB, curl %s s/GB, ratio %s\n' "cold read CPU per GB" \
		"$(echo "scale=2; $dcpu * 1024 / $big_mib" | bc)" "$(echo "scale=2; $ccpu * 1024 / $big_mib" | bc)" \
		"$(echo "scale=2; if ($ccpu > 0) $dcpu / $ccpu else 0" | bc)"
	# curl keeping the object on disk, as the daemon keeps it in its disk
	# cache: -o a file beside the cache (the conditions of issue 26's own
	# curl figure, taken when /dev/null on the test VM was a regular file)
	local fcpu
	fcpu=$( { /usr/bin/time -f '%U %S' curl -sf -o "$W/curl.out" \
		"$EMU/storage/v1/b/bench/o/logs%2Fbig%2Fplugins%2Fprofile%2Fs%2Fhost.SSTABLE?alt=media"; } 2>&1 |
		awk '{ print $1 + $2 }')
	rm -f "$W/curl.out"
	printf '%-38s daemon %s s/GB, curl -o file %s s/GB, ratio %s\n' "cold read CPU per GB, kept on disk" \
		"$(echo "scale=2; $dcpu * 1024 / $big_mib" | bc)" "$(echo "scale=2; $fcpu * 1024 / $big_mib" | bc)" \
		"$(echo "scale=2; if ($fcpu > 0) $dcpu / $fcpu else 0" | bc)"
	qread "warm re-read (same mount)"
	fusermount3 -u "$mnt"
	sleep 0.5
	qmount
	qread "re-read after remount (disk cache)"
	t0=$(now); curl -sf -o /dev/null "$EMU/storage/v1/b/bench/o/logs%2Fbig%2Fplugins%2Fprofile%2Fs%2Fhost.SSTABLE?alt=media"; t1=$(now)
	printf '%-38s %6.3f s  %s MB/s\n' "reference: one curl GET of the object" "$(echo "$t1 - $t0" | bc)" \
		"$(echo "scale=1; $big_mib / ($t1 - $t0)" | bc)"
	jq -c '.store.blocks' "$mnt/status.json"
}
if [ $QUICK = 1 ]; then
	quick "${2:-2000}" "${3:-64}"
	exit 0
fi

mkdir -p "$OUT"
/usr/bin/python3 "$ROOT/tests/lib/fault_proxy.py" --upstream "$EMU" --parent-pid $$ >"$W/proxy.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do grep -q '^ready' "$W/proxy.out" && break; sleep 0.1; done
PROXY=http://127.0.0.1:$(awk '/^ready/{print $2}' "$W/proxy.out")
reqs() { curl -s "$PROXY/_proxy/stats" | jq -r '.requests'; }
reset_reqs() { curl -s -X POST "$PROXY/_proxy/reset-stats" >/dev/null; }

wait_mount() { # MNT PID
	local i
	for i in $(seq 600); do
		mountpoint -q "$1" && return 0
		kill -0 "$2" 2>/dev/null || { echo "mount of $1 failed" >&2; return 1; }
		sleep 0.05
	done
	return 1
}
xprofs_mount() { # URL ENDPOINT MNT [opts]
	mkdir -p "$3"
	"$XPROFS" "$1" "$3" -f -o "endpoint=$2,anonymous,cache_dir=$W/xcache,cache_max=4G${4:+,$4}" \
		>>"$W/xprofs.log" 2>&1 &
	PIDS+=($!)
	MOUNTS+=("$3")
	wait_mount "$3" $!
}
rclone_mount() { # BUCKET/PATH ENDPOINT MNT
	mkdir -p "$3"
	rclone mount ":gcs:$1" "$3" --gcs-anonymous --gcs-endpoint "$2/storage/v1/" \
		--gcs-no-check-bucket --read-only --log-file "$W/rclone.log" &
	PIDS+=($!)
	MOUNTS+=("$3")
	wait_mount "$3" $!
}
umount_wait() { fusermount3 -u "$1"; sleep 0.5; }

nx=- x_mount=- x_find=- x_total=- x_req=- x_find2=- x_req2=-
nr=- r_mount=- r_find=- r_total=- r_req=- r_find2=- r_req2=- nc=- c_total=- c_req=-
if [ "${ONLY_READ:-0}" != 1 ]; then
echo "== seeding $OBJECTS objects"
SRC="$W/src"
/usr/bin/python3 - "$SRC" "$OBJECTS" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
runs = max(1, n // 100)
i = 0
while i < n:
    run, sess, host = i // 100, (i // 5) % 20, i % 5
    d = os.path.join(root, "run%03d" % run, "plugins", "profile", "2025_01_01_00_%02d_00" % sess)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "host%d.xplane.pb" % host), "wb") as f:
        f.write(rng.randbytes(rng.randint(100, 4000)))
    i += 1
EOF
t0=$(now)
STORAGE_EMULATOR_HOST=$EMU node "$ROOT/tests/gcs/emulator/seed.js" "$SRC" gs://bench/logs --concurrency 32
echo "seeded in $(secs "$t0" "$(now)") s"

echo "== listing: find over $OBJECTS objects"
# listing X MNT DIR MOUNT_CMD...: time MOUNT_CMD (the listing may happen at
# mount time, so mount + find are timed together), then `find DIR` twice;
# sets nX, X_mount, X_find, X_total, X_req, X_find2, X_req2, then unmounts.
listing() {
	local x=$1 mnt=$2 dir=$3 t0 t1 t2
	shift 3
	reset_reqs
	t0=$(now)
	"$@"
	t1=$(now)
	printf -v "n$x" %s "$(find "$dir" -type f | wc -l)"
	t2=$(now)
	printf -v "${x}_mount" %s "$(secs "$t0" "$t1")"
	printf -v "${x}_find" %s "$(secs "$t1" "$t2")"
	printf -v "${x}_total" %s "$(secs "$t0" "$t2")"
	printf -v "${x}_req" %s "$(reqs)"
	reset_reqs
	t0=$(now)
	find "$dir" -type f >/dev/null
	printf -v "${x}_find2" %s "$(secs "$t0" "$(now)")"
	printf -v "${x}_req2" %s "$(reqs)"
	umount_wait "$mnt"
}
listing x "$W/mx" "$W/mx/logdir" xprofs_mount gs://bench/logs "$PROXY" "$W/mx"
listing r "$W/mr" "$W/mr" rclone_mount bench/logs "$PROXY" "$W/mr"

reset_reqs
t0=$(now)
nc=0 tok=""
while :; do
	page=$(curl -s "$PROXY/storage/v1/b/bench/o?prefix=logs/&maxResults=1000&fields=items(name,size,generation),nextPageToken${tok:+&pageToken=$(jq -rn --arg t "$tok" '$t|@uri')}")
	nc=$((nc + $(jq '.items | length' <<<"$page")))
	tok=$(jq -r '.nextPageToken // empty' <<<"$page")
	[ -n "$tok" ] || break
done
c_total=$(secs "$t0" "$(now)"); c_req=$(reqs)
echo "xprofs: $nx files, mount $x_mount s + find $x_find s, $x_req requests; again $x_find2 s, $x_req2 requests"
echo "rclone: $nr files, mount $r_mount s + find $r_find s, $r_req requests; again $r_find2 s, $r_req2 requests"
echo "curl:   $nc objects, $c_total s, $c_req requests"
fi

echo "== sequential read of a $BIG_MB MB object"
head -c "$((BIG_MB * 1000 * 1000))" /dev/urandom >"$W/big.bin"
curl -s -o /dev/null -w '' -X POST --data-binary @"$W/big.bin" \
	"$EMU/upload/storage/v1/b/bench/o?uploadType=media&name=big/big.bin"
want=$(cksum <"$W/big.bin" | cut -d' ' -f1)
sync
ddread() { # FILE -> "seconds crc"
	local t0 t1 sum
	t0=$(now)
	sum=$(dd if="$1" bs=1M status=none | cksum | cut -d' ' -f1)
	t1=$(now)
	echo "$(secs "$t0" "$t1") $sum"
}
check_sum() { [ "$1" = "$want" ] || { echo "bench/gcs.sh: $2 read wrong bytes" >&2; exit 1; }; }

# Requests for the reads are counted by the emulator itself (/_emulator/stats).
ereqs() { curl -s "$EMU/_emulator/stats" | jq -r '.requests'; }
since() { echo $(($(ereqs) - $1 - 1)); } # minus the stats request itself

xprofs_mount gs://bench/big "$EMU" "$W/bx"
e0=$(ereqs); read -r x_cold s <<<"$(ddread "$W/bx/logdir/big.bin")"; check_sum "$s" "xprofs"; x_cold_n=$(since "$e0")
e0=$(ereqs); read -r x_warm s <<<"$(ddread "$W/bx/logdir/big.bin")"; check_sum "$s" "xprofs (warm)"; x_warm_n=$(since "$e0")
umount_wait "$W/bx"
xprofs_mount gs://bench/big "$EMU" "$W/bx2"
e0=$(ereqs); read -r x_remount s <<<"$(ddread "$W/bx2/logdir/big.bin")"; check_sum "$s" "xprofs (remount)"; x_remount_n=$(since "$e0")
umount_wait "$W/bx2"

# Random reads: $RANDOM_N preads of 64 KiB at seeded random offsets of the
# same object, through a fresh mount with an empty disk cache (each one a
# miss: what a viewer jumping around a big profile costs).
RANDOM_N=${RANDOM_N:-300}
rm -rf "$W/xcache"
xprofs_mount gs://bench/big "$EMU" "$W/bx3"
e0=$(ereqs)
x_rand=$(/usr/bin/python3 - "$W/bx3/logdir/big.bin" "$RANDOM_N" <<'EOF'
import os, random, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
rng = random.Random(5)
offs = [rng.randrange(0, size - 65536) for _ in range(int(sys.argv[2]))]
t0 = time.monotonic()
for off in offs:
    assert len(os.pread(fd, 65536, off)) == 65536
print("%.3f" % (time.monotonic() - t0))
EOF
)
x_rand_n=$(since "$e0")
umount_wait "$W/bx3"

rclone_mount bench/big "$EMU" "$W/br"
e0=$(ereqs); read -r r_cold s <<<"$(ddread "$W/br/big.bin")"; check_sum "$s" "rclone"; r_cold_n=$(since "$e0")
e0=$(ereqs); read -r r_warm s <<<"$(ddread "$W/br/big.bin")"; check_sum "$s" "rclone (warm)"; r_warm_n=$(since "$e0")
umount_wait "$W/br"

t0=$(now)
s=$(curl -s "$EMU/storage/v1/b/bench/o/big%2Fbig.bin?alt=media" | cksum | cut -d' ' -f1)
c_read=$(secs "$t0" "$(now)"); check_sum "$s" "curl"

# The local-disk reference: the same bytes from a local file, uncached
# (O_DIRECT) and from the page cache.
t0=$(now)
s=$(dd if="$W/big.bin" bs=1M iflag=direct status=none | cksum | cut -d' ' -f1)
l_cold=$(secs "$t0" "$(now)"); check_sum "$s" "local (O_DIRECT)"
cat "$W/big.bin" >/dev/null
read -r l_warm s <<<"$(ddread "$W/big.bin")"; check_sum "$s" "local (page cache)"
rm -f "$W/big.bin"

MB=$BIG_MB
{
	echo "# GCS backend benchmark ($(date -u +%Y-%m-%dT%H:%MZ))"
	echo
	echo "Machine: $(nproc) CPUs, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM;" \
		"emulator: firebase-tools StorageEmulator via tests/gcs/emulator/launch.js on loopback;" \
		"rclone $(rclone version | head -1 | awk '{print $2}'); $("$XPROFS" -V 2>&1 | head -1)."
	echo
	echo "## find over $OBJECTS objects (requests counted at tests/lib/fault_proxy.py)"
	echo
	echo "| client | files seen | mount s | find s | total s | GCS requests | find again s | requests again |"
	echo "|---|---|---|---|---|---|---|---|"
	echo "| xprofs | $nx | $x_mount | $x_find | $x_total | $x_req | $x_find2 | $x_req2 |"
	echo "| rclone mount | $nr | $r_mount | $r_find | $r_total | $r_req | $r_find2 | $r_req2 |"
	echo "| curl (paged JSON listing) | $nc | - | - | $c_total | $c_req | - | - |"
	echo
	echo "## sequential read of one $MB MB object (dd bs=1M, cksum checked), straight to the emulator"
	echo
	echo "| client | cold s | cold MB/s | requests | warm re-read s | warm MB/s | requests |"
	echo "|---|---|---|---|---|---|---|"
	echo "| xprofs | $x_cold | $(mbps "$MB" "$x_cold") | $x_cold_n | $x_warm | $(mbps "$MB" "$x_warm") | $x_warm_n |"
	echo "| xprofs after remount (disk block cache) | $x_remount | $(mbps "$MB" "$x_remount") | $x_remount_n | - | - | - |"
	echo "| rclone mount | $r_cold | $(mbps "$MB" "$r_cold") | $r_cold_n | $r_warm | $(mbps "$MB" "$r_warm") | $r_warm_n |"
	echo "| curl | $c_read | $(mbps "$MB" "$c_read") | 1 | - | - | - |"
	echo "| local file (O_DIRECT cold, page cache warm) | $l_cold | $(mbps "$MB" "$l_cold") | - | $l_warm | $(mbps "$MB" "$l_warm") | - |"
	echo
	echo "## random reads: $RANDOM_N preads of 64 KiB at seeded random offsets of the same object (fresh mount, empty cache)"
	echo
	echo "| client | s | reads/s | requests |"
	echo "|---|---|---|---|"
	echo "| xprofs | $x_rand | $(awk -v n="$RANDOM_N" -v s="$x_rand" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }') | $x_rand_n |"
	echo
	echo "The emulator (Node, one process) bounds every cold number; the ratios matter more than the MB/s."
} >"$RES"
cat "$RES"
