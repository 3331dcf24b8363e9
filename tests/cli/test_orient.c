/*
 * test_orient.c - a connection picked up mid-stream is oriented by what the
 * capture proved before it, whichever side talks first (issue 12), end to
 * end (slotscope analyze, the database).
 *
 * One crafted capture. Node ports 50001.. are in no built-in list and every
 * client port is lower, so neither the ports nor their order tell; each
 * proof is followed by two mid-stream connections to the endpoint it
 * proves, one where the client talks first and one where the server does,
 * with first bytes that look like a request ("*1 $4 PING", an array reply):
 *
 *   known        a handshake to 10.0.1.1:50001 (h1, which carries the
 *                commands below)
 *   redirect     -MOVED to 10.0.1.2:50002, -ASK to 10.0.1.3:50003; the same
 *                server-first bytes before the MOVED go by their shape, the
 *                wrong way round (the capture had not proved it yet)
 *   cluster      CLUSTER SLOTS naming 10.0.1.4:50004 and its replica
 *                10.0.1.9:50009, CLUSTER SHARDS naming 10.0.1.5:50005,
 *                CLUSTER NODES naming 10.0.1.6:50006 and its bus port 60006:
 *                two bus links to 60006, each side first, go to the bus path
 *   replication  a replica's REPLCONF listening-port 50017 (with PSYNC and
 *                its handshake): its own endpoint serves; a link without
 *                PSYNC to 10.0.1.8:50008 recognised by the replica's ACK
 *                proves the master: a second link whose master talks first
 *                is oriented right away (not reversed), a third replica
 *                first, and a client connection; links without PSYNC to the
 *                CLUSTER SLOTS master 10.0.1.4:50004, each side first
 *
 * Then --threads 1, 2, 3, 4 (and sharded 2) give the same rows, and the
 * report's capture quality part says what oriented them.
 *
 * real         tests/fixtures/cli/orient-real.pcap (bench/orient-capture.sh),
 *              a real 3+3 cluster whose replication links and three clients
 *              predate the capture: oriented by the CLUSTER SLOTS reply a new
 *              client asked for, whichever side spoke first; --threads 1-3
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
    return th_tmpdir_new("ss_orient", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(tmpdir);
}

static const char ACK1[] = "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$3\r\n100\r\n";
static const char ACK2[] = "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$3\r\n200\r\n";
static const char SET[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
static const char PING[] = "*1\r\n$4\r\nPING\r\n";
static const char GET[] = "*2\r\n$3\r\nGET\r\n$1\r\na\r\n";
static const char VAL[] = "$1\r\nx\r\n";
/* an array reply that looks like a request: what a server may send first */
static const char LOOKS_LIKE_REQUEST[] = "*1\r\n$4\r\nPING\r\n";
/* two cluster bus messages' first bytes ("RCmb", then the header) */
static const char BUS[] = "RCmb\x00\x00\x08\x30\x00\x01\x00\x00";

#define ID40 "0123456789abcdef0123456789abcdef01234567"

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
static void say(pg_conv *c, int from_server, const char *data, size_t len, int64_t *now)
{
    c->ts_us = *now;
    assert_int_equal(pg_conv_send(c, from_server, data, len), 0);
    *now += 100;
}
#define SAY(c, side, text, now) say((c), (side), (text), strlen(text), (now))

/* The handshake of c, at *now. */
static void handshake(pg_conv *c, int64_t *now)
{
    c->ts_us = *now;
    assert_int_equal(pg_conv_handshake(c), 0);
    *now = c->ts_us;
}

/* A client connection picked up mid-stream: two GETs answered, the client
 * first, or the server first with bytes that look like a request. */
static void client_mid(pg_file *f, const char *cli, uint16_t cport, const char *srv,
                       uint16_t sport, int server_first, int64_t *now)
{
    pg_conv c;
    conv(&c, f, cli, cport, srv, sport, now);
    if (server_first)
        SAY(&c, 1, LOOKS_LIKE_REQUEST, now);
    for (int i = 0; i < 2; i++) {
        SAY(&c, 0, GET, now);
        SAY(&c, 1, VAL, now);
    }
}

/* A replication link picked up mid-stream (no PSYNC): the replica's two
 * ACKs and the master's stream, the replica first or the master first. */
static void repl_mid(pg_file *f, const char *replica, uint16_t rport, const char *master,
                     uint16_t mport, int master_first, int64_t *now)
{
    pg_conv c;
    conv(&c, f, replica, rport, master, mport, now);
    if (master_first) {
        SAY(&c, 1, SET, now);
        SAY(&c, 1, SET, now);
    }
    SAY(&c, 0, ACK1, now);
    SAY(&c, 1, SET, now);
    SAY(&c, 1, PING, now);
    SAY(&c, 0, ACK2, now);
}

/* A request on h1 and its reply. */
static void ask(pg_conv *h, const char *req, const char *reply, int64_t *now)
{
    SAY(h, 0, req, now);
    SAY(h, 1, reply, now);
}

static void write_capture(const char *path)
{
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    pg_conv h1, p, bc, bs;
    char nodes[512], bulk[600];
    int64_t now = T0;
    assert_non_null(f);
    /* known */
    conv(&h1, f, "10.0.0.1", 40001, "10.0.1.1", 50001, &now);
    handshake(&h1, &now);
    ask(&h1, GET, VAL, &now);
    client_mid(f, "10.0.0.11", 40011, "10.0.1.1", 50001, 0, &now);
    client_mid(f, "10.0.0.12", 40012, "10.0.1.1", 50001, 1, &now);
    /* redirect: before the MOVED, then after it */
    client_mid(f, "10.0.0.20", 40020, "10.0.1.2", 50002, 1, &now);
    ask(&h1, GET, "-MOVED 15495 10.0.1.2:50002\r\n", &now);
    ask(&h1, GET, "-ASK 15495 10.0.1.3:50003\r\n", &now);
    client_mid(f, "10.0.0.21", 40021, "10.0.1.2", 50002, 0, &now);
    client_mid(f, "10.0.0.22", 40022, "10.0.1.2", 50002, 1, &now);
    client_mid(f, "10.0.0.23", 40023, "10.0.1.3", 50003, 0, &now);
    client_mid(f, "10.0.0.24", 40024, "10.0.1.3", 50003, 1, &now);
    /* cluster: SLOTS, SHARDS, NODES */
    ask(&h1, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n",
        "*1\r\n*4\r\n:0\r\n:16383\r\n"
        "*3\r\n$8\r\n10.0.1.4\r\n:50004\r\n$40\r\n" ID40 "\r\n"
        "*3\r\n$8\r\n10.0.1.9\r\n:50009\r\n$40\r\n" ID40 "\r\n", &now);
    client_mid(f, "10.0.0.41", 40041, "10.0.1.4", 50004, 0, &now);
    client_mid(f, "10.0.0.42", 40042, "10.0.1.4", 50004, 1, &now);
    client_mid(f, "10.0.0.92", 40092, "10.0.1.9", 50009, 1, &now);
    ask(&h1, "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n",
        "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n"
        "*1\r\n*8\r\n$2\r\nid\r\n$40\r\n" ID40 "\r\n$4\r\nport\r\n:50005\r\n"
        "$2\r\nip\r\n$8\r\n10.0.1.5\r\n$4\r\nrole\r\n$6\r\nmaster\r\n", &now);
    client_mid(f, "10.0.0.51", 40051, "10.0.1.5", 50005, 0, &now);
    client_mid(f, "10.0.0.52", 40052, "10.0.1.5", 50005, 1, &now);
    snprintf(nodes, sizeof nodes,
             ID40 " 10.0.1.6:50006@60006 myself,master - 0 0 1 connected 0-16383\n");
    snprintf(bulk, sizeof bulk, "$%zu\r\n%s\r\n", strlen(nodes), nodes);
    ask(&h1, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n", bulk, &now);
    client_mid(f, "10.0.0.61", 40061, "10.0.1.6", 50006, 0, &now);
    client_mid(f, "10.0.0.62", 40062, "10.0.1.6", 50006, 1, &now);
    conv(&bc, f, "10.0.2.10", 45010, "10.0.1.6", 60006, &now);
    say(&bc, 0, BUS, sizeof BUS - 1, &now);
    say(&bc, 1, BUS, sizeof BUS - 1, &now);
    conv(&bs, f, "10.0.2.11", 45011, "10.0.1.6", 60006, &now);
    say(&bs, 1, BUS, sizeof BUS - 1, &now);
    say(&bs, 0, BUS, sizeof BUS - 1, &now);
    /* replication with its PSYNC: the replica's listening port */
    conv(&p, f, "10.0.3.1", 40031, "10.0.1.7", 50007, &now);
    handshake(&p, &now);
    ask(&p, "*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$5\r\n50017\r\n", "+OK\r\n", &now);
    ask(&p, "*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n",
        "+FULLRESYNC 8de1787ba490483314a4d30f1c628bc5025eb761 0\r\n$5\r\nREDIS", &now);
    SAY(&p, 1, SET, &now);
    client_mid(f, "10.0.0.71", 40071, "10.0.3.1", 50017, 0, &now);
    client_mid(f, "10.0.0.72", 40072, "10.0.3.1", 50017, 1, &now);
    /* replication without PSYNC: the first link proves its master */
    repl_mid(f, "10.0.2.1", 40081, "10.0.1.8", 50008, 0, &now);
    repl_mid(f, "10.0.2.2", 40082, "10.0.1.8", 50008, 1, &now);
    repl_mid(f, "10.0.2.3", 40083, "10.0.1.8", 50008, 0, &now);
    client_mid(f, "10.0.0.80", 40080, "10.0.1.8", 50008, 1, &now);
    /* ... and links to a master named in CLUSTER SLOTS */
    repl_mid(f, "10.0.2.4", 40084, "10.0.1.4", 50004, 1, &now);
    repl_mid(f, "10.0.2.5", 40085, "10.0.1.4", 50004, 0, &now);
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

static sqlite3 *open_db(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return db;
}

/* The connection whose client-side host:port is ep (either column): its
 * src, dst, side_source and kind, and its requests, replies, unpaired
 * requests and replies, as one text ("src dst side kind req rep ureq urep"). */
static void conn_text(sqlite3 *db, const char *ep, char *out, size_t n)
{
    sqlite3_stmt *st;
    out[0] = '\0';
    assert_int_equal(th_sql_int_p(db, "SELECT count(*) FROM connections WHERE src = ?1 OR dst = ?1",
                                  ep), 1);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT src, dst, side_source, kind, requests, replies, "
                                        "unpaired_requests, unpaired_replies, out_of_sync FROM "
                                        "connections WHERE src = ?1 OR dst = ?1", -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, ep, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(out, n, "%s %s %s %s %lld %lld %lld %lld%s", sqlite3_column_text(st, 0),
             sqlite3_column_text(st, 1), sqlite3_column_text(st, 2), sqlite3_column_text(st, 3),
             (long long)sqlite3_column_int64(st, 4), (long long)sqlite3_column_int64(st, 5),
             (long long)sqlite3_column_int64(st, 6), (long long)sqlite3_column_int64(st, 7),
             sqlite3_column_int64(st, 8) ? " out-of-sync" : "");
    sqlite3_finalize(st);
}

static void assert_conn(sqlite3 *db, const char *ep, const char *want)
{
    char got[512];
    conn_text(db, ep, got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("%s: want \"%s\", got \"%s\"", ep, want, got);
}

/* Only its src, dst, side_source and kind (the pairing of a connection
 * taken the wrong way round is not the point). */
static void assert_conn_side(sqlite3 *db, const char *ep, const char *want)
{
    char got[512];
    size_t n = strlen(want);
    conn_text(db, ep, got, sizeof got);
    if (strncmp(got, want, n) != 0 || got[n] != ' ')
        fail_msg("%s: want \"%s ...\", got \"%s\"", ep, want, got);
}

static int64_t counter(sqlite3 *db, const char *name)
{
    return th_sql_int_p(db, "SELECT value FROM counters WHERE name = ?1", name);
}

/* The client connections: the client first pairs both GETs; the server
 * first leaves its request-like reply unpaired, and the first GET after
 * the skipped bytes is not trusted (its reply shows where replies start). */
#define CLIENT_FIRST(src, dst, side) src " " dst " " side " client 2 2 0 0"
#define SERVER_FIRST(src, dst, side) src " " dst " " side " client 2 3 0 1"

static void assert_orientation(sqlite3 *d)
{
    /* known */
    assert_conn(d, "10.0.0.11:40011", CLIENT_FIRST("10.0.0.11:40011", "10.0.1.1:50001", "known"));
    assert_conn(d, "10.0.0.12:40012", SERVER_FIRST("10.0.0.12:40012", "10.0.1.1:50001", "known"));
    /* redirect: before the MOVED the request-like reply decided, wrongly */
    assert_conn_side(d, "10.0.0.20:40020", "10.0.1.2:50002 10.0.0.20:40020 shape client");
    assert_conn(d, "10.0.0.21:40021", CLIENT_FIRST("10.0.0.21:40021", "10.0.1.2:50002", "redirect"));
    assert_conn(d, "10.0.0.22:40022", SERVER_FIRST("10.0.0.22:40022", "10.0.1.2:50002", "redirect"));
    assert_conn(d, "10.0.0.23:40023", CLIENT_FIRST("10.0.0.23:40023", "10.0.1.3:50003", "redirect"));
    assert_conn(d, "10.0.0.24:40024", SERVER_FIRST("10.0.0.24:40024", "10.0.1.3:50003", "redirect"));
    /* cluster */
    assert_conn(d, "10.0.0.41:40041", CLIENT_FIRST("10.0.0.41:40041", "10.0.1.4:50004", "cluster"));
    assert_conn(d, "10.0.0.42:40042", SERVER_FIRST("10.0.0.42:40042", "10.0.1.4:50004", "cluster"));
    assert_conn(d, "10.0.0.92:40092", SERVER_FIRST("10.0.0.92:40092", "10.0.1.9:50009", "cluster"));
    assert_conn(d, "10.0.0.51:40051", CLIENT_FIRST("10.0.0.51:40051", "10.0.1.5:50005", "cluster"));
    assert_conn(d, "10.0.0.52:40052", SERVER_FIRST("10.0.0.52:40052", "10.0.1.5:50005", "cluster"));
    assert_conn(d, "10.0.0.61:40061", CLIENT_FIRST("10.0.0.61:40061", "10.0.1.6:50006", "cluster"));
    assert_conn(d, "10.0.0.62:40062", SERVER_FIRST("10.0.0.62:40062", "10.0.1.6:50006", "cluster"));
    /* the bus links: the bus port named too, nothing decoded as RESP */
    assert_conn_side(d, "10.0.2.10:45010", "10.0.2.10:45010 10.0.1.6:60006 cluster");
    assert_conn_side(d, "10.0.2.11:45011", "10.0.2.11:45011 10.0.1.6:60006 cluster");
    assert_int_equal(counter(d, "cluster_bus_connections"), 2);
    assert_int_equal(th_sql_int(d, "SELECT sum(requests + replies + unpaired_requests + "
                                   "unpaired_replies + resyncs) FROM connections WHERE dst = "
                                   "'10.0.1.6:60006'", NULL), 0);
    assert_int_equal(counter(d, "protocol_errors"), 0);
    /* replication: the replica's listening port, the masters */
    assert_conn(d, "10.0.3.1:40031", "10.0.3.1:40031 10.0.1.7:50007 syn replication 2 2 0 0");
    assert_conn(d, "10.0.0.71:40071",
                CLIENT_FIRST("10.0.0.71:40071", "10.0.3.1:50017", "replication"));
    assert_conn(d, "10.0.0.72:40072",
                SERVER_FIRST("10.0.0.72:40072", "10.0.3.1:50017", "replication"));
    assert_conn(d, "10.0.2.1:40081", "10.0.2.1:40081 10.0.1.8:50008 shape replication 2 0 0 0");
    assert_conn(d, "10.0.2.2:40082", "10.0.2.2:40082 10.0.1.8:50008 replication replication 2 0 0 0");
    assert_conn(d, "10.0.2.3:40083", "10.0.2.3:40083 10.0.1.8:50008 replication replication 2 0 0 0");
    assert_conn(d, "10.0.0.80:40080",
                SERVER_FIRST("10.0.0.80:40080", "10.0.1.8:50008", "replication"));
    assert_conn(d, "10.0.2.4:40084", "10.0.2.4:40084 10.0.1.4:50004 cluster replication 2 0 0 0");
    assert_conn(d, "10.0.2.5:40085", "10.0.2.5:40085 10.0.1.4:50004 cluster replication 2 0 0 0");
    assert_int_equal(counter(d, "replication_midstream"), 5);
    assert_int_equal(counter(d, "replication_reversed"), 0);
    assert_int_equal(counter(d, "replication_skipped"), 0);
    /* what oriented the mid-stream connections, counted */
    assert_int_equal(counter(d, "mid_stream"), 24);
    assert_int_equal(counter(d, "oriented_known"), 2);
    assert_int_equal(counter(d, "oriented_redirect"), 4);
    assert_int_equal(counter(d, "oriented_cluster"), 11);
    assert_int_equal(counter(d, "oriented_replication"), 5);
    assert_int_equal(counter(d, "oriented_shape"), 2);
    assert_int_equal(counter(d, "oriented_port"), 0);
    assert_int_equal(counter(d, "oriented_guess"), 0);
    assert_int_equal(counter(d, "known_servers_dropped"), 0);
}

static void test_orientation(void **state)
{
    char cap[512], db[512];
    (void)state;
    snprintf(cap, sizeof cap, "%s", th_path(tmpdir, "orient.pcap"));
    snprintf(db, sizeof db, "%s", th_path(tmpdir, "orient.db"));
    write_capture(cap);
    analyze(cap, db, NULL);
    sqlite3 *d = open_db(db);
    assert_orientation(d);
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
                                        "UNION ALL SELECT observed || announced || role FROM nodes "
                                        "ORDER BY 1", -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW && len + 256 < cap)
        len += (size_t)snprintf(out + len, cap - len, "%s\n", sqlite3_column_text(st, 0));
    assert_true(len + 256 < cap);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

static void test_threads_agree(void **state)
{
    char cap[512], db[512];
    char *one;
    (void)state;
    snprintf(cap, sizeof cap, "%s", th_path(tmpdir, "orient.pcap"));
    snprintf(db, sizeof db, "%s", th_path(tmpdir, "orient-t.db"));
    write_capture(cap);
    analyze(cap, db, TH_ARGS("--threads", "1"));
    one = rows_of(db);
    for (int n = 2; n <= 4; n++) {
        char nt[4];
        snprintf(nt, sizeof nt, "%d", n);
        analyze(cap, db, TH_ARGS("--threads", nt));
        sqlite3 *d = open_db(db);
        assert_orientation(d);
        sqlite3_close(d);
        char *other = rows_of(db);
        assert_string_equal(other, one);
        free(other);
    }
    /* --threads 2 sharded, as 3 and more are */
    assert_int_equal(setenv("SLOTSCOPE_THREADS_SHARD", "1", 1), 0);
    analyze(cap, db, TH_ARGS("--threads", "2"));
    assert_int_equal(unsetenv("SLOTSCOPE_THREADS_SHARD"), 0);
    char *sharded = rows_of(db);
    assert_string_equal(sharded, one);
    free(sharded);
    free(one);
}

/* tests/fixtures/cli/orient-real.pcap (bench/orient-capture.sh): a real
 * cluster whose replication links and three clients predate the capture. */
static void assert_real(sqlite3 *d)
{
    /* the replication link whose replica's ACK came before any proof about
     * its master 31002: its shape (the ACK is a request); to 31000 (the new
     * client's handshake proved it); to 31001 (named in CLUSTER SLOTS) */
    assert_conn(d, "127.0.1.5:38373", "127.0.1.5:38373 127.0.0.1:31002 shape replication 18 0 0 0");
    assert_conn(d, "127.0.1.6:34997", "127.0.1.6:34997 127.0.0.1:31000 known replication 18 0 0 0");
    assert_conn(d, "127.0.1.4:34145", "127.0.1.4:34145 127.0.0.1:31001 cluster replication 17 0 0 0");
    /* the subscribers, whose nodes speak first (the published message, a
     * reply whose SUBSCRIBE predates the capture: unpaired), and the idle
     * READONLY client on the replica 31004, which speaks first */
    assert_conn(d, "127.0.0.1:58666", "127.0.0.1:58666 127.0.0.1:31003 cluster client 0 1 0 1");
    assert_conn(d, "127.0.0.1:51492", "127.0.0.1:51492 127.0.0.1:31001 cluster client 0 1 0 1");
    assert_conn(d, "127.0.0.1:59186", "127.0.0.1:59186 127.0.0.1:31004 cluster client 1 1 0 0");
    /* the new clients, with their handshakes */
    assert_conn(d, "127.0.0.1:59706", "127.0.0.1:59706 127.0.0.1:31000 syn client 33 33 0 0");
    assert_int_equal(counter(d, "mid_stream"), 6);
    assert_int_equal(counter(d, "oriented_cluster"), 4);
    assert_int_equal(counter(d, "oriented_known"), 1);
    assert_int_equal(counter(d, "oriented_shape"), 1);
    assert_int_equal(counter(d, "replication_midstream"), 3);
    assert_int_equal(counter(d, "replication_reversed"), 0);
    assert_int_equal(counter(d, "unpaired_requests"), 0);
    assert_int_equal(counter(d, "unpaired_replies"), 2);
}

static void test_real_capture(void **state)
{
    char db[512];
    char *one = NULL;
    (void)state;
    snprintf(db, sizeof db, "%s", th_path(tmpdir, "real.db"));
    for (int n = 1; n <= 3; n++) {
        char nt[4];
        snprintf(nt, sizeof nt, "%d", n);
        analyze(SS_FIXTURES "/cli/orient-real.pcap", db, TH_ARGS("--threads", nt));
        sqlite3 *d = open_db(db);
        assert_real(d);
        sqlite3_close(d);
        char *rows = rows_of(db);
        if (one == NULL)
            one = rows;
        else {
            assert_string_equal(rows, one);
            free(rows);
        }
    }
    free(one);
}

/* The report's capture quality part: what oriented them. */
static void test_report_line(void **state)
{
    char cap[512], db[512];
    th_run r;
    (void)state;
    snprintf(cap, sizeof cap, "%s", th_path(tmpdir, "orient.pcap"));
    snprintf(db, sizeof db, "%s", th_path(tmpdir, "orient-r.db"));
    write_capture(cap);
    analyze(cap, db, NULL);
    assert_int_equal(th_slotscope(TH_ARGS("report", db), &r, NULL, NULL, 0), 0);
    assert_int_equal(th_exit_code(&r), 0);
    assert_non_null(strstr(r.out, "  oriented     2 by an earlier handshake, 11 by a CLUSTER reply "
                                  "naming the server, 5 by an earlier replication link to the "
                                  "master, 4 by a MOVED/ASK target, 2 by the shape of the first "
                                  "bytes\n"));
    th_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_orientation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_agree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_capture, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_line, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
