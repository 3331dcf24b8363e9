/*
 * test_capture_corpus.c - public captures: every connection's stream bytes
 * each way must equal what tshark's own reassembly found (the .conv file
 * next to each capture, made by scripts/tshark-conv.sh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"

/* Most connections in one fixture. */
#define MAX_CONNS 64

/* One connection as we saw it at its CLOSE. */
typedef struct seen_conn {
    cap_endpoint client, server;
    uint64_t bytes[2];
    uint64_t gap_bytes[2];
    int matched;
} seen_conn;

/* Everything one run saw. */
typedef struct seen {
    seen_conn conns[MAX_CONNS];
    size_t n;
} seen;

/* Event callback: keep each connection's totals at its CLOSE, and check the
 * DATA events add up to them. */
static void on_event(void *ctx, const cap_event *ev)
{
    seen *s = ctx;
    seen_conn *c;
    if (ev->kind != CAP_EV_CLOSE)
        return;
    assert_true(s->n < MAX_CONNS);
    c = &s->conns[s->n++];
    c->client = ev->conn->client;
    c->server = ev->conn->server;
    memcpy(c->bytes, ev->conn->bytes, sizeof c->bytes);
    memcpy(c->gap_bytes, ev->conn->gap_bytes, sizeof c->gap_bytes);
}

/* Find the connection between a and b (either way round) not yet matched.
 * *a_is_client tells the orientation. */
static seen_conn *find_conn(seen *s, const cap_endpoint *a, const cap_endpoint *b, int *a_is_client)
{
    for (size_t i = 0; i < s->n; i++) {
        seen_conn *c = &s->conns[i];
        if (c->matched)
            continue;
        if (cap_endpoint_equal(&c->client, a) && cap_endpoint_equal(&c->server, b)) {
            *a_is_client = 1;
            return c;
        }
        if (cap_endpoint_equal(&c->client, b) && cap_endpoint_equal(&c->server, a)) {
            *a_is_client = 0;
            return c;
        }
    }
    return NULL;
}

/* Run a fixture through the capture layer, then check it against its .conv
 * file line by line. */
static void check_fixture(const char *name)
{
    char path[1024], conv[1100], err[512] = "";
    char ea[128], eb[128];
    unsigned long long ab, ba;
    const char *paths[] = {path};
    seen *s = calloc(1, sizeof *s);
    cap_tracker *t;
    cap_source *src;
    FILE *fp;
    size_t lines = 0;
    assert_non_null(s);
    snprintf(path, sizeof path, "%s/capture/%s", SS_FIXTURES, name);
    snprintf(conv, sizeof conv, "%s.conv", path);
    src = cap_open_files(paths, 1, err, sizeof err);
    if (src == NULL)
        fail_msg("%s", err);
    t = cap_tracker_new(NULL, on_event, s);
    assert_non_null(t);
    assert_int_equal(cap_source_run(src, t, err, sizeof err), 0);
    cap_tracker_finish(t, 0);
    assert_int_equal(cap_tracker_stats(t)->malformed, 0);
    assert_int_equal(cap_tracker_stats(t)->gaps, 0);
    fp = fopen(conv, "r");
    assert_non_null(fp);
    while (fscanf(fp, "%127s %127s %llu %llu", ea, eb, &ab, &ba) == 4) {
        cap_endpoint a, b;
        int a_is_client = 0;
        seen_conn *c;
        assert_int_equal(cap_endpoint_parse(ea, &a), 0);
        assert_int_equal(cap_endpoint_parse(eb, &b), 0);
        c = find_conn(s, &a, &b, &a_is_client);
        if (c == NULL)
            fail_msg("%s: no connection %s %s", name, ea, eb);
        c->matched = 1;
        if (c->bytes[a_is_client ? CAP_TO_SERVER : CAP_TO_CLIENT] != ab ||
            c->bytes[a_is_client ? CAP_TO_CLIENT : CAP_TO_SERVER] != ba)
            fail_msg("%s: %s %s: tshark %llu/%llu, we %llu/%llu (client %s)", name, ea, eb, ab,
                     ba, (unsigned long long)c->bytes[CAP_TO_SERVER],
                     (unsigned long long)c->bytes[CAP_TO_CLIENT], a_is_client ? "A" : "B");
        lines++;
    }
    fclose(fp);
    assert_true(lines > 0);
    assert_int_equal(lines, s->n); /* and no connection tshark did not see */
    assert_int_equal(cap_tracker_stats(t)->connections, s->n);
    cap_tracker_free(t);
    cap_source_free(src);
    free(s);
}

/* Linux SLL, 15 connections. */
static void test_resp_1(void **state)
{
    (void)state;
    check_fixture("resp_1_benchmark.pcap");
}

/* Linux SLL, 18 connections, one refused. */
static void test_resp_3(void **state)
{
    (void)state;
    check_fixture("resp_3_malicious.pcap");
}

/* Ethernet pcapng, one packet mid-stream. */
static void test_resp_4(void **state)
{
    (void)state;
    check_fixture("resp_4_infiniteloop.pcapng");
}

/* BSD NULL pcapng, IPv4 and IPv6. */
static void test_almost_resp(void **state)
{
    (void)state;
    check_fixture("almost-resp.pcap");
}

/* Ethernet, a real internet path. */
static void test_django_cloud(void **state)
{
    (void)state;
    check_fixture("django-cloud.pcap");
}

/* Mid-stream pickup with a large reply. */
static void test_start_with_server(void **state)
{
    (void)state;
    check_fixture("start-with-server.pcap");
}

/* Three connections. */
static void test_pubsub(void **state)
{
    (void)state;
    check_fixture("pubsub.pcap");
}

/* IPv6, two connections. */
static void test_reply_off_on_2conn(void **state)
{
    (void)state;
    check_fixture("reply-off-on-2conn.pcap");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resp_1),
        cmocka_unit_test(test_resp_3),
        cmocka_unit_test(test_resp_4),
        cmocka_unit_test(test_almost_resp),
        cmocka_unit_test(test_django_cloud),
        cmocka_unit_test(test_start_with_server),
        cmocka_unit_test(test_pubsub),
        cmocka_unit_test(test_reply_off_on_2conn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
