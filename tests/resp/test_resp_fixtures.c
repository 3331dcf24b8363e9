/*
 * test_resp_fixtures.c - real captures through capture/ and resp/, checked
 * against what other tools say about the same bytes.
 *
 * Each tests/fixtures/resp/X.pcap (made by scripts/capture-standalone.sh from
 * a real redis-server) and each tests/fixtures/resp/corpus/X.pcap (public
 * captures, see corpus/README) has an X.expected file:
 *
 *   port P            the server port (capture/ is told it is a server port)
 *   requests NAME N   requests named NAME on the wire, from tshark's RESP
 *                     dissector: we must decode exactly N requests of that
 *                     name, whatever their outcome
 *   executed NAME N   calls + rejected_calls in the server's INFO
 *                     commandstats: we must pair exactly N commands of that
 *                     name with a reply, or know they get none by design
 *                     (RESP_OK or RESP_NO_REPLY)
 *   paired NAME N     commands paired with a reply (from a reference
 *                     decoder's log, e.g. spicy-redis's redis.log)
 *   clean             no protocol error, no unpaired reply or request, never
 *                     out of sync (a well-behaved client and server, whole
 *                     capture)
 *   total_requests N  requests of every name together
 *   secret WORD       WORD (a password sent in the capture) appears in no
 *                     emitted command, byte for byte
 *
 * Run with SS_RESP_DUMP=1 to print what was decoded per name (mismatches are
 * then printed but do not fail).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "capture/capture.h"
#include "resp/resp.h"

#define MAX_NAMES 256

/* Per command name: what resp/ emitted. */
typedef struct tally {
    char name[RESP_NAME_MAX];
    uint64_t requests;   /* any outcome */
    uint64_t executed;   /* RESP_OK or RESP_NO_REPLY */
    uint64_t paired;     /* RESP_OK */
} tally;

#define MAX_SECRETS 8

typedef struct run {
    tally t[MAX_NAMES];
    size_t n;
    uint64_t total;
    const char *secrets[MAX_SECRETS]; /* words that must never be kept */
    size_t nsecrets;
    uint64_t leaks[MAX_SECRETS];      /* commands that held each */
} run;

/* Does the byte string needle occur in p[0..n)? */
static int contains(const void *p, size_t n, const char *needle)
{
    size_t nl = strlen(needle);
    const uint8_t *b = p;
    for (size_t i = 0; nl && i + nl <= n; i++)
        if (memcmp(b + i, needle, nl) == 0)
            return 1;
    return 0;
}

/* The tally for a name (created on first use). */
static tally *tally_of(run *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->t[i].name, name) == 0)
            return &r->t[i];
    assert_true(r->n < MAX_NAMES);
    tally *t = &r->t[r->n++];
    memset(t, 0, sizeof(*t));
    size_t len = strnlen(name, sizeof t->name - 1); /* longer names are cut */
    memcpy(t->name, name, len);
    t->name[len] = '\0';
    return t;
}

static void on_command(void *ctx, const resp_command *c)
{
    run *r = ctx;
    tally *t = tally_of(r, c->req.name[0] ? c->req.name : "?");
    t->requests++;
    r->total++;
    if (c->outcome == RESP_OK || c->outcome == RESP_NO_REPLY)
        t->executed++;
    if (c->outcome == RESP_OK)
        t->paired++;
    for (size_t i = 0; i < r->nsecrets; i++)
        if (contains(c, sizeof(*c), r->secrets[i]) ||
            (c->reply.raw && contains(c->reply.raw, c->reply.raw_len, r->secrets[i])))
            r->leaks[i]++;
}

/* Run one capture file through capture/ + resp/. */
static void run_file(const char *path, uint16_t port, run *r, resp_stats *st)
{
    char err[512];
    const char *paths[1] = {path};
    cap_source *src = cap_open_files(paths, 1, err, sizeof err);
    if (src == NULL)
        fail_msg("%s", err);
    cap_config ccfg;
    cap_config_defaults(&ccfg);
    if (port != 0) {
        ccfg.server_ports[0] = port;
        ccfg.n_server_ports = 1;
    }
    ccfg.shape = resp_shape;
    resp_config rcfg;
    resp_config_defaults(&rcfg);
    resp_sink sink = {.ctx = r, .command = on_command};
    resp_pipeline *rp = resp_new(&rcfg, &sink);
    cap_tracker *t = cap_tracker_new(&ccfg, resp_on_capture_event, rp);
    assert_non_null(rp);
    assert_non_null(t);
    if (cap_source_run(src, t, err, sizeof err) < 0)
        fail_msg("%s: %s", path, err);
    cap_tracker_finish(t, 0);
    *st = *resp_get_stats(rp);
    cap_tracker_free(t);
    resp_free(rp);
    cap_source_free(src);
}

/* X.pcap or X.pcapng -> X.expected */
static void expected_path(const char *pcap, char *out, size_t size)
{
    const char *dot = strrchr(pcap, '.');
    size_t stem = dot ? (size_t)(dot - pcap) : strlen(pcap);
    snprintf(out, size, "%.*s.expected", (int)stem, pcap);
}

/* Is this a capture file name? */
static int is_capture(const char *name)
{
    size_t l = strlen(name);
    return (l > 5 && strcmp(name + l - 5, ".pcap") == 0) ||
           (l > 7 && strcmp(name + l - 7, ".pcapng") == 0);
}

/* Check one fixture against its .expected file. Returns the checks made. */
static int check_fixture(const char *pcap)
{
    char exp[1024];
    expected_path(pcap, exp, sizeof exp);
    FILE *f = fopen(exp, "r");
    if (f == NULL)
        fail_msg("no %s for %s", exp, pcap);
    /* first pass: the port and the secrets */
    char line[512];
    unsigned port = 0;
    static run r;
    static char secrets[MAX_SECRETS][64];
    memset(&r, 0, sizeof r);
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "port %u", &port) == 1)
            continue;
        if (r.nsecrets < MAX_SECRETS && sscanf(line, "secret %63s", secrets[r.nsecrets]) == 1) {
            r.secrets[r.nsecrets] = secrets[r.nsecrets];
            r.nsecrets++;
        }
    }
    resp_stats st;
    run_file(pcap, (uint16_t)port, &r, &st);
    if (getenv("SS_RESP_DUMP")) {
        printf("%s: %llu requests, %llu paired, %llu unpaired req, %llu unpaired rep, "
               "%llu pushes, %llu perr, %llu resyncs, %llu skipped, %u oos\n",
               pcap, (unsigned long long)st.total.requests, (unsigned long long)st.total.paired,
               (unsigned long long)st.total.unpaired_requests,
               (unsigned long long)st.total.unpaired_replies,
               (unsigned long long)st.total.pushes,
               (unsigned long long)st.total.protocol_errors,
               (unsigned long long)st.total.resyncs, (unsigned long long)st.total.skipped_bytes,
               st.total.out_of_sync);
        for (size_t i = 0; i < r.n; i++)
            printf("  %-16s requests %llu executed %llu paired %llu\n", r.t[i].name,
                   (unsigned long long)r.t[i].requests, (unsigned long long)r.t[i].executed,
                   (unsigned long long)r.t[i].paired);
    }
    rewind(f);
    int checks = 0, failures = 0;
    char name[RESP_NAME_MAX + 8];
    unsigned long long n;
    while (fgets(line, sizeof line, f)) {
        tally *t = NULL;
        uint64_t got = 0;
        const char *what = NULL;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "requests %39s %llu", name, &n) == 2) {
            t = tally_of(&r, name);
            got = t->requests;
            what = "requests";
        } else if (sscanf(line, "executed %39s %llu", name, &n) == 2) {
            t = tally_of(&r, name);
            got = t->executed;
            what = "executed";
        } else if (sscanf(line, "all_paired %llu", &n) == 1) {
            got = st.total.paired;
            what = "all_paired";
            snprintf(name, sizeof name, "*");
        } else if (sscanf(line, "paired %39s %llu", name, &n) == 2) {
            t = tally_of(&r, name);
            got = t->paired;
            what = "paired";
        } else if (sscanf(line, "unpaired_replies %llu", &n) == 1) {
            got = st.total.unpaired_replies;
            what = "unpaired_replies";
            snprintf(name, sizeof name, "*");
        } else if (sscanf(line, "unpaired_requests %llu", &n) == 1) {
            got = st.total.unpaired_requests;
            what = "unpaired_requests";
            snprintf(name, sizeof name, "*");
        } else if (sscanf(line, "protocol_errors %llu", &n) == 1) {
            got = st.total.protocol_errors;
            what = "protocol_errors";
            snprintf(name, sizeof name, "*");
        } else if (sscanf(line, "total_requests %llu", &n) == 1) {
            got = r.total;
            what = "total_requests";
            snprintf(name, sizeof name, "*");
        } else if (sscanf(line, "secret %39s", name) == 1) {
            checks++;
            for (size_t i = 0; i < r.nsecrets; i++) {
                if (strcmp(r.secrets[i], name) == 0 && r.leaks[i]) {
                    printf("%s: %llu commands kept '%s'\n", pcap,
                           (unsigned long long)r.leaks[i], name);
                    failures++;
                }
            }
            continue;
        } else if (strncmp(line, "clean", 5) == 0) {
            checks++;
            if (st.total.protocol_errors || st.total.unpaired_replies ||
                st.total.unpaired_requests || st.total.out_of_sync) {
                printf("%s: not clean: %llu protocol errors, %llu unpaired replies, "
                       "%llu unpaired requests, %u out of sync\n", pcap,
                       (unsigned long long)st.total.protocol_errors,
                       (unsigned long long)st.total.unpaired_replies,
                       (unsigned long long)st.total.unpaired_requests, st.total.out_of_sync);
                failures++;
            }
            continue;
        } else {
            continue;
        }
        checks++;
        if (got != n) {
            printf("%s: %s %s: decoded %llu, expected %llu\n", pcap, what, name,
                   (unsigned long long)got, n);
            failures++;
        }
    }
    fclose(f);
    if (failures && !getenv("SS_RESP_DUMP"))
        fail_msg("%s: %d of %d checks failed", pcap, failures, checks);
    return checks;
}

/* Check every .pcap/.pcapng in a directory that has an .expected file. */
static int check_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        fail_msg("cannot open %s", dir);
    struct dirent *e;
    char *names[256];
    size_t n = 0;
    while ((e = readdir(d)) != NULL && n < 256) {
        if (is_capture(e->d_name))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    int fixtures = 0;
    for (size_t i = 0; i < n; i++) {
        char path[1024], exp[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        expected_path(path, exp, sizeof exp);
        FILE *f = fopen(exp, "r");
        if (f != NULL) {
            fclose(f);
            int checks = check_fixture(path);
            if (!getenv("SS_RESP_DUMP"))
                assert_true(checks > 0);
            fixtures++;
        }
        free(names[i]);
    }
    return fixtures;
}

/* Captures of a real redis-server (scripts/capture-standalone.sh). */
static void test_standalone_captures(void **state)
{
    (void)state;
    int n = check_dir(SS_FIXTURES "/resp");
    /* txmodes.pcap: CLIENT REPLY and HELLO inside MULTI; unbalanced-quotes.pcap:
     * inline lines the server rejects whole */
    assert_int_equal(n, 9);
}

/* Public captures (tcpdump's and spicy-redis's test traces). */
static void test_public_corpus(void **state)
{
    (void)state;
    int n = check_dir(SS_FIXTURES "/resp/corpus");
    assert_true(n >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standalone_captures),
        cmocka_unit_test(test_public_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
