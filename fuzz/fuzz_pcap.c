/*
 * fuzz_pcap.c - fuzz target: a pcap file through the whole pipeline (no store).
 *
 * Input: a classic pcap file (https://www.tcpdump.org/manpages/pcap-savefile.5.html,
 * draft-ietf-opsawg-pcap): a 24-byte header (magic, version, thiszone,
 * sigfigs, snaplen, link type) and records (ts_sec, ts_usec or ts_nsec, caplen,
 * len, bytes). The records are parsed here, not by libpcap, and each one is
 * handed to cap_tracker_packet from a heap copy of exactly caplen bytes, so
 * that a read past the end of a packet is an ASan error even in the middle of
 * the file. Nothing touches the disk, so a run does tens of thousands of
 * executions a second. libpcap's own file reading is fuzzed by fuzz_pcapfile.
 *
 * The file is taken as hostile as it comes: any link type (all decoders are
 * reached), caplen larger than len, timestamps that go backwards. Only what
 * libpcap itself would never hand over is not passed on: a record longer than
 * the rest of the input is cut to what is there.
 *
 * The low two bits of thiszone (which nobody reads) choose the analysis variant
 * (client by connection, key redaction).
 *
 * Checked besides memory: live connections never exceed the cap; OPEN and
 * CLOSE events pair up and match stats.connections; the DATA bytes delivered
 * add up to stats.stream_bytes; nothing is live after cap_tracker_finish.
 */
#include <string.h>

#include "fuzz/fuzz.h"

/* What the event wrapper saw. */
typedef struct pcap_run {
    ss_fuzz_pipe pipe;
    uint64_t opens, closes;
    uint64_t data_bytes[2];
} pcap_run;

/* Read a 32-bit field in the file's byte order. */
static uint32_t rd32(const uint8_t *p, int swapped)
{
    if (swapped)
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* The tracker's callback: check the event, count it, pass it to resp/. */
static void on_event(void *ctx, const cap_event *ev)
{
    pcap_run *run = ctx;
    SS_FUZZ_CHECK(ev->conn != NULL);
    switch (ev->kind) {
    case CAP_EV_OPEN:
        run->opens++;
        break;
    case CAP_EV_DATA:
        SS_FUZZ_CHECK(ev->dir == CAP_TO_SERVER || ev->dir == CAP_TO_CLIENT);
        SS_FUZZ_CHECK(ev->len > 0 && ev->data != NULL);
        run->data_bytes[ev->dir] += ev->len;
        break;
    case CAP_EV_GAP:
        SS_FUZZ_CHECK(ev->dir == CAP_TO_SERVER || ev->dir == CAP_TO_CLIENT);
        break;
    case CAP_EV_CLOSE:
        run->closes++;
        SS_FUZZ_CHECK(ev->reason >= CAP_CLOSE_FIN && ev->reason <= CAP_CLOSE_REUSED);
        break;
    default:
        SS_FUZZ_CHECK(!"unknown event kind");
    }
    resp_on_capture_event(run->pipe.rp, ev);
}

int ss_fuzz_pcap(const uint8_t *data, size_t size)
{
    if (size < 24)
        return 0;
    uint32_t magic = rd32(data, 0);
    int swapped = 0, nsec = 0;
    if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d) {
        nsec = magic == 0xa1b23c4d;
    } else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1) {
        swapped = 1;
        nsec = magic == 0x4d3cb2a1;
    } /* else: read on as little-endian microseconds, let the fuzzer play */
    int linktype = (int)(rd32(data + 20, swapped) & 0x0FFFFFFF);
    unsigned variant = rd32(data + 8, swapped) & 3;

    pcap_run run;
    memset(&run, 0, sizeof run);
    ss_fuzz_pipe_init(&run.pipe, variant);
    cap_config cfg;
    ss_fuzz_cap_config(&cfg);
    cap_tracker *t = cap_tracker_new(&cfg, on_event, &run);
    SS_FUZZ_CHECK(t != NULL);

    size_t off = 24;
    uint64_t records = 0;
    int64_t last_us = 0;
    while (size - off >= 16) {
        const uint8_t *h = data + off;
        int64_t sec = rd32(h, swapped);
        int64_t frac = rd32(h + 4, swapped);
        uint32_t caplen = rd32(h + 8, swapped);
        uint32_t wirelen = rd32(h + 12, swapped);
        off += 16;
        if (caplen > size - off)
            caplen = (uint32_t)(size - off); /* the file ends inside the record */
        int64_t ts_us = sec * 1000000 + (nsec ? frac / 1000 : frac);
        /* an exact copy, so that ASan sees a read past the packet's end */
        uint8_t *pkt = malloc(caplen ? caplen : 1);
        SS_FUZZ_CHECK(pkt != NULL);
        memcpy(pkt, data + off, caplen);
        cap_tracker_packet(t, linktype, ts_us, pkt, caplen, wirelen);
        free(pkt);
        off += caplen;
        records++;
        last_us = ts_us;
        SS_FUZZ_CHECK(cap_tracker_live(t) <=
                      cap_partition_share(cfg.max_connections) * CAP_PARTITIONS);
    }
    cap_tracker_finish(t, last_us);

    const cap_stats *st = cap_tracker_stats(t);
    SS_FUZZ_CHECK(st->packets == records);
    SS_FUZZ_CHECK(cap_tracker_live(t) == 0);
    SS_FUZZ_CHECK(run.opens == run.closes);
    SS_FUZZ_CHECK(run.opens == st->connections);
    SS_FUZZ_CHECK(st->evicted_connections <= st->connections);
    SS_FUZZ_CHECK(st->mid_stream <= st->connections);
    SS_FUZZ_CHECK(run.data_bytes[0] == st->stream_bytes[0]);
    SS_FUZZ_CHECK(run.data_bytes[1] == st->stream_bytes[1]);

    ss_fuzz_pipe_finish(&run.pipe, last_us);
    cap_tracker_free(t);
    return 0;
}

#ifndef SS_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return ss_fuzz_pcap(data, size);
}
#endif
