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
 * redirects came from several nodes or all from one.
 */
void an_detect_redirect_loop(an_analyzer *an, an_attempt_ctx *a)
{
    an_op *op = a->op;
    if (!op || op->loop_reported || op->ntrail == 0)
        return;
    const an_attempt *cur = &op->trail[op->ntrail - 1];
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
    an_event ev[AN_OP_TRAIL];
    an_evtext rb[AN_OP_TRAIL];
    int one_node = 1;
    for (uint32_t i = 0; i < op->ntrail; i++) {
        an_event_from_attempt(an, &ev[i], op, &op->trail[i], "redirected attempt", &rb[i]);
        if (op->trail[i].node != op->trail[0].node)
            one_node = 0;
    }
    char summary[AN_SUMMARY_MAX];
    const char *client = an_client_name(an, op->client);
    if (one_node)
        snprintf(summary, sizeof summary,
                 "%s: %s (slot %d) was redirected %u times in one operation, every time by %s%s",
                 client, op->name, (int)op->slot, op->redirects, an_node_name(an, cur->node),
                 looped ? ", the same redirect again and again" : "");
    else
        snprintf(summary, sizeof summary,
                 "%s: %s (slot %d) bounced between nodes: %u redirects in one operation%s",
                 client, op->name, (int)op->slot, op->redirects,
                 looped ? ", the same redirects again" : "");
    int32_t f = an_finding_hit(an, AN_REDIRECT_LOOP, client, AN_NONE, op->slot, cur->start_us,
                               1, summary, ev, op->ntrail);
    an_attempt_found(a, f);
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
