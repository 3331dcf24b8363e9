/*
 * util.c - PRNG, key slots, growable buffers for ss-gen.
 *
 * xoshiro256** and splitmix64: https://prng.di.unimi.it/ (algorithms only).
 * Key slots: Redis Cluster spec, "Keys distribution model": CRC16-XMODEM of the
 * key (or of its {hashtag}) mod 16384; check value CRC16("123456789") = 0x31C3.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* One splitmix64 step: spreads a seed over the xoshiro state. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Seed the generator; the same seed always gives the same stream. */
void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

/* Rotate left. */
static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Next 64 random bits (xoshiro256**). */
uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, n): the high 32 bits scaled (Lemire), bias below 2^-32. */
uint32_t rng_below(rng *r, uint32_t n)
{
    return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Uniform in [lo, hi]. */
uint32_t rng_range(rng *r, uint32_t lo, uint32_t hi)
{
    return lo + rng_below(r, hi - lo + 1);
}

/* Uniform in [0, 1) with 53 bits. */
double rng_unit(rng *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static uint16_t crc16_table[256];

/* Build the CRC16-XMODEM table (polynomial 0x1021, init 0) once. */
static void crc16_init(void)
{
    for (int i = 0; i < 256; i++) {
        uint16_t c = (uint16_t)(i << 8);
        for (int b = 0; b < 8; b++)
            c = (uint16_t)((c & 0x8000) ? (c << 1) ^ 0x1021 : c << 1);
        crc16_table[i] = c;
    }
}

/* CRC16-XMODEM of n bytes. */
static uint16_t crc16(const char *p, size_t n)
{
    if (crc16_table[1] == 0)
        crc16_init();
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++)
        crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ (uint8_t)p[i]) & 0xff]);
    return crc;
}

/* Hash slot: if the key has a '{' and a later '}' with at least one byte
 * between them, only those bytes are hashed (the hash tag). */
uint16_t key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return crc16(open + 1, (size_t)(close - open - 1)) & 16383;
    }
    return crc16(key, len) & 16383;
}

/* FNV-1a, 32 bits. */
uint32_t fnv1a(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)p[i];
        h *= 16777619u;
    }
    return h;
}

/* Make room for extra more bytes: grow geometrically. */
void gbuf_reserve(gbuf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        die("out of memory (%zu bytes)", cap);
    b->p = p;
    b->cap = cap;
}

/* Append n bytes. */
void gbuf_put(gbuf *b, const void *p, size_t n)
{
    gbuf_reserve(b, n);
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* Free the buffer's memory. */
void gbuf_free(gbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Decimal digits of v, written backwards then reversed. */
size_t fmt_u64(char *out, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* Report a fatal problem and exit with status 2. */
void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ss-gen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}
