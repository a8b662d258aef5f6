#!/bin/bash
# tests/tools/test_install.sh - what `meson install` puts in place, used as a user would:
# the three binaries, the man pages (rendered with groff -ww: no warnings), the bash
# completion (sourced and asked for completions), LICENSE, and an fstab-style mount
# through mount(8) and mount.fuse3 of the installed binary. mount.fuse3 runs
# "xprofs SRC MNT -o ..." through /bin/sh with its own fixed PATH
# (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin), so type fuse.xprofs
# needs xprofs installed there (the default prefix /usr/local is); a binary elsewhere
# is named in the source instead: type fuse, source "/path/to/xprofs#SRC" -- the form
# tested here, since a DESTDIR install is not on that PATH.
set -u
. "$XPROFS_SOURCE_ROOT/tests/lib/lib.sh"
xp_workdir
D=$XP_WORK/root
meson install -C "$XPROFS_BUILD_ROOT" --destdir "$D" --no-rebuild --quiet >"$XP_WORK/install.log" 2>&1 ||
	xp_fail "meson install: $(tail -5 "$XP_WORK/install.log")"
P=$(meson introspect "$XPROFS_BUILD_ROOT" --buildoptions | jq -r '.[] | select(.name=="prefix") | .value')
R=$D$P
for b in xprofs xprofs-decode xprofs-gen; do
	xp_ok "installed $P/bin/$b runs --help" sh -c "'$R/bin/$b' --help >/dev/null 2>&1"
done
xp_ok "LICENSE installed (Apache-2.0)" grep -q "Apache License" "$R/share/doc/xprofs/LICENSE"
for m in xprofs xprofs-decode xprofs-gen; do
	f=$R/share/man/man1/$m.1
	[ -f "$f" ] || xp_fail "man page $f not installed"
	out=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww "$f" 2>&1 >/dev/null)
	xp_ok "man $m: renders without warnings" test -z "$out"
	xp_ok "man $m: has NAME, SYNOPSIS, OPTIONS" sh -c "LC_ALL=C.UTF-8 groff -man -Tutf8 '$f' 2>/dev/null | col -b | grep -q '^NAME' && LC_ALL=C.UTF-8 groff -man -Tutf8 '$f' 2>/dev/null | col -b | grep -q '^SYNOPSIS'"
done
C=$(find "$R" -path '*bash-completion/completions/xprofs' | head -1)
[ -n "$C" ] || xp_fail "no bash completion installed"
CD=$(dirname "$C")
# complete WORDS...: source the completion of WORDS[0] and print COMPREPLY for the last word
complete_words() {
	bash -c '. "$1/$2"; shift; fn=$(complete -p "$2" | sed -E "s/.*-F ([^ ]+) .*/\1/"); shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); $fn; printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$CD" "$1" "$@"
}
got=$(complete_words xprofs-decode f.xplane.pb --view tr)
xp_ok "completion: xprofs-decode --view tr -> trace views ($(echo $got))" \
	test "$(echo $got)" = "trace trace.json.gz trace.pftrace"
got=$(complete_words xprofs x y -o cache_m)
xp_ok "completion: xprofs -o cache_m -> cache_max=, cache_min_free= ($(echo $got))" \
	test "$(echo $got)" = "cache_max= cache_min_free="
got=$(complete_words xprofs x y -o ro,sha)
xp_ok "completion: xprofs -o ro,sha -> ro,shared_cache= ($(echo $got))" \
	test "$(echo $got)" = "ro,shared_cache="
got=$(complete_words xprofs x y -o ro,loglevel=d)
xp_ok "completion: xprofs -o ro,loglevel=d -> ro,loglevel=debug ($(echo $got))" \
	test "$(echo $got)" = "ro,loglevel=debug"
got=$(complete_words xprofs-gen --kind g)
xp_ok "completion: xprofs-gen --kind g -> gpu" test "$got" = "gpu"

# fstab-style: mount(8) -> mount.fuse3 -> "xprofs SRC MNT -o ..." found on PATH
xp_require_fuse
command -v mount.fuse3 >/dev/null || xp_skip "mount.fuse3 absent"
mkdir -p "$XP_WORK/src" "$XP_WORK/mnt"
"$R/bin/xprofs-gen" --demo "$XP_WORK/src" >/dev/null || xp_fail "xprofs-gen --demo"
mount -t fuse "$R/bin/xprofs#$XP_WORK/src" "$XP_WORK/mnt" \
	-o "ro,cache_dir=$XP_WORK/cache" >"$XP_WORK/mount.log" 2>&1 ||
	xp_fail "mount -t fuse xprofs#SRC: $(cat "$XP_WORK/mount.log")"
xp_ok "mount -t fuse 'BIN/xprofs#SRC': findmnt shows fuse.xprofs" \
	sh -c "findmnt -n -o FSTYPE '$XP_WORK/mnt' | grep -qx fuse.xprofs"
xp_ok "the mount lists runs/ and serves a view" \
	sh -c "ls '$XP_WORK/mnt/runs' | grep -q . && jq -e . \$(ls -d '$XP_WORK'/mnt/runs/*/*/*/summary.json | head -1) >/dev/null"
xp_ok "umount (the daemon exits)" umount "$XP_WORK/mnt"
