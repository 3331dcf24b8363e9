#!/usr/bin/env bash
# From a fresh clone: install dependencies, build slotscope, analyse the shipped
# sample capture (a real 3-node cluster on loopback resharding while correct and
# broken clients run) and print the incident report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSLOTSCOPE_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)"
./build/cli/slotscope analyze samples/reshard.pcap --db build/reshard.db --force
echo
echo "database: build/reshard.db   (try: ./build/cli/slotscope query build/reshard.db --list)"
