/*
 * skew.c - how far apart the clocks of two captures are, from the TCP
 * segments both captured (the same connection seen on the client's host and
 * on the server's, or on two taps).
 *
 * A segment is the same one in two captures when its 4-tuple, sequence and
 * acknowledgment numbers, flags and payload length are equal (a 64-bit hash
 * of them: two different segments hash alike with odds of 2^-64). A segment
 * seen twice in one capture (a retransmission) is ambiguous and not used.
 * For a pair of inputs the difference of capture times of each shared
 * segment is clock difference plus the one-way delay between the two
 * capture points in the direction the segment travelled; the median of each
 * direction is taken and their mean is the skew (the delay cancels when it
 * is the same both ways). With segments of one direction only, that
 * direction's median is all there is (the skew then includes the delay).
 *
 * Bounded work: only the first SKEW_RECORDS records of each input are read,
 * of which at most SKEW_SEGMENTS segments are kept, and at most
 * CAP_SKEW_INPUTS inputs are compared; memory is a few MiB at most.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"

/* Records read from the start of each input. */
#define SKEW_RECORDS 200000u
/* Segments kept from each input. */
#define SKEW_SEGMENTS 32768u
/* Shared segments needed before a pair's skew is believed. */
#define SKEW_MIN_SHARED 8u

/* One sampled segment. */
typedef struct seg {
    uint64_t key;   /* hash of 4-tuple, seq, ack, flags, length */
    int64_t ts_us;
    uint32_t input;
    uint8_t dir;    /* 1 when the sender's endpoint sorts before the receiver's */
} seg;

/* The 64-bit identity of a segment (see the top). */
static uint64_t seg_key(const cap_pkt *p)
{
    uint64_t k = cap_hash_endpoint(&p->src) * 0xff51afd7ed558ccdull;
    k ^= cap_hash_endpoint(&p->dst) + 0x9e3779b97f4a7c15ull + (k << 6) + (k >> 2);
    k ^= ((uint64_t)p->seq << 32 | p->ack) * 0xc4ceb9fe1a85ec53ull;
    k ^= ((uint64_t)p->flags << 32 | (p->payload_len + p->payload_missing)) + (k << 7);
    k *= 0x9e3779b97f4a7c15ull;
    return k ^ (k >> 29);
}

/* 1 when endpoint a sorts before b (bytes, then port). */
static int endpoint_before(const cap_endpoint *a, const cap_endpoint *b)
{
    int c = memcmp(a->addr.bytes, b->addr.bytes, sizeof a->addr.bytes);
    return c < 0 || (c == 0 && a->port < b->port);
}

/* Sample input `input` (path) into segs. Segments added. */
static size_t sample_input(const char *path, uint32_t input, seg *segs)
{
    char err[256];
    cap_source *src = cap_open_files(&path, 1, err, sizeof err);
    cap_record rec;
    size_t n = 0;
    if (src == NULL)
        return 0;
    for (uint32_t r = 0; r < SKEW_RECORDS && n < SKEW_SEGMENTS; r++) {
        cap_pkt p;
        if (cap_source_next(src, &rec, err, sizeof err) != 1)
            break;
        if (cap_decode(rec.linktype, rec.data, rec.caplen, rec.wirelen, &p) != CAP_DEC_TCP)
            continue;
        /* pure ACKs repeat (same seq, ack, length): only what carries data or
         * a SYN/FIN, which a sender sends once unless it retransmits */
        if (p.payload_len + p.payload_missing == 0 && !(p.flags & (TCP_SYN | TCP_FIN)))
            continue;
        segs[n].key = seg_key(&p);
        segs[n].ts_us = rec.ts_us;
        segs[n].input = input;
        segs[n].dir = (uint8_t)endpoint_before(&p.src, &p.dst);
        n++;
    }
    cap_source_free(src);
    return n;
}

static int seg_cmp(const void *a, const void *b)
{
    const seg *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->input != y->input)
        return x->input < y->input ? -1 : 1;
    return (x->ts_us > y->ts_us) - (x->ts_us < y->ts_us);
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median of n values (sorted here); n > 0. */
static int64_t median(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, i64_cmp);
    return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

/* The differences of one pair of inputs, per direction. */
typedef struct pair_diffs {
    int64_t *d[2];
    size_t n[2], cap[2];
} pair_diffs;

/* Append v to direction dir of pd (growing by doubling, at most
 * SKEW_SEGMENTS values kept). */
static void add_diff(pair_diffs *pd, int dir, int64_t v)
{
    if (pd->n[dir] == pd->cap[dir]) {
        size_t cap = pd->cap[dir] ? pd->cap[dir] * 2 : 256;
        int64_t *d;
        if (pd->cap[dir] >= SKEW_SEGMENTS || (d = realloc(pd->d[dir], cap * sizeof *d)) == NULL)
            return;
        pd->d[dir] = d;
        pd->cap[dir] = cap;
    }
    pd->d[dir][pd->n[dir]++] = v;
}

/* Estimate (see capture.h). */
size_t cap_estimate_skew(const char *const *paths, size_t n_paths, cap_skew *out,
                         size_t max_out)
{
    size_t n_in = n_paths < CAP_SKEW_INPUTS ? n_paths : CAP_SKEW_INPUTS;
    size_t n_pairs = n_in * (n_in - 1) / 2, n_segs = 0, found = 0;
    seg *segs;
    pair_diffs *pairs;
    if (n_in < 2)
        return 0;
    segs = malloc(n_in * SKEW_SEGMENTS * sizeof *segs);
    pairs = calloc(n_pairs, sizeof *pairs);
    if (segs == NULL || pairs == NULL) {
        free(segs);
        free(pairs);
        return 0;
    }
    for (uint32_t i = 0; i < n_in; i++)
        n_segs += sample_input(paths[i], i, segs + n_segs);
    qsort(segs, n_segs, sizeof *segs, seg_cmp);
    for (size_t a = 0; a < n_segs;) {
        size_t b = a;
        int ambiguous = 0;
        while (b < n_segs && segs[b].key == segs[a].key) {
            if (b > a && segs[b].input == segs[b - 1].input)
                ambiguous = 1; /* seen twice in one input */
            b++;
        }
        for (size_t x = a; !ambiguous && x < b; x++)
            for (size_t y = x + 1; y < b; y++) {
                uint32_t i = segs[x].input, j = segs[y].input; /* i < j (sorted) */
                pair_diffs *pd = &pairs[i * n_in - i * (i + 1) / 2 + (j - i - 1)];
                add_diff(pd, segs[x].dir, segs[y].ts_us - segs[x].ts_us);
            }
        a = b;
    }
    for (uint32_t i = 0, k = 0; i < n_in; i++)
        for (uint32_t j = i + 1; j < n_in; j++, k++) {
            pair_diffs *pd = &pairs[k];
            size_t both = pd->n[0] + pd->n[1];
            if (both >= SKEW_MIN_SHARED && found < max_out) {
                cap_skew *s = &out[found++];
                s->a = i;
                s->b = j;
                s->shared = both;
                s->one_way = pd->n[0] == 0 || pd->n[1] == 0;
                if (s->one_way)
                    s->skew_us = median(pd->d[pd->n[0] ? 0 : 1], both);
                else {
                    int64_t m0 = median(pd->d[0], pd->n[0]), m1 = median(pd->d[1], pd->n[1]);
                    s->skew_us = m0 + (m1 - m0) / 2;
                }
            }
            free(pd->d[0]);
            free(pd->d[1]);
        }
    free(pairs);
    free(segs);
    return found;
}
