/*
 * test_resp_alloc.c - a declared 4 GB bulk is skipped by counting: nothing is
 * allocated or buffered while its payload goes by, and the byte count is
 * exact. Allocations are counted by wrapping malloc/calloc/realloc at link
 * time (see tests/resp/CMakeLists.txt).
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

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

static size_t n_allocs; /* allocation calls since the last reset */

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_4gb_reply),
        cmocka_unit_test(test_4gb_request),
        cmocka_unit_test(test_no_alloc_per_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
