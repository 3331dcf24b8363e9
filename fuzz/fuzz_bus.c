/*
 * fuzz_bus.c - fuzz target: the cluster-bus decoder (bus/).
 *
 * Input: byte 0 seeds the chunk cuts, the rest is one direction of a bus
 * connection (a few whole messages make good seeds: fuzz/seeds/fuzz_bus,
 * cut from tests/fixtures/bus/failovers.pcap).
 *
 * 1. bus_decode on an exact-size heap copy of the stream: no read past it;
 *    a message it accepts has a known type and NUL-terminated texts.
 * 2. The stream fed whole and fed in pieces cut where the seed says gives the
 *    same messages (type, sender, totlen, whole) and the same counters: the
 *    framing does not depend on where the chunks end.
 * 3. Counters agree: messages = sum by type; nothing skipped without a
 *    resync or a final carry.
 */
#include <string.h>

#include "bus/bus.h"
#include "fuzz/fuzz.h"

#define MAX_LOG 256

/* What a stream handed out, in order. */
typedef struct bus_log {
    unsigned n;
    uint16_t type[MAX_LOG];
    uint32_t totlen[MAX_LOG];
    uint8_t whole[MAX_LOG];
    char sender[MAX_LOG][BUS_NAMELEN + 1];
} bus_log;

static void check_msg(const bus_msg *m)
{
    SS_FUZZ_CHECK(m->type < BUS_TYPE_COUNT);
    SS_FUZZ_CHECK(m->totlen >= BUS_HEADER_LEN);
    SS_FUZZ_CHECK(ss_fuzz_has_nul(m->sender, sizeof m->sender));
    SS_FUZZ_CHECK(ss_fuzz_has_nul(m->master, sizeof m->master));
    SS_FUZZ_CHECK(ss_fuzz_has_nul(m->ip, sizeof m->ip));
    SS_FUZZ_CHECK(ss_fuzz_has_nul(m->hostname, sizeof m->hostname));
    SS_FUZZ_CHECK(ss_fuzz_has_nul(m->human_name, sizeof m->human_name));
    SS_FUZZ_CHECK(ss_fuzz_has_nul(m->about, sizeof m->about));
    SS_FUZZ_CHECK(bus_slots_count(m->slots) <= 16384);
    if (m->whole && m->type == BUS_UPDATE)
        SS_FUZZ_CHECK(bus_slots_count(m->update_slots) <= 16384);
    for (unsigned i = 0; m->whole && m->gossip && i < m->count; i++) {
        bus_gossip g;
        bus_msg_gossip(m, i, &g);
        SS_FUZZ_CHECK(ss_fuzz_has_nul(g.name, sizeof g.name));
        SS_FUZZ_CHECK(ss_fuzz_has_nul(g.ip, sizeof g.ip));
    }
}

static void on_msg(void *ctx, const bus_msg *m, int64_t ts_us)
{
    (void)ts_us;
    bus_log *log = ctx;
    check_msg(m);
    if (log->n < MAX_LOG) {
        log->type[log->n] = m->type;
        log->totlen[log->n] = m->totlen;
        log->whole[log->n] = m->whole;
        memcpy(log->sender[log->n], m->sender, sizeof m->sender);
    }
    log->n++;
}

static void check_stats(const bus_stats *st)
{
    uint64_t sum = 0;
    for (int i = 0; i < BUS_TYPE_COUNT; i++)
        sum += st->by_type[i];
    SS_FUZZ_CHECK(sum == st->messages);
}

int ss_fuzz_bus(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t seed = data[0];
    data++, size--;

    uint8_t *copy = malloc(size ? size : 1);
    SS_FUZZ_CHECK(copy != NULL);
    memcpy(copy, data, size);
    bus_msg m;
    if (size >= BUS_HEADER_LEN && bus_decode(copy, size, &m) == 0)
        check_msg(&m);
    (void)bus_signature(copy, size);

    /* keep_max small enough that long messages take the header-only path */
    size_t keep = BUS_HEADER_LEN + 4096;
    static bus_log whole_log, cut_log;
    memset(&whole_log, 0, sizeof whole_log);
    memset(&cut_log, 0, sizeof cut_log);
    bus_stream *a = bus_stream_new(keep, on_msg, &whole_log);
    bus_stream *b = bus_stream_new(keep, on_msg, &cut_log);
    SS_FUZZ_CHECK(a && b);
    bus_stream_feed(a, copy, size, 1);
    ss_fuzz_rng rng;
    ss_fuzz_rng_seed(&rng, seed);
    for (size_t i = 0; i < size;) {
        size_t n = 1 + (size_t)ss_fuzz_rng_below(&rng, seed & 1 ? 16 : 3000);
        if (n > size - i)
            n = size - i;
        bus_stream_feed(b, copy + i, n, 1);
        i += n;
    }
    const bus_stats *sa = bus_stream_stats(a), *sb = bus_stream_stats(b);
    check_stats(sa);
    check_stats(sb);
    SS_FUZZ_CHECK(whole_log.n == cut_log.n);
    SS_FUZZ_CHECK(memcmp(sa, sb, sizeof *sa) == 0);
    unsigned n = whole_log.n < MAX_LOG ? whole_log.n : MAX_LOG;
    for (unsigned i = 0; i < n; i++) {
        SS_FUZZ_CHECK(whole_log.type[i] == cut_log.type[i]);
        SS_FUZZ_CHECK(whole_log.totlen[i] == cut_log.totlen[i]);
        SS_FUZZ_CHECK(whole_log.whole[i] == cut_log.whole[i]);
        SS_FUZZ_CHECK(strcmp(whole_log.sender[i], cut_log.sender[i]) == 0);
    }
    /* after a gap, the rest still decodes without breaking a promise */
    bus_stream_gap(b);
    bus_stream_feed(b, copy, size, 2);
    check_stats(bus_stream_stats(b));
    bus_stream_free(a);
    bus_stream_free(b);
    free(copy);
    return 0;
}

#ifndef SS_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return ss_fuzz_bus(data, size);
}
#endif
