/*
 * test_cluster_bus.c - the cluster bus through the whole pipeline (issue 17):
 * slotscope analyze, then the database.
 *
 *   failovers  tests/fixtures/bus/failovers.pcap, a real Redis 7.0 cluster's
 *              bus during a manual failover, a takeover and an automatic one
 *              (tests/fixtures/bus/README.md, from CLUSTER NODES polled during
 *              the run): the failovers with their kinds, ids, epochs and
 *              times inside the steps' windows, the slot ownership changes,
 *              the failed node's PFAIL / FAIL / ok, the nodes' bus columns,
 *              the message counts (the README's, and scripts/bus-count.py's
 *              when tshark is installed); bus connections are no client's
 *   threads    --threads 1, 2 and 3 give the same rows of every new table
 *   fallback   tests/fixtures/cluster/reshard.pcap has no bus traffic:
 *              ownership from what clients were told, MOVED causes
 *   midstream  a synthetic bus connection picked up inside a message is
 *              recognised by the messages that frame its first chunk; a
 *              client whose value holds one bus header stays a client
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

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"
#include "tests/helpers/pktgen.h"
#include "tests/helpers/skip.h"

#define FIXTURE SS_FIXTURES "/bus/failovers.pcap"

/* Node ids of the fixture (README.md). */
#define ID_30600 "917a37e3aa62f813bde11134d901f2cc1626a9b5"
#define ID_30601 "92a093cc5682219b3506d2be23cd6e6972b8f6fb"
#define ID_30602 "6b97a30dae59d5433883fbcb002a12a368010de5"
#define ID_30603 "39273c9a6dc75c64fa2a58a11b7cebbab04a6c57"
#define ID_30604 "04192e5b4abc6be229d3eeb3b5f24a07aa83ecd0"
#define ID_30605 "47d7b335333cc19102280ab8fec920a6df3174c1"

/* The steps of the run (events.log, wall clock = capture clock). */
#define T_MANUAL 1796140152131038LL   /* CLUSTER FAILOVER on 30605 */
#define T_TAKEOVER 1796140156254320LL /* CLUSTER FAILOVER TAKEOVER on 30604 */
#define T_SIGSTOP 1796140159456328LL  /* 30601 stopped */
#define T_SIGCONT 1796140168469802LL  /* 30601 resumed */

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_cluster_bus", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(tmpdir);
}

/* slotscope analyze file --db db (more arguments after): exit code 0. */
static void analyze(const char *file, const char *db, const char *threads)
{
    th_run run = {0};
    int rc = th_run_binary(&run, SS_BINARY,
                           TH_ARGS("analyze", file, "--db", db, "--force", "-q", "--threads",
                                   threads),
                           NULL, NULL, 0);
    th_run_free(&run);
    assert_int_equal(rc, 0);
}

static sqlite3 *open_db(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return db;
}

/* The text of the first column of the first row ("" when none), into buf. */
static const char *q_text(sqlite3 *db, char *buf, size_t size, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("bad query %s: %s", sql, sqlite3_errmsg(db));
    buf[0] = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

#define Q(db, ...) th_sql_int((db), (__VA_ARGS__), NULL)

/* ------------------------------------------------------------ failovers */

/* One failover of the fixture as the database must hold it. */
static void check_failover(sqlite3 *db, int n, const char *kind, const char *old_id,
                           const char *new_id, int epoch, int64_t step_us, int64_t next_us,
                           int slots)
{
    char sql[512];
#define FO(col) (snprintf(sql, sizeof sql, "SELECT " col " FROM failovers ORDER BY ts_us LIMIT 1 OFFSET %d", n), Q(db, sql))
    char buf[64];
    snprintf(sql, sizeof sql, "SELECT kind FROM failovers ORDER BY ts_us LIMIT 1 OFFSET %d", n);
    assert_string_equal(q_text(db, buf, sizeof buf, sql), kind);
    snprintf(sql, sizeof sql, "SELECT old_id FROM failovers ORDER BY ts_us LIMIT 1 OFFSET %d", n);
    assert_string_equal(q_text(db, buf, sizeof buf, sql), old_id);
    snprintf(sql, sizeof sql, "SELECT new_id FROM failovers ORDER BY ts_us LIMIT 1 OFFSET %d", n);
    assert_string_equal(q_text(db, buf, sizeof buf, sql), new_id);
    assert_int_equal(FO("config_epoch"), epoch);
    assert_int_equal(FO("slots"), slots);
    int64_t detected = FO("detected_us"), elected = FO("elected_us"), done = FO("done_us");
    /* done inside the step's window, as CLUSTER NODES showed it */
    assert_true(done > step_us && done < next_us);
    assert_int_equal(FO("ts_us"), done);
    if (strcmp(kind, "takeover") == 0) {
        assert_int_equal(detected, 0);
        assert_int_equal(elected, 0);
        assert_int_equal(FO("votes"), 0);
    } else {
        /* detected (MFSTART / FAIL) <= elected (the majority: 2 of 3
         * masters) <= done, all after the step began */
        assert_true(detected > step_us);
        assert_true(detected <= elected && elected <= done);
        assert_true(FO("votes") >= 2);
    }
#undef FO
}

/* Counters the README gives, from scripts/bus-count.py. */
static const struct { const char *name; int64_t value; } readme_counts[] = {
    {"bus_ping", 218}, {"bus_pong", 224}, {"bus_mfstart", 1}, {"bus_auth_request", 10},
    {"bus_auth_ack", 5}, {"bus_fail", 5}, {"bus_update", 5}, {"bus_meet", 0},
    {"bus_publish", 0}, {"bus_module", 0}, {"bus_messages", 468}};

static int64_t counter(sqlite3 *db, const char *name)
{
    return th_sql_int_p(db, "SELECT value FROM counters WHERE name = ?1", name);
}

/* scripts/bus-count.py's counts equal the counters (skipped without tshark). */
static int bus_count_py_agrees(sqlite3 *db)
{
    char cmd[1024];
    if (access("/usr/bin/tshark", X_OK) != 0 || access("/usr/bin/python3", X_OK) != 0)
        return -1;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/scripts/bus-count.py %s", SS_SOURCE_DIR,
             FIXTURE);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[256], type[64], name[80];
    long n;
    int seen = 0;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "%ld %63s", &n, type) != 2)
            continue;
        snprintf(name, sizeof name, "bus_%s", type);
        for (char *c = name; *c; c++)
            if (*c == '-')
                *c = '_';
        if (counter(db, name) != n)
            fail_msg("%s: bus-count.py says %ld, slotscope %lld", name, n,
                     (long long)counter(db, name));
        seen++;
    }
    assert_int_equal(pclose(p), 0);
    assert_int_equal(seen, 7); /* the seven types the fixture holds */
    return 0;
}

static void test_failovers(void **state)
{
    (void)state;
    const char *path = th_path(tmpdir, "f.db");
    char buf[256];
    analyze(FIXTURE, path, "1");
    th_assert_db_ok(path);
    sqlite3 *db = open_db(path);

    assert_int_equal(Q(db, "SELECT count(*) FROM failovers"), 3);
    check_failover(db, 0, "manual", ID_30600, ID_30605, 8, T_MANUAL, T_TAKEOVER, 5460);
    check_failover(db, 1, "takeover", ID_30602, ID_30604, 9, T_TAKEOVER, T_SIGSTOP, 5461);
    check_failover(db, 2, "automatic", ID_30601, ID_30603, 10, T_SIGSTOP, T_SIGCONT, 5463);
    assert_string_equal(q_text(db, buf, sizeof buf,
                               "SELECT group_concat(old_master || '>' || new_master, ' ') FROM"
                               " (SELECT * FROM failovers ORDER BY ts_us)"),
                        "127.0.0.1:30600>127.0.0.1:30605 127.0.0.1:30602>127.0.0.1:30604"
                        " 127.0.0.1:30601>127.0.0.1:30603");

    /* ownership: every slot owned once at the end, as the last CLUSTER
     * NODES said (30603: 0 5461-10922 epoch 10, 30604: 10923-16383 epoch 9,
     * 30605: 1-5460 epoch 8), each range taken over at its failover's done */
    assert_int_equal(Q(db, "SELECT sum(slot_hi - slot_lo + 1) FROM slot_owners"
                           " WHERE source = 'bus' AND to_us = 0"), 16384);
    assert_string_equal(q_text(db, buf, sizeof buf,
                               "SELECT group_concat(slot_lo || '-' || slot_hi || ':' ||"
                               " substr(node_id, 1, 8) || ':' || config_epoch, ' ') FROM"
                               " (SELECT * FROM slot_owners WHERE source = 'bus' AND to_us = 0"
                               " ORDER BY slot_lo)"),
                        "0-0:39273c9a:10 1-5460:47d7b335:8 5461-10922:39273c9a:10"
                        " 10923-16383:04192e5b:9");
    assert_int_equal(Q(db, "SELECT count(*) FROM slot_owners s WHERE source = 'bus'"
                           " AND to_us = 0 AND (cause <> 'failover' OR from_us <>"
                           " (SELECT done_us FROM failovers f WHERE f.new_id = s.node_id))"), 0);
    /* before: the first owners, ended exactly when their slots moved */
    assert_string_equal(q_text(db, buf, sizeof buf,
                               "SELECT group_concat(slot_lo || '-' || slot_hi || ':' ||"
                               " substr(node_id, 1, 8) || ':' || config_epoch, ' ') FROM"
                               " (SELECT * FROM slot_owners WHERE source = 'bus' AND to_us > 0"
                               " ORDER BY slot_lo)"),
                        "0-0:92a093cc:7 1-5460:917a37e3:1 5461-10922:92a093cc:7"
                        " 10923-16383:6b97a30d:3");
    assert_int_equal(Q(db, "SELECT count(*) FROM slot_owners o WHERE source = 'bus' AND"
                           " to_us > 0 AND (cause <> 'first' OR to_us <> (SELECT done_us FROM"
                           " failovers f WHERE f.old_id = o.node_id))"), 0);
    /* four first owners, four runs taken over (slot 0 and 5461-10922 are
     * two runs: slot 1-5460 lies between them) */
    assert_int_equal(counter(db, "owner_changes"), 8);

    /* the stopped node: PFAIL, then FAIL before its replica took over, ok
     * again after it was resumed */
    assert_string_equal(q_text(db, buf, sizeof buf,
                               "SELECT group_concat(from_state || '>' || to_state, ' ') FROM"
                               " (SELECT * FROM node_states WHERE node_id = '" ID_30601
                               "' ORDER BY ts_us, id)"),
                        "ok>pfail pfail>fail fail>ok");
    assert_true(Q(db, "SELECT ts_us FROM node_states WHERE to_state = 'pfail' AND node_id = '"
                      ID_30601 "'") > T_SIGSTOP);
    assert_true(Q(db, "SELECT ts_us FROM node_states WHERE to_state = 'fail' AND node_id = '"
                      ID_30601 "'") <=
                Q(db, "SELECT done_us FROM failovers WHERE kind = 'automatic'"));
    assert_true(Q(db, "SELECT ts_us FROM node_states WHERE to_state = 'ok' AND node_id = '"
                      ID_30601 "'") > T_SIGCONT);
    assert_int_equal(Q(db, "SELECT detected_us FROM failovers WHERE kind = 'automatic'"),
                     Q(db, "SELECT ts_us FROM node_states WHERE to_state = 'fail'"));
    assert_int_equal(Q(db, "SELECT count(*) FROM node_states WHERE node_id <> '" ID_30601 "'"),
                     0);

    /* nodes: the final CLUSTER NODES roles, masters and epochs */
    assert_string_equal(q_text(db, buf, sizeof buf,
                               "SELECT group_concat(announced || ' ' || flags || ' ' ||"
                               " substr(master_id || '-', 1, 8) || ' ' || config_epoch || ' ' ||"
                               " bus_port, ', ') FROM (SELECT * FROM nodes ORDER BY announced)"),
                        "127.0.0.1:30600 replica 47d7b335 8 40600, "
                        "127.0.0.1:30601 replica 39273c9a 10 40601, "
                        "127.0.0.1:30602 replica 04192e5b 9 40602, "
                        "127.0.0.1:30603 master - 10 40603, "
                        "127.0.0.1:30604 master - 9 40604, "
                        "127.0.0.1:30605 master - 8 40605");
    assert_int_equal(Q(db, "SELECT count(*) FROM nodes WHERE role_us = 0 OR config_epoch_us = 0"),
                     0);

    /* message counts */
    for (size_t i = 0; i < sizeof readme_counts / sizeof readme_counts[0]; i++)
        if (counter(db, readme_counts[i].name) != readme_counts[i].value)
            fail_msg("%s: %lld, README says %lld", readme_counts[i].name,
                     (long long)counter(db, readme_counts[i].name),
                     (long long)readme_counts[i].value);
    assert_int_equal(counter(db, "bus_messages_analysed"), 468);
    /* one message 30605 built as a replica, captured after its first as
     * master (another link): not taken for a second role change */
    assert_int_equal(counter(db, "bus_stale_headers"), 1);
    assert_int_equal(counter(db, "bus_bad") + counter(db, "bus_resyncs") +
                         counter(db, "bus_unknown_sender"), 0);
    assert_int_equal(counter(db, "bus_bytes"), counter(db, "stream_bytes_to_server") +
                                                   counter(db, "stream_bytes_to_client"));
    int py = bus_count_py_agrees(db);

    /* bus connections are no client's */
    assert_int_equal(Q(db, "SELECT count(*) FROM connections WHERE kind = 'bus' AND client = ''"),
                     39);
    assert_int_equal(Q(db, "SELECT count(*) FROM connections"), 39);
    assert_int_equal(Q(db, "SELECT count(*) FROM clients"), 0);
    assert_int_equal(counter(db, "commands"), 0);
    sqlite3_close(db);
    if (py < 0)
        SS_SKIP("tshark or python3 missing: scripts/bus-count.py not compared");
}

/* ------------------------------------------------------------ threads */

/* Every row of the tables the bus fills, as one text. */
static char *bus_rows(const char *path)
{
    static const char *const sql[] = {
        "SELECT group_concat(r, char(10)) FROM (SELECT slot_lo||' '||slot_hi||' '||node||' '||"
        "node_id||' '||config_epoch||' '||from_us||' '||to_us||' '||source||' '||cause AS r"
        " FROM slot_owners ORDER BY id)",
        "SELECT group_concat(r, char(10)) FROM (SELECT ts_us||' '||node||' '||from_state||' '||"
        "to_state||' '||reporter||' '||via||' '||frame AS r FROM node_states ORDER BY id)",
        "SELECT group_concat(r, char(10)) FROM (SELECT ts_us||kind||old_master||new_master||"
        "config_epoch||' '||detected_us||' '||elected_us||' '||done_us||' '||votes||' '||slots||"
        "' '||frame AS r FROM failovers ORDER BY id)",
        "SELECT group_concat(r, char(10)) FROM (SELECT observed||announced||node_id||role||"
        "slots_owned||flags||master_id||config_epoch||current_epoch||bus_port||role_us||"
        "master_us||config_epoch_us||flags_us AS r FROM nodes ORDER BY id)",
        "SELECT group_concat(r, char(10)) FROM (SELECT id||kind||client||src||dst AS r"
        " FROM connections ORDER BY id)",
        "SELECT group_concat(r, char(10)) FROM (SELECT name||'='||value AS r FROM counters"
        " WHERE name LIKE 'bus%' OR name IN ('owner_changes', 'failovers', 'health_changes')"
        " ORDER BY name)",
    };
    size_t cap = 1 << 20, len = 0;
    char *out = calloc(1, cap);
    sqlite3 *db = open_db(path);
    assert_non_null(out);
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, sql[i], -1, &st, NULL), SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            len += (size_t)snprintf(out + len, cap - len, "%s\n---\n",
                                    (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        assert_true(len < cap);
    }
    sqlite3_close(db);
    return out;
}

static void test_threads(void **state)
{
    (void)state;
    static const char *const threads[] = {"1", "2", "3"};
    char *rows[3];
    for (int i = 0; i < 3; i++) {
        const char *path = th_path(tmpdir, threads[i]);
        analyze(FIXTURE, path, threads[i]);
        rows[i] = bus_rows(path);
    }
    assert_true(strlen(rows[0]) > 1000);
    assert_string_equal(rows[1], rows[0]);
    assert_string_equal(rows[2], rows[0]);
    for (int i = 0; i < 3; i++)
        free(rows[i]);
}

/* ------------------------------------------------------------ fallback */

static void test_fallback(void **state)
{
    (void)state;
    const char *path = th_path(tmpdir, "r.db");
    char buf[256];
    analyze(SS_FIXTURES "/cluster/reshard.pcap", path, "1");
    sqlite3 *db = open_db(path);
    assert_int_equal(Q(db, "SELECT count(*) FROM slot_owners WHERE source <> 'clients'"), 0);
    assert_int_equal(Q(db, "SELECT count(*) FROM failovers"), 0);
    assert_int_equal(counter(db, "bus_messages"), 0);
    /* the maps clients fetched cover every slot; slot 3479 moved to 30101 and
     * slots 10923-10925 to 30100, migrations the capture shows */
    assert_int_equal(Q(db, "SELECT sum(slot_hi - slot_lo + 1) FROM slot_owners WHERE to_us = 0"),
                     16384);
    assert_string_equal(q_text(db, buf, sizeof buf,
                               "SELECT group_concat(slot_lo || ':' || node, ' ') FROM (SELECT *"
                               " FROM slot_owners WHERE cause = 'migration' AND to_us = 0"
                               " ORDER BY slot_lo)"),
                        "3479:127.0.0.1:30101 10923:127.0.0.1:30100 10924:127.0.0.1:30100"
                        " 10925:127.0.0.1:30100");
    /* each migration row starts at or after the migration's flip */
    assert_int_equal(Q(db, "SELECT count(*) FROM slot_owners o WHERE cause = 'migration' AND"
                           " from_us < (SELECT min(flip_us) FROM slot_migrations m WHERE"
                           " m.slot = o.slot_lo AND flip_us > 0)"), 0);
    /* MOVED causes: to the migration's target, a migration; never a
     * failover in a capture without one; every MOVED has one */
    assert_true(Q(db, "SELECT count(*) FROM redirects WHERE kind = 'MOVED' AND cause ="
                      " 'migration' AND slot = 3479 AND target = '127.0.0.1:30101'") > 0);
    assert_int_equal(Q(db, "SELECT count(*) FROM redirects WHERE kind = 'MOVED' AND cause"
                           " NOT IN ('migration', 'unknown')"), 0);
    assert_int_equal(Q(db, "SELECT count(*) FROM redirects WHERE kind <> 'MOVED' AND cause <> ''"),
                     0);
    /* replicas answering MOVED for their master changed no owner */
    assert_int_equal(Q(db, "SELECT count(*) FROM redirects WHERE node = '127.0.0.1:30105' AND"
                           " cause <> 'unknown'"), 0);
    sqlite3_close(db);
}

/* ------------------------------------------------------------ midstream */

/* A bus PING of 2256 bytes (no gossip) from node id `who` (one hex digit
 * repeated), a master claiming slots 0-7. */
static void ping(uint8_t *b, char who)
{
    memset(b, 0, 2256);
    memcpy(b, "RCmb", 4);
    b[4] = 0, b[5] = 0, b[6] = 2256 >> 8, b[7] = 2256 & 0xff; /* totlen */
    b[9] = 1;                                                 /* version */
    b[10] = 30700 >> 8, b[11] = 30700 & 0xff;                 /* port */
    b[23] = 5;                                                /* currentEpoch */
    b[31] = 2;                                                /* configEpoch */
    memset(b + 40, who, 40);                                  /* sender */
    b[80] = 0xff;                                             /* slots 0-7 */
    b[2248] = 40700 >> 8, b[2249] = 40700 & 0xff;             /* cport */
    b[2251] = 1;                                              /* flags: master */
}

static void test_midstream(void **state)
{
    (void)state;
    const char *cap = th_path(tmpdir, "mid.pcap"), *path = th_path(tmpdir, "mid.db");
    static uint8_t chunk[8192], value[4096];
    pg_file *f = pg_file_open(cap, PG_PCAP, DLT_EN10MB, 65535);
    pg_conv bus, cli;
    pg_packet t;
    assert_non_null(f);
    /* a bus link picked up inside a message: 500 bytes of its tail, a whole
     * PING, the first 100 bytes of another, then the rest of it */
    pg_packet_init(&t);
    t.src = "10.0.5.1";
    t.dst = "10.0.5.2";
    t.sport = 45001;
    t.dport = 40700;
    pg_conv_init(&bus, &t, 1000, 2000, 1700000000000000LL);
    bus.file = f;
    memset(chunk, 0x5a, 500);
    ping(chunk + 500, 'a');
    ping(chunk + 2756, 'a');
    assert_int_equal(pg_conv_send(&bus, 0, chunk, 2856), 0);
    assert_int_equal(pg_conv_send(&bus, 0, chunk + 2856, 2156), 0);
    /* a client picked up mid-stream whose SET value holds one bus header,
     * then bytes that frame nothing */
    pg_packet_init(&t);
    t.src = "10.0.5.3";
    t.dst = "10.0.5.2";
    t.sport = 45002;
    t.dport = 30700;
    pg_conv_init(&cli, &t, 3000, 4000, 1700000001000000LL);
    cli.file = f;
    ping(value, 'b');
    memset(value + 2256, 'x', 44);
    int n = snprintf((char *)chunk, sizeof chunk, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2300\r\n");
    memcpy(chunk + n, value, 2300);
    memcpy(chunk + n + 2300, "\r\n", 2);
    assert_int_equal(pg_conv_send(&cli, 0, chunk, (size_t)n + 2302), 0);
    assert_int_equal(pg_conv_send(&cli, 1, "+OK\r\n", 5), 0);
    assert_int_equal(pg_file_close(f), 0);

    analyze(cap, path, "1");
    sqlite3 *db = open_db(path);
    assert_int_equal(Q(db, "SELECT count(*) FROM connections WHERE kind = 'bus' AND"
                           " dst = '10.0.5.2:40700'"), 1);
    assert_int_equal(counter(db, "bus_ping"), 2);
    assert_int_equal(counter(db, "bus_resyncs"), 1);
    assert_int_equal(counter(db, "bus_skipped_bytes"), 500);
    assert_int_equal(Q(db, "SELECT count(*) FROM slot_owners WHERE source = 'bus' AND"
                           " slot_lo = 0 AND slot_hi = 7 AND config_epoch = 2"), 1);
    assert_int_equal(Q(db, "SELECT count(*) FROM connections WHERE kind = 'client' AND"
                           " dst = '10.0.5.2:30700' AND commands = 1"), 1);
    assert_int_equal(Q(db, "SELECT count(*) FROM clients"), 1);
    assert_int_equal(counter(db, "cluster_bus_connections"), 1);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failovers),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_fallback),
        cmocka_unit_test(test_midstream),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
