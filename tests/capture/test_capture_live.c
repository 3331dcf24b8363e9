/*
 * test_capture_live.c - live capture on the loopback interface: a TCP
 * connection made by the test itself (127.0.0.1, port 30050) is captured with
 * a BPF filter and reassembled. The run is stopped by cap_source_break from
 * the CLOSE event; an alarm is only a safety net. Skipped when the process
 * may not capture (not root).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/helpers/skip.h"

#include "capture/capture.h"

/* Our port (the capture tests own 30000-30099). */
#define LIVE_PORT 30050

/* What the event callback saw, and the source to stop. */
typedef struct live_run {
    cap_source *src;
    char stream[2][64];
    size_t len[2];
    int opened, closed, reason;
    cap_endpoint server;
} live_run;

static cap_source *volatile alarm_src;    /* for the safety-net alarm */
static volatile sig_atomic_t alarm_fired;

/* SIGALRM: the capture took too long; stop it (async-signal-safe). */
static void on_alarm(int sig)
{
    (void)sig;
    alarm_fired = 1;
    if (alarm_src != NULL)
        cap_source_break(alarm_src);
}

/* Event callback: keep our connection's bytes; stop at its CLOSE. */
static void on_event(void *ctx, const cap_event *ev)
{
    live_run *r = ctx;
    if (ev->conn->server.port != LIVE_PORT)
        return;
    if (ev->kind == CAP_EV_OPEN) {
        r->opened++;
        r->server = ev->conn->server;
    } else if (ev->kind == CAP_EV_DATA && r->len[ev->dir] + ev->len < sizeof r->stream[0]) {
        memcpy(r->stream[ev->dir] + r->len[ev->dir], ev->data, ev->len);
        r->len[ev->dir] += ev->len;
    } else if (ev->kind == CAP_EV_CLOSE) {
        r->closed++;
        r->reason = (int)ev->reason;
        cap_source_break(r->src);
    }
}

/* Open lo with a filter, or skip the test when capturing is not allowed. */
static cap_source *open_lo(const char *filter)
{
    char err[512] = "";
    cap_live_opts opts;
    cap_source *src;
    memset(&opts, 0, sizeof opts);
    opts.iface = "lo";
    opts.filter = filter;
    opts.buffer_mb = 4;
    if (geteuid() != 0)
        SS_SKIP("capturing on lo needs root");
    src = cap_open_live(&opts, err, sizeof err);
    if (src == NULL)
        fail_msg("cannot capture on lo: %s", err);
    return src;
}

/* Make one TCP connection on loopback: "hello" to the server, "world!" back,
 * then both sides close. */
static void make_traffic(void)
{
    struct sockaddr_in sa;
    int one = 1, lfd, cfd, afd;
    char buf[16];
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(LIVE_PORT);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(lfd, 1), 0);
    cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof sa), 0);
    afd = accept(lfd, NULL, NULL);
    assert_true(afd >= 0);
    assert_int_equal(write(cfd, "hello", 5), 5);
    assert_int_equal(read(afd, buf, 5), 5);
    assert_int_equal(write(afd, "world!", 6), 6);
    assert_int_equal(read(cfd, buf, 6), 6);
    close(cfd);
    assert_int_equal(read(afd, buf, 1), 0); /* the client's FIN arrived */
    close(afd);
    close(lfd);
}

/* A connection on lo is captured, filtered, reassembled and closed by FIN. */
static void test_live_loopback(void **state)
{
    char err[512] = "";
    live_run r;
    cap_tracker *t;
    const cap_input_info *info;
    size_t n;
    char ep[CAP_ENDPOINT_STRLEN];
    int rc;
    (void)state;
    memset(&r, 0, sizeof r);
    r.src = open_lo("tcp port 30050");
    info = cap_source_inputs(r.src, &n);
    assert_int_equal(n, 1);
    assert_string_equal(info[0].name, "lo");
    t = cap_tracker_new(NULL, on_event, &r);
    assert_non_null(t);
    make_traffic(); /* queued in the capture buffer until the run reads it */
    alarm_src = r.src;
    signal(SIGALRM, on_alarm);
    alarm(20);
    rc = cap_source_run(r.src, t, err, sizeof err);
    alarm(0);
    alarm_src = NULL;
    assert_false(alarm_fired);
    assert_int_equal(rc, 1); /* stopped by the break from the CLOSE event */
    assert_int_equal(r.opened, 1);
    assert_int_equal(r.closed, 1);
    assert_int_equal(r.reason, CAP_CLOSE_FIN);
    cap_endpoint_format(&r.server, ep, sizeof ep);
    assert_string_equal(ep, "127.0.0.1:30050");
    assert_memory_equal(r.stream[CAP_TO_SERVER], "hello", 5);
    assert_int_equal(r.len[CAP_TO_SERVER], 5);
    assert_memory_equal(r.stream[CAP_TO_CLIENT], "world!", 6);
    assert_int_equal(r.len[CAP_TO_CLIENT], 6);
    assert_true(cap_tracker_stats(t)->tcp_packets >= 8);
    info = cap_source_inputs(r.src, &n);
    assert_true(info[0].packets >= 8);
    cap_tracker_finish(t, 0);
    cap_tracker_free(t);
    cap_source_free(r.src);
}

/* Live errors are one clear line: a missing interface, a bad filter. */
static void test_live_errors(void **state)
{
    char err[512] = "";
    cap_live_opts opts;
    (void)state;
    if (geteuid() != 0)
        SS_SKIP("capturing on lo needs root");
    memset(&opts, 0, sizeof opts);
    opts.iface = "nosuch-if0";
    assert_null(cap_open_live(&opts, err, sizeof err));
    /* One line naming the interface, libpcap's text once (pcap_statustostr
     * and pcap_geterr say the same here). */
    assert_string_equal(err, "cannot open interface 'nosuch-if0': No such device exists");
    opts.iface = "lo";
    opts.filter = "tcp port";
    assert_null(cap_open_live(&opts, err, sizeof err));
    assert_memory_equal(err, "bad filter 'tcp port': ", strlen("bad filter 'tcp port': "));
    opts.iface = NULL;
    assert_null(cap_open_live(&opts, err, sizeof err));
    assert_string_equal(err, "no interface given");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_loopback),
        cmocka_unit_test(test_live_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
