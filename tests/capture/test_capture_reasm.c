/*
 * test_capture_reasm.c - the tracker on crafted packets: streams, gaps,
 * lifecycle and counters, checked exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "capture/internal.h" /* the flow hash, for test_flow_hash_spread */
#include "evlog.h"
#include "tests/helpers/pktgen.h"

/* A tracker wired to an event log. */
typedef struct fx {
    cap_config cfg;
    cap_tracker *t;
    evlog log;
} fx;

/* pg_conv callback: every crafted frame goes into the tracker whole. */
static void feed(void *ctx, int dlt, int64_t ts_us, const uint8_t *frame, size_t len)
{
    cap_tracker_packet(ctx, dlt, ts_us, frame, (uint32_t)len, (uint32_t)len);
}

/* Create the tracker from fx->cfg. */
static void fx_start(fx *f)
{
    evlog_init(&f->log);
    f->t = cap_tracker_new(&f->cfg, evlog_fn, &f->log);
    assert_non_null(f->t);
}

/* cmocka setup: defaults, tracker started. */
static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    cap_config_defaults(&f->cfg);
    fx_start(f);
    *state = f;
    return 0;
}

/* cmocka teardown. */
static int teardown(void **state)
{
    fx *f = *state;
    cap_tracker_free(f->t);
    evlog_free(&f->log);
    free(f);
    return 0;
}

/* Restart the fixture's tracker with a changed config. */
static void fx_restart(fx *f)
{
    cap_tracker_free(f->t);
    evlog_free(&f->log);
    fx_start(f);
}

/* A conversation 10.0.0.1:40000 -> 10.0.0.2:6379 (Ethernet) feeding f. */
static void conv_start(fx *f, pg_conv *c, const pg_packet *tmpl, uint32_t isn_c, uint32_t isn_s)
{
    pg_packet p;
    if (tmpl == NULL) {
        pg_packet_init(&p);
        tmpl = &p;
    }
    pg_conv_init(c, tmpl, isn_c, isn_s, 1000000);
    c->fn = feed;
    c->ctx = f->t;
}

/* The partition (capture.h) of the connection of packet tmpl. */
static unsigned partition_of(const pg_packet *tmpl)
{
    uint8_t buf[PG_MAX_FRAME];
    size_t n = pg_build(tmpl, buf, sizeof buf);
    cap_record r = {.linktype = tmpl->dlt, .data = buf, .caplen = (uint32_t)n,
                    .wirelen = (uint32_t)n};
    uint32_t hash;
    assert_true(n > 0 && cap_record_flow_hash(&r, &hash));
    return cap_partition_of(hash);
}

/* Set p->sport to the first port from `from` on whose connection is in
 * partition part (same) or not (!same). */
static void sport_in_partition(pg_packet *p, uint16_t from, unsigned part, int same)
{
    for (p->sport = from; p->sport < 65535; p->sport++)
        if ((partition_of(p) == part) == same)
            return;
    fail_msg("no port in partition %u", part);
}

/* Client data at an explicit sequence number (PSH|ACK), no advance. */
static void client_at(pg_conv *c, uint32_t seq, const char *data)
{
    assert_int_equal(pg_conv_send_at(c, 0, seq, PG_ACK | PG_PSH, data, strlen(data)), 0);
}

/* A pure ACK from the server acknowledging everything the client "sent". */
static void server_ack(pg_conv *c)
{
    assert_int_equal(pg_conv_send_at(c, 1, c->next[1], PG_ACK, NULL, 0), 0);
}

/* Handshake, a request split in two, a reply, FIN both ways: everything in
 * order, straight through. */
static void test_in_order(void **state)
{
    fx *f = *state;
    pg_conv c;
    const cap_stats *st;
    evlog_conn *ec;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "*1\r\n", 4);
    pg_conv_send(&c, 0, "$4\r\nPING\r\n", 10);
    pg_conv_send(&c, 1, "+PONG\r\n", 7);
    pg_conv_close(&c);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(f->log.text, "open 1 10.0.0.1:40000>10.0.0.2:6379 syn\n"
                                     "data 1 c 4\n"
                                     "data 1 c 10\n"
                                     "data 1 s 7\n"
                                     "close 1 fin\n");
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "*1\r\n$4\r\nPING\r\n");
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_CLIENT), "+PONG\r\n");
    st = cap_tracker_stats(f->t);
    assert_int_equal(st->packets, 10);
    assert_int_equal(st->tcp_packets, 10);
    assert_int_equal(st->connections, 1);
    assert_int_equal(st->mid_stream, 0);
    assert_int_equal(st->stream_bytes[CAP_TO_SERVER], 14);
    assert_int_equal(st->stream_bytes[CAP_TO_CLIENT], 7);
    assert_int_equal(st->gaps, 0);
    assert_int_equal(st->retransmitted, 0);
    assert_int_equal(st->out_of_order, 0);
    assert_int_equal(st->late_packets, 1); /* the last ACK after both FINs */
    ec = evlog_conn_by_id(&f->log, 1);
    assert_int_equal(ec->at_close.packets[CAP_TO_SERVER], 5); /* SYN ACK data data FIN */
    assert_int_equal(ec->at_close.packets[CAP_TO_CLIENT], 4); /* SYN-ACK data ACK FIN */
    assert_int_equal(ec->at_close.bytes[CAP_TO_SERVER], 14);
    assert_int_equal(ec->at_close.saw_syn, 1);
    assert_int_equal(ec->at_close.first_us, 1000000);
    assert_int_equal(cap_tracker_live(f->t), 0);
}

/* The second segment arrives first: held, then delivered after the first. */
static void test_reordered(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    client_at(&c, s + 5, "WORLD");
    client_at(&c, s, "HELLO");
    c.next[0] += 10;
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "HELLOWORLD");
    assert_string_equal(f->log.text, "open 1 10.0.0.1:40000>10.0.0.2:6379 syn\n"
                                     "data 1 c 5\n"
                                     "data 1 c 5\n"
                                     "close 1 end\n");
    assert_int_equal(cap_tracker_stats(f->t)->out_of_order, 1);
    assert_int_equal(cap_tracker_stats(f->t)->gaps, 0);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->at_close.out_of_order[CAP_TO_SERVER], 1);
}

/* Fifty segments in reverse order: all held, all delivered in order once the
 * first arrives. */
static void test_reverse_many(void **state)
{
    fx *f = *state;
    pg_conv c;
    char expect[51];
    uint32_t s;
    conv_start(f, &c, NULL, 7, 9);
    pg_conv_handshake(&c);
    s = c.next[0];
    for (int i = 49; i >= 0; i--) {
        char b[2] = {(char)('A' + i % 26), 0};
        client_at(&c, s + (uint32_t)i, b);
        expect[i] = b[0];
    }
    expect[50] = '\0';
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), expect);
    assert_int_equal(cap_tracker_stats(f->t)->out_of_order, 49);
    assert_int_equal(cap_tracker_stats(f->t)->stream_bytes[CAP_TO_SERVER], 50);
}

/* The same segment twice: delivered once, one retransmission counted. */
static void test_duplicate(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    client_at(&c, s, "HELLO");
    client_at(&c, s, "HELLO");
    client_at(&c, s + 5, "!");
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "HELLO!");
    assert_int_equal(cap_tracker_stats(f->t)->retransmitted, 1);
    assert_int_equal(cap_tracker_stats(f->t)->overlaps, 0);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->at_close.retransmits[CAP_TO_SERVER], 1);
}

/* A held segment overlapped by an in-order one with different bytes: the
 * held (first) copy wins and the differing bytes are counted. */
static void test_overlap_conflict(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    client_at(&c, s + 10, "BBBBBBBBBB");
    client_at(&c, s, "AAAAAAAAAAXXBXX"); /* 5 bytes over the held ones, 4 differ */
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAAAAAAAABBBBBBBBBB");
    assert_int_equal(cap_tracker_stats(f->t)->overlaps, 1);
    assert_int_equal(cap_tracker_stats(f->t)->overlap_conflicts, 4);
    assert_int_equal(cap_tracker_stats(f->t)->stream_bytes[CAP_TO_SERVER], 20);
}

/* A segment overlapping bytes already delivered: trimmed, first copy wins. */
static void test_overlap_delivered(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    client_at(&c, s, "0123456789");
    client_at(&c, s + 5, "zzzzzabcde");
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "0123456789abcde");
    assert_int_equal(cap_tracker_stats(f->t)->overlaps, 1);
    assert_int_equal(cap_tracker_stats(f->t)->retransmitted, 0);
}

/* A held segment that spans a held one: only the uncovered parts are added,
 * the covered part is compared. */
static void test_overlap_held_span(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    client_at(&c, s + 10, "BBBBBBBBBB");
    client_at(&c, s + 5, "yyyyyZZZZZZZZZZwwwww"); /* covers [5, 25), 10 differ */
    client_at(&c, s, "01234");
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "01234yyyyyBBBBBBBBBBwwwww");
    assert_int_equal(cap_tracker_stats(f->t)->overlap_conflicts, 10);
    assert_int_equal(cap_tracker_stats(f->t)->overlaps, 1);
    assert_int_equal(cap_tracker_stats(f->t)->out_of_order, 2);
    assert_int_equal(cap_tracker_stats(f->t)->gaps, 0);
}

/* Sequence numbers wrap through 2^32 in the middle of the stream, with
 * reordering across the wrap. */
static void test_sequence_wrap(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 0xfffffff0u, 0xfffffffeu);
    pg_conv_handshake(&c);
    s = c.next[0]; /* 0xfffffff1 */
    client_at(&c, s + 20, "cccccccccc"); /* 0x00000005 */
    client_at(&c, s, "aaaaaaaaaa");
    client_at(&c, s + 10, "bbbbbbbbbb"); /* 0xfffffffb .. 0x00000004 */
    pg_conv_send(&c, 1, "reply-1", 7);  /* the server's stream wraps at once */
    pg_conv_send(&c, 1, "reply-2", 7);
    c.next[0] += 30;
    pg_conv_close(&c);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "aaaaaaaaaabbbbbbbbbbcccccccccc");
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_CLIENT), "reply-1reply-2");
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->reason, CAP_CLOSE_FIN);
    assert_int_equal(cap_tracker_stats(f->t)->gaps, 0);
    assert_int_equal(cap_tracker_stats(f->t)->out_of_window, 0);
}

/* A segment the capture lost, with a later one held: the server's ACK
 * beyond the hole shows it will never come: GAP of exactly its length. */
static void test_lost_segment_acked(void **state)
{
    fx *f = *state;
    pg_conv c;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "AAAA", 4);
    c.next[0] += 7; /* "BBBBBBB" never captured */
    pg_conv_send(&c, 0, "CCCC", 4);
    server_ack(&c);
    pg_conv_send(&c, 0, "DD", 2);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(f->log.text, "open 1 10.0.0.1:40000>10.0.0.2:6379 syn\n"
                                     "data 1 c 4\n"
                                     "gap 1 c 7\n"
                                     "data 1 c 4\n"
                                     "data 1 c 2\n"
                                     "close 1 end\n");
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAA<gap 7>CCCCDD");
    assert_int_equal(cap_tracker_stats(f->t)->gaps, 1);
    assert_int_equal(cap_tracker_stats(f->t)->gap_bytes, 7);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->at_close.gap_bytes[CAP_TO_SERVER], 7);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->at_close.gaps[CAP_TO_SERVER], 1);
}

/* Reply bytes the capture lost, acknowledged by the client while the
 * server sends nothing more: with acked_gap_us they become a GAP once the
 * client has acknowledged them that long (capture time), before the
 * server's next segment; without it (the default), only that segment shows
 * the hole. The stream is the same either way. */
static void test_acked_unseen_gap(void **state)
{
    fx *f = *state;
    for (int on = 0; on <= 1; on++) {
        pg_conv c;
        f->cfg.acked_gap_us = on ? 5000 : 0;
        fx_restart(f);
        conv_start(f, &c, NULL, 100, 5000);
        c.step_us = 1000;
        pg_conv_handshake(&c);
        pg_conv_send(&c, 0, "GET1", 4);
        pg_conv_send(&c, 1, "R1", 2);
        pg_conv_send(&c, 0, "GET2", 4);
        c.next[1] += 6; /* the server's "R2...." never captured */
        for (int i = 0; i < 4; i++) /* 1 ms apart, each acknowledging it */
            pg_conv_send(&c, 0, "GETx", 4);
        assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_CLIENT), "R1");
        for (int i = 0; i < 4; i++)
            pg_conv_send(&c, 0, "GETy", 4);
        /* 7 ms since the first ACK of it */
        assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_CLIENT), on ? "R1<gap 6>" : "R1");
        pg_conv_send(&c, 1, "R3", 2);
        cap_tracker_finish(f->t, c.ts_us);
        assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_CLIENT), "R1<gap 6>R3");
        assert_int_equal(cap_tracker_stats(f->t)->gaps, 1);
        assert_int_equal(cap_tracker_stats(f->t)->gap_bytes, 6);
    }
}

/* An ACK beyond everything seen gives up the holes before the last held
 * byte only: the acknowledged bytes after it may still come. */
static void test_ack_beyond_held(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    client_at(&c, s, "AAAA");
    client_at(&c, s + 7, "CCCC"); /* [s+4, s+7) lost */
    c.next[0] = s + 15;           /* the server got everything up to s+15 */
    server_ack(&c);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAA<gap 3>CCCC");
    client_at(&c, s + 11, "DDDD"); /* late in the capture, but here */
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAA<gap 3>CCCCDDDD");
    assert_int_equal(cap_tracker_stats(f->t)->gap_bytes, 3);
}

/* The server ACKs bytes we never saw before anything after them arrived:
 * the next segment beyond the hole turns it into a GAP. */
static void test_lost_segment_ack_first(void **state)
{
    fx *f = *state;
    pg_conv c;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "AAAA", 4);
    c.next[0] += 6;
    server_ack(&c);
    assert_int_equal(cap_tracker_stats(f->t)->gaps, 0); /* not yet: could be reordering */
    pg_conv_send(&c, 0, "CCCC", 4);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAA<gap 6>CCCC");
    assert_int_equal(cap_tracker_stats(f->t)->out_of_order, 0);
    assert_int_equal(cap_tracker_stats(f->t)->gap_bytes, 6);
}

/* A hole before the FIN: the ACK of the FIN proves it lost; the connection
 * closes normally with the gap delivered first. */
static void test_lost_before_fin(void **state)
{
    fx *f = *state;
    pg_conv c;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "AAAA", 4);
    c.next[0] += 5;
    pg_conv_close(&c);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAA<gap 5>");
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->closed, 1);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->reason, CAP_CLOSE_FIN);
    cap_tracker_finish(f->t, c.ts_us);
    assert_int_equal(cap_tracker_stats(f->t)->gap_bytes, 5);
}

/* A hole still open at the end of input: held data after it is delivered
 * behind a GAP of the hole's length. */
static void test_hole_at_end(void **state)
{
    fx *f = *state;
    pg_conv c;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "AAAA", 4);
    c.next[0] += 3;
    pg_conv_send(&c, 0, "CC", 2);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAA<gap 3>CC");
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->reason, CAP_CLOSE_END);
}

/* No handshake: streams start at the first sequence number seen, the server
 * is known by its port, and the connection counts as mid-stream. The first
 * packet comes from the server. */
static void test_mid_stream(void **state)
{
    fx *f = *state;
    pg_conv c;
    evlog_conn *ec;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_send(&c, 1, "ALUE\r\n", 6);
    pg_conv_send(&c, 0, "*1\r\n$4\r\nPING\r\n", 14);
    pg_conv_send(&c, 1, "+PONG\r\n", 7);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(f->log.text, "open 1 10.0.0.1:40000>10.0.0.2:6379 port\n"
                                     "data 1 s 6\n"
                                     "data 1 c 14\n"
                                     "data 1 s 7\n"
                                     "close 1 end\n");
    assert_int_equal(cap_tracker_stats(f->t)->mid_stream, 1);
    ec = evlog_conn_by_id(&f->log, 1);
    assert_int_equal(ec->at_close.saw_syn, 0);
    assert_int_equal(ec->at_close.side_source, CAP_SIDE_PORT);
    assert_int_equal(ec->at_close.packets[CAP_TO_CLIENT], 2);
}

/* Picked up mid-stream, the client speaks first: its ACK (5000) says where
 * the server's stream stands. Its second request acknowledges 7 more bytes
 * (a reply the capture lost), and the server's first captured segment
 * starts there (5007): the stream starts at the first ACK, and those 7 bytes
 * are a GAP before the data (start_gaps), not a stream that seems whole. A
 * server segment that starts at the client's first ACK leaves no hole. */
static void test_mid_stream_start_hole(void **state)
{
    fx *f = *state;
    for (int lost = 0; lost <= 1; lost++) {
        pg_conv c;
        if (lost == 1)
            fx_restart(f);
        conv_start(f, &c, NULL, 100, 5000);
        c.next[0] = 1000;
        c.next[1] = 5000;
        pg_conv_send(&c, 0, "*1\r\n$4\r\nPING\r\n", 14); /* ACK 5000 */
        if (lost)
            c.next[1] = 5007; /* "+PONG\r\n" sent, not captured */
        pg_conv_send(&c, 0, "*1\r\n$4\r\nPING\r\n", 14);
        pg_conv_send(&c, 1, "+PONG\r\n", 7);
        assert_int_equal(pg_conv_send_at(&c, 0, c.next[0], PG_ACK, NULL, 0), 0);
        cap_tracker_finish(f->t, c.ts_us);
        const cap_stats *st = cap_tracker_stats(f->t);
        if (lost) {
            assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_CLIENT), "<gap 7>+PONG\r\n");
            assert_int_equal(st->gaps, 1);
            assert_int_equal(st->gap_bytes, 7);
            assert_int_equal(st->start_gaps, 1);
        } else {
            assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_CLIENT), "+PONG\r\n");
            assert_int_equal(st->gaps, 0);
            assert_int_equal(st->start_gaps, 0);
        }
        assert_int_equal(st->mid_stream, 1);
    }
}

/* As above, but the client's first request already acknowledges the 7
 * bytes (its first packet, a bare ACK, did not): it had received them
 * before it sent anything captured, so they answer none of it. Still a
 * start gap, flagged before_peer; not when a client byte before that
 * request was lost, which may have been sent before the 7 bytes came. */
static void test_start_hole_before_peer(void **state)
{
    fx *f = *state;
    for (int client_lost = 0; client_lost <= 1; client_lost++) {
        pg_conv c;
        if (client_lost == 1)
            fx_restart(f);
        conv_start(f, &c, NULL, 100, 5000);
        c.next[0] = 1000;
        c.next[1] = 5000;
        assert_int_equal(pg_conv_send_at(&c, 0, c.next[0], PG_ACK, NULL, 0), 0); /* ACK 5000 */
        c.next[1] = 5007; /* "+PONG\r\n" sent, not captured, received */
        if (client_lost)
            c.next[0] += 14; /* a PING the capture lost */
        pg_conv_send(&c, 0, "*1\r\n$4\r\nPING\r\n", 14);   /* ACK 5007 */
        pg_conv_send(&c, 1, "+PONG\r\n", 7);
        assert_int_equal(pg_conv_send_at(&c, 0, c.next[0], PG_ACK, NULL, 0), 0);
        cap_tracker_finish(f->t, c.ts_us);
        assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_CLIENT),
                            client_lost ? "<gap 7>+PONG\r\n" : "<gap 7 seen>+PONG\r\n");
        assert_int_equal(cap_tracker_stats(f->t)->start_gaps, 1);
    }
}

/* The shape hook: a RESP array is a request. */
static int shape_resp(const uint8_t *data, size_t len)
{
    if (len > 0 && data[0] == '*')
        return 1;
    if (len > 0 && (data[0] == '+' || data[0] == '-' || data[0] == '$'))
        return -1;
    return 0;
}


/* A connection picked up mid-stream by a TCP keepalive (as in spicy-redis
 * django-cache.pcap, port 49406): the client's probe carries seq = its next
 * byte - 1 and no payload, the server ACKs the real next byte. The byte below
 * the ACK was delivered long ago: a keepalive, not a 1-byte gap. */
static void test_keepalive_mid_stream(void **state)
{
    fx *f = *state;
    pg_conv c;
    const cap_stats *st;
    conv_start(f, &c, NULL, 100, 5000);
    c.next[0] = 1000;
    c.next[1] = 5000;
    assert_int_equal(pg_conv_send_at(&c, 0, 999, PG_ACK, NULL, 0), 0); /* probe */
    server_ack(&c);                                                      /* ack 1000 */
    cap_tracker_finish(f->t, c.ts_us);
    st = cap_tracker_stats(f->t);
    assert_int_equal(st->gaps, 0);
    assert_int_equal(st->gap_bytes, 0);
    assert_int_equal(st->retransmitted, 1);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->at_close.retransmits[CAP_TO_SERVER], 1);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->at_close.gaps[CAP_TO_SERVER], 0);
}

/* The same probe first, then data from the real next byte before any ACK:
 * the stream continues at the data, without a gap. */
static void test_keepalive_mid_stream_data(void **state)
{
    fx *f = *state;
    pg_conv c;
    const cap_stats *st;
    conv_start(f, &c, NULL, 100, 5000);
    c.next[0] = 1000;
    c.next[1] = 5000;
    assert_int_equal(pg_conv_send_at(&c, 0, 999, PG_ACK, NULL, 0), 0);
    client_at(&c, 1000, "PING\r\n");
    c.next[0] = 1006;
    server_ack(&c);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "PING\r\n");
    st = cap_tracker_stats(f->t);
    assert_int_equal(st->gaps, 0);
    assert_int_equal(st->out_of_order, 0);
    assert_int_equal(st->retransmitted, 1);
}

/* Inside a stream: keepalives with no byte or one old byte (seq = next - 1),
 * a zero-window probe the Linux way (the same shape), window updates (pure
 * ACKs at next) and a zero-window probe the BSD way (one new byte that the
 * receiver does not take and that comes again with more). Exact bytes, no
 * gap, each probe counted once as a retransmission. */
static void test_keepalive_and_window_probes(void **state)
{
    fx *f = *state;
    pg_conv c;
    const cap_stats *st;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "*1\r\n", 4);
    s = c.next[0];
    server_ack(&c);
    assert_int_equal(pg_conv_send_at(&c, 0, s - 1, PG_ACK, NULL, 0), 0); /* keepalive */
    server_ack(&c);
    assert_int_equal(pg_conv_send_at(&c, 0, s - 1, PG_ACK, "\n", 1), 0); /* 1 old byte */
    server_ack(&c);
    assert_int_equal(pg_conv_send_at(&c, 0, s - 1, PG_ACK, NULL, 0), 0); /* zero-window probe */
    assert_int_equal(pg_conv_send_at(&c, 0, s, PG_ACK, NULL, 0), 0);     /* window update */
    assert_int_equal(pg_conv_send_at(&c, 0, s, PG_ACK | PG_PSH, "$", 1), 0); /* BSD probe */
    server_ack(&c); /* still acks s: the byte was not taken */
    pg_conv_send(&c, 0, "$4\r\nPING\r\n", 10); /* the byte again, with the rest */
    pg_conv_send(&c, 1, "+PONG\r\n", 7);
    pg_conv_close(&c);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "*1\r\n$4\r\nPING\r\n");
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_CLIENT), "+PONG\r\n");
    st = cap_tracker_stats(f->t);
    assert_int_equal(st->gaps, 0);
    assert_int_equal(st->gap_bytes, 0);
    assert_int_equal(st->retransmitted, 3);
    assert_int_equal(st->overlaps, 1);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->at_close.retransmits[CAP_TO_SERVER], 3);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->reason, CAP_CLOSE_FIN);
}

/* Unknown ports, no handshake: OPEN waits for the first payload so that the
 * shape hook can tell the request; the packets before it are counted. */
static void test_mid_stream_shape(void **state)
{
    fx *f = *state;
    pg_conv c;
    pg_packet p;
    evlog_conn *ec;
    f->cfg.shape = shape_resp;
    fx_restart(f);
    pg_packet_init(&p);
    p.sport = 50001; /* the client has the lower port: a guess would be wrong */
    p.dport = 50002;
    conv_start(f, &c, &p, 100, 5000);
    server_ack(&c); /* first packet: a pure ACK from the server */
    assert_int_equal(f->log.n_conns, 0);
    pg_conv_send(&c, 1, "+OK\r\n", 5);
    pg_conv_send(&c, 0, "*1\r\n$4\r\nPING\r\n", 14);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(f->log.text, "open 1 10.0.0.1:50001>10.0.0.2:50002 shape\n"
                                     "data 1 s 5\n"
                                     "data 1 c 14\n"
                                     "close 1 end\n");
    ec = evlog_conn_by_id(&f->log, 1);
    assert_int_equal(ec->at_close.packets[CAP_TO_CLIENT], 2);
    assert_int_equal(ec->at_close.packets[CAP_TO_SERVER], 1);
}

/* Unknown ports, no hook: the lower port is taken as the server. */
static void test_mid_stream_guess(void **state)
{
    fx *f = *state;
    pg_conv c;
    pg_packet p;
    pg_packet_init(&p);
    p.sport = 50002;
    p.dport = 50001;
    conv_start(f, &c, &p, 100, 5000);
    pg_conv_send(&c, 0, "hi", 2);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(f->log.text, "open 1 10.0.0.1:50002>10.0.0.2:50001 guess\n"
                                     "data 1 c 2\n"
                                     "close 1 end\n");
}

/* Configured server ports replace the built-in list. */
static void test_configured_ports(void **state)
{
    fx *f = *state;
    pg_conv c;
    pg_packet p;
    f->cfg.server_ports[0] = 50002;
    f->cfg.n_server_ports = 1;
    fx_restart(f);
    pg_packet_init(&p);
    p.sport = 6379; /* not a server port any more */
    p.dport = 50002;
    conv_start(f, &c, &p, 100, 5000);
    pg_conv_send(&c, 1, "x", 1);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(f->log.text, "open 1 10.0.0.1:6379>10.0.0.2:50002 port\n"
                                     "data 1 s 1\n"
                                     "close 1 end\n");
}

/* A RST closes at once; held data goes out behind its gap first; packets
 * after it are late. */
static void test_rst(void **state)
{
    fx *f = *state;
    pg_conv c;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "AAAA", 4);
    c.next[0] += 3;
    pg_conv_send(&c, 0, "CC", 2);
    assert_int_equal(pg_conv_send_at(&c, 1, c.next[1], PG_RST, NULL, 0), 0);
    server_ack(&c);
    assert_string_equal(f->log.text, "open 1 10.0.0.1:40000>10.0.0.2:6379 syn\n"
                                     "data 1 c 4\n"
                                     "gap 1 c 3\n"
                                     "data 1 c 2\n"
                                     "close 1 rst\n");
    assert_int_equal(cap_tracker_stats(f->t)->late_packets, 1);
    assert_int_equal(cap_tracker_live(f->t), 0);
}

/* The same 4-tuple used twice: after a FIN close a new SYN is a new
 * connection; without a close seen, the old one ends as "reused". */
static void test_port_reuse(void **state)
{
    fx *f = *state;
    pg_conv c;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "one", 3);
    pg_conv_close(&c);
    conv_start(f, &c, NULL, 90000, 70000);
    c.ts_us = 3000000;
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "two", 3);
    conv_start(f, &c, NULL, 123456, 654321);
    c.ts_us = 4000000;
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "three", 5);
    cap_tracker_finish(f->t, c.ts_us);
    /* A connection's id is the number of the record that opened it: the
     * first took records 1-8 (3 handshake, 1 data, 4 closing), the second
     * 9-12. */
    assert_string_equal(f->log.text, "open 1 10.0.0.1:40000>10.0.0.2:6379 syn\n"
                                     "data 1 c 3\n"
                                     "close 1 fin\n"
                                     "open 9 10.0.0.1:40000>10.0.0.2:6379 syn\n"
                                     "data 9 c 3\n"
                                     "close 9 reused\n"
                                     "open 13 10.0.0.1:40000>10.0.0.2:6379 syn\n"
                                     "data 13 c 5\n"
                                     "close 13 end\n");
    assert_string_equal(evlog_stream(&f->log, 13, CAP_TO_SERVER), "three");
    assert_int_equal(cap_tracker_stats(f->t)->connections, 3);
}

/* A retransmitted SYN is not a new connection. */
static void test_syn_retransmit(void **state)
{
    fx *f = *state;
    pg_conv c;
    conv_start(f, &c, NULL, 100, 5000);
    assert_int_equal(pg_conv_send_at(&c, 0, 100, PG_SYN, NULL, 0), 0);
    pg_conv_handshake(&c);
    pg_conv_send(&c, 0, "x", 1);
    cap_tracker_finish(f->t, c.ts_us);
    assert_int_equal(cap_tracker_stats(f->t)->connections, 1);
    assert_int_equal(cap_tracker_stats(f->t)->retransmitted, 1);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "x");
}

/* The SYN was not captured but the SYN-ACK was: the client's stream starts
 * where the SYN-ACK says, the sender of the SYN-ACK is the server. */
static void test_synack_only(void **state)
{
    fx *f = *state;
    pg_conv c;
    pg_packet p;
    pg_packet_init(&p);
    p.sport = 50001;
    p.dport = 50002;
    conv_start(f, &c, &p, 100, 5000);
    c.next[0]++; /* the SYN happened */
    assert_int_equal(pg_conv_send_at(&c, 1, 5000, PG_SYN | PG_ACK, NULL, 0), 0);
    c.next[1]++;
    c.next[0] += 3; /* and its first 3 bytes were lost */
    pg_conv_send(&c, 0, "abc", 3);
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(f->log.text, "open 1 10.0.0.1:50001>10.0.0.2:50002 syn\n"
                                     "gap 1 c 3\n"
                                     "data 1 c 3\n"
                                     "close 1 end\n");
}

/* Build one data frame of the default conversation. */
static size_t data_frame(uint8_t *buf, uint32_t seq, const char *data, size_t len)
{
    pg_packet p;
    pg_packet_init(&p);
    p.seq = seq;
    p.flags = PG_ACK | PG_PSH;
    p.payload = data;
    p.len = len;
    return pg_build(&p, buf, PG_MAX_FRAME);
}

/* Packets cut by snaplen: the captured bytes are delivered, the missing ones
 * become a GAP of their exact length, in order, also when held. */
static void test_snaplen_truncated(void **state)
{
    fx *f = *state;
    static uint8_t buf[PG_MAX_FRAME];
    const cap_stats *st;
    size_t n;
    n = data_frame(buf, 1000, "0123456789", 10);
    cap_tracker_packet(f->t, DLT_EN10MB, 10, buf, (uint32_t)n - 4, (uint32_t)n);
    n = data_frame(buf, 1020, "KLMNOPQRST", 10); /* ahead of a hole, cut by 6 */
    cap_tracker_packet(f->t, DLT_EN10MB, 20, buf, (uint32_t)n - 6, (uint32_t)n);
    n = data_frame(buf, 1010, "abcdefghij", 10);
    cap_tracker_packet(f->t, DLT_EN10MB, 30, buf, (uint32_t)n, (uint32_t)n);
    n = data_frame(buf, 1030, "end", 3);
    cap_tracker_packet(f->t, DLT_EN10MB, 40, buf, (uint32_t)n, (uint32_t)n);
    n = data_frame(buf, 1033, "zzz", 3); /* headers cut: nothing usable */
    cap_tracker_packet(f->t, DLT_EN10MB, 50, buf, 30, (uint32_t)n);
    cap_tracker_finish(f->t, 60);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER),
                        "012345<gap 4>abcdefghijKLMN<gap 6>end");
    st = cap_tracker_stats(f->t);
    assert_int_equal(st->truncated, 3);
    assert_int_equal(st->gaps, 2);
    assert_int_equal(st->gap_bytes, 10);
    assert_int_equal(st->tcp_packets, 4);
    assert_int_equal(st->stream_bytes[CAP_TO_SERVER], 23);
    assert_int_equal(st->captured_bytes + 4 + 6 + (n - 30), st->wire_bytes);
}

/* A conversation over one link encapsulation carries the same streams. */
static void run_link(const pg_packet *tmpl, const char *open_line)
{
    evlog log;
    cap_tracker *t;
    pg_conv c;
    char expect[256];
    evlog_init(&log);
    t = cap_tracker_new(NULL, evlog_fn, &log);
    assert_non_null(t);
    pg_conv_init(&c, tmpl, 100, 5000, 1000);
    c.fn = feed;
    c.ctx = t;
    assert_int_equal(pg_conv_handshake(&c), 0);
    assert_int_equal(pg_conv_send(&c, 0, "hello", 5), 0);
    assert_int_equal(pg_conv_send(&c, 1, "world!", 6), 0);
    assert_int_equal(pg_conv_close(&c), 0);
    cap_tracker_finish(t, c.ts_us);
    snprintf(expect, sizeof expect, "%s\ndata 1 c 5\ndata 1 s 6\nclose 1 fin\n", open_line);
    assert_string_equal(log.text, expect);
    assert_int_equal(cap_tracker_stats(t)->tcp_packets, 9);
    assert_int_equal(cap_tracker_stats(t)->malformed, 0);
    assert_int_equal(cap_tracker_stats(t)->unsupported, 0);
    cap_tracker_free(t);
    evlog_free(&log);
}

/* Every supported link type, IPv4 and IPv6. */
static void test_link_types(void **state)
{
    static const char v4[] = "open 1 10.0.0.1:40000>10.0.0.2:6379 syn";
    static const char v6[] = "open 1 [fd00::1]:40000>[fd00::2]:6379 syn";
    const int dlts[] = {DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_NULL, DLT_LOOP, DLT_RAW};
    pg_packet p;
    (void)state;
    for (size_t i = 0; i < sizeof dlts / sizeof dlts[0]; i++) {
        for (int v = 4; v <= 6; v += 2) {
            pg_packet_init(&p);
            p.dlt = dlts[i];
            if (v == 6) {
                p.src = "fd00::1";
                p.dst = "fd00::2";
            }
            run_link(&p, v == 4 ? v4 : v6);
        }
    }
    pg_packet_init(&p);
    p.dlt = DLT_IPV4;
    run_link(&p, v4);
    p.dlt = DLT_IPV6;
    p.src = "fd00::1";
    p.dst = "fd00::2";
    run_link(&p, v6);
    /* BSD NULL in network order, and the other AF_INET6 values. */
    pg_packet_init(&p);
    p.dlt = DLT_NULL;
    p.null_network_order = 1;
    run_link(&p, v4);
    p.src = "fd00::1";
    p.dst = "fd00::2";
    for (uint32_t af = 24; af <= 30; af += 2) {
        if (af == 26)
            continue;
        p.af_inet6 = af;
        run_link(&p, v6);
    }
}

/* 802.1Q, stacked 802.1ad + 802.1Q, and the old QinQ TPID. */
static void test_vlan(void **state)
{
    static const char v4[] = "open 1 10.0.0.1:40000>10.0.0.2:6379 syn";
    pg_packet p;
    (void)state;
    pg_packet_init(&p);
    p.n_vlan = 1;
    p.vlan_id[0] = 100;
    run_link(&p, v4);
    p.n_vlan = 2;
    p.vlan_tpid[0] = 0x88a8;
    p.vlan_id[1] = 200;
    run_link(&p, v4);
    p.n_vlan = 3;
    p.vlan_tpid[0] = 0x9100;
    p.vlan_tpid[1] = 0x88a8;
    p.vlan_tpid[2] = 0x8100;
    p.src = "fd00::1";
    p.dst = "fd00::2";
    run_link(&p, "open 1 [fd00::1]:40000>[fd00::2]:6379 syn");
}

/* IPv4 options and IPv6 extension headers are skipped; TCP options too. */
static void test_ip_options_and_ext(void **state)
{
    pg_packet p;
    (void)state;
    pg_packet_init(&p);
    p.ip4_options = 12;
    p.tcp_options = 12;
    run_link(&p, "open 1 10.0.0.1:40000>10.0.0.2:6379 syn");
    pg_packet_init(&p);
    p.src = "2001:db8::10";
    p.dst = "2001:db8::20";
    p.ip6_ext[0] = 0;
    p.ip6_ext[1] = 43;
    p.ip6_ext[2] = 60;
    p.ip6_ext[3] = 51;
    p.n_ip6_ext = 4;
    run_link(&p, "open 1 [2001:db8::10]:40000>[2001:db8::20]:6379 syn");
}

/* Build p and feed it whole. */
static void feed_packet(fx *f, const pg_packet *p)
{
    static uint8_t buf[PG_MAX_FRAME];
    size_t n = pg_build(p, buf, sizeof buf);
    assert_true(n > 0);
    cap_tracker_packet(f->t, p->dlt, 1, buf, (uint32_t)n, (uint32_t)n);
}

/* Fragments, other protocols, non-IP frames and unknown link types are
 * counted, never turned into connections. */
static void test_not_tcp(void **state)
{
    fx *f = *state;
    pg_packet p;
    const cap_stats *st;
    static const uint8_t arp[42] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06};
    pg_packet_init(&p);
    p.payload = "frag";
    p.len = 4;
    p.ip4_more_fragments = 1;
    feed_packet(f, &p); /* first fragment */
    p.ip4_more_fragments = 0;
    p.ip4_frag_offset = 100;
    feed_packet(f, &p); /* last fragment */
    pg_packet_init(&p);
    p.src = "fd00::1";
    p.dst = "fd00::2";
    p.ip6_ext[0] = 0;
    p.ip6_ext[1] = 44;
    p.n_ip6_ext = 2;
    p.payload = "frag";
    p.len = 4;
    feed_packet(f, &p); /* IPv6 fragment behind a hop-by-hop header */
    pg_packet_init(&p);
    p.ip_proto = 17;
    p.payload = "udp-datagram";
    p.len = 12;
    feed_packet(f, &p);
    cap_tracker_packet(f->t, DLT_EN10MB, 2, arp, sizeof arp, sizeof arp);
    cap_tracker_packet(f->t, 105 /* IEEE 802.11 */, 3, arp, sizeof arp, sizeof arp);
    cap_tracker_finish(f->t, 4);
    st = cap_tracker_stats(f->t);
    assert_int_equal(st->packets, 6);
    assert_int_equal(st->ip_fragments, 3);
    assert_int_equal(st->non_tcp, 1);
    assert_int_equal(st->non_ip, 1);
    assert_int_equal(st->unsupported, 1);
    assert_int_equal(st->tcp_packets, 0);
    assert_int_equal(st->connections, 0);
    assert_null(f->log.text);
}

/* Headers that lie are counted as malformed and read no further. */
static void test_malformed(void **state)
{
    fx *f = *state;
    static uint8_t buf[PG_MAX_FRAME];
    size_t n = data_frame(buf, 1000, "0123456789", 10);
    uint8_t bad[PG_MAX_FRAME];
    memcpy(bad, buf, n);
    bad[14] = 0x43; /* IHL 3 */
    cap_tracker_packet(f->t, DLT_EN10MB, 1, bad, (uint32_t)n, (uint32_t)n);
    memcpy(bad, buf, n);
    bad[16] = 0x10; /* total length 4096 > frame */
    cap_tracker_packet(f->t, DLT_EN10MB, 2, bad, (uint32_t)n, (uint32_t)n);
    memcpy(bad, buf, n);
    bad[14 + 20 + 12] = 0x40; /* TCP data offset 4 */
    cap_tracker_packet(f->t, DLT_EN10MB, 3, bad, (uint32_t)n, (uint32_t)n);
    memcpy(bad, buf, n);
    bad[14 + 20 + 12] = 0xf0; /* TCP data offset 60 > segment */
    cap_tracker_packet(f->t, DLT_EN10MB, 4, bad, (uint32_t)n, (uint32_t)n);
    cap_tracker_packet(f->t, DLT_EN10MB, 5, buf, 20, 20); /* IP header cut, no snaplen */
    cap_tracker_packet(f->t, DLT_LINUX_SLL2, 6, buf, 10, 10);
    cap_tracker_packet(f->t, DLT_RAW, 7, buf, 0, 0);
    memcpy(bad, buf, n);
    bad[16] = bad[17] = 0; /* IPv4 length 0 ("offload") with an absurd wire length */
    cap_tracker_packet(f->t, DLT_EN10MB, 8, bad, (uint32_t)n, 0xffffffffu);
    cap_tracker_finish(f->t, 9);
    assert_int_equal(cap_tracker_stats(f->t)->malformed, 8);
    assert_int_equal(cap_tracker_stats(f->t)->connections, 0);
}

/* Ethernet padding after a short IP packet is not payload; an IPv4 total
 * length of 0 (segmentation offload) means "the rest of the frame". */
static void test_padding_and_tso(void **state)
{
    fx *f = *state;
    static uint8_t buf[PG_MAX_FRAME];
    size_t n = data_frame(buf, 1000, "ab", 2);
    memset(buf + n, 'P', 60 - n); /* pad to the Ethernet minimum */
    cap_tracker_packet(f->t, DLT_EN10MB, 1, buf, 60, 60);
    n = data_frame(buf, 1002, "cdef", 4);
    buf[16] = buf[17] = 0;
    cap_tracker_packet(f->t, DLT_EN10MB, 2, buf, (uint32_t)n, (uint32_t)n);
    cap_tracker_finish(f->t, 3);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "abcdef");
}


/* Payload bytes for super-frames: letters, a pattern that shows misplaced
 * bytes (and no NUL or '<', which the stream text uses). */
static void fill_letters(uint8_t *buf, size_t n, uint32_t seq)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)('a' + (seq + i) % 26);
}

/* Feed a segment from the client as a Linux 'any' capture (SLL2) shows a
 * GSO/GRO super-frame: total payload bytes from seq on the wire, of which the
 * record keeps the first kept (snaplen). IPv4 or (v6) IPv6; over 65535 bytes
 * the IP length field is 0, as Linux BIG TCP leaves it. */
static void feed_super(fx *f, int v6, uint32_t seq, size_t total, size_t kept, int64_t ts_us)
{
    static uint8_t payload[PG_MAX_BIG_FRAME], buf[PG_MAX_BIG_FRAME];
    pg_packet p;
    size_t n;
    assert_true(total <= 256 * 1024 && kept <= total);
    fill_letters(payload, total, seq);
    pg_packet_init(&p);
    p.dlt = DLT_LINUX_SLL2;
    p.big = 1;
    if (v6) {
        p.src = "fd00::1";
        p.dst = "fd00::2";
    }
    p.seq = seq;
    p.flags = PG_ACK | PG_PSH;
    p.payload = payload;
    p.len = total;
    n = pg_build(&p, buf, sizeof buf);
    assert_true(n > total);
    cap_tracker_packet(f->t, DLT_LINUX_SLL2, ts_us, buf, (uint32_t)(n - (total - kept)),
                       (uint32_t)n);
}

/* Append the letters of [seq, seq+n) to an expected stream text. */
static size_t expect_letters(char *out, size_t at, uint32_t seq, size_t n)
{
    fill_letters((uint8_t *)out + at, n, seq);
    out[at + n] = '\0';
    return at + n;
}

/* Append "<gap n>" to an expected stream text. */
static size_t expect_gap(char *out, size_t at, size_t n)
{
    return at + (size_t)sprintf(out + at, "<gap %zu>", n);
}

/* Super-frames on SLL2 captured whole, larger than any MSS: IPv4 under 64 KiB
 * (a true length field), IPv4 and IPv6 over it (length 0), back to back with
 * ordinary segments. Every byte arrives, once, in order, with no gap. */
static void test_superframe_whole(void **state)
{
    fx *f = *state;
    static char want[2][600 * 1024];
    size_t at = 0, at6 = 0;
    const cap_stats *st;
    feed_super(f, 0, 1000, 1000, 1000, 10);
    feed_super(f, 0, 2000, 60000, 60000, 20);
    feed_super(f, 0, 62000, 200000, 200000, 30);
    feed_super(f, 0, 262000, 1448, 1448, 40);
    feed_super(f, 1, 7000, 150000, 150000, 50);
    feed_super(f, 1, 157000, 70000, 70000, 60);
    cap_tracker_finish(f->t, 70);
    at = expect_letters(want[0], at, 1000, 262448);
    at6 = expect_letters(want[1], at6, 7000, 220000);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), want[0]);
    assert_string_equal(evlog_stream(&f->log, 5, CAP_TO_SERVER), want[1]);
    st = cap_tracker_stats(f->t);
    assert_int_equal(st->malformed + st->truncated + st->gaps, 0);
    assert_int_equal(st->stream_bytes[CAP_TO_SERVER], at + at6);
}

/* Super-frames cut by the snap length: the captured head is delivered and
 * the rest is one GAP of exactly the missing bytes, in order or held ahead of
 * a hole; the stream goes on right after it. */
static void test_superframe_snaplen(void **state)
{
    fx *f = *state;
    static char want[2][64 * 1024];
    size_t at = 0, at6 = 0;
    const cap_stats *st;
    /* In order: 100000 bytes on the wire, 1400 captured. */
    feed_super(f, 0, 1000, 100000, 1400, 10);
    feed_super(f, 0, 101000, 2000, 2000, 20);
    /* Ahead of a hole: a 70000-byte frame cut to 500 arrives before the
     * 1000 bytes in front of it. */
    feed_super(f, 0, 104000, 70000, 500, 30);
    feed_super(f, 0, 103000, 1000, 1000, 40);
    feed_super(f, 0, 174000, 10, 10, 50);
    /* IPv6, length field 0, cut to 0 payload bytes, then more. */
    feed_super(f, 1, 5000, 131072, 0, 60);
    feed_super(f, 1, 136072, 300, 300, 70);
    cap_tracker_finish(f->t, 80);
    at = expect_letters(want[0], at, 1000, 1400);
    at = expect_gap(want[0], at, 98600);
    at = expect_letters(want[0], at, 101000, 3500);
    at = expect_gap(want[0], at, 69500);
    at = expect_letters(want[0], at, 174000, 10);
    at6 = expect_gap(want[1], at6, 131072);
    at6 = expect_letters(want[1], at6, 136072, 300);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), want[0]);
    assert_string_equal(evlog_stream(&f->log, 6, CAP_TO_SERVER), want[1]);
    st = cap_tracker_stats(f->t);
    assert_int_equal(st->truncated, 3);
    assert_int_equal(st->gaps, 3);
    assert_int_equal(st->gap_bytes, 98600 + 69500 + 131072);
    assert_int_equal(st->stream_bytes[CAP_TO_SERVER], 1400 + 3500 + 10 + 300);
    assert_int_equal(st->malformed, 0);
}

/* A connection quiet for the idle timeout (capture time) is closed when a
 * later packet shows the time has passed; a half-closed one closes as FIN. */
static void test_idle_timeout(void **state)
{
    fx *f = *state;
    pg_conv a, b, d;
    pg_packet p;
    f->cfg.idle_timeout_us = 1000000;
    fx_restart(f);
    conv_start(f, &a, NULL, 100, 5000);
    pg_conv_handshake(&a);
    pg_conv_send(&a, 0, "a", 1);
    pg_packet_init(&p);
    p.sport = 40001;
    conv_start(f, &d, &p, 100, 5000);
    d.ts_us = a.ts_us + 500000;
    pg_conv_handshake(&d);
    assert_int_equal(pg_conv_send_at(&d, 0, d.next[0], PG_FIN | PG_ACK, NULL, 0), 0);
    p.sport = 40002;
    conv_start(f, &b, &p, 100, 5000);
    b.ts_us = a.ts_us + 2000000; /* a quiet 2 s, d 1.5 s */
    pg_conv_handshake(&b);
    /* ids: records 1 (a: 4 records), 5 (d: 4 records) and 9 */
    assert_string_equal(f->log.text, "open 1 10.0.0.1:40000>10.0.0.2:6379 syn\n"
                                     "data 1 c 1\n"
                                     "open 5 10.0.0.1:40001>10.0.0.2:6379 syn\n"
                                     "close 1 idle\n"
                                     "close 5 fin\n"
                                     "open 9 10.0.0.1:40002>10.0.0.2:6379 syn\n");
    assert_int_equal(cap_tracker_stats(f->t)->idle_connections, 1);
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->close_ts, b.ts_us - 30);
    assert_int_equal(cap_tracker_live(f->t), 1);
    cap_tracker_finish(f->t, b.ts_us);
}

/* A full partition (the connection cap's share, 1/64 of it, capture.h)
 * evicts its least recently active connection, counted; a closed one is
 * reused first, silently. Four connections of one partition, 2 each. */
static void test_connection_cap(void **state)
{
    fx *f = *state;
    pg_conv c[4];
    pg_packet p;
    unsigned part;
    uint16_t port[4];
    char want[512];
    f->cfg.max_connections = 2 * CAP_PARTITIONS - 1; /* rounded up: 2 each */
    fx_restart(f);
    pg_packet_init(&p);
    p.sport = 41000;
    part = partition_of(&p);
    for (int i = 0; i < 4; i++) {
        sport_in_partition(&p, (uint16_t)(i ? p.sport + 1 : 41000), part, 1);
        port[i] = p.sport;
        conv_start(f, &c[i], &p, 100, 5000);
        c[i].ts_us = 1000000 + i * 1000;
    }
    pg_conv_handshake(&c[0]);
    pg_conv_handshake(&c[1]);
    pg_conv_send(&c[0], 0, "x", 1); /* 0 is now more recent than 1 */
    pg_conv_handshake(&c[2]);       /* evicts 1 */
    pg_conv_close(&c[0]);           /* 0 closes: its slot can be reused */
    pg_conv_handshake(&c[3]);       /* takes 0's slot, no eviction */
    /* ids: the records that opened them, 1, 4, 8 (after 0's data) and 15
     * (after 0's four closing packets) */
    snprintf(want, sizeof want,
             "open 1 10.0.0.1:%u>10.0.0.2:6379 syn\n"
             "open 4 10.0.0.1:%u>10.0.0.2:6379 syn\n"
             "data 1 c 1\n"
             "close 4 evicted\n"
             "open 8 10.0.0.1:%u>10.0.0.2:6379 syn\n"
             "close 1 fin\n"
             "open 15 10.0.0.1:%u>10.0.0.2:6379 syn\n",
             port[0], port[1], port[2], port[3]);
    assert_string_equal(f->log.text, want);
    assert_int_equal(cap_tracker_stats(f->t)->evicted_connections, 1);
    assert_int_equal(cap_tracker_live(f->t), 2);
    cap_tracker_finish(f->t, 2000000);
    assert_int_equal(cap_tracker_live(f->t), 0);
}

/* A full partition does not touch the others: with 1 connection a partition
 * (the cap 64), a connection of another partition opens without evicting,
 * one of the same partition evicts its predecessor there. */
static void test_connection_cap_per_partition(void **state)
{
    fx *f = *state;
    pg_conv a, b, c;
    pg_packet p;
    unsigned part;
    f->cfg.max_connections = CAP_PARTITIONS;
    fx_restart(f);
    pg_packet_init(&p);
    p.sport = 42000;
    part = partition_of(&p);
    conv_start(f, &a, &p, 100, 5000);
    sport_in_partition(&p, 42001, part, 0);
    conv_start(f, &b, &p, 100, 5000);
    sport_in_partition(&p, 42001, part, 1);
    conv_start(f, &c, &p, 100, 5000);
    pg_conv_handshake(&a);
    pg_conv_handshake(&b); /* another partition: a stays */
    assert_int_equal(cap_tracker_stats(f->t)->evicted_connections, 0);
    assert_int_equal(cap_tracker_live(f->t), 2);
    pg_conv_handshake(&c); /* a's partition: a goes */
    assert_int_equal(cap_tracker_stats(f->t)->evicted_connections, 1);
    assert_int_equal(cap_tracker_live(f->t), 2);
    assert_non_null(strstr(f->log.text, "close 1 evicted\n"));
    cap_tracker_finish(f->t, 2000000);
}

/* Ten thousand live connections: the hash grows its buckets as they come
 * and every later packet still finds its connection. */
static void test_many_connections(void **state)
{
    static pg_conv c[10000];
    pg_packet p;
    cap_tracker *t = cap_tracker_new(NULL, NULL, NULL);
    (void)state;
    assert_non_null(t);
    pg_packet_init(&p);
    for (int i = 0; i < 10000; i++) {
        p.sport = (uint16_t)(20000 + i % 40000);
        p.src = i < 5000 ? "10.0.0.1" : "10.0.0.3";
        pg_conv_init(&c[i], &p, (uint32_t)i * 7919u, 5000, 1000000 + i);
        c[i].fn = feed;
        c[i].ctx = t;
        pg_conv_handshake(&c[i]);
        pg_conv_send(&c[i], 0, "x", 1);
    }
    for (int i = 0; i < 10000; i++)
        pg_conv_send(&c[i], 1, "yz", 2);
    assert_int_equal(cap_tracker_live(t), 10000);
    assert_int_equal(cap_tracker_stats(t)->connections, 10000);
    assert_int_equal(cap_tracker_stats(t)->mid_stream, 0);
    assert_int_equal(cap_tracker_stats(t)->stream_bytes[CAP_TO_SERVER], 10000);
    assert_int_equal(cap_tracker_stats(t)->stream_bytes[CAP_TO_CLIENT], 20000);
    cap_tracker_finish(t, 2000000);
    assert_int_equal(cap_tracker_live(t), 0);
    cap_tracker_free(t);
}

/* With no room for out-of-order bytes, a segment ahead of a hole makes the
 * hole a GAP at once; the late segment is then a retransmission. */
static void test_ooo_no_room(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    f->cfg.ooo_bytes_per_conn = 0;
    fx_restart(f);
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    client_at(&c, s, "AAAA");
    client_at(&c, s + 9, "CCCC");
    client_at(&c, s + 4, "BBBBB");
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAA<gap 5>CCCC");
    assert_int_equal(cap_tracker_stats(f->t)->ooo_dropped, 1);
    assert_int_equal(cap_tracker_stats(f->t)->out_of_order, 0);
    assert_int_equal(cap_tracker_stats(f->t)->retransmitted, 1);
}

/* A per-connection cap with room for one held segment: the second gives up
 * the first hole and takes its place. */
static void test_ooo_conn_cap(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    f->cfg.ooo_bytes_per_conn = 3000; /* one 2 KiB chunk, not two */
    fx_restart(f);
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    client_at(&c, s, "AAAA");
    client_at(&c, s + 7, "CCCC");  /* hole of 3 */
    client_at(&c, s + 15, "EEEE"); /* hole of 4: no room */
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAA<gap 3>CCCC<gap 4>EEEE");
    assert_int_equal(cap_tracker_stats(f->t)->ooo_dropped, 1);
    assert_int_equal(cap_tracker_stats(f->t)->out_of_order, 2);
    assert_int_equal(cap_tracker_stats(f->t)->gaps, 2);
}

/* Two connections, in one partition (same) or in two, with 3000 bytes of
 * out-of-order data allowed a partition: each holds 2 bytes beyond a hole,
 * then a's hole is filled. */
static void two_holes(fx *f, pg_conv *a, pg_conv *b, int same)
{
    pg_packet p;
    f->cfg.ooo_bytes_total = 3000 * CAP_PARTITIONS;
    fx_restart(f);
    pg_packet_init(&p);
    conv_start(f, a, &p, 100, 5000);
    sport_in_partition(&p, (uint16_t)(p.sport + 1), partition_of(&p), same);
    conv_start(f, b, &p, 100, 5000);
    pg_conv_handshake(a);
    pg_conv_handshake(b);
    client_at(a, a->next[0] + 2, "aa");
    client_at(b, b->next[0] + 2, "bb");
    client_at(a, a->next[0], "AA");
}

/* The global cap is shared by the connections of a partition (1/64 of it
 * each, capture.h): when one connection holds its partition's share,
 * another's hole there is given up. */
static void test_ooo_global_cap(void **state)
{
    fx *f = *state;
    pg_conv a, b;
    two_holes(f, &a, &b, 1);
    cap_tracker_finish(f->t, b.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAaa");
    /* b was opened by record 4, after a's handshake */
    assert_string_equal(evlog_stream(&f->log, 4, CAP_TO_SERVER), "<gap 2>bb");
    assert_int_equal(cap_tracker_stats(f->t)->ooo_dropped, 1);
}

/* ... and a connection of another partition keeps its hole. */
static void test_ooo_global_cap_per_partition(void **state)
{
    fx *f = *state;
    pg_conv a, b;
    two_holes(f, &a, &b, 0);
    client_at(&b, b.next[0], "BB");
    cap_tracker_finish(f->t, b.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAaa");
    assert_string_equal(evlog_stream(&f->log, 4, CAP_TO_SERVER), "BBbb");
    assert_int_equal(cap_tracker_stats(f->t)->ooo_dropped, 0);
}

/* Held segments that fill the per-connection cap exactly fit (the cap is a
 * limit, not a bound to stay under); one byte less and the second does not. */
static void test_ooo_cap_exact(void **state)
{
    fx *f = *state;
    for (int less = 0; less <= 1; less++) {
        pg_conv c;
        uint32_t s;
        f->cfg.ooo_bytes_per_conn = 2 * (size_t)cap_pool_cost(4, 1) - (size_t)less;
        fx_restart(f);
        conv_start(f, &c, NULL, 100, 5000);
        pg_conv_handshake(&c);
        s = c.next[0];
        client_at(&c, s + 4, "BBBB");  /* held */
        client_at(&c, s + 12, "DDDD"); /* held: the cap is now full, exactly */
        client_at(&c, s, "AAAA");      /* delivers BBBB */
        client_at(&c, s + 8, "CCCC");  /* in order: delivers DDDD */
        cap_tracker_finish(f->t, c.ts_us);
        if (!less) {
            assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "AAAABBBBCCCCDDDD");
            assert_int_equal(cap_tracker_stats(f->t)->ooo_dropped, 0);
            assert_int_equal(cap_tracker_stats(f->t)->gaps, 0);
        } else {
            assert_int_equal(cap_tracker_stats(f->t)->ooo_dropped, 1);
        }
    }
}

/* Segments absurdly far from the expected sequence number are dropped and
 * counted, not turned into gigabyte gaps. */
static void test_out_of_window(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    client_at(&c, s + 0x60000000u, "far");
    client_at(&c, s - 0x60000000u, "old");
    client_at(&c, s, "ok");
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "ok");
    assert_int_equal(cap_tracker_stats(f->t)->out_of_window, 2);
    assert_int_equal(cap_tracker_stats(f->t)->gaps, 0);
}

/* Capture time going backwards is counted; nothing else changes. */
static void test_time_backwards(void **state)
{
    fx *f = *state;
    pg_conv c;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    c.ts_us -= 1000;
    pg_conv_send(&c, 0, "x", 1);
    cap_tracker_finish(f->t, 0);
    assert_int_equal(cap_tracker_stats(f->t)->time_backwards, 1);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "x");
    /* CLOSE at end carries the latest time seen, not the 0 given. */
    assert_int_equal(evlog_conn_by_id(&f->log, 1)->close_ts, 1000020);
}

/* Data beyond a FIN is not part of the stream. */
static void test_data_after_fin(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    assert_int_equal(pg_conv_send_at(&c, 0, s, PG_FIN | PG_ACK, "bye", 3), 0);
    client_at(&c, s + 4, "ghost");
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "bye");
    assert_int_equal(cap_tracker_stats(f->t)->out_of_window, 1);
}

/* A retransmission whose last byte is the last before the FIN is a
 * retransmission (nothing new, nothing lost), not data after the FIN; one
 * byte further would be. */
static void test_retransmit_ending_at_fin(void **state)
{
    fx *f = *state;
    pg_conv c;
    uint32_t s;
    conv_start(f, &c, NULL, 100, 5000);
    pg_conv_handshake(&c);
    s = c.next[0];
    assert_int_equal(pg_conv_send_at(&c, 0, s, PG_FIN | PG_ACK, "bye", 3), 0);
    client_at(&c, s + 1, "ye");
    cap_tracker_finish(f->t, c.ts_us);
    assert_string_equal(evlog_stream(&f->log, 1, CAP_TO_SERVER), "bye");
    assert_int_equal(cap_tracker_stats(f->t)->retransmitted, 1);
    assert_int_equal(cap_tracker_stats(f->t)->out_of_window, 0);
    assert_int_equal(cap_tracker_stats(f->t)->gaps, 0);
}

/* The flow hash spreads endpoints whose address and port vary together (a
 * client subnet with a port range, NAT): 100000 clients of one server over
 * 2^18 buckets cost about load/2 = 0.19 extra chain steps a lookup. (When
 * the port was xored over the address bytes this input cost 11.) */
static void test_flow_hash_spread(void **state)
{
    const uint32_t n = 100000, mask = (1u << 18) - 1;
    uint32_t *count = calloc(mask + 1, sizeof *count);
    cap_endpoint client, server;
    uint64_t extra = 0;
    (void)state;
    assert_non_null(count);
    memset(&client, 0, sizeof client);
    memset(&server, 0, sizeof server);
    client.addr.family = server.addr.family = 4;
    server.addr.bytes[0] = 10;
    server.addr.bytes[3] = 1;
    server.port = 6379;
    for (uint32_t c = 0; c < n; c++) {
        uint32_t h;
        client.addr.bytes[0] = 10;
        client.addr.bytes[1] = (uint8_t)(1 + (c >> 16));
        client.addr.bytes[2] = (uint8_t)(c >> 8);
        client.addr.bytes[3] = (uint8_t)c;
        client.port = (uint16_t)(40000 + c % 20000);
        h = cap_flows_hash(&client, &server);
        assert_int_equal(h, cap_flows_hash(&server, &client)); /* symmetric */
        extra += count[h & mask]++; /* flows ahead of it in its chain */
    }
    assert_true(extra * 100 / n <= 25);
    free(count);
}

/* Address text forms round-trip. */
static void test_addr(void **state)
{
    cap_endpoint ep, ep2;
    cap_addr a;
    char buf[CAP_ENDPOINT_STRLEN];
    (void)state;
    assert_int_equal(cap_endpoint_parse("127.0.0.1:6379", &ep), 0);
    assert_int_equal(ep.addr.family, 4);
    assert_int_equal(ep.port, 6379);
    cap_endpoint_format(&ep, buf, sizeof buf);
    assert_string_equal(buf, "127.0.0.1:6379");
    assert_int_equal(cap_endpoint_parse("[::1]:7000", &ep), 0);
    cap_endpoint_format(&ep, buf, sizeof buf);
    assert_string_equal(buf, "[::1]:7000");
    assert_int_equal(cap_endpoint_parse("fe80::1:7001", &ep2), 0);
    cap_endpoint_format(&ep2, buf, sizeof buf);
    assert_string_equal(buf, "[fe80::1]:7001");
    assert_false(cap_endpoint_equal(&ep, &ep2));
    ep2 = ep;
    assert_true(cap_endpoint_equal(&ep, &ep2));
    assert_int_equal(cap_addr_parse("2001:db8::1", &a), 0);
    assert_int_equal(cap_addr_format(&a, buf, sizeof buf), strlen("2001:db8::1"));
    assert_string_equal(buf, "2001:db8::1");
    assert_int_equal(cap_addr_format(&a, buf, 5), 4); /* truncated to fit */
    assert_string_equal(buf, "2001");
    assert_int_equal(cap_addr_parse("10.0.0.256", &a), -1);
    assert_int_equal(cap_endpoint_parse("10.0.0.1", &ep), -1);
    assert_int_equal(cap_endpoint_parse("10.0.0.1:65536", &ep), -1);
    assert_int_equal(cap_endpoint_parse("10.0.0.1:", &ep), -1);
    assert_int_equal(cap_endpoint_parse("[::1:6379", &ep), -1);
    assert_int_equal(cap_endpoint_parse("host:6379", &ep), -1);
    assert_string_equal(cap_close_reason_name(CAP_CLOSE_REUSED), "reused");
    assert_string_equal(cap_close_reason_name(99), "?");
    assert_string_equal(cap_side_source_name(CAP_SIDE_SHAPE), "shape");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reordered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlap_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlap_delivered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlap_held_span, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sequence_wrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_segment_acked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_acked_unseen_gap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_segment_ack_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ack_beyond_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_before_fin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hole_at_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mid_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mid_stream_start_hole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_hole_before_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive_mid_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive_mid_stream_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive_and_window_probes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mid_stream_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mid_stream_guess, setup, teardown),
        cmocka_unit_test_setup_teardown(test_configured_ports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_port_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_syn_retransmit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_synack_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snaplen_truncated, setup, teardown),
        cmocka_unit_test(test_link_types),
        cmocka_unit_test(test_vlan),
        cmocka_unit_test(test_ip_options_and_ext),
        cmocka_unit_test_setup_teardown(test_not_tcp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_padding_and_tso, setup, teardown),
        cmocka_unit_test_setup_teardown(test_superframe_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_superframe_snaplen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_cap_per_partition, setup, teardown),
        cmocka_unit_test(test_many_connections),
        cmocka_unit_test_setup_teardown(test_ooo_no_room, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ooo_conn_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ooo_global_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ooo_global_cap_per_partition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_backwards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ooo_cap_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retransmit_ending_at_fin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_after_fin, setup, teardown),
        cmocka_unit_test(test_addr),
        cmocka_unit_test(test_flow_hash_spread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
