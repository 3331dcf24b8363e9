/*
 * servers.c - endpoints the capture has shown to be servers.
 *
 * The receiver of a SYN and the sender of a SYN-ACK listen: a connection
 * picked up later without its handshake, between such an endpoint and one
 * that is not, is oriented by that (capture/tracker.c, before the shape of
 * its first bytes), whichever side happens to talk first.
 *
 * Determinism across threads: each endpoint is stamped with the number of
 * the record that showed it, noted by one thread in record order (the
 * tracker itself, or the reader of a sharded run before it hands the record
 * on), and a connection opened at record r reads only stamps below r. What a
 * lookup answers is then a function of the records before r alone, not of
 * how far other threads got: the same for every --threads.
 *
 * Open addressing with linear probing, no deletion, a fixed size: a slot's
 * stamp is written last (release) and read first (acquire), so a reader on
 * another thread never sees a half-written endpoint, and an empty slot ends
 * a probe safely (an endpoint noted earlier was placed before any slot that
 * was still empty then). When 3/4 full, further endpoints are counted and
 * not kept (servers are few; the cap bounds a scan's worth of SYNs).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"

#define SERVERS_SLOTS 8192u                       /* a power of two */
#define SERVERS_MAX (SERVERS_SLOTS / 4 * 3)       /* endpoints kept at most */

typedef struct server_slot {
    cap_endpoint ep;          /* valid once stamp is nonzero */
    _Atomic uint64_t stamp;   /* record that showed it; 0: empty */
} server_slot;

struct cap_servers {
    server_slot *slots;
    uint32_t used;            /* endpoints kept (writer only) */
    _Atomic uint64_t dropped; /* endpoints not kept: the table was full */
};

cap_servers *cap_servers_new(void)
{
    cap_servers *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->slots = calloc(SERVERS_SLOTS, sizeof *s->slots);
    if (s->slots == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

void cap_servers_free(cap_servers *s)
{
    if (s == NULL)
        return;
    free(s->slots);
    free(s);
}

/* Note that ep serves, as shown by record index (writer thread only).
 * Returns 1 when it did not fit. */
static int servers_add(cap_servers *s, uint64_t index, const cap_endpoint *ep)
{
    uint32_t i = (uint32_t)cap_hash_endpoint(ep) & (SERVERS_SLOTS - 1);
    for (;; i = (i + 1) & (SERVERS_SLOTS - 1)) {
        server_slot *sl = &s->slots[i];
        if (atomic_load_explicit(&sl->stamp, memory_order_relaxed) == 0)
            break;
        if (cap_same_endpoint(&sl->ep, ep))
            return 0; /* the first record that showed it stays */
    }
    if (s->used >= SERVERS_MAX) {
        atomic_fetch_add_explicit(&s->dropped, 1, memory_order_relaxed);
        return 1;
    }
    s->used++;
    memset(&s->slots[i].ep, 0, sizeof s->slots[i].ep);
    s->slots[i].ep.addr.family = ep->addr.family;
    memcpy(s->slots[i].ep.addr.bytes, ep->addr.bytes, ep->addr.family == 4 ? 4 : 16);
    s->slots[i].ep.port = ep->port;
    atomic_store_explicit(&s->slots[i].stamp, index ? index : 1, memory_order_release);
    return 0;
}

int cap_servers_note_pkt(cap_servers *s, uint64_t index, const cap_pkt *p)
{
    if (s == NULL || !(p->flags & TCP_SYN) || (p->flags & TCP_RST))
        return 0;
    /* SYN: its receiver listens; SYN-ACK: its sender does. */
    return servers_add(s, index, (p->flags & TCP_ACK) ? &p->src : &p->dst);
}

int cap_servers_known(const cap_servers *s, const cap_endpoint *ep, uint64_t before)
{
    if (s == NULL)
        return 0;
    uint32_t i = (uint32_t)cap_hash_endpoint(ep) & (SERVERS_SLOTS - 1);
    for (;; i = (i + 1) & (SERVERS_SLOTS - 1)) {
        const server_slot *sl = &s->slots[i];
        uint64_t stamp = atomic_load_explicit(&sl->stamp, memory_order_acquire);
        if (stamp == 0)
            return 0;
        if (cap_same_endpoint(&sl->ep, ep))
            return stamp < before;
    }
}

uint64_t cap_servers_dropped(const cap_servers *s)
{
    return s ? atomic_load_explicit(&s->dropped, memory_order_relaxed) : 0;
}

int cap_record_route(const cap_record *rec, uint64_t index, cap_servers *s, uint32_t *hash)
{
    cap_pkt p;
    if (cap_decode(rec->linktype, rec->data, rec->caplen, rec->wirelen, &p) != CAP_DEC_TCP)
        return 0;
    cap_servers_note_pkt(s, index, &p);
    *hash = cap_flows_hash(&p.src, &p.dst);
    return 1;
}
