#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: installs what it needs, builds
# xprofs, generates a demo logdir (tools/xprofs-gen), mounts it, shows a short
# tour with ls/cat/jq, and unmounts.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh >/dev/null
[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null

work=$(mktemp -d /tmp/xprofs-demo.XXXXXX)
src=$work/logdir mnt=$work/mnt
mkdir -p "$src" "$mnt"
cleanup() { fusermount3 -u "$mnt" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

build/tools/xprofs-gen --demo "$src"
build/fs/xprofs "$src" "$mnt"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; bash -c "$*"; }
cd "$mnt"
step "ls"
step "find logdir -maxdepth 6 | head -20"
step "ls -R runs | head -30"
# a host directory is one that has ops.json (session dirs only have summary.json)
# Tour a TPU host (it has device ops and steps); any host will do otherwise.
host=$(find runs -name planes -prune -o -name ops.json -print | sort | grep -m1 train_tpu ||
	find runs -name planes -prune -o -name ops.json -print | head -1)
host=$(dirname "$host")
step "ls -l '$host'"
step "jq '{hostnames, span_ps: .span_ps, planes: [.planes[] | {name, lines: (.lines | length)}]}' '$host/summary.json' | head -40"
step "jq -c '.planes[] | {plane: .name, kind, top_ops: [.ops[:2][] | {name, count, self_ps}]}' '$host/ops.json'"
step "jq -c '.steps[:3][]' '$host/steps.json'"
step "ls '$host/planes' | head"
step "jq -c '.traceEvents[:4][]' '$host/trace.json'"
prof=$(cd "$src" && find . -name '*.xplane.pb' | head -1)
step "cmp 'logdir/$prof' '$src/$prof' && echo 'mirror is byte-identical'"
step "jq . status.json"
cd /
echo
echo "demo: ok (unmounting $mnt)"
