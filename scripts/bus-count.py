#!/usr/bin/env python3
# bus-count.py CAPTURE: count cluster-bus messages by type, independently of
# slotscope (tshark for the TCP payloads, streams put in sequence order, each
# message framed by its totlen). Used to check tests/fixtures/bus/.
import subprocess, sys, collections, struct
out = subprocess.run(["tshark","-r",sys.argv[1],"-Y","tcp.len>0","-T","fields","-e","tcp.stream","-e","tcp.srcport","-e","tcp.seq_raw","-e","tcp.payload"],capture_output=True,text=True).stdout
streams = collections.defaultdict(dict)
for line in out.splitlines():
    st, sp, seq, pl = line.split("\t")
    streams[(st,sp)][int(seq)] = bytes.fromhex(pl)
names = ["ping","pong","meet","fail","publish","auth-request","auth-ack","update","mfstart","module","publishshard"]
cnt = collections.Counter()
for k, segs in streams.items():
    data = b""; nxt=None
    for seq in sorted(segs):
        if nxt is not None and seq < nxt: continue
        data += segs[seq]; nxt = seq + len(segs[seq])
    i = data.find(b"RCmb")
    while 0 <= i and i + 16 <= len(data):
        if data[i:i+4] != b"RCmb": break
        totlen, ver, port, typ = struct.unpack(">IHHH", data[i+4:i+14])
        if i + totlen > len(data): break
        cnt[names[typ] if typ < 11 else typ] += 1
        i += totlen
for k,v in sorted(cnt.items()): print(v, k)
