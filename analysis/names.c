/*
 * names.c - the names and texts the detectors, findings and records print:
 * a client's name, a node's address, the source of a connection, a
 * command's key and its reply in a few characters.
 *
 * They read the analyzer's tables (internal.h) and change nothing but the
 * command's own text cache (an_cmdctx), so a detector needs internal.h and
 * these, never analyzer.c.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/internal.h"

/* ---------------------------------------------------------------- clients and nodes */

const char *an_client_name(const an_analyzer *an, int32_t client)
{
    if (client < 0 || (uint32_t)client >= an->cfg.max_clients || !an->clients[client].used)
        return "";
    return an->clients[client].pub.name;
}

const char *an_node_name(const an_analyzer *an, int32_t node)
{
    if (node < 0 || (uint32_t)node >= an->nnodes)
        return "";
    const an_nd *n = &an->nodes[node];
    return n->pub.observed[0] ? n->pub.observed : n->pub.announced;
}

int32_t an_client_find(const an_analyzer *an, const char *name)
{
    return an_map_find(&an->client_map, an_hash_str(name, 0), an_client_eq, an, name);
}

const char *an_conn_src(const an_analyzer *an, uint64_t id, int32_t client)
{
    int32_t i = an_map_find(&an->conn_map, an_conn_hash(id), an_conn_eq, an, &id);
    if (i != AN_NONE)
        return an->conns[i].src;
    return client == AN_NONE ? NULL : an_client_name(an, client);
}

/* ---------------------------------------------------------------- a command's texts */

/* Text for a reply in evidence and records: the error line, or its type. */
static void reply_text(const resp_command *cmd, char *out, size_t n)
{
    const resp_reply *r = &cmd->reply;
    if (cmd->outcome == RESP_NO_REPLY) {
        snprintf(out, n, "(no reply)");
        return;
    }
    if (cmd->outcome != RESP_OK) {
        snprintf(out, n, "(unanswered)");
        return;
    }
    switch (r->type) {
    case RESP_T_ERROR:
    case RESP_T_BLOBERR:
        snprintf(out, n, "-%.*s", (int)strnlen(r->errtext, sizeof r->errtext), r->errtext);
        break;
    case RESP_T_SIMPLE: snprintf(out, n, "+simple"); break;
    case RESP_T_INT: snprintf(out, n, ":%lld", (long long)r->integer); break;
    case RESP_T_BULK: snprintf(out, n, "$bulk"); break;
    case RESP_T_NIL: case RESP_T_NULL: snprintf(out, n, "nil"); break;
    case RESP_T_ARRAY: case RESP_T_MAP: case RESP_T_SET: case RESP_T_PUSH:
        snprintf(out, n, "%c%lld", (char)r->type, (long long)r->elements);
        break;
    default: snprintf(out, n, "%c", r->type ? (char)r->type : '?'); break;
    }
}

const char *an_cmd_key(an_cmdctx *x)
{
    if (!x->key_done) {
        const resp_request *req = &x->cmd->req;
        x->key_done = 1;
        x->key[0] = 0;
        if (req->key0_full_len > 0) {
            size_t n = req->key0_len < RESP_ARG_PREFIX ? req->key0_len : RESP_ARG_PREFIX;
            an_key_text(x->cfg, req->key0, n, req->key0_full_len, x->key, sizeof x->key);
        }
        x->key_len = strlen(x->key);
    }
    return x->key;
}

const char *an_reply_text(an_cmdctx *x)
{
    if (!x->reply[0])
        reply_text(x->cmd, x->reply, sizeof x->reply);
    return x->reply;
}
