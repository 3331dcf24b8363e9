/*
 * flows.c - the connection table.
 *
 * A fixed array of flows (sized at creation: the connection cap), a chained
 * hash from the 4-tuple to a flow, and two lists ordered by last activity:
 * live connections, and closed ones kept for a while so that their late
 * packets (the last ACK, a retransmitted FIN) do not look like new
 * connections. Both lists are kept in activity order by moving a flow to the
 * end on each packet, so the idle ones are always at the head: expiring and
 * evicting never scan the table.
 *
 * The hash is symmetric (the same for a->b and b->a) so that both directions
 * find one flow without putting the endpoints in a canonical order first.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"

/* Allocate a table for cap flows. calloc leaves the pages untouched until a
 * flow is used, so a large cap costs address space, not memory. */
int cap_flows_init(cap_flows *ft, uint32_t cap)
{
    uint32_t buckets = 1;
    memset(ft, 0, sizeof *ft);
    if (cap == 0 || cap > (1u << 30))
        return -1;
    while (buckets < cap)
        buckets <<= 1;
    ft->flows = calloc((size_t)cap + 1, sizeof *ft->flows);
    ft->buckets = calloc(buckets, sizeof *ft->buckets);
    if (ft->flows == NULL || ft->buckets == NULL) {
        cap_flows_destroy(ft);
        return -1;
    }
    ft->cap = cap;
    ft->mask = buckets - 1;
    return 0;
}

/* Free the table. */
void cap_flows_destroy(cap_flows *ft)
{
    free(ft->flows);
    free(ft->buckets);
    memset(ft, 0, sizeof *ft);
}

/* Hash one endpoint: address words, port and family mixed by a multiply. */
static inline uint64_t hash_endpoint(const cap_endpoint *ep)
{
    uint64_t lo, hi, x;
    memcpy(&lo, ep->addr.bytes, 8);
    memcpy(&hi, ep->addr.bytes + 8, 8);
    x = lo ^ (hi << 29 | hi >> 35) ^ ((uint64_t)ep->port << 8 | ep->addr.family);
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 31);
}

/* Symmetric hash of a 4-tuple: a sum does not care about the order. */
uint32_t cap_flows_hash(const cap_endpoint *a, const cap_endpoint *b)
{
    uint64_t x = hash_endpoint(a) + hash_endpoint(b);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(x >> 32);
}

/* 1 when two endpoints are equal (inline: this is the hot lookup). */
static inline int same_endpoint(const cap_endpoint *a, const cap_endpoint *b)
{
    return a->port == b->port && a->addr.family == b->addr.family &&
           memcmp(a->addr.bytes, b->addr.bytes, 16) == 0;
}

/* Find the flow of (src, dst) in either direction. */
cap_flow *cap_flows_find(cap_flows *ft, const cap_endpoint *src,
                         const cap_endpoint *dst, uint32_t hash, int *side)
{
    uint32_t i = ft->buckets[hash & ft->mask];
    while (i != FLOW_NONE) {
        cap_flow *f = &ft->flows[i];
        if (f->hash == hash) {
            if (same_endpoint(&f->ep[0], src) && same_endpoint(&f->ep[1], dst)) {
                *side = 0;
                return f;
            }
            if (same_endpoint(&f->ep[1], src) && same_endpoint(&f->ep[0], dst)) {
                *side = 1;
                return f;
            }
        }
        i = f->chain;
    }
    return NULL;
}

/* The list a flow is on, by its state. */
static cap_lru *list_of(cap_flows *ft, const cap_flow *f)
{
    return f->state == FLOW_CLOSED ? &ft->closed : &ft->live;
}

/* Number of a flow (its index in flows[]). */
static uint32_t index_of(const cap_flows *ft, const cap_flow *f)
{
    return (uint32_t)(f - ft->flows);
}

/* Take f out of list l. */
static void list_unlink(cap_flows *ft, cap_lru *l, cap_flow *f)
{
    if (f->prev != FLOW_NONE)
        ft->flows[f->prev].next = f->next;
    else
        l->head = f->next;
    if (f->next != FLOW_NONE)
        ft->flows[f->next].prev = f->prev;
    else
        l->tail = f->prev;
    f->prev = f->next = FLOW_NONE;
    l->count--;
}

/* Put f at the end (most recent) of list l. */
static void list_append(cap_flows *ft, cap_lru *l, cap_flow *f)
{
    uint32_t i = index_of(ft, f);
    f->prev = l->tail;
    f->next = FLOW_NONE;
    if (l->tail != FLOW_NONE)
        ft->flows[l->tail].next = i;
    else
        l->head = i;
    l->tail = i;
    l->count++;
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
        ft->free_list = ft->flows[i].chain;
    } else if (ft->fresh < ft->cap) {
        i = ++ft->fresh;
    } else {
        return NULL;
    }
    f = &ft->flows[i];
    memset(f, 0, sizeof *f);
    f->ep[0] = *src;
    f->ep[1] = *dst;
    f->hash = hash;
    f->state = FLOW_LIVE;
    f->chain = ft->buckets[hash & ft->mask];
    ft->buckets[hash & ft->mask] = i;
    list_append(ft, &ft->live, f);
    return f;
}

/* Move a live flow to the closed list; it stays in the hash. */
void cap_flows_mark_closed(cap_flows *ft, cap_flow *f)
{
    list_unlink(ft, &ft->live, f);
    f->state = FLOW_CLOSED;
    list_append(ft, &ft->closed, f);
}

/* Remove a flow from its hash chain and list, and recycle it. */
void cap_flows_release(cap_flows *ft, cap_flow *f)
{
    uint32_t i = index_of(ft, f);
    uint32_t *link = &ft->buckets[f->hash & ft->mask];
    while (*link != i && *link != FLOW_NONE)
        link = &ft->flows[*link].chain;
    if (*link == i)
        *link = f->chain;
    list_unlink(ft, list_of(ft, f), f);
    f->state = FLOW_FREE;
    f->chain = ft->free_list;
    ft->free_list = i;
}

/* Mark f as just active: move it to the end of its list. */
void cap_flows_touch(cap_flows *ft, cap_flow *f)
{
    cap_lru *l = list_of(ft, f);
    if (l->tail == index_of(ft, f))
        return;
    list_unlink(ft, l, f);
    list_append(ft, l, f);
}
