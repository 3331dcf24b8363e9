/*
 * test_an_timeline.c - a migration window closes when the target serves the
 * slot: a command for it answered by the ASK target with no ASKING before it
 * (an importing node answers those with MOVED, so it owns the slot now). A
 * client that refreshed its map after the flip gets no MOVED, and a capture
 * of that client alone has no CLUSTER SETSLOT NODE: before this rule the
 * window stayed open and migration_stuck was reported for a migration that
 * had ended (seen on node-redis and iovalkey, tests/fixtures/libs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "tests/analysis/migration.h"
#include "tests/analysis/scenario.h"

static int setup(void **state)
{
    return mig_keys(state);
}

/* ASK followed at 1000, then (if served_at > 0) GET k1 straight to T. */
static void run(sc *s, int with_commands, int64_t served_at, int asking_first)
{
    if (with_commands)
        sc_init(s, NULL);
    else
        sc_init_no_commands(s, NULL);
    int cs = sc_conn(s, 19, 40000, S), ct = sc_conn(s, 19, 40001, T);
    mig_ask_followed(s, cs, ct, 1000, k1);
    /* the source still serves a key it has: no flip */
    sc_do(s, cs, 2000, 100, "$", "GET", k2, NULL);
    if (served_at > 0) {
        if (asking_first)
            sc_do(s, ct, served_at - 50, 20, "+OK", "ASKING", NULL);
        sc_do(s, ct, served_at, 100, "$", "GET", k1, NULL);
    }
    sc_finish(s, 200000000);
}

static void test_served_by_target_closes(void **state)
{
    (void)state;
    for (int with_commands = 0; with_commands <= 1; with_commands++) {
        sc s;
        run(&s, with_commands, 5000, 0);
        assert_int_equal(s.out.nmigrations, 1);
        assert_true(s.out.migrations[0].complete);
        assert_int_equal(s.out.migrations[0].flip_us, SC_T0 + 5100);
        assert_int_equal(s.out.migrations[0].asks, 1);
        assert_null(sc_find(&s, AN_MIGRATION_STUCK, ""));
        assert_int_equal(sc_total(&s), 0);
        sc_free(&s);
    }
}

static void test_asking_or_nothing_keeps_open(void **state)
{
    (void)state;
    for (int with_commands = 0; with_commands <= 1; with_commands++) {
        sc s;
        /* served by T under ASKING: still the migration */
        run(&s, with_commands, 5000, 1);
        assert_int_equal(s.out.nmigrations, 1);
        assert_false(s.out.migrations[0].complete);
        assert_int_equal(s.out.migrations[0].flip_us, 0);
        assert_non_null(sc_find(&s, AN_MIGRATION_STUCK, ""));
        sc_free(&s);
        /* nothing after the ASK: open at the end, as before */
        run(&s, with_commands, 0, 0);
        assert_false(s.out.migrations[0].complete);
        assert_non_null(sc_find(&s, AN_MIGRATION_STUCK, ""));
        sc_free(&s);
    }
}

/* The target served the slot (the window closed at 5100), then the source,
 * which has not learnt the flip yet, answers -ASK to the same target once
 * more: a late ASK of the same migration, counted in its window, not a new
 * window (a live reshard showed it: the target got SETSLOT NODE 1 ms before
 * the source's last -ASK). */
static void test_late_ask_same_window(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 19, 40000, S), ct = sc_conn(&s, 19, 40001, T);
    mig_ask_followed(&s, cs, ct, 1000, k1);
    sc_do(&s, ct, 5000, 100, "$", "GET", k1, NULL); /* served by T: the flip */
    mig_ask_followed(&s, cs, ct, 6000, k1);         /* late: S still ASKs */
    sc_finish(&s, 200000000);
    assert_int_equal(s.out.nmigrations, 1);
    assert_true(s.out.migrations[0].complete);
    assert_int_equal(s.out.migrations[0].flip_us, SC_T0 + 5100);
    assert_int_equal(s.out.migrations[0].asks, 2);
    assert_int_equal(s.out.migrations[0].last_ask_us, SC_T0 + 6100);
    assert_null(sc_find(&s, AN_MIGRATION_STUCK, ""));
    sc_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_served_by_target_closes),
        cmocka_unit_test(test_asking_or_nothing_keeps_open),
        cmocka_unit_test(test_late_ask_same_window),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
