/*
 * test_resp_events.c - the two decoders alone, through decode.h: a recording
 * owner stands in for the pairer, and the events each decoder hands out
 * (begin, done, dropped, error, resynced, keep) are checked, for every split
 * of the stream into two chunks. Nothing of pair.c or conn.c is involved.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "resp/decode.h"

#define MAX_EV 32

/* One event as the owner saw it. */
typedef struct ev {
    char what;              /* 'b' begin, 'd' done, 'x' dropped, 'e' error, 'r' resynced */
    int limit;              /* error: a cap was passed */
    uint8_t name_len;       /* request done */
    char name[RESP_NAME_MAX];
    uint64_t bytes;         /* done: the message's length */
    int32_t slot;           /* request done */
    uint32_t argc;
    resp_type type;         /* reply done */
    int64_t integer;
    int64_t elements;
    uint64_t end_pos;
    char elem0[RD_ELEM0_MAX + 1];
} ev;

/* The recording owner. */
typedef struct owner {
    ev evs[MAX_EV];
    int n;
    resp_request req;
    resp_reply rep;
    rp_dec *rpd;            /* reply side: the decoder, to read its facts */
    int keep;               /* ask for the raw bytes of every reply */
    uint8_t kept[256];
    size_t kept_len;
} owner;

static ev *add(owner *o, char what)
{
    assert_true(o->n < MAX_EV);
    ev *e = &o->evs[o->n++];
    memset(e, 0, sizeof(*e));
    e->what = what;
    return e;
}

static resp_request *rq_begin_ev(void *v, int64_t ts)
{
    owner *o = v;
    add(o, 'b');
    memset(&o->req, 0, sizeof(o->req));
    o->req.slot = -1;
    o->req.start_us = ts;
    return &o->req;
}

static void rq_done_ev(void *v, uint8_t name_len)
{
    owner *o = v;
    ev *e = add(o, 'd');
    e->name_len = name_len;
    memcpy(e->name, o->req.name, sizeof(e->name));
    e->bytes = o->req.bytes;
    e->slot = o->req.slot;
    e->argc = o->req.argc;
}

static void rq_dropped_ev(void *v) { add(v, 'x'); }
static void rq_error_ev(void *v, int limit) { add(v, 'e')->limit = limit; }
static void rq_resynced_ev(void *v) { add(v, 'r'); }

static const rq_out rec_rq_out = {rq_begin_ev, rq_done_ev, rq_dropped_ev, rq_error_ev,
                                  rq_resynced_ev};

static resp_reply *rp_begin_ev(void *v, int64_t ts)
{
    owner *o = v;
    add(o, 'b');
    memset(&o->rep, 0, sizeof(o->rep));
    o->rep.redir.slot = -1;
    o->rep.start_us = ts;
    o->rpd->keeping = (uint8_t)o->keep;
    return &o->rep;
}

static void rp_done_ev(void *v)
{
    owner *o = v;
    ev *e = add(o, 'd');
    e->type = o->rep.type;
    e->integer = o->rep.integer;
    e->elements = o->rep.elements;
    e->bytes = o->rep.bytes;
    e->end_pos = o->rep.end_pos;
    if (o->rpd->elem0_set)
        memcpy(e->elem0, o->rpd->elem0, o->rpd->elem0_len);
}

static void rp_keep_ev(void *v, const uint8_t *p, size_t n)
{
    owner *o = v;
    assert_true(o->kept_len + n <= sizeof(o->kept));
    memcpy(o->kept + o->kept_len, p, n);
    o->kept_len += n;
}

static void rp_error_ev(void *v, int limit) { add(v, 'e')->limit = limit; }

static const rp_out rec_rp_out = {rp_begin_ev, rp_done_ev, rp_keep_ev, rp_error_ev};

/* The event letters, in order. */
static const char *letters(const owner *o)
{
    static char s[MAX_EV + 1];
    for (int i = 0; i < o->n; i++)
        s[i] = o->evs[i].what;
    s[o->n] = '\0';
    return s;
}

/* Feed s to a request decoder in two chunks split at cut. */
static void rq_run(owner *o, const char *s, size_t cut, const resp_config *cfg,
                   resp_conn_stats *st)
{
    rq_dec d;
    memset(o, 0, sizeof(*o));
    memset(st, 0, sizeof(*st));
    rq_init(&d, &rec_rq_out, o, cfg, st, 0);
    size_t n = strlen(s);
    rq_feed(&d, (const uint8_t *)s, cut, 1, 1);
    rq_feed(&d, (const uint8_t *)s + cut, n - cut, 2, 2);
}

/* The same for replies (mid-stream 0). */
static void rp_run(owner *o, rp_dec *d, const char *s, size_t cut, const resp_config *cfg,
                   resp_conn_stats *st, int keep)
{
    memset(o, 0, sizeof(*o));
    memset(st, 0, sizeof(*st));
    o->rpd = d;
    o->keep = keep;
    rp_init(d, &rec_rp_out, o, cfg, st, 0);
    size_t n = strlen(s);
    rp_feed(d, (const uint8_t *)s, cut, 1, 1);
    rp_feed(d, (const uint8_t *)s + cut, n - cut, 2, 2);
}

/* ---------------------------------------------------------------- requests */

/* Two requests and a "*0" between them (no request): begin/done,
 * begin/dropped, begin/done, whatever the split; done carries the name's
 * length, the request's bytes and its key's slot. */
static void test_requests(void **state)
{
    (void)state;
    const char *s = "*2\r\n$3\r\nget\r\n$1\r\nk\r\n*0\r\n*1\r\n$4\r\nPING\r\n";
    resp_config cfg;
    resp_conn_stats st;
    resp_config_defaults(&cfg);
    for (size_t cut = 0; cut <= strlen(s); cut++) {
        owner o;
        rq_run(&o, s, cut, &cfg, &st);
        assert_string_equal(letters(&o), "bdbxbd");
        assert_int_equal(o.evs[1].name_len, 3);
        assert_string_equal(o.evs[1].name, "GET");
        assert_int_equal(o.evs[1].bytes, 20);
        assert_int_equal(o.evs[1].argc, 2);
        assert_int_equal(o.evs[1].slot, resp_key_slot((const uint8_t *)"k", 1));
        assert_int_equal(o.evs[5].name_len, 4);
        assert_string_equal(o.evs[5].name, "PING");
        assert_int_equal(o.evs[5].bytes, 14);
        assert_int_equal(o.evs[5].slot, -1);
        assert_int_equal(st.protocol_errors, 0);
    }
}

/* Binary garbage where a request should start: the message begun is
 * dropped, error (no cap), then the search finds the next request
 * (resynced) and it is decoded whole. */
static void test_request_garbage(void **state)
{
    (void)state;
    const char *s = "\x01zz\r\n*1\r\n$4\r\nPING\r\n";
    resp_config cfg;
    resp_conn_stats st;
    resp_config_defaults(&cfg);
    for (size_t cut = 0; cut <= strlen(s); cut++) {
        owner o;
        rq_run(&o, s, cut, &cfg, &st);
        assert_string_equal(letters(&o), "bxerbd");
        assert_int_equal(o.evs[2].limit, 0);
        assert_string_equal(o.evs[5].name, "PING");
        assert_int_equal(st.protocol_errors, 1);
        assert_int_equal(st.resyncs, 1);
    }
}

/* A bulk longer than max_bulk_request: error with limit set. */
static void test_request_limit(void **state)
{
    (void)state;
    const char *s = "*2\r\n$3\r\nSET\r\n$100\r\n";
    resp_config cfg;
    resp_conn_stats st;
    resp_config_defaults(&cfg);
    cfg.max_bulk_request = 10;
    owner o;
    rq_run(&o, s, 3, &cfg, &st);
    assert_string_equal(letters(&o), "bxe");
    assert_int_equal(o.evs[2].limit, 1);
}

/* ---------------------------------------------------------------- replies */

/* Three replies: begin/done each, with their type, value, length, end
 * position and, for the array, its first element. */
static void test_replies(void **state)
{
    (void)state;
    const char *s = "+OK\r\n:5\r\n*2\r\n$3\r\nfoo\r\n$-1\r\n";
    resp_config cfg;
    resp_conn_stats st;
    resp_config_defaults(&cfg);
    for (size_t cut = 0; cut <= strlen(s); cut++) {
        owner o;
        rp_dec d;
        rp_run(&o, &d, s, cut, &cfg, &st, 0);
        assert_string_equal(letters(&o), "bdbdbd");
        assert_int_equal(o.evs[1].type, RESP_T_SIMPLE);
        assert_int_equal(o.evs[1].end_pos, 5);
        assert_int_equal(o.evs[3].type, RESP_T_INT);
        assert_int_equal(o.evs[3].integer, 5);
        assert_int_equal(o.evs[3].end_pos, 9);
        assert_int_equal(o.evs[5].type, RESP_T_ARRAY);
        assert_int_equal(o.evs[5].elements, 2);
        assert_int_equal(o.evs[5].bytes, 18);
        assert_int_equal(o.evs[5].end_pos, 27);
        assert_string_equal(o.evs[5].elem0, "foo");
        assert_int_equal(o.kept_len, 0); /* nothing asked for */
        rp_free(&d);
    }
}

/* An owner that asks for the raw bytes gets exactly the messages' bytes,
 * in order, whatever the split. */
static void test_reply_keep(void **state)
{
    (void)state;
    const char *s = "*3\r\n:1\r\n$2\r\nab\r\n+x\r\n-ERR no\r\n";
    resp_config cfg;
    resp_conn_stats st;
    resp_config_defaults(&cfg);
    for (size_t cut = 0; cut <= strlen(s); cut++) {
        owner o;
        rp_dec d;
        rp_run(&o, &d, s, cut, &cfg, &st, 1);
        assert_string_equal(letters(&o), "bdbd");
        assert_int_equal(o.kept_len, strlen(s));
        assert_memory_equal(o.kept, s, strlen(s));
        rp_free(&d);
    }
}

/* A reply bulk longer than max_bulk_reply: error with limit set, and the
 * decoder drops the message (no done). */
static void test_reply_limit(void **state)
{
    (void)state;
    const char *s = "$100\r\n";
    resp_config cfg;
    resp_conn_stats st;
    resp_config_defaults(&cfg);
    cfg.max_bulk_reply = 10;
    owner o;
    rp_dec d;
    rp_run(&o, &d, s, 2, &cfg, &st, 0);
    assert_string_equal(letters(&o), "be");
    assert_int_equal(o.evs[1].limit, 1);
    assert_int_equal(st.protocol_errors, 1);
    rp_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests),      cmocka_unit_test(test_request_garbage),
        cmocka_unit_test(test_request_limit), cmocka_unit_test(test_replies),
        cmocka_unit_test(test_reply_keep),    cmocka_unit_test(test_reply_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
