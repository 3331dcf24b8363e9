#!/usr/bin/python3
"""truth.py - what each client library did, decided from the wire alone.

  scripts/libs/truth.py CAPTURE[.pcap|.pcap.gz] EVENTS.json [--tshark] > NAME.truth.tsv

An independent reading of a capture made by scripts/libs/scenario.py, for the
real-library fixtures: it shares no code with slotscope (own pcap reader, own
TCP reassembly, own RESP decoder) and never reads slotscope's output. EVENTS is
the scenario's events.json: the node ports, and the node roles before and after
the failover (a fact of the cluster, recorded by the driver, used only to know
whether a MOVED came from a replica).

Per client (source address) it counts the requests sent and the redirect
replies received (MOVED, ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN), and decides
each mistake with slotscope's documented definitions and default thresholds
(DESIGN.md, `slotscope analyze --help`):

  a retry     the same command (name and every argument) from the same client,
              sent within OP_WINDOW after the redirect reply; the chain of
              retries of one command is one operation
  asking_missing / asking_other_connection / asking_interleaved
              an ASK's retry to the target whose connection's previous request
              is not ASKING: ASKING sent on another connection of the client to
              the target since the ASK (other_connection), or on the same one
              with requests between (interleaved), or not at all (missing)
  ask_cached  >= ASK_CACHED_MIN commands, none a retry, for a slot the client
              got ASK for, sent without ASKING to that ASK's target and
              answered MOVED by it (it does not own the slot yet), unless a
              MOVED for the slot to that target came since the ASK (the client
              was told it owns the slot; docs/findings.md; the other reset
              there, a cluster map received since, is not modelled)
  moved_ignored
              >= MOVED_IGNORED_MIN commands, none a retry, for a slot sent to a
              node that had answered MOVED for that slot (a master, or a replica
              on a READONLY connection), bounced again
  readonly_missing
              >= 1 command answered MOVED by a replica on a connection that had
              not sent READONLY
  redirect_loop
              an operation with more than LOOP_MAX MOVED/ASK redirects, or the
              same redirect (node and reply) three times or more
  tryagain_storm
              an operation with >= TRYAGAIN_MIN retries sent sooner than
              TRYAGAIN_BACKOFF after their TRYAGAIN, or more than TRYAGAIN_MAX
  redirect_unfollowed
              a MOVED or ASK with no retry (at all, before the end of the input)
  crossslot   any CROSSSLOT reply

Output (tab-separated, '#' comments): `client ADDR NAME`, `commands ADDR N`,
`redirects ADDR KIND N`, `kind ADDR KIND N SLOTS` (N = occurrences; SLOTS
-1 for readonly_missing and crossslot, which are per client), and
`clean ADDR` for a client with no mistake, `cluster_findings N` (0: every
migration phase of the scenario ended well within migration_stuck's 60 s).
For a client with connections picked up mid-stream (no SYN seen) also
`midstream ADDR N` (such connections), `unanswered ADDR N` (requests that got
no reply) and `orphan_replies ADDR N` (replies, not pushes, that came when no
request of theirs waited; a mid-stream connection's replies before its first
request are skipped, not counted).

Lost bytes. A capture can miss bytes the peer got (kernel drops): a range
of a direction no packet carries, or the server's bytes before its first
captured one that the client's ACK shows were sent. After a hole in the
client's stream, a request the hole cuts is carried across by its declared
lengths when its headers were captured; else the stream resumes at the first
segment that begins a run of strict requests ending exactly at a segment's
end, and the requests lost before it (1 .. bytes/10) are settled by the
replies: their ACKs, the client's ACKs and the reply types (hyp_reply); the
requests stay unknown while more than one count fits, and a server hole
before that abandons the connection (all unknown). In the
server's, replies still come in request order, but how many of the waiting
requests the lost bytes answered is not on the wire: at most one per 3
bytes, and none the client sent after acknowledging the hole's end; each
later reply, sent with ACK A, answers a request ending at or below A. When
these leave one count (zero lost replies, say) the pairing goes on; else
the requests the lost and later replies may have answered stay unknown
(no reply, not counted unanswered; `# ADDR: N request(s) with the reply
unknown`) to the end of the connection: nothing on the wire bounds the
count from below (the lost bytes may be pushes, or replies to requests sent
before the capture).
Comments `# evidence KIND: ...` show up to three commands behind each kind. With --tshark, tshark's own RESP
dissector counts the requests and redirect errors per client too
(`tshark_commands`, `tshark_redirects`), as a cross-check of this decoder.
"""
import collections, gzip, json, struct, subprocess, sys

OP_WINDOW = 5.0
LOOP_MAX = 5
MOVED_IGNORED_MIN = 3
ASK_CACHED_MIN = 2
TRYAGAIN_MIN = 10
TRYAGAIN_BACKOFF = 0.001
TRYAGAIN_MAX = 50
MIGRATION_STUCK_S = 60.0
PER_CLIENT_KINDS = ("readonly_missing", "crossslot")
NODE_HOST = "127.0.0.1"   # scripts/cluster/cluster.sh's nodes listen here
EVIDENCE_MAX = 3       # commands kept per kind, printed as comments
READS = {b"GET", b"MGET", b"EXISTS", b"STRLEN", b"GETRANGE", b"TTL", b"TYPE"}
REDIRECTS = ("MOVED", "ASK", "TRYAGAIN", "CROSSSLOT", "CLUSTERDOWN")
KEYLESS = {b"ASKING", b"READONLY", b"READWRITE", b"CLUSTER", b"PING", b"INFO", b"HELLO",
           b"CLIENT", b"COMMAND", b"AUTH", b"SELECT", b"QUIT", b"ECHO", b"CONFIG"}


# ---- pcap ---------------------------------------------------------------
def packets(path):
    """(ts, src, sport, dst, dport, seq, ack, flags, payload) of each TCP/IPv4 packet."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic = raw[:4]
    endian = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<",
              b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}.get(magic)
    if not endian:
        raise SystemExit("truth.py: %s is not a pcap file" % path)
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    link = struct.unpack(endian + "I", raw[20:24])[0]
    off = 24
    while off + 16 <= len(raw):
        sec, frac, incl, _ = struct.unpack(endian + "IIII", raw[off:off + 16])
        data = raw[off + 16:off + 16 + incl]
        off += 16 + incl
        ts = sec + frac / (1e9 if nano else 1e6)
        if link == 1:
            if len(data) < 14 or data[12:14] != b"\x08\x00":
                continue
            ip = data[14:]
        elif link == 113:
            if len(data) < 16 or data[14:16] != b"\x08\x00":
                continue
            ip = data[16:]
        elif link == 276:    # Linux SLL2 (tcpdump -i any): protocol first, 20 bytes
            if len(data) < 20 or data[0:2] != b"\x08\x00":
                continue
            ip = data[20:]
        elif link == 0:
            ip = data[4:]
        else:
            raise SystemExit("truth.py: link type %d not supported" % link)
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:total]
        if len(tcp) < 20:
            continue
        sport, dport, seq, ack = struct.unpack(">HHII", tcp[:12])
        doff = (tcp[12] >> 4) * 4
        src = ".".join(map(str, ip[12:16]))
        dst = ".".join(map(str, ip[16:20]))
        yield ts, src, sport, dst, dport, seq, ack, tcp[13], tcp[doff:]


# ---- RESP ---------------------------------------------------------------
class Incomplete(Exception):
    pass


def resp_line(buf, pos):
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise Incomplete
    return buf[pos:end], end + 2


def resp_value(buf, pos):
    """One RESP2/RESP3 value at pos: ((type, value), next_pos). Errors are
    (b'-', text); aggregates hold lists of values."""
    if pos >= len(buf):
        raise Incomplete
    t = buf[pos:pos + 1]
    line, pos = resp_line(buf, pos + 1)
    if t in (b"+", b"-", b":", b",", b"#", b"(", b"_"):
        return (t, line), pos
    if t in (b"$", b"!", b"="):
        n = int(line)
        if n < 0:
            return (t, None), pos
        if len(buf) < pos + n + 2:
            raise Incomplete
        return (t, buf[pos:pos + n]), pos + n + 2
    if t in (b"*", b">", b"~", b"%", b"|"):
        n = int(line)
        if n < 0:
            return (t, None), pos
        items = []
        for _ in range(n * (2 if t in (b"%", b"|") else 1)):
            v, pos = resp_value(buf, pos)
            items.append(v)
        if t == b"|":   # an attribute precedes the real value
            return resp_value(buf, pos)
        return (t, items), pos
    raise ValueError("bad RESP type %r" % t)


def resp_request(buf, pos):
    """One request: (argv, next_pos); inline commands are split at spaces."""
    if pos >= len(buf):
        raise Incomplete
    if buf[pos:pos + 1] == b"*":
        (t, items), pos = resp_value(buf, pos)
        return [v for _, v in items or []], pos
    line, pos = resp_line(buf, pos)
    return line.split(), pos


# ---- TCP ----------------------------------------------------------------
M32 = 0xFFFFFFFF
MIN_REPLY = 3          # the shortest RESP reply ("+\r\n", "_\r\n"): bytes per lost reply at most


def sdiff(a, b):
    """a - b in sequence space, signed."""
    d = (a - b) & M32
    return d - 0x100000000 if d >= 0x80000000 else d


class Half:
    """One direction of a connection: in-order bytes, messages as they complete.
    holes: {first missing seq: first seq after} of the bytes no packet of the
    capture carries (lost_ranges). With jump, the bytes after such a hole are
    taken once they come and the hole is noted in marks as (offset in buf,
    seq there); without, the direction ends at its first hole (dead)."""
    def __init__(self, holes=None, jump=True):
        self.next_seq = None
        self.buf = b""
        self.pending = {}
        self.holes = holes or {}
        self.jump = jump
        self.marks = []       # (offset, seq): buf[offset:] starts at seq (offset 0: the start)
        self.dead = False
        self.pstarts = []     # offsets in buf where a whole segment's bytes begin
        self.pends = set()    # offsets in buf where a segment's bytes end

    def seq_at(self, off):
        """The sequence number of buf[off]."""
        best = self.marks[0]
        for m in self.marks:
            if m[0] > off:
                break
            best = m
        return (best[1] + off - best[0]) & M32

    def add(self, seq, data, syn):
        """Take one segment; True when new in-order bytes arrived."""
        if syn:
            self.next_seq = (seq + 1) & M32
            return False
        if not data or self.dead:
            return False
        if self.next_seq is None:
            self.next_seq = seq           # joined mid-stream
        if not self.marks:
            self.marks.append((0, self.next_seq))
        self.pending[seq] = data
        before = len(self.buf)
        while True:
            grew = True
            while grew:
                grew = False
                for s, d in list(self.pending.items()):
                    behind = (self.next_seq - s) & M32   # bytes of d already had
                    if behind >= 0x80000000:
                        continue                  # still in the future: keep
                    del self.pending[s]
                    if behind < len(d):
                        if behind == 0:
                            self.pstarts.append(len(self.buf))
                        self.buf += d[behind:]
                        self.pends.add(len(self.buf))
                        self.next_seq = (s + len(d)) & M32
                        grew = True
                    # else a retransmission of bytes already had: dropped
            after = self.holes.get(self.next_seq)
            if after is None or not self.pending:
                break
            if not self.jump:
                self.dead = True          # nothing after a lost byte is ever in order
                self.pending.clear()
                break
            if not any(0 <= sdiff(after, s) < len(d) for s, d in self.pending.items()):
                break                     # the bytes after the hole are not here yet
            self.marks.append((len(self.buf), after))
            self.next_seq = after
        return len(self.buf) > before


def endpoints(src, sport, dst, dport, node_ports):
    """(connection key, to_server) of a client-node packet, or None."""
    to_node, from_node = is_node(dst, dport, node_ports), is_node(src, sport, node_ports)
    if to_node and not from_node:
        return (src, sport, dst, dport), True
    if from_node and not to_node:
        return (dst, dport, src, sport), False
    return None


def lost_ranges(path, node_ports):
    """{(key, to_server): {first missing seq: first seq after}}: the byte
    ranges of each direction that no packet of the whole capture carries,
    between its first and last byte seen (a kernel drop: the peer got them,
    the capture did not). A range filled later (reordering, a
    retransmission) is not one."""
    spans = collections.defaultdict(list)     # (key, dir) -> [first seq, [[lo, hi] offsets]]
    for _, src, sport, dst, dport, seq, _, flags, data in packets(path):
        if not data:
            continue
        e = endpoints(src, sport, dst, dport, node_ports)
        if e is None:
            continue
        st = spans.get(e)
        if st is None:
            spans[e] = [seq, [[0, len(data)]]]
            continue
        off = sdiff(seq, st[0])
        iv = st[1]
        if iv[-1][0] <= off <= iv[-1][1]:
            iv[-1][1] = max(iv[-1][1], off + len(data))
        else:
            iv.append([off, off + len(data)])
    out = {}
    for e, (first, iv) in spans.items():
        iv.sort()
        merged = [list(iv[0])]
        for lo, hi in iv[1:]:
            if lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        if len(merged) > 1:
            out[e] = {(first + a[1]) & M32: (first + b[0]) & M32 for a, b in zip(merged, merged[1:])}
    return out


def is_node(ip, port, node_ports):
    """A node's endpoint: the cluster listens on NODE_HOST only, so a client
    whose ephemeral port falls in the node range is still a client."""
    return ip == NODE_HOST and port in node_ports


def seq_le(a, b):
    return sdiff(b, a) >= 0


def pair(cmd, v, ts):
    cmd["reply"], cmd["t_reply"] = v, ts


def unknown_reply(cmd, stats):
    """A request whose reply, if any, cannot be told (lost, or which one is unsure)."""
    cmd["unknown"] = True
    stats["unknown"] = stats.get("unknown", 0) + 1


def server_hole(c, lost, after, partial, stats):
    """The server's bytes lost before its next reply: lost bytes, of which
    partial (the type of a reply cut by the hole, or None) began before it.
    Which waiting requests the lost bytes answered is known when no reply
    fits in them, else only a range [lo, hi] of how many of the queue's head
    (the replies are in request order; a reply lost before seq after cannot
    answer a request the client sent after acknowledging after): narrowed
    later by the server's ACKs."""
    q = c["queue"]
    if c["hyp"] is not None or any(r.get("block") for r in q):
        abandon(c, stats)    # lost requests and lost replies together: not modelled
        return
    unsure = c["unsure"]
    cut = partial is not None and partial != b">"
    if unsure is None:
        if cut and q:
            unknown_reply(q.popleft(), stats)   # answered, by bytes we lost
        if not q:
            return
        hi = 0
        for r in q:
            if r["ackc"] is not None and seq_le(after, r["ackc"]):
                break
            hi += 1
        hi = min(max(lost, 0) // MIN_REPLY, hi)
        if hi == 0:
            return
        c["unsure"] = {"lo": 0, "hi": hi, "got": []}
        stats["holes_unsure"] = stats.get("holes_unsure", 0) + 1
        return
    unsure["lo"] += 1 if cut else 0
    unsure["hi"] += (1 if cut else 0) + max(lost, 0) // MIN_REPLY
    settle(c, stats)


def settle(c, stats):
    """Narrow the range of replies lost with the server's ACK: the m-th reply
    after the hole was sent when the server had received the requests up to
    its ACK, so it answers one of them (x + m <= those), as long as that
    ACK is short of the client's first lost byte (past it the server had
    requests the capture lacks); resolve when one value is left."""
    u, q = c["unsure"], c["queue"]
    m = len(u["got"])
    ack = u["got"][-1][2] if m else None
    if ack is not None and (c["up_lost"] is None or seq_le(ack, c["up_lost"])):
        received = 0
        for r in q:
            if not seq_le(r["end"], ack):
                break
            received += 1
        u["hi"] = min(u["hi"], received - m)
    if u["hi"] < u["lo"]:
        # more replies than requests the server had: a reply to something not
        # captured; nothing on this connection can be paired from here
        c["lost"] = True
        stats["contradictions"] = stats.get("contradictions", 0) + 1
        while q:
            unknown_reply(q.popleft(), stats)
        c["unsure"] = None
        return
    if u["hi"] == u["lo"]:
        for _ in range(u["lo"]):
            unknown_reply(q.popleft(), stats)
        for v, ts, _ in u["got"]:
            pair(q.popleft(), v, ts)
        c["unsure"] = None


def give_up(c, stats):
    """The capture ended unsure: the requests that the lost or the buffered
    replies may have answered are unknown; later ones certainly got none."""
    u, q = c["unsure"], c["queue"]
    for _ in range(min(len(q), u["hi"] + len(u["got"]))):
        unknown_reply(q.popleft(), stats)
    c["unsure"] = None


# ---- client holes ---------------------------------------------------------
MIN_REQUEST = 10       # the shortest request a server answers, "*1\r\n$0\r\n\r\n": bytes per lost request at most
ARGC_MAX = 1 << 20
BULK_MAX = 512 << 20


def strict_request(buf, pos, end):
    """One well-formed request at pos, ending at or before end: an array of
    1..ARGC_MAX bulk strings (what a client library sends), the first a
    command name (letters, digits, '-', '_', '|'). Returns the position
    after it; Incomplete when end comes first, ValueError when the bytes are
    no such request."""
    def line(p, lead):
        if p >= end:
            raise Incomplete
        if buf[p:p + 1] != lead:
            raise ValueError
        e = buf.find(b"\r\n", p, end)
        if e < 0:
            if end - p > 12:
                raise ValueError
            raise Incomplete
        v = buf[p + 1:e]
        if not v.isdigit() or len(v) > 10:
            raise ValueError
        return int(v), e + 2
    n, p = line(pos, b"*")
    if not 1 <= n <= ARGC_MAX:
        raise ValueError
    for i in range(n):
        ln, p = line(p, b"$")
        if ln > BULK_MAX:
            raise ValueError
        if p + ln + 2 > end:
            raise Incomplete
        if buf[p + ln:p + ln + 2] != b"\r\n":
            raise ValueError
        if i == 0 and (ln == 0 or not all(ch in NAME_BYTES for ch in buf[p:p + ln])):
            raise ValueError
        p += ln + 2
    return p


NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_|")


def piece_of(half, off):
    """(index of the mark whose piece holds buffer offset off, end offset of that piece)."""
    i = 0
    for j, m in enumerate(half.marks):
        if m[0] <= off:
            i = j
        else:
            break
    end = half.marks[i + 1][0] if i + 1 < len(half.marks) else len(half.buf)
    return i, end


def off_of(half, seq):
    """The buffer offset of seq if the capture has that byte (or seq is the
    end of what came so far), else None."""
    for j, (off, s0) in enumerate(half.marks):
        end = half.marks[j + 1][0] if j + 1 < len(half.marks) else len(half.buf)
        d = sdiff(seq, s0)
        if 0 <= d < end - off or (d == end - off and j + 1 == len(half.marks)):
            return off + d
    return None


def carry_request(half, pos):
    """A request at pos that a hole cuts: walk its array by the lengths it
    declares. When every header line ("*N", "$len") is in bytes the capture
    has and the hole falls inside bulk payloads, the request's end is exact:
    ("end", offset of its end) or ("end_lost", seq of its end) when that end
    is inside a later hole. ("wait",) when bytes needed have not come yet,
    ("lost",) when a header is cut (the request's length is unknown)."""
    seq = half.seq_at(pos)

    def header(seq, lead):
        off = off_of(half, seq)
        if off is None:
            raise Incomplete if beyond(half, seq) else LookupError
        _, end = piece_of(half, off)
        if off >= len(half.buf):
            raise Incomplete
        if half.buf[off:off + 1] != lead:
            raise ValueError
        e = half.buf.find(b"\r\n", off, end)
        if e < 0:
            if end < len(half.buf) or end - off > 12:
                raise LookupError   # cut by a hole (or no header)
            raise Incomplete
        v = half.buf[off + 1:e]
        if not v.isdigit():
            raise ValueError
        return int(v), (seq + e + 2 - off) & M32

    try:
        n, seq = header(seq, b"*")
        for _ in range(n):
            ln, seq = header(seq, b"$")
            seq = (seq + ln + 2) & M32
    except Incomplete:
        return ("wait",)
    except (LookupError, ValueError):
        return ("lost",)
    off = off_of(half, seq)
    if off is None:
        return ("wait",) if beyond(half, seq) else ("end_lost", seq)
    return ("end", off, seq)


def end_seq(half, off):
    """The sequence number just after buf[off - 1]: where a message ending at
    off ends (off may be where a hole's far side begins)."""
    return (half.seq_at(off - 1) + 1) & M32 if off > 0 else half.marks[0][1]


def beyond(half, seq):
    """seq is past the last byte that came so far."""
    return sdiff(seq, (half.seq_at(len(half.buf) - 1) + 1) & M32) > 0


def find_resume(half, mark, limit_wait):
    """The first point after the hole before marks[mark] where the request
    boundary is certain: a segment that begins with a run of complete
    well-formed requests (strict_request) ending exactly at a segment's
    end, where no other '*' inside that run (after a CRLF, not one of the
    run's own boundaries) starts a request that parses as far as the run's
    end. Returns (offset, mark index of its piece), None to wait for
    bytes, or False when no piece up to the last hole has one."""
    m = mark
    while m < len(half.marks):
        lo = half.marks[m][0]
        hi = half.marks[m + 1][0] if m + 1 < len(half.marks) else len(half.buf)
        last = m + 1 == len(half.marks)
        for p in half.pstarts:
            if p < lo or p >= hi:
                continue
            bounds, q, ok = {p}, p, None
            while True:
                try:
                    q = strict_request(half.buf, q, hi)
                except Incomplete:
                    ok = None if last else False
                    break
                except ValueError:
                    ok = False
                    break
                bounds.add(q)
                if q in half.pends:
                    ok = True
                    break
            if ok is None:
                return None        # the run is not complete yet
            if not ok:
                continue
            alone = True
            at = half.buf.find(b"*", p + 1, q)
            while at >= 0:
                if at not in bounds and half.buf[at - 2:at] == b"\r\n":
                    try:
                        strict_request(half.buf, at, q)
                        alone = False     # another reading of the same bytes
                    except Incomplete:
                        alone = False     # it may go on past the run: not ruled out
                    except ValueError:
                        pass
                if not alone:
                    break
                at = half.buf.find(b"*", at + 1, q)
            if alone:
                return p, m
        if last:
            return None if limit_wait else False
        m += 1
    return False


def reply_fits(r, v):
    """Can request r get reply v? Errors fit any; else by the command's
    reply types (RESP2 and RESP3), for the commands whose types are fixed."""
    t = v[0]
    if t in (b"-", b"!"):
        return True
    name, n = r["name"], len(r["argv"])
    if name == b"GET" and n == 2:
        return t in (b"$", b"_")
    if name == b"MGET":
        return t == b"*"
    if (name == b"SET" and n == 3) or (name in (b"MSET", b"ASKING", b"READONLY", b"READWRITE")):
        return t == b"+"
    return True


def abandon(c, stats):
    """Nothing on this connection can be paired from here: every waiting
    request's reply is unknown, and so are later ones'."""
    c["lost"] = True
    stats["abandoned"] = stats.get("abandoned", 0) + 1
    while c["queue"]:
        r = c["queue"].popleft()
        if not r.get("block"):
            unknown_reply(r, stats)
    c["unsure"] = None
    c["hyp"] = None


def lost_requests(c, half, se, p, stats):
    """The client's bytes from seq se to buffer offset p (a certain request
    boundary) hold requests the capture lost, at least one, at most one per
    MIN_REQUEST bytes: a block in the queue whose count the replies settle
    (hyp_reply), unless the connection is already unsure."""
    if c["lost"]:
        return
    if c["unsure"] is not None or c["hyp"] is not None or any(r.get("block") for r in c["queue"]):
        abandon(c, stats)
        return
    n = sdiff(half.seq_at(p), se)
    c["queue"].append({"block": True, "lo": 1, "hi": max(1, n // MIN_REQUEST),
                       "end": half.seq_at(p), "ackc": None})
    stats["client_holes"] = stats.get("client_holes", 0) + 1


def hyp_reply(c, v, ts, start, stats, ack=None):
    """A reply while the queue's head is a block of lost requests: which of
    its counts x are still possible. With x, the m-th reply from here
    answers a lost request if m < x, else the (m - x)-th request after the
    block, which must have been captured already, be received by the server
    when it sent this reply (its end at or below the reply's ACK), have been
    sent before the client had this reply's bytes (its own ACK below the
    reply's start) and fit the reply's type. One x left: pair; none: the
    connection is abandoned."""
    q = c["queue"]
    h = c["hyp"]
    if h is None:
        b = q[0]
        h = c["hyp"] = {"S": list(range(b["lo"], b["hi"] + 1)), "got": []}
    m = len(h["got"])
    h["got"].append((v, ts))
    if ack is None:
        ack = c["ack_down"]
    keep = []
    for x in h["S"]:
        if m < x:
            keep.append(x)
            continue
        i = 1 + m - x
        if i >= len(q):
            continue
        r = q[i]
        if r.get("block"):
            keep.append(x)
            continue
        if ack is not None and not seq_le(r["end"], ack):
            continue
        if r["ackc"] is not None and sdiff(r["ackc"], start) > 0:
            continue
        if not r.get("placeholder") and not reply_fits(r, v):
            continue
        keep.append(x)
    h["S"] = keep
    if not keep:
        stats["contradictions"] = stats.get("contradictions", 0) + 1
        abandon(c, stats)
    elif len(keep) == 1:
        x = keep[0]
        q.popleft()
        for i, (v, ts) in enumerate(h["got"]):
            if i >= x:
                pair(q.popleft(), v, ts)
        c["hyp"] = None


def hyp_end(c, stats):
    """The connection ended with the block's count unsettled: the requests
    the buffered replies may have answered are unknown; later ones certainly
    got none."""
    h, q = c["hyp"], c["queue"]
    q.popleft()
    for _ in range(min(len(q), len(h["got"]) - min(h["S"]))):
        unknown_reply(q.popleft(), stats)
    c["hyp"] = None


def commands(path, node_ports, midstream=None, orphans=None, stats=None):
    """Every request with its reply, in the order the requests were sent:
    dicts with t, t_reply, client, conn, node, argv, name, reply.
    A connection whose first packet is not a SYN was picked up mid-stream:
    its client bytes count from the first segment that starts a RESP array
    ('*'), its server bytes are skipped while no request waits (a reply to
    a request sent before the capture); midstream, a dict, gets the number
    of such connections per client, orphans the number of replies (not
    pushes) that came when no request of theirs waited.
    Lost bytes (lost_ranges): the client's end the requests of the
    connection (nothing after is in order); the server's, and the server's
    bytes before its first captured one that the client's ACK shows were
    sent, make the requests they may have answered unknown (reply None,
    "unknown" True) unless the ACKs settle it (server_hole); stats, a dict,
    gets the counts (unknown, holes_unsure, contradictions)."""
    if stats is None:
        stats = {}
    lost = lost_ranges(path, node_ports)
    conns, out, nconn = {}, [], 0
    for ts, src, sport, dst, dport, seq, ack, flags, data in packets(path):
        e = endpoints(src, sport, dst, dport, node_ports)
        if e is None:
            continue
        key, to_server = e
        c = conns.get(key)
        if c is None or (flags & 0x02 and to_server and c["closed"]):
            nconn += 1
            if c is not None:
                finish(c, stats)
            up_holes = lost.get((key, True))
            c = conns[key] = {"id": nconn, "up": Half(up_holes), "up_holes": up_holes,
                              "umark": 1, "search": None, "hyp": None, "early": [],
                              "up_lost": None,
                              "down": Half(lost.get((key, False))), "upos": 0,
                              "dpos": 0, "mark": 0, "queue": collections.deque(), "closed": False,
                              "readonly": None if not flags & 0x02 else False, "prev": None,
                              "mid": not flags & 0x02, "ack_up": None, "ack_down": None,
                              "unsure": None, "lost": False}
            if c["mid"] and midstream is not None:
                midstream[key[0]] = midstream.get(key[0], 0) + 1
        if flags & 0x05:
            c["closed"] = True
        if flags & 0x10:
            k = "ack_up" if to_server else "ack_down"
            if c[k] is None or sdiff(ack, c[k]) > 0:
                c[k] = ack
        half = c["up"] if to_server else c["down"]
        if to_server and c["up_holes"] and c["up_lost"] is None and (data or flags & 0x02):
            # the first client byte no packet of the capture carries
            start = (seq + 1) & M32 if flags & 0x02 else (half.next_seq if half.next_seq is not None else seq)
            ahead = [h for h in c["up_holes"] if sdiff(h, start) >= 0]
            if ahead:
                c["up_lost"] = min(ahead, key=lambda h: sdiff(h, start))
        fresh = half.next_seq is None and not to_server
        if not half.add(seq, data, bool(flags & 0x02)):
            continue
        if to_server:
            if c["mid"] and half.buf[c["upos"]:c["upos"] + 1] != b"*":
                c["upos"] = len(half.buf)   # the rest of a request sent before the capture
                continue
            c["mid"] = False
            requests(c, half, ts, key, out, stats)
        else:
            if c["mid"]:
                c["dpos"] = len(half.buf)   # replies to requests sent before the capture
                c["mark"] = len(half.marks)
                continue
            if c["lost"]:
                continue
            if fresh and c["queue"] and c["queue"][0]["ackc"] is not None:
                # the server's first bytes here: those from what the client had
                # acknowledged when it sent its first request on were sent too
                server_hole(c, sdiff(seq, c["queue"][0]["ackc"]), seq, None, stats)
            dreply(c, half, ts, key, orphans, stats)
    for c in conns.values():
        finish(c, stats)
    return out


def finish(c, stats):
    """The connection's end: what stays unsure becomes unknown."""
    if c["unsure"] is not None:
        give_up(c, stats)
    if c["hyp"] is not None:
        hyp_end(c, stats)


def requests(c, half, ts, key, out, stats):
    """Parse the client's new bytes into requests. At a hole (a mark of
    half), the request it cuts is carried across by its declared lengths
    when it can be (carry_request: one lost request, a placeholder in the
    queue); else the requests from the last certain boundary to the first
    certain one after the hole (find_resume) are lost, their number a range
    (lost_requests)."""
    while True:
        while c["umark"] < len(half.marks) and half.marks[c["umark"]][0] < c["upos"]:
            c["umark"] += 1
        if c["search"] is not None:
            se, mark = c["search"]
            r = find_resume(half, mark, True)
            if r is None:
                return
            if r is False:     # never on this connection so far: cannot be False with wait
                return
            p, m = r
            c["search"] = None
            lost_requests(c, half, se, p, stats)
            replay_early(c, stats)
            c["upos"] = p
            continue
        nxt = half.marks[c["umark"]][0] if c["umark"] < len(half.marks) else None
        cross = False
        if nxt is not None and c["upos"] == nxt:
            # the hole starts at a request boundary: what it holds is unknown
            c["search"] = ((half.seq_at(nxt - 1) + 1) & M32 if nxt > 0 else half.marks[c["umark"]][1],
                           c["umark"])
            c["umark"] += 1
            continue
        try:
            argv, pos = resp_request(half.buf, c["upos"])
            cross = nxt is not None and pos > nxt
        except Incomplete:
            if nxt is None:
                return
            cross = True
        except ValueError:
            if nxt is None:
                raise
            cross = True
        if cross:
            se = half.seq_at(c["upos"])
            r = carry_request(half, c["upos"])
            if r[0] == "wait":
                return
            if r[0] == "end":
                placeholder(c, r[2], stats)
                replay_early(c, stats)
                c["upos"] = r[1]
                continue
            if r[0] == "end_lost":
                placeholder(c, r[1], stats)
                se = r[1]
            c["search"] = (se, c["umark"])
            c["umark"] += 1
            continue
        c["upos"] = pos
        if not argv:
            continue
        name = argv[0].upper()
        cmd = {"t": ts, "t_reply": None, "client": key[0], "conn": c["id"],
               "node": key[3], "cport": key[1], "argv": argv, "name": name, "reply": None,
               "prev": c["prev"], "readonly": c["readonly"], "seq": len(out),
               "end": end_seq(half, c["upos"]),
               "ackc": c["ack_up"], "unknown": False}
        if name == b"READONLY":
            c["readonly"] = True
        elif name == b"READWRITE":
            c["readonly"] = False
        c["prev"] = cmd
        if c["lost"]:
            unknown_reply(cmd, stats)
        else:
            c["queue"].append(cmd)
        out.append(cmd)


def replay_early(c, stats):
    """The replies that came while the client's stream waited at a hole,
    now that the queue holds what the hole lost."""
    early, c["early"] = c["early"], []
    for v, ts, start, ack in early:
        q = c["queue"]
        if c["lost"] or not q:
            return
        if q[0].get("block"):
            hyp_reply(c, v, ts, start, stats, ack)
        else:
            pair(q.popleft(), v, ts)


def placeholder(c, end, stats):
    """A request the capture has only in part, whose end is exact: it takes
    its reply like any other, but is no command of the output."""
    stats["carried"] = stats.get("carried", 0) + 1
    if c["lost"]:
        return
    c["prev"] = None
    c["queue"].append({"placeholder": True, "end": end, "ackc": c["ack_up"], "name": b"",
                       "argv": [], "t_reply": None, "reply": None, "unknown": False})


def dreply(c, half, ts, key, orphans, stats):
    """Parse the server's new bytes into replies, across its holes."""
    while True:
        nxt = None
        while c["mark"] < len(half.marks) and half.marks[c["mark"]][0] <= c["dpos"]:
            if half.marks[c["mark"]][0] == c["dpos"] and c["mark"] > 0:
                mk = half.marks[c["mark"]]
                prev_end = half.seq_at(mk[0] - 1) if mk[0] > 0 else mk[1]
                server_hole(c, sdiff(mk[1], (prev_end + 1) & M32), mk[1], None, stats)
                if c["lost"]:
                    return
            c["mark"] += 1
        if c["mark"] < len(half.marks):
            nxt = half.marks[c["mark"]][0]
        try:
            v, pos = resp_value(half.buf, c["dpos"])
            if nxt is not None and pos > nxt:
                raise ValueError("across a hole")
        except Incomplete:
            if nxt is None:
                return
            v = None
        except ValueError:
            if nxt is None:
                # bytes after a hole that are no reply's start: give up here
                c["lost"] = True
                while c["queue"]:
                    unknown_reply(c["queue"].popleft(), stats)
                c["unsure"] = None
                return
            v = None
        if v is None:
            # a reply cut by the hole at nxt
            mk = half.marks[c["mark"]]
            prev_end = half.seq_at(mk[0] - 1)
            cut = half.buf[c["dpos"]:c["dpos"] + 1]
            c["dpos"] = nxt
            c["mark"] += 1
            server_hole(c, sdiff(mk[1], (prev_end + 1) & M32), mk[1], cut, stats)
            if c["lost"]:
                return
            continue
        start = half.seq_at(c["dpos"])
        c["dpos"] = pos
        if v[0] == b">":
            continue   # a push
        q = c["queue"]
        if c["unsure"] is not None:
            c["unsure"]["got"].append((v, ts, c["ack_down"]))
            settle(c, stats)
            continue
        if not q and c["up_holes"] and (c["search"] is not None or c["up"].next_seq in c["up_holes"]
                                        or c["umark"] < len(c["up"].marks)):
            # the client's stream waits at a hole: this may answer a lost request
            c["early"].append((v, ts, start, c["ack_down"]))
            continue
        if q and q[0].get("block"):
            hyp_reply(c, v, ts, start, stats)
            if c["lost"]:
                return
            continue
        if q and q[0]["ackc"] is not None and sdiff(q[0]["ackc"], start) > 0:
            continue   # the client had (part of) it before it sent the request: an older reply
        if not q:
            if orphans is not None:
                orphans[key[0]] = orphans.get(key[0], 0) + 1
            continue   # a reply to nothing seen
        pair(q.popleft(), v, ts)


# ---- Cluster facts -----------------------------------------------------
def key_slot(key):
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    crc = 0
    for b in key:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc % 16384


def cmd_slot(cmd):
    if cmd["name"] in KEYLESS or len(cmd["argv"]) < 2:
        return None
    return key_slot(cmd["argv"][1])


def redirect_of(cmd):
    """(kind, slot, target port) of a redirect reply, or None."""
    r = cmd["reply"]
    if not r or r[0] != b"-":
        return None
    words = r[1].split()
    if not words or words[0].decode(errors="replace") not in REDIRECTS:
        return None
    kind = words[0].decode()
    slot = int(words[1]) if kind in ("MOVED", "ASK") and len(words) > 2 else cmd_slot(cmd)
    target = int(words[2].rsplit(b":", 1)[1]) if kind in ("MOVED", "ASK") and len(words) > 2 else None
    return kind, slot, target


class Roles:
    """Which ports are replicas at a time, from the scenario's role snapshots.
    During a failover (failover_begin .. failover_end) the old master counts
    as a replica from the start: it is demoted somewhere in that span, and a
    MOVED from it for its own slots there means it was."""
    def __init__(self, events):
        self.snaps, self.demoted, self.masters, self.failovers = [], [], [], []
        for e in events["events"]:
            if "roles" in e:
                reps = {p for ps in e["roles"]["replicas"].values() for p in ps}
                self.snaps.append((e["ts"], reps))
                self.masters.append((e["ts"], {p: int(m) for m, ps in e["roles"]["replicas"].items()
                                               for p in ps}))
            if e["what"] == "failover_begin":
                self.demoted.append((e["ts"], e["old_master"]))
                self.failovers.append([e["ts"], None])
            if e["what"] == "failover_end" and self.failovers:
                self.failovers[-1][1] = e["ts"]

    def master_of(self, port, t):
        """The master of replica port at t by the snapshots, or None (not a
        replica then, or t inside a failover, when roles are changing)."""
        if any(b <= t and (e is None or t <= e) for b, e in self.failovers):
            return None
        cur = self.masters[0][1] if self.masters else {}
        for ts, m in self.masters:
            if ts <= t:
                cur = m
        return cur.get(port)

    def is_replica(self, port, t):
        cur = self.snaps[0][1] if self.snaps else set()
        for ts, reps in self.snaps:
            if ts <= t:
                cur = reps
        return port in cur or any(ts <= t and p == port for ts, p in self.demoted)


# ---- Judgment ------------------------------------------------------------
def infer_readonly(cmds, roles):
    """A connection picked up mid-stream may have sent READONLY before the
    capture: its state is unknown (None) until the capture proves it. A read
    a replica served proves READONLY was on (a replica serves no read without
    it); a read a replica bounced with MOVED to its own master proves it was
    off (with READONLY it would have served its master's slot). The first
    proof before the connection's first READONLY/READWRITE fixes the state of
    the commands before that one. Returns {client: connections still unknown
    that a replica answered}."""
    by_conn = collections.defaultdict(list)
    for c in cmds:
        by_conn[c["conn"]].append(c)
    unknown = collections.Counter()
    for cs in by_conn.values():
        head = []
        for c in cs:
            if c["readonly"] is not None:
                break
            head.append(c)
        if not head:
            continue
        state, asked_replica = None, False
        for c in head:
            master = roles.master_of(c["node"], c["t"])
            if master is None or c["name"] not in READS or c["reply"] is None:
                continue
            asked_replica = True
            rd = redirect_of(c)
            if c["reply"][0] not in (b"-", b"!"):
                state = True
            elif rd and rd[0] == "MOVED" and rd[2] == master:
                state = False
            if state is not None:
                break
        for c in head:
            c["readonly"] = state
        if state is None and asked_replica:
            unknown[cs[0]["client"]] += 1
    return unknown


def judge(cmds, roles):
    by_client = collections.defaultdict(list)
    for c in cmds:
        by_client[c["client"]].append(c)
    result = {}
    for client, cs in by_client.items():
        result[client] = judge_client(cs, roles)
    return result


def find_retry(cs, i):
    """Index in cs of the retry of cs[i] (same argv, sent after its reply,
    within OP_WINDOW), or None."""
    c = cs[i]
    for j in range(i + 1, len(cs)):
        d = cs[j]
        if d["t"] > c["t_reply"] + OP_WINDOW:
            return None
        if d["argv"] == c["argv"] and d["t"] >= c["t_reply"]:
            return j
    return None


def judge_client(cs, roles):
    kinds = collections.defaultdict(lambda: [0, set(), []])
    redirects = collections.Counter()
    retry_of = {}          # index -> index of the attempt it retries
    unfollowed = []        # MOVED/ASK answers never retried
    for i, c in enumerate(cs):
        rd = redirect_of(c) if c["t_reply"] is not None else None
        if not rd:
            continue
        redirects[rd[0]] += 1
        if rd[0] == "CROSSSLOT":
            add(kinds, "crossslot", rd[1], ev=c)
        if rd[0] not in ("MOVED", "ASK", "TRYAGAIN"):
            continue
        j = find_retry(cs, i)
        if j is None:
            if rd[0] != "TRYAGAIN":
                unfollowed.append(i)
            continue
        retry_of.setdefault(j, i)
        if rd[0] == "ASK" and cs[j]["node"] == rd[2]:
            judge_asking(cs, i, j, kinds, rd[1])
    loops = judge_ops(cs, retry_of, kinds)
    for i in unfollowed:
        if i not in loops:     # a loop's give-up is part of that loop
            add(kinds, "redirect_unfollowed", redirect_of(cs[i])[1], ev=cs[i])
    judge_stale(cs, retry_of, roles, kinds)
    return {"commands": len(cs), "redirects": redirects, "kinds": kinds}


def add(kinds, kind, slot, n=1, ev=None, note=""):
    """Count n occurrences of kind for slot; ev: a command shown as evidence.
    readonly_missing and crossslot findings are about no one slot (slot -1,
    docs/findings.md): their slots are in the evidence only."""
    if kind in PER_CLIENT_KINDS:
        slot = None
    k = kinds[kind]
    k[0] += n
    k[1].add(-1 if slot is None else slot)
    if ev is not None and len(k[2]) < EVIDENCE_MAX:
        k[2].append((ev, note))


def judge_asking(cs, i, j, kinds, slot):
    """The ASK cs[i], retried by cs[j] at the target: was ASKING right before?"""
    r = cs[j]
    if r["prev"] is not None and r["prev"]["name"] == b"ASKING":
        return
    t_ask = cs[i]["t_reply"]
    same = other = False
    for d in cs[i + 1:j]:
        if d["name"] == b"ASKING" and d["t"] >= t_ask and d["node"] == r["node"]:
            if d["conn"] == r["conn"]:
                same = True
            else:
                other = True
    if same:
        add(kinds, "asking_interleaved", slot, ev=r)
    elif other:
        add(kinds, "asking_other_connection", slot, ev=r)
    else:
        add(kinds, "asking_missing", slot, ev=r)


def judge_ops(cs, retry_of, kinds):
    """Walk each operation (first attempt and its retries) for loops and
    storms; returns the indexes of the attempts of looping operations."""
    nxt = {i: j for j, i in retry_of.items()}
    looped = set()
    for start in range(len(cs)):
        if start in retry_of:
            continue
        chain, i = [start], start
        while i in nxt:
            i = nxt[i]
            chain.append(i)
        if len(chain) < 2:
            continue
        same, fast, tries = collections.Counter(), 0, 0
        slot = cmd_slot(cs[start])
        for a, b in zip(chain, chain[1:]):
            if redirect_of(cs[a])[0] == "TRYAGAIN":
                tries += 1
                if cs[b]["t"] - cs[a]["t_reply"] < TRYAGAIN_BACKOFF:
                    fast += 1
            else:
                same[(cs[a]["node"], cs[a]["reply"][1])] += 1
        loop = max_run_moved_ask(cs, chain) > LOOP_MAX or (same and max(same.values()) >= 3)
        if loop:
            add(kinds, "redirect_loop", slot, ev=cs[chain[0]],
                note="%d attempts, %d MOVED/ASK, the last answered %s" % (
                    len(chain), sum(same.values()), short_reply(cs[chain[-1]])))
            looped.update(chain)
        if fast >= TRYAGAIN_MIN or tries > TRYAGAIN_MAX:
            add(kinds, "tryagain_storm", slot, ev=cs[chain[0]],
                note="%d TRYAGAIN retries, %d sooner than %.0f ms" % (tries, fast, TRYAGAIN_BACKOFF * 1e3))
    return looped


def max_run_moved_ask(cs, chain):
    best = run = 0
    for a in chain[:-1]:
        rd = redirect_of(cs[a])
        run = 0 if rd[0] == "TRYAGAIN" else run + 1
        best = max(best, run)
    return best


def judge_stale(cs, retry_of, roles, kinds):
    """ask_cached, moved_ignored and readonly_missing over independent commands."""
    asked = {}      # slot -> set of ASK targets learned
    moved_from = {} # slot -> nodes that answered MOVED for it (not for want of READONLY)
    ask_cached = collections.Counter()
    ignored = collections.Counter()
    first_ev = {}
    for i, c in enumerate(cs):
        if c["t_reply"] is None:
            continue
        rd = redirect_of(c)
        slot = cmd_slot(c)
        independent = i not in retry_of
        asking = c["prev"] is not None and c["prev"]["name"] == b"ASKING"
        if rd and rd[0] == "MOVED":
            replica = roles.is_replica(c["node"], c["t"])
            if replica and c["readonly"] is False and c["name"] in READS:
                add(kinds, "readonly_missing", rd[1], ev=c)
            elif independent and not asking and rd[1] in asked and c["node"] in asked[rd[1]]:
                ask_cached[rd[1]] += 1
                first_ev.setdefault(("ask_cached", rd[1]), c)
            elif independent and c["node"] in moved_from.get(rd[1], ()):
                ignored[rd[1]] += 1
                first_ev.setdefault(("moved_ignored", rd[1]), c)
            if not replica or c["readonly"] or c["name"] not in READS:
                moved_from.setdefault(rd[1], set()).add(c["node"])
        if rd and rd[0] == "MOVED" and rd[1] in asked:
            asked[rd[1]].discard(rd[2])   # told that rd[2] owns the slot: no longer an ASK target
        if rd and rd[0] == "ASK":
            asked.setdefault(rd[1], set()).add(rd[2])
            # an ASK that points back at a node ends what its MOVED taught
            moved_from.get(rd[1], set()).discard(rd[2])
        if slot is not None and rd is None and c["node"] in moved_from.get(slot, ()):
            moved_from[slot].discard(c["node"])   # the node serves it again
    for slot, n in ask_cached.items():
        if n >= ASK_CACHED_MIN:
            add(kinds, "ask_cached", slot, n, ev=first_ev[("ask_cached", slot)])
    for slot, n in ignored.items():
        if n >= MOVED_IGNORED_MIN:
            add(kinds, "moved_ignored", slot, n, ev=first_ev[("moved_ignored", slot)])


# ---- tshark cross-check ------------------------------------------------
def tshark_counts(path, node_ports):
    """Requests and redirect errors per client, by tshark's RESP dissector."""
    lo, hi = min(node_ports), max(node_ports)
    r = subprocess.run(["tshark", "-r", path, "-d", "tcp.port==%d-%d,resp" % (lo, hi),
                        "-Y", "resp", "-T", "fields", "-E", "occurrence=a", "-E",
                        "aggregator=|", "-e", "ip.src", "-e", "ip.dst", "-e", "tcp.dstport",
                        "-e", "resp.array.length", "-e", "resp.error"],
                       capture_output=True, text=True, timeout=600)
    cmds, reds = collections.Counter(), collections.Counter()
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if len(f) < 5:
            continue
        if is_node(f[1], int(f[2]), node_ports):
            cmds[f[0]] += len([x for x in f[3].split("|") if x])
        else:
            for e in f[4].split("|"):
                w = e.split(" ")[0]
                if w in REDIRECTS:
                    reds[(f[1], w)] += 1
    return cmds, reds


def short_reply(c):
    r = c["reply"]
    reply = b"-" if r is None else (r[0] + (r[1] if isinstance(r[1], bytes) else b"[...]"))
    return reply[:60].decode(errors="replace")


def describe(c):
    """A command as evidence: time, connection (client port), node, argv, reply."""
    argv = b" ".join(c["argv"])[:80]
    return "%.6f %s:%d -> 127.0.0.1:%d %s => %s%s" % (
        c["t"], c["client"], c["cport"], c["node"], argv.decode(errors="replace"),
        short_reply(c),
        " (after ASKING)" if c["prev"] is not None and c["prev"]["name"] == b"ASKING" else "")


def longest_migration(events):
    """The longest of the scenario's migration phases (reshard, hand
    migration, rebalance), in seconds, from the driver's own times."""
    begin, longest = {}, 0.0
    for e in events["events"]:
        w = e["what"]
        if w.endswith("_begin"):
            begin[w[:-6]] = e["ts"]
        elif w.endswith("_end") and w[:-4] in begin and w[:-4] != "failover":
            longest = max(longest, e["ts"] - begin[w[:-4]])
    return longest


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        raise SystemExit("usage: truth.py CAPTURE EVENTS.json [--tshark]")
    events = json.load(open(args[1]))
    base = events["base"]
    node_ports = set(range(base, base + 20))
    midstream, orphans = {}, {}
    roles = Roles(events)
    cmds = commands(args[0], node_ports, midstream, orphans)
    unanswered = collections.Counter(c["client"] for c in cmds
                                     if c["reply"] is None and not c["unknown"])
    unsure = collections.Counter(c["client"] for c in cmds if c["unknown"])
    unknown = infer_readonly(cmds, roles)
    res = judge(cmds, roles)
    names = {}
    for e in events["events"]:
        if e["what"] == "libraries_started":
            names = {a: n for n, a in e["libs"].items()}
    print("# written by scripts/libs/truth.py from the capture alone; do not edit")
    print("# thresholds: op_window %.0f s, loop > %d, moved_ignored >= %d, ask_cached >= %d,"
          " tryagain_storm >= %d retries < %.0f ms or > %d" % (OP_WINDOW, LOOP_MAX,
          MOVED_IGNORED_MIN, ASK_CACHED_MIN, TRYAGAIN_MIN, TRYAGAIN_BACKOFF * 1e3, TRYAGAIN_MAX))
    longest = longest_migration(events)
    print("# the scenario's longest migration phase took %.1f s (migration_stuck: > %.0f s)"
          % (longest, MIGRATION_STUCK_S))
    print("cluster_findings\t%d" % (0 if longest <= MIGRATION_STUCK_S else 1))
    tc = tr = None
    if "--tshark" in sys.argv:
        tc, tr = tshark_counts(args[0], node_ports)
    for client in sorted(res):
        r = res[client]
        print("client\t%s\t%s" % (client, names.get(client, "-")))
        if midstream.get(client):
            print("# %s: %d connection(s) picked up mid-stream (no SYN seen), %d of them to a replica"
                  " with READONLY unknown (no read served or bounced to its master)"
                  % (client, midstream[client], unknown.get(client, 0)))
            print("midstream\t%s\t%d" % (client, midstream[client]))
            print("unanswered\t%s\t%d" % (client, unanswered.get(client, 0)))
            print("orphan_replies\t%s\t%d" % (client, orphans.get(client, 0)))
        if unsure.get(client):
            print("# %s: %d request(s) with the reply unknown (server bytes lost in the capture,"
                  " the ACKs do not tell which requests they answered)" % (client, unsure[client]))
        print("commands\t%s\t%d" % (client, r["commands"]))
        for k in REDIRECTS:
            print("redirects\t%s\t%s\t%d" % (client, k, r["redirects"].get(k, 0)))
        for k in sorted(r["kinds"]):
            n, slots, evs = r["kinds"][k]
            print("kind\t%s\t%s\t%d\t%s" % (client, k, n, ",".join(map(str, sorted(slots)))))
            for e, note in evs:
                print("# evidence %s: %s%s" % (k, describe(e), " [%s]" % note if note else ""))
        if not r["kinds"]:
            print("clean\t%s" % client)
        if tc is not None:
            print("tshark_commands\t%s\t%d" % (client, tc.get(client, 0)))
            for k in REDIRECTS:
                print("tshark_redirects\t%s\t%s\t%d" % (client, k, tr.get((client, k), 0)))


if __name__ == "__main__":
    main()
