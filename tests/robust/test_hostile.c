/*
 * test_hostile.c - hostile captures: each is generated here with pktgen into a
 * scratch folder, analysed by the slotscope binary as a child process, and
 * checked for what it must not do (crash, grow without bound, drop things
 * silently) by its exit status, its peak memory (the child's ru_maxrss, printed
 * and held under the bound documented in docs/robustness.md) and the counters
 * it writes to its database.
 *
 * The captures: a SYN flood of 1,000,000 connections; connections that never
 * close (some going idle); a pipeline of requests that are never answered;
 * a declared 4 GB bulk string; replies nested 10,000 deep; records whose
 * caplen exceeds their length or with absurd lengths; timestamps going
 * backwards; duplicated and out-of-window segments; random bytes on a Redis
 * port; HTTP on a Redis port.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "robust.h"
#include "tests/helpers/pktgen.h"

#define T0 1700000000000000LL /* capture time of the first packet */

/*
 * The memory bound documented in docs/robustness.md: peak RSS stays under
 *     BASE + PER_CONN x live connections + PER_REQ x in-flight requests
 * where live connections are at most the tracker's cap (262144) and in-flight
 * requests at most resp/'s caps (100,000 per connection, 1,000,000 in all).
 * Under ASan the figures are printed but not held to the bound (shadow memory
 * and the free quarantine are not the program's).
 */
#define BOUND_BASE_KIB (32 * 1024)
#define BOUND_PER_CONN_KIB 6
#define BOUND_PER_REQ_KIB 2

/* The bound for a run with at most `conns` live connections, `reqs` requests
 * in flight and `held_kib` KiB of stream bytes held (kept CLUSTER replies,
 * out-of-order segments) at once. */
static long bound_kib(uint64_t conns, uint64_t reqs, uint64_t held_kib)
{
    return BOUND_BASE_KIB +
           (long)(conns * BOUND_PER_CONN_KIB + reqs * BOUND_PER_REQ_KIB + held_kib);
}

/* Hold a run's peak memory to its bound (not under ASan). */
static void assert_memory(const rb_run *run, uint64_t conns, uint64_t reqs, uint64_t held_kib)
{
    long bound = bound_kib(conns, reqs, held_kib);
    printf("#   peak RSS %ld KiB, bound %ld KiB (%llu live connections, %llu in flight, "
           "%llu KiB held)%s\n",
           run->maxrss_kib, bound, (unsigned long long)conns, (unsigned long long)reqs,
           (unsigned long long)held_kib, SS_SANITIZED ? ": not checked under ASan" : "");
    if (!SS_SANITIZED)
        assert_true(run->maxrss_kib > 0 && run->maxrss_kib < bound);
}

/* ---------------------------------------------------------------- helpers */

/* A RESP array command from words. Returns its length in buf. */
static size_t resp_cmd(char *buf, size_t size, int argc, const char *const *argv)
{
    size_t n = (size_t)snprintf(buf, size, "*%d\r\n", argc);
    for (int i = 0; i < argc && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    assert_true(n < size);
    return n;
}

/* Run `slotscope analyze FILE --db DB -q` (plus extra arguments), print the
 * peak memory with the scenario's name, and return the run. */
static void analyze(const char *name, const char *file, const char *db, const char *extra,
                    rb_run *run)
{
    const char *args[8] = {"analyze", file, "--db", db, "-q", NULL, NULL, NULL};
    if (extra) {
        args[5] = "--set";
        args[6] = extra;
    }
    assert_int_equal(rb_slotscope(args, run, NULL, NULL, 0), 0);
    printf("# %s: exit %s%d, peak RSS %ld KiB (%.1f MiB), capture %lld bytes\n", name,
           run->exited ? "" : "signal ", run->status, run->maxrss_kib,
           run->maxrss_kib / 1024.0, rb_file_size(file));
    if (!run->exited || run->status != 0)
        printf("# stderr: %s\n", run->err ? run->err : "");
}

/* Print a few counters of the run, for the test log and the docs. */
static void show_counters(const char *db, const char *const *names)
{
    printf("#  ");
    for (size_t i = 0; names[i]; i++)
        printf(" %s=%lld", names[i], (long long)rb_db_counter(db, names[i]));
    printf("\n");
}

/* Everything each scenario needs: a folder, a capture path, a db path. */
typedef struct scene {
    char *dir, *pcap, *db;
} scene;

/* cmocka setup: a fresh scene per test (teardown runs even when it fails, so
 * no scratch folder is left behind). */
static int scene_setup(void **state)
{
    scene *s = calloc(1, sizeof *s);
    if (!s || !(s->dir = rb_tmpdir_new("hostile")))
        return -1;
    s->pcap = rb_path(s->dir, "capture.pcap");
    s->db = rb_path(s->dir, "out.db");
    *state = s;
    return 0;
}

static int scene_teardown(void **state)
{
    scene *s = *state;
    if (s) {
        free(s->pcap);
        free(s->db);
        rb_tmpdir_free(s->dir);
        free(s);
    }
    return 0;
}

/* ---------------------------------------------------------------- SYN flood */

/* 1,000,000 SYNs from distinct hosts and ports, 1 us apart: the connection
 * table (262144 by default) must hold its cap and count every eviction; the
 * analysis tables (clients, connections) must do the same. */
static void test_syn_flood(void **state)
{
    scene *s = *state;
    const uint32_t n = 1000000, cap = 262144;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    pg_packet p;
    pg_packet_init(&p);
    p.flags = PG_SYN;
    p.dst = "10.2.0.1";
    p.dport = 6379;
    uint8_t frame[128];
    char src[32];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(src, sizeof src, "10.%u.%u.%u", 100 + (i >> 16), (i >> 8) & 255, i & 255);
        p.src = src;
        p.sport = (uint16_t)(1024 + i % 60000);
        p.seq = i * 7919u;
        size_t len = pg_build(&p, frame, sizeof frame);
        assert_true(len > 0);
        assert_int_equal(pg_file_write(f, T0 + i, frame, len), 0);
    }
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("syn_flood 1e6 connections, default caps", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, cap, 0, 0);
    const char *names[] = {"packets", "connections", "evicted_connections", "idle_connections",
                           "evicted_clients", NULL};
    show_counters(s->db, names);
    assert_int_equal(rb_db_counter(s->db, "packets"), n);
    assert_int_equal(rb_db_counter(s->db, "connections"), n);
    /* at most `cap` were live at the end: every other one was closed, and with
     * SYNs 1 us apart nothing goes idle, so by eviction */
    assert_true(rb_db_counter(s->db, "evicted_connections") >= (int64_t)(n - cap));
    /* 1,000,000 distinct client hosts against a table of 4096 */
    assert_true(rb_db_counter(s->db, "evicted_clients") > 0);
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- never closed */

/* 400,000 connections that send one request, get no reply and never close
 * (no FIN, no RST): the first 100,000 at T0, the other 300,000 from T0+400 s,
 * after the idle timeout (300 s). The first ones are closed as idle; of the
 * others, more than the table holds (262144), so the oldest are evicted; the
 * rest are closed at the end. Every connection is counted and its request
 * counted as unanswered. This is the worst case per live connection (each one
 * holds a pending request). */
static void test_never_closed(void **state)
{
    scene *s = *state;
    const uint32_t n_old = 100000, n_new = 300000, cap = 262144;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    char req[128], client[32];
    const char *get[] = {"GET", "user:1"};
    size_t rlen = resp_cmd(req, sizeof req, 2, get);
    for (uint32_t i = 0; i < n_old + n_new; i++) {
        pg_conv c;
        snprintf(client, sizeof client, "10.%u.%u.%u", 100 + (i >> 16), (i >> 8) & 255, i & 255);
        int64_t ts = T0 + (i < n_old ? 0 : 400 * 1000000LL) + (int64_t)i * 10;
        rb_conv_start(&c, f, client, (uint16_t)(20000 + i % 40000), ts);
        assert_int_equal(pg_conv_handshake(&c), 0);
        assert_int_equal(pg_conv_send(&c, 0, req, rlen), 0);
    }
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("never_closed 400000 connections, one pending request each", s->pcap, s->db, NULL,
            &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, cap, 0, 0);
    const char *names[] = {"connections", "idle_connections", "evicted_connections",
                           "requests", "unpaired_requests", "evicted_clients", NULL};
    show_counters(s->db, names);
    printf("#   rows(connections)=%lld\n",
           (long long)rb_db_int(s->db, "SELECT count(*) FROM connections"));
    assert_int_equal(rb_db_counter(s->db, "connections"), n_old + n_new);
    assert_int_equal(rb_db_counter(s->db, "idle_connections"), n_old);
    assert_int_equal(rb_db_counter(s->db, "evicted_connections"), n_new - cap);
    assert_int_equal(rb_db_counter(s->db, "requests"), n_old + n_new);
    assert_int_equal(rb_db_counter(s->db, "unpaired_requests"), n_old + n_new);
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- no replies */

/* One connection pipelines 300,000 requests and the server never answers: the
 * in-flight cap (the partition's share of the total, 15,625) holds (memory), hitting it is
 * counted, and every request is counted as unanswered. */
static void test_pipeline_no_replies(void **state)
{
    scene *s = *state;
    const uint32_t n = 300000, batch = 40;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    pg_conv c;
    rb_conv_start(&c, f, "10.1.0.1", 40000, T0);
    assert_int_equal(pg_conv_handshake(&c), 0);
    char one[64], seg[64 * 40];
    const char *get[] = {"GET", "{k}12345"};
    size_t olen = resp_cmd(one, sizeof one, 2, get);
    for (uint32_t i = 0; i < batch; i++)
        memcpy(seg + i * olen, one, olen);
    for (uint32_t i = 0; i < n / batch; i++)
        assert_int_equal(pg_conv_send(&c, 0, seg, olen * batch), 0);
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("pipeline_no_replies 300000 requests", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, 1, 100000, 0);
    const char *names[] = {"requests", "dropped_requests", "unpaired_requests", "paired",
                           "out_of_sync_connections", NULL};
    show_counters(s->db, names);
    assert_int_equal(rb_db_counter(s->db, "requests"), n);
    assert_int_equal(rb_db_counter(s->db, "paired"), 0);
    /* the cap was hit and counted; resp/ then gives the pairing up (out of
     * sync) and reports what it held as unanswered, so nothing vanished: every
     * request is an unanswered one */
    assert_true(rb_db_counter(s->db, "dropped_requests") >= 1);
    /* the binding cap: the partition's share of max_inflight_total (1/64) */
    assert_true(rb_db_counter(s->db, "dropped_requests") <= n / (1000000 / CAP_PARTITIONS));
    assert_true(rb_db_counter(s->db, "out_of_sync_connections") >= 1);
    assert_int_equal(rb_db_counter(s->db, "unpaired_requests"), n);
    rb_run_free(&run);
}

/* 12 connections pipeline 100,000 requests each, interleaved, with no reply
 * and no close until the end: the per-connection cap (100,000) is not hit but
 * the total cap (1,000,000 in flight) is; hitting it is counted, every request
 * is counted as unanswered. The peak memory of this run is the in-flight
 * worst case. */
static void test_inflight_total(void **state)
{
    scene *s = *state;
    const uint32_t conns = 12, per_conn = 100000, batch = 50, total_cap = 1000000;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    pg_conv c[12];
    char client[12][32]; /* pg_conv keeps the pointer: one string each */
    for (uint32_t k = 0; k < conns; k++) {
        snprintf(client[k], sizeof client[k], "10.1.0.%u", k + 1);
        rb_conv_start(&c[k], f, client[k], (uint16_t)(40000 + k), T0 + k);
        assert_int_equal(pg_conv_handshake(&c[k]), 0);
    }
    char one[64], seg[64 * 50];
    const char *get[] = {"GET", "{k}12345"};
    size_t olen = resp_cmd(one, sizeof one, 2, get);
    for (uint32_t i = 0; i < batch; i++)
        memcpy(seg + i * olen, one, olen);
    for (uint32_t b = 0; b < per_conn / batch; b++)
        for (uint32_t k = 0; k < conns; k++) {
            c[k].ts_us = T0 + 1000 + (int64_t)b * 100 + k;
            assert_int_equal(pg_conv_send(&c[k], 0, seg, olen * batch), 0);
        }
    for (uint32_t k = 0; k < conns; k++) {
        c[k].ts_us = T0 + 10000000 + k * 100;
        assert_int_equal(pg_conv_close(&c[k]), 0);
    }
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("inflight_total 12 x 100000 requests", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, conns, total_cap, 0);
    const char *names[] = {"requests", "dropped_requests", "unpaired_requests",
                           "out_of_sync_connections", NULL};
    show_counters(s->db, names);
    assert_int_equal(rb_db_counter(s->db, "requests"), conns * per_conn);
    /* the total cap was hit and counted, every request is accounted for */
    assert_true(rb_db_counter(s->db, "dropped_requests") >= 1);
    assert_true(rb_db_counter(s->db, "out_of_sync_connections") >= 1);
    assert_int_equal(rb_db_counter(s->db, "unpaired_requests"), conns * per_conn);
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- held bytes */

/* 16 connections send CLUSTER NODES and get a bulk reply that stops just short
 * of the 4 MiB kept-reply cap and never completes (the connections then
 * close). resp/ keeps the raw bytes of such replies for analysis/, so this is
 * the most a connection holds besides its table entry: the run's peak memory
 * shows it (16 x 4 MiB). There is no cap on the total of kept replies over all
 * connections (see docs/robustness.md). */
static void test_kept_reply_incomplete(void **state)
{
    scene *s = *state;
    enum { CONNS = 16 };
    const size_t kept_cap = 4u << 20, seg = 1400;
    const size_t body = kept_cap - 4096; /* stays under the cap with its header */
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    pg_conv c[CONNS];
    char client[CONNS][32], req[64]; /* pg_conv keeps the pointer: one each */
    const char *nodes[] = {"CLUSTER", "NODES"};
    size_t rlen = resp_cmd(req, sizeof req, 2, nodes);
    char head[32]; /* declares a few bytes more than are sent: never completes */
    snprintf(head, sizeof head, "$%zu\r\n", body + 10);
    static uint8_t junk[1400];
    memset(junk, 'n', sizeof junk);
    for (int k = 0; k < CONNS; k++) {
        snprintf(client[k], sizeof client[k], "10.1.0.%d", k + 1);
        rb_conv_start(&c[k], f, client[k], (uint16_t)(40000 + k), T0 + k);
        assert_int_equal(pg_conv_handshake(&c[k]), 0);
        assert_int_equal(pg_conv_send(&c[k], 0, req, rlen), 0);
        assert_int_equal(pg_conv_send(&c[k], 1, head, strlen(head)), 0);
    }
    for (size_t off = 0; off < body; off += seg)
        for (int k = 0; k < CONNS; k++)
            assert_int_equal(pg_conv_send(&c[k], 1, junk, body - off < seg ? body - off : seg), 0);
    for (int k = 0; k < CONNS; k++)
        assert_int_equal(pg_conv_close(&c[k]), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("kept_reply_incomplete 16 x 4 MiB CLUSTER NODES", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    const char *names[] = {"requests", "replies", "paired", "unpaired_requests", "limit_hits",
                           NULL};
    show_counters(s->db, names);
    assert_memory(&run, CONNS, CONNS, (uint64_t)CONNS * (kept_cap >> 10));
    assert_int_equal(rb_db_counter(s->db, "requests"), CONNS);
    assert_int_equal(rb_db_counter(s->db, "paired"), 0);
    assert_int_equal(rb_db_counter(s->db, "unpaired_requests"), CONNS);
    rb_run_free(&run);
}

/* 4 connections each lose one 1000-byte segment and then send 2 MiB beyond the
 * hole: the out-of-order bytes held per connection stop at the cap (1 MiB),
 * the hole is given up as a gap (counted) so that the rest can be delivered,
 * and memory stays at the cap. */
static void test_hole_never_filled(void **state)
{
    scene *s = *state;
    enum { CONNS = 4 };
    const size_t after = 2u << 20, seg = 1400, hole = 1000;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    pg_conv c[CONNS];
    char client[CONNS][32]; /* pg_conv keeps the pointer: one string each */
    static uint8_t junk[1400];
    memset(junk, 'h', sizeof junk);
    for (int k = 0; k < CONNS; k++) {
        snprintf(client[k], sizeof client[k], "10.1.0.%d", k + 1);
        rb_conv_start(&c[k], f, client[k], (uint16_t)(40000 + k), T0 + k);
        assert_int_equal(pg_conv_handshake(&c[k]), 0);
        assert_int_equal(pg_conv_send(&c[k], 0, "*1\r\n$4\r\nPING\r\n", 14), 0);
        c[k].next[0] += (uint32_t)hole; /* these bytes are never captured */
    }
    for (size_t off = 0; off < after; off += seg)
        for (int k = 0; k < CONNS; k++)
            assert_int_equal(pg_conv_send(&c[k], 0, junk, seg), 0);
    for (int k = 0; k < CONNS; k++)
        assert_int_equal(pg_conv_close(&c[k]), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("hole_never_filled 4 x 2 MiB after a hole", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, CONNS, 1, (uint64_t)CONNS * 1024);
    const char *names[] = {"out_of_order", "ooo_dropped", "gaps", "gap_bytes",
                           "stream_bytes_to_server", NULL};
    show_counters(s->db, names);
    assert_true(rb_db_counter(s->db, "ooo_dropped") >= CONNS);
    assert_true(rb_db_counter(s->db, "gaps") >= CONNS);
    assert_true(rb_db_counter(s->db, "gap_bytes") >= (int64_t)(CONNS * hole));
    /* everything after the hole was delivered in the end */
    assert_true(rb_db_counter(s->db, "stream_bytes_to_server") >= (int64_t)(CONNS * after));
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- 4 GB bulk */

/* A SET whose value declares 4 GiB and a reply that declares 4 GiB, each
 * followed by 8 MiB of data, then a normal command: nothing is allocated for
 * the declared size, and the decoder comes back on track (or counts a
 * protocol error) without growing. */
static void test_declared_4gb_bulk(void **state)
{
    scene *s = *state;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    static uint8_t junk[1400];
    memset(junk, 'x', sizeof junk);
    const char set_hdr[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4294967296\r\n";
    const char get[] = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    const char big_reply[] = "$4294967296\r\n";

    pg_conv c;
    rb_conv_start(&c, f, "10.1.0.1", 40000, T0);
    assert_int_equal(pg_conv_handshake(&c), 0);
    assert_int_equal(pg_conv_send(&c, 0, set_hdr, strlen(set_hdr)), 0);
    for (int i = 0; i < (8 << 20) / (int)sizeof junk; i++)
        assert_int_equal(pg_conv_send(&c, 0, junk, sizeof junk), 0);
    assert_int_equal(pg_conv_close(&c), 0);

    rb_conv_start(&c, f, "10.1.0.2", 40001, T0 + 100000000);
    assert_int_equal(pg_conv_handshake(&c), 0);
    assert_int_equal(pg_conv_send(&c, 0, get, strlen(get)), 0);
    assert_int_equal(pg_conv_send(&c, 1, big_reply, strlen(big_reply)), 0);
    for (int i = 0; i < (8 << 20) / (int)sizeof junk; i++)
        assert_int_equal(pg_conv_send(&c, 1, junk, sizeof junk), 0);
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("declared_4gb_bulk", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, 1, 1, 0);
    const char *names[] = {"requests", "replies", "protocol_errors", "unpaired_requests",
                           "stream_bytes_to_server", "stream_bytes_to_client", NULL};
    show_counters(s->db, names);
    /* every byte was delivered to the decoder (not buffered, not lost) */
    assert_true(rb_db_counter(s->db, "stream_bytes_to_server") > (8 << 20) - 2000);
    assert_true(rb_db_counter(s->db, "stream_bytes_to_client") > (8 << 20) - 2000);
    assert_int_equal(rb_db_int(s->db, "SELECT count(*) FROM connections"), 2);
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- endless lines */

/* A client that sends 8 MiB of letters with no line end (an inline command
 * that never ends) and a server whose reply is a simple string of 8 MiB with
 * no line end: the line limit (64 KiB) holds, is counted, and nothing is
 * buffered beyond it. */
static void test_endless_lines(void **state)
{
    scene *s = *state;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    static uint8_t letters[1400];
    memset(letters, 'A', sizeof letters);
    pg_conv c;
    rb_conv_start(&c, f, "10.1.0.1", 40000, T0);
    assert_int_equal(pg_conv_handshake(&c), 0);
    for (int i = 0; i < (8 << 20) / (int)sizeof letters; i++)
        assert_int_equal(pg_conv_send(&c, 0, letters, sizeof letters), 0);
    assert_int_equal(pg_conv_close(&c), 0);

    rb_conv_start(&c, f, "10.1.0.2", 40001, T0 + 100000000);
    assert_int_equal(pg_conv_handshake(&c), 0);
    assert_int_equal(pg_conv_send(&c, 0, "*1\r\n$4\r\nPING\r\n", 14), 0);
    assert_int_equal(pg_conv_send(&c, 1, "+", 1), 0);
    for (int i = 0; i < (8 << 20) / (int)sizeof letters; i++)
        assert_int_equal(pg_conv_send(&c, 1, letters, sizeof letters), 0);
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("endless_lines 8 MiB each way", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, 1, 1, 0);
    const char *names[] = {"requests", "replies", "limit_hits", "protocol_errors", "skipped_bytes",
                           NULL};
    show_counters(s->db, names);
    assert_true(rb_db_counter(s->db, "limit_hits") + rb_db_counter(s->db, "protocol_errors") >= 2);
    assert_int_equal(rb_db_counter(s->db, "replies"), 0);
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- nesting */

/* CLUSTER SLOTS answered by an array nested 10,000 deep (the reply analysis
 * keeps and parses), and a request nested as deep: the depth limit holds, is
 * counted, and the next command on the connection is still decoded. */
static void test_nesting_10000(void **state)
{
    scene *s = *state;
    const int depth = 10000;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    char *deep = malloc((size_t)depth * 4 + 8);
    assert_non_null(deep);
    for (int i = 0; i < depth; i++)
        memcpy(deep + i * 4, "*1\r\n", 4);
    memcpy(deep + depth * 4, ":1\r\n", 4);
    size_t deep_len = (size_t)depth * 4 + 4;
    char req[128];
    const char *slots[] = {"CLUSTER", "SLOTS"};
    size_t rlen = resp_cmd(req, sizeof req, 2, slots);

    pg_conv c;
    rb_conv_start(&c, f, "10.1.0.1", 40000, T0);
    assert_int_equal(pg_conv_handshake(&c), 0);
    assert_int_equal(pg_conv_send(&c, 0, req, rlen), 0);
    for (size_t off = 0; off < deep_len; off += 1400)
        assert_int_equal(pg_conv_send(&c, 1, deep + off,
                                      deep_len - off < 1400 ? deep_len - off : 1400), 0);
    assert_int_equal(pg_conv_close(&c), 0);

    rb_conv_start(&c, f, "10.1.0.2", 40001, T0 + 1000000);
    assert_int_equal(pg_conv_handshake(&c), 0);
    for (size_t off = 0; off < deep_len; off += 1400)
        assert_int_equal(pg_conv_send(&c, 0, deep + off,
                                      deep_len - off < 1400 ? deep_len - off : 1400), 0);
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);
    free(deep);

    rb_run run;
    analyze("nesting_10000", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, 1, 1, 0);
    const char *names[] = {"limit_hits", "protocol_errors", "resyncs", "requests", "replies", NULL};
    show_counters(s->db, names);
    assert_true(rb_db_counter(s->db, "limit_hits") >= 1);
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- odd records */

/* Records with caplen larger than the wire length, a wire length of zero, a
 * wire length of 4 GiB - 1, a zero-length record and a record cut in the IP
 * header, between the packets of a good conversation: each is counted and the
 * conversation is analysed in full. */
static void test_odd_record_lengths(void **state)
{
    scene *s = *state;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    pg_packet p;
    pg_packet_init(&p);
    p.payload = "*1\r\n$4\r\nPING\r\n";
    p.len = 14;
    uint8_t frame[256];
    size_t flen = pg_build(&p, frame, sizeof frame);
    assert_true(flen > 0);

    const int n_cmds = 50;
    char req[64];
    const char *get[] = {"GET", "a"};
    size_t rlen = resp_cmd(req, sizeof req, 2, get);
    pg_conv c;
    rb_conv_start(&c, f, "10.1.0.1", 40000, T0);
    assert_int_equal(pg_conv_handshake(&c), 0);
    int odd = 0;
    for (int i = 0; i < n_cmds; i++) {
        assert_int_equal(pg_conv_send(&c, 0, req, rlen), 0);
        int64_t ts = c.ts_us;
        switch (i % 5) {
        case 0: /* caplen > wirelen */
            assert_int_equal(pg_file_write_raw(f, ts, frame, (uint32_t)flen, 20), 0);
            break;
        case 1: /* wirelen 0 */
            assert_int_equal(pg_file_write_raw(f, ts, frame, (uint32_t)flen, 0), 0);
            break;
        case 2: /* wirelen absurd */
            assert_int_equal(pg_file_write_raw(f, ts, frame, (uint32_t)flen, 0xFFFFFFFFu), 0);
            break;
        case 3: /* empty record */
            assert_int_equal(pg_file_write_raw(f, ts, frame, 0, 0), 0);
            break;
        case 4: /* cut inside the IPv4 header */
            assert_int_equal(pg_file_write_raw(f, ts, frame, 20, (uint32_t)flen), 0);
            break;
        }
        odd++;
        assert_int_equal(pg_conv_send(&c, 1, "$1\r\n1\r\n", 7), 0);
    }
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("odd_record_lengths", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    /* analysed in full, but the damage is named in one line and exit is 1 */
    assert_int_equal(run.status, 1);
    assert_non_null(strstr(run.err, "records with impossible lengths"));
    assert_memory(&run, 1, 1, 0);
    const char *names[] = {"packets", "malformed", "truncated", "paired", "commands", NULL};
    show_counters(s->db, names);
    /* handshake 3 + per command 2 data + 1 odd + close 4 */
    assert_int_equal(rb_db_counter(s->db, "packets"), 3 + n_cmds * 2 + odd + 4);
    assert_int_equal(rb_db_counter(s->db, "paired"), n_cmds);
    assert_true(rb_db_counter(s->db, "malformed") + rb_db_counter(s->db, "truncated") >= n_cmds / 5);
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- time backwards */

/* A conversation whose every third packet carries a timestamp 10 s in the
 * past: counted, and still analysed in full (packet order is what counts). */
static void test_time_backwards(void **state)
{
    scene *s = *state;
    const int n_cmds = 200;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    char req[64];
    const char *get[] = {"GET", "b"};
    size_t rlen = resp_cmd(req, sizeof req, 2, get);
    pg_conv c;
    rb_conv_start(&c, f, "10.1.0.1", 40000, T0 + 60 * 1000000LL);
    assert_int_equal(pg_conv_handshake(&c), 0);
    for (int i = 0; i < n_cmds; i++) {
        int64_t now = c.ts_us;
        if (i % 3 == 0)
            c.ts_us = now - 10 * 1000000LL;
        assert_int_equal(pg_conv_send(&c, 0, req, rlen), 0);
        c.ts_us = now + 100;
        assert_int_equal(pg_conv_send(&c, 1, "$1\r\n2\r\n", 7), 0);
    }
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("time_backwards", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0); /* a warning, not an error */
    assert_non_null(strstr(run.err, "warning: "));
    assert_non_null(strstr(run.err, "time goes backwards at"));
    assert_memory(&run, 1, 1, 0);
    const char *names[] = {"time_backwards", "paired", NULL};
    show_counters(s->db, names);
    assert_true(rb_db_counter(s->db, "time_backwards") >= n_cmds / 3);
    assert_int_equal(rb_db_counter(s->db, "paired"), n_cmds);
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- duplicates */

/* Every data segment sent twice, and between them segments far outside the
 * window (sequence numbers 2^31 away): retransmissions and out-of-window
 * segments are counted and dropped, the stream is decoded once. */
static void test_duplicates_out_of_window(void **state)
{
    scene *s = *state;
    const int n_cmds = 300;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    char req[64];
    const char *get[] = {"GET", "c"};
    size_t rlen = resp_cmd(req, sizeof req, 2, get);
    pg_conv c;
    rb_conv_start(&c, f, "10.1.0.1", 40000, T0);
    assert_int_equal(pg_conv_handshake(&c), 0);
    for (int i = 0; i < n_cmds; i++) {
        uint32_t seq = c.next[0];
        assert_int_equal(pg_conv_send(&c, 0, req, rlen), 0);
        assert_int_equal(pg_conv_send_at(&c, 0, seq, PG_ACK | PG_PSH, req, rlen), 0);
        assert_int_equal(pg_conv_send_at(&c, 0, seq + 0x80000000u, PG_ACK | PG_PSH, req, rlen), 0);
        uint32_t sseq = c.next[1];
        assert_int_equal(pg_conv_send(&c, 1, "$1\r\n3\r\n", 7), 0);
        assert_int_equal(pg_conv_send_at(&c, 1, sseq, PG_ACK | PG_PSH, "$1\r\n3\r\n", 7), 0);
    }
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("duplicates_out_of_window", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, 1, 1, 0);
    const char *names[] = {"retransmitted", "out_of_window", "gaps", "paired", "requests", NULL};
    show_counters(s->db, names);
    assert_int_equal(rb_db_counter(s->db, "retransmitted"), 2 * n_cmds);
    assert_int_equal(rb_db_counter(s->db, "out_of_window"), n_cmds);
    assert_int_equal(rb_db_counter(s->db, "requests"), n_cmds);
    assert_int_equal(rb_db_counter(s->db, "paired"), n_cmds);
    assert_int_equal(rb_db_counter(s->db, "gaps"), 0);
    rb_run_free(&run);
}

/* ---------------------------------------------------------------- garbage */

/* 16 MiB of random bytes each way on port 6379 (xorshift, fixed seed): the
 * decoder resynchronises or gives up, counts it, and memory stays flat. */
static void test_random_bytes(void **state)
{
    scene *s = *state;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    uint64_t x = 0x2545F4914F6CDD1DULL;
    uint8_t seg[1400];
    pg_conv c;
    rb_conv_start(&c, f, "10.1.0.1", 40000, T0);
    assert_int_equal(pg_conv_handshake(&c), 0);
    for (int i = 0; i < (16 << 20) / (int)sizeof seg; i++) {
        for (size_t j = 0; j < sizeof seg; j++) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            seg[j] = (uint8_t)((x * 0x2545F4914F6CDD1DULL) >> 56);
        }
        assert_int_equal(pg_conv_send(&c, i & 1, seg, sizeof seg), 0);
    }
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("random_bytes 16 MiB", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, 1, 1, 0);
    const char *names[] = {"requests", "replies", "protocol_errors", "resyncs", "skipped_bytes",
                           "paired", NULL};
    show_counters(s->db, names);
    assert_true(rb_db_counter(s->db, "protocol_errors") + rb_db_counter(s->db, "resyncs") > 0);
    assert_int_equal(rb_db_int(s->db, "SELECT count(*) FROM connections"), 1);
    rb_run_free(&run);
}

/* HTTP requests and responses on port 6379 (a misrouted web client): no
 * finding, no redirect, the oddity is counted, memory stays flat. */
static void test_http_on_redis_port(void **state)
{
    scene *s = *state;
    pg_file *f = pg_file_open(s->pcap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    const char req[] = "GET /index.html HTTP/1.1\r\nHost: cache.example\r\n"
                       "User-Agent: curl/8.0\r\nAccept: */*\r\n\r\n";
    const char rep[] = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 44\r\n\r\n"
                       "<html><body>-MOVED 1 10.9.9.9:1</body></html>";
    pg_conv c;
    rb_conv_start(&c, f, "10.1.0.1", 40000, T0);
    assert_int_equal(pg_conv_handshake(&c), 0);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(pg_conv_send(&c, 0, req, strlen(req)), 0);
        assert_int_equal(pg_conv_send(&c, 1, rep, strlen(rep)), 0);
    }
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);

    rb_run run;
    analyze("http_on_redis_port", s->pcap, s->db, NULL, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_memory(&run, 1, 400, 0);
    const char *names[] = {"requests", "replies", "protocol_errors", "resyncs", "unpaired_replies",
                           "redirects", "findings", NULL};
    show_counters(s->db, names);
    assert_int_equal(rb_db_int(s->db, "SELECT count(*) FROM findings"), 0);
    assert_int_equal(rb_db_int(s->db, "SELECT count(*) FROM redirects"), 0);
    assert_true(rb_db_counter(s->db, "protocol_errors") + rb_db_counter(s->db, "resyncs") +
                    rb_db_counter(s->db, "unpaired_replies") > 0);
    rb_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_never_closed, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_pipeline_no_replies, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_inflight_total, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_kept_reply_incomplete, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_hole_never_filled, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_declared_4gb_bulk, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_endless_lines, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_nesting_10000, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_odd_record_lengths, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_time_backwards, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_duplicates_out_of_window, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_random_bytes, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_http_on_redis_port, scene_setup, scene_teardown),
        cmocka_unit_test_setup_teardown(test_syn_flood, scene_setup, scene_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
