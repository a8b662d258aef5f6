#!/usr/bin/env bash
# tests/lib/selftest.sh - the shell test library's own failure messages
# (tests/lib/lib.sh): each check is made to fail in a subshell and what it
# printed must say why (sizes, the first differing offset, the command's
# exit status and stderr, how long a wait took and what it saw last, the
# daemon's log tail), so the messages cannot silently regress.
. "${XPROFS_SOURCE_ROOT:?}/tests/lib/lib.sh"
xp_workdir
W=$XP_WORK
# has OUT TEXT: OUT (a failing check's output) contains TEXT
has() { grep -qF -- "$2" <<<"$1" || { XP_WHY="output was:"$'\n'"$1"; return 1; }; }

printf 'abcdefghij0123456789' >"$W/want"
printf 'abcdefghijX123456789tail' >"$W/got"
out=$( (xp_same "differing files" "$W/got" "$W/want") 2>&1) && xp_fail "xp_same passed on different files"
xp_ok "xp_same fails with not ok and its message" has "$out" "not ok - differing files"
xp_ok "  and both sizes" has "$out" "got 24 bytes, want 20"
xp_ok "  and the first differing offset" has "$out" "first difference at offset 10"
xp_ok "  and bytes around it" has "$out" "abcdefghijX1234"

printf 'abcdefghij' >"$W/short"
out=$( (xp_same "a prefix" "$W/short" "$W/want") 2>&1) && xp_fail "xp_same passed on a prefix"
xp_ok "xp_same: a short file says it is a prefix" has "$out" "offset 10: got ends there"

out=$( (xp_same "a failed read" "$W/absent" "$W/want") 2>&1) && xp_fail "xp_same passed on a missing file"
xp_ok "xp_same: a failed open gives the errno" has "$out" "(ENOENT)"
out=$( (xp_same "a directory" "$W" "$W/want") 2>&1) && xp_fail "xp_same passed on a directory"
xp_ok "xp_same: a failed read gives the errno" has "$out" "(EISDIR)"
xp_same "xp_same passes on equal files" "$W/want" "$W/want"

out=$( (xp_ok "a failing command" bash -c 'echo oops >&2; exit 3') 2>&1) && xp_fail "xp_ok passed"
xp_ok "xp_ok shows the exit status" has "$out" "exit status: 3"
xp_ok "  and the command's stderr" has "$out" "oops"

echo "xprofs: the daemon's last words" >"$W/xprofs.log"
out=$( (xp_fail "with a log") 2>&1)
xp_ok "xp_fail shows the daemon's log tail" has "$out" "#   xprofs: the daemon's last words"
rm "$W/xprofs.log"

out=$( (XP_EVENTUALLY_S=1 xp_eventually "never true" bash -c 'echo still-4; exit 4') 2>&1) &&
	xp_fail "xp_eventually passed"
xp_ok "xp_eventually says what it waited for" has "$out" "for: bash -c"
xp_ok "  and how long" has "$out" "limit XP_EVENTUALLY_S=1"
xp_ok "  and what it saw last" has "$out" "still-4"
xp_ok "  and its exit status" has "$out" "exit status 4"
echo "# lib.sh self-test passed"
