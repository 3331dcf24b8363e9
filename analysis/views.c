/*
 * views.c - what each client believes about the slot map, and what it was told.
 *
 *   view  slot -> node as the client's first attempts reveal it: the node it
 *         sent a command for that slot to, not in a retry and not after ASKING.
 *         Sparse while small (open addressing of (slot << 16 | node + 1)), a
 *         dense 16384-entry array once it holds more than 4096 slots; all views
 *         together stay under cfg.max_view_bytes (slots past it are counted in
 *         view_drops, not added).
 *   memo  per (client, slot): the last MOVED and ASK the client received, used
 *         by the detectors to know what the client had been told before a
 *         command. Capped at cfg.max_memos, least recently used evicted.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

#define VIEW_DENSE_AT 4096

/* Grow the sparse table to cap entries (rehash). 0 ok. */
static int view_rehash(an_view *v, uint32_t cap)
{
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (uint32_t i = 0; i < v->cap; i++) {
        uint32_t e = v->sparse[i];
        if (!e)
            continue;
        uint32_t j = ((e >> 16) * 2654435761u) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = e;
    }
    free(v->sparse);
    v->sparse = t;
    v->cap = cap;
    return 0;
}

/* Switch to the dense form. 0 ok. */
static int view_densify(an_view *v)
{
    uint16_t *d = calloc(AN_SLOTS, sizeof *d);
    if (!d)
        return -1;
    for (uint32_t i = 0; i < v->cap; i++)
        if (v->sparse[i])
            d[v->sparse[i] >> 16] = (uint16_t)(v->sparse[i] & 0xffff);
    free(v->sparse);
    v->sparse = NULL;
    v->cap = 0;
    v->dense = d;
    return 0;
}

void an_view_set(an_analyzer *an, an_cli *c, int32_t slot, int32_t node)
{
    an_view *v = &c->view;
    if (slot < 0 || slot >= AN_SLOTS || node < 0 || node >= 0xfffe)
        return;
    uint32_t val = (uint32_t)node + 1;
    if (v->dense) {
        v->dense[slot] = (uint16_t)val;
        return;
    }
    if (v->cap) {
        uint32_t j = ((uint32_t)slot * 2654435761u) & (v->cap - 1);
        while (v->sparse[j]) {
            if ((v->sparse[j] >> 16) == (uint32_t)slot) {
                v->sparse[j] = ((uint32_t)slot << 16) | val;
                return;
            }
            j = (j + 1) & (v->cap - 1);
        }
    }
    /* a new slot: make room first */
    if (v->n + 1 > VIEW_DENSE_AT) {
        size_t more = AN_SLOTS * sizeof(uint16_t) - (size_t)v->cap * sizeof(uint32_t);
        if (an->view_bytes + more > an->cfg.max_view_bytes || view_densify(v)) {
            an->st.view_drops++;
            return;
        }
        an->view_bytes += more;
        v->dense[slot] = (uint16_t)val;
        v->n++;
        return;
    }
    if ((v->n + 1) * 2 > v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 16;
        size_t more = (size_t)(cap - v->cap) * sizeof(uint32_t);
        if (an->view_bytes + more > an->cfg.max_view_bytes || view_rehash(v, cap)) {
            an->st.view_drops++;
            return;
        }
        an->view_bytes += more;
    }
    uint32_t j = ((uint32_t)slot * 2654435761u) & (v->cap - 1);
    while (v->sparse[j])
        j = (j + 1) & (v->cap - 1);
    v->sparse[j] = ((uint32_t)slot << 16) | val;
    v->n++;
}

int32_t an_view_get(const an_cli *c, int32_t slot)
{
    const an_view *v = &c->view;
    if (slot < 0 || slot >= AN_SLOTS)
        return AN_NONE;
    if (v->dense)
        return (int32_t)v->dense[slot] - 1;
    if (!v->cap)
        return AN_NONE;
    uint32_t j = ((uint32_t)slot * 2654435761u) & (v->cap - 1);
    while (v->sparse[j]) {
        if ((v->sparse[j] >> 16) == (uint32_t)slot)
            return (int32_t)(v->sparse[j] & 0xffff) - 1;
        j = (j + 1) & (v->cap - 1);
    }
    return AN_NONE;
}

void an_view_free(an_analyzer *an, an_cli *c)
{
    an_view *v = &c->view;
    size_t bytes = v->dense ? AN_SLOTS * sizeof(uint16_t) : (size_t)v->cap * sizeof(uint32_t);
    an->view_bytes = an->view_bytes >= bytes ? an->view_bytes - bytes : 0;
    free(v->sparse);
    free(v->dense);
    memset(v, 0, sizeof *v);
}

/* ---------------------------------------------------------------- memos */

static uint64_t memo_hash(int32_t client, int32_t slot)
{
    return an_mix64(((uint64_t)(uint32_t)client << 16) | (uint32_t)slot);
}

static int memo_eq(const void *ctx, int32_t val, const void *key)
{
    const an_analyzer *an = ctx;
    const int32_t *k = key;
    return an->memos[val].client == k[0] && an->memos[val].slot == k[1];
}

/* Unlink memo i from its client's list. */
static void memo_unlink_client(an_analyzer *an, int32_t i)
{
    an_memo *m = &an->memos[i];
    if (m->cprev != AN_NONE)
        an->memos[m->cprev].cnext = m->cnext;
    else
        an->clients[m->client].memo_head = m->cnext;
    if (m->cnext != AN_NONE)
        an->memos[m->cnext].cprev = m->cprev;
}

static void memo_free(an_analyzer *an, int32_t i)
{
    an_memo *m = &an->memos[i];
    an_map_del(&an->memo_map, memo_hash(m->client, m->slot), i);
    if (m->slot >= 0 && m->slot < AN_SLOTS && an->memo_slot_n[m->slot] > 0)
        an->memo_slot_n[m->slot]--;
    int32_t p = m->lprev, n = m->lnext;
    if (p != AN_NONE) an->memos[p].lnext = n; else an->memo_lru_head = n;
    if (n != AN_NONE) an->memos[n].lprev = p; else an->memo_lru_tail = p;
    memset(m, 0, sizeof *m);
    m->lnext = an->memo_free;
    m->lprev = AN_NONE;
    an->memo_free = i;
    an->nmemos--;
}

an_memo *an_memo_get(an_analyzer *an, int32_t client, int32_t slot, int create)
{
    if (slot < 0 || slot >= AN_SLOTS || (!create && an->memo_slot_n[slot] == 0))
        return NULL; /* no client has a memory of this slot */
    int32_t key[2] = {client, slot};
    uint64_t h = memo_hash(client, slot);
    int32_t i = an_map_find(&an->memo_map, h, memo_eq, an, key);
    if (i != AN_NONE || !create) {
        if (i == AN_NONE)
            return NULL;
        /* move to the LRU tail */
        an_memo *m = &an->memos[i];
        if (an->memo_lru_tail != i) {
            int32_t p = m->lprev, n = m->lnext;
            if (p != AN_NONE) an->memos[p].lnext = n; else an->memo_lru_head = n;
            if (n != AN_NONE) an->memos[n].lprev = p;
            m->lprev = an->memo_lru_tail;
            m->lnext = AN_NONE;
            an->memos[an->memo_lru_tail].lnext = i;
            an->memo_lru_tail = i;
        }
        return m;
    }
    if (an->nmemos >= an->cfg.max_memos) {
        int32_t old = an->memo_lru_head;
        memo_unlink_client(an, old);
        memo_free(an, old);
        an->st.evicted_memos++;
    }
    if (an->memo_free != AN_NONE) {
        i = an->memo_free;
        an->memo_free = an->memos[i].lnext;
    } else {
        i = (int32_t)an->memo_hwm++;
    }
    an_memo *m = &an->memos[i];
    memset(m, 0, sizeof *m);
    m->client = client;
    m->slot = slot;
    m->moved_from = m->moved_to = m->ask_from = m->ask_to = AN_NONE;
    m->cprev = AN_NONE;
    m->cnext = an->clients[client].memo_head;
    if (m->cnext != AN_NONE)
        an->memos[m->cnext].cprev = i;
    an->clients[client].memo_head = i;
    m->lprev = an->memo_lru_tail;
    m->lnext = AN_NONE;
    if (an->memo_lru_tail != AN_NONE)
        an->memos[an->memo_lru_tail].lnext = i;
    else
        an->memo_lru_head = i;
    an->memo_lru_tail = i;
    an_map_put(&an->memo_map, h, i);
    an->nmemos++;
    an->memo_slot_n[slot]++;
    return m;
}

void an_memos_drop_client(an_analyzer *an, int32_t client)
{
    int32_t i = an->clients[client].memo_head;
    while (i != AN_NONE) {
        int32_t next = an->memos[i].cnext;
        memo_free(an, i);
        i = next;
    }
    an->clients[client].memo_head = AN_NONE;
}
