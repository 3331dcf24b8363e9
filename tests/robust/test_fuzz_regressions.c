/*
 * test_fuzz_regressions.c - replay every fuzz seed and every crash regression.
 *
 * Links all fuzz targets (fuzz/fuzz_*.c, built with SS_FUZZ_NO_ENTRY) and runs
 * each on every file of fuzz/seeds/TARGET and fuzz/regressions/TARGET. The
 * regressions are the inputs that once crashed a target or broke one of the
 * invariants the targets check (see fuzz/fuzz.h): a target aborts on them
 * again if the bug comes back, which fails this test. Runs in the ordinary
 * test suite, so under ASan+UBSan and valgrind too, without clang or libFuzzer.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fuzz/fuzz.h"

typedef int (*target_fn)(const uint8_t *data, size_t size);

/* Read a whole file into a buffer of exactly its size (so reads past the end
 * are caught by ASan). NULL on error. */
static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0 || st.st_size > (64 << 20)) {
        fclose(f);
        return NULL;
    }
    *size = (size_t)st.st_size;
    uint8_t *buf = malloc(*size ? *size : 1);
    if (buf && fread(buf, 1, *size, f) != *size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

/* Run fn on every regular file of SS_SOURCE_DIR/fuzz/<kind>/<target>. Returns
 * how many files were run (0 when the folder does not exist). */
static size_t replay_dir(const char *kind, const char *target, target_fn fn)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/fuzz/%s/%s", SS_SOURCE_DIR, kind, target);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        size_t size = 0;
        uint8_t *buf = read_file(path, &size);
        assert_non_null(buf);
        fn(buf, size);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

/* Replay the seeds and regressions of one target (and of the target whose
 * input format it shares, if any); a target must have seeds. */
static void replay_target(const char *target, const char *shares, target_fn fn)
{
    size_t seeds = replay_dir("seeds", target, fn);
    size_t regressions = replay_dir("regressions", target, fn);
    if (shares) {
        seeds += replay_dir("seeds", shares, fn);
        regressions += replay_dir("regressions", shares, fn);
    }
    printf("# %s: %zu seeds, %zu regressions replayed\n", target, seeds, regressions);
    assert_true(seeds > 0);
}

static void test_pcap(void **state)
{
    (void)state;
    replay_target("fuzz_pcap", NULL, ss_fuzz_pcap);
}

static void test_pcapfile(void **state)
{
    (void)state;
    replay_target("fuzz_pcapfile", NULL, ss_fuzz_pcapfile);
}

static void test_resp(void **state)
{
    (void)state;
    replay_target("fuzz_resp", NULL, ss_fuzz_resp);
}

static void test_resp_decode(void **state)
{
    (void)state;
    replay_target("fuzz_resp_decode", "fuzz_resp", ss_fuzz_resp_decode);
}

static void test_redirect(void **state)
{
    (void)state;
    replay_target("fuzz_redirect", NULL, ss_fuzz_redirect);
}

static void test_cluster_replies(void **state)
{
    (void)state;
    replay_target("fuzz_cluster_replies", NULL, ss_fuzz_cluster_replies);
}

static void test_bus(void **state)
{
    (void)state;
    replay_target("fuzz_bus", NULL, ss_fuzz_bus);
}

static void test_report(void **state)
{
    (void)state;
    replay_target("fuzz_report", NULL, ss_fuzz_report);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_pcap),
        cmocka_unit_test(test_bus),
        cmocka_unit_test(test_pcapfile),
        cmocka_unit_test(test_resp),
        cmocka_unit_test(test_resp_decode),
        cmocka_unit_test(test_redirect),
        cmocka_unit_test(test_cluster_replies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
