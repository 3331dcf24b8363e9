/*
 * bench_resp.c - how fast resp/ decodes and pairs.
 *
 *   bench_resp                 decoder+pairing alone on synthetic streams:
 *                              pipelined small GET/SET, and 1 MB values
 *   bench_resp FILE.pcap...    also: bare libpcap read (pcap_next_ex), the
 *                              capture layer alone (cap_tracker, no-op
 *                              callback), and capture + resp with pairing,
 *                              side by side on the same files
 *
 * Prints figures; never passes or fails on a clock. Each measurement is the
 * best of three runs (the files are read from the page cache after the first).
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/analysis.h"
#include "capture/capture.h"
#include "resp/resp.h"

/* Monotonic time in seconds. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A growable byte buffer. */
typedef struct buf {
    char *p;
    size_t len, cap;
    size_t *mark;         /* per command: request end, or reply start */
    size_t nmark, capmark;
} buf;

/* Remember the current length as the boundary of the next command. */
static void buf_mark(buf *b)
{
    if (b->nmark == b->capmark) {
        b->capmark = b->capmark ? b->capmark * 2 : 1024;
        b->mark = realloc(b->mark, b->capmark * sizeof(*b->mark));
        if (b->mark == NULL) {
            fprintf(stderr, "bench_resp: out of memory\n");
            exit(1);
        }
    }
    b->mark[b->nmark++] = b->len;
}

/* Append n bytes. */
static void buf_add(buf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 1 << 16;
        while (nc < b->len + n)
            nc *= 2;
        b->p = realloc(b->p, nc);
        if (b->p == NULL) {
            fprintf(stderr, "bench_resp: out of memory\n");
            exit(1);
        }
        b->cap = nc;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

/* Counts what the sink receives. */
typedef struct counts {
    uint64_t commands, ok, slots_sum;
    resp_conn_stats last; /* of the last connection closed */
} counts;

static void on_cmd(void *ctx, const resp_command *c)
{
    counts *k = ctx;
    k->commands++;
    k->ok += (c->outcome == RESP_OK);
    k->slots_sum += (uint64_t)(c->req.slot + 1); /* use the result */
}

static void on_close(void *ctx, const cap_conn *conn, const resp_conn_stats *st)
{
    counts *k = ctx;
    (void)conn;
    k->last = *st;
}

/* Feed a request stream and a reply stream through one connection in chunks
 * of `chunk` bytes, replies following the requests at the same relative
 * position (as a pipelining client sees them). Returns the seconds taken. */
static double run_streams(const buf *req, const buf *rep, size_t chunk, counts *k)
{
    resp_config cfg;
    resp_config_defaults(&cfg);
    resp_sink sink = {.ctx = k, .command = on_cmd, .conn_close = on_close};
    resp_pipeline *rp = resp_new(&cfg, &sink);
    cap_conn conn;
    memset(&conn, 0, sizeof conn);
    conn.id = 1;
    conn.saw_syn = 1;
    cap_event ev;
    memset(&ev, 0, sizeof ev);
    ev.conn = &conn;
    double t0 = now();
    ev.kind = CAP_EV_OPEN;
    resp_on_capture_event(rp, &ev);
    size_t qo = 0, ro = 0, next = 0; /* next: first command not fully sent */
    ev.kind = CAP_EV_DATA;
    while (qo < req->len || ro < rep->len) {
        if (qo < req->len) {
            ev.dir = CAP_TO_SERVER;
            ev.data = (const uint8_t *)req->p + qo;
            ev.len = req->len - qo < chunk ? req->len - qo : chunk;
            qo += ev.len;
            ev.ts_us++;
            resp_on_capture_event(rp, &ev);
        }
        /* the server may answer every command whose request is complete */
        while (next < req->nmark && req->mark[next] <= qo)
            next++;
        size_t due = next < rep->nmark ? rep->mark[next] : rep->len;
        while (ro < due) {
            ev.dir = CAP_TO_CLIENT;
            ev.data = (const uint8_t *)rep->p + ro;
            ev.len = due - ro < chunk ? due - ro : chunk;
            ro += ev.len;
            ev.ts_us++;
            resp_on_capture_event(rp, &ev);
        }
    }
    ev.kind = CAP_EV_CLOSE;
    resp_on_capture_event(rp, &ev);
    double t = now() - t0;
    resp_free(rp);
    return t;
}

/* Print one synthetic result line. */
static void report(const char *what, const buf *req, const buf *rep, size_t chunk)
{
    double best = 1e30;
    counts k;
    memset(&k, 0, sizeof k);
    for (int i = 0; i < 3; i++) {
        counts ki;
        memset(&ki, 0, sizeof ki);
        double t = run_streams(req, rep, chunk, &ki);
        if (t < best)
            best = t;
        k = ki;
    }
    double mb = (double)(req->len + rep->len) / 1e6;
    printf("%-34s %9.0f commands/s %8.0f MB/s  (%llu commands, %.1f MB, %.3f s, %llu paired, "
           "%llu/%llu unpaired req/rep)\n",
           what, (double)k.commands / best, mb / best, (unsigned long long)k.commands, mb, best,
           (unsigned long long)k.ok, (unsigned long long)k.last.unpaired_requests,
           (unsigned long long)k.last.unpaired_replies);
}

/* Synthetic pipelined GET/SET with 10-byte values on 100k distinct keys. */
static void bench_small(void)
{
    buf req = {0}, rep = {0};
    char line[256];
    const char *env = getenv("BENCH_RESP_N"); /* fewer commands, e.g. under valgrind */
    const size_t n = env ? (size_t)strtoul(env, NULL, 10) : 2000000;
    for (size_t i = 0; i < n; i++) {
        char key[32];
        int kl = snprintf(key, sizeof key, "key:%06zu", i % 100000);
        int l;
        if (i & 1) {
            l = snprintf(line, sizeof line, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", kl, key);
            buf_add(&req, line, (size_t)l);
            buf_mark(&req);
            buf_mark(&rep);
            buf_add(&rep, "$10\r\nxxxxxxxxxx\r\n", 17);
        } else {
            l = snprintf(line, sizeof line, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$10\r\nxxxxxxxxxx\r\n",
                         kl, key);
            buf_add(&req, line, (size_t)l);
            buf_mark(&req);
            buf_mark(&rep);
            buf_add(&rep, "+OK\r\n", 5);
        }
    }
    report("small GET/SET, 16 KiB chunks", &req, &rep, 16384);
    report("small GET/SET, 1460 B chunks", &req, &rep, 1460);
    free(req.p);
    free(rep.p);
    free(req.mark);
    free(rep.mark);
}

/* SET and GET of 1 MB values. */
static void bench_large(void)
{
    buf req = {0}, rep = {0};
    const size_t vlen = 1 << 20;
    char *val = malloc(vlen);
    memset(val, 'v', vlen);
    char line[128];
    for (int i = 0; i < 400; i++) {
        int l;
        if (i & 1) {
            l = snprintf(line, sizeof line, "*2\r\n$3\r\nGET\r\n$8\r\nbig:%04d\r\n", i / 2);
            buf_add(&req, line, (size_t)l);
            buf_mark(&req);
            buf_mark(&rep);
            l = snprintf(line, sizeof line, "$%zu\r\n", vlen);
            buf_add(&rep, line, (size_t)l);
            buf_add(&rep, val, vlen);
            buf_add(&rep, "\r\n", 2);
        } else {
            l = snprintf(line, sizeof line, "*3\r\n$3\r\nSET\r\n$8\r\nbig:%04d\r\n$%zu\r\n", i / 2,
                         vlen);
            buf_add(&req, line, (size_t)l);
            buf_add(&req, val, vlen);
            buf_add(&req, "\r\n", 2);
            buf_mark(&req);
            buf_mark(&rep);
            buf_add(&rep, "+OK\r\n", 5);
        }
    }
    report("1 MB values, 64 KiB chunks", &req, &rep, 65536);
    free(val);
    free(req.p);
    free(rep.p);
    free(req.mark);
    free(rep.mark);
}

/* ---------------------------------------------------------------- pcap files */

/* Bare libpcap: read every record of every file. Returns seconds. */
static double bare_read(char **files, int n, uint64_t *packets, uint64_t *bytes)
{
    char err[PCAP_ERRBUF_SIZE];
    double t0 = now();
    *packets = *bytes = 0;
    for (int i = 0; i < n; i++) {
        pcap_t *p = pcap_open_offline(files[i], err);
        if (p == NULL) {
            fprintf(stderr, "bench_resp: %s\n", err);
            exit(1);
        }
        struct pcap_pkthdr *h;
        const u_char *d;
        uint64_t sum = 0;
        while (pcap_next_ex(p, &h, &d) == 1) {
            (*packets)++;
            *bytes += h->caplen;
            sum += d[0];
        }
        *bytes += sum & 0; /* touch the data, as any reader would */
        pcap_close(p);
    }
    return now() - t0;
}

/* Callback that ignores every capture event. */
static void ev_nothing(void *ctx, const cap_event *ev)
{
    (void)ctx;
    (void)ev;
}

/* ---------------------------------------------------------------- reference framer */

/* The floor to compare with: a minimal RESP2 framer per direction (lengths
 * read in place, payloads skipped, memchr only for simple-string and error
 * lines), counting messages and nothing else: no names, no keys, no pairing,
 * no events. Not robust; a yardstick of what framing alone costs. */
typedef struct mini_dir {
    uint64_t skip;      /* payload bytes (+CRLF) still to skip */
    int64_t pending;    /* items still to read in the current message */
    char line[32];      /* a header line split across chunks */
    size_t llen;
} mini_dir;

typedef struct mini_conn {
    mini_dir d[2];
} mini_conn;

static uint64_t mini_messages;

/* One header line, type byte l[0], value v (digits after it): what it
 * means for the message being framed. */
static void mini_line(mini_dir *m, char type, int64_t v)
{
    if (m->pending == 0)
        m->pending = 1;
    if (type == '*' && v > 0) {
        m->pending += v - 1;
        return;
    }
    if (type == '$' && v >= 0) {
        m->skip = (uint64_t)v + 2;
        return;
    }
    if (--m->pending == 0)
        mini_messages++;
}

/* A whole header line at p (its type byte, digits, CRLF) when it lies
 * within [p, end): returns the byte after it, with *v set; NULL when it is
 * split, or not a length line (a simple string, an error). */
static const uint8_t *mini_num_line(const uint8_t *p, const uint8_t *end, int64_t *v)
{
    const uint8_t *q = p + 1;
    int neg = q < end && *q == '-';
    q += neg;
    int64_t n = 0;
    while (q < end && (unsigned)(*q - '0') <= 9)
        n = n * 10 + (*q++ - '0');
    if (end - q < 2 || q[0] != '\r' || q[1] != '\n')
        return NULL;
    *v = neg ? -n : n;
    return q + 2;
}

/* Frame bytes of one direction. */
static void mini_feed(mini_dir *m, const uint8_t *p, const uint8_t *end)
{
    while (p < end) {
        if (m->skip) {
            uint64_t n = (uint64_t)(end - p) < m->skip ? (uint64_t)(end - p) : m->skip;
            p += n;
            m->skip -= n;
            if (m->skip == 0 && --m->pending == 0)
                mini_messages++;
            continue;
        }
        int64_t v;
        const uint8_t *next;
        if (m->llen == 0 && (*p == '*' || *p == '$' || *p == ':') &&
            (next = mini_num_line(p, end, &v)) != NULL) {
            mini_line(m, (char)*p, v);
            p = next;
            continue;
        }
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) {
            size_t n = (size_t)(end - p);
            if (m->llen + n < sizeof m->line - 1) {
                memcpy(m->line + m->llen, p, n);
                m->llen += n;
            }
            return;
        }
        const char *l = (const char *)p;
        if (m->llen) { /* finish a split line */
            size_t n = (size_t)(nl - p);
            if (m->llen + n >= sizeof m->line)
                n = sizeof m->line - 1 - m->llen;
            memcpy(m->line + m->llen, p, n);
            m->line[m->llen + n] = '\0';
            l = m->line;
            m->llen = 0;
        }
        p = nl + 1;
        mini_line(m, l[0], (l[0] == '*' || l[0] == '$' || l[0] == ':') ? strtoll(l + 1, NULL, 10) : 0);
    }
}

/* Capture callback for the reference framer. */
static void ev_mini(void *ctx, const cap_event *ev)
{
    (void)ctx;
    mini_conn *mc = ev->conn->user;
    switch (ev->kind) {
    case CAP_EV_OPEN:
        ev->conn->user = calloc(1, sizeof(mini_conn));
        break;
    case CAP_EV_DATA:
        if (mc != NULL)
            mini_feed(&mc->d[ev->dir], ev->data, ev->data + ev->len);
        break;
    case CAP_EV_GAP:
        if (mc != NULL)
            memset(&mc->d[ev->dir], 0, sizeof(mini_dir));
        break;
    case CAP_EV_CLOSE:
        free(mc);
        ev->conn->user = NULL;
        break;
    default:
        break;
    }
}

/* The capture layer, alone (with_resp == 0), feeding the reference framer
 * (-1), feeding resp/ with its default key rule (1) or with analysis's key
 * hook as slotscope configures it (2). Returns seconds; fills the resp
 * totals. */
static double capture_run(char **files, int n, int with_resp, resp_stats *out, counts *k)
{
    char err[512];
    double t0 = now();
    cap_source *src = cap_open_files((const char *const *)files, (size_t)n, err, sizeof err);
    if (src == NULL) {
        fprintf(stderr, "bench_resp: %s\n", err);
        exit(1);
    }
    cap_config ccfg;
    cap_config_defaults(&ccfg);
    ccfg.shape = resp_shape;
    resp_pipeline *rp = NULL;
    cap_tracker *t;
    if (with_resp > 0) {
        resp_config rcfg;
        resp_config_defaults(&rcfg);
        if (with_resp == 2)
            rcfg.key_fn = an_key_fn;
        resp_sink sink = {.ctx = k, .command = on_cmd};
        rp = resp_new(&rcfg, &sink);
        t = cap_tracker_new(&ccfg, resp_on_capture_event, rp);
    } else if (with_resp < 0) {
        t = cap_tracker_new(&ccfg, ev_mini, NULL);
    } else {
        t = cap_tracker_new(&ccfg, ev_nothing, NULL);
    }
    if (cap_source_run(src, t, err, sizeof err) < 0)
        fprintf(stderr, "bench_resp: %s\n", err);
    cap_tracker_finish(t, 0);
    double secs = now() - t0;
    if (rp != NULL && out != NULL)
        *out = *resp_get_stats(rp);
    cap_tracker_free(t);
    resp_free(rp);
    cap_source_free(src);
    return secs;
}

/* The side-by-side comparison on real files. */
static void bench_files(char **files, int n)
{
    uint64_t packets = 0, bytes = 0;
    double bare = 1e30, cap = 1e30, full = 1e30, mini = 1e30, keyed = 1e30;
    resp_stats st;
    counts k;
    memset(&k, 0, sizeof k);
    memset(&st, 0, sizeof st);
    bare_read(files, n, &packets, &bytes); /* warm the page cache */
    for (int i = 0; i < 3; i++) {
        double t = bare_read(files, n, &packets, &bytes);
        if (t < bare)
            bare = t;
        t = capture_run(files, n, 0, NULL, NULL);
        if (t < cap)
            cap = t;
        mini_messages = 0;
        t = capture_run(files, n, -1, NULL, NULL);
        if (t < mini)
            mini = t;
        counts ki;
        memset(&ki, 0, sizeof ki);
        t = capture_run(files, n, 1, &st, &ki);
        if (t < full)
            full = t;
        k = ki;
        t = capture_run(files, n, 2, NULL, &ki);
        if (t < keyed)
            keyed = t;
    }
    double mb = (double)bytes / 1e6;
    printf("\n%d file(s): %llu packets, %.1f MB captured\n", n, (unsigned long long)packets, mb);
    printf("%-34s %8.3f s  %7.0f MB/s  1.00x\n", "bare libpcap read (pcap_next_ex)", bare,
           mb / bare);
    printf("%-34s %8.3f s  %7.0f MB/s  %.2fx\n", "capture (decode, flows, reasm)", cap, mb / cap,
           cap / bare);
    printf("%-34s %8.3f s  %7.0f MB/s  %.2fx  (%llu messages)\n", "capture + minimal RESP2 framer",
           mini, mb / mini, mini / bare, (unsigned long long)mini_messages);
    printf("%-34s %8.3f s  %7.0f MB/s  %.2fx  (%.0f commands/s)\n", "capture + resp (pairing)",
           full, mb / full, full / bare, (double)k.commands / full);
    printf("%-34s %8.3f s  %7.0f MB/s  %.2fx  (%.0f commands/s)\n", "capture + resp + an_key_fn",
           keyed, mb / keyed, keyed / bare, (double)k.commands / keyed);
    printf("resp: %llu requests, %llu replies, %llu paired, %llu pushes, %llu unpaired requests, "
           "%llu unpaired replies, %llu protocol errors, %llu connections\n",
           (unsigned long long)st.total.requests, (unsigned long long)st.total.replies,
           (unsigned long long)st.total.paired, (unsigned long long)st.total.pushes,
           (unsigned long long)st.total.unpaired_requests,
           (unsigned long long)st.total.unpaired_replies,
           (unsigned long long)st.total.protocol_errors, (unsigned long long)st.connections);
}

int main(int argc, char **argv)
{
    const char *prof = getenv("BENCH_RESP_PROFILE"); /* "1" or "2": only that
                                                        capture_run, for perf */
    if (prof != NULL && argc > 1) {
        counts k;
        memset(&k, 0, sizeof k);
        double t = capture_run(argv + 1, argc - 1, atoi(prof) == 2 ? 2 : 1, NULL, &k);
        printf("capture + resp%s: %.3f s, %llu commands\n", atoi(prof) == 2 ? " + an_key_fn" : "",
               t, (unsigned long long)k.commands);
        return 0;
    }
    printf("resp decoder + pairing alone (best of 3):\n");
    bench_small();
    bench_large();
    if (argc > 1)
        bench_files(argv + 1, argc - 1);
    return 0;
}
