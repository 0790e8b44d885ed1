/* c-ares as a program calls it, for the resolver matrix
 * (tests/resolvers.rs): ares_getaddrinfo(AF_UNSPEC) for "host", ares_search
 * + ares_parse_srv_reply for "srv", ares_gethostbyaddr for "ptr", with the
 * channel configured from /etc/resolv.conf (ndots, search, attempts).
 * Reads "ID KIND NAME" lines on stdin and prints "ID MILLISECONDS ok
 * VALUE..." or "ID MILLISECONDS err CLASS DETAIL". */
#include "report.h"
#include <ares.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <sys/select.h>

/* Sets the error line for a failed status; 1 if it failed. */
static int failed(int status) {
    if (status == ARES_SUCCESS)
        return 0;
    if (status == ARES_ENOTFOUND || status == ARES_ENODATA)
        emit("err notfound %s", ares_strerror(status));
    /* c-ares 1.18 reports SERVFAIL from every server as ARES_ECONNREFUSED
     * ("Could not contact DNS servers"), newer ones as ARES_ESERVFAIL:
     * both are a temporary failure to the program. */
    else if (status == ARES_ESERVFAIL || status == ARES_ECONNREFUSED)
        emit("err temp %s", ares_strerror(status));
    else if (status == ARES_ETIMEOUT)
        emit("err timeout %s", ares_strerror(status));
    else
        emit("err error %s", ares_strerror(status));
    return 1;
}

static void on_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
    (void)arg;
    (void)timeouts;
    if (failed(status))
        return;
    emit("ok");
    for (struct ares_addrinfo_node *n = res->nodes; n; n = n->ai_next) {
        emit_address(n->ai_addr);
    }
    ares_freeaddrinfo(res);
}

static void on_srv(void *arg, int status, int timeouts, unsigned char *abuf, int alen) {
    (void)arg;
    (void)timeouts;
    if (failed(status))
        return;
    struct ares_srv_reply *srv = NULL;
    if (failed(ares_parse_srv_reply(abuf, alen, &srv)))
        return;
    emit("ok");
    for (struct ares_srv_reply *s = srv; s; s = s->next)
        emit(" %d:%d:%d:%s", s->priority, s->weight, s->port, s->host);
    ares_free_data(srv);
}

static void on_host(void *arg, int status, int timeouts, struct hostent *h) {
    (void)arg;
    (void)timeouts;
    if (failed(status))
        return;
    /* ares_parse_ptr_reply puts every PTR target in h_aliases (the first
     * one also in h_name): the aliases are the RRset. */
    emit("ok");
    for (char **a = h->h_aliases; a && *a; a++)
        emit(" %s", *a);
}

static void wait_for(ares_channel ch) {
    for (;;) {
        fd_set r, w;
        FD_ZERO(&r);
        FD_ZERO(&w);
        int n = ares_fds(ch, &r, &w);
        if (n == 0)
            break;
        struct timeval tv, *t = ares_timeout(ch, NULL, &tv);
        select(n, &r, &w, NULL, t);
        ares_process(ch, &r, &w);
    }
}

int main(void) {
    ares_library_init(ARES_LIB_INIT_ALL);
    char line[1024], id[64], kind[16], name[900];
    while (fgets(line, sizeof line, stdin)) {
        if (sscanf(line, "%63s %15s %899s", id, kind, name) != 3)
            continue;
        ares_channel ch;
        if (ares_init(&ch) != ARES_SUCCESS) {
            printf("%s 0 err error ares_init\n", id);
            continue;
        }
        result[0] = 0;
        long start = now_ms();
        if (strcmp(kind, "host") == 0) {
            struct ares_addrinfo_hints hints;
            memset(&hints, 0, sizeof hints);
            hints.ai_family = AF_UNSPEC;
            ares_getaddrinfo(ch, name, NULL, &hints, on_addrinfo, NULL);
        } else if (strcmp(kind, "srv") == 0) {
            ares_search(ch, name, C_IN, T_SRV, on_srv, NULL);
        } else if (strcmp(kind, "ptr") == 0) {
            struct in6_addr a6;
            struct in_addr a4;
            if (inet_pton(AF_INET, name, &a4) == 1)
                ares_gethostbyaddr(ch, &a4, sizeof a4, AF_INET, on_host, NULL);
            else if (inet_pton(AF_INET6, name, &a6) == 1)
                ares_gethostbyaddr(ch, &a6, sizeof a6, AF_INET6, on_host, NULL);
        } else {
            ares_destroy(ch);
            continue;
        }
        wait_for(ch);
        ares_destroy(ch);
        printf("%s %ld %s\n", id, now_ms() - start, result);
        fflush(stdout);
    }
    ares_library_cleanup();
    return 0;
}
