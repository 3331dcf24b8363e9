/*
 * test_midstream.c - connections picked up without their handshake:
 * oriented by what the capture already proved, replication links recognised
 * by their shape, end to end (slotscope analyze, the database).
 *
 *   orientation   a connection to a server an earlier handshake showed is
 *                 oriented by it ("known"), although its first bytes, from
 *                 the server, look like a request and the client's port is
 *                 the lower one; the same bytes before that handshake are
 *                 oriented by their shape (the capture did not prove it yet)
 *   replication   links without their PSYNC: the replica first (REPLCONF
 *                 ACK), the master first with its endpoint unknown (taken the
 *                 wrong way round, then recognised at the replica's ACK), the
 *                 master first with its endpoint known from a handshake, the
 *                 master's REPLCONF GETACK first; with and without --ports:
 *                 kind 'replication', never unpaired, never judged, the
 *                 registry learns the master
 *   shape         a master's stream told by three commands in a row to a
 *                 side that sent nothing (no ACK in the capture); not
 *                 by a subscriber's confirmations, nor by a broken run
 *   threads       --threads 1, 2, 3 give the same rows
 *   real          tests/fixtures/cli/midstream-real.pcap, a real capture of a
 *                 3+3 cluster whose replication links predate it
 *                 (bench/midstream-capture.sh -n 800 -c 4 -P 16): the three
 *                 links recognised, nothing unpaired
 *   start hole    tests/fixtures/cli/glide-drops.pcap.gz, valkey-glide picked
 *                 up mid-stream under kernel drops: a reply lost before the
 *                 server's first captured packet is a GAP, not the next one's
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"
#include "tests/helpers/pktgen.h"

#define T0 1700000000000000LL

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_midstream", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(tmpdir);
}

static const char ACK1[] = "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$3\r\n100\r\n";
static const char ACK2[] = "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$3\r\n200\r\n";
static const char GETACK[] = "*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";
static const char SET[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
static const char PING[] = "*1\r\n$4\r\nPING\r\n";
static const char GET[] = "*2\r\n$3\r\nGET\r\n$1\r\na\r\n";
static const char VAL[] = "$1\r\nx\r\n";

/* A conversation template: client cli:cport, server srv:sport. */
static void conv(pg_conv *c, pg_file *f, const char *cli, uint16_t cport, const char *srv,
                 uint16_t sport, int64_t *now)
{
    pg_packet t;
    pg_packet_init(&t);
    t.src = cli;
    t.dst = srv;
    t.sport = cport;
    t.dport = sport;
    pg_conv_init(c, &t, 1000u + cport, 500000u + sport, *now);
    c->file = f;
    *now += 1000;
}

/* One segment, at *now (then 100 us later). */
static void say(pg_conv *c, int from_server, const char *data, int64_t *now)
{
    c->ts_us = *now;
    assert_int_equal(pg_conv_send(c, from_server, data, strlen(data)), 0);
    *now += 100;
}

/*
 * The synthetic capture. Node ports 50001..50006 are in no built-in list and
 * the clients' ports are lower, so neither a port nor the port order tells.
 *   m0   10.0.0.2:40002 - 10.0.1.1:50001 mid-stream, before h's handshake:
 *        the server's first bytes "get\r\n" (the tail of a value) look like
 *        an inline GET: oriented by that shape, the wrong way round
 *   h    10.0.0.1:40001 -> 10.0.1.1:50001 with its handshake, GET answered
 *   m    10.0.0.3:40003 - 10.0.1.1:50001 mid-stream, after it, the same bytes
 *        first: oriented by the handshake ("known"), then two GETs answered
 *   rA   replica 10.0.2.1:40011 - master 10.0.1.5:50005, replica first
 *   rB   replica 10.0.2.2:40012 - master 10.0.1.6:50006, master first,
 *        10.0.1.6:50006 never seen serving
 *   h7   10.0.0.7:40007 -> 10.0.1.7:50007 with its handshake, GET answered
 *   rC   replica 10.0.2.3:40013 - master 10.0.1.7:50007, master first
 *   rD   replica 10.0.2.4:40014 - master 10.0.1.8:50008, the master's
 *        REPLCONF GETACK * first
 */
static void write_capture(const char *path)
{
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    pg_conv m0, h, m, ra, rb, h7, rc, rd;
    int64_t now = T0;
    assert_non_null(f);
    conv(&m0, f, "10.0.0.2", 40002, "10.0.1.1", 50001, &now);
    say(&m0, 1, "get\r\n", &now);
    conv(&h, f, "10.0.0.1", 40001, "10.0.1.1", 50001, &now);
    h.ts_us = now;
    assert_int_equal(pg_conv_handshake(&h), 0);
    now = h.ts_us;
    say(&h, 0, GET, &now);
    say(&h, 1, VAL, &now);
    conv(&m, f, "10.0.0.3", 40003, "10.0.1.1", 50001, &now);
    say(&m, 1, "get\r\n", &now);
    for (int i = 0; i < 2; i++) {
        say(&m, 0, GET, &now);
        say(&m, 1, VAL, &now);
    }
    conv(&ra, f, "10.0.2.1", 40011, "10.0.1.5", 50005, &now);
    say(&ra, 0, ACK1, &now);
    say(&ra, 1, SET, &now);
    say(&ra, 1, SET, &now);
    say(&ra, 1, PING, &now);
    say(&ra, 0, ACK2, &now);
    conv(&rb, f, "10.0.2.2", 40012, "10.0.1.6", 50006, &now);
    say(&rb, 1, SET, &now);
    say(&rb, 1, SET, &now);
    say(&rb, 1, SET, &now);
    say(&rb, 0, ACK1, &now);
    say(&rb, 1, SET, &now);
    say(&rb, 0, ACK2, &now);
    conv(&h7, f, "10.0.0.7", 40007, "10.0.1.7", 50007, &now);
    h7.ts_us = now;
    assert_int_equal(pg_conv_handshake(&h7), 0);
    now = h7.ts_us;
    say(&h7, 0, GET, &now);
    say(&h7, 1, VAL, &now);
    conv(&rc, f, "10.0.2.3", 40013, "10.0.1.7", 50007, &now);
    say(&rc, 1, SET, &now);
    say(&rc, 1, SET, &now);
    say(&rc, 0, ACK1, &now);
    conv(&rd, f, "10.0.2.4", 40014, "10.0.1.8", 50008, &now);
    say(&rd, 1, GETACK, &now);
    say(&rd, 0, ACK1, &now);
    say(&rd, 1, SET, &now);
    assert_int_equal(pg_file_close(f), 0);
}

/* analyze capture into db with the extra arguments (NULL-terminated, at most
 * 4); it must exit 0. */
static void analyze(const char *capture, const char *db, const char *const *extra)
{
    const char *args[12] = {"analyze", capture, "--db", db, "--force", "-q"};
    size_t n = 6;
    th_run r;
    for (size_t i = 0; extra && extra[i] && n < 11; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    assert_int_equal(th_slotscope(args, &r, NULL, NULL, 0), 0);
    if (th_exit_code(&r) != 0)
        fail_msg("slotscope exited %d: %s", th_exit_code(&r), r.err);
    th_run_free(&r);
}

/* The connection row whose server or client is ep: an integer column. */
static int64_t conn_int(sqlite3 *db, const char *ep, const char *col)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM connections WHERE src = ?1 OR dst = ?1", col);
    assert_int_equal(th_sql_int_p(db, "SELECT count(*) FROM connections WHERE src = ?1 OR dst = ?1",
                                  ep), 1);
    return th_sql_int_p(db, sql, ep);
}

/* 1 when the row of ep has the text columns src, dst, side_source, kind. */
static void assert_conn(sqlite3 *db, const char *ep, const char *src, const char *dst,
                        const char *side, const char *kind)
{
    int64_t n = th_sql_int_p(db,
                             "SELECT count(*) FROM connections WHERE (src = ?1 OR dst = ?1) AND "
                             "src = ?2 AND dst = ?3 AND side_source = ?4 AND kind = ?5",
                             ep, src, dst, side, kind);
    if (n != 1) {
        sqlite3_stmt *st;
        char got[512] = "";
        if (sqlite3_prepare_v2(db, "SELECT src, dst, side_source, kind FROM connections "
                                   "WHERE src = ?1 OR dst = ?1", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, ep, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW)
                snprintf(got, sizeof got, "%s %s %s %s", sqlite3_column_text(st, 0),
                         sqlite3_column_text(st, 1), sqlite3_column_text(st, 2),
                         sqlite3_column_text(st, 3));
            sqlite3_finalize(st);
        }
        fail_msg("%s: want %s %s %s %s, got %s", ep, src, dst, side, kind, got);
    }
}

static int64_t counter(sqlite3 *db, const char *name)
{
    return th_sql_int_p(db, "SELECT value FROM counters WHERE name = ?1", name);
}

/* Requests, replies, unpaired requests and replies of ep's connection. */
static void assert_pairing(sqlite3 *db, const char *ep, int64_t req, int64_t rep, int64_t ureq,
                           int64_t urep)
{
    assert_int_equal(conn_int(db, ep, "requests"), req);
    assert_int_equal(conn_int(db, ep, "replies"), rep);
    assert_int_equal(conn_int(db, ep, "unpaired_requests"), ureq);
    assert_int_equal(conn_int(db, ep, "unpaired_replies"), urep);
    assert_int_equal(conn_int(db, ep, "out_of_sync"), 0);
}

static sqlite3 *open_db(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return db;
}

/* What every run on the synthetic capture shows about the replication links,
 * however they were oriented: their kind, no pairing figures, the masters. */
static void assert_links(sqlite3 *db, int with_ports)
{
    /* rA: the replica's two ACKs are its requests (no reply by design) */
    assert_conn(db, "10.0.2.1:40011", "10.0.2.1:40011", "10.0.1.5:50005",
                with_ports ? "port" : "shape", "replication");
    assert_pairing(db, "10.0.2.1:40011", 2, 0, 0, 0);
    /* rB: without --ports the master's SETs made it the client; its three
     * queued SETs were dropped at the replica's ACK, nothing decoded after */
    assert_conn(db, "10.0.2.2:40012", "10.0.2.2:40012", "10.0.1.6:50006",
                with_ports ? "port" : "shape", "replication");
    assert_pairing(db, "10.0.2.2:40012", with_ports ? 2 : 0, 0, 0, 0);
    /* rC: the master known from h7's handshake */
    assert_conn(db, "10.0.2.3:40013", "10.0.2.3:40013", "10.0.1.7:50007",
                with_ports ? "port" : "known", "replication");
    assert_pairing(db, "10.0.2.3:40013", 1, 0, 0, 0);
    /* rD: GETACK comes from the master */
    assert_conn(db, "10.0.2.4:40014", "10.0.2.4:40014", "10.0.1.8:50008",
                with_ports ? "port" : "shape", "replication");
    assert_pairing(db, "10.0.2.4:40014", 1, 0, 0, 0);
    assert_int_equal(counter(db, "replication_connections"), 4);
    assert_int_equal(counter(db, "replication_midstream"), 4);
    assert_int_equal(counter(db, "replication_reversed"), with_ports ? 0 : 1);
    assert_int_equal(counter(db, "replication_skipped"), with_ports ? 0 : 3);
    /* never judged; the masters are masters; no replica's source endpoint
     * became a node */
    assert_int_equal(th_sql_int(db, "SELECT count(*) FROM findings", NULL), 0);
    assert_int_equal(th_sql_int(db, "SELECT count(*) FROM nodes WHERE role = 'master' AND observed IN "
                                    "('10.0.1.5:50005', '10.0.1.6:50006', '10.0.1.7:50007', "
                                    "'10.0.1.8:50008')", NULL), 4);
    assert_int_equal(th_sql_int(db, "SELECT count(*) FROM nodes WHERE observed LIKE '10.0.2.%'",
                                NULL), 0);
    /* the replicas are node clients; rB's, found reversed, is not in the
     * clients table (its connection counted for the master's host) */
    assert_int_equal(th_sql_int(db, "SELECT count(*) FROM clients WHERE name LIKE '10.0.2.%' "
                                    "AND is_node = 1", NULL), with_ports ? 4 : 3);
}

static void test_orientation_and_links(void **state)
{
    char cap[512], db[512];
    (void)state;
    snprintf(cap, sizeof cap, "%s", th_path(tmpdir, "mid.pcap"));
    snprintf(db, sizeof db, "%s", th_path(tmpdir, "mid.db"));
    write_capture(cap);
    analyze(cap, db, NULL);
    sqlite3 *d = open_db(db);
    /* m0: before any handshake to 10.0.1.1:50001, the shape of "get\r\n"
     * decided, the wrong way round (what the capture had shown then) */
    assert_conn(d, "10.0.0.2:40002", "10.0.1.1:50001", "10.0.0.2:40002", "shape", "client");
    /* h, with its handshake */
    assert_conn(d, "10.0.0.1:40001", "10.0.0.1:40001", "10.0.1.1:50001", "syn", "client");
    assert_pairing(d, "10.0.0.1:40001", 1, 1, 0, 0);
    /* m: after it, oriented by it. "get\r\n" is skipped (a resync); the
     * first GET is not trusted (bytes were skipped before it), its reply
     * shows where replies start, the second GET pairs */
    assert_conn(d, "10.0.0.3:40003", "10.0.0.3:40003", "10.0.1.1:50001", "known", "client");
    assert_pairing(d, "10.0.0.3:40003", 2, 2, 1, 1);
    assert_links(d, 0);
    sqlite3_close(d);

    /* --ports names the node ports: the links the same, oriented by port */
    analyze(cap, db, TH_ARGS("--ports", "50001-50008"));
    d = open_db(db);
    assert_conn(d, "10.0.0.2:40002", "10.0.0.2:40002", "10.0.1.1:50001", "port", "client");
    assert_conn(d, "10.0.0.3:40003", "10.0.0.3:40003", "10.0.1.1:50001", "port", "client");
    assert_links(d, 1);
    sqlite3_close(d);
}

/* Every connection row and counter, in a text. */
static char *rows_of(const char *path)
{
    sqlite3 *db = open_db(path);
    sqlite3_stmt *st;
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT id || src || dst || side_source || kind || requests "
                                        "|| replies || unpaired_requests || unpaired_replies FROM "
                                        "connections UNION ALL SELECT name || value FROM counters "
                                        "ORDER BY 1", -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW && len + 256 < cap)
        len += (size_t)snprintf(out + len, cap - len, "%s\n", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

/* --threads 2 and 3 give cap the connection rows and counters of one thread
 * (db is overwritten). */
static void assert_threads_agree(const char *cap, const char *db)
{
    analyze(cap, db, TH_ARGS("--threads", "1"));
    char *one = rows_of(db);
    for (int n = 2; n <= 3; n++) {
        char nt[4];
        snprintf(nt, sizeof nt, "%d", n);
        analyze(cap, db, TH_ARGS("--threads", nt));
        char *other = rows_of(db);
        assert_string_equal(other, one);
        free(other);
    }
    free(one);
}

static void test_threads_agree(void **state)
{
    char cap[512], db[512];
    (void)state;
    snprintf(cap, sizeof cap, "%s", th_path(tmpdir, "mid.pcap"));
    snprintf(db, sizeof db, "%s", th_path(tmpdir, "mid-t.db"));
    write_capture(cap);
    assert_threads_agree(cap, db);
}

static const char SUBOK[] = "*3\r\n$9\r\nsubscribe\r\n$2\r\nc1\r\n:1\r\n";
static const char OK[] = "+OK\r\n";
static const char LRANGE[] = "*4\r\n$6\r\nLRANGE\r\n$1\r\nq\r\n$1\r\n0\r\n$2\r\n-1\r\n";

/*
 * A master's stream told by its own shape, with no ACK from the replica
 * in the capture. 10.0.1.9:50009 is known to serve (h9's handshake); all
 * three others are picked up mid-stream and the client side sends nothing
 * before the server's messages:
 *   rE   10.0.2.5:40015: SET, PING, SET: three commands in a row, the
 *        master's stream (nothing more of it decoded: the SET after)
 *   s    10.0.0.10:40020: three SUBSCRIBE confirmations (a command's name
 *        first, but a subscriber's), then its GET is answered: a client
 *   b    10.0.0.11:40021: SET, +OK, SET, SET (no run of three), then its
 *        GET is answered: a client
 *   lq   10.0.0.12:40022: the tail of a request, three LRANGEs, then three
 *        arrays shaped like SETs (a list of them): the answers of requests
 *        the client sent, whether pairing trusts them or not: a client
 */
static void write_shape_capture(const char *path)
{
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    pg_conv h9, re, sb, br, lq;
    int64_t now = T0;
    assert_non_null(f);
    conv(&h9, f, "10.0.0.9", 40009, "10.0.1.9", 50009, &now);
    h9.ts_us = now;
    assert_int_equal(pg_conv_handshake(&h9), 0);
    now = h9.ts_us;
    say(&h9, 0, GET, &now);
    say(&h9, 1, VAL, &now);
    conv(&re, f, "10.0.2.5", 40015, "10.0.1.9", 50009, &now);
    say(&re, 1, SET, &now);
    say(&re, 1, PING, &now);
    say(&re, 1, SET, &now);
    say(&re, 1, SET, &now);
    conv(&sb, f, "10.0.0.10", 40020, "10.0.1.9", 50009, &now);
    for (int i = 0; i < 3; i++)
        say(&sb, 1, SUBOK, &now);
    conv(&br, f, "10.0.0.11", 40021, "10.0.1.9", 50009, &now);
    say(&br, 1, SET, &now);
    say(&br, 1, OK, &now);
    say(&br, 1, SET, &now);
    say(&br, 1, SET, &now);
    say(&br, 0, GET, &now);
    say(&br, 1, VAL, &now);
    conv(&lq, f, "10.0.0.12", 40022, "10.0.1.9", 50009, &now);
    say(&lq, 0, "x\r\n", &now);
    for (int i = 0; i < 3; i++)
        say(&lq, 0, LRANGE, &now);
    for (int i = 0; i < 3; i++)
        say(&lq, 1, SET, &now);
    assert_int_equal(pg_file_close(f), 0);
}

static void test_master_stream_shape(void **state)
{
    char cap[512], db[512];
    (void)state;
    snprintf(cap, sizeof cap, "%s", th_path(tmpdir, "shape.pcap"));
    snprintf(db, sizeof db, "%s", th_path(tmpdir, "shape.db"));
    write_shape_capture(cap);
    analyze(cap, db, NULL);
    sqlite3 *d = open_db(db);
    assert_conn(d, "10.0.2.5:40015", "10.0.2.5:40015", "10.0.1.9:50009", "known", "replication");
    assert_pairing(d, "10.0.2.5:40015", 0, 0, 0, 0);
    assert_int_equal(counter(d, "replication_connections"), 1);
    assert_int_equal(counter(d, "replication_midstream"), 1);
    assert_int_equal(counter(d, "replication_reversed"), 0);
    /* the subscriber: its confirmations answer nothing seen; the GET after
     * them is paired (the connection is a subscriber's, not a stream) */
    assert_conn(d, "10.0.0.10:40020", "10.0.0.10:40020", "10.0.1.9:50009", "known", "client");
    /* the broken run: four unanswered "replies", then the GET paired */
    assert_conn(d, "10.0.0.11:40021", "10.0.0.11:40021", "10.0.1.9:50009", "known", "client");
    assert_int_equal(conn_int(d, "10.0.0.11:40021", "requests"), 1);
    assert_int_equal(conn_int(d, "10.0.0.11:40021", "unpaired_requests"), 0);
    assert_int_equal(conn_int(d, "10.0.0.11:40021", "unpaired_replies"), 4);
    assert_conn(d, "10.0.0.12:40022", "10.0.0.12:40022", "10.0.1.9:50009", "known", "client");
    assert_int_equal(conn_int(d, "10.0.0.12:40022", "requests"), 3);
    assert_int_equal(th_sql_int(d, "SELECT count(*) FROM findings", NULL), 0);
    assert_int_equal(th_sql_int(d, "SELECT count(*) FROM nodes WHERE role = 'master' AND "
                                   "observed = '10.0.1.9:50009'", NULL), 1);
    sqlite3_close(d);
    assert_threads_agree(cap, db);
}

/* The real capture: 3 links, each either way round, nothing unpaired. */
static void test_real_capture(void **state)
{
    char db[512];
    (void)state;
    snprintf(db, sizeof db, "%s", th_path(tmpdir, "real.db"));
    for (int ports = 0; ports <= 1; ports++) {
        analyze(SS_FIXTURES "/cli/midstream-real.pcap", db,
                ports ? TH_ARGS("--ports", "31000-31005") : NULL);
        sqlite3 *d = open_db(db);
        assert_int_equal(counter(d, "mid_stream"), 3);
        assert_int_equal(counter(d, "replication_connections"), 3);
        assert_int_equal(counter(d, "replication_midstream"), 3);
        assert_int_equal(counter(d, "replication_reversed"), 0);
        assert_int_equal(counter(d, "unpaired_requests"), 0);
        assert_int_equal(counter(d, "unpaired_replies"), 0);
        assert_int_equal(counter(d, "out_of_sync_connections"), 0);
        /* the replicas (127.0.1.4-6, their bind-source-addr) are the
         * clients of links to the three masters */
        assert_int_equal(th_sql_int(d, "SELECT count(*) FROM connections WHERE kind = 'replication' "
                                       "AND src LIKE '127.0.1.%' AND dst IN ('127.0.0.1:31000', "
                                       "'127.0.0.1:31001', '127.0.0.1:31002')", NULL), 3);
        assert_int_equal(th_sql_int(d, "SELECT count(*) FROM connections WHERE kind = 'client' "
                                       "AND (unpaired_requests > 0 OR unpaired_replies > 0)", NULL), 0);
        assert_int_equal(th_sql_int(d, "SELECT count(*) FROM nodes WHERE role = 'master'", NULL), 3);
        assert_int_equal(th_sql_int(d, "SELECT count(*) FROM nodes WHERE observed LIKE '127.0.1.%'",
                                    NULL), 0);
        sqlite3_close(d);
    }
}

/* valkey-glide's traffic from a real capture under load with kernel drops
 * (scripts/libs/scenario.py --midstream --load --buffer 512, its own
 * connections cut out by source address). Its connection from port 57221
 * to 33201 lost the +OK of its first request before the server's first
 * captured packet; the client's ACKs show those bytes. Taken for the next
 * request's, the replies ran one off for 54 commands (a SET answered by a
 * bulk, a GET by +OK, ASKs put on other commands: false findings). Now the
 * lost bytes are a start gap and nothing is paired across them. */
static void test_start_hole_real(void **state)
{
    char db[512];
    (void)state;
    snprintf(db, sizeof db, "%s", th_path(tmpdir, "glide.db"));
    analyze(SS_FIXTURES "/cli/glide-drops.pcap.gz", db, TH_ARGS("--store-commands"));
    sqlite3 *d = open_db(db);
    assert_int_equal(counter(d, "start_gaps"), 1);
    /* the client's first request carried an ACK short of the lost bytes */
    assert_int_equal(counter(d, "start_gaps_answered_none"), 0);
    assert_int_equal(th_sql_int(d, "SELECT count(*) FROM commands WHERE outcome = 'ok' AND "
                                   "((name IN ('SET', 'MSET') AND reply_type <> '+' AND "
                                   "reply_type <> '-') OR (name = 'GET' AND reply_type = '+'))",
                                NULL),
                     0);
    assert_int_equal(th_sql_int(d, "SELECT count(*) FROM findings", NULL), 0);
    assert_true(counter(d, "paired") > 450); /* it comes back: 475 of 480 */
    sqlite3_close(d);
}

/* A server-side capture with real RTT (scripts/rtt/rtt-capture.sh
 * --delay-us 2000 -c 4 -d 16384: 16 KiB SETs), two connections cut out:
 * each starts with the client's bare ACKs short of the server's first
 * captured byte (+OKs in flight when the capture began), then its first
 * requests, which already acknowledge those bytes. Start gaps the client
 * had received before it sent anything captured: they answer none of its
 * requests, so nothing is given up (each connection lost 16 requests and
 * 16 replies to them before). Independently checked by
 * scripts/rtt/pairs-check.py: every reply's packet acknowledges its
 * request. The 8 unpaired are the last ones, cut by the capture's end.
 * The same with threads (the read-ahead ring carries the GAP's flag). */
static void test_start_hole_rtt(void **state)
{
    static const char *const threads[] = {"1", "2", "3"};
    (void)state;
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        char db[512];
        snprintf(db, sizeof db, "%s", th_path(tmpdir, "rtt.db"));
        analyze(SS_FIXTURES "/cli/rtt-start-gap.pcap.gz", db,
                TH_ARGS("--store-commands", "--threads", threads[t]));
        sqlite3 *d = open_db(db);
        assert_int_equal(counter(d, "start_gaps"), 2);
        assert_int_equal(counter(d, "start_gaps_answered_none"), 2);
        assert_int_equal(counter(d, "unpaired_replies"), 0);
        assert_int_equal(counter(d, "paired"), 307);
        assert_int_equal(counter(d, "unpaired_requests"), 8);
        /* no unpaired request before a paired one on its connection */
        assert_int_equal(th_sql_int(d, "SELECT count(*) FROM commands u WHERE outcome <> 'ok' AND "
                                       "EXISTS (SELECT 1 FROM commands p WHERE p.conn = u.conn AND "
                                       "p.outcome = 'ok' AND p.seq > u.seq)", NULL), 0);
        assert_int_equal(th_sql_int(d, "SELECT count(*) FROM commands WHERE outcome = 'ok' AND "
                                       "(name <> 'SET' OR reply_type <> '+')", NULL), 0);
        sqlite3_close(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_orientation_and_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_agree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_master_stream_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_capture, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_hole_real, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_hole_rtt, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
