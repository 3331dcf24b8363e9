#!/usr/bin/env bash
# bus-failovers.sh OUT_DIR [BASEPORT] - record a real cluster's bus traffic
# through the three kinds of failover, for tests/fixtures/bus/.
#
# A 3+3 cluster on 127.0.0.1:BASEPORT.. (default 30600; bus = port+10000),
# tcpdump on lo filtered to the node and bus ports, then: a slot migration
# (slot 0, first master to second), a manual CLUSTER FAILOVER on the first
# master's replica, a CLUSTER FAILOVER TAKEOVER on the third master's
# replica, and an automatic failover: the second master SIGSTOPped for 9 s
# (cluster-node-timeout is 5 s), then SIGCONT. OUT_DIR gets raw.pcap (every
# port), bus.pcap (bus ports only), events.log (wall times of each step and
# CLUSTER NODES after each) and tcpdump.log. The fixture is bus.pcap cut to
# the failovers with editcap -A/-B (see tests/fixtures/bus/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: bus-failovers.sh OUT_DIR [BASEPORT]}
base=${2:-30600}
dir=$(mktemp -d /tmp/ss-bus.XXXXXX)
mkdir -p "$out"
last=$((base + 5))
tcpdump -i lo -s 0 -U -w "$out/raw.pcap" \
    "tcp portrange $base-$last or tcp portrange $((base + 10000))-$((last + 10000))" \
    >"$out/tcpdump.log" 2>&1 &
tcpdump_pid=$!
cleanup() {
    "$here/cluster.sh" stop "$dir" >/dev/null 2>&1 || true
    kill -INT "$tcpdump_pid" 2>/dev/null || true
    wait "$tcpdump_pid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
sleep 1
log() { echo "$(date +%s.%N) $*" >>"$out/events.log"; }
nodes() { redis-cli -p "$base" cluster nodes | sort -k2 >>"$out/events.log"; }
: >"$out/events.log"
timeout 120 "$here/cluster.sh" start 3 1 "$base" "$dir" >/dev/null
nodes
for i in $(seq 1 50); do redis-cli -c -p "$base" set "key$i" "v$i" >/dev/null; done
log migrate slot 0
timeout 60 "$here/cluster.sh" migrate "$dir" 0 "$base" $((base + 1)) >/dev/null
sleep 2
log manual-failover $((base + 5))
redis-cli -p $((base + 5)) cluster failover >/dev/null
sleep 4; nodes
log takeover $((base + 4))
redis-cli -p $((base + 4)) cluster failover takeover >/dev/null
sleep 3; nodes
pid=$(redis-cli -p $((base + 1)) info server | tr -d '\r' | sed -n 's/^process_id://p')
log sigstop $((base + 1)) pid "$pid"
kill -STOP "$pid"; sleep 9; kill -CONT "$pid"
log sigcont $((base + 1))
sleep 4; nodes
sleep 1
kill -INT "$tcpdump_pid"; wait "$tcpdump_pid" 2>/dev/null || true
tcpdump -r "$out/raw.pcap" -w "$out/bus.pcap" \
    "tcp portrange $((base + 10000))-$((last + 10000))" 2>/dev/null
echo "bus-failovers.sh: wrote $out (raw.pcap, bus.pcap, events.log)"
