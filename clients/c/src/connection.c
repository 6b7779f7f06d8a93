/* Finding the daemon, connecting, and the handle's life. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"

/* The CLI's rules (Sources/UsherClient/SocketLocation.swift), first match wins: $USHER_SOCKET when set and not
 * empty; for users other than root, $XDG_RUNTIME_DIR/usher/usher.sock when that file exists (a per-user daemon);
 * the system daemon's /run/usher/usher.sock. secure_getenv: a set-uid program does not take a socket path from
 * whoever ran it. */
_public_ int usher_socket_path(char **ret) {
        if (!ret)
                return -EINVAL;
        const char *path = secure_getenv("USHER_SOCKET");
        if (path && *path) {
                *ret = strdup(path);
                return *ret ? 0 : -ENOMEM;
        }
        const char *runtime = secure_getenv("XDG_RUNTIME_DIR");
        if (getuid() != 0 && runtime && *runtime) {
                size_t len = strlen(runtime);
                if (runtime[len - 1] == '/')
                        len--;
                static const char suffix[] = "/usher/usher.sock";
                char *candidate = malloc(len + sizeof(suffix));
                if (!candidate)
                        return -ENOMEM;
                memcpy(candidate, runtime, len);
                memcpy(candidate + len, suffix, sizeof(suffix));
                struct stat st;
                if (stat(candidate, &st) == 0) {
                        *ret = candidate;
                        return 0;
                }
                free(candidate);
        }
        *ret = strdup(USHER_SYSTEM_SOCKET);
        return *ret ? 0 : -ENOMEM;
}

static int connect_unix(const char *path) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        size_t len = strlen(path);
        if (len == 0)
                return -EINVAL;
        if (len >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, len + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                /* A Unix socket connects at once or says EAGAIN (the listen backlog is full) or EINTR: then it
                 * completes on its own, and POLLOUT says when. */
                if (errno != EAGAIN && errno != EINPROGRESS && errno != EINTR) {
                        int r = -errno;
                        close(fd);
                        return r;
                }
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                int r;
                while ((r = poll(&p, 1, (int) (USHER_DEFAULT_TIMEOUT_USEC / 1000))) < 0 && errno == EINTR)
                        ;
                int error = 0;
                socklen_t error_len = sizeof(error);
                if (r == 0)
                        error = ETIMEDOUT;
                else if (r < 0)
                        error = errno;
                else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_len) < 0)
                        error = errno;
                if (error) {
                        close(fd);
                        return -error;
                }
        }
        return fd;
}

_public_ int usher_open_path(usher_t **ret, const char *path) {
        if (!ret || !path)
                return -EINVAL;
        usher_t *u = calloc(1, sizeof(*u));
        if (!u)
                return -ENOMEM;
        u->n_ref = 1;
        u->max_line = USHER_DEFAULT_MAX_LINE;
        u->timeout_usec = USHER_DEFAULT_TIMEOUT_USEC;
        u->fd = connect_unix(path);
        if (u->fd < 0) {
                int r = u->fd;
                free(u);
                return r;
        }
        *ret = u;
        return 0;
}

_public_ int usher_open(usher_t **ret) {
        char *path = NULL;
        if (!ret)
                return -EINVAL;
        int r = usher_socket_path(&path);
        if (r < 0)
                return r;
        r = usher_open_path(ret, path);
        free(path);
        return r;
}

_public_ usher_t *usher_ref(usher_t *u) {
        if (u)
                u->n_ref++;
        return u;
}

_public_ void usher_close(usher_t *u) {
        if (u)
                connection_fail(u);
}

_public_ usher_t *usher_unref(usher_t *u) {
        if (!u || --u->n_ref > 0)
                return NULL;
        connection_fail(u);
        free(u->rbuf);
        error_clear(u);
        events_clear(u);
        free(u);
        return NULL;
}

_public_ int usher_set_timeout(usher_t *u, uint64_t usec) {
        if (!u)
                return -EINVAL;
        u->timeout_usec = usec;
        return 0;
}

_public_ int usher_set_max_line(usher_t *u, size_t bytes) {
        if (!u || bytes < USHER_MIN_MAX_LINE || bytes > SIZE_MAX / 4)
                return -EINVAL;
        if (u->rlen > bytes)
                return -EBUSY;
        u->max_line = bytes;
        return 0;
}

_public_ int usher_get_fd(usher_t *u) {
        if (!u)
                return -EINVAL;
        return u->fd >= 0 ? u->fd : -ENOTCONN;
}

/* Every request is written whole by the call that makes it, so only reading is ever left to the main loop. */
_public_ int usher_get_events(usher_t *u) {
        if (!u)
                return -EINVAL;
        return u->fd >= 0 ? POLLIN : -ENOTCONN;
}
