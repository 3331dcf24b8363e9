/*
 * resp_internal.h - the pairing's state, shared by the files of resp/ that
 * pair requests with replies (not a public header).
 *
 *   decode.h      the two decoders and what they hand out (decode_req.c,
 *                 decode_rep.c, resync.c, shape.c): read it first
 *   pair.c        per-connection FIFO pairing (with modes.c, ring.c, loss.c,
 *                 conn.c; their shared part: pair_internal.h)
 *   proofs.c      the endpoints a command proves to serve, noted for the
 *                 capture layer's orientation (resp_config.servers)
 *   bus.c         cluster-bus connections found among the RESP ones
 *
 * Spec: https://redis.io/docs/latest/develop/reference/protocol-spec/
 */
#ifndef SLOTSCOPE_RESP_INTERNAL_H
#define SLOTSCOPE_RESP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "resp/decode.h"
#include "resp/resp.h"

/* ---------------------------------------------------------------- requests */

/* In-flight FIFOs (ring.c) are made of pages of RQ_PAGE bytes, taken from
 * and given back to the pipeline's pool: a FIFO never resizes, it holds
 * the pages its live span covers. The pool keeps at most RQ_POOL_KEEP
 * pages, or as many as are in use if more (the rest are freed): 4 MiB, so
 * that the queues of a lossy capture, deep until a loss empties them at
 * once and deep again soon after, take their pages back from the pool,
 * not from malloc. */
#define RQ_PAGE_SHIFT 10
#define RQ_PAGE (1u << RQ_PAGE_SHIFT)
#define RQ_POOL_KEEP 4096

/* A FIFO of bytes in pages. Positions count the bytes ever appended, mod
 * 2^32 (a multiple of RQ_PAGE); the pages held cover [head, end), end a
 * page boundary at or after tail. page[] is indexed by page number
 * (position / RQ_PAGE) mod cap, so a page never moves. */
typedef struct rq_pages {
    uint8_t **page;
    uint32_t cap;             /* entries of page[]: a power of two, or 0 */
    uint32_t head;            /* position of the first byte held */
    uint32_t tail;            /* position after the last */
    uint32_t end;             /* position after the pages held */
} rq_pages;

/* The request being decoded: the command event it becomes, plus the
 * pairing facts worked out when it is complete (pair.c). The decoder
 * writes into one of the pipeline's whole entries when the connection can
 * take one (rc_conn.cur): queued, its slot then points to it and the sink
 * is handed its cmd as it is. Otherwise it writes into the connection's
 * stage, and pairing packs that into an rq_slot and its text. Either way
 * the slot holds the pairing facts (the same field names). */
typedef struct rq_entry {
    uint32_t nreply;         /* replies still expected (0: none by design) */
    uint8_t kind;            /* RQK_* in pair_internal.h */
    uint8_t keep;            /* keep the raw reply (resp_keep_reply) */
    uint8_t got_reply;       /* subscribe family: a confirmation arrived */
    uint8_t dynamic;         /* unsubscribe from all: count unknown in advance */
    uint8_t sub_word;        /* subscribe family: which confirmation word */
    uint8_t hello_proto;     /* HELLO: requested protocol (0 none) */
    uint8_t uncertain;       /* queued while the pairing was unknown */
    uint8_t name_len;        /* strlen(cmd.req.name), set with the name */
    uint8_t tx;              /* EXEC of a transaction that holds CLIENT REPLY
                                or HELLO: TXF_* in pair_internal.h (0 otherwise) */
    uint8_t after_loss;      /* requests were lost just before it (a request
                                gap or garbage): resp_command.requests_lost */
    uint64_t req_end;        /* request stream position after its last byte
                                (decoder offset plus rc_conn.rq_lost_bytes):
                                a reply whose sender had not acknowledged it
                                cannot answer it (0 for a lost request) */
    union {
        int64_t first_reply_us; /* subscribe family, and an EXEC answered by
                                   loose replies: the first one's start */
        struct {
            uint32_t queued;    /* EXEC with TXF_TRIM: the count its array */
            uint32_t sent;      /* declares, and the elements it carries */
        } tx_elems;
    };
    resp_command cmd;        /* request filled in; its reply: a whole
                                entry's is copied in when it is paired,
                                the stage's is where the connection's
                                replies are decoded (rc_conn.stage) */
    uint16_t whole;          /* a whole entry: 1 + its index in
                                resp_pipeline.whole (rq_slot.whole); 0 for
                                the stage */
} rq_entry;

/* One in-flight request: two cache lines. Its first 32 bytes are those of
 * rq_entry (the pairing facts, same names), copied as one block. The rest
 * is a packed request's (whole: 0): the request's fixed fields as two
 * blocks of resp_request, copied as they are (req_time: start_us, ts_us,
 * start_frame; req_facts: argc up to the argument prefixes), and its text
 * (name, kept arguments, first key) in the connection's text FIFO
 * (rc_conn.text). The prefixes are 64-byte arrays of which a few bytes are
 * used, and a lossy reply stream holds a few hundred requests per
 * connection. A slot with a whole entry holds its pairing facts and
 * whole only (the entry holds the rest). */
#define RQ_PAIRING_BYTES 32
#define RQ_TIME_BYTES (offsetof(resp_request, name) - offsetof(resp_request, start_us))
#define RQ_FACTS_BYTES (offsetof(resp_request, args) - offsetof(resp_request, argc))
typedef struct rq_slot {
    _Alignas(64) uint32_t nreply;
    uint8_t kind, keep, got_reply, dynamic, sub_word, hello_proto, uncertain, name_len, tx;
    uint8_t after_loss;
    uint8_t in_multi;        /* resp_command.in_multi (packed) */
    uint8_t key0_dup;        /* key0 is args[0] (same kept bytes): not stored twice */
    uint64_t req_end;        /* as rq_entry (also resp_request.end_pos) */
    union {
        int64_t first_reply_us;
        struct {
            uint32_t queued, sent;
        } tx_elems;
    };
    uint16_t text_len;       /* its bytes in the text FIFO (padding included) */
    uint16_t whole;          /* 1 + the index of its whole entry in
                                resp_pipeline.whole (no text then), 0: packed */
    uint32_t text_pos;       /* where its text starts in the FIFO */
    uint64_t seq;            /* resp_command.seq (packed) */
    uint8_t req_time[24];    /* resp_request from start_us to name */
    uint8_t req_facts[56];   /* resp_request from argc to args */
} rq_slot;
_Static_assert(sizeof(rq_slot) == 128, "an in-flight slot is two cache lines");
_Static_assert(offsetof(rq_slot, req_end) == offsetof(rq_entry, req_end) &&
                   offsetof(rq_slot, first_reply_us) == offsetof(rq_entry, first_reply_us) &&
                   offsetof(rq_slot, tx) == offsetof(rq_entry, tx) &&
                   offsetof(rq_slot, after_loss) == offsetof(rq_entry, after_loss) &&
                   offsetof(rq_entry, first_reply_us) + 8 == RQ_PAIRING_BYTES &&
                   offsetof(rq_slot, in_multi) > offsetof(rq_slot, tx),
               "the pairing facts of rq_slot and rq_entry are one block");
_Static_assert(RQ_TIME_BYTES == 24 && offsetof(resp_request, start_us) == 0 &&
                   offsetof(resp_request, ts_us) == 8,
               "resp_request's start_us .. start_frame is req_time");
_Static_assert(RQ_FACTS_BYTES == 56, "resp_request's argc .. arg_full_len is req_facts");
/* Whole entries: a pipeline has at most RQ_WHOLE_MAX (allocated as one
 * array, its pages touched only as entries are first used), a connection
 * holds at most RQ_WHOLE_CONN of them (queued, or being decoded); past
 * either, requests are packed. They are what the common case, a shallow
 * pipeline in sync, runs on: no copy in or out. */
#define RQ_WHOLE_MAX 1024
#define RQ_WHOLE_CONN 32
_Static_assert(RQ_WHOLE_MAX < UINT16_MAX, "rq_slot.whole holds an index + 1");

/* The longest text of a request (its pieces in 16-byte units: the arrays'
 * sizes are multiples of 16). A text never straddles a page. */
#define RQ_TEXT_MAX (RESP_NAME_MAX + (RESP_ARG_KEEP + 1) * RESP_ARG_PREFIX)

/* ---------------------------------------------------------------- connection */

/* The reply sizes one command has had on a connection, for counting the
 * replies a gap holds (loss.c). */
typedef struct rc_sizes {
    uint64_t key;            /* name, its length and argc (size_key, pair_internal.h) */
    uint32_t size[2];        /* the sizes seen, most recent first */
    uint16_t seen;           /* replies since size[] last changed, this one
                                included (up to SIZES_SEEN; 0: slot unused) */
    uint8_t n;               /* sizes in size[] */
    uint8_t varied;          /* a third size was seen: not predictable */
} rc_sizes;
#define RC_SIZE_SLOTS 4      /* commands remembered per connection */
#define RC_RQ_SIZES 4        /* request sizes remembered per connection */

/* The fields every request and reply touch (pairing, modes) come first,
 * next to the start of the request decoder's hot fields. */
/* What the connections of one partition hold against the caps on all of
 * them (max_inflight_total, max_kept_total), which apply per partition
 * (capture.h: CAP_PARTITIONS). */
typedef struct rc_part {
    uint64_t inflight;        /* requests in flight */
    uint64_t kept;            /* keep buffer bytes allocated */
} rc_part;

typedef struct rc_conn {
    struct rc_conn *prev, *next;  /* live connections */
    cap_conn *cc;
    uint64_t conn_word;       /* the sink's (resp_sink.conn_word) */
    struct resp_pipeline *rp;
    rc_part *part;            /* its partition's (cc->partition) */
    /* FIFO of in-flight requests: count slots (sizeof(rq_slot) bytes
     * each) from ring.head on, their text in text (ring.c) */
    rq_pages ring;
    uint32_t count;
    struct rq_slot *head;     /* the slot at ring.head while count > 0 (its
                                 address, kept as the head moves: ring_head) */
    uint8_t cur_dropped;      /* cur will not be queued (a cap, or no memory) */
    uint32_t noreply_queued;  /* queued requests that expect no reply (the
                                 ones flush_no_reply emits, pair.c) */
    uint32_t whole_held;      /* whole entries it holds (queued, or cur) */
    /* client-side modes (known when a request is decoded) */
    uint8_t in_multi, reply_off, skip_next;
    rq_entry *cur;            /* the entry the request decoder writes (its
                                 rq.req is &cur->cmd.req): &stage, or a
                                 whole entry not queued yet */
    uint64_t frame;           /* record of the DATA being fed (cap_event.frame,
                                 for bus.c) */
    uint64_t seq;
    /* server-side modes (known when a reply is paired) */
    uint8_t resp3, monitor, replication;
    uint8_t repl_watch;       /* picked up mid-stream and nothing paired yet:
                                 may be a replication link (pair.c, repl_*) */
    uint8_t repl_cmds;        /* replies in a row shaped like a master's
                                 stream, while watched (pair.c, repl_shape) */
    uint8_t reply_modes;      /* monitor, subscribed or repl_watch: a reply
                                 may be a push or REPLCONF (pair.c) */
    uint8_t repl_mid;         /* recognised mid-stream as a replication link:
                                 REPL_MID_SERVER (the server side is the
                                 master), REPL_MID_CLIENT (the client side is) */
    /* synchronisation of the pairing */
    uint8_t synced;
    uint8_t reply_since_loss;  /* a reply completed since the pairing was lost */
    uint32_t owed_min;         /* replies still to come, at least, for requests
                                  lost or given up (not queued): a reply with
                                  nothing queued pays one; none owed is one
                                  condition of solid ground (pair.c, owed_*) */
    /* raw reply kept for analysis (rpd.keeping: while one is) */
    uint8_t keep_over;
    uint32_t sub_channels, sub_patterns, sub_shards;
    rq_dec rq;
    rp_dec rpd;
    rq_pages text;            /* the text of the queued slots, in order */
    uint8_t *keep;
    size_t keep_len, keep_cap;
    resp_conn_stats st;
    /* The transaction being queued (MULTI .. EXEC), as the server will run it
     * at EXEC: queued commands have no effect until then (modes.c, tx_*). */
    uint32_t tx_queued;       /* commands queued: the count EXEC's array declares */
    uint32_t tx_sent;         /* how many of their replies the server will send */
    uint8_t tx_off;           /* CLIENT REPLY OFF in force after them */
    uint8_t tx_skip_after;    /* a CLIENT REPLY SKIP ran: it skips the command
                                 after EXEC */
    uint8_t tx_hello;         /* the last queued HELLO's protocol (0 none) */
    uint8_t tx_modes;         /* a queued CLIENT REPLY changes the client's modes */
    /* Re-anchoring after a loss (loss.c). Positions in the request
     * stream count every byte the client sent, lost ones too. */
    uint64_t rep_ack;         /* request stream position the packet that
                                 started the reply being decoded had
                                 acknowledged (UINT64_MAX: not known) */
    uint64_t ev_ack;          /* the same for the reply bytes being fed */
    uint64_t rq_lost_bytes;   /* request bytes lost in gaps not bridged */
    uint64_t rp_lost_bytes;   /* reply bytes lost in gaps not bridged */
    uint8_t ack_broken;       /* a request gap of unknown length: positions
                                 and ACKs no longer compare */
    uint8_t rq_loss_pending;  /* requests were lost: the next one decoded is
                                 flagged (rq_entry.after_loss) */
    uint8_t rq_gap_pending;   /* a request gap at a boundary waits for the
                                 next request bytes (rq_gap_resolve) */
    uint8_t rp_gap_pending;   /* a reply gap waits for the first reply bytes
                                 after it (rp_gap_resolve) */
    uint8_t rp_ncand;         /* its candidate counts of lost replies */
    uint32_t rp_cand[8];
    uint32_t rp_gap_queued;   /* entries queued when it came */
    uint64_t rp_gap_len;      /* its bytes (parts without a byte between
                                 them summed: reply_gap_more) */
    uint8_t rp_gap_last;      /* the last reply-side event was a gap that
                                 was not bridged */
    uint32_t orphans;         /* replies that found nothing queued since the
                                 latest request was queued: replies of
                                 requests not seen (a request gap's) */
    uint64_t rq_gap_len;      /* bytes of the pending request gap */
    uint64_t rq_gap_start;    /* its stream position */
    uint32_t rq_gap_orphans;  /* orphans when it came */
    uint32_t anchored;        /* losses accounted exactly (tests) */
    uint8_t rsz_next;         /* rsz slot replaced next */
    uint8_t rsz_last;         /* rsz slot learnt from last */
    uint8_t qsz_n;            /* request sizes in qsz */
    uint8_t qsz_varied;       /* more request sizes than qsz holds were seen */
    uint16_t qsz_stable;      /* requests in a row whose size was in qsz
                                 already (up to RQ_SIZES_STABLE) */
    uint32_t qsz[RC_RQ_SIZES];
    rc_sizes rsz[RC_SIZE_SLOTS];
    struct rc_bus *bus;       /* a cluster-bus connection: its two streams
                                 (bus.c), NULL for RESP */
    /* The request being decoded when it is not in a whole entry (cur).
     * Its cmd.reply is where every reply is decoded (rpd.rep), and a
     * packed head paired while no request is being decoded here
     * (stage_free) is unpacked into its cmd and handed to the sink with
     * that reply in place: no copy of the reply. */
    rq_entry stage;
} rc_conn;

enum { REPL_MID_NONE = 0, REPL_MID_SERVER = 1, REPL_MID_CLIENT = 2 };

struct resp_pipeline {
    resp_config cfg;
    resp_sink sink;
    rc_conn *live;            /* list of live connections */
    resp_stats closed;        /* totals of closed connections + global counters */
    resp_stats view;          /* what resp_get_stats returns */
    rc_part parts[CAP_PARTITIONS];
    uint64_t inflight_part_cap; /* cap_partition_share of max_inflight_total */
    uint64_t kept_part_cap;   /* ... of max_kept_total */
    void *pool;               /* free pages, linked through their first word */
    uint32_t pool_n;          /* pages in it */
    uint64_t pages_used;      /* pages held by the FIFOs of all connections */
    uint64_t pages_peak;      /* most pages allocated at once (used + pool) */
    uint64_t page_allocs;     /* pages allocated (tests: not per command) */
    rq_entry *whole;          /* whole entries (RQ_WHOLE_MAX, or NULL) */
    uint16_t *whole_free;     /* indexes of the ones free, whole_nfree of them */
    uint32_t whole_nfree;
    uint32_t whole_made;      /* entries ever handed out: [0, whole_made)
                                 are initialised */
    uint32_t whole_cap;       /* RQ_WHOLE_MAX, 0 if the array was not had */
    uint64_t index;           /* the record being fed (cap_event.index of the
                                 latest event): proofs.c stamps with it */
    resp_command out;         /* the command handed to the sink for a
                                 packed slot that is not unpacked into its
                                 connection's stage (one pipeline per
                                 thread: no global state) */
    const uint8_t *out_args;  /* args_later: where the text of the slot
                                 handed over goes on after the name
                                 (slot_unpack_args) */
    uint8_t out_key0_dup;     /* ... and its key0_dup */
};

/* ---------------------------------------------------------------- bus.c */

/* Is this first chunk of a stream the cluster bus? At offset 0 the
 * signature "RCmb" says so; a connection picked up mid-stream (mid != 0)
 * is also one when a plausible message starts later in the chunk and its
 * length frames the chunk (it ends at the chunk's end or at another
 * message). */
int rc_bus_sniff(const uint8_t *p, size_t n, int mid);
/* The connection turned out to be a bus connection: its streams (NULL on
 * out of memory: its bytes are then only counted). */
struct rc_bus *rc_bus_new(rc_conn *c);
void rc_bus_feed(rc_conn *c, int dir, const uint8_t *p, size_t n, int64_t ts_us);
void rc_bus_gap(rc_conn *c, int dir);
/* The streams' counters into the connection's (at close) and rp's totals. */
void rc_bus_close(resp_pipeline *rp, rc_conn *c);
/* Add the live streams' message counters to st (resp_get_stats). */
void rc_bus_stats_live(const rc_conn *c, bus_stats *st);
void rc_bus_free(rc_conn *c);

/* proofs.c: note in cfg.servers (when set) what the pairer's rare paths
 * see: a MOVED/ASK target, the nodes of a kept CLUSTER reply, a replica's
 * REPLCONF (its listening port, its master), a replication link's master. */
void rc_proofs_redirect(resp_pipeline *rp, const resp_redirect *r);
void rc_proofs_cluster(resp_pipeline *rp, const resp_command *cmd);
void rc_proofs_replconf(resp_pipeline *rp, const cap_conn *cc, const resp_request *req);
void rc_proofs_master(resp_pipeline *rp, const cap_endpoint *master);

#endif /* SLOTSCOPE_RESP_INTERNAL_H */
