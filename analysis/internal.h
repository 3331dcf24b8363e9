/*
 * internal.h - the analyzer's state, shared by the files of analysis/ only.
 *
 *   analyzer.c  an_new/an_free, the resp_sink, connections and clients, the
 *               per-command dispatch, flush and finish
 *   names.c     names and texts for findings and records (client, node,
 *               connection source, a command's key and reply): what the
 *               detectors use besides this header
 *   ops.c       logical operations: first attempt, redirects, retries, reply
 *   nodes.c     node registry; CLUSTER SLOTS / SHARDS / NODES parsing
 *   views.c     per client slot -> node views; (client, slot) memories
 *   findings.c  finding aggregation, evidence, emission
 *   detect_*.c  one function per finding kind (definitions above each)
 *   timeline.c  per slot migration windows
 *   cluster.c   the cluster's own story: nodes, health, slot owners and
 *               failovers from the bus (or from what clients were told)
 *   latency.c   log-linear histograms, per scope summaries
 *   series.c    the redirect time series per bucket (the timeline table)
 *   util.c      hash maps, JSON text, key redaction
 *   convergence.c  clients after an ownership change: convergence rows,
 *               slow_convergence, writes_at_risk
 *
 * Every table has a cap, an eviction rule and a counter in an_stats.
 */
#ifndef SLOTSCOPE_ANALYSIS_INTERNAL_H
#define SLOTSCOPE_ANALYSIS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/keys_internal.h"
#include "bus/bus.h"

#define AN_SLOTS 16384
#define AN_NONE (-1)
#define AN_CONN_CACHE 1024           /* direct-mapped: connection id -> entry */
#define AN_LRU_EPOCH 64              /* commands per recency epoch (power of 2) */
/* slot_busy bits; AN_SLOT_MIG: a migration window of the slot is open with a
 * known target (timeline.c watches its commands for the target serving it) */
enum { AN_SLOT_OPS = 1, AN_SLOT_MEMOS = 2, AN_SLOT_LAT = 4, AN_SLOT_MIG = 8,
       AN_SLOT_OWN = 16 /* its owner changed lately: convergence.c watches it */ };

/* ---------------------------------------------------------------- util.c */

/* A hash map from 64-bit hashes to int32 values, open addressing with linear
 * probing and backward-shift deletion. Equal hashes may hold several values;
 * callers confirm a match with their own comparison (an_map_find's eq). It
 * starts small and doubles as entries come, up to twice the caller's cap
 * (power of two): its memory follows the most entries it held at once, not
 * the cap, nor how many different hashes went through it (a table sized by
 * the cap from the start would have its pages touched one by one as random
 * hashes land on them, its resident size creeping up with capture length). */
typedef struct an_map {
    uint64_t *hash;
    int32_t *val;     /* AN_NONE: empty */
    uint32_t mask;
    uint32_t n;
    uint32_t max_mask; /* the capacity it may grow to, - 1 */
} an_map;
int an_map_init(an_map *m, uint32_t max_entries);
void an_map_free(an_map *m);
typedef int (*an_map_eq)(const void *ctx, int32_t val, const void *key);
/* The value stored under hash h for which eq(ctx, val, key) holds, or AN_NONE. */
int32_t an_map_find(const an_map *m, uint64_t h, an_map_eq eq, const void *ctx, const void *key);
/* Add (h, val). -1 when full (callers keep their tables within the cap). */
int an_map_put(an_map *m, uint64_t h, int32_t val);
/* Remove the entry (h, val). */
void an_map_del(an_map *m, uint64_t h, int32_t val);

/* Table hashes: 8 bytes at a time; values may change between versions. */
uint64_t an_hash_fast(const void *p, size_t n, uint64_t seed);
uint64_t an_hash_str(const char *s, uint64_t seed);
/* A 64-bit integer mixed (splitmix64's finaliser). */
uint64_t an_mix64(uint64_t x);

/* A bounded text buffer for JSON; writes past the end are cut and flagged. */
typedef struct an_buf {
    char *p;
    size_t len, cap;
    int cut;
} an_buf;
void an_buf_put(an_buf *b, const char *s);
/* snprintf(dst, size, "%s", src) without the format machinery: src cut to
 * size - 1 bytes, always NUL-terminated (records are copied this way per
 * connection, redirect and operation). */
void an_copy_str(char *dst, size_t size, const char *src);
void an_buf_printf(an_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A JSON string of arbitrary bytes (quotes included; control and non-ASCII
 * bytes as \u00XX). */
void an_buf_json_str(an_buf *b, const void *p, size_t n);

/* A key as records show it: printable ASCII as is, other bytes (and '\\') as
 * \xNN, cut to fit out; or "h:<16 hex>" when redacting. NUL-terminated. */
void an_key_text(const an_config *cfg, const char *key, size_t len, uint32_t full_len,
                 char *out, size_t out_size);
/* The redaction text "h:<16 hex>" of a key prefix (at most RESP_ARG_PREFIX
 * bytes are read) and its full length, under the secret key. */
void an_redact(const uint8_t key[AN_REDACT_KEY_BYTES], const char *text, size_t len,
               uint32_t full_len, char *out, size_t out_size);

/* The wall time covered by a set of intervals [from, to), overlaps counted
 * once: a finding's cost (the operations it covers may overlap). Up to
 * AN_SPAN_PARTS disjoint parts are kept; when more are needed the earliest is
 * given up and nothing before its end is counted again (floor), so the total
 * never exceeds the union's length (it may fall short of it when operations
 * end far out of order). */
#define AN_SPAN_PARTS 4
typedef struct an_span {
    int64_t total;               /* covered time counted so far */
    int64_t floor;               /* nothing before this is added */
    int64_t from[AN_SPAN_PARTS], to[AN_SPAN_PARTS]; /* sorted, disjoint */
    uint8_t n;
} an_span;
/* Add [from, to); returns the time newly covered. */
int64_t an_span_add(an_span *s, int64_t from, int64_t to);

/* ---------------------------------------------------------------- latency.c */

#define AN_HIST_SUB 8                      /* buckets per power of two */
#define AN_HIST_BUCKETS (16 + 34 * AN_HIST_SUB)
typedef struct an_hist {
    uint32_t b[AN_HIST_BUCKETS];
} an_hist;
/* Count one in *c, saturating at UINT32_MAX (a histogram bucket). */
static inline void an_count_sat(uint32_t *c)
{
    uint32_t v;
    *c = __builtin_add_overflow(*c, 1u, &v) ? UINT32_MAX : v;
}
/* The bucket of a value: one per microsecond below 16, then 8 per power of
 * two (the last bucket takes everything above its range). With e the top
 * bit of v >= 16 and k = e - 3, v >> k is 8 + the next three bits, so the
 * bucket 16 + (e - 4) * 8 + those bits is 8 * k + (v >> k); below 16, k = 0
 * (v | 8 has its top bit at 3) and the bucket is v itself: no branch. */
static inline unsigned an_hist_bucket(int64_t v)
{
    _Static_assert(AN_HIST_SUB == 8, "three bits below the top one");
    if (v < 0)
        return 0;
    unsigned long long u = (unsigned long long)v;
    unsigned k = 60u - (unsigned)__builtin_clzll(u | 8); /* top bit - 3, >= 0 */
    unsigned b = AN_HIST_SUB * k + (unsigned)(u >> k);
    return b < AN_HIST_BUCKETS ? b : AN_HIST_BUCKETS - 1;
}
/* One scope's operations of one kind (direct or redirected). */
typedef struct an_lat {
    an_hist *h;              /* allocated at the first sample */
    uint64_t count;
    int64_t total_us, extra_us, max_us;
    uint64_t extra_rt;
} an_lat;
void an_lat_add(an_lat *l, int64_t us, int64_t extra_us, uint64_t extra_rt);
void an_lat_free(an_lat *l);
int64_t an_hist_quantile(const an_hist *h, uint64_t count, double q, int64_t max_us);
/* Emit the two (direct, redirected) summaries of a scope. */
struct an_analyzer;
void an_lat_emit(struct an_analyzer *an, an_scope scope, const char *key, an_lat lat[2]);

/* ---------------------------------------------------------------- nodes.c */

#define AN_COVER_PORTS 4         /* client ports a node keeps (an_nd.conn_ports) */
typedef struct an_nd {
    an_node pub;                /* observed, announced, id, role, slots, commands */
    char hostname_ep[AN_NAME_MAX]; /* hostname:port announced (Redis 7) */
    int32_t master;             /* node index of its master, or AN_NONE */
    int32_t promoted_from;      /* the master whose replica it was when a
                                   MOVED showed it promoted (an_nodes_learn_moved),
                                   AN_NONE since it was last a replica */
    int32_t migrating_slot;     /* latest CLUSTER SETSLOT s MIGRATING on it */
    an_lat lat[2];
    uint8_t *map_copy;          /* the last map reply it gave that changed
                                   nothing when learnt (nodes.c), or NULL */
    size_t map_len;             /* its length, 0: none */
    char map_kind;
    uint64_t map_version;       /* reg_version then */
    uint64_t told_epoch;        /* config epoch in the latest CLUSTER NODES
                                   reply that listed it (0: none) */
    uint64_t told_epoch_prev;   /* told_epoch before that reply (nodes.c) */
    uint8_t replica;            /* its role is "replica" (node_set_role) */
    uint16_t conn_ports[AN_COVER_PORTS]; /* client ports of the connections to
                                   it the capture holds (an_nodes_connected) */
    uint8_t nconn_ports;        /* how many, AN_COVER_PORTS + 1: more */
    uint8_t covered;            /* an_node_covered: its replicas are covered,
                                   as at cover_stamp */
    uint64_t cover_stamp;       /* reg_version + cover_version then (0: none) */
    uint8_t phantom;            /* made for the server side of a replication link
                                   found reversed (it is the replica's source
                                   endpoint, not a node): not reported while
                                   nothing else names it (an_nodes_emit) */
    uint32_t ser_seq;           /* series.c: its cell in the newest bucket */
    struct an_ser_cell *ser_cp; /* (valid while ser_seq is that bucket's) */
} an_nd;

/* ---------------------------------------------------------------- views.c */

/* A client's slot -> node view, in 256 blocks of 64 slots. A block knows
 * which of its slots were learnt (a bit each); while they all name one node
 * (the usual case: a cluster map gives a node long slot ranges) that node is
 * all the block holds, else its 64 values go to a chunk of the view's pool.
 * So a view stays a few KiB however many slots its client has shown,
 * instead of growing with them. */
#define AN_VIEW_BLOCK_SLOTS 64
#define AN_VIEW_BLOCKS (AN_SLOTS / AN_VIEW_BLOCK_SLOTS)
typedef struct an_vblock {
    uint64_t known;              /* bit i: slot 64 * block + i was learnt */
    uint16_t node;               /* node + 1 of every learnt slot (no chunk) */
    uint16_t chunk;              /* index + 1 of its chunk in the pool, 0: none */
} an_vblock;
typedef struct an_view {
    an_vblock *blocks;           /* AN_VIEW_BLOCKS, allocated at the first slot */
    uint16_t (*pool)[AN_VIEW_BLOCK_SLOTS]; /* chunks: node + 1 per slot */
    uint32_t nchunks, chunk_cap;
    uint32_t n;                  /* slots learnt */
} an_view;

/* What one client learned about one slot (the last MOVED and ASK it got). */
typedef struct an_memo {
    int32_t client;
    int32_t slot;
    int32_t lprev, lnext;        /* LRU list (global) */
    int32_t cprev, cnext;        /* the same client's memos */
    int64_t moved_ts;            /* last MOVED reply received, 0 if none */
    int32_t moved_from, moved_to;
    uint64_t moved_nodes;        /* bit n: node n (< 64) answered MOVED for the
                                    slot and has not served it, nor been named
                                    by an ASK, since */
    int64_t ask_ts;              /* last ASK reply received, 0 if none */
    int32_t ask_from, ask_to;
} an_memo;

/* ---------------------------------------------------------------- clients */

typedef struct an_cli {
    /* first: what every command reads or writes */
    uint8_t used;
    uint32_t gen;                /* changes each time the entry is reused */
    uint32_t lru_epoch;          /* when it last moved to the LRU tail */
    int32_t lprev, lnext;        /* LRU list */
    int64_t last_start_us;       /* latest request start */
    an_view view;
    an_lat lat[2];
    an_client pub;
    cap_addr host;
    int32_t memo_head;           /* this client's memos */
    int64_t map_ts;              /* last cluster map reply it received */
    uint8_t reads_replicas;      /* it sent a read to a replica, or a READONLY
                                    answered +OK: it may retry a read at a
                                    replica */
    uint32_t op_first;           /* its waiting operations: 1 + the index of
                                    the first (an_op.cnext), 0: none */
    int64_t lost_from_us, lost_to_us; /* losses of its requests whose operations
                                    were not all walked (an_ops_requests_lost):
                                    their span, 0 0: none */
    int64_t retry_max_us;        /* slowest retry of a MOVED or ASK it made
                                    (reply to the retry's start), -1: none seen */
    uint64_t node_conns;         /* connections that are node links */
    uint64_t client_conns;       /* other connections */
    uint32_t ser_seq;            /* series.c: its cell in the newest bucket */
    struct an_ser_cell *ser_cp;  /* (valid while ser_seq is that bucket's) */
} an_cli;

/* ---------------------------------------------------------------- connections */

/* What analyzer.c's quick path may do with a command name (an_cn.qkind):
 * nothing, take it (a known command that is neither special nor a container),
 * or take it on a node link only (RESTORE-ASKING: elsewhere it makes one). */
enum { AN_QK_NONE = 0, AN_QK_PLAIN = 1, AN_QK_LINK = 2 };

typedef struct an_cn {
    /* first: what every command reads or writes (one cache line: entries
     * are aligned to one, see an_new) */
    _Alignas(64) int32_t client;
    int32_t node;
    uint32_t client_gen;         /* the client entry's gen when looked up */
    uint32_t lru_epoch;          /* when it last moved to the LRU tail */
    uint32_t gen;                /* which connection holds the entry (never 0
                                    in use): checks resp's conn_word */
    uint8_t used;
    uint8_t node_link;           /* replication or MIGRATE traffic */
    uint8_t asking_pending;      /* ASKING sent, not yet used */
    uint8_t readonly;            /* READONLY in force */
    uint64_t commands;
    int64_t last_us;
    uint64_t qname[2];           /* its last command's name, first 16 bytes */
    uint8_t qkind;               /* AN_QK_* of that name (0: none) */
    uint8_t has_ident;           /* announced itself: an->conn_ident[entry] */
    /* then the rest (these two fill the first line: 256-byte entries) */
    uint8_t mid_stream;          /* started without a handshake: state unknown */
    uint8_t bus;                 /* carries the cluster bus: no client's */
    int32_t asking_ring;         /* its ASKING's entry in the ASKING ring */
    int32_t lprev, lnext;        /* LRU list (relinked once per epoch) */
    uint64_t id;
    const cap_conn *cc;          /* valid until its CLOSE */
    int64_t first_us;
    uint64_t asking_seq;         /* its request index */
    int64_t asking_ts;
    int64_t asking_spent_ts;     /* an ASKING used up by an unrelated command */
    int32_t getkeys_slot;        /* last CLUSTER GETKEYSINSLOT slot, or -1 */
    char src[AN_NAME_MAX], dst[AN_NAME_MAX];
    uint8_t readonly_seen;       /* READONLY, READWRITE or RESET seen on it: readonly
                                    is known even mid-stream (in the tail padding:
                                    entries stay 256 bytes) */
} an_cn;

/* Is cn's READONLY state unknown? Known on a connection seen from its start
 * or once it sent READONLY/READWRITE/RESET; on one picked up mid-stream
 * before that, READONLY may have been sent before the capture began. */
static inline int an_cn_readonly_unknown(const an_cn *cn)
{
    return cn->mid_stream && !cn->readonly_seen && !cn->readonly;
}

/* ---------------------------------------------------------------- ops.c */

/* One attempt of an operation. */
typedef struct an_attempt {
    uint64_t conn;
    int32_t node;
    int32_t target;              /* MOVED/ASK target node, else AN_NONE */
    uint8_t asked;               /* ASKING came right before on its connection */
    uint8_t reply;               /* resp_err_class */
    uint16_t cport;              /* the client's port on that connection */
    int64_t start_us, req_us, reply_us;
    uint64_t req_frame, reply_frame; /* resp_request.start_frame, reply.end_frame */
} an_attempt;

#define AN_OP_TRAIL 8
#define AN_OP_FINDINGS 8         /* distinct findings one operation is charged to */
#define AN_OP_FIRST_RETRIES 3    /* TRYAGAIN retries kept for evidence */

/* A logical operation waiting for a retry after a redirect. */
typedef struct an_op {
    /* first: what op_eq tests before the key (64 bytes): a client repeating
     * one key leaves long runs of equal hash, most entries rejected here */
    uint8_t used;
    uint8_t key_len;
    uint32_t gen;                /* bumped when the slot is reused */
    uint32_t key_full_len;
    an_attempt last;
    /* then the rest */
    uint64_t key_hash;           /* (host, name, key) */
    cap_addr host;
    int32_t client;
    char name[RESP_NAME_MAX];
    char key[RESP_ARG_PREFIX];
    char key_text[RESP_ARG_PREFIX + 1]; /* as records show it */
    int32_t slot;
    uint32_t attempts, redirects, seg_redirects, tryagains, fast_tryagains, askings;
    an_attempt first;
    an_attempt trail[AN_OP_TRAIL]; /* redirected attempts since the last TRYAGAIN */
    uint8_t ntrail;
    uint8_t trail_repeats;       /* trail entries equal to an earlier one */
    uint8_t loop_reported, storm_reported;
    uint8_t retry_unseen;        /* its retry may be what the capture lost
                                    (an_ops_on_unanswered, an_ops_requests_lost) */
    uint8_t loop_one_node;       /* all its redirects (the trail that showed the
                                    loop, and every one since) came from loop_node */
    uint8_t loop_same;           /* the loop repeated a redirect (not only the cap) */
    uint8_t loop_told;           /* the loop finding's summary tells of it */
    uint8_t read;                /* its command only reads, or is not in the
                                    table: a retry may go to a replica */
    uint32_t cprev, cnext;       /* its client's other waiting operations: 1 +
                                    their index, 0: none (an_cli.op_first) */
    an_attempt retries[AN_OP_FIRST_RETRIES]; /* its first TRYAGAIN retries */
    uint8_t nretries;
    uint8_t nfnd;
    int32_t fnd[AN_OP_FINDINGS]; /* findings it occurred in: each is charged the
                                    operation's extra time once, at its end */
    int32_t storm;               /* its tryagain_storm finding, or AN_NONE */
    int32_t loop;                /* its redirect_loop finding, or AN_NONE */
    int32_t loop_node;           /* the node of its last redirect when the loop
                                    was reported (see loop_one_node) */
    int32_t lprev, lnext;        /* expiry list, by last reply time */
} an_op;

/* ---------------------------------------------------------------- findings.c */

#define AN_EVIDENCE_MAX 2624  /* 2048, and each event's two frame numbers */
#define AN_EVIDENCE_EVENTS 8

/* One command as evidence. Pointers are read during the call they are passed
 * to only. */
typedef struct an_event {
    const char *what;            /* "ask", "retry without ASKING", ... */
    int64_t ts_us;
    uint64_t conn;
    const char *src, *dst;
    const char *cmd;
    const char *key;             /* already redacted when asked */
    size_t key_len;
    const char *reply;           /* reply text: error line or type */
    uint64_t req_frame;          /* record of the request's first byte, 0: not known */
    uint64_t reply_frame;        /* record of the reply's last byte, 0: no reply */
} an_event;

/* An event with its own copy of the text (kept across commands). */
typedef struct an_evcopy {
    char what[48];
    int64_t ts_us;
    uint64_t conn;
    char src[AN_NAME_MAX], dst[AN_NAME_MAX];
    char cmd[RESP_NAME_MAX];
    char key[RESP_ARG_PREFIX + 1];
    char reply[RESP_ERRTEXT_MAX + 8];
    uint64_t req_frame, reply_frame;
} an_evcopy;
void an_evcopy_set(an_evcopy *d, const an_event *e);
/* Append an event's JSON object to b (preceded by a comma when asked). */
void an_event_json(an_buf *b, const an_event *e, int comma);

typedef struct an_fnd {
    an_finding f;
    int32_t node_idx;
    uint64_t key_hash;
    uint32_t min_count;          /* becomes visible at this count */
    uint8_t visible, dirty;
    uint8_t stale;               /* summary / evidence to rebuild from the
                                    detector's state before it is emitted */
    uint8_t has_tail;
    uint32_t events, omitted;
    size_t ev_len;
    char ev[AN_EVIDENCE_MAX];    /* JSON array body: {...},{...} */
    an_evcopy tail;              /* the latest event, replaced, shown last */
    /* what the evidence events point at in the capture (display filters) */
    uint64_t frames[2 * AN_EVIDENCE_EVENTS]; /* their request and reply records */
    uint8_t nframes;
    uint8_t nconns;
    char conns[4][AN_NAME_MAX];  /* their client endpoints, distinct */
    uint64_t tally[3];           /* kind-specific totals (tryagain_storm:
                                    retries, fast retries, most in one op;
                                    redirect_loop: redirects, most in one op,
                                    of its ended operations) */
    char note[96];               /* kind-specific text (crossslot, storm: the
                                    command names seen) */
    char extra[400];             /* kind-specific JSON members added to the
                                    evidence object (",\"window\":{...}") */
    an_span cost;                /* extra_latency_us: its operations' time */
} an_fnd;

/* ---------------------------------------------------------------- timeline.c */

/* A migration event kept for evidence: a CLUSTER SETSLOT (arg: IMPORTING,
 * MIGRATING, NODE; target: the node named by its id) or an ASK reply (arg: the
 * key as records show it; target: the ASK target). */
typedef struct an_mig_ev {
    int64_t ts_us;               /* request start; 0: not seen */
    uint64_t conn;
    uint64_t req_frame, reply_frame; /* as in an_event */
    int32_t node, target;        /* who answered; the other node */
    char src[AN_NAME_MAX];       /* client endpoint */
    char cmd[RESP_NAME_MAX];
    char arg[RESP_ARG_PREFIX + 1];
    char other_id[41];            /* SETSLOT: the node id as sent */
} an_mig_ev;
enum { AN_MIG_IMPORTING = 0, AN_MIG_MIGRATING, AN_MIG_NODE, AN_MIG_FIRST_ASK, AN_MIG_LAST_ASK,
       AN_MIG_EVS };

typedef struct an_mig {
    an_migration pub;
    int32_t source, target;      /* node indexes, AN_NONE if unknown */
    an_span cost;                /* redirect cost of operations in the window */
    uint8_t stuck_reported;
    uint8_t aborted;             /* SETSLOT STABLE */
    int32_t finding;             /* its migration_stuck finding, or AN_NONE */
    uint8_t judged_at_end;       /* the finding saw the end of the capture */
    int64_t judged_us;           /* when it was last checked */
    an_mig_ev ev[AN_MIG_EVS];    /* evidence: SETSLOTs, first and last ASK */
} an_mig;

/* ---------------------------------------------------------------- rings */

#define AN_RING 64
/* A recent ASK reply to a host: which operation waits for ASKING + retry. */
typedef struct an_ask_rec {
    cap_addr host;
    int32_t op;
    uint32_t gen;
    int32_t target;
    int64_t ts;
} an_ask_rec;
/* A recent ASKING. */
typedef struct an_asking_rec {
    cap_addr host;
    char src[AN_NAME_MAX];       /* its connection's client endpoint */
    uint64_t conn;
    int32_t node;
    int64_t ts;
    uint64_t req_frame, reply_frame; /* its records (as in an_event) */
    uint8_t used;                /* matched to a retry (same or other conn) */
    uint8_t valid;
} an_asking_rec;

/* ---------------------------------------------------------------- series.c */

/* What a series cell counts (an_ser_add's what). */
enum { AN_SC_COMMANDS = 0, AN_SC_MOVED, AN_SC_ASK, AN_SC_TRYAGAIN, AN_SC_CROSSSLOT,
       AN_SC_CLUSTERDOWN, AN_SC_ASKING, AN_SC_RETRIES, AN_SC_COUNTS };
/* The kinds of scope. */
enum { AN_SK_CLUSTER = 0, AN_SK_NODE, AN_SK_CLIENT, AN_SK_SLOTS, AN_SK_KINDS };
#define AN_SER_MAX_BUCKETS 64

/* One scope's figures in one bucket. Operations are only counted in their
 * histograms (their counts are the histograms' sums, made when the bucket is
 * written): one increment per operation. */
typedef struct an_ser_cell {
    uint64_t n[AN_SC_COUNTS];
    an_hist *h[2];               /* direct, redirected operations; allocated
                                    at the first, kept when the cell is reused */
    uint8_t kind;                /* AN_SK_* */
    uint8_t other;               /* the kind's "other" (scopes over the cap) */
    int32_t idx;                 /* node or client index, slot */
    uint32_t gen;                /* client entry generation */
    int32_t source, target;      /* slots: the migration's nodes */
    uint32_t scopes;             /* scopes summed here */
    char name[AN_NAME_MAX];      /* node or client name as it was then */
} an_ser_cell;

typedef struct an_ser_bucket {
    int64_t start_us;
    uint32_t seq;                /* changes with every bucket opened, never 0 */
    uint32_t ncells, cap;        /* cells[0] is the cluster's */
    uint32_t nkind[AN_SK_KINDS]; /* scopes followed per kind */
    int32_t other[AN_SK_KINDS];  /* each kind's "other" cell, or AN_NONE */
    an_ser_cell *cells;
    an_map map;                  /* (kind, idx, gen) -> cell */
} an_ser_bucket;

typedef struct an_series {
    int64_t cur_start;           /* the newest bucket's start (a far future
                                    time when none is open) */
    uint32_t cur_seq;            /* its seq */
    int64_t width;               /* bucket width, us */
    uint32_t kept;               /* buckets open at most */
    uint32_t n, nspare;
    an_ser_bucket *ring[AN_SER_MAX_BUCKETS];  /* open, oldest first */
    an_ser_bucket *spare[AN_SER_MAX_BUCKETS]; /* written, memory kept */
    uint32_t next_seq;
    uint32_t cap_cells;          /* cells per bucket */
    an_ser_cell *scratch;        /* sums made while writing a bucket */
    uint32_t nscratch;
    an_ser_cell **list;          /* one kind's cells, while writing */
} an_series;

/* ---------------------------------------------------------------- analyzer */

struct an_analyzer {
    an_config cfg;
    an_sink sink;
    an_stats st;
    int64_t now_us;              /* latest capture time seen */
    uint64_t finding_seq;

    an_ident *conn_ident;        /* per connection entry, allocated at the
                                    first connection that announces itself */
    an_cn *conns;  an_map conn_map;  int32_t conn_lru_head, conn_lru_tail, conn_free;
    void *conns_block;           /* the allocation conns is aligned in */
    uint32_t nconns;
    an_cli *clients; an_map client_map; int32_t cli_lru_head, cli_lru_tail, cli_free;
    uint32_t nclients;
    an_nd *nodes; an_map node_map; uint32_t nnodes;
    uint64_t node_ports[65536 / 64]; /* bit p: a node is named with port p */
    uint64_t cover_version;      /* moves when a node gains a connection port */
    int16_t owner[AN_SLOTS];     /* latest map: slot -> node, AN_NONE unknown */
    int16_t owner_saved[AN_SLOTS]; /* owner before a map is learnt (nodes.c) */
    uint64_t reg_version;        /* moves whenever the node registry or owner[]
                                    changes (nodes.c skips re-learning maps) */
    an_memo *memos; an_map memo_map; int32_t memo_lru_head, memo_lru_tail, memo_free;
    uint32_t nmemos;
    uint64_t view_bytes;
    an_op *ops; an_map op_map; int32_t op_list_head, op_list_tail, op_free;
    uint32_t nops;
    /* pools hand out entries from their free list, else the next never-used
     * one (so memory sized by the caps is not touched until needed) */
    uint32_t conn_hwm, cli_hwm, memo_hwm, op_hwm;
    uint32_t cli_gen;
    uint32_t conn_gen;           /* the last an_cn.gen handed out */
    an_fnd **findings; an_map finding_map; uint32_t nfindings;
    an_mig *migs[AN_SLOTS];
    an_lat *slot_lat[AN_SLOTS];  /* [2] each, lazily */
    uint32_t nslot_lat;
    an_lat all_lat[2];           /* made at the end: nodes + nonode_lat */
    an_lat nonode_lat[2];        /* operations whose node is not registered */
    an_ask_rec ask_ring[AN_RING]; uint32_t ask_ring_pos;
    an_asking_rec asking_ring[AN_RING]; uint32_t asking_ring_pos;
    /* hot path helpers: which slots have waiting operations or (client, slot)
     * memories at all (most commands need neither lookup), and the recent
     * connections by id (most commands skip the connection map) */
    uint32_t lru_epoch;          /* advances every AN_LRU_EPOCH commands */
    uint64_t name_cache[2];      /* the last command name looked up (16 bytes) */
    const an_cmd *name_cache_cmd;
    uint8_t name_cache_special, name_cache_ok;
    uint8_t name_cache_kind;     /* AN_QK_* of the name (0 when not ok) */
    uint32_t op_slot_n[AN_SLOTS];
    uint32_t memo_slot_n[AN_SLOTS];
    /* the three per slot facts the common command needs, in 16 KiB rather
     * than in three 64-128 KiB arrays: AN_SLOT_OPS (op_slot_n > 0),
     * AN_SLOT_MEMOS (memo_slot_n > 0), AN_SLOT_LAT (slot_lat set) */
    uint8_t slot_busy[AN_SLOTS];
    struct { uint64_t id; int32_t idx; } conn_cache[AN_CONN_CACHE];
    struct an_cluster *cluster;  /* cluster.c's state, made at its first event */
    struct an_cv *cv;            /* convergence.c's state, made at its first change */
    an_series ser;               /* the time series (series.c) */
};
typedef struct an_analyzer an_analyzer;

/* names.c: what the detectors, findings and records print. A client's name
 * ("" when the entry is unused). */
const char *an_client_name(const an_analyzer *an, int32_t client);
/* The client entry named name, or AN_NONE. */
int32_t an_client_find(const an_analyzer *an, const char *name);
/* A node's observed address, else its announced one ("" for no node). */
const char *an_node_name(const an_analyzer *an, int32_t node);
/* The client endpoint of connection id while it is tracked, else the name of
 * client (AN_NONE: NULL) (for evidence about earlier attempts). */
const char *an_conn_src(const an_analyzer *an, uint64_t id, int32_t client);

/* The keys of the client and connection maps (an_map_find's eq and hash):
 * a client entry by name, a connection entry by id. */
static inline int an_client_eq(const void *ctx, int32_t val, const void *key)
{
    const an_analyzer *an = ctx;
    return strcmp(an->clients[val].pub.name, key) == 0;
}
static inline int an_conn_eq(const void *ctx, int32_t val, const void *key)
{
    const an_analyzer *an = ctx;
    return an->conns[val].id == *(const uint64_t *)key;
}
static inline uint64_t an_conn_hash(uint64_t id)
{
    return an_mix64(id + 1);
}

/* nodes.c */
int32_t an_node_by_endpoint(an_analyzer *an, const cap_endpoint *ep);
/* The same for an endpoint already formatted by cap_endpoint_format into
 * AN_NAME_MAX bytes (a new connection's dst: not formatted twice). */
int32_t an_node_by_endpoint_text(an_analyzer *an, const char *text);
/* The capture holds a connection to node i from client port port. */
void an_nodes_connected(an_analyzer *an, int32_t i, uint16_t port);
/* Does the capture cover node i, and with reads its replicas too (a client
 * may retry a read at a replica of the node a MOVED named): does it hold,
 * for each, a connection that it did not hold only because its client port
 * is a node's port (a capture filtered to some nodes' ports also holds the
 * connections whose ephemeral port happens to be one of theirs)? A retry
 * sent where the capture does not reach cannot be seen. */
int an_node_covered(an_analyzer *an, int32_t i, int reads);
/* The node an announced "host:port" (or hostname:port, or node id) stands for,
 * after user overrides; created (observed "") when unknown and create != 0. */
int32_t an_node_by_announced(an_analyzer *an, const char *text, int create);
int32_t an_node_by_redirect(an_analyzer *an, const resp_redirect *r, int32_t answering);
int32_t an_node_by_id(an_analyzer *an, const char *id, size_t len);
/* Node i has cluster node id `id` (40 hex characters, from the bus). */
void an_node_learn_id(an_analyzer *an, int32_t i, const char *id);
/* Node i is a "master" or a "replica" of master (AN_NONE: not known). */
void an_node_learn_role(an_analyzer *an, int32_t i, const char *role, int32_t master);
/* Node answered MOVED slot to target: when target is its replica and the
 * latest map gives node the slot, a failover made target the master and
 * node its replica (nodes.c). */
void an_nodes_learn_moved(an_analyzer *an, int32_t node, int32_t target, int32_t slot);
/* Parse a CLUSTER SLOTS / SHARDS / NODES reply answered by node. 0 ok. */
int an_nodes_learn_map(an_analyzer *an, const char *sub, int32_t node, const resp_reply *r);
/* A replica connected to master (REPLCONF listening-port). */
void an_nodes_learn_replica(an_analyzer *an, const cap_addr *host, uint16_t port, int32_t master);
/* A replication link recognised without its PSYNC (no REPLCONF listening-port
 * on the wire): master serves it, its replica connects from host. */
void an_nodes_learn_link(an_analyzer *an, int32_t master, const cap_addr *host);
/* The node made for a connection's server side was no node (a replication
 * link found reversed): leave it out of the report unless named otherwise. */
void an_nodes_phantom(an_analyzer *an, int32_t node);
void an_nodes_emit(an_analyzer *an);
void an_nodes_free(an_analyzer *an);

/* views.c */
void an_view_set(an_analyzer *an, an_cli *c, int32_t slot, int32_t node);
/* an_view_set, with its most common case inline: the slot already learnt
 * with this node in a single-node block (nothing to write). */
static inline void an_view_note(an_analyzer *an, an_cli *c, int32_t slot, int32_t node)
{
    const an_vblock *b = c->view.blocks;
    if (b && slot >= 0 && slot < AN_SLOTS && node >= 0 && node < 0xfffe) {
        b += (uint32_t)slot / AN_VIEW_BLOCK_SLOTS;
        if (!b->chunk && b->node == (uint32_t)node + 1 &&
            ((b->known >> ((uint32_t)slot % AN_VIEW_BLOCK_SLOTS)) & 1u))
            return;
    }
    an_view_set(an, c, slot, node);
}
int32_t an_view_get(const an_cli *c, int32_t slot);
void an_view_free(an_analyzer *an, an_cli *c);
an_memo *an_memo_get(an_analyzer *an, int32_t client, int32_t slot, int create);
void an_memos_drop_client(an_analyzer *an, int32_t client);

/* findings.c */
/* The finding for (kind, client, node, slot), created (invisible, count 0)
 * when new; AN_NONE when the table is full (counted in dropped_findings). It
 * becomes visible at min_count occurrences. */
int32_t an_finding_get(an_analyzer *an, an_finding_kind kind, const char *client, int32_t node,
                       int32_t slot, uint32_t min_count);
an_fnd *an_fnd_at(an_analyzer *an, int32_t idx);
/* One occurrence of finding idx at ts_us: count, times, severity raised to sev
 * (0: keep), summary replaced (NULL: keep), ev (nev events) appended to the
 * evidence up to its cap. Emitted at once when it becomes visible (it gets its
 * id then); later changes are emitted at an_flush / an_finish. */
void an_finding_occur(an_analyzer *an, int32_t idx, int64_t ts_us, an_severity sev,
                      const char *summary, const an_event *ev, size_t nev);
/* an_finding_get + an_finding_occur; returns the index or AN_NONE. */
int32_t an_finding_hit(an_analyzer *an, an_finding_kind kind, const char *client,
                       int32_t node, int32_t slot, int64_t ts_us, uint32_t min_count,
                       const char *summary, const an_event *ev, size_t nev);
int32_t an_finding_hit_sev(an_analyzer *an, an_finding_kind kind, an_severity sev,
                           const char *client, int32_t node, int32_t slot, int64_t ts_us,
                           uint32_t min_count, const char *summary, const an_event *ev,
                           size_t nev);
/* The finding changed without a new occurrence (more retries, a later ASK):
 * last_us moves to ts_us (0: keep); its summary and evidence are rebuilt by its
 * detector before it is emitted again. */
void an_finding_touch(an_analyzer *an, int32_t idx, int64_t ts_us);
/* Replace the event shown last in the evidence (the latest retry, ASK...). */
void an_finding_set_tail(an_analyzer *an, int32_t idx, const an_event *e);
/* Forget the evidence events (the detector rebuilds them). */
void an_finding_clear_events(an_fnd *f);
void an_finding_append_event(an_fnd *f, const an_event *e);
/* Charge finding idx an operation's extra time [from_us, to_us): its cost
 * grows by the part no earlier operation of it covered. */
void an_finding_add_latency(an_analyzer *an, int32_t idx, int64_t from_us, int64_t to_us);
/* Its cost becomes span s (migration_stuck: its window's operations so far). */
void an_finding_set_span(an_analyzer *an, int32_t idx, const an_span *s);
/* One operation the finding covers ended: counted, and charged as
 * an_finding_add_latency. */
void an_finding_add_operation(an_analyzer *an, int32_t idx, int64_t from_us, int64_t to_us);
/* Add a command name to f->note ("MSET, MGET, DEL"), once; " ..." when full. */
void an_note_add_name(an_fnd *f, const char *name);
void an_findings_emit(an_analyzer *an, int all);
void an_findings_free(an_analyzer *an);

/* ops.c */
typedef struct an_cmdctx {
    const resp_command *cmd;
    const an_config *cfg;
    an_cn *cn;
    an_cli *cli;
    int32_t node;
    const an_cmd *info;          /* command table entry, may be NULL */
    int asked;                   /* ASKING right before on this connection */
    int32_t slot;
    int32_t target;              /* MOVED/ASK target node */
    uint8_t key_done;            /* key[] filled (an_cmd_key) */
    size_t key_len;
    /* text buffers last: filled on demand, not cleared per command */
    char key[RESP_ARG_PREFIX + 1]; /* key text for records (redacted if asked) */
    char reply[RESP_ERRTEXT_MAX + 8]; /* filled by an_reply_text when needed */
} an_cmdctx;
/* The first key of x as records show it (escaped, or redacted when asked);
 * formatted at the first call, "" for a keyless command. */
const char *an_cmd_key(an_cmdctx *x);
const char *an_reply_text(an_cmdctx *x);
void an_ops_on_command(an_analyzer *an, an_cmdctx *x);
/* A command without its reply: it may be a waiting operation's retry. */
void an_ops_on_unanswered(an_analyzer *an, const an_cli *cli, const resp_request *req,
                          int32_t slot);
/* Requests of client cli to node were lost after from_us and before to_us
 * (resp_command.requests_lost): the retry of its operations redirected to
 * that node within the window may be among them. */
void an_ops_requests_lost(an_analyzer *an, an_cli *cli, int32_t node, int64_t from_us,
                          int64_t to_us);
#define AN_LOSS_WALK 256         /* waiting operations a loss marks one by one */
/* Is attempt cur (a MOVED) a replica's bounce of a read for want of
 * READONLY, readonly_missing's, rather than a redirect for moved_ignored? */
int an_readonly_bounce(const an_analyzer *an, const an_cmdctx *x, const an_attempt *cur);
void an_ops_expire(an_analyzer *an, int64_t now_us, int all);
/* How an operation ended (ops.c: every end goes through op_free). */
typedef enum an_op_end {
    AN_OP_COMPLETED,             /* a reply other than MOVED, ASK or TRYAGAIN */
    AN_OP_GAVE_UP,               /* judged: the client did not retry in time */
    AN_OP_RETRY_LOST,            /* judged: its retry may be what the capture lost */
    AN_OP_TARGET_UNSEEN,         /* judged: its retry would go to a node the
                                    capture holds no connection to */
    AN_OP_ABANDONED,             /* still in its retry window when the capture ended */
    AN_OP_EVICTED,               /* dropped unjudged: max_ops operations waiting */
    AN_OP_CLIENT_DROPPED,        /* dropped unjudged with its client: max_clients */
} an_op_end;
void an_ops_drop_client(an_analyzer *an, int32_t client);
void an_ops_free(an_analyzer *an);
/* An ASKING was spent on the command x (not a retry of an ASK'd operation):
 * called by the analyzer; may report asking_interleaved. */
void an_ops_asking_spent(an_analyzer *an, an_cmdctx *x, int64_t asking_ts);

/* detect_*.c: called by ops.c with the operation and the attempt just made. */
typedef struct an_attempt_ctx {
    an_cmdctx *x;
    an_op *op;                   /* NULL for a first attempt that completed */
    const an_attempt *prev;      /* the attempt before (retries), else NULL */
    const an_attempt *cur;
    int first;                   /* first attempt of its operation */
    int32_t found[AN_OP_FINDINGS]; /* findings this attempt occurred in */
    uint8_t nfound;
} an_attempt_ctx;
/* A retry after TRYAGAIN sent sooner than cfg.tryagain_min_backoff_us after
 * that reply is a fast one (a retry exactly at the backoff is not). The one
 * rule for tryagain_storm and the operation's tally. */
static inline int an_tryagain_fast(const an_config *cfg, const an_attempt *tryagain,
                                   const an_attempt *retry)
{
    return retry->start_us - tryagain->reply_us < cfg->tryagain_min_backoff_us;
}
/* Note that the attempt occurred in finding f (AN_NONE ignored): the
 * operation is charged to it. */
void an_attempt_found(an_attempt_ctx *a, int32_t f);
/* Charge operation op to finding f (once). */
void an_op_charge(an_op *op, int32_t f);
void an_detect_asking(an_analyzer *an, an_attempt_ctx *a);
void an_detect_ask_cached(an_analyzer *an, an_attempt_ctx *a);
void an_detect_moved_ignored(an_analyzer *an, an_attempt_ctx *a);
void an_detect_readonly_missing(an_analyzer *an, an_attempt_ctx *a);
void an_detect_crossslot(an_analyzer *an, an_attempt_ctx *a);
void an_detect_redirect_loop(an_analyzer *an, an_attempt_ctx *a);
/* Operation op, reported as a redirect_loop, has ended (how): its finding
 * learns its final figures. */
void an_detect_loop_end(an_analyzer *an, const an_op *op, an_op_end how);
void an_detect_tryagain_storm(an_analyzer *an, an_attempt_ctx *a);
void an_detect_unfollowed(an_analyzer *an, an_op *op, int64_t now_us);
void an_detect_asking_interleaved(an_analyzer *an, an_cmdctx *x, an_op *op,
                                  int64_t asking_ts);
void an_detect_migration_stuck(an_analyzer *an, an_mig *m, int64_t now_us, int at_end);
/* Rebuild a stale finding's summary and evidence from its detector's state
 * (called by findings.c before emitting it). */
void an_detect_storm_refresh(an_analyzer *an, an_fnd *f);
void an_tl_stuck_refresh(an_analyzer *an, an_fnd *f);

/* Fill an evidence event from a command context. */
void an_event_from(an_event *e, an_cmdctx *x, const char *what);
/* Text an event about an earlier attempt points to. */
typedef struct an_evtext {
    char reply[RESP_ERRTEXT_MAX + 8];
    char src[AN_NAME_MAX];
} an_evtext;
/* The same for an earlier attempt (no command at hand); buf holds its text. */
void an_event_from_attempt(an_analyzer *an, an_event *e, const an_op *op,
                           const an_attempt *t, const char *what, an_evtext *buf);

/* timeline.c */
void an_tl_redirect(an_analyzer *an, an_cmdctx *x);
void an_tl_setslot(an_analyzer *an, an_cmdctx *x);
void an_tl_migrate(an_analyzer *an, an_cmdctx *x);
/* A keyed command answered without error: when its node is the target of
 * the slot's open window and no ASKING covered it, the target owns the slot,
 * so the window has ended (the flip, for captures that see neither SETSLOT
 * NODE nor a MOVED to the target). */
void an_tl_served(an_analyzer *an, const an_cmdctx *x);
void an_tl_op_cost(an_analyzer *an, int32_t slot, int64_t from_us, int64_t to_us);
void an_tl_check(an_analyzer *an, int64_t now_us, int at_end);
void an_tl_emit(an_analyzer *an);
void an_tl_free(an_analyzer *an);

/* latency.c */
/* A finished operation: its time from the first request to the final reply,
 * the extra time (first request to the final attempt's request) and extra round
 * trips (attempts - 1 + ASKINGs), per client, first node, slot and overall. A
 * slot gets histograms at its first redirected operation (cap
 * cfg.max_slot_latency). */
void an_lat_record(an_analyzer *an, int32_t client, int32_t node, int32_t slot,
                   const an_attempt *first, const an_attempt *final, uint32_t attempts,
                   uint32_t askings);
/* An operation given up after a redirect (no retry came): redirected, its
 * time and extra time both first request to last reply. */
void an_lat_record_given_up(an_analyzer *an, int32_t client, int32_t node, int32_t slot,
                            const an_attempt *first, const an_attempt *last, uint32_t attempts,
                            uint32_t askings);
/* The overall summaries (all_lat) as the sum of every node's and nonode_lat. */
void an_lat_sum_all(struct an_analyzer *an);
/* The histogram of l, allocated at its first use (NULL: out of memory, the
 * sample then counts in the totals only). */
an_hist *an_lat_hist(an_lat *l);
/* A direct sample (no extra time or round trip) whose bucket is b, into l
 * whose histogram h is already allocated. */
static inline void an_lat_add_to(an_lat *l, an_hist *h, int64_t us, unsigned b)
{
    an_count_sat(&h->b[b]);
    l->count++;
    l->total_us += us;
    if (us > l->max_us)
        l->max_us = us;
}
/* A direct sample (no extra time or round trip) whose bucket is b. */
static inline void an_lat_add_direct(an_lat *l, int64_t us, unsigned b)
{
    an_hist *h = l->h ? l->h : an_lat_hist(l);
    if (h) {
        an_lat_add_to(l, h, us, b);
        return;
    }
    l->count++;
    l->total_us += us;
    if (us > l->max_us)
        l->max_us = us;
}
/* A direct operation (one attempt) that took total_us, of client c (in use),
 * into the same scopes as an_lat_record (a slot has summaries only once it
 * saw a redirected operation). Inline: the most common record of all. */
static inline void an_lat_direct(an_analyzer *an, an_cli *c, int32_t node, int32_t slot,
                                 int64_t total_us)
{
    an->st.operations++;
    if (total_us < 0)
        total_us = 0;
    unsigned b = an_hist_bucket(total_us);
    an_lat_add_direct(&c->lat[0], total_us, b);
    an_lat_add_direct(node >= 0 && (uint32_t)node < an->nnodes ? &an->nodes[node].lat[0]
                                                                : &an->nonode_lat[0],
                      total_us, b);
    if (slot >= 0 && slot < AN_SLOTS && (an->slot_busy[slot] & AN_SLOT_LAT))
        an_lat_add_direct(&an->slot_lat[slot][0], total_us, b);
}

/* ---------------------------------------------------------------- cluster.c */

/*
 * The cluster's own story: what the nodes said about themselves on the
 * cluster bus (bus/), or, without bus traffic, what clients were told
 * (CLUSTER SLOTS / SHARDS / NODES replies, MOVED). cluster.c turns bus
 * messages into the events below and hands each, in capture-time order, to
 * the observers registered with an_cluster_observe (the store's records are
 * one of them; convergence and writes_at_risk are others).
 *
 * Contract (names are stable: other modules build on them):
 * - Every event is emitted once, when the message that proves it is handed
 *   to the analysis, with ts_us its capture time; events never go back in
 *   time further than the capture does (a capture whose clock goes back may
 *   give an earlier ts after a later one).
 * - Nodes are registry indexes (an_nd, nodes.c), AN_NONE when the registry is
 *   full (counted in an_stats.dropped_nodes); ids are the 40 hex characters
 *   of the cluster node id, "" when not known.
 * - Where an event names the bus message behind it, frame is its capture
 *   record (cap_event.frame of the chunk that completed it; 0 for clients'
 *   sources) and conn the id of the connection it travelled on.
 * - Pointers are valid during the observer's call only; observers must not
 *   call back into cluster.c's emitting functions.
 */

/* A node's announced state: the header of a message it sent (a PING, PONG,
 * MEET, FAIL, UPDATE, AUTH_REQUEST/ACK or MFSTART carries the sender's own
 * flags, master, epochs and ports). Emitted at a node's first announcement
 * and whenever one of the AN_ANN_* fields differs from its previous one. */
enum {
    AN_ANN_FIRST = 1,            /* its first announcement in the capture */
    AN_ANN_ROLE = 2,             /* master/replica flag changed */
    AN_ANN_MASTER = 4,           /* master id changed */
    AN_ANN_FLAGS = 8,            /* other BUS_NODE_* flags (handshake, nofailover) */
    AN_ANN_CURRENT_EPOCH = 16,
    AN_ANN_CONFIG_EPOCH = 32,
    AN_ANN_ADDR = 64             /* announced ip, port or bus port changed */
};
typedef struct an_node_ann {
    int64_t ts_us;
    uint64_t frame, conn;
    int32_t node;                /* the sender */
    char id[BUS_NAMELEN + 1];
    char ip[BUS_IPLEN + 1];      /* announced ip; "" when it announced none
                                    (then the connection's address is used
                                    for the registry) */
    uint16_t port, cport;        /* client port, bus port */
    uint16_t flags;              /* BUS_NODE_* as it sent them (MYSELF cleared) */
    int32_t master;              /* its master (replicas), else AN_NONE */
    char master_id[BUS_NAMELEN + 1]; /* "" for a master */
    uint64_t current_epoch, config_epoch;
    uint64_t offset;             /* replication offset */
    uint32_t changed;            /* AN_ANN_* */
} an_node_ann;

/* A node's health as the other nodes see it: PFAIL (some node flags it in
 * gossip or in its own view), FAIL (a FAIL message, or the flag in gossip),
 * ok again (a FAIL cleared: the node is flagged neither way by the node that
 * spoke last about it, or it announced itself again after FAIL). */
typedef enum an_health { AN_HEALTH_OK = 0, AN_HEALTH_PFAIL = 1, AN_HEALTH_FAIL = 2 } an_health;
/* "ok", "pfail", "fail". */
const char *an_health_name(an_health h);
typedef struct an_node_state {
    int64_t ts_us;
    uint64_t frame, conn;
    int32_t node;
    char id[BUS_NAMELEN + 1];
    an_health from, to;
    int32_t reporter;            /* the node whose message showed it */
    char reporter_id[BUS_NAMELEN + 1];
    uint8_t via;                 /* bus_type of that message (FAIL, PING, ...) */
} an_node_state;

/* Where slot ownership came from. */
typedef enum an_own_source { AN_OWN_BUS = 0, AN_OWN_CLIENTS = 1 } an_own_source;
/* "bus", "clients". */
const char *an_own_source_name(an_own_source s);

/* Why a slot changed owner. */
typedef enum an_own_cause {
    AN_CAUSE_UNKNOWN = 0,
    AN_CAUSE_FIRST = 1,          /* the first owner the capture shows */
    AN_CAUSE_MIGRATION = 2,      /* another master took it (resharding) */
    AN_CAUSE_FAILOVER = 3        /* the old owner's replica took it */
} an_own_cause;
/* "unknown", "first", "migration", "failover". */
const char *an_own_cause_name(an_own_cause c);

/* Slots lo..hi changed owner at ts_us: node now owns them with config epoch
 * config_epoch (0 when the source gives none: CLUSTER SLOTS, MOVED), after
 * old_node (AN_NONE for the first owner seen) with old_epoch. Source bus: a
 * master's claim in its header (or an UPDATE) with a config epoch above the
 * owner's; source clients: the latest map reply or MOVED clients received.
 * One event per contiguous range with the same old owner, per message. */
typedef struct an_slot_owner {
    int64_t ts_us;
    uint64_t frame, conn;
    int32_t slot_lo, slot_hi;
    int32_t node;
    char node_id[BUS_NAMELEN + 1];
    uint64_t config_epoch;
    int32_t old_node;
    char old_id[BUS_NAMELEN + 1];
    uint64_t old_epoch;
    int64_t old_from_us;         /* since when old_node owned them, 0: none */
    an_own_source source;
    an_own_cause cause;
    uint8_t via;                 /* bus: the bus_type that proved it; clients:
                                    'M' MOVED, 'S' SLOTS, 'H' SHARDS, 'N' NODES */
} an_slot_owner;

/* A failover: a replica replaced its master. Emitted when the new master's
 * first claim of the old master's slots with the new config epoch is seen
 * (done_us), or at the end for an election seen without its outcome (done_us
 * 0). kind: manual when MFSTART from the replica to its master was seen;
 * automatic when the master was failed (FAIL) and the replica asked for votes
 * (AUTH_REQUEST); takeover when the replica bumped its epoch without an
 * election (no AUTH_REQUEST for that epoch). */
typedef enum an_fo_kind { AN_FO_MANUAL = 0, AN_FO_TAKEOVER = 1, AN_FO_AUTOMATIC = 2,
                          AN_FO_UNKNOWN = 3 } an_fo_kind;
/* "manual", "takeover", "automatic", "unknown". */
const char *an_fo_kind_name(an_fo_kind k);
typedef struct an_failover {
    int64_t ts_us;               /* = done_us, or the last election event */
    uint64_t frame, conn;        /* the message that showed it done */
    an_fo_kind kind;
    int32_t old_master, new_master;
    char old_id[BUS_NAMELEN + 1], new_id[BUS_NAMELEN + 1];
    uint64_t config_epoch;       /* the new master's */
    int64_t detected_us;         /* manual: MFSTART; automatic: the first FAIL
                                    about the old master (else its first PFAIL);
                                    takeover: 0 (nothing announces it) */
    int64_t elected_us;          /* the vote that made the majority (else the
                                    last vote seen), 0 when none */
    int64_t done_us;             /* the new master's first claim, 0: not seen */
    uint32_t votes;              /* AUTH_ACKs for its election epoch seen */
    uint32_t slots;              /* slots it took over */
} an_failover;

/* Who listens. Any callback may be NULL. */
typedef struct an_cluster_observer {
    void *ctx;
    void (*node_announced)(an_analyzer *an, void *ctx, const an_node_ann *e);
    void (*node_state)(an_analyzer *an, void *ctx, const an_node_state *e);
    void (*slot_owner)(an_analyzer *an, void *ctx, const an_slot_owner *e);
    void (*failover)(an_analyzer *an, void *ctx, const an_failover *e);
} an_cluster_observer;
#define AN_CLUSTER_OBSERVERS 8
/* Register an observer (called in an_new, before any event). 0, -1 full. */
int an_cluster_observe(an_analyzer *an, const an_cluster_observer *o);

/* The owner of slot now, per source (bus, else clients when the capture
 * has no bus claim): node, its config epoch and since when (each may be
 * NULL). AN_NONE when nobody is known to own it. */
int32_t an_cluster_slot_owner(const an_analyzer *an, int32_t slot, uint64_t *config_epoch,
                              int64_t *since_us, an_own_source *source);
/* The latest failover that gave slot to its current bus owner, or NULL. */
const an_failover *an_cluster_slot_failover(const an_analyzer *an, int32_t slot);
/* Does the capture carry bus messages with slot claims (the source used)? */
int an_cluster_has_bus(const an_analyzer *an);
/* Has node sent a bus message on a link it opened? Its broadcasts (the
 * claim it makes when it takes slots) go out on those: a capture that holds
 * only the links others opened to it sees its new claims late, at its next
 * PONG. */
int an_cluster_heard_out(const an_analyzer *an, int32_t node);

/* Fed by analyzer.c: one bus message of a connection (dir: its cap_dir). */
void an_cluster_on_bus(an_analyzer *an, const cap_conn *cc, int dir, const bus_msg *m,
                       int64_t ts_us, uint64_t frame);
/* Fed by nodes.c / analyzer.c: what clients were told. Slots lo..hi belong
 * to node (config_epoch 0: not given) per a map reply or MOVED (via as in
 * an_slot_owner). */
void an_cluster_on_told(an_analyzer *an, int32_t lo, int32_t hi, int32_t node,
                        uint64_t config_epoch, int64_t ts_us, uint8_t via);
/* The cause of a MOVED for slot from node `from` to node `to` at ts_us:
 * failover when the latest ownership change of the slot to `to` was a
 * failover (or `to` is or was `from`'s replica), migration when it was a
 * migration (or the slot has a migration window to `to`), else unknown. */
an_own_cause an_cluster_moved_cause(an_analyzer *an, int32_t slot, int32_t from, int32_t to,
                                    int64_t ts_us);
/* A bus connection ended (its peers are forgotten). */
void an_cluster_conn_close(an_analyzer *an, uint64_t conn_id);
/* The bus's fields of node's record (an_nodes_emit). */
void an_cluster_fill_node(const an_analyzer *an, int32_t node, an_node *out);
/* End of input: pending elections, the open ownership rows. */
void an_cluster_finish(an_analyzer *an);
void an_cluster_free(an_analyzer *an);

/* ---------------------------------------------------------------- convergence.c */

/*
 * After each ownership change of cluster.c (bus claims; clients' changes when
 * the capture has no bus), what each client did with those slots: rows for
 * the convergence table, the finding slow_convergence (a client still sending
 * them to the old owner more than cfg.slow_convergence_us after the flip) and
 * writes_at_risk (writes the old owner acknowledged after a bus claim with a
 * higher config epoch). A change is watched for cfg.convergence_window_us;
 * its slots carry AN_SLOT_OWN meanwhile, so that their commands take the full
 * path and reach an_cv_on_command.
 */
#define AN_CV_CHANGES 256            /* changes watched at once */
typedef struct an_cv an_cv;
/* The observer of ownership changes (an_cluster_observer.slot_owner). */
void an_cv_slot_owner(an_analyzer *an, void *ctx, const an_slot_owner *e);
/* A command on a slot with AN_SLOT_OWN, answered (outcome RESP_OK). */
void an_cv_on_command(an_analyzer *an, an_cmdctx *x);
/* Close the changes watched past their window (all: every one, at the end),
 * emitting their rows. */
void an_cv_check(an_analyzer *an, int64_t now_us, int all);
void an_cv_free(an_analyzer *an);
/* series.c */
int an_ser_init(an_analyzer *an);
void an_ser_free(an_analyzer *an);
/* One event at ts: what (AN_SC_*, -1: none) counted, and an operation of
 * latency us (lat 0 direct, 1 redirected, -1: none), in the cluster's cell
 * and those of client, node and slot (each AN_NONE / -1 when not one; slot
 * only while its migration window is open). */
void an_ser_add(an_analyzer *an, int64_t ts, int32_t client, int32_t node, int32_t slot,
                int what, int lat, int64_t us);
/* slot when its migration window is open (the series' "slots" scope), else -1. */
static inline int32_t an_ser_slot(const an_analyzer *an, int32_t slot)
{
    return slot >= 0 && slot < AN_SLOTS && (an->slot_busy[slot] & AN_SLOT_MIG) ? slot : -1;
}
/* an_ser_quick's general case. */
void an_ser_quick_slow(an_analyzer *an, int64_t ts, int32_t client, int32_t node, int64_t us);
/* Write the buckets that no event can reach any more (live), or all. */
void an_ser_flush(an_analyzer *an, int64_t now_us);
void an_ser_finish(an_analyzer *an);
/* A histogram bucket counted, saturating. */
static inline void an_ser_hist_inc(an_hist *h, unsigned hb)
{
    an_count_sat(&h->b[hb]);
}
/* an_ser_quick's inline case alone: returns 1 when it counted the command,
 * 0 when an_ser_quick_slow has to (with the same arguments). */
static inline __attribute__((always_inline)) int an_ser_quick_try(an_analyzer *an, int64_t ts,
                                                                 an_cli *c, an_nd *nd,
                                                                 int64_t us, unsigned hb)
{
    an_series *s = &an->ser;
    uint32_t seq = s->cur_seq;
    if ((uint64_t)ts - (uint64_t)s->cur_start < (uint64_t)s->width && c->ser_seq == seq && nd &&
        nd->ser_seq == seq) {
        an_ser_cell *cc = c->ser_cp, *nc = nd->ser_cp;
        cc->n[AN_SC_COMMANDS]++;
        nc->n[AN_SC_COMMANDS]++;
        if (us >= 0) {
            an_ser_hist_inc(cc->h[0], hb);
            an_ser_hist_inc(nc->h[0], hb);
        }
        return 1;
    }
    return !s->width; /* no series: nothing to count */
}
/* A command at ts of client ci (entry c) answered by node (entry nd, NULL
 * when node is not one: an_node_entry), and when us >= 0 the direct
 * operation it was (its bucket hb: an_hist_bucket(us)): the most common
 * event, inline while the newest bucket holds it and both scopes have their
 * cells there (the cluster's figures are its clients' sum). */
static inline __attribute__((always_inline)) void an_ser_quick(an_analyzer *an, int64_t ts,
                                                              int32_t ci, an_cli *c,
                                                              int32_t node, an_nd *nd,
                                                              int64_t us, unsigned hb)
{
    if (!an_ser_quick_try(an, ts, c, nd, us, hb))
        an_ser_quick_slow(an, ts, ci, node, us);
}

#endif /* SLOTSCOPE_ANALYSIS_INTERNAL_H */
