/*
 * test_cluster.c - slotscope on a real Redis Cluster reshard.
 *
 * The capture tests/fixtures/cluster/reshard.pcap was made by
 * scripts/cluster/make-fixtures.sh: a 3+3 node cluster on loopback, slots
 * migrated for real (SETSLOT/MIGRATE by hand and redis-cli --cluster reshard),
 * correct clients (redis-cli -c, redis-py RedisCluster, a raw-socket client)
 * and one deliberately broken client per finding kind, each from its own
 * 127.0.0.x address. expected.tsv, written by the same run from what each
 * client did, says which findings each client must get (see
 * scripts/cluster/clients.py, write_expected, for the format).
 *
 * This test runs `slotscope analyze CAPTURE --db DB --set ...` (SS_BINARY) and
 * checks the database with SQLite's own API:
 *   - every expected (client, kind, slot) finding is there once, with the
 *     count of occurrences the client's mistakes make;
 *   - no other finding: its (client, kind, slot) is expected, and no finding
 *     names a client the scenario does not know;
 *   - the correct clients and the nodes' own connections get no finding at
 *     all, and were seen (so that "no finding" means something);
 *   - the redirects table holds exactly the redirects on the wire (decoded by
 *     tshark: the wire_redirect lines), at least those the clients counted;
 *   - one migration window per (slot, source, target) the scenario made and
 *     no other, complete or still open as it was left, with the wire's ASK
 *     count and first/last ASK times (wire_ask), and its flip and its last
 *     ASK no later than the first MOVED to the target (wire_moved).
 *
 * The live version (live-cluster.sh) makes a new capture and runs this same
 * program on it: the environment variable SS_CLUSTER_DIR then names the
 * directory holding reshard.pcap and expected.tsv.
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

#define MAX_LINES 256
#define FIELD_MAX 160

/* One line of expected.tsv, split at tabs. */
typedef struct exp_line {
    char what[16];            /* set, finding, clean, redirect, migration */
    char f[4][FIELD_MAX];     /* the fields after it */
} exp_line;

static exp_line lines[MAX_LINES];
static size_t n_lines;
static char dir[512];         /* where reshard.pcap and expected.tsv are */
static char tmpdir[64];
static sqlite3 *db;

/* Split a tab-separated line into out (what + up to 4 fields). */
static void split_line(char *text, exp_line *out)
{
    char *save = NULL;
    char *tok = strtok_r(text, "\t\r\n", &save);
    memset(out, 0, sizeof *out);
    snprintf(out->what, sizeof out->what, "%s", tok ? tok : "");
    for (int i = 0; i < 4 && (tok = strtok_r(NULL, "\t\r\n", &save)); i++)
        snprintf(out->f[i], FIELD_MAX, "%s", tok);
}

/* Read expected.tsv; comments and blank lines are skipped. 0 or -1. */
static int load_expected(void)
{
    char path[600], buf[512];
    snprintf(path, sizeof path, "%s/expected.tsv", dir);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "cannot open '%s'\n", path);
        return -1;
    }
    while (fgets(buf, sizeof buf, fp) && n_lines < MAX_LINES) {
        if (buf[0] == '#' || buf[0] == '\n')
            continue;
        split_line(buf, &lines[n_lines++]);
    }
    fclose(fp);
    return n_lines > 0 ? 0 : -1;
}

/* Run slotscope analyze on the capture into tmpdir/db, with every "set"
 * line as --set. Returns its exit status, or -1 (its stderr is printed when
 * it is not 0). */
static int run_slotscope(void)
{
    char pcap[600];
    const char *args[8 + 2 * MAX_LINES];
    size_t argc = 0;
    th_run r;
    snprintf(pcap, sizeof pcap, "%s/reshard.pcap", dir);
    args[argc++] = "analyze";
    args[argc++] = pcap;
    args[argc++] = "--db";
    args[argc++] = th_path(tmpdir, "db");
    args[argc++] = "--quiet";
    for (size_t i = 0; i < n_lines; i++) {
        if (strcmp(lines[i].what, "set") == 0) {
            args[argc++] = "--set";
            args[argc++] = lines[i].f[0];
        }
    }
    args[argc] = NULL;
    if (th_slotscope(args, &r, NULL, NULL, 0) != 0)
        return -1;
    int rc = th_exit_code(&r);
    if (rc != 0)
        fprintf(stderr, "%s", r.err);
    th_run_free(&r);
    return rc;
}

/* Group setup: read the expectations, analyse the capture, open the database. */
static int setup(void **state)
{
    (void)state;
    const char *env = getenv("SS_CLUSTER_DIR");
    snprintf(dir, sizeof dir, "%s", env && *env ? env : SS_FIXTURES "/cluster");
    if (th_tmpdir_new("ss_cluster", tmpdir, sizeof tmpdir) != 0 || load_expected() != 0)
        return -1;
    int rc = run_slotscope();
    if (rc != 0) {
        fprintf(stderr, "slotscope analyze exited with %d\n", rc);
        return -1;
    }
    if (sqlite3_open_v2(th_path(tmpdir, "db"), &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sqlite3_close(db);
    return th_tmpdir_remove(tmpdir);
}

/* The integer result of a query with up to three text parameters (NULL ends
 * them). Fails the test on an SQL error. */
static long long query_int(const char *sql, const char *p1, const char *p2, const char *p3)
{
    const char *params[4] = {p1, p2, p3, NULL};
    return th_sql_int(db, sql, params);
}

/* The client name stored for an expected.tsv client ("-": cluster-side). */
static const char *client_of(const char *field)
{
    return strcmp(field, "-") == 0 ? "" : field;
}

/* Is (client, kind, slot) among the expected findings? */
static int finding_expected(const char *client, const char *kind, int slot)
{
    for (size_t i = 0; i < n_lines; i++)
        if (strcmp(lines[i].what, "finding") == 0 &&
            strcmp(client_of(lines[i].f[0]), client) == 0 && strcmp(lines[i].f[1], kind) == 0 &&
            strtol(lines[i].f[2], NULL, 10) == slot)
            return 1;
    return 0;
}

/* The expectation line of this kind whose first field is key, or NULL. */
static const exp_line *line_for(const char *what, const char *key)
{
    for (size_t i = 0; i < n_lines; i++)
        if (strcmp(lines[i].what, what) == 0 && strcmp(lines[i].f[0], key) == 0)
            return &lines[i];
    return NULL;
}

/* Is client named by a finding or clean line? */
static int client_known(const char *client)
{
    for (size_t i = 0; i < n_lines; i++)
        if ((strcmp(lines[i].what, "finding") == 0 || strcmp(lines[i].what, "clean") == 0) &&
            strcmp(client_of(lines[i].f[0]), client) == 0)
            return 1;
    return 0;
}

/* The expectations are not empty: each kind of line the scenario writes. */
static void test_expectations_present(void **state)
{
    (void)state;
    size_t findings = 0, clean = 0, redirects = 0, migrations = 0;
    for (size_t i = 0; i < n_lines; i++) {
        findings += strcmp(lines[i].what, "finding") == 0;
        clean += strcmp(lines[i].what, "clean") == 0;
        redirects += strcmp(lines[i].what, "redirect") == 0;
        migrations += strcmp(lines[i].what, "migration") == 0;
    }
    /* one broken client per kind: 11 kinds, redirect_loop brings two */
    assert_true(findings >= 11);
    assert_true(clean >= 3);
    assert_int_equal(redirects, 4);
    assert_true(migrations >= 2);
}

/* Every expected finding is in the database, for its client and slot. */
static void test_expected_findings(void **state)
{
    (void)state;
    size_t missing = 0;
    for (size_t i = 0; i < n_lines; i++) {
        const exp_line *e = &lines[i];
        if (strcmp(e->what, "finding") != 0)
            continue;
        long long rows = query_int("SELECT count(*) FROM findings WHERE client = ?1 AND "
                                   "kind = ?2 AND slot = CAST(?3 AS INTEGER)",
                                   client_of(e->f[0]), e->f[1], e->f[2]);
        long long count = query_int("SELECT coalesce(sum(count), 0) FROM findings WHERE "
                                    "client = ?1 AND kind = ?2 AND slot = CAST(?3 AS INTEGER)",
                                    client_of(e->f[0]), e->f[1], e->f[2]);
        char *end = NULL;
        long long want = strtoll(e->f[3], &end, 10);
        if (!e->f[3][0] || *end || rows != 1 || count != want) {
            fprintf(stderr, "finding: client '%s' kind %s slot %s: %lld rows, count %lld, "
                    "expected 1 row, count %s\n", e->f[0], e->f[1], e->f[2], rows, count,
                    e->f[3][0] ? e->f[3] : "(none given)");
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

/* No finding that the scenario did not cause: each finding's (client, kind,
 * slot) is expected. */
static void test_no_unexpected_findings(void **state)
{
    (void)state;
    sqlite3_stmt *st = NULL;
    size_t extra = 0, rows = 0;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT client, kind, slot, summary FROM findings "
                                        "ORDER BY client, kind, slot",
                                        -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *client = (const char *)sqlite3_column_text(st, 0);
        const char *kind = (const char *)sqlite3_column_text(st, 1);
        rows++;
        if (!finding_expected(client, kind, sqlite3_column_int(st, 2))) {
            fprintf(stderr, "unexpected finding: client '%s'%s kind %s slot %d: %s\n", client,
                    client_known(client) ? "" : " (unknown client)", kind,
                    sqlite3_column_int(st, 2), (const char *)sqlite3_column_text(st, 3));
            extra++;
        }
    }
    sqlite3_finalize(st);
    assert_true(rows > 0);
    assert_int_equal(extra, 0);
}

/* Correct clients and the nodes' own links: seen, and without findings. */
static void test_clean_clients(void **state)
{
    (void)state;
    size_t bad = 0;
    for (size_t i = 0; i < n_lines; i++) {
        const exp_line *e = &lines[i];
        if (strcmp(e->what, "clean") != 0)
            continue;
        long long seen = query_int("SELECT count(*) FROM connections WHERE client = ?1",
                                   e->f[0], NULL, NULL);
        long long n = query_int("SELECT count(*) FROM findings WHERE client = ?1", e->f[0],
                                NULL, NULL);
        if (seen <= 0 || n != 0) {
            fprintf(stderr, "clean client %s (%s): %lld connections, %lld findings\n", e->f[0],
                    e->f[1], seen, n);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

/* Exactly the redirects on the wire (tshark), and at least those the clients
 * counted. */
static void test_redirects(void **state)
{
    (void)state;
    size_t bad = 0, wire = 0;
    for (size_t i = 0; i < n_lines; i++) {
        const exp_line *e = &lines[i];
        int exact = strcmp(e->what, "wire_redirect") == 0;
        if (!exact && strcmp(e->what, "redirect") != 0)
            continue;
        wire += exact;
        long long n = query_int("SELECT count(*) FROM redirects WHERE upper(kind) = upper(?1)",
                                e->f[0], NULL, NULL);
        long long want = strtoll(e->f[1], NULL, 10);
        if (exact ? n != want : (want <= 0 || n < want)) {
            fprintf(stderr, "redirects of kind %s: %lld in the database, %s %lld\n", e->f[0], n,
                    exact ? "on the wire" : "clients got", want);
            bad++;
        }
    }
    assert_int_equal(wire, 4);
    assert_int_equal(bad, 0);
}

/* One column of the migration window of (slot, source, target). */
static long long mig_col(const exp_line *e, const char *col)
{
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT %s FROM slot_migrations WHERE slot = CAST(?1 AS INTEGER) "
             "AND source = ?2 AND target = ?3", col);
    return query_int(sql, e->f[0], e->f[1], e->f[2]);
}

/* Check one migration line against its window; returns the problems found. */
static size_t check_migration(const exp_line *e)
{
    size_t bad = 0;
    long long rows = mig_col(e, "count(*)");
    long long slot_rows = query_int("SELECT count(*) FROM slot_migrations WHERE slot = "
                                    "CAST(?1 AS INTEGER)", e->f[0], NULL, NULL);
    if (rows != 1 || slot_rows != 1) {
        fprintf(stderr, "migration of slot %s %s -> %s: %lld windows (%lld for the slot), "
                "expected one\n", e->f[0], e->f[1], e->f[2], rows, slot_rows);
        return 1;
    }
    int complete = strcmp(e->f[3], "complete") == 0;
    long long done = mig_col(e, "complete"), flip = mig_col(e, "flip_us");
    long long asks = mig_col(e, "asks"), first = mig_col(e, "first_ask_us");
    long long last = mig_col(e, "last_ask_us");
    const exp_line *w = line_for("wire_ask", e->f[0]);
    long long want_asks = w ? strtoll(w->f[1], NULL, 10) : 0;
    long long want_first = w ? strtoll(w->f[2], NULL, 10) : 0;
    long long want_last = w ? strtoll(w->f[3], NULL, 10) : 0;
    if (done != (complete ? 1 : 0) || (complete ? flip <= 0 : flip != 0)) {
        fprintf(stderr, "migration of slot %s: complete %lld, flip %lld, expected %s\n",
                e->f[0], done, flip, e->f[3]);
        bad++;
    }
    if (asks != want_asks || first != want_first || last != want_last) {
        fprintf(stderr, "migration of slot %s: %lld ASK %lld .. %lld, the wire %lld ASK "
                "%lld .. %lld\n", e->f[0], asks, first, last, want_asks, want_first, want_last);
        bad++;
    }
    /* the flip (SETSLOT NODE at the target, the first to get it): no later
     * than the first MOVED to the target; the ASKs after it are the source's
     * until it learns the flip, and so come before that MOVED too (a live
     * run: the target flipped at 77.664801, the source answered -ASK at
     * 77.665844 and -MOVED at 77.698135) */
    for (size_t i = 0; complete && i < n_lines; i++) {
        const exp_line *m = &lines[i];
        if (strcmp(m->what, "wire_moved") || strcmp(m->f[0], e->f[0]) || strcmp(m->f[1], e->f[2]))
            continue;
        long long moved = strtoll(m->f[2], NULL, 10);
        if (flip > moved || want_last > moved) {
            fprintf(stderr, "migration of slot %s: flip %lld, last ASK %lld, first MOVED to "
                    "the target %lld\n", e->f[0], flip, want_last, moved);
            bad++;
        }
    }
    return bad;
}

/* One window per (slot, source, target) the scenario made, and no other. */
static void test_migrations(void **state)
{
    (void)state;
    size_t bad = 0, expected = 0;
    for (size_t i = 0; i < n_lines; i++)
        if (strcmp(lines[i].what, "migration") == 0) {
            expected++;
            bad += check_migration(&lines[i]);
        }
    long long rows = query_int("SELECT count(*) FROM slot_migrations", NULL, NULL, NULL);
    if (rows != (long long)expected) {
        fprintf(stderr, "%lld migration windows, the scenario made %zu\n", rows, expected);
        bad++;
    }
    assert_int_equal(bad, 0);
}

/* The capture is whole: no gaps, no connection lost sync because bytes were
 * missing (what the scenario expects rests on every packet being there). */
static void test_capture_complete(void **state)
{
    (void)state;
    assert_int_equal(query_int("SELECT value FROM counters WHERE name = 'gaps'", NULL, NULL, NULL),
                     0);
    assert_true(query_int("SELECT value FROM counters WHERE name = 'packets'", NULL, NULL,
                          NULL) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expectations_present),
        cmocka_unit_test(test_capture_complete),
        cmocka_unit_test(test_expected_findings),
        cmocka_unit_test(test_no_unexpected_findings),
        cmocka_unit_test(test_clean_clients),
        cmocka_unit_test(test_redirects),
        cmocka_unit_test(test_migrations),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
