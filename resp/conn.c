/*
 * conn.c - the pipeline around the pairing: one state per capture
 * connection (made at its first event, freed at its close), the capture
 * events routed to the two decoders, the gap events to the decoders or to
 * loss.c, the configuration and the counters. Each connection's decoders
 * are given pair.c's event tables (pair_rq_out, pair_rp_out) with the
 * connection as their owner: this file is where the two sides meet.
 */
#include <stddef.h>
#include <stdlib.h>

#include "resp/pair_internal.h"

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


/* Reset a reply to "none". */
static void reply_clear(resp_reply *r)
{
    memset(r, 0, sizeof(*r));
    r->redir.slot = -1;
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
    c->part = &rp->parts[cc->partition % CAP_PARTITIONS];
    c->synced = cc->saw_syn ? 1 : 0;
    c->repl_watch = cc->saw_syn ? 0 : 1;
    c->reply_modes = c->repl_watch;
    c->reply_since_loss = 0;
    c->rep_ack = UINT64_MAX;
    c->ev_ack = UINT64_MAX;
    rq_init(&c->rq, &pair_rq_out, c, &rp->cfg, &c->st, !cc->saw_syn);
    rp_init(&c->rpd, &pair_rp_out, c, &rp->cfg, &c->st, !cc->saw_syn);
    c->rpd.want_elem1 = c->repl_watch;
    reply_clear(&c->stage.cmd.reply);
    c->rpd.rep = &c->stage.cmd.reply; /* where replies are decoded */
    c->cur = &c->stage;
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
    c->stage.cmd.conn = cc; /* for good: commands unpacked into the stage */
    c->stage.cmd.conn_word = c->conn_word;
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
    t->redirect_mismatch += s->redirect_mismatch;
    t->start_gaps_answered_none += s->start_gaps_answered_none;
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
    c->part->inflight -= c->count;
    rp_free(&c->rpd);
    whole_release_cur(c);
    ring_release_all(c);
    pages_free(rp, &c->ring);
    pages_free(rp, &c->text);
    c->part->kept -= c->keep_cap;
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
    pair_flush_all(c);
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
    reply_clear(&rp->out.reply);
    (void)whole_pool_init(rp); /* without: every request is packed */
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
    rp->inflight_part_cap = cap_partition_share(rp->cfg.max_inflight_total);
    rp->kept_part_cap = cap_partition_share(rp->cfg.max_kept_total);
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
    pages_pool_free(rp);
    whole_pool_free(rp);
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
 * acknowledged (rc_conn.ev_ack), from the event's ACK. An ACK before the
 * request stream's start acknowledged none of its requests: 0. */
static inline void reply_ack_at(rc_conn *c, const cap_event *ev)
{
    int64_t pos = (int64_t)(c->rq.off + c->rq_lost_bytes) + ev->ack_ahead;
    c->ev_ack = ev->has_ack && !c->ack_broken ? (pos >= 0 ? (uint64_t)pos : 0) : UINT64_MAX;
}

void resp_set_servers(resp_pipeline *rp, cap_servers *servers)
{
    if (rp != NULL)
        rp->cfg.servers = servers;
}

void resp_on_capture_event(void *vrp, const cap_event *ev)
{
    resp_pipeline *rp = vrp;
    cap_conn *cc = ev->conn;
    if (rp == NULL || cc == NULL)
        return;
    rc_conn *c = cc->user;
    rp->index = ev->index;
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
            rq_feed(&c->rq, ev->data, ev->len, ev->ts_us, ev->frame);
        } else {
            reply_ack_at(c, ev);
            c->rp_gap_last = 0;
            if (c->rp_gap_pending)
                rp_gap_resolve(c, ev->data, ev->len, ev->ts_us);
            rp_feed(&c->rpd, ev->data, ev->len, ev->ts_us, ev->frame);
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
            if (rq_skip_gap(&c->rq, ev->gap_len, ev->ts_us))
                return;
            pair_request_gap(c, ev->gap_len);
        } else {
            if (rp_skip_gap(&c->rpd, ev->gap_len, ev->ts_us)) {
                c->rp_gap_last = 0;
                return;
            }
            pair_reply_gap(c, ev->gap_len, ev->before_peer);
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

