#!/usr/bin/env bash
# orient-capture.sh - a small real capture whose client connections, like its
# replication links, predate the capture, for tests/cli/test_orient
# (tests/fixtures/cli/orient-real.pcap): tcpdump starts on a running
# 3 masters + 3 replicas cluster with two subscribers and an idle READONLY
# client already connected; then a new client asks CLUSTER SLOTS and SHARDS,
# publishes (the subscribers' nodes talk first on their connections), the
# idle client sends a GET and 30 SETs are streamed to the replicas
# (bench/orient-clients.py says exactly what is sent).
#
#   bench/orient-capture.sh [--base PORT] OUT
#
#   --base PORT   first node port [31000]; nodes use PORT..PORT+5, their
#                 replication links leave from 127.0.1.x
#
# Writes OUT and OUT.log (the tcpdump command and its summary). Needs root
# (tcpdump). Every wait is bounded; the nodes, the clients and tcpdump are
# stopped on exit, whatever happens.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cluster=$root/scripts/cluster/cluster.sh
base=31000 out=

die() { echo "orient-capture.sh: $*" >&2; exit 1; }
. "$root/bench/capture-lib.sh"

while [ $# -gt 0 ]; do
    case "$1" in
        --base) base=$2; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        -*) die "unknown option '$1'" ;;
        *) [ -z "$out" ] || die "one OUT only"; out=$1; shift ;;
    esac
done
[ -n "$out" ] || die "usage: orient-capture.sh [--base PORT] OUT"
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
log=$out.log

dir=$(mktemp -d /tmp/ss-orient.XXXXXX)
tcpdump_pid= clients_pid=
cleanup() {
    if [ -n "$clients_pid" ] && kill -0 "$clients_pid" 2>/dev/null; then
        kill "$clients_pid" 2>/dev/null || true
        wait "$clients_pid" 2>/dev/null || true
    fi
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
sleep 1   # links settled
/usr/bin/python3 "$root/bench/orient-clients.py" "$base" "$dir/ready" "$dir/go" \
    >"$dir/clients.log" 2>&1 &
clients_pid=$!
wait_for 20 "the clients" test -e "$dir/ready"

filter="tcp and portrange $base-$((base + 5))"
tdargs=(-i lo -s 0 -w "$out" -U "$filter")
echo "tcpdump ${tdargs[*]}" >"$log"
tcpdump "${tdargs[@]}" 2>"$dir/tcpdump.log" &
tcpdump_pid=$!
wait_for 10 tcpdump grep -q 'listening on' "$dir/tcpdump.log"
touch "$dir/go"
for ((i = 0; i < 600 && ${clients_pid:+1}; i++)); do
    kill -0 "$clients_pid" 2>/dev/null || break
    sleep 0.1
done
wait "$clients_pid" || die "the clients failed: $(tail -2 "$dir/clients.log")"
clients_pid=
sleep 0.3
kill -INT "$tcpdump_pid"
wait "$tcpdump_pid" 2>/dev/null || true
tcpdump_pid=
tr '\r' '\n' <"$dir/tcpdump.log" | grep -E '^[0-9]+ packets' >>"$log" || true
ls -l "$out" | awk '{print $5, "bytes"}' >>"$log"
cat "$log"
