/*
 * cmd_analyze.c - `slotscope analyze FILE... [options]`.
 *
 * Reads the capture files (merged by time), runs the whole pipeline, writes
 * the database when asked, and prints the incident report (text or JSON
 * lines). An input that fails half-way is reported in one line; what was read
 * before is still analysed, stored and printed, and the exit code is 1.
 * Ctrl-C (SIGINT) or SIGTERM stops the reading: what was read is analysed,
 * stored (the database closed, with its indexes) and printed the same way,
 * marked as stopped, and the exit code is 1; a second Ctrl-C ends the
 * process at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include "cli/cli.h"

static const char analyze_usage[] =
    "usage: slotscope analyze FILE... [options]\n"
    "\n"
    "Analyse pcap/pcapng capture files (several are merged by time; gzip or zstd\n"
    "compressed ones too; - is standard input, e.g. tcpdump -w - | slotscope\n"
    "analyze -) and print an incident report: capture span, nodes, slot\n"
    "migrations, findings by client and kind, what the redirects cost, and what\n"
    "the capture could not see.\n"
    "\n"
    "options:\n";

static void print_help(void)
{
    fputs(analyze_usage, stdout);
    fputs(cli_analysis_options_help, stdout);
    fputs("\nsettings for --set NAME=VALUE:\n", stdout);
    cli_print_settings_help(stdout);
    fputs("\nCtrl-C or SIGTERM stops the reading: what was read is analysed, stored and\n"
          "printed, marked as stopped (exit code 1); a second Ctrl-C ends at once.\n"
          "\nexit codes: 0 ok, 1 runtime error or stopped (the report still shows what was read),\n"
          "2 usage error, 3 findings with --fail-on-findings, 4 an inconclusive capture with\n"
          "--fail-on-findings (one line on stderr says why and how to capture right)\n", stdout);
}

/* Print the report in the chosen form. */
static void print_report(const cli_opts *o, const report *rep)
{
    if (o->json)
        report_print_json(rep, stdout);
    else
        report_print_text(rep, stdout);
    fflush(stdout);
}

/* Damage that libpcap could still frame. Records with impossible lengths: the
 * analysis went on past them (counted as malformed), but the user is told in
 * one line per input and the exit code says the input was not sound. Records
 * older than the one before: a one-line warning. Returns 1 if damaged. */
static int report_damaged_inputs(const cap_source *src)
{
    size_t n = 0;
    const cap_input_info *in = cap_source_inputs(src, &n);
    int damaged = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i].bad_lengths > 0) {
            cli_error("'%s': %llu records with impossible lengths (empty, or more "
                      "captured than sent, or over %u bytes); counted as malformed",
                      in[i].name, (unsigned long long)in[i].bad_lengths, CAP_MAX_WIRE_LEN);
            damaged = 1;
        }
        /* Only a warning: captures from multi-queue NICs, or merged from hosts
         * whose clocks differ slightly, step back now and then. */
        if (in[i].time_backwards > 0)
            cli_error("warning: '%s': time goes backwards at %llu records (older than an "
                      "earlier record of the file); analysed in file order", in[i].name,
                      (unsigned long long)in[i].time_backwards);
    }
    return damaged;
}

/* Many input files (tcpdump -C rotations): the soft open-file limit up to the
 * hard one. Beyond that the capture layer opens files lazily (source.c). */
static void raise_open_file_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* The capture's first record time, for --since/--until relative to it: the
 * files opened once more and their first record in merged order read. */
static int64_t capture_start(const cli_opts *o, const cli_clock *clock)
{
    char err[1024];
    cap_source *src = cap_open_files(o->files, o->n_files, err, sizeof err);
    cap_record rec;
    int64_t start = 0;
    if (src)
        cli_clock_apply(clock, src);
    if (src && cap_source_next(src, &rec, err, sizeof err) == 1)
        start = rec.ts_us;
    cap_source_free(src);
    return start;
}

/* Resolve --since/--until into the capture layer's window, and say what it
 * is in the database. 0, or EXIT_USAGE printed. */
static int set_window(cli_opts *o, const cli_clock *clock)
{
    cli_filter f;
    int rc;
    if (!o->since && !o->until)
        return 0;
    for (size_t i = 0; i < o->n_files; i++)
        if (!strcmp(o->files[i], "-"))
            return cli_usage_error("analyze", "--since/--until read the inputs twice: not with "
                                              "standard input ('-')");
    memset(&f, 0, sizeof f);
    f.since = o->since;
    f.until = o->until;
    if ((rc = cli_filter_times(&f, "analyze", capture_start(o, clock))) != 0)
        return rc;
    o->cap.since_us = o->since ? (f.since_us > 0 ? f.since_us : 1) : 0;
    o->cap.until_us = o->until ? (f.until_us > 0 ? f.until_us : 1) : 0;
    return 0;
}

/* Open, run, finish, print. Returns the exit code. */
static int analyze(cli_opts *o)
{
    char err[1024] = "";
    cap_source *src;
    pipeline *p;
    report rep;
    const char *stopped_by;
    cli_clock clock;
    int status;

    if (o->n_files > 64)
        raise_open_file_limit();
    if ((status = cli_clock_plan(o, &clock)) != EXIT_OK) {
        cli_clock_free(&clock);
        return status;
    }
    if ((status = set_window(o, &clock)) != EXIT_OK) {
        cli_clock_free(&clock);
        return status;
    }
    src = cap_open_files(o->files, o->n_files, err, sizeof err);
    if (!src) {
        cli_clock_free(&clock);
        return cli_error("%s", err);
    }
    cli_clock_apply(&clock, src);
    cli_clock_warn(o, &clock);
    cli_clock_free(&clock);
    report_init(&rep);
    rep.full = o->full;
    rep.from_files = 1;
    report_window_text(o, rep.window, sizeof rep.window);
    cli_stop_on_signals(src, 0); /* before the database is made, as in live */
    p = pipeline_new(o, &rep, 0);
    if (!p) {
        cli_stop_restore();
        cap_source_free(src);
        return EXIT_RUNTIME;
    }
    if (pipeline_run(p, src) < 0)
        status = EXIT_RUNTIME;
    cli_stop_restore();
    stopped_by = cli_stop_signal_name();
    if (stopped_by) {
        pipeline_note_stop(p, stopped_by);
        cli_error("stopped by %s: %s what was read until then", stopped_by,
                  o->db ? "the report and the database hold" : "the report holds");
        status = EXIT_RUNTIME;
    }
    if (pipeline_finish(p, src) != 0)
        status = EXIT_RUNTIME;
    print_report(o, &rep);
    if (report_damaged_inputs(src))
        status = EXIT_RUNTIME;
    status = verdict_finish(&o->verdict, &rep, o->json, status);
    pipeline_free(p);
    cap_source_free(src);
    report_free(&rep);
    return status;
}

int cmd_analyze(int argc, char **argv)
{
    cli_opts o;
    int rc = cli_parse_options(&o, 0, argc, argv);
    if (rc == EXIT_OK && o.help)
        print_help();
    else if (rc == EXIT_OK)
        rc = analyze(&o);
    free(o.files);
    return rc;
}
