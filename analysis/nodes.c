/*
 * nodes.c - the node registry: who the cluster's nodes are, under which
 * addresses, with which ids, roles and slots.
 *
 * Learned from the wire:
 *   CLUSTER SLOTS   [[start, end, [ip, port, id, {hostname, ip}], replicas...]...]
 *                   (metadata is a flat array in RESP2, a map in RESP3; the
 *                   first field is the preferred endpoint: ip, hostname, "?"
 *                   unknown, or "" meaning "the node you are talking to")
 *   CLUSTER SHARDS  [{slots: [s0, e0, ...], nodes: [{id, port, ip, endpoint,
 *                   hostname, role, ...}]}...] (Redis 7)
 *   CLUSTER NODES   "<id> <ip:port@cport[,hostname]> <flags> <master> <ping>
 *                   <pong> <epoch> <link> <slot ranges...>" per line; the
 *                   "myself" line ties the answering endpoint to its announced
 *                   address
 *   MOVED / ASK     host:port targets
 *   REPLCONF listening-port from a replica connecting to its master
 * (https://redis.io/commands/cluster-slots/, cluster-shards/, cluster-nodes/)
 *
 * A node is known by its observed endpoint (seen in the capture) and by the
 * addresses the cluster announces; user overrides (cfg.node_map) map announced
 * to observed for NAT, containers and hostnames. One hash map holds every name
 * of every node ("id:" + node id for ids).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

/* Does node val answer to name key? */
static int node_eq(const void *ctx, int32_t val, const void *key)
{
    const an_analyzer *an = ctx;
    const an_nd *n = &an->nodes[val];
    const char *k = key;
    if (strncmp(k, "id:", 3) == 0)
        return n->pub.node_id[0] && strcmp(n->pub.node_id, k + 3) == 0;
    return strcmp(n->pub.observed, k) == 0 || strcmp(n->pub.announced, k) == 0 ||
           strcmp(n->hostname_ep, k) == 0;
}

static int32_t node_find(an_analyzer *an, const char *name)
{
    if (!name[0])
        return AN_NONE;
    return an_map_find(&an->node_map, an_hash_str(name, 2), node_eq, an, name);
}

/* The port of an "host:port" text, or 0. */
static long name_port(const char *t)
{
    const char *c = strrchr(t, ':');
    return c ? strtol(c + 1, NULL, 10) : 0;
}

/* Add a name for node i (no-op when it already answers to it); its port
 * goes into node_ports (an_node_covered). */
static void node_add_name(an_analyzer *an, int32_t i, const char *name)
{
    if (!name[0] || node_find(an, name) == i)
        return;
    long port = strncmp(name, "id:", 3) != 0 ? name_port(name) : 0;
    if (port > 0 && port < 65536)
        an->node_ports[port / 64] |= 1ull << (port % 64);
    an_map_put(&an->node_map, an_hash_str(name, 2), i);
    an->reg_version++;
}

/* Write a node's observed / announced / hostname endpoint (callers write only
 * empty fields: always a change of the registry). */
static void set_name_field(an_analyzer *an, char *field, size_t size, const char *text)
{
    an_copy_str(field, size, text);
    an->reg_version++;
}

static int32_t node_new(an_analyzer *an)
{
    an->reg_version++; /* a new node, or a counted drop */
    if (an->nnodes >= an->cfg.max_nodes) {
        an->st.dropped_nodes++;
        return AN_NONE;
    }
    int32_t i = (int32_t)an->nnodes++;
    an_nd *n = &an->nodes[i];
    memset(n, 0, sizeof *n);
    n->master = AN_NONE;
    n->promoted_from = AN_NONE;
    n->migrating_slot = -1;
    return i;
}

/* The user's override for an announced address, or NULL. */
static const char *override_of(const an_analyzer *an, const char *announced)
{
    for (size_t i = 0; i < an->cfg.n_node_map && i < 64; i++)
        if (strcmp(an->cfg.node_map[i].announced, announced) == 0)
            return an->cfg.node_map[i].observed;
    return NULL;
}

/* The node observed at endpoint ep (a connection's server side), registered
 * when new. */
int32_t an_node_by_endpoint(an_analyzer *an, const cap_endpoint *ep)
{
    char text[AN_NAME_MAX];
    cap_endpoint_format(ep, text, sizeof text);
    return an_node_by_endpoint_text(an, text);
}

void an_nodes_connected(an_analyzer *an, int32_t i, uint16_t port)
{
    if (i == AN_NONE)
        return;
    an_nd *n = &an->nodes[i];
    for (uint8_t k = 0; k < n->nconn_ports && k < AN_COVER_PORTS; k++)
        if (n->conn_ports[k] == port)
            return;
    if (n->nconn_ports < AN_COVER_PORTS)
        n->conn_ports[n->nconn_ports] = port;
    if (n->nconn_ports <= AN_COVER_PORTS) {
        n->nconn_ports++;
        an->cover_version++;
    }
}

/* Does the capture hold a connection to node i that is not there only by
 * its client port? */
static int node_reached(const an_analyzer *an, const an_nd *n)
{
    if (n->nconn_ports > AN_COVER_PORTS) /* more connections than chance makes */
        return 1;
    for (uint8_t k = 0; k < n->nconn_ports; k++) {
        uint16_t p = n->conn_ports[k];
        if (!(an->node_ports[p / 64] >> (p % 64) & 1u))
            return 1;
    }
    return 0;
}

int an_node_covered(an_analyzer *an, int32_t i, int reads)
{
    if (i == AN_NONE || (uint32_t)i >= an->nnodes)
        return 0;
    an_nd *n = &an->nodes[i];
    if (!node_reached(an, n))
        return 0;
    if (!reads)
        return 1;
    /* its replicas: a scan of the registry, kept until the registry or a
     * node's connections change (a judgement at a time, not per command) */
    uint64_t stamp = an->reg_version + an->cover_version + 1;
    if (n->cover_stamp != stamp) {
        int all = 1;
        for (uint32_t k = 0; all && k < an->nnodes; k++)
            if (an->nodes[k].master == i && an->nodes[k].replica && !an->nodes[k].phantom)
                all = node_reached(an, &an->nodes[k]);
        n->covered = (uint8_t)all;
        n->cover_stamp = stamp;
    }
    return n->covered;
}

/* an_node_by_endpoint with the endpoint's text already made. */
int32_t an_node_by_endpoint_text(an_analyzer *an, const char *text)
{
    int32_t i = node_find(an, text);
    if (i == AN_NONE) {
        i = node_new(an);
        if (i == AN_NONE)
            return AN_NONE;
        node_add_name(an, i, text);
    }
    an_nd *n = &an->nodes[i];
    if (!n->pub.observed[0]) {
        set_name_field(an, n->pub.observed, sizeof n->pub.observed, text);
        node_add_name(an, i, text);
    }
    return i;
}

int32_t an_node_by_announced(an_analyzer *an, const char *text, int create)
{
    if (!text[0])
        return AN_NONE;
    const char *obs = override_of(an, text);
    int32_t i = obs ? node_find(an, obs) : AN_NONE;
    if (i == AN_NONE)
        i = node_find(an, text);
    if (i == AN_NONE) {
        if (!create)
            return AN_NONE;
        i = node_new(an);
        if (i == AN_NONE)
            return AN_NONE;
        if (obs) {
            set_name_field(an, an->nodes[i].pub.observed, sizeof an->nodes[i].pub.observed, obs);
            node_add_name(an, i, obs);
        }
    }
    an_nd *n = &an->nodes[i];
    if (!n->pub.announced[0] && strcmp(n->hostname_ep, text) != 0) {
        set_name_field(an, n->pub.announced, sizeof n->pub.announced, text);
        node_add_name(an, i, text);
    }
    return i;
}

int32_t an_node_by_id(an_analyzer *an, const char *id, size_t len)
{
    char key[64];
    if (len == 0 || len > 47)
        return AN_NONE;
    snprintf(key, sizeof key, "id:%.*s", (int)len, id);
    return node_find(an, key);
}

/* "host:port", bracketing IPv6 hosts. */
static void endpoint_text(char *out, size_t n, const char *host, size_t hlen, long port)
{
    /* what snprintf "[%.*s]:%ld" / "%.*s:%ld" writes, without the format
     * machinery (once per MOVED/ASK reply): built whole, then cut to n
     * (every caller's n is AN_NAME_MAX: host bytes past it never show) */
    char t[AN_NAME_MAX + 32], digits[24];
    size_t len = 0, nd = 0;
    hlen = strnlen(host, hlen);
    int v6 = memchr(host, ':', hlen) != NULL;
    size_t copy = hlen < AN_NAME_MAX ? hlen : AN_NAME_MAX; /* more never fits in n */
    if (v6)
        t[len++] = '[';
    memcpy(t + len, host, copy);
    len += copy;
    if (v6)
        t[len++] = ']';
    t[len++] = ':';
    unsigned long u = port < 0 ? 0UL - (unsigned long)port : (unsigned long)port;
    do
        digits[nd++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (port < 0)
        t[len++] = '-';
    while (nd > 0)
        t[len++] = digits[--nd];
    t[len] = 0;
    an_copy_str(out, n, t);
}

/* The host part of a node's observed (else announced) endpoint. */
static size_t node_host(const an_analyzer *an, int32_t node, const char **host)
{
    const char *t = an_node_name(an, node);
    const char *colon = strrchr(t, ':');
    *host = t;
    if (!colon)
        return 0;
    if (t[0] == '[' && colon > t + 1 && colon[-1] == ']') {
        *host = t + 1;
        return (size_t)(colon - t - 2);
    }
    return (size_t)(colon - t);
}

int32_t an_node_by_redirect(an_analyzer *an, const resp_redirect *r, int32_t answering)
{
    char text[AN_NAME_MAX];
    if (r->slot < 0 || r->port == 0)
        return AN_NONE;
    const char *host = r->host;
    size_t hlen = strnlen(r->host, sizeof r->host);
    if (hlen == 0) {
        /* Redis 7: an empty host means "the node that answered" (unknown
         * endpoint); keep the port, take the host from the answering node */
        hlen = node_host(an, answering, &host);
        if (hlen == 0)
            return AN_NONE;
    }
    endpoint_text(text, sizeof text, host, hlen, r->port);
    return an_node_by_announced(an, text, 1);
}

/* Set a node's id (and its "id:" name). */
static void node_set_id(an_analyzer *an, int32_t i, const char *id, size_t len)
{
    if (i == AN_NONE || len == 0 || len > 47)
        return;
    an_nd *n = &an->nodes[i];
    if (strlen(n->pub.node_id) == len && memcmp(n->pub.node_id, id, len) == 0)
        return;
    snprintf(n->pub.node_id, sizeof n->pub.node_id, "%.*s", (int)len, id);
    an->reg_version++;
    char key[64];
    snprintf(key, sizeof key, "id:%s", n->pub.node_id);
    node_add_name(an, i, key);
}

static void node_set_role(an_analyzer *an, int32_t i, const char *role, int32_t master)
{
    if (i == AN_NONE)
        return;
    if (strcmp(an->nodes[i].pub.role, role) == 0 && an->nodes[i].master == master)
        return;
    an_copy_str(an->nodes[i].pub.role, sizeof an->nodes[i].pub.role, role);
    an->nodes[i].replica = strcmp(role, "replica") == 0;
    an->nodes[i].master = master;
    if (an->nodes[i].replica)
        an->nodes[i].promoted_from = AN_NONE;
    an->reg_version++;
}

void an_node_learn_id(an_analyzer *an, int32_t i, const char *id)
{
    node_set_id(an, i, id, strlen(id));
}

void an_node_learn_role(an_analyzer *an, int32_t i, const char *role, int32_t master)
{
    node_set_role(an, i, role, master);
}

/* A master that answers MOVED to its own replica, for a slot the latest map
 * gives it, no longer owns the slot: its replica was promoted (a failover),
 * and a master whose slots were taken becomes a replica of the new owner
 * (Redis Cluster specification, "Replica election and promotion"). Without
 * a map reply since the failover, the reads it bounces are then known to be
 * a replica's (readonly_missing) from its first MOVED on. A resharding
 * cannot do this: a replica owns no slot, so the target is a master only
 * since a promotion. */
void an_nodes_learn_moved(an_analyzer *an, int32_t node, int32_t target, int32_t slot)
{
    if (node == AN_NONE || target == AN_NONE || node == target || slot < 0 || slot >= AN_SLOTS)
        return;
    const an_nd *n = &an->nodes[node], *t = &an->nodes[target];
    if (n->replica || !t->replica || t->master != node || an->owner[slot] != node)
        return;
    node_set_role(an, target, "master", AN_NONE);
    node_set_role(an, node, "replica", target);
    an->nodes[target].promoted_from = node;
}

/* A replica connects to its master from host (maybe not the address it
 * announces: bind-source-addr, NAT) and says REPLCONF listening-port port. The
 * node is host:port when known, else the one node listening on that port,
 * else a new node host:port. */
void an_nodes_learn_replica(an_analyzer *an, const cap_addr *host, uint16_t port, int32_t master)
{
    cap_endpoint ep;
    memset(&ep, 0, sizeof ep);
    ep.addr = *host;
    ep.port = port;
    char text[AN_NAME_MAX];
    cap_endpoint_format(&ep, text, sizeof text);
    int32_t i = node_find(an, text);
    if (i == AN_NONE) {
        int32_t only = AN_NONE, n = 0;
        for (uint32_t k = 0; k < an->nnodes; k++)
            if ((int32_t)k != master && name_port(an_node_name(an, (int32_t)k)) == port) {
                only = (int32_t)k;
                n++;
            }
        i = n == 1 ? only : an_node_by_endpoint(an, &ep);
    }
    node_set_role(an, i, "replica", master);
    if (master != AN_NONE && !an->nodes[master].pub.role[0])
        node_set_role(an, master, "master", AN_NONE);
}

/* The replica's listening port is not on the wire: the replica is the one
 * node observed at host other than the master, if there is exactly one
 * (one node per host, as usual outside test setups); else only the master
 * is learnt. */
void an_nodes_learn_link(an_analyzer *an, int32_t master, const cap_addr *host)
{
    char addr[CAP_ENDPOINT_STRLEN], pre[CAP_ENDPOINT_STRLEN + 4];
    int32_t only = AN_NONE, n = 0;
    if (master == AN_NONE)
        return;
    if (!an->nodes[master].pub.role[0])
        node_set_role(an, master, "master", AN_NONE);
    cap_addr_format(host, addr, sizeof addr);
    snprintf(pre, sizeof pre, host->family == 6 ? "[%s]:" : "%s:", addr);
    for (uint32_t k = 0; k < an->nnodes; k++)
        if ((int32_t)k != master && !an->nodes[k].phantom &&
            strncmp(an->nodes[k].pub.observed, pre, strlen(pre)) == 0) {
            only = (int32_t)k;
            n++;
        }
    if (n == 1 && !an->nodes[only].pub.role[0])
        node_set_role(an, only, "replica", master);
}

void an_nodes_phantom(an_analyzer *an, int32_t node)
{
    if (node == AN_NONE || (uint32_t)node >= an->nnodes)
        return;
    an_nd *n = &an->nodes[node];
    if (n->pub.commands == 0 && !n->pub.role[0] && !n->pub.node_id[0] && !n->pub.announced[0])
        n->phantom = 1;
}

/* ---------------------------------------------------------------- values */

static int v_is_str(const resp_value *v)
{
    return v && (v->type == RESP_T_BULK || v->type == RESP_T_SIMPLE || v->type == RESP_T_VERBATIM);
}

static int v_int(const resp_value *v, long *out)
{
    if (!v)
        return -1;
    if (v->type == RESP_T_INT) {
        *out = (long)v->integer;
        return 0;
    }
    if (v_is_str(v) && v->len > 0 && v->len < 12) {
        long x = 0;
        for (size_t i = 0; i < v->len; i++) {
            if (v->str[i] < '0' || v->str[i] > '9')
                return -1;
            x = x * 10 + (v->str[i] - '0');
        }
        *out = x;
        return 0;
    }
    return -1;
}

static int v_eq(const resp_value *v, const char *s)
{
    return v_is_str(v) && v->len == strlen(s) && memcmp(v->str, s, v->len) == 0;
}

static int v_is_agg(const resp_value *v)
{
    return v && (v->type == RESP_T_ARRAY || v->type == RESP_T_MAP || v->type == RESP_T_SET);
}

/* Look up a field in a map or a flat key/value array. */
static const resp_value *v_field(const resp_value *v, const char *name)
{
    if (!v_is_agg(v))
        return NULL;
    for (size_t i = 0; i + 1 < v->n; i += 2)
        if (v_eq(&v->elem[i], name))
            return &v->elem[i + 1];
    return NULL;
}

/* Set owner[] for [start, end] to node (bounds-checked). */
static void own(an_analyzer *an, long start, long end, int32_t node)
{
    if (start < 0 || end >= AN_SLOTS || start > end || node == AN_NONE)
        return;
    for (long s = start; s <= end; s++)
        an->owner[s] = (int16_t)node;
}

/* ---------------------------------------------------------------- SLOTS */

/* One node entry of CLUSTER SLOTS: [endpoint, port, id?, metadata?]. */
static int32_t slots_node(an_analyzer *an, const resp_value *e, int32_t answering)
{
    long port;
    if (!v_is_agg(e) || e->n < 2 || !v_is_str(&e->elem[0]) || v_int(&e->elem[1], &port) ||
        port <= 0 || port > 65535)
        return AN_NONE;
    const resp_value *ep = &e->elem[0];
    const resp_value *meta = e->n >= 4 ? &e->elem[3] : NULL;
    const resp_value *mip = meta ? v_field(meta, "ip") : NULL;
    const resp_value *mhost = meta ? v_field(meta, "hostname") : NULL;
    char addr[AN_NAME_MAX] = "", hostep[AN_NAME_MAX] = "";
    const char *host = ep->str;
    size_t hlen = ep->len;
    if (hlen == 1 && host[0] == '?')
        hlen = 0; /* unknown endpoint */
    else if (hlen == 0)
        hlen = node_host(an, answering, &host);
    if (mip && v_is_str(mip) && mip->len) {
        /* preferred endpoint is a hostname; the ip is in the metadata */
        endpoint_text(addr, sizeof addr, mip->str, mip->len, port);
        if (hlen)
            endpoint_text(hostep, sizeof hostep, host, hlen, port);
    } else if (hlen) {
        endpoint_text(addr, sizeof addr, host, hlen, port);
        if (mhost && v_is_str(mhost) && mhost->len)
            endpoint_text(hostep, sizeof hostep, mhost->str, mhost->len, port);
    }
    int32_t i = AN_NONE;
    if (e->n >= 3 && v_is_str(&e->elem[2]))
        i = an_node_by_id(an, e->elem[2].str, e->elem[2].len);
    if (i == AN_NONE && addr[0])
        i = an_node_by_announced(an, addr, 1);
    if (i == AN_NONE)
        return AN_NONE;
    if (addr[0] && !an->nodes[i].pub.announced[0]) {
        set_name_field(an, an->nodes[i].pub.announced, sizeof an->nodes[i].pub.announced, addr);
        node_add_name(an, i, addr);
    }
    if (hostep[0] && !an->nodes[i].hostname_ep[0]) {
        set_name_field(an, an->nodes[i].hostname_ep, sizeof an->nodes[i].hostname_ep, hostep);
        node_add_name(an, i, hostep);
    }
    if (e->n >= 3 && v_is_str(&e->elem[2]))
        node_set_id(an, i, e->elem[2].str, e->elem[2].len);
    return i;
}

static int learn_slots(an_analyzer *an, const resp_value *v, int32_t answering)
{
    if (!v || v->type != RESP_T_ARRAY)
        return -1;
    for (int s = 0; s < AN_SLOTS; s++)
        an->owner[s] = AN_NONE;
    for (size_t r = 0; r < v->n; r++) {
        const resp_value *range = &v->elem[r];
        long start, end;
        if (!v_is_agg(range) || range->n < 3 || v_int(&range->elem[0], &start) ||
            v_int(&range->elem[1], &end))
            continue;
        int32_t master = slots_node(an, &range->elem[2], answering);
        node_set_role(an, master, "master", AN_NONE);
        own(an, start, end, master);
        for (size_t k = 3; k < range->n; k++)
            node_set_role(an, slots_node(an, &range->elem[k], answering), "replica", master);
    }
    return 0;
}

/* ---------------------------------------------------------------- SHARDS */

static int32_t shards_node(an_analyzer *an, const resp_value *nd)
{
    const resp_value *id = v_field(nd, "id"), *ip = v_field(nd, "ip");
    const resp_value *endpoint = v_field(nd, "endpoint"), *hostname = v_field(nd, "hostname");
    long port = 0;
    if (v_int(v_field(nd, "port"), &port) && v_int(v_field(nd, "tls-port"), &port))
        return AN_NONE;
    if (port <= 0 || port > 65535)
        return AN_NONE;
    char addr[AN_NAME_MAX] = "", hostep[AN_NAME_MAX] = "";
    if (v_is_str(ip) && ip->len && !(ip->len == 1 && ip->str[0] == '?'))
        endpoint_text(addr, sizeof addr, ip->str, ip->len, port);
    if (v_is_str(hostname) && hostname->len)
        endpoint_text(hostep, sizeof hostep, hostname->str, hostname->len, port);
    else if (v_is_str(endpoint) && endpoint->len && !(ip && v_eq(endpoint, "")) &&
             !(v_is_str(ip) && endpoint->len == ip->len &&
               memcmp(endpoint->str, ip->str, ip->len) == 0) &&
             !(endpoint->len == 1 && endpoint->str[0] == '?'))
        endpoint_text(hostep, sizeof hostep, endpoint->str, endpoint->len, port);
    int32_t i = v_is_str(id) ? an_node_by_id(an, id->str, id->len) : AN_NONE;
    if (i == AN_NONE && addr[0])
        i = an_node_by_announced(an, addr, 1);
    if (i == AN_NONE)
        return AN_NONE;
    if (addr[0] && !an->nodes[i].pub.announced[0]) {
        set_name_field(an, an->nodes[i].pub.announced, sizeof an->nodes[i].pub.announced, addr);
        node_add_name(an, i, addr);
    }
    if (hostep[0] && !an->nodes[i].hostname_ep[0]) {
        set_name_field(an, an->nodes[i].hostname_ep, sizeof an->nodes[i].hostname_ep, hostep);
        node_add_name(an, i, hostep);
    }
    if (v_is_str(id))
        node_set_id(an, i, id->str, id->len);
    return i;
}

static int learn_shards(an_analyzer *an, const resp_value *v)
{
    if (!v || v->type != RESP_T_ARRAY)
        return -1;
    for (int s = 0; s < AN_SLOTS; s++)
        an->owner[s] = AN_NONE;
    for (size_t k = 0; k < v->n; k++) {
        const resp_value *shard = &v->elem[k];
        const resp_value *slots = v_field(shard, "slots");
        const resp_value *nodes = v_field(shard, "nodes");
        if (!v_is_agg(nodes))
            continue;
        int32_t master = AN_NONE;
        int32_t idx[64];
        size_t n = 0;
        for (size_t j = 0; j < nodes->n && n < 64; j++) {
            int32_t i = shards_node(an, &nodes->elem[j]);
            if (i == AN_NONE)
                continue;
            idx[n++] = i;
            if (v_eq(v_field(&nodes->elem[j], "role"), "master"))
                master = i;
        }
        for (size_t j = 0; j < n; j++)
            node_set_role(an, idx[j], idx[j] == master ? "master" : "replica",
                          idx[j] == master ? AN_NONE : master);
        if (v_is_agg(slots))
            for (size_t j = 0; j + 1 < slots->n; j += 2) {
                long a, b;
                if (!v_int(&slots->elem[j], &a) && !v_int(&slots->elem[j + 1], &b))
                    own(an, a, b, master);
            }
    }
    return 0;
}

/* ---------------------------------------------------------------- NODES */

/* Split the next space-separated field of line [*p, end). */
static int next_field(const char **p, const char *end, const char **f, size_t *len)
{
    while (*p < end && **p == ' ')
        (*p)++;
    if (*p >= end)
        return 0;
    *f = *p;
    while (*p < end && **p != ' ')
        (*p)++;
    *len = (size_t)(*p - *f);
    return 1;
}

static int has_flag(const char *flags, size_t len, const char *flag)
{
    size_t n = strlen(flag);
    for (size_t i = 0; i + n <= len; i++)
        if ((i == 0 || flags[i - 1] == ',') && memcmp(flags + i, flag, n) == 0 &&
            (i + n == len || flags[i + n] == ','))
            return 1;
    return 0;
}

/* Does the rest of a CLUSTER NODES line (after the link state) name a slot
 * or a range? [slot->-id] / [slot-<-id] entries do not count. */
static int line_has_slots(const char *p, const char *end)
{
    const char *f;
    size_t fl;
    while (next_field(&p, end, &f, &fl))
        if (f[0] != '[')
            return 1;
    return 0;
}

/* Is a line's "master" for node i, without slots, older than what the
 * capture showed? Gossip lags a failover: for a moment the other nodes still
 * list the demoted master as a master without slots, with the config epoch
 * it had then, while the node itself already says it is a replica. Such a
 * line is stale when its epoch is below that of the master the node now
 * replicates (the master's epoch is newer information). Equal or unknown (0)
 * epochs prove nothing and the line is taken. (A replica turned master by
 * CLUSTER RESET SOFT also looks like this until it is heard itself.) */
static int master_line_stale(const an_analyzer *an, int32_t i, int has_slots, uint64_t epoch)
{
    const an_nd *n = &an->nodes[i];
    return !has_slots && n->replica && n->master != AN_NONE && n->master != i &&
           an->nodes[n->master].told_epoch > epoch;
}

/* One line of CLUSTER NODES, in three passes over the reply: names and ids
 * (so that masters resolve by id), config epochs (so that a line's role is
 * judged against every epoch the reply gives, whatever the order of its
 * lines), then roles and slot ranges (applied when the node is a master). */
static void nodes_line(an_analyzer *an, const char *p, const char *end, int32_t answering,
                       int pass)
{
    const char *id, *addr, *flags, *master, *f;
    size_t idl, addrl, flagsl, masterl, fl;
    if (!next_field(&p, end, &id, &idl) || !next_field(&p, end, &addr, &addrl) ||
        !next_field(&p, end, &flags, &flagsl) || !next_field(&p, end, &master, &masterl))
        return;
    /* address: ip:port@cport[,hostname] */
    const char *at = memchr(addr, '@', addrl);
    size_t ipport = at ? (size_t)(at - addr) : addrl;
    const char *comma = memchr(addr, ',', addrl);
    const char *colon = NULL;
    for (size_t i = 0; i < ipport; i++)
        if (addr[i] == ':')
            colon = addr + i;
    char text[AN_NAME_MAX] = "", hostep[AN_NAME_MAX] = "";
    long port = 0;
    if (colon) {
        for (const char *q = colon + 1; q < addr + ipport && port < 70000; q++)
            port = *q >= '0' && *q <= '9' ? port * 10 + (*q - '0') : 70000;
        size_t hl = (size_t)(colon - addr);
        if (port > 0 && port < 65536 && hl > 0)
            endpoint_text(text, sizeof text, addr, hl, port);
        if (comma && port > 0 && port < 65536 && addr + addrl > comma + 1)
            endpoint_text(hostep, sizeof hostep, comma + 1, (size_t)(addr + addrl - comma - 1), port);
    }
    int myself = has_flag(flags, flagsl, "myself");
    int32_t i = an_node_by_id(an, id, idl);
    if (i == AN_NONE && myself)
        i = answering;
    if (i == AN_NONE && text[0])
        i = an_node_by_announced(an, text, 1);
    if (i == AN_NONE)
        return;
    an_nd *n = &an->nodes[i];
    node_set_id(an, i, id, idl);
    if (text[0] && !n->pub.announced[0]) {
        set_name_field(an, n->pub.announced, sizeof n->pub.announced, text);
        node_add_name(an, i, text);
    }
    if (hostep[0] && !n->hostname_ep[0]) {
        set_name_field(an, n->hostname_ep, sizeof n->hostname_ep, hostep);
        node_add_name(an, i, hostep);
    }
    if (pass == 0)
        return;
    /* <ping-sent> <pong-recv> <config-epoch> <link-state>, then the slots */
    const char *ep = NULL;
    size_t epl = 0;
    for (int k = 0; k < 4; k++)
        if (!next_field(&p, end, &f, &fl))
            return;
        else if (k == 2)
            ep = f, epl = fl;
    uint64_t epoch = 0;
    for (size_t k = 0; k < epl && k < 19 && ep[k] >= '0' && ep[k] <= '9'; k++)
        epoch = epoch * 10 + (uint64_t)(ep[k] - '0');
    if (pass == 1) {
        n->told_epoch_prev = n->told_epoch;
        n->told_epoch = epoch;
        return;
    }
    if (has_flag(flags, flagsl, "master") && !myself &&
        master_line_stale(an, i, line_has_slots(p, end), epoch)) {
        n->told_epoch = n->told_epoch_prev; /* as stale as the role */
        return;
    }
    if (has_flag(flags, flagsl, "master")) {
        node_set_role(an, i, "master", AN_NONE);
        while (next_field(&p, end, &f, &fl)) {
            if (fl && f[0] == '[')
                continue; /* [slot->-id] migrating / [slot-<-id] importing */
            long a = 0, b = -1, *cur = &a;
            int ok = fl > 0;
            for (size_t k = 0; k < fl && ok; k++) {
                if (f[k] == '-' && cur == &a) {
                    cur = &b;
                    b = 0;
                } else if (f[k] >= '0' && f[k] <= '9' && *cur < AN_SLOTS) {
                    *cur = *cur * 10 + (f[k] - '0');
                } else {
                    ok = 0;
                }
            }
            if (ok)
                own(an, a, b < 0 ? a : b, i);
        }
    } else if (has_flag(flags, flagsl, "slave") || has_flag(flags, flagsl, "replica")) {
        int32_t m = masterl && master[0] != '-' ? an_node_by_id(an, master, masterl) : AN_NONE;
        node_set_role(an, i, "replica", m);
    }
}

static int learn_nodes(an_analyzer *an, const resp_value *v, int32_t answering)
{
    if (!v_is_str(v))
        return -1;
    const char *p = v->str, *end = v->str + v->len;
    if (v->type == RESP_T_VERBATIM && v->len >= 4 && p[3] == ':')
        p += 4; /* "txt:" */
    for (int s = 0; s < AN_SLOTS; s++)
        an->owner[s] = AN_NONE;
    for (int pass = 0; pass < 3; pass++) {
        const char *q = p;
        while (q < end) {
            const char *nl = memchr(q, '\n', (size_t)(end - q));
            const char *le = nl ? nl : end;
            if (le > q && le[-1] == '\r')
                le--;
            nodes_line(an, q, le, answering, pass);
            q = nl ? nl + 1 : end;
        }
    }
    return 0;
}

/* What the clients were just told (owner[] after a map reply), for
 * cluster.c's 'clients' source: runs of slots with one owner, with the
 * config epoch the reply gave (CLUSTER NODES only). */
static void told_map(an_analyzer *an, char kind, int64_t ts_us)
{
    uint8_t via = kind == 'L' ? 'S' : kind == 'H' ? 'H' : 'N';
    for (int32_t s = 0; s < AN_SLOTS;) {
        int32_t node = an->owner[s], e = s;
        while (e + 1 < AN_SLOTS && an->owner[e + 1] == node)
            e++;
        if (node != AN_NONE && (uint32_t)node < an->nnodes)
            an_cluster_on_told(an, s, e, node, via == 'N' ? an->nodes[node].told_epoch : 0,
                               ts_us, via);
        s = e + 1;
    }
}

/* Learning a map is deterministic: the same reply bytes, from the same node,
 * on the same registry and slot owners give the same result. Clients fetch
 * the same map again and again (every new connection of redis-benchmark or a
 * pool refreshes it), so a node keeps a copy of the last reply it gave whose
 * learning changed nothing (reg_version did not move), and the same bytes
 * are skipped while the registry and owners stay as they were. */
#define MAP_COPY_MAX 4096

static int learn_parsed(an_analyzer *an, const char *sub, int32_t node, const resp_reply *r)
{
    resp_value *v = resp_value_parse(r->raw, r->raw_len, 16);
    if (!v)
        return -1;
    int rc;
    if (strcmp(sub, "SLOTS") == 0)
        rc = learn_slots(an, v, node);
    else if (strcmp(sub, "SHARDS") == 0)
        rc = learn_shards(an, v);
    else
        rc = learn_nodes(an, v, node);
    resp_value_free(v);
    return rc;
}

int an_nodes_learn_map(an_analyzer *an, const char *sub, int32_t node, const resp_reply *r)
{
    if (!r->raw || r->raw_len == 0)
        return -1;
    an_nd *nd = node >= 0 && (uint32_t)node < an->nnodes ? &an->nodes[node] : NULL;
    char kind = sub[0] == 'S' ? sub[1] : sub[0]; /* L(SLOTS), H(SHARDS), N(ODES) */
    if (nd && nd->map_copy && nd->map_len == r->raw_len && nd->map_kind == kind &&
        nd->map_version == an->reg_version && memcmp(nd->map_copy, r->raw, r->raw_len) == 0)
        return 0; /* learnt already; nothing changed since */
    uint64_t before = an->reg_version;
    memcpy(an->owner_saved, an->owner, sizeof an->owner);
    int rc = learn_parsed(an, sub, node, r);
    if (memcmp(an->owner_saved, an->owner, sizeof an->owner) != 0)
        an->reg_version++;
    if (rc == 0)
        told_map(an, kind, r->ts_us);
    if (!nd)
        return rc;
    nd->map_len = 0;
    if (rc == 0 && an->reg_version == before && r->raw_len <= MAP_COPY_MAX) {
        if (!nd->map_copy)
            nd->map_copy = malloc(MAP_COPY_MAX);
        if (nd->map_copy) {
            memcpy(nd->map_copy, r->raw, r->raw_len);
            nd->map_len = r->raw_len;
            nd->map_kind = kind;
            nd->map_version = an->reg_version;
        }
    }
    return rc;
}

void an_nodes_emit(an_analyzer *an)
{
    if (!an->sink.node || an->nnodes == 0)
        return;
    uint32_t *owned = calloc(an->nnodes, sizeof *owned);
    for (int s = 0; owned && s < AN_SLOTS; s++)
        if (an->owner[s] != AN_NONE && (uint32_t)an->owner[s] < an->nnodes)
            owned[an->owner[s]]++;
    for (uint32_t i = 0; i < an->nnodes; i++) {
        an_nd *n = &an->nodes[i];
        n->pub.slots_owned = owned ? owned[i] : 0;
        an_cluster_fill_node(an, (int32_t)i, &n->pub);
        if (n->phantom && n->pub.commands == 0 && !n->pub.role[0] && !n->pub.node_id[0] &&
            !n->pub.announced[0] && n->pub.slots_owned == 0)
            continue;
        an->sink.node(an->sink.ctx, &n->pub);
    }
    free(owned);
}

void an_nodes_free(an_analyzer *an)
{
    if (!an->nodes)
        return;
    for (uint32_t i = 0; i < an->nnodes; i++) {
        an_lat_free(&an->nodes[i].lat[0]);
        an_lat_free(&an->nodes[i].lat[1]);
        free(an->nodes[i].map_copy);
        an->nodes[i].map_copy = NULL;
    }
}
