/*
 * modes.c - how many replies a request gets: the client-side modes that
 * change it (MULTI/EXEC, CLIENT REPLY OFF/ON/SKIP, and the HELLO or CLIENT
 * REPLY queued in a transaction, which act only when EXEC runs them).
 *
 * Only requests of a special kind, or on a connection in a mode, come here
 * (request_done settles the rest inline).
 */
#include <stddef.h>
#include <stdlib.h>

#include "resp/pair_internal.h"

/* ---------------------------------------------------------------- transactions
 *
 * Inside MULTI the server queues commands (+QUEUED) and runs them at EXEC,
 * which sends an array header with the count of queued commands, then each
 * command's reply as it runs (observed with redis-server 7.0; tests/fixtures/
 * resp/txmodes.pcap). A queued CLIENT REPLY or HELLO therefore acts at EXEC,
 * and only if EXEC runs the transaction (not after DISCARD, -EXECABORT or a
 * failed WATCH's null):
 *
 *   - CLIENT REPLY OFF silences the replies of the commands after it in the
 *     transaction, and everything after EXEC: EXEC's array then carries fewer
 *     elements than it declares ("*2" and nothing for OFF + SET).
 *   - CLIENT REPLY ON (itself answered +OK) lets them through again. When
 *     replies were off before MULTI, EXEC's header is not sent, and what ON
 *     lets through arrives as loose top-level replies.
 *   - CLIENT REPLY SKIP skips the first command after EXEC, not one inside.
 *   - HELLO switches the protocol from its own reply on: EXEC's header is in
 *     the old protocol, HELLO's element and the rest in the new one.
 *
 * The effects are simulated as commands are queued (tx_queue) and applied
 * when EXEC is decoded (tx_exec): requests pipelined after EXEC need the
 * client's modes before EXEC's reply can tell whether the transaction ran.
 * If it did not, the modes are put back (tx_undo); requests already decoded
 * after EXEC were counted under the wrong modes, so they lose the pairing. */

/* MULTI: an empty transaction, starting from the client's reply mode (which
 * nothing can change until EXEC: the commands that would are queued). */
static void tx_reset(rc_conn *c)
{
    c->tx_queued = 0;
    c->tx_sent = 0;
    c->tx_off = c->reply_off;
    c->tx_skip_after = 0;
    c->tx_hello = 0;
    c->tx_modes = 0;
}

/* A command is queued (e->kind is still its own kind): what it will do when
 * EXEC runs it. Mirrors clientCommand's REPLY branch and the reply gate
 * (prepareClientToWrite) of Redis. */
static void tx_queue(rc_conn *c, const rq_entry *e)
{
    if (c->tx_queued < UINT32_MAX)
        c->tx_queued++;
    switch (e->kind) {
    case RQK_REPLY_OFF:
        c->tx_off = 1;
        c->tx_modes = 1;
        return; /* never answered */
    case RQK_REPLY_ON:
        c->tx_off = 0;
        c->tx_modes = 1;
        break; /* answered +OK, even when replies were off */
    case RQK_REPLY_SKIP:
        if (!c->tx_off)
            c->tx_skip_after = 1;
        c->tx_modes = 1;
        return; /* never answered */
    case RQK_HELLO:
        if (e->hello_proto)
            c->tx_hello = e->hello_proto;
        if (c->tx_off)
            return;
        break;
    default:
        if (c->tx_off)
            return;
        break;
    }
    if (c->tx_sent < c->tx_queued)
        c->tx_sent++;
}

/* EXEC closes a transaction: how it is answered, and the client's modes
 * after it (taken to run; tx_undo when its reply says otherwise).
 * skip_this: EXEC itself is skipped by a CLIENT REPLY SKIP. */
static void tx_exec(rc_conn *c, rq_entry *e, uint8_t skip_this)
{
    e->hello_proto = c->tx_hello;
    if (!c->reply_off && !skip_this) { /* one array, maybe short */
        e->nreply = 1;
        if (c->tx_sent < c->tx_queued) {
            e->tx |= TXF_TRIM;
            e->tx_elems.queued = c->tx_queued;
            e->tx_elems.sent = c->tx_sent;
        }
    } else { /* no header: only what CLIENT REPLY ON let through */
        e->nreply = c->tx_sent;
        e->tx |= TXF_LOOSE;
        if (e->nreply == 0 && e->hello_proto) /* nothing will come to tell */
            c->resp3 = (e->hello_proto == 3);
    }
    if (c->tx_modes) {
        e->tx |= TXF_MODES;
        if (c->reply_off)
            e->tx |= TXF_PREV_OFF;
        c->reply_off = c->tx_off;
        c->skip_next = c->tx_skip_after;
    }
}

/* EXEC's reply says the transaction did not run (-EXECABORT, or a null when
 * a WATCHed key changed): none of its modes took effect. */
void tx_undo(rc_conn *c, const rq_slot *h)
{
    if (!(h->tx & TXF_MODES))
        return;
    c->reply_off = (uint8_t)((h->tx & TXF_PREV_OFF) != 0);
    c->skip_next = 0;
    if (c->count <= 1)
        return; /* nothing decoded after EXEC: exact */
    /* Requests after EXEC were given the modes it would have set: how many
     * replies they get is not known any more. */
    c->st.out_of_sync = 1;
    c->synced = 0;
    c->reply_since_loss = 0;
    for (uint32_t i = 1; i < c->count; i++)
        ring_at(c, i)->uncertain = 1;
}

/* How many replies a request gets, applying the client-side modes it changes
 * (MULTI, CLIENT REPLY, and at EXEC those of the queued commands). Mirrors
 * processCommand / clientCommand in Redis. */
void request_modes(rc_conn *c, rq_entry *e)
{
    uint8_t skip_this = c->skip_next;
    c->skip_next = 0;
    e->nreply = 1;
    e->dynamic = 0;
    e->cmd.in_multi = 0;
    if (e->kind == RQK_NORMAL && !c->in_multi) { /* most requests: no modes */
        if (c->reply_off || skip_this)
            e->nreply = 0;
        return;
    }
    if (c->in_multi && e->kind != RQK_EXEC && e->kind != RQK_DISCARD &&
        e->kind != RQK_MULTI && e->kind != RQK_WATCH && e->kind != RQK_QUIT &&
        e->kind != RQK_RESET) {
        tx_queue(c, e);
        e->kind = RQK_QUEUED; /* +QUEUED or an error; effects only at EXEC */
        e->cmd.in_multi = 1;
    }
    switch (e->kind) {
    case RQK_MULTI:
        e->cmd.in_multi = c->in_multi;
        if (!c->in_multi) /* MULTI inside MULTI is an error, not a new one */
            tx_reset(c);
        c->in_multi = 1;
        break;
    case RQK_EXEC:
        e->tx = 0; /* read for EXEC only: other kinds leave it stale */
        if (c->in_multi) {
            c->in_multi = 0;
            tx_exec(c, e, skip_this);
            return;
        }
        break; /* EXEC without MULTI: an error */
    case RQK_DISCARD:
        c->in_multi = 0;
        break;
    case RQK_SUB:
        if (e->cmd.req.argc >= 2) {
            e->nreply = e->cmd.req.argc - 1;
        } else if (e->sub_word >= SW_UNSUB) {
            e->dynamic = 1; /* one confirmation per current subscription */
        } else {
            e->kind = RQK_NORMAL; /* SUBSCRIBE without channels: an arity error */
        }
        break;
    case RQK_REPLY_ON:
        c->reply_off = 0;
        return; /* always answered */
    case RQK_REPLY_OFF:
        c->reply_off = 1;
        e->nreply = 0;
        return;
    case RQK_REPLY_SKIP:
        if (!c->reply_off)
            c->skip_next = 1;
        e->nreply = 0;
        return;
    case RQK_RESET:
        c->in_multi = 0;
        c->reply_off = 0; /* cleared before RESET replies */
        break;
    case RQK_REPLCONF_ACK:
        e->nreply = 0;
        return;
    default:
        break;
    }
    if (c->reply_off || skip_this) {
        e->nreply = 0;
        e->dynamic = 0;
    }
}
