/*
 * progress.c - the progress bar of `analyze`, on stderr when it is a terminal:
 *
 *   [###########.................]  38%  412345 pkt/s  80210 cmd/s  1234 redirects  ETA 0:07
 *
 * Percent of the input bytes read (cap_source_progress), packets and
 * commands per second since the start (the figures of live's status line,
 * status.c), the redirects so far, and the time left at that pace. Findings
 * are judged as the capture ends, so they are not shown here. Redrawn at
 * most five times a second (SLOTSCOPE_PROGRESS_MS for tests); erased at the
 * end so the report starts on a clean line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define BAR_WIDTH 28
#define REDRAW_NS 200000000LL

struct progress {
    struct timespec start;   /* when analysis began */
    int64_t redraw_ns;       /* at most one redraw this often */
    int64_t last_draw_ns;    /* since start, of the last redraw */
    int drawn;               /* something is on the line */
};

/* Nanoseconds from a to b. */
static int64_t elapsed_ns(const struct timespec *a, const struct timespec *b)
{
    return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

progress *progress_new(int quiet)
{
    progress *pg;
    if (quiet || !isatty(STDERR_FILENO))
        return NULL;
    pg = calloc(1, sizeof *pg);
    if (pg) {
        clock_gettime(CLOCK_MONOTONIC, &pg->start);
        /* SLOTSCOPE_PROGRESS_MS: tests/cli/test_live.c needs the bar drawn */
        pg->redraw_ns = cli_env_interval_ns("SLOTSCOPE_PROGRESS_MS", REDRAW_NS);
    }
    return pg;
}

/* Nanoseconds since the start if a redraw is due now, else -1. */
static int64_t redraw_due(progress *pg)
{
    struct timespec now;
    int64_t ns;
    if (!pg)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    ns = elapsed_ns(&pg->start, &now);
    if (ns - pg->last_draw_ns < pg->redraw_ns)
        return -1;
    pg->last_draw_ns = ns;
    return ns;
}

/* Draw the bar: done of total bytes, packets and the analysis's counts in ns
 * since the start. */
static void draw(progress *pg, int64_t ns, uint64_t done, uint64_t total, uint64_t packets,
                 const an_stats *as)
{
    double secs, frac, rate;
    char bar[BAR_WIDTH + 1];
    int eta;

    secs = ns > 0 ? (double)ns / 1e9 : 1e-9;
    frac = total ? (double)done / (double)total : 0;
    if (frac > 1)
        frac = 1;
    rate = (double)packets / secs;
    eta = frac > 0 ? (int)(secs * (1 - frac) / frac) : 0;
    for (int i = 0; i < BAR_WIDTH; i++)
        bar[i] = i < (int)(frac * BAR_WIDTH) ? '#' : '.';
    bar[BAR_WIDTH] = 0;
    fprintf(stderr, "\r[%s] %3d%%  %.0f pkt/s  %.0f cmd/s  %" PRIu64 " redirects  ETA %d:%02d ",
            bar, (int)(frac * 100), rate, (double)as->commands / secs, as->redirects, eta / 60,
            eta % 60);
    fflush(stderr);
    pg->drawn = 1;
}

void progress_update(progress *pg, const cap_source *src, uint64_t packets, const an_stats *as)
{
    uint64_t done = 0, total = 0;
    int64_t ns = redraw_due(pg);
    if (ns < 0)
        return;
    cap_source_progress(src, &done, &total);
    draw(pg, ns, done, total, packets, as);
}

void progress_show(progress *pg, uint64_t done, uint64_t total, uint64_t packets,
                   const an_stats *as)
{
    int64_t ns = redraw_due(pg);
    if (ns >= 0)
        draw(pg, ns, done, total, packets, as);
}

void progress_done(progress *pg)
{
    if (!pg)
        return;
    if (pg->drawn)
        fputs("\r\033[K", stderr);
    free(pg);
}
