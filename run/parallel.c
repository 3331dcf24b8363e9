/*
 * parallel.c - `--threads N`: the capture and resp stages on N worker threads,
 * the analysis on the calling thread, with exactly the results of one thread.
 *
 * Two layouts. --threads 2 reads ahead: the reader thread below reads the
 * source and runs the one tracker (decoding, the flow table, reassembly);
 * its events cross in an event ring and the calling thread replays them to
 * resp and the analysis, in order (see "read-ahead" below): the same
 * results by construction. --threads 3 and more shard the connections
 * between N workers as described below (SLOTSCOPE_THREADS_SHARD in the
 * environment makes --threads 2 shard too, for tests). Why: where the CPU
 * goes with real.pcap (615 MB, 5.3 million commands) on 2 cores (perf
 * samples per thread; wall: best and median of 10 runs, the machine shared;
 * measured before later speed-ups of resp and the analysis):
 *   one thread         0.50 s CPU (reading 0.1 s of it); wall 0.50, 0.52
 *   sharded, 2 workers 0.74 s CPU: reader 0.13, workers 0.2 each, merger
 *                      0.2 (analysis 0.1, unpacking and merging the rest):
 *                      handing a command to the merger (pack, ring, unpack:
 *                      ~450 instructions, ~320 bytes through the caches)
 *                      costs a third of decoding it; wall 0.44, 0.65-0.75
 *   read-ahead         0.56 s CPU: reader 0.12 (the kernel's copy of the
 *                      file is most of it), calling thread 0.45; wall
 *                      0.45, 0.46-0.51
 * The tracker then moved from the calling thread to the reader (events
 * instead of records in the ring). Later figures, with --db: calling thread
 * 0.34 -> 0.33 s (perf samples; callgrind on real-150k.pcap, calling thread
 * 1,148 -> 1,087 million instructions: the tracker's ~68 million gone, the
 * replay's ~18 million come), reader 0.13 -> 0.18 s. Wall (hyperfine, 15
 * runs, both binaries in one run, load ~1): 0.300 +- 0.009 -> 0.275 +-
 * 0.005 s (best 0.292 -> 0.267; user 0.31 both), where the bare libpcap
 * read takes 0.147 and one thread 0.385. While other work kept both cores
 * busy (load 2) both took ~0.38-0.42 s and one thread without --db 0.35:
 * the layouts pay only with a core to spare.
 * Captures of large values (bench/data/gen-1G-s1.pcap, 1 GB, values resp
 * skips by length) had the reader critical instead: the kernel's copy of
 * the file (0.12 s; as much with mmap), the tracker, and a copy of every
 * payload byte into the event ring, against ~0.06 s on the calling thread;
 * --threads 2 took as long as one thread (0.23 s), on gen-256M longer
 * (0.08 vs 0.07). Since, a single regular pcap file is read in chunks that
 * stay in memory until replayed: DATA events refer to their bytes instead
 * of copying them, and the calling thread reads chunks itself whenever it
 * would wait, from two chunks on (see "References and shared reading").
 * hyperfine, 15 runs, mean +- sd (min), old -> new, --threads 2:
 *   gen-1G    0.221 +- 0.007 (0.210) -> 0.131 +- 0.004 (0.123) s; one
 *             thread 0.209-0.227 (old and new)
 *   gen-256M  0.066 +- 0.004 (0.062) -> 0.055 +- 0.006 (0.046); one 0.063
 *   real.pcap 0.252 +- 0.004 (0.245) -> 0.258 +- 0.014 (0.242); one 0.365
 * On real.pcap the calling thread stays the critical one and does the same
 * work (callgrind, real-150k: 1,077.1 -> 1,077.9 million instructions; the
 * reader 135.1 -> 122.9; it reads 8 of the 586 chunks). Alternating the
 * two binaries run by run, the median went 0.266 -> 0.277 s in one series
 * of 40 and 0.258 -> 0.259 in one of 30: within the spread of such series,
 * or a little cache taken by the reader's pread into 10 MiB of slots
 * instead of one 1 MiB buffer. A later 30-run series settled it: 8 slots
 * were slower on real.pcap (0.276 -> 0.301 s), 5 slots are within the
 * noise of the old code (0.281 s) and keep most of the gain on gen-1G
 * (0.159 s; see RA_KEEP_BUFFERS). Reading the next chunk on the calling
 * thread too (instead of from two on) made it the critical thread on
 * gen-1G (0.170 s): the reader waited for that very chunk.
 * Tried and dropped (in the history): worker 0 reading the source itself
 * (it became the critical thread: wall 0.55); "duo", worker 1 on the
 * calling thread with its events merged unpacked (wall 0.39 at best, but
 * the calling thread waits whenever worker 0 is descheduled: median 0.54
 * to 0.67, sometimes slower than one thread). Sharding wins once there are
 * cores for every worker, the reader and the merger.
 *
 *   reader thread   reads the source (cap_source_run_records), numbers the
 *                   records 1, 2, ... in merged order, picks each one's worker
 *                   by the symmetric hash of its 4-tuple (both directions of a
 *                   connection go to the same worker; what is not TCP goes to
 *                   worker 0) and copies it into the input ring, which every
 *                   worker reads
 *   worker threads  each has its own cap_tracker and resp pipeline. A record
 *                   of its share goes through cap_tracker_packet_at; every
 *                   other record only moves its clock (cap_tracker_time), so
 *                   idle connections close at the very record where one
 *                   tracker would close them, and connection ids (the number
 *                   of the opening record) are those of one tracker. The resp
 *                   events (open, command, close) are copied into the
 *                   worker's own event ring, each with its place in the order
 *                   one thread would make them
 *   calling thread  merges the event rings in that order and hands each event
 *                   to the analyzer's resp_sink: the analysis sees the very
 *                   sequence one thread would give it
 *
 * The order of events. One tracker, at record r, first closes the connections
 * that went idle (cap_tracker_time), oldest activity first (its live list is
 * kept in the order of each connection's latest record, cap_conn.last_record),
 * then runs record r itself. At the end it closes what is left in the same
 * order. So every event gets the key (record, rank): rank is the connection's
 * last_record for closes made by the clock and at the end (record = "end"),
 * and "after all of those" for the events of the record itself, which only
 * its own worker makes. Within one worker the events come out already sorted;
 * no two workers make events with the same key; merging by key therefore
 * restores the one-thread order.
 *
 * When can the merger hand on the smallest head event, of record r? When
 * every other worker either has an event waiting (its key is larger) or has
 * finished record r (its watermark): nothing smaller can still come.
 *
 * Where N sharded threads may differ from one (none of it happens in the
 * tests; read-ahead replays the one tracker's events to the one resp
 * pipeline and differs in nothing, caps included):
 *  - the caps on the whole capture and resp state (live connections,
 *    out-of-order bytes, requests in flight) are shared out: each worker
 *    gets 1/N of each (worker_caps), so memory stays within the one-thread
 *    bounds; a run that reaches a cap (eviction, a hole given up, a request
 *    dropped) reaches it at other moments, or a little sooner when its
 *    connections hash unevenly;
 *  - the analyzer is handed a copy of each connection, made at its OPEN and
 *    refreshed at its CLOSE: a connection record it writes when its own
 *    connection cap evicts a connection still open shows the counters of
 *    the OPEN, not of that moment;
 *  - when capture times go backwards, idle expiry (which stops at the first
 *    connection of its list not yet idle) can close a connection a few
 *    records earlier or later;
 *  - live: the analyzer is flushed by the capture time of the events handed
 *    on (and a clock event every 0.1 s), not of every packet.
 *
 * Memory stays bounded: the input ring (records and bytes), read-ahead's
 * event ring and chunks of the file (RA_KEEP_BUFFERS), each worker's event ring and its ring of kept raw replies
 * (CLUSTER SLOTS/SHARDS/NODES) have fixed sizes (the input and read-ahead
 * rings grow only to twice a record or event larger than half of them); a
 * full ring makes its producer wait. The copies of open connections number
 * the live connections of the tracker(s).
 *
 * Synchronisation: one mutex and condition variables, taken once per batch
 * (IN_BATCH records, or a quarter of an event ring), never per record or
 * event. Ring contents are written before the count that publishes them and
 * read after it, under the mutex.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/run.h"

#ifndef PAR_TINY_RINGS
#define IN_RECORDS 16384u          /* records in the input ring (a power of two) */
#define IN_BYTES (4u << 20)        /* bytes of record data in it (a power of two) */
#define IN_BATCH 1024u             /* records handed over at once */
#define SHOW_EVERY 256u            /* a worker shows its progress this often */
#define OUT_BYTES (2u << 20)       /* bytes of a worker's event ring (a power of two) */
#define MERGE_BATCH 2048u          /* events merged between looks at the workers */
#define RAW_MIN (1u << 16)         /* smallest raw reply ring */
#else
/* -DPAR_TINY_RINGS: rings so small that every wrap, wait and the growing of
 * the input bytes happen on small captures (a stress build for tests). */
#define IN_RECORDS 64u
#define IN_BYTES (16u << 10)
#define IN_BATCH 16u
#define SHOW_EVERY 8u
#define OUT_BYTES (8u << 10)
#define MERGE_BATCH 8u
#define RAW_MIN (1u << 12)
#endif
#define OUT_BATCH (OUT_BYTES / 4)  /* event bytes handed over at once, at most */
#define EV_ALIGN 8u                /* events start at multiples of this */
#define KEY_OWN UINT64_MAX         /* rank of a record's own events */
#define KEY_END UINT64_MAX         /* "record" of the events of the end */
#define TIME_EVERY_US 100000       /* live: a clock event per 0.1 s of capture time */
#define MAX_WORKERS 64
/* read-ahead: chunks of the file in memory. 5 rather than 8: on real.pcap
 * (small commands) 8 chunks (10 MiB) made --threads 2 slower, 0.276 ->
 * 0.301 s (hyperfine, 30 runs each, same run; the kernel's copy into chunks
 * no longer in cache costs ~15 ms more system time), 5 gave 0.281 s; on
 * gen-1G (large values) 5 gave 0.159 s against 0.154 s with 8 and 0.224 s
 * with 4 (0.233 s before chunks were kept). */
#ifndef PAR_TINY_RINGS
#define RA_KEEP_BUFFERS 5u
#else
#define RA_KEEP_BUFFERS 4u
#endif
#define RA_PREFETCH_FROM 2u        /* the calling thread reads chunks this far on */

typedef struct ra_ev ra_ev;     /* read-ahead's events (see "read-ahead") */

/* A record in the input ring. */
typedef struct in_rec {
    int64_t ts_us;
    uint64_t off;                  /* where its bytes start (bytes ever reserved) */
    uint32_t caplen, wirelen;
    int32_t linktype;
    uint32_t worker;               /* whose share it is */
} in_rec;

typedef enum ev_kind {
    EV_OPEN = 0,                   /* body: cap_conn */
    EV_COMMAND,                    /* body: cmd_head, then the packed command */
    EV_CLOSE,                      /* body: cap_conn, resp_conn_stats */
    EV_TIME,                       /* live: the capture time moved on; no body */
    EV_SKIP                        /* the rest of the ring is unused */
} ev_kind;

/* An event in a worker's event ring: this header, then its body. */
typedef struct ev_hdr {
    uint64_t record;               /* number of the record that caused it, KEY_END */
    uint64_t rank;                 /* see the top of the file */
    int64_t ts_us;                 /* capture time of that record */
    uint32_t size;                 /* header and body, a multiple of EV_ALIGN */
    uint32_t kind;                 /* an ev_kind */
} ev_hdr;

/*
 * A command is packed: a resp_command is 800-odd bytes, mostly text arrays
 * of which a few bytes are used, and copying it whole costs more than the
 * analysis of it. The struct is copied as spans around its four text arrays
 * (so a field added anywhere else is copied too), then the kept bytes of
 * each array, the arguments and the key padded to 16, 32 or 64 bytes
 * (copy_text). Bytes past a kept length mean nothing, as in resp's own
 * commands.
 */
#define CMD_OFF(f) offsetof(resp_command, f)
#define ARGS_OFF CMD_OFF(req.args)
#define ARGS_END (ARGS_OFF + sizeof(((resp_command *)0)->req.args))
#define KEY0_OFF CMD_OFF(req.key0)
#define KEY0_END (KEY0_OFF + RESP_ARG_PREFIX)
#define ERRTEXT_OFF CMD_OFF(reply.errtext)
#define ERRTEXT_END (ERRTEXT_OFF + RESP_ERRTEXT_MAX)
#define HOST_OFF CMD_OFF(reply.redir.host)
#define HOST_END (HOST_OFF + sizeof(((resp_command *)0)->reply.redir.host))
_Static_assert(ARGS_END <= KEY0_OFF && KEY0_END <= ERRTEXT_OFF && ERRTEXT_END <= HOST_OFF &&
                   HOST_END <= sizeof(resp_command),
               "resp_command's text arrays moved: update the spans");
_Static_assert(sizeof(((resp_command *)0)->req.key0) == RESP_ARG_PREFIX &&
                   sizeof(((resp_command *)0)->reply.errtext) == RESP_ERRTEXT_MAX,
               "resp_command's text arrays changed size");

/* The spans of a resp_command copied as they are, as (from, to) pairs:
 * everything but the text arrays. Each copy has a constant size, so the
 * compiler inlines it. */
#define CMD_SPANS(X) X(0, ARGS_OFF) X(ARGS_END, KEY0_OFF) X(KEY0_END, ERRTEXT_OFF) \
                     X(ERRTEXT_END, HOST_OFF) X(HOST_END, sizeof(resp_command))
#define SPAN_SIZE(from, to) + ((to) - (from))
#define CMD_FIXED (0 CMD_SPANS(SPAN_SIZE))
_Static_assert(RESP_ARG_PREFIX == 64, "copy_text copies 16, 32 or 64 bytes");

/* What a packed command starts with. */
typedef struct cmd_head {
    uint64_t conn_id;              /* its connection (0: none) */
    uint64_t raw_off;              /* where its raw reply is in the raw ring */
    uint8_t has_raw;               /* reply.raw was set (raw_len bytes are there) */
    uint8_t pad;
    uint16_t errtext_len;          /* bytes of reply.errtext that follow */
    uint16_t host_len;             /* bytes of reply.redir.host that follow */
    uint16_t pad2;
} cmd_head;

/* A worker: its stages and its end of the rings. Fields are grouped by the
 * thread that writes them, each group on cache lines of its own (a line
 * written by one thread and read by another moves between cores). */
typedef struct worker {
    struct par *par;
    unsigned id;
    pthread_t thread;
    int started;
    cap_tracker *tracker;
    resp_pipeline *rp;
    const in_rec *recs;            /* the input ring's records */
    uint8_t *ev;                   /* the event ring (OUT_BYTES) */
    uint8_t *raw;                  /* the raw reply ring */
    size_t raw_size;               /* a power of two */
    pthread_cond_t space_cv;       /* the merger freed events */

    /* the worker's own */
    _Alignas(64) uint64_t pos;                  /* next input position to read (record pos+1) */
    uint64_t avail;                /* input positions published, as last seen */
    const uint8_t *bytes;          /* the input bytes, as last seen */
    size_t bytes_mask;
    uint64_t record;               /* key of the events being made */
    int own;                       /* the record being fed is of this share */
    int64_t ts_us;
    int64_t next_time_us;          /* live: when the next clock event is due */
    uint64_t ev_head;              /* event bytes written */
    uint64_t ev_head_shown;        /* event bytes published */
    uint64_t ev_tail_seen;         /* the merger's tail, as last seen */
    uint64_t raw_head;             /* raw bytes reserved */
    uint64_t raw_tail_seen;
    unsigned stats_gen;            /* the last stats request served */

    /* under the mutex */
    _Alignas(64) uint64_t consumed; /* input positions done with */
    uint64_t watermark;            /* every event of records <= this is published;
                                      KEY_END once finished */
    uint64_t ev_published;         /* event bytes published */
    uint64_t ev_tail;              /* event bytes the merger is done with */
    uint64_t raw_tail;             /* raw bytes the merger is done with */
    int space_waiting;
    uint64_t wake_ev, wake_raw;    /* ... to be woken once the tails reach these */
    cap_stats cs;                  /* counters, as of the last request served */
    resp_stats rs;

    /* the merger's own */
    _Alignas(64) uint64_t m_tail;
    uint64_t m_head, m_watermark, m_raw_tail;
} worker;

struct par {
    par_opts o;
    worker *w;
    unsigned n;
    int read_ahead;                /* --threads 2: the tracker on the reader, worker
                                      0's resp on the calling thread (see par_new) */
    cap_servers *servers;          /* sharded: the known servers, which the reader
                                      notes record by record before handing each
                                      on, and the workers' trackers read (the
                                      stamps keep it deterministic: servers.c) */
    cap_source *src;
    pthread_t reader;
    int reader_started;
    pthread_mutex_t mu;
    pthread_cond_t in_cv;          /* workers: records, the end, or the finish order */
    pthread_cond_t room_cv;        /* reader: workers are done with records */
    pthread_cond_t out_cv;         /* merger: events or watermarks published */

    /* the input ring; recs[] and bytes[] written by the reader only */
    in_rec *recs;
    uint8_t *bytes;                /* swapped (grown) only when no record is in use */
    size_t bytes_size;

    /* the reader's own */
    _Alignas(64) uint64_t rd_pos;  /* records written */
    uint64_t rd_off;               /* bytes reserved */
    uint64_t rd_shown;             /* records published */
    uint64_t rd_oldest;            /* oldest position still in use, as last seen */
    unsigned rd_gen;               /* the last counters request served */
    unsigned rd_progress_gen;      /* the last progress request served */
    int rd_rc;
    char rd_err[512];

    /* under the mutex */
    _Alignas(64) uint64_t published; /* input records published */
    int eof;                       /* the reader is done: published is the total */
    int finish;                    /* the merger's order to finish ... */
    int64_t finish_us;             /* ... at this time */
    int in_waiters;                /* workers waiting for records */
    int reader_waiting;
    uint64_t reader_wake_at;       /* ... to be woken once this is the oldest in use */
    int merger_waiting;
    cap_input_info *inputs;        /* the reader's copy of the inputs */
    size_t n_inputs;
    uint64_t done_bytes, total_bytes, packets;
    int rd_oom;                    /* the reader ran out of memory */

    _Alignas(64) _Atomic unsigned request; /* bumped by the merger: publish counters */
    _Atomic unsigned progress_request; /* ... the reader's progress */

    /* the merger's own: copies of the open connections, by id */
    _Alignas(64) uint64_t *map_ids; /* 0: empty (ids start at 1) */
    cap_conn **map_conns;
    size_t map_mask, map_used;
    cap_conn *free_conns;          /* linked through .user */
    void **blocks;                 /* every block of copies */
    size_t n_blocks, blocks_cap;
    uint64_t since_refresh;        /* events handed on since the last refresh */
    int m_oom;                     /* a connection copy found no memory */
    resp_command cmd;              /* the command being handed on, unpacked */
    uint64_t last_id;              /* the connection last looked up (0: none) */
    cap_conn *last_conn;
    int discard;                   /* being freed unfinished: no more events */
    int joined;

    /* read-ahead (see "read-ahead" below) */
    cap_tracker *ra_tracker;       /* the reader's; the calling thread's once joined */
    uint8_t *ra_ring;              /* the event ring; swapped (grown) only when empty */
    size_t ra_size;                /* a power of two */
    /* the reader's own */
    _Alignas(64) uint64_t ra_head; /* event bytes written */
    uint64_t ra_shown;             /* event bytes published */
    uint64_t ra_tail_seen;         /* the calling thread's tail, as last seen */
    uint32_t *ra_free;             /* connection slots free for reuse (a stack) */
    uint32_t ra_n_free, ra_slots;  /* its height; slots ever handed out */
    int ra_direct;                 /* joined: each event is replayed as written */
    ra_ev *ra_last;                /* the record's latest event, NULL: none yet */
    uint64_t ra_last_at;           /* ... where it starts */
    int ra_keep;                   /* the source reads in chunks (see "References") */
    uintptr_t ra_rec_lo, ra_rec_hi; /* the record in the tracker: its bytes */
    /* under the mutex */
    _Alignas(64) uint64_t ra_published; /* event bytes published */
    uint64_t ra_tail;              /* event bytes the calling thread is done with */
    uint64_t ra_wake_at;           /* the reader waits for ra_tail to reach this */
    int ra_reader_done;            /* joined: the tracker is the calling thread's */
    cap_stats ra_cs;               /* the tracker's counters, as last published */
    uint64_t ck_taken;             /* chunks the source went on in (ra_chunk) */
    uint64_t ck_claimed[RA_KEEP_BUFFERS]; /* by slot: the chunk being read into it, + 1 */
    uint64_t ck_ready[RA_KEEP_BUFFERS]; /* by slot: the chunk read into it, + 1 */
    uint64_t ck_left[RA_KEEP_BUFFERS];  /* by slot: ra_head when its chunk was left */
    int ck_short;                  /* a chunk was short: the file ends there */
    /* the calling thread's own: its copies of the open connections, by slot */
    _Alignas(64) uint64_t ra_c_tail, ra_c_head;
    const uint8_t *ra_c_ring;      /* the ring as last seen */
    size_t ra_c_mask;
    unsigned ra_c_events;          /* events replayed since the tail was shown */
    size_t ra_c_ref_bytes;         /* bytes referenced since (RA_DATA_REF) */
    cap_conn **ra_copies;          /* blocks of RA_BLOCK copies */
    size_t ra_n_blocks;
};

/* ---------------------------------------------------------------- helpers */

unsigned par_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > MAX_WORKERS ? MAX_WORKERS : (unsigned)n;
}

/* Smallest power of two >= n (n <= 2^62). */
static size_t pow2_at_least(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
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

/* ---------------------------------------------------------------- worker: events */

/* The oldest input position a worker still needs. Mutex held. */
static uint64_t oldest_in_use(const struct par *p)
{
    uint64_t oldest = p->rd_pos;
    for (unsigned i = 0; i < p->n; i++)
        if (p->w[i].consumed < oldest)
            oldest = p->w[i].consumed;
    return oldest;
}


/* Publish the events written and the records done, and wake whoever waits
 * for them. Called with the mutex held. */
static void worker_show(worker *w)
{
    struct par *p = w->par;
    w->consumed = w->pos;
    if (w->watermark != KEY_END)
        w->watermark = w->pos;
    w->ev_published = w->ev_head;
    w->ev_head_shown = w->ev_head;
    w->ev_tail_seen = w->ev_tail;
    w->raw_tail_seen = w->raw_tail;
    if (p->merger_waiting)
        pthread_cond_signal(&p->out_cv);
    if (p->reader_waiting && oldest_in_use(p) >= p->reader_wake_at)
        pthread_cond_signal(&p->room_cv);
}

/* The tail a ring must reach for `need` more bytes after head, plus a
 * quarter of the ring so that a wait is worth its wake-up, but no further
 * than `most` (everything published). */
static uint64_t wake_tail(uint64_t head, size_t need, size_t size, uint64_t most)
{
    uint64_t t = head + need > size ? head + need - size : 0;
    t += size / 4;
    return t < most ? t : most;
}

/* Wait until the merger has freed `ev` more event bytes and `raw` more raw
 * bytes from raw_start. */
static void worker_wait_room(worker *w, size_t ev, uint64_t raw_start, size_t raw)
{
    struct par *p = w->par;
    pthread_mutex_lock(&p->mu);
    worker_show(w);
    w->wake_ev = ev ? wake_tail(w->ev_head, ev, OUT_BYTES, w->ev_head) : 0;
    w->wake_raw = raw ? wake_tail(raw_start, raw, w->raw_size, w->raw_head) : 0;
    while (w->ev_head + ev - w->ev_tail_seen > OUT_BYTES ||
           raw_start + raw - w->raw_tail_seen > w->raw_size) {
        w->space_waiting = 1;
        pthread_cond_wait(&w->space_cv, &p->mu);
        w->space_waiting = 0;
        w->ev_tail_seen = w->ev_tail;
        w->raw_tail_seen = w->raw_tail;
    }
    pthread_mutex_unlock(&p->mu);
}

/* Room for an event of size bytes (header included, a multiple of
 * EV_ALIGN), contiguous in the ring; its header filled in. conn: the
 * connection the event is about (its last_record ranks the closes the clock
 * makes). */
static ev_hdr *ev_begin(worker *w, const cap_conn *conn, ev_kind kind, size_t size)
{
    size_t phys = (size_t)(w->ev_head & (OUT_BYTES - 1));
    size_t rest = OUT_BYTES - phys;
    ev_hdr *h;
    if (size > rest) {
        /* Skip the end of the ring: events stay contiguous. */
        if (w->ev_head + rest + size - w->ev_tail_seen > OUT_BYTES)
            worker_wait_room(w, rest + size, w->raw_head, 0);
        if (rest >= sizeof(ev_hdr)) {
            h = (ev_hdr *)(w->ev + phys);
            h->kind = EV_SKIP;
            h->size = (uint32_t)rest;
        }
        w->ev_head += rest;
        phys = 0;
    } else if (w->ev_head + size - w->ev_tail_seen > OUT_BYTES) {
        worker_wait_room(w, size, w->raw_head, 0);
    }
    h = (ev_hdr *)(w->ev + phys);
    h->record = w->record;
    h->rank = w->own || conn == NULL ? KEY_OWN : conn->last_record;
    h->ts_us = w->ts_us;
    h->size = (uint32_t)size;
    h->kind = kind;
    return h;
}

/* The event is written; hand a batch over when one is full. */
static void ev_end(worker *w, const ev_hdr *h)
{
    w->ev_head += h->size;
    if (w->ev_head - w->ev_head_shown >= OUT_BATCH) {
        pthread_mutex_lock(&w->par->mu);
        worker_show(w);
        pthread_mutex_unlock(&w->par->mu);
    }
}

/* Size rounded up to EV_ALIGN. */
static size_t ev_round(size_t size)
{
    return (size + EV_ALIGN - 1) & ~(size_t)(EV_ALIGN - 1);
}

/* Room for len raw bytes, contiguous in the ring: their offset. */
static uint64_t raw_reserve(worker *w, size_t len)
{
    uint64_t start = w->raw_head;
    size_t phys = (size_t)(start & (w->raw_size - 1));
    if (phys + len > w->raw_size)
        start += w->raw_size - phys; /* skip the tail: the bytes stay contiguous */
    if (start + len - w->raw_tail_seen > w->raw_size)
        worker_wait_room(w, 0, start, len);
    w->raw_head = start + len;
    return start;
}

/* OPEN and CLOSE: the connection as it is now (and CLOSE's counters). */
static void conn_event(worker *w, ev_kind kind, const cap_conn *conn, const resp_conn_stats *st)
{
    size_t size = sizeof(ev_hdr) + sizeof(cap_conn) + (st ? sizeof *st : 0);
    ev_hdr *h = ev_begin(w, conn, kind, ev_round(size));
    uint8_t *body = (uint8_t *)(h + 1);
    cap_conn *c = (cap_conn *)body;
    *c = *conn;
    c->user = NULL;
    if (st)
        memcpy(body + sizeof(cap_conn), st, sizeof *st);
    ev_end(w, h);
}

/* resp_sink: a connection opened. */
static void w_conn_open(void *ctx, const cap_conn *conn)
{
    conn_event(ctx, EV_OPEN, conn, NULL);
}

/* resp_sink: a connection closed. */
static void w_conn_close(void *ctx, const cap_conn *conn, const resp_conn_stats *st)
{
    conn_event(ctx, EV_CLOSE, conn, st);
}

/* Kept bytes of argument i, of the first key. */
static size_t arg_kept(const resp_request *r, unsigned i)
{
    return r->arg_len[i] < RESP_ARG_PREFIX ? r->arg_len[i] : RESP_ARG_PREFIX;
}
static size_t key0_kept(const resp_request *r)
{
    return r->key0_len < RESP_ARG_PREFIX ? r->key0_len : RESP_ARG_PREFIX;
}

/* Bytes a kept text of len bytes takes in a packed command: 0, 16, 32 or
 * 64 (RESP_ARG_PREFIX), what copy_text copies. */
static size_t text_padded(size_t len)
{
    return len == 0 ? 0 : len <= 16 ? 16 : len <= 32 ? 32 : RESP_ARG_PREFIX;
}

/* Copy a kept text of len bytes (<= RESP_ARG_PREFIX) as text_padded(len)
 * bytes: at most three vector moves of constant size, where a copy of a
 * variable length becomes a loop over bytes or a call. Both sides have room
 * for the padded length (a text array of RESP_ARG_PREFIX bytes, or its
 * padded place in the ring); the bytes past len mean nothing, as in resp's
 * own commands. */
static void copy_text(void *dst, const void *src, size_t len)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (len == 0)
        return;
    memcpy(d, s, 16);
    if (len > 16)
        memcpy(d + 16, s + 16, 16);
    if (len > 32)
        memcpy(d + 32, s + 32, 32);
}

/* The kept lengths of a request's texts: its arguments, then its first key
 * (at [nargs]). Read once into a local array: the copies write through byte
 * pointers, which the compiler must assume change the request's fields.
 * Returns the number of kept arguments; *padded: the bytes all take. */
static unsigned text_lengths(const resp_request *r, uint8_t kept[RESP_ARG_KEEP + 1],
                             size_t *padded)
{
    unsigned nargs = r->nargs < RESP_ARG_KEEP ? r->nargs : RESP_ARG_KEEP;
    size_t total = 0;
    for (unsigned i = 0; i < nargs; i++) {
        kept[i] = (uint8_t)arg_kept(r, i);
        total += text_padded(kept[i]);
    }
    kept[nargs] = (uint8_t)key0_kept(r);
    *padded = total + text_padded(kept[nargs]);
    return nargs;
}

/* resp_sink: a command, packed (see cmd_head); a kept raw reply goes to the
 * raw ring. */
static void w_command(void *ctx, const resp_command *cmd)
{
    worker *w = ctx;
    const resp_request *r = &cmd->req;
    uint8_t kept[RESP_ARG_KEEP + 1];
    size_t texts;
    unsigned nargs = text_lengths(r, kept, &texts);
    size_t raw_len = cmd->reply.raw ? cmd->reply.raw_len : 0;
    cmd_head head = {.conn_id = cmd->conn ? cmd->conn->id : 0,
                     .has_raw = cmd->reply.raw != NULL};
    const uint8_t *src = (const uint8_t *)cmd;
    uint8_t *out;
    ev_hdr *h;
    if (cmd->reply.errtext[0])
        head.errtext_len = (uint16_t)strnlen(cmd->reply.errtext, RESP_ERRTEXT_MAX);
    if (cmd->reply.redir.host[0])
        head.host_len = (uint16_t)strnlen(cmd->reply.redir.host, sizeof cmd->reply.redir.host);
    /* resp keeps at most max_kept_reply bytes, half the ring: always fits */
    if (raw_len > w->raw_size / 2)
        head.has_raw = 0;
    if (head.has_raw) {
        head.raw_off = raw_reserve(w, raw_len);
        memcpy(w->raw + (head.raw_off & (w->raw_size - 1)), cmd->reply.raw, raw_len);
    }
    h = ev_begin(w, cmd->conn, EV_COMMAND,
                 ev_round(sizeof(ev_hdr) + sizeof head + CMD_FIXED + texts +
                          head.errtext_len + head.host_len));
    out = (uint8_t *)(h + 1);
    memcpy(out, &head, sizeof head);
    out += sizeof head;
#define PACK_SPAN(from, to) memcpy(out, src + (from), (to) - (from)); out += (to) - (from);
    CMD_SPANS(PACK_SPAN)
#undef PACK_SPAN
    for (unsigned i = 0; i < nargs; i++) {
        copy_text(out, r->args[i], kept[i]);
        out += text_padded(kept[i]);
    }
    copy_text(out, r->key0, kept[nargs]);
    out += text_padded(kept[nargs]);
    if (head.errtext_len) /* errors and redirections are rare */
        memcpy(out, cmd->reply.errtext, head.errtext_len);
    out += head.errtext_len;
    if (head.host_len)
        memcpy(out, cmd->reply.redir.host, head.host_len);
    ev_end(w, h);
}

/* Live: a clock event now and then, so that the merger flushes the analyzer
 * on time even when no command completes. */
static void maybe_time_event(worker *w)
{
    ev_hdr *h;
    if (!w->par->o.live || w->id != 0 || w->ts_us < w->next_time_us)
        return;
    w->next_time_us = w->ts_us + TIME_EVERY_US;
    h = ev_begin(w, NULL, EV_TIME, sizeof(ev_hdr));
    ev_end(w, h);
}

/* ---------------------------------------------------------------- worker: loop */

/* Serve a counters request: copy the stage counters for the merger. */
static void worker_serve_request(worker *w)
{
    struct par *p = w->par;
    unsigned req = atomic_load_explicit(&p->request, memory_order_relaxed);
    cap_stats cs;
    resp_stats rs;
    if (req == w->stats_gen)
        return;
    w->stats_gen = req;
    cs = *cap_tracker_stats(w->tracker);
    rs = *resp_get_stats(w->rp);
    pthread_mutex_lock(&p->mu);
    w->cs = cs;
    w->rs = rs;
    pthread_mutex_unlock(&p->mu);
}

/* Show progress and take the records published since. wait: sleep until
 * there are some (or the input ended). 1 when there are records to read, 0
 * when the input ended and every record was read. */
static int worker_fetch(worker *w, int wait)
{
    struct par *p = w->par;
    int more;
    worker_serve_request(w);
    pthread_mutex_lock(&p->mu);
    worker_show(w);
    while (wait && p->published == w->pos && !p->eof) {
        p->in_waiters++;
        pthread_cond_wait(&p->in_cv, &p->mu);
        p->in_waiters--;
    }
    w->avail = p->published;
    w->bytes = p->bytes;
    w->bytes_mask = p->bytes_size - 1;
    more = w->avail > w->pos;
    pthread_mutex_unlock(&p->mu);
    return more;
}

/* Feed input position pos: the clock, then the record if it is ours. */
static void worker_feed(worker *w, uint64_t pos)
{
    const in_rec *d = &w->recs[pos & (IN_RECORDS - 1)];
    uint64_t record = pos + 1;
    w->record = record;
    w->ts_us = d->ts_us;
    w->own = 0;
    cap_tracker_time(w->tracker, record, d->ts_us);
    if (d->worker == w->id) {
        w->own = 1;
        cap_tracker_packet_at(w->tracker, record, d->linktype, d->ts_us,
                              w->bytes + (d->off & w->bytes_mask), d->caplen, d->wirelen);
    }
    maybe_time_event(w);
}

/* Wait for the merger's order to finish: the end time. */
static int64_t worker_wait_finish(worker *w)
{
    struct par *p = w->par;
    int64_t end;
    pthread_mutex_lock(&p->mu);
    while (!p->finish) {
        p->in_waiters++;
        pthread_cond_wait(&p->in_cv, &p->mu);
        p->in_waiters--;
    }
    end = p->finish_us;
    pthread_mutex_unlock(&p->mu);
    return end;
}

/* The worker thread: every record of the input, then the end. */
static void *worker_main(void *arg)
{
    worker *w = arg;
    struct par *p = w->par;
    for (;;) {
        if (w->pos == w->avail && !worker_fetch(w, 1))
            break;
        worker_feed(w, w->pos);
        w->pos++;
        if ((w->pos & (SHOW_EVERY - 1)) == 0)
            worker_fetch(w, 0); /* the reader may reuse what was read, the
                                   merger may pass what was done */
    }
    w->record = KEY_END;
    w->own = 0;
    cap_tracker_finish(w->tracker, worker_wait_finish(w));
    pthread_mutex_lock(&p->mu);
    w->watermark = KEY_END;
    worker_show(w);
    w->cs = *cap_tracker_stats(w->tracker);
    w->rs = *resp_get_stats(w->rp);
    pthread_mutex_unlock(&p->mu);
    return NULL;
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
static void reader_show(struct par *p)
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

/* Wait until the workers are done with more records than when last seen. */
static void reader_wait_room(struct par *p)
{
    uint64_t before = p->rd_oldest;
    reader_show(p);
    pthread_mutex_lock(&p->mu);
    /* woken once a quarter of what is pending was read */
    p->reader_wake_at = before + (p->rd_pos - before + 3) / 4;
    while ((p->rd_oldest = oldest_in_use(p)) == before) {
        p->reader_waiting = 1;
        pthread_cond_wait(&p->room_cv, &p->mu);
        p->reader_waiting = 0;
    }
    pthread_mutex_unlock(&p->mu);
}

/* Make the byte ring at least 2 * len: only when no record is in use. 0, or
 * -1 out of memory. */
static int reader_grow(struct par *p, size_t len)
{
    size_t size = pow2_at_least(2 * len);
    uint8_t *b;
    while (p->rd_oldest != p->rd_pos)
        reader_wait_room(p);
    b = malloc(size);
    if (!b)
        return -1;
    pthread_mutex_lock(&p->mu);
    free(p->bytes);
    p->bytes = b;
    p->bytes_size = size;
    p->rd_off = 0;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* Room for one record of len bytes: its descriptor, bytes at *start. NULL
 * when out of memory. */
static in_rec *reader_reserve(struct par *p, size_t len, uint64_t *start)
{
    if (len > p->bytes_size / 2 && reader_grow(p, len) != 0)
        return NULL;
    for (;;) {
        uint64_t s = p->rd_off;
        size_t phys = (size_t)(s & (p->bytes_size - 1));
        uint64_t tail = p->rd_oldest < p->rd_pos
                            ? p->recs[p->rd_oldest & (IN_RECORDS - 1)].off : p->rd_off;
        if (phys + len > p->bytes_size)
            s += p->bytes_size - phys;
        if (p->rd_pos - p->rd_oldest < IN_RECORDS && s + len - tail <= p->bytes_size) {
            *start = s;
            return &p->recs[p->rd_pos & (IN_RECORDS - 1)];
        }
        reader_wait_room(p);
    }
}

/* cap_record_fn: copy one record into the ring (NULL: a live read returned,
 * hand on what there is). */
static void reader_record(void *ctx, const cap_record *rec)
{
    struct par *p = ctx;
    uint32_t hash;
    uint64_t start;
    in_rec *d;
    if (!rec) {
        if (p->rd_pos != p->rd_shown)
            reader_show(p);
        return;
    }
    d = reader_reserve(p, rec->caplen, &start);
    if (!d) {
        p->rd_oom = 1; /* read by the merger after joining */
        cap_source_break(p->src);
        return;
    }
    memcpy(p->bytes + (start & (p->bytes_size - 1)), rec->data, rec->caplen);
    d->ts_us = rec->ts_us;
    d->off = start;
    d->caplen = rec->caplen;
    d->wirelen = rec->wirelen;
    d->linktype = rec->linktype;
    d->worker = cap_record_route(rec, p->rd_pos + 1, p->servers, &hash) && p->n > 1
                    ? (uint32_t)(((uint64_t)hash * p->n) >> 32) : 0;
    p->rd_off = start + rec->caplen;
    p->rd_pos++;
    if (p->rd_pos - p->rd_shown >= IN_BATCH)
        reader_show(p);
}

static void ra_record(void *ctx, const cap_record *rec); /* see "read-ahead" */

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

/* ---------------------------------------------------------------- merger: connections */

/* Slot of an id in the map (multiplicative hash, linear probing). */
static size_t map_home(const struct par *p, uint64_t id)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & p->map_mask;
}

/* Double the map. 0, or -1 out of memory. */
static int map_grow(struct par *p)
{
    size_t size = p->map_mask ? 2 * (p->map_mask + 1) : 1024;
    uint64_t *ids = calloc(size, sizeof *ids);
    cap_conn **conns = calloc(size, sizeof *conns);
    uint64_t *old_ids = p->map_ids;
    cap_conn **old_conns = p->map_conns;
    size_t old_size = p->map_mask ? p->map_mask + 1 : 0;
    if (!ids || !conns) {
        free(ids);
        free(conns);
        return -1;
    }
    p->map_ids = ids;
    p->map_conns = conns;
    p->map_mask = size - 1;
    for (size_t i = 0; i < old_size; i++) {
        size_t j;
        if (!old_ids[i])
            continue;
        for (j = map_home(p, old_ids[i]); ids[j]; j = (j + 1) & p->map_mask)
            ;
        ids[j] = old_ids[i];
        conns[j] = old_conns[i];
    }
    free(old_ids);
    free(old_conns);
    return 0;
}

/* The map slot holding id, or the empty slot where it would go. */
static size_t map_slot(const struct par *p, uint64_t id)
{
    size_t j = map_home(p, id);
    while (p->map_ids[j] && p->map_ids[j] != id)
        j = (j + 1) & p->map_mask;
    return j;
}

/* The copy of connection id, or NULL. */
static cap_conn *map_find(const struct par *p, uint64_t id)
{
    size_t j;
    if (!p->map_ids)
        return NULL;
    j = map_slot(p, id);
    return p->map_ids[j] ? p->map_conns[j] : NULL;
}

/* Remove id from the map, shifting later entries of its run back (linear
 * probing without tombstones). */
static void map_remove(struct par *p, uint64_t id)
{
    size_t i = map_slot(p, id), j = i;
    if (!p->map_ids[i])
        return;
    p->map_ids[i] = 0;
    p->map_used--;
    for (;;) {
        size_t home;
        j = (j + 1) & p->map_mask;
        if (!p->map_ids[j])
            return;
        home = map_home(p, p->map_ids[j]);
        /* Entry j may move to i unless its home lies cyclically in (i, j]. */
        if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
            continue;
        p->map_ids[i] = p->map_ids[j];
        p->map_conns[i] = p->map_conns[j];
        p->map_ids[j] = 0;
        i = j;
    }
}

/* A free connection copy (from blocks of 256). NULL out of memory. */
static cap_conn *conn_alloc(struct par *p)
{
    cap_conn *c = p->free_conns;
    if (!c) {
        cap_conn *block;
        if (p->n_blocks == p->blocks_cap) {
            size_t cap = p->blocks_cap ? 2 * p->blocks_cap : 16;
            void **b = realloc(p->blocks, cap * sizeof *b);
            if (!b)
                return NULL;
            p->blocks = b;
            p->blocks_cap = cap;
        }
        block = malloc(256 * sizeof *block);
        if (!block)
            return NULL;
        p->blocks[p->n_blocks++] = block;
        for (int i = 255; i >= 0; i--) {
            block[i].user = p->free_conns;
            p->free_conns = &block[i];
        }
        c = p->free_conns;
    }
    p->free_conns = c->user;
    return c;
}

/* OPEN: a copy of the connection that lives until its CLOSE, as the
 * tracker's own does with one thread. NULL out of memory. */
static cap_conn *conn_open_copy(struct par *p, const cap_conn *snap)
{
    size_t j;
    cap_conn *c;
    if ((p->map_used + 1) * 2 > (p->map_mask ? p->map_mask + 1 : 0) && map_grow(p) != 0)
        return NULL;
    j = map_slot(p, snap->id);
    if (p->map_ids[j]) {
        c = p->map_conns[j]; /* ids are never reused: not expected */
    } else {
        c = conn_alloc(p);
        if (!c)
            return NULL;
        p->map_ids[j] = snap->id;
        p->map_conns[j] = c;
        p->map_used++;
    }
    *c = *snap;
    c->user = NULL;
    if (snap->id == p->last_id)
        p->last_id = 0; /* it may have been looked up, and not found, before */
    return c;
}

/* CLOSE done: forget the copy. */
static void conn_close_copy(struct par *p, cap_conn *c)
{
    if (c->id == p->last_id)
        p->last_id = 0;
    map_remove(p, c->id);
    c->user = p->free_conns;
    p->free_conns = c;
}

/* ---------------------------------------------------------------- merger */

/* Worker w's next event, past a skipped ring end; NULL when none is
 * published. */
static const ev_hdr *head_event(worker *w)
{
    for (;;) {
        size_t phys, rest;
        const ev_hdr *h;
        if (w->m_tail == w->m_head)
            return NULL;
        phys = (size_t)(w->m_tail & (OUT_BYTES - 1));
        rest = OUT_BYTES - phys;
        if (rest < sizeof(ev_hdr)) {
            w->m_tail += rest; /* too short for a header: skipped */
            continue;
        }
        h = (const ev_hdr *)(w->ev + phys);
        if (h->kind != EV_SKIP)
            return h;
        w->m_tail += h->size;
    }
}

/* Unpack a command (w_command's layout) into p->cmd. */
static resp_command *unpack_command(struct par *p, worker *w, const uint8_t *in)
{
    resp_command *cmd = &p->cmd;
    uint8_t *dst = (uint8_t *)cmd;
    resp_request *r = &cmd->req;
    uint8_t kept[RESP_ARG_KEEP + 1];
    size_t texts;
    unsigned nargs;
    cmd_head head;
    memcpy(&head, in, sizeof head);
    in += sizeof head;
#define UNPACK_SPAN(from, to) memcpy(dst + (from), in, (to) - (from)); in += (to) - (from);
    CMD_SPANS(UNPACK_SPAN)
#undef UNPACK_SPAN
    nargs = text_lengths(r, kept, &texts); /* the lengths came with the spans */
    for (unsigned i = 0; i < nargs; i++) {
        copy_text(r->args[i], in, kept[i]);
        in += text_padded(kept[i]);
    }
    copy_text(r->key0, in, kept[nargs]);
    in += text_padded(kept[nargs]);
    if (head.errtext_len) /* errors and redirections are rare */
        memcpy(cmd->reply.errtext, in, head.errtext_len);
    if (head.errtext_len < RESP_ERRTEXT_MAX)
        cmd->reply.errtext[head.errtext_len] = 0;
    in += head.errtext_len;
    if (head.host_len)
        memcpy(cmd->reply.redir.host, in, head.host_len);
    if (head.host_len < sizeof cmd->reply.redir.host)
        cmd->reply.redir.host[head.host_len] = 0;
    if (head.conn_id != p->last_id) { /* pipelined commands: often the same */
        p->last_id = head.conn_id;
        p->last_conn = map_find(p, head.conn_id);
    }
    cmd->conn = p->last_conn;
    cmd->reply.raw = NULL;
    if (head.has_raw) {
        cmd->reply.raw = w->raw + (head.raw_off & (w->raw_size - 1));
        w->m_raw_tail = head.raw_off + cmd->reply.raw_len;
    }
    return cmd;
}

/* Hand worker w's head event h to the analyzer. */
static void deliver(struct par *p, worker *w, const ev_hdr *h)
{
    const resp_sink *s = &p->o.sink;
    const uint8_t *body = (const uint8_t *)(h + 1);
    int64_t ts = h->ts_us;
    cap_conn *c;
    switch (p->discard ? EV_TIME : h->kind) {
    case EV_OPEN:
        c = conn_open_copy(p, (const cap_conn *)body);
        if (!c)
            p->m_oom = 1;
        else if (s->conn_open)
            s->conn_open(s->ctx, c);
        break;
    case EV_COMMAND: {
        const resp_command *cmd = unpack_command(p, w, body);
        if (s->command)
            s->command(s->ctx, cmd);
        break;
    }
    case EV_CLOSE:
        c = map_find(p, ((const cap_conn *)body)->id);
        if (!c)
            break; /* its OPEN found no memory */
        *c = *(const cap_conn *)body;
        if (s->conn_close)
            s->conn_close(s->ctx, c, (const resp_conn_stats *)(body + sizeof(cap_conn)));
        conn_close_copy(p, c);
        break;
    default:
        break;
    }
    w->m_tail += h->size;
    p->since_refresh++;
    if (p->o.tick && !p->discard)
        p->o.tick(p->o.tick_ctx, ts);
}

/* Tell the workers which events are done with, and see what they published.
 * wait: sleep first if nothing new was published. */
static void merger_refresh(struct par *p, int wait)
{
    int changed = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        for (unsigned i = 0; i < p->n; i++) {
            worker *w = &p->w[i];
            w->ev_tail = w->m_tail;
            w->raw_tail = w->m_raw_tail;
            if (w->space_waiting && w->m_tail >= w->wake_ev && w->m_raw_tail >= w->wake_raw)
                pthread_cond_signal(&w->space_cv);
            if (w->ev_published != w->m_head || w->watermark != w->m_watermark)
                changed = 1;
            w->m_head = w->ev_published;
            w->m_watermark = w->watermark;
        }
        if (changed || !wait)
            break;
        p->merger_waiting = 1;
        pthread_cond_wait(&p->out_cv, &p->mu);
        p->merger_waiting = 0;
        wait = 0; /* look again, then go back to merging */
    }
    pthread_mutex_unlock(&p->mu);
    p->since_refresh = 0;
    if (p->o.tick && !p->discard)
        p->o.tick(p->o.tick_ctx, 0);
}

/* The worker whose head event comes first in the one-thread order, if it
 * can be handed on now; NULL to wait. *idle: no worker has an event. */
static worker *next_worker(struct par *p, const ev_hdr **head, int *idle)
{
    worker *best = NULL;
    const ev_hdr *be = NULL;
    for (unsigned i = 0; i < p->n; i++) {
        worker *w = &p->w[i];
        const ev_hdr *e = head_event(w);
        if (!e)
            continue;
        if (!be || e->record < be->record || (e->record == be->record && e->rank < be->rank)) {
            best = w;
            be = e;
        }
    }
    *idle = best == NULL;
    *head = be;
    if (!best)
        return NULL;
    /* A worker with nothing waiting may still make an earlier event unless
     * it is past that record. */
    for (unsigned i = 0; i < p->n; i++) {
        worker *w = &p->w[i];
        if (w != best && w->m_tail == w->m_head && w->m_watermark < be->record)
            return NULL;
    }
    return best;
}

/* Key a < key b. */
static int key_less(uint64_t a_record, uint64_t a_rank, uint64_t b_record, uint64_t b_rank)
{
    return a_record < b_record || (a_record == b_record && a_rank < b_rank);
}

/* Hand on worker best's events, head h first, for as long as they come
 * before anything another worker has waiting or could still make: one
 * comparison an event instead of a look at every worker. */
static void deliver_run(struct par *p, worker *best, const ev_hdr *h)
{
    uint64_t bound_record = KEY_END, bound_rank = KEY_END;
    int bounded = 0;
    for (unsigned i = 0; i < p->n; i++) {
        worker *w = &p->w[i];
        const ev_hdr *e;
        uint64_t rec, rank;
        if (w == best)
            continue;
        e = head_event(w);
        if (e) {
            rec = e->record;
            rank = e->rank;
        } else if (w->m_watermark != KEY_END) {
            rec = w->m_watermark + 1; /* its next event is of a later record */
            rank = 0;
        } else {
            continue; /* finished, nothing left */
        }
        if (!bounded || key_less(rec, rank, bound_record, bound_rank)) {
            bound_record = rec;
            bound_rank = rank;
            bounded = 1;
        }
    }
    do {
        deliver(p, best, h);
        if (p->since_refresh >= MERGE_BATCH)
            return;
        h = head_event(best);
    } while (h && (!bounded || key_less(h->record, h->rank, bound_record, bound_rank)));
}

/* 1 when every worker has published everything up to `upto` and every
 * event was handed on. */
static int merged_upto(const struct par *p, uint64_t upto)
{
    for (unsigned i = 0; i < p->n; i++)
        if (p->w[i].m_watermark < upto || p->w[i].m_tail != p->w[i].m_head)
            return 0;
    return 1;
}

/* Merge until every event up to `upto` was handed on. final: upto is the end;
 * else the end of input (its record count is known once the reader is done). */
static void merge(struct par *p, int final)
{
    for (;;) {
        int idle;
        const ev_hdr *h;
        worker *w = next_worker(p, &h, &idle);
        if (w) {
            deliver_run(p, w, h);
            if (p->since_refresh >= MERGE_BATCH)
                merger_refresh(p, 0);
            continue;
        }
        if (idle) {
            uint64_t upto = KEY_END;
            int eof;
            pthread_mutex_lock(&p->mu);
            eof = p->eof;
            if (!final)
                upto = p->published;
            pthread_mutex_unlock(&p->mu);
            if ((final || eof) && merged_upto(p, upto))
                return;
        }
        merger_refresh(p, 1);
    }
}

/* ---------------------------------------------------------------- read-ahead */

/*
 * Read-ahead runs the tracker on the reader thread and resp and the analysis
 * on the calling thread. The tracker's events cross in the event ring, each
 * as it was made: an OPEN and a CLOSE with the connection as it is then, a
 * DATA with its bytes, a GAP with its length. The tracker frees (and
 * reuses) a connection after its CLOSE and writes its counters at every
 * record, so the calling thread never touches it: it keeps copies of the
 * open connections, which resp and the analyzer get instead (resp hangs its
 * state on copy->user). A copy is made at the OPEN, takes the CLOSE's
 * counters, and after every record that was a segment of its connection
 * takes the counters of then (RA_UPDATE, or appended to the record's DATA:
 * the analyzer, evicting a connection at its own cap, writes the counters
 * of that moment, as with one thread). Counters taken after the record are
 * exact because nothing reads a connection's counters during its own
 * record's events: the analyzer reads them at its CLOSE (which carries
 * them) and when it evicts it for another connection's OPEN or command,
 * and one record is a segment of one connection only. The reader numbers the open connections with small slots
 * (in cap_conn.user of its tracker's connections, which nothing else uses
 * there): the copy of slot i is the calling thread's copies[i], found
 * without a lookup. A slot is reused only after its CLOSE, which the
 * calling thread replays first.
 */

#define RA_BLOCK 256u              /* copies allocated at once */
#define RA_SHOW_EVERY 256u         /* events replayed between showing the tail */
#define RA_SHOW_REF_BYTES (256u << 10) /* ... or referenced bytes replayed */

typedef enum ra_kind {
    RA_OPEN = CAP_EV_OPEN,         /* body: cap_conn */
    RA_DATA = CAP_EV_DATA,         /* body: len bytes */
    RA_GAP = CAP_EV_GAP,           /* no body; arg: gap_len */
    RA_CLOSE = CAP_EV_CLOSE,       /* body: cap_conn */
    RA_UPDATE,                     /* body: the counters (RA_COUNTERS); arg: last_record */
    RA_DATA_REF,                   /* DATA, body: where its len bytes lie (a pointer) */
    RA_SKIP                        /* the rest of the ring is unused */
} ra_kind;

/* An event in the read-ahead ring: this header, then its body. */
struct ra_ev {
    uint32_t size;                 /* header and body, a multiple of EV_ALIGN */
    uint8_t kind;                  /* an ra_kind */
    uint8_t dir;                   /* the cap_event's dir */
    uint8_t reason;                /* CLOSE: a cap_close_reason; DATA (_REF):
                                      the cap_event's has_ack */
    uint8_t counters;              /* DATA (_REF): RA_UPDATE's body follows the
                                      body (padded), arg is last_record */
    uint32_t slot;                 /* the connection's slot */
    uint32_t len;                  /* DATA: bytes that follow (_REF: referenced) */
    int64_t ts_us;
    uint64_t arg;                  /* GAP: gap_len; UPDATE: last_record */
    int32_t ack_ahead;             /* DATA (_REF): the cap_event's ack_ahead */
};

/* The counters a record changes: cap_conn from last_us up to user (the
 * endpoints, id and first_us are fixed at the OPEN), and last_record. */
#define RA_COUNTERS_OFF offsetof(cap_conn, last_us)
#define RA_COUNTERS (offsetof(cap_conn, user) - RA_COUNTERS_OFF)
_Static_assert(offsetof(cap_conn, first_us) < RA_COUNTERS_OFF &&
                   offsetof(cap_conn, client) < RA_COUNTERS_OFF &&
                   offsetof(cap_conn, server) < RA_COUNTERS_OFF &&
                   offsetof(cap_conn, id) < RA_COUNTERS_OFF &&
                   offsetof(cap_conn, retransmits) < offsetof(cap_conn, user) &&
                   offsetof(cap_conn, last_record) > offsetof(cap_conn, user),
               "cap_conn's fields moved: update RA_UPDATE");

/* The slot the reader gave conn (its user is slot + 1); UINT32_MAX: none
 * (no memory for it). */
static uint32_t ra_slot_of(const cap_conn *conn)
{
    return conn->user ? (uint32_t)((uintptr_t)conn->user - 1) : UINT32_MAX;
}

/* A free slot for a connection opening (reader). 0, or -1 out of memory. */
static int ra_slot_take(struct par *p, uint32_t *slot)
{
    if (p->ra_n_free > 0) {
        *slot = p->ra_free[--p->ra_n_free];
        return 0;
    }
    if ((p->ra_slots & (RA_BLOCK - 1)) == 0) {
        /* the stack holds every slot at most: grow it with them */
        uint32_t *f = realloc(p->ra_free, (p->ra_slots + RA_BLOCK) * sizeof *f);
        if (!f)
            return -1;
        p->ra_free = f;
    }
    *slot = p->ra_slots++;
    return 0;
}

/*
 * References and shared reading. A DATA's bytes are copied into the ring,
 * except with one regular classic pcap file read in place, which the source
 * then reads in chunks (cap_source_chunks): 1 MiB chunks read with pread
 * into RA_KEEP_BUFFERS slots in turn, a record's bytes staying where they
 * are until their slot is read into again. A DATA whose bytes lie in the
 * record being tracked (in-order data, by far the most) crosses as a
 * pointer to them (RA_DATA_REF); bytes elsewhere (the tracker's reassembled
 * out-of-order data; libpcap's buffers of pcapng, several files or live)
 * are copied as before. Each chunk is read by whichever thread gets to it
 * first: the reader when the source needs it (ra_chunk), the calling
 * thread, a little ahead, when it has replayed everything and would wait
 * (ra_prefetch). A
 * slot is read into once the source has left its previous chunk behind
 * (two chunks on, the cut record copied out of it) and the calling thread
 * has replayed every event written before the source left it (ck_left).
 * Why: with large values (gen-1G-s1.pcap, 1 GB; resp skips the values by
 * length) the reader was the critical thread: the kernel's copy of the file
 * (~0.12 s of ~0.19 s for one thread) plus the tracker plus copying every
 * payload byte into the ring, while the calling thread had little to do.
 */

/* Whether chunk k's slot may be read into, the calling thread being done
 * with the events before ring position tail. Mutex held. */
static int ra_slot_free(const struct par *p, uint64_t k, uint64_t tail)
{
    if (k < RA_KEEP_BUFFERS)
        return 1; /* never used */
    return k + 3 <= p->ck_taken + RA_KEEP_BUFFERS &&
           tail >= p->ck_left[(k - RA_KEEP_BUFFERS) % RA_KEEP_BUFFERS];
}

/* Read chunk k, claimed by this thread (mutex held; released meanwhile). */
static void ra_fill(struct par *p, uint64_t k)
{
    int whole;
    p->ck_claimed[k % RA_KEEP_BUFFERS] = k + 1;
    pthread_mutex_unlock(&p->mu);
    whole = cap_source_fill_chunk(p->src, k);
    pthread_mutex_lock(&p->mu);
    p->ck_ready[k % RA_KEEP_BUFFERS] = k + 1;
    if (!whole)
        p->ck_short = 1;
}

/* cap_chunk_fn, on the reader thread: the source goes on in chunk k. Left
 * behind: chunk k - 1 (every event since is after ra_head now). Returns
 * once chunk k is read: by the calling thread already, or now by this one
 * (once its slot is free), or waits while the calling thread reads it. */
static void ra_chunk(void *ctx, uint64_t k)
{
    struct par *p = ctx;
    reader_show(p); /* the calling thread may start on what was read */
    pthread_mutex_lock(&p->mu);
    if (k > 0)
        p->ck_left[(k - 1) % RA_KEEP_BUFFERS] = p->ra_head;
    p->ck_taken = k + 1;
    while (p->ck_ready[k % RA_KEEP_BUFFERS] != k + 1) {
        int theirs = p->ck_claimed[k % RA_KEEP_BUFFERS] == k + 1;
        if (!theirs && ra_slot_free(p, k, p->ra_tail)) {
            ra_fill(p, k);
            break;
        }
        /* woken by ra_fetch once the tail passed ra_wake_at, or by the
         * calling thread's ra_prefetch when chunk k is read */
        p->ra_wake_at = theirs ? 0 : p->ck_left[(k - RA_KEEP_BUFFERS) % RA_KEEP_BUFFERS];
        p->reader_waiting = 1;
        pthread_cond_wait(&p->room_cv, &p->mu);
        p->reader_waiting = 0;
    }
    p->ra_tail_seen = p->ra_tail;
    pthread_mutex_unlock(&p->mu);
}

/* On the calling thread, with nothing to replay: read the first chunk not
 * yet claimed from RA_PREFETCH_FROM chunks after the source's on, when its
 * slot is free. Not the source's next chunk, which it would often need
 * while this thread is still reading it (a read of 1 MiB takes ~0.12 ms,
 * the tracker's work on it less): the reader reads it, and the reading
 * shares itself out by who has time. 1 when it read one. */
static int ra_prefetch(struct par *p)
{
    int did = 0;
    if (!p->ra_keep)
        return 0;
    pthread_mutex_lock(&p->mu);
    for (uint64_t k = p->ck_taken + RA_PREFETCH_FROM;
         !did && !p->ck_short && !p->eof && ra_slot_free(p, k, p->ra_c_tail); k++) {
        if (p->ck_claimed[k % RA_KEEP_BUFFERS] == k + 1)
            continue; /* read or being read */
        ra_fill(p, k);
        if (p->reader_waiting)
            pthread_cond_signal(&p->room_cv);
        did = 1;
    }
    pthread_mutex_unlock(&p->mu);
    return did;
}

/* Wait until the calling thread has freed room for `need` more bytes
 * (reader). Publishes what was written first. */
static void ra_wait_room(struct par *p, size_t need)
{
    reader_show(p);
    pthread_mutex_lock(&p->mu);
    p->ra_wake_at = wake_tail(p->ra_head, need, p->ra_size, p->ra_head);
    while (p->ra_head + need - p->ra_tail > p->ra_size) {
        p->reader_waiting = 1;
        pthread_cond_wait(&p->room_cv, &p->mu);
        p->reader_waiting = 0;
    }
    p->ra_tail_seen = p->ra_tail;
    pthread_mutex_unlock(&p->mu);
}

/* Make the ring at least 2 * size, once the calling thread is done with
 * everything in it. 0, or -1 out of memory. */
static int ra_grow(struct par *p, size_t size)
{
    size_t want = pow2_at_least(2 * size);
    uint8_t *r;
    if (p->ra_head != p->ra_tail_seen)
        ra_wait_room(p, p->ra_size); /* all of it: the ring empty */
    r = malloc(want);
    if (!r)
        return -1;
    pthread_mutex_lock(&p->mu);
    free(p->ra_ring);
    p->ra_ring = r;
    p->ra_size = want;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* Room for an event of size bytes (a multiple of EV_ALIGN), contiguous in
 * the ring, its header filled in (reader). NULL out of memory. */
static ra_ev *ra_begin(struct par *p, ra_kind kind, uint32_t slot, const cap_event *ev,
                       size_t size)
{
    size_t phys, rest;
    ra_ev *h;
    if (size > p->ra_size / 2 && ra_grow(p, size) != 0)
        return NULL;
    phys = (size_t)(p->ra_head & (p->ra_size - 1));
    rest = p->ra_size - phys;
    if (size > rest) {
        /* Skip the end of the ring: events stay contiguous. */
        if (p->ra_head + rest + size - p->ra_tail_seen > p->ra_size)
            ra_wait_room(p, rest + size);
        if (rest >= sizeof(ra_ev)) {
            h = (ra_ev *)(p->ra_ring + phys);
            h->kind = RA_SKIP;
            h->size = (uint32_t)rest;
        }
        p->ra_head += rest;
        phys = 0;
    } else if (p->ra_head + size - p->ra_tail_seen > p->ra_size) {
        ra_wait_room(p, size);
    }
    h = (ra_ev *)(p->ra_ring + phys);
    p->ra_last = h;
    p->ra_last_at = p->ra_head;
    memset(h, 0, sizeof *h);
    h->size = (uint32_t)size;
    h->kind = (uint8_t)kind;
    h->slot = slot;
    if (ev) {
        h->dir = (uint8_t)ev->dir;
        h->reason = (uint8_t)ev->reason;
        h->ts_us = ev->ts_us;
    }
    return h;
}

static void ra_replay_from(struct par *p, uint64_t from);

/* The event is written. Joined (the end of input, on the calling thread):
 * replay it now. */
static void ra_end(struct par *p, const ra_ev *h)
{
    uint64_t from = p->ra_head;
    p->ra_head += h->size;
    if (p->ra_direct) {
        ra_replay_from(p, from);
        p->ra_tail_seen = p->ra_tail = p->ra_head;
    }
}

/* The reader ran out of memory: stop reading (par_run reports it). */
static void ra_oom(struct par *p)
{
    p->rd_oom = 1;
    if (!p->ra_direct)
        cap_source_break(p->src);
}

/* OPEN and CLOSE: the connection as it is now. */
static void ra_conn_event(struct par *p, const cap_event *ev, uint32_t slot)
{
    ra_ev *h = ra_begin(p, (ra_kind)ev->kind, slot, ev, ev_round(sizeof(ra_ev) + sizeof(cap_conn)));
    cap_conn *c;
    if (!h) {
        ra_oom(p);
        return;
    }
    c = (cap_conn *)(h + 1);
    *c = *ev->conn;
    c->user = NULL;
    ra_end(p, h);
}

/* Whether a DATA's bytes lie in the record being tracked, which the source
 * keeps (see "References"): then they cross as a pointer. */
static int ra_in_record(const struct par *p, const cap_event *ev)
{
    uintptr_t d = (uintptr_t)ev->data;
    return ev->len > 0 && d >= p->ra_rec_lo && d < p->ra_rec_hi &&
           ev->len <= p->ra_rec_hi - d;
}

/* The tracker's callback, on the reader thread (joined: on the calling
 * thread): the event into the ring. */
static void ra_on_event(void *ctx, const cap_event *ev)
{
    struct par *p = ctx;
    uint32_t slot;
    ra_ev *h;
    if (ev->kind == CAP_EV_OPEN) {
        if (ra_slot_take(p, &slot) != 0) {
            ra_oom(p); /* no slot: its events are left out */
            return;
        }
        ev->conn->user = (void *)((uintptr_t)slot + 1);
    }
    slot = ra_slot_of(ev->conn);
    if (slot == UINT32_MAX)
        return;
    switch (ev->kind) {
    case CAP_EV_OPEN:
        ra_conn_event(p, ev, slot);
        break;
    case CAP_EV_DATA:
        if (ra_in_record(p, ev)) {
            h = ra_begin(p, RA_DATA_REF, slot, ev, ev_round(sizeof(ra_ev) + sizeof ev->data));
            if (h)
                memcpy(h + 1, &ev->data, sizeof ev->data);
        } else {
            h = ra_begin(p, RA_DATA, slot, ev, ev_round(sizeof(ra_ev) + ev->len));
            if (h)
                memcpy(h + 1, ev->data, ev->len);
        }
        if (!h) {
            ra_oom(p);
            return;
        }
        h->len = (uint32_t)ev->len;
        h->reason = ev->has_ack;
        h->ack_ahead = ev->ack_ahead;
        ra_end(p, h);
        break;
    case CAP_EV_GAP:
        h = ra_begin(p, RA_GAP, slot, ev, sizeof(ra_ev));
        if (!h) {
            ra_oom(p);
            return;
        }
        h->arg = ev->gap_len;
        ra_end(p, h);
        break;
    case CAP_EV_CLOSE:
        ra_conn_event(p, ev, slot);
        p->ra_free[p->ra_n_free++] = slot; /* the tracker clears user */
        break;
    }
}

/* Append the counters of c to the record's latest event when that is a
 * DATA of the same connection not yet published, with room right after it
 * in the ring: 1, or 0 (an RA_UPDATE it is). Most records make one DATA:
 * one event per record instead of two (real-150k callgrind: the calling
 * thread 1,095.6 -> 1,087.2 million instructions, the reader 139.7 ->
 * 135.1). */
static int ra_update_in_data(struct par *p, const cap_conn *c, uint32_t slot)
{
    ra_ev *h = p->ra_last;
    size_t phys = (size_t)(p->ra_head & (p->ra_size - 1));
    size_t need = ev_round(RA_COUNTERS);
    if (!h || (h->kind != RA_DATA && h->kind != RA_DATA_REF) || h->slot != slot ||
        p->ra_last_at < p->ra_shown ||
        phys == 0 || phys + need > p->ra_size ||
        p->ra_head + need - p->ra_tail_seen > p->ra_size)
        return 0;
    memcpy(p->ra_ring + phys, (const uint8_t *)c + RA_COUNTERS_OFF, RA_COUNTERS);
    h->counters = 1;
    h->arg = c->last_record;
    h->size += (uint32_t)need;
    p->ra_head += need;
    return 1;
}

/* After a record: the counters of the connection it was a segment of. */
static void ra_update(struct par *p)
{
    const cap_conn *c = cap_tracker_touched(p->ra_tracker);
    uint32_t slot;
    ra_ev *h;
    if (!c || (slot = ra_slot_of(c)) == UINT32_MAX || ra_update_in_data(p, c, slot))
        return;
    h = ra_begin(p, RA_UPDATE, slot, NULL, ev_round(sizeof(ra_ev) + RA_COUNTERS));
    if (!h) {
        ra_oom(p);
        return;
    }
    h->arg = c->last_record;
    memcpy(h + 1, (const uint8_t *)c + RA_COUNTERS_OFF, RA_COUNTERS);
    ra_end(p, h);
}

/* cap_record_fn of read-ahead: the record through the tracker (NULL: a live
 * read returned, hand on what there is). */
static void ra_record(void *ctx, const cap_record *rec)
{
    struct par *p = ctx;
    if (!rec) {
        if (p->ra_head != p->ra_shown)
            reader_show(p);
        return;
    }
    p->rd_pos++;
    p->ra_last = NULL;
    if (p->ra_keep) { /* its bytes may cross as references */
        p->ra_rec_lo = (uintptr_t)rec->data;
        p->ra_rec_hi = p->ra_rec_lo + rec->caplen;
    }
    cap_tracker_packet_at(p->ra_tracker, p->rd_pos, rec->linktype, rec->ts_us, rec->data,
                          rec->caplen, rec->wirelen);
    p->ra_rec_lo = p->ra_rec_hi = 0; /* events made later (the end) copy */
    ra_update(p);
    if (p->rd_pos - p->rd_shown >= IN_BATCH || p->ra_head - p->ra_shown >= p->ra_size / 4)
        reader_show(p);
}

/* The calling thread's copy of slot; create: make room for it (OPEN).
 * NULL when there is none (its OPEN found no memory). */
static cap_conn *ra_copy(struct par *p, uint32_t slot, int create)
{
    size_t b = slot / RA_BLOCK;
    if (b >= p->ra_n_blocks || !p->ra_copies[b]) {
        cap_conn **blocks;
        if (!create)
            return NULL;
        if (b >= p->ra_n_blocks) {
            blocks = realloc(p->ra_copies, (b + 1) * sizeof *blocks);
            if (!blocks)
                return NULL;
            for (size_t i = p->ra_n_blocks; i <= b; i++)
                blocks[i] = NULL;
            p->ra_copies = blocks;
            p->ra_n_blocks = b + 1;
        }
        p->ra_copies[b] = malloc(RA_BLOCK * sizeof(cap_conn));
        if (!p->ra_copies[b])
            return NULL;
    }
    return &p->ra_copies[b][slot % RA_BLOCK];
}

/* Replay one event: to resp, as the tracker's callback does with one
 * thread, then the periodic work. */
static void ra_replay(struct par *p, const ra_ev *h)
{
    const uint8_t *body = (const uint8_t *)(h + 1);
    cap_conn *c = ra_copy(p, h->slot, h->kind == RA_OPEN);
    cap_event ev;
    void *user;
    if (!c) {
        if (h->kind == RA_OPEN)
            p->m_oom = 1;
        return;
    }
    if (h->kind == RA_UPDATE) {
        memcpy((uint8_t *)c + RA_COUNTERS_OFF, body, RA_COUNTERS);
        c->last_record = h->arg;
        return;
    }
    memset(&ev, 0, sizeof ev);
    ev.kind = (cap_ev_kind)h->kind;
    ev.conn = c;
    ev.dir = (cap_dir)h->dir;
    ev.ts_us = h->ts_us;
    switch (h->kind) {
    case RA_OPEN:
    case RA_CLOSE:
        user = h->kind == RA_OPEN ? NULL : c->user; /* resp's state stays */
        memcpy(c, body, sizeof *c);
        c->user = user;
        ev.reason = (cap_close_reason)h->reason;
        break;
    case RA_DATA:
        ev.data = body;
        ev.len = h->len;
        ev.has_ack = h->reason;
        ev.ack_ahead = h->ack_ahead;
        break;
    case RA_DATA_REF:
        ev.kind = CAP_EV_DATA;
        memcpy(&ev.data, body, sizeof ev.data);
        ev.len = h->len;
        ev.has_ack = h->reason;
        ev.ack_ahead = h->ack_ahead;
        break;
    case RA_GAP:
        ev.gap_len = h->arg;
        break;
    default:
        return;
    }
    resp_on_capture_event(p->w[0].rp, &ev);
    if (p->o.tick)
        p->o.tick(p->o.tick_ctx, ev.ts_us);
    if (h->counters) { /* see ra_update_in_data */
        size_t at = ev_round(h->kind == RA_DATA ? h->len : sizeof ev.data);
        memcpy((uint8_t *)c + RA_COUNTERS_OFF, body + at, RA_COUNTERS);
        c->last_record = h->arg;
    }
}

/* The event at ring position *pos, past a skipped ring end, moving *pos past
 * it; NULL when none is left before end. */
static const ra_ev *ra_next(const uint8_t *ring, size_t size, uint64_t *pos, uint64_t end)
{
    while (*pos < end) {
        size_t phys = (size_t)(*pos & (size - 1));
        size_t rest = size - phys;
        const ra_ev *h;
        if (rest < sizeof(ra_ev)) {
            *pos += rest; /* too short for a header: skipped */
            continue;
        }
        h = (const ra_ev *)(ring + phys);
        *pos += h->size;
        if (h->kind != RA_SKIP)
            return h;
    }
    return NULL;
}

/* Joined: replay the events written from `from` on, at once. */
static void ra_replay_from(struct par *p, uint64_t from)
{
    const ra_ev *h;
    while ((h = ra_next(p->ra_ring, p->ra_size, &from, p->ra_head)) != NULL)
        ra_replay(p, h);
}

/* Show the tail and take the events published since (calling thread).
 * wait: sleep until there are some (or the input ended). 1 when there are
 * events to replay, 0 when the input ended and every event was replayed. */
static int ra_fetch(struct par *p, int wait)
{
    int more;
    pthread_mutex_lock(&p->mu);
    p->ra_tail = p->ra_c_tail;
    if (p->reader_waiting && p->ra_tail >= p->ra_wake_at)
        pthread_cond_signal(&p->room_cv);
    while (wait && p->ra_published == p->ra_c_tail && !p->eof) {
        p->in_waiters++;
        pthread_cond_wait(&p->in_cv, &p->mu);
        p->in_waiters--;
    }
    p->ra_c_head = p->ra_published;
    p->ra_c_ring = p->ra_ring;
    p->ra_c_mask = p->ra_size - 1;
    more = p->ra_c_head > p->ra_c_tail;
    pthread_mutex_unlock(&p->mu);
    p->ra_c_events = 0;
    p->ra_c_ref_bytes = 0;
    return more;
}

/* Read-ahead on the calling thread: replay every event the reader puts in
 * the ring, in order. Until the end of input. */
static void read_ahead(struct par *p)
{
    for (;;) {
        const ra_ev *h;
        if (p->ra_c_tail == p->ra_c_head && !ra_fetch(p, 0)) {
            if (ra_prefetch(p)) /* rather than wait: see "References" */
                continue;
            if (!ra_fetch(p, 1))
                break;
        }
        h = ra_next(p->ra_c_ring, p->ra_c_mask + 1, &p->ra_c_tail, p->ra_c_head);
        if (h) {
            ra_replay(p, h);
            if (h->kind == RA_DATA_REF)
                p->ra_c_ref_bytes += h->len;
        }
        /* the reader may reuse what was replayed: the ring, and the file
         * buffers once a good part of one was replayed */
        if (++p->ra_c_events >= RA_SHOW_EVERY || p->ra_c_ref_bytes >= RA_SHOW_REF_BYTES)
            ra_fetch(p, 0);
    }
}

/* ---------------------------------------------------------------- lifecycle */

/* Share out the caps that bound the whole capture and resp state (not the
 * per-connection ones): each worker holds 1/N of it. */
static void worker_caps(const struct par *p, cap_config *cc, resp_config *rc)
{
    *cc = p->o.cap;
    *rc = p->o.resp;
    cc->servers = p->servers; /* NULL with read-ahead: the tracker's own */
    cc->max_connections = (cc->max_connections + p->n - 1) / p->n;
    cc->ooo_bytes_total = (cc->ooo_bytes_total + p->n - 1) / p->n;
    rc->max_inflight_total = (rc->max_inflight_total + p->n - 1) / p->n;
    rc->max_kept_total = (rc->max_kept_total + p->n - 1) / p->n;
}

/* Create worker i's stages and rings (read-ahead: no thread of its own,
 * its events not packed). 0, or -1 out of memory. */
static int worker_init(struct par *p, unsigned i)
{
    worker *w = &p->w[i];
    resp_sink sink = {.ctx = w, .conn_open = w_conn_open, .command = w_command,
                      .conn_close = w_conn_close};
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
    worker_caps(p, &cc, &rc);
    if (p->read_ahead) {
        /* resp straight to the analyzer, on the calling thread: nothing
         * packed; the tracker is the reader's (see "read-ahead") */
        w->rp = resp_new(&rc, &p->o.sink);
        w->tracker = w->rp ? cap_tracker_new(&cc, ra_on_event, p) : NULL;
        p->ra_tracker = w->tracker;
    } else {
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
        p->read_ahead = 1; /* see the top of the file */
        p->n = 1;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->in_cv, NULL);
    pthread_cond_init(&p->room_cv, NULL);
    pthread_cond_init(&p->out_cv, NULL);
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
    if (p->read_ahead) /* see "References" */
        p->ra_keep = cap_source_chunks(src, RA_KEEP_BUFFERS, ra_chunk, p);
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
    free(p);
}
