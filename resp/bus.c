/*
 * bus.c - connections that carry the cluster bus, not RESP.
 *
 * A node's bus port (node port + 10000, the `@cport` of CLUSTER NODES)
 * speaks binary messages that begin with "RCmb". resp/ recognises such a
 * connection by that signature (not by its port: ports are configurable)
 * at the start of either stream, or, for a connection picked up mid-stream,
 * at a message that frames the rest of its first chunk, and from then on
 * hands both of its streams to bus/ instead of the RESP decoders. Each
 * decoded message goes to the sink's bus_message; the streams' counters join
 * the connection's at its close.
 */
#include <stdlib.h>
#include <string.h>

#include "resp/resp_internal.h"

/* One direction's stream and the way back to its connection. */
typedef struct rc_bus_dir {
    rc_conn *c;
    int dir;
    bus_stream *s;
} rc_bus_dir;

struct rc_bus {
    rc_bus_dir d[2];
    uint64_t bytes, gaps;
};

/* Bytes of a header that bus_signature and the type need. */
#define SNIFF_PREFIX 14

/* Does a plausible message start at p (n bytes readable, n >= SNIFF_PREFIX)?
 * Its totlen, else 0. */
static uint32_t plausible_at(const uint8_t *p, size_t n)
{
    if (bus_signature(p, n) != 1 || (p[12] << 8 | p[13]) >= BUS_TYPE_COUNT)
        return 0;
    return (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
}

int rc_bus_sniff(const uint8_t *p, size_t n, int mid)
{
    if (n >= 4 && memcmp(p, "RCmb", 4) == 0)
        return 1;
    if (!mid || n < BUS_HEADER_LEN)
        return 0;
    /* Mid-stream: a message must start in the chunk and frame what follows
     * it up to the chunk's end (RESP payloads seldom hold "RCmb" at all, and
     * never a run of framed bus messages by chance). */
    for (size_t i = 0; i + BUS_HEADER_LEN <= n;) {
        const uint8_t *r = memchr(p + i, 'R', n - BUS_HEADER_LEN + 1 - i);
        if (!r)
            return 0;
        size_t at = (size_t)(r - p);
        uint32_t len = plausible_at(r, n - at);
        if (len) {
            size_t off = at;
            while (len && off + len < n && n - (off + len) >= SNIFF_PREFIX) {
                off += len;
                len = plausible_at(p + off, n - off);
            }
            if (len && (off + len >= n || p[off + len] == 'R'))
                return 1; /* the last one runs past the chunk, or the next
                             begins in its last few bytes */
        }
        i = at + 1;
    }
    return 0;
}

/* bus_stream's callback: hand the message to the sink. */
static void on_message(void *ctx, const bus_msg *m, int64_t ts_us)
{
    rc_bus_dir *d = ctx;
    resp_pipeline *rp = d->c->rp;
    if (rp->sink.bus_message)
        rp->sink.bus_message(rp->sink.ctx, d->c->cc, d->dir, m, ts_us, d->c->frame);
}

struct rc_bus *rc_bus_new(rc_conn *c)
{
    struct rc_bus *b = calloc(1, sizeof *b);
    size_t keep = c->rp->cfg.max_bus_message;
    if (!b)
        return NULL;
    for (int i = 0; i < 2; i++) {
        b->d[i].c = c;
        b->d[i].dir = i;
        b->d[i].s = bus_stream_new(keep, on_message, &b->d[i]);
        if (!b->d[i].s) {
            bus_stream_free(b->d[0].s);
            free(b);
            return NULL;
        }
    }
    c->bus = b;
    return b;
}

void rc_bus_feed(rc_conn *c, int dir, const uint8_t *p, size_t n, int64_t ts_us)
{
    if (!c->bus)
        return;
    c->bus->bytes += n;
    bus_stream_feed(c->bus->d[dir & 1].s, p, n, ts_us);
}

void rc_bus_gap(rc_conn *c, int dir)
{
    if (!c->bus)
        return;
    c->bus->gaps++;
    bus_stream_gap(c->bus->d[dir & 1].s);
}

void rc_bus_close(resp_pipeline *rp, rc_conn *c)
{
    if (!c->bus)
        return;
    for (int i = 0; i < 2; i++) {
        const bus_stats *s = bus_stream_stats(c->bus->d[i].s);
        c->st.bus_messages += s->messages;
        c->st.bus_bad += s->bad + s->unknown_type;
        c->st.bus_resyncs += s->resyncs;
        c->st.bus_skipped_bytes += s->skipped_bytes;
        bus_stats_add(&rp->closed.bus, s);
    }
    c->st.bus_bytes += c->bus->bytes;
    c->st.bus_gaps += c->bus->gaps;
    c->bus->bytes = c->bus->gaps = 0;
    rc_bus_free(c);
}

void rc_bus_stats_live(const rc_conn *c, bus_stats *st)
{
    if (!c->bus)
        return;
    for (int i = 0; i < 2; i++)
        bus_stats_add(st, bus_stream_stats(c->bus->d[i].s));
}

void rc_bus_free(rc_conn *c)
{
    if (!c->bus)
        return;
    for (int i = 0; i < 2; i++)
        bus_stream_free(c->bus->d[i].s);
    free(c->bus);
    c->bus = NULL;
}
