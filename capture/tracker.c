/*
 * tracker.c - from decoded segments to connection events.
 *
 * For each TCP segment: find or create its connection, decide which side is
 * the server, feed the payload to that direction's reassembly, and follow the
 * lifecycle (RFC 9293 section 3.5/3.6): SYN opens, FIN from both sides closes,
 * RST closes at once, a new SYN on a closed tuple is a new connection. Time is
 * capture time: idle connections are closed when a later packet shows that the
 * idle timeout passed, by looking at the head of a list kept in activity order.
 *
 * Which side is the server, in order of trust: the handshake (the SYN's sender
 * is the client), a configured server port, an endpoint an earlier handshake
 * showed to serve, an endpoint downstream proved to serve earlier (named in a
 * CLUSTER reply, a MOVED/ASK target, a replica's master: servers.c), the
 * caller's shape hook on the first payload bytes, the lower port. Only one
 * side may be known to serve; when both are, the next rule decides.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"

/* How long a closed connection keeps absorbing late packets, at most (TCP's
 * TIME-WAIT lasts 2 MSL; Linux uses 60 s). */
#define LINGER_MAX_US (60 * 1000000LL)

/* The built-in server ports: Redis and its usual cluster layouts (6379-6399,
 * the 7000-7010 tutorial cluster and its bus ports, Sentinel, the
 * create-cluster script's 30000 range). */
static const uint16_t builtin_ranges[][2] = {
    {6379, 6399}, {7000, 7010}, {16379, 16379}, {17000, 17010}, {26379, 26379}, {30000, 30999},
};

/* Fill cfg with the defaults. */
void cap_config_defaults(cap_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_connections = 262144;
    cfg->idle_timeout_us = 300 * 1000000LL;
    cfg->ooo_bytes_per_conn = 1u << 20;
    cfg->ooo_bytes_total = 256u << 20;
    cfg->shape = NULL;
}

/* Mark one port as a server port in the bitmap. */
static void set_server_port(cap_tracker *t, uint16_t port)
{
    t->server_port[port >> 3] |= (uint8_t)(1u << (port & 7));
}

/* 1 when port is a server port. */
static int is_server_port(const cap_tracker *t, uint16_t port)
{
    return (t->server_port[port >> 3] >> (port & 7)) & 1;
}

/* Fill the server port bitmap from the config (or the built-in list). */
static void load_server_ports(cap_tracker *t)
{
    size_t n = t->cfg.n_server_ports;
    if (n > sizeof t->cfg.server_ports / sizeof t->cfg.server_ports[0])
        n = sizeof t->cfg.server_ports / sizeof t->cfg.server_ports[0];
    for (size_t i = 0; i < n; i++)
        set_server_port(t, t->cfg.server_ports[i]);
    if (n > 0)
        return;
    for (size_t r = 0; r < sizeof builtin_ranges / sizeof builtin_ranges[0]; r++)
        for (uint32_t p = builtin_ranges[r][0]; p <= builtin_ranges[r][1]; p++)
            set_server_port(t, (uint16_t)p);
}

/* Create a tracker. NULL on out of memory or a zero connection cap. */
cap_tracker *cap_tracker_new(const cap_config *cfg, cap_event_fn fn, void *ctx)
{
    unsigned parts;
    cap_tracker *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    if (cfg != NULL)
        t->cfg = *cfg;
    else
        cap_config_defaults(&t->cfg);
    t->fn = fn;
    t->ctx = ctx;
    /* the partitions fed: each gets its share of the caps (capture.h) */
    parts = t->cfg.partitions ? (unsigned)__builtin_popcountll(t->cfg.partitions)
                              : CAP_PARTITIONS;
    if (t->cfg.max_connections == 0 ||
        cap_flows_init(&t->flows, (uint32_t)cap_partition_share(t->cfg.max_connections),
                       parts) != 0) {
        free(t);
        return NULL;
    }
    t->ooo_part_cap = cap_partition_share(t->cfg.ooo_bytes_total);
    cap_pool_init(&t->pool, (size_t)(t->ooo_part_cap * parts));
    t->linger_us = LINGER_MAX_US;
    if (t->cfg.idle_timeout_us > 0 && t->cfg.idle_timeout_us < LINGER_MAX_US)
        t->linger_us = t->cfg.idle_timeout_us;
    t->expire_at = INT64_MAX;
    t->servers = t->cfg.servers;
    if (t->servers == NULL) {
        t->own_servers = t->servers = cap_servers_new();
        if (t->servers == NULL) {
            cap_pool_destroy(&t->pool);
            cap_flows_destroy(&t->flows);
            free(t);
            return NULL;
        }
    }
    /* the window as two bounds that are always there (cap_config: 0 is none) */
    t->win_lo = t->cfg.since_us ? t->cfg.since_us : INT64_MIN;
    t->win_hi = t->cfg.until_us ? t->cfg.until_us : INT64_MAX;
    load_server_ports(t);
    return t;
}

/* Give back the held bytes of every flow on list l (no events). */
static void clear_list(cap_tracker *t, const cap_lru *l)
{
    for (cap_flow *f = cap_flows_at(&t->flows, l->head); f != NULL; f = cap_flows_next(&t->flows, f)) {
        cap_reasm_clear(t, f, 0);
        cap_reasm_clear(t, f, 1);
    }
}

/* Free the tracker without events. */
void cap_tracker_free(cap_tracker *t)
{
    if (t == NULL)
        return;
    clear_list(t, &t->flows.live);
    clear_list(t, &t->flows.closed);
    cap_pool_destroy(&t->pool);
    cap_flows_destroy(&t->flows);
    cap_servers_free(t->own_servers);
    free(t);
}

/* Hand one event to downstream. */
static void emit(cap_tracker *t, cap_ev_kind kind, cap_flow *f, int side, int64_t ts_us)
{
    cap_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.conn = &f->pub;
    ev.dir = side >= 0 ? cap_dir_of(f, side) : CAP_TO_SERVER;
    ev.ts_us = ts_us;
    ev.frame = ev.index = t->index;
    if (t->fn != NULL)
        t->fn(t->ctx, &ev);
}

/* Send OPEN once the server side is known: fill in client/server and move
 * the packets counted so far to their directions. */
static void open_flow(cap_tracker *t, cap_flow *f, int64_t ts_us)
{
    f->opened = 1;
    if (!f->pub.saw_syn && f->pub.side_source < CAP_SIDE_SOURCES)
        t->stats.mid_oriented[f->pub.side_source]++;
    f->pub.server = f->ep[f->server];
    f->pub.client = f->ep[1 - f->server];
    for (int side = 0; side < 2; side++)
        f->pub.packets[cap_dir_of(f, side)] += f->early_packets[side];
    emit(t, CAP_EV_OPEN, f, -1, ts_us);
}

/* Decide the server from ports alone: 0 or 1 (an ep index), -1 if the ports
 * do not tell. */
static int server_by_port(const cap_tracker *t, const cap_flow *f)
{
    int p0 = is_server_port(t, f->ep[0].port), p1 = is_server_port(t, f->ep[1].port);
    if (p0 != p1)
        return p0 ? 0 : 1;
    return -1;
}

/* Decide the server from what earlier records showed (known servers): 0 or
 * 1 (an ep index), -1 when neither or both sides are known. */
static int server_by_known(const cap_tracker *t, const cap_flow *f)
{
    int k0 = cap_servers_known(t->servers, &f->ep[0], t->index);
    int k1 = cap_servers_known(t->servers, &f->ep[1], t->index);
    if (k0 != k1)
        return k0 ? 0 : 1;
    return -1;
}

/* The side source of each proof downstream makes (cap_proof), in the order
 * they are trusted when a side has several. */
static const struct {
    cap_proof proof;
    cap_side_source source;
} proven_by[] = {
    {CAP_PROOF_CLUSTER, CAP_SIDE_CLUSTER},
    {CAP_PROOF_REPLICATION, CAP_SIDE_REPLICATION},
    {CAP_PROOF_REDIRECT, CAP_SIDE_REDIRECT},
};

/* Decide the server from what downstream proved before this record (after
 * waiting for it, see cap_config.await_proofs): 1 when exactly one side was
 * proved to serve (f->server and the side source are set), else 0. */
static int decide_by_proof(cap_tracker *t, cap_flow *f)
{
    unsigned k[2];
    int side;
    if (t->cfg.await_proofs != NULL)
        t->cfg.await_proofs(t->cfg.await_ctx, t->index);
    k[0] = cap_servers_proofs(t->servers, &f->ep[0], t->index);
    k[1] = cap_servers_proofs(t->servers, &f->ep[1], t->index);
    if ((k[0] != 0) == (k[1] != 0))
        return 0;
    side = k[0] ? 0 : 1;
    f->server = (uint8_t)side;
    f->side_known = 1;
    for (size_t i = 0; i < sizeof proven_by / sizeof proven_by[0]; i++)
        if (k[side] & (1u << proven_by[i].proof)) {
            f->pub.side_source = proven_by[i].source;
            return 1;
        }
    f->pub.side_source = CAP_SIDE_KNOWN; /* a handshake (not reached: known) */
    return 1;
}

/* Last resort: the lower port is the server (ties: the receiver of the first
 * packet, ep[1]). */
static void decide_by_guess(cap_flow *f)
{
    f->server = f->ep[0].port < f->ep[1].port ? 0 : 1;
    f->pub.side_source = CAP_SIDE_GUESS;
    f->side_known = 1;
}

/* Decide with the shape hook on the first payload bytes sent by side. */
static void decide_by_shape(cap_tracker *t, cap_flow *f, int side, const uint8_t *data, uint32_t len)
{
    int shape = len > 0 ? t->cfg.shape(data, len) : 0;
    if (shape == 0) {
        decide_by_guess(f);
        return;
    }
    /* A request comes from the client: the other side serves. */
    f->server = (uint8_t)(shape > 0 ? 1 - side : side);
    f->pub.side_source = CAP_SIDE_SHAPE;
    f->side_known = 1;
}

/* Make sure OPEN was sent (closing a connection that never showed payload). */
static void ensure_open(cap_tracker *t, cap_flow *f, int64_t ts_us)
{
    if (!f->side_known)
        decide_by_guess(f);
    if (!f->opened)
        open_flow(t, f, ts_us);
}

/* DATA: bytes in order from ep[side]. */
void cap_emit_data(cap_tracker *t, cap_flow *f, int side, int64_t ts_us, uint64_t frame,
                   const uint8_t *data, size_t len)
{
    cap_event ev;
    cap_dir dir;
    ensure_open(t, f, ts_us);
    dir = cap_dir_of(f, side);
    f->pub.bytes[dir] += len;
    t->stats.stream_bytes[dir] += len;
    memset(&ev, 0, sizeof ev);
    ev.kind = CAP_EV_DATA;
    ev.conn = &f->pub;
    ev.dir = dir;
    ev.ts_us = ts_us;
    ev.frame = frame;
    ev.index = t->index;
    ev.data = data;
    ev.len = len;
    /* How far the sender's highest ACK is ahead of (or behind) the peer's
     * stream delivered so far: the receiver of these bytes' peer had
     * received that much when it sent them (at the latest) */
    const cap_stream *peer = &f->st[1 - side];
    if (f->st[side].ack_valid && peer->started) {
        int32_t ahead = (int32_t)(f->st[side].ack_sent - peer->next);
        if (ahead > -(int32_t)CAP_WINDOW_MAX && ahead < (int32_t)CAP_WINDOW_MAX) {
            ev.has_ack = 1;
            ev.ack_ahead = ahead;
        }
    }
    if (t->fn != NULL)
        t->fn(t->ctx, &ev);
}

/* GAP: len bytes from ep[side] that will never be seen. */
void cap_emit_gap(cap_tracker *t, cap_flow *f, int side, int64_t ts_us, uint64_t frame,
                  uint64_t len)
{
    cap_event ev;
    cap_dir dir;
    ensure_open(t, f, ts_us);
    dir = cap_dir_of(f, side);
    const cap_stream *st = &f->st[side];
    int start_hole = st->from_ack && f->pub.bytes[dir] == 0 && f->pub.gaps[dir] == 0;
    /* it starts at pre_ack; the peer had received all of it before sending
     * anything the capture shows when its first payload acknowledged its end */
    int before_peer = start_hole && st->peer_data_ack_valid &&
                      SEQ_GEQ(st->peer_data_ack, st->pre_ack + (uint32_t)len);
    t->stats.start_gaps += (uint64_t)start_hole; /* the hole start_streams made */
    f->pub.gaps[dir]++;
    f->pub.gap_bytes[dir] += len;
    t->stats.gaps++;
    t->stats.gap_bytes += len;
    memset(&ev, 0, sizeof ev);
    ev.kind = CAP_EV_GAP;
    ev.conn = &f->pub;
    ev.dir = dir;
    ev.ts_us = ts_us;
    ev.frame = frame;
    ev.index = t->index;
    ev.gap_len = len;
    ev.before_peer = (uint8_t)before_peer;
    if (t->fn != NULL)
        t->fn(t->ctx, &ev);
}

/* a + b, saturating at INT64_MAX (b >= 0). */
static int64_t add_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Lower the expiry deadline for a flow last active at last_us on the live
 * (closed == 0) or closed list. */
static void note_deadline(cap_tracker *t, int64_t last_us, int closed)
{
    int64_t timeout = closed ? t->linger_us : t->cfg.idle_timeout_us;
    int64_t at;
    if (timeout <= 0)
        return;
    at = add_sat(last_us, timeout);
    if (at < t->expire_at)
        t->expire_at = at;
}

/* The earliest capture time at which a list head can expire. Heads only get
 * younger as flows are touched, so a deadline can only be early, never late. */
static void reset_deadline(cap_tracker *t)
{
    cap_flow *live = cap_flows_at(&t->flows, t->flows.live.head);
    cap_flow *closed = cap_flows_at(&t->flows, t->flows.closed.head);
    t->expire_at = INT64_MAX;
    if (live != NULL)
        note_deadline(t, live->pub.last_us, 0);
    if (closed != NULL)
        note_deadline(t, closed->pub.last_us, 1);
}

/* End a live connection: deliver what is held (holes become gaps), send
 * CLOSE, then keep it on the closed list to absorb late packets, or free it
 * (keep == 0) when its slot is needed. */
static void close_flow(cap_tracker *t, cap_flow *f, cap_close_reason reason,
                       int64_t ts_us, int keep)
{
    cap_event ev;
    ensure_open(t, f, ts_us);
    /* Requests first, then replies. */
    cap_reasm_flush(t, f, f->server == 1 ? 0 : 1, ts_us);
    cap_reasm_flush(t, f, f->server, ts_us);
    cap_reasm_clear(t, f, 0);
    cap_reasm_clear(t, f, 1);
    if (reason == CAP_CLOSE_IDLE)
        t->stats.idle_connections++;
    else if (reason == CAP_CLOSE_EVICTED)
        t->stats.evicted_connections++;
    memset(&ev, 0, sizeof ev);
    ev.kind = CAP_EV_CLOSE;
    ev.conn = &f->pub;
    ev.ts_us = ts_us;
    ev.frame = ev.index = t->index;
    ev.reason = reason;
    if (t->fn != NULL)
        t->fn(t->ctx, &ev);
    f->pub.user = NULL;
    if (keep) {
        cap_flows_mark_closed(&t->flows, f);
        note_deadline(t, f->pub.last_us, 1);
    } else {
        cap_flows_release(&t->flows, f);
    }
}

/* Close the connections idle for the timeout and forget closed ones that
 * lingered long enough. Both lists are in activity order: only heads. */
static void expire(cap_tracker *t)
{
    cap_flow *f;
    while ((f = cap_flows_at(&t->flows, t->flows.closed.head)) != NULL &&
           t->now_us - f->pub.last_us >= t->linger_us)
        cap_flows_release(&t->flows, f);
    while (t->cfg.idle_timeout_us > 0 &&
           (f = cap_flows_at(&t->flows, t->flows.live.head)) != NULL &&
           t->now_us - f->pub.last_us >= t->cfg.idle_timeout_us) {
        /* One side said FIN and the other went quiet: still a FIN close. */
        int fin = f->st[0].fin || f->st[1].fin;
        close_flow(t, f, fin ? CAP_CLOSE_FIN : CAP_CLOSE_IDLE, t->now_us, 1);
    }
    reset_deadline(t);
}

/* Free a slot in partition part (the table's own lists: any partition):
 * forget its oldest closed flow, or evict its least recently active live
 * one. */
static void make_room(cap_tracker *t, const cap_lru *closed, const cap_lru *live,
                      int64_t ts_us)
{
    cap_flow *f = cap_flows_at(&t->flows, closed->head);
    if (f != NULL) {
        cap_flows_release(&t->flows, f);
        return;
    }
    f = cap_flows_at(&t->flows, live->head);
    if (f != NULL)
        close_flow(t, f, CAP_CLOSE_EVICTED, ts_us, 0);
}

/* Create the connection of a segment that matches none. ep[0] is its sender.
 * The server is decided now unless only the shape hook can tell, which needs
 * payload. */
static cap_flow *new_flow(cap_tracker *t, const cap_pkt *p, uint32_t hash, int64_t ts_us)
{
    unsigned part = cap_partition_of(hash);
    cap_flow *f;
    int by_port;
    if (cap_flows_part_used(&t->flows, part) >= t->flows.part_cap)
        make_room(t, &t->flows.part_closed[part], &t->flows.part_live[part], ts_us);
    f = cap_flows_take(&t->flows, &p->src, &p->dst, hash);
    if (f == NULL) { /* a partition this table was not sized for */
        make_room(t, &t->flows.closed, &t->flows.live, ts_us);
        f = cap_flows_take(&t->flows, &p->src, &p->dst, hash);
        if (f == NULL)
            return NULL;
    }
    f->pub.id = t->index;
    f->pub.first_us = f->pub.last_us = ts_us;
    note_deadline(t, ts_us, 0);
    t->stats.connections++;
    if (p->flags & TCP_SYN) {
        /* SYN: the sender is the client; SYN-ACK: the sender is the server. */
        f->server = (p->flags & TCP_ACK) ? 0 : 1;
        f->pub.saw_syn = 1;
        f->pub.side_source = CAP_SIDE_SYN;
        f->side_known = 1;
    } else {
        t->stats.mid_stream++;
        by_port = server_by_port(t, f);
        if (by_port >= 0) {
            f->server = (uint8_t)by_port;
            f->pub.side_source = CAP_SIDE_PORT;
            f->side_known = 1;
        } else if ((by_port = server_by_known(t, f)) >= 0) {
            f->server = (uint8_t)by_port;
            f->pub.side_source = CAP_SIDE_KNOWN;
            f->side_known = 1;
        } else if (!decide_by_proof(t, f) && t->cfg.shape == NULL) {
            decide_by_guess(f);
        }
    }
    if (f->side_known)
        open_flow(t, f, ts_us);
    return f;
}

/* 1 when a SYN from side starts a new connection on this live tuple rather
 * than being the handshake of (or a retransmitted SYN on) the current one. */
static int is_new_handshake(const cap_flow *f, int side, const cap_pkt *p)
{
    const cap_stream *st = &f->st[side];
    if (!(p->flags & TCP_SYN) || (p->flags & TCP_RST) || !st->started)
        return 0;
    return !(st->syn && st->isn == p->seq);
}

/* Start the streams from a segment's SYN or, without one, its sequence
 * number. Returns the sequence number of the first payload byte. */
static uint32_t start_streams(cap_tracker *t, cap_flow *f, int side, const cap_pkt *p)
{
    cap_stream *st = &f->st[side];
    cap_stream *peer = &f->st[1 - side];
    if (!(p->flags & TCP_SYN)) {
        if (!st->started && st->pre_ack_valid && SEQ_LT(st->pre_ack, p->seq) &&
            p->seq - st->pre_ack <= CAP_START_HOLE_MAX) {
            /* The peer had acknowledged less than this segment's start when
             * it first showed up: the bytes between were sent and never
             * seen (lost, or in flight when the capture began). The stream
             * starts at that ACK, so that they are a hole, given up as a
             * GAP like any other, instead of the stream seeming whole. */
            cap_reasm_start(st, st->pre_ack);
            st->from_ack = 1;
        } else if (!st->started) {
            cap_reasm_start(st, p->seq);
            st->probe_start = p->payload_len + p->payload_missing == 0;
        }
        return p->seq;
    }
    if (!st->started) {
        cap_reasm_start(st, p->seq + 1);
        st->syn = 1;
        st->isn = p->seq;
    } else if (p->payload_len + p->payload_missing == 0) {
        t->stats.retransmitted++; /* the same SYN again */
        f->pub.retransmits[cap_dir_of(f, side)]++;
    }
    /* A SYN-ACK acknowledges the client's SYN: its stream starts there even
     * when the SYN itself was not captured. */
    if ((p->flags & TCP_ACK) && !peer->started) {
        cap_reasm_start(peer, p->ack);
        peer->syn = 1;
        peer->isn = p->ack - 1;
    }
    return p->seq + 1;
}

/* Count a packet of f sent by side. */
static void count_packet(cap_flow *f, int side, int64_t ts_us)
{
    if (f->opened)
        f->pub.packets[cap_dir_of(f, side)]++;
    else
        f->early_packets[side]++;
    if (ts_us > f->pub.last_us)
        f->pub.last_us = ts_us;
}

/* Count a keepalive or zero-window probe from side as a retransmission: it
 * repeats sequence space already seen. */
static void count_probe(cap_tracker *t, cap_flow *f, int side)
{
    t->stats.retransmitted++;
    if (f->side_known)
        f->pub.retransmits[cap_dir_of(f, side)]++;
}

/* The stream of side started on a bare segment (probe_start) and now the
 * sender (its segment's seq) or the peer (its ACK) shows next_seq as the
 * sender's next sequence number. One above where we started: that first
 * segment was a keepalive (seq = next - 1, RFC 9293 section 3.8.4), so the
 * stream really starts one later; without this the byte below would become
 * a 1-byte GAP. Any other evidence settles the start as it is. */
static void settle_probe_start(cap_tracker *t, cap_flow *f, int side, uint32_t next_seq)
{
    cap_stream *st = &f->st[side];
    st->probe_start = 0;
    if (next_seq == st->next + 1 && st->held == NULL && !st->fin) {
        st->next = next_seq;
        count_probe(t, f, side);
    }
}

/* The first payload from side (segment p, its payload at payload_seq).
 * When it is the first byte of side's stream (nothing of it below can be
 * delivered) and the peer's stream has not started, its ACK is what side
 * had received of the peer before sending anything the capture will show:
 * a start hole of the peer's up to there holds nothing sent in answer to
 * it (cap_emit_gap: before_peer). */
static void note_first_payload(cap_flow *f, int side, const cap_pkt *p, uint32_t payload_seq)
{
    cap_stream *st = &f->st[side];
    cap_stream *peer = &f->st[1 - side];
    st->payload_seen = 1;
    if ((p->flags & TCP_ACK) && !(p->flags & (TCP_SYN | TCP_RST)) && !peer->started &&
        !st->syn && !st->from_ack && st->held == NULL && payload_seq == st->next) {
        peer->peer_data_ack = p->ack;
        peer->peer_data_ack_valid = 1;
    }
}

/* Run one segment through its connection. */
static void flow_segment(cap_tracker *t, cap_flow *f, int side, const cap_pkt *p, int64_t ts_us)
{
    cap_stream *st = &f->st[side];
    uint32_t payload_seq = start_streams(t, f, side, p);
    uint32_t wire_len = p->payload_len + p->payload_missing;
    if (!f->side_known && wire_len > 0)
        decide_by_shape(t, f, side, p->payload, p->payload_len);
    if (f->side_known && !f->opened)
        open_flow(t, f, ts_us);
    if ((p->flags & TCP_ACK) && (!st->ack_valid || SEQ_GT(p->ack, st->ack_sent))) {
        st->ack_sent = p->ack; /* carried by this side's DATA (cap_event.ack_ahead) */
        st->ack_valid = 1;
    }
    cap_stream *peer = &f->st[1 - side];
    if ((p->flags & TCP_ACK) && !(p->flags & (TCP_SYN | TCP_RST)) && !peer->started &&
        !peer->pre_ack_valid) {
        peer->pre_ack = p->ack; /* where the peer's stream will start (start_streams) */
        peer->pre_ack_valid = 1;
    }
    if (wire_len > 0 && !st->payload_seen)
        note_first_payload(f, side, p, payload_seq);
    /* An ACK matters only beyond what the peer's stream delivered. */
    if ((p->flags & TCP_ACK) && SEQ_GT(p->ack, f->st[1 - side].next)) {
        if (f->st[1 - side].probe_start)
            settle_probe_start(t, f, 1 - side, p->ack);
        cap_reasm_ack(t, f, 1 - side, p->ack, ts_us);
    }
    if (st->probe_start && payload_seq != st->next)
        settle_probe_start(t, f, side, payload_seq);
    else if (st->probe_start && wire_len > 0)
        st->probe_start = 0;
    if (wire_len == 0 && payload_seq == st->next - 1 &&
        !(p->flags & (TCP_SYN | TCP_FIN | TCP_RST))) {
        /* A keepalive or zero-window probe without payload. */
        count_probe(t, f, side);
    }
    if (payload_seq == st->next && p->payload_missing == 0 && p->payload_len > 0 &&
        st->held == NULL && !st->fin) {
        /* The common case, inline: the next bytes, nothing held, no FIN. */
        st->next += p->payload_len;
        cap_emit_data(t, f, side, ts_us, t->index, p->payload, p->payload_len);
    } else {
        cap_reasm_segment(t, f, side, payload_seq, p->payload, p->payload_len,
                          p->payload_missing, ts_us);
    }
    if (p->flags & TCP_FIN)
        cap_reasm_fin(t, f, side, payload_seq + wire_len, ts_us);
    if (p->flags & TCP_RST)
        close_flow(t, f, CAP_CLOSE_RST, ts_us, 1);
    else if (f->st[0].done && f->st[1].done)
        close_flow(t, f, CAP_CLOSE_FIN, ts_us, 1);
}

/* Find (or create) the connection of a decoded segment and run it. */
static void on_segment(cap_tracker *t, const cap_pkt *p, int64_t ts_us)
{
    uint32_t hash = cap_flows_hash(&p->src, &p->dst);
    int side = 0;
    cap_flow *f = cap_flows_find(&t->flows, &p->src, &p->dst, hash, &side);
    if (f != NULL && f->state == FLOW_CLOSED) {
        if (!(p->flags & TCP_SYN) || (p->flags & TCP_RST)) {
            t->stats.late_packets++; /* the last ACK, a FIN again, ... */
            if (ts_us > f->pub.last_us)
                f->pub.last_us = ts_us;
            cap_flows_touch(&t->flows, f);
            return;
        }
        cap_flows_release(&t->flows, f); /* a new connection on the tuple */
        f = NULL;
    } else if (f != NULL && is_new_handshake(f, side, p)) {
        close_flow(t, f, CAP_CLOSE_REUSED, ts_us, 0);
        f = NULL;
    }
    if (f == NULL) {
        f = new_flow(t, p, hash, ts_us);
        side = 0;
        if (f == NULL)
            return;
    }
    cap_flows_touch(&t->flows, f);
    f->pub.last_record = t->index;
    count_packet(f, side, ts_us);
    flow_segment(t, f, side, p, ts_us);
    if (f->state == FLOW_LIVE && f->opened)
        t->touched = &f->pub;
}

/* Count what a record that is not a TCP segment was. */
static void count_non_tcp(cap_tracker *t, cap_decode_result r)
{
    switch (r) {
    case CAP_DEC_NON_TCP:
        t->stats.non_tcp++;
        break;
    case CAP_DEC_NON_IP:
        t->stats.non_ip++;
        break;
    case CAP_DEC_FRAGMENT:
        t->stats.ip_fragments++;
        break;
    case CAP_DEC_UNSUPPORTED:
        t->stats.unsupported++;
        break;
    case CAP_DEC_TRUNCATED:
        t->stats.truncated++;
        break;
    case CAP_DEC_MALFORMED:
    default:
        t->stats.malformed++;
        break;
    }
}

/* Feed one captured record, numbered after the previous one. */
void cap_tracker_packet(cap_tracker *t, int linktype, int64_t ts_us,
                        const uint8_t *pkt, uint32_t caplen, uint32_t wirelen)
{
    cap_tracker_packet_at(t, t->index + 1, linktype, ts_us, pkt, caplen, wirelen);
}

/* Move the clock to a record's time (unless time went back) and close what
 * went idle by then. The first record starts the clock. */
static void advance_clock(cap_tracker *t, int64_t ts_us)
{
    if (!t->have_time || ts_us >= t->now_us)
        t->now_us = ts_us;
    t->have_time = 1;
    if (t->now_us >= t->expire_at)
        expire(t);
}

/* A record of another tracker's share: only the clock moves. */
void cap_tracker_time(cap_tracker *t, uint64_t index, int64_t ts_us)
{
    t->touched = NULL;
    t->index = index;
    advance_clock(t, ts_us);
}

/* A record outside the window asked for (cap_config.since_us/until_us): the
 * clock moves and the servers its SYN shows are noted, as a caller sharing a
 * servers table notes every record (so --threads N gives the same), nothing
 * else. */
static void outside_window(cap_tracker *t, uint64_t index, int linktype, int64_t ts_us,
                           const uint8_t *pkt, uint32_t caplen, uint32_t wirelen)
{
    cap_pkt p;
    advance_clock(t, ts_us);
    if (t->own_servers != NULL &&
        cap_decode(linktype, pkt, caplen, wirelen, &p) == CAP_DEC_TCP && (p.flags & TCP_SYN))
        cap_servers_note_pkt(t->own_servers, index, &p);
}

/* Feed the record numbered index. */
void cap_tracker_packet_at(cap_tracker *t, uint64_t index, int linktype, int64_t ts_us,
                           const uint8_t *pkt, uint32_t caplen, uint32_t wirelen)
{
    cap_pkt p;
    cap_decode_result r;
    t->touched = NULL;
    t->index = index;
    if (ts_us < t->win_lo || ts_us > t->win_hi) {
        outside_window(t, index, linktype, ts_us, pkt, caplen, wirelen);
        return;
    }
    t->stats.packets++;
    t->stats.wire_bytes += wirelen;
    t->stats.captured_bytes += caplen;
    if (t->have_time && ts_us < t->now_us)
        t->stats.time_backwards++;
    advance_clock(t, ts_us);
    r = cap_decode(linktype, pkt, caplen, wirelen, &p);
    if (r != CAP_DEC_TCP) {
        count_non_tcp(t, r);
        return;
    }
    t->stats.tcp_packets++;
    if (p.payload_missing > 0)
        t->stats.truncated++;
    if (t->own_servers != NULL && (p.flags & TCP_SYN))
        cap_servers_note_pkt(t->own_servers, index, &p);
    on_segment(t, &p, ts_us);
}

/* The symmetric 4-tuple hash of a TCP record, as the flow table computes it. */
int cap_record_flow_hash(const cap_record *rec, uint32_t *hash)
{
    cap_pkt p;
    if (cap_decode(rec->linktype, rec->data, rec->caplen, rec->wirelen, &p) != CAP_DEC_TCP)
        return 0;
    *hash = cap_flows_hash(&p.src, &p.dst);
    return 1;
}

/* The endpoints of a TCP record, as the tracker decodes it. */
int cap_record_endpoints(const cap_record *rec, cap_endpoint *src, cap_endpoint *dst)
{
    cap_pkt p;
    if (cap_decode(rec->linktype, rec->data, rec->caplen, rec->wirelen, &p) != CAP_DEC_TCP)
        return 0;
    *src = p.src;
    *dst = p.dst;
    return 1;
}

/* End of input: close every live connection (holes become gaps) and forget
 * the closed ones. The CLOSE time is ts_us or the latest packet's, whichever
 * is later. */
void cap_tracker_finish(cap_tracker *t, int64_t ts_us)
{
    cap_flow *f;
    t->touched = NULL;
    if (!t->have_time || ts_us > t->now_us)
        t->now_us = ts_us;
    t->have_time = 1;
    while ((f = cap_flows_at(&t->flows, t->flows.live.head)) != NULL)
        close_flow(t, f, CAP_CLOSE_END, t->now_us, 0);
    while ((f = cap_flows_at(&t->flows, t->flows.closed.head)) != NULL)
        cap_flows_release(&t->flows, f);
}

cap_servers *cap_tracker_servers(cap_tracker *t)
{
    return t->servers;
}

/* The counters so far. Its own table of known servers, which downstream
 * notes in too, counts what it did not keep itself. */
const cap_stats *cap_tracker_stats(cap_tracker *t)
{
    if (t->own_servers != NULL)
        t->stats.known_servers_dropped = cap_servers_dropped(t->own_servers);
    return &t->stats;
}

/* The connection the latest record changed, if still open. */
const cap_conn *cap_tracker_touched(const cap_tracker *t)
{
    return t->touched;
}

/* Live connections now. */
size_t cap_tracker_live(const cap_tracker *t)
{
    return t->flows.live.count;
}

void cap_tracker_each_open(cap_tracker *t, void (*fn)(void *ctx, const cap_conn *conn),
                           void *ctx)
{
    for (cap_flow *f = cap_flows_at(&t->flows, t->flows.live.head); f != NULL;
         f = cap_flows_next(&t->flows, f))
        if (f->opened)
            fn(ctx, &f->pub);
}

/* Add drop counts reported by a live source. */
void cap_tracker_add_drops(cap_tracker *t, uint64_t kernel, uint64_t iface)
{
    t->stats.kernel_drops += kernel;
    t->stats.if_drops += iface;
}
