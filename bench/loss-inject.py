#!/usr/bin/env python3
"""loss-inject.py - drop packets at random from a clean capture.

    bench/loss-inject.py IN.pcap OUT.pcap --rate 0.01 --seed 1 [--dropped LIST]

Copies a classic pcap file (either byte order, micro- or nanosecond times;
Ethernet, Linux cooked v1/v2, raw IPv4 or BSD loopback) and drops each TCP
segment that carries payload with probability RATE, from a random.Random
seeded with SEED: the same arguments drop the same packets. Packets without
payload (handshakes, bare ACKs, FINs) are kept: a loss that matters to
pairing is a loss of bytes. With --dropped, each dropped segment is listed,
one a line: "SRC DST START END", the sender and receiver as ip:port and the
stream positions of its first byte and of the byte after its last, counted
from the sender's SYN + 1 (or, for a stream picked up mid-way, from its first
payload byte in the capture) -- the positions bench/pair_dump prints.
The first payload segment of a stream without a SYN in the capture (a
connection that predates it) is always kept: a reader picks such a stream up
at its first byte seen, so dropping that segment would move position 0 of
the lossy run's stream and no command of it could be compared with the clean
run's. The random draw is made for it all the same, so the other segments
dropped are those an earlier version dropped.
IPv4 only (other packets are copied as they are).
"""
import argparse
import random
import struct
import sys


def link_offset(linktype, frame):
    """Offset of the IPv4 header in a frame, or None."""
    if linktype == 1:  # EN10MB, with VLAN tags
        off, etype = 12, None
        while off + 2 <= len(frame):
            etype = struct.unpack_from("!H", frame, off)[0]
            if etype in (0x8100, 0x88A8, 0x9100):
                off += 4
                continue
            break
        return off + 2 if etype == 0x0800 else None
    if linktype == 113:  # LINUX_SLL
        return 16 if len(frame) >= 16 and struct.unpack_from("!H", frame, 14)[0] == 0x0800 else None
    if linktype == 276:  # LINUX_SLL2
        return 20 if len(frame) >= 20 and struct.unpack_from("!H", frame, 0)[0] == 0x0800 else None
    if linktype in (101, 228):  # raw IP, IPv4
        return 0
    if linktype == 0:  # BSD loopback
        return 4 if len(frame) >= 4 and frame[0] in (2, 0) and frame[3] in (2, 0) else None
    return None


def tcp_segment(linktype, frame):
    """(src, dst, seq, flags, payload_len) of a TCP/IPv4 frame, or None."""
    off = link_offset(linktype, frame)
    if off is None or len(frame) < off + 20:
        return None
    ver_ihl = frame[off]
    if ver_ihl >> 4 != 4 or frame[off + 9] != 6:
        return None
    ihl = (ver_ihl & 15) * 4
    total = struct.unpack_from("!H", frame, off + 2)[0]
    t = off + ihl
    if len(frame) < t + 20:
        return None
    sport, dport, seq = struct.unpack_from("!HHI", frame, t)
    doff = (frame[t + 12] >> 4) * 4
    flags = frame[t + 13]
    plen = total - ihl - doff
    src = "%d.%d.%d.%d:%d" % (*frame[off + 12:off + 16], sport)
    dst = "%d.%d.%d.%d:%d" % (*frame[off + 16:off + 20], dport)
    return src, dst, seq, flags, max(plen, 0)


def records(f, endian, nsec):
    """Yield (header bytes, frame bytes) of every record."""
    while True:
        h = f.read(16)
        if len(h) < 16:
            return
        caplen = struct.unpack(endian + "IIII", h)[2]
        yield h, f.read(caplen)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--dropped")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    with open(a.inp, "rb") as f, open(a.out, "wb") as out:
        gh = f.read(24)
        magic = gh[:4]
        if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
            endian = "<"
        elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
            endian = ">"
        else:
            sys.exit("loss-inject.py: %s: not a classic pcap file" % a.inp)
        linktype = struct.unpack(endian + "I", gh[20:24])[0] & 0x0FFFFFFF
        out.write(gh)
        base = {}  # (src, dst) -> stream position 0 in sequence numbers
        dropped = []
        kept = gone = 0
        for h, frame in records(f, endian, False):
            seg = tcp_segment(linktype, frame)
            if seg is not None:
                src, dst, seq, flags, plen = seg
                key = (src, dst)
                first_mid = False
                if flags & 0x02:  # SYN: the stream starts after it
                    base[key] = (seq + 1) & 0xFFFFFFFF
                elif plen > 0 and key not in base:
                    base[key] = seq
                    first_mid = True
                drop = plen > 0 and rng.random() < a.rate
                if drop and not first_mid:
                    start = (seq - base[key]) & 0xFFFFFFFF
                    dropped.append("%s %s %d %d" % (src, dst, start, start + plen))
                    gone += 1
                    continue
            out.write(h)
            out.write(frame)
            kept += 1
    if a.dropped:
        with open(a.dropped, "w") as d:
            d.write("\n".join(dropped) + ("\n" if dropped else ""))
    print("loss-inject.py: %d records kept, %d segments with payload dropped" % (kept, gone),
          file=sys.stderr)


if __name__ == "__main__":
    main()
