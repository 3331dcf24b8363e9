/*
 * bench_capture.c - the capture layer against a bare libpcap read.
 *
 *   bench_capture [-r ROUNDS] [-o PHASE] FILE...
 *
 * Times (CLOCK_MONOTONIC, best of ROUNDS, default 3, the phases interleaved,
 * after one warm-up read that puts the files in the page cache):
 *   bare     pcap_next_ex over every record of every file, touching nothing
 *            but the record length (files opened by pcap_open_offline)
 *   bare1m   the same with a 1 MiB stdio buffer (what cap_source gave
 *            libpcap before it read classic pcap files itself)
 *   source   cap_source_next alone (the merge layer over capture/pcapfile.c,
 *            which reads classic pcap files in place; libpcap for pcapng)
 *   capture  cap_source + cap_tracker (decode, flows, reassembly) with a
 *            callback that only adds up event lengths
 * (-o bare|source|capture runs only that phase, for a profiler)
 * and prints MB/s, packets/s, their ratio, and the peak RSS (getrusage) after
 * each phase. It never passes or fails: it prints figures.
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"

/* What one timed pass read. */
typedef struct pass {
    double seconds;      /* wall time (CLOCK_MONOTONIC) */
    double cpu;          /* CPU time of the process (CLOCK_PROCESS_CPUTIME_ID) */
    uint64_t packets;
    uint64_t bytes;      /* file bytes */
} pass;

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds used by the process so far. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Peak resident set size of the process so far, in MiB. */
static double peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

/* Total size of the files in bytes. */
static uint64_t files_size(char **paths, int n)
{
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) == 0)
            total += (uint64_t)sb.st_size;
    }
    return total;
}

/* Open a file for the bare loop: libpcap's own way, or (bufsize > 0) with
 * the stdio buffer size cap_source uses, for a like-for-like comparison. */
static pcap_t *bare_open(const char *path, size_t bufsize, char **buf, char *errbuf)
{
    FILE *fp;
    pcap_t *p;
    *buf = NULL;
    if (bufsize == 0)
        return pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_MICRO, errbuf);
    fp = fopen(path, "rb");
    *buf = malloc(bufsize);
    if (fp == NULL || *buf == NULL) {
        snprintf(errbuf, PCAP_ERRBUF_SIZE, "cannot open %s", path);
        if (fp != NULL)
            fclose(fp);
        return NULL;
    }
    setvbuf(fp, *buf, _IOFBF, bufsize);
    p = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_MICRO, errbuf);
    if (p == NULL)
        fclose(fp);
    return p;
}

/* Bare libpcap: read every record of every file, one after the other. */
static int bare_pass(char **paths, int n, size_t bufsize, pass *out)
{
    char errbuf[PCAP_ERRBUF_SIZE];
    double t0 = now_s();
    uint64_t packets = 0, sink = 0;
    for (int i = 0; i < n; i++) {
        struct pcap_pkthdr *hdr;
        const u_char *data;
        char *buf;
        pcap_t *p = bare_open(paths[i], bufsize, &buf, errbuf);
        if (p == NULL) {
            fprintf(stderr, "bench_capture: %s\n", errbuf);
            free(buf);
            return -1;
        }
        while (pcap_next_ex(p, &hdr, &data) == 1) {
            packets++;
            sink += hdr->caplen;
        }
        pcap_close(p);
        free(buf);
    }
    out->seconds = now_s() - t0;
    out->packets = packets;
    out->bytes = files_size(paths, n);
    return sink == 0 && packets > 0 ? -1 : 0;
}

/* Source only: cap_source_next over the merged files, no tracker. */
static int source_pass(char **paths, int n, pass *out)
{
    char err[512] = "";
    cap_record rec;
    uint64_t packets = 0, sink = 0;
    double t0 = now_s();
    cap_source *src = cap_open_files((const char *const *)paths, (size_t)n, err, sizeof err);
    int r;
    if (src == NULL) {
        fprintf(stderr, "bench_capture: %s\n", err);
        return -1;
    }
    while ((r = cap_source_next(src, &rec, err, sizeof err)) != 0) {
        if (r > 0) {
            packets++;
            sink += rec.caplen;
        }
    }
    cap_source_free(src);
    out->seconds = now_s() - t0;
    out->packets = packets;
    out->bytes = files_size(paths, n);
    return sink == 0 && packets > 0 ? -1 : 0;
}

/* Event sink of the capture pass: as little work as a consumer can do. */
static void count_event(void *ctx, const cap_event *ev)
{
    uint64_t *total = ctx;
    *total += ev->len;
}

/* Capture layer: merged source, tracker, empty consumer. */
static int capture_pass(char **paths, int n, pass *out, cap_stats *stats)
{
    char err[512] = "";
    uint64_t delivered = 0;
    cap_config cfg;
    cap_tracker *t;
    cap_source *src;
    double t0 = now_s();
    cap_config_defaults(&cfg);
    src = cap_open_files((const char *const *)paths, (size_t)n, err, sizeof err);
    if (src == NULL) {
        fprintf(stderr, "bench_capture: %s\n", err);
        return -1;
    }
    t = cap_tracker_new(&cfg, count_event, &delivered);
    if (t == NULL) {
        cap_source_free(src);
        return -1;
    }
    if (cap_source_run(src, t, err, sizeof err) < 0)
        fprintf(stderr, "bench_capture: %s (continuing)\n", err);
    cap_tracker_finish(t, 0);
    out->seconds = now_s() - t0;
    *stats = *cap_tracker_stats(t);
    out->packets = stats->packets;
    out->bytes = files_size(paths, n);
    cap_tracker_free(t);
    cap_source_free(src);
    return 0;
}

/* Print one phase. */
static void print_pass(const char *name, const pass *p)
{
    printf("%-8s %7.3f s (cpu %.3f s) %8.1f MB/s %10.0f packets/s (%llu packets)\n", name,
           p->seconds, p->cpu, (double)p->bytes / 1e6 / p->seconds,
           (double)p->packets / p->seconds, (unsigned long long)p->packets);
}

/* Run one phase ROUNDS times and keep the best pass. */
static int run_phase(const char *phase, char **paths, int n, int rounds, pass *best, cap_stats *st)
{
    for (int r = 0; r < rounds; r++) {
        pass p;
        int rc;
        double c0 = cpu_s();
        if (strcmp(phase, "bare") == 0)
            rc = bare_pass(paths, n, 0, &p);
        else if (strcmp(phase, "bare1m") == 0)
            rc = bare_pass(paths, n, 1u << 20, &p);
        else if (strcmp(phase, "source") == 0)
            rc = source_pass(paths, n, &p);
        else
            rc = capture_pass(paths, n, &p, st);
        if (rc != 0)
            return -1;
        p.cpu = cpu_s() - c0;
        if (r == 0 || p.seconds < best->seconds)
            *best = p;
    }
    return 0;
}

/* Parse options, run the rounds, print the best of each. */
int main(int argc, char **argv)
{
    static const char usage[] =
        "usage: bench_capture [-r ROUNDS] [-o bare|bare1m|source|capture] FILE...\n";
    int rounds = 3, opt;
    const char *only = NULL;
    pass bare = {0}, bare1m = {0}, source = {0}, cap = {0}, warm;
    cap_stats st = {0};
    double rss_bare, rss_cap;
    while ((opt = getopt(argc, argv, "r:o:")) != -1) {
        if (opt == 'r' && atoi(optarg) > 0) {
            rounds = atoi(optarg);
        } else if (opt == 'o') {
            only = optarg;
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fputs(usage, stderr);
        return 2;
    }
    argv += optind;
    argc -= optind;
    if (only != NULL)
        return run_phase(only, argv, argc, rounds, &cap, &st) == 0 ? 0 : 1;
    if (bare_pass(argv, argc, 0, &warm) != 0) /* warm-up: page cache */
        return 1;
    if (run_phase("bare", argv, argc, 1, &bare, &st) != 0)
        return 1;
    rss_bare = peak_rss_mib();
    /* Interleave the phases so that a busy machine slows them alike. */
    for (int r = 0; r < rounds; r++) {
        pass b = bare, m = bare1m, s = source, c = cap;
        if (run_phase("bare", argv, argc, 1, &b, &st) != 0 ||
            run_phase("bare1m", argv, argc, 1, &m, &st) != 0 ||
            run_phase("source", argv, argc, 1, &s, &st) != 0 ||
            run_phase("capture", argv, argc, 1, &c, &st) != 0)
            return 1;
        if (b.seconds < bare.seconds)
            bare = b;
        if (r == 0 || m.seconds < bare1m.seconds)
            bare1m = m;
        if (r == 0 || s.seconds < source.seconds)
            source = s;
        if (r == 0 || c.seconds < cap.seconds)
            cap = c;
    }
    rss_cap = peak_rss_mib();
    printf("files    %d, %.1f MB, best of %d rounds\n", argc, (double)bare.bytes / 1e6, rounds);
    print_pass("bare", &bare);
    print_pass("bare1m", &bare1m);
    print_pass("source", &source);
    print_pass("capture", &cap);
    printf("ratio    %.3f capture / bare, %.3f capture / bare1m (cpu: %.3f, %.3f)\n",
           cap.seconds / bare.seconds, cap.seconds / bare1m.seconds, cap.cpu / bare.cpu,
           cap.cpu / bare1m.cpu);
    printf("peak RSS %.1f MiB after bare, %.1f MiB after capture\n", rss_bare, rss_cap);
    printf("capture  %llu connections, %llu+%llu stream bytes, %llu gaps (%llu bytes), "
           "%llu out-of-order, %llu retransmitted, %llu truncated\n",
           (unsigned long long)st.connections, (unsigned long long)st.stream_bytes[0],
           (unsigned long long)st.stream_bytes[1], (unsigned long long)st.gaps,
           (unsigned long long)st.gap_bytes, (unsigned long long)st.out_of_order,
           (unsigned long long)st.retransmitted, (unsigned long long)st.truncated);
    return 0;
}
