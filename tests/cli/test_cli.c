/*
 * test_cli.c - the slotscope binary end to end (SS_BINARY), on the captures of
 * tests/fixtures/cli/ and on tests/fixtures/gen/findings.pcap (bench/gen: every
 * finding kind):
 * exit codes, bad arguments, the report text, `report DB` printing the same
 * report, JSON lines that parse (python3's json module, independent of the
 * code under test), the database (integrity, rows, refusing to overwrite,
 * unwritable paths), canned queries, a capture cut short.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"

#define FIX SS_FIXTURES "/cli/"
#define FINDINGS_PCAP SS_FIXTURES "/gen/findings.pcap"

static char tmpdir[256];
static th_run last;               /* the last run of slotscope */
static const char *out_text, *err_text; /* its stdout and stderr */

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_cli", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    th_run_free(&last);
    out_text = err_text = NULL;
    return th_tmpdir_remove(tmpdir);
}

/* A path in the test's directory. */
static const char *tmp(const char *name)
{
    return th_path(tmpdir, name);
}

/* Run slotscope with the NULL-terminated arguments; stdout and stderr are kept
 * in out_text / err_text. Returns the exit code (-1 if it did not exit). */
static int run_args(const char *const *args)
{
    th_run_free(&last);
    assert_int_equal(th_slotscope(args, &last, NULL, NULL, 0), 0);
    out_text = last.out;
    err_text = last.err;
    return th_exit_code(&last);
}

/* run_args with the arguments inline. */
#define run(...) run_args((const char *const[]){__VA_ARGS__, NULL})

static void assert_contains(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, text);
}

/* Make a finished database look like one of a run that was killed. */
static void mark_unfinished(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DELETE FROM meta WHERE key = 'end_us'", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
}

/* Every line of the last stdout is a JSON object with a string "type"
 * (checked by python3's json module); returns how many lines there were. */
static int assert_json_lines(void)
{
    FILE *py;
    int lines = 0;
    py = popen("python3 -c 'import json,sys\n"
               "for l in sys.stdin:\n"
               "  o = json.loads(l)\n"
               "  assert isinstance(o, dict) and isinstance(o[\"type\"], str), l\n'",
               "w");
    assert_non_null(py);
    assert_true(fputs(out_text, py) >= 0);
    assert_int_equal(pclose(py), 0);
    for (const char *p = out_text; *p; p++)
        lines += *p == '\n';
    return lines;
}

/* ---------------------------------------------------------------- arguments */

static void test_version_and_help(void **state)
{
    static const char *const cmds[] = {"analyze", "live", "report", "query"};
    (void)state;
    assert_int_equal(run("--version"), 0);
    assert_string_equal(out_text, "slotscope " SLOTSCOPE_VERSION "\n");
    assert_int_equal(run("--help"), 0);
    assert_contains(out_text, "usage: slotscope COMMAND");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char want[64];
        assert_int_equal(run(cmds[i], "--help"), 0);
        snprintf(want, sizeof want, "usage: slotscope %s", cmds[i]);
        assert_contains(out_text, want);
    }
    /* analyze --help lists the analysis settings (an_config_help). */
    assert_int_equal(run("analyze", "--help"), 0);
    assert_contains(out_text, "loop_max_redirects");
}

/* Usage errors exit 2 with a message on stderr and nothing on stdout. */
static void test_usage_errors(void **state)
{
    (void)state;
    assert_int_equal(run("frobnicate"), 2);
    assert_contains(err_text, "unknown command 'frobnicate'");
    assert_int_equal(run("analyze"), 2);
    assert_contains(err_text, "no capture file given");
    assert_int_equal(run("analyze", FIX "set.pcap", "--bogus"), 2);
    assert_contains(err_text, "unknown option '--bogus'");
    assert_int_equal(run("analyze", FIX "set.pcap", "--ports", "70000"), 2);
    assert_contains(err_text, "bad --ports");
    assert_int_equal(run("analyze", FIX "set.pcap", "--set", "no_such_threshold=1"), 2);
    assert_contains(err_text, "--set");
    assert_int_equal(run("analyze", FIX "set.pcap", "--client-by", "rack"), 2);
    assert_int_equal(run("analyze", FIX "set.pcap", "--node-map", "no-equals-sign"), 2);
    assert_int_equal(run("analyze", FIX "set.pcap", "--db"), 2);
    assert_contains(err_text, "needs a value");
    assert_int_equal(run("analyze", FIX "set.pcap", "--force"), 2);
    assert_int_equal(run("analyze", FIX "set.pcap", "-i", "lo"), 2);
    assert_int_equal(run("live"), 2);
    assert_contains(err_text, "no interface given");
    assert_int_equal(run("live", "-i", "lo", "--duration", "-1"), 2);
    assert_int_equal(run("report"), 2);
    assert_int_equal(run("report", "a.db", "b.db"), 2);
    assert_int_equal(run("query"), 2);
    assert_int_equal(run("query", "x.db"), 2);
    assert_int_equal(run("query", "x.db", "no_such_query"), 2);
    assert_contains(err_text, "no query named 'no_such_query'");
    assert_int_equal(run("query", "x.db", "client"), 2);
    assert_contains(err_text, "needs --param client=VALUE");
    assert_int_equal(run("query", "x.db", "health", "--param", "novalue"), 2);
    assert_string_equal(out_text, "");
}

/* Runtime errors exit 1 with one clear line. */
static void test_runtime_errors(void **state)
{
    (void)state;
    assert_int_equal(run("analyze", tmp("missing.pcap")), 1);
    assert_contains(err_text, "missing.pcap");
    assert_int_equal(run("analyze", FIX "README.md"), 1);
    assert_int_equal(run("report", tmp("missing.db")), 1);
    assert_contains(err_text, "cannot open");
    assert_int_equal(run("report", FIX "set.pcap"), 1);
    assert_int_equal(run("query", tmp("missing.db"), "health"), 1);
}

/* ---------------------------------------------------------------- analyze */

/* The report of a small capture: every part is there, with the facts of
 * set.pcap (three SETs to 127.0.0.1:6379 from one client). */
static void test_report_text(void **state)
{
    (void)state;
    assert_int_equal(run("analyze", FIX "set.pcap"), 0);
    assert_contains(out_text, "slotscope incident report");
    assert_contains(out_text, "What happened");
    assert_contains(out_text, "  capture      2");
    assert_contains(out_text, "set.pcap: NULL, 12 packets"); /* BSD loopback */
    assert_contains(out_text, "12 packets, 1 connection, 3 commands from 1 client (");
    assert_contains(out_text, "Findings: none");
    assert_contains(out_text, "What the redirects cost");
    assert_contains(out_text, "What the capture could not see");
    assert_contains(out_text, "picked up mid-stream");
    /* a capture file does not record the kernel's drops: not shown as 0 */
    assert_contains(out_text, "  drops        none recorded by the capture files");
    assert_null(strstr(out_text, "by the kernel"));
    assert_string_equal(err_text, ""); /* no progress bar: stderr is not a tty */
}

/* A pcapng file whose statistics block (as dumpcap writes at its end) says
 * 42 packets were dropped: the report shows them, from analyze and from the
 * database alike, and --json says they were recorded. */
static void test_report_pcapng_drops(void **state)
{
    const char *cap = tmp("isb.pcapng"), *db = tmp("isb.db");
    char cmd[1024];
    (void)state;
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", SS_FIXTURES "/capture/resp_4_infiniteloop.pcapng",
             cap);
    assert_int_equal(system(cmd), 0);
    uint8_t b[40];
    uint32_t w[5] = {5, sizeof b, 0, 0, 0}, len = sizeof b;
    uint16_t opt[4] = {5, 8, 0, 0}; /* isb_ifdrop, then opt_endofopt */
    uint64_t drops = 42;
    memcpy(b, w, 20);
    memcpy(b + 20, opt, 4);
    memcpy(b + 24, &drops, 8);
    memcpy(b + 32, opt + 2, 4);
    memcpy(b + 36, &len, 4);
    FILE *f = fopen(cap, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, sizeof b, f), sizeof b);
    assert_int_equal(fclose(f), 0);
    run("analyze", cap, "--db", db, "--threads", "2");
    assert_int_equal(th_db_int(db, "SELECT value FROM counters WHERE name = 'kernel_drops'"), 42);
    run("analyze", cap, "--db", db, "--force", "--threads", "1");
    assert_contains(out_text, "  drops        42 recorded by the capture files");
    assert_int_equal(th_db_int(db, "SELECT kernel_drops FROM inputs"), 42);
    assert_int_equal(th_db_int(db, "SELECT value FROM counters WHERE name = 'kernel_drops'"), 42);
    run("report", db);
    assert_contains(out_text, "  drops        42 recorded by the capture files");
    run("report", db, "--json");
    assert_contains(out_text, "\"kernel_drops\":42,\"if_drops\":0,\"drops_recorded\":true,");
}

/* A capture cut right after a client's ASKING + retry (the retry's reply
 * is not in it): the operation was followed, its outcome unseen; it is
 * counted as such, not called redirect_unfollowed. */
static void test_report_unseen_retry(void **state)
{
    const char *db = tmp("unseen.db");
    (void)state;
    run("analyze", SS_FIXTURES "/verdict/cut-short.pcap", "--db", db);
    assert_contains(out_text, "1 redirected whose retry the capture may have lost");
    assert_int_equal(th_db_int(db, "SELECT value FROM counters WHERE name = 'unseen_retry_ops'"),
                     1);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM findings"
                                   " WHERE kind = 'redirect_unfollowed'"), 0);
}

/* A database of a live run (meta mode 'live') shows the drops pcap_stats
 * counted; one of analyze says the files do not record them. */
static void test_report_drops_live(void **state)
{
    const char *db = tmp("drops.db");
    sqlite3 *h;
    (void)state;
    assert_int_equal(run("analyze", FIX "set.pcap", "--db", db), 0);
    assert_int_equal(run("report", db), 0);
    assert_contains(out_text, "  drops        none recorded by the capture files");
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE meta SET value = 'live' WHERE key = 'mode';"
                                     "UPDATE counters SET value = 7 WHERE name = 'kernel_drops';",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    assert_int_equal(run("report", db), 0);
    assert_contains(out_text, "  drops        7 by the kernel, 0 by the interface\n");
    assert_int_equal(run("report", db, "--json"), 0);
    assert_contains(out_text, "\"drops_recorded\":true,");
}

/* analyze --db writes a consistent database, and `report DB` prints exactly
 * the report analyze printed. */
static void test_db_and_report_match(void **state)
{
    const char *db = tmp("a.db");
    char *analyzed;
    (void)state;
    assert_int_equal(run("analyze", FIX "pipelining-example.pcap", FIX "set.pcap", "--db", db), 0);
    analyzed = strdup(out_text);
    th_assert_db_ok(db);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM inputs"), 2);
    assert_int_equal(th_db_int(db, "SELECT value FROM counters WHERE name='packets'"),
                     th_db_int(db, "SELECT sum(packets) FROM inputs"));
    assert_true(th_db_int(db, "SELECT value FROM counters WHERE name='commands'") > 3);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM connections"),
                     th_db_int(db, "SELECT value FROM counters WHERE name='connections'"));
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM meta WHERE key='command_line'"
                                " AND value LIKE '%analyze%--db%'"), 1);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM meta WHERE key='end_us'"), 1);

    assert_int_equal(run("report", db), 0);
    assert_string_equal(out_text, analyzed);
    free(analyzed);
    assert_true(strstr(out_text, "interrupted") == NULL);

    /* A run that never finished (no end time): the report says so. */
    mark_unfinished(db);
    assert_int_equal(run("report", db), 0);
    assert_contains(out_text, "the run was interrupted");
    assert_int_equal(run("report", db, "--json"), 0);
    assert_contains(out_text, "\"finished\":false");

    /* The same with JSON. */
    assert_int_equal(run("analyze", FIX "set.pcap", "--db", tmp("b.db"), "--json"), 0);
    analyzed = strdup(out_text);
    assert_int_equal(run("report", tmp("b.db"), "--json"), 0);
    assert_string_equal(out_text, analyzed);
    free(analyzed);
}

/* An existing database is refused without --force (and left alone); --force
 * replaces it; an unwritable place is a clear error. */
static void test_existing_and_unwritable_db(void **state)
{
    const char *db = tmp("x.db");
    (void)state;
    assert_int_equal(run("analyze", FIX "set.pcap", "--db", db), 0);
    assert_int_equal(run("analyze", FIX "pipelining-example.pcap", "--db", db), 1);
    assert_contains(err_text, "exists (use --force)");
    assert_string_equal(out_text, "");
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM inputs WHERE name LIKE '%set.pcap'"), 1);
    assert_int_equal(run("analyze", FIX "pipelining-example.pcap", "--db", db, "--force"), 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM inputs WHERE name LIKE '%set.pcap'"), 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM inputs"), 1);

    assert_int_equal(run("analyze", FIX "set.pcap", "--db", tmp("no/such/dir/x.db")), 1);
    assert_contains(err_text, "cannot create");
    assert_contains(err_text, "No such file or directory");
    assert_int_equal(run("analyze", FIX "set.pcap", "--db", tmpdir, "--force"), 1);
    assert_contains(err_text, "Is a directory");
    if (geteuid() == 0) {
        /* root ignores permissions; sysfs refuses new files even to root */
        assert_int_equal(run("analyze", FIX "set.pcap", "--db", "/sys/slotscope-test.db"), 1);
    } else {
        assert_int_equal(chmod(tmpdir, 0500), 0);
        assert_int_equal(run("analyze", FIX "set.pcap", "--db", tmp("ro.db")), 1);
        assert_int_equal(chmod(tmpdir, 0700), 0);
    }
    assert_contains(err_text, "cannot create");
}

/* --json: every line parses and the report, input, redirects and counter
 * records are there. */
static void test_json_lines(void **state)
{
    (void)state;
    assert_int_equal(run("analyze", FIX "pipelining-example.pcap", "--json"), 0);
    assert_true(assert_json_lines() > 5);
    assert_contains(out_text, "{\"type\":\"report\",");
    assert_contains(out_text, "{\"type\":\"input\",\"name\":");
    assert_contains(out_text, "\"kernel_drops\":0,\"if_drops\":0,\"drops_recorded\":false,");
    assert_contains(out_text, "{\"type\":\"redirects\",\"total\":0,");
    assert_contains(out_text, "{\"type\":\"counter\",\"name\":\"packets\",\"value\":");
    /* Hostile bytes stay valid JSON. */
    assert_int_equal(run("analyze", FIX "resp_3_malicious.pcap", "--json"), 0);
    assert_json_lines();
}

/* A capture cut in the middle of a record: one error line, the rest of the
 * report still printed and stored, exit 1. */
static void test_truncated_capture(void **state)
{
    char cmd[1024];
    const char *cut = tmp("cut.pcap"), *db = tmp("cut.db");
    struct stat sb;
    (void)state;
    assert_int_equal(stat(FIX "start-with-server.pcap", &sb), 0);
    snprintf(cmd, sizeof cmd, "head -c %lld '%s' > '%s'", (long long)sb.st_size / 2,
             FIX "start-with-server.pcap", cut);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(run("analyze", cut, "--db", db), 1);
    assert_contains(err_text, "slotscope: ");
    assert_contains(out_text, "What the capture could not see");
    assert_contains(out_text, "input error");
    th_assert_db_ok(db);
    assert_true(th_db_int(db, "SELECT packets FROM inputs") > 10);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM inputs WHERE error <> ''"), 1);
}

/* ---------------------------------------------------------------- query */

static void test_queries(void **state)
{
    static const char *const names[] = {"client", "findings", "health", "latency_by_client",
                                        "latency_by_slot", "migrations", "nodes", "offenders"};
    const char *db = tmp("q.db");
    (void)state;
    assert_int_equal(run("query", "--list"), 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_contains(out_text, names[i]);
    assert_contains(out_text, "which clients mishandled redirects");

    assert_int_equal(run("analyze", FIX "set.pcap", "--db", db), 0);
    assert_int_equal(run("query", db, "health"), 0);
    assert_contains(out_text, "name");
    assert_contains(out_text, "mid_stream");
    assert_contains(out_text, "set.pcap");
    assert_int_equal(run("query", db, "client", "--param", "client=127.0.0.1"), 0);
    assert_contains(out_text, "127.0.0.1:6379"); /* its connection */
    assert_int_equal(run("query", db, "nodes", "--json"), 0);
    assert_contains(out_text, "\"node\":\"127.0.0.1:6379\"");
    /* A .sql file by path. */
    assert_int_equal(run("query", db, SS_SOURCE_DIR "/queries/offenders.sql"), 0);
}

/* ---------------------------------------------------------------- findings */

/* A capture with misbehaving clients: findings in the report, exit 3 with
 * --fail-on-findings, the findings table matches the JSON. */
static void test_findings_capture(void **state)
{
    const char *db = tmp("f.db");
    (void)state;
    assert_int_equal(run("analyze", FINDINGS_PCAP, "--db", db, "--fail-on-findings"), 3);
    assert_contains(out_text, "clients by impact");
    assert_contains(out_text, "ask_cached");
    assert_contains(out_text, "evidence: ");
    assert_true(th_db_int(db, "SELECT count(*) FROM findings") > 0);
    assert_true(th_db_int(db, "SELECT count(*) FROM redirects") > 0);
    assert_true(th_db_int(db, "SELECT count(*) FROM slot_migrations") > 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM findings WHERE json_valid(evidence) = 0"), 0);

    assert_int_equal(run("analyze", FINDINGS_PCAP, "--json"), 0);
    assert_int_equal(assert_json_lines() > 0, 1);
    assert_contains(out_text, "{\"type\":\"finding\",");
    assert_contains(out_text, "{\"type\":\"migration\",");
    assert_int_equal(run("query", db, "offenders"), 0);
    assert_contains(out_text, "client");
}

/* The report says what it saw whole (issue 13): node ids of 40 hex digits,
 * SETSLOT's node ids, both endpoints of an evidence event whose connection
 * closed before it was judged, the operations left unjudged, and a migration
 * that SETSLOT STABLE ended shown as aborted. */
static void test_report_verdicts(void **state)
{
    const char *db = tmp("v.db");
    (void)state;
    assert_int_equal(run("analyze", SS_FIXTURES "/cluster/reshard.pcap", "--db", db), 0);
    assert_contains(out_text, "id 6f2d7c4062ca9fb096810e749fa6ee48ca40ecca\n");
    assert_contains(out_text, "IMPORTING f429aae808d00f3ec46f6f41851c03af0795b70c (conn ");
    assert_contains(out_text, "(conn 2422 127.0.0.18:36081 -> 127.0.0.1:30100)");
    assert_contains(out_text, "(conn 2212 127.0.0.13:49925 -> 127.0.0.1:30101)");
    assert_contains(out_text, "0 still waiting for a retry at the end, not judged (abandoned_ops)");
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE slot_migrations SET complete = 2 WHERE slot = 9380",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    assert_int_equal(run("report", db), 0);
    assert_contains(out_text, "5 ASK, 3 keys moved, aborted (SETSLOT STABLE)\n");
}

/* --redact-keys: no key of the capture is stored in clear. */
static void test_redact_keys(void **state)
{
    const char *db = tmp("r.db");
    (void)state;
    assert_int_equal(run("analyze", FINDINGS_PCAP, "--db", db, "--redact-keys", "--store-commands"), 0);
    assert_true(th_db_int(db, "SELECT count(*) FROM redirects WHERE key <> ''") > 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM redirects WHERE key <> ''"
                                " AND key NOT LIKE 'h:%'"), 0);
    assert_true(th_db_int(db, "SELECT count(*) FROM commands WHERE key <> ''") > 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM commands WHERE key <> ''"
                                " AND key NOT LIKE 'h:%'"), 0);
}

/* --set reaches the capture layer's caps too: a table of 2 connections
 * evicts (counted), idle expiry follows idle_timeout_s, and a bad value is a
 * usage error. The assignments are recorded in the database's meta. */
static void test_capture_settings(void **state)
{
    const char *db_small = tmp("small.db"), *db_default = tmp("default.db");
    (void)state;
    assert_int_equal(run("analyze", FINDINGS_PCAP, "--db", db_default), 0);
    assert_int_equal(th_db_int(db_default, "SELECT value FROM counters"
                                           " WHERE name = 'evicted_connections'"), 0);
    assert_int_equal(run("analyze", FINDINGS_PCAP, "--db", db_small, "--set",
                         "capture_connections=2", "--set", "idle_timeout_s=1"), 0);
    assert_true(th_db_int(db_small, "SELECT value FROM counters"
                                    " WHERE name = 'evicted_connections'") > 0);
    assert_int_equal(th_db_int(db_small, "SELECT count(*) FROM meta WHERE key = 'settings'"
                                         " AND value LIKE '%capture_connections=2%'"), 1);
    assert_int_equal(run("analyze", FINDINGS_PCAP, "--set", "capture_connections=0"), 2);
    assert_contains(err_text, "capture_connections=0");
    assert_int_equal(run("analyze", FINDINGS_PCAP, "--set", "ooo_bytes_total=lots"), 2);
    assert_int_equal(run("analyze", "--help"), 0);
    assert_contains(out_text, "idle_timeout_s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_version_and_help, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runtime_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_drops_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_unseen_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_pcapng_drops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_and_report_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_and_unwritable_db, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_capture, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_findings_capture, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_verdicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redact_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capture_settings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
