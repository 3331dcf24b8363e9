/*
 * internal.h - what the files of run/ share (see run/run.h for the list):
 * the runner (struct par), a sharded worker, the rings' sizes, the event
 * formats, and the small helpers both ends of a ring use (inline: they run
 * once per event or record).
 *
 * Synchronisation: one mutex (par.mu) and condition variables, taken once
 * per batch (IN_BATCH records, or a part of an event ring), never per
 * record or event. Ring contents are written before the count that
 * publishes them and read after it, under the mutex. Fields are grouped by
 * the thread that writes them, each group on cache lines of its own (a line
 * written by one thread and read by another moves between cores).
 *
 * Memory is bounded: the input ring (records and bytes), read-ahead's event
 * ring and file chunks (RA_KEEP_BUFFERS), each worker's event ring and its
 * ring of kept raw replies (CLUSTER SLOTS/SHARDS/NODES) have fixed sizes
 * (the input and read-ahead rings grow only to twice a record or event
 * larger than half of them); a full ring makes its producer wait. The
 * copies of open connections number the live connections of the
 * tracker(s).
 */
#ifndef SLOTSCOPE_RUN_INTERNAL_H
#define SLOTSCOPE_RUN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
_Static_assert(MAX_WORKERS <= CAP_PARTITIONS, "a worker per partition at most");
/* read-ahead: chunks of the file kept in memory (chunks.c). The reader is
 * woken when half of them are free: the other half (1.5 MiB) is what the
 * calling thread replays meanwhile, a few milliseconds, while a reader
 * that slept on a busy machine waits for its core; too many chunks and the
 * kernel's copies land in chunks no longer in cache
 * (bench/results/2026-12-01-threads-history.txt). */
#ifndef PAR_TINY_RINGS
#define RA_KEEP_BUFFERS 12u
#else
#define RA_KEEP_BUFFERS 4u
#endif
/* read-ahead's event ring when DATA refers to the chunks instead of
 * carrying the bytes: the events of about as many records as the chunks
 * hold (the reader is woken when half of it is free), and the ring stays in
 * the caches (a power of two, at most IN_BYTES) */
#ifndef PAR_TINY_RINGS
#define RA_REF_RING (1u << 20)
#else
#define RA_REF_RING (8u << 10)
#endif
#define RA_PREFETCH_FROM 2u        /* the calling thread reads chunks this far on */

typedef struct ra_ev ra_ev;     /* read-ahead's events (readahead.c) */

/* A record in the input ring. */
typedef struct in_rec {
    int64_t ts_us;
    uint64_t off;                  /* where its bytes start (bytes ever reserved) */
    uint32_t caplen, wirelen;
    int32_t linktype;
    uint32_t worker;               /* whose share it is */
} in_rec;

/* The counters a record changes: cap_conn from last_us up to user (the
 * endpoints, id and first_us are fixed at the OPEN), and last_record. Both
 * layouts hand them over after every record, so that the copies of the
 * connections the analyzer gets are as fresh as one tracker's. */
#define CONN_COUNTERS_OFF offsetof(cap_conn, last_us)
#define CONN_COUNTERS (offsetof(cap_conn, user) - CONN_COUNTERS_OFF)
_Static_assert(offsetof(cap_conn, first_us) < CONN_COUNTERS_OFF &&
                   offsetof(cap_conn, client) < CONN_COUNTERS_OFF &&
                   offsetof(cap_conn, server) < CONN_COUNTERS_OFF &&
                   offsetof(cap_conn, id) < CONN_COUNTERS_OFF &&
                   offsetof(cap_conn, retransmits) < offsetof(cap_conn, user) &&
                   offsetof(cap_conn, last_record) > offsetof(cap_conn, user),
               "cap_conn's fields moved: update CONN_COUNTERS");

typedef enum ev_kind {
    EV_OPEN = 0,                   /* body: cap_conn */
    EV_COMMAND,                    /* body: cmd_head, then the packed command */
    EV_CLOSE,                      /* body: cap_conn, resp_conn_stats */
    EV_UPDATE,                     /* body: ev_counters */
    EV_TIME,                       /* live: the capture time moved on; no body */
    EV_BUS,                        /* body: bus_head; the message's bytes in the
                                      raw ring */
    EV_SKIP                        /* the rest of the ring is unused */
} ev_kind;

/* An event in a worker's event ring: this header, then its body. */
typedef struct ev_hdr {
    uint64_t record;               /* number of the record that caused it, KEY_END */
    uint64_t rank;                 /* see merge.c, "The order of events" */
    int64_t ts_us;                 /* capture time of that record */
    uint32_t size;                 /* header and body, a multiple of EV_ALIGN */
    uint16_t kind;                 /* an ev_kind */
    uint16_t counters;             /* OPEN, COMMAND: an ev_counters ends the body */
} ev_hdr;

/* A connection's counters after a record of its own: an EV_UPDATE, or
 * appended to the record's latest event (shard.c, worker_update). */
typedef struct ev_counters {
    uint64_t conn_id;
    uint64_t last_record;
    uint8_t counters[CONN_COUNTERS];
} ev_counters;
_Static_assert(sizeof(ev_counters) % EV_ALIGN == 0, "ev_counters keeps events aligned");

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

/* A bus message (resp_sink.bus_message): the bytes it was decoded from go
 * to the raw ring and are decoded again by the merger, as bus/ did. */
typedef struct bus_head {
    uint64_t conn_id;
    uint64_t frame;
    int64_t ts_us;
    uint64_t raw_off;              /* where its bytes are in the raw ring */
    uint32_t raw_len;
    uint8_t dir;
    uint8_t whole;                 /* the whole message (else its header) */
    uint8_t has_raw;               /* 0: longer than the raw ring allows (only
                                      with PAR_TINY_RINGS): not handed on */
    uint8_t pad;
} bus_head;

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
    int hot;                       /* the analyzer's cap may be reached: counters
                                      cross after every record (worker_update) */
    uint64_t seen_record, seen_open; /* the merger's, as last seen */
    ev_hdr *last_ev;               /* the record's latest event (NULL: none yet) */
    uint64_t last_ev_at;           /* ... where it starts */
    uint64_t last_ev_conn;         /* ... the id of its connection (0: none) */

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
                                      0's resp on the calling thread (run.c) */
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
    pthread_cond_t proof_cv;       /* a tracker awaiting proofs: the others
                                      passed more records (shard.c,
                                      readahead.c: *_await_proofs) */

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
    int proof_waiters;             /* trackers waiting on proof_cv */
    uint64_t beats;                /* live reads that brought nothing (reader_beat) */
    cap_input_info *inputs;        /* the reader's copy of the inputs */
    size_t n_inputs;
    uint64_t done_bytes, total_bytes, packets;
    int rd_oom;                    /* the reader ran out of memory */
    uint64_t m_pub_record;         /* the merger handed on events up to this record ... */
    uint64_t m_pub_open;           /* ... with this many copies open then */

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
    uint64_t m_record;             /* the record of the latest event handed on */
    resp_command cmd;              /* the command being handed on, unpacked */
    uint64_t last_id;              /* the connection last looked up (0: none) */
    cap_conn *last_conn;
    int discard;                   /* being freed unfinished: no more events */
    int joined;

    /* read-ahead (readahead.c, chunks.c) */
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
    int ra_keep;                   /* the source reads in chunks (chunks.c) */
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

/* Smallest power of two >= n (n <= 2^62). */
static inline size_t pow2_at_least(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* The oldest input position a worker still needs. Mutex held. */
static inline uint64_t oldest_in_use(const struct par *p)
{
    uint64_t oldest = p->rd_pos;
    for (unsigned i = 0; i < p->n; i++)
        if (p->w[i].consumed < oldest)
            oldest = p->w[i].consumed;
    return oldest;
}

/* The tail a ring must reach for `need` more bytes after head, plus a
 * quarter of the ring so that a wait is worth its wake-up, but no further
 * than `most` (everything published). */
static inline uint64_t wake_tail(uint64_t head, size_t need, size_t size, uint64_t most)
{
    uint64_t t = head + need > size ? head + need - size : 0;
    t += size / 4;
    return t < most ? t : most;
}

/* Size rounded up to EV_ALIGN. */
static inline size_t ev_round(size_t size)
{
    return (size + EV_ALIGN - 1) & ~(size_t)(EV_ALIGN - 1);
}

/* Kept bytes of argument i, of the first key. */
static inline size_t arg_kept(const resp_request *r, unsigned i)
{
    return r->arg_len[i] < RESP_ARG_PREFIX ? r->arg_len[i] : RESP_ARG_PREFIX;
}
static inline size_t key0_kept(const resp_request *r)
{
    return r->key0_len < RESP_ARG_PREFIX ? r->key0_len : RESP_ARG_PREFIX;
}

/* Bytes a kept text of len bytes takes in a packed command: 0, 16, 32 or
 * 64 (RESP_ARG_PREFIX), what copy_text copies. */
static inline size_t text_padded(size_t len)
{
    return len == 0 ? 0 : len <= 16 ? 16 : len <= 32 ? 32 : RESP_ARG_PREFIX;
}

/* Copy a kept text of len bytes (<= RESP_ARG_PREFIX) as text_padded(len)
 * bytes: at most three vector moves of constant size, where a copy of a
 * variable length becomes a loop over bytes or a call. Both sides have room
 * for the padded length (a text array of RESP_ARG_PREFIX bytes, or its
 * padded place in the ring); the bytes past len mean nothing, as in resp's
 * own commands. */
static inline void copy_text(void *dst, const void *src, size_t len)
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
static inline unsigned text_lengths(const resp_request *r, uint8_t kept[RESP_ARG_KEEP + 1],
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


/* ---------------------------------------------------------------- between the files */

/* run.c: publish what the reader wrote (records, or read-ahead's events),
 * wake the threads waiting for it, serve the calling thread's requests. */
void reader_show(struct par *p);
/* run.c: a live read returned with nothing new: serve the requests and wake
 * the calling thread, so that its tick (the wall clock's work) comes on an
 * idle link too. */
void reader_beat(struct par *p);

/* shard.c: the reader's cap_record_fn (records into the input ring), a
 * worker's thread, the resp_sink that packs a worker's events. */
void reader_record(void *ctx, const cap_record *rec);
void *worker_main(void *arg);
resp_sink worker_sink(worker *w);
void worker_await_proofs(void *ctx, uint64_t before);

/* merge.c: merge the workers' events until everything up to the end of
 * input (final 0) or the end (final 1) was handed on. */
void merge(struct par *p, int final);

/* readahead.c: the reader's cap_record_fn, the tracker's callback, and the
 * calling thread's replay until the end of input. */
void ra_record(void *ctx, const cap_record *rec);
void ra_on_event(void *ctx, const cap_event *ev);
void ra_await_proofs(void *ctx, uint64_t before);
void read_ahead(struct par *p);

/* chunks.c: the source goes on in chunk k (cap_chunk_fn, reader); the
 * calling thread reads a chunk ahead instead of waiting (1 when it did). */
void ra_chunk(void *ctx, uint64_t k);
int ra_prefetch(struct par *p);

#endif /* SLOTSCOPE_RUN_INTERNAL_H */
