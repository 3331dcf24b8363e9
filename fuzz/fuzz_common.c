/*
 * fuzz_common.c - the pipeline every fuzz target drives, with checking sinks.
 *
 * Between resp/ and analysis/ and after analysis/ sit sinks that test what the
 * public headers promise about each record: text fields NUL-terminated inside
 * their arrays, kept prefixes no longer than their arrays, slots in 0..16383,
 * the slot of a fully kept key equal to resp_key_slot of its bytes (the
 * incremental hasher must not depend on where the chunks were split), kept raw
 * replies readable to their last byte and parseable by resp_value_parse,
 * evidence that is valid JSON (RFC 8259, UTF-8) whatever bytes the keys held.
 * A broken promise aborts, so the fuzzer reports it like a crash.
 */
#include <string.h>

#include "fuzz/fuzz.h"

/* Small limits, so that small inputs reach the caps and their counters. */
#define FUZZ_MAX_DEPTH 32
#define FUZZ_MAX_KEPT_REPLY 65536

/* ---------------------------------------------------------------- text checks */

#define has_nul ss_fuzz_has_nul

/* A JSON validator small enough to read: RFC 8259 grammar, UTF-8 checked,
 * nesting bounded. Each function returns the position after the value it read,
 * or NULL when the text is not valid there. */
static const char *json_value(const char *p, const char *end, int depth);

/* Skip JSON whitespace. */
static const char *json_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Length of the UTF-8 sequence at p (1..4) if it is well formed, else 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    size_t n;
    uint32_t cp;
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        n = 2;
        cp = p[0] & 0x1F;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        n = 3;
        cp = p[0] & 0x0F;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        n = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    /* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* A JSON string starting at its opening quote. */
static const char *json_string(const char *p, const char *end)
{
    p++; /* the quote */
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return NULL; /* control characters must be escaped */
        if (c == '\\') {
            if (end - p < 2)
                return NULL;
            char e = p[1];
            if (e == 'u') {
                if (end - p < 6)
                    return NULL;
                for (int i = 2; i < 6; i++) {
                    char h = p[i];
                    if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') ||
                          (h >= 'A' && h <= 'F')))
                        return NULL;
                }
                p += 6;
            } else if (strchr("\"\\/bfnrt", e) && e != 0) {
                p += 2;
            } else {
                return NULL;
            }
            continue;
        }
        size_t n = utf8_len((const unsigned char *)p, (const unsigned char *)end);
        if (n == 0)
            return NULL;
        p += n;
    }
    return NULL;
}

/* A JSON number (-? int frac? exp?). */
static const char *json_number(const char *p, const char *end)
{
    if (p < end && *p == '-')
        p++;
    if (p >= end)
        return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

/* An object or array starting at its bracket. */
static const char *json_container(const char *p, const char *end, int depth)
{
    char close = *p == '{' ? '}' : ']';
    int object = *p == '{';
    p = json_ws(p + 1, end);
    if (p < end && *p == close)
        return p + 1;
    for (;;) {
        if (object) {
            if (p >= end || *p != '"')
                return NULL;
            p = json_string(p, end);
            if (!p)
                return NULL;
            p = json_ws(p, end);
            if (p >= end || *p != ':')
                return NULL;
            p = json_ws(p + 1, end);
        }
        p = json_value(p, end, depth + 1);
        if (!p)
            return NULL;
        p = json_ws(p, end);
        if (p < end && *p == ',') {
            p = json_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == close)
            return p + 1;
        return NULL;
    }
}

static const char *json_value(const char *p, const char *end, int depth)
{
    if (p >= end || depth > 64)
        return NULL;
    switch (*p) {
    case '{':
    case '[':
        return json_container(p, end, depth);
    case '"':
        return json_string(p, end);
    case 't':
        return (end - p >= 4 && memcmp(p, "true", 4) == 0) ? p + 4 : NULL;
    case 'f':
        return (end - p >= 5 && memcmp(p, "false", 5) == 0) ? p + 5 : NULL;
    case 'n':
        return (end - p >= 4 && memcmp(p, "null", 4) == 0) ? p + 4 : NULL;
    default:
        return json_number(p, end);
    }
}

/* 1 if text is exactly one JSON object (whitespace around allowed). */
static int json_is_object(const char *text)
{
    const char *end = text + strlen(text);
    const char *p = json_ws(text, end);
    if (p >= end || *p != '{')
        return 0;
    p = json_value(p, end, 0);
    return p && json_ws(p, end) == end;
}

/* ---------------------------------------------------------------- resp checks */

/* 1 if t is one of the resp_type values. */
static int resp_type_valid(resp_type t)
{
    static const char types[] = "+-:$*_,#!=(%~>|ni";
    return t == RESP_T_NONE || (t > 0 && t < 256 && strchr(types, (int)t));
}

/* Read every byte of a kept raw reply (so ASan sees a bad pointer or length) and
 * parse it. The tree parser may refuse what the streaming decoder let pass (it
 * is stricter: a bare CR inside a simple string line, for one), which costs
 * only a map_errors count in analysis, so a refusal is not a finding. */
static void check_raw_reply(const resp_reply *r)
{
    SS_FUZZ_CHECK(r->raw_len <= FUZZ_MAX_KEPT_REPLY);
    if (r->raw_len == 0)
        return;
    SS_FUZZ_CHECK(r->raw != NULL);
    SS_FUZZ_CHECK(r->raw_len <= r->bytes);
    unsigned sum = 0;
    for (size_t i = 0; i < r->raw_len; i++)
        sum += r->raw[i];
    (void)sum;
    resp_value_free(resp_value_parse(r->raw, r->raw_len, FUZZ_MAX_DEPTH + 1));
}

/* Every promise of resp.h about one command. */
static void check_command(const resp_command *cmd)
{
    const resp_request *q = &cmd->req;
    SS_FUZZ_CHECK(cmd->conn != NULL);
    SS_FUZZ_CHECK(cmd->outcome == RESP_OK || cmd->outcome == RESP_NO_REPLY ||
                  cmd->outcome == RESP_UNANSWERED);
    SS_FUZZ_CHECK(has_nul(q->name, sizeof q->name));
    SS_FUZZ_CHECK(q->nargs <= RESP_ARG_KEEP);
    SS_FUZZ_CHECK(q->nargs < q->argc || q->nargs == 0);
    for (unsigned i = 0; i < q->nargs; i++) {
        SS_FUZZ_CHECK(q->arg_len[i] <= RESP_ARG_PREFIX);
        SS_FUZZ_CHECK(q->arg_len[i] <= q->arg_full_len[i]);
    }
    SS_FUZZ_CHECK(q->key0_len <= RESP_ARG_PREFIX);
    SS_FUZZ_CHECK(q->key0_len <= q->key0_full_len || q->nkeys == 0);
    SS_FUZZ_CHECK(q->slot >= -1 && q->slot < 16384);
    SS_FUZZ_CHECK(q->nkeys == 0 || q->slot >= 0);
    SS_FUZZ_CHECK(q->nkeys > 0 || q->slot == -1);
    /* the slot of the first key, when the whole key was kept, must not depend
     * on how its bytes were split across chunks */
    if (q->nkeys > 0 && q->key0_len == q->key0_full_len)
        SS_FUZZ_CHECK(q->slot == resp_key_slot((const uint8_t *)q->key0, q->key0_len));
    if (cmd->outcome != RESP_OK)
        return;
    const resp_reply *r = &cmd->reply;
    SS_FUZZ_CHECK(resp_type_valid(r->type));
    SS_FUZZ_CHECK(has_nul(r->errtext, sizeof r->errtext));
    SS_FUZZ_CHECK(has_nul(r->redir.host, sizeof r->redir.host));
    SS_FUZZ_CHECK(r->redir.slot >= -1 && r->redir.slot < 16384);
    SS_FUZZ_CHECK(r->err >= RESP_ERR_NONE && r->err <= RESP_ERR_OTHER);
    check_raw_reply(r);
}

/* resp_sink.conn_open: count, then forward to analysis. */
static void chk_conn_open(void *ctx, const cap_conn *conn)
{
    ss_fuzz_pipe *p = ctx;
    SS_FUZZ_CHECK(conn != NULL);
    p->opens++;
    if (p->an_sink_in.conn_open)
        p->an_sink_in.conn_open(p->an_sink_in.ctx, conn);
}

/* resp_sink.command: check, count, forward. */
static void chk_command(void *ctx, const resp_command *cmd)
{
    ss_fuzz_pipe *p = ctx;
    check_command(cmd);
    p->commands_seen++;
    if (p->an_sink_in.command)
        p->an_sink_in.command(p->an_sink_in.ctx, cmd);
}

/* resp_sink.conn_close: check the counters, forward. */
static void chk_conn_close(void *ctx, const cap_conn *conn, const resp_conn_stats *st)
{
    ss_fuzz_pipe *p = ctx;
    SS_FUZZ_CHECK(conn != NULL && st != NULL);
    SS_FUZZ_CHECK(st->paired <= st->requests);
    p->closes++;
    if (p->an_sink_in.conn_close)
        p->an_sink_in.conn_close(p->an_sink_in.ctx, conn, st);
}

/* A bus message (a stream that began with "RCmb"): its bytes are the ones
 * it was decoded from, then on to the analysis. */
static void chk_bus_message(void *ctx, const cap_conn *conn, int dir, const bus_msg *m,
                            int64_t ts_us, uint64_t frame)
{
    ss_fuzz_pipe *p = ctx;
    SS_FUZZ_CHECK(conn != NULL && m != NULL && m->raw != NULL);
    SS_FUZZ_CHECK(m->raw_len >= BUS_HEADER_LEN && m->raw_len <= m->totlen);
    SS_FUZZ_CHECK(m->whole ? m->raw_len == m->totlen : m->raw_len < m->totlen);
    if (p->an_sink_in.bus_message)
        p->an_sink_in.bus_message(p->an_sink_in.ctx, conn, dir, m, ts_us, frame);
}

/* ---------------------------------------------------------------- analysis checks */

/* An address-like name field. */
#define CHECK_NAME(f) SS_FUZZ_CHECK(has_nul((f), AN_NAME_MAX))

static void chk_finding(void *ctx, const an_finding *f)
{
    (void)ctx;
    SS_FUZZ_CHECK((int)f->kind >= 0 && f->kind < AN_FINDING_KINDS);
    SS_FUZZ_CHECK(f->severity >= AN_INFO && f->severity <= AN_ERROR);
    CHECK_NAME(f->client);
    CHECK_NAME(f->node);
    SS_FUZZ_CHECK(has_nul(f->summary, sizeof f->summary));
    SS_FUZZ_CHECK(f->slot >= -1 && f->slot < 16384);
    SS_FUZZ_CHECK(f->id >= 1);
    SS_FUZZ_CHECK(f->evidence == NULL || json_is_object(f->evidence));
}

static void chk_redirect(void *ctx, const an_redirect *r)
{
    (void)ctx;
    CHECK_NAME(r->client);
    CHECK_NAME(r->node);
    CHECK_NAME(r->target);
    SS_FUZZ_CHECK(has_nul(r->command, sizeof r->command));
    SS_FUZZ_CHECK(has_nul(r->key, sizeof r->key));
    SS_FUZZ_CHECK(r->slot >= -1 && r->slot < 16384);
    SS_FUZZ_CHECK(r->kind >= RESP_ERR_MOVED && r->kind <= RESP_ERR_OTHER);
}

static void chk_node(void *ctx, const an_node *n)
{
    (void)ctx;
    CHECK_NAME(n->observed);
    CHECK_NAME(n->announced);
    SS_FUZZ_CHECK(has_nul(n->node_id, sizeof n->node_id));
    SS_FUZZ_CHECK(has_nul(n->role, sizeof n->role));
    SS_FUZZ_CHECK(n->slots_owned <= 16384);
}

static void chk_client(void *ctx, const an_client *c)
{
    (void)ctx;
    CHECK_NAME(c->name);
}

static void chk_connection(void *ctx, const an_connection *c)
{
    (void)ctx;
    CHECK_NAME(c->client);
    CHECK_NAME(c->src);
    CHECK_NAME(c->dst);
}

static void chk_migration(void *ctx, const an_migration *m)
{
    (void)ctx;
    SS_FUZZ_CHECK(m->slot >= 0 && m->slot < 16384);
    CHECK_NAME(m->source);
    CHECK_NAME(m->target);
}

static void chk_latency(void *ctx, const an_latency *l)
{
    (void)ctx;
    CHECK_NAME(l->key);
    SS_FUZZ_CHECK(l->scope >= AN_SCOPE_CLIENT && l->scope <= AN_SCOPE_ALL);
    if (l->count > 0)
        SS_FUZZ_CHECK(l->p50_us <= l->p90_us && l->p90_us <= l->p99_us &&
                      l->p99_us <= l->max_us);
}

static void chk_an_command(void *ctx, const resp_command *cmd, const char *client,
                           int32_t slot)
{
    (void)ctx;
    SS_FUZZ_CHECK(cmd != NULL && client != NULL);
    SS_FUZZ_CHECK(has_nul(client, AN_NAME_MAX));
    SS_FUZZ_CHECK(slot >= -1 && slot < 16384);
}

/* ---------------------------------------------------------------- pipeline */

void ss_fuzz_cap_config(cap_config *cfg)
{
    cap_config_defaults(cfg);
    cfg->max_connections = 16;
    cfg->ooo_bytes_per_conn = 4096;
    cfg->ooo_bytes_total = 16384;
    cfg->idle_timeout_us = 30 * 1000000LL;
    cfg->shape = resp_shape;
}

/* The analyzer behind the checking sinks, with every table small: fast to
 * create per input, and its caps are reached. */
static void pipe_analysis_init(ss_fuzz_pipe *p, unsigned variant)
{
    an_config acfg;
    an_config_defaults(&acfg);
    acfg.client_by = (variant & 1) ? AN_CLIENT_BY_CONN : AN_CLIENT_BY_HOST;
    acfg.redact_keys = (variant & 2) ? 1 : 0;
    acfg.max_clients = 8;
    acfg.max_ops = 16;
    acfg.max_conns = 16;
    acfg.max_nodes = 4;
    acfg.max_findings = 16;
    acfg.max_memos = 16;
    acfg.max_slot_latency = 4;
    acfg.max_view_bytes = 16384;
    acfg.moved_ignored_min = 1;
    acfg.tryagain_min = 2;
    acfg.ask_cached_min = 1;
    acfg.migration_stuck_us = 1000000;
    an_sink asink = {
        .ctx = p,
        .finding = chk_finding,
        .redirect = chk_redirect,
        .node = chk_node,
        .client = chk_client,
        .connection = chk_connection,
        .migration = chk_migration,
        .latency = chk_latency,
        .command = chk_an_command,
    };
    p->an = an_new(&acfg, &asink);
    SS_FUZZ_CHECK(p->an != NULL);
    p->an_sink_in = an_resp_sink(p->an);
}

void ss_fuzz_pipe_init(ss_fuzz_pipe *p, unsigned variant)
{
    memset(p, 0, sizeof *p);
    if (!(variant & SS_FUZZ_NO_ANALYSIS))
        pipe_analysis_init(p, variant);

    resp_config rcfg;
    resp_config_defaults(&rcfg);
    rcfg.max_depth = FUZZ_MAX_DEPTH;
    rcfg.max_inflight = 32;
    rcfg.max_inflight_total = 128;
    rcfg.max_line = 1024;
    rcfg.max_kept_reply = FUZZ_MAX_KEPT_REPLY;
    rcfg.key_fn = an_key_fn;
    rcfg.key_ctx = NULL;
    resp_sink rsink = {
        .ctx = p,
        .conn_open = chk_conn_open,
        .command = chk_command,
        .conn_close = chk_conn_close,
        .bus_message = chk_bus_message,
    };
    p->rp = resp_new(&rcfg, &rsink);
    SS_FUZZ_CHECK(p->rp != NULL);
}

void ss_fuzz_pipe_finish(ss_fuzz_pipe *p, int64_t end_us)
{
    const resp_stats *rs = resp_get_stats(p->rp);
    SS_FUZZ_CHECK(rs->commands == p->commands_seen);
    SS_FUZZ_CHECK(rs->total.paired <= rs->total.requests);
    if (p->an)
        an_finish(p->an, end_us);
    resp_free(p->rp);
    an_free(p->an);
    p->rp = NULL;
    p->an = NULL;
}

/* ---------------------------------------------------------------- synthetic connections */

void ss_fuzz_conn_open(ss_fuzz_pipe *p, ss_fuzz_conn *c, uint64_t id,
                       uint8_t client_host, uint16_t client_port, int saw_syn,
                       int64_t ts_us)
{
    memset(c, 0, sizeof *c);
    c->conn.id = id;
    c->conn.client.addr.family = 4;
    c->conn.client.addr.bytes[0] = 10;
    c->conn.client.addr.bytes[3] = client_host;
    c->conn.client.port = client_port;
    c->conn.server.addr.family = 4;
    c->conn.server.addr.bytes[0] = 10;
    c->conn.server.addr.bytes[3] = 1;
    c->conn.server.port = 7000;
    c->conn.first_us = ts_us;
    c->conn.last_us = ts_us;
    c->conn.saw_syn = saw_syn ? 1 : 0;
    c->conn.side_source = saw_syn ? CAP_SIDE_SYN : CAP_SIDE_PORT;
    c->open = 1;
    cap_event ev = {.kind = CAP_EV_OPEN, .conn = &c->conn, .ts_us = ts_us};
    resp_on_capture_event(p->rp, &ev);
}

void ss_fuzz_conn_data(ss_fuzz_pipe *p, ss_fuzz_conn *c, cap_dir dir,
                       const uint8_t *data, size_t len, int64_t ts_us)
{
    if (!c->open || len == 0)
        return;
    c->conn.last_us = ts_us;
    c->conn.packets[dir]++;
    c->conn.bytes[dir] += len;
    cap_event ev = {.kind = CAP_EV_DATA, .conn = &c->conn, .dir = dir,
                    .ts_us = ts_us, .data = data, .len = len};
    resp_on_capture_event(p->rp, &ev);
}

void ss_fuzz_conn_gap(ss_fuzz_pipe *p, ss_fuzz_conn *c, cap_dir dir,
                      uint64_t gap_len, int64_t ts_us)
{
    if (!c->open)
        return;
    c->conn.gaps[dir]++;
    c->conn.gap_bytes[dir] += gap_len;
    cap_event ev = {.kind = CAP_EV_GAP, .conn = &c->conn, .dir = dir,
                    .ts_us = ts_us, .gap_len = gap_len};
    resp_on_capture_event(p->rp, &ev);
}

void ss_fuzz_conn_close(ss_fuzz_pipe *p, ss_fuzz_conn *c, cap_close_reason why,
                        int64_t ts_us)
{
    if (!c->open)
        return;
    c->conn.last_us = ts_us;
    cap_event ev = {.kind = CAP_EV_CLOSE, .conn = &c->conn, .ts_us = ts_us,
                    .reason = why};
    resp_on_capture_event(p->rp, &ev);
    c->open = 0;
}

/* ---------------------------------------------------------------- conversations */

/* One direction still to deliver. */
typedef struct stream {
    const uint8_t *p;
    size_t len, off;
} stream;

/* Largest chunk for each chunk-size class. */
static size_t max_chunk(unsigned cls, size_t rest)
{
    static const size_t caps[3] = {4, 64, 1024};
    return cls < 3 ? caps[cls] : (rest ? rest : 1);
}

/* Which direction goes next: keep the replies roughly behind the requests (as
 * on a real connection) but let the generator break the rule sometimes. */
static cap_dir pick_dir(const stream *req, const stream *rep, ss_fuzz_rng *rng)
{
    if (req->off >= req->len)
        return CAP_TO_CLIENT;
    if (rep->off >= rep->len)
        return CAP_TO_SERVER;
    if (ss_fuzz_rng_below(rng, 4) == 0)
        return ss_fuzz_rng_below(rng, 2) ? CAP_TO_CLIENT : CAP_TO_SERVER;
    /* replies' progress (as a fraction) behind the requests' */
    if ((uint64_t)rep->off * req->len < (uint64_t)req->off * rep->len)
        return CAP_TO_CLIENT;
    return CAP_TO_SERVER;
}

int ss_fuzz_conversation(const uint8_t *data, size_t size, unsigned pipe_flags)
{
    if (size < 7)
        return 0;
    unsigned flags = data[0];
    size_t req_len = (size_t)data[1] | (size_t)data[2] << 8;
    uint64_t seed = (uint64_t)data[3] | (uint64_t)data[4] << 8 |
                    (uint64_t)data[5] << 16 | (uint64_t)data[6] << 24;
    data += 7;
    size -= 7;
    if (req_len > size)
        req_len = size;
    stream st[2] = {{data, req_len, 0}, {data + req_len, size - req_len, 0}};

    ss_fuzz_rng rng;
    ss_fuzz_rng_seed(&rng, seed * 2 + 1);
    ss_fuzz_pipe pipe;
    ss_fuzz_pipe_init(&pipe, (flags & 3) | pipe_flags);

    int64_t ts = 1700000000000000LL;
    ss_fuzz_conn conn;
    uint64_t conn_id = 1;
    ss_fuzz_conn_open(&pipe, &conn, conn_id, 2, 40000, 1, ts);
    size_t total = st[0].len + st[1].len;
    size_t reconnect_at = (flags & 8) && total ? (size_t)ss_fuzz_rng_below(&rng, total) : SIZE_MAX;
    size_t delivered = 0;

    /* bounded: every turn delivers or skips at least one byte */
    while (st[0].off < st[0].len || st[1].off < st[1].len) {
        cap_dir dir = pick_dir(&st[0], &st[1], &rng);
        stream *s = &st[dir];
        size_t rest = s->len - s->off;
        size_t n = 1 + (size_t)ss_fuzz_rng_below(&rng, max_chunk(flags >> 6, rest));
        if (n > rest)
            n = rest;

        if ((flags & 16) && ss_fuzz_rng_below(&rng, 16) == 0)
            ts -= (int64_t)ss_fuzz_rng_below(&rng, 5000000);
        else
            ts += (int64_t)ss_fuzz_rng_below(&rng, 2000);

        if ((flags & 4) && ss_fuzz_rng_below(&rng, 32) == 0) {
            /* these bytes are lost on the wire */
            uint64_t told = ss_fuzz_rng_below(&rng, 4) ? n : 0;
            ss_fuzz_conn_gap(&pipe, &conn, dir, told, ts);
        } else {
            ss_fuzz_conn_data(&pipe, &conn, dir, s->p + s->off, n, ts);
        }
        s->off += n;
        delivered += n;

        if (delivered >= reconnect_at) {
            reconnect_at = SIZE_MAX;
            ss_fuzz_conn_close(&pipe, &conn, CAP_CLOSE_FIN, ts);
            ss_fuzz_conn_open(&pipe, &conn, ++conn_id, 2, 40001, 0, ts);
        }
    }
    ss_fuzz_conn_close(&pipe, &conn, (flags & 32) ? CAP_CLOSE_RST : CAP_CLOSE_FIN, ts);
    ss_fuzz_pipe_finish(&pipe, ts);
    return 0;
}

/* ---------------------------------------------------------------- rng */

void ss_fuzz_rng_seed(ss_fuzz_rng *r, uint64_t seed)
{
    r->s = seed ? seed : 0x9E3779B97F4A7C15ULL;
}

uint64_t ss_fuzz_rng_next(ss_fuzz_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1DULL;
}

uint64_t ss_fuzz_rng_below(ss_fuzz_rng *r, uint64_t n)
{
    return ss_fuzz_rng_next(r) % n;
}
