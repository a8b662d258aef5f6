#!/usr/bin/env bash
# views_jq.sh - every JSON view and every track of every shared sample must
# parse with jq; trace.json must have displayTimeUnit as its first key and
# trace.json.gz must gunzip to it; the
# CLI must fail (non-zero, message on stderr) on missing, truncated and
# garbage files. Runs on generated profiles, plus the shared samples when
# ../shared is there. Exit 77 when jq is absent.
set -u
BUILD=${XPROFS_BUILD_ROOT:?}
SHARED=${XPROFS_SHARED:-}
CLI="$BUILD/tools/xprofs-decode"
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
shopt -s nullglob
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
samples=("$SHARED"/samples/*/*.xplane.pb)
if [ ${#samples[@]} -eq 0 ]; then
	echo "note: no shared samples under '$SHARED' (../shared absent): using generated profiles only"
fi
# The project's own generator covers every shape, with or without ../shared.
for kind in tpu gpu cpu; do
	"$BUILD/tools/xprofs-gen" --kind "$kind" --size 300K --seed 7 -o "$tmp/gen-$kind.xplane.pb" ||
		{ echo "FAIL: xprofs-gen --kind $kind"; exit 1; }
	samples+=("$tmp/gen-$kind.xplane.pb")
done
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

for f in "${samples[@]}"; do
	# each view rendered once; the checks below read these files
	rm -rf "$tmp/v" && mkdir "$tmp/v"
	for v in summary trace ops steps; do
		if ! "$CLI" "$f" --view "$v" >"$tmp/v/$v.json" 2>"$tmp/err"; then
			bad "$f $v: exit $? $(cat "$tmp/err")"
			continue
		fi
		jq -e . "$tmp/v/$v.json" >/dev/null 2>&1 || bad "$f $v: jq cannot parse it"
	done
	"$CLI" "$f" --view trace.json.gz >"$tmp/out.gz" || bad "$f trace.json.gz: exit $?"
	gzip -dc "$tmp/out.gz" | cmp -s - "$tmp/v/trace.json" || bad "$f: trace.json.gz does not gunzip to trace.json"
	first=$(jq -r 'keys_unsorted[0]' "$tmp/v/trace.json")
	[ "$first" = displayTimeUnit ] || bad "$f: trace.json first key is '$first'"
	# every track rendered to its own file, then one jq checks them all: it prints
	# the file of each value whose events are an array, which must be each file
	# exactly once; else one jq per track says which fails
	tracks=()
	while IFS= read -r t; do
		tracks+=("$t")
		"$CLI" "$f" --track "$t" >"$tmp/v/track-${#tracks[@]}.json" 2>/dev/null ||
			bad "$f track $t: exit $?"
	done < <("$CLI" "$f" --tracks)
	ntracks=${#tracks[@]}
	files=()
	for ((i = 1; i <= ntracks; i++)); do files+=("$tmp/v/track-$i.json"); done
	if [ "$ntracks" -gt 0 ] &&
		[ "$(jq -r 'select(.events | type == "array") | input_filename' "${files[@]}" 2>/dev/null)" != \
			"$(printf '%s\n' "${files[@]}")" ]; then
		for ((i = 1; i <= ntracks; i++)); do
			jq -e '.events | type == "array"' "${files[i - 1]}" >/dev/null 2>&1 ||
				bad "$f track ${tracks[i - 1]}: invalid JSON"
		done
	fi
	want=$(jq '[.planes[].lines[]] | length' "$tmp/v/summary.json")
	[ "$ntracks" = "$want" ] || bad "$f: $ntracks tracks listed, summary has $want lines"
	echo "ok $f ($ntracks tracks)"
done

# errors: exit non-zero with a message on stderr
f=${samples[0]}
"$CLI" "$tmp/missing.pb" >/dev/null 2>"$tmp/err" && bad "missing file accepted"
[ -s "$tmp/err" ] || bad "no message for a missing file"
head -c $(( $(stat -c %s "$f") / 2 )) "$f" >"$tmp/half.pb"
"$CLI" "$tmp/half.pb" >/dev/null 2>"$tmp/err" && bad "truncated file accepted"
grep -q . "$tmp/err" || bad "no message for a truncated file"
printf '\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' >"$tmp/garbage.pb"
"$CLI" "$tmp/garbage.pb" --view trace >/dev/null 2>"$tmp/err" && bad "garbage accepted"
grep -q varint "$tmp/err" || bad "garbage: unexpected message: $(cat "$tmp/err")"
"$CLI" "$f" --view nope >/dev/null 2>&1 && bad "unknown view accepted"
"$CLI" "$f" --track nope/x.json >/dev/null 2>&1 && bad "unknown track accepted"

[ "$fails" = 0 ] || { echo "$fails failures"; exit 1; }
echo "all views parse"
