#!/usr/bin/python3
"""bus-clients.py - the clients of the bus-writes scenario (bus-writes.sh).

Run with Debian's /usr/bin/python3 (python3-redis). Each process speaks from
its own 127.0.0.x when started with LD_PRELOAD=bindshim.so SS_BIND_ADDR=...

    bus-clients.py writer --base P --name W --log FILE --stop FILE
                          [--rate N] [--refresh moved|lazy:SECONDS]
        Writes until FILE --stop exists. Every write is SET; most keys are new
        ("W:u:SEQ"), every fourth overwrites one of ten keys ("W:o:J"), every
        eighth goes to the hash tag {mig} (the slot the scenario migrates).
        The value is always "W-SEQ". The writer routes by its own slot map
        (CLUSTER SLOTS): with --refresh moved it reloads the map after every
        MOVED (a correct client); with lazy:S it follows a MOVED for that
        command only and reloads the map every S seconds (a stale client).
        ASK is followed with ASKING on the target's connection. Log lines
        (tab separated, times in us since the epoch):
            ack  TS_US  KEY  VALUE  PORT      the node PORT answered +OK
            moved TS_US KEY PORT TARGET_PORT
            ask  TS_US  KEY  PORT  TARGET_PORT
            err  TS_US  KEY  PORT  TEXT       timeout, refused, CLUSTERDOWN...
            refresh TS_US PORT                 slot map reloaded from PORT
    bus-clients.py poll --base P --log FILE --stop FILE [--every S]
        CLUSTER NODES of every node, every S seconds (default 0.5), each with
        a 0.3 s timeout (a stopped node does not stall the poll):
            nodes TS_US PORT then the reply's lines, each prefixed "  "
    bus-clients.py readback --base P --logs FILE... --out FILE
        Read every acknowledged key back from the master owning its slot and
        write "key KEY VALUE" (VALUE "-" when the key does not exist).

Facts: https://redis.io/docs/reference/cluster-spec/ (MOVED, ASK, ASKING).
Every socket operation has a timeout; every retry loop is bounded.
"""

import argparse
import os
import sys
import time

import redis
from redis.crc import key_slot

HOST = "127.0.0.1"
IO_TIMEOUT_S = 1.0
MAX_TRIES = 5       # attempts per write (redirects, errors) before giving up


def now_us():
    return int(time.time() * 1000000)


class Router:
    """A slot -> port map from CLUSTER SLOTS and one connection per node."""

    def __init__(self, base):
        self.base = base
        self.slots = [None] * 16384
        self.conns = {}

    def conn(self, port):
        c = self.conns.get(port)
        if c is None:
            c = redis.Redis(host=HOST, port=port, socket_timeout=IO_TIMEOUT_S,
                            socket_connect_timeout=IO_TIMEOUT_S,
                            single_connection_client=True, decode_responses=True)
            self.conns[port] = c
        return c

    def drop(self, port):
        c = self.conns.pop(port, None)
        if c is not None:
            try:
                c.close()
            except Exception:
                pass

    def refresh(self, first=None):
        """Reload the map from `first`, else any node that answers; the port
        it came from, or None."""
        ports = list(range(self.base, self.base + 6))
        if first is not None:
            ports.remove(first)
            ports.insert(0, first)
        for p in ports:
            try:
                reply = self.conn(p).execute_command("CLUSTER", "SLOTS")
            except Exception:
                self.drop(p)
                continue
            for entry in reply:
                lo, hi, master = int(entry[0]), int(entry[1]), entry[2]
                for s in range(lo, hi + 1):
                    self.slots[s] = int(master[1])
            return p
        return None


def target_port(text):
    """The port of "MOVED 123 127.0.0.1:31401"."""
    return int(text.split()[2].rsplit(":", 1)[1])


def writer(args):
    r = Router(args.base)
    log = open(args.log, "a", buffering=1)

    def emit(*fields):
        log.write("\t".join(str(f) for f in fields) + "\n")

    p = r.refresh()
    emit("refresh", now_us(), p)
    lazy_s = None
    if args.refresh.startswith("lazy:"):
        lazy_s = float(args.refresh[5:])
    last_refresh = time.time()
    period = 1.0 / args.rate
    seq = 0
    next_t = time.time()
    while not os.path.exists(args.stop):
        seq += 1
        if seq % 8 == 0:
            key = "{mig}:%s:%d" % (args.name, seq)
        elif seq % 4 == 0:
            key = "%s:o:%d" % (args.name, (seq // 4) % 10)
        else:
            key = "%s:u:%d" % (args.name, seq)
        value = "%s-%d" % (args.name, seq)
        if lazy_s is not None and time.time() - last_refresh >= lazy_s:
            emit("refresh", now_us(), r.refresh())
            last_refresh = time.time()
        port = r.slots[key_slot(key.encode())]
        asking = False
        for _ in range(MAX_TRIES):
            if port is None:
                emit("refresh", now_us(), r.refresh())
                port = r.slots[key_slot(key.encode())]
                if port is None:
                    time.sleep(0.1)
                    continue
            c = r.conn(port)
            try:
                if asking:
                    c.execute_command("ASKING")
                c.execute_command("SET", key, value)
                emit("ack", now_us(), key, value, port)
                break
            except redis.exceptions.ResponseError as e:
                text = str(e)
                asking = False
                if text.startswith("MOVED"):
                    to = target_port(text)
                    emit("moved", now_us(), key, port, to)
                    if lazy_s is None:
                        emit("refresh", now_us(), r.refresh(to))
                    port = to
                elif text.startswith("ASK"):
                    to = target_port(text)
                    emit("ask", now_us(), key, port, to)
                    port, asking = to, True
                else:
                    emit("err", now_us(), key, port, text.replace("\t", " ")[:80])
                    time.sleep(0.1)
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
                emit("err", now_us(), key, port, type(e).__name__)
                r.drop(port)
                time.sleep(0.1)
                emit("refresh", now_us(), r.refresh())
                port = r.slots[key_slot(key.encode())]
        next_t += period
        delay = next_t - time.time()
        if delay > 0:
            time.sleep(delay)
        else:
            next_t = time.time()
    log.close()


def poll(args):
    log = open(args.log, "a", buffering=1)
    r = Router(args.base)
    while not os.path.exists(args.stop):
        t0 = time.time()
        for p in range(args.base, args.base + 6):
            try:
                c = redis.Redis(host=HOST, port=p, socket_timeout=0.3,
                                socket_connect_timeout=0.3, decode_responses=True)
                text = c.execute_command("CLUSTER", "NODES")
                c.close()
            except Exception as e:
                log.write("nodes\t%d\t%d\tERR %s\n" % (now_us(), p, type(e).__name__))
                continue
            if isinstance(text, bytes):
                text = text.decode()
            body = "".join("  %s\n" % l for l in text.splitlines() if l.strip())
            log.write("nodes\t%d\t%d\n%s" % (now_us(), p, body))
        rest = args.every - (time.time() - t0)
        if rest > 0:
            time.sleep(rest)
    del r
    log.close()


def readback(args):
    keys = {}
    for name in args.logs:
        with open(name) as f:
            for line in f:
                w = line.rstrip("\n").split("\t")
                if w[0] == "ack":
                    keys[w[2]] = True
    r = Router(args.base)
    if r.refresh() is None:
        sys.exit("bus-clients.py readback: no node answers CLUSTER SLOTS")
    with open(args.out, "w") as out:
        for key in sorted(keys):
            value = None
            for _ in range(MAX_TRIES):
                port = r.slots[key_slot(key.encode())]
                try:
                    value = r.conn(port).execute_command("GET", key)
                    break
                except redis.exceptions.ResponseError as e:
                    if not str(e).startswith("MOVED"):
                        raise
                    r.refresh(target_port(str(e)))
            else:
                sys.exit("bus-clients.py readback: no answer for %s" % key)
            out.write("key\t%s\t%s\n" % (key, "-" if value is None else value))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("writer")
    w.add_argument("--base", type=int, required=True)
    w.add_argument("--name", required=True)
    w.add_argument("--log", required=True)
    w.add_argument("--stop", required=True)
    w.add_argument("--rate", type=float, default=25.0)
    w.add_argument("--refresh", default="moved")
    p = sub.add_parser("poll")
    p.add_argument("--base", type=int, required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--stop", required=True)
    p.add_argument("--every", type=float, default=0.5)
    b = sub.add_parser("readback")
    b.add_argument("--base", type=int, required=True)
    b.add_argument("--logs", nargs="+", required=True)
    b.add_argument("--out", required=True)
    args = ap.parse_args()
    {"writer": writer, "poll": poll, "readback": readback}[args.cmd](args)


if __name__ == "__main__":
    main()
