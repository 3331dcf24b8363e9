/*
 * test_an_detect.c - every detector on synthetic command sequences, positive
 * and negative, and a correct client through a whole migration (no finding).
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

/* k1 and k2 of SLOT (migration.h). */
static int setup(void **state)
{
    return mig_keys(state);
}

/* The administrator's side of a migration of SLOT, from t0 to t1. */
static void admin_open(sc *s, int64_t t)
{
    int at = sc_conn(s, 9, 51000, T), as = sc_conn(s, 9, 51001, S);
    sc_do(s, at, t, 50, "+OK", "CLUSTER", "SETSLOT", "100", "IMPORTING", S_ID, NULL);
    sc_do(s, as, t + 100, 50, "+OK", "CLUSTER", "SETSLOT", "100", "MIGRATING", T_ID, NULL);
    sc_do(s, as, t + 200, 50, "*2", "CLUSTER", "GETKEYSINSLOT", "100", "10", NULL);
    sc_do(s, as, t + 300, 500, "+OK", "MIGRATE", "127.0.0.1", "30311", "", "0", "5000", "KEYS",
          k1, k2, NULL);
}

static void admin_close(sc *s, int64_t t)
{
    int at = sc_conn(s, 9, 51002, T), as = sc_conn(s, 9, 51003, S);
    sc_do(s, at, t, 50, "+OK", "CLUSTER", "SETSLOT", "100", "NODE", T_ID, NULL);
    sc_do(s, as, t + 100, 50, "+OK", "CLUSTER", "SETSLOT", "100", "NODE", T_ID, NULL);
}

/* ---------------------------------------------------------------- correct */

/* A correct client (redis-py's way) through a whole migration: ASK ->
 * ASKING + retry on the target connection, TRYAGAIN with backoff, MOVED ->
 * retry at the new owner and stay there. Plus node-to-node traffic. No
 * finding; the migration window and the latency are reconstructed. */
static void test_correct_client_whole_migration(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 2, 40000, S), ct = sc_conn(&s, 2, 40001, T);
    mig_fetch_map(&s, cs, 0);
    sc_do(&s, cs, 1000, 100, "$", "GET", k1, NULL);
    admin_open(&s, 2000);
    /* the source node restores keys on the target, a replica syncs */
    int mig = sc_conn(&s, 1, 52000, T), rep = sc_conn(&s, 1, 52001, S);
    sc_do(&s, mig, 2400, 50, "+OK", "RESTORE-ASKING", k1, "0", "payload", NULL);
    sc_do(&s, rep, 2500, 50, "+OK", "REPLCONF", "listening-port", "30314", NULL);
    sc_do(&s, rep, 2600, 50, "+FULLRESYNC", "PSYNC", "?", "-1", NULL);
    sc_do(&s, mig, 2700, 50, "-MOVED 100 127.0.0.1:30310", "GET", k1, NULL); /* not judged */
    mig_ask_followed(&s, cs, ct, 3000, k1);
    sc_do(&s, cs, 4000, 100, "$", "GET", k2, NULL); /* the next command: to S again */
    sc_do(&s, cs, 5000, 100, "-TRYAGAIN Multiple keys request during rehashing of slot", "MGET",
          k1, k2, NULL);
    sc_do(&s, cs, 5200, 100, "-TRYAGAIN Multiple keys request during rehashing of slot", "MGET",
          k1, k2, NULL);
    sc_do(&s, cs, 55400, 100, "*2", "MGET", k1, k2, NULL);
    admin_close(&s, 60000);
    sc_do(&s, cs, 70000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, ct, 70200, 100, "$", "GET", k1, NULL);
    sc_do(&s, ct, 80000, 100, "$", "GET", k2, NULL);
    sc_do(&s, ct, 80200, 100, "+OK", "SET", k2, "v", NULL);
    sc_finish(&s, 20000000);

    assert_int_equal(sc_total(&s), 0);
    const an_stats *st = an_get_stats(s.an);
    assert_int_equal(st->findings, 0);
    assert_int_equal(st->ask, 1);
    assert_int_equal(st->moved, 1); /* node-to-node traffic is not counted */
    assert_int_equal(st->tryagain, 2);
    assert_int_equal(st->redirected_operations, 3);
    assert_int_equal(st->node_links, 2);
    assert_int_equal(st->unknown_commands, 0);
    /* the migration window */
    assert_int_equal(s.out.nmigrations, 1);
    const an_migration *m = &s.out.migrations[0];
    assert_int_equal(m->slot, SLOT);
    assert_string_equal(m->source, "127.0.0.1:30310");
    assert_string_equal(m->target, "127.0.0.1:30311");
    assert_int_equal(m->importing_us, SC_T0 + 2050);
    assert_int_equal(m->migrating_us, SC_T0 + 2150);
    assert_int_equal(m->first_ask_us, SC_T0 + 3100);
    assert_int_equal(m->last_ask_us, SC_T0 + 3100);
    assert_int_equal(m->flip_us, SC_T0 + 60050);
    assert_int_equal(m->asks, 1);
    assert_int_equal(m->tryagains, 2);
    assert_int_equal(m->keys_migrated, 2);
    assert_true(m->complete);
    /* the node-to-node connections are a node of their own, never merged
     * with a client of that address; the client is cluster-aware */
    int seen_node = 0, seen_client = 0;
    for (size_t i = 0; i < s.out.nclients; i++) {
        assert_string_not_equal(s.out.clients[i].name, "127.0.0.1");
        if (strcmp(s.out.clients[i].name, "127.0.0.1 (node)") == 0) {
            assert_true(s.out.clients[i].is_node);
            seen_node = 1;
        }
        if (strcmp(s.out.clients[i].name, "127.0.0.2") == 0) {
            assert_false(s.out.clients[i].is_node);
            assert_true(s.out.clients[i].cluster_aware);
            assert_int_equal(s.out.clients[i].redirects, 4);
            seen_client = 1;
        }
    }
    assert_true(seen_node && seen_client);
    /* latency: 3 redirected operations for the client; ASK cost one round
     * trip + ASKING; TRYAGAIN two retries */
    const an_latency *l = sc_latency(&s, AN_SCOPE_CLIENT, "127.0.0.2", 1);
    assert_non_null(l);
    assert_int_equal(l->count, 3);
    assert_int_equal(l->extra_round_trips, 1 + 1 + 2 + 1);
    assert_int_equal(l->extra_us, (3300 - 3000) + (55400 - 5000) + (70200 - 70000));
    assert_int_equal(l->max_us, 55500 - 5000);
    sc_free(&s);
}

/* redis-cli -c: no map, one connection at a time, follows every redirect by
 * moving to the node that sent it (so ASK makes it stay on the target). */
static void test_redis_cli_follower_no_finding(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int a = sc_conn(&s, 3, 40000, S);
    sc_do(&s, a, 1000, 100, ASK_T, "GET", k1, NULL);
    int b = sc_conn(&s, 3, 40001, T);
    sc_do(&s, b, 1200, 50, "+OK", "ASKING", NULL);
    sc_do(&s, b, 1300, 100, "$", "GET", k1, NULL);
    sc_do(&s, b, 2000, 100, MOVED_S, "GET", k2, NULL);
    int c = sc_conn(&s, 3, 40002, S);
    sc_do(&s, c, 2200, 100, ASK_T, "GET", k2, NULL);
    int d = sc_conn(&s, 3, 40003, T);
    sc_do(&s, d, 2400, 50, "+OK", "ASKING", NULL);
    sc_do(&s, d, 2500, 100, "$", "GET", k2, NULL);
    sc_do(&s, d, 3000, 100, MOVED_S, "SET", k2, "x", NULL);
    int e = sc_conn(&s, 3, 40004, S);
    sc_do(&s, e, 3200, 100, ASK_T, "SET", k2, "x", NULL);
    int f = sc_conn(&s, 3, 40005, T);
    sc_do(&s, f, 3400, 50, "+OK", "ASKING", NULL);
    sc_do(&s, f, 3500, 100, "+OK", "SET", k2, "x", NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 0);
    sc_free(&s);
}

/* ---------------------------------------------------------------- ask */

static void test_asking_missing(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 5, 40000, S), ct = sc_conn(&s, 5, 40001, T);
    mig_ask_bounced(&s, cs, ct, 1000, k1);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 1); /* not also redirect_unfollowed */
    const an_finding *f = sc_find(&s, AN_ASKING_MISSING, "127.0.0.5");
    assert_non_null(f);
    assert_int_equal(f->count, 1);
    assert_int_equal(f->slot, SLOT);
    assert_string_equal(f->node, "127.0.0.1:30311");
    assert_int_equal(f->severity, AN_ERROR);
    assert_int_equal(f->first_us, SC_T0 + 1200);
    assert_int_equal(f->extra_latency_us, 1300 - 1000);
    const char *ev = sc_evidence(&s, f);
    assert_non_null(strstr(ev, "\"what\":\"ask\""));
    assert_non_null(strstr(ev, "-ASK 100 127.0.0.1:30311"));
    assert_non_null(strstr(ev, "retry without ASKING"));
    assert_non_null(strstr(ev, k1));
    /* the client's record counts its findings */
    int seen = 0;
    for (size_t i = 0; i < s.out.nclients; i++)
        if (strcmp(s.out.clients[i].name, "127.0.0.5") == 0) {
            assert_int_equal(s.out.clients[i].findings, 1);
            assert_int_equal(s.out.clients[i].connections, 2);
            seen = 1;
        }
    assert_true(seen);
    assert_int_equal(s.out.connections, 2);
    sc_free(&s);
}

/* CLUSTER SLOTS giving every slot to T (the migration ended). */
static void fetch_map_all_to_t(sc *s, int c, int64_t t)
{
    static const char raw[] = "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:30311\r\n";
    const char *argv[] = {"CLUSTER", "SLOTS"};
    sc_cmd_raw(s, c, t, 100, (const uint8_t *)raw, sizeof raw - 1, 2, argv);
}

/* A map the client received after the ASK gives T the slot: the attempt to T
 * without ASKING follows the map (another process of the same host, say,
 * started after the migration), not asking_missing. Without that map (or
 * with one received before the ASK) it is asking_missing. */
static void test_asking_missing_negative_after_map(void **state)
{
    (void)state;
    for (int map_after_ask = 0; map_after_ask <= 1; map_after_ask++) {
        sc s;
        sc_init(&s, NULL);
        int cs = sc_conn(&s, 5, 40000, S), ct = sc_conn(&s, 5, 40001, T);
        int cm = sc_conn(&s, 5, 40002, T);
        mig_fetch_map(&s, cs, 0);
        sc_do(&s, cs, 1000, 100, ASK_T, "GET", k1, NULL);
        if (map_after_ask)
            fetch_map_all_to_t(&s, cm, 1200);
        sc_do(&s, ct, 1500, 100, "$", "GET", k1, NULL);
        sc_finish(&s, 20000000);
        const an_finding *f = sc_find(&s, AN_ASKING_MISSING, "127.0.0.5");
        if (map_after_ask) {
            assert_null(f);
            assert_int_equal(sc_total_clients(&s), 0);
        } else {
            assert_non_null(f);
            assert_int_equal(f->count, 1);
        }
        sc_free(&s);
    }
}

/* The retry to T comes right after requests its connection lost in the
 * capture: served, its ASKING may have been one of them (not judged);
 * answered MOVED by T, there was none (asking_missing). */
static void test_asking_missing_after_lost_requests(void **state)
{
    (void)state;
    for (int served = 0; served <= 1; served++) {
        sc s;
        sc_init(&s, NULL);
        int cs = sc_conn(&s, 5, 40000, S), ct = sc_conn(&s, 5, 40001, T);
        sc_do(&s, cs, 1000, 100, ASK_T, "GET", k1, NULL);
        sc_requests_lost(&s, ct);
        sc_do(&s, ct, 1300, 100, served ? "$" : MOVED_S, "GET", k1, NULL);
        sc_finish(&s, 20000000);
        const an_finding *f = sc_find(&s, AN_ASKING_MISSING, "127.0.0.5");
        if (served)
            assert_null(f);
        else
            assert_non_null(f);
        sc_free(&s);
    }
}

static void test_asking_missing_negative(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 5, 40000, S), ct = sc_conn(&s, 5, 40001, T);
    mig_ask_followed(&s, cs, ct, 1000, k1);
    /* pipelined ASKING + command: the same */
    sc_do(&s, cs, 2000, 100, ASK_T, "GET", k2, NULL);
    sc_do(&s, ct, 2200, 50, "+OK", "ASKING", NULL);
    sc_do(&s, ct, 2200, 100, "$", "GET", k2, NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 0);
    sc_free(&s);
}

static void test_asking_other_connection(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 6, 40000, S), t1 = sc_conn(&s, 6, 40001, T), t2 = sc_conn(&s, 6, 40002, T);
    sc_do(&s, cs, 1000, 100, ASK_T, "GET", k1, NULL);
    sc_do(&s, t1, 1200, 50, "+OK", "ASKING", NULL);
    sc_do(&s, t2, 1300, 100, MOVED_S, "GET", k1, NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 1);
    const an_finding *f = sc_find(&s, AN_ASKING_OTHER_CONNECTION, "127.0.0.6");
    assert_non_null(f);
    assert_int_equal(f->count, 1);
    assert_non_null(strstr(sc_evidence(&s, f), "ASKING on another connection"));
    sc_free(&s);
}

static void test_asking_interleaved(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 7, 40000, S), ct = sc_conn(&s, 7, 40001, T);
    sc_do(&s, cs, 1000, 100, ASK_T, "GET", k1, NULL);
    sc_do(&s, ct, 1200, 50, "+OK", "ASKING", NULL);
    sc_do(&s, ct, 1200, 60, "+PONG", "PING", NULL); /* another user of the connection */
    sc_do(&s, ct, 1200, 70, MOVED_S, "GET", k1, NULL); /* and gives up */
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 1);
    const an_finding *f = sc_find(&s, AN_ASKING_INTERLEAVED, "127.0.0.7");
    assert_non_null(f);
    assert_int_equal(f->count, 1);
    assert_int_equal(f->slot, SLOT);
    assert_non_null(strstr(sc_evidence(&s, f), "\"cmd\":\"PING\""));
    sc_free(&s);
}

/* As test_asking_interleaved, but requests of the connection were lost
 * between the ASKING and the PING: the ASKING may have covered one of them
 * (the retry, even), so neither asking_interleaved nor asking_missing. */
static void test_asking_interleaved_after_lost_requests(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 7, 40000, S), ct = sc_conn(&s, 7, 40001, T);
    sc_do(&s, cs, 1000, 100, ASK_T, "GET", k1, NULL);
    sc_do(&s, ct, 1200, 50, "+OK", "ASKING", NULL);
    sc_requests_lost(&s, ct);
    sc_do(&s, ct, 1300, 60, "+PONG", "PING", NULL);
    sc_do(&s, ct, 1400, 70, MOVED_S, "GET", k1, NULL);
    sc_finish(&s, 20000000);
    assert_null(sc_find(&s, AN_ASKING_INTERLEAVED, "127.0.0.7"));
    assert_null(sc_find(&s, AN_ASKING_MISSING, "127.0.0.7"));
    sc_free(&s);
}

static void test_ask_cached(void **state)
{
    (void)state;
    for (int n = 1; n <= 3; n++) {
        sc s;
        sc_init(&s, NULL);
        int cs = sc_conn(&s, 8, 40000, S), ct = sc_conn(&s, 8, 40001, T);
        mig_fetch_map(&s, cs, 0);
        mig_ask_followed(&s, cs, ct, 1000, k1);
        for (int i = 0; i < n; i++) {
            int64_t t = 2000 + i * 1000;
            sc_do(&s, ct, t, 100, MOVED_S, "GET", k2, NULL); /* straight to T */
            sc_do(&s, cs, t + 200, 100, ASK_T, "GET", k2, NULL);
            sc_do(&s, ct, t + 400, 50, "+OK", "ASKING", NULL);
            sc_do(&s, ct, t + 500, 100, "$", "GET", k2, NULL);
        }
        sc_finish(&s, 20000000);
        const an_finding *f = sc_find(&s, AN_ASK_CACHED, "127.0.0.8");
        if (n < 2) { /* ask_cached_min = 2 */
            assert_null(f);
            assert_int_equal(sc_total_clients(&s), 0);
        } else {
            assert_non_null(f);
            assert_int_equal(sc_total_clients(&s), 1);
            assert_int_equal(f->count, (uint64_t)n);
            assert_string_equal(f->node, "127.0.0.1:30311");
            assert_int_equal(f->extra_latency_us, n * 500);
        }
        sc_free(&s);
    }
}

/* New commands straight to the ASK target that it serves: T owns the slot by
 * then (the client may have learnt it from a reply the capture lost), so
 * nothing cached shows; T answering MOVED (test_ask_cached) is what does. */
static void test_ask_cached_negative_served(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 8, 40000, S), ct = sc_conn(&s, 8, 40001, T);
    mig_fetch_map(&s, cs, 0);
    mig_ask_followed(&s, cs, ct, 1000, k1);
    for (int i = 0; i < 3; i++)
        sc_do(&s, ct, 2000 + i * 1000, 100, "$", "GET", k2, NULL);
    sc_finish(&s, 20000000);
    assert_null(sc_find(&s, AN_ASK_CACHED, "127.0.0.8"));
    assert_int_equal(sc_total_clients(&s), 0);
    sc_free(&s);
}

/* After the flip a MOVED teaches the target: going there is right. */
static void test_ask_cached_negative_after_moved(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 8, 40000, S), ct = sc_conn(&s, 8, 40001, T);
    mig_fetch_map(&s, cs, 0);
    mig_ask_followed(&s, cs, ct, 1000, k1);
    sc_do(&s, cs, 2000, 100, MOVED_T, "GET", k2, NULL);
    sc_do(&s, ct, 2200, 100, "$", "GET", k2, NULL);
    for (int i = 0; i < 5; i++)
        sc_do(&s, ct, 3000 + i * 100, 50, "$", "GET", k1, NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 0);
    sc_free(&s);
}

/* ---------------------------------------------------------------- redirects */

static void test_moved_ignored(void **state)
{
    (void)state;
    for (int n = 2; n <= 4; n++) {
        sc s;
        sc_init(&s, NULL);
        int cs = sc_conn(&s, 10, 40000, S), ct = sc_conn(&s, 10, 40001, T);
        /* in flight before the first MOVED arrived: not counted */
        sc_do(&s, cs, 900, 300, MOVED_T, "GET", k2, NULL);
        sc_do(&s, cs, 1000, 100, MOVED_T, "GET", k1, NULL);
        sc_do(&s, ct, 1300, 100, "$", "GET", k2, NULL);
        sc_do(&s, ct, 1300, 100, "$", "GET", k1, NULL);
        for (int i = 0; i < n; i++) {
            int64_t t = 2000 + i * 1000;
            sc_do(&s, cs, t, 100, MOVED_T, "GET", k1, NULL); /* the old owner again */
            sc_do(&s, ct, t + 200, 100, "$", "GET", k1, NULL);
        }
        sc_finish(&s, 20000000);
        const an_finding *f = sc_find(&s, AN_MOVED_IGNORED, "127.0.0.10");
        if (n < 3) {
            assert_int_equal(sc_total_clients(&s), 0);
        } else {
            assert_int_equal(sc_total_clients(&s), 1);
            assert_non_null(f);
            assert_int_equal(f->count, (uint64_t)n);
            assert_string_equal(f->node, "127.0.0.1:30310");
            assert_int_equal(f->slot, SLOT);
            assert_int_equal(f->severity, AN_WARNING);
            /* each occurrence's operation costs first request -> retry (200);
             * the bounce's round trip is part of it, not added again */
            assert_int_equal(f->extra_latency_us, n * 200);
        }
        sc_free(&s);
    }
}

static void test_redirect_unfollowed(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    sc_conn(&s, 30, 40000, T); /* the capture holds T's traffic: a retry there is seen */
    int c = sc_conn(&s, 11, 40000, S);
    sc_do(&s, c, 1000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, c, 2000, 100, MOVED_T, "SET", k1, "v", NULL);
    sc_do(&s, c, 3000, 100, "$", "GET", "other-slot-key", NULL);
    /* a second client whose redirect is too recent at the end to judge */
    int d = sc_conn(&s, 12, 40000, S);
    sc_do(&s, d, 19999000, 100, MOVED_T, "GET", k1, NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 1);
    const an_finding *f = sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.11");
    assert_non_null(f);
    assert_int_equal(f->count, 2);
    assert_string_equal(f->node, "127.0.0.1:30310");
    assert_int_equal(an_get_stats(s.an)->abandoned_ops, 1);
    /* moved_ignored is not stacked on a client that follows nothing */
    assert_null(sc_find(&s, AN_MOVED_IGNORED, "127.0.0.11"));
    sc_free(&s);
}

/* The start of the end-of-capture cases below: 127.0.0.11 retries a MOVED
 * of GET k1 at T retry_us after it, then gets MOVED for GET k2 (reply at
 * 10000100) on its connection to S, which is returned. */
static int retrier_redirected(sc *s, int64_t retry_us)
{
    int ct = sc_conn(s, 11, 40001, T);
    int c = sc_conn(s, 11, 40000, S);
    sc_do(s, c, 1000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(s, ct, 1100 + retry_us, 100, "$", "GET", k1, NULL);
    sc_do(s, c, 10000000, 100, MOVED_T, "GET", k2, NULL);
    return c;
}

/* The end of those cases: GET k2's MOVED judged redirect_unfollowed, or
 * left unjudged in abandoned_ops. */
static void assert_judged_at_end(sc *s, int judged)
{
    const an_finding *f = sc_find(s, AN_REDIRECT_UNFOLLOWED, "127.0.0.11");
    if (judged) {
        assert_non_null(f);
        assert_int_equal(f->count, 1);
    } else {
        assert_null(f);
    }
    assert_int_equal(an_get_stats(s->an)->abandoned_ops, judged ? 0 : 1);
}

/* At the end of the capture, a redirect inside its retry window is judged
 * for a client that moved on (other commands, its connection closed) only
 * when the capture went on for more than twice the slowest retry the client
 * was seen to make: redis-benchmark closes the connection after ASK and
 * retries seconds later on a new one. Here the client retried a MOVED 1 s
 * after it; the capture ends 1.9 s (not judged) or 2.1 s (judged) after the
 * next MOVED. */
static void test_unfollowed_at_end_slow_retrier(void **state)
{
    (void)state;
    for (int late = 0; late <= 1; late++) {
        sc s;
        sc_init(&s, NULL);
        int c = retrier_redirected(&s, 1000000);
        sc_do(&s, c, 10100000, 100, "$", "GET", "other-slot-key", NULL);
        sc_close(&s, c, 10200000);
        sc_finish(&s, late ? 10000100 + 2100000 : 10000100 + 1900000);
        assert_judged_at_end(&s, late);
        sc_free(&s);
    }
}

/* A client that fetches the map after a MOVED may still retry it once the
 * map is in (redis-py: MOVED, then CLUSTER SLOTS on a new connection, the
 * retry 215 ms after the MOVED): at the end inside the window, not judged,
 * although its earlier retry was fast (100 us). Sending another command
 * instead of the map fetch, it is judged. */
static void test_unfollowed_at_end_map_after_redirect(void **state)
{
    (void)state;
    static const char raw[] = "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:30311\r\n";
    const char *argv[] = {"CLUSTER", "SLOTS"};
    for (int fetch = 0; fetch <= 1; fetch++) {
        sc s;
        sc_init(&s, NULL);
        retrier_redirected(&s, 100);
        int m = sc_conn(&s, 11, 40002, S);
        if (fetch)
            sc_cmd_raw(&s, m, 10050000, 100, (const uint8_t *)raw, sizeof raw - 1, 2, argv);
        else
            sc_do(&s, m, 10050000, 100, "$", "GET", "other-slot-key", NULL);
        sc_finish(&s, 10200000);
        assert_judged_at_end(&s, !fetch);
        sc_free(&s);
    }
}

/* A client that fetched the cluster map and was never seen retrying: a
 * redirect inside its window at the end is not judged, however it moved on
 * (it knows about the cluster; its retries may just be slow). The same
 * without the map is judged (test_unfollowed_judged_after_close). */
static void test_unfollowed_at_end_map_fetcher(void **state)
{
    (void)state;
    static const char raw[] = "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:30310\r\n";
    const char *argv[] = {"CLUSTER", "SLOTS"};
    sc s;
    sc_init(&s, NULL);
    sc_conn(&s, 30, 40000, T); /* the capture holds T's traffic */
    int c = sc_conn(&s, 11, 40000, S);
    sc_cmd_raw(&s, c, 1000, 100, (const uint8_t *)raw, sizeof raw - 1, 2, argv);
    sc_do(&s, c, 19999000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, c, 19999300, 100, "$", "GET", "other-slot-key", NULL);
    sc_close(&s, c, 19999500);
    sc_finish(&s, 20000000);
    assert_null(sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.11"));
    assert_int_equal(an_get_stats(s.an)->abandoned_ops, 1);
    assert_int_equal(an_get_stats(s.an)->unseen_target_ops, 0);
    sc_free(&s);

    /* the same with no connection to T in the capture: what keeps it
     * unjudged is that T is not covered (the diagnosis says nodes_unseen) */
    sc_init(&s, NULL);
    c = sc_conn(&s, 11, 40000, S);
    sc_cmd_raw(&s, c, 1000, 100, (const uint8_t *)raw, sizeof raw - 1, 2, argv);
    sc_do(&s, c, 19999000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, c, 19999300, 100, "$", "GET", "other-slot-key", NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(an_get_stats(s.an)->abandoned_ops, 0);
    assert_int_equal(an_get_stats(s.an)->unseen_target_ops, 1);
    sc_free(&s);
}

/* A redirected operation whose retry the capture may have lost is not
 * judged redirect_unfollowed, and is counted: 127.0.0.11 retried, but the
 * retry came without its reply; 127.0.0.12's requests to the redirect's
 * target were lost after the redirect (a later command of its says so).
 * Judged: 127.0.0.13, whose requests were lost before the redirect only;
 * 127.0.0.14, whose requests to another node than the target were lost;
 * 127.0.0.15, whose requests to the target were lost after the window (a
 * loss is known to lie between two commands of the connection only).
 * 127.0.0.16, whose requests to another node were lost, many times. */
static void test_redirect_unfollowed_retry_unseen(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int a = sc_conn(&s, 11, 40000, S), at = sc_conn(&s, 11, 40001, T);
    sc_do(&s, a, 1000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, at, 1300, 100, "?", "GET", k1, NULL);
    int b = sc_conn(&s, 12, 40000, S), bt = sc_conn(&s, 12, 40001, T);
    sc_do(&s, b, 1000, 100, MOVED_T, "GET", k1, NULL);
    sc_requests_lost(&s, bt);
    sc_do(&s, bt, 1500, 100, "$", "GET", "other-slot-key", NULL);
    int c = sc_conn(&s, 13, 40000, S);
    sc_requests_lost(&s, c);
    sc_do(&s, c, 500, 100, "$", "GET", "other-slot-key", NULL);
    sc_do(&s, c, 1000, 100, MOVED_T, "GET", k1, NULL);
    int d = sc_conn(&s, 14, 40000, S), d2 = sc_conn(&s, 14, 40001, 30312);
    sc_do(&s, d, 1000, 100, MOVED_T, "GET", k1, NULL);
    sc_requests_lost(&s, d2);
    sc_do(&s, d2, 1500, 100, "$", "GET", "other-slot-key", NULL);
    int e = sc_conn(&s, 15, 40000, S), et = sc_conn(&s, 15, 40001, T);
    sc_do(&s, e, 1000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, et, 6000000, 100, "$", "GET", "other-slot-key", NULL);
    sc_requests_lost(&s, et); /* between 6 s and 9 s: after the window */
    sc_do(&s, et, 9000000, 100, "$", "GET", "other-slot-key", NULL);
    /* many losses to another node after the redirect: still judged */
    int g = sc_conn(&s, 16, 40000, S), g2 = sc_conn(&s, 16, 40001, 30312);
    sc_do(&s, g, 1000, 100, MOVED_T, "GET", k1, NULL);
    for (int i = 0; i < 20; i++) {
        sc_requests_lost(&s, g2);
        sc_do(&s, g2, 2000 + i * 1000, 100, "$", "GET", "other-slot-key", NULL);
    }
    sc_finish(&s, 20000000);
    assert_null(sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.11"));
    assert_null(sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.12"));
    for (int h = 13; h <= 16; h++) {
        char name[16];
        snprintf(name, sizeof name, "127.0.0.%d", h);
        const an_finding *f = sc_find(&s, AN_REDIRECT_UNFOLLOWED, name);
        if (!f)
            fail_msg("%s: redirect_unfollowed expected", name);
        assert_int_equal(f->count, 1);
    }
    assert_int_equal(an_get_stats(s.an)->unseen_retry_ops, 2);
    assert_int_equal(sc_total_clients(&s), 4);
    sc_free(&s);
}

/* A client with more waiting operations than a loss marks one by one
 * (AN_LOSS_WALK): the older ones are judged against the span of such
 * losses, so none of the 300 is called redirect_unfollowed; without the
 * loss every one is. */
static void test_redirect_unfollowed_many_waiting(void **state)
{
    (void)state;
    for (int lost = 0; lost <= 1; lost++) {
        sc s;
        sc_init(&s, NULL);
        int c = sc_conn(&s, 11, 40000, S), ct = sc_conn(&s, 11, 40001, T);
        for (int i = 0; i < 300; i++) {
            char key[16];
            snprintf(key, sizeof key, "{w}%d", i); /* one slot: one finding */
            sc_do(&s, c, 1000 + i * 10, 5, MOVED_T, "GET", key, NULL);
        }
        if (lost)
            sc_requests_lost(&s, ct);
        sc_do(&s, ct, 5000, 100, "$", "GET", "other-slot-key", NULL);
        sc_finish(&s, 20000000);
        uint64_t occurrences = 0;
        for (size_t i = 0; i < s.out.nfindings; i++)
            if (s.out.findings[i].kind == AN_REDIRECT_UNFOLLOWED)
                occurrences += s.out.findings[i].count;
        assert_int_equal(occurrences, lost ? 0 : 300);
        assert_int_equal(an_get_stats(s.an)->unseen_retry_ops, lost ? 300 : 0);
        sc_free(&s);
    }
}

/* Judged on flush once 2 windows have passed (live mode). */
static void test_redirect_unfollowed_on_flush(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    sc_conn(&s, 30, 40000, T); /* the capture holds T's traffic */
    int c = sc_conn(&s, 11, 40000, S);
    sc_do(&s, c, 1000, 100, ASK_T, "GET", k1, NULL);
    an_flush(s.an, SC_T0 + 1100 + 9000000);
    assert_int_equal(sc_total_clients(&s), 0);
    an_flush(s.an, SC_T0 + 1100 + 10000001);
    assert_int_equal(sc_total_clients(&s), 1);
    assert_non_null(sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.11"));
    sc_free(&s);
}

static void test_redirect_loop(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 13, 40000, S), ct = sc_conn(&s, 13, 40001, T);
    sc_do(&s, cs, 1000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, ct, 1200, 100, MOVED_S, "GET", k1, NULL);
    sc_do(&s, cs, 1400, 100, MOVED_T, "GET", k1, NULL); /* the same redirect again */
    sc_do(&s, ct, 1600, 100, MOVED_S, "GET", k1, NULL);
    sc_do(&s, cs, 1800, 100, "$", "GET", k1, NULL);
    sc_finish(&s, 20000000);
    const an_finding *f = sc_find(&s, AN_REDIRECT_LOOP, "127.0.0.13");
    assert_non_null(f);
    assert_int_equal(f->count, 1);
    assert_string_equal(f->node, "");
    assert_int_equal(f->extra_latency_us, 1800 - 1000);
    assert_non_null(strstr(sc_evidence(&s, f), "127.0.0.1:30311"));
    assert_int_equal(sc_total_clients(&s), 1);
    sc_free(&s);
}

/* A capture that holds no connection to the node a redirect names (one
 * filtered to S's port, tcpdump on S's host) cannot show the retry: the
 * operation is not judged but counted in unseen_target_ops, and the same
 * client is judged once the capture holds a connection to T (of another
 * client, opened after the redirect but before the judgement). GETs of one
 * key sent to S again and again, each answered MOVED to an unseen T, are
 * as many operations (each may have been served at T), not a redirect
 * loop. A connection to T held only by its client
 * port, and a read of a client that reads from replicas when T's replica
 * is not held, are no better. */
static void test_redirect_unfollowed_target_unseen(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 11, 40000, S);
    sc_do(&s, c, 1000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, c, 2000, 100, ASK_T, "SET", k2, "v", NULL);
    sc_do(&s, c, 3000, 100, "$", "GET", "other-slot-key", NULL);
    int l = sc_conn(&s, 13, 40000, S);
    for (int i = 0; i < 6; i++)
        sc_do(&s, l, 4000 + i * 200, 100, MOVED_T, "GET", k2, NULL);
    sc_finish(&s, 20000000);
    assert_null(sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.11"));
    /* 127.0.0.13's GETs may each have been served at T: six operations,
     * none judged, no loop */
    assert_null(sc_find(&s, AN_REDIRECT_LOOP, "127.0.0.13"));
    assert_int_equal(an_get_stats(s.an)->unseen_target_ops, 2 + 6);
    assert_int_equal(sc_total(&s), 0);
    sc_free(&s);

    /* another client's connection to T covers it, unless its client port
     * is S's: a capture filtered to S's port holds it by chance, it shows
     * nothing of T */
    for (int by_chance = 0; by_chance <= 1; by_chance++) {
        sc_init(&s, NULL);
        c = sc_conn(&s, 11, 40000, S);
        sc_do(&s, c, 1000, 100, MOVED_T, "GET", k1, NULL);
        sc_conn(&s, 30, by_chance ? S : 40000, T);
        sc_do(&s, c, 3000, 100, "$", "GET", "other-slot-key", NULL);
        sc_finish(&s, 20000000);
        const an_finding *f = sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.11");
        if (by_chance)
            assert_null(f);
        else
            assert_non_null(f);
        assert_int_equal(an_get_stats(s.an)->unseen_target_ops, by_chance ? 1 : 0);
        sc_free(&s);
    }

    /* a client that reads from replicas (READONLY on S's replica :30314)
     * may retry a read at T's replica :30315, which the capture does not
     * hold: its GET is not judged, its SET (a write: at T) is */
    sc_init(&s, NULL);
    c = sc_conn(&s, 11, 40000, S);
    mig_fetch_map(&s, c, 0);
    int r = sc_conn(&s, 11, 40001, 30314);
    sc_do(&s, r, 500, 100, "+OK", "READONLY", NULL);
    sc_conn(&s, 30, 40000, T);
    sc_do(&s, c, 1000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, c, 1200, 100, MOVED_T, "SET", k2, "v", NULL);
    sc_do(&s, c, 3000, 100, "$", "GET", "other-slot-key", NULL);
    sc_finish(&s, 20000000);
    const an_finding *f = sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.11");
    assert_non_null(f);
    assert_int_equal(f->count, 1);
    assert_non_null(strstr(sc_evidence(&s, f), "SET"));
    assert_int_equal(an_get_stats(s.an)->unseen_target_ops, 1);
    sc_free(&s);
}

/* Commands whose key the capture lost (cut by a gap, or by the snap length:
 * resp's slot_unknown) are in no operation: the GETs of 127.0.0.13, each
 * bounced between S and T as in test_redirect_loop but each of an unknown
 * key, make no redirect_loop (nor any finding); 127.0.0.11's GET k1 waiting
 * for its retry at T is not judged redirect_unfollowed after a GET at T
 * whose key was lost (it may be the retry), while 127.0.0.12's, followed
 * by a GET of a known other key, is. With and without a command sink (the
 * quick paths must leave such commands to the general one). */
static void test_keys_lost_no_operation(void **state)
{
    (void)state;
    for (int sink = 0; sink <= 1; sink++) {
        sc s;
        if (sink)
            sc_init(&s, NULL);
        else
            sc_init_no_commands(&s, NULL);
        int cs = sc_conn(&s, 13, 40000, S), ct = sc_conn(&s, 13, 40001, T);
        for (int i = 0; i < 4; i++) {
            sc_key_lost(&s, i % 2 ? ct : cs);
            sc_do(&s, i % 2 ? ct : cs, 1000 + i * 200, 100, i % 2 ? MOVED_S : MOVED_T, "GET", k1,
                  NULL);
        }
        sc_key_lost(&s, cs);
        sc_do(&s, cs, 1800, 100, "$", "GET", k1, NULL);
        int a = sc_conn(&s, 11, 40000, S), at = sc_conn(&s, 11, 40001, T);
        sc_do(&s, a, 1000, 100, MOVED_T, "GET", k1, NULL);
        sc_key_lost(&s, at);
        sc_do(&s, at, 1300, 100, "$", "GET", k1, NULL);
        int b = sc_conn(&s, 12, 40000, S), bt = sc_conn(&s, 12, 40001, T);
        sc_do(&s, b, 1000, 100, MOVED_T, "GET", k1, NULL);
        sc_do(&s, bt, 1300, 100, "$", "GET", "other-slot-key", NULL);
        sc_finish(&s, 20000000);
        assert_int_equal(sc_total(&s), 1);
        assert_non_null(sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.12"));
        assert_int_equal(an_get_stats(s.an)->keys_lost, 6);
        assert_int_equal(an_get_stats(s.an)->unseen_retry_ops, 1);
        sc_free(&s);
    }
}

/* A client that never sends ASKING and follows every redirect bounces
 * S -ASK-> T -MOVED-> S ... until its own cap: asking_missing at each visit to
 * T, and one redirect_loop for the operation. */
static void test_redirect_loop_without_asking(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 13, 40000, S), ct = sc_conn(&s, 13, 40001, T);
    mig_bounce(&s, cs, ct, 1000, 8, k1);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 2);
    const an_finding *loop = sc_find(&s, AN_REDIRECT_LOOP, "127.0.0.13");
    const an_finding *miss = sc_find(&s, AN_ASKING_MISSING, "127.0.0.13");
    assert_non_null(loop);
    assert_non_null(miss);
    assert_int_equal(loop->count, 1);
    assert_int_equal(miss->count, 4);
    assert_null(sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.13"));
    sc_free(&s);
}

/* Many redirects without a repeat, over the cap; and under it, none. */
static void test_redirect_loop_cap(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "loop_max_redirects=3"), 0);
    sc s;
    sc_init(&s, &cfg);
    int c[5];
    for (int i = 0; i < 5; i++)
        c[i] = sc_conn(&s, 14, 40000 + i, 30310 + i);
    const char *to[] = {"-MOVED 100 127.0.0.1:30311", "-MOVED 100 127.0.0.1:30312",
                        "-MOVED 100 127.0.0.1:30313", "-MOVED 100 127.0.0.1:30314"};
    for (int i = 0; i < 4; i++)
        sc_do(&s, c[i], 1000 + i * 200, 100, to[i], "GET", k1, NULL);
    sc_do(&s, c[4], 1800, 100, "$", "GET", k1, NULL);
    sc_finish(&s, 20000000);
    assert_non_null(sc_find(&s, AN_REDIRECT_LOOP, "127.0.0.14"));
    sc_free(&s);

    sc_init(&s, &cfg);
    for (int i = 0; i < 4; i++)
        c[i] = sc_conn(&s, 14, 40000 + i, 30310 + i);
    for (int i = 0; i < 3; i++)
        sc_do(&s, c[i], 1000 + i * 200, 100, to[i], "GET", k1, NULL);
    sc_do(&s, c[3], 1800, 100, "$", "GET", k1, NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 0);
    sc_free(&s);
}

static void test_tryagain_storm(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 15, 40000, S);
    int64_t t = 1000;
    for (int i = 0; i < 12; i++, t += 110)
        sc_do(&s, c, t, 100, "-TRYAGAIN Multiple keys request during rehashing of slot", "MGET",
              k1, k2, NULL);
    sc_do(&s, c, t, 100, "*2", "MGET", k1, k2, NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 1);
    const an_finding *f = sc_find(&s, AN_TRYAGAIN_STORM, "127.0.0.15");
    assert_non_null(f);
    assert_int_equal(f->count, 1);
    assert_int_equal(f->extra_latency_us, t - 1000);
    sc_free(&s);
}

/* redis-py: 8 immediate retries, then 50 ms apart; bounded. */
static void test_tryagain_backoff_negative(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 15, 40000, S);
    int64_t t = 1000;
    for (int i = 0; i < 15; i++) {
        sc_do(&s, c, t, 100, "-TRYAGAIN Multiple keys request during rehashing of slot", "MGET",
              k1, k2, NULL);
        t += 100 + (i < 8 ? 10 : 50000);
    }
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 0);
    sc_free(&s);
}

/* ---------------------------------------------------------------- others */

static void test_readonly_missing(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cm = sc_conn(&s, 16, 40000, S);
    mig_fetch_map(&s, cm, 0); /* 30314 is 30310's replica */
    int r1 = sc_conn(&s, 16, 40001, 30314);
    sc_do(&s, r1, 1000, 100, "-MOVED 100 127.0.0.1:30310", "GET", k1, NULL);
    sc_do(&s, cm, 1200, 100, "$", "GET", k1, NULL);
    /* with READONLY the replica serves the read; a write still goes away */
    int r2 = sc_conn(&s, 17, 40002, 30314);
    mig_fetch_map(&s, r2, 1500);
    sc_do(&s, r2, 2000, 50, "+OK", "READONLY", NULL);
    sc_do(&s, r2, 2100, 100, "$", "GET", k1, NULL);
    sc_do(&s, r2, 2300, 100, "-MOVED 100 127.0.0.1:30310", "SET", k1, "v", NULL);
    int m2 = sc_conn(&s, 17, 40003, S);
    sc_do(&s, m2, 2500, 100, "+OK", "SET", k1, "v", NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 1);
    const an_finding *f = sc_find(&s, AN_READONLY_MISSING, "127.0.0.16");
    assert_non_null(f);
    assert_string_equal(f->node, "127.0.0.1:30314");
    assert_int_equal(f->slot, -1);
    sc_free(&s);
}

/* Picked up mid-stream: a read the replica bounces to its own master shows
 * READONLY off (readonly_missing, and the connection's later bounces too);
 * one bounced elsewhere (the slot is not its master's) shows nothing. */
static void test_readonly_missing_midstream(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cm = sc_conn(&s, 16, 40000, S);
    mig_fetch_map(&s, cm, 0); /* 30314 is 30310's replica */
    int r1 = sc_conn_mid(&s, 17, 40001, 30314);
    sc_do(&s, r1, 1000, 100, "-MOVED 100 127.0.0.1:30310", "GET", k1, NULL);
    sc_do(&s, r1, 1200, 100, "-MOVED 100 127.0.0.1:30310", "GET", k1, NULL);
    int r2 = sc_conn_mid(&s, 18, 40002, 30314);
    sc_do(&s, r2, 1000, 100, "-MOVED 100 127.0.0.1:30311", "GET", k1, NULL);
    sc_finish(&s, 20000000);
    const an_finding *f = sc_find(&s, AN_READONLY_MISSING, "127.0.0.17");
    assert_non_null(f);
    assert_string_equal(f->node, "127.0.0.1:30314");
    assert_int_equal(f->count, 2);
    assert_null(sc_find(&s, AN_READONLY_MISSING, "127.0.0.18"));
    sc_free(&s);
}

/* CLUSTER NODES as 30311 gives it while its gossip lags a failover: 30314
 * (a replica of 30310 in the SLOTS map) is listed as a master without slots
 * with config epoch epoch_30314; 30310 is a master at epoch 5. */
static void fetch_nodes_lagging(sc *s, int c, int64_t t, int epoch_30314)
{
    char text[1024], raw[1100];
    int n = snprintf(text, sizeof text,
                     "e5a4e4604f4b95f6ad58634a5879d4d612eeb93f 127.0.0.1:30310@40310 master - 0 0 5 "
                     "connected 0-5460\n"
                     "0680011b73f1f757c2f87b32768750ee294979a8 127.0.0.1:30314@40314 master - 0 0 %d "
                     "connected\n"
                     "611044d087902773b471a664cf2b41722e788eb8 127.0.0.1:30311@40311 myself,master - "
                     "0 0 6 connected 5461-10922\n"
                     "74631f75e1b485564ed6144901851586455a5e24 127.0.0.1:30312@40312 master - 0 0 3 "
                     "connected 10923-16383\n",
                     epoch_30314);
    int len = snprintf(raw, sizeof raw, "$%d\r\n%s\r\n", n, text);
    const char *argv[] = {"CLUSTER", "NODES"};
    sc_cmd_raw(s, c, t, 100, (const uint8_t *)raw, (size_t)len, 2, argv);
}

/* Gossip that lags a failover does not undo a replica: after the SLOTS map
 * (30314 replicates 30310), a peer's CLUSTER NODES lists 30314 as a master
 * without slots at epoch 2, below its master's 5: stale, 30314 stays a
 * replica and a read it bounces to 30310 is readonly_missing. At epoch 6
 * (above its master's) the line is news: 30314 is an empty master, and its
 * MOVED an ordinary redirect. */
static void test_readonly_missing_stale_gossip(void **state)
{
    (void)state;
    for (int epoch = 2; epoch <= 6; epoch += 4) {
        sc s;
        sc_init(&s, NULL);
        int cm = sc_conn(&s, 16, 40000, S);
        mig_fetch_map(&s, cm, 0);
        int cp = sc_conn(&s, 16, 40001, 30311);
        fetch_nodes_lagging(&s, cp, 500, epoch);
        int r1 = sc_conn(&s, 16, 40002, 30314);
        sc_do(&s, r1, 1000, 100, "-MOVED 100 127.0.0.1:30310", "GET", k1, NULL);
        sc_do(&s, cm, 1200, 100, "$", "GET", k1, NULL);
        sc_finish(&s, 20000000);
        const an_finding *f = sc_find(&s, AN_READONLY_MISSING, "127.0.0.16");
        if (epoch < 5) {
            assert_non_null(f);
            assert_string_equal(f->node, "127.0.0.1:30314");
            assert_int_equal(f->count, 1);
        } else {
            assert_null(f);
        }
        sc_free(&s);
    }
}

/* A failover no map shows: the SLOTS map gives slot 100 to 30310 with
 * 30314 its replica; then 30310 answers MOVED to 30314. Only a promotion
 * gives a replica slots, so 30314 is now the master and 30310 its replica:
 * the reads 30310 bounces to 30314 are readonly_missing from the first one
 * on, on a connection opened in the capture (case 0) and on one picked up
 * mid-stream (case 1: a bounce to the replica's own master shows READONLY
 * off). Case 2: a MOVED to 30315, a replica of another master, shows no
 * failover of 30310, which stays a master: its MOVEDs are redirects. */
static void test_readonly_missing_after_failover(void **state)
{
    (void)state;
    for (int kase = 0; kase <= 2; kase++) {
        sc s;
        sc_init(&s, NULL);
        int cm = sc_conn(&s, 16, 40000, S);
        mig_fetch_map(&s, cm, 0); /* 30314 is 30310's replica, 30315 30311's */
        int c = kase == 1 ? sc_conn_mid(&s, 21, 40001, S) : sc_conn(&s, 21, 40001, S);
        int to = kase == 2 ? 30315 : 30314;
        const char *moved = kase == 2 ? "-MOVED 100 127.0.0.1:30315" : "-MOVED 100 127.0.0.1:30314";
        int cn = sc_conn(&s, 21, 40002, to);
        for (int i = 0; i < 4; i++) {
            int64_t t = 1000 + i * 1000;
            sc_do(&s, c, t, 100, moved, "GET", k1, NULL);
            sc_do(&s, cn, t + 200, 100, "$", "GET", k1, NULL);
        }
        sc_finish(&s, 20000000);
        const an_finding *f = sc_find(&s, AN_READONLY_MISSING, "127.0.0.21");
        if (kase == 2) {
            assert_null(f);
            assert_non_null(sc_find(&s, AN_MOVED_IGNORED, "127.0.0.21"));
        } else {
            assert_non_null(f);
            assert_string_equal(f->node, "127.0.0.1:30310");
            assert_int_equal(f->count, 4);
            assert_null(sc_find(&s, AN_MOVED_IGNORED, "127.0.0.21"));
        }
        /* each MOVED of 30310 is put down to the failover (30314 its replica
         * before, its master after the first), not to nothing known */
        size_t nmoved = 0;
        for (size_t i = 0; i < s.out.nredirects; i++) {
            const an_redirect *r = &s.out.redirects[i];
            if (strcmp(r->client, "127.0.0.21") != 0)
                continue;
            nmoved++;
            assert_string_equal(r->cause, kase == 2 ? "unknown" : "failover");
        }
        assert_int_equal(nmoved, 4);
        /* the roles reported at the end */
        for (size_t i = 0; i < s.out.nnodes; i++) {
            const an_node *n = &s.out.nodes[i];
            if (strcmp(n->observed, "127.0.0.1:30310") == 0)
                assert_string_equal(n->role, kase == 2 ? "master" : "replica");
            if (strcmp(n->observed, "127.0.0.1:30314") == 0)
                assert_string_equal(n->role, kase == 2 ? "replica" : "master");
        }
        sc_free(&s);
    }
}

/* CLUSTER SHARDS of a cluster whose shard of 30314 lists no master (it
 * failed): 30314 is a replica whose master is not known. */
static void fetch_shards_masterless(sc *s, int c, int64_t t)
{
    static const char raw[] =
        "*2\r\n"
        "*4\r\n$5\r\nslots\r\n*2\r\n:5461\r\n:10922\r\n$5\r\nnodes\r\n*1\r\n"
        "*8\r\n$2\r\nid\r\n$40\r\n" T_ID "\r\n$4\r\nport\r\n:30311\r\n"
        "$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
        "*4\r\n$5\r\nslots\r\n*0\r\n$5\r\nnodes\r\n*1\r\n"
        "*6\r\n$4\r\nport\r\n:30314\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n"
        "$4\r\nrole\r\n$7\r\nreplica\r\n";
    const char *argv[] = {"CLUSTER", "SHARDS"};
    sc_cmd_raw(s, c, t, 100, (const uint8_t *)raw, sizeof raw - 1, 2, argv);
}

/* Picked up mid-stream, a connection to a replica whose READONLY predates
 * the capture: the MOVEDs it sends to another node than its master (the
 * slot went to another shard) are redirects the client ignored whether
 * READONLY is on or off (a replica sends a read to the node it takes for
 * the slot's owner either way), not READONLY bounces. served 1: a read the
 * replica served showed READONLY on first; served 2: that read is one the
 * quick path would take (the same command again, the client's view knowing
 * the slot's node from the error before it): it is not left to it. served 3:
 * none served, and the replica's master is not known (CLUSTER SHARDS shows
 * its shard without one): a MOVED to T may then be a READONLY bounce, so
 * the MOVEDs are not judged, and counted as such. */
static void test_moved_ignored_readonly_midstream(void **state)
{
    (void)state;
    for (int served = 0; served <= 3; served++) {
        sc s;
        sc_init_no_commands(&s, NULL);
        int cm = sc_conn(&s, 19, 40000, S);
        mig_fetch_map(&s, cm, 0); /* 30314 is 30310's replica */
        if (served == 3)
            fetch_shards_masterless(&s, cm, 200);
        int r = sc_conn_mid(&s, 19, 40001, 30314), ct = sc_conn(&s, 19, 40002, T);
        if (served == 2)
            sc_do(&s, r, 400, 50, "-ERR not now", "GET", k1, NULL);
        if (served == 1 || served == 2)
            sc_do(&s, r, 500, 100, "$", "GET", k1, NULL);
        sc_do(&s, r, 1000, 100, MOVED_T, "GET", k1, NULL);
        sc_do(&s, ct, 1300, 100, "$", "GET", k1, NULL);
        for (int i = 0; i < 3; i++) {
            int64_t t = 2000 + i * 1000;
            sc_do(&s, r, t, 100, MOVED_T, "GET", k1, NULL); /* the replica again */
            sc_do(&s, ct, t + 200, 100, "$", "GET", k1, NULL);
        }
        sc_finish(&s, 20000000);
        const an_finding *f = sc_find(&s, AN_MOVED_IGNORED, "127.0.0.19");
        assert_null(sc_find(&s, AN_READONLY_MISSING, "127.0.0.19"));
        /* master unknown: not judged, and counted (the first MOVED and the 3 after) */
        assert_int_equal(an_get_stats(s.an)->readonly_unknown_moved, served == 3 ? 4 : 0);
        if (served == 3) {
            assert_null(f);
        } else {
            assert_non_null(f);
            assert_int_equal(f->count, 3);
            assert_string_equal(f->node, "127.0.0.1:30314");
            assert_int_equal(f->slot, SLOT);
        }
        sc_free(&s);
    }
}

static void test_crossslot(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 18, 40000, S);
    sc_do(&s, c, 1000, 100, "-CROSSSLOT Keys in request don't hash to the same slot", "MSET", "a",
          "1", "b", "2", NULL);
    sc_do(&s, c, 2000, 100, "-CROSSSLOT Keys in request don't hash to the same slot", "DEL", "a",
          "b", NULL);
    sc_do(&s, c, 3000, 100, "+OK", "MSET", k1, "1", k2, "2", NULL);
    sc_finish(&s, 20000000);
    assert_int_equal(sc_total_clients(&s), 1);
    const an_finding *f = sc_find(&s, AN_CROSSSLOT, "127.0.0.18");
    assert_non_null(f);
    assert_int_equal(f->count, 2);
    assert_int_equal(an_get_stats(s.an)->crossslot, 2);
    sc_free(&s);
}

static void test_migration_stuck(void **state)
{
    (void)state;
    /* open at the end: warning */
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 19, 40000, S), ct = sc_conn(&s, 19, 40001, T);
    mig_ask_followed(&s, c, ct, 1000, k1);
    sc_finish(&s, 2000000);
    assert_int_equal(sc_total(&s), 1);
    const an_finding *f = sc_find(&s, AN_MIGRATION_STUCK, "");
    assert_non_null(f);
    assert_int_equal(f->severity, AN_WARNING);
    assert_int_equal(f->slot, SLOT);
    assert_string_equal(f->node, "127.0.0.1:30310");
    sc_free(&s);

    /* longer than the threshold, seen on flush while still open: error */
    sc_init(&s, NULL);
    c = sc_conn(&s, 19, 40000, S);
    ct = sc_conn(&s, 19, 40001, T);
    mig_ask_followed(&s, c, ct, 1000, k1);
    an_flush(s.an, SC_T0 + 1100 + 60000000);
    assert_int_equal(sc_total(&s), 0);
    an_flush(s.an, SC_T0 + 1100 + 60000001);
    f = sc_find(&s, AN_MIGRATION_STUCK, "");
    assert_non_null(f);
    assert_int_equal(f->severity, AN_ERROR);
    sc_free(&s);

    /* open at the end of a capture that holds no connection to the target
     * (filtered to S's port): its flip may just not be in it, nothing; nor
     * past the threshold */
    sc_init(&s, NULL);
    c = sc_conn(&s, 19, 40000, S);
    sc_do(&s, c, 1000, 100, ASK_T, "GET", k1, NULL);
    an_flush(s.an, SC_T0 + 1100 + 60000001);
    sc_finish(&s, 62000000);
    assert_null(sc_find(&s, AN_MIGRATION_STUCK, ""));
    sc_free(&s);

    /* closed by the flip in time: nothing */
    sc_init(&s, NULL);
    c = sc_conn(&s, 19, 40000, S);
    ct = sc_conn(&s, 19, 40001, T);
    mig_ask_followed(&s, c, ct, 1000, k1);
    sc_do(&s, c, 5000, 100, MOVED_T, "GET", k1, NULL);
    sc_do(&s, ct, 5200, 100, "$", "GET", k1, NULL);
    sc_finish(&s, 200000000);
    assert_int_equal(sc_total(&s), 0);
    assert_int_equal(s.out.nmigrations, 1);
    assert_int_equal(s.out.migrations[0].flip_us, SC_T0 + 5100);
    sc_free(&s);
}

/* Findings are re-emitted with the same id when they change. */
static void test_finding_ids_stable(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int cs = sc_conn(&s, 5, 40000, S), ct = sc_conn(&s, 5, 40001, T);
    mig_ask_bounced(&s, cs, ct, 1000, k1);
    assert_int_equal(s.out.finding_emits, 1);
    assert_int_equal(s.out.findings[0].id, 1);
    assert_int_equal(s.out.findings[0].count, 1);
    an_flush(s.an, SC_T0 + 1500);
    assert_int_equal(s.out.finding_emits, 1); /* unchanged: not emitted again */
    mig_ask_bounced(&s, cs, ct, 2000, k2);
    an_flush(s.an, SC_T0 + 2500);
    assert_int_equal(s.out.finding_emits, 2);
    assert_int_equal(s.out.nfindings, 1);
    assert_int_equal(s.out.findings[0].id, 1);
    assert_int_equal(s.out.findings[0].count, 2);
    sc_finish(&s, 20000000);
    sc_free(&s);
}

/* Clients per connection: each connection is its own client. */
static void test_client_by_conn(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    cfg.client_by = AN_CLIENT_BY_CONN;
    sc s;
    sc_init(&s, &cfg);
    int cs = sc_conn(&s, 5, 40000, S), ct = sc_conn(&s, 5, 40001, T);
    mig_ask_bounced(&s, cs, ct, 1000, k1);
    sc_finish(&s, 20000000);
    /* the retry is still joined to its operation (matched by host) */
    assert_int_equal(sc_total_clients(&s), 1);
    assert_non_null(sc_find(&s, AN_ASKING_MISSING, "127.0.0.5:40001"));
    assert_int_equal(s.out.nclients, 2);
    sc_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correct_client_whole_migration),
        cmocka_unit_test(test_redis_cli_follower_no_finding),
        cmocka_unit_test(test_asking_missing),
        cmocka_unit_test(test_asking_missing_negative),
        cmocka_unit_test(test_asking_missing_after_lost_requests),
        cmocka_unit_test(test_asking_missing_negative_after_map),
        cmocka_unit_test(test_asking_other_connection),
        cmocka_unit_test(test_asking_interleaved),
        cmocka_unit_test(test_asking_interleaved_after_lost_requests),
        cmocka_unit_test(test_ask_cached),
        cmocka_unit_test(test_ask_cached_negative_after_moved),
        cmocka_unit_test(test_ask_cached_negative_served),
        cmocka_unit_test(test_moved_ignored),
        cmocka_unit_test(test_moved_ignored_readonly_midstream),
        cmocka_unit_test(test_redirect_unfollowed),
        cmocka_unit_test(test_unfollowed_at_end_slow_retrier),
        cmocka_unit_test(test_unfollowed_at_end_map_fetcher),
        cmocka_unit_test(test_unfollowed_at_end_map_after_redirect),
        cmocka_unit_test(test_redirect_unfollowed_on_flush),
        cmocka_unit_test(test_redirect_unfollowed_retry_unseen),
        cmocka_unit_test(test_redirect_unfollowed_many_waiting),
        cmocka_unit_test(test_redirect_loop),
        cmocka_unit_test(test_keys_lost_no_operation),
        cmocka_unit_test(test_redirect_unfollowed_target_unseen),
        cmocka_unit_test(test_redirect_loop_without_asking),
        cmocka_unit_test(test_redirect_loop_cap),
        cmocka_unit_test(test_tryagain_storm),
        cmocka_unit_test(test_tryagain_backoff_negative),
        cmocka_unit_test(test_readonly_missing),
        cmocka_unit_test(test_readonly_missing_midstream),
        cmocka_unit_test(test_readonly_missing_stale_gossip),
        cmocka_unit_test(test_readonly_missing_after_failover),
        cmocka_unit_test(test_crossslot),
        cmocka_unit_test(test_migration_stuck),
        cmocka_unit_test(test_finding_ids_stable),
        cmocka_unit_test(test_client_by_conn),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
