/*
 * test_queries.c - every canned query in queries/ returns the expected rows on
 * a database built through the store from a small, known incident:
 *
 *   clients   10.0.0.5 (ask_cached + moved_ignored), 10.0.0.6 (asking_missing),
 *             10.0.0.7 (clean, not cluster-aware)
 *   nodes     10.0.0.1:7000, 10.0.0.2:7001 (masters), 10.0.0.3:7002 (replica)
 *   slots     3999 migrates 7000 -> 7001; slot 100's migration never ends
 *
 * Expected rows are worked out by hand from these records (see each test).
 * The files are run statement by statement exactly as `sqlite3 DB < file` does.
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

#include "store/store.h"
#include "tests/helpers/child.h"

static char tmpdir[256];
static char dbpath[512];
static sqlite3 *db; /* the known database, opened read-only */

/* 1700000000 s is 2023-11-14 22:13:20 UTC; T(ms) is that plus ms. */
#define T(ms) (1700000000000000LL + (int64_t)(ms) * 1000)

/* Write one finding. */
static void add_finding(an_sink *k, uint64_t id, an_finding_kind kind, an_severity sev,
                        const char *client, const char *node, int32_t slot, int64_t first,
                        int64_t last, uint64_t count, int64_t extra, const char *summary)
{
    an_finding f;
    memset(&f, 0, sizeof f);
    f.id = id;
    f.kind = kind;
    f.severity = sev;
    snprintf(f.client, sizeof f.client, "%s", client);
    snprintf(f.node, sizeof f.node, "%s", node);
    f.slot = slot;
    f.first_us = first;
    f.last_us = last;
    f.count = count;
    f.extra_latency_us = extra;
    snprintf(f.summary, sizeof f.summary, "%s", summary);
    f.evidence = "{}";
    k->finding(k->ctx, &f);
}

/* Write one client. */
static void add_client(an_sink *k, const char *name, uint64_t conns, uint64_t cmds,
                       uint64_t redirects, uint64_t findings, int aware)
{
    an_client c = {.first_us = T(0), .last_us = T(10000), .connections = conns,
                   .commands = cmds, .redirects = redirects, .findings = findings,
                   .cluster_aware = (uint8_t)aware};
    snprintf(c.name, sizeof c.name, "%s", name);
    k->client(k->ctx, &c);
}

/* Write one node. */
static void add_node(an_sink *k, const char *observed, const char *announced, const char *role,
                     uint32_t slots, uint64_t commands)
{
    an_node n = {.slots_owned = slots, .commands = commands};
    snprintf(n.observed, sizeof n.observed, "%s", observed);
    snprintf(n.announced, sizeof n.announced, "%s", announced);
    snprintf(n.role, sizeof n.role, "%s", role);
    k->node(k->ctx, &n);
}

/* Write one redirect reply. */
static void add_redirect(an_sink *k, int64_t ts, const char *client, uint64_t conn,
                         const char *node, resp_err_class kind, const char *target,
                         const char *command, int64_t latency)
{
    an_redirect r = {.ts_us = ts, .conn_id = conn, .kind = kind, .slot = 3999,
                     .latency_us = latency};
    snprintf(r.client, sizeof r.client, "%s", client);
    snprintf(r.node, sizeof r.node, "%s", node);
    snprintf(r.target, sizeof r.target, "%s", target);
    snprintf(r.command, sizeof r.command, "%s", command);
    snprintf(r.key, sizeof r.key, "k%llu", (unsigned long long)ts % 97);
    k->redirect(k->ctx, &r);
}

/* Write one connection; gap_bytes and resyncs go through the capture and
 * resp counters it carries. */
static void add_connection(an_sink *k, uint64_t id, const char *client, const char *src,
                           const char *dst, uint64_t cmds, uint64_t to_server,
                           uint64_t to_client, int gappy, uint64_t unpaired)
{
    cap_conn cc;
    resp_conn_stats rs;
    an_connection c = {.id = id, .first_us = T(gappy ? 1000 : 0), .last_us = T(gappy ? 9000 : 10000),
                       .bytes_to_server = to_server, .bytes_to_client = to_client,
                       .commands = cmds, .gaps = gappy ? 1 : 0, .out_of_sync = (uint8_t)gappy,
                       .mid_stream = (uint8_t)gappy, .conn = &cc, .resp = &rs};
    memset(&cc, 0, sizeof cc);
    memset(&rs, 0, sizeof rs);
    cc.gap_bytes[CAP_TO_CLIENT] = gappy ? 120 : 0;
    rs.resyncs = gappy ? 1 : 0;
    rs.skipped_bytes = gappy ? 50 : 0;
    rs.unpaired_requests = unpaired;
    snprintf(c.client, sizeof c.client, "%s", client);
    snprintf(c.src, sizeof c.src, "%s", src);
    snprintf(c.dst, sizeof c.dst, "%s", dst);
    k->connection(k->ctx, &c);
}

/* Write one latency summary. */
static void add_latency(an_sink *k, an_scope scope, const char *key, int redirected,
                        uint64_t count, int64_t p50, int64_t p99, int64_t extra, uint64_t trips)
{
    an_latency l = {.scope = scope, .redirected = (uint8_t)redirected, .count = count,
                    .p50_us = p50, .p90_us = p99, .p99_us = p99, .max_us = p99,
                    .total_us = p50 * (int64_t)count, .extra_us = extra,
                    .extra_round_trips = trips};
    snprintf(l.key, sizeof l.key, "%s", key);
    k->latency(k->ctx, &l);
}

/* Write the two migrations. */
static void add_migrations(an_sink *k)
{
    an_migration m1 = {.slot = 3999, .importing_us = T(900), .first_ask_us = T(1000),
                       .last_ask_us = T(3500), .flip_us = T(3600), .asks = 6, .tryagains = 1,
                       .moveds = 2, .keys_migrated = 8, .complete = 1};
    an_migration m2 = {.slot = 100, .first_ask_us = T(500), .last_ask_us = T(500), .asks = 1};
    snprintf(m1.source, sizeof m1.source, "10.0.0.1:7000");
    snprintf(m1.target, sizeof m1.target, "10.0.0.2:7001");
    snprintf(m2.source, sizeof m2.source, "10.0.0.2:7001");
    snprintf(m2.target, sizeof m2.target, "10.0.0.3:7002");
    k->migration(k->ctx, &m1);
    k->migration(k->ctx, &m2);
}

/* Everything else: findings, clients, nodes, redirects, connections. */
static void add_incident(an_sink *k)
{
    add_finding(k, 1, AN_ASK_CACHED, AN_ERROR, "10.0.0.5", "10.0.0.2:7001", 3999, T(1000),
                T(2000), 4, 5000, "S1");
    /* ask_cached and moved_ignored cover the same operations of 10.0.0.5: the
     * sum of their costs (10 ms) is more than those operations cost (8 ms, its
     * latency row) */
    add_finding(k, 2, AN_MOVED_IGNORED, AN_WARNING, "10.0.0.5", "10.0.0.1:7000", 3999, T(4000),
                T(5000), 3, 5000, "S2");
    add_finding(k, 3, AN_ASKING_MISSING, AN_WARNING, "10.0.0.6", "10.0.0.2:7001", 3999,
                T(1500), T(1600), 2, 9000, "S3");
    add_finding(k, 4, AN_MIGRATION_STUCK, AN_WARNING, "", "", 100, T(500), T(500), 1, 0, "S4");
    /* an operation that never ended: in no latency row, only in its finding */
    add_finding(k, 5, AN_REDIRECT_UNFOLLOWED, AN_ERROR, "10.0.0.7", "10.0.0.3:7002", 5, T(6000),
                T(6500), 1, 8500, "S5");
    add_client(k, "10.0.0.5", 2, 100, 5, 2, 1);
    add_client(k, "10.0.0.6", 1, 50, 2, 1, 1);
    add_client(k, "10.0.0.7", 1, 20, 0, 0, 0);
    add_node(k, "10.0.0.1:7000", "172.17.0.2:7000", "master", 8192, 60);
    add_node(k, "10.0.0.2:7001", "172.17.0.3:7001", "master", 8192, 90);
    add_node(k, "10.0.0.3:7002", "172.17.0.4:7002", "replica", 0, 20);
    add_redirect(k, T(1000), "10.0.0.5", 1, "10.0.0.1:7000", RESP_ERR_ASK, "10.0.0.2:7001", "GET", 300);
    add_redirect(k, T(1100), "10.0.0.5", 1, "10.0.0.1:7000", RESP_ERR_ASK, "10.0.0.2:7001", "GET", 500);
    add_redirect(k, T(4000), "10.0.0.5", 2, "10.0.0.1:7000", RESP_ERR_MOVED, "10.0.0.2:7001", "SET", 400);
    add_redirect(k, T(1500), "10.0.0.6", 3, "10.0.0.2:7001", RESP_ERR_MOVED, "10.0.0.1:7000", "GET", 250);
    add_redirect(k, T(1550), "10.0.0.6", 3, "10.0.0.1:7000", RESP_ERR_TRYAGAIN, "", "MGET", 150);
    add_connection(k, 1, "10.0.0.5", "10.0.0.5:40001", "10.0.0.1:7000", 60, 1000, 5000, 0, 0);
    add_connection(k, 2, "10.0.0.5", "10.0.0.5:40002", "10.0.0.2:7001", 40, 800, 900, 1, 0);
    add_connection(k, 3, "10.0.0.6", "10.0.0.6:50001", "10.0.0.2:7001", 50, 2000, 3000, 0, 1);
    add_connection(k, 4, "10.0.0.7", "10.0.0.7:60001", "10.0.0.3:7002", 20, 100, 200, 0, 0);
}

/* Latency summaries per slot, client and node. */
static void add_latencies(an_sink *k)
{
    add_latency(k, AN_SCOPE_SLOT, "3999", 0, 10, 200, 900, 0, 0);
    add_latency(k, AN_SCOPE_SLOT, "3999", 1, 4, 700, 2000, 3000, 4);
    add_latency(k, AN_SCOPE_SLOT, "5", 0, 3, 100, 100, 0, 0);
    add_latency(k, AN_SCOPE_CLIENT, "10.0.0.5", 0, 90, 200, 800, 0, 0);
    add_latency(k, AN_SCOPE_CLIENT, "10.0.0.5", 1, 5, 900, 3000, 8000, 6);
    add_latency(k, AN_SCOPE_CLIENT, "10.0.0.6", 0, 48, 150, 400, 0, 0);
    add_latency(k, AN_SCOPE_CLIENT, "10.0.0.6", 1, 2, 5000, 9000, 9000, 2);
    add_latency(k, AN_SCOPE_CLIENT, "10.0.0.7", 0, 20, 100, 300, 0, 0);
    add_latency(k, AN_SCOPE_NODE, "10.0.0.1:7000", 0, 60, 200, 700, 0, 0);
}

/* Build the known database once for all tests. */
static int build_db(void **state)
{
    char err[512] = "";
    store_opts o = {0};
    cap_stats cs = {.packets = 1000, .gaps = 1, .gap_bytes = 120, .mid_stream = 1};
    resp_stats rs = {.total = {.out_of_sync = 1, .unpaired_requests = 1}};
    an_stats as = {.unknown_commands = 2};
    cap_input_info in = {.linktype = 1, .packets = 1000, .bytes = 64000, .first_us = T(0),
                         .last_us = T(10000)};
    store *s;
    an_sink sink;
    (void)state;

    if (th_tmpdir_new("ss_queries", tmpdir, sizeof tmpdir) != 0)
        return -1;
    snprintf(dbpath, sizeof dbpath, "%s/known.db", tmpdir);
    s = store_open(dbpath, &o, err, sizeof err);
    if (!s) {
        fprintf(stderr, "store_open: %s\n", err);
        return -1;
    }
    sink = store_sink(s);
    add_incident(&sink);
    add_migrations(&sink);
    add_latencies(&sink);
    snprintf(in.name, sizeof in.name, "a.pcap");
    snprintf(in.linktype_name, sizeof in.linktype_name, "EN10MB");
    store_input(s, &in);
    store_counters(s, &cs, &rs, &as);
    if (store_close(s, err, sizeof err) != 0) {
        fprintf(stderr, "store_close: %s\n", err);
        return -1;
    }
    db = store_open_readonly(dbpath, err, sizeof err);
    return db ? 0 : -1;
}

static int remove_db(void **state)
{
    (void)state;
    sqlite3_close(db);
    return th_tmpdir_remove(tmpdir);
}

/* Read queries/NAME.sql from the source tree (malloc'd, NUL-terminated). */
static char *read_query(const char *name)
{
    char path[1024];
    char *text;
    snprintf(path, sizeof path, "%s/queries/%s.sql", SS_SOURCE_DIR, name);
    text = th_slurp(path, NULL);
    if (!text)
        fail_msg("cannot read %s", path);
    return text;
}

/* Append printf output to a fixed buffer (truncation fails the test). */
static void put(char *out, size_t size, const char *fmt, ...)
{
    size_t used = strlen(out);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + used, size - used, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < size - used);
}

/* Run every statement of the file; the rows of each statement that returns
 * columns as "a|b|c" lines (NULL as ""), result sets separated by "--". An
 * optional client parameter goes into the temp params table first. */
static void run_query(const char *name, const char *client, char *out, size_t size)
{
    char *sql = read_query(name);
    const char *tail = sql;
    int sets = 0;
    out[0] = 0;
    assert_int_equal(sqlite3_exec(db, "DROP TABLE IF EXISTS temp.params;"
                                      "CREATE TEMP TABLE params (key TEXT PRIMARY KEY, value TEXT)",
                                  NULL, NULL, NULL), SQLITE_OK);
    if (client) {
        char ins[256];
        snprintf(ins, sizeof ins, "INSERT INTO params VALUES ('client', '%s')", client);
        assert_int_equal(sqlite3_exec(db, ins, NULL, NULL, NULL), SQLITE_OK);
    }
    while (*tail) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, tail, -1, &st, &tail) != SQLITE_OK)
            fail_msg("%s.sql: %s", name, sqlite3_errmsg(db));
        if (!st)
            continue; /* trailing comment or whitespace */
        if (sqlite3_column_count(st) > 0 && sets++ > 0)
            put(out, size, "--\n");
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int i = 0; i < sqlite3_column_count(st); i++) {
                const unsigned char *v = sqlite3_column_text(st, i);
                put(out, size, "%s%s", i ? "|" : "", v ? (const char *)v : "");
            }
            put(out, size, "\n");
        }
        sqlite3_finalize(st);
    }
    free(sql);
}

static char out[16384];

/* Clients with findings, ranked by worst severity, then by cost_ms: the larger of the client's
 * redirected operations' extra time (latency table) and its costliest single
 * finding, so no operation is counted twice:
 *   10.0.0.6  max(9 ms latency, 9 ms asking_missing)               = 9.0
 *   10.0.0.7  max(no latency row, 8.5 ms redirect_unfollowed)      = 8.5
 *   10.0.0.5  max(8 ms latency, 5 ms ask_cached, 5 ms moved_ignored) = 8.0
 * The findings' sum is shown apart (10.0 for 10.0.0.5: the overlap counted
 * twice); ranked by it 10.0.0.5 would come first, ranked by the latency row
 * alone 10.0.0.7 would come last. The cluster-side finding has no client. */
static void test_offenders(void **state)
{
    (void)state;
    run_query("offenders", NULL, out, sizeof out);
    /* ranked as the report ranks: worst severity first, then cost */
    assert_string_equal(out,
        "10.0.0.7|error|1|redirect_unfollowed|1|8.5|0.0|8.5|20|0|0\n"
        "10.0.0.5|error|2|ask_cached,moved_ignored|7|8.0|8.0|10.0|100|5|1\n"
        "10.0.0.6|warning|1|asking_missing|2|9.0|9.0|9.0|50|2|1\n");
}

/* Kinds, worst severity then most cost first; then every finding. */
static void test_findings(void **state)
{
    (void)state;
    run_query("findings", NULL, out, sizeof out);
    assert_string_equal(out,
        "redirect_unfollowed|error|1|1|1|8.5|2023-11-14 22:13:26.000|2023-11-14 22:13:26.500\n"
        "ask_cached|error|1|1|4|5.0|2023-11-14 22:13:21.000|2023-11-14 22:13:22.000\n"
        "asking_missing|warning|1|1|2|9.0|2023-11-14 22:13:21.500|2023-11-14 22:13:21.600\n"
        "moved_ignored|warning|1|1|3|5.0|2023-11-14 22:13:24.000|2023-11-14 22:13:25.000\n"
        "migration_stuck|warning|1|0|1|0.0|2023-11-14 22:13:20.500|2023-11-14 22:13:20.500\n"
        "--\n"
        "5|redirect_unfollowed|error|10.0.0.7|10.0.0.3:7002|5|1|8.5|2023-11-14 22:13:26.000|S5\n"
        "1|ask_cached|error|10.0.0.5|10.0.0.2:7001|3999|4|5.0|2023-11-14 22:13:21.000|S1\n"
        "3|asking_missing|warning|10.0.0.6|10.0.0.2:7001|3999|2|9.0|2023-11-14 22:13:21.500|S3\n"
        "2|moved_ignored|warning|10.0.0.5|10.0.0.1:7000|3999|3|5.0|2023-11-14 22:13:24.000|S2\n"
        "4|migration_stuck|warning|||100|1|0.0|2023-11-14 22:13:20.500|S4\n");
}

/* Migrations in time order: slot 100 (ASK at 20.5 s, never finished) before
 * slot 3999 (IMPORTING 20.9, ASK 21.0 .. 23.5, flip 23.6). */
static void test_migrations(void **state)
{
    (void)state;
    run_query("migrations", NULL, out, sizeof out);
    assert_string_equal(out,
        "100|10.0.0.2:7001|10.0.0.3:7002||2023-11-14 22:13:20.500|2023-11-14 22:13:20.500|"
        "|0.0|1|0|0|0|0\n"
        "3999|10.0.0.1:7000|10.0.0.2:7001|2023-11-14 22:13:20.900|2023-11-14 22:13:21.000|"
        "2023-11-14 22:13:23.500|2023-11-14 22:13:23.600|2500.0|6|1|2|8|1\n");
}

/* Slot 3999 (redirected, 3 ms extra, 5 redirect replies) before slot 5
 * (direct only). */
static void test_latency_by_slot(void **state)
{
    (void)state;
    run_query("latency_by_slot", NULL, out, sizeof out);
    assert_string_equal(out, "3999|10|0.2|0.9|4|0.7|2.0|3.0|4|5\n"
                             "5|3|0.1|0.1||||0.0|0|0\n");
}

/* 10.0.0.6 (9 ms extra) before 10.0.0.5 (8 ms) before 10.0.0.7 (direct only). */
static void test_latency_by_client(void **state)
{
    (void)state;
    run_query("latency_by_client", NULL, out, sizeof out);
    assert_string_equal(out, "10.0.0.6|48|0.15|0.4|2|5.0|9.0|9.0|2|2\n"
                             "10.0.0.5|90|0.2|0.8|5|0.9|3.0|8.0|6|3\n"
                             "10.0.0.7|20|0.1|0.3||||0.0|0|0\n");
}

/* One client: its row, its two findings, its redirects grouped (two ASK
 * from 7000, one MOVED), its two connections. */
static void test_client(void **state)
{
    (void)state;
    run_query("client", "10.0.0.5", out, sizeof out);
    assert_string_equal(out,
        "10.0.0.5||||2|100|5|2|1|0|2023-11-14 22:13:20.000|2023-11-14 22:13:30.000\n"
        "--\n"
        "1|ask_cached|error|10.0.0.2:7001|3999|4|5.0|2023-11-14 22:13:21.000|"
        "2023-11-14 22:13:22.000|S1\n"
        "2|moved_ignored|warning|10.0.0.1:7000|3999|3|5.0|2023-11-14 22:13:24.000|"
        "2023-11-14 22:13:25.000|S2\n"
        "--\n"
        "ASK|3999|10.0.0.1:7000|10.0.0.2:7001|2|0.4|2023-11-14 22:13:21.000|"
        "2023-11-14 22:13:21.100\n"
        "MOVED|3999|10.0.0.1:7000|10.0.0.2:7001|1|0.4|2023-11-14 22:13:24.000|"
        "2023-11-14 22:13:24.000\n"
        "--\n"
        "1|10.0.0.5:40001|10.0.0.1:7000|60|1000|5000|0|0|0|2023-11-14 22:13:20.000|"
        "2023-11-14 22:13:30.000\n"
        "2|10.0.0.5:40002|10.0.0.2:7001|40|800|900|1|1|1|2023-11-14 22:13:21.000|"
        "2023-11-14 22:13:29.000\n");

    /* An unknown client, and no parameter at all: four empty result sets. */
    run_query("client", "9.9.9.9", out, sizeof out);
    assert_string_equal(out, "--\n--\n--\n");
    run_query("client", NULL, out, sizeof out);
    assert_string_equal(out, "--\n--\n--\n");
}

/* Nodes by commands served: 7001 (two connections, 90 commands), 7000, 7002. */
static void test_nodes(void **state)
{
    (void)state;
    run_query("nodes", NULL, out, sizeof out);
    assert_string_equal(out,
        "10.0.0.2:7001|master|172.17.0.3:7001|8192|2|2|90|2800|3900|1|0|0||\n"
        "10.0.0.1:7000|master|172.17.0.2:7000|8192|1|1|60|1000|5000|1|2|1|0.2|0.7\n"
        "10.0.0.3:7002|replica|172.17.0.4:7002|0|1|1|20|100|200|0|0|0||\n");
}

/* Non-zero loss counters, the input, the connections with trouble. */
static void test_health(void **state)
{
    (void)state;
    run_query("health", NULL, out, sizeof out);
    assert_string_equal(out,
        "gap_bytes|120\ngaps|1\nmid_stream|1\nout_of_sync_connections|1\n"
        "unknown_commands|2\nunpaired_requests|1\n"
        "--\n"
        "a.pcap|EN10MB|1000|64000|0|0|0||2023-11-14 22:13:20.000|2023-11-14 22:13:30.000\n"
        "--\n"
        "2|10.0.0.5|10.0.0.5:40002|10.0.0.2:7001|1|120|1|1|1|50|0|0|0\n"
        "3|10.0.0.6|10.0.0.6:50001|10.0.0.2:7001|0|0|0|0|0|0|1|0|0\n");
}

/* Every query file starts with "-- NAME: question?" (what `query --list`
 * shows) and names its parameters. */
static void test_headers(void **state)
{
    static const char *const names[] = {"offenders", "findings", "migrations",
                                        "latency_by_slot", "latency_by_client", "client",
                                        "nodes", "health"};
    (void)state;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *sql = read_query(names[i]);
        char prefix[64];
        char *nl = strchr(sql, '\n');
        snprintf(prefix, sizeof prefix, "-- %s: ", names[i]);
        assert_non_null(nl);
        assert_memory_equal(sql, prefix, strlen(prefix));
        assert_int_equal(nl[-1], '?');
        assert_memory_equal(nl + 1, "-- Parameter", strlen("-- Parameter"));
        free(sql);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offenders),         cmocka_unit_test(test_findings),
        cmocka_unit_test(test_migrations),        cmocka_unit_test(test_latency_by_slot),
        cmocka_unit_test(test_latency_by_client), cmocka_unit_test(test_client),
        cmocka_unit_test(test_nodes),             cmocka_unit_test(test_health),
        cmocka_unit_test(test_headers),
    };
    return cmocka_run_group_tests(tests, build_db, remove_db);
}
