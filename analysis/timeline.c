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
 * MOVED for the slot pointing at the target, SETSLOT NODE (or STABLE,
 * aborted), or the target answering a command for the slot that no ASKING
 * covered (an importing node answers those with MOVED: it serves them only
 * once it owns the slot; a client that refreshed its map sees no MOVED). One window per slot at a time: an ASK to another target, or any
 * migration event after a closed window, starts a new one (the old one is
 * emitted), but an ASK from the window's source to its target after the
 * flip (the source has not learnt it yet: late_ask), which is counted in it. Cost: the extra time of operations on the slot that ended while
 * the window was open.
 *
 * For migration_stuck's evidence a window keeps its CLUSTER SETSLOT commands
 * (IMPORTING, MIGRATING, NODE) and its first and last ASK replies, with their
 * connections and times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/internal.h"

static void stuck_fill(an_analyzer *an, an_fnd *f, const an_mig *m);

/* Copy text into a fixed field, cut to fit. */
static void put_text(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Keep a command of the window as evidence: what x sent, to whom. */
static void mig_ev_set(an_mig_ev *e, const an_cmdctx *x, int32_t target, const char *arg)
{
    const resp_request *r = &x->cmd->req;
    e->other_id[0] = 0;
    if (x->cmd->req.nargs >= 4 && r->arg_len[3] == r->arg_full_len[3] &&
        r->arg_len[3] < sizeof e->other_id && !strcmp(r->name, "CLUSTER")) {
        memcpy(e->other_id, r->args[3], r->arg_len[3]);
        e->other_id[r->arg_len[3]] = 0;
    }
    e->ts_us = x->cmd->req.start_us;
    e->conn = x->cn->id;
    e->req_frame = x->cmd->req.start_frame;
    e->reply_frame = x->cmd->reply.end_frame;
    e->node = x->node;
    e->target = target;
    put_text(e->src, sizeof e->src, x->cn->src);
    put_text(e->cmd, sizeof e->cmd, x->cmd->req.name);
    put_text(e->arg, sizeof e->arg, arg);
}

/* The window changed: its migration_stuck finding, if any, is rebuilt before
 * it is emitted again. */
static void mig_changed(an_analyzer *an, an_mig *m, int64_t ts)
{
    if (m->finding != AN_NONE)
        an_finding_touch(an, m->finding, ts);
}

/* A window goes away: its finding gets its final text now. */
static void mig_detach(an_analyzer *an, an_mig *m)
{
    an_fnd *f = an_fnd_at(an, m->finding);
    if (f)
        stuck_fill(an, f, m);
    m->finding = AN_NONE;
}

/* Emit a window's record. */
static void mig_emit(an_analyzer *an, an_mig *m)
{
    if (!an->sink.migration)
        return;
    an_copy_str(m->pub.source, sizeof m->pub.source, an_node_name(an, m->source));
    an_copy_str(m->pub.target, sizeof m->pub.target, an_node_name(an, m->target));
    an->sink.migration(an->sink.ctx, &m->pub);
}

/* The open window of a slot; a closed one is emitted and replaced when
 * restart is set or when it is complete. NULL on out of memory. */
static an_mig *mig_open(an_analyzer *an, int32_t slot, int restart)
{
    an_mig *m = an->migs[slot];
    if (m && (m->pub.complete || restart)) {
        mig_emit(an, m);
        mig_detach(an, m);
        free(m);
        an->migs[slot] = m = NULL;
    }
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m)
            return NULL;
        m->pub.slot = slot;
        m->source = m->target = AN_NONE;
        m->finding = AN_NONE;
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

/* Keep the slot's AN_SLOT_MIG bit: set while its window is open with a known
 * target, so that its commands reach an_tl_served. */
static void mig_mark(an_analyzer *an, int32_t slot)
{
    const an_mig *m = an->migs[slot];
    if (m && !m->pub.complete && m->target != AN_NONE)
        an->slot_busy[slot] |= AN_SLOT_MIG;
    else
        an->slot_busy[slot] &= (uint8_t)~AN_SLOT_MIG;
}

static void close_window(an_mig *m, int64_t ts)
{
    if (m->pub.complete)
        return;
    if (!m->pub.flip_us)
        m->pub.flip_us = ts;
    m->pub.complete = 1;
}

/* Is x's ASK one of window m's, after its flip? The target flips first
 * (SETSLOT NODE goes to it first, then to the source and the others), and
 * until the source learns it the source still answers -ASK to the same
 * target: the same migration (a new one from the same source to the same
 * target would need the slot back at the source first, another window). */
static int late_ask(const an_mig *m, const an_cmdctx *x)
{
    return m && m->pub.complete == 1 && m->source != AN_NONE && m->source == x->node &&
           m->target != AN_NONE && m->target == x->target;
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
        if (!late_ask(m, x))
            m = mig_open(an, slot, other);
        if (!m)
            break;
        if (m->source == AN_NONE)
            m->source = x->node;
        if (m->target == AN_NONE)
            m->target = x->target;
        if (!m->pub.first_ask_us) {
            m->pub.first_ask_us = ts;
            mig_ev_set(&m->ev[AN_MIG_FIRST_ASK], x, x->target, an_cmd_key(x));
        }
        if (ts >= m->pub.last_ask_us) {
            m->pub.last_ask_us = ts;
            mig_ev_set(&m->ev[AN_MIG_LAST_ASK], x, x->target, an_cmd_key(x));
        }
        m->pub.asks++;
        mig_changed(an, m, ts);
        break;
    }
    case RESP_ERR_MOVED:
        if (!m || m->pub.complete)
            break;
        m->pub.moveds++;
        if (m->target != AN_NONE && x->target == m->target)
            close_window(m, ts);
        mig_changed(an, m, ts);
        break;
    case RESP_ERR_TRYAGAIN:
        m = mig_open(an, slot, 0);
        if (m) {
            m->pub.tryagains++;
            mig_changed(an, m, ts);
        }
        break;
    default:
        break;
    }
    mig_mark(an, slot);
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
static void setslot_apply(an_analyzer *an, an_cmdctx *x)
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
        if (importing && !m->pub.importing_us) {
            m->pub.importing_us = ts;
            mig_ev_set(&m->ev[AN_MIG_IMPORTING], x, other, "IMPORTING");
        }
        if (!importing && !m->pub.migrating_us) {
            m->pub.migrating_us = ts;
            mig_ev_set(&m->ev[AN_MIG_MIGRATING], x, other, "MIGRATING");
        }
        mig_changed(an, m, ts);
        if (!importing && x->node != AN_NONE)
            an->nodes[x->node].migrating_slot = (int32_t)slot;
    } else if (arg_eq(r, 2, "NODE")) {
        if (other != AN_NONE && an->owner[slot] != other) {
            an->owner[slot] = (int16_t)other;
            an->reg_version++;
        }
        for (uint32_t i = 0; i < an->nnodes; i++)
            if (an->nodes[i].migrating_slot == slot)
                an->nodes[i].migrating_slot = -1;
        if (!m || m->pub.complete)
            return;
        if (m->target == AN_NONE)
            m->target = other;
        mig_ev_set(&m->ev[AN_MIG_NODE], x, other, "NODE");
        close_window(m, ts);
        mig_changed(an, m, ts);
    } else if (arg_eq(r, 2, "STABLE")) {
        if (x->node != AN_NONE && an->nodes[x->node].migrating_slot == slot)
            an->nodes[x->node].migrating_slot = -1;
        if (m && !m->pub.complete) {
            m->aborted = 1;
            m->pub.complete = AN_MIG_ABORTED;
            mig_changed(an, m, ts);
        }
    }
}

void an_tl_setslot(an_analyzer *an, an_cmdctx *x)
{
    setslot_apply(an, x);
    long slot = arg_num(&x->cmd->req, 1);
    if (slot >= 0 && slot < AN_SLOTS)
        mig_mark(an, (int32_t)slot);
}

/* MIGRATE host port key|"" db timeout [...] [KEYS k...]: keys moved. The slot
 * is the key's; in the KEYS form (empty key argument) the slot named by the
 * last CLUSTER GETKEYSINSLOT on the connection, else the slot the node is
 * migrating. "+NOKEY" (https://redis.io/docs/latest/commands/migrate/): none
 * of the keys existed, nothing moved: neither keys counted nor a migration
 * opened. */
void an_tl_migrate(an_analyzer *an, an_cmdctx *x)
{
    const resp_request *r = &x->cmd->req;
    if (x->cmd->reply.err != RESP_ERR_NONE || x->cmd->reply.nokey || r->nkeys == 0)
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
    mig_changed(an, m, 0);
    mig_mark(an, slot);
}

void an_tl_served(an_analyzer *an, const an_cmdctx *x)
{
    int32_t slot = x->slot;
    if (slot < 0 || slot >= AN_SLOTS || !(an->slot_busy[slot] & AN_SLOT_MIG) || x->asked ||
        x->cmd->reply.err != RESP_ERR_NONE)
        return;
    an_mig *m = an->migs[slot];
    if (!m || m->pub.complete || x->node == AN_NONE || x->node != m->target)
        return;
    int64_t ts = x->cmd->reply.ts_us;
    close_window(m, ts);
    mig_changed(an, m, ts);
    mig_mark(an, slot);
}

void an_tl_op_cost(an_analyzer *an, int32_t slot, int64_t from_us, int64_t to_us)
{
    if (slot < 0 || slot >= AN_SLOTS || to_us <= from_us)
        return;
    an_mig *m = an->migs[slot];
    if (m && !m->pub.complete) {
        an_span_add(&m->cost, from_us, to_us);
        an_finding_add_latency(an, m->finding, from_us, to_us);
    }
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

/* The window's end as far as known: the flip, else now. */
static int64_t window_end(const an_mig *m)
{
    return m->pub.complete ? m->pub.flip_us : m->judged_us;
}

/* Append a kept SETSLOT or ASK as an evidence event. */
static void stuck_event(an_analyzer *an, an_fnd *f, const an_mig *m, int which)
{
    const an_mig_ev *e = &m->ev[which];
    if (!e->ts_us)
        return;
    char what[40], cmd[160], reply[RESP_ERRTEXT_MAX];
    an_event ev;
    memset(&ev, 0, sizeof ev);
    ev.ts_us = e->ts_us;
    ev.conn = e->conn;
    ev.req_frame = e->req_frame;
    ev.reply_frame = e->reply_frame;
    ev.src = e->src;
    ev.dst = an_node_name(an, e->node);
    ev.what = what;
    ev.cmd = cmd;
    ev.reply = reply;
    if (which == AN_MIG_FIRST_ASK || which == AN_MIG_LAST_ASK) {
        snprintf(what, sizeof what, "%s ASK", which == AN_MIG_FIRST_ASK ? "first" : "last");
        an_copy_str(cmd, sizeof cmd, e->cmd);
        ev.key = e->arg;
        ev.key_len = strlen(e->arg);
        snprintf(reply, sizeof reply, "-ASK %d %s", (int)m->pub.slot,
                 an_node_name(an, e->target));
    } else {
        const char *other = e->other_id[0] ? e->other_id : "?";
        if (!e->other_id[0] && e->target != AN_NONE && (uint32_t)e->target < an->nnodes)
            other = an->nodes[e->target].pub.node_id[0] ? an->nodes[e->target].pub.node_id
                                                       : an_node_name(an, e->target);
        /* what has room for 31 bytes of the argument after "SETSLOT " */
        snprintf(what, sizeof what, "SETSLOT %.31s", e->arg);
        snprintf(cmd, sizeof cmd, "CLUSTER SETSLOT %d %s %s", (int)m->pub.slot, e->arg, other);
        snprintf(reply, sizeof reply, "+OK");
    }
    an_finding_append_event(f, &ev);
}

/* Summary, evidence events and the "window" member of a migration_stuck
 * finding, from its window. */
static void stuck_fill(an_analyzer *an, an_fnd *f, const an_mig *m)
{
    int64_t start = window_start(m), end = window_end(m);
    int64_t dur = end > start ? end - start : 0;
    const char *src = an_node_name(an, m->source), *dst = an_node_name(an, m->target);
    snprintf(f->f.summary, sizeof f->f.summary,
             "slot %d migrating %s -> %s for %.1f s%s: %llu ASK, %llu TRYAGAIN, %llu keys moved",
             (int)m->pub.slot, src[0] ? src : "?", dst[0] ? dst : "?", (double)dur / 1e6,
             m->pub.complete ? "" : m->judged_at_end ? ", still open at the end of the capture"
                                                     : ", still open",
             (unsigned long long)m->pub.asks, (unsigned long long)m->pub.tryagains,
             (unsigned long long)m->pub.keys_migrated);
    an_finding_clear_events(f);
    stuck_event(an, f, m, AN_MIG_IMPORTING);
    stuck_event(an, f, m, AN_MIG_MIGRATING);
    stuck_event(an, f, m, AN_MIG_FIRST_ASK);
    if (m->pub.asks > 1)
        stuck_event(an, f, m, AN_MIG_LAST_ASK);
    stuck_event(an, f, m, AN_MIG_NODE);
    snprintf(f->extra, sizeof f->extra,
             ",\"window\":{\"start_us\":%lld,\"end_us\":%lld,\"open\":%d,\"asks\":%llu,"
             "\"tryagains\":%llu,\"moveds\":%llu,\"keys_migrated\":%llu,\"first_ask_us\":%lld,"
             "\"last_ask_us\":%lld,\"importing_us\":%lld,\"migrating_us\":%lld,\"flip_us\":%lld}",
             (long long)start, (long long)end, !m->pub.complete,
             (unsigned long long)m->pub.asks, (unsigned long long)m->pub.tryagains,
             (unsigned long long)m->pub.moveds, (unsigned long long)m->pub.keys_migrated,
             (long long)m->pub.first_ask_us, (long long)m->pub.last_ask_us,
             (long long)m->pub.importing_us, (long long)m->pub.migrating_us,
             (long long)m->pub.flip_us);
}

void an_tl_stuck_refresh(an_analyzer *an, an_fnd *f)
{
    if (f->f.slot < 0 || f->f.slot >= AN_SLOTS)
        return;
    an_mig *m = an->migs[f->f.slot];
    if (m && an_fnd_at(an, m->finding) == f)
        stuck_fill(an, f, m);
}

/*
 * migration_stuck: a slot's migration window (from its first SETSLOT
 * IMPORTING/MIGRATING or ASK to the flip) lasted longer than
 * cfg.migration_stuck_us (default 60 s; severity error), or is still open at
 * the end of the capture (severity warning): an aborted or hung reshard. A
 * cluster-side finding: client "", node = the source, the slot. Checked at
 * each an_flush and at the end; once reported it follows its window (later
 * ASKs, the flip) and is emitted again when it changed. extra_latency_us: the
 * extra time of the slot's operations that ended while the window was open.
 * Evidence: the SETSLOT commands seen (IMPORTING, MIGRATING, NODE), the first
 * and last ASK replies for the slot with their connections and times, and a
 * "window" member with the times and counts (ASK, TRYAGAIN, MOVED, keys
 * migrated).
 */
void an_detect_migration_stuck(an_analyzer *an, an_mig *m, int64_t now_us, int at_end)
{
    int64_t start = window_start(m);
    if (m->aborted || !start)
        return;
    /* still open, as far as the capture shows: its flip goes first to the
     * target (SETSLOT NODE), and clients then go there; a capture that does
     * not cover the target (an_node_covered) may just not show it */
    if (!m->pub.complete && !m->stuck_reported && m->target != AN_NONE &&
        !an_node_covered(an, m->target, 0))
        return;
    m->judged_us = now_us;
    m->judged_at_end = (uint8_t)at_end;
    int64_t dur = window_end(m) - start;
    int too_long = dur > an->cfg.migration_stuck_us;
    if (m->stuck_reported) {
        an_fnd *f = an_fnd_at(an, m->finding);
        if (!f)
            return;
        if (too_long && f->f.severity < AN_ERROR)
            f->f.severity = AN_ERROR;
        if (!m->pub.complete || at_end)
            an_finding_touch(an, m->finding, 0); /* its duration grew */
        return;
    }
    if (!too_long && !(at_end && !m->pub.complete))
        return;
    m->stuck_reported = 1;
    int32_t i = an_finding_get(an, AN_MIGRATION_STUCK, "", m->source, m->pub.slot, 1);
    an_fnd *f = an_fnd_at(an, i);
    if (!f)
        return;
    m->finding = i;
    f->stale = 1;
    an_finding_set_span(an, i, &m->cost);
    int64_t last = m->pub.last_ask_us > window_end(m) ? m->pub.last_ask_us : window_end(m);
    if (last > f->f.last_us)
        f->f.last_us = last;
    an_finding_occur(an, i, start, too_long ? AN_ERROR : AN_WARNING, NULL, NULL, 0);
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
        an->slot_busy[s] &= (uint8_t)~AN_SLOT_MIG;
    }
}
