/*
 * filter.c - --since/--until, --client, --slot and --node for report and
 * query (and the time window of analyze).
 *
 * On a database the filters become temporary views named like the tables
 * they filter (findings, redirects, connections, commands, clients,
 * slot_migrations): SQLite resolves an unqualified name in the temp schema
 * first, so the report's reads and every canned query see only the rows
 * that match, without a line of them changed. Summaries (latency,
 * counters, inputs, nodes) stay the whole run's.
 *
 * Times: "+30s", "+1.5m", "+250ms", "+2h", "+90" (seconds) from the capture's
 * start (its first packet); "2026-12-01T15:43:09.250Z" or "2026-12-01
 * 15:43:09" (UTC); "15:43:09.250" (UTC, on the capture's first day);
 * "@1796024064.5" (seconds since the epoch); a plain number of 16 digits or
 * more is microseconds since the epoch, as the database's _us columns.
 * A value that names nothing (an unknown client or node, a slot out of
 * range, a time that does not parse, since after until) is a usage error.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "cli/cli.h"

/* Seconds of a duration with a unit ("30s", "1.5m", "250ms"); -1 if bad. */
static int parse_duration(const char *s, int64_t *us)
{
    char *end;
    double v = strtod(s, &end), mul = 1e6;
    if (end == s || v < 0 || v > 1e9)
        return -1;
    if (!strcmp(end, "") || !strcmp(end, "s"))
        mul = 1e6;
    else if (!strcmp(end, "ms"))
        mul = 1e3;
    else if (!strcmp(end, "us"))
        mul = 1;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        mul = 60e6;
    else if (!strcmp(end, "h"))
        mul = 3600e6;
    else
        return -1;
    *us = (int64_t)(v * mul + 0.5);
    return 0;
}

/* "HH:MM:SS[.frac]" into microseconds of the day; -1 if bad. p advances. */
static int parse_clock(const char **p, int64_t *us)
{
    int h, m, s, n = 0;
    double frac = 0;
    if (sscanf(*p, "%2d:%2d:%2d%n", &h, &m, &s, &n) != 3 || h > 23 || m > 59 || s > 60)
        return -1;
    *p += n;
    if (**p == '.') {
        char *end;
        frac = strtod(*p, &end);
        *p = end;
    }
    *us = ((int64_t)h * 3600 + m * 60 + s) * 1000000 + (int64_t)(frac * 1e6 + 0.5);
    return 0;
}

/* Days since the epoch of a civil date (proleptic Gregorian). */
static int64_t days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int cli_parse_time(const char *text, int64_t start_us, int64_t *out)
{
    const char *p = text;
    int y, mo, d, n = 0;
    int64_t v;
    if (!text || !*text)
        return -1;
    if (*p == '+') {
        if (parse_duration(p + 1, &v) != 0)
            return -1;
        *out = start_us + v;
        return 0;
    }
    if (*p == '@') {
        char *end;
        double s = strtod(p + 1, &end);
        if (end == p + 1 || *end || s < 0 || s > 1e11)
            return -1;
        *out = (int64_t)(s * 1e6 + 0.5);
        return 0;
    }
    if (strlen(p) >= 16 && strspn(p, "0123456789") == strlen(p)) {
        *out = strtoll(p, NULL, 10);
        return 0;
    }
    if (sscanf(p, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && n == 10) {
        if (mo < 1 || mo > 12 || d < 1 || d > 31 || (p[10] != 'T' && p[10] != ' '))
            return -1;
        p += 11;
        if (parse_clock(&p, &v) != 0)
            return -1;
        if (*p == 'Z')
            p++;
        if (*p)
            return -1;
        *out = days_from_civil(y, mo, d) * 86400000000LL + v;
        return 0;
    }
    if (parse_clock(&p, &v) == 0 && !*p && start_us > 0) {
        *out = start_us / 86400000000LL * 86400000000LL + v;
        return 0;
    }
    return -1;
}

int cli_filter_option(cli_filter *f, const char *cmd, int argc, char **argv, int *i)
{
    static const char *const names[] = {"--since", "--until", "--client", "--slot", "--node"};
    const char *s = argv[*i], *v = NULL;
    size_t k;
    for (k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t n = strlen(names[k]);
        if (!strncmp(s, names[k], n) && (s[n] == 0 || s[n] == '=')) {
            v = s[n] == '=' ? s + n + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
            break;
        }
    }
    if (k == sizeof names / sizeof names[0])
        return 0;
    if (!v || !*v) {
        cli_usage_error(cmd, "%s needs a value", names[k]);
        return -1;
    }
    switch (k) {
    case 0: f->since = v; break;
    case 1: f->until = v; break;
    case 2: f->client = v; break;
    case 3: {
        char *end;
        long slot = strtol(v, &end, 10);
        if (*end || end == v || slot < 0 || slot > 16383) {
            cli_usage_error(cmd, "bad --slot '%s' (0-16383)", v);
            return -1;
        }
        f->slot = (int32_t)slot;
        f->has_slot = 1;
        break;
    }
    default: f->node = v; break;
    }
    return 1;
}

int cli_filter_times(cli_filter *f, const char *cmd, int64_t start_us)
{
    if (f->since && cli_parse_time(f->since, start_us, &f->since_us) != 0)
        return cli_usage_error(cmd, "bad --since '%s' (+30s, 2026-12-01T15:43:09Z, "
                                    "15:43:09, @SECONDS)", f->since);
    if (f->until && cli_parse_time(f->until, start_us, &f->until_us) != 0)
        return cli_usage_error(cmd, "bad --until '%s' (+30s, 2026-12-01T15:43:09Z, "
                                    "15:43:09, @SECONDS)", f->until);
    if (f->since && f->until && f->since_us > f->until_us)
        return cli_usage_error(cmd, "--since '%s' is after --until '%s'", f->since, f->until);
    return 0;
}

/* The first integer of a one-row query on db (def when no row). */
static int64_t query_int(sqlite3 *db, const char *sql, const char *arg, int64_t def)
{
    sqlite3_stmt *st = NULL;
    int64_t v = def;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (arg)
            sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

/* A few names of the clients table, for the message about an unknown one. */
static void some_clients(sqlite3 *db, char *out, size_t size)
{
    sqlite3_stmt *st = NULL;
    size_t len = 0;
    int n = 0;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, "SELECT name FROM main.clients WHERE is_node = 0"
                               " ORDER BY commands DESC, name LIMIT 6", -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW && len + 1 < size) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (n++ == 5) {
            len += (size_t)snprintf(out + len, size - len, ", ...");
            break;
        }
        len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "", name ? name : "");
    }
    sqlite3_finalize(st);
}

int cli_filter_check_client(sqlite3 *db, const char *cmd, const char *client)
{
    char hint[400];
    if (query_int(db, "SELECT count(*) FROM main.clients WHERE name = ?1", client, 0) > 0 ||
        query_int(db, "SELECT count(*) FROM main.findings WHERE client = ?1", client, 0) > 0)
        return 0;
    some_clients(db, hint, sizeof hint);
    fprintf(stderr, "slotscope %s: unknown client '", cmd);
    cli_print_safe(stderr, client);
    fputs("' (not in the clients table", stderr);
    if (hint[0]) {
        fputs("; clients: ", stderr);
        cli_print_safe(stderr, hint);
    }
    fputs(")\n", stderr);
    return EXIT_USAGE;
}

/* Run one statement; 0 or -1 with the message printed. */
static int exec(sqlite3 *db, const char *cmd, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    fprintf(stderr, "slotscope %s: cannot filter: %s\n", cmd, msg ? msg : "?");
    sqlite3_free(msg);
    return -1;
}

/* The filters' values, for the views to read: temp table filter_values. */
static int store_values(sqlite3 *db, const char *cmd, const cli_filter *f)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (exec(db, cmd, "CREATE TEMP TABLE filter_values (client TEXT, node TEXT, slot INTEGER,"
                      " since_us INTEGER, until_us INTEGER)") != 0)
        return -1;
    rc = sqlite3_prepare_v2(db, "INSERT INTO filter_values VALUES (?1, ?2, ?3, ?4, ?5)", -1, &st,
                            NULL);
    if (rc == SQLITE_OK) {
        f->client ? sqlite3_bind_text(st, 1, f->client, -1, SQLITE_TRANSIENT)
                  : sqlite3_bind_null(st, 1);
        f->node ? sqlite3_bind_text(st, 2, f->node, -1, SQLITE_TRANSIENT)
                : sqlite3_bind_null(st, 2);
        f->has_slot ? sqlite3_bind_int(st, 3, f->slot) : sqlite3_bind_null(st, 3);
        f->since ? sqlite3_bind_int64(st, 4, f->since_us) : sqlite3_bind_null(st, 4);
        f->until ? sqlite3_bind_int64(st, 5, f->until_us) : sqlite3_bind_null(st, 5);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "slotscope %s: cannot filter: %s\n", cmd, sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

/* The views: each keeps the rows of its table that match every filter
 * given (v: the one-row filter_values; a NULL value matches all). A node
 * matches by its observed or announced address; a finding without a node
 * (redirect_loop) when its evidence names it. Rows with a time span match
 * when it overlaps the window. */
static const char views_sql[] =
    "CREATE TEMP VIEW filter_nodes AS"
    " SELECT observed AS a FROM main.nodes, filter_values v WHERE v.node IN (observed, announced)"
    " UNION SELECT announced FROM main.nodes, filter_values v WHERE v.node IN (observed, announced)"
    " UNION SELECT node FROM filter_values;"
    "CREATE TEMP VIEW findings AS SELECT f.* FROM main.findings f, filter_values v"
    " WHERE (v.client IS NULL OR f.client = v.client)"
    " AND (v.slot IS NULL OR f.slot = v.slot)"
    " AND (v.node IS NULL OR f.node IN (SELECT a FROM filter_nodes)"
    "      OR (f.node = '' AND EXISTS (SELECT 1 FROM filter_nodes n"
    "          WHERE n.a <> '' AND instr(f.evidence, '\"' || n.a || '\"') > 0)))"
    " AND (v.since_us IS NULL OR f.last_us >= v.since_us)"
    " AND (v.until_us IS NULL OR f.first_us <= v.until_us);"
    "CREATE TEMP VIEW redirects AS SELECT r.* FROM main.redirects r, filter_values v"
    " WHERE (v.client IS NULL OR r.client = v.client)"
    " AND (v.slot IS NULL OR r.slot = v.slot)"
    " AND (v.node IS NULL OR r.node IN (SELECT a FROM filter_nodes)"
    "      OR r.target IN (SELECT a FROM filter_nodes))"
    " AND (v.since_us IS NULL OR r.ts_us >= v.since_us)"
    " AND (v.until_us IS NULL OR r.ts_us <= v.until_us);"
    "CREATE TEMP VIEW connections AS SELECT c.* FROM main.connections c, filter_values v"
    " WHERE (v.client IS NULL OR c.client = v.client)"
    " AND (v.node IS NULL OR c.dst IN (SELECT a FROM filter_nodes))"
    " AND (v.since_us IS NULL OR c.last_us >= v.since_us)"
    " AND (v.until_us IS NULL OR c.first_us <= v.until_us);"
    "CREATE TEMP VIEW commands AS SELECT c.* FROM main.commands c, filter_values v"
    " WHERE (v.client IS NULL OR c.client = v.client)"
    " AND (v.slot IS NULL OR c.slot = v.slot)"
    " AND (v.node IS NULL OR c.node IN (SELECT a FROM filter_nodes))"
    " AND (v.since_us IS NULL OR c.ts_us >= v.since_us)"
    " AND (v.until_us IS NULL OR c.ts_us <= v.until_us);"
    "CREATE TEMP VIEW clients AS SELECT c.* FROM main.clients c, filter_values v"
    " WHERE (v.client IS NULL OR c.name = v.client);"
    "CREATE TEMP VIEW slot_migrations AS SELECT m.* FROM main.slot_migrations m, filter_values v"
    " WHERE (v.slot IS NULL OR m.slot = v.slot)"
    " AND (v.node IS NULL OR m.source IN (SELECT a FROM filter_nodes)"
    "      OR m.target IN (SELECT a FROM filter_nodes))"
    " AND (v.since_us IS NULL OR max(m.first_ask_us, m.last_ask_us, m.flip_us, m.importing_us,"
    "      m.migrating_us) >= v.since_us)"
    " AND (v.until_us IS NULL OR (SELECT min(x) FROM (SELECT m.first_ask_us AS x UNION ALL"
    "      SELECT m.importing_us UNION ALL SELECT m.migrating_us UNION ALL SELECT m.flip_us)"
    "      WHERE x > 0) <= v.until_us);"
    "CREATE TEMP VIEW convergence AS SELECT c.* FROM main.convergence c, filter_values v"
    " WHERE (v.client IS NULL OR c.client = v.client)"
    " AND (v.slot IS NULL OR v.slot BETWEEN c.slot_lo AND c.slot_hi)"
    " AND (v.node IS NULL OR c.old_node IN (SELECT a FROM filter_nodes)"
    "      OR c.new_node IN (SELECT a FROM filter_nodes))"
    " AND (v.since_us IS NULL OR max(c.flip_us, c.last_stale_us) >= v.since_us)"
    " AND (v.until_us IS NULL OR c.flip_us <= v.until_us);"
    "CREATE TEMP VIEW at_risk_writes AS SELECT w.* FROM main.at_risk_writes w, filter_values v"
    " WHERE (v.client IS NULL OR w.client = v.client)"
    " AND (v.slot IS NULL OR w.slot = v.slot)"
    " AND (v.node IS NULL OR w.node IN (SELECT a FROM filter_nodes)"
    "      OR w.new_node IN (SELECT a FROM filter_nodes))"
    " AND (v.since_us IS NULL OR w.ts_us >= v.since_us)"
    " AND (v.until_us IS NULL OR w.ts_us <= v.until_us);"
    /* the grouped view over the filtered findings */
    "CREATE TEMP VIEW finding_blocks AS SELECT * FROM main.finding_blocks WHERE 0;";

/* finding_blocks reads main.findings by its stored definition: the temp one
 * takes the same text over the filtered findings instead. */
static int filtered_blocks(sqlite3 *db, const char *cmd)
{
    sqlite3_stmt *st = NULL;
    char *sql = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "SELECT sql FROM main.sqlite_schema WHERE type = 'view'"
                               " AND name = 'finding_blocks'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const char *def = (const char *)sqlite3_column_text(st, 0);
        const char *as = def ? strstr(def, " AS\n") : NULL;
        if (as && (sql = malloc(strlen(as) + 64)) != NULL) {
            sprintf(sql, "CREATE TEMP VIEW finding_blocks%s", as);
            rc = exec(db, cmd, "DROP VIEW temp.finding_blocks") || exec(db, cmd, sql) ? -1 : 0;
        }
    }
    sqlite3_finalize(st);
    free(sql);
    return rc;
}

int cli_filter_apply(cli_filter *f, const char *cmd, sqlite3 *db, char *desc, size_t size)
{
    int64_t start = query_int(db, "SELECT min(first_us) FROM main.inputs WHERE packets > 0", NULL, 0);
    size_t len = 0;
    int rc;
    desc[0] = 0;
    if (!f->since && !f->until && !f->client && !f->node && !f->has_slot)
        return 0;
    if ((rc = cli_filter_times(f, cmd, start)) != 0)
        return rc;
    if (f->client && (rc = cli_filter_check_client(db, cmd, f->client)) != 0)
        return rc;
    if (f->node && query_int(db, "SELECT count(*) FROM main.nodes WHERE ?1 IN (observed, announced)",
                             f->node, 0) == 0)
        return cli_usage_error(cmd, "unknown node '%s' (not in the nodes table; give "
                                    "host:port as the report prints it)", f->node);
    if (store_values(db, cmd, f) != 0 || exec(db, cmd, views_sql) != 0 ||
        filtered_blocks(db, cmd) != 0)
        return EXIT_RUNTIME;
    if (f->client)
        len += (size_t)snprintf(desc + len, size - len, "client %s", f->client);
    if (f->node && len < size)
        len += (size_t)snprintf(desc + len, size - len, "%snode %s", len ? ", " : "", f->node);
    if (f->has_slot && len < size)
        len += (size_t)snprintf(desc + len, size - len, "%sslot %d", len ? ", " : "", f->slot);
    if (f->since && len < size)
        len += (size_t)snprintf(desc + len, size - len, "%ssince %s", len ? ", " : "", f->since);
    if (f->until && len < size)
        snprintf(desc + len, size - len, "%suntil %s", len ? ", " : "", f->until);
    return 0;
}
