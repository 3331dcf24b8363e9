/*
 * pcapfile.c - classic pcap files read in place.
 *
 * libpcap reads a savefile with two fread calls per record, copying every
 * record header and every record body out of the stdio buffer into its own
 * packet buffer. Here the file is read(2) straight into one large buffer and
 * records are handed out where they lie: a record cut by the end of the
 * buffer is moved to the front before the next read, nothing else is copied.
 * In chunk mode (cap_pcapfile_chunks, for a reader thread whose consumer
 * uses the bytes later and shares the reading) the file is read with pread
 * in fixed chunks into several slots in turn, by either thread, and the cut
 * record is copied in front of the next chunk instead: handed-out bytes
 * stay put until their slot is read into again.
 *
 * The format is pcap-savefile(5): a 24-byte file header (magic, version 2.4,
 * thiszone, sigfigs, snaplen, link type), then records of a 16-byte header
 * (seconds, microseconds or nanoseconds, captured length, wire length) and
 * the captured bytes. A file written in the other byte order has every
 * header field swapped.
 *
 * What a record turns into must be exactly what libpcap 1.10 gives with
 * PCAP_TSTAMP_PRECISION_MICRO, errors and their texts included (source.c
 * reports them the same way for either reader):
 *   - the time fields are signed 32-bit in a file of this machine's byte
 *     order, but unsigned in a swapped one (libpcap's byte swap gives an
 *     unsigned value); nanoseconds are divided by 1000, truncated toward
 *     zero (a C division, as libpcap does it);
 *   - a captured length above the link type's maximum (262144 for every type
 *     read here) is an error: "invalid packet capture length N, bigger than
 *     snaplen of S" (or "maximum of 262144" when the snap length is larger);
 *   - a captured length above the file's snap length but not above that
 *     maximum is read whole, and handed out cut to the snap length;
 *   - a file that ends inside a record header or body is a "truncated dump
 *     file; tried to read N ... bytes, only got M" error; one that ends
 *     between records is the normal end.
 * The snap length libpcap 1.10.3 uses is the file's, except 0 or one that is
 * negative as a signed 32-bit number, which become the maximum (found by
 * experiment: 262145 and 2^31-1 are kept as they are). Anything this reader does not know the meaning
 * of (other versions, other magics, link types capture/ does not decode,
 * where libpcap may map values or fix up pseudo-headers) is left to libpcap.
 */
#include <errno.h>
#include <pcap/dlt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/internal.h"

/* Magic numbers of pcap-savefile(5), as read in the file's own byte order. */
#define MAGIC_USEC 0xa1b2c3d4u
#define MAGIC_NSEC 0xa1b23c4du
/* The only version read here (libpcap writes 2.4 since 1998). */
#define VERSION_MAJOR 2
#define VERSION_MINOR 4
/* Sizes of the file header and of a record header. */
#define FILE_HEADER_LEN 24
#define RECORD_HEADER_LEN 16
/* The link type field: the low 26 bits are the LINKTYPE_ value, the upper
 * bits say whether frames carry an FCS (libpcap's LT_LINKTYPE). */
#define LINKTYPE_MASK 0x03FFFFFFu

/* LINKTYPE_ values (www.tcpdump.org/linktypes.html) and the DLT_ value
 * libpcap gives each: the same number except LINKTYPE_RAW. Only link types
 * capture/ decodes are listed; any other goes to libpcap. */
static const struct {
    uint32_t linktype;
    int dlt;
} linktypes[] = {
    {0, DLT_NULL},   {1, DLT_EN10MB},      {101, DLT_RAW},   {108, DLT_LOOP},
    {113, DLT_LINUX_SLL}, {276, DLT_LINUX_SLL2}, {228, DLT_IPV4}, {229, DLT_IPV6},
};

/* x with its bytes in the other order. */
static uint32_t swap32(uint32_t x)
{
    return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

/* The 32-bit field at p, in the file's byte order. */
static uint32_t field32(const cap_pcapfile *f, const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return f->swapped ? swap32(v) : v;
}

/* The 16-bit field at p, in the file's byte order. */
static uint16_t field16(const cap_pcapfile *f, const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return f->swapped ? (uint16_t)((v >> 8) | (v << 8)) : v;
}

/* The DLT_ value of a LINKTYPE_ value, or -1 when it is not one read here. */
static int linktype_to_dlt(uint32_t linktype)
{
    for (size_t i = 0; i < sizeof linktypes / sizeof linktypes[0]; i++)
        if (linktypes[i].linktype == linktype)
            return linktypes[i].dlt;
    return -1;
}

/* Chunk mode: go on in the next chunk (see internal.h), read by then; the
 * unread end of the buffer, less than a record (need <=
 * CAP_PCAPFILE_HEADROOM), is copied in front of it. A short chunk is the end
 * of the file or a read error, as a short read(2) would be. */
static void next_chunk(cap_pcapfile *f)
{
    uint64_t k = f->next_chunk++;
    unsigned slot = (unsigned)(k % f->n_slots);
    size_t have = f->end - f->pos;
    f->chunk_fn(f->chunk_ctx, k);
    memcpy(f->slot_buf[slot] + CAP_PCAPFILE_HEADROOM - have, f->buf + f->pos, have);
    f->buf = f->slot_buf[slot];
    f->size = CAP_PCAPFILE_HEADROOM + f->chunk;
    f->pos = CAP_PCAPFILE_HEADROOM - have;
    f->end = CAP_PCAPFILE_HEADROOM + f->slot_got[slot];
    if (f->slot_got[slot] < f->chunk) {
        if (f->slot_errno[slot] != 0)
            f->read_errno = f->slot_errno[slot];
        else
            f->eof = 1;
    }
}

/* Make room for need bytes from pos: move the unread tail to the front, and
 * grow the buffer when even a whole one is too small (a record is at most
 * RECORD_HEADER_LEN + CAP_PCAPFILE_MAX_CAPLEN bytes, which bounds it).
 * 0 on success, -1 out of memory. */
static int make_room(cap_pcapfile *f, size_t need)
{
    size_t have = f->end - f->pos;
    if (need > f->size) {
        uint8_t *bigger = realloc(f->buf, need);
        if (bigger == NULL)
            return -1;
        f->buf = bigger;
        f->size = need;
    }
    if (f->pos > 0) {
        memmove(f->buf, f->buf + f->pos, have);
        f->pos = 0;
        f->end = have;
    }
    return 0;
}

/* Read until need bytes from pos are in the buffer, the file ends or a read
 * fails (read_errno). Returns the bytes available from pos (fewer than need
 * only then), or -1 out of memory. */
static long fill(cap_pcapfile *f, size_t need)
{
    while (f->end - f->pos < need && !f->eof && f->read_errno == 0) {
        ssize_t n;
        if (f->n_slots > 0) {
            next_chunk(f);
            continue;
        }
        if (f->pos + need > f->size && make_room(f, need) != 0)
            return -1;
        n = f->stream ? cap_infile_read(f->stream, f->buf + f->end, f->size - f->end)
                      : read(f->fd, f->buf + f->end, f->size - f->end);
        if (n > 0)
            f->end += (size_t)n;
        else if (n == 0)
            f->eof = 1;
        else if (errno != EINTR)
            f->read_errno = errno;
    }
    return (long)(f->end - f->pos);
}

/* Read the file header (of f->fd or f->stream): 1 when it is one read here. */
static int open_common(cap_pcapfile *f, size_t bufsize)
{
    uint32_t magic;
    if (bufsize < FILE_HEADER_LEN)
        bufsize = FILE_HEADER_LEN;
    f->buf = malloc(bufsize);
    if (f->buf == NULL)
        return 0;
    f->size = bufsize;
    if (f->stream != NULL) {
        /* the header is peeked: on "not mine" libpcap reads it again */
        if (cap_infile_peek(f->stream, f->buf, FILE_HEADER_LEN) < FILE_HEADER_LEN)
            return 0;
    } else if (fill(f, FILE_HEADER_LEN) < FILE_HEADER_LEN) {
        return 0; /* short or unreadable: libpcap says how */
    }
    memcpy(&magic, f->buf, sizeof magic);
    if (magic == swap32(MAGIC_USEC) || magic == swap32(MAGIC_NSEC)) {
        f->swapped = 1;
        magic = swap32(magic);
    }
    if (magic != MAGIC_USEC && magic != MAGIC_NSEC)
        return 0;
    f->nsec = magic == MAGIC_NSEC;
    if (field16(f, f->buf + 4) != VERSION_MAJOR || field16(f, f->buf + 6) != VERSION_MINOR)
        return 0;
    f->dlt = linktype_to_dlt(field32(f, f->buf + 20) & LINKTYPE_MASK);
    if (f->dlt < 0)
        return 0;
    f->snapshot = field32(f, f->buf + 16);
    if ((int32_t)f->snapshot <= 0)
        f->snapshot = CAP_PCAPFILE_MAX_CAPLEN;
    if (f->stream != NULL && cap_infile_read(f->stream, f->buf, FILE_HEADER_LEN) < FILE_HEADER_LEN)
        return 0; /* the peeked header, taken now */
    f->pos = FILE_HEADER_LEN;
    f->end = f->stream != NULL ? FILE_HEADER_LEN : f->end;
    f->consumed = FILE_HEADER_LEN;
    return 1;
}

/* Start reading a file: its header decides whether it is one read here. */
int cap_pcapfile_open(cap_pcapfile *f, int fd, size_t bufsize)
{
    memset(f, 0, sizeof *f);
    f->fd = fd;
    return open_common(f, bufsize);
}

/* The same over a stream. */
int cap_pcapfile_open_stream(cap_pcapfile *f, cap_infile *stream, size_t bufsize)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->stream = stream;
    return open_common(f, bufsize);
}

/* Set f->errbuf for a record that could not be read whole: the read error,
 * or libpcap's truncation text (what it tried to read, what it got). -1. */
static int record_cut(cap_pcapfile *f, const char *what, uint32_t wanted, long got)
{
    if (f->stream != NULL && cap_infile_error(f->stream)[0] != '\0')
        snprintf(f->errbuf, sizeof f->errbuf, "%s", cap_infile_error(f->stream));
    else if (f->read_errno != 0)
        snprintf(f->errbuf, sizeof f->errbuf, "error reading dump file: %s",
                 strerror(f->read_errno));
    else
        snprintf(f->errbuf, sizeof f->errbuf,
                 "truncated dump file; tried to read %u %s bytes, only got %ld", wanted, what,
                 got);
    return -1;
}

/* The next record, handed out in place. */
int cap_pcapfile_next(cap_pcapfile *f, cap_pcapfile_rec *rec)
{
    const uint8_t *h;
    uint32_t caplen;
    long have = (long)(f->end - f->pos);
    if (have < RECORD_HEADER_LEN) {
        have = fill(f, RECORD_HEADER_LEN);
        if (have == 0 && f->read_errno == 0)
            return 0; /* the end, between records */
        if (have < 0)
            return snprintf(f->errbuf, sizeof f->errbuf, "out of memory"), -1;
        if (have < RECORD_HEADER_LEN)
            return record_cut(f, "header", RECORD_HEADER_LEN, have);
    }
    h = f->buf + f->pos;
    caplen = field32(f, h + 8);
    if (caplen > CAP_PCAPFILE_MAX_CAPLEN) {
        if (caplen > f->snapshot)
            snprintf(f->errbuf, sizeof f->errbuf,
                     "invalid packet capture length %u, bigger than snaplen of %u", caplen,
                     f->snapshot);
        else
            snprintf(f->errbuf, sizeof f->errbuf,
                     "invalid packet capture length %u, bigger than maximum of %u", caplen,
                     CAP_PCAPFILE_MAX_CAPLEN);
        return -1;
    }
    if (have < (long)(RECORD_HEADER_LEN + caplen)) {
        have = fill(f, RECORD_HEADER_LEN + (size_t)caplen);
        if (have < 0)
            return snprintf(f->errbuf, sizeof f->errbuf, "out of memory"), -1;
        if (have < (long)(RECORD_HEADER_LEN + caplen)) {
            /* libpcap reads the first snapshot bytes of an oversized record
             * before the rest, and says which read came up short */
            long body = have - RECORD_HEADER_LEN;
            if (caplen > f->snapshot && body < (long)f->snapshot)
                return record_cut(f, "captured", f->snapshot, body);
            return record_cut(f, "captured", caplen, body);
        }
        h = f->buf + f->pos; /* the buffer may have moved */
    }
    if (f->swapped) {
        rec->sec = field32(f, h);
        rec->usec = field32(f, h + 4);
    } else {
        rec->sec = (int32_t)field32(f, h);
        rec->usec = (int32_t)field32(f, h + 4);
    }
    if (f->nsec)
        rec->usec /= 1000;
    rec->len = field32(f, h + 12);
    rec->caplen = caplen > f->snapshot ? f->snapshot : caplen;
    rec->data = h + RECORD_HEADER_LEN;
    f->pos += RECORD_HEADER_LEN + caplen;
    f->consumed += RECORD_HEADER_LEN + caplen;
    return 1;
}

/* Chunk mode (see internal.h). */
int cap_pcapfile_chunks(cap_pcapfile *f, unsigned n, cap_chunk_fn fn, void *ctx)
{
    struct stat st;
    if (n < 2 || n > CAP_PCAPFILE_SLOTS_MAX || f->n_slots > 0 || f->buf == NULL ||
        f->size < CAP_PCAPFILE_HEADROOM || fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    f->chunk = CAP_PCAPFILE_CHUNK;
    for (unsigned i = 0; i < n; i++) {
        f->slot_buf[i] = malloc(CAP_PCAPFILE_HEADROOM + f->chunk);
        if (f->slot_buf[i] == NULL) {
            while (i-- > 0)
                free(f->slot_buf[i]);
            return -1;
        }
    }
    f->first_buf = f->buf;
    f->chunk_base = f->consumed + (f->end - f->pos); /* the next byte to read */
    f->next_chunk = 0;
    f->chunk_fn = fn;
    f->chunk_ctx = ctx;
    f->n_slots = n;
    return 0;
}

/* Read chunk k into its slot with pread: the reading position of the file
 * is not used, so any thread may read any chunk. 1 when the chunk was read
 * whole, 0 when it is short (the end of the file, or a read error). */
int cap_pcapfile_fill_chunk(cap_pcapfile *f, uint64_t k)
{
    unsigned slot = (unsigned)(k % f->n_slots);
    uint8_t *to = f->slot_buf[slot] + CAP_PCAPFILE_HEADROOM;
    uint64_t at = f->chunk_base + k * f->chunk;
    size_t got = 0;
    int err = 0;
    while (got < f->chunk) {
        ssize_t n = pread(f->fd, to + got, f->chunk - got, (off_t)(at + got));
        if (n > 0)
            got += (size_t)n;
        else if (n == 0)
            break;
        else if (errno != EINTR) {
            err = errno;
            break;
        }
    }
    f->slot_got[slot] = got;
    f->slot_errno[slot] = err;
    return got == f->chunk;
}

/* Free the buffer(s). */
void cap_pcapfile_close(cap_pcapfile *f)
{
    if (f->n_slots > 0) {
        for (unsigned i = 0; i < f->n_slots; i++)
            free(f->slot_buf[i]);
        f->n_slots = 0;
        free(f->first_buf);
    } else {
        free(f->buf);
    }
    f->buf = NULL;
    f->size = f->pos = f->end = 0;
}
