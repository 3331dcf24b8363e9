/*
 * standalone_main.c - a main() for the fuzz targets without libFuzzer.
 *
 * Linked with one fuzz_NAME.c it makes a program that calls the target's
 * LLVMFuzzerTestOneInput:
 *   - on each file named on the command line (a directory: on each regular
 *     file inside it), to replay a corpus or a crash with a plain build, gdb or
 *     valgrind;
 *   - on standard input when no file is named: AFL++'s classic mode
 *     (`afl-fuzz -i seeds -o out -- ./fuzz_resp_afl`);
 *   - built with afl-clang-fast / afl-clang-lto, in AFL++'s persistent mode
 *     (shared-memory test cases, many per process), which is much faster.
 * Every input is passed in a heap buffer of exactly its size, so reads past the
 * end are caught by ASan as they are under libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Largest input read (libFuzzer's default -max_len for a corpus is far less). */
#define SS_MAX_INPUT (16u << 20)

/* Run the target on size bytes copied to a buffer of exactly that size. */
static void run_one(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
}

/* Read all of f (up to SS_MAX_INPUT bytes) into a new buffer; NULL on error. */
static uint8_t *read_all(FILE *f, size_t *size)
{
    size_t cap = 65536, len = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0 || len >= SS_MAX_INPUT)
            break;
        if (len == cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    if (buf && ferror(f)) {
        free(buf);
        return NULL;
    }
    *size = len;
    return buf;
}

/* Run the target on one file. Returns 0, or -1 if it cannot be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t size = 0;
    uint8_t *buf = read_all(f, &size);
    fclose(f);
    if (!buf) {
        fprintf(stderr, "cannot read '%s'\n", path);
        return -1;
    }
    fprintf(stderr, "running %s (%zu bytes)\n", path, size);
    run_one(buf, size);
    free(buf);
    return 0;
}

/* Run the target on a file, or on every regular file in a directory. */
static int run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        if (stat(child, &st) == 0 && S_ISREG(st.st_mode) && run_file(child) != 0)
            rc = -1;
    }
    closedir(d);
    return rc;
}

#ifdef __AFL_FUZZ_TESTCASE_LEN
/* AFL++ persistent mode: test cases arrive in shared memory. */
__AFL_FUZZ_INIT();
#endif

int main(int argc, char **argv)
{
#ifdef __AFL_FUZZ_TESTCASE_LEN
    if (argc < 2) {
        __AFL_INIT();
        const uint8_t *buf = __AFL_FUZZ_TESTCASE_BUF;
        while (__AFL_LOOP(10000))
            run_one(buf, (size_t)__AFL_FUZZ_TESTCASE_LEN);
        return 0;
    }
#endif
    if (argc < 2) {
        size_t size = 0;
        uint8_t *buf = read_all(stdin, &size);
        if (!buf) {
            fprintf(stderr, "cannot read standard input\n");
            return 2;
        }
        run_one(buf, size);
        free(buf);
        return 0;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++)
        if (run_path(argv[i]) != 0)
            rc = 2;
    return rc;
}
