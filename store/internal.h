/*
 * store/internal.h - what store.c and records.c share; not for other modules.
 *
 * Every write goes through store_row_begin / store_row_end: the first opens a
 * transaction when none is open, the second steps the statement and commits
 * when the batch is full. After the first error nothing more is written and
 * the error text stays in the handle.
 */
#ifndef SLOTSCOPE_STORE_INTERNAL_H
#define SLOTSCOPE_STORE_INTERNAL_H

#include <sqlite3.h>
#include <stdint.h>

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
    ST_COUNT
};

struct store {
    sqlite3 *db;                   /* the open database */
    char path[1024];               /* as given, for messages */
    store_opts opts;               /* copy; command_line not kept */
    sqlite3_stmt *stmt[ST_COUNT];  /* prepared once in store_open */
    int in_txn;                    /* a BEGIN is open */
    uint32_t pending;              /* rows written in the open transaction */
    uint64_t rows;                 /* rows written in all (tests, messages) */
    char error[1400];              /* first write error, "" if none */
};

/* The statement `which`, ready to bind, inside an open transaction; NULL when
 * the store has failed (nothing more is written after the first error). */
sqlite3_stmt *store_row_begin(store *s, enum store_stmt which);
/* Step the bound statement, reset it, count the row and commit when the batch
 * is full. Records the first error. */
void store_row_end(store *s, sqlite3_stmt *st);
/* Record the first error (later ones are ignored): what failed plus SQLite's
 * own words for rc. */
void store_fail(store *s, const char *what, int rc);

/* Bind helpers: parameters are numbered from 1 like SQLite's. Text is bound
 * SQLITE_STATIC: it must live until store_row_end. */
static inline void store_bind_text(sqlite3_stmt *st, int i, const char *text)
{
    sqlite3_bind_text(st, i, text ? text : "", -1, SQLITE_STATIC);
}
static inline void store_bind_int(sqlite3_stmt *st, int i, int64_t v)
{
    sqlite3_bind_int64(st, i, v);
}
/* Unsigned counters above INT64_MAX are clamped (SQLite integers are signed). */
static inline void store_bind_uint(sqlite3_stmt *st, int i, uint64_t v)
{
    sqlite3_bind_int64(st, i, v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v);
}

#endif /* SLOTSCOPE_STORE_INTERNAL_H */
