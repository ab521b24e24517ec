#!/usr/bin/env bash
# Installs the Debian packages ameba's build and tests need. Idempotent: does
# nothing when everything is present. Needs root (or sudo) when it installs.
case ${1:-} in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
[ $# = 0 ] || { echo "install-deps.sh: takes no arguments, got '$1' (install-deps.sh --help)" >&2; exit 2; }
set -euo pipefail

pkgs=(build-essential cmake pkg-config git
      libpfm4-dev libcjson-dev liblua5.4-dev libdw-dev libelf-dev
      clang llvm-14-dev libomp-14-dev libclang-rt-14-dev gcc-12-plugin-dev
      valgrind gdb jq python3 util-linux
      chromium)   # the HTML report's test loads pages in headless Chromium

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo=sudo; else
    echo "install-deps: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
