/*
 * evlog.h - record capture/ events for tests.
 *
 * Pass evlog_fn and an evlog to cap_tracker_new. Every event is written to a
 * text log ("open 1 10.0.0.1:40000>10.0.0.2:6379 syn", "data 1 c 5",
 * "gap 1 s 7", "close 1 fin"; c = client to server, s = server to client) and
 * each connection's two streams are rebuilt, a gap written as "<gap N>", so
 * tests compare exact bytes whatever the chunk splits. The recorder also
 * checks, as events come, that they are well formed: nothing before OPEN or
 * after CLOSE, and the conn counters agree with the events it saw.
 */
#ifndef SLOTSCOPE_TESTS_EVLOG_H
#define SLOTSCOPE_TESTS_EVLOG_H

#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"

/* Most connections one log follows. */
#define EVLOG_MAX_CONNS 64

/* One connection as the events told it. */
typedef struct evlog_conn {
    uint64_t id;
    cap_conn at_close;      /* copy of the conn at its CLOSE event */
    char *stream[2];        /* bytes per cap_dir, gaps as "<gap N>" (NUL-terminated) */
    size_t len[2];
    size_t cap[2];
    int closed;             /* CLOSE seen */
    int reason;             /* its cap_close_reason */
    int64_t close_ts;
} evlog_conn;

typedef struct evlog {
    char *text;             /* the event log, one line per event */
    size_t text_len, text_cap;
    evlog_conn conns[EVLOG_MAX_CONNS];
    size_t n_conns;
    int log_data_bytes;     /* nonzero: data lines show the bytes too */
} evlog;

/* Start an empty log. */
void evlog_init(evlog *log);
/* Free what the log holds. */
void evlog_free(evlog *log);
/* The cap_event_fn to give the tracker (ctx: the evlog). */
void evlog_fn(void *ctx, const cap_event *ev);
/* The connection with this id (the number of the record that opened it), or
 * NULL. */
evlog_conn *evlog_conn_by_id(evlog *log, uint64_t id);
/* Stream text of connection id in direction dir ("" when none). */
const char *evlog_stream(evlog *log, uint64_t id, cap_dir dir);

#endif /* SLOTSCOPE_TESTS_EVLOG_H */
