/*
 * test_review_fixes.c - crafted captures for smaller items of issue 15, the
 * slotscope binary end to end:
 * - item 8: a MIGRATE answered +NOKEY moved no key and opens no migration
 *   (one answered +OK does, as a control);
 * - item 12: time_backwards says one number everywhere (the warning, the
 *   inputs table, the counters table and the report);
 * - item 9: a pcapng whose interfaces have different link types
 *   (tests/fixtures/cli/mixed-linktypes.pcapng) is read whole, as its two
 *   source captures are.
 *
 * SLOTSCOPE_TEST_BINARY (environment) runs another binary instead of the one
 * built (to show that the test fails on an older one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"
#include "tests/helpers/pktgen.h"

#define T0 1700000000000000LL

static char tmpdir[256];
static th_run last;

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_review", tmpdir, sizeof tmpdir);
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

static int run_args(const char *const *args)
{
    int code = th_run_binary(&last, SS_BINARY, args, NULL, NULL, 0);
    assert_int_not_equal(code, -2);
    return code;
}
#define run(...) run_args((const char *const[]){__VA_ARGS__, NULL})

/* A RESP array of the NULL-terminated words, into buf. Its length. */
static size_t resp_array(char *buf, size_t size, const char *const *words)
{
    size_t n = 0, o;
    while (words[n])
        n++;
    o = (size_t)snprintf(buf, size, "*%zu\r\n", n);
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, size - o, "$%zu\r\n%s\r\n", strlen(words[i]), words[i]);
    return o;
}

static void exchange(pg_conv *c, const char *const *words, const char *reply)
{
    char req[512];
    size_t n = resp_array(req, sizeof req, words);
    assert_int_equal(pg_conv_send(c, 0, req, n), 0);
    assert_int_equal(pg_conv_send(c, 1, reply, strlen(reply)), 0);
}

/* An administrator's MIGRATEs from 10.0.0.2:7000: key "nokey-key" answered
 * +NOKEY, key "moved-key" answered +OK. */
static void write_migrates(const char *path)
{
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    pg_packet t;
    pg_conv c;
    assert_non_null(f);
    pg_packet_init(&t);
    t.dport = 7000;
    pg_conv_init(&c, &t, 100, 5000, T0);
    c.file = f;
    assert_int_equal(pg_conv_handshake(&c), 0);
    exchange(&c, (const char *const[]){"MIGRATE", "10.0.0.3", "7001", "nokey-key", "0", "5000",
                                       NULL}, "+NOKEY\r\n");
    exchange(&c, (const char *const[]){"MIGRATE", "10.0.0.3", "7001", "", "0", "5000", "KEYS",
                                       "nokey-a", "nokey-b", NULL}, "+NOKEY\r\n");
    exchange(&c, (const char *const[]){"MIGRATE", "10.0.0.3", "7001", "moved-key", "0", "5000",
                                       NULL}, "+OK\r\n");
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);
}

/* Item 8: +NOKEY counts no key and invents no migration. */
static void test_migrate_nokey(void **state)
{
    (void)state;
    const char *cap = tmp("migrate.pcap"), *db = tmp("migrate.db");
    write_migrates(cap);
    assert_int_equal(run("analyze", cap, "--db", db, "-q"), 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM slot_migrations"), 1);
    assert_int_equal(th_db_int(db, "SELECT sum(keys_migrated) FROM slot_migrations"), 1);
    assert_int_equal(run("query", db, "migrations"), 0);
}

/* Frames of a conversation, kept to be written with chosen times. */
typedef struct frames {
    uint8_t data[64][256];
    size_t len[64];
    size_t n;
} frames;

static void keep_frame(void *ctx, int dlt, int64_t ts_us, const uint8_t *frame, size_t len)
{
    frames *f = ctx;
    (void)dlt;
    (void)ts_us;
    assert_true(f->n < 64 && len <= sizeof f->data[0]);
    memcpy(f->data[f->n], frame, len);
    f->len[f->n++] = len;
}

/* Item 12: records 2 and 3 of every 5 are half a second in the past (two
 * records older than an earlier one, per group, but one step back from the
 * record before): the warning, the inputs table, the counters table and the
 * report give one number. */
static void test_time_backwards_one_number(void **state)
{
    (void)state;
    const char *cap = tmp("back.pcap"), *db = tmp("back.db");
    static frames fr;
    pg_packet t;
    pg_conv c;
    fr.n = 0;
    pg_packet_init(&t);
    t.dport = 7000;
    pg_conv_init(&c, &t, 100, 5000, T0);
    c.fn = keep_frame;
    c.ctx = &fr;
    assert_int_equal(pg_conv_handshake(&c), 0);
    for (int i = 0; i < 8; i++)
        exchange(&c, (const char *const[]){"GET", "k", NULL}, "$1\r\nv\r\n");
    assert_int_equal(pg_conv_close(&c), 0);
    pg_file *f = pg_file_open(cap, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    uint64_t back = 0;
    for (size_t k = 0; k < fr.n; k++) {
        int64_t ts = T0 + 1000000 + (int64_t)k * 1000;
        if (k % 5 == 2 || k % 5 == 3) {
            ts -= 500000;
            back++;
        }
        assert_int_equal(pg_file_write(f, ts, fr.data[k], fr.len[k]), 0);
    }
    assert_int_equal(pg_file_close(f), 0);

    assert_int_equal(run("analyze", cap, "--db", db), 0);
    char want[64];
    snprintf(want, sizeof want, "time goes backwards at %llu records", (unsigned long long)back);
    if (!strstr(last.err, want))
        fail_msg("expected \"%s\" in:\n%s", want, last.err);
    snprintf(want, sizeof want, "time_backwards %llu", (unsigned long long)back);
    if (!strstr(last.out, want))
        fail_msg("expected \"%s\" in:\n%s", want, last.out);
    assert_int_equal(th_db_int(db, "SELECT time_backwards FROM inputs"), (int64_t)back);
    assert_int_equal(th_db_int(db, "SELECT value FROM counters WHERE name = 'time_backwards'"),
                     (int64_t)back);
    assert_int_equal(run("report", db), 0);
    if (!strstr(last.out, want))
        fail_msg("expected \"%s\" in:\n%s", want, last.out);
}

/* Item 9: every packet of the two-link-type pcapng, and the same analysis as
 * its two sources merged. */
static void test_pcapng_mixed_linktypes(void **state)
{
    (void)state;
    const char *mixed = tmp("mixed.db"), *two = tmp("two.db");
    assert_int_equal(run("analyze", SS_FIXTURES "/cli/mixed-linktypes.pcapng", "--db", mixed,
                         "-q"), 0);
    assert_int_equal(run("analyze", SS_FIXTURES "/cli/set.pcap",
                         SS_FIXTURES "/cli/resp_3_malicious.pcap", "--db", two, "-q"), 0);
    assert_int_equal(th_db_int(mixed, "SELECT packets FROM inputs"), 175); /* tshark: 175 */
    assert_int_equal(th_db_int(mixed, "SELECT count(*) FROM inputs WHERE error <> ''"), 0);
    static const char *const same[] = {
        "SELECT value FROM counters WHERE name = 'packets'",
        "SELECT value FROM counters WHERE name = 'tcp_packets'",
        "SELECT value FROM counters WHERE name = 'commands'",
        "SELECT value FROM counters WHERE name = 'connections'",
        "SELECT count(*) FROM connections",
        "SELECT min(first_us) FROM inputs",
        "SELECT max(last_us) FROM inputs",
        "SELECT sum(bytes) FROM inputs",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        assert_int_equal(th_db_int(mixed, same[i]), th_db_int(two, same[i]));
    assert_int_equal(th_db_int(mixed, "SELECT value FROM counters WHERE name = 'unsupported'"), 0);
    /* --threads 2 reads it through the other path (a reader thread) */
    assert_int_equal(run("analyze", SS_FIXTURES "/cli/mixed-linktypes.pcapng", "--threads", "2",
                         "--db", tmp("mixed2.db"), "-q"), 0);
    assert_int_equal(th_db_int(tmp("mixed2.db"), "SELECT packets FROM inputs"), 175);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate_nokey, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_backwards_one_number, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pcapng_mixed_linktypes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
