/*
 * test_an_evidence.c - what findings carry besides their kind: evidence that
 * can be checked by hand, counts and summaries that cover every occurrence,
 * and the cost (extra_latency_us) of the operations each finding covers.
 *
 * The cluster is the one of the map fixtures (tests/fixtures/analysis), see
 * migration.h: slot 100 migrates from 127.0.0.1:30310 (S) to :30311 (T).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "tests/analysis/migration.h"
#include "tests/analysis/scenario.h"

static char k3[40], k4[40]; /* more keys of SLOT, besides k1 and k2 */

/* k1 .. k4 of SLOT. */
static int setup(void **state)
{
    mig_keys(state);
    snprintf(k3, sizeof k3, "{%s}.3", k1);
    snprintf(k4, sizeof k4, "{%s}.4", k1);
    assert_int_equal(an_key_slot(k4, strlen(k4)), SLOT);
    return 0;
}

/* How many times needle occurs in hay. */
static int occurrences(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* The evidence event whose "what" is what, as text up to its closing brace
 * (copied into out); fails the test when it is missing. */
static const char *event_of(const char *ev, const char *what, char *out, size_t n)
{
    char pat[96];
    snprintf(pat, sizeof pat, "{\"what\":\"%s\"", what);
    const char *p = strstr(ev, pat);
    assert_non_null(p);
    const char *end = strchr(p, '}');
    assert_non_null(end);
    snprintf(out, n, "%.*s", (int)(end - p + 1), p);
    return out;
}

/* ---------------------------------------------------------------- migration_stuck */

/* A window opened by SETSLOT and left open: the evidence names both SETSLOT
 * commands, the first and the last ASK (connections and times) and the
 * counts; reported at a flush while open, it is updated (same id) by later
 * ASKs and at the end. */
static void test_migration_stuck_evidence(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "migration_stuck_us=1000000"), 0);
    sc s;
    sc_init(&s, &cfg);
    int admin = sc_conn(&s, 9, 51000, S);
    mig_fetch_map(&s, admin, 0);
    int at = sc_conn(&s, 9, 51001, T), as = sc_conn(&s, 9, 51002, S);
    sc_do(&s, at, 1000, 50, "+OK", "CLUSTER", "SETSLOT", "100", "IMPORTING", S_ID, NULL);
    sc_do(&s, as, 1100, 50, "+OK", "CLUSTER", "SETSLOT", "100", "MIGRATING", T_ID, NULL);
    int c1 = sc_conn(&s, 20, 40000, S), c1t = sc_conn(&s, 20, 40001, T);
    int c2 = sc_conn(&s, 21, 40000, S), c2t = sc_conn(&s, 21, 40001, T);
    sc_do(&s, c1, 2000, 100, ASK_T, "GET", k1, NULL);
    sc_do(&s, c1t, 2200, 50, "+OK", "ASKING", NULL);
    sc_do(&s, c1t, 2250, 100, "$", "GET", k1, NULL);
    sc_do(&s, c2, 3000, 100, ASK_T, "GET", k2, NULL);
    sc_do(&s, c2t, 3200, 50, "+OK", "ASKING", NULL);
    sc_do(&s, c2t, 3250, 100, "$", "GET", k2, NULL);

    an_flush(s.an, SC_T0 + 1100 + 1000001); /* longer than the threshold */
    const an_finding *f = sc_find(&s, AN_MIGRATION_STUCK, "");
    assert_non_null(f);
    uint64_t id = f->id;
    assert_int_equal(f->count, 1);
    assert_int_equal(f->severity, AN_ERROR);
    char e[1024];
    const char *ev = sc_evidence(&s, f);
    assert_int_equal(occurrences(ev, "\"what\":"), 4);
    assert_non_null(strstr(ev, "\"omitted\":0"));
    event_of(ev, "SETSLOT IMPORTING", e, sizeof e);
    assert_non_null(strstr(e, "\"conn\":2,"));
    assert_non_null(strstr(e, "\"dst\":\"127.0.0.1:30311\""));
    assert_non_null(strstr(e, "CLUSTER SETSLOT 100 IMPORTING " S_ID));
    event_of(ev, "SETSLOT MIGRATING", e, sizeof e);
    assert_non_null(strstr(e, "\"conn\":3,"));
    assert_non_null(strstr(e, "CLUSTER SETSLOT 100 MIGRATING " T_ID));
    event_of(ev, "first ASK", e, sizeof e);
    assert_non_null(strstr(e, "\"conn\":4,"));
    assert_non_null(strstr(e, "\"src\":\"127.0.0.20:40000\""));
    assert_non_null(strstr(e, "\"ts_us\":1700000000002000,"));
    assert_non_null(strstr(e, ASK_T));
    event_of(ev, "last ASK", e, sizeof e);
    assert_non_null(strstr(e, "\"conn\":6,"));
    assert_non_null(strstr(e, "\"ts_us\":1700000000003000,"));
    assert_non_null(strstr(ev, "\"asks\":2,"));
    assert_non_null(strstr(ev, "\"open\":1,"));

    /* a later ASK: the same finding, its last ASK and count updated */
    int c3 = sc_conn(&s, 22, 40000, S);
    sc_do(&s, c3, 4000000, 100, ASK_T, "GET", k3, NULL);
    sc_finish(&s, 5000000);
    assert_int_equal(sc_count(&s, AN_MIGRATION_STUCK), 1);
    f = sc_find(&s, AN_MIGRATION_STUCK, "");
    assert_int_equal(f->id, id);
    assert_int_equal(f->count, 1);
    assert_int_equal(f->last_us, SC_T0 + 4000100);
    ev = sc_evidence(&s, f);
    event_of(ev, "last ASK", e, sizeof e);
    assert_non_null(strstr(e, "\"conn\":8,"));
    assert_non_null(strstr(e, "\"ts_us\":1700000004000000,"));
    event_of(ev, "first ASK", e, sizeof e);
    assert_non_null(strstr(e, "\"conn\":4,"));
    assert_non_null(strstr(ev, "\"asks\":3,"));
    assert_non_null(strstr(f->summary, "still open at the end of the capture"));
    assert_non_null(strstr(f->summary, "3 ASK"));
    sc_free(&s);
}

/* A window without SETSLOT and with a single ASK: one ASK event, no
 * duplicate "last ASK", still checkable. */
static void test_migration_stuck_single_ask(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 19, 40000, S), ct = sc_conn(&s, 19, 40001, T);
    mig_ask_followed(&s, c, ct, 1000, k1);
    sc_finish(&s, 2000000);
    const an_finding *f = sc_find(&s, AN_MIGRATION_STUCK, "");
    assert_non_null(f);
    const char *ev = sc_evidence(&s, f);
    assert_int_equal(occurrences(ev, "\"what\":"), 1);
    assert_non_null(strstr(ev, "\"what\":\"first ASK\""));
    assert_null(strstr(ev, "SETSLOT"));
    assert_non_null(strstr(ev, "\"asks\":1,"));
    sc_free(&s);
}

/* ---------------------------------------------------------------- tryagain_storm */

/* 60 quick retries: the threshold (10) is crossed early, but the count of
 * retries, the summary and the evidence's latest retry cover all 60, updated
 * at the flush and at the end under the same id. */
static void test_tryagain_storm_counts_every_retry(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 17, 40000, S);
    int64_t t = 1000;
    for (int i = 0; i <= 30; i++, t += 110) /* the first attempt and 30 retries */
        sc_do(&s, c, t, 100, TRYAGAIN, "MGET", k1, k2, NULL);
    assert_int_equal(sc_count(&s, AN_TRYAGAIN_STORM), 1);
    const an_finding *f = sc_find(&s, AN_TRYAGAIN_STORM, "127.0.0.17");
    uint64_t id = f->id;
    assert_non_null(strstr(f->summary, "10 times")); /* as emitted when found */
    an_flush(s.an, SC_T0 + t);
    f = sc_find(&s, AN_TRYAGAIN_STORM, "127.0.0.17");
    assert_int_equal(f->id, id);
    assert_non_null(strstr(f->summary, "retried MGET (slot 100) 30 times"));
    for (int i = 0; i < 30; i++, t += 110)
        sc_do(&s, c, t, 100, TRYAGAIN, "MGET", k1, k2, NULL);
    int64_t last = t;
    sc_do(&s, c, t, 100, "*2", "MGET", k1, k2, NULL); /* the 61st retry succeeds */
    sc_finish(&s, 20000000);
    assert_int_equal(sc_count(&s, AN_TRYAGAIN_STORM), 1);
    f = sc_find(&s, AN_TRYAGAIN_STORM, "127.0.0.17");
    assert_int_equal(f->id, id);
    assert_int_equal(f->count, 1); /* one storm (operation) */
    assert_int_equal(f->first_us, SC_T0 + 1000);
    assert_int_equal(f->last_us, SC_T0 + last);
    assert_int_equal(f->extra_latency_us, last - 1000);
    assert_non_null(strstr(f->summary, "retried MGET (slot 100) 61 times after TRYAGAIN, 61 of them"));
    const char *ev = sc_evidence(&s, f);
    assert_non_null(strstr(ev, "\"retries\":61,"));
    assert_non_null(strstr(ev, "\"fast_retries\":61,"));
    assert_non_null(strstr(ev, "\"most_in_one_operation\":61"));
    char e[1024];
    event_of(ev, "first attempt", e, sizeof e);
    assert_non_null(strstr(e, "\"ts_us\":1700000000001000,"));
    assert_int_equal(occurrences(ev, "\"what\":\"retry after TRYAGAIN\""), 3);
    event_of(ev, "retry after TRYAGAIN", e, sizeof e);
    assert_non_null(strstr(e, "\"ts_us\":1700000000001110,")); /* the first retry */
    event_of(ev, "retry that crossed the threshold", e, sizeof e);
    assert_non_null(strstr(e, "\"ts_us\":1700000000002100,")); /* the 10th */
    event_of(ev, "latest retry", e, sizeof e);
    char ts[40];
    snprintf(ts, sizeof ts, "\"ts_us\":%lld,", (long long)(SC_T0 + last));
    assert_non_null(strstr(e, ts));
    assert_non_null(strstr(e, "\"reply\":\"*")); /* the reply that ended it */
    sc_free(&s);
}

/* Two storms of the same client, node and slot: count 2, the retries of both
 * summed, the longest named. */
static void test_tryagain_storm_two_operations(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 17, 40000, S);
    int64_t t = 1000;
    for (int i = 0; i <= 12; i++, t += 110)
        sc_do(&s, c, t, 100, TRYAGAIN, "MGET", k1, k2, NULL);
    t += 10000000; /* the first operation is over (given up) */
    for (int i = 0; i <= 20; i++, t += 110)
        sc_do(&s, c, t, 100, TRYAGAIN, "MGET", k3, k4, NULL);
    sc_finish(&s, t + 20000000);
    const an_finding *f = sc_find(&s, AN_TRYAGAIN_STORM, "127.0.0.17");
    assert_non_null(f);
    assert_int_equal(f->count, 2);
    assert_non_null(strstr(f->summary, "in 2 operations (MGET, slot 100): 32 retries, up to 20"));
    assert_non_null(strstr(sc_evidence(&s, f), "\"retries\":32,"));
    sc_free(&s);
}

/* ---------------------------------------------------------------- cost */

/* A client without ASKING bounces S -ASK-> T -MOVED-> S ... and then gets the
 * value: asking_missing (4 times) and redirect_loop (once) both cover the one
 * operation, and each is charged its cost once. */
static void test_cost_of_covered_operations(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 13, 40000, S), ct = sc_conn(&s, 13, 40001, T);
    int64_t t = mig_bounce(&s, cs, ct, 1000, 8, k1);
    sc_do(&s, cs, t, 100, "$", "GET", k1, NULL); /* the flip: S serves it again */
    sc_finish(&s, 20000000);
    const an_finding *loop = sc_find(&s, AN_REDIRECT_LOOP, "127.0.0.13");
    const an_finding *miss = sc_find(&s, AN_ASKING_MISSING, "127.0.0.13");
    assert_non_null(loop);
    assert_non_null(miss);
    assert_int_equal(miss->count, 4);
    assert_int_equal(loop->extra_latency_us, t - 1000);
    assert_int_equal(miss->extra_latency_us, t - 1000);
    /* the totals come from the operation: one redirected operation whose
     * extra time is counted once */
    const an_latency *all = sc_latency(&s, AN_SCOPE_ALL, "all", 1);
    assert_non_null(all);
    assert_int_equal(all->count, 1);
    assert_int_equal(all->extra_us, t - 1000);
    sc_free(&s);
}

/* An operation that never ends (given up after its redirects) charges the
 * findings it is in with its time up to its last reply. */
static void test_cost_of_abandoned_operation(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 13, 40000, S), ct = sc_conn(&s, 13, 40001, T);
    int64_t t = mig_bounce(&s, cs, ct, 1000, 4, k1);
    sc_finish(&s, 20000000);
    const an_finding *loop = sc_find(&s, AN_REDIRECT_LOOP, "127.0.0.13");
    const an_finding *miss = sc_find(&s, AN_ASKING_MISSING, "127.0.0.13");
    assert_non_null(loop);
    assert_non_null(miss);
    assert_int_equal(loop->extra_latency_us, (t - 200 + 100) - 1000);
    assert_int_equal(miss->extra_latency_us, (t - 200 + 100) - 1000);
    assert_null(sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.13"));
    sc_free(&s);
}

/* ---------------------------------------------------------------- moved_ignored */

/* A cluster-aware client that follows ASK without ASKING and then follows the
 * MOVED back, for several operations of the slot, some of them pipelined
 * (two in flight on the same connections); after the flip it follows S's
 * MOVED and stays on T. asking_missing explains every MOVED it got from T;
 * none of it is moved_ignored. */
static void test_moved_back_after_ask_is_not_moved_ignored(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 12, 40000, S), ct = sc_conn(&s, 12, 40001, T);
    mig_fetch_map(&s, cs, 0);
    const char *keys[] = {k1, k2, k3, k4};
    int64_t t = 1000;
    for (int op = 0; op < 4; op++) {
        sc_do(&s, cs, t, 100, ASK_T, "GET", keys[op], NULL);
        sc_do(&s, ct, t + 200, 100, MOVED_S, "GET", keys[op], NULL);
        sc_do(&s, cs, t + 400, 100, ASK_T, "GET", keys[op], NULL); /* followed back */
        sc_do(&s, ct, t + 600, 100, MOVED_S, "GET", keys[op], NULL);
        sc_do(&s, cs, t + 800, 100, ASK_T, "GET", keys[op], NULL); /* gives up */
        t += 100000;
    }
    /* two operations in flight at once, each bounced the same way */
    static char p1[40], p2[40];
    snprintf(p1, sizeof p1, "{%s}.p1", k1);
    snprintf(p2, sizeof p2, "{%s}.p2", k1);
    sc_do(&s, cs, t, 100, ASK_T, "GET", p1, NULL);
    sc_do(&s, cs, t + 10, 100, ASK_T, "GET", p2, NULL);
    sc_do(&s, ct, t + 200, 100, MOVED_S, "GET", p1, NULL);
    sc_do(&s, ct, t + 210, 100, MOVED_S, "GET", p2, NULL);
    sc_do(&s, cs, t + 400, 100, ASK_T, "GET", p1, NULL);
    sc_do(&s, cs, t + 410, 100, ASK_T, "GET", p2, NULL);
    sc_do(&s, ct, t + 600, 100, MOVED_S, "GET", p1, NULL);
    sc_do(&s, ct, t + 610, 100, MOVED_S, "GET", p2, NULL);
    /* the flip: S answers MOVED T once; the client moves to T and stays */
    t += 6000000;
    sc_do(&s, cs, t, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, ct, t + 200, 100, "$", "GET", k1, NULL);
    for (int op = 1; op < 4; op++)
        sc_do(&s, ct, t + 1000 * op, 100, "$", "GET", keys[op], NULL);
    sc_finish(&s, t + 20000000);
    assert_null(sc_find(&s, AN_MOVED_IGNORED, "127.0.0.12"));
    const an_finding *miss = sc_find(&s, AN_ASKING_MISSING, "127.0.0.12");
    assert_non_null(miss);
    assert_int_equal(miss->count, 12);
    sc_free(&s);
}

/* ---------------------------------------------------------------- crossslot */

/* The summary names every command seen, once each, in the order seen. */
static void test_crossslot_names_commands(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 18, 40000, S);
    sc_do(&s, c, 1000, 100, CROSSSLOT, "MSET", "a", "1", "b", "2", NULL);
    sc_do(&s, c, 2000, 100, CROSSSLOT, "MGET", "a", "b", NULL);
    sc_do(&s, c, 3000, 100, CROSSSLOT, "MSET", "c", "1", "d", "2", NULL);
    sc_do(&s, c, 4000, 100, CROSSSLOT, "DEL", "a", "b", NULL);
    sc_finish(&s, 20000000);
    const an_finding *f = sc_find(&s, AN_CROSSSLOT, "127.0.0.18");
    assert_non_null(f);
    assert_int_equal(f->count, 4);
    assert_non_null(strstr(f->summary, ": MSET, MGET, DEL"));
    assert_int_equal(occurrences(f->summary, "MSET"), 1);
    sc_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migration_stuck_evidence),
        cmocka_unit_test(test_migration_stuck_single_ask),
        cmocka_unit_test(test_tryagain_storm_counts_every_retry),
        cmocka_unit_test(test_tryagain_storm_two_operations),
        cmocka_unit_test(test_cost_of_covered_operations),
        cmocka_unit_test(test_cost_of_abandoned_operation),
        cmocka_unit_test(test_moved_back_after_ask_is_not_moved_ignored),
        cmocka_unit_test(test_crossslot_names_commands),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
