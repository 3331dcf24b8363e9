/*
 * ring.c - the in-flight ring of a connection: the requests sent and not yet
 * answered, in order (pair.c queues at the tail and pairs at the head).
 *
 * One ring per connection, a power of two of two-line slots, grown by
 * doubling and cut back only after a window of quiet (ring_maybe_shrink), so
 * that no connection resizes per command and memory follows what is in
 * flight, not the capture's length. The hot accessors are inline in
 * pair_internal.h; this file holds what runs when the ring changes size,
 * and the same for the text FIFO beside it (the slots' names, arguments and
 * keys, rc_conn.text).
 */
#include <stddef.h>
#include <stdlib.h>

#include "resp/pair_internal.h"

/* n in-flight slots, on cache-line boundaries (a slot is two lines: the
 * pairing facts on the first), NOT initialised: a ring initialises each
 * slot when it first hands it out (ring_fresh), so a ring grown for a burst
 * makes resident only the slots the burst used, not the whole doubled
 * capacity. NULL on out of memory. Free with free(). */
static rq_slot *slots_alloc(size_t n)
{
    if (n > SIZE_MAX / sizeof(rq_slot))
        return NULL;
    return aligned_alloc(_Alignof(rq_slot), n * sizeof(rq_slot));
}

/* Move the queued slots to a new ring of ncap slots (a power of two, at
 * least count). Returns -1 if memory ran out (the old ring stays). */
static int ring_resize(rc_conn *c, uint32_t ncap)
{
    rq_slot *nr = slots_alloc(ncap);
    if (nr == NULL)
        return -1;
    for (uint32_t i = 0; i < c->count; i++)
        memcpy(&nr[i], ring_at(c, i), sizeof(*nr));
    free(c->ring);
    c->ring = nr;
    c->ring_cap = ncap;
    c->head = 0;
    c->rp->ring_resident += (uint64_t)c->count - c->ring_fresh;
    c->ring_fresh = c->count; /* the copies are initialised, the rest not */
    c->rp->ring_resizes++;
    return 0;
}

static int text_resize(rc_conn *c, uint32_t ncap);

/* Make room for one more slot after the queued ones. Returns -1 if memory
 * ran out. Capacities are powers of two. A new ring comes with its text
 * FIFO (TEXT_KEEP bytes), so that a request's text finds room at once. */
int ring_reserve(rc_conn *c)
{
    if (c->ring != NULL && c->count + 1 <= c->ring_cap)
        return 0;
    if (c->text == NULL && text_resize(c, TEXT_KEEP) != 0)
        return -1;
    /* most connections: 1; after a shrink, back to the size it had */
    uint32_t ncap = c->ring_cap ? c->ring_cap * 2 : 2;
    return ring_resize(c, ncap);
}

/* Move the text held to a FIFO of ncap bytes (a power of two, at least what
 * is held): each byte keeps its position, so the slots' text_pos stay
 * valid. ncap 0 frees an empty FIFO. Returns -1 if memory ran out. */
static int text_resize(rc_conn *c, uint32_t ncap)
{
    uint8_t *nt = NULL;
    if (ncap > 0 && (nt = malloc(ncap)) == NULL)
        return -1;
    for (uint32_t pos = c->text_head; pos != c->text_tail;) {
        uint32_t at = pos & (ncap - 1), from = pos & (c->text_cap - 1);
        uint32_t n = c->text_tail - pos;
        n = n < ncap - at ? n : ncap - at;
        n = n < c->text_cap - from ? n : c->text_cap - from;
        memcpy(nt + at, c->text + from, n);
        pos += n;
    }
    free(c->text);
    c->text = nt;
    c->text_cap = ncap;
    c->rp->ring_resizes++;
    return 0;
}

/* Room for need more text bytes (text_room said there was none). Returns
 * -1 if memory ran out. */
int text_grow(rc_conn *c, uint32_t need)
{
    uint64_t want = (uint64_t)(c->text_tail - c->text_head) + need;
    uint64_t ncap = c->text_cap ? c->text_cap : TEXT_KEEP;
    while (ncap < want)
        ncap *= 2;
    if (ncap > (1u << 31))
        return -1;
    return text_resize(c, (uint32_t)ncap);
}

/* Free a drained ring. */
static void ring_release(rc_conn *c)
{
    free(c->ring);
    free(c->text); /* empty: nothing is queued */
    c->text = NULL;
    c->text_cap = 0;
    c->text_hw = 0;
    c->rp->ring_resident -= c->ring_fresh;
    c->ring = NULL;
    c->ring_cap = 0;
    c->ring_fresh = 0;
    c->head = 0;
    c->ring_hw = 0;
    c->ring_win = 0;
    c->rp->ring_shrinks++;
}

/* Give memory back after a burst: a ring only ever grows while requests are
 * queued, so without this it would keep the deepest pipeline a connection
 * ever had (and the memory would grow with the length of the capture).
 *
 * Once a window of RING_WINDOW x ring_cap requests has passed, a ring whose
 * queue never got deeper than a quarter of its capacity in that window is
 * cut to twice that depth (at least RING_KEEP entries). Nothing else ever
 * shrinks a ring, not even draining it: a connection that fills its ring
 * and empties it again and again (a stream nobody answers, cut at the
 * in-flight cap; bursts) keeps one ring instead of growing and giving back
 * its memory each time, which cost a copy and page faults per round. The
 * window and the factor four between growing and shrinking make the copies
 * amortised: at most one resize per window, never per command. But the
 * entries all rings hold (touched, so resident) stay within one
 * connection's in-flight cap (max_inflight): past it, a drained ring is
 * freed, or rings kept after their bursts would add up beyond what is in
 * flight (several streams nobody answers would each keep a full ring). */
void ring_maybe_shrink(rc_conn *c)
{
    if (c->ring_cap <= RING_KEEP)
        return;
    if (c->count == 0 && c->rp->ring_resident > c->rp->cfg.max_inflight) {
        ring_release(c);
        return;
    }
    if (c->ring_win < (uint64_t)RING_WINDOW * c->ring_cap)
        return;
    uint32_t need = c->ring_hw > c->count + 1 ? c->ring_hw : c->count + 1;
    if ((uint64_t)need * 4 <= c->ring_cap) {
        uint32_t ncap = RING_KEEP;
        while (ncap < 2 * need)
            ncap *= 2;
        if (ncap < c->ring_cap && ring_resize(c, ncap) == 0)
            c->rp->ring_shrinks++;
    }
    /* the text FIFO follows the same rule, in bytes */
    uint32_t held = c->text_tail - c->text_head;
    uint32_t tneed = c->text_hw > held ? c->text_hw : held;
    if (c->text_cap > TEXT_KEEP && (uint64_t)tneed * 4 <= c->text_cap) {
        uint32_t ncap = TEXT_KEEP;
        while (ncap < 2 * tneed)
            ncap *= 2;
        if (ncap < c->text_cap)
            text_resize(c, ncap);
    }
    c->ring_hw = 0;
    c->text_hw = 0;
    c->ring_win = 0;
}

