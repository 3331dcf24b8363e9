/*
 * test_db_files.c - what `--db PATH [--force]` may replace (issue 15, items 2,
 * 3, 10 and 11), the slotscope binary end to end:
 * - never an input (the same file, a hard link to it, a link to it);
 * - with --force only a regular file that is empty or a SQLite database: a
 *   text file, a FIFO, a device node (made in the scratch folder, never
 *   /dev/null itself) or a link to one of those is an error naming it, and is
 *   left as it was;
 * - never a database another run is still writing (two processes: the first
 *   reads a FIFO and waits, the second asks --force);
 * - a planted PATH-shm or PATH-wal link is named, and nothing is left behind.
 *
 * SLOTSCOPE_TEST_BINARY (environment) runs another binary instead of the one
 * built (to show that the test fails on an older one).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"

#define CAPTURE SS_FIXTURES "/cli/set.pcap"

static char tmpdir[256];
static th_run last;

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_dbfiles", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    th_run_free(&last);
    return th_tmpdir_remove(tmpdir);
}

static const char *tmp(const char *name)
{
    return th_path(tmpdir, name);
}

static const char *binary(void)
{
    const char *bin = getenv("SLOTSCOPE_TEST_BINARY");
    return bin && *bin ? bin : SS_BINARY;
}

static int run_args(const char *const *args)
{
    int code = th_run_binary(&last, SS_BINARY, args, NULL, NULL, 0);
    assert_int_not_equal(code, -2);
    return code;
}
#define run(...) run_args((const char *const[]){__VA_ARGS__, NULL})

static void assert_contains(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, text);
}

static void copy_file(const char *from, const char *to)
{
    size_t len;
    char *data = th_slurp(from, &len);
    assert_non_null(data);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    free(data);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* path holds exactly the bytes of the file `same`. */
static void assert_same_file(const char *path, const char *same)
{
    size_t a, b;
    char *x = th_slurp(path, &a), *y = th_slurp(same, &b);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(a, b);
    assert_memory_equal(x, y, a);
    free(x);
    free(y);
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* The capture given as --db (itself, a hard link, a link) is refused and left
 * as it was, with or without other inputs. */
static void test_input_is_not_replaced(void **state)
{
    (void)state;
    const char *cap = tmp("x.pcap"), *hard = tmp("hard.db"), *soft = tmp("soft.db");
    copy_file(CAPTURE, cap);
    assert_int_equal(link(cap, hard), 0);
    assert_int_equal(symlink(cap, soft), 0);

    assert_int_equal(run("analyze", cap, "--db", cap, "--force", "-q"), 1);
    assert_contains(last.err, "is the input");
    assert_same_file(cap, CAPTURE);
    assert_int_equal(run("analyze", CAPTURE, cap, "--db", hard, "--force", "-q"), 1);
    assert_contains(last.err, "is the input");
    assert_same_file(cap, CAPTURE);
    assert_int_equal(run("analyze", cap, "--db", soft, "--force", "-q"), 1);
    assert_same_file(cap, CAPTURE);
    /* without --force too, with the plainer message first */
    assert_int_equal(run("analyze", cap, "--db", cap, "-q"), 1);
    assert_contains(last.err, "is the input");
    assert_same_file(cap, CAPTURE);
}

/* --force on path (which must stay as it was) fails naming `kind`. */
static void assert_not_replaced(const char *path, const char *kind)
{
    struct stat before, after;
    assert_int_equal(lstat(path, &before), 0);
    assert_int_equal(run("analyze", CAPTURE, "--db", path, "--force", "-q"), 1);
    assert_contains(last.err, path);
    assert_contains(last.err, kind);
    assert_int_equal(lstat(path, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    assert_int_equal(before.st_mode, after.st_mode);
    assert_int_equal(before.st_size, after.st_size);
}

/* --force replaces an empty file and a database; anything else is named and
 * kept: a text file, a FIFO, a character device (as root: a copy of
 * /dev/null's node in the scratch folder), links to those. */
static void test_force_replaces_only_databases(void **state)
{
    (void)state;
    const char *text = tmp("notes.txt"), *fifo = tmp("fifo"), *dev = tmp("null");
    const char *to_fifo = tmp("to-fifo.db"), *to_text = tmp("to-text.db");
    const char *empty = tmp("empty.db"), *db = tmp("old.db");
    write_text(text, "my notes, not a database\n");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink(fifo, to_fifo), 0);
    assert_int_equal(symlink(text, to_text), 0);

    assert_not_replaced(text, "not a SQLite database");
    assert_not_replaced(fifo, "FIFO");
    assert_not_replaced(to_fifo, "symbolic link");
    assert_not_replaced(to_text, "symbolic link");
    if (geteuid() == 0) {
        assert_int_equal(mknod(dev, S_IFCHR | 0666, makedev(1, 3)), 0);
        assert_not_replaced(dev, "character device");
    }
    struct stat sb;
    assert_int_equal(stat("/dev/null", &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));

    write_text(empty, "");
    assert_int_equal(run("analyze", CAPTURE, "--db", empty, "--force", "-q"), 0);
    th_assert_db_ok(empty);
    assert_int_equal(run("analyze", CAPTURE, "--db", db, "-q"), 0);
    assert_int_equal(run("analyze", CAPTURE, "--db", db, "--force", "-q"), 0);
    th_assert_db_ok(db);
}

/* Start the binary with args without waiting; stdout and stderr to files in
 * the scratch folder. Its pid. */
static pid_t spawn(const char *const *args, const char *out, const char *err)
{
    const char *argv[32] = {binary()};
    size_t n = 1;
    while (args[n - 1] && n < 31) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || in < 0)
            _exit(126);
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The run writing db has committed its first meta rows. */
static int db_started(const char *db)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int started = 0;
    if (exists(db) && sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT count(*) FROM meta WHERE key = 'command_line'", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        started = sqlite3_column_int(st, 0) == 1;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return started;
}

/* Two runs on one path: the first, `live` on loopback with a filter nothing
 * matches, holds its database open until SIGINT; the second, with --force, is
 * refused ("locked") and the first run's database is whole when it ends.
 * Skipped unless root (live capture). */
static void test_concurrent_force(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    const char *db = tmp("shared.db");
    pid_t first = spawn(TH_ARGS("live", "-i", "lo", "-f", "tcp port 31619", "--db", db,
                                "--duration", "60", "-q"),
                        tmp("first.out"), tmp("first.err"));
    for (int i = 0; i < 1000 && !db_started(db); i++)
        sleep_ms(10);
    assert_true(db_started(db));

    int second = run("analyze", CAPTURE, "--db", db, "--force", "-q");
    int status;
    assert_int_equal(kill(first, SIGINT), 0);
    assert_int_equal(waitpid(first, &status, 0), first);
    assert_true(WIFEXITED(status));
    assert_int_equal(second, 1);
    assert_contains(last.err, "locked");
    assert_contains(last.err, db);
    th_assert_db_ok(db);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM meta WHERE key = 'mode'"
                                   " AND value = 'live'"), 1);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM meta WHERE key = 'end_us'"), 1);
    /* once the first run is over, --force replaces it */
    assert_int_equal(run("analyze", CAPTURE, "--db", db, "--force", "-q"), 0);
    assert_int_equal(th_db_int(db, "SELECT count(*) FROM meta WHERE key = 'mode'"
                                   " AND value = 'analyze'"), 1);
}

/* A planted DB-shm (or DB-wal) link: the error names it, no database, WAL or
 * shared-memory file is left, the link's target is not created. */
static void test_planted_side_file(void **state)
{
    (void)state;
    const char *suffixes[] = {"-shm", "-wal"};
    for (int i = 0; i < 2; i++) {
        char db[300], side[310], target[310];
        snprintf(db, sizeof db, "%s/planted%d.db", tmpdir, i);
        snprintf(side, sizeof side, "%s%s", db, suffixes[i]);
        snprintf(target, sizeof target, "%s/elsewhere%d", tmpdir, i);
        assert_int_equal(symlink(target, side), 0);
        assert_int_equal(run("analyze", CAPTURE, "--db", db, "-q"), 1);
        assert_contains(last.err, side);
        assert_false(exists(db));
        assert_false(exists(target));
        char other[320];
        snprintf(other, sizeof other, "%s%s", db, suffixes[1 - i]);
        assert_false(exists(other));
        assert_true(exists(side)); /* not ours to remove without --force */
        /* --force removes the link (only the link) and writes the database */
        assert_int_equal(run("analyze", CAPTURE, "--db", db, "--force", "-q"), 0);
        th_assert_db_ok(db);
        assert_false(exists(target));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_input_is_not_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_force_replaces_only_databases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_force, setup, teardown),
        cmocka_unit_test_setup_teardown(test_planted_side_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
