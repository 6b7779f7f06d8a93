/* Bytes on the socket: a non-blocking descriptor, reads into one bounded buffer, writes that survive partial writes,
 * EINTR and EAGAIN, and never raise SIGPIPE. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define READ_CHUNK ((size_t) 64 * 1024)

uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

/* Closes the descriptor after a failure that leaves the connection out of step (a timeout, an overlong or
 * malformed line, the daemon gone): later calls fail with -ENOTCONN rather than read another call's answer. */
void connection_fail(usher_t *u) {
        if (u->fd >= 0) {
                close(u->fd);
                u->fd = -1;
        }
        if (u->rbuf)
                explicit_bzero(u->rbuf, u->rlen);
        u->rlen = 0;
}

/* One read of what is available. Returns the number of bytes read, 0 when nothing is (EAGAIN), -ECONNRESET when the
 * daemon closed the connection, -EMSGSIZE when a line is longer than max_line. */
int io_fill(usher_t *u) {
        if (u->fd < 0)
                return -ENOTCONN;
        if (u->rlen > u->max_line)
                return -EMSGSIZE;
        size_t want = u->max_line + 1 - u->rlen;
        if (want > READ_CHUNK)
                want = READ_CHUNK;
        if (u->rcap - u->rlen < want) {
                size_t cap = u->rcap ? u->rcap : READ_CHUNK;
                while (cap - u->rlen < want)
                        cap *= 2;
                if (cap > u->max_line + 1)
                        cap = u->max_line + 1;
                /* Not realloc: the old block may hold a token, which must be zeroed before it is freed. */
                char *p = malloc(cap);
                if (!p)
                        return -ENOMEM;
                if (u->rbuf) {
                        memcpy(p, u->rbuf, u->rlen);
                        explicit_bzero(u->rbuf, u->rcap);
                        free(u->rbuf);
                }
                u->rbuf = p;
                u->rcap = cap;
        }
        for (;;) {
                ssize_t n = recv(u->fd, u->rbuf + u->rlen, want, MSG_DONTWAIT);
                if (n > 0) {
                        u->rlen += (size_t) n;
                        return (int) n;
                }
                if (n == 0)
                        return -ECONNRESET;
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return 0;
                return -errno;
        }
}

/* The first complete line in the buffer, without its "\n" (it stays in the buffer until io_consume). Returns 1 with a
 * line, 0 when none is complete yet, -EMSGSIZE when the incomplete one is already longer than max_line. */
int io_take_line(usher_t *u, char **ret_line, size_t *ret_len) {
        char *end = u->rlen ? memchr(u->rbuf, '\n', u->rlen) : NULL;
        if (!end)
                return u->rlen > u->max_line ? -EMSGSIZE : 0;
        size_t len = (size_t) (end - u->rbuf);
        if (len > u->max_line)
                return -EMSGSIZE;
        *ret_line = u->rbuf;
        *ret_len = len;
        return 1;
}

/* Drops a taken line and its "\n", zeroing the bytes it leaves behind. */
void io_consume(usher_t *u, size_t n) {
        if (n > u->rlen)
                n = u->rlen;
        memmove(u->rbuf, u->rbuf + n, u->rlen - n);
        explicit_bzero(u->rbuf + u->rlen - n, n);
        u->rlen -= n;
}

/* Waits until the descriptor is ready for events, or the deadline (CLOCK_MONOTONIC, 0 for none) passed: -ETIMEDOUT. */
int io_wait(usher_t *u, short events, uint64_t deadline) {
        for (;;) {
                int timeout = -1;
                if (deadline) {
                        uint64_t now = now_usec();
                        if (now >= deadline)
                                return -ETIMEDOUT;
                        uint64_t ms = (deadline - now + 999) / 1000;
                        timeout = ms > INT32_MAX ? INT32_MAX : (int) ms;
                }
                struct pollfd p = {.fd = u->fd, .events = events};
                int r = poll(&p, 1, timeout);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r > 0)
                        return 0;
        }
}

int io_write_all(usher_t *u, const char *p, size_t n, uint64_t deadline) {
        while (n > 0) {
                ssize_t k = send(u->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k >= 0) {
                        p += k;
                        n -= (size_t) k;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        return errno == EPIPE ? -ECONNRESET : -errno;
                int r = io_wait(u, POLLOUT, deadline);
                if (r < 0)
                        return r;
        }
        return 0;
}
