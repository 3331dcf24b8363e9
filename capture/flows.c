/*
 * flows.c - the connection table.
 *
 * A fixed array of flows (sized at creation: the connection cap's share of
 * each partition the table holds, capture.h), a chained hash from the
 * 4-tuple to a flow, and two lists ordered by last activity: live
 * connections, and closed ones kept for a while so that their late packets
 * (the last ACK, a retransmitted FIN) do not look like new connections. Both
 * lists are kept in activity order by moving a flow to the end on each
 * packet, so the idle ones are always at the head: expiring and evicting
 * never scan the table. Each partition has the same two lists of its own
 * flows, for eviction: a partition full gives up its own oldest.
 *
 * The hash is symmetric (the same for a->b and b->a) so that both directions
 * find one flow without putting the endpoints in a canonical order first.
 * The bucket array is allocated for the cap, but only a power-of-two prefix
 * sized to the flows in use is used (doubled, and everything rehashed, when
 * flows outnumber buckets): a few hundred connections then touch a few pages
 * of buckets, not a megabyte of them spread over the TLB.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"

/* Buckets in use at first (16 KiB of heads). */
#define MIN_BUCKETS 4096u

/* Allocate a table for part_cap flows in each of parts partitions. calloc
 * leaves the pages untouched until a flow is used, so a large cap costs
 * address space, not memory. */
int cap_flows_init(cap_flows *ft, uint32_t part_cap, unsigned parts)
{
    uint64_t total = (uint64_t)part_cap * parts;
    uint32_t buckets = 1, cap = (uint32_t)total;
    memset(ft, 0, sizeof *ft);
    if (total == 0 || total > (1u << 30))
        return -1;
    ft->part_cap = part_cap;
    while (buckets < cap)
        buckets <<= 1;
    ft->flows = calloc((size_t)cap + 1, sizeof *ft->flows);
    ft->links = calloc((size_t)cap + 1, sizeof *ft->links);
    ft->buckets = calloc(buckets, sizeof *ft->buckets);
    if (ft->flows == NULL || ft->links == NULL || ft->buckets == NULL) {
        cap_flows_destroy(ft);
        return -1;
    }
    ft->cap = cap;
    ft->max_mask = buckets - 1;
    ft->mask = (buckets < MIN_BUCKETS ? buckets : MIN_BUCKETS) - 1;
    return 0;
}

/* Free the table. */
void cap_flows_destroy(cap_flows *ft)
{
    free(ft->flows);
    free(ft->links);
    free(ft->buckets);
    memset(ft, 0, sizeof *ft);
}

/* Double the buckets in use and rehash every flow in the table (live and
 * closed ones; free ones are not in the hash). Allocates nothing. */
static void grow_buckets(cap_flows *ft)
{
    uint32_t mask = ft->mask * 2 + 1;
    memset(ft->buckets, 0, ((size_t)mask + 1) * sizeof *ft->buckets);
    ft->mask = mask;
    for (uint32_t i = 1; i <= ft->fresh; i++) {
        uint32_t b;
        if (ft->flows[i].state == FLOW_FREE)
            continue;
        b = ft->links[i].hash & mask;
        ft->links[i].chain = ft->buckets[b];
        ft->buckets[b] = i;
    }
}

/* Take an unused flow keyed by src -> dst: recycled ones first, then the
 * never-used ones in order. NULL when the table is full. */
cap_flow *cap_flows_take(cap_flows *ft, const cap_endpoint *src,
                         const cap_endpoint *dst, uint32_t hash)
{
    uint32_t i;
    cap_flow *f;
    if (ft->free_list != FLOW_NONE) {
        i = ft->free_list;
        ft->free_list = ft->links[i].chain;
    } else if (ft->fresh < ft->cap) {
        i = ++ft->fresh;
    } else {
        return NULL;
    }
    f = &ft->flows[i];
    memset(f, 0, sizeof *f);
    f->ep[0] = *src;
    f->ep[1] = *dst;
    /* f is still FLOW_FREE here, so a rehash leaves it out. */
    if (++ft->used > ft->mask + 1 && ft->mask < ft->max_mask)
        grow_buckets(ft);
    f->state = FLOW_LIVE;
    f->pub.partition = (uint8_t)cap_partition_of(hash);
    ft->links[i].hash = hash;
    ft->links[i].chain = ft->buckets[hash & ft->mask];
    ft->buckets[hash & ft->mask] = i;
    cap_lru_append(ft, f, i);
    return f;
}

/* Move a live flow to the closed list; it stays in the hash. */
void cap_flows_mark_closed(cap_flows *ft, cap_flow *f)
{
    uint32_t i = cap_flows_index(ft, f);
    cap_lru_unlink(ft, f, i);
    f->state = FLOW_CLOSED;
    cap_lru_append(ft, f, i);
}

/* Remove a flow from its hash chain and list, and recycle it. */
void cap_flows_release(cap_flows *ft, cap_flow *f)
{
    uint32_t i = cap_flows_index(ft, f);
    uint32_t *link = &ft->buckets[ft->links[i].hash & ft->mask];
    while (*link != i && *link != FLOW_NONE)
        link = &ft->links[*link].chain;
    if (*link == i)
        *link = ft->links[i].chain;
    cap_lru_unlink(ft, f, i);
    ft->used--;
    f->state = FLOW_FREE;
    ft->links[i].chain = ft->free_list;
    ft->free_list = i;
}
