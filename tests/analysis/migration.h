/*
 * migration.h - the cluster of the map fixtures (tests/fixtures/analysis) and
 * the client moves the analysis tests build on it, shared by test_an_detect.c
 * and test_an_evidence.c.
 *
 * Masters 127.0.0.1:30310 (S, slots 0-5460), :30311 (T, 5461-10922), :30312
 * (10923-16383); replicas :30314 (of 30310), :30315 (of 30311), :30313 (of
 * 30312). Slot 100 (SLOT) migrates from S to T.
 */
#ifndef SLOTSCOPE_TESTS_ANALYSIS_MIGRATION_H
#define SLOTSCOPE_TESTS_ANALYSIS_MIGRATION_H

#include <stdint.h>

#include "tests/analysis/scenario.h"

#define S 30310
#define T 30311
#define SLOT 100
#define S_ID "e5a4e4604f4b95f6ad58634a5879d4d612eeb93f"
#define T_ID "611044d087902773b471a664cf2b41722e788eb8"
#define ASK_T "-ASK 100 127.0.0.1:30311"
#define MOVED_T "-MOVED 100 127.0.0.1:30311"
#define MOVED_S "-MOVED 100 127.0.0.1:30310"
#define TRYAGAIN "-TRYAGAIN Multiple keys request during rehashing of slot"
#define CROSSSLOT "-CROSSSLOT Keys in request don't hash to the same slot"

/* Two keys of SLOT: k1 ("k<n>") and k2 ("{k1}.2"), set by mig_keys. */
extern char k1[32], k2[40];

/* Find k1 and k2 (checks that both hash to SLOT). A cmocka group or test
 * setup: returns 0. */
int mig_keys(void **state);

/* The client on connection c fetches the map (CLUSTER SLOTS) at t. */
void mig_fetch_map(sc *s, int c, int64_t t);

/* GET key on cs (to S) at t answered ASK to T; the client follows it
 * correctly on ct (to T): ASKING at t + 200, GET at t + 300, the value. */
void mig_ask_followed(sc *s, int cs, int ct, int64_t t, const char *key);

/* GET key on cs at t answered ASK to T; the client retries on ct at t + 200
 * without ASKING and T sends it back with MOVED to S. */
void mig_ask_bounced(sc *s, int cs, int ct, int64_t t, const char *key);

/* A client that never sends ASKING and follows every redirect: hops GETs of
 * key from t, 200 us apart, alternately on cs (answered ASK to T) and ct
 * (answered MOVED to S). Returns the time of the hop after the last. */
int64_t mig_bounce(sc *s, int cs, int ct, int64_t t, int hops, const char *key);

#endif /* SLOTSCOPE_TESTS_ANALYSIS_MIGRATION_H */
