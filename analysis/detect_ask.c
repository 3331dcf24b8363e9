/*
 * detect_ask.c - the ASK detectors: asking_missing, asking_other_connection,
 * asking_interleaved, ask_cached.
 *
 * What a correct client does with "-ASK <slot> <host>:<port>" (Redis Cluster
 * specification, "ASK redirection"): it sends ASKING and then the command to
 * the target, on the same connection, once, and does not change its slot map:
 * the next, independent command for that slot goes to the old owner again. The
 * importing node serves a command for an importing slot only when ASKING came
 * right before it on that connection; otherwise it answers -MOVED back to the
 * source. The definitions below are written the same way in docs/findings.md.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/internal.h"

/*
 * asking_missing: an operation got ASK to node T and its next attempt went to
 * T without ASKING before it on its connection, and no ASKING from the same
 * host to T on another connection came after the ASK (that would be
 * asking_other_connection), and no ASKING on this connection was used up by
 * another command after the ASK (asking_interleaved), and no cluster map the
 * client received since the ASK gives T the slot (the attempt then follows
 * the map: the migration ended, T owns the slot), and the attempt is not one
 * T served right after requests of its connection the capture lost (its
 * ASKING may be among them; a MOVED from T shows there was none). One
 * occurrence per such
 * attempt; aggregated per (client, T, slot). Threshold: none (1).
 *
 * asking_other_connection: the same attempt, but the host did send ASKING to
 * T on another connection after the ASK: the flag covered nothing useful.
 *
 * Evidence: the attempt that got ASK, the ASKING (other connection) if any,
 * and the retry with its reply (usually -MOVED back to the source).
 */
void an_detect_asking(an_analyzer *an, an_attempt_ctx *a)
{
    const an_attempt *prev = a->prev, *cur = a->cur;
    an_cmdctx *x = a->x;
    if (!prev || prev->reply != RESP_ERR_ASK || prev->target == AN_NONE ||
        cur->node != prev->target || cur->asked)
        return;
    if (x->cn->asking_spent_ts >= prev->reply_us)
        return; /* its ASKING went to another command: asking_interleaved */
    if (x->slot >= 0 && x->cli->map_ts > prev->reply_us && an->owner[x->slot] == cur->node)
        return; /* a map received since the ASK gives T the slot: it follows the map */
    if (x->cmd->requests_lost && cur->reply != RESP_ERR_MOVED)
        return; /* served after requests the capture lost: its ASKING may be one */
    an_asking_rec *other = NULL;
    for (uint32_t k = 0; k < AN_RING; k++) {
        an_asking_rec *r = &an->asking_ring[k];
        if (r->valid && !r->used && r->conn != cur->conn && r->node == cur->node &&
            r->ts >= prev->reply_us && r->ts <= cur->start_us &&
            cap_addr_equal(&r->host, &x->cli->host)) {
            other = r;
            break;
        }
    }
    an_event ev[3];
    an_evtext rb;
    size_t n = 0;
    an_event_from_attempt(an, &ev[n++], a->op, prev, "ask", &rb);
    char summary[AN_SUMMARY_MAX];
    const char *client = an_client_name(an, x->cn->client);
    an_finding_kind kind;
    if (other) {
        other->used = 1;
        kind = AN_ASKING_OTHER_CONNECTION;
        memset(&ev[n], 0, sizeof ev[n]);
        ev[n].what = "ASKING on another connection";
        ev[n].ts_us = other->ts;
        ev[n].conn = other->conn;
        ev[n].src = other->src;
        ev[n].dst = an_node_name(an, other->node);
        ev[n].cmd = "ASKING";
        ev[n].reply = "";
        ev[n].req_frame = other->req_frame;
        ev[n].reply_frame = other->reply_frame;
        n++;
        an_event_from(&ev[n++], x, "retry without ASKING on its connection");
        snprintf(summary, sizeof summary,
                 "%s sent ASKING on connection %llu but retried %s on connection %llu to %s "
                 "(slot %d)", client, (unsigned long long)other->conn, x->cmd->req.name,
                 (unsigned long long)cur->conn, an_node_name(an, cur->node), (int)x->slot);
    } else {
        kind = AN_ASKING_MISSING;
        an_event_from(&ev[n++], x, "retry without ASKING");
        snprintf(summary, sizeof summary,
                 "%s followed ASK for slot %d to %s without sending ASKING first (reply %s)",
                 client, (int)x->slot, an_node_name(an, cur->node), an_reply_text(x));
    }
    int32_t f = an_finding_hit(an, kind, client, cur->node, x->slot, cur->start_us, 1, summary,
                               ev, n);
    an_attempt_found(a, f);
}

/*
 * asking_interleaved: ASKING was sent on a connection to node T while an
 * operation of the same host waited for ASKING + retry at T (it got ASK to T
 * before that ASKING), and the next command on that connection was not that
 * retry: the flag was spent on the wrong command (a shared, multiplexed or
 * pipelined connection). Aggregated per (client, T, slot of the waiting
 * operation). Threshold: none (1). The retry, when it comes later on that
 * connection without a fresh ASKING, is not counted again as asking_missing.
 * Evidence: the ASK, and the command that used the ASKING.
 */
void an_detect_asking_interleaved(an_analyzer *an, an_cmdctx *x, an_op *op, int64_t asking_ts)
{
    an_event ev[3];
    an_evtext rb;
    an_event_from_attempt(an, &ev[0], op, &op->last, "ask", &rb);
    memset(&ev[1], 0, sizeof ev[1]);
    ev[1].what = "ASKING";
    ev[1].ts_us = asking_ts;
    ev[1].conn = x->cn->id;
    ev[1].src = x->cn->src;
    ev[1].dst = x->cn->dst;
    ev[1].cmd = "ASKING";
    ev[1].reply = "";
    if (x->cn->asking_ring >= 0 && x->cn->asking_ring < AN_RING) {
        const an_asking_rec *r = &an->asking_ring[x->cn->asking_ring];
        if (r->valid && r->conn == x->cn->id && r->ts == asking_ts) { /* not overwritten */
            ev[1].req_frame = r->req_frame;
            ev[1].reply_frame = r->reply_frame;
        }
    }
    an_event_from(&ev[2], x, "next command on the connection (not the retry)");
    char summary[AN_SUMMARY_MAX];
    const char *client = an_client_name(an, x->cn->client);
    snprintf(summary, sizeof summary,
             "%s sent ASKING to %s for %s (slot %d) but the next command on connection %llu "
             "was %s", client, x->cn->dst, op->name, (int)op->slot,
             (unsigned long long)x->cn->id, x->cmd->req.name[0] ? x->cmd->req.name : "?");
    int32_t f = an_finding_hit(an, AN_ASKING_INTERLEAVED, client, x->node, op->slot,
                               x->cmd->req.start_us, 1, summary, ev, 3);
    an_op_charge(op, f);
}

/*
 * ask_cached: the client treated ASK as MOVED. After it got ASK for slot s to
 * node T, a new operation (a first attempt, not a retry) for slot s went
 * straight to T without ASKING and T redirected it (MOVED back to the
 * source: T does not own s yet; a command T served says it owns s by then,
 * which a client may have learnt from a reply the capture lost), sent after
 * that ASK reply, while the client
 * had not learned that T owns s (no MOVED for s pointing at T received since
 * the ASK, and no cluster map received since the ASK in which T owns s). Only
 * clients that keep a slot map (they fetched CLUSTER SLOTS / SHARDS / NODES)
 * are judged: a client without a map that simply stays on the node it was last
 * sent to (redis-cli -c) has nothing to cache. Aggregated per (client, T, s);
 * visible at cfg.ask_cached_min such commands (default 2).
 * Evidence: the direct commands and their replies (typically -MOVED back to
 * the source).
 */
void an_detect_ask_cached(an_analyzer *an, an_attempt_ctx *a)
{
    an_cmdctx *x = a->x;
    const an_attempt *cur = a->cur;
    if (!a->first || cur->asked || x->slot < 0 || x->cli->map_ts == 0)
        return;
    if (cur->reply != RESP_ERR_MOVED && cur->reply != RESP_ERR_ASK)
        return; /* T served it: it owns s by then, nothing cached shows */
    an_memo *m = an_memo_get(an, x->cn->client, x->slot, 0);
    if (!m || m->ask_ts == 0 || m->ask_to != cur->node || cur->start_us < m->ask_ts)
        return;
    if (m->moved_ts > m->ask_ts && m->moved_to == cur->node)
        return; /* learned from a MOVED */
    if (x->cli->map_ts > m->ask_ts && an->owner[x->slot] == cur->node)
        return; /* learned from a fresh map */
    an_event ev;
    an_event_from(&ev, x, "new command sent straight to the ASK target");
    char summary[AN_SUMMARY_MAX];
    const char *client = an_client_name(an, x->cn->client);
    snprintf(summary, sizeof summary,
             "%s cached an ASK: sends new commands for slot %d straight to %s without ASKING "
             "(reply %s)", client, (int)x->slot, an_node_name(an, cur->node), an_reply_text(x));
    int32_t f = an_finding_hit(an, AN_ASK_CACHED, client, cur->node, x->slot, cur->start_us,
                               an->cfg.ask_cached_min, summary, &ev, 1);
    an_attempt_found(a, f);
}
