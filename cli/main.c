/*
 * main.c - the slotscope command: dispatch to a subcommand.
 *
 *   slotscope analyze FILE... [options]     analyse capture files, print a report
 *   slotscope live -i IFACE [options]       analyse a live interface
 *   slotscope report DB                     the report again, from a database
 *   slotscope query DB NAME [--param k=v]   a canned SQL report
 *
 * Each subcommand lives in its own file (cmd_*.c) and returns the exit code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char main_help[] =
    "usage: slotscope COMMAND [ARGS]\n"
    "\n"
    "Passive traffic analyzer for Redis Cluster: which clients mishandle MOVED,\n"
    "ASK and TRYAGAIN during a reshard, what the redirects cost, when each slot\n"
    "migrated, and what the capture could not see.\n"
    "\n"
    "commands:\n"
    "  analyze FILE... [options]       analyse pcap/pcapng files, print the report\n"
    "  live -i IFACE [options]         analyse a live interface until Ctrl-C\n"
    "  report DB [--json]              the incident report from a database\n"
    "  query DB NAME [--param K=V]...  run a canned query (query --list shows them)\n"
    "\n"
    "  slotscope COMMAND --help        options of a command\n"
    "  slotscope --version             the version\n"
    "\n"
    "exit codes: 0 ok, 1 runtime error, 2 usage error, 3 findings (--fail-on-findings)\n";

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

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    cli_join_argv(argc, argv, cli_command_line, sizeof cli_command_line);
    if (!cmd) {
        fputs(main_help, stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(main_help, stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("slotscope %s\n", SLOTSCOPE_VERSION);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "analyze"))
        return cmd_analyze(argc - 2, argv + 2);
    if (!strcmp(cmd, "live"))
        return cmd_live(argc - 2, argv + 2);
    if (!strcmp(cmd, "report"))
        return cmd_report(argc - 2, argv + 2);
    if (!strcmp(cmd, "query"))
        return cmd_query(argc - 2, argv + 2);
    fprintf(stderr, "slotscope: unknown command '%s'\ntry 'slotscope --help'\n", cmd);
    return EXIT_USAGE;
}
