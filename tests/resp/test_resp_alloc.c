/*
 * test_resp_alloc.c - a declared 4 GB bulk is skipped by counting: nothing is
 * allocated or buffered while its payload goes by, and the byte count is
 * exact. Memory taken for a burst (a deep pipeline's in-flight pages, a kept
 * CLUSTER reply) is given back, without an allocation per command, also
 * when a lossy reply stream leaves many requests in flight.
 * Allocations are counted by wrapping malloc/calloc/realloc/aligned_alloc
 * at link time (see tests/resp/CMakeLists.txt); the ring and keep buffer
 * sizes are read from resp's internal state.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
#include "resp/resp_internal.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);

static size_t n_allocs; /* allocation calls since the last reset */
static int poison;      /* fill aligned_alloc's blocks with junk (stale heap) */

void *__wrap_malloc(size_t n)
{
    n_allocs++;
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m)
{
    n_allocs++;
    return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n)
{
    n_allocs++;
    return __real_realloc(p, n);
}
void *__wrap_aligned_alloc(size_t align, size_t n)
{
    n_allocs++;
    void *p = __real_aligned_alloc(align, n);
    if (p != NULL && poison)
        memset(p, 0xA5, n);
    return p;
}

#define GB4 (4ull << 30)
#define CHUNK (1u << 20)

/* A 4 GB reply bulk to a GET: fed in 1 MiB chunks (4096 of them), header
 * split too; the reply pairs, with the exact size. */
static void test_4gb_reply(void **state)
{
    (void)state;
    uint8_t *chunk = malloc(CHUNK);
    assert_non_null(chunk);
    memset(chunk, 'v', CHUNK);
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n*1\r\n$4\r\nPING\r\n");
    const char *hdr = "$4294967296\r\n";
    h_data(&h, CAP_TO_CLIENT, hdr, 5);
    n_allocs = 0;
    h_data(&h, CAP_TO_CLIENT, hdr + 5, strlen(hdr) - 5);
    for (uint64_t sent = 0; sent < GB4; sent += CHUNK)
        h_data(&h, CAP_TO_CLIENT, chunk, CHUNK);
    assert_int_equal(n_allocs, 0); /* nothing allocated, nothing buffered */
    assert_int_equal(h.ncmds, 0);
    h_str(&h, CAP_TO_CLIENT, "\r\n+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 2);
    assert_int_equal(h.cmds[0].outcome, RESP_OK);
    assert_int_equal(h.cmds[0].reply.type, RESP_T_BULK);
    assert_int_equal(h.cmds[0].reply.bytes, strlen(hdr) + GB4 + 2);
    assert_int_equal(h.cmds[1].outcome, RESP_OK);
    assert_int_equal(h.closed.protocol_errors, 0);
    h_free(&h);
    free(chunk);
}

/* A 4 GB request argument: beyond the default proto-max-bulk-len it is a
 * protocol error; with the limit raised it is skipped like the reply. */
static void test_4gb_request(void **state)
{
    (void)state;
    uint8_t *chunk = malloc(CHUNK);
    assert_non_null(chunk);
    memset(chunk, 'v', CHUNK);
    const char *hdr = "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$4294967296\r\n";

    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, hdr);
    h_close(&h);
    assert_int_equal(h.closed.protocol_errors, 1);
    assert_int_equal(resp_get_stats(h.rp)->limit_hits, 1);
    h_free(&h);

    resp_config cfg;
    resp_config_defaults(&cfg);
    cfg.max_bulk_request = 1ull << 40;
    h_init(&h, 1, &cfg);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, hdr);
    n_allocs = 0;
    for (uint64_t sent = 0; sent < GB4; sent += CHUNK)
        h_data(&h, CAP_TO_SERVER, chunk, CHUNK);
    h_str(&h, CAP_TO_SERVER, "\r\n");
    assert_int_equal(n_allocs, 0);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    assert_int_equal(h.cmds[0].outcome, RESP_OK);
    assert_int_equal(h.cmds[0].req.bytes, strlen(hdr) + GB4 + 2);
    assert_int_equal(h.cmds[0].req.arg_full_len[1], UINT32_MAX); /* clipped */
    assert_int_equal(h.cmds[0].req.arg_len[1], RESP_ARG_PREFIX);
    assert_int_equal(h.cmds[0].req.slot, resp_key_slot((const uint8_t *)"big", 3));
    h_free(&h);
    free(chunk);
}

/* Steady state: a pipelined stream of small commands allocates nothing per
 * message once its pages are taken (the warm-up crosses a page of slots
 * and of text: from then on pages come back to the pool and out again). */
static void test_no_alloc_per_message(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h.no_log = 1;
    h_open(&h);
    const char *req = "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n";
    for (int round = 0; round < 64; round++) {
        for (int i = 0; i < 8; i++)
            h_str(&h, CAP_TO_SERVER, req);
        for (int i = 0; i < 8; i++)
            h_str(&h, CAP_TO_CLIENT, "$1\r\nx\r\n");
    }
    n_allocs = 0;
    for (int round = 0; round < 1000; round++) {
        for (int i = 0; i < 8; i++)
            h_str(&h, CAP_TO_SERVER, req);
        for (int i = 0; i < 8; i++)
            h_str(&h, CAP_TO_CLIENT, "$1\r\nx\r\n");
    }
    assert_int_equal(n_allocs, 0);
    h_close(&h);
    assert_int_equal(h.closed.paired, 8000 + 64 * 8);
    h_free(&h);
}


/* The resp state of the harness's connection. */
static rc_conn *h_rc(h_ctx *h)
{
    return (rc_conn *)h->conn.user;
}

/* n pipelined GETs in one chunk, then their n replies in one chunk. */
static void burst(h_ctx *h, int n)
{
    static char reqs[64 * 2048], reps[16 * 2048];
    const char *req = "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n";
    const char *rep = "$1\r\nx\r\n";
    size_t lq = strlen(req), lp = strlen(rep);
    assert_true(n <= 2048);
    for (int i = 0; i < n; i++) {
        memcpy(reqs + (size_t)i * lq, req, lq);
        memcpy(reps + (size_t)i * lp, rep, lp);
    }
    h_data(h, CAP_TO_SERVER, reqs, (size_t)n * lq);
    h_data(h, CAP_TO_CLIENT, reps, (size_t)n * lp);
}

/* n pipelined GETs in one chunk (n <= 2048), not answered yet. */
static void burst_queue(h_ctx *h, int n)
{
    static char reqs[64 * 2048];
    const char *req = "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n";
    size_t lq = strlen(req);
    assert_true(n <= 2048);
    for (int i = 0; i < n; i++)
        memcpy(reqs + (size_t)i * lq, req, lq);
    h_data(h, CAP_TO_SERVER, reqs, (size_t)n * lq);
}

/* The replies of n queued GETs, in chunks of at most 2048. */
static void answer(h_ctx *h, int n)
{
    static char reps[16 * 2048];
    const char *rep = "$1\r\nx\r\n";
    size_t lp = strlen(rep);
    for (int i = 0; i < 2048; i++)
        memcpy(reps + (size_t)i * lp, rep, lp);
    for (; n > 0; n -= 2048)
        h_data(h, CAP_TO_CLIENT, reps, (size_t)(n < 2048 ? n : 2048) * lp);
}

/* Pages a queue of n requests (a slot each) spans, at most: its slots
 * and a partial page; and the pages of n GET foo texts (name and key in
 * one 16-byte unit each; key0 is the key, not stored again), one partial,
 * one begun for the next request. */
#define SLOT_PAGES(n) (((n) * sizeof(rq_slot) + RQ_PAGE - 1) / RQ_PAGE + 1)
#define GET_TEXT_PAGES(n) (((n) * 32 + RQ_PAGE - 1) / RQ_PAGE + 2)

/* A burst of 300 pipelined requests takes pages for its slots and text;
 * answered, they go back to the pipeline's pool, and the next bursts and
 * single requests take them from there: no allocation per command or per
 * burst (only when more pages are in use at once than ever), and a drained
 * connection keeps at most its partial pages. */
static void test_burst_pages_reused(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h.no_log = 1;
    h_open(&h);
    burst(&h, 300);
    assert_true(h.rp->pages_peak >= 300 * sizeof(rq_slot) / RQ_PAGE);
    assert_true(h.rp->pages_peak <= SLOT_PAGES(300) + GET_TEXT_PAGES(300));
    assert_true(h.rp->pages_used <= 3); /* drained: the partial pages, and
                                          * the text room of a next request */
    uint64_t peak = 0;
    for (int round = 0; round < 20; round++) {
        if (round == 1) { /* the first round met the pages' other offsets */
            n_allocs = 0;
            peak = h.rp->pages_peak;
        }
        burst(&h, 300);
        for (int i = 0; i < 100; i++)
            burst(&h, 1);
    }
    /* a page is allocated only when more are in use at once than ever
     * (the text's offset in its pages varies from round to round) */
    assert_int_equal(n_allocs, h.rp->pages_peak - peak);
    assert_true(n_allocs <= 1);
    assert_true(h.rp->pages_peak <= SLOT_PAGES(300) + GET_TEXT_PAGES(300));
    h_close(&h);
    assert_int_equal(h.rp->pages_used, 0);
    assert_int_equal(h.closed.paired, 300 + 20 * 400);
    assert_int_equal(h.closed.unpaired_requests, 0);
    h_free(&h);
}

/* The slots are written whole when a request is queued, over pages that
 * held other requests or junk (stale heap): every command comes out clean,
 * across page boundaries of the slots and of the text. */
static void test_slots_clean_over_junk(void **state)
{
    (void)state;
    h_ctx h;
    poison = 1;
    h_init(&h, 1, NULL);
    h_open(&h);
    burst(&h, 300);
    for (int i = 0; i < 300; i++)
        burst(&h, 1);
    h_close(&h);
    poison = 0;
    assert_int_equal(h.ncmds, 600);
    for (size_t i = 0; i < h.ncmds; i++) {
        const resp_command *c = &h.cmds[i];
        assert_int_equal(c->outcome, RESP_OK);
        assert_int_equal(c->seq, i);
        assert_string_equal(c->req.name, "GET");
        assert_int_equal(c->req.argc, 2);
        assert_int_equal(c->req.nargs, 1);
        assert_int_equal(c->req.arg_len[0], 3);
        assert_memory_equal(c->req.args[0], "foo", 3);
        assert_int_equal(c->req.nkeys, 1);
        assert_int_equal(c->req.key0_len, 3);
        assert_memory_equal(c->req.key0, "foo", 3);
        assert_int_equal(c->req.gap, 0);
        assert_int_equal(c->req.slot_unknown, 0);
        assert_int_equal(c->reply.err, RESP_ERR_NONE);
        assert_int_equal(c->reply.redir.slot, -1);
        assert_int_equal(c->reply.errtext[0], 0);
        assert_int_equal(c->reply.type, RESP_T_BULK);
    }
    h_free(&h);
}

/* A deep burst past what the pool keeps: once answered, the pool holds
 * RQ_POOL_KEEP pages or, past that, no more than were in use when each
 * came back (the rest are freed): about half the burst's, not all of it.
 * The next bursts take no new memory while they fit in what is kept. */
static void test_pool_bounded_after_deep_burst(void **state)
{
    (void)state;
    /* enough GETs in flight (a slot and 32 bytes of text each, 5/32 of a
     * page) for twice RQ_POOL_KEEP pages, in rounds of 2000; the overall
     * in-flight cap raised so that one connection's partition holds them */
    const int rounds = (int)(((2 * RQ_POOL_KEEP + 64) * 32 / 5 + 1999) / 2000);
    const int deep = rounds * 2000;
    resp_config cfg;
    resp_config_defaults(&cfg);
    cfg.max_inflight_total = (uint64_t)CAP_PARTITIONS * cfg.max_inflight;
    h_ctx h;
    h_init(&h, 1, &cfg);
    h.no_log = 1;
    h_open(&h);
    for (int i = 0; i < rounds; i++)
        burst_queue(&h, 2000);
    assert_int_equal(h_rc(&h)->count, deep);
    assert_true(h.rp->pages_used >= deep * sizeof(rq_slot) / RQ_PAGE);
    assert_true(h.rp->pages_peak >= 2 * RQ_POOL_KEEP + 4);
    answer(&h, deep);
    assert_int_equal(h_rc(&h)->count, 0);
    assert_true(h.rp->pages_used <= 3);
    assert_true(h.rp->pool_n >= RQ_POOL_KEEP);
    assert_true(h.rp->pool_n <= h.rp->pages_peak / 2 + 2);
    n_allocs = 0;
    for (int round = 0; round < 10; round++)
        burst(&h, 1500); /* 94 slot pages: from the pool */
    assert_int_equal(n_allocs, 0);
    h_close(&h);
    assert_int_equal(h.closed.paired, deep + 10 * 1500);
    h_free(&h);
}

/* A reply stream that loses the replies of three pipelined rounds of 64 in
 * every four (the capture shows a gap of their exact length only when the
 * fourth round's replies come): 256 requests are in flight at the deepest
 * of each cycle, then the gap is counted (every reply has the same size)
 * and the fourth round pairs. The connection's pages stay within what 256
 * requests span, come back after each cycle, and the cycles allocate
 * nothing after the first three. */
static void test_lossy_reply_stream_bounded(void **state)
{
    (void)state;
    const size_t rep_len = strlen("$1\r\nx\r\n");
    h_ctx h;
    h_init(&h, 1, NULL);
    h.no_log = 1;
    h_open(&h);
    burst(&h, 64); /* the reply sizes are learnt */
    uint32_t deepest = 0;
    uint64_t most_pages = 0;
    for (int cycle = 0; cycle < 51; cycle++) {
        if (cycle == 3) /* the first cycles met the pages' other offsets */
            n_allocs = 0;
        for (int round = 0; round < 4; round++)
            burst_queue(&h, 64);
        if (h_rc(&h)->count > deepest)
            deepest = h_rc(&h)->count;
        if (h.rp->pages_used > most_pages)
            most_pages = h.rp->pages_used;
        h_gap(&h, CAP_TO_CLIENT, 3 * 64 * rep_len);
        answer(&h, 64);
        assert_int_equal(h_rc(&h)->count, 0);
        assert_true(h.rp->pages_used <= 3);
    }
    assert_int_equal(n_allocs, 0);
    assert_int_equal(deepest, 256);
    assert_true(most_pages <= SLOT_PAGES(256) + GET_TEXT_PAGES(256));
    assert_int_equal(h_rc(&h)->anchored, 51); /* each gap counted exactly */
    h_close(&h);
    assert_int_equal(h.closed.paired, 64 + 51 * 64);
    assert_int_equal(h.closed.unpaired_requests, 51 * 192);
    assert_int_equal(h.closed.unpaired_replies, 0);
    assert_int_equal(h.closed.out_of_sync, 0);
    h_free(&h);
}

/* A kept CLUSTER SLOTS reply is handed to the sink whole, then its buffer is
 * freed: no connection holds the largest reply it ever kept. */
static void test_keep_buffer_freed(void **state)
{
    (void)state;
    const char *rep = "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n";
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    for (int i = 0; i < 3; i++) {
        h_str(&h, CAP_TO_SERVER, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n");
        h_str(&h, CAP_TO_CLIENT, "*1\r\n*3\r\n:0\r\n:16383\r\n"); /* split */
        assert_non_null(h_rc(&h)->keep);                           /* being kept */
        h_str(&h, CAP_TO_CLIENT, rep + 20);
        assert_null(h_rc(&h)->keep);
        assert_int_equal(h_rc(&h)->keep_cap, 0);
        assert_int_equal(h_rc(&h)->part->kept, 0);
        assert_int_equal(h.ncmds, (size_t)i + 1);
        assert_int_equal(h.cmds[i].reply.raw_len, strlen(rep));
    }
    h_close(&h);
    h_free(&h);
}

/* Request i of mixed_queue: GET key, SET key value or HSET key f value,
 * with keys of 1 to 70 bytes (past the 64 kept) and values of 0 to 79, so
 * that the pieces take 1 to 4 units and texts meet their pages' ends. */
static size_t mixed_request(char *out, size_t cap, int i, char *key, size_t *key_len,
                            char *val, size_t *val_len)
{
    size_t kl = 1 + (size_t)(i * 7) % 70, vl = (size_t)(i * 5) % 80;
    for (size_t j = 0; j < kl; j++)
        key[j] = (char)('a' + (i + (int)j) % 26);
    for (size_t j = 0; j < vl; j++)
        val[j] = (char)('A' + (i * 3 + (int)j) % 26);
    *key_len = kl;
    *val_len = vl;
    int n;
    switch (i % 3) {
    case 0:
        n = snprintf(out, cap, "*2\r\n$3\r\nGET\r\n$%zu\r\n%.*s\r\n", kl, (int)kl, key);
        break;
    case 1:
        n = snprintf(out, cap, "*3\r\n$3\r\nSET\r\n$%zu\r\n%.*s\r\n$%zu\r\n%.*s\r\n", kl,
                     (int)kl, key, vl, (int)vl, val);
        break;
    default:
        n = snprintf(out, cap, "*4\r\n$4\r\nHSET\r\n$%zu\r\n%.*s\r\n$1\r\nf\r\n$%zu\r\n%.*s\r\n",
                     kl, (int)kl, key, vl, (int)vl, val);
        break;
    }
    assert_true(n > 0 && (size_t)n < cap);
    return (size_t)n;
}

/* Queue requests first .. first + n - 1 of mixed_request in one chunk. */
static void mixed_queue(h_ctx *h, int first, int n)
{
    static char buf[400 * 200];
    char key[80], val[80];
    size_t len = 0, kl, vl;
    assert_true(n <= 400);
    for (int i = first; i < first + n; i++)
        len += mixed_request(buf + len, sizeof buf - len, i, key, &kl, val, &vl);
    h_data(h, CAP_TO_SERVER, buf, len);
}

/* Command i came out as request i was sent: name, kept arguments, first key. */
static void mixed_check(const resp_command *c, int i)
{
    char buf[200], key[80], val[80];
    size_t kl, vl;
    (void)mixed_request(buf, sizeof buf, i, key, &kl, val, &vl);
    size_t kept = kl < RESP_ARG_PREFIX ? kl : RESP_ARG_PREFIX;
    assert_int_equal(c->seq, (uint64_t)i);
    assert_int_equal(c->outcome, RESP_OK);
    assert_string_equal(c->req.name, i % 3 == 0 ? "GET" : i % 3 == 1 ? "SET" : "HSET");
    assert_int_equal(c->req.argc, (uint32_t)(2 + i % 3));
    assert_int_equal(c->req.nargs, 1 + i % 3);
    assert_int_equal(c->req.arg_len[0], kept);
    assert_int_equal(c->req.arg_full_len[0], kl);
    assert_memory_equal(c->req.args[0], key, kept);
    assert_int_equal(c->req.key0_len, kept);
    assert_int_equal(c->req.key0_full_len, kl);
    assert_memory_equal(c->req.key0, key, kept);
    assert_int_equal(c->req.slot, resp_key_slot((const uint8_t *)key, kl));
    const char *last = i % 3 == 1 ? c->req.args[1] : c->req.args[2];
    size_t last_len = i % 3 == 1 ? c->req.arg_len[1] : c->req.arg_len[2];
    if (i % 3 != 0) {
        size_t vkept = vl < RESP_ARG_PREFIX ? vl : RESP_ARG_PREFIX;
        assert_int_equal(last_len, vkept);
        assert_int_equal(c->req.arg_full_len[i % 3], vl);
        assert_memory_equal(last, val, vkept);
    }
    if (i % 3 == 2) {
        assert_int_equal(c->req.arg_len[1], 1);
        assert_int_equal(c->req.args[1][0], 'f');
    }
    assert_int_equal(c->reply.type, RESP_T_SIMPLE);
    assert_int_equal(c->reply.err, RESP_ERR_NONE);
    assert_int_equal(c->reply.errtext[0], 0);
}

/* Requests go into whole entries up to RQ_WHOLE_CONN in flight on a
 * connection, the next ones are packed (their text across page ends); as
 * the queue drains and fills, the two kinds alternate in it. Every command
 * comes out as it was sent, and every whole entry goes back to the
 * pipeline. */
static void test_whole_and_packed_mixed(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    static const int sizes[][2] = {{1, 1}, {40, 0}, {RQ_WHOLE_CONN + 8, 20}, {300, 0},
                                   {5, 200}, {60, 200}};
    int sent = 0, answered = 0;
    for (size_t r = 0; r < sizeof sizes / sizeof sizes[0]; r++) {
        mixed_queue(&h, sent, sizes[r][0]);
        sent += sizes[r][0];
        rc_conn *c = h_rc(&h);
        assert_int_equal(c->count, (uint32_t)(sent - answered));
        assert_true(c->whole_held <= RQ_WHOLE_CONN);
        if (sizes[r][0] == 300) /* deep: a whole entry for each of the first only */
            assert_int_equal(c->whole_held, RQ_WHOLE_CONN);
        int n = sizes[r][1] < sent - answered ? sizes[r][1] : sent - answered;
        for (int i = 0; i < n; i++)
            h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
        answered += n;
    }
    for (; answered < sent; answered++)
        h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    assert_int_equal(h_rc(&h)->count, 0);
    assert_int_equal(h_rc(&h)->whole_held, 0);
    assert_int_equal(h.rp->whole_nfree, h.rp->whole_made);
    assert_true(h.rp->whole_made >= 1 && h.rp->whole_made <= RQ_WHOLE_CONN);
    assert_int_equal(h.ncmds, (size_t)sent);
    for (int i = 0; i < sent; i++)
        mixed_check(&h.cmds[i], i);
    h_close(&h);
    h_free(&h);
}

/* What request i of test_packed_shapes is: its bytes and what resp_request
 * must say of it. */
typedef struct shape_req {
    char name[RESP_NAME_MAX];
    uint32_t argc, nargs, nkeys;
    char args[RESP_ARG_KEEP][80];
    uint32_t full[RESP_ARG_KEEP]; /* an argument's length */
    uint32_t kept[RESP_ARG_KEEP]; /* bytes kept of it (0: bare) */
    int key0;                     /* the argument that is the first key, 0: none */
    int multi_slot;
} shape_req;

/* The key hook of test_packed_shapes: fixed masks for some names (key in
 * argument 1 or not, bare arguments), answers one by one for the rest. */
static int shape_key_fn(void *ctx, resp_keyctx *k)
{
    (void)ctx;
    const char *n = k->req->name;
    if (strcmp(n, "MOVEKEY") == 0) { /* key 2, argument 3 bare */
        k->key_mask = 1u << 2;
        k->bare_mask = 1u << 3;
        k->key_mask_final = 1;
        return k->argi == 2;
    }
    if (strcmp(n, "MSETX") == 0) { /* keys 1, 3, 5; argument 2 bare */
        k->key_mask = (1u << 1) | (1u << 3) | (1u << 5);
        k->bare_mask = 1u << 2;
        k->key_mask_final = 1;
        return k->argi == 1 || k->argi == 3 || k->argi == 5;
    }
    if (strcmp(n, "LATEKEY") == 0)
        return k->argi == 2;
    return k->argi == 1;
}

/* Fill argument a (1-based) of q with len bytes drawn from seed. */
static void shape_arg(shape_req *q, int a, size_t len, int seed)
{
    char *d = q->args[a - 1];
    for (size_t j = 0; j < len; j++)
        d[j] = (char)('a' + (seed * 7 + (int)j * 3) % 26);
    d[len] = 0;
    q->full[a - 1] = (uint32_t)len;
    q->kept[a - 1] = (uint32_t)(len < RESP_ARG_PREFIX ? len : RESP_ARG_PREFIX);
}

/* Request i: one of eight shapes (names of 0, 1 or 2 text units, the key
 * in argument 1 or 2, by a fixed mask or asked, bare arguments between
 * kept ones, more arguments than are kept, keys of 1 to 70 bytes), as
 * RESP into out; its facts into q. */
static size_t shape_request(char *out, size_t cap, int i, shape_req *q)
{
    static const char *const names[] = {"GET",   "GEORADIUSBYMEMBER_RO", "MOVEKEY", "LATEKEY",
                                        "MSETX", "",                     "PING",    "STRLEN"};
    static const int argcs[] = {2, 3, 4, 3, 7, 2, 1, 2};
    memset(q, 0, sizeof *q);
    int shape = i % 8;
    size_t kl = 1 + (size_t)(i * 7) % 70;
    strcpy(q->name, names[shape]);
    q->argc = (uint32_t)argcs[shape];
    for (int a = 1; a < argcs[shape] && a <= RESP_ARG_KEEP; a++)
        shape_arg(q, a, a == 1 ? kl : 1 + (size_t)(i + a * 11) % 40, i + a);
    q->nargs = q->argc - 1 < RESP_ARG_KEEP ? q->argc - 1 : RESP_ARG_KEEP;
    char extra[8] = "zz"; /* MSETX's argument 6, not kept */
    switch (shape) {
    case 2: /* MOVEKEY a b c: b the key, of a's length, its bytes every other time */
        shape_arg(q, 2, kl, (i / 8) % 2 ? i + 1 : i + 2);
        q->kept[2] = 0;
        q->key0 = 2;
        q->nkeys = 1;
        break;
    case 3: /* LATEKEY x y: y the key, of x's length, its bytes every other time */
        shape_arg(q, 2, kl, (i / 8) % 2 ? i + 1 : i + 5);
        q->key0 = 2;
        q->nkeys = 1;
        break;
    case 4: /* MSETX k1 v1 k2 v2 k3 zz */
        q->kept[1] = 0;
        q->key0 = 1;
        q->nkeys = 3;
        {
            uint16_t s1 = resp_key_slot((const uint8_t *)q->args[0], q->full[0]);
            uint16_t s3 = resp_key_slot((const uint8_t *)q->args[2], q->full[2]);
            uint16_t s5 = resp_key_slot((const uint8_t *)q->args[4], q->full[4]);
            q->multi_slot = s3 != s1 || s5 != s1;
        }
        break;
    case 6: /* PING */
        break;
    default:
        q->key0 = 1;
        q->nkeys = 1;
        break;
    }
    size_t n = (size_t)snprintf(out, cap, "*%u\r\n$%zu\r\n%s\r\n", q->argc, strlen(q->name),
                                q->name);
    for (uint32_t a = 1; a < q->argc; a++) {
        const char *v = a <= RESP_ARG_KEEP ? q->args[a - 1] : extra;
        n += (size_t)snprintf(out + n, cap - n, "$%zu\r\n%s\r\n", strlen(v), v);
    }
    assert_true(n < cap);
    return n;
}

/* Command i came out as request i of shape_request was sent. */
static void shape_check(const resp_command *c, int i, resp_outcome outcome)
{
    char buf[1024];
    shape_req q;
    (void)shape_request(buf, sizeof buf, i, &q);
    const resp_request *r = &c->req;
    assert_int_equal(c->seq, (uint64_t)i);
    assert_int_equal(c->outcome, outcome);
    assert_string_equal(r->name, q.name);
    for (size_t j = strlen(q.name); j < RESP_NAME_ZEROED; j++)
        assert_int_equal(r->name[j], 0);
    assert_int_equal(r->argc, q.argc);
    assert_int_equal(r->nargs, q.nargs);
    for (uint32_t a = 0; a < q.nargs; a++) {
        assert_int_equal(r->arg_full_len[a], q.full[a]);
        assert_int_equal(r->arg_len[a], q.kept[a]);
        assert_memory_equal(r->args[a], q.args[a], q.kept[a]);
    }
    assert_int_equal(r->nkeys, q.nkeys);
    assert_int_equal(r->multi_slot, q.multi_slot);
    if (q.key0 == 0) {
        assert_int_equal(r->slot, -1);
        assert_int_equal(r->key0_len, 0);
        return;
    }
    const char *key = q.args[q.key0 - 1];
    uint32_t kl = q.full[q.key0 - 1];
    uint32_t kept = kl < RESP_ARG_PREFIX ? kl : RESP_ARG_PREFIX;
    assert_int_equal(r->key0_full_len, kl);
    assert_int_equal(r->key0_len, kept);
    assert_memory_equal(r->key0, key, kept);
    assert_int_equal(r->slot, resp_key_slot((const uint8_t *)key, kl));
}

/* Queue requests first .. first + n - 1 of shape_request in one chunk. */
static void shape_queue(h_ctx *h, int first, int n)
{
    static char buf[400 * 600];
    shape_req q;
    size_t len = 0;
    for (int i = first; i < first + n; i++)
        len += shape_request(buf + len, sizeof buf - len, i, &q);
    h_data(h, CAP_TO_SERVER, buf, len);
}

/* Requests of every text shape, most of them packed (far more than
 * RQ_WHOLE_CONN in flight), over stale page bytes: each comes out as it
 * was sent, paired, and unanswered when the connection closes first. */
static void test_packed_shapes(void **state)
{
    (void)state;
    resp_config cfg;
    resp_config_defaults(&cfg);
    cfg.key_fn = shape_key_fn;
    h_ctx h;
    h_init(&h, 1, &cfg);
    h_open(&h);
    poison = 1;
    shape_queue(&h, 0, 320);
    assert_int_equal(h_rc(&h)->whole_held, RQ_WHOLE_CONN);
    for (int i = 0; i < 300; i++)
        h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    shape_queue(&h, 320, 100);
    for (int i = 0; i < 50; i++)
        h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_close(&h);
    poison = 0;
    assert_int_equal(h.ncmds, 420);
    for (int i = 0; i < 420; i++)
        shape_check(&h.cmds[i], i, i < 350 ? RESP_OK : RESP_UNANSWERED);
    h_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_4gb_reply),
        cmocka_unit_test(test_4gb_request),
        cmocka_unit_test(test_no_alloc_per_message),
        cmocka_unit_test(test_burst_pages_reused),
        cmocka_unit_test(test_slots_clean_over_junk),
        cmocka_unit_test(test_pool_bounded_after_deep_burst),
        cmocka_unit_test(test_lossy_reply_stream_bounded),
        cmocka_unit_test(test_keep_buffer_freed),
        cmocka_unit_test(test_whole_and_packed_mixed),
        cmocka_unit_test(test_packed_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
