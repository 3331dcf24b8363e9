/*
 * console.c - the findings of `live` as they come, on stdout.
 *
 * The analysis sends a finding when it first appears and again when it
 * changed (an_flush, at least once a second of wall-clock time in live:
 * pipeline.c). Each is noted here; console_print then prints what was noted,
 * ordered by the time the finding began:
 *
 *   - a new finding: its line, as the report's finding lines
 *     (report_print_finding_line; JSON: a "live_finding" object);
 *   - a finding whose count grew: "again: " and its line with the new count
 *     (JSON: "live_finding_update"), at most CONSOLE_MAX_UPDATES of them per
 *     second, then one line saying how many more grew (their next growth
 *     prints them; the end report has them all).
 *
 * State is bounded by the report model's cap on findings: one printed count
 * and one "noted" mark per finding it holds, by its position there.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define CONSOLE_MAX_UPDATES 20

struct console {
    FILE *out;
    int json;
    uint64_t *printed;           /* count last printed, by position; 0: never */
    uint8_t *noted;              /* noted since the last print, by position */
    uint32_t *pending;           /* the positions noted, in the order noted */
    size_t n_pending;
};

/* A noted finding and when it began, for the sort. */
typedef struct pending_item {
    int64_t first_us;
    uint64_t id;
    uint32_t pos;
} pending_item;

console *console_new(FILE *out, int json)
{
    console *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->out = out;
    c->json = json;
    c->printed = calloc(REPORT_MAX_FINDINGS, sizeof *c->printed);
    c->noted = calloc(REPORT_MAX_FINDINGS, sizeof *c->noted);
    c->pending = calloc(REPORT_MAX_FINDINGS, sizeof *c->pending);
    if (!c->printed || !c->noted || !c->pending) {
        console_free(c);
        return NULL;
    }
    return c;
}

void console_note(console *c, const report *r, uint64_t id)
{
    long pos = report_finding_pos(r, id);
    if (!c || pos < 0 || pos >= REPORT_MAX_FINDINGS || c->noted[pos])
        return;
    c->noted[pos] = 1;
    c->pending[c->n_pending++] = (uint32_t)pos;
}

/* By first time, then id: the order things happened in. */
static int by_time(const void *a, const void *b)
{
    const pending_item *x = a, *y = b;
    if (x->first_us != y->first_us)
        return x->first_us < y->first_us ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* One finding, new (again 0) or grown. */
static void print_one(console *c, const rep_finding *f, int again)
{
    if (c->json) {
        report_print_finding_json(f, again ? "live_finding_update" : "live_finding", c->out);
        return;
    }
    if (again)
        fputs("again: ", c->out);
    report_print_finding_line(f, c->out);
}

void console_print(console *c, const report *r, status_line *st)
{
    pending_item *items;
    size_t n = 0, updates = 0, skipped = 0;
    if (!c || c->n_pending == 0)
        return;
    items = malloc(c->n_pending * sizeof *items);
    for (size_t i = 0; i < c->n_pending; i++) {
        uint32_t pos = c->pending[i];
        c->noted[pos] = 0;
        if (items && pos < r->n_findings && r->findings[pos].count > c->printed[pos])
            items[n++] = (pending_item){r->findings[pos].first_us, r->findings[pos].id, pos};
    }
    c->n_pending = 0;
    if (!items || n == 0) {
        free(items);
        return;
    }
    qsort(items, n, sizeof *items, by_time);
    status_line_clear(st);
    for (size_t i = 0; i < n; i++) {
        const rep_finding *f = &r->findings[items[i].pos];
        int again = c->printed[items[i].pos] != 0;
        if (again && updates >= CONSOLE_MAX_UPDATES) {
            skipped++;
            continue;
        }
        updates += again;
        print_one(c, f, again);
        c->printed[items[i].pos] = f->count;
    }
    if (skipped && c->json)
        fprintf(c->out, "{\"type\":\"live_updates_skipped\",\"findings\":%zu}\n", skipped);
    else if (skipped)
        fprintf(c->out, "again: %zu more findings grew (the report at the end has them)\n",
                skipped);
    fflush(c->out);
    free(items);
}

void console_free(console *c)
{
    if (!c)
        return;
    free(c->printed);
    free(c->noted);
    free(c->pending);
    free(c);
}
