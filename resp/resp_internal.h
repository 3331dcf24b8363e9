/*
 * resp_internal.h - state shared by the files of resp/ (not a public header).
 *
 *   decode_req.c  request decoder (client -> server): multibulk and inline
 *   decode_rep.c  reply decoder (server -> client): every RESP2/RESP3 type
 *   resync.c      finding a plausible message boundary after garbage or a gap
 *   pair.c        per-connection FIFO pairing (with modes.c, ring.c, loss.c,
 *                 conn.c; their shared part: pair_internal.h)
 *   proofs.c      the endpoints a command proves to serve, noted for the
 *                 capture layer's orientation (resp_config.servers)
 *
 * Spec: https://redis.io/docs/latest/develop/reference/protocol-spec/
 */
#ifndef SLOTSCOPE_RESP_INTERNAL_H
#define SLOTSCOPE_RESP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "resp/resp.h"

/* ---------------------------------------------------------------- limits */

#define RD_LBUF 176                /* bytes kept of a line (errtext fits) */
#define RD_NUM_MAX 24              /* a length or count line longer than this is bad */
#define RD_STACK_INLINE 8          /* aggregate frames held without allocating */
#define RD_MAX_ELEMENTS 0x7fffffffLL /* largest aggregate / multibulk count */
#define RD_ELEM0_MAX 16            /* bytes kept of a top-level aggregate's 1st element */
#define RD_STATUS_MAX 16           /* bytes kept of a top-level simple string */
#define RD_INLINE_MAX (64 * 1024)  /* Redis PROTO_INLINE_MAX_SIZE */

/* Results of the line reader. */
enum { RD_MORE = 0, RD_DONE = 1, RD_ERR = -1, RD_ERR_LIMIT = -2 };

/* A line being read (CRLF-terminated), possibly across chunks. Only the first
 * RD_LBUF bytes are kept; the rest is counted. */
typedef struct rd_line {
    uint64_t len;        /* bytes so far, CR included, LF not */
    uint8_t last;        /* last byte so far (to check the CR before LF) */
    uint8_t err_bound;   /* after an error: *pp is just past a CRLF, so the
                            next byte may start a message */
    uint8_t buf[RD_LBUF];
} rd_line;

/* Resynchronisation scanner: looks for CRLF, a type byte and a plausible line
 * (requests: or a plausible inline command, see resync.c). */
typedef struct rd_resync {
    uint8_t state;       /* RS_* in resync.c */
    uint8_t type;        /* candidate type byte */
    uint8_t is_req;      /* requests: "*<n>\r\n$" (or an inline command) */
    uint8_t inline_ok;   /* requests: inline commands may be found too (1),
                            also as lone words and at the starting boundary
                            (2: the client is known to speak inline); set by
                            the decoder after rd_resync_start */
    uint8_t at_start;    /* the line before the next boundary is not known
                            (set by rd_resync_start; a decoder that knows
                            its first byte sets first and clears this) */
    uint8_t first;       /* first byte of the line being scanned */
    uint8_t last;        /* last byte of the previous chunk scanned */
    uint32_t max_line;   /* inline candidates: longest line (with inline_ok) */
    uint32_t cand;       /* candidate bytes held (type + line + CRLF) */
    int64_t num;         /* candidate's number when numeric */
    uint64_t full;       /* candidate line length (without CRLF) */
    int64_t cand_start_us; /* capture time of the candidate's type byte */
    uint64_t frame;      /* record of the bytes being scanned (the caller's) */
    uint64_t cand_start_frame; /* record of the candidate's type byte */
    uint64_t seen;       /* bytes scanned since rd_resync_start */
    uint8_t uncounted;   /* the first search of a connection picked up
                            mid-stream: counted in resyncs at its first byte
                            (a side that never sends searched nothing) */
} rd_resync;

/* ---------------------------------------------------------------- requests */

/* In-flight FIFOs (ring.c) are made of pages of RQ_PAGE bytes, taken from
 * and given back to the pipeline's pool: a FIFO never resizes, it holds
 * the pages its live span covers. The pool keeps at most RQ_POOL_KEEP
 * pages, or as many as are in use if more (the rest are freed). */
#define RQ_PAGE_SHIFT 10
#define RQ_PAGE (1u << RQ_PAGE_SHIFT)
#define RQ_POOL_KEEP 512

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
 * pairing facts worked out when it is complete (pair.c). One per
 * connection (rc_conn.stage): the decoder writes into it, and pairing packs
 * it into the in-flight ring as an rq_slot (which keeps the field names of
 * the pairing facts). */
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
    resp_command cmd;        /* request filled in (its reply is not used:
                                replies are decoded into rc_conn.reply) */
} rq_entry;

/* One in-flight request: two cache lines. Its first 32 bytes are those of
 * rq_entry (the pairing facts, same names), copied as one block; the
 * request's fixed fields are two blocks of resp_request, copied as they
 * are (req_time: start_us, ts_us, start_frame; req_facts: argc up to the
 * argument prefixes); its text (name, kept arguments, first key) is in the
 * connection's text FIFO (rc_conn.text). The prefixes are 64-byte arrays of
 * which a few bytes are used, and a lossy reply stream holds a few hundred
 * requests per connection. */
#define RQ_PAIRING_BYTES 32
#define RQ_TIME_BYTES (offsetof(resp_request, name) - offsetof(resp_request, start_us))
#define RQ_FACTS_BYTES (offsetof(resp_request, args) - offsetof(resp_request, argc))
typedef struct rq_slot {
    _Alignas(64) uint32_t nreply;
    uint8_t kind, keep, got_reply, dynamic, sub_word, hello_proto, uncertain, name_len, tx;
    uint8_t in_multi;        /* resp_command.in_multi */
    uint8_t key0_dup;        /* key0 is args[0] (same kept bytes): not stored twice */
    uint8_t spare;
    uint64_t req_end;        /* as rq_entry (also resp_request.end_pos) */
    union {
        int64_t first_reply_us;
        struct {
            uint32_t queued, sent;
        } tx_elems;
    };
    uint16_t text_len;       /* its bytes in the text FIFO (padding included) */
    uint32_t text_pos;       /* where its text starts in the FIFO */
    uint64_t seq;            /* resp_command.seq */
    uint8_t req_time[24];    /* resp_request from start_us to name */
    uint8_t req_facts[56];   /* resp_request from argc to args */
} rq_slot;
_Static_assert(sizeof(rq_slot) == 128, "an in-flight slot is two cache lines");
_Static_assert(offsetof(rq_slot, req_end) == offsetof(rq_entry, req_end) &&
                   offsetof(rq_slot, first_reply_us) == offsetof(rq_entry, first_reply_us) &&
                   offsetof(rq_slot, tx) == offsetof(rq_entry, tx) &&
                   offsetof(rq_entry, first_reply_us) + 8 == RQ_PAIRING_BYTES &&
                   offsetof(rq_slot, in_multi) > offsetof(rq_slot, tx),
               "the pairing facts of rq_slot and rq_entry are one block");
_Static_assert(RQ_TIME_BYTES == 24 && offsetof(resp_request, start_us) == 0 &&
                   offsetof(resp_request, ts_us) == 8,
               "resp_request's start_us .. start_frame is req_time");
_Static_assert(RQ_FACTS_BYTES == 56, "resp_request's argc .. arg_full_len is req_facts");
/* The longest text of a request (its pieces in 16-byte units: the arrays'
 * sizes are multiples of 16). A text never straddles a page. */
#define RQ_TEXT_MAX (RESP_NAME_MAX + (RESP_ARG_KEEP + 1) * RESP_ARG_PREFIX)

/* Which request arguments are credentials. */
enum { CRED_NONE = 0, CRED_ALL, CRED_HELLO, CRED_MIGRATE, CRED_CONFIG, CRED_ACL };

/* Request decoder states. */
enum {
    RQ_START = 0,   /* at a message boundary */
    RQ_MB_LINE,     /* reading "*<n>" */
    RQ_ARG_TYPE,    /* expecting '$' */
    RQ_ARG_LINE,    /* reading "<len>" after '$' */
    RQ_ARG_BODY,    /* argument payload */
    RQ_ARG_CRLF,    /* CRLF after the payload */
    RQ_INLINE,      /* inline command */
    RQ_RESYNC       /* looking for a boundary */
};

/* Inline tokenizer states (sdssplitargs-like). */
enum { IN_SPACE = 0, IN_WORD, IN_DQ, IN_DQ_ESC, IN_DQ_HEX1, IN_DQ_HEX2, IN_SQ,
       IN_SQ_ESC, IN_AFTER_Q, IN_CR };

/* The fields used by every request come first (three cache lines: a
 * pipelined capture interleaves many connections, so each line of decoder
 * state touched per request is likely a cache miss); the line buffer, the
 * resync scanner and prevbuf, used only by split lines, resyncs and long
 * requests, come last. */
typedef struct rq_dec {
    uint8_t state;
    uint8_t in_msg;          /* a message has started */
    /* credentials */
    uint8_t cred;            /* CRED_* of this command */
    uint8_t cred_left;       /* arguments still secret after a keyword */
    uint8_t cred_stop;       /* MIGRATE: past KEYS, no more keywords */
    uint8_t cred_skipped;    /* HELLO: credentials so far, which take no
                                args[] slot (the SETNAME after them is kept) */
    /* the argument being read */
    uint8_t a_name;          /* argument 0 (the command name) */
    uint8_t a_key;           /* the key hook said it is a key */
    uint8_t a_secret;        /* a credential: nothing is copied */
    uint8_t a_gap;           /* bytes of it were lost in a gap: its kept prefix
                                (and slot, for a key) are unknown */
    /* multibulk */
    uint8_t crlf_left;       /* bytes of the trailing CRLF still to come */
    /* inline */
    uint8_t in_state;        /* IN_* */
    uint8_t in_hex;          /* first hex digit of \xHH */
    uint8_t in_arg_open;     /* an argument has started */
    uint8_t in_bad;          /* unbalanced quotes: the server rejects the
                                line at its end (answering an error) */
    uint32_t in_len;         /* bytes of the inline line so far */
    uint32_t argc_expected;  /* from "*<n>" */
    uint32_t argi;           /* index of the argument being read */
    uint32_t a_full;         /* declared length (inline: counted) */
    uint64_t off;            /* stream offset of the chunk being decoded */
    uint64_t msg_off;        /* stream offset of the message's first byte */
    uint64_t arg_left;       /* payload bytes still to come */
    uint8_t *a_dst;          /* where its prefix goes, NULL if nowhere */
    uint64_t a_seen;         /* bytes of it seen */
    resp_slot_hasher hasher; /* for keys */
    /* the previous argument, for the key hook */
    uint32_t prev_len;
    uint32_t prev_full;
    const uint8_t *prev;     /* its prefix, NULL if secret */
    resp_keyctx kc;          /* handed to the key hook; its scratch words
                                live here between calls (no copies) */
    rd_line line;            /* its len is read per length line */
    rd_resync rs;
    uint8_t inline_seen;     /* an inline command was decoded: the client
                                speaks inline (resync may look for one) */
    uint8_t prevbuf[RESP_ARG_PREFIX]; /* prefix of arguments past RESP_ARG_KEEP */
} rq_dec;

/* ---------------------------------------------------------------- replies */

/* One open aggregate. */
typedef struct rd_frame {
    uint64_t left;           /* elements still to come */
    uint8_t type;            /* '*', '%', '~', '>', '|' */
} rd_frame;

enum {
    RP_TYPE = 0,    /* expecting a type byte */
    RP_LINE,        /* reading the line after it */
    RP_BULK,        /* bulk payload */
    RP_BULK_CRLF,   /* CRLF after the payload */
    RP_RESYNC,      /* looking for a boundary */
    RP_SINK         /* replication stream: ignored */
};

typedef struct rp_dec {
    uint8_t state;
    uint8_t in_msg;          /* a top-level message has started */
    uint8_t ltype;           /* type byte of the current line/bulk */
    uint8_t crlf_left;
    uint8_t top_set;         /* the top-level (non-attribute) value started */
    uint64_t off;
    uint64_t msg_off;
    uint64_t bulk_left;
    uint32_t depth;
    uint32_t stack_cap;
    rd_frame *stack;         /* = inline_stack or heap when deeper */
    uint64_t top_idx;        /* elements completed in the top aggregate */
    /* capture of small bulk payloads */
    uint8_t *cap_dst;
    uint32_t cap_max;
    uint32_t cap_len;
    uint8_t cap_what;        /* 1 errtext, 2 elem0 */
    /* facts about the top-level value, for pairing */
    uint8_t elem0[RD_ELEM0_MAX];
    uint8_t elem0_len;
    uint8_t elem0_set;
    uint8_t elem1[8];        /* a top-level aggregate's 2nd element, kept only
                                on a connection watched for replication
                                (REPLCONF ACK or GETACK, pair.c) */
    uint8_t elem1_len;
    uint8_t elem1_set;
    int64_t elem2;           /* integer third element (subscribe count) */
    uint8_t elem2_set;
    uint8_t status[RD_STATUS_MAX];
    uint8_t status_len;
    uint8_t status_monitor;  /* simple string shaped like a MONITOR line */
    uint32_t errtext_len;
    /* used by lines split across chunks, resyncs and nesting: last */
    rd_line line;
    rd_resync rs;
    rd_frame inline_stack[RD_STACK_INLINE];
    uint64_t trim_at;        /* set by pairing: msg_off + 1 of a message
                                whose top-level array declaring trim_decl
                                elements carries only trim_to (EXEC of a
                                transaction that ran CLIENT REPLY OFF/SKIP:
                                see pair.c); no other message starts there,
                                so it needs no clearing */
    uint32_t trim_decl;
    uint32_t trim_to;
} rp_dec;

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
typedef struct rc_conn {
    struct rc_conn *prev, *next;  /* live connections */
    cap_conn *cc;
    uint64_t conn_word;       /* the sink's (resp_sink.conn_word) */
    struct resp_pipeline *rp;
    /* FIFO of in-flight requests: count slots (sizeof(rq_slot) bytes
     * each) from ring.head on, their text in text (ring.c) */
    rq_pages ring;
    uint32_t count;
    uint8_t cur_dropped;      /* cur will not be queued (a cap, or no memory) */
    uint32_t noreply_queued;  /* queued requests that expect no reply (the
                                 ones flush_no_reply emits, pair.c) */
    /* client-side modes (known when a request is decoded) */
    uint8_t in_multi, reply_off, skip_next;
    rq_entry *cur;            /* where the request decoder writes: &stage */
    uint64_t frame;           /* record of the DATA being fed (cap_event.frame) */
    resp_reply *rep;          /* where the reply decoder writes: &reply */
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
    /* raw reply kept for analysis */
    uint8_t keeping;
    uint8_t keep_over;
    uint32_t sub_channels, sub_patterns, sub_shards;
    rq_dec rq;
    rp_dec rpd;
    resp_reply reply;         /* where every reply is decoded (rep) */
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
    rq_entry stage;           /* the request being decoded (cur) */
} rc_conn;

enum { REPL_MID_NONE = 0, REPL_MID_SERVER = 1, REPL_MID_CLIENT = 2 };

struct resp_pipeline {
    resp_config cfg;
    resp_sink sink;
    rc_conn *live;            /* list of live connections */
    resp_stats closed;        /* totals of closed connections + global counters */
    resp_stats view;          /* what resp_get_stats returns */
    uint64_t inflight_total;
    uint64_t kept_total;      /* keep buffer bytes allocated over all connections */
    void *pool;               /* free pages, linked through their first word */
    uint32_t pool_n;          /* pages in it */
    uint64_t pages_used;      /* pages held by the FIFOs of all connections */
    uint64_t pages_peak;      /* most pages allocated at once (used + pool) */
    uint64_t page_allocs;     /* pages allocated (tests: not per command) */
    uint64_t index;           /* the record being fed (cap_event.index of the
                                 latest event): proofs.c stamps with it */
    resp_command out;         /* the command handed to the sink: an emitted
                                 slot is unpacked here (one pipeline per
                                 thread: no global state) */
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

/* ---------------------------------------------------------------- helpers */

/* How a capture gap of len bytes (0: unknown) meets a bulk being read, on
 * either side: in_body with body_left payload bytes still due (then a CRLF of
 * 2), or in_crlf with crlf_left CRLF bytes due. Returns 1 when the gap ends
 * inside the payload or its CRLF (it can be bridged), with *lost the payload
 * bytes it covers; 0 when it runs past them or is of unknown length. */
static inline int rd_gap_in_bulk(uint64_t len, int in_body, int in_crlf, uint64_t body_left,
                                 uint8_t crlf_left, uint64_t *lost)
{
    uint64_t payload = in_body ? body_left : 0;
    uint64_t crlf = in_body ? 2 : crlf_left;
    if (len == 0 || !(in_body || in_crlf) || len > payload + crlf)
        return 0;
    *lost = len < payload ? len : payload;
    return 1;
}

/* Parse a strict decimal integer: optional '-', digits, no leading zeros (except
 * "0"), no overflow. Returns 0 on success. */
static inline int rd_parse_i64(const uint8_t *p, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n == 0 || n > 20)
        return -1;
    if (p[0] == '-') {
        neg = 1;
        i = 1;
        if (n == 1)
            return -1;
    }
    if (p[i] == '0' && n - i > 1)
        return -1;
    if (neg && p[i] == '0')
        return -1; /* "-0" */
    uint64_t v = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d > 9)
            return -1;
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return -1;
        *out = (v == (uint64_t)INT64_MAX + 1) ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return -1;
        *out = (int64_t)v;
    }
    return 0;
}

/* Fast path for a length or count line that lies wholly in the chunk:
 * "[-]<1..18 digits>\r\n" without a leading zero. Returns the bytes it spans
 * (number and CRLF) with *out set, or 0 to let the line reader and
 * rd_parse_i64 handle it (split lines, long or malformed numbers). 18 digits
 * cannot overflow an int64. */
static inline size_t rd_num_fast(const uint8_t *p, const uint8_t *end, int64_t *out)
{
    /* most lengths and counts have one or two digits */
    if (end - p >= 4) {
        unsigned d0 = (unsigned)p[0] - '0';
        if (d0 <= 9) {
            if (p[1] == '\r')
                return p[2] == '\n' ? (*out = d0, 3) : 0;
            unsigned d1 = (unsigned)p[1] - '0';
            if (d1 <= 9 && d0 != 0 && p[2] == '\r' && p[3] == '\n') {
                *out = d0 * 10 + d1;
                return 4;
            }
        }
    }
    const uint8_t *q = p;
    int neg = 0;
    if (q < end && *q == '-') {
        neg = 1;
        q++;
    }
    const uint8_t *ds = q;
    uint64_t v = 0;
    while (q < end && (unsigned)(*q - '0') <= 9 && q - ds < 18) {
        v = v * 10 + (unsigned)(*q - '0');
        q++;
    }
    if (q == ds || end - q < 2 || q[0] != '\r' || q[1] != '\n')
        return 0;
    if (*ds == '0' && (q - ds > 1 || neg))
        return 0;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return (size_t)(q + 2 - p);
}

/* Index of the first byte equal to c in p[0..n), or n. Keys are short and
 * hash tags sit near their start: a call to memchr costs more (its set-up,
 * alignment and page checks) than finding a '{' a few bytes in. Eight bytes
 * per step: a byte equal to c turns to zero in w ^ pattern, and the classic
 * zero-byte test ((x - 0x01..) & ~x & 0x80..) marks it; only bits above the
 * first zero byte can be false marks, so the lowest mark is exact. Loads stay
 * inside [p, p + n). */
static inline size_t rd_find_byte(const uint8_t *p, size_t n, uint8_t c)
{
    size_t i = 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    const uint64_t pattern = ones * c;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        w ^= pattern;
        uint64_t mark = (w - ones) & ~w & highs;
        if (mark != 0)
            return i + (size_t)(__builtin_ctzll(mark) >> 3);
    }
#endif
    for (; i < n; i++)
        if (p[i] == c)
            return i;
    return n;
}

/* Is the NUL-terminated name n, of length len, equal to the literal lit? */
#define RD_NAME_IS(n, len, lit) ((len) == sizeof(lit) - 1 && memcmp((n), (lit), (len)) == 0)

/* Read a CRLF-terminated line from *pp. On RD_DONE, out and out_len hold the
 * kept prefix (without CR), *full the whole length, and *pp is past the LF. On
 * RD_MORE everything was consumed. RD_ERR: bad terminator; RD_ERR_LIMIT: longer
 * than max. The common case (whole line in the chunk) copies nothing. */
static inline int rd_line_read(rd_line *l, const uint8_t **pp, const uint8_t *end,
                               uint64_t max, const uint8_t **out, size_t *out_len,
                               uint64_t *full)
{
    const uint8_t *p = *pp;
    size_t avail = (size_t)(end - p);
    /* most lines ("+OK", short errors, numbers) end within a few bytes: look
     * there before paying for a call */
    const uint8_t *nl = NULL;
    size_t near = avail < 16 ? avail : 16;
    for (size_t i = 0; i < near; i++) {
        if (p[i] == '\n') {
            nl = p + i;
            break;
        }
    }
    if (nl == NULL && avail > near)
        nl = memchr(p + near, '\n', avail - near);
    if (nl == NULL) {
        if (l->len + avail > max + 1) {
            l->len = 0;
            l->err_bound = 0;
            return RD_ERR_LIMIT;
        }
        if (l->len < RD_LBUF) {
            size_t room = RD_LBUF - (size_t)l->len;
            memcpy(l->buf + l->len, p, avail < room ? avail : room);
        }
        l->len += avail;
        l->last = end[-1];
        *pp = end;
        return RD_MORE;
    }
    size_t n = (size_t)(nl - p);
    uint64_t total = l->len + n;           /* CR included */
    uint8_t before = n ? nl[-1] : l->last;
    if (total == 0 || before != '\r') {
        *pp = nl; /* resync starts at the LF */
        l->len = 0;
        l->err_bound = 0;
        return RD_ERR;
    }
    if (total > max + 1) {
        *pp = nl + 1; /* a whole (too long) line: what follows is a boundary */
        l->len = 0;
        l->err_bound = 1;
        return RD_ERR_LIMIT;
    }
    *pp = nl + 1;
    *full = total - 1;
    if (l->len == 0) {
        *out = p;
        *out_len = n - 1;
        return RD_DONE;
    }
    if (l->len < RD_LBUF) {
        size_t room = RD_LBUF - (size_t)l->len;
        memcpy(l->buf + l->len, p, n < room ? n : room);
    }
    *out = l->buf;
    *out_len = (size_t)(total - 1 < RD_LBUF ? total - 1 : RD_LBUF);
    l->len = 0;
    return RD_DONE;
}

/* rd_num_line's general case: the line is split across chunks, long, or bad. */
int rd_num_line_slow(rd_line *l, const uint8_t **pp, const uint8_t *end, int64_t *v);

/* Read a length or count line: 1 with *v set, 0 when more bytes are needed
 * (all consumed), -1 when malformed (*pp left where a resync may start). */
static inline int rd_num_line(rd_line *l, const uint8_t **pp, const uint8_t *end, int64_t *v)
{
    if (l->len == 0) {
        size_t k = rd_num_fast(*pp, end, v);
        if (k != 0) {
            *pp += k;
            return 1;
        }
    }
    return rd_num_line_slow(l, pp, end, v);
}

/* Copy n <= 64 bytes without a library call: the kept prefixes are mostly a
 * few bytes long, and a call to memcpy costs more than copying them. Every
 * load and store stays inside [src, src + n) and [dst, dst + n) (overlapping
 * pieces instead of reading past the end: the bytes after an argument may be
 * a credential). */
static inline void rd_copy_small(uint8_t *dst, const uint8_t *src, size_t n)
{
    if (n >= 32) {
        memcpy(dst, src, 32);
        memcpy(dst + n - 32, src + n - 32, 32);
    } else if (n >= 16) {
        memcpy(dst, src, 16);
        memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    }
}

/* ASCII upper-case. */
static inline uint8_t rd_upper(uint8_t c)
{
    return (c >= 'a' && c <= 'z') ? (uint8_t)(c - 32) : c;
}

/* ASCII upper-case of the bytes of a word, all at once: a byte gets its 0x20
 * bit cleared when it is in 'a'..'z' (no carry crosses bytes: each sum is of
 * a 7-bit value and a constant below 0x80). */
static inline uint64_t rd_upper64(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t low7 = x & ~high;
    uint64_t ge_a = low7 + ones * (0x80 - 'a');     /* high bit: >= 'a' */
    uint64_t gt_z = low7 + ones * (0x80 - 'z' - 1); /* high bit: > 'z' */
    return x ^ ((ge_a & ~gt_z & ~x & high) >> 2);
}
static inline uint32_t rd_upper32(uint32_t x)
{
    const uint32_t ones = 0x01010101u, high = 0x80808080u;
    uint32_t low7 = x & ~high;
    uint32_t ge_a = low7 + ones * (0x80 - 'a');
    uint32_t gt_z = low7 + ones * (0x80 - 'z' - 1);
    return x ^ ((ge_a & ~gt_z & ~x & high) >> 2);
}

/* Copy n <= 64 bytes upper-cased (command names), a word at a time. Pieces
 * may overlap (upper-casing twice is harmless); every load stays inside
 * [src, src + n). */
static inline void rd_upper_copy(uint8_t *dst, const uint8_t *src, size_t n)
{
    if (n >= 8) {
        uint64_t w;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, src + i, 8);
            w = rd_upper64(w);
            memcpy(dst + i, &w, 8);
        }
        if (i < n) {
            memcpy(&w, src + n - 8, 8);
            w = rd_upper64(w);
            memcpy(dst + n - 8, &w, 8);
        }
    } else if (n >= 4) {
        uint32_t w;
        memcpy(&w, src, 4);
        w = rd_upper32(w);
        memcpy(dst, &w, 4);
        memcpy(&w, src + n - 4, 4);
        w = rd_upper32(w);
        memcpy(dst + n - 4, &w, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = rd_upper(src[i]);
    }
}

/* Case-insensitive compare of a byte prefix with an upper-case C string. */
static inline int rd_eq_ci(const uint8_t *p, size_t n, const char *word)
{
    size_t wl = strlen(word);
    if (n != wl)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (rd_upper(p[i]) != (uint8_t)word[i])
            return 0;
    return 1;
}

/* ---------------------------------------------------------------- functions */

/* resync.c */
void rd_resync_start(rd_resync *rs, int is_req, int at_boundary);
/* Is s/n (any case) one of Redis 7's command names (resync.c's table)? */
int rd_known_command(const uint8_t *s, size_t n);

/* What data starts with (shape.c): REPLCONF ACK (sent by a replica to its
 * master), REPLCONF GETACK (sent by a master to its replica), or neither. */
enum { RD_RC_NONE = 0, RD_RC_ACK = 1, RD_RC_GETACK = 2 };
int rd_replconf_at(const uint8_t *data, size_t len);
/* Scan for a boundary. Returns 1 when found: *pp is just past the candidate
 * line's LF (requests: the '$' after it is not consumed), rs->type is the
 * candidate's type byte ('i' for a whole inline command), rs->full its line
 * length and line->buf its prefix (an inline command's whole line).
 * Returns 0 when the chunk was used up. *skipped is adjusted by the bytes
 * thrown away (the candidate's own bytes are given back on success). */
int rd_resync_scan(rd_resync *rs, rd_line *line, const uint8_t **pp,
                   const uint8_t *end, int64_t ts, int64_t *skipped,
                   uint64_t max_bulk);

/* decode_req.c */
/* proofs.c: note in cfg.servers (when set) what the pairer's rare paths
 * see: a MOVED/ASK target, the nodes of a kept CLUSTER reply, a replica's
 * REPLCONF (its listening port, its master), a replication link's master. */
void rc_proofs_redirect(resp_pipeline *rp, const resp_redirect *r);
void rc_proofs_cluster(resp_pipeline *rp, const resp_command *cmd);
void rc_proofs_replconf(resp_pipeline *rp, const cap_conn *cc, const resp_request *req);
void rc_proofs_master(resp_pipeline *rp, const cap_endpoint *master);

void rq_init(rc_conn *c);
void rq_feed(rc_conn *c, const uint8_t *p, size_t n, int64_t ts);
void rq_lost(rc_conn *c, int at_boundary);   /* gap: drop the partial request */
int rq_skip_gap(rc_conn *c, uint64_t len, int64_t ts); /* 1: gap inside a payload */

/* decode_rep.c */
void rp_init(rc_conn *c);
void rp_free(rc_conn *c);
void rp_feed(rc_conn *c, const uint8_t *p, size_t n, int64_t ts);
void rp_lost(rc_conn *c, int at_boundary);
int rp_skip_gap(rc_conn *c, uint64_t len, int64_t ts); /* 1: gap inside a payload */
void rp_sink(rc_conn *c);

/* pair.c, loss.c: called by the decoders */
rq_entry *pair_request_slot(rc_conn *c, int64_t ts);  /* a request starts */
void pair_request_done(rc_conn *c);                    /* it is complete */
void pair_request_abandon(rc_conn *c);                 /* it was not a request */
void pair_reply_start(rc_conn *c, int64_t ts);         /* a reply starts */
void pair_reply_done(rc_conn *c);                      /* it is complete */
void pair_lost(rc_conn *c);           /* replies lost: pairing unknown now */
void pair_lost_requests(rc_conn *c);  /* requests lost: what is queued stays */
void pair_request_gap(rc_conn *c, uint64_t len); /* a request gap not bridged */
void pair_reply_gap(rc_conn *c, uint64_t len);   /* a reply gap not bridged */
void pair_clean_start(rc_conn *c);    /* mid-stream: first request at byte 0 */
void pair_limit_hit(rc_conn *c);                       /* a limit was hit */
void pair_keep_bytes(rc_conn *c, const uint8_t *p, size_t n);

#endif /* SLOTSCOPE_RESP_INTERNAL_H */
