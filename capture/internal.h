/*
 * internal.h - what the files of capture/ share; not for other modules.
 *
 *   decode.c   link layer -> IP -> TCP into a cap_pkt (checked reads only)
 *   pool.c     the capped store of out-of-order bytes (chunks from blocks)
 *   flows.c    the connection table: hash by 4-tuple, LRU lists, free list
 *   reasm.c    per-direction reassembly: in-order delivery, holes, gaps
 *   tracker.c  the glue: lifecycle, server side, events, statistics
 *   servers.c  endpoints shown to be servers, stamped by record
 *   pcapfile.c classic pcap files read in place (read(2), no libpcap copies)
 *   infile.c   gzip/zstd-compressed files and standard input, streamed
 *   source.c   capture files (merged by time) and live interfaces
 */
#ifndef SLOTSCOPE_CAPTURE_INTERNAL_H
#define SLOTSCOPE_CAPTURE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture.h"

/* ---------------------------------------------------------------- decode */

/* TCP flag bits (RFC 9293 section 3.1). */
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10

/* A decoded TCP segment. Pointers point into the captured record. */
typedef struct cap_pkt {
    cap_endpoint src;        /* sender */
    cap_endpoint dst;        /* receiver */
    uint32_t seq;            /* sequence number of the segment (SYN included) */
    uint32_t ack;            /* acknowledgment number (valid with TCP_ACK) */
    uint8_t flags;           /* TCP_* bits */
    const uint8_t *payload;  /* captured payload bytes */
    uint32_t payload_len;    /* how many were captured */
    uint32_t payload_missing; /* payload bytes on the wire but cut by snaplen */
} cap_pkt;

/* What cap_decode found. */
typedef enum cap_decode_result {
    CAP_DEC_TCP = 0,       /* a TCP segment, pkt filled */
    CAP_DEC_NON_TCP,       /* IP, but not TCP */
    CAP_DEC_NON_IP,        /* a link frame that does not carry IP */
    CAP_DEC_FRAGMENT,      /* an IPv4 or IPv6 fragment (not reassembled) */
    CAP_DEC_UNSUPPORTED,   /* unknown link type or encapsulation */
    CAP_DEC_TRUNCATED,     /* headers cut by snaplen before the TCP payload */
    CAP_DEC_MALFORMED      /* a header failed a bounds or sanity check */
} cap_decode_result;

/* Decode one record of link type dlt. caplen bytes were captured of wirelen. */
cap_decode_result cap_decode(int dlt, const uint8_t *data, uint32_t caplen,
                             uint32_t wirelen, cap_pkt *pkt);
/* 1 when cap_decode knows link type dlt. */
int cap_linktype_supported(int dlt);

/* ---------------------------------------------------------------- pool */

/* Bytes of payload one pool chunk holds; a chunk is 2 KiB in all. */
#define CAP_CHUNK_BYTES (2048 - sizeof(void *))

/* A piece of held out-of-order payload. */
typedef struct cap_chunk {
    struct cap_chunk *next;
    uint8_t data[CAP_CHUNK_BYTES];
} cap_chunk;

/* One held out-of-order range of a stream. chunks == NULL marks a range known
 * to be missing (payload cut by snaplen): it becomes a GAP when reached. */
typedef struct cap_held {
    struct cap_held *next;   /* next range, higher sequence numbers */
    cap_chunk *chunks;       /* the bytes, CAP_CHUNK_BYTES per chunk */
    int64_t ts_us;           /* capture time of the packet that carried them */
    uint64_t frame;          /* and the number of its record */
    uint32_t seq;            /* first sequence number */
    uint32_t len;            /* length in sequence space */
    uint32_t cost;           /* pool bytes charged for it */
} cap_held;

/* Chunks and range records, allocated in blocks and recycled, charged against
 * a global byte cap. */
typedef struct cap_pool {
    cap_chunk *free_chunks;  /* recycled chunks */
    cap_held *free_held;     /* recycled range records */
    void *blocks;            /* every block allocated, linked through its head */
    size_t used;             /* bytes charged now */
    size_t cap;              /* most bytes that may be charged */
    size_t peak;             /* most bytes ever charged */
} cap_pool;

/* Set up an empty pool with a byte cap. */
void cap_pool_init(cap_pool *pool, size_t cap);
/* Release every block. */
void cap_pool_destroy(cap_pool *pool);
/* Bytes charged for holding len bytes (len_has_data: 0 for a missing range). */
uint32_t cap_pool_cost(uint32_t len, int has_data);
/* A range record holding a copy of data[0..len) (data NULL: a missing range),
 * or NULL when the cap or memory does not allow it. */
cap_held *cap_pool_hold(cap_pool *pool, const uint8_t *data, uint32_t len);
/* Give a range record and its chunks back. */
void cap_pool_release(cap_pool *pool, cap_held *h);

/* ---------------------------------------------------------------- flows */

/* Serial number arithmetic on 32-bit sequence numbers (RFC 1982, RFC 9293). */
#define SEQ_LT(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) < 0)
#define SEQ_LEQ(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) <= 0)
#define SEQ_GT(a, b) SEQ_LT(b, a)
#define SEQ_GEQ(a, b) SEQ_LEQ(b, a)

/* Farthest a segment or an ACK may lie ahead of the expected sequence number:
 * the largest TCP window (RFC 7323: 2^30). Beyond it is out of window. */
#define CAP_WINDOW_MAX (1u << 30)
/* The most a stream picked up mid-stream may start before its first segment,
 * at the peer's first ACK (tracker.c): a receive window's worth. */
#define CAP_START_HOLE_MAX (16u << 20)

/* Reassembly state of one direction (one sender). */
typedef struct cap_stream {
    cap_held *held;          /* out-of-order ranges, sorted, not overlapping,
                                all starting after next */
    uint32_t next;           /* next sequence number to deliver */
    uint32_t isn;            /* sequence number of the SYN (when syn) */
    uint32_t fin_seq;        /* sequence number of the FIN (when fin) */
    uint32_t acked;          /* highest ACK the peer sent beyond next (when has_acked) */
    uint8_t started;         /* next is valid */
    uint8_t syn;             /* a SYN from this side was seen */
    uint8_t fin;             /* a FIN from this side was seen */
    uint8_t done;            /* every byte up to the FIN was delivered */
    uint8_t has_acked;       /* acked is valid */
    uint8_t probe_start;     /* started mid-stream from a segment without
                                payload and nothing delivered since: it may
                                have been a keepalive, one below the sender's
                                real next sequence number */
    uint8_t ack_valid;       /* ack_sent is valid */
    uint32_t ack_sent;       /* highest ACK this side sent (in its peer's
                                sequence space): what it had received */
    uint8_t pre_ack_valid;   /* pre_ack holds the peer's first ACK, seen
                                before this stream started (mid-stream) */
    uint8_t from_ack;        /* started at pre_ack, before its first segment:
                                the bytes between were never seen (tracker.c) */
    uint32_t pre_ack;
    uint8_t payload_seen;    /* this side has sent payload (note_first_payload) */
    uint8_t peer_data_ack_valid; /* peer_data_ack holds the ACK on the peer's
                                first payload, sent before this stream
                                started and at the very start of the peer's
                                stream (nothing of the peer's below it can
                                be delivered) */
    uint32_t peer_data_ack;
    uint8_t unseen_acked;    /* the peer acknowledged bytes beyond next, and
                                nothing after them was seen, since
                                unseen_since_us (while next was unseen_next) */
    uint32_t unseen_next;
    int64_t unseen_since_us;
} cap_stream;

/* Lifecycle of a table entry. */
enum { FLOW_FREE = 0, FLOW_LIVE = 1, FLOW_CLOSED = 2 };

/* Index of "no flow" in links (flows are numbered from 1; 0 means none). */
#define FLOW_NONE 0u

/* A doubly linked list of flows, oldest activity first. */
typedef struct cap_lru {
    uint32_t head;           /* least recently active */
    uint32_t tail;           /* most recently active */
    uint32_t count;
} cap_lru;

/* One entry of the connection table. ep[0] sent the first packet seen; the
 * streams are indexed the same way (st[i]: bytes sent by ep[i]). */
typedef struct cap_flow {
    /* First what a lookup compares and every packet reads, so that they
     * share the flow's first cache lines (with many connections the first
     * touch of a flow is a miss). */
    cap_endpoint ep[2];      /* the two endpoints, padding zeroed */
    uint8_t state;           /* FLOW_* */
    uint8_t opened;          /* the OPEN event was sent */
    uint8_t server;          /* ep index of the server (when opened) */
    uint8_t side_known;      /* server is decided */
    cap_stream st[2];        /* bytes sent by ep[0] and by ep[1] */
    cap_conn pub;            /* what downstream sees */
    uint64_t early_packets[2]; /* packets per ep before the OPEN event */
    uint64_t held_cost;      /* pool bytes held by both streams */
} cap_flow;

/* The two orders a flow is kept in: among all the table's flows (expiry,
 * the end), and among its partition's (eviction: capture.h). */
enum { LRU_ALL = 0, LRU_PART = 1 };

/* The links of a flow: its hash chain and its list neighbours. They live in
 * an array of their own, 24 bytes a flow, so that following a chain or moving
 * a flow in its lists touches a few hot cache lines instead of whole flows. */
typedef struct cap_link {
    uint32_t hash;           /* symmetric hash of the 4-tuple */
    uint32_t chain;          /* next flow in the hash bucket (or the free list) */
    uint32_t prev[2], next[2]; /* neighbours in the live or closed list: of
                                  the table (LRU_ALL), of the partition */
} cap_link;

/* The connection table: flows numbered 1..cap, a hash of bucket heads, a live
 * and a closed LRU list. Flows never used are handed out in order, so memory
 * is touched only as connections come. */
typedef struct cap_flows {
    cap_flow *flows;         /* flows[0] unused, flows[1..cap] */
    cap_link *links;         /* links[i] belongs to flows[i] */
    uint32_t cap;            /* most flows */
    uint32_t fresh;          /* flows[fresh+1..] were never used */
    uint32_t free_list;      /* recycled flows, linked through chain */
    uint32_t *buckets;       /* heads of the hash chains (room for max_mask+1) */
    uint32_t mask;           /* buckets in use - 1 (a power of two) */
    uint32_t max_mask;       /* the most buckets - 1 */
    uint32_t used;           /* flows in the hash (live and closed) */
    uint32_t part_cap;       /* most flows (live and closed) of one partition */
    cap_lru live;            /* open connections */
    cap_lru closed;          /* closed ones kept to absorb late packets */
    cap_lru part_live[CAP_PARTITIONS];   /* the same, per partition */
    cap_lru part_closed[CAP_PARTITIONS];
} cap_flows;

/* Allocate a table for part_cap flows in each of `parts` partitions. 0 on
 * success, -1 out of memory. */
int cap_flows_init(cap_flows *ft, uint32_t part_cap, unsigned parts);
/* Free the table. */
void cap_flows_destroy(cap_flows *ft);
/* Take an unused flow (zeroed, state FLOW_LIVE, on the live list), keyed by
 * src -> dst. NULL when the table is full. */
cap_flow *cap_flows_take(cap_flows *ft, const cap_endpoint *src,
                         const cap_endpoint *dst, uint32_t hash);
/* Move a live flow to the closed list (it stays findable). */
void cap_flows_mark_closed(cap_flows *ft, cap_flow *f);
/* Remove a flow from the hash and its list and recycle it. */
void cap_flows_release(cap_flows *ft, cap_flow *f);

/* The hot part of the table, inline: hashing, lookup, list moves (flows.c
 * has the rest). */

/* Hash one endpoint. An IPv4 endpoint packs into one word without loss
 * (address, port, family in separate bits), and the mix after it (odd
 * multiply, xor-shift) is a bijection: two IPv4 endpoints never hash alike,
 * even when hosts and ports vary together (a client subnet, a port range).
 * IPv6 folds its two words first. An IPv4 address is read as the one 4-byte
 * word cap_decode wrote: wider loads straddling that store and the zeroing
 * one cannot be forwarded from the store buffer and stall. */
static inline uint64_t cap_hash_endpoint(const cap_endpoint *ep)
{
    uint64_t x = (uint64_t)ep->port << 32 | (uint64_t)ep->addr.family << 48;
    if (ep->addr.family == 4) {
        uint32_t v4;
        memcpy(&v4, ep->addr.bytes, 4);
        x |= v4;
    } else {
        uint64_t lo, hi;
        memcpy(&lo, ep->addr.bytes, 8);
        memcpy(&hi, ep->addr.bytes + 8, 8);
        x ^= lo ^ (hi * 0xc2b2ae3d27d4eb4full) ^ (hi >> 32);
    }
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 31);
}

/* Symmetric hash of a 4-tuple: a sum does not care about the order. */
static inline uint32_t cap_flows_hash(const cap_endpoint *a, const cap_endpoint *b)
{
    uint64_t x = cap_hash_endpoint(a) + cap_hash_endpoint(b);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(x >> 32);
}

/* 1 when two endpoints are equal (inline: this is the hot lookup). IPv4
 * compares its 4 bytes only (the rest is zero on both sides), for the same
 * store-forwarding reason as cap_hash_endpoint. */
static inline int cap_same_endpoint(const cap_endpoint *a, const cap_endpoint *b)
{
    if (a->port != b->port || a->addr.family != b->addr.family)
        return 0;
    if (a->addr.family == 4)
        return memcmp(a->addr.bytes, b->addr.bytes, 4) == 0;
    return memcmp(a->addr.bytes, b->addr.bytes, 16) == 0;
}

/* 1 when flow f is the one of (src, dst), with *side the ep index of src. */
static inline int cap_flow_matches(const cap_flow *f, const cap_endpoint *src,
                                   const cap_endpoint *dst, int *side)
{
    if (cap_same_endpoint(&f->ep[0], src) && cap_same_endpoint(&f->ep[1], dst)) {
        *side = 0;
        return 1;
    }
    if (cap_same_endpoint(&f->ep[1], src) && cap_same_endpoint(&f->ep[0], dst)) {
        *side = 1;
        return 1;
    }
    return 0;
}

/* Find the flow of (src, dst) in either direction. */
static inline cap_flow *cap_flows_find(cap_flows *ft, const cap_endpoint *src,
                                        const cap_endpoint *dst, uint32_t hash, int *side)
{
    uint32_t i = ft->buckets[hash & ft->mask];
    for (; i != FLOW_NONE; i = ft->links[i].chain)
        if (ft->links[i].hash == hash && cap_flow_matches(&ft->flows[i], src, dst, side))
            return &ft->flows[i];
    return NULL;
}

/* The list a flow is on, by its state. */
static inline cap_lru *cap_flows_list_of(cap_flows *ft, const cap_flow *f)
{
    return f->state == FLOW_CLOSED ? &ft->closed : &ft->live;
}

/* Its partition's list. */
static inline cap_lru *cap_flows_part_list_of(cap_flows *ft, const cap_flow *f)
{
    unsigned p = f->pub.partition;
    return f->state == FLOW_CLOSED ? &ft->part_closed[p] : &ft->part_live[p];
}

/* Flows (live and closed) of partition p. */
static inline uint32_t cap_flows_part_used(const cap_flows *ft, unsigned p)
{
    return ft->part_live[p].count + ft->part_closed[p].count;
}

/* Number of a flow (its index in flows[]). */
static inline uint32_t cap_flows_index(const cap_flows *ft, const cap_flow *f)
{
    return (uint32_t)(f - ft->flows);
}

/* Take flow i out of list l, an LRU_ALL or an LRU_PART one (w). */
static inline void cap_lru_unlink_w(cap_flows *ft, cap_lru *l, uint32_t i, int w)
{
    cap_link *k = &ft->links[i];
    if (k->prev[w] != FLOW_NONE)
        ft->links[k->prev[w]].next[w] = k->next[w];
    else
        l->head = k->next[w];
    if (k->next[w] != FLOW_NONE)
        ft->links[k->next[w]].prev[w] = k->prev[w];
    else
        l->tail = k->prev[w];
    k->prev[w] = k->next[w] = FLOW_NONE;
    l->count--;
}

/* Put flow i at the end (most recent) of list l (w as above). */
static inline void cap_lru_append_w(cap_flows *ft, cap_lru *l, uint32_t i, int w)
{
    cap_link *k = &ft->links[i];
    k->prev[w] = l->tail;
    k->next[w] = FLOW_NONE;
    if (l->tail != FLOW_NONE)
        ft->links[l->tail].next[w] = i;
    else
        l->head = i;
    l->tail = i;
    l->count++;
}

/* Take flow i out of its two lists (of the table and of the partition). */
static inline void cap_lru_unlink(cap_flows *ft, const cap_flow *f, uint32_t i)
{
    cap_lru_unlink_w(ft, cap_flows_list_of(ft, f), i, LRU_ALL);
    cap_lru_unlink_w(ft, cap_flows_part_list_of(ft, f), i, LRU_PART);
}

/* Put flow i at the end of its two lists, by its state. */
static inline void cap_lru_append(cap_flows *ft, const cap_flow *f, uint32_t i)
{
    cap_lru_append_w(ft, cap_flows_list_of(ft, f), i, LRU_ALL);
    cap_lru_append_w(ft, cap_flows_part_list_of(ft, f), i, LRU_PART);
}

/* Mark f as just active: move it to the end of its lists. The partition's
 * list is the table's with the other partitions' flows taken out, so f is
 * last of both or of neither. */
static inline void cap_flows_touch(cap_flows *ft, cap_flow *f)
{
    uint32_t i = cap_flows_index(ft, f);
    if (cap_flows_list_of(ft, f)->tail == i)
        return;
    cap_lru_unlink(ft, f, i);
    cap_lru_append(ft, f, i);
}

/* The flow after f in its list of the table (towards the most recent), or NULL. */
static inline cap_flow *cap_flows_next(cap_flows *ft, const cap_flow *f)
{
    uint32_t n = ft->links[f - ft->flows].next[LRU_ALL];
    return n == FLOW_NONE ? NULL : &ft->flows[n];
}
/* The flow numbered i (1..cap), or NULL for FLOW_NONE. */
static inline cap_flow *cap_flows_at(cap_flows *ft, uint32_t i)
{
    return i == FLOW_NONE ? NULL : &ft->flows[i];
}

/* ---------------------------------------------------------------- tracker */

struct cap_tracker {
    cap_config cfg;          /* limits, as given */
    int64_t win_lo, win_hi;  /* records analysed: cfg.since_us..until_us */
    cap_event_fn fn;         /* downstream */
    void *ctx;
    cap_stats stats;
    cap_flows flows;
    cap_pool pool;
    uint64_t ooo_part_cap;   /* out-of-order bytes one partition may hold */
    uint64_t ooo_part_used[CAP_PARTITIONS]; /* ... and holds now */
    uint64_t index;          /* number of the record being fed (1 = the first):
                                the id of a connection it opens */
    int64_t now_us;          /* latest capture time seen */
    int64_t expire_at;       /* no flow expires before this capture time */
    int64_t linger_us;       /* how long a closed flow absorbs late packets */
    uint8_t have_time;       /* now_us is valid */
    cap_conn *touched;       /* see cap_tracker_touched */
    cap_servers *servers;    /* known servers: cfg.servers, or own_servers */
    cap_servers *own_servers; /* the tracker's own (cfg.servers NULL), which it
                                 fills itself */
    uint8_t server_port[65536 / 8]; /* bitmap of server ports */
};

/* The cap_dir of the bytes sent by ep[side] (the server is decided). */
static inline cap_dir cap_dir_of(const cap_flow *f, int side)
{
    return side == f->server ? CAP_TO_CLIENT : CAP_TO_SERVER;
}

/* Note in s (NULL: nothing) the server that segment p of record index shows
 * (its receiver for a SYN, its sender for a SYN-ACK). 1 when the table was
 * full and it was not kept. */
int cap_servers_note_pkt(cap_servers *s, uint64_t index, const cap_pkt *p);

/* Send one event downstream (DATA and GAP also update the counters). */
void cap_emit_data(cap_tracker *t, cap_flow *f, int side, int64_t ts_us, uint64_t frame,
                   const uint8_t *data, size_t len);
void cap_emit_gap(cap_tracker *t, cap_flow *f, int side, int64_t ts_us, uint64_t frame,
                  uint64_t len);

/* ---------------------------------------------------------------- reasm */

/* Start the stream of side at sequence number seq (no SYN seen). */
void cap_reasm_start(cap_stream *st, uint32_t seq);
/* A segment from side: payload [seq, seq+len) captured, followed by missing
 * bytes cut by snaplen. Delivers what is in order, holds what is ahead. */
void cap_reasm_segment(cap_tracker *t, cap_flow *f, int side, uint32_t seq,
                       const uint8_t *data, uint32_t len, uint32_t missing,
                       int64_t ts_us);
/* The peer of side acknowledged up to ack: a hole below it will never fill. */
void cap_reasm_ack(cap_tracker *t, cap_flow *f, int side, uint32_t ack, int64_t ts_us);
/* A FIN from side at sequence number fin_seq. */
void cap_reasm_fin(cap_tracker *t, cap_flow *f, int side, uint32_t fin_seq, int64_t ts_us);
/* Deliver everything known of the stream of side: holes become gaps. */
void cap_reasm_flush(cap_tracker *t, cap_flow *f, int side, int64_t ts_us);
/* Give every held range of the stream back to the pool. */
void cap_reasm_clear(cap_tracker *t, cap_flow *f, int side);

/* ---------------------------------------------------------------- stream */

/* What a capture file's bytes are (told by their first bytes). */
typedef enum cap_infile_kind {
    CAP_INFILE_PLAIN = 0,
    CAP_INFILE_GZIP = 1,
    CAP_INFILE_ZSTD = 2
} cap_infile_kind;

/* A file that is decompressed as it is read, or a pipe (infile.c). */
typedef struct cap_infile cap_infile;

/* The kind of the regular file at fd, by its first bytes (pread: the file
 * offset stays). */
cap_infile_kind cap_infile_detect(int fd);
/* "gzip", "zstd"; "" for plain. */
const char *cap_infile_kind_name(cap_infile_kind kind);
/* Read fd (owned from now on, also on failure), decompressing gzip or zstd
 * as its first bytes say. NULL with err on out of memory. */
cap_infile *cap_infile_open(int fd, char *err, size_t err_size);
/* Up to n decoded bytes: the count (may be short, as read(2) on a pipe), 0
 * at the end, -1 on an error (errno EIO, cap_infile_error). */
ssize_t cap_infile_read(cap_infile *s, void *buf, size_t n);
/* The first n (<= 64) decoded bytes, read ahead; the next reads return them
 * again. Bytes got. */
size_t cap_infile_peek(cap_infile *s, uint8_t *buf, size_t n);
/* "" or why reading failed ("truncated gzip file: ..."). */
const char *cap_infile_error(const cap_infile *s);
/* File bytes read so far (progress). */
uint64_t cap_infile_offset(const cap_infile *s);
cap_infile_kind cap_infile_kind_of(const cap_infile *s);
/* The drops the pcapng statistics blocks read so far record (see
 * cap_ng_walk: every byte handed out is walked): 1 and *drops, or 0. */
int cap_infile_drops(const cap_infile *s, uint64_t *drops);
/* A read-only FILE reading s (which the caller keeps and closes after the
 * FILE). NULL on out of memory. */
FILE *cap_infile_fopen(cap_infile *s);
/* Free the decoder and close the file. Accepts NULL. */
void cap_infile_close(cap_infile *s);

/* ---------------------------------------------------------------- pcapfile */

/* Largest captured length libpcap 1.10 accepts in a record of the link types
 * cap_pcapfile reads (its MAXIMUM_SNAPLEN); a larger one is a bad record. */
#define CAP_PCAPFILE_MAX_CAPLEN 262144u

/* Most slots of chunk mode, and the room before a slot's chunk for the
 * unread end of the previous one (a record at most). */
#define CAP_PCAPFILE_SLOTS_MAX 16u
#define CAP_PCAPFILE_HEADROOM (16u + CAP_PCAPFILE_MAX_CAPLEN)
#define CAP_PCAPFILE_CHUNK (256u << 10) /* bytes of a chunk */

/* A classic pcap file (pcap-savefile(5)) read with read(2) into one buffer,
 * records handed out in place. Only files whose every record libpcap would
 * hand out unchanged are taken (version 2.4, the plain magics in either byte
 * order, a link type capture/ decodes); cap_pcapfile_open says "not mine" for
 * the rest, which go to libpcap. */
typedef struct cap_pcapfile {
    uint8_t *buf;            /* read buffer */
    size_t size;             /* bytes allocated at buf */
    size_t pos;              /* first byte not handed out yet */
    size_t end;              /* bytes of buf holding file data */
    uint64_t consumed;       /* file offset of buf[pos] */
    int swapped;             /* fields in the other byte order */
    int nsec;                /* times in nanoseconds */
    int eof;                 /* read(2) reported the end */
    int read_errno;          /* read(2) failed with this errno (0: no) */
    uint32_t snapshot;       /* snap length as libpcap adjusts it */
    int dlt;                 /* DLT_ value of the link type */
    int fd;                  /* the open file (owned by the caller; -1 when
                                reading from stream) */
    cap_infile *stream;      /* or the stream read instead (the caller's) */
    char errbuf[160];        /* libpcap's text for the last error */
    /* chunk mode (cap_pcapfile_chunks): buf is the first buffer or a slot */
    uint8_t *first_buf;      /* the buffer of open, kept until close */
    uint8_t *slot_buf[CAP_PCAPFILE_SLOTS_MAX]; /* CAP_PCAPFILE_HEADROOM + chunk */
    size_t slot_got[CAP_PCAPFILE_SLOTS_MAX];   /* bytes of its chunk read */
    int slot_errno[CAP_PCAPFILE_SLOTS_MAX];    /* the read failed after them */
    unsigned n_slots;        /* 0: not in chunk mode */
    size_t chunk;            /* bytes of file per chunk */
    uint64_t chunk_base;     /* file offset of chunk 0 */
    uint64_t next_chunk;     /* the chunk the reader takes next */
    cap_chunk_fn chunk_fn;   /* makes sure a chunk is read (see capture.h) */
    void *chunk_ctx;
} cap_pcapfile;

/* One record as cap_pcapfile_next hands it out: the times are libpcap's
 * (struct pcap_pkthdr at microsecond precision). */
typedef struct cap_pcapfile_rec {
    int64_t sec;             /* seconds (see pcapfile.c: signed or not) */
    int64_t usec;            /* microseconds (nanoseconds / 1000) */
    const uint8_t *data;     /* caplen bytes, valid until the next call */
    uint32_t caplen;         /* captured bytes handed out */
    uint32_t len;            /* bytes on the wire */
} cap_pcapfile_rec;

/* Start reading the file open at fd with a buffer of bufsize bytes. 1 when it
 * is a file cap_pcapfile reads (positioned at the first record), 0 when not
 * (or out of memory): the caller rewinds fd and hands it to libpcap. */
int cap_pcapfile_open(cap_pcapfile *f, int fd, size_t bufsize);
/* The same, reading a stream (compressed, or a pipe). When it says "not
 * mine", the bytes it took came from cap_infile_peek, so the stream can
 * still be handed to libpcap whole. No chunk mode. */
int cap_pcapfile_open_stream(cap_pcapfile *f, cap_infile *stream, size_t bufsize);
/* The next record: 1 and *rec filled, 0 at the end, -1 on an error with
 * libpcap's text in f->errbuf ("truncated dump file; ..." for a cut file). */
int cap_pcapfile_next(cap_pcapfile *f, cap_pcapfile_rec *rec);
/* Chunk mode (see cap_source_chunks): after the bytes already read, the
 * file is read in chunks of CAP_PCAPFILE_CHUNK bytes (a record may span
 * two; the open buffer must hold CAP_PCAPFILE_HEADROOM) by
 * cap_pcapfile_fill_chunk into n slots
 * (2 .. CAP_PCAPFILE_SLOTS_MAX) in turn, chunk k into slot k % n, with pread
 * (a regular file only). Before taking chunk k the reader calls fn(ctx, k),
 * which returns once chunk k is in its slot; the unread end of the chunk
 * before is then copied in front of it. 0, or -1 (not a regular file, a
 * buffer too small, out of memory: f unchanged). */
int cap_pcapfile_chunks(cap_pcapfile *f, unsigned n, cap_chunk_fn fn, void *ctx);
/* Read chunk k into its slot: from any thread, while no other uses it. 1
 * when read whole, 0 when short (the end of the file or a read error). */
int cap_pcapfile_fill_chunk(cap_pcapfile *f, uint64_t k);
/* Free the buffer(s) (the fd stays the caller's). */
void cap_pcapfile_close(cap_pcapfile *f);

/* ---------------------------------------------------------------- pcapng */

/* One interface of a pcapng section (pcapng.c). */
typedef struct cap_pcapng_iface {
    int dlt;                 /* its link type as a DLT_ value */
    uint32_t snaplen;
    uint64_t units_per_s;    /* timestamp units per second (if_tsresol) */
    int64_t offset_s;        /* if_tsoffset */
} cap_pcapng_iface;

/* The pcapng reader source.c falls back on when libpcap refuses a file whose
 * interfaces have different link types (see pcapng.c). */
typedef struct cap_pcapng {
    FILE *fp;                /* owned: closed by cap_pcapng_close */
    uint8_t *block;          /* the current block, whole */
    uint32_t block_cap;
    cap_pcapng_iface *ifaces; /* of the current section */
    uint32_t n_ifaces, ifaces_cap;
    int swapped;             /* the section is in the other byte order */
    uint64_t offset;         /* bytes read (progress) */
    char errbuf[128];
} cap_pcapng;

/* One packet: its interface's link type and libpcap-style times. */
typedef struct cap_pcapng_rec {
    int dlt;
    int64_t sec, usec;
    const uint8_t *data;     /* valid until the next call */
    uint32_t caplen, len;
} cap_pcapng_rec;

/* Read fp (at the start of the file; owned from now on). 0. */
int cap_pcapng_open(cap_pcapng *g, FILE *fp);
/* The next packet: 1 and *rec, 0 at the end, -1 with g->errbuf. */
int cap_pcapng_next(cap_pcapng *g, cap_pcapng_rec *rec);
void cap_pcapng_close(cap_pcapng *g);
/* The packets a pcapng file says were dropped while it was captured: the
 * Interface Statistics Blocks at its end (dumpcap writes them when it stops;
 * isb_ifdrop, else isb_osdrop), the latest of each interface, summed. Reads
 * fd (a regular file of size bytes) back from its end with pread, at most 64
 * blocks. 1 and *drops when the file records them, 0 when it does not (or
 * is no pcapng). */
int cap_pcapng_tail_drops(int fd, uint64_t size, uint64_t *drops);

/* The same for a file read once, from start to end (a pipe, a compressed
 * file): the block structure followed over the bytes as they are read, each
 * block's header looked at and its body skipped, but an Interface Statistics
 * Block's (one of at most CAP_NG_WALK_ISB bytes, kept whole). The latest
 * block of each interface (0..63) of a section counts; the sections add up.
 * Bytes that are not pcapng, or a block length that cannot be right, end
 * the walk (what it found until then stays). */
#define CAP_NG_WALK_ISB 4096u
typedef struct cap_ng_walk {
    uint8_t state;            /* NG_WALK_* (pcapng.c) */
    uint8_t swapped;          /* the section's byte order is the other one */
    uint8_t found;            /* a statistics block gave a drop count */
    uint32_t head_got;        /* bytes of the block's first 12 in head */
    uint8_t head[12];
    uint32_t type, len, pos;  /* the current block: type, length, bytes seen */
    uint64_t seen;            /* interfaces of the section with a count */
    uint64_t latest[64];      /* their latest counts */
    uint64_t earlier;         /* the counts of the sections before */
    uint8_t isb[CAP_NG_WALK_ISB];
} cap_ng_walk;
void cap_ng_walk_init(cap_ng_walk *w);
void cap_ng_walk_feed(cap_ng_walk *w, const uint8_t *p, size_t n);
/* 1 and *drops when the blocks walked so far recorded drop counts. */
int cap_ng_walk_drops(const cap_ng_walk *w, uint64_t *drops);

#endif /* SLOTSCOPE_CAPTURE_INTERNAL_H */
