/*
 * report_group.h - the report's findings by client, then by kind
 * (report_group.c; internal to cli/, used by report_text.c and
 * report_json.c).
 */
#ifndef SLOTSCOPE_CLI_REPORT_GROUP_H
#define SLOTSCOPE_CLI_REPORT_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "cli/cli.h"

#define RG_PATTERNS 8          /* distinct evidence patterns kept per block */
#define RG_PATTERN_MAX 240     /* text of one */
#define RG_PATTERN_EVENTS 3    /* events a pattern is made of */
#define RG_NODES 8             /* distinct nodes named per block */
#define RG_SLOTS_TEXT_MAX (16384 * 7 + 8) /* any slot set as ranges ("0, 2, ...") */

/* One evidence pattern of a block: its text, how many findings show it, and
 * the first of them (the worst: findings are in impact order). */
typedef struct rg_pattern {
    char text[RG_PATTERN_MAX];
    size_t findings;
    size_t example;            /* index in report.findings */
} rg_pattern;

/* One (client, kind): findings idx[first .. first + n) of rg_groups. */
typedef struct rg_block {
    const char *client, *kind, *severity;
    int severity_level;
    size_t first, n;
    size_t slots;              /* findings about one slot */
    uint64_t count, operations;
    int64_t first_us, last_us, extra_us;
    size_t node[RG_NODES];     /* findings naming its distinct nodes */
    size_t n_nodes;
    int more_nodes;            /* more than RG_NODES */
    rg_pattern pattern[RG_PATTERNS];
    size_t n_patterns;
    size_t other_pattern_findings; /* findings of patterns beyond RG_PATTERNS */
} rg_block;

/* One client with findings: its blocks blocks[first_block ..]. */
typedef struct rg_client {
    const char *name;
    const an_ident *ident;     /* what it announced, or NULL */
    int severity_level;
    int64_t extra_us;          /* its blocks' costs summed (for ranking only) */
    uint64_t count;
    size_t findings;
    size_t first_block, n_blocks;
    int64_t redirect_extra_us; /* its redirected operations' extra time (latency) */
} rg_client;

typedef struct rg_groups {
    size_t *idx;               /* finding indexes, block by block */
    rg_block *blocks;          /* by client, then impact */
    size_t n_blocks;
    rg_client *clients;        /* clients with findings, impact order */
    size_t n_clients;
    size_t cluster_first, cluster_n; /* the cluster side's blocks */
    int64_t redirect_extra_us; /* what every redirected operation cost */
    int64_t clients_extra_us;  /* ... of which those of clients with findings */
} rg_groups;

/* Group the findings of a sorted model. 0, or -1 out of memory. */
int rg_build(const report *r, rg_groups *g);
void rg_free(rg_groups *g);
/* A finding's evidence pattern (RG_PATTERN_MAX bytes). */
void rg_pattern_of(const rep_finding *f, char *out, size_t size);
/* Block b's slots as ranges ("0-96, 141, 12000") in out, cut with ", ..."
 * past max_chars (0: no limit); returns how many distinct slots. */
size_t rg_slot_ranges(const report *r, const rg_groups *g, const rg_block *b, char *out,
                      size_t size, size_t max_chars);

#endif /* SLOTSCOPE_CLI_REPORT_GROUP_H */
