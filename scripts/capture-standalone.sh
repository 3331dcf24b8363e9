#!/usr/bin/env bash
# capture-standalone.sh - make the resp/ fixture captures from a real redis-server.
#
# Starts redis-server on 127.0.0.1 (port 30201 by default, from the resp/ range
# 30200-30299; admin traffic goes over a unix socket so that it is not
# captured), then for each scenario: resets the server's command statistics,
# captures loopback traffic to that port with tcpdump while the scenario runs,
# and stores next to the capture what the server (INFO commandstats) and
# tshark's RESP dissector say about it:
#
#   tests/fixtures/resp/SCENARIO.pcap           the capture (< 200 KB)
#   tests/fixtures/resp/SCENARIO.commandstats   INFO commandstats after it
#   tests/fixtures/resp/SCENARIO.tshark         requests per command name (tshark)
#   tests/fixtures/resp/SCENARIO.expected       both, in the form test_resp_fixtures reads
#
# Scenarios: resp2 (redis-py), resp3 (HELLO 3), tracking (RESP3 client tracking
# with invalidation pushes, RESP3 pub/sub), pubsub (RESP2, sharded too), multi,
# clientreply (CLIENT REPLY OFF/ON/SKIP, MONITOR, RESET), bench (pipelined
# redis-benchmark).
#
# Usage: scripts/capture-standalone.sh [OUTDIR] [PORT]     (needs root for tcpdump)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../tests/fixtures/resp}
port=${2:-30201}
py=/usr/bin/python3            # the system python has redis-py
scen="$py $here/resp_scenarios.py"

for tool in redis-server redis-cli redis-benchmark tcpdump tshark "$py"; do
    command -v "$tool" >/dev/null || { echo "capture-standalone: missing $tool" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d)
sock=$work/redis.sock
server_pid=
dump_pid=
cleanup() {
    if [ -n "$dump_pid" ]; then kill -INT "$dump_pid" 2>/dev/null || true; wait "$dump_pid" 2>/dev/null || true; fi
    if [ -n "$server_pid" ]; then
        redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

redis-server --bind 127.0.0.1 --port "$port" --unixsocket "$sock" --unixsocketperm 700 \
    --save '' --appendonly no --dir "$work" --logfile "$work/redis.log" &
server_pid=$!
for _ in $(seq 100); do
    redis-cli -s "$sock" ping >/dev/null 2>&1 && break
    sleep 0.05
done
redis-cli -s "$sock" ping >/dev/null

# capture_once NAME CMD...: run CMD while capturing port traffic into NAME.pcap.
# Returns 1 if the capture lost packets (a loaded machine can make tcpdump
# drop some), so that the caller can try again.
capture_once() {
    local name=$1; shift
    redis-cli -s "$sock" config resetstat >/dev/null
    rm -f "$out/$name.pcap"
    tcpdump -i lo -s 0 -B 8192 -U --immediate-mode -w "$out/$name.pcap" "tcp port $port" \
        2>"$work/tcpdump.err" &
    dump_pid=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$work/tcpdump.err" 2>/dev/null && break
        sleep 0.05
    done
    "$@"
    sleep 0.5                       # let the last FIN/ACKs through
    kill -INT "$dump_pid"; wait "$dump_pid" 2>/dev/null || true
    dump_pid=
    local lost
    lost=$(tshark -r "$out/$name.pcap" -Y "tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment" \
        2>/dev/null | wc -l)
    if [ "$lost" -ne 0 ] || ! grep -q "^0 packets dropped by kernel" "$work/tcpdump.err"; then
        echo "capture-standalone: $name: the capture lost packets, trying again" >&2
        return 1
    fi
    return 0
}

# capture NAME CMD...: a complete capture of CMD, then what the server and
# tshark say about it.
capture() {
    local name=$1 ok=0
    for _ in 1 2 3 4 5; do
        if capture_once "$@"; then ok=1; break; fi
    done
    [ "$ok" = 1 ] || { echo "capture-standalone: $name: no complete capture" >&2; exit 1; }
    redis-cli -s "$sock" info commandstats | tr -d '\r' > "$out/$name.commandstats"
    $scen tshark "$out/$name.pcap" "$port" > "$out/$name.tshark"
    $scen expect "$name" "$port" "$out/$name.commandstats" "$out/$name.tshark" > "$out/$name.expected"
    printf '%-12s %7d bytes, %s requests (tshark)\n' "$name" "$(stat -c %s "$out/$name.pcap")" \
        "$(awk '{n += $2} END {print n+0}' "$out/$name.tshark")"
}

for s in resp2 resp3 tracking pubsub multi clientreply; do
    capture "$s" $scen run "$s" "$port"
done
# pipelined redis-benchmark (2 clients, 8 commands per round trip)
bench() {
    redis-benchmark -h 127.0.0.1 -p "$port" -c 2 -n 300 -P 8 -q -t set,get,incr,lpush,rpop >/dev/null
}
capture bench bench
