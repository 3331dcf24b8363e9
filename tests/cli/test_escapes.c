/*
 * test_escapes.c - terminal escapes from the wire never reach the terminal
 * (issue 15, item 4).
 *
 * A crafted capture puts ESC sequences, BEL, other C0 controls and a UTF-8
 * C1 control (U+009B, CSI) into a CLUSTER NODES reply (node ids, addresses,
 * hostnames, flags), into keys, into MOVED/ASK targets and into error texts.
 * Every output of the binary is then searched for a raw C0 control (other
 * than the newline), DEL or a UTF-8 C1 control: the text report and --json of
 * analyze, `report DB` (text and --json), every canned query (table and
 * --json), and stderr of each. The same capture is also given under a file
 * name holding ESC, which error messages quote.
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
#include "tests/helpers/pktgen.h"

#define T0 1700000000000000LL

static char tmpdir[256];
static th_run last;

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_escapes", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    th_run_free(&last);
    if (getenv("SS_KEEP_TMP")) return 0;
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

/* Fail when text holds a byte a terminal would act on: C0 but '\n', DEL, or
 * the UTF-8 form of a C1 control. what names the output. */
static void assert_no_controls(const char *text, const char *what)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; p[i]; i++) {
        int bad = (p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7f ||
                  (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f);
        if (bad) {
            size_t from = i > 60 ? i - 60 : 0;
            fail_msg("%s: byte 0x%02x at %zu, after \"%.60s\"", what, p[i], i,
                     (const char *)p + from);
        }
    }
}

/* Both outputs of the last run. */
static void check_last(const char *what)
{
    char name[160];
    if (snprintf(name, sizeof name, "%s (stdout)", what) >= (int)sizeof name)
        fail_msg("test name too long: %s", what);
    assert_no_controls(last.out, name);
    if (snprintf(name, sizeof name, "%s (stderr)", what) >= (int)sizeof name)
        fail_msg("test name too long: %s", what);
    assert_no_controls(last.err, name);
}

/* A request and its reply on conversation c. */
static void exchange(pg_conv *c, const char *req, const char *rep)
{
    assert_int_equal(pg_conv_send(c, 0, req, strlen(req)), 0);
    assert_int_equal(pg_conv_send(c, 1, rep, strlen(rep)), 0);
}

/* A GET of key (RESP array) answered rep. */
static void get(pg_conv *c, const char *key, const char *rep)
{
    char req[256];
    snprintf(req, sizeof req, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
    exchange(c, req, rep);
}

#define ESC "\x1b"
/* node ids: 40 characters, hex where it matters least */
#define ID_A ESC "[8m" "0123456789abcdef0123456789abcdef0123"
#define ID_B "fedcba9876543210fedcba9876543210fedc" ESC "]0;"

static void write_capture(const char *path)
{
    char nodes[1024], bulk[1200];
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    pg_packet t;
    pg_conv c[2];
    assert_non_null(f);
    snprintf(nodes, sizeof nodes,
             "%s 10.0.0.2:7000@17000,host" ESC "]2;pwned\x07 myself,master" ESC "[8m - 0 0 1 "
             "connected 0-8191\n"
             "%s 10.0.0.3:7001@17001,h\xc2\x9b" "31m master - 0 0 2 connected 8192-16383\n",
             ID_A, ID_B);
    snprintf(bulk, sizeof bulk, "$%zu\r\n%s\r\n", strlen(nodes), nodes);
    for (int i = 0; i < 2; i++) {
        pg_packet_init(&t);
        t.src = "10.0.0.1";
        t.dst = i ? "10.0.0.3" : "10.0.0.2";
        t.sport = (uint16_t)(40000 + i);
        t.dport = (uint16_t)(7000 + i);
        pg_conv_init(&c[i], &t, 1000u + 7u * (unsigned)i, 90000u + 7u * (unsigned)i,
                     T0 + 1000 * i);
        c[i].file = f;
        assert_int_equal(pg_conv_handshake(&c[i]), 0);
    }
    exchange(&c[0], "*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n", bulk);
    /* keys and replies with controls; slot of "k" + the rest is whatever */
    for (int n = 0; n < 6; n++) {
        get(&c[0], "key" ESC "[2J" ESC "[8m", "-MOVED 12539 10.0.0.3:7001" ESC "[8m\r\n");
        get(&c[1], "key" ESC "[2J" ESC "[8m", "$1\r\nv\r\n");
        get(&c[0], "user:\xc2\x9b" "8m", "-ASK 5474 10.0.0.3:7001" ESC "]0;x\x07\r\n");
        exchange(&c[1], "*1\r\n$6\r\nASKING\r\n", "+OK\r\n");
        get(&c[1], "user:\xc2\x9b" "8m", "$1\r\nv\r\n");
        get(&c[0], "other" ESC "[5m", "-ERR " ESC "[31mno" "\x7f" "\x08\x08 way\r\n");
        get(&c[0], "t", "-TRYAGAIN " ESC "[8m multiple keys\r\n");
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pg_conv_close(&c[i]), 0);
    assert_int_equal(pg_file_close(f), 0);
}

/* The names of the canned queries (`query --list`, first word of each line). */
static size_t query_names(char names[][64], size_t max)
{
    size_t n = 0;
    assert_int_equal(run("query", "--list"), 0);
    for (const char *p = last.out; *p && n < max;) {
        size_t len = strcspn(p, " \n");
        if (len > 0 && len < 64) {
            memcpy(names[n], p, len);
            names[n++][len] = 0;
        }
        p += strcspn(p, "\n");
        if (*p)
            p++;
    }
    return n;
}

static void test_no_escape_reaches_output(void **state)
{
    (void)state;
    const char *cap = tmp("hostile.pcap"), *db = tmp("hostile.db");
    write_capture(cap);

    int rc = run("analyze", cap, "--db", db, "-q");
    assert_true(rc == 0 || rc == 1);
    check_last("analyze");
    assert_non_null(strstr(last.out, "\\x1b")); /* the escapes are shown, escaped */
    run("analyze", cap, "--json", "-q");
    check_last("analyze --json");
    run("analyze", cap, "--redact-keys", "-q");
    check_last("analyze --redact-keys");
    run("report", db);
    check_last("report");
    assert_non_null(strstr(last.out, "\\x1b"));
    run("report", db, "--json");
    check_last("report --json");

    char names[64][64];
    size_t n = query_names(names, 64);
    assert_true(n >= 5);
    for (size_t i = 0; i < n; i++) {
        char what[4200];
        run("query", db, names[i]);
        snprintf(what, sizeof what, "query %s", names[i]);
        check_last(what);
        run("query", db, names[i], "--json");
        snprintf(what, sizeof what, "query %s --json", names[i]);
        check_last(what);
    }

    /* error messages quote file names: one holding ESC */
    char odd[300];
    snprintf(odd, sizeof odd, "%s/odd" ESC "[8m.pcap", tmpdir);
    assert_int_equal(rename(cap, odd), 0);
    assert_int_equal(run("analyze", odd, "--db", db, "-q"), 1); /* db exists */
    check_last("analyze (existing db)");
    assert_int_equal(run("report", odd), 1);
    check_last("report (not a database)");
    assert_int_equal(run("analyze", odd, "--bogus" ESC "[8m"), 2);
    check_last("analyze (bad option)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_escape_reaches_output, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
