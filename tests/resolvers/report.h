/* What the C clients of the resolver matrix (libc.c, cares.c) share: the
 * result line being built ("ok VALUE..." or "err CLASS DETAIL"), a
 * monotonic clock in milliseconds, and an address written as text. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static char result[65536];

/* Appends to the result line. */
static void emit(const char *fmt, ...) {
    size_t used = strlen(result);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(result + used, sizeof result - used, fmt, ap);
    va_end(ap);
}

/* Appends " ADDRESS" for an AF_INET or AF_INET6 socket address. */
static void emit_address(const struct sockaddr *sa) {
    char buf[INET6_ADDRSTRLEN];
    const void *a = sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                                             : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (inet_ntop(sa->sa_family, a, buf, sizeof buf))
        emit(" %s", buf);
}

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}
