#!/usr/bin/env bash
# tests/lib/emulator.sh - start/stop the offline GCS emulator for one test
# (or benchmark).
#
#   PORT=$(tests/lib/emulator.sh start DIR)   # DIR: the test's scratch folder
#   tests/lib/emulator.sh stop DIR
#
# start runs tests/gcs/emulator/launch.js on a free port chosen by the kernel
# ($EMULATOR_PORT instead, where a test has a network namespace of its own), waits
# (up to 30 s) for it to print "ready PORT", records DIR/emulator.pid and
# DIR/emulator.port, logs to DIR/emulator.log, and prints the port. The
# emulator also exits by itself once the calling process is gone, so a killed
# test leaves nothing behind; still, call stop from an EXIT trap.
# Exit status 77 (the meson "skip" code) when node or the emulator packages
# are not installed (tests/gcs/setup-emulator.sh installs them).
set -euo pipefail
emu=$(cd "$(dirname "$0")/../gcs/emulator" && pwd)
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
	echo "usage: $0 start|stop DIR" >&2
	exit 2
fi

case "$cmd" in
start)
	if ! command -v node >/dev/null 2>&1 ||
		[ ! -d "$emu/node_modules/firebase-tools" ]; then
		echo "emulator.sh: emulator not installed; run tests/gcs/setup-emulator.sh" >&2
		exit 77
	fi
	mkdir -p "$dir"
	log="$dir/emulator.log"
	: >"$log"
	# The caller of this script is the test: tie the emulator's life to it.
	parent=${EMULATOR_PARENT_PID:-$PPID}
	node "$emu/launch.js" --port "${EMULATOR_PORT:-0}" --quiet --parent-pid "$parent" \
		>>"$log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$dir/emulator.pid"
	for _ in $(seq 300); do
		port=$(awk '/^ready [0-9]+$/ {print $2; exit}' "$log")
		if [ -n "$port" ]; then
			echo "$port" >"$dir/emulator.port"
			echo "$port"
			exit 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	echo "emulator.sh: emulator did not start; log:" >&2
	cat "$log" >&2
	kill "$pid" 2>/dev/null || true
	rm -f "$dir/emulator.pid"
	exit 1
	;;
stop)
	[ -f "$dir/emulator.pid" ] || exit 0
	pid=$(cat "$dir/emulator.pid")
	if kill "$pid" 2>/dev/null; then
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$dir/emulator.pid" "$dir/emulator.port"
	;;
*)
	echo "usage: $0 start|stop DIR" >&2
	exit 2
	;;
esac
