/*
 * detect_misc.c - readonly_missing and crossslot.
 *
 * Replicas answer -MOVED (to their master) unless the connection sent READONLY,
 * after which they serve read-only commands for their master's slots (Redis
 * Cluster specification, "Scaling reads using replica nodes"). A command whose
 * keys hash to different slots is refused with -CROSSSLOT before any routing
 * ("Multi-key operations"). The definitions below are written the same way in
 * docs/findings.md.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/internal.h"

/*
 * readonly_missing: a read-only command (COMMAND INFO flag "readonly") sent to
 * a node known to be a replica (from CLUSTER SLOTS / SHARDS / NODES or a
 * replication link seen on the wire), on a connection that had not sent
 * READONLY (or had cancelled it with READWRITE / RESET), answered with MOVED.
 * Connections picked up mid-stream are not judged (READONLY may have been
 * sent before the capture began) until the capture shows their state: a
 * READONLY, READWRITE or RESET, or a read the replica bounced with MOVED to
 * its own master (with READONLY it would have served a slot it takes for its
 * master's: READONLY is off). Aggregated per (client, replica, slot -1);
 * visible at cfg.readonly_missing_min occurrences (default 1).
 * Evidence: the read and its MOVED reply.
 */
void an_detect_readonly_missing(an_analyzer *an, an_attempt_ctx *a)
{
    an_cmdctx *x = a->x;
    const an_attempt *cur = a->cur;
    if (cur->reply != RESP_ERR_MOVED || cur->node == AN_NONE || x->cn->readonly || !x->info ||
        !(x->info->flags & AN_CMD_READONLY))
        return;
    /* mid-stream, READONLY may predate the capture (see readonly_from_reply) */
    if (!an->nodes[cur->node].replica || an_cn_readonly_unknown(x->cn))
        return;
    an_event ev;
    an_event_from(&ev, x, "read sent to a replica without READONLY");
    char summary[AN_SUMMARY_MAX];
    const char *client = an_client_name(an, x->cn->client);
    snprintf(summary, sizeof summary,
             "%s reads from replica %s without READONLY: bounced to %s (%s, slot %d)", client,
             an_node_name(an, cur->node), an_node_name(an, cur->target), x->cmd->req.name,
             (int)x->slot);
    int32_t f = an_finding_hit(an, AN_READONLY_MISSING, client, cur->node, -1, cur->start_us,
                               an->cfg.readonly_missing_min, summary, &ev, 1);
    an_attempt_found(a, f);
}

/*
 * crossslot: a command answered -CROSSSLOT: its keys hash to different slots
 * (an application bug, not a migration effect). Aggregated per (client, "",
 * slot -1): the node does not matter. Threshold: none (1). The summary names
 * the commands seen (in the order first seen).
 * Evidence: the command (first key) and its reply.
 */
void an_detect_crossslot(an_analyzer *an, an_attempt_ctx *a)
{
    an_cmdctx *x = a->x;
    if (a->cur->reply != RESP_ERR_CROSSSLOT)
        return;
    const char *client = an_client_name(an, x->cn->client);
    int32_t i = an_finding_get(an, AN_CROSSSLOT, client, AN_NONE, -1, 1);
    an_fnd *f = an_fnd_at(an, i);
    if (!f)
        return;
    an_note_add_name(f, x->cmd->req.name[0] ? x->cmd->req.name : "?");
    an_event ev;
    an_event_from(&ev, x, "keys in different slots");
    /* the summary lists every command seen, so it follows each occurrence */
    snprintf(f->f.summary, sizeof f->f.summary, "%s sends multi-key commands whose keys are in "
             "different slots: %s", client, f->note);
    an_finding_occur(an, i, a->cur->start_us, 0, NULL, &ev, 1);
}
