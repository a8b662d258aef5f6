#!/usr/bin/env bash
# tests/decode/setup-jsreader.sh - install Chrome DevTools' trace engine
# (@paulirish/trace_engine), the real JSON trace reader of the decode-json-times
# test, into tests/decode/jsreader/node_modules, from the committed
# package-lock.json (tests/lib/npm-ci.sh: quiet, idempotent).
set -euo pipefail
here=$(dirname "$0")
exec bash "$here/../lib/npm-ci.sh" "$here/jsreader" setup-jsreader
