/*
 * findings.c - aggregation of detector hits into findings, their evidence and
 * their emission.
 *
 * A finding is one kind of mishandling by one client (or the cluster) for one
 * node and slot: detectors report occurrences with an_finding_hit; the first
 * occurrences' commands are kept as evidence (JSON, capped at
 * AN_EVIDENCE_EVENTS events and AN_EVIDENCE_MAX bytes, the rest counted in
 * "omitted"). A finding is emitted when it first becomes visible (its count
 * reaches the detector's threshold) and again at an_flush / an_finish when it
 * has changed; its id is stable so a store can replace the earlier row.
 *
 * Some findings go on changing without new occurrences (a storm's later
 * retries, a stuck window's later ASKs): their detector keeps the state
 * (tally, note, tail event, the window) and marks them stale; the summary and
 * evidence are rebuilt from it once, just before the finding is emitted, so
 * nothing is formatted per command. (redirect_loop's summary is rewritten
 * once, when the looping operation it tells of ends: an_detect_loop_end.)
 *
 * Evidence shape:
 *   {"finding":"asking_missing","client":"127.0.0.5","node":"127.0.0.1:30102",
 *    "slot":1234,"frame_filter":"frame.number in {12,14}",
 *    "conn_filter":"(ip.addr==127.0.0.5 && tcp.port==40001)",
 *    "events":[{"what":"ask","ts_us":...,"conn":3,
 *    "src":"127.0.0.5:40001","dst":"127.0.0.1:30101","cmd":"GET","key":"k",
 *    "reply":"-ASK 1234 127.0.0.1:30102","req_frame":12,"reply_frame":14}, ...],
 *    "omitted":0}
 * req_frame is the record (frame number) of the request's first packet,
 * reply_frame the one of the reply's last packet (0: no reply).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

typedef struct fkey {
    an_finding_kind kind;
    const char *client;
    int32_t node;
    int32_t slot;
} fkey;

static uint64_t fkey_hash(const fkey *k)
{
    uint64_t h = an_hash_str(k->client, (uint64_t)k->kind * 1000003u);
    return an_mix64(h ^ an_mix64(((uint64_t)(uint32_t)k->node << 32) | (uint32_t)k->slot));
}

static int fkey_eq(const void *ctx, int32_t val, const void *key)
{
    const an_analyzer *an = ctx;
    const an_fnd *f = an->findings[val];
    const fkey *k = key;
    return f->f.kind == k->kind && f->node_idx == k->node && f->f.slot == k->slot &&
           strcmp(f->f.client, k->client) == 0;
}

/* Add a record number to the finding's frames (0 and repeats left out). */
static void note_frame(an_fnd *f, uint64_t frame)
{
    if (frame == 0)
        return;
    for (unsigned i = 0; i < f->nframes; i++)
        if (f->frames[i] == frame)
            return;
    if (f->nframes < sizeof f->frames / sizeof f->frames[0])
        f->frames[f->nframes++] = frame;
}

/* Remember what an evidence event points at: its records, its connection. */
static void note_capture_refs(an_fnd *f, const an_event *e)
{
    note_frame(f, e->req_frame);
    note_frame(f, e->reply_frame);
    if (!e->src || !e->src[0])
        return;
    for (unsigned i = 0; i < f->nconns; i++)
        if (strcmp(f->conns[i], e->src) == 0)
            return;
    if (f->nconns < sizeof f->conns / sizeof f->conns[0])
        an_copy_str(f->conns[f->nconns++], sizeof f->conns[0], e->src);
}

/* Append one event's JSON to the evidence body (or count it omitted). */
void an_finding_append_event(an_fnd *f, const an_event *e)
{
    if (f->events >= AN_EVIDENCE_EVENTS) {
        f->omitted++;
        return;
    }
    char tmp[1024];
    an_buf b = {tmp, 0, sizeof tmp, 0};
    tmp[0] = 0;
    an_event_json(&b, e, f->events > 0);
    if (b.cut || f->ev_len + b.len + 1 > sizeof f->ev) {
        f->omitted++;
        return;
    }
    memcpy(f->ev + f->ev_len, tmp, b.len + 1);
    f->ev_len += b.len;
    f->events++;
    note_capture_refs(f, e);
}

void an_finding_clear_events(an_fnd *f)
{
    f->ev[0] = 0;
    f->ev_len = 0;
    f->events = f->omitted = 0;
    f->has_tail = 0;
    f->nframes = f->nconns = 0;
}

void an_note_add_name(an_fnd *f, const char *name)
{
    size_t n = strlen(name), len = strlen(f->note);
    const char *p = f->note;
    while ((p = strstr(p, name)) != NULL) { /* already listed? (whole items) */
        if ((p == f->note || p[-1] == ' ') && (p[n] == ',' || p[n] == 0))
            return;
        p += n;
    }
    if (len >= 4 && strcmp(f->note + len - 4, " ...") == 0)
        return;
    if (len + (len ? 2 : 0) + n + 4 + 1 > sizeof f->note) {
        if (len + 4 < sizeof f->note)
            memcpy(f->note + len, " ...", 5); /* more than fits: say so */
        return;
    }
    snprintf(f->note + len, sizeof f->note - len, "%s%s", len ? ", " : "", name);
}

/* Count a newly visible finding for its client. */
static void count_for_client(an_analyzer *an, const char *client)
{
    if (!client[0])
        return;
    int32_t i = an_client_find(an, client);
    if (i != AN_NONE)
        an->clients[i].pub.findings++;
}

/* Let the detector rebuild what changed since the last emission. */
static void refresh(an_analyzer *an, an_fnd *f)
{
    f->stale = 0;
    if (f->f.kind == AN_TRYAGAIN_STORM)
        an_detect_storm_refresh(an, f);
    else if (f->f.kind == AN_MIGRATION_STUCK)
        an_tl_stuck_refresh(an, f);
}

/* The display filters of a finding's evidence (an_finding.frame_filter,
 * conn_filter): the records of its events, in increasing order, and the
 * connections of their client endpoints. */
static void build_filters(const an_fnd *f, char *frames, size_t fsize, char *conns,
                          size_t csize)
{
    uint64_t fr[2 * AN_EVIDENCE_EVENTS + 2];
    size_t n = 0;
    an_buf b = {frames, 0, fsize, 0};
    for (unsigned i = 0; i < f->nframes; i++)
        fr[n++] = f->frames[i];
    if (f->has_tail) {
        fr[n++] = f->tail.req_frame;
        fr[n++] = f->tail.reply_frame;
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: at most 18 */
        for (size_t j = i; j > 0 && fr[j - 1] > fr[j]; j--) {
            uint64_t t = fr[j];
            fr[j] = fr[j - 1];
            fr[j - 1] = t;
        }
    frames[0] = 0;
    for (size_t i = 0, k = 0; i < n; i++) {
        if (fr[i] == 0 || (i > 0 && fr[i] == fr[i - 1]))
            continue;
        an_buf_printf(&b, "%s%llu", k++ ? "," : "frame.number in {", (unsigned long long)fr[i]);
    }
    if (b.len)
        an_buf_put(&b, "}");
    if (b.cut)
        frames[0] = 0;
    b = (an_buf){conns, 0, csize, 0};
    conns[0] = 0;
    for (unsigned i = 0; i < f->nconns + (f->has_tail ? 1u : 0u); i++) {
        const char *ep = i < f->nconns ? f->conns[i] : f->tail.src;
        cap_endpoint e;
        char host[CAP_ENDPOINT_STRLEN];
        int seen = 0;
        for (unsigned j = 0; j < f->nconns && i == f->nconns; j++)
            seen |= strcmp(f->conns[j], ep) == 0;
        if (seen)
            continue;
        if (cap_endpoint_parse(ep, &e) == 0) {
            cap_addr_format(&e.addr, host, sizeof host);
            an_buf_printf(&b, "%s(%s==%s && tcp.port==%u)", b.len ? " || " : "",
                          e.addr.family == 6 ? "ipv6.addr" : "ip.addr", host, (unsigned)e.port);
        } else if (cap_addr_parse(ep, &e.addr) == 0) { /* its connection is gone: the host */
            an_buf_printf(&b, "%s(%s==%s)", b.len ? " || " : "",
                          e.addr.family == 6 ? "ipv6.addr" : "ip.addr", ep);
        }
    }
    if (b.cut)
        conns[0] = 0;
}

static void emit_one(an_analyzer *an, an_fnd *f)
{
    if (f->stale)
        refresh(an, f);
    f->dirty = 0;
    if (!an->sink.finding)
        return;
    char text[AN_EVIDENCE_MAX + 3072];
    char frames[20 * (2 * AN_EVIDENCE_EVENTS + 2) + 32], conns[5 * (AN_NAME_MAX + 40)];
    build_filters(f, frames, sizeof frames, conns, sizeof conns);
    an_buf b = {text, 0, sizeof text, 0};
    text[0] = 0;
    an_buf_put(&b, "{\"finding\":");
    an_buf_json_str(&b, an_finding_name(f->f.kind), strlen(an_finding_name(f->f.kind)));
    an_buf_put(&b, ",\"client\":");
    an_buf_json_str(&b, f->f.client, strlen(f->f.client));
    an_buf_put(&b, ",\"node\":");
    an_buf_json_str(&b, f->f.node, strlen(f->f.node));
    an_buf_printf(&b, ",\"slot\":%d", (int)f->f.slot);
    an_buf_put(&b, f->extra);
    an_buf_put(&b, ",\"frame_filter\":");
    an_buf_json_str(&b, frames, strlen(frames));
    an_buf_put(&b, ",\"conn_filter\":");
    an_buf_json_str(&b, conns, strlen(conns));
    an_buf_put(&b, ",\"events\":[");
    an_buf_put(&b, f->ev);
    if (f->has_tail) {
        an_event e;
        memset(&e, 0, sizeof e);
        e.what = f->tail.what;
        e.ts_us = f->tail.ts_us;
        e.conn = f->tail.conn;
        e.src = f->tail.src;
        e.dst = f->tail.dst;
        e.cmd = f->tail.cmd;
        e.key = f->tail.key;
        e.key_len = strlen(f->tail.key);
        e.reply = f->tail.reply;
        e.req_frame = f->tail.req_frame;
        e.reply_frame = f->tail.reply_frame;
        an_event_json(&b, &e, f->events > 0);
    }
    an_buf_printf(&b, "],\"omitted\":%u}", f->omitted);
    if (b.cut) /* cannot happen with the sizes above; stay valid JSON anyway */
        snprintf(text, sizeof text, "{\"finding\":\"%s\",\"events\":[],\"omitted\":%u}",
                 an_finding_name(f->f.kind), f->events + f->omitted + f->has_tail);
    f->f.evidence = text;
    f->f.frame_filter = frames;
    f->f.conn_filter = conns;
    an->sink.finding(an->sink.ctx, &f->f);
    f->f.evidence = NULL;
    f->f.frame_filter = f->f.conn_filter = NULL;
}

int32_t an_finding_get(an_analyzer *an, an_finding_kind kind, const char *client, int32_t node,
                       int32_t slot, uint32_t min_count)
{
    fkey k = {kind, client ? client : "", node, slot};
    uint64_t h = fkey_hash(&k);
    int32_t i = an_map_find(&an->finding_map, h, fkey_eq, an, &k);
    if (i != AN_NONE)
        return i;
    if (an->nfindings >= an->cfg.max_findings) {
        an->st.dropped_findings++;
        return AN_NONE;
    }
    an_fnd *f = calloc(1, sizeof *f);
    if (!f) {
        an->st.dropped_findings++;
        return AN_NONE;
    }
    i = (int32_t)an->nfindings++;
    an->findings[i] = f;
    an_map_put(&an->finding_map, h, i);
    f->f.kind = kind;
    f->f.severity = an_finding_severity(kind);
    an_copy_str(f->f.client, sizeof f->f.client, k.client);
    an_copy_str(f->f.node, sizeof f->f.node, an_node_name(an, node));
    f->node_idx = node;
    f->f.slot = slot;
    f->min_count = min_count ? min_count : 1;
    return i;
}

an_fnd *an_fnd_at(an_analyzer *an, int32_t idx)
{
    if (idx < 0 || (uint32_t)idx >= an->nfindings)
        return NULL;
    return an->findings[idx];
}

void an_finding_occur(an_analyzer *an, int32_t idx, int64_t ts_us, an_severity sev,
                      const char *summary, const an_event *ev, size_t nev)
{
    an_fnd *f = an_fnd_at(an, idx);
    if (!f)
        return;
    if (f->f.count == 0 || ts_us < f->f.first_us)
        f->f.first_us = ts_us;
    if (ts_us > f->f.last_us)
        f->f.last_us = ts_us;
    f->f.count++;
    if (sev && sev > f->f.severity)
        f->f.severity = sev;
    /* the summary tells of the first occurrence, as the first evidence event
     * does (later occurrences only add evidence) */
    if (summary && f->f.count == 1)
        an_copy_str(f->f.summary, sizeof f->f.summary, summary);
    for (size_t e = 0; ev && e < nev; e++)
        an_finding_append_event(f, &ev[e]);
    if (!f->visible && f->f.count >= f->min_count) {
        f->visible = 1;
        f->f.id = ++an->finding_seq;
        an->st.findings++;
        count_for_client(an, f->f.client);
        emit_one(an, f);
    } else if (f->visible) {
        f->dirty = 1;
    }
}

int32_t an_finding_hit(an_analyzer *an, an_finding_kind kind, const char *client,
                       int32_t node, int32_t slot, int64_t ts_us, uint32_t min_count,
                       const char *summary, const an_event *ev, size_t nev)
{
    return an_finding_hit_sev(an, kind, 0, client, node, slot, ts_us, min_count, summary, ev,
                              nev);
}

int32_t an_finding_hit_sev(an_analyzer *an, an_finding_kind kind, an_severity sev,
                           const char *client, int32_t node, int32_t slot, int64_t ts_us,
                           uint32_t min_count, const char *summary, const an_event *ev,
                           size_t nev)
{
    int32_t i = an_finding_get(an, kind, client, node, slot, min_count);
    if (i != AN_NONE)
        an_finding_occur(an, i, ts_us, sev, summary, ev, nev);
    return i;
}

void an_finding_touch(an_analyzer *an, int32_t idx, int64_t ts_us)
{
    an_fnd *f = an_fnd_at(an, idx);
    if (!f)
        return;
    if (ts_us > f->f.last_us)
        f->f.last_us = ts_us;
    f->stale = 1;
    if (f->visible)
        f->dirty = 1;
}

void an_finding_set_tail(an_analyzer *an, int32_t idx, const an_event *e)
{
    an_fnd *f = an_fnd_at(an, idx);
    if (!f)
        return;
    an_evcopy_set(&f->tail, e);
    f->has_tail = 1;
    if (f->visible)
        f->dirty = 1;
}

void an_finding_add_latency(an_analyzer *an, int32_t idx, int64_t from_us, int64_t to_us)
{
    if (idx < 0 || (uint32_t)idx >= an->nfindings || to_us <= from_us)
        return;
    an_fnd *f = an->findings[idx];
    if (an_span_add(&f->cost, from_us, to_us) == 0)
        return;
    f->f.extra_latency_us = f->cost.total;
    if (f->visible)
        f->dirty = 1;
}

void an_finding_set_span(an_analyzer *an, int32_t idx, const an_span *s)
{
    an_fnd *f = an_fnd_at(an, idx);
    if (!f)
        return;
    f->cost = *s;
    f->f.extra_latency_us = s->total;
    if (f->visible)
        f->dirty = 1;
}

void an_finding_add_operation(an_analyzer *an, int32_t idx, int64_t from_us, int64_t to_us)
{
    if (idx < 0 || (uint32_t)idx >= an->nfindings)
        return;
    an_fnd *f = an->findings[idx];
    f->f.operations++;
    if (f->visible)
        f->dirty = 1;
    an_finding_add_latency(an, idx, from_us, to_us);
}

void an_findings_emit(an_analyzer *an, int all)
{
    for (uint32_t i = 0; i < an->nfindings; i++) {
        an_fnd *f = an->findings[i];
        if (f->visible && (f->dirty || all))
            emit_one(an, f);
    }
}

void an_findings_free(an_analyzer *an)
{
    if (!an->findings)
        return;
    for (uint32_t i = 0; i < an->nfindings; i++)
        free(an->findings[i]);
}

/* ---------------------------------------------------------------- events */

void an_event_json(an_buf *b, const an_event *e, int comma)
{
    an_buf_put(b, comma ? ",{\"what\":" : "{\"what\":");
    an_buf_json_str(b, e->what ? e->what : "", e->what ? strlen(e->what) : 0);
    an_buf_printf(b, ",\"ts_us\":%lld,\"conn\":%llu,\"src\":", (long long)e->ts_us,
                  (unsigned long long)e->conn);
    an_buf_json_str(b, e->src ? e->src : "", e->src ? strlen(e->src) : 0);
    an_buf_put(b, ",\"dst\":");
    an_buf_json_str(b, e->dst ? e->dst : "", e->dst ? strlen(e->dst) : 0);
    an_buf_put(b, ",\"cmd\":");
    an_buf_json_str(b, e->cmd ? e->cmd : "", e->cmd ? strlen(e->cmd) : 0);
    an_buf_put(b, ",\"key\":");
    an_buf_json_str(b, e->key ? e->key : "", e->key ? e->key_len : 0);
    an_buf_put(b, ",\"reply\":");
    an_buf_json_str(b, e->reply ? e->reply : "", e->reply ? strlen(e->reply) : 0);
    an_buf_printf(b, ",\"req_frame\":%llu,\"reply_frame\":%llu}",
                  (unsigned long long)e->req_frame, (unsigned long long)e->reply_frame);
}

/* Copy at most n bytes of s (NULL: "") into dst of size dn, NUL-terminated. */
static void copy_text(char *dst, size_t dn, const char *s, size_t n)
{
    if (!s)
        n = 0;
    if (n >= dn)
        n = dn - 1;
    if (n)
        memcpy(dst, s, n);
    dst[n] = 0;
}

void an_evcopy_set(an_evcopy *d, const an_event *e)
{
    copy_text(d->what, sizeof d->what, e->what, e->what ? strlen(e->what) : 0);
    d->ts_us = e->ts_us;
    d->conn = e->conn;
    copy_text(d->src, sizeof d->src, e->src, e->src ? strlen(e->src) : 0);
    copy_text(d->dst, sizeof d->dst, e->dst, e->dst ? strlen(e->dst) : 0);
    copy_text(d->cmd, sizeof d->cmd, e->cmd, e->cmd ? strlen(e->cmd) : 0);
    copy_text(d->key, sizeof d->key, e->key, e->key ? e->key_len : 0);
    copy_text(d->reply, sizeof d->reply, e->reply, e->reply ? strlen(e->reply) : 0);
    d->req_frame = e->req_frame;
    d->reply_frame = e->reply_frame;
}

void an_event_from(an_event *e, an_cmdctx *x, const char *what)
{
    memset(e, 0, sizeof *e);
    e->what = what;
    e->ts_us = x->cmd->req.start_us;
    e->conn = x->cn->id;
    e->src = x->cn->src;
    e->dst = x->cn->dst;
    e->cmd = x->cmd->req.name;
    e->key = an_cmd_key(x);
    e->key_len = x->key_len;
    e->reply = an_reply_text(x);
    e->req_frame = x->cmd->req.start_frame;
    e->reply_frame = x->cmd->reply.end_frame;
}

void an_event_from_attempt(an_analyzer *an, an_event *e, const an_op *op, const an_attempt *t,
                           const char *what, an_evtext *buf)
{
    char *reply_buf = buf->reply;
    size_t reply_size = sizeof buf->reply;
    memset(e, 0, sizeof *e);
    e->what = what;
    e->ts_us = t->start_us;
    e->conn = t->conn;
    e->req_frame = t->req_frame;
    e->reply_frame = t->reply_frame;
    e->src = "";
    if (op) {
        /* the connection's endpoint, also when it has closed since */
        cap_endpoint ep = {op->host, t->cport};
        const char *live = an_conn_src(an, t->conn, AN_NONE);
        if (live)
            e->src = live;
        else if (t->cport && cap_endpoint_format(&ep, buf->src, sizeof buf->src))
            e->src = buf->src;
        else
            e->src = an_client_name(an, op->client);
    }
    e->dst = an_node_name(an, t->node);
    e->cmd = op ? op->name : "";
    e->key = op ? op->key_text : "";
    e->key_len = op ? strlen(op->key_text) : 0;
    if (t->reply == RESP_ERR_MOVED || t->reply == RESP_ERR_ASK)
        snprintf(reply_buf, reply_size, "-%s %d %s", resp_err_name((resp_err_class)t->reply),
                 op ? (int)op->slot : -1, an_node_name(an, t->target));
    else if (t->reply != RESP_ERR_NONE)
        snprintf(reply_buf, reply_size, "-%s", resp_err_name((resp_err_class)t->reply));
    else
        snprintf(reply_buf, reply_size, "(ok)");
    e->reply = reply_buf;
}
