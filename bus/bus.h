/*
 * bus.h - Redis Cluster bus messages out of TCP byte streams.
 *
 * A stage beside resp/: it gets the in-order bytes of a cluster-bus
 * connection (node port + 10000 by default, the `@cport` of CLUSTER NODES)
 * and hands out one bus_msg per message. Every node talks to every other node
 * on this bus: PING/PONG/MEET carry the sender's id, role, master, epochs,
 * replication offset, the slots it claims and gossip about other nodes; FAIL
 * spreads a failure verdict; FAILOVER_AUTH_REQUEST/ACK are a replica's
 * election; MFSTART starts a manual failover; UPDATE tells a stale node who
 * owns its slots now.
 *
 * Wire format (Redis 7.0-7.2, src/cluster.h / cluster_legacy.h, protocol
 * version 1): a fixed 2256-byte header in network byte order,
 *
 *     0 "RCmb"   4 totlen u32   8 ver u16   10 port u16   12 type u16
 *    14 count u16   16 currentEpoch u64   24 configEpoch u64   32 offset u64
 *    40 sender[40]   80 myslots[2048]   2128 slaveof[40]   2168 myip[46]
 *  2214 extensions u16   2216 reserved[30]   2246 pport u16   2248 cport u16
 *  2250 flags u16   2252 state u8   2253 mflags[3]   2256 type-specific data
 *
 * then per type: PING/PONG/MEET count gossip entries of 104 bytes (name[40],
 * ping_sent u32, pong_received u32, ip[46], port, cport, flags, pport, unused:
 * u16 each) followed, when mflags[0] has EXT_DATA, by `extensions` extensions
 * (u32 length including its 8-byte header, u16 type, u16 unused, data, each
 * 8-byte aligned): hostname (0), human node name (1), forgotten node (2: name
 * and ttl u64), shard id (3); FAIL a node name; UPDATE configEpoch u64, node
 * name, slots[2048]; PUBLISH channel_len u32, message_len u32, bytes; MODULE
 * module id u64, len u32, type u8, bytes. A slot s is claimed when bit (s & 7)
 * of byte s / 8 is set (least significant bit first). Node names are 40 hex
 * characters; all zeros means "none" (a master's slaveof).
 *
 * Hostile input: every length is checked against the message and against
 * totlen before use; a message whose lengths disagree is counted bad and
 * skipped by totlen; a totlen below the header or above BUS_MAX_TOTLEN loses
 * the framing, and the stream resynchronises at the next "RCmb" that starts a
 * plausible header (as after a capture gap). Messages up to keep_max bytes
 * are decoded whole, larger ones (a big PUBLISH) by their header only, the
 * rest skipped without copying. A whole message inside one chunk is decoded
 * where it lies; only a message split over chunks is copied.
 */
#ifndef SLOTSCOPE_BUS_H
#define SLOTSCOPE_BUS_H

#include <stddef.h>
#include <stdint.h>

#define BUS_NAMELEN 40        /* node ids: 40 hex characters */
#define BUS_IPLEN 46          /* an address as text, NUL included on the wire */
#define BUS_HEADER_LEN 2256   /* the fixed header before the type's data */
#define BUS_GOSSIP_LEN 104    /* one gossip entry */
#define BUS_SLOT_BYTES 2048   /* 16384 slots, one bit each */
#define BUS_MAX_TOTLEN (1u << 30) /* longer than this is not a bus message */
#define BUS_TEXT_MAX 256      /* hostname and human node name kept up to this */

/* Message types (the wire's `type`). */
typedef enum bus_type {
    BUS_PING = 0,
    BUS_PONG = 1,
    BUS_MEET = 2,
    BUS_FAIL = 3,
    BUS_PUBLISH = 4,
    BUS_AUTH_REQUEST = 5, /* FAILOVER_AUTH_REQUEST: a replica asks for votes */
    BUS_AUTH_ACK = 6,     /* FAILOVER_AUTH_ACK: a master votes */
    BUS_UPDATE = 7,
    BUS_MFSTART = 8,      /* a replica starts a manual failover with its master */
    BUS_MODULE = 9,
    BUS_PUBLISHSHARD = 10,
    BUS_TYPE_COUNT = 11
} bus_type;

/* Node flags (the header's flags and a gossip entry's flags). */
#define BUS_NODE_MASTER 0x001
#define BUS_NODE_REPLICA 0x002
#define BUS_NODE_PFAIL 0x004
#define BUS_NODE_FAIL 0x008
#define BUS_NODE_MYSELF 0x010
#define BUS_NODE_HANDSHAKE 0x020
#define BUS_NODE_NOADDR 0x040
#define BUS_NODE_MEET 0x080
#define BUS_NODE_MIGRATE_TO 0x100
#define BUS_NODE_NOFAILOVER 0x200

/* Message flags, byte 0 of mflags. */
#define BUS_MFLAG_PAUSED 0x01   /* the master is paused for a manual failover */
#define BUS_MFLAG_FORCEACK 0x02 /* vote even though the master is up (takeover
                                   of a manual failover, or FORCE) */
#define BUS_MFLAG_EXT 0x04      /* ping extensions follow the gossip */

/* One gossip entry: what the sender knows of another node. */
typedef struct bus_gossip {
    char name[BUS_NAMELEN + 1];
    uint32_t ping_sent;     /* seconds (the sender's clock) */
    uint32_t pong_received; /* seconds (the sender's clock) */
    char ip[BUS_IPLEN + 1];
    uint16_t port, cport, pport, flags;
} bus_gossip;

/* One decoded message. Texts are NUL-terminated; what does not fit is cut
 * and counted in the stream's stats (`text_cut`). Pointers are valid only
 * during the callback. */
typedef struct bus_msg {
    uint16_t type;           /* a bus_type, or an unknown value */
    uint16_t ver;            /* protocol version (1) */
    uint32_t totlen;         /* the message's length on the wire */
    uint16_t port, pport, cport; /* sender's client, plaintext and bus ports */
    uint16_t count;          /* PING/PONG/MEET: gossip entries */
    uint16_t flags;          /* sender's BUS_NODE_* flags */
    uint8_t state;           /* cluster state as the sender sees it: 0 ok, 1 fail */
    uint8_t mflags;          /* mflags[0]: BUS_MFLAG_* */
    uint64_t current_epoch;  /* the sender's currentEpoch */
    uint64_t config_epoch;   /* a master's configEpoch, or its master's */
    uint64_t offset;         /* replication offset */
    char sender[BUS_NAMELEN + 1];
    char master[BUS_NAMELEN + 1]; /* slaveof; "" when the sender is a master */
    char ip[BUS_IPLEN + 1];  /* sender's announced ip; "" when not set */
    const uint8_t *slots;    /* BUS_SLOT_BYTES: the slots the sender claims (a
                                replica sends its master's) */
    uint8_t whole;           /* 1: the type-specific data below was decoded;
                                0: header only (longer than keep_max) */
    uint8_t text_cut;        /* 1: a hostname or node name was cut to fit */

    /* PING/PONG/MEET */
    const uint8_t *gossip;   /* count * BUS_GOSSIP_LEN bytes: bus_msg_gossip */
    char hostname[BUS_TEXT_MAX];   /* extension 0, "" when absent */
    char human_name[BUS_TEXT_MAX]; /* extension 1, "" when absent */
    char shard_id[BUS_NAMELEN + 1];/* extension 3, "" when absent */
    uint16_t forgotten;      /* extension 2: nodes the sender forgot */
    char forgotten_first[BUS_NAMELEN + 1]; /* the first of them */

    /* FAIL: the node declared failed; UPDATE: the owner of update_slots */
    char about[BUS_NAMELEN + 1];
    uint64_t update_epoch;   /* UPDATE: the owner's configEpoch */
    const uint8_t *update_slots; /* UPDATE: BUS_SLOT_BYTES */

    uint32_t channel_len, message_len; /* PUBLISH / PUBLISHSHARD */
    uint64_t module_id;      /* MODULE */
    uint32_t module_len;     /* MODULE */
    uint8_t module_type;     /* MODULE */

    const uint8_t *raw;      /* the bytes it was decoded from: the whole
                                message, or its header (whole == 0) */
    uint32_t raw_len;
} bus_msg;

/* Gossip entry i (0 <= i < m->count) of a PING/PONG/MEET decoded whole. */
void bus_msg_gossip(const bus_msg *m, unsigned i, bus_gossip *out);
/* 1 when the bitmap claims slot (0..16383). */
static inline int bus_slot_claimed(const uint8_t *slots, unsigned slot)
{
    return (slots[slot >> 3] >> (slot & 7)) & 1;
}
/* Number of slots the bitmap claims. */
unsigned bus_slots_count(const uint8_t *slots);
/* "ping", "pong", "meet", "fail", "publish", "auth-request", "auth-ack",
 * "update", "mfstart", "module", "publishshard"; "?" for other values. */
const char *bus_type_name(unsigned type);

/* Decode one whole message of len bytes (len >= BUS_HEADER_LEN, as totlen
 * says). 0 on success, -1 when it is not a valid message (bad signature,
 * version, lengths that disagree with totlen or with each other). */
int bus_decode(const uint8_t *data, size_t len, bus_msg *out);

/* Decode the header of a message (len >= BUS_HEADER_LEN bytes of it, the
 * type's data not read): whole stays 0. 0, or -1 when not a valid header. */
int bus_decode_header_only(const uint8_t *data, size_t len, bus_msg *out);

/* Do these first bytes of a stream start a bus message? +1 yes (signature,
 * version 1 and a plausible totlen), -1 no, 0 too few bytes to tell. */
int bus_signature(const uint8_t *data, size_t len);

/* ---------------------------------------------------------------- streams */

/* What one stream (or several, added up) counted. */
typedef struct bus_stats {
    uint64_t messages;             /* messages handed out */
    uint64_t by_type[BUS_TYPE_COUNT];
    uint64_t unknown_type;         /* framed by totlen, type not known: skipped */
    uint64_t bad;                  /* framed by totlen, contents invalid: skipped */
    uint64_t header_only;          /* longer than keep_max: header decoded only */
    uint64_t resyncs;              /* framing lost (gap or garbage), found again */
    uint64_t skipped_bytes;        /* bytes passed over while looking for "RCmb" */
    uint64_t text_cut;             /* texts longer than their field */
} bus_stats;

/* Called for each message, with the capture time of the chunk that ended it. */
typedef void (*bus_msg_fn)(void *ctx, const bus_msg *m, int64_t ts_us);

typedef struct bus_stream bus_stream;

/* A stream decoder for one direction of one connection. keep_max: messages
 * up to this length are decoded whole (at least BUS_HEADER_LEN + 4096 is
 * used); its buffer grows to it only when a message is split over chunks.
 * NULL on out of memory. */
bus_stream *bus_stream_new(size_t keep_max, bus_msg_fn fn, void *ctx);
/* Accepts NULL. */
void bus_stream_free(bus_stream *s);
/* In-order bytes of the stream, split anywhere. */
void bus_stream_feed(bus_stream *s, const uint8_t *data, size_t len, int64_t ts_us);
/* Bytes were lost here: drop the partial message, resynchronise. */
void bus_stream_gap(bus_stream *s);
/* The counters of this stream. */
const bus_stats *bus_stream_stats(const bus_stream *s);
/* Add b's counters to a. */
void bus_stats_add(bus_stats *a, const bus_stats *b);

#endif /* SLOTSCOPE_BUS_H */
