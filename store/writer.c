/*
 * writer.c - the store's writer thread (store_opts.writer_thread, --threads):
 * the thread that runs the analysis queues each row and goes on; this thread
 * writes them to SQLite, in the order given. Why and how: top of store.c.
 *
 * The queue is a ring of WRITER_QUEUE_ROWS store_rows with one giving thread
 * and one writing thread: head counts the jobs queued, tail the jobs done,
 * each written by its own thread only (C11 atomics, no lock per row). The
 * mutex and the two condition variables serve only to sleep: the writer when
 * the ring is empty, the giving thread when it is full or when it waits for a
 * commit. Before a thread reads whether the other sleeps (idle, wait_for)
 * it stores its own counter, and a thread going to sleep stores its flag
 * before it reads the other's counter, all sequentially consistent: at least
 * one of the two sees the other's move, so no wake-up is lost; the sleeper
 * checks again under the mutex, which the waker takes to signal. A row that
 * wakes nobody stores head with release only: a writer that went to sleep
 * without seeing it does it at the next wake-up (WRITER_WAKE_ROWS rows
 * waiting, a commit, store_db, a full ring, the stop).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

/* Rows the ring holds (~1.2 KB each: ~1.2 MB). Rows come in bursts
 * (connection closes, redirects); the writer keeps up, so the giving thread
 * almost never waits for room. */
#define WRITER_QUEUE_ROWS 1024
/* A sleeping writer is woken when this many rows wait (or for a commit): one
 * wake-up (a futex call each side) per 256 rows instead of one per row. */
#define WRITER_WAKE_ROWS 256
/* wait_for when the giving thread does not wait. */
#define WRITER_NO_WAIT UINT64_MAX

/* head and tail, each written once per row by its own thread, sit on cache
 * lines of their own (64 bytes apart): on one line every row would move the
 * line between the two cores. */
struct store_writer {
    _Alignas(64) _Atomic uint64_t head; /* jobs queued (written by the giving thread) */
    uint64_t tail_seen;         /* giving thread: tail as last read (never ahead) */
    _Alignas(64) _Atomic uint64_t tail; /* jobs done (written by the writer thread) */
    _Alignas(64) atomic_int idle; /* the writer sleeps, or is about to */
    _Atomic uint64_t wait_for;  /* the giving thread sleeps until tail reaches this */
    store_row *slot;            /* the ring: job n in slot[n % WRITER_QUEUE_ROWS] */
    pthread_mutex_t mu;         /* held only around the two sleeps and their signals */
    pthread_cond_t work;        /* the writer's sleep: jobs arrived */
    pthread_cond_t done;        /* the giving thread's: tail reached wait_for */
    pthread_t thread;
};

/* Giving thread: wake the writer if it sleeps (or is about to: it checks
 * head again under the mutex, which this takes). Head is stored again first,
 * sequentially consistent, then idle read: the giving thread's half of the
 * handshake (rows that wake nobody store head with release only). */
static void wake_writer(store_writer *w)
{
    atomic_store(&w->head, atomic_load_explicit(&w->head, memory_order_relaxed));
    if (!atomic_load(&w->idle))
        return;
    pthread_mutex_lock(&w->mu);
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
}

/* Giving thread: wait until the writer has done the first `target` jobs. */
static void wait_done(store_writer *w, uint64_t target)
{
    if (atomic_load_explicit(&w->tail, memory_order_acquire) < target) {
        wake_writer(w);
        pthread_mutex_lock(&w->mu);
        atomic_store(&w->wait_for, target);
        while (atomic_load(&w->tail) < target)
            pthread_cond_wait(&w->done, &w->mu);
        atomic_store(&w->wait_for, WRITER_NO_WAIT);
        pthread_mutex_unlock(&w->mu);
    }
    w->tail_seen = atomic_load_explicit(&w->tail, memory_order_acquire);
}

/* Giving thread: the slot of the next job, once the writer is done with it.
 * A full ring waits until it is half empty, so that the two threads do not
 * take turns row by row. */
static store_row *next_slot(store_writer *w)
{
    uint64_t h = atomic_load_explicit(&w->head, memory_order_relaxed);
    if (h - w->tail_seen >= WRITER_QUEUE_ROWS) {
        w->tail_seen = atomic_load_explicit(&w->tail, memory_order_acquire);
        if (h - w->tail_seen >= WRITER_QUEUE_ROWS)
            wait_done(w, h - WRITER_QUEUE_ROWS / 2);
    }
    return &w->slot[h % WRITER_QUEUE_ROWS];
}

/* Giving thread: hand the job in the next slot to the writer; wake it when
 * enough rows wait, or at once (urgent: a commit, the stop). A row that wakes
 * nobody needs only a release store of head (a plain store on x86, where the
 * sequentially consistent one is a locked exchange); a writer that went to
 * sleep without seeing it is woken by the next wake_writer. */
static uint64_t publish(store_writer *w, int urgent)
{
    uint64_t h = atomic_load_explicit(&w->head, memory_order_relaxed) + 1;
    atomic_store_explicit(&w->head, h, memory_order_release);
    if (!urgent && h - w->tail_seen >= WRITER_WAKE_ROWS) {
        w->tail_seen = atomic_load_explicit(&w->tail, memory_order_acquire);
        urgent = h - w->tail_seen >= WRITER_WAKE_ROWS;
    }
    if (urgent)
        wake_writer(w);
    return h;
}

/* Free the heap copies of a row's long texts. */
static void free_heap_texts(store_row *r)
{
    while (r->heap) {
        store_heap_text *next = r->heap->next;
        free(r->heap);
        r->heap = next;
    }
}

/* Copy a queued row into a bulk table's buffer row: values, texts kept in
 * text[] (their pointers moved to the copy's), long texts on the heap as they
 * are (the row is then written at once: must_write). */
static void copy_row(store_row *to, const store_row *from, int ncols)
{
    to->which = from->which;
    to->copy_text = STORE_COPY;
    to->must_write = from->must_write;
    to->text_used = from->text_used;
    memcpy(to->text, from->text, from->text_used);
    for (int i = 0; i < ncols; i++) {
        uintptr_t at = (uintptr_t)from->cell[i].text - (uintptr_t)from->text;
        to->cell[i] = from->cell[i];
        if (from->cell[i].kind == STORE_TEXT && at <= STORE_ROW_TEXT)
            to->cell[i].text = to->text + at;
    }
}

/* Writer thread: what store_row_begin and store_row_end do on one thread. A
 * row of a bulk table joins its buffer (as a copy: the ring slot is reused);
 * other rows are written from the slot. After an error nothing more is
 * written (the giving thread sees the error and stops giving rows). */
static void write_queued_row(store *s, store_row *q)
{
    store_rowbuf *b = s->buf[q->which];
    store_row *r = q;
    if (s->error[0])
        return;
    if (q->no_memory) {
        store_fail(s, "write to", SQLITE_NOMEM);
        return;
    }
    if (store_txn_begin(s) != 0)
        return;
    if (b) {
        r = &b->row[b->n];
        copy_row(r, q, s->ncols[q->which]);
    }
    store_row_write(s, r);
}

/* Writer thread: sleep until a job arrives after the first `done`. */
static void sleep_until_work(store_writer *w, uint64_t done)
{
    pthread_mutex_lock(&w->mu);
    atomic_store(&w->idle, 1); /* sequentially consistent: then read head */
    while (atomic_load(&w->head) == done)
        pthread_cond_wait(&w->work, &w->mu);
    atomic_store(&w->idle, 0);
    pthread_mutex_unlock(&w->mu);
}

/* The writer thread: do the jobs in order until ST_DO_STOP. */
static void *writer_main(void *arg)
{
    store *s = arg;
    store_writer *w = s->writer;
    uint64_t done = 0, queued = 0;
    for (;;) {
        store_row *r;
        enum store_stmt job;
        if (done == queued) {
            /* head read once per run of jobs, not per job: the giving thread
             * keeps its line */
            queued = atomic_load_explicit(&w->head, memory_order_acquire);
            if (queued == done)
                sleep_until_work(w, done);
            continue;
        }
        r = &w->slot[done % WRITER_QUEUE_ROWS];
        job = r->which;
        if (job == ST_DO_COMMIT)
            store_commit_now(s);
        else if (job != ST_DO_STOP)
            write_queued_row(s, r);
        free_heap_texts(r);
        atomic_store(&w->tail, ++done); /* sequentially consistent: then read wait_for */
        if (done >= atomic_load(&w->wait_for)) {
            pthread_mutex_lock(&w->mu);
            pthread_cond_signal(&w->done);
            pthread_mutex_unlock(&w->mu);
        }
        if (job == ST_DO_STOP)
            return NULL;
    }
}

/* Free a writer that has no thread (any more). */
static void writer_free(store_writer *w)
{
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->mu);
    free(w->slot);
    free(w);
}

int writer_start(store *s)
{
    store_writer *w = aligned_alloc(64, sizeof *w); /* sizeof: a multiple of 64 */
    sigset_t all, old;
    int rc;
    if (!w)
        return -1;
    memset(w, 0, sizeof *w);
    w->slot = malloc(sizeof *w->slot * WRITER_QUEUE_ROWS);
    if (!w->slot) {
        free(w);
        return -1;
    }
    atomic_init(&w->head, 0);
    atomic_init(&w->tail, 0);
    atomic_init(&w->idle, 0);
    atomic_init(&w->wait_for, WRITER_NO_WAIT);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    s->writer = w;
    /* The thread takes no signal (SIGINT, SIGTERM...): they stay with the
     * threads that handle them; this one only writes. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&w->thread, NULL, writer_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        s->writer = NULL;
        writer_free(w);
        return -1;
    }
    return 0;
}

store_row *writer_row_begin(store *s, enum store_stmt which)
{
    store_row *r = next_slot(s->writer);
    r->which = which;
    r->copy_text = STORE_COPY_ALL;
    r->must_write = 0;
    r->no_memory = 0;
    r->text_used = 0;
    r->heap = NULL;
    memset(r->cell, 0, sizeof r->cell[0] * (size_t)s->ncols[which]);
    return r;
}

void writer_row_end(store *s)
{
    publish(s->writer, 0);
}

/* Queue a job without values (commit, stop); returns its number + 1. */
static uint64_t queue_job(store_writer *w, enum store_stmt job)
{
    store_row *r = next_slot(w);
    r->which = job;
    r->heap = NULL;
    return publish(w, 1);
}

int writer_commit(store *s)
{
    wait_done(s->writer, queue_job(s->writer, ST_DO_COMMIT));
    return atomic_load_explicit(&s->failed, memory_order_acquire) ? -1 : 0;
}

void writer_sync(store *s)
{
    wait_done(s->writer, atomic_load_explicit(&s->writer->head, memory_order_relaxed));
}

void writer_stop(store *s)
{
    store_writer *w = s->writer;
    queue_job(w, ST_DO_STOP);
    pthread_join(w->thread, NULL);
    s->writer = NULL;
    writer_free(w);
}

void writer_copy_long_text(store_row *r, store_cell *c, const char *text, size_t len)
{
    store_heap_text *h = malloc(sizeof *h + len + 1);
    if (!h) {
        r->no_memory = 1; /* the writer fails the store: nothing is left out silently */
        c->kind = STORE_NULL;
        return;
    }
    memcpy(h->text, text, len);
    h->next = r->heap;
    r->heap = h;
    c->text = h->text;
}
