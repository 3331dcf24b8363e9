/*
 * cmd_extract.c - `slotscope extract INPUT... --db DB (--finding ID | --client
 * NAME | --slot N | --since T | --until T)... -w OUT.pcap`: from a finding to
 * the packets.
 *
 * Writes exactly the records of the chosen connections inside the chosen time
 * window, in the merged order of the inputs (the order analyze numbered them
 * in), as a classic pcap that tshark and Wireshark open:
 *
 *   --finding ID  the connections its evidence events travelled on
 *                 (findings.evidence, conn), inside the finding's window:
 *                 first_us .. last_us, widened to the records its evidence
 *                 names (req_frame .. reply_frame)
 *   --client NAME the client's connections (connections.client)
 *   --slot N      the connections that carried a redirect for slot N, or a
 *                 command for it when the run kept commands
 *   --since/--until T  the window: seconds since the epoch ("1796024441.5"),
 *                 or since the capture's start with a '+' ("+2.5")
 *
 * Options combine: every one given must hold. A record belongs to a
 * connection when its endpoints are the connection's (either direction) and
 * it lies from the connection's first packet to before the next connection
 * of those endpoints (a reused 4-tuple is another connection).
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char extract_usage[] =
    "usage: slotscope extract INPUT... --db DB -w OUT.pcap [--finding ID]\n"
    "                         [--client NAME] [--slot N] [--since T] [--until T]\n"
    "\n"
    "Write the packets behind a finding (or a client, a slot, a time window) to a\n"
    "pcap file that tshark and Wireshark open. INPUT... and DB are the capture files\n"
    "and the database of one `analyze` run (the same files, in any order).\n"
    "\n"
    "options:\n"
    "  --db DB          the run's database (analyze --db)\n"
    "  -w, --write OUT  the pcap file to write (replaced if it exists)\n"
    "  --finding ID     the connections of finding ID (findings.id) in its window:\n"
    "                   first_us..last_us and the records its evidence names\n"
    "  --client NAME    the connections of this client (as the report names it)\n"
    "  --slot N         the connections that carried a redirect (or, with\n"
    "                   --store-commands, a command) for slot N\n"
    "  --since T        from T: epoch seconds, or +SECONDS from the capture's start\n"
    "  --until T        up to T (the same forms)\n"
    "  --help, -h       this help\n"
    "\n"
    "exit codes: 0 ok (the number of packets written is printed on stderr), 1\n"
    "runtime error (no such finding, unreadable input), 2 usage error\n";

/* One connection to extract. */
typedef struct ex_conn {
    cap_endpoint client, server;
    int64_t first_us;            /* its first packet */
    int64_t until_us;            /* before the next connection of the same
                                    endpoints (late ACKs after its close are
                                    still its own) */
} ex_conn;

#define EX_MAX_CONNS 65536

typedef struct ex_args {
    const char **inputs;
    size_t n_inputs;
    const char *db, *out;
    const char *finding, *client, *slot, *since, *until;
} ex_args;

/* What to write. */
typedef struct ex_sel {
    ex_conn *conns;
    size_t n;
    int all_conns;               /* no connection option: every TCP record */
    int64_t lo_us, hi_us;        /* the window */
    uint64_t lo_frame, hi_frame; /* or these records (0: none) */
} ex_sel;

/* Parse a --since/--until value: epoch seconds or "+seconds" from start_us. */
static int parse_time(const char *text, int64_t start_us, int64_t *out)
{
    char *end;
    int rel = text[0] == '+';
    double v;
    errno = 0;
    v = strtod(text + rel, &end);
    if (end == text + rel || *end || errno || !(v >= 0) || v > 1e11)
        return -1;
    *out = (rel ? start_us : 0) + (int64_t)(v * 1e6 + 0.5);
    return 0;
}

/* When the next connection between src and dst after first_us began (a
 * reused 4-tuple), less one; INT64_MAX when none did. */
static int64_t next_connection(sqlite3 *db, const char *src, const char *dst, int64_t first_us)
{
    sqlite3_stmt *st;
    int64_t v = INT64_MAX;
    if (sqlite3_prepare_v2(db, "SELECT min(first_us) FROM connections WHERE first_us > ?3 AND "
                               "((src = ?1 AND dst = ?2) OR (src = ?2 AND dst = ?1))",
                           -1, &st, NULL) != SQLITE_OK)
        return v;
    sqlite3_bind_text(st, 1, src, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, dst, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, first_us);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0) - 1;
    sqlite3_finalize(st);
    return v;
}

/* Add the connection with this id (connections table). 0, or -1 when the
 * table is full. */
static int add_conn(sqlite3 *db, ex_sel *s, int64_t id)
{
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(db, "SELECT src, dst, first_us, last_us FROM connections WHERE id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        ex_conn c;
        for (size_t i = 0; i < s->n; i++)
            if (s->conns[i].first_us == sqlite3_column_int64(st, 2) &&
                cap_endpoint_parse((const char *)sqlite3_column_text(st, 0), &c.client) == 0 &&
                cap_endpoint_equal(&c.client, &s->conns[i].client))
                goto done; /* already there */
        if (s->n >= EX_MAX_CONNS) {
            rc = -1;
            goto done;
        }
        if (cap_endpoint_parse((const char *)sqlite3_column_text(st, 0), &c.client) == 0 &&
            cap_endpoint_parse((const char *)sqlite3_column_text(st, 1), &c.server) == 0) {
            c.first_us = sqlite3_column_int64(st, 2);
            c.until_us = next_connection(db, (const char *)sqlite3_column_text(st, 0),
                                         (const char *)sqlite3_column_text(st, 1), c.first_us);
            s->conns[s->n++] = c;
        }
    }
done:
    sqlite3_finalize(st);
    return rc;
}

/* Add every connection id the query returns (one column). */
static int add_conns_of(sqlite3 *db, ex_sel *s, const char *sql, const char *param)
{
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return cli_error("extract: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, param, -1, SQLITE_TRANSIENT);
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
        if (add_conn(db, s, sqlite3_column_int64(st, 0)) != 0)
            rc = cli_error("extract: more than %d connections chosen", EX_MAX_CONNS);
    sqlite3_finalize(st);
    return rc;
}

/* The connections and window of finding id, from its evidence. */
static int select_finding(sqlite3 *db, ex_sel *s, const char *id)
{
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(db, "SELECT first_us, last_us, evidence FROM findings WHERE id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return cli_error("extract: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return cli_error("extract: no finding with id %s in the database", id);
    }
    s->lo_us = sqlite3_column_int64(st, 0);
    s->hi_us = sqlite3_column_int64(st, 1);
    const char *ev = (const char *)sqlite3_column_text(st, 2);
    if (ev && json_valid(ev)) {
        json_span events = json_member((json_span){ev, strlen(ev)}, "events");
        for (size_t i = 0; rc == 0 && i < json_count(events); i++) {
            json_span e = json_element(events, i);
            char num[32];
            uint64_t f;
            json_text(json_member(e, "conn"), num, sizeof num);
            if (add_conn(db, s, strtoll(num, NULL, 10)) != 0)
                rc = cli_error("extract: more than %d connections chosen", EX_MAX_CONNS);
            for (int k = 0; k < 2; k++) {
                json_text(json_member(e, k ? "reply_frame" : "req_frame"), num, sizeof num);
                f = strtoull(num, NULL, 10);
                if (f && (!s->lo_frame || f < s->lo_frame))
                    s->lo_frame = f;
                if (f > s->hi_frame)
                    s->hi_frame = f;
            }
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* The capture's start (the earliest input's first record), for "+T". */
static int64_t capture_start(sqlite3 *db)
{
    sqlite3_stmt *st;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, "SELECT min(first_us) FROM inputs WHERE packets > 0", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Keep only the connections of a's --client among those chosen so far (or
 * take them all when none was chosen). */
static int select_conns(sqlite3 *db, const ex_args *a, ex_sel *s)
{
    int rc = 0;
    if (a->finding)
        rc = select_finding(db, s, a->finding);
    if (rc == 0 && a->slot && !a->finding) {
        rc = add_conns_of(db, s, "SELECT DISTINCT conn FROM redirects WHERE slot = ?1", a->slot);
        if (rc == 0)
            rc = add_conns_of(db, s, "SELECT DISTINCT conn FROM commands WHERE slot = ?1",
                              a->slot);
    }
    if (rc == 0 && a->client && !a->finding && !a->slot)
        rc = add_conns_of(db, s, "SELECT id FROM connections WHERE client = ?1", a->client);
    if (rc == 0 && a->client && (a->finding || a->slot)) {
        /* the intersection: drop the connections of other clients */
        ex_sel mine = {malloc(sizeof(ex_conn) * EX_MAX_CONNS), 0, 0, 0, 0, 0, 0};
        size_t k = 0;
        if (!mine.conns)
            return cli_error("extract: out of memory");
        rc = add_conns_of(db, &mine, "SELECT id FROM connections WHERE client = ?1", a->client);
        for (size_t i = 0; rc == 0 && i < s->n; i++)
            for (size_t j = 0; j < mine.n; j++)
                if (cap_endpoint_equal(&s->conns[i].client, &mine.conns[j].client) &&
                    s->conns[i].first_us == mine.conns[j].first_us) {
                    s->conns[k++] = s->conns[i];
                    break;
                }
        s->n = k;
        free(mine.conns);
    }
    s->all_conns = !a->finding && !a->slot && !a->client;
    return rc;
}

/* Does record rec (number frame) go out? */
static int wanted(const ex_sel *s, const cap_record *rec, uint64_t frame)
{
    cap_endpoint src, dst;
    int in_window = (rec->ts_us >= s->lo_us && rec->ts_us <= s->hi_us) ||
                    (s->lo_frame && frame >= s->lo_frame && frame <= s->hi_frame);
    if (!in_window)
        return 0;
    if (!cap_record_endpoints(rec, &src, &dst))
        return 0;
    if (s->all_conns)
        return 1;
    for (size_t i = 0; i < s->n; i++) {
        const ex_conn *c = &s->conns[i];
        if (rec->ts_us < c->first_us || rec->ts_us > c->until_us)
            continue;
        if ((cap_endpoint_equal(&src, &c->client) && cap_endpoint_equal(&dst, &c->server)) ||
            (cap_endpoint_equal(&src, &c->server) && cap_endpoint_equal(&dst, &c->client)))
            return 1;
    }
    return 0;
}

/* Read the inputs in merged order and write the wanted records. */
static int write_packets(const ex_args *a, const ex_sel *s)
{
    char err[1024] = "";
    cap_source *src = cap_open_files(a->inputs, a->n_inputs, err, sizeof err);
    pcap_t *dead = NULL;
    pcap_dumper_t *out = NULL;
    cap_record rec;
    uint64_t frame = 0, written = 0;
    int status = EXIT_OK, r;
    if (!src)
        return cli_error("%s", err);
    while ((r = cap_source_next(src, &rec, err, sizeof err)) != 0) {
        struct pcap_pkthdr h;
        if (r < 0) {
            status = cli_error("%s", err);
            continue;
        }
        frame++;
        if (!out) {
            dead = pcap_open_dead_with_tstamp_precision(rec.linktype, 262144,
                                                        PCAP_TSTAMP_PRECISION_MICRO);
            out = dead ? pcap_dump_open(dead, a->out) : NULL;
            if (!out) {
                status = cli_error("cannot write '%s': %s", a->out,
                                   dead ? pcap_geterr(dead) : "out of memory");
                break;
            }
        }
        if (rec.linktype != pcap_datalink(dead)) {
            status = cli_error("'%s': inputs of different link types cannot go into one pcap",
                               a->out);
            break;
        }
        if (!wanted(s, &rec, frame))
            continue;
        h.ts.tv_sec = (time_t)(rec.ts_us / 1000000);
        h.ts.tv_usec = (suseconds_t)(rec.ts_us % 1000000);
        h.caplen = rec.caplen;
        h.len = rec.wirelen;
        pcap_dump((u_char *)out, &h, rec.data);
        written++;
    }
    if (!out && status == EXIT_OK) { /* no record at all: an empty pcap */
        dead = pcap_open_dead_with_tstamp_precision(1, 262144, PCAP_TSTAMP_PRECISION_MICRO);
        out = dead ? pcap_dump_open(dead, a->out) : NULL;
        if (!out)
            status = cli_error("cannot write '%s'", a->out);
    }
    if (out && pcap_dump_flush(out) != 0)
        status = cli_error("cannot write '%s': %s", a->out, strerror(errno));
    if (out)
        pcap_dump_close(out);
    if (dead)
        pcap_close(dead);
    cap_source_free(src);
    if (status == EXIT_OK)
        fprintf(stderr, "slotscope: wrote %llu packets of %llu to %s\n",
                (unsigned long long)written, (unsigned long long)frame, a->out);
    return status;
}

/* Parse the arguments: 0, -1 for --help (printed), or EXIT_USAGE (printed). */
static int parse_args(int argc, char **argv, ex_args *a)
{
    static const char *const names[] = {"--db", "-w", "--write", "--finding", "--client",
                                        "--slot", "--since", "--until"};
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        size_t k, n = sizeof names / sizeof names[0];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(extract_usage, stdout);
            return -1;
        }
        for (k = 0; k < n; k++) {
            size_t len = strlen(names[k]);
            if (!strncmp(s, names[k], len) && (s[len] == 0 || s[len] == '='))
                break;
        }
        if (k < n) {
            size_t len = strlen(names[k]);
            const char *v = s[len] == '=' ? s + len + 1 : i + 1 < argc ? argv[++i] : NULL;
            const char **slots[] = {&a->db, &a->out, &a->out, &a->finding, &a->client,
                                    &a->slot, &a->since, &a->until};
            if (!v || !*v)
                return cli_usage_error("extract", "%s needs a value", names[k]);
            *slots[k] = v;
        } else if (s[0] == '-' && s[1]) {
            return cli_usage_error("extract", "unknown option '%s'", s);
        } else {
            a->inputs[a->n_inputs++] = s;
        }
    }
    return 0;
}

/* A whole non-negative decimal number. */
static int is_uint(const char *s, unsigned long long max)
{
    char *end;
    unsigned long long v;
    if (!s || *s < '0' || *s > '9')
        return 0;
    errno = 0;
    v = strtoull(s, &end, 10);
    return !*end && !errno && v <= max;
}

/* Check the arguments. 0, or EXIT_USAGE printed. */
static int check_args(const ex_args *a)
{
    int64_t t;
    if (a->n_inputs == 0)
        return cli_usage_error("extract", "no capture file given");
    if (!a->db)
        return cli_usage_error("extract", "no database given (--db)");
    if (!a->out)
        return cli_usage_error("extract", "no output file given (-w)");
    if (a->finding && !is_uint(a->finding, (unsigned long long)INT64_MAX))
        return cli_usage_error("extract", "bad --finding '%s' (a finding id)", a->finding);
    if (a->slot && !is_uint(a->slot, 16383))
        return cli_usage_error("extract", "bad --slot '%s' (0-16383)", a->slot);
    if (a->since && parse_time(a->since, 0, &t) != 0)
        return cli_usage_error("extract", "bad --since '%s' (epoch seconds or +SECONDS)",
                               a->since);
    if (a->until && parse_time(a->until, 0, &t) != 0)
        return cli_usage_error("extract", "bad --until '%s' (epoch seconds or +SECONDS)",
                               a->until);
    if (!a->finding && !a->client && !a->slot && !a->since && !a->until)
        return cli_usage_error("extract", "choose what to extract: --finding, --client, "
                                          "--slot, --since or --until");
    return 0;
}

/* Open the database, choose, write. */
static int extract(const ex_args *a)
{
    char err[1600];
    sqlite3 *db = store_open_readonly(a->db, err, sizeof err);
    ex_sel s = {NULL, 0, 0, INT64_MIN, INT64_MAX, 0, 0};
    int64_t start, t;
    int status;
    if (!db)
        return cli_error("%s", err);
    s.conns = malloc(sizeof(ex_conn) * EX_MAX_CONNS);
    if (!s.conns) {
        sqlite3_close(db);
        return cli_error("extract: out of memory");
    }
    status = select_conns(db, a, &s);
    start = capture_start(db);
    if (a->client && !a->finding && !a->slot && s.n == 0 && status == EXIT_OK)
        status = cli_error("extract: no client '%s' in the database", a->client);
    /* --since/--until narrow the window (a finding's frames stay in it only
     * when the window still covers them) */
    if (a->since && parse_time(a->since, start, &t) == 0 && t > s.lo_us) {
        s.lo_us = t;
        s.lo_frame = s.hi_frame = 0;
    }
    if (a->until && parse_time(a->until, start, &t) == 0 && t < s.hi_us) {
        s.hi_us = t;
        s.lo_frame = s.hi_frame = 0;
    }
    sqlite3_close(db);
    if (status == EXIT_OK)
        status = write_packets(a, &s);
    free(s.conns);
    return status;
}

int cmd_extract(int argc, char **argv)
{
    ex_args a;
    int rc;
    memset(&a, 0, sizeof a);
    a.inputs = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a.inputs);
    if (!a.inputs)
        return cli_error("out of memory");
    rc = parse_args(argc, argv, &a);
    if (rc == 0)
        rc = check_args(&a);
    if (rc == 0)
        rc = extract(&a);
    free(a.inputs);
    return rc < 0 ? EXIT_OK : rc;
}
