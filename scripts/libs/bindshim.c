/*
 * bindshim.c - LD_PRELOAD shim: bind each outgoing IPv4 loopback socket to a
 * chosen source address before connect(), for client libraries that have no
 * option for it (scripts/libs/run.sh gives each library its own 127.0.0.x,
 * so that a capture tells the libraries apart by source address).
 *
 *   cc -shared -fPIC -O2 -o bindshim.so bindshim.c -ldl
 *   SS_BIND_ADDR=127.0.0.21 LD_PRELOAD=./bindshim.so php client.php
 *
 * Only AF_INET sockets connecting to 127.0.0.0/8 that are not bound yet are
 * touched (port 0: the kernel picks the source port as usual). A bind that
 * fails is reported once on stderr and the connect goes on unbound, so that a
 * library never fails because of the shim (the capture then shows the address
 * it used).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

/* True when fd is an AF_INET socket with no local address yet. */
static int unbound_inet(int fd)
{
    struct sockaddr_in local;
    socklen_t len = sizeof local;
    memset(&local, 0, sizeof local);
    if (getsockname(fd, (struct sockaddr *)&local, &len) != 0)
        return 0;
    return local.sin_family == AF_INET && local.sin_port == 0 &&
           local.sin_addr.s_addr == htonl(INADDR_ANY);
}

/* Bind fd to SS_BIND_ADDR when the destination is IPv4 loopback. */
static void bind_source(int fd, const struct sockaddr *to, socklen_t to_len)
{
    static int warned;
    const char *want = getenv("SS_BIND_ADDR");
    struct sockaddr_in src;
    if (!want || !to || to->sa_family != AF_INET || to_len < sizeof(struct sockaddr_in))
        return;
    const struct sockaddr_in *dst = (const struct sockaddr_in *)to;
    if ((ntohl(dst->sin_addr.s_addr) >> 24) != 127 || !unbound_inet(fd))
        return;
    memset(&src, 0, sizeof src);
    src.sin_family = AF_INET;
    if (inet_pton(AF_INET, want, &src.sin_addr) != 1)
        return;
    int saved = errno;
    if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0 && !warned) {
        warned = 1;
        fprintf(stderr, "bindshim: bind to %s failed: %s\n", want, strerror(errno));
    }
    errno = saved;
}

int connect(int fd, const struct sockaddr *to, socklen_t to_len)
{
    static connect_fn real_connect;
    if (!real_connect)
        real_connect = (connect_fn)dlsym(RTLD_NEXT, "connect");
    if (!real_connect) {
        errno = ENOSYS;
        return -1;
    }
    bind_source(fd, to, to_len);
    return real_connect(fd, to, to_len);
}
