/*
 * ops.c - logical operations: the chain a client walks for one command.
 *
 * An operation starts with a first attempt: a command with a key that is not
 * a retry. When its reply is -MOVED, -ASK or -TRYAGAIN the operation waits for
 * a retry: the same command name with the same first key from the same host,
 * sent after that reply and within cfg.op_window_us of it (on any connection,
 * to any node). Any other reply ends the operation: its latency (first request
 * to final reply), the extra time (first request to the final attempt's
 * request) and the extra round trips (attempts - 1 + ASKINGs) go to the
 * latency summaries, and the extra time to every finding the operation
 * occurred in (once each, however many times it occurred in it: a finding's
 * cost is the cost of the operations it covers; since one operation may be in
 * several findings, totals are taken from the operations, never by summing
 * findings).
 *
 * An operation that waits longer than 2 * op_window_us is judged: after MOVED
 * or ASK it was not followed (redirect_unfollowed); after TRYAGAIN the client
 * gave up, which is allowed. Not when its retry may be in what the capture
 * lost (unseen_retry_ops), or would go to a node the capture does not cover
 * (an_node_covered: unseen_target_ops; a command of it at another node then
 * starts a new operation). At the end of the capture, waiting operations are
 * judged the same way when their window has passed, or when the client moved
 * on (sent other commands, closed the connection) and shows no sign that it
 * may still retry (op_judge: redis-benchmark closes the connection and
 * retries seconds later on a new one); the others are counted as
 * abandoned_ops.
 *
 * Operations waiting for a retry live in a pool of cfg.max_ops entries, in a
 * list ordered by their last reply time; when the pool is full the oldest is
 * dropped unjudged (evicted_ops).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/internal.h"

typedef struct opkey {
    const cap_addr *host;
    const char *name;
    const char *key;
    size_t klen;
    uint32_t full;
    int64_t start_us;
    int64_t window;
} opkey;

static uint64_t op_hash(const cap_addr *host, const char *name, const char *key, size_t klen,
                        uint32_t full)
{
    uint64_t h = an_hash_fast(host, sizeof *host, full);
    h = an_hash_fast(name, strnlen(name, RESP_NAME_MAX), h);
    return an_hash_fast(key, klen, h);
}

/* Is waiting operation val the one this command retries? The cheap tests
 * come first: a client that repeats one key (benchmarks) leaves many waiting
 * operations of equal hash, most of them out of the retry window. */
static int op_eq(const void *ctx, int32_t val, const void *key)
{
    const an_analyzer *an = ctx;
    const an_op *op = &an->ops[val];
    const opkey *k = key;
    return op->used && op->last.reply_us <= k->start_us &&
           k->start_us - op->last.reply_us <= k->window && op->key_len == k->klen &&
           op->key_full_len == k->full && cap_addr_equal(&op->host, k->host) &&
           memcmp(op->key, k->key, k->klen) == 0 && strcmp(op->name, k->name) == 0;
}

/* an_map_find on the op map with op_eq inline: the same probe and the same
 * answer (the first entry in probe order that op_eq accepts), without an
 * indirect call per entry. A client repeating one key (benchmarks) leaves
 * runs of hundreds of waiting operations of equal hash, each probed. */
static int32_t op_find(const an_analyzer *an, uint64_t h, const opkey *k)
{
    const an_map *m = &an->op_map;
    for (uint32_t i = (uint32_t)h & m->mask; m->val[i] != AN_NONE; i = (i + 1) & m->mask)
        if (m->hash[i] == h && op_eq(an, m->val[i], k))
            return m->val[i];
    return AN_NONE;
}

/* The key of the operation request req of host would retry or make: its
 * first key's kept bytes. */
static opkey req_opkey(const an_analyzer *an, const cap_addr *host, const resp_request *req)
{
    size_t klen = req->key0_len < RESP_ARG_PREFIX ? req->key0_len : RESP_ARG_PREFIX;
    opkey k = {host, req->name, req->key0, klen, req->key0_full_len, req->start_us,
               an->cfg.op_window_us};
    return k;
}

static uint64_t opkey_hash(const opkey *k)
{
    return op_hash(k->host, k->name, k->key, k->klen, k->full);
}

/* Does a loss of requests between from_us and to_us on a connection to node
 * overlap the retry window of redirected attempt l (AN_NONE: any node)? */
static int loss_hides_retry(const an_analyzer *an, const an_attempt *l, int32_t node,
                            int64_t from_us, int64_t to_us)
{
    return (node == AN_NONE || l->target == AN_NONE || l->target == node) &&
           to_us > l->reply_us && from_us < l->reply_us + an->cfg.op_window_us;
}

static void list_unlink(an_analyzer *an, int32_t i)
{
    an_op *op = &an->ops[i];
    if (op->lprev != AN_NONE) an->ops[op->lprev].lnext = op->lnext; else an->op_list_head = op->lnext;
    if (op->lnext != AN_NONE) an->ops[op->lnext].lprev = op->lprev; else an->op_list_tail = op->lprev;
    op->lprev = op->lnext = AN_NONE;
}

static void list_push(an_analyzer *an, int32_t i)
{
    an_op *op = &an->ops[i];
    op->lprev = an->op_list_tail;
    op->lnext = AN_NONE;
    if (an->op_list_tail != AN_NONE)
        an->ops[an->op_list_tail].lnext = i;
    else
        an->op_list_head = i;
    an->op_list_tail = i;
}

/* Operation i joins / leaves its client's list (an_cli.op_first). */
static void client_link(an_analyzer *an, int32_t i)
{
    an_op *op = &an->ops[i];
    an_cli *c = &an->clients[op->client];
    op->cprev = 0;
    op->cnext = c->op_first;
    if (c->op_first)
        an->ops[c->op_first - 1].cprev = (uint32_t)i + 1;
    c->op_first = (uint32_t)i + 1;
}

static void client_unlink(an_analyzer *an, int32_t i)
{
    an_op *op = &an->ops[i];
    if (op->cprev)
        an->ops[op->cprev - 1].cnext = op->cnext;
    else if (an->clients[op->client].op_first == (uint32_t)i + 1)
        an->clients[op->client].op_first = op->cnext;
    if (op->cnext)
        an->ops[op->cnext - 1].cprev = op->cprev;
}

/* Operation i has ended (how) and is freed. Every end of an operation comes
 * here, so what must be told at its end is told here (a looping operation's
 * final redirect count). */
static void op_free(an_analyzer *an, int32_t i, an_op_end how)
{
    an_op *op = &an->ops[i];
    if (op->loop_reported)
        an_detect_loop_end(an, op, how);
    client_unlink(an, i);
    an_map_del(&an->op_map, op->key_hash, i);
    if (op->slot >= 0 && op->slot < AN_SLOTS && an->op_slot_n[op->slot] > 0 &&
        --an->op_slot_n[op->slot] == 0)
        an->slot_busy[op->slot] &= (uint8_t)~AN_SLOT_OPS;
    list_unlink(an, i);
    uint32_t gen = op->gen + 1;
    memset(op, 0, sizeof *op);
    op->gen = gen;
    op->lnext = an->op_free;
    op->lprev = AN_NONE;
    an->op_free = i;
    an->nops--;
}

/* Add finding f to a small set of at most AN_OP_FINDINGS (n of them held),
 * once; AN_NONE and what does not fit are left out. */
static void finding_set_add(int32_t *set, uint8_t *n, int32_t f)
{
    if (f == AN_NONE)
        return;
    for (uint8_t i = 0; i < *n; i++)
        if (set[i] == f)
            return;
    if (*n < AN_OP_FINDINGS)
        set[(*n)++] = f;
}

void an_op_charge(an_op *op, int32_t f)
{
    if (op)
        finding_set_add(op->fnd, &op->nfnd, f);
}

void an_attempt_found(an_attempt_ctx *a, int32_t f)
{
    finding_set_add(a->found, &a->nfound, f);
}

/* The operation's extra time (from its first request to end_us), to each
 * finding it occurred in and to its slot's migration window. */
static void charge_findings(an_analyzer *an, const an_op *op, int64_t end_us)
{
    for (uint8_t i = 0; i < op->nfnd; i++)
        an_finding_add_operation(an, op->fnd[i], op->first.req_us, end_us);
    an_tl_op_cost(an, op->slot, op->first.req_us, end_us);
}

/* Could the capture show the retry of op's last attempt: does it cover the
 * node the redirect named (an_node_covered), with its replicas for a read
 * (or a command not in the table) of a client that reads from replicas? A
 * capture filtered to some nodes' ports (tcpdump on one node's host) sees
 * the redirects they send but none of the retries at the others. A
 * redirect naming no node (its address unreadable) is judged as before:
 * where it points, no client can follow it. */
static int target_seen(an_analyzer *an, const an_op *op)
{
    if (op->last.target == AN_NONE)
        return 1;
    return an_node_covered(an, op->last.target,
                           op->read && an->clients[op->client].reads_replicas);
}

/* Was op redirected to a node whose traffic the capture does not hold
 * (target_seen), while a command of it comes at another node? Its retry may
 * have been served there unseen: the command may start a new operation as
 * well as retry it. Taken for a retry, the attempts of many operations
 * would make one (a redirect_loop that is not one). */
static int retry_unseeable(an_analyzer *an, const an_op *op, int32_t node)
{
    return (op->last.reply == RESP_ERR_MOVED || op->last.reply == RESP_ERR_ASK) &&
           node != op->last.target && !target_seen(an, op);
}

/* End operation i unjudged: its retry went where the capture cannot see. */
static void op_end_target_unseen(an_analyzer *an, int32_t i)
{
    an_op *op = &an->ops[i];
    an->st.unseen_target_ops++;
    an_lat_record_given_up(an, op->client, op->first.node, op->slot, &op->first, &op->last,
                           op->attempts, op->askings);
    charge_findings(an, op, op->last.reply_us);
    op_free(an, i, AN_OP_TARGET_UNSEEN);
}

/* End operation i unjudged at the end of the input: its client may still
 * retry it (abandoned_ops). */
static void op_abandon(an_analyzer *an, int32_t i)
{
    an->st.abandoned_ops++;
    charge_findings(an, &an->ops[i], an->ops[i].last.reply_us);
    op_free(an, i, AN_OP_ABANDONED);
}

/* Judge an operation that waits no more, then free it. At the end of the
 * input, one still inside its retry window is judged when the client has
 * moved on (the connection the redirect came on has closed, or the client
 * sent other commands since) and is not one that may still retry it: a
 * cluster-aware client (it fetched the map or followed a redirect) with no
 * retry seen, that fetched the map after the redirect, or whose
 * slowest retry is more than half the time the capture went on after the
 * redirect. The others are counted in abandoned_ops, or in unseen_target_ops
 * when the capture does not cover the redirect's target. A judged operation
 * is a redirected one that ended there: its time (first request to last
 * reply) goes to the latency summaries. */
static void op_judge(an_analyzer *an, int32_t i, int64_t now_us, int at_end)
{
    an_op *op = &an->ops[i];
    int redirect = op->last.reply == RESP_ERR_MOVED || op->last.reply == RESP_ERR_ASK;
    an_op_end how = AN_OP_GAVE_UP;
    if (redirect) {
        const an_cli *c = &an->clients[op->client];
        int in_window = at_end && now_us - op->last.reply_us < an->cfg.op_window_us;
        int moved_on = c->used && c->last_start_us > op->last.reply_us;
        int closed = an_conn_src(an, op->last.conn, AN_NONE) == NULL;
        /* (redis-py retries a MOVED once the new map is in; redis-benchmark
         * seconds later, on a new connection) */
        int may_retry = c->used && c->pub.cluster_aware &&
                        (c->retry_max_us < 0 || c->map_ts > op->last.reply_us ||
                         now_us - op->last.reply_us <= 2 * c->retry_max_us);
        if (op->retry_unseen ||
            (c->lost_to_us != 0 &&
             loss_hides_retry(an, &op->last, AN_NONE, c->lost_from_us, c->lost_to_us))) {
            an->st.unseen_retry_ops++; /* its retry may be what the capture lost */
            how = AN_OP_RETRY_LOST;
        } else if (in_window && !moved_on && !closed) {
            op_abandon(an, i);
            return;
        } else if (!target_seen(an, op)) {
            op_end_target_unseen(an, i); /* its retry went where the capture cannot see */
            return;
        } else if (in_window && may_retry) {
            op_abandon(an, i);
            return;
        } else {
            an_detect_unfollowed(an, op, now_us);
        }
    }
    an_lat_record_given_up(an, op->client, op->first.node, op->slot, &op->first, &op->last,
                           op->attempts, op->askings);
    charge_findings(an, op, op->last.reply_us);
    op_free(an, i, how);
}

void an_ops_expire(an_analyzer *an, int64_t now_us, int all)
{
    while (an->op_list_head != AN_NONE) {
        int32_t i = an->op_list_head;
        if (!all && an->ops[i].last.reply_us + 2 * an->cfg.op_window_us > now_us)
            break;
        op_judge(an, i, now_us, all);
    }
}

/* A new waiting operation for the attempt cur of command x. */
static an_op *op_new(an_analyzer *an, an_cmdctx *x, const an_attempt *cur, uint64_t h)
{
    if (an->nops >= an->cfg.max_ops) {
        op_free(an, an->op_list_head, AN_OP_EVICTED); /* the oldest, unjudged */
        an->st.evicted_ops++;
    }
    int32_t i;
    if (an->op_free != AN_NONE) {
        i = an->op_free;
        an->op_free = an->ops[i].lnext;
    } else {
        i = (int32_t)an->op_hwm++;
    }
    an_op *op = &an->ops[i];
    uint32_t gen = op->gen;
    memset(op, 0, sizeof *op);
    op->gen = gen;
    op->used = 1;
    op->key_hash = h;
    op->host = x->cli->host;
    op->client = x->cn->client;
    an_copy_str(op->name, sizeof op->name, x->cmd->req.name);
    op->read = !x->info || (x->info->flags & AN_CMD_READONLY);
    op->key_len = x->cmd->req.key0_len;
    op->key_full_len = x->cmd->req.key0_full_len;
    memcpy(op->key, x->cmd->req.key0, op->key_len);
    an_copy_str(op->key_text, sizeof op->key_text, an_cmd_key(x));
    op->slot = x->slot;
    if (op->slot >= 0 && op->slot < AN_SLOTS) {
        an->op_slot_n[op->slot]++;
        an->slot_busy[op->slot] |= AN_SLOT_OPS;
    }
    op->attempts = 1;
    op->askings = x->asked;
    op->first = op->last = *cur;
    op->storm = AN_NONE;
    op->loop = AN_NONE;
    an_map_put(&an->op_map, h, i);
    list_push(an, i);
    client_link(an, i);
    an->nops++;
    return op;
}

/* Push a redirected attempt on the operation's trail (oldest dropped). */
static void trail_push(an_op *op, const an_attempt *t)
{
    if (op->ntrail == AN_OP_TRAIL) {
        memmove(op->trail, op->trail + 1, (AN_OP_TRAIL - 1) * sizeof op->trail[0]);
        op->ntrail--;
    }
    op->trail[op->ntrail++] = *t;
}

/* The bit of node n in an_memo.moved_nodes (0: not tracked). */
static uint64_t node_bit(int32_t n)
{
    return n >= 0 && n < 64 ? (uint64_t)1 << n : 0;
}

/* Did a replica bounce this read for want of READONLY (readonly_missing's,
 * not a MOVED the client should learn from for moved_ignored)? On a
 * connection picked up mid-stream whose READONLY is unknown, a MOVED to
 * another node than the replica's master is a redirect either way: a
 * replica sends a read, with READONLY or without, to the node it takes
 * for the slot's owner, and that is not its master's shard (a MOVED to its
 * master showed READONLY off before this: readonly_from_reply). Only when
 * its master is unknown does it stay a possible bounce. */
int an_readonly_bounce(const an_analyzer *an, const an_cmdctx *x, const an_attempt *cur)
{
    const an_nd *nd = cur->node != AN_NONE ? &an->nodes[cur->node] : NULL;
    if (!nd || !nd->replica || !x->info || !(x->info->flags & AN_CMD_READONLY) ||
        x->cn->readonly)
        return 0;
    return !an_cn_readonly_unknown(x->cn) || nd->master == AN_NONE || cur->target == nd->master;
}

/* Remember what the client was told about the slot: the last MOVED and ASK,
 * and which nodes bounced it with MOVED (a node leaves that set when it
 * serves the slot again or an ASK points at it). */
static void learn(an_analyzer *an, an_cmdctx *x, const an_attempt *cur)
{
    const resp_reply *r = &x->cmd->reply;
    int32_t slot = r->redir.slot >= 0 && r->redir.slot < AN_SLOTS ? r->redir.slot : x->slot;
    if (cur->reply == RESP_ERR_MOVED) {
        an_memo *m = an_memo_get(an, x->cn->client, slot, 1);
        if (m) {
            m->moved_ts = cur->reply_us;
            m->moved_from = cur->node;
            m->moved_to = cur->target;
            if (cur->target != cur->node && !an_readonly_bounce(an, x, cur))
                m->moved_nodes |= node_bit(cur->node);
            else if (cur->target != cur->node && an_cn_readonly_unknown(x->cn))
                an->st.readonly_unknown_moved++; /* its master unknown: a redirect, or
                                                    READONLY off */
        }
        if (cur->target != AN_NONE && an->owner[slot] != cur->target) {
            an->owner[slot] = (int16_t)cur->target;
            an->reg_version++;
        }
    } else if (cur->reply == RESP_ERR_ASK) {
        an_memo *m = an_memo_get(an, x->cn->client, slot, 1);
        if (m) {
            m->ask_ts = cur->reply_us;
            m->ask_from = cur->node;
            m->ask_to = cur->target;
            m->moved_nodes &= ~node_bit(cur->target);
        }
    } else if (slot >= 0 && slot < AN_SLOTS && (an->slot_busy[slot] & AN_SLOT_MEMOS) &&
               cur->reply != RESP_ERR_TRYAGAIN && cur->reply != RESP_ERR_CROSSSLOT) {
        an_memo *m = an_memo_get(an, x->cn->client, slot, 0);
        if (m)
            m->moved_nodes &= ~node_bit(cur->node); /* it serves the slot again */
    }
}

void an_ops_on_command(an_analyzer *an, an_cmdctx *x)
{
    const resp_command *cmd = x->cmd;
    const resp_request *req = &cmd->req;
    an_attempt cur;
    memset(&cur, 0, sizeof cur);
    cur.conn = x->cn->id;
    cur.cport = x->cn->cc ? x->cn->cc->client.port : 0;
    cur.node = x->node;
    cur.target = x->target;
    cur.asked = (uint8_t)x->asked;
    cur.reply = (uint8_t)cmd->reply.err;
    cur.start_us = req->start_us;
    cur.req_us = req->ts_us;
    cur.reply_us = cmd->reply.ts_us;
    cur.req_frame = req->start_frame;
    cur.reply_frame = cmd->reply.end_frame;
    /* a command queued in MULTI has no latency of its own */
    if (cmd->in_multi && cmd->reply.err == RESP_ERR_NONE) {
        if (x->asked)
            an_ops_asking_spent(an, x, x->cn->asking_ts);
        return;
    }

    int redir = cur.reply == RESP_ERR_MOVED || cur.reply == RESP_ERR_ASK ||
                cur.reply == RESP_ERR_TRYAGAIN;
    /* the key of an operation: needed to find one (its slot has some) or
     * to make one (a redirect) */
    int has_ops = an->op_slot_n[x->slot] != 0;
    opkey k = req_opkey(an, &x->cli->host, req);
    uint64_t h = has_ops || redir ? opkey_hash(&k) : 0;
    int32_t oi = has_ops ? op_find(an, h, &k) : AN_NONE;
    if (oi != AN_NONE && retry_unseeable(an, &an->ops[oi], cur.node)) {
        op_end_target_unseen(an, oi);
        oi = AN_NONE;
    }
    an_op *op = oi != AN_NONE ? &an->ops[oi] : NULL;
    an_attempt prev;
    an_attempt_ctx a;
    memset(&a, 0, sizeof a);
    a.x = x;
    if (op) {
        prev = op->last;
        op->attempts++;
        an_ser_add(an, cur.reply_us, x->cn->client, x->node, an_ser_slot(an, x->slot),
                   AN_SC_RETRIES, -1, 0);
        op->askings += x->asked;
        if (prev.reply == RESP_ERR_TRYAGAIN) {
            if (op->nretries < AN_OP_FIRST_RETRIES)
                op->retries[op->nretries++] = cur;
            op->tryagains++;
            if (an_tryagain_fast(&an->cfg, &prev, &cur))
                op->fast_tryagains++;
            op->ntrail = 0;
            op->trail_repeats = 0;
            op->seg_redirects = 0;
        }
        if (prev.target != AN_NONE && cur.node == prev.target)
            x->cli->pub.cluster_aware = 1; /* it followed a redirect */
        if ((prev.reply == RESP_ERR_MOVED || prev.reply == RESP_ERR_ASK) &&
            cur.start_us - prev.reply_us > x->cli->retry_max_us)
            x->cli->retry_max_us = cur.start_us - prev.reply_us;
        op->last = cur;
        a.op = op;
        a.prev = &prev;
        a.cur = &op->last;
    } else {
        if (x->asked)
            an_ops_asking_spent(an, x, x->cn->asking_ts);
        else
            an_view_set(an, x->cli, x->slot, x->node);
        if (redir)
            op = op_new(an, x, &cur, h);
        a.op = op;
        a.cur = op ? &op->last : &cur;
        a.first = 1;
    }
    if (op && (cur.reply == RESP_ERR_MOVED || cur.reply == RESP_ERR_ASK)) {
        op->redirects++;
        op->seg_redirects++;
        trail_push(op, &cur);
    }

    if (!a.first)
        an_detect_asking(an, &a);
    else
        an_detect_ask_cached(an, &a);
    an_detect_readonly_missing(an, &a);
    an_detect_moved_ignored(an, &a);
    an_detect_crossslot(an, &a);
    if (op && !a.first)
        an_detect_tryagain_storm(an, &a);
    if (op && (cur.reply == RESP_ERR_MOVED || cur.reply == RESP_ERR_ASK))
        an_detect_redirect_loop(an, &a);
    for (uint8_t i = 0; op && i < a.nfound; i++)
        an_op_charge(op, a.found[i]);

    learn(an, x, &cur);

    if (redir) {
        int32_t i = (int32_t)(op - an->ops);
        list_unlink(an, i);
        list_push(an, i);
        if (cur.reply == RESP_ERR_ASK) {
            an_ask_rec *r = &an->ask_ring[an->ask_ring_pos++ % AN_RING];
            r->host = x->cli->host;
            r->op = i;
            r->gen = op->gen;
            r->target = cur.target;
            r->ts = cur.reply_us;
        }
        return;
    }
    /* the operation is over */
    if (op) {
        an_lat_record(an, op->client, op->first.node, op->slot, &op->first, &op->last,
                      op->attempts, op->askings);
        charge_findings(an, op, op->last.req_us);
        op_free(an, (int32_t)(op - an->ops), AN_OP_COMPLETED);
    } else {
        an_lat_record(an, x->cn->client, x->node, x->slot, &cur, &cur, 1, 0);
    }
}

/* A command of client cli (request req, slot) came without its reply (lost
 * in a gap): when it retries a waiting operation, that operation was
 * followed, how is not known. */
void an_ops_on_unanswered(an_analyzer *an, const an_cli *cli, const resp_request *req,
                          int32_t slot)
{
    if (slot < 0 || slot >= AN_SLOTS || an->op_slot_n[slot] == 0)
        return;
    opkey k = req_opkey(an, &cli->host, req);
    int32_t oi = op_find(an, opkey_hash(&k), &k);
    if (oi != AN_NONE)
        an->ops[oi].retry_unseen = 1;
}

void an_ops_requests_lost(an_analyzer *an, an_cli *cli, int32_t node, int64_t from_us,
                          int64_t to_us)
{
    uint32_t walked = 0, k;
    for (k = cli->op_first; k != 0 && walked < AN_LOSS_WALK; k = an->ops[k - 1].cnext, walked++) {
        an_op *op = &an->ops[k - 1];
        const an_attempt *l = &op->last;
        if ((l->reply == RESP_ERR_MOVED || l->reply == RESP_ERR_ASK) &&
            loss_hides_retry(an, l, node, from_us, to_us))
            op->retry_unseen = 1;
    }
    if (k == 0)
        return;
    /* the older ones (newest first) are judged against the span of such
     * losses instead: bounded work per loss, never a verdict the loss could
     * have hidden */
    if (cli->lost_to_us == 0 || from_us < cli->lost_from_us)
        cli->lost_from_us = from_us;
    if (to_us > cli->lost_to_us)
        cli->lost_to_us = to_us;
}

/* ASKING on x's connection was used by x, which retries no ASK'd operation. */
void an_ops_asking_spent(an_analyzer *an, an_cmdctx *x, int64_t asking_ts)
{
    x->cn->asking_spent_ts = asking_ts;
    if (x->cmd->requests_lost || x->cmd->req.slot_unknown)
        return; /* it may have covered a request the capture lost (or this one, its
                   key lost, may be an ASK'd operation's retry): which, unknown */
    /* is an ASK'd operation of this host waiting for exactly this node? */
    for (uint32_t k = 0; k < AN_RING; k++) {
        an_ask_rec *r = &an->ask_ring[k];
        if (r->ts == 0 || r->ts > asking_ts || r->target != x->node ||
            !cap_addr_equal(&r->host, &x->cli->host))
            continue;
        an_op *op = &an->ops[r->op];
        if (!op->used || op->gen != r->gen || op->last.reply != RESP_ERR_ASK ||
            op->last.target != x->node)
            continue;
        an_detect_asking_interleaved(an, x, op, asking_ts);
        return;
    }
}

void an_ops_drop_client(an_analyzer *an, int32_t client)
{
    const an_cli *c = &an->clients[client];
    while (c->op_first != 0) { /* op_free unlinks it */
        op_free(an, (int32_t)c->op_first - 1, AN_OP_CLIENT_DROPPED);
        an->st.evicted_ops++;
    }
}

void an_ops_free(an_analyzer *an)
{
    (void)an;
}
