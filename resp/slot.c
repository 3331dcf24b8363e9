/*
 * slot.c - Redis Cluster hash slots.
 *
 * slot = CRC16(key) mod 16384, CRC16-CCITT in its XMODEM variant (poly 0x1021,
 * init 0, no reflection, no final xor; check value for "123456789" is 0x31C3).
 * Hash tags: if the key holds a '{' and a later '}' with at least one byte
 * between them, only the bytes between the first '{' and the first '}' after it
 * are hashed, so "{user1}.a" and "{user1}.b" share a slot, "foo{}{bar}" hashes
 * whole and "foo{{bar}}zap" hashes "{bar". (Redis Cluster specification, "Keys
 * distribution model".)
 *
 * The incremental hasher exists because keys may arrive split across packets
 * and may be long: it keeps two running CRCs (whole key, and tag so far) and
 * never needs the key in one piece.
 */
#include <string.h>

#include "resp/crc16_tables_internal.h"
#include "resp/resp_internal.h"

/* Continue a CRC16-XMODEM over n bytes: eight bytes per step with the
 * sliced tables (independent lookups instead of a chain of eight), then the
 * last n < 8 bytes the same way in one step: byte i of the m left is
 * followed by m-1-i bytes, so it is looked up in table m-1-i. For a 16-bit
 * CRC the state folds into the first two bytes (one byte alone: the state's
 * low byte moves up). Short keys and hash tags ("{06S}") are all tail: a
 * chain of one dependent lookup per byte was most of their cost. */
static inline uint16_t crc16_update(uint16_t crc, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        crc = (uint16_t)(crc16_table[7][(crc >> 8) ^ p[0]] ^ crc16_table[6][(crc & 0xff) ^ p[1]] ^
                         crc16_table[5][p[2]] ^ crc16_table[4][p[3]] ^ crc16_table[3][p[4]] ^
                         crc16_table[2][p[5]] ^ crc16_table[1][p[6]] ^ crc16_table[0][p[7]]);
        p += 8;
        n -= 8;
    }
    if (n == 0)
        return crc;
    if (n == 1)
        return (uint16_t)((crc << 8) ^ crc16_table[0][(crc >> 8) ^ p[0]]);
    uint16_t r = (uint16_t)(crc16_table[n - 1][(crc >> 8) ^ p[0]] ^
                            crc16_table[n - 2][(crc & 0xff) ^ p[1]]);
    const uint8_t *q = p + n; /* the last byte is q[-1], in table 0 */
    switch (n) {
    case 7:
        r ^= crc16_table[4][q[-5]];
        /* fall through */
    case 6:
        r ^= crc16_table[3][q[-4]];
        /* fall through */
    case 5:
        r ^= crc16_table[2][q[-3]];
        /* fall through */
    case 4:
        r ^= crc16_table[1][q[-2]];
        /* fall through */
    case 3:
        r ^= crc16_table[0][q[-1]];
        break;
    default: /* 2: both bytes folded above */
        break;
    }
    return r;
}

void resp_slot_init(resp_slot_hasher *h)
{
    h->crc_all = 0;
    h->crc_tag = 0;
    h->tag_len = 0;
    h->state = 0;
}

/* Feed the next piece of a key. The tag CRC only covers bytes after the first
 * '{' up to (not including) the first '}' after it. */
void resp_slot_update(resp_slot_hasher *h, const uint8_t *p, size_t n)
{
    h->crc_all = crc16_update(h->crc_all, p, n);
    if (h->state == 2)
        return;
    const uint8_t *q = p;
    const uint8_t *end = p + n;
    if (h->state == 0) {
        q = memchr(p, '{', n);
        if (q == NULL)
            return;
        h->state = 1;
        q++; /* past the '{' */
    }
    const uint8_t *close = memchr(q, '}', (size_t)(end - q));
    const uint8_t *stop = close ? close : end;
    h->crc_tag = crc16_update(h->crc_tag, q, (size_t)(stop - q));
    h->tag_len += (uint32_t)(stop - q);
    if (close != NULL)
        h->state = 2; /* found the closing '}' */
}

uint16_t resp_slot_final(const resp_slot_hasher *h)
{
    if (h->state == 2 && h->tag_len > 0)
        return h->crc_tag & 16383;
    return h->crc_all & 16383;
}

/* The whole key is at hand: find the tag first, then run one CRC over only
 * the bytes that count (the incremental hasher has to run two). Tags are
 * mostly a few bytes ("key:{06S}:000000849830"): the '}' is looked for byte
 * by byte over the first SHORT_TAG bytes, eight at a time after that. */
#define SHORT_TAG 16
static __attribute__((noinline)) uint16_t key_slot_scalar(const uint8_t *key, size_t len)
{
    size_t open = len > 2 ? rd_find_byte(key, len, '{') : len;
    if (open < len) {
        size_t from = open + 1;
        size_t stop = len - from < SHORT_TAG ? len : from + SHORT_TAG;
        size_t close = from;
        while (close < stop && key[close] != '}')
            close++;
        if (close == stop && stop < len)
            close += rd_find_byte(key + close, len - close, '}');
        if (close < len && close > from)
            return crc16_update(0, key + from, close - from) & 16383;
    }
    return crc16_update(0, key, len) & 16383;
}

/* The vector path: SSE2 compares, and word loads read as little-endian
 * (x86-64 is both). */
#if defined(__SSE2__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SLOT_VECTOR 1
#include <emmintrin.h>

/* CRC16 (from state 0) of the n (1..W) bytes at p, W = 4 or 8, when W bytes
 * are readable there: they are loaded as one word and shifted up by W - n
 * bytes, which drops the bytes past the run and puts zero bytes ahead of it
 * (zero bytes ahead of a CRC from 0 leave it 0); each byte is then looked up
 * in the table of how many bytes follow it. One lookup per byte and no
 * branch on n: tags are mostly 2 or 3 bytes ("{8M}", "{06S}"), and a jump on
 * their length mispredicts between them. */
static inline uint16_t crc16_short4(const uint8_t *p, size_t n)
{
    uint32_t w;
    memcpy(&w, p, 4);
    w <<= 8 * (4 - n); /* little-endian: byte i of the load at bits 8i */
    return (uint16_t)(crc16_table[3][w & 0xff] ^ crc16_table[2][(w >> 8) & 0xff] ^
                      crc16_table[1][(w >> 16) & 0xff] ^ crc16_table[0][w >> 24]);
}

static inline uint16_t crc16_short8(const uint8_t *p, size_t n)
{
    uint64_t w;
    memcpy(&w, p, 8);
    w <<= 8 * (8 - n);
    uint32_t lo = (uint32_t)w, hi = (uint32_t)(w >> 32);
    return (uint16_t)(crc16_table[7][lo & 0xff] ^ crc16_table[6][(lo >> 8) & 0xff] ^
                      crc16_table[5][(lo >> 16) & 0xff] ^ crc16_table[4][lo >> 24] ^
                      crc16_table[3][hi & 0xff] ^ crc16_table[2][(hi >> 8) & 0xff] ^
                      crc16_table[1][(hi >> 16) & 0xff] ^ crc16_table[0][hi >> 24]);
}

/* Slot of the tag key[from, end) of a key of len bytes (0 < from < end <=
 * len): a short one with a word load that stays inside the key. */
static inline uint16_t tag_slot(const uint8_t *key, size_t len, size_t from, size_t end)
{
    size_t n = end - from;
    if (n <= 4 && from + 4 <= len)
        return crc16_short4(key + from, n) & 16383;
    if (n <= 8 && from + 8 <= len)
        return crc16_short8(key + from, n) & 16383;
    return crc16_update(0, key + from, n) & 16383;
}

/* Bit i set where byte i of v is the byte in every lane of b. */
static inline uint64_t lanes_equal(__m128i v, __m128i b)
{
    return (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, b));
}

/* The tag that brace masks of a key of at most 64 bytes show: sets *from
 * and *end (the tag is key[*from, *end)) and returns 1, or returns 0 when
 * there is none (no '{', no '}' after the first, or nothing between them). */
static inline int tag_of(uint64_t open, uint64_t close, unsigned *from, unsigned *end)
{
    if (open == 0)
        return 0;
    unsigned f = (unsigned)__builtin_ctzll(open) + 1;
    uint64_t after = f < 64 ? close & (~0ull << f) : 0;
    if (after == 0)
        return 0;
    unsigned e = (unsigned)__builtin_ctzll(after);
    *from = f;
    *end = e;
    return e > f;
}

/* resp_key_slot for keys of 8..64 bytes (nearly all of them): the braces
 * found with a few vector compares instead of a scan per brace, since every
 * keyed command needs its slot, as bit masks (bit i: key[i] is '{' in open,
 * '}' in close). Two 8-byte loads for a key under 16 bytes; 16-byte loads at
 * 0, 16, 32 and one ending at the key's end for a longer one: the last load
 * overlaps the one before, and a position marked twice is still one bit. No
 * load leaves [key, key + len). A tag inside the first 16 bytes (the first
 * '{' there and a '}' after it there: the same braces the whole key shows)
 * needs the first load only ("key:{8M}}:000000219660"). SSE2 is part of
 * x86-64 itself: no build flag. */
static inline uint16_t key_slot_vector(const uint8_t *key, size_t len)
{
    const __m128i ob = _mm_set1_epi8('{'), cb = _mm_set1_epi8('}');
    uint64_t open, close;
    unsigned from, end;
    if (len < 16) {
        __m128i lo = _mm_loadl_epi64((const __m128i *)key);
        __m128i hi = _mm_loadl_epi64((const __m128i *)(key + len - 8));
        /* the upper 8 lanes of an 8-byte load are zero: never a brace */
        open = lanes_equal(lo, ob) | lanes_equal(hi, ob) << (len - 8);
        close = lanes_equal(lo, cb) | lanes_equal(hi, cb) << (len - 8);
    } else {
        __m128i v = _mm_loadu_si128((const __m128i *)key);
        open = lanes_equal(v, ob);
        close = lanes_equal(v, cb);
        if (tag_of(open, close, &from, &end))
            return tag_slot(key, len, from, end);
        size_t i = 16;
        for (; i + 16 <= len; i += 16) {
            v = _mm_loadu_si128((const __m128i *)(key + i));
            open |= lanes_equal(v, ob) << i;
            close |= lanes_equal(v, cb) << i;
        }
        if (i < len) {
            v = _mm_loadu_si128((const __m128i *)(key + len - 16));
            open |= lanes_equal(v, ob) << (len - 16);
            close |= lanes_equal(v, cb) << (len - 16);
        } else if (len == 16) {
            return crc16_update(0, key, len) & 16383; /* its masks said no tag */
        }
    }
    if (tag_of(open, close, &from, &end))
        return tag_slot(key, len, from, end);
    return crc16_update(0, key, len) & 16383;
}
#endif

uint16_t resp_key_slot(const uint8_t *key, size_t len)
{
#if defined(SLOT_VECTOR)
    if (len >= 8 && len <= 64)
        return key_slot_vector(key, len);
#endif
    return key_slot_scalar(key, len);
}
