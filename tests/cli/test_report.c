/*
 * test_report.c - the report about clients, end to end (SS_BINARY):
 *   - findings grouped by client, then kind, with slot ranges, the cluster
 *     side apart, the same blocks in text, JSON and the finding_blocks view;
 *     thousands of findings stay about a screen per client, --full shows all;
 *   - who the client is (tests/fixtures/cli/identity.pcap, a real redis 7.0
 *     cluster): library, version and name in clients, connections and the
 *     report; hostile names escaped; the HELLO password nowhere; node links
 *     apart; --client-by name;
 *   - the filters of report, query and analyze, their bad values and exit
 *     codes.
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
#include <zlib.h>

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"

#define IDENTITY_PCAP SS_FIXTURES "/cli/identity.pcap"
#define FINDINGS_PCAP SS_FIXTURES "/gen/findings.pcap"
#define RESHARD_PCAP SS_SOURCE_DIR "/samples/reshard.pcap"

static char tmpdir[256];
static th_run last;
static const char *out_text, *err_text;

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_report", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    th_run_free(&last);
    out_text = err_text = NULL;
    return th_tmpdir_remove(tmpdir);
}

static const char *tmp(const char *name)
{
    return th_path(tmpdir, name);
}

static int run_args(const char *const *args)
{
    th_run_free(&last);
    assert_int_equal(th_slotscope(args, &last, NULL, NULL, 0), 0);
    out_text = last.out;
    err_text = last.err;
    return th_exit_code(&last);
}
#define run(...) run_args((const char *const[]){__VA_ARGS__, NULL})

static void assert_contains(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, text);
}

static void assert_lacks(const char *text, const char *needle)
{
    if (strstr(text, needle))
        fail_msg("did not expect \"%s\" in:\n%s", needle, text);
}

/* Lines of text that contain needle. */
static size_t count_lines(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Run SQL on a database (writable). */
static void db_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    char *msg = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* ---------------------------------------------------------------- grouping */

/* One block per (client, kind) in the text, as many as the view has rows;
 * the JSON has as many finding_block objects, and the finding objects all
 * stay (their keys unchanged, plus operations); the cluster side apart. */
static void test_blocks_text_json_view(void **state)
{
    const char *db = tmp("g.db");
    (void)state;
    assert_int_equal(run("analyze", RESHARD_PCAP, "--db", db, "-q"), 0);
    int64_t blocks = th_db_int(db, "SELECT count(*) FROM finding_blocks");
    int64_t findings = th_db_int(db, "SELECT count(*) FROM findings");
    int64_t clients = th_db_int(db, "SELECT count(DISTINCT client) FROM findings WHERE client <> ''");
    assert_true(blocks > 5 && blocks < findings);
    assert_contains(out_text, "Findings: ");
    assert_contains(out_text, "mishandle");
    assert_contains(out_text, "Cluster side (not a client's doing)");
    /* the block of 127.0.0.18: three slots as one line */
    assert_contains(out_text, "redirect_unfollowed on slots 3479, 8752, 12817 (3 slots)");
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM finding_blocks WHERE client = '127.0.0.18'"
                                   " AND slots = '3479, 8752, 12817' AND findings = 3"),
                     1);
    /* one "N. client" header per client with findings */
    assert_int_equal(count_lines(out_text, ". client "), (size_t)clients);
    assert_int_equal(run("report", db), 0);
    assert_int_equal(count_lines(out_text, ". client "), (size_t)clients);
    assert_int_equal(run("report", db, "--json"), 0);
    assert_int_equal(count_lines(out_text, "{\"type\":\"finding_block\","), (size_t)blocks);
    assert_int_equal(count_lines(out_text, "{\"type\":\"finding\","), (size_t)findings);
    assert_int_equal(count_lines(out_text, "{\"type\":\"client\","), (size_t)clients);
    assert_contains(out_text, "\"slots\":\"3479, 8752, 12817\",\"slot_count\":3");
    assert_contains(out_text, "\"operations\":");
    assert_contains(out_text, "\"finding_blocks\":");
    /* --full lists every finding too */
    assert_int_equal(run("report", db, "--full"), 0);
    assert_true(count_lines(out_text, "      ") > 0);
    assert_int_equal(count_lines(out_text, " time") >= (size_t)findings, 1);
}

/* Thousands of findings: the view writes the slot set as ranges, the text
 * stays about a screen per client (and 20 clients) by default, --full shows
 * every one. */
static void test_thousands_of_findings(void **state)
{
    const char *db = tmp("many.db");
    (void)state;
    assert_int_equal(run("analyze", FINDINGS_PCAP, "--db", db, "-q"), 0);
    /* 3000 asking_missing findings of one client on slots 0-96, 141,
     * 12000-14901 (the id after the analyzer's), and 29 more clients */
    db_exec(db,
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 2999)"
            " INSERT INTO findings (id, kind, severity, severity_level, client, node, slot,"
            " first_us, last_us, count, extra_latency_us, summary, evidence, operations)"
            " SELECT 1000 + i, 'asking_missing', 'error', 3, '10.9.0.1', '10.0.0.2:7001',"
            " CASE WHEN i < 97 THEN i WHEN i = 97 THEN 141 ELSE 12000 + i - 98 END,"
            " 1796024064100000 + i, 1796024064200000 + i, 2, 100, 'followed ASK without ASKING',"
            " '{\"events\":[{\"what\":\"ask\",\"cmd\":\"GET\",\"reply\":\"-ASK 1 x\"}]}', 1 FROM n;"
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 28)"
            " INSERT INTO findings (id, kind, severity, severity_level, client, node, slot,"
            " first_us, last_us, count, extra_latency_us, summary, evidence, operations)"
            " SELECT 5000 + i, 'moved_ignored', 'warning', 2, '10.9.1.' || i, '10.0.0.2:7001', i,"
            " 1796024064100000, 1796024064200000, 3, 10, 'kept sending', '{}', 3 FROM n;");
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM finding_blocks WHERE client = '10.9.0.1'"
                                   " AND slots = '0-96, 141, 12000-14901' AND slot_count = 3000"
                                   " AND findings = 3000 AND count = 6000 AND operations = 3000"),
                     1);
    assert_int_equal(run("report", db), 0);
    assert_contains(out_text, "asking_missing on slots 0-96, 141, 12000-14901 (3000 slots)");
    assert_contains(out_text, "6000 times in 3000 operations");
    assert_contains(out_text, "(3000 findings)");
    assert_contains(out_text, "... and ");
    assert_contains(out_text, "more clients (--full");
    assert_true(count_lines(out_text, "\n") < 200);
    /* the block's lines: header, figures, summary, evidence */
    {
        const char *c = strstr(out_text, "client 10.9.0.1:");
        const char *next = c ? strstr(c + 1, ". client ") : NULL;
        size_t lines = 0;
        assert_non_null(c);
        for (const char *p = c; *p && (!next || p < next); p++)
            lines += *p == '\n';
        assert_true(lines <= 8);
    }
    assert_int_equal(run("report", db, "--full"), 0);
    assert_true(count_lines(out_text, "asking_missing: client 10.9.0.1, slot ") == 3000);
    assert_int_equal(count_lines(out_text, ". client "), 10 + 1 + 29);
}

/* ---------------------------------------------------------------- identity */

/* The real cluster's clients: library, version, name per client and per
 * connection; the report names them; hostile bytes escaped everywhere; the
 * HELLO password nowhere in the database or the outputs; the node link
 * apart from the client on 127.0.0.1. */
static void test_identity_fixture(void **state)
{
    const char *db = tmp("id.db");
    size_t len = 0;
    char *bytes;
    (void)state;
    assert_int_equal(run("analyze", IDENTITY_PCAP, "--db", db, "-q"), 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM clients WHERE name = '127.14.0.1'"
                                   " AND lib_name = 'node-redis' AND lib_ver = '4.7.1'"
                                   " AND client_name = 'worker-a'"), 1);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM clients WHERE name = '127.14.0.2'"
                                   " AND lib_name = 'redis-py' AND lib_ver = '5.0.1'"
                                   " AND client_name = 'py-worker'"), 1);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM clients WHERE name = '127.14.0.3'"
                                   " AND client_name = 'app-a,app-b'"), 1);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM connections WHERE client = '127.14.0.3'"
                                   " AND client_name IN ('app-a', 'app-b')"), 2);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM clients WHERE name = '127.14.0.4'"
                                   " AND lib_name = '\\x1b[31mevil\\x0d\\x0alib'"
                                   " AND length(lib_ver) <= 63 AND lib_ver LIKE '%...'"), 1);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM clients WHERE name = '127.0.0.1'"
                                   " AND client_name = 'local-tool' AND is_node = 0"), 1);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM clients WHERE name = '127.0.0.1 (node)'"
                                   " AND is_node = 1"), 1);
    assert_contains(out_text, "client 127.14.0.1 node-redis 4.7.1 \"worker-a\"");
    assert_contains(out_text, "client 127.14.0.2 redis-py 5.0.1 \"py-worker\"");
    assert_contains(out_text, "\\x1b[31mevil");
    assert_null(strchr(out_text, 0x1b));
    assert_lacks(out_text, "s3cretpw");
    bytes = th_slurp(db, &len);
    assert_non_null(bytes);
    for (size_t i = 0; i + 8 <= len; i++)
        assert_false(memcmp(bytes + i, "s3cretpw", 8) == 0);
    free(bytes);
    assert_int_equal(run("report", db, "--json"), 0);
    assert_contains(out_text, "{\"type\":\"client\",\"name\":\"127.14.0.1\",\"lib_name\":"
                              "\"node-redis\",\"lib_ver\":\"4.7.1\",\"client_name\":\"worker-a\"");
    assert_null(strchr(out_text, 0x1b));
    assert_int_equal(run("analyze", IDENTITY_PCAP, "--json", "-q"), 0);
    assert_lacks(out_text, "s3cretpw");
    /* analyze and report DB print the same grouped text */
    {
        char *first;
        assert_int_equal(run("analyze", IDENTITY_PCAP, "-q"), 0);
        first = strdup(out_text);
        assert_int_equal(run("report", db), 0);
        assert_string_equal(first, out_text);
        free(first);
    }
}

/* --client-by name: the two processes of 127.14.0.3 are two clients, only
 * app-a with findings; the node link stays apart; a bad grouping exits 2. */
static void test_client_by_name(void **state)
{
    const char *db = tmp("name.db");
    (void)state;
    assert_int_equal(run("analyze", IDENTITY_PCAP, "--db", db, "-q", "--client-by", "name"), 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM clients WHERE name IN"
                                   " ('127.14.0.3/app-a', '127.14.0.3/app-b')"), 2);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM clients WHERE name = '127.14.0.3'"), 0);
    assert_true(th_db_int(db, "SELECT count(*) FROM findings WHERE client = '127.14.0.3/app-a'") > 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM findings WHERE client = '127.14.0.3/app-b'"),
                     0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM clients WHERE name = '127.0.0.1 (node)'"
                                   " AND is_node = 1"), 1);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM meta WHERE key = 'client_by'"
                                   " AND value = 'name'"), 1);
    assert_contains(out_text, "client 127.14.0.3/app-a \"app-a\"");
    assert_int_equal(run("analyze", IDENTITY_PCAP, "--client-by", "process"), 2);
    assert_contains(err_text, "host, conn or name");
}

/* Unpack a gzipped fixture into the test's directory; its path. */
static const char *gunzip_fixture(const char *gz, const char *name)
{
    const char *out = tmp(name);
    gzFile in = gzopen(gz, "rb");
    FILE *f = fopen(out, "wb");
    char buf[65536];
    int n;
    assert_non_null(in);
    assert_non_null(f);
    while ((n = gzread(in, buf, sizeof buf)) > 0)
        assert_int_equal(fwrite(buf, 1, (size_t)n, f), (size_t)n);
    assert_int_equal(n, 0);
    gzclose(in);
    assert_int_equal(fclose(f), 0);
    return out;
}

/* Real libraries in a reshard (tests/fixtures/libs, scripts/libs): one block
 * per (client, kind), and the library and version each announced (node-redis
 * and ioredis send CLIENT SETINFO; the view agrees with the text). */
static void test_real_libraries(void **state)
{
    static const struct { const char *lib, *addr, *named; } libs[] = {
        {"node-redis", "127.0.0.25", "client 127.0.0.25 node-redis 6.3.1"},
        {"ioredis", "127.0.0.26", "client 127.0.0.26 ioredis 6.0.0"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        char gz[512], name[64], db[600];
        snprintf(gz, sizeof gz, "%s/libs/%s.pcap.gz", SS_FIXTURES, libs[i].lib);
        snprintf(name, sizeof name, "%s.pcap", libs[i].lib);
        snprintf(db, sizeof db, "%s", tmp(libs[i].lib));
        const char *pcap = gunzip_fixture(gz, name);
        assert_int_equal(run("analyze", pcap, "--db", db, "-q"), 0);
        assert_contains(out_text, libs[i].named);
        int64_t blocks = th_db_int(db, "SELECT count(*) FROM finding_blocks WHERE client <> ''");
        int64_t kinds = th_db_int(db, "SELECT count(DISTINCT client || kind) FROM findings"
                                      " WHERE client <> ''");
        assert_true(blocks > 0);
        assert_int_equal(blocks, kinds);
        /* each block once in the text: "    error   kind" or "    warning kind" */
        assert_int_equal(count_lines(out_text, "\n    error   ") +
                             count_lines(out_text, "\n    warning "),
                         (size_t)(blocks + th_db_int(db, "SELECT count(*) FROM finding_blocks"
                                                         " WHERE client = ''")));
    }
}

/* ---------------------------------------------------------------- filters */

/* report --client/--slot/--node/--since/--until keep what matches; an
 * unknown client or node, a bad slot or time exit 2 with a reason. */
static void test_report_filters(void **state)
{
    const char *db = tmp("f.db");
    (void)state;
    assert_int_equal(run("analyze", RESHARD_PCAP, "--db", db, "-q"), 0);
    assert_int_equal(run("report", db, "--client", "127.0.0.18", "--json"), 0);
    assert_int_equal(count_lines(out_text, "{\"type\":\"finding\","), 3);
    assert_int_equal(count_lines(out_text, "{\"type\":\"finding_block\","), 1);
    assert_int_equal(count_lines(out_text, "{\"type\":\"finding_block\",\"client\":\"127.0.0.18\""), 1);
    assert_contains(out_text, "\"filter\":\"client 127.0.0.18\"");
    assert_int_equal(run("report", db, "--client=127.0.0.18"), 0);
    assert_contains(out_text, "Filtered: client 127.0.0.18");
    assert_int_equal(count_lines(out_text, ". client "), 1);
    assert_int_equal(run("report", db, "--slot", "8752", "--json"), 0);
    assert_int_equal(count_lines(out_text, "{\"type\":\"finding\","), 1);
    assert_contains(out_text, "\"slot\":8752");
    assert_int_equal(run("report", db, "--node", "127.0.0.1:30105", "--json"), 0);
    assert_int_equal(count_lines(out_text, "{\"type\":\"finding\","), 1);
    assert_contains(out_text, "\"kind\":\"readonly_missing\"");
    /* the migrations of the window only; findings overlapping it */
    assert_int_equal(run("report", db, "--since", "+16s", "--until", "+17s", "--json"), 0);
    assert_contains(out_text, "\"kind\":\"readonly_missing\"");
    assert_lacks(out_text, "\"kind\":\"redirect_unfollowed\"");
    assert_int_equal(run("report", db, "--since", "07:40:43", "--json"), 0);
    assert_lacks(out_text, "\"kind\":\"redirect_unfollowed\"");
    assert_contains(out_text, "\"kind\":\"crossslot\"");
    assert_int_equal(run("report", db, "--until", "2026-11-30T07:40:41.4Z", "--json"), 0);
    assert_int_equal(count_lines(out_text, "{\"type\":\"finding\","), 1); /* migration_stuck */
    assert_int_equal(run("report", db, "--since", "@1796024443.1", "--until", "1796024443200000",
                         "--json"), 0);
    assert_contains(out_text, "\"kind\":\"moved_ignored\"");
    /* bad values */
    assert_int_equal(run("report", db, "--client", "10.9.9.9"), 2);
    assert_contains(err_text, "unknown client '10.9.9.9'");
    assert_contains(err_text, "127.0.0.");
    assert_int_equal(run("report", db, "--node", "10.0.0.1:7000"), 2);
    assert_contains(err_text, "unknown node");
    assert_int_equal(run("report", db, "--slot", "16384"), 2);
    assert_int_equal(run("report", db, "--slot", "-1"), 2);
    assert_int_equal(run("report", db, "--slot", "12x"), 2);
    assert_int_equal(run("report", db, "--since", "yesterday"), 2);
    assert_contains(err_text, "bad --since 'yesterday'");
    assert_int_equal(run("report", db, "--until", "+3parsecs"), 2);
    assert_int_equal(run("report", db, "--since", "+10s", "--until", "+5s"), 2);
    assert_contains(err_text, "after --until");
    assert_int_equal(run("report", db, "--since"), 2);
    assert_int_equal(run("report", db, "--client", "127.0.0.18", "--fail-on-findings"), 3);
    assert_int_equal(run("report", db, "--slot", "1", "--fail-on-findings"), 0);
    assert_contains(out_text, "Findings: none");
}

/* query: the same filters over any canned query; a parameter the query does
 * not read, or a client that does not exist, exit 2. */
static void test_query_filters(void **state)
{
    const char *db = tmp("q.db");
    (void)state;
    assert_int_equal(run("analyze", RESHARD_PCAP, "--db", db, "-q"), 0);
    assert_int_equal(run("query", db, "findings", "--client", "127.0.0.18", "--json"), 0);
    /* the kinds, then the findings: all of that client */
    assert_int_equal(count_lines(out_text, "\"kind\":"), 1 + 3);
    assert_int_equal(count_lines(out_text, "\"kind\":\"redirect_unfollowed\""), 1 + 3);
    assert_int_equal(run("query", db, "offenders", "--slot", "3479", "--json"), 0);
    assert_lacks(out_text, "127.0.0.19");
    assert_int_equal(run("query", db, "client", "--param", "client=127.0.0.18"), 0);
    assert_int_equal(run("query", db, "client", "--param", "client=10.1.1.1"), 2);
    assert_contains(err_text, "unknown client '10.1.1.1'");
    assert_int_equal(run("query", db, "offenders", "--param", "colour=red"), 2);
    assert_contains(err_text, "has no parameter 'colour'");
    assert_int_equal(run("query", db, "offenders", "--client", "nobody"), 2);
    assert_int_equal(run("query", db, "migrations", "--since", "+99x"), 2);
    assert_int_equal(run("query", db, "migrations", "--node", "127.0.0.1:30102", "--json"), 0);
    assert_contains(out_text, "9380");
}

/* analyze --since/--until: only the records of the window are analysed (the
 * packet counter says so, meta window and the report too); bad values and
 * live exit 2. */
static void test_analyze_window(void **state)
{
    const char *all = tmp("all.db"), *win = tmp("win.db");
    (void)state;
    assert_int_equal(run("analyze", RESHARD_PCAP, "--db", all, "-q"), 0);
    assert_int_equal(th_db_int(all, "SELECT count(*) FROM meta WHERE key = 'window'"), 0);
    assert_int_equal(run("analyze", RESHARD_PCAP, "--db", win, "-q", "--since", "+14s", "--until",
                         "+15s"), 0);
    assert_contains(out_text, "  window       only records ");
    int64_t p_all = th_db_int(all, "SELECT value FROM counters WHERE name = 'packets'");
    int64_t p_win = th_db_int(win, "SELECT value FROM counters WHERE name = 'packets'");
    assert_true(p_win > 0 && p_win < p_all);
    assert_int_equal(th_db_int(win, "SELECT count(*) FROM findings WHERE first_us <"
                                    " (SELECT min(first_us) FROM inputs) + 14000000"), 0);
    assert_int_equal(th_db_int(win, "SELECT count(*) FROM meta WHERE key = 'window'"
                                    " AND value LIKE '%--since +14s --until +15s%'"), 1);
    assert_int_equal(run("report", win), 0);
    assert_contains(out_text, "  window       only records ");
    /* the same window on worker threads: the same counters and findings */
    {
        const char *w3 = tmp("win3.db");
        static const char digest[] =
            "SELECT (SELECT group_concat(name || '=' || value) FROM counters) ||"
            " (SELECT group_concat(id || kind || client || slot || count) FROM findings)";
        sqlite3 *a = NULL, *b = NULL;
        sqlite3_stmt *sa = NULL, *sb = NULL;
        assert_int_equal(run("analyze", RESHARD_PCAP, "--db", w3, "-q", "--threads", "3",
                             "--since", "+14s", "--until", "+15s"), 0);
        assert_int_equal(sqlite3_open_v2(win, &a, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_open_v2(w3, &b, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(a, digest, -1, &sa, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(b, digest, -1, &sb, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(sa), SQLITE_ROW);
        assert_int_equal(sqlite3_step(sb), SQLITE_ROW);
        assert_string_equal(sqlite3_column_text(sa, 0), sqlite3_column_text(sb, 0));
        sqlite3_finalize(sa);
        sqlite3_finalize(sb);
        sqlite3_close(a);
        sqlite3_close(b);
    }
    assert_int_equal(run("analyze", RESHARD_PCAP, "--since", "soon"), 2);
    assert_int_equal(run("analyze", RESHARD_PCAP, "--since", "+20s", "--until", "+1s"), 2);
    assert_int_equal(run("live", "-i", "lo", "--until", "+1s"), 2);
    assert_contains(err_text, "--until is for analyze");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_blocks_text_json_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thousands_of_findings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identity_fixture, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_libraries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_analyze_window, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
