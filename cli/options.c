/*
 * options.c - the options of `analyze` and `live`.
 *
 * A small table-driven parser (no getopt_long, so it behaves the same
 * everywhere): long options as "--name value" or "--name=value", the short
 * ones tcpdump users expect (-i, -f, -Z) as "-i lo" or "-ilo", "--" ends the
 * options. Analysis settings go straight into an an_config, server ports into
 * the capture config.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "cli/cli.h"

/* Which option a table entry is. */
typedef enum opt_id {
    OPT_DB, OPT_FORCE, OPT_PORTS, OPT_CLIENT_BY, OPT_NODE_MAP, OPT_REDACT, OPT_STORE_COMMANDS,
    OPT_REDACT_KEY_FILE, OPT_JSON, OPT_QUIET, OPT_SET, OPT_FAIL_ON_FINDINGS, OPT_FAIL_ON,
    OPT_IGNORE, OPT_HELP, OPT_THREADS,
    OPT_IFACE, OPT_FILTER, OPT_DURATION, OPT_USER, OPT_BUFFER, OPT_SNAPLEN,
    OPT_FULL, OPT_SINCE, OPT_UNTIL, OPT_WRITE, OPT_ROTATE, OPT_METRICS, OPT_TIME_OFFSET,
    OPT_BUCKET
} opt_id;

/* One option: its long name, short letter (0 if none), whether it takes a
 * value, and whether only `live` has it. */
typedef struct opt_def {
    const char *name;
    char letter;
    int has_value;
    int live_only;
    opt_id id;
} opt_def;

static const opt_def opt_table[] = {
    {"db", 0, 1, 0, OPT_DB},
    {"force", 0, 0, 0, OPT_FORCE},
    {"ports", 0, 1, 0, OPT_PORTS},
    {"client-by", 0, 1, 0, OPT_CLIENT_BY},
    {"node-map", 0, 1, 0, OPT_NODE_MAP},
    {"redact-keys", 0, 0, 0, OPT_REDACT},
    {"redact-key-file", 0, 1, 0, OPT_REDACT_KEY_FILE},
    {"store-commands", 0, 0, 0, OPT_STORE_COMMANDS},
    {"json", 0, 0, 0, OPT_JSON},
    {"quiet", 'q', 0, 0, OPT_QUIET},
    {"set", 0, 1, 0, OPT_SET},
    {"fail-on-findings", 0, 0, 0, OPT_FAIL_ON_FINDINGS},
    {"fail-on", 0, 1, 0, OPT_FAIL_ON},
    {"ignore", 0, 1, 0, OPT_IGNORE},
    {"help", 'h', 0, 0, OPT_HELP},
    {"threads", 0, 1, 0, OPT_THREADS},
    {"interface", 'i', 1, 1, OPT_IFACE},
    {"filter", 'f', 1, 1, OPT_FILTER},
    {"duration", 0, 1, 1, OPT_DURATION},
    {"user", 'Z', 1, 1, OPT_USER},
    {"buffer", 'B', 1, 1, OPT_BUFFER},
    {"snaplen", 's', 1, 1, OPT_SNAPLEN},
    {"full", 0, 0, 0, OPT_FULL},
    {"since", 0, 1, 0, OPT_SINCE},
    {"until", 0, 1, 0, OPT_UNTIL},
    {"write", 'w', 1, 1, OPT_WRITE},
    {"rotate", 'C', 1, 1, OPT_ROTATE},
    {"metrics", 0, 1, 1, OPT_METRICS},
    {"time-offset", 0, 1, 0, OPT_TIME_OFFSET},
    {"bucket", 0, 1, 0, OPT_BUCKET},
};

const char cli_analysis_options_help[] =
    "  --db PATH              write everything to a SQLite database (see store/schema.sql)\n"
    "  --force                replace an existing database (only a regular file that is\n"
    "                         empty or a SQLite database, not an input, not in use)\n"
    "  --ports LIST           server ports, e.g. 7000-7005,6379 (default: a built-in list);\n"
    "                         tells client from server on connections seen without SYN\n"
    "  --client-by host|conn|name\n"
    "                         a client is a host (default), one connection, or a host's\n"
    "                         processes by the name (or library) they announce\n"
    "  --node-map ANNOUNCED=OBSERVED\n"
    "                         the cluster announces ANNOUNCED (host:port) for the node the\n"
    "                         capture sees as OBSERVED (NAT, containers); repeatable\n"
    "  --redact-keys          show and store a keyed hash (h:...) instead of each key,\n"
    "                         under a random key made for this run (docs/cli.md)\n"
    "  --redact-key-file FILE --redact-keys under the key in FILE (32 bytes, or 64 hex\n"
    "                         digits; mode 0600): hashes then compare across runs\n"
    "  --store-commands       keep every paired command in the commands table\n"
    "  --set NAME=VALUE       a detector threshold or table cap (list below); repeatable\n"
    "  --json                 JSON lines (one object per record, \"type\" field) for jq\n"
    "  --full                 the whole text report: every client, kind and finding\n"
    "  --since TIME, --until TIME (analyze)\n"
    "                         analyse only the records of this window: +30s (from the\n"
    "                         capture's first record), 2026-12-01T15:43:09Z, 15:43:09\n"
    "                         (UTC, the capture's first day), @SECONDS\n"
    "  --time-offset FILE=+12.5ms, --time-offset auto (analyze)\n"
    "                         shift FILE's times (us, ms or s; a sign) before the merge:\n"
    "                         a capture from a host whose clock differs; auto: by the\n"
    "                         skew found from TCP segments two inputs both captured\n"
    "  --bucket WIDTH         the timeline table's time buckets: 1s (default), 10s, 1m;\n"
    "                         any N ms, s, m or h from 10ms to 1h\n"
    "  --quiet, -q            no progress display\n"
    "  --fail-on-findings     CI verdict: exit 3 when a client finding is found, 4 when the\n"
    "                         capture cannot support a verdict (empty, one direction, TLS,\n"
    "                         cluster bus only, no cluster, out of sync, cut short)\n"
    "  --fail-on WHAT         what fails (implies --fail-on-findings): error, warning\n"
    "                         (warning and error) or KIND[,KIND...] (docs/cli.md)\n"
    "  --ignore KIND[,KIND]   these kinds never fail the run\n"
    "  --threads N            1 (default): everything on one thread; 2: a second\n"
    "                         thread reads the capture ahead; 3 or more: TCP and RESP\n"
    "                         decoded on N threads (connections shared out by address),\n"
    "                         analysed on one more; 0: one per core, at most 64. The\n"
    "                         results are the same for every N\n"
    "  --help, -h             this help\n";

/* The capture and resp layers' caps that --set reaches (the analysis ones
 * are an_config_set's): the connection table, idle expiry, the out-of-order
 * bytes held for reassembly, requests in flight and kept replies, and when
 * acknowledged bytes never seen become a gap. The caps on all connections
 * apply per partition of connections (capture/capture.h). */
typedef struct cap_setting {
    const char *name;
    const char *help;
    uint64_t min, max;
} cap_setting;

static const cap_setting cap_settings[] = {
    {"capture_connections", "TCP connections held by the capture layer, 1/64 per partition of connections; a full partition evicts its oldest idle, counted (default 262144)", 1, 1u << 24},
    {"idle_timeout_s", "seconds without a packet before a connection is closed as idle (default 300)", 1, 86400 * 365},
    {"ooo_bytes_per_conn", "out-of-order bytes held per connection before a hole is given up, counted (default 1048576)", 0, (uint64_t)1 << 32},
    {"ooo_bytes_total", "out-of-order bytes held in all connections, 1/64 per partition (default 268435456)", 0, (uint64_t)1 << 36},
    {"inflight_total", "requests waiting for replies in all connections, 1/64 per partition; more are dropped, counted (default 1000000)", 1, (uint64_t)1 << 32},
    {"kept_replies_total", "bytes of CLUSTER SLOTS/SHARDS/NODES replies kept for parsing in all connections, 1/64 per partition; a reply past it is not kept, counted (default 67108864)", 1, (uint64_t)1 << 36},
    {"acked_gap_ms", "ms (capture time) a peer acknowledges bytes never captured before they are given up as a gap, not when the sender's next segment shows it: bounds memory on captures with bursts of kernel drops (default 0: off)", 0, 86400000},
};

/* Apply a capture --set NAME=VALUE. 1 applied, 0 not a capture setting,
 * -1 a capture setting with a bad value. */
static int cap_config_set(cli_opts *o, const char *assignment)
{
    cap_config *cap = &o->cap;
    const char *eq = strchr(assignment, '=');
    size_t len = eq ? (size_t)(eq - assignment) : 0;
    for (size_t i = 0; eq && i < sizeof cap_settings / sizeof cap_settings[0]; i++) {
        const cap_setting *cs = &cap_settings[i];
        char *end;
        unsigned long long v;
        if (strlen(cs->name) != len || strncmp(cs->name, assignment, len) != 0)
            continue;
        if (eq[1] < '0' || eq[1] > '9')
            return -1;
        v = strtoull(eq + 1, &end, 10);
        if (*end || v < cs->min || v > cs->max)
            return -1;
        switch (i) {
        case 0: cap->max_connections = (uint32_t)v; break;
        case 1: cap->idle_timeout_us = (int64_t)v * 1000000; break;
        case 2: cap->ooo_bytes_per_conn = (size_t)v; break;
        case 3: cap->ooo_bytes_total = (size_t)v; break;
        case 4: o->inflight_total = v; break;
        case 5: o->kept_total = v; break;
        default: cap->acked_gap_us = (int64_t)v * 1000; break;
        }
        return 1;
    }
    return 0;
}

void cli_print_settings_help(FILE *out)
{
    const char *p = an_config_help();
    for (size_t i = 0; i < sizeof cap_settings / sizeof cap_settings[0]; i++)
        fprintf(out, "  %-24s %s\n", cap_settings[i].name, cap_settings[i].help);
    while (p && *p) {
        size_t len = strcspn(p, "\n");
        fprintf(out, "  %.*s\n", (int)len, p);
        p += len;
        if (*p == '\n')
            p++;
    }
}

/* A bucket width: N followed by ms, s, m or h, from 10 ms to 1 h. 0, or -1. */
static int parse_bucket(const char *v, int64_t *us)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    int64_t unit = !strcmp(end, "ms") ? 1000 : !strcmp(end, "s") ? 1000000
                 : !strcmp(end, "m") ? 60000000 : !strcmp(end, "h") ? 3600000000LL : 0;
    if (errno || end == v || v[0] == '-' || !unit || n == 0 || n > 3600000)
        return -1;
    *us = (int64_t)n * unit;
    return *us >= 10000 && *us <= 3600000000LL ? 0 : -1;
}

/* The table entry for a long name (without "--", up to '=') or a letter. */
static const opt_def *find_opt(const char *name, size_t len, char letter)
{
    for (size_t i = 0; i < sizeof opt_table / sizeof opt_table[0]; i++) {
        const opt_def *d = &opt_table[i];
        if (letter ? d->letter == letter : strlen(d->name) == len && !strncmp(d->name, name, len))
            return d;
    }
    return NULL;
}

/* Parse one port number (1..65535). 0 ok, -1 bad. */
static int parse_port(const char *text, size_t len, uint16_t *port)
{
    char buf[8];
    char *end;
    long v;
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, text, len);
    buf[len] = 0;
    v = strtol(buf, &end, 10);
    if (*end || v < 1 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

/* Append one "N" or "N-M" item to the server ports. 0 ok, -1 bad or too many. */
static int add_port_item(cap_config *cap, const char *item, size_t len)
{
    const char *dash = memchr(item, '-', len);
    uint16_t lo, hi;
    if (dash) {
        if (parse_port(item, (size_t)(dash - item), &lo) ||
            parse_port(dash + 1, len - (size_t)(dash - item) - 1, &hi) || hi < lo)
            return -1;
    } else {
        if (parse_port(item, len, &lo))
            return -1;
        hi = lo;
    }
    for (uint32_t p = lo; p <= hi; p++) {
        size_t cap_n = sizeof cap->server_ports / sizeof cap->server_ports[0];
        if (cap->n_server_ports >= cap_n)
            return -1;
        cap->server_ports[cap->n_server_ports++] = (uint16_t)p;
    }
    return 0;
}

/* "7000-7005,6379": every item. 0 ok, -1 bad. */
static int parse_ports(cap_config *cap, const char *list)
{
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (add_port_item(cap, p, len))
            return -1;
        p += len;
        if (*p == ',')
            p++;
    }
    return cap->n_server_ports > 0 ? 0 : -1;
}

/* "ANNOUNCED=OBSERVED" into the analysis node map. 0 ok, -1 bad or full. */
static int parse_node_map(an_config *an, const char *text)
{
    const char *eq = strchr(text, '=');
    size_t alen, olen, max = sizeof an->node_map / sizeof an->node_map[0];
    if (!eq || an->n_node_map >= max)
        return -1;
    alen = (size_t)(eq - text);
    olen = strlen(eq + 1);
    if (alen == 0 || olen == 0 || alen >= AN_NAME_MAX || olen >= AN_NAME_MAX)
        return -1;
    memcpy(an->node_map[an->n_node_map].announced, text, alen);
    an->node_map[an->n_node_map].announced[alen] = 0;
    memcpy(an->node_map[an->n_node_map].observed, eq + 1, olen + 1);
    an->n_node_map++;
    return 0;
}

/* Append text to a space-separated list in a fixed buffer. */
static void append_word(char *list, size_t size, const char *word)
{
    size_t used = strlen(list);
    snprintf(list + used, size - used, "%s%s", used ? " " : "", word);
}

/* The value of a hex digit, or -1. */
static int hex_value(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A whole decimal integer in min..max: 0 and *out set, or -1. */
static int parse_int_in(const char *v, long min, long max, long *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < min || n > max)
        return -1;
    *out = n;
    return 0;
}

/* The redaction key in path: exactly 32 bytes, or 64 hex digits and an optional
 * newline. Refused when others may read or write it (like ssh's private keys):
 * whoever has the key can hash a dictionary and undo the redaction. 0, or
 * EXIT_USAGE printed. The key is never printed, even in part. */
static int load_redact_key(cli_opts *o, const char *path)
{
    uint8_t raw[2 * AN_REDACT_KEY_BYTES + 2];
    struct stat sb;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return cli_usage_error(o->cmd, "cannot open the key file '%s': %s", path,
                               strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return cli_usage_error(o->cmd, "the key file '%s' is not a regular file", path);
    }
    if (sb.st_mode & 077) {
        close(fd);
        return cli_usage_error(o->cmd, "the key file '%s' is open to others (mode %04o): "
                               "chmod 600 it", path, (unsigned)(sb.st_mode & 07777));
    }
    n = read(fd, raw, sizeof raw);
    close(fd);
    if (n == AN_REDACT_KEY_BYTES) {
        memcpy(o->an.redact_key, raw, AN_REDACT_KEY_BYTES);
    } else if (n == 2 * AN_REDACT_KEY_BYTES ||
               (n == 2 * AN_REDACT_KEY_BYTES + 1 && raw[n - 1] == '\n')) {
        for (int i = 0; i < AN_REDACT_KEY_BYTES; i++) {
            int hi = hex_value(raw[2 * i]), lo = hex_value(raw[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                sodium_memzero(raw, sizeof raw);
                return cli_usage_error(o->cmd, "the key file '%s' is not 64 hex digits", path);
            }
            o->an.redact_key[i] = (uint8_t)(hi << 4 | lo);
        }
    } else {
        return cli_usage_error(o->cmd, "the key file '%s' holds %s%zd bytes: a key is 32 bytes, "
                               "or 64 hex digits", path, n == (ssize_t)sizeof raw ? "at least " : "",
                               n < 0 ? (ssize_t)0 : n);
    }
    sodium_memzero(raw, sizeof raw);
    o->redact_key_file = 1;
    o->an.redact_keys = 1;
    return 0;
}

/* Apply one option with its value (NULL for flags). 0, or EXIT_USAGE printed. */
static int apply_opt(cli_opts *o, const opt_def *d, const char *v)
{
    char *end;
    long n;
    int set_rc;
    switch (d->id) {
    case OPT_DB: o->db = v; break;
    case OPT_FORCE: o->force = 1; break;
    case OPT_PORTS:
        if (parse_ports(&o->cap, v))
            return cli_usage_error(o->cmd, "bad --ports '%s' (ports 1-65535, N or N-M, "
                                           "comma separated, at most 64)", v);
        break;
    case OPT_CLIENT_BY:
        if (!strcmp(v, "host"))
            o->an.client_by = AN_CLIENT_BY_HOST;
        else if (!strcmp(v, "conn"))
            o->an.client_by = AN_CLIENT_BY_CONN;
        else if (!strcmp(v, "name"))
            o->an.client_by = AN_CLIENT_BY_NAME;
        else
            return cli_usage_error(o->cmd, "bad --client-by '%s' (host, conn or name)", v);
        break;
    case OPT_NODE_MAP:
        if (parse_node_map(&o->an, v))
            return cli_usage_error(o->cmd, "bad --node-map '%s' (ANNOUNCED=OBSERVED, at most 64)", v);
        break;
    case OPT_REDACT: o->an.redact_keys = 1; break;
    case OPT_REDACT_KEY_FILE: return load_redact_key(o, v);
    case OPT_STORE_COMMANDS: o->store_commands = 1; break;
    case OPT_JSON: o->json = 1; break;
    case OPT_FULL: o->full = 1; break;
    case OPT_SINCE:
    case OPT_UNTIL:
        if (!strcmp(o->cmd, "live"))
            return cli_usage_error(o->cmd, "--%s is for analyze (live: --duration)",
                                   d->id == OPT_SINCE ? "since" : "until");
        if (cli_parse_time(v, 1, &(int64_t){0}) != 0)
            return cli_usage_error(o->cmd, "bad --%s '%s' (+30s, 2026-12-01T15:43:09Z, "
                                           "15:43:09, @SECONDS)",
                                   d->id == OPT_SINCE ? "since" : "until", v);
        *(d->id == OPT_SINCE ? &o->since : &o->until) = v;
        break;
    case OPT_TIME_OFFSET:
        if (!strcmp(o->cmd, "live"))
            return cli_usage_error(o->cmd, "--time-offset is for analyze");
        if (!strcmp(v, "auto")) {
            o->time_offset_auto = 1;
            break;
        }
        if (cli_parse_time_offset(v, NULL, NULL) != 0)
            return cli_usage_error(o->cmd, "bad --time-offset '%s' (FILE=+12.5ms: us, ms or s, "
                                           "with a sign; or auto)", v);
        if (o->n_time_offsets >= CLI_TIME_OFFSETS_MAX)
            return cli_usage_error(o->cmd, "too many --time-offset (at most %d)",
                                   CLI_TIME_OFFSETS_MAX);
        o->time_offsets[o->n_time_offsets++] = v;
        break;
    case OPT_QUIET: o->quiet = 1; break;
    case OPT_BUCKET:
        if (parse_bucket(v, &o->an.series_bucket_us))
            return cli_usage_error(o->cmd, "bad --bucket '%s' (1s, 10s, 1m: N ms, s, m or h, "
                                           "10ms to 1h)", v);
        {
            char word[64];
            snprintf(word, sizeof word, "bucket=%s", v);
            append_word(o->settings, sizeof o->settings, word);
        }
        break;
    case OPT_SET:
        /* The old public seed: stored with the database, it let anyone with
         * one known key undo the redaction. Refused, never stored. */
        if (!strncmp(v, "redact_seed=", 12) || !strcmp(v, "redact_seed"))
            return cli_usage_error(o->cmd, "--set redact_seed is gone: it was stored in the "
                                   "database and did not protect the keys; keep a secret key "
                                   "in a file and give --redact-key-file FILE");
        set_rc = cap_config_set(o, v);
        if (set_rc < 0 || (set_rc == 0 && an_config_set(&o->an, v) != 0))
            return cli_usage_error(o->cmd, "unknown setting or bad value in --set '%s'", v);
        append_word(o->settings, sizeof o->settings, v);
        break;
    case OPT_FAIL_ON_FINDINGS:
        o->fail_on_findings = 1;
        o->verdict.enabled = 1;
        break;
    case OPT_FAIL_ON:
        if (verdict_fail_on(&o->verdict, v) != 0)
            return cli_usage_error(o->cmd, "bad --fail-on '%s' (error, warning or finding "
                                           "kinds, comma separated)", v);
        o->fail_on_findings = 1;
        break;
    case OPT_IGNORE:
        if (verdict_ignore(&o->verdict, v) != 0)
            return cli_usage_error(o->cmd, "bad --ignore '%s' (finding kinds, comma "
                                           "separated)", v);
        break;
    case OPT_HELP: o->help = 1; break;
    case OPT_IFACE: o->iface = v; break;
    case OPT_FILTER: o->filter = v; break;
    case OPT_DURATION:
        o->duration_s = strtod(v, &end);
        if (*end || !(o->duration_s > 0) || o->duration_s > 1e7)
            return cli_usage_error(o->cmd, "bad --duration '%s' (seconds, > 0)", v);
        break;
    case OPT_USER: o->user = v; break;
    case OPT_BUFFER:
        if (parse_int_in(v, 1, 2047, &n))
            return cli_usage_error(o->cmd, "bad --buffer '%s' (MiB, 1-2047)", v);
        o->buffer_mb = (int)n;
        break;
    case OPT_SNAPLEN:
        if (parse_int_in(v, 0, 262144, &n))
            return cli_usage_error(o->cmd, "bad --snaplen '%s' (bytes, 0-262144; 0: 262144)", v);
        o->snaplen = (int)n;
        break;
    case OPT_WRITE: o->write_path = v; break;
    case OPT_ROTATE: /* tcpdump's -C: millions of bytes */
        if (parse_int_in(v, 1, 1000000, &n))
            return cli_usage_error(o->cmd, "bad -C '%s' (millions of bytes, 1-1000000)", v);
        o->rotate_bytes = (uint64_t)n * 1000000u;
        break;
    case OPT_METRICS: o->metrics_addr = v; break;
    case OPT_THREADS:
        if (parse_int_in(v, 0, 64, &n))
            return cli_usage_error(o->cmd, "bad --threads '%s' (0-64, 0: one per core)", v);
        o->threads = n == 0 ? par_default_threads() : (unsigned)n;
        break;
    }
    return 0;
}

/* Find the option argv[*i] names and its value (inline or the next argument,
 * advancing *i). 0, or EXIT_USAGE printed. */
static int take_opt(cli_opts *o, int live, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char *inline_value = NULL;
    const opt_def *d;
    if (a[1] == '-') {
        const char *eq = strchr(a + 2, '=');
        d = find_opt(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2), 0);
        inline_value = eq ? eq + 1 : NULL;
    } else {
        d = find_opt(NULL, 0, a[1]);
        inline_value = a[2] ? a + 2 : NULL;
    }
    if (!d || (d->live_only && !live))
        return cli_usage_error(o->cmd, "unknown option '%s'", a);
    if (!d->has_value) {
        if (inline_value)
            return cli_usage_error(o->cmd, "option '%s' takes no value", a);
        return apply_opt(o, d, NULL);
    }
    if (!inline_value) {
        if (*i + 1 >= argc)
            return cli_usage_error(o->cmd, "option '%s' needs a value", a);
        inline_value = argv[++*i];
    }
    return apply_opt(o, d, inline_value);
}

/* Check what the command needs once everything is parsed. */
static int check_opts(cli_opts *o, int live)
{
    if (o->help)
        return 0;
    if (live && !o->iface)
        return cli_usage_error(o->cmd, "no interface given (-i IFACE)");
    if (live && o->n_files)
        return cli_usage_error(o->cmd, "unexpected argument '%s'", o->files[0]);
    if (!live && o->n_files == 0)
        return cli_usage_error(o->cmd, "no capture file given");
    if (o->rotate_bytes && !o->write_path)
        return cli_usage_error(o->cmd, "-C needs -w FILE");
    if (o->force && !o->db)
        return cli_usage_error(o->cmd, "--force needs --db");
    if (o->store_commands && !o->db)
        return cli_usage_error(o->cmd, "--store-commands needs --db");
    if (o->an.redact_keys && !o->redact_key_file && an_redact_key_random(&o->an) != 0)
        return cli_error("cannot make a random key for --redact-keys (libsodium)");
    return 0;
}

int cli_parse_options(cli_opts *o, int live, int argc, char **argv)
{
    int only_files = 0;
    memset(o, 0, sizeof *o);
    o->cmd = live ? "live" : "analyze";
    o->threads = 1;
    cap_config_defaults(&o->cap);
    an_config_defaults(&o->an);
    o->files = calloc((size_t)argc + 1, sizeof *o->files);
    if (!o->files)
        return cli_error("out of memory");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (!only_files && !strcmp(a, "--")) {
            only_files = 1;
            continue;
        }
        if (only_files || a[0] != '-' || a[1] == 0) {
            o->files[o->n_files++] = a;
            continue;
        }
        rc = take_opt(o, live, argc, argv, &i);
        if (rc)
            return rc;
    }
    return check_opts(o, live);
}

/* Does the argument need quoting to be pasted into a shell? */
static int needs_quotes(const char *a)
{
    if (!*a)
        return 1;
    for (; *a; a++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                    "-_./=:,+@%", *a))
            return 1;
    return 0;
}

/* Append one character if it fits (keeping room for the NUL). */
static void put_char(char *out, size_t size, size_t *used, char c)
{
    if (*used + 1 < size) {
        out[(*used)++] = c;
        out[*used] = 0;
    }
}

/* Append a string if it fits, character by character. */
static void put_str(char *out, size_t size, size_t *used, const char *s)
{
    for (; *s; s++)
        put_char(out, size, used, *s);
}

int64_t cli_env_interval_ns(const char *name, int64_t default_ns)
{
    const char *ms = getenv(name);
    char *end;
    long v;
    if (!ms || !*ms)
        return default_ns;
    v = strtol(ms, &end, 10);
    if (*end != '\0' || v < 1 || v > 60000)
        return default_ns;
    return (int64_t)v * 1000000LL;
}

void cli_join_argv(int argc, char **argv, char *out, size_t size)
{
    size_t used = 0;
    if (size == 0)
        return;
    out[0] = 0;
    for (int i = 0; i < argc; i++) {
        if (i)
            put_char(out, size, &used, ' ');
        if (!needs_quotes(argv[i])) {
            put_str(out, size, &used, argv[i]);
            continue;
        }
        /* Single quotes; a quote inside becomes '\'' (close, escaped, reopen). */
        put_char(out, size, &used, '\'');
        for (const char *p = argv[i]; *p; p++) {
            if (*p == '\'')
                put_str(out, size, &used, "'\\''");
            else
                put_char(out, size, &used, *p);
        }
        put_char(out, size, &used, '\'');
    }
}
