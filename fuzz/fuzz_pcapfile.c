/*
 * fuzz_pcapfile.c - fuzz target: capture files through cap_open_files.
 *
 * Input: a pcap or pcapng file (pcap-savefile(5); pcapng:
 * draft-ietf-opsawg-pcapng). Where fuzz_pcap parses records itself to be fast,
 * this target goes the way `slotscope analyze` goes: the bytes are put in an
 * in-memory file (memfd, no disk), opened by path with cap_open_files and read
 * with cap_source_run into the tracker, resp/ and analysis/. So it covers
 * capture/pcapfile.c, which reads classic pcap files of either byte order and
 * timestamp precision in place (a 64 KiB buffer when two files are merged, so
 * large records grow it), libpcap for everything else (pcapng blocks, other
 * versions and link types), the error paths (truncated record, bad header,
 * absurd lengths) and the merge of several files by time.
 *
 * Merge: an input that starts with "SSM2" and a little-endian 32-bit offset is
 * two files, the bytes before the offset and the bytes after it (offset counted
 * after the 8-byte prefix, cut to the input's length).
 *
 * Checked besides memory: cap_open_files gives NULL only with a message;
 * cap_source_run returns -1 only with a message; every input's texts are
 * NUL-terminated; no more records are counted than the bytes allow; nothing is
 * live after cap_tracker_finish. And each file pcapfile.c reads is read once
 * more straight through it with a tiny buffer (24 to 534 bytes, from the
 * input's size), so that records straddle the buffer's end and outgrow it:
 * the same number of records and the same end as through cap_source, every
 * record inside the buffer and within the snap length.
 */
#define _GNU_SOURCE /* memfd_create */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/internal.h"
#include "fuzz/fuzz.h"

/* One in-memory file, created once per process and rewritten per input. */
typedef struct memfile {
    int fd;
    char path[64];
} memfile;

/* Replace the contents of f with data[0..size); create it on first use. */
static void memfile_put(memfile *f, const char *name, const uint8_t *data, size_t size)
{
    if (f->fd <= 0) {
        f->fd = memfd_create(name, 0);
        SS_FUZZ_CHECK(f->fd >= 0);
        snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    }
    SS_FUZZ_CHECK(ftruncate(f->fd, 0) == 0);
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(f->fd, data + done, size - done, (off_t)done);
        SS_FUZZ_CHECK(n > 0);
        done += (size_t)n;
    }
}

/* Read the file at path again with cap_pcapfile and a buffer of bufsize
 * bytes (if it is a file cap_pcapfile reads): it must give as many records
 * as cap_source counted (packets) and fail exactly when cap_source reported
 * an error for it (failed). */
static void small_buffer_pass(const char *path, size_t bufsize, uint64_t packets, int failed)
{
    cap_pcapfile pf;
    cap_pcapfile_rec rec;
    uint64_t n = 0;
    int r;
    int fd = open(path, O_RDONLY);
    SS_FUZZ_CHECK(fd >= 0);
    if (cap_pcapfile_open(&pf, fd, bufsize) == 1) {
        while ((r = cap_pcapfile_next(&pf, &rec)) == 1) {
            SS_FUZZ_CHECK(rec.caplen <= CAP_PCAPFILE_MAX_CAPLEN && rec.caplen <= pf.snapshot);
            SS_FUZZ_CHECK(rec.data >= pf.buf && rec.data + rec.caplen <= pf.buf + pf.end);
            n++;
        }
        SS_FUZZ_CHECK(n == packets);
        SS_FUZZ_CHECK((r < 0) == failed);
        SS_FUZZ_CHECK(r == 0 || ss_fuzz_has_nul(pf.errbuf, sizeof pf.errbuf));
    }
    cap_pcapfile_close(&pf);
    close(fd);
}

/* The tracker's callback: pass events on to resp/. */
static void on_event(void *ctx, const cap_event *ev)
{
    ss_fuzz_pipe *pipe = ctx;
    SS_FUZZ_CHECK(ev->conn != NULL);
    resp_on_capture_event(pipe->rp, ev);
}

int ss_fuzz_pcapfile(const uint8_t *data, size_t size)
{
    static memfile files[2];
    const uint8_t *part[2] = {data, NULL};
    size_t part_len[2] = {size, 0};
    size_t n_files = 1;

    if (size >= 8 && memcmp(data, "SSM2", 4) == 0) {
        size_t cut = (size_t)data[4] | (size_t)data[5] << 8 | (size_t)data[6] << 16 |
                     (size_t)data[7] << 24;
        if (cut > size - 8)
            cut = size - 8;
        part[0] = data + 8;
        part_len[0] = cut;
        part[1] = data + 8 + cut;
        part_len[1] = size - 8 - cut;
        n_files = 2;
    }
    const char *paths[2];
    for (size_t i = 0; i < n_files; i++) {
        memfile_put(&files[i], i ? "fuzz_pcapfile_b" : "fuzz_pcapfile_a", part[i],
                    part_len[i]);
        paths[i] = files[i].path;
    }

    char err[256] = "";
    cap_source *src = cap_open_files(paths, n_files, err, sizeof err);
    if (!src) {
        SS_FUZZ_CHECK(err[0] != '\0');
        SS_FUZZ_CHECK(ss_fuzz_has_nul(err, sizeof err));
        return 0;
    }

    ss_fuzz_pipe pipe;
    ss_fuzz_pipe_init(&pipe, size & 3);
    cap_config cfg;
    ss_fuzz_cap_config(&cfg);
    cap_tracker *t = cap_tracker_new(&cfg, on_event, &pipe);
    SS_FUZZ_CHECK(t != NULL);

    err[0] = '\0';
    int rc = cap_source_run(src, t, err, sizeof err);
    SS_FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc == -1)
        SS_FUZZ_CHECK(err[0] != '\0' && ss_fuzz_has_nul(err, sizeof err));

    size_t n_inputs = 0;
    const cap_input_info *in = cap_source_inputs(src, &n_inputs);
    SS_FUZZ_CHECK(n_inputs == n_files);
    int64_t end_us = 0;
    uint64_t records = 0;
    for (size_t i = 0; i < n_inputs; i++) {
        SS_FUZZ_CHECK(ss_fuzz_has_nul(in[i].name, sizeof in[i].name));
        SS_FUZZ_CHECK(ss_fuzz_has_nul(in[i].error, sizeof in[i].error));
        SS_FUZZ_CHECK(ss_fuzz_has_nul(in[i].linktype_name, sizeof in[i].linktype_name));
        /* a pcap record takes at least 16 bytes, a pcapng block 12 */
        SS_FUZZ_CHECK(in[i].packets <= part_len[i] / 12);
        records += in[i].packets;
        if (in[i].last_us > end_us)
            end_us = in[i].last_us;
    }
    uint64_t done = 0, total = 0;
    cap_source_progress(src, &done, &total);
    SS_FUZZ_CHECK(done <= total);
    for (size_t i = 0; i < n_inputs; i++)
        small_buffer_pass(paths[i], 24 + size % 511, in[i].packets, in[i].error[0] != '\0');

    cap_tracker_finish(t, end_us);
    SS_FUZZ_CHECK(cap_tracker_live(t) == 0);
    SS_FUZZ_CHECK(cap_tracker_stats(t)->packets == records);
    ss_fuzz_pipe_finish(&pipe, end_us);
    cap_tracker_free(t);
    cap_source_free(src);
    return 0;
}

#ifndef SS_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return ss_fuzz_pcapfile(data, size);
}
#endif
