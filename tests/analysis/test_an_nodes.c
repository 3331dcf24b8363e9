/*
 * test_an_nodes.c - the node registry from real CLUSTER SLOTS / SHARDS / NODES
 * reply bytes (RESP2, RESP3, hostnames, a migrating slot), user overrides,
 * key redaction, table caps and evictions, configuration, histograms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "analysis/analysis.h"
#include "analysis/internal.h"
#include "tests/analysis/scenario.h"

/* One line of map-expected.tsv. */
typedef struct expect_node {
    char addr[64], id[48], role[16], master[48];
} expect_node;

static size_t read_expected(expect_node *out, size_t max, long ranges[][3], char rowner[][64],
                            size_t *nranges)
{
    FILE *f = fopen(SS_FIXTURES "/analysis/map-expected.tsv", "r");
    assert_non_null(f);
    char line[256];
    size_t n = 0;
    *nranges = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "node ", 5) == 0 && n < max) {
            expect_node *e = &out[n++];
            assert_int_equal(sscanf(line, "node %63s %47s %15s %47s", e->addr, e->id, e->role,
                                    e->master), 4);
        } else if (strncmp(line, "range ", 6) == 0 && *nranges < 8) {
            long a, b;
            assert_int_equal(sscanf(line, "range %ld %ld %63s", &a, &b, rowner[*nranges]), 3);
            ranges[*nranges][0] = a;
            ranges[*nranges][1] = b;
            (*nranges)++;
        }
    }
    fclose(f);
    return n;
}

static const an_node *node_named(const sc *s, const char *addr)
{
    for (size_t i = 0; i < s->out.nnodes; i++)
        if (strcmp(s->out.nodes[i].observed, addr) == 0 ||
            strcmp(s->out.nodes[i].announced, addr) == 0)
            return &s->out.nodes[i];
    return NULL;
}

/* Feed one fixture reply as the answer to CLUSTER <sub> from 30310. */
static void feed_map(sc *s, const char *file, const char *sub, int resp3)
{
    char path[512];
    snprintf(path, sizeof path, SS_FIXTURES "/analysis/%s", file);
    size_t len = 0;
    uint8_t *raw = sc_read_file(path, &len);
    assert_non_null(raw);
    int c = sc_conn(s, 2, 40000 + (int)s->nconns, 30310);
    const char *argv[] = {"CLUSTER", sub};
    (void)resp3;
    sc_cmd_raw(s, c, 1000, 100, raw, len, 2, argv);
    free(raw);
}

/* Every node, id, role, master and slot count the fixture map states. */
static void check_map(const char *file, const char *sub, int hostnames)
{
    expect_node ex[16];
    long ranges[8][3];
    char rowner[8][64];
    size_t nr = 0;
    size_t n = read_expected(ex, 16, ranges, rowner, &nr);
    assert_int_equal(n, 6);
    assert_int_equal(nr, 3);
    sc s;
    sc_init(&s, NULL);
    feed_map(&s, file, sub, 0);
    const an_stats *st = an_get_stats(s.an);
    assert_int_equal(st->map_replies, 1);
    assert_int_equal(st->map_errors, 0);
    /* with hostnames preferred, a MOVED names a host: it maps to the node */
    if (hostnames) {
        int c = sc_conn(&s, 3, 41000, 30310);
        sc_do(&s, c, 2000, 100, "-MOVED 7000 node1.example:30311", "GET", "x", NULL);
        assert_int_equal(s.out.nredirects, 1);
        assert_string_equal(s.out.redirects[0].target, "127.0.0.1:30311");
    }
    sc_finish(&s, 10000000);
    for (size_t i = 0; i < n; i++) {
        const an_node *nd = node_named(&s, ex[i].addr);
        if (!nd)
            fail_msg("%s: node %s missing", file, ex[i].addr);
        assert_string_equal(nd->node_id, ex[i].id);
        assert_string_equal(nd->role, ex[i].role);
        uint32_t want = 0;
        for (size_t r = 0; r < nr; r++)
            if (strcmp(rowner[r], ex[i].addr) == 0)
                want += (uint32_t)(ranges[r][1] - ranges[r][0] + 1);
        if (nd->slots_owned != want)
            fail_msg("%s: %s owns %u slots, expected %u", file, ex[i].addr, nd->slots_owned,
                     want);
    }
    assert_int_equal(s.out.nnodes, 6);
    sc_free(&s);
}

static void test_map_slots(void **state)
{
    (void)state;
    check_map("map-slots-resp2.bin", "SLOTS", 0);
    check_map("map-slots-resp3.bin", "SLOTS", 0);
    check_map("map-slots-hostname-resp2.bin", "SLOTS", 1);
    check_map("map-slots-hostname-resp3.bin", "SLOTS", 1);
}

static void test_map_shards(void **state)
{
    (void)state;
    check_map("map-shards-resp2.bin", "SHARDS", 0);
    check_map("map-shards-resp3.bin", "SHARDS", 0);
    check_map("map-shards-hostname-resp3.bin", "SHARDS", 1);
}

static void test_map_nodes(void **state)
{
    (void)state;
    check_map("map-nodes-resp2.bin", "NODES", 0);
    check_map("map-nodes-resp3.bin", "NODES", 0);
    check_map("map-nodes-hostname-resp2.bin", "NODES", 1);
}

/* CLUSTER NODES during a migration: [slot->-id] entries do not break the map. */
static void test_map_nodes_migrating(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *raw = sc_read_file(SS_FIXTURES "/analysis/map-nodes-migrating-resp2.bin", &len);
    assert_non_null(raw);
    int found = 0;
    for (size_t i = 0; i + 3 <= len; i++)
        found |= memcmp(raw + i, "->-", 3) == 0;
    assert_true(found);
    free(raw);
    check_map("map-nodes-migrating-resp2.bin", "NODES", 0);
}

/* Hostile or broken map replies are counted, not trusted. */
/* The same map again is skipped only while nothing changed since it was
 * learnt: after a MOVED moved a slot (the map still says otherwise) the same
 * bytes are learnt again and the slot's owner is the map's again; every reply
 * counts in map_replies either way. */
static void test_map_relearn(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    for (int i = 0; i < 3; i++)
        feed_map(&s, "map-slots-resp2.bin", "SLOTS", 0);
    assert_int_equal(an_get_stats(s.an)->map_replies, 3);
    /* slot 100 belongs to 30310 in the map; a MOVED says 30311 */
    int c = sc_conn(&s, 3, 41000, 30310);
    sc_do(&s, c, 2000, 100, "-MOVED 100 127.0.0.1:30311", "GET", "{k}100", NULL);
    an_analyzer *an = s.an;
    int32_t t = an->owner[100];
    assert_true(t >= 0);
    assert_string_equal(an_node_name(an, t), "127.0.0.1:30311");
    feed_map(&s, "map-slots-resp2.bin", "SLOTS", 0); /* same bytes: learnt again */
    assert_string_equal(an_node_name(an, an->owner[100]), "127.0.0.1:30310");
    feed_map(&s, "map-slots-resp2.bin", "SLOTS", 0);
    assert_string_equal(an_node_name(an, an->owner[100]), "127.0.0.1:30310");
    assert_int_equal(an_get_stats(s.an)->map_replies, 5);
    sc_finish(&s, 20000000);
    const an_node *n = node_named(&s, "127.0.0.1:30310");
    assert_non_null(n);
    assert_int_equal(n->slots_owned, 5461);
    sc_free(&s);
}

static void test_map_garbage(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    int c = sc_conn(&s, 2, 40000, 30310);
    const char *argv[] = {"CLUSTER", "SLOTS"};
    const char *bad[] = {"*1\r\n*3\r\n:0\r\n", "*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n$1\r\nx\r\n:0\r\n",
                         "*1\r\n*3\r\n:-5\r\n:3\r\n*2\r\n$9\r\n127.0.0.1\r\n:70000\r\n",
                         "$5\r\nhello\r\n"};
    for (size_t i = 0; i < 4; i++)
        sc_cmd_raw(&s, c, 1000 + (int64_t)i * 1000, 100, (const uint8_t *)bad[i], strlen(bad[i]), 2,
                   argv);
    const an_stats *st = an_get_stats(s.an);
    assert_int_equal(st->map_replies + st->map_errors, 4);
    assert_true(st->map_errors >= 2);
    sc_finish(&s, 10000000);
    for (size_t i = 0; i < s.out.nnodes; i++)
        assert_int_equal(s.out.nodes[i].slots_owned, 0);
    sc_free(&s);
}

/* User overrides: the cluster announces 10.0.0.1:7001 for what the capture
 * sees as 127.0.0.1:30311. */
static void test_node_map_override(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    snprintf(cfg.node_map[0].announced, sizeof cfg.node_map[0].announced, "10.0.0.1:7001");
    snprintf(cfg.node_map[0].observed, sizeof cfg.node_map[0].observed, "127.0.0.1:30311");
    cfg.n_node_map = 1;
    sc s;
    sc_init(&s, &cfg);
    int a = sc_conn(&s, 4, 40000, 30310), b = sc_conn(&s, 4, 40001, 30311);
    sc_do(&s, a, 1000, 100, "-MOVED 7000 10.0.0.1:7001", "GET", "x", NULL);
    sc_do(&s, b, 1200, 100, "$", "GET", "x", NULL);
    /* an unknown announced address stays as announced */
    sc_do(&s, a, 2000, 100, "-MOVED 7000 10.9.9.9:7001", "GET", "y", NULL);
    /* an empty host (Redis 7 unknown endpoint) means the answering node's */
    sc_do(&s, a, 3000, 100, "-MOVED 7000 :30312", "GET", "z", NULL);
    sc_finish(&s, 10000000);
    assert_int_equal(s.out.nredirects, 3);
    assert_string_equal(s.out.redirects[0].target, "127.0.0.1:30311");
    assert_string_equal(s.out.redirects[1].target, "10.9.9.9:7001");
    assert_string_equal(s.out.redirects[2].target, "127.0.0.1:30312");
    const an_node *n = node_named(&s, "127.0.0.1:30311");
    assert_non_null(n);
    assert_string_equal(n->announced, "10.0.0.1:7001");
    /* the first redirect was followed; the two others (other keys) name
     * nodes the capture holds no connection to: not judged */
    assert_int_equal(sc_count(&s, AN_REDIRECT_UNFOLLOWED), 0);
    assert_int_equal(an_get_stats(s.an)->unseen_target_ops, 2);
    sc_free(&s);
}

/* --redact-keys: no record carries the key, the same key hashes the same. */
static void test_redaction(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    cfg.redact_keys = 1;
    assert_int_equal(an_redact_key_random(&cfg), 0);
    sc s;
    sc_init(&s, &cfg);
    const char *key = "user:secret-name";
    int slot = an_key_slot(key, strlen(key));
    char target[64];
    snprintf(target, sizeof target, "-ASK %d 127.0.0.1:30311", slot);
    int a = sc_conn(&s, 5, 40000, 30310), b = sc_conn(&s, 5, 40001, 30311);
    sc_do(&s, a, 1000, 100, target, "GET", key, NULL);
    sc_do(&s, b, 1200, 100, "-MOVED 1 127.0.0.1:30310", "GET", key, NULL);
    assert_string_not_equal(s.out.last_command_key, key);
    assert_string_not_equal(s.out.last_command_arg0, key);
    assert_true(strncmp(s.out.last_command_key, "h:", 2) == 0);
    sc_finish(&s, 10000000);
    assert_int_equal(s.out.nredirects, 2);
    assert_true(strncmp(s.out.redirects[0].key, "h:", 2) == 0);
    assert_int_equal(strlen(s.out.redirects[0].key), 18);
    assert_string_equal(s.out.redirects[0].key, s.out.redirects[1].key);
    assert_true(s.out.nfindings >= 1);
    assert_non_null(sc_find(&s, AN_ASKING_MISSING, "127.0.0.5"));
    for (size_t i = 0; i < s.out.nfindings; i++) {
        assert_null(strstr(s.out.evidence[i], "secret"));
        assert_null(strstr(s.out.findings[i].summary, "secret"));
        if (s.out.findings[i].client[0]) /* client findings show the hashed key */
            assert_non_null(strstr(s.out.evidence[i], s.out.redirects[0].key));
    }
    sc_free(&s);

    /* another key gives another hash; without redaction the key shows */
    char h1[64], h2[64];
    an_redact(cfg.redact_key, "a", 1, 1, h1, sizeof h1);
    an_redact(cfg.redact_key, "b", 1, 1, h2, sizeof h2);
    assert_string_not_equal(h1, h2);
    an_redact(cfg.redact_key, "a", 1, 2, h2, sizeof h2); /* same prefix, longer key */
    assert_string_not_equal(h1, h2);
    uint8_t other[AN_REDACT_KEY_BYTES];
    memcpy(other, cfg.redact_key, sizeof other);
    other[31] ^= 1; /* one bit of the secret changes the hash */
    an_redact(other, "a", 1, 1, h2, sizeof h2);
    assert_string_not_equal(h1, h2);
    /* keyed BLAKE2b, pinned: all-zero key, message 01 00 00 00 'a' */
    uint8_t zero[AN_REDACT_KEY_BYTES] = {0};
    uint8_t full[16];
    crypto_generichash(full, sizeof full, (const uint8_t *)"\x01\0\0\0a", 5, zero, sizeof zero);
    char want[32];
    snprintf(want, sizeof want, "h:%02x%02x%02x%02x%02x%02x%02x%02x", full[0], full[1], full[2],
             full[3], full[4], full[5], full[6], full[7]);
    an_redact(zero, "a", 1, 1, h2, sizeof h2);
    assert_string_equal(h2, want);
    char t[80];
    an_config_defaults(&cfg);
    an_key_text(&cfg, "a\r\n\x00z\\", 6, 6, t, sizeof t);
    assert_string_equal(t, "a\\x0d\\x0a\\x00z\\x5c");
}

/* Commands of connection id, over all its records (an evicted connection
 * that comes back has two). */
static uint64_t commands_of(const sc *s, uint64_t id)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < s->out.connections && i < SC_MAX; i++)
        if (s->out.conn_records[i].id == id)
            n += s->out.conn_records[i].commands;
    return n;
}

/* A connection whose entry was evicted (at max_conns) and handed to another
 * connection: the word resp carries for it names an entry that is no longer
 * its own. Its commands must not be counted on the other connection. */
static void test_evicted_conn_word(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "max_conns=16"), 0);
    sc s;
    sc_init(&s, &cfg);
    for (int i = 0; i < 16; i++) {
        int c = sc_conn(&s, 20, 40000 + i, 30310);
        sc_do(&s, c, 1000 + i * 10, 5, "+OK", "SET", "k", "v", NULL);
    }
    int late = sc_conn(&s, 20, 41000, 30310); /* evicts connection 0 */
    assert_int_equal(an_get_stats(s.an)->evicted_conns, 1);
    sc_do(&s, late, 2000, 5, "+OK", "SET", "k", "v", NULL);
    sc_do(&s, 0, 2100, 5, "+OK", "SET", "k", "v", NULL); /* comes back */
    sc_do(&s, 0, 2200, 5, "+OK", "SET", "k", "v", NULL);
    sc_finish(&s, 100000000);
    assert_int_equal(commands_of(&s, s.conns[late].id), 1);
    assert_int_equal(commands_of(&s, s.conns[0].id), 3);
    assert_int_equal(commands_of(&s, s.conns[1].id), 1);
    sc_free(&s);
}

/* Caps: clients, connections, operations, memories, findings; evictions counted. */
static void test_caps_and_eviction(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "max_clients=1"), 0); /* below the minimum */
    assert_int_equal(an_config_set(&cfg, "max_clients=4"), 0);
    assert_int_equal(an_config_set(&cfg, "max_conns=16"), 0);
    assert_int_equal(an_config_set(&cfg, "max_ops=16"), 0);
    assert_int_equal(an_config_set(&cfg, "max_memos=16"), 0);
    assert_int_equal(an_config_set(&cfg, "max_findings=16"), 0);
    sc s;
    sc_init(&s, &cfg);
    /* 40 clients, each with one connection and one unfollowed MOVED */
    for (int i = 0; i < 40; i++) {
        int c = sc_conn(&s, 20 + i, 40000, 30310);
        char key[32];
        sc_key_for_slot(i, key, sizeof key);
        char moved[64];
        snprintf(moved, sizeof moved, "-MOVED %d 127.0.0.1:30311", i);
        sc_do(&s, c, 1000 + i * 10, 5, moved, "GET", key, NULL);
    }
    const an_stats *st = an_get_stats(s.an);
    assert_int_equal(st->evicted_clients, 36);
    assert_int_equal(st->evicted_conns, 24);
    sc_finish(&s, 100000000);
    /* each evicted client was reported when it left, the rest at the end */
    assert_int_equal(s.out.nclients, 40);
    sc_free(&s);

    /* one client, 40 slots redirected and never followed: operations and
     * (client, slot) memories are capped */
    sc_init(&s, &cfg);
    sc_conn(&s, 81, 40000, 30311); /* the capture holds the target's traffic */
    int c = sc_conn(&s, 80, 40000, 30310);
    for (int i = 0; i < 40; i++) {
        char key[32], moved[64];
        sc_key_for_slot(i, key, sizeof key);
        snprintf(moved, sizeof moved, "-MOVED %d 127.0.0.1:30311", i);
        sc_do(&s, c, 1000 + i * 10, 5, moved, "GET", key, NULL);
    }
    st = an_get_stats(s.an);
    assert_int_equal(st->evicted_ops, 24);
    assert_int_equal(st->evicted_memos, 24);
    sc_finish(&s, 100000000);
    /* only the 16 operations still held are judged (one finding per slot) */
    assert_non_null(sc_find(&s, AN_REDIRECT_UNFOLLOWED, "127.0.0.80"));
    assert_int_equal(sc_count(&s, AN_REDIRECT_UNFOLLOWED), 16);
    sc_free(&s);

    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "max_findings=16"), 0);
    sc_init(&s, &cfg);
    for (int i = 0; i < 20; i++) {
        int cc = sc_conn(&s, 100 + i, 41000, 30310);
        sc_do(&s, cc, 5000 + i, 5, "-CROSSSLOT x", "MSET", "a", "1", "b", "2", NULL);
    }
    sc_finish(&s, 100000000);
    assert_int_equal(an_get_stats(s.an)->findings, 16);
    assert_int_equal(an_get_stats(s.an)->dropped_findings, 4);
    sc_free(&s);
}

/* The per-client view stays compact and capped. */
static void test_view_bytes_cap(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(an_config_set(&cfg, "max_view_bytes=1024"), 0);
    sc s;
    sc_init(&s, &cfg);
    int c = sc_conn(&s, 2, 40000, 30310);
    char key[32];
    for (int slot = 0; slot < 600; slot++) {
        sc_key_for_slot(slot, key, sizeof key);
        sc_do(&s, c, 1000 + slot * 10, 5, "$", "GET", key, NULL);
    }
    const an_stats *st = an_get_stats(s.an);
    assert_true(st->view_drops > 0);
    assert_true(s.an->view_bytes <= 1024);
    sc_finish(&s, 100000000);
    sc_free(&s);
}

/* A view that learns every slot of a three-node map stays one block table
 * (its size follows the map's shape, not the slots learnt), and answers what
 * it learnt; a block whose slots name two nodes takes one chunk more. */
static void test_view_compact(void **state)
{
    (void)state;
    an_analyzer *an = an_new(NULL, NULL);
    assert_non_null(an);
    an_cli c;
    memset(&c, 0, sizeof c);
    assert_int_equal(an_view_get(&c, 5), AN_NONE);
    /* slots in a scattered order, ranges 0-5460, 5461-10922, 10923-16383 */
    for (int k = 0; k < AN_SLOTS; k++) {
        int slot = (int)(((uint32_t)k * 7919u) % AN_SLOTS);
        an_view_note(an, &c, slot, slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2);
        if (k == AN_SLOTS / 2)
            assert_int_equal(an_view_get(&c, slot), slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2);
    }
    assert_int_equal(c.view.n, AN_SLOTS);
    /* blocks 85 (5440-5503) and 170 (10880-10943) straddle two ranges */
    assert_int_equal(c.view.nchunks, 2);
    assert_true(an->view_bytes <= AN_VIEW_BLOCKS * sizeof(an_vblock) + 4 * 64 * sizeof(uint16_t));
    for (int slot = 0; slot < AN_SLOTS; slot++)
        assert_int_equal(an_view_get(&c, slot), slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2);
    /* learning again changes nothing; a moved slot is answered with its node */
    uint64_t bytes = an->view_bytes;
    an_view_note(an, &c, 100, 0);
    an_view_note(an, &c, 200, 2);
    assert_int_equal(an_view_get(&c, 100), 0);
    assert_int_equal(an_view_get(&c, 200), 2);
    assert_int_equal(an_view_get(&c, 201), 0);
    assert_int_equal(c.view.nchunks, 3);
    assert_int_equal(c.view.n, AN_SLOTS);
    assert_true(an->view_bytes >= bytes);
    an_view_free(an, &c);
    assert_int_equal(an->view_bytes, 0);
    an_free(an);
}

/* A map's size follows the entries it holds at once: 100000 different
 * hashes going through it, at most 8 at a time, leave it at its first size;
 * filled up, it grows to its cap and keeps every entry findable; past the
 * cap it refuses. */
static void test_map_follows_live_entries(void **state)
{
    (void)state;
    an_map m;
    assert_int_equal(an_map_init(&m, 1000), 0);
    uint32_t first_mask = m.mask;
    assert_true(first_mask < m.max_mask);
    for (uint32_t i = 0; i < 100000; i++) {
        assert_int_equal(an_map_put(&m, an_mix64(i), (int32_t)i), 0);
        if (i >= 8)
            an_map_del(&m, an_mix64(i - 8), (int32_t)(i - 8));
    }
    assert_int_equal(m.n, 8);
    assert_int_equal(m.mask, first_mask);
    for (uint32_t i = 100000 - 8; i < 100000; i++)
        assert_int_equal(an_map_find(&m, an_mix64(i), NULL, NULL, NULL), (int32_t)i);
    an_map_free(&m);

    assert_int_equal(an_map_init(&m, 1000), 0);
    uint32_t fits = (m.max_mask + 1) / 2 + (m.max_mask + 1) / 4;
    for (uint32_t i = 0; i < fits; i++)
        assert_int_equal(an_map_put(&m, an_mix64(i) & 0xffff, (int32_t)i), 0);
    assert_int_equal(m.mask, m.max_mask);
    assert_int_equal(an_map_put(&m, 12345, 1), -1);
    for (uint32_t i = 0; i < fits; i++)
        assert_int_equal(an_map_find(&m, an_mix64(i) & 0xffff, NULL, NULL, NULL) != AN_NONE, 1);
    an_map_free(&m);

    /* entries of one hash stay in insertion order (the oldest is found
     * first) through every growth, although their home is the last entry of
     * the table at every size, so that their run wraps past the end */
    assert_int_equal(an_map_init(&m, 1000), 0);
    for (int32_t v = 0; v < 300; v++)
        assert_int_equal(an_map_put(&m, UINT64_MAX, v), 0);
    assert_true(m.mask > first_mask);
    for (int32_t v = 0; v < 300; v++) {
        assert_int_equal(an_map_find(&m, UINT64_MAX, NULL, NULL, NULL), v);
        an_map_del(&m, UINT64_MAX, v);
    }
    assert_int_equal(m.n, 0);
    an_map_free(&m);
}

/* Freed entries are taken again before new ones (last freed, first taken),
 * so the pages of the tables sized by their caps that become resident follow
 * the entries in use at once, not the connections or operations seen. */
static void test_entries_reused(void **state)
{
    (void)state;
    sc s;
    sc_init(&s, NULL);
    char key[32];
    sc_key_for_slot(3999, key, sizeof key);
    int64_t t = 1000;
    for (int i = 0; i < 30; i++, t += 1000) { /* 60 of the 64 scenario connections */
        /* a connection that opens, asks, is redirected, and closes ... */
        int c = sc_conn(&s, 2, 40000 + i, 30310);
        sc_do(&s, c, t, 5, "-ASK 3999 127.0.0.1:30311", "GET", key, NULL);
        /* ... and the retry that ends the operation, on a second one */
        int c2 = sc_conn(&s, 2, 41000 + i, 30311);
        sc_do(&s, c2, t + 10, 5, "+OK", "ASKING", NULL);
        sc_do(&s, c2, t + 20, 5, "$", "GET", key, NULL);
        sc_close(&s, c, t + 30);
        sc_close(&s, c2, t + 40);
    }
    assert_int_equal(s.an->nconns, 0);
    assert_int_equal(s.an->conn_hwm, 2);
    assert_int_equal(s.an->nops, 0);
    assert_int_equal(s.an->op_hwm, 1);
    assert_int_equal(an_get_stats(s.an)->redirected_operations, 30);
    sc_finish(&s, t + 100000000);
    sc_free(&s);
}

static void test_config(void **state)
{
    (void)state;
    an_config cfg;
    an_config_defaults(&cfg);
    assert_int_equal(cfg.loop_max_redirects, 5);
    assert_int_equal(cfg.op_window_us, 5000000);
    assert_int_equal(cfg.moved_ignored_min, 3);
    assert_int_equal(cfg.tryagain_min, 10);
    assert_int_equal(cfg.tryagain_min_backoff_us, 1000);
    assert_int_equal(cfg.ask_cached_min, 2);
    assert_int_equal(cfg.migration_stuck_us, 60000000);
    assert_int_equal(an_config_set(&cfg, "tryagain_min=7"), 0);
    assert_int_equal(cfg.tryagain_min, 7);
    assert_int_equal(an_config_set(&cfg, "migration_stuck_us=30000000"), 0);
    assert_int_equal(cfg.migration_stuck_us, 30000000);
    assert_int_equal(an_config_set(&cfg, "tryagain_min=-1"), -1);
    assert_int_equal(an_config_set(&cfg, "tryagain_min=abc"), -1);
    assert_int_equal(an_config_set(&cfg, "tryagain_min="), -1);
    assert_int_equal(an_config_set(&cfg, "nosuch=1"), -1);
    assert_int_equal(an_config_set(&cfg, "tryagain_min"), -1);
    assert_int_equal(an_config_set(&cfg, NULL), -1);
    assert_int_equal(cfg.tryagain_min, 7);
    const char *help = an_config_help();
    assert_non_null(strstr(help, "loop_max_redirects"));
    assert_non_null(strstr(help, "migration_stuck_us"));
    for (int k = 0; k < AN_FINDING_KINDS; k++)
        assert_int_equal(an_finding_parse(an_finding_name((an_finding_kind)k)), k);
    assert_int_equal(an_finding_parse("nope"), -1);
    assert_string_equal(an_finding_name(AN_ASKING_OTHER_CONNECTION), "asking_other_connection");
}

/* Histogram quantiles within 1/16 of the true value, bounded memory. */
static void test_histogram(void **state)
{
    (void)state;
    an_lat l;
    memset(&l, 0, sizeof l);
    for (int64_t v = 1; v <= 100000; v++)
        an_lat_add(&l, v, 0, 0);
    assert_int_equal(l.count, 100000);
    assert_int_equal(l.max_us, 100000);
    int64_t p50 = an_hist_quantile(l.h, l.count, 0.5, l.max_us);
    int64_t p99 = an_hist_quantile(l.h, l.count, 0.99, l.max_us);
    assert_true(p50 >= 50000 - 50000 / 16 && p50 <= 50000 + 50000 / 16);
    assert_true(p99 >= 99000 - 99000 / 16 && p99 <= 99000 + 99000 / 16);
    assert_int_equal(an_hist_quantile(l.h, l.count, 1.0, l.max_us), 100000);
    an_lat_add(&l, 1LL << 50, 0, 0); /* beyond the last bucket: clamped, counted */
    assert_int_equal(l.count, 100001);
    an_lat_free(&l);
    memset(&l, 0, sizeof l);
    for (int i = 0; i < 10; i++)
        an_lat_add(&l, 7, 0, 0);
    assert_int_equal(an_hist_quantile(l.h, l.count, 0.99, l.max_us), 7);
    an_lat_free(&l);
}

/* an_copy_str copies like snprintf(dst, size, "%s", src): whole when it
 * fits, else cut to size - 1 bytes; always NUL-terminated; size 0 writes
 * nothing. */
static void test_copy_str(void **state)
{
    (void)state;
    char buf[8];
    memset(buf, 'x', sizeof buf);
    an_copy_str(buf, sizeof buf, "abc");
    assert_string_equal(buf, "abc");
    an_copy_str(buf, sizeof buf, "0123456789");
    assert_string_equal(buf, "0123456");
    an_copy_str(buf, sizeof buf, "");
    assert_string_equal(buf, "");
    buf[0] = 'q';
    an_copy_str(buf, 0, "abc");
    assert_int_equal(buf[0], 'q');
    an_copy_str(buf, 1, "abc");
    assert_int_equal(buf[0], 0);
}

/* A MOVED/ASK target names its node "host:port", an IPv6 host in brackets;
 * a host of 63 bytes (the most a redirect holds) is cut to the name's size. */
static void test_redirect_target_names(void **state)
{
    (void)state;
    an_analyzer *an = an_new(NULL, NULL);
    assert_non_null(an);
    resp_redirect r;
    memset(&r, 0, sizeof r);
    r.slot = 5;
    r.port = 7001;
    snprintf(r.host, sizeof r.host, "%s", "10.0.0.1");
    assert_string_equal(an_node_name(an, an_node_by_redirect(an, &r, AN_NONE)), "10.0.0.1:7001");
    snprintf(r.host, sizeof r.host, "%s", "::1");
    r.port = 65535;
    assert_string_equal(an_node_name(an, an_node_by_redirect(an, &r, AN_NONE)), "[::1]:65535");
    memset(r.host, 'h', sizeof r.host - 1);
    r.host[sizeof r.host - 1] = 0;
    r.port = 1;
    char want[AN_NAME_MAX];
    memset(want, 'h', sizeof want - 1); /* "hhh...:1" cut to AN_NAME_MAX - 1 */
    want[sizeof want - 1] = 0;
    assert_string_equal(an_node_name(an, an_node_by_redirect(an, &r, AN_NONE)), want);
    an_free(an);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redirect_target_names),
        cmocka_unit_test(test_copy_str),
        cmocka_unit_test(test_map_slots),
        cmocka_unit_test(test_map_shards),
        cmocka_unit_test(test_map_nodes),
        cmocka_unit_test(test_map_nodes_migrating),
        cmocka_unit_test(test_map_relearn),
        cmocka_unit_test(test_map_garbage),
        cmocka_unit_test(test_node_map_override),
        cmocka_unit_test(test_redaction),
        cmocka_unit_test(test_caps_and_eviction),
        cmocka_unit_test(test_evicted_conn_word),
        cmocka_unit_test(test_view_bytes_cap),
        cmocka_unit_test(test_view_compact),
        cmocka_unit_test(test_map_follows_live_entries),
        cmocka_unit_test(test_entries_reused),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_histogram),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
