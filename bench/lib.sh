# bench/lib.sh - shell helpers the benchmark scripts share (sourced).
#
#   now                         # wall clock, seconds with nanoseconds
#   secs T0 T1                  # T1 - T0, two decimals
#   bench_drop_cache FILE       # drop FILE from the page cache: drop_caches when
#                               # permitted, else posix_fadvise(DONTNEED); prints
#                               # the method used (drop_caches, fadvise or none)
#   bench_profile GEN OUT KIND SEED SIZE
#                               # prints OUT/KIND-SIZE-sSEED.xplane.pb, made with
#                               # xprofs-gen (and its --stats JSON) when missing
#   bench_cold_min FILE... -- CMD...
#                               # the fastest of REPEAT cold runs of CMD (stdout
#                               # dropped, each FILE dropped from the page cache
#                               # before each run) under /usr/bin/time; prints
#                               # "wall_s rss_mb method 0", or after a failing run
#                               # "fail 0 method rc" and the tail of its stderr
#   bench_head TITLE LINE... -- COLUMN...
#                               # a results file's head: "# TITLE", the LINEs of
#                               # context between blank lines, then the Markdown
#                               # table header with COLUMNs
#   bench_profile_set           # the generated profiles decode.sh, mount.sh and
#                               # trace.sh measure, unless set: SIZES (100M 1G),
#                               # KIND (tpu), SEED (1)
#   bench_cold_set KINDS RESULTS
#                               # for the cold view timings (memory.sh, stats.sh),
#                               # unless set: BUILD (build), SIZE (1G), KINDS
#                               # (KINDS), SEED (1), REPEAT (1); then bench_paths
#                               # RESULTS, exit 1 unless GEN and DEC are built
#   bench_paths RESULTS         # after cd to the tree root, with BUILD set: OUT
#                               # (bench/out, made), RES=OUT/RESULTS and the
#                               # programs of BUILD: GEN (xprofs-gen), DEC
#                               # (xprofs-decode), XPROFS (the daemon); all
#                               # absolute paths
#   bench_need_built BUILD FILE...
#                               # exit 1 unless every FILE is an executable
#                               # (the message names the script and BUILD)
#   bench_need_fuse             # exit 1 without /dev/fuse and fusermount3
#   bench_need_tools TOOL...    # exit 1 unless every TOOL is on PATH
#   bench_emu_workdir NAME      # a new temp dir W=/tmp/xprofs-bench-NAME.* for
#                               # the gs:// benchmarks, with an EXIT trap that
#                               # unmounts every MOUNTS entry, kills every PIDS
#                               # entry, stops the emulator in W/emu, removes W
#   bench_mount_setup NAME      # for the scripts that read generated profiles
#                               # through a mount (after bench_paths): exit 1
#                               # unless GEN and XPROFS are built and FUSE is
#                               # there; MNT=/tmp/xprofs-bench-NAME.*, empty
#   bench_logdir PROFILE LOGDIR # LOGDIR made: run "bench", one session, host
#                               # "host0" holding PROFILE (bench_link_profile);
#                               # sets HOST, that host's folder under MNT
#   bench_link_profile PROFILE DEST
#                               # PROFILE at DEST (its directories made), hard-
#                               # linked, or copied across filesystems
#   bench_mount XPROFS SOURCE MNT LOG [ARG...]
#                               # the daemon in the foreground (-f), in the
#                               # background, output appended to LOG; sets
#                               # BENCH_PID; returns once MNT is mounted (polled,
#                               # at most 20 s), fails if the daemon exits first
#   bench_mount_args NAME XPROFS LABEL PROFILE
#                               # the by-hand scripts' arguments: usage (exit 2)
#                               # unless XPROFS runs and PROFILE is a file; sets
#                               # BIN, LABEL, PROF and calls bench_mount_one
#   bench_mount_one XPROFS PROFILE NAME
#                               # a new temp dir W=/tmp/xprofs-bench-NAME.*: a
#                               # one-host logdir around PROFILE (W/src, run r,
#                               # session s1, host h) mounted on W/mnt with an
#                               # empty cache W/cache, the daemon's log in W/log
#   bench_umount MNT            # unmount MNT and wait for the daemon
#   bench_mount_cleanup MNT     # for an EXIT trap: unmount if still mounted,
#                               # wait for the daemon, remove the empty MNT
#   bench_hwm_mb                # the daemon's peak RSS (VmHWM), MB, or "?"
#   bench_timed_first PATH      # reads PATH in 128 KiB reads like cat; prints
#                               # "first_byte_s total_s bytes" ("fail fail 0")
# Benchmarks measure; they assert nothing beyond "the bytes read are right".

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

bench_drop_cache() {
	if sync && echo 3 2>/dev/null >/proc/sys/vm/drop_caches; then
		echo drop_caches
	elif /usr/bin/python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$1"; then
		echo fadvise
	else
		echo none
	fi
}

bench_profile() {
	local gen=$1 out=$2 kind=$3 seed=$4 size=$5 f
	f=$out/$kind-$size-s$seed.xplane.pb
	# a kept profile made by an older generator is made again: its output may differ
	if [ ! -s "$f" ] || [ "$gen" -nt "$f" ]; then
		echo "generating $f ..." >&2
		/usr/bin/time -f "  generated in %e s, peak RSS %M KB" "$gen" --kind "$kind" --seed "$seed" \
			--size "$size" -o "$f" --stats >"$f.stats.json"
	fi
	echo "$f"
}

bench_cold_min() {
	local best="" bm="" method="" rc=0 log files=() f t m
	while [ "$1" != -- ]; do
		files+=("$1")
		shift
	done
	shift
	log=$(mktemp)
	for _ in $(seq "$REPEAT"); do
		for f in "${files[@]}"; do method=$(bench_drop_cache "$f"); done
		set +e
		/usr/bin/time -o "$log" -f '%e %M' "$@" >/dev/null 2>"$log.err"
		rc=$?
		set -e
		[ $rc -ne 0 ] && break
		read -r t m <"$log"
		if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$t
			bm=$m
		fi
	done
	if [ $rc -ne 0 ]; then
		echo "fail 0 $method $rc $(tail -c 120 "$log.err" | tr '\n|' '  ')"
	else
		echo "$best $(( (bm + 1023) / 1024 )) $method 0"
	fi
	rm -f "$log" "$log.err"
}

bench_head() {
	echo "# $1"
	echo
	shift
	while [ "$1" != -- ]; do
		echo "$1"
		shift
	done
	shift
	echo
	printf '|'
	printf ' %s |' "$@"
	printf '\n|'
	printf -- '---|%.0s' "$@"
	printf '\n'
}

bench_profile_set() {
	SIZES=${SIZES:-100M 1G}
	KIND=${KIND:-tpu}
	SEED=${SEED:-1}
}

bench_cold_set() {
	BUILD=${BUILD:-build}
	SIZE=${SIZE:-1G}
	KINDS=${KINDS:-$1}
	SEED=${SEED:-1}
	REPEAT=${REPEAT:-1}
	bench_paths "$2"
	bench_need_built "$BUILD" "$GEN" "$DEC"
}

bench_paths() {
	local b=$BUILD
	case "$b" in /*) ;; *) b=$PWD/$b ;; esac
	OUT=$PWD/bench/out
	RES=$OUT/$1
	GEN=$b/tools/xprofs-gen
	DEC=$b/tools/xprofs-decode
	XPROFS=$b/fs/xprofs
	mkdir -p "$OUT"
}

bench_need_built() {
	local build=$1 b
	shift
	for b in "$@"; do
		[ -x "$b" ] || { echo "$(basename "$0"): $b missing (meson compile -C $build)" >&2; exit 1; }
	done
}

bench_need_fuse() {
	if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
		echo "$(basename "$0"): needs /dev/fuse and fusermount3" >&2
		exit 1
	fi
}

bench_need_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || { echo "$(basename "$0"): $t missing" >&2; exit 1; }
	done
}

bench_emu_workdir() {
	W=$(mktemp -d "/tmp/xprofs-bench-$1.XXXXXX")
	MOUNTS=()
	PIDS=()
	trap bench_emu_cleanup EXIT
}

bench_emu_cleanup() {
	local m p
	for m in "${MOUNTS[@]}"; do fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true; done
	# before the emulator goes: a daemon still rendering would retry its reads against it
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	bash "$BENCH_DIR/../tests/lib/emulator.sh" stop "$W/emu" >/dev/null 2>&1 || true
	rm -rf "$W"
}

bench_mount_setup() {
	bench_need_built "$BUILD" "$GEN" "$XPROFS"
	bench_need_fuse
	MNT=$(mktemp -d "/tmp/xprofs-bench-$1.XXXXXX")
}

bench_logdir() {
	local session=2026_11_21_10_00_00

	bench_link_profile "$1" "$2/bench/plugins/profile/$session/host0.xplane.pb"
	HOST=$MNT/runs/bench/$session/host0
}

bench_link_profile() {
	mkdir -p "$(dirname "$2")"
	ln "$1" "$2" 2>/dev/null || cp "$1" "$2"
}

BENCH_PID=
bench_mount() {
	local bin=$1 src=$2 mnt=$3 log=$4
	shift 4
	"$bin" "$src" "$mnt" -f "$@" >>"$log" 2>&1 &
	BENCH_PID=$!
	for _ in $(seq 400); do
		grep -q " $mnt fuse" /proc/mounts && return 0
		kill -0 "$BENCH_PID" 2>/dev/null || { echo "xprofs exited; see $log" >&2; return 1; }
		sleep 0.05
	done
	echo "mount did not appear on $mnt; see $log" >&2
	return 1
}

bench_mount_args() {
	local name=$1
	shift
	if [ $# != 3 ] || [ ! -x "$1" ] || [ ! -f "$3" ]; then
		echo "usage: bench/$name.sh XPROFS_BIN LABEL PROFILE.xplane.pb" >&2
		exit 2
	fi
	BIN=$1 LABEL=$2 PROF=$3
	bench_mount_one "$BIN" "$PROF" "$name"
}

bench_mount_one() {
	W=$(mktemp -d "/tmp/xprofs-bench-$3.XXXX")
	mkdir -p "$W/mnt" "$W/cache"
	bench_link_profile "$2" "$W/src/r/plugins/profile/s1/h.xplane.pb"
	bench_mount "$1" "$W/src" "$W/mnt" "$W/log" -o cache_dir="$W/cache"
}

bench_umount() {
	fusermount3 -u "$1"
	wait "$BENCH_PID" || true
	BENCH_PID=
}

bench_mount_cleanup() {
	fusermount3 -u "$1" 2>/dev/null || true
	[ -z "$BENCH_PID" ] || wait "$BENCH_PID" 2>/dev/null || true
	BENCH_PID=
	rmdir "$1" 2>/dev/null || true
}

bench_hwm_mb() { awk '/VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$BENCH_PID/status" 2>/dev/null || echo "?"; }

bench_timed_first() {
	/usr/bin/python3 - "$1" <<'PY'
import os, sys, time
t0 = time.monotonic()
first, n = None, 0
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    while True:
        b = os.read(fd, 1 << 17)
        if first is None:
            first = time.monotonic() - t0
        if not b:
            break
        n += len(b)
except OSError:
    print("fail fail 0")
    sys.exit(0)
print("%.3f %.2f %d" % (first, time.monotonic() - t0, n))
PY
}
