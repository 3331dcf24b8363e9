/*
 * cluster.c - the simulated Redis Cluster of ss-gen.
 *
 * Masters own contiguous slot ranges, as redis-cli --cluster create assigns
 * them; each may have one replica. One range of slots migrates from master
 * mig_src to master mig_dst during the run, one slot after the other, the way
 * redis-cli --cluster reshard does it: SETSLOT IMPORTING on the target,
 * MIGRATING on the source, keys moved in batches, then SETSLOT NODE (the
 * ownership flip). Stuck slots start the same way and never finish.
 *
 * What a node answers follows Redis's getNodeByQuery (cluster.c) and the
 * cluster spec ("ASK redirection", "Multi-keys operations"):
 *   - keys in different slots: -CROSSSLOT
 *   - a replica answers reads of its master's slots only after READONLY,
 *     otherwise -MOVED to the master
 *   - the owner answers, unless the slot is migrating away and keys are
 *     missing here: all missing -ASK <target>, some missing -TRYAGAIN
 *   - the importing node answers a command preceded by ASKING (-TRYAGAIN if
 *     a multi-key command's keys are not all there yet)
 *   - any other node answers -MOVED <owner>
 * and, for a slot flipped on the source before the target (split_slot), the
 * source answers -MOVED <target> and the target -MOVED <source>.
 */
#include <string.h>

#include "gen.h"

/* Lay out the nodes and the initial slot owners. */
void cluster_init(cluster *cl, int masters, int replicas, int ip_base_10, uint64_t seed)
{
    memset(cl, 0, sizeof *cl);
    if (masters < 1 || masters > GEN_MAX_MASTERS)
        die("--masters must be 1..%d", GEN_MAX_MASTERS);
    rng r;
    rng_seed(&r, seed ^ 0x6e6f646573ull);
    cl->n_masters = masters;
    cl->n_nodes = masters * (replicas ? 2 : 1);
    for (int i = 0; i < cl->n_nodes; i++) {
        gnode *n = &cl->nodes[i];
        n->ip = ip_base_10 ? (10u << 24 | (uint32_t)(1 + i)) : (127u << 24 | 1u);
        n->port = (uint16_t)(7000 + i);
        n->master = i < masters ? -1 : i - masters;
        n->replica = i < masters && replicas ? masters + i : -1;
        for (int j = 0; j < 40; j++)
            n->id[j] = "0123456789abcdef"[rng_below(&r, 16)];
        n->id[40] = 0;
        snprintf(n->addr, sizeof n->addr, "%u.%u.%u.%u:%u", n->ip >> 24, (n->ip >> 16) & 255,
                 (n->ip >> 8) & 255, n->ip & 255, n->port);
    }
    for (int s = 0; s < GEN_SLOTS; s++)
        cl->base_owner[s] = (uint8_t)((long)s * masters / GEN_SLOTS);
    cl->open_idx = -1;
    cl->split_slot = -1;
    cl->slots_reply_ver = -1;
}

/* The master owning slot s after `ver` flips of the migrating range. */
int cluster_owner_at(const cluster *cl, int s, int ver)
{
    if (cl->special[s] == 1 && s - cl->mig_first < ver)
        return cl->mig_dst;
    return cl->base_owner[s];
}

/* The master owning slot s now. */
int cluster_owner(const cluster *cl, int s)
{
    return cluster_owner_at(cl, s, cl->flipped);
}

/* 1 if slot s is between MIGRATING/IMPORTING and the flip now. */
int cluster_migrating(const cluster *cl, int s, int *src, int *dst)
{
    if (cl->special[s] == 1 && s - cl->mig_first == cl->open_idx) {
        *src = cl->mig_src;
        *dst = cl->mig_dst;
        return 1;
    }
    if (cl->special[s] == 2 && cl->stuck_open) {
        *src = cl->stuck_src;
        *dst = cl->stuck_dst;
        return 1;
    }
    return 0;
}

/* A key of a migrating slot has moved when its FNV hash falls below the
 * window's progress: keys leave the source gradually and never come back. */
int cluster_key_moved(const cluster *cl, int s, const char *key, size_t len)
{
    uint32_t below = cl->special[s] == 2 ? 512 : cl->moved_below;
    return fnv1a(key, len) % 1024 < below;
}

outcome cluster_serve(const cluster *cl, int n, const gkeys *k, int is_read,
                      int asking, int readonly, int *to)
{
    if (k->n == 0)
        return O_OK;
    int s = k->slot[0];
    for (int i = 1; i < k->n; i++)
        if (k->slot[i] != s)
            return O_CROSSSLOT;
    const gnode *node = &cl->nodes[n];
    int master = node->master < 0 ? n : node->master;
    if (s == cl->split_slot && node->master < 0) {
        /* the source has given the slot away, the target still imports it */
        if (n == cl->mig_dst && asking)
            return O_OK;
        *to = n == cl->mig_src ? cl->mig_dst : cl->mig_src;
        return O_MOVED;
    }
    int owner = cluster_owner(cl, s);
    int src = -1, dst = -1;
    int mig = cluster_migrating(cl, s, &src, &dst);
    int moved = 0;
    if (mig)
        for (int i = 0; i < k->n; i++)
            moved += cluster_key_moved(cl, s, k->k[i], k->len[i]);

    if (node->master >= 0) {            /* a replica */
        if (master == owner && readonly && is_read)
            return O_OK;
        *to = owner;
        return O_MOVED;
    }
    if (master == owner) {
        if (mig && src == master && moved) {
            if (moved == k->n) {
                *to = dst;
                return O_ASK;
            }
            return O_TRYAGAIN;
        }
        return O_OK;
    }
    if (mig && dst == master && asking) {
        if (k->n > 1 && moved < k->n)
            return O_TRYAGAIN;
        return O_OK;
    }
    *to = owner;
    return O_MOVED;
}

/* Append "$<len>\r\n<s>\r\n". */
static void put_bulk(gbuf *b, const char *s)
{
    char hdr[32];
    size_t len = strlen(s);
    int n = snprintf(hdr, sizeof hdr, "$%zu\r\n", len);
    gbuf_put(b, hdr, (size_t)n);
    gbuf_put(b, s, len);
    gbuf_put(b, "\r\n", 2);
}

/* Append one node entry of a CLUSTER SLOTS range: [ip, port, id]. */
static void put_node_entry(gbuf *b, const gnode *n)
{
    char ip[20], line[32];
    snprintf(ip, sizeof ip, "%u.%u.%u.%u", n->ip >> 24, (n->ip >> 16) & 255, (n->ip >> 8) & 255,
             n->ip & 255);
    gbuf_put(b, "*3\r\n", 4);
    put_bulk(b, ip);
    int len = snprintf(line, sizeof line, ":%u\r\n", n->port);
    gbuf_put(b, line, (size_t)len);
    put_bulk(b, n->id);
}

/* CLUSTER SLOTS (https://redis.io/docs/latest/commands/cluster-slots/): an
 * array of [start, end, master, replicas...] for each run of slots with one
 * owner. Rebuilt only when an ownership flip changed the map. */
const gbuf *cluster_slots_reply(cluster *cl)
{
    if (cl->slots_reply_ver == cl->flipped)
        return &cl->slots_reply;
    gbuf *b = &cl->slots_reply;
    b->len = 0;
    int n_runs = 0;
    /* count the runs first, for the outer array header */
    for (int s = 0; s < GEN_SLOTS; s++)
        if (s == 0 || cluster_owner(cl, s) != cluster_owner(cl, s - 1))
            n_runs++;
    char line[48];
    int len = snprintf(line, sizeof line, "*%d\r\n", n_runs);
    gbuf_put(b, line, (size_t)len);
    int start = 0;
    for (int s = 1; s <= GEN_SLOTS; s++) {
        if (s < GEN_SLOTS && cluster_owner(cl, s) == cluster_owner(cl, start))
            continue;
        int m = cluster_owner(cl, start);
        const gnode *master = &cl->nodes[m];
        int has_replica = master->replica >= 0;
        len = snprintf(line, sizeof line, "*%d\r\n:%d\r\n:%d\r\n", 3 + has_replica, start, s - 1);
        gbuf_put(b, line, (size_t)len);
        put_node_entry(b, master);
        if (has_replica)
            put_node_entry(b, &cl->nodes[master->replica]);
        start = s;
    }
    cl->slots_reply_ver = cl->flipped;
    return b;
}
