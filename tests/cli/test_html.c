/*
 * test_html.c - `report DB --html FILE` in headless Chromium (Debian's
 * chromium): the page of the shipped sample is self-contained, and the DOM
 * Chromium builds from it has every section and the numbers of the database
 * (read here from the database, not from an earlier output); a screenshot is
 * taken and is not blank. A database with hostile strings gives a page where
 * they are text, never markup. A large incident (16,384 slot migrations,
 * 1,000 clients, a day of 1 s buckets) stays within the page's size bound.
 *
 * Chromium runs with a profile of its own in the scratch folder (tests run
 * in parallel), without sandbox (containers) and GPU.
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
#include "tests/helpers/skip.h"

/* The size bound the page keeps for any incident (cli/report_html.c). */
#define HTML_BOUND (512 * 1024)

static char dir[256];
static char chromium[512];

/* Chromium: $SLOTSCOPE_CHROMIUM, else chromium or chromium-browser on PATH. */
static int find_chromium(void)
{
    const char *env = getenv("SLOTSCOPE_CHROMIUM");
    if (env && access(env, X_OK) == 0) {
        snprintf(chromium, sizeof chromium, "%s", env);
        return 0;
    }
    const char *path = getenv("PATH");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path ? path : "/usr/bin:/bin");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        static const char *const names[] = {"chromium", "chromium-browser"};
        for (int i = 0; i < 2; i++) {
            snprintf(chromium, sizeof chromium, "%s/%s", d, names[i]);
            if (access(chromium, X_OK) == 0)
                return 0;
        }
    }
    chromium[0] = 0;
    return -1;
}

static int setup(void **state)
{
    (void)state;
    find_chromium();
    return th_tmpdir_new("ss_html", dir, sizeof dir);
}

static int teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(dir);
}

static void run_ok(const char *const *args)
{
    th_run r;
    assert_int_equal(th_slotscope(args, &r, NULL, NULL, 0), 0);
    if (!r.exited || r.status != 0)
        fail_msg("slotscope %s %s: exit %d: %s", args[0], args[1], r.status, r.err);
    th_run_free(&r);
}

/* Chromium's DOM of the page (malloc'd), and a screenshot into png when not
 * NULL. */
static char *chromium_dom(const char *html, const char *png)
{
    if (!chromium[0])
        SS_SKIP("chromium not installed (scripts/deps.sh installs it)");
    char url[600], profile[600], shot[700];
    snprintf(url, sizeof url, "file://%s", html);
    snprintf(profile, sizeof profile, "--user-data-dir=%s", th_path(dir, "profile"));
    th_run r;
    assert_int_equal(th_exec(chromium,
                             TH_ARGS("--headless", "--no-sandbox", "--disable-gpu",
                                     "--no-first-run", "--disable-extensions",
                                     "--disable-dev-shm-usage", profile, "--dump-dom", url),
                             &r, NULL, NULL, 0),
                     0);
    if (!r.exited || r.status != 0)
        fail_msg("chromium --dump-dom: exit %d: %s", r.status, r.err);
    char *dom = r.out;
    r.out = NULL;
    th_run_free(&r);
    if (png) {
        snprintf(shot, sizeof shot, "--screenshot=%s", png);
        assert_int_equal(th_exec(chromium,
                                 TH_ARGS("--headless", "--no-sandbox", "--disable-gpu",
                                         "--no-first-run", "--disable-extensions",
                                         "--disable-dev-shm-usage", "--hide-scrollbars",
                                         profile, "--window-size=1200,2400", shot, url),
                                 &r, NULL, NULL, 0),
                         0);
        if (!r.exited || r.status != 0)
            fail_msg("chromium --screenshot: exit %d: %s", r.status, r.err);
        th_run_free(&r);
    }
    return dom;
}

/* "needle" occurs in text, with a message that says which. */
static void assert_has(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected in the page: %s", needle);
}

static void assert_has_int(const char *text, const char *fmt, int64_t v)
{
    char needle[256];
    snprintf(needle, sizeof needle, fmt, (long long)v);
    assert_has(text, needle);
}

/* Nothing in the page would load from elsewhere or run. */
static void assert_self_contained(const char *page)
{
    static const char *const bad[] = {"http://", "https://", "<script", " src=\"", " href=\"",
                                      "@import", "url(", "<link", "<iframe", "<object", "<img"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (strstr(page, bad[i]))
            fail_msg("the page is not self-contained: it holds '%s'", bad[i]);
}

/* The shipped sample: sections and the database's numbers in Chromium's DOM. */
static void test_sample(void **state)
{
    (void)state;
    const char *db = th_path(dir, "sample.db"), *html = th_path(dir, "sample.html");
    char dbp[300], htmlp[300], png[300];
    snprintf(dbp, sizeof dbp, "%s", db);
    snprintf(htmlp, sizeof htmlp, "%s", html);
    snprintf(png, sizeof png, "%s", th_path(dir, "sample.png"));
    run_ok(TH_ARGS("analyze", SS_SOURCE_DIR "/samples/reshard.pcap", "--db", dbp, "--force",
                   "-q"));
    run_ok(TH_ARGS("report", dbp, "--html", htmlp));
    size_t len = 0;
    char *page = th_slurp(htmlp, &len);
    assert_non_null(page);
    assert_true(len < HTML_BOUND);
    assert_self_contained(page);
    free(page);

    char *dom = chromium_dom(htmlp, png);
    static const char *const sections[] = {"id=\"migrations\"", "id=\"redirects\"",
                                           "id=\"latency\"", "id=\"clients\"", "id=\"blind\""};
    for (size_t i = 0; i < 5; i++)
        assert_has(dom, sections[i]);
    sqlite3 *d;
    assert_int_equal(sqlite3_open_v2(dbp, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_has_int(dom, "id=\"total-redirects\">%lld<",
                   th_sql_int(d, "SELECT value FROM counters WHERE name = 'redirects'", NULL));
    assert_has_int(dom, "id=\"total-commands\">%lld<",
                   th_sql_int(d, "SELECT value FROM counters WHERE name = 'commands'", NULL));
    assert_has_int(dom, "id=\"total-findings\">%lld<",
                   th_sql_int(d, "SELECT count(*) FROM findings", NULL));
    /* the redirects chart holds the timeline's totals, which are the counters' */
    int64_t moved = th_sql_int(d, "SELECT value FROM counters WHERE name = 'moved'", NULL);
    assert_true(moved > 0);
    assert_int_equal(moved, th_sql_int(d, "SELECT sum(moved) FROM timeline WHERE scope = "
                                          "'cluster'", NULL));
    assert_has_int(dom, "data-moved=\"%lld\"", moved);
    assert_has_int(dom, "data-ask=\"%lld\"",
                   th_sql_int(d, "SELECT value FROM counters WHERE name = 'ask'", NULL));
    assert_has_int(dom, "data-tryagain=\"%lld\"",
                   th_sql_int(d, "SELECT value FROM counters WHERE name = 'tryagain'", NULL));
    assert_has_int(dom, "data-windows=\"%lld\"",
                   th_sql_int(d, "SELECT count(*) FROM slot_migrations", NULL));
    /* one card per client (and the cluster side's findings): every name */
    int64_t clients = th_sql_int(d, "SELECT count(*) FROM clients", NULL);
    int64_t cluster_side = th_sql_int(d, "SELECT count(*) > 0 FROM findings WHERE client = ''",
                                      NULL);
    assert_has_int(dom, "data-cards=\"%lld\"", clients + cluster_side);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(d, "SELECT name FROM clients", -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        char needle[200];
        snprintf(needle, sizeof needle, "<h3 class=\"cname\">%s</h3>", sqlite3_column_text(st, 0));
        assert_has(dom, needle);
    }
    sqlite3_finalize(st);
    /* each client's findings by kind, with the count of finding_blocks */
    assert_int_equal(sqlite3_prepare_v2(d, "SELECT kind, count FROM finding_blocks"
                                           " WHERE client <> '' ORDER BY client, kind LIMIT 5",
                                        -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        char needle[200];
        snprintf(needle, sizeof needle, "<td class=\"kind\">%s</td><td class=\"count\">%lld</td>",
                 sqlite3_column_text(st, 0), (long long)sqlite3_column_int64(st, 1));
        assert_has(dom, needle);
    }
    sqlite3_finalize(st);
    /* the blind spots: every counter row with the database's value */
    assert_has_int(dom, "data-counter=\"gaps\"><td><code>gaps</code></td><td>%lld</td>",
                   th_sql_int(d, "SELECT coalesce((SELECT value FROM counters WHERE"
                                 " name = 'gaps'), 0)", NULL));
    /* a capture file does not record the kernel's drops: '?' and why, not 0 */
    assert_has(dom, "<tr class=\"unknown\" data-counter=\"kernel_drops\"><td><code>kernel_drops"
                    "</code></td><td>?</td><td>packets dropped by the kernel: none recorded by"
                    " the capture files");
    sqlite3_close(d);
    free(dom);

    /* the screenshot: a PNG, and not a blank page (which compresses to a few KiB) */
    size_t plen = 0;
    char *img = th_slurp(png, &plen);
    assert_non_null(img);
    assert_true(plen > 8 && memcmp(img, "\x89PNG\r\n\x1a\n", 8) == 0);
    assert_true(plen > 60 * 1024);
    free(img);
}

static void exec_sql(sqlite3 *d, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(d, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("sql: %s: %s", err ? err : "?", sql);
}

/* A database of the sample with hostile strings: they are text in the DOM. */
static void test_hostile_strings(void **state)
{
    (void)state;
    char dbp[300], htmlp[300];
    snprintf(dbp, sizeof dbp, "%s", th_path(dir, "hostile.db"));
    snprintf(htmlp, sizeof htmlp, "%s", th_path(dir, "hostile.html"));
    run_ok(TH_ARGS("analyze", SS_SOURCE_DIR "/samples/reshard.pcap", "--db", dbp, "--force",
                   "-q"));
    sqlite3 *d;
    assert_int_equal(sqlite3_open(dbp, &d), SQLITE_OK);
    exec_sql(d, "UPDATE clients SET lib_name = '<script>alert(1)</script>', lib_ver = '\"><img"
                " src=x onerror=alert(2)>' WHERE name = '127.0.0.2';"
                "UPDATE inputs SET name = '</title><script>alert(3)</script>';"
                "UPDATE findings SET kind = '<b>bold</b>' WHERE kind = 'crossslot';"
                "UPDATE slot_migrations SET source = 'a&b<i>', target = 'x\"y''z';"
                "INSERT INTO clients (name, first_us, last_us, connections, commands, redirects,"
                " findings, cluster_aware, is_node) VALUES ('<svg onload=alert(4)>' || char(1)"
                " || char(200), 0, 0, 1, 1, 1, 0, 0, 0);"
                "DELETE FROM failovers;"
                "INSERT INTO failovers (ts_us, kind, old_master, old_id, new_master, new_id,"
                " config_epoch, detected_us, elected_us, done_us, votes, slots, frame)"
                " SELECT min(first_ask_us), 'manual', 'a', '', '<script>alert(5)</script>', '',"
                " 1, 0, 0, 0, 0, 0, 0 FROM slot_migrations WHERE first_ask_us > 0;");
    sqlite3_close(d);
    run_ok(TH_ARGS("report", dbp, "--html", htmlp));
    char *page = th_slurp(htmlp, NULL);
    assert_non_null(page);
    assert_self_contained(page); /* no <script, <img or src= got through */
    assert_null(strstr(page, "<svg onload"));
    assert_null(strstr(page, "<b>bold"));
    assert_null(strstr(page, "<i>"));
    assert_has(page, "&lt;svg onload=alert(4)&gt;\\x01\\xc3\\x88"); /* U+00C8 in UTF-8 */
    free(page);
    char *dom = chromium_dom(htmlp, NULL);
    /* Chromium parsed them as text (serialised escaped again) */
    assert_has(dom, "&lt;script&gt;alert(1)&lt;/script&gt;");
    assert_has(dom, "&lt;b&gt;bold&lt;/b&gt;");
    assert_has(dom, "data-failovers=\"1\"");
    assert_has(dom, "&lt;script&gt;alert(5)&lt;/script&gt;");
    assert_null(strstr(dom, "<script"));
    free(dom);
}

/* 16,384 slot migrations (one at a time, 3 sources; some aborted, one left
 * open), 1,000 clients with findings, a day of 1 s buckets: the page stays
 * within HTML_BOUND, draws at most 80 bars and 48 cards, and says what it
 * left out. */
static void test_large_incident(void **state)
{
    (void)state;
    char dbp[300], htmlp[300];
    snprintf(dbp, sizeof dbp, "%s", th_path(dir, "large.db"));
    snprintf(htmlp, sizeof htmlp, "%s", th_path(dir, "large.html"));
    run_ok(TH_ARGS("analyze", SS_SOURCE_DIR "/samples/reshard.pcap", "--db", dbp, "--force",
                   "-q"));
    sqlite3 *d;
    assert_int_equal(sqlite3_open(dbp, &d), SQLITE_OK);
    exec_sql(d,
             "BEGIN;"
             "DELETE FROM slot_migrations; DELETE FROM clients; DELETE FROM findings;"
             "DELETE FROM timeline; DELETE FROM latency;"
             "UPDATE inputs SET first_us = 1796000000000000, last_us = 1796086400000000;"
             "WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < 16383)"
             " INSERT INTO slot_migrations (slot, source, target, first_ask_us, last_ask_us,"
             " flip_us, importing_us, migrating_us, asks, tryagains, moveds, keys_migrated,"
             " complete) SELECT n, '10.0.0.' || (n / 5462) || ':7000', '10.0.0.9:7000',"
             " 1796000000000000 + n * 5000000 + 100, 1796000000000000 + n * 5000000 + 900,"
             " CASE WHEN n % 97 = 5 OR n = 16383 THEN 0 ELSE 1796000000000000 + n * 5000000 +"
             " 1000 END, 1796000000000000 + n * 5000000, 1796000000000000 + n * 5000000 + 10,"
             " 3, 1, 2, 40, CASE WHEN n = 16383 THEN 0 WHEN n % 97 = 5 THEN 2 ELSE 1 END FROM s;"
             "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n < 999)"
             " INSERT INTO clients (name, first_us, last_us, connections, commands, redirects,"
             " findings, cluster_aware, is_node, lib_name, lib_ver) SELECT '10.1.' || (n / 250)"
             " || '.' || (n % 250), 1796000000000000, 1796086400000000, 4, 10000 + n, 50 + n,"
             " 3, 1, 0, 'redis-py', '5.0.' || n FROM c;"
             "INSERT INTO findings (kind, severity, severity_level, client, node, slot, first_us,"
             " last_us, count, extra_latency_us, summary, evidence, operations)"
             " SELECT k.kind, 'error', 3, c.name, '10.0.0.1:7000', s.slot, 1796000000000000,"
             " 1796000100000000, 7, 1200, 'x', '{}', 7 FROM clients c,"
             " (SELECT 'ask_cached' AS kind UNION ALL SELECT 'asking_missing') k,"
             " (SELECT 1 AS slot UNION ALL SELECT 2 UNION ALL SELECT 4000) s;"
             "WITH RECURSIVE b(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM b WHERE n < 86399)"
             " INSERT INTO timeline (bucket_us, width_us, scope, scope_id, scopes, commands,"
             " moved, ask, tryagain, crossslot, clusterdown, asking, retries, direct_ops,"
             " redirected_ops, direct_p50_us, direct_p99_us, redirected_p50_us,"
             " redirected_p99_us) SELECT 1796000000000000 + n * 1000000, 1000000, 'cluster',"
             " 'all', 1, 5000, n % 7, n % 13, n % 5, 0, 0, n % 13, n % 20, 4900, 100, 80, 900,"
             " 300, 20000 + n FROM b;"
             "COMMIT;");
    sqlite3_close(d);
    run_ok(TH_ARGS("report", dbp, "--html", htmlp));
    struct stat sb;
    assert_int_equal(stat(htmlp, &sb), 0);
    printf("large incident page: %lld bytes (bound %d)\n", (long long)sb.st_size, HTML_BOUND);
    assert_true(sb.st_size < HTML_BOUND);
    char *dom = chromium_dom(htmlp, NULL);
    assert_has(dom, "data-windows=\"16384\"");
    const char *bars = strstr(dom, "data-bars=\"");
    assert_non_null(bars);
    int nbars = atoi(bars + strlen("data-bars=\""));
    assert_true(nbars > 3 && nbars <= 80); /* three sources, aborted ones apart */
    assert_has(dom, "data-clients=\"1000\"");
    assert_has(dom, "data-cards=\"48\"");
    assert_has(dom, "id=\"clients-not-shown\">752 more clients"); /* 1000 - 48 - 200 */
    const char *cols = strstr(dom, "data-columns=\"");
    assert_non_null(cols);
    int ncols = atoi(cols + strlen("data-columns=\""));
    assert_true(ncols > 100 && ncols <= 240);
    /* the kinds' totals survive the columns: sums of the whole day */
    sqlite3 *r;
    assert_int_equal(sqlite3_open_v2(dbp, &r, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_has_int(dom, "data-moved=\"%lld\"",
                   th_sql_int(r, "SELECT sum(moved) FROM timeline", NULL));
    assert_has_int(dom, "data-ask=\"%lld\"", th_sql_int(r, "SELECT sum(ask) FROM timeline", NULL));
    sqlite3_close(r);
    free(dom);

    /* the sources taking turns slot by slot (16,384 ranges of one slot): the
     * ranges are compacted while read, every slot is still drawn */
    assert_int_equal(sqlite3_open(dbp, &d), SQLITE_OK);
    exec_sql(d, "UPDATE slot_migrations SET source = '10.0.0.' || (slot % 3) || ':7000'");
    sqlite3_close(d);
    run_ok(TH_ARGS("report", dbp, "--html", htmlp));
    assert_int_equal(stat(htmlp, &sb), 0);
    assert_true(sb.st_size < HTML_BOUND);
    char *page = th_slurp(htmlp, NULL);
    assert_non_null(page);
    bars = strstr(page, "data-bars=\"");
    assert_non_null(bars);
    nbars = atoi(bars + strlen("data-bars=\""));
    assert_true(nbars >= 6 && nbars <= 80); /* 3 sources x (moved, aborted), 1 open */
    assert_null(strstr(page, "more slots are not drawn"));
    free(page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_hostile_strings),
        cmocka_unit_test(test_large_incident),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
