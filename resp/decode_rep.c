/*
 * decode_rep.c - the reply side (server -> client) of a RESP connection.
 *
 * Every RESP2 and RESP3 type: simple string '+', error '-', integer ':', bulk
 * '$' (and the RESP2 null "$-1"), array '*' (and "*-1"), null '_', double ',',
 * boolean '#', blob error '!', verbatim '=', big number '(', map '%', set '~',
 * push '>' and attribute '|'. An attribute is metadata about the value that
 * follows it: it is decoded (to stay in step) but never counted as the reply nor
 * as an element of an aggregate.
 *
 * Nesting is tracked with an explicit stack of open aggregates (elements still
 * to come), so the decoder can stop at any byte and resume; its depth is capped
 * by resp_config.max_depth. Bulk payloads are skipped by counting, except the
 * few bytes pairing needs: the text of a top-level blob error and the first
 * element of a top-level aggregate (to tell pub/sub messages from replies).
 * A declared 4 GB bulk therefore costs a counter.
 *
 * What it hands out (decode.h, rp_out): at a message's first byte it asks
 * its owner where to write (out->begin gives a resp_reply), fills that in
 * and keeps the top-level facts the owner reads back (rp_dec.elem0..,
 * status..), says out->done when the message is whole, out->keep with its
 * raw bytes while the owner asked for them (rp_dec.keeping), out->error
 * after malformed bytes; out->whole instead of begin and done for a simple
 * reply read whole in a chunk (rp_whole). It knows nothing else of its
 * owner (the pairer).
 *
 * Spec: https://redis.io/docs/latest/develop/reference/protocol-spec/
 */
#include <stdlib.h>

#include "resp/decode.h"

/* A blob error's text is captured into the line buffer (rp_num). */
_Static_assert(RD_LBUF >= RESP_ERRTEXT_MAX - 1, "the line buffer holds an error text");

/* What a captured bulk payload is for. */
enum { CAP_NONE = 0, CAP_ERRTEXT = 1, CAP_ELEM0 = 2, CAP_ELEM1 = 3 };

void rp_init(rp_dec *d, const rp_out *out, void *owner, const resp_config *cfg,
             resp_conn_stats *st, int mid_stream)
{
    memset(d, 0, sizeof(*d));
    d->out = out;
    d->owner = owner;
    d->cfg = cfg;
    d->st = st;
    d->stack = d->inline_stack;
    d->stack_cap = RD_STACK_INLINE;
    if (!mid_stream) {
        d->state = RP_TYPE;
    } else {
        d->state = RP_RESYNC; /* picked up mid-stream: search the first boundary */
        rd_resync_start(&d->rs, 0, 1);
        d->rs.uncounted = 1;
    }
}

void rp_free(rp_dec *d)
{
    if (d->stack != d->inline_stack)
        free(d->stack);
    d->stack = d->inline_stack;
    d->stack_cap = RD_STACK_INLINE;
}

/* Stream offset of p in the chunk starting at base. */
static inline uint64_t rp_pos(const rp_dec *d, const uint8_t *base, const uint8_t *p)
{
    return d->off + (uint64_t)(p - base);
}

/* Throw away the message in progress and look for the next boundary. */
static void rp_drop(rp_dec *d, uint64_t pos, int at_boundary)
{
    if (d->in_msg)
        d->st->skipped_bytes += pos - d->msg_off;
    if (d->state != RP_RESYNC)
        d->st->resyncs++; /* it lost its place: a search begins (a loss while
                            searching is part of the same search) */
    d->in_msg = 0;
    d->depth = 0;
    d->line.len = 0;
    d->cap_dst = NULL;
    d->keeping = 0;
    d->state = RP_RESYNC;
    rd_resync_start(&d->rs, 0, at_boundary);
}

/* Malformed input: count it, drop the message, resynchronise, and tell the
 * owner (out->error): nobody can know now which reply answers which request.
 * at_boundary: the error was found at the end of a whole CRLF line. */
static void rp_error(rp_dec *d, uint64_t pos, int limit, int at_boundary)
{
    d->st->protocol_errors++;
    rp_drop(d, pos, at_boundary);
    d->out->error(d->owner, limit);
}

void rp_lost(rp_dec *d, int at_boundary)
{
    if (d->state == RP_SINK)
        return;
    rp_drop(d, d->off, at_boundary);
}

/* A gap of len bytes (0: unknown) on the reply side. Bridged (returns 1) when
 * it falls wholly inside a bulk payload of known length and, at most, its
 * trailing CRLF, and none of the payload bytes lost were ones the owner reads
 * (the text of a blob error, the first element of a top-level aggregate that
 * tells pub/sub messages from replies). The reply is flagged and its raw
 * bytes are not kept (analysis would parse a reply with a hole). The CRLF's
 * bytes are known: a gap over them is replayed as "\r\n". Returns 0 when
 * the gap is a loss. */
int rp_skip_gap(rp_dec *d, uint64_t len, int64_t ts)
{
    uint64_t lost;
    if (!d->in_msg || !rd_gap_in_bulk(len, d->state == RP_BULK, d->state == RP_BULK_CRLF,
                                      d->bulk_left, d->crlf_left, &lost))
        return 0;
    if (lost > 0) {
        if (d->cap_dst != NULL && d->cap_len < d->cap_max)
            return 0;
        d->rep->gap = 1;
        d->keeping = 0;
        d->bulk_left -= lost;
        d->off += lost;
    }
    d->st->gaps_bridged++;
    if (d->state == RP_BULK && d->bulk_left == 0) {
        d->crlf_left = 2;
        d->state = RP_BULK_CRLF;
    }
    if (len > lost)
        rp_feed(d, (const uint8_t *)"\r\n" + (2 - d->crlf_left), (size_t)(len - lost), ts,
                d->frame);
    return 1;
}

void rp_sink(rp_dec *d)
{
    d->state = RP_SINK;
    d->in_msg = 0;
    d->depth = 0;
    d->keeping = 0;
}

/* What the decoder resets for a top-level message starting at pos. */
static inline void rp_reset_facts(rp_dec *d, uint64_t pos)
{
    d->top_set = 0;
    d->elem0_set = 0;
    d->elem0_len = 0;
    d->elem1_set = 0;
    d->elem2_set = 0;
    d->status_len = 0;
    d->status_monitor = 0;
    d->msg_off = pos;
    d->top_idx = 0;
}

/* A top-level message starts at pos. */
static void rp_begin(rp_dec *d, uint64_t pos, int64_t ts)
{
    d->in_msg = 1;
    rp_reset_facts(d, pos);
    d->rep = d->out->begin(d->owner, ts);
}

/* Does a simple string look like a MONITOR line: "<secs>.<usecs> [..."? */
static int is_monitor_line(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == 0 || i >= n || s[i] != '.')
        return 0;
    size_t j = ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    return i > j && i + 1 < n && s[i] == ' ' && s[i + 1] == '[';
}

/* Is the value about to be read the first element of the top-level aggregate
 * (and not inside an attribute)? */
static inline int at_elem(const rp_dec *d, uint64_t idx)
{
    return d->depth == 1 && d->top_idx == idx && d->stack[0].type != '|';
}

/* Set the error class and redirect from the captured error text. */
static void rp_error_text(rp_dec *d, const uint8_t *s, size_t n)
{
    resp_reply *rep = d->rep;
    if (n > RESP_ERRTEXT_MAX - 1)
        n = RESP_ERRTEXT_MAX - 1;
    memcpy(rep->errtext, s, n);
    rep->errtext[n] = '\0';
    rep->err = resp_classify_error(rep->errtext, n, &rep->redir);
}

/* The reply fields set when the top-level message ends at pos. */
static inline void rp_set_end(rp_dec *d, resp_reply *rep, uint64_t pos, int64_t ts)
{
    rep->ts_us = ts;
    rep->end_frame = d->frame;
    rep->bytes = pos - d->msg_off;
    /* status_len first: it is in hand, and mostly 0 or 2 ("+OK") */
    rep->nokey = d->status_len == 5 && rep->type == RESP_T_SIMPLE &&
                 memcmp(d->status, "NOKEY", 5) == 0;
    rep->end_pos = pos;
}

/* The top-level message is complete at pos. */
static void rp_message_done(rp_dec *d, uint64_t pos, int64_t ts)
{
    rp_set_end(d, d->rep, pos, ts);
    d->in_msg = 0;
    d->state = RP_TYPE;
    d->out->done(d->owner);
}

/* A value is complete. Close every aggregate it completes; when the stack is
 * empty the message is done. Returns 1 if the message ended. */
static int rp_value_done(rp_dec *d, int was_attr)
{
    for (;;) {
        if (d->depth == 0) {
            d->state = RP_TYPE;
            return !was_attr; /* a top-level attribute is followed by the reply */
        }
        rd_frame *f = &d->stack[d->depth - 1];
        if (!was_attr) {
            f->left--;
            if (d->depth == 1)
                d->top_idx++;
        }
        if (f->left > 0) {
            d->state = RP_TYPE;
            return 0;
        }
        was_attr = (f->type == '|');
        d->depth--;
    }
}

/* Open an aggregate of n elements (n > 0). Returns -1 past the depth limit. */
static int rp_push(rp_dec *d, uint8_t type, uint64_t n)
{
    if (d->depth >= d->cfg->max_depth)
        return -1;
    if (d->depth == d->stack_cap) {
        uint32_t ncap = d->stack_cap * 2;
        if (ncap > d->cfg->max_depth)
            ncap = d->cfg->max_depth;
        rd_frame *ns = malloc(sizeof(*ns) * ncap);
        if (ns == NULL)
            return -1;
        memcpy(ns, d->stack, sizeof(*ns) * d->depth);
        if (d->stack != d->inline_stack)
            free(d->stack);
        d->stack = ns;
        d->stack_cap = ncap;
    }
    if (d->depth == 0)
        d->top_idx = 0;
    d->stack[d->depth].type = type;
    d->stack[d->depth].left = n;
    d->depth++;
    return 0;
}

/* Results of rp_text / rp_num / rp_line. */
enum { LN_VALUE = 0, LN_MSG = 1, LN_CONT = 2, LN_ERR = -1, LN_LIMIT = -2 };

/* Is t a type whose line is a length or a count? */
static inline int is_num_type(uint8_t t)
{
    switch (t) {
    case ':': case '$': case '!': case '=': case '*': case '%': case '~': case '>': case '|':
        return 1;
    default:
        return 0;
    }
}

/* The line of a value of a text type ('+' '-' '_' '#' ',' '(') is complete:
 * s/n is its kept prefix, full its length. Returns LN_MSG when the whole
 * message ended, LN_VALUE when a value ended but not the message, LN_ERR on
 * bad input. */
static int rp_text(rp_dec *d, uint8_t t, const uint8_t *s, size_t n, uint64_t full)
{
    resp_reply *rep = d->rep;
    int top = (d->depth == 0);
    switch (t) {
    case '+':
        if (top) {
            d->status_len = (uint8_t)(n < RD_STATUS_MAX ? n : RD_STATUS_MAX);
            rd_copy_small(d->status, s, d->status_len);
            d->status_monitor = (uint8_t)is_monitor_line(s, n);
        } else if (at_elem(d, 0)) {
            d->elem0_len = (uint8_t)(n < RD_ELEM0_MAX ? n : RD_ELEM0_MAX);
            memcpy(d->elem0, s, d->elem0_len);
            d->elem0_set = 1;
        }
        break;
    case '-':
        if (top)
            rp_error_text(d, s, n);
        break;
    case '_':
        if (full != 0)
            return LN_ERR;
        if (top)
            rep->elements = -1;
        break;
    case '#':
        if (full != 1 || (s[0] != 't' && s[0] != 'f'))
            return LN_ERR;
        if (top)
            rep->integer = (s[0] == 't');
        break;
    case ',':
    case '(':
        if (full == 0)
            return LN_ERR;
        break;
    default:
        return LN_ERR;
    }
    return rp_value_done(d, 0) ? LN_MSG : LN_VALUE;
}

/* Where the payload of a bulk of type t (top: the message's own value)
 * is captured, if anywhere: a top-level blob error's text, or the first
 * (second, when wanted) element of a top-level aggregate. */
static inline void rp_capture_to(rp_dec *d, uint8_t t, int top)
{
    d->cap_dst = NULL;
    d->cap_len = 0;
    d->cap_what = CAP_NONE;
    if (top && t == '!') {
        /* into the line buffer (no line is read while a payload is):
         * the owner may move the reply before it ends */
        d->cap_dst = d->line.buf;
        d->cap_max = RESP_ERRTEXT_MAX - 1;
        d->cap_what = CAP_ERRTEXT;
    } else if (t == '$' && at_elem(d, 0)) {
        d->cap_dst = d->elem0;
        d->cap_max = RD_ELEM0_MAX;
        d->cap_what = CAP_ELEM0;
    } else if (d->want_elem1 && t == '$' && at_elem(d, 1)) {
        d->cap_dst = d->elem1;
        d->cap_max = sizeof d->elem1;
        d->cap_what = CAP_ELEM1;
    }
}

/* The number v of an integer, bulk or aggregate header of type t was read.
 * Sets up what follows (payload, elements) or completes the value. Returns
 * LN_MSG, LN_VALUE, LN_CONT when more of this value follows, LN_ERR or
 * LN_LIMIT. */
static int rp_num(rp_dec *d, uint8_t t, int64_t v)
{
    resp_reply *rep = d->rep;
    int top = (d->depth == 0);
    switch (t) {
    case ':':
        if (top)
            rep->integer = v;
        else if (at_elem(d, 2)) {
            d->elem2 = v;
            d->elem2_set = 1;
        }
        break;
    case '$':
    case '!':
    case '=':
        if (v == -1 && t == '$') { /* RESP2 null bulk */
            if (top) {
                rep->type = RESP_T_NIL;
                rep->elements = -1;
            }
            break;
        }
        if (v < 0)
            return LN_ERR;
        if ((uint64_t)v > d->cfg->max_bulk_reply)
            return LN_LIMIT;
        d->bulk_left = (uint64_t)v;
        d->ltype = t;
        rp_capture_to(d, t, top);
        d->state = RP_BULK;
        return LN_CONT;
    case '*':
    case '%':
    case '~':
    case '>':
    case '|': {
        if (v == -1 && t == '*') { /* RESP2 null array */
            if (top) {
                rep->type = RESP_T_NIL;
                rep->elements = -1;
            }
            break;
        }
        if (v < 0)
            return LN_ERR;
        if (v > RD_MAX_ELEMENTS)
            return LN_LIMIT;
        if (top && t != '|')
            rep->elements = v;
        uint64_t elems = (t == '%' || t == '|') ? 2 * (uint64_t)v : (uint64_t)v;
        if (top && t == '*' && d->trim_at == d->msg_off + 1 && (uint64_t)v == d->trim_decl)
            elems = d->trim_to; /* EXEC after CLIENT REPLY OFF/SKIP (modes.c) */
        if (elems == 0)
            return rp_value_done(d, t == '|') ? LN_MSG : LN_VALUE;
        if (rp_push(d, t, elems) != 0)
            return LN_LIMIT;
        d->state = RP_TYPE;
        return LN_CONT;
    }
    default:
        return LN_ERR;
    }
    return rp_value_done(d, 0) ? LN_MSG : LN_VALUE;
}

/* A complete line s/n (full bytes long) of type t: parse and handle it. */
static int rp_line(rp_dec *d, uint8_t t, const uint8_t *s, size_t n, uint64_t full)
{
    int64_t v;
    if (!is_num_type(t))
        return rp_text(d, t, s, n, full);
    if (full > RD_NUM_MAX || rd_parse_i64(s, n, &v) != 0)
        return LN_ERR;
    return rp_num(d, t, v);
}

/* A bulk payload ended: finish what was captured from it. */
static void rp_bulk_done(rp_dec *d)
{
    if (d->cap_what == CAP_ERRTEXT) {
        rp_error_text(d, d->line.buf, d->cap_len);
    } else if (d->cap_what == CAP_ELEM0) {
        d->elem0_len = (uint8_t)d->cap_len;
        d->elem0_set = 1;
    } else if (d->cap_what == CAP_ELEM1) {
        d->elem1_len = (uint8_t)d->cap_len;
        d->elem1_set = 1;
    }
    d->cap_dst = NULL;
    d->cap_what = CAP_NONE;
}

/* Copy up to n payload bytes into the capture buffer, if one is set. */
static inline void rp_capture(rp_dec *d, const uint8_t *p, size_t n)
{
    if (d->cap_dst != NULL && d->cap_len < d->cap_max) {
        size_t room = d->cap_max - d->cap_len;
        size_t k = n < room ? n : room;
        memcpy(d->cap_dst + d->cap_len, p, k);
        d->cap_len += (uint32_t)k;
    }
}

/* Note a top-level type byte. */
static inline void rp_top_type(rp_dec *d, uint8_t t)
{
    if (d->depth == 0 && t != '|' && !d->top_set) {
        d->top_set = 1;
        d->rep->type = (resp_type)t;
    }
}

/* The most common replies, whole in the chunk at p (the type byte, the
 * message just begun with rp_begin): a short status ("+OK", "+PONG",
 * "+QUEUED"), an integer, a bulk string or a null bulk. Decoded as the
 * general states would (same reply fields, same decoder state after), in one
 * step. Returns the end of the message, or NULL to leave it to the general
 * path (anything else, split, malformed), having changed nothing. */
static const uint8_t *rp_fast_top(rp_dec *d, const uint8_t *p, const uint8_t *end)
{
    uint8_t t = *p;
    const uint8_t *s = p + 1;
    int64_t v;
    size_t k;
    if (t == '+') {
        if (end - s >= 4 && memcmp(s, "OK\r\n", 4) == 0) {
            /* "+OK": most replies of all (SET, and most writes); one
             * compare instead of a search for the LF and a copy */
            d->top_set = 1; /* rp_top_type: at the top, just begun */
            d->rep->type = RESP_T_SIMPLE;
            d->ltype = t;
            d->line.len = 0;
            d->status_len = 2;
            memcpy(d->status, "OK", 2);
            d->status_monitor = 0;
            d->state = RP_TYPE;
            return s + 4;
        }
        /* the first LF, within a few bytes, with its CR before it */
        size_t room = (size_t)(end - s) < 32 ? (size_t)(end - s) : 32;
        size_t i = rd_find_byte(s, room, '\n');
        if (i == room || i == 0 || s[i - 1] != '\r')
            return NULL;
        const uint8_t *nl = s + i;
        size_t n = (size_t)(nl - 1 - s);
        rp_top_type(d, t);
        d->ltype = t;
        d->line.len = 0;
        d->status_len = (uint8_t)(n < RD_STATUS_MAX ? n : RD_STATUS_MAX);
        rd_copy_small(d->status, s, d->status_len);
        d->status_monitor = (uint8_t)(n > 0 && (unsigned)(s[0] - '0') <= 9 &&
                                      is_monitor_line(s, n)); /* "OK" is not */
        d->state = RP_TYPE;
        return nl + 1;
    }
    if (t != ':' && t != '$')
        return NULL;
    k = rd_num_fast(s, end, &v);
    if (k == 0)
        return NULL;
    s += k;
    if (t == ':') {
        rp_top_type(d, t);
        d->rep->integer = v;
    } else if (v == -1) { /* RESP2 null bulk */
        rp_top_type(d, t);
        d->rep->type = RESP_T_NIL;
        d->rep->elements = -1;
    } else {
        if (v < 0 || (uint64_t)v > d->cfg->max_bulk_reply ||
            (uint64_t)(end - s) < (uint64_t)v + 2 || s[v] != '\r' || s[v + 1] != '\n')
            return NULL;
        rp_top_type(d, t);
        s += v + 2;
        d->bulk_left = 0; /* a top-level bulk is never captured */
        d->cap_dst = NULL;
        d->cap_len = 0;
        d->cap_what = CAP_NONE;
    }
    d->ltype = t;
    d->line.len = 0;
    d->state = RP_TYPE;
    return s;
}

/* A reply of rp_fast_top's kinds, whole in the chunk at p (stream position
 * pos), handed to the owner in one event, out->whole, instead of begin and
 * done: a call less per reply, and the owner resets no field that is set
 * here. Returns the end of the message, or NULL when it is no such reply or
 * the owner declined (it wants begin, e.g. to keep the reply's bytes); then
 * the general path reads it again from begin, which resets what was
 * written here. */
static const uint8_t *rp_whole(rp_dec *d, const uint8_t *p, const uint8_t *end, uint64_t pos,
                               int64_t ts)
{
    resp_reply *rep = d->rep;
    rp_reset_facts(d, pos);
    rep->integer = 0;   /* what begin would have reset among the fields */
    rep->elements = 0;  /* rp_fast_top may set */
    const uint8_t *q = rp_fast_top(d, p, end);
    if (q == NULL)
        return NULL;
    rp_set_end(d, rep, pos + (uint64_t)(q - p), ts);
    return d->out->whole(d->owner) ? q : NULL;
}

/* A bulk string inside an aggregate ("$<len>\r\n<bytes>\r\n", or the null
 * "$-1"), whole in the chunk at p (its '$'): the elements of arrays of
 * strings. Decoded as RP_LINE, rp_num and RP_BULK would (the same captures
 * of a top-level array's first elements, the same decoder state after), in
 * one step. Returns the end of the element with *msg_end set when it ended
 * the message, or NULL to leave it to the general path (split, malformed,
 * too long), having changed nothing. */
static const uint8_t *rp_fast_elem(rp_dec *d, const uint8_t *p, const uint8_t *end,
                                   int *msg_end)
{
    int64_t v;
    const uint8_t *s = p + 1;
    size_t k = rd_num_fast(s, end, &v);
    if (k == 0)
        return NULL;
    s += k;
    if (v != -1) {
        if (v < 0 || (uint64_t)v > d->cfg->max_bulk_reply ||
            (uint64_t)(end - s) < (uint64_t)v + 2 || s[v] != '\r' || s[v + 1] != '\n')
            return NULL;
        size_t n = (size_t)v;
        d->bulk_left = 0;
        rp_capture_to(d, '$', 0);
        rp_capture(d, s, n);
        rp_bulk_done(d);
        s += n + 2;
    }
    d->ltype = '$';
    d->line.len = 0;
    *msg_end = rp_value_done(d, 0);
    return s;
}

void rp_feed(rp_dec *d, const uint8_t *base, size_t len, int64_t ts, uint64_t frame)
{
    const resp_config *cfg = d->cfg;
    const uint8_t *p = base;
    const uint8_t *end = base + len;
    const uint8_t *seg = p; /* start of bytes not yet handed to the keep buffer */
    const uint8_t *s;
    size_t sl;
    uint64_t full;
    int r;

    d->frame = frame;
    while (p < end) {
        switch (d->state) {
        case RP_TYPE: {
            uint8_t t = *p;
            if (d->depth == 0 && !d->in_msg) {
            top_byte:
                /* A master sends a bare "\n" now and then while a replica
                 * waits for the answer to PSYNC/SYNC (a keepalive during the
                 * RDB save); servers send nothing else between replies. */
                if (t == '\n') {
                    p++;
                    continue;
                }
                seg = p;
                const uint8_t *q = rp_whole(d, p, end, rp_pos(d, base, p), ts);
                if (q != NULL) {
                    p = seg = q;
                    /* pipelined replies: the next type byte follows, read
                     * it without another trip through the state switch or
                     * the test above (a message just ended at the top) */
                    if (p < end && d->state == RP_TYPE) {
                        t = *p;
                        goto top_byte;
                    }
                    continue;
                }
                /* anything else, or declined: the general path, from begin */
                rp_begin(d, rp_pos(d, base, p), ts);
                if (d->state == RP_SINK)
                    continue;
            }
            if (t == '$' && d->depth != 0) { /* an element of an aggregate */
                int msg_end = 0;
                const uint8_t *q = rp_fast_elem(d, p, end, &msg_end);
                if (q != NULL) {
                    p = q;
                    if (msg_end) {
                        if (d->keeping)
                            d->out->keep(d->owner, seg, (size_t)(p - seg));
                        seg = p;
                        rp_message_done(d, rp_pos(d, base, p), ts);
                    }
                    continue;
                }
            }
            switch (t) {
            case '+': case '-': case ':': case '$': case '*': case '_': case ',':
            case '#': case '!': case '=': case '(': case '%': case '~': case '>':
            case '|':
                break;
            default:
                rp_error(d, rp_pos(d, base, p), 0, 0);
                continue;
            }
            rp_top_type(d, t);
            d->ltype = t;
            d->line.len = 0;
            d->state = RP_LINE;
            p++;
        }
            /* fall through */
        case RP_LINE: {
            uint8_t t = d->ltype;
            int bound = 1; /* errors found at the end of a whole line */
            if (is_num_type(t)) {
                int64_t v;
                r = rd_num_line(&d->line, &p, end, &v);
                if (r == 0)
                    break;
                if (r < 0)
                    bound = d->line.err_bound;
                r = (r < 0) ? LN_ERR : rp_num(d, t, v);
            } else {
                r = rd_line_read(&d->line, &p, end, cfg->max_line, &s, &sl, &full);
                if (r == RD_MORE)
                    break;
                if (r != RD_DONE) {
                    rp_error(d, rp_pos(d, base, p), r == RD_ERR_LIMIT, d->line.err_bound);
                    break;
                }
                r = rp_text(d, t, s, sl, full);
            }
            if (r == LN_MSG) {
                if (d->keeping)
                    d->out->keep(d->owner, seg, (size_t)(p - seg));
                seg = p;
                rp_message_done(d, rp_pos(d, base, p), ts);
            } else if (r < 0) {
                rp_error(d, rp_pos(d, base, p), r == LN_LIMIT, bound);
            }
            break;
        }

        case RP_BULK: {
            size_t avail = (size_t)(end - p);
            if (d->bulk_left + 2 <= avail) { /* the rest of the payload is here */
                size_t blen = (size_t)d->bulk_left;
                if (p[blen] != '\r' || p[blen + 1] != '\n') {
                    rp_error(d, rp_pos(d, base, p + blen), 0, 0);
                    p += blen;
                    break;
                }
                rp_capture(d, p, blen);
                p += blen + 2;
                d->bulk_left = 0;
                goto bulk_done;
            }
            size_t take = d->bulk_left < avail ? (size_t)d->bulk_left : avail;
            rp_capture(d, p, take);
            p += take;
            d->bulk_left -= take;
            if (d->bulk_left == 0) {
                d->crlf_left = 2;
                d->state = RP_BULK_CRLF;
            }
            break;
        }

        case RP_BULK_CRLF:
            if (*p != (d->crlf_left == 2 ? '\r' : '\n')) {
                rp_error(d, rp_pos(d, base, p), 0, 0);
                break;
            }
            p++;
            if (--d->crlf_left > 0)
                break;
        bulk_done:
            rp_bulk_done(d);
            if (rp_value_done(d, 0)) {
                if (d->keeping)
                    d->out->keep(d->owner, seg, (size_t)(p - seg));
                seg = p;
                rp_message_done(d, rp_pos(d, base, p), ts);
            }
            break;

        case RP_RESYNC: {
            int64_t skipped = 0;
            if (d->rs.uncounted) { /* the first search of a mid-stream connection */
                d->rs.uncounted = 0;
                d->st->resyncs++;
            }
            d->rs.frame = d->frame;
            int found = rd_resync_scan(&d->rs, &d->line, &p, end, ts, &skipped,
                                       cfg->max_bulk_reply);
            d->st->skipped_bytes += (uint64_t)skipped;
            if (!found)
                break;
            uint8_t t = d->rs.type;
            d->state = RP_TYPE;
            rp_begin(d, rp_pos(d, base, p) - d->rs.cand, d->rs.cand_start_us);
            uint64_t rfull = d->rs.full;
            size_t rn = (size_t)(rfull < RD_LBUF ? rfull : RD_LBUF);
            /* The owner keeps the bytes of a reply its certain head asks
             * for (a CLUSTER map on a connection picked up at a boundary):
             * the first line, eaten by the search, is handed over whole
             * from the line buffer, or the reply is not kept. */
            if (d->keeping && rfull <= RD_LBUF) {
                d->out->keep(d->owner, &t, 1);
                d->out->keep(d->owner, d->line.buf, rn);
                d->out->keep(d->owner, (const uint8_t *)"\r\n", 2);
            } else {
                d->keeping = 0;
            }
            seg = p;
            rp_top_type(d, t);
            r = rp_line(d, t, d->line.buf, rn, rfull);
            d->line.len = 0;
            if (r == LN_MSG) {
                seg = p;
                rp_message_done(d, rp_pos(d, base, p), ts);
            } else if (r < 0) {
                rp_error(d, rp_pos(d, base, p), r == LN_LIMIT, 1);
            }
            break;
        }

        default: /* RP_SINK: a replication stream, not replies */
            p = end;
            break;
        }
    }
    if (d->keeping && d->in_msg && p > seg)
        d->out->keep(d->owner, seg, (size_t)(p - seg));
    d->off += len;
}
