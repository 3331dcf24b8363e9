#!/usr/bin/env bash
# Build with -Wall -Wextra -Werror and run every test with ctest: unit tests,
# fixture captures, and the live tests against a real Redis Cluster on loopback
# (those skip themselves when not root or redis-server/tcpdump are missing).
#   SANITIZE=1 scripts/test.sh   the same under AddressSanitizer + UBSan
#   CC=clang scripts/test.sh      with clang
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${SLOTSCOPE_SKIP_DEPS:-}" ] || scripts/deps.sh

build=build-test
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLOTSCOPE_WERROR=ON)
if [ -n "${SANITIZE:-}" ]; then
  build=build-asan
  flags+=(-DSLOTSCOPE_SANITIZE=ON)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
cmake -S . -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" --timeout 600
