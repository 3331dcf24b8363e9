/*
 * fuzz.h - the fuzz targets of slotscope, and what they share.
 *
 * Each target is a function `int ss_fuzz_NAME(const uint8_t *data, size_t size)`
 * in fuzz/fuzz_NAME.c. Built for libFuzzer, each file also defines the
 * libFuzzer entry point LLVMFuzzerTestOneInput, which only calls its function.
 * Built with -DSS_FUZZ_NO_ENTRY the entry point is left out, so that one program
 * (tests/robust/test_fuzz_regressions.c) can link every target and replay the
 * seed corpora and the crash regressions under cmocka.
 *
 * A target never returns an error for bad input: bad input is the point. It
 * aborts (through SS_FUZZ_CHECK) when an invariant that the public headers
 * promise does not hold, so that the fuzzer reports a broken promise as a crash,
 * not only memory errors.
 *
 * See docs/robustness.md for the input format of each target and how to run
 * them.
 */
#ifndef SLOTSCOPE_FUZZ_H
#define SLOTSCOPE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/analysis.h"
#include "capture/capture.h"
#include "resp/resp.h"

/* The targets. Each returns 0 (libFuzzer's convention) or aborts. */
int ss_fuzz_pcap(const uint8_t *data, size_t size);
int ss_fuzz_pcapfile(const uint8_t *data, size_t size);
int ss_fuzz_resp(const uint8_t *data, size_t size);
int ss_fuzz_redirect(const uint8_t *data, size_t size);
int ss_fuzz_cluster_replies(const uint8_t *data, size_t size);
int ss_fuzz_resp_decode(const uint8_t *data, size_t size);
int ss_fuzz_bus(const uint8_t *data, size_t size);
int ss_fuzz_report(const uint8_t *data, size_t size);

/* One conversation in fuzz_resp's input layout (see fuzz_resp.c) played
 * through the pipeline; pipe_flags are more ss_fuzz_pipe_init variant bits. */
int ss_fuzz_conversation(const uint8_t *data, size_t size, unsigned pipe_flags);

/* 1 if buf[0..cap) holds a NUL: a text field ends inside its array. */
static inline int ss_fuzz_has_nul(const char *buf, size_t cap)
{
    for (size_t i = 0; i < cap; i++)
        if (buf[i] == '\0')
            return 1;
    return 0;
}

/* Abort with a message when a promised invariant is broken. */
#define SS_FUZZ_CHECK(cond)                                                   \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__,        \
                    __LINE__, #cond);                                         \
            abort();                                                          \
        }                                                                     \
    } while (0)

/*
 * The pipeline the targets drive: resp/ decoding and pairing into analysis/,
 * with small limits so that the cap-and-evict paths are reached by small inputs,
 * and checking sinks in between that test every promise of the headers about
 * the records that pass (NUL-terminated text inside its array, counts within
 * their caps, slots within 0..16383).
 */
typedef struct ss_fuzz_pipe {
    resp_pipeline *rp;
    an_analyzer *an;
    resp_sink an_sink_in;      /* the analyzer's own resp sink, called after checks */
    uint64_t commands_seen;    /* resp_command events that reached the checks */
    uint64_t opens, closes;    /* conn_open / conn_close seen by the checks */
} ss_fuzz_pipe;

/* ss_fuzz_pipe_init variant bit: resp/ only, no analyzer behind it. */
#define SS_FUZZ_NO_ANALYSIS 0x100u

/* Build the pipeline (aborts on out of memory: not a finding). `variant` picks
 * a few options from the input (bit 0 client by connection, bit 1 key
 * redaction) and SS_FUZZ_NO_ANALYSIS. */
void ss_fuzz_pipe_init(ss_fuzz_pipe *p, unsigned variant);
/* an_finish, check the counters agree with what passed, free everything. */
void ss_fuzz_pipe_finish(ss_fuzz_pipe *p, int64_t end_us);

/* Limits used by every target for the capture tracker (small on purpose). */
void ss_fuzz_cap_config(cap_config *cfg);

/*
 * A synthetic connection fed straight into resp_on_capture_event, without the
 * capture tracker: the RESP targets use it to choose chunk boundaries and
 * event order themselves.
 */
typedef struct ss_fuzz_conn {
    cap_conn conn;   /* what resp/ and analysis/ see */
    int open;        /* OPEN sent, CLOSE not yet */
} ss_fuzz_conn;

/* Fill in a connection 10.0.0.<client_host>:<client_port> -> 10.0.0.1:7000
 * (id as given; saw_syn 0 means picked up mid-stream) and send its OPEN event
 * at ts_us. */
void ss_fuzz_conn_open(ss_fuzz_pipe *p, ss_fuzz_conn *c, uint64_t id,
                       uint8_t client_host, uint16_t client_port, int saw_syn,
                       int64_t ts_us);
/* Send a DATA event of len bytes in direction dir (len 0 is skipped). */
void ss_fuzz_conn_data(ss_fuzz_pipe *p, ss_fuzz_conn *c, cap_dir dir,
                       const uint8_t *data, size_t len, int64_t ts_us);
/* Send a GAP event of gap_len bytes (0: unknown) in direction dir. */
void ss_fuzz_conn_gap(ss_fuzz_pipe *p, ss_fuzz_conn *c, cap_dir dir,
                      uint64_t gap_len, int64_t ts_us);
/* Send the CLOSE event (if the connection is open). */
void ss_fuzz_conn_close(ss_fuzz_pipe *p, ss_fuzz_conn *c, cap_close_reason why,
                        int64_t ts_us);

/* A small deterministic generator (xorshift64*) for split points chosen by the
 * input's own seed bytes: the same input always takes the same path. */
typedef struct ss_fuzz_rng {
    uint64_t s;
} ss_fuzz_rng;
void ss_fuzz_rng_seed(ss_fuzz_rng *r, uint64_t seed);
uint64_t ss_fuzz_rng_next(ss_fuzz_rng *r);
/* Uniform-ish in 0..n-1 (n > 0). */
uint64_t ss_fuzz_rng_below(ss_fuzz_rng *r, uint64_t n);

#endif /* SLOTSCOPE_FUZZ_H */
