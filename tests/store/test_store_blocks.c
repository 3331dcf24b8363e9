/*
 * test_store_blocks.c - what the report about clients needs from the
 * database: the finding_blocks view (one row per client and kind, slots as
 * ranges, sums), findings.operations, and the identity columns of clients
 * and connections (a client written twice keeps the first value of each).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/store.h"
#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"

static char tmpdir[256];
static char dbpath[512];

static int setup(void **state)
{
    (void)state;
    if (th_tmpdir_new("ss_store_blocks", tmpdir, sizeof tmpdir) != 0)
        return -1;
    snprintf(dbpath, sizeof dbpath, "%s", th_path(tmpdir, "b.db"));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(tmpdir);
}

/* A finding of kind for client on slot. */
static void put_finding(an_sink *k, uint64_t id, an_finding_kind kind, const char *client,
                        const char *node, int32_t slot, int64_t first, uint64_t count)
{
    an_finding f;
    memset(&f, 0, sizeof f);
    f.id = id;
    f.kind = kind;
    f.severity = kind == AN_MIGRATION_STUCK ? AN_WARNING : AN_ERROR;
    snprintf(f.client, sizeof f.client, "%s", client);
    snprintf(f.node, sizeof f.node, "%s", node);
    f.slot = slot;
    f.first_us = first;
    f.last_us = first + 10;
    f.count = count;
    f.operations = count;
    f.extra_latency_us = 7;
    snprintf(f.summary, sizeof f.summary, "s");
    f.evidence = "{\"events\":[]}";
    k->finding(k->ctx, &f);
}

static void test_blocks_view(void **state)
{
    char err[512];
    store *s;
    an_sink k;
    uint64_t id = 1;
    (void)state;
    s = store_open(dbpath, NULL, err, sizeof err);
    assert_non_null(s);
    k = store_sink(s);
    /* slots 0-96, 141, 12000 for one client and kind, in any order */
    put_finding(&k, id++, AN_ASKING_MISSING, "10.0.0.5", "10.0.0.2:7001", 12000, 500, 2);
    for (int slot = 96; slot >= 0; slot--)
        put_finding(&k, id++, AN_ASKING_MISSING, "10.0.0.5", "10.0.0.2:7001", slot, 1000 + slot, 1);
    put_finding(&k, id++, AN_ASKING_MISSING, "10.0.0.5", "10.0.0.3:7002", 141, 300, 1);
    /* another kind of the same client; a kind without a slot; the cluster */
    put_finding(&k, id++, AN_REDIRECT_LOOP, "10.0.0.5", "", 5, 50, 4);
    put_finding(&k, id++, AN_CROSSSLOT, "10.0.0.6", "", -1, 60, 3);
    put_finding(&k, id++, AN_MIGRATION_STUCK, "", "10.0.0.2:7001", 9380, 70, 1);
    /* a finding emitted again (same id, grown) counts once */
    put_finding(&k, 2, AN_ASKING_MISSING, "10.0.0.5", "10.0.0.2:7001", 96, 1096, 5);
    assert_int_equal(store_close(s, err, sizeof err), 0);

    assert_int_equal(th_db_int(dbpath, "SELECT count(*) FROM finding_blocks"), 4);
    assert_int_equal(th_db_int(dbpath, "SELECT count(*) FROM finding_blocks WHERE"
                                       " client = '10.0.0.5' AND kind = 'asking_missing'"
                                       " AND slots = '0-96, 141, 12000' AND slot_count = 99"
                                       " AND findings = 99 AND count = 2 + 96 + 5 + 1"
                                       " AND operations = 2 + 96 + 5 + 1 AND first_us = 300"
                                       " AND last_us = 1106"
                                       " AND extra_latency_us = 99 * 7 AND severity_level = 3"),
                     1);
    assert_int_equal(th_db_int(dbpath, "SELECT count(*) FROM finding_blocks WHERE"
                                       " client = '10.0.0.5' AND kind = 'asking_missing'"
                                       " AND instr(nodes, '10.0.0.2:7001') > 0"
                                       " AND instr(nodes, '10.0.0.3:7002') > 0"), 1);
    assert_int_equal(th_db_int(dbpath, "SELECT count(*) FROM finding_blocks WHERE"
                                       " client = '10.0.0.6' AND kind = 'crossslot'"
                                       " AND slots = '' AND slot_count = 0 AND nodes = ''"), 1);
    assert_int_equal(th_db_int(dbpath, "SELECT count(*) FROM finding_blocks WHERE client = ''"
                                       " AND kind = 'migration_stuck' AND slots = '9380'"), 1);
    assert_int_equal(th_db_int(dbpath, "SELECT sum(operations) FROM findings"), 2 + 96 + 5 + 1 + 4 + 3 + 1);
}

/* Identity columns: written from the records, merged like the rest of a
 * client's row (the first value of each field stays). */
static void test_identity_columns(void **state)
{
    char err[512];
    store *s;
    an_sink k;
    an_client c;
    an_connection cn;
    (void)state;
    s = store_open(dbpath, NULL, err, sizeof err);
    assert_non_null(s);
    k = store_sink(s);
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "10.0.0.7");
    c.connections = 1;
    snprintf(c.ident.client_name, sizeof c.ident.client_name, "first");
    k.client(k.ctx, &c);
    snprintf(c.ident.client_name, sizeof c.ident.client_name, "second");
    snprintf(c.ident.lib_name, sizeof c.ident.lib_name, "node-redis");
    snprintf(c.ident.lib_ver, sizeof c.ident.lib_ver, "4.7.1");
    k.client(k.ctx, &c); /* evicted and seen again */
    memset(&cn, 0, sizeof cn);
    cn.id = 42;
    snprintf(cn.client, sizeof cn.client, "10.0.0.7");
    snprintf(cn.ident.lib_name, sizeof cn.ident.lib_name, "node-redis");
    snprintf(cn.ident.client_name, sizeof cn.ident.client_name, "first");
    k.connection(k.ctx, &cn);
    assert_int_equal(store_close(s, err, sizeof err), 0);
    assert_int_equal(th_db_int(dbpath, "SELECT count(*) FROM clients WHERE name = '10.0.0.7'"
                                       " AND client_name = 'first' AND lib_name = 'node-redis'"
                                       " AND lib_ver = '4.7.1' AND connections = 2"), 1);
    assert_int_equal(th_db_int(dbpath, "SELECT count(*) FROM connections WHERE id = 42"
                                       " AND lib_name = 'node-redis' AND lib_ver = ''"
                                       " AND client_name = 'first'"), 1);
    assert_int_equal(th_db_int(dbpath, "SELECT value FROM meta WHERE key = 'schema_version'"),
                     STORE_SCHEMA_VERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_blocks_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identity_columns, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
