/*
 * error.c - what an error reply means.
 *
 * Redis errors start with an upper-case code word ("-ERR ...", "-WRONGTYPE
 * ...", "-MOVED 3999 127.0.0.1:6381"). The cluster ones are described in the
 * Redis Cluster specification ("Redirection and resharding"): MOVED and ASK
 * carry "<slot> <endpoint>", where the endpoint is "host:port" with the port
 * after the last colon, so an IPv6 address needs no brackets (Redis writes
 * none; some proxies do). Since Redis 7 the host part may be a hostname, or
 * empty / "?" when the node does not know how it is reached
 * (cluster-preferred-endpoint-type unknown-endpoint), e.g. "MOVED 3999 :6381".
 *
 * The text is hostile: every number is range-checked, the host length is
 * capped, anything malformed yields the class with redir->slot = -1.
 */
#include "resp/resp_internal.h"

const char *resp_err_name(resp_err_class c)
{
    switch (c) {
    case RESP_ERR_NONE: return "";
    case RESP_ERR_MOVED: return "MOVED";
    case RESP_ERR_ASK: return "ASK";
    case RESP_ERR_TRYAGAIN: return "TRYAGAIN";
    case RESP_ERR_CROSSSLOT: return "CROSSSLOT";
    case RESP_ERR_CLUSTERDOWN: return "CLUSTERDOWN";
    case RESP_ERR_READONLY: return "READONLY";
    case RESP_ERR_NOAUTH: return "NOAUTH";
    case RESP_ERR_WRONGTYPE: return "WRONGTYPE";
    case RESP_ERR_LOADING: return "LOADING";
    case RESP_ERR_EXECABORT: return "EXECABORT";
    case RESP_ERR_OTHER: return "ERR";
    default: return "ERR";
    }
}

/* Parse an unsigned decimal of 1..maxdig digits with no sign and no leading
 * zero (except "0"). Returns -1 if malformed. */
static long parse_small_uint(const char *p, size_t n, size_t maxdig)
{
    if (n == 0 || n > maxdig || (p[0] == '0' && n > 1))
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

/* Parse "<slot> <host>:<port>" into r. Returns 0 on success. */
static int parse_redirect(const char *p, size_t n, resp_redirect *r)
{
    const char *sp = memchr(p, ' ', n);
    if (sp == NULL)
        return -1;
    long slot = parse_small_uint(p, (size_t)(sp - p), 5);
    if (slot < 0 || slot > 16383)
        return -1;
    const char *ep = sp + 1;
    size_t el = n - (size_t)(ep - p);
    const char *colon = NULL;
    for (size_t i = 0; i < el; i++) {
        unsigned char ch = (unsigned char)ep[i];
        if (ch <= 0x20 || ch >= 0x7f)
            return -1; /* spaces, controls, trailing junk */
        if (ch == ':')
            colon = ep + i;
    }
    if (colon == NULL)
        return -1;
    long port = parse_small_uint(colon + 1, el - (size_t)(colon + 1 - ep), 5);
    if (port < 1 || port > 65535)
        return -1;
    const char *host = ep;
    size_t hl = (size_t)(colon - ep);
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        host++;
        hl -= 2;
    }
    if (hl == 1 && host[0] == '?')
        hl = 0; /* Redis 7: endpoint unknown */
    if (hl >= sizeof(r->host))
        return -1;
    for (size_t i = 0; i < hl; i++)
        if (host[i] == '[' || host[i] == ']')
            return -1;
    memcpy(r->host, host, hl);
    r->host[hl] = '\0';
    r->slot = (int32_t)slot;
    r->port = (uint16_t)port;
    return 0;
}

/* Does the code word w (length wl) equal the upper-case literal lit? */
static int word_is(const char *w, size_t wl, const char *lit)
{
    size_t ll = strlen(lit);
    return wl == ll && memcmp(w, lit, ll) == 0;
}

resp_err_class resp_classify_error(const char *text, size_t len, resp_redirect *redir)
{
    if (redir != NULL) {
        redir->slot = -1;
        redir->port = 0;
        redir->host[0] = '\0';
    }
    if (text == NULL || len == 0)
        return RESP_ERR_OTHER;
    const char *sp = memchr(text, ' ', len);
    size_t wl = sp ? (size_t)(sp - text) : len;
    const char *rest = sp ? sp + 1 : text + len;
    size_t rl = len - (size_t)(rest - text);

    if (word_is(text, wl, "MOVED") || word_is(text, wl, "ASK")) {
        resp_err_class c = (text[0] == 'M') ? RESP_ERR_MOVED : RESP_ERR_ASK;
        if (redir != NULL && parse_redirect(rest, rl, redir) != 0) {
            redir->slot = -1;
            redir->port = 0;
            redir->host[0] = '\0';
        }
        return c;
    }
    static const struct { const char *word; resp_err_class cls; } codes[] = {
        {"TRYAGAIN", RESP_ERR_TRYAGAIN},   {"CROSSSLOT", RESP_ERR_CROSSSLOT},
        {"CLUSTERDOWN", RESP_ERR_CLUSTERDOWN}, {"READONLY", RESP_ERR_READONLY},
        {"NOAUTH", RESP_ERR_NOAUTH},       {"WRONGTYPE", RESP_ERR_WRONGTYPE},
        {"LOADING", RESP_ERR_LOADING},     {"EXECABORT", RESP_ERR_EXECABORT},
    };
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (word_is(text, wl, codes[i].word))
            return codes[i].cls;
    return RESP_ERR_OTHER;
}
