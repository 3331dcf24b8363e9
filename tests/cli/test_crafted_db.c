/*
 * test_crafted_db.c - `report` and `query` on crafted databases (issue 15,
 * item 6), the slotscope binary end to end:
 * - INT64 extremes in every time and duration column (and severity_level):
 *   report (text and --json) and every canned query exit normally (under
 *   SANITIZE=1 a signed overflow aborts the child: that is what this catches);
 * - a view with an endless recursive CTE in place of a table (findings, meta):
 *   refused at once, naming it, instead of reading forever (the child is
 *   killed after 20 s, which fails the test);
 * - a missing table, and another schema version: refused, naming them.
 *
 * SLOTSCOPE_TEST_BINARY (environment) runs another binary instead of the one
 * built (to show that the test fails on an older one).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/helpers/child.h"

#define CAPTURE SS_FIXTURES "/gen/findings.pcap"

static char tmpdir[256];
static th_run last;

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_crafted", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    th_run_free(&last);
    return th_tmpdir_remove(tmpdir);
}

static const char *tmp(const char *name)
{
    return th_path(tmpdir, name);
}

/* Polled every 10 ms: SIGKILL once the budget is spent (the run hangs). */
static int kill_when_over(void *ctx, int pid)
{
    int *polls = ctx;
    (void)pid;
    return ++*polls >= 2000 ? SIGKILL : 0;
}

/* Run the binary; its exit code, -1 when a signal ended it (a sanitizer's
 * abort, or the kill after 20 s). */
static int run_args(const char *const *args)
{
    int polls = 0;
    int code = th_run_binary(&last, SS_BINARY, args, kill_when_over, &polls, 2100);
    assert_int_not_equal(code, -2);
    return code;
}
#define run(...) run_args((const char *const[]){__VA_ARGS__, NULL})

static void assert_contains(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, text);
}

/* A real database of the findings capture at path, then sql run on it. */
static void craft(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(run("analyze", CAPTURE, "--db", path, "-q"), 0);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

#define MAX "9223372036854775807"
#define MIN "(-9223372036854775807 - 1)"

/* INT64 extremes everywhere a time or duration is read: every output exits
 * normally and prints no negative duration. */
static void test_int64_extremes(void **state)
{
    (void)state;
    const char *db = tmp("extremes.db");
    craft(db, "UPDATE inputs SET first_us = " MIN ", last_us = " MAX ";"
              "UPDATE findings SET first_us = " MIN ", last_us = " MAX ", extra_latency_us = " MIN
              ", severity_level = (id % 2) * 2147483647 - (id % 3) * 2147483647;"
              "UPDATE slot_migrations SET first_ask_us = " MIN ", last_ask_us = " MAX
              ", flip_us = " MAX ", importing_us = " MIN ", migrating_us = " MAX ";"
              "UPDATE latency SET p50_us = " MIN ", p90_us = " MAX ", p99_us = " MAX
              ", max_us = " MAX ", total_us = " MIN ", extra_us = " MAX ";"
              "UPDATE redirects SET ts_us = " MAX " WHERE id % 2 = 0;"
              "UPDATE redirects SET ts_us = " MIN " WHERE id % 2 = 1;"
              "UPDATE connections SET first_us = " MIN ", last_us = " MAX ";");
    assert_int_equal(run("report", db), 0);
    assert_contains(last.out, "slotscope incident report");
    assert_null(strstr(last.out, "-"  "9223"));
    assert_int_equal(run("report", db, "--json"), 0);

    assert_int_equal(run("query", "--list"), 0);
    char *list = strdup(last.out);
    assert_non_null(list);
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        char name[64];
        if (sscanf(line, "%63s", name) != 1)
            continue;
        /* only the client query reads a client; an unknown one is a usage
         * error (issue 14), said as such */
        int rc = strcmp(name, "client") ? run("query", db, name)
                                         : run("query", db, name, "--param", "client=10.0.0.1");
        if (rc == 2 && !strcmp(name, "client") && strstr(last.err, "unknown client"))
            continue;
        if (rc != 0 && rc != 1)
            fail_msg("query %s: exit %d\n%s", name, rc, last.err);
    }
    free(list);
}

/* An endless view in place of a table: refused at once, naming it. */
static void test_endless_view(void **state)
{
    (void)state;
    const char *findings = tmp("view-findings.db"), *meta = tmp("view-meta.db");
    craft(findings, "DROP TABLE findings;"
                    "CREATE VIEW findings AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL"
                    " SELECT x + 1 FROM c) SELECT x AS id, 'k' || x AS kind, 'warning' AS severity,"
                    " 2 AS severity_level, 'c' AS client, 'n' AS node, 1 AS slot, x AS first_us,"
                    " x AS last_us, 1 AS count, 0 AS extra_latency_us, 's' AS summary,"
                    " '{}' AS evidence FROM c;");
    assert_int_equal(run("report", findings), 1);
    assert_contains(last.err, "findings");
    assert_contains(last.err, "view");
    assert_int_equal(run("query", findings, "findings"), 1);
    assert_contains(last.err, "view");

    craft(meta, "DROP TABLE meta;"
                "CREATE VIEW meta AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL"
                " SELECT x + 1 FROM c) SELECT 'k' || x AS key, x AS value FROM c;");
    assert_int_equal(run("report", meta), 1);
    assert_contains(last.err, "meta");
    assert_contains(last.err, "view");
}

/* A missing table or another schema version: refused, naming it. */
static void test_schema_checked(void **state)
{
    (void)state;
    const char *missing = tmp("missing.db"), *version = tmp("version.db");
    craft(missing, "DROP TABLE latency;");
    assert_int_equal(run("report", missing), 1);
    assert_contains(last.err, "latency");
    craft(version, "UPDATE meta SET value = '5' WHERE key = 'schema_version';");
    assert_int_equal(run("report", version), 1);
    assert_contains(last.err, "schema version 5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_int64_extremes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_endless_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_checked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
