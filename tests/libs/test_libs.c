/*
 * test_libs.c - slotscope on captures of real Redis Cluster client libraries.
 *
 *   test_libs NAME [DIR]   (ctest: libs_NAME, one per library; DIR libs-mid:
 *                           libs_mid_NAME)
 *
 * tests/fixtures/libs/NAME.pcap.gz is one library's traffic (its own
 * 127.0.0.x) through a live reshard, a hand migration with a long ASK window
 * and TRYAGAIN, a manual failover and a rebalance, cut from the capture of
 * scripts/libs/scenario.py. NAME.truth.tsv is what that library did, decided
 * from the capture alone by scripts/libs/truth.py (its own pcap reader, TCP
 * reassembly and RESP decoder, and tshark's RESP dissector for the counts),
 * never from slotscope's output. See docs/clients.md.
 *
 * The capture is gunzipped (zlib) into a scratch folder, analysed with
 * `slotscope analyze --db`, and the database is checked against the truth:
 *   - the truth agrees with tshark on the requests and redirect replies;
 *   - slotscope counts the same requests (clients.commands) and, per kind,
 *     the same redirects (redirects table) for the library's address;
 *   - every kind of finding the truth requires is reported for it, and no
 *     other kind; a library the truth calls clean gets no finding at all;
 *   - no cluster-side finding (every migration of the scenario ended within
 *     seconds, the truth says so with `cluster_findings 0`).
 * test_truth_reproduced first runs truth.py (/usr/bin/python3) on the
 * fixture and requires the committed truth, tshark's lines aside.
 * Every check runs and each failure is printed with its reason before the
 * test fails, so one run shows all that differs. For a kind both report, the
 * occurrences (the sum of the findings' counts) and the set of slots must be
 * the truth's too (-1 for readonly_missing and crossslot, per client).
 *
 * DIR (default libs) is the fixture folder under tests/fixtures. libs-mid
 * holds captures whose tcpdump started after the libraries had connected
 * (scenario.py --midstream, bench/results/2026-12-02-libs-midstream.txt):
 * their truth also has `midstream`, `unanswered` and `orphan_replies`, and
 * slotscope must count as many connections picked up mid-stream
 * (connections.mid_stream) for the library, as many unpaired requests and
 * replies, and, when the truth paired everything, no connection out of sync.
 *
 * DIR libs-drops (ctest libs_drops_NAME) holds captures made with tcpdump -i
 * any and a buffer so small that the kernel dropped 51,809 packets
 * (scenario.py --midstream --any --load --buffer 512). There truth.py
 * cannot see what the holes took (a retry in a dropped packet, replies after
 * a server-side hole), so its findings are not slotscope's to match
 * (docs/clients.md says where and why). What must hold is the pairing, which
 * scripts/libs/midcheck.py checks command by command against truth.py on
 * the database of analyze --store-commands:
 *   - no command paired with another reply than truth's (paired_WRONG), none
 *     with a reply its command cannot get (paired_IMPOSSIBLE);
 *   - both read the same number of the library's commands;
 *   - the whole pairing line is the one in libs-drops/pairing.tsv (paired
 *     the same, left unanswered by slotscope, unknown to truth): a change
 *     in either tool shows there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <zlib.h>

#include "tests/helpers/child.h"
#include "tests/helpers/dbq.h"

#define MAX_KINDS 16
#define NAME_MAX_LEN 64

static const char *const redirect_kinds[] = {"MOVED", "ASK", "TRYAGAIN", "CROSSSLOT",
                                             "CLUSTERDOWN"};
#define N_REDIRECT_KINDS (sizeof redirect_kinds / sizeof redirect_kinds[0])

/* What truth.py decided for the one library of a fixture. */
typedef struct truth {
    char addr[NAME_MAX_LEN];
    int64_t commands, tshark_commands;
    int64_t redirects[N_REDIRECT_KINDS], tshark_redirects[N_REDIRECT_KINDS];
    char kinds[MAX_KINDS][NAME_MAX_LEN];
    int64_t kind_count[MAX_KINDS];            /* occurrences, as truth.py counts */
    char kind_slots[MAX_KINDS][512];
    size_t n_kinds;
    int clean;
    int64_t cluster_findings;
    int64_t midstream, unanswered, orphan_replies;  /* -1: not in the truth */
} truth;

static const char *lib_name;
static const char *lib_dir = "libs";
static int failures;

/* Print one failed check and count it (the test fails at the end). */
static void check_failed(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "CHECK FAILED [%s] ", lib_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

static int redirect_index(const char *kind)
{
    for (size_t i = 0; i < N_REDIRECT_KINDS; i++)
        if (strcmp(kind, redirect_kinds[i]) == 0)
            return (int)i;
    return -1;
}

/* Split line at tabs into at most n fields; returns how many. */
static size_t split_tabs(char *line, char **f, size_t n)
{
    size_t k = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, "\t\r\n", &save); t && k < n; t = strtok_r(NULL, "\t\r\n", &save))
        f[k++] = t;
    return k;
}

/* Read NAME.truth.tsv (one client). 0, or -1 with a message. */
static int load_truth(const char *path, truth *t)
{
    char buf[1024];
    char *f[6];
    FILE *fp = fopen(path, "r");
    memset(t, 0, sizeof *t);
    t->commands = t->tshark_commands = t->cluster_findings = -1;
    t->midstream = t->unanswered = t->orphan_replies = -1;
    for (size_t i = 0; i < N_REDIRECT_KINDS; i++)
        t->redirects[i] = t->tshark_redirects[i] = -1;
    if (!fp) {
        fprintf(stderr, "cannot open '%s'\n", path);
        return -1;
    }
    while (fgets(buf, sizeof buf, fp)) {
        if (buf[0] == '#' || buf[0] == '\n')
            continue;
        size_t n = split_tabs(buf, f, 6);
        if (n >= 3 && strcmp(f[0], "client") == 0) {
            if (t->addr[0]) {
                fprintf(stderr, "%s: more than one client\n", path);
                fclose(fp);
                return -1;
            }
            snprintf(t->addr, sizeof t->addr, "%s", f[1]);
        } else if (n >= 3 && strcmp(f[0], "commands") == 0) {
            t->commands = strtoll(f[2], NULL, 10);
        } else if (n >= 3 && strcmp(f[0], "tshark_commands") == 0) {
            t->tshark_commands = strtoll(f[2], NULL, 10);
        } else if (n >= 4 && (strcmp(f[0], "redirects") == 0 || strcmp(f[0], "tshark_redirects") == 0)) {
            int i = redirect_index(f[2]);
            if (i >= 0)
                (f[0][0] == 't' ? t->tshark_redirects : t->redirects)[i] = strtoll(f[3], NULL, 10);
        } else if (n >= 3 && strcmp(f[0], "kind") == 0 && t->n_kinds < MAX_KINDS) {
            t->kind_count[t->n_kinds] = n >= 4 ? strtoll(f[3], NULL, 10) : -1;
            snprintf(t->kind_slots[t->n_kinds], sizeof t->kind_slots[0], "%s", n >= 5 ? f[4] : "");
            snprintf(t->kinds[t->n_kinds++], NAME_MAX_LEN, "%s", f[2]);
        } else if (n >= 2 && strcmp(f[0], "clean") == 0) {
            t->clean = 1;
        } else if (n >= 2 && strcmp(f[0], "cluster_findings") == 0) {
            t->cluster_findings = strtoll(f[1], NULL, 10);
        } else if (n >= 3 && strcmp(f[0], "midstream") == 0) {
            t->midstream = strtoll(f[2], NULL, 10);
        } else if (n >= 3 && strcmp(f[0], "unanswered") == 0) {
            t->unanswered = strtoll(f[2], NULL, 10);
        } else if (n >= 3 && strcmp(f[0], "orphan_replies") == 0) {
            t->orphan_replies = strtoll(f[2], NULL, 10);
        }
    }
    fclose(fp);
    if (!t->addr[0] || t->commands < 0 || t->tshark_commands < 0 || t->cluster_findings < 0) {
        fprintf(stderr, "%s: client, commands, tshark_commands or cluster_findings missing\n", path);
        return -1;
    }
    return 0;
}

/* Gunzip src into dst. 0, or -1. */
static int gunzip(const char *src, const char *dst)
{
    char buf[65536];
    int n, rc = 0;
    gzFile in = gzopen(src, "rb");
    FILE *out = fopen(dst, "wb");
    if (!in || !out) {
        fprintf(stderr, "cannot open '%s' or '%s'\n", src, dst);
        rc = -1;
    }
    while (rc == 0 && (n = gzread(in, buf, sizeof buf)) > 0)
        if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
            rc = -1;
    if (rc == 0 && n < 0)
        rc = -1;
    if (in)
        gzclose(in);
    if (out && fclose(out) != 0)
        rc = -1;
    return rc;
}

/* Run slotscope analyze CAPTURE --db DB (with --store-commands when
 * commands is set). Its exit code, or -1. */
static int analyze(const char *capture, const char *db, int commands)
{
    th_run r;
    const char *const *args =
        commands ? TH_ARGS("analyze", capture, "--db", db, "--quiet", "--store-commands")
                 : TH_ARGS("analyze", capture, "--db", db, "--quiet");
    if (th_slotscope(args, &r, NULL, NULL, 0) != 0)
        return -1;
    int rc = th_exit_code(&r);
    if (rc != 0)
        fprintf(stderr, "slotscope: %s", r.err);
    th_run_free(&r);
    return rc;
}

/* The truth's index of kind, or -1. */
static int truth_kind(const truth *t, const char *kind)
{
    for (size_t i = 0; i < t->n_kinds; i++)
        if (strcmp(t->kinds[i], kind) == 0)
            return (int)i;
    return -1;
}

/* The truth's own counts against tshark's (a broken fixture, not slotscope). */
static void check_truth_vs_tshark(const truth *t)
{
    if (t->commands != t->tshark_commands)
        check_failed("truth counts %lld requests, tshark %lld", (long long)t->commands,
                     (long long)t->tshark_commands);
    for (size_t i = 0; i < N_REDIRECT_KINDS; i++)
        if (t->redirects[i] != t->tshark_redirects[i])
            check_failed("truth counts %lld %s, tshark %lld", (long long)t->redirects[i],
                         redirect_kinds[i], (long long)t->tshark_redirects[i]);
}

static void check_counts(sqlite3 *db, const truth *t)
{
    int64_t n = th_sql_int_p(db, "SELECT commands FROM clients WHERE name = ?1", t->addr);
    if (n != t->commands)
        check_failed("commands: slotscope %lld, truth %lld", (long long)n, (long long)t->commands);
    for (size_t i = 0; i < N_REDIRECT_KINDS; i++) {
        n = th_sql_int_p(db, "SELECT count(*) FROM redirects WHERE client = ?1 AND kind = ?2",
                         t->addr, redirect_kinds[i]);
        if (n != t->redirects[i])
            check_failed("%s redirects: slotscope %lld, truth %lld", redirect_kinds[i],
                         (long long)n, (long long)t->redirects[i]);
    }
}

/* The slots of a kind's findings for the client, ascending, comma-separated
 * (as truth.py writes them) into out. */
static void finding_slots(sqlite3 *db, const char *addr, const char *kind, char *out, size_t size)
{
    sqlite3_stmt *st;
    size_t k = 0;
    out[0] = 0;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT slot FROM findings WHERE client = ?1 AND kind = ?2 "
                                            "GROUP BY slot ORDER BY slot",
                                        -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, addr, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW && k + 16 < size)
        k += (size_t)snprintf(out + k, size - k, "%s%d", k ? "," : "", sqlite3_column_int(st, 0));
    sqlite3_finalize(st);
}

/* A kind both report: as many occurrences (sum of the findings' counts) on
 * the same slots as the truth. */
static void check_occurrences(sqlite3 *db, const truth *t, const char *kind, int64_t occurrences)
{
    int i = truth_kind(t, kind);
    char slots[512];
    finding_slots(db, t->addr, kind, slots, sizeof slots);
    if (occurrences != t->kind_count[i])
        check_failed("kind %s: slotscope %lld occurrences, truth %lld", kind, (long long)occurrences,
                     (long long)t->kind_count[i]);
    if (strcmp(slots, t->kind_slots[i]) != 0)
        check_failed("kind %s: slotscope's slots %s, truth's %s", kind, slots, t->kind_slots[i]);
}

static void check_kinds(sqlite3 *db, const truth *t)
{
    sqlite3_stmt *st;
    for (size_t i = 0; i < t->n_kinds; i++) {
        int64_t n = th_sql_int_p(db, "SELECT count(*) FROM findings WHERE client = ?1 AND kind = ?2",
                                 t->addr, t->kinds[i]);
        if (n <= 0)
            check_failed("kind %s: required by the truth, not reported", t->kinds[i]);
    }
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT kind, count(*), sum(count), group_concat(DISTINCT slot) "
                                            "FROM findings WHERE client = ?1 GROUP BY kind",
                                        -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, t->addr, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 0);
        if (t->clean)
            check_failed("kind %s reported (%d findings, %lld occurrences, slots %s): the truth says clean",
                         kind, sqlite3_column_int(st, 1), (long long)sqlite3_column_int64(st, 2),
                         (const char *)sqlite3_column_text(st, 3));
        else if (truth_kind(t, kind) < 0)
            check_failed("kind %s reported (%d findings, %lld occurrences, slots %s): not in the truth",
                         kind, sqlite3_column_int(st, 1), (long long)sqlite3_column_int64(st, 2),
                         (const char *)sqlite3_column_text(st, 3));
        else
            check_occurrences(db, t, kind, sqlite3_column_int64(st, 2));
    }
    sqlite3_finalize(st);
    int64_t cluster = th_sql_int(db, "SELECT count(*) FROM findings WHERE client = ''", NULL);
    if (cluster != t->cluster_findings) {
        check_failed("cluster-side findings: slotscope %lld, truth %lld", (long long)cluster,
                     (long long)t->cluster_findings);
        assert_int_equal(sqlite3_prepare_v2(db, "SELECT kind, slot, summary FROM findings WHERE client = ''",
                                            -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW)
            fprintf(stderr, "    cluster-side: %s slot %d: %s\n", (const char *)sqlite3_column_text(st, 0),
                    sqlite3_column_int(st, 1), (const char *)sqlite3_column_text(st, 2));
        sqlite3_finalize(st);
    }
}

/* A capture picked up mid-stream: its connections without a handshake and
 * the pairing, against the truth's. */
static void check_midstream(sqlite3 *db, const truth *t)
{
    if (t->midstream < 0)
        return;
    if (t->unanswered < 0 || t->orphan_replies < 0) {
        check_failed("truth has midstream but no unanswered or orphan_replies");
        return;
    }
    const struct {
        const char *sum, *what;
        int64_t want;
    } sums[] = {
        {"count(*) FILTER (WHERE mid_stream = 1)", "connections picked up mid-stream", t->midstream},
        {"coalesce(sum(unpaired_requests), 0)", "unpaired requests (truth: unanswered)", t->unanswered},
        {"coalesce(sum(unpaired_replies), 0)", "unpaired replies (truth: orphan replies)",
         t->orphan_replies},
    };
    int64_t n;
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++) {
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT %s FROM connections WHERE client = ?1", sums[i].sum);
        n = th_sql_int_p(db, sql, t->addr);
        if (n != sums[i].want)
            check_failed("%s: slotscope %lld, truth %lld", sums[i].what, (long long)n,
                         (long long)sums[i].want);
    }
    n = th_sql_int_p(db, "SELECT coalesce(sum(out_of_sync), 0) FROM connections WHERE client = ?1",
                     t->addr);
    if (t->unanswered == 0 && t->orphan_replies == 0 && n != 0)
        check_failed("%lld connections out of sync, the truth paired every request", (long long)n);
}

static void test_library(void **state)
{
    (void)state;
    char dir[64], path[512], capture[512], dbpath[512];
    truth t;
    sqlite3 *db = NULL;
    snprintf(path, sizeof path, "%s/%s/%s.truth.tsv", SS_FIXTURES, lib_dir, lib_name);
    assert_int_equal(load_truth(path, &t), 0);
    assert_int_equal(th_tmpdir_new("ss_libs", dir, sizeof dir), 0);
    snprintf(path, sizeof path, "%s/%s/%s.pcap.gz", SS_FIXTURES, lib_dir, lib_name);
    snprintf(capture, sizeof capture, "%s", th_path(dir, "capture.pcap"));
    snprintf(dbpath, sizeof dbpath, "%s", th_path(dir, "db"));
    assert_int_equal(gunzip(path, capture), 0);
    assert_int_equal(analyze(capture, dbpath, 0), 0);
    assert_int_equal(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    check_truth_vs_tshark(&t);
    check_counts(db, &t);
    check_kinds(db, &t);
    check_midstream(db, &t);
    sqlite3_close(db);
    assert_int_equal(th_tmpdir_remove(dir), 0);
    if (failures)
        fail_msg("%d check(s) failed for %s (listed above)", failures, lib_name);
}

/* Lines of text that are not comments and not tshark's (truth.py writes
 * those only with --tshark), joined with newlines. */
static char *truth_lines(const char *text)
{
    size_t n = strlen(text), k = 0;
    char *out = malloc(n + 1);
    assert_non_null(out);
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) + 1 : strlen(p);
        if (*p != '#' && strncmp(p, "tshark_", 7) != 0) {
            memcpy(out + k, p, len);
            k += len;
        }
        p += len;
    }
    out[k] = 0;
    return out;
}

/* The committed truth is what truth.py says of the committed capture: the
 * fixture and its verdict cannot drift apart. */
static void test_truth_reproduced(void **state)
{
    (void)state;
    char script[512], pcap[512], events[512], tsv[512];
    th_run r;
    snprintf(script, sizeof script, "%s/scripts/libs/truth.py", SS_SOURCE_DIR);
    snprintf(pcap, sizeof pcap, "%s/%s/%s.pcap.gz", SS_FIXTURES, lib_dir, lib_name);
    snprintf(events, sizeof events, "%s/%s/events.json", SS_FIXTURES, lib_dir);
    snprintf(tsv, sizeof tsv, "%s/%s/%s.truth.tsv", SS_FIXTURES, lib_dir, lib_name);
    assert_int_equal(th_exec("/usr/bin/python3", TH_ARGS(script, pcap, events), &r, NULL, NULL, 0), 0);
    if (th_exit_code(&r) != 0)
        fail_msg("truth.py failed: %s", r.err);
    char *committed = th_slurp(tsv, NULL);
    assert_non_null(committed);
    char *want = truth_lines(committed), *got = truth_lines(r.out);
    assert_string_equal(got, want);
    free(want);
    free(got);
    free(committed);
    th_run_free(&r);
}

/* The line of midcheck's block for this library (after "== ADDR NAME")
 * that starts with prefix, copied into out; 0, or -1 when there is none. */
static int block_line(const char *text, const char *prefix, char *out, size_t size)
{
    char head[NAME_MAX_LEN + 8];
    snprintf(head, sizeof head, " %s\n", lib_name);
    const char *b = NULL;
    for (const char *p = strstr(text, "== "); p; p = strstr(p + 1, "\n== ")) {
        const char *eol = strchr(p + 1, '\n');
        size_t n = strlen(head);
        if (eol && (size_t)(eol + 1 - p) > n && strncmp(eol + 1 - n, head, n) == 0) {
            b = eol + 1;
            break;
        }
    }
    for (const char *p = b; p && *p && strncmp(p, "== ", 3) != 0;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            snprintf(out, size, "%.*s", (int)len, p);
            return 0;
        }
        p += len + (eol != NULL);
    }
    return -1;
}

/* The number after "commands " in line, or -1. */
static long long commands_of(const char *line)
{
    const char *p = strstr(line, "commands ");
    return p ? strtoll(p + 9, NULL, 10) : -1;
}

/* The pairing line committed for this library in pairing.tsv ("NAME\tline"). */
static int committed_pairing(char *out, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/pairing.tsv", SS_FIXTURES, lib_dir);
    char *text = th_slurp(path, NULL);
    if (!text)
        return -1;
    int rc = -1;
    char *save = NULL, *f[2];
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (split_tabs(line, f, 2) == 2 && strcmp(f[0], lib_name) == 0)
            rc = snprintf(out, size, "%s", f[1]) < 0 ? -1 : 0;
    free(text);
    return rc;
}

static void test_pairing(void **state)
{
    (void)state;
    char dir[64], path[512], capture[512], dbpath[512], events[512], script[512];
    char got[1024], want[1024], truth_line[512], ss_line[512];
    th_run r;
    assert_int_equal(th_tmpdir_new("ss_libs", dir, sizeof dir), 0);
    snprintf(path, sizeof path, "%s/%s/%s.pcap.gz", SS_FIXTURES, lib_dir, lib_name);
    snprintf(events, sizeof events, "%s/%s/events.json", SS_FIXTURES, lib_dir);
    snprintf(script, sizeof script, "%s/scripts/libs/midcheck.py", SS_SOURCE_DIR);
    snprintf(capture, sizeof capture, "%s", th_path(dir, "capture.pcap"));
    snprintf(dbpath, sizeof dbpath, "%s", th_path(dir, "db"));
    assert_int_equal(gunzip(path, capture), 0);
    assert_int_equal(analyze(capture, dbpath, 1), 0);
    assert_int_equal(th_exec("/usr/bin/python3", TH_ARGS(script, capture, events, dbpath), &r,
                             NULL, NULL, 0), 0);
    if (th_exit_code(&r) != 0)
        fail_msg("midcheck.py failed: %s", r.err);
    assert_int_equal(block_line(r.out, "pairing: ", got, sizeof got), 0);
    assert_int_equal(block_line(r.out, "truth: ", truth_line, sizeof truth_line), 0);
    assert_int_equal(block_line(r.out, "slotscope: ", ss_line, sizeof ss_line), 0);
    if (strstr(got, "paired_WRONG") || strstr(got, "paired_IMPOSSIBLE") || strstr(r.out, "  WRONG "))
        check_failed("paired wrongly: %s", got);
    if (commands_of(truth_line) < 0 || commands_of(truth_line) != commands_of(ss_line))
        check_failed("commands: %s / %s", truth_line, ss_line);
    assert_int_equal(committed_pairing(want, sizeof want), 0);
    if (strcmp(got, want) != 0)
        check_failed("pairing is now '%s', committed '%s'", got, want);
    th_run_free(&r);
    assert_int_equal(th_tmpdir_remove(dir), 0);
    if (failures)
        fail_msg("%d check(s) failed for %s (listed above)", failures, lib_name);
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: test_libs NAME [DIR] (a fixture in tests/fixtures/DIR, default libs)\n");
        return 2;
    }
    lib_name = argv[1];
    if (argc == 3)
        lib_dir = argv[2];
    if (strcmp(lib_dir, "libs-drops") == 0) {
        const struct CMUnitTest pairing[] = {cmocka_unit_test(test_pairing)};
        return cmocka_run_group_tests_name(lib_name, pairing, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truth_reproduced),
        cmocka_unit_test(test_library),
    };
    return cmocka_run_group_tests_name(lib_name, tests, NULL, NULL);
}
