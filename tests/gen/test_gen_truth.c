/*
 * test_gen_truth.c - slotscope's results on ss-gen captures against the
 * generator's ground truth.
 *
 * For each capture named on the command line (default: all but "lossy") in
 * tests/fixtures/gen/ (made by bench/gen/make-fixtures.sh)
 * this runs `slotscope analyze FILE --db DB --force --store-commands` and
 * compares the database with FILE's .truth.tsv, which says exactly what ss-gen
 * put in the capture on purpose:
 *
 *   finding   client kind slot count node   every finding the analyzer must
 *             report (client, kind, slot, count and node must match; any
 *             other finding is a false positive)
 *   redirect  KIND N        rows of the redirects table per kind
 *   command   NAME N        rows of the commands table per command name (the
 *             first word, so "CLUSTER|SLOTS" counts as CLUSTER)
 *   counter   NAME N        rows of the counters table; "reordered" is
 *             compared with out_of_order when the capture has no gap (a
 *             segment held behind a lost one is out of order too)
 *   migration slot src dst complete   every migration window: exactly one
 *             row of slot_migrations per line, with its source, target and
 *             completeness (1: ended, 0: open); no other window
 *
 * Every mismatch is printed, then the fixture fails, so one run tells all
 * that differs. The bench/gen/ model's meaning of each count is at the top of
 * bench/gen/traffic.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers/dbq.h"

#define MAX_ROWS 256
#define NAME_MAX_LEN 64

/* One "finding" line of a truth file. */
typedef struct truth_finding {
    char client[NAME_MAX_LEN];
    char kind[NAME_MAX_LEN];
    long slot;
    long long count;
    char node[NAME_MAX_LEN];
} truth_finding;

/* One "migration" line. */
typedef struct truth_migration {
    long slot;
    char src[NAME_MAX_LEN], dst[NAME_MAX_LEN];
    int complete;
} truth_migration;

/* A name and a number ("redirect", "command" and "counter" lines). */
typedef struct truth_value {
    char name[NAME_MAX_LEN];
    long long value;
} truth_value;

/* A whole truth file. */
typedef struct truth {
    truth_finding findings[MAX_ROWS];
    size_t n_findings;
    truth_value redirects[8], commands[64], counters[64];
    size_t n_redirects, n_commands, n_counters;
    truth_migration migrations[MAX_ROWS];
    size_t n_migrations;
} truth;

/* Copy a tab-separated field into dst (NUL-terminated); returns the next one. */
static char *next_field(char *p, char *dst, size_t size)
{
    size_t n = 0;
    while (*p && *p != '\t' && *p != '\n') {
        if (n + 1 < size)
            dst[n++] = *p;
        p++;
    }
    dst[n] = 0;
    return *p == '\t' ? p + 1 : p;
}

/* Append name/value to a list, failing the test when it is full. */
static void add_value(truth_value *list, size_t *n, size_t cap, const char *name, long long v)
{
    assert_true(*n < cap);
    snprintf(list[*n].name, sizeof list[*n].name, "%s", name);
    list[*n].value = v;
    (*n)++;
}

/* Read a truth file. */
static void load_truth(const char *path, truth *t)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open truth file '%s'", path);
    memset(t, 0, sizeof *t);
    char line[512], type[32], a[NAME_MAX_LEN], b[NAME_MAX_LEN], c[NAME_MAX_LEN], d[NAME_MAX_LEN];
    char e[NAME_MAX_LEN];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        char *p = next_field(line, type, sizeof type);
        p = next_field(p, a, sizeof a);
        p = next_field(p, b, sizeof b);
        if (strcmp(type, "finding") == 0) {
            p = next_field(p, c, sizeof c);
            p = next_field(p, d, sizeof d);
            next_field(p, e, sizeof e);
            assert_true(t->n_findings < MAX_ROWS);
            truth_finding *r = &t->findings[t->n_findings++];
            snprintf(r->client, sizeof r->client, "%s", a);
            snprintf(r->kind, sizeof r->kind, "%s", b);
            r->slot = strtol(c, NULL, 10);
            r->count = strtoll(d, NULL, 10);
            snprintf(r->node, sizeof r->node, "%s", e);
        } else if (strcmp(type, "migration") == 0) {
            p = next_field(p, c, sizeof c);
            assert_true(t->n_migrations < MAX_ROWS);
            truth_migration *m = &t->migrations[t->n_migrations++];
            m->slot = strtol(a, NULL, 10);
            snprintf(m->src, sizeof m->src, "%s", b);
            snprintf(m->dst, sizeof m->dst, "%s", c);
            m->complete = (int)strtol(p, NULL, 10);
        } else if (strcmp(type, "redirect") == 0) {
            add_value(t->redirects, &t->n_redirects, 8, a, strtoll(b, NULL, 10));
        } else if (strcmp(type, "command") == 0) {
            add_value(t->commands, &t->n_commands, 64, a, strtoll(b, NULL, 10));
        } else if (strcmp(type, "counter") == 0) {
            add_value(t->counters, &t->n_counters, 64, a, strtoll(b, NULL, 10));
        }
    }
    fclose(f);
}

/* The value of a truth list entry, or -1. */
static long long truth_get(const truth_value *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0)
            return list[i].value;
    return -1;
}

/* Run slotscope analyze on pcap into db; the exit status. */
static int run_analyzer(const char *pcap, const char *db, const char *log)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' analyze '%s' --db '%s' --force --store-commands >'%s' 2>&1",
             SS_BINARY, pcap, db, log);
    unlink(db);
    int rc = system(cmd);
    return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

/* One integer from a query with one text parameter (NULL: none); -1 if no
 * row. An SQL error fails the test. */
static long long query_int(sqlite3 *db, const char *sql, const char *param)
{
    const char *params[2] = {param, NULL};
    return th_sql_int(db, sql, params);
}

/* Findings: each truth row exactly once with its count; nothing else. */
static int check_findings(sqlite3 *db, const truth *t, const char *name)
{
    int bad = 0;
    for (size_t i = 0; i < t->n_findings; i++) {
        const truth_finding *r = &t->findings[i];
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db,
                           "SELECT count, node FROM findings WHERE kind = ?1 AND client = ?2 "
                           "AND slot = ?3",
                           -1, &st, NULL);
        sqlite3_bind_text(st, 1, r->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, r->client, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, r->slot);
        int rows = 0;
        long long count = 0;
        char node[NAME_MAX_LEN] = "";
        while (sqlite3_step(st) == SQLITE_ROW) {
            rows++;
            count = sqlite3_column_int64(st, 0);
            const char *nd = (const char *)sqlite3_column_text(st, 1);
            snprintf(node, sizeof node, "%s", nd ? nd : "");
        }
        sqlite3_finalize(st);
        if (rows != 1 || count != r->count || strcmp(node, r->node) != 0) {
            print_error("%s: finding %s client '%s' slot %ld: expected 1 row with count %lld "
                        "node '%s', got %d row(s)%s%lld node '%s'\n",
                        name, r->kind, r->client, r->slot, r->count, r->node, rows,
                        rows ? ", last count " : "", rows ? count : 0LL, node);
            bad++;
        }
    }
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "SELECT kind, client, slot, count FROM findings ORDER BY kind, client",
                       -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 0);
        const char *client = (const char *)sqlite3_column_text(st, 1);
        long slot = (long)sqlite3_column_int64(st, 2);
        int known = 0;
        for (size_t i = 0; i < t->n_findings && !known; i++)
            known = !strcmp(t->findings[i].kind, kind ? kind : "") &&
                    !strcmp(t->findings[i].client, client ? client : "") &&
                    t->findings[i].slot == slot;
        if (!known) {
            print_error("%s: unexpected finding %s client '%s' slot %ld count %lld\n", name,
                        kind, client, slot, (long long)sqlite3_column_int64(st, 3));
            bad++;
        }
    }
    sqlite3_finalize(st);
    return bad;
}

/* Redirect rows per kind. */
static int check_redirects(sqlite3 *db, const truth *t, const char *name)
{
    int bad = 0;
    for (size_t i = 0; i < t->n_redirects; i++) {
        long long got = query_int(db, "SELECT count(*) FROM redirects WHERE kind = ?1",
                                  t->redirects[i].name);
        if (got != t->redirects[i].value) {
            print_error("%s: redirects %s: expected %lld, got %lld\n", name, t->redirects[i].name,
                        t->redirects[i].value, got);
            bad++;
        }
    }
    long long other = query_int(db,
                                "SELECT count(*) FROM redirects WHERE kind NOT IN "
                                "('MOVED', 'ASK', 'TRYAGAIN', 'CROSSSLOT')",
                                NULL);
    if (other != 0) {
        print_error("%s: redirects of other kinds: expected 0, got %lld\n", name, other);
        bad++;
    }
    return bad;
}

/* Command rows per name (first word), both ways. */
static int check_commands(sqlite3 *db, const truth *t, const char *name)
{
    int bad = 0;
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db,
                       "SELECT upper(CASE WHEN instr(name, '|') > 0 THEN substr(name, 1, "
                       "instr(name, '|') - 1) WHEN instr(name, ' ') > 0 THEN substr(name, 1, "
                       "instr(name, ' ') - 1) ELSE name END) AS n, count(*) FROM commands "
                       "GROUP BY n ORDER BY n",
                       -1, &st, NULL);
    size_t seen = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *cmd = (const char *)sqlite3_column_text(st, 0);
        long long got = sqlite3_column_int64(st, 1);
        long long want = truth_get(t->commands, t->n_commands, cmd ? cmd : "");
        if (want >= 0)
            seen++;
        if (got != want) {
            print_error("%s: commands %s: expected %lld, got %lld\n", name, cmd,
                        want < 0 ? 0 : want, got);
            bad++;
        }
    }
    sqlite3_finalize(st);
    if (seen != t->n_commands) {
        for (size_t i = 0; i < t->n_commands; i++) {
            long long got = query_int(db, "SELECT count(*) FROM commands WHERE name = ?1 OR "
                                          "name LIKE ?1 || '|%'", t->commands[i].name);
            if (got == 0) {
                print_error("%s: commands %s: expected %lld, got 0\n", name, t->commands[i].name,
                            t->commands[i].value);
                bad++;
            }
        }
    }
    return bad;
}

/* Counters named in the truth; reordered <-> out_of_order without gaps. */
static int check_counters(sqlite3 *db, const truth *t, const char *name)
{
    int bad = 0;
    long long gaps = truth_get(t->counters, t->n_counters, "gaps");
    for (size_t i = 0; i < t->n_counters; i++) {
        const char *counter = t->counters[i].name;
        if (!strcmp(counter, "reordered")) {
            if (gaps != 0)
                continue;
            counter = "out_of_order";
        }
        long long got = query_int(db, "SELECT value FROM counters WHERE name = ?1", counter);
        if (got != t->counters[i].value) {
            print_error("%s: counter %s: expected %lld, got %lld\n", name, counter,
                        t->counters[i].value, got);
            bad++;
        }
    }
    return bad;
}

/* Migrations: one window per truth line (slot, source, target, complete),
 * no other. */
static int check_migrations(sqlite3 *db, const truth *t, const char *name)
{
    int bad = 0;
    for (size_t i = 0; i < t->n_migrations; i++) {
        const truth_migration *m = &t->migrations[i];
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db, "SELECT source, target, complete FROM slot_migrations "
                               "WHERE slot = ?1", -1, &st, NULL);
        sqlite3_bind_int64(st, 1, m->slot);
        int rows = 0, ok = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            rows++;
            const char *src = (const char *)sqlite3_column_text(st, 0);
            const char *dst = (const char *)sqlite3_column_text(st, 1);
            ok = src && dst && !strcmp(src, m->src) && !strcmp(dst, m->dst) &&
                 (sqlite3_column_int(st, 2) != 0) == (m->complete != 0);
        }
        sqlite3_finalize(st);
        if (rows != 1 || !ok) {
            print_error("%s: migration of slot %ld %s -> %s complete %d: %d window(s)%s\n", name,
                        m->slot, m->src, m->dst, m->complete, rows,
                        rows == 1 ? " that differs" : "");
            bad++;
        }
    }
    long long rows = query_int(db, "SELECT count(*) FROM slot_migrations", NULL);
    if (rows != (long long)t->n_migrations) {
        print_error("%s: %lld migration windows, the truth has %zu\n", name, rows,
                    t->n_migrations);
        bad++;
    }
    return bad;
}

/* One fixture: analyze, then every check; fails if anything differs. */
static void test_fixture(void **state)
{
    const char *name = *state;
    char pcap[1024], tsv[1024], db_path[512], log[512];
    snprintf(pcap, sizeof pcap, "%s/gen/%s.pcap", SS_FIXTURES, name);
    snprintf(tsv, sizeof tsv, "%s/gen/%s.truth.tsv", SS_FIXTURES, name);
    snprintf(db_path, sizeof db_path, "gen_%s.db", name);
    snprintf(log, sizeof log, "gen_%s.log", name);

    static truth t;
    load_truth(tsv, &t);
    assert_true(t.n_counters > 0);

    int rc = run_analyzer(pcap, db_path, log);
    if (rc != 0)
        fail_msg("%s: slotscope analyze exited with %d (see tests/gen/%s)", name, rc, log);

    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int bad = 0;
    bad += check_findings(db, &t, name);
    bad += check_redirects(db, &t, name);
    bad += check_commands(db, &t, name);
    bad += check_counters(db, &t, name);
    bad += check_migrations(db, &t, name);
    sqlite3_close(db);
    if (bad)
        print_error("%s: %d mismatch(es) with the ground truth\n", name, bad);
    assert_int_equal(bad, 0);
}

/* The fixtures named on the command line, or all but "lossy". */
int main(int argc, char **argv)
{
    static const char *const all[] = {"findings", "impaired", "raw10", "quiet"};
    struct CMUnitTest tests[16];
    size_t n = 0;
    if (argc > 1) {
        for (int i = 1; i < argc && n < 16; i++)
            tests[n++] = (struct CMUnitTest){argv[i], test_fixture, NULL, NULL, argv[i]};
    } else {
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            tests[n++] = (struct CMUnitTest){all[i], test_fixture, NULL, NULL, (void *)all[i]};
    }
    return _cmocka_run_group_tests("gen_truth", tests, n, NULL, NULL);
}
