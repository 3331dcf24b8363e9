/*
 * pair.c - which reply answers which request.
 *
 * A Redis server answers the requests of one connection in the order it
 * received them, one reply each, so pairing is a FIFO per connection: a ring
 * of in-flight requests (pipelining of any depth, bounded by max_inflight per
 * connection and max_inflight_total overall). The exceptions a real server
 * produces, and how they are handled here:
 *
 *   - no reply by design: CLIENT REPLY OFF (nothing until CLIENT REPLY ON, whose
 *     +OK is sent), CLIENT REPLY SKIP (the next command), REPLCONF ACK. These
 *     commands are emitted as RESP_NO_REPLY, in their place in the order.
 *   - MULTI: queued commands get +QUEUED (or an error such as -MOVED at queue
 *     time), EXEC gets one array (or -EXECABORT, or a null when WATCH failed):
 *     still one reply per request. Queued CLIENT REPLY and HELLO act only
 *     when EXEC runs them, as the server does: EXEC's array may then carry
 *     fewer elements than it declares, or none come loose (see the
 *     transactions section below).
 *   - pub/sub: SUBSCRIBE/PSUBSCRIBE/SSUBSCRIBE and their UNSUBSCRIBE get one
 *     confirmation per channel argument (["subscribe", ch, count]); without
 *     arguments, UNSUBSCRIBE gets one per channel subscribed (one with a null
 *     channel when none), tracked from the counts the server reports. In RESP2
 *     subscribed mode, arrays starting with "message", "pmessage", "smessage"
 *     (and unsolicited confirmations, e.g. "sunsubscribe" when a shard slot
 *     moves) are pushes; PING's ["pong", ""] is a reply. In RESP3 confirmations
 *     and messages are '>' pushes; a '>' matching the pending (un)subscribe is
 *     its confirmation, any other '>' (client-tracking "invalidate", messages)
 *     is never paired.
 *   - MONITOR: after its +OK, simple strings shaped like a monitor line
 *     ("<secs>.<usecs> [db addr] ...") are pushes.
 *   - HELLO 2/3 switches the protocol when it succeeds; RESET returns to RESP2
 *     and leaves MULTI, pub/sub, MONITOR and CLIENT REPLY OFF; QUIT gets +OK.
 *   - PSYNC/SYNC: after the reply the server streams an RDB and the command
 *     stream, which are not replies: that direction is no longer decoded.
 *
 * Losing the pairing. A capture gap that falls inside a bulk payload of
 * known length is not a loss: the decoders skip it by the declared length
 * (rq_skip_gap, rp_skip_gap). After any other gap or malformed bytes, or a request dropped at
 * the in-flight cap, nobody can know how many replies are owed for requests
 * that were not seen. The connection is marked out of sync. A loss on the
 * server side (or at the cap) gives up every request in flight (emitted as
 * RESP_UNANSWERED, counted unpaired): their replies may have been in the lost
 * bytes. A loss on the client side keeps the requests already queued: they
 * came before it and are answered first. Either way, pairing resumes only on
 * solid ground: a request that starts when both decoders are at message
 * boundaries, no request is waiting, and the server has completed a reply
 * that no certain request was waiting for. Requests decoded before that are
 * still matched positionally (to keep the queue in step) but emitted as
 * RESP_UNANSWERED, their replies counted as unpaired. A connection picked up
 * mid-stream starts in that state without being counted as out of sync,
 * unless its request stream starts cleanly at a message boundary (see
 * pair_clean_start). Before all this, a gap the sizes account for, checked
 * by ACK numbers, keeps the pairing (see "loss" below); and a reply whose
 * packet had not acknowledged the head request is never matched to it.
 * Known limit: after a loss that is not accounted for, a client that
 * pipelines across it and sends a new request between two owed replies
 * whose packets acknowledged it can still be paired one off; nothing in the
 * bytes tells those cases apart. Known limits of the
 * transaction modes (see below): a HELLO queued in MULTI is taken to succeed
 * when EXEC runs (its element is not checked); a transaction holding CLIENT
 * REPLY that turns out not to run (EXECABORT, WATCH) while requests were
 * pipelined after its EXEC loses the pairing (counted out of sync); with
 * replies off before MULTI nothing tells whether EXEC ran, it is taken to.
 */
#include <stddef.h>
#include <stdlib.h>

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
static const char *const sub_words[SW_COUNT] = {
    "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"
};

/* ---------------------------------------------------------------- config */

void resp_config_defaults(resp_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_depth = 64;
    cfg->max_inflight = 100000;
    cfg->max_inflight_total = 1000000;
    cfg->max_line = 64 * 1024;
    cfg->max_kept_reply = 4u << 20;
    cfg->max_kept_total = 64u << 20;
    cfg->key_fn = NULL;
    cfg->key_ctx = NULL;
    cfg->max_bulk_request = 512ull << 20;
    cfg->max_bulk_reply = 1ull << 40;
    cfg->max_bus_message = 64u << 10;
}

int resp_keep_reply(const resp_request *req)
{
    if (req == NULL || req->name[0] != 'C' || req->nargs < 1 || strcmp(req->name, "CLUSTER") != 0)
        return 0;
    const uint8_t *a = (const uint8_t *)req->args[0];
    size_t n = req->arg_len[0];
    return rd_eq_ci(a, n, "SLOTS") || rd_eq_ci(a, n, "SHARDS") || rd_eq_ci(a, n, "NODES");
}

/* ---------------------------------------------------------------- ring */

/* The entry at position i of the FIFO (0 = head). */
static inline rq_entry *ring_at(rc_conn *c, uint32_t i)
{
    return &c->ring[(c->head + i) & (c->ring_cap - 1)];
}

/* Make an entry fit for use. Zeroed: the argument prefixes are not cleared
 * per request, so an entry must never hold stale heap bytes (they could be
 * anyone's payload). The reply's error text and redirection start out
 * cleared, as emit keeps them. */
static void entry_init(rq_entry *e)
{
    memset(e, 0, sizeof(*e));
    e->cmd.reply.redir.slot = -1;
}

/* n in-flight entries, on cache-line boundaries (an entry is a whole number
 * of lines: the fields a command touches fall on as few lines as the layout
 * allows, whatever the entry's place in its ring), NOT initialised: a ring
 * initialises each entry when it first hands it out (ring_fresh), so a ring
 * grown for a burst makes resident only the entries the burst used, not the
 * whole doubled capacity. NULL on out of memory. Free with free(). */
static rq_entry *entries_alloc(size_t n)
{
    if (n > SIZE_MAX / sizeof(rq_entry))
        return NULL;
    return aligned_alloc(_Alignof(rq_entry), n * sizeof(rq_entry));
}

/* One initialised entry (the overflow scratch, the pipeline's spare). */
static rq_entry *entry_new(void)
{
    rq_entry *e = entries_alloc(1);
    if (e != NULL)
        entry_init(e);
    return e;
}

/* The ring's entries are about to move to new_ring (its head at index 0),
 * or to be freed (NULL). The reply being decoded moves with its entry, the
 * head (see pair_reply_start); a pointer to any other entry is one to a
 * reply already handed over, which nothing writes again: it goes back to
 * the scratch. */
static void rep_rebase(rc_conn *c, rq_entry *new_ring)
{
    if (c->rep == &c->reply)
        return;
    if (new_ring != NULL && c->count > 0 && c->rep == &ring_at(c, 0)->cmd.reply)
        c->rep = &new_ring[0].cmd.reply;
    else
        c->rep = &c->reply;
}

/* Move the queued entries to a new ring of ncap entries (a power of two, at
 * least count). Returns -1 if memory ran out (the old ring stays). */
static int ring_resize(rc_conn *c, uint32_t ncap)
{
    rq_entry *nr = entries_alloc(ncap);
    if (nr == NULL)
        return -1;
    for (uint32_t i = 0; i < c->count; i++)
        memcpy(&nr[i], ring_at(c, i), sizeof(*nr));
    rep_rebase(c, nr);
    free(c->ring);
    c->ring = nr;
    c->ring_cap = ncap;
    c->head = 0;
    c->rp->ring_resident += (uint64_t)c->count - c->ring_fresh;
    c->ring_fresh = c->count; /* the copies are initialised, the rest not */
    return 0;
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
static rq_entry *ring_next_free(rc_conn *c)
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

/* Make room for one more entry after the queued ones. Returns -1 if memory
 * ran out. Capacities are powers of two. */
static int ring_reserve(rc_conn *c)
{
    if (c->ring != NULL && c->count + 1 <= c->ring_cap)
        return 0;
    /* most connections: 1; after a shrink, back to the size it had */
    uint32_t ncap = c->ring_cap ? c->ring_cap * 2 : 2;
    return ring_resize(c, ncap);
}

/* Free a drained ring. */
static void ring_release(rc_conn *c)
{
    rep_rebase(c, NULL);
    free(c->ring);
    c->rp->ring_resident -= c->ring_fresh;
    c->ring = NULL;
    c->ring_cap = 0;
    c->ring_fresh = 0;
    c->head = 0;
    c->ring_hw = 0;
    c->ring_win = 0;
    c->rp->ring_shrinks++;
}

/* Give memory back after a burst: a ring only ever grows while requests are
 * queued, so without this it would keep the deepest pipeline a connection
 * ever had (and the memory would grow with the length of the capture).
 *
 * Once a window of RING_WINDOW x ring_cap requests has passed, a ring whose
 * queue never got deeper than a quarter of its capacity in that window is
 * cut to twice that depth (at least RING_KEEP entries). Nothing else ever
 * shrinks a ring, not even draining it: a connection that fills its ring
 * and empties it again and again (a stream nobody answers, cut at the
 * in-flight cap; bursts) keeps one ring instead of growing and giving back
 * its memory each time, which cost a copy and page faults per round. The
 * window and the factor four between growing and shrinking make the copies
 * amortised: at most one resize per window, never per command. But the
 * entries all rings hold (touched, so resident) stay within one
 * connection's in-flight cap (max_inflight): past it, a drained ring is
 * freed, or rings kept after their bursts would add up beyond what is in
 * flight (several streams nobody answers would each keep a full ring). */
static void ring_maybe_shrink(rc_conn *c)
{
    if (c->ring_cap <= RING_KEEP)
        return;
    if (c->count == 0 && c->rp->ring_resident > c->rp->cfg.max_inflight) {
        ring_release(c);
        return;
    }
    if (c->ring_win < (uint64_t)RING_WINDOW * c->ring_cap)
        return;
    uint32_t need = c->ring_hw > c->count + 1 ? c->ring_hw : c->count + 1;
    if ((uint64_t)need * 4 <= c->ring_cap) {
        uint32_t ncap = RING_KEEP;
        while (ncap < 2 * need)
            ncap *= 2;
        if (ncap < c->ring_cap && ring_resize(c, ncap) == 0)
            c->rp->ring_shrinks++;
    }
    c->ring_hw = 0;
    c->ring_win = 0;
}

/* Remove the head. */
static inline void ring_pop(rc_conn *c)
{
    c->head = (c->head + 1) & (c->ring_cap - 1);
    c->count--;
    c->rp->inflight_total--;
}

/* ---------------------------------------------------------------- emit */

/* Reset a reply to "none". */
static void reply_clear(resp_reply *r)
{
    memset(r, 0, sizeof(*r));
    r->redir.slot = -1;
}

/* Reset a reply to "none", started at ts, but for its error text and
 * redirection: an in-flight entry's are already cleared (see emit), and the
 * reply being decoded has them read only once an error reply sets them. */
static inline void reply_reset_fields(resp_reply *r, int64_t ts)
{
    r->start_us = ts;
    r->ts_us = ts;
    r->end_frame = 0;
    r->type = RESP_T_NONE;
    r->err = RESP_ERR_NONE;
    r->integer = 0;
    r->elements = 0;
    r->bytes = 0;
    r->end_pos = 0;
    r->raw = NULL;
    r->raw_len = 0;
    r->gap = 0;
}

/* Clear an entry's error text and redirection (see emit). */
static void reply_clear_error(resp_reply *r)
{
    r->errtext[0] = '\0';
    r->redir.slot = -1;
    r->redir.port = 0;
    r->redir.host[0] = '\0';
}

/* Copy the reply decoded into the scratch (c->reply: no request waited for
 * it when it started) into the entry that it answers after all (a request
 * seen after its reply began: rare).
 *
 * The reply's fields were written a moment ago one by one (pair_reply_start,
 * the decoder); copying two neighbours with one wide load (gcc's SLP
 * vectorizer pairs them) makes the load wait for both stores to reach the
 * cache instead of forwarding from the store buffer. So gcc copies them one
 * at a time here. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-slp-vectorize")))
#endif
static PAIR_RARE void reply_copy(resp_reply *dst, const resp_reply *src)
{
    dst->start_us = src->start_us;
    dst->ts_us = src->ts_us;
    dst->end_frame = src->end_frame;
    dst->type = src->type;
    dst->err = src->err;
    if (src->err != RESP_ERR_NONE) {
        memcpy(dst->errtext, src->errtext, sizeof(dst->errtext));
        dst->redir = src->redir;
    }
    dst->integer = src->integer;
    dst->elements = src->elements;
    dst->bytes = src->bytes;
    dst->end_pos = src->end_pos;
    dst->gap = src->gap;
    dst->nokey = src->nokey;
    dst->raw = NULL;
    dst->raw_len = 0;
}

/* An entry the reply decoder writes into (c->rep) is emitted without its
 * reply, or its reply is not the command's (a push, a loose reply of EXEC):
 * a reply still being decoded moves to the scratch, and the entry's error
 * text and redirection go back to cleared. */
static PAIR_RARE void reply_detach(rc_conn *c, resp_reply *r)
{
    if (c->rpd.in_msg)
        c->reply = *r;
    c->rep = &c->reply;
    reply_clear_error(r);
}

static void emit(rc_conn *c, rq_entry *e, resp_outcome outcome);
static inline int expects_no_reply(const rq_entry *e);

static inline int subscribed(const rc_conn *c);
static void rp_gap_give_up(rc_conn *c, uint32_t n);

/* ---------------------------------------------------------------- sizes
 *
 * What a gap can be counted with (see "loss" below): the sizes the replies
 * of each command have had on this connection, and the sizes of its
 * requests. A command is keyed by its name, the name's length and argc
 * (SET k v and SET k v GET are different commands here). */

/* Replies (requests) of a command (connection) seen before its sizes are
 * taken as predictable. */
#define SIZES_SEEN 8

/* The key of e's command. */
static inline uint64_t size_key(const rq_entry *e)
{
    uint64_t k;
    memcpy(&k, e->cmd.req.name, sizeof k);
    if (e->name_len < 8) /* bytes past the name may be stale */
        k &= ((uint64_t)1 << (8 * e->name_len)) - 1;
    return k ^ ((uint64_t)e->name_len << 56) ^ ((uint64_t)(e->cmd.req.argc & 0xffff) << 40);
}

/* A reply of r->bytes paired with e: remember its size. */
static inline void sizes_learn(rc_conn *c, const rq_entry *e, const resp_reply *r)
{
    uint64_t k = size_key(e);
    rc_sizes *z = NULL;
    for (int i = 0; i < RC_SIZE_SLOTS; i++) {
        if (c->rsz[i].key == k && c->rsz[i].seen != 0) {
            z = &c->rsz[i];
            break;
        }
    }
    if (z == NULL) {
        z = &c->rsz[c->rsz_next++ % RC_SIZE_SLOTS];
        memset(z, 0, sizeof(*z));
        z->key = k;
    }
    if (z->seen < UINT16_MAX)
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
}

/* The sizes e's reply may have: 1 or 2 of them in out, or 0 when they are
 * not predictable (a command seen fewer than SIZES_SEEN times, with more
 * than two sizes or an integer other than 0 and 1, or not a plain one). */
static int sizes_of(const rc_conn *c, const rq_entry *e, uint32_t out[2])
{
    if (e->kind != RQK_NORMAL || e->nreply != 1 || e->uncertain || e->keep)
        return 0;
    uint64_t k = size_key(e);
    for (int i = 0; i < RC_SIZE_SLOTS; i++) {
        const rc_sizes *z = &c->rsz[i];
        if (z->key == k && z->seen >= SIZES_SEEN && !z->varied && z->n > 0) {
            out[0] = z->size[0];
            out[1] = z->size[1];
            return z->n;
        }
    }
    return 0;
}

/* A request of `bytes` was decoded: remember its size. */
static inline void rq_sizes_learn(rc_conn *c, uint64_t bytes)
{
    if (c->qsz_seen < UINT16_MAX)
        c->qsz_seen++;
    for (uint8_t i = 0; i < c->qsz_n; i++)
        if (c->qsz[i] == bytes)
            return;
    if (c->qsz_n < RC_RQ_SIZES && bytes <= UINT32_MAX)
        c->qsz[c->qsz_n++] = (uint32_t)bytes;
    else
        c->qsz_varied = 1;
}

/* Pop the head unanswered: emitted as such (or, expecting nothing, as
 * RESP_NO_REPLY), unless it stands for a request lost in a gap. */
static void pop_unanswered(rc_conn *c)
{
    rq_entry *h = ring_at(c, 0);
    if (h->kind != RQK_LOST)
        emit(c, h, expects_no_reply(h) ? RESP_NO_REPLY : RESP_UNANSWERED);
    ring_pop(c);
}

/* The last step of emit: the sink gets the command; the entry's error text
 * and redirection go back to cleared (see emit). */
static inline void emit_to_sink(rc_conn *c, resp_command *cmd)
{
    resp_pipeline *rp = c->rp;
    rp->closed.commands++;
    if (rp->sink.command != NULL)
        rp->sink.command(rp->sink.ctx, cmd);
    if (cmd->reply.err != RESP_ERR_NONE)
        reply_clear_error(&cmd->reply);
}

/* emit for a request paired with certainty (outcome RESP_OK). Inline: the
 * common path of pair_reply_done calls it. */
static inline void emit_paired(rc_conn *c, rq_entry *e)
{
    resp_command *cmd = &e->cmd;
    resp_reply *dst = &cmd->reply;
    cmd->outcome = RESP_OK;
    cmd->resp3 = c->resp3;
    if (c->rep != dst)
        reply_copy(dst, c->rep);
    if (e->got_reply)
        dst->start_us = e->first_reply_us;
    if (e->keep && c->keeping && !c->keep_over) {
        dst->raw = c->keep;
        dst->raw_len = c->keep_len;
    }
    sizes_learn(c, e, dst);
    c->st.paired++;
    emit_to_sink(c, cmd);
}

/* Hand one command to the sink. outcome RESP_OK: with the reply just
 * decoded, which the decoder wrote into the entry itself (pair_reply_start)
 * or, rarely, into the scratch.
 *
 * An entry's reply.errtext and reply.redir are kept cleared ("", slot -1,
 * port 0, host "") except while an error reply is being decoded into it or
 * is in the sink's hands: they lie on lines of their own (past the other
 * reply fields), which most commands then never touch. */
static void emit(rc_conn *c, rq_entry *e, resp_outcome outcome)
{
    resp_command *cmd = &e->cmd;
    if (outcome == RESP_OK) {
        if (!e->uncertain) {
            emit_paired(c, e);
            return;
        }
        outcome = RESP_UNANSWERED; /* a reply came, but whose is not known */
        c->st.unpaired_replies++;
    }
    cmd->outcome = outcome;
    cmd->resp3 = c->resp3;
    if (c->rep == &cmd->reply)
        reply_detach(c, &cmd->reply);
    reply_reset_fields(&cmd->reply, 0);
    if (outcome == RESP_UNANSWERED)
        c->st.unpaired_requests++;
    emit_to_sink(c, cmd);
}

/* Does a queued request expect no reply at all (it is emitted as soon as it
 * reaches the head)? Fixed when it is queued: only the head's nreply changes
 * later, and the head is emitted when it reaches 0. */
static inline int expects_no_reply(const rq_entry *e)
{
    return e->nreply == 0 && !e->dynamic;
}

/* Emit requests at the head that expect no reply (slow part). */
static void flush_no_reply_slow(rc_conn *c)
{
    while (c->count > 0) {
        rq_entry *h = ring_at(c, 0);
        if (!expects_no_reply(h))
            break;
        emit(c, h, RESP_NO_REPLY);
        ring_pop(c);
        c->noreply_queued--;
    }
}

/* Emit requests at the head that expect no reply. Called after every request
 * and reply: the count of such requests in the queue settles the common case
 * (none) without reading the head entry, which for a pipelined connection
 * is a line likely out of the cache. */
static inline void flush_no_reply(rc_conn *c)
{
    if (c->noreply_queued != 0)
        flush_no_reply_slow(c);
}

/* Emit every queued request as unanswered (no-reply ones as such). */
static void flush_all(rc_conn *c)
{
    while (c->count > 0)
        pop_unanswered(c);
    c->noreply_queued = 0;
}

/* ---------------------------------------------------------------- sync */

/* Replies were lost (a gap or garbage on the server side): any request in
 * flight may have been answered in the lost bytes, so all are given up. */
void pair_lost(rc_conn *c)
{
    c->rp_gap_pending = 0;
    c->st.out_of_sync = 1;
    c->synced = 0;
    c->reply_since_loss = 0;
    c->keeping = 0;
    flush_all(c);
}

/* Requests were lost (a gap or garbage on the client side). The requests
 * already queued came before the loss and the server answers them first, in
 * order, so they stay and will pair. After them come an unknown number of
 * replies for what was lost: requests decoded from now on are uncertain until
 * solid ground. */
void pair_lost_requests(rc_conn *c)
{
    if (c->rp_gap_pending) { /* its requests are not certain any more */
        c->rp_gap_pending = 0;
        rp_gap_give_up(c, c->rp_gap_queued);
    }
    c->st.out_of_sync = 1;
    c->synced = 0;
    c->reply_since_loss = 0;
}

/* A connection picked up mid-stream whose request stream starts exactly at a
 * message boundary (nothing skipped on either side, nothing decoded yet):
 * pairing is trusted from its first request. The case this gets wrong, a
 * client with pipelined requests still unanswered when the capture started
 * exactly between two of its requests, is counted by nothing and is the price
 * of not losing the first command of every such capture. */
void pair_clean_start(rc_conn *c)
{
    const rp_dec *d = &c->rpd;
    int reply_side_clean = (d->state == RP_TYPE && !d->in_msg) ||
                           (d->state == RP_RESYNC && d->rs.seen == 0);
    if (!c->synced && !c->cc->saw_syn && c->st.requests == 0 && c->st.skipped_bytes == 0 &&
        c->st.protocol_errors == 0 && !c->st.out_of_sync && c->count == 0 && reply_side_clean)
        c->synced = 1;
}

void pair_limit_hit(rc_conn *c)
{
    c->rp->closed.limit_hits++;
}

/* Solid ground: a request starts while nothing is owed that we know of, both
 * decoders are at boundaries and the server has spoken since the loss. */
static void try_regain_sync(rc_conn *c)
{
    const rp_dec *d = &c->rpd;
    if (c->count == 0 && c->reply_since_loss && !d->in_msg &&
        (d->state == RP_TYPE || d->state == RP_SINK))
        c->synced = 1;
}

/* ---------------------------------------------------------------- mid-stream replication */

/*
 * A replication link picked up without its PSYNC. A replica sends its master
 * REPLCONF ACK <offset> every second and nothing else; its master sends the
 * stream of write commands (PINGs, now and then REPLCONF GETACK *) and gets
 * no reply. On a connection picked up mid-stream that has paired nothing
 * yet (repl_watch), whole messages tell (never the chunking):
 *   - a REPLCONF ACK request, or a REPLCONF GETACK "reply": the link,
 *     oriented right. The master's side is not decoded from then on, and
 *     what it had sent that was counted as replies was its stream.
 *   - a REPLCONF ACK "reply", on a connection that only the shape of its
 *     first bytes or the port order oriented: the link the wrong way round
 *     (the master spoke first, its commands looked like requests). The
 *     master's commands queued as requests are dropped unemitted, and
 *     neither side is decoded from then on.
 */

/* The master's side is a replication stream from now on. */
static PAIR_RARE void repl_found(rc_conn *c, int mid)
{
    c->repl_watch = 0;
    c->repl_mid = (uint8_t)mid;
    c->replication = 1;
    c->st.replication = 1;
    c->st.replication_midstream = 1;
    /* Nothing was paired (repl_watch): the replies counted so far were the
     * master's stream (when it spoke before the replica's first ACK). */
    c->st.unpaired_replies = 0;
    c->st.replies = 0;
    if (c->rep != &c->reply)
        reply_detach(c, c->rep); /* a reply half decoded into an entry */
    rp_sink(c);
    if (mid != REPL_MID_CLIENT)
        return;
    /* What was queued was the master's stream, not requests. */
    c->st.replication_reversed = 1;
    c->st.replication_skipped += c->count;
    c->st.requests -= c->count; /* decoded, never emitted */
    c->rp->inflight_total -= c->count;
    c->count = 0;
    c->noreply_queued = 0;
    c->head = 0;
    c->rq.in_msg = 0;
    c->rep = &c->reply;
}

/* A whole reply on a watched connection: 1 when it was a replication link's
 * REPLCONF (the link is then recognised; the reply is not paired). */
static PAIR_RARE int repl_reply(rc_conn *c)
{
    const rp_dec *d = &c->rpd;
    int weak = c->cc->side_source == CAP_SIDE_SHAPE || c->cc->side_source == CAP_SIDE_GUESS;
    if (c->st.paired > 0) { /* a reply answered a request: a client's */
        c->repl_watch = 0;
        return 0;
    }
    if (c->rep->type != RESP_T_ARRAY || !d->elem0_set || !d->elem1_set ||
        !rd_eq_ci(d->elem0, d->elem0_len, "REPLCONF"))
        return 0;
    if (rd_eq_ci(d->elem1, d->elem1_len, "GETACK")) {
        repl_found(c, REPL_MID_SERVER);
        return 1;
    }
    if (weak && rd_eq_ci(d->elem1, d->elem1_len, "ACK")) {
        repl_found(c, REPL_MID_CLIENT);
        return 1;
    }
    return 0;
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
 *     connection whose requests have had at most RC_RQ_SIZES sizes: when
 *     exactly one count m of such requests fills it, m requests were lost;
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

/* Sorted, distinct sums below or at max: add v to each of a[0..n) for
 * each v in vals, into out. Returns the count, or -1 when it would pass
 * LOSS_SUMS (too many: not counted). */
static int sums_step(const uint32_t *a, int n, const uint32_t *vals, int nv, uint32_t max,
                     uint32_t *out)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < nv; j++) {
            uint64_t v = (uint64_t)a[i] + vals[j];
            if (v > max)
                continue;
            int at = k;
            while (at > 0 && out[at - 1] > v)
                at--;
            if (at > 0 && out[at - 1] == v)
                continue;
            if (k == LOSS_SUMS)
                return -1;
            memmove(out + at + 1, out + at, (size_t)(k - at) * sizeof(*out));
            out[at] = (uint32_t)v;
            k++;
        }
    }
    return k;
}

/* Is v in the sorted a[0..n)? */
static int sums_has(const uint32_t *a, int n, uint32_t v)
{
    for (int i = 0; i < n && a[i] <= v; i++)
        if (a[i] == v)
            return 1;
    return 0;
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

/* The counts d of lost replies a reply gap of len bytes allows, from the
 * sizes alone, into cand (at most 8). Returns how many, or -1 when too
 * many to say. */
static int rp_gap_candidates(const rc_conn *c, uint64_t len, uint32_t *cand)
{
    uint32_t a[LOSS_SUMS], b[LOSS_SUMS];
    int n = 1, ncand = 0, known = 1;
    a[0] = 0;
    if (len > LOSS_MAX_GAP)
        return -1;
    for (uint32_t d = 1; d <= c->count; d++) {
        const rq_entry *e = ring_at((rc_conn *)c, d - 1);
        uint32_t sz[2];
        int nz = sizes_of(c, e, sz);
        if (nz == 0)
            known = 0;
        if (known) {
            n = sums_step(a, n, sz, nz, (uint32_t)len, b);
            if (n < 0)
                return -1;
            memcpy(a, b, (size_t)n * sizeof(*a));
            if (n == 0)
                break; /* every sum passed the gap */
        } else if ((uint64_t)d * 3 > len) {
            break; /* no reply is shorter than 3 bytes ("+\r\n") */
        }
        if (!known || sums_has(a, n, (uint32_t)len)) {
            if (ncand == 8)
                return -1;
            cand[ncand++] = d;
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
        const rq_entry *e = ring_at(c, i);
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
        pop_unanswered(c);
    flush_no_reply(c);
    c->anchored++;
}

/* The first n queued requests, which a reply gap may have answered, are
 * given up; the rest stay uncertain (pair_lost for the first n only). */
static void rp_gap_give_up(rc_conn *c, uint32_t n)
{
    c->st.out_of_sync = 1;
    c->synced = 0;
    c->reply_since_loss = 0;
    c->keeping = 0;
    for (uint32_t i = 0; i < n && c->count > 0; i++)
        pop_unanswered(c);
    if (c->count == 0)
        c->noreply_queued = 0;
    rp_lost(c, 1);
}

void pair_reply_gap(rc_conn *c, uint64_t len)
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
            rp_lost(c, 1);
            c->anchored++;
            return;
        }
        uint32_t cand[8];
        int n = queue_one_reply_each(c) ? rp_gap_candidates(c, len, cand) : -1;
        if (n >= 1) { /* settled by the first reply after it (or not) */
            memcpy(c->rp_cand, cand, (size_t)n * sizeof(*cand));
            c->rp_ncand = (uint8_t)n;
            c->rp_gap_queued = c->count;
            c->rp_gap_pending = 1;
            /* requests from now on are uncertain until it is settled */
            c->synced = 0;
            c->reply_since_loss = 0;
            return;
        }
    }
    if (c->rp_gap_pending) {
        c->rp_gap_pending = 0;
        rp_gap_give_up(c, c->rp_gap_queued);
        return;
    }
    rp_lost(c, 1);
    pair_lost(c);
}

/* The first reply bytes after a pending reply gap: p[0..n), their packet
 * captured at ts. Keep the counts the next reply allows: it must start
 * right after the gap (a type byte) and be able to answer the request
 * after the lost ones. One left: anchored; else the gap is a loss. */
static void rp_gap_resolve(rc_conn *c, const uint8_t *p, size_t n, int64_t ts)
{
    c->rp_gap_pending = 0;
    uint32_t keep = 0, d = 0;
    int type_ok = n > 0 && (p[0] == '+' || p[0] == '-' || p[0] == ':' || p[0] == '$' ||
                            p[0] == '*' || p[0] == '_' || p[0] == ',' || p[0] == '#' ||
                            p[0] == '!' || p[0] == '=' || p[0] == '(' || p[0] == '%' ||
                            p[0] == '~' || p[0] == '|');
    uint64_t saved = c->rep_ack;
    c->rep_ack = c->ev_ack;
    for (int i = 0; type_ok && i < c->rp_ncand; i++) {
        uint32_t k = c->rp_cand[i];
        if (k < c->count && !reply_may_answer(c, ring_at(c, k), ts, 1))
            continue;
        keep++;
        d = k;
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
    rp_gap_anchor(c, d);
}

/* How many requests of the sizes seen fill len bytes: 1 with *m set when
 * exactly one count at least min_m does. */
static int rq_gap_count(const rc_conn *c, uint64_t len, uint32_t min_m, uint32_t *m)
{
    uint32_t a[LOSS_SUMS], b[LOSS_SUMS];
    int n = 1, found = 0;
    a[0] = 0;
    if (len > LOSS_MAX_GAP || c->qsz_n == 0)
        return 0;
    for (uint32_t k = 1; n > 0; k++) {
        n = sums_step(a, n, c->qsz, c->qsz_n, (uint32_t)len, b);
        if (n < 0)
            return 0;
        memcpy(a, b, (size_t)n * sizeof(*a));
        if (k >= min_m && sums_has(a, n, (uint32_t)len)) {
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
    c->rq_lost_bytes += len;
    if (len == 0)
        c->ack_broken = 1;
    if (c->rq_gap_pending) { /* two gaps without a byte between them */
        c->rq_gap_len = len == 0 || c->rq_gap_len == 0 ? 0 : c->rq_gap_len + len;
        return;
    }
    const rq_dec *d = &c->rq;
    if (len > 0 && c->synced && !c->rp_gap_pending && d->state == RQ_START && !d->in_msg &&
        !d->inline_seen && !c->in_multi && !c->reply_off && !c->skip_next &&
        c->qsz_seen >= SIZES_SEEN && !c->qsz_varied) {
        c->rq_gap_pending = 1;
        c->rq_gap_len = len;
        c->rq_gap_start = c->rq.off + c->rq_lost_bytes - len;
        c->rq_gap_orphans = c->orphans;
        return;
    }
    rq_lost(c, 1);
    pair_lost_requests(c);
}

/* The first request bytes after a pending request gap (p[0..n); NULL at
 * the close): count the requests lost, or make it a loss. */
static void rq_gap_resolve(rc_conn *c, const uint8_t *p, size_t n)
{
    resp_pipeline *rp = c->rp;
    uint32_t m = 0;
    c->rq_gap_pending = 0;
    if (p != NULL && n > 0 && p[0] == '*' && c->rq_gap_len > 0 && c->synced &&
        c->orphans != UINT32_MAX &&
        rq_gap_count(c, c->rq_gap_len, c->orphans > 0 ? c->orphans : 1, &m)) {
        uint32_t owed = m - c->orphans, smin = c->qsz[0];
        for (uint8_t i = 1; i < c->qsz_n; i++)
            smin = c->qsz[i] < smin ? c->qsz[i] : smin;
        if ((uint64_t)c->count + owed <= rp->cfg.max_inflight &&
            rp->inflight_total + owed <= rp->cfg.max_inflight_total) {
            for (uint32_t i = 0; i < owed; i++) {
                if (ring_reserve(c) != 0)
                    break;
                rq_entry *e = ring_next_free(c);
                e->kind = RQK_LOST;
                e->nreply = 1;
                e->dynamic = 0;
                e->uncertain = 0;
                e->keep = 0;
                /* a bound of its end: the requests are at least smin long */
                e->req_end = c->rq_gap_start + (uint64_t)(i + 1) * smin;
                c->count++;
                rp->inflight_total++;
                if (i + 1 == owed)
                    c->anchored++;
            }
            if (owed == 0)
                c->anchored++;
            return;
        }
    }
    rq_lost(c, 1);
    pair_lost_requests(c);
    if (c->orphans != c->rq_gap_orphans)
        c->reply_since_loss = 1; /* as the replies since the gap set it */
}

/* ---------------------------------------------------------------- requests */

/* Make an entry ready for a request starting at ts. Field by field: a
 * memset of the header compiles to "rep stos", whose start-up cost is most
 * of this. The name and the argument prefixes are written before they are
 * read (stale bytes there are this connection's own, past their kept
 * lengths); so are ts_us and bytes (rq_complete, before the request can be
 * emitted). */
static inline void request_reset(rq_entry *e, int64_t ts)
{
    resp_request *r = &e->cmd.req;
    r->name[0] = '\0';
    e->name_len = 0;
    r->argc = 0;
    r->inline_cmd = 0;
    r->nargs = 0;
    r->gap = 0;
    r->slot_unknown = 0;
    memset(r->arg_len, 0, sizeof(r->arg_len));
    memset(r->arg_full_len, 0, sizeof(r->arg_full_len));
    r->nkeys = 0;
    r->slot = -1;
    r->multi_slot = 0;
    r->key0_len = 0;
    r->key0_full_len = 0;
    r->start_us = ts;
}

/* Would ring_maybe_shrink do anything now? */
static inline int ring_shrink_due(const rc_conn *c)
{
    return c->ring_cap > RING_KEEP &&
           (c->ring_win >= (uint64_t)RING_WINDOW * c->ring_cap ||
            (c->count == 0 && c->rp->ring_resident > c->rp->cfg.max_inflight));
}

/* pair_request_slot in general: regaining sync, resizing the ring, the
 * in-flight caps. */
static PAIR_APART rq_entry *request_slot_general(rc_conn *c, int64_t ts)
{
    resp_pipeline *rp = c->rp;
    rq_entry *e;
    if (!c->synced)
        try_regain_sync(c);
    ring_maybe_shrink(c);
    if (c->count < rp->cfg.max_inflight && rp->inflight_total < rp->cfg.max_inflight_total &&
        ring_reserve(c) == 0) {
        e = ring_next_free(c);
        c->cur_dropped = 0;
    } else {
        if (c->overflow == NULL)
            c->overflow = entry_new();
        if (c->overflow == NULL) { /* no memory at all: the pipeline's spare */
            e = rp->spare;
        } else {
            e = c->overflow;
        }
        entry_own(c, e); /* the spare is every connection's */
        c->cur_dropped = 1;
    }
    request_reset(e, ts);
    return e;
}

/* A request starts: the entry the decoder writes it into. The common case,
 * a connection in sync whose ring has room and needs no resizing, under
 * the caps, takes the next entry here (what request_slot_general would do
 * for it); the rest goes to request_slot_general. */
rq_entry *pair_request_slot(rc_conn *c, int64_t ts)
{
    const resp_pipeline *rp = c->rp;
    if (c->synced && c->count < c->ring_cap && !ring_shrink_due(c) &&
        c->count < rp->cfg.max_inflight && rp->inflight_total < rp->cfg.max_inflight_total) {
        rq_entry *e = ring_next_free(c);
        c->cur_dropped = 0;
        request_reset(e, ts);
        return e;
    }
    return request_slot_general(c, ts);
}

void pair_request_abandon(rc_conn *c)
{
    c->cur_dropped = 0;
}

/* Which special kind a request is, from its name and first arguments.
 * Called for every request: a switch on the first letter and the length
 * settles almost every name without a comparison. */
static uint8_t classify_request(rq_entry *e)
{
    const resp_request *r = &e->cmd.req;
    const char *n = r->name;
    size_t len = e->name_len;
    const uint8_t *a0 = (const uint8_t *)r->args[0];
    size_t l0 = r->nargs >= 1 ? r->arg_len[0] : 0;
    switch (n[0]) {
    case 'C':
        if (RD_NAME_IS(n, len, "CLIENT") && r->argc == 3 && r->nargs >= 2 &&
            rd_eq_ci(a0, l0, "REPLY")) {
            const uint8_t *a1 = (const uint8_t *)r->args[1];
            size_t l1 = r->arg_len[1];
            if (rd_eq_ci(a1, l1, "ON"))
                return RQK_REPLY_ON;
            if (rd_eq_ci(a1, l1, "OFF"))
                return RQK_REPLY_OFF;
            if (rd_eq_ci(a1, l1, "SKIP"))
                return RQK_REPLY_SKIP;
        }
        break;
    case 'D':
        if (RD_NAME_IS(n, len, "DISCARD"))
            return RQK_DISCARD;
        break;
    case 'E':
        if (RD_NAME_IS(n, len, "EXEC"))
            return RQK_EXEC;
        break;
    case 'H':
        if (RD_NAME_IS(n, len, "HELLO")) {
            e->hello_proto = 0;
            if (l0 == 1 && (a0[0] == '2' || a0[0] == '3'))
                e->hello_proto = (uint8_t)(a0[0] - '0');
            return RQK_HELLO;
        }
        break;
    case 'M':
        if (RD_NAME_IS(n, len, "MULTI"))
            return RQK_MULTI;
        if (RD_NAME_IS(n, len, "MONITOR"))
            return RQK_MONITOR;
        break;
    case 'P':
        if (RD_NAME_IS(n, len, "PSUBSCRIBE")) {
            e->sub_word = SW_PSUB;
            return RQK_SUB;
        }
        if (RD_NAME_IS(n, len, "PUNSUBSCRIBE")) {
            e->sub_word = SW_PUNSUB;
            return RQK_SUB;
        }
        if (RD_NAME_IS(n, len, "PSYNC"))
            return RQK_PSYNC;
        break;
    case 'Q':
        if (RD_NAME_IS(n, len, "QUIT"))
            return RQK_QUIT;
        break;
    case 'R':
        if (RD_NAME_IS(n, len, "RESET"))
            return RQK_RESET;
        if (RD_NAME_IS(n, len, "REPLCONF") && rd_eq_ci(a0, l0, "ACK"))
            return RQK_REPLCONF_ACK;
        break;
    case 'S':
        if (len < 4)
            break; /* SET */
        if (RD_NAME_IS(n, len, "SUBSCRIBE")) {
            e->sub_word = SW_SUB;
            return RQK_SUB;
        }
        if (RD_NAME_IS(n, len, "SSUBSCRIBE")) {
            e->sub_word = SW_SSUB;
            return RQK_SUB;
        }
        if (RD_NAME_IS(n, len, "SUNSUBSCRIBE")) {
            e->sub_word = SW_SUNSUB;
            return RQK_SUB;
        }
        if (RD_NAME_IS(n, len, "SYNC"))
            return RQK_SYNC;
        break;
    case 'U':
        if (RD_NAME_IS(n, len, "UNSUBSCRIBE")) {
            e->sub_word = SW_UNSUB;
            return RQK_SUB;
        }
        break;
    case 'W':
        if (RD_NAME_IS(n, len, "WATCH"))
            return RQK_WATCH;
        break;
    default:
        break;
    }
    return RQK_NORMAL;
}

/* ---------------------------------------------------------------- transactions
 *
 * Inside MULTI the server queues commands (+QUEUED) and runs them at EXEC,
 * which sends an array header with the count of queued commands, then each
 * command's reply as it runs (observed with redis-server 7.0; tests/fixtures/
 * resp/txmodes.pcap). A queued CLIENT REPLY or HELLO therefore acts at EXEC,
 * and only if EXEC runs the transaction (not after DISCARD, -EXECABORT or a
 * failed WATCH's null):
 *
 *   - CLIENT REPLY OFF silences the replies of the commands after it in the
 *     transaction, and everything after EXEC: EXEC's array then carries fewer
 *     elements than it declares ("*2" and nothing for OFF + SET).
 *   - CLIENT REPLY ON (itself answered +OK) lets them through again. When
 *     replies were off before MULTI, EXEC's header is not sent, and what ON
 *     lets through arrives as loose top-level replies.
 *   - CLIENT REPLY SKIP skips the first command after EXEC, not one inside.
 *   - HELLO switches the protocol from its own reply on: EXEC's header is in
 *     the old protocol, HELLO's element and the rest in the new one.
 *
 * The effects are simulated as commands are queued (tx_queue) and applied
 * when EXEC is decoded (tx_exec): requests pipelined after EXEC need the
 * client's modes before EXEC's reply can tell whether the transaction ran.
 * If it did not, the modes are put back (tx_undo); requests already decoded
 * after EXEC were counted under the wrong modes, so they lose the pairing. */

/* MULTI: an empty transaction, starting from the client's reply mode (which
 * nothing can change until EXEC: the commands that would are queued). */
static void tx_reset(rc_conn *c)
{
    c->tx_queued = 0;
    c->tx_sent = 0;
    c->tx_off = c->reply_off;
    c->tx_skip_after = 0;
    c->tx_hello = 0;
    c->tx_modes = 0;
}

/* A command is queued (e->kind is still its own kind): what it will do when
 * EXEC runs it. Mirrors clientCommand's REPLY branch and the reply gate
 * (prepareClientToWrite) of Redis. */
static void tx_queue(rc_conn *c, const rq_entry *e)
{
    if (c->tx_queued < UINT32_MAX)
        c->tx_queued++;
    switch (e->kind) {
    case RQK_REPLY_OFF:
        c->tx_off = 1;
        c->tx_modes = 1;
        return; /* never answered */
    case RQK_REPLY_ON:
        c->tx_off = 0;
        c->tx_modes = 1;
        break; /* answered +OK, even when replies were off */
    case RQK_REPLY_SKIP:
        if (!c->tx_off)
            c->tx_skip_after = 1;
        c->tx_modes = 1;
        return; /* never answered */
    case RQK_HELLO:
        if (e->hello_proto)
            c->tx_hello = e->hello_proto;
        if (c->tx_off)
            return;
        break;
    default:
        if (c->tx_off)
            return;
        break;
    }
    if (c->tx_sent < c->tx_queued)
        c->tx_sent++;
}

/* EXEC closes a transaction: how it is answered, and the client's modes
 * after it (taken to run; tx_undo when its reply says otherwise).
 * skip_this: EXEC itself is skipped by a CLIENT REPLY SKIP. */
static void tx_exec(rc_conn *c, rq_entry *e, uint8_t skip_this)
{
    e->hello_proto = c->tx_hello;
    if (!c->reply_off && !skip_this) { /* one array, maybe short */
        e->nreply = 1;
        if (c->tx_sent < c->tx_queued) {
            e->tx |= TXF_TRIM;
            e->tx_elems.queued = c->tx_queued;
            e->tx_elems.sent = c->tx_sent;
        }
    } else { /* no header: only what CLIENT REPLY ON let through */
        e->nreply = c->tx_sent;
        e->tx |= TXF_LOOSE;
        if (e->nreply == 0 && e->hello_proto) /* nothing will come to tell */
            c->resp3 = (e->hello_proto == 3);
    }
    if (c->tx_modes) {
        e->tx |= TXF_MODES;
        if (c->reply_off)
            e->tx |= TXF_PREV_OFF;
        c->reply_off = c->tx_off;
        c->skip_next = c->tx_skip_after;
    }
}

/* EXEC's reply says the transaction did not run (-EXECABORT, or a null when
 * a WATCHed key changed): none of its modes took effect. */
static void tx_undo(rc_conn *c, rq_entry *h)
{
    if (!(h->tx & TXF_MODES))
        return;
    c->reply_off = (uint8_t)((h->tx & TXF_PREV_OFF) != 0);
    c->skip_next = 0;
    if (c->count <= 1)
        return; /* nothing decoded after EXEC: exact */
    /* Requests after EXEC were given the modes it would have set: how many
     * replies they get is not known any more. */
    c->st.out_of_sync = 1;
    c->synced = 0;
    c->reply_since_loss = 0;
    for (uint32_t i = 1; i < c->count; i++)
        ring_at(c, i)->uncertain = 1;
}

/* How many replies a request gets, applying the client-side modes it changes
 * (MULTI, CLIENT REPLY, and at EXEC those of the queued commands). Mirrors
 * processCommand / clientCommand in Redis. */
static void request_modes(rc_conn *c, rq_entry *e)
{
    uint8_t skip_this = c->skip_next;
    c->skip_next = 0;
    e->nreply = 1;
    e->dynamic = 0;
    e->cmd.in_multi = 0;
    if (e->kind == RQK_NORMAL && !c->in_multi) { /* most requests: no modes */
        if (c->reply_off || skip_this)
            e->nreply = 0;
        return;
    }
    if (c->in_multi && e->kind != RQK_EXEC && e->kind != RQK_DISCARD &&
        e->kind != RQK_MULTI && e->kind != RQK_WATCH && e->kind != RQK_QUIT &&
        e->kind != RQK_RESET) {
        tx_queue(c, e);
        e->kind = RQK_QUEUED; /* +QUEUED or an error; effects only at EXEC */
        e->cmd.in_multi = 1;
    }
    switch (e->kind) {
    case RQK_MULTI:
        e->cmd.in_multi = c->in_multi;
        if (!c->in_multi) /* MULTI inside MULTI is an error, not a new one */
            tx_reset(c);
        c->in_multi = 1;
        break;
    case RQK_EXEC:
        e->tx = 0; /* read for EXEC only: other kinds leave it stale */
        if (c->in_multi) {
            c->in_multi = 0;
            tx_exec(c, e, skip_this);
            return;
        }
        break; /* EXEC without MULTI: an error */
    case RQK_DISCARD:
        c->in_multi = 0;
        break;
    case RQK_SUB:
        if (e->cmd.req.argc >= 2) {
            e->nreply = e->cmd.req.argc - 1;
        } else if (e->sub_word >= SW_UNSUB) {
            e->dynamic = 1; /* one confirmation per current subscription */
        } else {
            e->kind = RQK_NORMAL; /* SUBSCRIBE without channels: an arity error */
        }
        break;
    case RQK_REPLY_ON:
        c->reply_off = 0;
        return; /* always answered */
    case RQK_REPLY_OFF:
        c->reply_off = 1;
        e->nreply = 0;
        return;
    case RQK_REPLY_SKIP:
        if (!c->reply_off)
            c->skip_next = 1;
        e->nreply = 0;
        return;
    case RQK_RESET:
        c->in_multi = 0;
        c->reply_off = 0; /* cleared before RESET replies */
        break;
    case RQK_REPLCONF_ACK:
        e->nreply = 0;
        return;
    default:
        break;
    }
    if (c->reply_off || skip_this) {
        e->nreply = 0;
        e->dynamic = 0;
    }
}

void pair_request_done(rc_conn *c)
{
    resp_pipeline *rp = c->rp;
    rq_entry *e = c->cur;
    c->st.requests++;
    e->cmd.seq = c->seq++; /* conn and conn_word: entry_own */
    e->sub_word = 0;
    e->hello_proto = 0;
    e->got_reply = 0;
    e->first_reply_us = 0;
    e->kind = classify_request(e);
    request_modes(c, e);
    e->keep = (uint8_t)(e->cmd.req.name[0] == 'C' && resp_keep_reply(&e->cmd.req));
    e->uncertain = (uint8_t)!c->synced;
    if (c->repl_watch && e->kind == RQK_REPLCONF_ACK && c->st.paired == 0)
        repl_found(c, REPL_MID_SERVER); /* the ACK itself is a request as ever */
    e->req_end = c->rq.msg_off + e->cmd.req.bytes + c->rq_lost_bytes;
    e->cmd.req.end_pos = e->req_end;
    rq_sizes_learn(c, e->cmd.req.bytes);
    if (c->cur_dropped) {
        /* The FIFO lost a position: pairing after this point is unknown. */
        c->cur_dropped = 0;
        rp->closed.dropped_requests++;
        pair_lost(c);
        emit(c, e, RESP_UNANSWERED);
        return;
    }
    c->count++;
    c->orphans = 0; /* replies that found nothing queued: before this one */
    if (expects_no_reply(e))
        c->noreply_queued++;
    rp->inflight_total++;
    if (c->count > c->ring_hw) /* the deepest queue in this window */
        c->ring_hw = c->count;
    c->ring_win++;
    flush_no_reply(c);
}

/* ---------------------------------------------------------------- replies */

/* pair_reply_start for a head of kind RQK_EXEC or RQK_SYNC, from its
 * keep flags on. */
static PAIR_RARE void reply_start_rare(rc_conn *c, rq_entry *h, int64_t ts)
{
    resp_reply *r = &c->reply;
    if (h->kind == RQK_SYNC) {
        /* SYNC is answered by an RDB payload without a final CRLF, then the
         * replication stream: neither is a reply. */
        c->replication = 1;
        c->st.replication = 1;
        rp_sink(c);
        emit(c, h, RESP_NO_REPLY);
        ring_pop(c);
        flush_no_reply(c);
    } else {
        if (h->tx & TXF_TRIM) { /* EXEC's array will be short (see tx_exec) */
            c->rpd.trim_at = c->rpd.msg_off + 1;
            c->rpd.trim_decl = h->tx_elems.queued;
            c->rpd.trim_to = h->tx_elems.sent;
        }
        r = &h->cmd.reply;
        c->keeping = (uint8_t)(h->keep && !h->uncertain);
    }
    c->rep = r;
    reply_reset_fields(r, ts);
}

/* A reply starts. It is decoded straight into the entry at the head, the
 * request it will most likely be paired with (emit then hands the entry
 * over as it is: copying the reply there cost more than the rest of emit),
 * or into the scratch when none waits. */
void pair_reply_start(rc_conn *c, int64_t ts)
{
    resp_reply *r = &c->reply;
    c->rep_ack = c->ev_ack;
    c->keep_len = 0;
    c->keep_over = 0;
    c->keeping = 0;
    if (c->count != 0) {
        rq_entry *h = ring_at(c, 0);
        if (h->kind >= RQK_EXEC) { /* rare: a tail call, no frame here */
            reply_start_rare(c, h, ts);
            return;
        }
        r = &h->cmd.reply;
        c->keeping = (uint8_t)(h->keep && !h->uncertain);
    }
    c->rep = r;
    reply_reset_fields(r, ts);
}

void pair_keep_bytes(rc_conn *c, const uint8_t *p, size_t n)
{
    if (c->keep_over || n == 0)
        return;
    size_t max = c->rp->cfg.max_kept_reply;
    if (c->keep_len + n > max) {
        c->keep_over = 1;
        pair_limit_hit(c);
        return;
    }
    if (c->keep_len + n > c->keep_cap) {
        size_t ncap = c->keep_cap ? c->keep_cap : 4096;
        while (ncap < c->keep_len + n)
            ncap *= 2;
        if (ncap > max)
            ncap = max;
        /* every connection may keep one reply; all of them together are
         * capped too, or N connections could hold N x max_kept_reply */
        uint64_t total = c->rp->kept_total - c->keep_cap + ncap;
        uint8_t *nb = total > c->rp->cfg.max_kept_total ? NULL : realloc(c->keep, ncap);
        if (nb == NULL) {
            c->keep_over = 1;
            pair_limit_hit(c);
            return;
        }
        c->rp->kept_total = total;
        c->keep = nb;
        c->keep_cap = ncap;
    }
    memcpy(c->keep + c->keep_len, p, n);
    c->keep_len += n;
}

/* The reply is done: give the keep buffer back. Kept replies (CLUSTER
 * SLOTS, SHARDS, NODES) are rare next to the commands around them, so one
 * allocation each costs nothing, while a buffer held per connection would
 * keep the largest reply each connection ever had. */
static void keep_done(rc_conn *c)
{
    c->keep_len = 0;
    c->keeping = 0;
    if (c->keep != NULL) {
        c->rp->kept_total -= c->keep_cap;
        free(c->keep);
        c->keep = NULL;
        c->keep_cap = 0;
    }
}

/* Is the first element of the top-level aggregate this (lower-case) word? */
static int elem0_is(const rp_dec *d, const char *upper_word)
{
    return d->elem0_set && rd_eq_ci(d->elem0, d->elem0_len, upper_word);
}

/* Which subscribe-family word the first element is, or -1. */
static int elem0_sub_word(const rp_dec *d)
{
    if (!d->elem0_set)
        return -1;
    for (int i = 0; i < SW_COUNT; i++)
        if (rd_eq_ci(d->elem0, d->elem0_len, sub_words[i]))
            return i;
    return -1;
}

/* Is the connection subscribed to anything (server side)? */
static inline int subscribed(const rc_conn *c)
{
    return c->sub_channels + c->sub_patterns + c->sub_shards > 0;
}

/* A confirmation of kind w reported count n: update the subscription counts.
 * Redis reports channels + patterns for the classic kinds and the shard
 * channel count for the sharded ones. */
static void sub_count_update(rc_conn *c, int w, const rp_dec *d)
{
    if (!d->elem2_set || d->elem2 < 0)
        return;
    uint64_t n = (uint64_t)d->elem2;
    if (n > UINT32_MAX)
        n = UINT32_MAX;
    switch (w) {
    case SW_SUB:
    case SW_UNSUB:
        c->sub_channels = n > c->sub_patterns ? (uint32_t)n - c->sub_patterns : 0;
        break;
    case SW_PSUB:
    case SW_PUNSUB:
        c->sub_patterns = n > c->sub_channels ? (uint32_t)n - c->sub_channels : 0;
        break;
    default:
        c->sub_shards = (uint32_t)n;
        break;
    }
    if (subscribed(c))
        c->st.subscribed = 1;
}

/* Is an "unsubscribe from all" finished after this confirmation? */
static int unsub_all_done(const rc_conn *c, int w)
{
    switch (w) {
    case SW_UNSUB: return c->sub_channels == 0;
    case SW_PUNSUB: return c->sub_patterns == 0;
    default: return c->sub_shards == 0;
    }
}

/* EXEC of a transaction with modes was answered (its last reply when the
 * replies come loose): did the transaction run? */
static void exec_effects(rc_conn *c, rq_entry *h)
{
    const resp_reply *r = c->rep;
    /* an array is the transaction's replies; -EXECABORT, or a null after a
     * failed WATCH, means nothing ran. Loose replies only come from a run. */
    if (!(h->tx & TXF_LOOSE) && r->type != RESP_T_ARRAY) {
        tx_undo(c, h);
        return;
    }
    if (h->hello_proto) /* taken to succeed: its element is not looked at */
        c->resp3 = (h->hello_proto == 3);
}

/* Server-side effects of a paired reply; h->kind >= RQK_MONITOR (the
 * others have none). */
static void reply_effects(rc_conn *c, rq_entry *h)
{
    if (h->kind == RQK_EXEC) {
        if (h->tx != 0 || h->hello_proto != 0)
            exec_effects(c, h);
        return;
    }
    const resp_reply *r = c->rep;
    const rp_dec *d = &c->rpd;
    int ok = (r->err == RESP_ERR_NONE && r->type != RESP_T_ERROR && r->type != RESP_T_BLOBERR);
    if (!ok)
        return;
    switch (h->kind) {
    case RQK_MONITOR:
        if (r->type == RESP_T_SIMPLE && rd_eq_ci(d->status, d->status_len, "OK")) {
            c->monitor = 1;
            c->st.monitor = 1;
        }
        break;
    case RQK_HELLO:
        if (h->hello_proto)
            c->resp3 = (h->hello_proto == 3);
        break;
    case RQK_RESET:
        c->resp3 = 0;
        c->monitor = 0;
        c->sub_channels = c->sub_patterns = c->sub_shards = 0;
        break;
    case RQK_PSYNC:
        c->replication = 1;
        c->st.replication = 1;
        rp_sink(c);
        break;
    default:
        break;
    }
}

/* A complete reply that is not handed over (a push, a confirmation or a
 * loose reply before the last): when it was decoded into the head entry, an
 * error text it left there goes back to cleared (see emit). Its other
 * fields are reset when the next reply starts or the entry is emitted. */
static inline void reply_not_emitted(rc_conn *c)
{
    if (c->rep->err != RESP_ERR_NONE && c->rep != &c->reply)
        reply_clear_error(c->rep);
}

/* The request at the head, for the reply just decoded: the entry it was
 * decoded into (the head when the reply started, still the head: see
 * rep_rebase and reply_detach), without the ring arithmetic; NULL when
 * nothing is queued. */
static inline rq_entry *reply_head(rc_conn *c)
{
    if (c->rep != &c->reply)
        return (rq_entry *)(void *)((char *)c->rep - offsetof(rq_entry, cmd.reply));
    return c->count ? ring_at(c, 0) : NULL;
}

/* The reply just decoded cannot answer the head h (reply_may_answer): it
 * is one for a request before h that was not seen. Counted unpaired, h
 * stays. When h was certain, the pairing was not what it seemed (a
 * mid-stream start that looked clean): nothing queued is certain now. */
static PAIR_RARE void reply_not_for_head(rc_conn *c, rq_entry *h)
{
    c->st.unpaired_replies++;
    if (!h->uncertain) {
        c->st.out_of_sync = 1;
        c->synced = 0;
        for (uint32_t i = 0; i < c->count; i++)
            ring_at(c, i)->uncertain = 1;
    }
    c->reply_since_loss = 1;
    reply_not_emitted(c);
    keep_done(c);
}

/* pair_reply_done for every case but the common one. */
static PAIR_APART void reply_done_general(rc_conn *c, rq_entry *h, resp_type t)
{
    const rp_dec *d = &c->rpd;
    int aggregate = (t == RESP_T_ARRAY || t == RESP_T_PUSH);
    /* a reply that no certain request was waiting for: the server is
     * answering what came after a loss */
    if (h == NULL || h->uncertain)
        c->reply_since_loss = 1;

    /* 1. A confirmation for the pending (un)subscribe. */
    if (h != NULL && h->kind == RQK_SUB && aggregate && elem0_is(d, sub_words[h->sub_word])) {
        c->st.replies++;
        sub_count_update(c, h->sub_word, d);
        if (!h->got_reply) {
            h->got_reply = 1;
            h->first_reply_us = c->rep->start_us;
        }
        int done;
        if (h->dynamic) {
            done = unsub_all_done(c, h->sub_word);
        } else {
            h->nreply--;
            done = (h->nreply == 0);
        }
        if (h->uncertain && !done)
            c->st.unpaired_replies++;
        if (done) {
            emit(c, h, RESP_OK);
            ring_pop(c);
            flush_no_reply(c);
        } else {
            reply_not_emitted(c);
        }
        keep_done(c);
        return;
    }

    /* 2. Pushes: never replies. */
    if (t == RESP_T_PUSH ||
        (c->monitor && t == RESP_T_SIMPLE && d->status_monitor) ||
        (!c->resp3 && subscribed(c) && t == RESP_T_ARRAY &&
         (elem0_is(d, "MESSAGE") || elem0_is(d, "PMESSAGE") || elem0_is(d, "SMESSAGE") ||
          elem0_sub_word(d) >= 0))) {
        int w = elem0_sub_word(d);
        if (w >= 0) /* unsolicited confirmation, e.g. sunsubscribe on a slot move */
            sub_count_update(c, w, d);
        c->st.pushes++;
        reply_not_emitted(c);
        keep_done(c);
        return;
    }

    /* 3. A reply for the head. */
    c->st.replies++;
    if (h == NULL) {
        if (c->orphans < UINT32_MAX - 1)
            c->orphans++;
        c->st.unpaired_replies++;
        keep_done(c);
        return;
    }
    if (!reply_may_answer(c, h, c->rep->start_us, h->uncertain)) {
        /* it answers a request before the head that was not seen */
        reply_not_for_head(c, h);
        return;
    }
    if (h->kind == RQK_LOST) { /* the reply of a request lost in a gap */
        c->st.unpaired_replies++;
        reply_not_emitted(c);
        ring_pop(c);
        keep_done(c);
        flush_no_reply(c);
        return;
    }
    if (h->kind >= RQK_MONITOR) { /* a reply with effects: rare */
        if (h->kind == RQK_EXEC && h->nreply > 1) {
            /* a transaction answered by loose replies (tx_exec): not the
             * last one */
            if (!h->got_reply) {
                h->got_reply = 1;
                h->first_reply_us = c->rep->start_us;
            }
            h->nreply--;
            if (h->uncertain)
                c->st.unpaired_replies++;
            reply_not_emitted(c);
            keep_done(c);
            return;
        }
        reply_effects(c, h);
    }
    emit(c, h, RESP_OK);
    ring_pop(c);
    keep_done(c);
    flush_no_reply(c);
}

/* A reply is complete: pair it. The common case, a reply to a request of
 * no special kind that was certainly waiting, on a connection neither in
 * MONITOR nor subscribed, is settled here with a few tests (what
 * reply_done_general would do for it: no confirmation, no push, no
 * effects); the rest goes to reply_done_general. */
void pair_reply_done(rc_conn *c)
{
    if (c->repl_watch && repl_reply(c))
        return;
    rq_entry *h = reply_head(c);
    resp_type t = c->rep->type;
    if (h != NULL && h->kind < RQK_SUB && !h->uncertain && h->req_end <= c->rep_ack &&
        t != RESP_T_PUSH && !c->monitor && !subscribed(c)) {
        c->st.replies++;
        emit_paired(c, h);
        ring_pop(c);
        keep_done(c);
        flush_no_reply(c);
        return;
    }
    reply_done_general(c, h, t);
}

/* ---------------------------------------------------------------- connections */

/* Per-connection state for a new capture connection. NULL on out of memory. */
static rc_conn *conn_new(resp_pipeline *rp, cap_conn *cc)
{
    rc_conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->cc = cc;
    c->rp = rp;
    c->synced = cc->saw_syn ? 1 : 0;
    c->repl_watch = cc->saw_syn ? 0 : 1;
    c->reply_since_loss = 0;
    c->rep_ack = UINT64_MAX;
    c->ev_ack = UINT64_MAX;
    rq_init(c);
    rp_init(c);
    reply_clear(&c->reply);
    c->rep = &c->reply;
    c->next = rp->live;
    if (rp->live != NULL)
        rp->live->prev = c;
    rp->live = c;
    cc->user = c;
    rp->closed.connections++;
    if (rp->sink.conn_open != NULL)
        rp->sink.conn_open(rp->sink.ctx, cc);
    if (rp->sink.conn_word != NULL)
        c->conn_word = rp->sink.conn_word(rp->sink.ctx, cc);
    return c;
}

/* Add one connection's counters into totals. */
void resp_conn_stats_add(resp_conn_stats *t, const resp_conn_stats *s)
{
    t->requests += s->requests;
    t->replies += s->replies;
    t->pushes += s->pushes;
    t->paired += s->paired;
    t->unpaired_requests += s->unpaired_requests;
    t->unpaired_replies += s->unpaired_replies;
    t->resyncs += s->resyncs;
    t->skipped_bytes += s->skipped_bytes;
    t->protocol_errors += s->protocol_errors;
    t->gaps_bridged += s->gaps_bridged;
    t->out_of_sync += s->out_of_sync;
    t->monitor += s->monitor;
    t->subscribed += s->subscribed;
    t->replication += s->replication;
    t->replication_midstream += s->replication_midstream;
    t->replication_reversed += s->replication_reversed;
    t->replication_skipped += s->replication_skipped;
    t->tls += s->tls;
    t->cluster_bus += s->cluster_bus;
    t->bus_messages += s->bus_messages;
    t->bus_bad += s->bus_bad;
    t->bus_resyncs += s->bus_resyncs;
    t->bus_skipped_bytes += s->bus_skipped_bytes;
    t->bus_bytes += s->bus_bytes;
    t->bus_gaps += s->bus_gaps;
}

/* Add one pipeline's totals into another's (one pipeline per worker thread). */
void resp_stats_add(resp_stats *t, const resp_stats *s)
{
    resp_conn_stats_add(&t->total, &s->total);
    t->connections += s->connections;
    t->dropped_requests += s->dropped_requests;
    t->limit_hits += s->limit_hits;
    t->commands += s->commands;
    t->unanswered_at_end += s->unanswered_at_end;
    bus_stats_add(&t->bus, &s->bus);
}

/* Unlink and free a connection's state (no events). */
static void conn_free(resp_pipeline *rp, rc_conn *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        rp->live = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    rp->inflight_total -= c->count;
    rp->ring_resident -= c->ring_fresh;
    rp_free(c);
    free(c->ring);
    free(c->overflow);
    rp->kept_total -= c->keep_cap;
    free(c->keep);
    rc_bus_free(c);
    if (c->cc != NULL && c->cc->user == c)
        c->cc->user = NULL;
    free(c);
}

/* The first bytes of a stream: is it TLS (a record header: content type
 * 20-23, version 3.x) or the cluster bus (bus.c, rc_bus_sniff)? Either way
 * there is no RESP to find; counted so that the report can say why. A bus
 * connection's streams go to bus/ from here on. */
static PAIR_RARE void sniff_foreign(rc_conn *c, const uint8_t *p, size_t n)
{
    if (n >= 3 && p[0] >= 0x14 && p[0] <= 0x17 && p[1] == 0x03 && p[2] <= 0x04) {
        c->st.tls = 1;
    } else if (rc_bus_sniff(p, n, !c->cc->saw_syn)) {
        c->st.cluster_bus = 1;
        rc_bus_new(c);
    }
}

/* The connection ended: partial messages are dropped (counted as skipped),
 * waiting requests are emitted as unanswered, then conn_close. */
static void conn_close(resp_pipeline *rp, rc_conn *c)
{
    if (c->rq_gap_pending)
        rq_gap_resolve(c, NULL, 0);
    if (c->rp_gap_pending) {
        c->rp_gap_pending = 0;
        rp_gap_give_up(c, c->rp_gap_queued);
    }
    rc_bus_close(rp, c);
    if (c->rq.in_msg)
        c->st.skipped_bytes += c->rq.off - c->rq.msg_off;
    if (c->rpd.in_msg)
        c->st.skipped_bytes += c->rpd.off - c->rpd.msg_off;
    c->rq.in_msg = 0;
    c->rpd.in_msg = 0;
    flush_all(c);
    if (rp->sink.conn_close != NULL)
        rp->sink.conn_close(rp->sink.ctx, c->cc, &c->st);
    resp_conn_stats_add(&rp->closed.total, &c->st);
    conn_free(rp, c);
}

/* ---------------------------------------------------------------- pipeline */

resp_pipeline *resp_new(const resp_config *cfg, const resp_sink *sink)
{
    resp_pipeline *rp = calloc(1, sizeof(*rp));
    if (rp == NULL)
        return NULL;
    rp->spare = entry_new();
    if (rp->spare == NULL) {
        free(rp);
        return NULL;
    }
    if (cfg != NULL)
        rp->cfg = *cfg;
    else
        resp_config_defaults(&rp->cfg);
    if (rp->cfg.max_depth == 0)
        rp->cfg.max_depth = 1;
    if (rp->cfg.max_inflight == 0)
        rp->cfg.max_inflight = 1;
    if (rp->cfg.max_line < 64)
        rp->cfg.max_line = 64;
    if (sink != NULL)
        rp->sink = *sink;
    return rp;
}

void resp_free(resp_pipeline *rp)
{
    if (rp == NULL)
        return;
    while (rp->live != NULL)
        conn_free(rp, rp->live);
    free(rp->spare);
    free(rp);
}

const resp_stats *resp_get_stats(const resp_pipeline *rp)
{
    resp_pipeline *m = (resp_pipeline *)rp; /* the view is a cache */
    m->view = rp->closed;
    for (const rc_conn *c = rp->live; c != NULL; c = c->next) {
        resp_conn_stats_add(&m->view.total, &c->st);
        rc_bus_stats_live(c, &m->view.bus);
    }
    return &m->view;
}

/* Reply bytes arrive: the request stream position their sender had
 * acknowledged (rc_conn.ev_ack), from the event's ACK. */
static inline void reply_ack_at(rc_conn *c, const cap_event *ev)
{
    int64_t pos = (int64_t)(c->rq.off + c->rq_lost_bytes) + ev->ack_ahead;
    c->ev_ack = ev->has_ack && !c->ack_broken && pos >= 0 ? (uint64_t)pos : UINT64_MAX;
}

void resp_on_capture_event(void *vrp, const cap_event *ev)
{
    resp_pipeline *rp = vrp;
    cap_conn *cc = ev->conn;
    if (rp == NULL || cc == NULL)
        return;
    rc_conn *c = cc->user;
    switch (ev->kind) {
    case CAP_EV_OPEN:
        if (c == NULL)
            conn_new(rp, cc);
        return;
    case CAP_EV_DATA:
        if (c == NULL && (c = conn_new(rp, cc)) == NULL)
            return;
        if (ev->data == NULL || ev->len == 0)
            return;
        if (c->repl_mid == REPL_MID_CLIENT)
            return; /* neither side is decoded */
        c->frame = ev->frame;
        if ((ev->dir == CAP_TO_SERVER ? c->rq.off : c->rpd.off) == 0 && !c->st.cluster_bus)
            sniff_foreign(c, ev->data, ev->len);
        if (c->st.cluster_bus) { /* node-to-node bus messages: bus/ decodes them */
            rc_bus_feed(c, ev->dir, ev->data, ev->len, ev->ts_us);
            return;
        }
        if (ev->dir == CAP_TO_SERVER) {
            if (c->rq_gap_pending)
                rq_gap_resolve(c, ev->data, ev->len);
            rq_feed(c, ev->data, ev->len, ev->ts_us);
        } else {
            reply_ack_at(c, ev);
            if (c->rp_gap_pending)
                rp_gap_resolve(c, ev->data, ev->len, ev->ts_us);
            rp_feed(c, ev->data, ev->len, ev->ts_us);
        }
        return;
    case CAP_EV_GAP:
        if (c == NULL && (c = conn_new(rp, cc)) == NULL)
            return;
        /* A gap inside a value whose length is known costs nothing but the
         * value's bytes; anything else loses the pairing. A replication
         * stream recognised mid-stream is not paired: nothing to lose. */
        if (c->st.cluster_bus) {
            rc_bus_gap(c, ev->dir);
            return;
        }
        if (c->repl_mid == REPL_MID_CLIENT ||
            (c->repl_mid == REPL_MID_SERVER && ev->dir == CAP_TO_CLIENT))
            return;
        if (ev->dir == CAP_TO_SERVER) {
            if (rq_skip_gap(c, ev->gap_len, ev->ts_us))
                return;
            pair_request_gap(c, ev->gap_len);
        } else {
            if (rp_skip_gap(c, ev->gap_len, ev->ts_us))
                return;
            pair_reply_gap(c, ev->gap_len);
        }
        return;
    case CAP_EV_CLOSE:
        if (c != NULL && ev->reason == CAP_CLOSE_END)
            rp->closed.unanswered_at_end += c->count;
        if (c != NULL)
            conn_close(rp, c);
        return;
    default:
        return;
    }
}
