/*
 * migration.c - the map fixtures' cluster and shared client moves for the
 * analysis tests (migration.h). Redirects as the Redis Cluster specification
 * describes them (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/).
 */
#include "tests/analysis/migration.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/analysis.h"

char k1[32], k2[40];

int mig_keys(void **state)
{
    (void)state;
    assert_non_null(sc_key_for_slot(SLOT, k1, sizeof k1));
    snprintf(k2, sizeof k2, "{%s}.2", k1);
    assert_int_equal(an_key_slot(k2, strlen(k2)), SLOT);
    return 0;
}

void mig_fetch_map(sc *s, int c, int64_t t)
{
    size_t len = 0;
    uint8_t *raw = sc_read_file(SS_FIXTURES "/analysis/map-slots-resp2.bin", &len);
    assert_non_null(raw);
    const char *argv[] = {"CLUSTER", "SLOTS"};
    sc_cmd_raw(s, c, t, 100, raw, len, 2, argv);
    free(raw);
}

void mig_ask_followed(sc *s, int cs, int ct, int64_t t, const char *key)
{
    sc_do(s, cs, t, 100, ASK_T, "GET", key, NULL);
    sc_do(s, ct, t + 200, 50, "+OK", "ASKING", NULL);
    sc_do(s, ct, t + 300, 100, "$", "GET", key, NULL);
}

void mig_ask_bounced(sc *s, int cs, int ct, int64_t t, const char *key)
{
    sc_do(s, cs, t, 100, ASK_T, "GET", key, NULL);
    sc_do(s, ct, t + 200, 100, MOVED_S, "GET", key, NULL);
}

int64_t mig_bounce(sc *s, int cs, int ct, int64_t t, int hops, const char *key)
{
    for (int hop = 0; hop < hops; hop++, t += 200)
        sc_do(s, hop % 2 ? ct : cs, t, 100, hop % 2 ? MOVED_S : ASK_T, "GET", key, NULL);
    return t;
}
