/* The zero-work floor for the CPU-per-query benchmark: a UDP "DNS server"
 * that receives a batch of datagrams with recvmmsg (MSG_WAITFORONE), sets
 * the QR bit of each and sends the batch back with sendmmsg to where each
 * came from. No parsing, no lookup: what is left is the cost of the kernel's
 * UDP path, which no real server can go below.
 *
 * With "ts", each datagram also carries its kernel receive time
 * (SO_TIMESTAMPNS, read from the control message): what clusterdns's
 * overload check costs on top of the floor.
 *
 * Built by loadtest/bench/cpu-per-query.sh with gcc; not part of the crate.
 * usage: echo PORT [ts]   (binds 127.0.0.1:PORT, runs until killed)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define BATCH 32
#define SIZE 4096

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s PORT [ts]\n", argv[0]);
        return 64;
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&at, sizeof at) != 0) {
        perror("bind");
        return 1;
    }
    int stamps = argc == 3 && strcmp(argv[2], "ts") == 0;
    if (stamps && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &stamps, sizeof stamps) != 0) {
        perror("SO_TIMESTAMPNS");
        return 1;
    }
    static char bufs[BATCH][SIZE];
    static char control[BATCH][CMSG_SPACE(sizeof(struct timespec))];
    long long newest = 0;
    struct sockaddr_in peers[BATCH];
    struct iovec iov[BATCH];
    struct mmsghdr msgs[BATCH];
    for (;;) {
        memset(msgs, 0, sizeof msgs);
        for (int i = 0; i < BATCH; i++) {
            iov[i] = (struct iovec){.iov_base = bufs[i], .iov_len = SIZE};
            msgs[i].msg_hdr = (struct msghdr){.msg_name = &peers[i], .msg_namelen = sizeof peers[i],
                                              .msg_iov = &iov[i], .msg_iovlen = 1};
            if (stamps) {
                msgs[i].msg_hdr.msg_control = control[i];
                msgs[i].msg_hdr.msg_controllen = sizeof control[i];
            }
        }
        int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
        if (n <= 0)
            continue;
        for (int i = 0; i < n; i++) {
            if (msgs[i].msg_len > 2)
                bufs[i][2] |= 0x80;
            iov[i].iov_len = msgs[i].msg_len;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); stamps && c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
                    struct timespec t;
                    memcpy(&t, CMSG_DATA(c), sizeof t);
                    newest = t.tv_sec * 1000000000LL + t.tv_nsec;
                }
            }
            msgs[i].msg_hdr.msg_control = NULL;
            msgs[i].msg_hdr.msg_controllen = 0;
        }
        sendmmsg(fd, msgs, n, 0);
        if (newest < 0)
            puts("");
    }
}
