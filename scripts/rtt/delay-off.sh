#!/usr/bin/env bash
# delay-off.sh - undo delay-on.sh: delete its iptables rules, then stop its
# two netdelay processes (SIGTERM: pending packets are accepted at once).
#
#   scripts/rtt/delay-off.sh STATE_DIR
#
# Prints the queues' /proc/net/netfilter/nfnetlink_queue lines (queue peer
# total copy_mode copy_range queue_dropped user_dropped id_seq 1), read while
# the queues are still bound, and netdelay's counters. Safe to run twice, or
# after a delay-on.sh that failed half way. Exit status: 0, or 1 if a
# netdelay reported a failure.
set -uo pipefail
dir=${1:?usage: delay-off.sh STATE_DIR}
rc=0
if [ -s "$dir/rules" ]; then
    while read -ra rule; do
        while iptables -t mangle -D "${rule[@]}" 2>/dev/null; do :; done
    done <"$dir/rules"
    : >"$dir/rules"
fi
if [ -s "$dir/queues" ]; then
    read -r q_out q_in <"$dir/queues"
    echo "nfnetlink_queue (queue peer total copy_mode copy_range queue_dropped user_dropped id_seq 1):"
    grep -E "^ *($q_out|$q_in) " /proc/net/netfilter/nfnetlink_queue || true
    : >"$dir/queues"
fi
for side in out in; do
    f=$dir/nd_$side.pid
    [ -s "$f" ] || continue
    pid=$(cat "$f")
    # ours only: the pid still runs our netdelay binary
    if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$dir/netdelay")" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && { echo "delay-off.sh: netdelay $pid did not end" >&2; rc=1; }
    fi
    : >"$f"
    grep -v ' ready' "$dir/nd_$side.log" 2>/dev/null || true
    grep -qE ' failures [1-9]' "$dir/nd_$side.log" 2>/dev/null && rc=1
done
exit $rc
