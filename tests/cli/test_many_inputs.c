/*
 * test_many_inputs.c - more input files than the open-file limit (issue 15,
 * item 5): 3000 small files, a rotation-like split of one capture (as
 * `tcpdump -C` leaves them), analysed by a child whose RLIMIT_NOFILE is 256
 * (soft and hard, like `ulimit -n 256`). Every file is read, every packet
 * counted, and the analysis is that of the same packets in one file. The
 * same with every file gzip- or zstd-compressed (issue 18).
 *
 * SLOTSCOPE_TEST_BINARY (environment) runs another binary instead of the one
 * built (to show that the test fails on an older one).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"
#include "tests/helpers/pktgen.h"

#define N_FILES 3000
#define T0 1700000000000000LL

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    return th_tmpdir_new("ss_many", tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(tmpdir);
}

/* Where the conversation's frames go: file k of the split, and the whole. */
typedef struct split {
    pg_file *whole;
    pg_file *part;
    unsigned frames;
} split;

static void on_frame(void *ctx, int dlt, int64_t ts_us, const uint8_t *frame, size_t len)
{
    split *s = ctx;
    (void)dlt;
    assert_int_equal(pg_file_write(s->whole, ts_us, frame, len), 0);
    assert_int_equal(pg_file_write(s->part, ts_us, frame, len), 0);
    s->frames++;
}

static const char *part_name(unsigned k)
{
    static char name[300];
    snprintf(name, sizeof name, "%s/cap.pcap%04u", tmpdir, k);
    return name;
}

/* One conversation of SETs and MOVED replies, split into N_FILES files (two
 * exchanges each), and the same frames in whole.pcap. Frames written. */
static unsigned write_captures(void)
{
    split s = {.whole = pg_file_open(th_path(tmpdir, "whole.pcap"), PG_PCAP, DLT_EN10MB, 65535)};
    pg_packet t;
    pg_conv c;
    char req[64];
    assert_non_null(s.whole);
    pg_packet_init(&t);
    t.dport = 7000;
    pg_conv_init(&c, &t, 100, 900000, T0);
    c.fn = on_frame;
    c.ctx = &s;
    for (unsigned k = 0; k < N_FILES; k++) {
        s.part = pg_file_open(part_name(k), PG_PCAP, DLT_EN10MB, 65535);
        assert_non_null(s.part);
        if (k == 0)
            assert_int_equal(pg_conv_handshake(&c), 0);
        for (int j = 0; j < 2; j++) {
            /* keys of hash tag {a}, slot 15495: the slot their MOVED names */
            int n = snprintf(req, sizeof req, "*3\r\n$3\r\nSET\r\n$7\r\n{a}%04u\r\n$1\r\nv\r\n",
                             k);
            assert_int_equal(pg_conv_send(&c, 0, req, (size_t)n), 0);
            const char *rep = j ? "+OK\r\n" : "-MOVED 15495 10.0.0.3:7001\r\n";
            assert_int_equal(pg_conv_send(&c, 1, rep, strlen(rep)), 0);
        }
        if (k == N_FILES - 1)
            assert_int_equal(pg_conv_close(&c), 0);
        assert_int_equal(pg_file_close(s.part), 0);
    }
    assert_int_equal(pg_file_close(s.whole), 0);
    return s.frames;
}

/* Run `slotscope analyze FILES... --db db -q` with RLIMIT_NOFILE limit. Its
 * exit code. */
static int analyze_limited(const char *const *files, size_t n, const char *db, rlim_t limit)
{
    const char *bin = getenv("SLOTSCOPE_TEST_BINARY");
    const char **argv = calloc(n + 8, sizeof *argv);
    size_t a = 0;
    int status;
    assert_non_null(argv);
    argv[a++] = bin && *bin ? bin : SS_BINARY;
    argv[a++] = "analyze";
    for (size_t i = 0; i < n; i++)
        argv[a++] = files[i];
    argv[a++] = "--db";
    argv[a++] = db;
    argv[a++] = "-q";
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {limit, limit};
        int null = open("/dev/null", O_WRONLY);
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || null < 0)
            _exit(126);
        dup2(null, 1); /* the report: not needed */
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    free(argv);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_more_files_than_open_limit(void **state)
{
    (void)state;
    unsigned frames = write_captures();
    static const char *files[N_FILES];
    for (unsigned k = 0; k < N_FILES; k++)
        files[k] = strdup(part_name(k));
    const char *many = th_path(tmpdir, "many.db");
    assert_int_equal(analyze_limited(files, N_FILES, many, 256), 0);
    for (unsigned k = 0; k < N_FILES; k++)
        free((char *)files[k]);
    const char *whole_pcap = th_path(tmpdir, "whole.pcap");
    const char *one = th_path(tmpdir, "one.db");
    assert_int_equal(analyze_limited(&whole_pcap, 1, one, 256), 0);

    assert_int_equal(th_db_int(many, "SELECT count(*) FROM inputs"), N_FILES);
    assert_int_equal(th_db_int(many, "SELECT count(*) FROM inputs WHERE packets = 0"), 0);
    assert_int_equal(th_db_int(many, "SELECT sum(packets) FROM inputs"), frames);
    assert_int_equal(th_db_int(one, "SELECT sum(packets) FROM inputs"), frames);
    static const char *const same[] = {
        "SELECT value FROM counters WHERE name = 'commands'",
        "SELECT value FROM counters WHERE name = 'packets'",
        "SELECT count(*) FROM redirects",
        "SELECT count(*) FROM connections",
        "SELECT value FROM counters WHERE name = 'time_backwards'",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        assert_int_equal(th_db_int(many, same[i]), th_db_int(one, same[i]));
    assert_int_equal(th_db_int(many, "SELECT count(*) FROM redirects"), N_FILES);
}

/* The counters two databases must agree on. */
static void assert_same_counts(const char *a, const char *b)
{
    static const char *const same[] = {
        "SELECT value FROM counters WHERE name = 'commands'",
        "SELECT value FROM counters WHERE name = 'packets'",
        "SELECT count(*) FROM redirects",
        "SELECT count(*) FROM connections",
        "SELECT value FROM counters WHERE name = 'time_backwards'",
        "SELECT sum(packets) FROM inputs",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        assert_int_equal(th_db_int(a, same[i]), th_db_int(b, same[i]));
}

/* The first N_PACKED files of the split compressed (odd ones gzip, even
 * ones zstd; issue 18): each decoder holds a window, so the files are
 * opened lazily under an open-file limit of 64, and also when only 40 are
 * given without a tight limit (more than the 16 streams capture/ keeps open
 * at once); the analysis is that of the plain files. */
#define N_PACKED 300
static void test_compressed_many_files(void **state)
{
    (void)state;
    write_captures();
    static const char *plain[N_PACKED], *packed[N_PACKED];
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && ls | grep -E 'cap.pcap0[0-2][0-9]*[13579]$' | xargs gzip -k && "
             "ls | grep -E 'cap.pcap0[0-2][0-9]*[02468]$' | xargs zstd -q -k",
             tmpdir);
    assert_int_equal(system(cmd), 0);
    for (unsigned k = 0; k < N_PACKED; k++) {
        char name[320];
        plain[k] = strdup(part_name(k));
        snprintf(name, sizeof name, "%s%s", part_name(k), k % 2 ? ".gz" : ".zst");
        packed[k] = strdup(name);
    }
    const char *many = th_path(tmpdir, "many.db"), *many_plain = th_path(tmpdir, "mp.db");
    assert_int_equal(analyze_limited(packed, N_PACKED, many, 64), 0);
    assert_int_equal(analyze_limited(plain, N_PACKED, many_plain, 64), 0);
    assert_int_equal(th_db_int(many, "SELECT count(*) FROM inputs WHERE compression != ''"),
                     N_PACKED);
    assert_int_equal(th_db_int(many, "SELECT count(*) FROM inputs WHERE packets = 0"), 0);
    assert_int_equal(th_db_int(many, "SELECT count(*) FROM redirects"), N_PACKED);
    assert_same_counts(many, many_plain);
    const char *few = th_path(tmpdir, "few.db"), *few_plain = th_path(tmpdir, "few_plain.db");
    assert_int_equal(analyze_limited(packed, 40, few, 1024), 0);
    assert_int_equal(analyze_limited(plain, 40, few_plain, 1024), 0);
    assert_int_equal(th_db_int(few, "SELECT count(*) FROM inputs WHERE packets = 0"), 0);
    assert_same_counts(few, few_plain);
    for (unsigned k = 0; k < N_PACKED; k++) {
        free((char *)plain[k]);
        free((char *)packed[k]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_more_files_than_open_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compressed_many_files, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
