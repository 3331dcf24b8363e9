/*
 * traffic.c - the clients of ss-gen and what they send.
 *
 * The run is a sequence of turns. In a turn one client (picked at random; bad
 * clients more often) sends a pipeline of 1..depth commands, grouped into one
 * exchange per node it routes them to (a connection of its pool), reads the
 * replies, and handles redirects in further rounds: a correct client follows
 * ASK with ASKING + the command on the same connection, follows MOVED and then
 * refreshes its map with CLUSTER SLOTS, retries TRYAGAIN after a backoff of
 * 10-30 ms at most 3 times. Between turns the run's progress moves the
 * migration along: SETSLOT IMPORTING/MIGRATING, MIGRATE batches that move an
 * eighth of the slot's keys each, SETSLOT NODE (the flip).
 *
 * A bad client behaves like a correct one except for its one misbehaviour,
 * which it shows in at most bad_times operations ("special" operations) aimed
 * at its designated slot; its other commands avoid migrating and stuck slots,
 * so that it produces no other finding. What each special operation does, and
 * what the ground truth counts for it (one row per client, kind and slot):
 *
 *   ask_cached          key moved -> ASK, followed correctly, target cached;
 *                       the next special operation sends a key that has not
 *                       moved straight to the importing node without ASKING
 *                       (-MOVED back, followed). count: those direct commands
 *   asking_missing      ASK followed without ASKING (-MOVED back, gives up).
 *                       count: ASK follows without ASKING
 *   asking_other_connection  ASKING on pool connection 0 to the target, the
 *                       command on connection 1 (-MOVED, gives up). count: such
 *                       follows
 *   asking_interleaved  ASKING, GET of another key, the command, pipelined on
 *                       one connection (-MOVED, gives up). count: such follows
 *   redirect_loop       at its slot's flip, which (for this slot) the reshard
 *                       tool does on the source first: between the two
 *                       SETSLOT NODE the source answers MOVED target and the
 *                       target MOVED source; the client sends bad_times
 *                       commands for the slot then and follows every MOVED,
 *                       6 redirects each, then gives up. count: operations
 *   moved_ignored       after the flip, keeps sending the slot to the old
 *                       owner, follows each MOVED, never updates its map.
 *                       count: commands sent after the first MOVED
 *   tryagain_storm      multi-key command with split keys -> TRYAGAIN, retried
 *                       at once 12 times (all -TRYAGAIN), then gives up.
 *                       count: operations (storms)
 *   redirect_unfollowed ASK never followed (not cluster-aware: never sends
 *                       CLUSTER SLOTS). count: ASKs not followed
 *   readonly_missing    GET sent to a replica without READONLY (-MOVED to the
 *                       master, followed). count: such reads; slot -1 (the
 *                       finding is about a replica, not a slot)
 *   crossslot           MGET of two keys in different slots. count: commands;
 *                       slot -1 (not about one slot)
 *   migration_stuck     (cluster side, client "") a slot set MIGRATING that
 *                       never finishes; half its keys moved. count: 1 per
 *                       slot (when the capture shows the migration: SETSLOT
 *                       or an ASK)
 */
#include <stdlib.h>
#include <string.h>

#include "gen.h"

const char *const gen_kind_names[K_KINDS] = {
    "ask_cached", "asking_missing", "asking_other_connection", "asking_interleaved",
    "redirect_loop", "moved_ignored", "tryagain_storm", "redirect_unfollowed",
    "readonly_missing", "crossslot", "migration_stuck",
};

const char *const gen_cmd_names[C_NAMES] = {
    "GET", "SET", "MGET", "HSET", "HGET", "INCR", "EVAL", "DEL", "EXPIRE",
    "ASKING", "READONLY", "CLUSTER", "MIGRATE", "RESTORE-ASKING", "PING", "REPLCONF", "PSYNC",
};

#define MAX_OPS 40           /* operations in one turn */
#define MAX_ROUNDS 16        /* attempt rounds in one turn (a storm takes 13) */
#define STORM_RETRIES 12
#define LOOP_REDIRECTS 6
#define TAG_KEYS 64          /* keys per tag: {user:T}.f0 .. .f63 */
#define PATTERN_LEN (1u << 20)

/* How an operation's next attempt is sent. */
enum { M_PLAIN = 0, M_ASKING, M_ASKING_OTHER, M_ASKING_INTERLEAVED };

/* One logical operation: a command and its attempts. */
typedef struct op {
    int type;                /* C_* */
    gkeys k;
    uint32_t vsize;          /* SET value / GET reply size; 0: nil reply */
    int node;                /* where the next attempt goes */
    int mode;                /* M_* */
    int redirects;
    int attempts;            /* TRYAGAIN retries so far */
    int done;
    int special;             /* the misbehaving operation of a bad client */
    int replica_read;        /* a good reader's read sent to a replica */
    outcome last;
    int to;
} op;

typedef struct client {
    uint32_t ip;
    int kind;                /* -1 good, else K_* */
    int slot;                /* designated slot of a bad client, else -1 */
    int map_ver;             /* flips this client knows of */
    int aware;               /* sends CLUSTER SLOTS */
    int started;             /* its first CLUSTER SLOTS was sent */
    int reader;              /* good client reading from replicas (READONLY) */
    int cached;              /* ask_cached: the slot is cached on the target */
    int moved_seen;          /* moved_ignored: got the first MOVED */
    int times;               /* special operations done */
    uint32_t next_j;         /* next key index for a special operation: each
                                one uses keys of its own, so that no later
                                operation looks like a retry of an earlier */
    uint16_t next_port;
    uint32_t rr;             /* round robin over the pool */
    int has_retry;           /* a TRYAGAIN retry waits for its backoff */
    int64_t retry_due;
    op retry;
    char own_key[2][GEN_KEY_MAX];   /* readonly_missing / crossslot keys */
} client;

typedef struct sim {
    const gen_opts *o;
    wire *w;
    cluster *cl;
    gen_truth *truth;
    size_t rows_cap;
    rng r;
    client *clients;
    int n_clients;
    tconn *conns;            /* [client][node][pool2] */
    int pool2;               /* connections allocated per client and node */
    int *turn_table;
    int n_turns;
    gmsg req, rep;
    uint8_t *pattern;
    uint32_t tag_of[GEN_SLOTS];       /* special slots: a tag hashing there */
    char home_key[GEN_MAX_MASTERS][GEN_KEY_MAX];   /* a quiet key per master */
    uint32_t admin_ip;
    tconn admin[GEN_MAX_NODES];
    tconn link_mig, link_stuck;       /* source -> target (RESTORE-ASKING) */
    tconn repl[GEN_MAX_MASTERS];      /* replica -> master */
    uint16_t node_port[GEN_MAX_NODES];
    uint16_t admin_port;
    double prog;
    int mig_step;                     /* MIGRATE batches done in the open window */
    int stuck_started;
    uint64_t incr;
    uint32_t wsum;                    /* sum of the mix weights */
} sim;

/* ---------------------------------------------------------------- truth */

/* Add n occurrences to the row (client, kind, slot), creating it. */
static void truth_add(sim *S, uint32_t ip, int kind, int slot, int node, uint64_t n)
{
    gen_truth *t = S->truth;
    for (size_t i = 0; i < t->n_rows; i++) {
        gen_truth_row *r = &t->rows[i];
        if (r->client_ip == ip && r->kind == kind && r->slot == slot) {
            r->count += n;
            return;
        }
    }
    if (t->n_rows == S->rows_cap) {
        S->rows_cap = S->rows_cap ? S->rows_cap * 2 : 64;
        t->rows = realloc(t->rows, S->rows_cap * sizeof *t->rows);
        if (!t->rows)
            die("out of memory");
    }
    t->rows[t->n_rows++] = (gen_truth_row){ip, kind, slot, node, n};
}

/* ---------------------------------------------------------------- RESP out */

/* Append raw bytes. */
static void put_raw(gmsg *m, const char *s, size_t n)
{
    gbuf_put(&m->b, s, n);
}

/* Append a string literal (its length known at compile time). */
#define put_lit(m, lit) put_raw((m), (lit), sizeof(lit) - 1)

/* Append "<c><n>\r\n" (array, bulk length, integer headers). */
static void put_hdr(gmsg *m, char c, uint64_t n)
{
    char tmp[24];
    tmp[0] = c;
    size_t len = 1 + fmt_u64(tmp + 1, n);
    tmp[len++] = '\r';
    tmp[len++] = '\n';
    gbuf_put(&m->b, tmp, len);
}

/* Append a bulk string. */
static void put_bulk(gmsg *m, const char *s, size_t n)
{
    put_hdr(m, '$', n);
    gbuf_reserve(&m->b, n + 2);
    memcpy(m->b.p + m->b.len, s, n);
    memcpy(m->b.p + m->b.len + n, "\r\n", 2);
    m->b.len += n + 2;
}

/* Append a bulk string of n pattern bytes (a value); big ones may lose a
 * segment. */
static void put_value(sim *S, gmsg *m, size_t n)
{
    put_hdr(m, '$', n);
    gbuf_reserve(&m->b, n + 2);
    if (n >= 4096 && m->n_lr < GEN_MAX_LRANGES)
        m->lr[m->n_lr++] = (lrange){m->b.len, m->b.len + n};
    uint8_t *dst = m->b.p + m->b.len;
    size_t off = rng_below(&S->r, PATTERN_LEN);
    size_t left = n;
    while (left) {
        size_t chunk = PATTERN_LEN - off < left ? PATTERN_LEN - off : left;
        memcpy(dst, S->pattern + off, chunk);
        dst += chunk;
        left -= chunk;
        off = 0;
    }
    memcpy(dst, "\r\n", 2);
    m->b.len += n + 2;
}

/* Append a bulk string of a C string. */
static void put_str(gmsg *m, const char *s)
{
    put_bulk(m, s, strlen(s));
}

/* Append a bulk string holding a decimal number. */
static void put_num(gmsg *m, uint64_t v)
{
    char tmp[24];
    put_bulk(m, tmp, fmt_u64(tmp, v));
}

/* Reset a message for reuse. */
static void msg_reset(gmsg *m)
{
    m->b.len = 0;
    m->n_lr = 0;
}

/* ---------------------------------------------------------------- keys */

/* A popular-first rank in [0, keys): u^skew concentrates on small ranks. */
static uint32_t zipfish(sim *S)
{
    double u = rng_unit(&S->r), x = u;
    for (int i = 1; i < (int)S->o->skew; i++)
        x *= u;
    return (uint32_t)(x * S->o->keys);
}

/* Set key i of k to text, with its slot. */
static void key_set(gkeys *k, int i, const char *text, size_t len)
{
    if (len >= GEN_KEY_MAX)
        len = GEN_KEY_MAX - 1;
    memcpy(k->k[i], text, len);
    k->k[i][len] = 0;
    k->len[i] = (uint8_t)len;
    k->slot[i] = key_slot(text, len);
}

/* "key:<n>" */
static void key_plain(gkeys *k, int i, uint32_t n)
{
    char tmp[GEN_KEY_MAX];
    memcpy(tmp, "key:", 4);
    size_t len = 4 + fmt_u64(tmp + 4, n);
    key_set(k, i, tmp, len);
}

/* "{user:<tag>}.f<j>", or "{user:<tag>}.h" when j < 0. */
static void key_tagged(gkeys *k, int i, uint32_t tag, int j)
{
    char tmp[GEN_KEY_MAX];
    memcpy(tmp, "{user:", 6);
    size_t len = 6 + fmt_u64(tmp + 6, tag);
    tmp[len++] = '}';
    tmp[len++] = '.';
    if (j < 0) {
        tmp[len++] = 'h';
    } else {
        tmp[len++] = 'f';
        len += fmt_u64(tmp + len, (uint64_t)j);
    }
    key_set(k, i, tmp, len);
}

/* A value size: mostly small, a tail of large values. */
static uint32_t value_size(sim *S)
{
    const gen_opts *o = S->o;
    if (rng_unit(&S->r) < o->large_rate && o->max_value > 262144)
        return rng_range(&S->r, 262144, o->max_value);
    double u = rng_unit(&S->r);
    uint32_t v;
    if (u < 0.70)
        v = rng_range(&S->r, 8, 128);
    else if (u < 0.90)
        v = rng_range(&S->r, 129, 1024);
    else if (u < 0.98)
        v = rng_range(&S->r, 1025, 16384);
    else
        v = rng_range(&S->r, 16385, 262144);
    return v < o->max_value ? v : o->max_value;
}

/* 1 if a command type only reads. */
static int is_read(int type)
{
    return type == C_GET || type == C_HGET || type == C_MGET;
}

/* Fill op with a command of the mix. tag_slot >= 0: all keys in that special
 * slot (migration traffic); else keys from the key space. */
static void op_make(sim *S, op *p, int tag_slot)
{
    memset(p, 0, sizeof *p);
    uint32_t pick = rng_below(&S->r, S->wsum);
    int type = 0;
    while (type < C_MIX - 1 && pick >= S->o->weights[type])
        pick -= S->o->weights[type++];
    p->type = type;
    uint32_t tag = tag_slot >= 0 ? S->tag_of[tag_slot] : zipfish(S);
    switch (type) {
    case C_MGET:
    case C_EVAL: {
        int n = type == C_MGET ? (int)rng_range(&S->r, 2, 3) : 2;
        int j0 = (int)rng_below(&S->r, TAG_KEYS);
        p->k.n = n;
        for (int i = 0; i < n; i++)
            key_tagged(&p->k, i, tag, (j0 + i * 7) % TAG_KEYS);
        break;
    }
    case C_HSET:
    case C_HGET:
        p->k.n = 1;
        key_tagged(&p->k, 0, tag, -1);
        break;
    default:
        p->k.n = 1;
        if (tag_slot >= 0)
            key_tagged(&p->k, 0, tag, (int)rng_below(&S->r, TAG_KEYS));
        else
            key_plain(&p->k, 0, zipfish(S));
        break;
    }
    if (type == C_SET || type == C_HSET || type == C_GET || type == C_HGET || type == C_EVAL ||
        type == C_MGET)
        p->vsize = value_size(S);
    if ((type == C_GET || type == C_HGET) && rng_below(&S->r, 100) < 5)
        p->vsize = 0;        /* a miss: nil */
    if (type == C_MGET && p->vsize > 65536)
        p->vsize = 65536;
}

/* 1 if any key of the op is in a migrating or stuck slot. */
static int op_special_slot(const sim *S, const op *p)
{
    for (int i = 0; i < p->k.n; i++)
        if (S->cl->special[p->k.slot[i]])
            return 1;
    return 0;
}

/* ---------------------------------------------------------------- exchanges */

/* The connection of client ci to node n, pool slot k. */
static tconn *conn_of(sim *S, int ci, int n, int k)
{
    return &S->conns[((size_t)ci * (size_t)S->cl->n_nodes + (size_t)n) * (size_t)S->pool2 +
                     (size_t)k];
}

/* Make sure the connection has addresses; open it on the wire. */
static void conn_ready(sim *S, tconn *c, uint32_t cip, uint16_t *next_port, int node)
{
    if (!c->open) {
        if (c->port[1] == 0) {
            c->ip[0] = cip;
            c->ip[1] = S->cl->nodes[node].ip;
            c->port[0] = (*next_port)++;
            if (*next_port < 32768)
                *next_port = 32768;
            c->port[1] = S->cl->nodes[node].port;
        }
        wire_connect(S->w, c);
    }
}

/* Start building one exchange (requests and their replies). */
static void ex_begin(sim *S)
{
    msg_reset(&S->req);
    msg_reset(&S->rep);
}

/* Write the exchange on connection c: requests, server time, replies. */
static void ex_end(sim *S, tconn *c)
{
    if (S->req.b.len == 0)
        return;
    wire_send(S->w, c, 0, &S->req);
    wire_wait(S->w, rng_range(&S->r, 15, 80));
    wire_send(S->w, c, 1, &S->rep);
    wire_wait(S->w, rng_range(&S->r, 2, 20));
}

/* ASKING: the node remembers it for the next command on this connection. */
static void ex_asking(sim *S, tconn *c)
{
    put_lit(&S->req, "*1\r\n$6\r\nASKING\r\n");
    put_lit(&S->rep, "+OK\r\n");
    c->asking = 1;
    S->truth->commands[C_ASKING]++;
}

/* READONLY: a replica serves reads on this connection from now on. */
static void ex_readonly(sim *S, tconn *c)
{
    put_lit(&S->req, "*1\r\n$8\r\nREADONLY\r\n");
    put_lit(&S->rep, "+OK\r\n");
    c->readonly = 1;
    S->truth->commands[C_READONLY]++;
}

/* CLUSTER SLOTS and its reply from the current map (it uses up a pending
 * ASKING, as any command does). */
static void ex_cluster_slots(sim *S, tconn *c)
{
    c->asking = 0;
    put_lit(&S->req, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n");
    const gbuf *r = cluster_slots_reply(S->cl);
    put_raw(&S->rep, (const char *)r->p, r->len);
    S->truth->commands[C_CLUSTER]++;
}

/* The request bytes of an operation. */
static void put_request(sim *S, const op *p)
{
    gmsg *m = &S->req;
    const gkeys *k = &p->k;
    switch (p->type) {
    case C_GET:
        put_lit(m, "*2\r\n$3\r\nGET\r\n");
        put_bulk(m, k->k[0], k->len[0]);
        break;
    case C_SET:
        put_lit(m, "*3\r\n$3\r\nSET\r\n");
        put_bulk(m, k->k[0], k->len[0]);
        put_value(S, m, p->vsize);
        break;
    case C_MGET:
        put_hdr(m, '*', (uint64_t)k->n + 1);
        put_lit(m, "$4\r\nMGET\r\n");
        for (int i = 0; i < k->n; i++)
            put_bulk(m, k->k[i], k->len[i]);
        break;
    case C_HSET:
        put_lit(m, "*4\r\n$4\r\nHSET\r\n");
        put_bulk(m, k->k[0], k->len[0]);
        put_lit(m, "$7\r\nprofile\r\n");
        put_value(S, m, p->vsize);
        break;
    case C_HGET:
        put_lit(m, "*3\r\n$4\r\nHGET\r\n");
        put_bulk(m, k->k[0], k->len[0]);
        put_lit(m, "$7\r\nprofile\r\n");
        break;
    case C_INCR:
        put_lit(m, "*2\r\n$4\r\nINCR\r\n");
        put_bulk(m, k->k[0], k->len[0]);
        break;
    case C_EVAL:
        put_hdr(m, '*', (uint64_t)k->n + 3);
        put_lit(m, "$4\r\nEVAL\r\n");
        put_str(m, "return redis.call('GET', KEYS[1])");
        put_num(m, (uint64_t)k->n);
        for (int i = 0; i < k->n; i++)
            put_bulk(m, k->k[i], k->len[i]);
        break;
    case C_DEL:
        put_lit(m, "*2\r\n$3\r\nDEL\r\n");
        put_bulk(m, k->k[0], k->len[0]);
        break;
    case C_EXPIRE:
        put_lit(m, "*3\r\n$6\r\nEXPIRE\r\n");
        put_bulk(m, k->k[0], k->len[0]);
        put_lit(m, "$4\r\n3600\r\n");
        break;
    default:
        die("internal: request type %d", p->type);
    }
    S->truth->commands[p->type]++;
}

/* The reply bytes of a served operation. */
static void put_ok_reply(sim *S, const op *p)
{
    gmsg *m = &S->rep;
    switch (p->type) {
    case C_GET:
    case C_HGET:
    case C_EVAL:
        if (p->vsize)
            put_value(S, m, p->vsize);
        else
            put_lit(m, "$-1\r\n");
        break;
    case C_MGET:
        put_hdr(m, '*', (uint64_t)p->k.n);
        for (int i = 0; i < p->k.n; i++)
            put_value(S, m, p->vsize / (uint32_t)p->k.n + 1);
        break;
    case C_SET:
        put_lit(m, "+OK\r\n");
        break;
    case C_INCR:
        put_hdr(m, ':', ++S->incr);
        break;
    default:              /* HSET, DEL, EXPIRE */
        put_lit(m, ":1\r\n");
        break;
    }
}

/* Send one attempt of op on connection c of node n: request, the node's
 * decision, the reply. Records the outcome in the op. */
static void ex_op(sim *S, tconn *c, int n, op *p)
{
    put_request(S, p);
    int to = -1;
    outcome oc = cluster_serve(S->cl, n, &p->k, is_read(p->type), c->asking, c->readonly, &to);
    c->asking = 0;
    gmsg *m = &S->rep;
    char line[96];
    int len;
    switch (oc) {
    case O_OK:
        put_ok_reply(S, p);
        break;
    case O_MOVED:
    case O_ASK:
        len = snprintf(line, sizeof line, "-%s %u %s\r\n", oc == O_MOVED ? "MOVED" : "ASK",
                       p->k.slot[0], S->cl->nodes[to].addr);
        put_raw(m, line, (size_t)len);
        break;
    case O_TRYAGAIN:
        put_lit(m, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
        break;
    case O_CROSSSLOT:
        put_lit(m, "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
        break;
    case O_KINDS:
        break;
    }
    if (oc > O_OK && oc < O_KINDS)
        S->truth->redirects[oc]++;
    if (oc == O_ASK && S->cl->special[p->k.slot[0]] == 2)
        S->cl->stuck_asks[p->k.slot[0] - S->cl->stuck_first]++;
    p->last = oc;
    p->to = to;
}

/* ---------------------------------------------------------------- clients */

/* Where client cl_ routes slot s for a command of this type. */
static int route(sim *S, client *c, op *p)
{
    int s = p->k.slot[0];
    int m = cluster_owner_at(S->cl, s, c->map_ver);
    if (p->special && c->kind == K_MOVED_IGNORED)
        m = cluster_owner_at(S->cl, s, 0);      /* its map never learned */
    if (p->special && c->kind == K_ASK_CACHED && c->cached)
        m = S->cl->mig_dst;
    if (p->special && c->kind == K_READONLY_MISSING)
        return S->cl->nodes[m].replica;
    if (!p->special && c->reader && is_read(p->type) && S->cl->nodes[m].replica >= 0 &&
        !S->cl->special[s]) {
        p->replica_read = 1;
        return S->cl->nodes[m].replica;
    }
    return m;
}

/* Pick the next pool connection of client ci to node n. */
static tconn *pool_conn(sim *S, int ci, int n)
{
    client *c = &S->clients[ci];
    int k = (int)(c->rr++ % (uint32_t)S->o->pool);
    tconn *t = conn_of(S, ci, n, k);
    conn_ready(S, t, c->ip, &c->next_port, n);
    return t;
}

/* One exchange of CLUSTER SLOTS with a random master; the client now knows
 * every flip so far. */
static void client_refresh(sim *S, int ci)
{
    client *c = &S->clients[ci];
    int n = (int)rng_below(&S->r, (uint32_t)S->cl->n_masters);
    tconn *t = pool_conn(S, ci, n);
    ex_begin(S);
    ex_cluster_slots(S, t);
    ex_end(S, t);
    c->map_ver = S->cl->flipped;
}

/* The next unused key index of client c in slot s whose moved state is
 * `moved`; -1 if none in the next 4096. */
static int fresh_key(sim *S, client *c, int s, int moved)
{
    gkeys k;
    for (uint32_t j = c->next_j; j < c->next_j + 4096; j++) {
        key_tagged(&k, 0, S->tag_of[s], (int)j);
        if (cluster_key_moved(S->cl, s, k.k[0], k.len[0]) == moved) {
            c->next_j = j + 1;
            return (int)j;
        }
    }
    return -1;
}

/* 1 if the open window is the client's designated slot's. */
static int window_open_for(const sim *S, const client *c)
{
    return S->cl->open_idx >= 0 && c->slot == S->cl->mig_first + S->cl->open_idx;
}

/* Build the special operation of a bad client if its moment has come.
 * Returns 1 when p was filled. */
static int special_make(sim *S, client *c, op *p)
{
    const int s = c->slot;
    memset(p, 0, sizeof *p);
    p->special = 1;
    p->type = C_GET;
    p->vsize = 64;
    p->k.n = 1;
    switch (c->kind) {
    case K_ASK_CACHED: {
        if (!window_open_for(S, c)) {
            c->cached = 0;
            return 0;
        }
        int j = fresh_key(S, c, s, c->cached ? 0 : 1);
        if (j < 0)
            return 0;
        key_tagged(&p->k, 0, S->tag_of[s], j);
        if (c->cached) {
            /* the misbehaviour: straight to the importing node */
            c->times++;
            truth_add(S, c->ip, K_ASK_CACHED, s, S->cl->mig_dst, 1);
        }
        return 1;
    }
    case K_ASKING_MISSING:
    case K_ASKING_OTHER_CONNECTION:
    case K_ASKING_INTERLEAVED:
    case K_REDIRECT_UNFOLLOWED: {
        if (!window_open_for(S, c))
            return 0;
        int j = fresh_key(S, c, s, 1);
        if (j < 0)
            return 0;
        key_tagged(&p->k, 0, S->tag_of[s], j);
        c->times++;
        return 1;
    }
    case K_TRYAGAIN_STORM: {
        if (!window_open_for(S, c))
            return 0;
        int a = fresh_key(S, c, s, 1);
        int b = a < 0 ? -1 : fresh_key(S, c, s, 0);
        if (b < 0)
            return 0;
        p->type = C_MGET;
        p->k.n = 2;
        key_tagged(&p->k, 0, S->tag_of[s], a);
        key_tagged(&p->k, 1, S->tag_of[s], b);
        c->times++;
        truth_add(S, c->ip, K_TRYAGAIN_STORM, s, cluster_owner(S->cl, s), 1);
        return 1;
    }
    case K_MOVED_IGNORED:
        if (s - S->cl->mig_first >= S->cl->flipped)
            return 0;
        key_tagged(&p->k, 0, S->tag_of[s], (int)c->next_j++);
        c->times++;
        return 1;
    case K_READONLY_MISSING:
        key_set(&p->k, 0, c->own_key[0], strlen(c->own_key[0]));
        c->times++;
        truth_add(S, c->ip, K_READONLY_MISSING, -1,
                  S->cl->nodes[cluster_owner(S->cl, s)].replica, 1);
        return 1;
    case K_CROSSSLOT:
        p->type = C_MGET;
        p->k.n = 2;
        key_set(&p->k, 0, c->own_key[0], strlen(c->own_key[0]));
        key_set(&p->k, 1, c->own_key[1], strlen(c->own_key[1]));
        c->times++;
        truth_add(S, c->ip, K_CROSSSLOT, -1, -1, 1); /* node "": any */
        return 1;
    default:
        return 0;
    }
}

/* What a client does with the outcome of an attempt. Sets *refresh when a
 * correct client must reload the map. */
static void handle_outcome(sim *S, client *c, op *p, int *refresh)
{
    int kind = p->special ? c->kind : -1;
    int s = p->k.slot[0];
    switch (p->last) {
    case O_OK:
        p->done = 1;
        if (kind == K_ASK_CACHED && p->mode == M_ASKING)
            c->cached = 1;       /* the bug: ASK taken for a new owner */
        return;
    case O_CROSSSLOT:
    case O_KINDS:
        p->done = 1;
        return;
    case O_ASK:
        p->redirects++;
        p->node = p->to;
        switch (kind) {
        case K_ASKING_MISSING:
            p->mode = M_PLAIN;
            truth_add(S, c->ip, K_ASKING_MISSING, s, p->to, 1);
            break;
        case K_ASKING_OTHER_CONNECTION:
            p->mode = M_ASKING_OTHER;
            truth_add(S, c->ip, K_ASKING_OTHER_CONNECTION, s, p->to, 1);
            break;
        case K_ASKING_INTERLEAVED:
            p->mode = M_ASKING_INTERLEAVED;
            truth_add(S, c->ip, K_ASKING_INTERLEAVED, s, p->to, 1);
            break;
        case K_REDIRECT_UNFOLLOWED:
            truth_add(S, c->ip, K_REDIRECT_UNFOLLOWED, s, S->cl->mig_src, 1);
            p->done = 1;
            break;
        default:
            p->mode = M_ASKING;
            break;
        }
        break;
    case O_MOVED:
        p->redirects++;
        p->node = p->to;
        p->mode = M_PLAIN;
        switch (kind) {
        case K_ASKING_MISSING:
        case K_ASKING_OTHER_CONNECTION:
        case K_ASKING_INTERLEAVED:
            p->done = 1;         /* gives up: the error reaches the application */
            break;
        case K_REDIRECT_LOOP:
            if (p->redirects >= LOOP_REDIRECTS)
                p->done = 1;
            break;
        case K_MOVED_IGNORED:
            if (c->moved_seen)
                truth_add(S, c->ip, K_MOVED_IGNORED, s, cluster_owner_at(S->cl, s, 0), 1);
            c->moved_seen = 1;
            break;
        case K_ASK_CACHED:
            c->cached = 0;
            break;
        case K_READONLY_MISSING:
            break;
        default:
            *refresh = 1;
            break;
        }
        break;
    case O_TRYAGAIN:
        if (kind == K_TRYAGAIN_STORM) {
            if (p->attempts < STORM_RETRIES) {
                p->attempts++;
            } else {
                p->done = 1;
            }
            return;
        }
        p->done = 1;
        if (!c->has_retry && p->attempts < 3 && !p->special) {
            c->retry = *p;
            c->retry.attempts++;
            c->retry.done = 0;
            c->retry.mode = M_PLAIN;
            c->retry.node = -1;
            c->retry_due = S->w->now_us + rng_range(&S->r, 10000, 30000);
            c->has_retry = 1;
        }
        return;
    }
    if (p->redirects > LOOP_REDIRECTS)
        p->done = 1;
}

/* Send the next attempt of every unfinished operation: one exchange per node
 * (pipelined), except ASKING-on-another-connection, which needs two. */
static void send_round(sim *S, int ci, op *ops, int n_ops, int *refresh)
{
    client *c = &S->clients[ci];
    uint8_t sent[MAX_OPS] = {0};
    for (int i = 0; i < n_ops; i++) {
        op *p = &ops[i];
        if (p->done || sent[i])
            continue;
        int node = p->node;
        if (p->mode == M_ASKING_OTHER) {
            tconn *a = conn_of(S, ci, node, 0), *b = conn_of(S, ci, node, 1);
            conn_ready(S, a, c->ip, &c->next_port, node);
            conn_ready(S, b, c->ip, &c->next_port, node);
            ex_begin(S);
            ex_asking(S, a);
            ex_end(S, a);
            ex_begin(S);
            ex_op(S, b, node, p);
            ex_end(S, b);
            sent[i] = 1;
            handle_outcome(S, c, p, refresh);
            continue;
        }
        /* every pending op for this node in one pipeline */
        tconn *t = pool_conn(S, ci, node);
        ex_begin(S);
        if (S->cl->nodes[node].master >= 0 && c->reader && !t->readonly)
            ex_readonly(S, t);
        int members[MAX_OPS], n_members = 0;
        for (int j = i; j < n_ops; j++) {
            op *q = &ops[j];
            if (q->done || sent[j] || q->node != node || q->mode == M_ASKING_OTHER)
                continue;
            if (q->mode == M_ASKING || q->mode == M_ASKING_INTERLEAVED)
                ex_asking(S, t);
            if (q->mode == M_ASKING_INTERLEAVED) {
                op filler;
                memset(&filler, 0, sizeof filler);
                filler.type = C_GET;
                filler.vsize = 32;
                filler.k.n = 1;
                int m = S->cl->nodes[node].master < 0 ? node : S->cl->nodes[node].master;
                key_set(&filler.k, 0, S->home_key[m], strlen(S->home_key[m]));
                ex_op(S, t, node, &filler);
            }
            ex_op(S, t, node, q);
            sent[j] = 1;
            members[n_members++] = j;
        }
        ex_end(S, t);
        for (int m = 0; m < n_members; m++)
            handle_outcome(S, c, &ops[members[m]], refresh);
    }
}

/* One turn of client ci. */
static void client_turn(sim *S, int ci)
{
    client *c = &S->clients[ci];
    const gen_opts *o = S->o;
    if (!c->started) {
        c->started = 1;
        if (c->aware)
            client_refresh(S, ci);
    }
    op ops[MAX_OPS];
    int n = 0;
    if (c->has_retry && S->w->now_us >= c->retry_due) {
        ops[n++] = c->retry;
        c->has_retry = 0;
    }
    if (c->kind >= 0 && c->times < o->bad_times + (c->kind == K_MOVED_IGNORED)) {
        if (special_make(S, c, &ops[n]))
            n++;
    }
    int depth = (int)rng_range(&S->r, 1, (uint32_t)o->depth);
    for (int tries = 0; n < depth && tries < depth * 4; tries++) {
        int tag_slot = -1;
        if (c->kind < 0 && rng_unit(&S->r) < o->mig_share) {
            int total = S->cl->mig_count + (S->cl->stuck_open ? S->cl->stuck_count : 0);
            if (total > 0) {
                int x = (int)rng_below(&S->r, (uint32_t)total);
                tag_slot = x < S->cl->mig_count ? S->cl->mig_first + x
                                                : S->cl->stuck_first + x - S->cl->mig_count;
            }
        }
        op_make(S, &ops[n], tag_slot);
        if (c->kind >= 0 && op_special_slot(S, &ops[n]))
            continue;            /* bad clients stay away from migrations */
        n++;
    }
    for (int i = 0; i < n; i++)
        ops[i].node = route(S, c, &ops[i]);
    int refresh = 0;
    for (int round = 0; round < MAX_ROUNDS; round++) {
        int pending = 0;
        for (int i = 0; i < n; i++)
            pending += !ops[i].done;
        if (!pending)
            break;
        send_round(S, ci, ops, n, &refresh);
    }
    if (refresh)
        client_refresh(S, ci);
    S->truth->operations += (uint64_t)n;
    S->truth->turns++;
}

/* The redirect_loop client's moment: the slot is flipped on the source but
 * not on the target. It sends its remaining special commands for the slot,
 * pipelined, each its own operation, and follows every MOVED (6 redirects
 * each). */
static void loop_turn(sim *S, int ci)
{
    client *c = &S->clients[ci];
    const int s = c->slot;
    op ops[MAX_OPS];
    int n = 0;
    while (c->times < S->o->bad_times && n < MAX_OPS) {
        op *p = &ops[n++];
        memset(p, 0, sizeof *p);
        p->special = 1;
        p->type = C_GET;
        p->vsize = 64;
        p->k.n = 1;
        key_tagged(&p->k, 0, S->tag_of[s], (int)c->next_j++);
        p->node = cluster_owner_at(S->cl, s, 0);
        c->times++;
        truth_add(S, c->ip, K_REDIRECT_LOOP, s, -1, 1);
    }
    int refresh = 0;
    for (int round = 0; round < MAX_ROUNDS; round++) {
        int pending = 0;
        for (int i = 0; i < n; i++)
            pending += !ops[i].done;
        if (!pending)
            break;
        send_round(S, ci, ops, n, &refresh);
    }
    S->truth->operations += (uint64_t)n;
    S->truth->turns++;
}

/* ---------------------------------------------------------------- admin */

/* Open (once) and return the admin client's connection to node n. */
static tconn *admin_conn(sim *S, int n)
{
    conn_ready(S, &S->admin[n], S->admin_ip, &S->admin_port, n);
    return &S->admin[n];
}

/* CLUSTER SETSLOT <s> <what> <node id> to node n, +OK. */
static void admin_setslot(sim *S, int n, int s, const char *what, int id_node)
{
    if (!S->o->admin)
        return;
    tconn *t = admin_conn(S, n);
    ex_begin(S);
    put_lit(&S->req, "*5\r\n$7\r\nCLUSTER\r\n$7\r\nSETSLOT\r\n");
    put_num(&S->req, (uint64_t)s);
    put_str(&S->req, what);
    put_str(&S->req, S->cl->nodes[id_node].id);
    put_lit(&S->rep, "+OK\r\n");
    S->truth->commands[C_CLUSTER]++;
    ex_end(S, t);
}

/* Move the keys of slot s whose FNV position is in [lo, hi): CLUSTER
 * GETKEYSINSLOT and MIGRATE from the admin to the source, RESTORE-ASKING of
 * each key from the source to the target. */
static void admin_migrate(sim *S, int s, int src, int dst, tconn *link, uint32_t lo, uint32_t hi)
{
    if (!S->o->admin)
        return;
    gkeys batch;
    int n = 0;
    char keys[TAG_KEYS][GEN_KEY_MAX];
    uint8_t lens[TAG_KEYS];
    for (int j = 0; j < TAG_KEYS; j++) {
        key_tagged(&batch, 0, S->tag_of[s], j);
        uint32_t f = fnv1a(batch.k[0], batch.len[0]) % 1024;
        if (f >= lo && f < hi) {
            memcpy(keys[n], batch.k[0], GEN_KEY_MAX);
            lens[n++] = batch.len[0];
        }
    }
    tconn *t = admin_conn(S, src);
    ex_begin(S);
    put_lit(&S->req, "*4\r\n$7\r\nCLUSTER\r\n$13\r\nGETKEYSINSLOT\r\n");
    put_num(&S->req, (uint64_t)s);
    put_num(&S->req, 100);
    put_hdr(&S->rep, '*', (uint64_t)n);
    for (int i = 0; i < n; i++)
        put_bulk(&S->rep, keys[i], lens[i]);
    S->truth->commands[C_CLUSTER]++;
    ex_end(S, t);
    if (n == 0)
        return;
    ex_begin(S);
    put_hdr(&S->req, '*', 7 + (uint64_t)n);
    put_lit(&S->req, "$7\r\nMIGRATE\r\n");
    char ip[20];
    uint32_t dip = S->cl->nodes[dst].ip;
    snprintf(ip, sizeof ip, "%u.%u.%u.%u", dip >> 24, (dip >> 16) & 255, (dip >> 8) & 255, dip & 255);
    put_str(&S->req, ip);
    put_num(&S->req, S->cl->nodes[dst].port);
    put_lit(&S->req, "$0\r\n\r\n");
    put_num(&S->req, 0);
    put_num(&S->req, 5000);
    put_lit(&S->req, "$4\r\nKEYS\r\n");
    for (int i = 0; i < n; i++)
        put_bulk(&S->req, keys[i], lens[i]);
    put_lit(&S->rep, "+OK\r\n");
    S->truth->commands[C_MIGRATE]++;
    /* the source moves the keys while MIGRATE runs */
    conn_ready(S, link, S->cl->nodes[src].ip, &S->node_port[src], dst);
    wire_send(S->w, t, 0, &S->req);
    msg_reset(&S->req);
    gmsg saved_rep = S->rep;            /* keep MIGRATE's +OK aside */
    S->rep = (gmsg){0};
    for (int i = 0; i < n; i++) {
        put_lit(&S->req, "*4\r\n$14\r\nRESTORE-ASKING\r\n");
        put_bulk(&S->req, keys[i], lens[i]);
        put_num(&S->req, 0);
        put_value(S, &S->req, 48);
        put_lit(&S->rep, "+OK\r\n");
        S->truth->commands[C_RESTORE_ASKING]++;
    }
    ex_end(S, link);
    gbuf_free(&S->rep.b);
    S->rep = saved_rep;
    wire_send(S->w, t, 1, &S->rep);
}

/* The replication handshake of every replica with its master. */
static void replicas_start(sim *S)
{
    for (int m = 0; m < S->cl->n_masters; m++) {
        int r = S->cl->nodes[m].replica;
        if (r < 0)
            continue;
        tconn *t = &S->repl[m];
        conn_ready(S, t, S->cl->nodes[r].ip, &S->node_port[r], m);
        ex_begin(S);
        put_lit(&S->req, "*1\r\n$4\r\nPING\r\n");
        put_lit(&S->rep, "+PONG\r\n");
        S->truth->commands[C_PING]++;
        ex_end(S, t);
        ex_begin(S);
        put_lit(&S->req, "*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n");
        put_num(&S->req, S->cl->nodes[r].port);
        put_lit(&S->rep, "+OK\r\n");
        put_lit(&S->req, "*5\r\n$8\r\nREPLCONF\r\n$4\r\ncapa\r\n$3\r\neof\r\n$4\r\ncapa\r\n$6\r\npsync2\r\n");
        put_lit(&S->rep, "+OK\r\n");
        S->truth->commands[C_REPLCONF] += 2;
        ex_end(S, t);
        ex_begin(S);
        put_lit(&S->req, "*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n");
        char line[96];
        int len = snprintf(line, sizeof line, "+FULLRESYNC %s 0\r\n$64\r\nREDIS0011",
                           S->cl->nodes[m].id);
        put_raw(&S->rep, line, (size_t)len);
        put_raw(&S->rep, (const char *)S->pattern, 55);   /* the rest of a 64-byte RDB */
        S->truth->commands[C_PSYNC]++;
        ex_end(S, t);
    }
}

/* Move the migration along with the run's progress. */
static void advance_migration(sim *S)
{
    cluster *cl = S->cl;
    if (cl->mig_count == 0 && cl->stuck_count == 0)
        return;
    double p = S->prog;
    if (p < cl->mig_begin)
        return;
    if (!S->stuck_started && cl->stuck_count) {
        S->stuck_started = 1;
        for (int i = 0; i < cl->stuck_count; i++) {
            int s = cl->stuck_first + i;
            admin_setslot(S, cl->stuck_dst, s, "IMPORTING", cl->stuck_src);
            admin_setslot(S, cl->stuck_src, s, "MIGRATING", cl->stuck_dst);
            admin_migrate(S, s, cl->stuck_src, cl->stuck_dst, &S->link_stuck, 0, 512);
        }
        cl->stuck_open = 1;
    }
    if (cl->mig_count == 0)
        return;
    double w = (cl->mig_end - cl->mig_begin) / cl->mig_count;
    for (;;) {
        if (cl->open_idx < 0) {
            if (cl->flipped >= cl->mig_count || p < cl->mig_begin + cl->flipped * w)
                return;
            int s = cl->mig_first + cl->flipped;
            admin_setslot(S, cl->mig_dst, s, "IMPORTING", cl->mig_src);
            admin_setslot(S, cl->mig_src, s, "MIGRATING", cl->mig_dst);
            cl->open_idx = cl->flipped;
            cl->moved_below = 0;
            S->mig_step = 0;
        }
        int s = cl->mig_first + cl->open_idx;
        double wb = cl->mig_begin + cl->open_idx * w;
        /* eight MIGRATE batches spread over the first 90% of the window */
        while (S->mig_step < 8 && p >= wb + w * 0.9 * S->mig_step / 8.0) {
            uint32_t lo = (uint32_t)S->mig_step * 128, hi = lo + 128;
            admin_migrate(S, s, cl->mig_src, cl->mig_dst, &S->link_mig, lo, hi);
            cl->moved_below = hi;
            S->mig_step++;
        }
        if (p < wb + w)
            return;
        /* the flip: target first, then source, then the other masters;
         * for a redirect_loop client's slot the source first, and the
         * client comes in between */
        int loopers = 0;
        for (int ci = 0; ci < S->n_clients; ci++)
            loopers += S->clients[ci].kind == K_REDIRECT_LOOP && S->clients[ci].slot == s &&
                       S->clients[ci].times < S->o->bad_times;
        if (loopers) {
            admin_setslot(S, cl->mig_src, s, "NODE", cl->mig_dst);
            cl->split_slot = s;
            cl->open_idx = -1;
            for (int ci = 0; ci < S->n_clients; ci++)
                if (S->clients[ci].kind == K_REDIRECT_LOOP && S->clients[ci].slot == s)
                    loop_turn(S, ci);
            cl->split_slot = -1;
            admin_setslot(S, cl->mig_dst, s, "NODE", cl->mig_dst);
        } else {
            admin_setslot(S, cl->mig_dst, s, "NODE", cl->mig_dst);
            admin_setslot(S, cl->mig_src, s, "NODE", cl->mig_dst);
        }
        for (int m = 0; m < cl->n_masters; m++)
            if (m != cl->mig_src && m != cl->mig_dst)
                admin_setslot(S, m, s, "NODE", cl->mig_dst);
        cl->flipped++;
        cl->open_idx = -1;
        cl->moved_below = 0;
    }
}

/* ---------------------------------------------------------------- setup */

/* Find, for every special slot, a tag "user:T" that hashes to it; and for
 * every master a quiet key (no special slot) that it owns. */
static void find_tags(sim *S)
{
    cluster *cl = S->cl;
    int need = cl->mig_count + cl->stuck_count;
    char tmp[GEN_KEY_MAX];
    for (uint32_t t = 1000000; need > 0 && t < 1000000 + 50000000u; t++) {
        memcpy(tmp, "user:", 5);
        size_t len = 5 + fmt_u64(tmp + 5, t);
        uint16_t s = key_slot(tmp, len);
        if (cl->special[s] && S->tag_of[s] == 0) {
            S->tag_of[s] = t;
            need--;
        }
    }
    if (need)
        die("internal: no tag found for a special slot");
    for (int m = 0; m < cl->n_masters; m++) {
        for (uint32_t t = 0;; t++) {
            int len = snprintf(tmp, sizeof tmp, "home:%d:%u", m, t);
            uint16_t s = key_slot(tmp, (size_t)len);
            if (!cl->special[s] && cluster_owner_at(cl, s, 0) == m) {
                memcpy(S->home_key[m], tmp, (size_t)len + 1);
                break;
            }
        }
    }
}

/* A key for client ci (suffix i) in a quiet slot, different from avoid_slot. */
static void own_key(sim *S, client *c, int ci, int i, int avoid_slot)
{
    for (uint32_t t = 0;; t++) {
        char tmp[GEN_KEY_MAX];
        int len = snprintf(tmp, sizeof tmp, "acct:%d:%d:%u", ci, i, t);
        uint16_t s = key_slot(tmp, (size_t)len);
        if (!S->cl->special[s] && s != avoid_slot) {
            memcpy(c->own_key[i], tmp, (size_t)len + 1);
            return;
        }
    }
}

/* Create the clients: good ones, then bad ones per kind; addresses
 * 127.0.x.y (x >= 2) or 10.1.x.y. */
static void make_clients(sim *S)
{
    const gen_opts *o = S->o;
    int n_bad = 0;
    for (int k = 0; k < K_KINDS; k++)
        if (k != K_MIGRATION_STUCK)
            n_bad += o->bad[k];
    S->n_clients = o->clients + n_bad;
    if (S->n_clients > 250 * 250)
        die("too many clients (at most 62500)");
    S->clients = calloc((size_t)S->n_clients, sizeof *S->clients);
    S->pool2 = o->pool < 2 ? 2 : o->pool;
    S->conns = calloc((size_t)S->n_clients * (size_t)S->cl->n_nodes * (size_t)S->pool2,
                      sizeof *S->conns);
    S->turn_table = calloc((size_t)o->clients + (size_t)n_bad * (size_t)o->bad_weight,
                           sizeof *S->turn_table);
    if (!S->clients || !S->conns || !S->turn_table)
        die("out of memory");
    int ci = 0, ordinal = 0;
    for (int k = -1; k < K_KINDS; k++) {
        int count = k < 0 ? o->clients : k == K_MIGRATION_STUCK ? 0 : o->bad[k];
        for (int i = 0; i < count; i++, ci++) {
            client *c = &S->clients[ci];
            uint32_t x = 2 + (uint32_t)ci / 250, y = 1 + (uint32_t)ci % 250;
            c->ip = o->net10 ? (10u << 24 | 1u << 16 | (x - 2) << 8 | y)
                             : (127u << 24 | x << 8 | y);
            c->kind = k;
            c->slot = -1;
            c->aware = k != K_REDIRECT_UNFOLLOWED;
            c->reader = k < 0 && o->replicas && ci % 4 == 3;
            c->next_port = (uint16_t)(32768 + rng_below(&S->r, 20000));
            c->next_j = TAG_KEYS + (uint32_t)ci * 100000u;
            if (k >= 0 && k != K_READONLY_MISSING && k != K_CROSSSLOT)
                c->slot = S->cl->mig_first + ordinal++ % S->cl->mig_count;
            if (k == K_READONLY_MISSING || k == K_CROSSSLOT) {
                own_key(S, c, ci, 0, -1);
                own_key(S, c, ci, 1, key_slot(c->own_key[0], strlen(c->own_key[0])));
                c->slot = key_slot(c->own_key[0], strlen(c->own_key[0]));
            }
            int weight = k < 0 ? 1 : o->bad_weight;
            for (int w = 0; w < weight; w++)
                S->turn_table[S->n_turns++] = ci;
        }
    }
}

/* Check that the asked-for misbehaviours can happen in this cluster. */
static void check_opts(const gen_opts *o, const cluster *cl)
{
    for (int k = 0; k < K_KINDS; k++) {
        if (!o->bad[k])
            continue;
        if (k == K_READONLY_MISSING && !o->replicas)
            die("--bad readonly_missing needs --replicas 1");
        if (k == K_MIGRATION_STUCK && cl->n_masters < 2)
            die("--bad migration_stuck needs at least 2 masters");
        if (k != K_READONLY_MISSING && k != K_CROSSSLOT && k != K_MIGRATION_STUCK &&
            cl->mig_count == 0)
            die("--bad %s needs a migration (--mig-slots > 0, 2+ masters)", gen_kind_names[k]);
    }
}

void traffic_run(const gen_opts *o, wire *w, cluster *cl, gen_truth *truth)
{
    sim S0, *S = &S0;
    memset(S, 0, sizeof *S);
    S->o = o;
    S->w = w;
    S->cl = cl;
    S->truth = truth;
    rng_seed(&S->r, o->seed);
    for (int t = 0; t < C_MIX; t++)
        S->wsum += o->weights[t];
    if (S->wsum == 0)
        die("the command mix is empty");
    check_opts(o, cl);
    S->pattern = malloc(PATTERN_LEN);
    if (!S->pattern)
        die("out of memory");
    for (size_t i = 0; i < PATTERN_LEN; i++)
        S->pattern[i] = (uint8_t)("abcdefghijklmnopqrstuvwxyz0123456789"[rng_below(&S->r, 36)]);
    S->admin_ip = o->net10 ? (10u << 24 | 250u) : (127u << 24 | 2u);
    S->admin_port = 50000;
    for (int n = 0; n < cl->n_nodes; n++)
        S->node_port[n] = (uint16_t)(40000 + 100 * n);
    find_tags(S);
    make_clients(S);
    if (S->n_turns == 0)
        die("no clients");
    /* loss only on correct clients' connections: a hole in a bad client's
     * stream could hide the very misbehaviour the truth promises */
    for (int ci = 0; ci < S->n_clients; ci++)
        if (S->clients[ci].kind < 0)
            for (int n = 0; n < cl->n_nodes; n++)
                for (int k = 0; k < S->pool2; k++)
                    conn_of(S, ci, n, k)->lossy = 1;
    replicas_start(S);

    const int64_t start_us = w->now_us;
    for (;;) {
        uint64_t written = w->file_bytes + w->out_len;
        double pb = o->bytes ? (double)written / (double)o->bytes : 0;
        double pt = o->duration_s > 0
                        ? (double)(w->now_us - 1700000000ll * 1000000ll) / (o->duration_s * 1e6)
                        : 0;
        S->prog = pb > pt ? pb : pt;
        if (S->prog >= 1.0)
            break;
        advance_migration(S);
        client_turn(S, S->turn_table[rng_below(&S->r, (uint32_t)S->n_turns)]);
        wire_wait(w, rng_range(&S->r, 0, 8));
        if (o->rate_mbps > 0) {
            /* idle until the capture clock matches the asked-for rate */
            int64_t due = start_us + (int64_t)((double)(w->file_bytes + w->out_len) /
                                               o->rate_mbps);
            if (w->now_us < due)
                w->now_us = due;
        }
    }

    /* every connection ends with FIN */
    for (size_t i = 0; i < (size_t)S->n_clients * (size_t)cl->n_nodes * (size_t)S->pool2; i++)
        wire_close(w, &S->conns[i]);
    for (int n = 0; n < cl->n_nodes; n++)
        wire_close(w, &S->admin[n]);
    wire_close(w, &S->link_mig);
    wire_close(w, &S->link_stuck);
    for (int m = 0; m < cl->n_masters; m++)
        wire_close(w, &S->repl[m]);
    wire_flush(w);

    for (int i = 0; i < cl->stuck_count; i++)
        if (o->admin || cl->stuck_asks[i])
            truth_add(S, 0, K_MIGRATION_STUCK, cl->stuck_first + i, cl->stuck_src, 1);
    for (int ci = 0; ci < S->n_clients; ci++) {
        client *c = &S->clients[ci];
        if (c->kind >= 0 && c->times < o->bad_times + (c->kind == K_MOVED_IGNORED))
            truth->bad_short++;
    }
    free(S->pattern);
    free(S->clients);
    free(S->conns);
    free(S->turn_table);
    gbuf_free(&S->req.b);
    gbuf_free(&S->rep.b);
}
