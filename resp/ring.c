/*
 * ring.c - the in-flight FIFOs of a connection: the requests sent and not
 * yet answered, in order (pair.c queues at the tail and pairs at the head),
 * as 128-byte slots, and the text of those requests (names, kept arguments,
 * first keys) beside them.
 *
 * Both are FIFOs of bytes in pages of RQ_PAGE bytes (rq_pages): a page is
 * taken from the pipeline's pool when the tail enters it and given back
 * when the head leaves it, so a FIFO never resizes or copies, and what all
 * connections hold follows what is in flight now, not what each connection
 * once had in flight (a lossy reply stream makes every connection deep at
 * some time, not all at once). Only the small array of page pointers grows
 * (by doubling) when a connection's span needs more pages than ever. The
 * hot accessors, and packing a request into its slot and text and
 * unpacking it for the sink, are inline in pair_internal.h; this file
 * holds what runs when a page is taken or given back, and the pool of
 * whole entries: most requests (a connection's first RQ_WHOLE_CONN in
 * flight, while the pipeline has entries free) are decoded into one of
 * those, and their slot only points to it, so that they are neither
 * packed nor unpacked.
 */
#include <stddef.h>
#include <stdlib.h>

#include "resp/pair_internal.h"

/* ---------------------------------------------------------------- pool */

/* The pool is a stack of free pages linked through their first bytes. */

/* Take the pool's first page (the pool is not empty). */
static inline uint8_t *pool_pop(resp_pipeline *rp)
{
    uint8_t *p = rp->pool;
    memcpy(&rp->pool, p, sizeof(void *));
    rp->pool_n--;
    return p;
}

/* Put page p first in the pool. */
static inline void pool_push(resp_pipeline *rp, uint8_t *p)
{
    memcpy(p, &rp->pool, sizeof(void *));
    rp->pool = p;
    rp->pool_n++;
}

/* Does the pool keep a page given back while used pages stay in use? Not
 * when it already holds RQ_POOL_KEEP pages and at least as many as are in
 * use (then the page is freed, so that the pool does not keep the memory
 * of a burst long past it). */
static inline int pool_keeps(const resp_pipeline *rp, uint64_t used)
{
    return rp->pool_n < RQ_POOL_KEEP || rp->pool_n < used;
}

/* A page: from the pool, or allocated (on cache-line boundaries: slots are
 * two lines each). NULL on out of memory. */
static uint8_t *page_get(resp_pipeline *rp)
{
    uint8_t *p;
    if (rp->pool != NULL) {
        p = pool_pop(rp);
    } else {
        p = aligned_alloc(64, RQ_PAGE);
        if (p == NULL)
            return NULL;
        rp->page_allocs++;
        if (rp->pages_used + rp->pool_n + 1 > rp->pages_peak)
            rp->pages_peak = rp->pages_used + rp->pool_n + 1;
    }
    rp->pages_used++;
    return p;
}

/* Give a page back: to the pool, or freed (pool_keeps). */
static void page_put(resp_pipeline *rp, uint8_t *p)
{
    rp->pages_used--;
    if (!pool_keeps(rp, rp->pages_used)) {
        free(p);
        return;
    }
    pool_push(rp, p);
}

/* Free the pool (resp_free). */
void pages_pool_free(resp_pipeline *rp)
{
    while (rp->pool != NULL)
        free(pool_pop(rp));
}

/* ---------------------------------------------------------------- FIFOs */

_Static_assert(RQ_PAGE % sizeof(rq_slot) == 0, "a slot never straddles a page");

/* Page numbers wrap with positions: 2^32 / RQ_PAGE of them. */
#define PAGE_NUM_MASK ((1u << (32 - RQ_PAGE_SHIFT)) - 1)

static inline uint32_t page_num(uint32_t pos)
{
    return (pos >> RQ_PAGE_SHIFT) & PAGE_NUM_MASK;
}

/* How many pages f holds. */
static uint32_t pages_held(const rq_pages *f)
{
    return (f->end - (f->head & ~(RQ_PAGE - 1))) >> RQ_PAGE_SHIFT;
}

/* Make page[] hold at least n pages (a power of two). Returns -1 if memory
 * ran out (nothing changed). */
static int pages_index_grow(rq_pages *f, uint32_t n)
{
    uint32_t ncap = f->cap ? f->cap : 4;
    while (ncap < n)
        ncap *= 2;
    uint8_t **np = malloc((size_t)ncap * sizeof(*np));
    if (np == NULL)
        return -1;
    uint32_t first = page_num(f->head), held = pages_held(f);
    for (uint32_t i = 0; i < held; i++) {
        uint32_t pn = (first + i) & PAGE_NUM_MASK;
        np[pn & (ncap - 1)] = f->page[pn & (f->cap - 1)];
    }
    free(f->page);
    f->page = np;
    f->cap = ncap;
    return 0;
}

/* pages_need_slow in general: take pages until n bytes after the tail
 * fit, growing the index and allocating pages as needed. Returns -1 if
 * memory ran out (the pages taken stay held). */
static PAIR_RARE int pages_need_general(resp_pipeline *rp, rq_pages *f, uint32_t n)
{
    while (f->end - f->tail < n) {
        uint32_t held = pages_held(f);
        if (held + 1 > f->cap && pages_index_grow(f, held + 1) != 0)
            return -1;
        uint8_t *p = page_get(rp);
        if (p == NULL)
            return -1;
        f->page[page_num(f->end) & (f->cap - 1)] = p;
        f->end += RQ_PAGE;
    }
    return 0;
}

/* The slow part of pages_need: take pages until n bytes after the tail
 * fit (they do not yet: its callers check). Returns -1 if memory ran out
 * (the pages taken stay held). Its
 * common case, one page that the pool has and the index has room for,
 * calls nothing (so it saves no registers); the rest is
 * pages_need_general's. */
int pages_need_slow(resp_pipeline *rp, rq_pages *f, uint32_t n)
{
    if (rp->pool == NULL || f->end - f->tail + RQ_PAGE < n || pages_held(f) >= f->cap)
        return pages_need_general(rp, f, n);
    rp->pages_used++;
    f->page[page_num(f->end) & (f->cap - 1)] = pool_pop(rp);
    f->end += RQ_PAGE;
    return 0;
}

/* pages_drop_slow in general: any number of pages, some of them maybe
 * freed rather than pooled (page_put). */
static PAIR_RARE void pages_drop_general(resp_pipeline *rp, rq_pages *f, uint32_t new_head)
{
    uint32_t stop = page_num(new_head);
    for (uint32_t pn = page_num(f->head); pn != stop; pn = (pn + 1) & PAGE_NUM_MASK)
        page_put(rp, f->page[pn & (f->cap - 1)]);
    f->head = new_head;
}

/* The slow part of pages_drop_to: give back the pages before the one that
 * holds new_head (the head left them; all of them when new_head is end).
 * Its common case, one page that the pool keeps, calls nothing; the rest
 * is pages_drop_general's. */
void pages_drop_slow(resp_pipeline *rp, rq_pages *f, uint32_t new_head)
{
    uint32_t first = page_num(f->head);
    if (page_num(new_head) != ((first + 1) & PAGE_NUM_MASK) ||
        !pool_keeps(rp, rp->pages_used - 1)) {
        pages_drop_general(rp, f, new_head);
        return;
    }
    rp->pages_used--;
    pool_push(rp, f->page[first & (f->cap - 1)]);
    f->head = new_head;
}

/* Give back every page and, when it has grown past its first size, the
 * index: the FIFO is empty (and its next byte starts a page). */
void pages_release(resp_pipeline *rp, rq_pages *f)
{
    uint32_t held = pages_held(f), first = page_num(f->head);
    for (uint32_t i = 0; i < held; i++)
        page_put(rp, f->page[((first + i) & PAGE_NUM_MASK) & (f->cap - 1)]);
    f->head = f->tail = f->end;
    if (f->cap > 4) {
        free(f->page);
        f->page = NULL;
        f->cap = 0;
    }
}

/* Free a FIFO's pages and index (the connection is freed). */
void pages_free(resp_pipeline *rp, rq_pages *f)
{
    pages_release(rp, f);
    free(f->page);
    f->page = NULL;
    f->cap = 0;
}

/* ---------------------------------------------------------------- packed slots */

/* Where the text of r (its name name_len bytes, key0 stored unless dup)
 * goes when the tail's page may not have room for the most it could take
 * (slot_pack): measured, at the tail if it fits there with its slack,
 * else at the next page; pages taken as needed. Returns -1 if memory ran
 * out. */
int text_place(rc_conn *c, const resp_request *r, uint32_t name_len, int dup, uint32_t *at)
{
    rq_pages *f = &c->text;
    uint32_t len = text_len(r, name_len, dup);
    uint32_t pos = f->tail;
    if ((pos & (RQ_PAGE - 1)) + len + RQ_TEXT_SLACK > RQ_PAGE)
        pos = (pos + RQ_PAGE - 1) & ~(RQ_PAGE - 1);
    if (f->end - pos < len && pages_need_slow(c->rp, f, pos + len - f->tail) != 0)
        return -1;
    *at = pos;
    return 0;
}

/* ---------------------------------------------------------------- whole entries */

/* The pipeline's whole entries (resp_new): one array, whose pages are
 * touched only as entries are first used. Returns -1 if memory ran out
 * (then every request is packed). */
int whole_pool_init(resp_pipeline *rp)
{
    rp->whole = malloc(RQ_WHOLE_MAX * sizeof(*rp->whole));
    rp->whole_free = malloc(RQ_WHOLE_MAX * sizeof(*rp->whole_free));
    if (rp->whole == NULL || rp->whole_free == NULL) {
        whole_pool_free(rp);
        return -1;
    }
    rp->whole_cap = RQ_WHOLE_MAX;
    return 0;
}

void whole_pool_free(resp_pipeline *rp)
{
    free(rp->whole);
    free(rp->whole_free);
    rp->whole = NULL;
    rp->whole_free = NULL;
    rp->whole_cap = rp->whole_nfree = rp->whole_made = 0;
}

/* An entry never used before (none is free, whole_made < whole_cap): its
 * reply starts cleared, as the out buffer's (emit keeps the error text and
 * redirection so between errors). */
rq_entry *whole_first_use(resp_pipeline *rp)
{
    rq_entry *e = &rp->whole[rp->whole_made++];
    memset(e, 0, sizeof(*e));
    e->cmd.reply.redir.slot = -1;
    e->whole = (uint16_t)rp->whole_made;
    return e;
}

/* Every queued slot goes (not emitted) with the whole entries it holds:
 * the FIFOs are empty after. */
void ring_release_all(rc_conn *c)
{
    for (uint32_t i = 0; i < c->count; i++) {
        const rq_slot *s = ring_at(c, i);
        if (s->whole != 0)
            whole_give(c, s->whole);
    }
    c->count = 0;
    pages_release(c->rp, &c->ring);
    pages_release(c->rp, &c->text);
}

/* The request being decoded is no more (the connection goes, or nothing
 * was queued): a whole entry it was in goes back. */
void whole_release_cur(rc_conn *c)
{
    if (c->cur->whole != 0) {
        whole_give(c, c->cur->whole);
        c->cur = &c->stage;
    }
}
