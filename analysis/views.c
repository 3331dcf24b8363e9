/*
 * views.c - what each client believes about the slot map, and what it was told.
 *
 *   view  slot -> node as the client's first attempts reveal it: the node it
 *         sent a command for that slot to, not in a retry and not after ASKING.
 *         256 blocks of 64 slots (4 KiB), each block one node and a bit per
 *         learnt slot, or, when its slots name several nodes, a chunk of 64
 *         node values: its size follows the map's shape, not the number of
 *         slots learnt. All views together stay under cfg.max_view_bytes
 *         (slots past it are counted in view_drops, not added).
 *   memo  per (client, slot): the last MOVED and ASK the client received, used
 *         by the detectors to know what the client had been told before a
 *         command. Capped at cfg.max_memos, least recently used evicted.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

#define VIEW_TABLE_BYTES (AN_VIEW_BLOCKS * sizeof(an_vblock))
#define VIEW_CHUNK_BYTES (AN_VIEW_BLOCK_SLOTS * sizeof(uint16_t))

/* Count the bytes a view is about to take; 0 when the cap allows them (else
 * the slot is dropped and counted). */
static int view_reserve(an_analyzer *an, size_t more)
{
    if (an->view_bytes + more > an->cfg.max_view_bytes) {
        an->st.view_drops++;
        return -1;
    }
    an->view_bytes += more;
    return 0;
}

/* A new chunk for block b, holding the node of the slots it knew so far.
 * The pool doubles when full (at most AN_VIEW_BLOCKS chunks). 0 ok. */
static int view_split(an_analyzer *an, an_view *v, an_vblock *b)
{
    if (v->nchunks == v->chunk_cap) {
        uint32_t cap = v->chunk_cap ? v->chunk_cap * 2 : 4;
        if (cap > AN_VIEW_BLOCKS)
            cap = AN_VIEW_BLOCKS;
        if (view_reserve(an, (size_t)(cap - v->chunk_cap) * VIEW_CHUNK_BYTES))
            return -1;
        void *p = realloc(v->pool, (size_t)cap * VIEW_CHUNK_BYTES);
        if (!p) {
            an->view_bytes -= (size_t)(cap - v->chunk_cap) * VIEW_CHUNK_BYTES;
            an->st.view_drops++;
            return -1;
        }
        v->pool = p;
        v->chunk_cap = cap;
    }
    uint16_t *chunk = v->pool[v->nchunks];
    for (uint32_t i = 0; i < AN_VIEW_BLOCK_SLOTS; i++)
        chunk[i] = (b->known >> i) & 1u ? b->node : 0;
    b->chunk = (uint16_t)++v->nchunks;
    return 0;
}

void an_view_set(an_analyzer *an, an_cli *c, int32_t slot, int32_t node)
{
    an_view *v = &c->view;
    if (slot < 0 || slot >= AN_SLOTS || node < 0 || node >= 0xfffe)
        return;
    uint16_t val = (uint16_t)(node + 1);
    if (!v->blocks) {
        if (view_reserve(an, VIEW_TABLE_BYTES))
            return;
        v->blocks = calloc(AN_VIEW_BLOCKS, sizeof *v->blocks);
        if (!v->blocks) {
            an->view_bytes -= VIEW_TABLE_BYTES;
            an->st.view_drops++;
            return;
        }
    }
    an_vblock *b = &v->blocks[slot / AN_VIEW_BLOCK_SLOTS];
    uint32_t i = (uint32_t)slot % AN_VIEW_BLOCK_SLOTS;
    uint64_t bit = 1ull << i;
    if (!b->chunk) {
        if (!b->known)
            b->node = val; /* its first slot names the block's node */
        if (b->node == val) {
            v->n += !(b->known & bit);
            b->known |= bit;
            return;
        }
        if (view_split(an, v, b)) /* a second node in the block */
            return;
    }
    v->n += !(b->known & bit);
    b->known |= bit;
    v->pool[b->chunk - 1][i] = val;
}

int32_t an_view_get(const an_cli *c, int32_t slot)
{
    const an_view *v = &c->view;
    if (slot < 0 || slot >= AN_SLOTS || !v->blocks)
        return AN_NONE;
    const an_vblock *b = &v->blocks[slot / AN_VIEW_BLOCK_SLOTS];
    uint32_t i = (uint32_t)slot % AN_VIEW_BLOCK_SLOTS;
    if (!((b->known >> i) & 1u))
        return AN_NONE;
    return (int32_t)(b->chunk ? v->pool[b->chunk - 1][i] : b->node) - 1;
}

void an_view_free(an_analyzer *an, an_cli *c)
{
    an_view *v = &c->view;
    size_t bytes = (v->blocks ? VIEW_TABLE_BYTES : 0) + (size_t)v->chunk_cap * VIEW_CHUNK_BYTES;
    an->view_bytes = an->view_bytes >= bytes ? an->view_bytes - bytes : 0;
    free(v->blocks);
    free(v->pool);
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
    if (m->slot >= 0 && m->slot < AN_SLOTS && an->memo_slot_n[m->slot] > 0 &&
        --an->memo_slot_n[m->slot] == 0)
        an->slot_busy[m->slot] &= (uint8_t)~AN_SLOT_MEMOS;
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
    an->slot_busy[slot] |= AN_SLOT_MEMOS;
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
