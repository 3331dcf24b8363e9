#!/usr/bin/python3
"""clients.py - the clients of slotscope's reshard scenario, correct and broken.

Run with Debian's /usr/bin/python3 (it has python3-redis, redis-py 4.x).

    clients.py scenario --cluster DIR --out DIR    run the whole scenario against
                                                   a cluster started by cluster.sh
    clients.py replies --port P --out DIR          save raw CLUSTER SLOTS/SHARDS/
                                                   NODES replies (RESP2 and RESP3)
    clients.py roster                              the client table, as markdown

Every client speaks from its own loopback source address (127.0.0.X), so that
slotscope, which groups clients by host, sees each one as its own client:

    127.0.0.1   redis-cli -c (cannot bind a source address; also the admin
                commands of cluster.sh and redis-cli --cluster)
    127.0.0.2   redis-py RedisCluster (a Connection subclass binds the source)
    127.0.0.3   a hand-written correct client on raw sockets
    127.0.0.11+ one deliberately broken client per finding kind, raw sockets

The replicas' replication links leave from 127.0.1.N (cluster.sh sets
bind-source-addr), so they never share an address with a client. MIGRATE's
connections (source node -> target, RESTORE-ASKING) ignore bind-source-addr in
Redis 7.0 and leave from 127.0.0.1, next to redis-cli.

The scenario drives real migrations while the clients run (see scenario()), and
writes OUT/expected.tsv from what each client actually did: a broken client only
yields an expected finding once it has checked that its mistake happened and got
the reply that shows it (a client that could not make its mistake stops the run).

Protocol facts: https://redis.io/docs/reference/cluster-spec/ (MOVED, ASK,
ASKING, TRYAGAIN, READONLY), https://redis.io/docs/reference/protocol-spec/ (RESP2
and RESP3 framing).
"""

import argparse
import collections
import json
import os
import socket
import subprocess
import sys
import threading
import time

NODE_HOST = "127.0.0.1"          # every node listens here
IO_TIMEOUT_S = 5.0               # bound on every socket read/connect
HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER_SH = os.path.join(HERE, "cluster.sh")

# Thresholds of slotscope's detectors that the scenario must clear (defaults of
# analysis/analysis.h's an_config_defaults); the broken clients exceed them.
LOOP_MAX_REDIRECTS = 5           # redirect_loop: more than this per operation
TRYAGAIN_MIN = 10                # tryagain_storm: this many quick retries,
TRYAGAIN_MAX = 50                # ... or more than this many, any backoff
ASK_CACHED_MIN = 2               # ask_cached: direct commands to the importer
MOVED_IGNORED_MIN = 3            # moved_ignored: MOVEDs after the first

# ----------------------------------------------------------------- slots


def crc16(data):
    """CRC16-CCITT (XMODEM), as Redis Cluster uses: poly 0x1021, init 0."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def key_slot(key):
    """Hash slot of a key: only a non-empty {tag} is hashed when there is one."""
    if isinstance(key, str):
        key = key.encode()
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key) % 16384


def tag_for_slot(pred, prefix="t"):
    """The first hash tag "<prefix><n>" whose slot satisfies pred (bounded)."""
    for n in range(200000):
        tag = "%s%d" % (prefix, n)
        if pred(key_slot(tag)):
            return tag
    raise RuntimeError("no tag found")

# ----------------------------------------------------------------- RESP


class Err(str):
    """An error reply; .kind is its first word (MOVED, ASK, TRYAGAIN, ...)."""

    @property
    def kind(self):
        return self.split(" ", 1)[0]

    def target_port(self):
        """Port of a MOVED/ASK target ("MOVED 3999 127.0.0.1:30101")."""
        return int(self.split(" ")[2].rsplit(":", 1)[1])


def encode(args):
    """A command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = str(a)
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Reader:
    """Reads whole RESP2/RESP3 replies from a socket, keeping their raw bytes."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()
        self.pos = 0

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("connection closed by the node")
        self.buf += data

    def _line(self):
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = bytes(self.buf[self.pos:end])
                self.pos = end + 2
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n + 2
        return data

    def _value(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return Err(rest.decode())
        if t == b":":
            return int(rest)
        if t in (b"$", b"=", b"!"):        # bulk, verbatim, blob error
            n = int(rest)
            if n < 0:
                return None
            data = self._exact(n)
            return Err(data.decode()) if t == b"!" else data
        if t in (b"*", b"~", b">"):        # array, set, push
            n = int(rest)
            return None if n < 0 else [self._value() for _ in range(n)]
        if t == b"%":                      # map: kept as a list of pairs
            return [(self._value(), self._value()) for _ in range(int(rest))]
        if t == b"|":                      # attribute: skip, then the value
            for _ in range(int(rest)):
                self._value()
                self._value()
            return self._value()
        if t == b"_":
            return None
        if t == b"#":
            return rest == b"t"
        if t in (b",", b"("):
            return rest.decode()
        raise ValueError("not RESP: %r" % line[:40])

    def read(self):
        """The next reply and the exact bytes it took on the wire."""
        start = self.pos
        value = self._value()
        raw = bytes(self.buf[start:self.pos])
        del self.buf[:self.pos]
        self.pos = 0
        return value, raw


class Conn:
    """One TCP connection from a chosen source address to a node."""

    def __init__(self, src, port):
        self.port = port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((src, 0))
        self.sock.settimeout(IO_TIMEOUT_S)
        self.sock.connect((NODE_HOST, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = Reader(self.sock)

    def send(self, *cmds):
        """Write one or more commands (each a tuple) in a single write."""
        self.sock.sendall(b"".join(encode(c) for c in cmds))

    def read(self):
        return self.reader.read()[0]

    def call(self, *args):
        self.send(args)
        return self.read()

    def close(self):
        self.sock.close()


def parse_cluster_slots(reply):
    """CLUSTER SLOTS -> (slot -> master port, master port -> [replica ports])."""
    owner = {}
    replicas = {}
    for entry in reply:
        lo, hi, master = entry[0], entry[1], entry[2]
        mport = int(master[1])
        for s in range(lo, hi + 1):
            owner[s] = mport
        replicas.setdefault(mport, [])
        for r in entry[3:]:
            if int(r[1]) not in replicas[mport]:
                replicas[mport].append(int(r[1]))
    return owner, replicas

# ----------------------------------------------------------------- clients


class Client:
    """A client with its own source address, its connections and a tally of
    what it did and what it got (self.did)."""

    addr = None
    role = ""          # one line: what the client does
    findings = ()      # finding kinds it is built to produce

    def __init__(self, sc):
        self.sc = sc
        self.conns = {}
        self.map = {}
        self.did = collections.Counter()

    def conn(self, port):
        """The client's (only) connection to a node, opened on first use."""
        if port not in self.conns:
            self.conns[port] = Conn(self.addr, port)
        return self.conns[port]

    def refresh_map(self, port=None):
        reply = self.conn(port or self.sc.seed).call("CLUSTER", "SLOTS")
        self.map, self.replicas = parse_cluster_slots(reply)
        self.did["cluster_slots"] += 1

    def owner(self, key):
        return self.map[key_slot(key)]

    def close(self):
        for c in self.conns.values():
            c.close()
        self.conns = {}

    def expected(self):
        """The findings this client must get, after checking it made its
        mistake; raises if it did not (then the scenario is wrong)."""
        return []

    def require(self, what, at_least):
        if self.did[what] < at_least:
            raise RuntimeError("%s (%s): '%s' happened %d times, need %d"
                               % (type(self).__name__, self.addr, what,
                                  self.did[what], at_least))


class CorrectClient(Client):
    """Correct cluster client on raw sockets: ASK -> ASKING + the command on the
    same connection, once, map unchanged; MOVED -> refresh the map with CLUSTER
    SLOTS and go to the owner; TRYAGAIN -> bounded exponential backoff."""

    addr = "127.0.0.3"
    role = "correct client on raw sockets (ASKING on the same connection, " \
           "CLUSTER SLOTS refresh on MOVED, TRYAGAIN backoff 5/10/20 ms)"
    MAX_REDIRECTS = 5
    TRYAGAIN_RETRIES = 3

    def execute(self, *args):
        key = args[1]
        port = self.owner(key)
        asking = False
        backoff = 0.005
        tries = 0
        for _ in range(self.MAX_REDIRECTS + self.TRYAGAIN_RETRIES + 1):
            c = self.conn(port)
            if asking:
                c.send(("ASKING",), args)   # same connection, back to back
                c.read()
                reply = c.read()
                asking = False
            else:
                reply = c.call(*args)
            if not isinstance(reply, Err):
                return reply
            self.did[reply.kind] += 1
            if reply.kind == "MOVED":
                self.refresh_map(reply.target_port())
                port = self.owner(key)
            elif reply.kind == "ASK":
                port = reply.target_port()
                asking = True
            elif reply.kind == "TRYAGAIN" and tries < self.TRYAGAIN_RETRIES:
                tries += 1
                time.sleep(backoff)
                backoff *= 2
                port = self.owner(key)
            else:
                return reply
        return reply


class AskCached(Client):
    """ask_cached: follows an ASK properly once, but then stores the target as
    the slot's owner; the next, independent command for the slot goes straight
    to the importing node without ASKING and gets MOVED back."""

    addr = "127.0.0.11"
    role = "ask_cached: after an ASK, puts the target in its slot map; the " \
           "next command for the slot goes to the importing node without ASKING"
    findings = ("ask_cached",)

    def ask_phase(self):
        sc = self.sc
        for km, ku in zip(sc.s1_migrated[:3], sc.s1_remaining[:3]):
            reply = self.conn(self.owner(km)).call("GET", km)
            if isinstance(reply, Err) and reply.kind == "ASK":
                target = self.conn(reply.target_port())
                target.send(("ASKING",), ("GET", km))
                target.read()
                target.read()
                self.map[sc.s1] = reply.target_port()     # the mistake
            # An independent command for a key the source still holds.
            port = self.owner(ku)
            reply = self.conn(port).call("GET", ku)
            if port != sc.s1_src and isinstance(reply, Err) and reply.kind == "MOVED":
                self.did["direct_to_importing_moved"] += 1
                self.map[sc.s1] = reply.target_port()     # MOVED is obeyed
                self.conn(reply.target_port()).call("GET", ku)

    def expected(self):
        self.require("direct_to_importing_moved", ASK_CACHED_MIN)
        return list(self.findings)


class AskingMissing(Client):
    """asking_missing: follows ASK to the target but never sends ASKING; the
    target answers MOVED back to the source and the client gives up."""

    addr = "127.0.0.12"
    role = "asking_missing: follows ASK to the target without ASKING, gets " \
           "MOVED back, gives up"
    findings = ("asking_missing",)

    def ask_phase(self):
        for km in self.sc.s1_migrated[3:5]:
            reply = self.conn(self.owner(km)).call("GET", km)
            if isinstance(reply, Err) and reply.kind == "ASK":
                reply = self.conn(reply.target_port()).call("GET", km)
                if isinstance(reply, Err) and reply.kind == "MOVED":
                    self.did["ask_followed_without_asking"] += 1

    def expected(self):
        self.require("ask_followed_without_asking", 2)
        return list(self.findings)


class AskingOtherConnection(Client):
    """asking_other_connection: keeps two connections to each node (a pool);
    after ASK it sends ASKING on one and the command on the other."""

    addr = "127.0.0.13"
    role = "asking_other_connection: ASKING on one pooled connection to the " \
           "target, the command on another"
    findings = ("asking_other_connection",)

    def ask_phase(self):
        for km in self.sc.s1_migrated[5:7]:
            reply = self.conn(self.owner(km)).call("GET", km)
            if isinstance(reply, Err) and reply.kind == "ASK":
                port = reply.target_port()
                first = self.conn(port)
                second = Conn(self.addr, port)
                first.call("ASKING")
                reply = second.call("GET", km)
                second.close()
                if isinstance(reply, Err) and reply.kind == "MOVED":
                    self.did["asking_on_other_connection"] += 1

    def expected(self):
        self.require("asking_on_other_connection", 2)
        return list(self.findings)


class AskingInterleaved(Client):
    """asking_interleaved: a shared connection where another command slips in
    between ASKING and the redirected command (once pipelined, once one by
    one), so ASKING is spent on the wrong command."""

    addr = "127.0.0.14"
    role = "asking_interleaved: ASKING, then another command (GET of a key the " \
           "target owns, or PING), then the redirected command, one connection"
    findings = ("asking_interleaved",)

    def ask_phase(self):
        sc = self.sc
        other = sc.key_on(sc.s1_dst)
        for i, km in enumerate(sc.s1_migrated[7:9]):
            reply = self.conn(self.owner(km)).call("GET", km)
            if not (isinstance(reply, Err) and reply.kind == "ASK"):
                continue
            target = self.conn(reply.target_port())
            if i == 0:      # pipelined: three commands in one write
                target.send(("ASKING",), ("GET", other), ("GET", km))
                replies = [target.read() for _ in range(3)]
            else:           # one by one
                replies = [target.call("ASKING"), target.call("PING"),
                           target.call("GET", km)]
            last = replies[-1]
            if isinstance(last, Err) and last.kind == "MOVED":
                self.did["asking_spent_on_other_command"] += 1

    def expected(self):
        self.require("asking_spent_on_other_command", 2)
        return list(self.findings)


class RedirectLoop(Client):
    """redirect_loop: follows every redirect at once and never sends ASKING, so
    one GET bounces source -ASK-> target -MOVED-> source ... until its own cap
    of 8 redirects. Not sending ASKING is also asking_missing."""

    addr = "127.0.0.15"
    role = "redirect_loop: follows ASK without ASKING and MOVED back, " \
           "bouncing 8 times per GET (also asking_missing, its root cause)"
    findings = ("redirect_loop", "asking_missing")
    CAP = 8

    def ask_phase(self):
        for km in self.sc.s1_migrated[9:11]:
            port = self.owner(km)
            hops = 0
            for _ in range(self.CAP + 1):
                reply = self.conn(port).call("GET", km)
                if not (isinstance(reply, Err) and reply.kind in ("ASK", "MOVED")):
                    break
                hops += 1
                if hops >= self.CAP:
                    break
                if reply.kind == "ASK":         # followed without ASKING
                    self.did["ask_followed_without_asking"] += 1
                port = reply.target_port()
            if hops > LOOP_MAX_REDIRECTS:
                self.did["operation_over_redirect_cap"] += 1

    def expected(self):
        self.require("operation_over_redirect_cap", 2)
        return list(self.findings)


class MovedIgnored(Client):
    """moved_ignored: follows MOVED for the one command but never updates its
    map, so every later command for the slot goes to the old owner first."""

    addr = "127.0.0.16"
    role = "moved_ignored: after the slot moved, keeps sending it to the old " \
           "owner (follows each MOVED, never updates its map)"
    findings = ("moved_ignored",)

    def moved_phase(self):
        for key in self.sc.s1_keys[:6]:
            reply = self.conn(self.owner(key)).call("GET", key)
            if isinstance(reply, Err) and reply.kind == "MOVED":
                self.did["moved"] += 1
                self.conn(reply.target_port()).call("GET", key)

    def expected(self):
        self.require("moved", MOVED_IGNORED_MIN + 2)
        return list(self.findings)


class TryagainStorm(Client):
    """tryagain_storm: an MGET of two keys of the migrating slot, one moved and
    one not, gets TRYAGAIN and is retried at once, 60 times, no backoff. 60 is
    over slotscope's tryagain_max (50), so the storm is one whatever the
    delays of a loaded machine do to the "no backoff" timing."""

    addr = "127.0.0.17"
    role = "tryagain_storm: MGET of a moved and a not-yet-moved key of the " \
           "migrating slot, retried 60 times without backoff"
    findings = ("tryagain_storm",)
    RETRIES = 60

    def ask_phase(self):
        sc = self.sc
        km, ku = sc.s1_migrated[0], sc.s1_remaining[0]
        c = self.conn(self.owner(ku))
        for _ in range(self.RETRIES + 1):
            reply = c.call("MGET", km, ku)
            if not (isinstance(reply, Err) and reply.kind == "TRYAGAIN"):
                break
            self.did["tryagain"] += 1

    def expected(self):
        self.require("tryagain", TRYAGAIN_MAX + 2)
        return list(self.findings)


class RedirectUnfollowed(Client):
    """redirect_unfollowed: a plain, non-cluster client on one node: MOVED and
    ASK replies go straight to the application, nothing is retried."""

    addr = "127.0.0.18"
    role = "redirect_unfollowed: plain client on one node, never retries " \
           "MOVED or ASK (no CLUSTER command, no ASKING)"
    findings = ("redirect_unfollowed",)

    def ask_phase(self):
        sc = self.sc
        c = self.conn(sc.s1_src)
        # The last GET is served: the client went on after the redirects,
        # so slotscope can judge them before the capture ends.
        keys = [sc.s1_migrated[11], sc.key_on(sc.s1_dst, 1),
                sc.key_on(sc.s2_dst, 1), sc.key_on(sc.s1_src, 1)]
        self.slots = []
        for key in keys:
            reply = c.call("GET", key)
            if isinstance(reply, Err) and reply.kind in ("ASK", "MOVED"):
                self.did["unfollowed_" + reply.kind] += 1
                self.slots.append(key_slot(key))

    def expected(self):
        self.require("unfollowed_ASK", 1)
        self.require("unfollowed_MOVED", 2)
        return [("redirect_unfollowed", s) for s in self.slots]


class ReadonlyMissing(Client):
    """readonly_missing: reads from a replica without READONLY; every read is
    bounced to the master with MOVED (followed). One key per slot, so it is not
    also moved_ignored."""

    addr = "127.0.0.19"
    role = "readonly_missing: GETs to a replica without READONLY, each MOVED " \
           "to the master (followed); one key per slot"
    findings = ("readonly_missing",)

    def moved_phase(self):
        sc = self.sc
        master = sc.s1_src
        replica = self.replicas[master][0]
        for key in sc.readonly_keys:
            reply = self.conn(replica).call("GET", key)
            if isinstance(reply, Err) and reply.kind == "MOVED":
                self.did["replica_moved"] += 1
                self.conn(reply.target_port()).call("GET", key)

    def expected(self):
        self.require("replica_moved", 3)
        return list(self.findings)


class CrossSlot(Client):
    """crossslot: multi-key commands whose keys hash to different slots."""

    addr = "127.0.0.20"
    role = "crossslot: MSET/MGET/DEL over keys of different slots"
    findings = ("crossslot",)

    def moved_phase(self):
        keys = self.sc.cross_keys
        cmds = [("MSET", keys[0], "1", keys[1], "2", keys[2], "3", keys[3], "4"),
                ("MGET", keys[0], keys[1], keys[2]),
                ("DEL", keys[0], keys[3])]
        for cmd in cmds:
            reply = self.conn(self.owner(cmd[1])).call(*cmd)
            if isinstance(reply, Err) and reply.kind == "CROSSSLOT":
                self.did["crossslot"] += 1

    def expected(self):
        self.require("crossslot", 3)
        return list(self.findings)


BROKEN = (AskCached, AskingMissing, AskingOtherConnection, AskingInterleaved,
          RedirectLoop, MovedIgnored, TryagainStorm, RedirectUnfollowed,
          ReadonlyMissing, CrossSlot)

# ----------------------------------------------------------------- redis-py


def bind_redis_py_source(src):
    """Make redis-py's TCP connections leave from address src. redis-py 4.3
    has no source-address option and its Redis() does not take a
    connection_class, so Connection._connect is replaced for this process
    (the only redis-py user in it is the RedisPy client below)."""
    import redis

    def _connect(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((src, 0))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(self.socket_connect_timeout)
            sock.connect((self.host, self.port))
            sock.settimeout(self.socket_timeout)
        except OSError:
            sock.close()
            raise
        return sock

    redis.connection.Connection._connect = _connect


class RedisPy:
    """redis-py's RedisCluster from 127.0.0.2, used in a background loop while
    migrations run. Only single-key commands: redis-py retries TRYAGAIN
    without backoff for half its attempts, which is not what we test here."""

    addr = "127.0.0.2"
    role = "correct: redis-py %s RedisCluster, GET loop during every migration " \
           "and a redis-cli --cluster reshard"

    def __init__(self, sc):
        import logging
        import redis
        from redis.cluster import RedisCluster
        # redis-py logs each MOVED/ASK it handles as an exception: not errors.
        logging.getLogger("redis").setLevel(logging.CRITICAL)
        self.version = redis.__version__
        bind_redis_py_source(self.addr)
        self.rc = RedisCluster(host=NODE_HOST, port=sc.seed,
                               socket_timeout=IO_TIMEOUT_S,
                               socket_connect_timeout=IO_TIMEOUT_S)
        self.stop = threading.Event()
        self.thread = None
        self.keys = []
        self.ops = 0
        self.errors = []

    def loop(self, keys, period_s):
        """Start GETting keys round-robin, one every period_s, until stop()."""
        self.keys = list(keys)
        self.stop.clear()

        def run():
            i = 0
            deadline = time.time() + 300       # bounded even if never stopped
            while not self.stop.is_set() and time.time() < deadline:
                try:
                    self.rc.get(self.keys[i % len(self.keys)])
                    self.ops += 1
                except Exception as e:          # recorded, fails the scenario
                    self.errors.append(repr(e))
                i += 1
                self.stop.wait(period_s)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def halt(self):
        self.stop.set()
        if self.thread:
            self.thread.join(timeout=10)
        if self.errors:
            raise RuntimeError("redis-py errors: %s" % self.errors[:3])

# ----------------------------------------------------------------- redis-cli


def redis_cli(port, *args, cluster=True):
    """One redis-cli process per command (so it keeps no stale state between
    commands); with -c it follows MOVED and ASK (sending ASKING)."""
    cmd = ["redis-cli", "-h", NODE_HOST, "-p", str(port)]
    if cluster:
        cmd.append("-c")
    out = subprocess.run(cmd + [str(a) for a in args], capture_output=True,
                         text=True, timeout=30, check=True)
    return out.stdout.strip()


def cluster_sh(*args):
    out = subprocess.run([CLUSTER_SH] + [str(a) for a in args],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError("cluster.sh %s: %s" % (args[0], out.stderr.strip()))
    return out.stdout.strip()

# ----------------------------------------------------------------- scenario


class Scenario:
    """The keys, slots and nodes of one run, and what happened (for
    expected.tsv)."""

    def __init__(self, cluster_dir):
        self.dir = cluster_dir
        ports = [int(p) for p in cluster_sh("ports", cluster_dir).split()]
        self.seed = ports[0]
        admin = Conn(NODE_HOST, self.seed)     # 127.0.0.1: the admin address
        self.owner, self.replicas = parse_cluster_slots(admin.call("CLUSTER", "SLOTS"))
        self.ids = {}
        for p in ports:
            c = Conn(NODE_HOST, p)
            self.ids[p] = c.call("CLUSTER", "MYID").decode()
            c.close()
        admin.close()
        self.masters = sorted(set(self.owner.values()))
        self.node_ports = ports
        m0, m1, m2 = self.masters[:3]
        # S1: migrated 30100 -> 30101 during the run, completed.
        self.s1_src, self.s1_dst = m0, m1
        self.s1_tag = tag_for_slot(lambda s: self.owner[s] == m0, "s1-")
        self.s1 = key_slot(self.s1_tag)
        self.s1_keys = ["{%s}:k%02d" % (self.s1_tag, i) for i in range(24)]
        # S2: migration m1 -> m2 started and never finished (migration_stuck).
        self.s2_src, self.s2_dst = m1, m2
        self.s2_tag = tag_for_slot(lambda s: self.owner[s] == m1, "s2-")
        self.s2 = key_slot(self.s2_tag)
        self.s2_keys = ["{%s}:k%d" % (self.s2_tag, i) for i in range(8)]
        # R: the first 3 slots of m2, which redis-cli --cluster reshard moves
        # to m0 (checked after the reshard).
        self.r_slots = sorted(s for s, p in self.owner.items() if p == m2)[:3]
        self.r_keys = []
        for s in self.r_slots:
            tag = tag_for_slot(lambda x, s=s: x == s, "r-")
            self.r_keys += ["{%s}:k%d" % (tag, i) for i in range(5)]
        special = {self.s1, self.s2} | set(self.r_slots)
        # General keys, a few per master, each in its own slot.
        self.general = {}
        n = 0
        while any(len(self.general.get(m, [])) < 6 for m in self.masters) and n < 10000:
            key = "g:%d" % n
            s = key_slot(key)
            m = self.owner[s]
            if s not in special and len(self.general.setdefault(m, [])) < 6 \
                    and all(key_slot(k) != s for k in self.general[m]):
                self.general[m].append(key)
            n += 1
        self.readonly_keys = self.general[m0][2:6]
        self.cross_keys = ["x:a", "x:b", "x:c", "x:d"]
        assert len({key_slot(k) for k in self.cross_keys}) == 4
        self.s1_migrated = []
        self.s1_remaining = list(self.s1_keys)
        self.s2_migrated = []
        self.times = {}
        self.redirects_seen = collections.Counter()

    def key_on(self, port, i=0):
        """A general key owned by master port."""
        return self.general[port][i]

    def mark(self, name):
        self.times[name] = time.time()

    def slot_keys_left(self, port, slot):
        c = Conn(NODE_HOST, port)
        keys = c.call("CLUSTER", "GETKEYSINSLOT", slot, 1000)
        c.close()
        return {k.decode() for k in keys}


def scenario(args):
    """Phases (each waits for the previous one):
      A  redis-py fills all keys; every client learns the map (CLUSTER SLOTS).
      B  redis-cli --cluster reshard moves 3 slots m2 -> m0 while redis-py GETs
         keys of those slots in a loop.
      C  slot S2 starts migrating m1 -> m2 (3 keys moved) and is never finished:
         the correct client gets ASK for it now and at the very end.
      D  slot S1 starts migrating m0 -> m1; half its keys move in batches while
         redis-py loops; then the ASK-phase clients run (correct ones, and
         ask_cached, asking_*, redirect_loop, tryagain_storm, unfollowed).
      E  the rest of S1 moves, SETSLOT NODE on every master: S1 belongs to m1.
      F  the MOVED-phase clients run (moved_ignored, readonly_missing,
         crossslot, and the correct ones, which get MOVED once and refresh).
      G  a pause, then the correct client asks S2 again (still ASK): S2's ASK
         window is much longer than any other migration's.
    """
    sc = Scenario(args.cluster)
    out = args.out
    os.makedirs(out, exist_ok=True)
    correct = CorrectClient(sc)
    broken = [cls(sc) for cls in BROKEN]
    rp = RedisPy(sc)
    m0, m1, m2 = sc.masters[:3]

    # A: fill, and every cluster-aware client learns the pre-migration map.
    sc.mark("start")
    for k in sc.s1_keys + sc.s2_keys + sc.r_keys + sum(sc.general.values(), []):
        rp.rc.set(k, "v")
    for c in [correct] + broken:
        if not isinstance(c, RedirectUnfollowed):
            c.refresh_map()
    redis_cli(m0, "SET", sc.key_on(m1, 5), "v")    # redis-cli -c: one MOVED

    # B: reshard 3 slots while redis-py loops over their keys.
    rp.loop(sc.r_keys, 0.02)
    time.sleep(0.3)
    sc.mark("reshard_start")
    subprocess.run(["redis-cli", "--cluster", "reshard", "%s:%d" % (NODE_HOST, m0),
                    "--cluster-from", sc.ids[m2], "--cluster-to", sc.ids[m0],
                    "--cluster-slots", str(len(sc.r_slots)), "--cluster-yes",
                    "--cluster-pipeline", "1"],
                   capture_output=True, timeout=120, check=True)
    sc.mark("reshard_end")
    time.sleep(0.5)
    rp.halt()
    check = Conn(NODE_HOST, m0)
    owner, _ = parse_cluster_slots(check.call("CLUSTER", "SLOTS"))
    check.close()
    if any(owner[s] != m0 for s in sc.r_slots):
        raise RuntimeError("reshard did not move slots %s" % sc.r_slots)

    # C: S2 starts migrating and stays open.
    cluster_sh("slot-begin", sc.dir, sc.s2, m1, m2)
    cluster_sh("slot-move", sc.dir, sc.s2, m1, m2, 3, 3, 0)
    sc.s2_migrated = sorted(set(sc.s2_keys) - sc.slot_keys_left(m1, sc.s2))
    sc.mark("s2_begin")
    correct.execute("GET", sc.s2_migrated[0])

    # D: S1 half migrated, in batches, while redis-py loops over S1 and S2.
    rp.loop(sc.s1_keys[::3] + sc.s2_keys[:2] + sc.general[m0][:1], 0.03)
    sc.mark("s1_begin")
    cluster_sh("slot-begin", sc.dir, sc.s1, m0, m1)
    cluster_sh("slot-move", sc.dir, sc.s1, m0, m1, 12, 4, 0.3)
    left = sc.slot_keys_left(m0, sc.s1)
    sc.s1_migrated = [k for k in sc.s1_keys if k not in left]
    sc.s1_remaining = [k for k in sc.s1_keys if k in left]
    if len(sc.s1_migrated) < 12 or len(sc.s1_remaining) < 3:
        raise RuntimeError("S1 split went wrong: %d moved" % len(sc.s1_migrated))
    # ASK-phase: correct clients first, then each broken one.
    redis_cli(m0, "GET", sc.s1_migrated[0])          # ASK -> ASKING + GET
    redis_cli(m0, "GET", sc.s1_remaining[0])          # served by the source
    redis_cli(m0, "SET", "{%s}:new-cli" % sc.s1_tag, "v")  # ASK -> target
    for k in sc.s1_migrated[:4] + sc.s1_remaining[:2]:
        correct.execute("GET", k)
    correct.execute("SET", "{%s}:new-raw" % sc.s1_tag, "v")
    correct.execute("MGET", sc.s1_migrated[1], sc.s1_remaining[1])  # TRYAGAIN
    correct.execute("GET", sc.s2_migrated[1])
    for c in broken:
        if hasattr(c, "ask_phase"):
            c.ask_phase()
    sc.mark("ask_phase_end")

    # E: finish S1.
    cluster_sh("slot-move", sc.dir, sc.s1, m0, m1, 1000, 4, 0.2)
    cluster_sh("slot-end", sc.dir, sc.s1, m1)
    sc.mark("s1_end")
    time.sleep(0.5)
    rp.halt()

    # F: MOVED-phase.
    for c in broken:
        if hasattr(c, "moved_phase"):
            c.moved_phase()
    redis_cli(m0, "GET", sc.s1_keys[1])              # MOVED -> m1
    for k in sc.s1_keys[2:6]:
        correct.execute("GET", k)                    # one MOVED, then direct
    rp.loop(sc.s1_keys[::2], 0.02)
    time.sleep(1.0)
    rp.halt()
    sc.mark("moved_phase_end")

    # G: S2 is still migrating: the last ASKs, well after everything else.
    s1_window = sc.times["s1_end"] - sc.times["s1_begin"]
    pause = max(0.5, 3 * s1_window - (time.time() - sc.times["s2_begin"]))
    time.sleep(min(pause, 30))
    for k in sc.s2_migrated[:2]:
        correct.execute("GET", k)
    redis_cli(m1, "GET", sc.s2_migrated[2])
    sc.mark("end")
    s2_window = sc.times["end"] - sc.times["s2_begin"]

    for c in [correct] + broken:
        c.close()
    for c in [correct] + broken:
        for kind, n in c.did.items():
            if kind in ("MOVED", "ASK", "TRYAGAIN", "CROSSSLOT"):
                sc.redirects_seen[kind] += n
    for c in broken:
        if isinstance(c, TryagainStorm):
            sc.redirects_seen["TRYAGAIN"] += c.did["tryagain"]
        if isinstance(c, CrossSlot):
            sc.redirects_seen["CROSSSLOT"] += c.did["crossslot"]
        if isinstance(c, RedirectUnfollowed):
            sc.redirects_seen["ASK"] += c.did["unfollowed_ASK"]
            sc.redirects_seen["MOVED"] += c.did["unfollowed_MOVED"]
        if isinstance(c, MovedIgnored):
            sc.redirects_seen["MOVED"] += c.did["moved"]
    for kind in ("ASK", "MOVED", "TRYAGAIN", "CROSSSLOT"):
        if sc.redirects_seen[kind] == 0:
            raise RuntimeError("scenario saw no %s" % kind)
    if s2_window < 2 * s1_window:
        raise RuntimeError("S2 window %.1fs not long enough vs S1 %.1fs"
                           % (s2_window, s1_window))
    write_expected(sc, out, correct, broken, rp, s1_window, s2_window)


def write_expected(sc, out, correct, broken, rp, s1_window, s2_window):
    """OUT/expected.tsv: what slotscope must find, from what the clients did.

    Lines (tab-separated; '#' starts a comment):
      set       NAME=VALUE          a threshold to pass as --set
      finding   CLIENT KIND SLOT COUNT
                                    CLIENT '-' for cluster-side findings; SLOT
                                    -1 for the kinds kept per client and node
                                    (readonly_missing, crossslot); COUNT the
                                    occurrences the client's mistakes make
      clean     CLIENT ROLE         a client that must have no finding at all
      redirect  KIND COUNT          a redirect kind the clients received (the
                                    COUNT is a lower bound, seen by the clients)
      migration SLOT SOURCE TARGET complete|open
                                    a slot migration the scenario made
    """
    # migration_stuck: between the longest completed window and S2's window.
    stuck_us = int((s1_window + (s2_window - s1_window) / 2) * 1e6)
    lines = [
        "# generated by scripts/cluster/clients.py scenario; do not edit",
        "# slots: S1=%d (%d -> %d, completed) S2=%d (%d -> %d, left open) "
        "reshard=%s (%d -> %d, redis-cli --cluster reshard)"
        % (sc.s1, sc.s1_src, sc.s1_dst, sc.s2, sc.s2_src, sc.s2_dst,
           ",".join(map(str, sc.r_slots)), sc.masters[2], sc.masters[0]),
        "# windows: S1 %.2f s, S2 %.2f s (open at the end)" % (s1_window, s2_window),
        "set\tmigration_stuck_us=%d" % stuck_us,
    ]
    slot_of = {"ask_cached": sc.s1, "asking_missing": sc.s1,
               "asking_other_connection": sc.s1, "asking_interleaved": sc.s1,
               "redirect_loop": sc.s1, "moved_ignored": sc.s1,
               "tryagain_storm": sc.s1}
    # occurrences per finding, from what the client did (docs/findings.md):
    # moved_ignored's first MOVED teaches, only the later ones count; one
    # storming operation; one unfollowed redirect per (client, node, slot)
    count_of = {"ask_cached": lambda d: d["direct_to_importing_moved"],
                "asking_missing": lambda d: d["ask_followed_without_asking"],
                "asking_other_connection": lambda d: d["asking_on_other_connection"],
                "asking_interleaved": lambda d: d["asking_spent_on_other_command"],
                "redirect_loop": lambda d: d["operation_over_redirect_cap"],
                "moved_ignored": lambda d: d["moved"] - 1,
                "tryagain_storm": lambda d: 1,
                "redirect_unfollowed": lambda d: 1,
                "readonly_missing": lambda d: d["replica_moved"],
                "crossslot": lambda d: d["crossslot"]}
    for c in broken:
        for item in c.expected():
            kind, slot = item if isinstance(item, tuple) else (item, slot_of.get(item, -1))
            lines.append("finding\t%s\t%s\t%s\t%d" % (c.addr, kind, slot, count_of[kind](c.did)))
    lines.append("finding\t-\tmigration_stuck\t%d\t1" % sc.s2)
    lines.append("clean\t127.0.0.1\tredis-cli -c, one process per command "
                 "(and the admin commands of cluster.sh / redis-cli --cluster)")
    # a node's own connections are never merged with a client of its address
    lines.append("clean\t127.0.0.1 (node)\tMIGRATE's connections between nodes")
    lines.append("clean\t%s\t%s" % (rp.addr, rp.role % rp.version))
    lines.append("clean\t%s\t%s" % (correct.addr, correct.role))
    replicas = {r for rs in sc.replicas.values() for r in rs}
    for i, port in enumerate(sc.node_ports):
        if port in replicas:     # only replicas connect out on data ports
            lines.append("clean\t127.0.1.%d (node)\treplica %d's replication link"
                         % (i + 1, port))
    for kind in ("ASK", "MOVED", "TRYAGAIN", "CROSSSLOT"):
        lines.append("redirect\t%s\t%d" % (kind, sc.redirects_seen[kind]))
    node = lambda port: "%s:%d" % (NODE_HOST, port)
    lines.append("migration\t%d\t%s\t%s\tcomplete" % (sc.s1, node(sc.s1_src), node(sc.s1_dst)))
    lines.append("migration\t%d\t%s\t%s\topen" % (sc.s2, node(sc.s2_src), node(sc.s2_dst)))
    for s in sc.r_slots:
        lines.append("migration\t%d\t%s\t%s\tcomplete"
                     % (s, node(sc.masters[2]), node(sc.masters[0])))
    with open(os.path.join(out, "expected.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    info = {"clients": {c.addr: dict(c.did) for c in [correct] + broken},
            "redis_py_ops": rp.ops, "times": sc.times, "s1": sc.s1, "s2": sc.s2,
            "r_slots": sc.r_slots}
    with open(os.path.join(out, "scenario.json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)

# ----------------------------------------------------------------- replies


def replies(args):
    """Save the exact reply bytes of CLUSTER SLOTS / SHARDS / NODES, in RESP2
    and (after HELLO 3) RESP3, for resp/ and analysis/ unit tests."""
    os.makedirs(args.out, exist_ok=True)
    c = Conn(NODE_HOST, args.port)
    for proto in (2, 3):
        if proto == 3:
            c.call("HELLO", "3")
        for sub in ("SLOTS", "SHARDS", "NODES"):
            c.send(("CLUSTER", sub))
            _, raw = c.reader.read()
            suffix = "" if proto == 2 else "-resp3"
            with open(os.path.join(args.out, "cluster-%s%s.resp" % (sub.lower(), suffix)), "wb") as f:
                f.write(raw)
    c.close()


def roster(_args):
    """The client table for samples/README.md."""
    print("| source address | client | expected findings |")
    print("|---|---|---|")
    print("| 127.0.0.1 | redis-cli -c, one process per command; also the admin "
          "commands (cluster.sh, redis-cli --cluster) and the nodes' MIGRATE "
          "connections (RESTORE-ASKING) | none |")
    print("| 127.0.0.2 | redis-py RedisCluster (python3-redis 4.x) | none |")
    print("| 127.0.0.3 | %s | none |" % CorrectClient.role)
    for cls in BROKEN:
        print("| %s | %s | %s |" % (cls.addr, cls.role, ", ".join(cls.findings)))
    print("| (cluster) | slot S2 left MIGRATING/IMPORTING to the end | migration_stuck |")
    print("| 127.0.1.N | the replication link of node N (a replica), "
          "bind-source-addr | none |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("scenario")
    p.add_argument("--cluster", required=True, help="cluster.sh DIR")
    p.add_argument("--out", required=True, help="where expected.tsv goes")
    p.set_defaults(fn=scenario)
    p = sub.add_parser("replies")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=replies)
    p = sub.add_parser("roster")
    p.set_defaults(fn=roster)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
