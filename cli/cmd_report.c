/*
 * cmd_report.c - `slotscope report DB [--json] [--full] [--fail-on-findings]
 * [--fail-on WHAT] [--ignore KINDS] [--client C] [--slot N] [--node N]
 * [--since T] [--until T]`.
 *
 * The incident report of a finished (or interrupted) run, read back from its
 * database into the same model `analyze` fills, so it prints the same text.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

static const char report_usage[] =
    "usage: slotscope report DB [--json] [--full] [--html FILE] [--fail-on-findings]\n"
    "                        [--fail-on WHAT] [--ignore KIND[,KIND]]\n"
    "                        [--client NAME] [--slot N] [--node HOST:PORT]\n"
    "                        [--since TIME] [--until TIME]\n"
    "\n"
    "Print the incident report of the run stored in DB (written by analyze or live\n"
    "with --db): what happened, the findings by client and kind with their\n"
    "evidence, what the redirects cost, and what the capture could not see.\n"
    "\n"
    "options:\n"
    "  --json              JSON lines (one object per record, \"type\" field) for jq\n"
    "  --full              every client, kind, evidence pattern and finding (the\n"
    "                      default shows about a screen per client)\n"
    "  --html FILE         write the report as one self-contained HTML page to FILE\n"
    "                      (migration timeline, redirects and latency over time,\n"
    "                      one card per client, blind spots; nothing loaded from the\n"
    "                      network) instead of printing it\n"
    "  --fail-on-findings  exit 3 when the database holds a client finding (after the\n"
    "                      filters), 4 when its capture cannot support a verdict (see\n"
    "                      analyze --help)\n"
    "  --fail-on WHAT      what fails (implies --fail-on-findings): error, warning or\n"
    "                      KIND[,KIND...]\n"
    "  --ignore KINDS      these kinds never fail\n"
    "  --client NAME       only this client's findings, redirects and connections\n"
    "  --slot N            only what is about slot N (0-16383)\n"
    "  --node HOST:PORT    only what involves this node (observed or announced)\n"
    "  --since TIME, --until TIME\n"
    "                      only what happened in this window: +30s (from the\n"
    "                      capture's start), 2026-12-01T15:43:09Z, 15:43:09 (UTC),\n"
    "                      @SECONDS; an unknown client or node, or a bad time, is\n"
    "                      an error (exit 2)\n"
    "  --help, -h          this help\n";

/* What the command line asked for. */
typedef struct report_args {
    const char *path;
    const char *html;          /* --html FILE */
    int json, full;
    verdict_opts verdict;
    cli_filter filter;
} report_args;

/* --html: the page into a.html (a temporary file renamed at the end, so a
 * failed run leaves no half page). Returns the exit code. */
static int write_html(report_args *a, sqlite3 *db)
{
    struct stat in, outst;
    if (stat(a->path, &in) == 0 && stat(a->html, &outst) == 0 && in.st_dev == outst.st_dev &&
        in.st_ino == outst.st_ino)
        return cli_usage_error("report", "--html '%s' is the database itself", a->html);
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", a->html) >= (int)sizeof tmp)
        return cli_usage_error("report", "--html path too long");
    FILE *out = fopen(tmp, "w");
    if (!out)
        return cli_error("cannot create '%s': %s", tmp, strerror(errno));
    int rc = report_write_html(db, out);
    if (fclose(out) != 0)
        rc = -1;
    if (rc != 0 || rename(tmp, a->html) != 0) {
        int e = errno;
        remove(tmp);
        return cli_error("cannot write '%s': %s", a->html, strerror(e));
    }
    return EXIT_OK;
}

/* Load (through the filters) and print. Returns the exit code. */
static int report_db(report_args *a)
{
    char err[1600] = "", desc[256];
    sqlite3 *db = store_open_readonly(a->path, err, sizeof err);
    report rep;
    int status = EXIT_OK;
    if (!db)
        return cli_error("%s", err);
    status = cli_filter_apply(&a->filter, "report", db, desc, sizeof desc);
    if (status != EXIT_OK) {
        sqlite3_close(db);
        return status;
    }
    if (a->html) {
        status = write_html(a, db);
        /* the page only, unless a verdict is asked for: then its line and code */
        if (status != EXIT_OK || !a->verdict.enabled) {
            sqlite3_close(db);
            return status;
        }
    }
    report_init(&rep);
    rep.full = a->full;
    snprintf(rep.filter, sizeof rep.filter, "%s", desc);
    if (report_load_db(&rep, db, err, sizeof err) != 0) {
        status = cli_error("%s: %s", a->path, err);
    } else {
        /* no end yet: still being written (live), or the run died */
        if (rep.interrupted && store_being_written(a->path)) {
            rep.interrupted = 0;
            rep.in_progress = 1;
        }
        /* with --html the page is written already: the verdict alone follows */
        if (!a->html && a->json)
            report_print_json(&rep, stdout);
        else if (!a->html)
            report_print_text(&rep, stdout);
        status = verdict_finish(&a->verdict, &rep, a->json && !a->html, status);
    }
    report_free(&rep);
    sqlite3_close(db);
    return status;
}

/* --fail-on VALUE / --ignore VALUE (or =VALUE) at argv[*i]: 1 when it is one
 * (*i moved past its value), 0 when not; -1 with *bad set on a bad value. */
static int verdict_option(verdict_opts *v, int argc, char **argv, int *i, int *bad)
{
    static const char *const names[2] = {"--fail-on", "--ignore"};
    for (int k = 0; k < 2; k++) {
        size_t n = strlen(names[k]);
        const char *val;
        if (strncmp(argv[*i], names[k], n) != 0 || (argv[*i][n] && argv[*i][n] != '='))
            continue;
        val = argv[*i][n] == '=' ? argv[*i] + n + 1 : *i + 1 < argc ? argv[++*i] : NULL;
        if (!val) {
            *bad = cli_usage_error("report", "%s needs a value", names[k]);
            return -1;
        }
        if ((k == 0 ? verdict_fail_on(v, val) : verdict_ignore(v, val)) != 0) {
            *bad = cli_usage_error("report", "bad %s '%s' (%s)", names[k], val,
                                   k == 0 ? "error, warning or finding kinds, comma separated"
                                          : "finding kinds, comma separated");
            return -1;
        }
        return 1;
    }
    return 0;
}

int cmd_report(int argc, char **argv)
{
    report_args a;
    int bad = 0;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < argc; i++) {
        int taken;
        int vo = verdict_option(&a.verdict, argc, argv, &i, &bad);
        if (vo < 0)
            return bad;
        if (vo > 0)
            continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(report_usage, stdout);
            return EXIT_OK;
        }
        if ((taken = cli_filter_option(&a.filter, "report", argc, argv, &i)) != 0) {
            if (taken < 0)
                return EXIT_USAGE;
        } else if (!strcmp(argv[i], "--json")) {
            a.json = 1;
        } else if (!strcmp(argv[i], "--html") || !strncmp(argv[i], "--html=", 7)) {
            a.html = argv[i][6] == '=' ? argv[i] + 7 : i + 1 < argc ? argv[++i] : NULL;
            if (!a.html || !a.html[0])
                return cli_usage_error("report", "--html needs a file name");
        } else if (!strcmp(argv[i], "--full")) {
            a.full = 1;
        } else if (!strcmp(argv[i], "--fail-on-findings")) {
            a.verdict.enabled = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("report", "unknown option '%s'", argv[i]);
        } else if (a.path) {
            return cli_usage_error("report", "unexpected argument '%s'", argv[i]);
        } else {
            a.path = argv[i];
        }
    }
    if (!a.path)
        return cli_usage_error("report", "no database given");
    return report_db(&a);
}
