/*
 * run.h - `--threads N`: the capture and resp stages on threads of their own,
 * the analysis on the calling thread, with exactly the results of one thread.
 *
 *   run.c         the runner's life (new, run, finish, counters, free) and
 *                 the reader thread both layouts share
 *   readahead.c   --threads 2: the tracker on the reader thread, resp and
 *                 the analysis replaying its events on the calling thread
 *   chunks.c      read-ahead's zero-copy file chunks, read by whichever
 *                 thread has time
 *   shard.c       --threads 3+: the reader's input ring and the N workers,
 *                 each with its own tracker and resp pipeline
 *   merge.c       --threads 3+: the calling thread merges the workers' events
 *                 back into the order one thread makes
 *   internal.h    what those files share: the runner, the rings, the event
 *                 formats
 */
#ifndef SLOTSCOPE_RUN_H
#define SLOTSCOPE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "resp/resp.h"

/* The runner: the capture and resp stages on threads of their own, their
 * resp events handed to `sink` on the calling thread in the order the
 * single-threaded pipeline makes them. */
typedef struct par par;
/* Called on the calling thread after each event handed on (ts_us: capture
 * time of the record that caused it) and after each wait for the workers
 * (ts_us 0): the moment for periodic work. */
typedef void (*par_tick_fn)(void *ctx, int64_t ts_us);
typedef struct par_opts {
    unsigned workers;            /* worker threads (1-64); 2 reads ahead
                                    instead (run.c) */
    cap_config cap;              /* each worker's tracker */
    resp_config resp;            /* each worker's resp pipeline */
    resp_sink sink;              /* the analyzer's */
    par_tick_fn tick;            /* may be NULL */
    void *tick_ctx;
    int live;                    /* also hand on the capture time now and then */
    uint32_t analysis_conns;     /* the analyzer's connection cap (max_conns):
                                    sharded workers hand over connection
                                    counters only when it may be reached
                                    (run/shard.c); 0: always */
} par_opts;

/* Number of online cores (1-64). */
unsigned par_default_threads(void);
/* The rings and each worker's stages (no thread yet). NULL out of memory. */
par *par_new(const par_opts *o);
/* Start the threads and read src to its end (or a break), handing every
 * event up to the end of input to the sink. Returns as cap_source_run (0, 1
 * stopped, -1 with err). The workers then wait for par_finish. */
int par_run(par *p, cap_source *src, char *err, size_t err_size);
/* cap_tracker_finish(end_us) in every worker, their events handed on in
 * order; the threads end. */
void par_finish(par *p, int64_t end_us);
/* Ask the threads for fresh figures (served at their next batch): the reader
 * for its progress (PAR_WANT_PROGRESS), or everyone for the counters and
 * inputs (PAR_WANT_COUNTERS). par_progress, par_counters and par_inputs give
 * the latest served. */
enum { PAR_WANT_PROGRESS = 1, PAR_WANT_COUNTERS = 2 };
void par_request(par *p, int what);
/* The capture and resp counters summed over the workers (exact after
 * par_finish; during the run, as of the last request served). */
void par_counters(par *p, cap_stats *cs, resp_stats *rs);
/* Up to max inputs as the reader last saw them (during par_run). Their count. */
size_t par_inputs(par *p, cap_input_info *out, size_t max);
/* Bytes read of the total and records read, as last served. */
void par_progress(par *p, uint64_t *done, uint64_t *total, uint64_t *packets);
/* Free; ends threads left running (their events dropped). Accepts NULL. */
void par_free(par *p);

#endif /* SLOTSCOPE_RUN_H */
