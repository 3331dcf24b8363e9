/*
 * resync.c - find solid ground in a RESP byte stream after garbage or a gap.
 *
 * A message boundary is recognised by what can only follow one: the CRLF that
 * ends the previous message, then a type byte and a line that makes sense for
 * that type. For requests the test is stricter, "\r\n*<n>\r\n$" (a multibulk
 * header followed by its first bulk argument), because that is what every
 * client library sends. For replies: '+' and '-' lines of printable text ('-'
 * starting with an upper-case letter, as every Redis error code does), numbers
 * that parse strictly for ':' '$' '*' '%' '~' '>' '|' '!' '=' '(', "t"/"f" for
 * '#', an empty line for '_', a float for ','.
 *
 * The scanner is a small per-byte automaton (it only runs on bytes that are
 * being thrown away, never on the hot path), so a candidate may be split
 * across chunks. The candidate's line is collected into the decoder's line
 * buffer so that the decoder can carry on as if it had read it itself.
 *
 * Spec: https://redis.io/docs/latest/develop/reference/protocol-spec/
 */
#include "resp/resp_internal.h"

/* Scanner states. */
enum {
    RS_SCAN = 0,   /* looking for '\r' */
    RS_CR,         /* saw '\r', want '\n' */
    RS_BOUND,      /* right after a CRLF (or at a point taken as a boundary) */
    RS_LINE,       /* reading the candidate line */
    RS_LINE_CR,    /* candidate line saw '\r', want '\n' */
    RS_DOLLAR      /* requests: after "*<n>\r\n", want '$' */
};

#define RS_TEXT_MAX 4096 /* longest '+'/'-' line accepted as a candidate */

/* Start scanning. at_boundary: the next byte may itself start a message (the
 * start of a stream picked up mid-way, or the first byte after a gap). */
void rd_resync_start(rd_resync *rs, int is_req, int at_boundary)
{
    memset(rs, 0, sizeof(*rs));
    rs->is_req = (uint8_t)is_req;
    rs->state = at_boundary ? RS_BOUND : RS_SCAN;
}

/* Is t a byte that may start a value in this direction? */
static int rs_type_ok(const rd_resync *rs, uint8_t t)
{
    if (rs->is_req)
        return t == '*';
    switch (t) {
    case '+': case '-': case ':': case '$': case '*': case '_': case ',':
    case '#': case '!': case '=': case '(': case '%': case '~': case '>':
    case '|':
        return 1;
    default:
        return 0;
    }
}

/* May byte c appear at position pos of a line of type t? Cheap early reject;
 * the whole line is checked again at its end. */
static int rs_byte_ok(uint8_t t, uint64_t pos, uint8_t c)
{
    switch (t) {
    case '+':
        return c >= 0x20 && c < 0x7f && pos < RS_TEXT_MAX;
    case '-':
        if (pos == 0)
            return c >= 'A' && c <= 'Z';
        return c >= 0x20 && c < 0x7f && pos < RS_TEXT_MAX;
    case '_':
        return 0;
    case '#':
        return pos == 0 && (c == 't' || c == 'f');
    case ',':
        return pos < 64 && ((c >= '0' && c <= '9') || c == '.' || c == '-' ||
                            c == '+' || c == 'e' || c == 'E' || c == 'i' ||
                            c == 'n' || c == 'f' || c == 'a');
    case '(':
        return pos < 1024 && ((c >= '0' && c <= '9') || (pos == 0 && c == '-'));
    default: /* lengths and counts */
        return pos < RD_NUM_MAX && ((c >= '0' && c <= '9') || (pos == 0 && c == '-'));
    }
}

/* Is the complete candidate line (prefix in buf, full length n) plausible? */
static int rs_line_ok(rd_resync *rs, const uint8_t *buf, uint64_t n, uint64_t max_bulk)
{
    uint8_t t = rs->type;
    int64_t v = 0;
    switch (t) {
    case '+':
        return 1;
    case '-':
        return n >= 1;
    case '_':
        return n == 0;
    case '#':
        return n == 1;
    case ',': case '(':
        return n >= 1;
    default:
        break;
    }
    if (rd_parse_i64(buf, (size_t)n, &v) != 0)
        return 0;
    rs->num = v;
    switch (t) {
    case ':':
        return 1;
    case '$':
        return v >= -1 && (uint64_t)(v < 0 ? 0 : v) <= max_bulk;
    case '!': case '=':
        return v >= 0 && (uint64_t)v <= max_bulk;
    case '*':
        if (rs->is_req)
            return v >= 1 && v <= RD_MAX_ELEMENTS;
        return v >= -1 && v <= RD_MAX_ELEMENTS;
    default: /* % ~ > | */
        return v >= 0 && v <= RD_MAX_ELEMENTS;
    }
}

int rd_resync_scan(rd_resync *rs, rd_line *line, const uint8_t **pp,
                   const uint8_t *end, int64_t ts, int64_t *skipped,
                   uint64_t max_bulk)
{
    const uint8_t *p = *pp;
    int64_t eaten = 0;
    rs->seen += (uint64_t)(end - p); /* an upper bound is all callers need */
    while (p < end) {
        uint8_t c = *p;
        switch (rs->state) {
        case RS_SCAN: {
            const uint8_t *cr = memchr(p, '\r', (size_t)(end - p));
            if (cr == NULL) {
                eaten += end - p;
                p = end;
                continue;
            }
            eaten += cr - p + 1;
            p = cr + 1;
            rs->state = RS_CR;
            continue;
        }
        case RS_CR:
            if (c == '\n') {
                p++;
                eaten++;
                rs->state = RS_BOUND;
            } else {
                rs->state = RS_SCAN; /* re-examine c */
            }
            continue;
        case RS_BOUND:
            if (!rs_type_ok(rs, c)) {
                rs->state = RS_SCAN;
                continue;
            }
            rs->type = c;
            rs->cand = 1;
            rs->full = 0;
            rs->cand_start_us = ts;
            line->len = 0;
            p++;
            eaten++;
            rs->state = RS_LINE;
            continue;
        case RS_LINE:
            if (c == '\r') {
                rs->state = RS_LINE_CR;
                p++;
                eaten++;
                rs->cand++;
                continue;
            }
            if (!rs_byte_ok(rs->type, rs->full, c)) {
                rs->state = RS_SCAN; /* re-examine c */
                continue;
            }
            if (rs->full < RD_LBUF)
                line->buf[rs->full] = c;
            rs->full++;
            rs->cand++;
            p++;
            eaten++;
            continue;
        case RS_LINE_CR:
            if (c != '\n') {
                rs->state = RS_SCAN;
                continue;
            }
            p++;
            eaten++;
            rs->cand++;
            if (!rs_line_ok(rs, line->buf, rs->full, max_bulk)) {
                rs->state = RS_BOUND; /* the CRLF still ends something */
                continue;
            }
            if (rs->is_req) {
                rs->state = RS_DOLLAR;
                continue;
            }
            *pp = p;
            *skipped += eaten - (int64_t)rs->cand;
            return 1;
        case RS_DOLLAR:
            if (c != '$') {
                rs->state = RS_BOUND; /* re-examine c as a possible start */
                continue;
            }
            *pp = p;
            *skipped += eaten - (int64_t)rs->cand;
            return 1;
        default:
            rs->state = RS_SCAN;
            continue;
        }
    }
    *pp = p;
    *skipped += eaten;
    return 0;
}

/* See resp_internal.h: the part of rd_num_line that is not the fast path. */
int rd_num_line_slow(rd_line *l, const uint8_t **pp, const uint8_t *end, int64_t *v)
{
    const uint8_t *s;
    size_t sl;
    uint64_t full;
    int r = rd_line_read(l, pp, end, RD_NUM_MAX, &s, &sl, &full);
    if (r == RD_MORE)
        return 0;
    if (r != RD_DONE)
        return -1;
    if (rd_parse_i64(s, sl, v) != 0) {
        l->err_bound = 1; /* a whole line, just not a number */
        return -1;
    }
    return 1;
}
