/*
 * test_resp_alloc.c - a declared 4 GB bulk is skipped by counting: nothing is
 * allocated or buffered while its payload goes by, and the byte count is
 * exact. Memory taken for a burst (a deep pipeline's in-flight ring, a kept
 * CLUSTER reply) is given back, without an allocation per command.
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
 * message once the ring has grown. */
static void test_no_alloc_per_message(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h.no_log = 1;
    h_open(&h);
    const char *req = "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n";
    for (int i = 0; i < 8; i++)
        h_str(&h, CAP_TO_SERVER, req);
    for (int i = 0; i < 8; i++)
        h_str(&h, CAP_TO_CLIENT, "$1\r\nx\r\n");
    n_allocs = 0;
    for (int round = 0; round < 1000; round++) {
        for (int i = 0; i < 8; i++)
            h_str(&h, CAP_TO_SERVER, req);
        for (int i = 0; i < 8; i++)
            h_str(&h, CAP_TO_CLIENT, "$1\r\nx\r\n");
    }
    assert_int_equal(n_allocs, 0);
    h_close(&h);
    assert_int_equal(h.closed.paired, 8008);
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

/* A burst of 300 pipelined requests grows the ring to 512 entries. Requests
 * one at a time after it: once a whole window (RING_WINDOW x 512 requests)
 * has passed without the burst in it, the ring is cut back to RING_KEEP,
 * with one allocation, not one per command. */
static void test_ring_shrinks_after_burst(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h.no_log = 1;
    h_open(&h);
    burst(&h, 300);
    assert_int_equal(h_rc(&h)->ring_cap, 512);
    n_allocs = 0;
    int singles = 0;
    while (h_rc(&h)->ring_cap == 512 && singles < 3 * RING_WINDOW * 512) {
        burst(&h, 1);
        singles++;
    }
    assert_int_equal(h_rc(&h)->ring_cap, RING_KEEP);
    assert_true(singles > RING_WINDOW * 512 - 300); /* not before a window */
    assert_true(singles <= 2 * RING_WINDOW * 512 + 1);
    assert_int_equal(n_allocs, 1); /* the smaller ring */
    assert_int_equal(h.rp->ring_shrinks, 1);
    n_allocs = 0;
    for (int i = 0; i < 1000; i++)
        burst(&h, 1);
    assert_int_equal(n_allocs, 0);
    h_close(&h);
    assert_int_equal(h.closed.paired, 300 + singles + 1000);
    assert_int_equal(h.closed.unpaired_requests, 0);
    h_free(&h);
}

/* A ring that is in use is not cut: bursts of 40 keep a 64-entry ring (40 is
 * more than a quarter of it), however long the connection lives, and cost no
 * allocation after the first. */
static void test_ring_kept_while_used(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h.no_log = 1;
    h_open(&h);
    burst(&h, 40);
    assert_int_equal(h_rc(&h)->ring_cap, 64);
    n_allocs = 0;
    for (int round = 0; round < 200; round++) {
        burst(&h, 40);
        for (int i = 0; i < 20; i++)
            burst(&h, 1);
    }
    assert_int_equal(n_allocs, 0);
    assert_int_equal(h_rc(&h)->ring_cap, 64);
    assert_int_equal(h.rp->ring_shrinks, 0);
    h_close(&h);
    assert_int_equal(h.closed.paired, 40 + 200 * 60);
    h_free(&h);
}

/* A ring's entries are initialised when first handed out, not when the ring
 * is made: a burst of 300 into a 512-entry ring initialises 300 (so a ring
 * doubled for a burst makes resident only what the burst used), later
 * requests take the rest in order, and after the wrap all are. Rings are
 * allocated over junk (stale heap): every command still comes out clean. */
static void test_ring_entries_initialised_on_use(void **state)
{
    (void)state;
    h_ctx h;
    poison = 1;
    h_init(&h, 1, NULL);
    h_open(&h);
    burst(&h, 300);
    assert_int_equal(h_rc(&h)->ring_cap, 512);
    assert_int_equal(h_rc(&h)->ring_fresh, 300);
    for (int i = 0; i < 100; i++)
        burst(&h, 1);
    assert_int_equal(h_rc(&h)->ring_fresh, 400);
    for (int i = 0; i < 200; i++)
        burst(&h, 1);
    assert_int_equal(h_rc(&h)->ring_fresh, 512); /* wrapped: every entry used */
    assert_int_equal(h_rc(&h)->ring_cap, 512);
    h_close(&h);
    poison = 0;
    assert_int_equal(h.ncmds, 600);
    for (size_t i = 0; i < h.ncmds; i++) {
        const resp_command *c = &h.cmds[i];
        assert_int_equal(c->outcome, RESP_OK);
        assert_string_equal(c->req.name, "GET");
        assert_int_equal(c->req.argc, 2);
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

/* A big ring drained and filled again and again (bursts; a stream nobody
 * answers, cut at the in-flight cap) is neither freed nor reallocated: no
 * allocation per round. It is cut back only after a window of shallow use. */
static void test_big_ring_no_churn(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h.no_log = 1;
    h_open(&h);
    burst(&h, 1500);
    assert_int_equal(h_rc(&h)->ring_cap, 2048);
    n_allocs = 0;
    for (int round = 0; round < 10; round++)
        burst(&h, 1500);
    assert_int_equal(n_allocs, 0);
    assert_int_equal(h_rc(&h)->ring_cap, 2048);
    assert_int_equal(h.rp->ring_shrinks, 0);
    int singles = 0;
    while (h_rc(&h)->ring_cap == 2048 && singles < 3 * RING_WINDOW * 2048) {
        burst(&h, 1);
        singles++;
    }
    assert_int_equal(h_rc(&h)->ring_cap, RING_KEEP);
    assert_int_equal(h.rp->ring_shrinks, 1);
    assert_int_equal(n_allocs, 1);
    h_close(&h);
    assert_int_equal(h.closed.paired, 11 * 1500 + singles);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_4gb_reply),
        cmocka_unit_test(test_4gb_request),
        cmocka_unit_test(test_no_alloc_per_message),
        cmocka_unit_test(test_ring_shrinks_after_burst),
        cmocka_unit_test(test_ring_kept_while_used),
        cmocka_unit_test(test_ring_entries_initialised_on_use),
        cmocka_unit_test(test_big_ring_no_churn),
        cmocka_unit_test(test_keep_buffer_freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
