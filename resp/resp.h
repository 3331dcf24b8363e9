/*
 * resp.h - RESP byte streams in, paired commands out.
 *
 * The second stage of the pipeline. It consumes capture/'s events (OPEN, DATA,
 * GAP, CLOSE) and produces one resp_command per request with the reply that
 * answered it, exactly as the server saw them.
 *
 *   decode  incremental RESP2 + RESP3 scanner, one per direction, fed chunks
 *           split at any byte; resumable state with an explicit stack (no
 *           recursion, depth limit). Keeps only what analysis needs: command
 *           name, a few small arguments, key slots, reply type and error text.
 *           Bulk payloads are skipped by moving a cursor, never copied.
 *           Resynchronises after a gap or garbage: requests at a multibulk
 *           header, or at a line that is plainly an inline command (a known
 *           command name; never for a client seen speaking multibulk only),
 *           replies at a plausible value (resync.c).
 *   pair    FIFO pairing per connection: pipelining, MULTI/EXEC, pub/sub and
 *           RESP3 push, MONITOR, CLIENT REPLY OFF/ON/SKIP, HELLO, RESET, QUIT
 *           (CLIENT REPLY and HELLO queued in MULTI act when EXEC runs them,
 *           as the server does; EXEC's array may then be short).
 *           When it cannot know which reply answers which request (mid-stream
 *           start, gap) it says so and finds solid ground rather than guess.
 *
 * Spec: https://redis.io/docs/latest/develop/reference/protocol-spec/
 *
 * Credentials are never kept: AUTH arguments, HELLO's AUTH username/password,
 * MIGRATE's AUTH/AUTH2 arguments, CONFIG SET values and ACL SETUSER rules are
 * not copied into any resp_request (their lengths are counted, their bytes are
 * skipped).
 *
 * Limits (each hit is a counted protocol error followed by a resync):
 * request arguments up to max_bulk_request (512 MiB, Redis's default
 * proto-max-bulk-len), reply bulks up to max_bulk_reply (1 TiB: replies are
 * only counted through, so a large one costs nothing), nesting up to
 * max_depth, at most 2^31-1 elements per aggregate or request, length lines
 * of at most 24 bytes, other lines and inline commands up to max_line.
 * RESP3 streamed strings and aggregates ("$?", "*?") are not decoded (Redis
 * never sends them): they are protocol errors.
 *
 * A capture gap of known length that falls inside a bulk payload (a value,
 * not a header, line, command name or short argument) is skipped by the
 * declared length: the pairing stays exact and the command is flagged (gap;
 * slot_unknown when a key lost bytes). Any other gap is a loss.
 *
 * Pairing after a loss (see loss.c): a gap between whole messages
 * that the sizes seen on the connection account for exactly (one count of
 * lost replies, or of lost requests, fits it) and the server's ACK numbers
 * agree with is no loss: the commands whose replies were lost are
 * RESP_UNANSWERED, the rest stay paired. Otherwise a loss on the server side
 * (gap, garbage) gives up every request in flight; a loss on the client side
 * keeps the requests already queued (the server answers them first).
 * Requests decoded after a loss are RESP_UNANSWERED until solid ground: both
 * directions at a message boundary, nothing queued, and a reply seen since
 * the loss; a reply whose packet had not acknowledged the head request is
 * never matched to it. A connection picked up mid-stream is trusted from its
 * first request only if its request stream starts exactly at a message, no
 * reply byte had to be skipped, and no ACK contradicts it.
 */
#ifndef SLOTSCOPE_RESP_H
#define SLOTSCOPE_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "bus/bus.h"
#include "capture/capture.h"

/* ---------------------------------------------------------------- values */

/* Type of a RESP value: its first byte, or a pseudo type. */
typedef enum resp_type {
    RESP_T_NONE = 0,
    RESP_T_SIMPLE = '+',
    RESP_T_ERROR = '-',
    RESP_T_INT = ':',
    RESP_T_BULK = '$',
    RESP_T_ARRAY = '*',
    RESP_T_NULL = '_',
    RESP_T_DOUBLE = ',',
    RESP_T_BOOL = '#',
    RESP_T_BLOBERR = '!',
    RESP_T_VERBATIM = '=',
    RESP_T_BIGNUM = '(',
    RESP_T_MAP = '%',
    RESP_T_SET = '~',
    RESP_T_PUSH = '>',
    RESP_T_ATTR = '|',
    RESP_T_NIL = 'n',    /* RESP2 null bulk ($-1) or null array (*-1) */
    RESP_T_INLINE = 'i'  /* an inline command (space separated, no '*') */
} resp_type;

/* The class of an error reply, from its first word. */
typedef enum resp_err_class {
    RESP_ERR_NONE = 0,
    RESP_ERR_MOVED,
    RESP_ERR_ASK,
    RESP_ERR_TRYAGAIN,
    RESP_ERR_CROSSSLOT,
    RESP_ERR_CLUSTERDOWN,
    RESP_ERR_READONLY,
    RESP_ERR_NOAUTH,
    RESP_ERR_WRONGTYPE,
    RESP_ERR_LOADING,
    RESP_ERR_EXECABORT,
    RESP_ERR_OTHER
} resp_err_class;

/* Name of an error class: "MOVED", "ASK", ..., "ERR" for OTHER, "" for NONE. */
const char *resp_err_name(resp_err_class c);

/* Target of a MOVED or ASK. */
typedef struct resp_redirect {
    int32_t slot;       /* 0..16383, -1 if not parsed */
    uint16_t port;      /* 0 if not parsed */
    char host[64];      /* IPv4, IPv6 (no brackets) or hostname; "" when the server
                           did not know its endpoint ("?" or empty in Redis 7) */
} resp_redirect;

/* Classify error text (without the leading '-' or '!' and without CRLF), e.g.
 * "MOVED 3999 127.0.0.1:6381". For MOVED/ASK the target is parsed into redir
 * (may be NULL); a malformed MOVED/ASK gives the class with redir->slot = -1. */
resp_err_class resp_classify_error(const char *text, size_t len, resp_redirect *redir);

/* ---------------------------------------------------------------- keys */

/*
 * Which arguments are keys is analysis/'s knowledge (the command table); resp/
 * asks through this hook at the start of every argument after the name, so that
 * only keys are hashed and everything else is skipped without a look.
 *
 * The hook sees the request so far (name, argc, the small arguments kept), the
 * index of the argument about to start (1 = first after the name), the first
 * bytes of the previous argument (for keywords like STREAMS, KEYS, STORE and
 * counts like EVAL's numkeys), and four words of scratch state that start at
 * zero for each request and are kept between calls.
 */
typedef struct resp_request resp_request;
typedef struct resp_keyctx {
    const resp_request *req;  /* name, argc, args kept so far */
    uint32_t argi;            /* index of the argument about to start */
    const uint8_t *prev;      /* first bytes of argument argi-1 */
    size_t prev_len;          /* how many of them (<= RESP_ARG_PREFIX) */
    uint32_t prev_full_len;   /* its whole length */
    uint32_t scratch[4];      /* the hook's own state, zero per request */
    uint32_t key_mask;        /* set by the hook with key_mask_final: bit i */
    uint8_t key_mask_final;   /* means argument i (< 32) is a key, and no
                                 argument from 32 on is; resp then stops
                                 calling the hook for this request. Both
                                 start at zero per request. */
    uint32_t bare_mask;       /* set by the hook with key_mask_final (zero
                                 per request too): bit i (< 32, not a key)
                                 means that no reader of the request needs
                                 argument i's bytes, only its length (a
                                 SET's value): resp keeps none of them
                                 (arg_len 0, arg_full_len its length) */
} resp_keyctx;

/* Return 1 if argument k->argi is a key, 0 if not. The hook may also set
 * key_mask_final (with key_mask) when the remaining answers are fixed. Its
 * answers depend only on what k shows of the request: a mask it fixes at
 * its first question (argument 1 of a multibulk request) is used again,
 * without asking, for the connection's next requests of the same name and
 * argc. */
typedef int (*resp_key_fn)(void *ctx, resp_keyctx *k);

/* Hash slot of a whole key (CRC16-XMODEM mod 16384 with the {hashtag} rule). */
uint16_t resp_key_slot(const uint8_t *key, size_t len);

/* Incremental form of resp_key_slot for keys that arrive in pieces. */
typedef struct resp_slot_hasher {
    uint16_t crc_all;   /* CRC16 of every byte */
    uint16_t crc_tag;   /* CRC16 of the bytes after the first '{' */
    uint32_t tag_len;   /* bytes in the tag so far */
    uint8_t state;      /* 0 no '{' yet, 1 inside the tag, 2 tag closed */
} resp_slot_hasher;
void resp_slot_init(resp_slot_hasher *h);
void resp_slot_update(resp_slot_hasher *h, const uint8_t *p, size_t n);
uint16_t resp_slot_final(const resp_slot_hasher *h);

/* ---------------------------------------------------------------- commands */

#define RESP_NAME_MAX 32      /* command name, upper-case, NUL-terminated */
#define RESP_NAME_ZEROED 16   /* bytes of it that are zero past its NUL */
#define RESP_ARG_KEEP 5       /* small arguments kept after the name */
#define RESP_ARG_PREFIX 64    /* bytes kept of each kept argument and key */
#define RESP_ERRTEXT_MAX 160  /* bytes kept of an error reply */

/* A request as decoded. The fields every command reads or writes come
 * first, next to the name (the decoder, pairing and analysis touch them for
 * each command: in an in-flight ring that does not stay in cache, each line
 * touched is a likely miss); the argument and key prefixes come last. */
struct resp_request {
    int64_t start_us;                   /* capture time of its first byte */
    int64_t ts_us;                      /* capture time when it was complete */
    uint64_t start_frame;               /* record that carried its first byte
                                           (cap_event.frame) */
    char name[RESP_NAME_MAX];           /* upper-case; "" if not a bulk string;
                                           zero from its NUL to byte
                                           RESP_NAME_ZEROED - 1, so that its
                                           first 16 bytes compare as two
                                           words (the analysis' caches) */
    uint32_t argc;                      /* arguments including the name (for
                                           a multibulk, the declared count is
                                           already set when the key hook runs) */
    uint32_t nkeys;                     /* arguments the key hook marked as keys */
    uint64_t bytes;                     /* request size on the wire */
    int32_t slot;                       /* slot of the first key, -1 if no key */
    uint32_t key0_full_len;             /* whole length of the first key */
    uint8_t inline_cmd;                 /* sent as an inline command */
    uint8_t nargs;                      /* arguments kept in args[] */
    uint8_t gap;                        /* bytes of an argument's payload were
                                           lost in a capture gap and skipped by
                                           their declared length: the pairing
                                           is exact; a damaged kept prefix has
                                           arg_len 0 */
    uint8_t slot_unknown;               /* a key lost bytes in a gap: the key
                                           facts are withdrawn (nkeys 0, slot
                                           -1, no key0) */
    uint8_t multi_slot;                 /* keys hash to more than one slot */
    uint8_t key0_len;                   /* bytes kept of the first key */
    uint8_t arg_len[RESP_ARG_KEEP];     /* bytes kept of args[i] */
    uint32_t arg_full_len[RESP_ARG_KEEP]; /* whole length of args[i] */
    char args[RESP_ARG_KEEP][RESP_ARG_PREFIX]; /* arguments 1..RESP_ARG_KEEP,
                                           prefix only; empty for credentials
                                           (HELLO's AUTH user pass take no
                                           slot: its SETNAME name is kept) */
    char key0[RESP_ARG_PREFIX];         /* first key, prefix only */
    uint64_t end_pos;                   /* request stream position after its
                                           last byte: bytes the client sent
                                           before, lost ones counted, from the
                                           first byte of the stream seen
                                           (tools compare runs by it) */
};

/* A reply as decoded. The fields every reply sets come first, the error
 * text and the redirection target (read only for errors; their first bytes
 * are cleared for the others) last. */
typedef struct resp_reply {
    int64_t start_us;                 /* capture time of its first byte */
    int64_t ts_us;                    /* capture time when it was complete */
    uint64_t end_frame;               /* record that carried its last byte
                                         (cap_event.frame), 0 if none */
    resp_type type;                   /* of the top-level value */
    resp_err_class err;               /* RESP_ERR_NONE unless an error */
    int64_t integer;                  /* for ':' replies */
    int64_t elements;                 /* aggregate count; -1 for a null */
    uint64_t bytes;                   /* reply size on the wire */
    uint64_t end_pos;                 /* reply stream position after its last
                                         byte, as resp_request.end_pos */
    const uint8_t *raw;               /* whole reply bytes, only for requests whose
                                         reply analysis parses (CLUSTER SLOTS,
                                         SHARDS, NODES; see resp_keep_reply); valid
                                         during the callback */
    size_t raw_len;
    uint8_t gap;                      /* bytes of a bulk payload in it were lost
                                         in a capture gap and skipped by their
                                         declared length (raw is not kept) */
    uint8_t nokey;                    /* the simple string "NOKEY" (MIGRATE:
                                         none of its keys existed, none moved) */
    char errtext[RESP_ERRTEXT_MAX];   /* error text without '-' (prefix) */
    resp_redirect redir;              /* MOVED/ASK target */
} resp_reply;

/* How a command ended up. */
typedef enum resp_outcome {
    RESP_OK = 0,         /* paired with its reply */
    RESP_NO_REPLY = 1,   /* no reply by design (CLIENT REPLY OFF/SKIP) */
    RESP_UNANSWERED = 2, /* the connection closed, or was declared out of sync,
                            before the reply arrived */
} resp_outcome;

/* One request and the reply that answered it: the event analysis/ consumes. */
typedef struct resp_command {
    const cap_conn *conn;   /* connection (client/server endpoints, id) */
    uint64_t conn_word;     /* the sink's word for this connection (see
                               resp_sink.conn_word), 0 if it has none */
    uint64_t seq;           /* index of this request on its connection */
    resp_outcome outcome;
    uint8_t in_multi;       /* sent between MULTI and EXEC/DISCARD */
    uint8_t resp3;          /* the connection had switched to RESP3 (HELLO 3) */
    uint8_t requests_lost;  /* requests of its connection were lost in the
                               capture just before it (a gap or garbage on the
                               client side, accounted for or not): what the
                               client sent then is not known */
    uint8_t args_later;     /* only for a sink that asked for it
                               (resp_sink.args_later): req.args and req.key0
                               are not filled in yet (the rest is);
                               resp_command_args fills them in */
    resp_request req;
    resp_reply reply;       /* valid when outcome == RESP_OK */
} resp_command;

/* Per-connection counters, reported at close. */
typedef struct resp_conn_stats {
    uint64_t requests;          /* requests decoded */
    uint64_t replies;           /* replies decoded (pushes excluded) */
    uint64_t pushes;            /* pub/sub messages and RESP3 pushes */
    uint64_t paired;            /* commands emitted with a reply */
    uint64_t unpaired_requests; /* requests that never got a reply */
    uint64_t unpaired_replies;  /* replies with no request to pair with */
    uint64_t resyncs;           /* searches for a message boundary begun: at
                                   the start of a connection picked up
                                   mid-stream, and each time a decoder lost
                                   its place (garbage, a protocol error, a gap
                                   it could not bridge); found or not */
    uint64_t skipped_bytes;     /* bytes thrown away: while searching, and of
                                   messages cut by a gap or by the close */
    uint64_t protocol_errors;   /* malformed input seen */
    uint64_t gaps_bridged;      /* capture gaps that fell inside a bulk payload
                                   of known length and were skipped without
                                   losing the pairing */
    uint64_t redirect_mismatch; /* MOVED/ASK replies for another slot than the
                                   head request's key: not its reply, the
                                   pairing was off (pair.c); not paired */
    uint64_t start_gaps_answered_none; /* start gaps of a reply stream the
                                   client had received before it sent any
                                   captured byte (cap_event.before_peer): they
                                   answer no captured request, nothing given
                                   up (loss.c) */
    uint32_t out_of_sync;       /* pairing was lost at least once (in totals:
                                   connections; hence not a uint8_t) */
    uint32_t monitor;           /* the connection entered MONITOR */
    uint32_t subscribed;        /* the connection entered pub/sub */
    uint32_t replication;       /* PSYNC/SYNC seen, or recognised mid-stream:
                                   the master's side is a replication stream,
                                   no longer decoded */
    uint32_t replication_midstream; /* recognised without its PSYNC: the replica
                                   sent REPLCONF ACK, or the master GETACK or
                                   commands before any request (pair.c) */
    uint32_t replication_reversed; /* of those, links the capture layer had
                                   oriented the wrong way round: the master is
                                   cap_conn.client; neither side was decoded */
    uint64_t replication_skipped; /* requests of the master's stream dropped
                                   unemitted when such a link was recognised */
    uint32_t tls;               /* a stream began with a TLS record header
                                   (encrypted: nothing to decode) */
    uint32_t cluster_bus;       /* a stream began with the cluster bus
                                   signature "RCmb" (node-to-node gossip), or
                                   a connection picked up mid-stream showed
                                   bus messages: its bytes go to bus/ */
    uint64_t bus_messages;      /* bus messages decoded (both directions) */
    uint64_t bus_bad;           /* framed bus messages that were invalid or of
                                   an unknown type: skipped */
    uint64_t bus_resyncs;       /* bus framing lost (gap, garbage) and found */
    uint64_t bus_skipped_bytes; /* bus bytes passed over looking for a message */
    uint64_t bus_bytes;         /* bytes fed to the bus decoder */
    uint64_t bus_gaps;          /* capture gaps in bus streams */
} resp_conn_stats;

/* Totals over all connections. */
typedef struct resp_stats {
    resp_conn_stats total;      /* sums; out_of_sync counts connections */
    uint64_t connections;       /* connections seen */
    uint64_t dropped_requests;  /* in-flight requests dropped at the pipeline cap */
    uint64_t limit_hits;        /* depth, element count or line length limits hit */
    uint64_t commands;          /* resp_command events emitted */
    uint64_t unanswered_at_end; /* requests still waiting for their reply on
                                   connections open at the end of the input (a
                                   capture cut short, or stopped too early) */
    bus_stats bus;              /* the bus decoder's counters, by message type */
} resp_stats;

/* Where paired commands go. Any callback may be NULL. */
typedef struct resp_sink {
    void *ctx;
    void (*conn_open)(void *ctx, const cap_conn *conn);
    void (*command)(void *ctx, const resp_command *cmd);
    void (*conn_close)(void *ctx, const cap_conn *conn, const resp_conn_stats *st);
    /* Asked once per connection, right after conn_open: a word of the sink's
     * own (e.g. where it keeps the connection's state, to find it without a
     * lookup), carried as is in resp_command.conn_word of each of the
     * connection's commands. NULL: the word is 0. */
    uint64_t (*conn_word)(void *ctx, const cap_conn *conn);
    /* A cluster-bus message (bus/) on a connection recognised as the bus,
     * which is not decoded as RESP: dir its cap_dir, ts_us the time and
     * frame the record of the chunk that completed it. m->raw holds the
     * bytes it was decoded from (the whole message, or its header). */
    void (*bus_message)(void *ctx, const cap_conn *conn, int dir, const bus_msg *m,
                        int64_t ts_us, uint64_t frame);
    /* 1: command may hand over a command whose argument and key prefixes
     * are not filled in yet (resp_command.args_later): the sink calls
     * resp_command_args before it reads them, which is only worth it for
     * a sink whose common path does not (pairing saves copying them). */
    uint8_t args_later;
} resp_sink;

/* Limits; fill with resp_config_defaults. */
typedef struct resp_config {
    uint32_t max_depth;          /* nesting depth (default 64) */
    uint32_t max_inflight;       /* requests waiting for replies per connection
                                    (default 100000); more are dropped, counted */
    uint64_t max_inflight_total; /* in all connections (default 1000000; an
                                    in-flight request costs 160-550 bytes,
                                    beside a pool of at most 1024 whole
                                    entries of 896 bytes per pipeline),
                                    applied per partition of connections
                                    (capture.h: 1/64 each) */
    uint32_t max_line;           /* longest simple line / inline command (64 KiB) */
    size_t max_kept_reply;       /* largest raw reply kept for analysis (4 MiB) */
    resp_key_fn key_fn;          /* which arguments are keys; NULL: the first
                                    argument of every command with argc >= 2 */
    void *key_ctx;
    uint64_t max_bulk_request;   /* longest request argument (512 MiB, Redis's
                                    proto-max-bulk-len default); longer is a
                                    protocol error */
    uint64_t max_bulk_reply;     /* longest reply bulk (1 TiB: replies are only
                                    skipped, so a big one costs nothing) */
    uint64_t max_kept_total;     /* kept raw reply bytes over all connections
                                    (64 MiB), applied per partition (1/64
                                    each); a reply that would pass it is not
                                    kept (counted in limit_hits) */
    uint32_t max_bus_message;    /* bus messages up to this length are decoded
                                    whole (64 KiB), longer ones by their header */
    cap_servers *servers;        /* where the endpoints the commands prove to
                                    serve are noted (a MOVED/ASK target, the
                                    nodes of CLUSTER SLOTS/SHARDS/NODES, a
                                    replication link's master), stamped with
                                    cap_event.index, for the tracker's
                                    orientation (cap_tracker_servers). NULL:
                                    not noted */
} resp_config;
void resp_config_defaults(resp_config *cfg);

/* 1 if analysis needs the raw reply of this request (CLUSTER SLOTS / SHARDS /
 * NODES): the decoder then keeps its bytes, up to max_kept_reply. */
int resp_keep_reply(const resp_request *req);

typedef struct resp_pipeline resp_pipeline;

/* Create a decoder+pairer that sends commands to sink. NULL on out of memory. */
resp_pipeline *resp_new(const resp_config *cfg, const resp_sink *sink);

/* Fill in the argument and key prefixes (req.args, req.key0) of a command
 * handed to resp_sink.command with args_later set; only during that call.
 * Nothing to do otherwise. */
void resp_command_args_fill(const resp_command *cmd);
static inline void resp_command_args(const resp_command *cmd)
{
    if (cmd->args_later)
        resp_command_args_fill(cmd);
}
/* Free everything, including per-connection state still attached. Accepts NULL. */
void resp_free(resp_pipeline *rp);
/* Note proofs in servers from now on (resp_config.servers; a tracker's own
 * table, cap_tracker_servers, exists only after resp_new). */
void resp_set_servers(resp_pipeline *rp, cap_servers *servers);
/* Feed one capture event; use as the capture tracker's callback:
 *   cap_tracker_new(&cfg, resp_on_capture_event, rp) */
void resp_on_capture_event(void *rp, const cap_event *ev);
/* Totals so far. */
const resp_stats *resp_get_stats(const resp_pipeline *rp);
/* Add one connection's counters into totals (every field). */
void resp_conn_stats_add(resp_conn_stats *total, const resp_conn_stats *add);
/* Add one pipeline's totals into another's (several pipelines, one per
 * thread, report as one). */
void resp_stats_add(resp_stats *total, const resp_stats *add);

/* Does this look like the start of a request (+1), a reply (-1), or unknown (0)?
 * Fits cap_config.shape. */
int resp_shape(const uint8_t *data, size_t len);

/* ---------------------------------------------------------------- values */

/*
 * A small tree parser for complete replies kept in resp_reply.raw (CLUSTER
 * SLOTS / SHARDS / NODES). Bounds-checked; not on the hot path.
 */
typedef struct resp_value {
    resp_type type;
    int64_t integer;              /* INT, BOOL */
    const char *str;              /* SIMPLE, ERROR, BULK, VERBATIM, DOUBLE, BIGNUM:
                                     points into the input; not NUL-terminated */
    size_t len;
    size_t n;                     /* ARRAY, SET, PUSH: elements; MAP: 2 * pairs */
    struct resp_value *elem;      /* children */
} resp_value;
/* Parse one value from buf. Returns the parsed tree (free with
 * resp_value_free), or NULL if the input is not one complete, valid value. */
resp_value *resp_value_parse(const uint8_t *buf, size_t len, uint32_t max_depth);
void resp_value_free(resp_value *v);

#endif /* SLOTSCOPE_RESP_H */
