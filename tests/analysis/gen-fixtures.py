#!/usr/bin/python3
"""gen-fixtures.py - capture the fixtures of tests/analysis from a real Redis Cluster.

Usage:  /usr/bin/python3 tests/analysis/gen-fixtures.py [--ports 30310]

Starts six redis-server nodes (cluster-enabled, 127.0.0.1:PORT..PORT+5, temp
dir), makes a 3 master + 3 replica cluster, and writes to
tests/fixtures/analysis/:

  keyslots.tsv            hex(key) TAB CLUSTER KEYSLOT's answer, for thousands
                          of keys: random bytes, braces at every position,
                          CR LF, NUL (the server hashes; the test compares)
  map-*.bin               raw reply bytes of CLUSTER SLOTS / SHARDS / NODES in
                          RESP2 and RESP3, plain and with hostnames announced
                          (cluster-announce-hostname + preferred endpoint type
                          hostname), and one while a slot is migrating
  map-expected.tsv        what those replies say, as redis-py reads them:
                            node <ip:port> <id> <master|replica> <master id|->
                            range <start> <end> <master ip:port>
  map-answering.tsv       file TAB the ip:port of the node that answered it

Every server is shut down before the script exits.
"""

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "analysis")


def start_node(port, workdir):
    d = os.path.join(workdir, str(port))
    os.makedirs(d)
    return subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
         "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000",
         "--save", "", "--appendonly", "no", "--dir", d, "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ping(port):
    c = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(100):
        try:
            c.ping()
            return c
        except redis.ConnectionError:
            time.sleep(0.1)
    raise SystemExit("node %d did not start" % port)


def read_reply(sock):
    """Read one complete RESP2/RESP3 reply from sock; return its bytes."""
    buf = b""

    def need(pos):
        nonlocal buf
        while True:
            nl = buf.find(b"\r\n", pos)
            if nl >= 0:
                return nl
            chunk = sock.recv(65536)
            if not chunk:
                raise SystemExit("connection closed")
            buf += chunk

    def value(pos):
        nonlocal buf
        nl = need(pos)
        t = buf[pos:pos + 1]
        line = buf[pos + 1:nl]
        pos = nl + 2
        if t in b"$=!":
            n = int(line)
            if n < 0:
                return pos
            while len(buf) < pos + n + 2:
                buf += sock.recv(65536)
            return pos + n + 2
        if t in b"*~>":
            n = int(line)
            for _ in range(max(n, 0)):
                pos = value(pos)
            return pos
        if t in b"%|":
            for _ in range(int(line) * 2):
                pos = value(pos)
            return pos
        return pos

    end = value(0)
    return buf[:end]


def command(sock, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    return read_reply(sock)


def keyslots(client, rng):
    """Keys with braces everywhere and binary bytes, with the server's slots."""
    keys = [b"", b"{", b"}", b"{}", b"}{", b"{{}}", b"foo{}{bar}", b"foo{{bar}}zap",
            b"{user1}.a", b"{user1}.b", b"123456789", b"a\r\nb", b"\x00", b"{\x00}", b"\r\n{\r\n}",
            b"{a}{b}", b"{}a", b"a{", b"a}", b"{{a}", b"x{y}z{w}", b"\xff\xfe{\xff}"]
    alphabet = b"{}ab\r\n\x00\xff"
    for n in range(1, 9):  # every key over a small alphabet rich in braces
        for _ in range(120):
            keys.append(bytes(rng.choice(alphabet) for _ in range(n)))
    for _ in range(2000):  # random bytes, braces at random positions
        n = rng.randint(0, 40)
        k = bytearray(rng.getrandbits(8) for _ in range(n))
        for _ in range(rng.randint(0, 3)):
            if n:
                k[rng.randrange(n)] = rng.choice(b"{}")
        keys.append(bytes(k))
    base = b"k" * 10
    for i in range(len(base) + 1):  # "{" and "}" at every pair of positions
        for j in range(len(base) + 1):
            k = bytearray(base)
            k.insert(i, ord("{"))
            k.insert(j + 1 if j >= i else j, ord("}"))
            keys.append(bytes(k))
    seen, lines = set(), []
    for k in keys:
        if k in seen:
            continue
        seen.add(k)
        slot = client.execute_command("CLUSTER", "KEYSLOT", k)
        lines.append("%s\t%d\n" % (k.hex(), slot))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ports", type=int, default=30310)
    args = ap.parse_args()
    ports = [args.ports + i for i in range(6)]
    workdir = tempfile.mkdtemp(prefix="slotscope-an-fixtures-")
    procs = []
    try:
        procs = [start_node(p, workdir) for p in ports]
        clients = [wait_ping(p) for p in ports]
        subprocess.run(["redis-cli", "--cluster", "create"] +
                       ["127.0.0.1:%d" % p for p in ports] +
                       ["--cluster-replicas", "1", "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):  # bounded: 20 s for the cluster to agree
            info = clients[0].execute_command("CLUSTER", "INFO")
            info = info.decode() if isinstance(info, bytes) else str(info)
            ok = "cluster_state:ok" in info
            slots = clients[0].execute_command("CLUSTER", "SLOTS")
            if ok and all(len(r) >= 4 for r in slots) and len(slots) == 3:
                break
            time.sleep(0.1)
        else:
            raise SystemExit("cluster did not become ready")
        time.sleep(1)
        os.makedirs(OUT, exist_ok=True)
        rng = random.Random(4242)
        with open(os.path.join(OUT, "keyslots.tsv"), "w") as f:
            f.write("# hex(key)\tCLUSTER KEYSLOT (redis-server %s), from "
                    "tests/analysis/gen-fixtures.py\n" %
                    clients[0].info("server")["redis_version"])
            f.writelines(keyslots(clients[0], rng))

        answering = []

        def capture(name, port, proto, *cmd):
            s = socket.create_connection(("127.0.0.1", port))
            if proto == 3:
                command(s, "HELLO", "3")
            data = command(s, *cmd)
            s.close()
            with open(os.path.join(OUT, name), "wb") as f:
                f.write(data)
            answering.append("%s\t127.0.0.1:%d\n" % (name, port))

        p0 = ports[0]
        for proto in (2, 3):
            capture("map-slots-resp%d.bin" % proto, p0, proto, "CLUSTER", "SLOTS")
            capture("map-shards-resp%d.bin" % proto, p0, proto, "CLUSTER", "SHARDS")
            capture("map-nodes-resp%d.bin" % proto, p0, proto, "CLUSTER", "NODES")

        # what the map says, read by redis-py (not by the code under test)
        expected = []
        nodes = {}
        for line in clients[0].execute_command("CLUSTER", "NODES").decode().splitlines():
            f = line.split()
            nodes[f[1]] = {"node_id": f[0], "flags": f[2], "master_id": f[3]}
        for addr, n in sorted(nodes.items()):
            role = "master" if "master" in n["flags"] else "replica"
            expected.append("node %s %s %s %s\n" % (addr.split("@")[0], n["node_id"], role,
                                                    n["master_id"] if role == "replica" else "-"))
        raw = redis.Redis(host="127.0.0.1", port=p0)
        raw.response_callbacks.pop("CLUSTER SLOTS", None)
        for r in raw.execute_command("CLUSTER", "SLOTS"):
            host = r[2][0].decode()
            expected.append("range %d %d %s:%d\n" % (r[0], r[1], host, r[2][1]))

        # a slot in migration, as CLUSTER NODES shows it
        ids = {}
        for addr, n in nodes.items():
            ids[addr.split("@")[0]] = n["node_id"]
        owner = raw.execute_command("CLUSTER", "SLOTS")[0]
        src_port, dst = owner[2][1], None
        for r in raw.execute_command("CLUSTER", "SLOTS"):
            if r[2][1] != src_port:
                dst = r[2][1]
                break
        slot = owner[0]
        redis.Redis(port=dst).execute_command(
            "CLUSTER", "SETSLOT", slot, "IMPORTING", ids["127.0.0.1:%d" % src_port])
        redis.Redis(port=src_port).execute_command(
            "CLUSTER", "SETSLOT", slot, "MIGRATING", ids["127.0.0.1:%d" % dst])
        capture("map-nodes-migrating-resp2.bin", src_port, 2, "CLUSTER", "NODES")
        redis.Redis(port=src_port).execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
        redis.Redis(port=dst).execute_command("CLUSTER", "SETSLOT", slot, "STABLE")

        # hostnames announced and preferred in redirects and maps (Redis 7)
        for i, p in enumerate(ports):
            c = redis.Redis(port=p)
            c.config_set("cluster-announce-hostname", "node%d.example" % i)
            c.config_set("cluster-preferred-endpoint-type", "hostname")
        time.sleep(2)  # gossip carries the hostnames
        capture("map-slots-hostname-resp2.bin", p0, 2, "CLUSTER", "SLOTS")
        capture("map-slots-hostname-resp3.bin", p0, 3, "CLUSTER", "SLOTS")
        capture("map-shards-hostname-resp3.bin", p0, 3, "CLUSTER", "SHARDS")
        capture("map-nodes-hostname-resp2.bin", p0, 2, "CLUSTER", "NODES")
        with open(os.path.join(OUT, "map-expected.tsv"), "w") as f:
            f.writelines(expected)
        with open(os.path.join(OUT, "map-answering.tsv"), "w") as f:
            f.writelines(answering)
        print("fixtures written to %s" % os.path.normpath(OUT))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
