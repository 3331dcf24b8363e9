/*
 * gen.h - ss-gen, a deterministic Redis Cluster capture generator.
 *
 * ss-gen writes a pcap file of RESP traffic between simulated clients and a
 * simulated Redis Cluster, and a ground-truth TSV that says exactly what it put
 * there on purpose: which client misbehaved how, for which slot, how often;
 * how many commands of each name; how many redirects of each kind; how many
 * segments it lost, reordered or retransmitted. Nothing is sent on a network:
 * addresses are only bytes in a file.
 *
 * Modules (one .c each):
 *   util.c     PRNG (xoshiro256**), CRC16 key slots, growable buffers
 *   wire.c     pcap file writer and the TCP of every connection: handshake,
 *              MSS segmentation, ACKs, reordering, retransmission, loss, FIN
 *   cluster.c  the cluster: nodes, slot owners, the migration of a slot range
 *              and stuck slots, and what a node answers to a command
 *   traffic.c  the clients: pooled connections, pipelines, command mix, key
 *              and value-size distributions, redirect handling, misbehaviours
 *   main.c     options, the run, the ground truth
 *
 * Specs: pcap file format (https://www.tcpdump.org/manpages/pcap-savefile.5.html,
 * LINKTYPE_ETHERNET 1, LINKTYPE_RAW 101); RFC 791 (IPv4), RFC 9293 (TCP);
 * RESP (https://redis.io/docs/latest/develop/reference/protocol-spec/);
 * cluster redirects (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/).
 */
#ifndef SS_GEN_H
#define SS_GEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---------------------------------------------------------------- util.c */

/* xoshiro256** state: fast, good enough, fully determined by the seed. */
typedef struct rng {
    uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);
uint64_t rng_next(rng *r);
/* Uniform in [0, n) (n > 0). */
uint32_t rng_below(rng *r, uint32_t n);
/* Uniform in [lo, hi] (lo <= hi). */
uint32_t rng_range(rng *r, uint32_t lo, uint32_t hi);
/* Uniform in [0, 1). */
double rng_unit(rng *r);

/* Hash slot of a key: CRC16-XMODEM mod 16384 with the {hashtag} rule. */
uint16_t key_slot(const char *key, size_t len);
/* 32-bit FNV-1a: decides when a key of a migrating slot has moved. */
uint32_t fnv1a(const char *p, size_t n);

/* A growable byte buffer; it only grows (to the largest message built). */
typedef struct gbuf {
    uint8_t *p;
    size_t len, cap;
} gbuf;
void gbuf_reserve(gbuf *b, size_t extra);
void gbuf_put(gbuf *b, const void *p, size_t n);
void gbuf_free(gbuf *b);
/* Decimal digits of v into out (no NUL); returns their count (<= 20). */
size_t fmt_u64(char *out, uint64_t v);
/* Print a message and exit(2): out of memory, bad option. */
void die(const char *fmt, ...);

/* ---------------------------------------------------------------- wire.c */

#define GEN_LINK_ETHERNET 1
#define GEN_LINK_RAW 101

/* A byte range of a message that may lose a segment (inside a bulk value). */
typedef struct lrange {
    size_t from, to;
} lrange;
#define GEN_MAX_LRANGES 32

/* One message (a pipeline of requests or of replies) and its lossable ranges. */
typedef struct gmsg {
    gbuf b;
    lrange lr[GEN_MAX_LRANGES];
    size_t n_lr;
} gmsg;

/* One TCP connection. dir 0 = client to server, 1 = server to client. */
typedef struct tconn {
    uint32_t ip[2];      /* [0] client, [1] server, host order */
    uint16_t port[2];
    uint32_t seq[2];     /* next sequence number each side sends */
    uint16_t ipid[2];
    uint8_t open;        /* handshake written, FIN not yet */
    uint8_t lossy;       /* loss may be applied to this connection */
    uint8_t asking;      /* server side: ASKING pending for the next command */
    uint8_t readonly;    /* server side: READONLY was sent */
} tconn;

/* What the wire did on purpose (for the ground truth). */
typedef struct wire_stats {
    uint64_t packets;
    uint64_t connections;
    uint64_t reordered;      /* segment pairs written in swapped order */
    uint64_t retransmitted;  /* segments written a second time */
    uint64_t lost;           /* segments never written: each one is a gap */
    uint64_t lost_bytes;
    uint64_t payload_bytes[2];
} wire_stats;

typedef struct wire {
    FILE *f;
    uint8_t *out;            /* output buffer, flushed when nearly full */
    size_t out_len, out_cap;
    uint64_t file_bytes;     /* bytes handed to the file so far */
    int linktype;
    int tcp_csum;            /* compute TCP checksums (else 0, as with offload) */
    uint32_t mss;
    double p_reorder, p_retrans, p_loss;
    int64_t now_us;          /* capture clock */
    double us_per_byte;      /* clock advance per byte on the wire */
    rng r;
    wire_stats st;
} wire;

void wire_init(wire *w, FILE *f, int linktype, uint32_t mss, uint64_t seed);
void wire_flush(wire *w);
/* Advance the capture clock. */
void wire_wait(wire *w, int64_t us);
/* Write the three-way handshake (once). */
void wire_connect(wire *w, tconn *c);
/* Write one message in direction dir, segmented, with impairments; the
 * receiver ACKs. */
void wire_send(wire *w, tconn *c, int dir, const gmsg *m);
/* Write the closing FIN exchange (client first). */
void wire_close(wire *w, tconn *c);

/* ---------------------------------------------------------------- cluster.c */

#define GEN_SLOTS 16384
#define GEN_MAX_MASTERS 16
#define GEN_MAX_NODES (GEN_MAX_MASTERS * 2)
#define GEN_MAX_RANGE 256

typedef struct gnode {
    uint32_t ip;
    uint16_t port;
    int master;              /* -1 for a master, else its master's index */
    int replica;             /* a master's replica index, or -1 */
    char id[41];             /* 40 hex chars */
    char addr[32];           /* "127.0.0.1:7000" */
} gnode;

/* Outcome of a command at a node (Redis's getNodeByQuery, cluster.c). */
typedef enum outcome {
    O_OK = 0,
    O_MOVED,
    O_ASK,
    O_TRYAGAIN,
    O_CROSSSLOT,
    O_KINDS
} outcome;

typedef struct cluster {
    int n_masters, n_nodes;
    gnode nodes[GEN_MAX_NODES];
    uint8_t base_owner[GEN_SLOTS];   /* master index at the start */
    /* the migration of [mig_first, mig_first + mig_count) from mig_src to
     * mig_dst, one slot after the other, over run progress [mig_begin, mig_end) */
    int mig_first, mig_count, mig_src, mig_dst;
    double mig_begin, mig_end;
    int flipped;                     /* range slots whose owner is now mig_dst */
    int split_slot;                  /* slot flipped on the source but not yet
                                        on the target (-1: none): the source
                                        answers MOVED target, the target MOVED
                                        source (a reshard tool that sets NODE on
                                        the source first) */
    int open_idx;                    /* range index of the open window, or -1 */
    uint32_t moved_below;            /* open window: a key has moved when
                                        fnv1a(key) % 1024 < moved_below */
    /* stuck slots: [stuck_first, +stuck_count) migrating from stuck_src to
     * stuck_dst from mig_begin on, never finished (half of their keys moved) */
    int stuck_first, stuck_count, stuck_src, stuck_dst, stuck_open;
    uint8_t special[GEN_SLOTS];      /* 1: range slot, 2: stuck slot */
    uint64_t stuck_asks[64];         /* ASK replies per stuck slot */
    /* cached CLUSTER SLOTS reply for the current owners */
    gbuf slots_reply;
    int slots_reply_ver;
} cluster;

/* A command as the cluster sees it: its keys. */
#define GEN_MAX_KEYS 4
#define GEN_KEY_MAX 48
typedef struct gkeys {
    int n;
    char k[GEN_MAX_KEYS][GEN_KEY_MAX];
    uint8_t len[GEN_MAX_KEYS];
    uint16_t slot[GEN_MAX_KEYS];
} gkeys;

void cluster_init(cluster *cl, int masters, int replicas, int ip_base_10, uint64_t seed);
/* The master owning slot s now. */
int cluster_owner(const cluster *cl, int s);
/* The master owning slot s as known by a client that has seen `ver` flips. */
int cluster_owner_at(const cluster *cl, int s, int ver);
/* 1 if slot s is migrating now (open window or stuck); sets src and dst. */
int cluster_migrating(const cluster *cl, int s, int *src, int *dst);
/* 1 if the key (of slot s) is on the target of its slot's migration now. */
int cluster_key_moved(const cluster *cl, int s, const char *key, size_t len);
/* What node n answers to a command with keys k. is_read: a read-only command;
 * asking/readonly: the connection's flags. *to: MOVED/ASK target node. */
outcome cluster_serve(const cluster *cl, int n, const gkeys *k, int is_read,
                      int asking, int readonly, int *to);
/* The CLUSTER SLOTS reply for the current owners (cached). */
const gbuf *cluster_slots_reply(cluster *cl);

/* ---------------------------------------------------------------- traffic.c */

/* Misbehaviours, in the order of analysis.h's an_finding_kind. */
enum {
    K_ASK_CACHED = 0,
    K_ASKING_MISSING,
    K_ASKING_OTHER_CONNECTION,
    K_ASKING_INTERLEAVED,
    K_REDIRECT_LOOP,
    K_MOVED_IGNORED,
    K_TRYAGAIN_STORM,
    K_REDIRECT_UNFOLLOWED,
    K_READONLY_MISSING,
    K_CROSSSLOT,
    K_MIGRATION_STUCK,
    K_KINDS
};
extern const char *const gen_kind_names[K_KINDS];

/* Commands the generator sends, and their names on the wire. */
enum {
    C_GET = 0, C_SET, C_MGET, C_HSET, C_HGET, C_INCR, C_EVAL, C_DEL, C_EXPIRE,
    C_MIX,        /* the ones above are the mix; those below are protocol */
    C_ASKING = C_MIX, C_READONLY, C_CLUSTER, C_MIGRATE, C_RESTORE_ASKING,
    C_PING, C_REPLCONF, C_PSYNC,
    C_NAMES
};
extern const char *const gen_cmd_names[C_NAMES];

/* Everything the run is asked to do. */
typedef struct gen_opts {
    uint64_t seed;
    uint64_t bytes;            /* stop after this many file bytes (0: unused) */
    double duration_s;         /* or after this much capture time (0: unused) */
    double rate_mbps;          /* capture time paced at this many MB/s of
                                  file (0: only packet and server times) */
    int clients;
    int pool;                  /* connections per client per node */
    int masters, replicas;     /* replicas: 0 or 1 per master */
    int depth;                 /* max pipeline depth */
    uint32_t keys;             /* plain key space */
    double skew;               /* key popularity: rank = keys * u^skew */
    uint32_t max_value;        /* largest value */
    double large_rate;         /* share of values in [256 KiB, max_value] */
    double mig_share;          /* share of good clients' commands aimed at
                                  migrating and stuck slots */
    int mig_slots;             /* slots in the migrated range (0: none) */
    double mig_begin, mig_end; /* run progress of the migration */
    int stuck_slots;           /* slots whose migration never ends */
    int bad[K_KINDS];          /* misbehaving clients per kind (stuck: slots) */
    int bad_times;             /* misbehaving operations per bad client */
    int bad_weight;            /* turns of a bad client per turn of a good one */
    uint32_t weights[C_MIX];   /* command mix */
    int admin;                 /* write the resharding admin traffic */
    int net10;                 /* 10.x addresses instead of 127.x */
    int linktype;
    uint32_t mss;
    int tcp_csum;
    double p_reorder, p_retrans, p_loss;
} gen_opts;

/* What the run did on purpose. */
typedef struct gen_truth_row {
    uint32_t client_ip;        /* 0 for cluster-side findings */
    int kind;
    int slot;
    int node;
    uint64_t count;
} gen_truth_row;

typedef struct gen_truth {
    gen_truth_row *rows;
    size_t n_rows;
    uint64_t commands[C_NAMES];
    uint64_t redirects[O_KINDS]; /* by outcome: [O_MOVED..O_CROSSSLOT] */
    uint64_t turns, operations;
    uint64_t bad_short;        /* bad clients that did fewer than bad_times */
} gen_truth;

/* Run the simulation: write the capture through w, fill truth. */
void traffic_run(const gen_opts *o, wire *w, cluster *cl, gen_truth *truth);

#endif /* SS_GEN_H */
