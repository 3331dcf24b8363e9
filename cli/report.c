/*
 * report.c - the report model: what the incident report shows.
 *
 * Filled either while the analysis runs (report_sink) or from a database
 * (report_db.c); report_sort then puts everything in one order, so the text of
 * `analyze` and of `report DB` is the same for the same run.
 *
 * Memory is bounded without a database too: each list has a cap (cli.h), and
 * records beyond it are counted in `dropped` (the database, when there is one,
 * still has them). Per-redirect and per-connection records are not kept at
 * all: the report shows them through counters and latency summaries.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Slots in the finding id index: a power of two, over twice the finding cap. */
#define FINDING_INDEX_SIZE 32768u
/* The same for latency summaries. */
#define LATENCY_INDEX_SIZE 131072u
/* Distinct client names are counted exactly up to this many (then each record
 * counts): the set's largest size, a power of two, kept at most half full. */
#define CLIENT_SET_MAX (1u << 21)
#define CLIENT_AWARE 1u
#define CLIENT_NODE 2u

void report_init(report *r)
{
    memset(r, 0, sizeof *r);
}

void report_free(report *r)
{
    for (size_t i = 0; i < r->n_findings; i++)
        free(r->findings[i].evidence);
    free(r->findings);
    free(r->inputs);
    free(r->nodes);
    free(r->migrations);
    free(r->failovers);
    free(r->convergence);
    free(r->latency);
    free(r->counters);
    free(r->finding_index);
    free(r->latency_index);
    free(r->client_set);
    free(r->idents);
    memset(r, 0, sizeof *r);
}

/* Make room for element n of an array of elem-sized items: capacity doubles at
 * 16, 32, 64, ... Returns the (maybe moved) array, or NULL when out of memory
 * (the old array is still valid then). */
static void *room_for(void *base, size_t n, size_t elem)
{
    if (n > 0 && (n < 16 || (n & (n - 1)) != 0))
        return base;
    return realloc(base, (n == 0 ? 16 : n * 2) * elem);
}

/* Copy text into a fixed field, truncating. */
static void copy_field(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

/* ---------------------------------------------------------------- findings */

/* The index slot for id: where it is, or the empty slot where it would go. */
static uint32_t *index_slot(report *r, uint64_t id)
{
    uint32_t h = (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 40) & (FINDING_INDEX_SIZE - 1);
    for (;;) {
        uint32_t *slot = &r->finding_index[h];
        if (*slot == 0 || r->findings[*slot - 1].id == id)
            return slot;
        h = (h + 1) & (FINDING_INDEX_SIZE - 1);
    }
}

/* Set a finding's evidence copy (or mark it as too long). "{}" is no
 * evidence, as the store writes it. */
static void set_evidence(rep_finding *f, const char *evidence)
{
    size_t len = evidence && strcmp(evidence, "{}") ? strlen(evidence) : 0;
    f->evidence = NULL;
    f->evidence_too_long = len > REPORT_MAX_EVIDENCE;
    if (len > 0 && !f->evidence_too_long)
        f->evidence = strdup(evidence);
}

/* Returns 1 when the finding is new, 0 when it replaced an earlier version,
 * -1 when it was dropped (cap or memory). */
static int upsert_finding(report *r, const rep_finding *f, const char *evidence)
{
    uint32_t *slot;
    rep_finding *arr;
    if (!r->finding_index) {
        r->finding_index = calloc(FINDING_INDEX_SIZE, sizeof *r->finding_index);
        if (!r->finding_index) {
            r->dropped++;
            return -1;
        }
    }
    slot = index_slot(r, f->id);
    if (*slot) {
        rep_finding *old = &r->findings[*slot - 1];
        free(old->evidence);
        *old = *f;
        set_evidence(old, evidence);
        return 0;
    }
    if (r->n_findings >= REPORT_MAX_FINDINGS ||
        !(arr = room_for(r->findings, r->n_findings, sizeof *arr))) {
        r->dropped++;
        return -1;
    }
    r->findings = arr;
    arr[r->n_findings] = *f;
    set_evidence(&arr[r->n_findings], evidence);
    *slot = (uint32_t)++r->n_findings;
    return 1;
}

long report_finding_pos(const report *r, uint64_t id)
{
    uint32_t *slot;
    if (!r->finding_index)
        return -1;
    slot = index_slot((report *)r, id); /* only reads */
    return *slot ? (long)*slot - 1 : -1;
}

void report_add_finding(report *r, const rep_finding *f, const char *evidence)
{
    upsert_finding(r, f, evidence);
}

/* "info", "warning", "error" as the database stores them. */
static const char *severity_name(int level)
{
    return level >= AN_ERROR ? "error" : level == AN_WARNING ? "warning" : "info";
}

/* The model's form of an analysis finding. */
static void finding_from_an(rep_finding *out, const an_finding *f)
{
    memset(out, 0, sizeof *out);
    out->id = f->id;
    copy_field(out->kind, sizeof out->kind, an_finding_name(f->kind));
    out->severity_level = (int)f->severity;
    copy_field(out->severity, sizeof out->severity, severity_name(out->severity_level));
    copy_field(out->client, sizeof out->client, f->client);
    copy_field(out->node, sizeof out->node, f->node);
    out->slot = f->slot;
    out->first_us = f->first_us;
    out->last_us = f->last_us;
    out->count = f->count;
    out->extra_latency_us = f->extra_latency_us;
    out->operations = f->operations;
    copy_field(out->summary, sizeof out->summary, f->summary);
}

/* ---------------------------------------------------------------- the rest */

void report_add_input(report *r, const rep_input *in)
{
    rep_input *arr;
    for (size_t i = 0; i < r->n_inputs; i++) {
        if (!strcmp(r->inputs[i].name, in->name)) {
            r->inputs[i] = *in;
            return;
        }
    }
    if (r->n_inputs >= REPORT_MAX_INPUTS || !(arr = room_for(r->inputs, r->n_inputs, sizeof *arr))) {
        r->dropped++;
        return;
    }
    r->inputs = arr;
    arr[r->n_inputs++] = *in;
}

void report_input_from_cap(rep_input *out, const cap_input_info *in)
{
    memset(out, 0, sizeof *out);
    copy_field(out->name, sizeof out->name, in->name);
    copy_field(out->linktype, sizeof out->linktype, in->linktype_name);
    out->packets = in->packets;
    out->bytes = in->bytes;
    out->kernel_drops = in->kernel_drops;
    out->drops_recorded = in->drops_recorded;
    out->if_drops = in->if_drops;
    out->time_backwards = in->time_backwards;
    out->first_us = in->first_us;
    out->last_us = in->last_us;
    copy_field(out->error, sizeof out->error, in->error);
    copy_field(out->compression, sizeof out->compression, in->compression);
    out->time_offset_us = in->time_offset_us;
    out->skew_us = in->skew_us;
    out->skew_shared = in->skew_shared;
    out->skew_ref = in->skew_ref;
}

void report_add_node(report *r, const rep_node *n)
{
    rep_node *arr;
    for (size_t i = 0; i < r->n_nodes; i++) {
        if (!strcmp(r->nodes[i].observed, n->observed) &&
            !strcmp(r->nodes[i].announced, n->announced)) {
            r->nodes[i] = *n;
            return;
        }
    }
    if (r->n_nodes >= REPORT_MAX_NODES || !(arr = room_for(r->nodes, r->n_nodes, sizeof *arr))) {
        r->dropped++;
        return;
    }
    r->nodes = arr;
    arr[r->n_nodes++] = *n;
}

void report_add_migration(report *r, const an_migration *m)
{
    an_migration *arr;
    if (r->n_migrations >= REPORT_MAX_MIGRATIONS ||
        !(arr = room_for(r->migrations, r->n_migrations, sizeof *arr))) {
        r->dropped++;
        return;
    }
    r->migrations = arr;
    arr[r->n_migrations++] = *m;
}

void report_add_failover(report *r, const rep_failover *f)
{
    rep_failover *arr;
    if (r->n_failovers >= REPORT_MAX_MIGRATIONS ||
        !(arr = room_for(r->failovers, r->n_failovers, sizeof *arr))) {
        r->dropped++;
        return;
    }
    r->failovers = arr;
    arr[r->n_failovers++] = *f;
}

void report_add_convergence(report *r, const rep_convergence *c)
{
    rep_convergence *arr;
    if (r->n_convergence >= REPORT_MAX_MIGRATIONS ||
        !(arr = room_for(r->convergence, r->n_convergence, sizeof *arr))) {
        r->dropped++;
        return;
    }
    r->convergence = arr;
    arr[r->n_convergence++] = *c;
}

const char *report_ownership_source(const report *r)
{
    return r->owner_rows_bus ? "bus" : r->owner_rows_clients ? "clients" : "none";
}

/* FNV-1a of a string, folded with an extra word. */
static uint64_t hash_text(const char *text, uint64_t extra)
{
    uint64_t h = 0xcbf29ce484222325ull ^ extra;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* The latency index slot for (scope, key, redirected). */
static uint32_t *latency_slot(report *r, const rep_latency *l)
{
    uint32_t h = (uint32_t)(hash_text(l->key, hash_text(l->scope, (uint64_t)l->redirected)) >> 32);
    for (h &= LATENCY_INDEX_SIZE - 1;; h = (h + 1) & (LATENCY_INDEX_SIZE - 1)) {
        uint32_t *slot = &r->latency_index[h];
        const rep_latency *x;
        if (*slot == 0)
            return slot;
        x = &r->latency[*slot - 1];
        if (x->redirected == l->redirected && !strcmp(x->scope, l->scope) && !strcmp(x->key, l->key))
            return slot;
    }
}

/* A summary replaces an earlier one of the same scope, key and kind (as the
 * database's primary key does). */
void report_add_latency(report *r, const rep_latency *l)
{
    rep_latency *arr;
    uint32_t *slot;
    if (!r->latency_index &&
        !(r->latency_index = calloc(LATENCY_INDEX_SIZE, sizeof *r->latency_index))) {
        r->dropped++;
        return;
    }
    slot = latency_slot(r, l);
    if (*slot) {
        r->latency[*slot - 1] = *l;
        return;
    }
    if (r->n_latency >= REPORT_MAX_LATENCY ||
        !(arr = room_for(r->latency, r->n_latency, sizeof *arr))) {
        r->dropped++;
        return;
    }
    r->latency = arr;
    arr[r->n_latency++] = *l;
    *slot = (uint32_t)r->n_latency;
}

void report_add_counter(report *r, const char *name, uint64_t value)
{
    rep_counter *arr;
    for (size_t i = 0; i < r->n_counters; i++) {
        if (!strcmp(r->counters[i].name, name)) {
            r->counters[i].value = value;
            return;
        }
    }
    if (!(arr = room_for(r->counters, r->n_counters, sizeof *arr))) {
        r->dropped++;
        return;
    }
    r->counters = arr;
    copy_field(arr[r->n_counters].name, sizeof arr[r->n_counters].name, name);
    arr[r->n_counters++].value = value;
}

/* A client's identity: kept only for clients that announced something, so
 * the list stays short; a client seen again fills what its entry lacks. */
void report_add_client(report *r, const char *name, const an_ident *ident)
{
    rep_client *arr;
    if (!ident->lib_name[0] && !ident->lib_ver[0] && !ident->client_name[0])
        return;
    for (size_t i = 0; i < r->n_idents; i++) {
        if (!strcmp(r->idents[i].name, name)) {
            /* as the database merges a client's rows: the first value stays */
            an_ident *d = &r->idents[i].ident;
            if (!d->lib_name[0])
                copy_field(d->lib_name, sizeof d->lib_name, ident->lib_name);
            if (!d->lib_ver[0])
                copy_field(d->lib_ver, sizeof d->lib_ver, ident->lib_ver);
            if (!d->client_name[0])
                copy_field(d->client_name, sizeof d->client_name, ident->client_name);
            return;
        }
    }
    if (r->n_idents >= REPORT_MAX_IDENTS ||
        !(arr = room_for(r->idents, r->n_idents, sizeof *arr))) {
        r->dropped++;
        return;
    }
    r->idents = arr;
    copy_field(arr[r->n_idents].name, sizeof arr[r->n_idents].name, name);
    arr[r->n_idents++].ident = *ident;
}

const an_ident *report_client_ident(const report *r, const char *name)
{
    for (size_t i = 0; i < r->n_idents; i++)
        if (!strcmp(r->idents[i].name, name))
            return &r->idents[i].ident;
    return NULL;
}

uint64_t report_counter(const report *r, const char *name)
{
    for (size_t i = 0; i < r->n_counters; i++)
        if (!strcmp(r->counters[i].name, name))
            return r->counters[i].value;
    return 0;
}

/* ---------------------------------------------------------------- the sink */

/* A finding from the analysis (live mode prints it: console.c). */
static void sink_finding(void *ctx, const an_finding *f)
{
    report *r = ctx;
    rep_finding rf;
    finding_from_an(&rf, f);
    upsert_finding(r, &rf, f->evidence);
}

static void sink_node(void *ctx, const an_node *n)
{
    rep_node rn;
    memset(&rn, 0, sizeof rn);
    copy_field(rn.observed, sizeof rn.observed, n->observed);
    copy_field(rn.announced, sizeof rn.announced, n->announced);
    copy_field(rn.node_id, sizeof rn.node_id, n->node_id);
    copy_field(rn.role, sizeof rn.role, n->role);
    rn.slots_owned = n->slots_owned;
    rn.commands = n->commands;
    report_add_node(ctx, &rn);
}

/* Put entry (hash | flags) into a set of size entries; returns the slot. */
static uint64_t *client_slot(uint64_t *set, size_t size, uint64_t hash)
{
    size_t i = (size_t)(hash >> 20) & (size - 1);
    while (set[i] && (set[i] & ~3ull) != hash)
        i = (i + 1) & (size - 1);
    return &set[i];
}

/* Double the client set (or create it). 0, or -1 when it may not grow. */
static int grow_client_set(report *r)
{
    size_t size = r->client_set_size ? r->client_set_size * 2 : 4096;
    uint64_t *set;
    if (size > CLIENT_SET_MAX || !(set = calloc(size, sizeof *set)))
        return -1;
    for (size_t i = 0; i < r->client_set_size; i++)
        if (r->client_set[i])
            *client_slot(set, size, r->client_set[i] & ~3ull) = r->client_set[i];
    free(r->client_set);
    r->client_set = set;
    r->client_set_size = size;
    return 0;
}

/* Count a client record: a name seen before (a client the analyzer evicted
 * and met again) counts once, as its merged database row does. */
static void sink_client(void *ctx, const an_client *c)
{
    report *r = ctx;
    uint64_t flags = (c->cluster_aware ? CLIENT_AWARE : 0) | (c->is_node ? CLIENT_NODE : 0);
    uint64_t hash = (hash_text(c->name, 0) | 4) & ~3ull, *slot, old;
    report_add_client(r, c->name, &c->ident);
    if (r->client_set_used * 2 >= r->client_set_size && grow_client_set(r) != 0) {
        /* Too many to remember: count the record as it comes. */
        r->clients++;
        r->clients_aware += flags & CLIENT_AWARE ? 1 : 0;
        r->clients_nodes += flags & CLIENT_NODE ? 1 : 0;
        return;
    }
    slot = client_slot(r->client_set, r->client_set_size, hash);
    old = *slot ? *slot & 3 : 0;
    if (!*slot) {
        r->clients++;
        r->client_set_used++;
    }
    r->clients_aware += (flags & CLIENT_AWARE) && !(old & CLIENT_AWARE) ? 1 : 0;
    r->clients_nodes += (flags & CLIENT_NODE) && !(old & CLIENT_NODE) ? 1 : 0;
    *slot = hash | old | flags;
}

static void sink_migration(void *ctx, const an_migration *m)
{
    report_add_migration(ctx, m);
}

static void sink_failover(void *ctx, const an_failover_rec *f)
{
    rep_failover rf;
    memset(&rf, 0, sizeof rf);
    rf.ts_us = f->ts_us;
    copy_field(rf.kind, sizeof rf.kind, f->kind);
    copy_field(rf.old_master, sizeof rf.old_master, f->old_master);
    copy_field(rf.old_id, sizeof rf.old_id, f->old_id);
    copy_field(rf.new_master, sizeof rf.new_master, f->new_master);
    copy_field(rf.new_id, sizeof rf.new_id, f->new_id);
    rf.config_epoch = f->config_epoch;
    rf.detected_us = f->detected_us;
    rf.elected_us = f->elected_us;
    rf.done_us = f->done_us;
    rf.votes = f->votes;
    rf.slots = f->slots;
    report_add_failover(ctx, &rf);
}

static void sink_owner_row(void *ctx, const an_owner_row *o)
{
    report *r = ctx;
    if (strcmp(o->source, "bus") == 0)
        r->owner_rows_bus++;
    else
        r->owner_rows_clients++;
}

/* "client", "slot", "node", "all" as the database stores them. */
static const char *scope_name(an_scope s)
{
    return s == AN_SCOPE_CLIENT ? "client" : s == AN_SCOPE_SLOT ? "slot"
                                         : s == AN_SCOPE_NODE ? "node" : "all";
}

static void sink_latency(void *ctx, const an_latency *l)
{
    rep_latency rl;
    memset(&rl, 0, sizeof rl);
    copy_field(rl.scope, sizeof rl.scope, scope_name(l->scope));
    copy_field(rl.key, sizeof rl.key, l->key);
    rl.redirected = l->redirected ? 1 : 0;
    rl.count = l->count;
    rl.p50_us = l->p50_us;
    rl.p90_us = l->p90_us;
    rl.p99_us = l->p99_us;
    rl.max_us = l->max_us;
    rl.total_us = l->total_us;
    rl.extra_us = l->extra_us;
    rl.extra_round_trips = l->extra_round_trips;
    report_add_latency(ctx, &rl);
}

static void sink_convergence(void *ctx, const an_convergence *c)
{
    rep_convergence rc;
    memset(&rc, 0, sizeof rc);
    copy_field(rc.client, sizeof rc.client, c->client);
    rc.slot_lo = c->slot_lo;
    rc.slot_hi = c->slot_hi;
    copy_field(rc.old_node, sizeof rc.old_node, c->old_node);
    copy_field(rc.new_node, sizeof rc.new_node, c->new_node);
    copy_field(rc.source, sizeof rc.source, c->source ? c->source : "");
    rc.flip_us = c->flip_us;
    rc.last_stale_us = c->last_stale_us;
    rc.converged_us = c->converged_us;
    rc.config_epoch = c->config_epoch;
    rc.stale_commands = c->stale_commands;
    rc.moved_replies = c->moved_replies;
    rc.at_risk_writes = c->at_risk_writes;
    report_add_convergence(ctx, &rc);
}

an_sink report_sink(report *r)
{
    an_sink s;
    memset(&s, 0, sizeof s);
    s.ctx = r;
    s.finding = sink_finding;
    s.node = sink_node;
    s.client = sink_client;
    s.migration = sink_migration;
    s.latency = sink_latency;
    s.failover = sink_failover;
    s.convergence = sink_convergence;
    s.owner_row = sink_owner_row;
    return s;
}

/* ---------------------------------------------------------------- order */

/* Impact: worst severity, then most extra latency, then most occurrences. */
static int cmp_finding(const void *a, const void *b)
{
    const rep_finding *x = a, *y = b;
    if (x->severity_level != y->severity_level)
        return y->severity_level > x->severity_level ? 1 : -1;
    if (x->extra_latency_us != y->extra_latency_us)
        return y->extra_latency_us > x->extra_latency_us ? 1 : -1;
    if (x->count != y->count)
        return y->count > x->count ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The first time a migration shows: first ASK, else a SETSLOT, else the flip. */
static int64_t migration_start(const an_migration *m)
{
    if (m->first_ask_us)
        return m->first_ask_us;
    if (m->importing_us)
        return m->importing_us;
    if (m->migrating_us)
        return m->migrating_us;
    return m->flip_us;
}

static int cmp_migration(const void *a, const void *b)
{
    const an_migration *x = a, *y = b;
    int c;
    if (migration_start(x) != migration_start(y))
        return migration_start(x) < migration_start(y) ? -1 : 1;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    if ((c = strcmp(x->source, y->source)) != 0)
        return c;
    return strcmp(x->target, y->target);
}

static int cmp_counter(const void *a, const void *b)
{
    return strcmp(((const rep_counter *)a)->name, ((const rep_counter *)b)->name);
}

static int cmp_node(const void *a, const void *b)
{
    const rep_node *x = a, *y = b;
    int c = strcmp(x->observed, y->observed);
    return c ? c : strcmp(x->announced, y->announced);
}

/* By scope, redirected first, most extra time, most operations, key. */
static int cmp_latency(const void *a, const void *b)
{
    const rep_latency *x = a, *y = b;
    int c = strcmp(x->scope, y->scope);
    if (c)
        return c;
    if (x->redirected != y->redirected)
        return y->redirected - x->redirected;
    if (x->extra_us != y->extra_us)
        return y->extra_us > x->extra_us ? 1 : -1;
    if (x->count != y->count)
        return y->count > x->count ? 1 : -1;
    return strcmp(x->key, y->key);
}

/* The slowest first: the longest time stale after the flip, then flip time,
 * client and slots (a total order: the same report from the run and the db). */
static int64_t stale_us(const rep_convergence *c)
{
    return c->last_stale_us ? c->last_stale_us - c->flip_us : -1;
}

static int cmp_convergence(const void *a, const void *b)
{
    const rep_convergence *x = a, *y = b;
    if (stale_us(x) != stale_us(y))
        return stale_us(x) > stale_us(y) ? -1 : 1;
    if (x->flip_us != y->flip_us)
        return x->flip_us < y->flip_us ? -1 : 1;
    int c = strcmp(x->client, y->client);
    if (c)
        return c;
    return x->slot_lo != y->slot_lo ? (x->slot_lo < y->slot_lo ? -1 : 1)
                                    : strcmp(x->old_node, y->old_node);
}

void report_sort(report *r)
{
    if (r->n_convergence)
        qsort(r->convergence, r->n_convergence, sizeof *r->convergence, cmp_convergence);
    if (r->n_findings)
        qsort(r->findings, r->n_findings, sizeof *r->findings, cmp_finding);
    if (r->n_migrations)
        qsort(r->migrations, r->n_migrations, sizeof *r->migrations, cmp_migration);
    if (r->n_counters)
        qsort(r->counters, r->n_counters, sizeof *r->counters, cmp_counter);
    if (r->n_nodes)
        qsort(r->nodes, r->n_nodes, sizeof *r->nodes, cmp_node);
    if (r->n_latency)
        qsort(r->latency, r->n_latency, sizeof *r->latency, cmp_latency);
    /* The indexes point into the old order: rebuild them. */
    if (r->finding_index) {
        memset(r->finding_index, 0, FINDING_INDEX_SIZE * sizeof *r->finding_index);
        for (size_t i = 0; i < r->n_findings; i++)
            *index_slot(r, r->findings[i].id) = (uint32_t)(i + 1);
    }
    if (r->latency_index) {
        memset(r->latency_index, 0, LATENCY_INDEX_SIZE * sizeof *r->latency_index);
        for (size_t i = 0; i < r->n_latency; i++)
            *latency_slot(r, &r->latency[i]) = (uint32_t)(i + 1);
    }
}
