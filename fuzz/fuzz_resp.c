/*
 * fuzz_resp.c - fuzz target: the RESP decoder in both directions, with pairing.
 *
 * The input is a conversation on one connection: the bytes a client sent and
 * the bytes the server answered. They are fed to resp_on_capture_event as DATA
 * events cut at split points the input itself chooses, the two directions
 * interleaved, with optional gaps (bytes skipped, as a lost segment would),
 * a reconnection half-way and timestamps that step back. Paired commands go
 * through the checking sinks of fuzz_common.c into analysis/.
 *
 * Input layout (little-endian):
 *   byte 0      flags
 *                 bit 0  clients by connection (analysis variant)
 *                 bit 1  redact keys (analysis variant)
 *                 bit 2  gaps: now and then skip bytes of a direction and send
 *                        a GAP event (of their length, or 0 = unknown)
 *                 bit 3  reconnect once: CLOSE, then OPEN a new connection that
 *                        gets the rest of both streams (picked up mid-stream)
 *                 bit 4  timestamps sometimes step backwards
 *                 bit 5  end with a RST instead of a FIN
 *                 bit 6-7 chunk size: 1..4, 1..64, 1..1024 bytes, or whole
 *   byte 1-2    length of the request stream (cut to what follows)
 *   byte 3-6    seed of the split points
 *   then        the request stream, then the reply stream
 *
 * Seeds are conversations taken from the fixture captures (fuzz/mkseeds).
 */
#include <string.h>

#include "fuzz/fuzz.h"

/* One direction still to deliver. */
typedef struct stream {
    const uint8_t *p;
    size_t len, off;
} stream;

/* Largest chunk for each chunk-size class. */
static size_t max_chunk(unsigned cls, size_t rest)
{
    static const size_t caps[3] = {4, 64, 1024};
    return cls < 3 ? caps[cls] : (rest ? rest : 1);
}

/* Which direction goes next: keep the replies roughly behind the requests (as
 * on a real connection) but let the generator break the rule sometimes. */
static cap_dir pick_dir(const stream *req, const stream *rep, ss_fuzz_rng *rng)
{
    if (req->off >= req->len)
        return CAP_TO_CLIENT;
    if (rep->off >= rep->len)
        return CAP_TO_SERVER;
    if (ss_fuzz_rng_below(rng, 4) == 0)
        return ss_fuzz_rng_below(rng, 2) ? CAP_TO_CLIENT : CAP_TO_SERVER;
    /* replies' progress (as a fraction) behind the requests' */
    if ((uint64_t)rep->off * req->len < (uint64_t)req->off * rep->len)
        return CAP_TO_CLIENT;
    return CAP_TO_SERVER;
}

int ss_fuzz_resp(const uint8_t *data, size_t size)
{
    if (size < 7)
        return 0;
    unsigned flags = data[0];
    size_t req_len = (size_t)data[1] | (size_t)data[2] << 8;
    uint64_t seed = (uint64_t)data[3] | (uint64_t)data[4] << 8 |
                    (uint64_t)data[5] << 16 | (uint64_t)data[6] << 24;
    data += 7;
    size -= 7;
    if (req_len > size)
        req_len = size;
    stream st[2] = {{data, req_len, 0}, {data + req_len, size - req_len, 0}};

    ss_fuzz_rng rng;
    ss_fuzz_rng_seed(&rng, seed * 2 + 1);
    ss_fuzz_pipe pipe;
    ss_fuzz_pipe_init(&pipe, flags & 3);

    int64_t ts = 1700000000000000LL;
    ss_fuzz_conn conn;
    uint64_t conn_id = 1;
    ss_fuzz_conn_open(&pipe, &conn, conn_id, 2, 40000, 1, ts);
    size_t total = st[0].len + st[1].len;
    size_t reconnect_at = (flags & 8) && total ? (size_t)ss_fuzz_rng_below(&rng, total) : SIZE_MAX;
    size_t delivered = 0;

    /* bounded: every turn delivers or skips at least one byte */
    while (st[0].off < st[0].len || st[1].off < st[1].len) {
        cap_dir dir = pick_dir(&st[0], &st[1], &rng);
        stream *s = &st[dir];
        size_t rest = s->len - s->off;
        size_t n = 1 + (size_t)ss_fuzz_rng_below(&rng, max_chunk(flags >> 6, rest));
        if (n > rest)
            n = rest;

        if ((flags & 16) && ss_fuzz_rng_below(&rng, 16) == 0)
            ts -= (int64_t)ss_fuzz_rng_below(&rng, 5000000);
        else
            ts += (int64_t)ss_fuzz_rng_below(&rng, 2000);

        if ((flags & 4) && ss_fuzz_rng_below(&rng, 32) == 0) {
            /* these bytes are lost on the wire */
            uint64_t told = ss_fuzz_rng_below(&rng, 4) ? n : 0;
            ss_fuzz_conn_gap(&pipe, &conn, dir, told, ts);
        } else {
            ss_fuzz_conn_data(&pipe, &conn, dir, s->p + s->off, n, ts);
        }
        s->off += n;
        delivered += n;

        if (delivered >= reconnect_at) {
            reconnect_at = SIZE_MAX;
            ss_fuzz_conn_close(&pipe, &conn, CAP_CLOSE_FIN, ts);
            ss_fuzz_conn_open(&pipe, &conn, ++conn_id, 2, 40001, 0, ts);
        }
    }
    ss_fuzz_conn_close(&pipe, &conn, (flags & 32) ? CAP_CLOSE_RST : CAP_CLOSE_FIN, ts);
    ss_fuzz_pipe_finish(&pipe, ts);
    return 0;
}

#ifndef SS_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return ss_fuzz_resp(data, size);
}
#endif
