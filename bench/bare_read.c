/*
 * bare_read.c - the floor: read every record of a capture with libpcap and do
 * nothing else.
 *
 *   bare_read FILE
 *
 * Prints one line of key=value pairs: packets, bytes (captured), seconds
 * (wall, monotonic clock), MB_s. Whatever slotscope does on the same file
 * costs at least this much; bench/run prints both side by side.
 *
 * libpcap: pcap_open_offline(3PCAP), pcap_dispatch(3PCAP) (a callback per
 * record, the cheapest loop libpcap offers).
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* What the loop saw. */
typedef struct tally {
    uint64_t packets;
    uint64_t bytes;
    uint32_t sink;   /* one byte of each packet, so the read is not elided */
} tally;

/* Count the record; touch its first byte. */
static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes)
{
    tally *t = (tally *)user;
    t->packets++;
    t->bytes += h->caplen;
    if (h->caplen)
        t->sink += bytes[0];
}

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bare_read FILE\n");
        return 2;
    }
    char err[PCAP_ERRBUF_SIZE];
    double t0 = now_s();
    pcap_t *p = pcap_open_offline(argv[1], err);
    if (!p) {
        fprintf(stderr, "bare_read: %s\n", err);
        return 1;
    }
    tally t = {0, 0, 0};
    int rc;
    while ((rc = pcap_dispatch(p, 4096, on_packet, (u_char *)&t)) > 0)
        ;
    if (rc == PCAP_ERROR)
        fprintf(stderr, "bare_read: %s\n", pcap_geterr(p));
    pcap_close(p);
    double secs = now_s() - t0;
    printf("packets=%llu bytes=%llu seconds=%.3f MB_s=%.0f sink=%u\n",
           (unsigned long long)t.packets, (unsigned long long)t.bytes, secs,
           (double)t.bytes / 1e6 / (secs > 0 ? secs : 1e-9), t.sink & 1);
    return rc == PCAP_ERROR ? 1 : 0;
}
