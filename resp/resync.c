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
 * Requests may also resume at an inline command (telnet-like clients send
 * "SET k v\r\n"), when the decoder allows it (rd_resync.inline_ok, set from
 * the connection's history: never for a client that spoke multibulk and
 * never inline). Every word of a multibulk also starts a line after a CRLF
 * ("$3\r\nGET\r\n"), so the test is strict, a false resync being worse than
 * none: the line starts after a CRLF and the line before it did not start
 * with '$' (or, for a client known to speak inline, right at the boundary
 * given to rd_resync_start); its first word is a known command name (any
 * case) followed by a space (or, for a client known to speak inline, the end
 * of the line); the whole line is printable ASCII without quotes and at most
 * RD_LBUF bytes (and max_line), ended by CRLF. It is handed back whole in
 * the line buffer, rs->type 'i'.
 *
 * The scanner is a small per-byte automaton (it only runs on bytes that are
 * being thrown away, never on the hot path), so a candidate may be split
 * across chunks. The candidate's line is collected into the decoder's line
 * buffer so that the decoder can carry on as if it had read it itself.
 *
 * Spec: https://redis.io/docs/latest/develop/reference/protocol-spec/
 */
#include <stdlib.h>

#include "resp/resp_internal.h"

/* Scanner states. */
enum {
    RS_SCAN = 0,   /* looking for '\n' (after '\r': a boundary) */
    RS_LF,         /* after a bare '\n': not a boundary, but a line starts */
    RS_BOUND,      /* right after a CRLF (or at a point taken as a boundary) */
    RS_LINE,       /* reading the candidate line */
    RS_LINE_CR,    /* candidate line saw '\r', want '\n' */
    RS_DOLLAR,     /* requests: after "*<n>\r\n", want '$' */
    RS_IN_WORD,    /* inline candidate: its first word */
    RS_IN_REST,    /* inline candidate: the rest of its line */
    RS_IN_CR       /* inline candidate saw '\r', want '\n' */
};

/* Redis 7's command names, sorted for bsearch (strcmp order). Only
 * top-level names: the first word of an inline line, the first bulk of a
 * multibulk. An inline resync may start only at one of them, and resp_shape
 * takes a stream that starts with one for a client's. */
static const char *const command_names[] = {
    "ACL", "APPEND", "ASKING", "AUTH", "BGREWRITEAOF", "BGSAVE", "BITCOUNT", "BITFIELD",
    "BITFIELD_RO", "BITOP", "BITPOS", "BLMOVE", "BLMPOP", "BLPOP", "BRPOP",
    "BRPOPLPUSH", "BZMPOP", "BZPOPMAX", "BZPOPMIN", "CLIENT", "CLUSTER", "COMMAND",
    "CONFIG", "COPY", "DBSIZE", "DEBUG", "DECR", "DECRBY", "DEL", "DISCARD", "DUMP",
    "ECHO", "EVAL", "EVALSHA", "EVALSHA_RO", "EVAL_RO", "EXEC", "EXISTS", "EXPIRE",
    "EXPIREAT", "EXPIRETIME", "FAILOVER", "FCALL", "FCALL_RO", "FLUSHALL", "FLUSHDB",
    "FUNCTION", "GEOADD", "GEODIST", "GEOHASH", "GEOPOS", "GEORADIUS",
    "GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO", "GEORADIUS_RO", "GEOSEARCH",
    "GEOSEARCHSTORE", "GET", "GETBIT", "GETDEL", "GETEX", "GETRANGE", "GETSET", "HDEL",
    "HELLO", "HEXISTS", "HGET", "HGETALL", "HINCRBY", "HINCRBYFLOAT", "HKEYS", "HLEN",
    "HMGET", "HMSET", "HRANDFIELD", "HSCAN", "HSET", "HSETNX", "HSTRLEN", "HVALS",
    "INCR", "INCRBY", "INCRBYFLOAT", "INFO", "KEYS", "LASTSAVE", "LATENCY", "LCS",
    "LINDEX", "LINSERT", "LLEN", "LMOVE", "LMPOP", "LOLWUT", "LPOP", "LPOS", "LPUSH",
    "LPUSHX", "LRANGE", "LREM", "LSET", "LTRIM", "MEMORY", "MGET", "MIGRATE", "MODULE",
    "MONITOR", "MOVE", "MSET", "MSETNX", "MULTI", "OBJECT", "PERSIST", "PEXPIRE",
    "PEXPIREAT", "PEXPIRETIME", "PFADD", "PFCOUNT", "PFDEBUG", "PFMERGE", "PFSELFTEST",
    "PING", "PSETEX", "PSUBSCRIBE", "PSYNC", "PTTL", "PUBLISH", "PUBSUB",
    "PUNSUBSCRIBE", "QUIT", "RANDOMKEY", "READONLY", "READWRITE", "RENAME", "RENAMENX",
    "REPLCONF", "REPLICAOF", "RESET", "RESTORE", "RESTORE-ASKING", "ROLE", "RPOP",
    "RPOPLPUSH", "RPUSH", "RPUSHX", "SADD", "SAVE", "SCAN", "SCARD", "SCRIPT", "SDIFF",
    "SDIFFSTORE", "SELECT", "SET", "SETBIT", "SETEX", "SETNX", "SETRANGE", "SHUTDOWN",
    "SINTER", "SINTERCARD", "SINTERSTORE", "SISMEMBER", "SLAVEOF", "SLOWLOG",
    "SMEMBERS", "SMISMEMBER", "SMOVE", "SORT", "SORT_RO", "SPOP", "SPUBLISH",
    "SRANDMEMBER", "SREM", "SSCAN", "SSUBSCRIBE", "STRLEN", "SUBSCRIBE", "SUBSTR",
    "SUNION", "SUNIONSTORE", "SUNSUBSCRIBE", "SWAPDB", "SYNC", "TIME", "TOUCH", "TTL",
    "TYPE", "UNLINK", "UNSUBSCRIBE", "UNWATCH", "WAIT", "WAITAOF", "WATCH", "XACK",
    "XADD", "XAUTOCLAIM", "XCLAIM", "XDEL", "XGROUP", "XINFO", "XLEN", "XPENDING",
    "XRANGE", "XREAD", "XREADGROUP", "XREVRANGE", "XSETID", "XTRIM", "ZADD", "ZCARD",
    "ZCOUNT", "ZDIFF", "ZDIFFSTORE", "ZINCRBY", "ZINTER", "ZINTERCARD", "ZINTERSTORE",
    "ZLEXCOUNT", "ZMPOP", "ZMSCORE", "ZPOPMAX", "ZPOPMIN", "ZRANDMEMBER", "ZRANGE",
    "ZRANGEBYLEX", "ZRANGEBYSCORE", "ZRANGESTORE", "ZRANK", "ZREM", "ZREMRANGEBYLEX",
    "ZREMRANGEBYRANK", "ZREMRANGEBYSCORE", "ZREVRANGE", "ZREVRANGEBYLEX",
    "ZREVRANGEBYSCORE", "ZREVRANK", "ZSCAN", "ZSCORE", "ZUNION", "ZUNIONSTORE",
};
#define N_COMMAND_NAMES (sizeof(command_names) / sizeof(command_names[0]))

#define RS_TEXT_MAX 4096 /* longest '+'/'-' line accepted as a candidate */

/* Start scanning. at_boundary: the next byte may itself start a message (the
 * start of a stream picked up mid-way, or the first byte after a gap). */
void rd_resync_start(rd_resync *rs, int is_req, int at_boundary)
{
    memset(rs, 0, sizeof(*rs));
    rs->is_req = (uint8_t)is_req;
    rs->state = at_boundary ? RS_BOUND : RS_SCAN;
    rs->at_start = 1; /* the line before the first boundary is not known */
}

/* bsearch comparator: a name against a table entry. */
static int name_cmp(const void *key, const void *elem)
{
    return strcmp((const char *)key, *(const char *const *)elem);
}

int rd_known_command(const uint8_t *s, size_t n)
{
    char w[RESP_NAME_MAX];
    if (n == 0 || n >= RESP_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        w[i] = (char)rd_upper(s[i]);
    w[n] = '\0';
    return bsearch(w, command_names, N_COMMAND_NAMES, sizeof(command_names[0]), name_cmp) != NULL;
}

/* May byte c be part of a command name? */
static int rs_name_byte(uint8_t c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '-';
}

/* May an inline candidate start here, at byte c just after a boundary? The
 * line before must be known not to be a "$<len>" header (its payload would
 * be this line), unless the client is known to speak inline and this is
 * the boundary the scan started at. */
static int rs_inline_start(const rd_resync *rs, uint8_t c, int prev_known, uint8_t prev_first)
{
    if (!rs->is_req || rs->inline_ok == 0 || !rs_name_byte(c))
        return 0;
    if (prev_known)
        return prev_first != '$';
    return rs->inline_ok == 2;
}

/* The inline candidate's first word (its rs->full bytes in buf) ended with
 * byte c (' ' or '\r'): is it a command that may start a resync? */
static int rs_inline_word_ok(const rd_resync *rs, const uint8_t *buf, uint8_t c)
{
    if (c != ' ' && rs->inline_ok != 2) /* a lone word: "$3\r\nGET\r\n"'s GET */
        return 0;
    return rs->full < RESP_NAME_MAX && rd_known_command(buf, (size_t)rs->full);
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
    const uint8_t *start = p;
    int64_t eaten = 0;
    rs->seen += (uint64_t)(end - p); /* an upper bound is all callers need */
    uint8_t prev_last = rs->last; /* the byte before start */
    if (end > start)
        rs->last = end[-1]; /* for the next call */
    while (p < end) {
        uint8_t c = *p;
        switch (rs->state) {
        case RS_SCAN: {
            /* every LF is looked at, not only CRLFs: a bare one ends a line
             * for rs->first (inline clients may end lines so) */
            const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
            if (nl == NULL) {
                eaten += end - p;
                p = end;
                continue;
            }
            uint8_t before = nl > start ? nl[-1] : prev_last;
            eaten += nl - p + 1;
            p = nl + 1;
            rs->state = before == '\r' ? RS_BOUND : RS_LF;
            continue;
        }
        case RS_LF:
            rs->first = c;
            rs->at_start = 0;
            rs->state = RS_SCAN; /* re-examine c */
            continue;
        case RS_BOUND: {
            /* the first byte of the line that ended, and of this one */
            int prev_known = !rs->at_start;
            uint8_t prev_first = rs->first;
            rs->at_start = 0;
            rs->first = c;
            if (rs_inline_start(rs, c, prev_known, prev_first)) {
                rs->type = 'i';
                rs->cand = 0;
                rs->full = 0;
                rs->cand_start_us = ts;
                rs->cand_start_frame = rs->frame;
                line->len = 0;
                rs->state = RS_IN_WORD; /* c is its first byte */
                continue;
            }
            if (!rs_type_ok(rs, c)) {
                rs->state = RS_SCAN;
                continue;
            }
            rs->type = c;
            rs->cand = 1;
            rs->full = 0;
            rs->cand_start_us = ts;
            rs->cand_start_frame = rs->frame;
            line->len = 0;
            p++;
            eaten++;
            rs->state = RS_LINE;
            continue;
        }
        case RS_IN_WORD:
        case RS_IN_REST:
            if (c == '\r' || (c == ' ' && rs->state == RS_IN_WORD)) {
                if (rs->state == RS_IN_WORD && !rs_inline_word_ok(rs, line->buf, c)) {
                    rs->state = RS_SCAN; /* re-examine c */
                    continue;
                }
                rs->state = c == '\r' ? RS_IN_CR : RS_IN_REST;
            } else if (rs->state == RS_IN_WORD ? !rs_name_byte(c)
                                               : (c < 0x20 || c >= 0x7f || c == '"' || c == '\'')) {
                rs->state = RS_SCAN; /* re-examine c */
                continue;
            }
            if (c != '\r') {
                if (rs->full >= RD_LBUF || rs->full >= rs->max_line) {
                    rs->state = RS_SCAN; /* too long to hand back */
                    continue;
                }
                line->buf[rs->full++] = c;
            }
            rs->cand++;
            p++;
            eaten++;
            continue;
        case RS_IN_CR:
            if (c != '\n') {
                rs->state = RS_SCAN;
                continue;
            }
            p++;
            eaten++;
            rs->cand++;
            *pp = p;
            *skipped += eaten - (int64_t)rs->cand;
            return 1;
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
