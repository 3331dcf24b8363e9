/*
 * harness.h - drive resp/ with synthetic capture events and log what it emits.
 *
 * Tests build cap_conn / cap_event themselves (no capture/ needed), feed byte
 * streams in any chunking, and compare the text log of resp_sink events.
 */
#ifndef SLOTSCOPE_TESTS_RESP_HARNESS_H
#define SLOTSCOPE_TESTS_RESP_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "resp/resp.h"

/* Most commands one harness records in detail. */
#ifndef H_MAX_CMDS
#define H_MAX_CMDS 20000
#endif

typedef struct h_ctx {
    resp_pipeline *rp;
    cap_conn conn;
    char *log;              /* text log of every event */
    size_t log_len, log_cap;
    resp_command *cmds;     /* copies of the emitted commands */
    size_t ncmds;
    resp_conn_stats closed; /* stats given at conn_close */
    int opens, closes;
    int64_t ts;             /* capture time of the next event */
    uint64_t index;         /* the record number events carry (cap_event.index) */
    int verbose_raw;        /* log kept raw replies */
    int no_log;             /* keep no text log (allocation counting) */
    uint64_t conn_word;     /* what the sink answers to resp_sink.conn_word */
    int conn_words;         /* times it was asked */
} h_ctx;

/* Start a harness. saw_syn: the connection's handshake was seen. cfg may be
 * NULL for defaults. */
void h_init(h_ctx *h, int saw_syn, const resp_config *cfg);
/* Close the connection (if open) and free everything. */
void h_free(h_ctx *h);
/* Events. */
void h_open(h_ctx *h);
void h_data(h_ctx *h, cap_dir dir, const void *data, size_t len);
void h_str(h_ctx *h, cap_dir dir, const char *s); /* h_data of a C string */
void h_gap(h_ctx *h, cap_dir dir, uint64_t len);
void h_gap_before_peer(h_ctx *h, cap_dir dir, uint64_t len); /* cap_event.before_peer */
/* h_data with an ACK: the sender had acknowledged ack_ahead bytes beyond
 * (negative: short of) what the other direction delivered so far. */
void h_data_ack(h_ctx *h, cap_dir dir, const void *data, size_t len, int32_t ack_ahead);
void h_close(h_ctx *h);

/* One step of a scripted conversation. */
typedef struct h_step {
    cap_dir dir;
    const char *data;
    size_t len;   /* 0: strlen(data) */
} h_step;

/* Run a script: split 0 feeds each step whole; split k > 0 feeds each step in
 * chunks of k bytes; split < 0 splits each step in two at offset -split.
 * Returns the log (malloc'd; caller frees). */
char *h_run(const h_step *steps, size_t n, long split, int saw_syn, const resp_config *cfg);

/* Count commands in h with this name and outcome. */
size_t h_count(const h_ctx *h, const char *name, resp_outcome outcome);

#endif
