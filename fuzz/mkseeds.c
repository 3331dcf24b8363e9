/*
 * mkseeds.c - turn fixture captures into seed inputs for every fuzz target.
 *
 *   fuzz_mkseeds OUTDIR FIXTURE...
 *
 * Each fixture is read through the real pipeline (cap_open_files, the tracker,
 * resp/) and cut into small seeds:
 *   OUTDIR/fuzz_pcap/NAME.pcap and OUTDIR/fuzz_pcapfile/NAME.pcap
 *        the first MAX_RECORDS records, as a classic pcap file
 *   OUTDIR/fuzz_resp/NAME-cID
 *        each connection's first bytes in both directions, in fuzz_resp's
 *        layout (see fuzz_resp.c), for the first MAX_CONNS connections
 *   OUTDIR/fuzz_cluster_replies/NAME-N
 *        every distinct CLUSTER SLOTS / SHARDS / NODES reply kept by resp/
 *   OUTDIR/fuzz_redirect/NAME-CLASS-N
 *        the text of distinct error replies (MOVED, ASK, TRYAGAIN, ...)
 * Seeds stay small (a few KiB) so that the corpora in the repository do too.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capture/capture.h"
#include "resp/resp.h"

#define MAX_RECORDS 300       /* records per pcap seed */
#define MAX_CONNS 24          /* connections per fixture turned into fuzz_resp seeds */
#define STREAM_KEEP 4096      /* bytes kept per direction per connection */
#define MAX_REPLY_SEEDS 16    /* cluster reply seeds per fixture */
#define MAX_ERROR_SEEDS 32    /* error text seeds per fixture */

/* The bytes kept of one connection. */
typedef struct conn_seed {
    uint64_t id;
    size_t len[2];
    uint8_t buf[2][STREAM_KEEP];
} conn_seed;

/* Everything collected from one fixture. */
typedef struct seeder {
    const char *outdir;
    const char *name;               /* fixture basename */
    resp_pipeline *rp;
    conn_seed conns[MAX_CONNS];
    size_t n_conns;
    uint32_t reply_hash[MAX_REPLY_SEEDS];
    size_t n_replies;
    uint32_t error_hash[MAX_ERROR_SEEDS];
    size_t n_errors;
} seeder;

/* FNV-1a, to tell seeds apart. */
static uint32_t fnv(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

/* Write a seed file OUTDIR/target/name; complain but go on when it fails. */
static void write_seed(const seeder *s, const char *target, const char *name,
                       const void *a, size_t an, const void *b, size_t bn)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", s->outdir, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", s->outdir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write '%s': %s\n", path, strerror(errno));
        return;
    }
    fwrite(a, 1, an, f);
    if (bn)
        fwrite(b, 1, bn, f);
    fclose(f);
}

/* Copy text into out as a file-name-safe word (letters and digits). */
static void safe_word(char *out, size_t size, const char *text)
{
    size_t n = 0;
    for (; *text && n + 1 < size && n < 16; text++)
        if ((*text >= 'a' && *text <= 'z') || (*text >= 'A' && *text <= 'Z') ||
            (*text >= '0' && *text <= '9'))
            out[n++] = *text;
    out[n] = '\0';
}

/* Remember 1 if h is new in set (and add it), 0 if seen or the set is full. */
static int remember(uint32_t *set, size_t *n, size_t cap, uint32_t h)
{
    for (size_t i = 0; i < *n; i++)
        if (set[i] == h)
            return 0;
    if (*n >= cap)
        return 0;
    set[(*n)++] = h;
    return 1;
}

/* resp sink: keep kept raw replies and error texts. */
static void on_command(void *ctx, const resp_command *cmd)
{
    seeder *s = ctx;
    char name[256];
    if (cmd->outcome != RESP_OK)
        return;
    const resp_reply *r = &cmd->reply;
    if (r->raw && r->raw_len > 0 && r->raw_len <= 16384 &&
        remember(s->reply_hash, &s->n_replies, MAX_REPLY_SEEDS, fnv(r->raw, r->raw_len))) {
        char word[20];
        safe_word(word, sizeof word, cmd->req.args[0]);
        snprintf(name, sizeof name, "%s-%s-%zu", s->name, word, s->n_replies);
        write_seed(s, "fuzz_cluster_replies", name, r->raw, r->raw_len, NULL, 0);
    }
    if (r->err != RESP_ERR_NONE) {
        size_t n = strlen(r->errtext);
        if (remember(s->error_hash, &s->n_errors, MAX_ERROR_SEEDS, fnv(r->errtext, n))) {
            snprintf(name, sizeof name, "%s-%s-%zu", s->name, resp_err_name(r->err), s->n_errors);
            write_seed(s, "fuzz_redirect", name, r->errtext, n, NULL, 0);
        }
    }
}

/* The slot for connection id, or NULL once MAX_CONNS are taken. */
static conn_seed *conn_slot(seeder *s, uint64_t id)
{
    for (size_t i = 0; i < s->n_conns; i++)
        if (s->conns[i].id == id)
            return &s->conns[i];
    if (s->n_conns >= MAX_CONNS)
        return NULL;
    conn_seed *c = &s->conns[s->n_conns++];
    c->id = id;
    return c;
}

/* Tracker callback: keep each connection's first bytes, feed resp/. */
static void on_event(void *ctx, const cap_event *ev)
{
    seeder *s = ctx;
    if (ev->kind == CAP_EV_DATA) {
        conn_seed *c = conn_slot(s, ev->conn->id);
        if (c) {
            size_t room = STREAM_KEEP - c->len[ev->dir];
            size_t n = ev->len < room ? ev->len : room;
            memcpy(c->buf[ev->dir] + c->len[ev->dir], ev->data, n);
            c->len[ev->dir] += n;
        }
    }
    resp_on_capture_event(s->rp, ev);
}

/* Write one fuzz_resp seed per connection kept. */
static void write_conn_seeds(seeder *s)
{
    for (size_t i = 0; i < s->n_conns; i++) {
        conn_seed *c = &s->conns[i];
        if (c->len[0] == 0 && c->len[1] == 0)
            continue;
        uint8_t *seed = malloc(7 + c->len[0] + c->len[1]);
        if (!seed)
            return;
        seed[0] = 0x40 | (uint8_t)(i & 0x3f);  /* chunks of 1..64 bytes, varied flags */
        seed[1] = (uint8_t)(c->len[0] & 0xff);
        seed[2] = (uint8_t)(c->len[0] >> 8);
        seed[3] = (uint8_t)c->id;
        seed[4] = seed[5] = seed[6] = 0;
        memcpy(seed + 7, c->buf[0], c->len[0]);
        memcpy(seed + 7 + c->len[0], c->buf[1], c->len[1]);
        char name[256];
        snprintf(name, sizeof name, "%s-c%llu", s->name, (unsigned long long)c->id);
        write_seed(s, "fuzz_resp", name, seed, 7 + c->len[0] + c->len[1], NULL, 0);
        free(seed);
    }
}

/* Copy the first MAX_RECORDS records of path to the two pcap seed folders. */
static int write_pcap_seed(const seeder *s, const char *path)
{
    char err[256];
    cap_source *src = cap_open_files(&path, 1, err, sizeof err);
    if (!src) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    cap_record rec;
    pcap_t *dead = NULL;
    pcap_dumper_t *out[2] = {NULL, NULL};
    const char *targets[2] = {"fuzz_pcap", "fuzz_pcapfile"};
    for (int n = 0; n < MAX_RECORDS && cap_source_next(src, &rec, err, sizeof err) == 1; n++) {
        if (!dead) {
            dead = pcap_open_dead(rec.linktype, 262144);
            for (int i = 0; i < 2 && dead; i++) {
                char p[1024];
                snprintf(p, sizeof p, "%s/%s", s->outdir, targets[i]);
                mkdir(p, 0755);
                snprintf(p, sizeof p, "%s/%s/%s.pcap", s->outdir, targets[i], s->name);
                out[i] = pcap_dump_open(dead, p);
            }
        }
        struct pcap_pkthdr h;
        h.ts.tv_sec = rec.ts_us / 1000000;
        h.ts.tv_usec = rec.ts_us % 1000000;
        h.caplen = rec.caplen;
        h.len = rec.wirelen;
        for (int i = 0; i < 2; i++)
            if (out[i])
                pcap_dump((u_char *)out[i], &h, rec.data);
    }
    for (int i = 0; i < 2; i++)
        if (out[i])
            pcap_dump_close(out[i]);
    if (dead)
        pcap_close(dead);
    cap_source_free(src);
    return 0;
}

/* All seeds of one fixture. */
static int seed_fixture(const char *outdir, const char *path)
{
    seeder *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    s->outdir = outdir;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    /* the stem: "reshard.pcapng" -> "reshard" */
    char stem[128];
    snprintf(stem, sizeof stem, "%s", base);
    char *dot = strchr(stem, '.');
    if (dot && dot != stem)
        *dot = '\0';
    s->name = stem;

    resp_config rcfg;
    resp_config_defaults(&rcfg);
    resp_sink sink = {.ctx = s, .command = on_command};
    s->rp = resp_new(&rcfg, &sink);
    cap_config ccfg;
    cap_config_defaults(&ccfg);
    ccfg.max_connections = 4096;
    ccfg.shape = resp_shape;
    cap_tracker *t = cap_tracker_new(&ccfg, on_event, s);
    char err[256];
    cap_source *src = cap_open_files(&path, 1, err, sizeof err);
    int rc = -1;
    if (s->rp && t && src) {
        cap_source_run(src, t, err, sizeof err);
        cap_tracker_finish(t, 0);
        write_conn_seeds(s);
        rc = write_pcap_seed(s, path);
    } else if (!src) {
        fprintf(stderr, "%s\n", err);
    }
    cap_source_free(src);
    cap_tracker_free(t);
    resp_free(s->rp);
    free(s);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fuzz_mkseeds OUTDIR FIXTURE...\n");
        return 2;
    }
    mkdir(argv[1], 0755);
    int rc = 0;
    for (int i = 2; i < argc; i++)
        if (seed_fixture(argv[1], argv[i]) != 0)
            rc = 1;
    return rc;
}
