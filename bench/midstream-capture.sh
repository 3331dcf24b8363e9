#!/usr/bin/env bash
# midstream-capture.sh - record a capture the way people really have them:
# tcpdump started on a running 3 masters + 3 replicas cluster whose
# replication links (and cluster bus links) predate the capture, with
# redis-benchmark (cluster mode, pipelined, 64-byte values, SET and GET)
# as the clients.
#
#   bench/midstream-capture.sh [options] OUT
#
#   -n REQUESTS   redis-benchmark -n (per test; 2 tests: SET, GET) [1000000]
#   -c CLIENTS    redis-benchmark -c                                 [50]
#   -P DEPTH      redis-benchmark -P                                 [16]
#   --bus         also capture the cluster bus ports (base+10000...)
#   --any         tcpdump -i any (Linux cooked SLL2 link type) instead of -i lo
#   --pcapng      write pcapng, captured by dumpcap (Wireshark's capture
#                 engine; tcpdump 4.99 cannot write pcapng) instead of tcpdump
#   --overload    provoke real kernel drops: a small capture buffer (-B KiB,
#                 see --buffer), packet-buffered writes (-U), heavier load
#                 (-c 200 -P 64 unless given); prints tcpdump's "dropped by
#                 kernel" figure
#   --buffer KIB  the capture buffer with --overload [2048]
#   --base PORT   first node port [31000]; nodes use PORT..PORT+5, their bus
#                 PORT+10000.. (PORT+$CLUSTER_BUS_OFFSET.. when set);
#                 replication links leave from 127.0.1.x
#
# Writes OUT and OUT.log (tcpdump's and redis-benchmark's summary lines, the
# exact tcpdump command). Needs root (tcpdump). Every wait is bounded; the
# nodes and tcpdump are stopped on exit, whatever happens.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cluster=$root/scripts/cluster/cluster.sh
requests=1000000 clients= depth= bus=0 iface=lo pcapng=0 overload=0 base=31000 buffer=2048
out=

die() { echo "midstream-capture.sh: $*" >&2; exit 1; }
. "$root/bench/capture-lib.sh"

while [ $# -gt 0 ]; do
    case "$1" in
        -n) requests=$2; shift 2 ;;
        -c) clients=$2; shift 2 ;;
        -P) depth=$2; shift 2 ;;
        --bus) bus=1; shift ;;
        --any) iface=any; shift ;;
        --pcapng) pcapng=1; shift ;;
        --overload) overload=1; shift ;;
        --buffer) buffer=$2; shift 2 ;;
        --base) base=$2; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        -*) die "unknown option '$1'" ;;
        *) [ -z "$out" ] || die "one OUT only"; out=$1; shift ;;
    esac
done
[ -n "$out" ] || die "usage: midstream-capture.sh [options] OUT"
if [ "$overload" = 1 ]; then
    clients=${clients:-200} depth=${depth:-64}
else
    clients=${clients:-50} depth=${depth:-16}
fi
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
log=$out.log

dir=$(mktemp -d /tmp/ss-midstream.XXXXXX)
tcpdump_pid=
cleanup() {
    if [ -n "$tcpdump_pid" ] && kill -0 "$tcpdump_pid" 2>/dev/null; then
        kill -INT "$tcpdump_pid" 2>/dev/null || true
        wait "$tcpdump_pid" 2>/dev/null || true
    fi
    "$cluster" stop "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT

"$cluster" start 3 1 "$base" "$dir" >/dev/null
wait_for 30 "every replication link up" all_links_up
sleep 1   # links settled: the first REPLCONF ACKs are well before the capture

last=$((base + 5))
filter="tcp and (portrange $base-$last"
bus_off=${CLUSTER_BUS_OFFSET:-10000}
[ "$bus" = 1 ] && filter="$filter or portrange $((base + bus_off))-$((last + bus_off))"
filter="$filter)"
if [ "$pcapng" = 1 ]; then
    # dumpcap: -B in MiB; it says "File: ..." once it captures
    tool=dumpcap
    tdargs=(-i "$iface" -s 0 -w "$out" -B 256 -f "$filter")
    ready='^File:'
else
    tool=tcpdump
    tdargs=(-i "$iface" -s 0 -w "$out")
    if [ "$overload" = 1 ]; then
        tdargs+=(-B "$buffer" -U)
    else
        tdargs+=(-B 262144)
    fi
    tdargs+=("$filter")
    ready='listening on'
fi
echo "$tool ${tdargs[*]}" >"$log"
echo "redis-benchmark --cluster -h 127.0.0.1 -p $base -c $clients -P $depth -n $requests -r 1000000 -d 64 -t set,get -q" >>"$log"
"$tool" "${tdargs[@]}" 2>"$dir/tcpdump.log" &
tcpdump_pid=$!
wait_for 10 "$tool" grep -q "$ready" "$dir/tcpdump.log"

timeout 900 redis-benchmark --cluster -h 127.0.0.1 -p "$base" -c "$clients" -P "$depth" \
    -n "$requests" -r 1000000 -d 64 -t set,get -q >"$dir/bench.log" 2>&1 \
    || echo "midstream-capture.sh: redis-benchmark: $(tail -2 "$dir/bench.log")" >&2
sleep 1.5   # a REPLCONF ACK or two after the last write
kill -INT "$tcpdump_pid"
wait "$tcpdump_pid" 2>/dev/null || true
tcpdump_pid=
tr '\r' '\n' <"$dir/tcpdump.log" | grep -E '^([0-9]+ packets|Packets (captured|received))' >>"$log" || true
tr '\r' '\n' <"$dir/bench.log" | grep -E 'requests per second' >>"$log" || true
ls -l "$out" | awk '{print $5, "bytes"}' >>"$log"
cat "$log"
