#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "daemon.h"
#include "usher.h"

static struct test_daemon *running[4];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st, (void) type, (void) ftw;
        return remove(path);
}

static void show_log(const struct test_daemon *d) {
        char path[128];
        snprintf(path, sizeof(path), "%s/usherd.log", d->dir);
        FILE *f = fopen(path, "r");
        if (!f)
                return;
        fprintf(stderr, "--- %s (last 40 lines) ---\n", path);
        char *lines[40] = {0};
        size_t n = 0, cap = 0;
        char *line = NULL;
        while (getline(&line, &cap, f) > 0) {
                free(lines[n % 40]);
                lines[n % 40] = strdup(line);
                n++;
        }
        for (size_t i = n > 40 ? n - 40 : 0; i < n; i++)
                fputs(lines[i % 40], stderr);
        for (size_t i = 0; i < 40; i++)
                free(lines[i]);
        free(line);
        fclose(f);
}

static void stop_all(void) {
        for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
                if (running[i]) {
                        int status = 0;
                        /* Still running at exit: the test failed; its log says what the daemon saw. */
                        show_log(running[i]);
                        (void) status;
                        daemon_stop(running[i]);
                }
}

/* Waits until fd is readable: the hang guard in milliseconds; 0 on timeout. */
static int wait_readable(int fd, int pidfd, int ms) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
        int r;
        while ((r = poll(p, 2, ms)) < 0 && errno == EINTR)
                ;
        if (r > 0 && (p[1].revents & (POLLIN | POLLHUP)))
                return -1; /* the daemon exited */
        return r;
}

void daemon_start(struct test_daemon *d, const char *extra_config) {
        const char *bin = getenv("USHER_BIN");
        CHECK(bin && *bin);
        char usherd[512];
        snprintf(usherd, sizeof(usherd), "%s/usherd", bin);
        CHECK(access(usherd, X_OK) == 0);
        *d = (struct test_daemon) {.pid = -1, .pidfd = -1};
        strcpy(d->dir, "/tmp/usher-c-XXXXXX");
        CHECK(mkdtemp(d->dir));
        snprintf(d->socket, sizeof(d->socket), "%s/usher.sock", d->dir);
        char path[128], config_path[128], state[128], notify[100];
        snprintf(config_path, sizeof(config_path), "%s/usherd.toml", d->dir);
        snprintf(state, sizeof(state), "%s/state", d->dir);
        snprintf(notify, sizeof(notify), "%s/notify", d->dir);
        FILE *config = fopen(config_path, "w");
        CHECK(config);
        fprintf(config, "[daemon]\npassword_hash_cost = 10\n\n[providers.local]\ntype = \"local\"\n\n%s\n",
                extra_config ? extra_config : "");
        CHECK(fclose(config) == 0);

        /* READY=1 on a notification socket of our own, as systemd would get it: no polling of the socket. */
        int listener = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        CHECK(listener >= 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", notify);
        CHECK(bind(listener, (struct sockaddr *) &sa, sizeof(sa)) == 0);

        snprintf(path, sizeof(path), "%s/usherd.log", d->dir);
        /* The daemon's end of a pipe, which only its exit closes: the parent sees POLLHUP then. (Not a pidfd:
         * valgrind does not know pidfd_open.) */
        int alive[2];
        CHECK(pipe2(alive, O_CLOEXEC) == 0);
        d->pid = fork();
        CHECK(d->pid >= 0);
        if (d->pid == 0) {
                int log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (log < 0 || null < 0 || dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0 ||
                    dup2(alive[1], 100) < 0)
                        _exit(127);
                setenv("NOTIFY_SOCKET", notify, 1);
                unsetenv("USHER_SOCKET");
                execl(usherd, usherd, "--config", config_path, "--socket", d->socket, "--state-directory", state,
                      "--log-level", "debug", (char *) NULL);
                _exit(127);
        }
        /* Stopped at exit from here on, whatever check fails next. */
        static int registered;
        if (!registered++)
                atexit(stop_all);
        close(alive[1]);
        d->pidfd = alive[0];
        for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
                if (!running[i]) {
                        running[i] = d;
                        break;
                }
        for (;;) {
                int r = wait_readable(listener, d->pidfd, HANG_GUARD_SECONDS * 1000);
                if (r <= 0) {
                        fprintf(stderr, "usherd %s before READY=1\n", r < 0 ? "exited" : "did not start in time");
                        exit(1);
                }
                char message[4096];
                ssize_t n = recv(listener, message, sizeof(message) - 1, 0);
                CHECK(n >= 0);
                message[n] = 0;
                if (strncmp(message, "READY=1", 7) == 0 || strstr(message, "\nREADY=1"))
                        break;
        }
        close(listener);
}

void daemon_stop(struct test_daemon *d) {
        for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
                if (running[i] == d)
                        running[i] = NULL;
        if (d->pid > 0) {
                kill(d->pid, SIGTERM);
                if (wait_readable(-1, d->pidfd, HANG_GUARD_SECONDS * 1000) == 0)
                        kill(d->pid, SIGKILL);
                waitpid(d->pid, NULL, 0);
                close(d->pidfd);
                d->pid = -1;
        }
        if (d->dir[0])
                nftw(d->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
        d->dir[0] = 0;
}

struct usher *daemon_connect(const struct test_daemon *d) {
        usher_t *u = NULL;
        int r = usher_open_path(&u, d->socket);
        if (r < 0) {
                fprintf(stderr, "usher_open_path(%s): %s\n", d->socket, strerror(-r));
                exit(1);
        }
        return u;
}
