/*
 * test_resp_decode.c - the RESP decoders: every type, every split point,
 * inline commands, limits, garbage, gaps, mid-stream starts.
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

/* ---------------------------------------------------------------- types */

typedef struct type_case {
    const char *reply;
    char type;          /* expected resp_type */
    long long integer;
    long long elements;
    const char *errtext;
    resp_err_class err;
} type_case;

static const type_case type_cases[] = {
    {"+OK\r\n", '+', 0, 0, "", RESP_ERR_NONE},
    {"-ERR bad thing\r\n", '-', 0, 0, "ERR bad thing", RESP_ERR_OTHER},
    {":-42\r\n", ':', -42, 0, "", RESP_ERR_NONE},
    {":9223372036854775807\r\n", ':', 9223372036854775807LL, 0, "", RESP_ERR_NONE},
    {":-9223372036854775808\r\n", ':', (-9223372036854775807LL - 1), 0, "", RESP_ERR_NONE},
    {"$3\r\nabc\r\n", '$', 0, 0, "", RESP_ERR_NONE},
    {"$0\r\n\r\n", '$', 0, 0, "", RESP_ERR_NONE},
    {"$-1\r\n", 'n', 0, -1, "", RESP_ERR_NONE},
    {"*2\r\n$1\r\na\r\n:1\r\n", '*', 0, 2, "", RESP_ERR_NONE},
    {"*0\r\n", '*', 0, 0, "", RESP_ERR_NONE},
    {"*-1\r\n", 'n', 0, -1, "", RESP_ERR_NONE},
    {"_\r\n", '_', 0, -1, "", RESP_ERR_NONE},
    {",3.14\r\n", ',', 0, 0, "", RESP_ERR_NONE},
    {",-inf\r\n", ',', 0, 0, "", RESP_ERR_NONE},
    {"#t\r\n", '#', 1, 0, "", RESP_ERR_NONE},
    {"#f\r\n", '#', 0, 0, "", RESP_ERR_NONE},
    {"!21\r\nSYNTAX invalid syntax\r\n", '!', 0, 0, "SYNTAX invalid syntax", RESP_ERR_OTHER},
    {"!25\r\nMOVED 3999 127.0.0.1:6381\r\n", '!', 0, 0, "MOVED 3999 127.0.0.1:6381", RESP_ERR_MOVED},
    {"=15\r\ntxt:Some string\r\n", '=', 0, 0, "", RESP_ERR_NONE},
    {"(3492890328409238509324850943850943825024385\r\n", '(', 0, 0, "", RESP_ERR_NONE},
    {"%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", '%', 0, 2, "", RESP_ERR_NONE},
    {"%0\r\n", '%', 0, 0, "", RESP_ERR_NONE},
    {"~3\r\n+a\r\n+b\r\n+c\r\n", '~', 0, 3, "", RESP_ERR_NONE},
    /* a top-level attribute is not the reply */
    {"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
     "*2\r\n:2039123\r\n:9543892\r\n", '*', 0, 2, "", RESP_ERR_NONE},
    /* an attribute inside an aggregate is not an element */
    {"*2\r\n|1\r\n+ttl\r\n:3600\r\n:1\r\n:2\r\n", '*', 0, 2, "", RESP_ERR_NONE},
    {"|0\r\n:7\r\n", ':', 7, 0, "", RESP_ERR_NONE},
    {"*3\r\n%1\r\n+k\r\n*2\r\n~1\r\n_\r\n#t\r\n$2\r\nab\r\n=4\r\ntxt:\r\n", '*', 0, 3, "",
     RESP_ERR_NONE},
    {"-MOVED 3999 127.0.0.1:6381\r\n", '-', 0, 0, "MOVED 3999 127.0.0.1:6381", RESP_ERR_MOVED},
};

/* Each type as the reply to a PING, followed by a second PING/PONG that must
 * still pair: the decoder consumed exactly the first reply. */
static void test_every_type(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof type_cases / sizeof type_cases[0]; i++) {
        const type_case *tc = &type_cases[i];
        h_ctx h;
        h_init(&h, 1, NULL);
        h_open(&h);
        h_str(&h, CAP_TO_SERVER, PING PING);
        h_str(&h, CAP_TO_CLIENT, tc->reply);
        h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
        h_close(&h);
        assert_int_equal(h.ncmds, 2);
        const resp_reply *r = &h.cmds[0].reply;
        if (r->type != (resp_type)tc->type)
            fail_msg("case %zu: type %c, want %c", i, (char)r->type, tc->type);
        assert_int_equal(h.cmds[0].outcome, RESP_OK);
        assert_int_equal(r->integer, tc->integer);
        assert_int_equal(r->elements, tc->elements);
        assert_string_equal(r->errtext, tc->errtext);
        assert_int_equal(r->err, tc->err);
        assert_int_equal(r->bytes, strlen(tc->reply));
        assert_int_equal(h.cmds[1].outcome, RESP_OK);
        assert_int_equal(h.cmds[1].reply.type, RESP_T_SIMPLE);
        assert_int_equal(h.closed.protocol_errors, 0);
        assert_int_equal(h.closed.paired, 2);
        h_free(&h);
    }
}

/* Request fields: name upper-cased, args kept, keys hashed. */
static void test_request_fields(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*3\r\n$3\r\nset\r\n$9\r\n{user1}.a\r\n$5\r\nhello\r\n");
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    const resp_request *q = &h.cmds[0].req;
    assert_string_equal(q->name, "SET");
    assert_int_equal(q->argc, 3);
    assert_int_equal(q->nargs, 2);
    assert_memory_equal(q->args[0], "{user1}.a", 9);
    assert_int_equal(q->arg_len[0], 9);
    assert_memory_equal(q->args[1], "hello", 5);
    assert_int_equal(q->nkeys, 1);
    assert_int_equal(q->slot, resp_key_slot((const uint8_t *)"user1", 5));
    assert_int_equal(q->key0_len, 9);
    assert_memory_equal(q->key0, "{user1}.a", 9);
    assert_int_equal(q->bytes, strlen("*3\r\n$3\r\nset\r\n$9\r\n{user1}.a\r\n$5\r\nhello\r\n"));
    h_free(&h);
}

/* A long key (1000 bytes) split across many chunks still gets its exact slot,
 * and only 64 bytes of it are kept. */
static void test_long_key_split(void **state)
{
    (void)state;
    char key[1001];
    for (int i = 0; i < 1000; i++)
        key[i] = (char)('a' + i % 26);
    key[1000] = '\0';
    char req[1100];
    snprintf(req, sizeof req, "*2\r\n$3\r\nGET\r\n$1000\r\n%s\r\n", key);
    for (long chunk = 1; chunk < 40; chunk += 3) {
        h_step steps[] = {{CAP_TO_SERVER, req, 0}, {CAP_TO_CLIENT, "$-1\r\n", 0}};
        h_ctx h;
        h_init(&h, 1, NULL);
        h_open(&h);
        size_t len = strlen(req);
        for (size_t o = 0; o < len; o += (size_t)chunk)
            h_data(&h, CAP_TO_SERVER, req + o, len - o < (size_t)chunk ? len - o : (size_t)chunk);
        h_str(&h, CAP_TO_CLIENT, steps[1].data);
        h_close(&h);
        assert_int_equal(h.ncmds, 1);
        assert_int_equal(h.cmds[0].req.slot, resp_key_slot((const uint8_t *)key, 1000));
        assert_int_equal(h.cmds[0].req.key0_len, RESP_ARG_PREFIX);
        assert_int_equal(h.cmds[0].req.key0_full_len, 1000);
        assert_memory_equal(h.cmds[0].req.key0, key, RESP_ARG_PREFIX);
        h_free(&h);
    }
}

/* ---------------------------------------------------------------- split invariance */

/* Sample conversations used for the split tests. */
static const h_step sample_a[] = {
    {CAP_TO_SERVER, "*3\r\n$3\r\nSET\r\n$9\r\n{user1}.a\r\n$5\r\nhello\r\n"
                    "*2\r\n$3\r\nGET\r\n$9\r\n{user1}.a\r\n"
                    "*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n", 0},
    {CAP_TO_SERVER, "$1\r\n2\r\nGET \"sp ace\" 'q\\'x'\r\nPING\n", 0},
    /* 15495: the slot of a, MSET's first key (the harness's only one) */
    {CAP_TO_CLIENT, "+OK\r\n$5\r\nhello\r\n-MOVED 15495 10.0.0.5:7001\r\n", 0},
    {CAP_TO_CLIENT, "$-1\r\n+PONG\r\n", 0},
    {CAP_TO_SERVER, "*2\r\n$4\r\nINCR\r\n$3\r\nctr\r\n*2\r\n$6\r\nLRANGE\r\n$1\r\nl\r\n", 0},
    {CAP_TO_CLIENT, ":-7\r\n*3\r\n$1\r\nx\r\n*2\r\n:1\r\n$0\r\n\r\n*-1\r\n", 0},
};
static const h_step sample_b[] = { /* RESP3 with pushes and attributes */
    {CAP_TO_SERVER, "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n", 0},
    {CAP_TO_CLIENT, "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n+OK\r\n", 0},
    {CAP_TO_SERVER, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*2\r\n$3\r\nGET\r\n$1\r\nj\r\n", 0},
    {CAP_TO_CLIENT, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n$1\r\nv\r\n"
                    "|1\r\n+a\r\n:1\r\n_\r\n>2\r\n$10\r\ninvalidate\r\n_\r\n", 0},
    {CAP_TO_SERVER, "*1\r\n$4\r\nPING\r\n", 0},
    {CAP_TO_CLIENT, "~2\r\n,1.5\r\n#f\r\n", 0},
};
static const h_step sample_c[] = { /* pub/sub and MULTI */
    {CAP_TO_SERVER, "*3\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\n$1\r\nb\r\n", 0},
    {CAP_TO_CLIENT, "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n"
                    "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$2\r\nhi\r\n", 0},
    {CAP_TO_SERVER, "*1\r\n$4\r\nPING\r\n*1\r\n$11\r\nUNSUBSCRIBE\r\n", 0},
    {CAP_TO_CLIENT, "*2\r\n$4\r\npong\r\n$0\r\n\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n"
                    "*3\r\n$7\r\nmessage\r\n$1\r\nb\r\n$2\r\nyo\r\n"
                    "*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n", 0},
    {CAP_TO_SERVER, "*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nx\r\n*1\r\n$4\r\nEXEC\r\n", 0},
    {CAP_TO_CLIENT, "+OK\r\n+QUEUED\r\n*1\r\n:1\r\n", 0},
};
static const h_step sample_d[] = { /* garbage on both sides, then recovery */
    {CAP_TO_SERVER, PING, 0},
    {CAP_TO_CLIENT, "+PONG\r\n", 0},
    {CAP_TO_SERVER, "*2\r\n#bad\r\n" PING, 0},
    {CAP_TO_CLIENT, "\x01\x02junk\r\n+PONG\r\n", 0},
    {CAP_TO_SERVER, PING, 0},
    {CAP_TO_CLIENT, "+PONG\r\n", 0},
};

/* What the one-step paths take when a whole message is in the chunk
 * (pipelined requests started right after the previous one; a status, an
 * integer, a bulk or a null bulk as a whole reply), next to what they leave
 * to the general path: "*0", an empty status and bulk, a status too long for
 * the quick look, monitor lines. Fed whole they go the short way, split they
 * cannot: the logs must agree. */
static const h_step sample_e[] = {
    {CAP_TO_SERVER, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n*0\r\n"
                    "*2\r\n$3\r\nget\r\n$1\r\nk\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
                    "*2\r\n$3\r\nGET\r\n$2\r\nno\r\n" PING "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"
                    PING "*2\r\n$2\r\nGE\r\n$1\r\nx\r\n*1\r\n$1\r\nX\r\n", 0},
    {CAP_TO_CLIENT, "+OK\r\n$2\r\nvv\r\n:-5\r\n$-1\r\n+\r\n$0\r\n\r\n"
                    "+this status is longer than thirty-two bytes\r\n:0\r\n-ERR x\r\n", 0},
    {CAP_TO_SERVER, "*1\r\n$7\r\nMONITOR\r\n", 0},
    {CAP_TO_CLIENT, "+OK\r\n+1.5 [0 x] \"GET\"\r\n+2.25 [0 y] \"SET\"\r\n", 0},
};

/* Malformed replies where the one-step path must give up and let the
 * general path find the error: a LF before any CR, a bulk without its CRLF,
 * a bad integer. Each is followed by a good request and reply. */
static const h_step sample_f[] = {
    {CAP_TO_SERVER, PING, 0},
    {CAP_TO_CLIENT, "+\nX\r\n", 0},
    {CAP_TO_SERVER, PING, 0},
    {CAP_TO_CLIENT, "+PONG\r\n", 0},
    {CAP_TO_SERVER, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 0},
    {CAP_TO_CLIENT, "$3\r\nabcX\r\n", 0},
    {CAP_TO_SERVER, PING, 0},
    {CAP_TO_CLIENT, "+PONG\r\n", 0},
    {CAP_TO_SERVER, "*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n", 0},
    {CAP_TO_CLIENT, ":+5\r\n", 0},
    {CAP_TO_SERVER, PING, 0},
    {CAP_TO_CLIENT, "+PONG\r\n", 0},
};

/* Feed a sample whole, byte by byte, in small chunks and split in two at every
 * offset of every step: the logs must be identical. */
static void check_split_invariance(const h_step *s, size_t n)
{
    char *whole = h_run(s, n, 0, 1, NULL);
    size_t maxlen = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = s[i].len ? s[i].len : strlen(s[i].data);
        if (l > maxlen)
            maxlen = l;
    }
    for (long k = 1; k <= 7; k++) {
        char *o = h_run(s, n, k, 1, NULL);
        if (strcmp(whole, o) != 0)
            fail_msg("chunks of %ld differ:\n--- whole\n%s--- split\n%s", k, whole, o);
        free(o);
    }
    for (long k = 1; k <= (long)maxlen; k++) {
        char *o = h_run(s, n, -k, 1, NULL);
        if (strcmp(whole, o) != 0)
            fail_msg("split at %ld differs:\n--- whole\n%s--- split\n%s", k, whole, o);
        free(o);
    }
    free(whole);
}

static void test_split_a(void **state)
{
    (void)state;
    check_split_invariance(sample_a, sizeof sample_a / sizeof sample_a[0]);
    char *log = h_run(sample_a, sizeof sample_a / sizeof sample_a[0], 0, 1, NULL);
    /* 7 requests: SET GET MSET GET(inline) PING(inline) INCR LRANGE, all paired */
    assert_non_null(strstr(log, "paired=7 ureq=0 urep=0"));
    assert_non_null(strstr(log, "name=GET argc=3 inl=1"));
    assert_non_null(strstr(log, "a1=sp ace/6 a2=q'x/3"));
    assert_non_null(strstr(log, "redir=15495@10.0.0.5:7001"));
    free(log);
}

static void test_split_b(void **state)
{
    (void)state;
    check_split_invariance(sample_b, sizeof sample_b / sizeof sample_b[0]);
    char *log = h_run(sample_b, sizeof sample_b / sizeof sample_b[0], 0, 1, NULL);
    assert_non_null(strstr(log, "paired=5 ureq=0 urep=0"));
    assert_non_null(strstr(log, "push=2"));
    free(log);
}

static void test_split_c(void **state)
{
    (void)state;
    check_split_invariance(sample_c, sizeof sample_c / sizeof sample_c[0]);
    char *log = h_run(sample_c, sizeof sample_c / sizeof sample_c[0], 0, 1, NULL);
    assert_non_null(strstr(log, "paired=6 ureq=0 urep=0"));
    assert_non_null(strstr(log, "push=2"));
    free(log);
}

static void test_split_d(void **state)
{
    (void)state;
    check_split_invariance(sample_d, sizeof sample_d / sizeof sample_d[0]);
}

static void test_split_e(void **state)
{
    (void)state;
    check_split_invariance(sample_e, sizeof sample_e / sizeof sample_e[0]);
    char *log = h_run(sample_e, sizeof sample_e / sizeof sample_e[0], 0, 1, NULL);
    /* 10 commands paired, "*0" is none; the two monitor lines are pushes */
    assert_non_null(strstr(log, "paired=10 ureq=0 urep=0"));
    assert_non_null(strstr(log, "push=2"));
    free(log);
}

static void test_split_f(void **state)
{
    (void)state;
    check_split_invariance(sample_f, sizeof sample_f / sizeof sample_f[0]);
    char *log = h_run(sample_f, sizeof sample_f / sizeof sample_f[0], 0, 1, NULL);
    assert_non_null(strstr(log, "perr=3"));
    free(log);
}

/* Pipelined requests whose headers take rq_fast's word reads when fed whole
 * ("*<1..9>", "$<1..2 digits>") next to those that do not (two-digit
 * counts, three-digit lengths, a leading zero), names of 1 to 40 bytes in
 * any case, more arguments than are kept, credentials: the general states
 * (every split) must give the same log. */
static const h_step sample_fast[] = {
    {CAP_TO_SERVER,
     "*1\r\n$1\r\nx\r\n*2\r\n$2\r\nGe\r\n$1\r\nk\r\n*2\r\n$4\r\nincr\r\n$10\r\n0123456789\r\n"
     "*3\r\n$3\r\nset\r\n$22\r\nkey:{06S}:000000849830\r\n$0\r\n\r\n"
     "*13\r\n$4\r\nMSET\r\n$2\r\nk1\r\n$2\r\nv1\r\n$2\r\nk2\r\n$2\r\nv2\r\n$2\r\nk3\r\n$2\r\nv3\r\n"
     "$2\r\nk4\r\n$2\r\nv4\r\n$2\r\nk5\r\n$2\r\nv5\r\n$2\r\nk6\r\n$2\r\nv6\r\n"
     "*3\r\n$3\r\nSET\r\n$99\r\n"
     "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
     "\r\n$100\r\n"
     "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
     "\r\n*2\r\n$40\r\nabcdefghijklmnopqrstuvwxyzabcdefghijklmn\r\n$1\r\nz\r\n"
     "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n*5\r\n$5\r\nhello\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n"
     "$2\r\npw\r\n*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$11\r\nrequirepass\r\n$2\r\npw\r\n"
     "*9\r\n$4\r\nDUMP\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n"
     "$1\r\ng\r\n$1\r\nh\r\n*2\r\n$3\r\nGET\r\n$03\r\nabc\r\n*1\r\n$4\r\nPING\r\n", 0},
};

static void test_fast_headers(void **state)
{
    (void)state;
    check_split_invariance(sample_fast, sizeof sample_fast / sizeof sample_fast[0]);
    char *log = h_run(sample_fast, sizeof sample_fast / sizeof sample_fast[0], 0, 1, NULL);
    assert_non_null(strstr(log, "name=X argc=1"));
    assert_non_null(strstr(log, "name=GE argc=2"));
    assert_non_null(strstr(log, "a1=0123456789/10"));
    assert_non_null(strstr(log, "a1=key:{06S}:000000849830/22 a2=/0"));
    assert_non_null(strstr(log, "name=MSET argc=13"));
    assert_non_null(strstr(log, "a5=k3/2 nkeys=1"));
    assert_non_null(strstr(log, "/99 a2=vvvv"));
    assert_non_null(strstr(log, "/100 nkeys=1"));
    assert_non_null(strstr(log, "name=ABCDEFGHIJKLMNOPQRSTUVWXYZABCDE argc=2"));
    assert_non_null(strstr(log, "name=AUTH argc=2 inl=0 bytes=26"));
    assert_null(strstr(log, "secret"));
    assert_null(strstr(log, "=pw/"));
    assert_non_null(strstr(log, "name=DUMP argc=9"));
    assert_non_null(strstr(log, "perr=1"));
    free(log);
}

/* Inputs a fuzzer found to decode differently depending on the chunking. */
static void test_split_regressions(void **state)
{
    (void)state;
    /* a quoting error mid-line: the resync must start at the bad byte */
    static const h_step r1[] = {{CAP_TO_SERVER, "''\x13" "4\0\r\n*2\r\n$3$\r\n\xcc\r", 19}};
    check_split_invariance(r1, 1);
}

/* Deterministic xorshift64 generator for the random streams. */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Building blocks of random conversations: valid messages, near misses and
 * garbage, for each direction. */
static const char *const req_pieces[] = {
    "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n", "*1\r\n$4\r\nPING\r\n", "PING\r\n",
    "*3\r\n$3\r\nSET\r\n$5\r\n{k}ey\r\n$2\r\nvv\r\n", "*1\r\n$5\r\nMULTI\r\n",
    "*1\r\n$4\r\nEXEC\r\n", "*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n",
    "*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n",
    "*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$2\r\nON\r\n", "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n",
    "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n", "set \"a b\" 'c'\r\n", "\r\n", "*0\r\n",
    "*2\r\n$3\r\nGET\r\n$-1\r\n", "*x\r\n", "$3\r\nabc\r\n", "\x01\xff\x02",
    "*2\r\n$3\r\nGET\r\n$100\r\nshort", "GET \"unbalanced\r\n",
    "*1\r\n$7\r\nMONITOR\r\n", "*1\r\n$5\r\nRESET\r\n",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
};
static const char *const rep_pieces[] = {
    "+OK\r\n", "$3\r\nbar\r\n", "$-1\r\n", ":42\r\n", "-ERR x\r\n",
    "-MOVED 12 127.0.0.1:7000\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+a\r\n_\r\n",
    ">2\r\n$10\r\ninvalidate\r\n_\r\n", "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n",
    "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n", "+QUEUED\r\n", "*1\r\n:1\r\n",
    "|1\r\n+k\r\n:1\r\n#t\r\n", "+1.5 [0 1.2.3.4:5] \"get\"\r\n", "+RESET\r\n",
    "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:0\r\n", "$5\r\nab", "junk\r\n", "\x00\x01\x02\r",
    "+aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
    "$-7\r\n", "=4\r\ntxt:\r\n", "!3\r\nERR\r\n", ",1e3\r\n", "(12\r\n", "~0\r\n",
};

/* Random conversations, including garbage, over-long lines and deep
 * nesting (small limits), give the same events whatever the chunking. */
static void test_random_split_invariance(void **state)
{
    (void)state;
    resp_config cfg;
    resp_config_defaults(&cfg);
    cfg.max_depth = 4;
    cfg.max_line = 64;
    const size_t nreq = sizeof req_pieces / sizeof req_pieces[0];
    const size_t nrep = sizeof rep_pieces / sizeof rep_pieces[0];
    for (int iter = 0; iter < 300; iter++) {
        h_step steps[12];
        char *bufs[12];
        size_t n = 2 + rnd() % 10;
        for (size_t i = 0; i < n; i++) {
            int to_server = (int)(rnd() % 2);
            size_t cap = 1024, len = 0;
            char *b = malloc(cap);
            size_t parts = 1 + rnd() % 4;
            for (size_t k = 0; k < parts; k++) {
                const char *piece = to_server ? req_pieces[rnd() % nreq] : rep_pieces[rnd() % nrep];
                size_t pl = strlen(piece);
                if (pl == 0)
                    pl = 1; /* a lone NUL */
                if (rnd() % 8 == 0)
                    pl = 1 + rnd() % pl; /* truncated */
                if (len + pl > cap)
                    break;
                memcpy(b + len, piece, pl);
                len += pl;
            }
            if (len == 0)
                b[len++] = '\n';
            steps[i].dir = to_server ? CAP_TO_SERVER : CAP_TO_CLIENT;
            steps[i].data = b;
            steps[i].len = len;
            bufs[i] = b;
        }
        int syn = (int)(rnd() % 3 != 0);
        char *whole = h_run(steps, n, 0, syn, &cfg);
        long chunks[4] = {1, 2 + (long)(rnd() % 5), 7 + (long)(rnd() % 30), -(long)(1 + rnd() % 40)};
        for (int c = 0; c < 4; c++) {
            char *o = h_run(steps, n, chunks[c], syn, &cfg);
            if (strcmp(whole, o) != 0)
                fail_msg("iteration %d, chunking %ld differs:\n--- whole\n%s--- split\n%s", iter,
                         chunks[c], whole, o);
            free(o);
        }
        free(whole);
        for (size_t i = 0; i < n; i++)
            free(bufs[i]);
    }
}

/* ---------------------------------------------------------------- inline */

static void test_inline(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "\r\n  \r\nset \"a b\" 'c\\'d' \"\\x41\\n\\xZZ\"\r\nPING\n");
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 2); /* the empty lines are no commands */
    const resp_request *q = &h.cmds[0].req;
    assert_string_equal(q->name, "SET");
    assert_int_equal(q->inline_cmd, 1);
    assert_int_equal(q->argc, 4);
    assert_memory_equal(q->args[0], "a b", 3);
    assert_memory_equal(q->args[1], "c'd", 3);
    assert_int_equal(q->arg_len[2], 5);
    assert_memory_equal(q->args[2], "A\nxZZ", 5);
    assert_int_equal(q->slot, resp_key_slot((const uint8_t *)"a b", 3));
    assert_string_equal(h.cmds[1].req.name, "PING");
    assert_int_equal(h.closed.paired, 2);
    h_free(&h);

    /* unbalanced quotes: a protocol error; the server rejects the line whole
     * (no SET runs) and its error answers that line, split anywhere */
    static const char *const bad[] = {"SET \"abc\r\n", "SET \"abc\"x 1\r\n", "\"abc\r\n"};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
        for (size_t cut = 1; cut < strlen(bad[b]); cut++) {
            h_init(&h, 1, NULL);
            h_open(&h);
            h_data(&h, CAP_TO_SERVER, bad[b], cut);
            h_str(&h, CAP_TO_SERVER, bad[b] + cut);
            h_str(&h, CAP_TO_CLIENT, "-ERR Protocol error: unbalanced quotes in request\r\n");
            h_close(&h);
            assert_int_equal(h.closed.protocol_errors, 1);
            assert_int_equal(h.ncmds, 1);
            assert_string_equal(h.cmds[0].req.name, "");
            assert_int_equal(h.cmds[0].req.nkeys, 0);
            assert_int_equal(h.cmds[0].req.slot, -1);
            assert_int_equal(h.cmds[0].reply.err, RESP_ERR_OTHER);
            assert_int_equal(h.closed.paired, 1);
            assert_int_equal(h.closed.unpaired_replies, 0);
            h_free(&h);
        }
}

/* ---------------------------------------------------------------- limits */

/* Feed one reply after a PING; return protocol errors, limit hits via *limits. */
static uint64_t reply_errors(const char *reply, size_t len, uint64_t *limits, const resp_config *cfg)
{
    h_ctx h;
    h_init(&h, 1, cfg);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, PING);
    h_data(&h, CAP_TO_CLIENT, reply, len ? len : strlen(reply));
    h_close(&h);
    uint64_t e = h.closed.protocol_errors;
    if (limits)
        *limits = resp_get_stats(h.rp)->limit_hits;
    h_free(&h);
    return e;
}

static void test_limits(void **state)
{
    (void)state;
    uint64_t lim = 0;
    /* nesting deeper than max_depth (64) */
    char deep[65 * 4 + 8] = "";
    for (int i = 0; i < 65; i++)
        strcat(deep, "*1\r\n");
    strcat(deep, ":1\r\n");
    assert_int_equal(reply_errors(deep, 0, &lim, NULL), 1);
    assert_int_equal(lim, 1);
    /* exactly 64 is fine */
    deep[0] = '\0';
    for (int i = 0; i < 64; i++)
        strcat(deep, "*1\r\n");
    strcat(deep, ":1\r\n");
    assert_int_equal(reply_errors(deep, 0, &lim, NULL), 0);
    /* element counts beyond 2^31-1 */
    assert_int_equal(reply_errors("*3000000000\r\n", 0, &lim, NULL), 1);
    assert_int_equal(lim, 1);
    assert_int_equal(reply_errors("%2000000000\r\n", 0, &lim, NULL), 0); /* 4e9 elements: ok */
    /* a line without CRLF beyond max_line */
    size_t n = 70000;
    char *line = malloc(n);
    memset(line, 'a', n);
    line[0] = '+';
    assert_int_equal(reply_errors(line, n, &lim, NULL), 1);
    assert_int_equal(lim, 1);
    free(line);
    /* hostile numbers */
    const char *bad[] = {"$-2\r\n", "$abc\r\n", "*01\r\n", ":99999999999999999999\r\n",
                         "$9223372036854775808\r\n", ":-0\r\n", "#x\r\n", "_x\r\n",
                         "$3\r\nabcXY", "+OK\n", "?\r\n", "$\r\n", "*-2\r\n", "%-1\r\n",
                         ":\r\n", "$ 1\r\n", ":+1\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (reply_errors(bad[i], 0, NULL, NULL) != 1)
            fail_msg("no protocol error for '%s'", bad[i]);
    }
}

static void test_request_limits(void **state)
{
    (void)state;
    const char *bad[] = {
        "*2\r\n$3\r\nSET\r\n$600000000\r\n",   /* beyond proto-max-bulk-len */
        "*2\r\n$3\r\nGET\r\n$-1\r\n",          /* no null bulk in requests */
        "*2\r\n$3\r\nGET\r\n:1\r\n",           /* only bulk strings */
        "*2\r\n$3\r\nGETXX\r\n",               /* payload longer than declared */
        "*3000000000\r\n",                     /* too many arguments */
        "*1x\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        h_ctx h;
        h_init(&h, 1, NULL);
        h_open(&h);
        h_str(&h, CAP_TO_SERVER, bad[i]);
        h_close(&h);
        if (h.closed.protocol_errors != 1)
            fail_msg("no protocol error for request %zu", i);
        assert_int_equal(h.ncmds, 0);
        h_free(&h);
    }
    /* "*0" and "*-1" are ignored by Redis: no command, no error */
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*0\r\n*-1\r\n" PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.closed.protocol_errors, 0);
    assert_int_equal(h.closed.paired, 1);
    h_free(&h);
}

/* ---------------------------------------------------------------- garbage, gaps */

static void test_garbage_request(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*1\r\n$4\r\nPING\r\n");
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    /* the garbage was a request to the server (Redis closes a connection
     * on a protocol error): its reply comes first, then ECHO's */
    h_str(&h, CAP_TO_SERVER, "*2\r\n#bad\r\n*1\r\n$4\r\nECHO\r\n");
    h_str(&h, CAP_TO_CLIENT, "+G\r\n");
    h_str(&h, CAP_TO_CLIENT, "+X\r\n");
    h_str(&h, CAP_TO_SERVER, "*1\r\n$4\r\nPING\r\n");
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 3);
    assert_int_equal(h.cmds[0].outcome, RESP_OK);
    /* the request after the garbage: its reply can't be trusted */
    assert_string_equal(h.cmds[1].req.name, "ECHO");
    assert_int_equal(h.cmds[1].outcome, RESP_UNANSWERED);
    /* solid ground again: a reply came with nothing queued (+X), so the
     * garbage's was among those seen */
    assert_int_equal(h.cmds[2].outcome, RESP_OK);
    assert_int_equal(h.cmds[2].reply.bytes, strlen("+PONG\r\n"));
    assert_int_equal(h.closed.protocol_errors, 1);
    assert_int_equal(h.closed.resyncs, 1);
    assert_int_equal(h.closed.skipped_bytes, strlen("*2\r\n#bad\r\n"));
    assert_int_equal(h.closed.out_of_sync, 1);
    assert_int_equal(h.closed.unpaired_requests, 1);
    assert_int_equal(h.closed.unpaired_replies, 2); /* +G (ECHO took it) and +X */
    h_free(&h);
}

static void test_garbage_reply(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, PING PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n\x01\x02 junk \xff\r\n+PONG\r\n");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 3);
    assert_int_equal(h.cmds[0].outcome, RESP_OK);
    assert_int_equal(h.cmds[1].outcome, RESP_UNANSWERED); /* dropped at the loss */
    assert_int_equal(h.cmds[2].outcome, RESP_OK);
    assert_int_equal(h.closed.protocol_errors, 1);
    assert_int_equal(h.closed.resyncs, 1);
    assert_int_equal(h.closed.skipped_bytes, strlen("\x01\x02 junk \xff\r\n"));
    assert_int_equal(h.closed.unpaired_replies, 1); /* the +PONG found by the resync */
    h_free(&h);
}

static void test_gap_request_side(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$5\r\nab");
    h_gap(&h, CAP_TO_SERVER, 1000);
    h_str(&h, CAP_TO_SERVER, "tail of something\r\n*2\r\n$3\r\nGET\r\n$1\r\nc\r\n");
    h_str(&h, CAP_TO_CLIENT, "$1\r\nA\r\n$-1\r\n$1\r\nC\r\n");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    /* GET a (queued before the gap: still answered first), GET c (after the
     * gap: its reply can't be told from the lost GET's), PING */
    assert_int_equal(h.ncmds, 3);
    assert_int_equal(h.cmds[0].outcome, RESP_OK);
    assert_int_equal(h.cmds[0].reply.type, RESP_T_BULK);
    assert_memory_equal(h.cmds[1].req.args[0], "c", 1);
    assert_int_equal(h.cmds[1].outcome, RESP_UNANSWERED);
    assert_string_equal(h.cmds[2].req.name, "PING");
    assert_int_equal(h.cmds[2].outcome, RESP_OK);
    assert_int_equal(h.cmds[2].reply.type, RESP_T_SIMPLE);
    assert_int_equal(h.closed.out_of_sync, 1);
    assert_int_equal(h.closed.resyncs, 1);
    h_free(&h);
}

static void test_gap_reply_side(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*2\r\n$3\r\nGET\r\n$1\r\na\r\n");
    h_str(&h, CAP_TO_CLIENT, "$100000\r\nxxxx");
    h_gap(&h, CAP_TO_CLIENT, 0); /* length unknown: even inside a bulk, a loss */
    h_str(&h, CAP_TO_CLIENT, "yyyy");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "yyyy\r\n+PONG\r\n");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 3);
    assert_int_equal(h.cmds[0].outcome, RESP_UNANSWERED);
    assert_int_equal(h.cmds[1].outcome, RESP_UNANSWERED); /* uncertain */
    assert_int_equal(h.cmds[2].outcome, RESP_OK);
    assert_int_equal(h.closed.out_of_sync, 1);
    h_free(&h);
}

/* n bytes of ch in direction dir. */
static void h_fill(h_ctx *h, cap_dir dir, char ch, size_t n)
{
    char buf[4096];
    assert_true(n <= sizeof buf);
    memset(buf, ch, n);
    h_data(h, dir, buf, n);
}

/* Assert that a command was paired with no loss of sync on the connection. */
static void assert_paired_in_sync(const h_ctx *h, size_t ncmds)
{
    assert_int_equal(h->ncmds, ncmds);
    for (size_t i = 0; i < ncmds; i++)
        assert_int_equal(h->cmds[i].outcome, RESP_OK);
    assert_int_equal(h->closed.out_of_sync, 0);
    assert_int_equal(h->closed.unpaired_requests, 0);
    assert_int_equal(h->closed.unpaired_replies, 0);
    assert_int_equal(h->closed.resyncs, 0);
}

/* SET k <200-byte value>, sent as: header, first_part value bytes, a gap of
 * gap bytes, the rest of the value and CRLF; then GET k. Both answered. */
static void run_set_with_gap(h_ctx *h, size_t first_part, size_t gap)
{
    h_init(h, 1, NULL);
    h_open(h);
    h_str(h, CAP_TO_SERVER, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$200\r\n");
    h_fill(h, CAP_TO_SERVER, 'v', first_part);
    h_gap(h, CAP_TO_SERVER, gap);
    h_fill(h, CAP_TO_SERVER, 'v', 200 - first_part - gap);
    h_str(h, CAP_TO_SERVER, "\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    h_str(h, CAP_TO_CLIENT, "+OK\r\n$1\r\nv\r\n");
    h_close(h);
}

/* A gap inside a request's value, of known length, costs only the value's
 * bytes: the command is still emitted, flagged, and pairing stays exact. */
static void test_gap_inside_request_bulk(void **state)
{
    (void)state;
    h_ctx h;
    /* the gap hits the kept prefix: it is withdrawn */
    run_set_with_gap(&h, 30, 100);
    assert_paired_in_sync(&h, 2);
    assert_string_equal(h.cmds[0].req.name, "SET");
    assert_int_equal(h.cmds[0].req.gap, 1);
    assert_int_equal(h.cmds[0].req.slot_unknown, 0);
    assert_int_equal(h.cmds[0].req.slot, resp_key_slot((const uint8_t *)"k", 1));
    assert_int_equal(h.cmds[0].req.nkeys, 1);
    assert_int_equal(h.cmds[0].req.arg_len[1], 0);
    assert_int_equal(h.cmds[0].req.arg_full_len[1], 200);
    assert_int_equal(h.cmds[0].req.bytes, strlen("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$200\r\n") + 202);
    assert_int_equal(h.cmds[0].reply.type, RESP_T_SIMPLE);
    assert_string_equal(h.cmds[1].req.name, "GET");
    assert_int_equal(h.cmds[1].req.gap, 0);
    assert_int_equal(h.cmds[1].reply.type, RESP_T_BULK);
    assert_int_equal(h.closed.gaps_bridged, 1);
    h_free(&h);

    /* past the kept prefix: the prefix stays */
    run_set_with_gap(&h, 100, 50);
    assert_paired_in_sync(&h, 2);
    assert_int_equal(h.cmds[0].req.gap, 1);
    assert_int_equal(h.cmds[0].req.arg_len[1], RESP_ARG_PREFIX);
    assert_memory_equal(h.cmds[0].req.args[1], "vvvv", 4);
    h_free(&h);

    /* the gap ends exactly at the end of the payload */
    run_set_with_gap(&h, 150, 50);
    assert_paired_in_sync(&h, 2);
    assert_int_equal(h.closed.gaps_bridged, 1);
    h_free(&h);
}

/* A gap inside a reply's bulk: the reply still pairs, flagged. */
static void test_gap_inside_reply_bulk(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*2\r\n$3\r\nGET\r\n$1\r\na\r\n" PING);
    h_str(&h, CAP_TO_CLIENT, "$300\r\n");
    h_fill(&h, CAP_TO_CLIENT, 'x', 100);
    h_gap(&h, CAP_TO_CLIENT, 150);
    h_fill(&h, CAP_TO_CLIENT, 'x', 50);
    h_str(&h, CAP_TO_CLIENT, "\r\n+PONG\r\n");
    h_close(&h);
    assert_paired_in_sync(&h, 2);
    assert_int_equal(h.cmds[0].reply.type, RESP_T_BULK);
    assert_int_equal(h.cmds[0].reply.gap, 1);
    assert_int_equal(h.cmds[0].reply.bytes, strlen("$300\r\n") + 302);
    assert_string_equal(h.cmds[1].req.name, "PING");
    assert_int_equal(h.cmds[1].reply.type, RESP_T_SIMPLE);
    assert_int_equal(h.cmds[1].reply.gap, 0);
    assert_int_equal(h.closed.gaps_bridged, 1);
    h_free(&h);

    /* inside an element of an aggregate, over the rest of it and its CRLF
     * (whose bytes are known) */
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*3\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nb\r\n" PING);
    h_str(&h, CAP_TO_CLIENT, "*2\r\n$-1\r\n$500\r\n");
    h_fill(&h, CAP_TO_CLIENT, 'x', 200);
    h_gap(&h, CAP_TO_CLIENT, 302);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_paired_in_sync(&h, 2);
    assert_int_equal(h.cmds[0].reply.type, RESP_T_ARRAY);
    assert_int_equal(h.cmds[0].reply.elements, 2);
    assert_int_equal(h.cmds[0].reply.gap, 1);
    assert_int_equal(h.cmds[1].reply.type, RESP_T_SIMPLE);
    h_free(&h);
}

/* A gap that starts inside a value and runs past its end (into the next
 * header) is a loss: the SET is given up and the connection is out of sync. */
static void test_gap_across_bulk_end(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n");
    h_fill(&h, CAP_TO_SERVER, 'v', 60);
    h_gap(&h, CAP_TO_SERVER, 43); /* 40 bytes, CRLF and the next '*' */
    h_str(&h, CAP_TO_SERVER, "1\r\n$4\r\nPING\r\n");
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n+PONG\r\n");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.closed.gaps_bridged, 0);
    assert_int_equal(h.closed.out_of_sync, 1);
    assert_int_equal(h_count(&h, "SET", RESP_OK), 0);
    /* solid ground again for the last PING */
    assert_true(h.ncmds >= 1);
    assert_string_equal(h.cmds[h.ncmds - 1].req.name, "PING");
    assert_int_equal(h.cmds[h.ncmds - 1].outcome, RESP_OK);
    h_free(&h);

    /* the same on the reply side */
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*2\r\n$3\r\nGET\r\n$1\r\na\r\n" PING);
    h_str(&h, CAP_TO_CLIENT, "$100\r\n");
    h_fill(&h, CAP_TO_CLIENT, 'x', 60);
    h_gap(&h, CAP_TO_CLIENT, 43);
    h_str(&h, CAP_TO_CLIENT, "PONG\r\n");
    h_close(&h);
    assert_int_equal(h.closed.gaps_bridged, 0);
    assert_int_equal(h.closed.out_of_sync, 1);
    assert_int_equal(h_count(&h, "GET", RESP_UNANSWERED), 1);
    h_free(&h);
}

/* A gap inside a header (or the command name) loses sync as before. */
static void test_gap_inside_header(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$");
    h_gap(&h, CAP_TO_SERVER, 2); /* "20" of "$200" */
    h_str(&h, CAP_TO_SERVER, "0\r\n");
    h_fill(&h, CAP_TO_SERVER, 'v', 200);
    h_str(&h, CAP_TO_SERVER, "\r\n");
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_close(&h);
    assert_int_equal(h.closed.gaps_bridged, 0);
    assert_int_equal(h.closed.out_of_sync, 1);
    assert_int_equal(h_count(&h, "SET", RESP_OK), 0);
    h_free(&h);

    /* inside the command name: what the command is, is unknown */
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*1\r\n$4\r\nPI");
    h_gap(&h, CAP_TO_SERVER, 1);
    h_str(&h, CAP_TO_SERVER, "G\r\n");
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.closed.gaps_bridged, 0);
    assert_int_equal(h.closed.out_of_sync, 1);
    assert_int_equal(h_count(&h, "PING", RESP_OK), 0);
    h_free(&h);

    /* inside a short argument (a word that may change the command) */
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nO");
    h_gap(&h, CAP_TO_SERVER, 1);
    h_str(&h, CAP_TO_SERVER, "F\r\n");
    h_close(&h);
    assert_int_equal(h.closed.gaps_bridged, 0);
    assert_int_equal(h.closed.out_of_sync, 1);
    h_free(&h);

    /* a reply bulk whose bytes pairing reads (the first element of an
     * aggregate: "message" of pub/sub) */
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*2\r\n$3\r\nGET\r\n$1\r\na\r\n");
    h_str(&h, CAP_TO_CLIENT, "*1\r\n$100\r\nx");
    h_gap(&h, CAP_TO_CLIENT, 50);
    h_fill(&h, CAP_TO_CLIENT, 'x', 49);
    h_str(&h, CAP_TO_CLIENT, "\r\n");
    h_close(&h);
    assert_int_equal(h.closed.gaps_bridged, 0);
    assert_int_equal(h.closed.out_of_sync, 1);
    h_free(&h);
}

/* A gap inside a key: the command pairs, but its slot is unknown. */
static void test_gap_inside_key(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*2\r\n$3\r\nGET\r\n$100\r\n");
    h_fill(&h, CAP_TO_SERVER, 'k', 10);
    h_gap(&h, CAP_TO_SERVER, 50);
    h_fill(&h, CAP_TO_SERVER, 'k', 40);
    h_str(&h, CAP_TO_SERVER, "\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n");
    h_str(&h, CAP_TO_CLIENT, "$-1\r\n$1\r\nB\r\n");
    h_close(&h);
    assert_paired_in_sync(&h, 2);
    assert_int_equal(h.cmds[0].req.gap, 1);
    assert_int_equal(h.cmds[0].req.slot_unknown, 1);
    assert_int_equal(h.cmds[0].req.slot, -1);
    assert_int_equal(h.cmds[0].req.nkeys, 0);
    assert_int_equal(h.cmds[0].req.key0_len, 0);
    assert_int_equal(h.cmds[0].req.arg_len[0], 0);
    assert_int_equal(h.cmds[0].req.arg_full_len[0], 100);
    assert_int_equal(h.cmds[0].reply.type, RESP_T_NIL);
    assert_int_equal(h.cmds[1].req.slot_unknown, 0);
    assert_int_equal(h.cmds[1].req.slot, resp_key_slot((const uint8_t *)"b", 1));
    assert_int_equal(h.closed.gaps_bridged, 1);
    h_free(&h);
}

/* Kept prefixes of every length (the copy of 0..64 bytes is done in pieces):
 * exactly the argument's first bytes, in the whole-chunk path and split. */
static void test_prefix_every_length(void **state)
{
    (void)state;
    for (size_t n = 0; n <= RESP_ARG_PREFIX + 6; n++) {
        char key[RESP_ARG_PREFIX + 8], msg[256];
        for (size_t i = 0; i < n; i++)
            key[i] = (char)('a' + (i * 7) % 26);
        key[n] = '\0';
        int len = snprintf(msg, sizeof msg, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$2\r\nvv\r\n", n,
                           key);
        for (int split = 0; split <= 1; split++) {
            h_ctx h;
            h_init(&h, 1, NULL);
            h_open(&h);
            if (split) { /* the key arrives in two chunks */
                h_data(&h, CAP_TO_SERVER, msg, (size_t)len / 2);
                h_data(&h, CAP_TO_SERVER, msg + len / 2, (size_t)len - (size_t)len / 2);
            } else {
                h_data(&h, CAP_TO_SERVER, msg, (size_t)len);
            }
            h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
            h_close(&h);
            assert_int_equal(h.ncmds, 1);
            const resp_request *r = &h.cmds[0].req;
            size_t kept = n < RESP_ARG_PREFIX ? n : RESP_ARG_PREFIX;
            assert_int_equal(r->arg_len[0], kept);
            assert_int_equal(r->arg_full_len[0], n);
            assert_memory_equal(r->args[0], key, kept);
            assert_int_equal(r->key0_len, kept);
            assert_memory_equal(r->key0, key, kept);
            assert_int_equal(r->slot, resp_key_slot((const uint8_t *)key, n));
            assert_int_equal(r->arg_len[1], 2);
            assert_memory_equal(r->args[1], "vv", 2);
            h_free(&h);
        }
    }
}

/* ---------------------------------------------------------------- inline resync */

/* Garbage at the start of a connection, then a client typing inline commands:
 * the decoder finds its way back at the first inline line that follows. */
static void test_inline_resync_after_garbage(void **state)
{
    (void)state;
    static const char garbage[] = "\x16\x03\x01\x02\x05hello\r\n";
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, garbage);
    h_str(&h, CAP_TO_SERVER, "set k v\r\nGET k\r\n");
    h_str(&h, CAP_TO_CLIENT, "-ERR unknown command\r\n+OK\r\n$1\r\nv\r\n");
    h_str(&h, CAP_TO_SERVER, "PING\r\n");
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 3);
    assert_string_equal(h.cmds[0].req.name, "SET");
    assert_int_equal(h.cmds[0].req.inline_cmd, 1);
    assert_int_equal(h.cmds[0].req.argc, 3);
    assert_int_equal(h.cmds[0].req.bytes, strlen("set k v\r\n"));
    assert_memory_equal(h.cmds[0].req.key0, "k", 1);
    assert_string_equal(h.cmds[1].req.name, "GET");
    assert_string_equal(h.cmds[2].req.name, "PING");
    assert_int_equal(h.cmds[2].outcome, RESP_OK); /* solid ground again */
    assert_int_equal(h.closed.protocol_errors, 1);
    assert_int_equal(h.closed.resyncs, 1);
    assert_int_equal(h.closed.skipped_bytes, strlen(garbage));
    h_free(&h);

    /* the same bytes a byte at a time */
    h_init(&h, 1, NULL);
    h_open(&h);
    const char *all = "\x16\x03\x01\x02\x05hello\r\nset k v\r\nGET k\r\n";
    for (size_t i = 0; all[i] != '\0'; i++)
        h_data(&h, CAP_TO_SERVER, all + i, 1);
    h_close(&h);
    assert_int_equal(h.ncmds, 2);
    assert_string_equal(h.cmds[0].req.name, "SET");
    assert_string_equal(h.cmds[1].req.name, "GET");
    assert_int_equal(h.closed.resyncs, 1);
    assert_int_equal(h.closed.skipped_bytes, strlen(garbage));
    h_free(&h);

    /* a credential found by the resync is not kept */
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "\x01\x02\r\nAUTH hunter2\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    assert_string_equal(h.cmds[0].req.name, "AUTH");
    assert_int_equal(h.cmds[0].req.arg_len[0], 0);
    assert_int_equal(h.cmds[0].req.arg_full_len[0], 7);
    const uint8_t *raw = (const uint8_t *)&h.cmds[0];
    for (size_t i = 0; i + 7 <= sizeof h.cmds[0]; i++)
        assert_true(memcmp(raw + i, "hunter2", 7) != 0);
    h_free(&h);
}

/* A gap inside an inline stream: the client is known to speak inline, so the
 * line right after the gap may be a command (even a lone word), and a broken
 * line is passed over. */
static void test_inline_resync_after_gap(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "SET a 1\r\nGET a\r\nGET lo");
    h_gap(&h, CAP_TO_SERVER, 100);
    h_str(&h, CAP_TO_SERVER, "ng\r\nSET x y\r\nPING\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 4);
    assert_string_equal(h.cmds[0].req.name, "SET");
    assert_string_equal(h.cmds[1].req.name, "GET");
    assert_string_equal(h.cmds[2].req.name, "SET");
    assert_memory_equal(h.cmds[2].req.args[0], "x", 1);
    assert_int_equal(h.cmds[2].req.inline_cmd, 1);
    assert_string_equal(h.cmds[3].req.name, "PING");
    assert_int_equal(h.closed.resyncs, 1);
    assert_int_equal(h.closed.skipped_bytes, strlen("GET lo") + strlen("ng\r\n"));
    h_free(&h);

    /* the gap ends exactly at a line: a lone word right after it is taken */
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "PING\r\n");
    h_gap(&h, CAP_TO_SERVER, 50);
    h_str(&h, CAP_TO_SERVER, "multi\r\nINCR n\r\nEXEC\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 4);
    assert_string_equal(h.cmds[1].req.name, "MULTI");
    assert_string_equal(h.cmds[3].req.name, "EXEC");
    assert_int_equal(h.closed.resyncs, 1);
    assert_int_equal(h.closed.skipped_bytes, 0);
    h_free(&h);
}

/* Lines that look almost like inline commands are no resync point. */
static void test_inline_resync_strict(void **state)
{
    (void)state;
    char longline[300];
    snprintf(longline, sizeof longline, "SET k %0200d\r\n", 7); /* > RD_LBUF */
    h_ctx h;
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "\x01\x02junk\r\n"
                             "SETX k v\r\n"        /* not a command */
                             "GET\r\n"             /* a lone word: "$3\r\nGET\r\n" */
                             "get \"k\"\r\n"       /* quotes */
                             "GET k\x01\r\n"       /* not printable */
                             "GET k\n"             /* no CR */
                             "$5\r\nGET k\r\n"     /* a bulk payload */
                             " SET k v\r\n"        /* does not start with the name */
                             "SET\tk v\r\n");      /* name not followed by a space */
    h_str(&h, CAP_TO_SERVER, longline);
    h_close(&h);
    assert_int_equal(h.ncmds, 0);
    /* it lost its place once (the garbage) and searched to the end: one
     * resync, every byte after the garbage's start skipped */
    assert_int_equal(h.closed.resyncs, 1);
    assert_true(h.closed.skipped_bytes > 0);
    assert_int_equal(h.closed.protocol_errors, 1);
    h_free(&h);

    /* a client that spoke multibulk never resyncs at an inline line (one
     * loss of place, at the garbage; SET k v is no boundary)... */
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "*1\r\n$4\r\nPING\r\n\x01\x02\r\nSET k v\r\n");
    assert_int_equal(resp_get_stats(h.rp)->total.resyncs, 1);
    /* ... but at a multibulk, as before */
    h_str(&h, CAP_TO_SERVER, "*1\r\n$4\r\nPING\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 2);
    assert_string_equal(h.cmds[1].req.name, "PING");
    assert_int_equal(h.closed.resyncs, 1);
    assert_int_equal(h.closed.skipped_bytes, strlen("\x01\x02\r\nSET k v\r\n"));
    h_free(&h);

    /* picked up mid-stream in a multibulk: names and payloads after a CRLF
     * are not inline commands */
    h_init(&h, 0, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, "GET\r\n$5\r\nkey:1\r\n*2\r\n$3\r\nGET\r\n$7\r\nset k v\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    assert_string_equal(h.cmds[0].req.name, "GET");
    assert_int_equal(h.cmds[0].req.inline_cmd, 0);
    assert_int_equal(h.closed.resyncs, 1);
    h_free(&h);
}

/* A connection picked up mid-stream: the first bytes are the middle of a
 * message on both sides. */
static void test_mid_stream(void **state)
{
    (void)state;
    h_ctx h;
    h_init(&h, 0, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_CLIENT, "lue\r\n+OK\r\n");
    h_str(&h, CAP_TO_SERVER, "ET\r\n$3\r\nfoo\r\n" PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    assert_string_equal(h.cmds[0].req.name, "PING");
    assert_int_equal(h.cmds[0].outcome, RESP_OK);
    assert_int_equal(h.closed.unpaired_replies, 1); /* +OK before any request */
    assert_int_equal(h.closed.out_of_sync, 0);
    assert_int_equal(h.closed.skipped_bytes, strlen("lue\r\n") + strlen("ET\r\n$3\r\nfoo\r\n"));
    h_free(&h);

    /* a capture that starts exactly at a request: trusted from the start */
    h_init(&h, 0, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, PING PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.closed.paired, 2);
    assert_int_equal(h.closed.unpaired_replies, 0);
    h_free(&h);

    /* ... but not when the reply side started mid-message */
    h_init(&h, 0, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_CLIENT, "NG\r\n");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.closed.paired, 0);
    assert_int_equal(h.closed.unpaired_requests, 1);
    h_free(&h);

    /* a reply-first capture whose first bytes are a whole reply */
    h_init(&h, 0, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h_str(&h, CAP_TO_SERVER, PING);
    h_str(&h, CAP_TO_CLIENT, "+PONG\r\n");
    h_close(&h);
    assert_int_equal(h.closed.unpaired_replies, 1);
    assert_int_equal(h.closed.paired, 1);
    h_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type),
        cmocka_unit_test(test_request_fields),
        cmocka_unit_test(test_long_key_split),
        cmocka_unit_test(test_split_a),
        cmocka_unit_test(test_split_b),
        cmocka_unit_test(test_split_c),
        cmocka_unit_test(test_split_d),
        cmocka_unit_test(test_split_e),
        cmocka_unit_test(test_split_f),
        cmocka_unit_test(test_random_split_invariance),
        cmocka_unit_test(test_split_regressions),
        cmocka_unit_test(test_fast_headers),
        cmocka_unit_test(test_inline),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_request_limits),
        cmocka_unit_test(test_garbage_request),
        cmocka_unit_test(test_inline_resync_after_garbage),
        cmocka_unit_test(test_inline_resync_after_gap),
        cmocka_unit_test(test_inline_resync_strict),
        cmocka_unit_test(test_garbage_reply),
        cmocka_unit_test(test_gap_request_side),
        cmocka_unit_test(test_gap_reply_side),
        cmocka_unit_test(test_gap_inside_request_bulk),
        cmocka_unit_test(test_gap_inside_reply_bulk),
        cmocka_unit_test(test_gap_across_bulk_end),
        cmocka_unit_test(test_gap_inside_header),
        cmocka_unit_test(test_gap_inside_key),
        cmocka_unit_test(test_prefix_every_length),
        cmocka_unit_test(test_mid_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
