/*
 * pair_internal.h - what the pairing files of resp/ share (not a public
 * header; the decoders see only decode.h).
 *
 *   pair.c   which reply answers which request: the requests side (classify,
 *            queue), the replies side (pair, push, effects), emit, sync
 *   modes.c  client-side modes: MULTI/EXEC transactions, CLIENT REPLY
 *   ring.c   the in-flight ring of each connection: growth, shrinking
 *   loss.c   re-anchoring after a gap: the sizes seen, counting a gap
 *   conn.c   connections, the pipeline, capture events, config, stats
 *
 * The functions every request or reply runs are static inline here, so that
 * the hot paths of pair.c compile as one piece, as they did in one file;
 * what they call out of line is the rare part of each.
 */
#ifndef SLOTSCOPE_PAIR_INTERNAL_H
#define SLOTSCOPE_PAIR_INTERNAL_H

#include "resp/resp_internal.h"


/* For the rare paths of per-reply functions: kept out of line, so that the
 * common path stays short (and tests a field in memory with one compare).
 * PAIR_APART: out of line only (the path is not rare everywhere), so that
 * the common path's function saves fewer registers. */
#if defined(__GNUC__)
#define PAIR_RARE __attribute__((noinline, cold))
#define PAIR_APART __attribute__((noinline))
#else
#define PAIR_RARE
#define PAIR_APART
#endif

/* Request kinds that pairing treats specially. The order matters: the
 * kinds before RQK_SUB are paired with their reply as it comes (the fast
 * path of reply_done); the kinds whose reply has effects come last,
 * from RQK_MONITOR on, and of those the ones reply_begin looks at,
 * from RQK_EXEC on, so that a reply for any other request costs one
 * comparison each time. */
enum {
    RQK_NORMAL = 0,
    RQK_QUEUED,        /* inside MULTI: +QUEUED or an error, no effects */
    RQK_MULTI,
    RQK_DISCARD,
    RQK_WATCH,
    RQK_SUB,           /* subscribe family (sub_word says which) */
    RQK_QUIT,
    RQK_REPLY_ON,
    RQK_REPLY_OFF,
    RQK_REPLY_SKIP,
    RQK_REPLCONF_ACK,
    RQK_LOST,          /* a request lost in a gap, counted (rq_gap_resolve):
                          its reply is expected, nothing is emitted */
    RQK_MONITOR,       /* from here on: reply_effects */
    RQK_HELLO,
    RQK_RESET,
    RQK_PSYNC,
    RQK_EXEC,          /* from here on: reply_begin too */
    RQK_SYNC
};

/* rq_entry.tx bits of an EXEC whose transaction holds CLIENT REPLY or HELLO. */
enum {
    TXF_TRIM = 1,     /* its array declares tx_elems.queued elements but the
                         server sends only tx_elems.sent */
    TXF_LOOSE = 2,    /* the array header is not sent (replies were off): what
                         the transaction's CLIENT REPLY ON lets through comes
                         as nreply loose replies */
    TXF_MODES = 4,    /* the client's reply modes were changed at EXEC */
    TXF_PREV_OFF = 8  /* CLIENT REPLY OFF was in force before EXEC */
};

/* Confirmation words of the subscribe family, indexed by rq_entry.sub_word. */
enum { SW_SUB = 0, SW_PSUB, SW_SSUB, SW_UNSUB, SW_PUNSUB, SW_SUNSUB, SW_COUNT };

/* Replies (requests) of a command (connection) seen before its sizes are
 * taken as predictable (loss.c). */
#define SIZES_SEEN 8

/* ---------------------------------------------------------------- functions */

/* pair.c */
/* The events of the two decoders (decode.h), pair.c's side of them: c is
 * the owner given to rq_init / rp_init. */
extern const rq_out pair_rq_out;
extern const rp_out pair_rp_out;
void pair_lost(rc_conn *c);           /* replies lost: pairing unknown now */
void pair_lost_requests(rc_conn *c);  /* requests lost: what is queued stays */
void pair_limit_hit(rc_conn *c);      /* a limit was hit */
void pair_emit(rc_conn *c, rq_entry *e, resp_outcome outcome);
void pair_pop_unanswered(rc_conn *c);
void pair_flush_no_reply_slow(rc_conn *c);
void pair_flush_all(rc_conn *c);

/* modes.c */
void request_modes(rc_conn *c, rq_entry *e);
void tx_undo(rc_conn *c, rq_entry *h);

/* ring.c */
rq_entry *ring_entry_new(void);
int ring_reserve(rc_conn *c);
void ring_maybe_shrink(rc_conn *c);

/* loss.c */
void pair_request_gap(rc_conn *c, uint64_t len); /* a request gap not bridged */
void pair_reply_gap(rc_conn *c, uint64_t len);   /* a reply gap not bridged */
/* The name bytes a key takes, by name length: its first min(len, 8). */
extern const uint64_t size_key_mask[RESP_NAME_MAX];
rc_sizes *sizes_slot(rc_conn *c, uint64_t k);
void sizes_learn_change(rc_sizes *z, const resp_reply *r);
void rp_gap_give_up(rc_conn *c, uint32_t n);
void rp_gap_resolve(rc_conn *c, const uint8_t *p, size_t n, int64_t ts);
void rq_gap_resolve(rc_conn *c, const uint8_t *p, size_t n);

/* ---------------------------------------------------------------- ring (hot) */

/* The entry at position i of the FIFO (0 = head). */
static inline rq_entry *ring_at(rc_conn *c, uint32_t i)
{
    return &c->ring[(c->head + i) & (c->ring_cap - 1)];
}

/* Make an entry fit for use. Zeroed: the argument prefixes are not cleared
 * per request, so an entry must never hold stale heap bytes (they could be
 * anyone's payload). The reply's error text and redirection start out
 * cleared, as emit keeps them. */
static inline void entry_init(rq_entry *e)
{
    memset(e, 0, sizeof(*e));
    e->cmd.reply.redir.slot = -1;
}

/* Mark an entry as the connection's: the facts of resp_command that are the
 * same for all its commands are written once, when an entry of its ring is
 * first handed out (entries keep them when the ring is resized), not per
 * command. */
static inline void entry_own(const rc_conn *c, rq_entry *e)
{
    e->cmd.conn = c->cc;
    e->cmd.conn_word = c->conn_word;
}

/* The free entry after the queued ones (ring_reserve made room). Since a
 * resize the ring hands out its entries in index order, so an entry not yet
 * initialised is always the one at ring_fresh. */
static inline rq_entry *ring_next_free(rc_conn *c)
{
    uint32_t i = (c->head + c->count) & (c->ring_cap - 1);
    rq_entry *e = &c->ring[i];
    if (i >= c->ring_fresh) {
        entry_init(e);
        entry_own(c, e);
        c->rp->ring_resident += i + 1 - c->ring_fresh;
        c->ring_fresh = i + 1;
    }
    return e;
}

/* Remove the head. */
static inline void ring_pop(rc_conn *c)
{
    c->head = (c->head + 1) & (c->ring_cap - 1);
    c->count--;
    c->part->inflight--;
}

/* Would ring_maybe_shrink do anything now? */
static inline int ring_shrink_due(const rc_conn *c)
{
    return c->ring_cap > RING_KEEP &&
           (c->ring_win >= (uint64_t)RING_WINDOW * c->ring_cap ||
            (c->count == 0 && c->rp->ring_resident > c->rp->cfg.max_inflight));
}

/* ---------------------------------------------------------------- queue (hot) */

/* Does a queued request expect no reply at all (it is emitted as soon as it
 * reaches the head)? Fixed when it is queued: only the head's nreply changes
 * later, and the head is emitted when it reaches 0. */
static inline int expects_no_reply(const rq_entry *e)
{
    return e->nreply == 0 && !e->dynamic;
}

/* Emit requests at the head that expect no reply. Called after every request
 * and reply: the count of such requests in the queue settles the common case
 * (none) without reading the head entry, which for a pipelined connection
 * is a line likely out of the cache. */
static inline void flush_no_reply(rc_conn *c)
{
    if (c->noreply_queued != 0)
        pair_flush_no_reply_slow(c);
}

/* Is the connection subscribed to anything (server side)? */
static inline int subscribed(const rc_conn *c)
{
    return c->sub_channels + c->sub_patterns + c->sub_shards > 0;
}

/* ---------------------------------------------------------------- sizes (hot, loss.c) */

/* The key of e's command. */
static inline uint64_t size_key(const rq_entry *e)
{
    uint64_t k;
    memcpy(&k, e->cmd.req.name, sizeof k);
    k &= size_key_mask[e->name_len]; /* bytes past the name may be stale */
    return k ^ ((uint64_t)e->name_len << 56) ^ ((uint64_t)(e->cmd.req.argc & 0xffff) << 40);
}

/* A reply of r->bytes paired with e: remember its size. Only whether a
 * slot was seen SIZES_SEEN times counts (seen stops there), and a varied
 * slot stays so: a slot past both tests changes no more, and one that saw
 * its latest size again changes only by a varied reply. Those two, the
 * common cases, return here. */
static inline void sizes_learn(rc_conn *c, const rq_entry *e, const resp_reply *r)
{
    uint64_t k = size_key(e);
    rc_sizes *z = &c->rsz[c->rsz_last];
    if (z->key != k || z->seen == 0)
        z = sizes_slot(c, k);
    if (z->seen >= SIZES_SEEN && /* then z->n > 0 unless varied */
        (z->varied || (r->bytes == z->size[0] && !r->gap &&
                       (r->type != RESP_T_INT || (uint64_t)r->integer <= 1))))
        return;
    sizes_learn_change(z, r);
}

/* A request of `bytes` was decoded: remember its size. */
static inline void rq_sizes_learn(rc_conn *c, uint64_t bytes)
{
    if (c->qsz_seen < SIZES_SEEN) /* only reaching it counts */
        c->qsz_seen++;
    else if (c->qsz_varied) /* sticky: the sizes are not read any more */
        return;
    for (uint8_t i = 0; i < c->qsz_n; i++)
        if (c->qsz[i] == bytes)
            return;
    if (c->qsz_n < RC_RQ_SIZES && bytes <= UINT32_MAX)
        c->qsz[c->qsz_n++] = (uint32_t)bytes;
    else
        c->qsz_varied = 1;
}

/* Can the reply starting now (its packet acknowledged rep_ack, it started
 * at start_us) answer e? with_time: capture time counts too (not for
 * certain entries: captures step back in time now and then, ACKs do not). */
static inline int reply_may_answer(const rc_conn *c, const rq_entry *e, int64_t start_us,
                                   int with_time)
{
    if (e->req_end > c->rep_ack)
        return 0;
    return !with_time || e->kind == RQK_LOST || e->cmd.req.ts_us <= start_us;
}

#endif /* SLOTSCOPE_PAIR_INTERNAL_H */
