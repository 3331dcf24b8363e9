#!/usr/bin/env bash
# rtt-capture.sh - a capture as made on the server host of a cluster whose
# clients are D microseconds away (RTT 2D), started mid-stream: tcpdump begins
# while the cluster and its clients are already busy.
#
#   scripts/rtt/rtt-capture.sh [options] OUT
#
#   --delay-us D   one-way delay, microseconds; 0: no rules, no delay      [0]
#   --base PORT    first node port [31400]; nodes PORT..PORT+5, bus PORT+10000..
#   --seconds S    capture length                                          [4]
#   --warmup S     load runs this long before tcpdump starts               [2]
#   -c CLIENTS     redis-benchmark clients, half SET half GET              [20]
#   -P DEPTH       redis-benchmark -P                                      [16]
#   -d BYTES       redis-benchmark -d (value size)                         [64]
#
# No netem in this kernel, so the delay is made with NFQUEUE and
# scripts/rtt/netdelay.c, set up by delay-on.sh and undone by delay-off.sh
# (state and the netdelay binary in the run's temporary directory):
#   mangle OUTPUT,     -o lo, TCP to   ports PORT..PORT+5 -> queue PORT   (delay D)
#   mangle PREROUTING, -i lo, TCP from ports PORT..PORT+5 -> queue PORT+1 (delay D)
# On lo the packet taps are between OUTPUT and PREROUTING (tcpdump keeps
# one copy of each packet: "received by filter" is twice "captured"):
# client->server packets reach the capture when the server gets them,
# server->client packets when the server sends them, the view of a capture
# on the server host. Every TCP connection to a node's data port is
# delayed: the clients' and the replicas' replication links (a replica far
# from its master); the cluster bus (PORT+10000..) is not.
#
# Load: two redis-benchmark --cluster processes (-t set and -t get, -d-byte
# values, -r 1000000, each CLIENTS/2 connections, -n large), killed after the
# capture. Writes OUT and OUT.log: the exact commands, redis-cli --latency
# before the load (with the rules in place), tcpdump's counts, netdelay's
# counters (whole run, and lateness during the capture: the second "mark"
# line of each queue) and /proc/net/netfilter/nfnetlink_queue (queue_dropped,
# user_dropped). The rules, netdelay, the load, tcpdump and the nodes are
# removed or stopped on exit, whatever happens. Needs root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster=$root/scripts/cluster/cluster.sh
delay=0 base=31400 seconds=4 warmup=2 clients=20 depth=16 size=64 out=

die() { echo "rtt-capture.sh: $*" >&2; exit 1; }
. "$root/bench/capture-lib.sh"

while [ $# -gt 0 ]; do
    case "$1" in
        --delay-us) delay=$2; shift 2 ;;
        --base) base=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        -c) clients=$2; shift 2 ;;
        -P) depth=$2; shift 2 ;;
        -d) size=$2; shift 2 ;;
        -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
        -*) die "unknown option '$1'" ;;
        *) [ -z "$out" ] || die "one OUT only"; out=$1; shift ;;
    esac
done
[ -n "$out" ] || die "usage: rtt-capture.sh [options] OUT"
[ "$base" -ge 31400 ] && [ "$base" -le 55530 ] || die "--base must be 31400..55530"
[ "$(id -u)" = 0 ] || die "needs root (iptables, tcpdump)"
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
log=$out.log
last=$((base + 5))

dir=$(mktemp -d /tmp/ss-rtt.XXXXXX)
ddir=$dir/delay   # delay-on.sh's state: rules, netdelay pids and logs
tcpdump_pid= bench_pids=()
stop_pid() {   # stop_pid PID SIGNAL: signal one of our children, wait for it
    if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
        kill "-$2" "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
    fi
}
cleanup() {
    stop_pid "$tcpdump_pid" INT
    for p in "${bench_pids[@]}"; do stop_pid "$p" TERM; done
    "$here/delay-off.sh" "$ddir" >/dev/null 2>&1 || true   # a no-op once done
    "$cluster" stop "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$cluster" start 3 1 "$base" "$dir" >/dev/null
wait_for 30 "every replication link up" all_links_up

: >"$log"
if [ "$delay" -gt 0 ]; then
    # queues PORT (client->server) and PORT+1; prints the two iptables commands
    "$here/delay-on.sh" "$ddir" "$base" "$delay" >>"$log"
fi
echo "delay_us $delay" >>"$log"
# RTT as a client sees it, idle cluster (min max avg samples, milliseconds)
echo "redis-cli --latency (2 s, idle): $(timeout 2 redis-cli -h 127.0.0.1 -p "$base" --latency --raw 2>/dev/null | tail -1)" >>"$log"

half=$((clients / 2))
for t in set get; do
    bargs=(--cluster -h 127.0.0.1 -p "$base" -c "$half" -P "$depth" -n 100000000
        -r 1000000 -d "$size" -t "$t" -q)
    echo "redis-benchmark ${bargs[*]}" >>"$log"
    redis-benchmark "${bargs[@]}" >"$dir/bench-$t.log" 2>&1 &
    bench_pids+=($!)
done
# load running: both benchmarks connected (2 x half clients, plus replicas
# and this redis-cli, summed over the nodes)
busy() {
    local p n=0 c
    for p in $("$cluster" ports "$dir"); do
        c=$(redis-cli -h 127.0.0.1 -p "$p" INFO clients | tr -d '\r' | sed -n 's/^connected_clients://p')
        n=$((n + c))
    done
    [ "$n" -ge "$clients" ]
}
wait_for 30 "the load" busy
sleep "$warmup"
for p in "${bench_pids[@]}"; do kill -0 "$p" 2>/dev/null || die "redis-benchmark ended early: $(tail -c 300 "$dir"/bench-*.log)"; done

# -B 65536 (64 MiB), not 256 MiB: in this VM, tcpdump setting up a 256 MiB
# ring stalled one netdelay for 0.7-0.9 s (ppoll woke that late)
tdargs=(-i lo -s 0 -B 65536 -w "$out" "tcp and portrange $base-$last")
echo "tcpdump ${tdargs[*]}   (started after ${warmup}s of load, stopped after ${seconds}s)" >>"$log"
mark() {   # netdelay: lateness so far
    [ "$delay" -gt 0 ] || return 0
    kill -USR1 "$(cat "$ddir/nd_out.pid")" "$(cat "$ddir/nd_in.pid")"
}
tcpdump "${tdargs[@]}" 2>"$dir/tcpdump.log" & tcpdump_pid=$!
wait_for 10 tcpdump grep -q 'listening on' "$dir/tcpdump.log"
mark
sleep "$seconds"
# tcpdump ends before the clients do: their connections are cut mid-stream
# at the end as well as at the start
kill -INT "$tcpdump_pid"; wait "$tcpdump_pid" 2>/dev/null || true; tcpdump_pid=
mark   # the second mark line of each queue: the capture window
for p in "${bench_pids[@]}"; do stop_pid "$p" TERM; done
bench_pids=()
tr '\r' '\n' <"$dir/tcpdump.log" | grep -E '^[0-9]+ packets' >>"$log" || true
for t in set get; do
    echo "redis-benchmark -t $t last status: $(tr '\r' '\n' <"$dir/bench-$t.log" | grep -E 'rps|per second' | tail -1)" >>"$log"
done
if [ "$delay" -gt 0 ]; then
    # nfnetlink_queue lines, rules deleted, netdelay stopped, its counters
    "$here/delay-off.sh" "$ddir" >>"$log" || true
fi
ls -l "$out" | awk '{print $5, "bytes"}' >>"$log"
cat "$log"
