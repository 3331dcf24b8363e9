/*
 * robust.h - what the tests in tests/robust share: a scratch folder, running
 * the slotscope binary as a child (exit status, output, peak memory), and
 * reading its database.
 *
 * Peak memory is the child's maximum resident set size as the kernel reports
 * it to wait4() (struct rusage ru_maxrss, KiB on Linux): the figure for that
 * one run, not for the test program.
 */
#ifndef SLOTSCOPE_TESTS_ROBUST_H
#define SLOTSCOPE_TESTS_ROBUST_H

#include <stddef.h>
#include <stdint.h>

#include "tests/helpers/child.h"
#include "tests/helpers/pktgen.h"

/* A scratch folder under $TMPDIR (or /tmp), removed with everything in it by
 * rb_tmpdir_free. Returns its path (static storage per call site is not used:
 * the caller owns the returned string). NULL on error. */
char *rb_tmpdir_new(const char *tag);
void rb_tmpdir_free(char *dir);
/* dir + "/" + name in a new string. */
char *rb_path(const char *dir, const char *name);

/* How a child run ended: exited, status, maxrss_kib (the child's peak
 * resident set size), out, err. */
typedef th_run rb_run;

/* Run the slotscope binary (SS_BINARY) with argv (NULL-terminated, argv[0]
 * not included) and wait for it: tests/helpers/child.h's th_exec, which see
 * for signal_when and max_polls. Returns 0, or -1 if the child could not be
 * started. */
#define rb_slotscope(args, run, signal_when, ctx, max_polls) \
    th_exec(SS_BINARY, (args), (run), (signal_when), (ctx), (max_polls))
#define rb_run_free th_run_free
/* Lines in text (a final line without '\n' counts). */
int rb_count_lines(const char *text);

/* One integer from a SQL query on the database at path (opened read-only);
 * -1 when the database, the table or the row is missing. */
int64_t rb_db_int(const char *db, const char *sql);
/* A counter from the counters table, -1 when absent. */
int64_t rb_db_counter(const char *db, const char *name);
/* The text result of PRAGMA integrity_check ("ok" when sound); "" on error.
 * The caller frees it. */
char *rb_db_integrity(const char *db);

/* Bytes of a file, -1 if it does not exist. */
long long rb_file_size(const char *path);

/* Start conversation c in file f: client:sport -> 10.2.0.1:6379 over the
 * file's link type, first packet at ts_us (pg_conv_init's default sequence
 * numbers 1000 / 5000). */
void rb_conv_start(pg_conv *c, pg_file *f, const char *client, uint16_t sport, int64_t ts_us);

#endif /* SLOTSCOPE_TESTS_ROBUST_H */
