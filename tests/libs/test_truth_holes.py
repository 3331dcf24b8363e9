#!/usr/bin/python3
"""truth.py on a synthetic capture with client-side holes (ctest truth_holes).

One client, one connection to a node, ping-pong. Two client segments are not
in the capture: one whole request (its boundary is lost: the stream resumes at
the next request, the lost count is settled by the replies' types) and the
middle of a SET's value (carried across by its declared length). The server's
stream is complete. Asserted: every request after the holes is read, and each
gets the reply that truly answers it.
"""
import os, struct, sys, tempfile, json

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "libs"))
import truth  # noqa: E402

CLI, NODE, CPORT, NPORT = "127.0.0.9", "127.0.0.1", 40000, 31300


def req(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def pkt(ts, src, sport, dst, dport, seq, ack, flags, data):
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + data
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0,
                     bytes(map(int, src.split("."))), bytes(map(int, dst.split(".")))) + tcp
    frame = b"\0" * 12 + b"\x08\x00" + ip
    return struct.pack("<IIII", int(ts), int(ts % 1 * 1e6), len(frame), len(frame)) + frame


def build(path):
    steps = [(req(b"GET", b"k0"), b"$2\r\nv0\r\n"),
             (req(b"SET", b"k1", b"x" * 40), b"+OK\r\n"),
             (req(b"GET", b"k2"), b"$2\r\nv2\r\n"),          # lost whole (client and nothing else)
             (req(b"MGET", b"k3", b"k4"), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
             (req(b"SET", b"k5", b"y" * 40), b"+OK\r\n"),  # its value's middle is lost
             (req(b"GET", b"k6"), b"-MOVED 9 127.0.0.1:31301\r\n"),
             (req(b"SET", b"k7", b"1"), b"+OK\r\n"),
             (req(b"GET", b"k8"), b"$-1\r\n")]
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    t, cs, ss = 1000.0, 1000, 5000
    out.append(pkt(t, CLI, CPORT, NODE, NPORT, cs - 1, 0, 0x02, b""))
    out.append(pkt(t, NODE, NPORT, CLI, CPORT, ss - 1, cs, 0x12, b""))
    expect = []
    for i, (q, r) in enumerate(steps):
        t += 0.01
        if i == 2:
            pass                                   # the whole request lost
        elif i == 4:
            cut = q.index(b"y" * 40) + 10          # inside the value, whose length is declared
            out.append(pkt(t, CLI, CPORT, NODE, NPORT, cs, ss, 0x18, q[:cut]))
            out.append(pkt(t, CLI, CPORT, NODE, NPORT, cs + cut + 20, ss, 0x18, q[cut + 20:]))
        else:
            out.append(pkt(t, CLI, CPORT, NODE, NPORT, cs, ss, 0x18, q))
            expect.append((q.split(b"\r\n")[2], r))
        cs += len(q)
        out.append(pkt(t + 0.001, NODE, NPORT, CLI, CPORT, ss, cs, 0x18, r))
        ss += len(r)
    open(path, "wb").write(b"".join(out))
    return expect


def main():
    with tempfile.TemporaryDirectory() as d:
        cap = os.path.join(d, "holes.pcap")
        expect = build(cap)
        stats = {}
        cmds = truth.commands(cap, set(range(NPORT, NPORT + 20)), {}, {}, stats)
    got = [(c["name"], c["reply"] and (c["reply"][0], c["reply"][1])) for c in cmds]
    want = []
    for name, r in expect:
        (v, _) = truth.resp_value(r, 0)
        want.append((name.upper(), v))
    ok = got == want and not any(c["unknown"] for c in cmds)
    print("stats", stats)
    for g in got:
        print("got ", g)
    if not ok:
        for w in want:
            print("want", w)
        print("FAIL")
        return 1
    print("ok: %d requests, the reading resumed after both holes" % len(cmds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
