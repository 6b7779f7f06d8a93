#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "fake-daemon.h"

static void *serve_connection(void *arg) {
        struct fake_daemon *f = arg;
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        int fd = accept4(f->listener, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return NULL;
        f->serve(fd, f->userdata);
        close(fd);
        return NULL;
}

void fake_daemon_start(struct fake_daemon *f, void (*serve)(int fd, void *userdata), void *userdata) {
        static int counter;
        f->serve = serve;
        f->userdata = userdata;
        snprintf(f->path, sizeof(f->path), "/tmp/usher-c-fake-%d-%d.sock", (int) getpid(), counter++);
        unlink(f->path);
        f->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(f->listener >= 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        strcpy(sa.sun_path, f->path);
        CHECK(bind(f->listener, (struct sockaddr *) &sa, sizeof(sa)) == 0);
        CHECK(listen(f->listener, 4) == 0);
        CHECK(pthread_create(&f->thread, NULL, serve_connection, f) == 0);
}

void fake_daemon_stop(struct fake_daemon *f) {
        CHECK(pthread_join(f->thread, NULL) == 0);
        close(f->listener);
        unlink(f->path);
}

bool fake_daemon_send(int fd, const void *p, size_t n, size_t *sent) {
        const char *next = p;
        while (n > 0) {
                ssize_t k = send(fd, next, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return false;
                next += k;
                n -= (size_t) k;
                if (sent)
                        *sent += (size_t) k;
        }
        return true;
}
