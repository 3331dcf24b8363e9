/*
 * chunks.c - read-ahead's zero-copy file chunks (--threads 2).
 *
 * A DATA's bytes are copied into the read-ahead ring, except with one
 * regular classic pcap file read in place, which the source then reads in
 * chunks (cap_source_chunks): 256 KiB chunks (CAP_PCAPFILE_CHUNK) read with pread into
 * RA_KEEP_BUFFERS slots in turn, a record's bytes staying where they are
 * until their slot is read into again. A DATA whose bytes lie in the record
 * being tracked (in-order data, by far the most) crosses as a pointer to
 * them (RA_DATA_REF, readahead.c); bytes elsewhere (the tracker's
 * reassembled out-of-order data; libpcap's buffers of pcapng, several files
 * or live) are copied. Each chunk is read by whichever thread gets to it
 * first: the reader when the source needs it (ra_chunk), the calling
 * thread, a little ahead, when it has replayed everything and would wait
 * (ra_prefetch). A slot is read into once the source has left its previous
 * chunk behind (two chunks on, the cut record copied out of it) and the
 * calling thread has replayed every event written before the source left
 * it (ck_left).
 *
 * Why: with large values (resp skips them by length) the reader was the
 * critical thread: the kernel's copy of the file, the tracker and a copy
 * of every payload byte into the ring, while the calling thread had little
 * to do.
 */
#include <pthread.h>

#include "run/internal.h"

/* Whether chunk k's slot may be read into, the calling thread being done
 * with the events before ring position tail. Mutex held. */
static int ra_slot_free(const struct par *p, uint64_t k, uint64_t tail)
{
    if (k < RA_KEEP_BUFFERS)
        return 1; /* never used */
    return k + 3 <= p->ck_taken + RA_KEEP_BUFFERS &&
           tail >= p->ck_left[(k - RA_KEEP_BUFFERS) % RA_KEEP_BUFFERS];
}

/* The slot whose chunk the calling thread must have left behind before the
 * reader, waiting to read chunk k, is woken: not chunk k's (the first that
 * frees it) but half the slots further on, so that the reader is woken
 * once per half of them, and the calling thread has the other half in hand
 * while the reader gets its core back. */
static unsigned ra_wake_slot(uint64_t k)
{
    return (unsigned)((k - RA_KEEP_BUFFERS / 2) % RA_KEEP_BUFFERS);
}

/* Read chunk k, claimed by this thread (mutex held; released meanwhile). */
static void ra_fill(struct par *p, uint64_t k)
{
    int whole;
    p->ck_claimed[k % RA_KEEP_BUFFERS] = k + 1;
    pthread_mutex_unlock(&p->mu);
    whole = cap_source_fill_chunk(p->src, k);
    pthread_mutex_lock(&p->mu);
    p->ck_ready[k % RA_KEEP_BUFFERS] = k + 1;
    if (!whole)
        p->ck_short = 1;
}

/* cap_chunk_fn, on the reader thread: the source goes on in chunk k. Left
 * behind: chunk k - 1 (every event since is after ra_head now). Returns
 * once chunk k is read: by the calling thread already, or now by this one
 * (once its slot is free), or waits while the calling thread reads it. */
void ra_chunk(void *ctx, uint64_t k)
{
    struct par *p = ctx;
    reader_show(p); /* the calling thread may start on what was read */
    pthread_mutex_lock(&p->mu);
    if (k > 0)
        p->ck_left[(k - 1) % RA_KEEP_BUFFERS] = p->ra_head;
    p->ck_taken = k + 1;
    while (p->ck_ready[k % RA_KEEP_BUFFERS] != k + 1) {
        int theirs = p->ck_claimed[k % RA_KEEP_BUFFERS] == k + 1;
        if (!theirs && ra_slot_free(p, k, p->ra_tail)) {
            ra_fill(p, k);
            break;
        }
        /* woken by ra_fetch once the tail passed ra_wake_at, or by the
         * calling thread's ra_prefetch when chunk k is read; ra_wake_at:
         * once half the slots are free (ra_wake_slot) */
        p->ra_wake_at = theirs ? 0 : p->ck_left[ra_wake_slot(k)];
        p->reader_waiting = 1;
        pthread_cond_wait(&p->room_cv, &p->mu);
        p->reader_waiting = 0;
    }
    p->ra_tail_seen = p->ra_tail;
    pthread_mutex_unlock(&p->mu);
}

/* On the calling thread, with nothing to replay: read the first chunk not
 * yet claimed from RA_PREFETCH_FROM chunks after the source's on, when its
 * slot is free. Not the source's next chunk, which it would often need
 * while this thread is still reading it (reading a chunk takes longer than
 * tracking it): the reader reads that one, and the reading shares itself
 * out by who has time. 1 when it read one. */
int ra_prefetch(struct par *p)
{
    int did = 0;
    if (!p->ra_keep)
        return 0;
    pthread_mutex_lock(&p->mu);
    for (uint64_t k = p->ck_taken + RA_PREFETCH_FROM;
         !did && !p->ck_short && !p->eof && ra_slot_free(p, k, p->ra_c_tail); k++) {
        if (p->ck_claimed[k % RA_KEEP_BUFFERS] == k + 1)
            continue; /* read or being read */
        ra_fill(p, k);
        if (p->reader_waiting)
            pthread_cond_signal(&p->room_cv);
        did = 1;
    }
    pthread_mutex_unlock(&p->mu);
    return did;
}
