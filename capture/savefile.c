/*
 * savefile.c - keep the raw records in pcap files while they are analysed
 * (`live -w FILE -C MB`).
 *
 * The files are classic pcap with microsecond times, written through
 * libpcap's dumper (pcap_dump_fopen on a descriptor opened here, so that the
 * checks below and the write are about the same file). Rotation follows
 * tcpdump's -C: before a record is written, when the current file is larger
 * than the limit, the next file is started: FILE, FILE1, FILE2, ...
 *
 * What may be written over: a path that does not exist, or a regular file
 * that is empty or already a capture (a stale rotation of an earlier run),
 * and never a path to avoid (the run's database: issue 15). The file is
 * opened without O_TRUNC, checked by its descriptor, then truncated, so a
 * file swapped in between the check and the open is never destroyed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/capture.h"

#define SAVE_SNAPLEN_DEFAULT 262144
#define PCAP_FILE_HEADER 24u  /* bytes of a classic pcap file header */
#define PCAP_RECORD_HEADER 16u

struct cap_savefile {
    cap_savefile_opts o;
    char *path;              /* the copy of o.path */
    char **avoid;            /* copies of o.avoid (o.avoid itself is not kept) */
    char name[4096];         /* the current file's path */
    pcap_t *dead;            /* libpcap's handle for the dumper */
    pcap_dumper_t *dumper;   /* the current file, NULL after an error */
    uint64_t file_bytes;     /* written to the current file */
    /* written by the thread that runs the source, read by any (counts) */
    _Atomic uint64_t packets, lost;
    uint32_t files;          /* files started */
    char error[512];
};

/* Format the error once (the first one stays). */
static void set_error(cap_savefile *sf, const char *what, const char *name, const char *why)
{
    /* a long path is cut (the result is looked at, so that is no warning) */
    if (!sf->error[0] && snprintf(sf->error, sizeof sf->error, "%s '%s': %s", what, name, why) < 0)
        sf->error[0] = 0;
}

/* Does the file at fd start like a capture (pcap either byte order, nanosecond
 * pcap, pcapng)? */
static int looks_like_capture(int fd)
{
    static const unsigned char magics[][4] = {
        {0xd4, 0xc3, 0xb2, 0xa1}, {0xa1, 0xb2, 0xc3, 0xd4}, {0x4d, 0x3c, 0xb2, 0xa1},
        {0xa1, 0xb2, 0x3c, 0x4d}, {0x0a, 0x0d, 0x0d, 0x0a}};
    unsigned char head[4];
    if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head)
        return 0;
    for (size_t i = 0; i < sizeof magics / sizeof magics[0]; i++)
        if (!memcmp(head, magics[i], 4))
            return 1;
    return 0;
}

/* Is name (whose file, if it exists, is sb) one of the paths to avoid? */
static const char *avoided(const cap_savefile *sf, const char *name, const struct stat *sb)
{
    struct stat a;
    for (size_t i = 0; i < sf->o.n_avoid; i++) {
        const char *p = sf->avoid[i];
        if (!p)
            continue;
        if (!strcmp(p, name))
            return p;
        if (sb && stat(p, &a) == 0 && a.st_dev == sb->st_dev && a.st_ino == sb->st_ino)
            return p;
    }
    return NULL;
}

/* Open name for writing under the rules at the top: its descriptor, or -1
 * with the error set. */
static int open_checked(cap_savefile *sf, const char *name)
{
    struct stat sb;
    int fd, exists = lstat(name, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) {
        set_error(sf, "cannot write", name,
                  S_ISLNK(sb.st_mode) ? "a symbolic link: not followed" : "not a regular file");
        return -1;
    }
    if (avoided(sf, name, exists ? &sb : NULL)) { /* before O_CREAT makes it */
        set_error(sf, "will not write", name, "it is the database of this run");
        return -1;
    }
    fd = open(name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644); /* read: the magic */
    if (fd < 0) {
        set_error(sf, "cannot create", name, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        set_error(sf, "cannot write", name, "not a regular file");
        close(fd);
        return -1;
    }
    if (avoided(sf, name, &sb)) { /* again: the file opened may not be the one checked */
        set_error(sf, "will not write", name, "it is the database of this run");
        close(fd);
        return -1;
    }
    if (sb.st_size > 0 && !looks_like_capture(fd)) {
        set_error(sf, "will not write over", name, "it exists and is not a capture file");
        close(fd);
        return -1;
    }
    if (ftruncate(fd, 0) != 0) {
        set_error(sf, "cannot truncate", name, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Start file number k (0: FILE, k: FILEk). 0, or -1 with the error set. */
static int start_file(cap_savefile *sf, uint32_t k)
{
    char *name = sf->name;
    FILE *fp;
    int fd;
    if (k == 0)
        snprintf(name, sizeof sf->name, "%s", sf->path);
    else
        snprintf(name, sizeof sf->name, "%s%u", sf->path, k);
    fd = open_checked(sf, name);
    if (fd < 0)
        return -1;
    fp = fdopen(fd, "wb");
    if (!fp) {
        set_error(sf, "cannot write", name, strerror(errno));
        close(fd);
        return -1;
    }
    sf->dumper = pcap_dump_fopen(sf->dead, fp);
    if (!sf->dumper) {
        set_error(sf, "cannot write", name, pcap_geterr(sf->dead));
        fclose(fp);
        return -1;
    }
    sf->file_bytes = PCAP_FILE_HEADER;
    sf->files++;
    return 0;
}

/* Close the current file: 0, or -1 (error set) when its bytes did not all
 * reach the file. */
static int finish_file(cap_savefile *sf)
{
    int rc = 0;
    if (!sf->dumper)
        return 0;
    if (pcap_dump_flush(sf->dumper) != 0) {
        set_error(sf, "cannot write", sf->name, strerror(errno));
        rc = -1;
    }
    pcap_dump_close(sf->dumper);
    sf->dumper = NULL;
    return rc;
}

/* One more (one writer: a relaxed load and store, no locked add). */
static void count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

cap_savefile *cap_savefile_open(const cap_savefile_opts *opts, char *err, size_t err_size)
{
    cap_savefile *sf = calloc(1, sizeof *sf);
    if (!sf || !(sf->path = strdup(opts->path))) {
        free(sf);
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    int copied;
    sf->o = *opts;
    sf->o.avoid = NULL;
    sf->avoid = calloc(opts->n_avoid ? opts->n_avoid : 1, sizeof *sf->avoid);
    copied = sf->avoid != NULL;
    for (size_t i = 0; copied && i < opts->n_avoid; i++)
        if (opts->avoid[i] && !(sf->avoid[i] = strdup(opts->avoid[i])))
            copied = 0;
    if (!copied) {
        snprintf(err, err_size, "out of memory");
        cap_savefile_close(sf, NULL, 0);
        return NULL;
    }
    sf->dead = pcap_open_dead_with_tstamp_precision(
        opts->linktype, opts->snaplen > 0 ? opts->snaplen : SAVE_SNAPLEN_DEFAULT,
        PCAP_TSTAMP_PRECISION_MICRO);
    if (!sf->dead || start_file(sf, 0) != 0) {
        snprintf(err, err_size, "%s", sf->error[0] ? sf->error : "out of memory");
        cap_savefile_close(sf, NULL, 0);
        return NULL;
    }
    return sf;
}

int cap_savefile_write(cap_savefile *sf, const cap_record *rec)
{
    struct pcap_pkthdr h;
    if (!sf->dumper) {
        count(&sf->lost);
        return -1;
    }
    if (sf->o.rotate_bytes && sf->file_bytes > sf->o.rotate_bytes &&
        (finish_file(sf) != 0 || start_file(sf, sf->files) != 0)) {
        finish_file(sf);
        count(&sf->lost);
        return -1;
    }
    h.ts.tv_sec = (time_t)(rec->ts_us / 1000000);
    h.ts.tv_usec = (suseconds_t)(rec->ts_us % 1000000);
    h.caplen = rec->caplen;
    h.len = rec->wirelen;
    pcap_dump((u_char *)sf->dumper, &h, rec->data);
    if (ferror(pcap_dump_file(sf->dumper))) { /* disk full: stdio's flag */
        set_error(sf, "cannot write", sf->name, strerror(errno ? errno : EIO));
        finish_file(sf);
        count(&sf->lost);
        return -1;
    }
    sf->file_bytes += PCAP_RECORD_HEADER + rec->caplen;
    count(&sf->packets);
    return 0;
}

const char *cap_savefile_error(const cap_savefile *sf)
{
    return sf->error;
}

uint64_t cap_savefile_packets(const cap_savefile *sf)
{
    return atomic_load_explicit(&sf->packets, memory_order_relaxed);
}

uint64_t cap_savefile_lost(const cap_savefile *sf)
{
    return atomic_load_explicit(&sf->lost, memory_order_relaxed);
}

uint32_t cap_savefile_files(const cap_savefile *sf)
{
    return sf->files;
}

int cap_savefile_close(cap_savefile *sf, char *err, size_t err_size)
{
    int rc;
    if (!sf)
        return 0;
    finish_file(sf);
    rc = sf->error[0] ? -1 : 0;
    if (rc && err && err_size)
        snprintf(err, err_size, "%s", sf->error);
    if (sf->dead)
        pcap_close(sf->dead);
    for (size_t i = 0; sf->avoid && i < sf->o.n_avoid; i++)
        free(sf->avoid[i]);
    free(sf->avoid);
    free(sf->path);
    free(sf);
    return rc;
}
