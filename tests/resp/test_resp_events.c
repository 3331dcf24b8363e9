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

/* A request cleared for decoding, started at ts (an owner's rq_out.begin). */
static resp_request *req_started(resp_request *r, int64_t ts)
{
    memset(r, 0, sizeof(*r));
    r->slot = -1;
    r->start_us = ts;
    return r;
}

static resp_request *rq_begin_ev(void *v, int64_t ts)
{
    owner *o = v;
    add(o, 'b');
    return req_started(&o->req, ts);
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

/* A reply read whole (out->whole): as begin then done, or declined when
 * the bytes are to be kept (as the pairer does). */
static int rp_whole_ev(void *v)
{
    owner *o = v;
    if (o->keep)
        return 0;
    add(o, 'b');
    rp_done_ev(v);
    return 1;
}

static const rp_out rec_rp_out = {rp_begin_ev, rp_done_ev, rp_keep_ev, rp_error_ev,
                                  rp_whole_ev};

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
    d->rep = &o->rep;
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

/* A hook that fixes its mask at the first question: argument 1 is the key
 * when argc is 2, arguments 1 and 2 when it is 3. Counts its calls. */
static int hook_calls;
static int fixed_hook(void *ctx, resp_keyctx *k)
{
    (void)ctx;
    hook_calls++;
    k->key_mask = k->req->argc == 3 ? 6u : 2u;
    k->key_mask_final = 1;
    return 1;
}

/* The mask the hook fixed is used again for the next request of the same
 * name and argc without asking the hook; another argc, or another name,
 * asks it again; the keys' slots are the same either way. */
static void test_key_mask_reused(void **state)
{
    (void)state;
    const char *s = "*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n*2\r\n$3\r\nget\r\n$2\r\nk2\r\n"
                    "*3\r\n$3\r\nGET\r\n$2\r\nk3\r\n$2\r\nk4\r\n"
                    "*2\r\n$3\r\nGEX\r\n$2\r\nk5\r\n*2\r\n$3\r\nGEX\r\n$2\r\nk6\r\n";
    resp_config cfg;
    resp_conn_stats st;
    resp_config_defaults(&cfg);
    cfg.key_fn = fixed_hook;
    owner o;
    hook_calls = 0;
    rq_run(&o, s, strlen(s), &cfg, &st);
    assert_string_equal(letters(&o), "bdbdbdbdbd");
    assert_int_equal(hook_calls, 3); /* GET/2, GET/3, GEX/2 */
    assert_int_equal(o.evs[3].slot, resp_key_slot((const uint8_t *)"k2", 2));
    assert_int_equal(o.evs[5].slot, resp_key_slot((const uint8_t *)"k3", 2));
    assert_int_equal(o.evs[9].slot, resp_key_slot((const uint8_t *)"k6", 2));
}

/* ---------------------------------------------------------------- repeats */

/* A hook that fixes its mask at the first question, by name: SET's key is
 * argument 1 and its value bare, MSET's keys are arguments 1, 3, 5 and its
 * values bare, HSET's key is argument 1 and its value bare; any other
 * name's key is argument 1. Counts its calls. */
static int repeat_hook_calls;
static int repeat_hook(void *ctx, resp_keyctx *k)
{
    (void)ctx;
    repeat_hook_calls++;
    const char *n = k->req->name;
    if (strcmp(n, "SET") == 0) {
        k->key_mask = 1u << 1;
        k->bare_mask = 1u << 2;
    } else if (strcmp(n, "MSET") == 0) {
        k->key_mask = (1u << 1) | (1u << 3) | (1u << 5);
        k->bare_mask = (1u << 2) | (1u << 4) | (1u << 6);
    } else if (strcmp(n, "HSET") == 0) { /* a bare bit on a key means nothing */
        k->key_mask = 1u << 1;
        k->bare_mask = (1u << 1) | (1u << 3);
    } else {
        k->key_mask = 1u << 1;
    }
    k->key_mask_final = 1;
    return (int)((k->key_mask >> k->argi) & 1u);
}

/* An owner that logs every request it is handed, all its fields as text. */
typedef struct text_owner {
    resp_request req;
    rq_dec *d;
    char *log;
    size_t len, cap;
} text_owner;

static void text_add(text_owner *o, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof tmp);
    if (o->len + (size_t)n + 1 > o->cap) {
        o->cap = (o->cap + (size_t)n + 1) * 2;
        o->log = realloc(o->log, o->cap);
        assert_non_null(o->log);
    }
    memcpy(o->log + o->len, tmp, (size_t)n + 1);
    o->len += (size_t)n;
}

/* The n bytes at p as text, bytes outside printable ASCII as \xHH. */
static void text_bytes(text_owner *o, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)p[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            text_add(o, "%c", c);
        else
            text_add(o, "\\x%02x", c);
    }
}

static resp_request *text_begin(void *v, int64_t ts)
{
    text_owner *o = v;
    text_add(o, "begin ");
    return req_started(&o->req, ts);
}

static void text_done(void *v, uint8_t name_len)
{
    text_owner *o = v;
    const resp_request *r = &o->req;
    text_add(o, "done %s/%u argc=%u nargs=%u bytes=%llu", r->name, name_len, r->argc, r->nargs,
             (unsigned long long)r->bytes);
    for (unsigned i = 0; i < r->nargs; i++) {
        text_add(o, " a%u=", i + 1);
        text_bytes(o, r->args[i], r->arg_len[i]);
        text_add(o, "/%u", r->arg_full_len[i]);
    }
    text_add(o, " nkeys=%u slot=%d ms=%u key0=", r->nkeys, r->slot, r->multi_slot);
    text_bytes(o, r->key0, r->key0_len);
    text_add(o, "/%u inl=%u gap=%u su=%u k1=%d\n", r->key0_full_len, r->inline_cmd, r->gap,
             r->slot_unknown, rq_arg1_is_key(o->d));
}

static void text_dropped(void *v) { text_add(v, "dropped\n"); }
static void text_error(void *v, int limit) { text_add(v, "error %d\n", limit); }
static void text_resynced(void *v) { text_add(v, "resynced "); }

static const rq_out text_rq_out = {text_begin, text_done, text_dropped, text_error,
                                   text_resynced};

/* Decode s[0, n) fed in chunks that end at ends[0..nends) (increasing,
 * the last one n). Returns the log (malloc'd) and, in *tmpl, whether a
 * request layout was held at the end, in *hook how often the key hook
 * was asked. */
static char *repeat_run(const char *s, const size_t *ends, size_t nends, int *tmpl, int *hook)
{
    resp_config cfg;
    resp_conn_stats st;
    resp_config_defaults(&cfg);
    cfg.key_fn = repeat_hook;
    text_owner o;
    rq_dec d;
    memset(&o, 0, sizeof(o));
    memset(&st, 0, sizeof(st));
    o.d = &d;
    text_add(&o, "");
    rq_init(&d, &text_rq_out, &o, &cfg, &st, 0);
    repeat_hook_calls = 0;
    size_t from = 0;
    for (size_t i = 0; i < nends; i++) {
        rq_feed(&d, (const uint8_t *)s + from, ends[i] - from, (int64_t)i, i);
        from = ends[i];
    }
    text_add(&o, "errors=%llu", (unsigned long long)st.protocol_errors);
    *tmpl = d.tm.head_len != 0;
    *hook = repeat_hook_calls;
    return o.log;
}

/* Fail unless a and b, two logs of the same stream (how is how b was
 * fed), are equal; else show their first line that differs. */
static void same_log(const char *a, const char *b, const char *how)
{
    if (strcmp(a, b) == 0)
        return;
    size_t i = 0, line = 0;
    while (a[i] == b[i]) /* they differ somewhere: this stops */
        i++;
    while (i > 0 && a[i - 1] != '\n')
        i--;
    for (size_t k = 0; k < i; k++)
        line += a[k] == '\n';
    const char *ea = strchr(a + i, '\n'), *eb = strchr(b + i, '\n');
    int la = ea ? (int)(ea - a - (long)i) : (int)strlen(a + i);
    int lb = eb ? (int)(eb - b - (long)i) : (int)strlen(b + i);
    fail_msg("%s: line %zu differs:\nwhole: %.*s\nthere: %.*s", how, line + 1, la, a + i, lb,
             b + i);
}

/* Requests that repeat the name and argc of the one before, which the
 * decoder reads by the layout it took from one before (rq_tmpl) when
 * they are whole in a chunk, decode the same, with the same questions to
 * the key hook, as when they are cut anywhere or come a byte at a time
 * (the resumable path): near misses of the layout (a length, the case of
 * the name, an argc, a CRLF, a header longer than 16 bytes), lengths at
 * the limits of a layout, long and tagged keys, another name or
 * credentials in between. */
static void test_repeated_requests(void **state)
{
    (void)state;
    static const char *const reqs[] = {
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:000001\r\n$8\r\nvalue001\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{8M}}:000002\r\n$8\r\nvalue002\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{}{a}:000003\r\n$8\r\nvalue003\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:no-tag:00004\r\n$8\r\nvalue004\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:00004a\r\n$8\r\nvalue04a\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{07S}:00004b\r\n$8\r\nvalue04b\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{07S}:00004c\r\n$9\r\nvalue004c\r\n",
        "*3\r\n$3\r\nSET\r\n$17\r\nkey:{07S}:00004dd\r\n$8\r\nvalue04d\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{07S}:00004e\r\n$8\r\nvalue04e\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{07S}:0004e2\r\n$8\r\nvalue4e2\r\n",
        /* another name between: the layout goes with its cached masks */
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{07S}:00004f\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{07S}:00004g\r\n$8\r\nvalue04g\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{07S}:00004h\r\n",
        "*3\r\n$3\r\nset\r\n$16\r\nkey:{06S}:000005\r\n$8\r\nvalue005\r\n",
        "*3\r\n$3\r\nset\r\n$16\r\nkey:{x1}:0000006\r\n$8\r\nvalue006\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:000007\r\n$9\r\nvalue0007\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:000008\r\n$9\r\nvalue0008\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000009\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{07S}:000010\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{08S}:000011\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{09S}:00011a\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{10S}:00011b\r\n",
        "*2\r\n$3\r\nGET\r\n$2\r\nab\r\n",
        "*2\r\n$3\r\nGET\r\n$2\r\ncd\r\n",
        "*2\r\n$3\r\nGET\r\n$13\r\n{a}bcdefghijk\r\n",
        "*2\r\n$3\r\nGET\r\n$13\r\n{b}bcdefghijk\r\n",
        "*1\r\n$4\r\nPING\r\n",
        "*1\r\n$4\r\nPING\r\n",
        "*4\r\n$4\r\nHSET\r\n$5\r\nh{1}a\r\n$6\r\nfield1\r\n$12\r\nvalue-000001\r\n",
        "*4\r\n$4\r\nHSET\r\n$5\r\nh{2}b\r\n$6\r\nfield2\r\n$12\r\nvalue-000002\r\n",
        "*4\r\n$4\r\nHSET\r\n$5\r\nh{3}c\r\n$6\r\nfield3\r\n$12\r\nvalue-000003\r\n",
        "*4\r\n$4\r\nHSET\r\n$5\r\nh{4}d\r\n$6\r\nfield4\r\n$12\r\nvalue-000004\r\n",
        "*4\r\n$4\r\nHSET\r\n$5\r\nh{5}e\r\n$6\r\nfield5\r\n$12\r\nvalue-000005\r\n",
        /* the same size, header and end, another joint */
        "*4\r\n$4\r\nHSET\r\n$5\r\nh{6}f\r\n$5\r\nfield\r\n$13\r\nvalue-0000006\r\n",
        "*4\r\n$4\r\nHSET\r\n$5\r\nh{7}g\r\n$6\r\nfield7\r\n$12\r\nvalue-000007\r\n",
        "*2\r\n$4\r\nAUTH\r\n$16\r\nsecretsecret0001\r\n",
        "*2\r\n$4\r\nAUTH\r\n$16\r\nsecretsecret0002\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000012\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000013\r\n",
        "*7\r\n$4\r\nMSET\r\n$2\r\nk1\r\n$2\r\nv1\r\n$2\r\nk2\r\n$2\r\nv2\r\n$2\r\nk3\r\n$2\r\n"
        "v3\r\n",
        "*7\r\n$4\r\nMSET\r\n$2\r\nk4\r\n$2\r\nv4\r\n$2\r\nk5\r\n$2\r\nv5\r\n$2\r\nk6\r\n$2\r\n"
        "v6\r\n",
        "*6\r\n$4\r\nMSET\r\n$12\r\n{t}k0000001a\r\n$1\r\nv\r\n$12\r\n{u}k0000001b\r\n$1\r\n"
        "w\r\n$1\r\nx\r\n",
        "*6\r\n$4\r\nMSET\r\n$12\r\n{t}k0000002a\r\n$1\r\nv\r\n$12\r\n{t}k0000002b\r\n$1\r\n"
        "w\r\n$1\r\nx\r\n",
        "*6\r\n$4\r\nMSET\r\n$12\r\n{t}k0000003a\r\n$1\r\nv\r\n$12\r\n{t}k0000003b\r\n$1\r\n"
        "w\r\n$1\r\nx\r\n",
        "*6\r\n$4\r\nMSET\r\n$12\r\n{t}k000003ca\r\n$1\r\nv\r\n$12\r\n{v}k000003cb\r\n$1\r\n"
        "w\r\n$1\r\ny\r\n",
        "*6\r\n$4\r\nMSET\r\n$12\r\n{t}k000003da\r\n$1\r\nv\r\n$12\r\n{t}k000003db\r\n$1\r\n"
        "w\r\n$1\r\nz\r\n",
        "*6\r\n$4\r\nMSET\r\n$12\r\n{t}k0000004a\r\n$1\r\nv\r\n$12\r\n{t}k0000004b\r\n$1\r\n"
        "w\r\n$2\r\nxy\r\n",
        "*3\r\n$3\r\nSET\r\n$70\r\n"
        "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk1\r\n$1\r\nv\r\n",
        "*3\r\n$3\r\nSET\r\n$70\r\n"
        "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk2\r\n$1\r\nv\r\n",
        "*3\r\n$3\r\nSET\r\n$70\r\n"
        "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk3\r\n$1\r\nv\r\n",
        "*3\r\n$3\r\nSET\r\n$70\r\n"
        "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk4\r\n$1\r\nv\r\n",
        "*3\r\n$3\r\nSET\r\n$70\r\n"
        "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk5\r\n$1\r\nv\r\n",
        "*3\r\n$16\r\nABCDEFGHIJKLMNOP\r\n$1\r\na\r\n$1\r\nb\r\n",
        "*3\r\n$16\r\nABCDEFGHIJKLMNOP\r\n$1\r\na\r\n$1\r\nb\r\n",
        "*3\r\n$15\r\nABCDEFGHIJKLMNO\r\n$1\r\na\r\n$1\r\nb\r\n",
        "*3\r\n$15\r\nABCDEFGHIJKLMNO\r\n$1\r\nc\r\n$1\r\nd\r\n",
        "*3\r\n$15\r\nABCDEFGHIJKLMNO\r\n$1\r\ng\r\n$1\r\nh\r\n",
        "*3\r\n$15\r\nABCDEFGHIJKLMNO\r\n$1\r\ni\r\n$1\r\nj\r\n",
        "*3\r\n$15\r\nABCDEFGHIJKLMNO\r\n$1\r\nk\r\n$1\r\nl\r\n",
        "*3\r\n$15\r\nabcdefghijklmnO\r\n$1\r\ne\r\n$1\r\nf\r\n",
        "*2\r\n$1\r\nX\r\n$1\r\na\r\n",
        "*2\r\n$1\r\nX\r\n$1\r\nb\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000014\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000015\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:00015a\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:00015b\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000016\r\r",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000017\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000018\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000019\n\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000020\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000021\r\n",
        "*3\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000022\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000023\r\n",
        "*2\r\n$3\r\nGET\r\n$016\r\nkey:{06S}:000024\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000025\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000026\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000027\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000028\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000029\r\n",
        /* the same first 16 bytes, a longer header, a CRLF in the key
         * where the layout ends */
        "*2\r\n$3\r\nGET\r\n$160\r\n"
        "kkkkkkkkkkkkkkk\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        "xxxxxxxxxxxxxxxxxx\r\n",
        /* the same size and first 16 bytes, a CRLF where the layout ends
         * (an inline command follows), another length */
        "*2\r\n$3\r\nGET\r\n$10\r\n0123456789\r\nabcd\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:00029a\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:000030\r\n$999\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:000031\r\n$999\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:00031a\r\n$999\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:00031b\r\n$999\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:000032\r\n$1000\r\n",
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:{06S}:000033\r\n$1000\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000034\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000035\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000036\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000037\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:000038\r\n",
        "*2\r\n$3\r\nGET\r\n$16\r\nkey:{06S}:00",
    };
    const size_t nreqs = sizeof reqs / sizeof reqs[0];
    /* the stream; a "$999\r\n" or "$1000\r\n" at a request's end is
     * followed by that many value bytes and a CRLF */
    size_t cap = 64 * 1024, n = 0;
    char *s = malloc(cap);
    size_t *ends = malloc((cap + 1) * sizeof(*ends));
    assert_non_null(s);
    assert_non_null(ends);
    for (size_t i = 0; i < nreqs; i++) {
        size_t l = strlen(reqs[i]);
        memcpy(s + n, reqs[i], l);
        n += l;
        size_t value = 0;
        if (l > 6 && strcmp(reqs[i] + l - 6, "$999\r\n") == 0)
            value = 999;
        else if (l > 7 && strcmp(reqs[i] + l - 7, "$1000\r\n") == 0)
            value = 1000;
        for (size_t k = 0; k < value; k++)
            s[n++] = (char)('a' + (i + k) % 26);
        if (value > 0) {
            memcpy(s + n, "\r\n", 2);
            n += 2;
        }
        ends[i] = n;
        assert_true(n + 2048 < cap);
    }
    /* each request in a chunk of its own: none is read by a layout (a
     * layout is only taken from a request that began inside a chunk),
     * the key mask cache still holds */
    int tmpl, hook, hook_alone;
    char *alone = repeat_run(s, ends, nreqs, &tmpl, &hook_alone);
    assert_false(tmpl);
    ends[0] = n;
    char *whole = repeat_run(s, ends, 1, &tmpl, &hook);
    assert_true(tmpl); /* the last GETs were read by their layout */
    same_log(whole, alone, "each request alone");
    assert_int_equal(hook, hook_alone); /* a layout asks the hook nothing new */
    assert_null(strstr(whole, "secret"));
    assert_non_null(strstr(whole, "done SET/3 argc=3 nargs=2 bytes=50 a1=key:{}{a}:000003/16"));
    assert_non_null(strstr(whole, "done ABCDEFGHIJKLMNO/15 argc=3"));
    assert_non_null(strstr(whole, "a1=k4/2 a2=/2 a3=k5/2 a4=/2 a5=k6/2 nkeys=3"));
    char how[64];
    for (size_t cut = 0; cut <= n; cut++) {
        ends[0] = cut;
        ends[1] = n;
        char *o = repeat_run(s, ends, 2, &tmpl, &hook);
        snprintf(how, sizeof how, "cut at %zu", cut);
        same_log(whole, o, how);
        free(o);
    }
    for (size_t step = 1; step <= 40; step++) {
        size_t k = 0;
        for (size_t e = step; e < n + step; e += step)
            ends[k++] = e < n ? e : n;
        char *o = repeat_run(s, ends, k, &tmpl, &hook);
        snprintf(how, sizeof how, "chunks of %zu", step);
        same_log(whole, o, how);
        free(o);
    }
    free(alone);
    free(whole);
    free(ends);
    free(s);
}

/* ---------------------------------------------------------------- whole replies */

/* An owner that writes each reply event as a line of text, all of the
 * reply's fields included: begin and done, or whole (the decoder's fast
 * path) written as the begin and done it stands for. */
typedef struct log_owner {
    rp_dec *d;
    char *log;
    size_t len, cap;
    int decline;         /* out->whole declines: 0 never, 1 always, 2 every
                            other reply */
    int keep;            /* keep every reply's bytes (whole declines) */
    int wholes;          /* replies taken by out->whole */
    int asked;
    resp_reply rep;
    uint8_t kept[4096];
    size_t kept_len;
} log_owner;

static void logf_(log_owner *o, const char *fmt, ...)
{
    va_list ap;
    if (o->cap - o->len < 512) {
        o->cap = o->cap * 2 + 4096;
        o->log = realloc(o->log, o->cap);
        assert_non_null(o->log);
    }
    va_start(ap, fmt);
    o->len += (size_t)vsnprintf(o->log + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
}

static resp_reply *lg_begin(void *v, int64_t ts)
{
    log_owner *o = v;
    /* stale values, so that a field begin leaves to the decoder and it
     * misses shows */
    memset(&o->rep, 0x5a, sizeof(o->rep));
    o->rep.start_us = ts;
    o->rep.ts_us = ts;
    o->rep.end_frame = 0;
    o->rep.type = RESP_T_NONE;
    o->rep.err = RESP_ERR_NONE;
    o->rep.integer = 0;
    o->rep.elements = 0;
    o->rep.bytes = 0;
    o->rep.end_pos = 0;
    o->rep.raw = NULL;
    o->rep.raw_len = 0;
    o->rep.gap = 0;
    o->d->keeping = (uint8_t)o->keep;
    logf_(o, "begin\n");
    return &o->rep;
}

static void lg_done(void *v)
{
    log_owner *o = v;
    const resp_reply *r = &o->rep;
    const rp_dec *d = o->d;
    logf_(o, "done type=%c err=%d int=%lld elems=%lld bytes=%llu end=%llu start=%lld ts=%lld "
             "frame=%llu gap=%d nokey=%d status=%.*s mon=%d",
          r->type, (int)r->err, (long long)r->integer, (long long)r->elements,
          (unsigned long long)r->bytes, (unsigned long long)r->end_pos, (long long)r->start_us,
          (long long)r->ts_us, (unsigned long long)r->end_frame, r->gap, r->nokey,
          (int)d->status_len, (const char *)d->status, d->status_monitor);
    if (r->err != RESP_ERR_NONE)
        logf_(o, " text=%s slot=%d port=%d host=%s", r->errtext, (int)r->redir.slot,
              (int)r->redir.port, r->redir.host);
    if (d->elem0_set)
        logf_(o, " elem0=%.*s", (int)d->elem0_len, (const char *)d->elem0);
    if (d->elem2_set)
        logf_(o, " elem2=%lld", (long long)d->elem2);
    logf_(o, "\n");
}

static void lg_keep(void *v, const uint8_t *p, size_t n)
{
    log_owner *o = v;
    assert_true(o->kept_len + n <= sizeof(o->kept));
    memcpy(o->kept + o->kept_len, p, n);
    o->kept_len += n;
}

static void lg_error(void *v, int limit)
{
    logf_(v, "error %d\n", limit);
}

static int lg_whole(void *v)
{
    log_owner *o = v;
    if (o->keep || o->decline == 1 || (o->decline == 2 && (o->asked++ & 1)))
        return 0;
    /* what begin sets and the decoder does not */
    o->rep.start_us = o->rep.ts_us;
    o->rep.err = RESP_ERR_NONE;
    o->rep.raw = NULL;
    o->rep.raw_len = 0;
    o->rep.gap = 0;
    o->wholes++;
    logf_(o, "begin\n");
    lg_done(v);
    return 1;
}

static const rp_out log_rp_out = {lg_begin, lg_done, lg_keep, lg_error, lg_whole};

/* Feed s (n bytes) in chunks ending at ends[0..nends) (the last is n), all
 * captured at the same time and record, and return the log (to free). */
static char *whole_run(const char *s, size_t n, const size_t *ends, size_t nends, int decline,
                       int keep, int *wholes)
{
    resp_config cfg;
    resp_conn_stats st;
    rp_dec d;
    log_owner o;
    resp_config_defaults(&cfg);
    memset(&st, 0, sizeof(st));
    memset(&o, 0, sizeof(o));
    o.d = &d;
    o.decline = decline;
    o.keep = keep;
    memset(&o.rep, 0x5a, sizeof(o.rep));
    rp_init(&d, &log_rp_out, &o, &cfg, &st, 0);
    d.rep = &o.rep;
    size_t at = 0;
    for (size_t i = 0; i < nends; i++) {
        rp_feed(&d, (const uint8_t *)s + at, ends[i] - at, 7, 3);
        at = ends[i];
    }
    assert_int_equal(at, n);
    rp_free(&d);
    logf_(&o, "errors=%llu resyncs=%llu\n", (unsigned long long)st.protocol_errors,
          (unsigned long long)st.resyncs);
    if (keep) {
        logf_(&o, "kept %zu: \n", o.kept_len);
        assert_int_equal(o.kept_len, n);
        assert_memory_equal(o.kept, s, n);
    }
    if (wholes != NULL)
        *wholes = o.wholes;
    return o.log;
}

/* Replies of every type, one after another: read whole in one chunk (most
 * by the fast path, out->whole), cut at every byte, in chunks of 1..N
 * bytes, with out->whole declining always or every other time, and kept,
 * they give the same events with the same fields. */
static void test_whole_replies(void **state)
{
    (void)state;
    static const char s[] =
        "+OK\r\n:42\r\n+OK\r\n:-7\r\n$-1\r\n:0\r\n$5\r\nhello\r\n$0\r\n\r\n+PONG\r\n"
        "+NOKEY\r\n:9223372036854775807\r\n+QUEUED\r\n$12\r\nhello\r\nworld\r\n"
        "-ERR wrong number of arguments\r\n+OK\r\n-MOVED 3999 127.0.0.1:6381\r\n:1\r\n"
        "-ASK 12 10.0.0.2:7000\r\n$3\r\nabc\r\n-CROSSSLOT Keys don't hash\r\n"
        "*2\r\n$3\r\nfoo\r\n:1\r\n*-1\r\n*0\r\n_\r\n#t\r\n#f\r\n,3.14\r\n"
        "(12345678901234567890\r\n%1\r\n+a\r\n:1\r\n~2\r\n$1\r\nx\r\n$-1\r\n"
        "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
        ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n!10\r\nERR blob x\r\n"
        "=7\r\ntxt:abc\r\n|1\r\n+k\r\n+v\r\n:5\r\n+1700000000.123456 [0 1.2.3.4:5] \"GET\"\r\n"
        "$20\r\n01234567890123456789\r\n:123456789012345678901\r\n+OK\r\n";
    const size_t n = sizeof s - 1;
    size_t ends[sizeof s];
    char how[64];
    int wholes;
    /* one byte at a time: never the fast path */
    for (size_t i = 0; i < n; i++)
        ends[i] = i + 1;
    char *ref = whole_run(s, n, ends, n, 0, 0, &wholes);
    assert_int_equal(wholes, 0);
    assert_non_null(strstr(ref, "text=MOVED 3999 127.0.0.1:6381 slot=3999 port=6381"));
    assert_non_null(strstr(ref, "type=: err=0 int=9223372036854775807"));
    /* whole in one chunk */
    ends[0] = n;
    char *o = whole_run(s, n, ends, 1, 0, 0, &wholes);
    same_log(o, ref, "whole");
    assert_int_equal(wholes, 16); /* the fast path was taken */
    free(o);
    for (int decline = 1; decline <= 2; decline++) {
        o = whole_run(s, n, ends, 1, decline, 0, &wholes);
        snprintf(how, sizeof how, "whole, declining (%d)", decline);
        same_log(o, ref, how);
        free(o);
    }
    /* kept: up to the malformed integer (the bytes of a message found bad
     * are handed to keep as they come, so they depend on the chunks) */
    const size_t nk = (size_t)(strstr(s, ":123456789012345678901") - s);
    ends[0] = nk;
    o = whole_run(s, nk, ends, 1, 0, 1, &wholes);
    assert_int_equal(wholes, 0);
    for (size_t i = 0; i < nk; i++)
        ends[i] = i + 1;
    char *ref_keep = whole_run(s, nk, ends, nk, 0, 1, NULL);
    same_log(o, ref_keep, "kept");
    char want[16];
    snprintf(want, sizeof want, "kept %zu: ", nk);
    assert_non_null(strstr(o, want));
    free(o);
    free(ref_keep);
    for (size_t cut = 0; cut <= n; cut++) {
        ends[0] = cut;
        ends[1] = n;
        for (int decline = 0; decline <= 2; decline++) {
            o = whole_run(s, n, ends, 2, decline, 0, NULL);
            snprintf(how, sizeof how, "cut at %zu, declining (%d)", cut, decline);
            same_log(o, ref, how);
            free(o);
        }
    }
    for (size_t step = 1; step <= 64; step++) {
        size_t k = 0;
        for (size_t e = step; e < n + step; e += step)
            ends[k++] = e < n ? e : n;
        o = whole_run(s, n, ends, k, 0, 0, NULL);
        snprintf(how, sizeof how, "chunks of %zu", step);
        same_log(o, ref, how);
        free(o);
    }
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests),      cmocka_unit_test(test_request_garbage),
        cmocka_unit_test(test_request_limit), cmocka_unit_test(test_replies),
        cmocka_unit_test(test_reply_keep),    cmocka_unit_test(test_reply_limit),
        cmocka_unit_test(test_key_mask_reused), cmocka_unit_test(test_repeated_requests),
        cmocka_unit_test(test_whole_replies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
