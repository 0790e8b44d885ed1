/* The two sides of loadtest/bench/fair.sh, open loop over UDP on loopback.
 *
 *   fairload flood  PORT SECS NAMES SRC SOCKETS [gso|mmsg [QPS]]
 *       one client at address SRC flooding 127.0.0.1:PORT as fast as it can
 *       (sendmmsg, 64 at a time, from SOCKETS ports; with `gso`, one
 *       UDP_SEGMENT send of 64 copies of a query instead; QPS > 0 paces
 *       it to that rate), counting what
 *       comes back (read, or dropped at its full socket: SO_RXQ_OVFL); prints "flood sent N answered M qps_sent X qps_answered Y".
 *   fairload polite PORT SECS NAMES CLIENTS QPS FIRST
 *       CLIENTS clients at 127.0.0.FIRST.. each asking QPS queries a second on
 *       its own schedule; a query not answered within 1 s is lost. Prints
 *       "polite sent N answered M fraction F p50 A p99 B" (ms, answered only,
 *       from when each query was sent to the kernel's receive timestamp of
 *       its reply, SO_TIMESTAMPNS: the time this process waits for its core,
 *       which it shares with the flooder, is not the server's).
 *
 * NAMES is a file of names, one a line; each query asks A for the next. Every
 * loop is bounded by SECS (and 1 s more to collect late answers).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXQ 1024
#define VLEN 64

static unsigned char qbuf[4096][MAXQ / 4];
static int qlen[4096], nq;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Wire form of an A query for NAME (id patched per send). */
static int encode(const char *name, unsigned char *out) {
    unsigned char *p = out;
    memset(p, 0, 12);
    p[2] = 1; /* RD */
    p[5] = 1; /* QDCOUNT */
    p += 12;
    while (*name) {
        const char *dot = strchr(name, '.');
        int len = dot ? (int)(dot - name) : (int)strlen(name);
        if (len == 0 || len > 63 || p - out + len + 6 > MAXQ / 4) return -1;
        *p++ = len;
        memcpy(p, name, len);
        p += len;
        name += len + (dot ? 1 : 0);
    }
    *p++ = 0;
    *p++ = 0; *p++ = 1; /* A */
    *p++ = 0; *p++ = 1; /* IN */
    return p - out;
}

static void load(const char *file) {
    FILE *f = fopen(file, "r");
    char line[512];
    if (!f) { perror(file); exit(1); }
    while (nq < 4096 && fgets(line, sizeof line, f)) {
        line[strcspn(line, " \t\r\n")] = 0;
        int n = encode(line, qbuf[nq]);
        if (n > 0) qlen[nq++] = n;
    }
    fclose(f);
    if (!nq) { fprintf(stderr, "no names in %s\n", file); exit(1); }
}

static double wall(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* One datagram from S into BUF; *AT is when the kernel received it
 * (SO_TIMESTAMPNS), or now when it did not say. */
static ssize_t recv_stamped(int s, unsigned char *buf, size_t len, double *at) {
    char control[CMSG_SPACE(sizeof(struct timespec))];
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                       .msg_controllen = sizeof control};
    ssize_t n = recvmsg(s, &m, 0);
    *at = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); n >= 0 && c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec t;
            memcpy(&t, CMSG_DATA(c), sizeof t);
            *at = t.tv_sec + t.tv_nsec / 1e9;
        }
    }
    if (*at == 0) *at = wall();
    return n;
}

static int client(const char *src) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    int big = 4 << 20;
    inet_pton(AF_INET, src, &a.sin_addr);
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0) { perror(src); exit(1); }
    return s;
}

static struct sockaddr_in server;

/* The flooder's sockets: bound at SRC, replies counted by the kernel when
 * they overflow (SO_RXQ_OVFL), so the flooder need not read them all. */
static int flood_socket(const char *src) {
    int s = client(src), on = 1;
    setsockopt(s, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on);
    return s;
}

/* Replies waiting at S, read and counted; *DROPS takes the socket's count
 * of replies it had no room for (SO_RXQ_OVFL, cumulative). */
static unsigned long drain(int s, unsigned int *drops) {
    static struct mmsghdr in[VLEN];
    static struct iovec iov[VLEN];
    static unsigned char back[VLEN][512];
    static char control[VLEN][CMSG_SPACE(sizeof(unsigned int))];
    unsigned long got = 0;
    for (int j = 0; j < 4; j++) {
        for (int i = 0; i < VLEN; i++) {
            iov[i].iov_base = back[i];
            iov[i].iov_len = sizeof back[i];
            memset(&in[i].msg_hdr, 0, sizeof in[i].msg_hdr);
            in[i].msg_hdr.msg_iov = &iov[i];
            in[i].msg_hdr.msg_iovlen = 1;
            in[i].msg_hdr.msg_control = control[i];
            in[i].msg_hdr.msg_controllen = sizeof control[i];
        }
        int n = recvmmsg(s, in, VLEN, MSG_DONTWAIT, NULL);
        if (n <= 0) break;
        got += n;
        for (int i = 0; i < n; i++) {
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&in[i].msg_hdr); c; c = CMSG_NXTHDR(&in[i].msg_hdr, c)) {
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) memcpy(drops, CMSG_DATA(c), sizeof *drops);
            }
        }
    }
    return got;
}

/* One send of VLEN queries from S. With GSO (UDP_SEGMENT), one datagram
 * buffer holds VLEN copies of one query (their IDs differ) and the kernel
 * cuts it: one syscall and one route lookup for VLEN queries, so one core
 * offers more than twice what a server core answers. */
static int send_batch(int s, unsigned long k, int gso) {
    static unsigned char out[VLEN][MAXQ / 4], flat[VLEN * (MAXQ / 4)];
    static struct mmsghdr msgs[VLEN];
    static struct iovec iov[VLEN];
    if (gso) {
        int q = k % nq, len = qlen[q];
        for (int i = 0; i < VLEN; i++) {
            memcpy(flat + i * len, qbuf[q], len);
            flat[i * len] = (k + i) >> 8; flat[i * len + 1] = k + i;
        }
        char control[CMSG_SPACE(sizeof(uint16_t))] = {0};
        struct iovec one = {.iov_base = flat, .iov_len = (size_t)len * VLEN};
        struct msghdr m = {.msg_name = &server, .msg_namelen = sizeof server, .msg_iov = &one,
                           .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = IPPROTO_UDP;
        c->cmsg_type = 103; /* UDP_SEGMENT */
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t size = len;
        memcpy(CMSG_DATA(c), &size, sizeof size);
        return sendmsg(s, &m, 0) > 0 ? VLEN : 0;
    }
    for (int i = 0; i < VLEN; i++, k++) {
        int q = k % nq;
        memcpy(out[i], qbuf[q], qlen[q]);
        out[i][0] = k >> 8; out[i][1] = k;
        iov[i].iov_base = out[i];
        iov[i].iov_len = qlen[q];
        memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &server;
        msgs[i].msg_hdr.msg_namelen = sizeof server;
    }
    int n = sendmmsg(s, msgs, VLEN, 0);
    return n > 0 ? n : 0;
}

static void flood(double secs, const char *src, int nsock, int gso, double rate) {
    int socks[16];
    unsigned int drops[16] = {0};
    unsigned long sent = 0, answered = 0, k = 0;
    if (nsock < 1) nsock = 1;
    if (nsock > 16) nsock = 16;
    for (int i = 0; i < nsock; i++) socks[i] = flood_socket(src);
    double start = now(), end = start + secs;
    for (unsigned long round = 0; now() < end; round++, k += VLEN) {
        sent += send_batch(socks[round % nsock], k, gso);
        while (rate > 0 && sent > rate * (now() - start)) usleep(50); /* paced */
        if (round % 8 == 7)
            for (int i = 0; i < nsock; i++) answered += drain(socks[i], &drops[i]);
    }
    double took = now() - start;
    for (double stop = now() + 0.2; now() < stop;) { /* late answers */
        unsigned long got = 0;
        for (int i = 0; i < nsock; i++) got += drain(socks[i], &drops[i]);
        answered += got;
        if (!got) usleep(1000);
    }
    for (int i = 0; i < nsock; i++) answered += drops[i];
    printf("flood sent %lu answered %lu qps_sent %.0f qps_answered %.0f\n", sent, answered, sent / took,
           answered / took);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void polite(double secs, int clients, double qps, int first) {
    int socks[256];
    double next[256];
    unsigned long per = (unsigned long)(secs * qps) + 1;
    unsigned long total = per * clients, sent = 0, answered = 0;
    double *at = calloc(total, sizeof *at), *lat = calloc(total, sizeof *lat);
    unsigned short *seq = calloc(clients, sizeof *seq);
    struct pollfd pfd[256];
    if (clients > 256 || !at || !lat || !seq) exit(1);
    double start = now() + 0.01;
    for (int c = 0; c < clients; c++) {
        char ip[32];
        snprintf(ip, sizeof ip, "127.0.0.%d", first + c);
        socks[c] = client(ip);
        int on = 1;
        setsockopt(socks[c], SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
        pfd[c].fd = socks[c];
        pfd[c].events = POLLIN;
        next[c] = start + (double)c / (clients * qps); /* spread evenly */
    }
    double end = start + secs;
    unsigned char buf[512];
    for (double t = now(); t < end + 1.0; t = now()) {
        double soonest = end + 1.0;
        for (int c = 0; c < clients; c++) {
            while (t < end && next[c] <= t && seq[c] < per) {
                unsigned long id = (unsigned long)c * per + seq[c];
                int q = id % nq;
                unsigned char m[MAXQ / 4];
                memcpy(m, qbuf[q], qlen[q]);
                m[0] = seq[c] >> 8; m[1] = seq[c];
                if (sendto(socks[c], m, qlen[q], 0, (struct sockaddr *)&server, sizeof server) > 0) {
                    at[id] = wall();
                    sent++;
                }
                seq[c]++;
                next[c] += 1.0 / qps;
            }
            if (t < end && next[c] < soonest) soonest = next[c];
        }
        int wait = (int)((soonest - now()) * 1000);
        poll(pfd, clients, wait < 0 ? 0 : wait > 5 ? 5 : wait);
        for (int c = 0; c < clients; c++) {
            ssize_t n;
            double got;
            while ((n = recv_stamped(socks[c], buf, sizeof buf, &got)) >= 2) {
                unsigned long s = (unsigned long)(buf[0] << 8 | buf[1]);
                unsigned long id = (unsigned long)c * per + s;
                if (s >= per || at[id] == 0) continue;
                double l = got - at[id];
                at[id] = 0;
                if (l <= 1.0) lat[answered++] = l * 1000;
            }
        }
    }
    qsort(lat, answered, sizeof *lat, cmp);
    double p50 = answered ? lat[answered / 2] : 0, p99 = answered ? lat[(answered * 99) / 100] : 0;
    printf("polite sent %lu answered %lu fraction %.4f p50 %.3f p99 %.3f\n", sent, answered,
           sent ? (double)answered / sent : 0, p50, p99);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: fairload flood PORT SECS NAMES SRC SOCKETS [gso|mmsg [QPS]] | polite PORT SECS NAMES CLIENTS QPS FIRST\n");
        return 2;
    }
    server.sin_family = AF_INET;
    server.sin_port = htons(atoi(argv[2]));
    inet_pton(AF_INET, "127.0.0.1", &server.sin_addr);
    double secs = atof(argv[3]);
    load(argv[4]);
    if (!strcmp(argv[1], "flood") && argc >= 7) flood(secs, argv[5], atoi(argv[6]), argc >= 8 && !strcmp(argv[7], "gso"), argc >= 9 ? atof(argv[8]) : 0);
    else if (!strcmp(argv[1], "polite") && argc >= 8) polite(secs, atoi(argv[5]), atof(argv[6]), atoi(argv[7]));
    else return 2;
    return 0;
}
