/*
 * test_an_quick.c - the analyzer's quick path (analysis/analyzer.c,
 * quick_command) writes exactly what its general path would. A command sink
 * rules the quick path out, so the same traffic fed to an analyzer with one
 * (sc_init) and without (sc_init_no_commands) must give the same records and
 * counters; and the quick path keeps the LRU order that picks which
 * connection or client is evicted at a cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/analysis/scenario.h"

/* A small deterministic generator (the traffic must be the same twice). */
static uint32_t next_rand(uint32_t *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 8;
}

/* One command on connection c at *t (advanced), with a reply of its own. */
static void send(sc *s, int c, int64_t *t, uint32_t *rnd, const char *reply, int argc,
                 const char *const *argv)
{
    *t += 10 + (int64_t)(next_rand(rnd) % 7);
    sc_cmd(s, c, *t, 5 + (int64_t)(next_rand(rnd) % 400), reply, argc, argv);
}

/* Mixed traffic: 6 hosts with 4 connections each to 3 nodes, every
 * connection mostly repeating its favourite command (as pipelines and
 * benchmarks do) over 50 keys, some MOVED and ASK (then ASKING and the
 * retry), keyless commands, a node link sending RESTORE-ASKING, and
 * connections closed and opened midway. */
static void run_mix(sc *s)
{
    static const char *const favourite[] = {"GET", "SET", "INCR", "PING", "MGET", "DEL"};
    uint32_t rnd = 7;
    int64_t t = 0;
    int conns[32];
    int nconns = 0;
    for (int h = 0; h < 6; h++)
        for (int k = 0; k < 4; k++)
            conns[nconns++] = sc_conn(s, 10 + h, 40000 + k, 30310 + (h + k) % 3);
    int link = sc_conn(s, 1, 45000, 30311);
    for (int i = 0; i < 4000; i++) {
        if (i == 2000) { /* a few connections go, new ones come */
            for (int k = 0; k < 4; k++) {
                sc_close(s, conns[k * 5], t);
                conns[k * 5] = sc_conn(s, 10 + k, 41000 + k, 30310 + k % 3);
            }
        }
        if (i % 16 == 0) {
            const char *argv[] = {"RESTORE-ASKING", "k1", "0", "payload"};
            send(s, link, &t, &rnd, "+OK", 4, argv);
        }
        int ci = (int)(next_rand(&rnd) % (uint32_t)nconns);
        int c = conns[ci];
        const char *name = next_rand(&rnd) % 5 ? favourite[ci % 6] : favourite[next_rand(&rnd) % 6];
        char key[16], key2[16];
        snprintf(key, sizeof key, "k%u", next_rand(&rnd) % 50);
        snprintf(key2, sizeof key2, "k%u", next_rand(&rnd) % 50);
        const char *argv[] = {name, key, strcmp(name, "MGET") == 0 ? key2 : "v"};
        int argc = strcmp(name, "PING") == 0 ? 1 : strcmp(name, "SET") == 0 ||
                                                   strcmp(name, "MGET") == 0 ? 3 : 2;
        uint32_t r = next_rand(&rnd) % 100;
        int slot = an_key_slot(key, strlen(key));
        char reply[64];
        if (argc > 1 && r < 3) {
            snprintf(reply, sizeof reply, "-MOVED %d 127.0.0.1:30311", slot);
            send(s, c, &t, &rnd, reply, argc, argv);
        } else if (argc > 1 && r < 5) {
            snprintf(reply, sizeof reply, "-ASK %d 127.0.0.1:30312", slot);
            send(s, c, &t, &rnd, reply, argc, argv);
            const char *asking[] = {"ASKING"};
            send(s, c, &t, &rnd, "+OK", 1, asking);
            send(s, c, &t, &rnd, "+OK", argc, argv);
        } else {
            send(s, c, &t, &rnd, "+OK", argc, argv);
        }
    }
    sc_finish(s, t + 100000000);
}

/* Do two scenarios' outputs agree, record by record? */
static void assert_same_output(const sc *a, const sc *b)
{
    assert_memory_equal(an_get_stats(a->an), an_get_stats(b->an), sizeof(an_stats));
    const sc_sink *x = &a->out, *y = &b->out;
    assert_int_equal(x->nclients, y->nclients);
    for (size_t i = 0; i < x->nclients; i++) {
        const an_client *p = &x->clients[i], *q = &y->clients[i];
        assert_string_equal(p->name, q->name);
        assert_int_equal(p->first_us, q->first_us);
        assert_int_equal(p->last_us, q->last_us);
        assert_int_equal(p->connections, q->connections);
        assert_int_equal(p->commands, q->commands);
        assert_int_equal(p->redirects, q->redirects);
        assert_int_equal(p->findings, q->findings);
        assert_int_equal(p->cluster_aware, q->cluster_aware);
        assert_int_equal(p->is_node, q->is_node);
    }
    assert_int_equal(x->connections, y->connections);
    for (size_t i = 0; i < x->connections && i < SC_MAX; i++) {
        assert_int_equal(x->conn_records[i].id, y->conn_records[i].id);
        assert_int_equal(x->conn_records[i].commands, y->conn_records[i].commands);
    }
    assert_int_equal(x->nnodes, y->nnodes);
    for (size_t i = 0; i < x->nnodes; i++) {
        assert_string_equal(x->nodes[i].observed, y->nodes[i].observed);
        assert_int_equal(x->nodes[i].commands, y->nodes[i].commands);
    }
    assert_int_equal(x->nlatencies, y->nlatencies);
    for (size_t i = 0; i < x->nlatencies; i++) {
        const an_latency *p = &x->latencies[i], *q = &y->latencies[i];
        assert_int_equal(p->scope, q->scope);
        assert_string_equal(p->key, q->key);
        assert_int_equal(p->redirected, q->redirected);
        assert_int_equal(p->count, q->count);
        assert_int_equal(p->p50_us, q->p50_us);
        assert_int_equal(p->p90_us, q->p90_us);
        assert_int_equal(p->p99_us, q->p99_us);
        assert_int_equal(p->max_us, q->max_us);
        assert_int_equal(p->total_us, q->total_us);
        assert_int_equal(p->extra_us, q->extra_us);
        assert_int_equal(p->extra_round_trips, q->extra_round_trips);
    }
    assert_int_equal(x->nredirects, y->nredirects);
    assert_int_equal(x->nfindings, y->nfindings);
    assert_int_equal(x->finding_emits, y->finding_emits);
    for (size_t i = 0; i < x->nfindings; i++) {
        assert_int_equal(x->findings[i].kind, y->findings[i].kind);
        assert_int_equal(x->findings[i].count, y->findings[i].count);
        assert_string_equal(x->evidence[i], y->evidence[i]);
    }
}

/* The mixed traffic under one configuration, with and without a command
 * sink: the same records. */
static void check_config(const char *const *settings, size_t n)
{
    an_config cfg;
    an_config_defaults(&cfg);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(an_config_set(&cfg, settings[i]), 0);
    sc *general = calloc(1, sizeof *general), *quick = calloc(1, sizeof *quick);
    assert_non_null(general);
    assert_non_null(quick);
    sc_init(general, &cfg);
    sc_init_no_commands(quick, &cfg);
    run_mix(general);
    run_mix(quick);
    assert_true(general->out.commands > 4000); /* the sink saw them all */
    assert_int_equal(quick->out.commands, 0);
    const an_stats *st = an_get_stats(quick->an);
    assert_true(st->commands > 4000);
    assert_int_equal(st->node_link_commands, 250); /* every RESTORE-ASKING */
    assert_true(st->ask > 0 && st->moved > 0);
    assert_same_output(general, quick);
    sc_free(general);
    sc_free(quick);
    free(general);
    free(quick);
}

static void test_same_records_defaults(void **state)
{
    (void)state;
    check_config(NULL, 0);
}

/* Caps just above what the traffic holds (29 connections, 7 clients): near
 * its cap every activity moves its entry in the LRU lists. */
static void test_same_records_near_caps(void **state)
{
    (void)state;
    static const char *const set[] = {"max_conns=32", "max_clients=8"};
    check_config(set, 2);
}

/* Caps below it: connections and clients are evicted and come back. */
static void test_same_records_evicting(void **state)
{
    (void)state;
    static const char *const set[] = {"max_conns=16", "max_clients=4"};
    check_config(set, 2);
}

static void test_same_records_client_by_conn(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    cfg.client_by = AN_CLIENT_BY_CONN;
    sc *general = calloc(1, sizeof *general), *quick = calloc(1, sizeof *quick);
    assert_non_null(general);
    assert_non_null(quick);
    sc_init(general, &cfg);
    sc_init_no_commands(quick, &cfg);
    run_mix(general);
    run_mix(quick);
    assert_true(quick->out.nclients > 20); /* one per connection */
    assert_same_output(general, quick);
    sc_free(general);
    sc_free(quick);
    free(general);
    free(quick);
}

/* At the connection cap, the connection evicted is the least recently
 * active: one that repeats its command (quick path) is kept. */
static void test_quick_keeps_conn_recent(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "max_conns=16"), 0);
    sc s;
    sc_init_no_commands(&s, &cfg);
    for (int i = 0; i < 16; i++) {
        int c = sc_conn(&s, 20, 40000 + i, 30310);
        sc_do(&s, c, 1000 + i * 10, 5, "+OK", "SET", "k", "v", NULL);
    }
    sc_do(&s, 0, 2000, 5, "+OK", "SET", "k", "v", NULL); /* 0 is recent again */
    sc_conn(&s, 20, 41000, 30310);                       /* evicts one */
    assert_int_equal(an_get_stats(s.an)->evicted_conns, 1);
    assert_int_equal(s.out.connections, 1);
    assert_int_equal(s.out.conn_records[0].id, s.conns[1].id);
    assert_int_equal(s.out.conn_records[0].commands, 1);
    sc_free(&s);
}

/* The same for clients at their cap. */
static void test_quick_keeps_client_recent(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "max_clients=4"), 0);
    sc s;
    sc_init_no_commands(&s, &cfg);
    for (int i = 0; i < 4; i++) {
        int c = sc_conn(&s, 30 + i, 40000, 30310);
        sc_do(&s, c, 1000 + i * 10, 5, "+OK", "GET", "k", NULL);
    }
    sc_do(&s, 0, 2000, 5, "+OK", "GET", "k", NULL); /* 127.0.0.30 is recent again */
    int c = sc_conn(&s, 40, 40000, 30310);            /* a fifth client evicts one */
    sc_do(&s, c, 2100, 5, "+OK", "GET", "k", NULL);
    assert_int_equal(an_get_stats(s.an)->evicted_clients, 1);
    assert_int_equal(s.out.nclients, 1);
    assert_string_equal(s.out.clients[0].name, "127.0.0.31");
    assert_int_equal(s.out.clients[0].commands, 1);
    sc_free(&s);
}

/* A command name of 16 bytes or more is not told apart from another by its
 * first 16 bytes alone (what the quick path compares): after two
 * ZREMRANGEBYSCORE (exactly 16), an unknown ZREMRANGEBYSCOREX must still be
 * counted as unknown, as the general path counts it. */
static void test_quick_long_names(void **state)
{
    (void)state;
    sc s;
    sc_init_no_commands(&s, NULL);
    int c = sc_conn(&s, 20, 40000, 30310);
    sc_do(&s, c, 1000, 5, ":0", "ZREMRANGEBYSCORE", "k", "0", "1", NULL);
    sc_do(&s, c, 1100, 5, ":0", "ZREMRANGEBYSCORE", "k", "0", "1", NULL);
    sc_do(&s, c, 1200, 5, ":0", "ZREMRANGEBYSCOREX", "k", "0", "1", NULL);
    assert_int_equal(an_get_stats(s.an)->unknown_commands, 1);
    sc_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_records_defaults),
        cmocka_unit_test(test_same_records_near_caps),
        cmocka_unit_test(test_same_records_evicting),
        cmocka_unit_test(test_same_records_client_by_conn),
        cmocka_unit_test(test_quick_keeps_conn_recent),
        cmocka_unit_test(test_quick_keeps_client_recent),
        cmocka_unit_test(test_quick_long_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
