/*
 * test_an_keys.c - hash slots against a real server's CLUSTER KEYSLOT (fixture
 * from tests/analysis/gen-fixtures.py), the command table, and key extraction
 * by an_key_fn for every movable-key family.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "analysis/keys_internal.h"
#include "tests/analysis/scenario.h"

/* ---------------------------------------------------------------- slots */

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Every key of keyslots.tsv hashes to the slot the server said. */
static void test_keyslots_match_server(void **state)
{
    (void)state;
    FILE *f = fopen(SS_FIXTURES "/analysis/keyslots.tsv", "r");
    assert_non_null(f);
    char line[512];
    size_t n = 0, braces = 0, binary = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        size_t hl = (size_t)(tab - line);
        assert_int_equal(hl % 2, 0);
        uint8_t key[256];
        for (size_t i = 0; i < hl / 2; i++)
            key[i] = (uint8_t)(hexval(line[2 * i]) * 16 + hexval(line[2 * i + 1]));
        int want = atoi(tab + 1);
        uint16_t got = an_key_slot(key, hl / 2);
        if (got != want)
            fail_msg("key %.*s: slot %u, server says %d", (int)hl, line, got, want);
        /* the incremental hasher, fed one byte at a time, agrees */
        resp_slot_hasher h;
        resp_slot_init(&h);
        for (size_t i = 0; i < hl / 2; i++)
            resp_slot_update(&h, key + i, 1);
        assert_int_equal(resp_slot_final(&h), want);
        braces += memchr(key, '{', hl / 2) != NULL;
        binary += memchr(key, 0, hl / 2) != NULL || memchr(key, '\r', hl / 2) != NULL;
        n++;
    }
    fclose(f);
    assert_true(n >= 2000);
    assert_true(braces >= 500);
    assert_true(binary >= 100);
}

/* CRC16-XMODEM check value, and the hash tag examples of the spec. */
static void test_slot_vectors(void **state)
{
    (void)state;
    assert_int_equal(an_key_slot("123456789", 9), 0x31C3 & 16383);
    assert_int_equal(an_key_slot("{user1}.a", 9), an_key_slot("{user1}.b", 9));
    assert_int_equal(an_key_slot("{user1}.a", 9), an_key_slot("user1", 5));
    assert_int_equal(an_key_slot("foo{}{bar}", 10), an_key_slot("foo{}{bar}", 10));
    assert_int_not_equal(an_key_slot("foo{}{bar}", 10), an_key_slot("bar", 3));
    assert_int_equal(an_key_slot("foo{{bar}}zap", 13), an_key_slot("{bar", 4));
}

/* ---------------------------------------------------------------- table */

static void test_command_table(void **state)
{
    (void)state;
    assert_true(an_command_known("GET"));
    assert_true(an_command_known("XREADGROUP"));
    assert_true(an_command_known("OBJECT"));
    assert_true(an_command_known("RESTORE-ASKING"));
    assert_false(an_command_known("NOSUCHCOMMAND"));
    assert_false(an_command_known(""));
    assert_false(an_command_known(NULL));
}

/* ---------------------------------------------------------------- keys */

/* Run an_key_fn over argv the way resp/ does; return the key positions as a
 * text like "1,3,5". */
static const char *keys_of(int argc, const char *const *argv, char *out, size_t n)
{
    resp_request r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", argv[0]);
    for (char *p = r.name; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 32);
    r.argc = (uint32_t)argc;
    resp_keyctx k;
    memset(&k, 0, sizeof k);
    k.req = &r;
    out[0] = 0;
    size_t len = 0;
    for (int i = 1; i < argc; i++) {
        k.argi = (uint32_t)i;
        k.prev = (const uint8_t *)argv[i - 1];
        k.prev_full_len = (uint32_t)strlen(argv[i - 1]);
        k.prev_len = k.prev_full_len < RESP_ARG_PREFIX ? k.prev_full_len : RESP_ARG_PREFIX;
        if (i <= RESP_ARG_KEEP) {
            r.nargs = (uint8_t)i;
            r.arg_len[i - 1] = (uint8_t)strlen(argv[i]);
            r.arg_full_len[i - 1] = (uint32_t)strlen(argv[i]);
            memcpy(r.args[i - 1], argv[i], r.arg_len[i - 1]);
        }
        if (an_key_fn(NULL, &k))
            len += (size_t)snprintf(out + len, n - len, "%s%d", len ? "," : "", i);
    }
    return out;
}

#define KEYS(expect, ...)                                                      \
    do {                                                                       \
        const char *argv_[] = {__VA_ARGS__};                                   \
        char buf_[256];                                                        \
        assert_string_equal(keys_of((int)(sizeof argv_ / sizeof argv_[0]),     \
                                    argv_, buf_, sizeof buf_), expect);        \
    } while (0)

static void test_keys_fixed(void **state)
{
    (void)state;
    KEYS("1", "GET", "k");
    KEYS("1", "set", "k", "v", "EX", "10");
    KEYS("1,3,5", "MSET", "a", "1", "b", "2", "c", "3");
    KEYS("1,2,3", "DEL", "a", "b", "c");
    KEYS("1,2", "BLPOP", "a", "b", "0");
    KEYS("1,2", "BZPOPMIN", "a", "b", "1.5");
    KEYS("1,2", "RPOPLPUSH", "src", "dst");
    KEYS("2,3", "BITOP", "AND", "dst", "a");
    KEYS("", "PING");
    KEYS("", "CLUSTER", "KEYSLOT", "foo");
    KEYS("", "NOSUCHCOMMAND", "a", "b");
    KEYS("", "BLPOP", "0"); /* too few arguments: the server rejects it */
}

static void test_keys_numkeys(void **state)
{
    (void)state;
    KEYS("3,4", "EVAL", "return 1", "2", "a", "b", "x");
    KEYS("3", "EVALSHA", "abc", "1", "a", "x", "y");
    KEYS("", "EVAL", "return 1", "0", "x");
    KEYS("3,4", "FCALL", "f", "2", "a", "b");
    KEYS("3", "FCALL_RO", "f", "1", "a", "arg");
    KEYS("", "EVAL", "s", "5", "a"); /* more keys than arguments: rejected */
    KEYS("", "EVAL", "s", "x1", "a"); /* not a number */
    KEYS("1,3,4", "ZUNIONSTORE", "dst", "2", "a", "b", "WEIGHTS", "1", "2");
    KEYS("1,3,4", "ZINTERSTORE", "dst", "2", "a", "b");
    KEYS("1,3", "ZDIFFSTORE", "dst", "1", "a");
    KEYS("2,3", "ZUNION", "2", "a", "b", "WITHSCORES");
    KEYS("2,3,4", "ZINTER", "3", "a", "b", "c");
    KEYS("2", "ZDIFF", "1", "a");
    KEYS("2,3", "SINTERCARD", "2", "a", "b", "LIMIT", "1");
    KEYS("2,3", "LMPOP", "2", "a", "b", "LEFT", "COUNT", "3");
    KEYS("2", "ZMPOP", "1", "a", "MIN");
    KEYS("3,4", "BLMPOP", "0.5", "2", "a", "b", "RIGHT");
    KEYS("3", "BZMPOP", "1", "1", "a", "MAX", "COUNT", "2");
}

static void test_keys_keyword(void **state)
{
    (void)state;
    KEYS("2,3", "XREAD", "STREAMS", "a", "b", "0", "0");
    KEYS("4,5", "XREAD", "COUNT", "2", "STREAMS", "a", "b", "$", "$");
    KEYS("6", "XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "s", ">");
    KEYS("5,6", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">");
    /* odd count: the key spec's arithmetic (as the server's) keeps one key */
    KEYS("2", "XREAD", "STREAMS", "a", "b", "0");
    /* a stream named STREAMS: the first STREAMS keyword wins, as the server */
    KEYS("2,3", "XREAD", "STREAMS", "STREAMS", "x", "0", "0");
    KEYS("1,7", "GEORADIUS", "k", "0", "0", "1", "km", "STORE", "dst");
    KEYS("1,7", "GEORADIUSBYMEMBER", "k", "m", "1", "km", "ASC", "STOREDIST", "dst");
    KEYS("3", "MIGRATE", "h", "1", "key", "0", "1000");
    KEYS("3,7,8", "MIGRATE", "h", "1", "", "0", "1000", "KEYS", "a", "b");
    KEYS("3,9,10", "MIGRATE", "h", "1", "", "0", "1000", "COPY", "REPLACE", "KEYS", "a", "b");
    /* keys after the keyword (the hook may answer them from a mask once it
     * is found): a key named KEYS, AUTH before, many keys, more than 32 */
    KEYS("3,7,8", "MIGRATE", "h", "1", "", "0", "1000", "KEYS", "KEYS", "x");
    KEYS("3,9", "MIGRATE", "h", "1", "", "0", "1000", "AUTH", "pw", "KEYS", "a");
    KEYS("3,7,8,9,10,11,12,13,14,15,16", "MIGRATE", "h", "1", "", "0", "1000", "KEYS", "a", "b",
         "c", "d", "e", "f", "g", "h", "i", "j");
    KEYS("3,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34",
         "MIGRATE", "h", "1", "", "0", "1000", "KEYS", "a", "b", "c", "d", "e", "f", "g", "h",
         "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y",
         "z", "A", "B");
    KEYS("3", "MIGRATE", "h", "1", "", "KEYS", "KEYS", "a", "b"); /* KEYS before 6: not it */
    KEYS("4,5,6", "XREAD", "COUNT", "2", "STREAMS", "a", "b", "c", "$", "$", "$");
    KEYS("2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "XREAD", "STREAMS", "a", "b", "c", "d", "e",
         "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "0", "0", "0", "0", "0", "0",
         "0", "0", "0", "0", "0", "0", "0", "0", "0", "0");
}

static void test_keys_sort_and_subcommands(void **state)
{
    (void)state;
    KEYS("1", "SORT", "k");
    KEYS("1,3", "SORT", "k", "STORE", "dst");
    KEYS("1,9", "SORT", "k", "BY", "w_*", "LIMIT", "0", "10", "DESC", "STORE", "dst");
    KEYS("1", "SORT", "k", "GET", "STORE"); /* a pattern spelled STORE */
    KEYS("1,5", "SORT", "k", "GET", "STORE", "STORE", "dst");
    KEYS("1", "SORT_RO", "k", "BY", "x");
    KEYS("2", "OBJECT", "ENCODING", "k");
    KEYS("2", "object", "freq", "k");
    KEYS("", "OBJECT", "HELP");
    KEYS("", "OBJECT", "NOSUCH", "k");
    KEYS("2", "MEMORY", "USAGE", "k", "SAMPLES", "5");
    KEYS("", "MEMORY", "STATS");
    KEYS("", "CLIENT", "LIST");
}

/* Through the real decoder: bytes in, keys and slot out. */
typedef struct got {
    resp_command cmd;
    int n;
} got;

static void got_cmd(void *ctx, const resp_command *c)
{
    got *g = ctx;
    g->cmd = *c;
    g->n++;
}

/* A resp pipeline with the analysis' key hook and sink, and connection c
 * opened on it (with its handshake); ev is set up for c's events. */
static resp_pipeline *hook_pipeline(const resp_sink *sink, cap_conn *c, cap_event *ev)
{
    resp_config cfg;
    resp_config_defaults(&cfg);
    cfg.key_fn = an_key_fn;
    resp_pipeline *rp = resp_new(&cfg, sink);
    assert_non_null(rp);
    memset(c, 0, sizeof *c);
    c->id = 1;
    c->client.addr.family = c->server.addr.family = 4;
    c->client.port = 40000;
    c->server.port = 30001;
    c->saw_syn = 1;
    memset(ev, 0, sizeof *ev);
    ev->conn = c;
    ev->kind = CAP_EV_OPEN;
    resp_on_capture_event(rp, ev);
    return rp;
}

static void test_keys_through_resp(void **state)
{
    (void)state;
    got g;
    memset(&g, 0, sizeof g);
    resp_sink sink = {.ctx = &g, .command = got_cmd};
    cap_conn c;
    cap_event ev;
    resp_pipeline *rp = hook_pipeline(&sink, &c, &ev);
    const char *req = "*7\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n2\r\n$9\r\n{user1}.a\r\n"
                      "$9\r\n{user1}.b\r\n$1\r\nx\r\n$1\r\ny\r\n";
    ev.kind = CAP_EV_DATA;
    ev.dir = CAP_TO_SERVER;
    ev.ts_us = 1;
    ev.data = (const uint8_t *)req;
    ev.len = strlen(req);
    resp_on_capture_event(rp, &ev);
    ev.dir = CAP_TO_CLIENT;
    ev.ts_us = 2;
    ev.data = (const uint8_t *)":1\r\n";
    ev.len = 4;
    resp_on_capture_event(rp, &ev);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.cmd.req.nkeys, 2);
    assert_int_equal(g.cmd.req.slot, an_key_slot("user1", 5));
    assert_false(g.cmd.req.multi_slot);
    assert_memory_equal(g.cmd.req.key0, "{user1}.a", 9);
    /* XREAD STREAMS: half of the rest are keys, hashing to two slots */
    req = "*6\r\n$5\r\nXREAD\r\n$7\r\nSTREAMS\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\n0\r\n$1\r\n0\r\n";
    ev.dir = CAP_TO_SERVER;
    ev.data = (const uint8_t *)req;
    ev.len = strlen(req);
    resp_on_capture_event(rp, &ev);
    ev.dir = CAP_TO_CLIENT;
    ev.data = (const uint8_t *)"*-1\r\n";
    ev.len = 5;
    resp_on_capture_event(rp, &ev);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.cmd.req.nkeys, 2);
    assert_int_equal(g.cmd.req.slot, an_key_slot("a", 1));
    assert_true(g.cmd.req.multi_slot);
    ev.kind = CAP_EV_CLOSE;
    resp_on_capture_event(rp, &ev);
    resp_free(rp);
}

/* A connection through resp with the analysis' key hook, for bare_args. */
typedef struct bare_run {
    resp_pipeline *rp;
    cap_conn c;
    cap_event ev;
    got g;
    int64_t ts;
} bare_run;

/* Request req (in pieces of at most piece bytes), then reply "+OK": the
 * command as the sink got it. */
static const resp_request *bare_send(bare_run *b, const char *req, size_t piece)
{
    int n0 = b->g.n;
    b->ev.kind = CAP_EV_DATA;
    b->ev.dir = CAP_TO_SERVER;
    for (size_t at = 0, len = strlen(req); at < len; at += piece) {
        b->ev.ts_us = ++b->ts;
        b->ev.data = (const uint8_t *)req + at;
        b->ev.len = len - at < piece ? len - at : piece;
        resp_on_capture_event(b->rp, &b->ev);
    }
    b->ev.dir = CAP_TO_CLIENT;
    b->ev.ts_us = ++b->ts;
    b->ev.data = (const uint8_t *)"+OK\r\n";
    b->ev.len = 5;
    resp_on_capture_event(b->rp, &b->ev);
    assert_int_equal(b->g.n, n0 + 1);
    return &b->g.cmd.req;
}

/* Argument i (0-based after the name) kept as text t, of full length full. */
static void assert_arg(const resp_request *r, unsigned i, const char *t, uint32_t full)
{
    assert_true(i < r->nargs);
    assert_int_equal(r->arg_len[i], strlen(t));
    assert_int_equal(r->arg_full_len[i], full);
    assert_memory_equal(r->args[i], t, strlen(t));
}

/* The hook's bare_mask: a plain keyed command's arguments other than its keys
 * are not kept by resp (only their lengths), whole or in pieces, through the
 * hook's and resp's remembered masks alike; a command whose arguments the
 * analysis or resp reads (CLUSTER, a container's subcommand, MIGRATE, CLIENT,
 * an unknown command) keeps them. */
static void test_bare_args(void **state)
{
    (void)state;
    bare_run b;
    memset(&b, 0, sizeof b);
    resp_sink sink = {.ctx = &b.g, .command = got_cmd};
    b.rp = hook_pipeline(&sink, &b.c, &b.ev);
    const char *set = "*5\r\n$3\r\nSET\r\n$4\r\nuser\r\n$10\r\nsecret-val\r\n$2\r\nEX\r\n"
                      "$2\r\n10\r\n";
    for (int round = 0; round < 3; round++) { /* asked, then remembered twice */
        for (size_t piece = 1; piece <= strlen(set); piece += strlen(set) - 1) {
            const resp_request *r = bare_send(&b, set, piece);
            assert_int_equal(r->nargs, 4);
            assert_arg(r, 0, "user", 4);
            assert_arg(r, 1, "", 10);
            assert_arg(r, 2, "", 2);
            assert_arg(r, 3, "", 2);
            assert_int_equal(r->nkeys, 1);
            assert_int_equal(r->key0_len, 4);
            assert_memory_equal(r->key0, "user", 4);
            assert_int_equal(r->slot, an_key_slot("user", 4));
        }
    }
    /* bare: bit i set when argument i (0-based) keeps no byte. EVAL: its
     * keys follow numkeys, the hook answers each argument (no mask is
     * fixed), so every argument is kept */
    static const struct {
        const char *argv[7];
        unsigned bare;
    } cases[] = {
        {{"MSET", "a", "1", "b", "2"}, 0xa},
        {{"CLUSTER", "SETSLOT", "7", "MIGRATING", "abc"}, 0},
        {{"OBJECT", "ENCODING", "k"}, 0},
        {{"MIGRATE", "host", "7001", "k", "0", "5000"}, 0},
        {{"CLIENT", "SETNAME", "app"}, 0},
        {{"NOSUCH", "a", "b"}, 0},
        {{"EVAL", "return 1", "1", "k", "arg"}, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char req[256];
        size_t argc = 0, len = 0;
        while (argc < 7 && cases[c].argv[argc])
            argc++;
        len += (size_t)snprintf(req + len, sizeof req - len, "*%zu\r\n", argc);
        for (size_t i = 0; i < argc; i++)
            len += (size_t)snprintf(req + len, sizeof req - len, "$%zu\r\n%s\r\n",
                                    strlen(cases[c].argv[i]), cases[c].argv[i]);
        const resp_request *r = bare_send(&b, req, len);
        assert_int_equal(r->nargs, argc - 1 < RESP_ARG_KEEP ? argc - 1 : RESP_ARG_KEEP);
        for (unsigned i = 0; i + 1 < argc && i < RESP_ARG_KEEP; i++) {
            const char *a = cases[c].argv[i + 1];
            assert_arg(r, i, (cases[c].bare >> i) & 1 ? "" : a, (uint32_t)strlen(a));
        }
    }
    b.ev.kind = CAP_EV_CLOSE;
    resp_on_capture_event(b.rp, &b.ev);
    resp_free(b.rp);
}

/* Commands emitted (n) and those whose name is not zero from its NUL to
 * byte RESP_NAME_ZEROED - 1 (dirty). */
typedef struct name_check {
    int n, dirty;
} name_check;

static void check_name(void *ctx, const resp_command *c)
{
    name_check *k = ctx;
    size_t len = strnlen(c->req.name, RESP_NAME_MAX);
    for (size_t i = len; i < RESP_NAME_ZEROED; i++)
        if (c->req.name[i] != 0) {
            k->dirty++;
            break;
        }
    k->n++;
}

/* The analysis compares names as two words (its quick path, the key hook's
 * and its own lookup caches): past its NUL a name is zero up to byte
 * RESP_NAME_ZEROED - 1 whether it was decoded into a whole entry, packed
 * (a connection past RQ_WHOLE_CONN in flight), fed whole or byte by byte,
 * inline, and whatever longer name the entry or the stage held before. */
static void test_name_zeroed(void **state)
{
    (void)state;
    name_check k = {0, 0};
    resp_sink sink = {.ctx = &k, .command = check_name};
    cap_conn c;
    cap_event ev;
    resp_pipeline *rp = hook_pipeline(&sink, &c, &ev);
    static const char *const reqs[] = {
        "*3\r\n$14\r\nRESTORE-ASKING\r\n$1\r\nk\r\n$1\r\n0\r\n",
        "*2\r\n$3\r\nget\r\n$1\r\nk\r\n",
        "*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n",
        "*2\r\n$2\r\nXX\r\n$1\r\nk\r\n",
        "PING\r\n",
        "*1\r\n$4\r\nPING\r\n",
    };
    int sent = 0;
    for (int round = 0; round < 2; round++) { /* whole, then byte by byte */
        ev.kind = CAP_EV_DATA;
        ev.dir = CAP_TO_SERVER;
        for (int i = 0; i < 60; i++, sent++) { /* past RQ_WHOLE_CONN: packed */
            const char *r = reqs[i % 6];
            size_t piece = round ? 1 : strlen(r);
            for (size_t at = 0; at < strlen(r); at += piece) {
                ev.ts_us++;
                ev.data = (const uint8_t *)r + at;
                ev.len = piece;
                resp_on_capture_event(rp, &ev);
            }
        }
        ev.dir = CAP_TO_CLIENT;
        for (int i = 0; i < 60; i++) {
            ev.ts_us++;
            ev.data = (const uint8_t *)"+OK\r\n";
            ev.len = 5;
            resp_on_capture_event(rp, &ev);
        }
    }
    assert_int_equal(k.n, sent);
    assert_int_equal(k.dirty, 0);
    ev.kind = CAP_EV_CLOSE;
    resp_on_capture_event(rp, &ev);
    resp_free(rp);
}

/* ---------------------------------------------------------------- fast paths */

/* The key positions of command c for argc arguments, straight from its key
 * specs, when they are all "index N, range": the server's rule
 * (getKeysUsingKeySpecs) for that shape, last = first + lastkey, or, when
 * lastkey < 0, argc + lastkey, or with a limit first + (argc - first) /
 * limit + lastkey; a spec whose range does not fit the request gives no
 * keys. to_end: only commands with a spec that runs to the end (lastkey < 0:
 * MSET, MGET, DEL; at most 3 specs); otherwise only those whose specs all
 * end at a fixed position. Returns 0 for another shape. */
static int reference_keys(const an_cmd *c, int argc, int to_end, char *out, size_t n)
{
    int is_key[64] = {0}, runs_to_end = 0;
    if (c->proc != AN_PROC_NONE || (c->flags & AN_CMD_CONTAINER) || (to_end && c->nspecs > 3))
        return 0;
    for (unsigned i = 0; i < c->nspecs; i++) {
        const an_keyspec *s = &an_keyspecs[c->spec0 + i];
        if (s->bs_type != AN_BS_INDEX || s->fk_type != AN_FK_RANGE)
            return 0;
        runs_to_end |= s->a < 0;
    }
    if (runs_to_end != to_end)
        return 0;
    for (unsigned i = 0; i < c->nspecs; i++) {
        const an_keyspec *s = &an_keyspecs[c->spec0 + i];
        int first = s->bs_arg, step = s->step > 0 ? s->step : 1, last;
        if (s->a >= 0)
            last = first + s->a;
        else if (s->b == 0)
            last = argc + s->a;
        else
            last = first + (argc - first) / s->b + s->a;
        if (last >= argc || last < first || first >= argc)
            continue; /* rejected by the server: no keys from this spec */
        for (int p = first; p <= last && p < 64; p += step)
            is_key[p] = 1;
    }
    size_t len = 0;
    out[0] = 0;
    for (int p = 1; p < argc && p < 64; p++)
        if (is_key[p])
            len += (size_t)snprintf(out + len, n - len, "%s%d", len ? "," : "", p);
    return 1;
}

/* For every command whose keys are at fixed positions (the key hook's bit
 * mask path) and every argument count up to 12, the hook marks exactly the
 * arguments the key specs name; a request that stops early keeps only the
 * keys of the specs that fit. */
static void test_keys_fixed_positions_every_command(void **state)
{
    (void)state;
    static const char *const args[] = {"CMD", "a1", "a2", "a3", "a4", "a5", "a6",
                                       "a7", "a8", "a9", "a10", "a11"};
    int checked = 0;
    for (size_t i = 0; i < an_n_commands; i++) {
        const an_cmd *c = &an_commands[i];
        if (strchr(c->name, '|'))
            continue; /* subcommands are reached through their container */
        for (int argc = 1; argc <= 12; argc++) {
            char want[256], have[256];
            if (!reference_keys(c, argc, 0, want, sizeof want))
                break;
            const char *argv[12];
            memcpy(argv, args, sizeof argv);
            argv[0] = c->name;
            keys_of(argc, argv, have, sizeof have);
            if (strcmp(want, have) != 0)
                fail_msg("%s argc %d: keys %s, expected %s", c->name, argc, have, want);
            checked++;
        }
    }
    assert_true(checked > 100 * 12); /* most commands have fixed key positions */
}

/* For every command whose keys run to the end of the request, and every
 * argument count up to 40 (the hook answers from a mask of the declared argc
 * up to 32, argument by argument above), the hook marks exactly the
 * arguments the key specs name. */
static void test_keys_to_end_every_command(void **state)
{
    (void)state;
    static char names[40][8];
    const char *argv[40];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "a%d", i);
        argv[i] = names[i];
    }
    int checked = 0;
    for (size_t i = 0; i < an_n_commands; i++) {
        const an_cmd *c = &an_commands[i];
        if (strchr(c->name, '|'))
            continue;
        for (int argc = 1; argc <= 40; argc++) {
            char want[256], have[256];
            if (!reference_keys(c, argc, 1, want, sizeof want))
                break;
            argv[0] = c->name;
            keys_of(argc, argv, have, sizeof have);
            if (strcmp(want, have) != 0)
                fail_msg("%s argc %d: keys %s, expected %s", c->name, argc, have, want);
            checked++;
        }
    }
    assert_true(checked > 10 * 40); /* MSET, MGET, DEL, EXISTS, UNLINK, ... */
    KEYS("1,3,5", "MSET", "a", "1", "b", "2", "c", "3");
    KEYS("1,2,3,4", "MGET", "a", "b", "c", "d");
}

/* Name lookups: the word path (upper case, up to 15 bytes), the general one
 * (lower case, longer names), bytes after the NUL ignored, and the
 * remembered last name never answering for another name. */
static void test_command_lookup_paths(void **state)
{
    (void)state;
    char name[RESP_NAME_MAX];
    const char *names[] = {"GET", "SET", "GET", "RESTORE-ASKING", "GEORADIUSBYMEMBER_RO",
                           "get", "XREADGROUP", "CLUSTER", "GETDEL", "GETEX", "GE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        memset(name, 'Z', sizeof name); /* garbage after the NUL */
        size_t n = strlen(names[i]);
        memcpy(name, names[i], n + 1);
        const an_cmd *c = an_cmd_lookup_name(name);
        if (strcmp(names[i], "GE") == 0) {
            assert_null(c);
            continue;
        }
        assert_non_null(c);
        assert_int_equal(strlen(c->name), n);
        assert_int_equal(strncasecmp(c->name, names[i], n), 0);
        assert_ptr_equal(c, an_cmd_lookup(names[i], n));
    }
    /* a name filling the buffer without a NUL in the first 16 bytes */
    memset(name, 0, sizeof name);
    memcpy(name, "GEORADIUS_RO", 13);
    assert_non_null(an_cmd_lookup_name(name));
    memcpy(name, "GEORADIUSBYMEMBERX", 19);
    assert_null(an_cmd_lookup_name(name));
    assert_null(an_cmd_lookup("GETX", 4));
    assert_null(an_cmd_lookup("", 0));
    /* subcommands, asked for again (the remembered last one), in another
     * case, of another container, unknown, and a prefix of a known one */
    const an_cmd *cluster = an_cmd_lookup("CLUSTER", 7), *object = an_cmd_lookup("OBJECT", 6);
    assert_non_null(cluster);
    assert_non_null(object);
    for (int round = 0; round < 2; round++) {
        const an_cmd *g = an_cmd_lookup_sub(cluster, "GETKEYSINSLOT", 13);
        assert_non_null(g);
        assert_string_equal(g->name, "CLUSTER|GETKEYSINSLOT");
        assert_ptr_equal(an_cmd_lookup_sub(cluster, "getkeysinslot", 13), g);
        assert_ptr_equal(an_cmd_lookup_sub(cluster, "getkeysinslot", 13), g);
        assert_null(an_cmd_lookup_sub(object, "GETKEYSINSLOT", 13));
        assert_null(an_cmd_lookup_sub(cluster, "GETKEYSINSLO", 12));
        assert_null(an_cmd_lookup_sub(cluster, "GETKEYSINSLO", 12));
        assert_string_equal(an_cmd_lookup_sub(object, "ENCODING", 8)->name, "OBJECT|ENCODING");
        assert_string_equal(an_cmd_lookup_sub(cluster, "SETSLOT", 7)->name, "CLUSTER|SETSLOT");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyslots_match_server),
        cmocka_unit_test(test_slot_vectors),
        cmocka_unit_test(test_command_table),
        cmocka_unit_test(test_keys_fixed),
        cmocka_unit_test(test_keys_numkeys),
        cmocka_unit_test(test_keys_keyword),
        cmocka_unit_test(test_keys_sort_and_subcommands),
        cmocka_unit_test(test_keys_through_resp),
        cmocka_unit_test(test_bare_args),
        cmocka_unit_test(test_name_zeroed),
        cmocka_unit_test(test_keys_fixed_positions_every_command),
        cmocka_unit_test(test_keys_to_end_every_command),
        cmocka_unit_test(test_command_lookup_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
