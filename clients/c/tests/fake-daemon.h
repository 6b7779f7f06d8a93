/* A fake usherd, for the tests of what libusher does with a peer that does not behave: a socket of the test's own
 * whose one connection a thread serves with the test's script. */
#ifndef USHER_TEST_FAKE_DAEMON_H
#define USHER_TEST_FAKE_DAEMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct fake_daemon {
        char path[108];
        int listener;
        void (*serve)(int fd, void *userdata);
        void *userdata;
        pthread_t thread;
};

/* Listens on a fresh socket path and serves the first connection on a thread of its own: serve(fd, userdata) with
 * every signal blocked (they are for the client's thread), then the connection closed. */
void fake_daemon_start(struct fake_daemon *f, void (*serve)(int fd, void *userdata), void *userdata);
/* Waits for the serving thread (it ends once serve returns, which the test's script does when the client closed its
 * connection), then removes the socket. */
void fake_daemon_stop(struct fake_daemon *f);
/* Writes all of p, without SIGPIPE, again after EINTR, adding what went out to *sent (when not NULL); false once the
 * client closed the connection. */
bool fake_daemon_send(int fd, const void *p, size_t n, size_t *sent);

#endif
