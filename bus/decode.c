/*
 * decode.c - one cluster-bus message, bytes to bus_msg.
 *
 * Layout and length rules: see bus.h. Every field is read through rd16/rd32/
 * rd64 at an offset already checked against the message length; the length
 * each type must have is the one the server itself checks before it trusts a
 * message (header plus the type's data, plus the gossip and extensions that
 * PING/PONG/MEET announce), so a message slotscope accepts is one a node
 * would have accepted.
 */
#include <string.h>

#include "bus/internal.h"

/* Offsets in the fixed header. */
enum {
    OFF_TOTLEN = 4, OFF_VER = 8, OFF_PORT = 10, OFF_TYPE = 12, OFF_COUNT = 14,
    OFF_CURRENT_EPOCH = 16, OFF_CONFIG_EPOCH = 24, OFF_OFFSET = 32,
    OFF_SENDER = 40, OFF_SLOTS = 80, OFF_SLAVEOF = 2128, OFF_MYIP = 2168,
    OFF_EXTENSIONS = 2214, OFF_PPORT = 2246, OFF_CPORT = 2248,
    OFF_FLAGS = 2250, OFF_STATE = 2252, OFF_MFLAGS = 2253
};

/* Extension types of PING/PONG/MEET. */
enum { EXT_HOSTNAME = 0, EXT_HUMAN_NODENAME = 1, EXT_FORGOTTEN_NODE = 2, EXT_SHARDID = 3 };
#define EXT_HEADER_LEN 8

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) << 32 | rd32(p + 4); }

/* Copy a fixed-size text field (NUL-padded or not) into out[cap], cut at the
 * first NUL. Returns 1 when the text had to be cut to fit. */
static int copy_text(char *out, size_t cap, const uint8_t *field, size_t n)
{
    const uint8_t *nul = memchr(field, 0, n);
    size_t len = nul ? (size_t)(nul - field) : n;
    int cut = len >= cap;
    if (cut)
        len = cap - 1;
    memcpy(out, field, len);
    out[len] = '\0';
    return cut;
}

/* A node name field: 40 bytes; all zeros is "none" (""). */
static void copy_name(char *out, const uint8_t *field)
{
    copy_text(out, BUS_NAMELEN + 1, field, BUS_NAMELEN);
}

const char *bus_type_name(unsigned type)
{
    static const char *const names[BUS_TYPE_COUNT] = {
        "ping", "pong", "meet", "fail", "publish", "auth-request", "auth-ack",
        "update", "mfstart", "module", "publishshard"};
    return type < BUS_TYPE_COUNT ? names[type] : "?";
}

unsigned bus_slots_count(const uint8_t *slots)
{
    unsigned n = 0;
    for (unsigned i = 0; i < BUS_SLOT_BYTES; i++)
        n += (unsigned)__builtin_popcount(slots[i]);
    return n;
}

int bus_signature(const uint8_t *data, size_t len)
{
    static const uint8_t sig[4] = {'R', 'C', 'm', 'b'};
    size_t n = len < 4 ? len : 4;
    if (memcmp(data, sig, n) != 0)
        return -1;
    if (len < OFF_PORT)
        return 0;
    uint32_t totlen = rd32(data + OFF_TOTLEN);
    if (rd16(data + OFF_VER) != 1 || totlen < BUS_HEADER_LEN || totlen > BUS_MAX_TOTLEN)
        return -1;
    return 1;
}

/* The fixed header into m (data holds at least BUS_HEADER_LEN bytes). */
static void decode_header(const uint8_t *d, bus_msg *m)
{
    memset(m, 0, sizeof *m);
    m->totlen = rd32(d + OFF_TOTLEN);
    m->ver = rd16(d + OFF_VER);
    m->port = rd16(d + OFF_PORT);
    m->type = rd16(d + OFF_TYPE);
    m->count = rd16(d + OFF_COUNT);
    m->current_epoch = rd64(d + OFF_CURRENT_EPOCH);
    m->config_epoch = rd64(d + OFF_CONFIG_EPOCH);
    m->offset = rd64(d + OFF_OFFSET);
    copy_name(m->sender, d + OFF_SENDER);
    m->slots = d + OFF_SLOTS;
    copy_name(m->master, d + OFF_SLAVEOF);
    copy_text(m->ip, sizeof m->ip, d + OFF_MYIP, BUS_IPLEN);
    m->pport = rd16(d + OFF_PPORT);
    m->cport = rd16(d + OFF_CPORT);
    m->flags = rd16(d + OFF_FLAGS);
    m->state = d[OFF_STATE];
    m->mflags = d[OFF_MFLAGS];
}

/* One extension's data (n bytes) into m. Unknown types are passed over, as
 * a node of an older version does. */
static void decode_ext(bus_msg *m, uint16_t type, const uint8_t *p, size_t n)
{
    switch (type) {
    case EXT_HOSTNAME:
        m->text_cut |= (uint8_t)copy_text(m->hostname, sizeof m->hostname, p, n);
        break;
    case EXT_HUMAN_NODENAME:
        m->text_cut |= (uint8_t)copy_text(m->human_name, sizeof m->human_name, p, n);
        break;
    case EXT_FORGOTTEN_NODE:
        if (n >= BUS_NAMELEN + 8) {
            if (m->forgotten == 0)
                copy_name(m->forgotten_first, p);
            m->forgotten++;
        }
        break;
    case EXT_SHARDID:
        if (n >= BUS_NAMELEN)
            copy_name(m->shard_id, p);
        break;
    default:
        break;
    }
}

/* PING/PONG/MEET: gossip then extensions must fill the message exactly. */
static int decode_ping(const uint8_t *d, size_t len, bus_msg *m)
{
    size_t pos = BUS_HEADER_LEN + (size_t)m->count * BUS_GOSSIP_LEN;
    if (pos > len)
        return -1;
    m->gossip = d + BUS_HEADER_LEN;
    if (!(m->mflags & BUS_MFLAG_EXT))
        return pos == len ? 0 : -1;
    unsigned n_ext = rd16(d + OFF_EXTENSIONS);
    for (unsigned i = 0; i < n_ext; i++) {
        if (len - pos < EXT_HEADER_LEN)
            return -1;
        uint32_t ext_len = rd32(d + pos);
        if (ext_len < EXT_HEADER_LEN || ext_len > len - pos)
            return -1;
        decode_ext(m, rd16(d + pos + 4), d + pos + EXT_HEADER_LEN, ext_len - EXT_HEADER_LEN);
        pos += ext_len;
    }
    return pos == len ? 0 : -1;
}

/* The type-specific data of a message of len bytes (header decoded). */
static int decode_data(const uint8_t *d, size_t len, bus_msg *m)
{
    const uint8_t *p = d + BUS_HEADER_LEN;
    size_t n = len - BUS_HEADER_LEN;
    switch (m->type) {
    case BUS_PING:
    case BUS_PONG:
    case BUS_MEET:
        return decode_ping(d, len, m);
    case BUS_FAIL:
        if (n != BUS_NAMELEN)
            return -1;
        copy_name(m->about, p);
        return 0;
    case BUS_UPDATE:
        if (n != 8 + BUS_NAMELEN + BUS_SLOT_BYTES)
            return -1;
        m->update_epoch = rd64(p);
        copy_name(m->about, p + 8);
        m->update_slots = p + 8 + BUS_NAMELEN;
        return 0;
    case BUS_PUBLISH:
    case BUS_PUBLISHSHARD:
        if (n < 8)
            return -1;
        m->channel_len = rd32(p);
        m->message_len = rd32(p + 4);
        return (uint64_t)m->channel_len + m->message_len == n - 8 ? 0 : -1;
    case BUS_MODULE:
        if (n < 13)
            return -1;
        m->module_id = rd64(p);
        m->module_len = rd32(p + 8);
        m->module_type = p[12];
        return m->module_len == n - 13 ? 0 : -1;
    case BUS_AUTH_REQUEST:
    case BUS_AUTH_ACK:
    case BUS_MFSTART:
        return n == 0 ? 0 : -1;
    default:
        return -1;
    }
}

int bus_decode(const uint8_t *data, size_t len, bus_msg *out)
{
    if (len < BUS_HEADER_LEN || bus_signature(data, len) != 1 ||
        rd32(data + OFF_TOTLEN) != len)
        return -1;
    decode_header(data, out);
    if (decode_data(data, len, out) != 0)
        return -1;
    out->whole = 1;
    return 0;
}

int bus_decode_header_only(const uint8_t *data, size_t len, bus_msg *out)
{
    if (len < BUS_HEADER_LEN || bus_signature(data, len) != 1)
        return -1;
    decode_header(data, out);
    return 0;
}

void bus_msg_gossip(const bus_msg *m, unsigned i, bus_gossip *out)
{
    memset(out, 0, sizeof *out);
    if (!m->gossip || i >= m->count)
        return;
    const uint8_t *g = m->gossip + (size_t)i * BUS_GOSSIP_LEN;
    copy_name(out->name, g);
    out->ping_sent = rd32(g + 40);
    out->pong_received = rd32(g + 44);
    copy_text(out->ip, sizeof out->ip, g + 48, BUS_IPLEN);
    out->port = rd16(g + 94);
    out->cport = rd16(g + 96);
    out->flags = rd16(g + 98);
    out->pport = rd16(g + 100);
}

void bus_stats_add(bus_stats *a, const bus_stats *b)
{
    a->messages += b->messages;
    for (int i = 0; i < BUS_TYPE_COUNT; i++)
        a->by_type[i] += b->by_type[i];
    a->unknown_type += b->unknown_type;
    a->bad += b->bad;
    a->header_only += b->header_only;
    a->resyncs += b->resyncs;
    a->skipped_bytes += b->skipped_bytes;
    a->text_cut += b->text_cut;
}
