#!/usr/bin/env python3
"""wire-truth.py CAPTURE BASE_PORT: what the wire says, decoded by tshark's
RESP dissector (independent of slotscope), as expected.tsv lines:

  wire_redirect KIND N                 every MOVED/ASK/TRYAGAIN/CROSSSLOT
                                       reply on the wire, from any client
  wire_ask SLOT N FIRST_US LAST_US     the ASK replies for a slot: how many,
                                       the capture times of the first and last
  wire_moved SLOT TARGET FIRST_US      the first MOVED for a slot pointing at
                                       TARGET (host:port)

Times are the capture times (us) of the frames carrying the replies. The
nodes are BASE_PORT .. BASE_PORT + 5 (decoded as RESP there)."""
import subprocess
import sys


def main():
    cap, base = sys.argv[1], int(sys.argv[2])
    args = ["tshark", "-r", cap]
    for p in range(base, base + 6):
        args += ["-d", "tcp.port==%d,resp" % p]
    args += ["-Y", "resp.error", "-T", "fields", "-E", "separator=|",
             "-e", "frame.time_epoch", "-e", "resp.error"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    kinds = {k: 0 for k in ("ASK", "MOVED", "TRYAGAIN", "CROSSSLOT")}
    asks, moved = {}, {}
    for line in out.splitlines():
        ts, _, errors = line.partition("|")
        sec, _, frac = ts.partition(".")
        us = int(sec) * 1000000 + int((frac + "000000")[:6])
        for e in errors.split(","):
            w = e.split()
            if not w or w[0] not in kinds:
                continue
            kinds[w[0]] += 1
            if w[0] == "ASK" and len(w) >= 3:
                n, first, last = asks.get(int(w[1]), (0, us, us))
                asks[int(w[1])] = (n + 1, min(first, us), max(last, us))
            elif w[0] == "MOVED" and len(w) >= 3:
                moved.setdefault((int(w[1]), w[2]), us)
    for k, n in kinds.items():
        print("wire_redirect\t%s\t%d" % (k, n))
    for s, (n, first, last) in sorted(asks.items()):
        print("wire_ask\t%d\t%d\t%d\t%d" % (s, n, first, last))
    for (s, target), first in sorted(moved.items()):
        print("wire_moved\t%d\t%s\t%d" % (s, target, first))


if __name__ == "__main__":
    main()
