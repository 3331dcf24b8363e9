/*
 * proofs.c - what the decoded commands prove about which endpoints serve,
 * noted for the capture layer's orientation (resp_config.servers,
 * capture/servers.c).
 *
 *   - a MOVED/ASK target (redir host and port, when the host is an address)
 *   - every node a CLUSTER SLOTS, SHARDS or NODES reply names (its ip and
 *     port, and for NODES its cluster bus port too); an empty host in
 *     SLOTS is the answering node's (Redis Cluster specification)
 *   - the master of a replication link: the server of a connection that
 *     sends REPLCONF or PSYNC/SYNC, or of one recognised mid-stream (pair.c,
 *     repl_found), and the replica's own listening port (REPLCONF
 *     listening-port)
 *
 * Each is stamped with the record being fed when the pairer saw it (the
 * redirect and CLUSTER reply when the command is emitted, REPLCONF when the
 * request is complete, PSYNC/SYNC at their reply: rp->index, from
 * cap_event.index), so that every --threads notes the same stamps.
 * Hostnames are not resolved: only what names an address on the wire can
 * orient a connection. Off the hot path: the pairer calls these from its
 * rare paths only (an error reply, a kept reply, REPLCONF, PSYNC/SYNC, a
 * replication link found mid-stream).
 */
#include <string.h>

#include "resp/resp_internal.h"

/* Note host (an address literal of hlen bytes) : port, when it is one. */
static void note_host(resp_pipeline *rp, cap_proof proof, const char *host, size_t hlen, int64_t port)
{
    char text[64];
    cap_endpoint ep;
    if (hlen == 0 || hlen >= sizeof text || port <= 0 || port > 65535)
        return;
    memcpy(text, host, hlen);
    text[hlen] = '\0';
    if (cap_addr_parse(text, &ep.addr) != 0)
        return;
    ep.port = (uint16_t)port;
    cap_servers_note(rp->cfg.servers, proof, rp->index, &ep);
}

/* The integer of a value (INT, or a decimal string). 0 when it is one. */
static int value_int(const resp_value *v, int64_t *out)
{
    if (v == NULL)
        return -1;
    if (v->type == RESP_T_INT) {
        *out = v->integer;
        return 0;
    }
    if ((v->type == RESP_T_BULK || v->type == RESP_T_SIMPLE) && v->len > 0 && v->len < 20)
        return rd_parse_i64((const uint8_t *)v->str, v->len, out);
    return -1;
}

/* 1 when v is a string of any kind. */
static int value_is_str(const resp_value *v)
{
    return v != NULL && (v->type == RESP_T_BULK || v->type == RESP_T_SIMPLE ||
                         v->type == RESP_T_VERBATIM);
}

/* The value of field name in a map (RESP3) or a flat key/value array (RESP2). */
static const resp_value *value_field(const resp_value *v, const char *name)
{
    size_t n = strlen(name);
    if (v == NULL || (v->type != RESP_T_MAP && v->type != RESP_T_ARRAY))
        return NULL;
    for (size_t i = 0; i + 1 < v->n; i += 2)
        if (value_is_str(&v->elem[i]) && v->elem[i].len == n && memcmp(v->elem[i].str, name, n) == 0)
            return &v->elem[i + 1];
    return NULL;
}

/* A node of CLUSTER SLOTS: [host, port, id, {metadata}]. */
static void slots_node(resp_pipeline *rp, const cap_conn *cc, const resp_value *e)
{
    int64_t port;
    const resp_value *ip;
    char self[CAP_ENDPOINT_STRLEN];
    if ((e->type != RESP_T_ARRAY) || e->n < 2 || !value_is_str(&e->elem[0]) ||
        value_int(&e->elem[1], &port) != 0)
        return;
    if (e->elem[0].len == 0 && cc != NULL) { /* the answering node's host */
        size_t n = cap_addr_format(&cc->server.addr, self, sizeof self);
        note_host(rp, CAP_PROOF_CLUSTER, self, n, port);
    } else {
        note_host(rp, CAP_PROOF_CLUSTER, e->elem[0].str, e->elem[0].len, port);
    }
    ip = e->n >= 4 ? value_field(&e->elem[3], "ip") : NULL;
    if (value_is_str(ip))
        note_host(rp, CAP_PROOF_CLUSTER, ip->str, ip->len, port);
}

/* CLUSTER SLOTS: [[start, end, master, replica...], ...]. */
static void slots_reply(resp_pipeline *rp, const cap_conn *cc, const resp_value *v)
{
    if (v->type != RESP_T_ARRAY)
        return;
    for (size_t r = 0; r < v->n; r++)
        if (v->elem[r].type == RESP_T_ARRAY)
            for (size_t k = 2; k < v->elem[r].n; k++)
                slots_node(rp, cc, &v->elem[r].elem[k]);
}

/* CLUSTER SHARDS: [{slots, nodes: [{ip, port | tls-port, ...}, ...]}, ...]. */
static void shards_reply(resp_pipeline *rp, const resp_value *v)
{
    if (v->type != RESP_T_ARRAY)
        return;
    for (size_t s = 0; s < v->n; s++) {
        const resp_value *nodes = value_field(&v->elem[s], "nodes");
        if (nodes == NULL || nodes->type != RESP_T_ARRAY)
            continue;
        for (size_t i = 0; i < nodes->n; i++) {
            const resp_value *ip = value_field(&nodes->elem[i], "ip");
            int64_t port;
            if (!value_is_str(ip))
                continue;
            if (value_int(value_field(&nodes->elem[i], "port"), &port) == 0)
                note_host(rp, CAP_PROOF_CLUSTER, ip->str, ip->len, port);
            if (value_int(value_field(&nodes->elem[i], "tls-port"), &port) == 0)
                note_host(rp, CAP_PROOF_CLUSTER, ip->str, ip->len, port);
        }
    }
}

/* A decimal port of [p, end); -1 when it is not one. */
static int64_t port_of(const char *p, const char *end)
{
    int64_t port = 0;
    if (p >= end || end - p > 5)
        return -1;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        port = port * 10 + (*p - '0');
    }
    return port;
}

/* One line of CLUSTER NODES: "<id> <ip>:<port>@<cport>[,<hostname>] ...". */
static void nodes_line(resp_pipeline *rp, const char *p, const char *end)
{
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    const char *addr, *addr_end, *at, *colon = NULL;
    if (sp == NULL)
        return;
    addr = sp + 1;
    addr_end = memchr(addr, ' ', (size_t)(end - addr));
    if (addr_end == NULL)
        addr_end = end;
    at = memchr(addr, '@', (size_t)(addr_end - addr));
    for (const char *q = addr; q < (at ? at : addr_end); q++)
        if (*q == ':')
            colon = q;
    if (colon == NULL || at == NULL)
        return;
    note_host(rp, CAP_PROOF_CLUSTER, addr, (size_t)(colon - addr), port_of(colon + 1, at));
    const char *cport_end = memchr(at, ',', (size_t)(addr_end - at));
    note_host(rp, CAP_PROOF_CLUSTER, addr, (size_t)(colon - addr),
              port_of(at + 1, cport_end ? cport_end : addr_end));
}

/* CLUSTER NODES: one bulk string (RESP3: verbatim "txt:"), a node a line. */
static void nodes_reply(resp_pipeline *rp, const resp_value *v)
{
    const char *p, *end;
    if (!value_is_str(v))
        return;
    p = v->str;
    end = v->str + v->len;
    if (v->type == RESP_T_VERBATIM && v->len >= 4 && p[3] == ':')
        p += 4;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p && le[-1] == '\r')
            le--;
        nodes_line(rp, p, le);
        p = nl ? nl + 1 : end;
    }
}

/* A kept CLUSTER SLOTS / SHARDS / NODES reply. */
static void cluster_reply(resp_pipeline *rp, const resp_command *cmd)
{
    const resp_request *req = &cmd->req;
    const uint8_t *sub = (const uint8_t *)req->args[0];
    resp_value *v = resp_value_parse(cmd->reply.raw, cmd->reply.raw_len, 16);
    if (v == NULL)
        return;
    if (rd_eq_ci(sub, req->arg_len[0], "SLOTS"))
        slots_reply(rp, cmd->conn, v);
    else if (rd_eq_ci(sub, req->arg_len[0], "SHARDS"))
        shards_reply(rp, v);
    else
        nodes_reply(rp, v);
    resp_value_free(v);
}

void rc_proofs_master(resp_pipeline *rp, const cap_endpoint *master)
{
    if (rp->cfg.servers != NULL)
        cap_servers_note(rp->cfg.servers, CAP_PROOF_REPLICATION, rp->index, master);
}

void rc_proofs_redirect(resp_pipeline *rp, const resp_redirect *r)
{
    if (rp->cfg.servers != NULL)
        note_host(rp, CAP_PROOF_REDIRECT, r->host, strnlen(r->host, sizeof r->host), r->port);
}

void rc_proofs_cluster(resp_pipeline *rp, const resp_command *cmd)
{
    if (rp->cfg.servers != NULL && cmd->reply.raw != NULL && cmd->req.nargs >= 1)
        cluster_reply(rp, cmd);
}

void rc_proofs_replconf(resp_pipeline *rp, const cap_conn *cc, const resp_request *req)
{
    int64_t port;
    if (rp->cfg.servers == NULL || cc == NULL)
        return;
    rc_proofs_master(rp, &cc->server);
    /* REPLCONF listening-port <port>: where the replica itself serves */
    if (req->nargs >= 2 &&
        rd_eq_ci((const uint8_t *)req->args[0], req->arg_len[0], "LISTENING-PORT") &&
        req->arg_full_len[1] == req->arg_len[1] &&
        rd_parse_i64((const uint8_t *)req->args[1], req->arg_len[1], &port) == 0 && port > 0 &&
        port <= 65535) {
        cap_endpoint replica = cc->client;
        replica.port = (uint16_t)port;
        cap_servers_note(rp->cfg.servers, CAP_PROOF_REPLICATION, rp->index, &replica);
    }
}
