#!/usr/bin/env bash
# Installs everything xprofs needs to build, run its demo and its test suite on a
# fresh Debian 12 machine (root, or sudo available). Idempotent: skips apt when
# every package is already present.
#
# A new cloud VM runs unattended-upgrades at first boot, which holds apt's and
# dpkg's locks for minutes. apt-get then stops at once ("Could not get lock
# /var/lib/dpkg/lock-frontend"), so every apt-get here waits for such a lock
# instead, saying on stderr which lock and which process, for at most
# XPROFS_SETUP_LOCK_WAIT seconds in all (default 600), then fails saying so.
# apt-get install waits itself (-o DPkg::Lock::Timeout); apt-get update and
# the archives lock ignore that option, so a locked attempt is retried every
# second until the same deadline.
#
# XPROFS_SETUP_FAKE=DIR is for tests (tests/scripts/test_setup_debian.sh):
# DIR/apt-get and DIR/dpkg-query stand in for the real ones, run without
# sudo, and nothing else of the system is touched (no modprobe).
set -euo pipefail

PKGS=(
  meson ninja-build pkg-config gcc clang libclang-rt-14-dev
  libfuse3-dev fuse3
  libcurl4-openssl-dev libssl-dev zlib1g-dev
  libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
  libjansson-dev liblz4-dev libcmocka-dev
  python3 python3-grpcio python3-protobuf
  jq curl rclone hyperfine time procps openssl bc clang-format
  groff-base bash-completion
  chromium
)
LOCK_WAIT=${XPROFS_SETUP_LOCK_WAIT:-600}
FAKE=${XPROFS_SETUP_FAKE:-}
APT_GET=apt-get DPKG_QUERY=dpkg-query SUDO=""
if [ -n "$FAKE" ]; then
  APT_GET=$FAKE/apt-get DPKG_QUERY=$FAKE/dpkg-query
elif [ "$(id -u)" != 0 ]; then
  SUDO=sudo
fi

# apt_get ARG...: apt-get ARG... (stdout as is, stderr kept and shown once it
# ends); while another apt or dpkg holds a lock it needs, says so and tries
# again until the deadline, the first time the script waited plus LOCK_WAIT.
deadline=
apt_get() {
  local err held said="" left rc
  err=$(mktemp)
  while :; do
    left=0
    [ -z "$deadline" ] || left=$((deadline - SECONDS))
    [ "$left" -gt 0 ] || left=0
    rc=0
    $SUDO env DEBIAN_FRONTEND=noninteractive "$APT_GET" -o DPkg::Lock::Timeout="$left" "$@" \
      2>"$err" || rc=$?
    held=$(grep -m1 -o 'Could not get lock .*' "$err" || true)
    if [ "$rc" = 0 ] || [ -z "$held" ]; then
      cat "$err" >&2
      rm -f "$err"
      return "$rc"
    fi
    [ -n "$deadline" ] || deadline=$((SECONDS + LOCK_WAIT))
    if [ "$SECONDS" -ge "$deadline" ]; then
      rm -f "$err"
      echo "setup: gave up after waiting $LOCK_WAIT s for another apt or dpkg to" \
        "finish: $held. A new VM upgrades itself at its first boot (see" \
        "'systemctl status unattended-upgrades'); let that finish and run" \
        "scripts/setup-debian.sh again, or wait longer with" \
        "XPROFS_SETUP_LOCK_WAIT=SECONDS." >&2
      exit 1
    fi
    if [ "$held" != "$said" ]; then
      echo "setup: apt-get $1 waits for another apt or dpkg ($held)," \
        "at most $((deadline - SECONDS)) s more" >&2
      said=$held
    fi
    sleep 1
  done
}

missing=()
for p in "${PKGS[@]}"; do
  "$DPKG_QUERY" -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt_get update -qq
  apt_get install -y -qq "${missing[@]}" >/dev/null
fi
# /dev/fuse must exist for the mount tests and the demo.
if [ ! -e /dev/fuse ] && [ -z "$FAKE" ]; then
  $SUDO modprobe fuse 2>/dev/null || true
fi
echo "setup: ok"
