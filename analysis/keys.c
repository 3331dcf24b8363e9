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
 *               bits 16..27: for a command whose keys can only be at fixed
 *               positions (index + range specs), the last one + 1: past it
 *               the request is marked as having no keys left (0: no bound)
 *               bit 29: scratch[1] is the key mask (below)
 *               bit 30: container command waiting for its subcommand
 *               bit 31: no keys to find (unknown command or subcommand)
 *   scratch[1+i] the state of key spec i (keyword: first key position;
 *               keynum: key count + 1), or of the command's procedure; for a
 *               command whose keys are all at fixed positions below 32 (GET,
 *               SET, HSET, ...), scratch[1] is instead the mask of the
 *               argument positions that are keys, worked out once from argc,
 *               so each later argument costs one bit test
 *
 * Known approximations: a keyword search the server runs backwards (MIGRATE's
 * KEYS) runs forwards from a fixed start, so a key literally named "KEYS" in a
 * MIGRATE key list is mishandled; MIGRATE's key argument is marked even when
 * it is "" (KEYS form; the analysis ignores an empty first key); inline
 * commands give no argument count, so ranges counted from the end (BLPOP's
 * keys, XREAD's streams) take every remaining argument.
 */
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "analysis/analysis.h"
#include "analysis/keys_internal.h"

#define SCR_INDEX_MASK 0xffffu
#define SCR_BOUND_SHIFT 16
#define SCR_BOUND_MASK 0xfffu
#define SCR_MASK (1u << 29)
#define SCR_WAIT_SUB (1u << 30)
#define SCR_DEAD (1u << 31)
/* Inline commands (space separated) announce no argument count: ranges that
 * run to the end take every remaining argument. */
#define INLINE_ARGC 0x7fffffffL

/* ---------------------------------------------------------------- index */

/* Every request looks its command up twice (the key hook, then the analysis),
 * so names go through a small open-addressing index built at first use rather
 * than a binary search: one pass over the name's bytes (the hash folds ASCII
 * case, so the input needs no copy) and usually one comparison. The index and
 * the table of special commands are filled once and then only read. */
#define IDX_BITS 10
#define IDX_SIZE (1u << IDX_BITS)
#define IDX_MAX_COMMANDS 1000      /* the table has ~370; the index stays sparse */
static uint16_t idx_slot[IDX_SIZE]; /* table index + 1; 0: empty */
static uint8_t idx_special[IDX_MAX_COMMANDS];
static uint16_t idx_bound[IDX_MAX_COMMANDS]; /* see SCR_BOUND: 0 no bound */
static uint32_t idx_mask[IDX_MAX_COMMANDS];  /* key positions when bound <= 32 */
static uint16_t idx_mask_argc[IDX_MAX_COMMANDS]; /* ... valid from this argc on */
/* 1: a plain keyed command (key specs, no subcommands, nothing special):
 * nothing reads its arguments' bytes but its keys' (resp_keyctx.bare_mask) */
static uint8_t idx_bare[IDX_MAX_COMMANDS];
/* 0: not built, 1: being built, 2: ready. resp/'s workers call the key hook
 * from several threads (--threads), so the first use builds it exactly once
 * and the others wait for it (a few microseconds). */
static atomic_int idx_state;

/* The hot lookups (names resp/ decoded: upper case, NUL-terminated in a
 * RESP_NAME_MAX buffer) first try the names of at most 15 bytes as two
 * zero-padded little-endian words: no byte loop at all. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WORD_LOOKUP 1
#else
#define WORD_LOOKUP 0
#endif
typedef struct word_slot {
    uint64_t w0, w1;
    const an_cmd *cmd;      /* NULL: empty */
} word_slot;
static word_slot word_tab[IDX_SIZE];
static void word_add(size_t i);
static uint32_t key_mask(const an_cmd *c, long argc);

/* ASCII upper case of one byte. */
static unsigned char up(unsigned char c)
{
    return c >= 'a' && c <= 'z' ? (unsigned char)(c - 32) : c;
}

/* FNV-1a (32 bits) over the upper-cased bytes. */
static uint32_t name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ up((unsigned char)s[i])) * 16777619u;
    return h ^ (h >> 13);
}

/* Is the table name (upper case) exactly name[0..len), any case? */
static int name_eq(const char *table_name, const char *name, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)table_name[i] != up((unsigned char)name[i]))
            return 0; /* also stops at the table name's NUL */
    return table_name[len] == 0;
}

/* The last argument that can be a key of c, + 1, when every key spec has a
 * fixed position (begin_search index, find_keys range with lastkey >= 0) and
 * no procedure adds keys; 1 for a command without keys; 0 when unbounded. */
static uint16_t key_bound(const an_cmd *c)
{
    long last = 0;
    if (c->proc != AN_PROC_NONE)
        return 0;
    for (unsigned i = 0; i < c->nspecs && i < 3; i++) {
        const an_keyspec *s = &an_keyspecs[c->spec0 + i];
        if (s->bs_type != AN_BS_INDEX || s->fk_type != AN_FK_RANGE || s->a < 0)
            return 0;
        if (s->bs_arg + s->a > last)
            last = s->bs_arg + s->a;
    }
    return last + 1 <= (long)SCR_BOUND_MASK ? (uint16_t)(last + 1) : 0;
}

static void idx_build(void)
{
    static const struct { const char *name; uint8_t special; } specials[] = {
        {"ASKING", AN_SP_ASKING},     {"READONLY", AN_SP_READONLY},
        {"READWRITE", AN_SP_READWRITE}, {"RESET", AN_SP_RESET},
        {"REPLCONF", AN_SP_REPLCONF}, {"PSYNC", AN_SP_PSYNC},
        {"SYNC", AN_SP_SYNC},         {"RESTORE-ASKING", AN_SP_RESTORE_ASKING},
        {"CLUSTER", AN_SP_CLUSTER},   {"MIGRATE", AN_SP_MIGRATE},
        {"CLIENT", AN_SP_CLIENT},     {"HELLO", AN_SP_HELLO},
    };
    size_t n = an_n_commands < IDX_MAX_COMMANDS ? an_n_commands : IDX_MAX_COMMANDS;
    for (size_t i = 0; i < n; i++) {
        const char *name = an_commands[i].name;
        uint32_t j = name_hash(name, strlen(name)) & (IDX_SIZE - 1);
        while (idx_slot[j])
            j = (j + 1) & (IDX_SIZE - 1);
        idx_slot[j] = (uint16_t)(i + 1);
        word_add(i);
        idx_bound[i] = key_bound(&an_commands[i]);
        if (idx_bound[i] && idx_bound[i] <= 32) {
            idx_mask_argc[i] = idx_bound[i]; /* every spec's last key present */
            idx_mask[i] = key_mask(&an_commands[i], idx_bound[i]);
        }
        idx_special[i] = AN_SP_NONE;
        for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++)
            if (strcmp(name, specials[k].name) == 0)
                idx_special[i] = specials[k].special;
        idx_bare[i] = an_commands[i].nspecs > 0 && !(an_commands[i].flags & AN_CMD_CONTAINER) &&
                      strchr(name, '|') == NULL && idx_special[i] == AN_SP_NONE;
    }
}

/* Build the index at the first use, once, whatever the threads. */
static void idx_ensure(void)
{
    if (atomic_load_explicit(&idx_state, memory_order_acquire) == 2)
        return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&idx_state, &expected, 1)) {
        idx_build();
        atomic_store_explicit(&idx_state, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&idx_state, memory_order_acquire) != 2)
        ; /* another thread is filling it */
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* The first 16 bytes at p as two words, cut at the first NUL (the bytes
 * after it zeroed). 1 if the NUL is among them and not first, else 0. */
static int name_words(const char *p, uint64_t *w0, uint64_t *w1)
{
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, p + 8, 8);
    uint64_t z = (a - ONES) & ~a & HIGHS; /* its lowest bit marks the first zero byte */
    if (z) {
        unsigned k = (unsigned)__builtin_ctzll(z) >> 3;
        if (k == 0)
            return 0;
        *w0 = a & (~0ull >> (64 - 8 * k));
        *w1 = 0;
        return 1;
    }
    z = (b - ONES) & ~b & HIGHS;
    if (!z)
        return 0;
    unsigned k = (unsigned)__builtin_ctzll(z) >> 3;
    *w0 = a;
    *w1 = k ? b & (~0ull >> (64 - 8 * k)) : 0;
    return 1;
}

static uint32_t word_hash(uint64_t w0, uint64_t w1)
{
    uint64_t h = (w0 ^ (w1 * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(h >> (64 - IDX_BITS));
}

/* Put table entry i in the word table (names of 1..15 bytes). */
static void word_add(size_t i)
{
    char buf[RESP_NAME_MAX + 16] = {0};
    size_t n = strlen(an_commands[i].name);
    uint64_t w0 = 0, w1 = 0;
    if (!WORD_LOOKUP || n == 0 || n > 15) /* the NUL must be among 16 bytes */
        return;
    memcpy(buf, an_commands[i].name, n);
    if (!name_words(buf, &w0, &w1))
        return;
    uint32_t j = word_hash(w0, w1);
    while (word_tab[j].cmd)
        j = (j + 1) & (IDX_SIZE - 1);
    word_tab[j].w0 = w0;
    word_tab[j].w1 = w1;
    word_tab[j].cmd = &an_commands[i];
}

/* The last name this thread found, as its raw first 16 bytes: equal raw
 * bytes holding the NUL are the same name, and requests come in runs of one
 * command (pipelines, benchmarks), so most lookups end here. Per thread, as
 * resp/'s workers call the key hook concurrently. */
static _Thread_local struct {
    uint64_t raw[2];
    const an_cmd *cmd;           /* NULL: nothing remembered */
} last_name;

const an_cmd *an_cmd_lookup_name(const char name[RESP_NAME_MAX])
{
    uint64_t w0 = 0, w1 = 0, raw[2];
    memcpy(raw, name, sizeof raw);
    if (last_name.cmd && raw[0] == last_name.raw[0] && raw[1] == last_name.raw[1])
        return last_name.cmd;
    idx_ensure();
    if (WORD_LOOKUP && name_words(name, &w0, &w1)) {
        for (uint32_t j = word_hash(w0, w1); word_tab[j].cmd; j = (j + 1) & (IDX_SIZE - 1))
            if (word_tab[j].w0 == w0 && word_tab[j].w1 == w1) {
                last_name.raw[0] = raw[0];
                last_name.raw[1] = raw[1];
                last_name.cmd = word_tab[j].cmd;
                return word_tab[j].cmd;
            }
    }
    /* longer, lower-case or unknown: the general lookup */
    return an_cmd_lookup(name, strnlen(name, RESP_NAME_MAX));
}

const an_cmd *an_cmd_lookup(const char *name, size_t len)
{
    if (len == 0 || len >= RESP_NAME_MAX + 40)
        return NULL;
    idx_ensure();
    uint32_t j = name_hash(name, len) & (IDX_SIZE - 1);
    for (uint16_t v; (v = idx_slot[j]) != 0; j = (j + 1) & (IDX_SIZE - 1))
        if (name_eq(an_commands[v - 1].name, name, len))
            return &an_commands[v - 1];
    return NULL;
}

uint8_t an_cmd_special(const an_cmd *c)
{
    if (!c || c < an_commands || c >= an_commands + an_n_commands)
        return AN_SP_NONE;
    size_t i = (size_t)(c - an_commands);
    idx_ensure(); /* c may come from the table directly, not from a lookup */
    return i < IDX_MAX_COMMANDS ? idx_special[i] : AN_SP_NONE;
}

/* The last subcommand this thread looked up: its container, its bytes as
 * given, and the answer (NULL included). A connection that alternates
 * between commands (a migration's CLUSTER GETKEYSINSLOT and MIGRATE) asks for
 * the same subcommand again and again; equal bytes give the same answer. */
static _Thread_local struct {
    const an_cmd *container;
    size_t len;
    char sub[32];
    const an_cmd *found;
} last_sub;

/* "CONTAINER|sub": built in a small buffer, then looked up. */
const an_cmd *an_cmd_lookup_sub(const an_cmd *container, const char *sub, size_t len)
{
    char buf[96];
    size_t n = strlen(container->name);
    if (len == 0 || n + 1 + len >= sizeof buf)
        return NULL;
    if (last_sub.container == container && last_sub.len == len &&
        memcmp(last_sub.sub, sub, len) == 0)
        return last_sub.found;
    memcpy(buf, container->name, n);
    buf[n] = '|';
    memcpy(buf + n + 1, sub, len);
    const an_cmd *found = an_cmd_lookup(buf, n + 1 + len);
    if (len <= sizeof last_sub.sub) {
        last_sub.container = container;
        last_sub.len = len;
        memcpy(last_sub.sub, sub, len);
        last_sub.found = found;
    }
    return found;
}

const an_cmd *an_cmd_for_request(const resp_request *req, int *sub_known)
{
    return an_cmd_resolve(req, NULL, sub_known);
}

const an_cmd *an_cmd_resolve(const resp_request *req, const an_cmd **base, int *sub_known)
{
    const an_cmd *c = an_cmd_lookup_name(req->name);
    if (base)
        *base = c;
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
    if (argi < first || argi > last)
        return 0;
    return s->step <= 1 || (argi - first) % s->step == 0;
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
    if (argi < first || argi > last)
        return 0;
    return s->step <= 1 || (argi - first) % s->step == 0;
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

/* The key bound of table entry i (0: none). */
static uint32_t cmd_bound(uint32_t i)
{
    return i < IDX_MAX_COMMANDS ? idx_bound[i] : 0;
}

/* The key positions of a command whose specs are all fixed ranges ending
 * below 32 (key_bound 1..32), for this argc: what in_range answers, as bits. */
static uint32_t key_mask(const an_cmd *c, long argc)
{
    uint32_t m = 0;
    for (unsigned i = 0; i < c->nspecs && i < 3; i++) {
        const an_keyspec *s = &an_keyspecs[c->spec0 + i];
        long first = s->bs_arg, last = first + s->a;
        if (last >= argc || last < first || first >= argc || last > 31)
            continue; /* the server rejects this shape: no keys */
        for (long p = first; p <= last; p += s->step > 0 ? s->step : 1)
            m |= 1u << p;
    }
    return m;
}

/* The last command this thread switched to its key mask by name alone (no
 * subcommand): its name's raw first 16 bytes (holding the NUL, so equal bytes
 * are the same name), the scratch words it ended with, and the argc from
 * which that mask holds (NO_MASK_ARGC: nothing remembered; no argc reaches
 * it, so no valid flag needs testing). The next request of the same command
 * (pipelines send runs of one) then costs a compare and a few stores in
 * an_key_fn. */
#define NO_MASK_ARGC INT64_MAX
static _Thread_local struct {
    uint64_t raw[2];
    uint32_t s0, mask, bare;
    int64_t mask_argc;
} last_mask = {{0, 0}, 0, 0, 0, NO_MASK_ARGC};

/* Remember the mask request k just switched to (see last_mask). */
static void remember_mask(const resp_keyctx *k, uint32_t i)
{
    uint64_t w0, w1;
    if (!name_words(k->req->name, &w0, &w1)) {
        last_mask.mask_argc = NO_MASK_ARGC;
        return;
    }
    memcpy(last_mask.raw, k->req->name, sizeof last_mask.raw);
    last_mask.s0 = k->scratch[0];
    last_mask.mask = k->scratch[1];
    last_mask.bare = k->bare_mask;
    last_mask.mask_argc = idx_mask_argc[i];
}

/* The bare_mask that goes with key_mask for the command of table index i:
 * every argument but the keys, for a plain keyed command. */
static inline uint32_t bare_of(size_t i, uint32_t key_mask)
{
    return i < IDX_MAX_COMMANDS && idx_bare[i] ? ~key_mask & ~1u : 0;
}

/* Switch a resolved request to its key mask when its command allows: the
 * mask made once for every spec present (argc past the last key), or, for a
 * shorter request, the specs that fit. */
static inline void use_mask(resp_keyctx *k)
{
    uint32_t i = (k->scratch[0] & SCR_INDEX_MASK) - 1;
    uint32_t bound = (k->scratch[0] >> SCR_BOUND_SHIFT) & SCR_BOUND_MASK;
    if (bound == 0 || bound > 32 || i >= IDX_MAX_COMMANDS)
        return;
    long argc = k->req->inline_cmd ? INLINE_ARGC : (long)k->req->argc;
    k->scratch[1] = argc >= idx_mask_argc[i] ? idx_mask[i] : key_mask(&an_commands[i], argc);
    k->scratch[0] |= SCR_MASK;
    /* the answers are fixed from here on: resp reads them from the mask */
    k->key_mask = k->scratch[1];
    k->bare_mask = bare_of(i, k->key_mask);
    k->key_mask_final = 1;
}

/* No argument from here on is a key: tell resp to stop asking. */
static inline void mark_dead(resp_keyctx *k)
{
    k->scratch[0] |= SCR_DEAD;
    k->key_mask = 0;
    k->key_mask_final = 1;
}

/* Resolve the command for this request into scratch[0]. Returns the entry or
 * NULL when there is nothing (more) to find. */
static const an_cmd *resolve(resp_keyctx *k)
{
    uint32_t s0 = k->scratch[0];
    if (s0 & SCR_DEAD)
        return NULL;
    if ((s0 & SCR_INDEX_MASK) == 0) {
        const an_cmd *c = an_cmd_lookup_name(k->req->name);
        if (!c) {
            k->scratch[0] = 0;
            mark_dead(k);
            return NULL;
        }
        s0 = (uint32_t)(c - an_commands) + 1;
        if (c->flags & AN_CMD_CONTAINER)
            s0 |= SCR_WAIT_SUB;
        else
            s0 |= (uint32_t)cmd_bound(s0 - 1) << SCR_BOUND_SHIFT;
        k->scratch[0] = s0;
        if (!(s0 & SCR_WAIT_SUB)) {
            use_mask(k);
            /* the mask made for every argc from idx_mask_argc on (use_mask
             * sets SCR_MASK only for a table index below IDX_MAX_COMMANDS) */
            uint32_t i = (s0 & SCR_INDEX_MASK) - 1;
            long argc = k->req->inline_cmd ? INLINE_ARGC : (long)k->req->argc;
            if ((k->scratch[0] & SCR_MASK) && argc >= idx_mask_argc[i])
                remember_mask(k, i);
        }
    }
    if (s0 & SCR_WAIT_SUB) {
        if (k->argi < 2)
            return NULL; /* argument 1 is the subcommand name */
        const an_cmd *c = &an_commands[(s0 & SCR_INDEX_MASK) - 1];
        const an_cmd *sub = NULL;
        if (k->argi == 2 && k->prev_len == k->prev_full_len)
            sub = an_cmd_lookup_sub(c, (const char *)k->prev, k->prev_len);
        if (!sub) {
            k->scratch[0] = 0;
            mark_dead(k);
            return NULL;
        }
        uint32_t si = (uint32_t)(sub - an_commands);
        k->scratch[0] = (si + 1) | (uint32_t)cmd_bound(si) << SCR_BOUND_SHIFT;
        use_mask(k);
    }
    return &an_commands[(k->scratch[0] & SCR_INDEX_MASK) - 1];
}

/* A command whose key specs are all index ranges (MSET, MGET, DEL, EXISTS:
 * keys to the end of the request, so no mask holds for every argc) gets the
 * mask of this request's declared argc when it is at most 32: what in_range
 * answers for each argument, as bits. Returns 0 (nothing set) otherwise. An
 * inline command's argc is unknown until its line ends. */
static int use_argc_mask(resp_keyctx *k, const an_cmd *c)
{
    long argc = (long)k->req->argc;
    if (k->req->inline_cmd || argc > 32 || c->proc != AN_PROC_NONE)
        return 0;
    for (unsigned i = 0; i < c->nspecs && i < 3; i++) {
        const an_keyspec *s = &an_keyspecs[c->spec0 + i];
        if (s->bs_type != AN_BS_INDEX || s->fk_type != AN_FK_RANGE)
            return 0;
    }
    uint32_t m = 0;
    for (unsigned i = 0; i < c->nspecs && i < 3; i++) {
        const an_keyspec *s = &an_keyspecs[c->spec0 + i];
        for (long p = 1; p < argc; p++)
            if (in_range(s, s->bs_arg, argc, p))
                m |= 1u << p;
    }
    k->scratch[1] = m;
    k->scratch[0] |= SCR_MASK;
    k->key_mask = m;
    k->bare_mask = bare_of((size_t)(c - an_commands), m);
    k->key_mask_final = 1;
    return 1;
}

/* After argument argi: when every key spec's answers for the arguments left
 * are fixed (index ranges; keyword ranges whose keyword was found: MIGRATE's
 * KEYS, XREAD's STREAMS) and the declared argc is at most 32, give resp the
 * rest as a mask (what spec_step would answer for each, bound included), so
 * the hook is not called for every key after the keyword. */
static void finish_when_fixed(resp_keyctx *k, const an_cmd *c)
{
    long argc = (long)k->req->argc;
    if (k->req->inline_cmd || argc > 32 || (long)k->argi + 1 >= argc ||
        c->proc != AN_PROC_NONE)
        return;
    long first[3];
    unsigned n = c->nspecs < 3 ? c->nspecs : 3;
    for (unsigned i = 0; i < n; i++) {
        const an_keyspec *s = &an_keyspecs[c->spec0 + i];
        if (s->fk_type != AN_FK_RANGE)
            return;
        if (s->bs_type == AN_BS_INDEX)
            first[i] = s->bs_arg;
        else if (k->scratch[1 + i] != 0)
            first[i] = (long)k->scratch[1 + i]; /* the keyword was found */
        else
            return;
    }
    uint32_t bound = (k->scratch[0] >> SCR_BOUND_SHIFT) & SCR_BOUND_MASK;
    uint32_t m = 0;
    for (long p = (long)k->argi + 1; p < argc && (!bound || p < (long)bound); p++)
        for (unsigned i = 0; i < n; i++)
            if (in_range(&an_keyspecs[c->spec0 + i], first[i], argc, p))
                m |= 1u << p;
    k->scratch[1] = m;
    k->scratch[0] |= SCR_MASK;
    k->key_mask = m;
    k->bare_mask = bare_of((size_t)(c - an_commands), m);
    k->key_mask_final = 1;
}

/* Everything but the two quick answers of an_key_fn: resolving the command
 * (first argument), and the key spec interpreter. Kept out of line so that
 * the quick answers need no stack frame. */
static __attribute__((noinline)) int key_fn_full(resp_keyctx *k)
{
    const an_cmd *c = resolve(k);
    if (!c)
        return 0;
    if ((k->scratch[0] & SCR_MASK) || (k->argi == 1 && use_argc_mask(k, c)))
        return k->argi < 32 && ((k->scratch[1] >> k->argi) & 1u);
    uint32_t bound = (k->scratch[0] >> SCR_BOUND_SHIFT) & SCR_BOUND_MASK;
    if (bound && k->argi >= bound) {
        mark_dead(k); /* past the last possible key */
        return 0;
    }
    int is_key = 0;
    unsigned i = 0;
    for (; i < c->nspecs && i < 3; i++)
        is_key |= spec_step(&an_keyspecs[c->spec0 + i], &k->scratch[1 + i], k);
    if (c->proc == AN_PROC_SORT_STORE && i < 3)
        is_key |= proc_sort_store(&k->scratch[1 + i], k);
    else
        finish_when_fixed(k, c);
    return is_key;
}

int an_key_fn(void *ctx, resp_keyctx *k)
{
    (void)ctx;
    if (!k || !k->req || k->argi == 0)
        return 0;
    uint32_t s0 = k->scratch[0];
    if (s0 == 0) { /* the request's first question: the command before, again? */
        uint64_t raw[2];
        memcpy(raw, k->req->name, sizeof raw);
        /* an inline command's argc counts as INLINE_ARGC, which passes any
         * mask_argc; its argc so far is not read here: when it falls short,
         * key_fn_full gives the same answer (one load less on every call) */
        if (raw[0] == last_mask.raw[0] && raw[1] == last_mask.raw[1] &&
            (int64_t)k->req->argc >= last_mask.mask_argc) {
            k->scratch[0] = last_mask.s0;
            k->scratch[1] = k->key_mask = last_mask.mask;
            k->bare_mask = last_mask.bare;
            k->key_mask_final = 1;
            return k->argi < 32 && ((last_mask.mask >> k->argi) & 1u);
        }
        return key_fn_full(k);
    }
    if (s0 & SCR_DEAD)
        return 0;
    if (s0 & SCR_MASK) /* fixed positions: one bit test */
        return k->argi < 32 && ((k->scratch[1] >> k->argi) & 1u);
    return key_fn_full(k);
}
