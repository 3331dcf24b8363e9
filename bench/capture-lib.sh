# capture-lib.sh - what the capture scripts of bench/ share; sourced, not run.
# Needs die() and, for all_links_up, $cluster (scripts/cluster/cluster.sh)
# and $dir (the cluster's directory).

# wait_for SECONDS DESC CMD...: retry CMD every 0.1 s, at most SECONDS.
wait_for() {
    local limit=$1 desc=$2 i; shift 2
    for ((i = 0; i < limit * 10; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    die "timed out waiting for $desc"
}

# all_links_up: every replica says master_link_status:up, and there are 3.
all_links_up() {
    local p n=0 info
    for p in $("$cluster" ports "$dir"); do
        info=$(redis-cli -h 127.0.0.1 -p "$p" INFO replication)
        grep -q '^role:slave' <<<"$info" || continue
        grep -q '^master_link_status:up' <<<"$info" || return 1
        grep -q '^master_sync_in_progress:0' <<<"$info" || return 1
        n=$((n + 1))
    done
    [ "$n" -eq 3 ]
}
