/*
 * status.c - the status line of `live`, redrawn once a second on stderr when
 * it is a terminal, in the spirit of `redis-cli --stat`:
 *
 *   12:00:01  1520 pkt/s  700 cmd/s  redirects/s moved 0 ask 12 tryagain 0
 *   crossslot 0 clusterdown 0  findings 3  kernel drops 0
 *
 * (one line; on a narrow terminal the short form "1520 pkt/s  700 cmd/s
 * redir/s mov 0 ask 12 try 0 xslot 0 down 0  findings 3  drops 0", and cut
 * to the width so that it never wraps, which would break the redraw). Rates are over the time since the previous
 * redraw; findings and drops are totals. The line is erased before findings
 * are printed (console.c) and at the end, so the report starts clean.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define STATUS_MAX 512

struct status_line {
    live_counts prev;            /* the counts of the previous redraw */
    struct timespec prev_at;     /* when (CLOCK_MONOTONIC) */
    int drawn;                   /* something is on the line */
};

const char *const live_redirect_names[LIVE_REDIRECT_KINDS] = {"moved", "ask", "tryagain",
                                                               "crossslot", "clusterdown"};

int live_redirect_index(resp_err_class c)
{
    switch (c) {
    case RESP_ERR_MOVED: return 0;
    case RESP_ERR_ASK: return 1;
    case RESP_ERR_TRYAGAIN: return 2;
    case RESP_ERR_CROSSSLOT: return 3;
    case RESP_ERR_CLUSTERDOWN: return 4;
    default: return -1;
    }
}

void live_count_node_redirect(live_counts *c, const char *node, int k)
{
    if (k < 0 || k >= LIVE_REDIRECT_KINDS)
        return;
    for (size_t i = 0; i < c->n_nodes; i++) {
        if (!strcmp(c->nodes[i].node, node)) {
            c->nodes[i].redirects[k]++;
            return;
        }
    }
    if (c->n_nodes < LIVE_MAX_NODES) {
        live_node_counts *n = &c->nodes[c->n_nodes++];
        snprintf(n->node, sizeof n->node, "%s", node);
        n->redirects[k] = 1;
        return;
    }
    c->other_nodes[k]++;
}

status_line *status_line_new(int quiet)
{
    status_line *s;
    if (quiet || !isatty(STDERR_FILENO))
        return NULL;
    s = calloc(1, sizeof *s);
    if (s)
        clock_gettime(CLOCK_MONOTONIC, &s->prev_at);
    return s;
}

/* Per second: (now - before) / secs, 0 when the counter went back. */
static double rate(uint64_t now, uint64_t before, double secs)
{
    return now >= before && secs > 0 ? (double)(now - before) / secs : 0;
}

/* The line in its long form, or the short one when abbrev (narrow
 * terminals): the same figures in the same order. */
static void format_form(char *out, size_t size, const live_counts *c, const live_counts *prev,
                        double secs, int abbrev)
{
    static const char *const short_names[LIVE_REDIRECT_KINDS] = {"mov", "ask", "try", "xslot",
                                                                  "down"};
    char clock[16] = "";
    time_t t = time(NULL);
    struct tm tm;
    size_t used = 0;
    if (!abbrev && gmtime_r(&t, &tm))
        strftime(clock, sizeof clock, "%H:%M:%S  ", &tm);
    used = (size_t)snprintf(out, size, "%s%.0f pkt/s  %.0f cmd/s  %s", clock,
                            rate(c->packets, prev->packets, secs),
                            rate(c->commands, prev->commands, secs),
                            abbrev ? "redir/s" : "redirects/s");
    for (int k = 0; k < LIVE_REDIRECT_KINDS && used < size; k++)
        used += (size_t)snprintf(out + used, size - used, " %s %.0f",
                                 abbrev ? short_names[k] : live_redirect_names[k],
                                 rate(c->redirects[k], prev->redirects[k], secs));
    if (used < size)
        snprintf(out + used, size - used, "  findings %" PRIu64 "  %s %" PRIu64, c->findings,
                 abbrev ? "drops" : "kernel drops", c->kernel_drops);
}

void status_line_format(char *out, size_t size, const live_counts *c, const live_counts *prev,
                        double secs, int width)
{
    format_form(out, size, c, prev, secs, 0);
    if (width > 0 && strlen(out) > (size_t)width)
        format_form(out, size, c, prev, secs, 1);
}

/* The terminal's width, 80 when unknown. */
static int term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

void status_line_draw(status_line *s, const live_counts *c)
{
    char line[STATUS_MAX];
    struct timespec now;
    double secs;
    int width;
    if (!s)
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    secs = (double)(now.tv_sec - s->prev_at.tv_sec) + (double)(now.tv_nsec - s->prev_at.tv_nsec) / 1e9;
    width = term_width() - 1; /* the last column would wrap on some terminals */
    status_line_format(line, sizeof line, c, &s->prev, secs, width);
    fprintf(stderr, "\r\033[K%.*s", width > 0 ? width : 0, line);
    fflush(stderr);
    s->drawn = 1;
    s->prev = *c;
    s->prev_at = now;
}

void status_line_clear(status_line *s)
{
    if (!s || !s->drawn)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    s->drawn = 0;
}

void status_line_done(status_line *s)
{
    status_line_clear(s);
    free(s);
}
