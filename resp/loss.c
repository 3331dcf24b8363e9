/*
 * loss.c - re-anchoring the pairing after a capture gap that the decoders
 * could not bridge: the pairing resumes at the earliest point the bytes make
 * certain, and only there (the "loss" section below).
 *
 * It rests on what each connection has shown before the gap: the sizes of
 * each command's replies and of the requests. Learning them runs for every
 * command, so its common case is inline in pair_internal.h and returns after
 * a few compares; the rest, and everything a gap runs, is here.
 */
#include <stddef.h>
#include <stdlib.h>

#include "resp/pair_internal.h"

/* ---------------------------------------------------------------- sizes
 *
 * What a gap can be counted with (see "loss" below): the sizes the replies
 * of each command have had on this connection, and the sizes of its
 * requests. A command is keyed by its name, the name's length and argc
 * (SET k v and SET k v GET are different commands here). */

#define KEY_MASK(n) (((uint64_t)1 << (8 * (n))) - 1)
#define KEY_ALL8 UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, \
                 UINT64_MAX, UINT64_MAX
_Static_assert(RESP_NAME_MAX == 32, "size_key_mask has an entry per name length");
const uint64_t size_key_mask[RESP_NAME_MAX] = {
    0, KEY_MASK(1), KEY_MASK(2), KEY_MASK(3), KEY_MASK(4), KEY_MASK(5), KEY_MASK(6), KEY_MASK(7),
    KEY_ALL8, KEY_ALL8, KEY_ALL8
};

/* Where sizes_learn finds or makes k's slot (its slow part: the last slot
 * used did not hold k). Keys are unique among the slots in use, so where
 * the search starts does not matter. */
PAIR_APART rc_sizes *sizes_slot(rc_conn *c, uint64_t k)
{
    for (int i = 0; i < RC_SIZE_SLOTS; i++) {
        if (c->rsz[i].key == k && c->rsz[i].seen != 0) {
            c->rsz_last = (uint8_t)i;
            return &c->rsz[i];
        }
    }
    uint8_t i = (uint8_t)(c->rsz_next++ % RC_SIZE_SLOTS);
    rc_sizes *z = &c->rsz[i];
    memset(z, 0, sizeof(*z));
    z->key = k;
    c->rsz_last = i;
    return z;
}

/* sizes_learn for a reply that may change what its slot says. */
PAIR_APART void sizes_learn_change(rc_sizes *z, const resp_reply *r)
{
    if (z->seen < SIZES_SEEN)
        z->seen++;
    /* an integer other than 0 or 1 (a length, a counter) grows a digit
     * now and then: its size is not predictable */
    if (r->gap || r->bytes > UINT32_MAX ||
        (r->type == RESP_T_INT && (r->integer < 0 || r->integer > 1))) {
        z->varied = 1;
        return;
    }
    uint32_t b = (uint32_t)r->bytes;
    if (z->n > 0 && z->size[0] == b)
        return;
    if (z->n > 1 && z->size[1] == b) {
        z->size[1] = z->size[0];
        z->size[0] = b;
        return;
    }
    if (z->n == 2)
        z->varied = 1; /* a third size: the command's replies vary */
    z->size[1] = z->size[0];
    z->size[0] = b;
    if (z->n < 2)
        z->n++;
    z->seen = 1; /* a new size: counted again from this reply */
}

/* The sizes remembered for the replies of e's command (a plain command of
 * one reply), NULL when none. */
static const rc_sizes *sizes_known(const rc_conn *c, const rq_slot *e)
{
    if (e->kind != RQK_NORMAL || e->nreply != 1)
        return NULL;
    char name[16];
    slot_name16(c, e, name);
    uint64_t k = size_key_of(name, e->name_len, slot_argc(c, e));
    for (int i = 0; i < RC_SIZE_SLOTS; i++)
        if (c->rsz[i].key == k && c->rsz[i].seen != 0)
            return &c->rsz[i];
    return NULL;
}

/* The sizes e's reply may have: 1 or 2 of them in out, or 0 when they are
 * not predictable (a command seen fewer than SIZES_SEEN times in a row
 * since its sizes changed, with more than two sizes or an integer other
 * than 0 and 1, or not a plain one). */
static int sizes_of(const rc_conn *c, const rq_slot *e, uint32_t out[2])
{
    if (e->uncertain || e->keep)
        return 0;
    const rc_sizes *z = sizes_known(c, e);
    if (z == NULL || z->seen < SIZES_SEEN || z->varied || z->n == 0)
        return 0;
    out[0] = z->size[0];
    out[1] = z->size[1];
    return z->n;
}


/* ---------------------------------------------------------------- loss
 *
 * Re-anchoring after a gap that is not bridged: the pairing resumes at the
 * earliest point the bytes make certain, and only there.
 *
 *   - A reply gap of known length that starts at a message boundary holds
 *     the replies of the first d requests queued, for some d >= 1 (the
 *     requests queued later were captured after the gap, so their replies
 *     come after it). When the replies of those requests have predictable
 *     sizes (sizes_of: each command's replies on this connection have had
 *     at most two sizes, seen SIZES_SEEN times or more), the gap's length
 *     allows few values of d, often one; each candidate must also let the
 *     first reply after the gap answer request d: its packet acknowledged
 *     that request (rep_ack), and was captured after it. When one d
 *     remains, those d requests lost their replies (emitted unanswered)
 *     and the pairing goes on in step, at the byte after the gap.
 *   - A request gap of known length between two request boundaries, on a
 *     connection whose requests have had at most RC_RQ_SIZES sizes, the
 *     last RQ_SIZES_STABLE of them no new one: when exactly one count m of
 *     such requests fills it, m requests were lost;
 *     their replies come in their place (the server answers in order), as
 *     RQK_LOST entries that emit nothing. The requests queued before the
 *     gap are answered first in any case.
 *   - Always: a reply whose packet had not acknowledged the head request
 *     cannot answer it. For a certain head that means the pairing was
 *     wrong already (a clean-looking mid-stream start): the connection is
 *     out of sync. For an uncertain head (after a loss nothing settled),
 *     the reply is one for a lost request and is not matched to the head.
 *
 * Anything else is a loss as before (pair_lost, pair_lost_requests). */

#define LOSS_SUMS 256          /* reachable sums tracked while counting */
#define LOSS_MAX_GAP (1u << 20) /* longest gap counted */

/* The sums a count of messages may total, each message one of a few sizes:
 * after each message added, the sums at or below max (the gap's length),
 * sorted and distinct. More than LOSS_SUMS of them are too many to count.
 *
 * While every message added had one size or the same two sizes d apart
 * (a queue of one command, its replies two sizes: a value or nil), the sums
 * are base, base + d, ..., base + m d: kept as that progression, a message
 * costs a few operations whatever m is. Otherwise they are a sorted list. */
typedef struct loss_sums {
    uint32_t max;
    int n;                     /* how many sums */
    int list;                  /* 0: the progression; 1: the list */
    uint64_t base;             /* progression: the least sum */
    uint32_t step;             /* its difference (0 while m is 0) */
    uint32_t m;                /* its last index */
    uint32_t *a, *b;           /* list: the sums, and room for the next ones */
    uint32_t buf[2][LOSS_SUMS];
} loss_sums;

/* Start with one sum, 0 (no message yet). */
static void sums_init(loss_sums *s, uint32_t max)
{
    s->max = max;
    s->n = 1;
    s->list = 0;
    s->base = 0;
    s->step = 0;
    s->m = 0;
    s->a = s->buf[0];
    s->b = s->buf[1];
}

/* The list's next sums: the merge of the sorted lists a + vals[j], the
 * smallest head taken each time (the heads equal to it step past it too),
 * each sum looked at once per size. */
static int sums_merge(const uint32_t *a, int n, const uint32_t *vals, int nv, uint32_t max,
                      uint32_t *out)
{
    int at[RC_RQ_SIZES] = {0};
    int k = 0;
    for (;;) {
        uint64_t lo = UINT64_MAX;
        for (int j = 0; j < nv; j++)
            if (at[j] < n && (uint64_t)a[at[j]] + vals[j] < lo)
                lo = (uint64_t)a[at[j]] + vals[j];
        if (lo > max)
            return k;
        if (k == LOSS_SUMS)
            return -1;
        out[k++] = (uint32_t)lo;
        for (int j = 0; j < nv; j++)
            if (at[j] < n && (uint64_t)a[at[j]] + vals[j] == lo)
                at[j]++;
    }
}

/* From the progression to the list (the same sums, in order; at most
 * LOSS_SUMS of them, as every step checked). */
static void sums_to_list(loss_sums *s)
{
    for (uint32_t i = 0; i <= s->m; i++)
        s->a[i] = (uint32_t)(s->base + (uint64_t)i * s->step);
    s->list = 1;
}

/* The progression step (see sums_step): 0 when the sizes do not keep it
 * one (nothing changed). */
static int progression_step(loss_sums *s, const uint32_t *vals, int nv)
{
    uint32_t lo = vals[0], hi = vals[0];
    for (int j = 1; j < nv; j++) {
        lo = vals[j] < lo ? vals[j] : lo;
        hi = vals[j] > hi ? vals[j] : hi;
    }
    if (hi != lo) {
        for (int j = 0; j < nv; j++)
            if (vals[j] != lo && vals[j] != hi)
                return 0; /* three sizes */
        if (s->m > 0 && s->step != hi - lo)
            return 0;
        s->step = hi - lo;
        s->m++;
    }
    s->base += lo;
    if (s->base > s->max) {
        s->n = 0;
        return 1;
    }
    if (s->step > 0 && (s->max - s->base) / s->step < s->m)
        s->m = (uint32_t)((s->max - s->base) / s->step); /* the rest pass max */
    s->n = s->m + 1 > LOSS_SUMS ? -1 : (int)s->m + 1;
    return 1;
}

/* One more message, of one of the nv (1 to RC_RQ_SIZES) sizes in vals: the
 * sums at or below max it allows. Returns how many, or -1 when more than
 * LOSS_SUMS (too many: not counted). */
static int sums_step(loss_sums *s, const uint32_t *vals, int nv)
{
    if (!s->list) {
        if (progression_step(s, vals, nv))
            return s->n;
        sums_to_list(s);
    }
    int n = sums_merge(s->a, s->n, vals, nv, s->max, s->b);
    if (n < 0)
        return -1;
    uint32_t *t = s->a;
    s->a = s->b;
    s->b = t;
    s->n = n;
    return n;
}

/* Is max, the bound the sums are kept at or below, one of them? */
static int sums_reach(const loss_sums *s)
{
    if (s->n <= 0)
        return 0;
    if (s->list)
        return s->a[s->n - 1] == s->max; /* sorted: the last is the largest */
    uint64_t off = s->max - s->base; /* base <= max while n > 0 */
    if (s->step == 0)
        return off == 0;
    return off % s->step == 0 && off / s->step <= s->m;
}

/* A candidate count not measured by the sizes (a reply of unpredictable
 * size among its replies): the gap may hold more bytes than its replies. */
#define RP_CAND_LOOSE (1u << 31)

/* The counts d of lost replies a reply gap of len bytes allows, from the
 * sizes alone, into cand (at most 8; RP_CAND_LOOSE set on those the sizes
 * did not measure). Returns how many, or -1 when too many to say. */
static int rp_gap_candidates(const rc_conn *c, uint64_t len, uint32_t *cand)
{
    loss_sums sums;
    int n = 1, ncand = 0, known = 1;
    if (len > LOSS_MAX_GAP)
        return -1;
    sums_init(&sums, (uint32_t)len);
    for (uint32_t d = 1; d <= c->count; d++) {
        uint32_t sz[2];
        int nz = known ? sizes_of(c, ring_at((rc_conn *)c, d - 1), sz) : 0;
        if (nz == 0)
            known = 0;
        if (known) {
            n = sums_step(&sums, sz, nz);
            if (n < 0)
                return -1;
            if (n == 0)
                break; /* every sum passed the gap */
        } else if ((uint64_t)d * 3 > len) {
            break; /* no reply is shorter than 3 bytes ("+\r\n") */
        }
        if (!known || sums_reach(&sums)) {
            if (ncand == 8)
                return -1;
            cand[ncand++] = d | (known ? 0 : RP_CAND_LOOSE);
        }
    }
    return ncand;
}

/* Does every request queued expect exactly one reply, so that the d-th
 * reply after the first queued answers the d-th request? (Not for long
 * queues: they are not counted.) */
static int queue_one_reply_each(rc_conn *c)
{
    if (c->count > 4096)
        return 0;
    for (uint32_t i = 0; i < c->count; i++) {
        const rq_slot *e = ring_at(c, i);
        if ((e->kind >= RQK_SUB && e->kind != RQK_LOST) || e->nreply != 1 || e->dynamic)
            return 0;
    }
    return 1;
}

/* The reply gap was counted: the first d requests queued lost their
 * replies; the next reply answers the one after them. */
static void rp_gap_anchor(rc_conn *c, uint32_t d)
{
    for (uint32_t i = 0; i < d && c->count > 0; i++)
        pair_pop_unanswered(c);
    flush_no_reply(c);
    c->anchored++;
}

/* The least size e's command's replies have had on this connection (one or
 * two sizes seen, however few times), or 3 ("+\r\n", the shortest reply)
 * when that is not known. */
static uint64_t least_seen(const rc_conn *c, const rq_slot *e)
{
    const rc_sizes *z = sizes_known(c, e);
    if (z == NULL || z->varied || z->n == 0)
        return 3;
    uint32_t least = z->n > 1 && z->size[1] < z->size[0] ? z->size[1] : z->size[0];
    return least < 3 ? 3 : least;
}

/* The replies owed (pair.c, owed_min) once the first n requests queued are
 * given up over a lost stretch of the reply stream of len bytes (0: its
 * length is not known): theirs and those already owed, less the most the
 * stretch may have held. That is counted with the least size the given-up
 * requests' replies have had (least_seen), or 3 bytes when replies of sizes
 * not known were owed already; the scan stops once the stretch may have held
 * them all. Before the requests are popped. */
uint32_t owed_after_reply_gap(rc_conn *c, uint64_t n, uint64_t len)
{
    uint64_t total = (uint64_t)c->owed_min + n;
    if (len == 0)
        return 0;
    uint64_t least = c->owed_min > 0 || n > 4096 ? 3 : UINT64_MAX;
    for (uint32_t i = 0; least > 3 && i < n && i < c->count; i++) {
        uint64_t l = least_seen(c, ring_at(c, i));
        least = l < least ? l : least;
        if (total <= len / least)
            return 0;
    }
    uint64_t fits = len / (least == UINT64_MAX ? 3 : least);
    if (total <= fits)
        return 0;
    return total - fits > UINT32_MAX ? UINT32_MAX : (uint32_t)(total - fits);
}

/* The first n queued requests, which a reply gap may have answered, are
 * given up; the rest stay uncertain (pair_lost for the first n only). */
void rp_gap_give_up(rc_conn *c, uint32_t n)
{
    if (n > c->count)
        n = c->count;
    c->owed_min = owed_after_reply_gap(c, n, c->rp_gap_len);
    c->st.out_of_sync = 1;
    c->synced = 0;
    c->reply_since_loss = 0;
    c->rpd.keeping = 0;
    for (uint32_t i = 0; i < n && c->count > 0; i++)
        pair_pop_unanswered(c);
    if (c->count == 0)
        c->noreply_queued = 0;
    rp_lost(&c->rpd, 1);
}

/* A reply gap that directly follows another one, no reply byte between
 * them: the capture gives up a hole in parts when the client acknowledged
 * the first part before the server's next segment showed where it ends
 * (capture/reasm.c, acked_gap_us). Counted as one gap of their total
 * length over what is queued now, as if it had come whole. Returns 1 when
 * it was settled so. */
static int reply_gap_more(rc_conn *c, uint64_t len)
{
    if (c->rp_gap_pending && len > 0 && c->rp_gap_len > 0) {
        uint64_t total = c->rp_gap_len + len;
        uint32_t cand[8];
        int n = queue_one_reply_each(c) ? rp_gap_candidates(c, total, cand) : -1;
        if (n < 1) {
            c->rp_gap_pending = 0;
            c->rp_gap_len = total;
            rp_gap_give_up(c, c->count);
            return 1;
        }
        memcpy(c->rp_cand, cand, (size_t)n * sizeof(*cand));
        c->rp_ncand = (uint8_t)n;
        c->rp_gap_queued = c->count;
        c->rp_gap_len = total;
        return 1;
    }
    /* the first part answered nothing queued and the search for the next
     * message started at a boundary: nothing more to know while nothing
     * is queued */
    return c->count == 0 && c->orphans == UINT32_MAX && c->rpd.state == RP_RESYNC &&
           c->rpd.rs.seen == 0 && !c->rp_gap_pending;
}

static void reply_gap(rc_conn *c, uint64_t len);

/* A gap before the first reply byte of a connection picked up mid-stream
 * (capture/ starts the stream at the client's first ACK: the server had
 * sent bytes the capture never showed, lost or in flight when it began).
 * Whatever is queued may be answered in them: given up, and the pairing
 * waits for solid ground as at any mid-stream start. Nothing was paired
 * yet to lose: not counted out of sync. Unless the client had received
 * them before it sent any request the capture shows (before_peer): then
 * they answer none of those, as bytes from before the capture would not,
 * and the stream goes on as if it began after them. 1 when it was such a
 * gap. */
static int reply_gap_at_start(rc_conn *c, uint64_t len, int before_peer)
{
    if (c->cc->saw_syn || c->rpd.off != 0 || c->rp_lost_bytes != 0 || c->st.replies != 0)
        return 0;
    c->rp_lost_bytes += len;
    if (before_peer) {
        c->st.start_gaps_answered_none++;
        return 1;
    }
    rp_lost(&c->rpd, 1);
    c->rp_gap_pending = 0;
    c->synced = 0;
    c->reply_since_loss = 0;
    c->rpd.keeping = 0;
    pair_flush_all(c);
    return 1;
}

void pair_reply_gap(rc_conn *c, uint64_t len, int before_peer)
{
    if (reply_gap_at_start(c, len, before_peer))
        return;
    int follows = c->rp_gap_last;
    c->rp_gap_last = 1;
    if (follows && reply_gap_more(c, len)) {
        c->rp_lost_bytes += len;
        return;
    }
    reply_gap(c, len);
}

static void reply_gap(rc_conn *c, uint64_t len)
{
    c->rp_lost_bytes += len;
    const rp_dec *d = &c->rpd;
    int plain = c->synced && !c->resp3 && !c->monitor && !subscribed(c) && !c->replication &&
                !c->rq_gap_pending && !c->rp_gap_pending;
    if (plain && len > 0 && d->state == RP_TYPE && !d->in_msg && d->depth == 0) {
        if (c->count == 0) {
            /* the lost bytes answered nothing queued (a stream nobody
             * asked for, or replies of lost requests: how many is not
             * known, see orphans); where the next message starts is not
             * known either, but nothing is owed: the next reply found
             * answers the next request */
            c->orphans = UINT32_MAX;
            rp_lost(&c->rpd, 1);
            c->anchored++;
            return;
        }
        uint32_t cand[8];
        int n = queue_one_reply_each(c) ? rp_gap_candidates(c, len, cand) : -1;
        if (n >= 1) { /* settled by the first reply after it (or not) */
            memcpy(c->rp_cand, cand, (size_t)n * sizeof(*cand));
            c->rp_ncand = (uint8_t)n;
            c->rp_gap_queued = c->count;
            c->rp_gap_len = len;
            c->rp_gap_pending = 1;
            /* requests from now on are uncertain until it is settled */
            c->synced = 0;
            c->reply_since_loss = 0;
            return;
        }
    }
    if (c->rp_gap_pending) {
        c->rp_gap_pending = 0;
        c->rp_gap_len = len == 0 ? 0 : c->rp_gap_len + len; /* both holes */
        rp_gap_give_up(c, c->rp_gap_queued);
        return;
    }
    rp_lost(&c->rpd, 1);
    pair_lost_gap(c, len);
}

/* The first reply bytes after a pending reply gap: p[0..n), their packet
 * captured at ts. Keep the counts the next reply allows: it must start
 * right after the gap (a type byte) and be able to answer the request
 * after the lost ones. One left: anchored; else the gap is a loss. */
void rp_gap_resolve(rc_conn *c, const uint8_t *p, size_t n, int64_t ts)
{
    c->rp_gap_pending = 0;
    uint32_t keep = 0, d = 0, loose = 0;
    int type_ok = n > 0 && (p[0] == '+' || p[0] == '-' || p[0] == ':' || p[0] == '$' ||
                            p[0] == '*' || p[0] == '_' || p[0] == ',' || p[0] == '#' ||
                            p[0] == '!' || p[0] == '=' || p[0] == '(' || p[0] == '%' ||
                            p[0] == '~' || p[0] == '|');
    uint64_t saved = c->rep_ack;
    c->rep_ack = c->ev_ack;
    for (int i = 0; type_ok && i < c->rp_ncand; i++) {
        uint32_t k = c->rp_cand[i] & ~RP_CAND_LOOSE;
        if (k < c->count && !reply_may_answer(c, ring_at(c, k), ts, 1))
            continue;
        keep++;
        d = k;
        loose = c->rp_cand[i] & RP_CAND_LOOSE;
    }
    c->rep_ack = saved;
    if (keep != 1) {
        rp_gap_give_up(c, c->rp_gap_queued);
        return;
    }
    /* certain again: so are the requests queued while it was pending */
    for (uint32_t i = 0; i < c->count; i++)
        ring_at(c, i)->uncertain = 0;
    c->synced = 1;
    int emptied = d == c->count;
    rp_gap_anchor(c, d);
    /* Every request queued lost its reply and the reply after the gap is a
     * request's not seen yet: when the sizes did not measure the gap, it may
     * also hold replies of requests not seen (lost in a request gap the
     * capture shows only with the next request bytes), so how many replies
     * of lost requests came is not known (as at a gap with nothing queued:
     * reply_gap). libs-b/ioredis.pcap, 10% loss: two MGET replies in one gap,
     * the second a lost MGET's, had left one reply owed too many. */
    if (emptied && loose)
        c->orphans = UINT32_MAX;
}

/* How many requests of the sizes seen fill len bytes: 1 with *m set when
 * exactly one count at least min_m does. */
static int rq_gap_count(const rc_conn *c, uint64_t len, uint32_t min_m, uint32_t *m)
{
    loss_sums sums;
    int n = 1, found = 0;
    if (len > LOSS_MAX_GAP || c->qsz_n == 0)
        return 0;
    sums_init(&sums, (uint32_t)len);
    for (uint32_t k = 1; n > 0; k++) {
        n = sums_step(&sums, c->qsz, c->qsz_n);
        if (n < 0)
            return 0;
        if (k >= min_m && sums_reach(&sums)) {
            if (found)
                return 0;
            found = 1;
            *m = k;
        }
    }
    return found;
}

void pair_request_gap(rc_conn *c, uint64_t len)
{
    /* before the first request byte of a connection picked up mid-stream
     * (as reply_gap_at_start): requests the capture never showed, lost or
     * sent before it began; the first one decoded says so, nothing queued
     * is owed less, and nothing paired was lost: not out of sync */
    int at_start = !c->cc->saw_syn && c->rq.off == 0 && c->rq_lost_bytes == 0 &&
                   c->st.requests == 0 && len > 0;
    c->rq_lost_bytes += len;
    if (at_start) {
        rq_lost(&c->rq, 1);
        c->rq_loss_pending = 1;
        c->synced = 0;
        c->reply_since_loss = 0;
        return;
    }
    if (len == 0)
        c->ack_broken = 1;
    if (c->rq_gap_pending) { /* two gaps without a byte between them */
        c->rq_gap_len = len == 0 || c->rq_gap_len == 0 ? 0 : c->rq_gap_len + len;
        return;
    }
    const rq_dec *d = &c->rq;
    if (len > 0 && c->synced && !c->rp_gap_pending && d->state == RQ_START && !d->in_msg &&
        !d->inline_seen && !c->in_multi && !c->reply_off && !c->skip_next &&
        c->qsz_stable >= RQ_SIZES_STABLE && !c->qsz_varied) {
        c->rq_gap_pending = 1;
        c->rq_gap_len = len;
        c->rq_gap_start = c->rq.off + c->rq_lost_bytes - len;
        c->rq_gap_orphans = c->orphans;
        return;
    }
    rq_lost(&c->rq, 1);
    pair_lost_requests(c);
}

/* The first request bytes after a pending request gap (p[0..n); NULL at
 * the close): count the requests lost, or make it a loss. */
void rq_gap_resolve(rc_conn *c, const uint8_t *p, size_t n)
{
    resp_pipeline *rp = c->rp;
    uint32_t m = 0;
    c->rq_gap_pending = 0;
    if (p != NULL && n > 0 && p[0] == '*' && c->rq_gap_len > 0 && c->synced &&
        c->orphans != UINT32_MAX &&
        rq_gap_count(c, c->rq_gap_len, c->orphans > 0 ? c->orphans : 1, &m)) {
        uint32_t owed = m - c->orphans, smin = c->qsz[0];
        c->rq_loss_pending = 1; /* m requests lost: the next one is flagged */
        for (uint8_t i = 1; i < c->qsz_n; i++)
            smin = c->qsz[i] < smin ? c->qsz[i] : smin;
        if ((uint64_t)c->count + owed <= rp->cfg.max_inflight &&
            c->part->inflight + owed <= rp->inflight_part_cap) {
            for (uint32_t i = 0; i < owed; i++) {
                rq_slot *e = ring_push(c);
                if (e == NULL)
                    break;
                memset(e, 0, sizeof(*e));
                e->kind = RQK_LOST;
                e->text_pos = c->text.tail; /* no text */
                e->nreply = 1;
                e->dynamic = 0;
                e->uncertain = 0;
                e->keep = 0;
                /* a bound of its end: the requests are at least smin long */
                e->req_end = c->rq_gap_start + (uint64_t)(i + 1) * smin;
                c->part->inflight++;
                if (i + 1 == owed)
                    c->anchored++;
            }
            if (owed == 0)
                c->anchored++;
            return;
        }
    }
    rq_lost(&c->rq, 1);
    pair_lost_requests(c);
    if (c->orphans != c->rq_gap_orphans)
        c->reply_since_loss = 1; /* as the replies since the gap set it */
}

