#!/usr/bin/env bash
# make-fixtures.sh - remake tests/fixtures/libs from a scenario run.
#
#   scripts/libs/make-fixtures.sh [WORK]      (default /work/captures/libs)
#   OUT=tests/fixtures/libs-mid LIBS="..." SCENARIO_ARGS=--midstream \
#       scripts/libs/make-fixtures.sh WORK    (the mid-stream fixtures)
#
# Runs scripts/libs/scenario.py in WORK unless WORK/events.json and the
# per-library captures are there already (then it only rewrites the fixtures),
# gzips each library's capture into tests/fixtures/libs/NAME.pcap.gz, copies
# events.json, and writes NAME.truth.tsv with scripts/libs/truth.py (read
# from the gzipped fixture itself, with tshark's counts as a cross-check).
# Needs what scenario.py needs (root, redis 7, tcpdump, tshark, the libraries).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${1:-/work/captures/libs}
OUT=${OUT:-$ROOT/tests/fixtures/libs}
LIBS=${LIBS:-"php-redis ruby-redis redis-py redis-py-asyncio node-redis ioredis iovalkey valkey-glide"}

# shellcheck disable=SC2086 # SCENARIO_ARGS is a list of options
[ -f "$WORK/events.json" ] || /usr/bin/python3 "$HERE/scenario.py" --work "$WORK" ${SCENARIO_ARGS:-}
mkdir -p "$OUT"
cp "$WORK/events.json" "$OUT/events.json"
for lib in $LIBS; do
    gzip -9nc "$WORK/$lib.pcap" >"$OUT/$lib.pcap.gz"
    /usr/bin/python3 "$HERE/truth.py" "$OUT/$lib.pcap.gz" "$OUT/events.json" --tshark >"$OUT/$lib.truth.tsv"
    echo "$lib: $(stat -c %s "$OUT/$lib.pcap.gz") bytes gzipped"
done
