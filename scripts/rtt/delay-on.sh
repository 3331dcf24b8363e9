#!/usr/bin/env bash
# delay-on.sh - delay the TCP traffic of a cluster's data ports by D us each
# way, as seen from the nodes' host (see README.md); undo with delay-off.sh.
#
#   scripts/rtt/delay-on.sh [--src-range A-B] STATE_DIR BASE DELAY_US
#
# Builds netdelay.c into STATE_DIR, starts two netdelay processes (queue BASE
# for client->node, queue BASE+1 for node->client; each in its own session,
# so a Ctrl-C meant for the caller does not end them before the rules are
# gone), waits until both are bound, then adds:
#   mangle OUTPUT,     -o lo, TCP to   ports BASE..BASE+5 -> queue BASE
#   mangle PREROUTING, -i lo, TCP from ports BASE..BASE+5 -> queue BASE+1
# (both --queue-bypass: if a netdelay is gone, packets pass undelayed). On lo
# the capture tap is between OUTPUT and PREROUTING: client->node packets
# reach a capture when the node gets them, node->client packets when the
# node sends them. --src-range A-B limits the rules to the connections of
# the clients A..B (-m iprange: OUTPUT --src-range, PREROUTING --dst-range);
# without it every connection to a data port is delayed (replication links,
# redis-cli, MIGRATE between nodes too). The cluster bus is never delayed.
#
# STATE_DIR gets netdelay, nd_out.pid, nd_in.pid, nd_out.log, nd_in.log
# (netdelay's stderr: counters at its end, lateness on SIGUSR1), queues and
# rules (one iptables rule a line, as added). Prints each iptables command.
# If anything fails, what was set up is undone (delay-off.sh) before exiting
# non-zero. Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "delay-on.sh: $*" >&2; exit 1; }
range=
[ "${1:-}" = --src-range ] && { range=$2; shift 2; }
[ $# -eq 3 ] || die "usage: delay-on.sh [--src-range A-B] STATE_DIR BASE DELAY_US"
dir=$1 base=$2 delay=$3
[ "$delay" -gt 0 ] || die "DELAY_US must be > 0"
[ "$(id -u)" = 0 ] || die "needs root (iptables)"
mkdir -p "$dir"
[ ! -s "$dir/rules" ] || die "$dir/rules exists: delay-off.sh $dir first"
last=$((base + 5)) q_out=$base q_in=$((base + 1))
ok=0
trap '[ "$ok" = 1 ] || "$here/delay-off.sh" "$dir" >&2 || true' EXIT
gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$dir/netdelay" "$here/netdelay.c" \
    -lnetfilter_queue -lnfnetlink
echo "$q_out $q_in" >"$dir/queues"
: >"$dir/rules"
for side in out in; do
    q=$q_out; [ "$side" = in ] && q=$q_in
    setsid "$dir/netdelay" "$q" "$delay" 2>"$dir/nd_$side.log" </dev/null >/dev/null &
    echo $! >"$dir/nd_$side.pid"
done
for side in out in; do
    for ((i = 0; ; i++)); do
        grep -q ready "$dir/nd_$side.log" 2>/dev/null && break
        [ "$i" -lt 50 ] || die "netdelay ($side) not ready: $(cat "$dir/nd_$side.log")"
        sleep 0.1
    done
done
match_out=() match_in=()
[ -z "$range" ] || { match_out=(-m iprange --src-range "$range"); match_in=(-m iprange --dst-range "$range"); }
rule_out=(OUTPUT -o lo -p tcp --dport "$base:$last" "${match_out[@]}" -j NFQUEUE --queue-num "$q_out" --queue-bypass)
rule_in=(PREROUTING -i lo -p tcp --sport "$base:$last" "${match_in[@]}" -j NFQUEUE --queue-num "$q_in" --queue-bypass)
for r in out in; do
    declare -n rule=rule_$r
    echo "${rule[*]}" >>"$dir/rules"     # recorded first: delay-off deletes it even if -A half-failed
    iptables -t mangle -A "${rule[@]}"
    echo "iptables -t mangle -A ${rule[*]}"
done
ok=1
