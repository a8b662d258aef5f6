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
# a host directory is one that has overview.json (session dirs have summary.json
# and ops.json, compare/<session>/ has ops.json too)
# Tour a TPU host (it has device ops and steps); any host will do otherwise.
hosts() { find runs \( -name planes -o -name compare \) -prune -o -name overview.json -print | sort; }
host=$(hosts | grep -m1 train_tpu || hosts | head -1)
host=$(dirname "$host")
step "ls -l '$host'"
step "jq '{hostnames, span_ps: .span_ps, planes: [.planes[] | {name, lines: (.lines | length)}]}' '$host/summary.json' | head -40"
step "jq -c '.planes[] | {plane: .name, kind, top_ops: [.ops[:2][] | {name, count, self_ps}]}' '$host/ops.json'"
step "jq -c '.steps[:3][]' '$host/steps.json'"
step "ls '$host/planes' | head"
step "jq -c '.traceEvents[:4][]' '$host/trace.json'"
# two sessions of one run, compared (docs/stats.md "Compare")
sess=$(dirname "$host")
base=$(ls "$sess/compare" | head -1)
if [ -n "$base" ]; then
	step "ls '$sess' '$sess/compare'"
	step "jq -c '.step_time | {avg_ps_base, avg_ps_new, delta_avg_ps, ratio}' '$sess/compare/$base/steps.json'"
	step "jq -c '.device.ops[:3][] | {in, name, delta_self_ps, delta_occurrences}' '$sess/compare/$base/ops.json'"
fi
prof=$(cd "$src" && find . -name '*.xplane.pb' | head -1)
step "cmp 'logdir/$prof' '$src/$prof' && echo 'mirror is byte-identical'"
step "jq . status.json"
cd /
echo
echo "demo: ok (unmounting $mnt)"
