/*
 * pktgen.c - craft TCP packets and capture files for tests (see pktgen.h).
 *
 * Formats written: Ethernet II with 802.1Q/802.1ad tags, Linux SLL and SLL2,
 * BSD NULL/LOOP, raw IP; IPv4 (RFC 791) with header checksum, IPv6 (RFC 8200)
 * with extension headers, TCP (RFC 9293) with checksum; pcap files
 * (pcap-savefile(5)) and pcapng (SHB, IDB, EPB; draft-ietf-opsawg-pcapng).
 */
#include "pktgen.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* LINKTYPE_RAW as written in files (DLT_RAW differs between systems). */
#define LINKTYPE_RAW 101

/* Defaults: Ethernet, 10.0.0.1:40000 -> 10.0.0.2:6379, ACK. */
void pg_packet_init(pg_packet *p)
{
    memset(p, 0, sizeof *p);
    p->dlt = DLT_EN10MB;
    p->src = "10.0.0.1";
    p->dst = "10.0.0.2";
    p->sport = 40000;
    p->dport = 6379;
    p->seq = 1000;
    p->ack = 2000;
    p->flags = PG_ACK;
}

/* Big-endian stores. */
static void put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v)
{
    put16(p, v >> 16);
    put16(p + 2, v);
}

/* Add bytes to a ones' complement sum (RFC 1071). */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (n & 1)
        sum += (uint32_t)p[n - 1] << 8;
    return sum;
}

/* Fold a sum into a 16-bit checksum. */
static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* Write the link header for an IP packet of family (4 or 6) into buf.
 * Returns its length, or (size_t)-1 when it does not fit. */
static size_t build_link(const pg_packet *p, int family, uint8_t *buf, size_t size)
{
    uint16_t ethertype = family == 4 ? 0x0800 : 0x86dd;
    uint32_t af = family == 4 ? 2 : (p->af_inet6 ? p->af_inet6 : 30);
    size_t n = 0;
    switch (p->dlt) {
    case DLT_EN10MB:
        if (size < 14 + 4 * p->n_vlan || p->n_vlan > PG_MAX_VLAN)
            return (size_t)-1;
        memcpy(buf, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
        n = 12;
        for (size_t i = 0; i < p->n_vlan; i++) {
            put16(buf + n, p->vlan_tpid[i] ? p->vlan_tpid[i] : 0x8100);
            put16(buf + n + 2, p->vlan_id[i] & 0x0fff);
            n += 4;
        }
        put16(buf + n, ethertype);
        return n + 2;
    case DLT_LINUX_SLL:
        if (size < 16)
            return (size_t)-1;
        memset(buf, 0, 16);
        put16(buf + 2, 772);    /* ARPHRD_LOOPBACK */
        put16(buf + 4, 6);      /* address length */
        put16(buf + 14, ethertype);
        return 16;
    case DLT_LINUX_SLL2:
        if (size < 20)
            return (size_t)-1;
        memset(buf, 0, 20);
        put16(buf, ethertype);
        put32(buf + 4, 1);      /* interface index */
        put16(buf + 8, 772);    /* ARPHRD_LOOPBACK */
        buf[11] = 6;            /* address length */
        return 20;
    case DLT_NULL:
    case DLT_LOOP:
        if (size < 4)
            return (size_t)-1;
        if (p->dlt == DLT_LOOP || p->null_network_order) {
            put32(buf, af);
        } else {
            buf[0] = (uint8_t)af; /* little-endian host order */
            buf[1] = (uint8_t)(af >> 8);
            buf[2] = (uint8_t)(af >> 16);
            buf[3] = (uint8_t)(af >> 24);
        }
        return 4;
    case DLT_RAW:
    case LINKTYPE_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
        return 0;
    default:
        return (size_t)-1;
    }
}

/* Length of the transport header plus payload. */
static size_t transport_len(const pg_packet *p)
{
    return (p->ip_proto ? 0 : 20 + ((p->tcp_options + 3) & ~(size_t)3)) + p->len;
}

/* Write the transport header and payload at buf; the pseudo-header sum
 * comes in. Returns the length, or (size_t)-1 when it does not fit. */
static size_t build_transport(const pg_packet *p, uint32_t pseudo, uint8_t *buf, size_t size)
{
    size_t opt = (p->tcp_options + 3) & ~(size_t)3;
    size_t hlen = p->ip_proto ? 0 : 20 + opt;
    if (opt > 40 || size < hlen + p->len)
        return (size_t)-1;
    if (!p->ip_proto) {
        memset(buf, 0, hlen);
        put16(buf, p->sport);
        put16(buf + 2, p->dport);
        put32(buf + 4, p->seq);
        put32(buf + 8, p->ack);
        buf[12] = (uint8_t)((hlen / 4) << 4);
        buf[13] = p->flags;
        put16(buf + 14, 65535);
        memset(buf + 20, 1, opt); /* NOP options */
    }
    if (p->len > 0)
        memcpy(buf + hlen, p->payload, p->len);
    if (!p->ip_proto) {
        uint32_t sum = csum_add(pseudo, buf, hlen + p->len);
        put16(buf + 16, csum_fold(sum));
    }
    return hlen + p->len;
}

/* IPv4 header, then the transport. Returns the IP packet length. */
static size_t build_ipv4(const pg_packet *p, const uint8_t src[4], const uint8_t dst[4],
                         uint8_t *buf, size_t size)
{
    size_t opt = (p->ip4_options + 3) & ~(size_t)3;
    size_t hlen = 20 + opt, tlen;
    uint8_t proto = p->ip_proto ? p->ip_proto : 6;
    uint32_t pseudo = 0;
    if (opt > 40 || size < hlen)
        return (size_t)-1;
    pseudo = csum_add(pseudo, src, 4);
    pseudo = csum_add(pseudo, dst, 4);
    pseudo += proto + (uint32_t)transport_len(p);
    tlen = build_transport(p, pseudo, buf + hlen, size - hlen);
    if (tlen == (size_t)-1 || (hlen + tlen > 65535 && !p->big))
        return (size_t)-1;
    memset(buf, 0, hlen);
    buf[0] = (uint8_t)(0x40 | (hlen / 4));
    put16(buf + 2, hlen + tlen > 65535 ? 0 : (uint32_t)(hlen + tlen));
    put16(buf + 4, 0x1234);
    put16(buf + 6, (p->ip4_more_fragments ? 0x2000u : 0) | (p->ip4_frag_offset & 0x1fff));
    buf[8] = 64;
    buf[9] = proto;
    memcpy(buf + 12, src, 4);
    memcpy(buf + 16, dst, 4);
    if (opt > 0) {
        memset(buf + 20, 1, opt - 1); /* NOPs, then End of Option List */
        buf[20 + opt - 1] = 0;
    }
    put16(buf + 10, csum_fold(csum_add(0, buf, hlen)));
    return hlen + tlen;
}

/* One IPv6 extension header of type ext with next header nh at buf.
 * Returns its length, or (size_t)-1 when it does not fit. */
static size_t build_ip6_ext(uint8_t ext, uint8_t nh, uint8_t *buf, size_t size)
{
    size_t n = ext == 51 ? 12 : 8;
    if (size < n)
        return (size_t)-1;
    memset(buf, 0, n);
    buf[0] = nh;
    switch (ext) {
    case 0:  /* hop-by-hop and destination options: one PadN option */
    case 60:
        buf[2] = 1;
        buf[3] = 4;
        break;
    case 43: /* routing: type 0, no segments left */
        break;
    case 44: /* fragment: offset 0, more fragments, an identification */
        put16(buf + 2, 1);
        put32(buf + 4, 0xabcd);
        break;
    case 51: /* AH: 12 bytes, length (12/4) - 2 */
        buf[1] = 1;
        put32(buf + 4, 0x100);
        break;
    default:
        return (size_t)-1;
    }
    return n;
}

/* IPv6 header, extension headers, then the transport. */
static size_t build_ipv6(const pg_packet *p, const uint8_t src[16], const uint8_t dst[16],
                         uint8_t *buf, size_t size)
{
    uint8_t proto = p->ip_proto ? p->ip_proto : 6;
    size_t off = 40, tlen, tcp_len;
    uint32_t pseudo = 0;
    if (size < 40 || p->n_ip6_ext > sizeof p->ip6_ext)
        return (size_t)-1;
    memset(buf, 0, 40);
    buf[0] = 0x60;
    buf[6] = p->n_ip6_ext > 0 ? p->ip6_ext[0] : proto;
    buf[7] = 64;
    memcpy(buf + 8, src, 16);
    memcpy(buf + 24, dst, 16);
    for (size_t i = 0; i < p->n_ip6_ext; i++) {
        uint8_t nh = i + 1 < p->n_ip6_ext ? p->ip6_ext[i + 1] : proto;
        size_t n = build_ip6_ext(p->ip6_ext[i], nh, buf + off, size - off);
        if (n == (size_t)-1)
            return n;
        off += n;
    }
    tcp_len = transport_len(p);
    pseudo = csum_add(pseudo, src, 16);
    pseudo = csum_add(pseudo, dst, 16);
    pseudo += (uint32_t)tcp_len + proto;
    tlen = build_transport(p, pseudo, buf + off, size - off);
    if (tlen == (size_t)-1 || (off - 40 + tlen > 65535 && !p->big))
        return (size_t)-1;
    put16(buf + 4, off - 40 + tlen > 65535 ? 0 : (uint32_t)(off - 40 + tlen));
    return off + tlen;
}

/* Build the frame into buf. */
size_t pg_build(const pg_packet *p, uint8_t *buf, size_t size)
{
    uint8_t src[16], dst[16];
    int family;
    size_t link, ip;
    if (inet_pton(AF_INET, p->src, src) == 1 && inet_pton(AF_INET, p->dst, dst) == 1)
        family = 4;
    else if (inet_pton(AF_INET6, p->src, src) == 1 && inet_pton(AF_INET6, p->dst, dst) == 1)
        family = 6;
    else
        return 0;
    link = build_link(p, family, buf, size);
    if (link == (size_t)-1)
        return 0;
    if (family == 4)
        ip = build_ipv4(p, src, dst, buf + link, size - link);
    else
        ip = build_ipv6(p, src, dst, buf + link, size - link);
    return ip == (size_t)-1 ? 0 : link + ip;
}

/* ---------------------------------------------------------------- files */

struct pg_file {
    FILE *fp;
    pg_format fmt;
    uint32_t snaplen;
};

/* Little-endian stores (files are written in little-endian order). */
static void le16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void le32(uint8_t *p, uint32_t v)
{
    le16(p, v);
    le16(p + 2, v >> 16);
}

/* The link type value written in files for a DLT. */
static uint32_t file_linktype(int dlt)
{
    return dlt == DLT_RAW ? LINKTYPE_RAW : (uint32_t)dlt;
}

/* Write the pcapng Section Header and Interface Description blocks. */
static int write_pcapng_head(FILE *fp, int dlt, uint32_t snaplen)
{
    uint8_t shb[28], idb[20];
    le32(shb, 0x0a0d0d0a);
    le32(shb + 4, sizeof shb);
    le32(shb + 8, 0x1a2b3c4d);
    le16(shb + 12, 1);
    le16(shb + 14, 0);
    le32(shb + 16, 0xffffffff); /* section length unknown */
    le32(shb + 20, 0xffffffff);
    le32(shb + 24, sizeof shb);
    le32(idb, 1);
    le32(idb + 4, sizeof idb);
    le16(idb + 8, file_linktype(dlt));
    le16(idb + 10, 0);
    le32(idb + 12, snaplen);
    le32(idb + 16, sizeof idb); /* no options: microsecond times */
    return fwrite(shb, sizeof shb, 1, fp) == 1 && fwrite(idb, sizeof idb, 1, fp) == 1 ? 0 : -1;
}

/* Create a capture file. */
pg_file *pg_file_open(const char *path, pg_format fmt, int dlt, uint32_t snaplen)
{
    pg_file *f = calloc(1, sizeof *f);
    int ok;
    if (f == NULL)
        return NULL;
    f->fp = fopen(path, "wb");
    f->fmt = fmt;
    f->snaplen = snaplen;
    if (f->fp == NULL) {
        free(f);
        return NULL;
    }
    if (fmt == PG_PCAPNG) {
        ok = write_pcapng_head(f->fp, dlt, snaplen) == 0;
    } else {
        uint8_t h[24];
        le32(h, fmt == PG_PCAP_NS ? 0xa1b23c4d : 0xa1b2c3d4);
        le16(h + 4, 2);
        le16(h + 6, 4);
        le32(h + 8, 0);
        le32(h + 12, 0);
        le32(h + 16, snaplen);
        le32(h + 20, file_linktype(dlt));
        ok = fwrite(h, sizeof h, 1, f->fp) == 1;
    }
    if (!ok) {
        fclose(f->fp);
        free(f);
        return NULL;
    }
    return f;
}

/* Write one pcapng Enhanced Packet Block. */
static int write_epb(pg_file *f, int64_t ts_us, const uint8_t *data, uint32_t caplen,
                     uint32_t wirelen)
{
    static const uint8_t pad[4] = {0};
    uint32_t padded = (caplen + 3) & ~3u;
    uint32_t total = 32 + padded;
    uint8_t h[28], t[4];
    le32(h, 6);
    le32(h + 4, total);
    le32(h + 8, 0);
    le32(h + 12, (uint32_t)((uint64_t)ts_us >> 32));
    le32(h + 16, (uint32_t)ts_us);
    le32(h + 20, caplen);
    le32(h + 24, wirelen);
    le32(t, total);
    if (fwrite(h, sizeof h, 1, f->fp) != 1 || (caplen && fwrite(data, caplen, 1, f->fp) != 1) ||
        (padded > caplen && fwrite(pad, padded - caplen, 1, f->fp) != 1) ||
        fwrite(t, sizeof t, 1, f->fp) != 1)
        return -1;
    return 0;
}

/* Write a record exactly as given. */
int pg_file_write_raw(pg_file *f, int64_t ts_us, const uint8_t *data, uint32_t caplen,
                      uint32_t wirelen)
{
    uint8_t h[16];
    uint32_t frac = (uint32_t)(ts_us % 1000000);
    if (f->fmt == PG_PCAPNG)
        return write_epb(f, ts_us, data, caplen, wirelen);
    le32(h, (uint32_t)(ts_us / 1000000));
    le32(h + 4, f->fmt == PG_PCAP_NS ? frac * 1000 : frac);
    le32(h + 8, caplen);
    le32(h + 12, wirelen);
    if (fwrite(h, sizeof h, 1, f->fp) != 1 || (caplen && fwrite(data, caplen, 1, f->fp) != 1))
        return -1;
    return 0;
}

/* Write a frame, captured up to the snap length. */
int pg_file_write(pg_file *f, int64_t ts_us, const uint8_t *frame, size_t len)
{
    uint32_t caplen = len > f->snaplen ? f->snaplen : (uint32_t)len;
    return pg_file_write_raw(f, ts_us, frame, caplen, (uint32_t)len);
}

/* Bytes written so far. */
long pg_file_offset(pg_file *f)
{
    fflush(f->fp);
    return ftell(f->fp);
}

/* Close the file. */
int pg_file_close(pg_file *f)
{
    int rc;
    if (f == NULL)
        return 0;
    rc = fclose(f->fp) == 0 ? 0 : -1;
    free(f);
    return rc;
}

/* ---------------------------------------------------------------- conversations */

/* Start a conversation. */
void pg_conv_init(pg_conv *c, const pg_packet *tmpl, uint32_t isn_client, uint32_t isn_server,
                  int64_t ts_us)
{
    memset(c, 0, sizeof *c);
    c->pkt = *tmpl;
    c->next[0] = isn_client;
    c->next[1] = isn_server;
    c->ts_us = ts_us;
    c->step_us = 10;
}

/* Build one segment of the conversation and send it to the file/callback. */
int pg_conv_send_at(pg_conv *c, int from_server, uint32_t seq, uint8_t flags,
                    const void *data, size_t len)
{
    static uint8_t frame[PG_MAX_FRAME];
    pg_packet p = c->pkt;
    size_t n;
    int rc = 0;
    if (from_server) {
        p.src = c->pkt.dst;
        p.dst = c->pkt.src;
        p.sport = c->pkt.dport;
        p.dport = c->pkt.sport;
    }
    p.seq = seq;
    p.ack = c->next[!from_server];
    p.flags = flags;
    p.payload = data;
    p.len = len;
    n = pg_build(&p, frame, sizeof frame);
    if (n == 0)
        return -1;
    if (c->file != NULL)
        rc = pg_file_write(c->file, c->ts_us, frame, n);
    if (c->fn != NULL)
        c->fn(c->ctx, p.dlt, c->ts_us, frame, n);
    c->ts_us += c->step_us;
    return rc;
}

/* SYN, SYN-ACK, ACK. */
int pg_conv_handshake(pg_conv *c)
{
    int rc = pg_conv_send_at(c, 0, c->next[0], PG_SYN, NULL, 0);
    c->next[0]++;
    rc |= pg_conv_send_at(c, 1, c->next[1], PG_SYN | PG_ACK, NULL, 0);
    c->next[1]++;
    rc |= pg_conv_send_at(c, 0, c->next[0], PG_ACK, NULL, 0);
    return rc;
}

/* One data segment; the sender's sequence number advances. */
int pg_conv_send(pg_conv *c, int from_server, const void *data, size_t len)
{
    int side = from_server ? 1 : 0;
    int rc = pg_conv_send_at(c, from_server, c->next[side], PG_ACK | PG_PSH, data, len);
    c->next[side] += (uint32_t)len;
    return rc;
}

/* FIN from the client, ACK, FIN from the server, ACK. */
int pg_conv_close(pg_conv *c)
{
    int rc = pg_conv_send_at(c, 0, c->next[0], PG_FIN | PG_ACK, NULL, 0);
    c->next[0]++;
    rc |= pg_conv_send_at(c, 1, c->next[1], PG_ACK, NULL, 0);
    rc |= pg_conv_send_at(c, 1, c->next[1], PG_FIN | PG_ACK, NULL, 0);
    c->next[1]++;
    rc |= pg_conv_send_at(c, 0, c->next[0], PG_ACK, NULL, 0);
    return rc;
}
