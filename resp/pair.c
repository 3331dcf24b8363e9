/*
 * pair.c - which reply answers which request.
 *
 * This file holds the pairing proper: requests queued (classify, the common
 * case inline), replies paired (pushes, confirmations, effects), emit, and
 * the pairing's sync state. Beside it: modes.c (MULTI/EXEC, CLIENT REPLY),
 * ring.c (the in-flight ring), loss.c (re-anchoring after a gap), conn.c
 * (connections, events, stats); pair_internal.h holds what they share.
 *
 * The decoders (decode.h) know nothing of this: they tell their owner, the
 * connection, of each message through two event tables defined at the end
 * of this file. request_begin hands the request decoder an entry (a whole
 * entry from the pipeline's pool, or the connection's stage) and
 * request_done queues it in a slot; reply_begin hands the reply decoder the
 * connection's reply and reply_done pairs it with the head slot.
 *
 * A Redis server answers the requests of one connection in the order it
 * received them, one reply each, so pairing is a FIFO per connection: a ring
 * of in-flight requests (pipelining of any depth, bounded by max_inflight per
 * connection and max_inflight_total overall, per partition of connections:
 * capture.h). The exceptions a real server
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
 *     transactions section of modes.c).
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
 * boundaries, no request is waiting, the server has completed a reply that
 * no certain request was waiting for, and no reply is owed that the bytes
 * show (owed_min: one for a stretch of requests lost; for requests given up
 * over a reply gap, theirs less the most the gap can hold; each reply that
 * finds nothing queued pays one). Requests decoded before that are
 * still matched positionally (to keep the queue in step) but emitted as
 * RESP_UNANSWERED, their replies counted as unpaired. A connection picked up
 * mid-stream starts in that state without being counted as out of sync,
 * unless its request stream starts cleanly at a message boundary (see
 * request_resynced). Before all this, a gap the sizes account for, checked
 * by ACK numbers, keeps the pairing (see loss.c); and a reply whose
 * packet had not acknowledged the head request is never matched to it.
 * Known limit: a stretch of requests lost is taken to owe one reply (it
 * holds at least one request); when it held more and the client pipelines
 * across it, a request sent between two owed replies whose packets
 * acknowledged it can still be paired one off; nothing in the bytes tells
 * those cases apart. Known limits of the
 * transaction modes (see below): a HELLO queued in MULTI is taken to succeed
 * when EXEC runs (its element is not checked); a transaction holding CLIENT
 * REPLY that turns out not to run (EXECABORT, WATCH) while requests were
 * pipelined after its EXEC loses the pairing (counted out of sync); with
 * replies off before MULTI nothing tells whether EXEC ran, it is taken to.
 */
#include <stddef.h>
#include <stdlib.h>

#include "resp/pair_internal.h"

static const char *const sub_words[SW_COUNT] = {
    "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"
};

/* ---------------------------------------------------------------- emit */

/* The fields of a reply that the reply decoder leaves to its owner: no
 * error, no raw bytes, no gap, started when its ts_us says (for a reply
 * read whole, rp_out.whole, the decoder has set every other field). */
static inline void reply_reset_owned(resp_reply *r)
{
    r->start_us = r->ts_us;
    r->err = RESP_ERR_NONE;
    r->raw = NULL;
    r->raw_len = 0;
    r->gap = 0;
}

/* Reset a reply to "none", started at ts, but for its error text and
 * redirection: an in-flight entry's are already cleared (see emit), and the
 * reply being decoded has them read only once an error reply sets them. */
static inline void reply_reset_fields(resp_reply *r, int64_t ts)
{
    r->ts_us = ts;
    r->end_frame = 0;
    r->type = RESP_T_NONE;
    r->integer = 0;
    r->elements = 0;
    r->bytes = 0;
    r->end_pos = 0;
    reply_reset_owned(r);
}

/* Clear an entry's error text and redirection (see emit). */
static void reply_clear_error(resp_reply *r)
{
    r->errtext[0] = '\0';
    r->redir.slot = -1;
    r->redir.port = 0;
    r->redir.host[0] = '\0';
}

/* Copy the reply decoded (rpd.rep) into the command handed to the sink:
 * the fields every reply sets, and the error text and redirection only for
 * an error (they are kept cleared otherwise: see emit). */
static inline void reply_copy(resp_reply *dst, const resp_reply *src)
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

static void reply_modes_update(rc_conn *c);

/* Pop the head unanswered: emitted as such (or, expecting nothing, as
 * RESP_NO_REPLY), unless it stands for a request lost in a gap. */
void pair_pop_unanswered(rc_conn *c)
{
    rq_slot *h = ring_head(c);
    if (h->kind != RQK_LOST)
        pair_emit(c, h, expects_no_reply(h) ? RESP_NO_REPLY : RESP_UNANSWERED);
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
    if (cmd->reply.err != RESP_ERR_NONE) {
        if (cmd->reply.err == RESP_ERR_MOVED || cmd->reply.err == RESP_ERR_ASK)
            rc_proofs_redirect(rp, &cmd->reply.redir);
        reply_clear_error(&cmd->reply);
    }
}

/* The command of slot e, as slot_command, but a packed slot's argument
 * prefixes are left to resp_command_args when the sink asks for that (most
 * commands are counted without them). */
static inline resp_command *slot_command_lazy(rc_conn *c, const rq_slot *e)
{
    resp_pipeline *rp = c->rp;
    if (e->whole != 0 || !rp->sink.args_later)
        return slot_command(c, e);
    const uint8_t *args;
    resp_command *cmd = slot_unpack_head(c, e, &args);
    args_defer(rp, cmd, ARGS_LATER_OUT, args, e->key0_dup);
    return cmd;
}

/* The command of slot e with the reply just decoded: a packed slot's is
 * unpacked into the stage, around that reply, when the stage is free;
 * otherwise (a whole entry, or the out buffer) the reply is copied in. */
static inline __attribute__((always_inline)) resp_command *paired_command(rc_conn *c,
                                                                           const rq_slot *e)
{
    resp_command *cmd;
    if (e->whole == 0 && stage_free(c)) {
        cmd = slot_unpack_stage(c, e);
        if (cmd->reply.err == RESP_ERR_NONE && cmd->reply.errtext[0] != '\0')
            reply_clear_error(&cmd->reply); /* an earlier error's, not sent */
        return cmd;
    }
    cmd = slot_command_lazy(c, e);
    reply_copy(&cmd->reply, c->rpd.rep);
    return cmd;
}

/* emit for a request paired with certainty (outcome RESP_OK). Inline: the
 * common path of reply_done calls it. */
static inline __attribute__((always_inline)) void emit_paired(rc_conn *c, rq_slot *e)
{
    resp_command *cmd = paired_command(c, e);
    resp_reply *dst = &cmd->reply;
    cmd->outcome = RESP_OK;
    cmd->resp3 = c->resp3;
    if (e->got_reply)
        dst->start_us = e->first_reply_us;
    if (e->keep && c->rpd.keeping && !c->keep_over) {
        dst->raw = c->keep;
        dst->raw_len = c->keep_len;
        resp_command_args(cmd);
        rc_proofs_cluster(c->rp, cmd);
    }
    sizes_learn(c, &cmd->req, e->name_len, dst);
    c->st.paired++;
    emit_to_sink(c, cmd);
}

void resp_command_args_fill(const resp_command *cmd)
{
    /* only the out buffer and a stage are handed over with args_later set */
    resp_command *m = (resp_command *)(uintptr_t)cmd;
    const resp_pipeline *rp;
    if (cmd->args_later == ARGS_LATER_STAGE)
        rp = ((const rc_conn *)(const void *)((const char *)cmd -
                                              offsetof(rc_conn, stage.cmd)))->rp;
    else
        rp = (const resp_pipeline *)(const void *)((const char *)cmd -
                                                   offsetof(resp_pipeline, out));
    slot_unpack_args(&m->req, rp->out_args, rp->out_key0_dup);
    m->args_later = 0;
}

/* Hand cmd to the sink without a reply (outcome RESP_UNANSWERED or
 * RESP_NO_REPLY). */
static inline void emit_without_reply(rc_conn *c, resp_command *cmd, resp_outcome outcome)
{
    cmd->outcome = outcome;
    cmd->resp3 = c->resp3;
    reply_reset_fields(&cmd->reply, 0);
    cmd->reply.nokey = 0;
    if (outcome == RESP_UNANSWERED)
        c->st.unpaired_requests++;
    emit_to_sink(c, cmd);
}

/* Hand one command to the sink: slot e unpacked into the pipeline's out
 * buffer or its stage, with (outcome RESP_OK) the reply just decoded.
 *
 * The out buffer's reply.errtext and reply.redir are kept cleared ("",
 * slot -1, port 0, host "") except while an error reply is in the sink's
 * hands: they are copied only for errors. */
void pair_emit(rc_conn *c, rq_slot *e, resp_outcome outcome)
{
    if (outcome == RESP_OK) {
        if (!e->uncertain) {
            emit_paired(c, e);
            return;
        }
        outcome = RESP_UNANSWERED; /* a reply came, but whose is not known */
        c->st.unpaired_replies++;
    }
    emit_without_reply(c, slot_command_lazy(c, e), outcome);
}

static void pair_lost_owing(rc_conn *c, uint32_t owed);

/* The replies a request given up still owes, at least: nreply, none when
 * their number depends on replies (dynamic). */
static uint32_t replies_owed(uint32_t nreply, uint8_t dynamic)
{
    return dynamic ? 0 : nreply;
}

/* What owed_min becomes when e is dropped and every request queued is given
 * up: no reply byte was lost, so all of them still owe their replies, and
 * so does e (unless a reply gap is pending: how many it held is not known,
 * and nothing is known to be owed, as at any loss of replies). */
static uint32_t owed_at_drop(rc_conn *c, const rq_entry *e)
{
    if (c->rp_gap_pending)
        return 0;
    uint64_t owed = (uint64_t)c->owed_min + replies_owed(e->nreply, e->dynamic);
    for (uint32_t i = 0; i < c->count; i++) {
        const rq_slot *q = ring_at(c, i);
        owed += replies_owed(q->nreply, q->dynamic);
    }
    return owed > UINT32_MAX ? UINT32_MAX : (uint32_t)owed;
}

/* The request being decoded (e, c->cur) cannot be queued (a cap, or no
 * memory): the FIFO lost a position, so the pairing after it is unknown;
 * the request itself is emitted unanswered, as it is: from its whole
 * entry, or copied from the stage into the out buffer (emitting it would
 * clear the stage's reply, where a reply may be being decoded). */
static PAIR_RARE void stage_drop(rc_conn *c, rq_entry *e)
{
    c->cur_dropped = 0;
    c->rp->closed.dropped_requests++;
    pair_lost_owing(c, owed_at_drop(c, e));
    resp_command *cmd = &e->cmd;
    if (e == &c->stage) {
        cmd = &c->rp->out;
        cmd->seq = e->cmd.seq;
        cmd->in_multi = e->cmd.in_multi;
        cmd->args_later = 0;
        cmd->req = e->cmd.req;
    }
    cmd->conn = c->cc;
    cmd->conn_word = c->conn_word;
    cmd->requests_lost = e->after_loss;
    emit_without_reply(c, cmd, RESP_UNANSWERED);
}

/* Queue whole entry e (c->cur) in a slot: the slot takes it as it is (the
 * next request is decoded elsewhere). NULL when no memory for a page. */
static inline rq_slot *request_queue_whole(rc_conn *c, rq_entry *e)
{
    rq_slot *s = ring_push(c);
    if (s == NULL)
        return NULL;
    slot_of_whole(c, s, e);
    c->cur = &c->stage;
    return s;
}

/* Queue the request just decoded (e, c->cur): its slot, or NULL when it
 * could not be queued (no memory for a page). A whole entry goes to the
 * slot as it is, the stage is packed. */
static inline rq_slot *request_queue(rc_conn *c, rq_entry *e)
{
    if (e->whole != 0)
        return request_queue_whole(c, e);
    if (pages_need(c->rp, &c->ring, sizeof(rq_slot)) != 0)
        return NULL;
    const resp_request *r = &e->cmd.req;
    int dup = key0_is_arg0(c, r);
    uint32_t at = c->text.tail;
    if (!text_fits_at_tail(&c->text, kept_args(r)) &&
        text_place(c, r, e->name_len, dup, &at) != 0)
        return NULL;
    return slot_queue_packed(c, e, dup, at);
}

/* Emit requests at the head that expect no reply (slow part). */
void pair_flush_no_reply_slow(rc_conn *c)
{
    while (c->count > 0) {
        rq_slot *h = ring_head(c);
        if (!expects_no_reply(h))
            break;
        pair_emit(c, h, RESP_NO_REPLY);
        ring_pop(c);
        c->noreply_queued--;
    }
}

/* Emit every queued request as unanswered (no-reply ones as such). */
void pair_flush_all(rc_conn *c)
{
    while (c->count > 0)
        pair_pop_unanswered(c);
    c->noreply_queued = 0;
}

/* ---------------------------------------------------------------- sync */

/* Replies were lost (a gap or garbage on the server side): any request in
 * flight may have been answered in the lost bytes, so all are given up;
 * owed: the replies still to come that the bytes show (owed_min). */
static void pair_lost_owing(rc_conn *c, uint32_t owed)
{
    c->owed_min = owed;
    c->rp_gap_pending = 0;
    c->st.out_of_sync = 1;
    c->synced = 0;
    c->reply_since_loss = 0;
    c->rpd.keeping = 0;
    pair_flush_all(c);
}

void pair_lost(rc_conn *c)
{
    pair_lost_owing(c, 0); /* how many replies the loss took is not known */
}

/* pair_lost for a gap of len bytes in the reply stream: the requests given
 * up still owe the replies it cannot have held. */
void pair_lost_gap(rc_conn *c, uint64_t len)
{
    pair_lost_owing(c, owed_after_reply_gap(c, c->count, len));
}

/* One more reply is owed: a request was lost. */
static void owed_add(rc_conn *c)
{
    if (c->owed_min < UINT32_MAX)
        c->owed_min++;
}

/* A reply came that answers no request queued: it pays one owed. */
static inline void owed_paid(rc_conn *c)
{
    if (c->owed_min > 0)
        c->owed_min--;
}

/* Requests were lost (a gap or garbage on the client side). The requests
 * already queued came before the loss and the server answers them first, in
 * order, so they stay and will pair. After them come an unknown number of
 * replies for what was lost: requests decoded from now on are uncertain until
 * solid ground. */
void pair_lost_requests(rc_conn *c)
{
    c->rq_loss_pending = 1;
    /* at least one request was lost, whose reply is to come, unless a reply
     * found nothing queued since the last request was queued and paid no
     * older debt (a client that waited for it before sending more) */
    if (c->orphans == 0 || c->owed_min > 0)
        owed_add(c);
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
static void request_resynced(void *owner)
{
    rc_conn *c = owner;
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
 * decoders are at boundaries and the server has spoken since the loss. After
 * requests were lost, a reply must also have shown itself as one of theirs
 * (owed_min): their replies come first, and the uncertain requests
 * after the loss take the replies as they come, one each, so a queue they
 * emptied may still owe the lost ones' replies (libs-a/full.pcap, 10% loss:
 * iovalkey's CLIENT SETNAME lost, its READONLY took that +OK, CLUSTER SLOTS
 * was taken as certain and paired with READONLY's +OK). */
static void try_regain_sync(rc_conn *c)
{
    const rp_dec *d = &c->rpd;
    if (c->count == 0 && c->reply_since_loss && c->owed_min == 0 && !d->in_msg &&
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
 *   - REPL_SHAPE_RUN "replies" in a row that are commands (repl_shape)
 *     while the client side has sent nothing at all: the master's stream
 *     too, found without waiting up to a second for the replica's ACK. No
 *     server sends a client commands; a reply to a request sent before the
 *     capture began is one message, not a run of them shaped so.
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
    reply_modes_update(c);
    c->repl_mid = (uint8_t)mid;
    c->replication = 1;
    c->st.replication = 1;
    c->st.replication_midstream = 1;
    /* Nothing was paired (repl_watch): the replies counted so far were the
     * master's stream (when it spoke before the replica's first ACK). */
    c->st.unpaired_replies = 0;
    c->st.replies = 0;
    rp_sink(&c->rpd);
    /* the master: the side that does not ACK */
    rc_proofs_master(c->rp, mid == REPL_MID_CLIENT ? &c->cc->client : &c->cc->server);
    if (mid != REPL_MID_CLIENT)
        return;
    /* What was queued was the master's stream, not requests. */
    c->st.replication_reversed = 1;
    c->st.replication_skipped += c->count;
    c->st.requests -= c->count; /* decoded, never emitted */
    c->part->inflight -= c->count;
    ring_release_all(c);
    c->noreply_queued = 0;
    c->rq.in_msg = 0;
}

#define REPL_SHAPE_RUN 3

/* Is the whole reply on a watched connection shaped like a command of a
 * master's stream (an array whose first element is a command's name and
 * whose third is not an integer, as a subscription's confirmation's is),
 * sent to a side that has sent nothing? */
static int repl_shape(const rc_conn *c)
{
    const rp_dec *d = &c->rpd;
    return c->st.requests == 0 && c->count == 0 && d->rep->type == RESP_T_ARRAY &&
           d->elem0_set && !d->elem2_set && rd_known_command(d->elem0, d->elem0_len);
}

/* A whole reply on a watched connection: 1 when it was a replication link's
 * REPLCONF, or completed a run of its stream's commands (the link is then
 * recognised; the reply is not paired). */
static PAIR_RARE int repl_reply(rc_conn *c)
{
    const rp_dec *d = &c->rpd;
    int weak = c->cc->side_source == CAP_SIDE_SHAPE || c->cc->side_source == CAP_SIDE_GUESS;
    if (c->st.paired > 0) { /* a reply answered a request: a client's */
        c->repl_watch = 0;
        reply_modes_update(c);
        return 0;
    }
    if (c->rpd.rep->type != RESP_T_ARRAY || !d->elem0_set ||
        !rd_eq_ci(d->elem0, d->elem0_len, "REPLCONF")) {
        /* an ACK is the replica's: a run is of the other commands */
        c->repl_cmds = repl_shape(c) ? (uint8_t)(c->repl_cmds + 1) : 0;
        if (c->repl_cmds < REPL_SHAPE_RUN)
            return 0;
        repl_found(c, REPL_MID_SERVER);
        return 1;
    }
    if (!d->elem1_set)
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

/* ---------------------------------------------------------------- requests */

/* Make an entry ready for a request starting at ts. Field by field: a
 * memset of the header compiles to "rep stos", whose start-up cost is most
 * of this. The name's first RESP_NAME_ZEROED bytes are cleared (the
 * analysis compares them as words); the rest of it and the argument
 * prefixes are written before they are read (stale bytes there, past
 * their kept lengths, are an earlier command's, never a credential); so
 * are ts_us and bytes (rq_complete, before the request can be emitted)
 * and name_len (request_done). */
static inline void request_reset(rq_entry *e, int64_t ts)
{
    resp_request *r = &e->cmd.req;
    memset(r->name, 0, RESP_NAME_ZEROED); /* see resp_request.name */
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

/* Where the next request is decoded: the whole entry the connection holds
 * unqueued (a request that began and was not queued), else a new one, else
 * the stage. */
static inline rq_entry *request_target(rc_conn *c)
{
    if (c->cur->whole != 0)
        return c->cur;
    rq_entry *e = whole_take(c);
    return e != NULL ? e : &c->stage;
}

/* Is there room for one more request after the queued ones in pages
 * already held: a slot, and a text page begun (a text that does not fit
 * takes the next page when the request is complete, from the pool)? */
static inline int room_held(const rc_conn *c)
{
    return c->ring.end - c->ring.tail >= sizeof(rq_slot) && c->text.end != c->text.tail;
}

/* request_begin in general: regaining sync, taking pages, the
 * in-flight caps (past them, or out of memory, the request is decoded all
 * the same but not queued: cur_dropped). Pages are taken when a request
 * starts: a connection's first request allocates nothing while it goes
 * by, or after it (unless its text passes what its page has left). */
static PAIR_APART rq_entry *request_slot_general(rc_conn *c, int64_t ts)
{
    resp_pipeline *rp = c->rp;
    if (!c->synced)
        try_regain_sync(c);
    c->cur_dropped = !(c->count < rp->cfg.max_inflight &&
                       c->part->inflight < rp->inflight_part_cap &&
                       pages_need(rp, &c->ring, sizeof(rq_slot)) == 0 &&
                       pages_need(rp, &c->text, 1) == 0);
    rq_entry *e = request_target(c);
    request_reset(e, ts);
    return e;
}

/* A request starts (rq_out.begin): the entry the decoder writes it into,
 * c->cur (request_target). The common case, a connection in sync with
 * room in its pages, under the caps, is settled here (what
 * request_slot_general would do for it); the rest goes to
 * request_slot_general. */
static resp_request *request_begin(void *owner, int64_t ts)
{
    rc_conn *c = owner;
    const resp_pipeline *rp = c->rp;
    rq_entry *e;
    if (c->synced && room_held(c) && c->count < rp->cfg.max_inflight &&
        c->part->inflight < rp->inflight_part_cap) {
        c->cur_dropped = 0;
        e = request_target(c);
        request_reset(e, ts);
    } else {
        e = request_slot_general(c, ts);
    }
    c->cur = e;
    return &e->cmd.req;
}

/* What began was no request, or was dropped (rq_out.dropped). */
static void request_dropped(void *owner)
{
    rc_conn *c = owner;
    c->cur_dropped = 0;
    whole_release_cur(c);
}

/* Malformed request bytes (rq_out.error): a loss on the request side. */
static void request_error(void *owner, int limit)
{
    rc_conn *c = owner;
    if (limit)
        pair_limit_hit(c);
    pair_lost_requests(c);
}

/* Which special kind a request is, from its name and first arguments.
 * Called for every request: a switch on the first letter and the length
 * settles almost every name without a comparison. */
static uint8_t classify_request(rc_conn *c, rq_entry *e)
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
        if (RD_NAME_IS(n, len, "REPLCONF")) {
            if (rd_eq_ci(a0, l0, "ACK"))
                return RQK_REPLCONF_ACK;
            rc_proofs_replconf(c->rp, c->cc, &e->cmd.req); /* a replica's handshake */
        }
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


/* request_done for every case but the common one; kind is what
 * classify_request said. */
static PAIR_APART void request_done_general(rc_conn *c, rq_entry *e, uint8_t kind)
{
    c->st.requests++;
    e->cmd.seq = c->seq++;
    e->got_reply = 0;
    e->first_reply_us = 0;
    e->kind = kind;
    request_modes(c, e);
    e->keep = (uint8_t)(e->cmd.req.name[0] == 'C' && resp_keep_reply(&e->cmd.req));
    e->uncertain = (uint8_t)!c->synced;
    e->after_loss = c->rq_loss_pending;
    c->rq_loss_pending = 0;
    if (c->repl_watch && e->kind == RQK_REPLCONF_ACK && c->st.paired == 0)
        repl_found(c, REPL_MID_SERVER); /* the ACK itself is a request as ever */
    e->req_end = c->rq.msg_off + e->cmd.req.bytes + c->rq_lost_bytes;
    e->cmd.req.end_pos = e->req_end;
    rq_sizes_learn(c, e->cmd.req.bytes);
    rq_slot *s = c->cur_dropped ? NULL : request_queue(c, e);
    if (s == NULL) {
        stage_drop(c, e);
        return;
    }
    c->orphans = 0; /* replies that found nothing queued: before this one */
    if (expects_no_reply(s))
        c->noreply_queued++;
    c->part->inflight++;
    flush_no_reply(c);
}

/* The end of request_done: e was queued in slot s, or could not be (s
 * NULL). */
static inline void request_done_end(rc_conn *c, rq_entry *e, const rq_slot *s)
{
    if (s == NULL) {
        stage_drop(c, e);
        return;
    }
    c->orphans = 0;
    c->part->inflight++;
    flush_no_reply(c);
}

/* request_done_packed when pages may have to be taken. */
static PAIR_APART void request_done_packed_slow(rc_conn *c, rq_entry *e)
{
    request_done_end(c, e, request_queue(c, e));
}

/* The end of request_done for a request in the stage: packed and queued.
 * Out of line (a tail call), so that request_done's path for a whole
 * entry saves no registers for packing. Its common case, a slot and the
 * text in pages held (the most the text may take, or else its measured
 * length, fits at the tail), calls nothing but in tail position, so that
 * it saves few registers too; taking pages is request_done_packed_slow's. */
static PAIR_APART void request_done_packed(rc_conn *c, rq_entry *e)
{
    const resp_request *r = &e->cmd.req;
    if (c->ring.end - c->ring.tail < sizeof(rq_slot)) {
        request_done_packed_slow(c, e);
        return;
    }
    int dup = key0_is_arg0(c, r);
    if (!text_fits_at_tail(&c->text, kept_args(r)) &&
        !text_len_fits_at_tail(&c->text, text_len(r, e->name_len, dup))) {
        request_done_packed_slow(c, e);
        return;
    }
    request_done_end(c, e, slot_queue_packed(c, e, dup, c->text.tail));
}

/* A request is complete (rq_out.done): queue it. The common case, a
 * request of no special kind that keeps no reply, on a connection in no
 * mode and under the cap, is settled here (what request_done_general does
 * for it, with no call on the way: no registers to save); the rest goes
 * there. */
static void request_done(void *owner, uint8_t name_len)
{
    rc_conn *c = owner;
    rq_entry *e = c->cur;
    e->name_len = name_len;
    e->sub_word = 0;
    e->hello_proto = 0;
    uint8_t kind = classify_request(c, e);
    if (kind != RQK_NORMAL || c->in_multi || c->reply_off || c->skip_next || c->cur_dropped ||
        e->cmd.req.name[0] == 'C') {
        request_done_general(c, e, kind);
        return;
    }
    c->st.requests++;
    e->cmd.seq = c->seq++;
    e->nreply = 1; /* request_modes: no mode, one reply */
    e->kind = RQK_NORMAL;
    e->keep = 0;
    e->got_reply = 0;
    e->dynamic = 0;
    e->first_reply_us = 0;
    e->cmd.in_multi = 0;
    e->uncertain = (uint8_t)!c->synced;
    e->after_loss = c->rq_loss_pending;
    c->rq_loss_pending = 0;
    e->req_end = c->rq.msg_off + e->cmd.req.bytes + c->rq_lost_bytes;
    e->cmd.req.end_pos = e->req_end;
    rq_sizes_learn(c, e->cmd.req.bytes);
    if (e->whole == 0) {
        request_done_packed(c, e);
        return;
    }
    request_done_end(c, e, request_queue_whole(c, e));
}

/* ---------------------------------------------------------------- replies */

/* reply_begin for a head of kind RQK_EXEC or RQK_SYNC, from its keep
 * flags on. */
static PAIR_RARE resp_reply *reply_start_rare(rc_conn *c, rq_slot *h, int64_t ts)
{
    resp_reply *r = &c->stage.cmd.reply;
    if (h->kind == RQK_SYNC) {
        /* SYNC is answered by an RDB payload without a final CRLF, then the
         * replication stream: neither is a reply. */
        c->replication = 1;
        c->st.replication = 1;
        rp_sink(&c->rpd);
        rc_proofs_master(c->rp, &c->cc->server);
        pair_emit(c, h, RESP_NO_REPLY);
        ring_pop(c);
        flush_no_reply(c);
    } else {
        if (h->tx & TXF_TRIM) { /* EXEC's array will be short (see tx_exec) */
            c->rpd.trim_at = c->rpd.msg_off + 1;
            c->rpd.trim_decl = h->tx_elems.queued;
            c->rpd.trim_to = h->tx_elems.sent;
        }
        c->rpd.keeping = (uint8_t)(h->keep && !h->uncertain);
    }
    reply_reset_fields(r, ts);
    return r;
}

/* What a connection resets when a reply starts: the ACK it carries, and
 * no bytes kept (reply_begin may then ask for them). */
static inline void reply_start_conn(rc_conn *c)
{
    c->rep_ack = c->ev_ack;
    c->keep_len = 0;
    c->keep_over = 0;
    c->rpd.keeping = 0;
}

/* A reply starts (rp_out.begin). It is decoded into the stage's reply
 * (rpd.rep), and handed over in place or copied into the command handed
 * over when it is paired (paired_command). */
static resp_reply *reply_begin(void *owner, int64_t ts)
{
    rc_conn *c = owner;
    resp_reply *r = &c->stage.cmd.reply;
    reply_start_conn(c);
    if (c->count != 0) {
        rq_slot *h = ring_head(c);
        if (h->kind >= RQK_EXEC) /* rare: a tail call, no frame here */
            return reply_start_rare(c, h, ts);
        c->rpd.keeping = (uint8_t)(h->keep && !h->uncertain);
    }
    reply_reset_fields(r, ts);
    return r;
}

/* Raw bytes of a reply being kept (rp_out.keep). */
static void reply_keep(void *owner, const uint8_t *p, size_t n)
{
    rc_conn *c = owner;
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
         * capped too, or N connections could hold N x max_kept_reply (per
         * partition of connections: capture.h) */
        uint64_t total = c->part->kept - c->keep_cap + ncap;
        uint8_t *nb = total > c->rp->kept_part_cap ? NULL : realloc(c->keep, ncap);
        if (nb == NULL) {
            c->keep_over = 1;
            pair_limit_hit(c);
            return;
        }
        c->part->kept = total;
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
    c->rpd.keeping = 0;
    if (c->keep != NULL) {
        c->part->kept -= c->keep_cap;
        free(c->keep);
        c->keep = NULL;
        c->keep_cap = 0;
    }
}

/* The head got its reply (emitted already): it leaves the queue, the
 * reply's kept bytes go, and the no-reply requests now at the head are
 * emitted. */
static inline __attribute__((always_inline)) void head_replied(rc_conn *c)
{
    ring_pop(c);
    keep_done(c);
    flush_no_reply(c);
}

/* A reply that found no request queued: counted, unpaired. */
static inline void reply_orphan(rc_conn *c)
{
    c->st.replies++;
    owed_paid(c);
    if (c->orphans < UINT32_MAX - 1)
        c->orphans++;
    c->st.unpaired_replies++;
    keep_done(c);
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

/* After monitor, the subscription counts or repl_watch changed: may a
 * reply now be something other than an answer (rc_conn.reply_modes)? */
static void reply_modes_update(rc_conn *c)
{
    c->reply_modes = (uint8_t)(c->monitor || subscribed(c) || c->repl_watch);
    c->rpd.want_elem1 = c->repl_watch;
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
    reply_modes_update(c);
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
static void exec_effects(rc_conn *c, const rq_slot *h)
{
    const resp_reply *r = c->rpd.rep;
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
static void reply_effects(rc_conn *c, const rq_slot *h)
{
    if (h->kind == RQK_EXEC) {
        if (h->tx != 0 || h->hello_proto != 0)
            exec_effects(c, h);
        return;
    }
    const resp_reply *r = c->rpd.rep;
    const rp_dec *d = &c->rpd;
    int ok = (r->err == RESP_ERR_NONE && r->type != RESP_T_ERROR && r->type != RESP_T_BLOBERR);
    if (!ok)
        return;
    switch (h->kind) {
    case RQK_MONITOR:
        if (r->type == RESP_T_SIMPLE && rd_eq_ci(d->status, d->status_len, "OK")) {
            c->monitor = 1;
            c->st.monitor = 1;
            reply_modes_update(c);
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
        reply_modes_update(c);
        break;
    case RQK_PSYNC:
        c->replication = 1;
        c->st.replication = 1;
        rp_sink(&c->rpd);
        rc_proofs_master(c->rp, &c->cc->server);
        break;
    default:
        break;
    }
}

/* The request at the head, for the reply just decoded; NULL when nothing
 * is queued. */
static inline rq_slot *reply_head(rc_conn *c)
{
    return c->count ? ring_head(c) : NULL;
}

/* The reply just decoded cannot answer the head h (reply_may_answer): it
 * is one for a request before h that was not seen. Counted unpaired, h
 * stays. When h was certain, the pairing was not what it seemed (a
 * mid-stream start that looked clean): nothing queued is certain now. */
static PAIR_RARE void reply_not_for_head(rc_conn *c, rq_slot *h)
{
    c->st.unpaired_replies++;
    owed_paid(c);
    if (!h->uncertain) {
        c->st.out_of_sync = 1;
        c->synced = 0;
        for (uint32_t i = 0; i < c->count; i++)
            ring_at(c, i)->uncertain = 1;
    }
    c->reply_since_loss = 1;
    keep_done(c);
}

/* Is the reply decoded a MOVED or ASK for another slot than h's keys
 * (one slot, all of it seen)? A node redirects a command for the slot of
 * its keys (Redis Cluster specification, "Moved redirection"): such a
 * reply answers another request, and the pairing is off (a reply lost
 * where nothing showed it). Out of line: only redirects come here. */
static PAIR_RARE int redirect_elsewhere(rc_conn *c, const rq_slot *h)
{
    const resp_reply *r = c->rpd.rep;
    if (r->redir.slot < 0) /* not a redirect (error.c: 0..16383, else -1) */
        return 0;
    const resp_request *q = &slot_command(c, h)->req;
    return q->nkeys > 0 && !q->multi_slot && !q->slot_unknown && q->slot >= 0 &&
           q->slot != r->redir.slot;
}

/* reply_done for every case but the common one. */
static PAIR_APART void reply_done_general(rc_conn *c, rq_slot *h, resp_type t)
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
            h->first_reply_us = c->rpd.rep->start_us;
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
            pair_emit(c, h, RESP_OK);
            ring_pop(c);
            flush_no_reply(c);
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
        keep_done(c);
        return;
    }

    /* 3. A reply for the head. */
    if (h == NULL) {
        reply_orphan(c);
        return;
    }
    c->st.replies++;
    if (!reply_may_answer(c, h, c->rpd.rep->start_us, h->uncertain)) {
        /* it answers a request before the head that was not seen */
        reply_not_for_head(c, h);
        return;
    }
    if (t == RESP_T_ERROR && !h->uncertain && redirect_elsewhere(c, h)) {
        /* not h's reply: where the stream stands is not known */
        c->st.redirect_mismatch++;
        c->st.unpaired_replies++;
        keep_done(c);
        pair_lost(c);
        return;
    }
    if (h->kind == RQK_LOST) { /* the reply of a request lost in a gap */
        c->st.unpaired_replies++;
        head_replied(c);
        return;
    }
    if (h->kind >= RQK_MONITOR) { /* a reply with effects: rare */
        if (h->kind == RQK_EXEC && h->nreply > 1) {
            /* a transaction answered by loose replies (tx_exec): not the
             * last one */
            if (!h->got_reply) {
                h->got_reply = 1;
                h->first_reply_us = c->rpd.rep->start_us;
            }
            h->nreply--;
            if (h->uncertain)
                c->st.unpaired_replies++;
                    keep_done(c);
            return;
        }
        reply_effects(c, h);
    }
    pair_emit(c, h, RESP_OK);
    head_replied(c);
}

/* Two common cases of reply_done_general after a loss, settled as it
 * would settle them, with fewer tests: a reply (not a push, no reply
 * modes) that finds nothing queued, or whose head is an uncertain request
 * of no special kind that it may answer (emitted unanswered: whose reply
 * it is, is not known). Returns 0 for anything else, having changed
 * nothing. */
static inline int reply_done_unsure(rc_conn *c, rq_slot *h)
{
    if (h == NULL) {
        c->reply_since_loss = 1;
        reply_orphan(c);
        return 1;
    }
    if (!h->uncertain || h->kind >= RQK_SUB ||
        !reply_may_answer(c, h, c->rpd.rep->start_us, 1))
        return 0;
    c->reply_since_loss = 1;
    c->st.replies++;
    pair_emit(c, h, RESP_OK); /* uncertain: emitted unanswered */
    head_replied(c);
    return 1;
}

/* reply_done past its common case, with no reply modes: the cases of
 * reply_done_unsure, else reply_done_general. Out of line, so that
 * reply_done's common path keeps as few registers as before. */
static PAIR_APART void reply_done_other(rc_conn *c, rq_slot *h, resp_type t)
{
    if (t != RESP_T_PUSH && reply_done_unsure(c, h))
        return;
    reply_done_general(c, h, t);
}

/* A reply is complete (reply_done, reply_whole): pair it. Its end_pos becomes a
 * position in the whole reply stream (lost bytes counted). The common
 * case, a reply to a request of no special kind that was certainly
 * waiting, on a connection neither in MONITOR nor subscribed, is settled
 * here with a few tests (what reply_done_general would do for it: no
 * confirmation, no push, no effects); the rest goes to
 * reply_done_general. */
static inline __attribute__((always_inline)) void reply_pair(rc_conn *c)
{
    c->rpd.rep->end_pos += c->rp_lost_bytes;
    if (c->reply_modes) {
        if (c->repl_watch && repl_reply(c))
            return;
        reply_done_general(c, reply_head(c), c->rpd.rep->type);
        return;
    }
    rq_slot *h = reply_head(c);
    resp_type t = c->rpd.rep->type;
    if (h != NULL && h->kind < RQK_SUB && !h->uncertain && h->req_end <= c->rep_ack &&
        t != RESP_T_PUSH && t != RESP_T_ERROR) {
        c->st.replies++;
        emit_paired(c, h);
        head_replied(c);
        return;
    }
    reply_done_other(c, h, t);
}

static void reply_done(void *owner)
{
    reply_pair(owner);
}

/* A simple reply read whole (rp_out.whole): reply_begin and reply_done in
 * one call. Declined, for reply_begin, when the head keeps its reply's
 * bytes or is of a rare kind. The decoder set the reply's fields but those
 * reply_reset_owned sets. */
static int reply_whole(void *owner)
{
    rc_conn *c = owner;
    if (c->count != 0) {
        const rq_slot *h = ring_head(c);
        if (h->kind >= RQK_EXEC || h->keep)
            return 0;
    }
    reply_reset_owned(c->rpd.rep);
    reply_start_conn(c);
    reply_pair(c);
    return 1;
}


/* Malformed reply bytes (rp_out.error): replies lost, the pairing unknown. */
static void reply_error(void *owner, int limit)
{
    rc_conn *c = owner;
    if (limit)
        pair_limit_hit(c);
    pair_lost(c);
}

/* ---------------------------------------------------------------- to the decoders */

const rq_out pair_rq_out = {
    .begin = request_begin,
    .done = request_done,
    .dropped = request_dropped,
    .error = request_error,
    .resynced = request_resynced,
};

const rp_out pair_rp_out = {
    .begin = reply_begin,
    .done = reply_done,
    .keep = reply_keep,
    .error = reply_error,
    .whole = reply_whole,
};
