/*
 * test_an_identity.c - who a client is, from the wire: CLIENT SETINFO
 * LIB-NAME / LIB-VER (whatever the reply: Redis 7.0 rejects it), CLIENT
 * SETNAME, HELLO ... SETNAME; hostile values escaped and bounded; the
 * --client-by name grouping; node links never merged with a client of their
 * address.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "tests/analysis/scenario.h"

#define ERR_SETINFO "-ERR unknown subcommand 'SETINFO'. Try CLIENT HELP."

/* The client record named name, or NULL. */
static const an_client *client_named(const sc *s, const char *name)
{
    for (size_t i = 0; i < s->out.nclients; i++)
        if (!strcmp(s->out.clients[i].name, name))
            return &s->out.clients[i];
    return NULL;
}

/* The connection record of connection id, or NULL. */
static const an_ident *conn_ident(const sc *s, uint64_t id)
{
    for (size_t i = 0; i < s->out.connections && i < SC_MAX; i++)
        if (s->out.conn_records[i].id == id)
            return &s->out.conn_records[i].ident;
    return NULL;
}

/* A library announcing itself (rejected by the server), a name, and HELLO's
 * SETNAME on a second connection: the client holds both names, each
 * connection its own. */
static void test_setinfo_setname_hello(void **state)
{
    sc s;
    (void)state;
    sc_init(&s, NULL);
    int a = sc_conn(&s, 5, 40000, 30100), b = sc_conn(&s, 5, 40001, 30100);
    sc_do(&s, a, 100, 10, ERR_SETINFO, "CLIENT", "SETINFO", "LIB-NAME", "node-redis", NULL);
    sc_do(&s, a, 200, 10, ERR_SETINFO, "CLIENT", "SETINFO", "lib-ver", "4.7.1", NULL);
    sc_do(&s, a, 300, 10, "+OK", "CLIENT", "SETNAME", "worker-a", NULL);
    /* resp/ keeps no credential: HELLO 3 AUTH u p SETNAME n arrives as this */
    sc_do(&s, b, 400, 10, "%7", "HELLO", "3", "AUTH", "SETNAME", "worker-b", NULL);
    sc_do(&s, a, 500, 10, "$bulk", "GET", "k1", NULL);
    sc_finish(&s, 10000);
    const an_client *c = client_named(&s, "127.0.0.5");
    assert_non_null(c);
    assert_string_equal(c->ident.lib_name, "node-redis");
    assert_string_equal(c->ident.lib_ver, "4.7.1");
    assert_string_equal(c->ident.client_name, "worker-a,worker-b");
    assert_int_equal(c->connections, 2);
    assert_int_equal(c->commands, 5);
    const an_ident *ia = conn_ident(&s, s.conns[a].id), *ib = conn_ident(&s, s.conns[b].id);
    assert_non_null(ia);
    assert_non_null(ib);
    assert_string_equal(ia->client_name, "worker-a");
    assert_string_equal(ia->lib_name, "node-redis");
    assert_string_equal(ib->client_name, "worker-b");
    assert_string_equal(ib->lib_name, "");
    sc_free(&s);
}

/* Values from the wire are hostile: control bytes, spaces and backslashes
 * are written \xNN, a value longer than what is kept ends in "...", and
 * nothing is longer than AN_IDENT_MAX - 1. Other CLIENT subcommands and a
 * SETINFO without a value teach nothing. */
static void test_hostile_values(void **state)
{
    sc s;
    char longv[201];
    (void)state;
    memset(longv, 'v', 200);
    longv[200] = 0;
    sc_init(&s, NULL);
    int a = sc_conn(&s, 7, 40000, 30100);
    sc_do(&s, a, 100, 10, "+OK", "CLIENT", "SETNAME", "\x1b[31m a\\b\r\n", NULL);
    sc_do(&s, a, 200, 10, ERR_SETINFO, "CLIENT", "SETINFO", "LIB-VER", longv, NULL);
    sc_do(&s, a, 300, 10, ERR_SETINFO, "CLIENT", "SETINFO", "LIB-NAME", NULL);
    sc_do(&s, a, 400, 10, "+OK", "CLIENT", "SETINFO", "LIB-COLOUR", "red", NULL);
    sc_do(&s, a, 500, 10, "$bulk", "CLIENT", "GETNAME", NULL);
    sc_finish(&s, 10000);
    const an_client *c = client_named(&s, "127.0.0.7");
    assert_non_null(c);
    assert_string_equal(c->ident.client_name, "\\x1b[31m\\x20a\\x5cb\\x0d\\x0a");
    assert_true(strlen(c->ident.lib_ver) <= AN_IDENT_MAX - 1);
    assert_true(strlen(c->ident.lib_ver) > 50);
    assert_string_equal(c->ident.lib_ver + strlen(c->ident.lib_ver) - 3, "...");
    assert_string_equal(c->ident.lib_name, "");
    for (const char *p = c->ident.client_name; *p; p++)
        assert_true(*p > 0x20 && *p < 0x7f);
    sc_free(&s);
}

/* --client-by name: two processes on one host are two clients, named by
 * what they announced, with the commands they made; the host's client that
 * their connections started in has no record left. A connection that
 * announced nothing stays with the host. */
static void test_client_by_name(void **state)
{
    an_config cfg;
    sc s;
    char k[32];
    (void)state;
    an_config_defaults(&cfg);
    cfg.client_by = AN_CLIENT_BY_NAME;
    sc_init(&s, &cfg);
    int a = sc_conn(&s, 8, 40000, 30100), b = sc_conn(&s, 8, 40001, 30100);
    int quiet = sc_conn(&s, 8, 40002, 30100), lib = sc_conn(&s, 9, 40003, 30100);
    sc_do(&s, a, 100, 10, "+OK", "CLIENT", "SETNAME", "app-a", NULL);
    sc_do(&s, b, 110, 10, "+OK", "CLIENT", "SETNAME", "app-b", NULL);
    sc_do(&s, lib, 120, 10, ERR_SETINFO, "CLIENT", "SETINFO", "LIB-NAME", "redis-py", NULL);
    sc_do(&s, lib, 130, 10, ERR_SETINFO, "CLIENT", "SETINFO", "LIB-VER", "5.0.1", NULL);
    for (int i = 0; i < 3; i++)
        sc_do(&s, a, 200 + i * 10, 10, "$bulk", "GET", sc_key_for_slot(100 + i, k, sizeof k), NULL);
    sc_do(&s, b, 300, 10, "$bulk", "GET", sc_key_for_slot(200, k, sizeof k), NULL);
    sc_do(&s, quiet, 310, 10, "+PONG", "PING", NULL);
    sc_finish(&s, 10000);
    const an_client *ca = client_named(&s, "127.0.0.8/app-a");
    const an_client *cb = client_named(&s, "127.0.0.8/app-b");
    const an_client *host = client_named(&s, "127.0.0.8");
    const an_client *cl = client_named(&s, "127.0.0.9/redis-py@5.0.1");
    assert_non_null(ca);
    assert_non_null(cb);
    assert_non_null(host);
    assert_non_null(cl);
    assert_int_equal(ca->connections, 1);
    assert_int_equal(ca->commands, 4);
    assert_int_equal(cb->commands, 2);
    assert_int_equal(host->connections, 1); /* the one that said nothing */
    assert_int_equal(host->commands, 1);
    assert_null(client_named(&s, "127.0.0.9")); /* emptied: no record */
    assert_null(client_named(&s, "127.0.0.9/redis-py")); /* a step on the way */
    sc_free(&s);
}

/* A node's own connections (replication, MIGRATE's RESTORE-ASKING) are
 * client "host (node)", never merged with a client on the same address,
 * whatever the grouping; per connection they stay their own. */
static void check_node_apart(an_client_by by, const char *client, const char *node)
{
    an_config cfg;
    sc s;
    char k[32];
    an_config_defaults(&cfg);
    cfg.client_by = by;
    sc_init(&s, &cfg);
    int app = sc_conn(&s, 1, 40000, 30100), repl = sc_conn(&s, 1, 40001, 30100);
    int mig = sc_conn(&s, 1, 40002, 30101);
    sc_do(&s, app, 100, 10, "+OK", "CLIENT", "SETNAME", "tool", NULL);
    sc_do(&s, repl, 110, 10, "+PONG", "PING", NULL);
    sc_do(&s, repl, 120, 10, "+OK", "REPLCONF", "listening-port", "30103", NULL);
    sc_do(&s, mig, 130, 10, "+OK", "RESTORE-ASKING", sc_key_for_slot(5, k, sizeof k), "0", "x",
          NULL);
    sc_do(&s, app, 200, 10, "$bulk", "GET", sc_key_for_slot(7, k, sizeof k), NULL);
    sc_finish(&s, 10000);
    const an_client *c = client_named(&s, client), *n = client_named(&s, node);
    assert_non_null(c);
    assert_non_null(n);
    assert_false(c->is_node);
    assert_true(n->is_node);
    assert_int_equal(c->connections, 1);
    assert_int_equal(c->commands, 2);
    if (by != AN_CLIENT_BY_CONN) {
        assert_int_equal(n->connections, 2);
        assert_int_equal(n->commands, 3);
    }
    sc_free(&s);
}

static void test_node_links_apart(void **state)
{
    (void)state;
    check_node_apart(AN_CLIENT_BY_HOST, "127.0.0.1", "127.0.0.1 (node)");
    check_node_apart(AN_CLIENT_BY_NAME, "127.0.0.1/tool", "127.0.0.1 (node)");
    check_node_apart(AN_CLIENT_BY_CONN, "127.0.0.1:40000", "127.0.0.1:40001");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setinfo_setname_hello),
        cmocka_unit_test(test_hostile_values),
        cmocka_unit_test(test_client_by_name),
        cmocka_unit_test(test_node_links_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
