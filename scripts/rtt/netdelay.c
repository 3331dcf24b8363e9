/* netdelay.c - hold every packet of one NFQUEUE for a fixed delay, then
 * accept it, in the order the queue delivered them.
 *
 *   netdelay QUEUE_NUM DELAY_US
 *
 * The kernel has no netem here; an iptables rule "-j NFQUEUE --queue-num N"
 * hands the packets of one hook to this program, which answers NF_ACCEPT
 * DELAY_US microseconds after it received each one. Every packet gets the
 * same delay, so deadlines come in queue order, and the pending packets are a
 * FIFO: the verdicts are batch verdicts ("accept every id up to X"), which
 * the kernel applies in queue order, so the order of the packets is kept.
 *
 * Only the packet metadata is copied to user space (NFQNL_COPY_META); GSO
 * packets are queued whole (NFQA_CFG_F_GSO), as the device would see them.
 * No fail-open: a packet the kernel could not queue is dropped by the kernel
 * and shows in /proc/net/netfilter/nfnetlink_queue (queue_dropped,
 * user_dropped); the caller reads that.
 *
 * Prints "netdelay: queue N ready" on stderr once bound, and its counters on
 * stderr when it ends (SIGTERM, SIGINT); pending packets are accepted at once
 * then (late_us: how long after its due time a packet was accepted), and on
 * SIGUSR1 the lateness since the previous SIGUSR1 (or the start), e.g. of
 * the packets of a capture window only; a stall of 50 ms or more (ppoll
 * waking late, a slow verdict) is printed when it happens. Exit status 0 if nothing failed, 1 otherwise.
 *
 * Built from the libnetfilter_queue API (libnetfilter_queue.h, its doxygen
 * documentation); build:
 *   gcc -std=c11 -O2 -Wall -Wextra -Werror -o netdelay netdelay.c \
 *       -lnetfilter_queue -lnfnetlink
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <sys/prctl.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <linux/netfilter.h>
#include <libnfnetlink/libnfnetlink.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define RING (1u << 18)            /* pending packets, more than QUEUE_MAXLEN */
#define QUEUE_MAXLEN 131072u       /* kernel queue length (default 1024) */
#define RCVBUF (64 * 1024 * 1024)  /* netlink receive buffer, bytes */

struct pending {
    uint32_t id;
    int64_t due_ns;
};

static struct pending ring[RING];
static uint32_t head, tail;        /* ring[head..tail) pending, indices mod RING */
static int64_t delay_ns;
static volatile sig_atomic_t stop, mark;
static int64_t start_ns;

static struct {
    uint64_t packets, verdict_calls, verdict_fail, recv_fail, enobufs,
        ring_full, handle_fail, no_hdr;
    uint32_t max_pending;
    int64_t max_late_ns;            /* verdict later than its due time */
    int64_t sum_late_ns;
    uint64_t late_1ms;              /* packets released 1 ms or more late */
} c;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        mark = 1;
    else
        stop = 1;
}

/* lateness since the last mark (SIGUSR1), e.g. during a capture only */
static struct {
    uint64_t packets, late_1ms;
    int64_t max_late_ns, sum_late_ns;
} w;
static int64_t mark_ns;

static void print_window(unsigned long qnum, long long delay_us)
{
    int64_t t = now_ns();
    fprintf(stderr, "netdelay: queue %lu delay %lld us: mark at %.3f s: since %.3f s: packets %" PRIu64
            " late_us mean %" PRId64 " max %" PRId64 " late>=1ms %" PRIu64 "\n",
            qnum, delay_us, (t - start_ns) / 1e9, (mark_ns - start_ns) / 1e9, w.packets,
            w.packets ? w.sum_late_ns / (int64_t)w.packets / 1000 : 0, w.max_late_ns / 1000,
            w.late_1ms);
    memset(&w, 0, sizeof w);
    mark_ns = t;
}

/* accept every pending packet up to and including ring[last] */
static void accept_upto(struct nfq_q_handle *qh, uint32_t last_index)
{
    c.verdict_calls++;
    int64_t t0 = now_ns();
    if (nfq_set_verdict_batch(qh, ring[last_index % RING].id, NF_ACCEPT) < 0)
        c.verdict_fail++;
    int64_t took = now_ns() - t0;
    if (took >= 50000000)
        fprintf(stderr, "netdelay: a verdict took %" PRId64 " us, %.3f s after start\n",
                took / 1000, (t0 - start_ns) / 1e9);
}

/* accept the packets due by `now` (all of them when now < 0) */
static void release_due(struct nfq_q_handle *qh, int64_t now)
{
    uint32_t last = head, n = 0;
    while (head != tail && (now < 0 || ring[head % RING].due_ns <= now)) {
        if (now >= 0) {
            int64_t late = now - ring[head % RING].due_ns;
            if (late > c.max_late_ns)
                c.max_late_ns = late;
            c.sum_late_ns += late;
            if (late >= 1000000)
                c.late_1ms++;
            w.packets++;
            w.sum_late_ns += late;
            if (late > w.max_late_ns)
                w.max_late_ns = late;
            if (late >= 1000000)
                w.late_1ms++;
            if (late >= 50000000)
                fprintf(stderr, "netdelay: packet id %" PRIu32 " accepted %" PRId64
                        " us late, %.3f s after start\n", ring[head % RING].id,
                        late / 1000, (now - start_ns) / 1e9);
        }
        last = head++;
        n++;
    }
    if (n)
        accept_upto(qh, last);
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg,
                     struct nfq_data *nfa, void *data)
{
    (void)msg;
    (void)data;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
    if (!ph) {
        c.no_hdr++;
        return 0;
    }
    uint32_t id = ntohl(ph->packet_id);
    c.packets++;
    if (tail - head >= RING) {
        /* cannot hold it: let everything pending go now, order kept */
        c.ring_full++;
        release_due(qh, -1);
    }
    ring[tail % RING].id = id;
    ring[tail % RING].due_ns = now_ns() + delay_ns;
    tail++;
    if (tail - head > c.max_pending)
        c.max_pending = tail - head;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: netdelay QUEUE_NUM DELAY_US\n");
        return 2;
    }
    char *end;
    unsigned long qnum = strtoul(argv[1], &end, 10);
    if (*end || qnum > 65535) {
        fprintf(stderr, "netdelay: bad queue number '%s'\n", argv[1]);
        return 2;
    }
    long long delay_us = strtoll(argv[2], &end, 10);
    if (*end || delay_us < 0 || delay_us > 10000000) {
        fprintf(stderr, "netdelay: bad delay '%s' (0..10000000 us)\n", argv[2]);
        return 2;
    }
    delay_ns = delay_us * 1000;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;      /* no SA_RESTART: ppoll returns EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);

    /* on a busy 2-core machine the default scheduling makes the delay late
     * by milliseconds: real-time priority and no timer slack, if allowed */
    struct sched_param sp = { .sched_priority = 10 };
    if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
        perror("netdelay: SCHED_FIFO (continuing without)");
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

    struct nfq_handle *h = nfq_open();
    if (!h) {
        perror("netdelay: nfq_open");
        return 1;
    }
    struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)qnum, on_packet, NULL);
    if (!qh) {
        perror("netdelay: nfq_create_queue (queue taken, or not root?)");
        nfq_close(h);
        return 1;
    }
    if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
        perror("netdelay: nfq_set_mode");
        return 1;
    }
    if (nfq_set_queue_maxlen(qh, QUEUE_MAXLEN) < 0) {
        perror("netdelay: nfq_set_queue_maxlen");
        return 1;
    }
    if (nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0)
        fprintf(stderr, "netdelay: NFQA_CFG_F_GSO not supported, GSO packets are segmented\n");
    unsigned int got = nfnl_rcvbufsiz(nfq_nfnlh(h), RCVBUF);
    int fd = nfq_fd(h);
    start_ns = mark_ns = now_ns();
    fprintf(stderr, "netdelay: queue %lu ready, delay %lld us, maxlen %u, rcvbuf %u\n",
            qnum, delay_us, QUEUE_MAXLEN, got);

    static char buf[65536 + 4096];
    while (!stop) {
        struct timespec to, *top = NULL;
        if (head != tail) {
            int64_t wait = ring[head % RING].due_ns - now_ns();
            if (wait < 0)
                wait = 0;
            to.tv_sec = wait / 1000000000;
            to.tv_nsec = wait % 1000000000;
            top = &to;
        }
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int64_t p0 = now_ns();
        int r = ppoll(&pfd, 1, top, NULL);
        int64_t p1 = now_ns();
        if (top && p1 - p0 - (int64_t)(to.tv_sec * 1000000000 + to.tv_nsec) >= 50000000)
            fprintf(stderr, "netdelay: ppoll asked for %ld us, returned %d after %" PRId64
                    " us, %.3f s after start\n", (long)(to.tv_sec * 1000000 + to.tv_nsec / 1000),
                    r, (p1 - p0) / 1000, (p0 - start_ns) / 1e9);
        if (r < 0 && errno != EINTR) {
            perror("netdelay: ppoll");
            break;
        }
        if (r > 0) {
            /* drain what is there, without blocking */
            for (;;) {
                ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n < 0) {
                    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                        break;
                    if (errno == ENOBUFS) {
                        c.enobufs++;   /* messages lost: their packets stay queued */
                        continue;
                    }
                    c.recv_fail++;
                    perror("netdelay: recv");
                    break;
                }
                if (nfq_handle_packet(h, buf, (int)n) < 0)
                    c.handle_fail++;
                if (now_ns() - p1 >= 50000000) {
                    fprintf(stderr, "netdelay: draining the socket for 50 ms, %.3f s after start\n",
                            (p1 - start_ns) / 1e9);
                    break;   /* let due packets go */
                }
            }
        }
        release_due(qh, now_ns());
        if (mark) {
            mark = 0;
            print_window(qnum, delay_us);
        }
    }
    release_due(qh, -1);

    nfq_destroy_queue(qh);
    nfq_close(h);
    uint64_t failures = c.verdict_fail + c.recv_fail + c.enobufs + c.ring_full +
                        c.handle_fail + c.no_hdr;
    fprintf(stderr,
            "netdelay: queue %lu delay %lld us: packets %" PRIu64 " verdict_calls %" PRIu64
            " max_pending %" PRIu32 " late_us mean %" PRId64 " max %" PRId64
            " late>=1ms %" PRIu64 " failures %" PRIu64
            " (verdict %" PRIu64 " recv %" PRIu64 " enobufs %" PRIu64 " ring_full %" PRIu64
            " handle %" PRIu64 " no_hdr %" PRIu64 ")\n",
            qnum, delay_us, c.packets, c.verdict_calls, c.max_pending,
            c.packets ? c.sum_late_ns / (int64_t)c.packets / 1000 : 0, c.max_late_ns / 1000,
            c.late_1ms, failures, c.verdict_fail, c.recv_fail, c.enobufs,
            c.ring_full, c.handle_fail, c.no_hdr);
    return failures ? 1 : 0;
}
