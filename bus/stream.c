/*
 * stream.c - framing cluster-bus messages out of one direction's byte stream.
 *
 * A message's first 8 bytes give its length (totlen), so framing needs no
 * scan: a whole message inside the chunk is decoded where it lies, a message
 * split over chunks is gathered in the stream's buffer (at most keep_max
 * bytes, or only its header when it is longer; the rest is skipped by
 * count). Framing is lost at a capture gap or at a length no node would
 * send; the stream then looks for the next "RCmb" that starts a plausible
 * header (version 1, a known type, a length in range), across chunk borders
 * too, and counts the bytes it passed over.
 */
#include <stdlib.h>
#include <string.h>

#include "bus/internal.h"

/* Bytes of a header needed to judge it: signature, totlen, ver, port, type. */
#define PREFIX_LEN 14
/* The smallest keep_max used: the header plus a few dozen gossip entries. */
#define KEEP_MIN (BUS_HEADER_LEN + 4096)

struct bus_stream {
    bus_msg_fn fn;
    void *ctx;
    size_t keep_max;    /* longest message decoded whole */
    uint8_t *buf;       /* a message split over chunks (cap bytes) */
    size_t cap, have;
    size_t want;        /* bytes of the current message to gather in buf */
    uint32_t totlen;    /* the current message's length (0: not known yet) */
    uint64_t skip;      /* bytes of a long message still to pass over */
    int synced;         /* 0: looking for "RCmb" */
    uint8_t carry[PREFIX_LEN - 1]; /* while looking: the last bytes of the
                                      previous chunk, a header may start there */
    size_t n_carry;
    bus_msg msg;        /* the message handed to fn */
    bus_stats st;
};

bus_stream *bus_stream_new(size_t keep_max, bus_msg_fn fn, void *ctx)
{
    bus_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fn = fn;
    s->ctx = ctx;
    s->keep_max = keep_max < KEEP_MIN ? KEEP_MIN : keep_max;
    s->synced = 1; /* a stream starts at a message until a gap says otherwise */
    return s;
}

void bus_stream_free(bus_stream *s)
{
    if (!s)
        return;
    free(s->buf);
    free(s);
}

const bus_stats *bus_stream_stats(const bus_stream *s) { return &s->st; }

/* Would a message start at p (PREFIX_LEN bytes readable)? */
static int plausible(const uint8_t *p)
{
    return bus_signature(p, PREFIX_LEN) == 1 && (p[12] << 8 | p[13]) < BUS_TYPE_COUNT;
}

/* Framing is lost: look for the next message from here on. */
static void lose_sync(bus_stream *s)
{
    s->synced = 0;
    s->have = 0;
    s->want = 0;
    s->totlen = 0;
    s->skip = 0;
    s->n_carry = 0;
}

/* Hand a decoded message to the callback and count it. */
static void deliver(bus_stream *s, int64_t ts_us)
{
    s->st.messages++;
    s->st.by_type[s->msg.type]++;
    s->st.text_cut += s->msg.text_cut;
    if (s->fn)
        s->fn(s->ctx, &s->msg, ts_us);
}

/* A whole message of totlen bytes at d (or, when longer than keep_max, its
 * header): decode, count, deliver. */
static void finish_message(bus_stream *s, const uint8_t *d, size_t n, int64_t ts_us)
{
    uint16_t type = (uint16_t)(d[12] << 8 | d[13]);
    if (type >= BUS_TYPE_COUNT) {
        s->st.unknown_type++;
        return;
    }
    if (n < s->totlen) {
        if (bus_decode_header_only(d, n, &s->msg) != 0) {
            s->st.bad++;
            return;
        }
        s->st.header_only++;
    } else if (bus_decode(d, n, &s->msg) != 0) {
        s->st.bad++;
        return;
    }
    s->msg.raw = d;
    s->msg.raw_len = (uint32_t)n;
    deliver(s, ts_us);
}

/* Start a message whose first PREFIX_LEN bytes are at p: how many bytes of
 * it to gather, and how many to skip after them. -1 when the length is not
 * one a node sends (framing lost). */
static int begin_message(bus_stream *s, const uint8_t *p)
{
    if (bus_signature(p, PREFIX_LEN) != 1)
        return -1;
    s->totlen = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
    s->want = s->totlen <= s->keep_max ? s->totlen : BUS_HEADER_LEN;
    s->skip = s->totlen - s->want;
    return 0;
}

/* Make room for `want` bytes in the buffer (grown once per size, never per
 * packet). 0, or -1 on out of memory (the message is then skipped). */
static int reserve(bus_stream *s)
{
    if (s->cap >= s->want)
        return 0;
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->want)
        cap *= 2;
    if (cap > s->keep_max)
        cap = s->keep_max;
    uint8_t *b = realloc(s->buf, cap);
    if (!b)
        return -1;
    s->buf = b;
    s->cap = cap;
    return 0;
}

/* Gather bytes of a split message. Returns the bytes of data used. */
static size_t gather(bus_stream *s, const uint8_t *data, size_t len, int64_t ts_us)
{
    size_t used = 0;
    if (s->have < PREFIX_LEN) { /* its length is not known yet */
        size_t n = PREFIX_LEN - s->have < len ? PREFIX_LEN - s->have : len;
        if (s->cap < PREFIX_LEN) {
            s->want = PREFIX_LEN;
            if (reserve(s) != 0) {
                lose_sync(s);
                return len;
            }
        }
        memcpy(s->buf + s->have, data, n);
        s->have += n;
        used = n;
        if (s->have < PREFIX_LEN)
            return used;
        if (begin_message(s, s->buf) != 0 || reserve(s) != 0) {
            /* rescan what was gathered, after its first byte */
            size_t keep = s->have - 1;
            s->st.skipped_bytes += 1;
            lose_sync(s);
            memcpy(s->carry, s->buf + 1, keep);
            s->n_carry = keep;
            return used;
        }
    }
    size_t n = s->want - s->have < len - used ? s->want - s->have : len - used;
    memcpy(s->buf + s->have, data + used, n);
    s->have += n;
    used += n;
    if (s->have == s->want) {
        finish_message(s, s->buf, s->have, ts_us);
        s->have = 0;
    }
    return used;
}

/* Look for a message start in the carried bytes followed by data. Returns
 * the bytes of data used: 0 when a start was found in the carry (its bytes
 * are then gathered, the stream synced) or when none can start there; all of
 * data when it was too short to judge the carry and was carried along. */
static size_t search_carry(bus_stream *s, const uint8_t *data, size_t len)
{
    uint8_t tmp[2 * PREFIX_LEN];
    size_t extra = len < PREFIX_LEN ? len : PREFIX_LEN;
    size_t total = s->n_carry + extra;
    memcpy(tmp, s->carry, s->n_carry);
    memcpy(tmp + s->n_carry, data, extra);
    size_t i = 0;
    for (; i < s->n_carry && i + PREFIX_LEN <= total; i++) {
        if (tmp[i] != 'R' || !plausible(tmp + i))
            continue;
        s->st.skipped_bytes += i;
        s->st.resyncs++;
        s->synced = 1;
        s->want = PREFIX_LEN;
        s->n_carry = 0;
        if (reserve(s) != 0) {
            lose_sync(s);
            return len;
        }
        s->have = total - extra - i;
        memcpy(s->buf, tmp + i, s->have);
        return 0;
    }
    if (i < s->n_carry) { /* data too short to judge the rest: carry on */
        s->st.skipped_bytes += i;
        memmove(s->carry, tmp + i, total - i);
        s->n_carry = total - i;
        return len;
    }
    s->st.skipped_bytes += s->n_carry;
    s->n_carry = 0;
    return 0;
}

/* Look for a message start in data (nothing carried). Returns the bytes
 * passed over; when no start is found, the last bytes (where one may still
 * begin) are carried to the next chunk. */
static size_t search(bus_stream *s, const uint8_t *data, size_t len)
{
    size_t i = 0;
    while (len >= PREFIX_LEN && i <= len - PREFIX_LEN) {
        const uint8_t *r = memchr(data + i, 'R', len - PREFIX_LEN + 1 - i);
        if (!r)
            break;
        i = (size_t)(r - data);
        if (plausible(r)) {
            s->st.skipped_bytes += i;
            s->st.resyncs++;
            s->synced = 1;
            return i;
        }
        i++;
    }
    size_t tail = len < PREFIX_LEN - 1 ? len : PREFIX_LEN - 1;
    s->st.skipped_bytes += len - tail;
    memcpy(s->carry, data + len - tail, tail);
    s->n_carry = tail;
    return len;
}

void bus_stream_feed(bus_stream *s, const uint8_t *data, size_t len, int64_t ts_us)
{
    while (len > 0) {
        size_t used;
        if (s->have > 0) { /* a message's kept part, split over chunks */
            used = gather(s, data, len, ts_us);
        } else if (s->skip > 0) { /* the rest of a long message */
            used = s->skip < len ? (size_t)s->skip : len;
            s->skip -= used;
        } else if (!s->synced) {
            used = s->n_carry ? search_carry(s, data, len) : search(s, data, len);
        } else if (len < PREFIX_LEN) {
            used = gather(s, data, len, ts_us);
        } else if (begin_message(s, data) != 0) {
            s->st.skipped_bytes += 1; /* not a message: rescan after this byte */
            lose_sync(s);
            used = 1;
        } else if (s->want <= len) { /* whole (or its kept part) in the chunk */
            finish_message(s, data, s->want, ts_us);
            used = s->want;
        } else {
            used = gather(s, data, len, ts_us);
        }
        data += used;
        len -= used;
    }
}

void bus_stream_gap(bus_stream *s)
{
    lose_sync(s);
}
