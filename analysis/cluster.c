/*
 * cluster.c - the cluster's own story: who the nodes are, how healthy the
 * others think they are, who owns which slots with which config epoch, and
 * the failovers, from the cluster bus (bus/bus.h); without bus traffic, slot
 * ownership as the clients were told it.
 *
 * The rules it models (Redis Cluster specification, "Cluster bus", "Failure
 * detection", "Configuration handling, propagation, and failovers"):
 * - Every bus message's header is the sender's own state: its id, flags
 *   (master / replica), master, currentEpoch, configEpoch, ports, and the
 *   slots it serves (a replica sends its master's): a node announcement.
 * - A master's claim of a slot wins over the owner's when its configEpoch is
 *   higher (UPDATE messages carry another node's claim the same way); a
 *   lower one is stale (an old master that has not learnt it was replaced),
 *   an equal one a collision that the cluster resolves by bumping an epoch.
 * - A node flags another PFAIL when it does not answer in time, FAIL when a
 *   majority of masters agree (the FAIL message spreads it); gossip entries
 *   carry the sender's flags for other nodes, so a node is PFAIL / FAIL while
 *   some node's latest word about it says so.
 * - A failover: a replica becomes master and claims its old master's slots
 *   with a new configEpoch. Manual (CLUSTER FAILOVER): the replica sends
 *   MFSTART to its master, then holds an election; automatic: after FAIL,
 *   the replica asks for votes (FAILOVER_AUTH_REQUEST), the masters vote
 *   (FAILOVER_AUTH_ACK); takeover (CLUSTER FAILOVER TAKEOVER): no election,
 *   the replica bumps its epoch on its own.
 * Observers (an_cluster_observe) get the events in capture order; the
 * tables' records go to the an_sink.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

#define FO_MAX 1024                /* failovers kept (for the MOVED causes) */
#define BUS_CONNS_MAX 65536        /* bus connections whose peers are kept */

/* What the bus said about one registry node. */
typedef struct an_bnode {
    uint8_t seen;                  /* it sent a message */
    uint8_t heard_out;             /* it sent one on a link it opened: its
                                      broadcasts (a new claim) reach the capture */
    uint8_t promoted;              /* it became master in a failover and has not
                                      been a replica since */
    uint16_t flags;                /* BUS_NODE_* of its latest message */
    int32_t master;                /* its master as a replica, else AN_NONE */
    int32_t promoted_from;         /* the master it replaced (promoted) */
    char master_id[BUS_NAMELEN + 1];
    uint64_t current_epoch, config_epoch, offset;
    uint16_t port, cport;
    char ip[BUS_IPLEN + 1];
    int64_t role_us, master_us, epoch_us, flags_us;
    int64_t prev_role_us;          /* role_us before the latest role change */
    int64_t first_us;              /* its first announcement in the capture */
    uint8_t *claim;                /* its latest slot claim (a master's), or NULL */
    uint64_t claim_epoch;
    uint32_t owned;                /* slots it owns on the bus map */
    /* health: which reporters' latest word flags it PFAIL / FAIL */
    an_health health;
    uint64_t *pfail_by, *fail_by;  /* bitmaps over registry nodes */
    uint32_t npfail, nfail;
    int64_t pfail_us, fail_us;     /* start of the current PFAIL / FAIL, 0: none */
    /* its failover as a replica (reset when it becomes a replica again) */
    int64_t mf_us;                 /* MFSTART it sent */
    int32_t mf_master;
    uint64_t auth_epoch;           /* the epoch of its latest AUTH_REQUEST */
    int64_t auth_us;               /* ... its first request for that epoch */
    uint32_t votes;
    int64_t elected_us, vote_us;   /* majority reached / latest vote */
    uint8_t auth_pending;          /* an election not yet ended */
    int16_t fo_idx;                /* its failover (promoted), -1: not kept */
} an_bnode;

/* Slot ownership from one source. */
typedef struct an_own_map {
    int32_t node[AN_SLOTS];
    uint64_t epoch[AN_SLOTS];
    int64_t from[AN_SLOTS];
    uint8_t cause[AN_SLOTS];
    int16_t fo[AN_SLOTS];          /* failover that gave it (index), -1 */
    uint32_t changes;
} an_own_map;

/* A bus connection: who sent on each side (for the receiver of a message). */
typedef struct an_bconn {
    uint64_t id;
    int32_t sender[2];
} an_bconn;

struct an_cluster {
    an_cluster_observer obs[AN_CLUSTER_OBSERVERS];
    unsigned nobs;
    an_bnode *bn;                  /* cfg.max_nodes, at the first bus message */
    size_t words;                  /* uint64_t words of a reporter bitmap */
    an_own_map *bus, *told;        /* at their first claim */
    an_failover fo[FO_MAX];
    uint32_t nfo;
    an_bconn *bconns; an_map bconn_map; uint32_t nbconns;
    an_map id_map;                 /* node id -> registry node: every message
                                      and gossip entry names nodes by id */
    int has_bus;                   /* a bus claim was seen */
};

/* ---------------------------------------------------------------- names */

const char *an_health_name(an_health h)
{
    return h == AN_HEALTH_FAIL ? "fail" : h == AN_HEALTH_PFAIL ? "pfail" : "ok";
}

const char *an_own_source_name(an_own_source s)
{
    return s == AN_OWN_CLIENTS ? "clients" : "bus";
}

const char *an_own_cause_name(an_own_cause c)
{
    switch (c) {
    case AN_CAUSE_FIRST: return "first";
    case AN_CAUSE_MIGRATION: return "migration";
    case AN_CAUSE_FAILOVER: return "failover";
    default: return "unknown";
    }
}

const char *an_fo_kind_name(an_fo_kind k)
{
    switch (k) {
    case AN_FO_MANUAL: return "manual";
    case AN_FO_TAKEOVER: return "takeover";
    case AN_FO_AUTOMATIC: return "automatic";
    default: return "unknown";
    }
}

/* ---------------------------------------------------------------- state */

static struct an_cluster *cl_get(an_analyzer *an)
{
    if (!an->cluster) {
        an->cluster = calloc(1, sizeof *an->cluster);
        if (an->cluster && (an_map_init(&an->cluster->bconn_map, BUS_CONNS_MAX) != 0 ||
                            an_map_init(&an->cluster->id_map, an->cfg.max_nodes) != 0)) {
            an_map_free(&an->cluster->bconn_map);
            free(an->cluster);
            an->cluster = NULL;
        }
    }
    return an->cluster;
}

int an_cluster_observe(an_analyzer *an, const an_cluster_observer *o)
{
    struct an_cluster *cl = cl_get(an);
    if (!cl || cl->nobs >= AN_CLUSTER_OBSERVERS)
        return -1;
    cl->obs[cl->nobs++] = *o;
    return 0;
}

/* The bus state of every node, made at the first bus message. */
static an_bnode *bn_table(an_analyzer *an, struct an_cluster *cl)
{
    if (!cl->bn) {
        cl->bn = calloc(an->cfg.max_nodes, sizeof *cl->bn);
        if (!cl->bn)
            return NULL;
        for (uint32_t i = 0; i < an->cfg.max_nodes; i++) {
            cl->bn[i].master = cl->bn[i].promoted_from = cl->bn[i].mf_master = AN_NONE;
            cl->bn[i].fo_idx = -1;
        }
        cl->words = (an->cfg.max_nodes + 63) / 64;
    }
    return cl->bn;
}

static an_bnode *bn_of(an_analyzer *an, int32_t node)
{
    struct an_cluster *cl = an->cluster;
    if (!cl || !cl->bn || node < 0 || (uint32_t)node >= an->cfg.max_nodes)
        return NULL;
    return &cl->bn[node];
}

static an_own_map *own_map(struct an_cluster *cl, an_own_source src)
{
    an_own_map **m = src == AN_OWN_BUS ? &cl->bus : &cl->told;
    if (!*m) {
        *m = calloc(1, sizeof **m);
        if (!*m)
            return NULL;
        for (int s = 0; s < AN_SLOTS; s++) {
            (*m)->node[s] = AN_NONE;
            (*m)->fo[s] = -1;
        }
    }
    return *m;
}

/* The text of a node for records: its observed, else announced endpoint. */
static void node_text(const an_analyzer *an, int32_t node, char *out, size_t n)
{
    an_copy_str(out, n, node == AN_NONE ? "" : an_node_name(an, node));
}

static const char *node_id_of(const an_analyzer *an, int32_t node)
{
    return node >= 0 && (uint32_t)node < an->nnodes ? an->nodes[node].pub.node_id : "";
}

/* ---------------------------------------------------------------- nodes */

/* "ip:port" (brackets for IPv6) into out. */
static void endpoint_of(char *out, size_t n, const char *ip, uint16_t port)
{
    if (strchr(ip, ':'))
        snprintf(out, n, "[%s]:%u", ip, port);
    else
        snprintf(out, n, "%s:%u", ip, port);
}

/* Does registry node val have id key? */
static int id_eq(const void *ctx, int32_t val, const void *key)
{
    const an_analyzer *an = ctx;
    return (uint32_t)val < an->nnodes && strcmp(an->nodes[val].pub.node_id, key) == 0;
}

/* The node a bus id names, registered by its announced endpoint when new
 * (ip "" : not registered). Ids seen before are found by their own map, not
 * by the registry's names. */
static int32_t node_of_id(an_analyzer *an, const char *id, const char *ip, uint16_t port)
{
    char ep[AN_NAME_MAX];
    struct an_cluster *cl = an->cluster;
    size_t n = strlen(id);
    if (!n)
        return AN_NONE;
    uint64_t h = an_hash_fast(id, n, 17);
    int32_t i = an_map_find(&cl->id_map, h, id_eq, an, id);
    if (i != AN_NONE)
        return i;
    i = an_node_by_id(an, id, n);
    if (i == AN_NONE && ip[0] && port != 0) {
        endpoint_of(ep, sizeof ep, ip, port);
        i = an_node_by_announced(an, ep, 1);
        if (i != AN_NONE)
            an_node_learn_id(an, i, id);
    }
    if (i != AN_NONE && id_eq(an, i, id) && cl->id_map.n < an->cfg.max_nodes)
        an_map_put(&cl->id_map, h, i);
    return i;
}

/* The sender of m on connection cc in direction dir: the announced ip, or
 * the address it sent from. */
static int32_t sender_of(an_analyzer *an, const cap_conn *cc, int dir, const bus_msg *m)
{
    char ip[AN_NAME_MAX];
    int32_t known = node_of_id(an, m->sender, "", 0);
    if (known != AN_NONE)
        return known;
    if (m->ip[0]) {
        an_copy_str(ip, sizeof ip, m->ip);
    } else {
        const cap_addr *a = dir == CAP_TO_SERVER ? &cc->client.addr : &cc->server.addr;
        cap_addr_format(a, ip, sizeof ip);
        if (ip[0] == '[') { /* node_of_id brackets IPv6 itself */
            size_t n = strlen(ip);
            memmove(ip, ip + 1, n);
            if (n >= 2 && ip[n - 2] == ']')
                ip[n - 2] = 0;
        }
    }
    return node_of_id(an, m->sender, ip, m->port);
}

static void emit_announcement(an_analyzer *an, const an_node_ann *e)
{
    struct an_cluster *cl = an->cluster;
    for (unsigned k = 0; k < cl->nobs; k++)
        if (cl->obs[k].node_announced)
            cl->obs[k].node_announced(an, cl->obs[k].ctx, e);
}

/* A node became a replica (again): its failover state starts over. */
static void reset_failover_state(an_bnode *b)
{
    b->promoted = 0;
    b->promoted_from = AN_NONE;
    b->mf_us = 0;
    b->mf_master = AN_NONE;
    b->auth_pending = 0;
    b->auth_epoch = 0;
    b->auth_us = 0;
    b->votes = 0;
    b->elected_us = b->vote_us = 0;
}

/* The header of m: the sender's own state. Returns what changed (AN_ANN_*);
 * *was_replica_of gets its master before this message when it was a
 * replica. */
static uint32_t announce(an_analyzer *an, int32_t node, const bus_msg *m, int64_t ts,
                         uint64_t frame, uint64_t conn, int32_t *was_replica_of)
{
    an_bnode *b = bn_of(an, node);
    const uint16_t role_bits = BUS_NODE_MASTER | BUS_NODE_REPLICA;
    uint16_t flags = m->flags & (uint16_t)~(BUS_NODE_MYSELF | BUS_NODE_PFAIL | BUS_NODE_FAIL);
    int32_t master = AN_NONE;
    uint32_t changed = 0;
    *was_replica_of = AN_NONE;
    if (!b)
        return 0;
    /* A message built before the sender's latest one (sent on another
     * connection, captured later) says nothing new: a node's currentEpoch
     * never goes back; and a promoted replica's messages from before its
     * promotion (a replica of the master it replaced, with that master's
     * lower configEpoch) are older than its first as master. (A master may
     * become the replica of a master with a lower configEpoch, as at a
     * cluster's creation: configEpochs alone do not order messages.) */
    if (b->seen && (m->current_epoch < b->current_epoch ||
                    (b->promoted && (m->flags & BUS_NODE_REPLICA) &&
                     m->current_epoch == b->current_epoch &&
                     m->config_epoch < b->config_epoch &&
                     strcmp(m->master, node_id_of(an, b->promoted_from)) == 0))) {
        an->st.bus_stale_headers++;
        return 0;
    }
    if (m->master[0])
        master = node_of_id(an, m->master, "", 0);
    if (!b->seen) {
        changed = AN_ANN_FIRST | AN_ANN_ROLE | AN_ANN_MASTER | AN_ANN_FLAGS |
                  AN_ANN_CURRENT_EPOCH | AN_ANN_CONFIG_EPOCH | AN_ANN_ADDR;
    } else {
        if ((b->flags & role_bits) != (flags & role_bits))
            changed |= AN_ANN_ROLE;
        if ((b->flags & ~role_bits) != (flags & ~role_bits))
            changed |= AN_ANN_FLAGS;
        if (strcmp(b->master_id, m->master) != 0)
            changed |= AN_ANN_MASTER;
        if (b->current_epoch != m->current_epoch)
            changed |= AN_ANN_CURRENT_EPOCH;
        if (b->config_epoch != m->config_epoch)
            changed |= AN_ANN_CONFIG_EPOCH;
        if (b->port != m->port || b->cport != m->cport || strcmp(b->ip, m->ip) != 0)
            changed |= AN_ANN_ADDR;
    }
    if (b->seen && (changed & AN_ANN_ROLE) && (b->flags & BUS_NODE_REPLICA) &&
        (flags & BUS_NODE_MASTER))
        *was_replica_of = b->master != AN_NONE ? b->master : node_of_id(an, b->master_id, "", 0);
    if (!changed) {
        b->offset = m->offset;
        return 0;
    }
    if (changed & AN_ANN_ROLE) {
        b->prev_role_us = b->role_us;
        b->role_us = ts;
    }
    if (changed & AN_ANN_MASTER)
        b->master_us = ts;
    if (changed & AN_ANN_CONFIG_EPOCH)
        b->epoch_us = ts;
    if (changed & (AN_ANN_FLAGS | AN_ANN_ROLE))
        b->flags_us = ts;
    if ((changed & AN_ANN_ROLE) && (flags & BUS_NODE_REPLICA))
        reset_failover_state(b);
    if (!b->seen)
        b->first_us = ts;
    b->seen = 1;
    b->flags = flags;
    b->master = master;
    an_copy_str(b->master_id, sizeof b->master_id, m->master);
    b->current_epoch = m->current_epoch;
    b->config_epoch = m->config_epoch;
    b->offset = m->offset;
    b->port = m->port;
    b->cport = m->cport;
    an_copy_str(b->ip, sizeof b->ip, m->ip);
    if (flags & BUS_NODE_MASTER)
        an_node_learn_role(an, node, "master", AN_NONE);
    else if (flags & BUS_NODE_REPLICA)
        an_node_learn_role(an, node, "replica", master);
    an_node_ann e;
    memset(&e, 0, sizeof e);
    e.ts_us = ts;
    e.frame = frame;
    e.conn = conn;
    e.node = node;
    an_copy_str(e.id, sizeof e.id, m->sender);
    an_copy_str(e.ip, sizeof e.ip, m->ip);
    e.port = m->port;
    e.cport = m->cport;
    e.flags = flags;
    e.master = master;
    an_copy_str(e.master_id, sizeof e.master_id, m->master);
    e.current_epoch = m->current_epoch;
    e.config_epoch = m->config_epoch;
    e.offset = m->offset;
    e.changed = changed;
    emit_announcement(an, &e);
    return changed;
}

/* ---------------------------------------------------------------- health */

static an_health health_of(const an_bnode *b)
{
    return b->nfail ? AN_HEALTH_FAIL : b->npfail ? AN_HEALTH_PFAIL : AN_HEALTH_OK;
}

/* Set bit r of a lazily made bitmap; returns the change (+1, -1, 0). */
static int bit_set(struct an_cluster *cl, uint64_t **map, int32_t r, int on)
{
    if (!*map) {
        if (!on)
            return 0;
        *map = calloc(cl->words, sizeof **map);
        if (!*map)
            return 0;
    }
    uint64_t bit = 1ull << (r & 63), *w = &(*map)[r >> 6];
    int was = (*w & bit) != 0;
    if (was == on)
        return 0;
    *w ^= bit;
    return on ? 1 : -1;
}

/* Reporter r's latest word about node: flagged PFAIL / FAIL or not. */
static void health_word(an_analyzer *an, int32_t node, int32_t r, int pfail, int fail,
                        int64_t ts, uint64_t frame, uint64_t conn, uint8_t via)
{
    struct an_cluster *cl = an->cluster;
    an_bnode *b = bn_of(an, node);
    if (!b || r == AN_NONE || (uint32_t)r >= an->cfg.max_nodes || r == node)
        return;
    an_health before = b->health;
    b->npfail = (uint32_t)((int64_t)b->npfail + bit_set(cl, &b->pfail_by, r, pfail));
    b->nfail = (uint32_t)((int64_t)b->nfail + bit_set(cl, &b->fail_by, r, fail));
    an_health now = health_of(b);
    if (now == before)
        return;
    b->health = now;
    if (now == AN_HEALTH_PFAIL && before == AN_HEALTH_OK)
        b->pfail_us = ts;
    if (now == AN_HEALTH_FAIL)
        b->fail_us = ts;
    an->st.health_changes++;
    an_node_state e;
    memset(&e, 0, sizeof e);
    e.ts_us = ts;
    e.frame = frame;
    e.conn = conn;
    e.node = node;
    an_copy_str(e.id, sizeof e.id, node_id_of(an, node));
    e.from = before;
    e.to = now;
    e.reporter = r;
    an_copy_str(e.reporter_id, sizeof e.reporter_id, node_id_of(an, r));
    e.via = via;
    for (unsigned k = 0; k < cl->nobs; k++)
        if (cl->obs[k].node_state)
            cl->obs[k].node_state(an, cl->obs[k].ctx, &e);
    if (an->sink.node_transition) {
        an_node_transition t;
        memset(&t, 0, sizeof t);
        t.ts_us = ts;
        node_text(an, node, t.node, sizeof t.node);
        an_copy_str(t.node_id, sizeof t.node_id, e.id);
        t.from = an_health_name(before);
        t.to = an_health_name(now);
        node_text(an, r, t.reporter, sizeof t.reporter);
        an_copy_str(t.reporter_id, sizeof t.reporter_id, e.reporter_id);
        t.via = bus_type_name(via);
        t.frame = frame;
        an->sink.node_transition(an->sink.ctx, &t);
    }
}

/* The gossip of a PING / PONG / MEET: the sender's word about other nodes. */
static void gossip(an_analyzer *an, int32_t sender, const bus_msg *m, int64_t ts,
                   uint64_t frame, uint64_t conn)
{
    bus_gossip g;
    if (!m->whole)
        return;
    for (unsigned i = 0; i < m->count; i++) {
        bus_msg_gossip(m, i, &g);
        if (g.flags & (BUS_NODE_HANDSHAKE | BUS_NODE_NOADDR))
            continue; /* not a node the cluster knows yet */
        int32_t z = node_of_id(an, g.name, g.ip, g.port);
        health_word(an, z, sender, (g.flags & BUS_NODE_PFAIL) != 0,
                    (g.flags & BUS_NODE_FAIL) != 0, ts, frame, conn, (uint8_t)m->type);
    }
}

/* ---------------------------------------------------------------- slots */

/* Emit the row of slots lo..hi of map m as they stand (owner, epoch, since,
 * cause), ended at to_us (0: still at the end). */
static void emit_row(an_analyzer *an, const an_own_map *m, an_own_source src, int32_t lo,
                     int32_t hi, int64_t to_us)
{
    if (!an->sink.owner_row || m->node[lo] == AN_NONE)
        return;
    an_owner_row r;
    memset(&r, 0, sizeof r);
    r.slot_lo = lo;
    r.slot_hi = hi;
    node_text(an, m->node[lo], r.node, sizeof r.node);
    an_copy_str(r.node_id, sizeof r.node_id, node_id_of(an, m->node[lo]));
    r.config_epoch = m->epoch[lo];
    r.from_us = m->from[lo];
    r.to_us = to_us;
    r.source = an_own_source_name(src);
    r.cause = an_own_cause_name((an_own_cause)m->cause[lo]);
    an->sink.owner_row(an->sink.ctx, &r);
}

/* Do slots a and b of m stand the same (one row)? */
static int same_period(const an_own_map *m, int32_t a, int32_t b)
{
    return m->node[a] == m->node[b] && m->epoch[a] == m->epoch[b] && m->from[a] == m->from[b] &&
           m->cause[a] == m->cause[b];
}

/* What a change of slots to a new owner carries. */
typedef struct an_change {
    an_own_source src;
    int32_t node;
    uint64_t epoch;
    int64_t ts;
    uint64_t frame, conn;
    uint8_t via;
    an_own_cause cause;            /* AN_CAUSE_UNKNOWN: decided per old owner */
    int16_t fo;                    /* the failover behind it, -1 */
    uint8_t same_owner;            /* only the epoch changes: a row, no event */
} an_change;

/* Slots lo..hi (same old period) go to c->node: the old row ends, the
 * event goes to the observers. */
static void apply_run(an_analyzer *an, an_own_map *m, const an_change *c, int32_t lo,
                      int32_t hi, an_own_cause cause)
{
    struct an_cluster *cl = an->cluster;
    int32_t old = m->node[lo];
    an_slot_owner e;
    memset(&e, 0, sizeof e);
    e.old_node = old;
    e.old_epoch = m->epoch[lo];
    e.old_from_us = old == AN_NONE ? 0 : m->from[lo];
    emit_row(an, m, c->src, lo, hi, c->ts);
    for (int32_t s = lo; s <= hi; s++) {
        if (c->src == AN_OWN_BUS) {
            an_bnode *ob = bn_of(an, m->node[s]), *nb = bn_of(an, c->node);
            if (ob && ob->owned)
                ob->owned--;
            if (nb)
                nb->owned++;
        }
        m->node[s] = c->node;
        m->epoch[s] = c->epoch;
        m->from[s] = c->ts;
        m->cause[s] = (uint8_t)cause;
        if (!c->same_owner)
            m->fo[s] = (int16_t)(cause == AN_CAUSE_FAILOVER ? c->fo : -1);
    }
    if (c->same_owner)
        return;
    m->changes++;
    an->st.owner_changes++;
    e.ts_us = c->ts;
    e.frame = c->frame;
    e.conn = c->conn;
    e.slot_lo = lo;
    e.slot_hi = hi;
    e.node = c->node;
    an_copy_str(e.node_id, sizeof e.node_id, node_id_of(an, c->node));
    e.config_epoch = c->epoch;
    an_copy_str(e.old_id, sizeof e.old_id, node_id_of(an, old));
    e.source = c->src;
    e.cause = cause;
    e.via = c->via;
    for (unsigned k = 0; k < cl->nobs; k++)
        if (cl->obs[k].slot_owner)
            cl->obs[k].slot_owner(an, cl->obs[k].ctx, &e);
}

/* Why slots of old went to c->node, when the change itself does not say. */
static an_own_cause cause_of(an_analyzer *an, const an_change *c, int32_t old, int32_t slot)
{
    if (c->cause != AN_CAUSE_UNKNOWN)
        return c->cause;
    if (old == AN_NONE)
        return AN_CAUSE_FIRST;
    if (c->src == AN_OWN_BUS) {
        const an_bnode *b = bn_of(an, c->node);
        if (b && b->promoted && b->promoted_from == old)
            return AN_CAUSE_FAILOVER;
        if (b && b->seen && (b->flags & BUS_NODE_MASTER))
            return AN_CAUSE_MIGRATION;
        return AN_CAUSE_UNKNOWN;
    }
    /* what clients were told: the registry knows roles from the maps */
    if ((uint32_t)old < an->nnodes && (uint32_t)c->node < an->nnodes &&
        (an->nodes[old].master == c->node || an->nodes[c->node].master == old))
        return AN_CAUSE_FAILOVER;
    if (slot >= 0 && slot < AN_SLOTS && an->migs[slot] && an->migs[slot]->target == c->node)
        return AN_CAUSE_MIGRATION;
    return AN_CAUSE_UNKNOWN;
}

/* Slot s changes per c (a claim that won): gathered into runs of
 * consecutive slots with the same old period, each applied whole. */
typedef struct an_run {
    int32_t lo, hi;
    an_own_cause cause;
} an_run;

static void run_flush(an_analyzer *an, an_own_map *m, const an_change *c, an_run *r)
{
    if (r->lo >= 0)
        apply_run(an, m, c, r->lo, r->hi, r->cause);
    r->lo = -1;
}

static void run_add(an_analyzer *an, an_own_map *m, const an_change *c, an_run *r, int32_t s)
{
    an_own_cause cause = c->same_owner ? (an_own_cause)m->cause[s]
                                       : cause_of(an, c, m->node[s], s);
    if (r->lo >= 0 && r->hi == s - 1 && r->cause == cause && same_period(m, r->lo, s)) {
        r->hi = s;
        return;
    }
    run_flush(an, m, c, r);
    r->lo = r->hi = s;
    r->cause = cause;
}

/* A master's claim of the slots of bitmap `slots` with config epoch c->epoch
 * (its header, or an UPDATE about it), on the bus map. */
static void bus_claim(an_analyzer *an, const uint8_t *slots, an_change *c)
{
    struct an_cluster *cl = an->cluster;
    an_own_map *m = own_map(cl, AN_OWN_BUS);
    an_bnode *b = bn_of(an, c->node);
    if (!m || !b)
        return;
    if (!b->claim) {
        if (!(b->claim = malloc(BUS_SLOT_BYTES)))
            return;
    } else if (b->claim_epoch == c->epoch && memcmp(b->claim, slots, BUS_SLOT_BYTES) == 0) {
        return; /* what it claimed last time: a claim loses or wins only by
                   its own epoch, so nothing can have changed */
    }
    memcpy(b->claim, slots, BUS_SLOT_BYTES);
    b->claim_epoch = c->epoch;
    cl->has_bus = 1;
    an_run moved = {-1, -1, AN_CAUSE_UNKNOWN}, bumped = {-1, -1, AN_CAUSE_UNKNOWN};
    an_change same = *c;
    same.same_owner = 1;
    for (int32_t byte = 0; byte < BUS_SLOT_BYTES; byte++) {
        if (!slots[byte])
            continue;
        for (int32_t bit = 0; bit < 8; bit++) {
            if (!((slots[byte] >> bit) & 1))
                continue;
            int32_t s = byte * 8 + bit;
            int32_t cur = m->node[s];
            if (cur == c->node) {
                if (c->epoch > m->epoch[s])
                    run_add(an, m, &same, &bumped, s);
            } else if (cur == AN_NONE || c->epoch > m->epoch[s]) {
                run_add(an, m, c, &moved, s);
            } else if (c->epoch == m->epoch[s]) {
                an->st.bus_claim_conflicts++;
            } else {
                an->st.bus_stale_claims++;
            }
        }
    }
    run_flush(an, m, c, &moved);
    run_flush(an, m, &same, &bumped);
}

void an_cluster_on_told(an_analyzer *an, int32_t lo, int32_t hi, int32_t node,
                        uint64_t config_epoch, int64_t ts_us, uint8_t via)
{
    struct an_cluster *cl = cl_get(an);
    an_own_map *m = cl ? own_map(cl, AN_OWN_CLIENTS) : NULL;
    if (!m || node == AN_NONE || lo < 0 || hi >= AN_SLOTS || lo > hi)
        return;
    an_change c = {.src = AN_OWN_CLIENTS, .node = node, .epoch = config_epoch, .ts = ts_us,
                   .via = via, .cause = AN_CAUSE_UNKNOWN, .fo = -1};
    an_change same = c;
    same.same_owner = 1;
    an_run moved = {-1, -1, AN_CAUSE_UNKNOWN}, bumped = {-1, -1, AN_CAUSE_UNKNOWN};
    for (int32_t s = lo; s <= hi; s++) {
        if (m->node[s] == node) {
            if (config_epoch > m->epoch[s])
                run_add(an, m, &same, &bumped, s);
        } else if (!config_epoch || !m->epoch[s] || config_epoch >= m->epoch[s]) {
            run_add(an, m, &c, &moved, s);
        }
    }
    run_flush(an, m, &c, &moved);
    run_flush(an, m, &same, &bumped);
}

/* ---------------------------------------------------------------- failovers */

/* Masters that own slots on the bus map: the electorate. */
static uint32_t masters_with_slots(const an_analyzer *an)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < an->nnodes && i < an->cfg.max_nodes; i++)
        n += an->cluster->bn[i].owned > 0;
    return n;
}

static void emit_failover(an_analyzer *an, const an_failover *f)
{
    struct an_cluster *cl = an->cluster;
    an->st.failovers++;
    for (unsigned k = 0; k < cl->nobs; k++)
        if (cl->obs[k].failover)
            cl->obs[k].failover(an, cl->obs[k].ctx, f);
    if (!an->sink.failover)
        return;
    an_failover_rec r;
    memset(&r, 0, sizeof r);
    r.ts_us = f->ts_us;
    r.kind = an_fo_kind_name(f->kind);
    node_text(an, f->old_master, r.old_master, sizeof r.old_master);
    an_copy_str(r.old_id, sizeof r.old_id, f->old_id);
    node_text(an, f->new_master, r.new_master, sizeof r.new_master);
    an_copy_str(r.new_id, sizeof r.new_id, f->new_id);
    r.config_epoch = f->config_epoch;
    r.detected_us = f->detected_us;
    r.elected_us = f->elected_us;
    r.done_us = f->done_us;
    r.votes = f->votes;
    r.slots = f->slots;
    r.frame = f->frame;
    an->sink.failover(an->sink.ctx, &r);
}

/* The failover record of replica x (state b) replacing old. */
static void failover_fill(an_analyzer *an, an_failover *f, int32_t x, const an_bnode *b,
                          int32_t old)
{
    const an_bnode *ob = bn_of(an, old);
    /* x was a replica since prev_role_us; when that is its first sight in
     * the capture, the replica time began earlier, unseen: a FAIL of old
     * before it still belongs to this failover. */
    int64_t since = b->prev_role_us == b->first_us ? INT64_MIN : b->prev_role_us;
    memset(f, 0, sizeof *f);
    f->old_master = old;
    f->new_master = x;
    an_copy_str(f->old_id, sizeof f->old_id, node_id_of(an, old));
    an_copy_str(f->new_id, sizeof f->new_id, node_id_of(an, x));
    if (b->mf_us && (b->mf_master == old || b->mf_master == AN_NONE))
        f->kind = AN_FO_MANUAL;
    else if (b->auth_us || (ob && ob->fail_us && ob->fail_us >= since))
        f->kind = AN_FO_AUTOMATIC;
    else
        f->kind = AN_FO_TAKEOVER;
    if (f->kind == AN_FO_MANUAL)
        f->detected_us = b->mf_us;
    else if (f->kind == AN_FO_AUTOMATIC && ob)
        f->detected_us = ob->fail_us && ob->fail_us >= since     ? ob->fail_us
                         : ob->pfail_us && ob->pfail_us >= since ? ob->pfail_us : 0;
    f->votes = b->votes;
    f->elected_us = b->elected_us ? b->elected_us : b->vote_us;
}

/* Replica x announced itself master after being old's replica: the
 * failover is done with this message (its claim follows). Returns its
 * index, or -1 when not kept. */
static int16_t failover_done(an_analyzer *an, int32_t x, int32_t old, const bus_msg *m,
                             int64_t ts, uint64_t frame, uint64_t conn)
{
    struct an_cluster *cl = an->cluster;
    an_bnode *b = bn_of(an, x);
    an_own_map *own = own_map(cl, AN_OWN_BUS);
    an_failover f;
    failover_fill(an, &f, x, b, old);
    f.ts_us = f.done_us = ts;
    f.frame = frame;
    f.conn = conn;
    f.config_epoch = m->config_epoch;
    for (int32_t s = 0; own && s < AN_SLOTS; s++)
        if (own->node[s] == old && own->epoch[s] < m->config_epoch && bus_slot_claimed(m->slots, (unsigned)s))
            f.slots++;
    b->promoted = 1;
    b->promoted_from = old;
    b->auth_pending = 0;
    int16_t idx = -1;
    if (cl->nfo < FO_MAX) {
        idx = (int16_t)cl->nfo;
        cl->fo[cl->nfo++] = f;
    } else {
        an->st.dropped_failovers++;
    }
    emit_failover(an, &f);
    return idx;
}

/* The receiver of a message sent in direction dir on bus connection id:
 * whoever sent in the other direction. */
static an_bconn *bconn_get(an_analyzer *an, uint64_t id, int create);

static int bconn_eq(const void *ctx, int32_t val, const void *key)
{
    const struct an_cluster *cl = ctx;
    return cl->bconns[val].id == *(const uint64_t *)key;
}

static an_bconn *bconn_get(an_analyzer *an, uint64_t id, int create)
{
    struct an_cluster *cl = an->cluster;
    uint64_t h = an_mix64(id + 7);
    int32_t i = an_map_find(&cl->bconn_map, h, bconn_eq, cl, &id);
    if (i != AN_NONE)
        return &cl->bconns[i];
    if (!create)
        return NULL;
    if (cl->nbconns >= BUS_CONNS_MAX) {
        an->st.dropped_bus_conns++; /* its votes cannot be told apart */
        return NULL;
    }
    if (!cl->bconns && !(cl->bconns = calloc(BUS_CONNS_MAX, sizeof *cl->bconns)))
        return NULL;
    /* a free entry: closed connections leave id 0 behind */
    for (uint32_t k = 0; k < BUS_CONNS_MAX; k++) {
        uint32_t j = (uint32_t)(id + k) & (BUS_CONNS_MAX - 1);
        if (cl->bconns[j].id == 0) {
            cl->bconns[j].id = id;
            cl->bconns[j].sender[0] = cl->bconns[j].sender[1] = AN_NONE;
            an_map_put(&cl->bconn_map, h, (int32_t)j);
            cl->nbconns++;
            return &cl->bconns[j];
        }
    }
    return NULL;
}

void an_cluster_conn_close(an_analyzer *an, uint64_t id)
{
    struct an_cluster *cl = an->cluster;
    if (!cl || !cl->bconns)
        return;
    uint64_t h = an_mix64(id + 7);
    int32_t i = an_map_find(&cl->bconn_map, h, bconn_eq, cl, &id);
    if (i == AN_NONE)
        return;
    an_map_del(&cl->bconn_map, h, i);
    cl->bconns[i].id = 0;
    cl->nbconns--;
}

/* A vote (AUTH_ACK with epoch e) for candidate x. */
static void vote(an_analyzer *an, int32_t x, uint64_t e, int64_t ts)
{
    an_bnode *b = bn_of(an, x);
    if (!b || !b->auth_pending || e < b->auth_epoch)
        return;
    b->votes++;
    b->vote_us = ts;
    if (!b->elected_us && b->votes >= masters_with_slots(an) / 2 + 1)
        b->elected_us = ts;
}

/* The one replica holding an election that a vote of epoch e can be for,
 * when the connection's other side has not spoken yet; AN_NONE when none or
 * several (the vote is then not counted rather than given to a guess). */
static int32_t sole_candidate(const an_analyzer *an, uint64_t e)
{
    int32_t found = AN_NONE;
    for (uint32_t i = 0; i < an->nnodes && i < an->cfg.max_nodes; i++) {
        const an_bnode *b = &an->cluster->bn[i];
        if (!b->auth_pending || b->auth_epoch > e)
            continue;
        if (found != AN_NONE)
            return AN_NONE;
        found = (int32_t)i;
    }
    return found;
}

/* ---------------------------------------------------------------- messages */

void an_cluster_on_bus(an_analyzer *an, const cap_conn *cc, int dir, const bus_msg *m,
                       int64_t ts_us, uint64_t frame)
{
    struct an_cluster *cl = cl_get(an);
    if (!cl || !bn_table(an, cl) || !cc)
        return;
    an->st.bus_messages++;
    int32_t x = sender_of(an, cc, dir, m);
    an_bconn *bc = bconn_get(an, cc->id, 1);
    if (x == AN_NONE || (uint32_t)x >= an->cfg.max_nodes) {
        an->st.bus_unknown_sender++;
        return;
    }
    if (bc)
        bc->sender[dir & 1] = x;
    int32_t was_replica_of;
    announce(an, x, m, ts_us, frame, cc->id, &was_replica_of);
    an_bnode *b = &cl->bn[x];
    if (dir == CAP_TO_SERVER)
        b->heard_out = 1;
    if (was_replica_of != AN_NONE)
        b->fo_idx = failover_done(an, x, was_replica_of, m, ts_us, frame, cc->id);
    if ((m->flags & BUS_NODE_MASTER) && !(m->flags & BUS_NODE_REPLICA) && m->slots) {
        an_change c = {.src = AN_OWN_BUS, .node = x, .epoch = m->config_epoch, .ts = ts_us,
                       .frame = frame, .conn = cc->id, .via = (uint8_t)m->type,
                       .cause = AN_CAUSE_UNKNOWN, .fo = b->promoted ? b->fo_idx : -1};
        bus_claim(an, m->slots, &c);
    }
    switch (m->type) {
    case BUS_PING:
    case BUS_PONG:
    case BUS_MEET:
        gossip(an, x, m, ts_us, frame, cc->id);
        break;
    case BUS_FAIL:
        if (m->whole)
            health_word(an, node_of_id(an, m->about, "", 0), x, 0, 1, ts_us, frame, cc->id,
                        BUS_FAIL);
        break;
    case BUS_UPDATE:
        if (m->whole && m->update_slots) {
            int32_t z = node_of_id(an, m->about, "", 0);
            if (z != AN_NONE && (uint32_t)z < an->cfg.max_nodes) {
                an_change c = {.src = AN_OWN_BUS, .node = z, .epoch = m->update_epoch,
                               .ts = ts_us, .frame = frame, .conn = cc->id, .via = BUS_UPDATE,
                               .cause = AN_CAUSE_UNKNOWN, .fo = -1};
                bus_claim(an, m->update_slots, &c);
            }
        }
        break;
    case BUS_MFSTART:
        b->mf_us = ts_us;
        b->mf_master = m->master[0] ? node_of_id(an, m->master, "", 0) : AN_NONE;
        break;
    case BUS_AUTH_REQUEST:
        if (!b->auth_pending || m->current_epoch > b->auth_epoch) {
            if (b->auth_epoch != m->current_epoch) {
                b->votes = 0;
                b->elected_us = b->vote_us = 0;
            }
            b->auth_pending = 1;
            b->auth_epoch = m->current_epoch;
            if (!b->auth_us)
                b->auth_us = ts_us;
        }
        break;
    case BUS_AUTH_ACK: {
        int32_t to = bc ? bc->sender[!(dir & 1)] : AN_NONE;
        if (to == AN_NONE)
            to = sole_candidate(an, m->current_epoch);
        vote(an, to, m->current_epoch, ts_us);
        break;
    }
    default:
        break;
    }
}

/* ---------------------------------------------------------------- queries */

int an_cluster_has_bus(const an_analyzer *an)
{
    return an->cluster && an->cluster->has_bus;
}

int an_cluster_heard_out(const an_analyzer *an, int32_t node)
{
    const struct an_cluster *cl = an->cluster;
    return cl && cl->bn && node >= 0 && (uint32_t)node < an->cfg.max_nodes &&
           cl->bn[node].heard_out;
}

int32_t an_cluster_slot_owner(const an_analyzer *an, int32_t slot, uint64_t *config_epoch,
                              int64_t *since_us, an_own_source *source)
{
    const struct an_cluster *cl = an->cluster;
    if (!cl || slot < 0 || slot >= AN_SLOTS)
        return AN_NONE;
    an_own_source src = cl->has_bus ? AN_OWN_BUS : AN_OWN_CLIENTS;
    const an_own_map *m = src == AN_OWN_BUS ? cl->bus : cl->told;
    if (!m || m->node[slot] == AN_NONE)
        return AN_NONE;
    if (config_epoch)
        *config_epoch = m->epoch[slot];
    if (since_us)
        *since_us = m->from[slot];
    if (source)
        *source = src;
    return m->node[slot];
}

const an_failover *an_cluster_slot_failover(const an_analyzer *an, int32_t slot)
{
    const struct an_cluster *cl = an->cluster;
    if (!cl || !cl->bus || slot < 0 || slot >= AN_SLOTS || cl->bus->fo[slot] < 0)
        return NULL;
    return &cl->fo[cl->bus->fo[slot]];
}

an_own_cause an_cluster_moved_cause(an_analyzer *an, int32_t slot, int32_t from, int32_t to,
                                    int64_t ts_us)
{
    const struct an_cluster *cl = an->cluster;
    (void)ts_us;
    if (slot < 0 || slot >= AN_SLOTS || to == AN_NONE)
        return AN_CAUSE_UNKNOWN;
    /* the bus's word first: the latest change that gave the slot to `to` */
    if (cl && cl->bus && cl->bus->node[slot] == to &&
        (cl->bus->cause[slot] == AN_CAUSE_FAILOVER || cl->bus->cause[slot] == AN_CAUSE_MIGRATION))
        return (an_own_cause)cl->bus->cause[slot];
    /* what clients were told: `to` was `from`'s replica (the registry has
     * not learnt the promotion yet, or learnt it from a MOVED of `from`'s
     * to it: an_nodes_learn_moved), or `from`, the owner they were told
     * of, is now `to`'s replica (a replica answering for its master is no
     * change at all) */
    int told_from = cl && cl->told && cl->told->node[slot] == from;
    if (from != AN_NONE && (uint32_t)from < an->nnodes && (uint32_t)to < an->nnodes &&
        (an->nodes[to].master == from || an->nodes[to].promoted_from == from ||
         (told_from && an->nodes[from].master == to)))
        return AN_CAUSE_FAILOVER;
    for (uint32_t k = 0; cl && k < cl->nfo; k++)
        if (cl->fo[k].new_master == to && cl->fo[k].old_master == from)
            return AN_CAUSE_FAILOVER;
    if (an->migs[slot] && an->migs[slot]->target == to)
        return AN_CAUSE_MIGRATION;
    return AN_CAUSE_UNKNOWN;
}

/* ---------------------------------------------------------------- end */

/* Rows still open at the end of map m. */
static void emit_open_rows(an_analyzer *an, const an_own_map *m, an_own_source src)
{
    int32_t lo = -1;
    for (int32_t s = 0; s <= AN_SLOTS; s++) {
        if (lo >= 0 && (s == AN_SLOTS || !same_period(m, lo, s))) {
            emit_row(an, m, src, lo, s - 1, 0);
            lo = -1;
        }
        if (s < AN_SLOTS && lo < 0 && m->node[s] != AN_NONE)
            lo = s;
    }
}

void an_cluster_finish(an_analyzer *an)
{
    struct an_cluster *cl = an->cluster;
    if (!cl)
        return;
    /* elections seen without their outcome */
    for (uint32_t i = 0; cl->bn && i < an->nnodes && i < an->cfg.max_nodes; i++) {
        an_bnode *b = &cl->bn[i];
        if (!b->auth_pending || b->promoted)
            continue;
        an_failover f;
        failover_fill(an, &f, (int32_t)i, b, b->master);
        f.ts_us = b->vote_us ? b->vote_us : b->auth_us;
        f.config_epoch = b->auth_epoch;
        b->auth_pending = 0;
        emit_failover(an, &f);
    }
    if (cl->bus)
        emit_open_rows(an, cl->bus, AN_OWN_BUS);
    if (cl->told)
        emit_open_rows(an, cl->told, AN_OWN_CLIENTS);
}

void an_cluster_fill_node(const an_analyzer *an, int32_t node, an_node *out)
{
    const an_bnode *b = bn_of((an_analyzer *)an, node);
    if (!b || (!b->seen && b->health == AN_HEALTH_OK))
        return;
    char f[64] = "";
    if (b->seen)
        an_copy_str(f, sizeof f, (b->flags & BUS_NODE_MASTER) ? "master"
                                 : (b->flags & BUS_NODE_REPLICA) ? "replica" : "");
    static const struct { uint16_t bit; const char *name; } extra[] = {
        {BUS_NODE_HANDSHAKE, "handshake"}, {BUS_NODE_NOADDR, "noaddr"},
        {BUS_NODE_NOFAILOVER, "nofailover"}};
    const char *h = b->health == AN_HEALTH_FAIL ? "fail" : b->health == AN_HEALTH_PFAIL ? "pfail" : NULL;
    if (h) {
        size_t n = strlen(f);
        snprintf(f + n, sizeof f - n, "%s%s", n ? "," : "", h);
    }
    for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++) {
        if (!(b->flags & extra[k].bit))
            continue;
        size_t n = strlen(f);
        snprintf(f + n, sizeof f - n, "%s%s", n ? "," : "", extra[k].name);
    }
    an_copy_str(out->flags, sizeof out->flags, f);
    if (an->cluster->has_bus)
        out->slots_owned = b->owned; /* the cluster's own word */
    an_copy_str(out->master_id, sizeof out->master_id, b->master_id);
    out->config_epoch = b->config_epoch;
    out->current_epoch = b->current_epoch;
    out->bus_port = b->cport;
    out->role_us = b->role_us;
    out->master_us = b->master_us;
    out->config_epoch_us = b->epoch_us;
    out->flags_us = b->flags_us;
}

void an_cluster_free(an_analyzer *an)
{
    struct an_cluster *cl = an->cluster;
    if (!cl)
        return;
    if (cl->bn) {
        for (uint32_t i = 0; i < an->cfg.max_nodes; i++) {
            free(cl->bn[i].claim);
            free(cl->bn[i].pfail_by);
            free(cl->bn[i].fail_by);
        }
        free(cl->bn);
    }
    free(cl->bus);
    free(cl->told);
    free(cl->bconns);
    an_map_free(&cl->bconn_map);
    an_map_free(&cl->id_map);
    free(cl);
    an->cluster = NULL;
}
