#!/usr/bin/env bash
# tools/install-deps.sh — installs the Debian packages localtensor builds on,
# when any is missing. Idempotent: does nothing when all are present. As root
# it runs apt-get; otherwise it prints the exact command to run.
set -euo pipefail

PKGS=(build-essential pkg-config libopenblas-dev libcjson-dev libyaml-dev libcmocka-dev valgrind clang libclang-rt-14-dev
      openmpi-bin libopenmpi-dev time)
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
# Optional: chromium, which only `make test-browser` uses (tools/test-browser.sh
# prints a SKIPPED line without it). Installed when missing and possible; it
# never makes this script fail.
optional() {
  dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q 'install ok installed' && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "optional, for make test-browser: sudo apt-get install chromium" >&2
    return 0
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -qq chromium \
    >/dev/null 2>&1 ||
    echo "optional: chromium could not be installed; make test-browser will skip" >&2
  return 0
}
[ ${#missing[@]} -eq 0 ] && { optional; exit 0; }

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "localtensor needs these Debian packages: ${missing[*]}" >&2
  echo "run: sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd -qq
optional
