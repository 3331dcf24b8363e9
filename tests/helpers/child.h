/*
 * child.h - running a program (usually the slotscope binary) as a child in a
 * test, and the small file chores around it: a scratch folder, paths in it,
 * a whole file as text.
 *
 *     th_run r;
 *     assert_int_equal(th_slotscope(TH_ARGS("analyze", "x.pcap", "-q"), &r), 0);
 *     assert_true(r.exited && r.status == 0);
 *     ... r.out, r.err ...
 *     th_run_free(&r);
 *
 * th_slotscope uses SS_BINARY, which tests/CMakeLists.txt defines for every
 * test (ss_add_test); the library itself does not know where the binary is.
 * The API is the one of tests/robust/robust.h's rb_slotscope, so those tests
 * can switch to it.
 */
#ifndef SLOTSCOPE_TESTS_CHILD_H
#define SLOTSCOPE_TESTS_CHILD_H

#include <stddef.h>

/* How a child run ended. */
typedef struct th_run {
    int exited;      /* 1: exited normally (code in status) */
    int status;      /* exit code, or the signal number when !exited */
    long maxrss_kib; /* peak resident set size of the child (wait4), -1 unknown */
    char *out;       /* standard output, NUL-terminated (malloc'd) */
    char *err;       /* standard error, NUL-terminated (malloc'd) */
} th_run;

/* Run binary with args (NULL-terminated, argv[0] not included; at most 512),
 * stdin from /dev/null, stdout and stderr caught in unlinked temporary files,
 * and wait for it. When signal_when is not NULL it is called every 10 ms with
 * the child's pid while the child runs (at most max_polls times); it returns
 * a signal to send (then polling stops) or 0. Returns 0, or -1 if the child
 * could not be started (run is then zeroed). */
int th_exec(const char *binary, const char *const *args, th_run *run,
            int (*signal_when)(void *ctx, int pid), void *ctx, int max_polls);
void th_run_free(th_run *run);

/* The arguments inline, as a NULL-terminated array. */
#define TH_ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

#ifdef SS_BINARY
/* th_exec of the slotscope binary under test. */
#define th_slotscope(args, run, signal_when, ctx, max_polls) \
    th_exec(SS_BINARY, (args), (run), (signal_when), (ctx), (max_polls))
#endif

/* The exit code of a run: status when it exited, -1 when a signal ended it. */
int th_exit_code(const th_run *run);

/* Run the binary under test with args into *last (freed first) and return
 * its exit code (-1: a signal ended it); signal_when, ctx and max_polls as
 * th_exec. The binary is $SLOTSCOPE_TEST_BINARY when set (to watch a
 * regression test fail on an older build), else built_in (SS_BINARY).
 * Returns -2 when the child could not be started. */
int th_run_binary(th_run *last, const char *built_in, const char *const *args,
                  int (*signal_when)(void *ctx, int pid), void *ctx, int max_polls);

/* A new scratch folder "/tmp/<tag>_XXXXXX" written into dir (size bytes).
 * 0, or -1 on error. th_tmpdir_remove deletes it with everything in it
 * (0, or -1 on error). */
int th_tmpdir_new(const char *tag, char *dir, size_t size);
int th_tmpdir_remove(const char *dir);

/* Run fn(ctx) in a new scratch folder "/tmp/<tag>_XXXXXX" as the working
 * directory (for tests that write files by relative name, wherever they are
 * started from), then go back and remove it. fn's result, or 1 when the folder
 * could not be made, entered, left or removed. */
int th_in_scratch_dir(const char *tag, int (*fn)(void *ctx), void *ctx);

/* dir + "/" + name in one of 8 rotating static buffers (the 9th call reuses
 * the first): enough for the paths of one check. */
const char *th_path(const char *dir, const char *name);

/* The whole file as a malloc'd NUL-terminated string (its length in *len when
 * len is not NULL); NULL when it cannot be read. */
char *th_slurp(const char *path, size_t *len);

#endif /* SLOTSCOPE_TESTS_CHILD_H */
