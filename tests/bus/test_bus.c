/*
 * test_bus.c - the cluster-bus decoder (bus/).
 *
 * Crafted messages of every type are built here from the layout in bus.h,
 * decoded whole, fed as one stream byte by byte and split at every offset;
 * hostile lengths and garbage are counted exactly; a real Redis 7.0 cluster's
 * bus traffic (tests/fixtures/bus/failovers.pcap: a manual failover, a
 * takeover and an automatic failover, see tests/fixtures/bus/README.md) goes
 * through capture/ and is checked against what CLUSTER NODES said during the
 * run. SS_BUS_DUMP=1 prints every message of the fixture.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bus/bus.h"
#include "capture/capture.h"

/* ------------------------------------------------------------ building */

typedef struct msgbuf {
    uint8_t b[16384];
    size_t len;
} msgbuf;

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, v >> 16);
    put16(p + 2, v & 0xffff);
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

/* A name of 40 characters made of one repeated hex digit. */
static void put_name(uint8_t *p, char c) { memset(p, c, BUS_NAMELEN); }

/* The fixed header of a message of the given type from node `who`. */
static void header(msgbuf *m, unsigned type, char who)
{
    memset(m, 0, sizeof *m);
    memcpy(m->b, "RCmb", 4);
    put16(m->b + 8, 1);
    put16(m->b + 10, 7000);
    put16(m->b + 12, type);
    put64(m->b + 16, 12);           /* currentEpoch */
    put64(m->b + 24, 7);            /* configEpoch */
    put64(m->b + 32, 123456789012); /* offset */
    put_name(m->b + 40, who);
    m->b[80] = 0x05;                /* slots 0 and 2 */
    m->b[80 + 2047] = 0x80;         /* slot 16383 */
    memcpy(m->b + 2168, "127.0.0.1", 9);
    put16(m->b + 2246, 0);
    put16(m->b + 2248, 17000);
    put16(m->b + 2250, BUS_NODE_MASTER);
    m->len = BUS_HEADER_LEN;
}

static void set_totlen(msgbuf *m) { put32(m->b + 4, (uint32_t)m->len); }

/* A PING/PONG with n gossip entries and, when ext, all four extensions. */
static void make_ping(msgbuf *m, unsigned type, char who, unsigned n, int ext)
{
    header(m, type, who);
    put16(m->b + 14, n);
    for (unsigned i = 0; i < n; i++) {
        uint8_t *g = m->b + m->len;
        put_name(g, (char)('a' + i));
        put32(g + 40, 1000 + i);
        put32(g + 44, 2000 + i);
        snprintf((char *)g + 48, BUS_IPLEN, "127.0.0.%u", 10 + i);
        put16(g + 94, 7001 + i);
        put16(g + 96, 17001 + i);
        put16(g + 98, i % 2 ? BUS_NODE_REPLICA : BUS_NODE_MASTER | BUS_NODE_PFAIL);
        m->len += BUS_GOSSIP_LEN;
    }
    if (ext) {
        m->b[2253] |= BUS_MFLAG_EXT;
        put16(m->b + 2214, 4);
        static const char *const texts[2] = {"node1.example", "cache-a"};
        for (unsigned t = 0; t < 2; t++) { /* hostname, human node name */
            size_t dl = (strlen(texts[t]) + 1 + 7) / 8 * 8;
            put32(m->b + m->len, (uint32_t)(8 + dl));
            put16(m->b + m->len + 4, t);
            memcpy(m->b + m->len + 8, texts[t], strlen(texts[t]));
            m->len += 8 + dl;
        }
        put32(m->b + m->len, 8 + 48); /* forgotten node */
        put16(m->b + m->len + 4, 2);
        put_name(m->b + m->len + 8, 'f');
        put64(m->b + m->len + 48, 55);
        m->len += 8 + 48;
        put32(m->b + m->len, 8 + 40); /* shard id */
        put16(m->b + m->len + 4, 3);
        put_name(m->b + m->len + 8, '9');
        m->len += 8 + 40;
    }
    set_totlen(m);
}

static void make_fail(msgbuf *m, char who, char about)
{
    header(m, BUS_FAIL, who);
    put_name(m->b + m->len, about);
    m->len += BUS_NAMELEN;
    set_totlen(m);
}

static void make_update(msgbuf *m, char who, char owner, uint64_t epoch)
{
    header(m, BUS_UPDATE, who);
    put64(m->b + m->len, epoch);
    put_name(m->b + m->len + 8, owner);
    m->b[m->len + 8 + 40 + 1] = 0xff; /* slots 8..15 */
    m->len += 8 + 40 + BUS_SLOT_BYTES;
    set_totlen(m);
}

static void make_plain(msgbuf *m, unsigned type, char who)
{
    header(m, type, who);
    set_totlen(m);
}

/* PUBLISH of a channel and message of the given lengths (bytes 'x'). */
static void make_publish(msgbuf *m, char who, uint32_t clen, uint32_t mlen)
{
    header(m, BUS_PUBLISH, who);
    put32(m->b + m->len, clen);
    put32(m->b + m->len + 4, mlen);
    memset(m->b + m->len + 8, 'x', clen + mlen);
    m->len += 8 + clen + mlen;
    set_totlen(m);
}

/* ------------------------------------------------------------ decoding */

static void test_decode_ping(void **state)
{
    (void)state;
    msgbuf m;
    make_ping(&m, BUS_PING, '1', 3, 1);
    bus_msg d;
    assert_int_equal(bus_decode(m.b, m.len, &d), 0);
    assert_int_equal(d.type, BUS_PING);
    assert_int_equal(d.whole, 1);
    assert_int_equal(d.totlen, m.len);
    assert_int_equal(d.port, 7000);
    assert_int_equal(d.cport, 17000);
    assert_int_equal(d.current_epoch, 12);
    assert_int_equal(d.config_epoch, 7);
    assert_true(d.offset == 123456789012ull);
    assert_int_equal(strlen(d.sender), 40);
    assert_int_equal(d.sender[39], '1');
    assert_string_equal(d.master, "");
    assert_string_equal(d.ip, "127.0.0.1");
    assert_int_equal(d.flags, BUS_NODE_MASTER);
    assert_int_equal(bus_slots_count(d.slots), 3);
    assert_true(bus_slot_claimed(d.slots, 0) && bus_slot_claimed(d.slots, 2));
    assert_false(bus_slot_claimed(d.slots, 1));
    assert_true(bus_slot_claimed(d.slots, 16383));
    assert_int_equal(d.count, 3);
    bus_gossip g;
    bus_msg_gossip(&d, 2, &g);
    assert_int_equal(g.name[0], 'c');
    assert_int_equal(g.ping_sent, 1002);
    assert_int_equal(g.pong_received, 2002);
    assert_string_equal(g.ip, "127.0.0.12");
    assert_int_equal(g.port, 7003);
    assert_int_equal(g.cport, 17003);
    assert_int_equal(g.flags, BUS_NODE_MASTER | BUS_NODE_PFAIL);
    bus_msg_gossip(&d, 3, &g); /* past the end: empty */
    assert_string_equal(g.name, "");
    assert_string_equal(d.hostname, "node1.example");
    assert_string_equal(d.human_name, "cache-a");
    assert_int_equal(d.forgotten, 1);
    assert_int_equal(d.forgotten_first[0], 'f');
    assert_int_equal(strlen(d.shard_id), 40);
    assert_int_equal(d.shard_id[0], '9');
}

static void test_decode_types(void **state)
{
    (void)state;
    msgbuf m;
    bus_msg d;
    make_fail(&m, '1', '2');
    assert_int_equal(bus_decode(m.b, m.len, &d), 0);
    assert_int_equal(d.type, BUS_FAIL);
    assert_int_equal(d.about[0], '2');
    assert_int_equal(strlen(d.about), 40);

    make_update(&m, '1', '3', 99);
    assert_int_equal(bus_decode(m.b, m.len, &d), 0);
    assert_int_equal(d.update_epoch, 99);
    assert_int_equal(d.about[0], '3');
    assert_int_equal(bus_slots_count(d.update_slots), 8);
    assert_true(bus_slot_claimed(d.update_slots, 8));
    assert_false(bus_slot_claimed(d.update_slots, 7));

    for (unsigned t = BUS_AUTH_REQUEST; t <= BUS_MFSTART; t++) {
        if (t == BUS_UPDATE)
            continue;
        make_plain(&m, t, '4');
        assert_int_equal(bus_decode(m.b, m.len, &d), 0);
        assert_int_equal(d.type, t);
    }
    make_publish(&m, '5', 3, 10);
    assert_int_equal(bus_decode(m.b, m.len, &d), 0);
    assert_int_equal(d.channel_len, 3);
    assert_int_equal(d.message_len, 10);
    assert_string_equal(bus_type_name(BUS_AUTH_ACK), "auth-ack");
    assert_string_equal(bus_type_name(77), "?");
}

/* Every length that disagrees with totlen or with itself is refused. */
static void test_decode_hostile(void **state)
{
    (void)state;
    msgbuf m;
    bus_msg d;
    make_ping(&m, BUS_PONG, '1', 2, 0);
    put16(m.b + 14, 3); /* one gossip entry more than there is */
    assert_int_equal(bus_decode(m.b, m.len, &d), -1);
    put16(m.b + 14, 1); /* one less: bytes left over */
    assert_int_equal(bus_decode(m.b, m.len, &d), -1);

    make_ping(&m, BUS_PING, '1', 0, 1);
    size_t first_ext = BUS_HEADER_LEN;
    put32(m.b + first_ext, 4); /* extension shorter than its own header */
    assert_int_equal(bus_decode(m.b, m.len, &d), -1);
    put32(m.b + first_ext, 0xfffffff0u); /* past the end */
    assert_int_equal(bus_decode(m.b, m.len, &d), -1);

    make_ping(&m, BUS_PING, '1', 0, 1);
    put16(m.b + 2214, 5); /* one extension more than there is */
    assert_int_equal(bus_decode(m.b, m.len, &d), -1);

    make_fail(&m, '1', '2');
    assert_int_equal(bus_decode(m.b, m.len - 1, &d), -1); /* totlen disagrees */
    put16(m.b + 8, 2);                                      /* version 2 */
    assert_int_equal(bus_decode(m.b, m.len, &d), -1);

    make_publish(&m, '1', 3, 10);
    put32(m.b + BUS_HEADER_LEN + 4, 0xffffffffu); /* lengths overflow 32 bits */
    assert_int_equal(bus_decode(m.b, m.len, &d), -1);

    make_plain(&m, BUS_MFSTART, '1');
    m.b[m.len++] = 0; /* MFSTART carries no data */
    set_totlen(&m);
    assert_int_equal(bus_decode(m.b, m.len, &d), -1);

    /* a hostname that fills its extension without a NUL is cut, not overread */
    make_ping(&m, BUS_PING, '1', 0, 0);
    m.b[2253] |= BUS_MFLAG_EXT;
    put16(m.b + 2214, 1);
    put32(m.b + m.len, 8 + 400);
    put16(m.b + m.len + 4, 0);
    memset(m.b + m.len + 8, 'h', 400);
    m.len += 408;
    set_totlen(&m);
    assert_int_equal(bus_decode(m.b, m.len, &d), 0);
    assert_int_equal(strlen(d.hostname), BUS_TEXT_MAX - 1);
    assert_int_equal(d.text_cut, 1);

    uint8_t short_sig[3] = {'R', 'C', 'm'};
    assert_int_equal(bus_signature(short_sig, 3), 0);
    assert_int_equal(bus_signature((const uint8_t *)"*1\r\n$4\r\nPING\r\n", 14), -1);
    make_fail(&m, '1', '2');
    assert_int_equal(bus_signature(m.b, 16), 1);
    put32(m.b + 4, 100); /* shorter than a header */
    assert_int_equal(bus_signature(m.b, 16), -1);
}

/* ------------------------------------------------------------ streams */

typedef struct seen {
    unsigned n;
    uint16_t type[64];
    char sender0[64];
    uint8_t whole[64];
    int64_t ts[64];
} seen;

static void on_msg(void *ctx, const bus_msg *m, int64_t ts_us)
{
    seen *s = ctx;
    if (s->n < 64) {
        s->type[s->n] = m->type;
        s->sender0[s->n] = m->sender[0];
        s->whole[s->n] = m->whole;
        s->ts[s->n] = ts_us;
    }
    s->n++;
}

/* A stream of one message of each kind, in a buffer. */
static size_t build_stream(uint8_t *out, size_t cap)
{
    msgbuf m;
    size_t n = 0;
    make_ping(&m, BUS_PING, '1', 3, 1);
    assert_true(n + m.len <= cap);
    memcpy(out + n, m.b, m.len), n += m.len;
    make_ping(&m, BUS_PONG, '2', 0, 0);
    memcpy(out + n, m.b, m.len), n += m.len;
    make_fail(&m, '3', '1');
    memcpy(out + n, m.b, m.len), n += m.len;
    make_update(&m, '4', '2', 5);
    memcpy(out + n, m.b, m.len), n += m.len;
    make_plain(&m, BUS_AUTH_REQUEST, '5');
    memcpy(out + n, m.b, m.len), n += m.len;
    make_publish(&m, '6', 5, 20);
    assert_true(n + m.len <= cap);
    memcpy(out + n, m.b, m.len), n += m.len;
    return n;
}

static void check_stream_seen(const seen *s, const bus_stats *st)
{
    static const uint16_t types[6] = {BUS_PING, BUS_PONG, BUS_FAIL, BUS_UPDATE,
                                      BUS_AUTH_REQUEST, BUS_PUBLISH};
    assert_int_equal(s->n, 6);
    for (unsigned i = 0; i < 6; i++) {
        assert_int_equal(s->type[i], types[i]);
        assert_int_equal(s->sender0[i], '1' + (int)i);
        assert_int_equal(s->whole[i], 1);
    }
    assert_int_equal(st->messages, 6);
    assert_int_equal(st->bad, 0);
    assert_int_equal(st->resyncs, 0);
    assert_int_equal(st->skipped_bytes, 0);
}

static uint8_t g_stream[65536];

static void test_stream_splits(void **state)
{
    (void)state;
    size_t n = build_stream(g_stream, sizeof g_stream);
    { /* whole */
        seen s = {0};
        bus_stream *bs = bus_stream_new(0, on_msg, &s);
        bus_stream_feed(bs, g_stream, n, 1);
        check_stream_seen(&s, bus_stream_stats(bs));
        bus_stream_free(bs);
    }
    { /* byte by byte */
        seen s = {0};
        bus_stream *bs = bus_stream_new(0, on_msg, &s);
        for (size_t i = 0; i < n; i++)
            bus_stream_feed(bs, g_stream + i, 1, (int64_t)i);
        check_stream_seen(&s, bus_stream_stats(bs));
        /* each message is delivered at the time of the byte that ended it */
        msgbuf first;
        make_ping(&first, BUS_PING, '1', 3, 1);
        assert_int_equal(s.ts[0], (int64_t)first.len - 1);
        bus_stream_free(bs);
    }
    for (size_t cut = 1; cut < n; cut += 7) { /* two pieces, cut everywhere */
        seen s = {0};
        bus_stream *bs = bus_stream_new(0, on_msg, &s);
        bus_stream_feed(bs, g_stream, cut, 1);
        bus_stream_feed(bs, g_stream + cut, n - cut, 2);
        check_stream_seen(&s, bus_stream_stats(bs));
        bus_stream_free(bs);
    }
}

/* After a gap, garbage and a cut message are passed over, counted exactly,
 * and decoding resumes at the next message, wherever the chunks are cut. */
static void test_stream_gap_resync(void **state)
{
    (void)state;
    size_t n = build_stream(g_stream, sizeof g_stream);
    msgbuf first;
    make_ping(&first, BUS_PING, '1', 3, 1);
    /* the stream after a loss: the second half of the first message (which
     * holds no "RCmb"), then the rest */
    size_t lost = first.len / 2;
    const uint8_t *after = g_stream + lost;
    size_t after_len = n - lost;
    size_t garbage = first.len - lost;
    for (size_t piece = 1; piece <= 64; piece = piece * 2 + 1) {
        seen s = {0};
        bus_stream *bs = bus_stream_new(0, on_msg, &s);
        bus_stream_gap(bs);
        for (size_t i = 0; i < after_len; i += piece) {
            size_t k = after_len - i < piece ? after_len - i : piece;
            bus_stream_feed(bs, after + i, k, 1);
        }
        const bus_stats *st = bus_stream_stats(bs);
        assert_int_equal(s.n, 5);
        assert_int_equal(s.type[0], BUS_PONG);
        assert_int_equal(st->resyncs, 1);
        assert_int_equal(st->skipped_bytes, garbage);
        assert_int_equal(st->bad, 0);
        bus_stream_free(bs);
    }
}

/* A length no node sends loses the framing; the next message is found. */
static void test_stream_bad_length(void **state)
{
    (void)state;
    msgbuf a, b;
    make_fail(&a, '1', '2');
    put32(a.b + 4, 12); /* below the header length */
    make_fail(&b, '3', '4');
    uint8_t buf[8192];
    memcpy(buf, a.b, a.len);
    memcpy(buf + a.len, b.b, b.len);
    seen s = {0};
    bus_stream *bs = bus_stream_new(0, on_msg, &s);
    bus_stream_feed(bs, buf, a.len + b.len, 1);
    const bus_stats *st = bus_stream_stats(bs);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.sender0[0], '3');
    assert_int_equal(st->resyncs, 1);
    assert_int_equal(st->skipped_bytes, a.len);
    bus_stream_free(bs);

    /* framed but invalid inside, and an unknown type: skipped by totlen */
    make_ping(&a, BUS_PING, '1', 2, 0);
    put16(a.b + 14, 1);
    make_plain(&b, 42, '2');
    msgbuf c;
    make_plain(&c, BUS_MFSTART, '3');
    size_t k = 0;
    memcpy(buf + k, a.b, a.len), k += a.len;
    memcpy(buf + k, b.b, b.len), k += b.len;
    memcpy(buf + k, c.b, c.len), k += c.len;
    seen s2 = {0};
    bs = bus_stream_new(0, on_msg, &s2);
    bus_stream_feed(bs, buf, k, 1);
    st = bus_stream_stats(bs);
    assert_int_equal(s2.n, 1);
    assert_int_equal(s2.type[0], BUS_MFSTART);
    assert_int_equal(st->bad, 1);
    assert_int_equal(st->unknown_type, 1);
    assert_int_equal(st->resyncs, 0);
    bus_stream_free(bs);
}

/* A message longer than keep_max: header only, the rest skipped, the next
 * one decoded, whether it arrives whole or byte by byte. */
static void test_stream_long_message(void **state)
{
    (void)state;
    static msgbuf big;
    make_publish(&big, '1', 100, 9000);
    msgbuf next;
    make_plain(&next, BUS_AUTH_ACK, '2');
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        seen s = {0};
        bus_stream *bs = bus_stream_new(BUS_HEADER_LEN + 4096, on_msg, &s);
        if (bytewise) {
            for (size_t i = 0; i < big.len; i++)
                bus_stream_feed(bs, big.b + i, 1, 1);
        } else {
            bus_stream_feed(bs, big.b, big.len, 1);
        }
        bus_stream_feed(bs, next.b, next.len, 2);
        const bus_stats *st = bus_stream_stats(bs);
        assert_int_equal(s.n, 2);
        assert_int_equal(s.type[0], BUS_PUBLISH);
        assert_int_equal(s.whole[0], 0);
        assert_int_equal(s.sender0[0], '1'); /* the header itself, not payload */
        assert_int_equal(s.type[1], BUS_AUTH_ACK);
        assert_int_equal(st->header_only, 1);
        assert_int_equal(st->bad, 0);
        bus_stream_free(bs);
    }
}

/* ------------------------------------------------------------ a real cluster */

#define MAX_NODES 8

/* What the fixture's bus traffic told, gathered across its connections. */
typedef struct cluster_view {
    bus_stats st;
    unsigned n_nodes;
    char id[MAX_NODES][BUS_NAMELEN + 1];
    uint16_t port[MAX_NODES];
    uint64_t max_config_epoch[MAX_NODES];
    unsigned mfstart, auth_req, auth_ack, fail, update;
    char mfstart_sender[BUS_NAMELEN + 1];
    char fail_about[BUS_NAMELEN + 1];
    uint64_t max_current_epoch;
    unsigned bad_gossip;
    int dump;
} cluster_view;

typedef struct conn_streams {
    bus_stream *dir[2];
} conn_streams;

static void on_real_msg(void *ctx, const bus_msg *m, int64_t ts_us)
{
    cluster_view *v = ctx;
    if (v->dump)
        printf("%lld %-12s %.40s port %u cport %u flags 0x%x epoch %llu/%llu master %.40s "
               "slots %u count %u about %.40s\n",
               (long long)ts_us, bus_type_name(m->type), m->sender, m->port, m->cport, m->flags,
               (unsigned long long)m->current_epoch, (unsigned long long)m->config_epoch,
               m->master, bus_slots_count(m->slots), m->count, m->about);
    unsigned i = 0;
    while (i < v->n_nodes && strcmp(v->id[i], m->sender) != 0)
        i++;
    if (i == v->n_nodes && i < MAX_NODES) {
        strcpy(v->id[i], m->sender);
        v->port[i] = m->port;
        v->n_nodes++;
    }
    if (i < MAX_NODES && (m->flags & BUS_NODE_MASTER) && m->config_epoch > v->max_config_epoch[i])
        v->max_config_epoch[i] = m->config_epoch;
    if (m->current_epoch > v->max_current_epoch)
        v->max_current_epoch = m->current_epoch;
    for (unsigned g = 0; g < m->count; g++) {
        bus_gossip gs;
        bus_msg_gossip(m, g, &gs);
        if (strlen(gs.name) != BUS_NAMELEN || gs.port < 30600 || gs.port > 30605 ||
            gs.cport != gs.port + 10000)
            v->bad_gossip++;
    }
    switch (m->type) {
    case BUS_MFSTART:
        v->mfstart++;
        strcpy(v->mfstart_sender, m->sender);
        break;
    case BUS_AUTH_REQUEST: v->auth_req++; break;
    case BUS_AUTH_ACK: v->auth_ack++; break;
    case BUS_FAIL:
        if (v->fail++ == 0)
            strcpy(v->fail_about, m->about);
        break;
    case BUS_UPDATE: v->update++; break;
    default: break;
    }
}

static cluster_view *g_view;

static void on_cap(void *ctx, const cap_event *ev)
{
    (void)ctx;
    conn_streams *cs = ev->conn->user;
    switch (ev->kind) {
    case CAP_EV_OPEN:
        cs = calloc(1, sizeof *cs);
        assert_non_null(cs);
        for (int d = 0; d < 2; d++) {
            cs->dir[d] = bus_stream_new(0, on_real_msg, g_view);
            if (!ev->conn->saw_syn) /* picked up mid-stream: find a message first */
                bus_stream_gap(cs->dir[d]);
        }
        ev->conn->user = cs;
        break;
    case CAP_EV_DATA:
        bus_stream_feed(cs->dir[ev->dir], ev->data, ev->len, ev->ts_us);
        break;
    case CAP_EV_GAP:
        bus_stream_gap(cs->dir[ev->dir]);
        break;
    case CAP_EV_CLOSE:
        for (int d = 0; d < 2; d++) {
            bus_stats_add(&g_view->st, bus_stream_stats(cs->dir[d]));
            bus_stream_free(cs->dir[d]);
        }
        free(cs);
        ev->conn->user = NULL;
        break;
    }
}

static const char *node_ids[6] = {
    "917a37e3aa62f813bde11134d901f2cc1626a9b5", /* 30600 */
    "92a093cc5682219b3506d2be23cd6e6972b8f6fb", /* 30601 */
    "6b97a30dae59d5433883fbcb002a12a368010de5", /* 30602 */
    "39273c9a6dc75c64fa2a58a11b7cebbab04a6c57", /* 30603 */
    "04192e5b4abc6be229d3eeb3b5f24a07aa83ecd0", /* 30604 */
    "47d7b335333cc19102280ab8fec920a6df3174c1", /* 30605 */
};

static void test_real_cluster(void **state)
{
    (void)state;
    static cluster_view v;
    memset(&v, 0, sizeof v);
    v.dump = getenv("SS_BUS_DUMP") != NULL;
    g_view = &v;
    const char *path = SS_FIXTURES "/bus/failovers.pcap";
    char err[256];
    cap_source *src = cap_open_files(&path, 1, err, sizeof err);
    assert_non_null(src);
    cap_config cfg;
    cap_config_defaults(&cfg);
    cap_tracker *t = cap_tracker_new(&cfg, on_cap, NULL);
    assert_non_null(t);
    assert_true(cap_source_run(src, t, err, sizeof err) >= 0);
    cap_tracker_finish(t, 0);
    cap_tracker_free(t);
    cap_source_free(src);

    /* every message framed and valid: nothing skipped, nothing bad; the
     * counts by type are those scripts/bus-count.py finds (tshark payloads) */
    assert_int_equal(v.st.messages, 468);
    assert_int_equal(v.st.by_type[BUS_PING], 218);
    assert_int_equal(v.st.by_type[BUS_PONG], 224);
    assert_int_equal(v.st.bad, 0);
    assert_int_equal(v.st.unknown_type, 0);
    assert_int_equal(v.st.skipped_bytes, 0);
    assert_int_equal(v.bad_gossip, 0);
    /* the six nodes, each with the id and port CLUSTER NODES gave */
    assert_int_equal(v.n_nodes, 6);
    for (unsigned k = 0; k < 6; k++) {
        unsigned i = 0;
        while (i < v.n_nodes && strcmp(v.id[i], node_ids[k]) != 0)
            i++;
        assert_true(i < v.n_nodes);
        assert_int_equal(v.port[i], 30600 + k);
    }
    /* the manual failover of 30605: MFSTART from it; the three failovers'
     * elections: votes asked and given; 30601 declared failed when stopped */
    assert_int_equal(v.mfstart, 1);
    assert_string_equal(v.mfstart_sender, node_ids[5]);
    assert_int_equal(v.auth_req, 10);
    assert_int_equal(v.auth_ack, 5);
    assert_int_equal(v.fail, 5);
    assert_int_equal(v.update, 5);
    assert_string_equal(v.fail_about, node_ids[1]);
    /* final epochs as CLUSTER NODES showed them: 30605 at 8, 30604 at 9
     * (takeover), 30603 at 10 (automatic failover) */
    for (unsigned i = 0; i < v.n_nodes; i++) {
        if (strcmp(v.id[i], node_ids[5]) == 0)
            assert_int_equal(v.max_config_epoch[i], 8);
        if (strcmp(v.id[i], node_ids[4]) == 0)
            assert_int_equal(v.max_config_epoch[i], 9);
        if (strcmp(v.id[i], node_ids[3]) == 0)
            assert_int_equal(v.max_config_epoch[i], 10);
    }
    assert_int_equal(v.max_current_epoch, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_ping),
        cmocka_unit_test(test_decode_types),
        cmocka_unit_test(test_decode_hostile),
        cmocka_unit_test(test_stream_splits),
        cmocka_unit_test(test_stream_gap_resync),
        cmocka_unit_test(test_stream_bad_length),
        cmocka_unit_test(test_stream_long_message),
        cmocka_unit_test(test_real_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
