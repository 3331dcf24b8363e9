/*
 * test_io.c - input and output details (issue 18): query --csv and --json,
 * a capture on standard input, gzip- and zstd-compressed captures (whole and
 * cut short), and the clocks of two inputs (--time-offset, the skew
 * estimated from segments both captured, --time-offset auto).
 *
 * "Same database" is the sqlite3 .dump of both, less the meta and inputs
 * rows (the file name, the run's times, the compression column).
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

#define RESHARD SS_SOURCE_DIR "/samples/reshard.pcap"
#define MIXED SS_FIXTURES "/cli/mixed-linktypes.pcapng"
#define T0 1700000000000000LL

static char dir[256];
static th_run last;

/* dir + "/" + name in one of 64 rotating buffers (th_path keeps only 8,
 * too few for the paths a test holds at once). */
static const char *P(const char *name)
{
    static char bufs[64][320];
    static unsigned next;
    char *b = bufs[next++ % 64];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_io", dir, sizeof dir);
}

static int teardown(void **state)
{
    (void)state;
    th_run_free(&last);
    return th_tmpdir_remove(dir);
}

/* Run the binary with args; its exit code. */
static int run(const char *const *args)
{
    return th_run_binary(&last, SS_BINARY, args, NULL, NULL, 0);
}

/* Run a shell command line (the binary is $BIN in it); its exit code. */
static int shell(const char *fmt, ...)
{
    char cmd[4096], full[4400];
    va_list ap;
    const char *bin = getenv("SLOTSCOPE_TEST_BINARY");
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "BIN='%s'; %s", bin && *bin ? bin : SS_BINARY, cmd);
    th_run_free(&last);
    assert_int_equal(th_exec("/bin/sh", TH_ARGS("-c", full), &last, NULL, NULL, 0), 0);
    return th_exit_code(&last);
}

/* The database as SQL, without the meta and inputs rows. Malloc'd. */
static char *dump(const char *db)
{
    char *text;
    const char *out = P("dump.sql");
    assert_int_equal(shell("sqlite3 '%s' .dump | grep -v -E '^INSERT INTO (meta|inputs) ' > '%s'",
                           db, out),
                     0);
    text = th_slurp(out, NULL);
    assert_non_null(text);
    return text;
}

/* Both databases hold the same analysis. */
static void assert_same_db(const char *a, const char *b)
{
    char *x = dump(a), *y = dump(b);
    assert_true(strlen(x) > 300); /* something was analysed */
    assert_string_equal(x, y);
    free(x);
    free(y);
}

/* An integer from a database. */
static int64_t q(const char *db, const char *sql)
{
    return th_db_int(db, sql);
}

/* ---------------------------------------------------------------- query */

/* --json: every row says its result set; reals print short; --csv: RFC 4180
 * quoting, CRLF, a header per set, formula prefixes neutralised. */
static void test_query_formats(void **state)
{
    const char *db = P("q.db");
    sqlite3 *h;
    (void)state;
    assert_int_equal(run(TH_ARGS("analyze", RESHARD, "--db", db, "-q")), 0);
    assert_int_equal(run(TH_ARGS("query", db, "latency_by_client", "--json")), 0);
    assert_true(strncmp(last.out, "{\"result_set\":1,\"client\":", 25) == 0);
    assert_non_null(strstr(last.out, "\"direct_p50_ms\":0.076,")); /* not 0.07599999... */
    assert_null(strstr(last.out, "99999"));
    assert_null(strstr(last.out, "00000000"));
    /* health has several statements: sets 1, 2, ... */
    assert_int_equal(run(TH_ARGS("query", db, "health", "--json")), 0);
    assert_non_null(strstr(last.out, "{\"result_set\":2,\"name\":\"" RESHARD "\""));
    assert_int_equal(run(TH_ARGS("query", db, "health", "--csv")), 0);
    assert_true(strncmp(last.out, "result_set,name,value\r\n", 23) == 0);
    assert_non_null(strstr(last.out, "\r\nresult_set,name,linktype_name,"));
    assert_non_null(strstr(last.out, "\r\n2," RESHARD ",EN10MB,3295,"));
    assert_int_equal(run(TH_ARGS("query", db, "health", "--csv", "--json")), 2);

    /* hostile text, as a capture could set it (CLIENT SETNAME) */
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h,
                                  "UPDATE clients SET client_name = '=HYPERLINK(\"x\"),1' "
                                  "WHERE rowid = (SELECT min(rowid) FROM clients);"
                                  "UPDATE clients SET client_name = '-2+3' WHERE rowid = "
                                  "(SELECT max(rowid) FROM clients);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    FILE *f = fopen(P("names.sql"), "w");
    assert_non_null(f);
    fputs("SELECT client_name, -5 AS n, 0.1 + 0.2 AS r, NULL AS z FROM clients WHERE "
          "client_name != '' ORDER BY rowid;\n",
          f);
    fclose(f);
    assert_int_equal(run(TH_ARGS("query", db, P("names.sql"), "--csv")), 0);
    assert_string_equal(last.out, "result_set,client_name,n,r,z\r\n"
                                  "1,\"'=HYPERLINK(\"\"x\"\"),1\",-5,0.30000000000000004,\r\n"
                                  "1,'-2+3,-5,0.30000000000000004,\r\n");
    assert_int_equal(run(TH_ARGS("query", db, P("names.sql"), "--json")), 0);
    assert_string_equal(last.out,
                        "{\"result_set\":1,\"client_name\":\"=HYPERLINK(\\\"x\\\"),1\",\"n\":-5,"
                        "\"r\":0.30000000000000004,\"z\":null}\n"
                        "{\"result_set\":1,\"client_name\":\"-2+3\",\"n\":-5,"
                        "\"r\":0.30000000000000004,\"z\":null}\n");
}

/* ---------------------------------------------------------------- stdin */

/* `analyze -` from a redirect and from a pipe: the database of the file. */
static void test_stdin(void **state)
{
    const char *plain = P("plain.db"), *in = P("stdin.db");
    const char *piped = P("piped.db");
    (void)state;
    assert_int_equal(run(TH_ARGS("analyze", RESHARD, "--db", plain, "-q")), 0);
    assert_int_equal(shell("exec \"$BIN\" analyze - --db '%s' -q < '%s'", in, RESHARD), 0);
    assert_same_db(plain, in);
    assert_int_equal(q(in, "SELECT count(*) FROM inputs WHERE name = '(stdin)' AND packets = 3295"), 1);
    assert_int_equal(shell("cat '%s' | \"$BIN\" analyze - --db '%s' -q", RESHARD, piped), 0);
    assert_same_db(plain, piped);
    /* what tcpdump writes to a pipe (-w -), as it comes */
    if (shell("command -v tcpdump") == 0) {
        assert_int_equal(shell("tcpdump -r '%s' -w - 2>/dev/null | \"$BIN\" analyze - --db '%s' -q",
                               RESHARD, P("tcpdump.db")),
                         0);
        assert_same_db(plain, P("tcpdump.db"));
    }
    /* a pcapng on standard input */
    assert_int_equal(shell("cat '%s' | \"$BIN\" analyze - --db '%s' -q", SS_FIXTURES "/capture/resp_4_infiniteloop.pcapng",
                           P("ng.db")), 0);
    assert_true(q(P("ng.db"), "SELECT packets FROM inputs") > 0);
    /* twice, and with --since, is refused */
    assert_int_equal(shell("exec \"$BIN\" analyze - - -q < '%s'", RESHARD), 1);
    assert_non_null(strstr(last.err, "standard input ('-') given more than once"));
    assert_int_equal(shell("exec \"$BIN\" analyze - --since +1s -q < '%s'", RESHARD), 2);
}

/* ---------------------------------------------------------------- compressed */

/* .gz and .zst (and compressed on stdin) give the plain file's database; a
 * pcapng whose interfaces differ too; the kind is told by the bytes, not the
 * name. */
static void test_compressed(void **state)
{
    const char *plain = P("p.db");
    (void)state;
    assert_int_equal(shell("cd '%s' && cp '%s' r.pcap && gzip -k r.pcap && zstd -q -k r.pcap "
                           "&& cp r.pcap.zst renamed.pcap && cp '%s' m.pcapng && gzip -k m.pcapng",
                           dir, RESHARD, MIXED),
                     0);
    assert_int_equal(run(TH_ARGS("analyze", RESHARD, "--db", plain, "-q")), 0);
    assert_int_equal(run(TH_ARGS("analyze", P("r.pcap.gz"), "--db", P("gz.db"), "-q")), 0);
    assert_non_null(strstr(last.out, "r.pcap.gz: EN10MB, 3295 packets, 655.4 KiB, gzip\n"));
    assert_same_db(plain, P("gz.db"));
    assert_int_equal(q(P("gz.db"), "SELECT count(*) FROM inputs WHERE compression = 'gzip'"), 1);
    assert_int_equal(run(TH_ARGS("analyze", P("r.pcap.zst"), "--db", P("zst.db"), "-q")), 0);
    assert_same_db(plain, P("zst.db"));
    assert_int_equal(run(TH_ARGS("analyze", P("renamed.pcap"), "--db", P("ren.db"), "-q")), 0);
    assert_int_equal(q(P("ren.db"), "SELECT count(*) FROM inputs WHERE compression = 'zstd'"), 1);
    assert_int_equal(shell("exec \"$BIN\" analyze - --db '%s/in.db' -q < '%s/r.pcap.gz'", dir, dir), 0);
    assert_same_db(plain, P("in.db"));
    /* several members / frames one after the other, cut mid-record */
    assert_int_equal(shell("cd '%s' && head -c 100000 r.pcap | gzip > two.gz && tail -c +100001 "
                           "r.pcap | gzip >> two.gz && head -c 33333 r.pcap | zstd -q > two.zst && "
                           "tail -c +33334 r.pcap | zstd -q >> two.zst", dir),
                     0);
    assert_int_equal(run(TH_ARGS("analyze", P("two.gz"), "--db", P("two_gz.db"), "-q")), 0);
    assert_same_db(plain, P("two_gz.db"));
    assert_int_equal(run(TH_ARGS("analyze", P("two.zst"), "--db", P("two_zst.db"), "-q")), 0);
    assert_same_db(plain, P("two_zst.db"));
    /* libpcap's path (pcapng) and the fallback reader that reads it again */
    assert_int_equal(run(TH_ARGS("analyze", MIXED, "--db", P("m.db"), "-q")), 0);
    assert_int_equal(run(TH_ARGS("analyze", P("m.pcapng.gz"), "--db", P("mgz.db"), "-q")), 0);
    assert_same_db(P("m.db"), P("mgz.db"));
    assert_int_equal(q(P("mgz.db"), "SELECT packets FROM inputs"), 175);
}

/* Append to path an Interface Statistics Block of interface 0 whose
 * isb_ifdrop is drops (host byte order, as the fixtures' sections). */
static void append_isb(const char *path, uint64_t drops)
{
    uint8_t b[40];
    uint32_t w[5] = {5, sizeof b, 0, 0, 0}, len = sizeof b;
    uint16_t opt[4] = {5, 8, 0, 0}; /* isb_ifdrop, then opt_endofopt */
    memcpy(b, w, 20);
    memcpy(b + 20, opt, 4);
    memcpy(b + 24, &drops, 8);
    memcpy(b + 32, opt + 2, 4);
    memcpy(b + 36, &len, 4);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, sizeof b, f), sizeof b);
    assert_int_equal(fclose(f), 0);
}

/* The drops a pcapng file's statistics record, when the file is read once
 * through a stream (gzip, zstd, a pipe; the fallback reader of mixed link
 * types reading the gzip file again): the same as from the plain file. A
 * recorded 0 is reported as a count; inputs that cannot record drops are
 * named as such next to those that do. */
static void test_compressed_drops(void **state)
{
    (void)state;
    assert_int_equal(shell("cd '%s' && cp '%s' dn.pcapng && cp '%s' dm.pcapng && cp dn.pcapng dz.pcapng",
                           dir, SS_FIXTURES "/capture/resp_4_infiniteloop.pcapng", MIXED),
                     0);
    append_isb(P("dn.pcapng"), 42);
    append_isb(P("dm.pcapng"), 42);
    append_isb(P("dz.pcapng"), 0);
    assert_int_equal(shell("cd '%s' && gzip -k dn.pcapng && zstd -q -k dn.pcapng && gzip -k dm.pcapng",
                           dir), 0);
    static const char *const files[] = {"dn.pcapng", "dn.pcapng.gz", "dn.pcapng.zst", "dm.pcapng.gz"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        assert_int_equal(run(TH_ARGS("analyze", P(files[i]), "--db", P("d.db"), "--force")), 0);
        assert_non_null(strstr(last.out, "  drops        42 recorded by the capture files"));
        assert_int_equal(q(P("d.db"), "SELECT kernel_drops FROM inputs"), 42);
        assert_int_equal(q(P("d.db"), "SELECT drops_recorded FROM inputs"), 1);
        assert_int_equal(q(P("d.db"), "SELECT value FROM counters WHERE name = 'kernel_drops'"),
                         42);
    }
    assert_int_equal(shell("cat '%s/dn.pcapng.gz' | \"$BIN\" analyze - --db '%s/dp.db' --threads 2",
                           dir, dir), 0);
    assert_non_null(strstr(last.out, "  drops        42 recorded by the capture files"));
    assert_int_equal(q(P("dp.db"), "SELECT value FROM counters WHERE name = 'kernel_drops'"), 42);
    /* a recorded 0 */
    assert_int_equal(run(TH_ARGS("analyze", P("dz.pcapng"), "--db", P("dz.db"))), 0);
    assert_non_null(strstr(last.out, "  drops        0 recorded by the capture files"));
    assert_int_equal(run(TH_ARGS("report", P("dz.db"), "--json")), 0);
    assert_non_null(strstr(last.out, "\"kernel_drops\":0,\"if_drops\":0,\"drops_recorded\":true,"));
    /* with a pcap file, which cannot record them */
    assert_int_equal(run(TH_ARGS("analyze", P("dn.pcapng.zst"), RESHARD, "--db", P("dtwo.db"))), 0);
    assert_non_null(strstr(last.out, "  drops        42 recorded by 1 of the 2 capture files"));
    assert_int_equal(run(TH_ARGS("report", P("dtwo.db"))), 0);
    assert_non_null(strstr(last.out, "  drops        42 recorded by 1 of the 2 capture files"));
    assert_int_equal(q(P("dtwo.db"), "SELECT sum(drops_recorded) FROM inputs"), 1);
}

/* A compressed file cut short, or damaged: a clear error, exit 1, and what
 * was decoded before it analysed and in the database. */
static void test_compressed_truncated(void **state)
{
    const char *gz = P("t.db"), *zst = P("tz.db");
    (void)state;
    assert_int_equal(shell("cd '%s' && gzip -c '%s' | head -c 60000 > cut.pcap.gz && zstd -q -c '%s' "
                           "| head -c 60000 > cut.pcap.zst && printf 'not a capture' | gzip > "
                           "text.gz", dir, RESHARD, RESHARD),
                     0);
    assert_int_equal(run(TH_ARGS("analyze", P("cut.pcap.gz"), "--db", gz, "-q")), 1);
    assert_non_null(strstr(last.err, "compressed data unreadable after "));
    assert_non_null(strstr(last.err, "(truncated gzip file: it ends inside a compressed member)"));
    assert_true(q(gz, "SELECT packets FROM inputs") > 100);
    assert_true(q(gz, "SELECT packets FROM inputs") < 3295);
    assert_true(q(gz, "SELECT count(*) FROM connections") > 0);
    assert_int_equal(run(TH_ARGS("analyze", P("cut.pcap.zst"), "--db", zst, "-q")), 1);
    assert_non_null(strstr(last.err, "(truncated zstd file: it ends inside a frame)"));
    assert_true(q(zst, "SELECT packets FROM inputs") > 100);
    assert_true(q(zst, "SELECT packets FROM inputs") < 3295);
    assert_int_equal(run(TH_ARGS("analyze", P("text.gz"), "-q")), 1);
    assert_non_null(strstr(last.err, "not a pcap or pcapng capture inside the compressed file"));
}

/* ---------------------------------------------------------------- clocks */

/* Where the frames of the two-host capture go: the client host's file as
 * they are, the server host's with its clock skew_us ahead and each frame
 * seen delay_us later (client to server) or earlier (server to client). */
typedef struct two_hosts {
    pg_file *client, *server;
    int from_server;  /* direction of the frames being sent */
    int64_t skew_us, delay_us;
} two_hosts;

static void on_frame(void *ctx, int dlt, int64_t ts_us, const uint8_t *frame, size_t len)
{
    two_hosts *h = ctx;
    (void)dlt;
    assert_int_equal(pg_file_write(h->client, ts_us, frame, len), 0);
    assert_int_equal(pg_file_write(h->server, ts_us + h->skew_us +
                                                  (h->from_server ? -h->delay_us : h->delay_us),
                                   frame, len),
                     0);
}

/* A conversation of 40 GETs captured on both hosts: client.pcap and
 * server.pcap (its clock 250 ms ahead, 300 us one way). */
static void write_two_hosts(int64_t skew_us)
{
    two_hosts h = {pg_file_open(P("client.pcap"), PG_PCAP, DLT_EN10MB, 65535),
                   pg_file_open(P("server.pcap"), PG_PCAP, DLT_EN10MB, 65535), 0,
                   skew_us, 300};
    pg_packet t;
    pg_conv c;
    assert_non_null(h.client);
    assert_non_null(h.server);
    pg_packet_init(&t);
    t.dport = 7000;
    pg_conv_init(&c, &t, 1000, 5000, T0);
    c.step_us = 1000;
    c.fn = on_frame;
    c.ctx = &h;
    assert_int_equal(pg_conv_handshake(&c), 0);
    for (int i = 0; i < 40; i++) {
        char req[64];
        int n = snprintf(req, sizeof req, "*2\r\n$3\r\nGET\r\n$4\r\nk%03d\r\n", i);
        h.from_server = 0;
        assert_int_equal(pg_conv_send(&c, 0, req, (size_t)n), 0);
        h.from_server = 1;
        assert_int_equal(pg_conv_send(&c, 1, "$1\r\nv\r\n", 7), 0);
    }
    assert_int_equal(pg_file_close(h.client), 0);
    assert_int_equal(pg_file_close(h.server), 0);
}

/* The skew is found and reported, and applied only with auto (or a manual
 * offset, which gives the same times). */
static void test_skew(void **state)
{
    const char *db = P("two.db"), *aut = P("auto.db");
    const char *man = P("man.db");
    char offset[400];
    (void)state;
    write_two_hosts(250000);
    assert_int_equal(run(TH_ARGS("analyze", P("client.pcap"), P("server.pcap"),
                                 "--db", db, "-q")),
                     0);
    assert_non_null(strstr(last.err, "of the same TCP segments: the clock of '"));
    assert_non_null(strstr(last.err, "server.pcap' is +250.000 ms ahead; times not changed"));
    assert_int_equal(q(db, "SELECT skew_us FROM inputs WHERE id = 2"), 250000);
    assert_int_equal(q(db, "SELECT skew_ref FROM inputs WHERE id = 2"), 1);
    /* data segments both ways, the SYNs and FINs: none of the pure ACKs */
    assert_true(q(db, "SELECT skew_shared FROM inputs WHERE id = 2") >= 80);
    assert_int_equal(q(db, "SELECT sum(time_offset_us) FROM inputs"), 0);
    /* left unaligned, the capture cannot support a verdict: and says why */
    assert_int_equal(q(db, "SELECT count(*) FROM meta WHERE key = 'diagnosis' AND "
                           "value = 'clock_skew'"), 1);
    assert_int_equal(run(TH_ARGS("report", db)), 0);
    assert_non_null(strstr(last.out, "(clock_skew): the clock of input 2 is +250.000 ms "
                                     "against input 1's"));

    assert_int_equal(run(TH_ARGS("analyze", P("client.pcap"), P("server.pcap"),
                                 "--time-offset", "auto", "--db", aut, "-q")),
                     0);
    assert_non_null(strstr(last.err, "aligned (--time-offset auto)"));
    assert_int_equal(q(aut, "SELECT time_offset_us FROM inputs WHERE id = 2"), -250000);
    assert_int_equal(q(aut, "SELECT count(*) FROM meta WHERE key = 'diagnosis' AND "
                            "value = 'clock_skew'"), 0);
    /* the report's input line says both, and so does the report of the database */
    assert_non_null(strstr(last.out, "server.pcap: EN10MB, "));
    assert_non_null(strstr(last.out, ", times shifted -250.000 ms, clock +250.000 ms against "));
    assert_int_equal(run(TH_ARGS("report", aut)), 0);
    assert_non_null(strstr(last.out, ", times shifted -250.000 ms, clock +250.000 ms against "));
    assert_int_equal(run(TH_ARGS("report", aut, "--json")), 0);
    assert_non_null(strstr(last.out, "\"time_offset_us\":-250000,\"skew_us\":250000,"));
    /* aligned: the two copies of each segment now lie 300 us apart */
    assert_int_equal(q(aut, "SELECT (SELECT first_us FROM inputs WHERE id = 2) - "
                            "(SELECT first_us FROM inputs WHERE id = 1)"),
                     300);
    snprintf(offset, sizeof offset, "%s=-250ms", P("server.pcap"));
    assert_int_equal(run(TH_ARGS("analyze", P("client.pcap"), P("server.pcap"),
                                 "--time-offset", offset, "--db", man, "-q")),
                     0);
    assert_int_equal(q(man, "SELECT time_offset_us FROM inputs WHERE id = 2"), -250000);
    assert_same_db(aut, man);

    /* a skew the other way, and below the warning's millisecond */
    write_two_hosts(-40000);
    assert_int_equal(run(TH_ARGS("analyze", P("client.pcap"), P("server.pcap"),
                                 "--db", P("neg.db"), "-q")),
                     0);
    assert_non_null(strstr(last.err, "is -40.000 ms ahead"));
    assert_int_equal(q(P("neg.db"), "SELECT skew_us FROM inputs WHERE id = 2"), -40000);
    write_two_hosts(200);
    assert_int_equal(run(TH_ARGS("analyze", P("client.pcap"), P("server.pcap"),
                                 "--db", P("small.db"), "-q")),
                     0);
    assert_null(strstr(last.err, "ahead"));
    assert_int_equal(q(P("small.db"), "SELECT skew_us FROM inputs WHERE id = 2"), 200);

    /* auto with a first input that shares nothing with the pair: the pair
     * is aligned within itself (it used to be left as it was, "aligned") */
    write_two_hosts(40000);
    assert_int_equal(run(TH_ARGS("analyze", RESHARD, P("client.pcap"), P("server.pcap"),
                                 "--time-offset", "auto", "--db", P("three.db"), "-q")),
                     0);
    assert_non_null(strstr(last.err, "aligned (--time-offset auto)"));
    assert_int_equal(q(P("three.db"), "SELECT time_offset_us FROM inputs WHERE id = 3") -
                         q(P("three.db"), "SELECT time_offset_us FROM inputs WHERE id = 2"),
                     -40000);
    assert_int_equal(q(P("three.db"), "SELECT count(*) FROM meta WHERE key = 'diagnosis' "
                                      "AND value = 'clock_skew'"), 0);

    /* inputs that share nothing: no estimate */
    assert_int_equal(run(TH_ARGS("analyze", P("client.pcap"), RESHARD, "--db",
                                 P("none.db"), "-q")),
                     0);
    assert_int_equal(q(P("none.db"), "SELECT sum(skew_shared) FROM inputs"), 0);
    /* bad values */
    assert_int_equal(run(TH_ARGS("analyze", RESHARD, "--time-offset", "x.pcap=5", "-q")), 2);
    assert_int_equal(run(TH_ARGS("analyze", RESHARD, "--time-offset", "x.pcap=5ms", "-q")), 2);
    assert_non_null(strstr(last.err, "no input file is named 'x.pcap'"));
    assert_int_equal(shell("exec \"$BIN\" analyze - --time-offset auto -q < '%s'", RESHARD), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_formats),
        cmocka_unit_test(test_stdin),
        cmocka_unit_test(test_compressed),
        cmocka_unit_test(test_compressed_drops),
        cmocka_unit_test(test_compressed_truncated),
        cmocka_unit_test(test_skew),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
