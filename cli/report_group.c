/*
 * report_group.c - the report's findings grouped for a person: by client,
 * then by kind.
 *
 * The analyzer's findings are per (kind, client, node, slot): a library
 * mistake repeated on 50 slots is 50 findings. The report shows one block
 * per (client, kind) instead: its slot set as ranges, the sums of its
 * findings, and its evidence reduced to one example per distinct pattern
 * (the sequence of event names, commands and reply kinds). Clients come in
 * impact order (worst severity, then cost, then occurrences); cluster-side
 * findings (client "") are a group of their own, kept apart.
 *
 * Grouping works on the sorted model (report_sort) and only points into it:
 * the model must not change while the groups are in use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report_group.h"

/* Order of finding indexes: client, kind, then impact (their order in the
 * sorted model). qsort takes no context: the model is passed here (the
 * report is built and printed on one thread). */
static const report *sort_report;
static int cmp_by_block(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const rep_finding *x = &sort_report->findings[i], *y = &sort_report->findings[j];
    int c = strcmp(x->client, y->client);
    if (c)
        return c;
    if ((c = strcmp(x->kind, y->kind)) != 0)
        return c;
    return i < j ? -1 : i > j;
}

/* The evidence pattern of a finding: for its first events, what happened,
 * the command and the reply's first word ("ask GET -ASK|retry without
 * ASKING GET -MOVED"); "" when it has no events. */
void rg_pattern_of(const rep_finding *f, char *out, size_t size)
{
    json_span root, events;
    size_t n, len = 0;
    out[0] = 0;
    if (!f->evidence || !json_valid(f->evidence))
        return;
    root.p = f->evidence;
    root.len = strlen(f->evidence);
    events = json_member(root, "events");
    if (!events.p || events.p[0] != '[')
        return;
    n = json_count(events);
    for (size_t i = 0; i < n && i < RG_PATTERN_EVENTS && len + 1 < size; i++) {
        json_span ev = json_element(events, i);
        char what[64], cmd[40], reply[64];
        json_text(json_member(ev, "what"), what, sizeof what);
        json_text(json_member(ev, "cmd"), cmd, sizeof cmd);
        json_text(json_member(ev, "reply"), reply, sizeof reply);
        reply[strcspn(reply, " ")] = 0;
        len += (size_t)snprintf(out + len, size - len, "%s%s%s%s%s%s", i ? " | " : "", what,
                                cmd[0] ? " " : "", cmd, reply[0] ? " " : "", reply);
    }
    if (len >= size)
        out[size - 1] = 0;
}

/* Fill block b's totals, nodes and patterns from its findings. */
static void block_totals(const report *r, rg_block *b, const size_t *idx)
{
    /* the first finding's severity until a worse one (a crafted database may
     * hold any level) */
    b->severity_level = r->findings[idx[b->first]].severity_level;
    b->severity = r->findings[idx[b->first]].severity;
    for (size_t k = 0; k < b->n; k++) {
        const rep_finding *f = &r->findings[idx[b->first + k]];
        char pat[RG_PATTERN_MAX];
        size_t p;
        if (f->severity_level > b->severity_level) {
            b->severity_level = f->severity_level;
            b->severity = f->severity;
        }
        b->count += f->count;
        b->operations += f->operations;
        b->extra_us += f->extra_latency_us;
        if (!b->first_us || f->first_us < b->first_us)
            b->first_us = f->first_us;
        if (f->last_us > b->last_us)
            b->last_us = f->last_us;
        if (f->slot >= 0)
            b->slots++;
        if (f->node[0]) {
            size_t q = 0;
            while (q < b->n_nodes && strcmp(r->findings[b->node[q]].node, f->node))
                q++;
            if (q == b->n_nodes && b->n_nodes < RG_NODES)
                b->node[b->n_nodes++] = idx[b->first + k];
            else if (q == b->n_nodes)
                b->more_nodes = 1;
        }
        rg_pattern_of(f, pat, sizeof pat);
        for (p = 0; p < b->n_patterns && strcmp(b->pattern[p].text, pat); p++)
            ;
        if (p == b->n_patterns && p < RG_PATTERNS) {
            snprintf(b->pattern[p].text, sizeof b->pattern[p].text, "%s", pat);
            b->pattern[p].example = idx[b->first + k];
            b->n_patterns++;
        } else if (p == b->n_patterns) {
            b->other_pattern_findings++;
            continue;
        }
        b->pattern[p].findings++;
    }
}

/* Impact order of blocks (and of clients): severity, cost, occurrences. */
static int cmp_impact(int sa, int64_t ea, uint64_t ca, int sb, int64_t eb, uint64_t cb)
{
    if (sa != sb)
        return sb - sa;
    if (ea != eb)
        return eb > ea ? 1 : -1;
    if (ca != cb)
        return cb > ca ? 1 : -1;
    return 0;
}

static int cmp_block(const void *a, const void *b)
{
    const rg_block *x = a, *y = b;
    int c = strcmp(x->client, y->client);
    if (c)
        return c;
    c = cmp_impact(x->severity_level, x->extra_us, x->count, y->severity_level, y->extra_us,
                   y->count);
    return c ? c : strcmp(x->kind, y->kind);
}

static int cmp_client(const void *a, const void *b)
{
    const rg_client *x = a, *y = b;
    int c = cmp_impact(x->severity_level, x->extra_us, x->count, y->severity_level, y->extra_us,
                       y->count);
    return c ? c : strcmp(x->name, y->name);
}

/* The redirected operations' extra time of scope/key in the latency list. */
static int64_t redirect_extra(const report *r, const char *scope, const char *key)
{
    for (size_t i = 0; i < r->n_latency; i++) {
        const rep_latency *l = &r->latency[i];
        if (l->redirected && !strcmp(l->scope, scope) && !strcmp(l->key, key))
            return l->extra_us;
    }
    return 0;
}

/* Cut the sorted indexes into blocks of one (client, kind). */
static int make_blocks(const report *r, rg_groups *g)
{
    for (size_t i = 0; i < r->n_findings;) {
        const rep_finding *f = &r->findings[g->idx[i]];
        size_t j = i + 1;
        rg_block *b;
        while (j < r->n_findings && !strcmp(r->findings[g->idx[j]].client, f->client) &&
               !strcmp(r->findings[g->idx[j]].kind, f->kind))
            j++;
        b = &g->blocks[g->n_blocks++];
        memset(b, 0, sizeof *b);
        b->client = f->client;
        b->kind = f->kind;
        b->first = i;
        b->n = j - i;
        block_totals(r, b, g->idx);
        i = j;
    }
    return 0;
}

/* One group per client (the cluster side apart), in impact order. */
static void make_clients(const report *r, rg_groups *g)
{
    for (size_t i = 0; i < g->n_blocks;) {
        const rg_block *b = &g->blocks[i];
        size_t j = i;
        rg_client *c;
        if (!b->client[0]) { /* the cluster side: blocks i.. of client "" */
            g->cluster_first = i;
            while (j < g->n_blocks && !g->blocks[j].client[0])
                j++;
            g->cluster_n = j - i;
            i = j;
            continue;
        }
        c = &g->clients[g->n_clients++];
        memset(c, 0, sizeof *c);
        c->name = b->client;
        c->first_block = i;
        c->ident = report_client_ident(r, b->client);
        for (; j < g->n_blocks && !strcmp(g->blocks[j].client, b->client); j++) {
            const rg_block *x = &g->blocks[j];
            if (x->severity_level > c->severity_level)
                c->severity_level = x->severity_level;
            c->extra_us += x->extra_us;
            c->count += x->count;
            c->findings += x->n;
        }
        c->n_blocks = j - i;
        c->redirect_extra_us = redirect_extra(r, "client", c->name);
        g->clients_extra_us += c->redirect_extra_us;
        i = j;
    }
    qsort(g->clients, g->n_clients, sizeof *g->clients, cmp_client);
}

int rg_build(const report *r, rg_groups *g)
{
    memset(g, 0, sizeof *g);
    g->redirect_extra_us = redirect_extra(r, "all", "all");
    if (r->n_findings == 0)
        return 0;
    g->idx = malloc(r->n_findings * sizeof *g->idx);
    g->blocks = malloc(r->n_findings * sizeof *g->blocks);
    g->clients = malloc(r->n_findings * sizeof *g->clients);
    if (!g->idx || !g->blocks || !g->clients) {
        rg_free(g);
        return -1;
    }
    for (size_t i = 0; i < r->n_findings; i++)
        g->idx[i] = i;
    sort_report = r;
    qsort(g->idx, r->n_findings, sizeof *g->idx, cmp_by_block);
    make_blocks(r, g);
    /* blocks by client, then impact; each block's findings stay together */
    qsort(g->blocks, g->n_blocks, sizeof *g->blocks, cmp_block);
    make_clients(r, g);
    return 0;
}

void rg_free(rg_groups *g)
{
    free(g->idx);
    free(g->blocks);
    free(g->clients);
    memset(g, 0, sizeof *g);
}

/* Compare two ints for qsort. */
static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

size_t rg_slot_ranges(const report *r, const rg_groups *g, const rg_block *b, char *out,
                      size_t size, size_t max_chars)
{
    int *slots = malloc((b->n ? b->n : 1) * sizeof *slots);
    size_t n = 0, len = 0, distinct = 0;
    out[0] = 0;
    if (!slots)
        return 0;
    for (size_t k = 0; k < b->n; k++) {
        int s = r->findings[g->idx[b->first + k]].slot;
        if (s >= 0)
            slots[n++] = s;
    }
    qsort(slots, n, sizeof *slots, cmp_int);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        char part[32];
        while (j + 1 < n && slots[j + 1] <= slots[j] + 1)
            j++;
        if (slots[j] == slots[i])
            snprintf(part, sizeof part, "%d", slots[i]);
        else
            snprintf(part, sizeof part, "%d-%d", slots[i], slots[j]);
        for (size_t k = i; k <= j; k++)
            distinct += k == i || slots[k] != slots[k - 1];
        if (len < size && (!max_chars || len + strlen(part) + 2 <= max_chars))
            len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "", part);
        else if (len < size && !strstr(out, ", ..."))
            len += (size_t)snprintf(out + len, size - len, ", ...");
        i = j + 1;
    }
    if (len >= size && size > 4)
        memcpy(out + size - 4, "...", 4);
    free(slots);
    return distinct;
}
