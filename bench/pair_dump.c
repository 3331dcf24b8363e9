/*
 * pair_dump.c - every command of a capture with the stream positions that
 * identify its request and reply, for comparing the pairing of two runs
 * (bench/loss-compare.py: a clean capture against the same capture with
 * packets dropped by bench/loss-inject.py).
 *
 *   pair_dump FILE.pcap...   one line per command on stdout:
 *     client server req_end outcome reply_end name
 *
 * req_end and reply_end are resp_request.end_pos and resp_reply.end_pos:
 * stream positions that count lost bytes, so the same request or reply has
 * the same position in both runs (given the same first byte of the stream:
 * a connection whose handshake survived). reply_end is 0 unless the outcome
 * is ok. Runs capture/ and resp/ with their defaults, as `analyze` does.
 */
#include <stdio.h>
#include <stdlib.h>

#include "capture/capture.h"
#include "resp/resp.h"

static const char *const outcome_names[] = {"ok", "no_reply", "unanswered"};

/* The sink: one line per command. */
static void on_command(void *ctx, const resp_command *cmd)
{
    FILE *out = ctx;
    char cl[CAP_ENDPOINT_STRLEN], sv[CAP_ENDPOINT_STRLEN];
    cap_endpoint_format(&cmd->conn->client, cl, sizeof cl);
    cap_endpoint_format(&cmd->conn->server, sv, sizeof sv);
    unsigned o = (unsigned)cmd->outcome < 3 ? (unsigned)cmd->outcome : 2;
    fprintf(out, "%s %s %llu %s %llu %s\n", cl, sv, (unsigned long long)cmd->req.end_pos,
            outcome_names[o],
            (unsigned long long)(cmd->outcome == RESP_OK ? cmd->reply.end_pos : 0),
            cmd->req.name[0] ? cmd->req.name : "-");
}

int main(int argc, char **argv)
{
    char err[512];
    if (argc < 2) {
        fprintf(stderr, "usage: pair_dump FILE.pcap...\n");
        return 2;
    }
    cap_source *src = cap_open_files((const char *const *)(argv + 1), (size_t)(argc - 1), err,
                                     sizeof err);
    if (src == NULL) {
        fprintf(stderr, "pair_dump: %s\n", err);
        return 1;
    }
    resp_config rc;
    resp_config_defaults(&rc);
    resp_sink sink = {.ctx = stdout, .command = on_command};
    resp_pipeline *rp = resp_new(&rc, &sink);
    cap_config cc;
    cap_config_defaults(&cc);
    cc.shape = resp_shape;
    cap_tracker *t = rp ? cap_tracker_new(&cc, resp_on_capture_event, rp) : NULL;
    if (t == NULL) {
        fprintf(stderr, "pair_dump: out of memory\n");
        return 1;
    }
    int r = cap_source_run(src, t, err, sizeof err);
    cap_tracker_finish(t, 0);
    if (r < 0)
        fprintf(stderr, "pair_dump: %s\n", err);
    const resp_stats *st = resp_get_stats(rp);
    fprintf(stderr, "pair_dump: %llu commands, %llu paired, %llu unpaired requests, "
                    "%llu unpaired replies, %u out of sync\n",
            (unsigned long long)st->commands, (unsigned long long)st->total.paired,
            (unsigned long long)st->total.unpaired_requests,
            (unsigned long long)st->total.unpaired_replies, st->total.out_of_sync);
    cap_tracker_free(t);
    resp_free(rp);
    cap_source_free(src);
    return r < 0 ? 1 : 0;
}
