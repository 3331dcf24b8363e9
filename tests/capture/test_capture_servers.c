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
 */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stamps),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_tracker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
