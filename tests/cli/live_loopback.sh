#!/usr/bin/env bash
# live_loopback.sh SLOTSCOPE - `slotscope live` against a real redis-server.
#
# Starts a one-node Redis Cluster on 127.0.0.1:30410 (no slots at first, so
# commands get CLUSTERDOWN; then all slots, and an MSET across slots gets
# CROSSSLOT), runs `slotscope live -i lo -f 'tcp port 30410' --db DB -Z nobody`
# in the background, sends commands with redis-cli, waits until the crossslot
# finding has been printed live, stops slotscope with SIGINT, and checks that
# the database is consistent and holds what was seen: connections, commands,
# counters, the redirects, the finding, no credentials.
#
# Exit 77 (skipped) when not root (a live capture needs it) or when
# redis-server, redis-cli or sqlite3 is missing. Every wait is a bounded loop.
set -u
bin=$1
port=30410

. "$(dirname "$0")/../helpers/skip.sh"
if [ "$(id -u)" != 0 ]; then skip "a live capture needs root"; fi
for tool in redis-server redis-cli sqlite3; do
    command -v $tool >/dev/null || skip "no $tool"
done

dir=$(mktemp -d /tmp/ss_live_XXXXXX)
chmod 755 "$dir"
redis_pid=
ss_pid=
cleanup() {
    [ -n "$ss_pid" ] && kill -9 "$ss_pid" 2>/dev/null
    if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; fi
    rm -rf "$dir"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    echo "--- slotscope stdout"; cat "$dir/out" 2>/dev/null
    echo "--- slotscope stderr"; cat "$dir/err" 2>/dev/null
    exit 1
}

# wait_for TRIES COMMAND...: run COMMAND every 0.1 s until it succeeds.
wait_for() {
    local tries=$1; shift
    for _ in $(seq "$tries"); do "$@" && return 0; sleep 0.1; done
    return 1
}

cli() { redis-cli -h 127.0.0.1 -p $port "$@"; }
pong() { cli ping 2>/dev/null | grep -q PONG; }
cluster_ok() { cli cluster info 2>/dev/null | grep -q 'cluster_state:ok'; }
printed() { grep -q "$1" "$dir/out"; }
q() { sqlite3 "$dir/db/live.db" "$1"; }

redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no \
    --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --dir "$dir" \
    --logfile "$dir/redis.log" --daemonize no &
redis_pid=$!
wait_for 100 pong || fail "redis-server did not start"

mkdir "$dir/db" && chown nobody "$dir/db"
"$bin" live -i lo -f "tcp port $port" --db "$dir/db/live.db" -Z nobody >"$dir/out" 2>"$dir/err" &
ss_pid=$!
wait_for 100 grep -q "listening on" "$dir/err" || fail "slotscope live did not start"

cli set k1 v1 >/dev/null                 # CLUSTERDOWN: no slot is served yet
cli get k1 >/dev/null                    # CLUSTERDOWN
cli auth secretpw-not-stored >/dev/null 2>&1
cli cluster addslotsrange 0 16383 >/dev/null
wait_for 100 cluster_ok || fail "the cluster did not come up"
cli set k1 v1 >/dev/null
cli mset '{a}1' 1 '{b}2' 2 >/dev/null    # CROSSSLOT
cli get k1 >/dev/null

# Findings appear while the capture runs (flushed each second of capture time).
for _ in $(seq 40); do
    printed crossslot && break
    cli ping >/dev/null
    sleep 0.25
done
printed crossslot || fail "the crossslot finding was not printed live"

# ... and are committed while it runs: another reader sees them (WAL).
committed() {
    cli ping >/dev/null
    [ "$(q "SELECT count(*) FROM findings WHERE kind = 'crossslot'")" = 1 ] &&
        [ "$(q "SELECT value > 0 FROM counters WHERE name = 'commands'")" = 1 ]
}
wait_for 40 committed || fail "the finding and counters were not committed during the run"

kill -INT "$ss_pid"
wait_for 100 bash -c "! kill -0 $ss_pid 2>/dev/null" || fail "slotscope did not stop on SIGINT"
wait "$ss_pid"; rc=$?
ss_pid=
[ "$rc" = 0 ] || fail "slotscope live exited $rc"

grep -q "slotscope incident report" "$dir/out" || fail "no report after SIGINT"
grep -q "dropped by the kernel" "$dir/err" || fail "no drop counts after SIGINT"
[ "$(q 'PRAGMA integrity_check')" = ok ] || fail "database integrity"
[ "$(stat -c %U "$dir/db/live.db")" = nobody ] || fail "database not created after -Z nobody"
[ "$(q "SELECT count(*) FROM meta WHERE key = 'end_us'")" = 1 ] || fail "no end time in meta"
[ "$(q "SELECT name FROM inputs")" = lo ] || fail "inputs row"
[ "$(q "SELECT value >= 8 FROM counters WHERE name = 'connections'")" = 1 ] || fail "connections counter"
[ "$(q "SELECT count(*) >= 8 FROM connections")" = 1 ] || fail "connections rows"
[ "$(q "SELECT value >= 8 FROM counters WHERE name = 'commands'")" = 1 ] || fail "commands counter"
[ "$(q "SELECT count(*) FROM redirects WHERE kind = 'CLUSTERDOWN' AND command IN ('SET', 'GET')")" = 2 ] \
    || fail "CLUSTERDOWN redirects"
[ "$(q "SELECT count(*) FROM redirects WHERE kind = 'CROSSSLOT' AND command = 'MSET'")" = 1 ] \
    || fail "CROSSSLOT redirect"
[ "$(q "SELECT count(*) FROM findings WHERE kind = 'crossslot' AND client = '127.0.0.1'")" = 1 ] \
    || fail "crossslot finding"
# the time series (timeline table): its buckets add up to the counters
[ "$(q "SELECT sum(commands) = (SELECT value FROM counters WHERE name = 'commands')
        FROM timeline WHERE scope = 'cluster'")" = 1 ] || fail "timeline commands"
[ "$(q "SELECT sum(clusterdown) || ' ' || sum(crossslot) FROM timeline WHERE scope = 'cluster'")" = "2 1" ] \
    || fail "timeline CLUSTERDOWN and CROSSSLOT"
if grep -q secretpw-not-stored "$dir"/db/live.db*; then fail "a credential reached the database"; fi
echo "ok: live capture, SIGINT, consistent database"
exit 0
