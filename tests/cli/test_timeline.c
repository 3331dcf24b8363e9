/*
 * test_timeline.c - the time series from the command line (issue 18):
 * --bucket sets the width of the timeline table's buckets (and a bad value is
 * a usage error), every width adds up to the same counters, `query DB
 * timeline --json` gives the table's rows, and the rows are the same for
 * --threads 1, 2 and 3.
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

#define SAMPLE SS_SOURCE_DIR "/samples/reshard.pcap"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_timeline", dir, sizeof dir);
}

static int teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(dir);
}

/* slotscope with args; its exit code, its output in *out (malloc'd) when
 * out is not NULL. */
static int run(const char *const *args, char **out)
{
    th_run r;
    assert_int_equal(th_slotscope(args, &r, NULL, NULL, 0), 0);
    int code = th_exit_code(&r);
    if (out) {
        *out = r.out;
        r.out = NULL;
    }
    th_run_free(&r);
    return code;
}

static void analyze(const char *db, const char *extra1, const char *extra2)
{
    const char *args[12] = {"analyze", SAMPLE, "--db", db, "--force", "-q"};
    int n = 6;
    if (extra1)
        args[n++] = extra1;
    if (extra2)
        args[n++] = extra2;
    args[n] = NULL;
    assert_int_equal(run(args, NULL), 0);
}

/* Each width: rows of that width on its multiples, adding up to the counters. */
static void test_bucket_widths(void **state)
{
    (void)state;
    static const struct {
        const char *arg;
        int64_t us;
    } widths[] = {{NULL, 1000000}, {"10s", 10000000}, {"1m", 60000000}, {"250ms", 250000}};
    int64_t rows_1s = 0;
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        char db[300];
        snprintf(db, sizeof db, "%s", th_path(dir, "w.db"));
        analyze(db, widths[i].arg ? "--bucket" : NULL, widths[i].arg);
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM timeline WHERE width_us <> %lld"
                                  " OR bucket_us %% %lld <> 0", (long long)widths[i].us,
                 (long long)widths[i].us);
        assert_int_equal(th_db_int(db, sql), 0);
        assert_true(th_db_int(db, "SELECT count(*) FROM timeline") > 0);
        static const char *const pairs[][2] = {{"commands", "commands"}, {"moved", "moved"},
                                               {"ask", "ask"}, {"tryagain", "tryagain"},
                                               {"crossslot", "crossslot"},
                                               {"redirected_ops", "redirected_operations"}};
        for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
            snprintf(sql, sizeof sql, "SELECT (SELECT sum(%s) FROM timeline WHERE scope ="
                                      " 'cluster') = (SELECT value FROM counters WHERE name ="
                                      " '%s')", pairs[k][0], pairs[k][1]);
            if (th_db_int(db, sql) != 1)
                fail_msg("--bucket %s: timeline %s does not add up to the counter",
                         widths[i].arg ? widths[i].arg : "(default)", pairs[k][0]);
        }
        int64_t buckets = th_db_int(db, "SELECT count(*) FROM timeline WHERE scope = 'cluster'");
        if (i == 0)
            rows_1s = buckets;
        else if (widths[i].us > 1000000)
            assert_true(buckets < rows_1s);
    }
    /* bad widths are usage errors */
    static const char *const bad[] = {"0s", "5x", "-1s", "1ms", "2h", "s", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[] = {"analyze", SAMPLE, "-q", "--bucket", bad[i], NULL};
        if (run(args, NULL) != 2)
            fail_msg("--bucket '%s' was accepted", bad[i]);
    }
}

/* query timeline --json: one object per cluster row, with the table's values. */
static void test_query_json(void **state)
{
    (void)state;
    char db[300];
    snprintf(db, sizeof db, "%s", th_path(dir, "q.db"));
    analyze(db, NULL, NULL);
    char *out = NULL;
    assert_int_equal(run(TH_ARGS("query", db, "timeline", "--json"), &out), 0);
    assert_non_null(out);
    int64_t lines = 0;
    for (const char *p = out; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, th_db_int(db, "SELECT count(*) FROM timeline WHERE scope = 'cluster'"));
    /* each cluster row's bucket and counts, as numbers */
    sqlite3 *d;
    assert_int_equal(sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(d, "SELECT bucket_us, commands, moved, ask, direct_ops"
                                           " FROM timeline WHERE scope = 'cluster'", -1, &st,
                                        NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        char needle[256];
        snprintf(needle, sizeof needle, "\"bucket_us\":%lld,\"width_us\":1000000,\"scope\":"
                                        "\"cluster\",\"scope_id\":\"all\",\"scopes\":1,"
                                        "\"commands\":%lld,\"moved\":%lld,\"ask\":%lld",
                 (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1),
                 (long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 3));
        if (!strstr(out, needle))
            fail_msg("query timeline --json lacks %s", needle);
    }
    sqlite3_finalize(st);
    sqlite3_close(d);
    free(out);
    /* scope and id select rows; an unknown parameter is an error */
    assert_int_equal(run(TH_ARGS("query", db, "timeline", "--param", "scope=slots", "--json"),
                         &out), 0);
    assert_non_null(strstr(out, "\"scope\":\"slots\""));
    assert_null(strstr(out, "\"scope\":\"cluster\""));
    free(out);
    assert_int_equal(run(TH_ARGS("query", db, "timeline", "--param", "bogus=1"), NULL), 2);
}

/* The rows of every --threads are the same. */
static void test_threads_same_rows(void **state)
{
    (void)state;
    static const char sql[] =
        "SELECT count(*) || ':' || total(bucket_us % 1000003) || ':' || total(commands) || ':'"
        " || total(moved * 3 + ask * 5 + tryagain * 7 + asking * 11 + retries * 13) || ':' ||"
        " total(direct_ops + redirected_ops * 17) || ':' || total(coalesce(direct_p99_us, 1) +"
        " coalesce(redirected_p99_us, 2)) || ':' || group_concat(scope_id, ',') FROM timeline";
    char first[4096] = "";
    static const char *const threads[] = {"1", "2", "3"};
    for (size_t i = 0; i < 3; i++) {
        char db[300];
        snprintf(db, sizeof db, "%s", th_path(dir, "t.db"));
        analyze(db, "--threads", threads[i]);
        sqlite3 *d;
        assert_int_equal(sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        const char *v = (const char *)sqlite3_column_text(st, 0);
        assert_non_null(v);
        if (i == 0)
            snprintf(first, sizeof first, "%s", v);
        else if (strcmp(first, v))
            fail_msg("--threads %s: timeline differs: %s vs %s", threads[i], v, first);
        sqlite3_finalize(st);
        sqlite3_close(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_widths),
        cmocka_unit_test(test_query_json),
        cmocka_unit_test(test_threads_same_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
