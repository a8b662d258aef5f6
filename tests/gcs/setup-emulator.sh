#!/usr/bin/env bash
# tests/gcs/setup-emulator.sh - install the offline GCS emulator (firebase-tools)
# and the official Node client into tests/gcs/emulator/node_modules, from the
# committed package-lock.json (tests/lib/npm-ci.sh: quiet, idempotent).
set -euo pipefail
here=$(dirname "$0")
exec bash "$here/../lib/npm-ci.sh" "$here/emulator" setup-emulator
