/*
 * test_redact.c - --redact-keys resists a dictionary attack (issue 15, item 1).
 *
 * The attacker holds a redacted database and a word list (Debian's
 * /usr/share/dict/words when installed, plus the real keys of the capture:
 * the best guesses anyone could have). They hash every word with every key
 * the database could give away: the old published seed of slotscope's
 * FNV-1a + splitmix64 redaction and every number stored in the database (a
 * user's `redact_seed` sat in meta.command_line and meta.settings), and keyed
 * BLAKE2b under an all-zero key and under every 64-hex-digit text stored. No
 * hash may match a redacted key of the database. Also: a key file gives the
 * same hashes on two runs, no key file different ones, the key never reaches
 * the database, `--set redact_seed` is refused, a key file others may read is
 * refused.
 *
 * SLOTSCOPE_TEST_BINARY (environment) runs another binary instead of the one
 * built (to show that the test fails on an older one).
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <sodium.h>
#include <sqlite3.h>

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"

#define CAPTURE SS_FIXTURES "/cluster/reshard.pcap"
#define PREFIX 64 /* bytes of a key that slotscope keeps (RESP_ARG_PREFIX) */

static char tmpdir[256];
static th_run last;

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_redact", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    th_run_free(&last);
    return th_tmpdir_remove(tmpdir);
}

static const char *tmp(const char *name)
{
    return th_path(tmpdir, name);
}

/* Run the binary under test; its exit code. */
static int run_args(const char *const *args)
{
    int code = th_run_binary(&last, SS_BINARY, args, NULL, NULL, 0);
    assert_int_not_equal(code, -2);
    return code;
}
#define run(...) run_args((const char *const[]){__VA_ARGS__, NULL})

/* A growing list of strings. */
typedef struct strlist {
    char **v;
    size_t n, cap;
} strlist;

static void list_add(strlist *l, const char *s, size_t len)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    l->v[l->n] = malloc(len + 1);
    assert_non_null(l->v[l->n]);
    memcpy(l->v[l->n], s, len);
    l->v[l->n][len] = 0;
    l->n++;
}

static void list_free(strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int list_has(const strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], s))
            return 1;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* list_has on a list sorted with list_sort. */
static void list_sort(strlist *l)
{
    qsort(l->v, l->n, sizeof *l->v, cmp_str);
}

static int sorted_has(const strlist *l, const char *s)
{
    return l->n && bsearch(&s, l->v, l->n, sizeof *l->v, cmp_str) != NULL;
}

/* Every text value of every table of the database at path (or only of the
 * table `only` when not NULL), one string each. */
static void db_texts_of(const char *path, const char *only, strlist *out)
{
    sqlite3 *db;
    sqlite3_stmt *tables, *rows;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'",
                                        -1, &tables, NULL), SQLITE_OK);
    while (sqlite3_step(tables) == SQLITE_ROW) {
        char sql[256];
        if (only && strcmp((const char *)sqlite3_column_text(tables, 0), only))
            continue;
        snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", sqlite3_column_text(tables, 0));
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &rows, NULL), SQLITE_OK);
        while (sqlite3_step(rows) == SQLITE_ROW)
            for (int c = 0; c < sqlite3_column_count(rows); c++) {
                const unsigned char *t = sqlite3_column_text(rows, c);
                if (t)
                    list_add(out, (const char *)t, strlen((const char *)t));
            }
        sqlite3_finalize(rows);
    }
    sqlite3_finalize(tables);
    sqlite3_close(db);
}

static void db_texts(const char *path, strlist *out)
{
    db_texts_of(path, NULL, out);
}

/* The distinct "h:<16 hex>" tokens in texts. */
static void redacted_tokens(const strlist *texts, strlist *out)
{
    for (size_t i = 0; i < texts->n; i++)
        for (const char *p = strstr(texts->v[i], "h:"); p; p = strstr(p + 2, "h:")) {
            size_t n = 0;
            while (n < 16 && isxdigit((unsigned char)p[2 + n]) && !isupper((unsigned char)p[2 + n]))
                n++;
            if (n == 16 && !isxdigit((unsigned char)p[18]) && !list_has(out, p))
                list_add(out, p, 18);
        }
}

/* Every run of digits (decimal) and of hex digits after "0x" in texts: the
 * seeds an attacker would try. */
static void numbers_in(const strlist *texts, uint64_t *seeds, size_t max, size_t *n)
{
    for (size_t i = 0; i < texts->n; i++)
        for (const char *p = texts->v[i]; *p && *n < max; p++) {
            if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2])) {
                char *end;
                seeds[(*n)++] = strtoull(p + 2, &end, 16);
                p = end - 1;
            } else if (isdigit((unsigned char)*p) && (p == texts->v[i] || !isdigit((unsigned char)p[-1]))) {
                char *end;
                seeds[(*n)++] = strtoull(p, &end, 10);
                p = end - 1;
            }
        }
}

/* Every 64-hex-digit run in texts, as a 32-byte key. */
static size_t hex_keys_in(const strlist *texts, uint8_t (*keys)[32], size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < texts->n; i++)
        for (const char *p = texts->v[i]; *p && n < max; p++) {
            size_t len = 0;
            while (isxdigit((unsigned char)p[len]))
                len++;
            if (len == 64)
                for (int b = 0; b < 32; b++) {
                    char byte[3] = {p[2 * b], p[2 * b + 1], 0};
                    keys[n][b] = (uint8_t)strtoul(byte, NULL, 16);
                }
            n += len == 64;
            p += len ? len - 1 : 0;
        }
    return n;
}

/* slotscope's redaction before issue 15 (published, so any attacker has it):
 * FNV-1a seeded, splitmix64's finaliser, the full length in the seed. */
static uint64_t old_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static void old_redact(uint64_t seed, const char *key, size_t full_len, char out[32])
{
    size_t len = full_len < PREFIX ? full_len : PREFIX;
    uint64_t s = seed ^ ((uint64_t)full_len << 32);
    uint64_t h = 0xcbf29ce484222325ull ^ (s * 0x9e3779b97f4a7c15ull);
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)key[i];
        h *= 0x100000001b3ull;
    }
    snprintf(out, 32, "h:%016llx", (unsigned long long)old_mix(h ^ (uint64_t)len));
}

/* Keyed BLAKE2b of the full length (4 bytes LE) and the prefix, 8 bytes shown. */
static void blake_redact(const uint8_t key[32], const char *word, size_t full_len, char out[32])
{
    uint8_t msg[4 + PREFIX], h[16];
    size_t len = full_len < PREFIX ? full_len : PREFIX;
    for (int i = 0; i < 4; i++)
        msg[i] = (uint8_t)(full_len >> (8 * i));
    memcpy(msg + 4, word, len);
    crypto_generichash(h, sizeof h, msg, 4 + len, key, 32);
    snprintf(out, 32, "h:%02x%02x%02x%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3], h[4], h[5],
             h[6], h[7]);
}

/* The real keys of the capture: its commands' keys without redaction. */
static void real_keys(strlist *out)
{
    const char *db = tmp("plain.db");
    sqlite3 *h;
    sqlite3_stmt *st;
    assert_int_equal(run("analyze", CAPTURE, "--db", db, "--store-commands", "-q"), 0);
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT DISTINCT key FROM commands WHERE key <> ''",
                                        -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        list_add(out, (const char *)sqlite3_column_text(st, 0),
                 (size_t)sqlite3_column_bytes(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* Words of /usr/share/dict/words (when there) then the real keys. */
static void word_list(strlist *words, const strlist *keys)
{
    FILE *f = fopen("/usr/share/dict/words", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        list_add(words, line, strcspn(line, "\r\n"));
    if (f)
        fclose(f);
    for (size_t i = 0; i < keys->n; i++)
        list_add(words, keys->v[i], strlen(keys->v[i]));
}

/* How many words hash to a token under any candidate seed or key. */
static size_t attack(const strlist *words, const strlist *tokens, const uint64_t *seeds,
                     size_t n_seeds, const uint8_t (*keys)[32], size_t n_keys)
{
    size_t found = 0;
    char h[32];
    for (size_t w = 0; w < words->n; w++) {
        const char *word = words->v[w];
        size_t len = strlen(word);
        int hit = 0;
        for (size_t s = 0; s < n_seeds && !hit; s++) {
            old_redact(seeds[s], word, len, h);
            hit = sorted_has(tokens, h);
        }
        for (size_t k = 0; k < n_keys && !hit; k++) {
            blake_redact(keys[k], word, len, h);
            hit = sorted_has(tokens, h);
        }
        found += (size_t)hit;
    }
    return found;
}

/* The dictionary attack finds no key, with the seeds and keys the database
 * holds; the same attack does find a key hashed under one of them (so it is
 * a real attack), and no real key is stored in clear. */
static void test_dictionary_attack(void **state)
{
    (void)state;
    assert_true(sodium_init() >= 0);
    strlist keys = {0}, words = {0}, texts = {0}, tokens = {0};
    real_keys(&keys);
    assert_int_equal(keys.n, 68);
    word_list(&words, &keys);

    const char *db = tmp("redacted.db");
    assert_int_equal(run("analyze", CAPTURE, "--db", db, "--redact-keys", "--store-commands",
                         "-q"), 0);
    db_texts(db, &texts);
    redacted_tokens(&texts, &tokens);
    assert_true(tokens.n >= 68);
    for (size_t i = 0; i < texts.n; i++)
        for (size_t k = 0; k < keys.n; k++)
            if (strlen(keys.v[k]) >= 6 && strstr(texts.v[i], keys.v[k]))
                fail_msg("key '%s' stored in clear: %s", keys.v[k], texts.v[i]);

    /* seeds: the old default, 0, and every number in meta (command line,
     * settings, where a chosen seed was stored) */
    strlist meta = {0};
    db_texts_of(db, "meta", &meta);
    uint64_t seeds[512] = {0x736c6f7473636f70ull, 0};
    size_t n_seeds = 2;
    numbers_in(&meta, seeds, sizeof seeds / sizeof seeds[0], &n_seeds);
    list_free(&meta);
    list_sort(&tokens);
    static uint8_t hex_keys[64][32]; /* [0] stays the all-zero key */
    size_t n_keys = 1 + hex_keys_in(&texts, hex_keys + 1, 63);

    size_t found = attack(&words, &tokens, seeds, n_seeds, (const uint8_t(*)[32])hex_keys, n_keys);
    if (found)
        fail_msg("the dictionary attack reversed %zu of %zu redacted keys", found, tokens.n);

    /* the attack itself works: a key hashed under a candidate is found */
    strlist planted = {0};
    char h[32];
    blake_redact(hex_keys[0], keys.v[7], strlen(keys.v[7]), h);
    list_add(&planted, h, strlen(h));
    old_redact(seeds[0], keys.v[9], strlen(keys.v[9]), h);
    list_add(&planted, h, strlen(h));
    list_sort(&planted);
    assert_int_equal(attack(&words, &planted, seeds, 1, (const uint8_t(*)[32])hex_keys, 1), 2);

    list_free(&planted);
    list_free(&keys);
    list_free(&words);
    list_free(&texts);
    list_free(&tokens);
}

/* The commands' redacted keys of a run, in order, as one text. */
static char *redacted_keys_of(const char *db)
{
    strlist texts = {0};
    size_t size = 1, used = 0;
    sqlite3 *h;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT key FROM commands WHERE key <> '' ORDER BY rowid",
                                        -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        list_add(&texts, (const char *)sqlite3_column_text(st, 0),
                 (size_t)sqlite3_column_bytes(st, 0));
        size += (size_t)sqlite3_column_bytes(st, 0) + 1;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    char *all = calloc(1, size);
    assert_non_null(all);
    for (size_t i = 0; i < texts.n; i++)
        used += (size_t)sprintf(all + used, "%s\n", texts.v[i]);
    list_free(&texts);
    return all;
}

/* Write a key file with the given mode. */
static void write_key(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static const char key_hex[] = "00112233445566778899aabbccddeeff0123456789abcdeffedcba9876543210";

/* Same key file, same hashes; no key file, a new key each run; the key is in
 * no text of the database; a key file others can read, a bad key file and
 * --set redact_seed are usage errors. */
static void test_key_file(void **state)
{
    (void)state;
    const char *key = tmp("incident.key");
    write_key(key, key_hex, 0600);
    const char *a = tmp("a.db"), *b = tmp("b.db"), *c = tmp("c.db"), *d = tmp("d.db");
    assert_int_equal(run("analyze", CAPTURE, "--db", a, "--redact-key-file", key,
                         "--store-commands", "-q"), 0);
    assert_int_equal(run("analyze", CAPTURE, "--db", b, "--redact-key-file", key,
                         "--store-commands", "-q"), 0);
    assert_int_equal(run("analyze", CAPTURE, "--db", c, "--redact-keys", "--store-commands",
                         "-q"), 0);
    assert_int_equal(run("analyze", CAPTURE, "--db", d, "--redact-keys", "--store-commands",
                         "-q"), 0);
    char *ka = redacted_keys_of(a), *kb = redacted_keys_of(b);
    char *kc = redacted_keys_of(c), *kd = redacted_keys_of(d);
    assert_true(strlen(ka) > 68 * 19);
    assert_string_equal(ka, kb);
    assert_string_not_equal(ka, kc);
    assert_string_not_equal(kc, kd);
    free(ka);
    free(kb);
    free(kc);
    free(kd);

    strlist texts = {0};
    db_texts(a, &texts);
    for (size_t i = 0; i < texts.n; i++) {
        assert_null(strstr(texts.v[i], key_hex));
        assert_null(strstr(texts.v[i], "0011223344556677"));
    }
    assert_int_equal(th_db_int(a, "SELECT count(*) FROM meta WHERE key = 'redact_key'"
                                  " AND value = 'file'"), 1);
    list_free(&texts);

    write_key(tmp("open.key"), key_hex, 0644);
    assert_int_equal(run("analyze", CAPTURE, "--redact-key-file", tmp("open.key"), "-q"), 2);
    assert_non_null(strstr(last.err, "chmod 600"));
    assert_null(strstr(last.err, "0011"));
    write_key(tmp("short.key"), "0011", 0600);
    assert_int_equal(run("analyze", CAPTURE, "--redact-key-file", tmp("short.key"), "-q"), 2);
    assert_non_null(strstr(last.err, "32 bytes"));
    assert_int_equal(run("analyze", CAPTURE, "--db", tmp("e.db"), "--redact-keys", "--set",
                         "redact_seed=12345", "-q"), 2);
    assert_non_null(strstr(last.err, "--redact-key-file"));
    struct stat sb;
    assert_int_not_equal(stat(tmp("e.db"), &sb), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dictionary_attack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
