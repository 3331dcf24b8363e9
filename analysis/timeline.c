/*
 * timeline.c - per slot migration windows, and migration_stuck.
 *
 * A migration (Redis Cluster specification, "Live resharding"): the target
 * gets CLUSTER SETSLOT s IMPORTING <source-id>, the source CLUSTER SETSLOT s
 * MIGRATING <target-id>; keys move with MIGRATE; CLUSTER SETSLOT s NODE
 * <target-id> ends it (SETSLOT s STABLE aborts it). Meanwhile the source
 * answers -ASK for keys it no longer has, and -TRYAGAIN for multi-key commands
 * whose keys are split. After the flip the old owner answers -MOVED.
 *
 * From the wire, a window opens at the first of: SETSLOT IMPORTING/MIGRATING,
 * an ASK for the slot, a TRYAGAIN for it; and closes at the flip: the first
 * MOVED for the slot pointing at the target, or SETSLOT NODE (or STABLE,
 * aborted). One window per slot at a time: an ASK to another target, or any
 * migration event after a closed window, starts a new one (the old one is
 * emitted). Cost: the extra time of operations on the slot that ended while
 * the window was open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/internal.h"

/* Emit a window's record. */
static void mig_emit(an_analyzer *an, an_mig *m)
{
    if (!an->sink.migration)
        return;
    snprintf(m->pub.source, sizeof m->pub.source, "%s", an_node_name(an, m->source));
    snprintf(m->pub.target, sizeof m->pub.target, "%s", an_node_name(an, m->target));
    an->sink.migration(an->sink.ctx, &m->pub);
}

/* The open window of a slot; a closed one is emitted and replaced when
 * restart is set or when it is complete. NULL on out of memory. */
static an_mig *mig_open(an_analyzer *an, int32_t slot, int restart)
{
    an_mig *m = an->migs[slot];
    if (m && (m->pub.complete || restart)) {
        mig_emit(an, m);
        free(m);
        an->migs[slot] = m = NULL;
    }
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m)
            return NULL;
        m->pub.slot = slot;
        m->source = m->target = AN_NONE;
        an->migs[slot] = m;
    }
    return m;
}

static int32_t reply_slot(const an_cmdctx *x)
{
    int32_t s = x->cmd->reply.redir.slot;
    if ((x->cmd->reply.err == RESP_ERR_MOVED || x->cmd->reply.err == RESP_ERR_ASK) && s >= 0 &&
        s < AN_SLOTS)
        return s;
    return x->slot;
}

static void close_window(an_mig *m, int64_t ts)
{
    if (m->pub.complete)
        return;
    if (!m->pub.flip_us)
        m->pub.flip_us = ts;
    m->pub.complete = 1;
}

void an_tl_redirect(an_analyzer *an, an_cmdctx *x)
{
    int32_t slot = reply_slot(x);
    if (slot < 0 || slot >= AN_SLOTS)
        return;
    int64_t ts = x->cmd->reply.ts_us;
    an_mig *m = an->migs[slot];
    switch (x->cmd->reply.err) {
    case RESP_ERR_ASK: {
        int other = m && m->target != AN_NONE && x->target != AN_NONE && m->target != x->target;
        m = mig_open(an, slot, other);
        if (!m)
            return;
        if (m->source == AN_NONE)
            m->source = x->node;
        if (m->target == AN_NONE)
            m->target = x->target;
        if (!m->pub.first_ask_us)
            m->pub.first_ask_us = ts;
        if (ts > m->pub.last_ask_us)
            m->pub.last_ask_us = ts;
        m->pub.asks++;
        break;
    }
    case RESP_ERR_MOVED:
        if (!m || m->pub.complete)
            return;
        m->pub.moveds++;
        if (m->target != AN_NONE && x->target == m->target)
            close_window(m, ts);
        break;
    case RESP_ERR_TRYAGAIN:
        m = mig_open(an, slot, 0);
        if (m)
            m->pub.tryagains++;
        break;
    default:
        break;
    }
}

/* Integer value of kept argument i, or -1. */
static long arg_num(const resp_request *r, unsigned i)
{
    if (i >= r->nargs || r->arg_len[i] == 0 || r->arg_len[i] > 9 ||
        r->arg_len[i] != r->arg_full_len[i])
        return -1;
    long v = 0;
    for (unsigned k = 0; k < r->arg_len[i]; k++) {
        if (r->args[i][k] < '0' || r->args[i][k] > '9')
            return -1;
        v = v * 10 + (r->args[i][k] - '0');
    }
    return v;
}

static int arg_eq(const resp_request *r, unsigned i, const char *w)
{
    size_t n = strlen(w);
    return i < r->nargs && r->arg_len[i] == n && r->arg_full_len[i] == n &&
           strncasecmp(r->args[i], w, n) == 0;
}

/* CLUSTER SETSLOT <slot> IMPORTING|MIGRATING|NODE <id> | STABLE, answered OK. */
void an_tl_setslot(an_analyzer *an, an_cmdctx *x)
{
    const resp_request *r = &x->cmd->req;
    long slot = arg_num(r, 1);
    if (slot < 0 || slot >= AN_SLOTS || x->cmd->reply.err != RESP_ERR_NONE)
        return;
    int64_t ts = x->cmd->reply.ts_us;
    int32_t other = r->nargs >= 4 ? an_node_by_id(an, r->args[3], r->arg_len[3]) : AN_NONE;
    an_mig *m = an->migs[slot];
    if (arg_eq(r, 2, "IMPORTING") || arg_eq(r, 2, "MIGRATING")) {
        int importing = arg_eq(r, 2, "IMPORTING");
        int32_t src = importing ? other : x->node, dst = importing ? x->node : other;
        int restart = m && ((m->target != AN_NONE && dst != AN_NONE && m->target != dst) ||
                            (m->source != AN_NONE && src != AN_NONE && m->source != src));
        m = mig_open(an, (int32_t)slot, restart);
        if (!m)
            return;
        if (m->source == AN_NONE)
            m->source = src;
        if (m->target == AN_NONE)
            m->target = dst;
        if (importing && !m->pub.importing_us)
            m->pub.importing_us = ts;
        if (!importing && !m->pub.migrating_us)
            m->pub.migrating_us = ts;
        if (!importing && x->node != AN_NONE)
            an->nodes[x->node].migrating_slot = (int32_t)slot;
    } else if (arg_eq(r, 2, "NODE")) {
        if (other != AN_NONE)
            an->owner[slot] = (int16_t)other;
        for (uint32_t i = 0; i < an->nnodes; i++)
            if (an->nodes[i].migrating_slot == slot)
                an->nodes[i].migrating_slot = -1;
        if (!m || m->pub.complete)
            return;
        if (m->target == AN_NONE)
            m->target = other;
        close_window(m, ts);
    } else if (arg_eq(r, 2, "STABLE")) {
        if (x->node != AN_NONE && an->nodes[x->node].migrating_slot == slot)
            an->nodes[x->node].migrating_slot = -1;
        if (m && !m->pub.complete) {
            m->aborted = 1;
            m->pub.complete = 1;
        }
    }
}

/* MIGRATE host port key|"" db timeout [...] [KEYS k...]: keys moved. The slot
 * is the key's; in the KEYS form (empty key argument) the slot named by the
 * last CLUSTER GETKEYSINSLOT on the connection, else the slot the node is
 * migrating. */
void an_tl_migrate(an_analyzer *an, an_cmdctx *x)
{
    const resp_request *r = &x->cmd->req;
    if (x->cmd->reply.err != RESP_ERR_NONE || r->nkeys == 0)
        return;
    uint64_t n = r->nkeys;
    int32_t slot = -1;
    if (r->key0_full_len > 0 && r->slot >= 0) {
        slot = r->slot;
    } else {
        n--; /* the empty key argument */
        slot = x->cn->getkeys_slot;
        if (slot < 0 && x->node != AN_NONE)
            slot = an->nodes[x->node].migrating_slot;
    }
    if (slot < 0 || slot >= AN_SLOTS || n == 0)
        return;
    an_mig *m = an->migs[slot];
    if (!m || m->pub.complete)
        m = mig_open(an, slot, 0);
    if (!m)
        return;
    if (m->source == AN_NONE)
        m->source = x->node;
    m->pub.keys_migrated += n;
}

void an_tl_op_cost(an_analyzer *an, int32_t slot, int64_t extra_us)
{
    if (slot < 0 || slot >= AN_SLOTS || extra_us <= 0)
        return;
    an_mig *m = an->migs[slot];
    if (m && !m->pub.complete)
        m->extra_us += extra_us;
}

/* When a window opened: its earliest event. */
static int64_t window_start(const an_mig *m)
{
    int64_t t[3] = {m->pub.importing_us, m->pub.migrating_us, m->pub.first_ask_us};
    int64_t s = 0;
    for (int i = 0; i < 3; i++)
        if (t[i] && (!s || t[i] < s))
            s = t[i];
    return s;
}

/*
 * migration_stuck: a slot's migration window (from its first SETSLOT
 * IMPORTING/MIGRATING or ASK to the flip) lasted longer than
 * cfg.migration_stuck_us (default 60 s; severity error), or is still open at
 * the end of the capture (severity warning): an aborted or hung reshard. A
 * cluster-side finding: client "", node = the source, the slot. Checked at
 * each an_flush and at the end. extra_latency_us: the extra time of the
 * slot's operations during the window.
 * Evidence: the window's times and counts.
 */
void an_detect_migration_stuck(an_analyzer *an, an_mig *m, int64_t now_us, int at_end)
{
    int64_t start = window_start(m);
    if (m->stuck_reported || m->aborted || !start)
        return;
    int64_t end = m->pub.complete ? m->pub.flip_us : now_us;
    int64_t dur = end - start;
    int too_long = dur > an->cfg.migration_stuck_us;
    if (!too_long && !(at_end && !m->pub.complete))
        return;
    m->stuck_reported = 1;
    char what[160], reply[160];
    snprintf(what, sizeof what, "migration window %s", m->pub.complete ? "closed" : "open");
    snprintf(reply, sizeof reply,
             "asks=%llu tryagains=%llu keys_migrated=%llu first_ask_us=%lld last_ask_us=%lld "
             "importing_us=%lld migrating_us=%lld flip_us=%lld",
             (unsigned long long)m->pub.asks, (unsigned long long)m->pub.tryagains,
             (unsigned long long)m->pub.keys_migrated, (long long)m->pub.first_ask_us,
             (long long)m->pub.last_ask_us, (long long)m->pub.importing_us,
             (long long)m->pub.migrating_us, (long long)m->pub.flip_us);
    an_event ev;
    memset(&ev, 0, sizeof ev);
    ev.what = what;
    ev.ts_us = start;
    ev.src = an_node_name(an, m->source);
    ev.dst = an_node_name(an, m->target);
    ev.cmd = "";
    ev.reply = reply;
    char summary[AN_SUMMARY_MAX];
    snprintf(summary, sizeof summary, "slot %d migrating %s -> %s for %.1f s%s", (int)m->pub.slot,
             an_node_name(an, m->source)[0] ? an_node_name(an, m->source) : "?",
             an_node_name(an, m->target)[0] ? an_node_name(an, m->target) : "?", dur / 1e6,
             m->pub.complete ? "" : ", still open at the end of the capture");
    an_finding_hit_sev(an, AN_MIGRATION_STUCK, too_long ? AN_ERROR : AN_WARNING, "", m->source,
                       m->pub.slot, start, m->extra_us, 1, summary, &ev, 1);
}

void an_tl_check(an_analyzer *an, int64_t now_us, int at_end)
{
    for (int s = 0; s < AN_SLOTS; s++)
        if (an->migs[s])
            an_detect_migration_stuck(an, an->migs[s], now_us, at_end);
}

void an_tl_emit(an_analyzer *an)
{
    for (int s = 0; s < AN_SLOTS; s++)
        if (an->migs[s])
            mig_emit(an, an->migs[s]);
}

void an_tl_free(an_analyzer *an)
{
    for (int s = 0; s < AN_SLOTS; s++) {
        free(an->migs[s]);
        an->migs[s] = NULL;
    }
}
