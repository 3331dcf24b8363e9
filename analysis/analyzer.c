/*
 * analyzer.c - the analysis stage's entry points: an_new/an_free, the resp_sink
 * that receives paired commands, the connection and client tables, and the
 * per-command dispatch to nodes, operations, detectors and the timeline.
 *
 * A client is a host address (AN_CLIENT_BY_HOST: a connection pool is one
 * client) or one connection (AN_CLIENT_BY_CONN). A node is a server endpoint.
 * Connections that carry replication (REPLCONF, PSYNC, SYNC) or MIGRATE's
 * RESTORE-ASKING are node-to-node links: their commands are counted, never
 * judged.
 *
 * Cluster behaviour modelled here (Redis Cluster specification, "Redirection
 * and resharding"): ASKING is a flag on the connection that covers exactly the
 * next command; READONLY lets a replica serve reads for its master's slots on
 * that connection until READWRITE or RESET.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/internal.h"

/* ---------------------------------------------------------------- LRU lists */

/* The tables below keep their entries in LRU order with prev/next indexes; these
 * helpers work on any of them through pointers to the fields. */
#define LRU_UNLINK(arr, i, head, tail)                                         \
    do {                                                                       \
        int32_t p_ = (arr)[i].lprev, n_ = (arr)[i].lnext;                      \
        if (p_ != AN_NONE) (arr)[p_].lnext = n_; else (head) = n_;             \
        if (n_ != AN_NONE) (arr)[n_].lprev = p_; else (tail) = p_;             \
        (arr)[i].lprev = (arr)[i].lnext = AN_NONE;                             \
    } while (0)
#define LRU_PUSH(arr, i, head, tail)                                           \
    do {                                                                       \
        (arr)[i].lprev = (tail);                                               \
        (arr)[i].lnext = AN_NONE;                                              \
        if ((tail) != AN_NONE) (arr)[tail].lnext = (i); else (head) = (i);     \
        (tail) = (i);                                                          \
    } while (0)

/* ---------------------------------------------------------------- clients */

/* Emit a client's record and latency, then forget it (eviction or finish). */
static void client_emit(an_analyzer *an, an_cli *c)
{
    /* A client whose every connection moved to another (it announced its
     * name, or turned out to be a node link) has no record of its own. */
    if (c->pub.connections == 0 && c->pub.commands == 0)
        return;
    c->pub.is_node = c->node_conns > 0 && c->node_conns >= c->pub.connections;
    if (an->sink.client)
        an->sink.client(an->sink.ctx, &c->pub);
    if (!c->pub.is_node)
        an_lat_emit(an, AN_SCOPE_CLIENT, c->pub.name, c->lat);
}

static void client_drop(an_analyzer *an, int32_t i)
{
    an_cli *c = &an->clients[i];
    an_map_del(&an->client_map, an_hash_str(c->pub.name, 0), i);
    an_memos_drop_client(an, i);
    an_ops_drop_client(an, i);
    an_view_free(an, c);
    an_lat_free(&c->lat[0]);
    an_lat_free(&c->lat[1]);
    LRU_UNLINK(an->clients, i, an->cli_lru_head, an->cli_lru_tail);
    memset(c, 0, sizeof *c);
    c->lnext = an->cli_free;
    an->cli_free = i;
    an->nclients--;
}

/* The client named name (created with its host when new). Evicts the least
 * recently active client when the table is full. */
static int32_t client_get(an_analyzer *an, const char *name, const cap_addr *host, int64_t ts)
{
    uint64_t h = an_hash_str(name, 0);
    int32_t i = an_map_find(&an->client_map, h, an_client_eq, an, name);
    if (i != AN_NONE) {
        LRU_UNLINK(an->clients, i, an->cli_lru_head, an->cli_lru_tail);
        LRU_PUSH(an->clients, i, an->cli_lru_head, an->cli_lru_tail);
        return i;
    }
    if (an->nclients >= an->cfg.max_clients) {
        int32_t old = an->cli_lru_head;
        client_emit(an, &an->clients[old]);
        client_drop(an, old);
        an->st.evicted_clients++;
    }
    if (an->cli_free != AN_NONE) {
        i = an->cli_free;
        an->cli_free = an->clients[i].lnext;
    } else {
        i = (int32_t)an->cli_hwm++;
    }
    an_cli *c = &an->clients[i];
    memset(c, 0, sizeof *c);
    c->used = 1;
    c->gen = ++an->cli_gen;
    c->memo_head = AN_NONE;
    c->retry_max_us = -1;
    c->lprev = c->lnext = AN_NONE;
    an_copy_str(c->pub.name, sizeof c->pub.name, name);
    c->host = *host;
    c->pub.first_us = c->pub.last_us = ts;
    an_map_put(&an->client_map, h, i);
    LRU_PUSH(an->clients, i, an->cli_lru_head, an->cli_lru_tail);
    an->nclients++;
    return i;
}

/* ---------------------------------------------------------------- connections */

/* Emit the record of a connection; st is NULL when it is evicted early. */
static void conn_emit(an_analyzer *an, an_cn *cn, const resp_conn_stats *st)
{
    if (!an->sink.connection)
        return;
    an_connection r;
    memset(&r, 0, sizeof r);
    r.id = cn->id;
    an_copy_str(r.client, sizeof r.client, an_client_name(an, cn->client));
    an_copy_str(r.src, sizeof r.src, cn->src);
    an_copy_str(r.dst, sizeof r.dst, cn->dst);
    r.first_us = cn->first_us;
    r.last_us = cn->last_us;
    r.commands = cn->commands;
    if (cn->cc) {
        r.bytes_to_server = cn->cc->bytes[CAP_TO_SERVER];
        r.bytes_to_client = cn->cc->bytes[CAP_TO_CLIENT];
        r.gaps = (uint64_t)cn->cc->gaps[0] + cn->cc->gaps[1];
        r.first_us = cn->cc->first_us;
        r.last_us = cn->cc->last_us;
    }
    r.mid_stream = cn->mid_stream;
    r.kind = cn->bus ? "bus"
             : st && st->replication ? "replication" : cn->node_link ? "node" : "client";
    if (cn->bus)
        r.client[0] = 0; /* node-to-node gossip: no client's */
    if (st && st->replication_reversed && cn->cc) {
        /* the replica is the client of a replication link, whichever way
         * the capture layer first took it */
        an_copy_str(r.src, sizeof r.src, cn->dst);
        an_copy_str(r.dst, sizeof r.dst, cn->src);
        if (an->cfg.client_by != AN_CLIENT_BY_CONN) {
            size_t n = cap_addr_format(&cn->cc->server.addr, r.client, sizeof r.client);
            if (n < sizeof r.client) /* a node's links are "host (node)" */
                an_copy_str(r.client + n, sizeof r.client - n, " (node)");
        } else
            cap_endpoint_format(&cn->cc->server, r.client, sizeof r.client);
    }
    if (cn->has_ident)
        r.ident = an->conn_ident[cn - an->conns];
    r.out_of_sync = st ? st->out_of_sync : 0;
    r.conn = cn->cc;
    r.resp = st;
    an->sink.connection(an->sink.ctx, &r);
}

static void conn_drop(an_analyzer *an, int32_t i)
{
    an_cn *cn = &an->conns[i];
    an_map_del(&an->conn_map, an_conn_hash(cn->id), i);
    if (an->conn_cache[cn->id & (AN_CONN_CACHE - 1)].idx == i)
        an->conn_cache[cn->id & (AN_CONN_CACHE - 1)].idx = AN_NONE;
    LRU_UNLINK(an->conns, i, an->conn_lru_head, an->conn_lru_tail);
    if (cn->has_ident)
        memset(&an->conn_ident[i], 0, sizeof an->conn_ident[i]);
    memset(cn, 0, sizeof *cn);
    cn->lnext = an->conn_free;
    an->conn_free = i;
    an->nconns--;
}

/* The client name of a connection per cfg.client_by; cn is its entry, NULL
 * for a new one (nothing announced yet, not a node link). */
static void client_name_of(const an_analyzer *an, const an_cn *cn, const cap_conn *cc,
                           char *out, size_t n)
{
    size_t len;
    if (an->cfg.client_by == AN_CLIENT_BY_CONN) {
        cap_endpoint_format(&cc->client, out, n);
        return;
    }
    char tail[3 * AN_IDENT_MAX] = "";
    len = cap_addr_format(&cc->client.addr, out, n);
    if (cn && cn->node_link) {
        an_copy_str(tail, sizeof tail, " (node)");
    } else if (cn && cn->has_ident && an->cfg.client_by == AN_CLIENT_BY_NAME) {
        const an_ident *id = &an->conn_ident[cn - an->conns];
        if (id->client_name[0])
            snprintf(tail, sizeof tail, "/%s", id->client_name);
        else if (id->lib_name[0])
            snprintf(tail, sizeof tail, "/%s%s%s", id->lib_name, id->lib_ver[0] ? "@" : "",
                     id->lib_ver);
    }
    if (len < n)
        an_copy_str(out + len, n - len, tail);
}

/* A new connection state (evicting the least recently active one when the
 * table is full); its endpoints, node and client are looked up once here. */
static int32_t conn_new(an_analyzer *an, const cap_conn *cc, int64_t ts)
{
    char name[AN_NAME_MAX];
    int32_t i;
    if (an->nconns >= an->cfg.max_conns) {
        int32_t old = an->conn_lru_head;
        conn_emit(an, &an->conns[old], NULL);
        conn_drop(an, old);
        an->st.evicted_conns++;
    }
    if (an->conn_free != AN_NONE) {
        i = an->conn_free;
        an->conn_free = an->conns[i].lnext;
    } else {
        i = (int32_t)an->conn_hwm++;
    }
    an_cn *cn = &an->conns[i];
    memset(cn, 0, sizeof *cn);
    cn->used = 1;
    if (++an->conn_gen == 0) /* 0 marks an unused entry */
        an->conn_gen = 1;
    cn->gen = an->conn_gen;
    cn->id = cc->id;
    cn->cc = cc;
    cn->first_us = cn->last_us = ts;
    cn->mid_stream = !cc->saw_syn;
    cn->getkeys_slot = -1;
    cn->asking_ring = AN_NONE;
    cap_endpoint_format(&cc->client, cn->src, sizeof cn->src);
    cap_endpoint_format(&cc->server, cn->dst, sizeof cn->dst);
    cn->node = an_node_by_endpoint_text(an, cn->dst);
    an_nodes_connected(an, cn->node, cc->client.port);
    client_name_of(an, NULL, cc, name, sizeof name);
    cn->client = client_get(an, name, &cc->client.addr, ts);
    cn->client_gen = an->clients[cn->client].gen;
    an->clients[cn->client].pub.connections++;
    an->clients[cn->client].client_conns++;
    an_map_put(&an->conn_map, an_conn_hash(cn->id), i);
    LRU_PUSH(an->conns, i, an->conn_lru_head, an->conn_lru_tail);
    an->nconns++;
    return i;
}

/* The entry of a connection not in the cache: from the map, else new; then
 * cached. */
static __attribute__((noinline)) int32_t conn_miss(an_analyzer *an, const cap_conn *cc,
                                                   int64_t ts)
{
    uint64_t id = cc->id;
    int32_t i = an_map_find(&an->conn_map, an_conn_hash(id), an_conn_eq, an, &id);
    if (i == AN_NONE)
        i = conn_new(an, cc, ts);
    an->conn_cache[id & (AN_CONN_CACHE - 1)].id = id;
    an->conn_cache[id & (AN_CONN_CACHE - 1)].idx = i;
    return i;
}

/* The address a client's operations and ASKINGs are matched by (ops.c,
 * detect_ask.c): its host, or with --client-by name, for a named client, a
 * key of its name in *buf, so that two processes on one host are told
 * apart. */
static const cap_addr *client_host_of(const an_analyzer *an, const an_cn *cn, const cap_conn *cc,
                                      const char *name, cap_addr *buf)
{
    uint64_t h;
    if (an->cfg.client_by != AN_CLIENT_BY_NAME || !cn || !cn->has_ident || cn->node_link)
        return &cc->client.addr;
    *buf = cc->client.addr;
    buf->family = (uint8_t)(buf->family | 0x80); /* never a real family */
    h = an_hash_str(name, 0);
    for (int k = 0; k < 8; k++)
        buf->bytes[8 + k] ^= (uint8_t)(h >> (8 * k));
    return buf;
}

/* Add what src announced to dst: a field dst has not got is taken; a
 * different value is joined with ',' while it fits. */
static void ident_merge(an_ident *dst, const an_ident *src)
{
    char *d[3] = {dst->lib_name, dst->lib_ver, dst->client_name};
    const char *s[3] = {src->lib_name, src->lib_ver, src->client_name};
    for (int k = 0; k < 3; k++) {
        size_t n = strlen(d[k]), m = strlen(s[k]);
        if (!m || !strcmp(d[k], s[k]))
            continue;
        if (!n)
            an_copy_str(d[k], AN_IDENT_MAX, s[k]);
        else if (n + 1 + m < AN_IDENT_MAX && !strstr(d[k], s[k]))
        {
            d[k][n] = ',';
            memcpy(d[k] + n + 1, s[k], m + 1);
        }
    }
}

/* A connection whose client was evicted meanwhile gets its client again. */
static __attribute__((noinline)) void conn_reclient(an_analyzer *an, an_cn *cn,
                                                    const cap_conn *cc, int64_t ts)
{
    char name[AN_NAME_MAX];
    cap_addr key;
    client_name_of(an, cn, cc, name, sizeof name);
    cn->client = client_get(an, name, client_host_of(an, cn, cc, name, &key), ts);
    cn->client_gen = an->clients[cn->client].gen;
    an->clients[cn->client].pub.connections++;
    if (cn->node_link)
        an->clients[cn->client].node_conns++;
    else
        an->clients[cn->client].client_conns++;
    if (cn->has_ident)
        ident_merge(&an->clients[cn->client].pub.ident, &an->conn_ident[cn - an->conns]);
}

/* Move connection cn (of capture connection cc) to the client its name now
 * says (it announced itself, or turned out to be a node link: was_link tells
 * which kind of connection its old client counted it as), with the commands
 * it made so far. */
static void conn_move_client(an_analyzer *an, an_cn *cn, const cap_conn *cc, int64_t ts,
                             int was_link)
{
    char name[AN_NAME_MAX];
    an_cli *old = &an->clients[cn->client];
    if (!cc)
        return;
    client_name_of(an, cn, cc, name, sizeof name);
    if (old->used && old->gen == cn->client_gen) {
        uint64_t *kind = was_link ? &old->node_conns : &old->client_conns;
        if (!strcmp(old->pub.name, name))
            return;
        old->pub.connections -= old->pub.connections ? 1 : 0;
        *kind -= *kind ? 1 : 0;
        old->pub.commands -= cn->commands <= old->pub.commands ? cn->commands
                                                               : old->pub.commands;
    }
    conn_reclient(an, cn, cc, ts);
    an->clients[cn->client].pub.commands += cn->commands;
}

/* The word resp carries in each command of a connection (resp_sink.conn_word):
 * the index of its entry + 1 in the low half, the entry's gen in the high
 * half. */
static uint64_t conn_word_of(const an_analyzer *an, int32_t i)
{
    return (uint64_t)an->conns[i].gen << 32 | (uint32_t)(i + 1);
}

/* The entry a conn_word names, or AN_NONE when there is none or the entry
 * went to another connection meanwhile (evicted at max_conns and reused: its
 * gen changed). Costs no load beyond the entry itself, which the command
 * reads anyway: the capture's cap_conn and the cache by id are not needed. */
static inline int32_t conn_by_word(const an_analyzer *an, uint64_t w)
{
    uint32_t i = (uint32_t)w - 1; /* w == 0: UINT32_MAX */
    if (i >= an->conn_hwm)
        return AN_NONE;
    const an_cn *cn = &an->conns[i];
    return cn->gen == (uint32_t)(w >> 32) && cn->used ? (int32_t)i : AN_NONE;
}

/* The entry of a connection, created at its first sight. A small
 * direct-mapped cache by id spares the map lookup for the connections in
 * use. */
static inline int32_t conn_find(an_analyzer *an, const cap_conn *cc, int64_t ts)
{
    uint64_t id = cc->id;
    int32_t i = an->conn_cache[id & (AN_CONN_CACHE - 1)].id == id
                    ? an->conn_cache[id & (AN_CONN_CACHE - 1)].idx
                    : AN_NONE;
    if (i == AN_NONE)
        i = conn_miss(an, cc, ts);
    return i;
}

/* Recency is kept per epoch of AN_LRU_EPOCH commands: an entry moves to the
 * LRU tail at most once per epoch, so interleaved connections do not relink
 * at every command, and an eviction takes an entry last active at most one
 * epoch after the least recently active one. Near the cap (where evictions
 * come) every activity moves its entry. Is connection entry i due to move? */
static inline int conn_relink_due(const an_analyzer *an, int32_t i, const an_cn *cn)
{
    return an->conn_lru_tail != i &&
           (cn->lru_epoch != an->lru_epoch || an->nconns + AN_LRU_EPOCH > an->cfg.max_conns);
}

/* The same for client entry ci. */
static inline int cli_relink_due(const an_analyzer *an, int32_t ci, const an_cli *c)
{
    return an->cli_lru_tail != ci &&
           (c->lru_epoch != an->lru_epoch || an->nclients + AN_LRU_EPOCH > an->cfg.max_clients);
}

/* Move connection entry i to the LRU tail, in the current epoch. */
static inline void conn_relink(an_analyzer *an, int32_t i)
{
    an->conns[i].lru_epoch = an->lru_epoch;
    LRU_UNLINK(an->conns, i, an->conn_lru_head, an->conn_lru_tail);
    LRU_PUSH(an->conns, i, an->conn_lru_head, an->conn_lru_tail);
}

/* Move client entry ci to the LRU tail, in the current epoch. */
static inline void cli_relink(an_analyzer *an, int32_t ci)
{
    an->clients[ci].lru_epoch = an->lru_epoch;
    LRU_UNLINK(an->clients, ci, an->cli_lru_head, an->cli_lru_tail);
    LRU_PUSH(an->clients, ci, an->cli_lru_head, an->cli_lru_tail);
}

/* Mark entry i, of connection cc, as the most recently active (with its
 * client). */
static inline an_cn *conn_touch(an_analyzer *an, int32_t i, const cap_conn *cc, int64_t ts)
{
    an_cn *cn = &an->conns[i];
    if (conn_relink_due(an, i, cn))
        conn_relink(an, i);
    an_cli *c = &an->clients[cn->client];
    if (!c->used || c->gen != cn->client_gen)
        conn_reclient(an, cn, cc, ts);
    else if (cli_relink_due(an, cn->client, c))
        cli_relink(an, cn->client);
    return cn;
}

/* The state of a connection, created at its first sight, and marked as the
 * most recently active (with its client). */
static inline an_cn *conn_get(an_analyzer *an, const cap_conn *cc, int64_t ts)
{
    return conn_touch(an, conn_find(an, cc, ts), cc, ts);
}

/* This connection (of capture connection cc) carries node-to-node traffic.
 * Unless clients are connections, it moves to client "host (node)": never
 * merged with the clients of its address. */
static void mark_node_link(an_analyzer *an, an_cn *cn, const cap_conn *cc)
{
    if (cn->node_link)
        return;
    cn->node_link = 1;
    an->st.node_links++;
    if (an->cfg.client_by != AN_CLIENT_BY_CONN) {
        conn_move_client(an, cn, cc, cn->last_us, 0);
        return;
    }
    an_cli *c = &an->clients[cn->client];
    c->node_conns++;
    if (c->client_conns)
        c->client_conns--;
}

/* ---------------------------------------------------------------- new/free */

an_analyzer *an_new(const an_config *cfg, const an_sink *sink)
{
    an_analyzer *an = calloc(1, sizeof *an);
    if (!an)
        return NULL;
    if (cfg)
        an->cfg = *cfg;
    else
        an_config_defaults(&an->cfg);
    if (sink)
        an->sink = *sink;
    an_config *c = &an->cfg;
    /* zero caps (a config not from an_config_defaults) get the defaults */
    an_config d;
    an_config_defaults(&d);
#define FIX(f) if (!c->f) c->f = d.f
    FIX(max_clients); FIX(max_ops); FIX(max_conns); FIX(max_nodes); FIX(max_findings);
    FIX(max_memos); FIX(loop_max_redirects); FIX(op_window_us); FIX(moved_ignored_min);
    FIX(tryagain_min); FIX(ask_cached_min); FIX(migration_stuck_us); FIX(tryagain_max);
    FIX(readonly_missing_min); FIX(convergence_window_us); FIX(max_convergence);
    FIX(readonly_missing_min);
    FIX(series_bucket_us); FIX(series_scopes);
#undef FIX
    if (c->max_nodes > 30000)
        c->max_nodes = 30000; /* node indexes live in int16 / uint16 arrays */
    /* zeroed pages are only touched when used: calloc, then aligned by hand */
    an->conns_block = calloc((size_t)c->max_conns + 1, sizeof *an->conns);
    if (an->conns_block)
        an->conns = (an_cn *)(((uintptr_t)an->conns_block + _Alignof(an_cn) - 1) &
                              ~(uintptr_t)(_Alignof(an_cn) - 1));
    an->clients = calloc(c->max_clients, sizeof *an->clients);
    an->nodes = calloc(c->max_nodes, sizeof *an->nodes);
    an->memos = calloc(c->max_memos, sizeof *an->memos);
    an->ops = calloc(c->max_ops, sizeof *an->ops);
    an->findings = calloc(c->max_findings, sizeof *an->findings);
    if (!an->conns || !an->clients || !an->nodes || !an->memos || !an->ops || !an->findings ||
        an_map_init(&an->conn_map, c->max_conns) || an_map_init(&an->client_map, c->max_clients) ||
        an_map_init(&an->node_map, c->max_nodes * 4) || an_map_init(&an->memo_map, c->max_memos) ||
        an_map_init(&an->op_map, c->max_ops) || an_map_init(&an->finding_map, c->max_findings) ||
        an_ser_init(an)) {
        an_free(an);
        return NULL;
    }
    an->conn_free = an->cli_free = an->memo_free = an->op_free = AN_NONE;
    an->conn_lru_head = an->conn_lru_tail = AN_NONE;
    an->cli_lru_head = an->cli_lru_tail = AN_NONE;
    an->memo_lru_head = an->memo_lru_tail = AN_NONE;
    an->op_list_head = an->op_list_tail = AN_NONE;
    for (int s = 0; s < AN_SLOTS; s++)
        an->owner[s] = AN_NONE;
    for (uint32_t k = 0; k < AN_CONN_CACHE; k++) {
        an->conn_cache[k].id = UINT64_MAX;
        an->conn_cache[k].idx = AN_NONE;
    }
    /* convergence.c follows the ownership changes */
    an_cluster_observer cv_obs = {.slot_owner = an_cv_slot_owner};
    if (an_cluster_observe(an, &cv_obs) != 0) {
        an_free(an);
        return NULL;
    }
    return an;
}

void an_free(an_analyzer *an)
{
    if (!an)
        return;
    if (an->clients) {
        /* entries past the high-water mark were never used (nor touched) */
        for (uint32_t i = 0; i < an->cli_hwm; i++) {
            if (!an->clients[i].used)
                continue;
            an_view_free(an, &an->clients[i]);
            an_lat_free(&an->clients[i].lat[0]);
            an_lat_free(&an->clients[i].lat[1]);
        }
    }
    an_nodes_free(an);
    an_cluster_free(an);
    an_findings_free(an);
    an_tl_free(an);
    an_cv_free(an);
    an_ser_free(an);
    for (int s = 0; s < AN_SLOTS; s++) {
        if (an->slot_lat[s]) {
            an_lat_free(&an->slot_lat[s][0]);
            an_lat_free(&an->slot_lat[s][1]);
            free(an->slot_lat[s]);
        }
    }
    an_lat_free(&an->all_lat[0]);
    an_lat_free(&an->all_lat[1]);
    an_lat_free(&an->nonode_lat[0]);
    an_lat_free(&an->nonode_lat[1]);
    an_map_free(&an->conn_map);
    an_map_free(&an->client_map);
    an_map_free(&an->node_map);
    an_map_free(&an->memo_map);
    an_map_free(&an->op_map);
    an_map_free(&an->finding_map);
    free(an->conns_block);
    free(an->conn_ident);
    free(an->clients);
    free(an->nodes);
    free(an->memos);
    free(an->ops);
    free(an->findings);
    free(an);
}

/* ---------------------------------------------------------------- commands */

/* Pass the command to the sink's command callback, with keys and arguments
 * hashed when redacting (arguments of keyed commands may be keys or values). */
static void emit_command(an_analyzer *an, const resp_command *cmd, int32_t client_idx,
                         const an_cmd *info, int32_t slot)
{
    const char *client = an_client_name(an, client_idx);
    if (!an->cfg.redact_keys) {
        an->sink.command(an->sink.ctx, cmd, client, slot);
        return;
    }
    resp_command c = *cmd;
    if (c.req.key0_len) {
        char t[RESP_ARG_PREFIX + 1];
        an_redact(an->cfg.redact_key, c.req.key0, c.req.key0_len, c.req.key0_full_len, t, sizeof t);
        size_t n = strlen(t);
        memcpy(c.req.key0, t, n);
        c.req.key0_len = (uint8_t)n;
        c.req.key0_full_len = (uint32_t)n;
    }
    int keyed = info ? info->nspecs > 0 || info->proc != AN_PROC_NONE : c.req.nkeys > 0;
    for (unsigned i = 0; keyed && i < c.req.nargs && i < RESP_ARG_KEEP; i++) {
        /* a container's subcommand name stays readable */
        if (i == 0 && info && strchr(info->name, '|'))
            continue;
        char t[RESP_ARG_PREFIX + 1];
        an_redact(an->cfg.redact_key, c.req.args[i], c.req.arg_len[i], c.req.arg_full_len[i], t,
                  sizeof t);
        size_t n = strlen(t);
        memcpy(c.req.args[i], t, n);
        c.req.arg_len[i] = (uint8_t)n;
        c.req.arg_full_len[i] = (uint32_t)n;
    }
    an->sink.command(an->sink.ctx, &c, client, slot);
}

/* Argument i (0-based after the name) is exactly word (any case). */
static int arg_is(const resp_request *r, unsigned i, const char *word)
{
    size_t n = strlen(word);
    return i < r->nargs && r->arg_len[i] == n && r->arg_full_len[i] == n &&
           strncasecmp(r->args[i], word, n) == 0;
}

/* Emit the record of a redirect-class reply and count it. */
static void on_redirect_reply(an_analyzer *an, an_cmdctx *x)
{
    const resp_command *cmd = x->cmd;
    resp_err_class e = cmd->reply.err;
    an->st.redirects++;
    an->clients[x->cn->client].pub.redirects++;
    switch (e) {
    case RESP_ERR_MOVED: an->st.moved++; break;
    case RESP_ERR_ASK: an->st.ask++; break;
    case RESP_ERR_TRYAGAIN: an->st.tryagain++; break;
    case RESP_ERR_CROSSSLOT: an->st.crossslot++; break;
    default: an->st.clusterdown++; break;
    }
    an_own_cause cause = AN_CAUSE_UNKNOWN;
    if (e == RESP_ERR_MOVED && x->target != AN_NONE && x->slot >= 0) {
        cause = an_cluster_moved_cause(an, x->slot, x->node, x->target, cmd->reply.ts_us);
        an_cluster_on_told(an, x->slot, x->slot, x->target, 0, cmd->reply.ts_us, 'M');
    }
    if (!an->sink.redirect)
        return;
    an_redirect r;
    memset(&r, 0, sizeof r);
    r.cause = e == RESP_ERR_MOVED ? an_own_cause_name(cause) : "";
    r.ts_us = cmd->reply.ts_us;
    an_copy_str(r.client, sizeof r.client, an_client_name(an, x->cn->client));
    r.conn_id = x->cn->id;
    an_copy_str(r.node, sizeof r.node, x->cn->dst);
    r.kind = e;
    r.slot = x->slot;
    if ((e == RESP_ERR_MOVED || e == RESP_ERR_ASK) && x->target != AN_NONE)
        an_copy_str(r.target, sizeof r.target, an_node_name(an, x->target));
    an_copy_str(r.command, sizeof r.command, cmd->req.name);
    an_copy_str(r.key, sizeof r.key, an_cmd_key(x));
    r.latency_us = cmd->reply.ts_us - cmd->req.ts_us;
    r.req_frame = cmd->req.start_frame;
    r.reply_frame = cmd->reply.end_frame;
    an->sink.redirect(an->sink.ctx, &r);
}

/* The time series' count of a redirect-class reply; slot: the migrating
 * slot it is about (before or after the timeline saw it), or -1. */
static void ser_redirect(an_analyzer *an, const an_cmdctx *x, int32_t slot)
{
    int what;
    switch (x->cmd->reply.err) {
    case RESP_ERR_MOVED: what = AN_SC_MOVED; break;
    case RESP_ERR_ASK: what = AN_SC_ASK; break;
    case RESP_ERR_TRYAGAIN: what = AN_SC_TRYAGAIN; break;
    case RESP_ERR_CROSSSLOT: what = AN_SC_CROSSSLOT; break;
    default: what = AN_SC_CLUSTERDOWN; break;
    }
    an_ser_add(an, x->cmd->reply.ts_us, x->cn->client, x->node, slot, what, -1, 0);
}

/* CLUSTER subcommands: maps teach the node registry; SETSLOT and
 * GETKEYSINSLOT feed the migration timeline. */
static void on_cluster(an_analyzer *an, an_cmdctx *x)
{
    const resp_request *r = &x->cmd->req;
    an_cli *c = &an->clients[x->cn->client];
    if (x->cmd->outcome != RESP_OK)
        return;
    if (arg_is(r, 0, "SLOTS") || arg_is(r, 0, "SHARDS") || arg_is(r, 0, "NODES")) {
        c->pub.cluster_aware = 1;
        if (x->cmd->reply.err != RESP_ERR_NONE)
            return;
        c->map_ts = x->cmd->reply.ts_us;
        char sub[8];
        snprintf(sub, sizeof sub, "%.*s", (int)r->arg_len[0], r->args[0]);
        for (char *p = sub; *p; p++)
            *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        if (an_nodes_learn_map(an, sub, x->node, &x->cmd->reply) == 0)
            an->st.map_replies++;
        else
            an->st.map_errors++;
    } else if (arg_is(r, 0, "SETSLOT")) {
        an_tl_setslot(an, x);
    } else if (arg_is(r, 0, "GETKEYSINSLOT") && r->nargs >= 2) {
        long v = 0;
        int ok = r->arg_len[1] > 0 && r->arg_len[1] <= 5;
        for (unsigned i = 0; ok && i < r->arg_len[1]; i++) {
            if (r->args[1][i] < '0' || r->args[1][i] > '9')
                ok = 0;
            else
                v = v * 10 + (r->args[1][i] - '0');
        }
        x->cn->getkeys_slot = ok && v < AN_SLOTS ? (int32_t)v : -1;
    }
}

/* Remember an ASKING: on its connection (for the next command) and in the
 * ring (for asking_other_connection). */
static void on_asking(an_analyzer *an, an_cmdctx *x)
{
    an_cn *cn = x->cn;
    cn->asking_pending = 1;
    cn->asking_seq = x->cmd->seq;
    cn->asking_ts = x->cmd->req.start_us;
    an_asking_rec *a = &an->asking_ring[an->asking_ring_pos % AN_RING];
    cn->asking_ring = (int32_t)(an->asking_ring_pos % AN_RING);
    an->asking_ring_pos++;
    memset(a, 0, sizeof *a);
    a->host = an->clients[cn->client].host;
    an_copy_str(a->src, sizeof a->src, cn->src);
    a->conn = cn->id;
    a->node = x->node;
    a->ts = x->cmd->req.start_us;
    a->req_frame = x->cmd->req.start_frame;
    an_ser_add(an, x->cmd->outcome == RESP_OK ? x->cmd->reply.ts_us : x->cmd->req.ts_us,
               cn->client, x->node, an_ser_slot(an, x->slot), AN_SC_ASKING, -1, 0);
    a->reply_frame = x->cmd->outcome == RESP_OK ? x->cmd->reply.end_frame : 0;
    a->valid = 1;
}

/* A value from the wire as an an_ident field: printable ASCII but '\\' as is,
 * other bytes as \xNN, "..." when it was longer than what is kept or than
 * fits (a hostile name must not reach a terminal, nor grow a record). */
static void ident_text(char *out, size_t size, const char *p, size_t len, uint32_t full)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, i;
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)p[i];
        int plain = ch > 0x20 && ch < 0x7f && ch != '\\';
        if (o + (plain ? 1 : 4) + 4 > size)
            break;
        if (plain) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    if (i < len || full > len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
}

/* Argument i (0-based after the name) as an an_ident field; 0 when it is
 * not there or lost its bytes in a gap. */
static int ident_arg(const resp_request *r, unsigned i, char *out)
{
    if (i >= r->nargs || r->arg_len[i] == 0)
        return 0;
    ident_text(out, AN_IDENT_MAX, r->args[i], r->arg_len[i], r->arg_full_len[i]);
    return 1;
}

/* Who the client says it is: CLIENT SETINFO LIB-NAME|LIB-VER v, CLIENT
 * SETNAME n, HELLO [protover [AUTH u p] [SETNAME n]] (resp/ keeps no
 * credential: AUTH's user and password are not among the arguments). Taken
 * from the request whatever the reply: a server older than 7.2 rejects
 * SETINFO, but the library has announced itself. With --client-by name the
 * connection then moves to the client of that name. */
static void on_identity(an_analyzer *an, an_cmdctx *x, uint8_t special)
{
    const resp_request *r = &x->cmd->req;
    an_cn *cn = x->cn;
    an_ident id;
    char *field = NULL;
    unsigned at = 0;
    if (special == AN_SP_CLIENT && arg_is(r, 0, "SETINFO")) {
        field = arg_is(r, 1, "LIB-NAME") ? id.lib_name : arg_is(r, 1, "LIB-VER") ? id.lib_ver : NULL;
        at = 2;
    } else if (special == AN_SP_CLIENT && arg_is(r, 0, "SETNAME")) {
        field = id.client_name;
        at = 1;
    } else if (special == AN_SP_HELLO) {
        for (unsigned i = 1; i + 1 < r->nargs && !field; i++)
            if (arg_is(r, i, "SETNAME")) {
                field = id.client_name;
                at = i + 1;
            }
    }
    if (!field || cn->node_link)
        return;
    if (!an->conn_ident &&
        !(an->conn_ident = calloc((size_t)an->cfg.max_conns + 1, sizeof *an->conn_ident)))
        return;
    an_ident *mine = &an->conn_ident[cn - an->conns];
    id = *mine;
    if (!ident_arg(r, at, field))
        return;
    *mine = id;
    cn->has_ident = 1;
    if (an->cfg.client_by == AN_CLIENT_BY_NAME)
        conn_move_client(an, cn, x->cmd->conn, x->cmd->req.start_us, 0);
    ident_merge(&an->clients[cn->client].pub.ident, mine);
}

/* Node-to-node traffic: a replica announcing itself, MIGRATE's restores. */
static int on_node_link_command(an_analyzer *an, an_cmdctx *x, uint8_t special)
{
    const resp_request *r = &x->cmd->req;
    if (special == AN_SP_REPLCONF || special == AN_SP_PSYNC || special == AN_SP_SYNC) {
        mark_node_link(an, x->cn, x->cmd->conn);
        if (special == AN_SP_REPLCONF && arg_is(r, 0, "listening-port") && r->nargs >= 2) {
            long port = 0;
            for (unsigned i = 0; i < r->arg_len[1] && i < 6; i++)
                port = r->args[1][i] >= '0' && r->args[1][i] <= '9'
                           ? port * 10 + (r->args[1][i] - '0') : 1 << 20;
            if (port > 0 && port < 65536 && x->cn->cc)
                an_nodes_learn_replica(an, &x->cn->cc->client.addr, (uint16_t)port, x->node);
        }
        return 1;
    }
    if (special == AN_SP_RESTORE_ASKING) {
        mark_node_link(an, x->cn, x->cmd->conn);
        return 1;
    }
    return x->cn->node_link;
}

/* The entry of node index node, NULL for AN_NONE (or any index that names
 * no node). */
static inline an_nd *node_entry(const an_analyzer *an, int32_t node)
{
    return (uint32_t)node < an->nnodes ? &an->nodes[node] : NULL;
}

/* The slot of a request's first key kept whole, or -1. */
static inline int32_t request_slot(const resp_request *req)
{
    return req->slot >= 0 && req->slot < AN_SLOTS && req->key0_full_len > 0 ? req->slot : -1;
}

/* The direct latency of an answered command, at least 0. */
static inline int64_t quick_us(const resp_command *cmd)
{
    int64_t us = cmd->reply.ts_us - cmd->req.ts_us;
    return us < 0 ? 0 : us;
}

/* Is e a redirect-class reply (MOVED, ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN)? */
static int is_redirect_class(resp_err_class e)
{
    return e == RESP_ERR_MOVED || e == RESP_ERR_ASK || e == RESP_ERR_TRYAGAIN ||
           e == RESP_ERR_CROSSSLOT || e == RESP_ERR_CLUSTERDOWN;
}

/* What quick_command may do with the command base that is special (see
 * AN_QK_*). */
static uint8_t quick_kind_of(const an_cmd *base, uint8_t special)
{
    if (!base || (base->flags & AN_CMD_CONTAINER))
        return AN_QK_NONE;
    if (special == AN_SP_NONE)
        return AN_QK_PLAIN;
    return special == AN_SP_RESTORE_ASKING ? AN_QK_LINK : AN_QK_NONE;
}

/* The table entry of req's command (its subcommand when it has them; NULL
 * when unknown), whether an expected subcommand is known, which special
 * command it is and its AN_QK_* kind (AN_QK_NONE when its name's NUL is not
 * among its first 16 bytes). The last name looked up is remembered as its
 * first 16 bytes (when its NUL is among them): runs of one command are the
 * common case, and two word compares replace the lookup. */
static const an_cmd *command_of(an_analyzer *an, const resp_request *req, int *sub_known,
                                uint8_t *special, uint8_t *kind)
{
    uint64_t w[2];
    memcpy(w, req->name, sizeof w);
    const an_cmd *base;
    if (an->name_cache_ok && w[0] == an->name_cache[0] && w[1] == an->name_cache[1]) {
        base = an->name_cache_cmd;
        *special = an->name_cache_special;
        *kind = an->name_cache_kind;
    } else {
        base = an_cmd_lookup_name(req->name);
        *special = an_cmd_special(base);
        an->name_cache_ok = memchr(req->name, 0, sizeof w) != NULL;
        an->name_cache[0] = w[0];
        an->name_cache[1] = w[1];
        an->name_cache_cmd = base;
        an->name_cache_special = *special;
        *kind = an->name_cache_ok ? quick_kind_of(base, *special) : AN_QK_NONE;
        an->name_cache_kind = *kind;
    }
    *sub_known = 1;
    if (!base || !(base->flags & AN_CMD_CONTAINER))
        return base;
    return an_cmd_resolve(req, NULL, sub_known); /* its subcommand */
}

/* What a replica's answer to a read shows of READONLY on a connection
 * picked up mid-stream, whose READONLY may predate the capture: served, it
 * is on (without it a replica bounces every keyed command to its master);
 * bounced with MOVED to target, the replica's own master, it is off (with
 * it the replica would have served a slot it takes for its master's). The
 * state is known from then on: readonly_missing judges the connection, and
 * a MOVED the replica sends elsewhere is a redirect for moved_ignored, not
 * a READONLY bounce. Called by on_command_general for served reads (they
 * may stop there) and on_command_full with the MOVED target, before the
 * detectors; quick_command leaves such connections to them. */
static void readonly_from_reply(an_analyzer *an, an_cn *cn, const resp_command *cmd,
                                const an_cmd *info, int32_t target)
{
    if (!an_cn_readonly_unknown(cn) || cn->node == AN_NONE || !an->nodes[cn->node].replica ||
        cmd->outcome != RESP_OK || !info || !(info->flags & AN_CMD_READONLY))
        return;
    int32_t master = an->nodes[cn->node].master;
    /* a keyless read (DBSIZE) is served either way */
    if (cmd->reply.err == RESP_ERR_NONE && request_slot(&cmd->req) >= 0) {
        cn->readonly = 1;
        cn->readonly_seen = 1;
    } else if (cmd->reply.err == RESP_ERR_MOVED && master != AN_NONE && target == master) {
        cn->readonly_seen = 1;
    }
}

/* A command that needs more than the fast path: ASKING state, connection
 * modes, node links, cluster administration, redirects, operations waiting
 * for a retry, what clients were told about the slot. */
static __attribute__((noinline)) void on_command_full(an_analyzer *an, const resp_command *cmd,
                                                     an_cn *cn, an_cli *cli, const an_cmd *info,
                                                     uint8_t special, int32_t slot)
{
    const resp_request *req = &cmd->req;
    an_cmdctx x;
    memset(&x, 0, offsetof(an_cmdctx, key));
    x.key[0] = x.reply[0] = 0;
    x.cmd = cmd;
    x.cfg = &an->cfg;
    x.cn = cn;
    x.cli = cli;
    x.node = cn->node;
    x.info = info;
    x.slot = slot;
    x.target = AN_NONE;
    if (cmd->outcome == RESP_OK &&
        (cmd->reply.err == RESP_ERR_MOVED || cmd->reply.err == RESP_ERR_ASK)) {
        x.target = an_node_by_redirect(an, &cmd->reply.redir, x.node);
        if (x.slot < 0 && cmd->reply.redir.slot >= 0 && cmd->reply.redir.slot < AN_SLOTS)
            x.slot = cmd->reply.redir.slot;
        /* a failover this MOVED shows changes the roles the rest reads */
        if (cmd->reply.err == RESP_ERR_MOVED)
            an_nodes_learn_moved(an, x.node, x.target, cmd->reply.redir.slot);
        readonly_from_reply(an, cn, cmd, info, x.target);
    }

    /* ASKING covers exactly the next command on its connection. */
    int64_t asking_ts = cn->asking_ts;
    x.asked = cn->asking_pending && cmd->seq == cn->asking_seq + 1;
    if (special != AN_SP_ASKING)
        cn->asking_pending = 0;

    if (an->sink.command)
        emit_command(an, cmd, cn->client, info, x.slot);

    switch (special) {
    case AN_SP_ASKING:
        on_asking(an, &x);
        return;
    case AN_SP_READONLY:
        cn->readonly = cmd->outcome == RESP_OK && cmd->reply.err == RESP_ERR_NONE;
        cn->readonly_seen = 1;
        cli->reads_replicas |= cn->readonly;
        return;
    case AN_SP_READWRITE:
    case AN_SP_RESET:
        cn->readonly = 0;
        cn->readonly_seen = 1;
        return;
    case AN_SP_CLIENT:
    case AN_SP_HELLO:
        on_identity(an, &x, special);
        cli = x.cli = &an->clients[cn->client]; /* it may have moved */
        break;
    default:
        break;
    }
    if (on_node_link_command(an, &x, special)) {
        an->st.node_link_commands++;
        return;
    }
    if (special == AN_SP_CLUSTER) {
        on_cluster(an, &x);
        return;
    }
    if (cmd->outcome != RESP_OK) {
        if (cmd->outcome == RESP_UNANSWERED) {
            an->st.unanswered++;
            an_ops_on_unanswered(an, cli, req, x.slot);
        }
        return;
    }
    if (special == AN_SP_MIGRATE) {
        an_tl_migrate(an, &x); /* administration: not a client operation */
        return;
    }
    if (x.slot >= 0 && (an->slot_busy[x.slot] & AN_SLOT_OWN))
        an_cv_on_command(an, &x);
    if (is_redirect_class(cmd->reply.err)) {
        int32_t mig = an_ser_slot(an, x.slot);
        on_redirect_reply(an, &x);
        an_tl_redirect(an, &x);
        ser_redirect(an, &x, mig >= 0 ? mig : an_ser_slot(an, x.slot));
    } else {
        an_tl_served(an, &x);
    }
    if (x.slot >= 0 && req->name[0] && !req->slot_unknown) { /* a lost key: in no operation */
        an_ops_on_command(an, &x);
    } else if (x.asked) {
        an_ops_asking_spent(an, &x, asking_ts);
    }
}

/* Every command that quick_command does not take: the general path. Its
 * own fast path is the common command: answered without a redirect-class
 * error, not special (ASKING, READONLY, CLUSTER, node links...), no ASKING
 * pending on its connection, and, for a keyed one, no operation waiting for a
 * retry and no client memory of a MOVED/ASK for its slot. Such a command can
 * be no retry and no occurrence of any finding: it updates the counters, the
 * client's view of its slot and the direct latency, and nothing else (the
 * full path would do exactly that for it). */
static __attribute__((noinline)) void on_command_general(an_analyzer *an,
                                                         const resp_command *cmd)
{
    resp_command_args(cmd); /* quick_command reads no prefix, the rest may */
    const resp_request *req = &cmd->req;
    int64_t ts = cmd->outcome == RESP_OK ? cmd->reply.ts_us : req->ts_us;
    if (ts > an->now_us)
        an->now_us = ts;
    an->st.commands++;
    if (!cmd->conn) {
        an_ser_add(an, ts, AN_NONE, AN_NONE, -1, AN_SC_COMMANDS, -1, 0);
        return;
    }
    if ((an->st.commands & (AN_LRU_EPOCH - 1)) == 0)
        an->lru_epoch++;

    int32_t ci = conn_by_word(an, cmd->conn_word);
    if (ci == AN_NONE)
        ci = conn_find(an, cmd->conn, req->start_us);
    an_cn *cn = conn_touch(an, ci, cmd->conn, req->start_us);
    int64_t conn_before_us = cn->commands ? cn->last_us : 0;
    cn->commands++;
    if (ts > cn->last_us)
        cn->last_us = ts;
    an_cli *cli = &an->clients[cn->client];
    cli->pub.commands++;
    if (ts > cli->pub.last_us)
        cli->pub.last_us = ts;
    if (req->start_us > cli->last_start_us)
        cli->last_start_us = req->start_us;
    if (cmd->requests_lost)
        an_ops_requests_lost(an, cli, cn->node, conn_before_us, req->start_us);
    if (req->slot_unknown) { /* which operation it is, only its key would say */
        an->st.keys_lost++;
        an_ops_requests_lost(an, cli, cn->node, req->start_us, req->start_us);
    }
    if (cn->node != AN_NONE)
        an->nodes[cn->node].pub.commands++;

    int sub_known = 1;
    uint8_t special = AN_SP_NONE, kind = AN_QK_NONE;
    const an_cmd *info = command_of(an, req, &sub_known, &special, &kind);
    readonly_from_reply(an, cn, cmd, info, AN_NONE);
    if (cn->node != AN_NONE && an->nodes[cn->node].replica && !cn->node_link && info &&
        (info->flags & AN_CMD_READONLY))
        cli->reads_replicas = 1; /* quick_command leaves such reads here until READONLY is known */
    /* for quick_command: the next command on this connection is likely the same */
    memcpy(cn->qname, req->name, sizeof cn->qname);
    cn->qkind = kind;
    if (req->name[0] && (!info || !sub_known))
        an->st.unknown_commands++;
    if (req->nkeys > 0)
        an->st.keyed_commands++;
    int32_t slot = request_slot(req);
    /* node links' commands (MIGRATE, RESTORE-ASKING) are the migration, not
     * its slots' traffic: never in the slots scope, as on quick_link_command;
     * without a slots scope, the count is an_ser_quick_try's when it can */
    int32_t ser_slot = cn->node_link ? -1 : an_ser_slot(an, slot);
    if (ser_slot >= 0 || !an_ser_quick_try(an, ts, cli, node_entry(an, cn->node), -1, 0))
        an_ser_add(an, ts, cn->client, cn->node, ser_slot, AN_SC_COMMANDS, -1, 0);

    if (special == AN_SP_NONE && !cn->asking_pending && !cn->node_link) {
        /* A plain command left without its reply (lost in a gap, or none by
         * design): all on_command_full would do is emit and count it. */
        if (cmd->outcome != RESP_OK) {
            if (an->sink.command)
                emit_command(an, cmd, cn->client, info, slot);
            if (cmd->outcome == RESP_UNANSWERED) {
                an->st.unanswered++;
                an_ops_on_unanswered(an, cli, req, slot);
            }
            return;
        }
        if (!is_redirect_class(cmd->reply.err) &&
            (slot < 0 ||
             (!cmd->in_multi && !(an->slot_busy[slot] &
                                  (AN_SLOT_OPS | AN_SLOT_MEMOS | AN_SLOT_MIG | AN_SLOT_OWN))))) {
            if (an->sink.command)
                emit_command(an, cmd, cn->client, info, slot);
            if (slot >= 0 && req->name[0]) {
                an_view_note(an, cli, slot, cn->node);
                an_lat_direct(an, cli, cn->node, slot, cmd->reply.ts_us - req->ts_us);
                an_ser_add(an, ts, cn->client, cn->node, -1, -1, 0,
                           cmd->reply.ts_us - req->ts_us);
            }
            return;
        }
    }
    on_command_full(an, cmd, cn, cli, info, special, slot);
}

enum {
    QUICK_TAKEN = 1,
    QUICK_CONN_RELINK = 2,
    QUICK_CLI_RELINK = 4,
    QUICK_LINK = 8,
    QUICK_SER_SLOW = 16,
    QUICK_OPS = 32 /* quick_unpaired: an_ops_on_unanswered to call */
};

/* The quick paths' counting of a command taken at ts (on connection entry
 * i, whose client is valid, and node entry nd: node_entry of its node):
 * what on_command_general counts for any command, then which LRU moves are
 * due (conn_touch's rule: none of what it reads is written here but the
 * epoch), as QUICK_* bits. */
static inline __attribute__((always_inline)) unsigned
quick_count(an_analyzer *an, const resp_command *cmd, int64_t ts, int32_t i, an_cn *cn,
            an_cli *cli, an_nd *nd)
{
    if (ts > an->now_us)
        an->now_us = ts;
    if ((++an->st.commands & (AN_LRU_EPOCH - 1)) == 0)
        an->lru_epoch++;
    cn->commands++;
    if (ts > cn->last_us)
        cn->last_us = ts;
    cli->pub.commands++;
    if (ts > cli->pub.last_us)
        cli->pub.last_us = ts;
    if (cmd->req.start_us > cli->last_start_us)
        cli->last_start_us = cmd->req.start_us;
    if (nd)
        nd->pub.commands++;
    if (cmd->req.nkeys > 0)
        an->st.keyed_commands++;
    unsigned taken = QUICK_TAKEN;
    if (conn_relink_due(an, i, cn))
        taken |= QUICK_CONN_RELINK;
    if (cli_relink_due(an, cn->client, cli))
        taken |= QUICK_CLI_RELINK;
    return taken;
}

/* The most common command of all, when everything on_command_general would
 * look at is already in its usual state: answered without a redirect-class
 * error, its connection found by its word with no ASKING pending, its client
 * valid and its node registered, its name the one the general path last saw
 * on the connection (a known, plain command: an_cn.qname), no command sink,
 * and for a keyed one its slot quiet (no waiting operation, memory or slot
 * latency), its view already noting the node and both latency histograms
 * allocated. All of that is checked before anything is written, so that 0
 * (not taken) leaves the general path the whole command; taken (QUICK_* bits),
 * it writes exactly what the general path would have written, but the LRU
 * moves and the time series' general case (an_ser_quick_slow: a new bucket, a
 * scope's first command in one) that on_command then makes (quick_after). A
 * node link's command goes to quick_link_command (QUICK_LINK). Nothing here
 * calls a function: the other paths are tail calls from on_command, which
 * saves no registers and copies nothing to its stack. Most commands of a
 * capture take this path. */
static inline unsigned quick_command(an_analyzer *an, const resp_command *cmd)
{
    const resp_request *req = &cmd->req;
    if (cmd->outcome != RESP_OK || !cmd->conn || cmd->requests_lost || req->slot_unknown ||
        is_redirect_class(cmd->reply.err) ||
        an->sink.command)
        return 0;
    /* the connection: found by its word; its client valid */
    uint32_t i = (uint32_t)cmd->conn_word - 1;
    if (i >= an->conn_hwm)
        return 0;
    an_cn *cn = &an->conns[i];
    if (cn->gen != (uint32_t)(cmd->conn_word >> 32)) /* an unused entry's gen is 0, */
        return 0;                                   /* a word's never (conn_word_of) */
    an_cli *cli = &an->clients[cn->client];
    if (!cli->used || cli->gen != cn->client_gen)
        return 0;
    /* the command: the connection's last one again */
    uint64_t w[2];
    memcpy(w, req->name, sizeof w);
    if (w[0] != cn->qname[0] || w[1] != cn->qname[1])
        return 0;
    if (cn->node_link || cn->asking_pending) /* see quick_link_command */
        return cn->node_link && !cn->asking_pending && cn->qkind != AN_QK_NONE ? QUICK_LINK : 0;
    if (cn->qkind != AN_QK_PLAIN)
        return 0;
    /* its node, registered (a connection to an unknown server is rare: the
     * general path), so that nothing below tests for none */
    int32_t node = cn->node;
    an_nd *nd = node_entry(an, node);
    if (!nd || (nd->replica && an_cn_readonly_unknown(cn))) /* readonly_from_reply */
        return 0;
    /* its slot, view and latency scopes */
    int32_t slot = request_slot(req);
    an_lat *node_lat = NULL;
    an_hist *cli_hist = NULL, *node_hist = NULL;
    if (slot >= 0) {
        if (cmd->in_multi ||
            (an->slot_busy[slot] & (AN_SLOT_OPS | AN_SLOT_MEMOS | AN_SLOT_LAT | AN_SLOT_MIG |
                                  AN_SLOT_OWN)))
            return 0;
        const an_vblock *b = cli->view.blocks;
        if (!b) /* node < nnodes <= 30000 (an_new): node + 1 fits the view */
            return 0;
        b += (uint32_t)slot / AN_VIEW_BLOCK_SLOTS;
        uint32_t at = (uint32_t)slot % AN_VIEW_BLOCK_SLOTS;
        /* a block whose slots name several nodes (after a reshard or a
         * failover) keeps them in a chunk (views.c) */
        uint32_t have = b->chunk ? cli->view.pool[b->chunk - 1][at] : b->node;
        if (have != (uint32_t)node + 1 || !((b->known >> at) & 1u))
            return 0;
        node_lat = &nd->lat[0];
        cli_hist = cli->lat[0].h;
        node_hist = node_lat->h;
        if (!cli_hist || !node_hist)
            return 0;
    }

    /* taken: what on_command_general writes for such a command (the
     * latency first, so that its scopes are done with before the rest; the
     * series' general case left to quick_after) */
    int ser_done;
    if (slot >= 0) {
        int64_t us = quick_us(cmd);
        an->st.operations++;
        unsigned bucket = an_hist_bucket(us);
        an_lat_add_to(&cli->lat[0], cli_hist, us, bucket);
        an_lat_add_to(node_lat, node_hist, us, bucket);
        ser_done = an_ser_quick_try(an, cmd->reply.ts_us, cli, nd, us, bucket);
    } else {
        ser_done = an_ser_quick_try(an, cmd->reply.ts_us, cli, nd, -1, 0);
    }
    return quick_count(an, cmd, cmd->reply.ts_us, (int32_t)i, cn, cli, nd) |
           (ser_done ? 0 : QUICK_SER_SLOW);
}

/* The LRU moves quick_command found due for the connection of cmd (and its
 * client), to the current epoch. Apart, so that quick_command, which needs
 * them for ~6% of its commands, keeps few values in registers. */
static __attribute__((noinline)) void quick_relink(an_analyzer *an, const resp_command *cmd,
                                                   unsigned what)
{
    int32_t i = (int32_t)((uint32_t)cmd->conn_word - 1);
    if (what & QUICK_CONN_RELINK)
        conn_relink(an, i);
    if (what & QUICK_CLI_RELINK)
        cli_relink(an, an->conns[i].client);
}

/* A command quick_command found to be on a node link, with nothing pending
 * and its connection's last command name again (a plain one, or
 * RESTORE-ASKING): on_command_full only counts it. Apart from quick_command,
 * which it would slow down (MIGRATE's RESTORE-ASKING, frequent on the node
 * links of a reshard). */
static __attribute__((noinline)) void quick_link_command(an_analyzer *an,
                                                         const resp_command *cmd)
{
    int32_t i = (int32_t)((uint32_t)cmd->conn_word - 1);
    an_cn *cn = &an->conns[i];
    an_nd *nd = node_entry(an, cn->node);
    unsigned taken = quick_count(an, cmd, cmd->reply.ts_us, i, cn, &an->clients[cn->client], nd);
    an_ser_quick(an, cmd->reply.ts_us, cn->client, &an->clients[cn->client], cn->node, nd, -1, 0);
    an->st.node_link_commands++;
    if (taken != QUICK_TAKEN)
        quick_relink(an, cmd, taken);
}

/* The series' general case for a command quick_command took (QUICK_SER_SLOW),
 * then the LRU moves it found due. Apart, so that quick_command calls
 * nothing: a leaf keeps its values in the registers a call would clobber,
 * and saves none. */
static __attribute__((noinline)) void quick_after(an_analyzer *an, const resp_command *cmd,
                                                  unsigned what)
{
    if (what & QUICK_SER_SLOW) {
        const an_cn *cn = &an->conns[(uint32_t)cmd->conn_word - 1];
        an_ser_quick_slow(an, cmd->reply.ts_us, cn->client, cn->node,
                          request_slot(&cmd->req) >= 0 ? quick_us(cmd) : -1);
    }
    if (what & (QUICK_CONN_RELINK | QUICK_CLI_RELINK))
        quick_relink(an, cmd, what);
}

/* A command without its reply (lost in a gap, or none by design: outcome
 * RESP_UNANSWERED or RESP_NO_REPLY) on a connection in its usual state: found
 * by its word, its client valid and its node registered, not a node link, no
 * ASKING pending, its name the connection's last one (a plain command), no
 * command sink and no requests lost before it. All on_command_general does
 * with such a command is count it (time series included) and, unanswered,
 * tell ops.c: the same here, without its lookups. Returns 0, nothing written,
 * when the command is not such; else QUICK_TAKEN, with the bits of what is
 * left to unpaired_after (LRU moves, the series' general case, ops.c): like
 * quick_command, it calls nothing. */
static inline unsigned quick_unpaired(an_analyzer *an, const resp_command *cmd)
{
    const resp_request *req = &cmd->req;
    if (!cmd->conn || cmd->requests_lost || req->slot_unknown || an->sink.command)
        return 0;
    uint32_t i = (uint32_t)cmd->conn_word - 1;
    if (i >= an->conn_hwm)
        return 0;
    an_cn *cn = &an->conns[i];
    if (cn->gen != (uint32_t)(cmd->conn_word >> 32)) /* as in quick_command */
        return 0;
    an_cli *cli = &an->clients[cn->client];
    if (!cli->used || cli->gen != cn->client_gen)
        return 0;
    uint64_t w[2];
    memcpy(w, req->name, sizeof w);
    if (w[0] != cn->qname[0] || w[1] != cn->qname[1] || cn->qkind != AN_QK_PLAIN ||
        cn->node_link || cn->asking_pending)
        return 0;

    an_nd *nd = node_entry(an, cn->node);
    if (!nd) /* as in quick_command */
        return 0;
    int64_t ts = req->ts_us;
    unsigned taken = quick_count(an, cmd, ts, (int32_t)i, cn, cli, nd);
    int32_t slot = request_slot(req);
    uint8_t busy = slot >= 0 ? an->slot_busy[slot] : 0;
    if ((busy & AN_SLOT_MIG) || !an_ser_quick_try(an, ts, cli, nd, -1, 0))
        taken |= QUICK_SER_SLOW;
    if (cmd->outcome == RESP_UNANSWERED) {
        an->st.unanswered++;
        if (busy & AN_SLOT_OPS) /* else no operation of the slot to tell */
            taken |= QUICK_OPS;
    }
    return taken;
}

/* What quick_unpaired left (see there), in the general path's order. */
static __attribute__((noinline)) void unpaired_after(an_analyzer *an, const resp_command *cmd,
                                                     unsigned what)
{
    int32_t i = (int32_t)((uint32_t)cmd->conn_word - 1);
    const an_cn *cn = &an->conns[i];
    int32_t slot = request_slot(&cmd->req);
    if (what & QUICK_CONN_RELINK)
        conn_relink(an, i);
    if (what & QUICK_CLI_RELINK)
        cli_relink(an, cn->client);
    if (what & QUICK_SER_SLOW)
        an_ser_add(an, cmd->req.ts_us, cn->client, cn->node, an_ser_slot(an, slot),
                   AN_SC_COMMANDS, -1, 0);
    if (what & QUICK_OPS) {
        resp_command_args(cmd); /* ops.c reads the key prefix */
        an_ops_on_unanswered(an, &an->clients[cn->client], &cmd->req, slot);
    }
}

/* A command without its reply: quick_unpaired, else the general path. */
static __attribute__((noinline)) void on_command_unpaired(an_analyzer *an,
                                                          const resp_command *cmd)
{
    unsigned q = quick_unpaired(an, cmd);
    if (q == QUICK_TAKEN)
        return;
    if (!q)
        on_command_general(an, cmd);
    else
        unpaired_after(an, cmd, q);
}

/* The resp_sink command callback: everything starts here. */
static void on_command(void *ctx, const resp_command *cmd)
{
    an_analyzer *an = ctx;
    unsigned quick = quick_command(an, cmd);
    if (quick == QUICK_TAKEN)
        return;
    if (!quick && cmd->outcome != RESP_OK)
        on_command_unpaired(an, cmd);
    else if (!quick)
        on_command_general(an, cmd);
    else if (quick == QUICK_LINK)
        quick_link_command(an, cmd);
    else
        quick_after(an, cmd, quick);
}

static void on_conn_open(void *ctx, const cap_conn *conn)
{
    an_analyzer *an = ctx;
    if (conn->first_us > an->now_us)
        an->now_us = conn->first_us;
    conn_get(an, conn, conn->first_us);
}

/* resp_sink.conn_word: where the connection's entry is (see conn_word_of);
 * on_conn_open has just made it. */
static uint64_t on_conn_word(void *ctx, const cap_conn *conn)
{
    an_analyzer *an = ctx;
    return conn_word_of(an, conn_find(an, conn, conn->first_us));
}

/* A replication link resp recognised without its PSYNC: a node-to-node
 * link (never judged), and what it teaches the registry. Found reversed,
 * its master is the capture's client side, and the "node" made for its
 * server side was the replica's source endpoint. */
static void on_midstream_link(an_analyzer *an, an_cn *cn, const resp_conn_stats *st)
{
    const cap_conn *cc = cn->cc;
    mark_node_link(an, cn, cn->cc);
    if (st->replication_reversed) {
        an_nodes_phantom(an, cn->node);
        an_nodes_learn_link(an, an_node_by_endpoint(an, &cc->client), &cc->server.addr);
    } else {
        an_nodes_learn_link(an, cn->node, &cc->client.addr);
    }
}

/* Connection cn carries the cluster bus: it is no client's connection
 * (its client keeps no record for it) and it makes no commands. */
static void mark_bus(an_analyzer *an, an_cn *cn)
{
    if (cn->bus)
        return;
    cn->bus = 1;
    an->st.bus_connections++;
    an_nodes_phantom(an, cn->node); /* a bus port is not a node's address */
    an_cli *c = &an->clients[cn->client];
    if (!c->used || c->gen != cn->client_gen)
        return;
    uint64_t *kind = cn->node_link ? &c->node_conns : &c->client_conns;
    c->pub.connections -= c->pub.connections ? 1 : 0;
    *kind -= *kind ? 1 : 0;
}

/* resp_sink.bus_message: a cluster-bus message, to cluster.c. */
static void on_bus_message(void *ctx, const cap_conn *conn, int dir, const bus_msg *m,
                           int64_t ts_us, uint64_t frame)
{
    an_analyzer *an = ctx;
    if (ts_us > an->now_us)
        an->now_us = ts_us;
    int32_t i = conn_find(an, conn, ts_us);
    an_cn *cn = &an->conns[i];
    mark_bus(an, cn);
    if (conn_relink_due(an, i, cn))
        conn_relink(an, i);
    cn->last_us = ts_us;
    an_cluster_on_bus(an, conn, dir, m, ts_us, frame);
}

static void on_conn_close(void *ctx, const cap_conn *conn, const resp_conn_stats *st)
{
    an_analyzer *an = ctx;
    uint64_t id = conn->id;
    int32_t i = an_map_find(&an->conn_map, an_conn_hash(id), an_conn_eq, an, &id);
    if (i == AN_NONE)
        return;
    an->conns[i].cc = conn;
    if (st && st->cluster_bus) {
        mark_bus(an, &an->conns[i]);
        an_cluster_conn_close(an, id);
    }
    if (st && st->replication_midstream)
        on_midstream_link(an, &an->conns[i], st);
    conn_emit(an, &an->conns[i], st);
    conn_drop(an, i);
}

resp_sink an_resp_sink(an_analyzer *an)
{
    resp_sink s;
    memset(&s, 0, sizeof s);
    s.ctx = an;
    s.conn_open = on_conn_open;
    s.command = on_command;
    s.conn_close = on_conn_close;
    s.conn_word = on_conn_word;
    s.bus_message = on_bus_message;
    s.args_later = 1; /* on_command: resp_command_args but on quick_command's path */
    return s;
}

/* ---------------------------------------------------------------- flush/finish */

void an_flush(an_analyzer *an, int64_t now_us)
{
    if (now_us > an->now_us)
        an->now_us = now_us;
    an_ops_expire(an, an->now_us, 0);
    an_tl_check(an, an->now_us, 0);
    an_cv_check(an, an->now_us, 0);
    an_ser_flush(an, an->now_us);
    an_findings_emit(an, 0);
}

void an_finish(an_analyzer *an, int64_t end_us)
{
    if (end_us > an->now_us)
        an->now_us = end_us;
    an_ops_expire(an, an->now_us, 1);
    an_tl_check(an, an->now_us, 1);
    an_cluster_finish(an);
    an_ser_finish(an);
    an_nodes_emit(an);
    for (int32_t i = an->cli_lru_head; i != AN_NONE; i = an->clients[i].lnext)
        client_emit(an, &an->clients[i]);
    /* connections still open (no CLOSE came): their records, without resp stats */
    for (int32_t i = an->conn_lru_head; i != AN_NONE; i = an->conns[i].lnext) {
        an->conns[i].cc = NULL; /* the capture layer may have freed it */
        conn_emit(an, &an->conns[i], NULL);
    }
    while (an->conn_lru_head != AN_NONE)
        conn_drop(an, an->conn_lru_head);
    an_tl_emit(an);
    an_cv_check(an, an->now_us, 1);
    for (int s = 0; s < AN_SLOTS; s++) {
        if (!an->slot_lat[s])
            continue;
        char key[16];
        snprintf(key, sizeof key, "%d", s);
        an_lat_emit(an, AN_SCOPE_SLOT, key, an->slot_lat[s]);
    }
    for (uint32_t i = 0; i < an->nnodes; i++)
        an_lat_emit(an, AN_SCOPE_NODE, an_node_name(an, (int32_t)i), an->nodes[i].lat);
    an_lat_sum_all(an);
    an_lat_emit(an, AN_SCOPE_ALL, "all", an->all_lat);
    an_findings_emit(an, 0);
}

const an_stats *an_get_stats(const an_analyzer *an)
{
    return &an->st;
}
