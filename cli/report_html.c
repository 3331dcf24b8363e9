/*
 * report_html.c - `slotscope report DB --html FILE`: the incident as one
 * self-contained HTML page (inline CSS and SVG; no script, no font, nothing
 * fetched: hover details are SVG <title> elements).
 *
 * Sections: the migration timeline (one bar per slot range, aborted and
 * open-ended ones marked, failovers as markers when the database has a
 * failovers table), redirects per time bucket stacked by kind with the
 * migration windows shaded, redirected p99 beside direct p99, one card per
 * client, and what the capture could not see.
 *
 * The database may be hostile: every string is HTML-escaped (bytes outside
 * printable ASCII as \xNN), every number is clamped before it is scaled.
 * The page stays small whatever the incident (HTML_MAX_BYTES, tested):
 * migrations are drawn as at most HTML_MAX_BARS bars (consecutive slots of one
 * source, target and outcome coalesced, then neighbours), the series as at
 * most HTML_MAX_COLS columns (buckets summed, the worst p99 kept), cards for
 * the first HTML_MAX_CARDS clients and a table row for the next
 * HTML_MAX_ROWS; what is left out is counted on the page.
 */
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

#define HTML_MAX_BARS 80       /* migration bars */
#define HTML_MAX_RANGES 4096   /* slot ranges held before coalescing further */
#define HTML_MAX_COLS 240      /* series columns */
#define HTML_MAX_CARDS 48      /* client cards */
#define HTML_MAX_ROWS 200      /* clients in the table after the cards */
#define HTML_MAX_KINDS 12      /* finding kinds listed per card */
#define HTML_MAX_FAILOVERS 64  /* failover markers */

#define CHART_W 1000           /* SVG user units */
#define PLOT_L 150             /* left margin: slot range labels, y axis */
#define PLOT_R 20
#define PLOT_W (CHART_W - PLOT_L - PLOT_R)

/* The five redirect-class kinds: column of the timeline table, label, colour
 * (Okabe-Ito: told apart with the common colour blindnesses). */
static const struct {
    const char *col, *label, *colour;
} kinds[5] = {
    {"moved", "MOVED", "#0072B2"},      {"ask", "ASK", "#E69F00"},
    {"tryagain", "TRYAGAIN", "#CC79A7"}, {"crossslot", "CROSSSLOT", "#009E73"},
    {"clusterdown", "CLUSTERDOWN", "#D55E00"},
};

/* ---------------------------------------------------------------- text */

/* Text as HTML: markup characters as entities, bytes outside printable
 * ASCII as \xNN (the database may hold anything). */
static void esc(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if (*p < 0x20 || *p >= 0x7f)
                fprintf(out, "\\x%02x", *p);
            else
                fputc(*p, out);
        }
    }
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* A column as an integer clamped to [lo, hi]. */
static int64_t col_int(sqlite3_stmt *st, int i, int64_t lo, int64_t hi)
{
    int64_t v = sqlite3_column_int64(st, i);
    return v < lo ? lo : v > hi ? hi : v;
}

/* Every time and count read is clamped to this (36,000 years in us), and sums
 * saturate: no arithmetic on them can overflow, whatever the database holds. */
#define MAX_US ((int64_t)1 << 60)

/* a + b for values in [0, MAX_US], saturating at MAX_US. */
static int64_t sat_add(int64_t a, int64_t b)
{
    return a > MAX_US - b ? MAX_US : a + b;
}

/* "12:34:56.789" (UTC) of a time in us since the epoch. */
static const char *fmt_clock(char *buf, size_t size, int64_t us, int ms)
{
    time_t s = (time_t)(us / 1000000);
    struct tm tm;
    if (!gmtime_r(&s, &tm)) {
        snprintf(buf, size, "?");
        return buf;
    }
    if (ms)
        snprintf(buf, size, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)(us % 1000000 / 1000));
    else
        snprintf(buf, size, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
    return buf;
}

static const char *fmt_date(char *buf, size_t size, int64_t us)
{
    time_t s = (time_t)(us / 1000000);
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(buf, size, "?");
    return buf;
}

/* A duration: "850 us", "12.3 ms", "4.56 s", "3.2 min", "26.5 h". */
static const char *fmt_dur(char *buf, size_t size, int64_t us)
{
    double v = (double)us;
    if (us < 1000)
        snprintf(buf, size, "%" PRId64 " us", us);
    else if (us < 1000000)
        snprintf(buf, size, "%.3g ms", v / 1e3);
    else if (us < 120000000)
        snprintf(buf, size, "%.3g s", v / 1e6);
    else if (us < 7200000000LL)
        snprintf(buf, size, "%.1f min", v / 6e7);
    else
        snprintf(buf, size, "%.1f h", v / 3.6e9);
    return buf;
}

/* ---------------------------------------------------------------- queries */

static int64_t q_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int64_t counter(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM counters WHERE name = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

/* ---------------------------------------------------------------- time axis */

/* The page's time span: the capture's first and last record. */
typedef struct span {
    int64_t t0, t1;
} span;

static double x_of(const span *sp, int64_t t)
{
    double f = (double)(t - sp->t0) / (double)(sp->t1 - sp->t0);
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    return PLOT_L + f * PLOT_W;
}

/* Ticks of the time axis under a plot ending at y (grid lines up to top). */
static void time_axis(FILE *out, const span *sp, int top, int y)
{
    static const int64_t steps[] = {
        1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000, 2000000,
        5000000, 10000000, 15000000, 30000000, 60000000, 120000000, 300000000, 600000000,
        900000000, 1800000000, 3600000000LL, 7200000000LL, 21600000000LL, 43200000000LL,
        86400000000LL, 604800000000LL};
    int64_t len = sp->t1 - sp->t0, step = steps[sizeof steps / sizeof steps[0] - 1];
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (len / steps[i] <= 8) {
            step = steps[i];
            break;
        }
    fprintf(out, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", PLOT_L, y,
            PLOT_L + PLOT_W, y);
    int ms = step < 1000000;
    int64_t t = sp->t0 - sp->t0 % step;
    if (t < sp->t0)
        t += step;
    for (int n = 0; t <= sp->t1 && n < 40; t += step, n++) {
        char b[32];
        double x = x_of(sp, t);
        fprintf(out,
                "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                x, top, x, y + 4, x, y + 16, fmt_clock(b, sizeof b, t, ms));
    }
    fprintf(out, "<text class=\"unit\" x=\"%d\" y=\"%d\" text-anchor=\"end\">time (UTC)</text>\n",
            PLOT_L + PLOT_W, y + 30);
}

/* ---------------------------------------------------------------- migrations */

/* One bar: a range of slots of one source, target and outcome. */
typedef struct bar {
    int32_t lo, hi;
    int64_t nslots, windows;
    char source[AN_NAME_MAX], target[AN_NAME_MAX];
    int outcome;               /* 0 flipped, 1 aborted, 2 no end seen */
    int64_t start, end;
    int64_t asks, tryagains, moveds, keys;
} bar;

static const char *const outcome_names[3] = {"moved", "aborted", "no end seen"};

/* Add b into a (a covers both). */
static void bar_merge(bar *a, const bar *b)
{
    if (b->lo < a->lo)
        a->lo = b->lo;
    if (b->hi > a->hi)
        a->hi = b->hi;
    a->nslots = sat_add(a->nslots, b->nslots);
    a->windows = sat_add(a->windows, b->windows);
    if (b->start < a->start)
        a->start = b->start;
    if (b->end > a->end)
        a->end = b->end;
    a->asks = sat_add(a->asks, b->asks);
    a->tryagains = sat_add(a->tryagains, b->tryagains);
    a->moveds = sat_add(a->moveds, b->moveds);
    a->keys = sat_add(a->keys, b->keys);
}

static int bar_by_start(const void *pa, const void *pb)
{
    const bar *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->lo > b->lo) - (a->lo < b->lo);
}

static int same_key(const bar *a, const bar *b)
{
    return a->outcome == b->outcome && !strcmp(a->source, b->source) &&
           !strcmp(a->target, b->target);
}

/* Merge neighbours of one source, target and outcome pairwise (ranges grow
 * evenly); the new count (n when nothing could be merged). */
static size_t compact(bar *bars, size_t n)
{
    size_t w = 0;
    int merged = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && !merged && same_key(&bars[w - 1], &bars[i])) {
            bar_merge(&bars[w - 1], &bars[i]);
            merged = 1;
        } else {
            bars[w++] = bars[i];
            merged = 0;
        }
    }
    return w;
}

/* The migration windows as bars: read in (source, target, outcome, slot)
 * order, consecutive slots merged; when HTML_MAX_RANGES are held they are
 * compacted (neighbours of one source, target and outcome merged), and at the
 * end until at most HTML_MAX_BARS are left; what still does not fit (more
 * distinct sources and targets than bars) is cut, its slots counted. */
static size_t load_bars(sqlite3 *db, const span *sp, bar **out, int64_t *cut)
{
    static const char sql[] =
        "SELECT slot, source, target, CASE complete WHEN 1 THEN 0 WHEN 2 THEN 1 ELSE 2 END,"
        " min(CASE WHEN importing_us > 0 THEN importing_us ELSE 9e18 END,"
        "     CASE WHEN migrating_us > 0 THEN migrating_us ELSE 9e18 END,"
        "     CASE WHEN first_ask_us > 0 THEN first_ask_us ELSE 9e18 END,"
        "     CASE WHEN flip_us > 0 THEN flip_us ELSE 9e18 END),"
        " flip_us, last_ask_us, asks, tryagains, moveds, keys_migrated"
        " FROM slot_migrations ORDER BY 2, 3, 4, 1";
    sqlite3_stmt *st = NULL;
    bar *bars = calloc(HTML_MAX_RANGES, sizeof *bars);
    size_t n = 0;
    *cut = 0;
    if (!bars || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        free(bars);
        *out = NULL;
        return 0;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        bar b;
        memset(&b, 0, sizeof b);
        b.lo = b.hi = (int32_t)col_int(st, 0, 0, 16383);
        b.nslots = b.windows = 1;
        snprintf(b.source, sizeof b.source, "%s", col_text(st, 1));
        snprintf(b.target, sizeof b.target, "%s", col_text(st, 2));
        b.outcome = (int)col_int(st, 3, 0, 2);
        b.start = sqlite3_column_double(st, 4) >= 9e18 ? sp->t0 : col_int(st, 4, 0, MAX_US);
        int64_t flip = col_int(st, 5, 0, MAX_US), last_ask = col_int(st, 6, 0, MAX_US);
        b.end = b.outcome == 2 ? sp->t1 : flip > 0 ? flip : last_ask > 0 ? last_ask : b.start;
        if (b.end < b.start)
            b.end = b.start;
        b.asks = col_int(st, 7, 0, MAX_US);
        b.tryagains = col_int(st, 8, 0, MAX_US);
        b.moveds = col_int(st, 9, 0, MAX_US);
        b.keys = col_int(st, 10, 0, MAX_US);
        bar *last = n ? &bars[n - 1] : NULL;
        if (last && same_key(last, &b) && b.lo <= last->hi + 1) {
            bar_merge(last, &b);
            continue;
        }
        if (n == HTML_MAX_RANGES)
            n = compact(bars, n);
        last = n ? &bars[n - 1] : NULL;
        if (n < HTML_MAX_RANGES)
            bars[n++] = b;
        else if (same_key(last, &b))
            bar_merge(last, &b);
        else
            *cut = sat_add(*cut, 1);
    }
    sqlite3_finalize(st);
    while (n > HTML_MAX_BARS) {
        size_t m = compact(bars, n);
        if (m == n)
            break;
        n = m;
    }
    if (n > HTML_MAX_BARS) {
        for (size_t i = HTML_MAX_BARS; i < n; i++)
            *cut = sat_add(*cut, bars[i].nslots);
        n = HTML_MAX_BARS;
    }
    qsort(bars, n, sizeof *bars, bar_by_start);
    *out = bars;
    return n;
}

/* Failovers as markers, when the database has the table: its first column
 * ending in _us is the time, new_master (else a column naming a node) the
 * label. */
typedef struct marker {
    int64_t ts;
    char label[96];
} marker;

static size_t load_failovers(sqlite3 *db, marker *m, size_t max)
{
    char time_col[64] = "", label_col[64] = "";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT name, type FROM pragma_table_info('failovers')", -1, &st,
                           NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return 0;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = col_text(st, 0);
        size_t len = strlen(name);
        int ok = len > 0 && len < sizeof time_col && strspn(name, "abcdefghijklmnopqrstuvwxyz_") == len;
        if (ok && !time_col[0] && len > 3 && !strcmp(name + len - 3, "_us"))
            snprintf(time_col, sizeof time_col, "%s", name);
        else if (ok && (!strcmp(name, "new_master") ||
                        (!label_col[0] && (strstr(name, "node") || strstr(name, "master") ||
                                           strstr(name, "promoted") || strstr(name, "new")))))
            snprintf(label_col, sizeof label_col, "%s", name); /* new_master first */
    }
    sqlite3_finalize(st);
    if (!time_col[0])
        return 0;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT \"%s\", %s%s%s FROM failovers ORDER BY 1 LIMIT %zu",
             time_col, label_col[0] ? "\"" : "", label_col[0] ? label_col : "''",
             label_col[0] ? "\"" : "", max);
    size_t n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK)
        while (n < max && sqlite3_step(st) == SQLITE_ROW) {
            m[n].ts = col_int(st, 0, 0, MAX_US);
            snprintf(m[n].label, sizeof m[n].label, "%s", col_text(st, 1));
            n++;
        }
    sqlite3_finalize(st);
    return n;
}

static void print_bar_title(FILE *out, const bar *b)
{
    char s[32], e[32], d[32];
    fprintf(out, "<title>slots %d", (int)b->lo);
    if (b->hi != b->lo)
        fprintf(out, "-%d", (int)b->hi);
    fprintf(out, " (%" PRId64 " migrated, %" PRId64 " windows): ", b->nslots, b->windows);
    esc(out, b->source);
    fputs(" -&gt; ", out);
    esc(out, b->target);
    fprintf(out, ", %s; %s to %s (%s); %" PRId64 " ASK, %" PRId64 " TRYAGAIN, %" PRId64
                 " MOVED, %" PRId64 " keys migrated</title>",
            outcome_names[b->outcome], fmt_clock(s, sizeof s, b->start, 1),
            fmt_clock(e, sizeof e, b->end, 1), fmt_dur(d, sizeof d, b->end - b->start), b->asks,
            b->tryagains, b->moveds, b->keys);
}

static void section_migrations(FILE *out, sqlite3 *db, const span *sp, const bar *bars,
                               size_t n, int64_t cut, int64_t total)
{
    marker fo[HTML_MAX_FAILOVERS];
    size_t nfo = load_failovers(db, fo, HTML_MAX_FAILOVERS);
    int has_fo_table = q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'failovers'") > 0;
    fprintf(out, "<section id=\"migrations\" data-bars=\"%zu\" data-windows=\"%" PRId64
                 "\" data-failovers=\"%zu\">\n<h2>Migration timeline</h2>\n",
            n, total, nfo);
    if (!n) {
        fputs("<p class=\"none\">No slot migration was seen in the capture.</p>\n", out);
    } else {
        fprintf(out, "<p>%" PRId64 " migration windows, drawn as %zu bars (consecutive slots with"
                     " the same source, target and outcome joined). A bar runs from the first"
                     " of SETSLOT IMPORTING/MIGRATING or the first ASK to the ownership flip.",
                total, n);
        if (cut)
            fprintf(out, " %" PRId64 " more slots are not drawn (the page shows at most %d"
                         " bars; <code>slotscope query DB migrations</code> lists them all).",
                    cut, HTML_MAX_BARS);
        fputs("</p>\n", out);
    }
    int row_h = 18, top = 10, h = top + (int)(n ? n : 1) * row_h;
    fprintf(out, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
                 "aria-label=\"migration timeline\">\n",
            CHART_W, h + 40);
    for (size_t i = 0; i < n; i++) {
        const bar *b = &bars[i];
        int y = top + (int)i * row_h;
        double x0 = x_of(sp, b->start), x1 = x_of(sp, b->end);
        if (x1 - x0 < 2)
            x1 = x0 + 2;
        fprintf(out, "<g class=\"mig %s\">", b->outcome == 0 ? "done" : b->outcome == 1 ? "aborted" : "open");
        print_bar_title(out, b);
        fprintf(out, "<text class=\"lbl\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%d", PLOT_L - 6,
                y + 12, (int)b->lo);
        if (b->hi != b->lo)
            fprintf(out, "-%d", (int)b->hi);
        fprintf(out, "</text><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"2\"/>",
                x0, y + 2, x1 - x0, row_h - 5);
        if (b->outcome)
            fprintf(out, "<text class=\"flag\" x=\"%.1f\" y=\"%d\">%s</text>",
                    x1 + 4 > PLOT_L + PLOT_W - 70 ? x0 - 70 : x1 + 4, y + 12,
                    outcome_names[b->outcome]);
        fputs("</g>\n", out);
    }
    for (size_t i = 0; i < nfo; i++) {
        char t[32];
        double x = x_of(sp, fo[i].ts);
        fprintf(out, "<g class=\"failover\"><title>failover at %s: ",
                fmt_clock(t, sizeof t, fo[i].ts, 1));
        esc(out, fo[i].label);
        fprintf(out, "</title><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                     "<path d=\"M%.1f %d l-5 -8 h10 z\"/></g>\n",
                x, top, x, h, x, top);
    }
    time_axis(out, sp, top, h);
    fputs("</svg>\n<p class=\"legend\"><span class=\"sw done\"></span>moved (flip seen) "
          "<span class=\"sw aborted\"></span>aborted (SETSLOT STABLE) "
          "<span class=\"sw open\"></span>no end seen in the capture",
          out);
    if (nfo)
        fputs(" <span class=\"sw fo\"></span>failover", out);
    else if (!has_fo_table)
        fputs(" &middot; failovers: not recorded in this database", out);
    fputs("</p>\n</section>\n", out);
}

/* ---------------------------------------------------------------- series */

/* One column of the series charts: buckets summed, the worst p99 kept. */
typedef struct column {
    int64_t n[5];
    int64_t commands, direct_ops, redirected_ops;
    int64_t direct_p99, redirected_p99; /* -1: none */
    uint32_t buckets;
} column;

typedef struct series {
    column col[HTML_MAX_COLS];
    size_t ncols;
    int64_t t0, col_us, width_us;
    int64_t rows;
} series;

static void load_series(sqlite3 *db, series *s)
{
    sqlite3_stmt *st = NULL;
    memset(s, 0, sizeof *s);
    if (sqlite3_prepare_v2(db,
                           "SELECT min(bucket_us), max(bucket_us + width_us), min(width_us),"
                           " count(*) FROM timeline WHERE scope = 'cluster'",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 3) == 0) {
        sqlite3_finalize(st);
        return;
    }
    int64_t t0 = col_int(st, 0, 0, MAX_US), t1 = col_int(st, 1, 0, MAX_US);
    int64_t w = col_int(st, 2, 1, MAX_US);
    s->rows = sqlite3_column_int64(st, 3);
    sqlite3_finalize(st);
    if (t1 <= t0)
        t1 = t0 + w;
    int64_t buckets = (t1 - t0 + w - 1) / w;
    int64_t per = (buckets + HTML_MAX_COLS - 1) / HTML_MAX_COLS;
    s->t0 = t0;
    s->width_us = w;
    s->col_us = per * w;
    s->ncols = (size_t)((t1 - t0 + s->col_us - 1) / s->col_us);
    if (s->ncols > HTML_MAX_COLS)
        s->ncols = HTML_MAX_COLS;
    for (size_t i = 0; i < s->ncols; i++)
        s->col[i].direct_p99 = s->col[i].redirected_p99 = -1;
    if (sqlite3_prepare_v2(db,
                           "SELECT bucket_us, moved, ask, tryagain, crossslot, clusterdown,"
                           " commands, direct_ops, redirected_ops, coalesce(direct_p99_us, -1),"
                           " coalesce(redirected_p99_us, -1) FROM timeline"
                           " WHERE scope = 'cluster' ORDER BY bucket_us",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t i = (col_int(st, 0, t0, MAX_US) - t0) / s->col_us;
        if (i < 0 || (size_t)i >= s->ncols)
            continue;
        column *c = &s->col[i];
        for (int k = 0; k < 5; k++)
            c->n[k] = sat_add(c->n[k], col_int(st, 1 + k, 0, MAX_US));
        c->commands = sat_add(c->commands, col_int(st, 6, 0, MAX_US));
        c->direct_ops = sat_add(c->direct_ops, col_int(st, 7, 0, MAX_US));
        c->redirected_ops = sat_add(c->redirected_ops, col_int(st, 8, 0, MAX_US));
        int64_t d = col_int(st, 9, -1, MAX_US), r = col_int(st, 10, -1, MAX_US);
        if (d > c->direct_p99)
            c->direct_p99 = d;
        if (r > c->redirected_p99)
            c->redirected_p99 = r;
        c->buckets++;
    }
    sqlite3_finalize(st);
}

/* A round axis maximum >= v and its tick step. */
static int64_t nice_max(int64_t v, int64_t *step)
{
    int64_t s = 1;
    if (v < 1)
        v = 1;
    if (v > MAX_US)
        v = MAX_US;
    while (s * 10 <= v && s < ((int64_t)1 << 50))
        s *= 10;
    int64_t m[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if (s * m[i] * 5 >= v) {
            *step = s * m[i];
            break;
        } else {
            *step = s * 10;
        }
    return (v + *step - 1) / *step * *step;
}

static const char *bucket_text(char *buf, size_t size, int64_t us)
{
    if (us % 60000000 == 0)
        snprintf(buf, size, "%" PRId64 " min", us / 60000000);
    else if (us % 1000000 == 0)
        snprintf(buf, size, "%" PRId64 " s", us / 1000000);
    else
        snprintf(buf, size, "%" PRId64 " ms", us / 1000);
    return buf;
}

/* Merged migration windows, shaded behind the series charts. */
static void shade_windows(FILE *out, const span *sp, const bar *bars, size_t n, int top, int h)
{
    int64_t cs = 0, ce = -1;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && ce >= 0 && bars[i].start <= ce) {
            if (bars[i].end > ce)
                ce = bars[i].end;
            continue;
        }
        if (ce >= 0) {
            double x0 = x_of(sp, cs), x1 = x_of(sp, ce);
            fprintf(out, "<rect class=\"window\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
                         "height=\"%d\"/>\n", x0, top, x1 - x0 < 1 ? 1 : x1 - x0, h);
        }
        if (i < n) {
            cs = bars[i].start;
            ce = bars[i].end;
        }
    }
}

static void section_redirects(FILE *out, const span *sp, const series *s, const bar *bars,
                              size_t nbars)
{
    int64_t max = 0, total[5] = {0};
    for (size_t i = 0; i < s->ncols; i++) {
        int64_t sum = 0;
        for (int k = 0; k < 5; k++) {
            sum = sat_add(sum, s->col[i].n[k]);
            total[k] = sat_add(total[k], s->col[i].n[k]);
        }
        if (sum > max)
            max = sum;
    }
    char bw[32], cw[32];
    fprintf(out, "<section id=\"redirects\" data-columns=\"%zu\" data-moved=\"%" PRId64
                 "\" data-ask=\"%" PRId64 "\" data-tryagain=\"%" PRId64 "\" data-crossslot=\"%"
                 PRId64 "\" data-clusterdown=\"%" PRId64 "\">\n<h2>Redirects over time</h2>\n",
            s->ncols, total[0], total[1], total[2], total[3], total[4]);
    if (!s->ncols) {
        fputs("<p class=\"none\">No time series in this database (the timeline table is"
              " empty).</p>\n</section>\n",
              out);
        return;
    }
    fprintf(out, "<p>Redirect-class replies per %s", bucket_text(cw, sizeof cw, s->col_us));
    if (s->col_us != s->width_us)
        fprintf(out, " (buckets of %s summed)", bucket_text(bw, sizeof bw, s->width_us));
    fputs(", stacked by kind; migration windows shaded.</p>\n", out);
    int top = 10, h = 220;
    int64_t step = 1, ymax = nice_max(max, &step);
    fprintf(out, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"redirects "
                 "per bucket\">\n", CHART_W, top + h + 40);
    shade_windows(out, sp, bars, nbars, top, h);
    for (int64_t v = 0; v <= ymax; v += step) {
        double y = top + h - (double)v / (double)ymax * h;
        fprintf(out, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                     "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%" PRId64
                     "</text>\n", PLOT_L, y, PLOT_L + PLOT_W, y, PLOT_L - 6, y + 4, v);
    }
    fprintf(out, "<text class=\"unit\" x=\"12\" y=\"%d\" transform=\"rotate(-90 12 %d)\" "
                 "text-anchor=\"middle\">replies per %s</text>\n",
            top + h / 2, top + h / 2, cw);
    for (size_t i = 0; i < s->ncols; i++) {
        const column *c = &s->col[i];
        int64_t t = s->t0 + (int64_t)i * s->col_us;
        double x0 = x_of(sp, t), x1 = x_of(sp, t + s->col_us);
        double wd = x1 - x0 > 1.5 ? x1 - x0 - 0.5 : 1;
        int64_t sum = 0;
        for (int k = 0; k < 5; k++)
            sum = sat_add(sum, c->n[k]);
        if (!sum)
            continue;
        char tb[32];
        fprintf(out, "<g><title>%s: %" PRId64 " commands", fmt_clock(tb, sizeof tb, t, 1),
                c->commands);
        for (int k = 0; k < 5; k++)
            if (c->n[k])
                fprintf(out, ", %" PRId64 " %s", c->n[k], kinds[k].label);
        fputs("</title>", out);
        double y = top + h;
        for (int k = 0; k < 5; k++) {
            if (!c->n[k])
                continue;
            double hh = (double)c->n[k] / (double)ymax * h;
            y -= hh;
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                         "fill=\"%s\"/>", x0, y, wd, hh, kinds[k].colour);
        }
        fputs("</g>\n", out);
    }
    time_axis(out, sp, top, top + h);
    fputs("</svg>\n<p class=\"legend\">", out);
    for (int k = 0; k < 5; k++)
        fprintf(out, "<span class=\"sw\" style=\"background:%s\"></span>%s "
                     "<b class=\"kind-total\" data-kind=\"%s\">%" PRId64 "</b> &nbsp; ",
                kinds[k].colour, kinds[k].label, kinds[k].col, total[k]);
    fputs("<span class=\"sw win\"></span>migration window</p>\n</section>\n", out);
}

/* y of a latency on the log axis from lo to hi us. */
static double y_log(int64_t us, double lo, double hi, int top, int h)
{
    double v = us < 1 ? 1 : (double)us;
    double f = (log10(v) - lo) / (hi - lo);
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    return top + h - f * h;
}

static void latency_path(FILE *out, const span *sp, const series *s, int redirected, double lo,
                         double hi, int top, int h)
{
    int pen = 0;
    fprintf(out, "<path class=\"%s\" d=\"", redirected ? "redir" : "direct");
    for (size_t i = 0; i < s->ncols; i++) {
        int64_t v = redirected ? s->col[i].redirected_p99 : s->col[i].direct_p99;
        if (v < 0) {
            pen = 0;
            continue;
        }
        int64_t t = s->t0 + (int64_t)i * s->col_us + s->col_us / 2;
        fprintf(out, "%c%.1f %.1f ", pen ? 'L' : 'M', x_of(sp, t), y_log(v, lo, hi, top, h));
        pen = 1;
    }
    fputs("\"/>\n", out);
    for (size_t i = 0; i < s->ncols; i++) {
        int64_t v = redirected ? s->col[i].redirected_p99 : s->col[i].direct_p99;
        if (v < 0)
            continue;
        int64_t t = s->t0 + (int64_t)i * s->col_us + s->col_us / 2;
        char d[32], tb[32];
        fprintf(out, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"><title>%s: %s p99 "
                     "%s (%" PRId64 " operations)</title></circle>\n",
                redirected ? "redir" : "direct", x_of(sp, t), y_log(v, lo, hi, top, h),
                fmt_clock(tb, sizeof tb, t - s->col_us / 2, 1), redirected ? "redirected" : "direct",
                fmt_dur(d, sizeof d, v), redirected ? s->col[i].redirected_ops : s->col[i].direct_ops);
    }
}

static void section_latency(FILE *out, const span *sp, const series *s, const bar *bars,
                            size_t nbars, sqlite3 *db)
{
    int64_t vmax = 1, vmin = INT64_MAX;
    for (size_t i = 0; i < s->ncols; i++) {
        int64_t v[2] = {s->col[i].direct_p99, s->col[i].redirected_p99};
        for (int k = 0; k < 2; k++) {
            if (v[k] < 0)
                continue;
            if (v[k] > vmax)
                vmax = v[k];
            if (v[k] < vmin)
                vmin = v[k];
        }
    }
    fputs("<section id=\"latency\">\n<h2>Latency: redirected p99 beside direct p99</h2>\n", out);
    /* the whole run's figures, from the latency table */
    sqlite3_stmt *st = NULL;
    fputs("<table class=\"nums\"><tr><th>operations</th><th>count</th><th>p50</th><th>p99</th>"
          "<th>max</th></tr>\n", out);
    if (sqlite3_prepare_v2(db, "SELECT redirected, count, p50_us, p99_us, max_us FROM latency"
                               " WHERE scope = 'all' ORDER BY redirected", -1, &st, NULL) ==
        SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW) {
            char a[32], b[32], c[32];
            int r = sqlite3_column_int(st, 0) != 0;
            fprintf(out, "<tr id=\"lat-all-%s\"><td>%s</td><td>%" PRId64 "</td><td>%s</td>"
                         "<td>%s</td><td>%s</td></tr>\n", r ? "redirected" : "direct",
                    r ? "redirected" : "direct", col_int(st, 1, 0, MAX_US),
                    fmt_dur(a, sizeof a, col_int(st, 2, 0, MAX_US)),
                    fmt_dur(b, sizeof b, col_int(st, 3, 0, MAX_US)),
                    fmt_dur(c, sizeof c, col_int(st, 4, 0, MAX_US)));
        }
    sqlite3_finalize(st);
    fputs("</table>\n", out);
    if (!s->ncols || vmin == INT64_MAX) {
        fputs("<p class=\"none\">No operation latency in the time series.</p>\n</section>\n", out);
        return;
    }
    char cw[32];
    fprintf(out, "<p>p99 of logical operations (first request to final reply) per %s%s; log "
                 "scale.</p>\n", bucket_text(cw, sizeof cw, s->col_us),
            s->col_us != s->width_us ? ", the worst bucket of each column" : "");
    double lo = floor(log10(vmin < 1 ? 1.0 : (double)vmin)), hi = ceil(log10((double)vmax));
    if (hi <= lo)
        hi = lo + 1;
    int top = 10, h = 200;
    fprintf(out, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"latency "
                 "p99 per bucket\">\n", CHART_W, top + h + 40);
    shade_windows(out, sp, bars, nbars, top, h);
    for (double e = lo; e <= hi + 1e-9; e += 1) {
        char d[32];
        double y = y_log((int64_t)pow(10, e), lo, hi, top, h);
        fprintf(out, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                     "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                PLOT_L, y, PLOT_L + PLOT_W, y, PLOT_L - 6, y + 4,
                fmt_dur(d, sizeof d, (int64_t)pow(10, e)));
    }
    fprintf(out, "<text class=\"unit\" x=\"12\" y=\"%d\" transform=\"rotate(-90 12 %d)\" "
                 "text-anchor=\"middle\">p99 latency</text>\n", top + h / 2, top + h / 2);
    latency_path(out, sp, s, 0, lo, hi, top, h);
    latency_path(out, sp, s, 1, lo, hi, top, h);
    time_axis(out, sp, top, top + h);
    fputs("</svg>\n<p class=\"legend\"><span class=\"sw direct\"></span>direct operations p99 "
          "<span class=\"sw redir\"></span>redirected operations p99 "
          "<span class=\"sw win\"></span>migration window</p>\n</section>\n", out);
}

/* ---------------------------------------------------------------- clients */

static void card_latency(FILE *out, sqlite3 *db, const char *client)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT redirected, count, p50_us, p99_us FROM latency"
                               " WHERE scope = 'client' AND key = ?1 ORDER BY redirected",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return;
    }
    sqlite3_bind_text(st, 1, client, -1, SQLITE_TRANSIENT);
    int any = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char a[32], b[32];
        int r = sqlite3_column_int(st, 0) != 0;
        fprintf(out, "%s<span class=\"lat\">%s: %" PRId64 " ops, p50 %s, p99 %s</span>",
                any++ ? " " : "<p class=\"lats\">", r ? "redirected" : "direct",
                col_int(st, 1, 0, MAX_US), fmt_dur(a, sizeof a, col_int(st, 2, 0, MAX_US)),
                fmt_dur(b, sizeof b, col_int(st, 3, 0, MAX_US)));
    }
    if (any)
        fputs("</p>\n", out);
    sqlite3_finalize(st);
}

static void card_findings(FILE *out, sqlite3 *db, const char *client)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT kind, severity_level, count, slot_count, slots,"
                               " extra_latency_us, operations FROM finding_blocks"
                               " WHERE client = ?1 ORDER BY severity_level DESC, count DESC, kind",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return;
    }
    sqlite3_bind_text(st, 1, client, -1, SQLITE_TRANSIENT);
    int n = 0, more = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n >= HTML_MAX_KINDS) {
            more++;
            continue;
        }
        if (!n++)
            fputs("<table class=\"kinds\"><tr><th>finding</th><th>count</th><th>slots</th>"
                  "<th>cost</th></tr>\n", out);
        int lvl = (int)col_int(st, 1, 0, 3);
        char d[32];
        const char *slots = col_text(st, 4);
        fprintf(out, "<tr class=\"sev%d\"><td class=\"kind\">", lvl);
        esc(out, col_text(st, 0));
        fprintf(out, "</td><td class=\"count\">%" PRId64 "</td><td class=\"slots\">",
                col_int(st, 2, 0, MAX_US));
        if (strlen(slots) > 80) { /* long slot lists cut, the count stays */
            char cutv[81];
            memcpy(cutv, slots, 80);
            cutv[80] = 0;
            esc(out, cutv);
            fputs("&hellip;", out);
        } else {
            esc(out, slots[0] ? slots : "-");
        }
        fprintf(out, " <small>(%" PRId64 ")</small></td><td>%s</td></tr>\n",
                col_int(st, 3, 0, MAX_US), fmt_dur(d, sizeof d, col_int(st, 5, 0, MAX_US)));
    }
    sqlite3_finalize(st);
    if (n)
        fputs("</table>\n", out);
    else
        fputs("<p class=\"none\">no findings</p>\n", out);
    if (more)
        fprintf(out, "<p class=\"more\">%d more kinds: <code>slotscope report DB --client "
                     "NAME</code></p>\n", more);
}

static void client_card(FILE *out, sqlite3 *db, sqlite3_stmt *st)
{
    const char *name = col_text(st, 0), *lib = col_text(st, 1), *ver = col_text(st, 2),
               *cname = col_text(st, 3);
    fputs("<div class=\"card\"><h3 class=\"cname\">", out);
    esc(out, name[0] ? name : "(cluster side)");
    fputs("</h3>\n<p class=\"ident\">", out);
    if (lib[0]) {
        esc(out, lib);
        if (ver[0]) {
            fputc(' ', out);
            esc(out, ver);
        }
    } else {
        fputs("library not announced", out);
    }
    if (cname[0]) {
        fputs(" &middot; name ", out);
        esc(out, cname);
    }
    if (sqlite3_column_int(st, 8))
        fputs(" &middot; cluster node", out);
    fprintf(out, "</p>\n<p class=\"stats\">%" PRId64 " connections, <span class=\"ccmds\">%"
                 PRId64 "</span> commands, <span class=\"credir\">%" PRId64 "</span> redirects, "
                 "<span class=\"cfind\">%" PRId64 "</span> findings</p>\n",
            col_int(st, 4, 0, MAX_US), col_int(st, 5, 0, MAX_US), col_int(st, 6, 0, MAX_US),
            col_int(st, 7, 0, MAX_US));
    card_findings(out, db, name);
    card_latency(out, db, name);
    fputs("</div>\n", out);
}

static void section_clients(FILE *out, sqlite3 *db)
{
    static const char sql[] =
        "SELECT name, lib_name, lib_ver, client_name, connections, commands, redirects, findings,"
        " is_node FROM (SELECT name, lib_name, lib_ver, client_name, connections, commands,"
        " redirects, findings, is_node FROM clients UNION ALL SELECT '', '', '', '', 0, 0, 0,"
        " count(*), 0 FROM findings WHERE client = '' HAVING count(*) > 0)"
        " ORDER BY findings DESC, redirects DESC, commands DESC, name LIMIT ?1 OFFSET ?2";
    int64_t total = q_int(db, "SELECT count(*) FROM clients") +
                    (q_int(db, "SELECT count(*) FROM findings WHERE client = ''") > 0);
    int64_t cards = total < HTML_MAX_CARDS ? total : HTML_MAX_CARDS;
    fprintf(out, "<section id=\"clients\" data-clients=\"%" PRId64 "\" data-cards=\"%" PRId64
                 "\">\n<h2>Clients</h2>\n<p>One card per client, most findings first: its "
                 "findings grouped by kind (count, slots, extra time they cost) and the latency "
                 "of its operations.</p>\n<div class=\"cards\">\n", total, cards);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, HTML_MAX_CARDS);
        sqlite3_bind_int64(st, 2, 0);
        while (sqlite3_step(st) == SQLITE_ROW)
            client_card(out, db, st);
    }
    fputs("</div>\n", out);
    if (total > HTML_MAX_CARDS && st) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, HTML_MAX_ROWS);
        sqlite3_bind_int64(st, 2, HTML_MAX_CARDS);
        fputs("<table class=\"rest\"><tr><th>client</th><th>library</th><th>commands</th>"
              "<th>redirects</th><th>findings</th></tr>\n", out);
        while (sqlite3_step(st) == SQLITE_ROW) {
            fputs("<tr><td>", out);
            esc(out, col_text(st, 0));
            fputs("</td><td>", out);
            esc(out, col_text(st, 1));
            fputc(' ', out);
            esc(out, col_text(st, 2));
            fprintf(out, "</td><td>%" PRId64 "</td><td>%" PRId64 "</td><td>%" PRId64
                         "</td></tr>\n", col_int(st, 5, 0, MAX_US), col_int(st, 6, 0, MAX_US),
                    col_int(st, 7, 0, MAX_US));
        }
        fputs("</table>\n", out);
        if (total > HTML_MAX_CARDS + HTML_MAX_ROWS)
            fprintf(out, "<p class=\"more\" id=\"clients-not-shown\">%" PRId64 " more clients "
                         "are not shown: <code>slotscope query DB offenders</code>.</p>\n",
                    total - HTML_MAX_CARDS - HTML_MAX_ROWS);
    }
    sqlite3_finalize(st);
    fputs("</section>\n", out);
}

/* ---------------------------------------------------------------- blind spots */

static void section_blind(FILE *out, sqlite3 *db)
{
    static const struct {
        const char *name, *what;
    } rows[] = {
        {"gaps", "gaps in TCP streams (bytes never captured)"},
        {"gap_bytes", "bytes lost in those gaps"},
        {"start_gaps", "of those gaps, before a mid-stream stream's first byte (lost, or in "
                       "flight when the capture began)"},
        {"start_gaps_answered_none", "of those, server bytes the client had received before "
                                     "it sent anything captured (they answer none of it)"},
        {"truncated", "packets cut by the snap length"},
        {"ooo_dropped", "out-of-order segments given up"},
        {"kernel_drops", "packets dropped by the kernel"},
        {"if_drops", "packets dropped by the interface"},
        {"mid_stream", "connections picked up mid-stream"},
        {"out_of_sync_connections", "connections whose pairing was lost"},
        {"evicted_connections", "connections evicted (table full)"},
        {"unpaired_requests", "requests without a reply"},
        {"unpaired_replies", "replies without a request"},
        {"resyncs", "searches for a message boundary"},
        {"skipped_bytes", "bytes skipped unparsed"},
        {"protocol_errors", "RESP protocol errors"},
        {"unknown_commands", "commands not in the command table (keys unknown)"},
        {"keys_lost", "commands whose first key the capture lost: in no operation, never judged"},
        {"abandoned_ops", "operations still waiting for a retry at the end"},
        {"evicted_ops", "operations dropped unjudged (table full)"},
        {"unseen_retry_ops", "redirected operations whose retry the capture may have lost: not"
                             " judged redirect_unfollowed"},
        {"unseen_target_ops", "redirected operations sent to a node the capture holds no"
                              " connection to: not judged redirect_unfollowed"},
        {"at_risk_unseen", "writes acknowledged by an old owner not judged (its own bus links"
                           " not captured)"},
        {"readonly_unknown_moved", "replica MOVEDs not judged (READONLY and master not known)"},
        {"evicted_clients", "clients evicted (table full)"},
        {"dropped_findings", "findings not kept (table full)"},
        {"timeline_late", "events older than every open time bucket"},
        {"timeline_overflow", "events of scopes beyond the per-bucket cap (in 'other')"},
    };
    size_t hit = 0, nrows = sizeof rows / sizeof rows[0];
    /* capture files (analyze) record drops only in pcapng statistics (then
     * in the counter): with none, those rows say so rather than show a 0
     * nothing measured */
    int files = q_int(db, "SELECT count(*) FROM meta WHERE key = 'mode' AND value = 'analyze'") > 0;
    int recorded = q_int(db, "SELECT count(*) FROM inputs WHERE drops_recorded <> 0") > 0;
    for (size_t i = 0; i < nrows; i++)
        hit += counter(db, rows[i].name) != 0;
    fputs("<section id=\"blind\">\n<h2>What the capture could not see</h2>\n", out);
    if (hit)
        fprintf(out, "<p><b>%zu</b> of these %zu counters are not zero: what they count was not"
                     " seen, or not judged, and is not guessed.</p>\n", hit, nrows);
    else
        fputs("<p>Every counter is zero: nothing was lost, cut or left unjudged.</p>\n", out);
    fputs("<table class=\"nums\"><tr><th>counter</th><th>value</th><th>meaning</th></tr>\n",
          out);
    for (size_t i = 0; i < nrows; i++) {
        int64_t v = counter(db, rows[i].name);
        if (files && (v > 0 || recorded) && strcmp(rows[i].name, "kernel_drops") == 0) {
            fprintf(out, "<tr class=\"%s\" data-counter=\"kernel_drops\"><td><code>kernel_drops"
                         "</code></td><td>%" PRId64 "</td><td>%s, as the capture files' pcapng"
                         " statistics record them</td></tr>\n", v ? "hit" : "zero", v, rows[i].what);
            continue;
        }
        if (files && v == 0 && strstr(rows[i].name, "_drops") != NULL) {
            fprintf(out, "<tr class=\"unknown\" data-counter=\"%s\"><td><code>%s</code></td>"
                         "<td>?</td><td>%s: none recorded by the capture files (a pcap file"
                         " cannot record them; tcpdump prints its own count when it stops);"
                         " what was dropped shows as gaps</td></tr>\n",
                    rows[i].name, rows[i].name, rows[i].what);
            continue;
        }
        fprintf(out, "<tr class=\"%s\" data-counter=\"%s\"><td><code>%s</code></td><td>%" PRId64
                     "</td><td>%s</td></tr>\n", v ? "hit" : "zero", rows[i].name, rows[i].name, v,
                rows[i].what);
    }
    fputs("</table>\n", out);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT name, error FROM inputs WHERE error <> '' LIMIT 20", -1,
                           &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW) {
            fputs("<p class=\"err\">input ", out);
            esc(out, col_text(st, 0));
            fputs(": ", out);
            esc(out, col_text(st, 1));
            fputs("</p>\n", out);
        }
    sqlite3_finalize(st);
    fputs("</section>\n", out);
}

/* ---------------------------------------------------------------- page */

static const char css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;"
    "background:#f6f7f9;color:#1d2330}"
    "main{max-width:1100px;margin:0 auto;padding:18px 24px 40px}"
    "h1{font-size:22px;margin:6px 0 2px}h2{font-size:17px;margin:0 0 6px;color:#23324a}"
    "h3{font-size:14px;margin:0 0 2px;word-break:break-all}"
    "section{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:14px 16px;"
    "margin:14px 0}"
    ".sub{color:#5a6578;margin:0}.chart{width:100%;height:auto;display:block}"
    ".axis{stroke:#556;stroke-width:1}.grid{stroke:#e3e7ee;stroke-width:1}"
    ".tick{font-size:11px;fill:#556}.unit{font-size:11px;fill:#334;font-style:italic}"
    ".lbl{font-size:11px;fill:#334;font-family:ui-monospace,monospace}"
    ".flag{font-size:10px;fill:#a33}"
    ".mig.done rect{fill:#3a7bd5}.mig.aborted rect{fill:#D55E00}"
    ".mig.open rect{fill:#f3c26b;stroke:#c07d00;stroke-dasharray:4 2}"
    ".failover line{stroke:#b00020;stroke-width:1.5;stroke-dasharray:3 3}.failover path{fill:#b00020}"
    ".window{fill:#8fa8c8;opacity:.16}"
    "path.direct{fill:none;stroke:#0072B2;stroke-width:2}"
    "path.redir{fill:none;stroke:#D55E00;stroke-width:2}"
    "circle.direct{fill:#0072B2}circle.redir{fill:#D55E00}"
    ".legend{font-size:12px;color:#334;margin:4px 0 0}"
    ".sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin:0 4px 0 10px;"
    "vertical-align:-1px}"
    ".sw.done{background:#3a7bd5}.sw.aborted{background:#D55E00}"
    ".sw.open{background:#f3c26b;border:1px dashed #c07d00}.sw.fo{background:#b00020}"
    ".sw.win{background:#8fa8c8;opacity:.4}.sw.direct{background:#0072B2}"
    ".sw.redir{background:#D55E00}"
    ".totals{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0 0}"
    ".tot{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:8px 14px}"
    ".tot b{display:block;font-size:20px}.tot span{font-size:12px;color:#5a6578}"
    ".cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:10px}"
    ".card{border:1px solid #dde2ea;border-radius:8px;padding:10px 12px;background:#fbfcfd}"
    ".ident{color:#5a6578;font-size:12px;margin:0}.stats{margin:4px 0;font-size:12px}"
    "table{border-collapse:collapse;font-size:12px;margin:4px 0}"
    "th{text-align:left;color:#5a6578;font-weight:600;padding:2px 8px 2px 0}"
    "td{padding:2px 8px 2px 0;vertical-align:top}"
    "table.kinds{width:100%}.kinds td.slots{word-break:break-all}"
    "tr.sev3 td.kind{color:#b00020;font-weight:600}tr.sev2 td.kind{color:#8a5a00;font-weight:600}"
    ".lats{font-size:12px;margin:4px 0 0}.lat{display:inline-block;margin-right:10px}"
    "tr.zero{color:#8a93a3}tr.hit td:nth-child(2){color:#b00020;font-weight:600}"
    ".none{color:#5a6578;font-style:italic}.more{font-size:12px;color:#5a6578}"
    ".err{color:#b00020}code{font-family:ui-monospace,monospace;font-size:12px}";

/* What the capture could not support, as analyze diagnosed it (meta
 * diagnosis, verdict.c): "no findings" from such a capture means nothing. */
static void inconclusive_note(FILE *out, sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT (SELECT value FROM meta WHERE key = 'diagnosis'),"
                               " (SELECT value FROM meta WHERE key = 'diagnosis_text')",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && col_text(st, 0)[0]) {
        fputs("<p class=\"err\" id=\"inconclusive\">The capture cannot support a full verdict (",
              out);
        esc(out, col_text(st, 0));
        fputs("): ", out);
        esc(out, col_text(st, 1));
        fputs("</p>\n", out);
    }
    sqlite3_finalize(st);
}

static void page_head(FILE *out, sqlite3 *db, const span *sp)
{
    char a[64], b[64], d[32];
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                 "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
                 "<title>slotscope report</title>\n<style>%s</style></head>\n<body><main>\n",
            css);
    fputs("<header><h1>slotscope report</h1>\n<p class=\"sub\" id=\"inputs\">", out);
    sqlite3_stmt *st = NULL;
    int n = 0;
    if (sqlite3_prepare_v2(db, "SELECT name FROM inputs ORDER BY id LIMIT 6", -1, &st, NULL) ==
        SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW) {
            fputs(n++ ? ", " : "", out);
            esc(out, col_text(st, 0));
        }
    sqlite3_finalize(st);
    fprintf(out, "</p>\n<p class=\"sub\">%s to %s (%s)</p>\n", fmt_date(a, sizeof a, sp->t0),
            fmt_date(b, sizeof b, sp->t1), fmt_dur(d, sizeof d, sp->t1 - sp->t0));
    static const struct {
        const char *id, *label, *counter;
    } tot[] = {{"total-commands", "commands", "commands"},
               {"total-redirects", "redirect replies", "redirects"},
               {"total-operations", "operations", "operations"},
               {"total-redirected", "redirected operations", "redirected_operations"}};
    fputs("<div class=\"totals\">", out);
    for (size_t i = 0; i < sizeof tot / sizeof tot[0]; i++)
        fprintf(out, "<div class=\"tot\"><b id=\"%s\">%" PRId64 "</b><span>%s</span></div>",
                tot[i].id, counter(db, tot[i].counter), tot[i].label);
    fprintf(out, "<div class=\"tot\"><b id=\"total-findings\">%" PRId64
                 "</b><span>findings</span></div><div class=\"tot\"><b id=\"total-clients\">%"
                 PRId64 "</b><span>clients</span></div></div>\n</header>\n",
            q_int(db, "SELECT count(*) FROM findings"), q_int(db, "SELECT count(*) FROM clients"));
    inconclusive_note(out, db);
}

/* The capture's span: its inputs' first and last records, else what the
 * tables show. */
static void load_span(sqlite3 *db, span *sp)
{
    sp->t0 = q_int(db, "SELECT min(v) FROM (SELECT min(first_us) v FROM inputs WHERE first_us > 0"
                       " UNION ALL SELECT min(bucket_us) FROM timeline"
                       " UNION ALL SELECT min(first_us) FROM clients WHERE first_us > 0)");
    sp->t1 = q_int(db, "SELECT max(v) FROM (SELECT max(last_us) v FROM inputs"
                       " UNION ALL SELECT max(bucket_us + width_us) FROM timeline"
                       " UNION ALL SELECT max(last_us) FROM clients)");
    if (sp->t0 < 0)
        sp->t0 = 0;
    if (sp->t0 > MAX_US)
        sp->t0 = MAX_US;
    if (sp->t1 > MAX_US)
        sp->t1 = MAX_US;
    if (sp->t1 <= sp->t0)
        sp->t1 = sp->t0 + 1000000;
}

int report_write_html(sqlite3 *db, FILE *out)
{
    span sp;
    load_span(db, &sp);
    bar *bars = NULL;
    int64_t cut = 0;
    size_t nbars = load_bars(db, &sp, &bars, &cut);
    series *s = calloc(1, sizeof *s);
    if (!s) {
        free(bars);
        return -1;
    }
    load_series(db, s);
    page_head(out, db, &sp);
    section_migrations(out, db, &sp, bars, nbars, cut, q_int(db, "SELECT count(*) FROM slot_migrations"));
    section_redirects(out, &sp, s, bars, nbars);
    section_latency(out, &sp, s, bars, nbars, db);
    section_clients(out, db);
    section_blind(out, db);
    fputs("<p class=\"more\">Written by slotscope " SLOTSCOPE_VERSION
          ". Hover over bars and points for details.</p>\n</main></body></html>\n", out);
    free(s);
    free(bars);
    return ferror(out) ? -1 : 0;
}
