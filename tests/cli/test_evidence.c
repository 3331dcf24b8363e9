/*
 * test_evidence.c - from a finding to the packets, checked against tshark.
 *
 *   frames    for every evidence event of every finding of samples/reshard.pcap,
 *             tshark shows at req_frame the first packet of that command (a
 *             RESP request naming the command and its key, to the event's
 *             node) and at reply_frame the last packet of its reply (from the
 *             node, ending a line; the error class when the reply was one);
 *             the redirects' frames likewise; the finding's frame_filter is a
 *             filter tshark accepts, and selects exactly those records
 *   extract   --finding ID writes exactly the records tshark shows for the
 *             finding's connections in its window (same times, directions,
 *             payloads), and a pcap tshark reads; --client, --slot,
 *             --since/--until; bad values (exit 2), unknown finding or
 *             client (exit 1)
 *   threads   the frame numbers are the same for every --threads
 *
 * Skipped when tshark is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>
#include <pcap/pcap.h>
#include <sqlite3.h>

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"

#define RESHARD SS_SOURCE_DIR "/samples/reshard.pcap"
#define TSHARK "/usr/bin/tshark"

static char dir[256];
static const char *db_path;

/* One packet as tshark shows it. */
typedef struct pkt {
    uint64_t frame;
    int64_t ts_us;
    char src[48], dst[48];       /* IP addresses */
    unsigned sport, dport;
    uint8_t *payload;
    size_t len;
} pkt;

typedef struct pkts {
    pkt *p;
    size_t n;
} pkts;

static void pkts_free(pkts *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->p[i].payload);
    free(v->p);
    v->p = NULL;
    v->n = 0;
}

/* "1796024441.486655000" -> microseconds. */
static int64_t parse_epoch(const char *s)
{
    char *end;
    int64_t sec = strtoll(s, &end, 10), us = 0;
    int digits = 0;
    if (*end == '.')
        for (end++; *end >= '0' && *end <= '9' && digits < 6; end++, digits++)
            us = us * 10 + (*end - '0');
    while (digits++ < 6)
        us *= 10;
    return sec * 1000000 + us;
}

/* Hex text -> bytes (malloc'd). */
static uint8_t *unhex(const char *s, size_t n, size_t *len)
{
    uint8_t *b = malloc(n / 2 + 1);
    assert_non_null(b);
    *len = n / 2;
    for (size_t i = 0; i < *len; i++) {
        unsigned v;
        assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
        b[i] = (uint8_t)v;
    }
    return b;
}

/* tshark -r file [-Y filter]: frame, time, addresses, ports, payload of each
 * packet. */
static void tshark_run(const char *file, const char *filter, pkts *out)
{
    th_run r;
    const char *args[16];
    int n = 0;
    args[n++] = "-r";
    args[n++] = file;
    if (filter) {
        args[n++] = "-Y";
        args[n++] = filter;
    }
    const char *fields[] = {"-T", "fields", "-E", "separator=|", "-e", "frame.number", "-e",
                            "frame.time_epoch", "-e", "ip.src", "-e", "ip.dst", "-e",
                            "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.payload"};
    const char *all[32];
    memcpy(all, args, sizeof(char *) * (size_t)n);
    memcpy(all + n, fields, sizeof fields);
    all[n + sizeof fields / sizeof fields[0]] = NULL;
    assert_int_equal(th_exec(TSHARK, all, &r, NULL, NULL, 0), 0);
    if (th_exit_code(&r) != 0)
        fail_msg("tshark -r %s -Y '%s' failed: %s", file, filter ? filter : "", r.err);
    memset(out, 0, sizeof *out);
    for (char *line = r.out; line && *line;) {
        char *nl = strchr(line, '\n');
        char *f[7] = {0};
        int k = 0;
        if (nl)
            *nl = 0;
        for (char *p = line; k < 7; k++) {
            f[k] = p;
            p = strchr(p, '|');
            if (!p) {
                k++;
                break;
            }
            *p++ = 0;
        }
        assert_int_equal(k, 7);
        out->p = realloc(out->p, sizeof(pkt) * (out->n + 1));
        assert_non_null(out->p);
        pkt *q = &out->p[out->n++];
        q->frame = strtoull(f[0], NULL, 10);
        q->ts_us = parse_epoch(f[1]);
        snprintf(q->src, sizeof q->src, "%s", f[2]);
        snprintf(q->dst, sizeof q->dst, "%s", f[3]);
        q->sport = (unsigned)strtoul(f[4], NULL, 10);
        q->dport = (unsigned)strtoul(f[5], NULL, 10);
        q->payload = unhex(f[6], strlen(f[6]), &q->len);
        line = nl ? nl + 1 : NULL;
    }
    th_run_free(&r);
}

/* The TCP packets of the sample, read by tshark once (tshark runs are the
 * slow part of this test). */
static pkts sample;

/* Does p match one alternative of the connection filters this test writes:
 * "ip.addr==H && tcp.port==P", "ip.addr==H && tcp" (in parentheses or not)? */
static int match_term(const pkt *p, const char *term)
{
    char host[48];
    unsigned port;
    if (sscanf(term, "(ip.addr==%47[^ )] && tcp.port==%u)", host, &port) == 2 ||
        sscanf(term, "ip.addr==%47[^ )] && tcp.port==%u", host, &port) == 2)
        return (!strcmp(p->src, host) && p->sport == port) ||
               (!strcmp(p->dst, host) && p->dport == port);
    if (sscanf(term, "ip.addr==%47[^ )] && tcp", host) == 1)
        return !strcmp(p->src, host) || !strcmp(p->dst, host);
    fail_msg("filter term '%s' is not one this test evaluates itself", term);
    return 0;
}

/* filter (terms joined by " || ", or "tcp", or "tcp.len > 0") on p. */
static int match_filter(const pkt *p, const char *filter)
{
    if (!strcmp(filter, "tcp"))
        return 1;
    if (!strcmp(filter, "tcp.len > 0"))
        return p->len > 0;
    for (const char *t = filter; t;) {
        const char *bar = strstr(t, " || ");
        char term[128];
        snprintf(term, sizeof term, "%.*s", bar ? (int)(bar - t) : (int)strlen(t), t);
        if (match_term(p, term))
            return 1;
        t = bar ? bar + 4 : NULL;
    }
    return 0;
}

/* tshark's view of file with filter: the sample's packets from the one
 * tshark run, selected here, for the connection filters; a tshark run for
 * other files and for frame filters (whose syntax is what is tested). */
static void tshark_read(const char *file, const char *filter, pkts *out)
{
    if (strcmp(file, RESHARD) != 0 || !filter || strstr(filter, "frame.")) {
        tshark_run(file, filter, out);
        return;
    }
    if (!sample.n)
        tshark_run(RESHARD, "tcp", &sample);
    memset(out, 0, sizeof *out);
    out->p = calloc(sample.n + 1, sizeof(pkt));
    assert_non_null(out->p);
    for (size_t i = 0; i < sample.n; i++)
        if (match_filter(&sample.p[i], filter)) {
            pkt *q = &out->p[out->n++];
            *q = sample.p[i];
            q->payload = malloc(q->len + 1);
            assert_non_null(q->payload);
            memcpy(q->payload, sample.p[i].payload, q->len);
        }
}

static const pkt *find_frame(const pkts *v, uint64_t frame)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->p[i].frame == frame)
            return &v->p[i];
    return NULL;
}

/* Does b (n bytes) hold s (case-insensitively)? */
static int holds(const uint8_t *b, size_t n, const char *s)
{
    size_t m = strlen(s);
    for (size_t i = 0; m && i + m <= n; i++)
        if (strncasecmp((const char *)b + i, s, m) == 0)
            return 1;
    return m == 0;
}

/* The port of "host:port". */
static unsigned port_of(const char *ep)
{
    const char *c = strrchr(ep, ':');
    return c ? (unsigned)strtoul(c + 1, NULL, 10) : 0;
}

/* A request's first packet: a multibulk that names cmd (and key), to port. */
static void check_request(const pkt *p, const char *cmd, const char *key, unsigned port,
                          uint64_t frame)
{
    char want[64];
    if (!p)
        fail_msg("frame %llu: tshark shows no TCP payload there", (unsigned long long)frame);
    /* the command's name ("CLUSTER SETSLOT 9380 ...": its first word) */
    snprintf(want, sizeof want, "\r\n%.*s\r\n", (int)strcspn(cmd, " "), cmd);
    if (p->len == 0 || p->payload[0] != '*' || !holds(p->payload, p->len, want) ||
        !holds(p->payload, p->len, key) || p->dport != port)
        fail_msg("frame %llu is not the start of %s %s to port %u (%zu bytes to %u)",
                 (unsigned long long)frame, cmd, key, port, p->len, p->dport);
}

/* A reply's last packet: from port, ending a line, the error class of reply. */
static void check_reply(const pkt *p, const char *reply, unsigned port, uint64_t frame)
{
    char cls[32] = "";
    if (!p)
        fail_msg("reply frame %llu: no TCP payload there", (unsigned long long)frame);
    if (reply[0] == '-')
        sscanf(reply, "%31s", cls);
    if (p->sport != port || p->len < 2 || p->payload[p->len - 2] != '\r' ||
        p->payload[p->len - 1] != '\n' || !holds(p->payload, p->len, cls))
        fail_msg("frame %llu is not the end of a reply '%s' from port %u", (unsigned long long)frame,
                 reply, port);
}

/* Every evidence event's frames point at its command and reply. */
static void test_evidence_frames(void **state)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    pkts all;
    size_t events = 0, replies = 0;
    (void)state;
    tshark_read(RESHARD, "tcp.len > 0", &all);
    assert_true(all.n > 1000);
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db,
                           "SELECT f.id, json_extract(e.value, '$.cmd'), "
                           "json_extract(e.value, '$.key'), json_extract(e.value, '$.reply'), "
                           "json_extract(e.value, '$.dst'), json_extract(e.value, '$.req_frame'), "
                           "json_extract(e.value, '$.reply_frame') "
                           "FROM findings f, json_each(f.evidence, '$.events') e ORDER BY f.id",
                           -1, &st, NULL),
        SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *cmd = (const char *)sqlite3_column_text(st, 1);
        const char *key = (const char *)sqlite3_column_text(st, 2);
        const char *reply = (const char *)sqlite3_column_text(st, 3);
        unsigned port = port_of((const char *)sqlite3_column_text(st, 4));
        uint64_t rq = (uint64_t)sqlite3_column_int64(st, 5);
        uint64_t rp = (uint64_t)sqlite3_column_int64(st, 6);
        assert_true(rq > 0);
        check_request(find_frame(&all, rq), cmd, key, port, rq);
        if (rp) {
            assert_true(rp > rq);
            check_reply(find_frame(&all, rp), reply, port, rp);
            replies++;
        }
        events++;
    }
    sqlite3_finalize(st);
    assert_true(events >= 50);
    assert_true(replies * 10 >= events * 9);

    /* the redirects: each reply frame is the redirect itself */
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT command, node, kind, req_frame, reply_frame "
                                            "FROM redirects", -1, &st, NULL),
                     SQLITE_OK);
    size_t redirects = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char reply[32];
        unsigned port = port_of((const char *)sqlite3_column_text(st, 1));
        uint64_t rq = (uint64_t)sqlite3_column_int64(st, 3);
        uint64_t rp = (uint64_t)sqlite3_column_int64(st, 4);
        snprintf(reply, sizeof reply, "-%s", (const char *)sqlite3_column_text(st, 2));
        check_request(find_frame(&all, rq), (const char *)sqlite3_column_text(st, 0), "", port,
                      rq);
        check_reply(find_frame(&all, rp), reply, port, rp);
        redirects++;
    }
    sqlite3_finalize(st);
    assert_true(redirects > 50);
    sqlite3_close(db);
    pkts_free(&all);
}

/* Each finding's frame_filter is a filter tshark takes, selecting exactly
 * the frames its evidence names: the first two one by one, all of them at
 * once (tshark runs are slow on a busy machine). */
static void test_frame_filter(void **state)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    (void)state;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, frame_filter, evidence FROM findings",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int n = 0;
    static char all[32768];
    size_t used = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *filter = (const char *)sqlite3_column_text(st, 1);
        int64_t id = sqlite3_column_int64(st, 0);
        pkts sel;
        assert_true(strncmp(filter, "frame.number in {", 17) == 0);
        assert_non_null(strstr((const char *)sqlite3_column_text(st, 2), filter));
        used += (size_t)snprintf(all + used, sizeof all - used, "%s(%s)", used ? " || " : "",
                                 filter);
        assert_true(used < sizeof all);
        if (n >= 2) {
            n++;
            continue;
        }
        tshark_read(RESHARD, filter, &sel);
        /* every selected frame is one an event names, and the reverse */
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT count(DISTINCT v) FROM (SELECT json_extract(e.value, '$.req_frame') v "
                 "FROM findings f, json_each(f.evidence, '$.events') e WHERE f.id = %lld UNION "
                 "SELECT json_extract(e.value, '$.reply_frame') FROM findings f, "
                 "json_each(f.evidence, '$.events') e WHERE f.id = %lld) WHERE v > 0",
                 (long long)id, (long long)id);
        assert_int_equal((int64_t)sel.n, th_sql_int(db, sql, NULL));
        pkts_free(&sel);
        n++;
    }
    sqlite3_finalize(st);
    pkts sel;
    tshark_read(RESHARD, all, &sel);
    assert_int_equal((int64_t)sel.n,
                     th_sql_int(db, "SELECT count(DISTINCT v) FROM (SELECT json_extract(e.value, "
                                    "'$.req_frame') v FROM findings f, json_each(f.evidence, "
                                    "'$.events') e UNION SELECT json_extract(e.value, "
                                    "'$.reply_frame') FROM findings f, json_each(f.evidence, "
                                    "'$.events') e) WHERE v > 0",
                                NULL));
    pkts_free(&sel);
    sqlite3_close(db);
    assert_true(n >= 10);
}

/* The packets tshark shows for finding id's connections in its window. */
static void expected_packets(sqlite3 *db, int64_t id, pkts *out)
{
    char sql[1024], filter[4096] = "";
    sqlite3_stmt *st;
    int64_t lo, hi, flo, fhi;
    snprintf(sql, sizeof sql,
             "SELECT DISTINCT c.src FROM findings f, json_each(f.evidence, '$.events') e, "
             "connections c WHERE f.id = %lld AND c.id = json_extract(e.value, '$.conn')",
             (long long)id);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *src = (const char *)sqlite3_column_text(st, 0);
        size_t hl = (size_t)(strrchr(src, ':') - src);
        snprintf(filter + strlen(filter), sizeof filter - strlen(filter),
                 "%s(ip.addr==%.*s && tcp.port==%u)", filter[0] ? " || " : "", (int)hl, src,
                 port_of(src));
    }
    sqlite3_finalize(st);
    assert_true(filter[0] != 0);
    snprintf(sql, sizeof sql, "SELECT first_us FROM findings WHERE id = %lld", (long long)id);
    lo = th_sql_int(db, sql, NULL);
    snprintf(sql, sizeof sql, "SELECT last_us FROM findings WHERE id = %lld", (long long)id);
    hi = th_sql_int(db, sql, NULL);
    snprintf(sql, sizeof sql,
             "SELECT min(v) FROM (SELECT json_extract(e.value, '$.req_frame') v FROM findings f, "
             "json_each(f.evidence, '$.events') e WHERE f.id = %lld) WHERE v > 0", (long long)id);
    flo = th_sql_int(db, sql, NULL);
    snprintf(sql, sizeof sql,
             "SELECT max(v) FROM (SELECT json_extract(e.value, '$.reply_frame') v FROM findings "
             "f, json_each(f.evidence, '$.events') e WHERE f.id = %lld)", (long long)id);
    fhi = th_sql_int(db, sql, NULL);
    pkts conn;
    tshark_read(RESHARD, filter, &conn);
    memset(out, 0, sizeof *out);
    out->p = calloc(conn.n + 1, sizeof(pkt));
    for (size_t i = 0; i < conn.n; i++) {
        pkt *p = &conn.p[i];
        if ((p->ts_us >= lo && p->ts_us <= hi) ||
            ((int64_t)p->frame >= flo && (int64_t)p->frame <= fhi)) {
            out->p[out->n++] = *p;
            p->payload = NULL;
        }
    }
    pkts_free(&conn);
}

/* Every record of a pcap file as libpcap reads it: time, the whole record
 * (in payload), its number. */
static void read_records(const char *path, pkts *out)
{
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline(path, err);
    struct pcap_pkthdr *h;
    const u_char *data;
    if (!pc)
        fail_msg("libpcap cannot open %s: %s", path, err);
    memset(out, 0, sizeof *out);
    while (pcap_next_ex(pc, &h, &data) == 1) {
        out->p = realloc(out->p, sizeof(pkt) * (out->n + 1));
        assert_non_null(out->p);
        pkt *q = &out->p[out->n++];
        memset(q, 0, sizeof *q);
        q->frame = out->n;
        q->ts_us = (int64_t)h->ts.tv_sec * 1000000 + h->ts.tv_usec;
        q->len = h->caplen;
        q->payload = malloc(h->caplen + 1);
        assert_non_null(q->payload);
        memcpy(q->payload, data, h->caplen);
    }
    pcap_close(pc);
}

/* The sample's records, read once. */
static pkts sample_records;

/* The records of got are exactly the records of the sample that want names
 * (by frame), in order, byte for byte. */
static void assert_same_packets(const pkts *want, const pkts *got, const char *what)
{
    if (!sample_records.n)
        read_records(RESHARD, &sample_records);
    if (want->n != got->n)
        fail_msg("%s: %zu packets, tshark's view has %zu", what, got->n, want->n);
    for (size_t i = 0; i < want->n; i++) {
        const pkt *b = &got->p[i];
        assert_true(want->p[i].frame >= 1 && want->p[i].frame <= sample_records.n);
        const pkt *a = &sample_records.p[want->p[i].frame - 1];
        if (a->ts_us != b->ts_us || a->ts_us != want->p[i].ts_us || a->len != b->len ||
            memcmp(a->payload, b->payload, a->len) != 0)
            fail_msg("%s: packet %zu differs from frame %llu of the input", what, i + 1,
                     (unsigned long long)want->p[i].frame);
    }
}

/* tshark opens the file and sees n packets. */
static void assert_tshark_opens(const char *path, size_t n)
{
    pkts v;
    tshark_run(path, NULL, &v);
    assert_int_equal(v.n, n);
    pkts_free(&v);
}

/* extract --finding ID writes exactly the finding's packets, for each one. */
static void test_extract_findings(void **state)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int n = 0;
    (void)state;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id FROM findings ORDER BY id", -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        char ids[24], what[64];
        const char *out = th_path(dir, "x.pcap");
        th_run r;
        pkts want, got;
        snprintf(ids, sizeof ids, "%lld", (long long)id);
        assert_int_equal(th_slotscope(TH_ARGS("extract", RESHARD, "--db", db_path, "--finding",
                                              ids, "-w", out),
                                      &r, NULL, NULL, 0),
                         0);
        assert_int_equal(th_exit_code(&r), 0);
        assert_non_null(strstr(r.err, "wrote "));
        th_run_free(&r);
        expected_packets(db, id, &want);
        read_records(out, &got);
        if (n == 0)
            assert_tshark_opens(out, got.n);
        snprintf(what, sizeof what, "extract --finding %s", ids);
        assert_true(got.n > 0);
        assert_same_packets(&want, &got, what);
        pkts_free(&want);
        pkts_free(&got);
        n++;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_true(n >= 10);
}

/* Packets of the input matching filter with times in [lo, hi]. */
static void filtered(const char *filter, int64_t lo, int64_t hi, pkts *out)
{
    pkts all;
    tshark_read(RESHARD, filter, &all);
    memset(out, 0, sizeof *out);
    out->p = calloc(all.n + 1, sizeof(pkt));
    for (size_t i = 0; i < all.n; i++)
        if (all.p[i].ts_us >= lo && all.p[i].ts_us <= hi) {
            out->p[out->n++] = all.p[i];
            all.p[i].payload = NULL;
        }
    pkts_free(&all);
}

/* Run extract with args after the input, --db and -w; its exit code. */
static int extract_with(const char *a, const char *b, const char *c, const char *d,
                        th_run *r)
{
    const char *args[] = {"extract", RESHARD, "--db", db_path, "-w", th_path(dir, "y.pcap"),
                          a, b, c, d, NULL};
    assert_int_equal(th_slotscope(args, r, NULL, NULL, 0), 0);
    return th_exit_code(r);
}

/* --client, --slot and the time window. */
static void test_extract_choices(void **state)
{
    th_run r;
    pkts want, got;
    int64_t start = th_db_int(db_path, "SELECT min(first_us) FROM inputs");
    (void)state;
    /* a client: its connections, the whole capture */
    assert_int_equal(extract_with("--client", "127.0.0.11", NULL, NULL, &r), 0);
    th_run_free(&r);
    filtered("ip.addr==127.0.0.11 && tcp", INT64_MIN, INT64_MAX, &want);
    read_records(th_path(dir, "y.pcap"), &got);
    assert_true(want.n > 0);
    assert_same_packets(&want, &got, "extract --client");
    assert_tshark_opens(th_path(dir, "y.pcap"), got.n);
    pkts_free(&want);
    pkts_free(&got);

    /* a time window alone, relative to the start: every TCP packet in it */
    assert_int_equal(extract_with("--since", "+15", "--until", "+15.5", &r), 0);
    th_run_free(&r);
    filtered("tcp", start + 15000000, start + 15500000, &want);
    read_records(th_path(dir, "y.pcap"), &got);
    assert_true(want.n > 0);
    assert_same_packets(&want, &got, "extract --since --until");
    pkts_free(&want);
    pkts_free(&got);

    /* a client within a window given in epoch seconds */
    char since[40];
    snprintf(since, sizeof since, "%lld.%06lld", (long long)((start + 14000000) / 1000000),
             (long long)((start + 14000000) % 1000000));
    assert_int_equal(extract_with("--client", "127.0.0.17", "--since", since, &r), 0);
    th_run_free(&r);
    filtered("ip.addr==127.0.0.17 && tcp", start + 14000000, INT64_MAX, &want);
    read_records(th_path(dir, "y.pcap"), &got);
    assert_same_packets(&want, &got, "extract --client --since");
    pkts_free(&want);
    pkts_free(&got);

    /* a slot: the connections of its redirects */
    assert_int_equal(extract_with("--slot", "3479", NULL, NULL, &r), 0);
    th_run_free(&r);
    read_records(th_path(dir, "y.pcap"), &got);
    char filter[8192] = "";
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT src FROM connections WHERE id IN "
                                            "(SELECT conn FROM redirects WHERE slot = 3479)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int conns = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *src = (const char *)sqlite3_column_text(st, 0);
        size_t hl = (size_t)(strrchr(src, ':') - src);
        snprintf(filter + strlen(filter), sizeof filter - strlen(filter),
                 "%s(ip.addr==%.*s && tcp.port==%u)", conns++ ? " || " : "", (int)hl, src,
                 port_of(src));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_true(conns > 1);
    filtered(filter, INT64_MIN, INT64_MAX, &want);
    assert_same_packets(&want, &got, "extract --slot");
    pkts_free(&want);
    pkts_free(&got);
}

/* Bad values and missing things. */
static void test_extract_errors(void **state)
{
    th_run r;
    (void)state;
    static const char *const bad[][2] = {
        {"--finding", "x"},    {"--finding", "-1"},   {"--slot", "16384"},
        {"--slot", "a"},       {"--since", "yesterday"}, {"--until", "+-3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[64];
        assert_int_equal(extract_with(bad[i][0], bad[i][1], NULL, NULL, &r), 2);
        snprintf(want, sizeof want, "bad %s '%s'", bad[i][0], bad[i][1]);
        if (!strstr(r.err, want))
            fail_msg("%s %s: stderr lacks '%s': %s", bad[i][0], bad[i][1], want, r.err);
        th_run_free(&r);
    }
    assert_int_equal(extract_with(NULL, NULL, NULL, NULL, &r), 2); /* nothing chosen */
    assert_non_null(strstr(r.err, "choose what to extract"));
    th_run_free(&r);
    assert_int_equal(extract_with("--finding", "99999", NULL, NULL, &r), 1);
    assert_non_null(strstr(r.err, "no finding with id 99999"));
    th_run_free(&r);
    assert_int_equal(extract_with("--client", "10.9.9.9", NULL, NULL, &r), 1);
    assert_non_null(strstr(r.err, "no client '10.9.9.9'"));
    th_run_free(&r);
    assert_int_equal(extract_with("--bogus", NULL, NULL, NULL, &r), 2);
    th_run_free(&r);
    assert_int_equal(th_slotscope(TH_ARGS("extract", RESHARD, "--finding", "1", "-w", "z.pcap"),
                                  &r, NULL, NULL, 0),
                     0);
    assert_int_equal(th_exit_code(&r), 2);
    assert_non_null(strstr(r.err, "no database given"));
    th_run_free(&r);
    assert_int_equal(th_slotscope(TH_ARGS("extract", RESHARD, "--db", db_path, "--finding", "1"),
                                  &r, NULL, NULL, 0),
                     0);
    assert_int_equal(th_exit_code(&r), 2);
    assert_non_null(strstr(r.err, "no output file"));
    th_run_free(&r);
    assert_int_equal(th_slotscope(TH_ARGS("extract", "--help"), &r, NULL, NULL, 0), 0);
    assert_int_equal(th_exit_code(&r), 0);
    assert_non_null(strstr(r.out, "--finding ID"));
    th_run_free(&r);
    assert_int_equal(extract_with("--finding", "1", NULL, NULL, &r), 0);
    th_run_free(&r);
}

/* The frame numbers are the same for every --threads. */
static void test_threads_same_frames(void **state)
{
    static const char *const threads[] = {"2", "3"};
    (void)state;
    const char *q = "SELECT group_concat(req_frame || '/' || reply_frame) FROM "
                    "(SELECT req_frame, reply_frame FROM redirects ORDER BY id)";
    sqlite3 *a;
    assert_int_equal(sqlite3_open_v2(db_path, &a, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(a, q, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    char *one = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(a);
    for (size_t i = 0; i < 2; i++) {
        const char *db = th_path(dir, "t.db");
        th_run r;
        assert_int_equal(th_slotscope(TH_ARGS("analyze", RESHARD, "-q", "--threads", threads[i],
                                              "--db", db, "--force"),
                                      &r, NULL, NULL, 0),
                         0);
        th_run_free(&r);
        assert_int_equal(sqlite3_open_v2(db, &a, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(a, q, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), one);
        sqlite3_finalize(st);
        sqlite3_close(a);
    }
    free(one);
}

static int setup(void **state)
{
    th_run r;
    (void)state;
    if (access(TSHARK, X_OK) != 0)
        return 0;
    if (th_tmpdir_new("ss_evidence", dir, sizeof dir) != 0)
        return -1;
    db_path = strdup(th_path(dir, "reshard.db"));
    if (th_slotscope(TH_ARGS("analyze", RESHARD, "-q", "--db", db_path), &r, NULL, NULL, 0) != 0)
        return -1;
    int code = th_exit_code(&r);
    th_run_free(&r);
    return code == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free((char *)db_path);
    pkts_free(&sample);
    pkts_free(&sample_records);
    return dir[0] ? th_tmpdir_remove(dir) : 0;
}

int main(void)
{
    if (access(TSHARK, X_OK) != 0) {
        printf("tshark not installed: skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_evidence_frames),  cmocka_unit_test(test_frame_filter),
        cmocka_unit_test(test_extract_findings), cmocka_unit_test(test_extract_choices),
        cmocka_unit_test(test_extract_errors),   cmocka_unit_test(test_threads_same_frames),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
