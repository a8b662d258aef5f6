#!/usr/bin/env bash
# tests/gcs/setup-emulator.sh - install the offline GCS emulator (firebase-tools)
# and the official Node client into tests/gcs/emulator/node_modules, from the
# committed package-lock.json. Quiet and idempotent: does nothing when the
# installed tree matches the lock file. --ignore-scripts skips a slow native
# build the emulator does not need.
set -euo pipefail
cd "$(dirname "$0")/emulator"
if ! command -v npm >/dev/null 2>&1; then
	echo "setup-emulator: npm not found (scripts/setup-debian.sh installs it)" >&2
	exit 1
fi
stamp=node_modules/.xprofs-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
echo "$want" >"$stamp"
echo "setup-emulator: ok"
