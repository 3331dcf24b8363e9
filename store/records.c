/*
 * records.c - one writer per analysis record, and the an_sink that calls them.
 *
 * Each writer sets the record's fields in a row (store_row_begin, store_set_*)
 * and hands it to store_row_end (store.c), which writes it inside the current
 * batch (redirects, connections and commands 32 at a time, internal.h). Rows that
 * analysis may emit again replace the earlier row by their key (findings when
 * they change, nodes, latency summaries, connections); a client seen again
 * after an eviction is merged into its row; redirects, migration windows and
 * commands are appended.
 */
#include <stdio.h>
#include <string.h>

#include "store/internal.h"

/* "info", "warning", "error". */
static const char *severity_name(an_severity sev)
{
    switch (sev) {
    case AN_ERROR: return "error";
    case AN_WARNING: return "warning";
    default: return "info";
    }
}

/* "ok", "no_reply", "unanswered". */
static const char *outcome_name(resp_outcome o)
{
    switch (o) {
    case RESP_OK: return "ok";
    case RESP_NO_REPLY: return "no_reply";
    default: return "unanswered";
    }
}

/* Write or replace a finding (by its stable id). */
static void write_finding(void *ctx, const an_finding *f)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_FINDING);
    if (!st)
        return;
    store_set_uint(st, 1, f->id);
    store_set_text(st, 2, an_finding_name(f->kind));
    store_set_text(st, 3, severity_name(f->severity));
    store_set_int(st, 4, f->severity);
    store_set_text(st, 5, f->client);
    store_set_text(st, 6, f->node);
    store_set_int(st, 7, f->slot);
    store_set_int(st, 8, f->first_us);
    store_set_int(st, 9, f->last_us);
    store_set_uint(st, 10, f->count);
    store_set_int(st, 11, f->extra_latency_us);
    store_set_text(st, 12, f->summary);
    store_set_text(st, 13, f->evidence && f->evidence[0] ? f->evidence : "{}");
    store_set_uint(st, 14, f->operations);
    store_set_text(st, 15, f->frame_filter ? f->frame_filter : "");
    store_set_text(st, 16, f->conn_filter ? f->conn_filter : "");
    store_row_end(s, st);
}

/* Append one redirect reply. */
static void write_redirect(void *ctx, const an_redirect *r)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_REDIRECT);
    if (!st)
        return;
    store_set_int(st, 1, r->ts_us);
    store_set_text(st, 2, r->client);
    store_set_uint(st, 3, r->conn_id);
    store_set_text(st, 4, r->node);
    store_set_text(st, 5, resp_err_name(r->kind));
    store_set_int(st, 6, r->slot);
    store_set_text(st, 7, r->target);
    store_set_text(st, 8, r->command);
    store_set_text(st, 9, r->key);
    store_set_int(st, 10, r->latency_us);
    store_set_uint(st, 11, r->req_frame);
    store_set_uint(st, 12, r->reply_frame);
    store_set_text(st, 13, r->cause ? r->cause : "");
    store_row_end(s, st);
}

/* Write or update a node (keyed by observed + announced address). */
static void write_node(void *ctx, const an_node *n)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_NODE);
    if (!st)
        return;
    store_set_text(st, 1, n->observed);
    store_set_text(st, 2, n->announced);
    store_set_text(st, 3, n->node_id);
    store_set_text(st, 4, n->role);
    store_set_int(st, 5, n->slots_owned);
    store_set_uint(st, 6, n->commands);
    store_set_text(st, 7, n->flags);
    store_set_text(st, 8, n->master_id);
    store_set_uint(st, 9, n->config_epoch);
    store_set_uint(st, 10, n->current_epoch);
    store_set_int(st, 11, n->bus_port);
    store_set_int(st, 12, n->role_us);
    store_set_int(st, 13, n->master_us);
    store_set_int(st, 14, n->config_epoch_us);
    store_set_int(st, 15, n->flags_us);
    store_row_end(s, st);
}

/* Append a slot ownership period. */
static void write_owner_row(void *ctx, const an_owner_row *r)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_OWNER);
    if (!st)
        return;
    store_set_int(st, 1, r->slot_lo);
    store_set_int(st, 2, r->slot_hi);
    store_set_text(st, 3, r->node);
    store_set_text(st, 4, r->node_id);
    store_set_uint(st, 5, r->config_epoch);
    store_set_int(st, 6, r->from_us);
    store_set_int(st, 7, r->to_us);
    store_set_text(st, 8, r->source);
    store_set_text(st, 9, r->cause);
    store_row_end(s, st);
}

/* Append a node health transition. */
static void write_node_transition(void *ctx, const an_node_transition *t)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_NODE_STATE);
    if (!st)
        return;
    store_set_int(st, 1, t->ts_us);
    store_set_text(st, 2, t->node);
    store_set_text(st, 3, t->node_id);
    store_set_text(st, 4, t->from);
    store_set_text(st, 5, t->to);
    store_set_text(st, 6, t->reporter);
    store_set_text(st, 7, t->reporter_id);
    store_set_text(st, 8, t->via);
    store_set_uint(st, 9, t->frame);
    store_row_end(s, st);
}

/* Append a failover. */
static void write_failover(void *ctx, const an_failover_rec *f)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_FAILOVER);
    if (!st)
        return;
    store_set_int(st, 1, f->ts_us);
    store_set_text(st, 2, f->kind);
    store_set_text(st, 3, f->old_master);
    store_set_text(st, 4, f->old_id);
    store_set_text(st, 5, f->new_master);
    store_set_text(st, 6, f->new_id);
    store_set_uint(st, 7, f->config_epoch);
    store_set_int(st, 8, f->detected_us);
    store_set_int(st, 9, f->elected_us);
    store_set_int(st, 10, f->done_us);
    store_set_uint(st, 11, f->votes);
    store_set_uint(st, 12, f->slots);
    store_set_uint(st, 13, f->frame);
    store_row_end(s, st);
}

/* Write a client, or merge it into the row of the same name. */
static void write_client(void *ctx, const an_client *c)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_CLIENT);
    if (!st)
        return;
    store_set_text(st, 1, c->name);
    store_set_int(st, 2, c->first_us);
    store_set_int(st, 3, c->last_us);
    store_set_uint(st, 4, c->connections);
    store_set_uint(st, 5, c->commands);
    store_set_uint(st, 6, c->redirects);
    store_set_uint(st, 7, c->findings);
    store_set_int(st, 8, c->cluster_aware);
    store_set_int(st, 9, c->is_node);
    store_set_text(st, 10, c->ident.lib_name);
    store_set_text(st, 11, c->ident.lib_ver);
    store_set_text(st, 12, c->ident.client_name);
    store_row_end(s, st);
}

/* Set the capture layer's per-connection counters (zeros when absent). */
static void set_conn_capture(store_row *st, const an_connection *c)
{
    static const cap_conn none;
    const cap_conn *k = c->conn ? c->conn : &none;
    store_set_uint(st, 9, k->packets[CAP_TO_SERVER]);
    store_set_uint(st, 10, k->packets[CAP_TO_CLIENT]);
    store_set_uint(st, 13, k->gap_bytes[CAP_TO_SERVER] + k->gap_bytes[CAP_TO_CLIENT]);
    store_set_uint(st, 14, (uint64_t)k->retransmits[CAP_TO_SERVER] + k->retransmits[CAP_TO_CLIENT]);
    store_set_uint(st, 15,
                    (uint64_t)k->out_of_order[CAP_TO_SERVER] + k->out_of_order[CAP_TO_CLIENT]);
    store_set_text(st, 18, c->conn ? cap_side_source_name(k->side_source) : "");
}

/* Set the RESP layer's per-connection counters (zeros when absent). */
static void set_conn_resp(store_row *st, const an_connection *c)
{
    static const resp_conn_stats none;
    const resp_conn_stats *r = c->resp ? c->resp : &none;
    store_set_uint(st, 19, r->requests);
    store_set_uint(st, 20, r->replies);
    store_set_uint(st, 21, r->pushes);
    store_set_uint(st, 22, r->unpaired_requests);
    store_set_uint(st, 23, r->unpaired_replies);
    store_set_uint(st, 24, r->resyncs);
    store_set_uint(st, 25, r->skipped_bytes);
    store_set_uint(st, 26, r->protocol_errors);
}

/* Write a connection at its end. */
static void write_connection(void *ctx, const an_connection *c)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_CONNECTION);
    if (!st)
        return;
    store_set_uint(st, 1, c->id);
    store_set_text(st, 2, c->client);
    store_set_text(st, 3, c->src);
    store_set_text(st, 4, c->dst);
    store_set_int(st, 5, c->first_us);
    store_set_int(st, 6, c->last_us);
    store_set_uint(st, 7, c->bytes_to_server);
    store_set_uint(st, 8, c->bytes_to_client);
    store_set_uint(st, 11, c->commands);
    store_set_uint(st, 12, c->gaps);
    store_set_int(st, 16, c->out_of_sync);
    store_set_int(st, 17, c->mid_stream);
    store_set_text(st, 27, c->kind ? c->kind : "client");
    set_conn_capture(st, c);
    set_conn_resp(st, c);
    store_set_text(st, 28, c->ident.lib_name);
    store_set_text(st, 29, c->ident.lib_ver);
    store_set_text(st, 30, c->ident.client_name);
    store_row_end(s, st);
}

/* Write a slot's migration window. */
static void write_migration(void *ctx, const an_migration *m)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_MIGRATION);
    if (!st)
        return;
    store_set_int(st, 1, m->slot);
    store_set_text(st, 2, m->source);
    store_set_text(st, 3, m->target);
    store_set_int(st, 4, m->first_ask_us);
    store_set_int(st, 5, m->last_ask_us);
    store_set_int(st, 6, m->flip_us);
    store_set_int(st, 7, m->importing_us);
    store_set_int(st, 8, m->migrating_us);
    store_set_uint(st, 9, m->asks);
    store_set_uint(st, 10, m->tryagains);
    store_set_uint(st, 11, m->moveds);
    store_set_uint(st, 12, m->keys_migrated);
    store_set_int(st, 13, m->complete);
    store_row_end(s, st);
}

/* "client", "slot", "node", "all". */
static const char *scope_name(an_scope scope)
{
    switch (scope) {
    case AN_SCOPE_CLIENT: return "client";
    case AN_SCOPE_SLOT: return "slot";
    case AN_SCOPE_NODE: return "node";
    default: return "all";
    }
}

/* Write or replace a latency summary (keyed by scope, key, redirected). */
static void write_latency(void *ctx, const an_latency *l)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_LATENCY);
    if (!st)
        return;
    store_set_text(st, 1, scope_name(l->scope));
    store_set_text(st, 2, l->key);
    store_set_int(st, 3, l->redirected ? 1 : 0);
    store_set_uint(st, 4, l->count);
    store_set_int(st, 5, l->p50_us);
    store_set_int(st, 6, l->p90_us);
    store_set_int(st, 7, l->p99_us);
    store_set_int(st, 8, l->max_us);
    store_set_int(st, 9, l->total_us);
    store_set_int(st, 10, l->extra_us);
    store_set_uint(st, 11, l->extra_round_trips);
    store_row_end(s, st);
}

/* Set the reply side of a command: time, type, error class, latency, size. */
static void set_command_reply(store_row *st, const resp_command *cmd, char type[2])
{
    int ok = cmd->outcome == RESP_OK;
    type[0] = ok ? (char)cmd->reply.type : 0;
    type[1] = 0;
    store_set_int(st, 2, ok ? cmd->reply.ts_us : 0);
    store_set_text(st, 12, type);
    store_set_text(st, 13, ok ? resp_err_name(cmd->reply.err) : "");
    store_set_int(st, 14, ok ? cmd->reply.ts_us - cmd->req.ts_us : 0);
    store_set_uint(st, 16, ok ? cmd->reply.bytes : 0);
}

/* The server endpoint as text ("10.0.0.1:7000"), from a small cache: the
 * formatting (inet_ntop, snprintf) would run once per command row, and a
 * cluster has a handful of servers. The cache replaces round robin. */
static const char *command_node(store *s, const cap_endpoint *server)
{
    store_node_text *n;
    for (uint32_t i = 0; i < s->nnodes; i++)
        if (cap_endpoint_equal(&s->nodes[i].ep, server))
            return s->nodes[i].text;
    if (s->nnodes < STORE_NODE_CACHE) {
        n = &s->nodes[s->nnodes++];
    } else {
        n = &s->nodes[s->next_node];
        s->next_node = (s->next_node + 1) % STORE_NODE_CACHE;
    }
    n->ep = *server;
    cap_endpoint_format(server, n->text, sizeof n->text);
    return n->text;
}

/* Append one paired command (only with store_commands). Only the name, the
 * first key and sizes are written: argument values may be secrets or data. */
static void write_command(void *ctx, const resp_command *cmd, const char *client, int32_t slot)
{
    store *s = ctx;
    char type[2];
    size_t key_len = cmd->req.key0_len < sizeof cmd->req.key0 ? cmd->req.key0_len
                                                               : sizeof cmd->req.key0;
    store_row *st = store_row_begin(s, ST_COMMAND);
    if (!st)
        return;
    store_set_int(st, 1, cmd->req.ts_us);
    store_set_text(st, 3, client);
    store_set_uint(st, 4, cmd->conn ? cmd->conn->id : 0);
    store_set_text(st, 5, cmd->conn ? command_node(s, &cmd->conn->server) : "");
    store_set_uint(st, 6, cmd->seq);
    store_set_text(st, 7, cmd->req.name);
    store_set_uint(st, 8, cmd->req.argc);
    store_set_int(st, 9, slot);
    store_set_text_len(st, 10, cmd->req.key0, key_len);
    store_set_text(st, 11, outcome_name(cmd->outcome));
    store_set_uint(st, 15, cmd->req.bytes);
    store_set_int(st, 17, cmd->in_multi);
    store_set_uint(st, 18, cmd->req.start_frame);
    store_set_uint(st, 19, cmd->outcome == RESP_OK ? cmd->reply.end_frame : 0);
    set_command_reply(st, cmd, type);
    store_row_end(s, st);
}

/* Write one client's convergence after an ownership change. */
static void write_convergence(void *ctx, const an_convergence *c)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_CONVERGENCE);
    if (!st)
        return;
    store_set_text(st, 1, c->client);
    store_set_int(st, 2, c->slot_lo);
    store_set_int(st, 3, c->slot_hi);
    store_set_text(st, 4, c->old_node);
    store_set_text(st, 5, c->new_node);
    store_set_text(st, 6, c->source);
    store_set_int(st, 7, c->flip_us);
    store_set_uint(st, 8, c->flip_frame);
    store_set_uint(st, 9, c->config_epoch);
    store_set_int(st, 10, c->first_us);
    store_set_int(st, 11, c->last_stale_us);
    store_set_int(st, 12, c->converged_us);
    store_set_uint(st, 13, c->stale_commands);
    store_set_uint(st, 14, c->moved_replies);
    store_set_uint(st, 15, c->at_risk_writes);
    store_row_end(s, st);
}

/* Write one write at risk. */
static void write_at_risk(void *ctx, const an_risky_write *w)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_AT_RISK);
    if (!st)
        return;
    store_set_uint(st, 1, w->finding_id);
    store_set_int(st, 2, w->ts_us);
    store_set_text(st, 3, w->client);
    store_set_text(st, 4, w->node);
    store_set_text(st, 5, w->new_node);
    store_set_int(st, 6, w->slot);
    store_set_text(st, 7, w->command);
    store_set_text(st, 8, w->key);
    store_set_uint(st, 9, w->req_frame);
    store_set_uint(st, 10, w->reply_frame);
    store_set_uint(st, 11, w->proof_frame);
    store_set_uint(st, 12, w->config_epoch);
    store_row_end(s, st);
}

/* A p50/p99 of the time series: NULL when no operation ended (-1). */
static void set_opt_us(store_row *st, int i, int64_t us)
{
    if (us >= 0)
        store_set_int(st, i, us);
}

/* Write one row of the time series. */
static void write_series(void *ctx, const an_series_row *r)
{
    store *s = ctx;
    store_row *st = store_row_begin(s, ST_TIMELINE);
    if (!st)
        return;
    store_set_int(st, 1, r->bucket_us);
    store_set_int(st, 2, r->width_us);
    store_set_text(st, 3, r->scope);
    store_set_text(st, 4, r->scope_id);
    store_set_uint(st, 5, r->scopes);
    store_set_uint(st, 6, r->commands);
    store_set_uint(st, 7, r->moved);
    store_set_uint(st, 8, r->ask);
    store_set_uint(st, 9, r->tryagain);
    store_set_uint(st, 10, r->crossslot);
    store_set_uint(st, 11, r->clusterdown);
    store_set_uint(st, 12, r->asking);
    store_set_uint(st, 13, r->retries);
    store_set_uint(st, 14, r->direct_ops);
    store_set_uint(st, 15, r->redirected_ops);
    set_opt_us(st, 16, r->direct_p50_us);
    set_opt_us(st, 17, r->direct_p99_us);
    set_opt_us(st, 18, r->redirected_p50_us);
    set_opt_us(st, 19, r->redirected_p99_us);
    store_row_end(s, st);
}

an_sink store_sink(store *s)
{
    an_sink sink;
    memset(&sink, 0, sizeof sink);
    sink.ctx = s;
    sink.finding = write_finding;
    sink.redirect = write_redirect;
    sink.node = write_node;
    sink.client = write_client;
    sink.connection = write_connection;
    sink.migration = write_migration;
    sink.latency = write_latency;
    sink.owner_row = write_owner_row;
    sink.node_transition = write_node_transition;
    sink.failover = write_failover;
    sink.convergence = write_convergence;
    sink.at_risk_write = write_at_risk;
    sink.series = write_series;
    if (s && s->opts.store_commands)
        sink.command = write_command;
    return sink;
}
