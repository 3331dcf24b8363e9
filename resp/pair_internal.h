/*
 * pair_internal.h - what the pairing files of resp/ share (not a public
 * header; the decoders see only resp_internal.h).
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
 * path of pair_reply_done); the kinds whose reply has effects come last,
 * from RQK_MONITOR on, and of those the ones pair_reply_start looks at,
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
    RQK_EXEC,          /* from here on: pair_reply_start too */
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
void pair_emit(rc_conn *c, rq_slot *e, resp_outcome outcome);
void pair_pop_unanswered(rc_conn *c);
void pair_flush_no_reply_slow(rc_conn *c);
void pair_flush_all(rc_conn *c);

/* modes.c */
void request_modes(rc_conn *c, rq_entry *e);
void tx_undo(rc_conn *c, const rq_slot *h);

/* ring.c */
int pages_need_slow(resp_pipeline *rp, rq_pages *f, uint32_t n);
void pages_drop_slow(resp_pipeline *rp, rq_pages *f, uint32_t new_head);
void pages_release(resp_pipeline *rp, rq_pages *f);
void pages_free(resp_pipeline *rp, rq_pages *f);
void pages_pool_free(resp_pipeline *rp);

/* loss.c */
/* The name bytes a key takes, by name length: its first min(len, 8). */
extern const uint64_t size_key_mask[RESP_NAME_MAX];
rc_sizes *sizes_slot(rc_conn *c, uint64_t k);
void sizes_learn_change(rc_sizes *z, const resp_reply *r);
void rp_gap_give_up(rc_conn *c, uint32_t n);
void rp_gap_resolve(rc_conn *c, const uint8_t *p, size_t n, int64_t ts);
void rq_gap_resolve(rc_conn *c, const uint8_t *p, size_t n);

/* ---------------------------------------------------------------- ring (hot) */

/* ---------------------------------------------------------------- paged FIFOs (hot) */

/* The byte at position pos of f (held). */
static inline uint8_t *pages_at(const rq_pages *f, uint32_t pos)
{
    return f->page[(pos >> RQ_PAGE_SHIFT) & (f->cap - 1)] + (pos & (RQ_PAGE - 1));
}

/* Make the n bytes (n <= RQ_PAGE) after the tail fit in pages held.
 * Returns -1 if memory ran out. */
static inline int pages_need(resp_pipeline *rp, rq_pages *f, uint32_t n)
{
    if (f->end - f->tail >= n)
        return 0;
    return pages_need_slow(rp, f, n);
}

/* The head moves to new_head (<= tail): the pages it left go back. */
static inline void pages_drop_to(resp_pipeline *rp, rq_pages *f, uint32_t new_head)
{
    if (((new_head ^ f->head) >> RQ_PAGE_SHIFT) == 0)
        f->head = new_head;
    else
        pages_drop_slow(rp, f, new_head);
}

/* ---------------------------------------------------------------- ring (hot) */

/* The slot at position i of the FIFO (0 = head). Slots never straddle a
 * page (RQ_PAGE is a multiple of their size). */
static inline rq_slot *ring_at(rc_conn *c, uint32_t i)
{
    return (rq_slot *)(void *)pages_at(&c->ring, c->ring.head + i * (uint32_t)sizeof(rq_slot));
}

/* A slot after the queued ones, counted in (count + 1); NULL if memory ran
 * out. Its fields are the caller's to write: every one (slot_pack), or
 * after a memset (a lost request's). */
static inline rq_slot *ring_push(rc_conn *c)
{
    rq_pages *f = &c->ring;
    if (pages_need(c->rp, f, sizeof(rq_slot)) != 0)
        return NULL;
    rq_slot *e = (rq_slot *)(void *)pages_at(f, f->tail);
    f->tail += sizeof(rq_slot);
    c->count++;
    return e;
}

/* Remove the head (its text goes with it). */
static inline void ring_pop(rc_conn *c)
{
    const rq_slot *h = ring_at(c, 0);
    pages_drop_to(c->rp, &c->text, h->text_pos + h->text_len);
    pages_drop_to(c->rp, &c->ring, c->ring.head + (uint32_t)sizeof(rq_slot));
    c->count--;
    c->rp->inflight_total--;
}

/* ---------------------------------------------------------------- text (hot) */

/* Copy n bytes (n <= RQ_PAGE) to / from the text FIFO at position pos: at
 * most two pages. */
static inline void text_put(rc_conn *c, uint32_t pos, const void *src, size_t n)
{
    size_t first = RQ_PAGE - (pos & (RQ_PAGE - 1));
    if (n == 0)
        return; /* the position may be in no page held */
    if (n <= first) {
        memcpy(pages_at(&c->text, pos), src, n);
    } else {
        memcpy(pages_at(&c->text, pos), src, first);
        memcpy(pages_at(&c->text, pos + (uint32_t)first), (const uint8_t *)src + first, n - first);
    }
}
static inline void text_get(const rc_conn *c, uint32_t pos, void *dst, size_t n)
{
    size_t first = RQ_PAGE - (pos & (RQ_PAGE - 1));
    if (n == 0)
        return;
    if (n <= first) {
        memcpy(dst, pages_at(&c->text, pos), n);
    } else {
        memcpy(dst, pages_at(&c->text, pos), first);
        memcpy((uint8_t *)dst + first, pages_at(&c->text, pos + (uint32_t)first), n - first);
    }
}

/* Pack the request just decoded (e, with its pairing facts) into slot s,
 * its text at the text FIFO's tail. Returns -1 if memory ran out. */
static inline int slot_pack(rc_conn *c, rq_slot *s, const rq_entry *e)
{
    const resp_request *r = &e->cmd.req;
    uint32_t nargs = r->nargs < RESP_ARG_KEEP ? r->nargs : RESP_ARG_KEEP;
    uint32_t need = e->name_len, pos;
    for (uint32_t i = 0; i < nargs; i++)
        need += r->arg_len[i];
    int dup = r->key0_len == 0 ||
              (nargs > 0 && r->key0_len <= r->arg_len[0] &&
               memcmp(r->key0, r->args[0], r->key0_len) == 0);
    if (!dup)
        need += r->key0_len;
    if (pages_need(c->rp, &c->text, need) != 0)
        return -1;
    pos = c->text.tail;
    s->text_pos = pos;
    s->text_len = (uint16_t)need;
    text_put(c, pos, r->name, e->name_len);
    pos += e->name_len;
    for (uint32_t i = 0; i < nargs; i++) {
        text_put(c, pos, r->args[i], r->arg_len[i]);
        pos += r->arg_len[i];
    }
    if (!dup)
        text_put(c, pos, r->key0, r->key0_len);
    c->text.tail = pos + (dup ? 0 : r->key0_len);
    s->nreply = e->nreply;
    s->kind = e->kind;
    s->keep = e->keep;
    s->got_reply = e->got_reply;
    s->dynamic = e->dynamic;
    s->sub_word = e->sub_word;
    s->hello_proto = e->hello_proto;
    s->uncertain = e->uncertain;
    s->name_len = e->name_len;
    s->tx = e->tx;
    s->in_multi = e->cmd.in_multi;
    s->key0_dup = (uint8_t)dup;
    s->nargs = (uint8_t)nargs;
    s->argc = r->argc;
    s->req_end = e->req_end;
    memcpy(&s->tx_elems, &e->tx_elems, sizeof(s->tx_elems)); /* the whole union */
    s->seq = e->cmd.seq;
    s->nkeys = r->nkeys;
    s->ts_us = r->ts_us;
    s->start_us = r->start_us;
    s->start_frame = r->start_frame;
    s->bytes = r->bytes;
    s->slot = r->slot;
    s->key0_full_len = r->key0_full_len;
    s->inline_cmd = r->inline_cmd;
    s->gap = r->gap;
    s->slot_unknown = r->slot_unknown;
    s->multi_slot = r->multi_slot;
    s->key0_len = r->key0_len;
    memcpy(s->arg_len, r->arg_len, sizeof(s->arg_len));
    memcpy(s->arg_full_len, r->arg_full_len, sizeof(s->arg_full_len));
    return 0;
}

/* The command of slot s, unpacked into the pipeline's out buffer (its
 * reply is left to the caller). Bytes past a kept length are those of an
 * earlier command (never a credential: those are not kept). */
static inline resp_command *slot_unpack(rc_conn *c, const rq_slot *s)
{
    resp_command *cmd = &c->rp->out;
    resp_request *r = &cmd->req;
    uint32_t pos = s->text_pos;
    cmd->conn = c->cc;
    cmd->conn_word = c->conn_word;
    cmd->seq = s->seq;
    cmd->in_multi = s->in_multi;
    r->start_us = s->start_us;
    r->ts_us = s->ts_us;
    r->start_frame = s->start_frame;
    text_get(c, pos, r->name, s->name_len);
    r->name[s->name_len] = '\0';
    pos += s->name_len;
    r->argc = s->argc;
    r->nkeys = s->nkeys;
    r->bytes = s->bytes;
    r->slot = s->slot;
    r->key0_full_len = s->key0_full_len;
    r->inline_cmd = s->inline_cmd;
    r->nargs = s->nargs;
    r->gap = s->gap;
    r->slot_unknown = s->slot_unknown;
    r->multi_slot = s->multi_slot;
    r->key0_len = s->key0_len;
    memcpy(r->arg_len, s->arg_len, sizeof(r->arg_len));
    memcpy(r->arg_full_len, s->arg_full_len, sizeof(r->arg_full_len));
    for (uint32_t i = 0; i < s->nargs; i++) {
        text_get(c, pos, r->args[i], s->arg_len[i]);
        pos += s->arg_len[i];
    }
    if (s->key0_dup)
        memcpy(r->key0, r->args[0], s->key0_len);
    else
        text_get(c, pos, r->key0, s->key0_len);
    r->end_pos = s->req_end;
    return cmd;
}

/* ---------------------------------------------------------------- queue (hot) */

/* Does a queued request expect no reply at all (it is emitted as soon as it
 * reaches the head)? Fixed when it is queued: only the head's nreply changes
 * later, and the head is emitted when it reaches 0. */
static inline int expects_no_reply(const rq_slot *e)
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

/* The key of a command: its name (name_len bytes), argc. */
static inline uint64_t size_key_of(const char *name, uint8_t name_len, uint32_t argc)
{
    uint64_t k;
    memcpy(&k, name, sizeof k);
    k &= size_key_mask[name_len]; /* bytes past the name may be stale */
    return k ^ ((uint64_t)name_len << 56) ^ ((uint64_t)(argc & 0xffff) << 40);
}

/* A reply of r->bytes paired with the request q (name_len bytes of name):
 * remember its size. Only whether a slot was seen SIZES_SEEN times counts
 * (seen stops there), and a varied slot stays so: a slot past both tests
 * changes no more, and one that saw its latest size again changes only by
 * a varied reply. Those two, the common cases, return here. */
static inline void sizes_learn(rc_conn *c, const resp_request *q, uint8_t name_len,
                               const resp_reply *r)
{
    uint64_t k = size_key_of(q->name, name_len, q->argc);
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
static inline int reply_may_answer(const rc_conn *c, const rq_slot *e, int64_t start_us,
                                   int with_time)
{
    if (e->req_end > c->rep_ack)
        return 0;
    return !with_time || e->kind == RQK_LOST || e->ts_us <= start_us;
}

#endif /* SLOTSCOPE_PAIR_INTERNAL_H */
