/*
 * pool.c - the capped store for out-of-order payload.
 *
 * Bytes that arrive ahead of a hole are copied into 2 KiB chunks; a held range
 * is a small record plus a chain of chunks. Chunks and records are allocated
 * in blocks and recycled through free lists, so once the pool has grown to the
 * working size nothing is allocated per packet. Every range is charged its real
 * memory (record + whole chunks) against the global cap, so a flood of 1-byte
 * segments costs what it really costs.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"

/* Chunks allocated at once when the free list runs dry (64 KiB). */
#define CHUNKS_PER_BLOCK 32
/* Range records allocated at once. */
#define HELD_PER_BLOCK 256

/* Head of every block: the blocks form a list freed by cap_pool_destroy. The
 * union keeps what follows aligned for any type. */
typedef union pool_block {
    union pool_block *next;
    max_align_t align;
} pool_block;

/* Set up an empty pool with a byte cap. */
void cap_pool_init(cap_pool *pool, size_t cap)
{
    memset(pool, 0, sizeof *pool);
    pool->cap = cap;
}

/* Release every block. */
void cap_pool_destroy(cap_pool *pool)
{
    pool_block *b = pool->blocks;
    while (b != NULL) {
        pool_block *next = b->next;
        free(b);
        b = next;
    }
    memset(pool, 0, sizeof *pool);
}

/* Allocate a block of count items of size bytes, link it into the pool, and
 * return its first item (NULL when out of memory). */
static void *new_block(cap_pool *pool, size_t size, size_t count)
{
    pool_block *b = malloc(sizeof(pool_block) + size * count);
    if (b == NULL)
        return NULL;
    b->next = pool->blocks;
    pool->blocks = b;
    return b + 1;
}

/* Refill the chunk free list. 0 on success, -1 out of memory. */
static int grow_chunks(cap_pool *pool)
{
    cap_chunk *c = new_block(pool, sizeof(cap_chunk), CHUNKS_PER_BLOCK);
    if (c == NULL)
        return -1;
    for (size_t i = 0; i < CHUNKS_PER_BLOCK; i++) {
        c[i].next = pool->free_chunks;
        pool->free_chunks = &c[i];
    }
    return 0;
}

/* Refill the range record free list. 0 on success, -1 out of memory. */
static int grow_held(cap_pool *pool)
{
    cap_held *h = new_block(pool, sizeof(cap_held), HELD_PER_BLOCK);
    if (h == NULL)
        return -1;
    for (size_t i = 0; i < HELD_PER_BLOCK; i++) {
        h[i].next = pool->free_held;
        pool->free_held = &h[i];
    }
    return 0;
}

/* Bytes charged for holding len bytes (has_data 0: a missing range). */
uint32_t cap_pool_cost(uint32_t len, int has_data)
{
    uint64_t chunks = has_data ? ((uint64_t)len + CAP_CHUNK_BYTES - 1) / CAP_CHUNK_BYTES : 0;
    uint64_t cost = sizeof(cap_held) + chunks * sizeof(cap_chunk);
    return cost > UINT32_MAX ? UINT32_MAX : (uint32_t)cost;
}

/* Take one chunk from the free list (growing it). NULL when out of memory. */
static cap_chunk *take_chunk(cap_pool *pool)
{
    cap_chunk *c;
    if (pool->free_chunks == NULL && grow_chunks(pool) != 0)
        return NULL;
    c = pool->free_chunks;
    pool->free_chunks = c->next;
    c->next = NULL;
    return c;
}

/* Copy data[0..len) into a fresh chain of chunks hung on h. 0 on success, -1
 * out of memory (the chunks taken so far stay on h for release). */
static int fill_chunks(cap_pool *pool, cap_held *h, const uint8_t *data, uint32_t len)
{
    cap_chunk **tail = &h->chunks;
    while (len > 0) {
        uint32_t n = len < CAP_CHUNK_BYTES ? len : (uint32_t)CAP_CHUNK_BYTES;
        cap_chunk *c = take_chunk(pool);
        if (c == NULL)
            return -1;
        memcpy(c->data, data, n);
        *tail = c;
        tail = &c->next;
        data += n;
        len -= n;
    }
    return 0;
}

/* A range record holding a copy of data[0..len) (data NULL: a missing range),
 * or NULL when the cap or memory does not allow it. seq and ts_us are left for
 * the caller to set. */
cap_held *cap_pool_hold(cap_pool *pool, const uint8_t *data, uint32_t len)
{
    uint32_t cost = cap_pool_cost(len, data != NULL);
    cap_held *h;
    if (cost > pool->cap - pool->used || pool->used > pool->cap)
        return NULL;
    if (pool->free_held == NULL && grow_held(pool) != 0)
        return NULL;
    h = pool->free_held;
    pool->free_held = h->next;
    memset(h, 0, sizeof *h);
    h->len = len;
    h->cost = cost;
    pool->used += cost;
    if (data != NULL && fill_chunks(pool, h, data, len) != 0) {
        cap_pool_release(pool, h);
        return NULL;
    }
    if (pool->used > pool->peak)
        pool->peak = pool->used;
    return h;
}

/* Give a range record and its chunks back to the free lists. */
void cap_pool_release(cap_pool *pool, cap_held *h)
{
    cap_chunk *c = h->chunks;
    while (c != NULL) {
        cap_chunk *next = c->next;
        c->next = pool->free_chunks;
        pool->free_chunks = c;
        c = next;
    }
    pool->used -= h->cost;
    h->chunks = NULL;
    h->next = pool->free_held;
    pool->free_held = h;
}
