/*
 * decode_req.c - the request side (client -> server) of a RESP connection.
 *
 * Clients send either a multibulk ("*<n>\r\n" then n bulk strings "$<len>\r\n
 * <bytes>\r\n") or an inline command (a line of space-separated words, quotes
 * allowed, as redis-cli and telnet send). This is how Redis itself tells them
 * apart (networking.c, processInputBuffer): a first byte of '*' means
 * multibulk, anything else inline. "*0" and "*-1" are ignored by the server, as
 * are empty inline lines: no command, no reply.
 *
 * The decoder is resumable at any byte: its state lives in rq_dec, and the only
 * bytes it copies are header lines that straddle two chunks, the command name,
 * and 64-byte prefixes of the first arguments and of keys. Everything else is
 * skipped by moving a cursor. Keys are hashed as their bytes go by
 * (resp_slot_update), so a key split across packets gets its exact slot.
 *
 * After garbage or a gap the decoder looks for a boundary (resync.c): a
 * multibulk header, or a line that is plainly an inline command, unless the
 * client was seen speaking multibulk and never inline (a multibulk's words
 * sit on lines of their own, "$3\r\nGET\r\n", and its payloads may hold any
 * text: an inline candidate there could only be a false one).
 *
 * Credentials (AUTH, HELLO ... AUTH user pass, MIGRATE ... AUTH/AUTH2, CONFIG
 * SET values, ACL SETUSER rules) are never copied anywhere, not even into the
 * scratch prefix handed to the key hook.
 *
 * What it hands out (decode.h, rq_out): at a message's first byte it asks
 * its owner where to write (out->begin gives a resp_request), fills that in
 * as the bytes go by, and says out->done when the request is whole, or
 * out->dropped when it was none; out->error after malformed bytes. It
 * knows nothing else of its owner (the pairer, pair.c).
 *
 * Spec: https://redis.io/docs/latest/develop/reference/protocol-spec/
 *       (sections "Sending commands to a Redis server", "Inline commands")
 */
#include "resp/decode.h"

/* ---------------------------------------------------------------- arguments */

/* RQ_APART: out of line, so that the common path around the call saves
 * fewer registers (the path is taken about once per command). */
#if defined(__GNUC__)
#define RQ_APART __attribute__((noinline))
#else
#define RQ_APART
#endif

/* Is argument i of the request being read a credential? */
static int rq_is_secret(rq_dec *d, const resp_request *r, uint32_t i)
{
    if (d->cred_left > 0) {
        d->cred_left--;
        return 1;
    }
    switch (d->cred) {
    case CRED_ALL:
        return 1;
    case CRED_CONFIG: /* CONFIG SET param value [param value ...] */
        return i >= 3 && (i & 1) && r->nargs >= 1 &&
               rd_eq_ci((const uint8_t *)r->args[0], r->arg_len[0], "SET");
    case CRED_ACL:    /* ACL SETUSER name rule... (rules hold passwords) */
        return i >= 3 && r->nargs >= 1 &&
               rd_eq_ci((const uint8_t *)r->args[0], r->arg_len[0], "SETUSER");
    default:
        return 0;
    }
}

/* Which arguments of this command are credentials, from its name; first
 * is name[0], passed by the caller who has it in hand (reading it back from
 * the name just stored can wait on that store). */
static inline uint8_t rq_cred_class(uint8_t first, const char *name, size_t len)
{
    switch (first) {
    case 'A':
        if (RD_NAME_IS(name, len, "AUTH"))
            return CRED_ALL;
        if (RD_NAME_IS(name, len, "ACL"))
            return CRED_ACL;
        break;
    case 'C':
        if (RD_NAME_IS(name, len, "CONFIG"))
            return CRED_CONFIG;
        break;
    case 'H':
        if (RD_NAME_IS(name, len, "HELLO"))
            return CRED_HELLO;
        break;
    case 'M':
        if (RD_NAME_IS(name, len, "MIGRATE"))
            return CRED_MIGRATE;
        break;
    default:
        break;
    }
    return CRED_NONE;
}

/* Look for the keywords that announce credentials in the next arguments
 * (HELLO ... AUTH user pass, MIGRATE ... AUTH pass / AUTH2 user pass, until
 * KEYS). w/n: the argument just read, which was not itself a credential. */
static inline void cred_keywords(rq_dec *d, const uint8_t *w, size_t n)
{
    if (d->cred == CRED_HELLO && rd_eq_ci(w, n, "AUTH")) {
        d->cred_left = 2;
    } else if (d->cred == CRED_MIGRATE && !d->cred_stop) {
        if (rd_eq_ci(w, n, "AUTH"))
            d->cred_left = 1;
        else if (rd_eq_ci(w, n, "AUTH2"))
            d->cred_left = 2;
        else if (rd_eq_ci(w, n, "KEYS"))
            d->cred_stop = 1;
    }
}

/* Is the argument being read one of HELLO's credentials (AUTH user pass)?
 * Those take no args[] slot, so that a SETNAME after them is kept. */
static inline int hello_secret(const rq_dec *d)
{
    return d->a_secret && d->cred == CRED_HELLO;
}

/* Are argument i's bytes (not a key's) needed by nobody (the hook's
 * bare_mask, once its answers are fixed)? Never for a command with
 * credentials, whose keywords are read from the kept bytes. */
static inline int arg_is_bare(const rq_dec *d, uint32_t i)
{
    return d->kc.key_mask_final && d->cred == CRED_NONE && i < 32 &&
           ((d->kc.bare_mask >> i) & 1u);
}

/* Is argument i (not a credential) of the request being read a key? The
 * hook's answers once it has fixed them (key_mask_final, as bits), else the
 * hook itself, else the default: the first argument. */
static inline int arg_is_key(rq_dec *d, const resp_request *r, uint32_t i)
{
    const resp_config *cfg = d->cfg;
    if (d->kc.key_mask_final)
        return i < 32 && ((d->kc.key_mask >> i) & 1u);
    if (cfg->key_fn == NULL)
        return i == 1;
    resp_keyctx *k = &d->kc;
    k->req = r;
    k->argi = i;
    k->prev = d->prev;
    k->prev_len = d->prev_len;
    k->prev_full_len = d->prev_full;
    return cfg->key_fn(cfg->key_ctx, k) != 0;
}

/* An argument starts: decide where its bytes go. full is its declared length
 * (0 for inline arguments, whose length is known only at their end). */
static inline void arg_begin(rq_dec *d, uint64_t full)
{
    resp_request *r = d->req;
    uint32_t i = d->argi;
    d->a_seen = 0;
    d->a_full = full > UINT32_MAX ? UINT32_MAX : (uint32_t)full;
    d->a_key = 0;
    d->a_gap = 0;
    d->a_dst = NULL;
    if (i == 0) {
        d->a_name = 1;
        d->a_secret = 0;
        return;
    }
    d->a_name = 0;
    d->a_secret = (uint8_t)rq_is_secret(d, r, i);
    if (!d->a_secret)
        d->a_key = (uint8_t)arg_is_key(d, r, i);
    d->a_bare = (uint8_t)(!d->a_key && !d->a_secret && arg_is_bare(d, i));
    if (d->a_key)
        resp_slot_init(&d->hasher);
    if (hello_secret(d)) {
        d->cred_skipped++;
        return;
    }
    i -= d->cred_skipped; /* its args[] slot */
    if (i <= RESP_ARG_KEEP) {
        r->nargs = (uint8_t)i;
        r->arg_len[i - 1] = 0;
        r->arg_full_len[i - 1] = d->a_full;
        if (!d->a_secret && !d->a_bare)
            d->a_dst = (uint8_t *)r->args[i - 1];
    } else if (!d->a_secret && !d->a_bare) {
        d->a_dst = d->prevbuf;
    }
}

/* n more bytes of the current argument. */
static inline void arg_data(rq_dec *d, const uint8_t *p, size_t n)
{
    resp_request *r = d->req;
    if (d->a_name) {
        size_t have = d->a_seen < RESP_NAME_MAX ? (size_t)d->a_seen : RESP_NAME_MAX;
        for (size_t j = 0; j < n && have + j < RESP_NAME_MAX - 1; j++)
            r->name[have + j] = (char)rd_upper(p[j]);
    } else {
        if (d->a_dst != NULL && d->a_seen < RESP_ARG_PREFIX) {
            size_t room = RESP_ARG_PREFIX - (size_t)d->a_seen;
            memcpy(d->a_dst + d->a_seen, p, n < room ? n : room);
        }
        if (d->a_key) {
            if (r->nkeys == 0 && d->a_seen < RESP_ARG_PREFIX) {
                size_t room = RESP_ARG_PREFIX - (size_t)d->a_seen;
                memcpy(r->key0 + d->a_seen, p, n < room ? n : room);
            }
            resp_slot_update(&d->hasher, p, n);
        }
    }
    d->a_seen += n;
}

/* The current argument ended. */
static inline void arg_end(rq_dec *d)
{
    resp_request *r = d->req;
    uint32_t i = d->argi;
    uint32_t seen = d->a_seen > UINT32_MAX ? UINT32_MAX : (uint32_t)d->a_seen;
    uint32_t kept = seen < RESP_ARG_PREFIX ? seen : RESP_ARG_PREFIX;
    if (i == 0) {
        size_t nl = seen < RESP_NAME_MAX - 1 ? seen : RESP_NAME_MAX - 1;
        r->name[nl] = '\0';
        d->name_len = (uint8_t)nl;
        d->cred = rq_cred_class((uint8_t)r->name[0], r->name, nl);
        d->prev = (const uint8_t *)r->name;
        d->prev_len = (uint32_t)nl;
        d->prev_full = seen;
    } else {
        uint32_t k = i - d->cred_skipped; /* its args[] slot (none: a HELLO secret) */
        if (k <= RESP_ARG_KEEP && !hello_secret(d)) {
            r->arg_len[k - 1] = (d->a_secret || d->a_gap || d->a_bare) ? 0 : (uint8_t)kept;
            r->arg_full_len[k - 1] = seen;
        }
        if (d->a_key && d->a_gap) {
            r->nkeys++; /* a key whose bytes were partly lost: no slot */
            r->slot_unknown = 1;
            if (r->nkeys == 1)
                r->key0_full_len = seen; /* key0_len stays 0 */
        } else if (d->a_key) {
            uint16_t slot = resp_slot_final(&d->hasher);
            r->nkeys++;
            if (r->nkeys == 1) {
                r->slot = slot;
                r->key0_len = (uint8_t)kept;
                r->key0_full_len = seen;
            } else if ((int32_t)slot != r->slot) {
                r->multi_slot = 1;
            }
        }
        if (d->a_secret || d->a_gap) {
            d->prev = NULL;
            d->prev_len = 0;
        } else {
            d->prev = d->a_dst;
            d->prev_len = kept;
            cred_keywords(d, d->prev, kept);
        }
        d->prev_full = seen;
    }
    d->argi = i + 1;
    if (r->argc < d->argi)
        r->argc = d->argi;
}

/* Copy the first n bytes of a whole argument (n <= its length, n <= 64):
 * rd_copy_small, except that pieces of 2 or 3 bytes (names like GET and
 * SET, small values) are moved as one 4-byte word. That may read up to 2
 * bytes past the piece: they are the argument's own bytes or its CRLF, which
 * arg_whole's caller has checked is there. The byte written past n means
 * nothing (destinations are 32 or 64 bytes). */
static inline void arg_copy(uint8_t *dst, const uint8_t *p, size_t n)
{
    if (n >= 4) {
        rd_copy_small(dst, p, n);
    } else if (n >= 2) {
        uint32_t w;
        memcpy(&w, p, 4);
        memcpy(dst, &w, 4);
    } else if (n == 1) {
        dst[0] = p[0];
    }
}

/* The same for a command name, upper-cased. Returns its first byte
 * upper-cased (0 for an empty name), from the word in hand for the short
 * names. */
static inline uint8_t name_copy(uint8_t *dst, const uint8_t *p, size_t n)
{
    if (n >= 4) {
        rd_upper_copy(dst, p, n);
        return dst[0];
    } else if (n >= 2) { /* the 4-byte word may take the CR: not kept */
        uint32_t w;
        memcpy(&w, p, 4);
        w = rd_upper32(w) & (uint32_t)((1ull << (8 * n)) - 1);
        memcpy(dst, &w, 4);
        return dst[0];
    } else if (n == 1) {
        dst[0] = rd_upper(p[0]);
        return dst[0];
    }
    return 0;
}

/* name_copy that also hands back, in *w0, the upper-cased name's first 8
 * bytes as memcpy would load them from dst, zero past the name (km_words'
 * first word), built from the words in hand instead of loaded back. */
static inline uint8_t name_copy_word(uint8_t *dst, const uint8_t *p, size_t n, uint64_t *w0)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n >= 4) {
        if (n >= 8) {
            rd_upper_copy(dst, p, n);
            memcpy(w0, dst, 8);
            return dst[0];
        }
        uint32_t a, b; /* two 4-byte pieces, overlapping when n < 8 */
        memcpy(&a, p, 4);
        memcpy(&b, p + n - 4, 4);
        a = rd_upper32(a);
        b = rd_upper32(b);
        memcpy(dst, &a, 4);
        memcpy(dst + n - 4, &b, 4);
        *w0 = (uint64_t)a | ((uint64_t)b << (8 * (n - 4)));
        return (uint8_t)a;
    } else if (n >= 2) { /* as name_copy: the 4-byte word may take the CR */
        uint32_t w;
        memcpy(&w, p, 4);
        w = rd_upper32(w) & (uint32_t)((1ull << (8 * n)) - 1);
        memcpy(dst, &w, 4);
        *w0 = w;
        return (uint8_t)w;
    } else if (n == 1) {
        dst[0] = rd_upper(p[0]);
        *w0 = dst[0];
        return dst[0];
    }
    *w0 = 0;
    return 0;
#else
    uint8_t first = name_copy(dst, p, n);
    uint64_t w[2];
    memcpy(w, dst, 16);
    *w0 = n >= 8 ? w[0] : w[0] & ((1ull << (8 * n)) - 1);
    return first;
#endif
}

/* A whole argument of len bytes at p, all in one chunk, followed by its
 * CRLF (the caller checked it): the same as
 * arg_begin + arg_data + arg_end, without the state that lets those resume
 * across chunks. This is the hot path for requests. */
static inline void arg_whole(rq_dec *d, const uint8_t *p, size_t len)
{
    resp_request *r = d->req;
    uint32_t i = d->argi;
    uint32_t full = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
    uint32_t kept = full < RESP_ARG_PREFIX ? full : RESP_ARG_PREFIX;
    if (i == 0) {
        size_t nl = len < RESP_NAME_MAX - 1 ? len : RESP_NAME_MAX - 1;
        uint8_t first = name_copy((uint8_t *)r->name, p, nl);
        r->name[nl] = '\0';
        d->name_len = (uint8_t)nl;
        d->cred = rq_cred_class(first, r->name, nl);
        d->prev = (const uint8_t *)r->name;
        d->prev_len = (uint32_t)nl;
        d->prev_full = full;
    } else {
        /* most commands have no credentials: one test. cred_left is only
         * ever set for HELLO and MIGRATE (cred_keywords), so cred alone
         * tells; testing both fields with one two-byte load (as gcc does)
         * waits for two separate byte stores to reach the cache. */
        int secret = d->cred != CRED_NONE ? rq_is_secret(d, r, i) : 0;
        int key = secret ? 0 : arg_is_key(d, r, i);
        int none = secret || (!key && arg_is_bare(d, i)); /* no byte kept */
        uint32_t k = i - d->cred_skipped; /* its args[] slot */
        uint8_t *dst = NULL;
        if (secret && d->cred == CRED_HELLO) {
            d->cred_skipped++; /* no slot */
        } else if (k <= RESP_ARG_KEEP) {
            r->nargs = (uint8_t)k;
            r->arg_full_len[k - 1] = full;
            r->arg_len[k - 1] = none ? 0 : (uint8_t)kept;
            if (!none)
                dst = (uint8_t *)r->args[k - 1];
        } else if (!none) {
            dst = d->prevbuf;
        }
        if (dst != NULL)
            arg_copy(dst, p, kept);
        if (key) {
            uint16_t slot = resp_key_slot(p, len);
            r->nkeys++;
            if (r->nkeys == 1) {
                r->slot = slot;
                r->key0_len = (uint8_t)kept;
                r->key0_full_len = full;
                arg_copy((uint8_t *)r->key0, p, kept);
            } else if ((int32_t)slot != r->slot) {
                r->multi_slot = 1;
            }
        }
        d->prev = dst;
        d->prev_len = dst ? kept : 0;
        d->prev_full = full;
        if (dst != NULL && (d->cred == CRED_HELLO || d->cred == CRED_MIGRATE))
            cred_keywords(d, dst, kept);
    }
    d->argi = i + 1;
    if (r->argc < d->argi)
        r->argc = d->argi;
}

/* Copy a head piece and a tail piece of W bytes (W <= n) of p to a and b
 * both: each piece is loaded once. */
#define COPY_TWICE(a, b, p, n, W)                                                   \
    do {                                                                             \
        uint8_t head_[W], tail_[W];                                                  \
        memcpy(head_, (p), W);                                                       \
        memcpy(tail_, (p) + (n) - W, W);                                             \
        memcpy((a), head_, W);                                                       \
        memcpy((a) + (n) - W, tail_, W);                                             \
        memcpy((b), head_, W);                                                       \
        memcpy((b) + (n) - W, tail_, W);                                             \
    } while (0)

/* arg_copy to two places (an argument that is also the first key: args[]
 * and key0), with one set of loads and one choice of piece size. */
static inline void arg_copy_twice(uint8_t *a, uint8_t *b, const uint8_t *p, size_t n)
{
    if (n >= 32) {
        COPY_TWICE(a, b, p, n, 32);
    } else if (n >= 16) {
        COPY_TWICE(a, b, p, n, 16);
    } else if (n >= 8) {
        COPY_TWICE(a, b, p, n, 8);
    } else if (n >= 4) {
        COPY_TWICE(a, b, p, n, 4);
    } else {
        arg_copy(a, p, n);
        arg_copy(b, p, n);
    }
}

/* Keep argument i (1..RESP_ARG_KEEP, not a credential) of a whole
 * argument at p in args[i - 1], and when key says it is a key, its slot
 * and, for the first key, its facts and prefix (copied along with args[]).
 * The call to resp_key_slot comes last, so that only r lives across it
 * (fewer registers saved around it). */
static inline void arg_keep(resp_request *r, uint32_t i, const uint8_t *p, uint32_t full,
                            uint32_t kept, int key)
{
    uint8_t *dst = (uint8_t *)r->args[i - 1];
    r->nargs = (uint8_t)i;
    r->arg_full_len[i - 1] = full;
    r->arg_len[i - 1] = (uint8_t)kept;
    if (!key) {
        arg_copy(dst, p, kept);
        return;
    }
    uint32_t nkeys = r->nkeys;
    r->nkeys = nkeys + 1;
    if (nkeys == 0) {
        r->key0_len = (uint8_t)kept;
        r->key0_full_len = full;
        arg_copy_twice(dst, (uint8_t *)r->key0, p, kept);
        r->slot = resp_key_slot(p, full);
    } else {
        arg_copy(dst, p, kept);
        if ((int32_t)resp_key_slot(p, full) != r->slot)
            r->multi_slot = 1;
    }
}

/* The bytes of a name of len <= 15 (NUL-terminated at len) as two words,
 * zero past the name (the bytes after its NUL may be stale). */
static inline void km_words(const char *name, size_t len, uint64_t w[2])
{
    memcpy(w, name, 16);
    if (len < 8) {
        w[0] &= (1ull << (8 * len)) - 1; /* len >= 1 */
        w[1] = 0;
    } else if (len < 16) {
        w[1] &= (1ull << (8 * (len - 8))) - 1; /* len - 8 <= 7 */
    }
}

/* Remember the mask the hook fixed at its first question of request r (a
 * multibulk request without credentials whose whole name, name_full
 * bytes, was kept), for the next requests of its name and argc (see
 * resp_key_fn). */
static void km_remember(rq_dec *d, const resp_request *r, uint32_t name_full)
{
    size_t len = d->name_len;
    if (len == 0 || len > 15 || name_full != len || r->inline_cmd || d->cred != CRED_NONE)
        return; /* (its callers see no credentials; km_hit counts on it) */
    km_words(r->name, len, d->km_name);
    d->tm.head_len = 0; /* its layout may be of the name cached before */
    d->km_len = (uint8_t)len;
    d->km_argc = r->argc;
    d->km_mask = d->kc.key_mask;
    d->km_bare = d->kc.bare_mask;
}

/* Is the name of the multibulk request just kept (len bytes kept, full
 * its whole length, w0 its first word: name_copy_word's) the name of the
 * last request whose key mask the hook fixed, with the same argc? Then
 * that mask holds for this one too (see resp_key_fn), and the hook is not
 * asked; and the name has no credentials (km_remember keeps no other). */
static inline int km_hit(const rq_dec *d, const resp_request *r, size_t len, size_t full,
                         uint64_t w0)
{
    if (len != d->km_len || len == 0 || full != len || r->argc != d->km_argc ||
        w0 != d->km_name[0])
        return 0;
    if (len > 8) { /* len <= 15, as km_len */
        uint64_t w[2];
        km_words(r->name, len, w);
        return w[1] == d->km_name[1];
    }
    return 1;
}

/* The hook's first question of a request (argument 1), as arg_plain_ask
 * asks it. */
static int arg_plain_first(rq_dec *d, const resp_request *r, uint32_t full, uint32_t kept)
{
    const resp_config *cfg = d->cfg;
    resp_keyctx *k = &d->kc;
    k->req = r;
    k->argi = 1;
    k->prev = d->prev;
    k->prev_len = d->prev_len;
    k->prev_full_len = d->prev_full;
    d->prev = (const uint8_t *)r->args[0];
    d->prev_len = kept;
    d->prev_full = full;
    return cfg->key_fn(cfg->key_ctx, k);
}

/* arg_plain's question to the key hook (or the default, the first
 * argument), when the hook has not fixed its answers: about once per
 * command. Argument i becomes the previous argument for the hook's next
 * question (d->prev is read by nothing else in a command without
 * credentials; arg_plain copies its bytes there next). Out of line and
 * ending in a tail call, so that it saves no registers, nor does arg_plain's
 * common path for it. Returns non-zero for a key. */
static RQ_APART int arg_plain_ask(rq_dec *d, const resp_request *r, uint32_t i, uint32_t full,
                                  uint32_t kept)
{
    const resp_config *cfg = d->cfg;
    if (i == 1 && cfg->key_fn != NULL) {
        uint32_t name_full = d->prev_full; /* the previous argument: the name */
        int key = arg_plain_first(d, r, full, kept);
        if (d->kc.key_mask_final)
            km_remember(d, r, name_full);
        return key;
    }
    resp_keyctx *k = &d->kc;
    k->req = r;
    k->argi = i;
    k->prev = d->prev;
    k->prev_len = d->prev_len;
    k->prev_full_len = d->prev_full;
    d->prev = (const uint8_t *)r->args[i - 1];
    d->prev_len = kept;
    d->prev_full = full;
    if (cfg->key_fn == NULL)
        return i == 1;
    return cfg->key_fn(cfg->key_ctx, k);
}

/* arg_whole for argument i (1..RESP_ARG_KEEP) of a command without
 * credentials (cred CRED_NONE), the common case: the argument is kept in
 * args[i - 1]; once the hook's key mask is final, nothing else is asked
 * and the previous argument is not recorded (only the hook reads it).
 * full: its length (rq_fast takes only those that fit). d->argi is the
 * caller's (rq_fast keeps it in a register). */
static inline void arg_plain(rq_dec *d, resp_request *r, uint32_t i, const uint8_t *p,
                             uint32_t full)
{
    uint32_t kept = full < RESP_ARG_PREFIX ? full : RESP_ARG_PREFIX;
    int key = d->kc.key_mask_final ? (int)((d->kc.key_mask >> i) & 1u) /* i < 32 */
                                   : arg_plain_ask(d, r, i, full, kept);
    if (!key && ((d->kc.bare_mask >> i) & 1u)) /* set only with the final mask */
        kept = 0;
    arg_keep(r, i, p, full, kept, key);
}

/* arg_whole for the command name (argument 0). */
static inline void arg_name_whole(rq_dec *d, resp_request *r, const uint8_t *p, size_t len)
{
    size_t nl = len < RESP_NAME_MAX - 1 ? len : RESP_NAME_MAX - 1;
    uint64_t w0;
    uint8_t first = name_copy_word((uint8_t *)r->name, p, nl, &w0);
    r->name[nl] = '\0';
    d->name_len = (uint8_t)nl;
    d->prev = (const uint8_t *)r->name;
    d->prev_len = (uint32_t)nl;
    d->prev_full = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
    if (km_hit(d, r, nl, len, w0)) {
        d->cred = CRED_NONE;
        d->kc.key_mask = d->km_mask;
        d->kc.bare_mask = d->km_bare;
        d->kc.key_mask_final = 1;
        return;
    }
    d->cred = rq_cred_class(first, r->name, nl);
}

/* ---------------------------------------------------------------- messages */

/* Stream offset of position p in the chunk that starts at base. */
static inline uint64_t rq_pos(const rq_dec *d, const uint8_t *base, const uint8_t *p)
{
    return d->off + (uint64_t)(p - base);
}

/* A message starts at pos, a multibulk of argc arguments (0: not known
 * yet): ask the owner where it goes and reset the per-request state. The previous
 * argument (d->prev) is not reset: every path sets it to the name before
 * the key hook is first asked. */
static inline void rq_begin_argc(rq_dec *d, uint64_t pos, int64_t ts, uint32_t argc)
{
    d->req = d->out->begin(d->owner, ts);
    d->req->start_frame = d->frame;
    d->msg_off = pos;
    d->argi = 0;
    d->argc_expected = argc;
    d->in_msg = 1;
    d->cred = CRED_NONE;
    d->cred_left = 0;
    d->cred_stop = 0;
    d->cred_skipped = 0;
    d->name_len = 0;
    memset(d->kc.scratch, 0, sizeof(d->kc.scratch));
    d->kc.key_mask = 0;
    d->kc.key_mask_final = 0;
    d->kc.bare_mask = 0;
}

/* A message starts at pos: ask the owner where it goes and reset the
 * per-request state. */
static void rq_begin(rq_dec *d, uint64_t pos, int64_t ts)
{
    rq_begin_argc(d, pos, ts, 0);
}

/* The message ended at pos, with r->argc already its number of arguments:
 * hand the request over. */
static inline void rq_finish(rq_dec *d, uint64_t pos, int64_t ts)
{
    resp_request *r = d->req;
    r->ts_us = ts;
    r->bytes = pos - d->msg_off;
    if (r->slot_unknown) { /* a key lost bytes: no key facts at all */
        r->nkeys = 0;
        r->slot = -1;
        r->multi_slot = 0;
        r->key0_len = 0;
        r->key0_full_len = 0;
    }
    d->in_msg = 0;
    d->state = RQ_START;
    d->out->done(d->owner, d->name_len);
}

/* The message ended at pos: hand the request over. */
static void rq_complete(rq_dec *d, uint64_t pos, int64_t ts)
{
    d->req->argc = d->argi;
    rq_finish(d, pos, ts);
}

/* The message turned out to be no command ("*0", empty inline line). */
static void rq_nothing(rq_dec *d)
{
    d->in_msg = 0;
    d->state = RQ_START;
    d->out->dropped(d->owner);
}

/* Start looking for a boundary. Inline commands may be found too unless the
 * client is known to speak multibulk only (a false inline resync in a
 * multibulk stream is the risk: see resync.c). */
static void rq_resync_start(rq_dec *d, int at_boundary)
{
    rd_resync_start(&d->rs, 1, at_boundary);
    d->rs.inline_ok = d->inline_seen ? 2 : (d->st->requests == 0 ? 1 : 0);
    d->rs.max_line = d->cfg->max_line;
}

/* Throw away the message in progress and look for the next boundary. */
static void rq_drop(rq_dec *d, uint64_t pos, int at_boundary)
{
    if (d->in_msg) {
        d->st->skipped_bytes += pos - d->msg_off;
        d->in_msg = 0;
        d->out->dropped(d->owner);
    }
    if (d->state != RQ_RESYNC)
        d->st->resyncs++; /* it lost its place: a search begins (a loss while
                            searching is part of the same search) */
    d->line.len = 0;
    d->state = RQ_RESYNC;
    rq_resync_start(d, at_boundary);
}

/* Malformed input at pos: count it, drop the message, resynchronise. The
 * requests already queued are still answered in order; what follows is not
 * known (the server answers garbage with an error, and may hide commands in
 * it): the owner hears of it (out->error) as a loss on the request side. */
static void rq_error(rq_dec *d, uint64_t pos, int limit, int at_boundary)
{
    d->st->protocol_errors++;
    rq_drop(d, pos, at_boundary);
    d->out->error(d->owner, limit);
}

void rq_lost(rq_dec *d, int at_boundary)
{
    rq_drop(d, d->off, at_boundary);
}

/* A gap of len bytes (0: unknown) on the request side. When it falls wholly
 * inside the payload of an argument whose declared length is known (and, at
 * most, its trailing CRLF), nothing but payload was lost: the bytes are
 * counted as skipped payload and decoding carries on in step. Returns 1 when
 * the gap was bridged so, 0 when it is a loss (the caller drops the message).
 *
 * Not bridged: a gap that reaches past the argument (headers, the next
 * request), one inside the command name, and one inside a short argument
 * (<= RESP_ARG_PREFIX bytes) that is neither a key nor a credential: such
 * words (REPLY OFF, numkeys, STREAMS, SLOTS) decide how many replies come and
 * where the keys are. A key that loses bytes leaves the request without a
 * slot (slot_unknown); a long value that loses bytes of its kept prefix keeps
 * no prefix. The trailing CRLF's bytes are known, so a gap over them is
 * replayed as "\r\n" and the decoder still sees the argument end. */
int rq_skip_gap(rq_dec *d, uint64_t len, int64_t ts)
{
    uint64_t lost;
    if (!d->in_msg || !rd_gap_in_bulk(len, d->state == RQ_ARG_BODY, d->state == RQ_ARG_CRLF,
                                      d->arg_left, d->crlf_left, &lost))
        return 0;
    if (lost > 0) {
        if (d->a_name)
            return 0;
        if (!d->a_key && !d->a_secret && d->a_full <= RESP_ARG_PREFIX)
            return 0;
        if (d->a_key || (d->a_dst != NULL && d->a_seen < RESP_ARG_PREFIX))
            d->a_gap = 1;
        d->req->gap = 1;
        d->a_seen += lost;
        d->arg_left -= lost;
        d->off += lost;
    }
    d->st->gaps_bridged++;
    if (d->state == RQ_ARG_BODY && d->arg_left == 0) {
        d->crlf_left = 2;
        d->state = RQ_ARG_CRLF;
    }
    if (len > lost) /* the CRLF, or its LF: replay it */
        rq_feed(d, (const uint8_t *)"\r\n" + (2 - d->crlf_left), (size_t)(len - lost), ts,
                d->frame);
    return 1;
}

void rq_init(rq_dec *d, const rq_out *out, void *owner, const resp_config *cfg,
             resp_conn_stats *st, int mid_stream)
{
    memset(d, 0, sizeof(*d));
    d->out = out;
    d->owner = owner;
    d->cfg = cfg;
    d->st = st;
    if (!mid_stream) {
        d->state = RQ_START;
    } else {
        d->state = RQ_RESYNC; /* picked up mid-stream: search the first boundary */
        rq_resync_start(d, 1);
        d->rs.uncounted = 1;
    }
}

/* ---------------------------------------------------------------- inline */

/* isspace() of the C locale, as sdssplitargs uses between arguments. */
static inline int in_space(uint8_t ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f';
}

/* Value of a hex digit, -1 if not one. */
static int hexval(uint8_t ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* One byte of an argument. */
static inline void in_byte(rq_dec *d, uint8_t ch)
{
    arg_data(d, &ch, 1);
}

/* Split the bytes [p, stop) of an inline line into arguments, the way Redis's
 * sdssplitargs does (double quotes with \n \r \t \b \a \xHH escapes, single
 * quotes with \' only, a closing quote must be followed by a space). Returns -1
 * on a quoting error, with *bad at the offending byte (so that the resync
 * starts there whatever the chunking). */
static int in_tokens(rq_dec *d, const uint8_t *p, const uint8_t *stop, const uint8_t **bad)
{
    while (p < stop) {
        uint8_t ch = *p;
        switch (d->in_state) {
        case IN_SPACE:
            if (in_space(ch)) {
                p++;
                break;
            }
            arg_begin(d, 0);
            d->in_arg_open = 1;
            d->in_state = IN_WORD;
            break; /* re-examine ch as part of the word */
        case IN_WORD: {
            const uint8_t *q = p;
            while (q < stop && *q != ' ' && *q != '\t' && *q != '\r' && *q != '\n' &&
                   *q != '\0' && *q != '"' && *q != '\'')
                q++;
            if (q > p)
                arg_data(d, p, (size_t)(q - p));
            p = q;
            if (p == stop)
                break;
            if (*p == '"') {
                d->in_state = IN_DQ;
            } else if (*p == '\'') {
                d->in_state = IN_SQ;
            } else {
                arg_end(d);
                d->in_arg_open = 0;
                d->in_state = IN_SPACE;
            }
            p++;
            break;
        }
        case IN_DQ:
            p++;
            if (ch == '\\')
                d->in_state = IN_DQ_ESC;
            else if (ch == '"')
                d->in_state = IN_AFTER_Q;
            else
                in_byte(d, ch);
            break;
        case IN_DQ_ESC:
            p++;
            d->in_state = IN_DQ;
            switch (ch) {
            case 'x': d->in_state = IN_DQ_HEX1; break;
            case 'n': in_byte(d, '\n'); break;
            case 'r': in_byte(d, '\r'); break;
            case 't': in_byte(d, '\t'); break;
            case 'b': in_byte(d, '\b'); break;
            case 'a': in_byte(d, '\a'); break;
            default: in_byte(d, ch); break;
            }
            break;
        case IN_DQ_HEX1:
            if (hexval(ch) < 0) { /* "\x" not followed by two hex digits */
                in_byte(d, 'x');
                d->in_state = IN_DQ;
                break;
            }
            d->in_hex = ch;
            d->in_state = IN_DQ_HEX2;
            p++;
            break;
        case IN_DQ_HEX2:
            if (hexval(ch) < 0) {
                in_byte(d, 'x');
                in_byte(d, d->in_hex);
                d->in_state = IN_DQ;
                break;
            }
            in_byte(d, (uint8_t)(hexval(d->in_hex) * 16 + hexval(ch)));
            d->in_state = IN_DQ;
            p++;
            break;
        case IN_SQ:
            p++;
            if (ch == '\\')
                d->in_state = IN_SQ_ESC;
            else if (ch == '\'')
                d->in_state = IN_AFTER_Q;
            else
                in_byte(d, ch);
            break;
        case IN_SQ_ESC:
            d->in_state = IN_SQ;
            if (ch == '\'') {
                in_byte(d, '\'');
                p++;
            } else {
                in_byte(d, '\\'); /* re-examine ch */
            }
            break;
        case IN_AFTER_Q:
            if (!in_space(ch)) {
                *bad = p;
                return -1;
            }
            arg_end(d);
            d->in_arg_open = 0;
            d->in_state = IN_SPACE;
            p++;
            break;
        default:
            *bad = p;
            return -1;
        }
    }
    return 0;
}

/* The inline line ended (its LF was seen). Returns -1 on unbalanced quotes. */
static int in_finish(rq_dec *d)
{
    switch (d->in_state) {
    case IN_SPACE:
        break;
    case IN_WORD:
    case IN_AFTER_Q:
        arg_end(d);
        break;
    default:
        return -1;
    }
    d->in_arg_open = 0;
    d->in_state = IN_SPACE;
    return 0;
}

/* An inline line the server rejects whole when it ends ("-ERR Protocol
 * error: unbalanced quotes in request", sdssplitargs failing, then it closes
 * the connection): a request that ran no command, without name or keys, so
 * that the error pairs with it. Counted as a protocol error. */
static void rq_rejected(rq_dec *d, uint64_t pos, int64_t ts)
{
    resp_request *r = d->req;
    d->st->protocol_errors++;
    r->name[0] = 0;
    r->nkeys = 0;
    r->nargs = 0;
    r->slot = -1;
    r->multi_slot = 0;
    r->key0_len = 0;
    r->key0_full_len = 0;
    d->argi = 0;
    d->in_arg_open = 0;
    d->in_state = IN_SPACE;
    d->in_bad = 0;
    d->inline_seen = 1;
    rq_complete(d, pos, ts);
}

/* ---------------------------------------------------------------- feed */

/* A resynchronisation found a whole inline command, held in the line buffer
 * (printable, no quotes, at most RD_LBUF bytes: see resync.c) and ending
 * at pos: decode it as RQ_INLINE would have. */
static void rq_resynced_inline(rq_dec *d, uint64_t pos, int64_t ts)
{
    const uint8_t *bad = NULL;
    size_t n = (size_t)d->rs.full;
    rq_begin(d, pos - d->rs.cand, d->rs.cand_start_us);
    d->req->start_frame = d->rs.cand_start_frame;
    d->req->inline_cmd = 1;
    d->in_state = IN_SPACE;
    d->in_len = (uint32_t)n;
    d->in_arg_open = 0;
    d->line.len = 0;
    int bad_line = in_tokens(d, d->line.buf, d->line.buf + n, &bad) != 0 ||
                   in_finish(d) != 0 || d->argi == 0;
    memset(d->line.buf, 0, n); /* it may have held a credential (AUTH) */
    if (bad_line) { /* cannot happen: the scanner checked the line */
        rq_error(d, pos, 0, 1);
        return;
    }
    d->inline_seen = 1;
    rq_complete(d, pos, ts);
}

/* A resynchronisation found "*<n>\r\n" with '$' next, or a whole inline
 * command: carry on from there. */
static void rq_resynced(rq_dec *d, uint64_t pos, int64_t ts)
{
    d->out->resynced(d->owner);
    if (d->rs.type == 'i') {
        rq_resynced_inline(d, pos, ts);
        return;
    }
    rq_begin(d, pos - d->rs.cand, d->rs.cand_start_us);
    d->req->start_frame = d->rs.cand_start_frame;
    d->argc_expected = (uint32_t)d->rs.num;
    d->req->argc = d->argc_expected;
    d->state = RQ_ARG_TYPE;
}

/* Does p hold "\r\n"? One 2-byte compare (the pattern is built from the
 * bytes themselves, so it holds whatever the byte order). */
static inline int rq_is_crlf(const uint8_t *p)
{
    static const uint8_t crlf[2] = {'\r', '\n'};
    uint16_t w, want;
    memcpy(&w, p, 2);
    memcpy(&want, crlf, 2);
    return w == want;
}

/* The header of an argument whose length has one or two digits, "$<d>\r\n"
 * or "$<dd>\r\n" (no leading zero), read from one 8-byte word (p has at
 * least 8 bytes): redis-benchmark's and most clients' arguments. Returns
 * the header's length with *len set, or 0 (anything else, which rd_num_fast
 * reads). With rq_is_crlf, cheaper than rd_num_fast's byte-wise tests; two
 * digits are tested first (most arguments but the name). */
static inline size_t rq_short_header(const uint8_t *p, size_t *len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, p, 8);
    unsigned d0 = (unsigned)((w >> 8) & 0xff) - '0';
    unsigned d1 = (unsigned)((w >> 16) & 0xff) - '0';
    /* two digits first: all but the name, mostly */
    if ((w & 0xffff0000ffULL) == 0x0a0d000024ULL && d0 - 1 <= 8 && d1 <= 9) {
        *len = d0 * 10 + d1;
        return 5;
    }
    if ((w & 0xffff00ffULL) == 0x0a0d0024ULL && d0 <= 9) {
        *len = d0;
        return 4;
    }
#else
    (void)p;
    (void)len;
#endif
    return 0;
}

/* The header of a multibulk of 1..9 arguments, "*<1..9>\r\n", read from
 * one 8-byte word (p has at least 8 bytes), as rq_short_header reads an
 * argument's. Returns its length (4) with *n set, or 0. */
static inline size_t rq_short_count(const uint8_t *p, size_t *n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, p, 8);
    unsigned d0 = (unsigned)((w >> 8) & 0xff) - '1';
    if ((w & 0xffff00ffULL) == 0x0a0d002aULL && d0 <= 8) {
        *n = d0 + 1;
        return 4;
    }
#else
    (void)p;
    (void)n;
#endif
    return 0;
}

/* ---------------------------------------------------------------- repeated requests */

/* Do the n (4..8) bytes at a and b match? Two 4-byte compares, which
 * overlap when n < 8; every load stays inside both runs. */
static inline int rq_same_4to8(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint32_t a0, a1, b0, b1;
    memcpy(&a0, a, 4);
    memcpy(&a1, a + n - 4, 4);
    memcpy(&b0, b, 4);
    memcpy(&b1, b + n - 4, 4);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/* Do the 16 bytes at a and b match? */
static inline int rq_same_16(const uint8_t *a, const uint8_t *b)
{
    uint64_t a0, a1, b0, b1;
    memcpy(&a0, a, 8);
    memcpy(&a1, a + 8, 8);
    memcpy(&b0, b, 8);
    memcpy(&b1, b + 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/* The header "$<len>\r\n" at q, in [q, end): its length with *len set,
 * or 0 when it is not one (no '$', a bad, negative or split number). */
static size_t rq_tmpl_header(const uint8_t *q, const uint8_t *end, uint64_t *len)
{
    int64_t v;
    if (q >= end || *q != '$')
        return 0;
    size_t k = rd_num_fast(q + 1, end, &v);
    if (k == 0 || v < 0)
        return 0;
    *len = (uint64_t)v;
    return k + 1;
}

/* Take the layout of the multibulk request just decoded, msg[0, n), into
 * d->tm (see rq_tmpl) when it fits one: 2..RQ_TMPL_ARGS arguments, its
 * name the one the key mask cache holds for its argc (the caller saw it
 * hit), a header of 16..32 bytes and further lengths below 1000. Else
 * d->tm is left empty. Bytes decoded once already are parsed again here,
 * but only for a request that repeated the name and size of the one
 * before (rq_fast). */
static RQ_APART void rq_tmpl_take(rq_dec *d, const uint8_t *msg, size_t n)
{
    const resp_request *r = d->req;
    rq_tmpl *t = &d->tm;
    const uint8_t *q = msg, *end = msg + n;
    uint32_t argc = r->argc;
    uint64_t len;
    int64_t v;
    size_t k;
    t->head_len = 0;
    if (argc < 2 || argc > RQ_TMPL_ARGS || d->cred != CRED_NONE || !d->kc.key_mask_final ||
        d->km_len != d->name_len || d->km_argc != argc || n < 4 || *q != '*')
        return;
    k = rd_num_fast(q + 1, end, &v);
    if (k == 0 || v != (int64_t)argc)
        return;
    q += 1 + k;
    k = rq_tmpl_header(q, end, &len); /* the name's, kept whole */
    if (k == 0 || len != d->name_len || (uint64_t)(end - q) < k + len + 2 ||
        !rq_is_crlf(q + k + len))
        return;
    q += k + len + 2;
    k = rq_tmpl_header(q, end, &len); /* argument 1's */
    size_t head = (size_t)(q + k - msg);
    if (k == 0 || head < 16 || head > sizeof(t->head) || len > UINT32_MAX ||
        (uint64_t)(end - q - k) < len)
        return;
    t->len[1] = (uint32_t)len;
    q += k + len;
    for (uint32_t a = 2; a < argc; a++) {
        if (end - q < 2 || !rq_is_crlf(q))
            return;
        k = rq_tmpl_header(q + 2, end, &len);
        if (k == 0 || len > 999 || (uint64_t)(end - q - 2 - k) < len)
            return;
        t->joint_len[a] = (uint8_t)(k + 2);
        memcpy(t->joint[a], q, k + 2);
        t->len[a] = (uint32_t)len;
        q += k + 2 + len;
    }
    if (end - q != 2 || !rq_is_crlf(q))
        return;
    /* what arg_plain makes of each argument with the cached masks */
    t->keys = 0;
    for (uint32_t a = 1; a < argc; a++) {
        uint32_t key = (d->km_mask >> a) & 1u;
        int bare = !key && ((d->km_bare >> a) & 1u);
        t->keys |= (uint8_t)(key << a);
        uint32_t kept = t->len[a] < RESP_ARG_PREFIX ? t->len[a] : RESP_ARG_PREFIX;
        t->kept[a] = (uint8_t)(bare ? 0 : kept);
    }
    memcpy(t->head, msg, head);
    memcpy(t->name, r->name, sizeof(t->name)); /* zero past the name */
    t->argc = (uint8_t)argc;
    t->name_len = d->name_len;
    t->total = n;
    t->head_len = (uint8_t)head;
}

/* Does the request at p, whole in [p, end), have the layout of d->tm?
 * Every byte but the payloads of arguments 1.. is compared. */
static inline int rq_tmpl_match(const rq_tmpl *t, const uint8_t *p, const uint8_t *end)
{
    size_t head = t->head_len;
    if (head == 0 || (uint64_t)(end - p) < t->total || !rq_same_16(p, t->head) ||
        !rq_same_16(p + head - 16, t->head + head - 16))
        return 0;
    const uint8_t *q = p + head + t->len[1];
    for (uint32_t a = 2; a < t->argc; a++) {
        if (!rq_same_4to8(q, t->joint[a], t->joint_len[a]))
            return 0;
        q += t->joint_len[a] + t->len[a];
    }
    return rq_is_crlf(q);
}

/* Decode the request at p that rq_tmpl_match found laid out as d->tm, as
 * rq_fast would (its name a hit of the key mask cache, then arg_plain for
 * each argument, whose choices the layout holds), with no header to parse.
 * Returns the byte after it. */
static inline const uint8_t *rq_tmpl_decode(rq_dec *d, const uint8_t *p, uint64_t at_zero,
                                            int64_t ts)
{
    const rq_tmpl *t = &d->tm;
    uint32_t argc = t->argc;
    rq_begin_argc(d, at_zero + (uint64_t)(uintptr_t)p, ts, argc);
    resp_request *r = d->req;
    r->argc = argc;
    memcpy(r->name, t->name, sizeof(t->name));
    d->name_len = t->name_len;
    /* d->prev is left alone: only the hook reads it, and it is not asked */
    d->kc.key_mask = d->km_mask;
    d->kc.bare_mask = d->km_bare;
    d->kc.key_mask_final = 1;
    const uint8_t *q = p + t->head_len;
    for (uint32_t a = 1; a < argc; a++) {
        if (a >= 2)
            q += t->joint_len[a];
        arg_keep(r, a, q, t->len[a], t->kept[a], (t->keys >> a) & 1u);
        q += t->len[a];
    }
    q += 2;
    rq_finish(d, at_zero + (uint64_t)(uintptr_t)q, ts);
    d->tm.last_total = t->total;
    return q;
}

/* Decode the requests from p on that have the layout of d->tm, while they
 * do (a client in a loop sends many in a row). Returns where they end. Out
 * of line, so that rq_fast stays small enough to be inlined in rq_feed. */
static RQ_APART const uint8_t *rq_tmpl_run(rq_dec *d, const uint8_t *p, const uint8_t *end,
                                           uint64_t at_zero, int64_t ts)
{
    while (d->line.len == 0 && rq_tmpl_match(&d->tm, p, end))
        p = rq_tmpl_decode(d, p, at_zero, ts);
    return p;
}

/* The fast path of RQ_ARG_TYPE: whole arguments ("$<len>\r\n<bytes>\r\n")
 * that lie entirely in this chunk are handled here in one go, and so is the
 * start of the next pipelined request ("*<n>\r\n") when it follows in the
 * same chunk, without trips through rq_feed's switch. The index of the
 * argument stays in a register (d->argi is written when leaving and before
 * arg_whole, which reads it). A request that repeats the layout of the one
 * before (rq_tmpl) is read by that layout instead of header by header.
 * Returns where it stopped: at end, or at the first byte the states of
 * rq_feed must handle (split, malformed, too long, "*0"), with d->state
 * saying which. */
static const uint8_t *rq_fast(rq_dec *d, const uint8_t *base, const uint8_t *p,
                              const uint8_t *end, int64_t ts)
{
    /* longer arguments (whole in one chunk they cannot be) are left to
     * the states of rq_feed, which give the same result: here, a length
     * always fits the uint32_t fields without clamping */
    const uint64_t max_bulk = d->cfg->max_bulk_request;
    const uint64_t max_len = max_bulk < UINT32_MAX ? max_bulk : UINT32_MAX;
    /* stream offset of p: at_zero + (uintptr_t)p (unsigned arithmetic,
     * wrapping both ways), one addition instead of rq_pos's three steps */
    const uint64_t at_zero = d->off - (uint64_t)(uintptr_t)base;
    uint32_t i = d->argi;
    int64_t v;
    /* the request being read, when it began here and its name hit the
     * key mask cache (else NULL): it may give its layout to d->tm */
    const uint8_t *msg = NULL;
    for (;;) {
        const uint8_t *body;
        size_t len, k;
        if (end - p >= 8 && (k = rq_short_header(p, &len)) != 0) {
            body = p + k;
        } else {
            if (*p != '$')
                break;
            k = rd_num_fast(p + 1, end, &v);
            if (k == 0 || v < 0)
                break;
            body = p + 1 + k;
            len = (size_t)v;
        }
        if ((uint64_t)len > max_len || (uint64_t)(end - body) < (uint64_t)len + 2 ||
            !rq_is_crlf(body + len))
            break;
        p = body + len + 2;
        resp_request *r = d->req;
        if (i == 0) {
            arg_name_whole(d, r, body, len);
            if (!d->kc.key_mask_final)
                msg = NULL;
        } else if (i <= RESP_ARG_KEEP && d->cred == CRED_NONE) {
            arg_plain(d, r, i, body, (uint32_t)len);
        } else { /* credentials, or past the kept arguments */
            d->argi = i;
            arg_whole(d, body, len);
        }
        i++;
        if (i >= d->argc_expected) {
            /* a multibulk's argc was set from its count: i is that count
             * (d->argi is read by nothing once the request is complete) */
            rq_finish(d, at_zero + (uint64_t)(uintptr_t)p, ts);
            if (msg != NULL) {
                size_t n = (size_t)(p - msg);
                if (n == d->tm.last_total)
                    rq_tmpl_take(d, msg, n);
                d->tm.last_total = n;
            }
            if (d->tm.head_len != 0 && d->line.len == 0)
                p = rq_tmpl_run(d, p, end, at_zero, ts);
            /* pipelined: the next request usually follows in the same
             * chunk; start it here, as RQ_START and RQ_MB_LINE would */
            if (end - p >= 8 && (k = rq_short_count(p, &len)) != 0) {
                v = (int64_t)len; /* "*<1..9>\r\n" */
            } else {
                if (p == end || *p != '*')
                    return p;
                k = rd_num_fast(p + 1, end, &v);
                if (k == 0 || v <= 0 || v > RD_MAX_ELEMENTS)
                    return p; /* "*0", long or split: the general path */
                k++;
            }
            if (d->line.len != 0)
                return p;
            rq_begin_argc(d, at_zero + (uint64_t)(uintptr_t)p, ts, (uint32_t)v);
            msg = p;
            p += k;
            d->req->argc = (uint32_t)v;
            d->state = RQ_ARG_TYPE;
            i = 0;
        }
        if (p == end)
            break;
    }
    d->argi = i;
    return p;
}

void rq_feed(rq_dec *d, const uint8_t *base, size_t n, int64_t ts, uint64_t frame)
{
    const resp_config *cfg = d->cfg;
    const uint8_t *p = base;
    const uint8_t *end = base + n;
    int64_t v;
    int r;

    d->frame = frame;
    while (p < end) {
        switch (d->state) {
        case RQ_START:
            rq_begin(d, rq_pos(d, base, p), ts);
            if (*p == '*') {
                p++;
                d->state = RQ_MB_LINE;
            } else if ((*p < 0x20 && *p != '\r' && *p != '\n' && *p != '\t') || *p >= 0x7f) {
                /* Redis would take any byte as the start of an inline
                 * command; binary here (TLS, another protocol, noise) is not a
                 * client talking RESP, so it is counted as garbage instead of
                 * producing commands with binary names. */
                rq_error(d, rq_pos(d, base, p), 0, 0);
                d->rs.first = *p; /* the line it starts is not a "$" header */
                d->rs.at_start = 0;
            } else {
                d->req->inline_cmd = 1;
                d->in_state = IN_SPACE;
                d->in_len = 0;
                d->in_arg_open = 0;
                d->in_bad = 0;
                d->state = RQ_INLINE;
            }
            break;

        case RQ_MB_LINE:
            r = rd_num_line(&d->line, &p, end, &v);
            if (r == 0)
                break;
            if (r < 0) {
                rq_error(d, rq_pos(d, base, p), 0, d->line.err_bound);
                break;
            }
            if (v <= 0) { /* Redis ignores "*0" and "*-1" */
                rq_nothing(d);
                break;
            }
            if (v > RD_MAX_ELEMENTS) {
                rq_error(d, rq_pos(d, base, p), 1, 1);
                break;
            }
            d->argc_expected = (uint32_t)v;
            d->req->argc = (uint32_t)v;
            d->state = RQ_ARG_TYPE;
            break;

        case RQ_ARG_TYPE:
            p = rq_fast(d, base, p, end, ts);
            if (p == end || d->state != RQ_ARG_TYPE)
                break;
            if (*p != '$') { /* Redis: "expected '$', got ..." */
                rq_error(d, rq_pos(d, base, p), 0, 0);
                break;
            }
            p++;
            d->state = RQ_ARG_LINE;
            /* fall through */
        case RQ_ARG_LINE:
            r = rd_num_line(&d->line, &p, end, &v);
            if (r == 0)
                break;
            if (r < 0 || v < 0) {
                rq_error(d, rq_pos(d, base, p), 0, r < 0 ? d->line.err_bound : 1);
                break;
            }
            if ((uint64_t)v > cfg->max_bulk_request) {
                rq_error(d, rq_pos(d, base, p), 1, 1);
                break;
            }
            arg_begin(d, (uint64_t)v);
            d->arg_left = (uint64_t)v;
            d->state = RQ_ARG_BODY;
            /* fall through */
        case RQ_ARG_BODY: {
            size_t avail = (size_t)(end - p);
            if (d->arg_left + 2 <= avail) { /* whole rest of the argument is here */
                size_t len = (size_t)d->arg_left;
                if (p[len] != '\r' || p[len + 1] != '\n') {
                    rq_error(d, rq_pos(d, base, p + len), 0, 0);
                    p += len;
                    break;
                }
                if (len && (d->a_name || d->a_dst || d->a_key))
                    arg_data(d, p, len);
                else
                    d->a_seen += len;
                p += len + 2;
                d->arg_left = 0;
                goto arg_done;
            }
            size_t take = d->arg_left < avail ? (size_t)d->arg_left : avail;
            if (take && (d->a_name || d->a_dst || d->a_key))
                arg_data(d, p, take);
            else
                d->a_seen += take;
            p += take;
            d->arg_left -= take;
            if (d->arg_left == 0) {
                d->crlf_left = 2;
                d->state = RQ_ARG_CRLF;
            }
            break;
        }

        case RQ_ARG_CRLF:
            if (*p != (d->crlf_left == 2 ? '\r' : '\n')) {
                rq_error(d, rq_pos(d, base, p), 0, 0);
                break;
            }
            p++;
            if (--d->crlf_left > 0)
                break;
        arg_done:
            arg_end(d);
            if (d->argi >= d->argc_expected)
                rq_complete(d, rq_pos(d, base, p), ts);
            else
                d->state = RQ_ARG_TYPE;
            break;

        case RQ_INLINE: {
            const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
            const uint8_t *stop = nl ? nl : end;
            size_t len = (size_t)(stop - p);
            if (d->in_len + len > RD_INLINE_MAX || d->in_len + len > cfg->max_line) {
                rq_error(d, rq_pos(d, base, p), 1, 0); /* "too big inline request" */
                break;
            }
            d->in_len += (uint32_t)len;
            const uint8_t *bad = stop;
            if (!d->in_bad && in_tokens(d, p, stop, &bad) != 0)
                d->in_bad = 1; /* the rest of the line is not split */
            p = stop;
            if (nl == NULL)
                break;
            p = nl + 1;
            if (d->in_bad || in_finish(d) != 0) { /* "unbalanced quotes in request" */
                rq_rejected(d, rq_pos(d, base, p), ts);
                break;
            }
            if (d->argi == 0) {
                rq_nothing(d);
            } else {
                d->inline_seen = 1;
                rq_complete(d, rq_pos(d, base, p), ts);
            }
            break;
        }

        case RQ_RESYNC: {
            int64_t skipped = 0;
            if (d->rs.uncounted) { /* the first search of a mid-stream connection */
                d->rs.uncounted = 0;
                d->st->resyncs++;
            }
            d->rs.frame = d->frame;
            int found = rd_resync_scan(&d->rs, &d->line, &p, end, ts, &skipped,
                                       cfg->max_bulk_request);
            d->st->skipped_bytes += (uint64_t)skipped;
            if (found)
                rq_resynced(d, rq_pos(d, base, p), ts);
            break;
        }

        default: /* not a state: treat as garbage */
            rq_error(d, rq_pos(d, base, p), 0, 0);
            break;
        }
    }
    d->off += n;
}
