#!/usr/bin/env bash
# cut-findings.sh - findings a cut of a capture has that the whole capture
# does not: what a capture of some nodes only (tcpdump on one node's host)
# would make slotscope say wrongly.
#
#   bench/cut-findings.sh [--bin SLOTSCOPE] CAPTURE NAME=FILTER...
#
# For each NAME=FILTER, tcpdump cuts CAPTURE with the BPF FILTER (e.g.
# one-master='tcp port 33000'), slotscope analyzes the cut, and one line
# says how many (client, kind, slot) findings it has, how many of them the
# whole capture lacks (listed below it) and the cut's diagnosis. Exit 1
# when any cut has a finding the whole capture lacks. A FILTER that starts
# with "tshark:" is a Wireshark display filter instead, for cuts in time
# (tcpdump stopped at T: end='tshark:frame.time_epoch < T'; started at T:
# 'tshark:frame.time_epoch >= T'), alone or with ports.
set -euo pipefail
bin=$(cd "$(dirname "$0")/.." && pwd)/build-release/cli/slotscope
if [ "${1:-}" = "--bin" ]; then bin=$2; shift 2; fi
cap=${1:?usage: cut-findings.sh [--bin SLOTSCOPE] CAPTURE NAME=FILTER...}
shift
work=$(mktemp -d /tmp/cut-findings.XXXXXX)
trap 'rm -rf "$work"' EXIT

# findings DB: one "client kind slot" line per finding group, sorted
findings() {
    sqlite3 "$1" "SELECT DISTINCT client || ' ' || kind || ' ' || slot FROM findings" | sort
}

# cut_capture FILTER OUT: CAPTURE cut by a BPF filter, or a display filter
# after "tshark:"
cut_capture() {
    if [ "${1#tshark:}" != "$1" ]; then
        tshark -r "$cap" -Y "${1#tshark:}" -F pcap -w "$2"
    else
        tcpdump -r "$cap" -w "$2" "$1"
    fi
}

"$bin" analyze "$cap" --db "$work/whole.db" --force >/dev/null 2>&1 || true
findings "$work/whole.db" >"$work/whole.txt"
bad=0
for cut in "$@"; do
    name=${cut%%=*}
    filter=${cut#*=}
    if ! cut_capture "$filter" "$work/cut.pcap" 2>"$work/cut.err"; then
        printf '%s: cannot cut with %s: %s\n' "$name" "$filter" "$(grep -v "Running as user" "$work/cut.err" | head -1)" >&2
        bad=1
        continue
    fi
    "$bin" analyze "$work/cut.pcap" --db "$work/cut.db" --force >/dev/null 2>&1 || true
    findings "$work/cut.db" >"$work/cut.txt"
    extra=$(comm -13 "$work/whole.txt" "$work/cut.txt")
    diag=$(sqlite3 "$work/cut.db" "SELECT value FROM meta WHERE key = 'diagnosis'")
    printf '%s: %d findings, %d not in the whole capture; diagnosis %s\n' "$name" \
        "$(wc -l <"$work/cut.txt")" "$(grep -c . <<<"$extra" || true)" "${diag:-none}"
    if [ -n "$extra" ]; then
        bad=1
        sed 's/^/    /' <<<"$extra"
    fi
done
exit $bad
