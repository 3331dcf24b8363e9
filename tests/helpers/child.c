/*
 * child.c - running a child program and the file chores of tests (child.h).
 * POSIX: fork, execv, wait4 (struct rusage ru_maxrss is KiB on Linux).
 */
#include "tests/helpers/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 512

/* Read all of fd from its start into a new NUL-terminated string. */
static char *slurp_fd(int fd, size_t *len_out)
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
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}

/* An unlinked temporary file for a child's output. -1 on error. */
static int temp_fd(void)
{
    char path[] = "/tmp/ss-test-out-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* In the child: stdin from /dev/null, stdout and stderr to out and err, then
 * the program. Never returns. */
static void exec_child(const char *binary, const char **argv, int out, int err)
{
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        _exit(126);
    execv(binary, (char *const *)argv);
    _exit(127);
}

/* Wait for pid, calling signal_when every 10 ms first (see th_exec). */
static pid_t wait_child(pid_t pid, int *wstatus, struct rusage *ru,
                        int (*signal_when)(void *ctx, int pid), void *ctx, int max_polls)
{
    pid_t got = 0;
    for (int i = 0; signal_when && i < max_polls; i++) {
        got = wait4(pid, wstatus, WNOHANG, ru);
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
    while (got == 0 || (got < 0 && errno == EINTR))
        got = wait4(pid, wstatus, 0, ru);
    return got;
}

int th_exec(const char *binary, const char *const *args, th_run *run,
            int (*signal_when)(void *ctx, int pid), void *ctx, int max_polls)
{
    const char *argv[MAX_ARGS + 2];
    size_t argc = 0;
    memset(run, 0, sizeof *run);
    argv[argc++] = binary;
    while (args[argc - 1]) {
        if (argc > MAX_ARGS)
            return -1;
        argv[argc] = args[argc - 1];
        argc++;
    }
    argv[argc] = NULL;

    int out = temp_fd(), err = temp_fd();
    pid_t pid = -1;
    if (out >= 0 && err >= 0) {
        fflush(NULL); /* nothing buffered is written twice */
        pid = fork();
        if (pid == 0)
            exec_child(binary, argv, out, err);
    }
    if (pid < 0) {
        if (out >= 0)
            close(out);
        if (err >= 0)
            close(err);
        return -1;
    }

    struct rusage ru;
    int wstatus = 0;
    pid_t got = wait_child(pid, &wstatus, &ru, signal_when, ctx, max_polls);
    run->exited = WIFEXITED(wstatus);
    run->status = run->exited ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus);
    run->maxrss_kib = got > 0 ? ru.ru_maxrss : -1;
    run->out = slurp_fd(out, NULL);
    run->err = slurp_fd(err, NULL);
    close(out);
    close(err);
    if (!run->out || !run->err) {
        th_run_free(run);
        return -1;
    }
    return 0;
}

void th_run_free(th_run *run)
{
    free(run->out);
    free(run->err);
    run->out = run->err = NULL;
}

int th_exit_code(const th_run *run)
{
    return run->exited ? run->status : -1;
}

int th_run_binary(th_run *last, const char *built_in, const char *const *args,
                  int (*signal_when)(void *ctx, int pid), void *ctx, int max_polls)
{
    const char *bin = getenv("SLOTSCOPE_TEST_BINARY");
    th_run_free(last);
    if (th_exec(bin && *bin ? bin : built_in, args, last, signal_when, ctx, max_polls) != 0)
        return -2;
    return th_exit_code(last);
}

int th_tmpdir_new(const char *tag, char *dir, size_t size)
{
    int n = snprintf(dir, size, "/tmp/%s_XXXXXX", tag);
    if (n < 0 || (size_t)n >= size)
        return -1;
    return mkdtemp(dir) ? 0 : -1;
}

int th_tmpdir_remove(const char *dir)
{
    char cmd[1100];
    /* a folder this library made: no quote can be in it */
    if (!*dir || strchr(dir, '\'') || strlen(dir) > 1000)
        return -1;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int th_in_scratch_dir(const char *tag, int (*fn)(void *ctx), void *ctx)
{
    char dir[256], home[4096];
    int result;
    if (th_tmpdir_new(tag, dir, sizeof dir) != 0)
        return 1;
    if (!getcwd(home, sizeof home) || chdir(dir) != 0) {
        th_tmpdir_remove(dir);
        return 1;
    }
    result = fn(ctx);
    if (chdir(home) != 0 || th_tmpdir_remove(dir) != 0)
        return 1;
    return result;
}

const char *th_path(const char *dir, const char *name)
{
    static char paths[8][1024];
    static unsigned next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

char *th_slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    char *text = slurp_fd(fd, len);
    close(fd);
    return text;
}
