/*
 * store/internal.h - what store.c and records.c share; not for other modules.
 *
 * Every write goes through store_row_begin / store_set_* / store_row_end: the
 * first opens a transaction when none is open, the last writes the row (or
 * buffers it, see store_rowbuf) and commits when the batch is full. After the
 * first error nothing more is written and the error text stays in the handle.
 */
#ifndef SLOTSCOPE_STORE_INTERNAL_H
#define SLOTSCOPE_STORE_INTERNAL_H

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "store/store.h"

/* The prepared statements kept in the handle, one per kind of row. */
enum store_stmt {
    ST_BEGIN = 0,
    ST_COMMIT,
    ST_META,
    ST_INPUT,
    ST_INPUT_NAMES,
    ST_COUNTER,
    ST_NODE,
    ST_CLIENT,
    ST_CONNECTION,
    ST_REDIRECT,
    ST_FINDING,
    ST_MIGRATION,
    ST_LATENCY,
    ST_COMMAND,
    ST_OWNER,
    ST_NODE_STATE,
    ST_FAILOVER,
    ST_CONVERGENCE,
    ST_AT_RISK,
    ST_TIMELINE,
    ST_COUNT,
    /* Not statements: the writer thread's other jobs (writer.c). A queued
     * row with one of these as its `which` carries no values. */
    ST_DO_COMMIT = ST_COUNT, /* flush the bulk tables and commit */
    ST_DO_STOP               /* the last job: the thread returns */
};

/* Rows of the three tables written in bulk (redirects, connections, and
 * commands with --store-commands) are not stepped one by one: they wait in a
 * store_rowbuf and go to SQLite STORE_MULTI_ROWS at a time with one
 * "INSERT ... VALUES (...),(...),..." statement. Each statement execution has
 * a fixed cost (opening the cursors, halting, resetting) that 32 rows share:
 * see store.c for the numbers. A partial buffer is written row by row before
 * every commit, so a committed batch holds exactly the rows given before it,
 * in order (same rowids as writing them one by one). */
#define STORE_MULTI_ROWS 32
#define STORE_MAX_COLS 30   /* the widest row: connections */
#define STORE_ROW_TEXT 512  /* text bytes a buffered row keeps (a redirect: < 400) */

/* One value of a row: NULL (never set), an integer, or text (not NUL-
 * terminated: text, len). */
enum store_cell_kind { STORE_NULL = 0, STORE_INT, STORE_TEXT };
typedef struct store_cell {
    int64_t value;       /* STORE_INT: the value; STORE_TEXT: the length */
    const char *text;    /* STORE_TEXT: the row's copy, or the caller's text */
    int kind;            /* enum store_cell_kind */
} store_cell;

/* How a row keeps its texts (store_row.copy_text). */
enum store_copy {
    STORE_KEEP = 0,  /* written at once: the caller's texts, valid until store_row_end */
    STORE_COPY,      /* buffered: copied into text[]; one that does not fit stays the
                        caller's and the row is written at once (must_write) */
    STORE_COPY_ALL   /* queued for the writer thread: copied into text[], one that
                        does not fit into a heap block of its own (heap) */
};

/* A text of a queued row too long for its text[] (writer.c): one malloc'd
 * block per text, freed by the writer thread once the row is written. */
typedef struct store_heap_text {
    struct store_heap_text *next;
    char text[];
} store_heap_text;

/* One row being written: its values, parameter i+1 in cell[i]. A buffered row
 * copies its texts into text[]; a row written at once points to the caller's
 * (which live until store_row_end). */
typedef struct store_row {
    enum store_stmt which;            /* its statement (or an ST_DO_ job) */
    int copy_text;                    /* enum store_copy */
    int must_write;                   /* a text did not fit in text[]: write now */
    int no_memory;                    /* STORE_COPY_ALL: a heap block failed */
    uint32_t text_used;               /* bytes of text[] in use */
    store_heap_text *heap;            /* STORE_COPY_ALL: the texts beyond text[] */
    store_cell cell[STORE_MAX_COLS];
    char text[STORE_ROW_TEXT];
} store_row;

/* The rows of one bulk table waiting to be written. */
typedef struct store_rowbuf {
    sqlite3_stmt *multi;              /* the STORE_MULTI_ROWS-row INSERT, prepared
                                         when the buffer first fills */
    uint32_t n;                       /* rows waiting */
    store_row row[STORE_MULTI_ROWS];
} store_rowbuf;

/* Server endpoints already formatted as text, for the commands table's node
 * column (records.c: command_node). A cluster has few servers. */
#define STORE_NODE_CACHE 8
typedef struct store_node_text {
    cap_endpoint ep;
    char text[CAP_ENDPOINT_STRLEN];
} store_node_text;

/* The writer thread and its queue of rows (writer.c). */
typedef struct store_writer store_writer;

struct store {
    sqlite3 *db;                   /* the open database */
    char path[1024];               /* as given, for messages */
    store_opts opts;               /* copy; command_line not kept */
    sqlite3_stmt *stmt[ST_COUNT];  /* prepared once in store_open */
    int ncols[ST_COUNT];           /* parameters of each statement */
    store_rowbuf *buf[ST_COUNT];   /* bulk tables: their waiting rows; else NULL */
    store_row one;                 /* the row being written, other tables */
    store_node_text nodes[STORE_NODE_CACHE]; /* formatted server endpoints */
    uint32_t nnodes;               /* entries of nodes[] in use */
    uint32_t next_node;            /* the entry a new endpoint replaces when full */
    int in_txn;                    /* a BEGIN is open */
    uint32_t pending;              /* rows written in the open transaction */
    _Atomic uint64_t rows;         /* rows written in all (tests, messages) */
    store_writer *writer;          /* opts.writer_thread: the thread that writes */
    atomic_int failed;             /* error[] is set (read by the other thread) */
    char error[1400];              /* first write error, "" if none */
    int lock_fd;                   /* the database file, flock'ed for the run */
};

/* A new row for statement `which` inside an open transaction, its values all
 * NULL; NULL when the store has failed (nothing more is written after the
 * first error). */
store_row *store_row_begin(store *s, enum store_stmt which);
/* Write the row (or buffer it: bulk tables), count it and commit when the
 * batch is full. Records the first error. */
void store_row_end(store *s, store_row *r);
/* Record the first error (later ones are ignored): what failed plus SQLite's
 * own words for rc. */
void store_fail(store *s, const char *what, int rc);

/* What store_row_begin and store_row_end do with the row once it is filled,
 * on the thread that owns the connection: open a transaction if none is, then
 * write or buffer the row and commit when the batch is full (store.c). */
int store_txn_begin(store *s);
void store_row_write(store *s, store_row *r);
/* Flush the bulk tables and commit (store.c). 0, or -1 after an error. */
int store_commit_now(store *s);

/* The writer thread (writer.c), with opts.writer_thread. writer_start: 0, or
 * -1 when the thread cannot be made (the store then writes synchronously).
 * writer_row_begin / writer_row_end queue a row (waiting for room when the
 * queue is full); writer_commit queues a commit and waits for it; writer_sync
 * waits until every queued job is done; writer_stop drains the queue, ends
 * the thread and frees it (s->writer becomes NULL). */
int writer_start(store *s);
store_row *writer_row_begin(store *s, enum store_stmt which);
void writer_row_end(store *s);
int writer_commit(store *s);
void writer_sync(store *s);
void writer_stop(store *s);
/* store_set_text_len's case of a queued row whose text does not fit in text[]. */
void writer_copy_long_text(store_row *r, store_cell *c, const char *text, size_t len);

/* Set parameter i (numbered from 1 like SQLite's) of a row. Text: NULL is
 * written as ''; a buffered row copies it, others keep the pointer, which must
 * stay valid until store_row_end. */
void store_set_text_len(store_row *r, int i, const char *text, size_t len);
static inline void store_set_text(store_row *r, int i, const char *text)
{
    store_set_text_len(r, i, text ? text : "", text ? strlen(text) : 0);
}
static inline void store_set_int(store_row *r, int i, int64_t v)
{
    r->cell[i - 1].kind = STORE_INT;
    r->cell[i - 1].value = v;
}
/* Unsigned counters above INT64_MAX are clamped (SQLite integers are signed). */
static inline void store_set_uint(store_row *r, int i, uint64_t v)
{
    store_set_int(r, i, v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v);
}

#endif /* SLOTSCOPE_STORE_INTERNAL_H */
