/*
 * source.c - where records come from: capture files or a live interface.
 *
 * Classic pcap files of the usual kinds are read by pcapfile.c, in place from
 * a large read(2) buffer; every other file (pcapng: draft-ietf-opsawg-pcapng,
 * other pcap versions and link types) by libpcap. A compressed file, standard
 * input ("-") or a pipe is read through infile.c (a stream that decodes and
 * hands back its first bytes), by the same two readers. Either gives the same
 * records and the same errors. Several files are merged by timestamp: each
 * file keeps its current record (the reader's buffer stays valid until the
 * next read of that file, so nothing is copied) and a small binary heap picks
 * the earliest. More files than the open-file limit allows (thousands of
 * `tcpdump -C` rotations) are read lazily (files_next): each is opened once to
 * check it and learn its first record's time, then closed ("parked"); it is
 * opened again when that record reaches the heap's root, and closed at its
 * end, so only files whose time ranges overlap are open at once. The order is
 * the same either way (time, then file order). A file that fails mid-way is reported and dropped; the
 * records read before stay delivered and the other files go on. Records that
 * can still be framed (zero length, odd lengths, time going back) are handed
 * on: the tracker counts them as malformed or time_backwards and reading goes
 * on.
 *
 * Live capture follows pcap(3PCAP): pcap_create, the options, pcap_activate
 * (a positive result is a warning, a negative one an error), then a BPF
 * filter. cap_source_break only sets a flag and calls pcap_breakloop, both
 * safe in a signal handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/internal.h"

/* Snap length of a live capture when none is given (tcpdump's default). */
#define LIVE_SNAPLEN_DEFAULT 262144
/* How long a live read waits before returning, so a break is seen (ms). */
#define LIVE_TIMEOUT_MS 200
/* Read buffer of one input file (pcapfile.c's, or the stdio buffer libpcap
 * reads through): big reads instead of one read(2) per 4 KiB (halves the time
 * spent reading a file), less when many files are merged so that memory stays
 * bounded. */
#define READ_BUFFER_MAX (1u << 20)
#define READ_BUFFER_MIN (64u << 10)
#define READ_BUFFER_TOTAL (32u << 20)
/* Compressed inputs (or pipes) open at once before the files are opened
 * lazily: a zstd decoder may hold a window of up to 128 MiB. */
#define STREAMS_OPEN_MAX 16

/* One input file and its current record. */
typedef struct input {
    cap_record cur;          /* the record waiting in the merge */
    /* Counters kept here, next to cur, and copied into the cap_input_info
     * when asked for: one cache line per record instead of three. */
    uint64_t packets;        /* records handed out */
    uint64_t bytes;          /* their captured bytes */
    int64_t first_us;        /* time of the first */
    int64_t last_us;         /* latest time */
    uint64_t time_backwards; /* records older than an earlier one (last_us) */
    uint64_t bad_lengths;    /* records with impossible lengths (see cap_input_info) */
    uint64_t size;           /* file size in bytes */
    int error_pending;       /* info.error is set and not yet reported */
    int own;                 /* read by pf instead of libpcap */
    int64_t offset_us;       /* added to every record's time (--time-offset) */
    cap_pcapfile pf;         /* the classic pcap reader (when own); its hot
                                fields first, right after the counters */
    pcap_t *pcap;            /* libpcap's handle (NULL when closed or unused) */
    cap_pcapng *ng;          /* or pcapng.c's reader, when libpcap refused the
                                file's second link type (switch_to_pcapng) */
    char *iobuf;             /* stdio buffer of the file (libpcap) */
    cap_infile *stream;      /* a compressed file or a pipe, read through
                                infile.c (pf or libpcap read it) */
    cap_infile *ng_stream;   /* the stream under ng, when it has one */
    int read_once;           /* standard input, a pipe or a FIFO: cannot be
                                opened again (never parked) */
    int kept;                /* lazy opening: standard input, left open with
                                its first record waiting */
    /* lazy opening (many files): */
    const char *path;        /* the caller's path (kept by the caller) */
    int parked;              /* closed before its first record was handed out;
                                cur.ts_us holds that record's time */
    int finished;            /* read to its end and closed */
} input;

struct cap_source {
    input *inputs;           /* files (none when live) */
    cap_input_info *info;    /* one per input */
    size_t n;                /* inputs (1 when live) */
    uint32_t *heap;          /* inputs with a waiting record, earliest first */
    size_t heap_n;
    int primed;              /* every file's first record was read */
    int handed_out;          /* the heap root's record was returned */
    size_t errors_pending;   /* inputs with error_pending set */
    int used_next;           /* records were taken through files_next */
    int lazy;                /* more files than may be open: see the top */
    size_t bufsize;          /* read buffer of each file */
    pcap_t *live;            /* live handle, or NULL */
    cap_tracker *run_tracker; /* the tracker of a run (for the callbacks) */
    cap_record_fn run_fn;    /* or the record callback of a run */
    void *run_ctx;
    struct pcap_stat last_stat; /* live: drop counters already reported */
    cap_record_fn tap;       /* live: sees each record first (cap_source_set_tap) */
    void *tap_ctx;
    volatile sig_atomic_t stop; /* set by cap_source_break */
};

/* Format a one-line message into err (when there is room); a long path is
 * cut, never overflowed. */
static void set_err(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || size == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
}

/* A record's capture time in microseconds since the epoch. pcapng times are
 * 64-bit, so libpcap's tv_sec can be anywhere, negative too, and a product or
 * a difference of such times overflows (undefined behaviour; found by
 * fuzz/fuzz_pcapfile). tv_sec is clamped to 0 .. 10^11 s (the year 5138):
 * every real capture fits, and times stay far from the int64 limits. */
static int64_t time_us(int64_t s, int64_t us)
{
    const int64_t max_s = 100000000000LL;
    if (s > max_s)
        s = max_s;
    else if (s < 0)
        s = 0;
    return s * 1000000 + us;
}

/* A libpcap record's time in microseconds (see time_us). */
static int64_t record_time_us(const struct pcap_pkthdr *hdr)
{
    return time_us((int64_t)hdr->ts.tv_sec, (int64_t)hdr->ts.tv_usec);
}

/* Fill the name fields of an input's info. */
static void describe_input(cap_input_info *info, const char *name, int dlt)
{
    const char *lt = pcap_datalink_val_to_name(dlt);
    set_err(info->name, sizeof info->name, "%s", name);
    info->linktype = dlt;
    if (lt != NULL)
        snprintf(info->linktype_name, sizeof info->linktype_name, "%s", lt);
    else
        snprintf(info->linktype_name, sizeof info->linktype_name, "DLT_%d", dlt);
}

/* The "unsupported link type" message for a handle. */
static void unsupported_linktype(const char *name, int dlt, char *err, size_t size)
{
    char what[96];
    const char *lt = pcap_datalink_val_to_name(dlt);
    const char *desc = pcap_datalink_val_to_description(dlt);
    snprintf(what, sizeof what, "%s (%d%s%s)", lt ? lt : "?", dlt, desc ? ", " : "",
             desc ? desc : "");
    set_err(err, size, "'%s': unsupported link type %s", name, what);
}

/* Allocate an empty source for n inputs. NULL on out of memory. */
static cap_source *source_alloc(size_t n, int files)
{
    cap_source *src = calloc(1, sizeof *src);
    if (src == NULL)
        return NULL;
    src->n = n;
    src->info = calloc(n, sizeof *src->info);
    if (files) {
        src->inputs = calloc(n, sizeof *src->inputs);
        src->heap = calloc(n, sizeof *src->heap);
    }
    if (src->info == NULL || (files && (src->inputs == NULL || src->heap == NULL))) {
        cap_source_free(src);
        return NULL;
    }
    return src;
}

/* Size of each file's read buffer when n files are merged. */
static size_t read_buffer_size(size_t n)
{
    size_t each = READ_BUFFER_TOTAL / (n ? n : 1);
    if (each > READ_BUFFER_MAX)
        each = READ_BUFFER_MAX;
    return each < READ_BUFFER_MIN ? READ_BUFFER_MIN : each;
}

/* Hand the open file fd (at its start; or, when in->stream is set, that
 * stream) to libpcap, which then owns the FILE. 0 on success, -1 with err
 * set (fd closed; a stream stays in->stream's). */
static int open_with_libpcap(const char *path, int fd, size_t bufsize, input *in, char *err,
                             size_t size)
{
    char errbuf[PCAP_ERRBUF_SIZE] = "";
    FILE *fp = in->stream != NULL ? cap_infile_fopen(in->stream) : fdopen(fd, "rb");
    if (fp == NULL) {
        set_err(err, size, "cannot open '%s': %s", path, strerror(errno));
        if (in->stream == NULL)
            close(fd);
        return -1;
    }
    /* A bigger buffer than stdio's 4 KiB; without memory, the default. */
    in->iobuf = malloc(bufsize);
    if (in->iobuf != NULL)
        setvbuf(fp, in->iobuf, _IOFBF, bufsize);
    /* On success libpcap owns fp and closes it in pcap_close. */
    in->pcap = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_MICRO, errbuf);
    if (in->pcap == NULL) {
        if (in->stream != NULL && cap_infile_error(in->stream)[0] != '\0')
            set_err(err, size, "'%s': %s", path, cap_infile_error(in->stream));
        else
            set_err(err, size, "'%s': not a pcap or pcapng capture%s (%s)", path,
                    in->stream && cap_infile_kind_of(in->stream) != CAP_INFILE_PLAIN
                        ? " inside the compressed file"
                        : "",
                    errbuf);
        fclose(fp);
        return -1;
    }
    return 0;
}

/* The name an input goes by: "-" is standard input. */
static const char *input_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "(stdin)" : path;
}

/* Open fd, a compressed file or a pipe, through a stream: pcapfile.c when
 * it reads what is inside, else libpcap. 0, or -1 with err set (fd closed). */
static int open_stream(const char *path, int fd, size_t bufsize, input *in,
                       cap_input_info *info, char *err, size_t size)
{
    char why[160];
    const char *name = input_name(path);
    in->stream = cap_infile_open(fd, why, sizeof why);
    if (in->stream == NULL) {
        set_err(err, size, "'%s': %s", name, why);
        return -1;
    }
    set_err(info->compression, sizeof info->compression, "%s",
            cap_infile_kind_name(cap_infile_kind_of(in->stream)));
    if (cap_pcapfile_open_stream(&in->pf, in->stream, bufsize) == 1) {
        in->own = 1;
        describe_input(info, name, in->pf.dlt);
        return 0;
    }
    cap_pcapfile_close(&in->pf);
    if (open_with_libpcap(name, -1, bufsize, in, err, size) != 0)
        return -1;
    describe_input(info, name, pcap_datalink(in->pcap));
    if (!cap_linktype_supported(info->linktype)) {
        unsupported_linktype(name, info->linktype, err, size);
        return -1;
    }
    return 0;
}

/* Open one capture file into in/info: pcapfile.c when it reads the file,
 * else libpcap. 0 on success, -1 with err set. */
static int open_file(const char *path, size_t bufsize, input *in, cap_input_info *info,
                     char *err, size_t size)
{
    struct stat sb;
    int fd;
    if (strcmp(path, "-") == 0) {
        in->read_once = 1;
        fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
            set_err(err, size, "cannot read standard input: %s", strerror(errno));
            return -1;
        }
        return open_stream(path, fd, bufsize, in, info, err, size);
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, size, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) != 0) {
        set_err(err, size, "cannot open '%s': %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) { /* a pipe, a FIFO */
        in->read_once = 1;
        return open_stream(path, fd, bufsize, in, info, err, size);
    }
    if (S_ISDIR(sb.st_mode) || sb.st_size == 0) {
        set_err(err, size, "'%s': %s", path,
                S_ISDIR(sb.st_mode) ? "is a directory" : "empty file, not a capture");
        close(fd);
        return -1;
    }
    in->size = (uint64_t)sb.st_size;
    if (cap_infile_detect(fd) != CAP_INFILE_PLAIN)
        return open_stream(path, fd, bufsize, in, info, err, size);
    if (cap_pcapfile_open(&in->pf, fd, bufsize) == 1) {
        in->own = 1;
        describe_input(info, path, in->pf.dlt);
        return 0; /* every link type pcapfile.c reads is supported */
    }
    cap_pcapfile_close(&in->pf);
    if (lseek(fd, 0, SEEK_SET) != 0) {
        set_err(err, size, "cannot open '%s': %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    uint64_t drops = 0;
    int drops_recorded = cap_pcapng_tail_drops(fd, in->size, &drops);
    if (open_with_libpcap(path, fd, bufsize, in, err, size) != 0)
        return -1;
    describe_input(info, path, pcap_datalink(in->pcap));
    if (drops_recorded) { /* what the file's statistics say */
        info->kernel_drops = drops;
        info->drops_recorded = 1;
    }
    if (!cap_linktype_supported(info->linktype)) {
        unsupported_linktype(path, info->linktype, err, size);
        return -1;
    }
    return 0;
}

/* Close an input's file and free its buffers (cap_source_free, or lazy
 * opening); its counters stay. */
static void close_input(input *in)
{
    if (in->pcap != NULL)
        pcap_close(in->pcap); /* closes the FILE first */
    in->pcap = NULL;
    free(in->iobuf);
    in->iobuf = NULL;
    if (in->ng != NULL) {
        cap_pcapng_close(in->ng);
        free(in->ng);
        in->ng = NULL;
    }
    cap_infile_close(in->ng_stream);
    in->ng_stream = NULL;
    if (in->own) {
        if (in->pf.fd >= 0)
            close(in->pf.fd);
        cap_pcapfile_close(&in->pf);
        in->own = 0;
    }
    cap_infile_close(in->stream); /* after the FILE over it */
    in->stream = NULL;
}

/* Files that may be open at once: the open-file limit less what the rest of
 * the process needs (database, WAL, threads, standard streams). */
static size_t open_budget(void)
{
    struct rlimit rl;
    const rlim_t reserve = 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return SIZE_MAX;
    return rl.rlim_cur > reserve + 8 ? (size_t)(rl.rlim_cur - reserve) : 8;
}

static int input_advance(cap_source *src, uint32_t i);
static void input_failed(cap_source *src, uint32_t i, const char *what, const char *detail);

/* Lazy opening: the first record of input i (just opened) is read for its
 * time, then the file is closed. An input with no record is finished; a read
 * error stays pending, reported when the merge starts (as without lazy
 * opening). */
static void park(cap_source *src, uint32_t i)
{
    input *in = &src->inputs[i];
    in->cur.linktype = src->info[i].linktype;
    if (!input_advance(src, i))
        in->finished = 1;
    else if (in->read_once)
        in->kept = 1; /* cannot be read again: stays open */
    else
        in->parked = 1;
    if (!in->kept)
        close_input(in);
}

/* Open parked input i again, at its first record. 0, or -1 when it cannot be
 * opened now (an input error is noted and the input is dropped). */
static int unpark(cap_source *src, uint32_t i)
{
    input *in = &src->inputs[i];
    char why[256];
    int64_t first = in->cur.ts_us;
    in->parked = 0;
    if (open_file(in->path, src->bufsize, in, &src->info[i], why, sizeof why) != 0) {
        in->finished = 1;
        input_failed(src, i, "cannot be opened again",
                     strstr(why, strerror(EMFILE)) || strstr(why, strerror(ENFILE))
                         ? "too many files open at once: their times overlap; raise the "
                           "open-file limit (ulimit -n)"
                         : why);
        return -1;
    }
    in->cur.linktype = src->info[i].linktype;
    if (!input_advance(src, i) || in->cur.ts_us != first) {
        in->finished = 1;
        close_input(in);
        if (!in->error_pending)
            input_failed(src, i, "changed while it was read", "its first record moved");
        return -1;
    }
    return 0;
}

/* Open capture files to be merged by time. */
cap_source *cap_open_files(const char *const *paths, size_t n_paths, char *err, size_t err_size)
{
    cap_source *src;
    size_t n_streams = 0; /* inputs read through a stream (decoders) */
    if (n_paths == 0) {
        set_err(err, err_size, "no capture file given");
        return NULL;
    }
    src = source_alloc(n_paths, 1);
    if (src == NULL) {
        set_err(err, err_size, "out of memory");
        return NULL;
    }
    src->bufsize = read_buffer_size(n_paths);
    src->lazy = n_paths > open_budget();
    for (size_t i = 0; i < n_paths; i++) {
        src->inputs[i].path = paths[i];
        for (size_t k = 0; k < i && !strcmp(paths[i], "-"); k++)
            if (!strcmp(paths[k], "-")) {
                set_err(err, err_size, "standard input ('-') given more than once");
                cap_source_free(src);
                return NULL;
            }
        if (open_file(paths[i], src->bufsize, &src->inputs[i], &src->info[i], err,
                      err_size) != 0) {
            cap_source_free(src);
            return NULL;
        }
        if (src->inputs[i].stream != NULL && !src->lazy && ++n_streams > STREAMS_OPEN_MAX) {
            /* every decoder holds its window: open no more of them at once
             * than their time ranges need (see the top) */
            src->lazy = 1;
            for (size_t k = 0; k < i; k++)
                park(src, (uint32_t)k);
        }
        if (src->lazy)
            park(src, (uint32_t)i);
    }
    return src;
}

/* 1 when input a's waiting record goes before input b's (ties: file order). */
static int heap_before(const cap_source *src, uint32_t a, uint32_t b)
{
    int64_t ta = src->inputs[a].cur.ts_us, tb = src->inputs[b].cur.ts_us;
    return ta < tb || (ta == tb && a < b);
}

/* Add input i to the heap. */
static void heap_push(cap_source *src, uint32_t i)
{
    size_t k = src->heap_n++;
    while (k > 0 && heap_before(src, i, src->heap[(k - 1) / 2])) {
        src->heap[k] = src->heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    src->heap[k] = i;
}

/* Move the heap's root down to its place (after its record changed). */
static void heap_sift_down(cap_source *src)
{
    uint32_t moving = src->heap[0];
    size_t k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= src->heap_n)
            break;
        if (c + 1 < src->heap_n && heap_before(src, src->heap[c + 1], src->heap[c]))
            c++;
        if (!heap_before(src, src->heap[c], moving))
            break;
        src->heap[k] = src->heap[c];
        k = c;
    }
    src->heap[k] = moving;
}

/* Remove the heap's root (its input has no more records). */
static void heap_drop_root(cap_source *src)
{
    src->heap[0] = src->heap[--src->heap_n];
    if (src->heap_n > 0)
        heap_sift_down(src);
}

/* Record a read error of input i: its message, and the handle is done. */
static void input_failed(cap_source *src, uint32_t i, const char *what, const char *detail)
{
    cap_input_info *info = &src->info[i];
    set_err(info->error, sizeof info->error, "'%s': %s after %llu packets (%s)", info->name,
            what, (unsigned long long)src->inputs[i].packets, detail);
    src->inputs[i].error_pending = 1;
    src->errors_pending++;
}

/* The input error for a reader's message: truncated or bad record. */
static void record_failed(cap_source *src, uint32_t i, const char *msg)
{
    const input *in = &src->inputs[i];
    const cap_infile *s = in->ng_stream ? in->ng_stream : in->stream;
    if (s != NULL && cap_infile_error(s)[0] != '\0')
        input_failed(src, i, cap_infile_kind_of(s) != CAP_INFILE_PLAIN ? "compressed data unreadable"
                                                                       : "read error",
                     cap_infile_error(s));
    else
        input_failed(src, i, strstr(msg, "truncated") ? "truncated record" : "bad record", msg);
}

/* Read the next record of input i into its slot with pcapfile.c. */
static int own_advance(cap_source *src, uint32_t i)
{
    input *in = &src->inputs[i];
    cap_pcapfile_rec rec;
    int r = cap_pcapfile_next(&in->pf, &rec);
    if (r != 1) {
        if (r < 0)
            record_failed(src, i, in->pf.errbuf);
        return 0;
    }
    in->cur.ts_us = time_us(rec.sec, rec.usec) + in->offset_us;
    in->cur.data = rec.data;
    in->cur.caplen = rec.caplen;
    in->cur.wirelen = rec.len;
    return 1;
}

/* Read the next record of input i with pcapng.c's reader. */
static int ng_advance(cap_source *src, uint32_t i)
{
    input *in = &src->inputs[i];
    cap_pcapng_rec rec;
    int r = cap_pcapng_next(in->ng, &rec);
    if (r != 1) {
        if (r < 0)
            record_failed(src, i, in->ng->errbuf);
        return 0;
    }
    in->cur.linktype = rec.dlt;
    in->cur.ts_us = time_us(rec.sec, rec.usec) + in->offset_us;
    in->cur.data = rec.data;
    in->cur.caplen = rec.caplen;
    in->cur.wirelen = rec.len;
    return 1;
}

/* libpcap stopped at an interface whose link type differs from the first
 * one's: read input i again with pcapng.c, past the records already handed
 * out (the record libpcap failed on is the next one). 1 when it goes on. */
static int switch_to_pcapng(cap_source *src, uint32_t i)
{
    input *in = &src->inputs[i];
    cap_pcapng_rec rec;
    cap_infile *again = NULL; /* a compressed file, decoded from its start again */
    char why[160];
    if (in->pcap == NULL || !strstr(pcap_geterr(in->pcap), "different from the type of the first"))
        return 0;
    if (in->read_once)
        return 0; /* cannot be read again: the error stands */
    FILE *fp = fopen(in->path, "rb");
    if (fp != NULL && in->stream != NULL) {
        again = cap_infile_open(dup(fileno(fp)), why, sizeof why);
        fclose(fp);
        fp = again ? cap_infile_fopen(again) : NULL;
    }
    cap_pcapng *ng = fp ? malloc(sizeof *ng) : NULL;
    if (ng == NULL) {
        if (fp)
            fclose(fp);
        cap_infile_close(again);
        return 0;
    }
    cap_pcapng_open(ng, fp);
    for (uint64_t k = 0; k < in->packets; k++)
        if (cap_pcapng_next(ng, &rec) != 1) {
            cap_pcapng_close(ng);
            free(ng);
            cap_infile_close(again);
            return 0;
        }
    in->ng_stream = again;
    pcap_close(in->pcap); /* closes the FILE first */
    in->pcap = NULL;
    free(in->iobuf);
    in->iobuf = NULL;
    in->ng = ng;
    return 1;
}

/* Read the next record of input i into its slot: 1, or 0 at its end or on
 * an error (noted for the caller to report). */
static int record_advance(cap_source *src, uint32_t i)
{
    input *in = &src->inputs[i];
    struct pcap_pkthdr *hdr;
    const u_char *data;
    int r;
    if (in->own)
        return own_advance(src, i);
    if (in->ng)
        return ng_advance(src, i);
    r = pcap_next_ex(in->pcap, &hdr, &data);
    if (r == PCAP_ERROR_BREAK || r == 0)
        return 0; /* end of file */
    if (r != 1) {
        if (switch_to_pcapng(src, i))
            return ng_advance(src, i);
        record_failed(src, i, pcap_geterr(in->pcap));
        return 0;
    }
    in->cur.ts_us = record_time_us(hdr) + in->offset_us;
    in->cur.data = data;
    in->cur.caplen = hdr->caplen;
    in->cur.wirelen = hdr->len;
    return 1;
}

/* Input i has been read to its end: when it was read through a stream (a
 * pipe, a compressed file), the drops its pcapng statistics blocks recorded,
 * all walked by now (a plain file's were read from its end when it was
 * opened). */
static void stream_drops(cap_source *src, uint32_t i)
{
    const input *in = &src->inputs[i];
    const cap_infile *s = in->ng_stream ? in->ng_stream : in->stream;
    uint64_t drops;
    if (s != NULL && cap_infile_drops(s, &drops)) {
        src->info[i].kernel_drops = drops;
        src->info[i].drops_recorded = 1;
    }
}

/* Read the next record of input i into its slot. 1 when there is one, 0 at
 * its end or on an error (noted for the caller to report). */
static int input_advance(cap_source *src, uint32_t i)
{
    if (record_advance(src, i))
        return 1;
    stream_drops(src, i);
    return 0;
}

/* Account a record of input i that is being handed out. */
static inline void input_count(cap_source *src, uint32_t i)
{
    input *in = &src->inputs[i];
    if (in->packets == 0) {
        in->first_us = in->last_us = in->cur.ts_us;
    } else {
        /* older than the latest before it: the tracker's rule (its clock does
         * not move for such a record), so one file gives one number */
        if (in->cur.ts_us < in->last_us)
            in->time_backwards++;
        if (in->cur.ts_us > in->last_us)
            in->last_us = in->cur.ts_us;
    }
    if (in->cur.caplen == 0 || in->cur.caplen > in->cur.wirelen ||
        in->cur.wirelen > CAP_MAX_WIRE_LEN)
        in->bad_lengths++;
    in->packets++;
    in->bytes += in->cur.caplen;
}

/* Report the first input error not yet reported. 1 if there was one. */
static int take_pending_error(cap_source *src, char *err, size_t err_size)
{
    for (size_t i = 0; src->errors_pending > 0 && i < src->n; i++) {
        if (src->inputs[i].error_pending) {
            src->inputs[i].error_pending = 0;
            src->errors_pending--;
            set_err(err, err_size, "%s", src->info[i].error);
            return 1;
        }
    }
    return 0;
}

/* Next live record (timeouts are waited through). */
static int live_next(cap_source *src, cap_record *rec, char *err, size_t err_size)
{
    struct pcap_pkthdr *hdr;
    const u_char *data;
    while (!src->stop) {
        int r = pcap_next_ex(src->live, &hdr, &data);
        if (r == 0)
            continue;
        if (r == PCAP_ERROR_BREAK)
            return 0;
        if (r != 1) {
            set_err(err, err_size, "'%s': %s", src->info[0].name, pcap_geterr(src->live));
            return -1;
        }
        rec->linktype = src->info[0].linktype;
        rec->ts_us = record_time_us(hdr);
        rec->data = data;
        rec->caplen = hdr->caplen;
        rec->wirelen = hdr->len;
        src->info[0].packets++;
        src->info[0].bytes += hdr->caplen;
        return 1;
    }
    return 0;
}

/* Next file record in merged order, left in its input: 1 and *rec pointing
 * at it, 0 at the end, -1 on an error. The input whose record was handed out
 * last stays at the heap's root until this call reads its next record (its
 * buffer was valid until now). */
static int files_next(cap_source *src, const cap_record **rec, char *err, size_t err_size)
{
    uint32_t i;
    src->used_next = 1;
    if (!src->primed) {
        src->primed = 1;
        for (uint32_t k = 0; k < src->n; k++) {
            src->inputs[k].cur.linktype = src->info[k].linktype;
            if (src->lazy ? src->inputs[k].parked || src->inputs[k].kept : input_advance(src, k))
                heap_push(src, k);
        }
    } else if (src->handed_out) {
        if (!input_advance(src, src->heap[0])) {
            if (src->lazy) { /* its descriptor for the next file */
                src->inputs[src->heap[0]].finished = 1;
                close_input(&src->inputs[src->heap[0]]);
            }
            heap_drop_root(src);
        } else if (src->heap_n > 1) {
            heap_sift_down(src);
        }
    }
    src->handed_out = 0;
    /* lazy: the earliest record is a parked file's first: open it now */
    while (src->heap_n > 0 && src->inputs[src->heap[0]].parked)
        if (unpark(src, src->heap[0]) != 0)
            heap_drop_root(src);
    if (src->errors_pending > 0 && take_pending_error(src, err, err_size))
        return -1;
    if (src->heap_n == 0)
        return 0;
    i = src->heap[0];
    input_count(src, i);
    *rec = &src->inputs[i].cur;
    src->handed_out = 1;
    return 1;
}

/* Next record in merged order: 1 got one, 0 end of input, -1 error. */
int cap_source_next(cap_source *src, cap_record *rec, char *err, size_t err_size)
{
    const cap_record *r;
    int rc;
    if (src->live != NULL)
        return live_next(src, rec, err, err_size);
    rc = files_next(src, &r, err, err_size);
    if (rc == 1)
        *rec = *r;
    return rc;
}

/* Hand one record to the run's tracker, or to its callback. */
static void deliver(cap_source *src, const cap_record *rec)
{
    if (src->run_tracker != NULL)
        cap_tracker_packet(src->run_tracker, rec->linktype, rec->ts_us, rec->data, rec->caplen,
                           rec->wirelen);
    else
        src->run_fn(src->run_ctx, rec);
}

/* Report the live handle's drop counters to the tracker (as increments), if
 * the run has one, and to the input's info. */
static void live_update_drops(cap_source *src, cap_tracker *t)
{
    struct pcap_stat ps;
    if (pcap_stats(src->live, &ps) != 0)
        return;
    if (t != NULL && ps.ps_drop >= src->last_stat.ps_drop &&
        ps.ps_ifdrop >= src->last_stat.ps_ifdrop)
        cap_tracker_add_drops(t, ps.ps_drop - src->last_stat.ps_drop,
                              ps.ps_ifdrop - src->last_stat.ps_ifdrop);
    src->last_stat = ps;
    src->info[0].kernel_drops = ps.ps_drop;
    src->info[0].if_drops = ps.ps_ifdrop;
    src->info[0].drops_recorded = 1;
}

/* pcap_dispatch callback: one live record into the tracker. */
static void live_packet(u_char *user, const struct pcap_pkthdr *hdr, const u_char *data)
{
    cap_source *src = (cap_source *)user;
    int64_t ts = record_time_us(hdr);
    cap_input_info *info = &src->info[0];
    cap_record rec = {.linktype = info->linktype, .ts_us = ts, .data = data,
                      .caplen = hdr->caplen, .wirelen = hdr->len};
    if (info->packets == 0)
        info->first_us = ts;
    info->last_us = ts;
    info->packets++;
    info->bytes += hdr->caplen;
    if (src->tap != NULL)
        src->tap(src->tap_ctx, &rec);
    deliver(src, &rec);
}

/* With a tap: wait for packets at most LIVE_TIMEOUT_MS (libpcap's own wait
 * on Linux's TPACKET_V3 ring has no end while nothing comes: poll(-1)), so
 * that the tap sees the clock move on an idle link. 1 when packets may be
 * there, 0 when the wait ended without, -1 when the descriptor failed. A
 * signal ends the wait (no SA_RESTART: stop.c) and the loop sees the stop. */
static int live_wait(int fd)
{
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int r = poll(&pf, 1, LIVE_TIMEOUT_MS);
    if (r < 0)
        return errno == EINTR ? 0 : -1;
    return r > 0;
}

/* Live run: dispatch until a break or an error, reporting drops as we go. */
static int live_run(cap_source *src, cap_tracker *t, char *err, size_t err_size)
{
    char errbuf[PCAP_ERRBUF_SIZE];
    int rc = 0, fd = -1;
    if (src->tap != NULL && pcap_setnonblock(src->live, 1, errbuf) == 0)
        fd = pcap_get_selectable_fd(src->live);
    src->run_tracker = t;
    while (!src->stop) {
        int n, ready = fd >= 0 ? live_wait(fd) : 1;
        if (ready < 0) {
            set_err(err, err_size, "'%s': %s", src->info[0].name, strerror(errno));
            rc = -1;
            break;
        }
        n = ready ? pcap_dispatch(src->live, -1, live_packet, (u_char *)src) : 0;
        if (n == PCAP_ERROR_BREAK)
            break;
        if (n < 0) {
            set_err(err, err_size, "'%s': %s", src->info[0].name, pcap_geterr(src->live));
            rc = -1;
            break;
        }
        live_update_drops(src, t);
        if (src->tap != NULL)
            src->tap(src->tap_ctx, NULL);
        if (src->run_fn != NULL)
            src->run_fn(src->run_ctx, NULL); /* a live read returned */
    }
    live_update_drops(src, t);
    src->run_tracker = NULL;
    if (fd >= 0)
        pcap_setnonblock(src->live, 0, errbuf);
    if (rc == 0 && src->stop)
        rc = 1;
    return rc;
}

/* pcap_dispatch callback of a single-file run: count the record like
 * input_count does, and feed it to the tracker. */
static void single_packet(u_char *user, const struct pcap_pkthdr *hdr, const u_char *data)
{
    cap_source *src = (cap_source *)user;
    input *in = &src->inputs[0];
    in->cur.ts_us = record_time_us(hdr) + in->offset_us;
    in->cur.caplen = hdr->caplen;
    in->cur.wirelen = hdr->len;
    input_count(src, 0);
    if (src->run_tracker != NULL) {
        cap_tracker_packet(src->run_tracker, in->cur.linktype, in->cur.ts_us, data, hdr->caplen,
                           hdr->len);
    } else {
        in->cur.data = data;
        src->run_fn(src->run_ctx, &in->cur);
    }
}

/* One file: libpcap's own loop calls us per record, with no merge between
 * (the common case, and the cheapest). */
static int single_run(cap_source *src, cap_tracker *t, char *err, size_t err_size)
{
    input *in = &src->inputs[0];
    int n;
    src->run_tracker = t;
    in->cur.linktype = src->info[0].linktype;
    do {
        n = pcap_dispatch(in->pcap, -1, single_packet, (u_char *)src);
    } while (n > 0 && !src->stop);
    if (n == PCAP_ERROR && switch_to_pcapng(src, 0)) {
        while (!src->stop && ng_advance(src, 0)) {
            input_count(src, 0);
            deliver(src, &in->cur);
        }
        n = src->stop ? PCAP_ERROR_BREAK : 0;
    }
    src->run_tracker = NULL;
    stream_drops(src, 0);
    if (n == PCAP_ERROR)
        record_failed(src, 0, pcap_geterr(in->pcap));
    if (take_pending_error(src, err, err_size))
        return -1;
    return n == PCAP_ERROR_BREAK || src->stop ? 1 : 0;
}

/* One file read by pcapfile.c: a plain loop, no merge. */
static int own_single_run(cap_source *src, cap_tracker *t, char *err, size_t err_size)
{
    input *in = &src->inputs[0];
    src->run_tracker = t;
    in->cur.linktype = src->info[0].linktype;
    while (!src->stop && own_advance(src, 0)) {
        input_count(src, 0);
        if (t != NULL) /* cap_tracker_packet, without the extra call */
            cap_tracker_packet_at(t, t->index + 1, in->cur.linktype, in->cur.ts_us,
                                  in->cur.data, in->cur.caplen, in->cur.wirelen);
        else
            src->run_fn(src->run_ctx, &in->cur);
    }
    src->run_tracker = NULL;
    if (take_pending_error(src, err, err_size))
        return -1;
    return src->stop ? 1 : 0;
}

/* Read records into the run's tracker or callback until the end, an error,
 * or a break. */
static int run(cap_source *src, cap_tracker *t, char *err, size_t err_size)
{
    int failed = 0;
    const cap_record *rec;
    if (src->live != NULL)
        return live_run(src, t, err, err_size);
    if (src->n == 1 && !src->used_next)
        return src->inputs[0].own ? own_single_run(src, t, err, err_size)
                                  : single_run(src, t, err, err_size);
    src->run_tracker = t;
    while (!src->stop) {
        int r = failed ? files_next(src, &rec, NULL, 0) : files_next(src, &rec, err, err_size);
        if (r == 0)
            break;
        if (r < 0) {
            failed = 1; /* keep the first message; read the other files on */
            continue;
        }
        deliver(src, rec);
    }
    src->run_tracker = NULL;
    if (failed)
        return -1;
    return src->stop ? 1 : 0;
}

/* Read records into the tracker until the end, an error, or a break. */
int cap_source_run(cap_source *src, cap_tracker *t, char *err, size_t err_size)
{
    src->run_fn = NULL;
    src->run_ctx = NULL;
    int rc = run(src, t, err, err_size);
    /* the drops capture files record (pcapng statistics) to the tracker, as
     * a live handle's go there as they come: the counters then say what the
     * inputs do, as with threads (run/, which adds the inputs' drops) */
    if (src->live == NULL && t != NULL)
        for (uint32_t i = 0; i < src->n; i++)
            cap_tracker_add_drops(t, src->info[i].kernel_drops, src->info[i].if_drops);
    return rc;
}

/* The same, each record to fn. */
int cap_source_run_records(cap_source *src, cap_record_fn fn, void *ctx, char *err,
                           size_t err_size)
{
    int rc;
    src->run_fn = fn;
    src->run_ctx = ctx;
    rc = run(src, NULL, err, err_size);
    src->run_fn = NULL;
    src->run_ctx = NULL;
    return rc;
}

/* Chunk mode (see capture.h): only for one file read by pcapfile.c, before
 * its first record. */
int cap_source_chunks(cap_source *src, unsigned slots, cap_chunk_fn fn, void *ctx)
{
    input *in;
    if (src->live != NULL || src->n != 1 || src->used_next || src->primed)
        return 0;
    in = &src->inputs[0];
    if (!in->own || in->packets > 0 || in->pcap != NULL)
        return 0;
    return cap_pcapfile_chunks(&in->pf, slots, fn, ctx) == 0;
}

/* Read chunk k (see capture.h). */
int cap_source_fill_chunk(cap_source *src, uint64_t k)
{
    return cap_pcapfile_fill_chunk(&src->inputs[0].pf, k);
}

/* The tap of a live run (see capture.h). */
void cap_source_set_tap(cap_source *src, cap_record_fn fn, void *ctx)
{
    src->tap = fn;
    src->tap_ctx = ctx;
}

/* Ask cap_source_run to return soon: async-signal-safe (a flag, and
 * pcap_breakloop, which only sets a flag and wakes the poll). */
void cap_source_break(cap_source *src)
{
    src->stop = 1;
    if (src->live != NULL)
        pcap_breakloop(src->live);
    else if (src->n == 1 && src->inputs[0].pcap != NULL)
        pcap_breakloop(src->inputs[0].pcap); /* a single-file run's loop */
}

/* Why pcap_activate failed with rc, once: libpcap's status text and its
 * handle error often say the same thing ("No such device exists"), and the
 * handle error may start with the interface name, which the caller already
 * gives. Writes "status", "detail" (when it contains the status) or
 * "status: detail" to buf. */
static void activate_error_text(pcap_t *p, int rc, const char *iface, char *buf, size_t size)
{
    const char *status = pcap_statustostr(rc);
    const char *detail = pcap_geterr(p);
    size_t n = strlen(iface);
    if (detail == NULL)
        detail = "";
    if (strncmp(detail, iface, n) == 0 && detail[n] == ':' && detail[n + 1] == ' ')
        detail += n + 2; /* "eth9: ..." */
    if (*detail == '\0' || strcmp(detail, status) == 0)
        snprintf(buf, size, "%s", status);
    else if (strstr(detail, status) != NULL)
        snprintf(buf, size, "%s", detail);
    else
        snprintf(buf, size, "%s: %s", status, detail);
}

/* Apply the options to a created live handle and activate it. 0 on success,
 * -1 with err set. */
static int live_activate(pcap_t *p, const cap_live_opts *opts, char *err, size_t err_size)
{
    int snaplen = opts->snaplen > 0 ? opts->snaplen : LIVE_SNAPLEN_DEFAULT;
    int rc;
    pcap_set_snaplen(p, snaplen);
    pcap_set_promisc(p, opts->promisc ? 1 : 0);
    pcap_set_timeout(p, LIVE_TIMEOUT_MS);
    if (opts->buffer_mb > 0 && opts->buffer_mb <= 2047)
        pcap_set_buffer_size(p, opts->buffer_mb * 1024 * 1024);
    rc = pcap_activate(p);
    if (rc < 0) {
        char why[PCAP_ERRBUF_SIZE + 64];
        activate_error_text(p, rc, opts->iface, why, sizeof why);
        set_err(err, err_size, "cannot open interface '%s': %s", opts->iface, why);
        return -1;
    }
    if (rc > 0) {
        char why[PCAP_ERRBUF_SIZE + 64];
        activate_error_text(p, rc, opts->iface, why, sizeof why);
        fprintf(stderr, "slotscope: warning: '%s': %s\n", opts->iface, why);
    }
    return 0;
}

/* Compile and set the BPF filter. 0 on success, -1 with err set. */
static int live_filter(pcap_t *p, const char *filter, char *err, size_t err_size)
{
    struct bpf_program prog;
    if (filter == NULL || *filter == '\0')
        return 0;
    if (pcap_compile(p, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) != 0) {
        set_err(err, err_size, "bad filter '%s': %s", filter, pcap_geterr(p));
        return -1;
    }
    if (pcap_setfilter(p, &prog) != 0) {
        set_err(err, err_size, "cannot set filter '%s': %s", filter, pcap_geterr(p));
        pcap_freecode(&prog);
        return -1;
    }
    pcap_freecode(&prog);
    return 0;
}

/* Open a live interface. */
cap_source *cap_open_live(const cap_live_opts *opts, char *err, size_t err_size)
{
    char errbuf[PCAP_ERRBUF_SIZE] = "";
    cap_source *src;
    if (opts == NULL || opts->iface == NULL || *opts->iface == '\0') {
        set_err(err, err_size, "no interface given");
        return NULL;
    }
    src = source_alloc(1, 0);
    if (src == NULL) {
        set_err(err, err_size, "out of memory");
        return NULL;
    }
    src->live = pcap_create(opts->iface, errbuf);
    if (src->live == NULL) {
        set_err(err, err_size, "cannot open interface '%s': %s", opts->iface, errbuf);
        cap_source_free(src);
        return NULL;
    }
    if (live_activate(src->live, opts, err, err_size) != 0 ||
        live_filter(src->live, opts->filter, err, err_size) != 0) {
        cap_source_free(src);
        return NULL;
    }
    describe_input(&src->info[0], opts->iface, pcap_datalink(src->live));
    if (!cap_linktype_supported(src->info[0].linktype)) {
        unsupported_linktype(opts->iface, src->info[0].linktype, err, err_size);
        cap_source_free(src);
        return NULL;
    }
    return src;
}

/* Shift input i's record times (see capture.h). A parked input's waiting
 * record was read with the old offset. */
void cap_source_set_offset(cap_source *src, size_t i, int64_t offset_us)
{
    input *in;
    if (src->inputs == NULL || i >= src->n)
        return;
    in = &src->inputs[i];
    if (in->parked || in->kept)
        in->cur.ts_us += offset_us - in->offset_us;
    in->offset_us = offset_us;
    src->info[i].time_offset_us = offset_us;
}

/* Note input i's estimated skew (see capture.h). */
void cap_source_set_skew(cap_source *src, size_t i, size_t ref, int64_t skew_us,
                         uint64_t shared)
{
    if (i >= src->n || ref >= src->n)
        return;
    src->info[i].skew_us = skew_us;
    src->info[i].skew_shared = shared;
    src->info[i].skew_ref = (uint32_t)ref + 1;
}

/* Close and free. */
void cap_source_free(cap_source *src)
{
    if (src == NULL)
        return;
    for (size_t i = 0; src->inputs != NULL && i < src->n; i++)
        close_input(&src->inputs[i]);
    if (src->live != NULL)
        pcap_close(src->live);
    free(src->inputs);
    free(src->info);
    free(src->heap);
    free(src);
}

/* The inputs and what was read from each. File counters live in the input
 * records (hot) and are copied into the info records here; the source is
 * never a const object, so writing through the cast is sound. */
const cap_input_info *cap_source_inputs(const cap_source *src, size_t *n)
{
    cap_input_info *info = ((cap_source *)src)->info;
    for (size_t i = 0; src->inputs != NULL && i < src->n; i++) {
        const input *in = &src->inputs[i];
        info[i].packets = in->packets;
        info[i].bytes = in->bytes;
        info[i].first_us = in->first_us;
        info[i].last_us = in->last_us;
        info[i].time_backwards = in->time_backwards;
        info[i].bad_lengths = in->bad_lengths;
    }
    *n = src->n;
    return info;
}

/* Bytes read so far and total bytes of the input files (0 total when live). */
void cap_source_progress(const cap_source *src, uint64_t *done, uint64_t *total)
{
    *done = 0;
    *total = 0;
    if (src->live != NULL) {
        *done = src->info[0].bytes;
        return;
    }
    for (size_t i = 0; i < src->n; i++) {
        FILE *fp = src->inputs[i].pcap ? pcap_file(src->inputs[i].pcap) : NULL;
        long pos = fp ? ftell(fp) : -1;
        *total += src->inputs[i].size;
        if (src->inputs[i].finished)
            *done += src->inputs[i].size;
        else if (src->inputs[i].stream)
            *done += cap_infile_offset(src->inputs[i].stream);
        else if (src->inputs[i].ng)
            *done += src->inputs[i].ng->offset;
        else if (src->inputs[i].own)
            *done += src->inputs[i].pf.consumed;
        else if (pos > 0)
            *done += (uint64_t)pos;
    }
}
