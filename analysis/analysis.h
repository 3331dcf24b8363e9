/*
 * analysis.h - paired commands in, cluster findings out.
 *
 * The third stage. It consumes resp/'s events and builds:
 *
 *   slots     the command table (where the keys are, from Redis 7's own key
 *             specs) used as resp/'s key hook; hash slots come from resp/
 *   nodes     the node registry: observed and announced addresses, node ids,
 *             roles, slots owned; learned from CLUSTER SLOTS/SHARDS/NODES replies
 *             and MOVED targets on the wire, and from user overrides; node-to-node
 *             links (replication, MIGRATE) are not clients
 *   views     per client, the slot -> node map its first attempts reveal
 *   detect    the detectors of README.md's findings table, each with its own
 *             thresholds
 *   timeline  per slot migration windows; per operation redirect cost; latency
 *             of redirected vs direct operations per client, slot and node
 *
 * Output goes through an_sink as plain records; analysis/ decides, store/ and
 * cli/ record and print.
 */
#ifndef SLOTSCOPE_ANALYSIS_H
#define SLOTSCOPE_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "resp/resp.h"

/* ---------------------------------------------------------------- findings */

typedef enum an_finding_kind {
    AN_ASK_CACHED = 0,
    AN_ASKING_MISSING,
    AN_ASKING_OTHER_CONNECTION,
    AN_ASKING_INTERLEAVED,
    AN_REDIRECT_LOOP,
    AN_MOVED_IGNORED,
    AN_TRYAGAIN_STORM,
    AN_REDIRECT_UNFOLLOWED,
    AN_READONLY_MISSING,
    AN_CROSSSLOT,
    AN_MIGRATION_STUCK,
    AN_SLOW_CONVERGENCE,
    AN_WRITES_AT_RISK,
    AN_FINDING_KINDS
} an_finding_kind;

/* "ask_cached", "asking_missing", ... as in the README and the database. */
const char *an_finding_name(an_finding_kind k);
/* The kind named by text, or -1. */
int an_finding_parse(const char *name);

typedef enum an_severity { AN_INFO = 1, AN_WARNING = 2, AN_ERROR = 3 } an_severity;
/* A kind's severity (analysis/config.c: the one table of it; --fail-on
 * error|warning uses it): error when commands fail or run on the wrong node,
 * warning when they succeed at extra cost or the cluster needs a look. */
an_severity an_finding_severity(an_finding_kind k);

#define AN_NAME_MAX 64       /* client / node text: "127.0.0.1" or "[::1]:7001" */
#define AN_SUMMARY_MAX 320

/* One finding: a kind of mishandling by one client (or, for migration_stuck, the
 * cluster) for one slot/node, aggregated over its occurrences. Emitted when first
 * found and again whenever it has changed at an an_flush; `id` is stable so a
 * store can replace the earlier row. */
typedef struct an_finding {
    uint64_t id;                  /* stable within a run, starts at 1 */
    an_finding_kind kind;
    an_severity severity;
    char client[AN_NAME_MAX];     /* host, or host:port when clients are per
                                     connection; "" for cluster-side findings */
    char node[AN_NAME_MAX];       /* node involved ("" if several: see evidence) */
    int32_t slot;                 /* -1 if not about one slot */
    int64_t first_us, last_us;
    uint64_t count;               /* occurrences */
    int64_t extra_latency_us;     /* extra time of the operations it covers,
                                     each once (findings overlap: do not sum
                                     them; totals come from operations) */
    uint64_t operations;          /* client findings: the operations it covers
                                     (0 for cluster-side ones) */
    char summary[AN_SUMMARY_MAX]; /* one line a person reads */
    const char *evidence;         /* JSON object: the commands, replies,
                                     connections and times to check by hand;
                                     valid during the callback */
    const char *frame_filter;     /* Wireshark display filter of the evidence
                                     events' records: "frame.number in {3,9}"
                                     ("" if none); right for a single input
                                     file, where records are frames */
    const char *conn_filter;      /* the same events' connections, for any
                                     input: "(ip.addr==10.0.0.5 && tcp.port==
                                     40001) || ..." ("" if none) */
} an_finding;

/* ---------------------------------------------------------------- records */

/* One redirect-class reply (MOVED, ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN). */
typedef struct an_redirect {
    int64_t ts_us;                /* reply time */
    char client[AN_NAME_MAX];
    uint64_t conn_id;
    char node[AN_NAME_MAX];       /* who answered (observed address) */
    resp_err_class kind;
    int32_t slot;                 /* from the reply, else the command's, else -1 */
    char target[AN_NAME_MAX];     /* MOVED/ASK target, mapped to an observed
                                     address when known; "" otherwise */
    char command[RESP_NAME_MAX];
    char key[RESP_ARG_PREFIX + 1];/* first key (redacted when asked) */
    int64_t latency_us;           /* request complete -> reply complete */
    uint64_t req_frame;           /* record of the request's first byte */
    uint64_t reply_frame;         /* record of the reply's last byte */
    const char *cause;            /* MOVED: what changed the slot's owner:
                                     "migration", "failover" or "unknown"
                                     (an_cluster_moved_cause); "" otherwise */
} an_redirect;

/* One client after one ownership change (convergence.c): from the flip on,
 * how long it kept sending the slots to the old owner and what it paid. */
typedef struct an_convergence {
    char client[AN_NAME_MAX];
    int32_t slot_lo, slot_hi;
    char old_node[AN_NAME_MAX], new_node[AN_NAME_MAX];
    const char *source;           /* "bus" or "clients": where the change came from */
    int64_t flip_us;              /* the change (bus: the claim's capture time) */
    uint64_t flip_frame;          /* the record that proved it (bus), else 0 */
    uint64_t config_epoch;        /* the new owner's (bus), else 0 */
    int64_t first_us;             /* its first command for the slots after the flip */
    int64_t last_stale_us;        /* its last one sent to the old owner, 0: none */
    int64_t converged_us;         /* its first one sent to the new owner, 0: none */
    uint64_t stale_commands;      /* commands sent to the old owner (not ASKING'd) */
    uint64_t moved_replies;       /* ... answered MOVED */
    uint64_t at_risk_writes;      /* ... writes the old owner acknowledged */
} an_convergence;

/* One write at risk: acknowledged by node for slot after new_node had claimed
 * the slot on the bus with a higher config epoch (proof_frame). */
typedef struct an_risky_write {
    int64_t ts_us;                /* the acknowledgement (reply time) */
    uint64_t finding_id;          /* its writes_at_risk finding */
    char client[AN_NAME_MAX];
    char node[AN_NAME_MAX], new_node[AN_NAME_MAX];
    int32_t slot;
    char command[RESP_NAME_MAX];
    char key[RESP_ARG_PREFIX + 1];/* redacted when asked */
    uint64_t req_frame, reply_frame;
    uint64_t proof_frame;         /* the bus message with the newer claim */
    uint64_t config_epoch;        /* its config epoch */
} an_risky_write;

/* A node as learned. */
typedef struct an_node {
    char observed[AN_NAME_MAX];   /* address:port seen in the capture ("" if not) */
    char announced[AN_NAME_MAX];  /* address:port the cluster announces */
    char node_id[48];             /* 40 hex chars, "" if unknown */
    char role[16];                /* "master", "replica", "" */
    uint32_t slots_owned;         /* per the latest map seen */
    uint64_t commands;            /* commands it answered */
    /* what the cluster bus showed ("" / 0 when the capture has no bus
     * message from or about it); each *_us is when the current value was
     * first seen (its first message, or the message that changed it) */
    char flags[64];               /* "master" or "replica", then ",pfail",
                                     ",fail", ",handshake", ",noaddr",
                                     ",nofailover" as they stand at the end */
    char master_id[48];           /* a replica's master, "" for a master */
    uint64_t config_epoch, current_epoch;
    uint16_t bus_port;
    int64_t role_us, master_us, config_epoch_us, flags_us;
} an_node;

/* Who a client says it is, from the wire: CLIENT SETINFO LIB-NAME / LIB-VER,
 * CLIENT SETNAME, HELLO ... SETNAME (whatever the server answered). Bytes
 * outside printable ASCII (and '\\') are written \xNN, a value cut short ends
 * in "..."; "" when not announced. A client whose connections announced
 * different values has them joined with ','. */
#define AN_IDENT_MAX 64
typedef struct an_ident {
    char lib_name[AN_IDENT_MAX];
    char lib_ver[AN_IDENT_MAX];
    char client_name[AN_IDENT_MAX];
} an_ident;

/* A client (host, or connection when asked) and what it did. */
typedef struct an_client {
    char name[AN_NAME_MAX];
    an_ident ident;
    int64_t first_us, last_us;
    uint64_t connections;
    uint64_t commands;
    uint64_t redirects;
    uint64_t findings;
    uint8_t cluster_aware;        /* sent CLUSTER SLOTS/SHARDS/NODES or followed
                                     a redirect */
    uint8_t is_node;              /* it is a cluster node (replication, MIGRATE) */
} an_client;

/* One TCP connection at its end. */
typedef struct an_connection {
    uint64_t id;
    char client[AN_NAME_MAX];     /* client name (as grouped) */
    char src[AN_NAME_MAX];        /* client endpoint */
    char dst[AN_NAME_MAX];        /* server endpoint */
    int64_t first_us, last_us;
    uint64_t bytes_to_server, bytes_to_client;
    uint64_t commands;
    uint64_t gaps;
    uint8_t out_of_sync;
    uint8_t mid_stream;
    const char *kind;             /* "client", "replication" (a replication link,
                                     PSYNC seen or recognised mid-stream), "node"
                                     (other node-to-node traffic: MIGRATE) */
    an_ident ident;               /* what this connection announced */
    const cap_conn *conn;         /* all capture counters */
    const resp_conn_stats *resp;  /* all resp counters */
} an_connection;

/* A slot's migration as reconstructed. */
typedef struct an_migration {
    int32_t slot;
    char source[AN_NAME_MAX];
    char target[AN_NAME_MAX];
    int64_t first_ask_us, last_ask_us;  /* 0 if none */
    int64_t flip_us;                    /* ownership flip (first MOVED to target
                                           or SETSLOT NODE), 0 if not seen */
    int64_t importing_us, migrating_us; /* SETSLOT times, 0 if not seen */
    uint64_t asks, tryagains, moveds;
    uint64_t keys_migrated;             /* MIGRATE keys seen */
    uint8_t complete;                   /* the window has an end: 1 the flip,
                                           AN_MIG_ABORTED SETSLOT STABLE */
} an_migration;
#define AN_MIG_ABORTED 2

/* Slots slot_lo..slot_hi were owned by node from from_us to to_us (0: still
 * at the end of the capture), with config epoch config_epoch (0 when the
 * source gives none). source "bus": as the masters claimed them on the
 * cluster bus (a claim wins with a higher config epoch); "clients": as the
 * clients were told (CLUSTER SLOTS / SHARDS / NODES replies, MOVED). cause:
 * how the node got them: "first" (the first owner the capture shows),
 * "migration", "failover", "unknown". */
typedef struct an_owner_row {
    int32_t slot_lo, slot_hi;
    char node[AN_NAME_MAX];
    char node_id[48];
    uint64_t config_epoch;
    int64_t from_us, to_us;
    const char *source;
    const char *cause;
} an_owner_row;

/* A node's health changed as the other nodes see it: from / to "ok",
 * "pfail", "fail"; reporter is the node whose bus message showed it, via
 * that message's type ("ping", "pong", "fail", ...), frame its record. */
typedef struct an_node_transition {
    int64_t ts_us;
    char node[AN_NAME_MAX];
    char node_id[48];
    const char *from, *to;
    char reporter[AN_NAME_MAX];
    char reporter_id[48];
    const char *via;
    uint64_t frame;
} an_node_transition;

/* A failover as the cluster bus showed it. kind "manual" (MFSTART seen),
 * "takeover" (the replica bumped its epoch without an election),
 * "automatic" (the master failed, the replica was elected). detected_us:
 * manual the MFSTART, automatic the master's FAIL (else PFAIL), 0 for a
 * takeover; elected_us: the vote that made the majority (else the last);
 * done_us: the new master's first claim of the slots (0: the election was
 * seen, not its outcome). Times 0: not seen. */
typedef struct an_failover_rec {
    int64_t ts_us;
    const char *kind;
    char old_master[AN_NAME_MAX], old_id[48];
    char new_master[AN_NAME_MAX], new_id[48];
    uint64_t config_epoch;
    int64_t detected_us, elected_us, done_us;
    uint32_t votes;
    uint32_t slots;               /* slots the new master took over */
    uint64_t frame;               /* record of the message that showed it done */
} an_failover_rec;

/* Latency of logical operations, direct vs redirected, for one scope. */
typedef enum an_scope { AN_SCOPE_CLIENT = 0, AN_SCOPE_SLOT, AN_SCOPE_NODE, AN_SCOPE_ALL } an_scope;
typedef struct an_latency {
    an_scope scope;
    char key[AN_NAME_MAX];        /* client name, slot number, node address, "all" */
    uint8_t redirected;           /* 0: direct operations, 1: redirected ones */
    uint64_t count;
    int64_t p50_us, p90_us, p99_us, max_us;
    int64_t total_us;
    int64_t extra_us;             /* redirected: time spent on redirects */
    uint64_t extra_round_trips;
} an_latency;

/* One row of the redirect time series (series.c; the timeline table): what
 * happened in one time bucket [bucket_us, bucket_us + width_us) in one scope.
 * Scopes: the whole cluster ("cluster", id "all"); a node (the answering
 * node's address); a client; a migrating slot range ("slots", "5000-5099":
 * consecutive slots whose migration windows, same source and target, were
 * open). Per bucket and kind only the top scopes by redirects get rows of
 * their own; the rest are summed in one row of id "other" (scopes: how many).
 * An event counts at its reply's time; an operation at its final reply. */
typedef struct an_series_row {
    int64_t bucket_us, width_us;
    const char *scope;            /* "cluster", "node", "client", "slots" */
    char scope_id[AN_NAME_MAX];
    uint32_t scopes;              /* scopes this row sums (1, or the rest) */
    uint64_t commands;            /* commands answered (every paired command) */
    uint64_t moved, ask, tryagain, crossslot, clusterdown; /* replies by kind */
    uint64_t asking;              /* ASKING commands */
    uint64_t retries;             /* attempts that retried a redirected one */
    uint64_t direct_ops, redirected_ops; /* logical operations that ended */
    /* latency of those operations (first request to final reply), from a
     * log-linear histogram: within 1/16 of the value; -1 when none */
    int64_t direct_p50_us, direct_p99_us, redirected_p50_us, redirected_p99_us;
} an_series_row;

/* Where results go. Every callback may be NULL. Pointers are valid during the
 * call only. */
typedef struct an_sink {
    void *ctx;
    void (*finding)(void *ctx, const an_finding *f);
    void (*redirect)(void *ctx, const an_redirect *r);
    void (*node)(void *ctx, const an_node *n);
    void (*client)(void *ctx, const an_client *c);
    void (*connection)(void *ctx, const an_connection *c);
    void (*migration)(void *ctx, const an_migration *m);
    void (*latency)(void *ctx, const an_latency *l);
    void (*command)(void *ctx, const resp_command *cmd, const char *client,
                    int32_t slot); /* every command, for --store-commands */
    /* the cluster's own story (analysis/cluster.c) */
    void (*owner_row)(void *ctx, const an_owner_row *r);
    void (*node_transition)(void *ctx, const an_node_transition *t);
    void (*failover)(void *ctx, const an_failover_rec *f);
    void (*convergence)(void *ctx, const an_convergence *c);
    void (*at_risk_write)(void *ctx, const an_risky_write *w);
    void (*series)(void *ctx, const an_series_row *r); /* a closed bucket's rows */
} an_sink;

/* ---------------------------------------------------------------- config */

/* Bytes of the --redact-keys key (keyed BLAKE2b, see analysis/util.c). */
#define AN_REDACT_KEY_BYTES 32

/* What a client is: a host address, one connection ("host:port"), or a host's
 * processes by the name they announce ("host/name", "host/lib@ver"; a
 * connection that announced nothing stays with its host). Whatever the
 * grouping, a host's node-to-node connections (replication, MIGRATE) are
 * client "host (node)" (per connection: their own), never merged with the
 * clients of that address. */
typedef enum an_client_by {
    AN_CLIENT_BY_HOST = 0,
    AN_CLIENT_BY_CONN = 1,
    AN_CLIENT_BY_NAME = 2
} an_client_by;

/* Thresholds and options; fill with an_config_defaults. Every threshold is
 * settable from the command line (--set NAME=VALUE, see an_config_set). */
typedef struct an_config {
    an_client_by client_by;
    int redact_keys;                 /* keys in records become "h:<hash>" */
    /* user overrides: announced -> observed node address */
    struct { char announced[AN_NAME_MAX]; char observed[AN_NAME_MAX]; } node_map[64];
    size_t n_node_map;
    /* detector thresholds */
    uint32_t loop_max_redirects;     /* redirect_loop: more redirects than this in
                                        one operation (default 5) */
    int64_t op_window_us;            /* a retry belongs to the same operation if it
                                        comes within this time (default 5 s) */
    uint32_t moved_ignored_min;      /* moved_ignored: MOVEDs for a slot to one
                                        client after the first (default 3) */
    uint32_t tryagain_min;           /* tryagain_storm: retries (default 10) */
    int64_t tryagain_min_backoff_us; /* ... faster than this (default 1 ms) */
    uint32_t ask_cached_min;         /* ask_cached: direct commands (default 2) */
    int64_t migration_stuck_us;      /* migration_stuck: ASK window longer than
                                        this (default 60 s) or still open at end */
    uint32_t max_clients;            /* tables are capped; evictions counted */
    uint32_t max_ops;                /* operations in flight (per client sum) */
    /* added after the first version (keep at the end) */
    uint32_t tryagain_max;           /* tryagain_storm also: more TRYAGAIN retries
                                        than this in one operation, whatever the
                                        backoff (default 50) */
    uint32_t readonly_missing_min;   /* readonly_missing: bounced reads (default 1) */
    uint32_t max_conns;              /* connections tracked (default 65536) */
    uint32_t max_nodes;              /* nodes in the registry (default 1024) */
    uint32_t max_findings;           /* distinct findings kept (default 10000) */
    uint32_t max_memos;              /* (client, slot) redirect memories (default
                                        262144) */
    uint32_t max_slot_latency;       /* slots with latency histograms (default
                                        2048; a slot gets one at its first
                                        redirected operation) */
    uint64_t max_view_bytes;         /* all clients' slot views (default 64 MiB) */
    uint8_t redact_key[AN_REDACT_KEY_BYTES]; /* secret key of the redaction PRF
                                        (an_redact_key_random, or the user's key
                                        file); never stored or printed */
    int64_t slow_convergence_us;     /* slow_convergence: a client still sends
                                        slots to their old owner this long after
                                        the change (default 1 s) */
    int64_t convergence_window_us;   /* a change is watched this long (default 60 s) */
    uint32_t max_convergence;        /* (client, change) rows (default 16384) */
    int64_t series_bucket_us;        /* time series bucket (default 1 s; --bucket) */
    uint32_t series_top;             /* rows of their own per bucket and scope kind
                                        (nodes, clients, slot ranges), by redirects;
                                        the rest summed as "other" (default 10) */
    uint32_t series_scopes;          /* scopes of one kind followed in a bucket;
                                        more go straight to "other" (default 64) */
} an_config;
void an_config_defaults(an_config *cfg);
/* A fresh random redaction key (libsodium's randombytes_buf): redacted keys
 * then compare within this run only. 0, or -1 when libsodium cannot start. */
int an_redact_key_random(an_config *cfg);
/* Set a threshold by name ("loop_max_redirects=5"). 0 ok, -1 unknown name or
 * bad value. */
int an_config_set(an_config *cfg, const char *assignment);
/* The names an_config_set accepts, with their meaning and default, one per line. */
const char *an_config_help(void);

/* ---------------------------------------------------------------- analyzer */

/* Counters analysis keeps (stored in the counters table). */
typedef struct an_stats {
    uint64_t commands;
    uint64_t keyed_commands;
    uint64_t unknown_commands;       /* not in the command table: keys not guessed */
    uint64_t redirects;
    uint64_t moved, ask, tryagain, crossslot, clusterdown;
    uint64_t operations;             /* logical operations */
    uint64_t redirected_operations;
    uint64_t findings;
    uint64_t evicted_clients;
    uint64_t evicted_ops;
    uint64_t node_links;             /* connections between cluster nodes */
    /* added after the first version (keep at the end) */
    uint64_t evicted_conns;          /* connection states dropped at the cap */
    uint64_t evicted_memos;          /* (client, slot) redirect memories dropped */
    uint64_t dropped_findings;       /* new findings not kept: table full */
    uint64_t view_drops;             /* slots not added to a view: byte cap */
    uint64_t latency_slots_dropped;  /* slot latency scopes not kept: cap */
    uint64_t unanswered;             /* commands without a reply */
    uint64_t node_link_commands;     /* commands on node-to-node connections */
    uint64_t map_replies;            /* CLUSTER SLOTS/SHARDS/NODES replies parsed */
    uint64_t map_errors;             /* ... that could not be parsed */
    uint64_t abandoned_ops;          /* operations still open at the end, too
                                        recent to judge */
    uint64_t unseen_retry_ops;       /* operations not judged redirect_unfollowed:
                                        their retry may be what the capture lost
                                        (the client's requests lost after the
                                        redirect, or a retry without its reply) */
    uint64_t unseen_target_ops;      /* operations not judged redirect_unfollowed:
                                        redirected to a node the capture holds
                                        no connection to (left out by its
                                        filter, or announced under another
                                        address than the capture shows) */
    uint64_t keys_lost;              /* commands whose first key lost bytes in a
                                        capture gap (or past the snap length):
                                        in no operation, never judged; the
                                        operations whose retry they may be are
                                        not judged redirect_unfollowed */
    uint64_t at_risk_unseen;         /* writes an old owner acknowledged after a
                                        newer claim, not judged writes_at_risk:
                                        the capture holds none of the bus links
                                        it opened, where its own new claim of
                                        the slots would show in time */
    uint64_t readonly_unknown_moved; /* MOVEDs of reads from a replica whose
                                        master is not known, on connections
                                        picked up mid-stream whose READONLY the
                                        capture had not shown: judged by neither
                                        moved_ignored nor readonly_missing */
    uint64_t dropped_nodes;          /* nodes not added: registry full */
    /* the cluster bus (cluster.c) */
    uint64_t bus_connections;        /* connections that carried bus messages */
    uint64_t bus_messages;           /* bus messages analysed */
    uint64_t bus_unknown_sender;     /* ... whose sender found no node entry */
    uint64_t bus_stale_claims;       /* slot claims below the owner's epoch */
    uint64_t bus_stale_headers;      /* messages older than the sender's latest
                                        (lower epochs): not an announcement */
    uint64_t bus_claim_conflicts;    /* claims with the owner's epoch by another */
    uint64_t owner_changes;          /* slot ownership changes (both sources) */
    uint64_t failovers;              /* failovers seen */
    uint64_t dropped_failovers;      /* not kept: table full */
    uint64_t health_changes;         /* node health transitions */
    uint64_t dropped_bus_conns;      /* bus connections whose peers were not
                                        kept: table full */
    uint64_t convergence_evicted;    /* changes closed early: AN_CV_CHANGES watched */
    uint64_t convergence_dropped;    /* (client, change) rows not kept: cap */
    uint64_t series_rows;            /* timeline rows emitted */
    uint64_t series_late;            /* counts (a command, a reply, an operation)
                                        older than every bucket still open:
                                        made in the next open one */
    uint64_t series_overflow;        /* events of a scope beyond series_scopes in
                                        its bucket: counted in "other" */
} an_stats;

typedef struct an_analyzer an_analyzer;

an_analyzer *an_new(const an_config *cfg, const an_sink *sink);
void an_free(an_analyzer *an);                   /* accepts NULL */
/* The resp_sink that feeds this analyzer (ctx = an). */
resp_sink an_resp_sink(an_analyzer *an);
/* The key hook for resp_config.key_fn (ctx: NULL, the table is static). */
int an_key_fn(void *ctx, resp_keyctx *k);
/* Live mode, periodic: judge operations whose retry window has passed, check
 * open migration windows, emit findings that changed since they were last
 * emitted. */
void an_flush(an_analyzer *an, int64_t now_us);
/* End of input: close open operations, run end-of-capture detectors
 * (migration_stuck, redirect_unfollowed), emit nodes, clients, connections
 * still open, migrations, latency summaries and the findings that changed since
 * they were last emitted. A finding is emitted when it first appears and again
 * when it changed, always with the same id: the last version of each id is the
 * final one. */
void an_finish(an_analyzer *an, int64_t end_us);
const an_stats *an_get_stats(const an_analyzer *an);

/* Key slot of a key (CRC16-XMODEM with hash tags); same as resp_key_slot. */
uint16_t an_key_slot(const void *key, size_t len);

/* Command table lookup: 1 if the command (upper-case name) is known. */
int an_command_known(const char *name);

#endif /* SLOTSCOPE_ANALYSIS_H */
