/*
 * cmd_report.c - `slotscope report DB [--json] [--fail-on-findings]
 * [--fail-on WHAT] [--ignore KINDS]`.
 *
 * The incident report of a finished (or interrupted) run, read back from its
 * database into the same model `analyze` fills, so it prints the same text.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char report_usage[] =
    "usage: slotscope report DB [--json] [--fail-on-findings] [--fail-on WHAT]\n"
    "                           [--ignore KIND[,KIND]]\n"
    "\n"
    "Print the incident report of the run stored in DB (written by analyze or live\n"
    "with --db): what happened, the findings ranked by impact with their evidence,\n"
    "what the redirects cost, and what the capture could not see.\n"
    "\n"
    "options:\n"
    "  --json              JSON lines (one object per record, \"type\" field) for jq\n"
    "  --fail-on-findings  exit 3 when the database holds a client finding, 4 when its\n"
    "                      capture cannot support a verdict (see analyze --help)\n"
    "  --fail-on WHAT      what fails (implies --fail-on-findings): error, warning or\n"
    "                      KIND[,KIND...]\n"
    "  --ignore KINDS      these kinds never fail\n"
    "  --help, -h          this help\n";

/* Load and print. Returns the exit code. */
static int report_db(const char *path, int json, const verdict_opts *verdict)
{
    char err[1600] = "";
    sqlite3 *db = store_open_readonly(path, err, sizeof err);
    report rep;
    int status = EXIT_OK;
    if (!db)
        return cli_error("%s", err);
    report_init(&rep);
    if (report_load_db(&rep, db, err, sizeof err) != 0) {
        status = cli_error("%s: %s", path, err);
    } else {
        if (json)
            report_print_json(&rep, stdout);
        else
            report_print_text(&rep, stdout);
        status = verdict_finish(verdict, &rep, json, status);
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
    int bad = 0;
    const char *path = NULL;
    int json = 0;
    verdict_opts verdict;
    memset(&verdict, 0, sizeof verdict);
    for (int i = 0; i < argc; i++) {
        int vo = verdict_option(&verdict, argc, argv, &i, &bad);
        if (vo < 0)
            return bad;
        if (vo > 0)
            continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(report_usage, stdout);
            return EXIT_OK;
        }
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--fail-on-findings"))
            verdict.enabled = 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("report", "unknown option '%s'", argv[i]);
        else if (path)
            return cli_usage_error("report", "unexpected argument '%s'", argv[i]);
        else
            path = argv[i];
    }
    if (!path)
        return cli_usage_error("report", "no database given");
    return report_db(path, json, &verdict);
}
