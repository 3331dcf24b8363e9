/*
 * test_resp_misc.c - error classes and redirects, the value tree parser, the
 * shape hook.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "resp/resp.h"

/* Classify a C string. */
static resp_err_class cls(const char *s, resp_redirect *r)
{
    return resp_classify_error(s, strlen(s), r);
}

static void test_redirects(void **state)
{
    (void)state;
    resp_redirect r;
    assert_int_equal(cls("MOVED 3999 127.0.0.1:6381", &r), RESP_ERR_MOVED);
    assert_int_equal(r.slot, 3999);
    assert_string_equal(r.host, "127.0.0.1");
    assert_int_equal(r.port, 6381);

    assert_int_equal(cls("ASK 0 10.1.2.3:7000", &r), RESP_ERR_ASK);
    assert_int_equal(r.slot, 0);
    assert_string_equal(r.host, "10.1.2.3");
    assert_int_equal(r.port, 7000);

    /* IPv6: the port follows the last colon, with or without brackets */
    assert_int_equal(cls("MOVED 16383 2001:db8::1:7001", &r), RESP_ERR_MOVED);
    assert_int_equal(r.slot, 16383);
    assert_string_equal(r.host, "2001:db8::1");
    assert_int_equal(r.port, 7001);
    assert_int_equal(cls("ASK 5 [::1]:30201", &r), RESP_ERR_ASK);
    assert_string_equal(r.host, "::1");
    assert_int_equal(r.port, 30201);

    /* hostnames (Redis 7) */
    assert_int_equal(cls("MOVED 12 redis-node-3.example.internal:6379", &r), RESP_ERR_MOVED);
    assert_string_equal(r.host, "redis-node-3.example.internal");
    assert_int_equal(r.port, 6379);

    /* unknown endpoint: empty or "?" host */
    assert_int_equal(cls("MOVED 3999 :6381", &r), RESP_ERR_MOVED);
    assert_int_equal(r.slot, 3999);
    assert_string_equal(r.host, "");
    assert_int_equal(r.port, 6381);
    assert_int_equal(cls("ASK 3999 ?:6381", &r), RESP_ERR_ASK);
    assert_string_equal(r.host, "");
    assert_int_equal(r.port, 6381);

    /* hostile text: the class stays, the target is not parsed */
    const char *bad[] = {
        "MOVED 16384 1.2.3.4:1", "MOVED -1 1.2.3.4:1", "MOVED 99999999999 1.2.3.4:1",
        "MOVED 12 1.2.3.4:0", "MOVED 12 1.2.3.4:65536", "MOVED 12 1.2.3.4", "MOVED 12",
        "MOVED", "MOVED  12 1.2.3.4:1", "MOVED 12 1.2.3.4:1 extra", "MOVED 012 a:1",
        "MOVED 12 a:b", "MOVED 12 [::1:5", "MOVED 1a 1.2.3.4:1", "ASK 12 1.2.3.4:",
        "MOVED 12 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:1",
        "MOVED 12 a\tb:1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&r, 0x55, sizeof r);
        resp_err_class c = cls(bad[i], &r);
        if (c != RESP_ERR_MOVED && c != RESP_ERR_ASK)
            fail_msg("'%s': class %d", bad[i], (int)c);
        if (r.slot != -1 || r.port != 0 || r.host[0] != '\0')
            fail_msg("'%s' parsed as %d %s:%u", bad[i], r.slot, r.host, r.port);
    }
    /* NULL redir is allowed */
    assert_int_equal(cls("MOVED 1 a:1", NULL), RESP_ERR_MOVED);
    /* a host of 63 bytes fits, 64 does not */
    char text[128];
    snprintf(text, sizeof text, "MOVED 1 %063d:1", 0);
    cls(text, &r);
    assert_int_equal(r.slot, 1);
    assert_int_equal(strlen(r.host), 63);
    snprintf(text, sizeof text, "MOVED 1 %064d:1", 0);
    cls(text, &r);
    assert_int_equal(r.slot, -1);
}

static void test_error_classes(void **state)
{
    (void)state;
    resp_redirect r;
    assert_int_equal(cls("TRYAGAIN Multiple keys request during rehashing of slot", &r),
                     RESP_ERR_TRYAGAIN);
    assert_int_equal(r.slot, -1);
    assert_int_equal(cls("CROSSSLOT Keys in request don't hash to the same slot", &r),
                     RESP_ERR_CROSSSLOT);
    assert_int_equal(cls("CLUSTERDOWN The cluster is down", &r), RESP_ERR_CLUSTERDOWN);
    assert_int_equal(cls("READONLY You can't write against a read only replica.", &r),
                     RESP_ERR_READONLY);
    assert_int_equal(cls("NOAUTH Authentication required.", &r), RESP_ERR_NOAUTH);
    assert_int_equal(cls("WRONGTYPE Operation against a key holding the wrong kind of value", &r),
                     RESP_ERR_WRONGTYPE);
    assert_int_equal(cls("LOADING Redis is loading the dataset in memory", &r), RESP_ERR_LOADING);
    assert_int_equal(cls("EXECABORT Transaction discarded because of previous errors.", &r),
                     RESP_ERR_EXECABORT);
    assert_int_equal(cls("ERR unknown command 'foo'", &r), RESP_ERR_OTHER);
    assert_int_equal(cls("TRYAGAINX", &r), RESP_ERR_OTHER);
    assert_int_equal(cls("moved 1 a:1", &r), RESP_ERR_OTHER); /* codes are upper-case */
    assert_int_equal(cls("", &r), RESP_ERR_OTHER);
    assert_int_equal(cls("TRYAGAIN", &r), RESP_ERR_TRYAGAIN);
    assert_string_equal(resp_err_name(RESP_ERR_MOVED), "MOVED");
    assert_string_equal(resp_err_name(RESP_ERR_OTHER), "ERR");
    assert_string_equal(resp_err_name(RESP_ERR_NONE), "");
    assert_string_equal(resp_err_name(RESP_ERR_EXECABORT), "EXECABORT");
}

/* ---------------------------------------------------------------- values */

/* Parse a C string. */
static resp_value *parse(const char *s, uint32_t depth)
{
    return resp_value_parse((const uint8_t *)s, strlen(s), depth);
}

static void test_value_cluster_slots(void **state)
{
    (void)state;
    const char *s = "*2\r\n"
                    "*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:30201\r\n$4\r\nabcd\r\n"
                    "*4\r\n:5461\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:30202\r\n$4\r\nefgh\r\n"
                    "*4\r\n$9\r\n127.0.0.1\r\n:30205\r\n$4\r\nijkl\r\n%1\r\n$8\r\nhostname\r\n$0\r\n\r\n";
    resp_value *v = parse(s, 8);
    assert_non_null(v);
    assert_int_equal(v->type, RESP_T_ARRAY);
    assert_int_equal(v->n, 2);
    assert_int_equal(v->elem[0].elem[1].integer, 5460);
    assert_int_equal(v->elem[1].n, 4);
    const resp_value *node = &v->elem[1].elem[2];
    assert_int_equal(node->elem[0].len, 9);
    assert_memory_equal(node->elem[0].str, "127.0.0.1", 9);
    assert_int_equal(node->elem[1].integer, 30202);
    assert_int_equal(v->elem[1].elem[3].elem[3].type, RESP_T_MAP);
    assert_int_equal(v->elem[1].elem[3].elem[3].n, 2);
    resp_value_free(v);
    /* too deep for the limit */
    assert_null(parse(s, 3));
}

static void test_value_types(void **state)
{
    (void)state;
    resp_value *v = parse("|1\r\n+a\r\n:1\r\n~3\r\n#t\r\n_\r\n|1\r\n+b\r\n+c\r\n,1.5\r\n", 4);
    assert_non_null(v);
    assert_int_equal(v->type, RESP_T_SET);
    assert_int_equal(v->n, 3); /* the inner attribute is not an element */
    assert_int_equal(v->elem[0].integer, 1);
    assert_int_equal(v->elem[1].type, RESP_T_NULL);
    assert_int_equal(v->elem[2].type, RESP_T_DOUBLE);
    resp_value_free(v);
    v = parse("$-1\r\n", 1);
    assert_non_null(v);
    assert_int_equal(v->type, RESP_T_NIL);
    resp_value_free(v);
    v = parse("=8\r\ntxt:ab\r\n\r\n", 1);
    assert_non_null(v);
    assert_int_equal(v->len, 8);
    resp_value_free(v);
    /* not one complete valid value */
    const char *bad[] = {"", "+OK", "+OK\r\n+OK\r\n", "$5\r\nabc\r\n", "*2\r\n:1\r\n",
                         "*1000000\r\n:1\r\n", "$-2\r\n", ":x\r\n", "#x\r\n", "_1\r\n",
                         "*-2\r\n", "%1\r\n:1\r\n", "?\r\n", "$3\r\nabcde"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = parse(bad[i], 8);
        if (v != NULL)
            fail_msg("'%s' parsed", bad[i]);
    }
    resp_value_free(NULL);
}

/* ---------------------------------------------------------------- shape */

static int shape(const char *s)
{
    return resp_shape((const uint8_t *)s, strlen(s));
}

static void test_shape(void **state)
{
    (void)state;
    assert_int_equal(shape("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), 1);
    assert_int_equal(shape("*1\r\n$4\r\nping\r\n"), 1);
    assert_int_equal(shape("PING\r\n"), 1);
    assert_int_equal(shape("get foo\r\n"), 1);
    assert_int_equal(shape("+OK\r\n"), -1);
    assert_int_equal(shape("$5\r\nhello\r\n"), -1);
    assert_int_equal(shape("-ERR x\r\n"), -1);
    assert_int_equal(shape(":1\r\n"), -1);
    assert_int_equal(shape("%1\r\n"), -1);
    assert_int_equal(shape(">3\r\n"), -1);
    assert_int_equal(shape("*3\r\n$7\r\nmessage\r\n"), -1);
    assert_int_equal(shape("*2\r\n$3\r\nfoo\r\n"), 0); /* an array reply or a request? */
    assert_int_equal(shape("*2\r\n"), 0);
    assert_int_equal(shape(""), 0);
    assert_int_equal(shape("\x16\x03\x01"), 0); /* TLS */
    assert_int_equal(resp_shape(NULL, 4), 0);
}

/* A cluster-bus header: "RCmb", a length, version ver, port 30001, type. */
static int bus_shape_of(unsigned ver, unsigned type, size_t len)
{
    uint8_t m[16] = {'R', 'C', 'm', 'b', 0, 0, 0x08, 0xa0};
    m[8] = (uint8_t)(ver >> 8), m[9] = (uint8_t)ver;
    m[10] = 0x75, m[11] = 0x31;
    m[12] = (uint8_t)(type >> 8), m[13] = (uint8_t)type;
    return resp_shape(m, len);
}

/* Every bus message but a PONG comes from the node that opened the link. */
static void test_shape_bus(void **state)
{
    (void)state;
    assert_int_equal(bus_shape_of(1, 0, 16), 1);  /* PING */
    assert_int_equal(bus_shape_of(1, 2, 16), 1);  /* MEET */
    assert_int_equal(bus_shape_of(1, 3, 16), 1);  /* FAIL */
    assert_int_equal(bus_shape_of(1, 10, 16), 1); /* PUBLISHSHARD */
    assert_int_equal(bus_shape_of(1, 1, 16), 0);  /* PONG: either side */
    assert_int_equal(bus_shape_of(1, 11, 16), 0); /* an unknown type */
    assert_int_equal(bus_shape_of(0, 0, 16), 0);  /* another version */
    assert_int_equal(bus_shape_of(1, 0x100, 16), 0);
    assert_int_equal(bus_shape_of(1, 0, 13), 0);  /* header cut before the type */
    assert_int_equal(shape("RCmb"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redirects),
        cmocka_unit_test(test_error_classes),
        cmocka_unit_test(test_value_cluster_slots),
        cmocka_unit_test(test_value_types),
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_shape_bus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
