/* The libc stub resolver as a program calls it, for the resolver matrix
 * (tests/resolvers.rs). Built twice: against glibc and statically against
 * musl (musl-gcc). Reads "ID KIND NAME" lines on stdin and prints
 * "ID MILLISECONDS ok VALUE..." or "ID MILLISECONDS err CLASS DETAIL":
 *   host  getaddrinfo(AF_UNSPEC, no flags): every address
 *   srv   res_search(C_IN, T_SRV), parsed with ns_initparse/ns_parserr
 *         (glibc walks the search list; musl's res_search is res_query)
 * Classes: notfound (no such name, or no data), temp (try again), error. */
#include "report.h"
#include <arpa/nameser.h>
#include <netdb.h>
#include <resolv.h>

static void host(const char *name) {
    struct addrinfo hints, *res = NULL, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc == EAI_NONAME
#ifdef EAI_NODATA
        || rc == EAI_NODATA
#endif
    ) {
        emit("err notfound %d", rc);
        return;
    }
    if (rc == EAI_AGAIN) {
        emit("err temp EAI_AGAIN");
        return;
    }
    if (rc != 0) {
        emit("err error %s", gai_strerror(rc));
        return;
    }
    emit("ok");
    for (ai = res; ai; ai = ai->ai_next) {
        emit_address(ai->ai_addr);
    }
    freeaddrinfo(res);
}

static unsigned char answer[65536];

static void srv(const char *name) {
    h_errno = 0;
    int n = res_search(name, C_IN, T_SRV, answer, sizeof answer);
    if (n < 0) {
        if (h_errno == HOST_NOT_FOUND || h_errno == NO_DATA)
            emit("err notfound h_errno=%d", h_errno);
        else if (h_errno == TRY_AGAIN)
            emit("err temp TRY_AGAIN");
        else
            emit("err error h_errno=%d", h_errno);
        return;
    }
    ns_msg msg;
    if (ns_initparse(answer, n, &msg) < 0) {
        emit("err error ns_initparse rejected the %d-byte reply", n);
        return;
    }
    int rcode = ns_msg_getflag(msg, ns_f_rcode);
    if (rcode == ns_r_servfail) {
        emit("err temp SERVFAIL");
        return;
    }
    if (rcode == ns_r_nxdomain) {
        emit("err notfound NXDOMAIN");
        return;
    }
    int count = ns_msg_count(msg, ns_s_an), found = 0;
    for (int i = 0; i < count; i++) {
        ns_rr rr;
        if (ns_parserr(&msg, ns_s_an, i, &rr) < 0) {
            emit("err error ns_parserr failed on record %d", i);
            return;
        }
        if (ns_rr_type(rr) != ns_t_srv || ns_rr_rdlen(rr) < 7)
            continue;
        const unsigned char *rd = ns_rr_rdata(rr);
        char target[NS_MAXDNAME];
        if (dn_expand(ns_msg_base(msg), ns_msg_end(msg), rd + 6, target, sizeof target) < 0) {
            emit("err error dn_expand failed");
            return;
        }
        char one[NS_MAXDNAME + 32];
        snprintf(one, sizeof one, " %d:%d:%d:%s", rd[0] << 8 | rd[1], rd[2] << 8 | rd[3],
                 rd[4] << 8 | rd[5], target);
        if (!found)
            emit("ok");
        emit("%s", one);
        found++;
    }
    if (!found)
        emit("err notfound no SRV records");
}

int main(void) {
    char line[1024], id[64], kind[16], name[900];
    while (fgets(line, sizeof line, stdin)) {
        if (sscanf(line, "%63s %15s %899s", id, kind, name) != 3)
            continue;
        result[0] = 0;
        long start = now_ms();
        if (strcmp(kind, "host") == 0)
            host(name);
        else if (strcmp(kind, "srv") == 0)
            srv(name);
        else
            continue;
        printf("%s %ld %s\n", id, now_ms() - start, result);
        fflush(stdout);
    }
    return 0;
}
