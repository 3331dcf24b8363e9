/*
 * store.h - analysis records in, a SQLite database out.
 *
 * The last stage. Schema in store/schema.sql (compiled in), with a schema
 * version in the meta table. Statements are prepared once; rows are written in
 * batched transactions while the analysis runs (WAL journal), so an interrupted
 * run leaves a consistent, useful database. Redirects, connections and commands
 * go out 32 rows per INSERT; every row given before a commit is in it. The
 * query indexes are kept row by row, or built by store_close (index_at_close). Times are integer microseconds
 * since the epoch in columns ending _us.
 *
 * Credentials never reach this layer; keys arrive already redacted when the
 * user asked for it.
 */
#ifndef SLOTSCOPE_STORE_H
#define SLOTSCOPE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "capture/capture.h"
#include "resp/resp.h"

#define STORE_SCHEMA_VERSION 7

typedef struct store store;

/* Options for store_open. */
typedef struct store_opts {
    int force;                 /* replace an existing database */
    int store_commands;        /* keep every paired command (commands table) */
    uint32_t batch_rows;       /* rows per transaction (default 5000) */
    int index_at_close;        /* build the query indexes in store_close instead
                                  of row by row (capture files; store/indexes.sql) */
    int sync_once;             /* no sync while store_close checkpoints and indexes,
                                  one fsync of the finished file instead (capture
                                  files: a power loss during the close costs a
                                  rerun, not data only a live run had) */
    int writer_thread;         /* write on a thread of the store's own (--threads):
                                  the caller only queues the rows (store.c) */
    const char *command_line;  /* recorded in meta */
    const char *const *inputs; /* the run's input files: never replaced (same */
    size_t n_inputs;           /* device and inode as the database path) */
} store_opts;

/* Set SQLite up for this process, before any database is opened (main):
 * no memory statistics, which slotscope never reads and which cost a global
 * mutex on every allocation. Optional: without it SQLite works as before. */
void store_init(void);
/* Create the database at path. Refuses an existing file unless opts->force,
 * and even then anything but a regular file that is empty or a SQLite
 * database, one of opts->inputs, or a database another run holds (the file is
 * locked, flock, until store_close). Refuses -wal/-shm/-journal files left
 * next to path unless opts->force (then removes them). Leaves nothing behind
 * when it fails. NULL on error with a one-line message in err ("database
 * 'x.db' exists (use --force)", "cannot create 'x.db': ..."). */
store *store_open(const char *path, const store_opts *opts, char *err, size_t err_size);
/* Commit what is pending, write the end time, close. Returns 0, or -1 with err. */
int store_close(store *s, char *err, size_t err_size);
/* Commit the batch now (live mode: periodically; before exit on a signal).
 * With a writer thread: once every row given before is written and committed. */
int store_commit(store *s);
/* The first write error, or NULL: writing stops after one (disk full, ...).
 * With a writer thread it shows up when the writer meets it, a little after the
 * row that caused it was given; store_commit and store_close report it too. */
const char *store_error(const store *s);

/* The an_sink that writes analysis records (ctx = s). */
an_sink store_sink(store *s);

/* Each input file or interface; writing the same name again updates its row. */
void store_input(store *s, const cap_input_info *in);
/* A counter (name, value); replaces an earlier value. */
void store_counter(store *s, const char *name, uint64_t value);
/* All counters of the three stages at once. */
void store_counters(store *s, const cap_stats *cs, const resp_stats *rs, const an_stats *as);
/* A meta key/value. */
void store_meta(store *s, const char *key, const char *value);

/* Rows written so far (all tables); with a writer thread, as far as it got. */
uint64_t store_rows(const store *s);

/* The named counters of the three stages, in a fixed order, each passed to
 * fn(ctx, name, value); any stats pointer may be NULL (its group is skipped).
 * store_counters writes exactly these; the report reads them back by name. */
typedef void (*store_counter_fn)(void *ctx, const char *name, uint64_t value);
void store_each_counter(const cap_stats *cs, const resp_stats *rs, const an_stats *as,
                        store_counter_fn fn, void *ctx);

/* Open an existing database read-only (report, query). NULL with err. Checks the
 * schema version, and that every table of the schema is there and a table (a
 * crafted file may put an endless view in one's place); the schema is not
 * trusted (SQLITE_DBCONFIG_TRUSTED_SCHEMA off, DEFENSIVE on) and no value over
 * 64 MiB is read. */
struct sqlite3;
struct sqlite3 *store_open_readonly(const char *path, char *err, size_t err_size);

/* 1 when a run is writing the database at path now (it holds the run's
 * lock: store_open), 0 when not or it cannot be told. */
int store_being_written(const char *path);

/* The handle's database connection (tests; tools that read what was written).
 * With a writer thread this first waits until every row given is written; the
 * caller may use the connection until its next call of a store function. */
struct sqlite3 *store_db(store *s);

#endif /* SLOTSCOPE_STORE_H */
