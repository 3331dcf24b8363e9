/*
 * verdict.c - the CI verdict: which findings fail a run (--fail-on-findings,
 * --fail-on, --ignore), and whether the capture can support a verdict at all.
 *
 * A capture that shows nothing is not a pass: with no RESP paired, one
 * direction only, TLS, only cluster bus traffic, no sign of a cluster, most
 * connections out of sync, redirects still pending or the end of the capture
 * missing, "no findings" means nothing. verdict_diagnose says so in one line
 * (what is wrong, how to capture right), read from the report's counters,
 * inputs and migrations, so `analyze` and `report DB` say the same; under
 * --fail-on-findings the exit code is then EXIT_INCONCLUSIVE (4).
 *
 * Kinds are errors or warnings by an_finding_severity (analysis/config.c),
 * the one table of it (README, docs/cli.md).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* An open migration whose last ASK came this close to the end of the
 * capture was most likely still going on when the capture lost its end. */
#define CUT_SHORT_ASK_US 500000

/* The kinds of one class: error, or warning and error. */
static uint32_t class_mask(an_severity at_least)
{
    uint32_t m = 0;
    for (int k = 0; k < AN_FINDING_KINDS; k++)
        if (an_finding_severity((an_finding_kind)k) >= at_least)
            m |= 1u << k;
    return m;
}

/* Parse "error", "warning" or kind names, comma separated, into *mask
 * (classes allowed only when classes is set). 0, or -1 on a bad item. */
static int parse_kinds(const char *text, int classes, uint32_t *mask)
{
    char item[64];
    const char *p = text;
    *mask = 0;
    if (!text || !*text)
        return -1;
    for (;;) {
        size_t n = strcspn(p, ",");
        int k;
        if (n == 0 || n >= sizeof item)
            return -1;
        memcpy(item, p, n);
        item[n] = 0;
        if (classes && !strcmp(item, "error"))
            *mask |= class_mask(AN_ERROR);
        else if (classes && !strcmp(item, "warning"))
            *mask |= class_mask(AN_WARNING);
        else if ((k = an_finding_parse(item)) >= 0)
            *mask |= 1u << k;
        else
            return -1;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

int verdict_fail_on(verdict_opts *v, const char *text)
{
    uint32_t m;
    if (parse_kinds(text, 1, &m) != 0)
        return -1;
    v->enabled = 1;
    v->chosen = 1;
    v->fail_mask |= m;
    return 0;
}

int verdict_ignore(verdict_opts *v, const char *text)
{
    uint32_t m;
    if (parse_kinds(text, 0, &m) != 0)
        return -1;
    v->ignore_mask |= m;
    return 0;
}

/* Does this finding fail the run? The default (--fail-on-findings alone):
 * any client finding; cluster-side findings (client "") only when their kind
 * is asked for with --fail-on. */
static int finding_fails(const verdict_opts *v, const rep_finding *f)
{
    int k = an_finding_parse(f->kind);
    if (k < 0)
        return !v->chosen && f->client[0];
    if (v->ignore_mask & (1u << k))
        return 0;
    if (!v->chosen)
        return f->client[0] != 0;
    return (v->fail_mask & (1u << k)) != 0;
}

size_t verdict_failing(const verdict_opts *v, const report *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_findings; i++)
        n += (size_t)finding_fails(v, &r->findings[i]);
    return n;
}

/* The end of the capture: the latest record of any input. */
static int64_t capture_end(const report *r)
{
    int64_t end = 0;
    for (size_t i = 0; i < r->n_inputs; i++)
        if (r->inputs[i].last_us > end)
            end = r->inputs[i].last_us;
    return end;
}

/* An open migration with ASKs until the very end. */
static int migration_cut(const report *r)
{
    int64_t end = capture_end(r);
    for (size_t i = 0; i < r->n_migrations; i++) {
        const an_migration *m = &r->migrations[i];
        if (!m->complete && m->asks > 0 && m->last_ask_us > 0 &&
            end - m->last_ask_us <= CUT_SHORT_ASK_US)
            return 1;
    }
    return 0;
}

#define SET(c, ...) (d->code = (c), snprintf(d->text, sizeof d->text, __VA_ARGS__), 1)

/* What the traffic itself lacks (nothing RESP, nothing of a cluster). */
static int diagnose_traffic(const report *r, verdict_diag *d)
{
    uint64_t packets = report_counter(r, "packets");
    uint64_t paired = report_counter(r, "paired");
    uint64_t tls = report_counter(r, "tls_connections");
    uint64_t bus = report_counter(r, "cluster_bus_connections");
    uint64_t to_server = report_counter(r, "stream_bytes_to_server");
    uint64_t to_client = report_counter(r, "stream_bytes_to_client");
    uint64_t truncated = report_counter(r, "truncated");
    if (packets == 0)
        return SET("empty", "the capture holds no packets: check the interface and the "
                            "filter (tcpdump -i IFACE -U -w FILE 'tcp port 7000 or ...')");
    /* before the tests below, whose counters a cut header or payload empties */
    if (paired == 0 && truncated * 2 > packets)
        return SET("snaplen", "%llu of %llu packets were cut by the capture's snap length "
                              "before their payload ended (the bytes past it are not in the "
                              "file), and no command was paired with its reply: capture "
                              "whole packets (tcpdump -s 0)",
                   (unsigned long long)truncated, (unsigned long long)packets);
    if (report_counter(r, "tcp_packets") == 0)
        return SET("no_tcp", "the capture holds no TCP packets: capture the Redis ports "
                             "(tcpdump -i IFACE -U -w FILE 'tcp port 7000 or ...')");
    if (paired > 0)
        return 0;
    if (tls > 0)
        return SET("tls", "the traffic is TLS (%llu connections): slotscope reads plain RESP; "
                          "capture where TLS is terminated, or run the test without TLS",
                   (unsigned long long)tls);
    if (bus > 0)
        return SET("cluster_bus_only", "only cluster bus traffic (node to node, port+10000): "
                                       "capture the clients' ports (tcpdump -U -w FILE "
                                       "'tcp port 7000 or ...'), not only the bus ports");
    if (to_server == 0 || to_client == 0)
        return SET("one_direction", "only one direction of the traffic was captured (%s): "
                                    "capture both ('tcp port N', not 'src port N' or 'dst "
                                    "port N'), where both directions pass",
                   to_server == 0 ? "no requests" : "no replies");
    return SET("no_resp", "no Redis command was paired with its reply: is this Redis "
                          "traffic, on the ports slotscope knows (--ports)?");
}

/* Skews below this leave a redirect and its retry in order. */
#define CLOCK_SKEW_US 1000

/* Two inputs whose clocks were found apart (the same TCP segments in both)
 * and not aligned: a redirect in one and its retry in the other may look
 * out of order. */
static int diagnose_clock(const report *r, verdict_diag *d)
{
    for (size_t i = 0; i < r->n_inputs; i++) {
        const rep_input *in = &r->inputs[i];
        if (in->skew_shared == 0 || in->skew_ref < 1 || in->skew_ref > r->n_inputs)
            continue;
        const rep_input *ref = &r->inputs[in->skew_ref - 1];
        int64_t left = in->skew_us + in->time_offset_us - ref->time_offset_us;
        if (left > -CLOCK_SKEW_US && left < CLOCK_SKEW_US)
            continue;
        return SET("clock_skew", "the clock of input %zu is %+.3f ms against input %u's (%llu "
                                 "TCP segments both captured) and their times were not "
                                 "aligned: a redirect in one and its retry in the other may "
                                 "look out of order; run with --time-offset auto",
                   i + 1, (double)left / 1000.0, (unsigned)in->skew_ref,
                   (unsigned long long)in->skew_shared);
    }
    return 0;
}

/* What the capture lost (sync, its end, the cluster's answers). */
static int diagnose_loss(const report *r, verdict_diag *d)
{
    uint64_t conns = report_counter(r, "resp_connections");
    uint64_t out_of_sync = report_counter(r, "out_of_sync_connections");
    uint64_t pending = report_counter(r, "abandoned_ops");
    uint64_t unseen = report_counter(r, "unseen_retry_ops");
    uint64_t unseen_target = report_counter(r, "unseen_target_ops");
    uint64_t at_end = report_counter(r, "unanswered_at_end");
    uint64_t commands = report_counter(r, "commands");
    uint64_t truncated = report_counter(r, "truncated");
    uint64_t gaps = report_counter(r, "gaps");
    /* the pairing lost mostly where packets were cut by the capture's snap
     * length (each such cut is a gap): a setting of the capture, not loss */
    if (conns > 0 && out_of_sync * 2 > conns && truncated > 0 && truncated * 2 >= gaps)
        return SET("snaplen", "most connections (%llu of %llu) lost the pairing of requests "
                              "and replies: %llu packets were cut by the capture's snap length "
                              "(their bytes past it are not in the file); capture whole "
                              "packets (tcpdump -s 0)",
                   (unsigned long long)out_of_sync, (unsigned long long)conns,
                   (unsigned long long)truncated);
    if (conns > 0 && out_of_sync * 2 > conns)
        return SET("out_of_sync", "most connections (%llu of %llu) lost the pairing of "
                                  "requests and replies: packets were lost; capture with "
                                  "-s 0 and a bigger buffer (-B), and check drops",
                   (unsigned long long)out_of_sync, (unsigned long long)conns);
    if (diagnose_clock(r, d))
        return 1;
    if (migration_cut(r) || (at_end > 0 && at_end * 100 >= commands))
        return SET("cut_short", "the capture seems cut short (%s): tcpdump buffers packets; "
                                "capture with tcpdump -U (or --immediate-mode) and stop it "
                                "after the incident",
                   migration_cut(r) ? "a migration with ASKs until the end and no end"
                                    : "replies missing at the very end");
    if (pending > 0)
        return SET("redirects_pending", "%llu redirected operations were still waiting for "
                                        "their retry at the end: capture a little longer "
                                        "(and with tcpdump -U)",
                   (unsigned long long)pending);
    if (unseen_target > 0)
        return SET("nodes_unseen", "%llu redirected operations were sent to nodes the capture "
                                   "holds no connection to (left out by its filter or host, or "
                                   "idle), so their retries cannot be seen: capture every node's "
                                   "port where all of them pass (tcpdump -i any 'tcp portrange "
                                   "7000-7005'), or map the addresses the nodes announce to the "
                                   "ones captured (--node-map)",
                   (unsigned long long)unseen_target);
    if (unseen > 0)
        return SET("redirects_unseen", "the retries of %llu redirected operations may be in "
                                       "what the capture lost (requests lost after the "
                                       "redirect, or a retry without its reply): capture with "
                                       "-s 0 and a bigger buffer (-B), and check drops",
                   (unsigned long long)unseen);
    if (report_counter(r, "map_replies") == 0 && report_counter(r, "redirects") == 0)
        return SET("no_cluster", "no sign of Redis Cluster (no CLUSTER SLOTS/SHARDS/NODES "
                                 "reply, no redirect): a standalone Redis, or the clients "
                                 "started before the capture; capture the cluster nodes' "
                                 "ports from before the clients connect");
    return 0;
}

void verdict_diagnose(const report *r, verdict_diag *d)
{
    d->code = NULL;
    d->text[0] = 0;
    if (!diagnose_traffic(r, d))
        diagnose_loss(r, d);
}

int verdict_exit(const verdict_opts *v, const report *r, const verdict_diag *d, int status)
{
    if (status != EXIT_OK || !v->enabled)
        return status;
    if (d->code)
        return EXIT_INCONCLUSIVE;
    return verdict_failing(v, r) > 0 ? EXIT_FINDINGS : EXIT_OK;
}

void verdict_print_line(const verdict_diag *d)
{
    if (d->code)
        cli_error("inconclusive capture (%s): %s", d->code, d->text);
}

void verdict_print_json(const verdict_opts *v, const report *r, const verdict_diag *d,
                        FILE *out)
{
    fputs("{\"type\":\"verdict\",\"verdict\":", out);
    json_string(out, d->code ? "inconclusive" : verdict_failing(v, r) ? "findings" : "pass");
    fputs(",\"diagnosis\":", out);
    json_string(out, d->code ? d->code : "");
    fputs(",\"message\":", out);
    json_string(out, d->text);
    fprintf(out, ",\"failing_findings\":%zu}\n", verdict_failing(v, r));
}

void verdict_store(store *s, const verdict_diag *d)
{
    if (!s || !d->code)
        return;
    store_meta(s, "diagnosis", d->code);
    store_meta(s, "diagnosis_text", d->text);
}

int verdict_finish(const verdict_opts *v, const report *r, int json, int status)
{
    verdict_diag d;
    verdict_diagnose(r, &d);
    if (json) {
        verdict_print_json(v, r, &d, stdout);
        fflush(stdout);
    }
    if (v->enabled)
        verdict_print_line(&d);
    return verdict_exit(v, r, &d, status);
}
