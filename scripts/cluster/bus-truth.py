#!/usr/bin/python3
"""bus-truth.py RUN_DIR [WINDOW_PCAP] - the truth of a bus-writes.sh run,
independent of slotscope: its own pcap reader and cluster-bus parser, the
writers' logs, the CLUSTER NODES polls and the read-back.

The bus state is followed over RUN_DIR/capture.pcap (the whole run); only what
falls inside the time ranges WINDOW_PCAP covers (a cut of it, or two merged,
e.g. a fixture; default the whole capture) is printed, as tab-separated lines (times in us since the epoch,
nodes as ports):

  owner  LO HI OLD NEW EPOCH TS_US
      slots LO..HI changed owner on the bus: the first bus message whose
      sender (a master) or UPDATE claims them with a config epoch higher than
      the owner's; TS_US is the capture time of the packet that completes it
  failover KIND OLD NEW EPOCH FLIP_US POLL_US
      a step of events.log (manual, takeover, automatic = the SIGSTOPped
      master); FLIP_US: the first owner change of OLD's slots to NEW;
      POLL_US: the first CLUSTER NODES poll after the step that shows NEW as a
      master (the polls' clock is the capture's: same host)
  write  KEY VALUE PORT ACK_US FATE RISK
      every acknowledged write in the window. FATE (from the read-back):
      survived (the key holds it), overwritten (the key holds a later write
      of the same writer: whether this one was lost cannot be seen), lost
      (the key holds an older value or none: acknowledged and gone).
      RISK: 1 when PORT, in its own latest bus message, still claimed the
      slot while another node had claimed it with a higher config epoch (the
      slot's owner on the bus at ACK_US was not PORT), else 0 (an importing
      node serving ASKING claims nothing: no risk)
  stale  CLIENT LO HI OLD NEW COMMANDS FIRST_US LAST_US UNTOLD_US
      per owner change in the window and writer (wN speaks from 127.0.0.2N,
      bus-writes.sh): the commands it sent to OLD for slots LO..HI that were
      answered (ack, moved, ask lines of its log) after the change, the
      answer time of its first command for those slots after the change (to
      any node), of the last one to OLD, and of the last one OLD still
      acknowledged before its first MOVED there (0: none); writers that sent
      none to OLD are left out
  lost   KEY VALUE PORT ACK_US WHY
      the lost writes again, WHY = after_claim (RISK 1: the window the
      cluster spec's write safety section describes) or before_claim
      (acknowledged before any newer claim was on the wire: replication lag,
      invisible on the bus)

Wire facts (Redis 7.0 src/cluster.h): header "RCmb", totlen u32 at 4, type u16
at 12, configEpoch u64 at 24, sender[40] at 40, myslots[2048] at 80, port u16
at 10, flags u16 at 2250 (1 master, 2 replica); UPDATE data at 2256:
configEpoch u64, nodename[40], slots[2048]. Big-endian; slot s is bit s&7 of
byte s/8.
"""

import glob
import os
import struct
import sys

HDR = 2256
UPDATE = 7


def packets(path):
    """(ts_us, src, sport, dst, dport, seq, payload) of each TCP/IPv4 packet."""
    with open(path, "rb") as f:
        gh = f.read(24)
        magic = struct.unpack("<I", gh[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            end = "<"
        else:
            end = ">"
        nano = struct.unpack(end + "I", gh[:4])[0] == 0xA1B23C4D
        link = struct.unpack(end + "I", gh[20:24])[0]
        while True:
            rh = f.read(16)
            if len(rh) < 16:
                return
            sec, frac, incl, _ = struct.unpack(end + "IIII", rh)
            data = f.read(incl)
            ts = sec * 1000000 + (frac // 1000 if nano else frac)
            off = 14 if link == 1 else 16 if link == 113 else 0
            ip = data[off:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            ihl = (ip[0] & 15) * 4
            total = struct.unpack(">H", ip[2:4])[0]
            tcp = ip[ihl:total]
            if len(tcp) < 20:
                continue
            sport, dport, seq = struct.unpack(">HHI", tcp[:8])
            doff = (tcp[12] >> 4) * 4
            yield (ts, ip[12:16], sport, ip[16:20], dport, seq, tcp[doff:])


def bus_messages(path, bus_lo, bus_hi):
    """(ts_us, message bytes) of every bus message, in capture order; each
    direction reassembled by sequence number (retransmissions skipped), a
    hole or a mid-stream start resynchronised at the next "RCmb"."""
    streams = {}
    for ts, src, sport, dst, dport, seq, pl in packets(path):
        if not (bus_lo <= sport <= bus_hi or bus_lo <= dport <= bus_hi) or not pl:
            continue
        key = (src, sport, dst, dport)
        st = streams.get(key)
        if st is None:
            st = streams[key] = {"next": seq, "buf": b"", "sync": False}
        d = (seq - st["next"]) & 0xFFFFFFFF
        if d >= 0x80000000:          # old: a retransmission, maybe partly new
            back = (st["next"] - seq) & 0xFFFFFFFF
            if back >= len(pl):
                continue
            pl = pl[back:]
        elif d > 0:                  # a hole: lose the partial message
            st["buf"], st["sync"] = b"", False
            st["next"] = seq
        st["next"] = (st["next"] + len(pl)) & 0xFFFFFFFF
        buf = st["buf"] + pl
        while True:
            if not st["sync"]:
                i = buf.find(b"RCmb")
                if i < 0:
                    buf = buf[-3:]
                    break
                buf = buf[i:]
                st["sync"] = True
            if len(buf) < 8:
                break
            totlen = struct.unpack(">I", buf[4:8])[0]
            if totlen < HDR or totlen > 1 << 24:
                buf, st["sync"] = buf[1:], False
                continue
            if len(buf) < totlen:
                break
            yield ts, buf[:totlen]
            buf = buf[totlen:]
        st["buf"] = buf


def claimed(slots):
    return [s for s in range(16384) if slots[s >> 3] >> (s & 7) & 1]


def ranges(slots):
    out = []
    for s in sorted(slots):
        if out and out[-1][1] == s - 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


def windows(path):
    """The time ranges the pcap covers: its packets, split where none came
    for a second (a fixture may be two cuts of the run, merged)."""
    out = []
    for p in packets(path):
        if out and p[0] - out[-1][1] <= 1000000:
            out[-1][1] = p[0]
        else:
            out.append([p[0], p[0]])
    return out


def main():
    run = sys.argv[1]
    cut = sys.argv[2] if len(sys.argv) > 2 else os.path.join(run, "capture.pcap")
    covered = windows(cut)

    def inside(t):
        return any(a <= t <= b for a, b in covered)
    ports = {}
    for line in open(os.path.join(run, "roles.tsv")):
        p, nid, _ = line.split("\t")
        ports[nid] = int(p)
    base = min(ports.values())
    events = []
    for line in open(os.path.join(run, "events.log")):
        w = line.split()
        events.append((int(w[0]), w[1:]))

    # The bus: per slot (owner id, epoch); the changes with their times.
    owner = [None] * 16384
    epoch = [0] * 16384
    changes = []    # (ts, slot, old id, new id, epoch)
    history = [[] for _ in range(16384)]  # per slot: (ts, new id), for RISK
    own = {}        # node id -> [(ts, its own slot bitmap)] as it announced them
    for ts, m in bus_messages(os.path.join(run, "capture.pcap"), base + 10000, base + 10005):
        mtype = struct.unpack(">H", m[12:14])[0]
        if mtype == UPDATE and len(m) >= HDR + 8 + 40 + 2048:
            ep = struct.unpack(">Q", m[HDR:HDR + 8])[0]
            who = m[HDR + 8:HDR + 48].decode()
            bitmap = m[HDR + 48:HDR + 48 + 2048]
        else:
            flags = struct.unpack(">H", m[2250:2252])[0]
            if not flags & 1:
                continue
            ep = struct.unpack(">Q", m[24:32])[0]
            who = m[40:80].decode()
            bitmap = m[80:80 + 2048]
            own.setdefault(who, []).append((ts, bitmap))
        for s in claimed(bitmap):
            if owner[s] == who or ep <= epoch[s] and owner[s] is not None:
                continue
            if owner[s] is not None:
                changes.append((ts, s, owner[s], who, ep))
            history[s].append((ts, who))
            owner[s], epoch[s] = who, ep

    def owner_at(slot, t):
        o = None
        for ts, who in history[slot]:
            if ts > t:
                break
            o = who
        return o

    def claims_at(node, slot, t):
        """Did node, in its latest own message before t, claim slot?"""
        last = None
        for ts, bitmap in own.get(node, []):
            if ts > t:
                break
            last = bitmap
        return last is not None and last[slot >> 3] >> (slot & 7) & 1

    # owner lines: changes grouped by (ts, old, new, epoch) into ranges
    groups = {}
    for ts, s, old, new, ep in changes:
        if inside(ts):
            groups.setdefault((ts, old, new, ep), []).append(s)
    for (ts, old, new, ep), slots in sorted(groups.items()):
        for a, b in ranges(slots):
            print("owner\t%d\t%d\t%d\t%d\t%d\t%d" % (a, b, ports[old], ports[new], ep, ts))

    # failovers
    polls = []      # (ts, set of master ports)
    cur = None
    for line in open(os.path.join(run, "nodes.log")):
        if line.startswith("nodes\t"):
            w = line.rstrip("\n").split("\t")
            cur = (int(w[1]), set())
            if len(w) == 3:
                polls.append(cur)
        elif line.startswith("  ") and cur is not None:
            f = line.split()
            if "master" in f[2].split(",") and "fail" not in f[2]:
                cur[1].add(int(f[1].split(":")[1].split("@")[0]))
    id_of = {p: i for i, p in ports.items()}
    for ts, w in events:
        kind = {"manual": "manual", "takeover": "takeover", "sigstop": "automatic"}.get(w[0])
        if kind is None:
            continue
        old = int(w[2]) if kind != "automatic" else int(w[1])
        flips = [(t, new, ep) for t, s, o, new, ep in changes
                 if o == id_of[old] and t >= ts]
        if not flips:
            continue
        flip_us, new_id, ep = min(flips)
        new = ports[new_id]
        poll = next((t for t, masters in polls if t >= ts and new in masters), 0)
        if inside(flip_us):
            print("failover\t%s\t%d\t%d\t%d\t%d\t%d" % (kind, old, new, ep, flip_us, poll))

    # writes
    sys.path.insert(0, "/usr/lib/python3/dist-packages")
    from redis.crc import key_slot
    from_key = {}
    answered = {}   # writer -> [(ts, slot, port)] of every answered command
    for name in sorted(glob.glob(os.path.join(run, "w*.log"))):
        writer = os.path.basename(name)[:-4]
        for line in open(name):
            w = line.rstrip("\n").split("\t")
            if w[0] == "ack":
                from_key.setdefault(w[2], []).append((int(w[1]), w[3], int(w[4])))
            if w[0] in ("ack", "moved", "ask"):
                port = int(w[4] if w[0] == "ack" else w[3])
                answered.setdefault(writer, []).append(
                    (int(w[1]), key_slot(w[2].encode()), port, w[0]))
    for (ts, old, new, ep), slots in sorted(groups.items()):
        for a, b in ranges(slots):
            for writer, cmds in sorted(answered.items()):
                at_old = [(t, k) for t, s, p, k in cmds
                          if p == ports[old] and a <= s <= b and ts < t and inside(t)]
                first = min((t for t, s, p, k in cmds if a <= s <= b and ts < t and inside(t)),
                            default=0)
                told = min((t for t, k in at_old if k == "moved"), default=None)
                untold = max((t for t, k in at_old if k == "ack" and (told is None or t < told)),
                             default=0)
                if at_old:
                    print("stale\t127.0.0.2%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d" % (
                        writer[1:], a, b, ports[old], ports[new], len(at_old), first,
                        max(t for t, k in at_old), untold))
    final = {}
    for line in open(os.path.join(run, "readback.tsv")):
        _, k, v = line.rstrip("\n").split("\t")
        final[k] = v
    lost = []
    for key, acks in sorted(from_key.items()):
        fv = final.get(key, "-")
        fseq = -1 if fv == "-" else int(fv.rsplit("-", 1)[1])
        slot = key_slot(key.encode())
        for ts, value, port in acks:
            if not inside(ts):
                continue
            seq = int(value.rsplit("-", 1)[1])
            fate = "survived" if seq == fseq else "overwritten" if seq < fseq else "lost"
            o = owner_at(slot, ts)
            risk = 1 if (o is not None and ports[o] != port
                         and claims_at(id_of[port], slot, ts)) else 0
            print("write\t%s\t%s\t%d\t%d\t%s\t%d" % (key, value, port, ts, fate, risk))
            if fate == "lost":
                lost.append((ts, key, value, port, "after_claim" if risk else "before_claim"))
    for ts, key, value, port, why in sorted(lost):
        print("lost\t%s\t%s\t%d\t%d\t%s" % (key, value, port, ts, why))


if __name__ == "__main__":
    main()
