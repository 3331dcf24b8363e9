/*
 * test_threads.c - `--threads N` gives exactly the results of one thread.
 *
 *   capture level   a synthetic capture (idle timeouts firing on another
 *                   connection's packet, pipelining, unanswered requests at
 *                   close, MOVED/ASK, CLUSTER SLOTS replies, FIN with a late
 *                   packet, RST, a reused tuple, a mid-stream start, time
 *                   going back once, a UDP packet) fed to one tracker, and
 *                   split by flow hash between 2 and 3 trackers that each see
 *                   every record's time (cap_tracker_time): their events,
 *                   put in (record, rank) order as run/merge.c merges
 *                   them, are the single tracker's, event for event, and the
 *                   counters add up to the single tracker's
 *   end to end      slotscope analyze with 1, 2 (read-ahead and sharded), 3
 *                   and 5 threads on that capture, on every fixture capture
 *                   of tests/fixtures (cluster, gen, capture, cli, loss;
 *                   mid-stream and lossy ones among them), on a
 *                   capture of large values (~16 MB) and on two files
 *                   merged: every table of the databases (meta's
 *                   times and command line aside, every row sorted) and the
 *                   report are identical
 *   caps            1 thread and 2 (read-ahead) with the capture layer's
 *                   connection table evicting, the analyzer's connection
 *                   table evicting open connections, holes given up at
 *                   once: identical too
 *   ids             a connection's id is the number of the record (packet)
 *                   that opened it
 *   options         --threads values
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "capture/capture.h"
#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"
#include "tests/helpers/pktgen.h"

#define T0 1700000000000000LL  /* the synthetic capture's start (us) */
#define N_CONNS 24
#define MAX_RECORDS 4096

static char tmpdir[256];

/* ---------------------------------------------------------------- the synthetic capture */

/* One record of the synthetic capture. */
typedef struct rec {
    int64_t ts_us;
    uint32_t len;
    uint8_t *data;
} rec;

static rec recs[MAX_RECORDS];
static size_t n_recs;
static uint64_t want_ids[64];   /* records that open a connection */
static size_t n_want;

/* pg_conv callback: keep a copy of the frame. */
static void collect(void *ctx, int dlt, int64_t ts_us, const uint8_t *frame, size_t len)
{
    (void)ctx;
    (void)dlt;
    assert_true(n_recs < MAX_RECORDS);
    recs[n_recs].ts_us = ts_us;
    recs[n_recs].len = (uint32_t)len;
    recs[n_recs].data = malloc(len);
    assert_non_null(recs[n_recs].data);
    memcpy(recs[n_recs].data, frame, len);
    n_recs++;
}

/* The next record opens a connection. */
static void note_open(void)
{
    want_ids[n_want++] = n_recs + 1;
}

/* A GET of key:i:n as a RESP request. */
static size_t get_request(char *buf, size_t size, int i, int n)
{
    char key[32];
    int klen = snprintf(key, sizeof key, "key:%d:%d", i, n);
    return (size_t)snprintf(buf, size, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", klen, key);
}

/* One request/reply exchange on conversation c at time *now: two pipelined
 * GETs in one segment, their replies split over two segments. The replies
 * depend on who asks: MOVED, ASK, or values. */
static void exchange(pg_conv *c, int i, int n, int64_t *now)
{
    char req[256], rep[256];
    size_t len = get_request(req, sizeof req, i, n);
    size_t rlen;
    len += get_request(req + len, sizeof req - len, i, n + 1000);
    if (i % 5 == 1 && n == 1)
        rlen = (size_t)snprintf(rep, sizeof rep, "-MOVED 1234 10.0.1.1:7001\r\n$2\r\nv2\r\n");
    else if (i % 5 == 2 && n == 1)
        rlen = (size_t)snprintf(rep, sizeof rep, "-ASK 1234 10.0.1.1:7002\r\n$2\r\nv2\r\n");
    else
        rlen = (size_t)snprintf(rep, sizeof rep, "$5\r\nval-%d\r\n$1\r\nw\r\n", n % 10);
    c->ts_us = *now;
    pg_conv_send(c, 0, req, len);
    pg_conv_send(c, 1, rep, rlen / 2);
    pg_conv_send(c, 1, rep + rlen / 2, rlen - rlen / 2);
    *now += 137;
}

/* A server on a port of no list (40000) shown by a handshake, then another
 * connection to it picked up mid-stream from a lower port whose first bytes,
 * from the server, look like an inline GET: only the handshake orients it
 * right (the two connections may fall to different trackers). */
/* The tracker (of n) that cap_record_route gives a segment of t's tuple. */
static unsigned owner_of(const pg_packet *t, unsigned n)
{
    uint8_t frame[256];
    uint32_t hash = 0;
    size_t len = pg_build(t, frame, sizeof frame);
    cap_record r = {.linktype = DLT_EN10MB, .data = frame, .caplen = (uint32_t)len,
                    .wirelen = (uint32_t)len};
    assert_true(len > 0 && cap_record_route(&r, 1, NULL, &hash));
    return (unsigned)(((uint64_t)hash * n) >> 32);
}

static void known_server(int64_t *now)
{
    static const char tail[] = "get\r\n";
    pg_packet t, th;
    pg_conv h, m;
    pg_packet_init(&t);
    t.src = "10.0.0.9";
    t.dst = "10.0.3.3";
    t.sport = 50500;
    t.dport = 40000;
    pg_conv_init(&h, &t, 4242, 4343, *now);
    h.fn = collect;
    note_open();
    pg_conv_handshake(&h);
    *now = h.ts_us;
    exchange(&h, 30, 0, now);
    /* m on another tracker than h for 2 and for 3 trackers: what h's
     * handshake showed must cross to m's tracker */
    th = t;
    t.src = "10.0.0.8";
    for (t.sport = 20000; t.sport < 20200; t.sport++)
        if (owner_of(&t, 2) != owner_of(&th, 2) && owner_of(&t, 3) != owner_of(&th, 3))
            break;
    assert_true(t.sport < 20200);
    pg_conv_init(&m, &t, 5252, 5353, *now);
    m.fn = collect;
    note_open();
    pg_conv_send(&m, 1, tail, sizeof tail - 1);
    *now = m.ts_us;
    exchange(&m, 31, 0, now);
}

/* ASKING then GET, answered. */
static void asking(pg_conv *c, int64_t *now)
{
    static const char req[] = "*1\r\n$6\r\nASKING\r\n*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n";
    static const char rep[] = "+OK\r\n$3\r\nbar\r\n";
    c->ts_us = *now;
    pg_conv_send(c, 0, req, sizeof req - 1);
    pg_conv_send(c, 1, rep, sizeof rep - 1);
    *now += 137;
}

/* CLUSTER SLOTS and a real reply (the raw reply analysis keeps). */
static void cluster_slots(pg_conv *c, int64_t *now)
{
    static const char req[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
    static const char rep[] = "*2\r\n"
                              "*3\r\n:0\r\n:8191\r\n*3\r\n$8\r\n10.0.1.1\r\n:7000\r\n"
                              "$40\r\n0123456789012345678901234567890123456789\r\n"
                              "*3\r\n:8192\r\n:16383\r\n*3\r\n$8\r\n10.0.1.1\r\n:7001\r\n"
                              "$40\r\nabcdefabcdefabcdefabcdefabcdefabcdefabcd\r\n";
    c->ts_us = *now;
    pg_conv_send(c, 0, req, sizeof req - 1);
    pg_conv_send(c, 1, rep, sizeof rep - 1);
    *now += 137;
}

/* A request that is never answered. */
static void unanswered(pg_conv *c, int i, int64_t *now)
{
    char req[128];
    size_t len = get_request(req, sizeof req, i, 999);
    c->ts_us = *now;
    pg_conv_send(c, 0, req, len);
    *now += 137;
}

/* Build the synthetic capture (see the top of the file) into recs[]. */
static void build_capture(void)
{
    static char addr[N_CONNS][16];
    pg_conv c[N_CONNS];
    pg_packet t;
    uint8_t frame[PG_MAX_FRAME];
    int64_t now = T0;
    size_t n;
    for (int i = 0; i < N_CONNS; i++) {
        snprintf(addr[i], sizeof addr[i], "10.0.0.%d", 1 + i % 4);
        pg_packet_init(&t);
        t.src = addr[i];
        t.dst = "10.0.1.1";
        t.sport = (uint16_t)(50000 + i);
        t.dport = (uint16_t)(7000 + i % 3);
        pg_conv_init(&c[i], &t, 1000u * (unsigned)i + 1, 900000u + 7u * (unsigned)i, now);
        c[i].fn = collect;
    }
    /* Handshakes, interleaved; connection 5 is picked up mid-stream. */
    for (int k = 0; k < N_CONNS; k++) {
        int i = (k * 7) % N_CONNS;
        if (i == 5)
            continue;
        c[i].ts_us = now;
        note_open();
        pg_conv_handshake(&c[i]);
        now += 61;
    }
    note_open();
    exchange(&c[5], 5, 0, &now);
    known_server(&now);
    cluster_slots(&c[0], &now);
    /* Three rounds for everyone; in the second, every other connection
     * refreshes its slot map too. */
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < N_CONNS; k++) {
            int i = (k * 5 + r) % N_CONNS;
            exchange(&c[i], i, r, &now);
            if (r == 1 && i % 2 == 0)
                cluster_slots(&c[i], &now);
        }
    }
    asking(&c[2], &now);
    /* Every third connection goes quiet now, every sixth with a request
     * left unanswered; the others go on every 100 s, and at 350 s the quiet
     * ones are past the 300 s idle timeout. */
    for (int i = 0; i < N_CONNS; i += 6)
        unanswered(&c[i], i, &now);
    for (int s = 1; s <= 5; s++) {
        now = T0 + (s == 4 ? 350 : s == 5 ? 400 : 100 * s) * 1000000LL;
        for (int k = 0; k < N_CONNS; k++) {
            int i = (k * 11 + s) % N_CONNS;
            if (i % 3 != 0)
                exchange(&c[i], i, 10 + s, &now);
        }
        if (s == 2) {
            /* one record (an ACK) 1 ms older than the one before it */
            c[7].ts_us = now - 1000;
            pg_conv_send_at(&c[7], 0, c[7].next[0], PG_ACK, NULL, 0);
        }
    }
    /* FIN, then a late retransmitted FIN; RST; the tuple of 4 taken over by a
     * new handshake; a UDP datagram. */
    c[1].ts_us = now;
    pg_conv_close(&c[1]);
    c[1].ts_us += 5000000;
    pg_conv_send_at(&c[1], 1, c[1].next[1] - 1, PG_FIN | PG_ACK, NULL, 0);
    now = c[1].ts_us + 1000;
    c[2].ts_us = now;
    pg_conv_send_at(&c[2], 1, c[2].next[1], PG_RST | PG_ACK, NULL, 0);
    now += 1000;
    t = c[4].pkt;
    pg_conv_init(&c[4], &t, 777777u, 888888u, now);
    c[4].fn = collect;
    note_open();
    pg_conv_handshake(&c[4]);
    now = c[4].ts_us;
    exchange(&c[4], 4, 77, &now);
    pg_packet_init(&t);
    t.ip_proto = 17;
    t.payload = "dns?";
    t.len = 4;
    n = pg_build(&t, frame, sizeof frame);
    assert_true(n > 0);
    collect(NULL, DLT_EN10MB, now, frame, n);
    now += 1000;
    exchange(&c[8], 8, 88, &now);
}

/* Write recs[] as a pcap file. */
static void write_capture(const char *path)
{
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    for (size_t i = 0; i < n_recs; i++)
        assert_int_equal(pg_file_write(f, recs[i].ts_us, recs[i].data, recs[i].len), 0);
    assert_int_equal(pg_file_close(f), 0);
}

/* ---------------------------------------------------------------- capture level */

/* One tracker event as text, with where it belongs in the order. */
typedef struct evline {
    uint64_t record;             /* record being fed (UINT64_MAX: the end) */
    uint64_t rank;               /* run/merge.c's rank */
    unsigned tracker;
    size_t seq;                  /* order of arrival */
    char text[160];
} evline;

typedef struct evlog {
    evline *lines;
    size_t n, cap;
} evlog;

/* What a tracker's callback knows. */
typedef struct feeder {
    evlog *log;
    unsigned id;
    uint64_t record;
    int own;
} feeder;

static const char *const kind_names[] = {"open", "data", "gap", "close"};

/* cap_event_fn: log the event with its key. */
static void log_event(void *ctx, const cap_event *ev)
{
    feeder *fd = ctx;
    evlog *log = fd->log;
    const cap_conn *c = ev->conn;
    evline *l;
    if (log->n == log->cap) {
        log->cap = log->cap ? 2 * log->cap : 1024;
        log->lines = realloc(log->lines, log->cap * sizeof *log->lines);
        assert_non_null(log->lines);
    }
    l = &log->lines[log->n];
    l->record = fd->record;
    l->rank = fd->own ? UINT64_MAX : c->last_record;
    l->tracker = fd->id;
    l->seq = log->n++;
    snprintf(l->text, sizeof l->text,
             "%s conn=%llu dir=%d ts=%lld len=%zu gap=%llu reason=%d pk=%llu/%llu by=%llu/%llu",
             kind_names[ev->kind], (unsigned long long)c->id, (int)ev->dir, (long long)ev->ts_us,
             ev->len, (unsigned long long)ev->gap_len,
             ev->kind == CAP_EV_CLOSE ? (int)ev->reason : -1,
             (unsigned long long)c->packets[0], (unsigned long long)c->packets[1],
             (unsigned long long)c->bytes[0], (unsigned long long)c->bytes[1]);
}

/* Order of the merge: record, rank, then arrival. */
static int cmp_line(const void *a, const void *b)
{
    const evline *x = a, *y = b;
    if (x->record != y->record)
        return x->record < y->record ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* recs[i] as a cap_record. */
static cap_record record_of(size_t i)
{
    cap_record r = {.linktype = DLT_EN10MB, .ts_us = recs[i].ts_us, .data = recs[i].data,
                    .caplen = recs[i].len, .wirelen = recs[i].len};
    return r;
}

/* The synthetic capture through n trackers sharing it; the events logged in
 * log (merged order), the counters summed into sum. */
static void run_trackers(unsigned n, evlog *log, cap_stats *sum)
{
    cap_tracker *t[3];
    feeder fd[3];
    cap_config cfg;
    int64_t end = recs[n_recs - 1].ts_us;
    /* several trackers: one table of known servers, noted record by record
     * before any tracker sees the record, as cli/parallel.c's reader does */
    cap_servers *known = n > 1 ? cap_servers_new() : NULL;
    cap_config_defaults(&cfg);
    cfg.servers = known;
    memset(sum, 0, sizeof *sum);
    for (unsigned k = 0; k < n; k++) {
        fd[k] = (feeder){.log = log, .id = k};
        t[k] = cap_tracker_new(&cfg, log_event, &fd[k]);
        assert_non_null(t[k]);
    }
    for (size_t i = 0; i < n_recs; i++) {
        cap_record r = record_of(i);
        uint32_t hash = 0;
        unsigned owner = cap_record_route(&r, i + 1, known, &hash)
                             ? (unsigned)(((uint64_t)hash * n) >> 32) : 0;
        for (unsigned k = 0; k < n; k++) {
            fd[k].record = i + 1;
            fd[k].own = 0;
            if (n == 1) { /* one tracker: the plain call, numbering records itself */
                fd[k].own = 1;
                cap_tracker_packet(t[k], r.linktype, r.ts_us, r.data, r.caplen, r.wirelen);
                continue;
            }
            cap_tracker_time(t[k], i + 1, r.ts_us);
            if (k == owner) {
                fd[k].own = 1;
                cap_tracker_packet_at(t[k], i + 1, r.linktype, r.ts_us, r.data, r.caplen,
                                      r.wirelen);
            }
        }
    }
    for (unsigned k = 0; k < n; k++) {
        const cap_stats *s;
        fd[k].record = UINT64_MAX;
        fd[k].own = 0;
        cap_tracker_finish(t[k], end);
        s = cap_tracker_stats(t[k]);
        sum->packets += s->packets;
        sum->tcp_packets += s->tcp_packets;
        sum->non_tcp += s->non_tcp;
        sum->connections += s->connections;
        sum->mid_stream += s->mid_stream;
        sum->idle_connections += s->idle_connections;
        sum->time_backwards += s->time_backwards;
        sum->late_packets += s->late_packets;
        sum->stream_bytes[0] += s->stream_bytes[0];
        sum->stream_bytes[1] += s->stream_bytes[1];
        sum->retransmitted += s->retransmitted;
        cap_tracker_free(t[k]);
    }
    cap_servers_free(known);
    /* The merge's order; one tracker's log stays in the order it came. */
    if (n > 1)
        qsort(log->lines, log->n, sizeof *log->lines, cmp_line);
}

/* Split between 2 and 3 trackers: the single tracker's events in the single
 * tracker's order, the same counters; and the capture does what it should
 * (idle closes, a late packet, time going back, ...). */
static void test_trackers_share_input(void **state)
{
    evlog one = {0};
    cap_stats s1, sn;
    (void)state;
    run_trackers(1, &one, &s1);
    /* the scenario happened */
    assert_int_equal(s1.packets, n_recs);
    assert_int_equal(s1.connections, n_want);
    assert_int_equal(s1.idle_connections, N_CONNS / 3 + 2); /* + known_server's two */
    assert_int_equal(s1.time_backwards, 1);
    assert_int_equal(s1.late_packets, 2); /* the last ACK of a close, a FIN again */
    assert_int_equal(s1.mid_stream, 2);
    assert_int_equal(s1.non_tcp, 1);
    for (unsigned n = 2; n <= 3; n++) {
        evlog split = {0};
        unsigned used = 0;
        run_trackers(n, &split, &sn);
        assert_int_equal(split.n, one.n);
        for (size_t i = 0; i < one.n; i++) {
            if (strcmp(split.lines[i].text, one.lines[i].text) != 0)
                fail_msg("%u trackers, event %zu: \"%s\", one tracker: \"%s\"", n, i,
                         split.lines[i].text, one.lines[i].text);
            used |= 1u << split.lines[i].tracker;
            /* a (record, rank) key belongs to one tracker */
            if (i > 0 && split.lines[i].record == split.lines[i - 1].record &&
                split.lines[i].rank == split.lines[i - 1].rank)
                assert_int_equal(split.lines[i].tracker, split.lines[i - 1].tracker);
        }
        assert_int_equal(used, (1u << n) - 1); /* every tracker had a share */
        assert_memory_equal(&sn, &s1, sizeof sn);
        free(split.lines);
    }
    free(one.lines);
}

/* ---------------------------------------------------------------- end to end */

/* A path in the test's directory. */
static const char *tmp(const char *name)
{
    return th_path(tmpdir, name);
}

/* Run slotscope with the NULL-terminated arguments; its output in *r (the
 * caller frees it). The exit code (-1 if it did not exit). */
static int run_args(const char *const *args, th_run *r)
{
    const char *other = getenv("SLOTSCOPE_TEST_BINARY"); /* an older build, to see a test fail */
    assert_int_equal(th_exec(other && *other ? other : SS_BINARY, args, r, NULL, NULL, 0), 0);
    return th_exit_code(r);
}

/* A growing text. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(text *t, const char *fmt, ...)
{
    va_list ap;
    int n;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        if (t->s && t->len + (size_t)n < t->cap)
            break;
        t->cap = (t->cap + (size_t)n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        assert_non_null(t->s);
    }
    t->len += (size_t)n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One row as text: each value with its type. */
static char *row_text(sqlite3_stmt *st)
{
    text t = {0};
    for (int c = 0; c < sqlite3_column_count(st); c++) {
        switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER:
            text_add(&t, "|i%lld", (long long)sqlite3_column_int64(st, c));
            break;
        case SQLITE_FLOAT:
            text_add(&t, "|f%.17g", sqlite3_column_double(st, c));
            break;
        case SQLITE_NULL:
            text_add(&t, "|n");
            break;
        default: { /* text and blobs, byte for byte, in hex */
            const unsigned char *b = sqlite3_column_blob(st, c);
            int n = sqlite3_column_bytes(st, c);
            text_add(&t, "|%c", sqlite3_column_type(st, c) == SQLITE_TEXT ? 't' : 'b');
            for (int i = 0; i < n; i++)
                text_add(&t, "%02x", b[i]);
        }
        }
    }
    text_add(&t, "%s", "");
    return t.s;
}

/* Every row of every table, each table's rows sorted, except the rows of meta
 * that say when the run was and how it was started. */
static char *dump_db(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *tables;
    text out = {0};
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT name FROM sqlite_master WHERE type = 'table' "
                                        "ORDER BY name", -1, &tables, NULL), SQLITE_OK);
    while (sqlite3_step(tables) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(tables, 0);
        char sql[256];
        sqlite3_stmt *st;
        char **rows = NULL;
        size_t n = 0, cap = 0;
        if (!strcmp(name, "meta"))
            snprintf(sql, sizeof sql, "SELECT * FROM meta WHERE key NOT IN "
                                      "('start_us', 'end_us', 'command_line')");
        else
            snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", name);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                rows = realloc(rows, cap * sizeof *rows);
                assert_non_null(rows);
            }
            rows[n++] = row_text(st);
        }
        sqlite3_finalize(st);
        if (n > 1)
            qsort(rows, n, sizeof *rows, cmp_str);
        text_add(&out, "table %s: %zu rows\n", name, n);
        for (size_t i = 0; i < n; i++) {
            text_add(&out, "%s\n", rows[i]);
            free(rows[i]);
        }
        free(rows);
    }
    sqlite3_finalize(tables);
    sqlite3_close(db);
    return out.s;
}

/* The first line where two texts differ, for the failure message. */
static void fail_diff(const char *what, const char *a, const char *b)
{
    size_t line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    fail_msg("%s differ at line %zu:\n  1 thread: %.200s\n  threads:  %.200s", what, line, la, lb);
}

/* The runs compared: --threads, and whether SLOTSCOPE_THREADS_SHARD is set
 * (--threads 2 reads ahead on a thread of its own and runs every stage on
 * the main one; with the variable it shards the connections between 2
 * workers as larger N do). */
static const struct {
    const char *threads;
    int shard;
} runs[] = {{"1", 0}, {"2", 0}, {"2", 1}, {"3", 0}, {"5", 0}, {"4", 0}, {"7", 0}};
/* The first N_USUAL_RUNS of them, for the tests that need not run all. */
#define N_USUAL_RUNS 5

/* analyze the files with the first n_runs of runs[], each with the
 * arguments `extra` too (NULL-terminated, may be NULL): the same exit code,
 * messages, database and report. (With 5 workers, several have no
 * connection of their own in the small captures.) With N >= 2 the store
 * writes on its writer thread: the redirects and commands rows carry their
 * rowid, so a row that thread dropped or wrote out of order changes the
 * dump. */
static void check_same_results_with(const char *const *files, size_t n_files,
                                    const char *const *extra, size_t n_runs)
{
    char *base_db = NULL, *base_report = NULL, *base_err = NULL;
    int base_rc = 0;
    for (size_t k = 0; k < n_runs; k++) {
        const char *args[40];
        size_t n = 0;
        char name[32];
        const char *db;
        char *dump, *report, *err;
        th_run r;
        int rc;
        snprintf(name, sizeof name, "%s%s", runs[k].threads, runs[k].shard ? "s" : "");
        db = tmp(name);
        unlink(db);
        args[n++] = "analyze";
        for (size_t i = 0; i < n_files; i++)
            args[n++] = files[i];
        args[n++] = "--db";
        args[n++] = db;
        args[n++] = "--store-commands";
        args[n++] = "--threads";
        args[n++] = runs[k].threads;
        args[n++] = "-q";
        for (size_t i = 0; extra && extra[i]; i++)
            args[n++] = extra[i];
        args[n] = NULL;
        if (runs[k].shard)
            setenv("SLOTSCOPE_THREADS_SHARD", "1", 1);
        rc = run_args(args, &r);
        unsetenv("SLOTSCOPE_THREADS_SHARD");
        err = r.err;
        /* 0, or 1 when an input is damaged (the database is still written) */
        if (rc != 0 && rc != 1)
            fail_msg("analyze %s --threads %s%s exited %d", files[0], runs[k].threads,
                     runs[k].shard ? " (sharded)" : "", rc);
        dump = dump_db(db);
        report = r.out;
        if (!base_db) {
            base_db = dump;
            base_report = report;
            base_err = err;
            base_rc = rc;
            assert_non_null(strstr(base_db, "table connections"));
            continue;
        }
        assert_int_equal(rc, base_rc);
        if (strcmp(err, base_err) != 0)
            fail_diff("messages", base_err, err);
        if (strcmp(dump, base_db) != 0)
            fail_diff(files[0], base_db, dump);
        if (strcmp(report, base_report) != 0)
            fail_diff("reports", base_report, report);
        free(dump);
        free(report);
        free(err);
    }
    free(base_db);
    free(base_report);
    free(base_err);
}

/* check_same_results_with every run of runs[], nothing extra. */
static void check_same_results(const char *const *files, size_t n_files)
{
    check_same_results_with(files, n_files, NULL, N_USUAL_RUNS);
}

/* The synthetic capture: same results; every connection's id is the number
 * of the record that opened it; the scenario shows in the counters. */
static void test_synthetic(void **state)
{
    const char *path = tmp("synthetic.pcap");
    const char *files[] = {path};
    sqlite3 *db;
    sqlite3_stmt *st;
    size_t n = 0;
    (void)state;
    write_capture(path);
    check_same_results(files, 1);
    /* tmp("1") is the database of the one-thread run */
    assert_int_equal(sqlite3_open_v2(tmp("1"), &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id FROM connections ORDER BY id", -1, &st,
                                        NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        assert_true(n < n_want);
        assert_int_equal(sqlite3_column_int64(st, 0), want_ids[n]);
        n++;
    }
    sqlite3_finalize(st);
    assert_int_equal(n, n_want);
    assert_int_equal(th_sql_int(db, "SELECT value FROM counters WHERE name = 'idle_connections'",
                                NULL), N_CONNS / 3 + 2);
    sqlite3_close(db);
}

/* Every capture of a fixtures directory (files ending in .pcap or .pcapng). */
static void check_dir(const char *dir, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        const char *files[1] = {path};
        snprintf(path, sizeof path, "%s/%s/%s", SS_FIXTURES, dir, names[i]);
        assert_int_equal(access(path, R_OK), 0);
        check_same_results(files, 1);
    }
}

static void test_fixtures_cluster_gen(void **state)
{
    static const char *const cluster[] = {"reshard.pcap"};
    static const char *const gen[] = {"findings.pcap", "impaired.pcap", "lossy.pcap",
                                      "quiet.pcap", "raw10.pcap"};
    (void)state;
    check_dir("cluster", cluster, 1);
    check_dir("gen", gen, sizeof gen / sizeof gen[0]);
}

static void test_fixtures_capture_cli(void **state)
{
    static const char *const capture[] = {
        "almost-resp.pcap", "django-cloud.pcap", "pubsub.pcap", "reply-off-on-2conn.pcap",
        "resp_1_benchmark.pcap", "resp_3_malicious.pcap", "resp_4_infiniteloop.pcapng",
        "start-with-server.pcap"};
    /* and the real captures picked up mid-stream (replication links
     * without their PSYNC, orientation by the CLUSTER SLOTS reply) */
    static const char *const cli[] = {"pipelining-example.pcap", "set.pcap",
                                      "midstream-real.pcap", "orient-real.pcap"};
    static const char *const loss[] = {"bench-5pct.pcap"}; /* re-anchored by ACKs */
    (void)state;
    check_dir("capture", capture, sizeof capture / sizeof capture[0]);
    check_dir("cli", cli, sizeof cli / sizeof cli[0]);
    check_dir("loss", loss, 1);
}

/* Send len bytes from one side of c in segments of at most 9000 bytes. */
static void send_split(pg_conv *c, int from_server, const char *data, size_t len)
{
    while (len > 0) {
        size_t n = len < 9000 ? len : 9000;
        assert_int_equal(pg_conv_send(c, from_server, data, n), 0);
        data += n;
        len -= n;
    }
}

/* A capture of large values, ~16 MB: more than read-ahead keeps of a file
 * (run/chunks.c), so its chunks are read by both threads
 * and their slots reused, and most DATA events cross as references. Four
 * connections SET and GET 20,000-byte values in 9000-byte segments; every
 * seventh SET has its two halves swapped (reassembled bytes, which are
 * copied). Same results with every --threads. */
static void test_large_values(void **state)
{
    static char value[20000], msg[20100];
    const char *path = tmp("large.pcap");
    const char *files[] = {path};
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    pg_conv c[4];
    pg_packet t;
    int64_t now = T0;
    sqlite3 *db;
    (void)state;
    assert_non_null(f);
    for (size_t i = 0; i < sizeof value; i++)
        value[i] = (char)('a' + i % 26);
    for (int i = 0; i < 4; i++) {
        pg_packet_init(&t);
        t.src = "10.0.0.9";
        t.dst = "10.0.1.1";
        t.sport = (uint16_t)(41000 + i);
        t.dport = 7000;
        pg_conv_init(&c[i], &t, 5000u * (unsigned)i + 1, 700000u + (unsigned)i, now);
        c[i].file = f;
        assert_int_equal(pg_conv_handshake(&c[i]), 0);
    }
    for (int n = 0; n < 100; n++) {
        for (int i = 0; i < 4; i++) {
            int len = snprintf(msg, sizeof msg, "*3\r\n$3\r\nSET\r\n$%d\r\nbig:%04d\r\n$%zu\r\n",
                               8, n, sizeof value);
            memcpy(msg + len, value, sizeof value);
            len += (int)sizeof value;
            memcpy(msg + len, "\r\n", 2);
            len += 2;
            c[i].ts_us = now;
            if (n % 7 == 3) {
                uint32_t seq = c[i].next[0];
                int half = len / 2;
                assert_int_equal(pg_conv_send_at(&c[i], 0, seq + (uint32_t)half, PG_ACK,
                                                 msg + half, (size_t)(len - half)), 0);
                assert_int_equal(pg_conv_send_at(&c[i], 0, seq, PG_ACK, msg, (size_t)half), 0);
                c[i].next[0] += (uint32_t)len;
            } else {
                send_split(&c[i], 0, msg, (size_t)len);
            }
            assert_int_equal(pg_conv_send(&c[i], 1, "+OK\r\n", 5), 0);
            len = snprintf(msg, sizeof msg, "*2\r\n$3\r\nGET\r\n$%d\r\nbig:%04d\r\n", 8, n);
            assert_int_equal(pg_conv_send(&c[i], 0, msg, (size_t)len), 0);
            len = snprintf(msg, sizeof msg, "$%zu\r\n", sizeof value);
            memcpy(msg + len, value, sizeof value);
            len += (int)sizeof value;
            memcpy(msg + len, "\r\n", 2);
            len += 2;
            send_split(&c[i], 1, msg, (size_t)len);
            now += 500;
        }
    }
    for (int i = 0; i < 4; i++) {
        c[i].ts_us = now;
        assert_int_equal(pg_conv_close(&c[i]), 0);
    }
    assert_true(pg_file_offset(f) > 12L << 20);
    assert_int_equal(pg_file_close(f), 0);
    check_same_results(files, 1);
    /* the values were followed: every command answered (one-thread run) */
    assert_int_equal(sqlite3_open_v2(tmp("1"), &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(th_sql_int(db, "SELECT COUNT(*) FROM commands", NULL), 800);
    sqlite3_close(db);
}

/* Two files merged by time (and the synthetic one, a third). */
static void test_merged_files(void **state)
{
    const char *files[] = {SS_FIXTURES "/gen/findings.pcap", SS_FIXTURES "/cluster/reshard.pcap",
                           tmp("synthetic2.pcap")};
    (void)state;
    write_capture(files[2]);
    check_same_results(files, 3);
}

/* The caps reached, one thread and read-ahead (--threads 2; sharding
 * shares the caps out, see run/shard.c): the capture layer's connection
 * table evicting, the analyzer's evicting connections still open (it
 * writes their counters of that moment: read-ahead's copies of the
 * connections must be as fresh as the tracker's), and holes given up as
 * gaps at once. On the synthetic capture and two with loss and
 * reordering. */
static void test_caps_read_ahead(void **state)
{
    static const char *const caps[][3] = {{"--set", "capture_connections=8", NULL},
                                          {"--set", "max_conns=16", NULL},
                                          {"--set", "ooo_bytes_per_conn=0", NULL}};
    char synthetic[1024]; /* tmp's buffers are reused */
    const char *files[] = {synthetic, SS_FIXTURES "/gen/lossy.pcap",
                           SS_FIXTURES "/gen/impaired.pcap"};
    sqlite3 *db;
    (void)state;
    snprintf(synthetic, sizeof synthetic, "%s", tmp("synthetic3.pcap"));
    assert_true(runs[0].threads[0] == '1' && runs[1].threads[0] == '2' && !runs[1].shard);
    write_capture(files[0]);
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
            check_same_results_with(&files[f], 1, caps[c], 2);
            /* the cap was reached (tmp("1") is the one-thread database) */
            assert_int_equal(sqlite3_open_v2(tmp("1"), &db, SQLITE_OPEN_READONLY, NULL),
                             SQLITE_OK);
            if (c == 0)
                assert_true(th_sql_int(db, "SELECT value FROM counters WHERE name = "
                                           "'evicted_connections'", NULL) > 0);
            else if (c == 1)
                assert_true(th_sql_int(db, "SELECT value FROM counters WHERE name = "
                                           "'evicted_conns'", NULL) > 0);
            else if (f > 0)
                assert_true(th_sql_int(db, "SELECT value FROM counters WHERE name = 'gaps'",
                                       NULL) > 0);
            sqlite3_close(db);
        }
    }
}

/* The analyzer's connection cap reached, with every run of runs[]
 * (sharded too): it evicts connections still open and writes their
 * counters of that moment (packets, bytes, last time), so the copies of
 * the connections the sharded merger hands it must be as fresh as one
 * tracker's, record by record (issue 15, item 7: the counters of the OPEN
 * were written, packets_to_server 0). */
static void test_analysis_cap_every_n(void **state)
{
    static const char *const cap[] = {"--set", "max_conns=16", NULL};
    char synthetic[1024];
    const char *files[] = {synthetic, SS_FIXTURES "/gen/lossy.pcap",
                           SS_FIXTURES "/cluster/reshard.pcap"};
    sqlite3 *db;
    (void)state;
    snprintf(synthetic, sizeof synthetic, "%s", tmp("synthetic4.pcap"));
    write_capture(files[0]);
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        check_same_results_with(&files[f], 1, cap, N_USUAL_RUNS);
        assert_int_equal(sqlite3_open_v2(tmp("1"), &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_true(th_sql_int(db, "SELECT value FROM counters WHERE name = 'evicted_conns'",
                               NULL) > 0);
        sqlite3_close(db);
    }
}

/* Each cap on the whole capture and resp state reached (tiny caps: their
 * 1/64 share per partition of connections, capture.h), with --threads 1, 2
 * (read-ahead and sharded), 3, 5, 4 and 7: the same database, report and
 * messages, no warning, and the cap's counter shows it was reached. Before
 * the caps were partitioned, the sharded workers held 1/N each and evicted
 * and dropped at other moments (issue 15, item 7). */
static void test_capture_caps_every_n(void **state)
{
    static const struct {
        const char *set, *file, *counter;
    } caps[] = {
        {"capture_connections=8", SS_FIXTURES "/gen/lossy.pcap", "evicted_connections"},
        {"capture_connections=1", SS_FIXTURES "/cluster/reshard.pcap", "evicted_connections"},
        {"ooo_bytes_total=64", SS_FIXTURES "/gen/lossy.pcap", "ooo_dropped"},
        {"ooo_bytes_total=64", SS_FIXTURES "/gen/impaired.pcap", "ooo_dropped"},
        {"inflight_total=64", SS_FIXTURES "/gen/lossy.pcap", "dropped_requests"},
        {"inflight_total=64", SS_FIXTURES "/cluster/reshard.pcap", "dropped_requests"},
        {"kept_replies_total=64", SS_FIXTURES "/cluster/reshard.pcap", "limit_hits"},
    };
    char q[160];
    sqlite3 *db;
    (void)state;
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        const char *const extra[] = {"--set", caps[c].set, NULL};
        check_same_results_with(&caps[c].file, 1, extra, sizeof runs / sizeof runs[0]);
        /* tmp("1") is the one-thread database */
        assert_int_equal(sqlite3_open_v2(tmp("1"), &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        snprintf(q, sizeof q, "SELECT value FROM counters WHERE name = '%s'", caps[c].counter);
        if (th_sql_int(db, q, NULL) <= 0)
            fail_msg("%s on %s: %s not reached", caps[c].set, caps[c].file, caps[c].counter);
        sqlite3_close(db);
    }
}

/* --threads takes 0 (one per core) to 64. */
static void test_threads_option(void **state)
{
    static const char *const bad[] = {"-1", "65", "x", "", "2x"};
    th_run r;
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run_args(TH_ARGS("analyze", SS_FIXTURES "/cli/set.pcap", "--threads",
                                          bad[i]), &r), 2);
        assert_non_null(strstr(r.err, "bad --threads"));
        th_run_free(&r);
    }
    assert_int_equal(run_args(TH_ARGS("analyze", SS_FIXTURES "/cli/set.pcap", "--threads", "0",
                                      "-q"), &r), 0);
    th_run_free(&r);
    assert_int_equal(run_args(TH_ARGS("analyze", SS_FIXTURES "/cli/set.pcap", "--threads=64",
                                      "-q"), &r), 0);
    th_run_free(&r);
    assert_int_equal(run_args(TH_ARGS("analyze", "--help"), &r), 0);
    assert_non_null(strstr(r.out, "--threads N"));
    th_run_free(&r);
}

/* ---------------------------------------------------------------- main */

static int setup(void **state)
{
    (void)state;
    if (th_tmpdir_new("ss_threads", tmpdir, sizeof tmpdir) != 0)
        return -1;
    build_capture();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < n_recs; i++)
        free(recs[i].data);
    return th_tmpdir_remove(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trackers_share_input),
        cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_fixtures_cluster_gen),
        cmocka_unit_test(test_fixtures_capture_cli),
        cmocka_unit_test(test_merged_files),
        cmocka_unit_test(test_large_values),
        cmocka_unit_test(test_caps_read_ahead),
        cmocka_unit_test(test_analysis_cap_every_n),
        cmocka_unit_test(test_capture_caps_every_n),
        cmocka_unit_test(test_threads_option),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
