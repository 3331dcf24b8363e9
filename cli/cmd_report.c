/*
 * cmd_report.c - `slotscope report DB [--json] [--fail-on-findings]`.
 *
 * The incident report of a finished (or interrupted) run, read back from its
 * database into the same model `analyze` fills, so it prints the same text.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char report_usage[] =
    "usage: slotscope report DB [--json] [--fail-on-findings]\n"
    "\n"
    "Print the incident report of the run stored in DB (written by analyze or live\n"
    "with --db): what happened, the findings ranked by impact with their evidence,\n"
    "what the redirects cost, and what the capture could not see.\n"
    "\n"
    "options:\n"
    "  --json              JSON lines (one object per record, \"type\" field) for jq\n"
    "  --fail-on-findings  exit 3 when the database holds findings\n"
    "  --help, -h          this help\n";

/* Load and print. Returns the exit code. */
static int report_db(const char *path, int json, int fail_on_findings)
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
        if (fail_on_findings && rep.n_findings > 0)
            status = EXIT_FINDINGS;
    }
    report_free(&rep);
    sqlite3_close(db);
    return status;
}

int cmd_report(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0, fail = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(report_usage, stdout);
            return EXIT_OK;
        }
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--fail-on-findings"))
            fail = 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("report", "unknown option '%s'", argv[i]);
        else if (path)
            return cli_usage_error("report", "unexpected argument '%s'", argv[i]);
        else
            path = argv[i];
    }
    if (!path)
        return cli_usage_error("report", "no database given");
    return report_db(path, json, fail);
}
