#!/usr/bin/env bash
# real-capture.sh - record a real Redis Cluster capture for the benchmark:
# redis-benchmark against a throwaway 3-master cluster on loopback, recorded
# with tcpdump on lo.
#
#   bench/real-capture.sh [OUT.pcap] [REQUESTS]
#
# OUT defaults to bench/data/real.pcap (git-ignored); REQUESTS (default
# 1000000) sets the size: redis-benchmark runs 5 tests of REQUESTS each, about
# 100-130 bytes of capture per request, so the default gives about 500 MB.
# Optional environment:
#   RESHARD=N   move N slots from the first master to the second while the
#               benchmark runs (redis-cli --cluster reshard), for ASK/MOVED
#               traffic on the wire (default 0: none)
#   PORT_BASE=P the nodes' first port (default 30501)
#
# Nodes listen on 127.0.0.1:P..P+2 (30501-30503), their cluster bus on
# P+10..P+12 (cluster-port), nothing else. Every wait is bounded; the nodes and tcpdump
# are stopped on exit, whatever happens.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bench/data/real.pcap}
requests=${2:-1000000}
reshard=${RESHARD:-0}
base=${PORT_BASE:-30501}
ports=("$base" $((base + 1)) $((base + 2)))
dir=$(mktemp -d /tmp/ss-real.XXXXXX)
tcpdump_pid=
reshard_pid=

die() { echo "real-capture.sh: $*" >&2; exit 1; }
. "$root/bench/capture-lib.sh"

# Stop tcpdump and every node started here; remove the work directory.
cleanup() {
    if [ -n "$tcpdump_pid" ] && kill -0 "$tcpdump_pid" 2>/dev/null; then
        kill -INT "$tcpdump_pid" 2>/dev/null || true
        wait "$tcpdump_pid" 2>/dev/null || true
    fi
    for p in "${ports[@]}"; do
        redis-cli -h 127.0.0.1 -p "$p" shutdown nosave >/dev/null 2>&1 || true
        if [ -f "$dir/$p/pid" ]; then
            kill "$(cat "$dir/$p/pid")" 2>/dev/null || true
        fi
    done
    rm -rf "$dir"
}
trap cleanup EXIT

for p in "${ports[@]}"; do
    if redis-cli -h 127.0.0.1 -p "$p" ping >/dev/null 2>&1; then
        die "port $p is already in use"
    fi
done

mkdir -p "$(dirname "$out")"
for p in "${ports[@]}"; do
    mkdir -p "$dir/$p"
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
        --cluster-port $((p + 10)) --cluster-config-file "$dir/$p/nodes.conf" \
        --dir "$dir/$p" --pidfile "$dir/$p/pid" --logfile "$dir/$p/log" \
        --daemonize yes --save '' --appendonly no >/dev/null
done
for p in "${ports[@]}"; do
    wait_for 10 "node $p" redis-cli -h 127.0.0.1 -p "$p" ping
done
timeout 60 redis-cli --cluster create "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" "127.0.0.1:${ports[2]}" \
    --cluster-yes >"$dir/create.log" 2>&1 || die "cluster create failed: $(tail -3 "$dir/create.log")"
cluster_ok() {
    local p
    for p in "${ports[@]}"; do
        redis-cli -h 127.0.0.1 -p "$p" cluster info | grep -q 'cluster_state:ok' || return 1
    done
}
wait_for 30 "cluster_state:ok" cluster_ok

# tcpdump: whole packets, a large buffer so that the kernel drops nothing
tcpdump -i lo -s 0 -B 262144 -U -w "$out" \
    "tcp and (port ${ports[0]} or port ${ports[1]} or port ${ports[2]})" 2>"$dir/tcpdump.log" &
tcpdump_pid=$!
wait_for 10 "tcpdump" grep -q 'listening on' "$dir/tcpdump.log"

if [ "$reshard" -gt 0 ]; then
    src=$(redis-cli -h 127.0.0.1 -p "${ports[0]}" cluster myid)
    dst=$(redis-cli -h 127.0.0.1 -p "${ports[1]}" cluster myid)
    (sleep 2; timeout 300 redis-cli --cluster reshard "127.0.0.1:${ports[0]}" --cluster-from "$src" \
        --cluster-to "$dst" --cluster-slots "$reshard" --cluster-yes \
        --cluster-pipeline 10 >"$dir/reshard.log" 2>&1 || true) &
    reshard_pid=$!
fi

# clients: 50 connections, pipelines of 16, random keys, small values
timeout 600 redis-benchmark --cluster -h 127.0.0.1 -p "${ports[0]}" -c 50 -P 16 -n "$requests" \
    -r 1000000 -d 64 -t set,get,incr,lpush,hset -q >"$dir/bench.log" 2>&1 ||
    echo "real-capture.sh: redis-benchmark: $(tail -2 "$dir/bench.log")" >&2
if [ -n "$reshard_pid" ]; then wait "$reshard_pid" || true; fi
sleep 0.5
kill -INT "$tcpdump_pid"
wait "$tcpdump_pid" 2>/dev/null || true
tcpdump_pid=
grep -E 'captured|dropped' "$dir/tcpdump.log" >&2 || true
tr '\r' '\n' <"$dir/bench.log" | grep -E 'requests per second' >&2 || true
ls -l "$out" >&2
