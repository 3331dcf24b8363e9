/*
 * test_resp_pair.c - request/reply pairing: pipelining, MULTI/EXEC, pub/sub,
 * RESP3 pushes, MONITOR, CLIENT REPLY, HELLO, RESET, QUIT, blocking commands,
 * cluster commands, kept replies, credentials, the in-flight cap.
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

#define PING "*1\r\n$4\r\nPING\r\n"

/* Build a multibulk request from words (NULL-terminated) into buf. */
static const char *mb(char *buf, size_t size, ...)
{
    va_list ap;
    const char *w;
    int n = 0;
    va_start(ap, size);
    while (va_arg(ap, const char *) != NULL)
        n++;
    va_end(ap);
    size_t o = (size_t)snprintf(buf, size, "*%d\r\n", n);
    va_start(ap, size);
    while ((w = va_arg(ap, const char *)) != NULL)
        o += (size_t)snprintf(buf + o, size - o, "$%zu\r\n%s\r\n", strlen(w), w);
    va_end(ap);
    return buf;
}

/* Expect command i to be name with outcome. */
static void expect(const h_ctx *h, size_t i, const char *name, resp_outcome out)
{
    if (i >= h->ncmds)
        fail_msg("command %zu missing (%zu emitted)\n%s", i, h->ncmds, h->log);
    if (strcmp(h->cmds[i].req.name, name) != 0 || h->cmds[i].outcome != out)
        fail_msg("command %zu: %s/%d, want %s/%d\n%s", i, h->cmds[i].req.name,
                 (int)h->cmds[i].outcome, name, (int)out, h->log);
}

/* ---------------------------------------------------------------- pipelining */

static void test_deep_pipeline(void **state)
{
    (void)state;
    const size_t n = 10000;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    char req[64];
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "key:%zu", i);
        mb(req, sizeof req, "GET", key, NULL);
        h_str(&h, CAP_TO_SERVER, req);
    }
    for (size_t i = 0; i < n; i++) {
        char rep[32];
        snprintf(rep, sizeof rep, ":%zu\r\n", i);
        h_str(&h, CAP_TO_CLIENT, rep);
    }
    h_close(&h);
    assert_int_equal(h.ncmds, n);
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "key:%zu", i);
        assert_int_equal(h.cmds[i].outcome, RESP_OK);
        assert_int_equal(h.cmds[i].seq, i);
        assert_int_equal(h.cmds[i].reply.integer, (int64_t)i); /* FIFO order kept */
        assert_int_equal(h.cmds[i].req.slot, resp_key_slot((const uint8_t *)key, strlen(key)));
    }
    assert_int_equal(h.closed.paired, n);
    h_free(&h);
}

/* The sink's per-connection word is asked once and carried by every
 * command. An entry that carried an error reply (text, MOVED target) is
 * reused with no trace of it: the next command in that ring slot has an empty
 * error text and no redirection. */
static void test_conn_word_and_reused_entry(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h.conn_word = 0x1234567890abcdefULL;
    h_open(&h);
    char req[64];
    /* 7629: the slot of k (a node redirects a command for its key's slot) */
    const char *replies[] = {"-MOVED 7629 10.0.0.7:6381\r\n", "+OK\r\n", ":5\r\n",
                             "-ERR unknown\r\n", "$1\r\nx\r\n", "+OK\r\n"};
    const size_t n = sizeof replies / sizeof replies[0];
    for (int round = 0; round < 2; round++) { /* once one by one, once pipelined */
        size_t first = h.ncmds;
        for (size_t i = 0; i < n; i++) {
            mb(req, sizeof req, "GET", "k", NULL);
            h_str(&h, CAP_TO_SERVER, req);
            if (round == 0)
                h_str(&h, CAP_TO_CLIENT, replies[i]);
        }
        for (size_t i = 0; round == 1 && i < n; i++)
            h_str(&h, CAP_TO_CLIENT, replies[i]);
        assert_int_equal(h.ncmds, first + n);
        for (size_t i = first; i < first + n; i++) {
            const resp_reply *r = &h.cmds[i].reply;
            assert_int_equal(h.cmds[i].outcome, RESP_OK);
            assert_true(h.cmds[i].conn_word == 0x1234567890abcdefULL);
            if (i == first) {
                assert_int_equal(r->err, RESP_ERR_MOVED);
                assert_string_equal(r->errtext, "MOVED 7629 10.0.0.7:6381");
                assert_int_equal(r->redir.slot, 7629);
                assert_int_equal(r->redir.port, 6381);
                assert_string_equal(r->redir.host, "10.0.0.7");
            } else if (i == first + 3) {
                assert_int_equal(r->err, RESP_ERR_OTHER);
                assert_string_equal(r->errtext, "ERR unknown");
                assert_int_equal(r->redir.slot, -1);
            } else {
                assert_int_equal(r->err, RESP_ERR_NONE);
                assert_string_equal(r->errtext, "");
                assert_int_equal(r->redir.slot, -1);
                assert_int_equal(r->redir.port, 0);
                assert_string_equal(r->redir.host, "");
            }
        }
    }
    h_close(&h);
    assert_int_equal(h.conn_words, 1);
    h_free(&h);
}

/* A reply is decoded straight into the entry of the request at the head
 * (pair.c, reply_begin). A reply split across chunks, with requests
 * pipelined in between that make the ring grow (its entries move), still
 * pairs whole: a bulk, and a blob error whose text and MOVED target are
 * read across the move. */
static void test_reply_split_across_ring_growth(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    char req[64];
    mb(req, sizeof req, "GET", "k", NULL);
    h_str(&h, CAP_TO_SERVER, req);
    h_str(&h, CAP_TO_SERVER, req);
    h.ts = 2000;
    h_str(&h, CAP_TO_CLIENT, "$5\r\nhel");
    h.ts = 3000;
    for (int i = 0; i < 40; i++) /* the ring grows from 2 to 64 entries */
        h_str(&h, CAP_TO_SERVER, req);
    h_str(&h, CAP_TO_CLIENT, "lo\r\n!24\r\nMOVED 3999 10.0");
    for (int i = 0; i < 100; i++) /* and again, to 256 */
        h_str(&h, CAP_TO_SERVER, req);
    h.ts = 4000;
    h_str(&h, CAP_TO_CLIENT, ".0.7:6381\r\n");
    for (int i = 0; i < 140; i++)
        h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 142);
    const resp_reply *r = &h.cmds[0].reply;
    assert_int_equal(h.cmds[0].outcome, RESP_OK);
    assert_int_equal(r->type, RESP_T_BULK);
    assert_int_equal(r->bytes, 11);
    assert_int_equal(r->start_us, 2000);
    assert_int_equal(r->ts_us, 3000);
    assert_int_equal(r->err, RESP_ERR_NONE);
    r = &h.cmds[1].reply;
    assert_int_equal(h.cmds[1].outcome, RESP_OK);
    assert_int_equal(r->type, RESP_T_BLOBERR);
    assert_int_equal(r->start_us, 3000);
    assert_int_equal(r->ts_us, 4000);
    assert_int_equal(r->err, RESP_ERR_MOVED);
    assert_string_equal(r->errtext, "MOVED 3999 10.0.0.7:6381");
    assert_int_equal(r->redir.slot, 3999);
    assert_int_equal(r->redir.port, 6381);
    assert_string_equal(r->redir.host, "10.0.0.7");
    for (size_t i = 2; i < h.ncmds; i++) { /* no trace of the error after it */
        r = &h.cmds[i].reply;
        assert_int_equal(h.cmds[i].outcome, RESP_OK);
        assert_int_equal(r->type, RESP_T_SIMPLE);
        assert_int_equal(r->err, RESP_ERR_NONE);
        assert_string_equal(r->errtext, "");
        assert_int_equal(r->redir.slot, -1);
    }
    assert_int_equal(h.closed.paired, 142);
    h_free(&h);
}

/* A request dropped at the in-flight cap while a reply is being decoded into
 * the head's entry: the queue is given up (the head emitted unanswered,
 * with no trace of the half-read error reply), the reply is still read to
 * its end and counted as unpaired, so are the replies of the other two, and
 * the entries reused afterwards carry nothing of it. */
static void test_drop_while_reply_in_head(void **state)
{
    (void)state;
    resp_config cfg;
    resp_config_defaults(&cfg);
    cfg.max_inflight = 2;
    h_ctx h;
    h_init(&h, 1, &cfg);
    h_open(&h);
    char req[64];
    mb(req, sizeof req, "GET", "k", NULL);
    h_str(&h, CAP_TO_SERVER, req);
    h_str(&h, CAP_TO_SERVER, req);
    h_str(&h, CAP_TO_CLIENT, "!24\r\nMOVED 3999 10.0");
    h_str(&h, CAP_TO_SERVER, req); /* dropped: all three unanswered */
    assert_int_equal(h.ncmds, 3);
    for (size_t i = 0; i < 3; i++) {
        expect(&h, i, "GET", RESP_UNANSWERED);
        assert_int_equal(h.cmds[i].reply.err, RESP_ERR_NONE);
        assert_string_equal(h.cmds[i].reply.errtext, "");
        assert_int_equal(h.cmds[i].reply.type, RESP_T_NONE);
    }
    h_str(&h, CAP_TO_CLIENT, ".0.7:6381\r\n"); /* no request waits: unpaired */
    assert_int_equal(resp_get_stats(h.rp)->total.unpaired_replies, 1);
    /* the other two GETs' replies: owed by the requests given up (nothing
     * is paired before they came) */
    h_str(&h, CAP_TO_CLIENT, "$1\r\nv\r\n$1\r\nv\r\n");
    assert_int_equal(resp_get_stats(h.rp)->total.unpaired_replies, 3);
    /* solid ground again: requests in the ring slots the error was in */
    for (int i = 0; i < 4; i++) {
        h_str(&h, CAP_TO_SERVER, req);
        h_str(&h, CAP_TO_CLIENT, ":7\r\n");
    }
    h_close(&h);
    assert_int_equal(h.ncmds, 7);
    for (size_t i = 3; i < 7; i++) {
        expect(&h, i, "GET", RESP_OK);
        assert_int_equal(h.cmds[i].reply.type, RESP_T_INT);
        assert_int_equal(h.cmds[i].reply.integer, 7);
        assert_int_equal(h.cmds[i].reply.err, RESP_ERR_NONE);
        assert_string_equal(h.cmds[i].reply.errtext, "");
        assert_int_equal(h.cmds[i].reply.redir.slot, -1);
    }
    h_free(&h);
}

/* More in flight than max_inflight: the drop is counted and the connection
 * goes out of sync instead of pairing wrongly. */
static void test_inflight_cap(void **state)
{
    (void)state;
    resp_config cfg;
    resp_config_defaults(&cfg);
    cfg.max_inflight = 3;
    h_ctx h;
    h_init(&h, 1, &cfg);
    h_open(&h);
    for (int i = 0; i < 4; i++)
        h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n+PONG\r\n+PONG\r\n+PONG\r\n");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    const resp_stats *st = resp_get_stats(h.rp);
    assert_int_equal(st->dropped_requests, 1);
    h_close(&h);
    assert_int_equal(h.ncmds, 5);
    for (int i = 0; i < 4; i++)
        expect(&h, (size_t)i, "PING", RESP_UNANSWERED);
    expect(&h, 4, "PING", RESP_OK);
    assert_int_equal(h.closed.out_of_sync, 1);
    assert_int_equal(h.closed.unpaired_replies, 4);
    h_free(&h);

    /* the cap over all connections works the same way */
    resp_config_defaults(&cfg);
    cfg.max_inflight_total = 2;
    h_init(&h, 1, &cfg);
    h_open(&h);
    for (int i = 0; i < 3; i++)
        h_str(&h, CAP_TO_SERVER, PING);
    assert_int_equal(resp_get_stats(h.rp)->dropped_requests, 1);
    h_close(&h);
    assert_int_equal(h.ncmds, 3);
    assert_int_equal(h.closed.unpaired_requests, 3);
    h_free(&h);
}

/* ---------------------------------------------------------------- MULTI */

static void test_multi_exec(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "MULTI", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "SET", "a", "1", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "GET", "b", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "EXEC", NULL));
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+QUEUED\r\n-MOVED 3300 127.0.0.1:30202\r\n"
                             "-EXECABORT Transaction discarded because of previous errors.\r\n");
    /* a successful one, then DISCARD */
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "MULTI", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "INCR", "c", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "EXEC", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "MULTI", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "DISCARD", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "GET", "c", NULL));
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+QUEUED\r\n*1\r\n:1\r\n+OK\r\n+OK\r\n$1\r\n1\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 10);
    for (size_t i = 0; i < 10; i++)
        assert_int_equal(h.cmds[i].outcome, RESP_OK);
    assert_int_equal(h.cmds[0].in_multi, 0);
    assert_int_equal(h.cmds[1].in_multi, 1);
    assert_int_equal(h.cmds[1].reply.type, RESP_T_SIMPLE);
    assert_int_equal(h.cmds[2].in_multi, 1);
    assert_int_equal(h.cmds[2].reply.err, RESP_ERR_MOVED);
    assert_int_equal(h.cmds[2].reply.redir.slot, 3300);
    assert_int_equal(h.cmds[3].in_multi, 0);
    assert_int_equal(h.cmds[3].reply.err, RESP_ERR_EXECABORT);
    assert_int_equal(h.cmds[6].reply.type, RESP_T_ARRAY);
    assert_int_equal(h.cmds[6].reply.elements, 1);
    assert_int_equal(h.cmds[8].in_multi, 0); /* DISCARD */
    assert_int_equal(h.cmds[9].in_multi, 0);
    assert_int_equal(h.cmds[9].reply.type, RESP_T_BULK);
    h_free(&h);
}

/* ---------------------------------------------------------------- CLIENT REPLY and HELLO in MULTI
 *
 * The replies below are the bytes redis-server 7.0 sent (tests/fixtures/resp/
 * txmodes.pcap): queued CLIENT REPLY and HELLO act when EXEC runs them. */

/* Send the words of each request (one string per request, space separated)
 * as multibulks, one chunk per request, or all in one chunk. */
static void send_reqs(h_ctx *h, int pipelined, const char *const *reqs, size_t n)
{
    char all[2048] = "";
    for (size_t i = 0; i < n; i++) {
        char words[128], b[256];
        const char *w[6] = { NULL };
        size_t k = 0;
        snprintf(words, sizeof words, "%s", reqs[i]);
        for (char *t = strtok(words, " "); t != NULL && k < 5; t = strtok(NULL, " "))
            w[k++] = t;
        mb(b, sizeof b, w[0], w[1], w[2], w[3], w[4], w[5]);
        if (pipelined)
            strncat(all, b, sizeof all - strlen(all) - 1);
        else
            h_str(h, CAP_TO_SERVER, b);
    }
    if (pipelined)
        h_str(h, CAP_TO_SERVER, all);
}

/* MULTI, CLIENT REPLY OFF, SET, EXEC: the server sends "*2" and no element;
 * the GET after EXEC gets nothing, CLIENT REPLY ON and the next GET do. */
static void test_tx_client_reply_off(void **state)
{
    (void)state;
    static const char *const reqs[] = { "MULTI", "CLIENT REPLY OFF", "SET k v", "EXEC",
                                        "GET k", "CLIENT REPLY ON", "GET k" };
    for (int pipelined = 0; pipelined <= 1; pipelined++) {
        h_ctx h;
        h_init(&h, 1, NULL);
        h_open(&h);
        send_reqs(&h, pipelined, reqs, 7);
        h_str(&h, CAP_TO_CLIENT, "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n$1\r\nv\r\n");
        h_close(&h);
        assert_int_equal(h.ncmds, 7);
        expect(&h, 1, "CLIENT", RESP_OK); /* +QUEUED */
        expect(&h, 2, "SET", RESP_OK);
        expect(&h, 3, "EXEC", RESP_OK);
        assert_int_equal(h.cmds[3].reply.type, RESP_T_ARRAY);
        assert_int_equal(h.cmds[3].reply.elements, 2);
        assert_int_equal(h.cmds[3].reply.bytes, 4);
        expect(&h, 4, "GET", RESP_NO_REPLY);
        expect(&h, 5, "CLIENT", RESP_OK);
        assert_int_equal(h.cmds[5].reply.type, RESP_T_SIMPLE);
        expect(&h, 6, "GET", RESP_OK);
        assert_int_equal(h.cmds[6].reply.type, RESP_T_BULK);
        assert_int_equal(h.closed.unpaired_replies + h.closed.unpaired_requests, 0);
        assert_int_equal(h.closed.out_of_sync, 0);
        h_free(&h);
    }
}

/* CLIENT REPLY SKIP inside MULTI skips the first command after EXEC; SKIP then
 * OFF then ON inside: ON's +OK and the GET are the two elements sent of 4. */
static void test_tx_client_reply_skip(void **state)
{
    (void)state;
    static const char *const reqs[] = { "MULTI", "CLIENT REPLY SKIP", "CLIENT REPLY OFF",
                                        "CLIENT REPLY ON", "GET k", "EXEC", "GET k", "GET k" };
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    send_reqs(&h, 1, reqs, 8);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"
                             "*4\r\n+OK\r\n$1\r\nv\r\n$1\r\nv\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 8);
    expect(&h, 5, "EXEC", RESP_OK);
    assert_int_equal(h.cmds[5].reply.elements, 4);
    assert_int_equal(h.cmds[5].reply.bytes, 4 + 5 + 7);
    expect(&h, 6, "GET", RESP_NO_REPLY);
    expect(&h, 7, "GET", RESP_OK);
    assert_int_equal(h.closed.unpaired_replies + h.closed.unpaired_requests, 0);
    h_free(&h);

    /* SKIP as the last queued command: EXEC's "*2" carries one element */
    static const char *const last[] = { "MULTI", "GET k", "CLIENT REPLY SKIP", "EXEC",
                                        "PING", "PING" };
    h_init(&h, 1, NULL);
    h_open(&h);
    send_reqs(&h, 1, last, 6);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n$1\r\nv\r\n+PONG\r\n");
    h_close(&h);
    expect(&h, 3, "EXEC", RESP_OK);
    expect(&h, 4, "PING", RESP_NO_REPLY);
    expect(&h, 5, "PING", RESP_OK);
    assert_int_equal(h.closed.unpaired_replies + h.closed.unpaired_requests, 0);
    h_free(&h);
}

/* Replies off before MULTI: nothing for MULTI and the queued commands, no
 * header at EXEC, and what the queued CLIENT REPLY ON lets through (its +OK,
 * the GET's bulk) comes as loose replies, both EXEC's. */
static void test_tx_client_reply_on_loose(void **state)
{
    (void)state;
    static const char *const reqs[] = { "CLIENT REPLY OFF", "MULTI", "CLIENT REPLY ON",
                                        "GET k", "EXEC", "GET k" };
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    send_reqs(&h, 0, reqs, 6);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n$1\r\nv\r\n$1\r\nv\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 6);
    expect(&h, 0, "CLIENT", RESP_NO_REPLY);
    expect(&h, 1, "MULTI", RESP_NO_REPLY);
    expect(&h, 2, "CLIENT", RESP_NO_REPLY); /* queued silently */
    expect(&h, 3, "GET", RESP_NO_REPLY);
    expect(&h, 4, "EXEC", RESP_OK);
    assert_int_equal(h.cmds[4].reply.type, RESP_T_BULK); /* the last loose one */
    expect(&h, 5, "GET", RESP_OK);
    assert_int_equal(h.closed.unpaired_replies + h.closed.unpaired_requests, 0);
    h_free(&h);
}

/* HELLO 3 inside MULTI: EXEC's header is RESP2, HELLO's element a RESP3 map,
 * and the connection is RESP3 after EXEC (HGETALL of nothing: "%0"). */
static void test_tx_hello(void **state)
{
    (void)state;
    static const char *const reqs[] = { "MULTI", "HELLO 3", "SET k v", "EXEC", "HGETALL h",
                                        "PING" };
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    send_reqs(&h, 1, reqs, 6);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n%1\r\n$5\r\nproto\r\n:3\r\n"
                             "+OK\r\n%0\r\n+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 6);
    expect(&h, 1, "HELLO", RESP_OK);
    assert_int_equal(h.cmds[1].resp3, 0); /* queued, not run */
    expect(&h, 3, "EXEC", RESP_OK);
    expect(&h, 4, "HGETALL", RESP_OK);
    assert_int_equal(h.cmds[4].resp3, 1);
    assert_int_equal(h.cmds[4].reply.type, RESP_T_MAP);
    expect(&h, 5, "PING", RESP_OK);
    assert_int_equal(h.cmds[5].resp3, 1);
    h_free(&h);

    /* a failed WATCH: the HELLO never ran, the connection stays RESP2 */
    static const char *const watched[] = { "WATCH w", "MULTI", "HELLO 3", "EXEC", "HGETALL h" };
    h_init(&h, 1, NULL);
    h_open(&h);
    send_reqs(&h, 0, watched, 5);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+OK\r\n+QUEUED\r\n*-1\r\n*0\r\n");
    h_close(&h);
    expect(&h, 3, "EXEC", RESP_OK);
    assert_int_equal(h.cmds[3].reply.type, RESP_T_NIL);
    expect(&h, 4, "HGETALL", RESP_OK);
    assert_int_equal(h.cmds[4].resp3, 0);
    h_free(&h);
}

/* A transaction that does not run (failed WATCH, EXECABORT, DISCARD) leaves
 * the replies on. When requests were pipelined after its EXEC, they were
 * counted with replies off: the pairing is declared lost, not guessed. */
static void test_tx_not_run(void **state)
{
    (void)state;
    static const char *const watched[] = { "WATCH w", "MULTI", "CLIENT REPLY OFF", "GET k",
                                           "EXEC" };
    static const char *const aborted[] = { "MULTI", "CLIENT REPLY OFF", "NOSUCHCMD", "EXEC" };
    static const char *const discarded[] = { "MULTI", "CLIENT REPLY OFF", "DISCARD" };
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    send_reqs(&h, 0, watched, 5);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*-1\r\n");
    send_reqs(&h, 0, (const char *const[]){ "GET k" }, 1);
    h_str(&h, CAP_TO_CLIENT, "$1\r\nv\r\n");
    send_reqs(&h, 0, aborted, 4);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+QUEUED\r\n-ERR unknown command 'NOSUCHCMD'\r\n"
                             "-EXECABORT Transaction discarded because of previous errors.\r\n");
    send_reqs(&h, 0, (const char *const[]){ "GET k" }, 1);
    h_str(&h, CAP_TO_CLIENT, "$1\r\nv\r\n");
    send_reqs(&h, 0, discarded, 3);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+QUEUED\r\n+OK\r\n");
    send_reqs(&h, 0, (const char *const[]){ "GET k" }, 1);
    h_str(&h, CAP_TO_CLIENT, "$1\r\nv\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 15);
    for (size_t i = 0; i < h.ncmds; i++)
        assert_int_equal(h.cmds[i].outcome, RESP_OK);
    expect(&h, 5, "GET", RESP_OK);
    expect(&h, 10, "GET", RESP_OK);
    expect(&h, 14, "GET", RESP_OK);
    assert_int_equal(h.closed.out_of_sync, 0);
    h_free(&h);

    /* pipelined past the EXEC that turns out not to run */
    static const char *const piped[] = { "WATCH w", "MULTI", "CLIENT REPLY OFF", "EXEC",
                                         "GET k", "GET k" };
    h_init(&h, 1, NULL);
    h_open(&h);
    send_reqs(&h, 1, piped, 6);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+OK\r\n+QUEUED\r\n*-1\r\n$1\r\nv\r\n$1\r\nv\r\n");
    send_reqs(&h, 0, (const char *const[]){ "PING" }, 1);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    expect(&h, 3, "EXEC", RESP_OK);
    assert_int_equal(h.cmds[3].reply.type, RESP_T_NIL);
    assert_int_equal(h.closed.out_of_sync, 1);
    assert_int_not_equal(h.cmds[4].outcome, RESP_OK); /* not guessed */
    assert_int_not_equal(h.cmds[5].outcome, RESP_OK);
    expect(&h, 6, "PING", RESP_OK); /* solid ground again */
    h_free(&h);
}

/* ---------------------------------------------------------------- pub/sub */

static void test_pubsub_resp2(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "SUBSCRIBE", "news", "sport", NULL));
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n");
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$9\r\nsubscribe\r\n$5\r\nsport\r\n:2\r\n");
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$3\r\nhi!\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "PSUBSCRIBE", "n*", NULL));
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$7\r\nmessage\r\n$5\r\nsport\r\n$1\r\n0\r\n");
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$10\r\npsubscribe\r\n$2\r\nn*\r\n:3\r\n");
    h_str(&h, CAP_TO_CLIENT, "*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$1\r\nx\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "PING", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "GET", "k", NULL)); /* not allowed: an error */
    h_str(&h, CAP_TO_CLIENT, "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    h_str(&h, CAP_TO_CLIENT, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n");
    /* unsubscribe from all channels: one confirmation per channel */
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "UNSUBSCRIBE", NULL));
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:2\r\n");
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$7\r\nmessage\r\n$5\r\nsport\r\n$1\r\n1\r\n");
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$11\r\nunsubscribe\r\n$5\r\nsport\r\n:1\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "PUNSUBSCRIBE", NULL));
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$12\r\npunsubscribe\r\n$2\r\nn*\r\n:0\r\n");
    /* out of subscribed mode: an array starting with "message" is a reply */
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "LRANGE", "l", "0", "-1", NULL));
    h_str(&h, CAP_TO_CLIENT, "*2\r\n$7\r\nmessage\r\n$1\r\nb\r\n");
    h_close(&h);
    expect(&h, 0, "SUBSCRIBE", RESP_OK);
    assert_int_equal(h.cmds[0].reply.start_us, h.cmds[0].reply.ts_us); /* same ts here */
    expect(&h, 1, "PSUBSCRIBE", RESP_OK);
    expect(&h, 2, "PING", RESP_OK);
    assert_int_equal(h.cmds[2].reply.type, RESP_T_ARRAY);
    expect(&h, 3, "GET", RESP_OK);
    assert_int_equal(h.cmds[3].reply.type, RESP_T_ERROR);
    expect(&h, 4, "UNSUBSCRIBE", RESP_OK);
    expect(&h, 5, "PUNSUBSCRIBE", RESP_OK);
    expect(&h, 6, "LRANGE", RESP_OK);
    assert_int_equal(h.ncmds, 7);
    assert_int_equal(h.closed.pushes, 4);
    assert_int_equal(h.closed.unpaired_replies, 0);
    assert_int_equal(h.closed.subscribed, 1);
    h_free(&h);
}

/* Sharded pub/sub and an unsolicited sunsubscribe (slot moved). */
static void test_pubsub_sharded(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "SSUBSCRIBE", "{s}a", "{s}b", NULL));
    h_str(&h, CAP_TO_CLIENT, "*3\r\n$10\r\nssubscribe\r\n$4\r\n{s}a\r\n:1\r\n"
                             "*3\r\n$10\r\nssubscribe\r\n$4\r\n{s}b\r\n:2\r\n"
                             "*3\r\n$8\r\nsmessage\r\n$4\r\n{s}a\r\n$1\r\nm\r\n"
                             "*3\r\n$12\r\nsunsubscribe\r\n$4\r\n{s}a\r\n:1\r\n");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 2);
    expect(&h, 0, "SSUBSCRIBE", RESP_OK);
    assert_int_equal(h.cmds[0].req.nkeys, 1); /* default key hook: first argument */
    expect(&h, 1, "PING", RESP_OK);
    assert_int_equal(h.closed.pushes, 2);
    h_free(&h);
}

/* A SUBSCRIBE answered by an error (e.g. -MOVED for SSUBSCRIBE in a cluster). */
static void test_subscribe_error(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "SSUBSCRIBE", "x", "y", NULL));
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "-CROSSSLOT Keys in request don't hash to the same slot\r\n+PONG\r\n");
    h_close(&h);
    expect(&h, 0, "SSUBSCRIBE", RESP_OK);
    assert_int_equal(h.cmds[0].reply.err, RESP_ERR_CROSSSLOT);
    expect(&h, 1, "PING", RESP_OK);
    h_free(&h);
}

/* RESP3: HELLO 3, client tracking invalidations and pub/sub pushes interleaved
 * with replies; none of them is paired. */
static void test_resp3_pushes(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "HELLO", "3", NULL));
    h_str(&h, CAP_TO_CLIENT, "%1\r\n$5\r\nproto\r\n:3\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLIENT", "TRACKING", "ON", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "GET", "k", NULL));
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n$1\r\nv\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "SUBSCRIBE", "c", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "GET", "k", NULL));
    h_str(&h, CAP_TO_CLIENT, ">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"
                             ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n"
                             ">2\r\n$10\r\ninvalidate\r\n_\r\n"
                             "_\r\n");
    /* in RESP3 a normal array starting with "message" is a reply even when
     * subscribed */
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "LRANGE", "l", "0", "1", NULL));
    h_str(&h, CAP_TO_CLIENT, "*1\r\n$7\r\nmessage\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 6);
    expect(&h, 0, "HELLO", RESP_OK);
    assert_int_equal(h.cmds[0].resp3, 1);
    assert_int_equal(h.cmds[0].reply.type, RESP_T_MAP);
    expect(&h, 1, "CLIENT", RESP_OK);
    expect(&h, 2, "GET", RESP_OK);
    assert_int_equal(h.cmds[2].reply.type, RESP_T_BULK);
    expect(&h, 3, "SUBSCRIBE", RESP_OK);
    assert_int_equal(h.cmds[3].reply.type, RESP_T_PUSH);
    expect(&h, 4, "GET", RESP_OK);
    assert_int_equal(h.cmds[4].reply.type, RESP_T_NULL);
    assert_int_equal(h.cmds[4].resp3, 1);
    expect(&h, 5, "LRANGE", RESP_OK);
    assert_int_equal(h.closed.pushes, 3);
    h_free(&h);
}

/* HELLO that fails does not switch; RESET returns to RESP2 and ends MONITOR. */
static void test_hello_reset_monitor(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "HELLO", "4", NULL));
    h_str(&h, CAP_TO_CLIENT, "-NOPROTO unsupported protocol version\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "HELLO", "3", NULL));
    h_str(&h, CAP_TO_CLIENT, "%0\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "MONITOR", NULL));
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_str(&h, CAP_TO_CLIENT, "+1339518083.107412 [0 127.0.0.1:60866] \"keys\" \"*\"\r\n");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+1339518099.363765 [0 127.0.0.1:60866] \"ping\"\r\n+PONG\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "RESET", NULL));
    h_str(&h, CAP_TO_CLIENT, "+1339518099.363766 [0 127.0.0.1:60866] \"reset\"\r\n+RESET\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "GET", "x", NULL));
    h_str(&h, CAP_TO_CLIENT, "+1339518083.107412 [0 127.0.0.1:60866] \"get\"\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "QUIT", NULL));
    h_str(&h, CAP_TO_SERVER, PING); /* after QUIT: never answered */
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 8);
    expect(&h, 0, "HELLO", RESP_OK);
    assert_int_equal(h.cmds[0].resp3, 0);
    expect(&h, 1, "HELLO", RESP_OK);
    assert_int_equal(h.cmds[1].resp3, 1);
    expect(&h, 2, "MONITOR", RESP_OK);
    expect(&h, 3, "PING", RESP_OK);
    assert_int_equal(h.cmds[3].reply.type, RESP_T_SIMPLE);
    expect(&h, 4, "RESET", RESP_OK);
    assert_int_equal(h.cmds[4].resp3, 0);
    /* after RESET a monitor-shaped line is a reply again */
    expect(&h, 5, "GET", RESP_OK);
    expect(&h, 6, "QUIT", RESP_OK);
    expect(&h, 7, "PING", RESP_UNANSWERED);
    assert_int_equal(h.closed.pushes, 3);
    assert_int_equal(h.closed.monitor, 1);
    assert_int_equal(h.closed.unpaired_requests, 1);
    h_free(&h);
}

/* CLIENT REPLY OFF / ON / SKIP, the cases of spicy-redis's traces. */
static void test_client_reply(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLIENT", "REPLY", "OFF", NULL));
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLIENT", "REPLY", "SKIP", NULL)); /* no effect */
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLIENT", "REPLY", "ON", NULL));
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLIENT", "REPLY", "SKIP", NULL));
    h_str(&h, CAP_TO_SERVER, PING); /* skipped */
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n+OK\r\n+PONG\r\n+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 9);
    expect(&h, 0, "PING", RESP_OK);
    expect(&h, 1, "CLIENT", RESP_NO_REPLY);
    expect(&h, 2, "PING", RESP_NO_REPLY);
    expect(&h, 3, "CLIENT", RESP_NO_REPLY);
    expect(&h, 4, "CLIENT", RESP_OK);
    expect(&h, 5, "PING", RESP_OK);
    expect(&h, 6, "CLIENT", RESP_NO_REPLY);
    expect(&h, 7, "PING", RESP_NO_REPLY);
    expect(&h, 8, "PING", RESP_OK);
    for (size_t i = 0; i < 9; i++)
        assert_int_equal(h.cmds[i].seq, i); /* emitted in order */
    assert_int_equal(h.closed.unpaired_replies, 0);
    assert_int_equal(h.closed.unpaired_requests, 0);
    h_free(&h);
}

/* Blocking commands are just late replies; ASKING / READONLY / READWRITE are
 * ordinary commands with replies. */
static void test_blocking_and_cluster(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "READONLY", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "ASKING", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "BLPOP", "q", "0", NULL));
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+OK\r\n");
    h.ts = 9000000;
    h_str(&h, CAP_TO_CLIENT, "*2\r\n$1\r\nq\r\n$1\r\nv\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "READWRITE", NULL));
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 4);
    expect(&h, 0, "READONLY", RESP_OK);
    expect(&h, 1, "ASKING", RESP_OK);
    expect(&h, 2, "BLPOP", RESP_OK);
    assert_int_equal(h.cmds[2].reply.ts_us, 9000000);
    assert_int_equal(h.cmds[2].req.ts_us, 1000);
    expect(&h, 3, "READWRITE", RESP_OK);
    h_free(&h);
}

/* A connection picked up mid-stream exactly at a request: its first reply
 * is found by the boundary search, which eats the reply's first line. When
 * that reply answers a certain CLUSTER SLOTS, its bytes are kept whole all
 * the same (the line handed back from the search), in one chunk or split
 * across several, so that the map is learnt; a first line longer than the
 * search keeps (RD_LBUF) cannot be handed back and the reply is not kept. */
static void test_kept_reply_midstream(void **state)
{
    (void)state;
    char b[256];
    const char *slots = "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:30201\r\n"
                        "$40\r\n0123456789012345678901234567890123456789\r\n";
    size_t sl = strlen(slots);
    static const size_t steps[] = {1, 2, 3, 7, 4096};
    for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++) {
        size_t step = steps[si];
        h_ctx h;
        h_init(&h, 0, NULL);
        h.verbose_raw = 1;
        h_open(&h);
        h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLUSTER", "SLOTS", NULL));
        for (size_t o = 0; o < sl; o += step)
            h_data(&h, CAP_TO_CLIENT, slots + o, sl - o < step ? sl - o : step);
        h_close(&h);
        assert_int_equal(h.ncmds, 1);
        assert_int_equal(h.cmds[0].outcome, RESP_OK);
        assert_int_equal(h.cmds[0].reply.raw_len, sl);
        char want[64];
        snprintf(want, sizeof want, " raw=%zu rawtext=*1\\x0d\\x0a*3\\x0d\\x0a:0", sl);
        if (!strstr(h.log, want))
            fail_msg("step %zu: %s not in %s", step, want, h.log);
        h_free(&h);
    }

    /* a simple string reply whose line is longer than the search keeps */
    char big[400];
    memset(big, 'x', sizeof big);
    big[0] = '+';
    memcpy(big + sizeof big - 3, "\r\n", 3);
    h_ctx h;
    h_init(&h, 0, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLUSTER", "NODES", NULL));
    h_str(&h, CAP_TO_CLIENT, big);
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    assert_int_equal(h.cmds[0].outcome, RESP_OK);
    assert_int_equal(h.cmds[0].reply.raw_len, 0);
    h_free(&h);
}

/* CLUSTER SLOTS: the raw reply is kept (and parses); other replies are not. */
static void test_kept_reply(void **state)
{
    (void)state;
    char b[256];
    const char *slots = "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:30201\r\n"
                        "$40\r\n0123456789012345678901234567890123456789\r\n";
    static const uint8_t *raw_seen;
    h_ctx h;
    h_init(&h, 1, NULL);
    h.verbose_raw = 1;
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "GET", "x", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "cluster", "slots", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLUSTER", "NODES", NULL));
    h_str(&h, CAP_TO_CLIENT, "$1\r\nv\r\n");
    /* split the kept reply across chunks */
    size_t sl = strlen(slots);
    for (size_t o = 0; o < sl; o += 5)
        h_data(&h, CAP_TO_CLIENT, slots + o, sl - o < 5 ? sl - o : 5);
    h_str(&h, CAP_TO_CLIENT, "$5\r\nnodes\r\n");
    h_close(&h);
    (void)raw_seen;
    assert_int_equal(h.ncmds, 3);
    assert_null(h.cmds[0].reply.raw);
    assert_true(resp_keep_reply(&h.cmds[1].req));
    assert_int_equal(h.cmds[1].reply.raw_len, sl);
    /* the raw pointer is only valid during the callback: the log captured it */
    char want[64];
    snprintf(want, sizeof want, " raw=%zu rawtext=*1", sl);
    assert_non_null(strstr(h.log, want));
    assert_int_equal(h.cmds[2].reply.raw_len, 11);
    h_free(&h);

    /* a reply larger than max_kept_reply is not kept, and that is counted */
    resp_config cfg;
    resp_config_defaults(&cfg);
    cfg.max_kept_reply = 16;
    h_init(&h, 1, &cfg);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLUSTER", "SLOTS", NULL));
    h_str(&h, CAP_TO_CLIENT, slots);
    assert_int_equal(resp_get_stats(h.rp)->limit_hits, 1);
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    assert_null(h.cmds[0].reply.raw);
    assert_int_equal(h.cmds[0].reply.raw_len, 0);
    h_free(&h);

    /* nor is one that would take the kept bytes of all connections over
     * max_kept_total (the buffer starts at 4 KiB) */
    resp_config_defaults(&cfg);
    cfg.max_kept_total = 1024;
    h_init(&h, 1, &cfg);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CLUSTER", "SLOTS", NULL));
    h_str(&h, CAP_TO_CLIENT, slots);
    assert_int_equal(resp_get_stats(h.rp)->limit_hits, 1);
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    assert_null(h.cmds[0].reply.raw);
    h_free(&h);
}

/* ---------------------------------------------------------------- credentials */

/* 1 if needle occurs in the bytes of any emitted command. */
static int leaked(const h_ctx *h, const char *needle)
{
    size_t nl = strlen(needle);
    for (size_t i = 0; i < h->ncmds && i < H_MAX_CMDS; i++) {
        const uint8_t *p = (const uint8_t *)&h->cmds[i];
        size_t n = sizeof(h->cmds[i]);
        for (size_t j = 0; j + nl <= n; j++)
            if (memcmp(p + j, needle, nl) == 0)
                return 1;
    }
    return strstr(h->log, needle) != NULL;
}

static void test_credentials(void **state)
{
    (void)state;
    char b[512];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "AUTH", "Secret1pw", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "AUTH", "alice", "Secret2pw", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "HELLO", "3", "AUTH", "bobuser", "Secret3pw",
                                "SETNAME", "myconn", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "MIGRATE", "10.0.0.1", "7000", "", "0", "5000",
                                "AUTH2", "carol", "Secret4pw", "KEYS", "k1", "k2", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "MIGRATE", "10.0.0.1", "7000", "k", "0", "5000",
                                "COPY", "AUTH", "Secret5pw", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "CONFIG", "SET", "masterauth", "Secret6pw",
                                "requirepass", "Secret7pw", NULL));
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "ACL", "SETUSER", "dave", "on", ">Secret8pw", NULL));
    h_str(&h, CAP_TO_SERVER, "auth Secret9pw\r\n"); /* inline */
    h_str(&h, CAP_TO_SERVER, "*2\r\n$4\r\nAUTH\r\n$10\r\nSecret");  /* split */
    h_str(&h, CAP_TO_SERVER, "10pw\r\n");
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+OK\r\n%0\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 9);
    for (int i = 1; i <= 10; i++) {
        char pw[16];
        snprintf(pw, sizeof pw, "Secret%dpw", i);
        if (leaked(&h, pw))
            fail_msg("%s was kept", pw);
    }
    /* usernames given with the password are secret too, lengths are counted */
    assert_false(leaked(&h, "bobuser"));
    assert_false(leaked(&h, "carol"));
    assert_int_equal(h.cmds[1].req.arg_len[1], 0);
    assert_int_equal(h.cmds[1].req.arg_full_len[1], 9);
    /* what is not secret is still there */
    assert_memory_equal(h.cmds[2].req.args[0], "3", 1);
    assert_memory_equal(h.cmds[2].req.args[1], "AUTH", 4);
    /* HELLO's user and password take no slot: SETNAME and its name are kept */
    assert_int_equal(h.cmds[2].req.nargs, 4);
    assert_int_equal(h.cmds[2].req.argc, 7);
    assert_memory_equal(h.cmds[2].req.args[2], "SETNAME", 7);
    assert_int_equal(h.cmds[2].req.arg_len[3], 6);
    assert_memory_equal(h.cmds[2].req.args[3], "myconn", 6);
    assert_true(leaked(&h, "masterauth"));
    assert_int_equal(h.cmds[0].req.nkeys, 0); /* credentials are never hashed as keys */
    h_free(&h);
}

/* ---------------------------------------------------------------- key hook */

/* A hook: keys are the arguments after the keyword KEYS (prev argument). */
static int keys_after_keyword(void *ctx, resp_keyctx *k)
{
    (void)ctx;
    if (k->scratch[0])
        return 1;
    if (k->prev != NULL && k->prev_len == 4 && memcmp(k->prev, "KEYS", 4) == 0) {
        k->scratch[0] = 1;
        return 1;
    }
    return 0;
}

static void test_key_hook(void **state)
{
    (void)state;
    char b[512];
    resp_config cfg;
    resp_config_defaults(&cfg);
    cfg.key_fn = keys_after_keyword;
    h_ctx h;
    h_init(&h, 1, &cfg);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "X", "a", "b", "c", "d", "e", "f", "KEYS",
                                "{t}1", "{t}2", "other", NULL));
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    const resp_request *q = &h.cmds[0].req;
    assert_int_equal(q->nkeys, 3);
    assert_int_equal(q->slot, resp_key_slot((const uint8_t *)"t", 1));
    assert_int_equal(q->multi_slot, 1); /* "other" is elsewhere */
    assert_memory_equal(q->key0, "{t}1", 4);
    assert_int_equal(q->nargs, RESP_ARG_KEEP);
    h_free(&h);
}

/* PSYNC: the server side turns into a replication stream, not replies. */
static void test_replication(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "REPLCONF", "capa", "psync2", NULL));
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "PSYNC", "?", "-1", NULL));
    h_str(&h, CAP_TO_CLIENT, "+FULLRESYNC 8de1787ba490483314a4d30f1c628bc5025eb761 0\r\n"
                             "$5\r\nREDIS*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "REPLCONF", "ACK", "0", NULL));
    h_close(&h);
    assert_int_equal(h.ncmds, 3);
    expect(&h, 0, "REPLCONF", RESP_OK);
    expect(&h, 1, "PSYNC", RESP_OK);
    expect(&h, 2, "REPLCONF", RESP_NO_REPLY);
    assert_int_equal(h.closed.replication, 1);
    assert_int_equal(h.closed.protocol_errors, 0);
    h_free(&h);
}

/* A master sends bare "\n" keepalives while the replica waits for PSYNC's
 * answer (seen on a real Redis 7 cluster): skipped, not a protocol error. */
static void test_replication_newline_keepalive(void **state)
{
    (void)state;
    char b[256];
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "PSYNC", "?", "-1", NULL));
    h_str(&h, CAP_TO_CLIENT, "\n");
    h_str(&h, CAP_TO_CLIENT, "\n\n");
    h_str(&h, CAP_TO_CLIENT, "+FULLRESYNC 8de1787ba490483314a4d30f1c628bc5025eb761 0\r\n"
                             "$5\r\nREDIS");
    h_str(&h, CAP_TO_SERVER, mb(b, sizeof b, "REPLCONF", "ACK", "0", NULL));
    h_close(&h);
    assert_int_equal(h.ncmds, 2);
    expect(&h, 0, "PSYNC", RESP_OK);
    expect(&h, 1, "REPLCONF", RESP_NO_REPLY);
    assert_int_equal(h.closed.replication, 1);
    assert_int_equal(h.closed.protocol_errors, 0);
    assert_int_equal(h.closed.resyncs, 0);
    assert_int_equal(h.closed.unpaired_replies, 0);
    h_free(&h);
}

/* Totals across connections and the close of unanswered requests. */
static void test_stats_and_close(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, PING PING PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    const resp_stats *st = resp_get_stats(h.rp);
    assert_int_equal(st->total.requests, 3);
    assert_int_equal(st->total.paired, 1);
    assert_int_equal(st->connections, 1);
    h_close(&h);
    assert_int_equal(h.closes, 1);
    assert_int_equal(h.ncmds, 3);
    expect(&h, 1, "PING", RESP_UNANSWERED);
    expect(&h, 2, "PING", RESP_UNANSWERED);
    /* conn_close comes after the unanswered commands */
    assert_true(strstr(h.log, "close ") > strstr(h.log, "seq=2"));
    st = resp_get_stats(h.rp);
    assert_int_equal(st->total.unpaired_requests, 2);
    assert_int_equal(st->commands, 3);
    assert_null(h.conn.user);
    h_free(&h);

    /* resp_free with a live connection (requests in flight, a kept reply
     * half read, a deep reply stack) frees everything (ASan checks leaks) */
    resp_config cfg;
    resp_config_defaults(&cfg);
    resp_pipeline *rp = resp_new(&cfg, NULL);
    cap_conn conn;
    memset(&conn, 0, sizeof conn);
    conn.saw_syn = 1;
    cap_event ev;
    memset(&ev, 0, sizeof ev);
    ev.conn = &conn;
    ev.kind = CAP_EV_DATA;
    ev.dir = CAP_TO_SERVER;
    const char *q = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n" PING;
    ev.data = (const uint8_t *)q;
    ev.len = strlen(q);
    resp_on_capture_event(rp, &ev);
    ev.dir = CAP_TO_CLIENT;
    const char *a = "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1";
    ev.data = (const uint8_t *)a;
    ev.len = strlen(a);
    resp_on_capture_event(rp, &ev);
    assert_non_null(conn.user);
    assert_int_equal(resp_get_stats(rp)->total.requests, 2);
    resp_free(rp);
    resp_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deep_pipeline),
        cmocka_unit_test(test_inflight_cap),
        cmocka_unit_test(test_multi_exec),
        cmocka_unit_test(test_tx_client_reply_off),
        cmocka_unit_test(test_tx_client_reply_skip),
        cmocka_unit_test(test_tx_client_reply_on_loose),
        cmocka_unit_test(test_tx_hello),
        cmocka_unit_test(test_tx_not_run),
        cmocka_unit_test(test_pubsub_resp2),
        cmocka_unit_test(test_pubsub_sharded),
        cmocka_unit_test(test_subscribe_error),
        cmocka_unit_test(test_resp3_pushes),
        cmocka_unit_test(test_hello_reset_monitor),
        cmocka_unit_test(test_client_reply),
        cmocka_unit_test(test_blocking_and_cluster),
        cmocka_unit_test(test_kept_reply),
        cmocka_unit_test(test_kept_reply_midstream),
        cmocka_unit_test(test_credentials),
        cmocka_unit_test(test_key_hook),
        cmocka_unit_test(test_replication),
        cmocka_unit_test(test_replication_newline_keepalive),
        cmocka_unit_test(test_stats_and_close),
        cmocka_unit_test(test_conn_word_and_reused_entry),
        cmocka_unit_test(test_reply_split_across_ring_growth),
        cmocka_unit_test(test_drop_while_reply_in_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
