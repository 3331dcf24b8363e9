/*
 * decode.c - one captured record -> one TCP segment, or a reason why not.
 *
 * Every byte is read only after a length test against the captured length, so
 * a hostile record cannot make us read past its end. Formats:
 *   link types      https://www.tcpdump.org/linktypes.html
 *   Ethernet II, IEEE 802.1Q (TPID 0x8100), 802.1ad (0x88a8) and the old
 *                   QinQ TPIDs 0x9100/0x9200, stacked in any order
 *   Linux SLL       https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html
 *   Linux SLL2      https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL2.html
 *   BSD NULL/LOOP   4-byte address family, host order (NULL) or network order
 *                   (LOOP); AF_INET6 is 24, 28 or 30 depending on the BSD
 *   IPv4            RFC 791 (options skipped through IHL, fragments counted)
 *   IPv6            RFC 8200 (hop-by-hop, routing, destination options and
 *                   AH skipped; the fragment header counted as a fragment)
 *   TCP             RFC 9293 (options skipped through the data offset)
 *
 * A header cut short is "truncated" when the record was cut by snaplen
 * (caplen < wirelen) and "malformed" otherwise. Payload cut by snaplen is not
 * an error: the segment is returned with payload_missing set.
 */
#include <pcap/dlt.h>
#include <string.h>

#include "capture/internal.h"

/* LINKTYPE_RAW as written in pcap files; libpcap maps it to DLT_RAW, but a
 * caller may pass the file value. */
#define LINKTYPE_RAW_FILE 101

/* Most VLAN tags we walk through before giving up (a loop guard). */
#define MAX_VLAN_TAGS 8
/* Most IPv6 extension headers we walk through before giving up. */
#define MAX_IP6_EXT 8
/* Largest packet a length field of 0 may stand for (offload, jumbograms):
 * beyond it the record's wire length is not believed. */
#define MAX_OFFLOAD_LEN CAP_MAX_WIRE_LEN

/* One record being decoded. */
typedef struct decoder {
    const uint8_t *data;  /* the captured bytes */
    uint32_t caplen;      /* how many were captured */
    uint32_t wirelen;     /* how many were on the wire (>= caplen) */
    cap_pkt *pkt;         /* where the segment goes */
} decoder;

/* Big-endian 16 bits at p (the caller checked the length). */
static inline uint16_t be16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

/* Big-endian 32 bits at p (the caller checked the length). */
static inline uint32_t be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* 1 when need bytes from off were captured. Written so that it cannot
 * overflow: off is never beyond caplen when we get here. */
static inline int have(const decoder *d, uint32_t off, uint32_t need)
{
    return off <= d->caplen && d->caplen - off >= need;
}

/* The verdict for a header that does not fit: cut by snaplen, or bad. */
static cap_decode_result short_header(const decoder *d)
{
    return d->caplen < d->wirelen ? CAP_DEC_TRUNCATED : CAP_DEC_MALFORMED;
}

/* TCP header at off; seglen is the segment's length on the wire (from IP). */
static cap_decode_result decode_tcp(decoder *d, uint32_t off, uint32_t seglen)
{
    const uint8_t *h = d->data + off;
    uint32_t hlen, wire_payload, captured;
    if (seglen < 20)
        return CAP_DEC_MALFORMED;
    if (!have(d, off, 20))
        return short_header(d);
    hlen = (uint32_t)(h[12] >> 4) * 4;
    if (hlen < 20 || hlen > seglen)
        return CAP_DEC_MALFORMED;
    if (!have(d, off, hlen))
        return short_header(d);
    d->pkt->src.port = be16(h);
    d->pkt->dst.port = be16(h + 2);
    d->pkt->seq = be32(h + 4);
    d->pkt->ack = be32(h + 8);
    d->pkt->flags = h[13];
    /* Payload on the wire, and the part of it that was captured (Ethernet
     * padding after the IP packet is not payload). */
    wire_payload = seglen - hlen;
    captured = d->caplen - (off + hlen);
    if (captured > wire_payload)
        captured = wire_payload;
    d->pkt->payload = h + hlen;
    d->pkt->payload_len = captured;
    d->pkt->payload_missing = wire_payload - captured;
    return CAP_DEC_TCP;
}

/* Set an endpoint's IPv4 address; the unused address bytes are zeroed (the
 * flow hash reads all 16). The port comes later, from TCP. */
static inline void set_addr4(cap_endpoint *ep, const uint8_t *bytes)
{
    ep->addr.family = 4;
    memcpy(ep->addr.bytes, bytes, 4);
    memset(ep->addr.bytes + 4, 0, 12);
}

/* Set an endpoint's IPv6 address. */
static inline void set_addr6(cap_endpoint *ep, const uint8_t *bytes)
{
    ep->addr.family = 6;
    memcpy(ep->addr.bytes, bytes, 16);
}

/* IPv4 header at off. */
static cap_decode_result decode_ipv4(decoder *d, uint32_t off)
{
    const uint8_t *h = d->data + off;
    uint32_t ihl, total, on_wire;
    if (!have(d, off, 20))
        return short_header(d);
    on_wire = d->wirelen - off; /* have() proved off <= caplen <= wirelen */
    ihl = (uint32_t)(h[0] & 0x0f) * 4;
    total = be16(h + 2);
    if ((h[0] >> 4) != 4 || ihl < 20)
        return CAP_DEC_MALFORMED;
    /* Total length 0 is what segmentation offload (TSO/GSO) leaves in
     * captures of large packets: the frame's length is the packet's. */
    if (total == 0)
        total = on_wire <= MAX_OFFLOAD_LEN ? on_wire : 0;
    if (total < ihl || total > on_wire)
        return CAP_DEC_MALFORMED;
    if (!have(d, off, ihl))
        return short_header(d);
    /* More-fragments flag or a fragment offset: a piece of a datagram. */
    if ((be16(h + 6) & 0x3fff) != 0)
        return CAP_DEC_FRAGMENT;
    if (h[9] != 6)
        return CAP_DEC_NON_TCP;
    set_addr4(&d->pkt->src, h + 12);
    set_addr4(&d->pkt->dst, h + 16);
    return decode_tcp(d, off + ihl, total - ihl);
}

/* IPv6 header at off, then its extension headers up to TCP. */
static cap_decode_result decode_ipv6(decoder *d, uint32_t off)
{
    const uint8_t *h = d->data + off;
    uint32_t plen, on_wire, next_off;
    uint8_t nh;
    if (!have(d, off, 40))
        return short_header(d);
    if ((h[0] >> 4) != 6)
        return CAP_DEC_MALFORMED;
    /* have() proved off + 40 <= caplen <= wirelen. */
    on_wire = d->wirelen - off - 40;
    plen = be16(h + 4);
    /* Payload length 0: a jumbogram (RFC 2675) or offload; take the frame. */
    if (plen == 0)
        plen = on_wire;
    if (plen > on_wire || plen > MAX_OFFLOAD_LEN)
        return CAP_DEC_MALFORMED;
    nh = h[6];
    next_off = off + 40;
    for (int i = 0; i <= MAX_IP6_EXT; i++) {
        uint32_t ext_len;
        if (nh == 6) {
            set_addr6(&d->pkt->src, h + 8);
            set_addr6(&d->pkt->dst, h + 24);
            return decode_tcp(d, next_off, plen);
        }
        if (nh == 44)
            return CAP_DEC_FRAGMENT;
        if (nh != 0 && nh != 43 && nh != 60 && nh != 51)
            return CAP_DEC_NON_TCP; /* UDP, ICMPv6, ESP, no next header, ... */
        if (plen < 2)
            return CAP_DEC_MALFORMED;
        if (!have(d, next_off, 2))
            return short_header(d);
        /* AH counts its length in 4-octet units minus 2 (RFC 4302), the
         * others in 8-octet units minus 1 (RFC 8200). */
        if (nh == 51)
            ext_len = ((uint32_t)d->data[next_off + 1] + 2) * 4;
        else
            ext_len = ((uint32_t)d->data[next_off + 1] + 1) * 8;
        if (ext_len > plen)
            return CAP_DEC_MALFORMED;
        nh = d->data[next_off];
        next_off += ext_len;
        plen -= ext_len;
    }
    return CAP_DEC_UNSUPPORTED; /* a longer chain than any real packet has */
}

/* Whatever an EtherType at off says comes next, walking VLAN tags. */
static cap_decode_result decode_ethertype(decoder *d, uint32_t off, uint16_t type)
{
    for (int tags = 0; tags <= MAX_VLAN_TAGS; tags++) {
        switch (type) {
        case 0x0800:
            return decode_ipv4(d, off);
        case 0x86dd:
            return decode_ipv6(d, off);
        case 0x8100: /* 802.1Q */
        case 0x88a8: /* 802.1ad */
        case 0x9100: /* pre-standard QinQ */
        case 0x9200:
            /* A tag: 2 bytes of priority/VLAN id, then the next EtherType. */
            if (!have(d, off, 4))
                return short_header(d);
            type = be16(d->data + off + 2);
            off += 4;
            break;
        default:
            return CAP_DEC_NON_IP; /* ARP, LLDP, 802.3 length field, ... */
        }
    }
    return CAP_DEC_UNSUPPORTED;
}

/* Ethernet II: destination, source, EtherType. */
static cap_decode_result decode_ethernet(decoder *d)
{
    if (!have(d, 0, 14))
        return short_header(d);
    return decode_ethertype(d, 14, be16(d->data + 12));
}

/* Linux cooked v1: packet type, ARPHRD, address length, 8 address bytes,
 * protocol (an EtherType for IP). */
static cap_decode_result decode_sll(decoder *d)
{
    if (!have(d, 0, 16))
        return short_header(d);
    return decode_ethertype(d, 16, be16(d->data + 14));
}

/* Linux cooked v2: protocol first, then reserved, ifindex, ARPHRD, packet
 * type, address length, 8 address bytes: 20 bytes in all. */
static cap_decode_result decode_sll2(decoder *d)
{
    if (!have(d, 0, 20))
        return short_header(d);
    return decode_ethertype(d, 20, be16(d->data));
}

/* BSD NULL/LOOP: a 4-byte address family. NULL writes it in the capturing
 * host's order, LOOP in network order, and files travel between hosts, so we
 * accept both: a family is small, so the order whose high half is zero wins. */
static cap_decode_result decode_null(decoder *d)
{
    uint32_t family;
    if (!have(d, 0, 4))
        return short_header(d);
    family = be32(d->data);
    if ((family & 0xffff0000u) != 0)
        family = ((family & 0xff) << 24) | ((family & 0xff00) << 8) |
                 ((family >> 8) & 0xff00) | (family >> 24);
    if (family == 2)
        return decode_ipv4(d, 4);
    if (family == 24 || family == 28 || family == 30)
        return decode_ipv6(d, 4);
    return CAP_DEC_NON_IP;
}

/* Raw IP: the version nibble says which. only_version: 4 or 6 when the link
 * type fixes it, 0 otherwise. */
static cap_decode_result decode_raw(decoder *d, int only_version)
{
    int version;
    if (!have(d, 0, 1))
        return short_header(d);
    version = d->data[0] >> 4;
    if (only_version != 0 && version != only_version)
        return CAP_DEC_MALFORMED;
    if (version == 4)
        return decode_ipv4(d, 0);
    if (version == 6)
        return decode_ipv6(d, 0);
    return CAP_DEC_MALFORMED;
}

/* 1 when cap_decode knows link type dlt. */
int cap_linktype_supported(int dlt)
{
    switch (dlt) {
    case DLT_NULL:
    case DLT_EN10MB:
    case DLT_RAW:
    case LINKTYPE_RAW_FILE:
    case DLT_LOOP:
    case DLT_LINUX_SLL:
    case DLT_LINUX_SLL2:
    case DLT_IPV4:
    case DLT_IPV6:
        return 1;
    default:
        return 0;
    }
}

/* Decode one record into pkt. */
cap_decode_result cap_decode(int dlt, const uint8_t *data, uint32_t caplen,
                             uint32_t wirelen, cap_pkt *pkt)
{
    decoder d;
    d.data = data;
    d.caplen = caplen;
    /* A record claiming fewer bytes on the wire than it holds: trust the
     * captured bytes (the wire length only tells us about snaplen cuts). */
    d.wirelen = wirelen < caplen ? caplen : wirelen;
    d.pkt = pkt;
    switch (dlt) {
    case DLT_EN10MB:
        return decode_ethernet(&d);
    case DLT_LINUX_SLL:
        return decode_sll(&d);
    case DLT_LINUX_SLL2:
        return decode_sll2(&d);
    case DLT_NULL:
    case DLT_LOOP:
        return decode_null(&d);
    case DLT_RAW:
    case LINKTYPE_RAW_FILE:
        return decode_raw(&d, 0);
    case DLT_IPV4:
        return decode_raw(&d, 4);
    case DLT_IPV6:
        return decode_raw(&d, 6);
    default:
        return CAP_DEC_UNSUPPORTED;
    }
}
