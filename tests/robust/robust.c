/*
 * robust.c - scratch folders, slotscope as a child process, database reads
 * (see robust.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "robust.h"

char *rb_tmpdir_new(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    size_t n = strlen(base) + strlen(tag) + 32;
    char *dir = malloc(n);
    if (!dir)
        return NULL;
    snprintf(dir, n, "%s/ss-robust-%s-XXXXXX", base, tag);
    if (!mkdtemp(dir)) {
        free(dir);
        return NULL;
    }
    return dir;
}

/* Remove every file in dir (one level: the tests make no subfolders), then dir. */
void rb_tmpdir_free(char *dir)
{
    if (!dir)
        return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *p = rb_path(dir, e->d_name);
            if (p)
                unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

char *rb_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Read all of fd from its start into a new NUL-terminated string. */
static char *slurp_fd(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf || lseek(fd, 0, SEEK_SET) < 0) {
        free(buf);
        return NULL;
    }
    for (;;) {
        if (len + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger)
                break;
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

/* An unlinked temporary file for a child's output. -1 on error. */
static int temp_fd(void)
{
    char path[] = "/tmp/ss-robust-out-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

int rb_slotscope(const char *const *args, rb_run *run,
                 int (*signal_when)(void *ctx, int pid), void *ctx, int max_polls)
{
    memset(run, 0, sizeof *run);
    size_t argc = 0;
    while (args[argc])
        argc++;
    const char **argv = calloc(argc + 2, sizeof *argv);
    int out = temp_fd(), err = temp_fd();
    if (!argv || out < 0 || err < 0) {
        free(argv);
        if (out >= 0)
            close(out);
        if (err >= 0)
            close(err);
        return -1;
    }
    argv[0] = SS_BINARY;
    for (size_t i = 0; i < argc; i++)
        argv[i + 1] = args[i];

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(out, 1);
        dup2(err, 2);
        execv(SS_BINARY, (char *const *)argv);
        _exit(127);
    }
    free(argv);
    if (pid < 0) {
        close(out);
        close(err);
        return -1;
    }

    struct rusage ru;
    int wstatus = 0;
    pid_t got = 0;
    if (signal_when) {
        /* poll, so that the caller can pick the moment to signal */
        for (int i = 0; i < max_polls; i++) {
            got = wait4(pid, &wstatus, WNOHANG, &ru);
            if (got != 0)
                break;
            int sig = signal_when(ctx, (int)pid);
            if (sig) {
                kill(pid, sig);
                break;
            }
            struct timespec ten_ms = {0, 10 * 1000 * 1000};
            nanosleep(&ten_ms, NULL);
        }
    }
    while (got == 0 || (got < 0 && errno == EINTR))
        got = wait4(pid, &wstatus, 0, &ru);

    run->exited = WIFEXITED(wstatus);
    run->status = run->exited ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus);
    run->maxrss_kib = got > 0 ? ru.ru_maxrss : -1;
    run->out = slurp_fd(out);
    run->err = slurp_fd(err);
    close(out);
    close(err);
    return 0;
}

void rb_run_free(rb_run *run)
{
    free(run->out);
    free(run->err);
    run->out = run->err = NULL;
}

int rb_count_lines(const char *text)
{
    int n = 0;
    const char *p = text;
    while (p && *p) {
        n++;
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

int64_t rb_db_int(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

int64_t rb_db_counter(const char *db, const char *name)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT value FROM counters WHERE name = '%s'", name);
    return rb_db_int(db, sql);
}

char *rb_db_integrity(const char *db)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    char *res = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        res = strdup(t ? (const char *)t : "");
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return res ? res : strdup("");
}

long long rb_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}
