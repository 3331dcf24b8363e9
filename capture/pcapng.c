/*
 * pcapng.c - a pcapng reader for what libpcap refuses: interfaces of
 * different link types in one file.
 *
 * libpcap 1.10 reads pcapng with one link type per file and stops at an
 * interface whose type differs from the first one's ("an interface has a type
 * N different from the type of the first interface"), although the format
 * gives every interface its own (tshark reads such files whole). source.c
 * then reopens the file with this reader, skips the records libpcap already
 * gave, and goes on; every record carries its interface's link type
 * (cap_record.linktype), so the tracker decodes each by its own.
 *
 * Format: draft-ietf-opsawg-pcapng (https://www.ietf.org/archive/id/
 * draft-ietf-opsawg-pcapng-03.html). Blocks: type (4 bytes), total length (4,
 * a multiple of 4, at least 12), body, the total length again; byte order set
 * by each Section Header Block (type 0x0A0D0D0A, byte-order magic 0x1A2B3C4D),
 * which also starts a new list of interfaces. Read here: Interface
 * Description (1: link type, snap length; options if_tsresol (9) and
 * if_tsoffset (14)), Enhanced Packet (6), Simple Packet (3, interface 0, no
 * time) and the obsolete Packet block (2). Other blocks are skipped.
 * Timestamps are 64-bit counts of the interface's unit (10^-6 s unless
 * if_tsresol says 10^-n or 2^-n), plus if_tsoffset seconds.
 *
 * Bounds: a block of at most 16 MiB, a captured length of at most
 * CAP_PCAPFILE_MAX_CAPLEN and inside its block, at most 1024 interfaces per
 * section, a packet naming an interface that is not described: each is an
 * error with a one-line text, like libpcap's.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/internal.h"

#define BT_SHB 0x0A0D0D0Au
#define BT_IDB 1u
#define BT_PB 2u
#define BT_SPB 3u
#define BT_ISB 5u
#define BT_EPB 6u
#define BYTE_ORDER_MAGIC 0x1A2B3C4Du
#define MAX_BLOCK (16u << 20)
#define MAX_IFACES 1024u

/* x with its bytes in the other order. */
static uint32_t swap32(uint32_t x)
{
    return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

/* A field in a byte order: swapped, the other one than this machine's. */
static uint32_t rd32(int swapped, const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return swapped ? swap32(v) : v;
}

static uint16_t rd16(int swapped, const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return swapped ? (uint16_t)((v >> 8) | (v << 8)) : v;
}

static uint32_t get32(const cap_pcapng *g, const uint8_t *p)
{
    return rd32(g->swapped, p);
}

static uint16_t get16(const cap_pcapng *g, const uint8_t *p)
{
    return rd16(g->swapped, p);
}

static int fail(cap_pcapng *g, const char *what, unsigned long long n)
{
    snprintf(g->errbuf, sizeof g->errbuf, "pcapng: %s %llu", what, n);
    return -1;
}

/* LINKTYPE_ to DLT_: the same number but for LINKTYPE_RAW (101). */
static int dlt_of(uint32_t linktype)
{
    return linktype == 101 ? 12 /* DLT_RAW */ : (int)linktype;
}

int cap_pcapng_open(cap_pcapng *g, FILE *fp)
{
    memset(g, 0, sizeof *g);
    g->fp = fp;
    return 0;
}

void cap_pcapng_close(cap_pcapng *g)
{
    if (g->fp)
        fclose(g->fp);
    free(g->block);
    free(g->ifaces);
    memset(g, 0, sizeof *g);
}

/* Read the next block into g->block (whole, both length fields checked).
 * 1, 0 at a clean end of the file, -1 on an error. */
static int read_block(cap_pcapng *g, uint32_t *type, uint32_t *len)
{
    uint8_t head[12];
    size_t got = fread(head, 1, 8, g->fp);
    if (got == 0 && feof(g->fp))
        return 0;
    if (got < 8)
        return fail(g, "truncated block header after bytes", g->offset + got);
    uint32_t raw_type;
    memcpy(&raw_type, head, 4);
    if (raw_type == BT_SHB) { /* the magic after the length sets the order */
        if (fread(head + 8, 1, 4, g->fp) != 4)
            return fail(g, "truncated section header at", g->offset);
        uint32_t magic;
        memcpy(&magic, head + 8, 4);
        if (magic == BYTE_ORDER_MAGIC)
            g->swapped = 0;
        else if (swap32(magic) == BYTE_ORDER_MAGIC)
            g->swapped = 1;
        else
            return fail(g, "bad byte-order magic at", g->offset);
        got = 12;
    }
    *type = get32(g, head);
    *len = get32(g, head + 4);
    if (*len < 12 || *len % 4 != 0 || *len > MAX_BLOCK || *len < got)
        return fail(g, "bad block length", *len);
    if (*len > g->block_cap) {
        uint8_t *b = realloc(g->block, *len);
        if (!b)
            return fail(g, "out of memory for a block of", *len);
        g->block = b;
        g->block_cap = *len;
    }
    memcpy(g->block, head, got);
    if (fread(g->block + got, 1, *len - got, g->fp) != *len - got)
        return fail(g, "truncated block at", g->offset);
    if (get32(g, g->block + *len - 4) != *len)
        return fail(g, "block lengths differ at", g->offset);
    g->offset += *len;
    return 1;
}

/* An Interface Description Block: its link type, snap length and time unit. */
static int add_iface(cap_pcapng *g, const uint8_t *b, uint32_t len)
{
    if (len < 20)
        return fail(g, "short interface block of", len);
    if (g->n_ifaces >= MAX_IFACES)
        return fail(g, "more interfaces than", MAX_IFACES);
    if (g->n_ifaces == g->ifaces_cap) {
        uint32_t cap = g->ifaces_cap ? 2 * g->ifaces_cap : 4;
        cap_pcapng_iface *n = realloc(g->ifaces, cap * sizeof *n);
        if (!n)
            return fail(g, "out of memory for interfaces:", cap);
        g->ifaces = n;
        g->ifaces_cap = cap;
    }
    cap_pcapng_iface *f = &g->ifaces[g->n_ifaces++];
    f->dlt = dlt_of(get16(g, b + 8));
    f->snaplen = get32(g, b + 12);
    f->units_per_s = 1000000;
    f->offset_s = 0;
    /* options: code (2), length (2), value padded to 4; end at code 0 */
    for (uint32_t o = 16; o + 4 <= len - 4;) {
        uint16_t code = get16(g, b + o), olen = get16(g, b + o + 2);
        uint32_t next = o + 4 + ((olen + 3u) & ~3u);
        if (code == 0 || next > len - 4)
            break;
        if (code == 9 && olen >= 1) { /* if_tsresol */
            uint8_t r = b[o + 4];
            unsigned e = r & 0x7f;
            uint64_t ups = 1;
            if (r & 0x80) {
                if (e > 63)
                    return fail(g, "bad if_tsresol", r);
                ups = (uint64_t)1 << e;
            } else {
                if (e > 19)
                    return fail(g, "bad if_tsresol", r);
                while (e--)
                    ups *= 10;
            }
            f->units_per_s = ups;
        } else if (code == 14 && olen >= 8) { /* if_tsoffset, seconds */
            uint32_t lo = get32(g, b + o + 4), hi = get32(g, b + o + 8);
            if (g->swapped) { /* a 64-bit field: the halves swap too */
                uint32_t t = lo;
                lo = hi;
                hi = t;
            }
            f->offset_s = (int64_t)(((uint64_t)hi << 32) | lo);
        }
        o = next;
    }
    return 0;
}

/* Seconds and microseconds of a timestamp of interface f (saturating). */
static void split_time(const cap_pcapng_iface *f, uint64_t ts, int64_t *sec, int64_t *usec)
{
    uint64_t s = ts / f->units_per_s, frac = ts % f->units_per_s;
    *usec = (int64_t)((unsigned __int128)frac * 1000000u / f->units_per_s);
    int64_t off = f->offset_s;
    if (s > (uint64_t)INT64_MAX / 2)
        s = (uint64_t)INT64_MAX / 2;
    if (off > INT64_MAX / 4)
        off = INT64_MAX / 4;
    else if (off < -(INT64_MAX / 4))
        off = -(INT64_MAX / 4);
    *sec = (int64_t)s + off;
}

/* A packet of interface iface, caplen bytes at data (inside the block). */
static int packet(cap_pcapng *g, cap_pcapng_rec *rec, uint32_t iface, uint64_t ts,
                  const uint8_t *data, uint32_t caplen, uint32_t wirelen, uint32_t room)
{
    if (iface >= g->n_ifaces)
        return fail(g, "packet of an undescribed interface", iface);
    if (caplen > CAP_PCAPFILE_MAX_CAPLEN)
        return fail(g, "invalid packet capture length", caplen);
    if (caplen > room)
        return fail(g, "packet longer than its block:", caplen);
    const cap_pcapng_iface *f = &g->ifaces[iface];
    rec->dlt = f->dlt;
    split_time(f, ts, &rec->sec, &rec->usec);
    rec->data = data;
    rec->caplen = caplen;
    rec->len = wirelen;
    return 1;
}

int cap_pcapng_next(cap_pcapng *g, cap_pcapng_rec *rec)
{
    uint32_t type, len;
    int r;
    while ((r = read_block(g, &type, &len)) == 1) {
        const uint8_t *b = g->block;
        switch (type) {
        case BT_SHB:
            if (len < 28)
                return fail(g, "short section header of", len);
            g->n_ifaces = 0; /* a new section: new interfaces */
            break;
        case BT_IDB:
            if (add_iface(g, b, len) != 0)
                return -1;
            break;
        case BT_EPB:
            if (len < 32)
                return fail(g, "short packet block of", len);
            return packet(g, rec, get32(g, b + 8),
                          ((uint64_t)get32(g, b + 12) << 32) | get32(g, b + 16), b + 28,
                          get32(g, b + 20), get32(g, b + 24), len - 32);
        case BT_PB:
            if (len < 32)
                return fail(g, "short packet block of", len);
            return packet(g, rec, get16(g, b + 8),
                          ((uint64_t)get32(g, b + 12) << 32) | get32(g, b + 16), b + 28,
                          get32(g, b + 20), get32(g, b + 24), len - 32);
        case BT_SPB: {
            if (len < 16)
                return fail(g, "short packet block of", len);
            if (g->n_ifaces == 0)
                return fail(g, "packet of an undescribed interface", 0);
            uint32_t wire = get32(g, b + 8), cap = wire, snap = g->ifaces[0].snaplen;
            if (snap && cap > snap)
                cap = snap;
            if (cap > len - 16)
                cap = len - 16;
            return packet(g, rec, 0, 0, b + 12, cap, wire, len - 16);
        }
        default:
            break; /* name resolution, statistics, custom...: nothing to read */
        }
    }
    return r;
}

/* ---------------------------------------------------------------- drops at the end */

/* Statistics blocks read back from the end of a file at most, and the
 * largest one read. */
#define TAIL_BLOCKS 64u
#define TAIL_BLOCK_MAX 65536u

/* One Interface Statistics Block (b, len bytes): its interface and the drops
 * it records (isb_ifdrop, code 5, else isb_osdrop, code 7), or 0 with none. */
static int isb_drops(int swapped, const uint8_t *b, uint32_t len, uint32_t *iface,
                     uint64_t *drops)
{
    int found = 0;
    if (len < 24)
        return 0;
    *iface = rd32(swapped, b + 8);
    for (uint32_t o = 20; o + 4 <= len - 4;) {
        uint16_t code = rd16(swapped, b + o), olen = rd16(swapped, b + o + 2);
        uint32_t next = o + 4 + ((olen + 3u) & ~3u);
        if (code == 0 || next > len - 4)
            break;
        if ((code == 5 || code == 7) && olen == 8) {
            uint64_t v; /* a 64-bit count in the section's byte order */
            memcpy(&v, b + o + 4, sizeof v);
            if (swapped)
                v = ((uint64_t)swap32((uint32_t)v) << 32) | swap32((uint32_t)(v >> 32));
            if (code == 5) {
                *drops = v;
                found = 1;
            } else if (!found) {
                *drops = v;
                found = 2; /* isb_osdrop, unless an isb_ifdrop comes */
            }
        }
        o = next;
    }
    return found != 0;
}

int cap_pcapng_tail_drops(int fd, uint64_t size, uint64_t *drops)
{
    cap_pcapng g;
    uint8_t head[12], *b = NULL;
    uint64_t seen = 0; /* interfaces 0..63 whose latest block was read */
    int found = 0;
    memset(&g, 0, sizeof g);
    *drops = 0;
    if (size < 28 || pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head)
        return 0;
    uint32_t magic, bom;
    memcpy(&magic, head, 4);
    memcpy(&bom, head + 8, 4);
    if (magic != BT_SHB || (bom != BYTE_ORDER_MAGIC && bom != swap32(BYTE_ORDER_MAGIC)))
        return 0;
    g.swapped = bom != BYTE_ORDER_MAGIC;
    b = malloc(TAIL_BLOCK_MAX);
    if (b == NULL)
        return 0;
    uint64_t end = size;
    for (unsigned n = 0; n < TAIL_BLOCKS && end >= 12; n++) {
        uint8_t t[4];
        if (pread(fd, t, 4, (off_t)(end - 4)) != 4)
            break;
        uint32_t len = get32(&g, t);
        if (len < 12 || (len & 3u) != 0 || len > end)
            break;
        uint64_t at = end - len;
        uint8_t h[4];
        if (pread(fd, h, 4, (off_t)at) != 4)
            break;
        uint32_t type = get32(&g, h);
        if (type != BT_ISB)
            break; /* packets, or the section's start: the statistics come last */
        uint32_t iface;
        uint64_t d = 0;
        if (len <= TAIL_BLOCK_MAX && pread(fd, b, len, (off_t)at) == (ssize_t)len &&
            isb_drops(g.swapped, b, len, &iface, &d) && iface < 64 && !((seen >> iface) & 1u)) {
            seen |= 1ull << iface; /* read from the end: the latest counts */
            *drops += d;
            found = 1;
        }
        end = at;
    }
    free(b);
    return found;
}

/* ---------------------------------------------------------------- drops as read */

enum {
    NG_WALK_START,  /* nothing seen: the first block must be a section header */
    NG_WALK_HEAD,   /* gathering a block's first 12 bytes */
    NG_WALK_BODY,   /* inside a block, past its first 12 bytes */
    NG_WALK_OFF     /* not pcapng, or its structure broke: walking stopped */
};

void cap_ng_walk_init(cap_ng_walk *w)
{
    memset(w, 0, offsetof(cap_ng_walk, isb)); /* the buffer is written before read */
    w->state = NG_WALK_START;
}

/* The counts of the section that ends go to earlier. */
static void walk_section_end(cap_ng_walk *w)
{
    for (unsigned i = 0; i < 64; i++)
        if ((w->seen >> i) & 1u)
            w->earlier += w->latest[i];
    w->seen = 0;
}

/* A block's first 12 bytes are in head: its type and length, and a section
 * header's byte order. 0, or -1 when they cannot be right. */
static int walk_block_start(cap_ng_walk *w)
{
    uint32_t raw;
    memcpy(&raw, w->head, 4);
    if (raw == BT_SHB) {
        uint32_t bom;
        memcpy(&bom, w->head + 8, 4);
        if (bom != BYTE_ORDER_MAGIC && bom != swap32(BYTE_ORDER_MAGIC))
            return -1;
        w->swapped = bom != BYTE_ORDER_MAGIC;
        walk_section_end(w);
    } else if (w->state == NG_WALK_START) {
        return -1;
    }
    w->type = rd32(w->swapped, w->head);
    w->len = rd32(w->swapped, w->head + 4);
    if (w->len < 12 || (w->len & 3u) != 0 || w->len > MAX_BLOCK)
        return -1;
    w->pos = 12;
    if (w->type == BT_ISB && w->len <= CAP_NG_WALK_ISB)
        memcpy(w->isb, w->head, 12);
    return 0;
}

/* A whole statistics block is in isb: its count is its interface's latest. */
static void walk_isb_done(cap_ng_walk *w)
{
    uint32_t iface;
    uint64_t d = 0;
    if (isb_drops(w->swapped, w->isb, w->len, &iface, &d) && iface < 64 &&
        rd32(w->swapped, w->isb + w->len - 4) == w->len) {
        w->latest[iface] = d;
        w->seen |= 1ull << iface;
        w->found = 1;
    }
}

void cap_ng_walk_feed(cap_ng_walk *w, const uint8_t *p, size_t n)
{
    while (n > 0 && w->state != NG_WALK_OFF) {
        if (w->state != NG_WALK_BODY) { /* START or HEAD */
            size_t k = 12 - w->head_got < n ? 12 - w->head_got : n;
            memcpy(w->head + w->head_got, p, k);
            w->head_got += (uint32_t)k;
            p += k;
            n -= k;
            if (w->head_got < 12)
                break;
            w->head_got = 0;
            if (walk_block_start(w) != 0) {
                w->state = NG_WALK_OFF;
                break;
            }
            w->state = NG_WALK_BODY;
            continue;
        }
        size_t k = w->len - w->pos < n ? w->len - w->pos : n;
        if (w->type == BT_ISB && w->len <= CAP_NG_WALK_ISB)
            memcpy(w->isb + w->pos, p, k);
        w->pos += (uint32_t)k;
        p += k;
        n -= k;
        if (w->pos == w->len) {
            if (w->type == BT_ISB && w->len <= CAP_NG_WALK_ISB)
                walk_isb_done(w);
            w->state = NG_WALK_HEAD;
        }
    }
}

int cap_ng_walk_drops(const cap_ng_walk *w, uint64_t *drops)
{
    uint64_t d = w->earlier;
    for (unsigned i = 0; i < 64; i++)
        if ((w->seen >> i) & 1u)
            d += w->latest[i];
    *drops = w->found ? d : 0;
    return w->found;
}
