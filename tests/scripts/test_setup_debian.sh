#!/bin/bash
# tests/scripts/test_setup_debian.sh - scripts/setup-debian.sh against a held
# apt/dpkg lock (issue 25: a new cloud VM runs unattended-upgrades at first
# boot), with stand-ins for apt-get and dpkg-query (XPROFS_SETUP_FAKE): no
# package is installed and the real dpkg state is never read or locked.
#
# The fake apt-get behaves like apt 2.6 on two lock files that the test holds
# with flock(1): update takes lists.lock and never waits for it; install takes
# frontend.lock and waits up to -o DPkg::Lock::Timeout=N for it. Locked, it
# fails (100) with apt's messages. Cases:
#   1. lists.lock held: the script says it waits and what for, retries
#      update, and installs once the test releases the lock
#   2. frontend.lock held: the same for install (apt-get's own wait)
#   3. frontend.lock held past XPROFS_SETUP_LOCK_WAIT=2: fails with the
#      message naming the lock and the way out
#   4. every package installed and node/npm on PATH: apt-get never runs
# Every wait polls with a bound (xp_eventually); none is a fixed sleep.
set -u
. "$XPROFS_SOURCE_ROOT/tests/lib/lib.sh"
command -v flock >/dev/null || xp_skip "flock(1) not installed"
xp_workdir
F=$XP_WORK/fake
mkdir -p "$F" "$XP_WORK/bin"

cat >"$F/apt-get" <<'SH'
#!/bin/bash
# the stand-in apt-get: logs "CMD timeout=N" then "CMD done" to $F/calls
F=$(dirname "$0") t=0 cmd=
while [ $# -gt 0 ]; do
	case $1 in
	-o) [[ $2 == DPkg::Lock::Timeout=* ]] && t=${2#*=}; shift 2 ;;
	-*) shift ;;
	*) [ -n "$cmd" ] || cmd=$1; shift ;;
	esac
done
echo "$cmd timeout=$t" >>"$F/calls"
if [ "$cmd" = update ]; then
	lock=lists.lock path=/var/lib/apt/lists/lock w=(-n)
	tail="E: Unable to lock directory /var/lib/apt/lists/"
else
	lock=frontend.lock path=/var/lib/dpkg/lock-frontend w=(-n)
	[ "$t" -gt 0 ] && w=(-w "$t")
	tail="E: Unable to acquire the dpkg frontend lock ($path), is another process using it?"
fi
exec 9>>"$F/$lock"
if ! flock "${w[@]}" 9; then
	echo "E: Could not get lock $path. It is held by process $(cat "$F/holder") (unattended-upgr)" >&2
	echo "$tail" >&2
	exit 100
fi
echo "$cmd done" >>"$F/calls"
SH
# dpkg-query: every package absent, or every one installed with $F/all
cat >"$F/dpkg-query" <<'SH'
#!/bin/bash
[ -e "$(dirname "$0")/all" ] && printf 'install ok installed'
exit 0
SH
chmod +x "$F/apt-get" "$F/dpkg-query"

HOLDER=
# hold LOCK: a background flock on $F/LOCK until $F/release exists
hold() {
	rm -f "$F/release" "$F/holder"
	flock "$F/$1" bash -c 'echo $$ >"$0/holder"; until [ -e "$0/release" ]; do sleep 0.05; done' "$F" &
	HOLDER=$!
	XP_EVENTUALLY_S=10 xp_eventually "the test holds $1" test -s "$F/holder"
}
release() {
	touch "$F/release"
	wait "$HOLDER"
	HOLDER=
}
running() { kill -0 "$1" 2>/dev/null; }
# setup ARGS: run the script in the background; $SETUP is its pid
setup() {
	rm -f "$F/calls"
	env XPROFS_SETUP_FAKE="$F" "$@" bash "$XPROFS_SOURCE_ROOT/scripts/setup-debian.sh" \
		>"$XP_WORK/out" 2>"$XP_WORK/err" &
	SETUP=$!
}
# finished RC: the script has ended, with exit status RC
finished() {
	XP_EVENTUALLY_S=60 xp_eventually "setup-debian.sh ends" eval '! running $SETUP'
	local rc=0
	wait "$SETUP" || rc=$?
	[ "$rc" = "$1" ] || xp_fail "setup-debian.sh exited $rc, not $1; stdout: $(cat "$XP_WORK/out"); stderr: $(cat "$XP_WORK/err")"
}
trap 'touch "$F/release"; [ -z "$HOLDER" ] || wait "$HOLDER"; xp_cleanup' EXIT

# 1. apt-get update while another process holds the lists lock
hold lists.lock
setup XPROFS_SETUP_LOCK_WAIT=60
xp_eventually "update: says it waits, and for which lock" \
	grep -q "apt-get update waits for another apt or dpkg (Could not get lock /var/lib/apt/lists/lock. It is held by process $(cat "$F/holder") (unattended-upgr))" "$XP_WORK/err"
xp_ok "update: still waiting, nothing installed" eval 'running $SETUP && ! grep -q done "$F/calls"'
release
finished 0
xp_ok "update: proceeds once the lock is free, then installs" \
	eval 'grep -q "^update done" "$F/calls" && grep -q "^install done" "$F/calls"'
xp_ok "update: says what it waited for once" test "$(grep -c waits "$XP_WORK/err")" = 1
xp_ok "update: ends with setup: ok" grep -q "^setup: ok" "$XP_WORK/out"

# 2. apt-get install while another process holds the dpkg frontend lock
hold frontend.lock
setup XPROFS_SETUP_LOCK_WAIT=60
xp_eventually "install: says it waits, and for which lock" \
	grep -q "apt-get install waits for another apt or dpkg (Could not get lock /var/lib/dpkg/lock-frontend" "$XP_WORK/err"
# the retry hands the wait to apt-get itself: -o DPkg::Lock::Timeout > 0
xp_eventually "install: apt-get waits with DPkg::Lock::Timeout" \
	grep -Eq "^install timeout=[1-9]" "$F/calls"
xp_ok "install: still waiting" eval 'running $SETUP && ! grep -q "^install done" "$F/calls"'
release
finished 0
xp_ok "install: proceeds once the lock is free" grep -q "^install done" "$F/calls"
xp_ok "install: ends with setup: ok" grep -q "^setup: ok" "$XP_WORK/out"

# 3. the lock outlives XPROFS_SETUP_LOCK_WAIT: a clear failure
hold frontend.lock
setup XPROFS_SETUP_LOCK_WAIT=2
finished 1
release
xp_ok "held too long: says it gave up, on which lock, and what to do" \
	grep -q "setup: gave up after waiting 2 s for another apt or dpkg to finish: Could not get lock /var/lib/dpkg/lock-frontend.*unattended-upgrades.*XPROFS_SETUP_LOCK_WAIT" "$XP_WORK/err"
xp_ok "held too long: nothing installed, no setup: ok" \
	eval '! grep -q "^install done" "$F/calls" && ! grep -q "setup: ok" "$XP_WORK/out"'

# 4. everything installed already: apt-get never runs
touch "$F/all"
printf '#!/bin/sh\n' >"$XP_WORK/bin/node"
printf '#!/bin/sh\n' >"$XP_WORK/bin/npm"
chmod +x "$XP_WORK/bin/node" "$XP_WORK/bin/npm"
setup PATH="$XP_WORK/bin:$PATH"
finished 0
xp_ok "all installed: apt-get is not run" test ! -e "$F/calls"
xp_ok "all installed: setup: ok" grep -q "^setup: ok" "$XP_WORK/out"
