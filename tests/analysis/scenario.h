/*
 * scenario.h - synthetic traffic for analysis/ tests: connections and paired
 * commands built by hand (no capture, no decoder), fed to an analyzer, with a
 * sink that keeps every record it gets.
 */
#ifndef SLOTSCOPE_TESTS_ANALYSIS_SCENARIO_H
#define SLOTSCOPE_TESTS_ANALYSIS_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

#define SC_MAX 256

/* The latest version of each finding (by id) and counts of the rest. */
typedef struct sc_sink {
    an_finding findings[SC_MAX];
    char evidence[SC_MAX][4096];
    size_t nfindings;
    uint64_t finding_emits;
    an_redirect redirects[SC_MAX];
    size_t nredirects;
    an_node nodes[64];
    size_t nnodes;
    an_client clients[SC_MAX];
    size_t nclients;
    an_migration migrations[SC_MAX];
    size_t nmigrations;
    an_latency latencies[SC_MAX];
    size_t nlatencies;
    an_series_row series[SC_MAX];  /* timeline rows (scope_id kept: a copy) */
    size_t nseries;
    uint64_t connections;
    struct {
        uint64_t id, commands;
        an_ident ident;
        char client[AN_NAME_MAX];
    } conn_records[SC_MAX]; /* the first SC_MAX */
    an_convergence convergence[SC_MAX];
    size_t nconvergence;
    an_risky_write at_risk[SC_MAX];
    size_t nat_risk;
    uint64_t commands;
    char last_command_key[128];
    char last_command_arg0[128];
} sc_sink;

typedef struct sc {
    an_analyzer *an;
    resp_sink rs;
    sc_sink out;
    cap_conn conns[64];
    size_t nconns;
    uint64_t seq[64];
    uint64_t word[64];     /* the analyzer's conn_word of each, as resp keeps it */
    uint8_t lost[64];      /* sc_requests_lost: the next command is flagged */
    uint8_t key_lost[64];  /* sc_key_lost: the next command's key was lost */
} sc;

/* New scenario with this configuration (NULL: defaults). */
void sc_init(sc *s, const an_config *cfg);
/* The same with a sink that takes no commands (as `analyze` without
 * --store-commands): the analyzer may then take its quick path
 * (analysis/analyzer.c, quick_command), which a command sink rules out;
 * commands is not counted. */
void sc_init_no_commands(sc *s, const an_config *cfg);
void sc_free(sc *s);
/* A connection from client "127.0.0.<host>:<cport>" to "127.0.0.1:<sport>";
 * returns its index. The handshake was seen. */
int sc_conn(sc *s, int host, int cport, int sport);
/* The same picked up mid-stream (no handshake seen: the analyzer's
 * mid_stream). */
int sc_conn_mid(sc *s, int host, int cport, int sport);
/* One command on connection c: request sent at t (us, relative), reply at
 * t + rtt. argv[0] is the name, argv[1..] the arguments (NUL-terminated
 * strings); keys are the arguments an_key_fn marks. reply: "+OK" style text
 * (first byte is the RESP type: '+', '-', ':', '$', '*'); for "-MOVED 12
 * 127.0.0.1:30311" the redirect is parsed. Returns the slot of the first key. */
int sc_cmd(sc *s, int c, int64_t t, int64_t rtt, const char *reply, int argc,
           const char *const *argv);
/* The same with raw reply bytes kept (CLUSTER SLOTS / SHARDS / NODES). */
void sc_cmd_raw(sc *s, int c, int64_t t, int64_t rtt, const uint8_t *raw, size_t raw_len,
                int argc, const char *const *argv);
/* Convenience: sc_cmd with a variable argument list ending in NULL. */
int sc_do(sc *s, int c, int64_t t, int64_t rtt, const char *reply, ...);
/* Requests of connection c were lost in the capture: its next command
 * comes with resp_command.requests_lost, as resp flags it. A reply of "?"
 * to sc_cmd / sc_do makes a command without its reply (RESP_UNANSWERED). */
void sc_requests_lost(sc *s, int c);
/* The first key of connection c's next command lost bytes in a capture gap
 * (or past the snap length): it comes as resp hands such a command over,
 * slot_unknown set and no key facts (nkeys 0, slot -1, no key0). */
void sc_key_lost(sc *s, int c);
/* Close connection c at t. */
void sc_close(sc *s, int c, int64_t t);
/* an_finish at t. */
void sc_finish(sc *s, int64_t t);

/* Findings of a kind (visible), and the one for (kind, client). */
size_t sc_count(const sc *s, an_finding_kind kind);
const an_finding *sc_find(const sc *s, an_finding_kind kind, const char *client);
/* Total of visible findings of all kinds. */
size_t sc_total(const sc *s);
/* Visible findings about clients (all but the cluster-side migration_stuck). */
size_t sc_total_clients(const sc *s);
const char *sc_evidence(const sc *s, const an_finding *f);
/* The latency summary of (scope, key, redirected) the analyzer sent (key is
 * ignored for AN_SCOPE_ALL). NULL when it sent none, or more than one with
 * different figures (so a test that asserts it is not NULL also checks that). */
const an_latency *sc_latency(const sc *s, an_scope scope, const char *key, int redirected);

/* A key that hashes to slot (searched "k0", "k1", ...), written into buf. */
const char *sc_key_for_slot(int slot, char *buf, size_t n);
/* Read a whole file; NULL if missing. *len set. free() it. */
uint8_t *sc_read_file(const char *path, size_t *len);

/* Base capture time of scenarios (so times are realistic). */
#define SC_T0 1700000000000000LL

#endif
