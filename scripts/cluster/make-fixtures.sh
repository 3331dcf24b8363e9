#!/usr/bin/env bash
# make-fixtures.sh - capture a real Redis Cluster reshard with correct and broken
# clients, for slotscope's fixtures, its shipped sample and its live test.
#
#   scripts/cluster/make-fixtures.sh
#       regenerate the repository's files:
#         tests/fixtures/cluster/reshard.pcap   the capture
#         tests/fixtures/cluster/expected.tsv   what slotscope must find in it
#         tests/fixtures/cluster/scenario.json  what each client did (counts)
#         tests/fixtures/cluster/replies/*.resp raw CLUSTER SLOTS/SHARDS/NODES
#                                               replies (RESP2 and RESP3)
#         samples/reshard.pcap, samples/README.md
#   scripts/cluster/make-fixtures.sh --out DIR [--base PORT]
#       only the capture, expected.tsv and scenario.json, into DIR (the live
#       integration test uses this with its own ports)
#
# Needs: redis-server, redis-cli (7.x), tcpdump and the right to capture on lo
# (root), /usr/bin/python3 with python3-redis. Everything started here is
# stopped on exit; every wait is bounded.
#
# Steps: tcpdump starts first (so connection setups, replication handshakes and
# cluster creation are in the capture), then cluster.sh starts 3 masters + 3
# replicas on BASE..BASE+5, clients.py runs the scenario (see its docstring),
# tcpdump is stopped with SIGINT, the cluster is stopped.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
BASE=30100
OUT=""
MAX_BYTES=$((1024 * 1024))

die() { echo "make-fixtures.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT=$2; shift 2 ;;
        --base) BASE=$2; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) die "unknown argument '$1'" ;;
    esac
done

command -v redis-server >/dev/null || die "redis-server not found"
command -v tcpdump >/dev/null || die "tcpdump not found"
"$PYTHON" -c 'import redis' 2>/dev/null || die "$PYTHON has no redis module (apt install python3-redis)"

WORK=""
TCPDUMP_PID=""
LAST=$((BASE + 49))

# One run per port range at a time (two test suites on one machine would
# otherwise fight over the ports): wait for the lock, bounded.
exec 9>"/tmp/slotscope-cluster-$BASE.lock"
flock -w 120 9 || die "another run holds /tmp/slotscope-cluster-$BASE.lock"

# cleanup: stop tcpdump and the cluster of the current attempt, whatever
# happened, and remove its files.
cleanup() {
    if [ -n "$TCPDUMP_PID" ] && kill -0 "$TCPDUMP_PID" 2>/dev/null; then
        kill -INT "$TCPDUMP_PID" 2>/dev/null || true
        wait "$TCPDUMP_PID" 2>/dev/null || true
    fi
    TCPDUMP_PID=""
    if [ -n "$WORK" ]; then
        "$HERE/cluster.sh" stop "$WORK/cluster" || true
        rm -rf "$WORK"
    fi
    WORK=""
}
trap cleanup EXIT
trap "exit 130" INT TERM   # so that a signal runs cleanup too

# capture_once: one whole run (tcpdump, cluster, scenario) into $WORK; the
# cluster is left running for the replies. Returns 2 when the kernel dropped
# packets (a busy machine), so that the caller can try again.
capture_once() {
    WORK=$(mktemp -d /tmp/slotscope-fixtures.XXXXXX)
    # 1. tcpdump on lo, data ports only (the cluster bus, port+10000, is
    # left out); a big buffer (-B, KiB) against drops on a busy machine.
    tcpdump -i lo -B 65536 -U -s 0 -n -w "$WORK/capture.pcap" \
        "tcp portrange $BASE-$LAST" 2>"$WORK/tcpdump.log" &
    TCPDUMP_PID=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$WORK/tcpdump.log" 2>/dev/null && break
        kill -0 "$TCPDUMP_PID" 2>/dev/null || die "tcpdump failed: $(cat "$WORK/tcpdump.log")"
        sleep 0.1
    done
    grep -q "listening on" "$WORK/tcpdump.log" || die "tcpdump did not start listening"

    # 2. the cluster, then 3. the scenario.
    # (set -e does not apply inside a function called with ||: check each.)
    "$HERE/cluster.sh" start 3 1 "$BASE" "$WORK/cluster" || die "cluster did not start"
    "$PYTHON" "$HERE/clients.py" scenario --cluster "$WORK/cluster" --out "$WORK" \
        || die "scenario failed"

    # 4. stop tcpdump (SIGINT; it writes what it has). libpcap hands packets
    # over in blocks that retire after up to 1 s (tcpdump's timeout): wait past
    # that, or the last packets are lost.
    sleep 1.5
    kill -INT "$TCPDUMP_PID"
    wait "$TCPDUMP_PID" || true
    TCPDUMP_PID=""
    local dropped
    dropped=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$WORK/tcpdump.log")
    if [ "${dropped:-0}" != 0 ]; then
        echo "make-fixtures.sh: tcpdump: $dropped packets dropped by kernel" >&2
        return 2
    fi
    grep -q "captured" "$WORK/tcpdump.log" || die "tcpdump did not report its counts"
}

for attempt in 1 2 3; do
    rc=0
    capture_once || rc=$?
    [ "$rc" -eq 0 ] && break
    [ "$rc" -eq 2 ] || die "capture failed"
    cleanup
    [ "$attempt" -lt 3 ] || die "packets dropped in 3 attempts: machine too busy"
done
SIZE=$(stat -c %s "$WORK/capture.pcap")
# what the wire says, decoded by tshark (independent of slotscope)
"$PYTHON" "$HERE/wire-truth.py" "$WORK/capture.pcap" "$BASE" >>"$WORK/expected.tsv"

if [ -n "$OUT" ]; then
    mkdir -p "$OUT"
    cp "$WORK/capture.pcap" "$OUT/reshard.pcap"
    cp "$WORK/expected.tsv" "$WORK/scenario.json" "$OUT/"
    echo "make-fixtures.sh: $OUT/reshard.pcap ($SIZE bytes)"
    exit 0
fi

# The files kept in the repository stay small (a slow, loaded machine makes
# the time-driven redis-py loops longer).
[ "$SIZE" -lt "$MAX_BYTES" ] || die "capture is $SIZE bytes, over $MAX_BYTES"
FIX="$ROOT/tests/fixtures/cluster"
mkdir -p "$FIX/replies" "$ROOT/samples"
"$PYTHON" "$HERE/clients.py" replies --port "$BASE" --out "$FIX/replies"
cp "$WORK/capture.pcap" "$FIX/reshard.pcap"
cp "$WORK/expected.tsv" "$WORK/scenario.json" "$FIX/"
cp "$WORK/capture.pcap" "$ROOT/samples/reshard.pcap"

# samples/README.md, from the scenario's own record.
PACKETS=$(tcpdump -nr "$WORK/capture.pcap" 2>/dev/null | wc -l)
{
    cat <<EOF
# samples/reshard.pcap

A real capture, made on loopback by \`scripts/cluster/make-fixtures.sh\`
(regenerate it with that script; it needs redis-server, redis-cli, tcpdump, root
and Debian's python3-redis). It is the same file as
\`tests/fixtures/cluster/reshard.pcap\`, whose \`expected.tsv\` lists what slotscope
must find in it.

- $SIZE bytes, $PACKETS packets, captured with
  \`tcpdump -i lo -B 65536 -U -s 0 -w reshard.pcap 'tcp portrange $BASE-$LAST'\`
  (full packets; the cluster bus, port+10000, is not in it).
- Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') Cluster: 3 masters
  (127.0.0.1:$BASE-$((BASE + 2))) with one replica each
  (127.0.0.1:$((BASE + 3))-$((BASE + 5))), started by \`scripts/cluster/cluster.sh\`.
  The capture starts before the nodes, so it holds the cluster creation and the
  replication handshakes too.
- Node N's replication link (when it is a replica) leaves from 127.0.1.N
  (\`bind-source-addr\`), so it never shares an address with a client.
  MIGRATE's node-to-node connections (RESTORE-ASKING) ignore that setting in
  Redis 7.0 and leave from 127.0.0.1, like redis-cli and the admin commands.

## What happens (scripts/cluster/clients.py, \`scenario\`)

$(grep '^# slots' "$WORK/expected.tsv" | sed 's/^# //')

1. redis-py fills the keys; every cluster-aware client reads CLUSTER SLOTS.
2. \`redis-cli --cluster reshard\` moves 3 slots while redis-py GETs their keys.
3. Slot S2 starts migrating (3 keys moved) and is never finished.
4. Slot S1 starts migrating; half its keys move in batches while redis-py loops;
   then the ASK-phase clients run: ASK, ASKING, TRYAGAIN.
5. The rest of S1 moves and \`CLUSTER SETSLOT NODE\` goes to every master.
6. The MOVED-phase clients run: MOVED, replica reads, CROSSSLOT.
7. After a pause, the correct client still gets ASK for S2.

## Who is who

$("$PYTHON" "$HERE/clients.py" roster)

Redirects the clients received (lower bounds, counted by the clients):
$(awk -F'\t' '$1 == "redirect" { printf "%s %s, ", $2, $3 }' "$WORK/expected.tsv" | sed 's/, $//').
EOF
} >"$ROOT/samples/README.md"
echo "make-fixtures.sh: wrote $FIX and samples/ ($SIZE bytes, $PACKETS packets)"
