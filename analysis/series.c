/*
 * series.c - the redirect time series: per time bucket, what the cluster,
 * each node, each client and each migrating slot range saw (commands,
 * replies by kind, ASKING, retries, operations and their latency). Not to be
 * confused with timeline.c, the per slot migration windows.
 *
 * Buckets are [k * width, (k + 1) * width) of capture time. An event counts in
 * the bucket of its reply's time; an operation in that of its final reply
 * (given up: its last reply). A few buckets stay open (kept: enough for the
 * operations judged up to two retry windows after their last reply, at most
 * AN_SER_MAX_BUCKETS); when a newer one opens beyond them the oldest is
 * written (an_sink.series) and its memory reused, so memory follows the
 * buckets kept and the scopes followed in them, never the capture's length.
 * An event older than every open bucket is counted in the earliest open one
 * after it (series_late).
 *
 * In a bucket each kind of scope (node, client, slot) follows at most
 * cfg.series_scopes scopes; the events of more go to the kind's "other"
 * (series_overflow). When the bucket is written, consecutive migrating slots
 * with the same source and target become one range, and per kind the top
 * cfg.series_top scopes by redirects get rows of their own; the rest are
 * summed into one "other" row.
 *
 * Latency percentiles come from latency.c's log-linear histograms (one per
 * scope, bucket and kind of operation): the middle of the bucket the
 * percentile falls in, within 1/16 of the value. The cluster's figures are
 * the sum of its clients' (and of the events that had no client), made when
 * the bucket is written, so that the most common event, a direct command,
 * costs two counter and two histogram increments (an_ser_quick).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

static const char *const kind_names[AN_SK_KINDS] = {"cluster", "node", "client", "slots"};

/* ---------------------------------------------------------------- cells */

static uint64_t cell_hash(unsigned kind, int32_t idx, uint32_t gen)
{
    return an_mix64(((uint64_t)kind << 56) ^ ((uint64_t)gen << 24) ^ (uint64_t)(uint32_t)idx);
}

typedef struct cell_key {
    uint8_t kind;
    int32_t idx;
    uint32_t gen;
} cell_key;

static int cell_eq(const void *ctx, int32_t val, const void *key)
{
    const an_ser_bucket *b = ctx;
    const cell_key *k = key;
    const an_ser_cell *c = &b->cells[val];
    return !c->other && c->kind == k->kind && c->idx == k->idx && c->gen == k->gen;
}

/* Empty a cell for reuse; its histograms stay allocated, cleared. */
static void cell_reset(an_ser_cell *c)
{
    an_hist *h[2] = {c->h[0], c->h[1]};
    for (int r = 0; r < 2; r++)
        if (h[r])
            memset(h[r], 0, sizeof *h[r]);
    memset(c, 0, sizeof *c);
    c->h[0] = h[0];
    c->h[1] = h[1];
}

/* The cell's histogram of kind r, allocated at its first use (NULL: out of
 * memory; the operation is then not counted). */
static an_hist *cell_hist(an_ser_cell *c, int r)
{
    if (!c->h[r])
        c->h[r] = calloc(1, sizeof *c->h[r]);
    return c->h[r];
}

static void cell_add_lat(an_ser_cell *c, int redirected, int64_t us)
{
    an_hist *h = cell_hist(c, redirected);
    if (h)
        an_ser_hist_inc(h, an_hist_bucket(us));
}

/* Add the figures of src into dst. */
static void cell_merge(an_ser_cell *dst, const an_ser_cell *src)
{
    for (unsigned i = 0; i < AN_SC_COUNTS; i++)
        dst->n[i] += src->n[i];
    for (int r = 0; r < 2; r++) {
        if (!src->h[r] || !cell_hist(dst, r))
            continue;
        for (unsigned b = 0; b < AN_HIST_BUCKETS; b++) {
            uint64_t v = (uint64_t)dst->h[r]->b[b] + src->h[r]->b[b];
            dst->h[r]->b[b] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
        }
    }
    dst->scopes += src->scopes;
}

/* Operations in a histogram (NULL: none). */
static uint64_t hist_count(const an_hist *h)
{
    uint64_t n = 0;
    for (unsigned b = 0; h && b < AN_HIST_BUCKETS; b++)
        n += h->b[b];
    return n;
}

static uint64_t cell_redirects(const an_ser_cell *c)
{
    return c->n[AN_SC_MOVED] + c->n[AN_SC_ASK] + c->n[AN_SC_TRYAGAIN] + c->n[AN_SC_CROSSSLOT] +
           c->n[AN_SC_CLUSTERDOWN];
}

/* ---------------------------------------------------------------- buckets */

static void bucket_reset(an_ser_bucket *b)
{
    for (uint32_t i = 0; i < b->ncells; i++) {
        an_ser_cell *c = &b->cells[i];
        if (!c->other)
            an_map_del(&b->map, cell_hash(c->kind, c->idx, c->gen), (int32_t)i);
        cell_reset(c);
    }
    b->ncells = 0;
    memset(b->nkind, 0, sizeof b->nkind);
    for (unsigned k = 0; k < AN_SK_KINDS; k++)
        b->other[k] = AN_NONE;
}

static void bucket_free(an_ser_bucket *b)
{
    if (!b)
        return;
    for (uint32_t i = 0; i < b->cap; i++) {
        free(b->cells[i].h[0]);
        free(b->cells[i].h[1]);
    }
    free(b->cells);
    an_map_free(&b->map);
    free(b);
}

static an_ser_bucket *bucket_alloc(an_analyzer *an)
{
    an_series *s = &an->ser;
    if (s->nspare)
        return s->spare[--s->nspare];
    an_ser_bucket *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->cap = s->cap_cells;
    b->cells = calloc(b->cap, sizeof *b->cells);
    if (!b->cells || an_map_init(&b->map, b->cap)) {
        free(b->cells);
        free(b);
        return NULL;
    }
    for (unsigned k = 0; k < AN_SK_KINDS; k++)
        b->other[k] = AN_NONE;
    return b;
}

/* A new cell in b (AN_NONE when b is full: cannot happen within the caps). */
static int32_t cell_new(an_ser_bucket *b, unsigned kind)
{
    if (b->ncells >= b->cap)
        return AN_NONE;
    int32_t i = (int32_t)b->ncells++;
    b->cells[i].kind = (uint8_t)kind;
    b->cells[i].scopes = 1;
    return i;
}

/* The cell of scope (kind, idx) in b, made when new: the kind's "other" once
 * the bucket follows cfg.series_scopes of that kind. */
static int32_t cell_of(an_analyzer *an, an_ser_bucket *b, unsigned kind, int32_t idx)
{
    if (kind == AN_SK_CLUSTER)
        return b->ncells ? 0 : cell_new(b, kind);
    uint32_t gen = kind == AN_SK_CLIENT ? an->clients[idx].gen : 0;
    cell_key k = {(uint8_t)kind, idx, gen};
    uint64_t h = cell_hash(kind, idx, gen);
    int32_t i = an_map_find(&b->map, h, cell_eq, b, &k);
    if (i != AN_NONE)
        return i;
    if (b->nkind[kind] >= an->cfg.series_scopes) {
        an->st.series_overflow++;
        if (b->other[kind] == AN_NONE) {
            b->other[kind] = cell_new(b, kind);
            if (b->other[kind] != AN_NONE) {
                b->cells[b->other[kind]].other = 1;
                b->cells[b->other[kind]].scopes = 0;
            }
        }
        return b->other[kind];
    }
    i = cell_new(b, kind);
    if (i == AN_NONE || an_map_put(&b->map, h, i) != 0) {
        if (i != AN_NONE)
            b->ncells--;
        return AN_NONE;
    }
    b->nkind[kind]++;
    an_ser_cell *c = &b->cells[i];
    c->idx = idx;
    c->gen = gen;
    const char *name = "";
    if (kind == AN_SK_NODE) {
        name = an_node_name(an, idx);
    } else if (kind == AN_SK_CLIENT) {
        name = an_client_name(an, idx);
    } else {
        const an_mig *m = an->migs[idx];
        c->source = m ? m->source : AN_NONE;
        c->target = m ? m->target : AN_NONE;
    }
    an_copy_str(c->name, sizeof c->name, name ? name : "");
    return i;
}

/* ---------------------------------------------------------------- writing */

static void row_emit(an_analyzer *an, const an_ser_bucket *b, unsigned kind, const char *id,
                     const an_ser_cell *c)
{
    an_series_row r;
    memset(&r, 0, sizeof r);
    r.bucket_us = b->start_us;
    r.width_us = an->ser.width;
    r.scope = kind_names[kind];
    an_copy_str(r.scope_id, sizeof r.scope_id, id);
    r.scopes = c->scopes;
    r.commands = c->n[AN_SC_COMMANDS];
    r.moved = c->n[AN_SC_MOVED];
    r.ask = c->n[AN_SC_ASK];
    r.tryagain = c->n[AN_SC_TRYAGAIN];
    r.crossslot = c->n[AN_SC_CROSSSLOT];
    r.clusterdown = c->n[AN_SC_CLUSTERDOWN];
    r.asking = c->n[AN_SC_ASKING];
    r.retries = c->n[AN_SC_RETRIES];
    uint64_t nd = hist_count(c->h[0]), nx = hist_count(c->h[1]);
    r.direct_ops = nd;
    r.redirected_ops = nx;
    r.direct_p50_us = nd ? an_hist_quantile(c->h[0], nd, 0.50, INT64_MAX) : -1;
    r.direct_p99_us = nd ? an_hist_quantile(c->h[0], nd, 0.99, INT64_MAX) : -1;
    r.redirected_p50_us = nx ? an_hist_quantile(c->h[1], nx, 0.50, INT64_MAX) : -1;
    r.redirected_p99_us = nx ? an_hist_quantile(c->h[1], nx, 0.99, INT64_MAX) : -1;
    an->st.series_rows++;
    an->sink.series(an->sink.ctx, &r);
}

/* Most redirects first, then most commands, then by name: the same order
 * for every run. */
static int rank_cmp(const void *pa, const void *pb)
{
    const an_ser_cell *a = *(an_ser_cell *const *)pa, *b = *(an_ser_cell *const *)pb;
    uint64_t ra = cell_redirects(a), rb = cell_redirects(b);
    if (ra != rb)
        return ra > rb ? -1 : 1;
    if (a->n[AN_SC_COMMANDS] != b->n[AN_SC_COMMANDS])
        return a->n[AN_SC_COMMANDS] > b->n[AN_SC_COMMANDS] ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int slot_cmp(const void *pa, const void *pb)
{
    const an_ser_cell *a = *(an_ser_cell *const *)pa, *b = *(an_ser_cell *const *)pb;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* A scratch cell for sums (kept across buckets, like the buckets' cells). */
static an_ser_cell *scratch_cell(an_series *s)
{
    if (s->nscratch >= s->cap_cells)
        return NULL;
    an_ser_cell *c = &s->scratch[s->nscratch++];
    cell_reset(c);
    return c;
}

/* Consecutive slots of one migration (same source and target) summed into
 * ranges named "lo-hi"; the list becomes the ranges. */
static uint32_t slot_ranges(an_series *s, an_ser_cell **list, uint32_t n)
{
    qsort(list, n, sizeof *list, slot_cmp);
    uint32_t out = 0;
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i + 1;
        while (j < n && list[j]->idx == list[j - 1]->idx + 1 && list[j]->source == list[i]->source &&
               list[j]->target == list[i]->target)
            j++;
        an_ser_cell *r = scratch_cell(s);
        if (!r)
            return out;
        r->kind = AN_SK_SLOTS;
        r->idx = list[i]->idx;
        for (uint32_t k = i; k < j; k++)
            cell_merge(r, list[k]);
        r->scopes = 1;
        if (j - i == 1)
            snprintf(r->name, sizeof r->name, "%d", (int)list[i]->idx);
        else
            snprintf(r->name, sizeof r->name, "%d-%d", (int)list[i]->idx, (int)list[j - 1]->idx);
        list[out++] = r;
        i = j;
    }
    return out;
}

/* Write one kind's rows of bucket b: the top scopes, then the rest summed. */
static void emit_kind(an_analyzer *an, an_ser_bucket *b, unsigned kind)
{
    an_series *s = &an->ser;
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->ncells; i++)
        if (b->cells[i].kind == kind && !b->cells[i].other)
            s->list[n++] = &b->cells[i];
    if (kind == AN_SK_SLOTS)
        n = slot_ranges(s, s->list, n);
    qsort(s->list, n, sizeof *s->list, rank_cmp);
    uint32_t top = n < an->cfg.series_top ? n : an->cfg.series_top;
    for (uint32_t i = 0; i < top; i++)
        row_emit(an, b, kind, s->list[i]->name, s->list[i]);
    const an_ser_cell *over = b->other[kind] != AN_NONE ? &b->cells[b->other[kind]] : NULL;
    if (top == n && !over)
        return;
    an_ser_cell *rest = scratch_cell(s);
    if (!rest)
        return;
    rest->scopes = 0;
    for (uint32_t i = top; i < n; i++)
        cell_merge(rest, s->list[i]);
    if (over)
        cell_merge(rest, over);
    row_emit(an, b, kind, "other", rest);
}

static void bucket_emit(an_analyzer *an, an_ser_bucket *b)
{
    if (!an->sink.series || b->ncells == 0)
        return;
    an->ser.nscratch = 0;
    an_ser_cell *all = scratch_cell(&an->ser);
    if (!all)
        return;
    cell_merge(all, &b->cells[0]); /* the events that had no client */
    for (uint32_t i = 1; i < b->ncells; i++)
        if (b->cells[i].kind == AN_SK_CLIENT)
            cell_merge(all, &b->cells[i]);
    all->scopes = 1;
    row_emit(an, b, AN_SK_CLUSTER, "all", all);
    for (unsigned k = AN_SK_NODE; k < AN_SK_KINDS; k++)
        emit_kind(an, b, k);
}

/* an_ser_quick's copy of the newest bucket's start and seq. */
static void newest_changed(an_series *s)
{
    s->cur_start = s->n ? s->ring[s->n - 1]->start_us : INT64_MAX / 2;
    s->cur_seq = s->n ? s->ring[s->n - 1]->seq : 0;
}

/* Write the oldest open bucket and keep its memory for a later one. */
static void close_oldest(an_analyzer *an)
{
    an_series *s = &an->ser;
    an_ser_bucket *b = s->ring[0];
    bucket_emit(an, b);
    bucket_reset(b);
    memmove(s->ring, s->ring + 1, (s->n - 1) * sizeof s->ring[0]);
    s->n--;
    s->spare[s->nspare++] = b;
    newest_changed(s);
}

/* Open a bucket starting at start at ring position pos. */
static an_ser_bucket *open_at(an_analyzer *an, uint32_t pos, int64_t start)
{
    an_series *s = &an->ser;
    an_ser_bucket *b = bucket_alloc(an);
    if (!b)
        return NULL;
    b->start_us = start;
    if (++s->next_seq == 0)
        s->next_seq = 1;
    b->seq = s->next_seq;
    memmove(s->ring + pos + 1, s->ring + pos, (s->n - pos) * sizeof s->ring[0]);
    s->ring[pos] = b;
    s->n++;
    if (cell_of(an, b, AN_SK_CLUSTER, 0) == AN_NONE) {
        s->n--;
        memmove(s->ring + pos, s->ring + pos + 1, (s->n - pos) * sizeof s->ring[0]);
        s->spare[s->nspare++] = b;
        newest_changed(s);
        return NULL;
    }
    newest_changed(s);
    return b;
}

/* The bucket an event at ts counts in: opened when new (the oldest written
 * when too many are open); for an event older than every open bucket (or
 * one that cannot be opened in the middle), the earliest open one after it
 * (*late set). */
static an_ser_bucket *bucket_for(an_analyzer *an, int64_t ts, int *late)
{
    *late = 0;
    an_series *s = &an->ser;
    if ((uint64_t)ts - (uint64_t)s->cur_start < (uint64_t)s->width)
        return s->ring[s->n - 1]; /* the newest bucket (an_ser_quick's test) */
    if (ts < 0)
        ts = 0;
    int64_t start = ts - ts % s->width;
    if (s->n == 0 || start > s->ring[s->n - 1]->start_us) {
        while (s->n && (s->n >= s->kept ||
                        s->ring[0]->start_us <= start - (int64_t)s->kept * s->width))
            close_oldest(an);
        return open_at(an, s->n, start);
    }
    uint32_t i = s->n;
    while (i > 0 && s->ring[i - 1]->start_us > start)
        i--;
    if (i > 0 && s->ring[i - 1]->start_us == start)
        return s->ring[i - 1];
    /* start lies between ring[i - 1] and ring[i] (or before ring[0]) */
    if (s->n < s->kept && i > 0) {
        an_ser_bucket *b = open_at(an, i, start);
        if (b)
            return b;
    }
    *late = 1;
    return s->ring[i];
}

/* ---------------------------------------------------------------- events */

int an_ser_init(an_analyzer *an)
{
    an_series *s = &an->ser;
    const an_config *c = &an->cfg;
    s->width = an->sink.series ? c->series_bucket_us : 0; /* 0: no series */
    newest_changed(s);
    if (!s->width)
        return 0;
    int64_t kept = (2 * c->op_window_us + s->width - 1) / s->width + 2;
    s->kept = kept > AN_SER_MAX_BUCKETS ? AN_SER_MAX_BUCKETS : (uint32_t)kept;
    s->cap_cells = 1 + (AN_SK_KINDS - 1) * (c->series_scopes + 1);
    s->scratch = calloc(s->cap_cells, sizeof *s->scratch);
    s->list = calloc(s->cap_cells, sizeof *s->list);
    return s->scratch && s->list ? 0 : -1;
}

void an_ser_free(an_analyzer *an)
{
    an_series *s = &an->ser;
    for (uint32_t i = 0; i < s->n; i++)
        bucket_free(s->ring[i]);
    for (uint32_t i = 0; i < s->nspare; i++)
        bucket_free(s->spare[i]);
    for (uint32_t i = 0; s->scratch && i < s->cap_cells; i++) {
        free(s->scratch[i].h[0]);
        free(s->scratch[i].h[1]);
    }
    free(s->scratch);
    free(s->list);
    memset(s, 0, sizeof *s);
}

/* The scope cells of an event in bucket b: node, client (or, without one,
 * the cluster's own cell), slot. A node's or client's cell in the newest
 * bucket is remembered in its entry for an_ser_quick once it has its direct
 * histogram (and is not an "other"). */
static uint32_t cells_of(an_analyzer *an, an_ser_bucket *b, int32_t client, int32_t node,
                         int32_t slot, an_ser_cell *out[AN_SK_KINDS])
{
    uint32_t n = 0;
    int newest = b->seq == an->ser.cur_seq;
    if (node >= 0 && (uint32_t)node < an->nnodes) {
        an_nd *nd = &an->nodes[node];
        an_ser_cell *c = NULL;
        if (newest && nd->ser_seq == b->seq) {
            c = nd->ser_cp;
        } else {
            int32_t i = cell_of(an, b, AN_SK_NODE, node);
            c = i != AN_NONE ? &b->cells[i] : NULL;
            if (c && newest && !c->other && c->h[0]) {
                nd->ser_seq = b->seq;
                nd->ser_cp = c;
            }
        }
        if (c)
            out[n++] = c;
    }
    an_ser_cell *own = &b->cells[0];
    if (client >= 0 && (uint32_t)client < an->cfg.max_clients && an->clients[client].used) {
        an_cli *cl = &an->clients[client];
        if (newest && cl->ser_seq == b->seq) {
            own = cl->ser_cp;
        } else {
            int32_t i = cell_of(an, b, AN_SK_CLIENT, client);
            if (i != AN_NONE) {
                own = &b->cells[i];
                if (newest && !own->other && own->h[0]) {
                    cl->ser_seq = b->seq;
                    cl->ser_cp = own;
                }
            }
        }
    }
    out[n++] = own;
    if (slot >= 0 && slot < AN_SLOTS) {
        int32_t i = cell_of(an, b, AN_SK_SLOTS, slot);
        if (i != AN_NONE)
            out[n++] = &b->cells[i];
    }
    return n;
}

void an_ser_add(an_analyzer *an, int64_t ts, int32_t client, int32_t node, int32_t slot,
                int what, int lat, int64_t us)
{
    if (!an->sink.series || !an->ser.width)
        return;
    int late;
    an_ser_bucket *b = bucket_for(an, ts, &late);
    if (!b)
        return;
    if (late) /* each count placed late: the same figure on every path */
        an->st.series_late += (what >= 0) + (lat >= 0);
    an_ser_cell *cells[AN_SK_KINDS];
    uint32_t n = cells_of(an, b, client, node, slot, cells);
    for (uint32_t i = 0; i < n; i++) {
        if (what >= 0)
            cells[i]->n[what]++;
        if (lat >= 0)
            cell_add_lat(cells[i], lat, us);
    }
}

/* A cell made for a node or client gets its direct histogram now, so that
 * an_ser_quick finds it (the cache is only set for cells that have one). A
 * client whose cell could not be made counts in the cluster's own cell. */
void an_ser_quick_slow(an_analyzer *an, int64_t ts, int32_t client, int32_t node, int64_t us)
{
    if (!an->sink.series || !an->ser.width)
        return;
    int late;
    an_ser_bucket *b = bucket_for(an, ts, &late);
    if (!b)
        return;
    for (unsigned k = AN_SK_NODE; k <= AN_SK_CLIENT; k++) {
        int32_t idx = k == AN_SK_NODE ? node : client;
        if (idx < 0 || (k == AN_SK_NODE && (uint32_t)idx >= an->nnodes))
            continue;
        int32_t i = cell_of(an, b, k, idx);
        if (i != AN_NONE)
            cell_hist(&b->cells[i], 0);
    }
    an_ser_add(an, ts, client, node, -1, AN_SC_COMMANDS, us >= 0 ? 0 : -1, us);
}

void an_ser_flush(an_analyzer *an, int64_t now_us)
{
    an_series *s = &an->ser;
    while (s->n && s->ring[0]->start_us + (int64_t)s->kept * s->width <= now_us)
        close_oldest(an);
}

void an_ser_finish(an_analyzer *an)
{
    while (an->ser.n)
        close_oldest(an);
}
