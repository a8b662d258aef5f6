# tests/lib/lib.sh - helpers for the shell mount tests and benchmarks
# (sourced by bash scripts: tests/fs/mount.sh, tests/gcs/test_mount.sh,
# tests/cache/mount.sh, bench/mount-read.sh).
#
#   . "$XPROFS_SOURCE_ROOT/tests/lib/lib.sh"
#   xp_skip WHY                      # "SKIP: WHY", exit 77 (meson's skip status)
#   xp_require_fuse                  # skip without /dev/fuse or fusermount3
#   xp_workdir                       # $XP_WORK: temp dir, cleaned (and unmounted) on exit
#   xp_mount SRC MNT [xprofs args]   # start "xprofs SRC MNT -f ARGS" in the background,
#                                    # wait for the mount; $XP_PID, log in $XP_WORK/xprofs.log
#                                    # (every mount's, each after a "=== xp_mount" line)
#   xp_umount MNT                    # fusermount3 -u, wait; returns xprofs' exit status
#   xp_ok MSG CMD... / xp_okq MSG CMD... (stdout discarded) / xp_fail MSG
#                                    # a failed CMD is shown with its exit status and
#                                    # stderr; xp_fail adds $XP_WHY and the last 20
#                                    # lines of $XP_WORK/xprofs.log, then exits 1
#   xp_same MSG GOT WANT             # GOT and WANT read whole (never trusting st_size: a
#                                    # view still rendering reports 0) hold the same bytes;
#                                    # else the read's errno, both sizes, the first
#                                    # differing offset with context (tests/lib/xcheck.py)
#   xp_eventually MSG CMD...         # xp_ok, but CMD is retried until it succeeds or
#                                    # $XP_EVENTUALLY_S (default 30) seconds pass: for
#                                    # what shows after a refresh interval (never a fixed
#                                    # sleep); a timeout says how long, the command and
#                                    # what it printed and returned last
#                                    # "ok - ..." lines
#   xp_sample_logdir DIR             # runs/sessions/hosts from $XPROFS_SHARED/samples
#                                    # (returns 1 with a message when the samples are absent)
#   xp_emulator_start DIR            # the GCS emulator (tests/lib/emulator.sh), stopped
#                                    # on exit; $XP_EMU_PORT; returns 77 when not installed
#   xp_write_sstable FILE            # TensorBoard's random-access writes to an SSTABLE;
#                                    # xp_sstable_bytes prints the bytes they leave
# Output is "ok - ..." / "not ok - ..." lines; the tests use meson's exit-code
# protocol (0 pass, 1 fail, 77 skip).
# Needs XPROFS_SOURCE_ROOT and XPROFS_BUILD_ROOT (meson's test_env sets both).
set -u
XP_BIN=${XPROFS_BUILD_ROOT:?XPROFS_BUILD_ROOT not set}/fs/xprofs
XP_PID=
XP_MOUNTS=()
XP_EMU_DIR=

xp_skip() { echo "SKIP: $*"; exit 77; }

xp_require_fuse() {
	if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
		xp_skip "no /dev/fuse or fusermount3"
	fi
}

XP_WHY= # why the next xp_fail fails: printed under its "not ok" line

# xp_fail MSG: "not ok - MSG", why (XP_WHY) and the daemon's log tail, as TAP
# comments, then exit 1
xp_fail() {
	echo "not ok - $*"
	[ -n "$XP_WHY" ] && printf '%s\n' "$XP_WHY" | sed 's/^/# /'
	if [ -n "${XP_WORK:-}" ] && [ -s "$XP_WORK/xprofs.log" ]; then
		echo "# last 20 lines of $XP_WORK/xprofs.log:"
		tail -20 "$XP_WORK/xprofs.log" | sed 's/^/#   /'
	fi
	exit 1
}
xp_pass() { echo "ok - $*"; }

# xp_run_why QUIET CMD...: run CMD (in this shell), its stderr kept (and
# passed on) so that a failure can show it; QUIET=1: stdout discarded. Sets
# XP_WHY to the command, its exit status and stderr's last lines.
xp_run_why() {
	local quiet=$1 err rc
	shift
	XP_WHY=
	err=$(mktemp "${TMPDIR:-/tmp}/xp-err.XXXXXX")
	if [ "$quiet" = 1 ]; then "$@" >/dev/null 2>"$err"; else "$@" 2>"$err"; fi
	rc=$?
	if [ $rc != 0 ]; then
		XP_WHY="command: $(printf '%q ' "$@")"$'\n'"exit status: $rc"
		[ -s "$err" ] && XP_WHY+=$'\n'"stderr (last lines):"$'\n'"$(tail -10 "$err")"
	fi
	cat "$err" >&2
	rm -f "$err"
	return $rc
}
# xp_ok MSG CMD...: run CMD, pass or fail with MSG (saying how CMD failed)
xp_ok() { local m=$1; shift; if xp_run_why 0 "$@"; then xp_pass "$m"; else xp_fail "$m"; fi; }
# xp_okq MSG CMD...: the same with CMD's stdout discarded
xp_okq() { local m=$1; shift; if xp_run_why 1 "$@"; then xp_pass "$m"; else xp_fail "$m"; fi; }
# xp_same MSG GOT WANT: the two files read whole hold the same bytes
xp_same() {
	local m=$1
	if XP_WHY=$(/usr/bin/python3 "$XPROFS_SOURCE_ROOT/tests/lib/xcheck.py" same "$2" "$3" 2>&1); then
		XP_WHY=
		xp_pass "$m"
	else
		xp_fail "$m"
	fi
}
# xp_eventually MSG CMD...: CMD retried until it succeeds or XP_EVENTUALLY_S pass
xp_eventually() {
	local m=$1 lim=${XP_EVENTUALLY_S:-30} t0=$SECONDS out rc
	shift
	while :; do
		out=$("$@" 2>&1)
		rc=$?
		[ $rc = 0 ] && break
		if [ $((SECONDS - t0)) -ge "$lim" ]; then
			XP_WHY="waited $((SECONDS - t0)) s (limit XP_EVENTUALLY_S=$lim) for: $(printf '%q ' "$@")"
			XP_WHY+=$'\n'"last try: exit status $rc, "
			if [ -n "$out" ]; then
				XP_WHY+="output (last lines):"$'\n'"$(printf '%s\n' "$out" | tail -10)"
			else
				XP_WHY+="no output"
			fi
			xp_fail "$m (still false after $lim s)"
		fi
		sleep 0.1
	done
	[ -n "$out" ] && printf '%s\n' "$out"
	xp_pass "$m"
}

xp_cleanup() {
	local m
	for m in "${XP_MOUNTS[@]}"; do fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true; done
	[ -n "$XP_PID" ] && kill "$XP_PID" 2>/dev/null
	[ -n "$XP_EMU_DIR" ] && { "$XPROFS_SOURCE_ROOT/tests/lib/emulator.sh" stop "$XP_EMU_DIR" >/dev/null 2>&1 || true; }
	[ -n "${XP_WORK:-}" ] && rm -rf "$XP_WORK"
	return 0
}

xp_workdir() {
	XP_WORK=$(mktemp -d /tmp/xprofs-test.XXXXXX)
	trap xp_cleanup EXIT
}

xp_mount() {
	local src=$1 mnt=$2 i; shift 2
	# one log for all the test's mounts: a line says where each one starts
	echo "=== xp_mount $src $mnt $*" >>"$XP_WORK/xprofs.log"
	"$XP_BIN" "$src" "$mnt" -f "$@" >>"$XP_WORK/xprofs.log" 2>&1 &
	XP_PID=$!
	XP_MOUNTS+=("$mnt")
	for i in $(seq 100); do
		if grep -q " $mnt fuse" /proc/mounts 2>/dev/null; then return 0; fi
		kill -0 "$XP_PID" 2>/dev/null || { wait "$XP_PID"; xp_fail "xprofs exited early ($?)"; }
		sleep 0.1
	done
	xp_fail "mount of $mnt did not appear"
}

xp_umount() {
	local mnt=$1 rc i
	# wait until the kernel has released what was closed (xmount.wait_released())
	for i in $(seq 300); do
		[ -e "$mnt/status.json" ] || break
		jq -e '(.open.dirs // 0) <= 0 and (.open.files // 0) <= 0' "$mnt/status.json" \
			>/dev/null 2>&1 && break
		sleep 0.1
	done
	fusermount3 -u "$mnt" || return 1
	wait "$XP_PID"; rc=$?
	XP_PID=
	return $rc
}

xp_sample_logdir() {
	local d=$1 s=${XPROFS_SHARED:-}/samples
	if [ ! -d "$s" ]; then
		echo "# samples absent ($s): skipping the real-profile part"
		return 1
	fi
	mkdir -p "$d/tpu/plugins/profile/2025_01_01_00_00_00" \
		"$d/gpu/gemm/plugins/profile/sess1" "$d/gpu/gemm/plugins/profile/sess2" \
		"$d/gpu/conv/plugins/profile" "$d/cpu/plugins/profile/s" "$d/plugins/profile/rootsess"
	cp "$s/tpu_v6e_jax/tpu_inference_2.xplane.pb" "$d/tpu/plugins/profile/2025_01_01_00_00_00/"
	cp "$s/gpu_mi300_jax_gemm/tw003.xplane.pb" "$d/gpu/gemm/plugins/profile/sess1/"
	cp "$s/gpu_mi300_jax_gemm/tw003.xplane.pb" "$d/gpu/gemm/plugins/profile/sess2/hostA.xplane.pb"
	cp "$s/cpu_only_jax/tw003.xplane.pb" "$d/gpu/gemm/plugins/profile/sess2/hostB.xplane.pb"
	cp -r "$s/gpu_mi300_jax_conv_session" "$d/gpu/conv/plugins/profile/conv_session"
	cp "$s/cpu_only_jax/tw003.xplane.pb" "$d/cpu/plugins/profile/s/"
	cp "$s/synthetic_minimal/test.xplane.pb" "$s/synthetic_edge_cases/edge.xplane.pb" \
		"$d/plugins/profile/rootsess/"
	return 0
}

xp_emulator_start() {
	local rc
	XP_EMU_DIR=$1
	XP_EMU_PORT=$("$XPROFS_SOURCE_ROOT/tests/lib/emulator.sh" start "$XP_EMU_DIR")
	rc=$?
	[ $rc = 0 ] || XP_EMU_DIR=
	return $rc
}

xp_write_sstable() {
	/usr/bin/python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.pwrite(fd, b"B" * 70000, 100000)
os.pwrite(fd, b"A" * 10, 0)
assert os.pread(fd, 10, 0) == b"A" * 10
assert os.fstat(fd).st_size == 170000, os.fstat(fd).st_size
os.close(fd)
PY
}

xp_sstable_bytes() {
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(b"A" * 10 + b"\0" * 99990 + b"B" * 70000)'
}
