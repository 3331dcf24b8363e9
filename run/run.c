/*
 * run.c - the runner's life (new, run, finish, counters, free) and the
 * reader thread both layouts share.
 *
 * --threads 2 reads ahead (readahead.c): the reader thread reads the source
 * and runs the one tracker; the calling thread replays its events to resp
 * and the analysis, in order: the results of one thread by construction,
 * caps included. --threads 3 and more shard (shard.c, merge.c): N workers,
 * each with its own tracker and resp pipeline, and the calling thread
 * merges their events back into the order one thread makes. Why two
 * layouts: handing a command from a worker to the calling thread (pack,
 * ring, unpack) costs about a third of decoding it, so sharding pays only
 * with a core for every worker, the reader and the merger; on two cores
 * read-ahead is as fast for less CPU, and steadier
 * (bench/results/2026-12-01-threads-history.txt). SLOTSCOPE_THREADS_SHARD
 * in the environment makes --threads 2 shard too, for tests.
 *
 * The reader thread alone takes the stop signals (the other threads block
 * them): the source's stop flag is then written and read by one thread,
 * and a signal interrupts the read it waits in.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/internal.h"

/* ---------------------------------------------------------------- helpers */

unsigned par_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > MAX_WORKERS ? MAX_WORKERS : (unsigned)n;
}

/* Add one worker's capture counters into the sums: every one is a count of
 * records, connections, bytes or segments, each counted by exactly one
 * worker (the owner of the record). */
static void cap_stats_add(cap_stats *t, const cap_stats *s)
{
    t->packets += s->packets;
    t->wire_bytes += s->wire_bytes;
    t->captured_bytes += s->captured_bytes;
    t->tcp_packets += s->tcp_packets;
    t->non_tcp += s->non_tcp;
    t->non_ip += s->non_ip;
    t->unsupported += s->unsupported;
    t->ip_fragments += s->ip_fragments;
    t->truncated += s->truncated;
    t->malformed += s->malformed;
    t->time_backwards += s->time_backwards;
    t->connections += s->connections;
    t->mid_stream += s->mid_stream;
    for (int i = 0; i < CAP_SIDE_SOURCES; i++)
        t->mid_oriented[i] += s->mid_oriented[i];
    t->evicted_connections += s->evicted_connections;
    t->idle_connections += s->idle_connections;
    t->stream_bytes[0] += s->stream_bytes[0];
    t->stream_bytes[1] += s->stream_bytes[1];
    t->out_of_order += s->out_of_order;
    t->retransmitted += s->retransmitted;
    t->overlaps += s->overlaps;
    t->overlap_conflicts += s->overlap_conflicts;
    t->ooo_dropped += s->ooo_dropped;
    t->out_of_window += s->out_of_window;
    t->gaps += s->gaps;
    t->start_gaps += s->start_gaps;
    t->gap_bytes += s->gap_bytes;
    t->kernel_drops += s->kernel_drops;
    t->if_drops += s->if_drops;
    t->late_packets += s->late_packets;
    t->known_servers_dropped += s->known_servers_dropped;
}

/* Live drop counts live in the inputs (no single tracker gets them). */
static void add_input_drops(cap_stats *cs, const cap_input_info *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cs->kernel_drops += in[i].kernel_drops;
        cs->if_drops += in[i].if_drops;
    }
}

/* ---------------------------------------------------------------- reader */

/* Serve the merger's requests: the inputs so far, the progress (and with
 * read-ahead the tracker's counters, every time). Mutex held; the source
 * and the tracker are the reader's alone while it runs. */
static void reader_serve_request(struct par *p)
{
    unsigned req = atomic_load_explicit(&p->request, memory_order_relaxed);
    unsigned preq = atomic_load_explicit(&p->progress_request, memory_order_relaxed);
    if (req != p->rd_gen) {
        size_t n = 0;
        const cap_input_info *in = cap_source_inputs(p->src, &n);
        p->rd_gen = req;
        if (n > p->n_inputs)
            n = p->n_inputs;
        memcpy(p->inputs, in, n * sizeof *in);
    }
    /* read-ahead: the tracker's counters at every publish, unasked (a copy
     * per IN_BATCH records), so that even the first snapshot has them */
    if (p->read_ahead)
        p->ra_cs = *cap_tracker_stats(p->ra_tracker);
    if (preq != p->rd_progress_gen) {
        p->rd_progress_gen = preq;
        cap_source_progress(p->src, &p->done_bytes, &p->total_bytes);
        p->packets = p->rd_pos;
    }
}

/* Publish the records written, wake the workers, see what they are done
 * with. */
void reader_show(struct par *p)
{
    pthread_mutex_lock(&p->mu);
    p->ra_published = p->ra_head;
    p->ra_shown = p->ra_head;
    p->ra_tail_seen = p->ra_tail;
    p->published = p->rd_pos;
    p->rd_shown = p->rd_pos;
    if (p->in_waiters > 0)
        pthread_cond_broadcast(&p->in_cv);
    p->rd_oldest = oldest_in_use(p);
    reader_serve_request(p);
    pthread_mutex_unlock(&p->mu);
}

void reader_beat(struct par *p)
{
    pthread_mutex_lock(&p->mu);
    p->beats++;
    reader_serve_request(p);
    if (p->in_waiters > 0)
        pthread_cond_broadcast(&p->in_cv);
    if (p->merger_waiting)
        pthread_cond_signal(&p->out_cv);
    pthread_mutex_unlock(&p->mu);
}

/* The signals that stop a run (cmd_live's handler calls cap_source_break). */
static void stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGALRM);
}

/* The reader thread: the whole source, then the end of input. It alone
 * takes the stop signals (the other threads block them): the source's stop
 * flag is then written and read by one thread, and a signal interrupts the
 * read it waits in. */
static void *reader_main(void *arg)
{
    struct par *p = arg;
    sigset_t stop;
    stop_signals(&stop);
    pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
    p->rd_rc = cap_source_run_records(p->src, p->read_ahead ? ra_record : reader_record, p,
                                      p->rd_err, sizeof p->rd_err);
    reader_show(p);
    pthread_mutex_lock(&p->mu);
    p->eof = 1;
    pthread_cond_broadcast(&p->in_cv);
    if (p->merger_waiting)
        pthread_cond_signal(&p->out_cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---------------------------------------------------------------- lifecycle */

/* Worker i's configuration. The caps on the whole capture and resp state
 * apply per partition of connections (capture.h), and a sharded worker is
 * fed the partitions p with p % N == i (shard.c): its table and pool are
 * sized for those, so memory stays within the one-thread bounds. */
static void worker_caps(const struct par *p, unsigned i, cap_config *cc, resp_config *rc)
{
    *cc = p->o.cap;
    *rc = p->o.resp;
    cc->servers = p->servers; /* NULL with read-ahead: the tracker's own */
    rc->servers = p->servers; /* read-ahead: set once the tracker exists */
    cc->partitions = 0;       /* all */
    for (unsigned part = 0; p->n > 1 && part < CAP_PARTITIONS; part++)
        if (part % p->n == i)
            cc->partitions |= 1ull << part;
}

/* Create worker i's stages and rings (read-ahead: no thread of its own,
 * its events not packed). 0, or -1 out of memory. */
static int worker_init(struct par *p, unsigned i)
{
    worker *w = &p->w[i];
    resp_sink sink = worker_sink(w);
    w->par = p;
    w->id = i;
    w->recs = p->recs;
    pthread_cond_init(&w->space_cv, NULL);
    w->raw_size = pow2_at_least(2 * (p->o.resp.max_kept_reply > 0 ? p->o.resp.max_kept_reply : 1));
#ifdef PAR_TINY_RINGS
    w->raw_size = RAW_MIN; /* replies longer than half are not kept (differs) */
#endif
    if (w->raw_size < RAW_MIN)
        w->raw_size = RAW_MIN;
    if (!p->read_ahead) {
        w->ev = malloc(OUT_BYTES);
        w->raw = malloc(w->raw_size);
    }
    cap_config cc;
    resp_config rc;
    worker_caps(p, i, &cc, &rc);
    if (p->read_ahead) {
        /* resp straight to the analyzer, on the calling thread: nothing
         * packed; the tracker is the reader's (readahead.c) */
        cc.await_proofs = ra_await_proofs;
        cc.await_ctx = p;
        w->rp = resp_new(&rc, &p->o.sink);
        w->tracker = w->rp ? cap_tracker_new(&cc, ra_on_event, p) : NULL;
        p->ra_tracker = w->tracker;
        if (w->tracker)
            resp_set_servers(w->rp, cap_tracker_servers(w->tracker));
    } else {
        cc.await_proofs = worker_await_proofs;
        cc.await_ctx = w;
        w->rp = resp_new(&rc, &sink);
        w->tracker = w->rp ? cap_tracker_new(&cc, resp_on_capture_event, w->rp) : NULL;
    }
    return (p->read_ahead || (w->ev && w->raw)) && w->rp && w->tracker ? 0 : -1;
}

par *par_new(const par_opts *o)
{
    /* aligned for the cache line groups of struct par and worker */
    struct par *p = aligned_alloc(64, sizeof *p);
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    p->o = *o;
    p->n = o->workers < 1 ? 1 : o->workers > MAX_WORKERS ? MAX_WORKERS : o->workers;
    if (p->n == 2 && !getenv("SLOTSCOPE_THREADS_SHARD")) {
        p->read_ahead = 1; /* see the top of this file */
        p->n = 1;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->in_cv, NULL);
    pthread_cond_init(&p->room_cv, NULL);
    pthread_cond_init(&p->out_cv, NULL);
    pthread_cond_init(&p->proof_cv, NULL);
    if (p->read_ahead) {
        p->ra_size = IN_BYTES; /* events instead of records */
        p->ra_ring = malloc(p->ra_size);
    } else {
        p->bytes_size = IN_BYTES;
        p->recs = malloc(IN_RECORDS * sizeof *p->recs);
        p->bytes = malloc(p->bytes_size);
        p->servers = cap_servers_new();
    }
    p->w = aligned_alloc(64, p->n * sizeof *p->w);
    if (p->w)
        memset(p->w, 0, p->n * sizeof *p->w);
    if ((p->read_ahead ? !p->ra_ring : !p->recs || !p->bytes || !p->servers) || !p->w) {
        par_free(p);
        return NULL;
    }
    for (unsigned i = 0; i < p->n; i++) {
        if (worker_init(p, i) != 0) {
            par_free(p);
            return NULL;
        }
    }
    return p;
}

/* Start the workers, then the reader. 0, or -1 (see stop_threads). */
static int start_threads(struct par *p)
{
    for (unsigned i = 0; i < p->n && !p->read_ahead; i++) { /* read-ahead: none */
        if (pthread_create(&p->w[i].thread, NULL, worker_main, &p->w[i]) != 0)
            return -1;
        p->w[i].started = 1;
    }
    if (pthread_create(&p->reader, NULL, reader_main, p) != 0)
        return -1;
    p->reader_started = 1;
    return 0;
}

/* Stop everything that was started (after a failed start): end of input
 * and an immediate finish. */
static void stop_threads(struct par *p)
{
    pthread_mutex_lock(&p->mu);
    p->eof = 1;
    p->finish = 1;
    for (unsigned i = 0; i < p->n; i++)
        if (!p->w[i].started)
            p->w[i].watermark = KEY_END; /* nothing will come from it */
    pthread_cond_broadcast(&p->in_cv);
    pthread_mutex_unlock(&p->mu);
    merge(p, 1);
    for (unsigned i = 0; i < p->n; i++)
        if (p->w[i].started)
            pthread_join(p->w[i].thread, NULL);
    p->joined = 1;
}

int par_run(par *p, cap_source *src, char *err, size_t err_size)
{
    sigset_t stop, old;
    size_t n = 0;
    const cap_input_info *in = cap_source_inputs(src, &n);
    p->src = src;
    p->inputs = calloc(n ? n : 1, sizeof *p->inputs);
    if (!p->inputs) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    memcpy(p->inputs, in, n * sizeof *in);
    p->n_inputs = n;
    if (p->read_ahead) /* see chunks.c */
        p->ra_keep = cap_source_chunks(src, RA_KEEP_BUFFERS, ra_chunk, p);
    if (p->ra_keep) /* DATA refers to the chunks: small events, a small ring
                       (its unused pages are never touched) */
        p->ra_size = RA_REF_RING;
    /* Threads inherit the mask: only the reader unblocks the stop signals. */
    stop_signals(&stop);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    if (start_threads(p) != 0) {
        stop_threads(p);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        snprintf(err, err_size, "cannot start threads");
        return -1;
    }
    if (p->read_ahead)
        read_ahead(p);
    else
        merge(p, 0);
    pthread_join(p->reader, NULL);
    p->reader_started = 0;
    pthread_mutex_lock(&p->mu);
    p->ra_reader_done = 1; /* the tracker is this thread's now */
    pthread_mutex_unlock(&p->mu);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (p->rd_oom || p->m_oom) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    if (p->rd_rc < 0)
        snprintf(err, err_size, "%s", p->rd_err);
    return p->rd_rc;
}

void par_finish(par *p, int64_t end_us)
{
    if (p->read_ahead && !p->joined) {
        /* on this thread, the reader joined: each event replayed as made */
        p->ra_direct = 1;
        p->ra_reader_done = 1;
        p->ra_tail_seen = p->ra_tail = p->ra_head; /* par_run replayed all */
        cap_tracker_finish(p->ra_tracker, end_us);
        p->joined = 1;
        return;
    }
    if (p->joined || !p->w[0].started)
        return; /* finished already, or never run */
    pthread_mutex_lock(&p->mu);
    p->finish = 1;
    p->finish_us = end_us;
    pthread_cond_broadcast(&p->in_cv);
    pthread_mutex_unlock(&p->mu);
    merge(p, 1);
    for (unsigned i = 0; i < p->n; i++)
        pthread_join(p->w[i].thread, NULL);
    p->joined = 1;
}

void par_request(par *p, int what)
{
    if (what & PAR_WANT_COUNTERS)
        atomic_fetch_add_explicit(&p->request, 1, memory_order_relaxed);
    if (what & PAR_WANT_PROGRESS)
        atomic_fetch_add_explicit(&p->progress_request, 1, memory_order_relaxed);
}

void par_counters(par *p, cap_stats *cs, resp_stats *rs)
{
    memset(cs, 0, sizeof *cs);
    memset(rs, 0, sizeof *rs);
    if (p->read_ahead) { /* resp is this thread's, the tracker the reader's */
        pthread_mutex_lock(&p->mu);
        if (p->ra_reader_done)
            cap_stats_add(cs, cap_tracker_stats(p->ra_tracker));
        else
            cap_stats_add(cs, &p->ra_cs);
        pthread_mutex_unlock(&p->mu);
        resp_stats_add(rs, resp_get_stats(p->w[0].rp));
    } else {
        pthread_mutex_lock(&p->mu);
        for (unsigned i = 0; i < p->n; i++) {
            cap_stats_add(cs, &p->w[i].cs);
            resp_stats_add(rs, &p->w[i].rs);
        }
        pthread_mutex_unlock(&p->mu);
        cs->known_servers_dropped += cap_servers_dropped(p->servers); /* one table */
    }
    if (p->joined) {
        size_t n = 0;
        const cap_input_info *in = cap_source_inputs(p->src, &n);
        add_input_drops(cs, in, n);
    } else {
        pthread_mutex_lock(&p->mu);
        add_input_drops(cs, p->inputs, p->n_inputs);
        pthread_mutex_unlock(&p->mu);
    }
}

size_t par_inputs(par *p, cap_input_info *out, size_t max)
{
    size_t n;
    pthread_mutex_lock(&p->mu);
    n = p->n_inputs < max ? p->n_inputs : max;
    memcpy(out, p->inputs, n * sizeof *out);
    pthread_mutex_unlock(&p->mu);
    return n;
}

void par_progress(par *p, uint64_t *done, uint64_t *total, uint64_t *packets)
{
    pthread_mutex_lock(&p->mu);
    *done = p->done_bytes;
    *total = p->total_bytes;
    *packets = p->packets;
    pthread_mutex_unlock(&p->mu);
}

void par_free(par *p)
{
    if (!p)
        return;
    if (p->w && p->w[0].started && !p->joined) {
        /* never finished (an error path): end the threads, drop their events */
        p->discard = 1;
        if (p->reader_started)
            pthread_join(p->reader, NULL);
        par_finish(p, 0);
    }
    for (unsigned i = 0; p->w && i < p->n; i++) {
        worker *w = &p->w[i];
        cap_tracker_free(w->tracker);
        resp_free(w->rp);
        free(w->ev);
        free(w->raw);
        if (w->par)
            pthread_cond_destroy(&w->space_cv);
    }
    for (size_t i = 0; i < p->ra_n_blocks; i++)
        free(p->ra_copies[i]);
    free(p->ra_copies);
    free(p->ra_free);
    free(p->ra_ring);
    for (size_t i = 0; i < p->n_blocks; i++)
        free(p->blocks[i]);
    free(p->blocks);
    free(p->map_ids);
    free(p->map_conns);
    free(p->w);
    cap_servers_free(p->servers);
    free(p->recs);
    free(p->bytes);
    free(p->inputs);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->in_cv);
    pthread_cond_destroy(&p->room_cv);
    pthread_cond_destroy(&p->out_cv);
    pthread_cond_destroy(&p->proof_cv);
    free(p);
}
