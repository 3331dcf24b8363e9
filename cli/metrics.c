/*
 * metrics.c - `live --metrics ADDR:PORT`: the live counts in the Prometheus
 * text exposition format (version 0.0.4: "# HELP" and "# TYPE" before each
 * metric's samples, counters named *_total, label values with \, " and
 * newline escaped, "\n" after every line), served over HTTP/1.0 to GET
 * /metrics (and /).
 *
 * A thread of its own serves one scrape at a time: it waits on the listening
 * socket (200 ms at a time, so that a stop is seen), reads the request with a
 * 2 s deadline, copies the latest counts (metrics_publish: the capture
 * thread holds the lock only for a memcpy, never while a client is slow) and
 * writes the answer with the same deadline. It blocks every signal, which
 * stay with the capture thread (stop.c).
 *
 * Label cardinality is bounded: kinds are fixed lists, nodes at most
 * LIVE_MAX_NODES and then one "other".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define METRICS_POLL_MS 200
#define METRICS_IO_MS 2000       /* a scraper gets this long to ask and to read */
#define METRICS_REQUEST_MAX 8192
#define METRICS_BODY_MAX (256u << 10)

struct metrics_server {
    int fd;                      /* listening socket */
    pthread_t thread;
    atomic_int stop;
    pthread_mutex_t lock;        /* guards counts */
    live_counts counts;          /* the latest published */
    live_counts scratch;         /* the thread's copy */
    char *body;                  /* METRICS_BODY_MAX, the thread's */
};

/* ---------------------------------------------------------------- the text */

/* A growing text in a fixed buffer (cut at the end, length counted on). */
typedef struct text {
    char *p;
    size_t size, len;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(t->len < t->size ? t->p + t->len : NULL, t->len < t->size ? t->size - t->len : 0,
                  fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

/* A label value with \, " and newline escaped (and other control bytes
 * dropped: they have no place in an address). */
static void put_label(text *t, const char *v)
{
    for (; *v; v++) {
        unsigned char ch = (unsigned char)*v;
        if (ch == '\\' || ch == '"')
            put(t, "\\%c", ch);
        else if (ch == '\n')
            put(t, "\\n");
        else if (ch >= 0x20 && ch != 0x7f)
            put(t, "%c", ch);
    }
}

/* "# HELP" and "# TYPE" lines of a metric. */
static void family(text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(text *t, const char *name, uint64_t v)
{
    put(t, "%s %" PRIu64 "\n", name, v);
}

/* name{label="value"} v */
static void sample1(text *t, const char *name, const char *label, const char *value, uint64_t v)
{
    put(t, "%s{%s=\"", name, label);
    put_label(t, value);
    put(t, "\"} %" PRIu64 "\n", v);
}

static void format_node_redirects(text *t, const live_counts *c)
{
    static const char name[] = "slotscope_node_redirects_total";
    family(t, name, "counter", "Redirect replies by the node that sent them (observed address) "
                               "and kind; nodes beyond the first 64 are node=\"other\".");
    for (size_t i = 0; i <= c->n_nodes; i++) {
        const char *node = i < c->n_nodes ? c->nodes[i].node : "other";
        const uint64_t *r = i < c->n_nodes ? c->nodes[i].redirects : c->other_nodes;
        for (int k = 0; k < LIVE_REDIRECT_KINDS; k++) {
            if (i == c->n_nodes && r[k] == 0)
                continue; /* no "other" series until there is one */
            put(t, "%s{node=\"", name);
            put_label(t, node);
            put(t, "\",kind=\"%s\"} %" PRIu64 "\n", live_redirect_names[k], r[k]);
        }
    }
}

size_t metrics_format(const live_counts *c, char *out, size_t size)
{
    text t = {out, size, 0};
    family(&t, "slotscope_packets_total", "counter", "Packets captured.");
    sample(&t, "slotscope_packets_total", c->packets);
    family(&t, "slotscope_bytes_total", "counter", "Captured bytes of those packets.");
    sample(&t, "slotscope_bytes_total", c->bytes);
    family(&t, "slotscope_kernel_drops_total", "counter", "Packets the kernel dropped (pcap_stats).");
    sample(&t, "slotscope_kernel_drops_total", c->kernel_drops);
    family(&t, "slotscope_interface_drops_total", "counter", "Packets the interface dropped.");
    sample(&t, "slotscope_interface_drops_total", c->if_drops);
    family(&t, "slotscope_commands_total", "counter", "Commands paired with their reply.");
    sample(&t, "slotscope_commands_total", c->commands);
    family(&t, "slotscope_redirects_total", "counter", "Redirect replies by kind.");
    for (int k = 0; k < LIVE_REDIRECT_KINDS; k++)
        sample1(&t, "slotscope_redirects_total", "kind", live_redirect_names[k], c->redirects[k]);
    format_node_redirects(&t, c);
    family(&t, "slotscope_findings_total", "counter", "Distinct findings by kind.");
    for (int k = 0; k < AN_FINDING_KINDS; k++)
        sample1(&t, "slotscope_findings_total", "kind", an_finding_name((an_finding_kind)k),
                c->findings_by_kind[k]);
    family(&t, "slotscope_finding_occurrences_total", "counter",
           "Occurrences of the findings by kind (their counts summed).");
    for (int k = 0; k < AN_FINDING_KINDS; k++)
        sample1(&t, "slotscope_finding_occurrences_total", "kind",
                an_finding_name((an_finding_kind)k), c->occurrences_by_kind[k]);
    family(&t, "slotscope_saved_packets_total", "counter", "Packets written by -w.");
    sample(&t, "slotscope_saved_packets_total", c->saved_packets);
    family(&t, "slotscope_saved_lost_total", "counter",
           "Packets -w could not write (after a write error).");
    sample(&t, "slotscope_saved_lost_total", c->saved_lost);
    if (size)
        out[t.len < size ? t.len : size - 1] = 0;
    return t.len;
}

/* ---------------------------------------------------------------- HTTP */

/* Milliseconds left before deadline (CLOCK_MONOTONIC), 0 when past. */
static int ms_left(const struct timespec *deadline)
{
    struct timespec now;
    long long ms;
    clock_gettime(CLOCK_MONOTONIC, &now);
    ms = (long long)(deadline->tv_sec - now.tv_sec) * 1000 +
         (deadline->tv_nsec - now.tv_nsec) / 1000000;
    return ms > 0 ? (int)ms : 0;
}

/* Read the request head (up to the blank line) into buf. Its length, or -1. */
static ssize_t read_request(int fd, char *buf, size_t size, const struct timespec *deadline)
{
    size_t len = 0;
    while (len + 1 < size) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        ssize_t n;
        int left = ms_left(deadline);
        if (left == 0 || poll(&pf, 1, left) <= 0)
            return -1;
        n = recv(fd, buf + len, size - 1 - len, 0);
        if (n <= 0)
            return n == 0 && len ? (ssize_t)len : -1;
        len += (size_t)n;
        buf[len] = 0;
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
            return (ssize_t)len;
    }
    return (ssize_t)len;
}

/* Write all of p, within the deadline. 0, or -1. */
static int write_all(int fd, const char *p, size_t len, const struct timespec *deadline)
{
    while (len) {
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        ssize_t n;
        int left = ms_left(deadline);
        if (left == 0 || poll(&pf, 1, left) <= 0)
            return -1;
        n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* An answer with a plain-text body. */
static void respond(int fd, const char *status, const char *body, size_t len,
                    const struct timespec *deadline)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, len);
    if (write_all(fd, head, (size_t)n, deadline) == 0 && len)
        write_all(fd, body, len, deadline);
}

/* One scrape on a connected socket. */
static void serve_one(metrics_server *m, int fd)
{
    char req[METRICS_REQUEST_MAX];
    struct timespec deadline;
    size_t len;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += METRICS_IO_MS / 1000;
    if (read_request(fd, req, sizeof req, &deadline) <= 0)
        return;
    if (strncmp(req, "GET ", 4) != 0) {
        respond(fd, "405 Method Not Allowed", "GET /metrics\n", 13, &deadline);
        return;
    }
    if (strncmp(req + 4, "/metrics ", 9) != 0 && strncmp(req + 4, "/metrics?", 9) != 0 &&
        strncmp(req + 4, "/ ", 2) != 0) {
        respond(fd, "404 Not Found", "GET /metrics\n", 13, &deadline);
        return;
    }
    pthread_mutex_lock(&m->lock);
    memcpy(&m->scratch, &m->counts, sizeof m->scratch);
    pthread_mutex_unlock(&m->lock);
    len = metrics_format(&m->scratch, m->body, METRICS_BODY_MAX);
    if (len >= METRICS_BODY_MAX)
        len = METRICS_BODY_MAX - 1;
    respond(fd, "200 OK", m->body, len, &deadline);
}

static void *serve(void *arg)
{
    metrics_server *m = arg;
    while (!atomic_load(&m->stop)) {
        struct pollfd pf = {.fd = m->fd, .events = POLLIN};
        int fd;
        if (poll(&pf, 1, METRICS_POLL_MS) <= 0)
            continue;
        fd = accept(m->fd, NULL, NULL);
        if (fd < 0)
            continue;
        if (fcntl(fd, F_SETFL, O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
            close(fd);
            continue;
        }
        serve_one(m, fd);
        close(fd);
    }
    return NULL;
}

/* ---------------------------------------------------------------- setup */

/* spec into a socket address: 0, or -1 when it is not ADDR:PORT, [V6]:PORT,
 * :PORT or PORT. */
static int parse_spec(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[64] = "127.0.0.1";
    const char *colon = strrchr(spec, ':'), *port_text = colon ? colon + 1 : spec;
    char *end;
    long port = strtol(port_text, &end, 10);
    if (!*port_text || *end || port < 1 || port > 65535)
        return -1;
    if (colon && colon > spec) {
        size_t hl = (size_t)(colon - spec);
        const char *h = spec;
        if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
            h++;
            hl -= 2;
        }
        if (hl == 0 || hl >= sizeof host)
            return -1;
        memcpy(host, h, hl);
        host[hl] = 0;
    }
    memset(ss, 0, sizeof *ss);
    if (strchr(host, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        *len = sizeof *a;
        return inet_pton(AF_INET6, host, &a->sin6_addr) == 1 ? 0 : -1;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    *len = sizeof *a;
    return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

/* The listening socket for spec: its descriptor, or -1 with err. */
static int listen_on(const char *spec, char *err, size_t err_size)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1, fd;
    if (parse_spec(spec, &ss, &len) != 0) {
        snprintf(err, err_size, "bad --metrics '%s' (ADDR:PORT, [V6]:PORT or PORT; "
                 "ADDR 127.0.0.1 when not given)", spec);
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 16) != 0) {
        snprintf(err, err_size, "--metrics '%s': %s", spec, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

metrics_server *metrics_start(const char *spec, char *err, size_t err_size)
{
    metrics_server *m = calloc(1, sizeof *m);
    sigset_t all, old;
    int rc;
    if (!m || !(m->body = malloc(METRICS_BODY_MAX))) {
        free(m);
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    m->fd = listen_on(spec, err, err_size);
    if (m->fd < 0) {
        free(m->body);
        free(m);
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    atomic_init(&m->stop, 0);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits the mask */
    rc = pthread_create(&m->thread, NULL, serve, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, err_size, "--metrics: cannot start its thread: %s", strerror(rc));
        close(m->fd);
        pthread_mutex_destroy(&m->lock);
        free(m->body);
        free(m);
        return NULL;
    }
    return m;
}

void metrics_publish(metrics_server *m, const live_counts *c)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    memcpy(&m->counts, c, sizeof m->counts);
    pthread_mutex_unlock(&m->lock);
}

void metrics_stop(metrics_server *m)
{
    if (!m)
        return;
    atomic_store(&m->stop, 1);
    pthread_join(m->thread, NULL);
    close(m->fd);
    pthread_mutex_destroy(&m->lock);
    free(m->body);
    free(m);
}
