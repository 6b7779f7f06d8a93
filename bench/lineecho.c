// lineecho: the fastest possible answer to a newline-delimited request on a Unix stream socket.
//
// One thread, epoll, non-blocking sockets: every complete line read is written straight back. It is the physical
// limit of one NDJSON round trip on the machine, the yardstick `make bench` compares usherd against.
//
// Usage: lineecho SOCKET_PATH      (runs until killed)
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_EVENTS 256
#define BUFFER_SIZE 65536

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SOCKET_PATH\n", argv[0]);
        return 2;
    }
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof address.sun_path) {
        fprintf(stderr, "socket path too long\n");
        return 2;
    }
    strcpy(address.sun_path, argv[1]);
    unlink(argv[1]);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 4096) < 0) {
        perror("bind/listen");
        return 1;
    }
    int poller = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    static char buffer[BUFFER_SIZE];
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int ready = epoll_wait(poller, events, MAX_EVENTS, -1);
        if (ready < 0 && errno == EINTR) continue;
        for (int i = 0; i < ready; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int client;
                while ((client = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    struct epoll_event added = {.events = EPOLLIN, .data.fd = client};
                    epoll_ctl(poller, EPOLL_CTL_ADD, client, &added);
                }
                continue;
            }
            // Lockstep clients send one whole request and wait: echoing what arrived echoes whole lines.
            ssize_t count = read(fd, buffer, sizeof buffer);
            if (count <= 0) {
                if (count < 0 && errno == EAGAIN) continue;
                close(fd);
                continue;
            }
            ssize_t written = 0;
            while (written < count) {
                ssize_t n = write(fd, buffer + written, (size_t)(count - written));
                if (n < 0) {
                    if (errno == EAGAIN) continue;
                    break;
                }
                written += n;
            }
        }
    }
}
