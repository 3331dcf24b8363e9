/*
 * pair_internal.h - what the pairing files of resp/ share (not a public
 * header; the decoders see only decode.h).
 *
 *   pair.c   which reply answers which request: the requests side (classify,
 *            queue), the replies side (pair, push, effects), emit, sync
 *   modes.c  client-side modes: MULTI/EXEC transactions, CLIENT REPLY
 *   ring.c   the in-flight ring of each connection: pages, whole entries
 *            (packed slots are packed and unpacked inline, below)
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

/* Replies of a command in a row whose sizes are among those seen before
 * them, before their sizes are taken as predictable (loss.c): a GET of
 * values of a few lengths may show only two of them for a while. */
#define SIZES_SEEN 16
/* Requests in a row of sizes seen before, before a request gap is counted
 * in them (loss.c): a client that has just begun sending another command
 * (ASKING and its command when a slot starts migrating) may have lost one
 * of a size not seen yet, which the sizes seen would miscount. */
#define RQ_SIZES_STABLE 32

/* ---------------------------------------------------------------- functions */

/* pair.c */
/* The events of the two decoders (decode.h), pair.c's side of them: c is
 * the owner given to rq_init / rp_init. */
extern const rq_out pair_rq_out;
extern const rp_out pair_rp_out;
void pair_lost(rc_conn *c);           /* replies lost: pairing unknown now */
void pair_lost_gap(rc_conn *c, uint64_t len); /* the same, in a gap of len bytes */
void pair_lost_requests(rc_conn *c);  /* requests lost: what is queued stays */
void pair_limit_hit(rc_conn *c);      /* a limit was hit */
void pair_emit(rc_conn *c, rq_slot *e, resp_outcome outcome);
void pair_pop_unanswered(rc_conn *c);
void pair_flush_no_reply_slow(rc_conn *c);
void pair_flush_all(rc_conn *c);

/* modes.c */
void request_modes(rc_conn *c, rq_entry *e);
void tx_undo(rc_conn *c, const rq_slot *h);

/* ring.c */
int whole_pool_init(resp_pipeline *rp);
void whole_pool_free(resp_pipeline *rp);
rq_entry *whole_first_use(resp_pipeline *rp);
void ring_release_all(rc_conn *c);
void whole_release_cur(rc_conn *c);
int pages_need_slow(resp_pipeline *rp, rq_pages *f, uint32_t n);
int text_place(rc_conn *c, const resp_request *r, uint32_t name_len, int dup, uint32_t *at);
void pages_drop_slow(resp_pipeline *rp, rq_pages *f, uint32_t new_head);
void pages_release(resp_pipeline *rp, rq_pages *f);
void pages_free(resp_pipeline *rp, rq_pages *f);
void pages_pool_free(resp_pipeline *rp);

/* loss.c */
void pair_request_gap(rc_conn *c, uint64_t len); /* a request gap not bridged */
/* a reply gap not bridged; before_peer: cap_event.before_peer */
void pair_reply_gap(rc_conn *c, uint64_t len, int before_peer);
/* The name bytes a key takes, by name length: its first min(len, 8). */
extern const uint64_t size_key_mask[RESP_NAME_MAX];
rc_sizes *sizes_slot(rc_conn *c, uint64_t k);
void sizes_learn_change(rc_sizes *z, const resp_reply *r);
void rp_gap_give_up(rc_conn *c, uint32_t n);
/* The first n queued, about to be given up over a reply gap of len bytes
 * (0: not known): the replies owed then (pair.c, owed_min). */
uint32_t owed_after_reply_gap(rc_conn *c, uint64_t n, uint64_t len);
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

/* The head slot (count > 0): ring_at(c, 0), kept in c->head as slots are
 * queued (ring_counted) and popped (ring_pop), so that pairing, which
 * reads it a few times per reply, does not compute it each time. */
static inline rq_slot *ring_head(const rc_conn *c)
{
    return c->head;
}

/* Slot s, at the tail, is queued: counted in (the head when it is the
 * only one). */
static inline void ring_counted(rc_conn *c, rq_slot *s)
{
    if (c->count++ == 0)
        c->head = s;
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
    ring_counted(c, e);
    return e;
}

/* ---------------------------------------------------------------- whole entries (hot) */

/* The whole entry of slot s (s->whole != 0). */
static inline rq_entry *slot_whole(const rc_conn *c, const rq_slot *s)
{
    return &c->rp->whole[s->whole - 1];
}

/* A whole entry for c's next request, or NULL when c holds its share or
 * the pipeline has none free (the request is then staged and packed). */
static inline rq_entry *whole_take(rc_conn *c)
{
    resp_pipeline *rp = c->rp;
    if (c->whole_held >= RQ_WHOLE_CONN)
        return NULL;
    rq_entry *e;
    if (rp->whole_nfree > 0)
        e = &rp->whole[rp->whole_free[--rp->whole_nfree]];
    else if (rp->whole_made < rp->whole_cap)
        e = whole_first_use(rp);
    else
        return NULL;
    c->whole_held++;
    return e;
}

/* Give a whole entry of c's back to the pipeline, by its number (1 + its
 * index: rq_slot.whole, rq_entry.whole). The caller has it in the slot:
 * reading it from the entry would touch the entry's last line, which
 * emitting a command does not. */
static inline void whole_give(rc_conn *c, uint16_t whole)
{
    resp_pipeline *rp = c->rp;
    rp->whole_free[rp->whole_nfree++] = (uint16_t)(whole - 1);
    c->whole_held--;
}

/* Remove the head (its text, or its whole entry, goes with it). The next
 * slot is the head's neighbour in its page, or (c->head is set only while
 * count > 0) the first of the next page. */
static inline void ring_pop(rc_conn *c)
{
    rq_slot *h = ring_head(c);
    if (h->whole != 0) /* no text: the next packed slot's pop drops what is before it */
        whole_give(c, h->whole);
    else
        pages_drop_to(c->rp, &c->text, h->text_pos + h->text_len);
    rq_pages *f = &c->ring;
    uint32_t next = f->head + (uint32_t)sizeof(rq_slot);
    if (((next ^ f->head) >> RQ_PAGE_SHIFT) == 0) {
        f->head = next;
        c->head = h + 1;
    } else {
        pages_drop_slow(c->rp, f, next);
        if (c->count > 1)
            c->head = (rq_slot *)(void *)pages_at(f, next);
    }
    c->count--;
    c->part->inflight--;
}

/* ---------------------------------------------------------------- slots (hot) */

/* The facts of request e (with its pairing facts) that a packed slot
 * holds besides its text. */
static inline void slot_facts(rq_slot *s, const rq_entry *e)
{
    const resp_request *r = &e->cmd.req;
    memcpy(s, e, RQ_PAIRING_BYTES);
    s->in_multi = e->cmd.in_multi;
    s->seq = e->cmd.seq;
    memcpy(s->req_time, &r->start_us, RQ_TIME_BYTES);
    memcpy(s->req_facts, &r->argc, RQ_FACTS_BYTES);
    if (r->nargs > RESP_ARG_KEEP) /* not in the decoder's hands: stored as kept */
        s->req_facts[offsetof(resp_request, nargs) - offsetof(resp_request, argc)] =
            RESP_ARG_KEEP;
}

/* A packed slot's text is its pieces one after another, each rounded up
 * to 16 bytes: the name (at least one unit, so that its first 16 bytes,
 * zero past its NUL, always come back), the kept arguments, the first key
 * unless it is args[0]. Each piece is moved by one copy of fixed size
 * (the name's 32 bytes; 32 or 64 for an argument or key) whatever its
 * length: the next piece overwrites what went past its units, and the
 * last one's overrun, like unpack's reads the same way, stays within
 * RQ_TEXT_SLACK bytes after the text, which its page keeps free. Bytes
 * past a kept length are thus an earlier piece's or command's (never a
 * credential: those are not kept). Packing and unpacking are inline:
 * pair.c runs them (request_done_packed, reply_done) for every request
 * past the whole entries. */
#define RQ_TEXT_SLACK RESP_ARG_PREFIX
_Static_assert(RQ_TEXT_MAX + RQ_TEXT_SLACK <= RQ_PAGE && RESP_NAME_MAX == 32 &&
                   RESP_ARG_PREFIX == 64,
               "a text and its overrun fit in a page; pieces are 16-byte units");

/* The bytes a piece of n kept bytes (n <= 64) takes in the text. */
static inline uint32_t piece_bytes(uint32_t n)
{
    return (n + 15) & ~15u;
}

/* The bytes the name takes: one unit, or two past 15 bytes. */
static inline uint32_t name_bytes(uint32_t name_len)
{
    return name_len < 16 ? 16 : 32;
}

/* Copy a piece of n kept bytes (n <= 64) by one move of 32 bytes, or of
 * 64 past 32. */
static inline void piece_copy(void *dst, const void *src, uint32_t n)
{
    if (n <= 32)
        memcpy(dst, src, 32);
    else
        memcpy(dst, src, 64);
}

/* Does key0 come back as args[0]'s copy: none kept, or the same kept
 * bytes? So when argument 1 is the first key (rq_arg1_is_key); otherwise
 * the bytes are compared by their units (bytes past the kept lengths may
 * differ, then it is kept twice). */
static inline int key0_is_arg0(const rc_conn *c, const resp_request *r)
{
    uint32_t n = r->key0_len;
    if (n == 0)
        return 1;
    if (r->nargs == 0 || n != r->arg_len[0])
        return 0;
    if (rq_arg1_is_key(&c->rq))
        return 1;
    if (n <= 16)
        return memcmp(r->key0, r->args[0], 16) == 0;
    if (n <= 32)
        return memcmp(r->key0, r->args[0], 32) == 0;
    return memcmp(r->key0, r->args[0], 64) == 0;
}

/* The arguments of r whose prefixes are kept (args[]). */
static inline uint32_t kept_args(const resp_request *r)
{
    return r->nargs < RESP_ARG_KEEP ? r->nargs : RESP_ARG_KEEP;
}

/* The most text a request of nargs kept arguments may take, with its
 * slack: two units of name, four of each argument and of the first key. */
static inline uint32_t text_most(uint32_t nargs)
{
    return RESP_NAME_MAX + (nargs + 1) * RESP_ARG_PREFIX + RQ_TEXT_SLACK;
}

/* Can the text of a request of nargs kept arguments go at the tail of f
 * without being measured first: the tail's page is held and has room for
 * the most it may take? */
static inline int text_fits_at_tail(const rq_pages *f, uint32_t nargs)
{
    return (f->tail & (RQ_PAGE - 1)) + text_most(nargs) <= RQ_PAGE && f->end != f->tail;
}

/* The bytes the text of r takes (its name name_len bytes, key0 stored
 * unless dup): what slot_pack's copies advance by. */
static inline uint32_t text_len(const resp_request *r, uint32_t name_len, int dup)
{
    uint32_t nargs = kept_args(r);
    uint32_t len = name_bytes(name_len) + (dup ? 0 : piece_bytes(r->key0_len));
    for (uint32_t i = 0; i < nargs; i++)
        len += piece_bytes(r->arg_len[i]);
    return len;
}

/* Does a text of len bytes go at the tail of f: it fits there with its
 * slack, in a page held? Otherwise text_place places it. */
static inline int text_len_fits_at_tail(const rq_pages *f, uint32_t len)
{
    return (f->tail & (RQ_PAGE - 1)) + len + RQ_TEXT_SLACK <= RQ_PAGE && f->end != f->tail;
}

/* Pack the request just decoded (e, with its pairing facts; dup:
 * key0_is_arg0) into slot s, its text at position at of the text FIFO
 * (the tail when it fits there, else text_place's), measured as it is
 * copied. An argument kept empty (a SET's value) takes no piece and is
 * not copied. */
static inline void slot_pack(rc_conn *c, rq_slot *s, const rq_entry *e, int dup, uint32_t at)
{
    const resp_request *r = &e->cmd.req;
    rq_pages *f = &c->text;
    uint32_t nargs = kept_args(r);
    uint8_t *d0 = pages_at(f, at), *d = d0;
    memcpy(d, r->name, RESP_NAME_MAX);
    d += name_bytes(e->name_len);
    for (uint32_t i = 0; i < nargs; i++) {
        uint32_t n = r->arg_len[i];
        if (n != 0) {
            piece_copy(d, r->args[i], n);
            d += piece_bytes(n);
        }
    }
    if (!dup) {
        piece_copy(d, r->key0, r->key0_len);
        d += piece_bytes(r->key0_len);
    }
    uint32_t len = (uint32_t)(d - d0);
    f->tail = at + len;
    slot_facts(s, e);
    s->key0_dup = (uint8_t)dup;
    s->whole = 0;
    s->text_pos = at;
    s->text_len = (uint16_t)len;
}

/* Pack e (dup: key0_is_arg0; its text at position at) into the slot after
 * the queued ones, whose page is held, and count it in. */
static inline rq_slot *slot_queue_packed(rc_conn *c, const rq_entry *e, int dup, uint32_t at)
{
    rq_pages *f = &c->ring;
    rq_slot *s = (rq_slot *)(void *)pages_at(f, f->tail);
    slot_pack(c, s, e, dup, at);
    f->tail += sizeof(rq_slot);
    ring_counted(c, s);
    return s;
}

/* The request of packed slot s, unpacked into cmd but for its argument
 * and key prefixes (slot_unpack_args, from *args on); its connection and
 * reply are left to the caller. */
static inline void slot_unpack_req(rc_conn *c, resp_command *cmd, const rq_slot *s,
                                   const uint8_t **args)
{
    resp_request *r = &cmd->req;
    cmd->seq = s->seq;
    cmd->in_multi = s->in_multi;
    cmd->requests_lost = s->after_loss;
    memcpy(&r->start_us, s->req_time, RQ_TIME_BYTES);
    memcpy(&r->argc, s->req_facts, RQ_FACTS_BYTES);
    r->end_pos = s->req_end;
    const uint8_t *p = pages_at(&c->text, s->text_pos);
    memcpy(r->name, p, RESP_NAME_MAX); /* its NUL among its units */
    *args = p + name_bytes(s->name_len);
}

/* The command of packed slot s, unpacked into the pipeline's out buffer
 * but for its argument and key prefixes (slot_unpack_args, from *args on);
 * its reply is left to the caller. */
static inline resp_command *slot_unpack_head(rc_conn *c, const rq_slot *s,
                                             const uint8_t **args)
{
    resp_command *cmd = &c->rp->out;
    cmd->conn = c->cc;
    cmd->conn_word = c->conn_word;
    slot_unpack_req(c, cmd, s, args);
    return cmd;
}

/* The argument and key prefixes of the request in r (its lengths already
 * unpacked), from its slot's text at p on (after the name); key0_dup: the
 * slot's. */
static inline void slot_unpack_args(resp_request *r, const uint8_t *p, uint8_t key0_dup)
{
    for (uint32_t i = 0; i < r->nargs; i++) {
        uint32_t n = r->arg_len[i];
        if (n != 0) {
            piece_copy(r->args[i], p, n);
            p += piece_bytes(n);
        }
    }
    piece_copy(r->key0, key0_dup ? (const uint8_t *)r->args[0] : p, r->key0_len);
}

/* The command of packed slot s, unpacked into the pipeline's out buffer
 * (its reply is left to the caller). */
static inline resp_command *slot_unpack(rc_conn *c, const rq_slot *s)
{
    const uint8_t *p;
    resp_command *cmd = slot_unpack_head(c, s, &p);
    slot_unpack_args(&cmd->req, p, s->key0_dup);
    cmd->args_later = 0;
    return cmd;
}

/* resp_command.args_later of a command handed over with its prefixes
 * left to resp_command_args: which command it is, so that
 * resp_command_args_fill finds the pipeline. */
enum { ARGS_LATER_OUT = 1, ARGS_LATER_STAGE = 2 };

/* Leave cmd's argument prefixes (its slot's text from args on) to
 * resp_command_args_fill; which: ARGS_LATER_*. */
static inline void args_defer(resp_pipeline *rp, resp_command *cmd, uint8_t which,
                              const uint8_t *args, uint8_t key0_dup)
{
    rp->out_args = args;
    rp->out_key0_dup = key0_dup;
    cmd->args_later = which;
}

/* Can a packed slot's command be unpacked into c's stage: no request is
 * being decoded there? (The decoder clears in_msg before request_done.) */
static inline int stage_free(const rc_conn *c)
{
    return !c->rq.in_msg || c->cur != &c->stage;
}

/* The command of packed slot s, unpacked into c's stage (stage_free),
 * whose reply is the one just decoded; the prefixes now, or (args_later)
 * when the sink asks. The stage's conn and conn_word are set for good
 * when the connection opens. */
static inline resp_command *slot_unpack_stage(rc_conn *c, const rq_slot *s)
{
    resp_pipeline *rp = c->rp;
    resp_command *cmd = &c->stage.cmd;
    const uint8_t *p;
    slot_unpack_req(c, cmd, s, &p);
    if (rp->sink.args_later) {
        args_defer(rp, cmd, ARGS_LATER_STAGE, p, s->key0_dup);
    } else {
        slot_unpack_args(&cmd->req, p, s->key0_dup);
        cmd->args_later = 0;
    }
    return cmd;
}

/* Queue whole entry e (c->cur) in slot s: the slot takes its pairing
 * facts (pairing reads and changes them there); the rest stays in the
 * entry, which slot_command hands over as it is. */
static inline void slot_of_whole(rc_conn *c, rq_slot *s, const rq_entry *e)
{
    memcpy(s, e, RQ_PAIRING_BYTES);
    s->whole = e->whole;
    s->text_pos = c->text.tail; /* no text */
    s->text_len = 0;
}

/* The capture time when s's request was complete (resp_request.ts_us). */
static inline int64_t slot_ts_us(const rc_conn *c, const rq_slot *s)
{
    if (s->whole != 0)
        return slot_whole(c, s)->cmd.req.ts_us;
    int64_t t;
    memcpy(&t, s->req_time + offsetof(resp_request, ts_us), sizeof t);
    return t;
}

/* The argument count of s's request (resp_request.argc). */
static inline uint32_t slot_argc(const rc_conn *c, const rq_slot *s)
{
    if (s->whole != 0)
        return slot_whole(c, s)->cmd.req.argc;
    uint32_t n;
    memcpy(&n, s->req_facts, sizeof n);
    return n;
}

/* The command of slot s: its whole entry's, or (slot_unpack) unpacked
 * into the pipeline's out buffer. Its reply is left to the caller. */
static inline resp_command *slot_command(rc_conn *c, const rq_slot *s)
{
    if (s->whole == 0)
        return slot_unpack(c, s);
    resp_command *cmd = &slot_whole(c, s)->cmd; /* seq, in_multi, end_pos set */
    cmd->conn = c->cc;
    cmd->conn_word = c->conn_word;
    cmd->requests_lost = s->after_loss;
    return cmd;
}

/* The first 16 bytes of s's name (name_len of them count), into name
 * (zeros when it has none). */
static inline void slot_name16(const rc_conn *c, const rq_slot *s, char name[16])
{
    if (s->whole != 0)
        memcpy(name, slot_whole(c, s)->cmd.req.name, 16);
    else if (s->text_len > 0) /* the text starts with it */
        memcpy(name, pages_at(&c->text, s->text_pos), 16);
    else
        memset(name, 0, 16);
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

/* A request of `bytes` was decoded: remember its size, and how many
 * requests in a row have had a size seen before (up to RQ_SIZES_STABLE). */
static inline void rq_sizes_learn(rc_conn *c, uint64_t bytes)
{
    if (c->qsz_varied) /* sticky: the sizes are not read any more */
        return;
    for (uint8_t i = 0; i < c->qsz_n; i++)
        if (c->qsz[i] == bytes) {
            if (c->qsz_stable < RQ_SIZES_STABLE)
                c->qsz_stable++;
            return;
        }
    c->qsz_stable = 0;
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
    return !with_time || e->kind == RQK_LOST || slot_ts_us(c, e) <= start_us;
}

#endif /* SLOTSCOPE_PAIR_INTERNAL_H */
