#!/usr/bin/env bash
# bus-heavy.sh OUT.pcap [MASTERS] [SECONDS] [BASEPORT] - a bus-heavy capture
# for bench/results: the cluster bus only (no client traffic) of an idle
# MASTERS+MASTERS cluster (default 12+12) for SECONDS (default 20) on
# 127.0.0.1:BASEPORT.. (default 31300; bus = port+10000). Every node gossips
# with every other (PING/PONG with gossip sections and Redis 7 extensions),
# so the bytes are all bus messages. tcpdump filters on the bus ports.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: bus-heavy.sh OUT.pcap [MASTERS] [SECONDS] [BASEPORT]}
masters=${2:-12}
secs=${3:-20}
base=${4:-31300}
nodes=$((masters * 2))
last=$((base + nodes - 1))
dir=$(mktemp -d /tmp/ss-busheavy.XXXXXX)
tcpdump_pid=
cleanup() {
    [ -n "$tcpdump_pid" ] && kill -INT "$tcpdump_pid" 2>/dev/null || true
    [ -n "$tcpdump_pid" ] && wait "$tcpdump_pid" 2>/dev/null || true
    "$here/cluster.sh" stop "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
timeout 180 "$here/cluster.sh" start "$masters" 1 "$base" "$dir" >/dev/null
tcpdump -i lo -s 0 -U -w "$out" "tcp portrange $((base + 10000))-$((last + 10000))" \
    >"$out.log" 2>&1 &
tcpdump_pid=$!
sleep "$secs"
