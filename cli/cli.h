/*
 * cli.h - what the files of the slotscope command share (internal to cli/).
 *
 *   main.c          dispatch to a subcommand, --version, --help
 *   options.c       options of analyze and live (analysis settings, ports, ...)
 *   pipeline.c      capture -> resp -> analysis -> (store, report, live printer)
 *   progress.c      the progress bar of analyze
 *   report.c        the report model: what the report shows, bounded in memory
 *   report_db.c     the same model read back from a database (report DB)
 *   report_text.c   the incident report as text
 *   report_json.c   the report as JSON lines
 *   json.c          JSON string escaping and a syntax check
 *   cmd_*.c         one file per subcommand
 *
 *   verdict.c       the CI verdict: --fail-on/--ignore, the inconclusive capture
 *   cmd_extract.c   `extract`: the packets of a finding into a pcap
 *
 * Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 findings with
 * --fail-on-findings, 4 an inconclusive capture with --fail-on-findings.
 */
#ifndef SLOTSCOPE_CLI_H
#define SLOTSCOPE_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "capture/capture.h"
#include "resp/resp.h"
#include "run/run.h"
#include "store/store.h"

#ifndef SLOTSCOPE_VERSION
#define SLOTSCOPE_VERSION "unknown"
#endif

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_FINDINGS = 3, EXIT_INCONCLUSIVE = 4 };

/* ---------------------------------------------------------------- messages */

/* "slotscope: <message>" on stderr; returns EXIT_RUNTIME. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "slotscope CMD: <message>" and a hint to --help on stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The one escaping path to a terminal: capture bytes (and a crafted
 * database's) may hold terminal escape sequences. cli_safe_len says how many
 * bytes at p (n available) may go out as they are: 1 for printable ASCII (and
 * '\n' when keep_newline), 2-4 for a valid UTF-8 sequence other than a C1
 * control (U+0080..U+009F); 0 when p[0] must be shown as \xNN. */
size_t cli_safe_len(const unsigned char *p, size_t n, int keep_newline);
/* Write n bytes of s to f through cli_safe_len (others as \xNN). */
void cli_write_safe(FILE *f, const char *s, size_t n, int keep_newline);
/* cli_write_safe of a NUL-terminated text, newlines escaped too. */
void cli_print_safe(FILE *f, const char *text);
/* Length of the valid UTF-8 sequence at p (1..4; p NUL-terminated), or 0 if
 * it is not one: no overlong forms, no surrogates, nothing above U+10FFFF. */
int cli_utf8_len(const unsigned char *p);

/* ---------------------------------------------------------------- verdict */

/* What fails a run (verdict.c). */
typedef struct verdict_opts {
    int enabled;                 /* --fail-on-findings or --fail-on given */
    int chosen;                  /* --fail-on given: only fail_mask kinds fail */
    uint32_t fail_mask;          /* bit k: an_finding_kind k fails */
    uint32_t ignore_mask;        /* bit k: kind k never fails (--ignore) */
} verdict_opts;
/* --fail-on error|warning|KIND[,KIND...] (classes by an_finding_severity):
 * 0, or -1 on a bad value. Repeated: the union. */
int verdict_fail_on(verdict_opts *v, const char *text);
/* --ignore KIND[,KIND...]: 0, or -1 on a bad value. */
int verdict_ignore(verdict_opts *v, const char *text);

/* Why a capture cannot support a verdict: code NULL when it can. */
typedef struct verdict_diag {
    const char *code;            /* "empty", "tls", "one_direction", ... */
    char text[400];              /* what is wrong and how to capture right */
} verdict_diag;

struct report;
/* Diagnose from the report's counters, inputs and migrations. */
void verdict_diagnose(const struct report *r, verdict_diag *d);
/* Findings that fail the run under v. */
size_t verdict_failing(const verdict_opts *v, const struct report *r);
/* The exit code: status if not EXIT_OK or v not enabled, else 4 when
 * inconclusive, 3 when findings fail, 0. */
int verdict_exit(const verdict_opts *v, const struct report *r, const verdict_diag *d,
                 int status);
/* The one line on stderr ("slotscope: inconclusive capture (tls): ..."). */
void verdict_print_line(const verdict_diag *d);
/* {"type":"verdict",...} for --json. */
void verdict_print_json(const verdict_opts *v, const struct report *r, const verdict_diag *d,
                        FILE *out);
/* After the report is printed: diagnose, print the line when v is enabled
 * (and the JSON line with json), and return the exit code (verdict_exit). */
int verdict_finish(const verdict_opts *v, const struct report *r, int json, int status);
/* meta diagnosis / diagnosis_text, when there is a diagnosis. */
void verdict_store(store *s, const verdict_diag *d);

/* ---------------------------------------------------------------- options */

/* Most --time-offset FILE=OFFSET options. */
#define CLI_TIME_OFFSETS_MAX 64

/* Options of analyze and live. */
typedef struct cli_opts {
    const char *cmd;             /* "analyze" or "live", for messages */
    const char **files;          /* analyze: capture files */
    size_t n_files;
    const char *iface;           /* live: -i */
    const char *filter;          /* live: -f */
    double duration_s;           /* live: --duration, 0 = until a signal */
    const char *user;            /* live: -Z */
    int buffer_mb;               /* live: -B/--buffer, kernel capture buffer in MiB */
    int snaplen;                 /* live: -s/--snaplen, 0 = 262144 */
    const char *write_path;      /* live: -w FILE, keep the raw packets */
    uint64_t rotate_bytes;       /* live: -C MB (millions of bytes), 0 = one file */
    const char *metrics_addr;    /* live: --metrics ADDR:PORT */
    const char *db;              /* --db */
    int force;
    int json;
    int quiet;
    int fail_on_findings;
    verdict_opts verdict;        /* --fail-on-findings, --fail-on, --ignore */
    int store_commands;
    int redact_key_file;         /* the redaction key came from --redact-key-file */
    int full;                    /* --full: the whole text report */
    const char *since, *until;   /* analyze: only records in this window */
    const char *time_offsets[CLI_TIME_OFFSETS_MAX]; /* --time-offset FILE=OFFSET */
    size_t n_time_offsets;
    int time_offset_auto;        /* --time-offset auto */
    int help;
    unsigned threads;            /* --threads: capture+resp worker threads (1:
                                    none, the single-threaded pipeline) */
    cap_config cap;              /* --ports */
    uint64_t inflight_total;     /* --set inflight_total (0: resp's default) */
    uint64_t kept_total;         /* --set kept_replies_total (0: the default) */
    an_config an;                /* --client-by, --node-map, --redact-keys, --set */
    char settings[1024];         /* the --set assignments, for meta */
} cli_opts;

/* Parse argv (after the subcommand name) for analyze (live = 0) or live (1).
 * Returns 0, or EXIT_USAGE after printing the problem. */
int cli_parse_options(cli_opts *o, int live, int argc, char **argv);
/* Parse "FILE=+12.5ms" (us, ms or s; an optional sign; the last '=' ends
 * FILE): *file (NUL not written: *file_len) and *us, either may be NULL.
 * 0, or -1 when malformed. */
int cli_parse_time_offset(const char *text, size_t *file_len, int64_t *us);
/* The inputs' clocks (timeoffset.c): each input's offset, and the skews
 * found between pairs of inputs. */
typedef struct cli_clock {
    int64_t *offset_us;          /* per input */
    size_t n;
    cap_skew skews[CAP_SKEW_INPUTS * (CAP_SKEW_INPUTS - 1) / 2];
    size_t n_skews;
} cli_clock;
/* Offsets from --time-offset, the skew estimate (2..CAP_SKEW_INPUTS regular
 * files, or auto) and auto's alignment. 0, or an exit code printed. */
int cli_clock_plan(const cli_opts *o, cli_clock *c);
/* Give a source of the inputs its offsets and skews. */
void cli_clock_apply(const cli_clock *c, cap_source *src);
/* A warning per pair of inputs whose clocks differ by 1 ms or more. */
void cli_clock_warn(const cli_opts *o, const cli_clock *c);
void cli_clock_free(cli_clock *c);
/* The options both commands share, for their --help. */
extern const char cli_analysis_options_help[];
/* The --set names with their meaning and default (an_config_help), indented. */
void cli_print_settings_help(FILE *out);
/* argv joined with shell quoting where needed. */
void cli_join_argv(int argc, char **argv, char *out, size_t size);
/* An interval in nanoseconds: the milliseconds (1..60000) in the environment
 * variable name, else default_ns. Such variables are for tests that need a
 * run's periodic work (a snapshot, a progress redraw) to come before their
 * capture is analysed whole, however fast the machine and the code get. */
int64_t cli_env_interval_ns(const char *name, int64_t default_ns);
/* The whole command line, set by main (recorded in the database's meta). */
extern char cli_command_line[4096];

/* ---------------------------------------------------------------- filters (filter.c) */

/* --since, --until, --client, --slot, --node as given. */
typedef struct cli_filter {
    const char *since, *until;   /* text as given, NULL when absent */
    const char *client, *node;
    int32_t slot;
    int has_slot;
    int64_t since_us, until_us;  /* resolved by cli_filter_times */
} cli_filter;

/* Take argv[*i] (and its value) when it is one of the filter options: 1
 * taken, 0 not one, -1 bad value (printed, exit code EXIT_USAGE). */
int cli_filter_option(cli_filter *f, const char *cmd, int argc, char **argv, int *i);
/* Parse a time: "+30s" from start_us, an ISO date and time (UTC), a time of
 * day on start_us's day, "@SECONDS", or microseconds. 0, or -1 if bad. */
int cli_parse_time(const char *text, int64_t start_us, int64_t *out_us);
/* Resolve --since/--until against the capture start. 0, or EXIT_USAGE. */
int cli_filter_times(cli_filter *f, const char *cmd, int64_t start_us);
/* Is client a client of the database? 0, or EXIT_USAGE (printed, with some
 * names). */
int cli_filter_check_client(struct sqlite3 *db, const char *cmd, const char *client);
/* Check every filter against the database and install it as temporary views
 * over the tables (report and the canned queries then see only what
 * matches); desc gets a line saying what is filtered ("" when nothing). 0,
 * EXIT_USAGE (unknown client or node, bad time) or EXIT_RUNTIME, printed. */
int cli_filter_apply(cli_filter *f, const char *cmd, struct sqlite3 *db, char *desc,
                     size_t size);

/* ---------------------------------------------------------------- queries */

/* The canned queries (queries/NAME.sql), compiled in (generated by
 * cli/embed_queries.cmake), sorted by name. */
typedef struct cli_query {
    const char *name;   /* file name without .sql */
    const char *text;   /* the whole file */
} cli_query;
extern const cli_query cli_queries[];
extern const size_t cli_n_queries;

/* ---------------------------------------------------------------- report model */

/* Caps on what the report keeps in memory (the database keeps everything). */
#define REPORT_MAX_FINDINGS 10000
#define REPORT_MAX_EVIDENCE 4096     /* evidence longer than this is not shown */
#define REPORT_MAX_MIGRATIONS 32768
#define REPORT_MAX_NODES 4096
#define REPORT_MAX_LATENCY 65536
#define REPORT_MAX_INPUTS 4096
#define REPORT_MAX_IDENTS 4096       /* clients that announced themselves */

typedef struct rep_finding {
    uint64_t id;
    char kind[32];
    char severity[16];
    int severity_level;
    char client[AN_NAME_MAX];
    char node[AN_NAME_MAX];
    int32_t slot;
    int64_t first_us, last_us;
    uint64_t count;
    int64_t extra_latency_us;
    uint64_t operations;         /* operations it covers (client findings) */
    char summary[AN_SUMMARY_MAX];
    char *evidence;              /* malloc'd JSON text; NULL when absent or too long */
    int evidence_too_long;       /* longer than REPORT_MAX_EVIDENCE: not kept */
} rep_finding;

typedef struct rep_input {
    char name[512];
    char linktype[32];
    uint64_t packets, bytes, kernel_drops, if_drops, time_backwards;
    int drops_recorded;          /* kernel_drops is a count, not merely unknown
                                    (cap_input_info.drops_recorded) */
    int64_t first_us, last_us;
    char error[256];
    char compression[8];         /* "", "gzip", "zstd" */
    int64_t time_offset_us;      /* added to its times (--time-offset) */
    int64_t skew_us;             /* its clock minus input skew_ref's (estimated) */
    uint64_t skew_shared;        /* segments the estimate rests on (0: none) */
    uint32_t skew_ref;           /* 1 = the first input */
} rep_input;

typedef struct rep_node {
    char observed[AN_NAME_MAX];
    char announced[AN_NAME_MAX];
    char node_id[48];
    char role[16];
    uint32_t slots_owned;
    uint64_t commands;
} rep_node;

typedef struct rep_latency {
    char scope[8];               /* client, slot, node, all */
    char key[AN_NAME_MAX];
    int redirected;
    uint64_t count;
    int64_t p50_us, p90_us, p99_us, max_us, total_us, extra_us;
    uint64_t extra_round_trips;
} rep_latency;

/* A failover as the cluster bus showed it (an_failover_rec, with its own
 * text). */
typedef struct rep_failover {
    int64_t ts_us;
    char kind[16];
    char old_master[AN_NAME_MAX], old_id[48];
    char new_master[AN_NAME_MAX], new_id[48];
    uint64_t config_epoch;
    int64_t detected_us, elected_us, done_us;
    uint32_t votes, slots;
} rep_failover;

/* One client after one slot ownership change (an_convergence, with its own
 * text). */
typedef struct rep_convergence {
    char client[AN_NAME_MAX];
    int32_t slot_lo, slot_hi;
    char old_node[AN_NAME_MAX], new_node[AN_NAME_MAX];
    char source[16];
    int64_t flip_us, last_stale_us, converged_us;
    uint64_t config_epoch, stale_commands, moved_replies, at_risk_writes;
} rep_convergence;

/* A client that announced who it is (the others need no record here). */
typedef struct rep_client {
    char name[AN_NAME_MAX];
    an_ident ident;
} rep_client;

typedef struct rep_counter {
    char name[40];
    uint64_t value;
} rep_counter;

/* Everything the report shows. Filled from the analysis (report_sink) or from a
 * database (report_load_db); printed by report_print_text / report_print_json. */
typedef struct report {
    rep_input *inputs;           size_t n_inputs;
    rep_node *nodes;             size_t n_nodes;
    an_migration *migrations;    size_t n_migrations;
    rep_failover *failovers;     size_t n_failovers;
    rep_convergence *convergence; size_t n_convergence; /* the slowest first */
    uint64_t owner_rows_bus;     /* slot_owners rows from the bus ... */
    uint64_t owner_rows_clients; /* ... and from what clients were told */
    rep_finding *findings;       size_t n_findings;
    rep_latency *latency;        size_t n_latency;
    rep_counter *counters;       size_t n_counters;
    rep_client *idents;          size_t n_idents; /* clients that announced themselves */
    int full;                    /* text: every client, block, pattern and finding */
    char filter[256];            /* the filters the report was read with ("" none) */
    char window[160];            /* analyze --since/--until: the records analysed */
    int from_files;              /* the inputs are capture files (analyze), which
                                    do not record the kernel's drops */
    uint64_t clients, clients_aware, clients_nodes; /* client records seen */
    uint64_t dropped;            /* records beyond a cap (not shown, in the db) */
    int interrupted;             /* read from a database whose run never finished */
    int in_progress;             /* ... and whose run is still writing it */
    char stopped_by[16];         /* the run was stopped early by this signal ("" if not) */
    uint32_t *finding_index;     /* open-addressing id -> findings[] + 1 */
    uint32_t *latency_index;     /* (scope, key, redirected) -> latency[] + 1 */
    uint64_t *client_set;        /* hashes of client names seen, flags in bits 0-1 */
    size_t client_set_size, client_set_used;
} report;

void report_init(report *r);
void report_free(report *r);
/* The an_sink that fills the model (ctx = r). */
an_sink report_sink(report *r);
/* Where the finding of this id is in r->findings (stable until report_sort),
 * or -1 when the model does not hold it. */
long report_finding_pos(const report *r, uint64_t id);
/* Add each record kind by hand (report_db.c uses these). */
void report_add_finding(report *r, const rep_finding *f, const char *evidence);
void report_add_input(report *r, const rep_input *in);
void report_add_node(report *r, const rep_node *n);
void report_add_migration(report *r, const an_migration *m);
void report_add_failover(report *r, const rep_failover *f);
void report_add_convergence(report *r, const rep_convergence *c);
/* Where slot ownership comes from: "bus", "clients", or "none". */
const char *report_ownership_source(const report *r);
void report_add_latency(report *r, const rep_latency *l);
void report_add_counter(report *r, const char *name, uint64_t value);
void report_add_client(report *r, const char *name, const an_ident *ident);
/* What client name announced, or NULL. */
const an_ident *report_client_ident(const report *r, const char *name);
/* Convert a capture input into the model's form. */
void report_input_from_cap(rep_input *out, const cap_input_info *in);
/* A counter's value, 0 if absent. */
uint64_t report_counter(const report *r, const char *name);
/* Put findings in impact order, migrations in time order, counters by name,
 * latency by extra time: both sources then print identically. */
void report_sort(report *r);

/* "records 2026-12-01 15:43:09.000 .. 15:43:10.000 UTC (--since +1s --until
 * +2s)" for analyze's window, "" when there is none. */
void report_window_text(const cli_opts *o, char *out, size_t size);

/* Fill the model from a database opened with store_open_readonly. 0, or -1
 * with err. */
int report_load_db(report *r, struct sqlite3 *db, char *err, size_t err_size);

/* Print the incident report. */
void report_print_text(const report *r, FILE *out);
void report_print_json(const report *r, FILE *out);
/* `report DB --html FILE` (report_html.c): the incident as one self-contained
 * HTML page, read from an open database (filters applied as its temp views).
 * 0, or -1 when writing failed. */
struct sqlite3;
int report_write_html(struct sqlite3 *db, FILE *out);
/* One finding as a text line / JSON line (live mode prints them as found). */
void report_print_finding_line(const rep_finding *f, FILE *out);
void report_print_finding_json(const rep_finding *f, const char *type, FILE *out);

/* ---------------------------------------------------------------- json */

/* Write s as a JSON string (quotes included): escapes quotes, backslashes and
 * control characters; bytes that are not valid UTF-8 become \u00XX. */
void json_string(FILE *out, const char *s);
/* A double as a JSON number: the fewest digits that read back as v (no
 * 0.053999999999999999 for 0.054); null for NaN and infinities. */
void json_double(FILE *out, double v);
/* 1 if text is exactly one syntactically valid JSON value (depth-limited). */
int json_valid(const char *text);

/* A value inside a JSON text that json_valid accepted: where it starts, its
 * length. p is NULL for "not there". */
typedef struct json_span {
    const char *p;
    size_t len;
} json_span;
/* Member `name` of an object. */
json_span json_member(json_span obj, const char *name);
/* Element i of an array; json_count counts them. */
json_span json_element(json_span arr, size_t i);
size_t json_count(json_span arr);
/* A string's text without quotes and escapes (\u above ASCII as '?'), or the
 * text of any other value; cut to fit buf. */
void json_text(json_span v, char *buf, size_t size);

/* ---------------------------------------------------------------- pipeline */

typedef struct pipeline pipeline;

/* Build the stages from the options; opens the database when o->db. NULL with
 * the error already printed. */
pipeline *pipeline_new(const cli_opts *o, report *rep, int live);
/* Read the source to its end (or a break). 0 ok, 1 stopped by a break, -1 on
 * an input error (printed). */
int pipeline_run(pipeline *p, cap_source *src);
/* Finish every stage, store inputs, counters and meta, close the database.
 * 0, or -1 when the database failed (printed). */
int pipeline_finish(pipeline *p, cap_source *src);
void pipeline_free(pipeline *p);
/* Live: keep every record in sf (owned by the caller, -w), before
 * pipeline_run. */
void pipeline_keep_packets(pipeline *p, cap_savefile *sf);
/* Before pipeline_finish: the run was stopped early by `why` (a signal's
 * name): recorded in the database (meta stopped_by) and in the report. */
void pipeline_note_stop(pipeline *p, const char *why);

/* ---------------------------------------------------------------- stop (stop.c) */

/* SIGINT and SIGTERM (and, when duration_s > 0, SIGALRM after duration_s
 * seconds) break src's loop: the pipeline then finishes as at its end. */
void cli_stop_on_signals(cap_source *src, double duration_s);
/* Back to the default handlers: a second Ctrl-C ends the process at once. */
void cli_stop_restore(void);
/* "SIGINT", "SIGTERM", "SIGALRM" for the signal that asked for a stop since
 * cli_stop_on_signals, or NULL. */
const char *cli_stop_signal_name(void);

/* ---------------------------------------------------------------- progress */

typedef struct progress progress;
/* A progress bar on stderr, or NULL when stderr is not a terminal or quiet. */
progress *progress_new(int quiet);
/* Redraw at most a few times a second. */
void progress_update(progress *pg, const cap_source *src, uint64_t packets, const an_stats *as);
/* The same with the bytes read and their total given (--threads). */
void progress_show(progress *pg, uint64_t done, uint64_t total, uint64_t packets,
                   const an_stats *as);
/* Erase the bar and free. Accepts NULL. */
void progress_done(progress *pg);

/* ---------------------------------------------------------------- live counts */

/* The redirect kinds counted live: MOVED, ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN. */
#define LIVE_REDIRECT_KINDS 5
/* Nodes with redirect counters of their own; the others are summed as
 * "other" (a metrics label set stays bounded). */
#define LIVE_MAX_NODES 64

typedef struct live_node_counts {
    char node[AN_NAME_MAX];      /* observed address of the node that answered */
    uint64_t redirects[LIVE_REDIRECT_KINDS];
} live_node_counts;

/* What a live run has seen so far: the status line's and the metrics'. */
typedef struct live_counts {
    uint64_t packets, bytes;     /* records and captured bytes read */
    uint64_t kernel_drops, if_drops;
    uint64_t commands;
    uint64_t redirects[LIVE_REDIRECT_KINDS];
    uint64_t findings;           /* distinct findings */
    uint64_t findings_by_kind[AN_FINDING_KINDS];
    uint64_t occurrences_by_kind[AN_FINDING_KINDS]; /* their counts summed */
    live_node_counts nodes[LIVE_MAX_NODES];
    size_t n_nodes;
    uint64_t other_nodes[LIVE_REDIRECT_KINDS]; /* redirects of the nodes beyond */
    uint64_t saved_packets, saved_lost; /* -w: records written, lost to an error */
} live_counts;

/* "moved", "ask", "tryagain", "crossslot", "clusterdown". */
extern const char *const live_redirect_names[LIVE_REDIRECT_KINDS];
/* The live index of an error class, or -1 when it is not a redirect kind. */
int live_redirect_index(resp_err_class c);
/* Count one redirect of kind k answered by node. */
void live_count_node_redirect(live_counts *c, const char *node, int k);

/* ---------------------------------------------------------------- status line */

/* The once-a-second status line of live on stderr (redis-cli --stat's
 * spirit); NULL when stderr is not a terminal or quiet. */
typedef struct status_line status_line;
status_line *status_line_new(int quiet);
/* Redraw with the rates since the previous call. Accepts NULL. */
void status_line_draw(status_line *s, const live_counts *c);
/* Erase the line (before other output goes to the terminal). Accepts NULL. */
void status_line_clear(status_line *s);
/* Format the line's text (no escape codes) for counts c, the previous ones
 * and the seconds between them: the long form, or the short one when the
 * long one is wider than width (0: no limit). */
void status_line_format(char *out, size_t size, const live_counts *c, const live_counts *prev,
                        double secs, int width);
/* Erase and free. Accepts NULL. */
void status_line_done(status_line *s);

/* ---------------------------------------------------------------- metrics (metrics.c) */

/* --metrics ADDR:PORT: Prometheus text exposition of the live counts, served
 * over HTTP by a thread of its own (GET /metrics). */
typedef struct metrics_server metrics_server;
/* Parse spec ("127.0.0.1:9100", "[::1]:9100", ":9100" or "9100": loopback),
 * bind, listen and start the thread. NULL with err. */
metrics_server *metrics_start(const char *spec, char *err, size_t err_size);
/* Hand the thread fresh counts (copied under a lock held only for the copy). */
void metrics_publish(metrics_server *m, const live_counts *c);
/* Stop the thread and close. Accepts NULL. */
void metrics_stop(metrics_server *m);
/* The exposition text of c into out (NUL-terminated, cut to size): the
 * length it needs. */
size_t metrics_format(const live_counts *c, char *out, size_t size);

/* ---------------------------------------------------------------- live findings (console.c) */

/* Live: findings printed within a second of being found, in time order, and
 * again ("again:" lines, or live_finding_update in JSON) when their count
 * grows. */
typedef struct console console;
console *console_new(FILE *out, int json);
/* The analysis sent finding id (new or changed) and the report took it. */
void console_note(console *c, const report *r, uint64_t id);
/* Print what was noted since the last call, by first time; the status line
 * is erased first. */
void console_print(console *c, const report *r, status_line *st);
void console_free(console *c);

/* ---------------------------------------------------------------- subcommands */

int cmd_analyze(int argc, char **argv);
int cmd_live(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_extract(int argc, char **argv);

#endif /* SLOTSCOPE_CLI_H */
