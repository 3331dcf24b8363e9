/*
 * fuzz_report.c - fuzz target: the database readers, `slotscope report DB` and
 * `slotscope query DB NAME`, on a mutated database file.
 *
 * Input: the bytes of a database file (seeds: small real databases made by
 * fuzz/mkseeds-db.sh, page size 512 so they fit libFuzzer's lengths).
 *
 * The bytes are written to a scratch file (one per process, rewritten each
 * time) and opened the way `report` does: store_open_readonly (the schema
 * checks), report_load_db, then the report printed as text and as JSON
 * lines and written as HTML (report --html) (to /dev/null); then every canned query runs through cmd_query, the
 * `query` command itself, with standard output sent to /dev/null meanwhile.
 * Checked: no memory error, no undefined behaviour, no hang (libFuzzer's
 * -timeout), and the model's promises: counts within the report's caps.
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fuzz/fuzz.h"

/* The scratch file and /dev/null, made once. */
static char db_path[64];
static FILE *devnull;

static void init_once(void)
{
    if (db_path[0])
        return;
    snprintf(db_path, sizeof db_path, "/tmp/ss_fuzz_report_%d.db", (int)getpid());
    devnull = fopen("/dev/null", "w");
    SS_FUZZ_CHECK(devnull != NULL);
}

/* Every canned query through the `query` command, its output to /dev/null. */
static void run_queries(void)
{
    int saved = dup(1);
    SS_FUZZ_CHECK(saved >= 0);
    fflush(stdout);
    SS_FUZZ_CHECK(dup2(fileno(devnull), 1) == 1);
    for (size_t i = 0; i < cli_n_queries; i++) {
        char *args[] = {db_path, (char *)cli_queries[i].name, "--param", "client=10.0.0.1",
                        (i & 1) ? "--json" : NULL, NULL};
        cmd_query((i & 1) ? 5 : 4, args);
    }
    fflush(stdout);
    SS_FUZZ_CHECK(dup2(saved, 1) == 1);
    close(saved);
}

/* Replace the scratch file's content by data (and drop any -wal/-shm). */
static void write_db(const uint8_t *data, size_t size)
{
    char side[80];
    int fd = open(db_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    SS_FUZZ_CHECK(fd >= 0);
    SS_FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
    close(fd);
    snprintf(side, sizeof side, "%s-wal", db_path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db_path);
    unlink(side);
}

/* report DB: the model and both printers. */
static int fuzz_report_model(void)
{
    char err[1600];
    sqlite3 *db = store_open_readonly(db_path, err, sizeof err);
    if (!db)
        return 0;
    report r;
    report_init(&r);
    if (report_load_db(&r, db, err, sizeof err) == 0) {
        SS_FUZZ_CHECK(r.n_findings <= REPORT_MAX_FINDINGS);
        SS_FUZZ_CHECK(r.n_nodes <= REPORT_MAX_NODES);
        SS_FUZZ_CHECK(r.n_migrations <= REPORT_MAX_MIGRATIONS);
        SS_FUZZ_CHECK(r.n_latency <= REPORT_MAX_LATENCY);
        SS_FUZZ_CHECK(r.n_inputs <= REPORT_MAX_INPUTS);
        report_print_text(&r, devnull);
        report_print_json(&r, devnull);
    }
    report_free(&r);
    SS_FUZZ_CHECK(report_write_html(db, devnull) == 0);
    sqlite3_close(db);
    return 1;
}

int ss_fuzz_report(const uint8_t *data, size_t size)
{
    init_once();
    write_db(data, size);
    if (!fuzz_report_model())
        return 0; /* not a slotscope database: the queries would say the same */
    run_queries();
    return 0;
}

#ifndef SS_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return ss_fuzz_report(data, size);
}
#endif
