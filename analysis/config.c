/*
 * config.c - analysis thresholds and options: defaults, "name=value" setting,
 * help text; finding names and severities.
 *
 * Every threshold is documented with its finding in docs/findings.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "analysis/internal.h"

static const char *const finding_names[AN_FINDING_KINDS] = {
    "ask_cached",
    "asking_missing",
    "asking_other_connection",
    "asking_interleaved",
    "redirect_loop",
    "moved_ignored",
    "tryagain_storm",
    "redirect_unfollowed",
    "readonly_missing",
    "crossslot",
    "migration_stuck",
    "slow_convergence",
    "writes_at_risk",
};

const char *an_finding_name(an_finding_kind k)
{
    if ((int)k < 0 || k >= AN_FINDING_KINDS)
        return "unknown";
    return finding_names[k];
}

int an_finding_parse(const char *name)
{
    for (int i = 0; name && i < AN_FINDING_KINDS; i++)
        if (strcmp(finding_names[i], name) == 0)
            return i;
    return -1;
}

/* Why each severity: ERROR when commands fail or run on the wrong node (the
 * application sees errors or wrong behaviour), WARNING when they succeed but
 * pay extra round trips or the cluster needs a look. */
an_severity an_finding_severity(an_finding_kind k)
{
    switch (k) {
    case AN_ASKING_MISSING:
    case AN_ASKING_OTHER_CONNECTION:
    case AN_ASKING_INTERLEAVED:
    case AN_REDIRECT_LOOP:
    case AN_REDIRECT_UNFOLLOWED:
    case AN_CROSSSLOT:
    case AN_WRITES_AT_RISK:
        return AN_ERROR;
    case AN_ASK_CACHED:
    case AN_MOVED_IGNORED:
    case AN_TRYAGAIN_STORM:
    case AN_READONLY_MISSING:
    case AN_MIGRATION_STUCK:
    case AN_SLOW_CONVERGENCE:
    default:
        return AN_WARNING;
    }
}

void an_config_defaults(an_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->client_by = AN_CLIENT_BY_HOST;
    cfg->loop_max_redirects = 5;
    cfg->op_window_us = 5000000;
    cfg->moved_ignored_min = 3;
    cfg->tryagain_min = 10;
    cfg->tryagain_min_backoff_us = 1000;
    cfg->ask_cached_min = 2;
    cfg->migration_stuck_us = 60000000;
    cfg->max_clients = 4096;
    cfg->max_ops = 65536;
    cfg->tryagain_max = 50;
    cfg->readonly_missing_min = 1;
    cfg->max_conns = 65536;
    cfg->max_nodes = 1024;
    cfg->max_findings = 10000;
    cfg->max_memos = 262144;
    cfg->max_slot_latency = 2048;
    cfg->max_view_bytes = 64u << 20;
    cfg->slow_convergence_us = 1000000;
    cfg->convergence_window_us = 60000000;
    cfg->max_convergence = 16384;
    cfg->series_bucket_us = 1000000;
    cfg->series_top = 10;
    cfg->series_scopes = 64;
    /* redact_key stays all zero until the caller sets one: a caller that
     * redacts takes a random key (an_redact_key_random) or the user's. */
    int sodium_rc = sodium_init(); /* before any other libsodium call; idempotent */
    (void)sodium_rc;               /* a failure shows in an_redact_key_random */
}

int an_redact_key_random(an_config *cfg)
{
    if (sodium_init() < 0)
        return -1;
    randombytes_buf(cfg->redact_key, sizeof cfg->redact_key);
    return 0;
}

/* One settable name: where it lives and its bounds. */
typedef struct cfg_item {
    const char *name;
    size_t off;
    int width;          /* 4: uint32_t, 8: int64_t/uint64_t, 9: int64_t in us
                           set in ms */
    uint64_t min, max;
    const char *help;
} cfg_item;

#define U32(f) offsetof(an_config, f), 4
#define I64(f) offsetof(an_config, f), 8
#define MS(f) offsetof(an_config, f), 9

static const cfg_item items[] = {
    {"loop_max_redirects", U32(loop_max_redirects), 1, 1000,
     "redirect_loop: MOVED/ASK redirects in one operation (between TRYAGAINs) above this (default 5)"},
    {"op_window_us", I64(op_window_us), 1000, 3600000000ull,
     "a retry joins its operation if sent within this time after the redirect (default 5000000)"},
    {"moved_ignored_min", U32(moved_ignored_min), 1, 1000000,
     "moved_ignored: commands sent to the old owner after a MOVED and bounced again (default 3)"},
    {"tryagain_min", U32(tryagain_min), 1, 1000000,
     "tryagain_storm: TRYAGAIN retries in one operation faster than tryagain_min_backoff_us (default 10)"},
    {"tryagain_min_backoff_us", I64(tryagain_min_backoff_us), 0, 3600000000ull,
     "tryagain_storm: a retry sooner than this after TRYAGAIN has no backoff (default 1000)"},
    {"tryagain_max", U32(tryagain_max), 1, 1000000,
     "tryagain_storm: TRYAGAIN retries in one operation above this, any backoff (default 50)"},
    {"ask_cached_min", U32(ask_cached_min), 1, 1000000,
     "ask_cached: new commands sent straight to an ASK target without ASKING (default 2)"},
    {"readonly_missing_min", U32(readonly_missing_min), 1, 1000000,
     "readonly_missing: reads bounced by a replica for want of READONLY (default 1)"},
    {"migration_stuck_us", I64(migration_stuck_us), 1000, 365ull * 86400 * 1000000,
     "migration_stuck: a migration window longer than this (default 60000000)"},
    {"slow_convergence_ms", MS(slow_convergence_us), 0, 86400000,
     "slow_convergence: a client still sends slots to their old owner this long after an "
     "ownership change, in ms (default 1000)"},
    {"convergence_window_ms", MS(convergence_window_us), 1, 86400000,
     "an ownership change is watched for stale clients and writes at risk this long, in ms "
     "(default 60000)"},
    {"max_convergence", U32(max_convergence), 1, 10000000,
     "(client, ownership change) convergence rows (default 16384)"},
    {"max_clients", U32(max_clients), 1, 10000000, "clients tracked (default 4096)"},
    {"max_ops", U32(max_ops), 16, 10000000, "operations waiting for a retry (default 65536)"},
    {"max_conns", U32(max_conns), 16, 10000000, "connections tracked (default 65536)"},
    {"max_nodes", U32(max_nodes), 4, 30000, "nodes in the registry (default 1024)"},
    {"max_findings", U32(max_findings), 16, 10000000, "distinct findings kept (default 10000)"},
    {"max_memos", U32(max_memos), 16, 100000000,
     "(client, slot) redirect memories (default 262144)"},
    {"max_slot_latency", U32(max_slot_latency), 0, AN_SLOTS,
     "slots with latency histograms (default 2048)"},
    {"max_view_bytes", I64(max_view_bytes), 0, 1ull << 40,
     "bytes for all clients' slot views (default 67108864)"},
    {"series_top", U32(series_top), 0, 1000,
     "timeline: rows per bucket and scope kind by redirects, the rest summed as 'other' (default 10)"},
    {"series_scopes", U32(series_scopes), 1, 4096,
     "timeline: scopes of one kind followed per bucket, more go to 'other' (default 64)"},
};

int an_config_set(an_config *cfg, const char *assignment)
{
    const char *eq = assignment ? strchr(assignment, '=') : NULL;
    if (!eq || eq == assignment || eq[1] == 0)
        return -1;
    size_t nlen = (size_t)(eq - assignment);
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        const cfg_item *it = &items[i];
        if (strlen(it->name) != nlen || strncmp(it->name, assignment, nlen) != 0)
            continue;
        if (eq[1] == '-')
            return -1;
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(eq + 1, &end, 0);
        if (errno || !end || *end != 0 || v < it->min || v > it->max)
            return -1;
        char *base = (char *)cfg + it->off;
        if (it->width == 4) {
            uint32_t u = (uint32_t)v;
            memcpy(base, &u, sizeof u);
        } else {
            uint64_t u = it->width == 9 ? (uint64_t)v * 1000 : (uint64_t)v;
            memcpy(base, &u, sizeof u);
        }
        return 0;
    }
    return -1;
}

const char *an_config_help(void)
{
    static char text[8192];
    if (text[0])
        return text;
    an_buf b = {text, 0, sizeof text, 0};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
        an_buf_printf(&b, "%-24s %s\n", items[i].name, items[i].help);
    return text;
}
