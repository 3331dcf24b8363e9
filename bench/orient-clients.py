#!/usr/bin/python3
"""orient-clients.py - the clients of bench/orient-capture.sh.

    orient-clients.py BASEPORT READY_FILE GO_FILE

Before the capture (then it writes READY_FILE): a subscriber on the replica
BASEPORT+3 and one on the master BASEPORT+1 (SUBSCRIBE orient), and an idle
READONLY connection to the replica BASEPORT+4. Once GO_FILE exists (the
capture runs; at most 30 s): a new connection to BASEPORT asks CLUSTER SLOTS
and CLUSTER SHARDS, PUBLISHes to the channel (the subscribers' nodes talk
first on their connections, which predate the capture), the idle connection
sends a GET, and 30 SETs go to their owners (MOVED followed), so that the
masters stream them to their replicas over links that predate the capture.
Then a second and a half for the replicas' REPLCONF ACKs, and every
connection closes. Raw sockets: the bytes on the wire are these.
"""
import os
import socket
import sys
import time


def cmd(*args):
    """One request in RESP."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def conn(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.settimeout(0.3)
    return s


def drain(s):
    """What arrives within 0.3 s of quiet."""
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return data
        if not chunk:
            return data
        data += chunk


def main():
    base, ready, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    sub_replica, sub_master, idle = conn(base + 3), conn(base + 1), conn(base + 4)
    for s in (sub_replica, sub_master):
        s.sendall(cmd("SUBSCRIBE", "orient"))
        drain(s)
    idle.sendall(cmd("READONLY"))
    drain(idle)
    open(ready, "w").close()
    deadline = time.time() + 30
    while not os.path.exists(go):
        if time.time() > deadline:
            sys.exit("orient-clients.py: no GO file")
        time.sleep(0.05)
    c = conn(base)
    c.sendall(cmd("CLUSTER", "SLOTS"))
    drain(c)
    c.sendall(cmd("CLUSTER", "SHARDS"))
    drain(c)
    c.sendall(cmd("PUBLISH", "orient", "hello"))
    drain(c)
    drain(sub_replica)
    drain(sub_master)
    idle.sendall(cmd("GET", "orient:0"))
    drain(idle)
    others = {}
    for i in range(30):
        key = "orient:%d" % i
        c.sendall(cmd("SET", key, "v%d" % i))
        reply = drain(c)
        if reply.startswith(b"-MOVED"):
            port = int(reply.split()[2].rsplit(b":", 1)[1])
            if port not in others:
                others[port] = conn(port)
            others[port].sendall(cmd("SET", key, "v%d" % i))
            drain(others[port])
    time.sleep(1.5)
    for s in [sub_replica, sub_master, idle, c] + list(others.values()):
        s.close()


if __name__ == "__main__":
    main()
