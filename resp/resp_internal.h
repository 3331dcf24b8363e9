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

#include <stdint.h>
#include <string.h>

#include "resp/decode.h"
#include "resp/resp.h"

/* ---------------------------------------------------------------- requests */

/* In-flight rings (ring.c): a ring is cut back (to at least RING_KEEP
 * entries) only when a window of RING_WINDOW x its capacity requests never
 * filled a quarter of it; draining it frees it only when all rings hold
 * more entries than max_inflight (one connection's cap). */
#define RING_KEEP 16
#define RING_WINDOW 4

/* One in-flight request: the command event it becomes, plus pairing facts.
 * Aligned to a cache line (allocated by entries_alloc in ring.c). */
typedef struct rq_entry {
    /* the pairing facts first: they share a cache line with the start of
     * the request (a pipelined connection's ring does not stay in cache) */
    /* nreply to dynamic, and sub_word with hello_proto, are neighbours:
     * request_done writes each group with one store */
    _Alignas(64) uint32_t nreply; /* replies still expected (0: none by design) */
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
    resp_command cmd;        /* request filled in; the reply is decoded into
                                it while this entry is the head (pair.c) */
} rq_entry;

/* ---------------------------------------------------------------- connection */

/* The reply sizes one command has had on a connection, for counting the
 * replies a gap holds (loss.c). */
typedef struct rc_sizes {
    uint64_t key;            /* name, its length and argc (size_key, pair_internal.h) */
    uint32_t size[2];        /* the sizes seen, most recent first */
    uint16_t seen;           /* replies seen (up to SIZES_SEEN) */
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
    /* FIFO of in-flight requests */
    rq_entry *ring;
    uint32_t ring_cap;
    uint32_t head;
    uint32_t count;
    uint8_t cur_dropped;      /* cur is the overflow scratch */
    uint32_t noreply_queued;  /* queued requests that expect no reply (the
                                 ones flush_no_reply emits, pair.c) */
    uint32_t ring_fresh;      /* ring entries from this index on were never
                                 handed out since the ring was made: not yet
                                 initialised, their pages maybe not touched */
    uint32_t ring_hw;         /* deepest queue since ring_win was reset */
    uint64_t ring_win;        /* requests queued since then */
    /* client-side modes (known when a request is decoded) */
    uint8_t in_multi, reply_off, skip_next;
    rq_entry *cur;            /* the entry the request decoder writes (its
                                 rq.req is &cur->cmd.req) */
    uint64_t frame;           /* record of the DATA being fed (cap_event.frame,
                                 for bus.c) */
    uint64_t seq;
    /* server-side modes (known when a reply is paired) */
    uint8_t resp3, monitor, replication;
    uint8_t repl_watch;       /* picked up mid-stream and nothing paired yet:
                                 may be a replication link (pair.c, repl_*) */
    uint8_t reply_modes;      /* monitor, subscribed or repl_watch: a reply
                                 may be a push or REPLCONF (pair.c) */
    uint8_t repl_mid;         /* recognised mid-stream as a replication link:
                                 REPL_MID_SERVER (the server side is the
                                 master), REPL_MID_CLIENT (the client side is) */
    /* synchronisation of the pairing */
    uint8_t synced;
    uint8_t reply_since_loss;  /* a reply completed since the pairing was lost */
    /* raw reply kept for analysis (rpd.keeping: while one is) */
    uint8_t keep_over;
    uint32_t sub_channels, sub_patterns, sub_shards;
    rq_dec rq;
    rp_dec rpd;
    rq_entry *overflow;       /* allocated on the first overflow */
    resp_reply reply;         /* scratch for a reply no queued request
                                 waits for (rpd.rep: where the reply decoder
                                 writes, the head entry's reply or this) */
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
    uint16_t qsz_seen;        /* requests seen (up to SIZES_SEEN) */
    uint32_t qsz[RC_RQ_SIZES];
    rc_sizes rsz[RC_SIZE_SLOTS];
    struct rc_bus *bus;       /* a cluster-bus connection: its two streams
                                 (bus.c), NULL for RESP */
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
    uint64_t ring_shrinks;    /* rings cut back after a burst (tests) */
    uint64_t ring_resident;   /* ring entries ever handed out, all rings: the
                                 ones whose memory was touched */
    uint64_t index;           /* the record being fed (cap_event.index of the
                                 latest event): proofs.c stamps with it */
    rq_entry *spare;          /* where a request is decoded when even the
                                 per-connection overflow slot could not be
                                 allocated (no global state: one pipeline
                                 per thread is safe) */
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
