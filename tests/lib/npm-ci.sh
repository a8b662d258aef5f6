#!/usr/bin/env bash
# tests/lib/npm-ci.sh DIR LABEL - install the npm packages of DIR (its
# package.json) into DIR/node_modules from its committed package-lock.json.
# Quiet and idempotent: does nothing when the installed tree matches the
# lock file. --ignore-scripts skips native builds the tests do not need.
# LABEL names the caller in its messages. Used by tests/gcs/setup-emulator.sh
# and tests/decode/setup-jsreader.sh.
set -euo pipefail
dir=$1 label=$2
cd "$dir"
if ! command -v npm >/dev/null 2>&1; then
	echo "$label: npm not found (scripts/setup-debian.sh installs it)" >&2
	exit 1
fi
stamp=node_modules/.xprofs-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
echo "$want" >"$stamp"
echo "$label: ok"
