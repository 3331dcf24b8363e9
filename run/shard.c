/*
 * shard.c - --threads 3 and more: the reader's input ring and the workers.
 *
 *   reader thread   reads the source (cap_source_run_records), numbers the
 *                   records 1, 2, ... in merged order, picks each one's
 *                   worker by the partition of its connection (the top
 *                   bits of the symmetric hash of its 4-tuple, capture.h):
 *                   partition % N, so both directions of a connection go to
 *                   the same worker and every partition to one worker; what
 *                   is not TCP goes to worker 0. It copies the record into
 *                   the input ring, which every worker reads
 *   worker threads  each has its own cap_tracker and resp pipeline. A record
 *                   of its share goes through cap_tracker_packet_at; every
 *                   other record only moves its clock (cap_tracker_time), so
 *                   idle connections close at the very record where one
 *                   tracker would close them, and connection ids (the number
 *                   of the opening record) are those of one tracker. The
 *                   resp events (open, command, close) are packed into the
 *                   worker's own event ring (internal.h), each with its key
 *                   in the one-thread order (merge.c), and, while the
 *                   analyzer's connection cap may be reached, after each
 *                   record of its share the counters of its connection
 *                   (worker_hot, worker_update)
 *
 * The caps on the whole capture and resp state (connections held,
 * out-of-order bytes, requests in flight, kept replies) apply per partition,
 * in one thread too (capture.h): a partition's connections evolve the same
 * in whichever worker holds it, so a run that reaches a cap evicts and
 * drops exactly what one thread does. Each worker's table and pool are
 * sized for its partitions (worker_caps in run.c): memory stays within the
 * one-thread bounds.
 *
 * Where N sharded threads may differ from one (none of it happens in the
 * tests):
 *  - when capture times go backwards, idle expiry (which stops at the first
 *    connection of its list not yet idle) can close a connection a few
 *    records earlier or later;
 *  - live: the analyzer is flushed by the capture time of the events handed
 *    on (and a clock event every 0.1 s), not of every packet.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "run/internal.h"

/* ---------------------------------------------------------------- worker: events */

/* Publish the events written and the records done, and wake whoever waits
 * for them. Called with the mutex held. */
static void worker_show(worker *w)
{
    struct par *p = w->par;
    w->consumed = w->pos;
    if (w->watermark != KEY_END)
        w->watermark = w->pos;
    w->ev_published = w->ev_head;
    w->ev_head_shown = w->ev_head;
    w->ev_tail_seen = w->ev_tail;
    w->raw_tail_seen = w->raw_tail;
    if (p->merger_waiting)
        pthread_cond_signal(&p->out_cv);
    if (p->reader_waiting && oldest_in_use(p) >= p->reader_wake_at)
        pthread_cond_signal(&p->room_cv);
    if (p->proof_waiters > 0)
        pthread_cond_broadcast(&p->proof_cv);
}

/* Whether every worker but w is done with the records below `before`. */
static int others_passed(const struct par *p, const worker *w, uint64_t before)
{
    for (unsigned i = 0; i < p->n; i++)
        if (&p->w[i] != w && p->w[i].consumed + 1 < before)
            return 0;
    return 1;
}

/*
 * cap_config.await_proofs of a worker's tracker: what resp proves about
 * servers (resp/proofs.c) is noted by the worker that decodes the command,
 * stamped with its record; before orienting a connection picked up
 * mid-stream at record `before` by those proofs, this worker waits until
 * every other worker is done with the records below it. It shows its own
 * progress first (its records below `before` are done), so two workers
 * waiting at records a < b cannot wait for each other: the one at a waits
 * only for records below a, which the one at b is done with. Nor for the
 * merger or the reader: the records below `before` are in the input ring
 * already, and the merger can hand on every event of them (the watermark
 * shown here says this worker makes none). Only the first packet of such
 * a connection waits.
 */
void worker_await_proofs(void *ctx, uint64_t before)
{
    worker *w = ctx;
    struct par *p = w->par;
    pthread_mutex_lock(&p->mu);
    worker_show(w);
    while (!others_passed(p, w, before)) {
        p->proof_waiters++;
        pthread_cond_wait(&p->proof_cv, &p->mu);
        p->proof_waiters--;
    }
    pthread_mutex_unlock(&p->mu);
}


/* Wait until the merger has freed `ev` more event bytes and `raw` more raw
 * bytes from raw_start. */
static void worker_wait_room(worker *w, size_t ev, uint64_t raw_start, size_t raw)
{
    struct par *p = w->par;
    pthread_mutex_lock(&p->mu);
    worker_show(w);
    w->wake_ev = ev ? wake_tail(w->ev_head, ev, OUT_BYTES, w->ev_head) : 0;
    w->wake_raw = raw ? wake_tail(raw_start, raw, w->raw_size, w->raw_head) : 0;
    while (w->ev_head + ev - w->ev_tail_seen > OUT_BYTES ||
           raw_start + raw - w->raw_tail_seen > w->raw_size) {
        w->space_waiting = 1;
        pthread_cond_wait(&w->space_cv, &p->mu);
        w->space_waiting = 0;
        w->ev_tail_seen = w->ev_tail;
        w->raw_tail_seen = w->raw_tail;
    }
    pthread_mutex_unlock(&p->mu);
}

/* Room for an event of size bytes (header included, a multiple of
 * EV_ALIGN), contiguous in the ring; its header filled in. conn: the
 * connection the event is about (its last_record ranks the closes the clock
 * makes). */
static ev_hdr *ev_begin(worker *w, const cap_conn *conn, ev_kind kind, size_t size)
{
    size_t phys = (size_t)(w->ev_head & (OUT_BYTES - 1));
    size_t rest = OUT_BYTES - phys;
    ev_hdr *h;
    if (size > rest) {
        /* Skip the end of the ring: events stay contiguous. */
        if (w->ev_head + rest + size - w->ev_tail_seen > OUT_BYTES)
            worker_wait_room(w, rest + size, w->raw_head, 0);
        if (rest >= sizeof(ev_hdr)) {
            h = (ev_hdr *)(w->ev + phys);
            h->kind = EV_SKIP;
            h->size = (uint32_t)rest;
        }
        w->ev_head += rest;
        phys = 0;
    } else if (w->ev_head + size - w->ev_tail_seen > OUT_BYTES) {
        worker_wait_room(w, size, w->raw_head, 0);
    }
    h = (ev_hdr *)(w->ev + phys);
    h->record = w->record;
    h->rank = w->own || conn == NULL ? KEY_OWN : conn->last_record;
    h->ts_us = w->ts_us;
    h->size = (uint32_t)size;
    h->kind = (uint16_t)kind;
    h->counters = 0;
    w->last_ev = h;
    w->last_ev_at = w->ev_head;
    w->last_ev_conn = conn ? conn->id : 0;
    return h;
}

/* The event is written; hand a batch over when one is full. */
static void ev_end(worker *w, const ev_hdr *h)
{
    w->ev_head += h->size;
    if (w->ev_head - w->ev_head_shown >= OUT_BATCH) {
        pthread_mutex_lock(&w->par->mu);
        worker_show(w);
        pthread_mutex_unlock(&w->par->mu);
    }
}


/* Room for len raw bytes, contiguous in the ring: their offset. */
static uint64_t raw_reserve(worker *w, size_t len)
{
    uint64_t start = w->raw_head;
    size_t phys = (size_t)(start & (w->raw_size - 1));
    if (phys + len > w->raw_size)
        start += w->raw_size - phys; /* skip the tail: the bytes stay contiguous */
    if (start + len - w->raw_tail_seen > w->raw_size)
        worker_wait_room(w, 0, start, len);
    w->raw_head = start + len;
    return start;
}

/* OPEN and CLOSE: the connection as it is now (and CLOSE's counters). */
static void conn_event(worker *w, ev_kind kind, const cap_conn *conn, const resp_conn_stats *st)
{
    size_t size = sizeof(ev_hdr) + sizeof(cap_conn) + (st ? sizeof *st : 0);
    ev_hdr *h = ev_begin(w, conn, kind, ev_round(size));
    uint8_t *body = (uint8_t *)(h + 1);
    cap_conn *c = (cap_conn *)body;
    *c = *conn;
    c->user = NULL;
    if (st)
        memcpy(body + sizeof(cap_conn), st, sizeof *st);
    ev_end(w, h);
}

/* resp_sink: a connection opened. */
static void w_conn_open(void *ctx, const cap_conn *conn)
{
    conn_event(ctx, EV_OPEN, conn, NULL);
}

/* resp_sink: a connection closed. */
static void w_conn_close(void *ctx, const cap_conn *conn, const resp_conn_stats *st)
{
    conn_event(ctx, EV_CLOSE, conn, st);
}

/* resp_sink: a command, packed (see cmd_head); a kept raw reply goes to the
 * raw ring. */
static void w_command(void *ctx, const resp_command *cmd)
{
    worker *w = ctx;
    const resp_request *r = &cmd->req;
    uint8_t kept[RESP_ARG_KEEP + 1];
    size_t texts;
    unsigned nargs = text_lengths(r, kept, &texts);
    size_t raw_len = cmd->reply.raw ? cmd->reply.raw_len : 0;
    cmd_head head = {.conn_id = cmd->conn ? cmd->conn->id : 0,
                     .has_raw = cmd->reply.raw != NULL};
    const uint8_t *src = (const uint8_t *)cmd;
    uint8_t *out;
    ev_hdr *h;
    if (cmd->reply.errtext[0])
        head.errtext_len = (uint16_t)strnlen(cmd->reply.errtext, RESP_ERRTEXT_MAX);
    if (cmd->reply.redir.host[0])
        head.host_len = (uint16_t)strnlen(cmd->reply.redir.host, sizeof cmd->reply.redir.host);
    /* resp keeps at most max_kept_reply bytes, half the ring: always fits */
    if (raw_len > w->raw_size / 2)
        head.has_raw = 0;
    if (head.has_raw) {
        head.raw_off = raw_reserve(w, raw_len);
        memcpy(w->raw + (head.raw_off & (w->raw_size - 1)), cmd->reply.raw, raw_len);
    }
    h = ev_begin(w, cmd->conn, EV_COMMAND,
                 ev_round(sizeof(ev_hdr) + sizeof head + CMD_FIXED + texts +
                          head.errtext_len + head.host_len));
    out = (uint8_t *)(h + 1);
    memcpy(out, &head, sizeof head);
    out += sizeof head;
#define PACK_SPAN(from, to) memcpy(out, src + (from), (to) - (from)); out += (to) - (from);
    CMD_SPANS(PACK_SPAN)
#undef PACK_SPAN
    for (unsigned i = 0; i < nargs; i++) {
        copy_text(out, r->args[i], kept[i]);
        out += text_padded(kept[i]);
    }
    copy_text(out, r->key0, kept[nargs]);
    out += text_padded(kept[nargs]);
    if (head.errtext_len) /* errors and redirections are rare */
        memcpy(out, cmd->reply.errtext, head.errtext_len);
    out += head.errtext_len;
    if (head.host_len)
        memcpy(out, cmd->reply.redir.host, head.host_len);
    ev_end(w, h);
}

/* resp_sink: a bus message; its bytes go to the raw ring (see bus_head). */
static void w_bus(void *ctx, const cap_conn *conn, int dir, const bus_msg *m, int64_t ts_us,
                  uint64_t frame)
{
    worker *w = ctx;
    bus_head head = {.conn_id = conn ? conn->id : 0, .frame = frame, .ts_us = ts_us,
                     .raw_len = m->raw_len, .dir = (uint8_t)dir, .whole = m->whole,
                     .has_raw = m->raw != NULL && m->raw_len <= w->raw_size / 2};
    if (head.has_raw) {
        head.raw_off = raw_reserve(w, m->raw_len);
        memcpy(w->raw + (head.raw_off & (w->raw_size - 1)), m->raw, m->raw_len);
    }
    ev_hdr *h = ev_begin(w, conn, EV_BUS, ev_round(sizeof(ev_hdr) + sizeof head));
    memcpy(h + 1, &head, sizeof head);
    ev_end(w, h);
}

/* Room for the counters right after the record's latest event, which is
 * of connection id and not yet published: they are appended to it (most
 * records that make an event make one, so one event instead of two). */
static ev_counters *counters_after_last(worker *w, uint64_t id)
{
    size_t phys = (size_t)(w->ev_head & (OUT_BYTES - 1));
    size_t need = sizeof(ev_counters);
    ev_hdr *h = w->last_ev;
    if (!h || w->last_ev_conn != id || (h->kind != EV_OPEN && h->kind != EV_COMMAND) ||
        w->last_ev_at < w->ev_head_shown || phys == 0 || phys + need > OUT_BYTES ||
        w->ev_head + need - w->ev_tail_seen > OUT_BYTES)
        return NULL;
    h->counters = 1;
    h->size += (uint32_t)need;
    w->ev_head += need;
    return (ev_counters *)(w->ev + phys);
}

/* The burst of worker_hot: one connection's counters (cap_tracker_each_open). */
static void counters_event(void *ctx, const cap_conn *c)
{
    worker *w = ctx;
    ev_hdr *h = ev_begin(w, c, EV_UPDATE, sizeof(ev_hdr) + sizeof(ev_counters));
    ev_counters *u = (ev_counters *)(h + 1);
    h->rank = 0; /* before every event of the record (their ranks are >= 1) */
    u->conn_id = c->id;
    u->last_record = c->last_record;
    memcpy(u->counters, (const uint8_t *)c + CONN_COUNTERS_OFF, CONN_COUNTERS);
    ev_end(w, h);
}

/*
 * Whether the analyzer may evict a connection during record `record` (its
 * clock, its own events), when counters must cross after every record
 * (worker_update). It evicts only when it holds analysis_conns
 * connections, all of them open copies of the merger, and a record adds
 * one open connection at most (besides a connection that never showed
 * payload, OPENed and CLOSEd at once when it ends): when the merger had
 * `open` copies at record R, at most open + 1 + (record - R) are open at
 * any moment of record. Below the cap the copies may be stale, as nothing
 * reads their counters; on the way up this worker first hands over the
 * counters of all its open connections, keyed (record, 0), before every
 * event of the record. Called before the record's clock.
 */
static void worker_hot(worker *w, uint64_t record)
{
    uint32_t cap = w->par->o.analysis_conns;
    int hot = cap == 0 || w->seen_record > record ||
              w->seen_open + 1 + (record - w->seen_record) >= cap;
    if (hot && !w->hot)
        cap_tracker_each_open(w->tracker, counters_event, w);
    w->hot = hot;
}

/* After a record of this share: the counters of the connection it was a
 * segment of, for the merger's copy. The analyzer reads a copy's counters
 * when it evicts the connection at its own cap, at another connection's
 * OPEN or command, and one tracker shows the counters of that moment. */
static void worker_update(worker *w)
{
    const cap_conn *c = cap_tracker_touched(w->tracker);
    ev_counters *u;
    ev_hdr *h = NULL;
    if (!c)
        return;
    u = counters_after_last(w, c->id);
    if (!u) {
        h = ev_begin(w, c, EV_UPDATE, sizeof(ev_hdr) + sizeof(ev_counters));
        u = (ev_counters *)(h + 1);
    }
    u->conn_id = c->id;
    u->last_record = c->last_record;
    memcpy(u->counters, (const uint8_t *)c + CONN_COUNTERS_OFF, CONN_COUNTERS);
    if (h)
        ev_end(w, h);
}

/* Live: a clock event now and then, so that the merger flushes the analyzer
 * on time even when no command completes. */
static void maybe_time_event(worker *w)
{
    ev_hdr *h;
    if (!w->par->o.live || w->id != 0 || w->ts_us < w->next_time_us)
        return;
    w->next_time_us = w->ts_us + TIME_EVERY_US;
    h = ev_begin(w, NULL, EV_TIME, sizeof(ev_hdr));
    ev_end(w, h);
}

/* ---------------------------------------------------------------- worker: loop */

/* Serve a counters request: copy the stage counters for the merger. */
static void worker_serve_request(worker *w)
{
    struct par *p = w->par;
    unsigned req = atomic_load_explicit(&p->request, memory_order_relaxed);
    cap_stats cs;
    resp_stats rs;
    if (req == w->stats_gen)
        return;
    w->stats_gen = req;
    cs = *cap_tracker_stats(w->tracker);
    rs = *resp_get_stats(w->rp);
    pthread_mutex_lock(&p->mu);
    w->cs = cs;
    w->rs = rs;
    pthread_mutex_unlock(&p->mu);
}

/* Show progress and take the records published since. wait: sleep until
 * there are some (or the input ended). 1 when there are records to read, 0
 * when the input ended and every record was read. */
static int worker_fetch(worker *w, int wait)
{
    struct par *p = w->par;
    int more;
    worker_serve_request(w);
    pthread_mutex_lock(&p->mu);
    worker_show(w);
    while (wait && p->published == w->pos && !p->eof) {
        p->in_waiters++;
        pthread_cond_wait(&p->in_cv, &p->mu);
        p->in_waiters--;
    }
    w->avail = p->published;
    w->seen_record = p->m_pub_record;
    w->seen_open = p->m_pub_open;
    w->bytes = p->bytes;
    w->bytes_mask = p->bytes_size - 1;
    more = w->avail > w->pos;
    pthread_mutex_unlock(&p->mu);
    return more;
}

/* Feed input position pos: the clock, then the record if it is ours. */
static void worker_feed(worker *w, uint64_t pos)
{
    const in_rec *d = &w->recs[pos & (IN_RECORDS - 1)];
    uint64_t record = pos + 1;
    w->record = record;
    w->ts_us = d->ts_us;
    w->own = 0;
    worker_hot(w, record);
    cap_tracker_time(w->tracker, record, d->ts_us);
    if (d->worker == w->id) {
        w->own = 1;
        w->last_ev = NULL;
        cap_tracker_packet_at(w->tracker, record, d->linktype, d->ts_us,
                              w->bytes + (d->off & w->bytes_mask), d->caplen, d->wirelen);
        if (w->hot)
            worker_update(w);
    }
    maybe_time_event(w);
}

/* Wait for the merger's order to finish: the end time. */
static int64_t worker_wait_finish(worker *w)
{
    struct par *p = w->par;
    int64_t end;
    pthread_mutex_lock(&p->mu);
    while (!p->finish) {
        p->in_waiters++;
        pthread_cond_wait(&p->in_cv, &p->mu);
        p->in_waiters--;
    }
    end = p->finish_us;
    pthread_mutex_unlock(&p->mu);
    return end;
}

/* The worker thread: every record of the input, then the end. */
void *worker_main(void *arg)
{
    worker *w = arg;
    struct par *p = w->par;
    for (;;) {
        if (w->pos == w->avail && !worker_fetch(w, 1))
            break;
        worker_feed(w, w->pos);
        w->pos++;
        if ((w->pos & (SHOW_EVERY - 1)) == 0)
            worker_fetch(w, 0); /* the reader may reuse what was read, the
                                   merger may pass what was done */
    }
    w->record = KEY_END;
    w->own = 0;
    worker_hot(w, w->pos + 1); /* the end's events as one more record */
    cap_tracker_finish(w->tracker, worker_wait_finish(w));
    pthread_mutex_lock(&p->mu);
    w->watermark = KEY_END;
    worker_show(w);
    w->cs = *cap_tracker_stats(w->tracker);
    w->rs = *resp_get_stats(w->rp);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---------------------------------------------------------------- reader: the input ring */

/* Wait until the workers are done with more records than when last seen. */
static void reader_wait_room(struct par *p)
{
    uint64_t before = p->rd_oldest;
    reader_show(p);
    pthread_mutex_lock(&p->mu);
    /* woken once a quarter of what is pending was read */
    p->reader_wake_at = before + (p->rd_pos - before + 3) / 4;
    while ((p->rd_oldest = oldest_in_use(p)) == before) {
        p->reader_waiting = 1;
        pthread_cond_wait(&p->room_cv, &p->mu);
        p->reader_waiting = 0;
    }
    pthread_mutex_unlock(&p->mu);
}

/* Make the byte ring at least 2 * len: only when no record is in use. 0, or
 * -1 out of memory. */
static int reader_grow(struct par *p, size_t len)
{
    size_t size = pow2_at_least(2 * len);
    uint8_t *b;
    while (p->rd_oldest != p->rd_pos)
        reader_wait_room(p);
    b = malloc(size);
    if (!b)
        return -1;
    pthread_mutex_lock(&p->mu);
    free(p->bytes);
    p->bytes = b;
    p->bytes_size = size;
    p->rd_off = 0;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* Room for one record of len bytes: its descriptor, bytes at *start. NULL
 * when out of memory. */
static in_rec *reader_reserve(struct par *p, size_t len, uint64_t *start)
{
    if (len > p->bytes_size / 2 && reader_grow(p, len) != 0)
        return NULL;
    for (;;) {
        uint64_t s = p->rd_off;
        size_t phys = (size_t)(s & (p->bytes_size - 1));
        uint64_t tail = p->rd_oldest < p->rd_pos
                            ? p->recs[p->rd_oldest & (IN_RECORDS - 1)].off : p->rd_off;
        if (phys + len > p->bytes_size)
            s += p->bytes_size - phys;
        if (p->rd_pos - p->rd_oldest < IN_RECORDS && s + len - tail <= p->bytes_size) {
            *start = s;
            return &p->recs[p->rd_pos & (IN_RECORDS - 1)];
        }
        reader_wait_room(p);
    }
}

/* cap_record_fn: copy one record into the ring (NULL: a live read returned,
 * hand on what there is). */
void reader_record(void *ctx, const cap_record *rec)
{
    struct par *p = ctx;
    uint32_t hash;
    uint64_t start;
    in_rec *d;
    if (!rec) {
        if (p->rd_pos != p->rd_shown)
            reader_show(p);
        else
            reader_beat(p);
        return;
    }
    d = reader_reserve(p, rec->caplen, &start);
    if (!d) {
        p->rd_oom = 1; /* read by the merger after joining */
        cap_source_break(p->src);
        return;
    }
    memcpy(p->bytes + (start & (p->bytes_size - 1)), rec->data, rec->caplen);
    d->ts_us = rec->ts_us;
    d->off = start;
    d->caplen = rec->caplen;
    d->wirelen = rec->wirelen;
    d->linktype = rec->linktype;
    d->worker = cap_record_route(rec, p->rd_pos + 1, p->servers, &hash) && p->n > 1
                    ? cap_partition_of(hash) % p->n : 0;
    p->rd_off = start + rec->caplen;
    p->rd_pos++;
    if (p->rd_pos - p->rd_shown >= IN_BATCH)
        reader_show(p);
}


/* The resp_sink of worker w: its events packed into its ring. */
resp_sink worker_sink(worker *w)
{
    resp_sink sink = {.ctx = w, .conn_open = w_conn_open, .command = w_command,
                      .conn_close = w_conn_close, .bus_message = w_bus};
    return sink;
}
