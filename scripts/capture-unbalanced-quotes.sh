#!/usr/bin/env bash
# capture-unbalanced-quotes.sh - make tests/fixtures/resp/unbalanced-quotes.pcap:
# inline commands a real redis-server rejects whole ("-ERR Protocol error:
# unbalanced quotes in request", then it closes the connection), so that the
# decoder's pairing of that error with its request line is checked against
# the server itself. Needs root (tcpdump on lo), redis-server, python3.
#   scripts/capture-unbalanced-quotes.sh [PORT] [OUT.pcap]
set -euo pipefail
port=${1:-31200}
out=${2:-tests/fixtures/resp/unbalanced-quotes.pcap}
work=$(mktemp -d /tmp/unbalanced.XXXXXX)
redis-server --port "$port" --save "" --appendonly no --daemonize yes \
    --pidfile "$work/r.pid" --logfile "$work/r.log" --dir "$work"
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
tcpdump -i lo -w "$work/q.pcap" -U "tcp port $port" >/dev/null 2>&1 &
td=$!
sleep 1
PORT=$port /usr/bin/python3 - <<'PY'
import os, socket, time
port = int(os.environ["PORT"])
def session(chunks):
    s = socket.create_connection(("127.0.0.1", port))
    for c in chunks:
        try:
            s.sendall(c)
        except OSError:
            break
        time.sleep(0.05)
    time.sleep(0.1)
    s.close()
# 1: a good command, an unbalanced double quote, then a PING never answered
session([b"SET a 1\r\n", b'GET "abc\r\n', b"PING\r\n"])
# 2: pipelined: multibulk PING, an unbalanced single quote, an inline PING
session([b"*1\r\n$4\r\nPING\r\nSET k 'x\r\nPING\r\n"])
# 3: a closing quote not followed by a space (also rejected whole)
session([b"PING\r\n", b'GET "a"b c\r\n'])
PY
sleep 1
kill "$td"; wait "$td" 2>/dev/null || true
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
cp "$work/q.pcap" "$out"
rm -rf "$work"
echo "wrote $out"
