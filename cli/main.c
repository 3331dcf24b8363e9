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
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "store/store.h"

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
    "  extract FILE... --db DB --finding ID -w OUT.pcap\n"
    "                                  the packets of a finding (or --client, --slot,\n"
    "                                  --since/--until) into a pcap for Wireshark\n"
    "\n"
    "  slotscope COMMAND --help        options of a command\n"
    "  slotscope --version             the version\n"
    "\n"
    "exit codes: 0 ok, 1 runtime error, 2 usage error, 3 findings (--fail-on-findings),\n"
    "4 the capture cannot support a verdict (--fail-on-findings; one line says why)\n";

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    store_init();
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
    if (!strcmp(cmd, "extract"))
        return cmd_extract(argc - 2, argv + 2);
    fprintf(stderr, "slotscope: unknown command '%s'\ntry 'slotscope --help'\n", cmd);
    return EXIT_USAGE;
}
