/*
 * pktgen.h - craft TCP packets and capture files for tests.
 *
 * Build one frame in memory:
 *
 *     pg_packet p;
 *     pg_packet_init(&p);                 // Ethernet, 10.0.0.1:40000 -> 10.0.0.2:6379, ACK
 *     p.payload = "PING\r\n"; p.len = 6;
 *     uint8_t buf[PG_MAX_FRAME];
 *     size_t n = pg_build(&p, buf, sizeof buf);
 *
 * Link types: DLT_EN10MB (with p.n_vlan 802.1Q/802.1ad tags), DLT_LINUX_SLL,
 * DLT_LINUX_SLL2, DLT_NULL (host or network order family), DLT_LOOP, DLT_RAW,
 * DLT_IPV4, DLT_IPV6. Network: IPv4 (with options, fragments) or IPv6 (with
 * extension headers), then TCP (or, with ip_proto, another protocol).
 *
 * Write capture files (pcap with microsecond or nanosecond times, or pcapng):
 *
 *     pg_file *f = pg_file_open("x.pcap", PG_PCAP, DLT_EN10MB, 65535);
 *     pg_file_write(f, ts_us, buf, n);    // captures min(n, snaplen) bytes
 *     pg_file_close(f);
 *
 * Or a whole conversation (handshake, data both ways, close), into a file or
 * any callback, with sequence numbers kept for you: see pg_conv.
 */
#ifndef SLOTSCOPE_TESTS_PKTGEN_H
#define SLOTSCOPE_TESTS_PKTGEN_H

#include <pcap/dlt.h>
#include <stddef.h>
#include <stdint.h>

/* TCP flags. */
#define PG_FIN 0x01
#define PG_SYN 0x02
#define PG_RST 0x04
#define PG_PSH 0x08
#define PG_ACK 0x10

/* Largest frame pg_build writes (headers + 64 KiB payload). */
#define PG_MAX_FRAME (65536 + 512)
/* A buffer for super-frames built with pg_packet.big: headers + 256 KiB of
 * payload (pg_build takes any larger buffer too). */
#define PG_MAX_BIG_FRAME (256 * 1024 + 512)
/* Most VLAN tags on one frame. */
#define PG_MAX_VLAN 4

/* One packet to build. Start from pg_packet_init and change what you need. */
typedef struct pg_packet {
    int dlt;                    /* link type, a DLT_* value */
    const char *src;            /* sender address, IPv4 or IPv6 text */
    const char *dst;            /* receiver address (same family) */
    uint16_t sport, dport;
    uint32_t seq, ack;
    uint8_t flags;              /* PG_* bits */
    const void *payload;        /* TCP payload (or the body of ip_proto) */
    size_t len;
    /* Ethernet only: VLAN tags, outermost first. tpid 0 means 0x8100. */
    uint16_t vlan_tpid[PG_MAX_VLAN];
    uint16_t vlan_id[PG_MAX_VLAN];
    size_t n_vlan;
    int null_network_order;     /* DLT_NULL: write the family big-endian */
    uint32_t af_inet6;          /* DLT_NULL/LOOP family for IPv6 (0: 30) */
    size_t ip4_options;         /* IPv4 option bytes (NOPs + EOL, rounded to 4) */
    uint8_t ip6_ext[8];         /* IPv6 extension headers, in order: 0 (hop-by-hop),
                                   43 (routing), 60 (destination), 44 (fragment),
                                   51 (AH) */
    size_t n_ip6_ext;
    int ip4_more_fragments;     /* IPv4: set MF */
    uint16_t ip4_frag_offset;   /* IPv4: fragment offset in 8-byte units */
    uint8_t ip_proto;           /* 0: TCP; else e.g. 17 (payload is the body) */
    size_t tcp_options;         /* TCP option bytes (NOPs, rounded to 4) */
    int big;                    /* a GSO/GRO super-frame: an IP packet over 65535
                                   bytes is allowed, its IPv4 total length or
                                   IPv6 payload length written as 0, as Linux
                                   BIG TCP leaves it (buf: PG_MAX_BIG_FRAME) */
} pg_packet;

/* Defaults: Ethernet, 10.0.0.1:40000 -> 10.0.0.2:6379, flags ACK, seq 1000,
 * ack 2000, no payload. */
void pg_packet_init(pg_packet *p);
/* Build the frame into buf. Returns its length, 0 when it does not fit or an
 * address does not parse. */
size_t pg_build(const pg_packet *p, uint8_t *buf, size_t size);

/* ---------------------------------------------------------------- files */

typedef enum pg_format {
    PG_PCAP = 0,     /* classic pcap, microsecond times */
    PG_PCAP_NS = 1,  /* classic pcap, nanosecond times */
    PG_PCAPNG = 2    /* pcapng: one section, one interface */
} pg_format;

typedef struct pg_file pg_file;

/* Create a capture file for link type dlt with a snap length. NULL on error. */
pg_file *pg_file_open(const char *path, pg_format fmt, int dlt, uint32_t snaplen);
/* Write a frame of len bytes, captured up to the snap length. 0 or -1. */
int pg_file_write(pg_file *f, int64_t ts_us, const uint8_t *frame, size_t len);
/* Write a record exactly as given (any caplen/wirelen, for bad files). */
int pg_file_write_raw(pg_file *f, int64_t ts_us, const uint8_t *data, uint32_t caplen,
                      uint32_t wirelen);
/* Bytes written so far (the file offset). */
long pg_file_offset(pg_file *f);
/* Close the file. 0 or -1. */
int pg_file_close(pg_file *f);

/* ---------------------------------------------------------------- conversations */

/* Where a conversation's frames go: a file, or a callback (both may be set). */
typedef void (*pg_frame_fn)(void *ctx, int dlt, int64_t ts_us, const uint8_t *frame, size_t len);

/* A TCP conversation between a client (pkt.src) and a server (pkt.dst). */
typedef struct pg_conv {
    pg_packet pkt;       /* template: link, addresses, ports (src = client) */
    uint32_t next[2];    /* next sequence number: [0] client, [1] server */
    int64_t ts_us;       /* time of the next packet */
    int64_t step_us;     /* added after each packet */
    pg_file *file;       /* frames go here when not NULL */
    pg_frame_fn fn;      /* and here when not NULL */
    void *ctx;
} pg_conv;

/* Start a conversation from a template, with the two initial sequence numbers
 * (the SYNs carry them; data starts one later). Time starts at ts_us and steps
 * by 10 us. */
void pg_conv_init(pg_conv *c, const pg_packet *tmpl, uint32_t isn_client, uint32_t isn_server,
                  int64_t ts_us);
/* SYN, SYN-ACK, ACK. */
int pg_conv_handshake(pg_conv *c);
/* One segment of data from the client (from_server 0) or the server, with ACK
 * set; the sequence number advances. */
int pg_conv_send(pg_conv *c, int from_server, const void *data, size_t len);
/* Send a segment with explicit sequence number and flags (no advance): for
 * reordering, retransmissions, overlaps. */
int pg_conv_send_at(pg_conv *c, int from_server, uint32_t seq, uint8_t flags,
                    const void *data, size_t len);
/* FIN from the client, ACK, FIN from the server, ACK. */
int pg_conv_close(pg_conv *c);

#endif /* SLOTSCOPE_TESTS_PKTGEN_H */
