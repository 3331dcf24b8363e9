/*
 * shape.c - does the start of a byte stream look like a request or a reply?
 *
 * capture/ asks this only when neither a SYN nor a known port tells which side
 * of a connection is the server. Replies start with a type byte other than
 * '*' most of the time; requests are a multibulk whose first bulk is a command
 * name, or an inline command. An array reply can look like a multibulk, so a
 * '*' counts as a request only when its first element is a known command name
 * (resync.c's table of Redis 7 commands; as a reply when it is a pub/sub
 * message word). REPLCONF GETACK is the exception among commands: a master
 * sends it, inside its replication stream, so its sender is the server.
 *
 * A cluster-bus message ("RCmb", version 1) tells too: a node sends PING,
 * MEET and every other message over the link it opened to the peer, and
 * answers a PING with a PONG over the link the PING came in on. So any type
 * but PONG comes from the connecting side; a PONG (also broadcast over a
 * node's own links after a failover) tells nothing.
 */
#include "resp/resp_internal.h"

/* Parse "<digits>\r\n" at *i; returns the value or -1. */
static long shape_num(const uint8_t *d, size_t len, size_t *i)
{
    long v = 0;
    size_t start = *i;
    while (*i < len && d[*i] >= '0' && d[*i] <= '9' && *i - start < 9)
        v = v * 10 + (d[(*i)++] - '0');
    if (*i == start || *i + 1 >= len || d[*i] != '\r' || d[*i + 1] != '\n')
        return -1;
    *i += 2;
    return v;
}

int rd_replconf_at(const uint8_t *d, size_t len)
{
    size_t i = 1;
    long n;
    if (d == NULL || len < 16 || d[0] != '*')
        return RD_RC_NONE;
    n = shape_num(d, len, &i);
    if (n < 2 || i >= len || d[i] != '$')
        return RD_RC_NONE;
    i++;
    if (shape_num(d, len, &i) != 8 || len - i < 10 || !rd_eq_ci(d + i, 8, "REPLCONF") ||
        d[i + 8] != '\r' || d[i + 9] != '\n')
        return RD_RC_NONE;
    i += 10;
    if (i >= len || d[i] != '$')
        return RD_RC_NONE;
    i++;
    n = shape_num(d, len, &i);
    if (n <= 0 || (size_t)n > len - i)
        return RD_RC_NONE;
    if (rd_eq_ci(d + i, (size_t)n, "ACK"))
        return RD_RC_ACK;
    if (rd_eq_ci(d + i, (size_t)n, "GETACK"))
        return RD_RC_GETACK;
    return RD_RC_NONE;
}

/* +1 for a bus message sent by the side that opened the link, else 0: a
 * header of version 1 (bytes 8-9), of a known type but PONG (bytes 12-13;
 * bus/bus.h's types). Its length is not judged: the first bytes are enough. */
static int bus_shape(const uint8_t *d, size_t len)
{
    if (len < 14 || ((unsigned)d[8] << 8 | d[9]) != 1)
        return 0;
    unsigned type = (unsigned)d[12] << 8 | d[13];
    return type < BUS_TYPE_COUNT && type != BUS_PONG;
}

int resp_shape(const uint8_t *data, size_t len)
{
    if (data == NULL || len == 0)
        return 0;
    if (len >= 4 && data[0] == 'R' && data[1] == 'C' && data[2] == 'm' && data[3] == 'b')
        return bus_shape(data, len);
    if (rd_replconf_at(data, len) == RD_RC_GETACK)
        return -1; /* from a master to its replica: the sender serves */
    switch (data[0]) {
    case '+': case '-': case ':': case '$': case '_': case ',': case '#': case '!':
    case '=': case '(': case '%': case '~': case '>': case '|':
        return -1;
    case '*': {
        size_t i = 1;
        if (shape_num(data, len, &i) <= 0 || i >= len || data[i] != '$')
            return 0;
        i++;
        long n = shape_num(data, len, &i);
        if (n <= 0 || (size_t)n > len - i)
            return 0;
        if (rd_known_command(data + i, (size_t)n))
            return 1;
        if (rd_eq_ci(data + i, (size_t)n, "MESSAGE") || rd_eq_ci(data + i, (size_t)n, "PMESSAGE") ||
            rd_eq_ci(data + i, (size_t)n, "SMESSAGE") || rd_eq_ci(data + i, (size_t)n, "PONG"))
            return -1;
        return 0;
    }
    default: {
        size_t n = 0;
        while (n < len && n < RESP_NAME_MAX && data[n] != ' ' && data[n] != '\r' &&
               data[n] != '\n')
            n++;
        return rd_known_command(data, n) ? 1 : 0;
    }
    }
}
