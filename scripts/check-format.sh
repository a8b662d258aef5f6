#!/usr/bin/env bash
# scripts/check-format.sh - check that every tracked C file is formatted as
# .clang-format says (Debian 12's clang-format 14).
#
#   scripts/check-format.sh            # lists the files clang-format would change
#   scripts/check-format.sh -v         # the same with clang-format's diagnostics
#
# Runs `clang-format --dry-run -Werror` over the *.c and *.h files git tracks
# (build directories and generated protobuf code are never tracked; the npm
# emulator's tree is skipped all the same). Exit status: 0 when every file is
# clean, 1 when any file would change, 2 when clang-format is missing.
# It never rewrites a file: fix one with `clang-format -i FILE`.
set -euo pipefail
cd "$(dirname "$0")/.."
verbose=0
case "${1:-}" in
"") ;;
-v) verbose=1 ;;
*)
	echo "usage: scripts/check-format.sh [-v]" >&2
	exit 2
	;;
esac
CF=${CLANG_FORMAT:-clang-format}
if ! command -v "$CF" >/dev/null; then
	echo "check-format: $CF not found (scripts/setup-debian.sh installs clang-format)" >&2
	exit 2
fi

bad=0
while IFS= read -r f; do
	case "$f" in
	tests/gcs/emulator/* | *.pb-c.[ch]) continue ;;
	esac
	if ! out=$("$CF" --dry-run -Werror "$f" 2>&1); then
		echo "$f"
		[ $verbose = 1 ] && printf '%s\n' "$out"
		bad=$((bad + 1))
	fi
done < <(git ls-files '*.c' '*.h')
if [ $bad -gt 0 ]; then
	echo "check-format: $bad file(s) not formatted; run clang-format -i on them" >&2
	exit 1
fi
echo "check-format: ok"
