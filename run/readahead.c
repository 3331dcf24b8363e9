/*
 * readahead.c - --threads 2: the tracker on the reader thread, resp and the
 * analysis on the calling thread, which replays the tracker's events in
 * order: the results of one thread by construction, caps included.
 *
 * The tracker's events cross in the event ring, each as it was made: an
 * OPEN and a CLOSE with the connection as it is then, a DATA with its bytes
 * (or a pointer to them, chunks.c), a GAP with its length. The tracker
 * frees (and reuses) a connection after its CLOSE and writes its counters
 * at every record, so the calling thread never touches it: it keeps copies
 * of the open connections, which resp and the analyzer get instead (resp
 * hangs its state on copy->user). A copy is made at the OPEN, takes the
 * CLOSE's counters, and after every record that was a segment of its
 * connection takes the counters of then (RA_UPDATE, or appended to the
 * record's DATA): the analyzer, evicting a connection at its own cap,
 * writes the counters of that moment, as with one thread. Counters taken
 * after the record are exact because nothing reads a connection's counters
 * during its own record's events: the analyzer reads them at its CLOSE
 * (which carries them) and when it evicts it for another connection's OPEN
 * or command, and one record is a segment of one connection only.
 *
 * The reader numbers the open connections with small slots (in
 * cap_conn.user of its tracker's connections, which nothing else uses
 * there): the copy of slot i is the calling thread's copies[i], found
 * without a lookup. A slot is reused only after its CLOSE, which the
 * calling thread replays first.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "run/internal.h"

#define RA_BLOCK 256u              /* copies allocated at once */
#define RA_SHOW_EVERY 256u         /* events replayed between showing the tail */
#define RA_SHOW_REF_BYTES (256u << 10) /* ... or referenced bytes replayed */

typedef enum ra_kind {
    RA_OPEN = CAP_EV_OPEN,         /* body: cap_conn */
    RA_DATA = CAP_EV_DATA,         /* body: len bytes */
    RA_GAP = CAP_EV_GAP,           /* no body; arg: gap_len */
    RA_CLOSE = CAP_EV_CLOSE,       /* body: cap_conn */
    RA_UPDATE,                     /* body: the counters (CONN_COUNTERS); arg: last_record */
    RA_DATA_REF,                   /* DATA, body: where its len bytes lie (a pointer) */
    RA_SKIP                        /* the rest of the ring is unused */
} ra_kind;

/* An event in the read-ahead ring: this header, then its body. */
struct ra_ev {
    uint32_t size;                 /* header and body, a multiple of EV_ALIGN */
    uint8_t kind;                  /* an ra_kind */
    uint8_t dir;                   /* the cap_event's dir */
    uint8_t reason;                /* CLOSE: a cap_close_reason; DATA (_REF):
                                      the cap_event's has_ack; GAP: its
                                      before_peer */
    uint8_t counters;              /* DATA (_REF): RA_UPDATE's body follows the
                                      body (padded), arg is last_record */
    uint32_t slot;                 /* the connection's slot */
    uint32_t len;                  /* DATA: bytes that follow (_REF: referenced) */
    int64_t ts_us;
    uint64_t frame;                /* the cap_event's frame */
    uint64_t index;                /* the cap_event's index */
    uint64_t arg;                  /* GAP: gap_len; UPDATE: last_record */
    int32_t ack_ahead;             /* DATA (_REF): the cap_event's ack_ahead */
};


/* The slot the reader gave conn (its user is slot + 1); UINT32_MAX: none
 * (no memory for it). */
static uint32_t ra_slot_of(const cap_conn *conn)
{
    return conn->user ? (uint32_t)((uintptr_t)conn->user - 1) : UINT32_MAX;
}

/* A free slot for a connection opening (reader). 0, or -1 out of memory. */
static int ra_slot_take(struct par *p, uint32_t *slot)
{
    if (p->ra_n_free > 0) {
        *slot = p->ra_free[--p->ra_n_free];
        return 0;
    }
    if ((p->ra_slots & (RA_BLOCK - 1)) == 0) {
        /* the stack holds every slot at most: grow it with them */
        uint32_t *f = realloc(p->ra_free, (p->ra_slots + RA_BLOCK) * sizeof *f);
        if (!f)
            return -1;
        p->ra_free = f;
    }
    *slot = p->ra_slots++;
    return 0;
}


/* Wait until the calling thread has freed room for `need` more bytes
 * (reader). Publishes what was written first. */
static void ra_wait_room(struct par *p, size_t need)
{
    reader_show(p);
    pthread_mutex_lock(&p->mu);
    /* woken once half the ring is free: the calling thread has the other
     * half in hand while the reader gets its core back */
    p->ra_wake_at = wake_tail(p->ra_head, need + p->ra_size / 4, p->ra_size, p->ra_head);
    while (p->ra_head + need - p->ra_tail > p->ra_size) {
        p->reader_waiting = 1;
        pthread_cond_wait(&p->room_cv, &p->mu);
        p->reader_waiting = 0;
    }
    p->ra_tail_seen = p->ra_tail;
    pthread_mutex_unlock(&p->mu);
}

/* Make the ring at least 2 * size, once the calling thread is done with
 * everything in it. 0, or -1 out of memory. */
static int ra_grow(struct par *p, size_t size)
{
    size_t want = pow2_at_least(2 * size);
    uint8_t *r;
    if (p->ra_head != p->ra_tail_seen)
        ra_wait_room(p, p->ra_size); /* all of it: the ring empty */
    r = malloc(want);
    if (!r)
        return -1;
    pthread_mutex_lock(&p->mu);
    free(p->ra_ring);
    p->ra_ring = r;
    p->ra_size = want;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* Room for an event of size bytes (a multiple of EV_ALIGN), contiguous in
 * the ring, its header filled in (reader). NULL out of memory. */
static ra_ev *ra_begin(struct par *p, ra_kind kind, uint32_t slot, const cap_event *ev,
                       size_t size)
{
    size_t phys, rest;
    ra_ev *h;
    if (size > p->ra_size / 2 && ra_grow(p, size) != 0)
        return NULL;
    phys = (size_t)(p->ra_head & (p->ra_size - 1));
    rest = p->ra_size - phys;
    if (size > rest) {
        /* Skip the end of the ring: events stay contiguous. */
        if (p->ra_head + rest + size - p->ra_tail_seen > p->ra_size)
            ra_wait_room(p, rest + size);
        if (rest >= sizeof(ra_ev)) {
            h = (ra_ev *)(p->ra_ring + phys);
            h->kind = RA_SKIP;
            h->size = (uint32_t)rest;
        }
        p->ra_head += rest;
        phys = 0;
    } else if (p->ra_head + size - p->ra_tail_seen > p->ra_size) {
        ra_wait_room(p, size);
    }
    h = (ra_ev *)(p->ra_ring + phys);
    p->ra_last = h;
    p->ra_last_at = p->ra_head;
    memset(h, 0, sizeof *h);
    h->size = (uint32_t)size;
    h->kind = (uint8_t)kind;
    h->slot = slot;
    if (ev) {
        h->dir = (uint8_t)ev->dir;
        h->reason = (uint8_t)ev->reason;
        h->ts_us = ev->ts_us;
        h->frame = ev->frame;
        h->index = ev->index;
    }
    return h;
}

static void ra_replay_from(struct par *p, uint64_t from);

/* The event is written. Joined (the end of input, on the calling thread):
 * replay it now. */
static void ra_end(struct par *p, const ra_ev *h)
{
    uint64_t from = p->ra_head;
    p->ra_head += h->size;
    if (p->ra_direct) {
        ra_replay_from(p, from);
        p->ra_tail_seen = p->ra_tail = p->ra_head;
    }
}

/* The reader ran out of memory: stop reading (par_run reports it). */
static void ra_oom(struct par *p)
{
    p->rd_oom = 1;
    if (!p->ra_direct)
        cap_source_break(p->src);
}

/* cap_config.await_proofs of the reader's tracker: what resp proves about
 * servers (resp/proofs.c) is noted on the calling thread as it replays, so
 * the reader, about to orient a connection picked up mid-stream at record
 * `before` by those proofs, first waits until the calling thread replayed
 * every event written so far, and with them every event of the records
 * below `before` (the stamps leave out what the record itself proves).
 * Only the first packet of such a connection waits. Joined: each event was
 * replayed as written. */
void ra_await_proofs(void *ctx, uint64_t before)
{
    struct par *p = ctx;
    (void)before;
    if (p->ra_direct)
        return;
    reader_show(p);
    pthread_mutex_lock(&p->mu);
    p->ra_wake_at = p->ra_head;
    while (p->ra_tail < p->ra_head) {
        p->reader_waiting = 1;
        pthread_cond_wait(&p->room_cv, &p->mu);
        p->reader_waiting = 0;
    }
    p->ra_tail_seen = p->ra_tail;
    pthread_mutex_unlock(&p->mu);
}

/* OPEN and CLOSE: the connection as it is now. */
static void ra_conn_event(struct par *p, const cap_event *ev, uint32_t slot)
{
    ra_ev *h = ra_begin(p, (ra_kind)ev->kind, slot, ev, ev_round(sizeof(ra_ev) + sizeof(cap_conn)));
    cap_conn *c;
    if (!h) {
        ra_oom(p);
        return;
    }
    c = (cap_conn *)(h + 1);
    *c = *ev->conn;
    c->user = NULL;
    ra_end(p, h);
}

/* Whether a DATA's bytes lie in the record being tracked, which the source
 * keeps (chunks.c): then they cross as a pointer. */
static int ra_in_record(const struct par *p, const cap_event *ev)
{
    uintptr_t d = (uintptr_t)ev->data;
    return ev->len > 0 && d >= p->ra_rec_lo && d < p->ra_rec_hi &&
           ev->len <= p->ra_rec_hi - d;
}

/* The tracker's callback, on the reader thread (joined: on the calling
 * thread): the event into the ring. */
void ra_on_event(void *ctx, const cap_event *ev)
{
    struct par *p = ctx;
    uint32_t slot;
    ra_ev *h;
    if (ev->kind == CAP_EV_OPEN) {
        if (ra_slot_take(p, &slot) != 0) {
            ra_oom(p); /* no slot: its events are left out */
            return;
        }
        ev->conn->user = (void *)((uintptr_t)slot + 1);
    }
    slot = ra_slot_of(ev->conn);
    if (slot == UINT32_MAX)
        return;
    switch (ev->kind) {
    case CAP_EV_OPEN:
        ra_conn_event(p, ev, slot);
        break;
    case CAP_EV_DATA:
        if (ra_in_record(p, ev)) {
            h = ra_begin(p, RA_DATA_REF, slot, ev, ev_round(sizeof(ra_ev) + sizeof ev->data));
            if (h)
                memcpy(h + 1, &ev->data, sizeof ev->data);
        } else {
            h = ra_begin(p, RA_DATA, slot, ev, ev_round(sizeof(ra_ev) + ev->len));
            if (h)
                memcpy(h + 1, ev->data, ev->len);
        }
        if (!h) {
            ra_oom(p);
            return;
        }
        h->len = (uint32_t)ev->len;
        h->reason = ev->has_ack;
        h->ack_ahead = ev->ack_ahead;
        ra_end(p, h);
        break;
    case CAP_EV_GAP:
        h = ra_begin(p, RA_GAP, slot, ev, sizeof(ra_ev));
        if (!h) {
            ra_oom(p);
            return;
        }
        h->arg = ev->gap_len;
        h->reason = ev->before_peer;
        ra_end(p, h);
        break;
    case CAP_EV_CLOSE:
        ra_conn_event(p, ev, slot);
        p->ra_free[p->ra_n_free++] = slot; /* the tracker clears user */
        break;
    }
}

/* Append the counters of c to the record's latest event when that is a
 * DATA of the same connection not yet published, with room right after it
 * in the ring: 1, or 0 (an RA_UPDATE it is). Most records make one DATA:
 * one event per record instead of two. */
static int ra_update_in_data(struct par *p, const cap_conn *c, uint32_t slot)
{
    ra_ev *h = p->ra_last;
    size_t phys = (size_t)(p->ra_head & (p->ra_size - 1));
    size_t need = ev_round(CONN_COUNTERS);
    if (!h || (h->kind != RA_DATA && h->kind != RA_DATA_REF) || h->slot != slot ||
        p->ra_last_at < p->ra_shown ||
        phys == 0 || phys + need > p->ra_size ||
        p->ra_head + need - p->ra_tail_seen > p->ra_size)
        return 0;
    memcpy(p->ra_ring + phys, (const uint8_t *)c + CONN_COUNTERS_OFF, CONN_COUNTERS);
    h->counters = 1;
    h->arg = c->last_record;
    h->size += (uint32_t)need;
    p->ra_head += need;
    return 1;
}

/* After a record: the counters of the connection it was a segment of. */
static void ra_update(struct par *p)
{
    const cap_conn *c = cap_tracker_touched(p->ra_tracker);
    uint32_t slot;
    ra_ev *h;
    if (!c || (slot = ra_slot_of(c)) == UINT32_MAX || ra_update_in_data(p, c, slot))
        return;
    h = ra_begin(p, RA_UPDATE, slot, NULL, ev_round(sizeof(ra_ev) + CONN_COUNTERS));
    if (!h) {
        ra_oom(p);
        return;
    }
    h->arg = c->last_record;
    memcpy(h + 1, (const uint8_t *)c + CONN_COUNTERS_OFF, CONN_COUNTERS);
    ra_end(p, h);
}

/* cap_record_fn of read-ahead: the record through the tracker (NULL: a live
 * read returned, hand on what there is). */
void ra_record(void *ctx, const cap_record *rec)
{
    struct par *p = ctx;
    if (!rec) {
        if (p->ra_head != p->ra_shown)
            reader_show(p);
        else
            reader_beat(p);
        return;
    }
    p->rd_pos++;
    p->ra_last = NULL;
    if (p->ra_keep) { /* its bytes may cross as references */
        p->ra_rec_lo = (uintptr_t)rec->data;
        p->ra_rec_hi = p->ra_rec_lo + rec->caplen;
    }
    cap_tracker_packet_at(p->ra_tracker, p->rd_pos, rec->linktype, rec->ts_us, rec->data,
                          rec->caplen, rec->wirelen);
    p->ra_rec_lo = p->ra_rec_hi = 0; /* events made later (the end) copy */
    ra_update(p);
    if (p->rd_pos - p->rd_shown >= IN_BATCH || p->ra_head - p->ra_shown >= p->ra_size / 4)
        reader_show(p);
}

/* The calling thread's copy of slot; create: make room for it (OPEN).
 * NULL when there is none (its OPEN found no memory). */
static cap_conn *ra_copy(struct par *p, uint32_t slot, int create)
{
    size_t b = slot / RA_BLOCK;
    if (b >= p->ra_n_blocks || !p->ra_copies[b]) {
        cap_conn **blocks;
        if (!create)
            return NULL;
        if (b >= p->ra_n_blocks) {
            blocks = realloc(p->ra_copies, (b + 1) * sizeof *blocks);
            if (!blocks)
                return NULL;
            for (size_t i = p->ra_n_blocks; i <= b; i++)
                blocks[i] = NULL;
            p->ra_copies = blocks;
            p->ra_n_blocks = b + 1;
        }
        p->ra_copies[b] = malloc(RA_BLOCK * sizeof(cap_conn));
        if (!p->ra_copies[b])
            return NULL;
    }
    return &p->ra_copies[b][slot % RA_BLOCK];
}

/* Replay one event: to resp, as the tracker's callback does with one
 * thread, then the periodic work. */
static void ra_replay(struct par *p, const ra_ev *h)
{
    const uint8_t *body = (const uint8_t *)(h + 1);
    cap_conn *c = ra_copy(p, h->slot, h->kind == RA_OPEN);
    cap_event ev;
    void *user;
    if (!c) {
        if (h->kind == RA_OPEN)
            p->m_oom = 1;
        return;
    }
    if (h->kind == RA_UPDATE) {
        memcpy((uint8_t *)c + CONN_COUNTERS_OFF, body, CONN_COUNTERS);
        c->last_record = h->arg;
        return;
    }
    memset(&ev, 0, sizeof ev);
    ev.kind = (cap_ev_kind)h->kind;
    ev.conn = c;
    ev.dir = (cap_dir)h->dir;
    ev.ts_us = h->ts_us;
    ev.frame = h->frame;
    ev.index = h->index;
    switch (h->kind) {
    case RA_OPEN:
    case RA_CLOSE:
        user = h->kind == RA_OPEN ? NULL : c->user; /* resp's state stays */
        memcpy(c, body, sizeof *c);
        c->user = user;
        ev.reason = (cap_close_reason)h->reason;
        break;
    case RA_DATA:
        ev.data = body;
        ev.len = h->len;
        ev.has_ack = h->reason;
        ev.ack_ahead = h->ack_ahead;
        break;
    case RA_DATA_REF:
        ev.kind = CAP_EV_DATA;
        memcpy(&ev.data, body, sizeof ev.data);
        ev.len = h->len;
        ev.has_ack = h->reason;
        ev.ack_ahead = h->ack_ahead;
        break;
    case RA_GAP:
        ev.gap_len = h->arg;
        ev.before_peer = h->reason;
        break;
    default:
        return;
    }
    resp_on_capture_event(p->w[0].rp, &ev);
    if (p->o.tick)
        p->o.tick(p->o.tick_ctx, ev.ts_us);
    if (h->counters) { /* see ra_update_in_data */
        size_t at = ev_round(h->kind == RA_DATA ? h->len : sizeof ev.data);
        memcpy((uint8_t *)c + CONN_COUNTERS_OFF, body + at, CONN_COUNTERS);
        c->last_record = h->arg;
    }
}

/* The event at ring position *pos, past a skipped ring end, moving *pos past
 * it; NULL when none is left before end. */
static const ra_ev *ra_next(const uint8_t *ring, size_t size, uint64_t *pos, uint64_t end)
{
    while (*pos < end) {
        size_t phys = (size_t)(*pos & (size - 1));
        size_t rest = size - phys;
        const ra_ev *h;
        if (rest < sizeof(ra_ev)) {
            *pos += rest; /* too short for a header: skipped */
            continue;
        }
        h = (const ra_ev *)(ring + phys);
        *pos += h->size;
        if (h->kind != RA_SKIP)
            return h;
    }
    return NULL;
}

/* Joined: replay the events written from `from` on, at once. */
static void ra_replay_from(struct par *p, uint64_t from)
{
    const ra_ev *h;
    while ((h = ra_next(p->ra_ring, p->ra_size, &from, p->ra_head)) != NULL)
        ra_replay(p, h);
}

/* Show the tail and take the events published since (calling thread).
 * wait: sleep until there are some (or the input ended, or a live read
 * brought nothing: reader_beat). 1 when there are events to replay, 0 when
 * the input ended and every event was replayed, 2 after a beat. */
static int ra_fetch(struct par *p, int wait)
{
    int more, beat = 0;
    uint64_t beats;
    pthread_mutex_lock(&p->mu);
    p->ra_tail = p->ra_c_tail;
    if (p->reader_waiting && p->ra_tail >= p->ra_wake_at)
        pthread_cond_signal(&p->room_cv);
    beats = p->beats;
    while (wait && p->ra_published == p->ra_c_tail && !p->eof && !beat) {
        p->in_waiters++;
        pthread_cond_wait(&p->in_cv, &p->mu);
        p->in_waiters--;
        beat = p->beats != beats;
    }
    p->ra_c_head = p->ra_published;
    p->ra_c_ring = p->ra_ring;
    p->ra_c_mask = p->ra_size - 1;
    more = p->ra_c_head > p->ra_c_tail;
    pthread_mutex_unlock(&p->mu);
    p->ra_c_events = 0;
    p->ra_c_ref_bytes = 0;
    return more ? 1 : beat ? 2 : 0;
}

/* Read-ahead on the calling thread: replay every event the reader puts in
 * the ring, in order. Until the end of input. */
void read_ahead(struct par *p)
{
    for (;;) {
        const ra_ev *h;
        if (p->ra_c_tail == p->ra_c_head && !ra_fetch(p, 0)) {
            int got;
            if (ra_prefetch(p)) /* rather than wait: see chunks.c */
                continue;
            got = ra_fetch(p, 1);
            if (got == 0)
                break;
            if (got == 2) { /* an idle live link: the tick all the same */
                if (p->o.tick)
                    p->o.tick(p->o.tick_ctx, 0);
                continue;
            }
        }
        h = ra_next(p->ra_c_ring, p->ra_c_mask + 1, &p->ra_c_tail, p->ra_c_head);
        if (h) {
            ra_replay(p, h);
            if (h->kind == RA_DATA_REF)
                p->ra_c_ref_bytes += h->len;
        }
        /* the reader may reuse what was replayed: the ring, and the file
         * buffers once a good part of one was replayed */
        if (++p->ra_c_events >= RA_SHOW_EVERY || p->ra_c_ref_bytes >= RA_SHOW_REF_BYTES)
            ra_fetch(p, 0);
    }
}
