/*
 * addr.c - IPv4/IPv6 addresses and endpoints: format, parse, compare.
 *
 * Text forms follow RFC 5952 for IPv6 ("::1", "[::1]:6379") and the dotted quad
 * for IPv4. Formatting and parsing go through inet_ntop/inet_pton (POSIX), so
 * the two are exact inverses.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"

/* Copy src into buf (size bytes, NUL-terminated, truncated to fit) and return
 * the length written. */
static size_t copy_text(char *buf, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (size == 0)
        return 0;
    if (n >= size)
        n = size - 1;
    memcpy(buf, src, n);
    buf[n] = '\0';
    return n;
}

/* Format an address as text: "127.0.0.1", "::1", or "?" for a bad family. */
size_t cap_addr_format(const cap_addr *addr, char *buf, size_t size)
{
    char text[INET6_ADDRSTRLEN];
    const char *ok = NULL;
    if (addr->family == 4)
        ok = inet_ntop(AF_INET, addr->bytes, text, sizeof text);
    else if (addr->family == 6)
        ok = inet_ntop(AF_INET6, addr->bytes, text, sizeof text);
    return copy_text(buf, size, ok ? text : "?");
}

/* Format an endpoint: "127.0.0.1:6379" or "[::1]:6379". */
size_t cap_endpoint_format(const cap_endpoint *ep, char *buf, size_t size)
{
    char host[INET6_ADDRSTRLEN];
    char text[CAP_ENDPOINT_STRLEN];
    cap_addr_format(&ep->addr, host, sizeof host);
    if (ep->addr.family == 6)
        snprintf(text, sizeof text, "[%s]:%u", host, (unsigned)ep->port);
    else
        snprintf(text, sizeof text, "%s:%u", host, (unsigned)ep->port);
    return copy_text(buf, size, text);
}

/* Parse "127.0.0.1" or an IPv6 text form into out. 0 on success, -1 if not an
 * address. */
int cap_addr_parse(const char *text, cap_addr *out)
{
    cap_addr a;
    memset(&a, 0, sizeof a);
    if (text == NULL)
        return -1;
    if (inet_pton(AF_INET, text, a.bytes) == 1) {
        a.family = 4;
    } else if (inet_pton(AF_INET6, text, a.bytes) == 1) {
        a.family = 6;
    } else {
        return -1;
    }
    *out = a;
    return 0;
}

/* Parse a decimal port 0..65535 (digits only). 0 on success, -1 otherwise. */
static int parse_port(const char *text, uint16_t *port)
{
    unsigned long v = 0;
    if (*text == '\0' || strlen(text) > 5)
        return -1;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

/* Parse "host:port", "[v6]:port" or "v6:port" (the port follows the last
 * colon). 0 on success, -1 if invalid. */
int cap_endpoint_parse(const char *text, cap_endpoint *out)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon;
    const char *start = text;
    size_t len;
    cap_endpoint ep;
    memset(&ep, 0, sizeof ep);
    if (text == NULL || (colon = strrchr(text, ':')) == NULL)
        return -1;
    len = (size_t)(colon - text);
    if (text[0] == '[') {
        /* "[v6]:port": the bracket must close right before the colon. */
        if (len < 2 || text[len - 1] != ']')
            return -1;
        start = text + 1;
        len -= 2;
    }
    if (len == 0 || len >= sizeof host)
        return -1;
    memcpy(host, start, len);
    host[len] = '\0';
    if (cap_addr_parse(host, &ep.addr) != 0 || parse_port(colon + 1, &ep.port) != 0)
        return -1;
    *out = ep;
    return 0;
}

/* 1 when both addresses have the same family and bytes. */
int cap_addr_equal(const cap_addr *a, const cap_addr *b)
{
    return a->family == b->family && memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0;
}

/* 1 when both endpoints have the same address and port. */
int cap_endpoint_equal(const cap_endpoint *a, const cap_endpoint *b)
{
    return a->port == b->port && cap_addr_equal(&a->addr, &b->addr);
}

/* Name of a cap_close_reason, for reports. */
const char *cap_close_reason_name(int reason)
{
    static const char *const names[] = {"fin", "rst", "idle", "evicted", "end", "reused"};
    if (reason < 0 || (size_t)reason >= sizeof names / sizeof names[0])
        return "?";
    return names[reason];
}

/* Name of a cap_side_source, for reports. */
const char *cap_side_source_name(int side_source)
{
    static const char *const names[] = {"syn",     "port",     "shape",      "guess",
                                        "known",   "cluster",  "redirect",   "replication"};
    if (side_source < 0 || (size_t)side_source >= sizeof names / sizeof names[0])
        return "?";
    return names[side_source];
}
