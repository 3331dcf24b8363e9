#!/usr/bin/env bash
# bench/live-rate.sh - how fast can `slotscope live` go on loopback without
# dropping? A capture is replayed on `lo` with tcpreplay at fixed rates and at
# top speed while `slotscope live -i lo` listens; for each rate it prints what
# tcpreplay sent, what slotscope received and every place a packet could be
# lost, then the highest rate with zero drops.
#
#   bench/live-rate.sh [options]            (root: tcpreplay and live capture)
#     --file F        the capture to replay (default
#                     tests/fixtures/cluster/reshard.pcap); EN10MB
#     --count N       only its first N packets
#     --loop N        replay it N times per step (default 50), each loop with
#                     new client/server addresses (tcpreplay --unique-ip)
#     --steps LIST    rates to try, in order (default "pps:20000 pps:50000
#                     pps:100000 mbps:500 top"): pps:N, mbps:N or top
#     --duration S    stop each step after S seconds (default 20)
#     --base-port P   server ports are rewritten to P, P+1, ... (default 30900)
#     --slotscope B   the binary (default: build-release/cli/slotscope, built
#                     in Release when missing, as bench/run does)
#     --db-dir DIR    where slotscope's database goes (default: a temporary
#                     directory under /tmp)
#     --ss-args "A"   more arguments for slotscope live (e.g. "--threads 2")
#     --pin CPU       run tcpreplay and slotscope both on this CPU (shows what
#                     happens when slotscope gets half a core)
#
# Preparation (once, into a temporary directory):
#   1. the server ports of F (senders of SYN-ACKs) are mapped to base-port..,
#      so that nobody else's capture or test cluster on lo sees these packets;
#   2. Ethernet addresses become 02:00:00:00:00:01 -> 02:00:00:00:00:02: not
#      lo's own address, so the kernel marks them PACKET_OTHERHOST and IPv4
#      drops them before TCP (no RSTs, nothing reaches a listener), while packet
#      sockets (slotscope's) still see every one;
#   3. only the packets matching slotscope's filter are kept, so that every
#      packet sent is a packet slotscope should receive: expected = sent.
#
# Per step:
#   slotscope live -i lo -f 'tcp portrange B-E' --ports B-E --db TMP.db --force
#   (waits for "listening on"), then
#   tcpreplay -i lo --preload-pcap --loop N --unique-ip --duration S RATE FILE
#   (RATE: --pps=N --pps-multi=M | --mbps=N | --topspeed), then waits until
#   slotscope's CPU time stops growing (it has read everything), SIGINT, and
#   reads its counters from the database.
# Columns:
#   sent        packets tcpreplay sent ("Actual:"), all matching the filter
#   s, pps, Mbit/s   tcpreplay's own measure of the step
#   received    slotscope's "packets" counter
#   kdrop       "kernel_drops" (libpcap ps_drop: the packet socket's ring was
#               full because slotscope did not read fast enough) + "if_drops"
#   backlog     growth of the softnet backlog drops (/proc/net/softnet_stat,
#               column 2): lost before any packet socket, not slotscope's
#   lost        sent - received - kdrop: lost elsewhere (backlog, other)
#   commands    slotscope's "commands" counter
#   ss cpu      slotscope's CPU seconds (user+sys) during the step, and that
#               as a share of the replay's wall time (100% = one core busy)
# A step is "ok" when received == sent and kdrop == 0.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
file=$root/tests/fixtures/cluster/reshard.pcap
count=0
loops=50
steps="pps:20000 pps:50000 pps:100000 mbps:500 top"
duration=20
base_port=30900
slotscope=""
pin=""
db_dir=""
ss_args=""

while [ $# -gt 0 ]; do
    case $1 in
    --file) file=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --loop) loops=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --base-port) base_port=$2; shift 2 ;;
    --slotscope) slotscope=$2; shift 2 ;;
    --pin) pin=$2; shift 2 ;;
    --db-dir) db_dir=$2; shift 2 ;;
    --ss-args) ss_args=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "live-rate.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
    esac
done

die() { echo "live-rate.sh: $*" >&2; exit 1; }

for tool in tcpreplay tcprewrite tcpdump sqlite3; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/deps.sh installs it)"
done
[ "$(id -u)" -eq 0 ] || echo "live-rate.sh: warning: not root; tcpreplay and live capture need CAP_NET_RAW" >&2
[ -r "$file" ] || die "cannot read '$file'"

# The slotscope binary: given, or built in Release like bench/run does.
if [ -z "$slotscope" ]; then
    slotscope=$root/build-release/cli/slotscope
    if [ ! -x "$slotscope" ]; then
        cmake -S "$root" -B "$root/build-release" -DCMAKE_BUILD_TYPE=Release -DSLOTSCOPE_TESTS=OFF >/dev/null &&
            cmake --build "$root/build-release" --target slotscope -j2 >/dev/null ||
            die "could not build slotscope in build-release"
    fi
fi
[ -x "$slotscope" ] || die "no slotscope binary at '$slotscope'"

tmp=$(mktemp -d /tmp/live-rate.XXXXXX)
ss_pid=""
# SIGINT to our slotscope, as Ctrl-C; SIGKILL if it is still there after 10 s
# (a SIGINT sent before it installed its handler is ignored: a background job
# of a script starts with SIGINT ignored).
stop_slotscope() {
    kill -INT "$ss_pid" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$ss_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$ss_pid" 2>/dev/null && kill -KILL "$ss_pid" 2>/dev/null
    wait "$ss_pid" 2>/dev/null
    ss_pid=""
}

# Stop our own slotscope (by its pid) and remove the temporary files.
cleanup() {
    if [ -n "$ss_pid" ]; then stop_slotscope; fi
    rm -rf "$tmp"
    [ -z "$db_dir" ] || rm -f "$db_dir"/live-rate-step.db*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- preparation --------------------------------------------------------

src=$file
if [ "$count" -gt 0 ]; then
    tcpdump -r "$file" -c "$count" -w "$tmp/head.pcap" 2>/dev/null || die "cannot cut '$file'"
    src=$tmp/head.pcap
fi

# Server ports: the source ports of SYN-ACKs, in numeric order.
mapfile -t server_ports < <(tcpdump -nn -r "$src" \
    'tcp[tcpflags] & (tcp-syn|tcp-ack) == (tcp-syn|tcp-ack)' 2>/dev/null |
    awk '{ n = split($3, a, "."); print a[n] }' | sort -n -u)
[ ${#server_ports[@]} -gt 0 ] || die "no SYN-ACK in '$src': cannot tell the server ports"
[ ${#server_ports[@]} -le 100 ] || die "more than 100 server ports in '$src'"
portmap=""
for i in "${!server_ports[@]}"; do
    portmap+="${portmap:+,}${server_ports[$i]}:$((base_port + i))"
done
last_port=$((base_port + ${#server_ports[@]} - 1))
filter="tcp portrange $base_port-$last_port"

tcprewrite -i "$src" -o "$tmp/rewritten.pcap" --portmap="$portmap" \
    --enet-smac=02:00:00:00:00:01 --enet-dmac=02:00:00:00:00:02 >/dev/null 2>"$tmp/rewrite.err" ||
    die "tcprewrite failed: $(cat "$tmp/rewrite.err")"
tcpdump -r "$tmp/rewritten.pcap" -w "$tmp/replay.pcap" "$filter" 2>/dev/null || die "cannot filter"

# Packets in a capture file.
packets_in() { tcpdump -nn -q -t -r "$1" 2>/dev/null | wc -l; }
n_src=$(packets_in "$src")
n_replay=$(packets_in "$tmp/replay.pcap")
bytes_replay=$(stat -c %s "$tmp/replay.pcap")

first=""
[ "$count" -gt 0 ] && first=" (first $count packets)"
echo "capture   $file$first"
echo "          $n_src packets; $n_replay match '$filter' and are replayed (server ports ${server_ports[*]} -> $base_port-$last_port)"
echo "          each step: up to $loops loops (--unique-ip), at most $duration s"
echo "slotscope $slotscope live -i lo -f '$filter' --ports $base_port-$last_port --db TMP.db --force${ss_args:+ $ss_args}"
echo "cpus      $(nproc); load average $(cut -d' ' -f1-3 /proc/loadavg)${pin:+; both pinned to CPU $pin}"
echo

# ---- one step -------------------------------------------------------------

# Sum of the softnet backlog drops over all CPUs (column 2, hex).
backlog_drops() {
    local sum=0 v
    while read -r _ v _; do sum=$((sum + 16#$v)); done </proc/net/softnet_stat
    echo "$sum"
}

# CPU ticks (user + sys) of a process.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# One counter from slotscope's database.
counter() { sqlite3 "$1" "SELECT value FROM counters WHERE name='$2'" 2>/dev/null || echo "?"; }

# tcpreplay options for a step name.
rate_args() {
    case $1 in
    top) echo "--topspeed" ;;
    pps:*) local n=${1#pps:}
        # Above 10k pps tcpreplay sends bursts (sleeping per packet is too coarse).
        if [ "$n" -ge 10000 ]; then echo "--pps=$n --pps-multi=$((n / 10000))"; else echo "--pps=$n"; fi ;;
    mbps:*) echo "--mbps=${1#mbps:}" ;;
    *) die "unknown step '$1' (pps:N, mbps:N or top)" ;;
    esac
}

best_pps=""
best_line=""
hz=$(getconf CLK_TCK)
taskset_cmd=()
[ -n "$pin" ] && taskset_cmd=(taskset -c "$pin")

printf '%-11s %9s %6s %9s %8s %9s %6s %8s %6s %9s %12s  %s\n' \
    step sent s pps Mbit/s received kdrop backlog lost commands "ss cpu" verdict
for step in $steps; do
    args=$(rate_args "$step") || exit 1
    db=${db_dir:-$tmp}/live-rate-step.db
    rm -f "$db" "$db"-wal "$db"-shm
    : >"$tmp/live.err"
    # shellcheck disable=SC2086  # ss_args is a list of arguments
    "${taskset_cmd[@]}" "$slotscope" live -i lo -f "$filter" --ports "$base_port-$last_port" \
        --db "$db" --force $ss_args >"$tmp/live.out" 2>"$tmp/live.err" &
    ss_pid=$!
    # Capturing once it says so (the filter is set before that line).
    for _ in $(seq 300); do
        grep -q "listening on" "$tmp/live.err" && break
        kill -0 "$ss_pid" 2>/dev/null || die "slotscope live failed: $(cat "$tmp/live.err")"
        sleep 0.1
    done
    grep -q "listening on" "$tmp/live.err" || die "slotscope live did not start"

    backlog0=$(backlog_drops)
    ticks0=$(cpu_ticks "$ss_pid")
    # shellcheck disable=SC2086  # args is a list of options
    "${taskset_cmd[@]}" tcpreplay -i lo --preload-pcap --loop="$loops" --unique-ip \
        --duration="$duration" $args "$tmp/replay.pcap" >"$tmp/replay.out" 2>&1
    # Wait until slotscope has read everything: its CPU time stops growing.
    prev=-1
    for _ in $(seq 100); do
        now=$(cpu_ticks "$ss_pid")
        [ "$now" = "$prev" ] && break
        prev=$now
        sleep 0.2
    done
    ticks1=$(cpu_ticks "$ss_pid")
    backlog1=$(backlog_drops)
    stop_slotscope

    sent=$(sed -n 's/^Actual: \([0-9]*\) packets.* sent in \([0-9.]*\) seconds.*/\1/p' "$tmp/replay.out")
    secs=$(sed -n 's/^Actual: .* sent in \([0-9.]*\) seconds.*/\1/p' "$tmp/replay.out")
    mbps=$(sed -n 's/^Rated: .*, \([0-9.]*\) Mbps, \([0-9.]*\) pps.*/\1/p' "$tmp/replay.out")
    pps=$(sed -n 's/^Rated: .*, \([0-9.]*\) Mbps, \([0-9.]*\) pps.*/\2/p' "$tmp/replay.out")
    failed=$(sed -n 's/^[[:space:]]*Failed packets:[[:space:]]*\([0-9]*\).*/\1/p' "$tmp/replay.out")
    if [ -z "$sent" ]; then
        echo "$step: tcpreplay failed:"; cat "$tmp/replay.out"; continue
    fi
    received=$(counter "$db" packets)
    kdrop=$(( $(counter "$db" kernel_drops) + $(counter "$db" if_drops) ))
    commands=$(counter "$db" commands)
    backlog=$((backlog1 - backlog0))
    lost=$((sent - received - kdrop))
    cpu_s=$(awk -v t=$((ticks1 - ticks0)) -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }')
    cpu_pct=$(awk -v c="$cpu_s" -v w="$secs" 'BEGIN { printf "%.0f", (w > 0 ? 100 * c / w : 0) }')
    verdict=ok
    [ "$received" = "$sent" ] && [ "$kdrop" -eq 0 ] || verdict=DROPS
    [ "${failed:-0}" -eq 0 ] || verdict="$verdict (tcpreplay failed $failed)"
    pps_int=${pps%.*}
    line=$(printf '%-11s %9s %6.2f %9s %8.1f %9s %6s %8s %6s %9s %6ss %4s%%  %s' \
        "$step" "$sent" "$secs" "$pps_int" "$mbps" "$received" "$kdrop" "$backlog" "$lost" \
        "$commands" "$cpu_s" "$cpu_pct" "$verdict")
    echo "$line"
    # The live summary line, as slotscope printed it.
    grep "packets captured" "$tmp/live.err" | sed 's/^/            /'
    if [ "$verdict" = ok ] && { [ -z "$best_pps" ] || [ "$pps_int" -gt "$best_pps" ]; }; then
        best_pps=$pps_int
        best_line=$line
    fi
done

echo
if [ -n "$best_pps" ]; then
    echo "highest rate with zero drops: $best_pps packets/s"
    echo "  $best_line"
else
    echo "no step without drops"
fi
echo "(replayed file: $n_replay packets, $bytes_replay bytes)"
