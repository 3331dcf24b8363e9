/*
 * harness.c - see harness.h.
 */
#include "harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append printf-style text to the log. */
static void logf_(h_ctx *h, const char *fmt, ...)
{
    char tmp[2048];
    va_list ap;
    if (h->no_log)
        return;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof tmp)
        n = sizeof tmp - 1;
    if (h->log_len + (size_t)n + 1 > h->log_cap) {
        size_t nc = h->log_cap ? h->log_cap * 2 : 4096;
        while (nc < h->log_len + (size_t)n + 1)
            nc *= 2;
        h->log = realloc(h->log, nc);
        if (h->log == NULL)
            abort();
        h->log_cap = nc;
    }
    memcpy(h->log + h->log_len, tmp, (size_t)n + 1);
    h->log_len += (size_t)n;
}

/* Printable form of a byte prefix (escapes non-printables). */
static const char *esc(const void *p, size_t n, char *buf, size_t size)
{
    const uint8_t *s = p;
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < size; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
            buf[o++] = (char)s[i];
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", s[i]);
    }
    buf[o] = '\0';
    return buf;
}

static void on_open(void *ctx, const cap_conn *conn)
{
    h_ctx *h = ctx;
    h->opens++;
    logf_(h, "open %llu\n", (unsigned long long)conn->id);
}

static uint64_t on_conn_word(void *ctx, const cap_conn *conn)
{
    h_ctx *h = ctx;
    (void)conn;
    h->conn_words++;
    return h->conn_word;
}

static void on_command(void *ctx, const resp_command *c)
{
    h_ctx *h = ctx;
    char b1[300], b2[300];
    const resp_request *q = &c->req;
    const resp_reply *r = &c->reply;
    if (h->ncmds < H_MAX_CMDS)
        h->cmds[h->ncmds] = *c;
    h->ncmds++;
    logf_(h, "cmd seq=%llu out=%d multi=%d r3=%d name=%s argc=%u inl=%d bytes=%llu t=%lld/%lld",
          (unsigned long long)c->seq, (int)c->outcome, c->in_multi, c->resp3, q->name, q->argc,
          q->inline_cmd, (unsigned long long)q->bytes, (long long)q->start_us,
          (long long)q->ts_us);
    for (unsigned i = 0; i < q->nargs; i++)
        logf_(h, " a%u=%s/%u", i + 1, esc(q->args[i], q->arg_len[i], b1, sizeof b1),
              q->arg_full_len[i]);
    logf_(h, " nkeys=%u slot=%d ms=%d key0=%s/%u", q->nkeys, q->slot, q->multi_slot,
          esc(q->key0, q->key0_len, b2, sizeof b2), q->key0_full_len);
    if (c->outcome == RESP_OK) {
        logf_(h, " | type=%c err=%s text=%s int=%lld el=%lld bytes=%llu t=%lld/%lld",
              r->type ? (char)r->type : '0', resp_err_name(r->err),
              esc(r->errtext, strlen(r->errtext), b1, sizeof b1), (long long)r->integer,
              (long long)r->elements, (unsigned long long)r->bytes, (long long)r->start_us,
              (long long)r->ts_us);
        if (r->redir.slot >= 0)
            logf_(h, " redir=%d@%s:%u", r->redir.slot, r->redir.host, r->redir.port);
        if (r->raw != NULL)
            logf_(h, " raw=%zu", r->raw_len);
        if (h->verbose_raw && r->raw != NULL)
            logf_(h, " rawtext=%s", esc(r->raw, r->raw_len < 200 ? r->raw_len : 200, b1, sizeof b1));
    }
    logf_(h, "\n");
}

static void on_close(void *ctx, const cap_conn *conn, const resp_conn_stats *st)
{
    h_ctx *h = ctx;
    (void)conn;
    h->closes++;
    h->closed = *st;
    logf_(h,
          "close req=%llu rep=%llu push=%llu paired=%llu ureq=%llu urep=%llu resync=%llu "
          "skip=%llu perr=%llu oos=%u mon=%u sub=%u repl=%u\n",
          (unsigned long long)st->requests, (unsigned long long)st->replies,
          (unsigned long long)st->pushes, (unsigned long long)st->paired,
          (unsigned long long)st->unpaired_requests, (unsigned long long)st->unpaired_replies,
          (unsigned long long)st->resyncs, (unsigned long long)st->skipped_bytes,
          (unsigned long long)st->protocol_errors, st->out_of_sync, st->monitor,
          st->subscribed, st->replication);
}

void h_init(h_ctx *h, int saw_syn, const resp_config *cfg)
{
    memset(h, 0, sizeof(*h));
    resp_config c;
    if (cfg)
        c = *cfg;
    else
        resp_config_defaults(&c);
    resp_sink sink = {.ctx = h, .conn_open = on_open, .command = on_command,
                      .conn_close = on_close, .conn_word = on_conn_word};
    h->rp = resp_new(&c, &sink);
    h->cmds = calloc(H_MAX_CMDS, sizeof(*h->cmds));
    if (h->rp == NULL || h->cmds == NULL)
        abort();
    h->conn.id = 1;
    h->conn.client.addr.family = 4;
    h->conn.client.addr.bytes[0] = 127;
    h->conn.client.addr.bytes[3] = 1;
    h->conn.client.port = 50000;
    h->conn.server = h->conn.client;
    h->conn.server.port = 30201;
    h->conn.saw_syn = (uint8_t)saw_syn;
    h->ts = 1000;
}

void h_free(h_ctx *h)
{
    if (h->conn.user != NULL)
        h_close(h);
    resp_free(h->rp);
    free(h->log);
    free(h->cmds);
    memset(h, 0, sizeof(*h));
}

/* Deliver one event (before_peer: cap_event.before_peer of a GAP). */
static void deliver_ev(h_ctx *h, cap_ev_kind kind, cap_dir dir, const void *data, size_t len,
                       uint64_t gap, int has_ack, int32_t ack_ahead, int before_peer)
{
    cap_event ev;
    memset(&ev, 0, sizeof ev);
    ev.has_ack = (uint8_t)has_ack;
    ev.ack_ahead = ack_ahead;
    ev.before_peer = (uint8_t)before_peer;
    ev.kind = kind;
    ev.conn = &h->conn;
    ev.dir = dir;
    ev.ts_us = h->ts;
    ev.index = h->index;
    ev.data = data;
    ev.len = len;
    ev.gap_len = gap;
    ev.reason = CAP_CLOSE_FIN;
    resp_on_capture_event(h->rp, &ev);
}

static void deliver_ack(h_ctx *h, cap_ev_kind kind, cap_dir dir, const void *data, size_t len,
                        uint64_t gap, int has_ack, int32_t ack_ahead)
{
    deliver_ev(h, kind, dir, data, len, gap, has_ack, ack_ahead, 0);
}

static void deliver(h_ctx *h, cap_ev_kind kind, cap_dir dir, const void *data, size_t len,
                    uint64_t gap)
{
    deliver_ack(h, kind, dir, data, len, gap, 0, 0);
}

void h_data_ack(h_ctx *h, cap_dir dir, const void *data, size_t len, int32_t ack_ahead)
{
    deliver_ack(h, CAP_EV_DATA, dir, data, len, 0, 1, ack_ahead);
}

void h_open(h_ctx *h) { deliver(h, CAP_EV_OPEN, CAP_TO_SERVER, NULL, 0, 0); }
void h_data(h_ctx *h, cap_dir dir, const void *data, size_t len)
{
    deliver(h, CAP_EV_DATA, dir, data, len, 0);
}
void h_str(h_ctx *h, cap_dir dir, const char *s) { h_data(h, dir, s, strlen(s)); }
void h_gap(h_ctx *h, cap_dir dir, uint64_t len) { deliver(h, CAP_EV_GAP, dir, NULL, 0, len); }

/* A start gap the peer had received before its first captured byte
 * (cap_event.before_peer). */
void h_gap_before_peer(h_ctx *h, cap_dir dir, uint64_t len)
{
    deliver_ev(h, CAP_EV_GAP, dir, NULL, 0, len, 0, 0, 1);
}
void h_close(h_ctx *h) { deliver(h, CAP_EV_CLOSE, CAP_TO_SERVER, NULL, 0, 0); }

char *h_run(const h_step *steps, size_t n, long split, int saw_syn, const resp_config *cfg)
{
    h_ctx h;
    h_init(&h, saw_syn, cfg);
    h_open(&h);
    for (size_t i = 0; i < n; i++) {
        size_t len = steps[i].len ? steps[i].len : strlen(steps[i].data);
        const char *d = steps[i].data;
        h.ts = 1000 + (int64_t)i * 10;
        if (split == 0) {
            h_data(&h, steps[i].dir, d, len);
        } else if (split > 0) {
            for (size_t o = 0; o < len; o += (size_t)split) {
                size_t k = len - o < (size_t)split ? len - o : (size_t)split;
                /* copy so that reading past a chunk is caught by ASan */
                char *tmp = malloc(k ? k : 1);
                memcpy(tmp, d + o, k);
                h_data(&h, steps[i].dir, tmp, k);
                free(tmp);
            }
        } else {
            size_t at = (size_t)(-split);
            if (at > len)
                at = len;
            char *a = malloc(at ? at : 1), *b = malloc(len - at ? len - at : 1);
            memcpy(a, d, at);
            memcpy(b, d + at, len - at);
            if (at)
                h_data(&h, steps[i].dir, a, at);
            if (len - at)
                h_data(&h, steps[i].dir, b, len - at);
            free(a);
            free(b);
        }
    }
    h_close(&h);
    char *out = h.log ? strdup(h.log) : strdup("");
    h_free(&h);
    return out;
}

size_t h_count(const h_ctx *h, const char *name, resp_outcome outcome)
{
    size_t n = 0;
    size_t lim = h->ncmds < H_MAX_CMDS ? h->ncmds : H_MAX_CMDS;
    for (size_t i = 0; i < lim; i++)
        if (strcmp(h->cmds[i].req.name, name) == 0 && h->cmds[i].outcome == outcome)
            n++;
    return n;
}
