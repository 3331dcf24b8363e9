/*
 * infile.c - the bytes of a capture file that is not a plain seekable file:
 * gzip- or zstd-compressed (RFC 1952; RFC 8878), or standard input, a pipe, a
 * FIFO.
 *
 * The kind is told by the first bytes, never by the name: 1f 8b is gzip,
 * 28 b5 2f fd a zstd frame; anything else is read as it is. Decompression
 * streams through two fixed buffers (the compressed input, and whatever the
 * reader asks for), so a file of any size costs the decoder's state only
 * (zlib: its 32 KiB window; zstd: the window the frame declares, at most
 * 2^27 bytes, zstd's own default limit). Several gzip members or zstd frames
 * one after the other are one stream, as gzip -d and zstd -d read them.
 *
 * What the readers need from a pipe or a decoder they cannot get by seeking
 * back: the kind is told from raw bytes read ahead, and cap_infile_peek
 * decodes the first bytes ahead (the file header that decides which reader
 * takes the file); the next reads return both again. libpcap and pcapng.c
 * read a FILE: for them cap_infile_fopen wraps a stream in a glibc cookie
 * stream.
 *
 * A compressed file that ends inside a member/frame, or bytes that do not
 * decode, are a read error with a message (cap_infile_error) saying so;
 * everything decoded before was handed out.
 */
#define _GNU_SOURCE /* fopencookie */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "capture/internal.h"

/* Compressed bytes read from the file at a time. */
#define STREAM_INBUF (64u << 10)
/* Largest zstd window accepted (log2): zstd's default decoder limit. */
#define ZSTD_WINDOW_LOG_MAX 27

struct cap_infile {
    int fd;                    /* owned */
    cap_infile_kind kind;
    uint8_t raw[4];            /* file bytes read ahead to tell the kind */
    size_t n_raw, raw_pos;     /* how many, and how many used since */
    uint8_t head[64];          /* decoded bytes read ahead (cap_infile_peek) */
    size_t n_head, head_pos;
    uint8_t *in;               /* compressed input (STREAM_INBUF) */
    size_t in_pos, in_end;
    int in_member;             /* inside a gzip member or zstd frame */
    uint64_t in_offset;        /* bytes read from the file (progress) */
    z_stream z;
    int z_ready;
    ZSTD_DStream *zs;
    char error[160];           /* "" or why reading failed */
    cap_ng_walk walk;          /* the decoded bytes' pcapng statistics */
};

/* The kind of the bytes at p (n available). */
static cap_infile_kind kind_of(const uint8_t *p, size_t n)
{
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
        return CAP_INFILE_GZIP;
    if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd)
        return CAP_INFILE_ZSTD;
    return CAP_INFILE_PLAIN;
}

const char *cap_infile_kind_name(cap_infile_kind kind)
{
    return kind == CAP_INFILE_GZIP ? "gzip" : kind == CAP_INFILE_ZSTD ? "zstd" : "";
}

/* Whether the regular file at fd is compressed: its first bytes, read with
 * pread so that the file offset stays where it is. */
cap_infile_kind cap_infile_detect(int fd)
{
    uint8_t head[4];
    ssize_t n = pread(fd, head, sizeof head, 0);
    return n > 0 ? kind_of(head, (size_t)n) : CAP_INFILE_PLAIN;
}

/* Set the stream's error (the first one stays). -1, errno EIO. */
static int fail(cap_infile *s, const char *what, const char *detail)
{
    if (s->error[0] == '\0')
        snprintf(s->error, sizeof s->error, "%s%s%s", what, detail ? ": " : "",
                 detail ? detail : "");
    errno = EIO;
    return -1;
}

/* Up to n file bytes: the ones read ahead first. Bytes read, 0 at the end,
 * -1 on a read error. */
static ssize_t raw_read(cap_infile *s, uint8_t *buf, size_t n)
{
    ssize_t k;
    if (s->raw_pos < s->n_raw) {
        size_t m = s->n_raw - s->raw_pos < n ? s->n_raw - s->raw_pos : n;
        memcpy(buf, s->raw + s->raw_pos, m);
        s->raw_pos += m;
        return (ssize_t)m;
    }
    do
        k = read(s->fd, buf, n);
    while (k < 0 && errno == EINTR);
    if (k < 0)
        return fail(s, "read error", strerror(errno));
    s->in_offset += (uint64_t)k;
    return k;
}

/* Compressed input to decode: 1 when some is waiting, 0 at the end of the
 * file, -1 on a read error. */
static int refill(cap_infile *s)
{
    ssize_t n;
    if (s->in_pos < s->in_end)
        return 1;
    n = raw_read(s, s->in, STREAM_INBUF);
    if (n < 0)
        return -1;
    s->in_pos = 0;
    s->in_end = (size_t)n;
    return n > 0;
}

/* The file ended: the clean end between members/frames (0), or inside one
 * (-1, a truncated file). */
static int at_end(cap_infile *s)
{
    if (!s->in_member)
        return 0;
    return fail(s, s->kind == CAP_INFILE_GZIP
                       ? "truncated gzip file: it ends inside a compressed member"
                       : "truncated zstd file: it ends inside a frame",
                NULL);
}

/* Up to n decoded bytes of gzip data. Bytes, 0 at the end, -1. */
static ssize_t read_gzip(cap_infile *s, uint8_t *buf, size_t n)
{
    const uInt want = (uInt)(n > (1u << 30) ? 1u << 30 : n); /* zlib counts in uInt */
    s->z.next_out = buf;
    s->z.avail_out = want;
    while (s->z.avail_out == want) { /* until something is decoded */
        int rc = refill(s);
        if (rc <= 0)
            return rc < 0 ? -1 : at_end(s);
        s->z.next_in = s->in + s->in_pos;
        s->z.avail_in = (uInt)(s->in_end - s->in_pos);
        s->in_member = 1;
        rc = inflate(&s->z, Z_NO_FLUSH);
        s->in_pos = s->in_end - s->z.avail_in;
        if (rc == Z_STREAM_END) { /* another member may follow (cat a.gz b.gz) */
            s->in_member = 0;
            inflateReset(&s->z);
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            return fail(s, "bad gzip data", s->z.msg ? s->z.msg : zError(rc));
        }
    }
    return (ssize_t)(want - s->z.avail_out);
}

/* Up to n decoded bytes of zstd data. Bytes, 0 at the end, -1. */
static ssize_t read_zstd(cap_infile *s, uint8_t *buf, size_t n)
{
    ZSTD_outBuffer out = {buf, n, 0};
    while (out.pos == 0) {
        ZSTD_inBuffer in;
        size_t hint;
        int rc = refill(s);
        if (rc <= 0 && !s->in_member)
            return rc < 0 ? -1 : 0;
        in.src = s->in;
        in.size = s->in_end;
        in.pos = s->in_pos;
        /* with no input left, a frame may still have decoded bytes to give */
        hint = ZSTD_decompressStream(s->zs, &out, &in);
        s->in_pos = in.pos;
        if (ZSTD_isError(hint))
            return fail(s, "bad zstd data", ZSTD_getErrorName(hint));
        s->in_member = hint != 0;
        if (rc <= 0 && out.pos == 0)
            return rc < 0 ? -1 : at_end(s);
    }
    return (ssize_t)out.pos;
}

/* Up to n decoded bytes, after the read-ahead head. */
static ssize_t decode(cap_infile *s, uint8_t *buf, size_t n)
{
    if (s->kind == CAP_INFILE_GZIP)
        return read_gzip(s, buf, n);
    if (s->kind == CAP_INFILE_ZSTD)
        return read_zstd(s, buf, n);
    return raw_read(s, buf, n);
}

/* Open the file or pipe at fd (owned from now on, also on failure): its
 * first bytes are read to tell its kind. NULL on out of memory or a decoder
 * that cannot start (err set). */
cap_infile *cap_infile_open(int fd, char *err, size_t err_size)
{
    cap_infile *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, err_size, "out of memory");
        close(fd);
        return NULL;
    }
    s->fd = fd;
    cap_ng_walk_init(&s->walk);
    while (s->n_raw < sizeof s->raw) {
        ssize_t k = read(fd, s->raw + s->n_raw, sizeof s->raw - s->n_raw);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break; /* an error shows again at the next read */
        s->n_raw += (size_t)k;
        s->in_offset += (uint64_t)k;
    }
    s->kind = kind_of(s->raw, s->n_raw);
    if (s->kind != CAP_INFILE_PLAIN && (s->in = malloc(STREAM_INBUF)) == NULL) {
        snprintf(err, err_size, "out of memory");
        cap_infile_close(s);
        return NULL;
    }
    if (s->kind == CAP_INFILE_GZIP) {
        /* 15 + 16: a gzip header and trailer around a 32 KiB-window deflate */
        if (inflateInit2(&s->z, 15 + 16) != Z_OK) {
            snprintf(err, err_size, "cannot start the gzip decoder");
            cap_infile_close(s);
            return NULL;
        }
        s->z_ready = 1;
    } else if (s->kind == CAP_INFILE_ZSTD) {
        s->zs = ZSTD_createDStream();
        if (s->zs == NULL ||
            ZSTD_isError(ZSTD_DCtx_setParameter(s->zs, ZSTD_d_windowLogMax, ZSTD_WINDOW_LOG_MAX))) {
            snprintf(err, err_size, "cannot start the zstd decoder");
            cap_infile_close(s);
            return NULL;
        }
    }
    return s;
}

/* Up to n decoded bytes into buf: the count (maybe short, as read(2) on a
 * pipe: a reader of `tcpdump -w -` goes on with what has come), 0 at the
 * end, -1 on an error (cap_infile_error says what; errno EIO). */
ssize_t cap_infile_read(cap_infile *s, void *buf, size_t n)
{
    uint8_t *out = buf;
    size_t got = 0;
    if (s->head_pos < s->n_head) {
        got = s->n_head - s->head_pos < n ? s->n_head - s->head_pos : n;
        memcpy(out, s->head + s->head_pos, got);
        s->head_pos += got;
    }
    if (got == 0 && s->error[0] == '\0') {
        ssize_t k = decode(s, out, n);
        got = k > 0 ? (size_t)k : 0;
    }
    if (got == 0 && s->error[0] != '\0')
        return errno = EIO, -1;
    cap_ng_walk_feed(&s->walk, out, got);
    return (ssize_t)got;
}

/* The first n (at most 64) decoded bytes, read ahead: the next reads hand
 * them out again. Bytes got (fewer at the end or on an error). */
size_t cap_infile_peek(cap_infile *s, uint8_t *buf, size_t n)
{
    if (n > sizeof s->head)
        n = sizeof s->head;
    while (s->n_head < n && s->error[0] == '\0') {
        ssize_t k = decode(s, s->head + s->n_head, n - s->n_head);
        if (k <= 0)
            break;
        s->n_head += (size_t)k;
    }
    n = s->n_head < n ? s->n_head : n;
    memcpy(buf, s->head, n);
    return n;
}

const char *cap_infile_error(const cap_infile *s)
{
    return s->error;
}

uint64_t cap_infile_offset(const cap_infile *s)
{
    return s->in_offset;
}

cap_infile_kind cap_infile_kind_of(const cap_infile *s)
{
    return s->kind;
}

int cap_infile_drops(const cap_infile *s, uint64_t *drops)
{
    return cap_ng_walk_drops(&s->walk, drops);
}

/* Free the decoder and close the file. Accepts NULL. */
void cap_infile_close(cap_infile *s)
{
    if (s == NULL)
        return;
    if (s->z_ready)
        inflateEnd(&s->z);
    ZSTD_freeDStream(s->zs);
    free(s->in);
    if (s->fd >= 0)
        close(s->fd);
    free(s);
}

/* ---------------------------------------------------------------- FILE */

static ssize_t cookie_read(void *c, char *buf, size_t n)
{
    return cap_infile_read(c, buf, n);
}

static int cookie_close(void *c)
{
    (void)c; /* the stream is the input's: closed with it */
    return 0;
}

/* A read-only FILE over s (which stays the caller's: fclose leaves it open).
 * NULL on out of memory. */
FILE *cap_infile_fopen(cap_infile *s)
{
    cookie_io_functions_t io = {.read = cookie_read, .close = cookie_close};
    return fopencookie(s, "r", io);
}
