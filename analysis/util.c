/*
 * util.c - small tools for analysis/: a fixed-size hash map, a keyed hash,
 * bounded JSON text and key redaction.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "analysis/internal.h"

/* ---------------------------------------------------------------- map */

#define MAP_MIN_CAP 64u

/* New arrays of cap entries (a power of two), all empty. 0 ok. */
static int map_alloc(an_map *m, uint32_t cap)
{
    m->hash = malloc((size_t)cap * sizeof *m->hash);
    m->val = malloc((size_t)cap * sizeof *m->val);
    if (!m->hash || !m->val) {
        free(m->hash);
        free(m->val);
        m->hash = NULL;
        m->val = NULL;
        return -1;
    }
    for (uint32_t i = 0; i < cap; i++)
        m->val[i] = AN_NONE;
    m->mask = cap - 1;
    return 0;
}

int an_map_init(an_map *m, uint32_t max_entries)
{
    uint32_t cap = 16;
    while (cap < (uint64_t)max_entries * 2 && cap < (1u << 30))
        cap <<= 1;
    m->max_mask = cap - 1;
    m->n = 0;
    return map_alloc(m, cap < MAP_MIN_CAP ? cap : MAP_MIN_CAP);
}

/* Double the capacity (entries re-placed at their new home positions). 0 ok;
 * on failure the map is unchanged. Entries of equal hash must keep their
 * order (an_map_find returns the first that matches, i.e. the oldest), so
 * the old table is read from an empty entry on: every probe run whole and in
 * order, none cut where it wraps past the end. */
static int map_grow(an_map *m)
{
    an_map old = *m;
    if (map_alloc(m, (old.mask + 1) * 2)) {
        *m = old;
        return -1;
    }
    uint32_t start = 0;
    while (old.val[start] != AN_NONE) /* there is one: the load is under 3/4 */
        start++;
    for (uint32_t k = 1; k <= old.mask + 1; k++) {
        uint32_t i = (start + k) & old.mask;
        if (old.val[i] == AN_NONE)
            continue;
        uint32_t j = (uint32_t)old.hash[i] & m->mask;
        while (m->val[j] != AN_NONE)
            j = (j + 1) & m->mask;
        m->hash[j] = old.hash[i];
        m->val[j] = old.val[i];
    }
    free(old.hash);
    free(old.val);
    return 0;
}

void an_map_free(an_map *m)
{
    free(m->hash);
    free(m->val);
    m->hash = NULL;
    m->val = NULL;
}

int32_t an_map_find(const an_map *m, uint64_t h, an_map_eq eq, const void *ctx, const void *key)
{
    uint32_t i = (uint32_t)h & m->mask;
    while (m->val[i] != AN_NONE) {
        if (m->hash[i] == h && (!eq || eq(ctx, m->val[i], key)))
            return m->val[i];
        i = (i + 1) & m->mask;
    }
    return AN_NONE;
}

int an_map_put(an_map *m, uint64_t h, int32_t val)
{
    /* keep the load under 3/4 so probes stay short: grow first; at the
     * largest size that load means full (should growing fail, a fuller table
     * still works while one empty entry is left to end the probes) */
    uint32_t cap = m->mask + 1;
    if (m->n + 1 > cap / 2 + cap / 4) {
        if (m->mask >= m->max_mask)
            return -1;
        if (map_grow(m) != 0 && m->n + 1 >= cap)
            return -1;
    }
    uint32_t i = (uint32_t)h & m->mask;
    while (m->val[i] != AN_NONE)
        i = (i + 1) & m->mask;
    m->hash[i] = h;
    m->val[i] = val;
    m->n++;
    return 0;
}

/* Backward-shift deletion: entries after the hole move back if their home
 * position allows it, so no tombstones are needed. */
void an_map_del(an_map *m, uint64_t h, int32_t val)
{
    uint32_t i = (uint32_t)h & m->mask;
    while (m->val[i] != AN_NONE && !(m->hash[i] == h && m->val[i] == val))
        i = (i + 1) & m->mask;
    if (m->val[i] == AN_NONE)
        return;
    m->n--;
    uint32_t hole = i;
    for (;;) {
        i = (i + 1) & m->mask;
        if (m->val[i] == AN_NONE)
            break;
        uint32_t home = (uint32_t)m->hash[i] & m->mask;
        /* may the entry at i move to hole? only if home is not in (hole, i] */
        int between = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (between)
            continue;
        m->hash[hole] = m->hash[i];
        m->val[hole] = m->val[i];
        hole = i;
    }
    m->val[hole] = AN_NONE;
}

/* ---------------------------------------------------------------- hash */

/* FNV-1a over the bytes, keyed by mixing the seed in first, then a
 * splitmix64 finaliser so that every input bit reaches every output bit. Not a
 * cryptographic MAC: it keeps key names out of records and spreads hash tables. */
uint64_t an_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Each 8-byte word is multiplied in and rotated (so word order matters), the
 * tail is one zero-padded word, the length goes in last, and the finaliser
 * spreads every bit. About one multiply per 8 bytes instead of one per byte. */
uint64_t an_hash_fast(const void *p, size_t n, uint64_t seed)
{
    const uint8_t *b = p;
    uint64_t h = (seed + 1) * 0x9e3779b97f4a7c15ull;
    size_t len = n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = (h ^ (w * 0x87c37b91114253d5ull));
        h = ((h << 31) | (h >> 33)) * 0x4cf5ad432745937full;
        b += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, b, n);
        h = (h ^ (w * 0x87c37b91114253d5ull));
        h = ((h << 31) | (h >> 33)) * 0x4cf5ad432745937full;
    }
    return an_mix64(h ^ len);
}

uint64_t an_hash_str(const char *s, uint64_t seed)
{
    return an_hash_fast(s, strlen(s), seed);
}

/* ---------------------------------------------------------------- text */

void an_copy_str(char *dst, size_t size, const char *src)
{
    if (size == 0)
        return;
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

void an_buf_put(an_buf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        b->cut = 1;
        return;
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

void an_buf_printf(an_buf *b, const char *fmt, ...)
{
    va_list ap;
    if (b->len + 1 >= b->cap) {
        b->cut = 1;
        return;
    }
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) {
        b->p[b->len] = 0; /* drop the partial piece: keep the JSON well formed */
        b->cut = 1;
        return;
    }
    b->len += (size_t)n;
}

void an_buf_json_str(an_buf *b, const void *p, size_t n)
{
    const uint8_t *s = p;
    /* the exact size first, so a string that fits is never refused */
    size_t need = 2;
    for (size_t i = 0; i < n; i++)
        need += s[i] == '"' || s[i] == '\\' ? 2 : s[i] < 0x20 || s[i] >= 0x7f ? 6 : 1;
    if (b->len + need + 1 > b->cap) {
        b->cut = 1;
        return;
    }
    char *o = b->p + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            static const char hex[] = "0123456789abcdef";
            *o++ = '\\';
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    *o = 0;
    b->len = (size_t)(o - b->p);
}

/* ---------------------------------------------------------------- keys */

/* Keyed BLAKE2b (libsodium's crypto_generichash with a 32-byte key) is a PRF:
 * without the key, no dictionary of likely keys can be hashed to match, and
 * one known key and its hash give nothing about the key of the others. The
 * message is the full length (4 bytes, little-endian) then the kept prefix, so
 * keys with one prefix and different lengths differ. 8 bytes of the 16-byte
 * output are shown: a collision among 2^20 distinct keys has odds ~2^-25. */
void an_redact(const uint8_t key[AN_REDACT_KEY_BYTES], const char *text, size_t len,
               uint32_t full_len, char *out, size_t out_size)
{
    uint8_t msg[4 + RESP_ARG_PREFIX];
    uint8_t h[crypto_generichash_BYTES_MIN];
    if (len > RESP_ARG_PREFIX)
        len = RESP_ARG_PREFIX;
    for (int i = 0; i < 4; i++)
        msg[i] = (uint8_t)(full_len >> (8 * i));
    memcpy(msg + 4, text, len);
    crypto_generichash(h, sizeof h, msg, 4 + len, key, AN_REDACT_KEY_BYTES);
    snprintf(out, out_size, "h:%02x%02x%02x%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3], h[4],
             h[5], h[6], h[7]);
}

void an_key_text(const an_config *cfg, const char *key, size_t len, uint32_t full_len,
                 char *out, size_t out_size)
{
    if (out_size == 0)
        return;
    if (cfg->redact_keys) {
        an_redact(cfg->redact_key, key, len, full_len, out, out_size);
        return;
    }
    /* printable ASCII as is; backslash and every other byte as \xNN, so the
     * text is one line of valid UTF-8 that shows where binary bytes were */
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = (uint8_t)key[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            if (o + 2 > out_size)
                break;
            out[o++] = (char)c;
        } else {
            if (o + 5 > out_size)
                break;
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
}

/* ---------------------------------------------------------------- spans */

int64_t an_span_add(an_span *s, int64_t from, int64_t to)
{
    if (from < s->floor)
        from = s->floor;
    if (to <= from)
        return 0;
    /* parts overlapping or touching [from, to) merge into it */
    int64_t covered = 0, lo = from, hi = to;
    uint8_t w = 0, at = 0, placed = 0;
    int64_t nf[AN_SPAN_PARTS + 1], nt[AN_SPAN_PARTS + 1];
    for (uint8_t i = 0; i < s->n; i++) {
        if (s->to[i] < from || s->from[i] > to) {
            if (!placed && s->from[i] > to) {
                at = w++;
                placed = 1;
            }
            nf[w] = s->from[i];
            nt[w++] = s->to[i];
            continue;
        }
        int64_t a = s->from[i] > from ? s->from[i] : from;
        int64_t b = s->to[i] < to ? s->to[i] : to;
        if (b > a)
            covered += b - a;
        if (s->from[i] < lo)
            lo = s->from[i];
        if (s->to[i] > hi)
            hi = s->to[i];
    }
    if (!placed)
        at = w++;
    nf[at] = lo;
    nt[at] = hi;
    uint8_t first = 0;
    if (w > AN_SPAN_PARTS) { /* give up the earliest part */
        s->floor = nt[0];
        first = 1;
    }
    s->n = 0;
    for (uint8_t i = first; i < w; i++) {
        s->from[s->n] = nf[i];
        s->to[s->n++] = nt[i];
    }
    int64_t added = (to - from) - covered;
    s->total += added;
    return added;
}
