/*
 * report_text.c - the incident report as text.
 *
 * Four parts, in the order an on-call engineer asks:
 *   what happened           capture span, inputs, traffic, nodes, slot migrations
 *   findings                by client (impact order), then by kind: one block
 *                           per (client, kind) with its slots as ranges and
 *                           one line of evidence per distinct pattern; the
 *                           cluster side apart (--full: every finding too)
 *   what the redirects cost redirect replies, direct vs redirected latency
 *   what the capture could not see   gaps, drops, mid-stream, out of sync, ...
 * Every string that came from the capture goes through cli_print_safe, and the
 * whole text is rendered in memory and written through cli_write_safe at the
 * end (print_escaped): one escaping path for every byte that reaches stdout.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/report_group.h"

#define TEXT_MAX_CLIENTS 20     /* clients with findings shown (--full: all) */
#define TEXT_CLIENT_BLOCKS 4    /* kinds shown per client: about a screen each */
#define TEXT_BLOCK_PATTERNS 2   /* evidence patterns shown per kind */
#define TEXT_MAX_NODES 20
#define TEXT_MAX_MIGRATIONS 30  /* migration lines (ranges of slots count once) */
#define TEXT_MAX_TOP 5          /* clients / slots in the latency part */
#define TEXT_EVIDENCE_CHARS 240 /* evidence shown when it is not a list of events */
#define TEXT_EVIDENCE_EVENTS 3  /* events shown per finding */

/* ---------------------------------------------------------------- formatting */

/* UTC time of us, with the date or without ("22:13:20.500"), rounded to the
 * millisecond as SQLite's strftime does (the canned queries show the same). */
static const char *fmt_time(char *buf, size_t size, int64_t us, int with_date)
{
    /* beyond the year 5138 (what capture and report_db bound times to): "?" */
    int64_t ms = us > 0 && us <= 100000000000000000LL ? (us + 500) / 1000 : 0;
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    char hms[32];
    if (us <= 0 || us > 100000000000000000LL || !gmtime_r(&sec, &tm)) {
        snprintf(buf, size, "?");
        return buf;
    }
    strftime(hms, sizeof hms, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03d", hms, (int)(ms % 1000));
    return buf;
}

/* A duration: "850 us", "3.214 ms", "2.500 s", "12m05s", "3h02m". */
static const char *fmt_dur(char *buf, size_t size, int64_t us)
{
    if (us < 0)
        us = 0;
    if (us < 1000)
        snprintf(buf, size, "%" PRId64 " us", us);
    else if (us < 1000000)
        snprintf(buf, size, "%.3f ms", (double)us / 1e3);
    else if (us < 120 * 1000000LL)
        snprintf(buf, size, "%.3f s", (double)us / 1e6);
    else if (us < 3600 * 1000000LL)
        snprintf(buf, size, "%dm%02ds", (int)(us / 60000000), (int)(us / 1000000 % 60));
    else
        snprintf(buf, size, "%dh%02dm", (int)(us / 3600000000LL), (int)(us / 60000000 % 60));
    return buf;
}

/* A byte count: "512 bytes", "62.5 KiB", "1.2 GiB". */
static const char *fmt_bytes(char *buf, size_t size, uint64_t n)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = -1;
    if (n < 1024) {
        snprintf(buf, size, "%" PRIu64 " bytes", n);
        return buf;
    }
    while (v >= 1024 && u < 3) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, "%.1f %s", v, unit[u]);
    return buf;
}

/* A latency in milliseconds with three decimals. */
static const char *fmt_ms(char *buf, size_t size, int64_t us)
{
    snprintf(buf, size, "%.3f ms", (double)us / 1e3);
    return buf;
}

/* ---------------------------------------------------------------- what happened */

/* The earliest first and latest last record time over the inputs. */
static void capture_span(const report *r, int64_t *first, int64_t *last)
{
    *first = *last = 0;
    for (size_t i = 0; i < r->n_inputs; i++) {
        const rep_input *in = &r->inputs[i];
        if (in->packets == 0)
            continue;
        if (!*first || in->first_us < *first)
            *first = in->first_us;
        if (in->last_us > *last)
            *last = in->last_us;
    }
}

/* Does the capture cross midnight UTC? Then times carry their date. */
static int spans_days(const report *r)
{
    int64_t first, last;
    capture_span(r, &first, &last);
    return first / 86400000000LL != last / 86400000000LL;
}

static void print_span(const report *r, FILE *out)
{
    char a[48], b[48], d[32];
    int64_t first, last;
    capture_span(r, &first, &last);
    if (!first) {
        fprintf(out, "  capture      no packets\n");
        return;
    }
    fprintf(out, "  capture      %s .. %s UTC (%s)\n", fmt_time(a, sizeof a, first, 1),
            fmt_time(b, sizeof b, last, 1), fmt_dur(d, sizeof d, last - first));
}

static void print_inputs(const report *r, FILE *out)
{
    for (size_t i = 0; i < r->n_inputs; i++) {
        const rep_input *in = &r->inputs[i];
        char b[32];
        fprintf(out, "  %-12s ", i == 0 ? (r->n_inputs > 1 ? "inputs" : "input") : "");
        cli_print_safe(out, in->name);
        fprintf(out, ": %s, %" PRIu64 " packets, %s", in->linktype, in->packets,
                fmt_bytes(b, sizeof b, in->bytes));
        /* only what is there: a plain input's line stays as it was */
        if (in->compression[0])
            fprintf(out, ", %s", in->compression);
        if (in->time_offset_us != 0)
            fprintf(out, ", times shifted %+.3f ms", (double)in->time_offset_us / 1000.0);
        if (in->skew_shared > 0 && in->skew_ref >= 1 && in->skew_ref <= r->n_inputs) {
            fprintf(out, ", clock %+.3f ms against ", (double)in->skew_us / 1000.0);
            cli_print_safe(out, r->inputs[in->skew_ref - 1].name);
            fprintf(out, " (%" PRIu64 " shared segments)", in->skew_shared);
        }
        if (in->error[0]) {
            fputs(", stopped early (see below)", out);
        }
        fputc('\n', out);
    }
}

/* "s" unless n is one. */
static const char *plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

static void print_traffic(const report *r, FILE *out)
{
    uint64_t packets = report_counter(r, "packets"), conns = report_counter(r, "connections");
    uint64_t commands = report_counter(r, "commands");
    fprintf(out,
            "  traffic      %" PRIu64 " packet%s, %" PRIu64 " connection%s, %" PRIu64
            " command%s from %" PRIu64 " client%s (%" PRIu64 " cluster-aware",
            packets, plural(packets), conns, plural(conns), commands, plural(commands),
            r->clients, plural(r->clients), r->clients_aware);
    if (r->clients_nodes)
        fprintf(out, "; %" PRIu64 " %s cluster node%s", r->clients_nodes,
                r->clients_nodes == 1 ? "is a" : "are", plural(r->clients_nodes));
    fputs(")\n", out);
}

static void print_nodes(const report *r, FILE *out)
{
    if (r->n_nodes == 0) {
        fprintf(out, "  nodes        none identified\n");
        return;
    }
    for (size_t i = 0; i < r->n_nodes && i < TEXT_MAX_NODES; i++) {
        const rep_node *n = &r->nodes[i];
        fprintf(out, "  %-12s ", i == 0 ? "nodes" : "");
        cli_print_safe(out, n->observed[0] ? n->observed : n->announced);
        fprintf(out, " %s, %u slots, %" PRIu64 " commands", n->role[0] ? n->role : "role unknown",
                n->slots_owned, n->commands);
        if (n->observed[0] && n->announced[0] && strcmp(n->observed, n->announced)) {
            fputs(", announced as ", out);
            cli_print_safe(out, n->announced);
        }
        if (n->node_id[0])
            fprintf(out, ", id %s", n->node_id);
        fputc('\n', out);
    }
    if (r->n_nodes > TEXT_MAX_NODES)
        fprintf(out, "  %-12s ... and %zu more (query 'nodes')\n", "", r->n_nodes - TEXT_MAX_NODES);
}

/* How many migrations from i on form one run: consecutive slots with the same
 * source, target and completeness (a reshard moves slots one after another). */
static size_t migration_run(const report *r, size_t i)
{
    size_t n = 1;
    while (i + n < r->n_migrations) {
        const an_migration *a = &r->migrations[i + n - 1], *b = &r->migrations[i + n];
        if (b->slot != a->slot + 1 || strcmp(a->source, b->source) ||
            strcmp(a->target, b->target) || a->complete != b->complete)
            break;
        n++;
    }
    return n;
}

/* One line for migrations[i .. i+n): slots, nodes, ASK window, counts. */
static void print_migration_run(const report *r, size_t i, size_t n, int days, FILE *out)
{
    const an_migration *m = &r->migrations[i];
    int64_t first = 0, last = 0, flip = 0;
    uint64_t asks = 0, tryagains = 0, keys = 0;
    char a[48], b[48], d[32], slots[48];
    for (size_t k = i; k < i + n; k++) {
        const an_migration *x = &r->migrations[k];
        if (x->first_ask_us && (!first || x->first_ask_us < first))
            first = x->first_ask_us;
        if (x->last_ask_us > last)
            last = x->last_ask_us;
        if (x->flip_us > flip)
            flip = x->flip_us;
        asks += x->asks;
        tryagains += x->tryagains;
        keys += x->keys_migrated;
    }
    if (n == 1)
        snprintf(slots, sizeof slots, "slot %d", m->slot);
    else
        snprintf(slots, sizeof slots, "slots %d-%d (%zu)", m->slot, m->slot + (int)n - 1, n);
    fprintf(out, "  %-12s %s ", "", slots);
    cli_print_safe(out, m->source[0] ? m->source : "?");
    fputs(" -> ", out);
    cli_print_safe(out, m->target[0] ? m->target : "?");
    if (first)
        fprintf(out, ": ASK %s .. %s (%s), %" PRIu64 " ASK", fmt_time(a, sizeof a, first, days),
                fmt_time(b, sizeof b, last, days), fmt_dur(d, sizeof d, last - first), asks);
    else
        fputs(": no ASK seen", out);
    if (tryagains)
        fprintf(out, ", %" PRIu64 " TRYAGAIN", tryagains);
    if (keys)
        fprintf(out, ", %" PRIu64 " keys moved", keys);
    if (flip)
        fprintf(out, ", owner changed %s", fmt_time(a, sizeof a, flip, days));
    fputs(m->complete == AN_MIG_ABORTED ? ", aborted (SETSLOT STABLE)\n"
          : m->complete                ? "\n"
                                       : ", no end seen\n", out);
}

static void print_migrations(const report *r, FILE *out)
{
    int days = spans_days(r);
    size_t lines = 0, i = 0;
    if (r->n_migrations == 0) {
        fprintf(out, "  migrations   none seen\n");
        return;
    }
    fprintf(out, "  migrations   %zu slot migration%s\n", r->n_migrations,
            r->n_migrations == 1 ? "" : "s");
    while (i < r->n_migrations && lines < TEXT_MAX_MIGRATIONS) {
        size_t n = migration_run(r, i);
        print_migration_run(r, i, n, days, out);
        i += n;
        lines++;
    }
    if (i < r->n_migrations)
        fprintf(out, "  %-12s ... and %zu more (query 'migrations')\n", "", r->n_migrations - i);
}

/* The failovers beside the migrations, and where slot ownership came from
 * (only when the capture has cluster-bus traffic: otherwise ownership is
 * what the migrations above show). */
static void print_failovers(const report *r, FILE *out)
{
    int days = spans_days(r);
    char a[48], b[48], c[48];
    if (!r->owner_rows_bus && r->n_failovers == 0)
        return;
    if (r->owner_rows_bus)
        fprintf(out, "  ownership    from the cluster bus (the masters' claims and config "
                     "epochs); query 'slot_owners'\n");
    if (r->n_failovers == 0) {
        fprintf(out, "  failovers    none seen\n");
        return;
    }
    fprintf(out, "  failovers    %zu failover%s\n", r->n_failovers, r->n_failovers == 1 ? "" : "s");
    for (size_t i = 0; i < r->n_failovers && i < TEXT_MAX_MIGRATIONS; i++) {
        const rep_failover *f = &r->failovers[i];
        fprintf(out, "  %-12s ", "");
        cli_print_safe(out, f->kind);
        fputc(' ', out);
        cli_print_safe(out, f->old_master[0] ? f->old_master : "?");
        fputs(" -> ", out);
        cli_print_safe(out, f->new_master[0] ? f->new_master : "?");
        fprintf(out, ", config epoch %" PRIu64 ", %u slots", f->config_epoch, f->slots);
        if (f->detected_us)
            fprintf(out, ", detected %s", fmt_time(a, sizeof a, f->detected_us, days));
        if (f->elected_us)
            fprintf(out, ", elected %s (%u vote%s)", fmt_time(b, sizeof b, f->elected_us, days),
                    f->votes, f->votes == 1 ? "" : "s");
        if (f->done_us)
            fprintf(out, ", done %s\n", fmt_time(c, sizeof c, f->done_us, days));
        else
            fputs(", no outcome seen\n", out);
    }
    if (r->n_failovers > TEXT_MAX_MIGRATIONS)
        fprintf(out, "  %-12s ... and %zu more (query 'failovers')\n", "",
                r->n_failovers - TEXT_MAX_MIGRATIONS);
}

/* After the ownership changes, the clients that took longest to stop using
 * the old owner (only with bus traffic, as the failovers). */
#define TEXT_MAX_CONVERGENCE 5
static void print_convergence(const report *r, FILE *out)
{
    if (!r->owner_rows_bus || r->n_convergence == 0)
        return;
    size_t stale = 0;
    for (size_t i = 0; i < r->n_convergence; i++)
        stale += r->convergence[i].stale_commands > 0;
    fprintf(out, "  convergence  %zu client%s after ownership changes, %zu kept using the old "
                 "owner; query 'convergence'\n",
            r->n_convergence, r->n_convergence == 1 ? "" : "s", stale);
    for (size_t i = 0; i < r->n_convergence && i < TEXT_MAX_CONVERGENCE; i++) {
        const rep_convergence *c = &r->convergence[i];
        if (!c->stale_commands)
            break;
        fprintf(out, "  %-12s ", "");
        cli_print_safe(out, c->client);
        fprintf(out, " sent slots %d-%d to ", (int)c->slot_lo, (int)c->slot_hi);
        cli_print_safe(out, c->old_node);
        fprintf(out, " for %.3f ms after ", (double)(c->last_stale_us - c->flip_us) / 1000.0);
        cli_print_safe(out, c->new_node);
        fprintf(out, " took them: %" PRIu64 " command%s, %" PRIu64 " MOVED, %" PRIu64
                     " write%s at risk\n",
                c->stale_commands, c->stale_commands == 1 ? "" : "s", c->moved_replies,
                c->at_risk_writes, c->at_risk_writes == 1 ? "" : "s");
    }
}

/* ---------------------------------------------------------------- findings */

/* One event's fields on the current line:
 *   ask: GET {user:1}.f29 (conn 57 127.0.2.10:41820 -> 127.0.0.1:7000) -> -ASK 1000 ...
 * Fields that are missing are left out. */
static void print_event_fields(json_span ev, FILE *out)
{
    char what[128], cmd[160], key[160], conn[32], src[80], dst[80], reply[200];
    json_text(json_member(ev, "what"), what, sizeof what);
    json_text(json_member(ev, "cmd"), cmd, sizeof cmd);
    json_text(json_member(ev, "key"), key, sizeof key);
    json_text(json_member(ev, "conn"), conn, sizeof conn);
    json_text(json_member(ev, "src"), src, sizeof src);
    json_text(json_member(ev, "dst"), dst, sizeof dst);
    json_text(json_member(ev, "reply"), reply, sizeof reply);
    cli_print_safe(out, what[0] ? what : "event");
    fputc(':', out);
    if (cmd[0]) {
        fputc(' ', out);
        cli_print_safe(out, cmd);
    }
    if (key[0]) {
        fputc(' ', out);
        cli_print_safe(out, key);
    }
    if (conn[0] || src[0]) {
        fprintf(out, " (%s%s%s", conn[0] ? "conn " : "", conn, conn[0] && src[0] ? " " : "");
        cli_print_safe(out, src);
        if (dst[0]) {
            fputs(" -> ", out);
            cli_print_safe(out, dst);
        }
        fputc(')', out);
    }
    if (reply[0]) {
        fputs(" -> ", out);
        cli_print_safe(out, reply);
    }
}

/* One event of a finding's evidence on a line of its own, with its time:
 *   22:13:20.260 ask: GET {user:1}.f29 (conn 57 127.0.2.10 -> 127.0.0.1:7000) -> -ASK 1000 ... */
static void print_event(json_span ev, int days, FILE *out)
{
    char ts[32], t[48];
    json_text(json_member(ev, "ts_us"), ts, sizeof ts);
    fprintf(out, "        %s ", fmt_time(t, sizeof t, strtoll(ts, NULL, 10), days));
    print_event_fields(ev, out);
    fputc('\n', out);
}

/* Evidence that is not a list of events: its first characters. */
static void print_evidence_text(const char *evidence, FILE *out)
{
    char cut[TEXT_EVIDENCE_CHARS + 1];
    snprintf(cut, sizeof cut, "%s", evidence);
    fputs("      evidence: ", out);
    cli_print_safe(out, cut);
    fputs(strlen(evidence) > TEXT_EVIDENCE_CHARS ? " ...\n" : "\n", out);
}

/* The evidence: how many events, the first few, one per line. */
static void print_evidence(const rep_finding *f, int days, FILE *out)
{
    json_span root, events;
    size_t n;
    char omitted[32];
    if (f->evidence_too_long) {
        fputs("      evidence: too long to show (--json, or the findings table)\n", out);
        return;
    }
    if (!f->evidence)
        return;
    root.p = f->evidence;
    root.len = strlen(f->evidence);
    events = json_valid(f->evidence) ? json_member(root, "events") : (json_span){NULL, 0};
    if (!events.p || events.p[0] != '[') {
        print_evidence_text(f->evidence, out);
        return;
    }
    n = json_count(events);
    json_text(json_member(root, "omitted"), omitted, sizeof omitted);
    fprintf(out, "      evidence: %zu event%s", n, n == 1 ? "" : "s");
    if (strtoll(omitted, NULL, 10) > 0)
        fprintf(out, " (and %s not kept)", omitted);
    fputs(n ? ", the first:\n" : "\n", out);
    for (size_t i = 0; i < n && i < TEXT_EVIDENCE_EVENTS; i++)
        print_event(json_element(events, i), days, out);
    if (n > TEXT_EVIDENCE_EVENTS)
        fprintf(out, "        ... %zu more (--json, or the findings table)\n",
                n - TEXT_EVIDENCE_EVENTS);
}

/* "ask_cached: client 10.0.0.5, slot 3999, node 10.0.0.2:7001". */
static void print_finding_subject(const rep_finding *f, FILE *out)
{
    cli_print_safe(out, f->kind);
    fputs(":", out);
    if (f->client[0]) {
        fputs(" client ", out);
        cli_print_safe(out, f->client);
    } else {
        fputs(" the cluster", out);
    }
    if (f->slot >= 0)
        fprintf(out, ", slot %d", f->slot);
    if (f->node[0]) {
        fputs(", node ", out);
        cli_print_safe(out, f->node);
    }
}

static void render_finding_line(const rep_finding *f, FILE *out)
{
    char t[48], d[32];
    fprintf(out, "[%s] ", fmt_time(t, sizeof t, f->first_us, 0));
    cli_print_safe(out, f->severity);
    fputc(' ', out);
    print_finding_subject(f, out);
    fprintf(out, " (%" PRIu64 "x, cost %s): ", f->count, fmt_dur(d, sizeof d, f->extra_latency_us));
    cli_print_safe(out, f->summary);
    fputc('\n', out);
}

static void print_finding(const rep_finding *f, size_t rank, int days, FILE *out)
{
    char a[48], b[48], d[32];
    fprintf(out, "  %2zu. ", rank);
    cli_print_safe(out, f->severity);
    fprintf(out, "%*s", (int)(strlen(f->severity) < 8 ? 8 - strlen(f->severity) : 1), "");
    print_finding_subject(f, out);
    fprintf(out, "\n      %" PRIu64 " time%s, ", f->count, f->count == 1 ? "" : "s");
    if (f->first_us == f->last_us)
        fprintf(out, "at %s", fmt_time(a, sizeof a, f->first_us, days));
    else
        fprintf(out, "%s .. %s", fmt_time(a, sizeof a, f->first_us, days),
                fmt_time(b, sizeof b, f->last_us, days));
    fprintf(out, ", cost %s\n      ", fmt_dur(d, sizeof d, f->extra_latency_us));
    cli_print_safe(out, f->summary);
    fputc('\n', out);
    print_evidence(f, days, out);
}

/* ---------------------------------------------------------------- findings by client */

/* One line of evidence for a pattern: its example finding's first events. */
static void print_pattern(const report *r, const rg_block *b, const rg_pattern *p, int days,
                          FILE *out)
{
    const rep_finding *f = &r->findings[p->example];
    json_span root = {f->evidence, f->evidence ? strlen(f->evidence) : 0}, events;
    char t[48];
    size_t n;
    fprintf(out, "      evidence");
    if (b->n > 1 && f->slot >= 0)
        fprintf(out, " (%zu of %zu findings, e.g. slot %d)", p->findings, b->n, f->slot);
    else if (b->n > 1)
        fprintf(out, " (%zu of %zu findings)", p->findings, b->n);
    fputs(": ", out);
    events = f->evidence && json_valid(f->evidence) ? json_member(root, "events")
                                                    : (json_span){NULL, 0};
    if (!events.p || events.p[0] != '[' || (n = json_count(events)) == 0) {
        fputs(f->evidence_too_long ? "too long to show (--json)\n" : "none kept\n", out);
        return;
    }
    {
        char ts[32];
        json_text(json_member(json_element(events, 0), "ts_us"), ts, sizeof ts);
        fprintf(out, "%s ", fmt_time(t, sizeof t, strtoll(ts, NULL, 10), days));
    }
    for (size_t i = 0; i < n && i < RG_PATTERN_EVENTS; i++) {
        if (i)
            fputs("; ", out);
        print_event_fields(json_element(events, i), out);
    }
    fputs(n > RG_PATTERN_EVENTS ? "; ...\n" : "\n", out);
}

/* "error    asking_missing on slots 0-96, 141 (98 slots), node ..." and its
 * figures, summary and evidence patterns. */
static void print_block(const report *r, const rg_groups *g, const rg_block *b, int days,
                        FILE *out)
{
    char slots[512], a[48], c[48], d[32];
    size_t distinct = rg_slot_ranges(r, g, b, slots, sizeof slots, r->full ? 0 : 160);
    size_t patterns = r->full ? b->n_patterns : b->n_patterns < TEXT_BLOCK_PATTERNS
                                                    ? b->n_patterns : TEXT_BLOCK_PATTERNS;
    fputs("    ", out);
    cli_print_safe(out, b->severity);
    fprintf(out, "%*s", (int)(strlen(b->severity) < 8 ? 8 - strlen(b->severity) : 1), "");
    cli_print_safe(out, b->kind);
    if (distinct == 1)
        fprintf(out, " on slot %s", slots);
    else if (distinct > 1)
        fprintf(out, " on slots %s (%zu slots)", slots, distinct);
    for (size_t k = 0; k < b->n_nodes; k++) {
        fputs(k ? ", " : b->n_nodes > 1 ? ", nodes " : ", node ", out);
        cli_print_safe(out, r->findings[b->node[k]].node);
    }
    fputs(b->more_nodes ? ", ...\n" : "\n", out);
    fprintf(out, "      %" PRIu64 " time%s", b->count, plural(b->count));
    if (b->operations)
        fprintf(out, " in %" PRIu64 " operation%s", b->operations, plural(b->operations));
    if (b->first_us == b->last_us)
        fprintf(out, ", at %s", fmt_time(a, sizeof a, b->first_us, days));
    else
        fprintf(out, ", %s .. %s", fmt_time(a, sizeof a, b->first_us, days),
                fmt_time(c, sizeof c, b->last_us, days));
    fprintf(out, ", cost %s", fmt_dur(d, sizeof d, b->extra_us));
    if (b->n > 1)
        fprintf(out, " (%zu findings)", b->n);
    fputs("\n      ", out);
    cli_print_safe(out, r->findings[g->idx[b->first]].summary);
    fputc('\n', out);
    for (size_t p = 0; p < patterns; p++)
        print_pattern(r, b, &b->pattern[p], days, out);
    if (patterns < b->n_patterns || b->other_pattern_findings)
        fprintf(out, "      ... %zu more evidence pattern%s (--full, --json)\n",
                b->n_patterns - patterns + (b->other_pattern_findings ? 1 : 0),
                b->n_patterns - patterns + (b->other_pattern_findings ? 1 : 0) == 1 ? "" : "s");
    if (r->full)
        for (size_t k = 0; k < b->n; k++)
            print_finding(&r->findings[g->idx[b->first + k]], k + 1, days, out);
}

/* "client 127.0.0.33 node-redis 4.7.1 "worker-a"": who it is, as it said. */
static void print_client_name(const char *name, const an_ident *id, FILE *out)
{
    fputs("client ", out);
    cli_print_safe(out, name);
    if (id && id->lib_name[0]) {
        fputc(' ', out);
        cli_print_safe(out, id->lib_name);
    }
    if (id && id->lib_ver[0]) {
        fputc(' ', out);
        cli_print_safe(out, id->lib_ver);
    }
    if (id && id->client_name[0]) {
        fputs(" \"", out);
        cli_print_safe(out, id->client_name);
        fputc('"', out);
    }
}

static void print_client_group(const report *r, const rg_groups *g, const rg_client *c,
                               size_t rank, int days, FILE *out)
{
    char d[32];
    size_t shown = r->full || c->n_blocks <= TEXT_CLIENT_BLOCKS ? c->n_blocks : TEXT_CLIENT_BLOCKS;
    fprintf(out, "\n  %zu. ", rank);
    print_client_name(c->name, c->ident, out);
    fprintf(out, ": %zu kind%s, %zu finding%s", c->n_blocks, plural(c->n_blocks), c->findings,
            plural(c->findings));
    if (c->redirect_extra_us)
        fprintf(out, ", its redirected operations cost %s",
                fmt_dur(d, sizeof d, c->redirect_extra_us));
    fputc('\n', out);
    for (size_t k = 0; k < shown; k++)
        print_block(r, g, &g->blocks[c->first_block + k], days, out);
    if (shown < c->n_blocks)
        fprintf(out, "    ... and %zu more kind%s (--full, or query 'client')\n",
                c->n_blocks - shown, plural(c->n_blocks - shown));
}

/* The first line: how many clients mishandle redirects, and their share of
 * what redirects cost (from the operations, each counted once). */
static void print_findings_headline(const report *r, const rg_groups *g, FILE *out)
{
    uint64_t clients = r->clients > r->clients_nodes ? r->clients - r->clients_nodes : 0;
    char a[32], b[32];
    fprintf(out, "\nFindings: %zu client%s of %" PRIu64 " mishandle%s redirects", g->n_clients,
            plural(g->n_clients), clients, g->n_clients == 1 ? "s" : "");
    if (g->redirect_extra_us > 0 && !r->filter[0]) /* a filtered report has no share */
        fprintf(out, "; they caused %s of the %s redirects cost (%.0f%%)",
                fmt_dur(a, sizeof a, g->clients_extra_us),
                fmt_dur(b, sizeof b, g->redirect_extra_us),
                100.0 * (double)g->clients_extra_us / (double)g->redirect_extra_us);
    fprintf(out, "\n  %zu finding%s (per client, kind, node and slot) in %zu block%s by client "
                 "and kind, clients by impact%s\n",
            r->n_findings, plural(r->n_findings), g->n_blocks, plural(g->n_blocks),
            r->full ? "" : "; --full shows everything");
}

static void print_findings(const report *r, FILE *out)
{
    int days = spans_days(r);
    rg_groups g;
    size_t shown;
    if (r->filter[0]) {
        fputs("\nFiltered: ", out);
        cli_print_safe(out, r->filter);
        fputs(" (findings, redirects and connections; the totals are the whole run's)\n", out);
    }
    verdict_diag d;
    verdict_diagnose(r, &d);
    if (r->n_findings == 0) {
        if (d.code)
            fprintf(out, "\nFindings: none seen, but the capture cannot support a verdict (%s): "
                         "%s\n", d.code, d.text);
        else
            fputs("\nFindings: none (no client mishandled a redirect the capture shows)\n", out);
        return;
    }
    if (rg_build(r, &g) != 0) {
        fputs("\nFindings: out of memory grouping them (--json lists them)\n", out);
        return;
    }
    print_findings_headline(r, &g, out);
    if (d.code)
        fprintf(out, "  The capture cannot support a full verdict (%s): %s\n", d.code, d.text);
    shown = r->full || g.n_clients <= TEXT_MAX_CLIENTS ? g.n_clients : TEXT_MAX_CLIENTS;
    for (size_t i = 0; i < shown; i++)
        print_client_group(r, &g, &g.clients[i], i + 1, days, out);
    if (shown < g.n_clients)
        fprintf(out, "\n  ... and %zu more clients (--full, or query 'offenders')\n",
                g.n_clients - shown);
    if (g.cluster_n) {
        fputs("\nCluster side (not a client's doing)\n", out);
        for (size_t k = 0; k < g.cluster_n; k++)
            print_block(r, &g, &g.blocks[g.cluster_first + k], days, out);
    }
    rg_free(&g);
}

/* ---------------------------------------------------------------- cost */

/* The latency row of (scope, key, redirected), or NULL. */
static const rep_latency *find_latency(const report *r, const char *scope, const char *key,
                                       int redirected)
{
    for (size_t i = 0; i < r->n_latency; i++) {
        const rep_latency *l = &r->latency[i];
        if (l->redirected == redirected && !strcmp(l->scope, scope) && !strcmp(l->key, key))
            return l;
    }
    return NULL;
}

static void print_redirect_counts(const report *r, FILE *out)
{
    fprintf(out,
            "  redirects    %" PRIu64 " replies: %" PRIu64 " MOVED, %" PRIu64 " ASK, %" PRIu64
            " TRYAGAIN, %" PRIu64 " CROSSSLOT, %" PRIu64 " CLUSTERDOWN\n",
            report_counter(r, "redirects"), report_counter(r, "moved"), report_counter(r, "ask"),
            report_counter(r, "tryagain"), report_counter(r, "crossslot"),
            report_counter(r, "clusterdown"));
}

/* "170 direct: p50 0.200 ms, p99 0.900 ms" and the redirected line. */
static void print_overall_latency(const report *r, FILE *out)
{
    const rep_latency *direct = find_latency(r, "all", "all", 0);
    const rep_latency *redir = find_latency(r, "all", "all", 1);
    char a[32], b[32], c[32];
    if (direct)
        fprintf(out, "  operations   %" PRIu64 " direct: p50 %s, p99 %s\n", direct->count,
                fmt_ms(a, sizeof a, direct->p50_us), fmt_ms(b, sizeof b, direct->p99_us));
    if (redir)
        fprintf(out,
                "  %-12s %" PRIu64 " redirected: p50 %s, p99 %s; %s spent on %" PRIu64
                " extra round trips\n",
                direct ? "" : "operations", redir->count, fmt_ms(a, sizeof a, redir->p50_us),
                fmt_ms(b, sizeof b, redir->p99_us), fmt_dur(c, sizeof c, redir->extra_us),
                redir->extra_round_trips);
}

/* The scopes (client or slot) whose redirected operations cost the most. */
static void print_top(const report *r, const char *scope, const char *label, FILE *out)
{
    size_t shown = 0;
    for (size_t i = 0; i < r->n_latency && shown < TEXT_MAX_TOP; i++) {
        const rep_latency *l = &r->latency[i], *direct;
        char a[32], b[32], c[32];
        if (!l->redirected || strcmp(l->scope, scope))
            continue;
        fprintf(out, "  %-12s %s", shown == 0 ? label : "", !strcmp(scope, "slot") ? "slot " : "");
        cli_print_safe(out, l->key);
        fprintf(out, ": %" PRIu64 " redirected, %s extra, p99 %s", l->count,
                fmt_dur(a, sizeof a, l->extra_us), fmt_ms(b, sizeof b, l->p99_us));
        direct = find_latency(r, scope, l->key, 0);
        if (direct)
            fprintf(out, " (direct p99 %s)", fmt_ms(c, sizeof c, direct->p99_us));
        fputc('\n', out);
        shown++;
    }
}

static void print_cost(const report *r, FILE *out)
{
    fputs("\nWhat the redirects cost\n", out);
    if (report_counter(r, "redirects") == 0) {
        fputs("  redirects    none (no MOVED, ASK, TRYAGAIN, CROSSSLOT or CLUSTERDOWN reply)\n", out);
    } else {
        print_redirect_counts(r, out);
    }
    print_overall_latency(r, out);
    print_top(r, "client", "by client", out);
    print_top(r, "slot", "by slot", out);
}

/* What oriented the connections picked up mid-stream (databases made before
 * these counters existed have none: no line). */
static void print_orientation(const report *r, FILE *out)
{
    static const struct {
        const char *counter, *text;
    } by[] = {
        {"oriented_port", "a server port"},
        {"oriented_known", "an earlier handshake"},
        {"oriented_cluster", "a CLUSTER reply naming the server"},
        {"oriented_replication", "an earlier replication link to the master"},
        {"oriented_redirect", "a MOVED/ASK target"},
        {"oriented_shape", "the shape of the first bytes"},
        {"oriented_guess", "a guess (the lower port)"},
    };
    int any = 0;
    for (size_t i = 0; i < sizeof by / sizeof by[0]; i++) {
        uint64_t v = report_counter(r, by[i].counter);
        if (!v)
            continue;
        fprintf(out, "%s%" PRIu64 " by %s", any ? ", " : "  oriented     ", v, by[i].text);
        any = 1;
    }
    if (any)
        fputc('\n', out);
}
/* ---------------------------------------------------------------- blind spots */

static void print_loss(const report *r, FILE *out)
{
    char b[32];
    fprintf(out,
            "  lost bytes   %" PRIu64 " gaps (%s), %" PRIu64 " truncated packets, %" PRIu64
            " out-of-order segments given up\n",
            report_counter(r, "gaps"), fmt_bytes(b, sizeof b, report_counter(r, "gap_bytes")),
            report_counter(r, "truncated"), report_counter(r, "ooo_dropped"));
    if (report_counter(r, "start_gaps") > 0)
        fprintf(out, "               %" PRIu64 " of the gaps before the first byte of a stream "
                     "picked up mid-stream (acknowledged by its receiver, never seen: lost, or "
                     "in flight when the capture began)\n",
                report_counter(r, "start_gaps"));
    if (report_counter(r, "start_gaps_answered_none") > 0)
        fprintf(out, "               %" PRIu64 " of those server bytes the client had received "
                     "before it sent anything captured: they answer none of it, nothing given "
                     "up\n",
                report_counter(r, "start_gaps_answered_none"));
    uint64_t file_drops = report_counter(r, "kernel_drops"); /* pcapng statistics' */
    size_t recorded = 0;
    for (size_t i = 0; i < r->n_inputs; i++)
        recorded += r->inputs[i].drops_recorded || r->inputs[i].kernel_drops > 0;
    if (r->from_files && recorded > 0 && recorded < r->n_inputs)
        fprintf(out, "  drops        %" PRIu64 " recorded by %zu of the %zu capture files (pcapng"
                " interface statistics; the others cannot record them); what was dropped"
                " shows as gaps\n", file_drops, recorded, r->n_inputs);
    else if (r->from_files && recorded > 0)
        fprintf(out, "  drops        %" PRIu64 " recorded by the capture files (pcapng interface"
                " statistics); what was dropped shows as gaps\n", file_drops);
    else if (r->from_files)
        fputs("  drops        none recorded by the capture files (a pcap file cannot record them;"
              " tcpdump prints its own count when it stops); what was dropped shows as gaps\n",
              out);
    else
        fprintf(out, "  drops        %" PRIu64 " by the kernel, %" PRIu64 " by the interface\n",
                report_counter(r, "kernel_drops"), report_counter(r, "if_drops"));
    fprintf(out,
            "  connections  %" PRIu64 " picked up mid-stream, %" PRIu64 " out of sync, %" PRIu64
            " evicted (table full)\n",
            report_counter(r, "mid_stream"), report_counter(r, "out_of_sync_connections"),
            report_counter(r, "evicted_connections"));
    print_orientation(r, out);
    if (report_counter(r, "replication_midstream") > 0)
        fprintf(out,
                "  replication  %" PRIu64 " links, %" PRIu64 " recognised without their PSYNC"
                " (%" PRIu64 " oriented the wrong way round at first)\n",
                report_counter(r, "replication_connections"),
                report_counter(r, "replication_midstream"),
                report_counter(r, "replication_reversed"));
    fprintf(out,
            "  pairing      %" PRIu64 " unpaired requests, %" PRIu64 " unpaired replies, %" PRIu64
            " resyncs (searches for a message boundary), %s skipped unparsed (while"
            " searching, or cut by a gap or a close), %" PRIu64 " protocol errors\n",
            report_counter(r, "unpaired_requests"), report_counter(r, "unpaired_replies"),
            report_counter(r, "resyncs"), fmt_bytes(b, sizeof b, report_counter(r, "skipped_bytes")),
            report_counter(r, "protocol_errors"));
    fprintf(out, "  commands     %" PRIu64 " not in the command table (their keys are unknown)\n",
            report_counter(r, "unknown_commands"));
    if (report_counter(r, "keys_lost"))
        fprintf(out, "               %" PRIu64 " whose first key the capture lost (a gap or the snap"
                " length cut it): in no operation, never judged (keys_lost)\n",
                report_counter(r, "keys_lost"));
    fprintf(out, "  operations   %" PRIu64 " still waiting for a retry at the end, not judged"
            " (abandoned_ops), %" PRIu64 " dropped unjudged (evicted_ops)\n",
            report_counter(r, "abandoned_ops"), report_counter(r, "evicted_ops"));
    if (report_counter(r, "unseen_retry_ops"))
        fprintf(out, "               %" PRIu64 " redirected whose retry the capture may have lost"
                " (requests lost after the redirect, or a retry without its reply): not judged"
                " redirect_unfollowed (unseen_retry_ops)\n", report_counter(r, "unseen_retry_ops"));
    if (report_counter(r, "unseen_target_ops"))
        fprintf(out, "               %" PRIu64 " redirected to a node the capture holds no connection"
                " to (its filter left it out, or it announces another address): not judged"
                " redirect_unfollowed (unseen_target_ops)\n",
                report_counter(r, "unseen_target_ops"));
    if (report_counter(r, "readonly_unknown_moved"))
        fprintf(out, "  READONLY     %" PRIu64 " MOVEDs of reads from replicas whose master is not known,"
                " on connections picked up mid-stream whose READONLY the capture had not"
                " shown, judged by neither"
                " moved_ignored nor readonly_missing (readonly_unknown_moved)\n",
                report_counter(r, "readonly_unknown_moved"));
    if (report_counter(r, "at_risk_unseen"))
        fprintf(out, "  writes       %" PRIu64 " acknowledged by an old owner after a newer claim, not"
                " judged writes_at_risk: the capture holds none of the bus links it opened,"
                " where its own new claim would show (at_risk_unseen)\n",
                report_counter(r, "at_risk_unseen"));
}

/* Caps that were hit anywhere: tables that were full, records not shown. */
static void print_caps(const report *r, FILE *out)
{
    static const char *const names[] = {"evicted_clients", "evicted_ops", "evicted_conns",
                                        "evicted_memos", "dropped_findings", "view_drops",
                                        "latency_slots_dropped", "map_errors", "dropped_requests",
                                        "limit_hits", "malformed", "time_backwards",
                                        "known_servers_dropped", "timeline_late",
                                        "timeline_overflow"};
    int any = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        uint64_t v = report_counter(r, names[i]);
        if (!v)
            continue;
        fprintf(out, "%s%s %" PRIu64, any ? ", " : "  limits       ", names[i], v);
        any = 1;
    }
    if (any)
        fputc('\n', out);
    if (r->dropped)
        fprintf(out, "  not shown    %" PRIu64 " records beyond the report's caps\n", r->dropped);
}

static void print_input_errors(const report *r, FILE *out)
{
    for (size_t i = 0; i < r->n_inputs; i++) {
        if (!r->inputs[i].error[0])
            continue;
        fputs("  input error  ", out);
        cli_print_safe(out, r->inputs[i].error);
        fputc('\n', out);
    }
}

static void print_blind_spots(const report *r, FILE *out)
{
    fputs("\nWhat the capture could not see\n", out);
    print_loss(r, out);
    print_caps(r, out);
    print_input_errors(r, out);
}

void report_window_text(const cli_opts *o, char *out, size_t size)
{
    char a[48], b[48];
    out[0] = 0;
    if (!o->since && !o->until)
        return;
    snprintf(out, size, "records %s .. %s UTC (%s%s%s%s%s%s)",
             o->since ? fmt_time(a, sizeof a, o->cap.since_us, 1) : "start",
             o->until ? fmt_time(b, sizeof b, o->cap.until_us, 1) : "end",
             o->since ? "--since " : "", o->since ? o->since : "", o->since && o->until ? " " : "",
             o->until ? "--until " : "", o->until ? o->until : "", "");
}

static void render_text(const report *r, FILE *out)
{
    fputs("slotscope incident report\n\nWhat happened\n", out);
    if (r->in_progress)
        fputs("  note         the run is in progress: this is what it has committed so far\n", out);
    else if (r->interrupted)
        fputs("  note         the run was interrupted: this is what it had committed\n", out);
    else if (r->stopped_by[0])
        fprintf(out, "  note         the run was interrupted by %s: this is what it read until then\n",
                r->stopped_by);
    print_span(r, out);
    if (r->window[0]) {
        fputs("  window       only ", out);
        cli_print_safe(out, r->window);
        fputs(" analysed\n", out);
    }
    print_inputs(r, out);
    print_traffic(r, out);
    print_nodes(r, out);
    print_migrations(r, out);
    print_failovers(r, out);
    print_convergence(r, out);
    print_findings(r, out);
    print_cost(r, out);
    print_blind_spots(r, out);
}

/* Render into memory, then write it all through the one escaping path
 * (cli_write_safe, newlines kept): whatever a printer above forgets, no byte
 * of the capture or of a crafted database reaches the terminal as a control. */
typedef void (*render_fn)(const void *what, FILE *out);

static void print_escaped(render_fn render, const void *what, FILE *out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
        fputs("slotscope: out of memory for the report\n", out);
        return;
    }
    render(what, mem);
    fclose(mem);
    cli_write_safe(out, buf, len, 1);
    free(buf);
}

static void render_text_fn(const void *r, FILE *out)
{
    render_text(r, out);
}

static void render_finding_line_fn(const void *f, FILE *out)
{
    render_finding_line(f, out);
}

void report_print_text(const report *r, FILE *out)
{
    print_escaped(render_text_fn, r, out);
}

void report_print_finding_line(const rep_finding *f, FILE *out)
{
    print_escaped(render_finding_line_fn, f, out);
}
