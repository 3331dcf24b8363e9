/*
 * pipeline.c - wire the stages together for `analyze` and `live`.
 *
 *   cap_source -> cap_tracker -> resp pipeline -> analyzer -> fan-out sink
 *                 (shape hook:   (key hook:                   -> store (--db)
 *                  resp_shape)    an_key_fn)                  -> report model
 *
 * The tracker's callback is wrapped so that, between events, the progress bar
 * is redrawn (analyze) and, once per second of capture time, the analyzer is
 * flushed and the database committed (live): findings show up as they are
 * found and an interrupted run keeps them.
 *
 * Live also works by the wall clock, through the source's tap (called after
 * every read of the interface, packets or not): once a second the status
 * line is redrawn and the metrics get fresh counts, and when no flush came
 * for LIVE_IDLE_FLUSH_NS of wall time (the traffic stopped) the analyzer is
 * flushed at the wall clock less LIVE_LATE_US, the longest a packet is taken
 * to wait in the kernel's buffer: a finding is printed within about a second
 * of the moment it can be judged. The tap also writes the raw packets (-w);
 * with --threads it runs on the reader thread and does only that.
 *
 * With --threads N (N > 2) the capture and resp stages run on N worker
 * threads (run/) and this thread runs the analyzer, the store and the
 * periodic work above, fed the resp events in the very order the single
 * pipeline makes them: the results are the same. With --threads 2 a reader
 * thread reads the input and runs the tracker, and this thread runs resp and
 * the rest on its events (run/run.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

#define LIVE_FLUSH_US 1000000    /* live: an_flush + commit every second */
#define CHECK_EVERY 1024         /* events between wall-clock checks (analyze) */
#define SNAPSHOT_NS 2000000000LL /* analyze: counters + commit every 2 s */
#define MAX_INPUTS 4096          /* inputs a snapshot names during a threaded run */
#define LIVE_WALL_NS 1000000000LL /* live: status and metrics every second */
#define LIVE_IDLE_FLUSH_NS 800000000LL /* live: a flush at least this often (the
                                    tap comes every 200 ms: within a second) */
#define LIVE_LATE_US 500000      /* live: a packet is delivered this soon (the
                                    source's 200 ms read timeout, and margin) */

struct pipeline {
    const cli_opts *o;
    int live;
    report *rep;
    store *st;                   /* NULL without --db */
    an_sink to_store;            /* the store's sink (callbacks NULL without --db) */
    an_sink to_report;           /* the report model's sink */
    an_analyzer *an;
    resp_pipeline *rp;
    cap_tracker *tracker;
    par *par;                    /* --threads: instead of rp and tracker */
    int par_running;             /* the reader thread owns the source */
    cap_input_info *par_inputs;  /* the inputs as the reader last saw them */
    cap_source *src;             /* during pipeline_run, for progress */
    progress *pg;
    int64_t last_ts_us;          /* latest capture time seen */
    int64_t next_flush_us;       /* live: capture time of the next flush */
    uint32_t events;             /* since the last wall-clock check */
    struct timespec last_snapshot; /* analyze: wall time of the last snapshot */
    int64_t snapshot_ns;           /* analyze: wall time between snapshots */
    int db_error_shown;          /* the store's error was printed */
    /* live */
    console *con;                /* findings as they come */
    status_line *status;         /* the status line (NULL: off) */
    metrics_server *metrics;     /* --metrics (NULL: none) */
    cap_savefile *save;          /* -w (NULL: none; the caller's) */
    int save_error_shown;        /* -w's error was printed (tap's thread) */
    live_counts counts;          /* node redirects and findings, counted here */
    struct timespec last_wall;   /* wall time of the last status/metrics */
    struct timespec last_flush;  /* wall time of the last flush */
    uint32_t par_ticks;          /* --threads: ticks since the last wall check */
};

/* Nanoseconds from a to b. */
static int64_t ns_between(const struct timespec *a, const struct timespec *b)
{
    return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

/* ---------------------------------------------------------------- fan-out */

/* Live: count a finding the report model took (new, or its count grown). */
static void count_finding(pipeline *p, const an_finding *f, long before, uint64_t old_count)
{
    long pos = report_finding_pos(p->rep, f->id);
    if (pos < 0 || f->kind >= AN_FINDING_KINDS)
        return;
    if (before < 0) {
        p->counts.findings++;
        p->counts.findings_by_kind[f->kind]++;
    }
    if (f->count > old_count)
        p->counts.occurrences_by_kind[f->kind] += f->count - old_count;
    console_note(p->con, p->rep, f->id);
}

static void fan_finding(void *ctx, const an_finding *f)
{
    pipeline *p = ctx;
    long before = p->live ? report_finding_pos(p->rep, f->id) : -1;
    uint64_t old_count = before >= 0 ? p->rep->findings[before].count : 0;
    if (p->to_store.finding)
        p->to_store.finding(p->to_store.ctx, f);
    p->to_report.finding(p->to_report.ctx, f);
    if (p->live)
        count_finding(p, f, before, old_count);
}

static void fan_redirect(void *ctx, const an_redirect *r)
{
    pipeline *p = ctx;
    if (p->to_store.redirect)
        p->to_store.redirect(p->to_store.ctx, r);
    if (p->live)
        live_count_node_redirect(&p->counts, r->node, live_redirect_index(r->kind));
}

static void fan_node(void *ctx, const an_node *n)
{
    pipeline *p = ctx;
    if (p->to_store.node)
        p->to_store.node(p->to_store.ctx, n);
    p->to_report.node(p->to_report.ctx, n);
}

static void fan_client(void *ctx, const an_client *c)
{
    pipeline *p = ctx;
    if (p->to_store.client)
        p->to_store.client(p->to_store.ctx, c);
    p->to_report.client(p->to_report.ctx, c);
}

static void fan_connection(void *ctx, const an_connection *c)
{
    pipeline *p = ctx;
    if (p->to_store.connection)
        p->to_store.connection(p->to_store.ctx, c);
}

static void fan_migration(void *ctx, const an_migration *m)
{
    pipeline *p = ctx;
    if (p->to_store.migration)
        p->to_store.migration(p->to_store.ctx, m);
    p->to_report.migration(p->to_report.ctx, m);
}

static void fan_latency(void *ctx, const an_latency *l)
{
    pipeline *p = ctx;
    if (p->to_store.latency)
        p->to_store.latency(p->to_store.ctx, l);
    p->to_report.latency(p->to_report.ctx, l);
}

static void fan_convergence(void *ctx, const an_convergence *c)
{
    pipeline *p = ctx;
    if (p->to_store.convergence)
        p->to_store.convergence(p->to_store.ctx, c);
    if (p->to_report.convergence)
        p->to_report.convergence(p->to_report.ctx, c);
}

static void fan_at_risk_write(void *ctx, const an_risky_write *w)
{
    pipeline *p = ctx;
    if (p->to_store.at_risk_write)
        p->to_store.at_risk_write(p->to_store.ctx, w);
}

static void fan_command(void *ctx, const resp_command *cmd, const char *client, int32_t slot)
{
    pipeline *p = ctx;
    p->to_store.command(p->to_store.ctx, cmd, client, slot);
}

static void fan_owner_row(void *ctx, const an_owner_row *r)
{
    pipeline *p = ctx;
    if (p->to_store.owner_row)
        p->to_store.owner_row(p->to_store.ctx, r);
    if (p->to_report.owner_row)
        p->to_report.owner_row(p->to_report.ctx, r);
}

static void fan_node_transition(void *ctx, const an_node_transition *t)
{
    pipeline *p = ctx;
    if (p->to_store.node_transition)
        p->to_store.node_transition(p->to_store.ctx, t);
}

static void fan_failover(void *ctx, const an_failover_rec *f)
{
    pipeline *p = ctx;
    if (p->to_store.failover)
        p->to_store.failover(p->to_store.ctx, f);
    if (p->to_report.failover)
        p->to_report.failover(p->to_report.ctx, f);
}

static void fan_series(void *ctx, const an_series_row *r)
{
    pipeline *p = ctx;
    p->to_store.series(p->to_store.ctx, r);
}

/* The sink the analyzer writes to. */
static an_sink fan_sink(pipeline *p)
{
    an_sink s = {.ctx = p, .finding = fan_finding, .redirect = fan_redirect, .node = fan_node,
                 .client = fan_client, .connection = fan_connection,
                 .migration = fan_migration, .latency = fan_latency,
                 .owner_row = fan_owner_row, .node_transition = fan_node_transition,
                 .failover = fan_failover,
                 .convergence = fan_convergence, .at_risk_write = fan_at_risk_write};
    /* Only ask analysis for every command when they are stored. */
    if (p->to_store.command)
        s.command = fan_command;
    /* the time series is made only when it is stored */
    if (p->to_store.series)
        s.series = fan_series;
    return s;
}

/* ---------------------------------------------------------------- events */

/* Print the store's first error once. */
static void show_db_error(pipeline *p)
{
    if (p->st && store_error(p->st) && !p->db_error_shown) {
        cli_error("%s", store_error(p->st));
        p->db_error_shown = 1;
    }
}

/* The inputs so far: from the source, or while the reader thread reads it,
 * from the reader's latest copy. */
static const cap_input_info *inputs_now(pipeline *p, const cap_source *src, size_t *n)
{
    if (!p->par_running)
        return cap_source_inputs(src, n);
    *n = par_inputs(p->par, p->par_inputs, MAX_INPUTS);
    return p->par_inputs;
}

/* Store each input's row, and add it to the report (both replace an earlier
 * row of the same name). */
static void store_inputs(pipeline *p, const cap_source *src)
{
    size_t n = 0;
    const cap_input_info *in = inputs_now(p, src, &n);
    for (size_t i = 0; i < n; i++) {
        rep_input ri;
        if (p->st)
            store_input(p->st, &in[i]);
        report_input_from_cap(&ri, &in[i]);
        report_add_input(p->rep, &ri);
    }
}

/* Write the inputs and counters so far and commit: a run that is killed
 * leaves a database whose counters are at most a moment old. */
static void snapshot(pipeline *p)
{
    if (!p->st)
        return;
    store_inputs(p, p->src);
    if (p->par) {
        cap_stats cs;
        resp_stats rs;
        par_counters(p->par, &cs, &rs);
        store_counters(p->st, &cs, &rs, an_get_stats(p->an));
        par_request(p->par, PAR_WANT_COUNTERS); /* fresh ones for the next */
    } else {
        store_counters(p->st, cap_tracker_stats(p->tracker), resp_get_stats(p->rp),
                       an_get_stats(p->an));
    }
    store_commit(p->st);
    show_db_error(p);
}

/* Live: emit what changed at capture time now_us, snapshot and commit,
 * then print it: a finding printed is in the database (`report DB` run on
 * seeing it finds it). */
static void live_flush(pipeline *p, int64_t now_us)
{
    an_flush(p->an, now_us);
    snapshot(p);
    console_print(p->con, p->rep, p->status);
    p->next_flush_us = now_us + LIVE_FLUSH_US;
    clock_gettime(CLOCK_MONOTONIC, &p->last_flush);
}

/* Live, once a second of capture time. */
static void live_tick(pipeline *p)
{
    live_flush(p, p->last_ts_us);
}

/* The live counts now: the inputs' and the analysis's counters, and what
 * was counted here. */
static void gather_counts(pipeline *p)
{
    size_t n = 0;
    const cap_input_info *in = inputs_now(p, p->src, &n);
    const an_stats *as = an_get_stats(p->an);
    live_counts *c = &p->counts;
    c->packets = c->bytes = c->kernel_drops = c->if_drops = 0;
    for (size_t i = 0; i < n; i++) {
        c->packets += in[i].packets;
        c->bytes += in[i].bytes;
        c->kernel_drops += in[i].kernel_drops;
        c->if_drops += in[i].if_drops;
    }
    c->commands = as->commands;
    c->redirects[0] = as->moved;
    c->redirects[1] = as->ask;
    c->redirects[2] = as->tryagain;
    c->redirects[3] = as->crossslot;
    c->redirects[4] = as->clusterdown;
    c->saved_packets = p->save ? cap_savefile_packets(p->save) : 0;
    c->saved_lost = p->save ? cap_savefile_lost(p->save) : 0;
    if (p->par) /* the reader's copy of the inputs: fresh for the next time */
        par_request(p->par, PAR_WANT_COUNTERS);
}

/* The capture time the wall clock stands for now, less LIVE_LATE_US. */
static int64_t wall_capture_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - LIVE_LATE_US;
}

/* Live, by the wall clock (see the top): on the analysis thread only. */
static void live_wall_tick(pipeline *p)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (p->last_ts_us > 0 && ns_between(&p->last_flush, &now) >= LIVE_IDLE_FLUSH_NS) {
        int64_t at = wall_capture_us();
        live_flush(p, at > p->last_ts_us ? at : p->last_ts_us);
    }
    if (ns_between(&p->last_wall, &now) < LIVE_WALL_NS)
        return;
    p->last_wall = now;
    gather_counts(p);
    status_line_draw(p->status, &p->counts);
    metrics_publish(p->metrics, &p->counts);
}

/* The source's tap (live): keep the record (-w); after a read, the wall
 * clock's work (one thread only: with --threads that is on_par_tick's). */
static void live_tap(void *ctx, const cap_record *rec)
{
    pipeline *p = ctx;
    if (rec && p->save) {
        if (cap_savefile_write(p->save, rec) != 0 && !p->save_error_shown) {
            p->save_error_shown = 1; /* once; the count of lost ones comes at the end */
            cli_error("-w: %s: packets from now on are analysed but not kept",
                      cap_savefile_error(p->save));
        }
    }
    else if (!rec && !p->par)
        live_wall_tick(p);
}

/* Analyze, every CHECK_EVERY events: redraw the progress bar, snapshot every
 * few seconds of wall time. */
static void analyze_tick(pipeline *p)
{
    struct timespec now;
    if (p->par) {
        uint64_t done, total, packets;
        par_progress(p->par, &done, &total, &packets);
        progress_show(p->pg, done, total, packets, an_get_stats(p->an));
        if (p->pg)
            par_request(p->par, PAR_WANT_PROGRESS);
    } else {
        progress_update(p->pg, p->src, cap_tracker_stats(p->tracker)->packets,
                        an_get_stats(p->an));
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((int64_t)(now.tv_sec - p->last_snapshot.tv_sec) * 1000000000LL +
            (now.tv_nsec - p->last_snapshot.tv_nsec) >= p->snapshot_ns) {
        snapshot(p);
        p->last_snapshot = now;
    }
}

/* The tracker's callback: feed resp/, then the periodic work. */
static void on_capture_event(void *ctx, const cap_event *ev)
{
    pipeline *p = ctx;
    resp_on_capture_event(p->rp, ev);
    if (ev->ts_us > p->last_ts_us)
        p->last_ts_us = ev->ts_us;
    if (p->live) {
        if (p->last_ts_us >= p->next_flush_us)
            live_tick(p);
    } else if (++p->events >= CHECK_EVERY) {
        p->events = 0;
        analyze_tick(p);
    }
}

/* --threads: after each resp event handed to the analyzer (ts_us: the time
 * of its record) and after each wait for the workers (0): the same periodic
 * work as on_capture_event. */
static void on_par_tick(void *ctx, int64_t ts_us)
{
    pipeline *p = ctx;
    if (ts_us > p->last_ts_us)
        p->last_ts_us = ts_us;
    if (p->live) {
        if (p->last_ts_us > 0 && p->last_ts_us >= p->next_flush_us)
            live_tick(p);
        if (ts_us == 0 || ++p->par_ticks >= CHECK_EVERY) {
            p->par_ticks = 0;
            live_wall_tick(p);
        }
    } else if (++p->events >= CHECK_EVERY) {
        p->events = 0;
        analyze_tick(p);
    }
}

/* ---------------------------------------------------------------- setup */

/* Open the database and record how this run was made. 0, or -1 printed. */
static int open_store(pipeline *p)
{
    const cli_opts *o = p->o;
    char err[1600];
    /* Capture files: indexes once at close (cheaper); live: row by row, for
     * queries during the run (store/indexes.sql). */
    /* live: -w's file counts as an input (the database must not be it) */
    int keeps = p->live && o->write_path;
    store_opts so = {.force = o->force, .store_commands = o->store_commands,
                     .index_at_close = !p->live, .sync_once = !p->live,
                     .writer_thread = o->threads > 1,
                     .command_line = cli_command_line,
                     .inputs = keeps ? &o->write_path : (const char *const *)o->files,
                     .n_inputs = keeps ? 1 : o->n_files};
    p->st = store_open(o->db, &so, err, sizeof err);
    if (!p->st) {
        cli_error("%s", err);
        return -1;
    }
    store_meta(p->st, "mode", p->live ? "live" : "analyze");
    store_meta(p->st, "client_by", o->an.client_by == AN_CLIENT_BY_CONN   ? "conn"
                                   : o->an.client_by == AN_CLIENT_BY_NAME ? "name"
                                                                          : "host");
    store_meta(p->st, "redact_keys", o->an.redact_keys ? "1" : "0");
    if (o->an.redact_keys) /* where the key came from; never the key */
        store_meta(p->st, "redact_key", o->redact_key_file ? "file" : "random, this run only");
    store_meta(p->st, "settings", o->settings);
    if (o->since || o->until) { /* only then: other databases keep their meta */
        char window[160];
        report_window_text(o, window, sizeof window);
        store_meta(p->st, "window", window);
    }
    p->to_store = store_sink(p->st);
    return 0;
}

/* Create the three stages, last first (each needs the next one's sink). */
static int create_stages(pipeline *p)
{
    an_sink sink = fan_sink(p);
    resp_config rc;
    resp_sink rsink;
    cap_config cc = p->o->cap;

    p->an = an_new(&p->o->an, &sink);
    if (!p->an)
        return -1;
    resp_config_defaults(&rc);
    if (p->o->inflight_total)
        rc.max_inflight_total = p->o->inflight_total;
    if (p->o->kept_total)
        rc.max_kept_total = p->o->kept_total;
    rc.key_fn = an_key_fn;
    rc.key_ctx = NULL;
    rsink = an_resp_sink(p->an);
    cc.shape = resp_shape;
    if (p->o->threads > 1) {
        par_opts po = {.workers = p->o->threads, .cap = cc, .resp = rc, .sink = rsink,
                       .tick = on_par_tick, .tick_ctx = p, .live = p->live,
                       .analysis_conns = p->o->an.max_conns};
        p->par_inputs = calloc(MAX_INPUTS, sizeof *p->par_inputs);
        p->par = p->par_inputs ? par_new(&po) : NULL;
        return p->par ? 0 : -1;
    }
    p->rp = resp_new(&rc, &rsink);
    if (!p->rp)
        return -1;
    p->tracker = cap_tracker_new(&cc, on_capture_event, p);
    if (!p->tracker)
        return -1;
    /* what resp proves orients later connections (one thread: nothing to
     * await, resp runs as the tracker's callback) */
    resp_set_servers(p->rp, cap_tracker_servers(p->tracker));
    return 0;
}

pipeline *pipeline_new(const cli_opts *o, report *rep, int live)
{
    pipeline *p = calloc(1, sizeof *p);
    if (!p) {
        cli_error("out of memory");
        return NULL;
    }
    p->o = o;
    p->live = live;
    p->rep = rep;
    p->to_report = report_sink(rep);
    if (live && o->metrics_addr) {
        char err[600];
        p->metrics = metrics_start(o->metrics_addr, err, sizeof err);
        if (!p->metrics) {
            cli_error("%s", err);
            pipeline_free(p);
            return NULL;
        }
    }
    if (live && !(p->con = console_new(stdout, o->json))) {
        cli_error("out of memory");
        pipeline_free(p);
        return NULL;
    }
    if (o->db && open_store(p) != 0) {
        pipeline_free(p);
        return NULL;
    }
    if (create_stages(p) != 0) {
        cli_error("out of memory");
        pipeline_free(p);
        return NULL;
    }
    return p;
}

/* ---------------------------------------------------------------- run */

int pipeline_run(pipeline *p, cap_source *src)
{
    char err[512] = "";
    int rc;
    p->src = src;
    /* SLOTSCOPE_SNAPSHOT_MS: tests/robust/test_interrupt.c stops a run
     * after its first snapshot */
    p->snapshot_ns = cli_env_interval_ns("SLOTSCOPE_SNAPSHOT_MS", SNAPSHOT_NS);
    /* The inputs are named in the database from the start. */
    snapshot(p);
    clock_gettime(CLOCK_MONOTONIC, &p->last_snapshot);
    if (!p->live)
        p->pg = progress_new(p->o->quiet);
    if (p->live) {
        p->status = status_line_new(p->o->quiet);
        clock_gettime(CLOCK_MONOTONIC, &p->last_wall);
        p->last_flush = p->last_wall;
        cap_source_set_tap(src, live_tap, p);
        gather_counts(p);
        metrics_publish(p->metrics, &p->counts);
    }
    if (p->par) {
        p->par_running = 1;
        rc = par_run(p->par, src, err, sizeof err);
        p->par_running = 0;
    } else {
        rc = cap_source_run(src, p->tracker, err, sizeof err);
    }
    progress_done(p->pg);
    p->pg = NULL;
    if (p->live)
        cap_source_set_tap(src, NULL, NULL);
    if (rc < 0)
        cli_error("%s", err[0] ? err : "cannot read the input");
    return rc;
}

/* The latest time of the inputs or of any event: the end of the capture. */
static int64_t end_time(const pipeline *p, const cap_source *src)
{
    size_t n = 0;
    const cap_input_info *in = cap_source_inputs(src, &n);
    int64_t end = p->last_ts_us;
    for (size_t i = 0; i < n; i++)
        if (in[i].last_us > end)
            end = in[i].last_us;
    return end;
}

/* report_add_counter as a store_counter_fn. */
static void counter_to_report(void *ctx, const char *name, uint64_t value)
{
    report_add_counter(ctx, name, value);
}

int pipeline_finish(pipeline *p, cap_source *src)
{
    int64_t end = end_time(p, src);
    cap_stats par_cs;
    resp_stats par_rs;
    const cap_stats *cs = &par_cs;
    const resp_stats *rs = &par_rs;
    const an_stats *as;
    int ret = 0;

    if (p->par) {
        par_finish(p->par, end);
        par_counters(p->par, &par_cs, &par_rs);
    } else {
        cap_tracker_finish(p->tracker, end);
        cs = cap_tracker_stats(p->tracker);
        rs = resp_get_stats(p->rp);
    }
    an_finish(p->an, end);
    if (p->live) { /* the last findings, then the counts as the report has them */
        console_print(p->con, p->rep, p->status);
        status_line_done(p->status);
        p->status = NULL;
        gather_counts(p);
        metrics_publish(p->metrics, &p->counts);
    }
    store_inputs(p, src);
    as = an_get_stats(p->an);
    store_each_counter(cs, rs, as, counter_to_report, p->rep);
    if (p->st) {
        char err[1600];
        verdict_diag d;
        store_counters(p->st, cs, rs, as);
        verdict_diagnose(p->rep, &d);
        verdict_store(p->st, &d);
        show_db_error(p);
        if (store_close(p->st, err, sizeof err) != 0) {
            if (!p->db_error_shown)
                cli_error("%s", err);
            ret = -1;
        }
        p->st = NULL;
    }
    if (p->db_error_shown)
        ret = -1;
    report_sort(p->rep);
    return ret;
}

void pipeline_keep_packets(pipeline *p, cap_savefile *sf)
{
    p->save = sf;
}

void pipeline_note_stop(pipeline *p, const char *why)
{
    snprintf(p->rep->stopped_by, sizeof p->rep->stopped_by, "%s", why);
    if (p->st)
        store_meta(p->st, "stopped_by", why);
}

void pipeline_free(pipeline *p)
{
    if (!p)
        return;
    if (p->st)
        store_close(p->st, NULL, 0);
    cap_tracker_free(p->tracker);
    resp_free(p->rp);
    par_free(p->par);
    free(p->par_inputs);
    an_free(p->an);
    progress_done(p->pg);
    status_line_done(p->status);
    console_free(p->con);
    metrics_stop(p->metrics);
    free(p);
}
