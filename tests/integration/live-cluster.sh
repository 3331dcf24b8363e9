#!/usr/bin/env bash
# live-cluster.sh TEST_CLUSTER_BINARY - the integration test on a fresh capture.
#
# Starts a 3+3 node Redis Cluster on 127.0.0.1:30150-30155 (SS_CLUSTER_BASE
# moves it: BASE..BASE+5, bus BASE+10000..), captures the
# reshard scenario of scripts/cluster/clients.py with tcpdump into a temporary
# directory (scripts/cluster/make-fixtures.sh --out), then runs test_cluster on
# that capture and its expected.tsv (SS_CLUSTER_DIR). Exit 77 (skipped) when
# something it needs is missing. Everything it starts is stopped by
# make-fixtures.sh's own EXIT trap; the temporary directory by ours.
set -euo pipefail

TEST_BIN=${1:?usage: live-cluster.sh TEST_CLUSTER_BINARY}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

. "$(dirname "$0")/../helpers/skip.sh"
command -v redis-server >/dev/null || skip "redis-server not installed"
command -v redis-cli >/dev/null || skip "redis-cli not installed"
command -v tcpdump >/dev/null || skip "tcpdump not installed"
command -v tshark >/dev/null || skip "tshark not installed (the wire's truth)"
[ "$(id -u)" -eq 0 ] || skip "capturing on lo needs root"
/usr/bin/python3 -c 'import redis' 2>/dev/null || skip "python3-redis not installed"

# One run at a time per port range: two checkouts running their suites at
# once would start clusters on the same ports and break each other's run.
BASE=${SS_CLUSTER_BASE:-30150}
exec 9>"/tmp/slotscope-live-cluster-$BASE.lock"
flock -w 60 9 || skip "another run holds ports $BASE-$((BASE + 5)) (waited 60 s)"

OUT=$(mktemp -d /tmp/slotscope-live-cluster.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

timeout 200 "$ROOT/scripts/cluster/make-fixtures.sh" --out "$OUT" --base "$BASE"
rc=0
SS_CLUSTER_DIR="$OUT" "$TEST_BIN" || rc=$?
if [ "$rc" -ne 0 ]; then
    # a live capture cannot be made again: keep it (and the scenario's own
    # record) for whoever looks at the failure
    kept=$(mktemp -d /tmp/slotscope-live-cluster-failed.XXXXXX)
    cp -a "$OUT"/. "$kept"/
    echo "live-cluster.sh: the capture and scenario are kept in $kept" >&2
fi
exit "$rc"
