/*
 * test_resp_slot.c - CRC16-XMODEM and hash slots (resp/slot.c).
 *
 * Facts from the Redis Cluster specification: CRC16 check value 0x31C3 for
 * "123456789"; the {hashtag} rule and its corner cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "resp/resp.h"

/* Slot of a C string. */
static uint16_t slot_of(const char *s)
{
    return resp_key_slot((const uint8_t *)s, strlen(s));
}

static void test_check_value(void **state)
{
    (void)state;
    /* 0x31C3 < 16384, so the slot is the CRC itself */
    assert_int_equal(slot_of("123456789"), 0x31C3);
    /* values Redis documents / CLUSTER KEYSLOT returns */
    assert_int_equal(slot_of("foo"), 12182);
    assert_int_equal(slot_of("bar"), 5061);
    assert_int_equal(slot_of("somekey"), 11058);
    assert_int_equal(slot_of(""), 0);
}

static void test_hashtags(void **state)
{
    (void)state;
    assert_int_equal(slot_of("{user1}.a"), slot_of("user1"));
    assert_int_equal(slot_of("{user1}.b"), slot_of("user1"));
    assert_int_equal(slot_of("x{user1}y"), slot_of("user1"));
    /* empty tag: the whole key is hashed */
    assert_int_equal(slot_of("foo{}{bar}"), resp_key_slot((const uint8_t *)"foo{}{bar}", 10));
    assert_int_not_equal(slot_of("foo{}{bar}"), slot_of("bar"));
    /* first '{' and the first '}' after it */
    assert_int_equal(slot_of("foo{{bar}}zap"), slot_of("{bar"));
    assert_int_equal(slot_of("foo{bar}{zap}"), slot_of("bar"));
    /* no closing brace: whole key */
    assert_int_not_equal(slot_of("foo{bar"), slot_of("bar"));
    assert_int_equal(slot_of("{a}"), slot_of("a"));
    assert_int_equal(slot_of("}{a}"), slot_of("a"));
}

/* Incremental hashing equals whole-key hashing for every split point (two and
 * three pieces) of a set of keys. */
static void test_incremental_every_split(void **state)
{
    (void)state;
    const char *keys[] = {"123456789", "{user1}.a", "foo{}{bar}", "foo{{bar}}zap",
                          "foo{bar}{zap}", "{", "}", "{}", "a{b}c", "no-tag-here-at-all",
                          "{long-tag-0123456789abcdef}tail", "x{y", "{{}}"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const uint8_t *p = (const uint8_t *)keys[k];
        size_t n = strlen(keys[k]);
        uint16_t whole = resp_key_slot(p, n);
        for (size_t i = 0; i <= n; i++) {
            for (size_t j = i; j <= n; j++) {
                resp_slot_hasher h;
                resp_slot_init(&h);
                resp_slot_update(&h, p, i);
                resp_slot_update(&h, p + i, j - i);
                resp_slot_update(&h, p + j, n - j);
                assert_int_equal(resp_slot_final(&h), whole);
            }
        }
    }
}

/* resp_key_slot finds '{' and '}' eight or sixteen bytes at a time (keys of
 * 8..64 bytes with vector compares, overlapping loads at the end; others
 * eight at a time): with the braces at every position of keys of 1..72
 * bytes, over filler bytes that sit next to
 * them in value (0x7a, 0x7c, 0x7e, 0xfb, 0xfd, 0x00, 0xff), it agrees with
 * the incremental hasher (which searches byte by byte with memchr). */
static void test_whole_key_brace_positions(void **state)
{
    (void)state;
    const uint8_t fillers[] = {'a', 0x7a, 0x7c, 0x7e, 0xfb, 0xfd, 0x00, 0xff};
    uint8_t k[72];
    for (size_t f = 0; f < sizeof fillers; f++) {
        for (size_t n = 1; n <= sizeof k; n++) {
            for (size_t o = 0; o <= n; o++) {
                for (size_t c = 0; c <= n; c++) {
                    for (size_t i = 0; i < n; i++)
                        k[i] = (uint8_t)(fillers[f] + (i % 3 == 2)); /* not all alike */
                    if (o < n)
                        k[o] = '{';
                    if (c < n && c != o)
                        k[c] = '}';
                    resp_slot_hasher h;
                    resp_slot_init(&h);
                    resp_slot_update(&h, k, n);
                    assert_int_equal(resp_key_slot(k, n), resp_slot_final(&h));
                }
            }
        }
    }
}

/* Keys of 0..80 bytes drawn from "{}ab" (so several braces, empty tags and
 * braces in every order), a fixed pseudo-random sequence: resp_key_slot
 * agrees with the incremental hasher on each. */
static void test_random_brace_keys(void **state)
{
    (void)state;
    const uint8_t alphabet[] = {'{', '}', 'a', 'b'};
    uint8_t k[80];
    uint32_t x = 12345;
    for (int round = 0; round < 20000; round++) {
        x = x * 1103515245u + 12345u;
        size_t n = (x >> 16) % (sizeof k + 1);
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            k[i] = alphabet[(x >> 16) & 3];
        }
        resp_slot_hasher h;
        resp_slot_init(&h);
        resp_slot_update(&h, k, n);
        assert_int_equal(resp_key_slot(k, n), resp_slot_final(&h));
    }
}

/* CRC16-XMODEM one bit at a time, straight from its definition (poly
 * 0x1021, MSB first, init 0): the reference for the table-driven code. */
static uint16_t crc16_bitwise(const uint8_t *p, size_t n)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

/* Keys of every length up to 80 (pseudo-random bytes without braces) hash
 * as the bitwise CRC says, and so do tags of every length up to 40 inside
 * them: every way the sliced steps and the short tail can split a run. */
static void test_crc_every_length(void **state)
{
    (void)state;
    uint8_t k[96] = {0};
    uint32_t x = 12345;
    for (size_t n = 0; n <= 80; n++) {
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            k[i] = (uint8_t)(x >> 16);
            if (k[i] == '{' || k[i] == '}')
                k[i] = 'k';
        }
        assert_int_equal(resp_key_slot(k, n), crc16_bitwise(k, n) & 16383);
        if (n >= 1 && n <= 40) { /* the same bytes as a tag: "ab{<n>}cd" */
            uint8_t t[96];
            memcpy(t, "ab{", 3);
            memcpy(t + 3, k, n);
            memcpy(t + 3 + n, "}cd", 3);
            assert_int_equal(resp_key_slot(t, n + 6), crc16_bitwise(k, n) & 16383);
            resp_slot_hasher h;
            resp_slot_init(&h);
            for (size_t i = 0; i < n + 6; i++)
                resp_slot_update(&h, t + i, 1);
            assert_int_equal(resp_slot_final(&h), crc16_bitwise(k, n) & 16383);
        }
    }
}

/* The slot by the specification's words, byte by byte: the first '{', the
 * first '}' after it, and the bitwise CRC of what lies between when that is
 * not empty, else of the whole key. */
static uint16_t slot_by_definition(const uint8_t *k, size_t n)
{
    size_t open = 0;
    while (open < n && k[open] != '{')
        open++;
    if (open < n) {
        size_t close = open + 1;
        while (close < n && k[close] != '}')
            close++;
        if (close < n && close > open + 1)
            return crc16_bitwise(k + open + 1, close - open - 1) & 16383;
    }
    return crc16_bitwise(k, n) & 16383;
}

/* Keys of every length 0..300 of random bytes (braces among them one time
 * in eight), and for each length keys of random bytes without braces but
 * a tag of 0..12 bytes ("{}", "{x}" ...) at every position: resp_key_slot
 * agrees with the definition. Short tags take the word loads (1..4 and 5..8 bytes,
 * near either end of the key), longer ones and empty ones the other paths. */
static void test_tags_every_length_and_place(void **state)
{
    (void)state;
    uint8_t k[300] = {0};
    uint32_t x = 777;
    for (size_t n = 0; n <= sizeof k; n++) {
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            uint8_t b = (uint8_t)(x >> 16);
            k[i] = (x >> 29) == 0 ? (b & 1 ? '{' : '}') : b;
        }
        assert_int_equal(resp_key_slot(k, n), slot_by_definition(k, n));
        for (size_t t = 0; t <= 12 && t + 2 <= n; t++) {
            for (size_t at = 0; at + t + 2 <= n; at++) {
                uint8_t c[300];
                for (size_t i = 0; i < n; i++) {
                    x = x * 1103515245u + 12345u;
                    c[i] = (uint8_t)(x >> 16);
                    if (c[i] == '{' || c[i] == '}')
                        c[i] = 'k';
                }
                c[at] = '{';
                c[at + t + 1] = '}';
                uint16_t want = slot_by_definition(c, n);
                assert_int_equal(resp_key_slot(c, n), want);
                if (t > 0)
                    assert_int_equal(want, crc16_bitwise(c + at + 1, t) & 16383);
            }
        }
    }
}

/* A long key fed one byte at a time. */
static void test_long_key(void **state)
{
    (void)state;
    size_t n = 100000;
    uint8_t *k = malloc(n);
    assert_non_null(k);
    for (size_t i = 0; i < n; i++)
        k[i] = (uint8_t)('a' + (i * 7) % 26);
    k[50000] = '{';
    k[50010] = '}';
    resp_slot_hasher h;
    resp_slot_init(&h);
    for (size_t i = 0; i < n; i++)
        resp_slot_update(&h, k + i, 1);
    assert_int_equal(resp_slot_final(&h), resp_key_slot(k + 50001, 9));
    assert_int_equal(resp_slot_final(&h), resp_key_slot(k, n));
    free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_value),
        cmocka_unit_test(test_hashtags),
        cmocka_unit_test(test_incremental_every_split),
        cmocka_unit_test(test_whole_key_brace_positions),
        cmocka_unit_test(test_random_brace_keys),
        cmocka_unit_test(test_crc_every_length),
        cmocka_unit_test(test_tags_every_length_and_place),
        cmocka_unit_test(test_long_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
