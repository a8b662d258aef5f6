#!/usr/bin/env bash
# Installs everything xprofs needs to build, run its demo and its test suite on a
# fresh Debian 12 machine (root, or sudo available). Idempotent: skips apt when
# every package is already present.
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

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# /dev/fuse must exist for the mount tests and the demo.
if [ ! -e /dev/fuse ]; then
  $SUDO modprobe fuse 2>/dev/null || true
fi
echo "setup: ok"
