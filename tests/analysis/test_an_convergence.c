/*
 * test_an_convergence.c - convergence rows, slow_convergence and
 * writes_at_risk (analysis/convergence.c) on hand-made traffic: an ownership
 * change is handed to the module as cluster.c would (an_slot_owner), then
 * clients send commands to the old and the new owner. Every case runs twice:
 * with a command sink and without (the analyzer's quick path must not hide
 * the commands of a watched slot).
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
#include "tests/analysis/scenario.h"

#define OLD 30001
#define NEW 30002
#define FLIP 10000 /* relative to SC_T0 */

static char k5[32], k200[32];

static void init(sc *s, int quick, const an_config *cfg)
{
    if (quick)
        sc_init_no_commands(s, cfg);
    else
        sc_init(s, cfg);
}

static int32_t node_of(sc *s, int port)
{
    char name[32];
    snprintf(name, sizeof name, "127.0.0.1:%d", port);
    return an_node_by_endpoint_text(s->an, name);
}

/* The capture holds a bus link OLD opened (to NEW's bus port): a PING of
 * OLD's claiming no slot, so that a write it acknowledges after a newer
 * claim can be judged (an_cluster_heard_out). */
static void old_heard_out(sc *s, int64_t at)
{
    cap_conn cc;
    memset(&cc, 0, sizeof cc);
    cc.id = 9000;
    cap_addr_parse("127.0.0.1", &cc.client.addr);
    cap_addr_parse("127.0.0.1", &cc.server.addr);
    cc.client.port = 45000;
    cc.server.port = NEW + 10000;
    bus_msg m;
    memset(&m, 0, sizeof m);
    m.type = BUS_PING;
    m.ver = 1;
    m.port = OLD;
    m.cport = OLD + 10000;
    m.flags = BUS_NODE_MASTER;
    m.config_epoch = 3;
    snprintf(m.sender, sizeof m.sender, "%s", "0000000000000000000000000000000000030001");
    snprintf(m.ip, sizeof m.ip, "127.0.0.1");
    an_cluster_on_bus(s->an, &cc, CAP_TO_SERVER, &m, SC_T0 + at, 1);
}

/* Slots 0..100 go from OLD to NEW at FLIP (config epoch 7, frame 77), for
 * cause; with heard, a bus change, the capture holds a link OLD opened. */
static void flip_heard(sc *s, an_own_source source, int64_t at, an_own_cause cause, int heard)
{
    if (source == AN_OWN_BUS && heard)
        old_heard_out(s, at - 1);
    an_slot_owner e;
    memset(&e, 0, sizeof e);
    e.ts_us = SC_T0 + at;
    e.frame = 77;
    e.slot_lo = 0;
    e.slot_hi = 100;
    e.node = node_of(s, NEW);
    e.old_node = node_of(s, OLD);
    e.config_epoch = 7;
    e.old_epoch = 3;
    e.source = source;
    e.cause = cause;
    e.via = BUS_PONG;
    assert_true(e.node != AN_NONE && e.old_node != AN_NONE);
    an_cv_slot_owner(s->an, NULL, &e);
}

static void flip_cause(sc *s, an_own_source source, int64_t at, an_own_cause cause)
{
    flip_heard(s, source, at, cause, 1);
}

/* The same by a failover. */
static void flip(sc *s, an_own_source source, int64_t at)
{
    flip_cause(s, source, at, AN_CAUSE_FAILOVER);
}

static const an_convergence *row_of(const sc *s, const char *client)
{
    for (size_t i = 0; i < s->out.nconvergence; i++)
        if (strcmp(s->out.convergence[i].client, client) == 0)
            return &s->out.convergence[i];
    return NULL;
}

static const an_finding *finding(const sc *s, an_finding_kind kind, const char *client)
{
    return sc_find(s, kind, client);
}

/* A client that keeps writing to the old owner, then moves; another that
 * moved at once. */
static void test_stale_writer(void **state)
{
    (void)state;
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, NULL);
        int a = sc_conn(&s, 21, 40000, OLD), b = sc_conn(&s, 21, 40001, NEW);
        int c = sc_conn(&s, 22, 40002, NEW), d = sc_conn(&s, 22, 40003, OLD);
        /* before the change: neither stale nor at risk */
        sc_do(&s, a, 5000, 100, "+OK", "SET", k5, "v", NULL);
        sc_do(&s, a, 5200, 100, "+OK", "SET", k5, "v", NULL); /* warms the quick path */
        flip(&s, AN_OWN_BUS, FLIP);
        sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v1", NULL);       /* at risk */
        sc_do(&s, a, 12000, 100, "$", "GET", k5, NULL);               /* stale read */
        sc_do(&s, a, 13000, 100, "-MOVED 5 127.0.0.1:30002", "SET", k5, "v2", NULL);
        sc_do(&s, b, 13200, 100, "+OK", "SET", k5, "v2", NULL);       /* followed */
        sc_do(&s, a, 2013000, 100, "-MOVED 5 127.0.0.1:30002", "SET", k5, "v3", NULL);
        sc_do(&s, b, 2013200, 100, "+OK", "SET", k5, "v3", NULL);
        /* the other client: new owner at once; a slot outside the change */
        sc_do(&s, c, 10500, 100, "+OK", "SET", k5, "w", NULL);
        sc_do(&s, d, 10600, 100, "+OK", "SET", k200, "w", NULL);
        sc_finish(&s, 3000000);

        assert_int_equal(s.out.nconvergence, 2);
        const an_convergence *r = row_of(&s, "127.0.0.21");
        assert_non_null(r);
        assert_int_equal(r->slot_lo, 0);
        assert_int_equal(r->slot_hi, 100);
        assert_string_equal(r->old_node, "127.0.0.1:30001");
        assert_string_equal(r->new_node, "127.0.0.1:30002");
        assert_string_equal(r->source, "bus");
        assert_int_equal(r->flip_us, SC_T0 + FLIP);
        assert_int_equal(r->flip_frame, 77);
        assert_int_equal(r->config_epoch, 7);
        assert_int_equal(r->first_us, SC_T0 + 11000);
        assert_int_equal(r->last_stale_us, SC_T0 + 2013000);
        assert_int_equal(r->converged_us, SC_T0 + 13200);
        assert_int_equal(r->stale_commands, 4);
        assert_int_equal(r->moved_replies, 2);
        assert_int_equal(r->at_risk_writes, 1);
        r = row_of(&s, "127.0.0.22");
        assert_non_null(r);
        assert_int_equal(r->stale_commands, 0);
        assert_int_equal(r->last_stale_us, 0);
        assert_int_equal(r->converged_us, SC_T0 + 10500);

        /* told at 13000 (MOVED): what it did then is moved_ignored's */
        assert_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.21"));
        assert_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.22"));

        /* writes_at_risk: the one SET acknowledged by the old owner */
        const an_finding *f = finding(&s, AN_WRITES_AT_RISK, "127.0.0.21");
        assert_non_null(f);
        assert_int_equal(f->severity, AN_ERROR);
        assert_int_equal(f->count, 1);
        assert_int_equal(f->first_us, SC_T0 + 11100);
        assert_non_null(strstr(sc_evidence(&s, f), "\"config_epoch\":7"));
        assert_non_null(strstr(sc_evidence(&s, f), "\"via\":\"pong\""));
        assert_non_null(strstr(sc_evidence(&s, f), k5));
        assert_int_equal(s.out.nat_risk, 1);
        const an_risky_write *w = &s.out.at_risk[0];
        assert_string_equal(w->key, k5);
        assert_string_equal(w->node, "127.0.0.1:30001");
        assert_string_equal(w->new_node, "127.0.0.1:30002");
        assert_string_equal(w->command, "SET");
        assert_int_equal(w->ts_us, SC_T0 + 11100);
        assert_int_equal(w->proof_frame, 77);
        assert_int_equal(w->finding_id, f->id);
        assert_null(finding(&s, AN_WRITES_AT_RISK, "127.0.0.22"));
        sc_free(&s);
    }
}

/* The same write, in a capture that holds none of the bus links the old
 * owner opened (only those others opened to it: tcpdump on its host with
 * a filter on its own bus port): its own new claim of the slots, which
 * would make the write no risk, could reach the capture only at its next
 * PONG. Not judged: counted in at_risk_unseen. */
static void test_at_risk_old_owner_unheard(void **state)
{
    (void)state;
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, NULL);
        int a = sc_conn(&s, 21, 40000, OLD);
        sc_do(&s, a, 5000, 100, "+OK", "SET", k5, "v", NULL);
        sc_do(&s, a, 5200, 100, "+OK", "SET", k5, "v", NULL);
        flip_heard(&s, AN_OWN_BUS, FLIP, AN_CAUSE_FAILOVER, 0);
        sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v1", NULL);
        sc_finish(&s, 3000000);
        assert_null(finding(&s, AN_WRITES_AT_RISK, "127.0.0.21"));
        assert_int_equal(s.out.nat_risk, 0);
        assert_int_equal(an_get_stats(s.an)->at_risk_unseen, 1);
        sc_free(&s);
    }
}

/* The old owner keeps serving a client for 1.5 s after the change (it has
 * not learnt it): slow_convergence, and its writes at risk; a READONLY read
 * there is no stale command. */
static void test_untold(void **state)
{
    (void)state;
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, NULL);
        int a = sc_conn(&s, 32, 40000, OLD), b = sc_conn(&s, 32, 40001, NEW);
        int r = sc_conn(&s, 33, 40002, OLD);
        sc_do(&s, r, 5000, 100, "+OK", "READONLY", NULL);
        flip(&s, AN_OWN_BUS, FLIP);
        sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v1", NULL);
        sc_do(&s, r, 12000, 100, "$", "GET", k5, NULL);
        sc_do(&s, a, 900000, 100, "+OK", "SET", k5, "v2", NULL);
        sc_do(&s, a, 1511000, 100, "+OK", "SET", k5, "v3", NULL);
        sc_do(&s, a, 1600000, 100, "-MOVED 5 127.0.0.1:30002", "SET", k5, "v4", NULL);
        sc_do(&s, b, 1600200, 100, "+OK", "SET", k5, "v4", NULL);
        sc_finish(&s, 3000000);
        const an_finding *f = finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.32");
        assert_non_null(f);
        assert_int_equal(f->count, 1);
        assert_int_equal(f->first_us, SC_T0 + 1511000);
        assert_non_null(strstr(sc_evidence(&s, f), "\"stale_ms\":1500.000"));
        assert_non_null(strstr(f->summary, "which still served them, for 1500.0 ms"));
        f = finding(&s, AN_WRITES_AT_RISK, "127.0.0.32");
        assert_non_null(f);
        assert_int_equal(f->count, 3);
        assert_null(row_of(&s, "127.0.0.33")); /* its read was no stale command */
        const an_convergence *c = row_of(&s, "127.0.0.32");
        assert_non_null(c);
        assert_int_equal(c->stale_commands, 4);
        assert_int_equal(c->moved_replies, 1);
        assert_int_equal(c->last_stale_us, SC_T0 + 1600000);
        sc_free(&s);
    }
}

/* Connections picked up mid-stream after a failover: one may have sent
 * READONLY before the capture, so the old master (now a replica) serving its
 * reads is no stale command (seen with valkey-glide and redis-py reading
 * from replicas, bench/results/2026-12-02-libs-midstream.txt), but a read it
 * bounced is; once it sends READWRITE its state is known and its reads there
 * are stale; its writes always are. */
static void test_untold_midstream(void **state)
{
    (void)state;
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, NULL);
        sc_conn(&s, 40, 40000, NEW); /* the capture holds the new owner's traffic */
        int r = sc_conn_mid(&s, 33, 40002, OLD), w = sc_conn_mid(&s, 34, 40003, OLD);
        int rw = sc_conn_mid(&s, 35, 40004, OLD), m = sc_conn_mid(&s, 36, 40005, OLD);
        sc_do(&s, rw, 5000, 100, "+OK", "READWRITE", NULL);
        flip(&s, AN_OWN_BUS, FLIP);
        sc_do(&s, r, 12000, 100, "$", "GET", k5, NULL);
        sc_do(&s, r, 1512000, 100, "$", "GET", k5, NULL);
        sc_do(&s, m, 12000, 100, "-MOVED 5 127.0.0.1:30002", "GET", k5, NULL);
        sc_do(&s, w, 12000, 100, "+OK", "SET", k5, "v1", NULL);
        sc_do(&s, w, 1512000, 100, "+OK", "SET", k5, "v2", NULL);
        sc_do(&s, rw, 12000, 100, "$", "GET", k5, NULL);
        sc_do(&s, rw, 1512000, 100, "$", "GET", k5, NULL);
        sc_finish(&s, 3000000);
        assert_null(row_of(&s, "127.0.0.33")); /* its reads were no stale commands */
        assert_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.33"));
        const an_convergence *c = row_of(&s, "127.0.0.34");
        assert_non_null(c);
        assert_int_equal(c->stale_commands, 2);
        assert_non_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.34"));
        c = row_of(&s, "127.0.0.35");
        assert_non_null(c);
        assert_int_equal(c->stale_commands, 2);
        assert_non_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.35"));
        c = row_of(&s, "127.0.0.36");
        assert_non_null(c);
        assert_int_equal(c->stale_commands, 1);
        assert_int_equal(c->moved_replies, 1);
        sc_free(&s);
    }
}

/* After a migration the old owner is still a master: READONLY explains
 * nothing it serves, mid-stream or not. */
static void test_untold_midstream_migration(void **state)
{
    (void)state;
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, NULL);
        sc_conn(&s, 40, 40000, NEW); /* the capture holds the new owner's traffic */
        int r = sc_conn_mid(&s, 33, 40002, OLD);
        flip_cause(&s, AN_OWN_BUS, FLIP, AN_CAUSE_MIGRATION);
        sc_do(&s, r, 12000, 100, "$", "GET", k5, NULL);
        sc_do(&s, r, 1512000, 100, "$", "GET", k5, NULL);
        sc_finish(&s, 3000000);
        const an_convergence *c = row_of(&s, "127.0.0.33");
        assert_non_null(c);
        assert_int_equal(c->stale_commands, 2);
        assert_non_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.33"));
        sc_free(&s);
    }
}

/* ASKING: the importing side serves it on purpose; a write the old owner
 * refused (an error) was not acknowledged; a threshold raised hides the
 * slow client. */
static void test_asking_and_errors(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "slow_convergence_ms=5000"), 0);
    assert_int_equal(cfg.slow_convergence_us, 5000000);
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, &cfg);
        int a = sc_conn(&s, 23, 40000, OLD);
        flip(&s, AN_OWN_BUS, FLIP);
        sc_do(&s, a, 11000, 100, "+OK", "ASKING", NULL);
        sc_do(&s, a, 11200, 100, "+OK", "SET", k5, "v", NULL);
        sc_do(&s, a, 12000, 100, "-ERR no", "SET", k5, "v", NULL);
        sc_do(&s, a, 2012000, 100, "-MOVED 5 127.0.0.1:30002", "GET", k5, NULL);
        sc_finish(&s, 3000000);
        assert_int_equal(s.out.nconvergence, 1);
        assert_int_equal(s.out.convergence[0].stale_commands, 2);
        assert_int_equal(s.out.convergence[0].at_risk_writes, 0);
        assert_int_equal(s.out.nat_risk, 0);
        assert_null(finding(&s, AN_WRITES_AT_RISK, "127.0.0.23"));
        assert_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.23"));
        sc_free(&s);
    }
}

/* A change learnt from clients proves no epoch: stale clients are counted,
 * writes are not at risk. */
static void test_clients_source(void **state)
{
    (void)state;
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, NULL);
        sc_conn(&s, 40, 40000, NEW); /* the capture holds the new owner's traffic */
        int a = sc_conn(&s, 24, 40000, OLD);
        flip(&s, AN_OWN_CLIENTS, FLIP);
        sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v", NULL);
        sc_do(&s, a, 1500000, 100, "+OK", "SET", k5, "v", NULL);
        sc_finish(&s, 3000000);
        assert_int_equal(s.out.nconvergence, 1);
        assert_string_equal(s.out.convergence[0].source, "clients");
        assert_int_equal(s.out.convergence[0].stale_commands, 2);
        assert_int_equal(s.out.nat_risk, 0);
        assert_null(finding(&s, AN_WRITES_AT_RISK, "127.0.0.24"));
        assert_non_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.24"));
        sc_free(&s);
    }
}

/* Partial views of a change learnt from clients. 127.0.0.25 used the new
 * owner, then went back to the old one, which served it: the slots moved
 * back (what the capture learns late when the news went to nodes it does
 * not hold), no client nobody told. 127.0.0.26 kept sending to the old
 * owner in a capture that holds no connection to the new owner: its move
 * there could not be seen. Neither is slow_convergence; the first still
 * counts its stale commands. */
static void test_convergence_partial_view(void **state)
{
    (void)state;
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, NULL);
        int a = sc_conn(&s, 25, 40000, OLD), b = sc_conn(&s, 25, 40001, NEW);
        flip(&s, AN_OWN_CLIENTS, FLIP);
        sc_do(&s, b, 11000, 100, "+OK", "SET", k5, "v", NULL);
        sc_do(&s, a, 12000, 100, "+OK", "SET", k5, "v", NULL);
        sc_do(&s, a, 1512000, 100, "+OK", "SET", k5, "v", NULL);
        sc_finish(&s, 3000000);
        const an_convergence *r = row_of(&s, "127.0.0.25");
        assert_non_null(r);
        assert_int_equal(r->stale_commands, 2);
        assert_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.25"));
        sc_free(&s);

        init(&s, quick, NULL);
        a = sc_conn(&s, 26, 40000, OLD);
        flip(&s, AN_OWN_CLIENTS, FLIP);
        sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v", NULL);
        sc_do(&s, a, 1500000, 100, "+OK", "SET", k5, "v", NULL);
        sc_finish(&s, 3000000);
        assert_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.26"));
        sc_free(&s);
    }
}

/* A client quiet since the flip: its one stale command, 2 s later, is how
 * it learns (MOVED); it moves at once: not slow. */
static void test_quiet_client(void **state)
{
    (void)state;
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, NULL);
        int a = sc_conn(&s, 31, 40000, OLD), b = sc_conn(&s, 31, 40001, NEW);
        flip(&s, AN_OWN_BUS, FLIP);
        sc_do(&s, a, 2010000, 100, "-MOVED 5 127.0.0.1:30002", "SET", k5, "v", NULL);
        sc_do(&s, b, 2010200, 100, "+OK", "SET", k5, "v", NULL);
        sc_finish(&s, 3000000);
        assert_int_equal(s.out.nconvergence, 1);
        assert_int_equal(s.out.convergence[0].last_stale_us, SC_T0 + 2010000);
        assert_int_equal(s.out.convergence[0].stale_commands, 1);
        assert_null(finding(&s, AN_SLOW_CONVERGENCE, "127.0.0.31"));
        sc_free(&s);
    }
}

/* Once the bus spoke, a change learnt from clients is an echo: not watched. */
static void test_bus_then_clients(void **state)
{
    (void)state;
    sc s;
    init(&s, 0, NULL);
    int a = sc_conn(&s, 30, 40000, OLD);
    flip(&s, AN_OWN_BUS, FLIP);
    flip(&s, AN_OWN_CLIENTS, FLIP + 500);
    sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v", NULL);
    sc_finish(&s, 3000000);
    assert_int_equal(s.out.nconvergence, 1);
    assert_string_equal(s.out.convergence[0].source, "bus");
    assert_int_equal(s.out.convergence[0].flip_us, SC_T0 + FLIP);
    assert_int_equal(s.out.nat_risk, 1);
    sc_free(&s);
}

/* The watch ends after convergence_window_ms: later commands are not
 * counted, and the row is emitted when the window closes. */
static void test_window(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "convergence_window_ms=1000"), 0);
    for (int quick = 0; quick <= 1; quick++) {
        sc s;
        init(&s, quick, &cfg);
        int a = sc_conn(&s, 25, 40000, OLD);
        flip(&s, AN_OWN_BUS, FLIP);
        sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v", NULL);
        sc_do(&s, a, 900000, 100, "+OK", "SET", k5, "v", NULL);
        sc_do(&s, a, 1200000, 100, "+OK", "SET", k5, "v", NULL); /* past the window */
        assert_int_equal(s.out.nconvergence, 1);                  /* closed by it */
        sc_do(&s, a, 1300000, 100, "+OK", "SET", k5, "v", NULL);
        sc_finish(&s, 3000000);
        assert_int_equal(s.out.nconvergence, 1);
        assert_int_equal(s.out.convergence[0].stale_commands, 2);
        assert_int_equal(s.out.nat_risk, 2);
        const an_finding *f = finding(&s, AN_WRITES_AT_RISK, "127.0.0.25");
        assert_non_null(f);
        assert_int_equal(f->count, 2);
        sc_free(&s);
    }
}

/* Caps: one (client, change) row; the second client is counted dropped. A
 * change replaced on its slots by a later one is closed at the end. */
static void test_caps(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "max_convergence=1"), 0);
    sc s;
    init(&s, 0, &cfg);
    int a = sc_conn(&s, 26, 40000, OLD), b = sc_conn(&s, 27, 40001, OLD);
    flip(&s, AN_OWN_BUS, FLIP);
    sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v", NULL);
    sc_do(&s, b, 11500, 100, "+OK", "SET", k5, "v", NULL);
    sc_finish(&s, 3000000);
    assert_int_equal(s.out.nconvergence, 1);
    assert_string_equal(s.out.convergence[0].client, "127.0.0.26");
    assert_int_equal(an_get_stats(s.an)->convergence_dropped, 1);
    assert_null(finding(&s, AN_WRITES_AT_RISK, "127.0.0.27"));
    sc_free(&s);

    /* AN_CV_CHANGES + 1 changes: the first is closed early, and counted */
    init(&s, 0, NULL);
    a = sc_conn(&s, 28, 40000, OLD);
    sc_conn(&s, 28, 40001, NEW);
    for (int i = 0; i <= AN_CV_CHANGES; i++)
        flip(&s, AN_OWN_BUS, FLIP + i);
    assert_int_equal(an_get_stats(s.an)->convergence_evicted, 1);
    sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v", NULL);
    sc_finish(&s, 3000000);
    assert_int_equal(s.out.nconvergence, 1);
    assert_int_equal(s.out.convergence[0].flip_us, SC_T0 + FLIP + AN_CV_CHANGES);
    sc_free(&s);
}

/* --redact-keys: the at-risk write's key is the hash, never the key. */
static void test_redacted(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    cfg.redact_keys = 1;
    assert_int_equal(an_redact_key_random(&cfg), 0);
    sc s;
    init(&s, 0, &cfg);
    int a = sc_conn(&s, 29, 40000, OLD);
    flip(&s, AN_OWN_BUS, FLIP);
    sc_do(&s, a, 11000, 100, "+OK", "SET", k5, "v", NULL);
    sc_finish(&s, 3000000);
    assert_int_equal(s.out.nat_risk, 1);
    assert_memory_equal(s.out.at_risk[0].key, "h:", 2);
    const an_finding *f = finding(&s, AN_WRITES_AT_RISK, "127.0.0.29");
    assert_non_null(f);
    assert_null(strstr(sc_evidence(&s, f), k5));
    sc_free(&s);
}

int main(void)
{
    sc_key_for_slot(5, k5, sizeof k5);
    sc_key_for_slot(200, k200, sizeof k200);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_writer),
        cmocka_unit_test(test_at_risk_old_owner_unheard),
        cmocka_unit_test(test_convergence_partial_view),
        cmocka_unit_test(test_asking_and_errors),
        cmocka_unit_test(test_clients_source),
        cmocka_unit_test(test_quiet_client),
        cmocka_unit_test(test_untold),
        cmocka_unit_test(test_untold_midstream),
        cmocka_unit_test(test_untold_midstream_migration),
        cmocka_unit_test(test_bus_then_clients),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_redacted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
