/*
 * test_bus_writes.c - slotscope against the truth of a real cluster's
 * failovers under write load (tests/fixtures/bus/README.md: takeover, manual,
 * auto and migrate .pcap, cut from one scripts/cluster/bus-writes.sh run, and
 * their .truth.tsv from scripts/cluster/bus-truth.py, which reads the pcap,
 * the bus and the writers' logs itself and never slotscope's output).
 *
 * For each fixture: every ownership change of the truth is a slot_owners row
 * (source bus, same slots, new owner, epoch and time); every failover is a
 * failovers row of the same kind, nodes and epoch, done at the truth's flip
 * and no later than the first CLUSTER NODES poll that showed it; every
 * really lost write is an at_risk_writes row, and every at_risk_writes row is
 * a write the truth knows the old owner acknowledged after the newer claim,
 * with its fate (lost, or overwritten later by the same writer: nothing the
 * application reads is gone); each writer's stale commands and the time of
 * its last one match its own log within one command in flight.
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

#define FIX SS_FIXTURES "/bus/"
#define MAX_FIELDS 10

/* One truth line split at tabs (fields point into line). */
typedef struct tline {
    char line[512];
    char *f[MAX_FIELDS];
    int n;
} tline;

static int split(tline *t)
{
    t->n = 0;
    char *p = t->line;
    p[strcspn(p, "\n")] = 0;
    while (t->n < MAX_FIELDS) {
        t->f[t->n++] = p;
        p = strchr(p, '\t');
        if (!p)
            break;
        *p++ = 0;
    }
    return t->n;
}

static const char *node(const char *port)
{
    static char buf[4][32];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "127.0.0.1:%s", port);
    return buf[i];
}

/* The truth's lines of one kind ("lost", "write", ...), counted by fn's calls. */
static int each(const char *truth, const char *kind, void (*fn)(sqlite3 *, tline *, void *),
                sqlite3 *db, void *ctx)
{
    FILE *f = fopen(truth, "r");
    assert_non_null(f);
    tline t;
    int n = 0;
    while (fgets(t.line, sizeof t.line, f)) {
        split(&t);
        if (strcmp(t.f[0], kind) != 0)
            continue;
        n++;
        fn(db, &t, ctx);
    }
    fclose(f);
    return n;
}

/* owner LO HI OLD NEW EPOCH TS_US */
static void check_owner(sqlite3 *db, tline *t, void *ctx)
{
    (void)ctx;
    assert_int_equal(t->n, 7);
    int64_t n = th_sql_int_p(db,
                             "SELECT count(*) FROM slot_owners WHERE source = 'bus' AND "
                             "slot_lo = ?1 AND slot_hi = ?2 AND node = ?3 AND "
                             "config_epoch = ?4 AND from_us = ?5",
                             t->f[1], t->f[2], node(t->f[4]), t->f[5], t->f[6]);
    if (n != 1)
        fail_msg("no slot_owners row for slots %s-%s to %s epoch %s at %s", t->f[1], t->f[2],
                 t->f[4], t->f[5], t->f[6]);
}

/* failover KIND OLD NEW EPOCH FLIP_US POLL_US */
static void check_failover(sqlite3 *db, tline *t, void *ctx)
{
    (void)ctx;
    assert_int_equal(t->n, 7);
    int64_t done = th_sql_int_p(db,
                                "SELECT done_us FROM failovers WHERE kind = ?1 AND "
                                "old_master = ?2 AND new_master = ?3 AND config_epoch = ?4",
                                t->f[1], node(t->f[2]), node(t->f[3]), t->f[4]);
    if (done != strtoll(t->f[5], NULL, 10))
        fail_msg("failover %s %s -> %s: done_us %lld, truth %s", t->f[1], t->f[2], t->f[3],
                 (long long)done, t->f[5]);
    assert_true(done <= strtoll(t->f[6], NULL, 10)); /* before the poll that showed it */
    if (strcmp(t->f[1], "automatic") != 0)
        return;
    /* detected when the old master was marked FAIL (also when the new master
     * was first seen after that, as in auto.pcap's second cut), elected before done */
    int64_t detected = th_sql_int_p(db,
                                    "SELECT detected_us FROM failovers WHERE kind = ?1 AND "
                                    "old_master = ?2 AND new_master = ?3 AND config_epoch = ?4",
                                    t->f[1], node(t->f[2]), node(t->f[3]), t->f[4]);
    int64_t elected = th_sql_int_p(db,
                                   "SELECT elected_us FROM failovers WHERE kind = ?1 AND "
                                   "old_master = ?2 AND new_master = ?3 AND config_epoch = ?4",
                                   t->f[1], node(t->f[2]), node(t->f[3]), t->f[4]);
    int64_t failed = th_sql_int_p(db,
                                  "SELECT max(ts_us) FROM node_states WHERE node = ?1 AND "
                                  "to_state = 'fail' AND ts_us <= ?2",
                                  node(t->f[2]), t->f[5]);
    if (detected == 0 || detected != failed)
        fail_msg("automatic failover %s -> %s: detected_us %lld, the FAIL at %lld", t->f[2],
                 t->f[3], (long long)detected, (long long)failed);
    assert_true(detected <= elected && elected <= done);
}

/* lost KEY VALUE PORT ACK_US WHY */
static void check_lost(sqlite3 *db, tline *t, void *ctx)
{
    int *before_claim = ctx;
    assert_int_equal(t->n, 6);
    int64_t n = th_sql_int_p(db, "SELECT count(*) FROM at_risk_writes WHERE key = ?1 AND node = ?2",
                             t->f[1], node(t->f[3]));
    if (strcmp(t->f[5], "before_claim") == 0) {
        /* lost to replication lag, before any newer claim was on the wire:
         * the bus cannot show it, and slotscope must not claim it did */
        (*before_claim)++;
        assert_int_equal(n, 0);
        return;
    }
    assert_string_equal(t->f[5], "after_claim");
    if (n != 1)
        fail_msg("lost write %s (%s, acknowledged by %s at %s) not among at_risk_writes",
                 t->f[1], t->f[2], t->f[3], t->f[4]);
}

/* write KEY VALUE PORT ACK_US FATE RISK: the at-risk ones, by fate */
typedef struct fates {
    int at_risk, lost, overwritten, survived;
} fates;

static void check_write(sqlite3 *db, tline *t, void *ctx)
{
    fates *fa = ctx;
    assert_int_equal(t->n, 7);
    int64_t n = th_sql_int_p(db, "SELECT count(*) FROM at_risk_writes WHERE key = ?1 AND node = ?2",
                             t->f[1], node(t->f[3]));
    if (strcmp(t->f[6], "1") != 0) {
        if (n != 0)
            fail_msg("write %s (%s) by %s at %s is at risk for slotscope, not for the truth",
                     t->f[1], t->f[2], t->f[3], t->f[4]);
        return;
    }
    if (n != 1)
        fail_msg("write %s (%s) by %s at %s is at risk for the truth, not for slotscope",
                 t->f[1], t->f[2], t->f[3], t->f[4]);
    fa->at_risk++;
    if (strcmp(t->f[5], "lost") == 0)
        fa->lost++;
    else if (strcmp(t->f[5], "overwritten") == 0)
        fa->overwritten++;
    else
        fa->survived++;
}

/* stale CLIENT LO HI OLD NEW COMMANDS FIRST_US LAST_US UNTOLD_US */
static void check_stale(sqlite3 *db, tline *t, void *ctx)
{
    (void)ctx;
    assert_int_equal(t->n, 10);
    const char *where = " FROM convergence WHERE client = ?1 AND slot_lo = ?2 AND "
                        "slot_hi = ?3 AND old_node = ?4 AND new_node = ?5";
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT stale_commands%s", where);
    int64_t stale = th_sql_int_p(db, sql, t->f[1], t->f[2], t->f[3], node(t->f[4]),
                                 node(t->f[5]));
    snprintf(sql, sizeof sql, "SELECT last_stale_us%s", where);
    int64_t last = th_sql_int_p(db, sql, t->f[1], t->f[2], t->f[3], node(t->f[4]),
                                node(t->f[5]));
    int64_t want = strtoll(t->f[6], NULL, 10), want_last = strtoll(t->f[8], NULL, 10);
    /* the writer logs answers, slotscope requests: a request sent just
     * before the flip and answered after it is the writer's only */
    if (stale < want - 1 || stale > want)
        fail_msg("%s: %lld stale commands to %s, its log says %lld", t->f[1],
                 (long long)stale, t->f[4], (long long)want);
    if (stale == 0)
        return;
    /* its last one: sent before the writer logged the answer, within 50 ms */
    if (last > want_last || want_last - last > 50000)
        fail_msg("%s: last stale command at %lld, its log says answered at %lld", t->f[1],
                 (long long)last, (long long)want_last);
}

static void analyze_with(const char *name, char *db_path, size_t size, const char *set)
{
    char pcap[512];
    snprintf(pcap, sizeof pcap, "%s%s.pcap", FIX, name);
    snprintf(db_path, size, "/tmp/ss_bus_writes_%s_%d.db", name, (int)getpid());
    remove(db_path);
    th_run r;
    memset(&r, 0, sizeof r);
    int rc = set ? th_run_binary(&r, SS_BINARY,
                                 TH_ARGS("analyze", pcap, "-q", "--db", db_path, "--set", set),
                                 NULL, NULL, 0)
                 : th_run_binary(&r, SS_BINARY, TH_ARGS("analyze", pcap, "-q", "--db", db_path),
                                 NULL, NULL, 0);
    if (rc != 0)
        fail_msg("slotscope analyze %s: exit %d: %s", pcap, rc, r.err ? r.err : "");
    th_run_free(&r);
}

static void analyze(const char *name, char *db_path, size_t size)
{
    analyze_with(name, db_path, size, NULL);
}

/* The owner changes of a truth file, for the flip of a stale line. */
typedef struct flips {
    tline t[8];
    int n;
} flips;

static void keep_owner(sqlite3 *db, tline *t, void *ctx)
{
    (void)db;
    flips *fl = ctx;
    if (fl->n >= 8)
        return;
    tline *c = &fl->t[fl->n++];
    *c = *t;
    for (int k = 0; k < t->n; k++) /* its fields, in its own copy of the line */
        c->f[k] = c->line + (t->f[k] - t->line);
}

/* stale CLIENT LO HI OLD NEW COMMANDS FIRST_US LAST_US UNTOLD_US against
 * slow_convergence at SLOW_MS: a writer whose last write the old owner still
 * acknowledged (before any MOVED) came later than the threshold after its
 * first command since the change (plus 50 ms: the log has answers, slotscope
 * requests) has the finding, one whose came sooner than the threshold minus
 * 50 ms has none. */
#define SLOW_MS 500
static void check_slow(sqlite3 *db, tline *t, void *ctx)
{
    const flips *fl = ctx;
    for (int i = 0; i < fl->n; i++) {
        const tline *o = &fl->t[i];
        if (strcmp(o->f[1], t->f[2]) || strcmp(o->f[2], t->f[3]) || strcmp(o->f[3], t->f[4]) ||
            strcmp(o->f[4], t->f[5]))
            continue;
        int64_t untold = strtoll(t->f[9], NULL, 10);
        int64_t late = untold ? untold - strtoll(t->f[7], NULL, 10) : 0;
        int64_t n = th_sql_int_p(db,
                                 "SELECT count(*) FROM findings WHERE kind = 'slow_convergence' "
                                 "AND client = ?1 AND node = ?2 AND slot = ?3",
                                 t->f[1], node(t->f[4]), t->f[2]);
        if (late > (SLOW_MS + 50) * 1000 && n != 1)
            fail_msg("%s served stale for %lld ms: no slow_convergence", t->f[1],
                     (long long)late / 1000);
        if (late < (SLOW_MS - 50) * 1000 && n != 0)
            fail_msg("%s served stale for only %lld ms: slow_convergence", t->f[1],
                     (long long)late / 1000);
        return;
    }
    fail_msg("stale line of %s: no owner change %s-%s", t->f[1], t->f[2], t->f[3]);
}

/* The whole check of one fixture; returns the at-risk writes' fates. */
static fates check_fixture(const char *name, int want_owners, int want_failovers,
                           int want_lost)
{
    char db_path[256], truth[512];
    analyze(name, db_path, sizeof db_path);
    snprintf(truth, sizeof truth, "%s%s.truth.tsv", FIX, name);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(each(truth, "owner", check_owner, db, NULL), want_owners);
    assert_int_equal(each(truth, "failover", check_failover, db, NULL), want_failovers);
    int before_claim = 0;
    assert_int_equal(each(truth, "lost", check_lost, db, &before_claim), want_lost);
    fates fa = {0, 0, 0, 0};
    each(truth, "write", check_write, db, &fa);
    each(truth, "stale", check_stale, db, NULL);
    /* nothing at risk that the truth does not know */
    assert_int_equal(th_sql_int(db, "SELECT count(*) FROM at_risk_writes", NULL), fa.at_risk);
    /* one writes_at_risk finding per (client, node, change), its count the rows' */
    assert_int_equal(th_sql_int(db,
                                "SELECT count(*) FROM findings f WHERE kind = 'writes_at_risk' "
                                "AND count != (SELECT count(*) FROM at_risk_writes w "
                                "WHERE w.finding_id = f.id)",
                                NULL),
                     0);
    sqlite3_close(db);
    th_assert_db_ok(db_path);
    remove(db_path);
    return fa;
}

/* The takeover: the old master, cut from the bus, acknowledged writes after
 * its replica's claim; each is lost or was overwritten later. */
static void test_takeover(void **state)
{
    (void)state;
    fates fa = check_fixture("takeover", 1, 1, 17);
    assert_int_equal(fa.lost, 17);
    assert_int_equal(fa.survived, 0);
    assert_int_equal(fa.at_risk, fa.lost + fa.overwritten);
    assert_true(fa.overwritten > 0);

    /* slow_convergence at 500 ms against the writers' own logs */
    char db_path[256], truth[512];
    analyze_with("takeover", db_path, sizeof db_path, "slow_convergence_ms=500");
    snprintf(truth, sizeof truth, "%stakeover.truth.tsv", FIX);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    flips fl;
    memset(&fl, 0, sizeof fl);
    each(truth, "owner", keep_owner, db, &fl);
    assert_int_equal(each(truth, "stale", check_slow, db, &fl), 4);
    assert_true(th_sql_int(db, "SELECT count(*) FROM findings WHERE kind = 'slow_convergence'",
                           NULL) > 0);
    sqlite3_close(db);

    /* the canned query: one row per writer, the slowest first (w3, 127.0.0.23) */
    th_run r;
    memset(&r, 0, sizeof r);
    assert_int_equal(th_run_binary(&r, SS_BINARY, TH_ARGS("query", db_path, "convergence", "--json"),
                                   NULL, NULL, 0),
                     0);
    int rows = 0;
    for (const char *p = r.out; (p = strstr(p, "\"client\":")) != NULL; p++)
        rows++;
    assert_int_equal(rows, 4);
    assert_true(strstr(r.out, "127.0.0.23") < strstr(r.out, "127.0.0.24"));
    /* the report: text and JSON, the same rows */
    assert_int_equal(th_run_binary(&r, SS_BINARY, TH_ARGS("report", db_path, "--json"), NULL, NULL,
                                   0),
                     0);
    rows = 0;
    for (const char *p = r.out; (p = strstr(p, "\"type\":\"convergence\"")) != NULL; p++)
        rows++;
    assert_int_equal(rows, 4);
    assert_int_equal(th_run_binary(&r, SS_BINARY, TH_ARGS("report", db_path), NULL, NULL, 0), 0);
    assert_non_null(strstr(r.out, "convergence  4 clients after ownership changes, 4 kept using"));
    assert_non_null(strstr(r.out, "127.0.0.23 sent slots 5461-10922 to 127.0.0.1:31401 for 977.108 ms"));
    th_run_free(&r);
    remove(db_path);
}

/* A manual failover loses nothing: the master was paused until its replica
 * caught up, so nothing is at risk. */
static void test_manual(void **state)
{
    (void)state;
    fates fa = check_fixture("manual", 2, 1, 0);
    assert_int_equal(fa.at_risk, 0);
}

/* The automatic failover: the stopped master acknowledged nothing meanwhile. */
static void test_auto(void **state)
{
    (void)state;
    fates fa = check_fixture("auto", 2, 1, 0);
    assert_int_equal(fa.at_risk, 0);
}

/* A migration's SETSLOT NODE: an ownership change on the bus, no failover. */
static void test_migrate(void **state)
{
    (void)state;
    fates fa = check_fixture("migrate", 1, 0, 0);
    assert_int_equal(fa.at_risk, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_takeover),
        cmocka_unit_test(test_manual),
        cmocka_unit_test(test_auto),
        cmocka_unit_test(test_migrate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
