/*
 * wire.c - the pcap file and the TCP of every connection, for ss-gen.
 *
 * pcap savefile (https://www.tcpdump.org/manpages/pcap-savefile.5.html): a
 * 24-byte global header (magic 0xa1b2c3d4, version 2.4, snaplen, link type)
 * and a 16-byte header before each record (seconds, microseconds, captured
 * length, original length), written little-endian. LINKTYPE_ETHERNET (1) puts
 * a 14-byte Ethernet II header before IPv4; LINKTYPE_RAW (101) starts at IPv4.
 * IPv4: RFC 791 (20-byte header, header checksum RFC 1071). TCP: RFC 9293.
 *
 * Every record is built straight into one output buffer that is written with
 * fwrite when nearly full: no allocation per packet.
 *
 * Impairments, each drawn per data segment, never two in a row:
 *   reorder     segment i+1 is written before segment i
 *   retransmit  segment i is written again after segment i+1
 *   loss        segment i is never written (a capture drop): only on lossy
 *               connections, only inside a bulk value, never the first or the
 *               last segment of a message, so the next segment reveals a hole
 *               that cannot fill: the analyzer must report exactly one gap.
 * The receiver ACKs every second segment and at the end of a reply, covering
 * what it received (a lost segment was received: the capture missed it).
 */
#include <stdlib.h>
#include <string.h>

#include "gen.h"

#define OUT_CAP (4u << 20)
#define SNAPLEN 262144u
#define MAX_MSS 65495u

enum { TH_FIN = 0x01, TH_SYN = 0x02, TH_RST = 0x04, TH_PSH = 0x08, TH_ACK = 0x10 };

/* Little-endian and big-endian stores. */
static inline void le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
}
static inline void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v;
}

/* Start the file: remember where to write and put the global header. */
void wire_init(wire *w, FILE *f, int linktype, uint32_t mss, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->f = f;
    w->linktype = linktype;
    w->mss = mss < 64 ? 64 : mss > MAX_MSS ? MAX_MSS : mss;
    w->out = malloc(OUT_CAP);
    if (!w->out)
        die("out of memory");
    w->out_cap = OUT_CAP;
    w->now_us = 1700000000ll * 1000000ll;
    w->us_per_byte = 1.0 / 1250.0;  /* 10 Gbit/s */
    rng_seed(&w->r, seed ^ 0x77697265ull);
    uint8_t *h = w->out;
    le32(h, 0xa1b2c3d4u);
    le16(h + 4, 2);
    le16(h + 6, 4);
    le32(h + 8, 0);     /* thiszone */
    le32(h + 12, 0);    /* sigfigs */
    le32(h + 16, SNAPLEN);
    le32(h + 20, (uint32_t)linktype);
    w->out_len = 24;
}

/* Hand the buffered records to the file. */
void wire_flush(wire *w)
{
    if (w->out_len && fwrite(w->out, 1, w->out_len, w->f) != w->out_len)
        die("write failed");
    w->file_bytes += w->out_len;
    w->out_len = 0;
}

/* Advance the capture clock. */
void wire_wait(wire *w, int64_t us)
{
    w->now_us += us;
}

/* One's complement sum of n bytes, added to sum (RFC 1071). */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
    while (n > 1) {
        sum += (uint32_t)(p[0] << 8 | p[1]);
        p += 2;
        n -= 2;
    }
    if (n)
        sum += (uint32_t)(p[0] << 8);
    return sum;
}

/* Fold a one's complement sum into 16 bits and complement it. */
static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* Write one TCP packet of connection c in direction dir. opt_mss: put an MSS
 * option (SYN, SYN-ACK). */
static void put_packet(wire *w, tconn *c, int dir, uint8_t flags, uint32_t seq,
                       const uint8_t *payload, size_t n, int opt_mss)
{
    size_t link = w->linktype == GEN_LINK_ETHERNET ? 14 : 0;
    size_t thl = opt_mss ? 24 : 20;
    size_t frame = link + 20 + thl + n;
    if (w->out_len + 16 + frame > w->out_cap)
        wire_flush(w);
    uint8_t *rec = w->out + w->out_len;
    uint32_t src = c->ip[dir], dst = c->ip[1 - dir];

    le32(rec, (uint32_t)(w->now_us / 1000000));
    le32(rec + 4, (uint32_t)(w->now_us % 1000000));
    le32(rec + 8, (uint32_t)frame);
    le32(rec + 12, (uint32_t)frame);
    uint8_t *p = rec + 16;
    if (link) {
        /* locally administered MACs that carry the IPv4 address */
        p[0] = 0x02; p[1] = 0; be32(p + 2, dst);
        p[6] = 0x02; p[7] = 0; be32(p + 8, src);
        be16(p + 12, 0x0800);
        p += 14;
    }
    uint8_t *ip = p;
    ip[0] = 0x45;
    ip[1] = 0;
    be16(ip + 2, (uint16_t)(20 + thl + n));
    be16(ip + 4, c->ipid[dir]++);
    be16(ip + 6, 0x4000);    /* don't fragment */
    ip[8] = 64;
    ip[9] = 6;
    be16(ip + 10, 0);
    be32(ip + 12, src);
    be32(ip + 16, dst);
    be16(ip + 10, csum_fold(csum_add(0, ip, 20)));

    uint8_t *th = ip + 20;
    be16(th, c->port[dir]);
    be16(th + 2, c->port[1 - dir]);
    be32(th + 4, seq);
    be32(th + 8, (flags & TH_ACK) ? c->seq[1 - dir] : 0);
    th[12] = (uint8_t)((thl / 4) << 4);
    th[13] = flags;
    be16(th + 14, 65535);
    be16(th + 16, 0);
    be16(th + 18, 0);
    if (opt_mss) {
        th[20] = 2;
        th[21] = 4;
        be16(th + 22, (uint16_t)w->mss);
    }
    if (n)
        memcpy(th + thl, payload, n);
    if (w->tcp_csum) {
        uint8_t pseudo[12];
        be32(pseudo, src);
        be32(pseudo + 4, dst);
        pseudo[8] = 0;
        pseudo[9] = 6;
        be16(pseudo + 10, (uint16_t)(thl + n));
        uint32_t sum = csum_add(0, pseudo, 12);
        sum = csum_add(sum, th, thl + n);
        be16(th + 16, csum_fold(sum));
    }
    w->out_len += 16 + frame;
    w->st.packets++;
    w->now_us += 1 + (int64_t)((double)frame * w->us_per_byte);
}

/* The three-way handshake; both streams then start at ISN + 1. */
void wire_connect(wire *w, tconn *c)
{
    if (c->open)
        return;
    c->seq[0] = (uint32_t)rng_next(&w->r);
    c->seq[1] = (uint32_t)rng_next(&w->r);
    c->ipid[0] = (uint16_t)rng_next(&w->r);
    c->ipid[1] = (uint16_t)rng_next(&w->r);
    put_packet(w, c, 0, TH_SYN, c->seq[0], NULL, 0, 1);
    c->seq[0]++;
    wire_wait(w, 10);
    put_packet(w, c, 1, TH_SYN | TH_ACK, c->seq[1], NULL, 0, 1);
    c->seq[1]++;
    wire_wait(w, 10);
    put_packet(w, c, 0, TH_ACK, c->seq[0], NULL, 0, 0);
    c->open = 1;
    w->st.connections++;
}

/* The close: client FIN, server FIN, client ACK. */
void wire_close(wire *w, tconn *c)
{
    if (!c->open)
        return;
    put_packet(w, c, 0, TH_FIN | TH_ACK, c->seq[0], NULL, 0, 0);
    c->seq[0]++;
    wire_wait(w, 20);
    put_packet(w, c, 1, TH_FIN | TH_ACK, c->seq[1], NULL, 0, 0);
    c->seq[1]++;
    wire_wait(w, 20);
    put_packet(w, c, 0, TH_ACK, c->seq[0], NULL, 0, 0);
    c->open = 0;
}

/* 1 if [from, to) lies inside one lossable range of m. */
static int lossable(const gmsg *m, size_t from, size_t to)
{
    for (size_t i = 0; i < m->n_lr; i++)
        if (from >= m->lr[i].from && to <= m->lr[i].to)
            return 1;
    return 0;
}

/* A pure ACK from the receiver of direction dir, covering `upto` bytes of a
 * message that starts at base. */
static void put_ack(wire *w, tconn *c, int dir, uint32_t base, size_t upto)
{
    uint32_t saved = c->seq[dir];
    c->seq[dir] = base + (uint32_t)upto;   /* what the receiver acknowledges */
    put_packet(w, c, 1 - dir, TH_ACK, c->seq[1 - dir], NULL, 0, 0);
    c->seq[dir] = saved;
}

/* Write segment i of a message (sequence base, MSS-sized pieces). */
static void put_segment(wire *w, tconn *c, int dir, const gmsg *m, uint32_t base, size_t i)
{
    size_t from = i * w->mss;
    size_t to = from + w->mss < m->b.len ? from + w->mss : m->b.len;
    uint32_t saved = c->seq[dir];
    put_packet(w, c, dir, TH_PSH | TH_ACK, base + (uint32_t)from, m->b.p + from, to - from, 0);
    c->seq[dir] = saved;
}

void wire_send(wire *w, tconn *c, int dir, const gmsg *m)
{
    if (m->b.len == 0)
        return;
    uint32_t base = c->seq[dir];
    size_t n = (m->b.len + w->mss - 1) / w->mss;
    size_t done = 0;          /* segments written (or lost) since the last ACK */
    size_t high = 0;          /* end offset of the furthest segment received */
    size_t i = 0;
    int calm = 0;             /* the previous step was an impairment */
    /* The receiver's clock: ACKs every second segment. */
#define SEG_END(k) ((k) * w->mss + w->mss < m->b.len ? (k) * w->mss + w->mss : m->b.len)
    while (i < n) {
        double u = calm ? 1.0 : rng_unit(&w->r);
        calm = 0;
        if (u < w->p_reorder && i + 1 < n) {
            put_segment(w, c, dir, m, base, i + 1);
            put_segment(w, c, dir, m, base, i);
            w->st.reordered++;
            high = SEG_END(i + 1);
            i += 2;
            done += 2;
            calm = 1;
        } else if ((u -= w->p_reorder) < w->p_retrans) {
            put_segment(w, c, dir, m, base, i);
            if (i + 1 < n) {
                put_segment(w, c, dir, m, base, i + 1);
                high = SEG_END(i + 1);
                done++;
            } else {
                high = SEG_END(i);
            }
            wire_wait(w, 200);   /* the retransmission timer */
            put_segment(w, c, dir, m, base, i);
            w->st.retransmitted++;
            i += i + 1 < n ? 2 : 1;
            done++;
            calm = 1;
        } else if ((u -= w->p_retrans) < w->p_loss && c->lossy && i > 0 && i + 1 < n &&
                   lossable(m, i * w->mss, SEG_END(i))) {
            w->st.lost++;
            w->st.lost_bytes += SEG_END(i) - i * w->mss;
            w->st.payload_bytes[dir] -= SEG_END(i) - i * w->mss;
            high = SEG_END(i);
            i++;
            done++;
            calm = 1;
        } else {
            put_segment(w, c, dir, m, base, i);
            high = SEG_END(i);
            i++;
            done++;
        }
        if (done >= 2) {
            put_ack(w, c, dir, base, high);
            done = 0;
        }
    }
#undef SEG_END
    c->seq[dir] = base + (uint32_t)m->b.len;
    w->st.payload_bytes[dir] += m->b.len;
    /* A reply is acknowledged at once (delayed ACK); a request's last
     * segments are acknowledged by the reply itself. */
    if (done && dir == 1)
        put_ack(w, c, dir, base, m->b.len);
}
