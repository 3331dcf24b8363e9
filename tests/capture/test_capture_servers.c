/*
 * test_capture_servers.c - the table of known servers (capture/servers.c)
 * and how the tracker orients a mid-stream connection by it.
 *
 *   stamps     an endpoint is known only to lookups for records after the
 *              one that showed it; a SYN shows its receiver, a SYN-ACK its
 *              sender, a RST-flagged SYN nothing; the first record stays
 *   cap        past 6144 endpoints the rest are counted, not kept (the
 *              tracker's known_servers_dropped)
 *   tracker    a mid-stream connection between a known server and another
 *              endpoint is oriented by it ("known"), ahead of its shape and
 *              the port order, but after a configured port; before the
 *              handshake that shows the server, the same bytes go by shape
 *   proofs     downstream's proofs (cluster, redirect, replication) are
 *              stamped per proof, a lower stamp of the same proof replaces
 *              a higher one whatever the order of noting (also from four
 *              threads at once), and cap_servers_known sees handshakes only
 *   await      the tracker calls await_proofs with the record it orients at,
 *              only for a mid-stream connection neither a port nor a
 *              handshake orients, and then trusts a proof below that record:
 *              cluster, then replication, then redirect when a side has
 *              several; both sides proved: the shape decides
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "tests/helpers/pktgen.h"

/* A record of one segment src:sport -> dst:dport with flags. */
typedef struct seg {
    uint8_t frame[512];
    cap_record rec;
} seg;

static void make(seg *s, const char *src, uint16_t sport, const char *dst, uint16_t dport,
                 uint8_t flags, const char *payload)
{
    pg_packet p;
    pg_packet_init(&p);
    p.src = src;
    p.dst = dst;
    p.sport = sport;
    p.dport = dport;
    p.flags = flags;
    p.payload = payload;
    p.len = payload ? strlen(payload) : 0;
    size_t n = pg_build(&p, s->frame, sizeof s->frame);
    assert_true(n > 0);
    s->rec = (cap_record){.linktype = DLT_EN10MB, .data = s->frame, .caplen = (uint32_t)n,
                          .wirelen = (uint32_t)n};
}

static cap_endpoint ep(const char *text)
{
    cap_endpoint e;
    memset(&e, 0, sizeof e);
    assert_int_equal(cap_endpoint_parse(text, &e), 0);
    return e;
}

static void test_stamps(void **state)
{
    cap_servers *s = cap_servers_new();
    seg syn, synack, rst, data;
    uint32_t hash;
    cap_endpoint a = ep("10.0.1.1:50001"), b = ep("10.0.1.2:50002"), c = ep("10.0.1.3:50003"),
                 cli = ep("10.0.0.1:40001");
    (void)state;
    assert_non_null(s);
    make(&syn, "10.0.0.1", 40001, "10.0.1.1", 50001, PG_SYN, NULL);
    make(&synack, "10.0.1.2", 50002, "10.0.0.2", 40002, PG_SYN | PG_ACK, NULL);
    make(&rst, "10.0.0.3", 40003, "10.0.1.3", 50003, PG_SYN | PG_RST, NULL);
    make(&data, "10.0.0.4", 40004, "10.0.1.4", 50004, PG_ACK, "PING\r\n");
    assert_int_equal(cap_record_route(&syn.rec, 5, s, &hash), 1);
    assert_int_equal(cap_record_route(&synack.rec, 7, s, &hash), 1);
    assert_int_equal(cap_record_route(&rst.rec, 8, s, &hash), 1);
    assert_int_equal(cap_record_route(&data.rec, 9, s, &hash), 1);
    /* the SYN's receiver from record 6 on, not at 5 nor before */
    assert_int_equal(cap_servers_known(s, &a, 5), 0);
    assert_int_equal(cap_servers_known(s, &a, 6), 1);
    assert_int_equal(cap_servers_known(s, &cli, 100), 0);
    /* the SYN-ACK's sender */
    assert_int_equal(cap_servers_known(s, &b, 7), 0);
    assert_int_equal(cap_servers_known(s, &b, 8), 1);
    /* neither a RST-flagged SYN's receiver nor a data segment's */
    assert_int_equal(cap_servers_known(s, &c, 100), 0);
    cap_endpoint d = ep("10.0.1.4:50004");
    assert_int_equal(cap_servers_known(s, &d, 100), 0);
    /* a later SYN to a does not move its stamp */
    assert_int_equal(cap_record_route(&syn.rec, 50, s, &hash), 1);
    assert_int_equal(cap_servers_known(s, &a, 6), 1);
    assert_int_equal(cap_servers_dropped(s), 0);
    /* the flow hash is cap_record_flow_hash's */
    uint32_t h2;
    assert_int_equal(cap_record_flow_hash(&data.rec, &h2), 1);
    assert_int_equal(cap_record_route(&data.rec, 60, NULL, &hash), 1);
    assert_int_equal(hash, h2);
    cap_servers_free(s);
}

static void test_cap(void **state)
{
    cap_servers *s = cap_servers_new();
    seg syn;
    uint32_t hash;
    char dst[32];
    (void)state;
    assert_non_null(s);
    for (int i = 0; i < 7000; i++) {
        snprintf(dst, sizeof dst, "10.%d.%d.1", 1 + i / 250, i % 250);
        make(&syn, "10.0.0.1", 40001, dst, 50001, PG_SYN, NULL);
        assert_int_equal(cap_record_route(&syn.rec, (uint64_t)i + 1, s, &hash), 1);
    }
    assert_int_equal(cap_servers_dropped(s), 7000 - 6144);
    cap_endpoint first = ep("10.1.0.1:50001"), last = ep("10.28.249.1:50001");
    assert_int_equal(cap_servers_known(s, &first, 8000), 1);
    assert_int_equal(cap_servers_known(s, &last, 8000), 0); /* the 7000th: not kept */
    cap_servers_free(s);
}

/* The OPEN events: client, server, how. */
typedef struct opens {
    char text[8][128];
    int n;
} opens;

static void on_event(void *ctx, const cap_event *ev)
{
    opens *o = ctx;
    char c[CAP_ENDPOINT_STRLEN], s[CAP_ENDPOINT_STRLEN];
    if (ev->kind != CAP_EV_OPEN || o->n >= 8)
        return;
    cap_endpoint_format(&ev->conn->client, c, sizeof c);
    cap_endpoint_format(&ev->conn->server, s, sizeof s);
    snprintf(o->text[o->n++], sizeof o->text[0], "%s>%s %s", c, s,
             cap_side_source_name(ev->conn->side_source));
}

/* +1 for a payload starting with "get" (it looks like a request), else 0. */
static int shape(const uint8_t *d, size_t n)
{
    return n >= 3 && memcmp(d, "get", 3) == 0 ? 1 : 0;
}

/* Mid-stream "get\r\n" from the server 10.0.1.1:50001 to 10.0.0.9:4000+k,
 * before and after a handshake to that server. */
static void feed(cap_tracker *t)
{
    seg s;
    make(&s, "10.0.1.1", 50001, "10.0.0.9", 4001, PG_ACK, "get\r\n");
    cap_tracker_packet(t, s.rec.linktype, 1, s.rec.data, s.rec.caplen, s.rec.wirelen);
    make(&s, "10.0.0.1", 40001, "10.0.1.1", 50001, PG_SYN, NULL);
    cap_tracker_packet(t, s.rec.linktype, 2, s.rec.data, s.rec.caplen, s.rec.wirelen);
    make(&s, "10.0.1.1", 50001, "10.0.0.9", 4002, PG_ACK, "get\r\n");
    cap_tracker_packet(t, s.rec.linktype, 3, s.rec.data, s.rec.caplen, s.rec.wirelen);
    cap_tracker_finish(t, 4);
}

static void test_tracker(void **state)
{
    cap_config cfg;
    opens o = {0};
    (void)state;
    cap_config_defaults(&cfg);
    cfg.shape = shape;
    cap_tracker *t = cap_tracker_new(&cfg, on_event, &o);
    assert_non_null(t);
    feed(t);
    assert_int_equal(o.n, 3);
    assert_string_equal(o.text[0], "10.0.1.1:50001>10.0.0.9:4001 shape"); /* not known yet */
    assert_string_equal(o.text[1], "10.0.0.1:40001>10.0.1.1:50001 syn");
    assert_string_equal(o.text[2], "10.0.0.9:4002>10.0.1.1:50001 known");
    assert_int_equal(cap_tracker_stats(t)->known_servers_dropped, 0);
    cap_tracker_free(t);

    /* a configured port goes first: 4002 named a server port */
    memset(&o, 0, sizeof o);
    cfg.server_ports[0] = 4002;
    cfg.n_server_ports = 1;
    t = cap_tracker_new(&cfg, on_event, &o);
    assert_non_null(t);
    feed(t);
    assert_int_equal(o.n, 3);
    assert_string_equal(o.text[2], "10.0.1.1:50001>10.0.0.9:4002 port");
    cap_tracker_free(t);

    /* a shared table the caller fills: the tracker only reads it */
    memset(&o, 0, sizeof o);
    cap_config_defaults(&cfg);
    cfg.shape = shape;
    cfg.servers = cap_servers_new();
    assert_non_null(cfg.servers);
    t = cap_tracker_new(&cfg, on_event, &o);
    assert_non_null(t);
    feed(t); /* nobody noted the SYN: both go by shape */
    assert_int_equal(o.n, 3);
    assert_string_equal(o.text[2], "10.0.1.1:50001>10.0.0.9:4002 shape");
    cap_tracker_free(t);
    cap_servers_free(cfg.servers);
}

static void test_proofs(void **state)
{
    cap_servers *s = cap_servers_new();
    cap_endpoint a = ep("10.0.1.1:50001"), b = ep("[fd00::1]:50002");
    (void)state;
    assert_non_null(s);
    assert_int_equal(cap_servers_note(s, CAP_PROOF_CLUSTER, 40, &a), 0);
    assert_int_equal(cap_servers_note(s, CAP_PROOF_REDIRECT, 20, &a), 0);
    assert_int_equal(cap_servers_note(s, CAP_PROOF_CLUSTER, 30, &a), 0); /* lowers 40 */
    assert_int_equal(cap_servers_note(s, CAP_PROOF_CLUSTER, 35, &a), 0); /* stays 30 */
    assert_int_equal(cap_servers_proofs(s, &a, 20), 0);
    assert_int_equal(cap_servers_proofs(s, &a, 21), 1u << CAP_PROOF_REDIRECT);
    assert_int_equal(cap_servers_proofs(s, &a, 31),
                     (1u << CAP_PROOF_REDIRECT) | (1u << CAP_PROOF_CLUSTER));
    assert_int_equal(cap_servers_known(s, &a, 1000), 0); /* no handshake */
    assert_int_equal(cap_servers_note(s, CAP_PROOF_HANDSHAKE, 50, &a), 0);
    assert_int_equal(cap_servers_known(s, &a, 51), 1);
    assert_int_equal(cap_servers_note(s, CAP_PROOF_REPLICATION, 7, &b), 0);
    assert_int_equal(cap_servers_proofs(s, &b, 8), 1u << CAP_PROOF_REPLICATION);
    assert_int_equal(cap_servers_proofs(s, &b, 7), 0);
    /* not an endpoint, not a proof: nothing */
    cap_endpoint none;
    memset(&none, 0, sizeof none);
    assert_int_equal(cap_servers_note(s, CAP_PROOF_CLUSTER, 3, &none), 0);
    assert_int_equal(cap_servers_note(s, CAP_PROOFS, 3, &a), 0);
    assert_int_equal(cap_servers_proofs(s, &a, 21), 1u << CAP_PROOF_REDIRECT);
    assert_int_equal(cap_servers_dropped(s), 0);
    cap_servers_free(s);
}

/* Four threads note the same 2000 endpoints, each with its own stamps. */
typedef struct noter {
    cap_servers *s;
    unsigned k;
} noter;

static void *note_many(void *arg)
{
    noter *n = arg;
    char text[32];
    for (unsigned i = 0; i < 2000; i++) {
        cap_endpoint e;
        snprintf(text, sizeof text, "10.9.%u.%u:%u", i / 200, i % 200, 50000 + (i % 7));
        memset(&e, 0, sizeof e);
        assert_int_equal(cap_endpoint_parse(text, &e), 0);
        /* thread k stamps endpoint i with 100 + (i + k) % 4: the lowest, 100,
         * comes from a different thread for each i */
        cap_servers_note(n->s, CAP_PROOF_CLUSTER, 100 + (i + n->k) % 4, &e);
    }
    return NULL;
}

static void test_proofs_threads(void **state)
{
    cap_servers *s = cap_servers_new();
    pthread_t th[4];
    noter n[4];
    char text[32];
    (void)state;
    assert_non_null(s);
    for (unsigned k = 0; k < 4; k++) {
        n[k] = (noter){s, k};
        assert_int_equal(pthread_create(&th[k], NULL, note_many, &n[k]), 0);
    }
    for (unsigned k = 0; k < 4; k++)
        assert_int_equal(pthread_join(th[k], NULL), 0);
    for (unsigned i = 0; i < 2000; i++) {
        snprintf(text, sizeof text, "10.9.%u.%u:%u", i / 200, i % 200, 50000 + (i % 7));
        cap_endpoint e = ep(text);
        assert_int_equal(cap_servers_proofs(s, &e, 100), 0);
        assert_int_equal(cap_servers_proofs(s, &e, 101), 1u << CAP_PROOF_CLUSTER);
    }
    assert_int_equal(cap_servers_dropped(s), 0);
    cap_servers_free(s);
}

/* await_proofs: the records it was called at, and proofs to note at the
 * first call (as resp, on another thread, would have by then). */
typedef struct awaiter {
    uint64_t at[8];
    int n;
    cap_servers *s;
} awaiter;

static void await_hook(void *ctx, uint64_t before)
{
    awaiter *a = ctx;
    if (a->n < 8)
        a->at[a->n] = before;
    if (a->n++ == 0) {
        /* proved at record 2: 10.0.1.2:50002 by a MOVED, 10.0.1.3:50003 by
         * CLUSTER NODES and a MOVED, both 10.0.1.4:50004 and its peer */
        cap_endpoint r = ep("10.0.1.2:50002"), c = ep("10.0.1.3:50003");
        cap_endpoint p1 = ep("10.0.1.4:50004"), p2 = ep("10.0.0.9:4005");
        cap_servers_note(a->s, CAP_PROOF_REDIRECT, 2, &r);
        cap_servers_note(a->s, CAP_PROOF_REDIRECT, 2, &c);
        cap_servers_note(a->s, CAP_PROOF_CLUSTER, 2, &c);
        cap_servers_note(a->s, CAP_PROOF_CLUSTER, 2, &p1);
        cap_servers_note(a->s, CAP_PROOF_REPLICATION, 2, &p2);
        /* proved by record 9: not before record 5 */
        cap_endpoint late = ep("10.0.1.5:50005");
        cap_servers_note(a->s, CAP_PROOF_CLUSTER, 9, &late);
    }
}

static void test_await(void **state)
{
    cap_config cfg;
    opens o = {0};
    awaiter a = {0};
    seg s;
    (void)state;
    cap_config_defaults(&cfg);
    cfg.shape = shape;
    cfg.await_proofs = await_hook;
    cfg.await_ctx = &a;
    cap_tracker *t = cap_tracker_new(&cfg, on_event, &o);
    assert_non_null(t);
    a.s = cap_tracker_servers(t);
    /* 1: a handshake (no await); 2: known by it (no await) */
    make(&s, "10.0.0.1", 40001, "10.0.1.1", 50001, PG_SYN, NULL);
    cap_tracker_packet(t, s.rec.linktype, 1, s.rec.data, s.rec.caplen, s.rec.wirelen);
    make(&s, "10.0.1.1", 50001, "10.0.0.9", 4001, PG_ACK, "get\r\n");
    cap_tracker_packet(t, s.rec.linktype, 2, s.rec.data, s.rec.caplen, s.rec.wirelen);
    assert_int_equal(a.n, 0);
    /* 3: the server talks first, request-like; proved by a MOVED */
    make(&s, "10.0.1.2", 50002, "10.0.0.9", 4002, PG_ACK, "get\r\n");
    cap_tracker_packet(t, s.rec.linktype, 3, s.rec.data, s.rec.caplen, s.rec.wirelen);
    /* 4: the client first; cluster ahead of redirect */
    make(&s, "10.0.0.9", 4003, "10.0.1.3", 50003, PG_ACK, "PING\r\n");
    cap_tracker_packet(t, s.rec.linktype, 4, s.rec.data, s.rec.caplen, s.rec.wirelen);
    /* 5: both sides proved: the shape decides */
    make(&s, "10.0.1.4", 50004, "10.0.0.9", 4005, PG_ACK, "get\r\n");
    cap_tracker_packet(t, s.rec.linktype, 5, s.rec.data, s.rec.caplen, s.rec.wirelen);
    /* 6: proved at record 9 only: the shape */
    make(&s, "10.0.1.5", 50005, "10.0.0.9", 4006, PG_ACK, "get\r\n");
    cap_tracker_packet(t, s.rec.linktype, 6, s.rec.data, s.rec.caplen, s.rec.wirelen);
    /* 7: a port the built-in list names (no await) */
    make(&s, "10.0.0.9", 4007, "10.0.1.7", 6379, PG_ACK, "PING\r\n");
    cap_tracker_packet(t, s.rec.linktype, 7, s.rec.data, s.rec.caplen, s.rec.wirelen);
    cap_tracker_finish(t, 8);
    assert_int_equal(a.n, 4);
    assert_int_equal(a.at[0], 3);
    assert_int_equal(a.at[1], 4);
    assert_int_equal(a.at[2], 5);
    assert_int_equal(a.at[3], 6);
    assert_int_equal(o.n, 7);
    assert_string_equal(o.text[1], "10.0.0.9:4001>10.0.1.1:50001 known");
    assert_string_equal(o.text[2], "10.0.0.9:4002>10.0.1.2:50002 redirect");
    assert_string_equal(o.text[3], "10.0.0.9:4003>10.0.1.3:50003 cluster");
    assert_string_equal(o.text[4], "10.0.1.4:50004>10.0.0.9:4005 shape");
    assert_string_equal(o.text[5], "10.0.1.5:50005>10.0.0.9:4006 shape");
    assert_string_equal(o.text[6], "10.0.0.9:4007>10.0.1.7:6379 port");
    const cap_stats *st = cap_tracker_stats(t);
    assert_int_equal(st->mid_stream, 6);
    assert_int_equal(st->mid_oriented[CAP_SIDE_KNOWN], 1);
    assert_int_equal(st->mid_oriented[CAP_SIDE_REDIRECT], 1);
    assert_int_equal(st->mid_oriented[CAP_SIDE_CLUSTER], 1);
    assert_int_equal(st->mid_oriented[CAP_SIDE_SHAPE], 2);
    assert_int_equal(st->mid_oriented[CAP_SIDE_PORT], 1);
    assert_int_equal(st->mid_oriented[CAP_SIDE_SYN], 0);
    cap_tracker_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stamps),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_tracker),
        cmocka_unit_test(test_proofs),
        cmocka_unit_test(test_proofs_threads),
        cmocka_unit_test(test_await),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
