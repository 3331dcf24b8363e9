#!/usr/bin/env bash
# capture.sh - make tests/fixtures/cli/identity.pcap: clients that say who they
# are, from a real redis-server 7.0 cluster.
#
# Starts 3 cluster masters on 127.0.0.1:PORT..PORT+2 (default 31400; bus
# ports +10000), creates the cluster, then captures the data ports only
# (tcpdump -U on lo, filtered to those ports) while scripts/identity/clients.py
# runs: CLIENT SETINFO LIB-NAME/LIB-VER (rejected by 7.0), CLIENT SETNAME,
# HELLO 3 AUTH default s3cretpw SETNAME py-worker, two named processes on one
# host, hostile names, a client and a MIGRATE node link on 127.0.0.1. Every
# server and tcpdump it starts is stopped at the end.
#
# Usage: scripts/identity/capture.sh [OUT.pcap] [PORT]     (needs root for tcpdump)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../tests/fixtures/cli/identity.pcap}
port=${2:-31400}
ports="$port $((port + 1)) $((port + 2))"
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

for p in $ports; do
    mkdir -p "$work/$p"
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
        --cluster-config-file "$work/$p/nodes.conf" --dir "$work/$p" \
        --save "" --appendonly no --protected-mode no --daemonize no >"$work/$p/log" 2>&1 &
    pids+=($!)
done
for p in $ports; do
    for _ in $(seq 50); do redis-cli -p "$p" PING >/dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli --cluster create $(for p in $ports; do printf '127.0.0.1:%s ' "$p"; done) \
    --cluster-yes >/dev/null
for _ in $(seq 100); do
    redis-cli -p "$port" CLUSTER INFO | grep -q 'cluster_state:ok' && break
    sleep 0.1
done

tcpdump -i lo -U -s 0 -w "$out" "tcp portrange $port-$((port + 2))" 2>"$work/tcpdump.log" &
dump=$!
pids+=($dump)
sleep 1
/usr/bin/python3 "$here/clients.py" $ports
sleep 1
kill -INT "$dump"
wait "$dump" || true
echo "wrote $out ($(stat -c %s "$out") bytes)"
