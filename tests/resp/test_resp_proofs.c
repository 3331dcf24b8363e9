/*
 * test_resp_proofs.c - what the decoded commands prove about which
 * endpoints serve (resp/proofs.c), noted in a cap_servers table for the
 * tracker's orientation, stamped with the record being fed.
 *
 *   redirect     MOVED and ASK targets (IPv4 and IPv6), not a hostname
 *   slots        CLUSTER SLOTS, RESP2 and RESP3: every node's host and port,
 *                the metadata's ip when the host is a name, the answering
 *                node's address for an empty host; bad ports and "?" noted
 *                nowhere
 *   shards       CLUSTER SHARDS as RESP3 maps: ip with port and tls-port
 *   nodes        CLUSTER NODES (verbatim "txt:"): ip:port and the bus port,
 *                IPv6, a hostname suffix; a line with ":0@0" gives nothing
 *   replication  REPLCONF listening-port: the replica's own endpoint;
 *                REPLCONF and PSYNC: the master (the connection's server)
 *   stamps       each proof carries the index of the event that completed
 *                its command; an error reply to CLUSTER SLOTS proves nothing;
 *                without a table nothing is noted
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "resp/resp.h"
#include "tests/resp/harness.h"

static cap_endpoint ep(const char *text)
{
    cap_endpoint e;
    memset(&e, 0, sizeof e);
    assert_int_equal(cap_endpoint_parse(text, &e), 0);
    return e;
}

/* The proofs (bits) noted for text before record `before`. */
static unsigned proofs(cap_servers *s, const char *text, uint64_t before)
{
    cap_endpoint e = ep(text);
    return cap_servers_proofs(s, &e, before);
}

#define CLUSTER_BIT (1u << CAP_PROOF_CLUSTER)
#define REDIRECT_BIT (1u << CAP_PROOF_REDIRECT)
#define REPL_BIT (1u << CAP_PROOF_REPLICATION)

/* A harness whose pipeline notes in a fresh table. */
static cap_servers *start(h_ctx *h)
{
    cap_servers *s = cap_servers_new();
    resp_config cfg;
    assert_non_null(s);
    resp_config_defaults(&cfg);
    cfg.servers = s;
    h_init(h, 1, &cfg);
    h_open(h);
    return s;
}

static void finish(h_ctx *h, cap_servers *s)
{
    h_close(h);
    h_free(h);
    cap_servers_free(s);
}

static const char GET[] = "*2\r\n$3\r\nGET\r\n$1\r\na\r\n";

static void test_redirect(void **state)
{
    h_ctx h;
    (void)state;
    cap_servers *s = start(&h);
    h.index = 10;
    h_str(&h, CAP_TO_SERVER, GET);
    h_str(&h, CAP_TO_CLIENT, "-MOVED 15495 10.0.1.2:50002\r\n");
    h.index = 11;
    h_str(&h, CAP_TO_SERVER, GET);
    h_str(&h, CAP_TO_CLIENT, "-ASK 15495 fd00::3:50003\r\n");
    h_str(&h, CAP_TO_SERVER, GET);
    h_str(&h, CAP_TO_CLIENT, "-MOVED 15495 node-4.example:50004\r\n");
    assert_int_equal(proofs(s, "10.0.1.2:50002", 10), 0);
    assert_int_equal(proofs(s, "10.0.1.2:50002", 11), REDIRECT_BIT);
    assert_int_equal(proofs(s, "[fd00::3]:50003", 12), REDIRECT_BIT);
    assert_int_equal(proofs(s, "[fd00::3]:50003", 11), 0);
    assert_int_equal(cap_servers_dropped(s), 0);
    finish(&h, s);
}

static void test_slots(void **state)
{
    h_ctx h;
    (void)state;
    cap_servers *s = start(&h);
    h.index = 5;
    h_str(&h, CAP_TO_SERVER, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n");
    h_str(&h, CAP_TO_CLIENT,
          "*2\r\n"
          "*4\r\n:0\r\n:8191\r\n*2\r\n$8\r\n10.0.1.4\r\n:50004\r\n*2\r\n$0\r\n\r\n:50009\r\n"
          "*5\r\n:8192\r\n:16383\r\n*3\r\n$1\r\n?\r\n:50005\r\n$2\r\nid\r\n"
          "*4\r\n$6\r\nnode-6\r\n:50006\r\n$2\r\nid\r\n*2\r\n$2\r\nip\r\n$8\r\n10.0.1.6\r\n"
          "*2\r\n$8\r\n10.0.1.7\r\n:0\r\n"
          "*2\r\n$8\r\n10.0.1.8\r\n:70000\r\n");
    /* RESP3: a map of metadata */
    h.index = 6;
    h_str(&h, CAP_TO_SERVER, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n");
    h_str(&h, CAP_TO_CLIENT,
          "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$7\r\nfd00::a\r\n:50010\r\n$2\r\nid\r\n"
          "%1\r\n+hostname\r\n+node-a\r\n");
    assert_int_equal(proofs(s, "10.0.1.4:50004", 6), CLUSTER_BIT);
    assert_int_equal(proofs(s, "10.0.1.4:50004", 5), 0);
    /* the empty host is the answering node's (the harness's 127.0.0.1) */
    assert_int_equal(proofs(s, "127.0.0.1:50009", 6), CLUSTER_BIT);
    /* a hostname: its metadata's ip */
    assert_int_equal(proofs(s, "10.0.1.6:50006", 6), CLUSTER_BIT);
    assert_int_equal(proofs(s, "[fd00::a]:50010", 7), CLUSTER_BIT);
    /* nothing for "?", port 0 or 70000 */
    assert_int_equal(proofs(s, "10.0.1.7:0", 100), 0);
    assert_int_equal(proofs(s, "10.0.1.8:4464", 100), 0); /* 70000 mod 65536 */
    finish(&h, s);
}

static void test_shards(void **state)
{
    h_ctx h;
    (void)state;
    cap_servers *s = start(&h);
    h.index = 3;
    h_str(&h, CAP_TO_SERVER, "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n");
    h_str(&h, CAP_TO_CLIENT,
          "*1\r\n%2\r\n+slots\r\n*2\r\n:0\r\n:16383\r\n+nodes\r\n*2\r\n"
          "%3\r\n+id\r\n+n1\r\n+ip\r\n+10.0.2.1\r\n+port\r\n:50021\r\n"
          "%3\r\n+ip\r\n+10.0.2.2\r\n+tls-port\r\n:50022\r\n+endpoint\r\n+h2\r\n");
    assert_int_equal(proofs(s, "10.0.2.1:50021", 4), CLUSTER_BIT);
    assert_int_equal(proofs(s, "10.0.2.2:50022", 4), CLUSTER_BIT);
    assert_int_equal(proofs(s, "10.0.2.1:50021", 3), 0);
    finish(&h, s);
}

static void test_nodes(void **state)
{
    h_ctx h;
    char body[512], reply[600];
    (void)state;
    cap_servers *s = start(&h);
    snprintf(body, sizeof body, "txt:"
             "a1 10.0.3.1:50031@60031 myself,master - 0 0 1 connected 0-8191\n"
             "a2 fd00::3:50032@60032,node-b slave a1 0 0 1 connected\r\n"
             "a3 :0@0 master,noaddr - 0 0 1 disconnected\n"
             "a4 10.0.3.4:50034 master - 0 0 1 connected\n");
    snprintf(reply, sizeof reply, "=%zu\r\n%s\r\n", strlen(body), body);
    h.index = 8;
    h_str(&h, CAP_TO_SERVER, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n");
    h_str(&h, CAP_TO_CLIENT, reply);
    assert_int_equal(proofs(s, "10.0.3.1:50031", 9), CLUSTER_BIT);
    assert_int_equal(proofs(s, "10.0.3.1:60031", 9), CLUSTER_BIT);
    assert_int_equal(proofs(s, "[fd00::3]:50032", 9), CLUSTER_BIT);
    assert_int_equal(proofs(s, "[fd00::3]:60032", 9), CLUSTER_BIT);
    /* no '@': not a line of CLUSTER NODES as Redis 7 writes it */
    assert_int_equal(proofs(s, "10.0.3.4:50034", 100), 0);
    assert_int_equal(proofs(s, "10.0.3.1:50031", 8), 0);
    finish(&h, s);
}

static void test_replication(void **state)
{
    h_ctx h;
    (void)state;
    cap_servers *s = start(&h);
    h.index = 20;
    h_str(&h, CAP_TO_SERVER, "*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$5\r\n50017\r\n");
    h_str(&h, CAP_TO_CLIENT, "+OK\r\n");
    h.index = 21;
    h_str(&h, CAP_TO_SERVER, "*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n");
    h_str(&h, CAP_TO_CLIENT, "+FULLRESYNC 8de1787ba490483314a4d30f1c628bc5025eb761 0\r\n"
                             "$5\r\nREDIS*1\r\n$4\r\nPING\r\n");
    /* the replica's listening endpoint: its address, the port it gave */
    assert_int_equal(proofs(s, "127.0.0.1:50017", 21), REPL_BIT);
    assert_int_equal(proofs(s, "127.0.0.1:50017", 20), 0);
    /* the master: the connection's server (127.0.0.1:30201) */
    assert_int_equal(proofs(s, "127.0.0.1:30201", 21), REPL_BIT);
    /* the replica's own source endpoint is no server */
    assert_int_equal(proofs(s, "127.0.0.1:50000", 100), 0);
    finish(&h, s);
}

static void test_nothing(void **state)
{
    h_ctx h;
    (void)state;
    cap_servers *s = start(&h);
    /* an error reply to CLUSTER SLOTS: no raw reply, nothing */
    h_str(&h, CAP_TO_SERVER, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n");
    h_str(&h, CAP_TO_CLIENT, "-ERR This instance has cluster support disabled\r\n");
    /* a garbled reply: nothing either */
    h_str(&h, CAP_TO_SERVER, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n");
    h_str(&h, CAP_TO_CLIENT, "*1\r\n*3\r\n:0\r\n:16383\r\n:5\r\n");
    assert_int_equal(proofs(s, "127.0.0.1:30201", 1000), 0);
    finish(&h, s);
    /* no table: the same commands note nothing, and nothing breaks */
    h_init(&h, 1, NULL);
    h_open(&h);
    h_str(&h, CAP_TO_SERVER, GET);
    h_str(&h, CAP_TO_CLIENT, "-MOVED 15495 10.0.1.2:50002\r\n");
    h_close(&h);
    assert_int_equal(h.ncmds, 1);
    h_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redirect),     cmocka_unit_test(test_slots),
        cmocka_unit_test(test_shards),       cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_replication),  cmocka_unit_test(test_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
