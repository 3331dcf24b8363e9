/*
 * latency.c - latency of logical operations, direct vs redirected, per client,
 * slot, node and overall, in bounded log-linear histograms.
 *
 * A histogram has fixed buckets: one per microsecond below 16 us, then 8 per
 * power of two up to 2^38 us (about 76 hours): a value is reported within 1/16
 * of itself (the bucket's middle), whatever the number of samples. 288 uint32
 * counters, allocated at a scope's first sample.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "analysis/internal.h"

/* The middle of a bucket's range. */
static int64_t bucket_mid(unsigned b)
{
    if (b < 16)
        return b;
    unsigned e = (b - 16) / AN_HIST_SUB + 4, sub = (b - 16) % AN_HIST_SUB;
    int64_t low = (int64_t)(8 + sub) << (e - 3);
    int64_t width = (int64_t)1 << (e - 3);
    return low + width / 2;
}

/* Add a sample already clamped to >= 0 whose bucket is b. */
static void lat_add_b(an_lat *l, int64_t us, unsigned b, int64_t extra_us, uint64_t extra_rt)
{
    if (!l->h)
        l->h = calloc(1, sizeof *l->h);
    if (l->h && l->h->b[b] < UINT32_MAX)
        l->h->b[b]++;
    l->count++;
    l->total_us += us;
    l->extra_us += extra_us > 0 ? extra_us : 0;
    l->extra_rt += extra_rt;
    if (us > l->max_us)
        l->max_us = us;
}

void an_lat_add(an_lat *l, int64_t us, int64_t extra_us, uint64_t extra_rt)
{
    if (us < 0)
        us = 0;
    lat_add_b(l, us, an_hist_bucket(us), extra_us, extra_rt);
}

void an_lat_free(an_lat *l)
{
    free(l->h);
    memset(l, 0, sizeof *l);
}

int64_t an_hist_quantile(const an_hist *h, uint64_t count, double q, int64_t max_us)
{
    if (!h || count == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)count + 0.999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned b = 0; b < AN_HIST_BUCKETS; b++) {
        seen += h->b[b];
        if (seen >= rank) {
            int64_t v = bucket_mid(b);
            return v > max_us ? max_us : v;
        }
    }
    return max_us;
}

void an_lat_emit(an_analyzer *an, an_scope scope, const char *key, an_lat lat[2])
{
    if (!an->sink.latency)
        return;
    for (int r = 0; r < 2; r++) {
        an_lat *l = &lat[r];
        if (l->count == 0)
            continue;
        an_latency out;
        memset(&out, 0, sizeof out);
        out.scope = scope;
        an_copy_str(out.key, sizeof out.key, key);
        out.redirected = (uint8_t)r;
        out.count = l->count;
        out.p50_us = an_hist_quantile(l->h, l->count, 0.50, l->max_us);
        out.p90_us = an_hist_quantile(l->h, l->count, 0.90, l->max_us);
        out.p99_us = an_hist_quantile(l->h, l->count, 0.99, l->max_us);
        out.max_us = l->max_us;
        out.total_us = l->total_us;
        out.extra_us = l->extra_us;
        out.extra_round_trips = l->extra_rt;
        an->sink.latency(an->sink.ctx, &out);
    }
}

/* The slot's summaries, created at its first redirected operation (capped). */
static an_lat *slot_lat(an_analyzer *an, int32_t slot, int redirected)
{
    if (slot < 0 || slot >= AN_SLOTS)
        return NULL;
    if (!an->slot_lat[slot] && redirected) {
        if (an->nslot_lat < an->cfg.max_slot_latency) {
            an->slot_lat[slot] = calloc(2, sizeof(an_lat));
            if (an->slot_lat[slot]) {
                an->nslot_lat++;
                an->slot_busy[slot] |= AN_SLOT_LAT;
            }
        } else {
            an->st.latency_slots_dropped++;
        }
    }
    return an->slot_lat[slot];
}

/* One finished operation into its client's, node's and slot's summaries
 * (the overall one is their node sum, made at the end: one update less per
 * operation). r: redirected. */
static void lat_add_op(an_analyzer *an, int32_t client, int32_t node, int32_t slot, int r,
                       int64_t total, int64_t extra, uint64_t rt, int64_t end_us)
{
    an_ser_add(an, end_us, client, node, an_ser_slot(an, slot), -1, r, total);
    an->st.operations++;
    if (r)
        an->st.redirected_operations++;
    if (total < 0)
        total = 0;
    unsigned b = an_hist_bucket(total); /* the same bucket in every scope */
    if (client >= 0 && an->clients[client].used)
        lat_add_b(&an->clients[client].lat[r], total, b, extra, rt);
    if (node >= 0 && (uint32_t)node < an->nnodes)
        lat_add_b(&an->nodes[node].lat[r], total, b, extra, rt);
    else
        lat_add_b(&an->nonode_lat[r], total, b, extra, rt);
    an_lat *sl = slot_lat(an, slot, r);
    if (sl)
        lat_add_b(&sl[r], total, b, extra, rt);
}

void an_lat_record(an_analyzer *an, int32_t client, int32_t node, int32_t slot,
                   const an_attempt *first, const an_attempt *final, uint32_t attempts,
                   uint32_t askings)
{
    int64_t total = final->reply_us - first->req_us;
    int64_t extra = final->req_us - first->req_us;
    uint64_t rt = (uint64_t)(attempts ? attempts - 1 : 0) + askings;
    int r = attempts > 1;
    lat_add_op(an, client, node, slot, r, total, r ? extra : 0, rt, final->reply_us);
}

void an_lat_record_given_up(an_analyzer *an, int32_t client, int32_t node, int32_t slot,
                            const an_attempt *first, const an_attempt *last, uint32_t attempts,
                            uint32_t askings)
{
    int64_t total = last->reply_us - first->req_us;
    uint64_t rt = (uint64_t)(attempts ? attempts - 1 : 0) + askings;
    lat_add_op(an, client, node, slot, 1, total, total, rt, last->reply_us);
}

/* The histogram of l, allocated at its first sample. */
an_hist *an_lat_hist(an_lat *l)
{
    if (!l->h)
        l->h = calloc(1, sizeof *l->h);
    return l->h;
}

/* Add the summary src into dst (histograms bucket by bucket). */
static void lat_merge(an_lat *dst, const an_lat *src)
{
    if (src->count == 0)
        return;
    if (src->h && !dst->h)
        dst->h = calloc(1, sizeof *dst->h);
    if (src->h && dst->h)
        for (unsigned b = 0; b < AN_HIST_BUCKETS; b++) {
            uint64_t v = (uint64_t)dst->h->b[b] + src->h->b[b];
            dst->h->b[b] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
        }
    dst->count += src->count;
    dst->total_us += src->total_us;
    dst->extra_us += src->extra_us;
    dst->extra_rt += src->extra_rt;
    if (src->max_us > dst->max_us)
        dst->max_us = src->max_us;
}

void an_lat_sum_all(an_analyzer *an)
{
    for (int r = 0; r < 2; r++) {
        an_lat_free(&an->all_lat[r]);
        for (uint32_t i = 0; i < an->nnodes; i++)
            lat_merge(&an->all_lat[r], &an->nodes[i].lat[r]);
        lat_merge(&an->all_lat[r], &an->nonode_lat[r]);
    }
}
