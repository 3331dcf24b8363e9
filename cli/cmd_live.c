/*
 * cmd_live.c - `slotscope live -i IFACE [-f BPF] [--duration S] [options]`.
 *
 * The same analysis on a live interface. Findings are printed as they are
 * found; once a second (of capture time) the analyzer is flushed and the
 * database committed. SIGINT, SIGTERM or the end of --duration only ask the
 * capture loop to return (the handler calls cap_source_break and nothing
 * else); then everything is finished, flushed and closed, and the report and
 * the kernel's drop counts are printed, as tcpdump does.
 *
 * -Z USER: after the interface is open, switch to USER (groups, gid, uid) so
 * that the analysis of hostile packets does not run as root. The database
 * and -w's files are created after the switch, owned by USER.
 *
 * On a terminal a status line is redrawn once a second (status.c);
 * --metrics serves the same counts to Prometheus (metrics.c); -w FILE [-C
 * MB] keeps the raw packets as tcpdump would (capture/savefile.c), so that
 * `slotscope analyze FILE FILE1 ...` can look again later.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#define LIVE_BUFFER_MB_DEFAULT 64 /* MiB; see live() */

static const char live_usage[] =
    "usage: slotscope live -i IFACE [-f BPF] [--duration S] [-Z USER] [options]\n"
    "\n"
    "Analyse a live interface until Ctrl-C (or SIGTERM, or --duration). Findings\n"
    "are printed as they are found; the report follows at the end.\n"
    "\n"
    "capture options:\n"
    "  -i, --interface IFACE  the interface (\"lo\", \"eth0\", \"any\")\n"
    "  -f, --filter BPF       a capture filter, e.g. 'tcp portrange 7000-7010'\n"
    "  --duration S           stop after S seconds\n"
    "  -Z, --user USER        drop root privileges to USER once the interface is open\n"
    "  -B, --buffer MB        kernel capture buffer in MiB (default 64; raise it if the\n"
    "                         summary shows kernel drops)\n"
    "  -s, --snaplen N        bytes kept per packet (default 262144: whole packets)\n"
    "  -w, --write FILE       also keep the raw packets in FILE (pcap), for `analyze`\n"
    "                         or Wireshark later; never the --db file\n"
    "  -C, --rotate MB        with -w: start FILE1, FILE2, ... once a file is larger than\n"
    "                         MB millions of bytes (as tcpdump -C)\n"
    "  --metrics ADDR:PORT    serve Prometheus metrics on http://ADDR:PORT/metrics (ADDR\n"
    "                         127.0.0.1 when only a port is given)\n"
    "\n"
    "On a terminal a status line shows packets, commands and redirects per second,\n"
    "findings and kernel drops (not with --quiet).\n"
    "\n"
    "analysis options:\n";

static void print_help(void)
{
    fputs(live_usage, stdout);
    fputs(cli_analysis_options_help, stdout);
    fputs("\nsettings for --set NAME=VALUE:\n", stdout);
    cli_print_settings_help(stdout);
}

/* Switch to user's groups, gid and uid. 0, or -1 printed. */
static int drop_privileges(const char *user)
{
    struct passwd *pw = getpwnam(user);
    if (!pw) {
        cli_error("unknown user '%s'", user);
        return -1;
    }
    if (initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
        setuid(pw->pw_uid) != 0) {
        cli_error("cannot switch to user '%s': %s", user, strerror(errno));
        return -1;
    }
    if (pw->pw_uid != 0 && setuid(0) == 0) {
        cli_error("privileges of root could not be given up");
        return -1;
    }
    return 0;
}

/* Packets seen and dropped, on stderr, as tcpdump prints them. */
static void print_drops(const cap_source *src)
{
    size_t n = 0;
    const cap_input_info *in = cap_source_inputs(src, &n);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr,
                "slotscope: %s: %" PRIu64 " packets captured, %" PRIu64
                " dropped by the kernel, %" PRIu64 " by the interface\n",
                in[i].name, in[i].packets, in[i].kernel_drops, in[i].if_drops);
}

/* -w: create FILE for the interface's link type. NULL with the error printed. */
static cap_savefile *open_savefile(const cli_opts *o, const cap_source *src)
{
    char err[1100];
    size_t n = 0;
    const cap_input_info *in = cap_source_inputs(src, &n);
    const char *avoid[1] = {o->db};
    cap_savefile_opts so = {.path = o->write_path, .rotate_bytes = o->rotate_bytes,
                            .linktype = n ? in[0].linktype : 1, .snaplen = o->snaplen,
                            .avoid = avoid, .n_avoid = o->db ? 1 : 0};
    cap_savefile *sf = cap_savefile_open(&so, err, sizeof err);
    if (!sf)
        cli_error("-w: %s", err);
    return sf;
}

/* -w at the end: what was written, and whether it all was. 0, or -1. */
static int close_savefile(const cli_opts *o, cap_savefile *sf)
{
    char err[1100];
    uint64_t packets = cap_savefile_packets(sf), lost = cap_savefile_lost(sf);
    uint32_t files = cap_savefile_files(sf);
    int rc = cap_savefile_close(sf, err, sizeof err);
    if (rc != 0)
        cli_error("-w: %s (%" PRIu64 " packets not kept)", err, lost);
    if (!o->quiet && files == 2)
        fprintf(stderr, "slotscope: %" PRIu64 " packets written to %s and %s1\n", packets,
                o->write_path, o->write_path);
    else if (!o->quiet && files > 2)
        fprintf(stderr, "slotscope: %" PRIu64 " packets written to %s, %s1 .. %s%u (%u files)\n",
                packets, o->write_path, o->write_path, o->write_path, files - 1, files);
    else if (!o->quiet)
        fprintf(stderr, "slotscope: %" PRIu64 " packets written to %s\n", packets, o->write_path);
    return rc;
}

/* Run the pipeline on the open source until stopped. Returns the exit code. */
static int run_live(const cli_opts *o, cap_source *src)
{
    report rep;
    pipeline *p;
    cap_savefile *sf = NULL;
    int status = EXIT_OK;

    if (o->write_path && !(sf = open_savefile(o, src)))
        return EXIT_RUNTIME;
    report_init(&rep);
    rep.full = o->full;
    /* before the database is made: a signal that comes while it is being
     * made stops the run cleanly instead of killing it */
    cli_stop_on_signals(src, o->duration_s);
    p = pipeline_new(o, &rep, 1);
    if (!p) {
        cli_stop_restore();
        cap_savefile_close(sf, NULL, 0);
        return EXIT_RUNTIME;
    }
    if (sf)
        pipeline_keep_packets(p, sf);
    if (!o->quiet)
        fprintf(stderr, "slotscope: listening on %s%s%s, Ctrl-C to stop\n", o->iface,
                o->filter ? " with filter " : "", o->filter ? o->filter : "");
    if (pipeline_run(p, src) < 0)
        status = EXIT_RUNTIME;
    cli_stop_restore();
    if (pipeline_finish(p, src) != 0)
        status = EXIT_RUNTIME;
    if (sf && close_savefile(o, sf) != 0)
        status = EXIT_RUNTIME;
    if (o->json)
        report_print_json(&rep, stdout);
    else
        report_print_text(&rep, stdout);
    fflush(stdout);
    print_drops(src);
    status = verdict_finish(&o->verdict, &rep, o->json, status);
    pipeline_free(p);
    report_free(&rep);
    return status;
}

/* Open the interface, give up root, run. Returns the exit code. */
static int live(const cli_opts *o)
{
    char err[1024] = "";
    /* libpcap's default 2 MiB kernel buffer holds ~30 ms of a busy link: one
     * slow SQLite commit on this thread and packets drop. 64 MiB removed every
     * drop at top tcpreplay speed on loopback (bench/live-rate.sh). */
    cap_live_opts lo = {.iface = o->iface, .filter = o->filter,
                        .buffer_mb = o->buffer_mb ? o->buffer_mb : LIVE_BUFFER_MB_DEFAULT,
                        .snaplen = o->snaplen};
    cap_source *src = cap_open_live(&lo, err, sizeof err);
    int status;
    if (!src)
        return cli_error("%s", err);
    if (o->user && drop_privileges(o->user) != 0) {
        cap_source_free(src);
        return EXIT_RUNTIME;
    }
    status = run_live(o, src);
    cap_source_free(src);
    return status;
}

int cmd_live(int argc, char **argv)
{
    cli_opts o;
    int rc = cli_parse_options(&o, 1, argc, argv);
    if (rc == EXIT_OK && o.help)
        print_help();
    else if (rc == EXIT_OK)
        rc = live(&o);
    free(o.files);
    return rc;
}
