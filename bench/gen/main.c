/*
 * main.c - ss-gen: options, the run, the ground truth.
 *
 *   ss-gen -o capture.pcap [-t truth.tsv] [options]
 *
 * See gen.h for the model and bench/README.md for the ground-truth format.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"

/* Usage text. */
static void usage(FILE *f)
{
    fputs("usage: ss-gen -o OUT.pcap [-t TRUTH.tsv] [options]\n"
          "  --seed N            PRNG seed (1)\n"
          "  --bytes SIZE        stop at this file size, K/M/G suffixes (64M)\n"
          "  --duration S        or at this much capture time, seconds\n"
          "  --rate MB/s         pace the capture clock to this file rate (0: as fast\n"
          "                      as packets and server times allow)\n"
          "  --clients N         correct clients (50)\n"
          "  --pool N            connections per client per node (2)\n"
          "  --masters N         masters, ports 7000.. (3)\n"
          "  --replicas 0|1      one replica per master, ports after the masters (0)\n"
          "  --depth N           pipeline depth, 1..N per turn (8, at most 32)\n"
          "  --keys N            plain key space key:0.. (100000)\n"
          "  --skew N            popularity: rank = keys * u^N (3)\n"
          "  --max-value SIZE    largest value (4M)\n"
          "  --large-rate P      share of values in [256K, max-value] (0.001)\n"
          "  --mig-slots N       slots migrated from master 0 to 1 (16, at most 256)\n"
          "  --mig-window A:B    run progress of the migration (0.3:0.7)\n"
          "  --mig-share P       share of correct clients' commands aimed at\n"
          "                      migrating and stuck slots (0.02)\n"
          "  --bad KIND=N        N clients misbehaving as KIND (an analysis finding\n"
          "                      kind; all=N for every kind); migration_stuck=N: N\n"
          "                      slots whose migration never ends\n"
          "  --bad-times N       misbehaving operations per bad client (5)\n"
          "  --bad-weight N      turns of a bad client per turn of a good one (4)\n"
          "  --mix NAME=W,...    command weights (GET=45,SET=25,MGET=6,HSET=5,HGET=5,\n"
          "                      INCR=6,EVAL=3,DEL=3,EXPIRE=2)\n"
          "  --no-admin          no resharding admin / MIGRATE traffic\n"
          "  --net 127|10        addresses 127.0.x.y (default) or 10.x.y.z\n"
          "  --link eth|raw      LINKTYPE_ETHERNET (default) or LINKTYPE_RAW\n"
          "  --mss N             TCP segment size (1448; 65483 as on loopback)\n"
          "  --tcp-csum          compute TCP checksums (default 0, as with offload)\n"
          "  --reorder P         per data segment: swapped with the next (0.001)\n"
          "  --retrans P         per data segment: sent again (0.001)\n"
          "  --loss P            per data segment inside a large value on a correct\n"
          "                      client's connection: never written (0)\n"
          "  -q                  no summary on stderr\n",
          f);
}

/* Parse a size with an optional K/M/G suffix (powers of 1024). */
static uint64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    uint64_t mult = 1;
    if (*end == 'k' || *end == 'K')
        mult = 1024, end++;
    else if (*end == 'm' || *end == 'M')
        mult = 1024 * 1024, end++;
    else if (*end == 'g' || *end == 'G')
        mult = 1024ull * 1024 * 1024, end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v < 0)
        die("bad size '%s'", s);
    return (uint64_t)(v * (double)mult);
}

/* Parse a non-negative integer in [lo, hi]. */
static long parse_int(const char *s, long lo, long hi, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < lo || v > hi)
        die("bad %s '%s' (%ld..%ld)", what, s, lo, hi);
    return v;
}

/* Parse a probability. */
static double parse_p(const char *s, const char *what)
{
    char *end;
    double v = strtod(s, &end);
    if (*end || end == s || v < 0 || v > 1)
        die("bad %s '%s' (0..1)", what, s);
    return v;
}

/* --bad KIND=N */
static void parse_bad(gen_opts *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq)
        die("bad --bad '%s' (KIND=N)", arg);
    size_t klen = (size_t)(eq - arg);
    int n = (int)parse_int(eq + 1, 0, 1000, "--bad count");
    if (klen == 3 && memcmp(arg, "all", 3) == 0) {
        for (int k = 0; k < K_KINDS; k++)
            o->bad[k] = n;
        return;
    }
    for (int k = 0; k < K_KINDS; k++) {
        if (strlen(gen_kind_names[k]) == klen && memcmp(arg, gen_kind_names[k], klen) == 0) {
            o->bad[k] = n;
            return;
        }
    }
    die("unknown finding kind in '%s'", arg);
}

/* --mix NAME=W,NAME=W,... (names not given keep weight 0). */
static void parse_mix(gen_opts *o, const char *arg)
{
    memset(o->weights, 0, sizeof o->weights);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            die("bad --mix item '%s'", tok);
        *eq = 0;
        int t;
        for (t = 0; t < C_MIX; t++)
            if (strcmp(tok, gen_cmd_names[t]) == 0)
                break;
        if (t == C_MIX)
            die("unknown command '%s' in --mix", tok);
        o->weights[t] = (uint32_t)parse_int(eq + 1, 0, 1000000, "--mix weight");
    }
}

/* Defaults, then the command line. Returns the output paths. */
static void parse_args(int argc, char **argv, gen_opts *o, const char **out, const char **truth,
                       int *quiet)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->bytes = 64ull << 20;
    o->clients = 50;
    o->pool = 2;
    o->masters = 3;
    o->depth = 8;
    o->keys = 100000;
    o->skew = 3;
    o->max_value = 4u << 20;
    o->large_rate = 0.001;
    o->mig_share = 0.02;
    o->mig_slots = 16;
    o->mig_begin = 0.3;
    o->mig_end = 0.7;
    o->bad_times = 5;
    o->bad_weight = 4;
    o->admin = 1;
    o->linktype = GEN_LINK_ETHERNET;
    o->mss = 1448;
    o->p_reorder = 0.001;
    o->p_retrans = 0.001;
    parse_mix(o, "GET=45,SET=25,MGET=6,HSET=5,HGET=5,INCR=6,EVAL=3,DEL=3,EXPIRE=2");
    *out = *truth = NULL;
    *quiet = 0;
    int duration_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && (v || (die("%s needs a value", name), 0)) && ++i)
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "-q") == 0) {
            *quiet = 1;
        } else if (strcmp(a, "--no-admin") == 0) {
            o->admin = 0;
        } else if (strcmp(a, "--tcp-csum") == 0) {
            o->tcp_csum = 1;
        } else if (OPT("-o")) {
            *out = v;
        } else if (OPT("-t")) {
            *truth = v;
        } else if (OPT("--seed")) {
            o->seed = strtoull(v, NULL, 10);
        } else if (OPT("--bytes")) {
            o->bytes = parse_size(v);
        } else if (OPT("--duration")) {
            o->duration_s = strtod(v, NULL);
            duration_given = 1;
        } else if (OPT("--rate")) {
            o->rate_mbps = strtod(v, NULL);
        } else if (OPT("--clients")) {
            o->clients = (int)parse_int(v, 0, 60000, "--clients");
        } else if (OPT("--pool")) {
            o->pool = (int)parse_int(v, 1, 64, "--pool");
        } else if (OPT("--masters")) {
            o->masters = (int)parse_int(v, 1, GEN_MAX_MASTERS, "--masters");
        } else if (OPT("--replicas")) {
            o->replicas = (int)parse_int(v, 0, 1, "--replicas");
        } else if (OPT("--depth")) {
            o->depth = (int)parse_int(v, 1, 32, "--depth");
        } else if (OPT("--keys")) {
            o->keys = (uint32_t)parse_int(v, 1, 100000000, "--keys");
        } else if (OPT("--skew")) {
            o->skew = (double)parse_int(v, 1, 8, "--skew");
        } else if (OPT("--max-value")) {
            uint64_t mv = parse_size(v);
            if (mv < 16 || mv > (512u << 20))
                die("--max-value must be 16..512M");
            o->max_value = (uint32_t)mv;
        } else if (OPT("--large-rate")) {
            o->large_rate = parse_p(v, "--large-rate");
        } else if (OPT("--mig-slots")) {
            o->mig_slots = (int)parse_int(v, 0, GEN_MAX_RANGE, "--mig-slots");
        } else if (OPT("--mig-window")) {
            if (sscanf(v, "%lf:%lf", &o->mig_begin, &o->mig_end) != 2 || o->mig_begin < 0 ||
                o->mig_end > 1 || o->mig_begin >= o->mig_end)
                die("bad --mig-window '%s' (A:B, 0 <= A < B <= 1)", v);
        } else if (OPT("--mig-share")) {
            o->mig_share = parse_p(v, "--mig-share");
        } else if (OPT("--bad")) {
            parse_bad(o, v);
        } else if (OPT("--bad-times")) {
            o->bad_times = (int)parse_int(v, 1, 100000, "--bad-times");
        } else if (OPT("--bad-weight")) {
            o->bad_weight = (int)parse_int(v, 1, 1000, "--bad-weight");
        } else if (OPT("--mix")) {
            parse_mix(o, v);
        } else if (OPT("--net")) {
            o->net10 = strcmp(v, "10") == 0;
            if (!o->net10 && strcmp(v, "127") != 0)
                die("--net is 127 or 10");
        } else if (OPT("--link")) {
            o->linktype = strcmp(v, "raw") == 0 ? GEN_LINK_RAW : GEN_LINK_ETHERNET;
            if (o->linktype == GEN_LINK_ETHERNET && strcmp(v, "eth") != 0)
                die("--link is eth or raw");
        } else if (OPT("--mss")) {
            o->mss = (uint32_t)parse_int(v, 64, 65495, "--mss");
        } else if (OPT("--reorder")) {
            o->p_reorder = parse_p(v, "--reorder");
        } else if (OPT("--retrans")) {
            o->p_retrans = parse_p(v, "--retrans");
        } else if (OPT("--loss")) {
            o->p_loss = parse_p(v, "--loss");
        } else {
            usage(stderr);
            die("unknown option '%s'", a);
        }
#undef OPT
    }
    if (duration_given && o->bytes == 64ull << 20)
        o->bytes = 0;        /* --duration alone: no byte target */
    if (!*out)
        die("-o OUT.pcap is required (-h for help)");
    if (!o->bytes && o->duration_s <= 0)
        die("give --bytes or --duration");
}

/* Dotted IPv4 text. */
static void ip_text(uint32_t ip, char *buf, size_t size)
{
    snprintf(buf, size, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

/* Order of truth rows: kind, client, slot. */
static int row_cmp(const void *a, const void *b)
{
    const gen_truth_row *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->client_ip != y->client_ip)
        return x->client_ip < y->client_ip ? -1 : 1;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

/* The ground truth as TSV: one record per line, its type first. */
static void write_truth(const char *path, int argc, char **argv, const gen_opts *o,
                        const cluster *cl, const wire *w, gen_truth *t)
{
    FILE *f = fopen(path, "w");
    if (!f)
        die("cannot create '%s'", path);
    fputs("# ss-gen ground truth:", f);
    for (int i = 1; i < argc; i++)
        fprintf(f, " %s", argv[i]);
    fputs("\n# finding\tclient\tkind\tslot\tcount\tnode   (client '' = cluster side,"
          " slot -1 = several, node '' = several)\n",
          f);
    qsort(t->rows, t->n_rows, sizeof *t->rows, row_cmp);
    for (size_t i = 0; i < t->n_rows; i++) {
        const gen_truth_row *r = &t->rows[i];
        char ip[20] = "";
        if (r->client_ip)
            ip_text(r->client_ip, ip, sizeof ip);
        fprintf(f, "finding\t%s\t%s\t%d\t%llu\t%s\n", ip, gen_kind_names[r->kind], r->slot,
                (unsigned long long)r->count, r->node >= 0 ? cl->nodes[r->node].addr : "");
    }
    static const char *const redirect_names[O_KINDS] = {"", "MOVED", "ASK", "TRYAGAIN",
                                                        "CROSSSLOT"};
    uint64_t redirects = 0;
    for (int k = O_MOVED; k < O_KINDS; k++) {
        fprintf(f, "redirect\t%s\t%llu\n", redirect_names[k], (unsigned long long)t->redirects[k]);
        redirects += t->redirects[k];
    }
    uint64_t commands = 0;
    for (int c = 0; c < C_NAMES; c++) {
        if (t->commands[c])
            fprintf(f, "command\t%s\t%llu\n", gen_cmd_names[c], (unsigned long long)t->commands[c]);
        commands += t->commands[c];
    }
    for (int i = 0; i < cl->mig_count; i++)
        fprintf(f, "migration\t%d\t%s\t%s\t%d\n", cl->mig_first + i, cl->nodes[cl->mig_src].addr,
                cl->nodes[cl->mig_dst].addr, i < cl->flipped);
    for (int i = 0; i < cl->stuck_count; i++)
        fprintf(f, "migration\t%d\t%s\t%s\t0\n", cl->stuck_first + i,
                cl->nodes[cl->stuck_src].addr, cl->nodes[cl->stuck_dst].addr);
    /* counters, named as in the database's counters table */
#define COUNTER(name, v) fprintf(f, "counter\t%s\t%llu\n", name, (unsigned long long)(v))
    COUNTER("packets", w->st.packets);
    COUNTER("connections", w->st.connections);
    COUNTER("commands", commands);
    COUNTER("redirects", redirects);
    COUNTER("moved", t->redirects[O_MOVED]);
    COUNTER("ask", t->redirects[O_ASK]);
    COUNTER("tryagain", t->redirects[O_TRYAGAIN]);
    COUNTER("crossslot", t->redirects[O_CROSSSLOT]);
    COUNTER("gaps", w->st.lost);
    COUNTER("gap_bytes", w->st.lost_bytes);
    COUNTER("retransmitted", w->st.retransmitted);
    COUNTER("reordered", w->st.reordered);
    COUNTER("stream_bytes_to_server", w->st.payload_bytes[0]);
    COUNTER("stream_bytes_to_client", w->st.payload_bytes[1]);
#undef COUNTER
    fprintf(f, "meta\tseed\t%llu\n", (unsigned long long)o->seed);
    fprintf(f, "meta\tbad_short\t%llu\n", (unsigned long long)t->bad_short);
    fprintf(f, "meta\tturns\t%llu\n", (unsigned long long)t->turns);
    if (fclose(f) != 0)
        die("cannot write '%s'", path);
}

int main(int argc, char **argv)
{
    gen_opts o;
    const char *out, *truth_path;
    int quiet;
    parse_args(argc, argv, &o, &out, &truth_path, &quiet);

    cluster cl;
    cluster_init(&cl, o.masters, o.replicas, o.net10, o.seed);
    if (o.masters >= 2 && o.mig_slots > 0) {
        /* a range in the middle of master 0's slots moves to master 1 */
        cl.mig_src = 0;
        cl.mig_dst = 1;
        cl.mig_first = 1000;
        cl.mig_count = o.mig_slots;
        cl.mig_begin = o.mig_begin;
        cl.mig_end = o.mig_end;
        for (int i = 0; i < cl.mig_count; i++)
            cl.special[cl.mig_first + i] = 1;
    }
    if (o.masters >= 2 && o.bad[K_MIGRATION_STUCK] > 0) {
        /* stuck slots move from the last master to master 0 */
        cl.stuck_src = o.masters - 1;
        cl.stuck_dst = 0;
        cl.stuck_first = GEN_SLOTS * (o.masters - 1) / o.masters + 1000;
        cl.stuck_count = o.bad[K_MIGRATION_STUCK] > 64 ? 64 : o.bad[K_MIGRATION_STUCK];
        if (cl.mig_count == 0)
            cl.mig_begin = o.mig_begin;
        for (int i = 0; i < cl.stuck_count; i++)
            cl.special[cl.stuck_first + i] = 2;
    }

    FILE *f = fopen(out, "wb");
    if (!f)
        die("cannot create '%s'", out);
    static wire w;
    wire_init(&w, f, o.linktype, o.mss, o.seed);
    w.tcp_csum = o.tcp_csum;
    w.p_reorder = o.p_reorder;
    w.p_retrans = o.p_retrans;
    w.p_loss = o.p_loss;

    gen_truth t;
    memset(&t, 0, sizeof t);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    traffic_run(&o, &w, &cl, &t);
    if (fclose(f) != 0)
        die("cannot write '%s'", out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

    if (truth_path)
        write_truth(truth_path, argc, argv, &o, &cl, &w, &t);
    if (!quiet)
        fprintf(stderr,
                "ss-gen: %s: %.1f MB, %llu packets, %llu connections, %llu operations, "
                "capture time %.2f s; generated in %.2f s (%.0f MB/s)%s\n",
                out, (double)w.file_bytes / 1e6, (unsigned long long)w.st.packets,
                (unsigned long long)w.st.connections, (unsigned long long)t.operations,
                (double)(w.now_us - 1700000000ll * 1000000ll) / 1e6, secs,
                (double)w.file_bytes / 1e6 / (secs > 0 ? secs : 1e-9),
                t.bad_short ? " (warning: some bad clients had too few chances)" : "");
    free(t.rows);
    gbuf_free(&cl.slots_reply);
    free(w.out);
    return t.bad_short ? 3 : 0;
}
