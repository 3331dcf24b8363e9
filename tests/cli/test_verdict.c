/*
 * test_verdict.c - the CI verdict end to end: --fail-on-findings, --fail-on,
 * --ignore and the inconclusive capture (exit 4), on the real captures of
 * tests/fixtures/verdict/ (make-fixtures.sh) and samples/reshard.pcap.
 *
 *   inconclusive    each fixture exits 4 under --fail-on-findings with its
 *                   one line on stderr (code and advice), 0 without it; the
 *                   diagnosis is in the database (meta) and in --json; report
 *                   DB says the same
 *   pass/findings   a clean cluster capture exits 0; reshard.pcap exits 3
 *   choosing        --fail-on error|warning|KIND, --ignore KIND, cluster-side
 *                   findings only when asked for
 *   bad values      exit 2 with the option named
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

#define VFX SS_FIXTURES "/verdict/"
#define RESHARD SS_SOURCE_DIR "/samples/reshard.pcap"

static char dir[256];

/* Run slotscope with args; its exit code. The run is left in *r. */
static int run(th_run *r, const char *const *args)
{
    assert_int_equal(th_slotscope(args, r, NULL, NULL, 0), 0);
    return th_exit_code(r);
}

/* Count the lines of text. */
static int lines(const char *text)
{
    int n = 0;
    for (const char *p = text; p && *p; p++)
        n += *p == '\n';
    return n;
}

/* One inconclusive capture: exit 4 and one line naming code and advice under
 * --fail-on-findings; 0 and no line without; meta diagnosis; --json verdict;
 * report DB with --fail-on-findings exits 4 too. */
static void check_inconclusive(const char *file, const char *code, const char *advice)
{
    char path[512], want[96];
    const char *db = th_path(dir, "v.db");
    th_run r;
    snprintf(path, sizeof path, VFX "%s", file);
    snprintf(want, sizeof want, "inconclusive capture (%s): ", code);

    assert_int_equal(run(&r, TH_ARGS("analyze", path, "-q", "--fail-on-findings", "--db", db,
                                     "--force")),
                     4);
    if (!strstr(r.err, want) || !strstr(r.err, advice) || lines(r.err) != 1)
        fail_msg("%s: stderr is not the one line '%s...%s':\n%s", file, want, advice, r.err);
    th_run_free(&r);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM meta WHERE key = 'diagnosis'"), 1);
    sqlite3 *h;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(th_sql_int_p(h, "SELECT count(*) FROM meta WHERE key = 'diagnosis' AND "
                                     "value = ?1", code), 1);
    assert_int_equal(th_sql_int_p(h, "SELECT count(*) FROM meta WHERE key = 'diagnosis_text' "
                                     "AND instr(value, ?1) > 0", advice), 1);
    sqlite3_close(h);

    assert_int_equal(run(&r, TH_ARGS("report", db, "--fail-on-findings")), 4);
    assert_non_null(strstr(r.err, want));
    th_run_free(&r);
    assert_int_equal(run(&r, TH_ARGS("report", db, "--json")), 0);
    assert_non_null(strstr(r.out, "{\"type\":\"verdict\",\"verdict\":\"inconclusive\","
                                  "\"diagnosis\":\""));
    assert_non_null(strstr(r.out, code));
    assert_string_equal(r.err, ""); /* no verdict asked for: no line */
    th_run_free(&r);

    assert_int_equal(run(&r, TH_ARGS("analyze", path, "-q")), 0);
    assert_string_equal(r.err, "");
    th_run_free(&r);

    /* the text report says it where the findings are, with or without any */
    assert_int_equal(run(&r, TH_ARGS("report", db)), 0);
    const char *at = strstr(r.out, "\nFindings: ");
    if (!at || (!strstr(at, "but the capture cannot support a verdict (") &&
                !strstr(at, "The capture cannot support a full verdict (")) ||
        !strstr(at, code) || !strstr(at, advice))
        fail_msg("%s: the report's findings do not say the capture cannot support a verdict "
                 "(%s):\n%s", file, code, r.out);
    th_run_free(&r);
}

static void test_empty(void **state)
{
    (void)state;
    check_inconclusive("empty.pcap", "empty", "no packets");
}

static void test_one_direction(void **state)
{
    (void)state;
    check_inconclusive("one-direction.pcap", "one_direction", "not 'src port N'");
}

static void test_tls(void **state)
{
    (void)state;
    check_inconclusive("tls.pcap", "tls", "the traffic is TLS");
}

static void test_bus_only(void **state)
{
    (void)state;
    check_inconclusive("bus-only.pcap", "cluster_bus_only", "capture the clients' ports");
}

static void test_standalone(void **state)
{
    (void)state;
    check_inconclusive("standalone.pcap", "no_cluster", "no sign of Redis Cluster");
}

/* cluster-clean.pcap as tcpdump -s 96 writes it: the packets past 96
 * bytes are cut, each a gap; the diagnosis says snap length, not loss. */
static void test_snaplen(void **state)
{
    (void)state;
    check_inconclusive("snaplen.pcap", "snaplen", "7 packets were cut by the capture's snap "
                                                  "length");
}

/* The same cut to 54 bytes: the TCP headers (with their options) are cut
 * too, so no TCP packet is decoded; the diagnosis is still the snap
 * length, not "no TCP packets". */
static void test_snaplen_headers(void **state)
{
    (void)state;
    check_inconclusive("snaplen-headers.pcap", "snaplen", "130 of 130 packets were cut by the "
                                                          "capture's snap length before their "
                                                          "payload ended");
}

/* A capture on one node's host (tests/fixtures/cli/README.md): no
 * finding (the whole capture has none of those the cut used to give), the
 * redirects to nodes it does not reach and the writes the node acknowledged
 * before its own claim reached the capture counted, not judged; the
 * diagnosis says why. */
/* Analyze tests/fixtures/cli/FILE into database DB_NAME with
 * --fail-on-findings: a capture cut the way people capture, which must exit
 * 4 with want on stderr. Returns the database's path. */
static const char *analyze_cut(const char *file, const char *db_name, const char *want)
{
    char path[512];
    th_run r;
    const char *db = th_path(dir, db_name);
    snprintf(path, sizeof path, SS_FIXTURES "/cli/%s", file);
    assert_int_equal(run(&r, TH_ARGS("analyze", path, "-q", "--fail-on-findings", "--db", db,
                                     "--force")),
                     4);
    if (!strstr(r.err, want))
        fail_msg("%s: stderr lacks '%s':\n%s", file, want, r.err);
    th_run_free(&r);
    return db;
}

static void test_one_node(void **state)
{
    (void)state;
    const char *db =
        analyze_cut("one-node-bus.pcap.gz", "one.db", "inconclusive capture (nodes_unseen): ");
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM findings"), 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM at_risk_writes"), 0);
    assert_int_equal(th_db_int(db, "SELECT value FROM counters WHERE name = 'at_risk_unseen'"),
                     1);
    assert_true(th_db_int(db, "SELECT value FROM counters WHERE name = 'unseen_target_ops'") >=
                29);
}

/* A capture stopped during a failover (tests/fixtures/cli/README.md):
 * redis-benchmark's 272 SETs bounced by MOVED just before the end wait for
 * their retry, which it sends seconds later on a new connection. They are
 * not judged redirect_unfollowed (22ef996 reported 272 "never retried"),
 * they are counted, and the diagnosis says so; what the capture does show
 * stays (node-redis reading a replica without READONLY). */
static void test_stopped_failover(void **state)
{
    (void)state;
    const char *db = analyze_cut("stopped-failover.pcap.gz", "stopped.db",
                                 "inconclusive capture (redirects_pending): 272 redirected "
                                 "operations were still waiting");
    assert_int_equal(
        th_db_int(db, "SELECT count(*) FROM findings WHERE kind = 'redirect_unfollowed'"), 0);
    assert_int_equal(th_db_int(db, "SELECT value FROM counters WHERE name = 'abandoned_ops'"),
                     272);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM findings WHERE kind = "
                                   "'readonly_missing' AND client = '127.0.0.25'"),
                     1);
}

static void test_cut_short(void **state)
{
    (void)state;
    check_inconclusive("cut-short.pcap", "cut_short", "tcpdump -U (or --immediate-mode)");
}

/* The retries of redirected operations may be in what the capture lost
 * (unseen_retry_ops, set here in a clean run's database): `report DB
 * --fail-on-findings` says the capture cannot support a verdict. */
static void test_redirects_unseen(void **state)
{
    th_run r;
    const char *db = th_path(dir, "unseen.db");
    (void)state;
    assert_int_equal(run(&r, TH_ARGS("analyze", VFX "cluster-clean.pcap", "-q", "--db", db,
                                     "--force")),
                     0);
    th_run_free(&r);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE counters SET value = 3 WHERE name ="
                                     " 'unseen_retry_ops'", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    assert_int_equal(run(&r, TH_ARGS("report", db, "--fail-on-findings")), 4);
    assert_non_null(strstr(r.err, "inconclusive capture (redirects_unseen): the retries of 3"));
    th_run_free(&r);
    assert_int_equal(run(&r, TH_ARGS("report", db, "--json")), 0);
    assert_non_null(strstr(r.out, "\"verdict\":\"inconclusive\",\"diagnosis\":\"redirects_unseen\""));
    th_run_free(&r);
}

/* A clean cluster capture passes; --json says so. */
static void test_clean_passes(void **state)
{
    th_run r;
    (void)state;
    assert_int_equal(run(&r, TH_ARGS("analyze", VFX "cluster-clean.pcap", "-q",
                                     "--fail-on-findings")),
                     0);
    assert_string_equal(r.err, "");
    th_run_free(&r);
    assert_int_equal(run(&r, TH_ARGS("analyze", VFX "cluster-clean.pcap", "-q", "--json",
                                     "--fail-on", "warning")),
                     0);
    assert_non_null(strstr(r.out, "{\"type\":\"verdict\",\"verdict\":\"pass\",\"diagnosis\":\"\""));
    th_run_free(&r);
    /* its text report: no findings, and nothing said against the verdict */
    assert_int_equal(run(&r, TH_ARGS("analyze", VFX "cluster-clean.pcap")), 0);
    assert_non_null(strstr(r.out, "\nFindings: none (no client mishandled a redirect"));
    assert_null(strstr(r.out, "cannot support"));
    th_run_free(&r);
}

/* Exit code of analyze reshard.pcap with the extra options. */
static int reshard_with(const char *a, const char *b, const char *c, const char *d)
{
    th_run r;
    const char *args[] = {"analyze", RESHARD, "-q", a, b, c, d, NULL};
    int code = run(&r, args);
    th_run_free(&r);
    return code;
}

/* reshard.pcap's findings: every client kind but migration_stuck's cluster
 * finding; choosing and ignoring kinds. */
static void test_choosing(void **state)
{
    (void)state;
    static const char all_client_kinds[] =
        "ask_cached,asking_missing,asking_other_connection,asking_interleaved,"
        "redirect_loop,moved_ignored,tryagain_storm,redirect_unfollowed,readonly_missing,"
        "crossslot";
    assert_int_equal(reshard_with("--fail-on-findings", NULL, NULL, NULL), 3);
    assert_int_equal(reshard_with(NULL, NULL, NULL, NULL), 0);
    assert_int_equal(reshard_with("--fail-on", "error", NULL, NULL), 3);
    assert_int_equal(reshard_with("--fail-on", "warning", NULL, NULL), 3);
    assert_int_equal(reshard_with("--fail-on", "crossslot", NULL, NULL), 3);
    assert_int_equal(reshard_with("--fail-on=ask_cached,crossslot", NULL, NULL, NULL), 3);
    /* the cluster-side finding fails only when asked for */
    assert_int_equal(reshard_with("--fail-on", "migration_stuck", NULL, NULL), 3);
    assert_int_equal(reshard_with("--fail-on-findings", "--ignore", all_client_kinds, NULL), 0);
    assert_int_equal(reshard_with("--fail-on", "warning", "--ignore", all_client_kinds), 3);
    assert_int_equal(reshard_with("--fail-on", "migration_stuck", "--ignore",
                                  "migration_stuck"),
                     0);
    assert_int_equal(reshard_with("--fail-on", "crossslot", "--ignore", "crossslot"), 0);
    /* --ignore alone asks for no verdict */
    assert_int_equal(reshard_with("--ignore", "crossslot", NULL, NULL), 0);
}

/* error is the kinds an_finding_severity calls errors: reshard.pcap without
 * its error kinds has only warnings left. */
static void test_classes(void **state)
{
    (void)state;
    static const char errors[] = "asking_missing,asking_other_connection,asking_interleaved,"
                                 "redirect_loop,redirect_unfollowed,crossslot";
    assert_int_equal(reshard_with("--fail-on", "error", "--ignore", errors), 0);
    assert_int_equal(reshard_with("--fail-on", "warning", "--ignore", errors), 3);
}

/* report DB: the same choices. */
static void test_report_choosing(void **state)
{
    const char *db = th_path(dir, "r.db");
    th_run r;
    (void)state;
    assert_int_equal(run(&r, TH_ARGS("analyze", RESHARD, "-q", "--db", db, "--force")), 0);
    th_run_free(&r);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM meta WHERE key = 'diagnosis'"), 0);
    assert_int_equal(run(&r, TH_ARGS("report", db, "--fail-on-findings")), 3);
    th_run_free(&r);
    assert_int_equal(run(&r, TH_ARGS("report", db, "--fail-on", "crossslot", "--ignore",
                                     "crossslot")),
                     0);
    th_run_free(&r);
    assert_int_equal(run(&r, TH_ARGS("report", db, "--fail-on=error")), 3);
    th_run_free(&r);
    /* with --html: the page is written, the verdict still decides the code,
     * and nothing but the page goes out (no text report on stdout) */
    const char *page = th_path(dir, "r.html");
    assert_int_equal(run(&r, TH_ARGS("report", db, "--html", page, "--fail-on-findings")), 3);
    assert_string_equal(r.out, "");
    th_run_free(&r);
    assert_int_equal(access(page, R_OK), 0);
    assert_int_equal(run(&r, TH_ARGS("report", db, "--html", page, "--fail-on", "crossslot",
                                     "--ignore", "crossslot")),
                     0);
    th_run_free(&r);
    assert_int_equal(run(&r, TH_ARGS("report", db, "--fail-on", "nonsense")), 2);
    assert_non_null(strstr(r.err, "bad --fail-on 'nonsense'"));
    th_run_free(&r);
    assert_int_equal(run(&r, TH_ARGS("report", db, "--ignore")), 2);
    assert_non_null(strstr(r.err, "--ignore needs a value"));
    th_run_free(&r);
}

/* Bad values exit 2 and name the option. */
static void test_bad_values(void **state)
{
    static const char *const bad[][2] = {
        {"--fail-on", ""},          {"--fail-on", "fatal"},       {"--fail-on", "error,"},
        {"--fail-on", ",error"},    {"--fail-on", "ask_cached,,crossslot"},
        {"--fail-on", "ASK_CACHED"}, {"--ignore", "error"},       {"--ignore", "warning"},
        {"--ignore", "nope"},       {"--ignore", ""},
    };
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        th_run r;
        char want[64];
        assert_int_equal(run(&r, TH_ARGS("analyze", RESHARD, "-q", bad[i][0], bad[i][1])), 2);
        snprintf(want, sizeof want, "bad %s '%s'", bad[i][0], bad[i][1]);
        if (!strstr(r.err, want))
            fail_msg("%s '%s': stderr lacks \"%s\": %s", bad[i][0], bad[i][1], want, r.err);
        th_run_free(&r);
    }
    th_run r;
    assert_int_equal(run(&r, TH_ARGS("analyze", RESHARD, "-q", "--fail-on")), 2);
    th_run_free(&r);
}

/* The exit codes are in the help texts. */
static void test_help(void **state)
{
    th_run r;
    (void)state;
    assert_int_equal(run(&r, TH_ARGS("analyze", "--help")), 0);
    assert_non_null(strstr(r.out, "4 an inconclusive capture"));
    assert_non_null(strstr(r.out, "--fail-on WHAT"));
    assert_non_null(strstr(r.out, "--ignore KIND"));
    th_run_free(&r);
    assert_int_equal(run(&r, TH_ARGS("--help")), 0);
    assert_non_null(strstr(r.out, "4 the capture cannot support a verdict"));
    th_run_free(&r);
}

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_verdict", dir, sizeof dir);
}

static int teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),         cmocka_unit_test(test_one_direction),
        cmocka_unit_test(test_tls),           cmocka_unit_test(test_bus_only),
        cmocka_unit_test(test_standalone),    cmocka_unit_test(test_cut_short),
        cmocka_unit_test(test_snaplen),
        cmocka_unit_test(test_snaplen_headers),
        cmocka_unit_test(test_one_node),
        cmocka_unit_test(test_stopped_failover),
        cmocka_unit_test(test_redirects_unseen),
        cmocka_unit_test(test_clean_passes),  cmocka_unit_test(test_choosing),
        cmocka_unit_test(test_classes),       cmocka_unit_test(test_report_choosing),
        cmocka_unit_test(test_bad_values),    cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
