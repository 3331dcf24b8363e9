#!/usr/bin/env bash
# bus-writes.sh OUT_DIR [BASEPORT] - a real cluster's failovers under write
# load, captured on the client AND bus ports, with the writers' own account of
# every acknowledged write and which of them were really lost.
#
# A 3+3 cluster on 127.0.0.1:BASE..BASE+5 (default 31400; bus = port+10000),
# cluster-node-timeout 2000 ms. Once it is up, tcpdump records the node and bus
# ports (nothing else: other programs use lo too); four writers
# (bus-clients.py writer, each from its own 127.0.0.2x through bindshim.so;
# two reload their map on MOVED, two only every few seconds) and a CLUSTER
# NODES poller (127.0.0.9) run throughout. Steps, each logged in events.log:
#   migrate      the slot of {mig} to another master (cluster.sh migrate)
#   manual       CLUSTER FAILOVER on the replica of master A
#   takeover     master B cut from the bus (iptables on lo, B's bus port and
#                B's bus source address only), CLUSTER FAILOVER TAKEOVER on
#                B's replica, the writers keep writing to B for PARTITION_S,
#                then the cut is healed: B learns the newer epoch and rejoins
#                as a replica, and what it acknowledged meanwhile is lost
#   automatic    master C SIGSTOPped for STOP_S (> node timeout), SIGCONT
# Then the writers stop, every acknowledged key is read back (readback.tsv)
# and the cluster is stopped. OUT_DIR: capture.pcap, events.log, nodes.log
# (the polls), w1..w4.log (the writers), readback.tsv, roles.tsv (port,
# node id, first role) and tcpdump.log. bus-truth.py OUT_DIR [CAPTURE] turns
# them into the truth (see there). Needs root (tcpdump, iptables).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: bus-writes.sh OUT_DIR [BASEPORT]}
base=${2:-31400}
PYTHON=/usr/bin/python3
PARTITION_S=${PARTITION_S:-1.5}
STOP_S=${STOP_S:-5}
export CLUSTER_NODE_TIMEOUT_MS=2000
last=$((base + 5))
bus_lo=$((base + 10000)) bus_hi=$((last + 10000))
mkdir -p "$out"
out=$(cd "$out" && pwd)
dir=$(mktemp -d /tmp/ss-bus2.XXXXXX)
tcpdump_pid="" pids=() cut_rules=()

die() { echo "bus-writes.sh: $*" >&2; exit 1; }
command -v iptables >/dev/null || die "iptables not found (apt-get install -y iptables)"

heal() {
    local r
    for r in "${cut_rules[@]}"; do
        # shellcheck disable=SC2086
        iptables -D INPUT $r 2>/dev/null || true
    done
    cut_rules=()
}
cleanup() {
    heal
    touch "$dir/stop"
    local p
    for p in "${pids[@]}"; do
        timeout 5 tail --pid="$p" -f /dev/null 2>/dev/null || kill "$p" 2>/dev/null || true
    done
    [ -n "$tcpdump_pid" ] && { kill -INT "$tcpdump_pid" 2>/dev/null || true; wait "$tcpdump_pid" 2>/dev/null || true; }
    "$here/cluster.sh" stop "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT

log() { echo "$(date +%s%6N) $*" >>"$out/events.log"; }
rcli() { local p=$1; shift; redis-cli -h 127.0.0.1 -p "$p" "$@"; }
# replica_of PORT: the port of PORT's replica (from PORT's CLUSTER NODES).
replica_of() {
    local id
    id=$(rcli "$1" CLUSTER MYID)
    rcli "$1" CLUSTER NODES | awk -v id="$id" '$4 == id { split($2, a, "[:@]"); print a[2]; exit }'
}

: >"$out/events.log"
rm -f "$out"/w?.log "$out/nodes.log"
timeout 120 "$here/cluster.sh" start 3 1 "$base" "$dir" >/dev/null
for p in $(seq "$base" "$last"); do
    echo -e "$p\t$(rcli "$p" CLUSTER MYID)\t$(rcli "$p" ROLE | head -1)"
done >"$out/roles.tsv"
ma=$base mb=$((base + 1)) mc=$((base + 2))
ra=$(replica_of "$ma") rb=$(replica_of "$mb")
[ -n "$ra" ] && [ -n "$rb" ] || die "no replicas found for $ma/$mb"
cc -shared -fPIC -O2 -o "$dir/bindshim.so" "$root/scripts/libs/bindshim.c" -ldl

tcpdump -i lo -s 0 -U -w "$out/capture.pcap" \
    "tcp and (portrange $base-$last or portrange $bus_lo-$bus_hi)" >"$out/tcpdump.log" 2>&1 &
tcpdump_pid=$!
sleep 1
log capture-start
client() {  # client ADDR ARGS...: bus-clients.py from source address ADDR
    local addr=$1; shift
    SS_BIND_ADDR=$addr LD_PRELOAD="$dir/bindshim.so" "$PYTHON" "$here/bus-clients.py" "$@" &
    pids+=($!)
}
client 127.0.0.9 poll --base "$base" --log "$out/nodes.log" --stop "$dir/stop"
client 127.0.0.21 writer --base "$base" --name w1 --log "$out/w1.log" --stop "$dir/stop" --refresh moved
client 127.0.0.22 writer --base "$base" --name w2 --log "$out/w2.log" --stop "$dir/stop" --refresh moved
client 127.0.0.23 writer --base "$base" --name w3 --log "$out/w3.log" --stop "$dir/stop" --refresh lazy:4
client 127.0.0.24 writer --base "$base" --name w4 --log "$out/w4.log" --stop "$dir/stop" --refresh lazy:1.5
sleep 2

slot=$(rcli "$base" CLUSTER KEYSLOT "{mig}")
src=$("$here/cluster.sh" owner "$dir" "$slot")
dst=$ma; [ "$src" = "$ma" ] && dst=$mb
log migrate slot "$slot" from "$src" to "$dst"
timeout 60 "$here/cluster.sh" migrate "$dir" "$slot" "$src" "$dst" 5 0.2 >/dev/null
log migrate-done slot "$slot"
sleep 2

log manual old "$ma" new "$ra"
rcli "$ra" CLUSTER FAILOVER >/dev/null
sleep 3

i=$((mb - base))
b_src=127.0.1.$((i + 1)) b_bus=$((mb + 10000))
cut_rules=(
    "-i lo -p tcp --dport $b_bus -j DROP"
    "-i lo -p tcp --sport $b_bus -j DROP"
    "-i lo -p tcp -s $b_src --dport $bus_lo:$bus_hi -j DROP"
    "-i lo -p tcp -d $b_src --sport $bus_lo:$bus_hi -j DROP"
)
for r in "${cut_rules[@]}"; do
    # shellcheck disable=SC2086
    iptables -I INPUT $r
done
log partition "$mb"
sleep 0.3
log takeover old "$mb" new "$rb"
rcli "$rb" CLUSTER FAILOVER TAKEOVER >/dev/null
sleep "$PARTITION_S"
heal
log heal "$mb"
sleep 3

pid=$(rcli "$mc" INFO server | tr -d '\r' | sed -n 's/^process_id://p')
log sigstop "$mc" pid "$pid"
kill -STOP "$pid"; sleep "$STOP_S"; kill -CONT "$pid"
log sigcont "$mc"
sleep 3
touch "$dir/stop"
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()
log writers-stopped
sleep 0.5
kill -INT "$tcpdump_pid"; wait "$tcpdump_pid" 2>/dev/null || true
tcpdump_pid=""
all_ok() {
    local p
    for p in $(seq "$base" "$last"); do
        rcli "$p" CLUSTER INFO | grep -q '^cluster_state:ok' || return 1
    done
}
for _ in $(seq 1 60); do all_ok && break; sleep 0.5; done
all_ok || echo "bus-writes.sh: cluster not ok on every node before readback" >&2
sleep 2
"$PYTHON" "$here/bus-clients.py" readback --base "$base" --logs "$out"/w?.log --out "$out/readback.tsv"
for p in $(seq "$base" "$last"); do
    echo -e "$p\t$(rcli "$p" ROLE | head -1)"
done >"$out/roles-end.tsv"
log done
echo "bus-writes.sh: wrote $out"
