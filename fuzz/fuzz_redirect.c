/*
 * fuzz_redirect.c - fuzz target: the MOVED/ASK error parser, and the other
 * small parsers of hostile text.
 *
 * Input: any bytes, taken as the text of an error reply (without '-' and CRLF),
 * e.g. "MOVED 3999 127.0.0.1:6381", "ASK 12 ::1:7002", "MOVED 5 :7000" (Redis 7
 * with an unknown endpoint), "TRYAGAIN ...". The text is handed over in a heap
 * buffer of exactly its length, with no NUL after it, so a parser that reads
 * to a NUL or past the length is an ASan error.
 *
 * Checked besides memory:
 *   - resp_classify_error: the class is one of the enum, resp_err_name of it is
 *     a string; a MOVED/ASK target has its slot in -1..16383 and a host
 *     NUL-terminated inside its array; a target that parsed (slot and port set,
 *     a host without blanks) written back as "MOVED <slot> <host>:<port>"
 *     parses to the same target (round trip, as Redis formats it, IPv6 without
 *     brackets).
 *   - resp_shape: -1, 0 or +1.
 *   - resp_key_slot on the whole text equals the incremental hasher fed the
 *     same bytes in pieces cut where the text's own bytes say.
 *   - cap_endpoint_parse / cap_addr_parse: what parses, formatted with
 *     cap_endpoint_format / cap_addr_format, parses again to an equal value.
 */
#include <string.h>

#include "fuzz/fuzz.h"

/* resp_classify_error and its round trip. */
static void check_classify(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    SS_FUZZ_CHECK(text != NULL);
    memcpy(text, data, size);

    resp_redirect r;
    memset(&r, 0xA5, sizeof r); /* the parser must set what it promises */
    resp_err_class c = resp_classify_error(text, size, &r);
    SS_FUZZ_CHECK(c >= RESP_ERR_NONE && c <= RESP_ERR_OTHER);
    SS_FUZZ_CHECK(resp_err_name(c) != NULL);
    (void)strlen(resp_err_name(c));
    /* without a place for the target it must not crash either */
    SS_FUZZ_CHECK(resp_classify_error(text, size, NULL) == c);
    free(text);
    if (c != RESP_ERR_MOVED && c != RESP_ERR_ASK)
        return;

    SS_FUZZ_CHECK(r.slot >= -1 && r.slot < 16384);
    SS_FUZZ_CHECK(ss_fuzz_has_nul(r.host, sizeof r.host));
    if (r.slot < 0 || r.port == 0 || r.host[0] == '\0')
        return;
    for (const char *h = r.host; *h; h++)
        if ((unsigned char)*h <= ' ' || (unsigned char)*h >= 0x7f)
            return; /* not a host Redis would write: no round trip promised */

    char again[128];
    int n = snprintf(again, sizeof again, "%s %d %s:%u", c == RESP_ERR_MOVED ? "MOVED" : "ASK",
                     (int)r.slot, r.host, (unsigned)r.port);
    SS_FUZZ_CHECK(n > 0 && (size_t)n < sizeof again);
    resp_redirect r2;
    memset(&r2, 0, sizeof r2);
    SS_FUZZ_CHECK(resp_classify_error(again, (size_t)n, &r2) == c);
    SS_FUZZ_CHECK(r2.slot == r.slot && r2.port == r.port && strcmp(r2.host, r.host) == 0);
}

/* resp_key_slot against the incremental hasher, pieces cut by the data. */
static void check_slot_hasher(const uint8_t *data, size_t size)
{
    uint16_t whole = resp_key_slot(data, size);
    SS_FUZZ_CHECK(whole < 16384);
    resp_slot_hasher h;
    resp_slot_init(&h);
    size_t off = 0;
    while (off < size) {
        size_t n = 1 + (data[off] % 7u); /* piece sizes 1..7 from the bytes */
        if (n > size - off)
            n = size - off;
        resp_slot_update(&h, data + off, n);
        off += n;
    }
    SS_FUZZ_CHECK(resp_slot_final(&h) == whole);
    SS_FUZZ_CHECK(an_key_slot(data, size) == whole);
}

/* cap_endpoint_parse / cap_addr_parse round trips. */
static void check_endpoint(const uint8_t *data, size_t size)
{
    if (size > 200)
        return;
    char text[201];
    memcpy(text, data, size);
    text[size] = '\0';

    cap_endpoint ep, ep2;
    if (cap_endpoint_parse(text, &ep) == 0) {
        SS_FUZZ_CHECK(ep.addr.family == 4 || ep.addr.family == 6);
        char buf[CAP_ENDPOINT_STRLEN];
        size_t n = cap_endpoint_format(&ep, buf, sizeof buf);
        SS_FUZZ_CHECK(n < sizeof buf && strlen(buf) == n);
        SS_FUZZ_CHECK(cap_endpoint_parse(buf, &ep2) == 0);
        SS_FUZZ_CHECK(cap_endpoint_equal(&ep, &ep2));
    }
    cap_addr a, a2;
    if (cap_addr_parse(text, &a) == 0) {
        SS_FUZZ_CHECK(a.family == 4 || a.family == 6);
        char buf[CAP_ENDPOINT_STRLEN];
        size_t n = cap_addr_format(&a, buf, sizeof buf);
        SS_FUZZ_CHECK(n < sizeof buf && strlen(buf) == n);
        SS_FUZZ_CHECK(cap_addr_parse(buf, &a2) == 0);
        SS_FUZZ_CHECK(cap_addr_equal(&a, &a2));
    }
}

int ss_fuzz_redirect(const uint8_t *data, size_t size)
{
    check_classify(data, size);
    int shape = resp_shape(data, size);
    SS_FUZZ_CHECK(shape >= -1 && shape <= 1);
    check_slot_hasher(data, size);
    check_endpoint(data, size);
    return 0;
}

#ifndef SS_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return ss_fuzz_redirect(data, size);
}
#endif
