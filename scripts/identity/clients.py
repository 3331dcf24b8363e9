#!/usr/bin/python3
"""clients.py - the clients of the identity fixture (scripts/identity/capture.sh).

Raw RESP over sockets bound to 127.14.0.x, so that each client has a host
address of its own and every byte sent is chosen here: libraries announcing
themselves (CLIENT SETINFO LIB-NAME / LIB-VER, which redis-server 7.0
rejects), CLIENT SETNAME, HELLO 3 AUTH user pass SETNAME (the password must
never reach the database), two processes on one host with different names,
hostile names, and a client on the nodes' own address beside a node link
(MIGRATE). None of them follows MOVED, so each gets redirect_unfollowed
findings on several slots.

Usage: clients.py PORT0 PORT1 PORT2
"""
import socket
import sys
import time

PORTS = [int(p) for p in sys.argv[1:4]]


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    def __init__(self, src, port):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.s.bind((src, 0))
        self.s.connect(("127.0.0.1", port))
        self.s.settimeout(5)
        self.buf = b""

    def reply(self):
        """Read one reply (simple enough for what these clients get)."""
        while True:
            line_end = self.buf.find(b"\r\n")
            if line_end >= 0:
                head = self.buf[:line_end]
                kind = head[:1]
                if kind in (b"+", b"-", b":", b"_", b"#", b","):
                    self.buf = self.buf[line_end + 2:]
                    return head
                if kind in (b"$", b"!", b"="):
                    n = int(head[1:])
                    if n < 0:
                        self.buf = self.buf[line_end + 2:]
                        return head
                    if len(self.buf) >= line_end + 2 + n + 2:
                        self.buf = self.buf[line_end + 2 + n + 2:]
                        return head
                if kind in (b"*", b"%", b"~", b">"):
                    n = int(head[1:])
                    self.buf = self.buf[line_end + 2:]
                    for _ in range(max(n, 0) * (2 if kind == b"%" else 1)):
                        self.reply()
                    return head
            data = self.s.recv(65536)
            if not data:
                raise EOFError
            self.buf += data

    def cmd(self, *args):
        self.s.sendall(resp(*args))
        return self.reply()

    def close(self):
        self.s.close()


def keys_for(port, n, prefix, here):
    """n keys whose slots PORTS[0] owns (here) or another node owns (not
    here): redis-cli --cluster create gives slots 0-5460 to the first of 3
    masters."""
    keys = []
    probe = Conn("127.14.0.9", port)
    i = 0
    while len(keys) < n and i < 1000:
        k = "%s:%d" % (prefix, i)
        slot = int(probe.cmd("CLUSTER", "KEYSLOT", k)[1:])
        if (slot <= 5460) == here:
            keys.append(k)
        i += 1
    probe.close()
    return keys


def unfollowed(conn, keys):
    for k in keys:
        conn.cmd("GET", k)  # -MOVED, never retried


def main():
    p0 = PORTS[0]
    keys = keys_for(p0, 24, "id", False)
    mine = keys_for(p0, 1, "mig", True)[0]
    # a library on its own host: SETINFO (rejected by 7.0), SETNAME
    a = Conn("127.14.0.1", p0)
    a.cmd("CLIENT", "SETINFO", "LIB-NAME", "node-redis")
    a.cmd("CLIENT", "SETINFO", "LIB-VER", "4.7.1")
    a.cmd("CLIENT", "SETNAME", "worker-a")
    unfollowed(a, keys[0:6])
    # HELLO 3 with credentials and a name; then the library announces itself
    b = Conn("127.14.0.2", p0)
    b.cmd("HELLO", "3", "AUTH", "default", "s3cretpw", "SETNAME", "py-worker")
    b.cmd("CLIENT", "SETINFO", "LIB-NAME", "redis-py")
    b.cmd("CLIENT", "SETINFO", "LIB-VER", "5.0.1")
    unfollowed(b, keys[6:10])
    # two processes on one host, different names; only app-a is wrong
    c1 = Conn("127.14.0.3", p0)
    c1.cmd("CLIENT", "SETNAME", "app-a")
    c2 = Conn("127.14.0.3", p0)
    c2.cmd("CLIENT", "SETNAME", "app-b")
    unfollowed(c1, keys[10:14])
    c2.cmd("PING")
    # hostile values: terminal escapes, a newline, a long version
    d = Conn("127.14.0.4", p0)
    d.cmd("CLIENT", "SETINFO", "LIB-NAME", b"\x1b[31mevil\r\nlib")
    d.cmd("CLIENT", "SETINFO", "LIB-VER", "9" * 200)
    unfollowed(d, keys[14:16])
    # a client on the nodes' own address, and a node link (MIGRATE) from it
    e = Conn("127.0.0.1", p0)
    e.cmd("CLIENT", "SETNAME", "local-tool")
    unfollowed(e, keys[16:18])
    e.cmd("SET", mine, "v")
    e.cmd("MIGRATE", "127.0.0.1", PORTS[1], mine, "0", "5000", "COPY")
    time.sleep(0.2)
    for c in (a, b, c1, c2, d, e):
        c.close()


if __name__ == "__main__":
    main()
