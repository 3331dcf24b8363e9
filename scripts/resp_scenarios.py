#!/usr/bin/python3
"""resp_scenarios.py - traffic for the resp/ fixture captures, and their expected counts.

Used by scripts/capture-standalone.sh (run it with /usr/bin/python3, which has
redis-py). Talks to a redis-server on 127.0.0.1:PORT only.

  resp_scenarios.py run SCENARIO PORT      send one scenario's traffic
  resp_scenarios.py tshark PCAP PORT       requests per command name, as
                                           tshark's RESP dissector sees them
  resp_scenarios.py expect SCENARIO PORT COMMANDSTATS TSHARKCOUNTS
                                           write the .expected file on stdout

Most scenarios use a tiny raw RESP client (below) so that exactly what goes on
the wire is known: RESP3 (HELLO 3), pushes, CLIENT REPLY, MONITOR. The "resp2"
scenario uses redis-py, a real client library.
"""
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET


def encode(args):
    """A multibulk request."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = str(a)
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Push(list):
    """A RESP3 push ('>')."""


class Conn:
    """A minimal RESP2/RESP3 client over one TCP connection."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        self.pushes = []

    def _fill(self):
        data = self.s.recv(65536)
        if not data:
            raise EOFError("connection closed")
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bytes(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        """One value; attributes are read and dropped."""
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-", b",", b"("):
            return rest if t != b"-" else Exception(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"_":
            return None
        if t == b"#":
            return rest == b"t"
        if t in (b"$", b"!", b"="):
            n = int(rest)
            return None if n < 0 else self._bytes(n)
        if t in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return None
            items = [self.read() for _ in range(n)]
            return Push(items) if t == b">" else items
        if t == b"%":
            n = int(rest)
            return {str(self.read()): self.read() for _ in range(n)}
        if t == b"|":
            n = int(rest)
            for _ in range(2 * n):
                self.read()
            return self.read()
        raise ValueError("bad reply line %r" % line)

    def reply(self):
        """The next value that is not a push (pushes are kept in self.pushes)."""
        while True:
            v = self.read()
            if isinstance(v, Push):
                self.pushes.append(v)
                continue
            return v

    def send(self, *args):
        self.s.sendall(encode(args))

    def call(self, *args):
        self.send(*args)
        return self.reply()

    def close(self):
        self.s.close()


def wait_for(cond, what):
    """Bounded wait for a condition."""
    for _ in range(100):
        if cond():
            return
        time.sleep(0.02)
    raise RuntimeError("timed out waiting for " + what)


# ------------------------------------------------------------------ scenarios

def sc_resp2(port):
    """RESP2 through redis-py: plain commands, a pipeline, errors, a blocking pop."""
    import redis
    r = redis.Redis(host="127.0.0.1", port=port)
    r.set("user:1", "alice")
    r.get("user:1")
    r.get("missing")
    r.incr("counter")
    r.incrby("counter", 5)
    r.mset({"{t}a": 1, "{t}b": 2})
    r.mget(["{t}a", "{t}b"])
    r.lpush("list", "a", "b", "c")
    r.lrange("list", 0, -1)
    r.hset("h", mapping={"f1": "v1", "f2": "v2"})
    r.hgetall("h")
    r.expire("user:1", 100)
    r.ttl("user:1")
    r.exists("user:1", "missing")
    r.set("big", "x" * 20000)          # a value spread over several segments
    r.get("big")
    p = r.pipeline(transaction=False)
    for i in range(50):
        p.set("p:%d" % i, i)
        p.get("p:%d" % i)
    p.execute()
    for args in (("GET",), ("NOSUCHCOMMAND", "x"), ("INCR", "user:1")):
        try:
            r.execute_command(*args)
        except redis.ResponseError:
            pass
    r.blpop("emptylist", timeout=1)
    r.delete("user:1", "list", "h", "big")
    r.ping()
    r.close()


def sc_resp3(port):
    """RESP3 via HELLO 3: map, set, double, null replies; back to RESP2; RESET; QUIT."""
    c = Conn(port)
    c.call("HELLO", "3")
    c.call("SET", "k", "v")
    c.call("GET", "k")
    c.call("GET", "nokey")
    c.call("HSET", "h3", "a", "1", "b", "2")
    c.call("HGETALL", "h3")
    c.call("SADD", "s3", "x", "y")
    c.call("SMEMBERS", "s3")
    c.call("ZADD", "z3", "1.5", "m")
    c.call("ZSCORE", "z3", "m")
    c.call("EXISTS", "k")
    c.call("CLIENT", "INFO")
    c.call("HELLO", "2")
    c.call("HGETALL", "h3")
    c.call("HELLO", "3", "SETNAME", "resp3-conn")
    c.call("RESET")
    c.call("PING")
    c.call("DEL", "k", "h3", "s3", "z3")
    c.call("QUIT")
    c.close()


def sc_tracking(port):
    """Client tracking in RESP3: invalidation pushes interleaved with replies;
    RESP3 pub/sub messages too."""
    c1, c2 = Conn(port), Conn(port)
    c1.call("HELLO", "3")
    c1.call("CLIENT", "TRACKING", "ON")
    c2.call("SET", "t1", "a")
    c2.call("SET", "t2", "b")
    c1.call("GET", "t1")
    c1.call("GET", "t2")
    c2.call("SET", "t1", "changed")
    wait_for(lambda: c1.s.recv(65536, socket.MSG_PEEK) != b"", "an invalidation")
    c1.call("GET", "t1")            # the push is read first, then the reply
    c2.call("MSET", "t1", "x", "t2", "y")
    time.sleep(0.05)
    c1.call("PING")
    c1.send("SUBSCRIBE", "news")
    c1.read()                        # the subscribe confirmation is a push in RESP3
    c2.call("PUBLISH", "news", "hello")
    c1.call("GET", "t2")
    c1.send("UNSUBSCRIBE", "news")
    c1.read()
    c1.call("CLIENT", "TRACKING", "OFF")
    c2.call("DEL", "t1", "t2")
    c1.call("QUIT")
    c2.call("QUIT")
    c1.close()
    c2.close()


def sc_pubsub(port):
    """RESP2 pub/sub: one confirmation per channel, messages are pushes, PING
    in subscribed mode, unsubscribe from all, sharded channels."""
    c1, c2 = Conn(port), Conn(port)
    c1.send("SUBSCRIBE", "a", "b")
    c1.read(), c1.read()
    c1.send("PSUBSCRIBE", "n*")
    c1.read()
    c2.call("PUBLISH", "a", "x")
    c2.call("PUBLISH", "news", "y")
    c1.read(), c1.read()             # message, pmessage
    c1.call("PING")                  # ["pong", ""]
    c1.send("UNSUBSCRIBE")
    c1.read(), c1.read()
    c1.send("PUNSUBSCRIBE")
    c1.read()
    c1.send("SSUBSCRIBE", "s1")
    c1.read()
    c2.call("SPUBLISH", "s1", "m")
    c1.read()
    c1.send("SUNSUBSCRIBE", "s1")
    c1.read()
    c1.call("GET", "after")
    c1.call("QUIT")
    c2.call("QUIT")
    c1.close()
    c2.close()


def sc_multi(port):
    """MULTI/EXEC: queued replies, EXEC's array, EXECABORT, DISCARD, WATCH."""
    c1, c2 = Conn(port), Conn(port)
    c1.call("MULTI")
    c1.call("SET", "m1", "1")
    c1.call("INCR", "m1")
    c1.call("GET", "m1")
    c1.call("EXEC")
    c1.call("MULTI")
    c1.call("APPEND", "m2", "x")      # queued, never runs: the transaction aborts
    c1.call("NOSUCHCOMMAND")          # error at queue time
    c1.call("EXEC")                   # -EXECABORT
    c1.call("MULTI")
    c1.call("DECR", "m1")             # discarded
    c1.call("DISCARD")
    c1.call("WATCH", "m1")
    c2.call("SET", "m1", "changed")
    c1.call("MULTI")
    c1.call("SETNX", "m3", "1")       # queued; EXEC returns nil (WATCH failed)
    c1.call("EXEC")
    # pipelined transaction
    c1.s.sendall(encode(("MULTI",)) + encode(("LPUSH", "ml", "a")) +
                 encode(("LLEN", "ml")) + encode(("EXEC",)))
    for _ in range(4):
        c1.reply()
    c1.call("DEL", "m1", "ml")
    c1.call("QUIT")
    c2.call("QUIT")
    c1.close()
    c2.close()


def sc_clientreply(port):
    """CLIENT REPLY OFF/ON/SKIP, MONITOR, RESET."""
    c1, mon = Conn(port), Conn(port)
    mon.call("MONITOR")
    c1.call("PING")
    c1.send("CLIENT", "REPLY", "OFF")
    c1.send("PING")
    c1.send("SET", "cr", "1")
    c1.send("CLIENT", "REPLY", "SKIP")   # no effect while OFF
    c1.call("CLIENT", "REPLY", "ON")
    c1.send("CLIENT", "REPLY", "SKIP")
    c1.send("INCR", "cr")                # skipped
    c1.call("GET", "cr")
    c1.call("DEL", "cr")
    time.sleep(0.05)
    mon.send("RESET")
    while mon.reply() != b"RESET":
        pass
    mon.call("PING")
    mon.call("QUIT")
    c1.call("QUIT")
    mon.close()
    c1.close()


SCENARIOS = {
    "resp2": sc_resp2,
    "resp3": sc_resp3,
    "tracking": sc_tracking,
    "pubsub": sc_pubsub,
    "multi": sc_multi,
    "clientreply": sc_clientreply,
}

# Command names for which INFO commandstats does not give the number of
# commands on the wire, per scenario, and why.
NOT_EXECUTED = {
    "multi": {
        "APPEND": "queued in a transaction that EXECABORT discarded",
        "DECR": "queued in a transaction that DISCARD dropped",
        "SETNX": "queued in a transaction whose WATCH failed",
        "EXEC": "EXECABORT is counted as a failed call, not per request",
    },
}


# ------------------------------------------------------------------ tshark

def tshark_counts(pcap, port):
    """Requests per command name: first bulk string of each RESP array sent to
    the server port, from tshark's PDML."""
    out = subprocess.run(["tshark", "-r", pcap, "-d", "tcp.port==%d,resp" % port, "-T", "pdml"],
                         check=True, capture_output=True).stdout
    counts = {}
    root = ET.fromstring(out)
    for pkt in root.iter("packet"):
        dport = None
        for f in pkt.iter("field"):
            if f.get("name") == "tcp.dstport":
                dport = int(f.get("show"))
                break
        if dport != port:
            continue
        for proto in pkt.findall("proto"):
            if proto.get("name") != "resp":
                continue
            for arr in proto.findall("field"):
                if arr.get("name") != "resp.array":
                    continue
                # tshark shows a request that continues in the next segment
                # once per segment; only the reassembled one counts
                if any(f.get("name") in ("resp.reassembled_in_next_frame", "resp.partial")
                       for f in arr.iter("field")):
                    continue
                first = [f for f in arr.findall("field") if f.get("name") == "resp.bulk_string"]
                if not first:
                    continue
                val = [f for f in first[0].findall("field")
                       if f.get("name") == "resp.bulk_string.value"]
                if not val:
                    continue
                raw = bytes.fromhex(val[0].get("value")).decode("latin-1").upper()
                name = "".join(ch if "!" <= ch <= "~" else "?" for ch in raw) or "?"
                counts[name] = counts.get(name, 0) + 1
    return counts


def commandstats(path):
    """calls + rejected_calls per command name (subcommands folded)."""
    counts = {}
    for line in open(path, encoding="latin-1"):
        line = line.strip()
        if not line.startswith("cmdstat_"):
            continue
        name, fields = line[len("cmdstat_"):].split(":", 1)
        kv = dict(f.split("=", 1) for f in fields.split(","))
        n = int(kv.get("calls", 0)) + int(kv.get("rejected_calls", 0))
        if name == "config|resetstat":
            continue  # the script's own reset, over the unix socket
        top = name.split("|")[0].upper()
        counts[top] = counts.get(top, 0) + n
    return counts


def expect(scenario, port, stats_path, tshark_path):
    tsh = {}
    for line in open(tshark_path):
        name, n = line.split()
        tsh[name] = int(n)
    cs = commandstats(stats_path)
    skip = NOT_EXECUTED.get(scenario, {})
    print("# expected counts for %s.pcap, server 127.0.0.1:%d" % (scenario, port))
    print("# made by scripts/capture-standalone.sh; do not edit")
    print("# requests NAME N: requests named NAME on the wire (tshark's RESP dissector)")
    print("# executed NAME N: calls + rejected_calls in the server's INFO commandstats")
    print("port %d" % port)
    print("# a whole capture of a well-behaved client and server: nothing unpaired")
    print("clean")
    for name in sorted(tsh):
        print("requests %s %d" % (name, tsh[name]))
    for name in sorted(cs):
        if name in skip:
            print("# not compared: executed %s %d (%s)" % (name, cs[name], skip[name]))
            continue
        print("executed %s %d" % (name, cs[name]))


def main(argv):
    if len(argv) == 4 and argv[1] == "run":
        SCENARIOS[argv[2]](int(argv[3]))
    elif len(argv) == 4 and argv[1] == "tshark":
        for name, n in sorted(tshark_counts(argv[2], int(argv[3])).items()):
            print(name, n)
    elif len(argv) == 6 and argv[1] == "expect":
        expect(argv[2], int(argv[3]), argv[4], argv[5])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
