/*
 * messages.c - what the slotscope command writes to a terminal about bytes it
 * did not make: error messages, and the one escaping path (cli_safe_len,
 * cli_write_safe) that every capture or database text goes through; the
 * command line recorded in meta.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

char cli_command_line[4096];

/* A message on stderr, escaped: it may quote file names, capture bytes or a
 * database's texts. */
static void message(const char *prefix, const char *fmt, va_list ap)
{
    char text[4096];
    int n = vsnprintf(text, sizeof text, fmt, ap);
    fputs(prefix, stderr);
    if (n > 0)
        cli_write_safe(stderr, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1, 0);
}

int cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message("slotscope: ", fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_RUNTIME;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fputs("slotscope ", stderr);
    cli_print_safe(stderr, cmd);
    va_start(ap, fmt);
    message(": ", fmt, ap);
    va_end(ap);
    fputs("\ntry 'slotscope ", stderr);
    cli_print_safe(stderr, cmd);
    fputs(" --help'\n", stderr);
    return EXIT_USAGE;
}

size_t cli_safe_len(const unsigned char *p, size_t n, int keep_newline)
{
    unsigned char seq[5] = {0};
    int len;
    if (n == 0)
        return 0;
    if (p[0] < 0x80)
        return (p[0] >= 0x20 && p[0] != 0x7f) || (keep_newline && p[0] == '\n');
    memcpy(seq, p, n < 4 ? n : 4); /* cli_utf8_len reads up to the NUL */
    len = cli_utf8_len(seq);
    if (len <= 1 || (seq[0] == 0xc2 && seq[1] <= 0x9f))
        return 0;
    return (size_t)len;
}

void cli_write_safe(FILE *f, const char *s, size_t n, int keep_newline)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t run = i, k;
        while (run < n && (k = cli_safe_len(p + run, n - run, keep_newline)) > 0)
            run += k;
        fwrite(p + i, 1, run - i, f);
        if (run < n)
            fprintf(f, "\\x%02x", p[run++]);
        i = run;
    }
}

void cli_print_safe(FILE *f, const char *text)
{
    if (text)
        cli_write_safe(f, text, strlen(text), 0);
}
