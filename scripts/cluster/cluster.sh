#!/usr/bin/env bash
# cluster.sh - a throwaway Redis Cluster on loopback, and hand-driven slot
# migrations, for slotscope's captures and integration tests.
#
#   cluster.sh start N_MASTERS N_REPLICAS BASEPORT DIR
#       Start N_MASTERS*(1+N_REPLICAS) redis-server nodes on 127.0.0.1, ports
#       BASEPORT, BASEPORT+1, ... (cluster bus = port+10000, or
#       +$CLUSTER_BUS_OFFSET), each in
#       DIR/<port>/, create the cluster and wait until every node says
#       cluster_state:ok. Node i's replication link (and cluster bus) leave
#       from 127.0.1.<i+1> (bind-source-addr), so that replication never
#       shares a source address with a test client; cluster-announce-ip keeps
#       the announced address 127.0.0.1. (MIGRATE's connections ignore
#       bind-source-addr in Redis 7.0: they leave from 127.0.0.1.)
#   cluster.sh stop DIR
#       Stop every node started in DIR (SHUTDOWN NOSAVE, then the pid).
#   cluster.sh ports DIR             print the node ports, one a line
#   cluster.sh owner DIR SLOT        print the port of the master owning SLOT
#   cluster.sh slot-begin DIR SLOT SRC DST
#       SETSLOT IMPORTING on the target, then MIGRATING on the source.
#   cluster.sh slot-move DIR SLOT SRC DST MAX_KEYS BATCH PAUSE_S
#       MIGRATE up to MAX_KEYS keys of SLOT from SRC to DST, BATCH keys per
#       MIGRATE, sleeping PAUSE_S between batches (so clients see ASK between).
#   cluster.sh slot-end DIR SLOT DST
#       SETSLOT NODE <dst id> on every master (target first, as redis-cli does).
#   cluster.sh migrate DIR SLOT SRC DST [BATCH] [PAUSE_S]
#       The three steps above for all keys of SLOT.
#
# Facts used: https://redis.io/docs/reference/cluster-spec/ ("Live resharding"),
# https://redis.io/commands/cluster-setslot/ (order of SETSLOT calls).
# Every wait is bounded; every node started is recorded in DIR/pids.
# CLUSTER_NODE_TIMEOUT_MS sets cluster-node-timeout (default 5000).
set -euo pipefail

REDIS_SERVER=${REDIS_SERVER:-redis-server}
# cluster bus port = node port + BUS_OFFSET (Redis's default is 10000; a
# smaller offset keeps the bus ports in a narrow range of assigned ports)
BUS_OFFSET=${CLUSTER_BUS_OFFSET:-10000}
REDIS_CLI=${REDIS_CLI:-redis-cli}
WAIT_S=${CLUSTER_WAIT_S:-30}   # bound on each wait below
NODE_TIMEOUT_MS=${CLUSTER_NODE_TIMEOUT_MS:-5000} # cluster-node-timeout of every node

die() { echo "cluster.sh: $*" >&2; exit 1; }

# rcli PORT ARGS... : one command to a node, raw output.
rcli() { local port=$1; shift; "$REDIS_CLI" -h 127.0.0.1 -p "$port" "$@"; }

# node_ports DIR: the ports recorded by start.
node_ports() { [ -f "$1/ports" ] || die "no cluster in '$1'"; cat "$1/ports"; }

# wait_for DESC CMD...: run CMD every 0.3 s until it succeeds, at most WAIT_S.
wait_for() {
    local desc=$1; shift
    local deadline=$((SECONDS + WAIT_S))
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || die "timed out waiting for $desc"
        sleep 0.3   # each poll is captured traffic: not too often
    done
}

# cluster_ok PORT: true when the node reports cluster_state:ok.
cluster_ok() { rcli "$1" CLUSTER INFO | grep -q '^cluster_state:ok'; }

# all_agree DIR: every node is ok and sees the same configuration epoch set of
# slot owners (CLUSTER SLOTS identical everywhere).
all_agree() {
    local ref="" p out
    for p in $(node_ports "$1"); do
        cluster_ok "$p" || return 1
        out=$(rcli "$p" CLUSTER SLOTS | sort | md5sum)
        [ -z "$ref" ] && ref=$out
        [ "$out" = "$ref" ] || return 1
    done
}

# start_node DIR PORT SRC_ADDR: one cluster node, answering PING. A port (or
# its bus port) can be briefly taken by some other program's outgoing
# connection (the bus ports 40000-41000 are in Linux's ephemeral range): try
# again for a while.
start_node() {
    local dir=$1 port=$2 src=$3 _
    mkdir -p "$dir/$port"
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        rm -f "$dir/$port/nodes.conf" "$dir/$port/redis.pid"
        "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --protected-mode no \
            --bind-source-addr "$src" --cluster-announce-ip 127.0.0.1 \
            --cluster-enabled yes --cluster-port $((port + BUS_OFFSET)) --cluster-config-file "$dir/$port/nodes.conf" \
            --cluster-node-timeout "$NODE_TIMEOUT_MS" --appendonly no --save "" \
            --dir "$dir/$port" --logfile "$dir/$port/redis.log" \
            --pidfile "$dir/$port/redis.pid" --daemonize yes \
            || die "redis-server on port $port did not start"
        local deadline=$((SECONDS + 5))
        while [ "$SECONDS" -lt "$deadline" ]; do
            rcli "$port" PING >/dev/null 2>&1 && [ -s "$dir/$port/redis.pid" ] && return 0
            sleep 0.1
        done
        grep -q "Address already in use" "$dir/$port/redis.log" 2>/dev/null \
            || die "node $port did not start, see $dir/$port/redis.log"
        echo "cluster.sh: port $port or $((port + BUS_OFFSET)) busy, retrying" >&2
        sleep 2
    done
    die "node $port: address in use after 10 attempts"
}

# start N_MASTERS N_REPLICAS BASEPORT DIR
cmd_start() {
    [ $# -eq 4 ] || die "usage: start N_MASTERS N_REPLICAS BASEPORT DIR"
    local masters=$1 replicas=$2 base=$3 dir=$4
    local n=$((masters * (1 + replicas))) i port addrs=()
    [ "$masters" -ge 3 ] || die "redis-cli --cluster create needs 3 masters"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    : >"$dir/ports"; : >"$dir/pids"
    for ((i = 0; i < n; i++)); do
        port=$((base + i))
        start_node "$dir" "$port" "127.0.1.$((i + 1))"
        echo "$port" >>"$dir/ports"
        cat "$dir/$port/redis.pid" >>"$dir/pids"
        addrs+=("127.0.0.1:$port")
    done
    "$REDIS_CLI" --cluster create "${addrs[@]}" --cluster-replicas "$replicas" \
        --cluster-yes >"$dir/create.log" 2>&1 \
        || { cat "$dir/create.log" >&2; die "cluster create failed"; }
    wait_for "cluster_state:ok on every node" all_agree "$dir"
    # Replicas must have finished their first sync, or they answer LOADING,
    # and CLUSTER SLOTS must list them (it leaves out replicas whose
    # replication offset is not yet known), or clients cannot find them.
    for port in $(node_ports "$dir"); do
        wait_for "replica $port in sync" replica_synced "$port"
    done
    wait_for "$replicas replica(s) per master in CLUSTER SLOTS" \
        replicas_listed "$(node_ports "$dir" | head -1)" "$replicas"
}

# replicas_listed PORT R: every slot range in PORT's CLUSTER SLOTS has R
# replicas (each entry: start, end, master, replicas...).
replicas_listed() {
    "$REDIS_CLI" -h 127.0.0.1 -p "$1" --json CLUSTER SLOTS 2>/dev/null \
        | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); sys.exit(not r or any(len(e) - 3 != int(sys.argv[1]) for e in r))' "$2"
}

# replica_synced PORT: true for a master, or a replica whose link is up.
replica_synced() {
    local info
    info=$(rcli "$1" INFO replication)
    grep -q '^role:master' <<<"$info" && return 0
    grep -q '^master_link_status:up' <<<"$info" && ! grep -q '^master_sync_in_progress:1' <<<"$info"
}

# stop DIR
cmd_stop() {
    [ $# -eq 1 ] || die "usage: stop DIR"
    local dir=$1 port pid deadline
    [ -f "$dir/ports" ] || return 0
    for port in $(cat "$dir/ports"); do
        rcli "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    done
    # Make sure: whatever still runs from our pid list gets SIGTERM, then KILL.
    for pid in $(cat "$dir/pids" 2>/dev/null); do
        deadline=$((SECONDS + 5))
        # Only while that pid is still one of our redis-servers (not reused).
        while kill -0 "$pid" 2>/dev/null && grep -q "redis-server" "/proc/$pid/cmdline" 2>/dev/null; do
            if [ "$SECONDS" -ge "$deadline" ]; then kill -9 "$pid" 2>/dev/null || true; break; fi
            kill "$pid" 2>/dev/null || true
            sleep 0.1
        done
    done
    rm -f "$dir/ports" "$dir/pids"
}

# node_id PORT: the node's 40-hex id.
node_id() { rcli "$1" CLUSTER MYID; }

# masters DIR: ports of the masters.
masters() {
    local p
    for p in $(node_ports "$1"); do
        rcli "$p" ROLE | head -1 | grep -q '^master$' && echo "$p"
    done
    return 0
}

# owner DIR SLOT: the port of the master serving SLOT (from CLUSTER NODES:
# field 2 is ip:port@bus, fields 9.. are slot ranges "a-b" or "a").
cmd_owner() {
    [ $# -eq 2 ] || die "usage: owner DIR SLOT"
    local p
    p=$(node_ports "$1" | head -1)
    rcli "$p" CLUSTER NODES | awk -v s="$2" '
        $3 ~ /master/ {
            for (i = 9; i <= NF; i++) {
                if ($i ~ /^\[/) continue
                n = split($i, r, "-"); lo = r[1]; hi = (n == 2) ? r[2] : r[1]
                if (lo + 0 <= s + 0 && s + 0 <= hi + 0) {
                    split($2, a, "[:@]"); print a[2]; exit
                }
            }
        }'
}

# slot-begin DIR SLOT SRC DST
cmd_slot_begin() {
    [ $# -eq 4 ] || die "usage: slot-begin DIR SLOT SRC DST"
    local slot=$2 src=$3 dst=$4
    rcli "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$(node_id "$src")" | grep -q OK \
        || die "SETSLOT IMPORTING failed"
    rcli "$src" CLUSTER SETSLOT "$slot" MIGRATING "$(node_id "$dst")" | grep -q OK \
        || die "SETSLOT MIGRATING failed"
}

# slot-move DIR SLOT SRC DST MAX_KEYS BATCH PAUSE_S: move keys, batch by batch.
cmd_slot_move() {
    [ $# -eq 7 ] || die "usage: slot-move DIR SLOT SRC DST MAX_KEYS BATCH PAUSE_S"
    local slot=$2 src=$3 dst=$4 max=$5 batch=$6 pause=$7 moved=0 keys n
    while [ "$moved" -lt "$max" ]; do
        n=$((max - moved < batch ? max - moved : batch))
        mapfile -t keys < <(rcli "$src" CLUSTER GETKEYSINSLOT "$slot" "$n")
        if [ "${#keys[@]}" -eq 0 ] || [ -z "${keys[0]}" ]; then break; fi
        rcli "$src" MIGRATE 127.0.0.1 "$dst" "" 0 5000 KEYS "${keys[@]}" | grep -q OK \
            || die "MIGRATE of slot $slot failed"
        moved=$((moved + ${#keys[@]}))
        [ "$moved" -lt "$max" ] && sleep "$pause"
    done
    echo "$moved"
}

# slot-end DIR SLOT DST: give SLOT to DST on every master.
cmd_slot_end() {
    [ $# -eq 3 ] || die "usage: slot-end DIR SLOT DST"
    local dir=$1 slot=$2 dst=$3 id p
    id=$(node_id "$dst")
    rcli "$dst" CLUSTER SETSLOT "$slot" NODE "$id" | grep -q OK || die "SETSLOT NODE failed on $dst"
    for p in $(masters "$dir"); do
        [ "$p" = "$dst" ] && continue
        rcli "$p" CLUSTER SETSLOT "$slot" NODE "$id" | grep -q OK || die "SETSLOT NODE failed on $p"
    done
    wait_for "agreement on slot $slot" all_agree "$dir"
}

# migrate DIR SLOT SRC DST [BATCH] [PAUSE_S]: a whole slot by hand.
cmd_migrate() {
    [ $# -ge 4 ] || die "usage: migrate DIR SLOT SRC DST [BATCH] [PAUSE_S]"
    local dir=$1 slot=$2 src=$3 dst=$4 batch=${5:-10} pause=${6:-0.2}
    cmd_slot_begin "$dir" "$slot" "$src" "$dst"
    cmd_slot_move "$dir" "$slot" "$src" "$dst" 1000000 "$batch" "$pause" >/dev/null
    cmd_slot_end "$dir" "$slot" "$dst"
}

main() {
    [ $# -ge 1 ] || die "usage: cluster.sh start|stop|ports|owner|slot-begin|slot-move|slot-end|migrate ..."
    local cmd=$1; shift
    case "$cmd" in
        start) cmd_start "$@" ;;
        stop) cmd_stop "$@" ;;
        ports) node_ports "$@" ;;
        owner) cmd_owner "$@" ;;
        slot-begin) cmd_slot_begin "$@" ;;
        slot-move) cmd_slot_move "$@" ;;
        slot-end) cmd_slot_end "$@" ;;
        migrate) cmd_migrate "$@" ;;
        *) die "unknown command '$cmd'" ;;
    esac
}

main "$@"
