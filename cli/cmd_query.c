/*
 * cmd_query.c - `slotscope query DB NAME [--param KEY=VALUE]... [--json]` and
 * `slotscope query --list`.
 *
 * The canned queries are the files of queries/, compiled into the binary (so
 * an installed slotscope works anywhere); NAME may also be the path of any
 * .sql file. Parameters go into a temporary table, params(key, value), which
 * the queries read as (SELECT value FROM params WHERE key = 'client'): the same
 * file then works in the sqlite3 shell after
 *   CREATE TEMP TABLE params (key TEXT PRIMARY KEY, value TEXT);
 *   INSERT INTO params VALUES ('client', '10.0.0.5');
 * Every statement of the file runs in turn; each result set is printed as an
 * aligned table, JSON lines (--json) or CSV (--csv). In JSON and CSV every
 * row carries the number of its result set (1 = the first statement that
 * returns rows), so that a multi-statement query can be split again.
 */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#ifndef SLOTSCOPE_QUERIES_DIR
#define SLOTSCOPE_QUERIES_DIR ""
#endif

#define MAX_PARAMS 32
#define TABLE_ROWS 1000    /* rows buffered to size the columns; later rows stream */
#define CELL_MAX 80        /* widest column shown; longer values are cut */
#define QUERY_FILE_MAX (1 << 20)

static const char query_usage[] =
    "usage: slotscope query DB NAME [--param KEY=VALUE]... [--json|--csv] [filters]\n"
    "       slotscope query --list\n"
    "\n"
    "Run a canned query (or the .sql file at NAME) on a database written by\n"
    "analyze or live with --db. The queries are plain SQL files that also work\n"
    "with the sqlite3 shell: sqlite3 -header -column DB < queries/NAME.sql\n"
    "\n"
    "options:\n"
    "  --param KEY=VALUE  a parameter of the query (e.g. --param client=10.0.0.5);\n"
    "                     one the query does not read, or an unknown client, is an\n"
    "                     error (exit 2)\n"
    "  --client NAME, --slot N, --node HOST:PORT, --since TIME, --until TIME\n"
    "                     run the query over only the matching findings, redirects,\n"
    "                     connections, commands, clients and migrations (times as\n"
    "                     in slotscope report --help)\n"
    "  --json             one JSON object per row; \"result_set\" says which\n"
    "                     statement's result it is (1, 2, ...)\n"
    "  --csv              RFC 4180 CSV: a header per result set, each line's first\n"
    "                     field the result set's number; text that a spreadsheet\n"
    "                     would run as a formula (= + - @ first) gets a ' before it\n"
    "  --list             the canned queries and the question each answers\n"
    "  --help, -h         this help\n";

/* What the command line asked for. */
typedef struct query_args {
    const char *db;
    const char *name;
    const char *params[MAX_PARAMS]; /* "key=value" */
    size_t n_params;
    int json;
    int csv;
    int list;
    cli_filter filter;
} query_args;

/* ---------------------------------------------------------------- finding queries */

/* The header line of a query without "-- NAME: " (up to the newline). */
static void header_line(const char *text, char *out, size_t size)
{
    const char *p = text, *colon;
    size_t len = strcspn(p, "\n");
    if (!strncmp(p, "-- ", 3)) {
        colon = memchr(p, ':', len);
        if (colon) {
            len -= (size_t)(colon + 2 - p);
            p = colon + 2;
        }
    }
    snprintf(out, size, "%.*s", (int)len, p);
}

static int list_queries(void)
{
    for (size_t i = 0; i < cli_n_queries; i++) {
        char head[256];
        header_line(cli_queries[i].text, head, sizeof head);
        printf("%-18s %s\n", cli_queries[i].name, head);
    }
    return EXIT_OK;
}

/* Read a whole file (malloc'd, NUL-terminated), or NULL. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text;
    size_t n;
    if (!f)
        return NULL;
    text = malloc(QUERY_FILE_MAX + 1);
    if (text) {
        n = fread(text, 1, QUERY_FILE_MAX, f);
        text[n] = 0;
    }
    fclose(f);
    return text;
}

/* The query's text: compiled in, a file path, or the source tree's queries/.
 * Malloc'd; NULL when there is none. */
static char *find_query(const char *name)
{
    char path[1024];
    for (size_t i = 0; i < cli_n_queries; i++)
        if (!strcmp(cli_queries[i].name, name))
            return strdup(cli_queries[i].text);
    if (strchr(name, '/') || strstr(name, ".sql"))
        return read_file(name);
    if (!SLOTSCOPE_QUERIES_DIR[0])
        return NULL;
    snprintf(path, sizeof path, "%s/%s.sql", SLOTSCOPE_QUERIES_DIR, name);
    return read_file(path);
}

/* The parameter a query's header asks for ("-- Parameter: client, ..."), or "". */
static void required_param(const char *text, char *out, size_t size)
{
    const char *p = strstr(text, "\n-- Parameter: ");
    size_t len;
    out[0] = 0;
    if (!p)
        return;
    p += strlen("\n-- Parameter: ");
    len = strspn(p, "abcdefghijklmnopqrstuvwxyz_0123456789");
    snprintf(out, size, "%.*s", (int)len, p);
}

/* Was key=... given? */
static int has_param(const query_args *a, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < a->n_params; i++)
        if (!strncmp(a->params[i], key, n) && a->params[i][n] == '=')
            return 1;
    return 0;
}

/* The value of --param key, or NULL. */
static const char *param_value(const query_args *a, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < a->n_params; i++)
        if (!strncmp(a->params[i], key, n) && a->params[i][n] == '=')
            return a->params[i] + n + 1;
    return NULL;
}

/* Does the query read parameter key ("key = 'KEY'" in its text)? */
static int reads_param(const char *sql, const char *key, size_t n)
{
    char pat[96];
    snprintf(pat, sizeof pat, "key = '%.*s'", (int)n, key);
    return strstr(sql, pat) != NULL;
}

/* Every --param is read by the query, and a client one names a client.
 * 0, or EXIT_USAGE printed. */
static int check_params(const query_args *a, const char *sql, sqlite3 *db)
{
    const char *client = param_value(a, "client");
    for (size_t i = 0; i < a->n_params; i++) {
        size_t n = strcspn(a->params[i], "=");
        if (!reads_param(sql, a->params[i], n))
            return cli_usage_error("query", "query '%s' has no parameter '%.*s'", a->name,
                                   (int)n, a->params[i]);
    }
    return client ? cli_filter_check_client(db, "query", client) : 0;
}

/* ---------------------------------------------------------------- printing */

/* Copy a value for display: what cli_safe_len refuses as \xNN (the same rule
 * as every other output), cut to CELL_MAX. */
static void display_value(const char *v, char *out, size_t size)
{
    size_t o = 0, n = strlen(v), k;
    for (const unsigned char *p = (const unsigned char *)v; *p && o + 5 < size; p += k, n -= k) {
        k = cli_safe_len(p, n, 0);
        if (k == 0) {
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", *p);
            k = 1;
        } else {
            memcpy(out + o, p, k);
            o += k;
        }
    }
    out[o] = 0;
    if (o > CELL_MAX)
        memcpy(out + CELL_MAX - 3, "...", 4);
}

/* Column i of the current row for display (NULL as ""). Malloc'd. */
static char *cell(sqlite3_stmt *st, int i)
{
    char buf[CELL_MAX * 4 + 8];
    const unsigned char *t = sqlite3_column_text(st, i);
    display_value(t ? (const char *)t : "", buf, sizeof buf);
    return strdup(buf);
}

/* One row of cells, padded to the widths. */
static void print_cells(char **cells, const size_t *width, int ncol)
{
    for (int i = 0; i < ncol; i++)
        printf("%s%-*s", i ? "  " : "", i == ncol - 1 ? 0 : (int)width[i], cells[i] ? cells[i] : "");
    putchar('\n');
}

/* The header and the dashes under it. */
static void print_header(sqlite3_stmt *st, const size_t *width, int ncol)
{
    for (int i = 0; i < ncol; i++) {
        char name[CELL_MAX * 4 + 8];
        display_value(sqlite3_column_name(st, i), name, sizeof name);
        printf("%s%-*s", i ? "  " : "", i == ncol - 1 ? 0 : (int)width[i], name);
    }
    putchar('\n');
    for (int i = 0; i < ncol; i++) {
        printf("%s", i ? "  " : "");
        for (size_t k = 0; k < width[i]; k++)
            putchar('-');
    }
    putchar('\n');
}

/* Free the buffered rows' cells. */
static void free_rows(char **rows, size_t nrows, int ncol)
{
    for (size_t r = 0; r < nrows * (size_t)ncol; r++)
        free(rows[r]);
}

/* Print a result set as an aligned table: the first TABLE_ROWS rows size the
 * columns, the rest stream with those widths. Returns the step result. */
static int print_table(sqlite3_stmt *st)
{
    int ncol = sqlite3_column_count(st), rc;
    size_t *width = calloc((size_t)ncol, sizeof *width);
    char **rows = calloc((size_t)ncol * TABLE_ROWS, sizeof *rows);
    size_t nrows = 0;
    if (!width || !rows) {
        free(width);
        free(rows);
        return SQLITE_NOMEM;
    }
    for (int i = 0; i < ncol; i++)
        width[i] = strlen(sqlite3_column_name(st, i));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && nrows < TABLE_ROWS) {
        for (int i = 0; i < ncol; i++) {
            char *c = rows[nrows * (size_t)ncol + (size_t)i] = cell(st, i);
            if (c && strlen(c) > width[i])
                width[i] = strlen(c);
        }
        nrows++;
    }
    print_header(st, width, ncol);
    for (size_t r = 0; r < nrows; r++)
        print_cells(rows + r * (size_t)ncol, width, ncol);
    free_rows(rows, nrows, ncol);
    for (; rc == SQLITE_ROW; rc = sqlite3_step(st)) {
        for (int i = 0; i < ncol; i++)
            rows[i] = cell(st, i);
        print_cells(rows, width, ncol);
        free_rows(rows, 1, ncol);
    }
    free(width);
    free(rows);
    return rc;
}

/* Print a result set as JSON lines: {"result_set":N, then the columns};
 * integers as integers, reals with the fewest digits that read back the same
 * (json_double), NULL as null. */
static int print_json_rows(sqlite3_stmt *st, int set)
{
    int ncol = sqlite3_column_count(st), rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        printf("{\"result_set\":%d", set);
        for (int i = 0; i < ncol; i++) {
            putchar(',');
            json_string(stdout, sqlite3_column_name(st, i));
            putchar(':');
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_INTEGER: printf("%" PRId64, (int64_t)sqlite3_column_int64(st, i)); break;
            case SQLITE_FLOAT: json_double(stdout, sqlite3_column_double(st, i)); break;
            case SQLITE_NULL: fputs("null", stdout); break;
            default: json_string(stdout, (const char *)sqlite3_column_text(st, i)); break;
            }
        }
        puts("}");
    }
    return rc;
}

/* One CSV field of text (RFC 4180): quoted when it holds a comma, a quote,
 * CR or LF, quotes doubled. Bytes cli_safe_len refuses become \xNN as in
 * every other output (a capture's bytes must not drive the terminal the CSV
 * is printed on). Text that begins with = + - @ is what a spreadsheet runs
 * as a formula (CSV injection: a client name set by CLIENT SETNAME could be
 * "=HYPERLINK(...)"), so it gets a ' before it, which spreadsheets show as
 * text; numbers are never text here, so -5 stays -5. */
static void csv_text(const char *v)
{
    const unsigned char *p = (const unsigned char *)(v ? v : "");
    size_t n = strlen((const char *)p);
    int quote = strpbrk((const char *)p, ",\"\r\n") != NULL;
    if (quote)
        putchar('"');
    if (*p == '=' || *p == '+' || *p == '-' || *p == '@' || *p == '\r')
        putchar('\'');
    while (n > 0) {
        size_t k = (*p == '\r' || *p == '\n') ? 1 : cli_safe_len(p, n, 0);
        if (k == 0) {
            printf("\\x%02x", *p);
            k = 1;
        } else if (*p == '"') {
            fputs("\"\"", stdout);
        } else {
            fwrite(p, 1, k, stdout);
        }
        p += k;
        n -= k;
    }
    if (quote)
        putchar('"');
}

/* One CSV line: the result set's number, then fields; CRLF ends it (RFC
 * 4180). header: the column names instead of the row's values. */
static void csv_line(sqlite3_stmt *st, int set, int header)
{
    int ncol = sqlite3_column_count(st);
    if (header)
        fputs("result_set", stdout);
    else
        printf("%d", set);
    for (int i = 0; i < ncol; i++) {
        putchar(',');
        if (header) {
            csv_text(sqlite3_column_name(st, i));
            continue;
        }
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER: printf("%" PRId64, (int64_t)sqlite3_column_int64(st, i)); break;
        case SQLITE_FLOAT: json_double(stdout, sqlite3_column_double(st, i)); break;
        case SQLITE_NULL: break; /* an empty field */
        default: csv_text((const char *)sqlite3_column_text(st, i)); break;
        }
    }
    fputs("\r\n", stdout);
}

/* Print a result set as CSV: its header line, then its rows. */
static int print_csv_rows(sqlite3_stmt *st, int set)
{
    int rc;
    csv_line(st, set, 1);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        csv_line(st, set, 0);
    return rc;
}

/* ---------------------------------------------------------------- running */

/* Create the params table and fill it. 0, or -1 printed. */
static int set_params(sqlite3 *db, const query_args *a)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_exec(db, "CREATE TEMP TABLE params (key TEXT PRIMARY KEY, value TEXT)",
                          NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO params VALUES (?1, ?2)", -1, &st,
                                NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < a->n_params; i++) {
        const char *eq = strchr(a->params[i], '=');
        sqlite3_bind_text(st, 1, a->params[i], (int)(eq - a->params[i]), SQLITE_STATIC);
        sqlite3_bind_text(st, 2, eq + 1, -1, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        cli_error("cannot set the query parameters: %s", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

/* Run every statement of sql, printing each result set. Returns the exit code. */
static int run_statements(sqlite3 *db, const char *name, const char *sql, int json, int csv)
{
    const char *tail = sql;
    int sets = 0;
    while (*tail) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, tail, -1, &st, &tail);
        if (rc != SQLITE_OK)
            return cli_error("query '%s': %s", name, sqlite3_errmsg(db));
        if (!st)
            continue; /* only comments or blanks left */
        if (sqlite3_column_count(st) > 0 && !json && !csv && sets > 0)
            putchar('\n');
        if (sqlite3_column_count(st) > 0) {
            sets++;
            rc = json ? print_json_rows(st, sets) : csv ? print_csv_rows(st, sets) : print_table(st);
        }
        else
            rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return cli_error("query '%s': %s", name, sqlite3_errmsg(db));
    }
    return EXIT_OK;
}

/* Open the database read-only and run the query. Returns the exit code. */
static int run_query(query_args *a)
{
    char err[1600], need[64];
    char *sql = find_query(a->name);
    sqlite3 *db;
    int status;
    if (!sql)
        return cli_usage_error("query", "no query named '%s' (slotscope query --list)", a->name);
    required_param(sql, need, sizeof need);
    if (need[0] && !has_param(a, need)) {
        free(sql);
        return cli_usage_error("query", "query '%s' needs --param %s=VALUE", a->name, need);
    }
    db = store_open_readonly(a->db, err, sizeof err);
    if (!db) {
        free(sql);
        return cli_error("%s", err);
    }
    {
        char desc[256];
        status = check_params(a, sql, db);
        if (status == EXIT_OK)
            status = cli_filter_apply(&a->filter, "query", db, desc, sizeof desc);
    }
    if (status == EXIT_OK)
        status = set_params(db, a) == 0 ? run_statements(db, a->name, sql, a->json, a->csv) : EXIT_RUNTIME;
    fflush(stdout);
    sqlite3_close(db);
    free(sql);
    return status;
}

/* Parse the arguments. 0, -1 for --help (printed), or EXIT_USAGE (printed). */
static int parse_args(int argc, char **argv, query_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        int taken = cli_filter_option(&a->filter, "query", argc, argv, &i);
        if (taken < 0)
            return EXIT_USAGE;
        if (taken > 0)
            continue;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(query_usage, stdout);
            return -1;
        } else if (!strcmp(s, "--list")) {
            a->list = 1;
        } else if (!strcmp(s, "--json")) {
            a->json = 1;
        } else if (!strcmp(s, "--csv")) {
            a->csv = 1;
        } else if (!strcmp(s, "--param") || !strncmp(s, "--param=", 8)) {
            const char *v = s[7] == '=' ? s + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || !strchr(v, '=') || v[0] == '=')
                return cli_usage_error("query", "--param needs KEY=VALUE");
            if (a->n_params >= MAX_PARAMS)
                return cli_usage_error("query", "too many --param (at most %d)", MAX_PARAMS);
            a->params[a->n_params++] = v;
        } else if (s[0] == '-' && s[1]) {
            return cli_usage_error("query", "unknown option '%s'", s);
        } else if (!a->db) {
            a->db = s;
        } else if (!a->name) {
            a->name = s;
        } else {
            return cli_usage_error("query", "unexpected argument '%s'", s);
        }
    }
    return 0;
}

int cmd_query(int argc, char **argv)
{
    query_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc < 0)
        return EXIT_OK;
    if (rc > 0)
        return rc;
    if (a.list)
        return list_queries();
    if (a.json && a.csv)
        return cli_usage_error("query", "--json and --csv cannot go together");
    if (!a.db)
        return cli_usage_error("query", "no database given");
    if (!a.name)
        return cli_usage_error("query", "no query named (slotscope query --list)");
    return run_query(&a);
}
