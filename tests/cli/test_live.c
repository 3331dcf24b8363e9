/*
 * test_live.c - `slotscope live` on loopback against a real two-node Redis
 * Cluster (127.0.0.1:31611-31612, bus 31621-31622; issue 18, Live):
 *
 *   - the status line is drawn on a terminal (a pty), and not with --quiet
 *     or when stderr is a pipe;
 *   - a finding is printed while the link is idle (no later packet pushes it
 *     out), in time order, and again ("again:") when its count grows;
 *   - `report DB` during the run says the run is in progress and shows the
 *     committed finding;
 *   - --metrics is scraped over loopback (127.0.0.1:31650): the format's
 *     HELP/TYPE lines, and values equal to the run's database counters;
 *   - -w FILE -C 1 rotates (FILE, FILE1, ...) and `analyze` of the files
 *     gives the same findings and counters as the live run;
 *   - -w refuses the --db path (issue 15's rule).
 *
 * Plus the text formats on their own (metrics_format's label escaping,
 * status_line_format's short form). The live tests need root, redis-server
 * and the ports; without them they skip (fail in CI: tests/helpers/skip.h).
 * Every wait is a bounded loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "resp/resp.h"
#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"
#include "tests/helpers/pktgen.h"
#include "tests/helpers/skip.h"

#define PORT_A 31611
#define PORT_B 31612
#define METRICS_PORT 31650
#define FILTER "tcp port 31611 or tcp port 31612"

static char dir[256];
static pid_t redis[2];
static const char *skip_why; /* set by the group setup when the live tests cannot run */

/* ---------------------------------------------------------------- sockets */

/* A connected TCP socket to 127.0.0.1:port, or -1. */
static int connect_to(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Read what comes within ms milliseconds (up to size - 1 bytes, until the
 * peer closes or has sent `until` when not NULL). The length. */
static size_t read_for(int fd, char *buf, size_t size, int ms, const char *until)
{
    size_t len = 0;
    buf[0] = 0;
    for (int waited = 0; waited < ms && len + 1 < size; waited += 20) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        ssize_t n;
        if (poll(&pf, 1, 20) <= 0)
            continue;
        n = read(fd, buf + len, size - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = 0;
        if (until && strstr(buf, until))
            break;
    }
    return len;
}

/* Send a RESP command (its words) on a new connection to port, wait for the
 * first line of the reply, close. The reply's first line in reply. */
static void command(int port, char *reply, size_t size, int n, ...)
{
    char buf[2048];
    size_t len = (size_t)snprintf(buf, sizeof buf, "*%d\r\n", n);
    va_list ap;
    int fd = connect_to(port);
    assert_true(fd >= 0);
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *w = va_arg(ap, const char *);
        len += (size_t)snprintf(buf + len, sizeof buf - len, "$%zu\r\n%s\r\n", strlen(w), w);
    }
    va_end(ap);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    read_for(fd, reply, size, 3000, "\r\n");
    close(fd);
}

/* SET key to a value of n bytes (for -C's rotation). */
static void set_big(int port, const char *key, size_t n)
{
    char head[128], reply[256];
    char *value = malloc(n);
    size_t hl;
    int fd = connect_to(port);
    assert_non_null(value);
    assert_true(fd >= 0);
    memset(value, 'v', n);
    hl = (size_t)snprintf(head, sizeof head, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n",
                          strlen(key), key, n);
    assert_int_equal(write(fd, head, hl), (ssize_t)hl);
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, value + off, n - off);
        assert_true(w > 0);
        off += (size_t)w;
    }
    assert_int_equal(write(fd, "\r\n", 2), 2);
    read_for(fd, reply, sizeof reply, 3000, "\r\n");
    assert_non_null(strstr(reply, "+OK"));
    close(fd);
    free(value);
}

/* ---------------------------------------------------------------- the cluster */

static pid_t start_redis(int port, int bus)
{
    char p[16], b[16], conf[300], logf[300];
    pid_t pid;
    snprintf(p, sizeof p, "%d", port);
    snprintf(b, sizeof b, "%d", bus);
    snprintf(conf, sizeof conf, "%s/nodes-%d.conf", dir, port);
    snprintf(logf, sizeof logf, "%s/redis-%d.log", dir, port);
    pid = fork();
    if (pid == 0) {
        execlp("redis-server", "redis-server", "--port", p, "--cluster-port", b, "--bind",
               "127.0.0.1", "--save", "", "--appendonly", "no", "--cluster-enabled", "yes",
               "--cluster-config-file", conf, "--dir", dir, "--logfile", logf,
               "--daemonize", "no", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Wait (bounded) until port answers a command whose reply contains want. */
static int wait_reply(int port, const char *want, int n, const char *a1, const char *a2)
{
    for (int i = 0; i < 100; i++) {
        char reply[4096] = "";
        int fd = connect_to(port);
        if (fd >= 0) {
            char buf[256];
            size_t len = n == 1 ? (size_t)snprintf(buf, sizeof buf, "*1\r\n$%zu\r\n%s\r\n",
                                                   strlen(a1), a1)
                                : (size_t)snprintf(buf, sizeof buf, "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                                                   strlen(a1), a1, strlen(a2), a2);
            if (write(fd, buf, len) == (ssize_t)len)
                read_for(fd, reply, sizeof reply, 500, want);
            close(fd);
            if (strstr(reply, want))
                return 0;
        }
        usleep(100000);
    }
    return -1;
}

static int have(const char *tool)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

/* Two masters: A has slots 0-8191, B 8192-16383. */
static int start_cluster(void)
{
    char reply[256];
    redis[0] = start_redis(PORT_A, PORT_A + 10);
    redis[1] = start_redis(PORT_B, PORT_B + 10);
    if (wait_reply(PORT_A, "PONG", 1, "PING", NULL) || wait_reply(PORT_B, "PONG", 1, "PING", NULL))
        return -1;
    command(PORT_A, reply, sizeof reply, 4, "CLUSTER", "ADDSLOTSRANGE", "0", "8191");
    command(PORT_B, reply, sizeof reply, 4, "CLUSTER", "ADDSLOTSRANGE", "8192", "16383");
    command(PORT_A, reply, sizeof reply, 5, "CLUSTER", "MEET", "127.0.0.1", "31612", "31622");
    if (wait_reply(PORT_A, "cluster_state:ok", 2, "CLUSTER", "INFO") ||
        wait_reply(PORT_B, "cluster_state:ok", 2, "CLUSTER", "INFO"))
        return -1;
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    if (th_tmpdir_new("ss_live", dir, sizeof dir) != 0)
        return -1;
    chmod(dir, 0755);
    if (geteuid() != 0)
        skip_why = "a live capture needs root";
    else if (!have("redis-server"))
        skip_why = "no redis-server";
    else if (start_cluster() != 0)
        skip_why = "the Redis Cluster on 127.0.0.1:31611-31612 did not come up";
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        if (redis[i] > 0) {
            kill(redis[i], SIGTERM);
            waitpid(redis[i], NULL, 0);
        }
    }
    th_tmpdir_remove(dir);
    return 0;
}

/* ---------------------------------------------------------------- slotscope under a pty */

typedef struct live_child {
    pid_t pid;
    int master;                  /* the pty: stdout and stderr of the child */
    char *out;                   /* everything read from it */
    size_t len, size;
} live_child;

/* Start slotscope with args (NULL-terminated) on a new pty. */
static void live_start(live_child *c, const char *const *args)
{
    struct winsize ws = {.ws_row = 40, .ws_col = 200};
    const char *argv[64];
    size_t n = 0;
    argv[n++] = SS_BINARY;
    for (; *args && n < 63; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    memset(c, 0, sizeof *c);
    c->size = 1 << 20;
    c->out = calloc(1, c->size);
    assert_non_null(c->out);
    c->pid = forkpty(&c->master, NULL, NULL, &ws);
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        execv(SS_BINARY, (char *const *)argv);
        _exit(127);
    }
}

/* Read what the child printed for up to ms; 1 as soon as want is in it. */
static int live_wait_for(live_child *c, const char *want, int ms)
{
    for (int waited = 0; waited <= ms; waited += 50) {
        struct pollfd pf = {.fd = c->master, .events = POLLIN};
        if (strstr(c->out, want))
            return 1;
        if (poll(&pf, 1, 50) > 0 && c->len + 1 < c->size) {
            ssize_t n = read(c->master, c->out + c->len, c->size - 1 - c->len);
            if (n > 0) {
                c->len += (size_t)n;
                c->out[c->len] = 0;
            }
        }
    }
    return strstr(c->out, want) != NULL;
}

/* SIGINT, read to the end, reap. The exit code. */
static int live_stop(live_child *c)
{
    int st = 0;
    kill(c->pid, SIGINT);
    live_wait_for(c, "packets captured", 15000);
    live_wait_for(c, "\x01never", 300); /* the rest of the output */
    for (int i = 0; i < 300 && waitpid(c->pid, &st, WNOHANG) == 0; i++)
        usleep(50000);
    close(c->master);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---------------------------------------------------------------- metrics */

/* GET /metrics from the live run: the body (malloc'd), NULL if none. */
static char *scrape(void)
{
    static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    char *buf = calloc(1, 1 << 18);
    char *body;
    int fd = connect_to(METRICS_PORT);
    if (fd < 0 || !buf) {
        if (fd >= 0)
            close(fd);
        free(buf);
        return NULL;
    }
    assert_int_equal(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
    read_for(fd, buf, 1 << 18, 3000, NULL);
    close(fd);
    if (!strstr(buf, "HTTP/1.0 200 OK\r\n")) {
        fprintf(stderr, "scrape: %zu bytes: %.200s\n", strlen(buf), buf);
        free(buf);
        fail_msg("no 200 answer from --metrics");
    }
    assert_non_null(strstr(buf, "Content-Type: text/plain; version=0.0.4"));
    body = strstr(buf, "\r\n\r\n");
    assert_non_null(body);
    body = strdup(body + 4);
    free(buf);
    return body;
}

/* The value of the sample whose name and labels are exactly series, -1 if
 * absent. Checks on the way that every metric's samples follow its HELP and
 * TYPE lines and that each line ends in a newline. */
static int64_t sample(const char *text, const char *series)
{
    char family[128] = "";
    size_t sl = strlen(series);
    int64_t found = -1;
    assert_true(text[0] && text[strlen(text) - 1] == '\n');
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = (size_t)(nl - line);
        if (!strncmp(line, "# TYPE ", 7)) {
            sscanf(line + 7, "%127s", family);
            assert_non_null(strstr(nl + 1, "")); /* samples follow */
        } else if (!strncmp(line, "# HELP ", 7)) {
            assert_true(len > 8);
        } else {
            /* a sample of the family announced last */
            assert_true(family[0] && !strncmp(line, family, strlen(family)));
            if (len > sl && !strncmp(line, series, sl) && line[sl] == ' ')
                found = strtoll(line + sl + 1, NULL, 10);
        }
        line = nl + 1;
    }
    return found;
}

/* ---------------------------------------------------------------- the live run */

/* Bounded: until the scrape shows series at want. The last scrape. */
static char *scrape_until(const char *series, int64_t want)
{
    char *m = NULL;
    for (int i = 0; i < 60; i++) {
        free(m);
        m = scrape();
        if (m && sample(m, series) == want)
            break;
        usleep(100000);
    }
    assert_non_null(m);
    return m;
}

static void test_live_run(void **state)
{
    const char *db = th_path(dir, "live.db"), *w = th_path(dir, "keep.pcap");
    char reply[256], wpath[300], w1[300];
    live_child c;
    th_run rep;
    char *m;
    (void)state;
    if (skip_why)
        SS_SKIP(skip_why);
    snprintf(wpath, sizeof wpath, "%s", w);
    snprintf(w1, sizeof w1, "%s1", w);
    live_start(&c, TH_ARGS("live", "-i", "lo", "-f", FILTER, "--ports", "31611-31612", "--db",
                           db, "-w", wpath, "-C", "1", "--metrics", "127.0.0.1:31650"));
    assert_true(live_wait_for(&c, "listening on", 10000));

    /* the status line: drawn over itself once a second */
    assert_true(live_wait_for(&c, "pkt/s", 5000));
    assert_non_null(strstr(c.out, "\r\033[K"));
    assert_non_null(strstr(c.out, "redirects/s moved "));
    assert_non_null(strstr(c.out, "kernel drops 0"));

    /* CROSSSLOT, then nothing: the finding must come out on its own */
    command(PORT_A, reply, sizeof reply, 5, "MSET", "{a}1", "1", "{b}2", "2");
    assert_non_null(strstr(reply, "CROSSSLOT"));
    assert_true(live_wait_for(&c, "error crossslot: client 127.0.0.1 (1x", 5000));
    /* committed, and report says the run goes on */
    assert_int_equal(th_slotscope(TH_ARGS("report", db), &rep, NULL, NULL, 0), 0);
    assert_int_equal(th_exit_code(&rep), 0);
    assert_non_null(strstr(rep.out, "the run is in progress"));
    assert_null(strstr(rep.out, "interrupted"));
    assert_non_null(strstr(rep.out, "crossslot"));
    th_run_free(&rep);
    assert_int_equal(th_slotscope(TH_ARGS("report", db, "--json"), &rep, NULL, NULL, 0), 0);
    assert_non_null(strstr(rep.out, "\"finished\":false,\"in_progress\":true"));
    th_run_free(&rep);

    /* its count grows: an "again:" line with the new count */
    command(PORT_A, reply, sizeof reply, 5, "MSET", "{a}1", "1", "{b}2", "2");
    command(PORT_A, reply, sizeof reply, 5, "MSET", "{a}1", "1", "{b}2", "2");
    assert_true(live_wait_for(&c, "again: [", 5000));
    assert_true(live_wait_for(&c, "crossslot: client 127.0.0.1 (3x", 5000));

    /* three MOVED from A ({a} is slot 15495, on B), big values for -C 1 */
    for (int i = 0; i < 3; i++) {
        command(PORT_A, reply, sizeof reply, 2, "GET", "{a}k");
        assert_non_null(strstr(reply, "-MOVED 15495 127.0.0.1:31612"));
    }
    for (int i = 0; i < 3; i++)
        set_big(PORT_B, "{a}big", 600000);

    /* scraped: wait until the run saw everything, then compare */
    m = scrape_until("slotscope_node_redirects_total{node=\"127.0.0.1:31611\",kind=\"moved\"}", 3);
    assert_int_equal(sample(m, "slotscope_redirects_total{kind=\"moved\"}"), 3);
    assert_int_equal(sample(m, "slotscope_redirects_total{kind=\"crossslot\"}"), 3);
    assert_int_equal(sample(m, "slotscope_redirects_total{kind=\"ask\"}"), 0);
    assert_int_equal(sample(m, "slotscope_findings_total{kind=\"crossslot\"}"), 1);
    assert_int_equal(sample(m, "slotscope_finding_occurrences_total{kind=\"crossslot\"}"), 3);
    assert_int_equal(sample(m, "slotscope_node_redirects_total{node=\"127.0.0.1:31611\",kind=\"crossslot\"}"), 3);
    assert_int_equal(sample(m, "slotscope_node_redirects_total{node=\"127.0.0.1:31612\",kind=\"moved\"}"), -1);
    free(m);
    m = scrape_until("slotscope_commands_total", 9); /* 3 MSET, 3 GET, 3 SET */
    /* the link is quiet now: the counters stay, and must be the database's */
    usleep(1500000);
    free(m);
    m = scrape();
    assert_non_null(m);
    assert_int_equal(live_stop(&c), 0);
    assert_non_null(strstr(c.out, "slotscope incident report"));
    assert_non_null(strstr(c.out, "packets written to"));
    assert_int_equal(sample(m, "slotscope_commands_total"),
                     th_db_int(db, "SELECT value FROM counters WHERE name = 'commands'"));
    assert_int_equal(sample(m, "slotscope_packets_total"),
                     th_db_int(db, "SELECT value FROM counters WHERE name = 'packets'"));
    assert_int_equal(sample(m, "slotscope_redirects_total{kind=\"moved\"}"),
                     th_db_int(db, "SELECT count(*) FROM redirects WHERE kind = 'MOVED' AND node = '127.0.0.1:31611'"));
    assert_int_equal(sample(m, "slotscope_kernel_drops_total"),
                     th_db_int(db, "SELECT value FROM counters WHERE name = 'kernel_drops'"));
    assert_int_equal(sample(m, "slotscope_saved_packets_total"),
                     th_db_int(db, "SELECT value FROM counters WHERE name = 'packets'"));
    free(m);

    /* -w rotated, and the files give the same findings */
    {
        const char *db2 = th_path(dir, "again.db");
        struct stat sb;
        th_run an;
        assert_int_equal(stat(w1, &sb), 0);
        assert_int_equal(th_slotscope(TH_ARGS("analyze", wpath, w1, "--ports", "31611-31612",
                                              "--db", db2, "-q"), &an, NULL, NULL, 0), 0);
        assert_int_equal(th_exit_code(&an), 0);
        th_run_free(&an);
        static const char *const same[] = {
            "SELECT group_concat(kind || ' ' || client || ' ' || node || ' ' || slot || ' ' || "
            "count, ';') FROM (SELECT * FROM findings ORDER BY kind, client, node, slot)",
            "SELECT count(*) FROM findings",
            "SELECT value FROM counters WHERE name = 'commands'",
            "SELECT value FROM counters WHERE name = 'moved'",
            "SELECT value FROM counters WHERE name = 'crossslot'",
            "SELECT value FROM counters WHERE name = 'packets'"};
        for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
            sqlite3 *a, *b;
            char *ta = NULL, *tb = NULL;
            assert_int_equal(sqlite3_open_v2(db, &a, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
            assert_int_equal(sqlite3_open_v2(db2, &b, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
            for (int k = 0; k < 2; k++) {
                sqlite3_stmt *st;
                assert_int_equal(sqlite3_prepare_v2(k ? b : a, same[i], -1, &st, NULL), SQLITE_OK);
                assert_int_equal(sqlite3_step(st), SQLITE_ROW);
                *(k ? &tb : &ta) = strdup((const char *)sqlite3_column_text(st, 0));
                sqlite3_finalize(st);
            }
            assert_string_equal(ta, tb);
            free(ta);
            free(tb);
            sqlite3_close(a);
            sqlite3_close(b);
        }
        assert_true(th_db_int(db2, "SELECT count(*) FROM findings WHERE kind = 'crossslot'") == 1);
    }
    free(c.out);
}

/* Not a terminal (pipes: th_exec), or --quiet on one: no status line. */
static void test_status_off(void **state)
{
    live_child c;
    th_run r;
    (void)state;
    if (skip_why)
        SS_SKIP(skip_why);
    assert_int_equal(th_slotscope(TH_ARGS("live", "-i", "lo", "-f", FILTER, "--duration", "2.5"),
                                  &r, NULL, NULL, 0), 0);
    assert_int_equal(th_exit_code(&r), 0);
    assert_non_null(strstr(r.err, "listening on"));
    assert_null(strstr(r.err, "pkt/s"));
    assert_null(strstr(r.out, "pkt/s"));
    th_run_free(&r);
    live_start(&c, TH_ARGS("live", "-i", "lo", "-f", FILTER, "--quiet", "--duration", "2.5"));
    live_wait_for(&c, "packets captured", 10000);
    for (int i = 0; i < 100 && waitpid(c.pid, NULL, WNOHANG) == 0; i++)
        usleep(50000);
    close(c.master);
    assert_non_null(strstr(c.out, "slotscope incident report"));
    assert_null(strstr(c.out, "pkt/s"));
    free(c.out);
}

/* -w the database, or a link to it: refused, the database untouched. */
static void test_write_refuses_db(void **state)
{
    const char *db = th_path(dir, "keep.db"), *link = th_path(dir, "link.pcap");
    char dbp[300];
    th_run r;
    struct stat before, after;
    (void)state;
    if (skip_why)
        SS_SKIP(skip_why);
    snprintf(dbp, sizeof dbp, "%s", db);
    assert_int_equal(th_slotscope(TH_ARGS("live", "-i", "lo", "-f", FILTER, "-w", dbp, "--db",
                                          dbp, "--duration", "1"), &r, NULL, NULL, 0), 0);
    assert_int_equal(th_exit_code(&r), 1);
    assert_non_null(strstr(r.err, "it is the database of this run"));
    assert_int_equal(access(dbp, F_OK), -1); /* nothing made */
    th_run_free(&r);
    /* an existing database, -w through a symbolic link to it, --force */
    assert_int_equal(th_slotscope(TH_ARGS("live", "-i", "lo", "-f", FILTER, "--db", dbp,
                                          "--duration", "1"), &r, NULL, NULL, 0), 0);
    assert_int_equal(th_exit_code(&r), 0);
    th_run_free(&r);
    assert_int_equal(stat(dbp, &before), 0);
    assert_int_equal(symlink(dbp, link), 0);
    assert_int_equal(th_slotscope(TH_ARGS("live", "-i", "lo", "-f", FILTER, "-w", link, "--db",
                                          dbp, "--force", "--duration", "1"), &r, NULL, NULL, 0), 0);
    assert_int_equal(th_exit_code(&r), 1);
    assert_non_null(strstr(r.err, "symbolic link"));
    th_run_free(&r);
    /* -w the database itself, existing, with --force */
    assert_int_equal(th_slotscope(TH_ARGS("live", "-i", "lo", "-f", FILTER, "-w", dbp, "--db",
                                          dbp, "--force", "--duration", "1"), &r, NULL, NULL, 0), 0);
    assert_int_equal(th_exit_code(&r), 1);
    assert_non_null(strstr(r.err, "it is the database of this run"));
    th_run_free(&r);
    assert_int_equal(stat(dbp, &after), 0);
    assert_true(before.st_ino == after.st_ino && before.st_size == after.st_size &&
                before.st_mtime == after.st_mtime);
    th_assert_db_ok(dbp);
}

/* -w over a capture of an earlier run: replaced; over a text file: refused. */
static void test_write_replaces_only_captures(void **state)
{
    const char *cap = th_path(dir, "again.pcap"), *txt = th_path(dir, "notes.txt");
    char capp[300], txtp[300], *kept;
    size_t len = 0;
    th_run r;
    FILE *f;
    (void)state;
    if (skip_why)
        SS_SKIP(skip_why);
    snprintf(capp, sizeof capp, "%s", cap);
    snprintf(txtp, sizeof txtp, "%s", txt);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(th_slotscope(TH_ARGS("live", "-i", "lo", "-f", FILTER, "-w", capp,
                                              "--duration", "1"), &r, NULL, NULL, 0), 0);
        assert_int_equal(th_exit_code(&r), 0);
        assert_non_null(strstr(r.err, "packets written to"));
        th_run_free(&r);
    }
    kept = th_slurp(capp, &len);
    assert_non_null(kept);
    assert_true(len >= 24 && !memcmp(kept, "\xd4\xc3\xb2\xa1", 4)); /* a pcap */
    free(kept);
    f = fopen(txtp, "w");
    assert_non_null(f);
    fputs("my notes\n", f);
    fclose(f);
    assert_int_equal(th_slotscope(TH_ARGS("live", "-i", "lo", "-f", FILTER, "-w", txtp,
                                          "--duration", "1"), &r, NULL, NULL, 0), 0);
    assert_int_equal(th_exit_code(&r), 1);
    assert_non_null(strstr(r.err, "it exists and is not a capture file"));
    th_run_free(&r);
    kept = th_slurp(txtp, &len);
    assert_string_equal(kept, "my notes\n");
    free(kept);
}

/* A capture long enough for analyze's progress bar to be drawn: one
 * connection of n SETs, every tenth answered by MOVED. */
static void write_long_capture(const char *path, unsigned n)
{
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    pg_packet t;
    pg_conv c;
    assert_non_null(f);
    pg_packet_init(&t);
    t.dport = 7000;
    pg_conv_init(&c, &t, 100, 900000, 1764600000000000LL);
    c.file = f;
    assert_int_equal(pg_conv_handshake(&c), 0);
    for (unsigned k = 0; k < n; k++) {
        char req[64];
        char key[8], moved[64];
        snprintf(key, sizeof key, "k%05u", k % 100000);
        /* the MOVED names the key's slot, as a node's does */
        snprintf(moved, sizeof moved, "-MOVED %u 10.0.0.3:7001\r\n",
                 (unsigned)resp_key_slot((const uint8_t *)key, 6));
        const char *rep = k % 10 ? "+OK\r\n" : moved;
        int len = snprintf(req, sizeof req, "*3\r\n$3\r\nSET\r\n$6\r\n%s\r\n$1\r\nv\r\n", key);
        assert_int_equal(pg_conv_send(&c, 0, req, (size_t)len), 0);
        assert_int_equal(pg_conv_send(&c, 1, rep, strlen(rep)), 0);
    }
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(f), 0);
}

/* analyze's progress bar on a terminal shows the rates of live's status
 * line. Not a live test: it runs anywhere. The bar is redrawn every
 * millisecond (SLOTSCOPE_PROGRESS_MS), so that it is drawn however fast the
 * capture is analysed (the default, 200 ms, was close to the whole run). */
static void test_analyze_progress(void **state)
{
    char path[300];
    live_child c;
    (void)state;
    snprintf(path, sizeof path, "%s", th_path(dir, "long.pcap"));
    write_long_capture(path, 300000);
    assert_int_equal(setenv("SLOTSCOPE_PROGRESS_MS", "1", 1), 0);
    live_start(&c, TH_ARGS("analyze", path));
    assert_int_equal(unsetenv("SLOTSCOPE_PROGRESS_MS"), 0);
    assert_true(live_wait_for(&c, "slotscope incident report", 120000));
    for (int i = 0; i < 100 && waitpid(c.pid, NULL, WNOHANG) == 0; i++)
        usleep(50000);
    close(c.master);
    assert_non_null(strstr(c.out, "pkt/s  "));
    assert_non_null(strstr(c.out, " cmd/s  "));
    assert_non_null(strstr(c.out, " redirects  ETA "));
    free(c.out);
    unlink(path);
}

/* ---------------------------------------------------------------- the formats */

static void test_metrics_format(void **state)
{
    static live_counts c;
    char out[1 << 16];
    size_t need;
    (void)state;
    memset(&c, 0, sizeof c);
    c.packets = 7;
    c.redirects[1] = 4;
    live_count_node_redirect(&c, "a\"b\\c\nd", 1);
    for (int i = 0; i < LIVE_MAX_NODES + 3; i++) {
        char node[32];
        snprintf(node, sizeof node, "10.0.0.%d:7000", i);
        live_count_node_redirect(&c, node, 0);
    }
    need = metrics_format(&c, out, sizeof out);
    assert_true(need < sizeof out);
    assert_int_equal(strlen(out), need);
    assert_int_equal(sample(out, "slotscope_packets_total"), 7);
    assert_int_equal(sample(out, "slotscope_redirects_total{kind=\"ask\"}"), 4);
    /* label value escaped: \" \\ \n */
    assert_non_null(strstr(out, "{node=\"a\\\"b\\\\c\\nd\",kind=\"ask\"} 1\n"));
    /* 64 nodes of their own, the 4 beyond (in MOVED) summed as "other" */
    assert_int_equal(c.n_nodes, LIVE_MAX_NODES);
    assert_int_equal(sample(out, "slotscope_node_redirects_total{node=\"other\",kind=\"moved\"}"), 4);
    assert_int_equal(sample(out, "slotscope_node_redirects_total{node=\"other\",kind=\"ask\"}"), -1);
    assert_non_null(strstr(out, "# TYPE slotscope_findings_total counter\n"));
    /* a buffer too small: cut, NUL-terminated, the whole length told */
    assert_int_equal(metrics_format(&c, out, 100), need);
    assert_int_equal(strlen(out), 99);
}

static void test_status_format(void **state)
{
    live_counts now, prev;
    char line[512];
    (void)state;
    memset(&now, 0, sizeof now);
    memset(&prev, 0, sizeof prev);
    now.packets = 3000;
    now.commands = 1000;
    now.redirects[1] = 24;
    now.findings = 3;
    now.kernel_drops = 5;
    status_line_format(line, sizeof line, &now, &prev, 2.0, 0);
    assert_non_null(strstr(line, "  1500 pkt/s  500 cmd/s  redirects/s moved 0 ask 12 tryagain 0 "
                                 "crossslot 0 clusterdown 0  findings 3  kernel drops 5"));
    status_line_format(line, sizeof line, &now, &prev, 2.0, 79);
    assert_string_equal(line, "1500 pkt/s  500 cmd/s  redir/s mov 0 ask 12 try 0 xslot 0 down 0"
                              "  findings 3  drops 5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_format),
        cmocka_unit_test(test_status_format),
        cmocka_unit_test(test_live_run),
        cmocka_unit_test(test_analyze_progress),
        cmocka_unit_test(test_status_off),
        cmocka_unit_test(test_write_refuses_db),
        cmocka_unit_test(test_write_replaces_only_captures),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
