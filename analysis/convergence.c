/*
 * convergence.c - what each client did after the cluster changed a slot's
 * owner: how long it kept sending those slots to the old owner and what it
 * paid (convergence rows; finding slow_convergence while the old owner still
 * served it, nobody having told it of the change), and which writes the old
 * owner acknowledged after another node had claimed the slots with a higher
 * config epoch (finding writes_at_risk, one at_risk_write record each).
 *
 * Input: the ownership changes of cluster.c (an_slot_owner, through an
 * observer: bus claims, or what clients were told when the capture has no
 * bus), and every command on a watched slot (analyzer.c sends the commands of
 * slots whose slot_busy has AN_SLOT_OWN through its full path).
 *
 * Why a write is at risk (Redis Cluster specification, "Write safety"): a
 * master that has not learned that its replica (or, after a migration, the
 * target) claimed its slots with a higher config epoch keeps acknowledging
 * writes; when it learns, it drops its slots (becomes a replica and resyncs,
 * or leaves the keys orphaned), and those writes are gone. Only bus claims
 * prove the epoch: changes learnt from clients never make writes at risk.
 * A command sent with ASKING is neither stale nor at risk (the importing
 * node serves it on purpose), nor is a read sent under READONLY (an old
 * master, now a replica, serves reads to clients that asked for that).
 *
 * Bounded: AN_CV_CHANGES changes are watched at once (the oldest is closed
 * to make room), each for cfg.convergence_window_us after its flip;
 * cfg.max_convergence (client, change) rows; everything dropped is counted
 * in an_stats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

/* One watched change and its (client, change) rows. */
typedef struct cv_change {
    an_slot_owner ev;            /* the change as cluster.c announced it */
    int64_t until_us;            /* watched until then */
    uint8_t used;
} cv_change;

typedef struct cv_row {
    uint8_t used;
    int32_t change;
    int32_t next;                /* the change's rows, or the free list */
    char client[AN_NAME_MAX];
    int64_t first_us, last_stale_us, converged_us;
    int64_t told_us;             /* its first MOVED from the old owner, 0: none yet */
    int64_t last_untold_us;      /* its last stale command before that */
    uint64_t stale_commands, moved_replies, at_risk_writes;
    int32_t slow, risk;          /* its findings, AN_NONE until found */
} cv_row;

struct an_cv {
    int16_t watch[AN_SLOTS];     /* change index + 1, 0: not watched */
    cv_change changes[AN_CV_CHANGES];
    int32_t heads[AN_CV_CHANGES];/* each change's rows */
    uint32_t next_change;        /* round robin: the oldest is reused */
    cv_row *rows;
    an_map row_map;              /* (change, client) -> row */
    uint32_t nrows, cap, hwm;
    int32_t free_row;
    uint8_t bus;                 /* a bus change was seen */
};

static an_cv *cv_get(an_analyzer *an)
{
    if (an->cv)
        return an->cv;
    an_cv *cv = calloc(1, sizeof *cv);
    if (!cv)
        return NULL;
    cv->cap = an->cfg.max_convergence;
    cv->rows = calloc(cv->cap ? cv->cap : 1, sizeof *cv->rows);
    if (!cv->rows || an_map_init(&cv->row_map, cv->cap ? cv->cap : 1) != 0) {
        free(cv->rows);
        free(cv);
        return NULL;
    }
    cv->free_row = AN_NONE;
    for (int i = 0; i < AN_CV_CHANGES; i++)
        cv->heads[i] = AN_NONE;
    an->cv = cv;
    return cv;
}

/* The row map's key: a change and a client name. */
typedef struct row_key {
    int32_t change;
    const char *client;
} row_key;

static uint64_t row_hash(int32_t change, const char *client)
{
    return an_hash_str(client, an_mix64((uint64_t)change + 1));
}

static int row_eq(const void *ctx, int32_t val, const void *key)
{
    const an_cv *cv = ctx;
    const row_key *k = key;
    return cv->rows[val].change == k->change && strcmp(cv->rows[val].client, k->client) == 0;
}

static void emit_row(an_analyzer *an, const cv_change *c, const cv_row *r)
{
    if (!an->sink.convergence)
        return;
    an_convergence o;
    memset(&o, 0, sizeof o);
    an_copy_str(o.client, sizeof o.client, r->client);
    o.slot_lo = c->ev.slot_lo;
    o.slot_hi = c->ev.slot_hi;
    an_copy_str(o.old_node, sizeof o.old_node, an_node_name(an, c->ev.old_node));
    an_copy_str(o.new_node, sizeof o.new_node, an_node_name(an, c->ev.node));
    o.source = an_own_source_name(c->ev.source);
    o.flip_us = c->ev.ts_us;
    o.flip_frame = c->ev.frame;
    o.config_epoch = c->ev.config_epoch;
    o.first_us = r->first_us;
    o.last_stale_us = r->last_stale_us;
    o.converged_us = r->converged_us;
    o.stale_commands = r->stale_commands;
    o.moved_replies = r->moved_replies;
    o.at_risk_writes = r->at_risk_writes;
    an->sink.convergence(an->sink.ctx, &o);
}

/* Stop watching change i: its rows are emitted and freed, its slots quiet. */
static void close_change(an_analyzer *an, an_cv *cv, int32_t i)
{
    cv_change *c = &cv->changes[i];
    if (!c->used)
        return;
    for (int32_t r = cv->heads[i], next; r != AN_NONE; r = next) {
        next = cv->rows[r].next;
        emit_row(an, c, &cv->rows[r]);
        an_map_del(&cv->row_map, row_hash(i, cv->rows[r].client), r);
        cv->rows[r].used = 0;
        cv->rows[r].next = cv->free_row;
        cv->free_row = r;
        cv->nrows--;
    }
    cv->heads[i] = AN_NONE;
    for (int32_t s = c->ev.slot_lo; s <= c->ev.slot_hi; s++) {
        if (cv->watch[s] == i + 1) {
            cv->watch[s] = 0;
            an->slot_busy[s] &= (uint8_t)~AN_SLOT_OWN;
        }
    }
    c->used = 0;
}

void an_cv_slot_owner(an_analyzer *an, void *ctx, const an_slot_owner *e)
{
    (void)ctx;
    if (e->old_node == AN_NONE || e->node == AN_NONE || e->node == e->old_node ||
        e->slot_lo < 0 || e->slot_hi >= AN_SLOTS || e->slot_lo > e->slot_hi)
        return;
    an_cv *cv = cv_get(an);
    if (!cv) {
        an->st.convergence_dropped++;
        return;
    }
    /* the bus is the better source: once it spoke, clients' changes are echoes */
    if (e->source == AN_OWN_BUS)
        cv->bus = 1;
    else if (cv->bus || an_cluster_has_bus(an))
        return;
    int32_t i = (int32_t)(cv->next_change++ % AN_CV_CHANGES);
    if (cv->changes[i].used) {
        an->st.convergence_evicted++;
        close_change(an, cv, i);
    }
    cv_change *c = &cv->changes[i];
    c->ev = *e;
    c->until_us = e->ts_us + an->cfg.convergence_window_us;
    c->used = 1;
    for (int32_t s = e->slot_lo; s <= e->slot_hi; s++) {
        cv->watch[s] = (int16_t)(i + 1); /* a later change of a slot replaces an earlier */
        an->slot_busy[s] |= AN_SLOT_OWN;
    }
}

/* The row of (change i, client), created when new; NULL when the table is full. */
static cv_row *row_get(an_analyzer *an, an_cv *cv, int32_t i, const char *client, int64_t ts)
{
    row_key k = {i, client};
    uint64_t h = row_hash(i, client);
    int32_t found = an_map_find(&cv->row_map, h, row_eq, cv, &k);
    if (found != AN_NONE)
        return &cv->rows[found];
    int32_t r = cv->free_row;
    if (r != AN_NONE)
        cv->free_row = cv->rows[r].next;
    else if (cv->hwm < cv->cap)
        r = (int32_t)cv->hwm++;
    else {
        an->st.convergence_dropped++;
        return NULL;
    }
    cv_row *w = &cv->rows[r];
    memset(w, 0, sizeof *w);
    w->used = 1;
    w->change = i;
    an_copy_str(w->client, sizeof w->client, client);
    w->first_us = ts;
    w->slow = w->risk = AN_NONE;
    w->next = cv->heads[i];
    cv->heads[i] = r;
    cv->nrows++;
    an_map_put(&cv->row_map, h, r); /* cannot be full: rows <= cap */
    return w;
}

/* ",\"change\":{...}": what a finding's evidence says about the change. */
static void change_json(an_analyzer *an, const cv_change *c, char *out, size_t size,
                        const char *more)
{
    snprintf(out, size,
             ",\"change\":{\"slot_lo\":%d,\"slot_hi\":%d,\"old\":\"%s\",\"new\":\"%s\","
             "\"flip_us\":%lld,\"source\":\"%s\",\"config_epoch\":%llu,\"frame\":%llu,"
             "\"via\":\"%s\"}%s",
             (int)c->ev.slot_lo, (int)c->ev.slot_hi, an_node_name(an, c->ev.old_node),
             an_node_name(an, c->ev.node), (long long)c->ev.ts_us,
             an_own_source_name(c->ev.source), (unsigned long long)c->ev.config_epoch,
             (unsigned long long)c->ev.frame,
             c->ev.source == AN_OWN_BUS ? bus_type_name(c->ev.via) : "clients", more);
}

/* The summary follows the counts (an_finding_occur keeps the first one). */
static void set_summary(an_fnd *f, const char *summary)
{
    an_copy_str(f->f.summary, sizeof f->f.summary, summary);
    if (f->visible)
        f->dirty = 1;
}

static void note_slow(an_analyzer *an, an_cmdctx *x, const cv_change *c, cv_row *w)
{
    /* stale from its first command for the slots after the flip (a client
     * quiet since the flip could not know sooner) to this one, still served
     * by the old owner: nobody told it yet. What it does once told (MOVED)
     * is moved_ignored's, or readonly_missing's, to judge. */
    int64_t stale_us = w->last_untold_us - w->first_us;
    if (stale_us <= an->cfg.slow_convergence_us)
        return;
    if (!an_node_covered(an, c->ev.node, 0))
        return; /* the client's move to the new owner could not be seen */
    char summary[AN_SUMMARY_MAX];
    snprintf(summary, sizeof summary,
             "kept sending slots %d-%d to %s, which still served them, for %.1f ms after "
             "%s took them (%llu commands there, %llu MOVED)",
             (int)c->ev.slot_lo, (int)c->ev.slot_hi, an_node_name(an, c->ev.old_node),
             (double)stale_us / 1000.0, an_node_name(an, c->ev.node),
             (unsigned long long)w->stale_commands, (unsigned long long)w->moved_replies);
    an_event e;
    an_event_from(&e, x, "stale command");
    char more[128];
    snprintf(more, sizeof more, ",\"stale_ms\":%.3f,\"first_us\":%lld,\"since_flip_ms\":%.3f",
             (double)stale_us / 1000.0, (long long)w->first_us,
             (double)(w->last_untold_us - c->ev.ts_us) / 1000.0);
    int first = w->slow == AN_NONE;
    w->slow = an_finding_get(an, AN_SLOW_CONVERGENCE, w->client, c->ev.old_node,
                             c->ev.slot_lo, 1);
    an_fnd *f = an_fnd_at(an, w->slow);
    if (!f)
        return;
    change_json(an, c, f->extra, sizeof f->extra, more);
    an_finding_occur(an, w->slow, x->cmd->req.start_us, 0, summary, first ? &e : NULL,
                     first ? 1 : 0);
    if (!first)
        an_finding_set_tail(an, w->slow, &e);
    set_summary(f, summary);
}

static void note_risk(an_analyzer *an, an_cmdctx *x, const cv_change *c, cv_row *w)
{
    w->at_risk_writes++;
    int64_t ack = x->cmd->reply.ts_us;
    char summary[AN_SUMMARY_MAX];
    snprintf(summary, sizeof summary,
             "%llu writes acknowledged by %s for slots %d-%d after %s claimed them with "
             "config epoch %llu: lost when %s rejoins as a replica",
             (unsigned long long)w->at_risk_writes, an_node_name(an, c->ev.old_node),
             (int)c->ev.slot_lo, (int)c->ev.slot_hi, an_node_name(an, c->ev.node),
             (unsigned long long)c->ev.config_epoch, an_node_name(an, c->ev.old_node));
    an_event e;
    an_event_from(&e, x, "write acknowledged");
    char more[64];
    snprintf(more, sizeof more, ",\"writes\":%llu", (unsigned long long)w->at_risk_writes);
    int32_t idx = an_finding_get(an, AN_WRITES_AT_RISK, w->client, c->ev.old_node,
                                 c->ev.slot_lo, 1);
    w->risk = idx;
    an_fnd *f = an_fnd_at(an, idx);
    if (f) {
        change_json(an, c, f->extra, sizeof f->extra, more);
        an_finding_occur(an, idx, ack, AN_ERROR, summary, &e, 1);
        set_summary(f, summary);
    }
    if (!an->sink.at_risk_write)
        return;
    an_risky_write r;
    memset(&r, 0, sizeof r);
    r.ts_us = ack;
    r.finding_id = f ? f->f.id : 0;
    an_copy_str(r.client, sizeof r.client, w->client);
    an_copy_str(r.node, sizeof r.node, an_node_name(an, c->ev.old_node));
    an_copy_str(r.new_node, sizeof r.new_node, an_node_name(an, c->ev.node));
    r.slot = x->slot;
    an_copy_str(r.command, sizeof r.command, x->cmd->req.name);
    an_copy_str(r.key, sizeof r.key, an_cmd_key(x));
    r.req_frame = x->cmd->req.start_frame;
    r.reply_frame = x->cmd->reply.end_frame;
    r.proof_frame = c->ev.frame;
    r.config_epoch = c->ev.config_epoch;
    an->sink.at_risk_write(an->sink.ctx, &r);
}

void an_cv_on_command(an_analyzer *an, an_cmdctx *x)
{
    an_cv *cv = an->cv;
    if (!cv || x->slot < 0 || x->slot >= AN_SLOTS || !cv->watch[x->slot])
        return;
    int32_t i = cv->watch[x->slot] - 1;
    cv_change *c = &cv->changes[i];
    int64_t ts = x->cmd->req.start_us;
    if (c->until_us < an->now_us) {
        close_change(an, cv, i);
        return;
    }
    if (ts < c->ev.ts_us || x->asked || x->node == AN_NONE ||
        (x->node != c->ev.old_node && x->node != c->ev.node))
        return;
    if (x->node == c->ev.old_node && x->info && (x->info->flags & AN_CMD_READONLY)) {
        /* a read under READONLY: the old master, now a replica, serves it on purpose */
        if (x->cn->readonly)
            return;
        /* READONLY may predate a capture that picked the connection up
         * mid-stream: a read the old node served after a change that was no
         * migration (a failover, or unknown: it may be a replica now) shows
         * nothing stale */
        if (an_cn_readonly_unknown(x->cn) && c->ev.cause != AN_CAUSE_MIGRATION &&
            x->cmd->outcome == RESP_OK && x->cmd->reply.err == RESP_ERR_NONE)
            return;
    }
    cv_row *w = row_get(an, cv, i, an_client_name(an, x->cn->client), ts);
    if (!w)
        return;
    if (x->node == c->ev.node) {
        if (!w->converged_us)
            w->converged_us = ts;
        return;
    }
    w->stale_commands++;
    if (ts > w->last_stale_us)
        w->last_stale_us = ts;
    if (x->cmd->reply.err == RESP_ERR_MOVED) {
        w->moved_replies++;
        if (!w->told_us)
            w->told_us = ts;
    } else if (!w->told_us && !w->converged_us) {
        /* untold: not after a MOVED, nor after the client used the new
         * owner itself (going back, served, shows a newer change than the
         * capture has learnt, not a client nobody told) */
        w->last_untold_us = ts;
        note_slow(an, x, c, w);
    }
    if (c->ev.source == AN_OWN_BUS && x->cmd->reply.err == RESP_ERR_NONE && x->info &&
        (x->info->flags & AN_CMD_WRITE)) {
        /* the old owner served it as its own: stale, unless it had claimed the
         * slots back, which only its own broadcast shows in time */
        if (an_cluster_heard_out(an, c->ev.old_node))
            note_risk(an, x, c, w);
        else
            an->st.at_risk_unseen++;
    }
}

void an_cv_check(an_analyzer *an, int64_t now_us, int all)
{
    an_cv *cv = an->cv;
    if (!cv)
        return;
    for (int32_t i = 0; i < AN_CV_CHANGES; i++)
        if (cv->changes[i].used && (all || cv->changes[i].until_us < now_us))
            close_change(an, cv, i);
}

void an_cv_free(an_analyzer *an)
{
    if (!an->cv)
        return;
    free(an->cv->rows);
    an_map_free(&an->cv->row_map);
    free(an->cv);
    an->cv = NULL;
}
