/*
 * timeoffset.c - the clocks of several inputs: --time-offset FILE=+12.5ms,
 * the skew estimated from TCP segments two inputs both captured
 * (cap_estimate_skew), and --time-offset auto, which applies it.
 *
 * The estimate runs when 2 to CAP_SKEW_INPUTS regular files are given (or
 * with auto): it only reads the first records of each file again and
 * changes nothing; a skew of a millisecond or more is a warning, and every
 * estimate is in the inputs table (skew_us, skew_shared, skew_ref). Times
 * move only when asked: by a FILE=OFFSET, or by auto, which aligns each
 * input with the first one through the pairs found (an input given an
 * offset keeps it).
 */
#include <inttypes.h>
#include <math.h> /* isfinite (a macro: no libm) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

/* Skews below this are not worth a warning (two captures on one host). */
#define SKEW_WARN_US 1000

/* Parse "FILE=+12.5ms" (see cli.h). */
int cli_parse_time_offset(const char *text, size_t *file_len, int64_t *us)
{
    const char *eq = strrchr(text, '=');
    char *end;
    double v, scale;
    if (eq == NULL || eq == text || eq[1] == '\0')
        return -1;
    v = strtod(eq + 1, &end);
    if (end == eq + 1 || !isfinite(v))
        return -1;
    if (!strcmp(end, "us"))
        scale = 1;
    else if (!strcmp(end, "ms"))
        scale = 1e3;
    else if (!strcmp(end, "s"))
        scale = 1e6;
    else
        return -1;
    v *= scale;
    if (v > 1e15 || v < -1e15) /* 31 years: anything more is a typo */
        return -1;
    if (file_len)
        *file_len = (size_t)(eq - text);
    if (us)
        *us = (int64_t)(v < 0 ? v - 0.5 : v + 0.5); /* to the nearest microsecond */
    return 0;
}

/* 1 when every input is a regular file (it can be read twice). */
static int all_regular(const cli_opts *o)
{
    struct stat sb;
    for (size_t i = 0; i < o->n_files; i++)
        if (!strcmp(o->files[i], "-") || stat(o->files[i], &sb) != 0 || !S_ISREG(sb.st_mode))
            return 0;
    return 1;
}

/* Offsets for the inputs tied to input first through the skew pairs found
 * (b's clock is skew ahead of a's, so b moves by -skew relative to a);
 * known marks the inputs placed, first among them. */
static void align_group(cli_clock *c, unsigned char *known, size_t first)
{
    known[first] = 1;
    for (size_t round = 0; round < c->n; round++)
        for (size_t k = 0; k < c->n_skews; k++) {
            const cap_skew *s = &c->skews[k];
            if (known[s->a] && !known[s->b]) {
                c->offset_us[s->b] = c->offset_us[s->a] - s->skew_us;
                known[s->b] = 1;
            } else if (known[s->b] && !known[s->a]) {
                c->offset_us[s->a] = c->offset_us[s->b] + s->skew_us;
                known[s->a] = 1;
            }
        }
}

/* Work out every input's offset. 0, or EXIT_USAGE printed. */
int cli_clock_plan(const cli_opts *o, cli_clock *c)
{
    unsigned char *fixed;
    memset(c, 0, sizeof *c);
    c->n = o->n_files;
    c->offset_us = calloc(c->n ? c->n : 1, sizeof *c->offset_us);
    fixed = calloc(c->n ? c->n : 1, 1);
    if (c->offset_us == NULL || fixed == NULL) {
        free(fixed);
        return cli_error("out of memory");
    }
    for (size_t k = 0; k < o->n_time_offsets; k++) {
        size_t len, i;
        int64_t us;
        cli_parse_time_offset(o->time_offsets[k], &len, &us); /* checked by the parser */
        for (i = 0; i < o->n_files; i++)
            if (strlen(o->files[i]) == len && !strncmp(o->files[i], o->time_offsets[k], len))
                break;
        if (i == o->n_files) {
            free(fixed);
            return cli_usage_error(o->cmd, "--time-offset '%s': no input file is named '%.*s'",
                                   o->time_offsets[k], (int)len, o->time_offsets[k]);
        }
        c->offset_us[i] = us;
        fixed[i] = 1;
    }
    if (o->time_offset_auto && !all_regular(o)) {
        free(fixed);
        return cli_usage_error(o->cmd, "--time-offset auto reads the inputs twice: it needs "
                                       "regular files (not standard input or a pipe)");
    }
    if (o->n_files >= 2 && (o->time_offset_auto || o->n_files <= CAP_SKEW_INPUTS) && all_regular(o))
        c->n_skews = cap_estimate_skew(o->files, o->n_files, c->skews,
                                       sizeof c->skews / sizeof c->skews[0]);
    /* --time-offset auto: with the first input through the pairs found;
     * inputs that no pair ties to it, with the first of their own group */
    for (size_t first = 0; o->time_offset_auto && first < c->n; first++)
        if (first == 0 || !fixed[first])
            align_group(c, fixed, first);
    free(fixed);
    return 0;
}

/* Set the offsets and the skews found on a source of the same inputs. */
void cli_clock_apply(const cli_clock *c, cap_source *src)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->offset_us[i] != 0)
            cap_source_set_offset(src, i, c->offset_us[i]);
    /* each input's skew against the earliest input it shares segments with */
    for (size_t k = c->n_skews; k-- > 0;)
        cap_source_set_skew(src, c->skews[k].b, c->skews[k].a, c->skews[k].skew_us,
                            c->skews[k].shared);
}

/* One warning per pair whose clocks differ by a millisecond or more; it
 * says "aligned" when the offsets given or found make up for it. */
void cli_clock_warn(const cli_opts *o, const cli_clock *c)
{
    for (size_t k = 0; k < c->n_skews; k++) {
        const cap_skew *s = &c->skews[k];
        if (llabs(s->skew_us) < SKEW_WARN_US)
            continue;
        int aligned = llabs(s->skew_us + c->offset_us[s->b] - c->offset_us[s->a]) < SKEW_WARN_US;
        cli_error("warning: '%s' and '%s' captured %" PRIu64 " of the same TCP segments: the "
                  "clock of '%s' is %+.3f ms ahead%s; %s", o->files[s->a], o->files[s->b],
                  s->shared, o->files[s->b], (double)s->skew_us / 1000.0,
                  s->one_way ? " (segments of one direction only: the delay between the "
                               "capture points is included)" : "",
                  aligned ? (o->time_offset_auto ? "aligned (--time-offset auto)" : "aligned")
                          : "times not changed (--time-offset auto aligns them)");
    }
}

void cli_clock_free(cli_clock *c)
{
    free(c->offset_us);
    c->offset_us = NULL;
}
