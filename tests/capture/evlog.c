/*
 * evlog.c - record capture/ events for tests (see evlog.h).
 */
#include "evlog.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Start an empty log. */
void evlog_init(evlog *log)
{
    memset(log, 0, sizeof *log);
}

/* Free what the log holds. */
void evlog_free(evlog *log)
{
    for (size_t i = 0; i < log->n_conns; i++) {
        free(log->conns[i].stream[0]);
        free(log->conns[i].stream[1]);
    }
    free(log->text);
    memset(log, 0, sizeof *log);
}

/* Append n bytes to a growing NUL-terminated buffer. */
static void append(char **buf, size_t *len, size_t *cap, const void *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t want = (*cap ? *cap : 256);
        while (want < *len + n + 1)
            want *= 2;
        *buf = realloc(*buf, want);
        assert_non_null(*buf);
        *cap = want;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

/* Append a formatted line to the text log. */
static void logf_line(evlog *log, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof line);
    append(&log->text, &log->text_len, &log->text_cap, line, (size_t)n);
}

/* The connection with this id, or NULL. */
evlog_conn *evlog_conn_by_id(evlog *log, uint64_t id)
{
    for (size_t i = 0; i < log->n_conns; i++)
        if (log->conns[i].id == id)
            return &log->conns[i];
    return NULL;
}

/* Stream text of connection id in direction dir. */
const char *evlog_stream(evlog *log, uint64_t id, cap_dir dir)
{
    evlog_conn *c = evlog_conn_by_id(log, id);
    return c != NULL && c->stream[dir] != NULL ? c->stream[dir] : "";
}

/* Record an OPEN. */
static void on_open(evlog *log, const cap_event *ev)
{
    char cl[CAP_ENDPOINT_STRLEN], sv[CAP_ENDPOINT_STRLEN];
    evlog_conn *c;
    assert_null(evlog_conn_by_id(log, ev->conn->id));
    assert_true(log->n_conns < EVLOG_MAX_CONNS);
    assert_null(ev->conn->user);
    c = &log->conns[log->n_conns++];
    memset(c, 0, sizeof *c);
    c->id = ev->conn->id;
    ev->conn->user = c;
    cap_endpoint_format(&ev->conn->client, cl, sizeof cl);
    cap_endpoint_format(&ev->conn->server, sv, sizeof sv);
    logf_line(log, "open %llu %s>%s %s\n", (unsigned long long)c->id, cl, sv,
              cap_side_source_name(ev->conn->side_source));
}

/* Record a DATA or GAP into the stream, checking the counters follow. */
static void on_bytes(evlog *log, evlog_conn *c, const cap_event *ev)
{
    char mark[64];
    const char *d = ev->dir == CAP_TO_SERVER ? "c" : "s";
    if (ev->kind == CAP_EV_DATA) {
        assert_true(ev->len > 0);
        append(&c->stream[ev->dir], &c->len[ev->dir], &c->cap[ev->dir], ev->data, ev->len);
        if (log->log_data_bytes)
            logf_line(log, "data %llu %s %.*s\n", (unsigned long long)c->id, d, (int)ev->len,
                      (const char *)ev->data);
        else
            logf_line(log, "data %llu %s %zu\n", (unsigned long long)c->id, d, ev->len);
    } else {
        assert_true(ev->gap_len > 0);
        snprintf(mark, sizeof mark, ev->before_peer ? "<gap %llu seen>" : "<gap %llu>",
                 (unsigned long long)ev->gap_len);
        append(&c->stream[ev->dir], &c->len[ev->dir], &c->cap[ev->dir], mark, strlen(mark));
        logf_line(log, "gap %llu %s %llu\n", (unsigned long long)c->id, d,
                  (unsigned long long)ev->gap_len);
    }
}

/* Record a CLOSE. */
static void on_close(evlog *log, evlog_conn *c, const cap_event *ev)
{
    c->closed = 1;
    c->reason = (int)ev->reason;
    c->close_ts = ev->ts_us;
    c->at_close = *ev->conn;
    logf_line(log, "close %llu %s\n", (unsigned long long)c->id, cap_close_reason_name(ev->reason));
}

/* The cap_event_fn: check and record one event. */
void evlog_fn(void *ctx, const cap_event *ev)
{
    evlog *log = ctx;
    evlog_conn *c;
    assert_non_null(ev->conn);
    if (ev->kind == CAP_EV_OPEN) {
        on_open(log, ev);
        return;
    }
    c = ev->conn->user;
    assert_non_null(c); /* nothing before OPEN */
    assert_false(c->closed);
    assert_true(c->id == ev->conn->id);
    if (ev->kind == CAP_EV_CLOSE)
        on_close(log, c, ev);
    else
        on_bytes(log, c, ev);
}
