/*
 * capture.h - packets in, ordered TCP byte streams out.
 *
 * The first stage of the slotscope pipeline (see README.md):
 *
 *   source   libpcap offline (pcap, pcapng; several files merged by time, each
 *            maybe gzip/zstd-compressed or standard input; times shifted per
 *            file on request) or live; skew.c estimates two files' clock
 *            difference from the segments both captured
 *   decode   link layer (Ethernet, 802.1Q/802.1ad, Linux SLL/SLL2, BSD NULL/LOOP,
 *            raw IP) -> IPv4 (options) / IPv6 (extension headers) -> TCP
 *   flows    connection table keyed by the 4-tuple, both directions in one
 *            connection; SYN/FIN/RST lifecycle, idle timeout in capture time,
 *            a cap with eviction; which side is the server
 *   reasm    per direction, in-order payload bytes with the capture time of the
 *            packet that carried them; out-of-order segments held within byte
 *            caps; retransmissions and overlaps dropped and counted; a hole that
 *            will not fill becomes an explicit GAP event
 *
 * Downstream sees only plain events (OPEN, DATA, GAP, CLOSE) through one
 * callback. capture/ knows nothing about RESP: the optional "shape" hook lets the
 * caller say whether the first bytes of a stream look like a request, which is
 * the last resort for telling client from server on a connection picked up
 * mid-stream.
 *
 * Nothing here allocates per packet: connections come from a table sized at
 * creation, out-of-order bytes from a capped pool.
 */
#ifndef SLOTSCOPE_CAPTURE_H
#define SLOTSCOPE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- addresses */

/* An IPv4 or IPv6 address. IPv4 uses bytes[0..3], the rest is zero. */
typedef struct cap_addr {
    uint8_t family;    /* 4 or 6 */
    uint8_t bytes[16]; /* network order */
} cap_addr;

/* One side of a TCP connection. */
typedef struct cap_endpoint {
    cap_addr addr;
    uint16_t port;     /* host order */
} cap_endpoint;

/* Longest text cap_endpoint_format writes, NUL included ("[v6]:65535"). */
#define CAP_ENDPOINT_STRLEN 56

/* "127.0.0.1" or "::1". Returns the length written (NUL-terminated, truncated
 * to fit). */
size_t cap_addr_format(const cap_addr *addr, char *buf, size_t size);
/* "127.0.0.1:6379" or "[::1]:6379". Returns the length written. */
size_t cap_endpoint_format(const cap_endpoint *ep, char *buf, size_t size);
/* Parse an address as cap_addr_format writes it. 0 on success, -1 if invalid. */
int cap_addr_parse(const char *text, cap_addr *out);
/* Parse "host:port", "[v6]:port" or "v6:port" (port after the last colon).
 * 0 on success, -1 if invalid. */
int cap_endpoint_parse(const char *text, cap_endpoint *out);
/* 1 when both addresses are equal. */
int cap_addr_equal(const cap_addr *a, const cap_addr *b);
/* 1 when both endpoints are equal. */
int cap_endpoint_equal(const cap_endpoint *a, const cap_endpoint *b);

/* ---------------------------------------------------------------- connections */

/* Direction of bytes on a connection. */
typedef enum cap_dir {
    CAP_TO_SERVER = 0, /* client -> server: requests */
    CAP_TO_CLIENT = 1  /* server -> client: replies */
} cap_dir;

/* How the tracker decided which side is the server. */
typedef enum cap_side_source {
    CAP_SIDE_SYN = 0,   /* the handshake was seen */
    CAP_SIDE_PORT = 1,  /* one side's port is a configured server port */
    CAP_SIDE_SHAPE = 2, /* the shape hook recognised a request */
    CAP_SIDE_GUESS = 3, /* nothing to go on: the lower port is taken as server */
    CAP_SIDE_KNOWN = 4, /* one side was shown to serve earlier in the capture (a
                           handshake's server; see cap_servers) */
    CAP_SIDE_CLUSTER = 5,     /* one side was named in an earlier CLUSTER SLOTS,
                                 SHARDS or NODES reply */
    CAP_SIDE_REDIRECT = 6,    /* one side was an earlier MOVED/ASK target */
    CAP_SIDE_REPLICATION = 7, /* one side was the master of an earlier
                                 replication link (REPLCONF/PSYNC sent to it) */
    CAP_SIDE_SOURCES = 8
} cap_side_source;

/* One TCP connection as the tracker sees it. Owned by the tracker; valid from
 * its OPEN event to the end of its CLOSE event. */
typedef struct cap_conn {
    uint64_t id;              /* the number of the record that opened it (1 = the
                                 first record of the input, as Wireshark numbers
                                 frames; see cap_tracker_packet_at): unique and
                                 increasing within a run, never reused */
    cap_endpoint client;      /* the side that sends requests */
    cap_endpoint server;      /* the side that answers */
    int64_t first_us;         /* capture time of the first packet */
    int64_t last_us;          /* capture time of the latest packet */
    uint8_t saw_syn;          /* handshake seen: both streams start at byte 0 */
    uint8_t side_source;      /* a cap_side_source */
    uint8_t partition;        /* its cap partition (cap_partition_of) */
    uint64_t packets[2];      /* TCP packets per cap_dir */
    uint64_t bytes[2];        /* in-order stream bytes delivered per cap_dir */
    uint64_t gap_bytes[2];    /* bytes lost in gaps per cap_dir */
    uint32_t gaps[2];         /* gap events per cap_dir */
    uint32_t out_of_order[2]; /* segments that arrived ahead of a hole */
    uint32_t retransmits[2];  /* segments whose bytes were all seen already */
    void *user;               /* downstream's per-connection state, NULL at OPEN */
    uint64_t last_record;     /* number of its latest record: a tracker keeps its
                                 connections in this order, and closes them in
                                 this order at the idle timeout and at the end */
} cap_conn;

/* What a cap_event tells. */
typedef enum cap_ev_kind {
    CAP_EV_OPEN = 0,  /* a connection was created (SYN, or first packet mid-stream) */
    CAP_EV_DATA = 1,  /* in-order payload bytes in one direction */
    CAP_EV_GAP = 2,   /* gap_len bytes in one direction will never be seen */
    CAP_EV_CLOSE = 3  /* the connection ended; conn is freed after the callback */
} cap_ev_kind;

/* Why a connection ended. */
typedef enum cap_close_reason {
    CAP_CLOSE_FIN = 0,     /* both sides sent FIN (or one FIN and the other went idle) */
    CAP_CLOSE_RST = 1,     /* a RST was seen */
    CAP_CLOSE_IDLE = 2,    /* no packet for the idle timeout (capture time) */
    CAP_CLOSE_EVICTED = 3, /* pushed out because the connection table was full */
    CAP_CLOSE_END = 4,     /* end of input (or the run was stopped) */
    CAP_CLOSE_REUSED = 5   /* a new handshake took the tuple before this connection
                              was seen to end (its FIN/RST was not captured) */
} cap_close_reason;

/* "fin", "rst", "idle", "evicted", "end", "reused"; "?" for other values. */
const char *cap_close_reason_name(int reason);
/* "syn", "port", "shape", "guess", "known"; "?" for other values. */
const char *cap_side_source_name(int side_source);

/* One event. Pointers are valid only during the callback. */
typedef struct cap_event {
    cap_ev_kind kind;
    cap_conn *conn;          /* the connection; downstream may set conn->user */
    cap_dir dir;             /* DATA and GAP */
    int64_t ts_us;           /* capture time (microseconds since the epoch) of the
                                packet that carried (DATA), revealed (GAP) or
                                ended (CLOSE) it */
    uint64_t frame;          /* the number of that packet's record (1 = the
                                first of the input, as Wireshark numbers
                                frames; held out-of-order bytes keep the
                                record that carried them) */
    uint64_t index;          /* the number of the record being fed when the
                                event was made (>= frame): what downstream
                                learns from it is stamped with this
                                (cap_servers_note) */
    const uint8_t *data;     /* DATA: the bytes */
    size_t len;              /* DATA: how many */
    uint64_t gap_len;        /* GAP: bytes missing (0 when not known, e.g. a
                                stream picked up mid-way with data held back) */
    int32_t ack_ahead;       /* DATA with has_ack: the highest ACK number the
                                sender of these bytes had sent, as bytes
                                beyond (negative: short of) what the other
                                direction has delivered so far: the sender
                                had received at least the other direction's
                                bytes up to there when it sent the last of
                                these (it bounds which requests a reply can
                                answer) */
    uint8_t has_ack;         /* DATA: ack_ahead is known (an ACK was seen from
                                the sender and the other stream has started) */
    uint8_t before_peer;     /* GAP before a stream's first byte (a start gap):
                                the peer had received these bytes before it
                                sent any byte the capture shows (its first
                                captured payload acknowledged them), so none
                                of them answers anything captured from it */
    cap_close_reason reason; /* CLOSE */
} cap_event;

/* Receives every event, in capture order. */
typedef void (*cap_event_fn)(void *ctx, const cap_event *ev);

/* Optional hook: do these first bytes of a stream look like a request (+1),
 * like a reply (-1), or can't tell (0)? Used only when neither a SYN nor a
 * configured port says which side is the server. */
typedef int (*cap_shape_fn)(const uint8_t *data, size_t len);

/* ---------------------------------------------------------------- known servers */

/* Endpoints the capture has shown to be servers, each stamped per proof
 * with the record that showed it. A tracker orients a connection picked up
 * mid-stream at record r by the stamps below r only (servers.c says why
 * that keeps every --threads alike). Capped; what does not fit is counted
 * (cap_servers_dropped). Any thread may note and look up. */
typedef struct cap_servers cap_servers;

/* What showed an endpoint to serve. */
typedef enum cap_proof {
    CAP_PROOF_HANDSHAKE = 0,  /* a SYN's receiver, a SYN-ACK's sender */
    CAP_PROOF_CLUSTER = 1,    /* named in a CLUSTER SLOTS / SHARDS / NODES reply */
    CAP_PROOF_REDIRECT = 2,   /* a MOVED/ASK target */
    CAP_PROOF_REPLICATION = 3, /* a replica's master (it was sent REPLCONF or
                                  PSYNC), or a replica's listening port */
    CAP_PROOFS = 4
} cap_proof;

/* An empty table; NULL on out of memory. */
cap_servers *cap_servers_new(void);
/* Accepts NULL. */
void cap_servers_free(cap_servers *s);
/* Note that ep serves, by proof, made at record index (any thread). 1 when
 * it did not fit (counted), else 0. */
int cap_servers_note(cap_servers *s, cap_proof proof, uint64_t index, const cap_endpoint *ep);
/* 1 when a handshake of a record numbered below `before` showed ep to serve. */
int cap_servers_known(const cap_servers *s, const cap_endpoint *ep, uint64_t before);
/* The proofs (bit 1 << cap_proof) made below `before` that ep serves. */
unsigned cap_servers_proofs(const cap_servers *s, const cap_endpoint *ep, uint64_t before);
/* Endpoints not kept because the table was full. */
uint64_t cap_servers_dropped(const cap_servers *s);

/* ---------------------------------------------------------------- partitions */

/*
 * Every connection belongs to one of CAP_PARTITIONS fixed partitions, by the
 * symmetric hash of its 4-tuple (cap_record_flow_hash). Each cap on the whole
 * capture (connections held, out-of-order bytes, and resp/'s requests in
 * flight and kept replies) is applied per partition, cap_partition_share of
 * it each: a partition's state then evolves the same whichever tracker holds
 * it, so `--threads N`, which hands whole partitions to its workers
 * (partition % N), evicts and drops exactly what one thread does. The price:
 * one partition, so one connection, can use 1/64 of such a cap, not all.
 */
#define CAP_PARTITIONS 64

/* The partition of a connection whose 4-tuple hashes to hash: its top bits
 * (the flow table's buckets use the low ones). */
static inline unsigned cap_partition_of(uint32_t hash)
{
    return hash >> 26;
}

/* A partition's share of a capture-wide cap: cap / CAP_PARTITIONS, rounded up. */
static inline uint64_t cap_partition_share(uint64_t cap)
{
    return cap / CAP_PARTITIONS + (cap % CAP_PARTITIONS != 0);
}

/* ---------------------------------------------------------------- tracker */

/* Limits and hints; fill with cap_config_defaults, then change what you need. */
typedef struct cap_config {
    uint16_t server_ports[64];  /* ports that identify the server side */
    size_t n_server_ports;      /* 0: the built-in list: 6379-6399, 7000-7010,
                                   16379, 17000-17010, 26379, 30000-30999 */
    uint32_t max_connections;   /* connections held (live and lingering), applied
                                   per partition (CAP_PARTITIONS): a partition
                                   full evicts its own oldest-idle */
    int64_t idle_timeout_us;    /* capture time without a packet before CLOSE_IDLE */
    size_t ooo_bytes_per_conn;  /* out-of-order bytes held per connection */
    size_t ooo_bytes_total;     /* out-of-order bytes held in all, applied per
                                   partition */
    uint64_t partitions;        /* the partitions this tracker is fed (bit p:
                                   partition p), which size its table and pool;
                                   0: all of them */
    int64_t acked_gap_us;       /* capture time the peer must have acknowledged
                                   bytes never seen, with nothing after them
                                   seen, before they become a GAP (0: never;
                                   the next segment or the close decides) */
    cap_shape_fn shape;         /* see cap_shape_fn; may be NULL */
    cap_servers *servers;       /* NULL: the tracker keeps its own table of
                                   known servers, noting every record it is
                                   fed. Else the caller's, shared by several
                                   trackers: the caller notes every record
                                   (cap_record_route) before any tracker is
                                   fed it, and the trackers only read it.
                                   Downstream notes its proofs in either
                                   (cap_tracker_servers) */
    int64_t since_us, until_us; /* only records in [since, until] are analysed
                                   (0: no bound); the others move the clock and
                                   keep their number, nothing else */
    /* Called before a connection picked up mid-stream at record `before` is
     * oriented by what resp/ proved (CLUSTER replies, MOVED/ASK targets,
     * replication): returns once every proof of the records below `before`
     * is in the servers table. NULL: they always are (downstream runs on
     * the tracker's thread, as its callback). */
    void (*await_proofs)(void *ctx, uint64_t before);
    void *await_ctx;
} cap_config;

/* Sensible defaults: 262144 connections, 300 s idle, 1 MiB per connection and
 * 256 MiB in all for out-of-order data, the built-in server ports. */
void cap_config_defaults(cap_config *cfg);

/* Everything the capture layer counted. "What could not be seen" lives here. */
typedef struct cap_stats {
    uint64_t packets;              /* records read */
    uint64_t wire_bytes;           /* sum of original packet lengths */
    uint64_t captured_bytes;       /* sum of captured lengths */
    uint64_t tcp_packets;          /* TCP segments decoded */
    uint64_t non_tcp;              /* IP packets that are not TCP (UDP, ICMP, ...) */
    uint64_t non_ip;               /* link frames that are not IP (ARP, LLDP, ...) */
    uint64_t unsupported;          /* link types or encapsulations not decoded */
    uint64_t ip_fragments;         /* IPv4/IPv6 fragments (not reassembled) */
    uint64_t truncated;            /* packets cut by snaplen before the payload ended */
    uint64_t malformed;            /* headers that failed a bounds or sanity check */
    uint64_t time_backwards;       /* records older than an earlier record (than
                                      the tracker's clock, which they do not
                                      move); over the merged inputs */
    uint64_t connections;          /* connections opened */
    uint64_t mid_stream;           /* of which picked up without a SYN */
    uint64_t mid_oriented[CAP_SIDE_SOURCES]; /* those, by what oriented them
                                      (a cap_side_source; SYN stays 0) */
    uint64_t evicted_connections;  /* closed because the table was full */
    uint64_t idle_connections;     /* closed by the idle timeout */
    uint64_t stream_bytes[2];      /* in-order bytes delivered per cap_dir */
    uint64_t out_of_order;         /* segments held ahead of a hole */
    uint64_t retransmitted;        /* segments entirely seen before */
    uint64_t overlaps;             /* segments partly seen before (overlap trimmed) */
    uint64_t overlap_conflicts;    /* overlapping bytes that differed from the first copy */
    uint64_t ooo_dropped;          /* out-of-order segments that hit a byte cap: the
                                      hole before them was given up as a GAP so
                                      that they could be delivered */
    uint64_t out_of_window;        /* segments far outside the expected window */
    uint64_t gaps;                 /* gap events */
    uint64_t start_gaps;           /* of which before the first byte of a stream
                                      picked up mid-stream: bytes its receiver
                                      had acknowledged before any was seen (lost,
                                      or in flight when the capture began) */
    uint64_t gap_bytes;            /* bytes those gaps stand for */
    uint64_t kernel_drops;         /* live: packets the kernel dropped (pcap_stats) */
    uint64_t if_drops;             /* live: packets the interface dropped */
    uint64_t late_packets;         /* packets of a connection after its CLOSE (late
                                      ACKs, retransmitted FINs, data after a RST) */
    uint64_t known_servers_dropped; /* servers shown by a handshake or proved by
                                      downstream but not kept: the table of
                                      known servers was full */
} cap_stats;

typedef struct cap_tracker cap_tracker;

/* Create a tracker that sends its events to fn(ctx, ...) (fn may be NULL: only
 * count). cfg NULL: the defaults. NULL on out of memory or a max_connections
 * of 0 or above 2^30. The table costs about 300 bytes of address space per
 * allowed connection, touched only as connections come. */
cap_tracker *cap_tracker_new(const cap_config *cfg, cap_event_fn fn, void *ctx);
/* The table of known servers the tracker reads (cap_config.servers, or its
 * own): where downstream notes what it proves (cap_servers_note). */
cap_servers *cap_tracker_servers(cap_tracker *t);
/* Free the tracker. Does not emit CLOSE events: call cap_tracker_finish first.
 * Accepts NULL. */
void cap_tracker_free(cap_tracker *t);
/* Feed one captured record: its DLT link type, capture time, the captured bytes
 * and the original length on the wire. Never fails: what it cannot decode is
 * counted in the stats. */
void cap_tracker_packet(cap_tracker *t, int linktype, int64_t ts_us,
                        const uint8_t *pkt, uint32_t caplen, uint32_t wirelen);
/* cap_tracker_packet for the record numbered `index` in the input (1 = the
 * first; each call's index above the previous one's). cap_tracker_packet
 * numbers records itself, one after the other. A connection this record opens
 * gets `index` as its id.
 *
 * Several trackers can share one input (one per thread, each fed the
 * connections of its own share): give each record to its tracker with
 * cap_tracker_packet_at and to every other tracker with cap_tracker_time.
 * Every tracker then has the same clock, closes idle connections at the
 * record one tracker would, and numbers connections as one tracker would. */
void cap_tracker_packet_at(cap_tracker *t, uint64_t index, int linktype, int64_t ts_us,
                           const uint8_t *pkt, uint32_t caplen, uint32_t wirelen);
/* Record `index`, captured at ts_us, went to another tracker: only move this
 * tracker's clock (connections idle for the timeout are closed, as
 * cap_tracker_packet would before decoding). Nothing is counted. Calling it
 * right before cap_tracker_packet_at with the same record changes nothing:
 * the events of the idle timeout then come from this call. */
void cap_tracker_time(cap_tracker *t, uint64_t index, int64_t ts_us);
/* End of input: deliver what is held (holes become GAP events) and CLOSE every
 * live connection with CAP_CLOSE_END. */
void cap_tracker_finish(cap_tracker *t, int64_t ts_us);
/* The counters so far. */
const cap_stats *cap_tracker_stats(cap_tracker *t);
/* The connection the record of the latest cap_tracker_packet_at call was a
 * segment of, when it is open (its OPEN was sent) and not closed: that
 * record may have changed its counters (packets, last_us, bytes, ...) even
 * when it made no event. NULL otherwise, and after cap_tracker_time or
 * cap_tracker_finish. Valid until the next call into the tracker. For a
 * caller that keeps copies of the connections (run/). */
const cap_conn *cap_tracker_touched(const cap_tracker *t);
/* Live connections now. */
size_t cap_tracker_live(const cap_tracker *t);
/* fn for every open connection (its OPEN sent, no CLOSE yet), oldest
 * activity first. For a caller that keeps copies of the connections
 * (run/shard.c). */
void cap_tracker_each_open(cap_tracker *t, void (*fn)(void *ctx, const cap_conn *conn),
                           void *ctx);
/* Add kernel/interface drop counts reported by a live source. */
void cap_tracker_add_drops(cap_tracker *t, uint64_t kernel, uint64_t iface);

/* ---------------------------------------------------------------- sources */

/* One input (a file or an interface) and what was read from it. */
typedef struct cap_input_info {
    char name[512];           /* file path or interface name */
    int linktype;             /* DLT_* */
    char linktype_name[32];   /* "EN10MB", "LINUX_SLL2", ... */
    uint64_t packets;         /* records read */
    uint64_t bytes;           /* captured bytes read */
    int64_t first_us;         /* first record's time (0 if none) */
    int64_t last_us;          /* latest record's time */
    uint64_t kernel_drops;    /* live: pcap_stats; a pcapng file: the drops its
                                 statistics blocks record (at its end, or all
                                 of them for a file read through a stream) */
    uint64_t if_drops;        /* live only */
    uint8_t drops_recorded;   /* kernel_drops is a count (live, or a pcapng file
                                 whose statistics give one, 0 too), not merely
                                 nothing known (a pcap file cannot record it) */
    char error[256];          /* "" or what went wrong (truncated record, ...) */
    uint64_t time_backwards;  /* records older than an earlier record of this
                                 input (the tracker's rule, within one file:
                                 one file gives the tracker's number) */
    uint64_t bad_lengths;     /* records whose lengths cannot be right: nothing
                                 captured, more captured than was on the wire, or
                                 a wire length over CAP_MAX_WIRE_LEN */
    char compression[8];      /* "", "gzip" or "zstd" (told by the first bytes) */
    int64_t time_offset_us;   /* added to every record's time before the merge
                                 (cap_source_set_offset; first_us and last_us
                                 include it) */
    /* The clock difference to another input estimated from the TCP segments
     * both captured (cap_estimate_skew; set by the caller with
     * cap_source_set_skew): */
    int64_t skew_us;          /* this input's times minus the other's */
    uint64_t skew_shared;     /* segments it rests on (0: no estimate) */
    uint32_t skew_ref;        /* the other input's number, 1 = the first (0: none) */
} cap_input_info;

/* Largest believable original packet length. Linux GSO/GRO super-frames
 * (BIG TCP) reach GSO_MAX_SIZE = 8 * 65535 = 524280 bytes plus the link
 * header, as 'any' and NIC captures show them; twice that leaves room, and
 * anything beyond is damage. */
#define CAP_MAX_WIRE_LEN (1024u * 1024u)

/* Options for a live capture. */
typedef struct cap_live_opts {
    const char *iface;   /* interface name, e.g. "lo" or "eth0" */
    const char *filter;  /* BPF filter or NULL */
    int snaplen;         /* 0: 262144 */
    int buffer_mb;       /* 0: libpcap's default */
    int promisc;         /* nonzero: promiscuous mode */
} cap_live_opts;

typedef struct cap_source cap_source;

/* Open capture files (pcap or pcapng; gzip- or zstd-compressed, told by their
 * first bytes; "-" is standard input, a FIFO or pipe works too); records are
 * merged in timestamp order. NULL on error, with a one-line message in err (e.g. "cannot open 'x.pcap': No
 * such file or directory"). */
cap_source *cap_open_files(const char *const *paths, size_t n_paths,
                           char *err, size_t err_size);
/* Open a live interface. NULL on error with the message in err; warnings from
 * pcap_activate go to stderr. */
cap_source *cap_open_live(const cap_live_opts *opts, char *err, size_t err_size);
/* Close and free. Accepts NULL. */
void cap_source_free(cap_source *src);
/* Most inputs cap_estimate_skew compares (the first ones given). */
#define CAP_SKEW_INPUTS 16

/* The clock difference of two inputs found by cap_estimate_skew. */
typedef struct cap_skew {
    size_t a, b;        /* the inputs (a < b) */
    int64_t skew_us;    /* b's times minus a's for the same segments: b's clock
                           is that far ahead (subtract it from b to align) */
    uint64_t shared;    /* segments both captured (used for the median) */
    int one_way;        /* all of them went one way: the skew then includes
                           the one-way delay between the capture points */
} cap_skew;

/* Compare the first records of the capture files (at most CAP_SKEW_INPUTS;
 * each opened and read again from its start, the first 200000 records) for
 * TCP segments that two of them both captured, and estimate each such
 * pair's clock difference (skew.c). Writes at most max_out results; returns
 * how many. Files that cannot be read are left out. */
size_t cap_estimate_skew(const char *const *paths, size_t n_paths, cap_skew *out,
                         size_t max_out);

/* Note input i's estimated clock difference to input ref (see
 * cap_input_info). */
void cap_source_set_skew(cap_source *src, size_t i, size_t ref, int64_t skew_us,
                         uint64_t shared);
/* Add offset_us to the time of every record of file input i (a capture from
 * a host whose clock differs), before the merge by time. Before the first
 * record is read. */
void cap_source_set_offset(cap_source *src, size_t i, int64_t offset_us);

/* Read records into the tracker until the input ends, an error, or
 * cap_source_break. Returns 0 at the end of input, 1 when stopped by
 * cap_source_break, -1 on an error (message in err; every record read before it
 * was delivered, and the other files of a merge are still read to their end).
 * Does not call cap_tracker_finish. */
int cap_source_run(cap_source *src, cap_tracker *t, char *err, size_t err_size);
/* Ask cap_source_run to return soon. Async-signal-safe. */
void cap_source_break(cap_source *src);

/* One raw record, for benchmarks and tools that do not want the tracker. */
typedef struct cap_record {
    int linktype;
    int64_t ts_us;
    const uint8_t *data;  /* valid until the next call */
    uint32_t caplen;
    uint32_t wirelen;
} cap_record;
/* Next record in merged order: 1 got one, 0 end of input, -1 error (err). After
 * -1 the failed input is dropped and the next call goes on with the others. */
int cap_source_next(cap_source *src, cap_record *rec, char *err, size_t err_size);

/* Receives records in merged order (rec->data valid during the call only).
 * rec is NULL when a live read returned: a moment to hand on what was
 * gathered. */
typedef void (*cap_record_fn)(void *ctx, const cap_record *rec);
/* Chunk mode (cap_source_chunks): called by the source on its reading
 * thread before it goes on in chunk k (0, 1, ...); returns once chunk k was
 * read, by cap_source_fill_chunk on this thread or another. */
typedef void (*cap_chunk_fn)(void *ctx, uint64_t k);
/* Chunk mode, for a reader thread whose records are used later by another
 * thread, which can also share the reading: the file is read in chunks
 * (1 MiB) into `slots` slots in turn, chunk k into slot k % slots, and the
 * bytes of a record stay where they were handed out until their slot is
 * read into again. So: chunk k may be read (cap_source_fill_chunk) once the
 * source called fn for chunk k - slots + 2 (it is then done with slot
 * k % slots itself) and the user is done with the records handed out
 * before the call for chunk k - slots + 1; chunks are read in order, each
 * once. The records handed out before the call for chunk 0 stay valid until
 * cap_source_free. Only one regular classic pcap file read in place (not
 * libpcap's buffers: pcapng, several files, live) can do it, and only
 * before its first record: 1 when the source does it from now on, 0 when
 * not (out of memory too; record bytes are then valid during the call
 * only). */
int cap_source_chunks(cap_source *src, unsigned slots, cap_chunk_fn fn, void *ctx);
/* Read chunk k of a source in chunk mode (see cap_source_chunks): from any
 * thread, under the rules given there. 1 when it was read whole, 0 when it
 * is short (the end of the file, or a read error, which the source reports
 * as usual when it gets there): later chunks need no reading. */
int cap_source_fill_chunk(cap_source *src, uint64_t k);
/* cap_source_run with a record callback instead of a tracker (same loops, same
 * counting of the inputs). Live drop counts go to the inputs' kernel_drops and
 * if_drops only (no tracker to add them to). */
int cap_source_run_records(cap_source *src, cap_record_fn fn, void *ctx, char *err,
                           size_t err_size);
/* Live sources, during cap_source_run and cap_source_run_records: fn(ctx,
 * rec) for each record before it is delivered, and fn(ctx, NULL) each time a
 * read of the interface returned (at least every 200 ms, packets or not), on
 * the thread that runs the source. For keeping the raw packets (`live -w`)
 * and for work due by the wall clock. NULL: none. */
void cap_source_set_tap(cap_source *src, cap_record_fn fn, void *ctx);
/* The symmetric hash of the 4-tuple of a record that is a TCP segment (the
 * same for both directions of a connection): 1 and *hash set; 0 when the
 * record is not a TCP segment cap_tracker_packet would follow. */
int cap_record_flow_hash(const cap_record *rec, uint32_t *hash);
/* cap_record_flow_hash for record number `index` that also notes in s (may
 * be NULL) the server the record shows, if it is a SYN or a SYN-ACK: what a
 * tracker with its own table notes when fed the record. */
int cap_record_route(const cap_record *rec, uint64_t index, cap_servers *s, uint32_t *hash);
/* The sender and receiver of a record that is a TCP segment: 1 and both set;
 * 0 when it is not one cap_tracker_packet would follow (for tools that pick
 * records by connection: `slotscope extract`). */
int cap_record_endpoints(const cap_record *rec, cap_endpoint *src, cap_endpoint *dst);

/* The inputs and what was read from each (n set to their count). */
const cap_input_info *cap_source_inputs(const cap_source *src, size_t *n);
/* Bytes read so far and total bytes of the input files (0 total when live), for
 * a progress display. */
void cap_source_progress(const cap_source *src, uint64_t *done, uint64_t *total);

/* ---------------------------------------------------------------- savefiles */

/* Raw records kept in classic pcap files while they are analysed (`live -w
 * FILE -C MB`), as tcpdump writes them: FILE, then with rotation FILE1,
 * FILE2, ... each started once the one before is larger than rotate_bytes.
 * A path is written only when it does not exist or is a regular file that is
 * empty or a capture (pcap or pcapng magic); never a link, a FIFO, a device,
 * a database, or one of the paths in `avoid` (the same file by device and
 * inode, or the same text). */
typedef struct cap_savefile cap_savefile;

typedef struct cap_savefile_opts {
    const char *path;            /* FILE */
    uint64_t rotate_bytes;       /* 0: one file */
    int linktype;                /* DLT_* of the records */
    int snaplen;                 /* for the file header; 0: 262144 */
    const char *const *avoid;    /* paths never written (the database); copied */
    size_t n_avoid;
} cap_savefile_opts;

/* Create FILE. NULL with err. */
cap_savefile *cap_savefile_open(const cap_savefile_opts *opts, char *err, size_t err_size);
/* Append a record (rotating first when due). 0, or -1 once writing failed
 * (cap_savefile_error says why): from then on records are only counted as
 * lost. */
int cap_savefile_write(cap_savefile *sf, const cap_record *rec);
/* "" or why writing stopped. */
const char *cap_savefile_error(const cap_savefile *sf);
/* Records written, records lost after an error, files started. */
uint64_t cap_savefile_packets(const cap_savefile *sf);
uint64_t cap_savefile_lost(const cap_savefile *sf);
uint32_t cap_savefile_files(const cap_savefile *sf);
/* Flush and close. 0, or -1 when anything failed (err says what). Accepts
 * NULL. */
int cap_savefile_close(cap_savefile *sf, char *err, size_t err_size);

#endif /* SLOTSCOPE_CAPTURE_H */
