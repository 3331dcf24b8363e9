#!/usr/bin/env bash
# loss-libs.sh - the loss comparison of bench/loss-compare.py on real client
# libraries' captures: each capture with packets dropped at several rates
# and seeds, every lossy run's pairing compared with the clean run's.
#
#   bench/loss-libs.sh [--pair-dump BIN] [--rates "0.01 0.05 0.1"]
#                      [--seeds N] [--keep DIR] CAPTURE...
#
# CAPTURE: classic pcap files, e.g. /work/captures/libs-a/*.pcap (one
# library each: scripts/libs/scenario.py writes them). For each capture,
# rate and seed 1..N (default 10), bench/loss-inject.py drops packets and
# bench/pair_dump pairs both runs. Prints one line per capture and rate:
# runs, commands paired wrongly (must be 0), and the share of eligible
# commands paired (loss-compare.py's definitions). With --keep, every lossy
# capture with a wrong pairing is kept in DIR with its list of dropped
# segments. Exit status 1 when any command was paired wrongly.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pd=$here/../build-release/bench/pair_dump
rates="0.01 0.05 0.1"
seeds=10
keep=
caps=()
while [ $# -gt 0 ]; do
    case $1 in
    --pair-dump) pd=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) caps+=("$1"); shift ;;
    esac
done
[ ${#caps[@]} -gt 0 ] || { sed -n '2,18p' "$0"; exit 2; }
[ -x "$pd" ] || { echo "loss-libs.sh: $pd: not built (cmake --build build-release)" >&2; exit 2; }
[ -z "$keep" ] || mkdir -p "$keep"
work=$(mktemp -d /tmp/loss-libs.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0
printf '%-40s %5s %5s %6s %9s %8s\n' capture rate runs wrong eligible paired
for cap in "${caps[@]}"; do
    "$pd" "$cap" >"$work/clean.txt" 2>/dev/null
    for rate in $rates; do
        runs=0 wrong=0 eligible=0 paired=0
        for seed in $(seq 1 "$seeds"); do
            "$here/loss-inject.py" "$cap" "$work/lossy.pcap" --rate "$rate" --seed "$seed" \
                --dropped "$work/dropped" 2>/dev/null
            "$pd" "$work/lossy.pcap" >"$work/lossy.txt" 2>/dev/null
            read -r w e p < <("$here/loss-compare.py" "$work/clean.txt" "$work/lossy.txt" \
                "$work/dropped" --json 2>/dev/null |
                python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["wrong"], d["eligible"], d["paired"])')
            runs=$((runs + 1)) wrong=$((wrong + w)) eligible=$((eligible + e)) paired=$((paired + p))
            if [ "$w" != 0 ] && [ -n "$keep" ]; then
                name=$(basename "$cap" .pcap)-$rate-$seed
                cp "$work/lossy.pcap" "$keep/$name.pcap"
                cp "$work/dropped" "$keep/$name.dropped"
            fi
        done
        [ "$wrong" = 0 ] || status=1
        share=$(awk -v p="$paired" -v e="$eligible" 'BEGIN { printf "%.2f%%", e ? 100 * p / e : 100 }')
        printf '%-40s %5s %5d %6d %9d %8s\n' "$(basename "$cap")" "$rate" "$runs" "$wrong" \
            "$eligible" "$share"
    done
done
exit $status
