/*
 * keys.c - which arguments of a request are keys: an incremental interpreter of
 * Redis 7 key specs (https://redis.io/docs/latest/develop/reference/key-specs/),
 * fed one argument at a time by resp/ through the resp_key_fn hook.
 *
 * The table (command_table.c) is generated from a real server's COMMAND INFO.
 * The interpreter follows the server's own getKeysUsingKeySpecs:
 *
 *   begin_search index N      first = N
 *                keyword K, F first = 1 + position of the first K in [F, argc-2]
 *   find_keys range L,S,M     last = first + L            (L >= 0)
 *                             last = argc + L             (L < 0, M == 0)
 *                             last = first + (argc-first)/M + L   (L < 0, M > 0)
 *             keynum I,F,S    n = integer at first+I; keys first+F .. first+F+n-1
 *   keys are first, first+S, ... <= last; a spec whose range runs past the
 *   arguments, or whose key count is not a non-negative integer, gives no keys
 *   (the server rejects such a command).
 *
 * resp/ asks at the start of each argument, before its bytes, so decisions use
 * what is known then: argc (from the array header), the previous argument's
 * first bytes (for keywords and counts) and four words of per-request scratch:
 *
 *   scratch[0]  bits 0..15: table index + 1 (0: not looked up yet)
 *               bit 30: container command waiting for its subcommand
 *               bit 31: no keys to find (unknown command or subcommand)
 *   scratch[1+i] the state of key spec i (keyword: first key position;
 *               keynum: key count + 1), or of the command's procedure
 *
 * Known approximations: a keyword search the server runs backwards (MIGRATE's
 * KEYS) runs forwards from a fixed start, so a key literally named "KEYS" in a
 * MIGRATE key list is mishandled; MIGRATE's key argument is marked even when
 * it is "" (KEYS form; the analysis ignores an empty first key); inline
 * commands give no argument count, so ranges counted from the end (BLPOP's
 * keys, XREAD's streams) take every remaining argument.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "analysis/analysis.h"
#include "analysis/keys_internal.h"

#define SCR_INDEX_MASK 0xffffu
#define SCR_WAIT_SUB (1u << 30)
#define SCR_DEAD (1u << 31)
/* Inline commands (space separated) announce no argument count: ranges that
 * run to the end take every remaining argument. */
#define INLINE_ARGC 0x7fffffffL

/* Compare a table name with name[0..len) ignoring the case of the input;
 * strcmp order over upper-case names. */
static int name_cmp(const char *table_name, const char *name, size_t len)
{
    size_t i = 0;
    for (; i < len; i++) {
        unsigned char a = (unsigned char)table_name[i];
        unsigned char b = (unsigned char)toupper((unsigned char)name[i]);
        if (a == 0)
            return -1;
        if (a != b)
            return a < b ? -1 : 1;
    }
    return table_name[i] == 0 ? 0 : 1;
}

/* Binary search of the sorted table. */
const an_cmd *an_cmd_lookup(const char *name, size_t len)
{
    size_t lo = 0, hi = an_n_commands;
    if (len == 0 || len >= RESP_NAME_MAX + 40)
        return NULL;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(an_commands[mid].name, name, len);
        if (c == 0)
            return &an_commands[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* "CONTAINER|sub": built in a small buffer, then looked up. */
const an_cmd *an_cmd_lookup_sub(const an_cmd *container, const char *sub, size_t len)
{
    char buf[96];
    size_t n = strlen(container->name);
    if (len == 0 || n + 1 + len >= sizeof buf)
        return NULL;
    memcpy(buf, container->name, n);
    buf[n] = '|';
    memcpy(buf + n + 1, sub, len);
    return an_cmd_lookup(buf, n + 1 + len);
}

const an_cmd *an_cmd_for_request(const resp_request *req, int *sub_known)
{
    const an_cmd *c = an_cmd_lookup(req->name, strnlen(req->name, RESP_NAME_MAX));
    if (sub_known)
        *sub_known = 1;
    if (!c || !(c->flags & AN_CMD_CONTAINER))
        return c;
    if (req->nargs >= 1 && req->arg_len[0] == req->arg_full_len[0]) {
        const an_cmd *s = an_cmd_lookup_sub(c, req->args[0], req->arg_len[0]);
        if (s)
            return s;
    }
    if (sub_known && req->argc >= 2)
        *sub_known = 0;
    return c;
}

int an_command_known(const char *name)
{
    return name && an_cmd_lookup(name, strlen(name)) != NULL;
}

uint16_t an_key_slot(const void *key, size_t len)
{
    return resp_key_slot((const uint8_t *)key, len);
}

/* Is the previous argument exactly this keyword (any case)? */
static int prev_is(const resp_keyctx *k, const char *kw)
{
    size_t n = strlen(kw);
    return k->prev_full_len == n && k->prev_len == n &&
           strncasecmp((const char *)k->prev, kw, n) == 0;
}

/* The previous argument as a non-negative integer, or -1. */
static long prev_count(const resp_keyctx *k)
{
    long v = 0;
    if (k->prev_len == 0 || k->prev_len != k->prev_full_len || k->prev_len > 9)
        return -1;
    for (size_t i = 0; i < k->prev_len; i++) {
        if (k->prev[i] < '0' || k->prev[i] > '9')
            return -1;
        v = v * 10 + (k->prev[i] - '0');
    }
    return v;
}

/* Is argi a key of a range that starts at first? (argc counts the name.) */
static int in_range(const an_keyspec *s, long first, long argc, long argi)
{
    long last;
    if (s->a >= 0)
        last = first + s->a;
    else if (s->b == 0)
        last = argc + s->a;
    else
        last = first + (argc - first) / s->b + s->a;
    if (last >= argc || last < first || first >= argc)
        return 0; /* the server rejects this shape: no keys */
    return argi >= first && argi <= last && (argi - first) % (s->step > 0 ? s->step : 1) == 0;
}

/* One key spec at argument argi; *st is its scratch word. */
static int spec_step(const an_keyspec *s, uint32_t *st, resp_keyctx *k)
{
    long argc = (long)k->req->argc, argi = (long)k->argi;
    if (k->req->inline_cmd)
        argc = INLINE_ARGC; /* not known until the line ends */
    if (s->bs_type == AN_BS_KEYWORD) {
        /* Search: the previous argument, if it is at or after the start. */
        if (*st == 0 && argi - 1 >= s->bs_arg && s->keyword && prev_is(k, s->keyword))
            *st = (uint32_t)argi;
        if (*st == 0)
            return 0;
        if (s->fk_type != AN_FK_RANGE)
            return 0;
        return in_range(s, (long)*st, argc, argi);
    }
    if (s->fk_type == AN_FK_RANGE)
        return in_range(s, s->bs_arg, argc, argi);
    /* keynum: the count is the argument at bs_arg + a. */
    long count_at = s->bs_arg + s->a;
    if (argi == count_at + 1) {
        long n = prev_count(k);
        *st = n < 0 ? UINT32_MAX : (uint32_t)n + 1;
    }
    if (*st == 0 || *st == UINT32_MAX)
        return 0;
    long n = (long)*st - 1;
    long first = s->bs_arg + s->b;
    long last = first + n - 1;
    if (last >= argc || last < first || first >= argc)
        return 0;
    return argi >= first && argi <= last && (argi - first) % (s->step > 0 ? s->step : 1) == 0;
}

/* SORT key [BY p] [LIMIT o c] [GET p ...] [ASC|DESC] [ALPHA] [STORE dst]: the
 * argument after STORE is a key; option values are skipped so that a pattern
 * spelled "STORE" is not taken for the keyword (as the server's sortGetKeys).
 * State: bits 0..7 values still to come, bit 8 they are STORE's, bit 9 the
 * previous argument was a value (not an option name). */
static int proc_sort_store(uint32_t *st, resp_keyctx *k)
{
    uint32_t left = *st & 0xff, store = (*st >> 8) & 1, prev_value = (*st >> 9) & 1;
    if (k->argi < 3)
        return 0; /* argument 1 is the sorted key, 2 is the first option */
    if (left == 0 && !prev_value) {
        if (prev_is(k, "LIMIT"))
            left = 2, store = 0;
        else if (prev_is(k, "GET") || prev_is(k, "BY"))
            left = 1, store = 0;
        else if (prev_is(k, "STORE"))
            left = 1, store = 1;
    }
    int is_value = 0, is_key = 0;
    if (left > 0) {
        left--;
        is_value = 1;
        is_key = store && left == 0;
        if (left == 0)
            store = 0;
    }
    *st = left | (store << 8) | ((uint32_t)is_value << 9);
    return is_key;
}

/* Resolve the command for this request into scratch[0]. Returns the entry or
 * NULL when there is nothing (more) to find. */
static const an_cmd *resolve(resp_keyctx *k)
{
    uint32_t s0 = k->scratch[0];
    if (s0 & SCR_DEAD)
        return NULL;
    if ((s0 & SCR_INDEX_MASK) == 0) {
        const an_cmd *c = an_cmd_lookup(k->req->name, strnlen(k->req->name, RESP_NAME_MAX));
        if (!c) {
            k->scratch[0] = SCR_DEAD;
            return NULL;
        }
        s0 = (uint32_t)(c - an_commands) + 1;
        if (c->flags & AN_CMD_CONTAINER)
            s0 |= SCR_WAIT_SUB;
        k->scratch[0] = s0;
    }
    if (s0 & SCR_WAIT_SUB) {
        if (k->argi < 2)
            return NULL; /* argument 1 is the subcommand name */
        const an_cmd *c = &an_commands[(s0 & SCR_INDEX_MASK) - 1];
        const an_cmd *sub = NULL;
        if (k->argi == 2 && k->prev_len == k->prev_full_len)
            sub = an_cmd_lookup_sub(c, (const char *)k->prev, k->prev_len);
        if (!sub) {
            k->scratch[0] = SCR_DEAD;
            return NULL;
        }
        k->scratch[0] = (uint32_t)(sub - an_commands) + 1;
    }
    return &an_commands[(k->scratch[0] & SCR_INDEX_MASK) - 1];
}

int an_key_fn(void *ctx, resp_keyctx *k)
{
    (void)ctx;
    if (!k || !k->req || k->argi == 0)
        return 0;
    const an_cmd *c = resolve(k);
    if (!c)
        return 0;
    int is_key = 0;
    unsigned i = 0;
    for (; i < c->nspecs && i < 3; i++)
        is_key |= spec_step(&an_keyspecs[c->spec0 + i], &k->scratch[1 + i], k);
    if (c->proc == AN_PROC_SORT_STORE && i < 3)
        is_key |= proc_sort_store(&k->scratch[1 + i], k);
    return is_key;
}
