/*
 * store.c - the database's life: create, batch, commit, close; read-only open.
 *
 * SQLite facts this file relies on (https://sqlite.org/lang_transaction.html,
 * https://sqlite.org/wal.html):
 * - a transaction is atomic: after a crash or kill the database holds exactly
 *   the committed transactions, so committing every N rows keeps an
 *   interrupted run consistent and useful;
 * - in WAL mode readers never block the writer (someone may query the database
 *   of a live run), and a commit is an append to the -wal file;
 * - switching back to journal_mode=DELETE at close checkpoints the WAL into the
 *   main file and removes it, so a finished database is one self-contained file
 *   that can be copied elsewhere.
 *
 * The writer thread (store_opts.writer_thread: --threads N, N >= 2; writer.c).
 * Why: with --threads 2 the thread that runs capture, resp and the analysis is
 * the critical path, and stepping SQLite is a good part of its time while
 * the reader thread's core has time to spare. So that thread
 * only fills rows (store_row_begin / store_set_* / store_row_end, copying
 * every text) into a queue, and the writer thread does with each what
 * store_row_end does on one thread: BEGIN when needed, the bulk tables' 32-row
 * buffers, the commit every batch_rows rows. How the order is kept: one FIFO
 * carries everything asked of SQLite while the thread runs: rows of every
 * table, meta, counters, inputs (and the INSERT..SELECT of their names), and
 * the commits (store_commit queues one and waits until it is done). Jobs are
 * done one at a time in the order given, by code shared with the one-thread
 * path, so the statements, their grouping, the transactions and the rowids are
 * those of a run without the thread. Only the writer touches the connection
 * (opened NOMUTEX) while it runs; store_db waits until the queue is empty, and
 * store_close queues end_us and a commit, stops and joins the thread, then
 * checkpoints and builds the indexes itself. Bounds: the queue holds 1024 rows
 * (~1.2 MB); when it is full the giving thread waits until it is half empty. A
 * text that does not fit in a row's 512 bytes (a finding's JSON evidence) is
 * copied to the heap and freed by the writer once the row is written; if that
 * malloc fails the writer fails the store ("out of memory"), nothing is
 * dropped quietly. Errors: the writer records the first one (store_fail) and
 * sets `failed`, which the giving thread reads: it stops queueing rows, and
 * store_commit, store_close and store_error report it as before, just possibly
 * a few rows later. Without writer_thread nothing of this runs: the calling
 * thread writes synchronously, exactly as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/internal.h"

#ifndef SLOTSCOPE_VERSION
#define SLOTSCOPE_VERSION "unknown"
#endif

#define STORE_DEFAULT_BATCH 5000

/* The schema and index texts, compiled in from store/schema.sql and
 * store/indexes.sql (cmake/embed.cmake). */
extern const char store_schema_sql[];
extern const char store_indexes_sql[];

/* SQL of each prepared statement, indexed by enum store_stmt. */
static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN",
    [ST_COMMIT] = "COMMIT",
    [ST_META] = "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
    [ST_INPUT] =
        "INSERT INTO inputs (name, linktype, linktype_name, packets, bytes, first_us,"
        " last_us, kernel_drops, if_drops, error, time_backwards, compression,"
        " time_offset_us, skew_us, skew_shared, skew_ref, drops_recorded)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
        " ON CONFLICT (name) DO UPDATE SET linktype = excluded.linktype,"
        " linktype_name = excluded.linktype_name, packets = excluded.packets,"
        " bytes = excluded.bytes, first_us = excluded.first_us, last_us = excluded.last_us,"
        " kernel_drops = excluded.kernel_drops, if_drops = excluded.if_drops,"
        " error = excluded.error, time_backwards = excluded.time_backwards,"
        " compression = excluded.compression, time_offset_us = excluded.time_offset_us,"
        " skew_us = excluded.skew_us, skew_shared = excluded.skew_shared,"
        " skew_ref = excluded.skew_ref, drops_recorded = excluded.drops_recorded",
    [ST_INPUT_NAMES] =
        "INSERT OR REPLACE INTO meta (key, value) SELECT 'inputs',"
        " coalesce((SELECT group_concat(name, char(10)) FROM"
        " (SELECT name FROM inputs ORDER BY id)), '')",
    [ST_COUNTER] = "INSERT OR REPLACE INTO counters (name, value) VALUES (?1, ?2)",
    [ST_NODE] =
        "INSERT INTO nodes (observed, announced, node_id, role, slots_owned, commands,"
        " flags, master_id, config_epoch, current_epoch, bus_port, role_us, master_us,"
        " config_epoch_us, flags_us)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
        " ON CONFLICT (observed, announced) DO UPDATE SET node_id = excluded.node_id,"
        " role = excluded.role, slots_owned = excluded.slots_owned,"
        " commands = excluded.commands, flags = excluded.flags,"
        " master_id = excluded.master_id, config_epoch = excluded.config_epoch,"
        " current_epoch = excluded.current_epoch, bus_port = excluded.bus_port,"
        " role_us = excluded.role_us, master_us = excluded.master_us,"
        " config_epoch_us = excluded.config_epoch_us, flags_us = excluded.flags_us",
    [ST_CLIENT] =
        "INSERT INTO clients (name, first_us, last_us, connections, commands,"
        " redirects, findings, cluster_aware, is_node, lib_name, lib_ver, client_name)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
        " ON CONFLICT (name) DO UPDATE SET first_us = min(first_us, excluded.first_us),"
        " last_us = max(last_us, excluded.last_us),"
        " connections = connections + excluded.connections,"
        " commands = commands + excluded.commands, redirects = redirects + excluded.redirects,"
        " findings = findings + excluded.findings,"
        " cluster_aware = max(cluster_aware, excluded.cluster_aware),"
        " is_node = max(is_node, excluded.is_node),"
        " lib_name = CASE lib_name WHEN '' THEN excluded.lib_name ELSE lib_name END,"
        " lib_ver = CASE lib_ver WHEN '' THEN excluded.lib_ver ELSE lib_ver END,"
        " client_name = CASE client_name WHEN '' THEN excluded.client_name"
        " ELSE client_name END",
    [ST_CONNECTION] =
        "INSERT OR REPLACE INTO connections (id, client, src, dst, first_us, last_us,"
        " bytes_to_server, bytes_to_client, packets_to_server, packets_to_client,"
        " commands, gaps, gap_bytes, retransmits, out_of_order, out_of_sync, mid_stream,"
        " side_source, requests, replies, pushes, unpaired_requests, unpaired_replies,"
        " resyncs, skipped_bytes, protocol_errors, kind, lib_name, lib_ver, client_name)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
        " ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)",
    [ST_REDIRECT] =
        "INSERT INTO redirects (ts_us, client, conn, node, kind, slot, target, command,"
        " key, latency_us, req_frame, reply_frame, cause)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [ST_FINDING] =
        "INSERT OR REPLACE INTO findings (id, kind, severity, severity_level, client, node,"
        " slot, first_us, last_us, count, extra_latency_us, summary, evidence, operations,"
        " frame_filter, conn_filter)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    [ST_MIGRATION] =
        "INSERT INTO slot_migrations (slot, source, target, first_ask_us,"
        " last_ask_us, flip_us, importing_us, migrating_us, asks, tryagains, moveds,"
        " keys_migrated, complete)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [ST_LATENCY] =
        "INSERT OR REPLACE INTO latency (scope, key, redirected, count, p50_us, p90_us,"
        " p99_us, max_us, total_us, extra_us, extra_round_trips)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [ST_COMMAND] =
        "INSERT INTO commands (ts_us, reply_us, client, conn, node, seq, name, argc, slot,"
        " key, outcome, reply_type, error, latency_us, req_bytes, reply_bytes, in_multi,"
        " req_frame, reply_frame)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
        " ?17, ?18, ?19)",
    [ST_OWNER] =
        "INSERT INTO slot_owners (slot_lo, slot_hi, node, node_id, config_epoch, from_us,"
        " to_us, source, cause) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [ST_NODE_STATE] =
        "INSERT INTO node_states (ts_us, node, node_id, from_state, to_state, reporter,"
        " reporter_id, via, frame) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [ST_FAILOVER] =
        "INSERT INTO failovers (ts_us, kind, old_master, old_id, new_master, new_id,"
        " config_epoch, detected_us, elected_us, done_us, votes, slots, frame)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [ST_CONVERGENCE] =
        "INSERT INTO convergence (client, slot_lo, slot_hi, old_node, new_node, source,"
        " flip_us, flip_frame, config_epoch, first_us, last_stale_us, converged_us,"
        " stale_commands, moved_replies, at_risk_writes)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    [ST_AT_RISK] =
        "INSERT INTO at_risk_writes (finding_id, ts_us, client, node, new_node, slot,"
        " command, key, req_frame, reply_frame, proof_frame, config_epoch)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [ST_TIMELINE] =
        "INSERT INTO timeline (bucket_us, width_us, scope, scope_id, scopes, commands, moved,"
        " ask, tryagain, crossslot, clusterdown, asking, retries, direct_ops, redirected_ops,"
        " direct_p50_us, direct_p99_us, redirected_p50_us, redirected_p99_us)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
        " ?17, ?18, ?19)",
};

/* Wall-clock time in microseconds since the epoch (meta start_us / end_us). */
static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Format into err (may be NULL) and return -1, so "return seterr(...)" reports
 * and fails in one line. */
static int seterr(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int seterr(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    if (!err || err_size == 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return -1;
}

/* SQLite's words for a failure, with the system's when it was an I/O error
 * ("disk I/O error (File too large)"); disk full gets its own plain words. */
static void describe_rc(sqlite3 *db, int rc, char *buf, size_t size)
{
    int sys = db ? sqlite3_system_errno(db) : 0;
    if ((rc & 0xff) == SQLITE_FULL)
        snprintf(buf, size, "disk full");
    else if ((rc & 0xff) == SQLITE_IOERR && sys != 0)
        snprintf(buf, size, "%s (%s)", sqlite3_errstr(rc), strerror(sys));
    else if (db && sqlite3_errcode(db) == rc)
        snprintf(buf, size, "%s", sqlite3_errmsg(db));
    else
        snprintf(buf, size, "%s", sqlite3_errstr(rc));
}

void store_fail(store *s, const char *what, int rc)
{
    char why[256];
    if (s->error[0])
        return; /* the first error sticks */
    describe_rc(s->db, rc, why, sizeof why);
    snprintf(s->error, sizeof s->error, "cannot %s '%s': %s", what, s->path, why);
    /* Published after the text: the thread that gives rows reads error[] only
     * once it sees failed (store_error). */
    atomic_store_explicit(&s->failed, 1, memory_order_release);
    /* A failed statement may have left the transaction open or rolled it back
     * itself; either way nothing more is written, so end it cleanly. */
    if (s->db && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    s->in_txn = 0;
}

/* Run a statement that takes no parameters (BEGIN, COMMIT). */
static int step_plain(store *s, enum store_stmt which)
{
    sqlite3_stmt *st = s->stmt[which];
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void store_set_text_len(store_row *r, int i, const char *text, size_t len)
{
    store_cell *c = &r->cell[i - 1];
    if (len > INT32_MAX)
        len = INT32_MAX; /* beyond SQLite's limit: the write fails "too big" */
    c->kind = STORE_TEXT;
    c->value = (int64_t)len;
    c->text = text;
    if (!r->copy_text)
        return;
    if (len <= STORE_ROW_TEXT - r->text_used) {
        memcpy(r->text + r->text_used, text, len);
        c->text = r->text + r->text_used;
        r->text_used += (uint32_t)len;
    } else {
        /* Keep the caller's text, valid until store_row_end, which then writes
         * this row and those before it at once. A queued row cannot keep it:
         * the writer thread writes it later, from a copy on the heap. */
        r->must_write = 1;
        if (r->copy_text == STORE_COPY_ALL)
            writer_copy_long_text(r, c, text, len);
    }
}

/* Bind a row's values to parameters base+1 .. base+ncols of st. Text is bound
 * SQLITE_STATIC: the row (or the caller) keeps it until the step. Every
 * parameter is bound each time, so no sqlite3_clear_bindings is needed. */
static int bind_row(sqlite3_stmt *st, int base, const store_row *r, int ncols)
{
    int rc = SQLITE_OK;
    for (int i = 0; i < ncols && rc == SQLITE_OK; i++) {
        const store_cell *c = &r->cell[i];
        if (c->kind == STORE_INT)
            rc = sqlite3_bind_int64(st, base + i + 1, c->value);
        else if (c->kind == STORE_TEXT)
            rc = sqlite3_bind_text(st, base + i + 1, c->text, (int)c->value, SQLITE_STATIC);
        else
            rc = sqlite3_bind_null(st, base + i + 1);
    }
    return rc;
}

/* Step a bound INSERT once and reset it. SQLITE_OK or the error. */
static int step_insert(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The multi-row INSERT of a bulk table, prepared on first use from its
 * single-row text: everything up to VALUES, then STORE_MULTI_ROWS tuples of
 * anonymous parameters (numbered 1, 2, ... in order: row r's parameter i is
 * r * ncols + i). NULL, with the store failed, if it cannot be prepared. */
static sqlite3_stmt *multi_stmt(store *s, enum store_stmt which)
{
    store_rowbuf *b = s->buf[which];
    const char *values = strstr(stmt_sql[which], " VALUES (");
    char sql[4096];
    size_t n;
    int rc;
    if (b->multi)
        return b->multi;
    if (!values) {
        store_fail(s, "prepare statements in", SQLITE_INTERNAL);
        return NULL;
    }
    n = (size_t)snprintf(sql, sizeof sql, "%.*s VALUES ", (int)(values - stmt_sql[which]),
                         stmt_sql[which]);
    for (int r = 0; r < STORE_MULTI_ROWS && n < sizeof sql; r++)
        for (int i = 0; i < s->ncols[which] && n < sizeof sql; i++)
            n += (size_t)snprintf(sql + n, sizeof sql - n, "%s?%s", i ? "," : r ? ",(" : "(",
                                  i + 1 == s->ncols[which] ? ")" : "");
    if (n >= sizeof sql) {
        store_fail(s, "prepare statements in", SQLITE_TOOBIG);
        return NULL;
    }
    rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &b->multi, NULL);
    if (rc != SQLITE_OK) {
        store_fail(s, "prepare statements in", rc);
        return NULL;
    }
    return b->multi;
}

/* Write the waiting rows of one bulk table, in order: a full buffer with its
 * multi-row INSERT, a partial one (before a commit) row by row. */
static void flush_rows(store *s, enum store_stmt which)
{
    store_rowbuf *b = s->buf[which];
    int ncols = s->ncols[which];
    sqlite3_stmt *st;
    int rc = SQLITE_OK;
    if (!b || b->n == 0 || s->error[0])
        return;
    if (b->n == STORE_MULTI_ROWS) {
        st = multi_stmt(s, which);
        for (uint32_t r = 0; st && r < b->n && rc == SQLITE_OK; r++)
            rc = bind_row(st, (int)r * ncols, &b->row[r], ncols);
        if (st && rc == SQLITE_OK)
            rc = step_insert(st);
    } else {
        st = s->stmt[which];
        for (uint32_t r = 0; r < b->n && rc == SQLITE_OK; r++) {
            rc = bind_row(st, 0, &b->row[r], ncols);
            if (rc == SQLITE_OK)
                rc = step_insert(st);
        }
    }
    b->n = 0;
    if (rc != SQLITE_OK)
        store_fail(s, "write to", rc);
}

/* Write every bulk table's waiting rows (before a commit). */
static void flush_all(store *s)
{
    for (int i = 0; i < ST_COUNT; i++)
        flush_rows(s, (enum store_stmt)i);
}

int store_txn_begin(store *s)
{
    int rc;
    if (s->in_txn)
        return 0;
    rc = step_plain(s, ST_BEGIN);
    if (rc != SQLITE_OK) {
        store_fail(s, "write to", rc);
        return -1;
    }
    s->in_txn = 1;
    return 0;
}

store_row *store_row_begin(store *s, enum store_stmt which)
{
    store_rowbuf *b;
    store_row *r;
    if (!s || atomic_load_explicit(&s->failed, memory_order_acquire))
        return NULL;
    if (s->writer)
        return writer_row_begin(s, which);
    if (store_txn_begin(s) != 0)
        return NULL;
    b = s->buf[which];
    r = b ? &b->row[b->n] : &s->one; /* b->n < STORE_MULTI_ROWS: flushed when full */
    r->which = which;
    r->copy_text = b != NULL;
    r->must_write = 0;
    r->text_used = 0;
    memset(r->cell, 0, sizeof r->cell[0] * (size_t)s->ncols[which]);
    return r;
}

void store_row_end(store *s, store_row *r)
{
    if (s->writer)
        writer_row_end(s);
    else
        store_row_write(s, r);
}

void store_row_write(store *s, store_row *r)
{
    store_rowbuf *b = s->buf[r->which];
    if (b) {
        if (++b->n == STORE_MULTI_ROWS || r->must_write)
            flush_rows(s, r->which);
    } else {
        sqlite3_stmt *st = s->stmt[r->which];
        int rc = bind_row(st, 0, r, s->ncols[r->which]);
        if (rc == SQLITE_OK)
            rc = step_insert(st);
        if (rc != SQLITE_OK)
            store_fail(s, "write to", rc);
    }
    if (s->error[0])
        return;
    /* One thread counts: a plain load and store (rows is atomic only so that
     * store_rows may read it from the other). */
    atomic_store_explicit(&s->rows, atomic_load_explicit(&s->rows, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (++s->pending >= s->opts.batch_rows)
        store_commit_now(s);
}

int store_commit(store *s)
{
    if (!s || atomic_load_explicit(&s->failed, memory_order_acquire))
        return -1;
    if (s->writer)
        return writer_commit(s);
    return store_commit_now(s);
}

int store_commit_now(store *s)
{
    int rc;
    if (s->error[0])
        return -1;
    if (!s->in_txn)
        return 0;
    flush_all(s);
    if (s->error[0])
        return -1;
    rc = step_plain(s, ST_COMMIT);
    if (rc != SQLITE_OK) {
        store_fail(s, "commit to", rc);
        return -1;
    }
    s->in_txn = 0;
    s->pending = 0;
    return 0;
}

const char *store_error(const store *s)
{
    /* (A cast: C11's atomic_load takes a pointer to non-const.) */
    if (!s || !atomic_load_explicit((atomic_int *)&s->failed, memory_order_acquire))
        return NULL;
    return s->error;
}

uint64_t store_rows(const store *s)
{
    return s ? atomic_load_explicit((_Atomic uint64_t *)&s->rows, memory_order_relaxed) : 0;
}

struct sqlite3 *store_db(store *s)
{
    if (s && s->writer)
        writer_sync(s); /* the caller may use the connection until its next call */
    return s ? s->db : NULL;
}

/* The files SQLite keeps next to a database (WAL mode, and a rollback journal
 * at close). */
static const char *const side_suffixes[] = {"-wal", "-shm", "-journal"};
#define N_SIDE (sizeof side_suffixes / sizeof side_suffixes[0])

/* What kind of file a mode is, for messages. */
static const char *kind_of(mode_t m)
{
    if (S_ISREG(m)) return "a regular file";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISLNK(m)) return "a symbolic link";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

/* Refuse a database path that is one of the inputs (same device and inode,
 * through links): --force would replace the capture by the database. */
static int check_not_input(const char *path, const store_opts *opts, char *err, size_t err_size)
{
    struct stat db, in;
    if (stat(path, &db) != 0)
        return 0;
    for (size_t i = 0; i < opts->n_inputs; i++)
        if (opts->inputs[i] && stat(opts->inputs[i], &in) == 0 && in.st_dev == db.st_dev &&
            in.st_ino == db.st_ino)
            return seterr(err, err_size, "database '%s' is the input '%s': not replaced", path,
                          opts->inputs[i]);
    return 0;
}

#define ONLY_REPLACES "--force replaces only a regular file that is empty or a SQLite database"

/* With --force: may the existing file sb (lstat of path) be replaced? Only a
 * regular file that is empty or starts with the SQLite header
 * (https://sqlite.org/fileformat.html, "SQLite format 3\0"); never a FIFO,
 * device, text file or symbolic link. fd: the file, open for reading. */
static int check_replaceable(const char *path, const struct stat *sb, int fd, char *err,
                             size_t err_size)
{
    static const char header[16] = "SQLite format 3";
    char head[16];
    struct stat to;
    if (S_ISLNK(sb->st_mode))
        return seterr(err, err_size, "'%s' is a symbolic link (to %s): " ONLY_REPLACES, path,
                      stat(path, &to) == 0 ? kind_of(to.st_mode) : "nothing");
    if (S_ISDIR(sb->st_mode))
        return seterr(err, err_size, "cannot create '%s': Is a directory", path);
    if (!S_ISREG(sb->st_mode))
        return seterr(err, err_size, "'%s' is %s: " ONLY_REPLACES, path, kind_of(sb->st_mode));
    if (sb->st_size == 0)
        return 0;
    if (fd < 0 || pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        memcmp(head, header, sizeof head) != 0)
        return seterr(err, err_size, "'%s' is not a SQLite database (a regular file of %lld "
                      "bytes): " ONLY_REPLACES, path, (long long)sb->st_size);
    return 0;
}

/* A file SQLite keeps next to the database, left from another run (or
 * planted): SQLite would follow a link or replay a stale WAL into the new
 * database. Without force it is an error naming it; with force a regular file
 * or a link (the link only) is removed, anything else is an error. All are
 * checked before any is removed. */
static int check_side_files(const char *path, int force, char *err, size_t err_size)
{
    char name[1100];
    struct stat sb;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < N_SIDE; i++) {
            snprintf(name, sizeof name, "%s%s", path, side_suffixes[i]);
            if (lstat(name, &sb) != 0)
                continue;
            if (!force)
                return seterr(err, err_size, "'%s' exists (%s) next to the database: remove "
                              "it, or use --force", name, kind_of(sb.st_mode));
            if (!S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode))
                return seterr(err, err_size, "'%s' is %s: not removed", name,
                              kind_of(sb.st_mode));
            if (pass == 1 && unlink(name) != 0 && errno != ENOENT)
                return seterr(err, err_size, "cannot remove '%s': %s", name, strerror(errno));
        }
    return 0;
}

/* Lock fd for this run (flock, beside SQLite's own fcntl locks, which it does
 * not touch): a second run with --force then refuses to replace a database
 * that is still being written. 0, or -1 with err. */
static int lock_run(int fd, const char *path, char *err, size_t err_size)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    if (errno == EWOULDBLOCK)
        return seterr(err, err_size, "database '%s' is being written by another run (it is "
                      "locked): not replaced", path);
    return seterr(err, err_size, "cannot lock '%s': %s", path, strerror(errno));
}

int store_being_written(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), busy = 0;
    if (fd < 0)
        return 0;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0)
        busy = errno == EWOULDBLOCK;
    close(fd); /* drops the shared lock, if it was taken */
    return busy;
}

/* With force, an existing path: check it may go, hold its lock (so that no
 * run is still writing it), then remove it. 0, or -1 with err. */
static int replace_existing(const char *path, const struct stat *sb, char *err, size_t err_size)
{
    int fd = S_ISREG(sb->st_mode) ? open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
    int rc = check_replaceable(path, sb, fd, err, err_size);
    if (rc == 0 && fd < 0)
        rc = seterr(err, err_size, "cannot open '%s': %s", path, strerror(errno));
    if (rc == 0)
        rc = lock_run(fd, path, err, err_size);
    if (rc == 0 && unlink(path) != 0)
        rc = seterr(err, err_size, "cannot remove '%s': %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Create the empty file ourselves, so that a missing directory, a read-only
 * file system or a permission problem gets the system's plain words instead of
 * SQLite's "unable to open database file". Refuses an existing file unless
 * force, and then replaces only what check_replaceable allows. Returns the new
 * file's descriptor, locked for the run (lock_run), or -1 with err. */
static int create_file(const char *path, const store_opts *opts, char *err, size_t err_size)
{
    struct stat sb, now;
    int fd, exists = lstat(path, &sb) == 0;
    if (check_not_input(path, opts, err, err_size) != 0)
        return -1;
    if (exists && !opts->force)
        return seterr(err, err_size, "database '%s' exists (use --force)", path);
    if (check_side_files(path, opts->force, err, err_size) != 0)
        return -1;
    if (exists && replace_existing(path, &sb, err, err_size) != 0)
        return -1;
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == EEXIST)
            return seterr(err, err_size, "database '%s' exists (use --force)", path);
        return seterr(err, err_size, "cannot create '%s': %s", path, strerror(errno));
    }
    /* Locked, and still the file at path (another run may have replaced it
     * between the open and the lock). */
    if (lock_run(fd, path, err, err_size) != 0) {
        close(fd);
        return -1;
    }
    if (fstat(fd, &sb) != 0 || stat(path, &now) != 0 || sb.st_dev != now.st_dev ||
        sb.st_ino != now.st_ino) {
        close(fd);
        return seterr(err, err_size, "database '%s' was replaced by another run while it was "
                      "created", path);
    }
    return fd;
}

/* After a failed store_open: remove the database created for it and what
 * SQLite made next to it (check_side_files saw none before). */
static void remove_created(const char *path)
{
    char name[1100];
    for (size_t i = 0; i < N_SIDE; i++) {
        snprintf(name, sizeof name, "%s%s", path, side_suffixes[i]);
        unlink(name);
    }
    unlink(path);
}

/* Run SQL text (schema, pragmas) on s->db. 0, or -1 with err. */
static int exec_sql(store *s, const char *sql, const char *what, char *err, size_t err_size)
{
    char why[256];
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return 0;
    describe_rc(s->db, rc, why, sizeof why);
    return seterr(err, err_size, "cannot %s '%s': %s", what, s->path, why);
}

/* The tables written in bulk through a store_rowbuf (internal.h). */
static int is_bulk(enum store_stmt which, const store_opts *opts)
{
    return which == ST_REDIRECT || which == ST_CONNECTION ||
           (which == ST_COMMAND && opts->store_commands);
}

/* Prepare every statement once, count its parameters, and give each bulk
 * table its row buffer. 0, or -1 with err. */
static int prepare_all(store *s, char *err, size_t err_size)
{
    for (int i = 0; i < ST_COUNT; i++) {
        int rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                    &s->stmt[i], NULL);
        if (rc != SQLITE_OK)
            return seterr(err, err_size, "cannot prepare statements in '%s': %s", s->path,
                          sqlite3_errmsg(s->db));
        s->ncols[i] = sqlite3_bind_parameter_count(s->stmt[i]);
        if (s->ncols[i] > STORE_MAX_COLS)
            return seterr(err, err_size, "cannot prepare statements in '%s': %d columns",
                          s->path, s->ncols[i]);
        if (is_bulk((enum store_stmt)i, &s->opts)) {
            s->buf[i] = calloc(1, sizeof *s->buf[i]);
            if (!s->buf[i])
                return seterr(err, err_size, "out of memory");
        }
    }
    return 0;
}

/* Write the first meta rows: schema and tool version, start time, command line. */
static void write_start_meta(store *s, const char *command_line)
{
    char num[32];
    snprintf(num, sizeof num, "%d", STORE_SCHEMA_VERSION);
    store_meta(s, "schema_version", num);
    store_meta(s, "tool_version", SLOTSCOPE_VERSION);
    snprintf(num, sizeof num, "%lld", (long long)now_us());
    store_meta(s, "start_us", num);
    store_meta(s, "command_line", command_line ? command_line : "");
    store_meta(s, "inputs", "");
}

/* Finalize statements, free the row buffers and close the connection. */
static void close_db(store *s)
{
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(s->stmt[i]);
        s->stmt[i] = NULL;
        if (s->buf[i])
            sqlite3_finalize(s->buf[i]->multi);
        free(s->buf[i]);
        s->buf[i] = NULL;
    }
    sqlite3_close(s->db);
    s->db = NULL;
    /* after SQLite's close: closing another descriptor of the file earlier
     * would drop SQLite's own fcntl locks (POSIX locks are per process) */
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    s->lock_fd = -1;
}

void store_init(void)
{
    /* SQLITE_MISUSE once SQLite is initialised: then it stays as it is. */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

store *store_open(const char *path, const store_opts *opts, char *err, size_t err_size)
{
    store_opts defaults = {0};
    store *s;
    int rc, lock_fd;

    if (!opts)
        opts = &defaults;
    if (!path || !path[0]) {
        seterr(err, err_size, "no database path given");
        return NULL;
    }
    lock_fd = create_file(path, opts, err, err_size);
    if (lock_fd < 0)
        return NULL;
    s = calloc(1, sizeof *s);
    if (!s) {
        seterr(err, err_size, "out of memory");
        close(lock_fd);
        remove_created(path);
        return NULL;
    }
    s->lock_fd = lock_fd;
    snprintf(s->path, sizeof s->path, "%s", path);
    s->opts = *opts;
    s->opts.command_line = NULL;
    if (s->opts.batch_rows == 0)
        s->opts.batch_rows = STORE_DEFAULT_BATCH;

    /* NOMUTEX: one thread at a time uses a store (the pipeline's), so the
     * connection's own mutex, taken by every bind, step and reset, is not
     * needed (https://sqlite.org/threadsafe.html, "multi-thread" mode). */
    rc = sqlite3_open_v2(path, &s->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
    if (rc != SQLITE_OK) {
        seterr(err, err_size, "cannot open '%s': %s", path,
               s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto fail;
    }
    /* A reader that opens the new file at this moment (a report or query
     * started with the run) holds a lock for a few milliseconds: wait for it
     * rather than fail; after the switch to WAL readers never block us. */
    sqlite3_busy_timeout(s->db, 5000);
    /* WAL: readers (a query during a live run) never block the writer.
     * synchronous=NORMAL: a commit survives a crash of this process; only a
     * power loss may lose the last transactions, never consistency. The
     * switch to WAL is a write of the file this run just created, with
     * nothing to protect yet: it is not synced (synchronous=OFF for it). */
    if (exec_sql(s, "PRAGMA synchronous=OFF; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                 "initialise", err, err_size) ||
        exec_sql(s, store_schema_sql, "initialise", err, err_size) ||
        (!opts->index_at_close &&
         exec_sql(s, store_indexes_sql, "initialise", err, err_size)) ||
        prepare_all(s, err, err_size))
        goto fail;
    write_start_meta(s, opts->command_line);
    if (store_commit(s) != 0) {
        seterr(err, err_size, "%s", s->error);
        goto fail;
    }
    /* From here on rows go through the writer thread's queue. Should the
     * thread not start, this thread writes them itself: same database. */
    if (opts->writer_thread)
        writer_start(s);
    return s;

fail:
    close_db(s);
    free(s);
    remove_created(path);
    return NULL;
}

/* Indexes always built at close rather than maintained per row (see
 * store/indexes.sql). */
static const char close_indexes_sql[] =
    "CREATE INDEX IF NOT EXISTS commands_client ON commands (client, ts_us);"
    "CREATE INDEX IF NOT EXISTS commands_conn ON commands (conn, seq);";

/* Build the indexes not built yet: the query indexes unless store_open made
 * them (index_at_close), then the commands table's. One transaction, so a
 * database killed meanwhile has either all of them or none. Sorting every
 * table once at the end is cheaper than keeping its indexes up to date per
 * row (numbers in store/indexes.sql). */
static void build_indexes(store *s)
{
    int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, store_indexes_sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, close_indexes_sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        store_fail(s, "index", rc);
}

/* sync_once: the finished database reaches the disk with one fdatasync of
 * the file and one fsync of its folder (which holds a file made by this run
 * and no longer its -wal and -journal), instead of the syncs SQLite makes
 * at each step of the close. Records the first error. */
static void sync_finished(store *s)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", s->path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int dfd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fdatasync(s->lock_fd) != 0 || dfd < 0 || fsync(dfd) != 0)
        snprintf(s->error, sizeof s->error, "cannot write '%s' to disk: %s", s->path,
                 strerror(errno));
    if (dfd >= 0)
        close(dfd);
}

int store_close(store *s, char *err, size_t err_size)
{
    char num[32];
    int ret = 0;
    if (!s)
        return 0;
    snprintf(num, sizeof num, "%lld", (long long)now_us());
    store_meta(s, "end_us", num);
    store_commit(s);
    /* The writer thread has done all it was given: end it, and this thread
     * owns the connection again for the checkpoint and the indexes. */
    if (s->writer)
        writer_stop(s);
    if (s->opts.sync_once && !s->error[0])
        sqlite3_exec(s->db, "PRAGMA synchronous=OFF", NULL, NULL, NULL);
    /* Checkpoint the WAL into the main file and drop it: one self-contained file.
     * If that fails every row is still committed, in the WAL file. */
    if (!s->error[0]) {
        int rc = sqlite3_exec(s->db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            char why[256];
            describe_rc(s->db, rc, why, sizeof why);
            snprintf(s->error, sizeof s->error,
                     "cannot checkpoint '%s' into one file: %s (every row is committed; "
                     "keep its -wal file next to it)", s->path, why);
        }
    }
    /* The indexes after the checkpoint: their pages then go straight into the
     * main file (rollback journal) instead of into the WAL and then copied. */
    if (!s->error[0])
        build_indexes(s);
    if (s->opts.sync_once && !s->error[0])
        sync_finished(s); /* every page is written: nothing is pending */
    if (s->error[0])
        ret = seterr(err, err_size, "%s", s->error);
    close_db(s);
    free(s);
    return ret;
}

void store_meta(store *s, const char *key, const char *value)
{
    store_row *st = store_row_begin(s, ST_META);
    if (!st)
        return;
    store_set_text(st, 1, key);
    store_set_text(st, 2, value);
    store_row_end(s, st);
}

void store_counter(store *s, const char *name, uint64_t value)
{
    store_row *st = store_row_begin(s, ST_COUNTER);
    if (!st)
        return;
    store_set_text(st, 1, name);
    store_set_uint(st, 2, value);
    store_row_end(s, st);
}

void store_input(store *s, const cap_input_info *in)
{
    store_row *st = store_row_begin(s, ST_INPUT);
    if (!st || !in)
        return;
    store_set_text(st, 1, in->name);
    store_set_int(st, 2, in->linktype);
    store_set_text(st, 3, in->linktype_name);
    store_set_uint(st, 4, in->packets);
    store_set_uint(st, 5, in->bytes);
    store_set_int(st, 6, in->first_us);
    store_set_int(st, 7, in->last_us);
    store_set_uint(st, 8, in->kernel_drops);
    store_set_uint(st, 9, in->if_drops);
    store_set_text(st, 10, in->error);
    store_set_uint(st, 11, in->time_backwards);
    store_set_text(st, 12, in->compression);
    store_set_int(st, 13, in->time_offset_us);
    store_set_int(st, 14, in->skew_us);
    store_set_uint(st, 15, in->skew_shared);
    store_set_uint(st, 16, in->skew_ref);
    store_set_uint(st, 17, in->drops_recorded);
    store_row_end(s, st);
    /* Keep meta 'inputs' (names, one per line) in step with the table. */
    st = store_row_begin(s, ST_INPUT_NAMES);
    if (st)
        store_row_end(s, st);
}

/* store_counter as a store_counter_fn. */
static void counter_to_store(void *ctx, const char *name, uint64_t value)
{
    store_counter(ctx, name, value);
}

void store_counters(store *s, const cap_stats *cs, const resp_stats *rs, const an_stats *as)
{
    store_each_counter(cs, rs, as, counter_to_store, s);
}

/* Capture counters. "bytes" is bytes on the wire, as the list has it. */
static void each_cap_counter(const cap_stats *c, store_counter_fn fn, void *ctx)
{
    fn(ctx, "packets", c->packets);
    fn(ctx, "bytes", c->wire_bytes);
    fn(ctx, "captured_bytes", c->captured_bytes);
    fn(ctx, "tcp_packets", c->tcp_packets);
    fn(ctx, "non_tcp", c->non_tcp);
    fn(ctx, "non_ip", c->non_ip);
    fn(ctx, "unsupported", c->unsupported);
    fn(ctx, "ip_fragments", c->ip_fragments);
    fn(ctx, "truncated", c->truncated);
    fn(ctx, "malformed", c->malformed);
    fn(ctx, "time_backwards", c->time_backwards);
    fn(ctx, "connections", c->connections);
    fn(ctx, "mid_stream", c->mid_stream);
    /* mid-stream connections by what oriented them (cap_side_source_name) */
    fn(ctx, "oriented_port", c->mid_oriented[CAP_SIDE_PORT]);
    fn(ctx, "oriented_known", c->mid_oriented[CAP_SIDE_KNOWN]);
    fn(ctx, "oriented_cluster", c->mid_oriented[CAP_SIDE_CLUSTER]);
    fn(ctx, "oriented_redirect", c->mid_oriented[CAP_SIDE_REDIRECT]);
    fn(ctx, "oriented_replication", c->mid_oriented[CAP_SIDE_REPLICATION]);
    fn(ctx, "oriented_shape", c->mid_oriented[CAP_SIDE_SHAPE]);
    fn(ctx, "oriented_guess", c->mid_oriented[CAP_SIDE_GUESS]);
    fn(ctx, "evicted_connections", c->evicted_connections);
    fn(ctx, "idle_connections", c->idle_connections);
    fn(ctx, "stream_bytes_to_server", c->stream_bytes[CAP_TO_SERVER]);
    fn(ctx, "stream_bytes_to_client", c->stream_bytes[CAP_TO_CLIENT]);
    fn(ctx, "out_of_order", c->out_of_order);
    fn(ctx, "retransmitted", c->retransmitted);
    fn(ctx, "overlaps", c->overlaps);
    fn(ctx, "overlap_conflicts", c->overlap_conflicts);
    fn(ctx, "ooo_dropped", c->ooo_dropped);
    fn(ctx, "out_of_window", c->out_of_window);
    fn(ctx, "gaps", c->gaps);
    fn(ctx, "gap_bytes", c->gap_bytes);
    fn(ctx, "start_gaps", c->start_gaps);
    fn(ctx, "kernel_drops", c->kernel_drops);
    fn(ctx, "if_drops", c->if_drops);
    fn(ctx, "late_packets", c->late_packets);
    fn(ctx, "known_servers_dropped", c->known_servers_dropped);
}

/* RESP decoder and pairing counters. */
static void each_resp_counter(const resp_stats *r, store_counter_fn fn, void *ctx)
{
    fn(ctx, "requests", r->total.requests);
    fn(ctx, "replies", r->total.replies);
    fn(ctx, "pushes", r->total.pushes);
    fn(ctx, "paired", r->total.paired);
    fn(ctx, "unpaired_requests", r->total.unpaired_requests);
    fn(ctx, "unpaired_replies", r->total.unpaired_replies);
    fn(ctx, "resyncs", r->total.resyncs);
    fn(ctx, "skipped_bytes", r->total.skipped_bytes);
    fn(ctx, "protocol_errors", r->total.protocol_errors);
    fn(ctx, "gaps_bridged", r->total.gaps_bridged);
    fn(ctx, "redirect_mismatch", r->total.redirect_mismatch);
    fn(ctx, "start_gaps_answered_none", r->total.start_gaps_answered_none);
    fn(ctx, "replication_connections", r->total.replication);
    fn(ctx, "replication_midstream", r->total.replication_midstream);
    fn(ctx, "replication_reversed", r->total.replication_reversed);
    fn(ctx, "replication_skipped", r->total.replication_skipped);
    fn(ctx, "out_of_sync_connections", r->total.out_of_sync);
    fn(ctx, "resp_connections", r->connections);
    fn(ctx, "dropped_requests", r->dropped_requests);
    fn(ctx, "limit_hits", r->limit_hits);
    fn(ctx, "resp_commands", r->commands);
    fn(ctx, "tls_connections", r->total.tls);
    fn(ctx, "cluster_bus_connections", r->total.cluster_bus);
    fn(ctx, "bus_messages", r->bus.messages);
    for (unsigned t = 0; t < BUS_TYPE_COUNT; t++) {
        char name[48];
        snprintf(name, sizeof name, "bus_%s", bus_type_name(t));
        for (char *p = name; *p; p++)
            if (*p == '-')
                *p = '_';
        fn(ctx, name, r->bus.by_type[t]);
    }
    fn(ctx, "bus_unknown_type", r->bus.unknown_type);
    fn(ctx, "bus_bad", r->bus.bad);
    fn(ctx, "bus_header_only", r->bus.header_only);
    fn(ctx, "bus_resyncs", r->bus.resyncs);
    fn(ctx, "bus_skipped_bytes", r->bus.skipped_bytes);
    fn(ctx, "bus_text_cut", r->bus.text_cut);
    fn(ctx, "bus_bytes", r->total.bus_bytes);
    fn(ctx, "bus_gaps", r->total.bus_gaps);
    fn(ctx, "unanswered_at_end", r->unanswered_at_end);
}

/* Analysis counters. */
static void each_an_counter(const an_stats *a, store_counter_fn fn, void *ctx)
{
    fn(ctx, "commands", a->commands);
    fn(ctx, "keyed_commands", a->keyed_commands);
    fn(ctx, "unknown_commands", a->unknown_commands);
    fn(ctx, "redirects", a->redirects);
    fn(ctx, "moved", a->moved);
    fn(ctx, "ask", a->ask);
    fn(ctx, "tryagain", a->tryagain);
    fn(ctx, "crossslot", a->crossslot);
    fn(ctx, "clusterdown", a->clusterdown);
    fn(ctx, "operations", a->operations);
    fn(ctx, "redirected_operations", a->redirected_operations);
    fn(ctx, "findings", a->findings);
    fn(ctx, "evicted_clients", a->evicted_clients);
    fn(ctx, "dropped_nodes", a->dropped_nodes);
    fn(ctx, "convergence_evicted", a->convergence_evicted);
    fn(ctx, "convergence_dropped", a->convergence_dropped);
    fn(ctx, "evicted_ops", a->evicted_ops);
    fn(ctx, "node_links", a->node_links);
    fn(ctx, "evicted_conns", a->evicted_conns);
    fn(ctx, "evicted_memos", a->evicted_memos);
    fn(ctx, "dropped_findings", a->dropped_findings);
    fn(ctx, "view_drops", a->view_drops);
    fn(ctx, "latency_slots_dropped", a->latency_slots_dropped);
    fn(ctx, "timeline_rows", a->series_rows);
    fn(ctx, "timeline_late", a->series_late);
    fn(ctx, "timeline_overflow", a->series_overflow);
    fn(ctx, "unanswered", a->unanswered);
    fn(ctx, "node_link_commands", a->node_link_commands);
    fn(ctx, "map_replies", a->map_replies);
    fn(ctx, "map_errors", a->map_errors);
    fn(ctx, "abandoned_ops", a->abandoned_ops);
    fn(ctx, "unseen_retry_ops", a->unseen_retry_ops);
    fn(ctx, "unseen_target_ops", a->unseen_target_ops);
    fn(ctx, "keys_lost", a->keys_lost);
    fn(ctx, "readonly_unknown_moved", a->readonly_unknown_moved);
    fn(ctx, "at_risk_unseen", a->at_risk_unseen);
    fn(ctx, "bus_connections", a->bus_connections);
    fn(ctx, "bus_messages_analysed", a->bus_messages);
    fn(ctx, "bus_unknown_sender", a->bus_unknown_sender);
    fn(ctx, "bus_stale_claims", a->bus_stale_claims);
    fn(ctx, "bus_stale_headers", a->bus_stale_headers);
    fn(ctx, "bus_claim_conflicts", a->bus_claim_conflicts);
    fn(ctx, "owner_changes", a->owner_changes);
    fn(ctx, "failovers", a->failovers);
    fn(ctx, "dropped_failovers", a->dropped_failovers);
    fn(ctx, "health_changes", a->health_changes);
    fn(ctx, "dropped_bus_conns", a->dropped_bus_conns);
}

void store_each_counter(const cap_stats *cs, const resp_stats *rs, const an_stats *as,
                        store_counter_fn fn, void *ctx)
{
    if (cs)
        each_cap_counter(cs, fn, ctx);
    if (rs)
        each_resp_counter(rs, fn, ctx);
    if (as)
        each_an_counter(as, fn, ctx);
}

/* Read meta schema_version: the version, or -1 when there is none. */
static int read_schema_version(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int version = -1;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return version;
}

/* The tables of store/schema.sql: report and query read them, and a crafted
 * file may have put a view in their place (a recursive CTE never ends). */
static const char *const schema_tables[] = {
    "meta", "inputs", "nodes", "clients", "connections", "redirects", "findings",
    "slot_migrations", "latency", "counters", "commands", "convergence", "at_risk_writes",
    "timeline",
};

/* The first n tables of the schema are there and are tables (meta is the
 * first: checked alone before the version is read, so that another version's
 * tables are not judged by this one's). 0, or -1 with err. */
static int check_tables(sqlite3 *db, size_t n, const char *path, char *err, size_t err_size)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db, "SELECT type FROM sqlite_schema WHERE name = ?1 COLLATE NOCASE",
                           -1, &st, NULL) != SQLITE_OK)
        return seterr(err, err_size, "'%s' is not a slotscope database (%s)", path,
                      sqlite3_errmsg(db));
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_bind_text(st, 1, schema_tables[i], -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        const char *type = step == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
        if (step != SQLITE_ROW && step != SQLITE_DONE)
            rc = seterr(err, err_size, "'%s' is not a slotscope database (%s)", path,
                        sqlite3_errmsg(db));
        else if (!type)
            rc = seterr(err, err_size, "'%s' is not a slotscope database (no table '%s')", path,
                        schema_tables[i]);
        else if (strcmp(type, "table") != 0)
            rc = seterr(err, err_size, "'%s' is not a slotscope database ('%s' is a %.16s, not "
                        "a table)", path, schema_tables[i], type);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

struct sqlite3 *store_open_readonly(const char *path, char *err, size_t err_size)
{
    sqlite3 *db = NULL;
    struct stat sb;
    int version;

    if (stat(path, &sb) != 0) {
        seterr(err, err_size, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(sb.st_mode)) {
        seterr(err, err_size, "cannot open '%s': Is a directory", path);
        return NULL;
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        seterr(err, err_size, "cannot open '%s': %s", path,
               db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return NULL;
    }
    /* A database still being written (live run) may be busy for a moment. */
    sqlite3_busy_timeout(db, 2000);
    /* The file may be crafted: no function with side effects from its schema,
     * no writes to sqlite_schema, no string or row over 64 MiB (real texts are
     * a few KiB), and its tables must be tables. */
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 64 << 20);
    if (check_tables(db, 1, path, err, err_size) != 0) {
        sqlite3_close(db);
        return NULL;
    }
    version = read_schema_version(db);
    if (version < 0) {
        seterr(err, err_size, "'%s' is not a slotscope database", path);
        sqlite3_close(db);
        return NULL;
    }
    if (version != STORE_SCHEMA_VERSION) {
        seterr(err, err_size, "'%s' has schema version %d; this slotscope reads version %d",
               path, version, STORE_SCHEMA_VERSION);
        sqlite3_close(db);
        return NULL;
    }
    if (check_tables(db, sizeof schema_tables / sizeof schema_tables[0], path, err,
                     err_size) != 0) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}
