/*
 * reasm.c - TCP stream reassembly, one direction at a time.
 *
 * Each direction has the next sequence number it expects. A segment that
 * starts there is delivered straight from the packet (no copy). A segment
 * ahead of it is copied into the pool and held, sorted, until the hole before
 * it fills. Bytes seen before are dropped: the first copy wins, and an overlap
 * whose bytes differ from a held copy is counted as a conflict. Sequence
 * numbers wrap at 2^32 and are compared with serial number arithmetic
 * (RFC 1982; TCP: RFC 9293 section 3.4).
 *
 * A hole becomes an explicit GAP event, with its exact length, when it can no
 * longer fill:
 *   - the peer acknowledged bytes beyond it (RFC 9293: an ACK covers only
 *     bytes received) and we have seen later bytes of the stream, so the
 *     capture, not the network, lost the segment;
 *   - with acked_gap_us set: the peer has acknowledged it for that long
 *     (capture time) and nothing after it was seen (give_up_unseen_acked);
 *   - holding what comes after it would pass a byte cap;
 *   - the connection closes (FIN, RST, idle, eviction, end of input).
 * Payload cut by snaplen is a hole known at once: it becomes a GAP when the
 * stream reaches it.
 */
#include <string.h>

#include "capture/internal.h"

/* One segment's payload being placed. Offsets below are within it. */
typedef struct seg {
    uint32_t seq;          /* sequence number of its first byte */
    const uint8_t *data;   /* the captured bytes */
    uint32_t len;          /* how many were captured */
    uint32_t total;        /* len plus the bytes cut by snaplen after them */
    int64_t ts_us;         /* capture time of the packet */
    uint64_t frame;        /* number of its record */
} seg;

/* Outcome of trying to hold a segment. */
enum { HOLD_NEW, HOLD_SEEN, HOLD_FULL };

/* Drop the first n bytes of s (n <= total). */
static void seg_skip(seg *s, uint32_t n)
{
    if (n <= s->len) {
        s->data += n;
        s->len -= n;
    } else {
        s->len = 0;
    }
    s->total -= n;
    s->seq += n;
}

/* Drop the last n bytes of s (n <= total). */
static void seg_cut_tail(seg *s, uint32_t n)
{
    s->total -= n;
    if (s->len > s->total)
        s->len = s->total;
}

/* Mark the stream done when everything up to its FIN was delivered. */
static void check_done(cap_stream *st)
{
    if (st->fin && SEQ_GEQ(st->next, st->fin_seq))
        st->done = 1;
}

/* Start the stream at sequence number seq (no SYN seen). */
void cap_reasm_start(cap_stream *st, uint32_t seq)
{
    st->started = 1;
    st->next = seq;
}

/* Count the bytes that differ between src[0..n) and the held range h from
 * offset off on. */
static uint64_t count_conflicts(const cap_held *h, uint32_t off, const uint8_t *src, uint32_t n)
{
    const cap_chunk *c = h->chunks;
    uint64_t diff = 0;
    while (c != NULL && off >= CAP_CHUNK_BYTES) {
        c = c->next;
        off -= (uint32_t)CAP_CHUNK_BYTES;
    }
    while (c != NULL && n > 0) {
        uint32_t k = (uint32_t)CAP_CHUNK_BYTES - off;
        if (k > n)
            k = n;
        for (uint32_t i = 0; i < k; i++)
            diff += c->data[off + i] != src[i];
        src += k;
        n -= k;
        off = 0;
        c = c->next;
    }
    return diff;
}

/* Compare the captured bytes of s from offset pos on with the held range h
 * they overlap (n bytes from sequence number s->seq + pos), and count the
 * bytes that differ. The held copy is the one that stays. */
static void check_overlap(cap_tracker *t, const seg *s, uint32_t pos, uint32_t n,
                          const cap_held *h)
{
    uint32_t at = s->seq + pos;
    if (h->chunks == NULL || pos >= s->len)
        return;
    if (n > s->len - pos)
        n = s->len - pos;
    t->stats.overlap_conflicts += count_conflicts(h, at - h->seq, s->data + pos, n);
}


/* Charge a held range's cost to its flow and to the flow's partition
 * (ooo_bytes_total is applied per partition: capture.h). */
static void held_charge(cap_tracker *t, cap_flow *f, uint32_t cost)
{
    f->held_cost += cost;
    t->ooo_part_used[f->pub.partition] += cost;
}

/* Give a held range back: its cost, then the range to the pool. */
static void held_release(cap_tracker *t, cap_flow *f, cap_held *h)
{
    f->held_cost -= h->cost;
    t->ooo_part_used[f->pub.partition] -= h->cost;
    cap_pool_release(&t->pool, h);
}
/* Deliver the head held range of the stream (it starts at next; a part
 * before next, which the invariants rule out, would be skipped) and give it
 * back to the pool. A range without chunks was cut by snaplen: a GAP. */
static void deliver_held(cap_tracker *t, cap_flow *f, int side)
{
    cap_stream *st = &f->st[side];
    cap_held *h = st->held;
    uint32_t skip = SEQ_LT(h->seq, st->next) ? st->next - h->seq : 0;
    st->held = h->next;
    if (skip < h->len && h->chunks == NULL) {
        cap_emit_gap(t, f, side, h->ts_us, h->frame, h->len - skip);
    } else if (skip < h->len) {
        uint32_t left = h->len;
        for (const cap_chunk *c = h->chunks; c != NULL && left > 0; c = c->next) {
            uint32_t n = left < CAP_CHUNK_BYTES ? left : (uint32_t)CAP_CHUNK_BYTES;
            if (skip < n)
                cap_emit_data(t, f, side, h->ts_us, h->frame, c->data + skip, n - skip);
            skip = skip < n ? 0 : skip - n;
            left -= n;
        }
    }
    if (SEQ_GT(h->seq + h->len, st->next))
        st->next = h->seq + h->len;
    held_release(t, f, h);
}

/* Deliver the held ranges that now continue the stream. */
static void drain(cap_tracker *t, cap_flow *f, int side)
{
    cap_stream *st = &f->st[side];
    while (st->held != NULL && SEQ_LEQ(st->held->seq, st->next))
        deliver_held(t, f, side);
    check_done(st);
}

/* Give up every hole before target: each becomes a GAP of its exact length,
 * and the held ranges between them are delivered. */
static void flush_until(cap_tracker *t, cap_flow *f, int side, uint32_t target, int64_t ts_us)
{
    cap_stream *st = &f->st[side];
    while (SEQ_LT(st->next, target)) {
        cap_held *h = st->held;
        uint32_t end = target;
        if (h != NULL && SEQ_LEQ(h->seq, st->next)) {
            deliver_held(t, f, side);
            continue;
        }
        if (h != NULL && SEQ_LT(h->seq, end))
            end = h->seq;
        cap_emit_gap(t, f, side, ts_us, t->index, end - st->next);
        st->next = end;
    }
    drain(t, f, side);
}

/* Deliver bytes [from, to) of s, which start at next: the captured part as
 * DATA, the part cut by snaplen as a GAP. */
static void deliver_part(cap_tracker *t, cap_flow *f, int side, const seg *s,
                         uint32_t from, uint32_t to)
{
    uint32_t data_end = to < s->len ? to : s->len;
    if (from < data_end)
        cap_emit_data(t, f, side, s->ts_us, s->frame, s->data + from, data_end - from);
    if (to > data_end && to > from)
        cap_emit_gap(t, f, side, s->ts_us, s->frame, to - (from > data_end ? from : data_end));
    f->st[side].next += to - from;
}

/* Deliver a segment that starts exactly at next. Where a held range overlaps
 * it, the held range (the first copy) is delivered instead. Returns 1 when an
 * overlap was found. */
static int deliver_in_order(cap_tracker *t, cap_flow *f, int side, const seg *s)
{
    cap_stream *st = &f->st[side];
    uint32_t pos = 0;
    int overlap = 0;
    while (pos < s->total) {
        cap_held *h = st->held;
        uint32_t lim = s->total;
        uint32_t k;
        if (h != NULL && h->seq - st->next < lim - pos)
            lim = pos + (h->seq - st->next);
        deliver_part(t, f, side, s, pos, lim);
        pos = lim;
        if (pos >= s->total)
            break;
        /* The held range h starts here: it wins over our copy. */
        k = s->total - pos < h->len ? s->total - pos : h->len;
        check_overlap(t, s, pos, k, h);
        overlap = 1;
        deliver_held(t, f, side);
        pos += k;
    }
    drain(t, f, side);
    return overlap;
}

/* Hold bytes [from, to) of s at *link (copies into the pool). Returns the
 * link after what was inserted, or NULL when the pool failed. With dry set,
 * only adds the cost to *cost. */
static cap_held **hold_piece(cap_tracker *t, cap_flow *f, const seg *s, uint32_t from,
                             uint32_t to, cap_held **link, int dry, uint64_t *cost)
{
    uint32_t data_end = to < s->len ? to : s->len;
    uint32_t pieces[2][2] = {{from, data_end}, {from > data_end ? from : data_end, to}};
    for (int i = 0; i < 2; i++) {
        uint32_t a = pieces[i][0], b = pieces[i][1];
        cap_held *h;
        if (a >= b)
            continue;
        if (dry) {
            *cost += cap_pool_cost(b - a, i == 0);
            continue;
        }
        h = cap_pool_hold(&t->pool, i == 0 ? s->data + a : NULL, b - a);
        if (h == NULL)
            return NULL;
        h->seq = s->seq + a;
        h->ts_us = s->ts_us;
        h->frame = s->frame;
        h->next = *link;
        *link = h;
        link = &h->next;
        held_charge(t, f, h->cost);
    }
    return link;
}

/* Walk s against the held list of the stream: the parts no held range covers
 * are held (or, with dry, only costed into *cost); the covered parts are
 * compared. Sets *seen when some part was covered, *fresh when some was not.
 * Returns 0, or -1 when the pool failed midway. */
static int walk_held(cap_tracker *t, cap_flow *f, int side, const seg *s, int dry,
                     uint64_t *cost, int *seen, int *fresh)
{
    cap_held **link = &f->st[side].held;
    uint32_t pos = 0;
    while (pos < s->total) {
        cap_held *h = *link;
        uint32_t at = s->seq + pos;
        uint32_t end;
        if (h != NULL && SEQ_LEQ(h->seq + h->len, at)) {
            link = &h->next; /* entirely before us */
            continue;
        }
        if (h == NULL || SEQ_GT(h->seq, at)) {
            /* Uncovered up to the next held range (or our end). */
            end = s->total;
            if (h != NULL && h->seq - s->seq < end)
                end = h->seq - s->seq;
            link = hold_piece(t, f, s, pos, end, link, dry, cost);
            if (link == NULL)
                return -1;
            *fresh = 1;
            pos = end;
            continue;
        }
        /* h covers sequence number at: the held copy stays. */
        end = h->seq + h->len - s->seq;
        if (end > s->total)
            end = s->total;
        if (!dry)
            check_overlap(t, s, pos, end - pos, h);
        *seen = 1;
        pos = end;
        link = &h->next;
    }
    return 0;
}

/* Hold a segment that lies ahead of next, within the byte caps. */
static int hold_segment(cap_tracker *t, cap_flow *f, int side, const seg *s, int *seen)
{
    uint64_t cost = 0;
    int fresh = 0;
    walk_held(t, f, side, s, 1, &cost, seen, &fresh);
    if (!fresh)
        return HOLD_SEEN;
    if (f->held_cost + cost > t->cfg.ooo_bytes_per_conn ||
        cost > t->ooo_part_cap - t->ooo_part_used[f->pub.partition] ||
        cost > t->pool.cap - t->pool.used)
        return HOLD_FULL;
    *seen = 0;
    if (walk_held(t, f, side, s, 0, &cost, seen, &fresh) != 0)
        return HOLD_FULL;
    return HOLD_NEW;
}

/* A segment could not be held within the caps: give up the first hole of the
 * stream (it becomes a GAP) and deliver what was held after it, which frees
 * pool space. With nothing held, the hole before the segment itself goes. */
static void give_up_first_hole(cap_tracker *t, cap_flow *f, int side, const seg *s)
{
    cap_stream *st = &f->st[side];
    if (st->held != NULL && SEQ_LT(st->held->seq, s->seq))
        flush_until(t, f, side, st->held->seq, s->ts_us);
    else
        flush_until(t, f, side, s->seq, s->ts_us);
}

/* Count a segment whose bytes were all seen already. */
static void count_retransmit(cap_tracker *t, cap_flow *f, int side)
{
    t->stats.retransmitted++;
    f->pub.retransmits[cap_dir_of(f, side)]++;
}

/* Count a segment held ahead of a hole. */
static void count_out_of_order(cap_tracker *t, cap_flow *f, int side)
{
    t->stats.out_of_order++;
    f->pub.out_of_order[cap_dir_of(f, side)]++;
}

/* Cut the part of s at or beyond the FIN: nothing follows a FIN. Returns 0
 * when nothing is left. */
static int cut_after_fin(cap_tracker *t, const cap_stream *st, seg *s)
{
    if (!st->fin || SEQ_LEQ(s->seq + s->total, st->fin_seq))
        return 1;
    t->stats.out_of_window++;
    if (SEQ_GEQ(s->seq, st->fin_seq))
        return 0;
    seg_cut_tail(s, s->seq + s->total - st->fin_seq);
    return 1;
}

/* Place s: drop what was delivered already, deliver what is in order, hold
 * what is ahead. Loops only after a cap forced a hole to be given up. */
static void place_segment(cap_tracker *t, cap_flow *f, int side, seg *s)
{
    cap_stream *st = &f->st[side];
    int overlap = 0, counted_cap = 0;
    for (;;) {
        if (SEQ_LEQ(s->seq + s->total, st->next)) {
            if (overlap)
                t->stats.overlaps++;
            else
                count_retransmit(t, f, side);
            return;
        }
        if (SEQ_LT(s->seq, st->next)) {
            seg_skip(s, st->next - s->seq); /* the first copy wins */
            overlap = 1;
        }
        if (SEQ_GT(s->seq, st->next)) {
            int seen = 0;
            int r = hold_segment(t, f, side, s, &seen);
            if (r == HOLD_NEW) {
                count_out_of_order(t, f, side);
                if (overlap || seen)
                    t->stats.overlaps++;
                return;
            }
            if (r == HOLD_SEEN) {
                if (overlap)
                    t->stats.overlaps++;
                else
                    count_retransmit(t, f, side);
                return;
            }
            if (!counted_cap)
                t->stats.ooo_dropped++;
            counted_cap = 1;
            give_up_first_hole(t, f, side, s);
            continue;
        }
        if (deliver_in_order(t, f, side, s))
            overlap = 1;
        if (overlap)
            t->stats.overlaps++;
        return;
    }
}

/* A segment from side: payload [seq, seq+len) captured, then missing bytes
 * cut by snaplen. */
void cap_reasm_segment(cap_tracker *t, cap_flow *f, int side, uint32_t seq,
                       const uint8_t *data, uint32_t len, uint32_t missing,
                       int64_t ts_us)
{
    cap_stream *st = &f->st[side];
    seg s;
    if ((uint64_t)len + missing == 0)
        return;
    if ((uint64_t)len + missing > CAP_WINDOW_MAX) {
        t->stats.out_of_window++;
        return;
    }
    s.seq = seq;
    s.data = data;
    s.len = len;
    s.total = len + missing;
    s.ts_us = ts_us;
    s.frame = t->index;
    if (!cut_after_fin(t, st, &s))
        return;
    if (SEQ_GT(s.seq, st->next)) {
        if (s.seq - st->next > CAP_WINDOW_MAX) {
            t->stats.out_of_window++;
            return;
        }
        /* The peer already acknowledged bytes before this segment that we
         * never saw: the capture lost them. */
        if (st->has_acked && SEQ_GT(st->acked, st->next))
            flush_until(t, f, side, SEQ_LT(st->acked, s.seq) ? st->acked : s.seq, ts_us);
    } else if (st->next - s.seq > CAP_WINDOW_MAX) {
        t->stats.out_of_window++;
        return;
    }
    place_segment(t, f, side, &s);
}

/* The peer acknowledged bytes of side beyond everything seen of it, and
 * nothing later was seen yet. They may still come a little later (files
 * merged by time, two capture points), so the hole is not given up at
 * once; but with acked_gap_us set, once the peer has acknowledged them for
 * that long (capture time), they count as lost by the capture: a GAP now,
 * not when the sender's next segment comes, which may be long after (the
 * replies of a pipelined connection lost in a burst of kernel drops would
 * otherwise leave every request sent meanwhile waiting, and holding
 * memory, until then). Off by default: on scattered loss the later GAP
 * lets resp account for more of the lost replies (bench/results). */
static void give_up_unseen_acked(cap_tracker *t, cap_flow *f, int side, int64_t ts_us)
{
    cap_stream *st = &f->st[side];
    if (t->cfg.acked_gap_us <= 0)
        return;
    if (!st->unseen_acked || st->unseen_next != st->next) {
        st->unseen_acked = 1;
        st->unseen_next = st->next;
        st->unseen_since_us = ts_us;
        return;
    }
    if (ts_us - st->unseen_since_us < t->cfg.acked_gap_us)
        return;
    st->unseen_acked = 0;
    flush_until(t, f, side, st->acked, ts_us);
}

/* The peer of side acknowledged sequence numbers up to ack. If bytes of this
 * stream beyond the hole were seen (held data or the FIN), the hole is lost
 * for good: give it up now. Otherwise remember the ACK: the next segment or
 * the close decides. */
void cap_reasm_ack(cap_tracker *t, cap_flow *f, int side, uint32_t ack, int64_t ts_us)
{
    cap_stream *st = &f->st[side];
    uint32_t target = ack;
    if (!st->started || !SEQ_GT(ack, st->next) || ack - st->next > CAP_WINDOW_MAX)
        return;
    if (!st->has_acked || SEQ_GT(ack, st->acked)) {
        st->acked = ack;
        st->has_acked = 1;
    }
    if (st->fin && SEQ_GT(target, st->fin_seq))
        target = st->fin_seq; /* the FIN takes a sequence number, not a byte */
    if (st->held == NULL && !st->fin) {
        give_up_unseen_acked(t, f, side, ts_us);
        return;
    }
    if (st->held == NULL && !(st->fin && SEQ_GT(st->fin_seq, st->next)))
        return;
    /* Give up holes only up to the last byte seen: acknowledged bytes beyond
     * it may still be in the capture, a little later. */
    if (st->held != NULL) {
        const cap_held *last = st->held;
        uint32_t seen_end;
        while (last->next != NULL)
            last = last->next;
        seen_end = last->seq + last->len;
        if (st->fin && SEQ_GT(st->fin_seq, seen_end))
            seen_end = st->fin_seq;
        if (SEQ_LT(seen_end, target))
            target = seen_end;
    }
    flush_until(t, f, side, target, ts_us);
}

/* A FIN from side at sequence number fin_seq (the first FIN counts). Held
 * ranges beyond it are dropped: nothing follows a FIN. */
void cap_reasm_fin(cap_tracker *t, cap_flow *f, int side, uint32_t fin_seq, int64_t ts_us)
{
    cap_stream *st = &f->st[side];
    cap_held **link = &st->held;
    if (st->fin)
        return;
    st->fin = 1;
    st->fin_seq = fin_seq;
    while (*link != NULL) {
        cap_held *h = *link;
        if (SEQ_GEQ(h->seq, fin_seq)) {
            *link = h->next;
            t->stats.out_of_window++;
            held_release(t, f, h);
        } else {
            link = &h->next;
        }
    }
    check_done(st);
    if (!st->done && st->has_acked && SEQ_GT(st->acked, st->next))
        flush_until(t, f, side, SEQ_LT(st->acked, fin_seq) ? st->acked : fin_seq, ts_us);
}

/* Deliver everything known of the stream: held ranges, and as GAPs the holes
 * before them, before the FIN, and before what the peer acknowledged. */
void cap_reasm_flush(cap_tracker *t, cap_flow *f, int side, int64_t ts_us)
{
    cap_stream *st = &f->st[side];
    uint32_t target = st->next;
    if (!st->started)
        return;
    for (const cap_held *h = st->held; h != NULL; h = h->next)
        if (SEQ_GT(h->seq + h->len, target))
            target = h->seq + h->len;
    if (st->fin && SEQ_GT(st->fin_seq, target))
        target = st->fin_seq;
    if (st->has_acked && SEQ_GT(st->acked, target))
        target = st->acked;
    if (st->fin && SEQ_GT(target, st->fin_seq))
        target = st->fin_seq;
    flush_until(t, f, side, target, ts_us);
}

/* Give every held range of the stream back to the pool, delivering nothing. */
void cap_reasm_clear(cap_tracker *t, cap_flow *f, int side)
{
    cap_stream *st = &f->st[side];
    while (st->held != NULL) {
        cap_held *h = st->held;
        st->held = h->next;
        held_release(t, f, h);
    }
}
