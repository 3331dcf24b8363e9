/*
 * value.c - a small tree parser for complete replies that analysis reads
 * (CLUSTER SLOTS / SHARDS / NODES, kept in resp_reply.raw).
 *
 * Not on the hot path; plain recursion bounded by max_depth. Every length is
 * checked against the bytes left, and an aggregate may not declare more
 * elements than could fit in what is left (each needs at least 3 bytes), so a
 * hostile count cannot make it allocate more than the input justifies.
 * Attributes ('|') are parsed and dropped, wherever they appear.
 *
 * Spec: https://redis.io/docs/latest/develop/reference/protocol-spec/
 */
#include <stdlib.h>

#include "resp/resp_internal.h"

/* Parser position. */
typedef struct vp {
    const uint8_t *buf;
    size_t len;
    size_t pos;
    uint32_t max_depth;
} vp;

/* Free what v owns (children), not v itself. */
static void value_clear(resp_value *v)
{
    if (v->elem != NULL) {
        for (size_t i = 0; i < v->n; i++)
            value_clear(&v->elem[i]);
        free(v->elem);
    }
    v->elem = NULL;
    v->n = 0;
}

void resp_value_free(resp_value *v)
{
    if (v == NULL)
        return;
    value_clear(v);
    free(v);
}

/* Read the line at the cursor: sets s and n, moves past CRLF. -1 if none. */
static int vp_line(vp *p, const uint8_t **s, size_t *n)
{
    const uint8_t *start = p->buf + p->pos;
    size_t left = p->len - p->pos;
    const uint8_t *cr = memchr(start, '\r', left);
    if (cr == NULL || (size_t)(cr - start) + 1 >= left || cr[1] != '\n')
        return -1;
    *s = start;
    *n = (size_t)(cr - start);
    p->pos += *n + 2;
    return 0;
}

static int vp_value(vp *p, uint32_t depth, resp_value *out);

/* Parse n values into a new array at *elems. */
static int vp_children(vp *p, uint32_t depth, uint64_t n, resp_value **elems)
{
    *elems = NULL;
    if (n == 0)
        return 0;
    if (n > (p->len - p->pos) / 3)
        return -1;
    resp_value *e = calloc((size_t)n, sizeof(*e));
    if (e == NULL)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (vp_value(p, depth + 1, &e[i]) != 0) {
            for (uint64_t j = 0; j < i; j++)
                value_clear(&e[j]);
            free(e);
            return -1;
        }
    }
    *elems = e;
    return 0;
}

/* Skip an attribute at the cursor (type byte already consumed). */
static int vp_skip_attr(vp *p, uint32_t depth)
{
    const uint8_t *s;
    size_t n;
    int64_t cnt;
    if (vp_line(p, &s, &n) != 0 || rd_parse_i64(s, n, &cnt) != 0 || cnt < 0 ||
        cnt > RD_MAX_ELEMENTS)
        return -1;
    resp_value *e = NULL;
    if (vp_children(p, depth, 2 * (uint64_t)cnt, &e) != 0)
        return -1;
    for (uint64_t i = 0; i < 2 * (uint64_t)cnt; i++)
        value_clear(&e[i]);
    free(e);
    return 0;
}

/* Parse one value (after any attributes) into out. */
static int vp_value(vp *p, uint32_t depth, resp_value *out)
{
    const uint8_t *s;
    size_t n;
    int64_t v;
    memset(out, 0, sizeof(*out));
    if (depth > p->max_depth)
        return -1;
    for (;;) {
        if (p->pos >= p->len)
            return -1;
        uint8_t t = p->buf[p->pos++];
        if (t == '|') {
            if (vp_skip_attr(p, depth + 1) != 0)
                return -1;
            continue;
        }
        out->type = (resp_type)t;
        switch (t) {
        case '+': case '-': case ',': case '(':
            if (vp_line(p, &s, &n) != 0)
                return -1;
            out->str = (const char *)s;
            out->len = n;
            return 0;
        case ':':
            if (vp_line(p, &s, &n) != 0 || rd_parse_i64(s, n, &out->integer) != 0)
                return -1;
            return 0;
        case '#':
            if (vp_line(p, &s, &n) != 0 || n != 1 || (s[0] != 't' && s[0] != 'f'))
                return -1;
            out->integer = (s[0] == 't');
            return 0;
        case '_':
            if (vp_line(p, &s, &n) != 0 || n != 0)
                return -1;
            return 0;
        case '$': case '!': case '=':
            if (vp_line(p, &s, &n) != 0 || rd_parse_i64(s, n, &v) != 0)
                return -1;
            if (v == -1 && t == '$') {
                out->type = RESP_T_NIL;
                return 0;
            }
            if (v < 0 || (uint64_t)v > p->len - p->pos || p->len - p->pos - (size_t)v < 2)
                return -1;
            if (p->buf[p->pos + (size_t)v] != '\r' || p->buf[p->pos + (size_t)v + 1] != '\n')
                return -1;
            out->str = (const char *)(p->buf + p->pos);
            out->len = (size_t)v;
            p->pos += (size_t)v + 2;
            return 0;
        case '*': case '~': case '>': case '%':
            if (vp_line(p, &s, &n) != 0 || rd_parse_i64(s, n, &v) != 0)
                return -1;
            if (v == -1 && t == '*') {
                out->type = RESP_T_NIL;
                return 0;
            }
            if (v < 0 || v > RD_MAX_ELEMENTS)
                return -1;
            out->n = (t == '%') ? 2 * (size_t)v : (size_t)v;
            if (vp_children(p, depth, out->n, &out->elem) != 0) {
                out->n = 0;
                return -1;
            }
            return 0;
        default:
            return -1;
        }
    }
}

resp_value *resp_value_parse(const uint8_t *buf, size_t len, uint32_t max_depth)
{
    if (buf == NULL || len == 0)
        return NULL;
    resp_value *v = malloc(sizeof(*v));
    if (v == NULL)
        return NULL;
    vp p = {buf, len, 0, max_depth ? max_depth : 1};
    if (vp_value(&p, 1, v) != 0 || p.pos != len) {
        resp_value_free(v);
        return NULL;
    }
    return v;
}
