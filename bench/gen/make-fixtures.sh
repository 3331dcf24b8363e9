#!/usr/bin/env bash
# make-fixtures.sh - regenerate tests/fixtures/gen/: small ss-gen captures and
# their ground truth, checked by tests/gen/test_gen_truth.c.
#
#   bench/gen/make-fixtures.sh [SS_GEN]
#
# SS_GEN is the ss-gen binary (default: build it in build-fixtures/). The
# captures are deterministic: the same ss-gen and options give the same bytes.
# ss-gen exits 3 when a bad client had too few chances to misbehave as often
# as asked; that fails this script, so a fixture always holds every
# misbehaviour its options promise.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/tests/fixtures/gen
gen=${1:-}
if [ -z "$gen" ]; then
    cmake -S "$root" -B "$root/build-fixtures" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$root/build-fixtures" --target ss-gen -j2 >/dev/null
    gen=$root/build-fixtures/bench/gen/ss-gen
fi
gen=$(cd "$(dirname "$gen")" && pwd)/$(basename "$gen")
mkdir -p "$out"

# make NAME OPTIONS...: NAME.pcap and NAME.truth.tsv
make() {
    local name=$1; shift
    (cd "$out" && "$gen" -o "$name.pcap" -t "$name.truth.tsv" "$@")
}

# Every finding kind once (one slot migrating, one stuck slot, a replica per
# master), clean TCP: every count, counter and command name is exact.
make findings --seed 13 --bytes 500K --rate 0.25 --clients 8 --replicas 1 \
    --mig-slots 1 --mig-window 0.1:0.5 --mig-share 0.1 --bad all=1 --bad-times 3 \
    --bad-weight 8 --max-value 1K --large-rate 0 --reorder 0 --retrans 0 --depth 4

# TCP trouble without loss: reordering and retransmissions, values up to
# 64K over many segments; two slots migrate; three kinds of bad clients.
make impaired --seed 24 --bytes 900K --rate 0.5 --clients 6 --mig-slots 2 \
    --mig-window 0.1:0.6 --mig-share 0.1 --bad asking_missing=1 --bad moved_ignored=1 \
    --bad tryagain_storm=1 --bad-times 3 --bad-weight 8 --max-value 64K --large-rate 0 \
    --reorder 0.03 --retrans 0.02 --depth 6

# The same with lost segments: each loss is one segment inside a large value
# on a correct client's connection, never retransmitted: one gap each, known
# length, inside a bulk string of known length, so no command is lost.
make lossy --seed 24 --bytes 900K --rate 0.5 --clients 6 --mig-slots 2 \
    --mig-window 0.1:0.6 --mig-share 0.1 --bad asking_missing=1 --bad moved_ignored=1 \
    --bad tryagain_storm=1 --bad-times 3 --bad-weight 8 --max-value 64K --large-rate 0 \
    --reorder 0.03 --retrans 0.02 --loss 0.3 --depth 6

# Raw IPv4 link type, 10.x addresses, loopback-sized segments (65483), findings
# that need no migration window plus an unfollowed client.
make raw10 --seed 31 --bytes 400K --rate 0.25 --clients 6 --replicas 1 --link raw \
    --net 10 --mss 65483 --mig-slots 1 --mig-window 0.2:0.7 --mig-share 0.05 \
    --bad crossslot=1 --bad readonly_missing=1 --bad redirect_unfollowed=1 --bad-times 4 \
    --bad-weight 6 --max-value 8K --large-rate 0 --reorder 0 --retrans 0.01 --depth 8

# No migration, no bad client: the analyzer must find nothing.
make quiet --seed 41 --bytes 250K --rate 0.25 --clients 5 --mig-slots 0 --max-value 4K \
    --large-rate 0 --reorder 0.01 --retrans 0.01 --depth 8

ls -l "$out"
