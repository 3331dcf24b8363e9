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
 * `live` (text and --json) gets the same capture on loopback (tcpreplay, its
 * own ports 32201-32202, BPF on them): its finding lines as they come, its
 * status line (stderr on a pty, so that it is drawn; its own "\r" ESC "[K"
 * redraw codes are the only controls allowed there) and its end report are
 * searched the same way. Skipped without root or tcpreplay.
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

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "tests/helpers/child.h"
#include "tests/helpers/pktgen.h"
#include "tests/helpers/skip.h"

#define T0 1700000000000000LL

static char tmpdir[256];
static th_run last;
static pid_t live_pid; /* a `live` child still running (teardown ends it) */

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_escapes", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    if (live_pid > 0) { /* a check failed while it ran */
        kill(live_pid, SIGKILL);
        waitpid(live_pid, NULL, 0);
        live_pid = 0;
    }
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

/* The hostile capture: client 10.0.0.1 talks to 10.0.0.2:port and
 * 10.0.0.3:port+1 (the live test uses its own ports on loopback). */
static void write_capture(const char *path, int port)
{
    char nodes[1024], bulk[1200], moved[128], ask[128];
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    pg_packet t;
    pg_conv c[2];
    assert_non_null(f);
    snprintf(nodes, sizeof nodes,
             "%s 10.0.0.2:%d@%d,host" ESC "]2;pwned\x07 myself,master" ESC "[8m - 0 0 1 "
             "connected 0-8191\n"
             "%s 10.0.0.3:%d@%d,h\xc2\x9b" "31m master - 0 0 2 connected 8192-16383\n",
             ID_A, port, port + 10000, ID_B, port + 1, port + 10001);
    snprintf(bulk, sizeof bulk, "$%zu\r\n%s\r\n", strlen(nodes), nodes);
    /* B's address with controls after its port: unreadable, so the redirect
     * names no node and is judged (a hostname the capture cannot tie to a
     * node it holds would leave the redirect unjudged: nodes_unseen) */
    snprintf(moved, sizeof moved, "-MOVED 12539 10.0.0.3:%d" ESC "[8m\r\n", port + 1);
    snprintf(ask, sizeof ask, "-ASK 5474 10.0.0.3:%d" ESC "]0;x\x07\r\n", port + 1);
    for (int i = 0; i < 2; i++) {
        pg_packet_init(&t);
        t.src = "10.0.0.1";
        t.dst = i ? "10.0.0.3" : "10.0.0.2";
        t.sport = (uint16_t)(40000 + i);
        t.dport = (uint16_t)(port + i);
        pg_conv_init(&c[i], &t, 1000u + 7u * (unsigned)i, 90000u + 7u * (unsigned)i,
                     T0 + 1000 * i);
        c[i].file = f;
        assert_int_equal(pg_conv_handshake(&c[i]), 0);
    }
    exchange(&c[0], "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$7\r\napp" ESC "[8m\r\n",
             "+OK\r\n");
    exchange(&c[0], "*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n", bulk);
    /* keys and replies with controls (a MOVED to a hostname holding ESC, as
     * Redis 7 may send hostnames); slot of "k" + the rest is whatever */
    for (int n = 0; n < 6; n++) {
        get(&c[0], "key" ESC "[2J" ESC "[8m", moved);
        get(&c[1], "key" ESC "[2J" ESC "[8m", "$1\r\nv\r\n");
        get(&c[0], "user:\xc2\x9b" "8m", ask);
        exchange(&c[1], "*1\r\n$6\r\nASKING\r\n", "+OK\r\n");
        get(&c[1], "user:\xc2\x9b" "8m", "$1\r\nv\r\n");
        get(&c[0], "other" ESC "[5m", "-ERR " ESC "[31mno" "\x7f" "\x08\x08 way\r\n");
        get(&c[0], "t", "-TRYAGAIN " ESC "[8m multiple keys\r\n");
    }
    /* an ASK followed without ASKING (asking_missing): the finding's own line
     * quotes the target's error text */
    snprintf(ask, sizeof ask, "-ASK 9189 10.0.0.3:%d\r\n", port + 1);
    get(&c[0], "ask:me", ask);
    get(&c[1], "ask:me", "-ERR " ESC "[8mhidden" ESC "]0;t\x07\r\n");
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
    write_capture(cap, 7000);

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

/* ---------------------------------------------------------------- live */

#define LIVE_PORT 32201 /* and 32202: this test's ports on loopback */
#define LIVE_FILTER "tcp port 32201 or tcp port 32202"

/* A `live` run: stdout into a file, stderr on a pty (so that the status line
 * is drawn), the pty in raw mode (no "\n" -> "\r\n" to tell apart). */
typedef struct live_run {
    pid_t pid;
    int master;
    char err[1 << 16]; /* what the pty gave, NUL-terminated */
    size_t err_len;
} live_run;

static void live_start(live_run *l, const char *out_path, const char *const *args)
{
    struct winsize ws = {.ws_row = 40, .ws_col = 200};
    struct termios raw;
    const char *argv[32];
    size_t n = 0;
    int slave;
    argv[n++] = SS_BINARY;
    for (; *args && n < 31; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    memset(l, 0, sizeof *l);
    assert_int_equal(openpty(&l->master, &slave, NULL, NULL, &ws), 0);
    assert_int_equal(tcgetattr(slave, &raw), 0);
    cfmakeraw(&raw);
    assert_int_equal(tcsetattr(slave, TCSANOW, &raw), 0);
    l->pid = fork();
    assert_true(l->pid >= 0);
    if (l->pid == 0) {
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDONLY);
        if (out < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(slave, 2) < 0)
            _exit(127);
        close(l->master);
        execv(SS_BINARY, (char *const *)argv);
        _exit(127);
    }
    live_pid = l->pid;
    close(slave);
}

/* Read the pty for up to ms; 1 as soon as the text read so far holds want. */
static int live_wait_err(live_run *l, const char *want, int ms)
{
    for (int waited = 0; waited <= ms; waited += 20) {
        struct pollfd pf = {.fd = l->master, .events = POLLIN};
        if (strstr(l->err, want))
            return 1;
        if (poll(&pf, 1, 20) > 0 && l->err_len + 1 < sizeof l->err) {
            ssize_t n = read(l->master, l->err + l->err_len, sizeof l->err - 1 - l->err_len);
            if (n > 0)
                l->err[l->err_len += (size_t)n] = 0;
        }
    }
    return strstr(l->err, want) != NULL;
}

/* Does a status line in text count a finding ("  findings N", N > 0)? */
static int status_has_findings(const char *text)
{
    for (const char *p = text; (p = strstr(p, "  findings ")) != NULL; p++)
        if (p[11] >= '1' && p[11] <= '9')
            return 1;
    return 0;
}

/* Read the pty (up to ms) until a status line counts a finding. */
static int live_wait_findings(live_run *l, int ms)
{
    for (int waited = 0; waited <= ms && !status_has_findings(l->err); waited += 100)
        live_wait_err(l, "\x01never", 100);
    return status_has_findings(l->err);
}

/* Wait (up to ms) until the file at path holds want. */
static int file_has(const char *path, const char *want, int ms)
{
    for (int waited = 0; waited <= ms; waited += 50) {
        char *text = th_slurp(path, NULL);
        int found = text && strstr(text, want);
        free(text);
        if (found)
            return 1;
        usleep(50000);
    }
    return 0;
}

/* SIGINT, the rest of stderr, reap (SIGKILL if it will not end). Exit code. */
static int live_stop(live_run *l)
{
    int st = 0;
    kill(l->pid, SIGINT);
    live_wait_err(l, "packets captured", 15000);
    for (int i = 0; i < 200 && waitpid(l->pid, &st, WNOHANG) == 0; i++)
        live_wait_err(l, "\x01never", 50);
    if (waitpid(l->pid, &st, WNOHANG) == 0) {
        kill(l->pid, SIGKILL);
        waitpid(l->pid, &st, 0);
    }
    live_pid = 0;
    live_wait_err(l, "\x01never", 0);
    close(l->master);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Remove the status line's own redraw codes ("\r" ESC "[K", status.c) from
 * text: they are not from the wire; every other control byte is. */
static void drop_status_codes(char *text)
{
    static const char code[] = "\r" ESC "[K";
    char *w = text;
    for (const char *r = text; *r;) {
        if (!strncmp(r, code, sizeof code - 1)) {
            r += sizeof code - 1;
            continue;
        }
        *w++ = *r++;
    }
    *w = 0;
}

/* Send the capture onto lo with tcpreplay; 0 when it was sent. */
static int replay(const char *cap)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tcpreplay -q -t -i lo '%s' >/dev/null 2>&1", cap);
    return system(cmd) == 0 ? 0 : -1;
}

/* `live` (text or --json) on lo while the hostile capture is replayed: its
 * finding lines as they come, its status line, the report at the end. */
static void live_once(const char *cap, int json)
{
    const char *out_path = tmp(json ? "live-json.out" : "live.out");
    const char *db = tmp(json ? "live-json.db" : "live.db");
    live_run *l = calloc(1, sizeof *l);
    char *out;
    int rc;
    assert_non_null(l);
    unlink(db);
    if (json)
        live_start(l, out_path, (const char *const[]){"live", "-i", "lo", "-f", LIVE_FILTER,
                                                       "--db", db, "--json", NULL});
    else
        live_start(l, out_path, (const char *const[]){"live", "-i", "lo", "-f", LIVE_FILTER,
                                                       "--db", db, NULL});
    if (!live_wait_err(l, "listening on", 10000)) {
        live_stop(l);
        fail_msg("live did not start: %s", l->err);
    }
    assert_int_equal(replay(cap), 0);
    /* a finding printed as it came, and a status line counting it */
    assert_true(file_has(out_path, json ? "\"live_finding\"" : "moved_ignored", 10000));
    assert_true(live_wait_findings(l, 10000));
    rc = live_stop(l);
    assert_true(rc == 0 || rc == 3);
    out = th_slurp(out_path, NULL);
    assert_non_null(out);
    assert_no_controls(out, json ? "live --json (stdout)" : "live (stdout)");
    if (!json) {
        char *report = strstr(out, "slotscope incident report");
        char *line = strstr(out, "moved_ignored");
        assert_non_null(report);
        assert_true(line && line < report); /* the console line, before the report */
        assert_non_null(strstr(out, "\\x1b"));  /* the escapes are shown, escaped */
    }
    assert_non_null(strstr(l->err, "pkt/s")); /* the status line was drawn */
    drop_status_codes(l->err);
    assert_no_controls(l->err, json ? "live --json (stderr)" : "live (stderr)");
    free(out);
    free(l);
}

static int have(const char *tool)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

static void test_live_prints_no_escape(void **state)
{
    (void)state;
    const char *cap = tmp("hostile-live.pcap");
    if (geteuid() != 0)
        SS_SKIP("a live capture needs root");
    if (!have("tcpreplay"))
        SS_SKIP("no tcpreplay");
    chmod(tmpdir, 0755);
    write_capture(cap, LIVE_PORT);
    live_once(cap, 0);
    live_once(cap, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_escape_reaches_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_prints_no_escape, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
