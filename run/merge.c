/*
 * merge.c - --threads 3 and more, on the calling thread: merge the workers'
 * event rings into the order one thread makes, and hand each event to the
 * analyzer's resp_sink.
 *
 * The order of events. One tracker, at record r, first closes the
 * connections that went idle (cap_tracker_time), oldest activity first (its
 * live list is kept in the order of each connection's latest record,
 * cap_conn.last_record), then runs record r itself. At the end it closes
 * what is left in the same order. So every event gets the key (record,
 * rank): rank is the connection's last_record for closes made by the clock
 * and at the end (record = KEY_END), and KEY_OWN, "after all of those", for
 * the events of the record itself, which only its own worker makes. Within
 * one worker the events come out already sorted; no two workers make
 * events with the same key; merging by key therefore restores the
 * one-thread order.
 *
 * When can the merger hand on the smallest head event, of record r? When
 * every other worker either has an event waiting (its key is larger) or has
 * finished record r (its watermark): nothing smaller can still come.
 *
 * The workers' trackers free and reuse their connections, so the analyzer
 * gets the merger's own copies instead, found by id in an open-addressing
 * map: made at the OPEN, given the counters after every record of the
 * connection while the analyzer's connection cap may be reached (EV_UPDATE,
 * or appended to the record's OPEN or COMMAND; see worker_hot in shard.c),
 * and the CLOSE's. The analyzer, evicting a connection still open at its
 * own cap, then writes the counters of that moment, as with one thread.
 * A copy also keeps the analyzer's conn_word (resp_sink.conn_word, asked
 * right after its conn_open as resp does) in its user, and each command
 * carries it as resp's would: the analyzer finds the connection without a
 * lookup and its quick path applies (it never did with --threads 3+).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "run/internal.h"

/* The analyzer's conn_word of a copy is kept in its user (unused there). */
_Static_assert(sizeof(void *) >= sizeof(uint64_t), "conn_word fits in cap_conn.user");

/* ---------------------------------------------------------------- merger: connections */

/* Slot of an id in the map (multiplicative hash, linear probing). */
static size_t map_home(const struct par *p, uint64_t id)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & p->map_mask;
}

/* Double the map. 0, or -1 out of memory. */
static int map_grow(struct par *p)
{
    size_t size = p->map_mask ? 2 * (p->map_mask + 1) : 1024;
    uint64_t *ids = calloc(size, sizeof *ids);
    cap_conn **conns = calloc(size, sizeof *conns);
    uint64_t *old_ids = p->map_ids;
    cap_conn **old_conns = p->map_conns;
    size_t old_size = p->map_mask ? p->map_mask + 1 : 0;
    if (!ids || !conns) {
        free(ids);
        free(conns);
        return -1;
    }
    p->map_ids = ids;
    p->map_conns = conns;
    p->map_mask = size - 1;
    for (size_t i = 0; i < old_size; i++) {
        size_t j;
        if (!old_ids[i])
            continue;
        for (j = map_home(p, old_ids[i]); ids[j]; j = (j + 1) & p->map_mask)
            ;
        ids[j] = old_ids[i];
        conns[j] = old_conns[i];
    }
    free(old_ids);
    free(old_conns);
    return 0;
}

/* The map slot holding id, or the empty slot where it would go. */
static size_t map_slot(const struct par *p, uint64_t id)
{
    size_t j = map_home(p, id);
    while (p->map_ids[j] && p->map_ids[j] != id)
        j = (j + 1) & p->map_mask;
    return j;
}

/* The copy of connection id, or NULL. */
static cap_conn *map_find(const struct par *p, uint64_t id)
{
    size_t j;
    if (!p->map_ids)
        return NULL;
    j = map_slot(p, id);
    return p->map_ids[j] ? p->map_conns[j] : NULL;
}

/* Remove id from the map, shifting later entries of its run back (linear
 * probing without tombstones). */
static void map_remove(struct par *p, uint64_t id)
{
    size_t i = map_slot(p, id), j = i;
    if (!p->map_ids[i])
        return;
    p->map_ids[i] = 0;
    p->map_used--;
    for (;;) {
        size_t home;
        j = (j + 1) & p->map_mask;
        if (!p->map_ids[j])
            return;
        home = map_home(p, p->map_ids[j]);
        /* Entry j may move to i unless its home lies cyclically in (i, j]. */
        if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
            continue;
        p->map_ids[i] = p->map_ids[j];
        p->map_conns[i] = p->map_conns[j];
        p->map_ids[j] = 0;
        i = j;
    }
}

/* A free connection copy (from blocks of 256). NULL out of memory. */
static cap_conn *conn_alloc(struct par *p)
{
    cap_conn *c = p->free_conns;
    if (!c) {
        cap_conn *block;
        if (p->n_blocks == p->blocks_cap) {
            size_t cap = p->blocks_cap ? 2 * p->blocks_cap : 16;
            void **b = realloc(p->blocks, cap * sizeof *b);
            if (!b)
                return NULL;
            p->blocks = b;
            p->blocks_cap = cap;
        }
        block = malloc(256 * sizeof *block);
        if (!block)
            return NULL;
        p->blocks[p->n_blocks++] = block;
        for (int i = 255; i >= 0; i--) {
            block[i].user = p->free_conns;
            p->free_conns = &block[i];
        }
        c = p->free_conns;
    }
    p->free_conns = c->user;
    return c;
}

/* OPEN: a copy of the connection that lives until its CLOSE, as the
 * tracker's own does with one thread. NULL out of memory. */
static cap_conn *conn_open_copy(struct par *p, const cap_conn *snap)
{
    size_t j;
    cap_conn *c;
    if ((p->map_used + 1) * 2 > (p->map_mask ? p->map_mask + 1 : 0) && map_grow(p) != 0)
        return NULL;
    j = map_slot(p, snap->id);
    if (p->map_ids[j]) {
        c = p->map_conns[j]; /* ids are never reused: not expected */
    } else {
        c = conn_alloc(p);
        if (!c)
            return NULL;
        p->map_ids[j] = snap->id;
        p->map_conns[j] = c;
        p->map_used++;
    }
    *c = *snap;
    c->user = NULL;
    if (snap->id == p->last_id)
        p->last_id = 0; /* it may have been looked up, and not found, before */
    return c;
}

/* CLOSE done: forget the copy. */
static void conn_close_copy(struct par *p, cap_conn *c)
{
    if (c->id == p->last_id)
        p->last_id = 0;
    map_remove(p, c->id);
    c->user = p->free_conns;
    p->free_conns = c;
}

/* ---------------------------------------------------------------- merger */

/* Worker w's next event, past a skipped ring end; NULL when none is
 * published. */
static const ev_hdr *head_event(worker *w)
{
    for (;;) {
        size_t phys, rest;
        const ev_hdr *h;
        if (w->m_tail == w->m_head)
            return NULL;
        phys = (size_t)(w->m_tail & (OUT_BYTES - 1));
        rest = OUT_BYTES - phys;
        if (rest < sizeof(ev_hdr)) {
            w->m_tail += rest; /* too short for a header: skipped */
            continue;
        }
        h = (const ev_hdr *)(w->ev + phys);
        if (h->kind != EV_SKIP)
            return h;
        w->m_tail += h->size;
    }
}

/* Unpack a command (w_command's layout) into p->cmd. */
static resp_command *unpack_command(struct par *p, worker *w, const uint8_t *in)
{
    resp_command *cmd = &p->cmd;
    uint8_t *dst = (uint8_t *)cmd;
    resp_request *r = &cmd->req;
    uint8_t kept[RESP_ARG_KEEP + 1];
    size_t texts;
    unsigned nargs;
    cmd_head head;
    memcpy(&head, in, sizeof head);
    in += sizeof head;
#define UNPACK_SPAN(from, to) memcpy(dst + (from), in, (to) - (from)); in += (to) - (from);
    CMD_SPANS(UNPACK_SPAN)
#undef UNPACK_SPAN
    nargs = text_lengths(r, kept, &texts); /* the lengths came with the spans */
    for (unsigned i = 0; i < nargs; i++) {
        copy_text(r->args[i], in, kept[i]);
        in += text_padded(kept[i]);
    }
    copy_text(r->key0, in, kept[nargs]);
    in += text_padded(kept[nargs]);
    if (head.errtext_len) /* errors and redirections are rare */
        memcpy(cmd->reply.errtext, in, head.errtext_len);
    if (head.errtext_len < RESP_ERRTEXT_MAX)
        cmd->reply.errtext[head.errtext_len] = 0;
    in += head.errtext_len;
    if (head.host_len)
        memcpy(cmd->reply.redir.host, in, head.host_len);
    if (head.host_len < sizeof cmd->reply.redir.host)
        cmd->reply.redir.host[head.host_len] = 0;
    if (head.conn_id != p->last_id) { /* pipelined commands: often the same */
        p->last_id = head.conn_id;
        p->last_conn = map_find(p, head.conn_id);
    }
    cmd->conn = p->last_conn;
    cmd->conn_word = p->last_conn ? (uint64_t)(uintptr_t)p->last_conn->user : 0;
    cmd->reply.raw = NULL;
    if (head.has_raw) {
        cmd->reply.raw = w->raw + (head.raw_off & (w->raw_size - 1));
        w->m_raw_tail = head.raw_off + cmd->reply.raw_len;
    }
    return cmd;
}

/* A bus message (w_bus's layout), decoded again from its bytes, to the
 * sink. */
static void deliver_bus(struct par *p, worker *w, const uint8_t *body)
{
    const resp_sink *s = &p->o.sink;
    bus_head head;
    bus_msg m;
    memcpy(&head, body, sizeof head);
    if (!head.has_raw)
        return;
    const uint8_t *raw = w->raw + (head.raw_off & (w->raw_size - 1));
    w->m_raw_tail = head.raw_off + head.raw_len;
    int rc = head.whole ? bus_decode(raw, head.raw_len, &m)
                        : bus_decode_header_only(raw, head.raw_len, &m);
    if (rc != 0 || !s->bus_message)
        return;
    m.raw = raw;
    m.raw_len = head.raw_len;
    if (head.conn_id != p->last_id) {
        p->last_id = head.conn_id;
        p->last_conn = map_find(p, head.conn_id);
    }
    if (p->last_conn)
        s->bus_message(s->ctx, p->last_conn, head.dir, &m, head.ts_us, head.frame);
}

/* A record's counters into the copy of its connection (see worker_update). */
static void take_counters(struct par *p, const ev_counters *u)
{
    if (u->conn_id != p->last_id) {
        p->last_id = u->conn_id;
        p->last_conn = map_find(p, u->conn_id);
    }
    if (!p->last_conn)
        return; /* its OPEN found no memory */
    memcpy((uint8_t *)p->last_conn + CONN_COUNTERS_OFF, u->counters, CONN_COUNTERS);
    p->last_conn->last_record = u->last_record;
}

/* Hand worker w's head event h to the analyzer. */
static void deliver(struct par *p, worker *w, const ev_hdr *h)
{
    const resp_sink *s = &p->o.sink;
    const uint8_t *body = (const uint8_t *)(h + 1);
    int64_t ts = h->ts_us;
    cap_conn *c;
    if (h->kind == EV_UPDATE) { /* no resp event: no periodic work either */
        if (!p->discard)
            take_counters(p, (const ev_counters *)body);
        w->m_tail += h->size;
        p->since_refresh++;
        return;
    }
    switch (p->discard ? EV_TIME : h->kind) {
    case EV_OPEN:
        c = conn_open_copy(p, (const cap_conn *)body);
        if (!c) {
            p->m_oom = 1;
            break;
        }
        if (s->conn_open)
            s->conn_open(s->ctx, c);
        if (s->conn_word) /* asked right after conn_open, as resp does */
            c->user = (void *)(uintptr_t)s->conn_word(s->ctx, c);
        break;
    case EV_COMMAND: {
        const resp_command *cmd = unpack_command(p, w, body);
        if (s->command)
            s->command(s->ctx, cmd);
        break;
    }
    case EV_BUS:
        deliver_bus(p, w, body);
        break;
    case EV_CLOSE:
        c = map_find(p, ((const cap_conn *)body)->id);
        if (!c)
            break; /* its OPEN found no memory */
        *c = *(const cap_conn *)body;
        if (s->conn_close)
            s->conn_close(s->ctx, c, (const resp_conn_stats *)(body + sizeof(cap_conn)));
        conn_close_copy(p, c);
        break;
    default:
        break;
    }
    if (h->counters && !p->discard) /* appended after the OPEN or COMMAND */
        take_counters(p, (const ev_counters *)((const uint8_t *)h + h->size - sizeof(ev_counters)));
    w->m_tail += h->size;
    p->m_record = h->record;
    p->since_refresh++;
    if (p->o.tick && !p->discard)
        p->o.tick(p->o.tick_ctx, ts);
}

/* Tell the workers which events are done with, and see what they published.
 * wait: sleep first if nothing new was published. */
static void merger_refresh(struct par *p, int wait)
{
    int changed = 0;
    pthread_mutex_lock(&p->mu);
    p->m_pub_record = p->m_record; /* for the workers' worker_hot */
    p->m_pub_open = p->map_used;
    for (;;) {
        for (unsigned i = 0; i < p->n; i++) {
            worker *w = &p->w[i];
            w->ev_tail = w->m_tail;
            w->raw_tail = w->m_raw_tail;
            if (w->space_waiting && w->m_tail >= w->wake_ev && w->m_raw_tail >= w->wake_raw)
                pthread_cond_signal(&w->space_cv);
            if (w->ev_published != w->m_head || w->watermark != w->m_watermark)
                changed = 1;
            w->m_head = w->ev_published;
            w->m_watermark = w->watermark;
        }
        if (changed || !wait)
            break;
        p->merger_waiting = 1;
        pthread_cond_wait(&p->out_cv, &p->mu);
        p->merger_waiting = 0;
        wait = 0; /* look again, then go back to merging */
    }
    pthread_mutex_unlock(&p->mu);
    p->since_refresh = 0;
    if (p->o.tick && !p->discard)
        p->o.tick(p->o.tick_ctx, 0);
}

/* The worker whose head event comes first in the one-thread order, if it
 * can be handed on now; NULL to wait. *idle: no worker has an event. */
static worker *next_worker(struct par *p, const ev_hdr **head, int *idle)
{
    worker *best = NULL;
    const ev_hdr *be = NULL;
    for (unsigned i = 0; i < p->n; i++) {
        worker *w = &p->w[i];
        const ev_hdr *e = head_event(w);
        if (!e)
            continue;
        if (!be || e->record < be->record || (e->record == be->record && e->rank < be->rank)) {
            best = w;
            be = e;
        }
    }
    *idle = best == NULL;
    *head = be;
    if (!best)
        return NULL;
    /* A worker with nothing waiting may still make an earlier event unless
     * it is past that record. */
    for (unsigned i = 0; i < p->n; i++) {
        worker *w = &p->w[i];
        if (w != best && w->m_tail == w->m_head && w->m_watermark < be->record)
            return NULL;
    }
    return best;
}

/* Key a < key b. */
static int key_less(uint64_t a_record, uint64_t a_rank, uint64_t b_record, uint64_t b_rank)
{
    return a_record < b_record || (a_record == b_record && a_rank < b_rank);
}

/* Hand on worker best's events, head h first, for as long as they come
 * before anything another worker has waiting or could still make: one
 * comparison an event instead of a look at every worker. */
static void deliver_run(struct par *p, worker *best, const ev_hdr *h)
{
    uint64_t bound_record = KEY_END, bound_rank = KEY_END;
    int bounded = 0;
    for (unsigned i = 0; i < p->n; i++) {
        worker *w = &p->w[i];
        const ev_hdr *e;
        uint64_t rec, rank;
        if (w == best)
            continue;
        e = head_event(w);
        if (e) {
            rec = e->record;
            rank = e->rank;
        } else if (w->m_watermark != KEY_END) {
            rec = w->m_watermark + 1; /* its next event is of a later record */
            rank = 0;
        } else {
            continue; /* finished, nothing left */
        }
        if (!bounded || key_less(rec, rank, bound_record, bound_rank)) {
            bound_record = rec;
            bound_rank = rank;
            bounded = 1;
        }
    }
    do {
        deliver(p, best, h);
        if (p->since_refresh >= MERGE_BATCH)
            return;
        h = head_event(best);
    } while (h && (!bounded || key_less(h->record, h->rank, bound_record, bound_rank)));
}

/* 1 when every worker has published everything up to `upto` and every
 * event was handed on. */
static int merged_upto(const struct par *p, uint64_t upto)
{
    for (unsigned i = 0; i < p->n; i++)
        if (p->w[i].m_watermark < upto || p->w[i].m_tail != p->w[i].m_head)
            return 0;
    return 1;
}

/* Merge until every event up to `upto` was handed on. final: upto is the end;
 * else the end of input (its record count is known once the reader is done). */
void merge(struct par *p, int final)
{
    for (;;) {
        int idle;
        const ev_hdr *h;
        worker *w = next_worker(p, &h, &idle);
        if (w) {
            deliver_run(p, w, h);
            if (p->since_refresh >= MERGE_BATCH)
                merger_refresh(p, 0);
            continue;
        }
        if (idle) {
            uint64_t upto = KEY_END;
            int eof;
            pthread_mutex_lock(&p->mu);
            eof = p->eof;
            if (!final)
                upto = p->published;
            pthread_mutex_unlock(&p->mu);
            if ((final || eof) && merged_upto(p, upto))
                return;
        }
        merger_refresh(p, 1);
    }
}
