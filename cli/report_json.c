/*
 * report_json.c - the report as JSON lines, for jq.
 *
 * One object per line, each with a "type": report (the totals), input, node,
 * migration, finding, redirects (replies by kind), latency, counter. Findings
 * carry their evidence as a JSON value when it is valid JSON, else as a string.
 * In live mode findings are also printed as they are found, as type
 * "live_finding".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report_group.h"

/* One JSON object being written: the stream and whether a member was written. */
typedef struct jobj {
    FILE *out;
    int members;
} jobj;

/* Start an object with its "type". */
static jobj jbegin(FILE *out, const char *type)
{
    jobj j = {out, 1};
    fputs("{\"type\":", out);
    json_string(out, type);
    return j;
}

/* The member name, after a comma when needed. */
static void jname(jobj *j, const char *name)
{
    fputs(j->members++ ? "," : "", j->out);
    json_string(j->out, name);
    fputc(':', j->out);
}

static void jstr(jobj *j, const char *name, const char *value)
{
    jname(j, name);
    json_string(j->out, value);
}

static void jint(jobj *j, const char *name, int64_t value)
{
    jname(j, name);
    fprintf(j->out, "%" PRId64, value);
}

static void juint(jobj *j, const char *name, uint64_t value)
{
    jname(j, name);
    fprintf(j->out, "%" PRIu64, value);
}

static void jend(jobj *j)
{
    fputs("}\n", j->out);
}

void report_print_finding_json(const rep_finding *f, const char *type, FILE *out)
{
    jobj j = jbegin(out, type);
    juint(&j, "id", f->id);
    jstr(&j, "kind", f->kind);
    jstr(&j, "severity", f->severity);
    jstr(&j, "client", f->client);
    jstr(&j, "node", f->node);
    jint(&j, "slot", f->slot);
    jint(&j, "first_us", f->first_us);
    jint(&j, "last_us", f->last_us);
    juint(&j, "count", f->count);
    jint(&j, "extra_latency_us", f->extra_latency_us);
    juint(&j, "operations", f->operations);
    jstr(&j, "summary", f->summary);
    jname(&j, "evidence");
    if (f->evidence && json_valid(f->evidence))
        fputs(f->evidence, out);
    else if (f->evidence)
        json_string(out, f->evidence);
    else
        fputs("null", out);
    if (f->evidence_too_long) {
        jname(&j, "evidence_too_long");
        fputs("true", out);
    }
    jend(&j);
}

/* A client with findings: who it is, its kinds, what its redirects cost. */
static void print_client(const rg_client *c, FILE *out)
{
    static const an_ident none;
    const an_ident *id = c->ident ? c->ident : &none;
    jobj j = jbegin(out, "client");
    jstr(&j, "name", c->name);
    jstr(&j, "lib_name", id->lib_name);
    jstr(&j, "lib_ver", id->lib_ver);
    jstr(&j, "client_name", id->client_name);
    juint(&j, "findings", c->findings);
    juint(&j, "blocks", c->n_blocks);
    juint(&j, "count", c->count);
    jint(&j, "redirect_extra_us", c->redirect_extra_us);
    jend(&j);
}

/* One (client, kind) block: slots as ranges, sums, its findings' ids, nodes
 * and evidence patterns (each with the id of its worst finding). */
static void print_block(const report *r, const rg_groups *g, const rg_block *b, FILE *out)
{
    /* every slot as ranges: at worst 8192 single slots of up to 5 digits */
    enum { SLOTS_TEXT = RG_SLOTS_TEXT_MAX };
    char *slots = malloc(SLOTS_TEXT);
    size_t distinct = slots ? rg_slot_ranges(r, g, b, slots, SLOTS_TEXT, 0) : 0;
    jobj j = jbegin(out, "finding_block");
    jstr(&j, "client", b->client);
    jstr(&j, "kind", b->kind);
    jstr(&j, "severity", b->severity);
    jstr(&j, "slots", slots ? slots : "");
    free(slots);
    juint(&j, "slot_count", distinct);
    juint(&j, "findings", b->n);
    juint(&j, "count", b->count);
    juint(&j, "operations", b->operations);
    jint(&j, "first_us", b->first_us);
    jint(&j, "last_us", b->last_us);
    jint(&j, "extra_latency_us", b->extra_us);
    jname(&j, "nodes");
    for (size_t k = 0; k < b->n_nodes; k++) {
        fputs(k ? "," : "[", out);
        json_string(out, r->findings[b->node[k]].node);
    }
    fputs(b->n_nodes ? "]" : "[]", out);
    jname(&j, "finding_ids");
    for (size_t k = 0; k < b->n; k++)
        fprintf(out, "%s%" PRIu64, k ? "," : "[", r->findings[g->idx[b->first + k]].id);
    fputs(b->n ? "]" : "[]", out);
    jname(&j, "patterns");
    for (size_t p = 0; p < b->n_patterns; p++) {
        fputs(p ? ",{\"pattern\":" : "[{\"pattern\":", out);
        json_string(out, b->pattern[p].text);
        fprintf(out, ",\"findings\":%zu,\"example_id\":%" PRIu64 "}", b->pattern[p].findings,
                r->findings[b->pattern[p].example].id);
    }
    fputs(b->n_patterns ? "]" : "[]", out);
    juint(&j, "other_pattern_findings", b->other_pattern_findings);
    jend(&j);
}

/* The grouped view: clients in impact order, each followed by its blocks,
 * then the cluster side's blocks. */
static void print_groups(const report *r, const rg_groups *g, FILE *out)
{
    for (size_t i = 0; i < g->n_clients; i++) {
        const rg_client *c = &g->clients[i];
        print_client(c, out);
        for (size_t k = 0; k < c->n_blocks; k++)
            print_block(r, g, &g->blocks[c->first_block + k], out);
    }
    for (size_t k = 0; k < g->cluster_n; k++)
        print_block(r, g, &g->blocks[g->cluster_first + k], out);
}

/* The totals line. */
static void print_totals(const report *r, const rg_groups *g, FILE *out)
{
    int64_t first = 0, last = 0;
    jobj j;
    for (size_t i = 0; i < r->n_inputs; i++) {
        if (r->inputs[i].packets == 0)
            continue;
        if (!first || r->inputs[i].first_us < first)
            first = r->inputs[i].first_us;
        if (r->inputs[i].last_us > last)
            last = r->inputs[i].last_us;
    }
    j = jbegin(out, "report");
    jstr(&j, "slotscope_version", SLOTSCOPE_VERSION);
    jname(&j, "finished");
    fputs(r->interrupted || r->in_progress || r->stopped_by[0] ? "false" : "true", out);
    if (r->in_progress) {
        jname(&j, "in_progress");
        fputs("true", out);
    }
    if (r->stopped_by[0])
        jstr(&j, "stopped_by", r->stopped_by);
    jint(&j, "first_us", first);
    jint(&j, "last_us", last);
    juint(&j, "inputs", r->n_inputs);
    juint(&j, "packets", report_counter(r, "packets"));
    juint(&j, "connections", report_counter(r, "connections"));
    juint(&j, "commands", report_counter(r, "commands"));
    juint(&j, "clients", r->clients);
    juint(&j, "clients_cluster_aware", r->clients_aware);
    juint(&j, "nodes", r->n_nodes);
    juint(&j, "migrations", r->n_migrations);
    juint(&j, "failovers", r->n_failovers);
    jstr(&j, "ownership_source", report_ownership_source(r));
    juint(&j, "findings", r->n_findings);
    juint(&j, "redirects", report_counter(r, "redirects"));
    juint(&j, "not_shown", r->dropped);
    juint(&j, "finding_blocks", g->n_blocks);
    juint(&j, "clients_with_findings", g->n_clients);
    jint(&j, "redirect_extra_us", g->redirect_extra_us);
    jint(&j, "clients_with_findings_extra_us", g->clients_extra_us);
    if (r->filter[0])
        jstr(&j, "filter", r->filter);
    if (r->window[0])
        jstr(&j, "window", r->window);
    jend(&j);
}

/* files: the input is a capture file, which records the drops only in
 * pcapng statistics blocks (drops_recorded, kernel_drops then); else their
 * 0 measures nothing. */
static void print_input(const rep_input *in, int files, FILE *out)
{
    jobj j = jbegin(out, "input");
    jstr(&j, "name", in->name);
    jstr(&j, "linktype", in->linktype);
    juint(&j, "packets", in->packets);
    juint(&j, "bytes", in->bytes);
    jint(&j, "first_us", in->first_us);
    jint(&j, "last_us", in->last_us);
    juint(&j, "kernel_drops", in->kernel_drops);
    juint(&j, "if_drops", in->if_drops);
    jname(&j, "drops_recorded");
    fputs(files && !in->drops_recorded && in->kernel_drops == 0 ? "false" : "true", out);
    juint(&j, "time_backwards", in->time_backwards);
    jstr(&j, "error", in->error);
    /* only when there is something to say: a plain input's line is unchanged */
    if (in->compression[0])
        jstr(&j, "compression", in->compression);
    if (in->time_offset_us != 0)
        jint(&j, "time_offset_us", in->time_offset_us);
    if (in->skew_shared > 0) {
        jint(&j, "skew_us", in->skew_us);
        juint(&j, "skew_shared", in->skew_shared);
        juint(&j, "skew_ref", in->skew_ref);
    }
    jend(&j);
}

static void print_node(const rep_node *n, FILE *out)
{
    jobj j = jbegin(out, "node");
    jstr(&j, "observed", n->observed);
    jstr(&j, "announced", n->announced);
    jstr(&j, "node_id", n->node_id);
    jstr(&j, "role", n->role);
    juint(&j, "slots_owned", n->slots_owned);
    juint(&j, "commands", n->commands);
    jend(&j);
}

static void print_migration(const an_migration *m, FILE *out)
{
    jobj j = jbegin(out, "migration");
    jint(&j, "slot", m->slot);
    jstr(&j, "source", m->source);
    jstr(&j, "target", m->target);
    jint(&j, "first_ask_us", m->first_ask_us);
    jint(&j, "last_ask_us", m->last_ask_us);
    jint(&j, "flip_us", m->flip_us);
    jint(&j, "importing_us", m->importing_us);
    jint(&j, "migrating_us", m->migrating_us);
    juint(&j, "asks", m->asks);
    juint(&j, "tryagains", m->tryagains);
    juint(&j, "moveds", m->moveds);
    juint(&j, "keys_migrated", m->keys_migrated);
    jint(&j, "complete", m->complete);
    jend(&j);
}

static void print_failover(const rep_failover *f, FILE *out)
{
    jobj j = jbegin(out, "failover");
    jint(&j, "ts_us", f->ts_us);
    jstr(&j, "kind", f->kind);
    jstr(&j, "old_master", f->old_master);
    jstr(&j, "old_id", f->old_id);
    jstr(&j, "new_master", f->new_master);
    jstr(&j, "new_id", f->new_id);
    juint(&j, "config_epoch", f->config_epoch);
    jint(&j, "detected_us", f->detected_us);
    jint(&j, "elected_us", f->elected_us);
    jint(&j, "done_us", f->done_us);
    juint(&j, "votes", f->votes);
    juint(&j, "slots", f->slots);
    jend(&j);
}

static void print_convergence(const rep_convergence *c, FILE *out)
{
    jobj j = jbegin(out, "convergence");
    jstr(&j, "client", c->client);
    jint(&j, "slot_lo", c->slot_lo);
    jint(&j, "slot_hi", c->slot_hi);
    jstr(&j, "old_node", c->old_node);
    jstr(&j, "new_node", c->new_node);
    jstr(&j, "source", c->source);
    jint(&j, "flip_us", c->flip_us);
    juint(&j, "config_epoch", c->config_epoch);
    jint(&j, "last_stale_us", c->last_stale_us);
    jint(&j, "converged_us", c->converged_us);
    juint(&j, "stale_commands", c->stale_commands);
    juint(&j, "moved_replies", c->moved_replies);
    juint(&j, "at_risk_writes", c->at_risk_writes);
    jend(&j);
}

static void print_redirects(const report *r, FILE *out)
{
    jobj j = jbegin(out, "redirects");
    juint(&j, "total", report_counter(r, "redirects"));
    juint(&j, "moved", report_counter(r, "moved"));
    juint(&j, "ask", report_counter(r, "ask"));
    juint(&j, "tryagain", report_counter(r, "tryagain"));
    juint(&j, "crossslot", report_counter(r, "crossslot"));
    juint(&j, "clusterdown", report_counter(r, "clusterdown"));
    juint(&j, "redirected_operations", report_counter(r, "redirected_operations"));
    juint(&j, "operations", report_counter(r, "operations"));
    jend(&j);
}

static void print_latency(const rep_latency *l, FILE *out)
{
    jobj j = jbegin(out, "latency");
    jstr(&j, "scope", l->scope);
    jstr(&j, "key", l->key);
    jint(&j, "redirected", l->redirected);
    juint(&j, "count", l->count);
    jint(&j, "p50_us", l->p50_us);
    jint(&j, "p90_us", l->p90_us);
    jint(&j, "p99_us", l->p99_us);
    jint(&j, "max_us", l->max_us);
    jint(&j, "total_us", l->total_us);
    jint(&j, "extra_us", l->extra_us);
    juint(&j, "extra_round_trips", l->extra_round_trips);
    jend(&j);
}

static void print_counter(const rep_counter *c, FILE *out)
{
    jobj j = jbegin(out, "counter");
    jstr(&j, "name", c->name);
    juint(&j, "value", c->value);
    jend(&j);
}

void report_print_json(const report *r, FILE *out)
{
    rg_groups g;
    int grouped = rg_build(r, &g) == 0;
    if (!grouped)
        memset(&g, 0, sizeof g);
    print_totals(r, &g, out);
    for (size_t i = 0; i < r->n_inputs; i++)
        print_input(&r->inputs[i], r->from_files, out);
    for (size_t i = 0; i < r->n_nodes; i++)
        print_node(&r->nodes[i], out);
    for (size_t i = 0; i < r->n_migrations; i++)
        print_migration(&r->migrations[i], out);
    for (size_t i = 0; i < r->n_failovers; i++)
        print_failover(&r->failovers[i], out);
    /* like the text: only with bus traffic (other captures' JSON unchanged) */
    for (size_t i = 0; r->owner_rows_bus && i < r->n_convergence; i++)
        print_convergence(&r->convergence[i], out);
    for (size_t i = 0; i < r->n_findings; i++)
        report_print_finding_json(&r->findings[i], "finding", out);
    print_groups(r, &g, out);
    if (grouped)
        rg_free(&g);
    print_redirects(r, out);
    for (size_t i = 0; i < r->n_latency; i++)
        print_latency(&r->latency[i], out);
    for (size_t i = 0; i < r->n_counters; i++)
        print_counter(&r->counters[i], out);
}
