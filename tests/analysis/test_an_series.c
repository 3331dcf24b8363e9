/*
 * test_an_series.c - the redirect time series (analysis/series.c, the
 * timeline table): its buckets add up to the analyzer's counters, the quick
 * path counts what the general path counts, the top scopes by redirects keep
 * rows of their own and the rest is summed as 'other', a migrating slot range
 * has its rows, old buckets are written while the run goes on (memory bounded
 * by the buckets kept), and an event older than every open bucket is counted,
 * not lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "analysis/internal.h"
#include "tests/analysis/migration.h"
#include "tests/analysis/scenario.h"

static int setup(void **state)
{
    return mig_keys(state);
}

/* The rows of one scope kind (and id, NULL: any) summed. */
static an_series_row sum_rows(const sc *s, const char *scope, const char *id)
{
    an_series_row t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < s->out.nseries; i++) {
        const an_series_row *r = &s->out.series[i];
        if (strcmp(r->scope, scope) || (id && strcmp(r->scope_id, id)))
            continue;
        t.commands += r->commands;
        t.moved += r->moved;
        t.ask += r->ask;
        t.tryagain += r->tryagain;
        t.asking += r->asking;
        t.retries += r->retries;
        t.direct_ops += r->direct_ops;
        t.redirected_ops += r->redirected_ops;
        t.scopes += r->scopes;
    }
    return t;
}

/* Three clients over 4 s of plain reads and writes, then one MOVED
 * followed; client 5 gets a second redirect. */
static void traffic(sc *s, int with_commands)
{
    if (with_commands)
        sc_init(s, NULL);
    else
        sc_init_no_commands(s, NULL);
    int c[3] = {sc_conn(s, 3, 40000, S), sc_conn(s, 4, 40001, S), sc_conn(s, 5, 40002, T)};
    char key[32];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "user:%d", i % 7);
        sc_do(s, c[i % 3], 10000 + (int64_t)i * 13000, 80 + i % 50, "$", "GET", key, NULL);
    }
    int ct = sc_conn(s, 5, 40003, T);
    sc_do(s, c[0], 4100000, 100, MOVED_T, "GET", k1, NULL);
    int c3 = sc_conn(s, 3, 40004, T);
    sc_do(s, c3, 4100300, 100, "$", "GET", k1, NULL);
    sc_do(s, c[2], 4200000, 100, ASK_T, "GET", k1, NULL);
    sc_do(s, ct, 4200300, 50, "+OK", "ASKING", NULL);
    sc_do(s, ct, 4200400, 100, "$", "GET", k1, NULL);
    sc_finish(s, 9000000);
}

/* The cluster rows add up to the counters; one row per bucket, in order. */
static void test_sums(void **state)
{
    (void)state;
    sc s;
    traffic(&s, 0);
    const an_stats *st = an_get_stats(s.an);
    an_series_row all = sum_rows(&s, "cluster", "all");
    assert_int_equal(all.commands, st->commands);
    assert_int_equal(all.moved, st->moved);
    assert_int_equal(all.ask, st->ask);
    assert_int_equal(all.direct_ops + all.redirected_ops, st->operations);
    assert_int_equal(all.redirected_ops, st->redirected_operations);
    assert_int_equal(all.redirected_ops, 2);
    assert_int_equal(all.asking, 1);
    assert_int_equal(all.retries, 2);
    int64_t last = -1;
    size_t buckets = 0;
    for (size_t i = 0; i < s.out.nseries; i++) {
        const an_series_row *r = &s.out.series[i];
        assert_int_equal(r->width_us, 1000000);
        assert_int_equal(r->bucket_us % 1000000, 0);
        assert_true(r->bucket_us >= last);
        last = r->bucket_us;
        if (!strcmp(r->scope, "cluster")) {
            buckets++;
            assert_true(r->direct_ops == 0 || r->direct_p50_us >= 0);
            assert_true(r->direct_ops == 0 || r->direct_p99_us >= r->direct_p50_us);
            assert_true(r->redirected_ops > 0 || r->redirected_p99_us == -1);
        }
    }
    assert_int_equal(buckets, 5); /* seconds 0-4 of the scenario */
    /* the clients' rows add up to the cluster's, the nodes' too */
    an_series_row cl = sum_rows(&s, "client", NULL), nd = sum_rows(&s, "node", NULL);
    assert_int_equal(cl.commands, all.commands);
    assert_int_equal(nd.commands, all.commands);
    assert_int_equal(cl.moved + cl.ask, 2);
    assert_int_equal(an_get_stats(s.an)->series_late, 0);
    assert_int_equal(an_get_stats(s.an)->series_rows, s.out.nseries);
    sc_free(&s);
}

/* The quick path (no command sink) counts exactly what the general path
 * counts: the same rows. */
static void test_quick_path_same_rows(void **state)
{
    (void)state;
    sc a, b;
    traffic(&a, 0);
    traffic(&b, 1);
    assert_int_equal(a.out.nseries, b.out.nseries);
    for (size_t i = 0; i < a.out.nseries; i++) {
        const an_series_row *x = &a.out.series[i], *y = &b.out.series[i];
        assert_string_equal(x->scope, y->scope);
        assert_string_equal(x->scope_id, y->scope_id);
        assert_int_equal(x->bucket_us, y->bucket_us);
        assert_int_equal(x->commands, y->commands);
        assert_int_equal(x->direct_ops, y->direct_ops);
        assert_int_equal(x->direct_p50_us, y->direct_p50_us);
        assert_int_equal(x->direct_p99_us, y->direct_p99_us);
        assert_int_equal(x->redirected_ops, y->redirected_ops);
    }
    sc_free(&a);
    sc_free(&b);
}

/* series_top 1: in a bucket the client with most redirects has its row, the
 * other two are summed in 'other' (scopes 2). */
static void test_top_and_other(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    cfg.series_top = 1;
    sc s;
    sc_init_no_commands(&s, &cfg);
    int a = sc_conn(&s, 3, 40000, S), b = sc_conn(&s, 4, 40001, S), c = sc_conn(&s, 5, 40002, S);
    sc_do(&s, a, 1000, 100, "$", "GET", "x", NULL);
    sc_do(&s, b, 2000, 100, "$", "GET", "y", NULL);
    sc_do(&s, b, 2500, 100, "$", "GET", "y", NULL);
    sc_do(&s, c, 3000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, c, 3500, 100, MOVED_T, "GET", k2, NULL);
    sc_finish(&s, 900000);
    size_t clients = 0;
    for (size_t i = 0; i < s.out.nseries; i++) {
        const an_series_row *r = &s.out.series[i];
        if (strcmp(r->scope, "client"))
            continue;
        clients++;
        if (!strcmp(r->scope_id, "other")) {
            assert_int_equal(r->scopes, 2);
            assert_int_equal(r->commands, 3);
            assert_int_equal(r->moved, 0);
        } else {
            assert_string_equal(r->scope_id, "127.0.0.5");
            assert_int_equal(r->moved, 2);
        }
    }
    assert_int_equal(clients, 2);
    sc_free(&s);
}

/* ASKs for two consecutive slots migrating from S to T in one bucket: one
 * 'slots' row for the range. */
static void test_slot_range(void **state)
{
    (void)state;
    char ka[32], kb[32], ask_a[64], ask_b[64];
    sc_key_for_slot(200, ka, sizeof ka);
    sc_key_for_slot(201, kb, sizeof kb);
    snprintf(ask_a, sizeof ask_a, "-ASK 200 127.0.0.1:%d", T);
    snprintf(ask_b, sizeof ask_b, "-ASK 201 127.0.0.1:%d", T);
    sc s;
    sc_init_no_commands(&s, NULL);
    int cs = sc_conn(&s, 3, 40000, S), ct = sc_conn(&s, 3, 40001, T);
    sc_do(&s, cs, 1000, 100, ask_a, "GET", ka, NULL);
    sc_do(&s, ct, 1300, 50, "+OK", "ASKING", NULL);
    sc_do(&s, ct, 1400, 100, "$", "GET", ka, NULL);
    sc_do(&s, cs, 2000, 100, ask_b, "GET", kb, NULL);
    sc_do(&s, ct, 2300, 50, "+OK", "ASKING", NULL);
    sc_do(&s, ct, 2400, 100, "$", "GET", kb, NULL);
    sc_finish(&s, 900000);
    an_series_row r = sum_rows(&s, "slots", "200-201");
    assert_int_equal(r.scopes, 1);
    assert_int_equal(r.ask, 2);
    assert_int_equal(r.retries, 2);
    assert_int_equal(r.redirected_ops, 2);
    assert_int_equal(sum_rows(&s, "slots", NULL).ask, 2); /* no other slot row */
    sc_free(&s);
}

/* A long run: buckets are written as time goes on, never more open than
 * kept; a command older than every open bucket is counted in the next open
 * one (series_late), not lost. */
static void test_bounded_and_late(void **state)
{
    (void)state;
    sc s;
    sc_init_no_commands(&s, NULL);
    int c = sc_conn(&s, 3, 40000, S);
    uint64_t rows_midway = 0;
    for (int i = 0; i < 600; i++) {
        sc_do(&s, c, (int64_t)i * 1000000, 100, "$", "GET", "x", NULL);
        assert_true(s.an->ser.n <= s.an->ser.kept);
        if (i == 300)
            rows_midway = an_get_stats(s.an)->series_rows;
    }
    assert_true(s.an->ser.kept <= AN_SER_MAX_BUCKETS);
    assert_true(rows_midway >= (300 - s.an->ser.kept) * 3); /* cluster, node, client */
    /* 100 s back in time: older than every open bucket */
    sc_do(&s, c, 500000000, 100, "$", "GET", "x", NULL);
    assert_int_equal(an_get_stats(s.an)->series_late, 2); /* the command, its operation */
    sc_finish(&s, 700000000);
    uint64_t commands = 0;
    for (size_t i = 0; i < s.out.nseries; i++)
        if (!strcmp(s.out.series[i].scope, "cluster"))
            commands += s.out.series[i].commands;
    /* the scenario keeps the first SC_MAX rows only: count from the stats */
    assert_int_equal(an_get_stats(s.an)->series_rows, 600 * 3);
    assert_int_equal(an_get_stats(s.an)->commands, 601);
    assert_true(commands > 0);
    sc_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sums),
        cmocka_unit_test(test_quick_path_same_rows),
        cmocka_unit_test(test_top_and_other),
        cmocka_unit_test(test_slot_range),
        cmocka_unit_test(test_bounded_and_late),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
