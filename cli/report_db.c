/*
 * report_db.c - fill the report model from a database (`slotscope report DB`).
 *
 * Reads the tables store/ wrote, with the same caps the in-memory model has,
 * then report_sort puts everything in the order `analyze` prints it in.
 */
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "cli/cli.h"

/* Column i as text, "" for NULL. */
static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* Times and durations are bounded as the capture bounds record times (up to
 * the year 5138, capture/source.c): a crafted database's INT64 extremes then
 * cannot overflow a difference or the time formatter. */
#define DB_TIME_MAX 100000000000000000LL /* 10^11 s in microseconds */

/* Column i as a time in microseconds, 0 .. DB_TIME_MAX. */
static int64_t col_time(sqlite3_stmt *st, int i)
{
    int64_t v = sqlite3_column_int64(st, i);
    return v < 0 ? 0 : v > DB_TIME_MAX ? DB_TIME_MAX : v;
}

/* Column i as a duration in microseconds, -DB_TIME_MAX .. DB_TIME_MAX. */
static int64_t col_dur(sqlite3_stmt *st, int i)
{
    int64_t v = sqlite3_column_int64(st, i);
    return v < -DB_TIME_MAX ? -DB_TIME_MAX : v > DB_TIME_MAX ? DB_TIME_MAX : v;
}

/* Column i as an int in lo..hi (slots: -1 for none, up to 16383). */
static int col_int_in(sqlite3_stmt *st, int i, int lo, int hi)
{
    int64_t v = sqlite3_column_int64(st, i);
    return v < lo ? lo : v > hi ? hi : (int)v;
}

/* Column i as an unsigned counter (negative values read as 0). */
static uint64_t col_uint(sqlite3_stmt *st, int i)
{
    int64_t v = sqlite3_column_int64(st, i);
    return v > 0 ? (uint64_t)v : 0;
}

static void row_input(report *r, sqlite3_stmt *st)
{
    rep_input in;
    memset(&in, 0, sizeof in);
    snprintf(in.name, sizeof in.name, "%s", col_text(st, 0));
    snprintf(in.linktype, sizeof in.linktype, "%s", col_text(st, 1));
    in.packets = col_uint(st, 2);
    in.bytes = col_uint(st, 3);
    in.kernel_drops = col_uint(st, 4);
    in.if_drops = col_uint(st, 5);
    in.time_backwards = col_uint(st, 6);
    in.first_us = col_time(st, 7);
    in.last_us = col_time(st, 8);
    snprintf(in.error, sizeof in.error, "%s", col_text(st, 9));
    snprintf(in.compression, sizeof in.compression, "%s", col_text(st, 10));
    in.time_offset_us = sqlite3_column_int64(st, 11);
    in.skew_us = sqlite3_column_int64(st, 12);
    in.skew_shared = col_uint(st, 13);
    in.skew_ref = (uint32_t)col_uint(st, 14);
    in.drops_recorded = col_uint(st, 15) != 0;
    report_add_input(r, &in);
}

static void row_node(report *r, sqlite3_stmt *st)
{
    rep_node n;
    memset(&n, 0, sizeof n);
    snprintf(n.observed, sizeof n.observed, "%s", col_text(st, 0));
    snprintf(n.announced, sizeof n.announced, "%s", col_text(st, 1));
    snprintf(n.node_id, sizeof n.node_id, "%s", col_text(st, 2));
    snprintf(n.role, sizeof n.role, "%s", col_text(st, 3));
    n.slots_owned = (uint32_t)col_uint(st, 4);
    n.commands = col_uint(st, 5);
    report_add_node(r, &n);
}

static void row_migration(report *r, sqlite3_stmt *st)
{
    an_migration m;
    memset(&m, 0, sizeof m);
    m.slot = col_int_in(st, 0, -1, 16383);
    snprintf(m.source, sizeof m.source, "%s", col_text(st, 1));
    snprintf(m.target, sizeof m.target, "%s", col_text(st, 2));
    m.first_ask_us = col_time(st, 3);
    m.last_ask_us = col_time(st, 4);
    m.flip_us = col_time(st, 5);
    m.importing_us = col_time(st, 6);
    m.migrating_us = col_time(st, 7);
    m.asks = col_uint(st, 8);
    m.tryagains = col_uint(st, 9);
    m.moveds = col_uint(st, 10);
    m.keys_migrated = col_uint(st, 11);
    m.complete = (uint8_t)sqlite3_column_int(st, 12);
    report_add_migration(r, &m);
}

static void row_convergence(report *r, sqlite3_stmt *st)
{
    rep_convergence c;
    memset(&c, 0, sizeof c);
    snprintf(c.client, sizeof c.client, "%s", col_text(st, 0));
    c.slot_lo = col_int_in(st, 1, -1, 16383);
    c.slot_hi = col_int_in(st, 2, -1, 16383);
    snprintf(c.old_node, sizeof c.old_node, "%s", col_text(st, 3));
    snprintf(c.new_node, sizeof c.new_node, "%s", col_text(st, 4));
    snprintf(c.source, sizeof c.source, "%s", col_text(st, 5));
    c.flip_us = col_time(st, 6);
    c.config_epoch = col_uint(st, 7);
    c.last_stale_us = col_time(st, 8);
    c.converged_us = col_time(st, 9);
    c.stale_commands = col_uint(st, 10);
    c.moved_replies = col_uint(st, 11);
    c.at_risk_writes = col_uint(st, 12);
    report_add_convergence(r, &c);
}

static void row_failover(report *r, sqlite3_stmt *st)
{
    rep_failover f;
    memset(&f, 0, sizeof f);
    f.ts_us = col_time(st, 0);
    snprintf(f.kind, sizeof f.kind, "%s", col_text(st, 1));
    snprintf(f.old_master, sizeof f.old_master, "%s", col_text(st, 2));
    snprintf(f.old_id, sizeof f.old_id, "%s", col_text(st, 3));
    snprintf(f.new_master, sizeof f.new_master, "%s", col_text(st, 4));
    snprintf(f.new_id, sizeof f.new_id, "%s", col_text(st, 5));
    f.config_epoch = col_uint(st, 6);
    f.detected_us = col_time(st, 7);
    f.elected_us = col_time(st, 8);
    f.done_us = col_time(st, 9);
    f.votes = (uint32_t)col_uint(st, 10);
    f.slots = (uint32_t)col_uint(st, 11);
    report_add_failover(r, &f);
}

static void row_owner_sources(report *r, sqlite3_stmt *st)
{
    r->owner_rows_bus = col_uint(st, 0);
    r->owner_rows_clients = col_uint(st, 1);
}

static void row_finding(report *r, sqlite3_stmt *st)
{
    rep_finding f;
    memset(&f, 0, sizeof f);
    f.id = col_uint(st, 0);
    snprintf(f.kind, sizeof f.kind, "%s", col_text(st, 1));
    snprintf(f.severity, sizeof f.severity, "%s", col_text(st, 2));
    f.severity_level = col_int_in(st, 3, 0, 100);
    snprintf(f.client, sizeof f.client, "%s", col_text(st, 4));
    snprintf(f.node, sizeof f.node, "%s", col_text(st, 5));
    f.slot = col_int_in(st, 6, -1, 16383);
    f.first_us = col_time(st, 7);
    f.last_us = col_time(st, 8);
    f.count = col_uint(st, 9);
    f.extra_latency_us = col_dur(st, 10);
    f.operations = col_uint(st, 13);
    snprintf(f.summary, sizeof f.summary, "%s", col_text(st, 11));
    /* The store writes "{}" for a finding without evidence. */
    report_add_finding(r, &f, strcmp(col_text(st, 12), "{}") ? col_text(st, 12) : NULL);
}

static void row_latency(report *r, sqlite3_stmt *st)
{
    rep_latency l;
    memset(&l, 0, sizeof l);
    snprintf(l.scope, sizeof l.scope, "%s", col_text(st, 0));
    snprintf(l.key, sizeof l.key, "%s", col_text(st, 1));
    l.redirected = sqlite3_column_int(st, 2) != 0;
    l.count = col_uint(st, 3);
    l.p50_us = col_dur(st, 4);
    l.p90_us = col_dur(st, 5);
    l.p99_us = col_dur(st, 6);
    l.max_us = col_dur(st, 7);
    l.total_us = col_dur(st, 8);
    l.extra_us = col_dur(st, 9);
    l.extra_round_trips = col_uint(st, 10);
    report_add_latency(r, &l);
}

static void row_counter(report *r, sqlite3_stmt *st)
{
    report_add_counter(r, col_text(st, 0), col_uint(st, 1));
}

/* A client that announced who it is. */
static void row_ident(report *r, sqlite3_stmt *st)
{
    an_ident id;
    memset(&id, 0, sizeof id);
    snprintf(id.lib_name, sizeof id.lib_name, "%s", col_text(st, 1));
    snprintf(id.lib_ver, sizeof id.lib_ver, "%s", col_text(st, 2));
    snprintf(id.client_name, sizeof id.client_name, "%s", col_text(st, 3));
    report_add_client(r, col_text(st, 0), &id);
}

/* A run that finished wrote meta end_us (store_close). */
static void row_end(report *r, sqlite3_stmt *st)
{
    r->interrupted = sqlite3_column_int(st, 0) == 0;
}

/* A run stopped early by a signal wrote meta stopped_by (pipeline_note_stop). */
static void row_stopped(report *r, sqlite3_stmt *st)
{
    snprintf(r->stopped_by, sizeof r->stopped_by, "%s", col_text(st, 0));
}

/* analyze --since/--until wrote meta window. */
static void row_window(report *r, sqlite3_stmt *st)
{
    snprintf(r->window, sizeof r->window, "%s", col_text(st, 0));
}

/* analyze (capture files) or live wrote meta mode. */
static void row_mode(report *r, sqlite3_stmt *st)
{
    r->from_files = strcmp(col_text(st, 0), "analyze") == 0;
}

static void row_clients(report *r, sqlite3_stmt *st)
{
    r->clients = col_uint(st, 0);
    r->clients_aware = col_uint(st, 1);
    r->clients_nodes = col_uint(st, 2);
}

/* Run sql and hand each row to fn. 0, or -1 with err. */
static int each_row(sqlite3 *db, const char *sql, void (*fn)(report *, sqlite3_stmt *), report *r,
                    char *err, size_t err_size)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        fn(r, st);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, err_size, "cannot read the database: %s", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

int report_load_db(report *r, sqlite3 *db, char *err, size_t err_size)
{
    static const struct {
        const char *sql;
        void (*fn)(report *, sqlite3_stmt *);
    } reads[] = {
        {"SELECT name, linktype_name, packets, bytes, kernel_drops, if_drops, time_backwards,"
         " first_us, last_us, error, compression, time_offset_us, skew_us, skew_shared,"
         " skew_ref, drops_recorded FROM inputs ORDER BY id", row_input},
        {"SELECT observed, announced, node_id, role, slots_owned, commands FROM nodes ORDER BY id",
         row_node},
        {"SELECT slot, source, target, first_ask_us, last_ask_us, flip_us, importing_us,"
         " migrating_us, asks, tryagains, moveds, keys_migrated, complete FROM slot_migrations"
         " ORDER BY id", row_migration},
        {"SELECT ts_us, kind, old_master, old_id, new_master, new_id, config_epoch, detected_us,"
         " elected_us, done_us, votes, slots FROM failovers ORDER BY id", row_failover},
        {"SELECT client, slot_lo, slot_hi, old_node, new_node, source, flip_us, config_epoch,"
         " last_stale_us, converged_us, stale_commands, moved_replies, at_risk_writes"
         " FROM convergence ORDER BY id", row_convergence},
        {"SELECT coalesce(sum(source = 'bus'), 0), coalesce(sum(source <> 'bus'), 0)"
         " FROM slot_owners", row_owner_sources},
        {"SELECT id, kind, severity, severity_level, client, node, slot, first_us, last_us, count,"
         " extra_latency_us, summary, evidence, operations FROM findings ORDER BY id",
         row_finding},
        {"SELECT scope, key, redirected, count, p50_us, p90_us, p99_us, max_us, total_us,"
         " extra_us, extra_round_trips FROM latency", row_latency},
        {"SELECT name, value FROM counters", row_counter},
        {"SELECT count(*), coalesce(sum(cluster_aware <> 0), 0), coalesce(sum(is_node <> 0), 0)"
         " FROM clients", row_clients},
        {"SELECT name, lib_name, lib_ver, client_name FROM clients WHERE lib_name <> ''"
         " OR lib_ver <> '' OR client_name <> '' ORDER BY name", row_ident},
        {"SELECT count(*) FROM meta WHERE key = 'end_us'", row_end},
        {"SELECT value FROM meta WHERE key = 'stopped_by'", row_stopped},
        {"SELECT value FROM meta WHERE key = 'window'", row_window},
        {"SELECT value FROM meta WHERE key = 'mode'", row_mode},
    };
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
        if (each_row(db, reads[i].sql, reads[i].fn, r, err, err_size) != 0)
            return -1;
    report_sort(r);
    return 0;
}
