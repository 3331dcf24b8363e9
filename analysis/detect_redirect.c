/*
 * detect_redirect.c - redirect_loop, moved_ignored, tryagain_storm,
 * redirect_unfollowed.
 *
 * What a correct client does (Redis Cluster specification, "Moved
 * redirection", "ASK redirection", "Multi-key operations"): after -MOVED it
 * retries at the new owner and sends later commands for the slot there (it
 * updates its map, usually by fetching the whole map again); after -TRYAGAIN
 * it retries later, a bounded number of times; it never ignores a redirect.
 * The definitions below are written the same way in docs/findings.md.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/internal.h"

/* Do two redirected attempts show the same redirect (same node, ASKING
 * state, reply kind and target)? */
static int same_redirect(const an_attempt *a, const an_attempt *b)
{
    return a->node == b->node && a->asked == b->asked && a->reply == b->reply &&
           a->target == b->target;
}

/* The summary of a redirect_loop finding, about operation op: how many
 * redirects it took, from one node or several, and, once it has ended (how
 * not NULL, see loop_end_text), over how long and how it ended; before that,
 * its count "so far". */
static void loop_summary(an_analyzer *an, const char *client, const an_op *op, const char *how,
                         char *out, size_t size)
{
    char span[48] = " so far", end[96] = "";
    if (how) {
        int64_t last = op->last.reply_us ? op->last.reply_us : op->last.start_us;
        snprintf(span, sizeof span, " over %.1f ms", (double)(last - op->first.start_us) / 1e3);
        snprintf(end, sizeof end, ", then %s", how);
    }
    if (op->loop_one_node)
        snprintf(out, size,
                 "%s: %s (slot %d) was redirected %u times in one operation%s, every time by "
                 "%s%s%s", client, op->name, (int)op->slot, op->redirects, span,
                 an_node_name(an, op->loop_node),
                 op->loop_same ? ", the same redirect again and again" : "", end);
    else
        snprintf(out, size, "%s: %s (slot %d) bounced between nodes: %u redirects in one "
                 "operation%s%s%s", client, op->name, (int)op->slot, op->redirects, span,
                 op->loop_same ? ", the same redirects again" : "", end);
}

/*
 * redirect_loop: one operation went round in a loop. Counted once per
 * operation when, among its MOVED/ASK-answered attempts since its last
 * TRYAGAIN, a redirect repeats an earlier one (same node, same ASKING state,
 * same reply kind, same target) more than once in all (A -> B -> A -> B), or
 * their number exceeds cfg.loop_max_redirects (default 5). One repeat is not a
 * loop: an operation that bounced once (S -ASK-> T -MOVED-> S -ASK-> T, with
 * ASKING at last) and then completed is explained by the finding that caused
 * the bounce (asking_missing, asking_interleaved). TRYAGAIN restarts the
 * count, since a client correctly retrying a split multi-key command walks
 * source -> target -> source again. A real loop is reported even when another
 * finding explains why (a client that never sends ASKING bounces until its
 * own cap: asking_missing and redirect_loop). Aggregated per (client, "",
 * slot); the evidence lists the attempts; the summary says whether the
 * redirects came from several nodes or all from one. The operation usually
 * goes on bouncing after it is reported: its redirects are counted to its end
 * (an_detect_loop_end).
 */
void an_detect_redirect_loop(an_analyzer *an, an_attempt_ctx *a)
{
    an_op *op = a->op;
    if (!op || op->ntrail == 0)
        return;
    const an_attempt *cur = &op->trail[op->ntrail - 1];
    if (op->loop_reported) { /* the reported loop goes on: one more redirect */
        if (cur->node != op->loop_node)
            op->loop_one_node = 0;
        return;
    }
    for (uint32_t i = 0; i + 1 < op->ntrail; i++)
        if (same_redirect(&op->trail[i], cur)) {
            if (op->trail_repeats < UINT8_MAX)
                op->trail_repeats++;
            break;
        }
    int looped = op->trail_repeats >= 2;
    if (!looped && op->seg_redirects <= an->cfg.loop_max_redirects)
        return;
    op->loop_reported = 1;
    op->loop_same = (uint8_t)looped;
    op->loop_node = cur->node;
    op->loop_one_node = 1;
    an_event ev[AN_OP_TRAIL];
    an_evtext rb[AN_OP_TRAIL];
    for (uint32_t i = 0; i < op->ntrail; i++) {
        an_event_from_attempt(an, &ev[i], op, &op->trail[i], "redirected attempt", &rb[i]);
        if (op->trail[i].node != cur->node)
            op->loop_one_node = 0;
    }
    char summary[AN_SUMMARY_MAX];
    const char *client = an_client_name(an, op->client);
    loop_summary(an, client, op, NULL, summary, sizeof summary);
    op->loop = an_finding_hit(an, AN_REDIRECT_LOOP, client, AN_NONE, op->slot, cur->start_us,
                              1, summary, ev, op->ntrail);
    const an_fnd *f = an_fnd_at(an, op->loop);
    op->loop_told = f && f->f.count == 1; /* the summary tells of the first operation */
    an_attempt_found(a, op->loop);
}

/* How a looping operation ended, as its summary ends ("..., then %s"). */
static const char *loop_end_text(const an_op *op, an_op_end how, char *buf, size_t size)
{
    switch (how) {
    case AN_OP_COMPLETED:
        if (op->last.reply == RESP_ERR_NONE)
            return "it was served";
        snprintf(buf, size, "it got -%s", resp_err_name((resp_err_class)op->last.reply));
        return buf;
    case AN_OP_GAVE_UP: return "the client gave up";
    case AN_OP_RETRY_LOST: return "the capture lost its retry, if any";
    case AN_OP_TARGET_UNSEEN: return "its retry, if any, went to a node the capture does not show";
    case AN_OP_ABANDONED: return "the capture ended";
    case AN_OP_EVICTED: return "it was dropped unjudged (max_ops operations waiting)";
    case AN_OP_CLIENT_DROPPED: return "it was dropped unjudged with its client (max_clients)";
    }
    return "it ended";
}

/*
 * A looping operation has ended (any way: an_op_end). The summary was
 * written when the loop was detected, a few redirects in, and the operation
 * often kept bouncing (hundreds of times on real captures): the finding must
 * tell its real cost. Its redirects go to the finding's totals (evidence
 * "redirects", "most_in_one_operation": over its ended operations), and when
 * the summary tells of this operation (the finding's first, as its first
 * evidence events do) it is rewritten with the final count, the time the
 * operation took and how it ended. The evidence events stay those of
 * detection.
 */
void an_detect_loop_end(an_analyzer *an, const an_op *op, an_op_end how)
{
    an_fnd *f = an_fnd_at(an, op->loop);
    if (!f)
        return;
    f->tally[0] += op->redirects;
    if (op->redirects > f->tally[1])
        f->tally[1] = op->redirects;
    snprintf(f->extra, sizeof f->extra, ",\"redirects\":%llu,\"most_in_one_operation\":%llu",
             (unsigned long long)f->tally[0], (unsigned long long)f->tally[1]);
    if (op->loop_told) {
        char buf[64];
        loop_summary(an, f->f.client, op, loop_end_text(op, how, buf, sizeof buf),
                     f->f.summary, sizeof f->f.summary);
    }
    if (f->visible)
        f->dirty = 1;
}

/*
 * moved_ignored: the client kept sending a slot to its old owner after MOVED.
 * An occurrence is a command for slot s (first attempt or retry) sent to node
 * S after the client received "-MOVED s T" from S (T != S), that S answers
 * with MOVED again: the client knew and paid an extra round trip anyway.
 * Retries that follow an ASK to S are not counted (the ASK sent them there),
 * nor a retry sent back to S right after S's MOVED for it (the operation
 * bounced on its own: redirect_loop when it repeats).
 * Commands already in flight when the first MOVED arrived are not counted
 * (they were sent before it). Reads bounced by a replica for want of
 * READONLY are readonly_missing instead; a client that never follows any
 * redirect nor fetches a map is redirect_unfollowed instead (it has no map to
 * update). Aggregated per (client, S, s);
 * visible at cfg.moved_ignored_min occurrences (default 3).
 * Evidence: the commands sent to the old owner and their MOVED replies.
 */
void an_detect_moved_ignored(an_analyzer *an, an_attempt_ctx *a)
{
    an_cmdctx *x = a->x;
    const an_attempt *cur = a->cur;
    if (cur->reply != RESP_ERR_MOVED || x->slot < 0 || !x->cli->pub.cluster_aware)
        return;
    if (a->prev && a->prev->reply == RESP_ERR_ASK && cur->node == a->prev->target)
        return; /* sent there by an ASK, not by its map */
    if (a->nfound > 0)
        return; /* already explained (ask_cached): one mistake, one finding */
    if (!a->first)
        return; /* a retry is the operation's own redirect handling (redirect_loop) */
    an_memo *m = an_memo_get(an, x->cn->client, x->slot, 0);
    if (!m || m->moved_ts == 0 || m->moved_ts > cur->start_us)
        return;
    /* S bounced the slot before (and has not served it, nor been named by an
     * ASK, since); nodes past the 64th are judged by the last MOVED alone */
    int known = cur->node >= 0 && cur->node < 64
                    ? (int)((m->moved_nodes >> cur->node) & 1u)
                    : m->moved_from == cur->node && m->moved_to != cur->node &&
                          m->moved_to != AN_NONE &&
                          !(m->ask_ts > m->moved_ts && m->ask_to == m->moved_from);
    if (!known)
        return;
    if (m->moved_to != AN_NONE && !an_node_covered(an, m->moved_to, 0))
        return; /* the node it was sent to may have sent it back: the capture cannot tell */
    if (an_readonly_bounce(an, x, cur))
        return; /* readonly_missing */
    an_event ev;
    an_event_from(&ev, x, "sent to the old owner after MOVED");
    char summary[AN_SUMMARY_MAX];
    const char *client = an_client_name(an, x->cn->client);
    snprintf(summary, sizeof summary,
             "%s keeps sending slot %d to %s after MOVED to %s", client, (int)x->slot,
             an_node_name(an, cur->node), an_node_name(an, m->moved_to));
    int32_t f = an_finding_hit(an, AN_MOVED_IGNORED, client, cur->node, x->slot, cur->start_us,
                               an->cfg.moved_ignored_min, summary, &ev, 1);
    an_attempt_found(a, f);
}

/*
 * tryagain_storm: one operation retried -TRYAGAIN without backoff or without
 * bound: at least cfg.tryagain_min retries (default 10) each sent sooner than
 * cfg.tryagain_min_backoff_us (default 1 ms) after the TRYAGAIN, or more than
 * cfg.tryagain_max retries after TRYAGAIN whatever the delay (default 50).
 * (redis-py retries at most 16 times, sleeping 50 ms from the 9th.) Counted
 * once per operation (count = storms), aggregated per (client, node, slot).
 * Every retry of a storming operation is tallied, also those after the
 * threshold was crossed: the summary and the evidence's "retries",
 * "fast_retries" and "most_in_one_operation" are rebuilt from the tallies
 * when the finding is emitted again (an_flush / an_finish, same id).
 * Evidence: the first attempt, the first retries, the retry that crossed the
 * threshold, and the latest retry (replaced as the storm goes on).
 */
void an_detect_tryagain_storm(an_analyzer *an, an_attempt_ctx *a)
{
    an_op *op = a->op;
    if (!op || !a->prev || a->prev->reply != RESP_ERR_TRYAGAIN)
        return;
    int fast = an_tryagain_fast(&an->cfg, a->prev, a->cur);
    if (op->storm_reported) {
        /* the reported storm goes on: one more retry */
        an_fnd *f = an_fnd_at(an, op->storm);
        if (!f)
            return;
        f->tally[0]++;
        f->tally[1] += (uint64_t)fast;
        if (op->tryagains > f->tally[2])
            f->tally[2] = op->tryagains;
        an_event ev;
        an_event_from(&ev, a->x, "latest retry");
        an_finding_set_tail(an, op->storm, &ev);
        an_finding_touch(an, op->storm, a->cur->start_us);
        return;
    }
    if (op->fast_tryagains < an->cfg.tryagain_min && op->tryagains <= an->cfg.tryagain_max)
        return;
    op->storm_reported = 1;
    const char *client = an_client_name(an, op->client);
    int32_t i = an_finding_get(an, AN_TRYAGAIN_STORM, client, a->cur->node, op->slot, 1);
    an_fnd *f = an_fnd_at(an, i);
    if (!f)
        return;
    op->storm = i;
    f->tally[0] += op->tryagains;
    f->tally[1] += op->fast_tryagains;
    if (op->tryagains > f->tally[2])
        f->tally[2] = op->tryagains;
    an_note_add_name(f, op->name);
    an_event ev[2 + AN_OP_FIRST_RETRIES];
    an_evtext rb[1 + AN_OP_FIRST_RETRIES];
    size_t n = 0;
    an_event_from_attempt(an, &ev[n], op, &op->first, "first attempt", &rb[n]);
    n++;
    /* the first retries, unless one of them is the retry at hand */
    for (uint32_t k = 0; k < op->nretries && k + 1 < op->tryagains; k++, n++)
        an_event_from_attempt(an, &ev[n], op, &op->retries[k], "retry after TRYAGAIN", &rb[n]);
    an_event_from(&ev[n++], a->x, "retry that crossed the threshold");
    f->stale = 1;
    an_finding_occur(an, i, op->first.start_us, 0, NULL, ev, n);
    an_finding_touch(an, i, a->cur->start_us);
    an_attempt_found(a, i);
}

void an_detect_storm_refresh(an_analyzer *an, an_fnd *f)
{
    const char *client = f->f.client;
    long long backoff = (long long)an->cfg.tryagain_min_backoff_us;
    unsigned long long retries = f->tally[0], fast = f->tally[1], most = f->tally[2];
    if (f->f.count <= 1)
        snprintf(f->f.summary, sizeof f->f.summary,
                 "%s retried %s (slot %d) %llu times after TRYAGAIN, %llu of them within %lld us",
                 client, f->note, (int)f->f.slot, retries, fast, backoff);
    else
        snprintf(f->f.summary, sizeof f->f.summary,
                 "%s stormed TRYAGAIN in %llu operations (%s, slot %d): %llu retries, up to %llu "
                 "in one, %llu of them within %lld us", client, (unsigned long long)f->f.count,
                 f->note, (int)f->f.slot, retries, most, fast, backoff);
    snprintf(f->extra, sizeof f->extra,
             ",\"retries\":%llu,\"fast_retries\":%llu,\"most_in_one_operation\":%llu", retries,
             fast, most);
}

/*
 * redirect_unfollowed: an operation got MOVED or ASK and was never retried:
 * no command with the same name and first key from the same host within
 * cfg.op_window_us after the redirect (judged 2 * op_window_us later, or at
 * the end of the capture when the window has passed or the client sent other
 * commands after the redirect, or the connection the redirect came on has
 * closed). The client is not cluster-aware, and the error reached the
 * application. Not reported when another finding already explains the
 * operation (a visible one: an occurrence below its kind's threshold does
 * not hide it). Aggregated per (client, node that redirected,
 * slot). Evidence: the redirected command and its reply.
 */
void an_detect_unfollowed(an_analyzer *an, an_op *op, int64_t now_us)
{
    (void)now_us;
    for (uint8_t i = 0; i < op->nfnd; i++) {
        const an_fnd *f = an_fnd_at(an, op->fnd[i]);
        if (f && f->visible)
            return; /* explained; one below its threshold explains nothing */
    }
    an_event ev;
    an_evtext rb;
    an_event_from_attempt(an, &ev, op, &op->last, "redirect not followed", &rb);
    char summary[AN_SUMMARY_MAX];
    const char *client = an_client_name(an, op->client);
    snprintf(summary, sizeof summary, "%s never retried %s (slot %d) after %s from %s", client,
             op->name, (int)op->slot, resp_err_name((resp_err_class)op->last.reply),
             an_node_name(an, op->last.node));
    an_op_charge(op, an_finding_hit(an, AN_REDIRECT_UNFOLLOWED, client, op->last.node,
                                    op->slot, op->last.start_us, 1, summary, &ev, 1));
}
