/*
 * fuzz_cluster_replies.c - fuzz target: resp_value_parse and the node parsers
 * of analysis/ for CLUSTER SLOTS, CLUSTER SHARDS and CLUSTER NODES replies.
 *
 * Input: the bytes of one reply, e.g. a CLUSTER SLOTS array, a CLUSTER SHARDS
 * list of maps (RESP2 arrays or RESP3 maps) or the CLUSTER NODES bulk string
 * (https://redis.io/docs/latest/commands/cluster-slots/, cluster-shards/,
 * cluster-nodes/).
 *
 * 1. resp_value_parse on an exact-size heap copy; the tree is walked and every
 *    string must point inside the input, every map have an even count.
 * 2. Four synthetic connections from one client to one node send CLUSTER
 *    SLOTS, CLUSTER SHARDS, CLUSTER NODES, and HELLO 3 + CLUSTER SHARDS, and
 *    each gets the input as the reply, so analysis/ parses the same bytes as
 *    each kind of map (and resp/ decodes them as a kept reply). Each connection
 *    then sends GET and gets "MOVED 12182 10.0.0.3:7001", so that the node
 *    registry maps a redirect target after learning (whatever it learnt of)
 *    the map.
 */
#include <string.h>

#include "fuzz/fuzz.h"

#define MAX_DEPTH 32

/* Walk a parsed tree: strings inside [buf, buf+len), counts consistent. */
static void walk(const resp_value *v, const uint8_t *buf, size_t len, unsigned depth)
{
    SS_FUZZ_CHECK(depth <= MAX_DEPTH + 1);
    switch (v->type) {
    case RESP_T_SIMPLE:
    case RESP_T_ERROR:
    case RESP_T_BULK:
    case RESP_T_VERBATIM:
    case RESP_T_DOUBLE:
    case RESP_T_BIGNUM:
    case RESP_T_BLOBERR:
        SS_FUZZ_CHECK(v->len <= len);
        if (v->len > 0) {
            const uint8_t *s = (const uint8_t *)v->str;
            SS_FUZZ_CHECK(s >= buf && s + v->len <= buf + len);
        }
        break;
    case RESP_T_MAP:
    case RESP_T_ATTR:
        SS_FUZZ_CHECK(v->n % 2 == 0);
        /* fall through */
    case RESP_T_ARRAY:
    case RESP_T_SET:
    case RESP_T_PUSH:
        /* every element takes at least 3 bytes ("_\r\n") */
        SS_FUZZ_CHECK(v->n <= len / 3);
        SS_FUZZ_CHECK(v->n == 0 || v->elem != NULL);
        for (size_t i = 0; i < v->n; i++)
            walk(&v->elem[i], buf, len, depth + 1);
        break;
    default:
        break;
    }
}

/* The request bytes of each connection. */
static const char *const requests[4] = {
    "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n",
    "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n",
    "*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n",
    "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n",
};
/* What comes before the input on each connection's reply stream. */
static const char *const preludes[4] = {
    "", "", "",
    "%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n",
};
static const char after_req[] = "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n";
static const char after_rep[] = "-MOVED 12182 10.0.0.3:7001\r\n";

int ss_fuzz_cluster_replies(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    SS_FUZZ_CHECK(buf != NULL);
    memcpy(buf, data, size);

    resp_value *v = resp_value_parse(buf, size, MAX_DEPTH);
    if (v) {
        walk(v, buf, size, 0);
        resp_value_free(v);
    }

    ss_fuzz_pipe pipe;
    ss_fuzz_pipe_init(&pipe, size & 3);
    int64_t ts = 1700000000000000LL;
    for (unsigned i = 0; i < 4; i++) {
        ss_fuzz_conn c;
        const char *rq = requests[i], *pre = preludes[i];
        ss_fuzz_conn_open(&pipe, &c, i + 1, 2, (uint16_t)(40000 + i), 1, ts);
        ss_fuzz_conn_data(&pipe, &c, CAP_TO_SERVER, (const uint8_t *)rq, strlen(rq), ts += 10);
        ss_fuzz_conn_data(&pipe, &c, CAP_TO_CLIENT, (const uint8_t *)pre, strlen(pre), ts += 10);
        ss_fuzz_conn_data(&pipe, &c, CAP_TO_CLIENT, buf, size, ts += 10);
        ss_fuzz_conn_data(&pipe, &c, CAP_TO_SERVER, (const uint8_t *)after_req,
                          strlen(after_req), ts += 10);
        ss_fuzz_conn_data(&pipe, &c, CAP_TO_CLIENT, (const uint8_t *)after_rep,
                          strlen(after_rep), ts += 10);
        ss_fuzz_conn_close(&pipe, &c, CAP_CLOSE_FIN, ts += 10);
    }
    ss_fuzz_pipe_finish(&pipe, ts);
    free(buf);
    return 0;
}

#ifndef SS_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return ss_fuzz_cluster_replies(data, size);
}
#endif
