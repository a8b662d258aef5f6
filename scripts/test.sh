#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what it needs,
# checks the sources' format (scripts/check-format.sh),
# builds twice (plain gcc -Werror; clang ASan+UBSan with the libFuzzer
# targets), runs unit and integration tests (real /dev/fuse mounts, a real
# GCS emulator, a real gRPC peer) in both, then runs every libFuzzer target
# for a bounded time (FUZZ_SECONDS each, beside the ASan tests).
#
#   scripts/test.sh                # everything
#   FUZZ_SECONDS=0 scripts/test.sh # skip fuzzing
#   XPROFS_TEST_QUICK=1 ...        # plain build only (no ASan pass)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
TEST_JOBS=${XPROFS_TEST_JOBS:-6}
START=$SECONDS
LAST=$SECONDS
phase() { # $1 = what just finished: prints its wall time
	echo "time: $1 $((SECONDS - LAST)) s (total $((SECONDS - START)) s)"
	LAST=$SECONDS
}

bash scripts/setup-debian.sh
bash tests/gcs/setup-emulator.sh
bash tests/decode/setup-jsreader.sh
phase setup

# Checks that pass in the plain build are remembered for the ASan build's
# run of the same test: tests/lib/xproto.py verdict(). Fresh for every run.
XPROFS_VERDICT_CACHE=$(mktemp -d /tmp/xprofs-verdicts.XXXXXX)
export XPROFS_VERDICT_CACHE
trap 'rm -rf "$XPROFS_VERDICT_CACHE"' EXIT

passed=0 failed=0 skipped=0
count_results() { # $1 = build dir
	local log="$1/meson-logs/testlog.json"
	[ -f "$log" ] || return 0
	local p f s
	p=$(jq -s '[.[] | select(.result=="OK" or .result=="EXPECTEDFAIL")] | length' "$log")
	f=$(jq -s '[.[] | select(.result=="FAIL" or .result=="TIMEOUT" or .result=="ERROR" or .result=="UNEXPECTEDPASS")] | length' "$log")
	s=$(jq -s '[.[] | select(.result=="SKIP")] | length' "$log")
	# meson shows a TAP test's stderr only; its "not ok" lines and the
	# "# ..." comments after them (the why) are in its stdout.
	jq -r 'select(.result=="FAIL" or .result=="TIMEOUT" or .result=="ERROR")
		| "--- \(.name) (\(.result)): its failed checks",
		  (reduce ((.stdout // "") | splits("\n")) as $x ({keep: false, out: []};
			if ($x | startswith("not ok")) then .keep = true | .out += [$x]
			elif .keep and ($x | startswith("#")) then .out += [$x]
			else .keep = false end) | .out[:120][])' "$log" 2>/dev/null || true
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	echo "suite $1: $p passed, $f failed, $s skipped"
}

setup_build() { # $1 = build dir, rest = meson setup args
	local dir=$1; shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >/dev/null
	fi
}

run_tests() { # $1 = build dir (compiled)
	# Most integration tests wait on mounts, servers and deadlines rather than
	# compute, so more of them than cores run at once (none depends on being
	# alone: ports are ephemeral, each test has its own scratch directory).
	# A test's meson timeout is a guard against hangs, set for an idle
	# machine; three times that leaves room for a loaded one (two more
	# copies of the suite beside it: scripts/loaded-proof.sh).
	meson test -C "$1" --no-rebuild --print-errorlogs --num-processes "$TEST_JOBS" \
		--timeout-multiplier "${XPROFS_TIMEOUT_MULTIPLIER:-3}" || true
	count_results "$1"
	phase "tests in $1"
}

# The sources must be formatted as .clang-format says (clang-format -i FILE).
if bash scripts/check-format.sh; then
	echo "format: ok"; passed=$((passed + 1))
else
	echo "format: FAILED (the files above; fix with clang-format -i)"; failed=$((failed + 1))
fi
phase "format check"

setup_build build --werror
meson compile -C build
phase "plain build"
# The sanitizer build compiles while the plain tests run: those mostly wait
# (on mounts, servers, deadlines), which leaves the CPU to the compiler. It is
# one clang build for both jobs: ASan+UBSan tests and the libFuzzer targets
# (a second, fuzz-only build would compile every library again).
bg_pid=
bg_log=$(mktemp)
if [ -z "${XPROFS_TEST_QUICK:-}" ] || [ "$FUZZ_SECONDS" != 0 ]; then
	CC=clang setup_build build-asan --werror -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false
	meson compile -C build-asan >"$bg_log" 2>&1 &
	bg_pid=$!
fi
run_tests build
if [ -n "$bg_pid" ] && ! wait "$bg_pid"; then
	cat "$bg_log"
	echo "build of build-asan: FAILED"
	echo
	echo "tests: $passed passed, $((failed + 1)) failed, $skipped skipped"
	exit 1
fi
rm -f "$bg_log"
phase "sanitizer build (after the plain tests)"
# The fuzz targets run one at a time beside the ASan tests, at the lowest CPU
# priority: they take the time the tests leave idle while they wait on mounts
# and servers, and add next to nothing to the suite's wall time. Each runs for
# FUZZ_SECONDS of wall time; its line says how many inputs it ran. Alone
# (XPROFS_TEST_QUICK), two at a time, one per core. Logs and results go to a
# private directory, so copies of the suite can run side by side.
fuzz_one() { # $1 = target binary, $2 = results dir; prints one result line
	local f=$1 name corpus work runs
	name=$(basename "$f")
	corpus="tests/fuzz/corpus/${name#fuzz-}"
	work=$(mktemp -d)
	[ -d "$corpus" ] && cp -r "$corpus/." "$work/"
	if "$f" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=10 \
		-print_final_stats=1 "$work" >"$2/$name.log" 2>&1; then
		runs=$(grep -o 'number_of_executed_units: *[0-9]*' "$2/$name.log" | grep -o '[0-9]*$' || true)
		echo "fuzz $name: ok ($FUZZ_SECONDS s, ${runs:-?} inputs)"
	else
		echo "fuzz $name: FAILED"; tail -40 "$2/$name.log"
	fi
	rm -rf "$work"
}
fuzz_all() { # $1 = results dir, $2 = targets at a time
	local n=0 f targets
	targets=$(find build-asan/tests -type f -name 'fuzz-*' -executable | sort)
	if [ -z "$targets" ]; then # a build-asan from before it was a clang -Dfuzz=true build
		echo "fuzz build-asan: FAILED (no fuzz-* targets: remove build-asan, this script makes it again)" \
			>"$1/none.result"
	fi
	for f in $targets; do
		fuzz_one "$f" "$1" >"$1/$(basename "$f").result" &
		n=$((n + 1))
		[ $((n % $2)) = 0 ] && wait
	done
	wait
}
fuzz_dir=
fuzz_pid=
if [ "$FUZZ_SECONDS" != 0 ]; then
	fuzz_dir=$(mktemp -d)
	if [ -z "${XPROFS_TEST_QUICK:-}" ]; then
		(renice -n 19 "$BASHPID" >/dev/null && fuzz_all "$fuzz_dir" 1) &
		fuzz_pid=$!
	fi
fi
if [ -z "${XPROFS_TEST_QUICK:-}" ]; then
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		run_tests build-asan
fi
if [ -n "$fuzz_dir" ]; then
	if [ -n "$fuzz_pid" ]; then
		wait "$fuzz_pid" || true
	else
		fuzz_all "$fuzz_dir" 2
	fi
	cat "$fuzz_dir"/*.result
	passed=$((passed + $(cat "$fuzz_dir"/*.result | grep -c '^fuzz .*: ok' || true)))
	failed=$((failed + $(cat "$fuzz_dir"/*.result | grep -c '^fuzz .*: FAILED' || true)))
	rm -rf "$fuzz_dir"
	phase "fuzzing (what it took past the ASan tests)"
fi

echo
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
