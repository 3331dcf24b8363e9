/*
 * test_capture_pcapfile.c - capture/pcapfile.c, the in-place classic pcap
 * reader, against libpcap itself: the same files are read by both, record by
 * record (times, lengths, bytes, the error text), for each magic in each byte
 * order, records straddling the read buffer, records larger than it, odd
 * lengths, a file cut at every byte, nanosecond times, and the link types;
 * chunk mode (cap_pcapfile_chunks) the same way, and the bytes of records
 * handed out staying in place as long as cap_source_chunks promises.
 */
#include <fcntl.h>
#include <pcap/pcap.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/internal.h"
#include "tests/helpers/child.h"

/* ---------------------------------------------------------------- writing */

/* A pcap file being built in memory. */
typedef struct pfile {
    uint8_t *data;
    size_t len, cap;
    int swapped;     /* write every field in the other byte order */
} pfile;

/* Append n bytes. */
static void put(pfile *f, const void *p, size_t n)
{
    if (f->len + n > f->cap) {
        f->cap = (f->len + n) * 2;
        f->data = realloc(f->data, f->cap);
        assert_non_null(f->data);
    }
    memcpy(f->data + f->len, p, n);
    f->len += n;
}

/* Append a 32-bit field in the file's byte order. */
static void put32(pfile *f, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[f->swapped ? 3 - i : i] = (uint8_t)(v >> (8 * i));
    put(f, b, 4);
}

/* Append a 16-bit field in the file's byte order. */
static void put16(pfile *f, uint16_t v)
{
    uint8_t b[2];
    b[f->swapped ? 1 : 0] = (uint8_t)v;
    b[f->swapped ? 0 : 1] = (uint8_t)(v >> 8);
    put(f, b, 2);
}

/* Start a file: magic (0xa1b2c3d4 or 0xa1b23c4d), version, snaplen, link
 * type; swapped writes it in the other byte order. */
static void pf_start(pfile *f, uint32_t magic, int swapped, uint16_t major, uint16_t minor,
                     uint32_t snaplen, uint32_t linktype)
{
    memset(f, 0, sizeof *f);
    f->swapped = swapped;
    put32(f, magic);
    put16(f, major);
    put16(f, minor);
    put32(f, (uint32_t)-3600); /* thiszone: libpcap ignores it */
    put32(f, 0);
    put32(f, snaplen);
    put32(f, linktype);
}

/* Append a record of caplen bytes (a pattern seeded by sec) claiming len. */
static void pf_record(pfile *f, uint32_t sec, uint32_t frac, uint32_t caplen, uint32_t len)
{
    uint8_t chunk[256];
    put32(f, sec);
    put32(f, frac);
    put32(f, caplen);
    put32(f, len);
    while (caplen > 0) {
        uint32_t n = caplen < sizeof chunk ? caplen : (uint32_t)sizeof chunk;
        for (uint32_t i = 0; i < n; i++)
            chunk[i] = (uint8_t)(sec * 31 + caplen + i * 7);
        put(f, chunk, n);
        caplen -= n;
    }
}

/* Write the first n bytes of f to path. */
static void pf_save(const pfile *f, const char *path, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(f->data, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

/* ---------------------------------------------------------------- comparing */

/* How a comparison of the two readers ended. */
typedef struct outcome {
    int end;           /* 0: the normal end, -1: an error (same text in both) */
    uint64_t records;  /* records both handed out */
    char err[PCAP_ERRBUF_SIZE];
} outcome;

/* Open path with cap_pcapfile (buffer bufsize): 1 when it reads the file. */
static int own_open(const char *path, size_t bufsize, cap_pcapfile *pf)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    if (cap_pcapfile_open(pf, fd, bufsize) == 1)
        return 1;
    cap_pcapfile_close(pf);
    close(fd);
    return 0;
}

/* Close what own_open opened. */
static void own_close(cap_pcapfile *pf)
{
    close(pf->fd);
    cap_pcapfile_close(pf);
}

/* Chunk mode in compare (when chunking is set): the test plays the user of
 * cap_source_chunks. Its callback reads the chunk asked for (eager: every
 * chunk the rules allow, as another thread may); every record handed out is
 * kept (where it lies, a copy of its bytes, the callback's calls before it)
 * and checked to be still in place as long as promised. */
typedef struct kept_rec {
    const uint8_t *data;
    uint8_t *copy;
    uint32_t len;
    uint64_t taken;          /* chunks the reader went on in before it */
} kept_rec;

typedef struct chunking_t {
    cap_pcapfile *pf;
    unsigned slots;
    int eager;
    uint64_t taken;          /* calls of the callback */
    uint64_t filled;         /* chunks read */
    kept_rec *recs;
    size_t n, cap;
} chunking_t;

static chunking_t *chunking;

/* Every kept record still promised is unchanged: those handed out before
 * the first chunk (the open buffer is kept), and those handed out after the
 * call for chunk filled - slots (the latest chunk read, filled - 1, may
 * overwrite only what came before the call for filled - slots). */
static void chunk_check_kept(const chunking_t *c)
{
    for (size_t i = 0; i < c->n; i++) {
        const kept_rec *r = &c->recs[i];
        if (r->taken == 0 || r->taken + c->slots >= c->filled + 1)
            assert_memory_equal(r->data, r->copy, r->len);
    }
}

/* cap_chunk_fn of the test: chunks asked for in order, each read once. */
static void chunk_fn(void *ctx, uint64_t k)
{
    chunking_t *c = ctx;
    uint64_t last = c->eager ? k + c->slots - 2 : k;
    assert_int_equal(k, c->taken);
    c->taken++;
    while (c->filled <= last) {
        cap_pcapfile_fill_chunk(c->pf, c->filled);
        c->filled++;
    }
    chunk_check_kept(c);
}

/* Keep a record handed out in chunk mode, and check the kept ones. */
static void chunk_keep(chunking_t *c, const cap_pcapfile_rec *rec)
{
    kept_rec *r;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->recs = realloc(c->recs, c->cap * sizeof *c->recs);
        assert_non_null(c->recs);
    }
    r = &c->recs[c->n++];
    r->data = rec->data;
    r->len = rec->caplen;
    r->taken = c->taken;
    r->copy = malloc(rec->caplen + 1);
    assert_non_null(r->copy);
    memcpy(r->copy, rec->data, rec->caplen);
    chunk_check_kept(c);
}

/* Forget the kept records. */
static void chunk_reset(chunking_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->recs[i].copy);
    free(c->recs);
    c->recs = NULL;
    c->n = c->cap = 0;
    c->taken = c->filled = 0;
}

/* Read path with libpcap and with cap_pcapfile (buffer bufsize), record by
 * record, and assert that both give the same: link type, times, lengths,
 * bytes, and the same end (the same error text). The file must be one
 * cap_pcapfile reads. */
static outcome compare(const char *path, size_t bufsize)
{
    char errbuf[PCAP_ERRBUF_SIZE] = "";
    outcome o;
    cap_pcapfile pf;
    pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_MICRO,
                                                        errbuf);
    memset(&o, 0, sizeof o);
    if (p == NULL)
        fail_msg("libpcap cannot open %s: %s", path, errbuf);
    assert_int_equal(own_open(path, bufsize, &pf), 1);
    assert_int_equal(pf.dlt, pcap_datalink(p));
    if (chunking) {
        chunking->pf = &pf;
        assert_int_equal(cap_pcapfile_chunks(&pf, chunking->slots, chunk_fn, chunking), 0);
    }
    for (;;) {
        struct pcap_pkthdr *hdr;
        const u_char *data;
        cap_pcapfile_rec rec;
        int want = pcap_next_ex(p, &hdr, &data);
        int got = cap_pcapfile_next(&pf, &rec);
        if (want == PCAP_ERROR_BREAK) {
            assert_int_equal(got, 0);
            break;
        }
        if (want != 1) {
            assert_int_equal(got, -1);
            assert_string_equal(pf.errbuf, pcap_geterr(p));
            snprintf(o.err, sizeof o.err, "%s", pf.errbuf);
            o.end = -1;
            break;
        }
        assert_int_equal(got, 1);
        assert_int_equal(rec.sec, (int64_t)hdr->ts.tv_sec);
        assert_int_equal(rec.usec, (int64_t)hdr->ts.tv_usec);
        assert_int_equal(rec.caplen, hdr->caplen);
        assert_int_equal(rec.len, hdr->len);
        if (hdr->caplen > 0)
            assert_memory_equal(rec.data, data, hdr->caplen);
        if (chunking)
            chunk_keep(chunking, &rec);
        o.records++;
    }
    pcap_close(p);
    own_close(&pf);
    if (chunking)
        chunk_reset(chunking);
    return o;
}

/* Times that test the edges: signed 32-bit seconds, fractions past a second
 * and negative ones. */
static const uint32_t secs[] = {0, 1, 1700000000, 0x7fffffff, 0x80000000, 0xffffffff};
static const uint32_t fracs[] = {0,         1,          999,        1000,       1999,
                                 999999,    1000000,    999999999,  0x7fffffff, 0x80000000,
                                 0xfffffc18 /* -1000 */, 0xfffff831 /* -1999 */, 0xffffffff};

/* Every magic in each byte order: the same records as libpcap, times and
 * lengths at their edges, lengths that cannot be right (zero, caplen above
 * len) handed on as libpcap hands them. */
static void test_magics_and_byte_orders(void **state)
{
    static const uint32_t magics[] = {0xa1b2c3d4u, 0xa1b23c4du};
    (void)state;
    for (int m = 0; m < 2; m++) {
        for (int swapped = 0; swapped < 2; swapped++) {
            pfile f;
            outcome o;
            uint64_t n = 0;
            pf_start(&f, magics[m], swapped, 2, 4, 65535, 1);
            for (size_t s = 0; s < sizeof secs / sizeof secs[0]; s++) {
                for (size_t k = 0; k < sizeof fracs / sizeof fracs[0]; k++) {
                    uint32_t caplen = (uint32_t)((s * 13 + k * 97) % 1600);
                    uint32_t len = k % 3 == 0 ? caplen / 2 : caplen + (uint32_t)k;
                    pf_record(&f, secs[s], fracs[k], caplen, len);
                    n++;
                }
            }
            pf_save(&f, "pf_magic.pcap", f.len);
            o = compare("pf_magic.pcap", 65536);
            assert_int_equal(o.end, 0);
            assert_int_equal(o.records, n);
            free(f.data);
        }
    }
}

/* Nanosecond files: the fraction divided by 1000, truncated toward zero like
 * libpcap's C division, of a signed field in a file of this machine's byte
 * order but of an unsigned one in a swapped file (as libpcap 1.10 does it);
 * cap_source turns it into the same microsecond time as before. */
static void test_nanosecond_rounding(void **state)
{
    pfile f;
    cap_pcapfile pf;
    cap_pcapfile_rec rec;
    static const struct {
        uint32_t ns;
        int64_t us[2]; /* native byte order, swapped */
    } cases[] = {{0, {0, 0}},
                 {999, {0, 0}},
                 {1000, {1, 1}},
                 {1999, {1, 1}},
                 {999999999, {999999, 999999}},
                 {0xfffffc18, {-1, 4294966}},
                 {0xfffff831, {-1, 4294965}},
                 {0xfffffc17, {-1, 4294966}},
                 {0xffffffff, {0, 4294967}}};
    (void)state;
    for (int swapped = 0; swapped < 2; swapped++) {
        pf_start(&f, 0xa1b23c4du, swapped, 2, 4, 65535, 1);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            pf_record(&f, 100, cases[i].ns, 20, 20);
        pf_save(&f, "pf_ns.pcap", f.len);
        assert_int_equal(own_open("pf_ns.pcap", 4096, &pf), 1);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            assert_int_equal(cap_pcapfile_next(&pf, &rec), 1);
            assert_int_equal(rec.sec, 100);
            assert_int_equal(rec.usec, cases[i].us[swapped]);
        }
        assert_int_equal(cap_pcapfile_next(&pf, &rec), 0);
        own_close(&pf);
        assert_int_equal(compare("pf_ns.pcap", 4096).records, sizeof cases / sizeof cases[0]);
        free(f.data);
    }
    /* Through cap_source: 100 s + 999999 us. */
    {
        const char *paths[] = {"pf_ns.pcap"};
        char err[256] = "";
        cap_record r;
        cap_source *src = cap_open_files(paths, 1, err, sizeof err);
        assert_non_null(src);
        for (int i = 0; i < 5; i++)
            assert_int_equal(cap_source_next(src, &r, err, sizeof err), 1);
        assert_int_equal(r.ts_us, 100 * 1000000LL + 999999);
        cap_source_free(src);
    }
}

/* Records of every size from 0 to 700 bytes through a 512-byte buffer: most
 * straddle its end and are moved to the front; the ones larger than the
 * buffer make it grow. */
static void test_records_straddling_the_buffer(void **state)
{
    pfile f;
    outcome o;
    (void)state;
    pf_start(&f, 0xa1b2c3d4u, 0, 2, 4, 65535, 1);
    for (uint32_t n = 0; n <= 700; n++)
        pf_record(&f, n, n, n, n);
    pf_save(&f, "pf_straddle.pcap", f.len);
    for (size_t bufsize = 24; bufsize <= 1024; bufsize += 61) {
        o = compare("pf_straddle.pcap", bufsize);
        assert_int_equal(o.end, 0);
        assert_int_equal(o.records, 701);
    }
    free(f.data);
}

/* A record larger than the buffer, up to the largest libpcap accepts: the
 * buffer grows to hold it (and no further). */
static void test_record_larger_than_buffer(void **state)
{
    pfile f;
    outcome o;
    cap_pcapfile pf;
    cap_pcapfile_rec rec;
    (void)state;
    pf_start(&f, 0xa1b2c3d4u, 1, 2, 4, 0 /* snaplen 0: the maximum */, 113);
    pf_record(&f, 1, 0, 60, 60);
    pf_record(&f, 2, 0, 100000, 100000);
    pf_record(&f, 3, 0, 60, 60);
    pf_record(&f, 4, 0, CAP_PCAPFILE_MAX_CAPLEN, 400000);
    pf_record(&f, 5, 0, 60, 60);
    pf_save(&f, "pf_big.pcap", f.len);
    o = compare("pf_big.pcap", 65536);
    assert_int_equal(o.end, 0);
    assert_int_equal(o.records, 5);
    assert_int_equal(own_open("pf_big.pcap", 65536, &pf), 1);
    while (cap_pcapfile_next(&pf, &rec) == 1)
        assert_true(pf.size <= 16 + CAP_PCAPFILE_MAX_CAPLEN);
    assert_int_equal(pf.size, 16 + CAP_PCAPFILE_MAX_CAPLEN);
    own_close(&pf);
    free(f.data);
}

/* Captured lengths beyond the snap length: up to libpcap's maximum the record
 * is read whole and cut to the snap length; beyond it, the file stops with
 * libpcap's message. A snap length of 0 or negative (as an int) means the
 * maximum; a larger positive one stays. */
static void test_caplen_beyond_snaplen(void **state)
{
    static const uint32_t snaplens[] = {100, 0, 300000, 262144, 262145, 0x7fffffff, 0x80000000};
    (void)state;
    for (size_t s = 0; s < sizeof snaplens / sizeof snaplens[0]; s++) {
        pfile f;
        outcome o;
        pf_start(&f, 0xa1b2c3d4u, (int)(s & 1), 2, 4, snaplens[s], 1);
        pf_record(&f, 1, 0, 60, 60);
        pf_record(&f, 2, 0, 1000, 1000);      /* above a snaplen of 100 */
        pf_record(&f, 3, 0, 262144, 262144);  /* the maximum */
        pf_record(&f, 4, 0, 262145, 262145); /* beyond: an error */
        pf_record(&f, 5, 0, 60, 60);
        pf_save(&f, "pf_snap.pcap", f.len);
        o = compare("pf_snap.pcap", 4096);
        assert_int_equal(o.end, -1);
        assert_int_equal(o.records, 3);
        assert_non_null(strstr(o.err, "invalid packet capture length 262145"));
        free(f.data);
    }
}

/* A small file cut at every byte: never a crash, the records before the cut
 * handed out, the error libpcap gives (or the normal end when the cut falls
 * between records); through cap_source the error names the record. */
static void test_truncation_at_every_offset(void **state)
{
    pfile f;
    uint64_t ends_at[8];
    size_t n_rec = 0;
    (void)state;
    pf_start(&f, 0xa1b23c4du, 1, 2, 4, 50, 1);
    pf_record(&f, 1, 5000, 40, 40);
    ends_at[n_rec++] = f.len;
    pf_record(&f, 2, 6000, 0, 0);
    ends_at[n_rec++] = f.len;
    pf_record(&f, 3, 7000, 120, 120); /* above the snaplen: cut to 50 */
    ends_at[n_rec++] = f.len;
    pf_record(&f, 4, 8000, 33, 70);
    ends_at[n_rec++] = f.len;
    for (size_t cut = 24; cut <= f.len; cut++) {
        outcome o;
        size_t whole = 0;
        const char *paths[] = {"pf_cut.pcap"};
        char err[512] = "", expect[512];
        cap_source *src;
        cap_record r;
        while (whole < n_rec && ends_at[whole] <= cut)
            whole++;
        pf_save(&f, "pf_cut.pcap", cut);
        o = compare("pf_cut.pcap", 64);
        assert_int_equal(o.records, whole);
        assert_int_equal(o.end, cut == 24 || (whole > 0 && ends_at[whole - 1] == cut) ? 0 : -1);
        src = cap_open_files(paths, 1, err, sizeof err);
        assert_non_null(src);
        for (size_t i = 0; i < whole; i++)
            assert_int_equal(cap_source_next(src, &r, err, sizeof err), 1);
        assert_int_equal(cap_source_next(src, &r, err, sizeof err), o.end);
        if (o.end < 0) {
            snprintf(expect, sizeof expect,
                     "'pf_cut.pcap': truncated record after %zu packets (%s)", whole, o.err);
            assert_string_equal(err, expect);
        }
        cap_source_free(src);
    }
    free(f.data);
}

/* Which files cap_pcapfile takes: the link types capture/ decodes, with the
 * DLT_ value libpcap gives (LINKTYPE_RAW 101 is DLT_RAW), FCS bits ignored;
 * every other link type, version or magic is left to libpcap, and
 * cap_open_files still names the input as libpcap does. */
static void test_linktype_mapping(void **state)
{
    static const uint32_t extra[] = {0x04000001u, 0x10000065u, 0xfc000071u, 0x02000001u,
                                     0x00010001u, 12, 14};
    static const struct {
        uint32_t linktype;
        const char *name;
    } expected[] = {{0, "NULL"},         {1, "EN10MB"},     {101, "RAW"},  {108, "LOOP"},
                    {113, "LINUX_SLL"},  {276, "LINUX_SLL2"}, {228, "IPV4"}, {229, "IPV6"}};
    uint32_t linktypes[320 + sizeof extra / sizeof extra[0]];
    size_t n = 0, taken = 0;
    (void)state;
    for (uint32_t lt = 0; lt < 320; lt++)
        linktypes[n++] = lt;
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        linktypes[n++] = extra[i];
    for (size_t i = 0; i < n; i++) {
        pfile f;
        cap_pcapfile pf;
        char errbuf[PCAP_ERRBUF_SIZE];
        pcap_t *p;
        pf_start(&f, 0xa1b2c3d4u, (int)(i & 1), 2, 4, 65535, linktypes[i]);
        pf_save(&f, "pf_lt.pcap", f.len);
        free(f.data);
        if (!own_open("pf_lt.pcap", 4096, &pf))
            continue;
        taken++;
        p = pcap_open_offline("pf_lt.pcap", errbuf);
        assert_non_null(p);
        assert_int_equal(pf.dlt, pcap_datalink(p));
        assert_true(cap_linktype_supported(pf.dlt));
        pcap_close(p);
        own_close(&pf);
    }
    assert_int_equal(taken, 8 + 3); /* the eight, and three with FCS bits */
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        pfile f;
        const char *paths[] = {"pf_lt.pcap"};
        char err[256] = "";
        size_t k;
        cap_source *src;
        pf_start(&f, 0xa1b2c3d4u, 0, 2, 4, 65535, expected[i].linktype);
        pf_save(&f, "pf_lt.pcap", f.len);
        free(f.data);
        src = cap_open_files(paths, 1, err, sizeof err);
        assert_non_null(src);
        assert_string_equal(cap_source_inputs(src, &k)[0].linktype_name, expected[i].name);
        cap_source_free(src);
        /* records of each link type in each byte order: libpcap changes no
         * byte of them (it fixes up pseudo-headers of other types only) */
        for (int swapped = 0; swapped < 2; swapped++) {
            pf_start(&f, 0xa1b2c3d4u, swapped, 2, 4, 65535, expected[i].linktype);
            for (uint32_t r = 0; r < 40; r++)
                pf_record(&f, r, r, r * 3, r * 3);
            pf_save(&f, "pf_lt.pcap", f.len);
            free(f.data);
            assert_int_equal(compare("pf_lt.pcap", 4096).records, 40);
        }
    }
}

/* Files left to libpcap: other versions (2.3 may swap its length fields,
 * 543.0 is DG/UX's), other magics, pcapng, a short header. cap_open_files
 * still reads them, through libpcap. */
static void test_left_to_libpcap(void **state)
{
    static const struct {
        uint32_t magic;
        uint16_t major, minor;
    } kinds[] = {{0xa1b2c3d4u, 2, 3}, {0xa1b2c3d4u, 2, 2}, {0xa1b2c3d4u, 543, 0},
                 {0xa1b2cd34u, 2, 4}};
    pfile f;
    cap_pcapfile pf;
    (void)state;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const char *paths[] = {"pf_other.pcap"};
        char err[256] = "";
        cap_record r;
        cap_source *src;
        pf_start(&f, kinds[i].magic, (int)(i & 1), kinds[i].major, kinds[i].minor, 65535, 1);
        pf_save(&f, "pf_other.pcap", f.len);
        free(f.data);
        assert_int_equal(own_open("pf_other.pcap", 4096, &pf), 0);
        src = cap_open_files(paths, 1, err, sizeof err);
        assert_non_null(src);
        assert_int_equal(cap_source_next(src, &r, err, sizeof err), 0);
        cap_source_free(src);
    }
    /* a header cut short is not taken either: libpcap names the problem */
    pf_start(&f, 0xa1b2c3d4u, 0, 2, 4, 65535, 1);
    for (size_t cut = 1; cut < 24; cut++) {
        pf_save(&f, "pf_other.pcap", cut);
        assert_int_equal(own_open("pf_other.pcap", 4096, &pf), 0);
    }
    free(f.data);
}

/* Progress counts the bytes handed out, up to the file size at the end. */
static void test_progress(void **state)
{
    pfile f;
    const char *paths[] = {"pf_prog.pcap"};
    char err[256] = "";
    cap_record r;
    uint64_t done, total;
    cap_source *src;
    (void)state;
    pf_start(&f, 0xa1b2c3d4u, 0, 2, 4, 65535, 1);
    for (uint32_t i = 0; i < 100; i++)
        pf_record(&f, i, 0, 1000, 1000);
    pf_save(&f, "pf_prog.pcap", f.len);
    src = cap_open_files(paths, 1, err, sizeof err);
    assert_non_null(src);
    for (uint32_t i = 0; i < 10; i++)
        assert_int_equal(cap_source_next(src, &r, err, sizeof err), 1);
    cap_source_progress(src, &done, &total);
    assert_int_equal(total, f.len);
    assert_int_equal(done, 24 + 10 * 1016);
    while (cap_source_next(src, &r, err, sizeof err) == 1)
        ;
    cap_source_progress(src, &done, &total);
    assert_int_equal(done, f.len);
    cap_source_free(src);
    free(f.data);
}

/* What on_record saw. */
typedef struct seen {
    cap_source *src;
    uint64_t records;
    uint64_t stop_after;     /* call cap_source_break after this many */
    int64_t last_ts;
    uint32_t caplen_sum;
} seen;

/* cap_record_fn: count, and break the run when told to. */
static void on_record(void *ctx, const cap_record *rec)
{
    seen *s = ctx;
    assert_non_null(rec);
    assert_int_equal(rec->linktype, DLT_LINUX_SLL2);
    s->records++;
    s->last_ts = rec->ts_us;
    s->caplen_sum += rec->caplen;
    if (s->records == s->stop_after)
        cap_source_break(s->src);
}

/* A single file run through a record callback: every record (the right link
 * type, time and length), and a break from the callback stops the run right
 * after that record, with 1. */
static void test_run_records_and_break(void **state)
{
    pfile f;
    const char *paths[] = {"pf_run.pcap"};
    char err[256] = "";
    uint32_t sum = 0;
    seen s;
    (void)state;
    pf_start(&f, 0xa1b23c4du, 1, 2, 4, 65535, 276);
    for (uint32_t i = 0; i < 50; i++) {
        pf_record(&f, 10 + i, 500000000, 20 + i, 20 + i);
        sum += 20 + i;
    }
    pf_save(&f, "pf_run.pcap", f.len);
    free(f.data);
    memset(&s, 0, sizeof s);
    s.src = cap_open_files(paths, 1, err, sizeof err);
    assert_non_null(s.src);
    assert_int_equal(cap_source_run_records(s.src, on_record, &s, err, sizeof err), 0);
    assert_int_equal(s.records, 50);
    assert_int_equal(s.caplen_sum, sum);
    assert_int_equal(s.last_ts, 59 * 1000000LL + 500000);
    cap_source_free(s.src);
    memset(&s, 0, sizeof s);
    s.stop_after = 7;
    s.src = cap_open_files(paths, 1, err, sizeof err);
    assert_non_null(s.src);
    assert_int_equal(cap_source_run_records(s.src, on_record, &s, err, sizeof err), 1);
    assert_int_equal(s.records, 7);
    cap_source_free(s.src);
}

/* Chunk mode (the file in chunks of the open buffer's size, read with pread
 * into 2, 3 or 8 slots in turn, each chunk when asked for or as early as
 * allowed): the same records and end as libpcap, on a file of ~3 MB whose
 * records of up to the largest size straddle the chunks, and on a smaller
 * one cut at bytes around every chunk's end; bytes handed out stay in place
 * as promised (chunk_check_kept). A pipe is no file for it. */
static void test_chunk_mode(void **state)
{
    static const unsigned slots[] = {2, 3, 8};
    const size_t chunk = CAP_PCAPFILE_HEADROOM;
    chunking_t c;
    pfile f, g;
    outcome o;
    uint32_t n = 0;
    int fds[2];
    cap_pcapfile pf;
    (void)state;
    pf_start(&f, 0xa1b2c3d4u, 0, 2, 4, 0, 1);
    while (f.len < 3u << 20) {
        uint32_t len = n % 17 == 5 ? CAP_PCAPFILE_MAX_CAPLEN : (n * 7919u) % 70001u;
        pf_record(&f, n, n, len, len);
        n++;
    }
    pf_save(&f, "pf_chunks.pcap", f.len);
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        for (int eager = 0; eager <= 1; eager++) {
            memset(&c, 0, sizeof c);
            c.slots = slots[i];
            c.eager = eager;
            chunking = &c;
            o = compare("pf_chunks.pcap", chunk);
            chunking = NULL;
            assert_int_equal(o.end, 0);
            assert_int_equal(o.records, n);
        }
    }
    /* cut around the end of the open buffer and of each chunk after it */
    pf_start(&g, 0xa1b2c3d4u, 1, 2, 4, 65535, 1);
    for (n = 0; g.len < 3 * chunk + 50000; n++)
        pf_record(&g, n, n, 1000 + (n * 37u) % 3000u, 5000);
    for (size_t b = chunk; b < g.len; b += chunk) {
        for (size_t cut = b - 40; cut <= b + 40 && cut <= g.len; cut += 3) {
            pf_save(&g, "pf_chunks_cut.pcap", cut);
            memset(&c, 0, sizeof c);
            c.slots = 2;
            c.eager = (cut & 1) != 0;
            chunking = &c;
            o = compare("pf_chunks_cut.pcap", chunk);
            chunking = NULL;
            assert_true(o.records > 0);
        }
    }
    /* not a regular file: refused, the reader unchanged */
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], g.data, 4096), 4096);
    close(fds[1]);
    assert_int_equal(cap_pcapfile_open(&pf, fds[0], chunk), 1);
    assert_int_equal(cap_pcapfile_chunks(&pf, 2, chunk_fn, NULL), -1);
    assert_int_equal(pf.n_slots, 0);
    cap_pcapfile_close(&pf);
    close(fds[0]);
    free(f.data);
    free(g.data);
}

/* ---------------------------------------------------------------- pcapng statistics, walked */

/* Append a pcapng block: type, its body (n bytes, a multiple of 4), the
 * lengths around it. */
static void ng_block(pfile *f, uint32_t type, const uint8_t *body, uint32_t n)
{
    put32(f, type);
    put32(f, 12 + n);
    put(f, body, n);
    put32(f, 12 + n);
}

/* A Section Header Block in f's byte order, then one Interface Description
 * Block (Ethernet) and one Enhanced Packet Block of 10 bytes. */
static void ng_section(pfile *f)
{
    pfile b = {.swapped = f->swapped};
    put32(&b, 0x1A2B3C4Du);
    put16(&b, 1);
    put16(&b, 0);
    put32(&b, 0xffffffffu); /* section length unknown */
    put32(&b, 0xffffffffu);
    ng_block(f, 0x0A0D0D0Au, b.data, (uint32_t)b.len);
    b.len = 0;
    put16(&b, 1);
    put16(&b, 0);
    put32(&b, 65535);
    ng_block(f, 1, b.data, (uint32_t)b.len);
    b.len = 0;
    put32(&b, 0);  /* interface */
    put32(&b, 0);  /* time */
    put32(&b, 0);
    put32(&b, 10); /* captured, original length */
    put32(&b, 10);
    put(&b, "0123456789\0\0", 12);
    ng_block(f, 6, b.data, (uint32_t)b.len);
    free(b.data);
}

/* An Interface Statistics Block of interface iface: option code (5 isb_ifdrop,
 * 7 isb_osdrop) = value, after a comment of pad bytes (opt_comment). */
static void ng_isb(pfile *f, uint32_t iface, uint16_t code, uint64_t value, uint16_t pad)
{
    pfile b = {.swapped = f->swapped};
    put32(&b, iface);
    put32(&b, 0);
    put32(&b, 0);
    if (pad > 0) {
        put16(&b, 1);
        put16(&b, pad);
        for (uint16_t i = 0; i < (pad + 3u) / 4 * 4; i++)
            put(&b, "c", 1);
    }
    put16(&b, code);
    put16(&b, 8);
    put32(&b, f->swapped ? (uint32_t)(value >> 32) : (uint32_t)value);
    put32(&b, f->swapped ? (uint32_t)value : (uint32_t)(value >> 32));
    put32(&b, 0); /* opt_endofopt */
    ng_block(f, 5, b.data, (uint32_t)b.len);
    free(b.data);
}

/* f walked in pieces of step bytes: 1 and *drops, or 0. */
static int walked(const pfile *f, size_t step, uint64_t *drops)
{
    static cap_ng_walk w;
    cap_ng_walk_init(&w);
    for (size_t at = 0; at < f->len; at += step)
        cap_ng_walk_feed(&w, f->data + at, f->len - at < step ? f->len - at : step);
    return cap_ng_walk_drops(&w, drops);
}

/* The statistics blocks of a pcapng stream, as the bytes go by in pieces of
 * any size: the latest count of each interface of a section (isb_ifdrop, else
 * isb_osdrop), the sections (here in both byte orders) summed; a block too
 * large to keep is skipped, a recorded 0 is a count, and the walk stops at
 * bytes that are not pcapng, keeping what it found. */
static void test_pcapng_walk(void **state)
{
    (void)state;
    pfile f = {0}, g = {0}, h = {0};
    ng_section(&f);
    ng_isb(&f, 0, 5, 3, 0);
    ng_isb(&f, 1, 7, 5, 0);
    ng_isb(&f, 0, 5, 4, 0);        /* interface 0's latest */
    ng_isb(&f, 1, 5, 100, 5000);   /* larger than CAP_NG_WALK_ISB: skipped */
    size_t first = f.len;
    f.swapped = 1;
    ng_section(&f);
    ng_isb(&f, 0, 5, 10ull << 32 | 6, 0);
    static const size_t steps[] = {1, 2, 3, 5, 7, 12, 13, 64, 4093, 1 << 20};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        uint64_t d = 1;
        assert_int_equal(walked(&f, steps[i], &d), 1);
        assert_int_equal(d, 4 + 5 + (10ull << 32 | 6));
    }
    /* garbage after the first section: what came before counts */
    put(&g, f.data, first);
    put(&g, "garbage!garbage!garbage!", 24);
    put(&g, f.data + first, f.len - first);
    uint64_t d = 1;
    assert_int_equal(walked(&g, 7, &d), 1);
    assert_int_equal(d, 9);
    /* no statistics: none recorded; a recorded 0 is a count */
    h.len = 0;
    ng_section(&h);
    assert_int_equal(walked(&h, 3, &d), 0);
    assert_int_equal(d, 0);
    ng_isb(&h, 0, 5, 0, 0);
    d = 1;
    assert_int_equal(walked(&h, 3, &d), 1);
    assert_int_equal(d, 0);
    /* a classic pcap file: not walked */
    pfile c;
    pf_start(&c, 0xa1b2c3d4u, 0, 2, 4, 65535, 1);
    put(&c, f.data, f.len);
    assert_int_equal(walked(&c, 5, &d), 0);
    free(f.data);
    free(g.data);
    free(h.data);
    free(c.data);
}

/* Every test, in a scratch folder: the files are written by relative name. */
static int run_all(void *ctx)
{
    (void)ctx;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_magics_and_byte_orders),
        cmocka_unit_test(test_nanosecond_rounding),
        cmocka_unit_test(test_records_straddling_the_buffer),
        cmocka_unit_test(test_record_larger_than_buffer),
        cmocka_unit_test(test_caplen_beyond_snaplen),
        cmocka_unit_test(test_truncation_at_every_offset),
        cmocka_unit_test(test_linktype_mapping),
        cmocka_unit_test(test_left_to_libpcap),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_run_records_and_break),
        cmocka_unit_test(test_chunk_mode),
        cmocka_unit_test(test_pcapng_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

int main(void)
{
    return th_in_scratch_dir("pcapfile", run_all, NULL);
}
