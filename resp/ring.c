/*
 * ring.c - the in-flight ring of a connection: the requests sent and not yet
 * answered, in order (pair.c queues at the tail and pairs at the head).
 *
 * One ring per connection, a power of two of cache-line entries, grown by
 * doubling and cut back only after a window of quiet (ring_maybe_shrink), so
 * that no connection resizes per command and memory follows what is in
 * flight, not the capture's length. The hot accessors are inline in
 * pair_internal.h; this file holds what runs when the ring changes size.
 */
#include <stddef.h>
#include <stdlib.h>

#include "resp/pair_internal.h"

/* n in-flight entries, on cache-line boundaries (an entry is a whole number
 * of lines: the fields a command touches fall on as few lines as the layout
 * allows, whatever the entry's place in its ring), NOT initialised: a ring
 * initialises each entry when it first hands it out (ring_fresh), so a ring
 * grown for a burst makes resident only the entries the burst used, not the
 * whole doubled capacity. NULL on out of memory. Free with free(). */
static rq_entry *entries_alloc(size_t n)
{
    if (n > SIZE_MAX / sizeof(rq_entry))
        return NULL;
    return aligned_alloc(_Alignof(rq_entry), n * sizeof(rq_entry));
}

/* One initialised entry (the overflow scratch, the pipeline's spare). */
rq_entry *ring_entry_new(void)
{
    rq_entry *e = entries_alloc(1);
    if (e != NULL)
        entry_init(e);
    return e;
}

/* The ring's entries are about to move to new_ring (its head at index 0),
 * or to be freed (NULL). The reply being decoded moves with its entry, the
 * head (see reply_begin); a pointer to any other entry is one to a
 * reply already handed over, which nothing writes again: it goes back to
 * the scratch. */
static void rep_rebase(rc_conn *c, rq_entry *new_ring)
{
    if (c->rpd.rep == &c->reply)
        return;
    if (new_ring != NULL && c->count > 0 && c->rpd.rep == &ring_at(c, 0)->cmd.reply)
        c->rpd.rep = &new_ring[0].cmd.reply;
    else
        c->rpd.rep = &c->reply;
}

/* Move the queued entries to a new ring of ncap entries (a power of two, at
 * least count). Returns -1 if memory ran out (the old ring stays). */
static int ring_resize(rc_conn *c, uint32_t ncap)
{
    rq_entry *nr = entries_alloc(ncap);
    if (nr == NULL)
        return -1;
    for (uint32_t i = 0; i < c->count; i++)
        memcpy(&nr[i], ring_at(c, i), sizeof(*nr));
    rep_rebase(c, nr);
    free(c->ring);
    c->ring = nr;
    c->ring_cap = ncap;
    c->head = 0;
    c->rp->ring_resident += (uint64_t)c->count - c->ring_fresh;
    c->ring_fresh = c->count; /* the copies are initialised, the rest not */
    return 0;
}

/* Make room for one more entry after the queued ones. Returns -1 if memory
 * ran out. Capacities are powers of two. */
int ring_reserve(rc_conn *c)
{
    if (c->ring != NULL && c->count + 1 <= c->ring_cap)
        return 0;
    /* most connections: 1; after a shrink, back to the size it had */
    uint32_t ncap = c->ring_cap ? c->ring_cap * 2 : 2;
    return ring_resize(c, ncap);
}

/* Free a drained ring. */
static void ring_release(rc_conn *c)
{
    rep_rebase(c, NULL);
    free(c->ring);
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
    c->ring_hw = 0;
    c->ring_win = 0;
}

