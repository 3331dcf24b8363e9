#!/usr/bin/env bash
# Install what slotscope needs on Debian 12: the build (compiler, cmake, libpcap,
# sqlite3, libsodium for the keyed hash of --redact-keys, zlib and libzstd for compressed captures, cmocka) and the tests (redis-server for a real cluster on loopback,
# tcpdump to capture it, tshark and redis-py to cross-check, clang for the
# fuzzers; iptables for scripts/cluster/bus-writes.sh, which cuts a node from
# the cluster bus; chromium to open the HTML report headless in
# tests/cli/test_html). `scripts/deps.sh --list` only prints the package names.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libpcap-dev libsqlite3-dev libcmocka-dev sqlite3 zlib1g-dev libzstd-dev zstd libsodium-dev wamerican
  redis-server redis-tools python3 python3-redis tcpdump tshark tcpreplay iptables
  clang libclang-rt-14-dev
  chromium fonts-dejavu-core
)

if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

# Nothing to do when everything is installed already (keeps reruns fast).
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends "${missing[@]}"
