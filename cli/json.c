/*
 * json.c - JSON text for the --json output: string escaping and a syntax check.
 *
 * Spec: RFC 8259. Strings must be valid UTF-8 with control characters, quotes
 * and backslashes escaped. Capture bytes (keys in summaries) may be anything,
 * so a byte that does not start a valid UTF-8 sequence is written as \u00XX:
 * the output stays valid JSON and the byte stays visible.
 *
 * json_valid decides whether analysis' evidence text can be embedded as a JSON
 * value; otherwise the report embeds it as a string.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int cli_utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 && (p[3] & 0xc0) == 0x80 ? 4
                                                                                          : 0;
    }
    return 0;
}

void json_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', out);
    while (*p) {
        int n;
        if (*p == '"' || *p == '\\') {
            fputc('\\', out);
            fputc(*p++, out);
        } else if (*p == '\n') {
            fputs("\\n", out);
            p++;
        } else if (*p == '\t') {
            fputs("\\t", out);
            p++;
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(out, "\\u%04x", *p++);
        } else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
            /* a C1 control (U+0080..U+009F, CSI among them): escaped like C0,
             * so that JSON printed on a terminal cannot drive it */
            fprintf(out, "\\u%04x", p[1]);
            p += 2;
        } else if ((n = cli_utf8_len(p)) > 0) {
            /* cli_utf8_len stops at the NUL: it never matches a continuation byte. */
            fwrite(p, 1, (size_t)n, out);
            p += n;
        } else {
            fprintf(out, "\\u%04x", *p++);
        }
    }
    fputc('"', out);
}

/* The shortest %.Ng text that reads back as exactly v (strtod), so that 0.054
 * prints as 0.054 and not 0.053999999999999999; 17 digits always round-trip
 * (IEEE 754 binary64). NaN and the infinities have no JSON form: null. */
void json_double(FILE *out, double v)
{
    char buf[40];
    if (!isfinite(v)) {
        fputs("null", out);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, out);
}

/* ---------------------------------------------------------------- validation */

#define JSON_MAX_DEPTH 64

/* The parser's cursor. */
typedef struct jp {
    const char *p;
} jp;

static int parse_value(jp *j, int depth);

static void skip_ws(jp *j)
{
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
        j->p++;
}

/* Consume a literal word (true, false, null). */
static int parse_word(jp *j, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(j->p, word, n) != 0)
        return 0;
    j->p += n;
    return 1;
}

/* One or more digits. */
static int parse_digits(jp *j)
{
    const char *start = j->p;
    while (*j->p >= '0' && *j->p <= '9')
        j->p++;
    return j->p > start;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int parse_number(jp *j)
{
    if (*j->p == '-')
        j->p++;
    if (*j->p == '0')
        j->p++;
    else if (!parse_digits(j))
        return 0;
    if (*j->p == '.') {
        j->p++;
        if (!parse_digits(j))
            return 0;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        j->p++;
        if (*j->p == '+' || *j->p == '-')
            j->p++;
        if (!parse_digits(j))
            return 0;
    }
    return 1;
}

/* A string: no raw control characters, valid escapes, valid UTF-8. */
static int parse_string(jp *j)
{
    const unsigned char *p = (const unsigned char *)j->p;
    if (*p++ != '"')
        return 0;
    while (*p != '"') {
        int n;
        if (*p < 0x20)
            return 0; /* includes the NUL at the end of the text */
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!p[i] || !strchr("0123456789abcdefABCDEF", p[i]))
                        return 0;
                p += 5;
            } else if (*p && strchr("\"\\/bfnrt", *p)) {
                p++;
            } else {
                return 0;
            }
            continue;
        }
        n = cli_utf8_len(p);
        if (n == 0)
            return 0;
        p += n;
    }
    j->p = (const char *)p + 1;
    return 1;
}

/* Elements of an array or members of an object, after the opening bracket. */
static int parse_container(jp *j, int depth, char close, int object)
{
    skip_ws(j);
    if (*j->p == close) {
        j->p++;
        return 1;
    }
    for (;;) {
        if (object) {
            skip_ws(j);
            if (!parse_string(j))
                return 0;
            skip_ws(j);
            if (*j->p++ != ':')
                return 0;
        }
        if (!parse_value(j, depth + 1))
            return 0;
        skip_ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p != close)
            return 0;
        j->p++;
        return 1;
    }
}

static int parse_value(jp *j, int depth)
{
    if (depth > JSON_MAX_DEPTH)
        return 0;
    skip_ws(j);
    switch (*j->p) {
    case '{': j->p++; return parse_container(j, depth, '}', 1);
    case '[': j->p++; return parse_container(j, depth, ']', 0);
    case '"': return parse_string(j);
    case 't': return parse_word(j, "true");
    case 'f': return parse_word(j, "false");
    case 'n': return parse_word(j, "null");
    default: return parse_number(j);
    }
}

int json_valid(const char *text)
{
    jp j = {text ? text : ""};
    if (!parse_value(&j, 0))
        return 0;
    skip_ws(&j);
    return *j.p == 0;
}

/* ---------------------------------------------------------------- reading */

/* Member `name` of the object at obj (text already checked by json_valid). */
json_span json_member(json_span obj, const char *name)
{
    json_span none = {NULL, 0};
    jp j = {obj.p};
    size_t name_len = strlen(name);
    if (!obj.p || *j.p != '{')
        return none;
    j.p++;
    for (;;) {
        const char *key;
        size_t key_len;
        json_span v;
        skip_ws(&j);
        key = j.p + 1;
        if (*j.p != '"' || !parse_string(&j))
            return none;
        key_len = (size_t)(j.p - 1 - key); /* raw, between the quotes */
        skip_ws(&j);
        if (*j.p++ != ':')
            return none;
        skip_ws(&j);
        v.p = j.p;
        if (!parse_value(&j, 1))
            return none;
        v.len = (size_t)(j.p - v.p);
        if (key_len == name_len && !strncmp(key, name, name_len))
            return v;
        skip_ws(&j);
        if (*j.p++ != ',')
            return none;
    }
}

/* Element i of the array at arr, or a span with p NULL. */
json_span json_element(json_span arr, size_t i)
{
    json_span none = {NULL, 0};
    jp j = {arr.p};
    if (!arr.p || *j.p != '[')
        return none;
    j.p++;
    skip_ws(&j);
    if (*j.p == ']')
        return none;
    for (size_t k = 0;; k++) {
        json_span v;
        skip_ws(&j);
        v.p = j.p;
        if (!parse_value(&j, 1))
            return none;
        v.len = (size_t)(j.p - v.p);
        if (k == i)
            return v;
        skip_ws(&j);
        if (*j.p++ != ',')
            return none;
    }
}

size_t json_count(json_span arr)
{
    size_t n = 0;
    while (json_element(arr, n).p)
        n++;
    return n;
}

/* The character a simple escape stands for ("\n" -> newline), or '?'. */
static char unescape(char c)
{
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'b': return '\b';
    case 'f': return '\f';
    case '"': case '\\': case '/': return c;
    default: return '?';
    }
}

void json_text(json_span v, char *buf, size_t size)
{
    size_t o = 0;
    if (size == 0)
        return;
    if (v.p && v.len >= 2 && v.p[0] == '"') {
        /* A string: drop the quotes, undo the escapes (\u above ASCII as '?'). */
        for (size_t i = 1; i + 1 < v.len && o + 1 < size; i++) {
            char c = v.p[i];
            if (c == '\\' && i + 2 < v.len) {
                c = v.p[++i];
                if (c == 'u') {
                    unsigned cp = 0;
                    sscanf(v.p + i + 1, "%4x", &cp);
                    c = cp > 0 && cp < 0x80 ? (char)cp : '?';
                    i += 4;
                } else {
                    c = unescape(c);
                }
            }
            buf[o++] = c;
        }
    } else if (v.p) {
        /* A number, true, false, null, or an aggregate: its text. */
        o = v.len < size - 1 ? v.len : size - 1;
        memcpy(buf, v.p, o);
    }
    buf[o] = 0;
}
