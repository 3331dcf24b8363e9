#!/usr/bin/python3
"""pairs-check.py - check slotscope's pairings of a redis-benchmark capture
against the TCP facts of the capture, read here with an own pcap reader.

  scripts/rtt/pairs-check.py CAPTURE.pcap DB [--ports LO-HI]

DB is `slotscope analyze CAPTURE --db DB --store-commands`. Nothing of
slotscope's logic is used: the capture is read here (classic pcap, Ethernet,
IPv4, TCP), and the database is only the list of pairings to check
(commands.req_frame, reply_frame, reply_type) and its connections' addresses.

Per capture it prints (all on client connections, kind 'client'):
  capture    packets, connections, mid-stream ones (no SYN seen)
  rtt        median time from a server data segment to the first client
             packet acknowledging its end (on a server-side capture: the RTT,
             2D), and from a client data segment to the next server data
             segment (the server's own time)
  start      per connection: the first client packet's ACK against the first
             server byte seen (S0). ack < S0 means reply bytes in flight when
             the capture began (a "start gap" candidate); whether that packet
             came before or after the server's first segment
  markers    requests and replies counted in the reassembled streams
             ("*3 $3 SET", "*2 $3 GET"; "+OK", "$N", "$-1") against
             slotscope's requests and replies per connection (a request cut
             by the end of the capture counts here, not in slotscope)
  impossible pairings, two tests:
             type: SET answered by other than a simple string (+), GET by
               other than a bulk string or nil ($ or n), or an error
             ack:  the reply's packet does not acknowledge the request's first
               byte (the server had not received the request when it sent the
               reply); with a one-direction shift of the pairing this fails
               whenever the client sent one batch at a time
  unpaired   requests and replies slotscope left unpaired, and where: before
             the connection's first paired command, after its last, between
"""
import collections, re, sqlite3, statistics, struct, sys

M32 = 0xffffffff


def ge(a, b):  # a >= b in 32-bit sequence space
    return ((a - b) & M32) < 0x80000000


def packets(path):
    with open(path, 'rb') as f:
        hdr = f.read(24)
        magic = struct.unpack('<I', hdr[:4])[0]
        if magic in (0xa1b2c3d4, 0xa1b23c4d):
            e = '<'
        elif magic in (0xd4c3b2a1, 0x4d3cb2a1):
            e = '>'
        else:
            sys.exit('pairs-check.py: not a classic pcap file')
        nano = magic in (0xa1b23c4d, 0x4d3cb2a1)
        link = struct.unpack(e + 'I', hdr[20:24])[0]
        if link != 1:
            sys.exit('pairs-check.py: link type %d, only Ethernet (1)' % link)
        frame = 0
        while True:
            rh = f.read(16)
            if len(rh) < 16:
                return
            sec, frac, incl, _orig = struct.unpack(e + 'IIII', rh)
            data = f.read(incl)
            frame += 1
            t = sec + frac / (1e9 if nano else 1e6)
            if len(data) < 14 + 20 or data[12:14] != b'\x08\x00':
                continue
            ip = data[14:]
            ihl = (ip[0] & 15) * 4
            if ip[9] != 6:
                continue
            tot = struct.unpack('>H', ip[2:4])[0]
            src = '%d.%d.%d.%d' % tuple(ip[12:16])
            dst = '%d.%d.%d.%d' % tuple(ip[16:20])
            tcp = ip[ihl:tot]
            sp, dp, seq, ack = struct.unpack('>HHII', tcp[:12])
            off = (tcp[12] >> 4) * 4
            flags = tcp[13]
            yield frame, t, src, sp, dst, dp, seq, ack, flags, tcp[off:]


class Conn:
    def __init__(self):
        self.syn = False
        self.s0 = None; self.s0_frame = None      # first server data byte
        self.a0 = None; self.a0_frame = None      # first client packet's ack
        self.below = 0                            # client packets with ack < s0
        self.below_bytes = 0
        self.streams = {'c': bytearray(), 's': bytearray()}
        self.next = {'c': None, 's': None}
        self.holes = {'c': 0, 's': 0}
        self.pending_s = []                       # (end seq, time) of server data
        self.pending_c = []                       # times of client data not yet answered


def main():
    args = sys.argv[1:]
    lo, hi = 31400, 31405
    if '--ports' in args:
        i = args.index('--ports')
        lo, hi = map(int, args[i + 1].split('-'))
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    pcap, dbpath = args
    conns = collections.OrderedDict()
    frames = {}          # frame -> (key, side, seq, ack, len)
    rtt, srv = [], []
    n = 0
    for frame, t, src, sp, dst, dp, seq, ack, flags, pl in packets(pcap):
        n += 1
        if lo <= dp <= hi:
            side, key = 'c', ('%s:%d' % (src, sp), '%s:%d' % (dst, dp))
        elif lo <= sp <= hi:
            side, key = 's', ('%s:%d' % (dst, dp), '%s:%d' % (src, sp))
        else:
            continue
        c = conns.get(key)
        if c is None:
            c = conns[key] = Conn()
        frames[frame] = (key, side, seq, ack, len(pl))
        if flags & 0x02:
            c.syn = True
        # reassembly, in order only (loopback: no loss, no reordering)
        if pl:
            nx = c.next[side]
            if nx is None or seq == nx:
                c.streams[side] += pl
            elif ge(seq, nx):
                c.holes[side] += 1
                c.streams[side] += pl
            else:
                pl = b''   # retransmission
            if pl:
                c.next[side] = (seq + len(pl)) & M32
        if side == 's':
            if pl:
                if c.s0 is None:
                    c.s0, c.s0_frame = seq, frame
                c.pending_s.append(((seq + len(pl)) & M32, t))
                if c.pending_c:
                    srv.append(t - c.pending_c[0])
                    c.pending_c = []
        else:
            if flags & 0x10:
                if c.a0 is None:
                    c.a0, c.a0_frame = ack, frame
                if c.s0 is not None and not ge(ack, c.s0):
                    c.below += 1
                    c.below_bytes = max(c.below_bytes, (c.s0 - ack) & M32)
                while c.pending_s and ge(ack, c.pending_s[0][0]):
                    end, ts = c.pending_s.pop(0)
                    rtt.append(t - ts)
            if pl:
                c.pending_c.append(t)

    db = sqlite3.connect(dbpath)
    kinds = {}
    for cid, src, dst, kind, req, rep, ureq, urep in db.execute(
            'SELECT id, src, dst, kind, requests, replies, unpaired_requests, '
            'unpaired_replies FROM connections'):
        kinds[cid] = (src, dst, kind, req, rep, ureq, urep)
    clients = {k: v for k, v in kinds.items() if v[2] == 'client'}

    print('capture    %d packets, %d connections on ports %d-%d, %d mid-stream (no SYN)'
          % (n, len(conns), lo, hi, sum(1 for c in conns.values() if not c.syn)))
    if rtt:
        print('rtt        server data -> client ACK of its end: median %.3f ms, p10 %.3f, p90 %.3f (%d)'
              % (statistics.median(rtt) * 1e3, sorted(rtt)[len(rtt) // 10] * 1e3,
                 sorted(rtt)[len(rtt) * 9 // 10] * 1e3, len(rtt)))
    if srv:
        print('           client data -> next server data: median %.3f ms (%d)'
              % (statistics.median(srv) * 1e3, len(srv)))

    byaddr = {(v[0], v[1]): cid for cid, v in clients.items()}
    starts = before = after = 0
    inflight = []
    mism = []
    for key, c in conns.items():
        cid = byaddr.get(key)
        if cid is None:
            continue
        if c.s0 is not None and c.a0 is not None and not ge(c.a0, c.s0):
            starts += 1
            inflight.append((c.s0 - c.a0) & M32)
            if c.a0_frame < c.s0_frame:
                before += 1
            else:
                after += 1
        cs, ss = bytes(c.streams['c']), bytes(c.streams['s'])
        reqs = cs.count(b'*3\r\n$3\r\nSET\r\n') + cs.count(b'*2\r\n$3\r\nGET\r\n')
        reps = ss.count(b'+OK\r\n') + len(re.findall(rb'\$(?:-1|\d+)\r\n', ss))
        v = clients[cid]
        if reqs != v[3] or reps != v[4]:
            mism.append('conn %d %s: requests %d (slotscope %d), replies %d (slotscope %d), holes c%d s%d'
                        % (cid, key[0], reqs, v[3], reps, v[4], c.holes['c'], c.holes['s']))
    print('start      %d of %d client connections: first client ACK < first server byte '
          '(in flight: %s bytes); that packet before the server\'s first segment in %d, after in %d; '
          'client packets with ack < S0 in all: %d'
          % (starts, len(clients), ','.join(map(str, sorted(inflight))) or '-', before, after,
             sum(c.below for k, c in conns.items() if k in byaddr)))
    sg = db.execute("SELECT count(*), coalesce(sum(gap_bytes), 0), coalesce(sum(unpaired_requests), 0), "
                    "coalesce(sum(unpaired_replies), 0) FROM connections WHERE kind = 'client' AND gaps > 0").fetchone()
    print('gaps       slotscope: %d client connections with a gap (%d bytes), their unpaired requests %d, replies %d'
          % sg)
    print('markers    %d of %d client connections differ from slotscope%s'
          % (len(mism), len(clients), ''.join('\n             ' + m for m in mism)))

    ids = ','.join(map(str, clients)) or '-1'
    bad_type = db.execute(
        "SELECT count(*) FROM commands WHERE conn IN (%s) AND outcome = 'ok' AND NOT ("
        "(name = 'SET' AND reply_type = '+' AND error = '') OR "
        "(name = 'GET' AND reply_type IN ('$', 'n') AND error = ''))" % ids).fetchone()[0]
    bad_ack = checked = 0
    examples = []
    for cid, seq_i, rf, qf in db.execute(
            "SELECT conn, seq, reply_frame, req_frame FROM commands WHERE conn IN (%s) "
            "AND outcome = 'ok'" % ids):
        q, r = frames.get(qf), frames.get(rf)
        if q is None or r is None or q[1] != 'c' or r[1] != 's':
            bad_ack += 1
            examples.append('conn %d seq %d: frames %d/%d not request/reply packets' % (cid, seq_i, qf, rf))
            continue
        checked += 1
        if not ge(r[3], (q[2] + 1) & M32):
            bad_ack += 1
            if len(examples) < 5:
                examples.append('conn %d seq %d: request frame %d seq %d, reply frame %d ack %d'
                                % (cid, seq_i, qf, q[2], rf, r[3]))
    total = db.execute("SELECT count(*) FROM commands WHERE conn IN (%s)" % ids).fetchone()[0]
    paired = db.execute("SELECT count(*) FROM commands WHERE conn IN (%s) AND outcome = 'ok'" % ids).fetchone()[0]
    print('impossible type %d, ack %d (of %d paired of %d requests on client connections, %d checked)'
          % (bad_type, bad_ack, paired, total, checked))
    for e in examples:
        print('           ' + e)

    # where the unpaired requests lie on each connection
    where = collections.Counter()
    for cid in clients:
        rows = db.execute("SELECT seq, outcome FROM commands WHERE conn = ? ORDER BY seq", (cid,)).fetchall()
        ok = [s for s, o in rows if o == 'ok']
        for s, o in rows:
            if o == 'ok':
                continue
            where['before' if not ok or s < ok[0] else 'after' if s > ok[-1] else 'between'] += 1
    ureq = sum(v[5] for v in clients.values())
    urep = sum(v[6] for v in clients.values())
    print('unpaired   requests %d (before the first pairing %d, between %d, after the last %d), replies %d'
          % (ureq, where['before'], where['between'], where['after'], urep))


if __name__ == '__main__':
    main()
