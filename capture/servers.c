/*
 * servers.c - endpoints the capture has shown to be servers, and by what.
 *
 * Proofs (cap_proof): the receiver of a SYN and the sender of a SYN-ACK
 * listen (the tracker notes them); an endpoint named in a CLUSTER SLOTS,
 * SHARDS or NODES reply, a MOVED/ASK target, and the master a replica sends
 * REPLCONF/PSYNC to serve (resp/ notes them once it has decoded the
 * command). A connection picked up later without its handshake, between
 * such an endpoint and one that is not, is oriented by that
 * (capture/tracker.c, before the shape of its first bytes), whichever side
 * happens to talk first.
 *
 * Determinism across threads: each proof is stamped with the number of the
 * record being processed when it was made (cap_event.index for what resp
 * learns), and a connection opened at record r reads only stamps below r.
 * What a lookup answers is then a function of the records before r alone,
 * not of how far other threads got: the same for every --threads, provided
 * every proof below r is in the table when the lookup is made. Handshakes
 * are noted ahead (by the tracker itself, or by the reader of a sharded run
 * before it hands the record on); for resp's proofs the tracker first calls
 * cap_config.await_proofs, which returns once the threads that decode have
 * passed record r - 1 (run/ says how; with one thread they always have).
 * A proof seen again with a lower stamp lowers it (an atomic minimum), so
 * the order in which threads note does not matter either.
 *
 * Open addressing with linear probing, no deletion, a fixed size. A new
 * endpoint is placed under a mutex (several threads note: the tracker or
 * reader, and resp's threads); its endpoint is written before its `used`
 * flag (release), which a reader loads first (acquire), so a reader on
 * another thread never sees a half-written endpoint, and an empty slot ends
 * a probe safely. When 3/4 full, further endpoints are counted and not kept
 * (servers are few; the cap bounds a scan's worth of SYNs). Which ones were
 * kept then depends on the order of noting: a run that fills the table may
 * orient differently with other --threads (the counter says it happened).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"

#define SERVERS_SLOTS 8192u                       /* a power of two */
#define SERVERS_MAX (SERVERS_SLOTS / 4 * 3)       /* endpoints kept at most */
#define NO_STAMP UINT64_MAX

typedef struct server_slot {
    cap_endpoint ep;                    /* valid once used is set */
    _Atomic uint32_t used;              /* 0: empty */
    _Atomic uint64_t stamp[CAP_PROOFS]; /* lowest record that proved it, per
                                           proof; NO_STAMP: never */
} server_slot;

struct cap_servers {
    server_slot *slots;
    pthread_mutex_t mu;       /* placing a new endpoint */
    uint32_t kept;            /* endpoints kept (under mu) */
    _Atomic uint64_t dropped; /* endpoints not kept: the table was full */
};

cap_servers *cap_servers_new(void)
{
    cap_servers *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->slots = calloc(SERVERS_SLOTS, sizeof *s->slots);
    if (s->slots == NULL || pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s->slots);
        free(s);
        return NULL;
    }
    return s;
}

void cap_servers_free(cap_servers *s)
{
    if (s == NULL)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s->slots);
    free(s);
}

/* The slot holding ep, or NULL (any thread). */
static server_slot *servers_find(const cap_servers *s, const cap_endpoint *ep)
{
    uint32_t i = (uint32_t)cap_hash_endpoint(ep) & (SERVERS_SLOTS - 1);
    for (;; i = (i + 1) & (SERVERS_SLOTS - 1)) {
        server_slot *sl = &s->slots[i];
        if (!atomic_load_explicit(&sl->used, memory_order_acquire))
            return NULL;
        if (cap_same_endpoint(&sl->ep, ep))
            return sl;
    }
}

/* Place ep in a new slot, unless another thread just did (under the mutex).
 * NULL when the table is full. */
static server_slot *servers_place(cap_servers *s, const cap_endpoint *ep)
{
    server_slot *sl = NULL;
    uint32_t i = (uint32_t)cap_hash_endpoint(ep) & (SERVERS_SLOTS - 1);
    pthread_mutex_lock(&s->mu);
    for (;; i = (i + 1) & (SERVERS_SLOTS - 1)) {
        sl = &s->slots[i];
        if (!atomic_load_explicit(&sl->used, memory_order_relaxed))
            break;
        if (cap_same_endpoint(&sl->ep, ep))
            goto out;
    }
    if (s->kept >= SERVERS_MAX) {
        atomic_fetch_add_explicit(&s->dropped, 1, memory_order_relaxed);
        sl = NULL;
        goto out;
    }
    s->kept++;
    memset(&sl->ep, 0, sizeof sl->ep);
    sl->ep.addr.family = ep->addr.family;
    memcpy(sl->ep.addr.bytes, ep->addr.bytes, ep->addr.family == 4 ? 4 : 16);
    sl->ep.port = ep->port;
    for (int k = 0; k < CAP_PROOFS; k++)
        atomic_store_explicit(&sl->stamp[k], NO_STAMP, memory_order_relaxed);
    atomic_store_explicit(&sl->used, 1, memory_order_release);
out:
    pthread_mutex_unlock(&s->mu);
    return sl;
}

int cap_servers_note(cap_servers *s, cap_proof proof, uint64_t index, const cap_endpoint *ep)
{
    server_slot *sl;
    uint64_t old;
    if (s == NULL || (unsigned)proof >= CAP_PROOFS || (ep->addr.family != 4 && ep->addr.family != 6))
        return 0;
    sl = servers_find(s, ep);
    if (sl == NULL && (sl = servers_place(s, ep)) == NULL)
        return 1;
    if (index == 0)
        index = 1;
    old = atomic_load_explicit(&sl->stamp[proof], memory_order_relaxed);
    while (index < old &&
           !atomic_compare_exchange_weak_explicit(&sl->stamp[proof], &old, index,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    return 0;
}

int cap_servers_note_pkt(cap_servers *s, uint64_t index, const cap_pkt *p)
{
    if (s == NULL || !(p->flags & TCP_SYN) || (p->flags & TCP_RST))
        return 0;
    /* SYN: its receiver listens; SYN-ACK: its sender does. */
    return cap_servers_note(s, CAP_PROOF_HANDSHAKE, index, (p->flags & TCP_ACK) ? &p->src : &p->dst);
}

unsigned cap_servers_proofs(const cap_servers *s, const cap_endpoint *ep, uint64_t before)
{
    const server_slot *sl = s ? servers_find(s, ep) : NULL;
    unsigned mask = 0;
    if (sl == NULL)
        return 0;
    for (int k = 0; k < CAP_PROOFS; k++)
        if (atomic_load_explicit(&sl->stamp[k], memory_order_relaxed) < before)
            mask |= 1u << k;
    return mask;
}

int cap_servers_known(const cap_servers *s, const cap_endpoint *ep, uint64_t before)
{
    return (cap_servers_proofs(s, ep, before) >> CAP_PROOF_HANDSHAKE) & 1u;
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
