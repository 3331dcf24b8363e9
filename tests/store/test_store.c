/*
 * test_store.c - the SQLite store: schema round trip, upserts, batching and
 * interrupted runs, refusing to overwrite, clear errors (missing directory,
 * disk full), read-only open checks, no credentials in the file.
 *
 * Run as "test_store --writer-thread" (ctest test_store_writer) every test
 * runs again with the store's writer thread (store_opts.writer_thread), and
 * test_writer_same_database compares the two ways row for row.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/store.h"
#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"

/* A fresh temporary directory per test, removed afterwards. */
static char tmpdir[256];
static char dbpath[512];
/* --writer-thread: the stores the tests open write on a thread of their own. */
static int writer_thread;

static int setup(void **state)
{
    (void)state;
    if (th_tmpdir_new("ss_store", tmpdir, sizeof tmpdir) != 0)
        return -1;
    snprintf(dbpath, sizeof dbpath, "%s/t.db", tmpdir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(tmpdir);
}

/* One integer from a query made with printf (th_sql_int), -1 if no row. */
static int64_t q_int(sqlite3 *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t q_int(sqlite3 *db, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof sql);
    return th_sql_int(db, sql, NULL);
}

/* One text value from a query into buf ("" if no row). */
static const char *q_text(sqlite3 *db, char *buf, size_t size, const char *sql)
{
    sqlite3_stmt *st;
    buf[0] = 0;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

/* Open a new store at dbpath, failing the test if it cannot. */
static store *open_store(int force, int store_commands, uint32_t batch)
{
    char err[512] = "";
    store_opts o = {.force = force, .store_commands = store_commands, .batch_rows = batch,
                    .writer_thread = writer_thread,
                    .command_line = "slotscope analyze t.pcap --db t.db"};
    store *s = store_open(dbpath, &o, err, sizeof err);
    if (!s)
        fail_msg("store_open: %s", err);
    return s;
}

static void close_store(store *s)
{
    char err[512] = "";
    if (store_close(s, err, sizeof err) != 0)
        fail_msg("store_close: %s", err);
}

static sqlite3 *open_ro(void)
{
    char err[512] = "";
    sqlite3 *db = store_open_readonly(dbpath, err, sizeof err);
    if (!db)
        fail_msg("store_open_readonly: %s", err);
    return db;
}

/* A finding with every field set. */
static an_finding sample_finding(uint64_t id, uint64_t count)
{
    an_finding f;
    memset(&f, 0, sizeof f);
    f.id = id;
    f.kind = AN_ASK_CACHED;
    f.severity = AN_ERROR;
    snprintf(f.client, sizeof f.client, "10.0.0.5");
    snprintf(f.node, sizeof f.node, "10.0.0.2:7001");
    f.slot = 3999;
    f.first_us = 1700000000000001;
    f.last_us = 1700000005000002;
    f.count = count;
    f.extra_latency_us = 12345;
    snprintf(f.summary, sizeof f.summary, "sent slot 3999 to 10.0.0.2:7001 without ASKING");
    f.evidence = "{\"commands\":[1,2]}";
    return f;
}

/* A fake connection 10.0.0.5:41000 -> 10.0.0.1:7000. */
static cap_conn sample_conn(void)
{
    cap_conn c;
    memset(&c, 0, sizeof c);
    c.id = 7;
    assert_int_equal(cap_endpoint_parse("10.0.0.5:41000", &c.client), 0);
    assert_int_equal(cap_endpoint_parse("10.0.0.1:7000", &c.server), 0);
    c.first_us = 1700000000000000;
    c.last_us = 1700000009000000;
    c.side_source = CAP_SIDE_SYN;
    c.packets[CAP_TO_SERVER] = 11;
    c.packets[CAP_TO_CLIENT] = 12;
    c.gap_bytes[CAP_TO_CLIENT] = 100;
    c.retransmits[CAP_TO_SERVER] = 2;
    c.out_of_order[CAP_TO_CLIENT] = 3;
    return c;
}

/* Write one record of every kind through the sink. */
static void write_every_record(store *s, const cap_conn *conn)
{
    an_sink sink = store_sink(s);
    an_finding f = sample_finding(1, 4);
    an_redirect r = {.ts_us = 1700000001000000, .conn_id = 7, .kind = RESP_ERR_ASK,
                     .slot = 3999, .latency_us = 250};
    an_node n = {.slots_owned = 5461, .commands = 99};
    an_client c = {.first_us = 1, .last_us = 2, .connections = 3, .commands = 40,
                   .redirects = 5, .findings = 1, .cluster_aware = 1};
    /* every column a value of its own, so a column written from another fails */
    resp_conn_stats rs = {.requests = 40, .replies = 39, .pushes = 4, .unpaired_requests = 1,
                          .unpaired_replies = 5, .resyncs = 2, .skipped_bytes = 77,
                          .protocol_errors = 6};
    an_connection ac = {.id = 7, .first_us = conn->first_us, .last_us = conn->last_us,
                        .bytes_to_server = 1000, .bytes_to_client = 2000, .commands = 40,
                        .gaps = 1, .out_of_sync = 1, .mid_stream = 0, .conn = conn, .resp = &rs};
    an_migration m = {.slot = 3999, .first_ask_us = 10, .last_ask_us = 20, .flip_us = 21,
                      .importing_us = 7, .migrating_us = 9, .asks = 6, .tryagains = 1,
                      .moveds = 2, .keys_migrated = 8, .complete = AN_MIG_ABORTED};
    an_latency l = {.scope = AN_SCOPE_CLIENT, .redirected = 1, .count = 5, .p50_us = 300,
                    .p90_us = 400, .p99_us = 500, .max_us = 600, .total_us = 1800,
                    .extra_us = 900, .extra_round_trips = 5};

    snprintf(r.client, sizeof r.client, "10.0.0.5");
    snprintf(r.node, sizeof r.node, "10.0.0.1:7000");
    snprintf(r.target, sizeof r.target, "10.0.0.2:7001");
    snprintf(r.command, sizeof r.command, "GET");
    snprintf(r.key, sizeof r.key, "user:1");
    snprintf(n.observed, sizeof n.observed, "10.0.0.1:7000");
    snprintf(n.announced, sizeof n.announced, "172.17.0.2:7000");
    snprintf(n.node_id, sizeof n.node_id, "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca");
    snprintf(n.role, sizeof n.role, "master");
    snprintf(c.name, sizeof c.name, "10.0.0.5");
    snprintf(ac.client, sizeof ac.client, "10.0.0.5");
    snprintf(ac.src, sizeof ac.src, "10.0.0.5:41000");
    snprintf(ac.dst, sizeof ac.dst, "10.0.0.1:7000");
    snprintf(m.source, sizeof m.source, "10.0.0.1:7000");
    snprintf(m.target, sizeof m.target, "10.0.0.2:7001");
    snprintf(l.key, sizeof l.key, "10.0.0.5");
    an_series_row t = {.bucket_us = 1700000001000000, .width_us = 1000000, .scope = "slots",
                       .scopes = 1, .commands = 40, .moved = 1, .ask = 2, .tryagain = 3,
                       .crossslot = 4, .clusterdown = 5, .asking = 6, .retries = 7,
                       .direct_ops = 30, .redirected_ops = 8, .direct_p50_us = 90,
                       .direct_p99_us = 400, .redirected_p50_us = -1, .redirected_p99_us = 7000};
    snprintf(t.scope_id, sizeof t.scope_id, "5000-5099");

    sink.finding(sink.ctx, &f);
    sink.redirect(sink.ctx, &r);
    sink.node(sink.ctx, &n);
    sink.client(sink.ctx, &c);
    sink.connection(sink.ctx, &ac);
    sink.migration(sink.ctx, &m);
    sink.latency(sink.ctx, &l);
    sink.series(sink.ctx, &t);
}

/* Every record type written through the sink reads back field by field. */
static void test_round_trip(void **state)
{
    cap_conn conn = sample_conn();
    cap_input_info in;
    char buf[512];
    store *s;
    sqlite3 *db;
    (void)state;

    s = open_store(0, 0, 0);
    write_every_record(s, &conn);
    memset(&in, 0, sizeof in);
    snprintf(in.name, sizeof in.name, "a.pcap");
    in.linktype = 1;
    snprintf(in.linktype_name, sizeof in.linktype_name, "EN10MB");
    in.packets = 100;
    in.bytes = 6400;
    in.first_us = 1700000000000000;
    in.last_us = 1700000009000000;
    store_input(s, &in);
    store_counter(s, "packets", 100);
    store_meta(s, "client_by", "host");
    assert_null(store_error(s));
    close_store(s);

    db = open_ro();
    char version[16];
    snprintf(version, sizeof version, "%d", STORE_SCHEMA_VERSION);
    assert_string_equal(q_text(db, buf, sizeof buf, "SELECT value FROM meta WHERE key='schema_version'"),
                        version);
    assert_string_equal(q_text(db, buf, sizeof buf, "SELECT value FROM meta WHERE key='command_line'"),
                        "slotscope analyze t.pcap --db t.db");
    assert_string_equal(q_text(db, buf, sizeof buf, "SELECT value FROM meta WHERE key='inputs'"), "a.pcap");
    assert_string_equal(q_text(db, buf, sizeof buf, "SELECT value FROM meta WHERE key='client_by'"), "host");
    assert_true(q_int(db, "SELECT value FROM meta WHERE key='end_us'") >=
                q_int(db, "SELECT value FROM meta WHERE key='start_us'"));
    assert_true(q_int(db, "SELECT value FROM meta WHERE key='start_us'") > 1600000000000000);

    assert_int_equal(q_int(db, "SELECT count(*) FROM inputs WHERE name='a.pcap' AND linktype=1"
                               " AND linktype_name='EN10MB' AND packets=100 AND bytes=6400"
                               " AND first_us=1700000000000000 AND last_us=1700000009000000"
                               " AND error=''"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM findings WHERE id=1 AND kind='ask_cached'"
                               " AND severity='error' AND severity_level=3 AND client='10.0.0.5'"
                               " AND node='10.0.0.2:7001' AND slot=3999"
                               " AND first_us=1700000000000001 AND last_us=1700000005000002"
                               " AND count=4 AND extra_latency_us=12345"
                               " AND summary='sent slot 3999 to 10.0.0.2:7001 without ASKING'"
                               " AND json_extract(evidence, '$.commands[1]')=2"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects WHERE ts_us=1700000001000000"
                               " AND client='10.0.0.5' AND conn=7 AND node='10.0.0.1:7000'"
                               " AND kind='ASK' AND slot=3999 AND target='10.0.0.2:7001'"
                               " AND command='GET' AND key='user:1' AND latency_us=250"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM nodes WHERE observed='10.0.0.1:7000'"
                               " AND announced='172.17.0.2:7000' AND role='master'"
                               " AND node_id='e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca'"
                               " AND slots_owned=5461 AND commands=99"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM clients WHERE name='10.0.0.5' AND first_us=1"
                               " AND last_us=2 AND connections=3 AND commands=40 AND redirects=5"
                               " AND findings=1 AND cluster_aware=1 AND is_node=0"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM connections WHERE id=7 AND client='10.0.0.5'"
                               " AND src='10.0.0.5:41000' AND dst='10.0.0.1:7000'"
                               " AND bytes_to_server=1000 AND bytes_to_client=2000"
                               " AND packets_to_server=11 AND packets_to_client=12 AND commands=40"
                               " AND gaps=1 AND gap_bytes=100 AND retransmits=2 AND out_of_order=3"
                               " AND out_of_sync=1 AND mid_stream=0 AND side_source='syn'"
                               " AND requests=40 AND replies=39 AND unpaired_requests=1"
                               " AND resyncs=2 AND pushes=4 AND unpaired_replies=5"
                               " AND skipped_bytes=77 AND protocol_errors=6"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM slot_migrations WHERE slot=3999"
                               " AND source='10.0.0.1:7000' AND target='10.0.0.2:7001'"
                               " AND first_ask_us=10 AND last_ask_us=20 AND flip_us=21 AND asks=6"
                               " AND tryagains=1 AND moveds=2 AND keys_migrated=8 AND complete=2"
                               " AND importing_us=7 AND migrating_us=9"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM latency WHERE scope='client'"
                               " AND key='10.0.0.5' AND redirected=1 AND count=5 AND p50_us=300"
                               " AND p90_us=400 AND p99_us=500 AND max_us=600 AND total_us=1800"
                               " AND extra_us=900 AND extra_round_trips=5"), 1);
    /* a series row; a latency of -1 (no operation) is NULL */
    assert_int_equal(q_int(db, "SELECT count(*) FROM timeline WHERE bucket_us=1700000001000000"
                               " AND width_us=1000000 AND scope='slots' AND scope_id='5000-5099'"
                               " AND scopes=1 AND commands=40 AND moved=1 AND ask=2 AND tryagain=3"
                               " AND crossslot=4 AND clusterdown=5 AND asking=6 AND retries=7"
                               " AND direct_ops=30 AND redirected_ops=8 AND direct_p50_us=90"
                               " AND direct_p99_us=400 AND redirected_p50_us IS NULL"
                               " AND redirected_p99_us=7000"), 1);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='packets'"), 100);
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands"), 0);
    /* The commands indexes are built at close. */
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                               " AND name IN ('commands_client', 'commands_conn')"), 2);
    /* A finished database is one file: the WAL was checkpointed away. */
    assert_string_equal(q_text(db, buf, sizeof buf, "PRAGMA journal_mode"), "delete");
    sqlite3_close(db);
}

/* A finding emitted again (changed) replaces its row; so do counters and
 * inputs with the same key; a client seen twice is merged. */
static void test_upserts(void **state)
{
    store *s;
    sqlite3 *db;
    an_sink sink;
    an_finding f1 = sample_finding(1, 4), f1b = sample_finding(1, 9), f2 = sample_finding(2, 1);
    cap_input_info in;
    (void)state;

    s = open_store(0, 0, 0);
    sink = store_sink(s);
    sink.finding(sink.ctx, &f1);
    sink.finding(sink.ctx, &f2);
    sink.finding(sink.ctx, &f1b);
    store_counter(s, "gaps", 1);
    store_counter(s, "gaps", 5);
    /* A client evicted by the analyzer and seen again: one merged row. */
    {
        an_client c1 = {.first_us = 100, .last_us = 200, .connections = 2, .commands = 10,
                        .redirects = 1, .findings = 0, .cluster_aware = 0};
        an_client c2 = {.first_us = 300, .last_us = 400, .connections = 1, .commands = 5,
                        .redirects = 2, .findings = 1, .cluster_aware = 1};
        snprintf(c1.name, sizeof c1.name, "10.0.0.9");
        snprintf(c2.name, sizeof c2.name, "10.0.0.9");
        sink.client(sink.ctx, &c1);
        sink.client(sink.ctx, &c2);
    }
    memset(&in, 0, sizeof in);
    snprintf(in.name, sizeof in.name, "lo");
    store_input(s, &in);
    in.packets = 77;
    store_input(s, &in);
    close_store(s);

    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM findings"), 2);
    assert_int_equal(q_int(db, "SELECT count FROM findings WHERE id=1"), 9);
    assert_int_equal(q_int(db, "SELECT count FROM findings WHERE id=2"), 1);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='gaps'"), 5);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inputs"), 1);
    assert_int_equal(q_int(db, "SELECT packets FROM inputs WHERE name='lo'"), 77);
    assert_int_equal(q_int(db, "SELECT count(*) FROM clients WHERE name='10.0.0.9' AND first_us=100"
                               " AND last_us=400 AND connections=3 AND commands=15"
                               " AND redirects=3 AND findings=1 AND cluster_aware=1"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM clients"), 1);
    sqlite3_close(db);
}

/* Write n redirects through the sink. */
static void write_redirects(store *s, int n)
{
    an_sink sink = store_sink(s);
    for (int i = 0; i < n; i++) {
        an_redirect r = {.ts_us = 1000 + i, .kind = RESP_ERR_MOVED, .slot = i};
        sink.redirect(sink.ctx, &r);
    }
}

/* Rows become visible to another reader in whole batches, and store_commit
 * commits the rest. */
static void test_batches(void **state)
{
    store *s;
    sqlite3 *db;
    (void)state;

    s = open_store(0, 0, 3);
    write_redirects(s, 7);
    store_db(s); /* with a writer thread: once it has written them */
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 6);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 7);
    sqlite3_close(db);
    close_store(s);
}

/* The number of indexes in the database of s (as its writer sees it). */
static int64_t index_count(store *s)
{
    return q_int(store_db(s), "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                              " AND sql IS NOT NULL");
}

/* index_at_close (capture files): no index while rows are written, all nine
 * after close, each answering queries. Without it (live): the seven query
 * indexes from the start, the commands table's two at close. */
static void test_index_at_close(void **state)
{
    char err[512] = "";
    store_opts o = {.index_at_close = 1, .batch_rows = 4, .writer_thread = writer_thread};
    store *s;
    sqlite3 *db;
    (void)state;

    s = store_open(dbpath, &o, err, sizeof err);
    assert_non_null(s);
    write_redirects(s, 10);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(index_count(s), 0);
    close_store(s);
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                               " AND name IN ('redirects_client', 'redirects_slot',"
                               " 'redirects_ts', 'findings_client', 'findings_kind',"
                               " 'connections_client', 'slot_migrations_slot',"
                               " 'commands_client', 'commands_conn')"), 9);
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects INDEXED BY redirects_slot"
                               " WHERE slot = 3"), 1);
    sqlite3_close(db);

    s = open_store(1, 0, 4);
    assert_int_equal(index_count(s), 7);
    close_store(s);
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                               " AND sql IS NOT NULL"), 9);
    sqlite3_close(db);
}

/* sync_once (capture files): the close makes no sync of its own but one of
 * the finished file, which is still one self-contained database: no -wal or
 * -journal beside it, back in rollback mode, every row and index there. */
static void test_sync_once(void **state)
{
    char err[512] = "", side[600], buf[64];
    store_opts o = {.index_at_close = 1, .sync_once = 1, .batch_rows = 4,
                    .writer_thread = writer_thread};
    (void)state;

    store *s = store_open(dbpath, &o, err, sizeof err);
    assert_non_null(s);
    write_redirects(s, 10);
    close_store(s);
    const char *const suffixes[] = {"-wal", "-shm", "-journal"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", dbpath, suffixes[i]);
        assert_int_equal(access(side, F_OK), -1);
    }
    sqlite3 *db = open_ro();
    assert_string_equal(q_text(db, buf, sizeof buf, "PRAGMA integrity_check"), "ok");
    assert_string_equal(q_text(db, buf, sizeof buf, "PRAGMA journal_mode"), "delete");
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 10);
    assert_int_equal(q_int(db, "SELECT count(*) FROM meta WHERE key='end_us'"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                               " AND name IN ('redirects_slot', 'commands_client')"), 2);
    sqlite3_close(db);
}

/* A run killed without store_close (here: a child that kills itself with
 * SIGKILL, as the OOM killer or kill -9 would) leaves a consistent database
 * holding every committed batch. */
static void test_interrupted_run(void **state)
{
    pid_t pid;
    int status = 0;
    sqlite3 *db;
    char buf[64];
    (void)state;

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        store *s = open_store(0, 0, 4);
        write_redirects(s, 10); /* two batches of 4 committed, 2 rows pending */
        store_db(s);            /* with a writer thread: once it has done that */
        raise(SIGKILL);         /* no store_close, no commit, no exit handlers */
        _exit(1);               /* not reached */
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    db = open_ro();
    assert_string_equal(q_text(db, buf, sizeof buf, "PRAGMA integrity_check"), "ok");
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 8);
    assert_int_equal(q_int(db, "SELECT count(*) FROM meta WHERE key='end_us'"), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_master WHERE name='commands_client'"), 0);
    sqlite3_close(db);
}

/* An existing database is refused without force and replaced with it. */
static void test_existing_database(void **state)
{
    char err[512] = "";
    store_opts o = {0};
    store *s;
    sqlite3 *db;
    (void)state;

    s = open_store(0, 0, 0);
    write_redirects(s, 3);
    close_store(s);

    assert_null(store_open(dbpath, &o, err, sizeof err));
    assert_non_null(strstr(err, "exists (use --force)"));
    assert_non_null(strstr(err, dbpath));
    db = open_ro(); /* untouched */
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 3);
    sqlite3_close(db);

    s = open_store(1, 0, 0);
    close_store(s);
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 0);
    sqlite3_close(db);
}

/* A path that cannot be created says why, with the system's words. */
static void test_unwritable_path(void **state)
{
    char err[512] = "", path[600];
    store_opts o = {0};
    (void)state;

    snprintf(path, sizeof path, "%s/no/such/dir/t.db", tmpdir);
    assert_null(store_open(path, &o, err, sizeof err));
    assert_non_null(strstr(err, "cannot create"));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(ENOENT)));

    assert_null(store_open(tmpdir, &(store_opts){.force = 1}, err, sizeof err));
    assert_non_null(strstr(err, "Is a directory"));
}

/* A full disk (simulated with max_page_count) gives one sticky "disk full"
 * error; writing stops; close reports it; what was committed stays. */
static void test_disk_full(void **state)
{
    char err[512] = "";
    store *s;
    sqlite3 *db;
    an_sink sink;
    int64_t pages;
    (void)state;

    s = open_store(0, 0, 10);
    write_redirects(s, 10); /* one committed batch */
    pages = q_int(store_db(s), "PRAGMA page_count");
    assert_true(pages > 0);
    q_int(store_db(s), "PRAGMA max_page_count = %lld", (long long)pages);
    sink = store_sink(s);
    for (int i = 0; i < 100000 && !store_error(s); i++) {
        an_finding f = sample_finding((uint64_t)i + 1, 1);
        sink.finding(sink.ctx, &f);
    }
    assert_non_null(store_error(s));
    assert_non_null(strstr(store_error(s), "disk full"));
    assert_non_null(strstr(store_error(s), dbpath));
    assert_int_equal(store_commit(s), -1);
    assert_int_equal(store_close(s, err, sizeof err), -1);
    assert_non_null(strstr(err, "disk full"));

    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 10);
    sqlite3_close(db);
}

/* Read-only open: missing file, a file that is not a slotscope database, a
 * database of another schema version. */
static void test_open_readonly_checks(void **state)
{
    char err[512] = "";
    sqlite3 *db;
    (void)state;

    assert_null(store_open_readonly(dbpath, err, sizeof err));
    assert_non_null(strstr(err, "cannot open"));

    assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE x (a)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_null(store_open_readonly(dbpath, err, sizeof err));
    assert_non_null(strstr(err, "not a slotscope database"));

    assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
                                      "INSERT INTO meta VALUES ('schema_version', '99')",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_null(store_open_readonly(dbpath, err, sizeof err));
    assert_non_null(strstr(err, "schema version 99"));
}

/* Does the file at path contain the bytes of needle? */
static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    static char buf[1 << 20];
    size_t n;
    int found = 0;
    assert_non_null(f);
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    for (size_t i = 0; i + strlen(needle) <= n && !found; i++)
        found = memcmp(buf + i, needle, strlen(needle)) == 0;
    return found;
}

/* A command for the commands table. */
static resp_command sample_command(const cap_conn *conn, const char *name, const char *arg)
{
    resp_command cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.conn = conn;
    cmd.seq = 3;
    cmd.outcome = RESP_OK;
    snprintf(cmd.req.name, sizeof cmd.req.name, "%s", name);
    cmd.req.argc = 2;
    cmd.req.ts_us = 1000;
    cmd.req.bytes = 30;
    cmd.req.nargs = 1;
    cmd.req.arg_len[0] = (uint8_t)strlen(arg);
    snprintf(cmd.req.args[0], sizeof cmd.req.args[0], "%s", arg);
    cmd.req.slot = -1;
    cmd.reply.type = RESP_T_ERROR;
    cmd.reply.err = RESP_ERR_MOVED;
    cmd.reply.ts_us = 1400;
    cmd.reply.bytes = 40;
    return cmd;
}

/* --store-commands keeps name, key and sizes, never argument values; without
 * it no command row is written. */
static void test_commands_table(void **state)
{
    cap_conn conn = sample_conn();
    resp_command get = sample_command(&conn, "GET", "user:42");
    resp_command auth = sample_command(&conn, "AUTH", "hunter2-password");
    store *s;
    sqlite3 *db;
    an_sink sink;
    (void)state;

    get.req.key0_len = 7;
    memcpy(get.req.key0, "user:42", 7);
    get.req.slot = 1234;
    s = open_store(0, 1, 0);
    sink = store_sink(s);
    assert_non_null(sink.command);
    sink.command(sink.ctx, &get, "10.0.0.5", 1234);
    sink.command(sink.ctx, &auth, "10.0.0.5", -1);
    close_store(s);

    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE name='GET' AND key='user:42'"
                               " AND slot=1234 AND client='10.0.0.5' AND conn=7"
                               " AND node='10.0.0.1:7000' AND seq=3 AND argc=2 AND ts_us=1000"
                               " AND reply_us=1400 AND latency_us=400 AND outcome='ok'"
                               " AND reply_type='-' AND error='MOVED' AND req_bytes=30"
                               " AND reply_bytes=40"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE name='AUTH' AND key=''"), 1);
    sqlite3_close(db);
    assert_false(file_contains(dbpath, "hunter2-password"));

    s = open_store(1, 0, 0);
    assert_null(store_sink(s).command);
    close_store(s);
}

/* A connection row with id and commands set (the rest zero). */
static void write_connection_row(store *s, uint64_t id, uint64_t commands)
{
    an_sink sink = store_sink(s);
    an_connection c = {.id = id, .commands = commands, .first_us = (int64_t)id};
    snprintf(c.client, sizeof c.client, "10.0.0.%u", (unsigned)(id % 250));
    sink.connection(sink.ctx, &c);
}

/* Rows of the bulk tables wait in a buffer and go out 32 at a time: whatever
 * the batch size, every row given before a commit is committed, in order
 * (rowids follow the order of the calls), and a close writes the rest. */
static void test_buffered_rows(void **state)
{
    store *s;
    sqlite3 *db;
    (void)state;

    s = open_store(0, 0, 7); /* commits in the middle of a buffer */
    write_redirects(s, 100);
    store_db(s); /* with a writer thread: once it has written them */
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 98);
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects WHERE ts_us != 999 + id"), 0);
    sqlite3_close(db);
    close_store(s);
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 100);
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects WHERE ts_us != 999 + id"
                               " OR slot != id - 1"), 0);
    sqlite3_close(db);

    s = open_store(1, 0, 0); /* one transaction: 3 full buffers, 4 rows at close */
    write_redirects(s, 100);
    close_store(s);
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects"), 100);
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects WHERE ts_us != 999 + id"), 0);
    sqlite3_close(db);
}

/* A connection written again replaces its row, also when both rows wait in
 * the same buffer and when they are written by different statements: the
 * last one given wins, as when each row was written at once. */
static void test_buffered_replace(void **state)
{
    store *s;
    sqlite3 *db;
    (void)state;

    s = open_store(0, 0, 0);
    for (uint64_t i = 1; i <= 40; i++)   /* 32 go out in one statement */
        write_connection_row(s, i, 1);
    write_connection_row(s, 5, 2);       /* replaces a written row */
    write_connection_row(s, 38, 2);      /* replaces a waiting row, twice */
    write_connection_row(s, 38, 3);
    close_store(s);
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM connections"), 40);
    assert_int_equal(q_int(db, "SELECT commands FROM connections WHERE id = 5"), 2);
    assert_int_equal(q_int(db, "SELECT commands FROM connections WHERE id = 38"), 3);
    assert_int_equal(q_int(db, "SELECT sum(commands) FROM connections"), 38 + 2 + 3);
    sqlite3_close(db);
}

/* A row whose text does not fit in its buffer slot (a command's client name
 * is the caller's text, of any length) is written at once, after the rows
 * waiting before it, with its text whole. */
static void test_buffered_long_text(void **state)
{
    cap_conn conn = sample_conn();
    resp_command cmd = sample_command(&conn, "GET", "k");
    char client[1500];
    store *s;
    sqlite3 *db;
    an_sink sink;
    (void)state;

    memset(client, 'c', sizeof client - 1);
    client[sizeof client - 1] = 0;
    s = open_store(0, 1, 0);
    sink = store_sink(s);
    for (int i = 0; i < 6; i++) {
        cmd.seq = (uint64_t)i;
        sink.command(sink.ctx, &cmd, i == 3 ? client : "10.0.0.5", -1);
    }
    close_store(s);
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands"), 6);
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE seq != id - 1"), 0);
    assert_int_equal(q_int(db, "SELECT length(client) FROM commands WHERE seq = 3"),
                     (int64_t)sizeof client - 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE client = '10.0.0.5'"), 5);
    sqlite3_close(db);
}

/* Each command row names its own server, also with more servers than the
 * store keeps formatted (8) and commands alternating between them. */
static void test_command_nodes(void **state)
{
    cap_conn conn = sample_conn();
    resp_command cmd = sample_command(&conn, "GET", "k");
    store *s;
    sqlite3 *db;
    an_sink sink;
    (void)state;

    s = open_store(0, 1, 0);
    sink = store_sink(s);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 12; i++) {
            char server[32];
            snprintf(server, sizeof server, "10.0.%d.1:%d", i % 2, 7000 + i);
            assert_int_equal(cap_endpoint_parse(server, &conn.server), 0);
            conn.id = (uint64_t)i;
            sink.command(sink.ctx, &cmd, "10.0.0.5", -1);
        }
    }
    close_store(s);
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands"), 36);
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE"
                               " node = '10.0.' || (conn - 2 * (conn / 2)) || '.1:' || (7000 + conn)"), 36);
    sqlite3_close(db);
}

/* Collects counter names for test_counter_names. */
struct names {
    char list[4096];
    int n;
};
static void collect_name(void *ctx, const char *name, uint64_t value)
{
    struct names *nm = ctx;
    (void)value;
    strncat(nm->list, name, sizeof nm->list - strlen(nm->list) - 2);
    strcat(nm->list, ",");
    nm->n++;
}

/* The counters the issue requires are all there and carry the right values. */
static void test_counter_names(void **state)
{
    static const char *const required[] = {"packets", "bytes", "connections", "commands",
                                           "redirects", "gaps", "unpaired_requests",
                                           "unpaired_replies", "resyncs", "evicted_connections",
                                           "kernel_drops", "truncated", "unknown_commands",
                                           "out_of_sync_connections", "mid_stream"};
    cap_stats cs = {.packets = 11, .wire_bytes = 22, .gaps = 33, .evicted_connections = 44};
    resp_stats rs = {.total = {.unpaired_requests = 55, .resyncs = 66}};
    an_stats as = {.commands = 77, .redirects = 88};
    struct names nm = {.list = ",", .n = 0};
    store *s;
    sqlite3 *db;
    (void)state;

    store_each_counter(&cs, &rs, &as, collect_name, &nm);
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, ",%s,", required[i]);
        if (!strstr(nm.list, needle))
            fail_msg("counter %s missing", required[i]);
    }
    s = open_store(0, 0, 0);
    store_counters(s, &cs, &rs, &as);
    close_store(s);
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM counters"), nm.n);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='packets'"), 11);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='bytes'"), 22);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='gaps'"), 33);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='evicted_connections'"), 44);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='unpaired_requests'"), 55);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='resyncs'"), 66);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='commands'"), 77);
    assert_int_equal(q_int(db, "SELECT value FROM counters WHERE name='redirects'"), 88);
    sqlite3_close(db);
}

/* Every statement a store runs, as SQL with its values (sqlite3_trace_v2),
 * except the one that writes the end time; stmt NULL: add the line sql_text. */
struct trace {
    char *text;
    size_t len, cap;
};
static int trace_statement(unsigned type, void *ctx, void *stmt, void *sql_text)
{
    struct trace *t = ctx;
    char *sql = stmt ? sqlite3_expanded_sql(stmt) : sqlite3_mprintf("%s", (char *)sql_text);
    size_t n;
    (void)type;
    assert_non_null(sql);
    n = strlen(sql);
    if (!strstr(sql, "'end_us'")) {
        if (t->len + n + 2 > t->cap) {
            t->cap = (t->len + n + 2) * 2;
            t->text = realloc(t->text, t->cap);
            assert_non_null(t->text);
        }
        memcpy(t->text + t->len, sql, n);
        t->len += n;
        t->text[t->len++] = '\n';
        t->text[t->len] = 0;
    }
    sqlite3_free(sql);
    return 0;
}

/* A mix of every kind of row, more than the writer's queue holds (1024),
 * with long texts (a finding's evidence of several KB, a command's long
 * client name), commits asked in the middle and a look at the database. */
static void write_mix(store *s, struct trace *t)
{
    cap_conn conn = sample_conn();
    resp_command cmd = sample_command(&conn, "GET", "k");
    an_sink sink = store_sink(s);
    static char evidence[6000], client[900];
    uint64_t rows_seen;

    memset(client, 'c', sizeof client - 1);
    for (size_t i = 0; i + 1 < sizeof evidence; i++)
        evidence[i] = (char)('a' + i % 26);
    evidence[0] = '{';
    evidence[sizeof evidence - 2] = '}';
    assert_int_equal(sqlite3_trace_v2(store_db(s), SQLITE_TRACE_STMT, trace_statement, t),
                     SQLITE_OK);
    for (int i = 0; i < 3000; i++) {
        an_redirect r = {.ts_us = 1000 + i, .kind = RESP_ERR_ASK, .slot = i % 16384};
        snprintf(r.key, sizeof r.key, "key:%d", i);
        sink.redirect(sink.ctx, &r);
        write_connection_row(s, (uint64_t)(i % 700) + 1, (uint64_t)i);
        cmd.seq = (uint64_t)i;
        sink.command(sink.ctx, &cmd, i % 97 == 5 ? client : "10.0.0.5", i % 16384);
        if (i % 50 == 0) {
            an_finding f = sample_finding((uint64_t)(i % 300) + 1, (uint64_t)i);
            f.evidence = i % 100 == 0 ? evidence : "{}";
            memset(f.summary, 's', sizeof f.summary - 1);
            sink.finding(sink.ctx, &f);
            store_counter(s, "packets", (uint64_t)i);
        }
        if (i == 1234)
            assert_int_equal(store_commit(s), 0);
        if (i == 2000 || i == 2500) {
            /* store_db waits for the writer: what it sees (written rows, the
             * bulk buffers' rows not yet) is what one thread sees */
            char seen[64];
            int64_t n = q_int(store_db(s), "SELECT count(*) FROM redirects");
            snprintf(seen, sizeof seen, "seen %lld", (long long)n);
            trace_statement(0, t, NULL, seen);
            assert_true(n > i - 32 && n <= i + 1);
        }
    }
    rows_seen = store_rows(s);
    assert_true(rows_seen > 0);
    close_store(s);
}

/* The writer thread runs exactly the statements one thread runs, in the same
 * order, with the same values: the same multi-row INSERTs, the same
 * transactions (BEGIN and COMMIT at the same rows), the same database. */
static void test_writer_same_database(void **state)
{
    struct trace one = {0}, two = {0};
    store_opts o = {.store_commands = 1, .batch_rows = 500};
    char err[512] = "";
    sqlite3 *db;
    (void)state;

    for (int with_thread = 0; with_thread <= 1; with_thread++) {
        store *s;
        o.force = 1;
        o.writer_thread = with_thread;
        s = store_open(dbpath, &o, err, sizeof err);
        if (!s)
            fail_msg("store_open: %s", err);
        write_mix(s, with_thread ? &two : &one);
    }
    assert_non_null(one.text);
    assert_non_null(two.text);
    assert_non_null(strstr(one.text, "COMMIT"));
    assert_non_null(strstr(one.text, "),("));      /* multi-row INSERTs */
    assert_non_null(strstr(one.text, "}', 0, '', '')")); /* the long evidence, whole, then
                                                            operations and the filters */
    if (strcmp(one.text, two.text) != 0) {
        size_t i = 0;
        while (one.text[i] == two.text[i])
            i++;
        fail_msg("statements differ at byte %zu of %zu:\n  one thread: %.160s\n  writer:     %.160s",
                 i, one.len, one.text + i, two.text + i);
    }
    db = open_ro();
    assert_int_equal(q_int(db, "SELECT count(*) FROM redirects WHERE ts_us != 999 + id"), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands"), 3000);
    assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE seq != id - 1"), 0);
    assert_int_equal(q_int(db, "SELECT max(length(evidence)) FROM findings"), 5999);
    sqlite3_close(db);
    free(one.text);
    free(two.text);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upserts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_at_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupted_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_readonly_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commands_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counter_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffered_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffered_replace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffered_long_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writer_same_database, setup, teardown),
    };
    writer_thread = argc > 1 && strcmp(argv[1], "--writer-thread") == 0;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
