/*
 * test_interrupt.c - SIGINT and SIGTERM during `slotscope analyze`.
 *
 * A capture big enough to take a while (many pipelined commands, stored one
 * row each with --store-commands) is analysed, and the signal is sent in the
 * middle of the run: SIGINT as soon as the first batch of command rows is
 * committed, SIGTERM once the first periodic counter snapshot is (every 100
 * ms here, through SLOTSCOPE_SNAPSHOT_MS, so that it comes early in the run
 * however fast it is). `analyze` stops reading, finishes like at the end of
 * its input and exits 1: the database must be sound (PRAGMA integrity_check =
 * ok), closed (meta end_us, its indexes built), say which signal stopped it
 * (meta stopped_by) and hold what was read until then: the meta facts, the
 * inputs, counters of fewer packets than the capture has, and a row for every
 * command counted; `slotscope report` must read it back and say the run was
 * interrupted by that signal.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "robust.h"
#include "tests/helpers/pktgen.h"

#define T0 1700000000000000LL
#define CONNS 100
#define BATCHES 500    /* segments per connection */
#define PER_BATCH 40   /* commands per segment */

/* Total packets in the capture. */
#define TOTAL_PACKETS ((long long)CONNS * (3 + 2 * BATCHES + 4))

/* Write CONNS connections, each BATCHES segments of PER_BATCH pipelined GETs
 * answered by as many replies: 2,000,000 commands, 80 MB, several seconds of
 * analysis with --store-commands. */
static void make_capture(const char *path)
{
    pg_file *f = pg_file_open(path, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    const char one[] = "*2\r\n$3\r\nGET\r\n$8\r\n{k}12345\r\n";
    const char rep1[] = "$3\r\nabc\r\n";
    char req[sizeof one * PER_BATCH], rep[sizeof rep1 * PER_BATCH];
    size_t rlen = 0, plen = 0;
    for (int i = 0; i < PER_BATCH; i++) {
        memcpy(req + rlen, one, sizeof one - 1);
        rlen += sizeof one - 1;
        memcpy(rep + plen, rep1, sizeof rep1 - 1);
        plen += sizeof rep1 - 1;
    }
    for (int k = 0; k < CONNS; k++) {
        char client[32];
        snprintf(client, sizeof client, "10.1.0.%d", k + 1);
        pg_conv c;
        rb_conv_start(&c, f, client, (uint16_t)(40000 + k), T0 + (int64_t)k * 10000000);
        assert_int_equal(pg_conv_handshake(&c), 0);
        for (int b = 0; b < BATCHES; b++) {
            assert_int_equal(pg_conv_send(&c, 0, req, rlen), 0);
            assert_int_equal(pg_conv_send(&c, 1, rep, plen), 0);
        }
        assert_int_equal(pg_conv_close(&c), 0);
    }
    assert_int_equal(pg_file_close(f), 0);
}

/* When to signal: as soon as the database has committed command rows (early:
 * the first batch), or, later, its first periodic counter snapshot. */
typedef struct when {
    const char *db;
    int sig;
    int after_snapshot;
    int sent;
} when;

static int signal_when_ready(void *ctx, int pid)
{
    (void)pid;
    when *w = ctx;
    int ready = w->after_snapshot ? rb_db_counter(w->db, "packets") > 0
                                  : rb_db_int(w->db, "SELECT count(*) FROM commands") > 0;
    if (ready) {
        w->sent = 1;
        return w->sig;
    }
    return 0;
}

/* The capture, made once for both tests. */
typedef struct group {
    char *dir;
    char *pcap;
} group;

static int group_setup(void **state)
{
    group *g = calloc(1, sizeof *g);
    if (!g)
        return -1;
    g->dir = rb_tmpdir_new("interrupt");
    if (!g->dir)
        return -1;
    g->pcap = rb_path(g->dir, "big.pcap");
    make_capture(g->pcap);
    *state = g;
    return 0;
}

static int group_teardown(void **state)
{
    group *g = *state;
    if (g) {
        free(g->pcap);
        rb_tmpdir_free(g->dir);
        free(g);
    }
    return 0;
}

/* Analyse, signal mid-way, check the database. */
static void interrupt_with(group *g, int sig, int after_snapshot, const char *name)
{
    char dbname[64];
    snprintf(dbname, sizeof dbname, "%s.db", name);
    char *db = rb_path(g->dir, dbname);
    const char *args[] = {"analyze", g->pcap, "--db", db, "--store-commands", "-q", NULL};
    when w = {db, sig, after_snapshot, 0};
    rb_run run;
    /* polls every 10 ms, for at most 10 minutes */
    assert_int_equal(rb_slotscope(args, &run, signal_when_ready, &w, 60000), 0);
    long long packets = rb_db_counter(db, "packets");
    long long rows = rb_db_int(db, "SELECT count(*) FROM commands");
    long long counted = rb_db_counter(db, "commands");
    printf("# %s: signal %s, %s %d, peak RSS %ld KiB, counters: packets %lld of %lld, "
           "commands %lld; commands rows %lld\n",
           name, w.sent ? "sent" : "not sent (finished first)",
           run.exited ? "exit" : "ended by signal", run.status, run.maxrss_kib, packets,
           TOTAL_PACKETS, counted, rows);
    if (run.err && *run.err)
        printf("# stderr: %s", run.err);
    assert_true(w.sent);
    /* it stopped because of the signal, by finishing early: exit code 1 */
    assert_true(run.exited);
    assert_int_equal(run.status, 1);
    assert_non_null(strstr(run.err, sig == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM"));

    char *ok = rb_db_integrity(db);
    assert_string_equal(ok, "ok");
    free(ok);
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM meta WHERE key = 'schema_version'"), 1);
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM meta WHERE key = 'start_us'"), 1);
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM inputs"), 1);
    /* closed as a finished run is, and marked as stopped */
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM meta WHERE key = 'end_us'"), 1);
    assert_int_equal(rb_db_int(db, sig == SIGINT
                                       ? "SELECT count(*) FROM meta WHERE key = 'stopped_by'"
                                         " AND value = 'SIGINT'"
                                       : "SELECT count(*) FROM meta WHERE key = 'stopped_by'"
                                         " AND value = 'SIGTERM'"),
                     1);
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                                   " AND name IN ('commands_client', 'redirects_ts')"),
                     2);
    /* the counters of what was read until the stop: some, not all */
    assert_true(packets > 0);
    assert_true(packets < TOTAL_PACKETS);
    assert_true(rb_db_counter(db, "connections") >= 1);
    /* a row for every command counted */
    assert_true(counted > 0);
    assert_true(rows == counted);

    /* the report of the interrupted run reads it back and says so */
    const char *rargs[] = {"report", db, NULL};
    rb_run rep;
    assert_int_equal(rb_slotscope(rargs, &rep, NULL, NULL, 0), 0);
    assert_true(rep.exited);
    assert_int_equal(rep.status, 0);
    assert_non_null(strstr(rep.out, sig == SIGINT ? "interrupted by SIGINT"
                                                  : "interrupted by SIGTERM"));
    rb_run_free(&rep);
    rb_run_free(&run);
    free(db);
}

static void test_sigint(void **state)
{
    interrupt_with(*state, SIGINT, 0, "sigint");
}

static void test_sigterm(void **state)
{
    interrupt_with(*state, SIGTERM, 1, "sigterm");
}

int main(void)
{
    setenv("SLOTSCOPE_SNAPSHOT_MS", "100", 1); /* inherited by every run */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigint),
        cmocka_unit_test(test_sigterm),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
