#!/usr/bin/env bash
# From a fresh clone: install dependencies, build slotscope, install it into
# PREFIX/bin (default ~/.local/bin), analyse the shipped sample capture (a real
# 3-node cluster on loopback resharding while correct and broken clients run)
# and print the incident report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSLOTSCOPE_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)"
prefix=${PREFIX:-$HOME/.local}
cmake --install build --prefix "$prefix" >/dev/null
"$prefix/bin/slotscope" analyze samples/reshard.pcap --db build/reshard.db --force
echo
echo "installed: $prefix/bin/slotscope"
case ":$PATH:" in
*":$prefix/bin:"*) ;;
*) echo "add it to your PATH: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
echo "database: build/reshard.db   (try: slotscope query build/reshard.db --list)"
