#!/usr/bin/env bash
# tests/gcs/test_store.sh - the GCS store backend against the real emulator
# (tests/lib/emulator.sh) and the fault server (fake_gcs.py), via store-probe.
# Seeds gs://xprofs-store/logs with a logdir built from ../shared/samples plus
# a multi-block random file, then checks the mirror byte for byte, writes,
# exclusive creates, resumable uploads, rename/unlink/mkdir/rmdir, ESTALE and
# the lz4 block cache. Exit 77 when neither node/emulator nor the samples exist.
set -euo pipefail
probe=$1
here=$(cd "$(dirname "$0")" && pwd)
emulator_sh=$here/../lib/emulator.sh
shared=${XPROFS_SHARED:-$here/../../../shared}
work=$(mktemp -d /tmp/xprofs-gcs-store.XXXXXX)
fake_pid=
cleanup() {
	"$emulator_sh" stop "$work" >/dev/null 2>&1 || true
	[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

status=0
# --- fault paths (no emulator needed) ---
: >"$work/fake.out" # exists before the background job opens it
/usr/bin/python3 "$here/fake_gcs.py" >>"$work/fake.out" 2>"$work/fake.err" &
fake_pid=$!
for _ in $(seq 100); do
	port=$(awk '/^ready/ {print $2}' "$work/fake.out")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { echo "fake_gcs.py did not start"; cat "$work/fake.err"; exit 1; }
echo "# fault server on port $port"
"$probe" --faults "http://127.0.0.1:$port" gs://fault-bucket || status=1

# --- the emulator ---
set +e
port=$("$emulator_sh" start "$work")
rc=$?
set -e
if [ $rc = 77 ]; then
	echo "# SKIP emulator part: emulator not installed (tests/gcs/setup-emulator.sh)"
	exit $status
fi
[ $rc = 0 ] || exit 1
logdir=$work/logdir
if [ -d "$shared/samples" ]; then
	for d in "$shared"/samples/*/; do
		run=$(basename "$d")
		mkdir -p "$logdir/$run/plugins/profile/2024_01_01_00_00_00"
		cp "$d"* "$logdir/$run/plugins/profile/2024_01_01_00_00_00/" 2>/dev/null || true
	done
else
	echo "# ../shared/samples absent: seeding generated data only"
fi
mkdir -p "$logdir/big/plugins/profile/s1" "$logdir/empty-file-run"
head -c 5500000 /dev/urandom >"$logdir/big/plugins/profile/s1/host.xplane.pb"
: >"$logdir/empty-file-run/events.out.tfevents.1"
STORAGE_EMULATOR_HOST=http://127.0.0.1:$port node "$here/emulator/seed.js" "$logdir" gs://xprofs-store/logs
"$probe" "http://127.0.0.1:$port" gs://xprofs-store/logs "$logdir" "$work/cache" || status=1
# what the store wrote is an ordinary object any client reads the same way
STORAGE_EMULATOR_HOST=http://127.0.0.1:$port node "$here/emulator/check.js" gs://xprofs-store/logs "$logdir" \
	--allow-extra || status=1
exit $status
