/*
 * scenario.c - see scenario.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/analysis/scenario.h"

/* ---------------------------------------------------------------- sink */

static void on_finding(void *ctx, const an_finding *f)
{
    sc_sink *o = ctx;
    o->finding_emits++;
    size_t i = 0;
    while (i < o->nfindings && o->findings[i].id != f->id)
        i++;
    if (i == SC_MAX)
        return;
    if (i == o->nfindings)
        o->nfindings++;
    o->findings[i] = *f;
    snprintf(o->evidence[i], sizeof o->evidence[i], "%s", f->evidence ? f->evidence : "");
    o->findings[i].evidence = NULL;
}

static void on_redirect(void *ctx, const an_redirect *r)
{
    sc_sink *o = ctx;
    if (o->nredirects < SC_MAX)
        o->redirects[o->nredirects++] = *r;
}

static void on_node(void *ctx, const an_node *n)
{
    sc_sink *o = ctx;
    if (o->nnodes < 64)
        o->nodes[o->nnodes++] = *n;
}

static void on_client(void *ctx, const an_client *c)
{
    sc_sink *o = ctx;
    if (o->nclients < SC_MAX)
        o->clients[o->nclients++] = *c;
}

static void on_connection(void *ctx, const an_connection *c)
{
    sc_sink *o = ctx;
    if (o->connections < SC_MAX) {
        o->conn_records[o->connections].id = c->id;
        o->conn_records[o->connections].commands = c->commands;
        o->conn_records[o->connections].ident = c->ident;
        snprintf(o->conn_records[o->connections].client,
                 sizeof o->conn_records[o->connections].client, "%s", c->client);
    }
    o->connections++;
}

static void on_migration(void *ctx, const an_migration *m)
{
    sc_sink *o = ctx;
    if (o->nmigrations < SC_MAX)
        o->migrations[o->nmigrations++] = *m;
}

static void on_latency(void *ctx, const an_latency *l)
{
    sc_sink *o = ctx;
    if (o->nlatencies < SC_MAX)
        o->latencies[o->nlatencies++] = *l;
}

static void on_series(void *ctx, const an_series_row *r)
{
    sc_sink *o = ctx;
    if (o->nseries < SC_MAX)
        o->series[o->nseries++] = *r;
}

static void on_command(void *ctx, const resp_command *cmd, const char *client, int32_t slot)
{
    sc_sink *o = ctx;
    (void)client;
    (void)slot;
    o->commands++;
    snprintf(o->last_command_key, sizeof o->last_command_key, "%.*s", (int)cmd->req.key0_len,
             cmd->req.key0);
    snprintf(o->last_command_arg0, sizeof o->last_command_arg0, "%.*s",
             cmd->req.nargs ? (int)cmd->req.arg_len[0] : 0, cmd->req.args[0]);
}

static void on_convergence(void *ctx, const an_convergence *c)
{
    sc_sink *o = ctx;
    if (o->nconvergence < SC_MAX)
        o->convergence[o->nconvergence++] = *c;
}

static void on_at_risk_write(void *ctx, const an_risky_write *w)
{
    sc_sink *o = ctx;
    if (o->nat_risk < SC_MAX)
        o->at_risk[o->nat_risk++] = *w;
}

/* A scenario whose analyzer records into s->out; with_commands: also every
 * command (a command sink, which keeps the analyzer off its quick path). */
static void sc_init_sink(sc *s, const an_config *cfg, int with_commands)
{
    memset(s, 0, sizeof *s);
    an_sink sink = {&s->out, on_finding, on_redirect, on_node, on_client, on_connection,
                    on_migration, on_latency, with_commands ? on_command : NULL, NULL, NULL, NULL,
                    on_convergence, on_at_risk_write, on_series};
    s->an = an_new(cfg, &sink);
    s->rs = an_resp_sink(s->an);
}

void sc_init(sc *s, const an_config *cfg)
{
    sc_init_sink(s, cfg, 1);
}

void sc_init_no_commands(sc *s, const an_config *cfg)
{
    sc_init_sink(s, cfg, 0);
}

void sc_free(sc *s)
{
    an_free(s->an);
    s->an = NULL;
}

static int conn_open(sc *s, int host, int cport, int sport, int saw_syn)
{
    int i = (int)s->nconns++;
    cap_conn *c = &s->conns[i];
    memset(c, 0, sizeof *c);
    c->id = (uint64_t)i + 1;
    c->client.addr.family = 4;
    c->client.addr.bytes[0] = 127;
    c->client.addr.bytes[3] = (uint8_t)host;
    c->client.port = (uint16_t)cport;
    c->server.addr.family = 4;
    c->server.addr.bytes[0] = 127;
    c->server.addr.bytes[3] = 1;
    c->server.port = (uint16_t)sport;
    c->saw_syn = (uint8_t)saw_syn;
    c->first_us = SC_T0;
    s->rs.conn_open(s->rs.ctx, c);
    s->word[i] = s->rs.conn_word ? s->rs.conn_word(s->rs.ctx, c) : 0;
    return i;
}

int sc_conn(sc *s, int host, int cport, int sport)
{
    return conn_open(s, host, cport, sport, 1);
}

int sc_conn_mid(sc *s, int host, int cport, int sport)
{
    return conn_open(s, host, cport, sport, 0);
}

/* The request part: name, arguments kept, keys as an_key_fn marks them. */
static void build_request(resp_request *r, int argc, const char *const *argv)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", argv[0]);
    for (char *p = r->name; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 32);
    r->argc = (uint32_t)argc;
    r->slot = -1;
    resp_keyctx k;
    memset(&k, 0, sizeof k);
    k.req = r;
    for (int i = 1; i < argc; i++) {
        size_t len = strlen(argv[i]);
        k.argi = (uint32_t)i;
        k.prev = (const uint8_t *)argv[i - 1];
        k.prev_full_len = (uint32_t)strlen(argv[i - 1]);
        k.prev_len = k.prev_full_len < RESP_ARG_PREFIX ? k.prev_full_len : RESP_ARG_PREFIX;
        int is_key = an_key_fn(NULL, &k);
        if (i <= RESP_ARG_KEEP) {
            r->nargs = (uint8_t)i;
            r->arg_len[i - 1] = (uint8_t)(len < RESP_ARG_PREFIX ? len : RESP_ARG_PREFIX);
            r->arg_full_len[i - 1] = (uint32_t)len;
            memcpy(r->args[i - 1], argv[i], r->arg_len[i - 1]);
        }
        if (is_key) {
            int slot = resp_key_slot((const uint8_t *)argv[i], len);
            if (r->nkeys == 0) {
                r->slot = slot;
                r->key0_len = (uint8_t)(len < RESP_ARG_PREFIX ? len : RESP_ARG_PREFIX);
                r->key0_full_len = (uint32_t)len;
                memcpy(r->key0, argv[i], r->key0_len);
            } else if (slot != r->slot) {
                r->multi_slot = 1;
            }
            r->nkeys++;
        }
    }
}

static void build_reply(resp_reply *rep, const char *reply)
{
    memset(rep, 0, sizeof *rep);
    rep->type = (resp_type)reply[0];
    if (reply[0] == '-') {
        const char *text = reply + 1;
        snprintf(rep->errtext, sizeof rep->errtext, "%s", text);
        rep->err = resp_classify_error(text, strlen(text), &rep->redir);
    } else if (reply[0] == ':') {
        rep->integer = atoll(reply + 1);
    } else if (!strcmp(reply, "+NOKEY")) {
        rep->nokey = 1; /* as resp/ decodes it */
    }
}

static void emit(sc *s, int c, int64_t t, int64_t rtt, const char *reply, const uint8_t *raw,
                 size_t raw_len, int argc, const char *const *argv)
{
    resp_command cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.conn = &s->conns[c];
    cmd.conn_word = s->word[c];
    cmd.seq = s->seq[c]++;
    cmd.outcome = RESP_OK;
    cmd.requests_lost = s->lost[c];
    s->lost[c] = 0;
    build_request(&cmd.req, argc, argv);
    if (s->key_lost[c] && cmd.req.nkeys > 0) { /* as resp's rq_finish leaves it */
        cmd.req.slot_unknown = 1;
        cmd.req.nkeys = 0;
        cmd.req.slot = -1;
        cmd.req.multi_slot = 0;
        cmd.req.key0_len = 0;
        cmd.req.key0_full_len = 0;
        memset(cmd.req.key0, 0, sizeof cmd.req.key0);
        if (cmd.req.nargs > 0) /* the key's kept prefix was damaged */
            cmd.req.arg_len[0] = 0;
    }
    s->key_lost[c] = 0;
    cmd.req.start_us = SC_T0 + t;
    cmd.req.ts_us = SC_T0 + t;
    build_reply(&cmd.reply, reply);
    cmd.reply.start_us = cmd.reply.ts_us = SC_T0 + t + rtt;
    if (strcmp(reply, "?") == 0) { /* no reply: lost */
        memset(&cmd.reply, 0, sizeof cmd.reply);
        cmd.reply.redir.slot = -1;
        cmd.outcome = RESP_UNANSWERED;
    }
    cmd.reply.raw = raw;
    cmd.reply.raw_len = raw_len;
    s->conns[c].last_us = cmd.reply.ts_us;
    s->rs.command(s->rs.ctx, &cmd);
}

int sc_cmd(sc *s, int c, int64_t t, int64_t rtt, const char *reply, int argc,
           const char *const *argv)
{
    emit(s, c, t, rtt, reply, NULL, 0, argc, argv);
    resp_request r;
    build_request(&r, argc, argv);
    return r.slot;
}

void sc_cmd_raw(sc *s, int c, int64_t t, int64_t rtt, const uint8_t *raw, size_t raw_len,
                int argc, const char *const *argv)
{
    const char *reply = raw_len && raw[0] == '-' ? "-ERR" : "*";
    emit(s, c, t, rtt, reply, raw, raw_len, argc, argv);
}

int sc_do(sc *s, int c, int64_t t, int64_t rtt, const char *reply, ...)
{
    const char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, reply);
    const char *a;
    while (argc < 32 && (a = va_arg(ap, const char *)) != NULL)
        argv[argc++] = a;
    va_end(ap);
    return sc_cmd(s, c, t, rtt, reply, argc, argv);
}

void sc_requests_lost(sc *s, int c)
{
    s->lost[c] = 1;
}

void sc_key_lost(sc *s, int c)
{
    s->key_lost[c] = 1;
}

void sc_close(sc *s, int c, int64_t t)
{
    resp_conn_stats st;
    memset(&st, 0, sizeof st);
    s->conns[c].last_us = SC_T0 + t;
    s->rs.conn_close(s->rs.ctx, &s->conns[c], &st);
}

void sc_finish(sc *s, int64_t t)
{
    an_finish(s->an, SC_T0 + t);
}

size_t sc_count(const sc *s, an_finding_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < s->out.nfindings; i++)
        n += s->out.findings[i].kind == kind;
    return n;
}

const an_finding *sc_find(const sc *s, an_finding_kind kind, const char *client)
{
    for (size_t i = 0; i < s->out.nfindings; i++)
        if (s->out.findings[i].kind == kind && strcmp(s->out.findings[i].client, client) == 0)
            return &s->out.findings[i];
    return NULL;
}

size_t sc_total(const sc *s)
{
    return s->out.nfindings;
}

size_t sc_total_clients(const sc *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->out.nfindings; i++)
        n += s->out.findings[i].client[0] != 0;
    return n;
}

const char *sc_evidence(const sc *s, const an_finding *f)
{
    return s->out.evidence[f - s->out.findings];
}

const char *sc_key_for_slot(int slot, char *buf, size_t n)
{
    for (unsigned i = 0; i < 10000000; i++) {
        snprintf(buf, n, "k%u", i);
        if (resp_key_slot((const uint8_t *)buf, strlen(buf)) == slot)
            return buf;
    }
    return NULL;
}

uint8_t *sc_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Two summaries with the same figures. */
static int same_latency(const an_latency *a, const an_latency *b)
{
    return a->count == b->count && a->p50_us == b->p50_us && a->p90_us == b->p90_us &&
           a->p99_us == b->p99_us && a->max_us == b->max_us && a->total_us == b->total_us &&
           a->extra_us == b->extra_us && a->extra_round_trips == b->extra_round_trips;
}

const an_latency *sc_latency(const sc *s, an_scope scope, const char *key, int redirected)
{
    const an_latency *found = NULL;
    for (size_t i = 0; i < s->out.nlatencies; i++) {
        const an_latency *l = &s->out.latencies[i];
        if (l->scope != scope || !l->redirected != !redirected)
            continue;
        if (scope != AN_SCOPE_ALL && strcmp(l->key, key) != 0)
            continue;
        if (found && !same_latency(found, l))
            return NULL;
        found = l;
    }
    return found;
}
