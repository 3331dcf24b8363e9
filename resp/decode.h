/*
 * decode.h - the two RESP decoders and what they hand out (not a public
 * header; resp_internal.h builds the pairing on top of it).
 *
 *   decode_req.c  requests (client -> server): multibulk and inline
 *   decode_rep.c  replies (server -> client): every RESP2/RESP3 type
 *   resync.c      finding a plausible message boundary after garbage or a gap
 *   shape.c       does a stream start like requests or like replies?
 *
 * A decoder turns the bytes of one direction of one connection into
 * messages. It is given, at rq_init / rp_init, a table of events (rq_out,
 * rp_out) and an owner to pass them: it says when a message begins (and
 * the owner answers where to write it: a resp_request or resp_reply, which
 * the decoder then fills), when it is done, and when bytes were malformed
 * or a message turned out to be none. The counters it keeps are the
 * connection's (resp_conn_stats: protocol_errors, resyncs, skipped_bytes,
 * gaps_bridged). That is all a decoder knows of the rest: which reply
 * answers which request is the owner's business (pair.c, via conn.c).
 *
 * Shaped so because each decoder is resumable at any byte and called once
 * per chunk: its whole state is its rq_dec / rp_dec, and the events come
 * about once per message (the fields the owner reads back after an event
 * are named in the event's comment).
 *
 * Spec: https://redis.io/docs/latest/develop/reference/protocol-spec/
 */
#ifndef SLOTSCOPE_RESP_DECODE_H
#define SLOTSCOPE_RESP_DECODE_H

#include <stdint.h>
#include <string.h>

#include "resp/resp.h"

/* ---------------------------------------------------------------- limits */

#define RD_LBUF 176                /* bytes kept of a line (errtext fits) */
#define RD_NUM_MAX 24              /* a length or count line longer than this is bad */
#define RD_STACK_INLINE 8          /* aggregate frames held without allocating */
#define RD_MAX_ELEMENTS 0x7fffffffLL /* largest aggregate / multibulk count */
#define RD_ELEM0_MAX 16            /* bytes kept of a top-level aggregate's 1st element */
#define RD_STATUS_MAX 16           /* bytes kept of a top-level simple string */
#define RD_INLINE_MAX (64 * 1024)  /* Redis PROTO_INLINE_MAX_SIZE */

/* Results of the line reader. */
enum { RD_MORE = 0, RD_DONE = 1, RD_ERR = -1, RD_ERR_LIMIT = -2 };

/* A line being read (CRLF-terminated), possibly across chunks. Only the first
 * RD_LBUF bytes are kept; the rest is counted. */
typedef struct rd_line {
    uint64_t len;        /* bytes so far, CR included, LF not */
    uint8_t last;        /* last byte so far (to check the CR before LF) */
    uint8_t err_bound;   /* after an error: *pp is just past a CRLF, so the
                            next byte may start a message */
    uint8_t buf[RD_LBUF];
} rd_line;

/* Resynchronisation scanner: looks for CRLF, a type byte and a plausible line
 * (requests: or a plausible inline command, see resync.c). */
typedef struct rd_resync {
    uint8_t state;       /* RS_* in resync.c */
    uint8_t type;        /* candidate type byte */
    uint8_t is_req;      /* requests: "*<n>\r\n$" (or an inline command) */
    uint8_t inline_ok;   /* requests: inline commands may be found too (1),
                            also as lone words and at the starting boundary
                            (2: the client is known to speak inline); set by
                            the decoder after rd_resync_start */
    uint8_t at_start;    /* the line before the next boundary is not known
                            (set by rd_resync_start; a decoder that knows
                            its first byte sets first and clears this) */
    uint8_t first;       /* first byte of the line being scanned */
    uint8_t last;        /* last byte of the previous chunk scanned */
    uint32_t max_line;   /* inline candidates: longest line (with inline_ok) */
    uint32_t cand;       /* candidate bytes held (type + line + CRLF) */
    int64_t num;         /* candidate's number when numeric */
    uint64_t full;       /* candidate line length (without CRLF) */
    int64_t cand_start_us; /* capture time of the candidate's type byte */
    uint64_t frame;      /* record of the bytes being scanned (the caller's) */
    uint64_t cand_start_frame; /* record of the candidate's type byte */
    uint64_t seen;       /* bytes scanned since rd_resync_start */
    uint8_t uncounted;   /* the first search of a connection picked up
                            mid-stream: counted in resyncs at its first byte
                            (a side that never sends searched nothing) */
} rd_resync;

/* ---------------------------------------------------------------- helpers */

/* How a capture gap of len bytes (0: unknown) meets a bulk being read, on
 * either side: in_body with body_left payload bytes still due (then a CRLF of
 * 2), or in_crlf with crlf_left CRLF bytes due. Returns 1 when the gap ends
 * inside the payload or its CRLF (it can be bridged), with *lost the payload
 * bytes it covers; 0 when it runs past them or is of unknown length. */
static inline int rd_gap_in_bulk(uint64_t len, int in_body, int in_crlf, uint64_t body_left,
                                 uint8_t crlf_left, uint64_t *lost)
{
    uint64_t payload = in_body ? body_left : 0;
    uint64_t crlf = in_body ? 2 : crlf_left;
    if (len == 0 || !(in_body || in_crlf) || len > payload + crlf)
        return 0;
    *lost = len < payload ? len : payload;
    return 1;
}

/* Parse a strict decimal integer: optional '-', digits, no leading zeros (except
 * "0"), no overflow. Returns 0 on success. */
static inline int rd_parse_i64(const uint8_t *p, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n == 0 || n > 20)
        return -1;
    if (p[0] == '-') {
        neg = 1;
        i = 1;
        if (n == 1)
            return -1;
    }
    if (p[i] == '0' && n - i > 1)
        return -1;
    if (neg && p[i] == '0')
        return -1; /* "-0" */
    uint64_t v = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d > 9)
            return -1;
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return -1;
        *out = (v == (uint64_t)INT64_MAX + 1) ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return -1;
        *out = (int64_t)v;
    }
    return 0;
}

/* Fast path for a length or count line that lies wholly in the chunk:
 * "[-]<1..18 digits>\r\n" without a leading zero. Returns the bytes it spans
 * (number and CRLF) with *out set, or 0 to let the line reader and
 * rd_parse_i64 handle it (split lines, long or malformed numbers). 18 digits
 * cannot overflow an int64. */
static inline size_t rd_num_fast(const uint8_t *p, const uint8_t *end, int64_t *out)
{
    /* most lengths and counts have one or two digits */
    if (end - p >= 4) {
        unsigned d0 = (unsigned)p[0] - '0';
        if (d0 <= 9) {
            if (p[1] == '\r')
                return p[2] == '\n' ? (*out = d0, 3) : 0;
            unsigned d1 = (unsigned)p[1] - '0';
            if (d1 <= 9 && d0 != 0 && p[2] == '\r' && p[3] == '\n') {
                *out = d0 * 10 + d1;
                return 4;
            }
        } else if (memcmp(p, "-1\r\n", 4) == 0) { /* the RESP2 nulls: a GET that missed */
            *out = -1;
            return 4;
        }
    }
    const uint8_t *q = p;
    int neg = 0;
    if (q < end && *q == '-') {
        neg = 1;
        q++;
    }
    const uint8_t *ds = q;
    uint64_t v = 0;
    while (q < end && (unsigned)(*q - '0') <= 9 && q - ds < 18) {
        v = v * 10 + (unsigned)(*q - '0');
        q++;
    }
    if (q == ds || end - q < 2 || q[0] != '\r' || q[1] != '\n')
        return 0;
    if (*ds == '0' && (q - ds > 1 || neg))
        return 0;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return (size_t)(q + 2 - p);
}

/* Index of the first byte equal to c in p[0..n), or n. Keys are short and
 * hash tags sit near their start: a call to memchr costs more (its set-up,
 * alignment and page checks) than finding a '{' a few bytes in. Eight bytes
 * per step: a byte equal to c turns to zero in w ^ pattern, and the classic
 * zero-byte test ((x - 0x01..) & ~x & 0x80..) marks it; only bits above the
 * first zero byte can be false marks, so the lowest mark is exact. Loads stay
 * inside [p, p + n). */
static inline size_t rd_find_byte(const uint8_t *p, size_t n, uint8_t c)
{
    size_t i = 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    const uint64_t pattern = ones * c;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        w ^= pattern;
        uint64_t mark = (w - ones) & ~w & highs;
        if (mark != 0)
            return i + (size_t)(__builtin_ctzll(mark) >> 3);
    }
#endif
    for (; i < n; i++)
        if (p[i] == c)
            return i;
    return n;
}

/* Is the NUL-terminated name n, of length len, equal to the literal lit? */
#define RD_NAME_IS(n, len, lit) ((len) == sizeof(lit) - 1 && memcmp((n), (lit), (len)) == 0)

/* Read a CRLF-terminated line from *pp. On RD_DONE, out and out_len hold the
 * kept prefix (without CR), *full the whole length, and *pp is past the LF. On
 * RD_MORE everything was consumed. RD_ERR: bad terminator; RD_ERR_LIMIT: longer
 * than max. The common case (whole line in the chunk) copies nothing. */
static inline int rd_line_read(rd_line *l, const uint8_t **pp, const uint8_t *end,
                               uint64_t max, const uint8_t **out, size_t *out_len,
                               uint64_t *full)
{
    const uint8_t *p = *pp;
    size_t avail = (size_t)(end - p);
    /* most lines ("+OK", short errors, numbers) end within a few bytes: look
     * there before paying for a call */
    const uint8_t *nl = NULL;
    size_t near = avail < 16 ? avail : 16;
    for (size_t i = 0; i < near; i++) {
        if (p[i] == '\n') {
            nl = p + i;
            break;
        }
    }
    if (nl == NULL && avail > near)
        nl = memchr(p + near, '\n', avail - near);
    if (nl == NULL) {
        if (l->len + avail > max + 1) {
            l->len = 0;
            l->err_bound = 0;
            return RD_ERR_LIMIT;
        }
        if (l->len < RD_LBUF) {
            size_t room = RD_LBUF - (size_t)l->len;
            memcpy(l->buf + l->len, p, avail < room ? avail : room);
        }
        l->len += avail;
        l->last = end[-1];
        *pp = end;
        return RD_MORE;
    }
    size_t n = (size_t)(nl - p);
    uint64_t total = l->len + n;           /* CR included */
    uint8_t before = n ? nl[-1] : l->last;
    if (total == 0 || before != '\r') {
        *pp = nl; /* resync starts at the LF */
        l->len = 0;
        l->err_bound = 0;
        return RD_ERR;
    }
    if (total > max + 1) {
        *pp = nl + 1; /* a whole (too long) line: what follows is a boundary */
        l->len = 0;
        l->err_bound = 1;
        return RD_ERR_LIMIT;
    }
    *pp = nl + 1;
    *full = total - 1;
    if (l->len == 0) {
        *out = p;
        *out_len = n - 1;
        return RD_DONE;
    }
    if (l->len < RD_LBUF) {
        size_t room = RD_LBUF - (size_t)l->len;
        memcpy(l->buf + l->len, p, n < room ? n : room);
    }
    *out = l->buf;
    *out_len = (size_t)(total - 1 < RD_LBUF ? total - 1 : RD_LBUF);
    l->len = 0;
    return RD_DONE;
}

/* rd_num_line's general case: the line is split across chunks, long, or bad. */
int rd_num_line_slow(rd_line *l, const uint8_t **pp, const uint8_t *end, int64_t *v);

/* Read a length or count line: 1 with *v set, 0 when more bytes are needed
 * (all consumed), -1 when malformed (*pp left where a resync may start). */
static inline int rd_num_line(rd_line *l, const uint8_t **pp, const uint8_t *end, int64_t *v)
{
    if (l->len == 0) {
        size_t k = rd_num_fast(*pp, end, v);
        if (k != 0) {
            *pp += k;
            return 1;
        }
    }
    return rd_num_line_slow(l, pp, end, v);
}

/* Copy n <= 64 bytes without a library call: the kept prefixes are mostly a
 * few bytes long, and a call to memcpy costs more than copying them. Every
 * load and store stays inside [src, src + n) and [dst, dst + n) (overlapping
 * pieces instead of reading past the end: the bytes after an argument may be
 * a credential). */
static inline void rd_copy_small(uint8_t *dst, const uint8_t *src, size_t n)
{
    if (n >= 32) {
        memcpy(dst, src, 32);
        memcpy(dst + n - 32, src + n - 32, 32);
    } else if (n >= 16) {
        memcpy(dst, src, 16);
        memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    }
}

/* ASCII upper-case. */
static inline uint8_t rd_upper(uint8_t c)
{
    return (c >= 'a' && c <= 'z') ? (uint8_t)(c - 32) : c;
}

/* ASCII upper-case of the bytes of a word, all at once: a byte gets its 0x20
 * bit cleared when it is in 'a'..'z' (no carry crosses bytes: each sum is of
 * a 7-bit value and a constant below 0x80). */
static inline uint64_t rd_upper64(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t low7 = x & ~high;
    uint64_t ge_a = low7 + ones * (0x80 - 'a');     /* high bit: >= 'a' */
    uint64_t gt_z = low7 + ones * (0x80 - 'z' - 1); /* high bit: > 'z' */
    return x ^ ((ge_a & ~gt_z & ~x & high) >> 2);
}
static inline uint32_t rd_upper32(uint32_t x)
{
    const uint32_t ones = 0x01010101u, high = 0x80808080u;
    uint32_t low7 = x & ~high;
    uint32_t ge_a = low7 + ones * (0x80 - 'a');
    uint32_t gt_z = low7 + ones * (0x80 - 'z' - 1);
    return x ^ ((ge_a & ~gt_z & ~x & high) >> 2);
}

/* Copy n <= 64 bytes upper-cased (command names), a word at a time. Pieces
 * may overlap (upper-casing twice is harmless); every load stays inside
 * [src, src + n). */
static inline void rd_upper_copy(uint8_t *dst, const uint8_t *src, size_t n)
{
    if (n >= 8) {
        uint64_t w;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, src + i, 8);
            w = rd_upper64(w);
            memcpy(dst + i, &w, 8);
        }
        if (i < n) {
            memcpy(&w, src + n - 8, 8);
            w = rd_upper64(w);
            memcpy(dst + n - 8, &w, 8);
        }
    } else if (n >= 4) {
        uint32_t w;
        memcpy(&w, src, 4);
        w = rd_upper32(w);
        memcpy(dst, &w, 4);
        memcpy(&w, src + n - 4, 4);
        w = rd_upper32(w);
        memcpy(dst + n - 4, &w, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = rd_upper(src[i]);
    }
}

/* Case-insensitive compare of a byte prefix with an upper-case C string. */
static inline int rd_eq_ci(const uint8_t *p, size_t n, const char *word)
{
    size_t wl = strlen(word);
    if (n != wl)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (rd_upper(p[i]) != (uint8_t)word[i])
            return 0;
    return 1;
}

/* ---------------------------------------------------------------- functions */

/* resync.c */
void rd_resync_start(rd_resync *rs, int is_req, int at_boundary);
/* Is s/n (any case) one of Redis 7's command names (resync.c's table)? */
int rd_known_command(const uint8_t *s, size_t n);

/* What data starts with (shape.c): REPLCONF ACK (sent by a replica to its
 * master), REPLCONF GETACK (sent by a master to its replica), or neither. */
enum { RD_RC_NONE = 0, RD_RC_ACK = 1, RD_RC_GETACK = 2 };
int rd_replconf_at(const uint8_t *data, size_t len);
/* Scan for a boundary. Returns 1 when found: *pp is just past the candidate
 * line's LF (requests: the '$' after it is not consumed), rs->type is the
 * candidate's type byte ('i' for a whole inline command), rs->full its line
 * length and line->buf its prefix (an inline command's whole line).
 * Returns 0 when the chunk was used up. *skipped is adjusted by the bytes
 * thrown away (the candidate's own bytes are given back on success). */
int rd_resync_scan(rd_resync *rs, rd_line *line, const uint8_t **pp,
                   const uint8_t *end, int64_t ts, int64_t *skipped,
                   uint64_t max_bulk);

/* ---------------------------------------------------------------- requests */

/* What the request decoder hands its owner, in stream order: begin, then
 * done or dropped, for each message; error after malformed bytes; resynced
 * when a search found a boundary. */
typedef struct rq_out {
    /* A message starts, its first byte captured at ts: where to decode it
     * (reset by the owner; the decoder fills it in and the owner must not
     * move it before done or dropped). */
    resp_request *(*begin)(void *owner, int64_t ts);
    /* It is a whole request: ts_us, bytes (from rq_dec.msg_off) and all the
     * rest set; name_len is strlen(req->name). */
    void (*done)(void *owner, uint8_t name_len);
    /* What began is no request ("*0", an empty inline line) or was dropped
     * (garbage, a loss): nothing to queue. */
    void (*dropped)(void *owner);
    /* Malformed bytes (limit: a cap was passed, e.g. a bulk too long): the
     * decoder lost its place and is searching for the next boundary. */
    void (*error)(void *owner, int limit);
    /* A search found a boundary; the message there is about to begin. */
    void (*resynced)(void *owner);
} rq_out;

/* Which request arguments are credentials. */
enum { CRED_NONE = 0, CRED_ALL, CRED_HELLO, CRED_MIGRATE, CRED_CONFIG, CRED_ACL };

/* Request decoder states. */
enum {
    RQ_START = 0,   /* at a message boundary */
    RQ_MB_LINE,     /* reading "*<n>" */
    RQ_ARG_TYPE,    /* expecting '$' */
    RQ_ARG_LINE,    /* reading "<len>" after '$' */
    RQ_ARG_BODY,    /* argument payload */
    RQ_ARG_CRLF,    /* CRLF after the payload */
    RQ_INLINE,      /* inline command */
    RQ_RESYNC       /* looking for a boundary */
};

/* Inline tokenizer states (sdssplitargs-like). */
enum { IN_SPACE = 0, IN_WORD, IN_DQ, IN_DQ_ESC, IN_DQ_HEX1, IN_DQ_HEX2, IN_SQ,
       IN_SQ_ESC, IN_AFTER_Q, IN_CR };

/* Most args a request may have for rq_tmpl: the name and the kept ones. */
#define RQ_TMPL_ARGS (1 + RESP_ARG_KEEP)

/* The byte layout of a multibulk request, taken from one that repeated
 * the name, argc and size of the one before it (a client in a loop sends
 * the same command with arguments of the same lengths): every byte of it but
 * the payloads of arguments 1.., i.e. the header "*<n>\r\n$<l>\r\n<NAME>
 * \r\n$<l1>\r\n", then per further argument a joint "\r\n$<lk>\r\n", then
 * the final CRLF. A request that has the same bytes there decodes to the
 * same name, argc and lengths, so decode_req.c reads it without parsing
 * (rq_tmpl_match). Only for names the key mask cache (km_*) holds with
 * this argc, whose masks it reuses: km_remember clears it. */
typedef struct rq_tmpl {
    uint8_t head[32];        /* the header, head_len (16..32) bytes */
    uint8_t name[16];        /* the name upper-cased, zero past it */
    uint8_t joint[RQ_TMPL_ARGS][8]; /* joint[k]: before argument k (k >= 2) */
    uint32_t len[RQ_TMPL_ARGS];     /* len[k]: payload bytes of argument k */
    uint8_t joint_len[RQ_TMPL_ARGS]; /* 6..8 bytes (lengths below 1000) */
    uint8_t kept[RQ_TMPL_ARGS];      /* kept[k]: bytes of argument k kept */
    uint8_t keys;            /* bit k: argument k is a key */
    uint8_t head_len;        /* 0: no layout held */
    uint8_t argc;            /* 2..RQ_TMPL_ARGS */
    uint8_t name_len;        /* 1..15 */
    uint64_t total;          /* bytes of the whole request */
    uint64_t last_total;     /* bytes of the last request that hit the
                                key mask cache and was read whole in a
                                chunk: a layout is taken only from one of
                                the same size as the one before (a sign
                                that layouts repeat, cheaper than taking
                                one that will not) */
} rq_tmpl;

/* The fields used by every request come first (three cache lines: a
 * pipelined capture interleaves many connections, so each line of decoder
 * state touched per request is likely a cache miss); the line buffer, the
 * resync scanner and prevbuf, used only by split lines, resyncs and long
 * requests, come last. */
typedef struct rq_dec {
    /* given at rq_init: what the decoder hands out, and to whom */
    const rq_out *out;
    void *owner;
    const resp_config *cfg;  /* max_bulk_request, max_line, key_fn */
    resp_conn_stats *st;     /* the counters it adds to */
    resp_request *req;       /* the request being decoded (out->begin's) */
    uint64_t frame;          /* record of the bytes being fed (rq_feed) */
    /* the key mask the hook fixed at its first question for the last
     * multibulk request of a name and argc (see arg_name_whole) */
    uint64_t km_name[2];     /* its name's bytes, zero past the name */
    uint32_t km_argc;
    uint32_t km_mask;
    uint32_t km_bare;        /* and its bare_mask */
    uint8_t km_len;          /* its name's length, 0: nothing cached */
    uint8_t state;
    uint8_t in_msg;          /* a message has started */
    /* credentials */
    uint8_t cred;            /* CRED_* of this command */
    uint8_t cred_left;       /* arguments still secret after a keyword */
    uint8_t cred_stop;       /* MIGRATE: past KEYS, no more keywords */
    uint8_t cred_skipped;    /* HELLO: credentials so far, which take no
                                args[] slot (the SETNAME after them is kept) */
    uint8_t name_len;        /* strlen(req->name), handed to out->done;
                                next to the fields above, which are reset
                                with it (rq_begin_argc) */
    /* the argument being read */
    uint8_t a_name;          /* argument 0 (the command name) */
    uint8_t a_key;           /* the key hook said it is a key */
    uint8_t a_secret;        /* a credential: nothing is copied */
    uint8_t a_bare;          /* its bytes are not kept (kc.bare_mask) */
    uint8_t a_gap;           /* bytes of it were lost in a gap: its kept prefix
                                (and slot, for a key) are unknown */
    /* multibulk */
    uint8_t crlf_left;       /* bytes of the trailing CRLF still to come */
    /* inline */
    uint8_t in_state;        /* IN_* */
    uint8_t in_hex;          /* first hex digit of \xHH */
    uint8_t in_arg_open;     /* an argument has started */
    uint8_t in_bad;          /* unbalanced quotes: the server rejects the
                                line at its end (answering an error) */
    uint32_t in_len;         /* bytes of the inline line so far */
    uint32_t argc_expected;  /* from "*<n>" */
    uint32_t argi;           /* index of the argument being read */
    uint32_t a_full;         /* declared length (inline: counted) */
    uint64_t off;            /* stream offset of the chunk being decoded */
    uint64_t msg_off;        /* stream offset of the message's first byte */
    uint64_t arg_left;       /* payload bytes still to come */
    uint8_t *a_dst;          /* where its prefix goes, NULL if nowhere */
    uint64_t a_seen;         /* bytes of it seen */
    resp_slot_hasher hasher; /* for keys */
    /* the previous argument, for the key hook */
    uint32_t prev_len;
    uint32_t prev_full;
    const uint8_t *prev;     /* its prefix, NULL if secret */
    resp_keyctx kc;          /* handed to the key hook; its scratch words
                                live here between calls (no copies) */
    rd_line line;            /* its len is read per length line */
    rd_resync rs;
    uint8_t inline_seen;     /* an inline command was decoded: the client
                                speaks inline (resync may look for one) */
    uint8_t prevbuf[RESP_ARG_PREFIX]; /* prefix of arguments past RESP_ARG_KEEP */
    rq_tmpl tm;              /* the last repeated request's layout (read
                                when a request begins inside a chunk) */
} rq_dec;

/* Is argument 1 of the request just handed over (out->done) a key, by the
 * key hook's final mask or, with no hook, the default? Then, as the first
 * key, its kept bytes are key0's as they are args[0]'s (unless it was a
 * credential: no key then, and nothing kept). 0: not known so. */
static inline int rq_arg1_is_key(const rq_dec *d)
{
    if (d->kc.key_mask_final)
        return (d->kc.key_mask >> 1) & 1u;
    return d->cfg->key_fn == NULL;
}


/* A decoder for a stream that starts at its first byte (mid_stream 0) or
 * was picked up somewhere inside (1: it searches for a boundary first). */
void rq_init(rq_dec *d, const rq_out *out, void *owner, const resp_config *cfg,
             resp_conn_stats *st, int mid_stream);
/* n bytes of the stream, captured at ts in record frame. */
void rq_feed(rq_dec *d, const uint8_t *p, size_t n, int64_t ts, uint64_t frame);
/* A gap: drop the partial request (at_boundary: the next byte is known to
 * start a message). */
void rq_lost(rq_dec *d, int at_boundary);
/* A gap of len bytes (0: unknown): 1 when it fell inside a payload and was
 * bridged (nothing else was lost), 0 when it is a loss for the owner. */
int rq_skip_gap(rq_dec *d, uint64_t len, int64_t ts);

/* ---------------------------------------------------------------- replies */

/* One open aggregate. */
typedef struct rd_frame {
    uint64_t left;           /* elements still to come */
    uint8_t type;            /* '*', '%', '~', '>', '|' */
} rd_frame;

enum {
    RP_TYPE = 0,    /* expecting a type byte */
    RP_LINE,        /* reading the line after it */
    RP_BULK,        /* bulk payload */
    RP_BULK_CRLF,   /* CRLF after the payload */
    RP_RESYNC,      /* looking for a boundary */
    RP_SINK         /* replication stream: ignored */
};

/* What the reply decoder hands its owner, in stream order: begin then
 * done for each top-level message (an attribute before a reply is part of
 * it), or whole for both, keep for its raw bytes when asked to, error after
 * malformed bytes. */
typedef struct rp_out {
    /* A message starts, its first byte captured at ts: where to decode it
     * (reset by the owner). The owner may also set rp_dec.keeping (hand out
     * its raw bytes), rp_dec.trim_* or call rp_sink. The owner may move the
     * reply later by setting rp_dec.rep (its bytes copied along). */
    resp_reply *(*begin)(void *owner, int64_t ts);
    /* The message is whole: the reply's fields are set, its end_pos in this
     * decoder's stream (rp_dec.off counts bridged gaps, not lost ones), and
     * the top-level facts below (elem0.., status..) are valid. */
    void (*done)(void *owner);
    /* Raw bytes of the message, in order, while rp_dec.keeping is set. */
    void (*keep)(void *owner, const uint8_t *p, size_t n);
    /* Malformed bytes (limit: a cap was passed): the decoder lost its place,
     * dropped the message (keeping cleared) and searches for a boundary. */
    void (*error)(void *owner, int limit);
    /* begin and done at once, for a simple reply ("+OK", ":n", "$-1", a bulk)
     * read whole in a chunk: it was decoded into rp_dec.rep, which has type,
     * integer, elements and the fields done names set; the owner sets the
     * rest (start_us is ts_us) and returns 1, or returns 0 having changed
     * nothing when it wants begin (to keep the bytes, say): then begin,
     * keep and done follow for the same message. */
    int (*whole)(void *owner);
} rp_out;

typedef struct rp_dec {
    /* given at rp_init: what the decoder hands out, and to whom */
    const rp_out *out;
    void *owner;
    const resp_config *cfg;  /* max_bulk_reply, max_depth, max_line */
    resp_conn_stats *st;     /* the counters it adds to */
    resp_reply *rep;         /* the reply being decoded (out->begin's, or
                                where the owner moved it); set by the owner
                                after rp_init too: out->whole's reply is
                                decoded there before it is asked */
    uint64_t frame;          /* record of the bytes being fed (rp_feed) */
    uint8_t keeping;         /* set by the owner: hand out the message's raw
                                bytes (out->keep); cleared by a drop */
    uint8_t want_elem1;      /* set by the owner: keep a top-level array's
                                2nd element too (a watched connection) */
    uint8_t ltype;           /* type byte of the current line/bulk */
    uint8_t crlf_left;
    uint8_t state;           /* next to in_msg: a message's end sets both */
    /* what each message resets (rp_begin), side by side so that the
     * compiler can clear them with one store */
    uint8_t in_msg;          /* a top-level message has started */
    uint8_t top_set;         /* the top-level (non-attribute) value started */
    uint8_t elem0_set;       /* the facts below were found */
    uint8_t elem0_len;
    uint8_t elem1_set;
    uint8_t elem2_set;
    uint8_t status_len;
    uint8_t status_monitor;  /* simple string shaped like a MONITOR line */
    uint64_t off;
    uint64_t msg_off;
    uint64_t bulk_left;
    uint32_t depth;
    uint32_t stack_cap;
    rd_frame *stack;         /* = inline_stack or heap when deeper */
    uint64_t top_idx;        /* elements completed in the top aggregate */
    /* capture of small bulk payloads */
    uint8_t *cap_dst;
    uint32_t cap_max;
    uint32_t cap_len;
    uint8_t cap_what;        /* 1 errtext, 2 elem0 */
    /* facts about the top-level value, read by the owner after done */
    uint8_t elem0[RD_ELEM0_MAX];
    uint8_t elem1[8];        /* a top-level aggregate's 2nd element, kept only
                                when want_elem1 (REPLCONF ACK or GETACK) */
    uint8_t elem1_len;
    int64_t elem2;           /* integer third element (subscribe count) */
    uint8_t status[RD_STATUS_MAX];
    uint32_t errtext_len;
    /* used by lines split across chunks, resyncs and nesting: last */
    rd_line line;
    rd_resync rs;
    rd_frame inline_stack[RD_STACK_INLINE];
    uint64_t trim_at;        /* set by the owner: msg_off + 1 of a message
                                whose top-level array declaring trim_decl
                                elements carries only trim_to (EXEC of a
                                transaction that ran CLIENT REPLY OFF/SKIP:
                                see modes.c); no other message starts there,
                                so it needs no clearing */
    uint32_t trim_decl;
    uint32_t trim_to;
} rp_dec;


/* As rq_init, for the reply side. */
void rp_init(rp_dec *d, const rp_out *out, void *owner, const resp_config *cfg,
             resp_conn_stats *st, int mid_stream);
void rp_free(rp_dec *d);   /* the nesting stack, when it grew */
/* n bytes of the stream, captured at ts in record frame. */
void rp_feed(rp_dec *d, const uint8_t *p, size_t n, int64_t ts, uint64_t frame);
void rp_lost(rp_dec *d, int at_boundary);   /* as rq_lost */
int rp_skip_gap(rp_dec *d, uint64_t len, int64_t ts); /* as rq_skip_gap */
/* What follows is a replication stream, not replies: decode nothing more. */
void rp_sink(rp_dec *d);

#endif /* SLOTSCOPE_RESP_DECODE_H */
