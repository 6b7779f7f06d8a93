/* run-example PROGRAM: runs a documented example (docs/c-library.md) against the real usherd, found through
 * USHER_SOCKET as a user's program finds it, twice (the second time Ann's account exists already), and checks what
 * it printed: the users, the switch seen as an event, a token (never printed itself), a lease. */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "daemon.h"
#include "usher.h"

static char *run(const char *program) {
        int out[2];
        CHECK(pipe2(out, O_CLOEXEC) == 0);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                if (dup2(out[1], 1) < 0)
                        _exit(127);
                execl(program, program, (char *) NULL);
                _exit(127);
        }
        close(out[1]);
        size_t len = 0, cap = 4096;
        char *text = malloc(cap);
        CHECK(text);
        time_t end = time(NULL) + HANG_GUARD_SECONDS;
        for (;;) {
                struct pollfd p = {.fd = out[0], .events = POLLIN};
                int r = poll(&p, 1, 1000);
                CHECK(r >= 0 || errno == EINTR);
                if (time(NULL) > end) {
                        kill(pid, SIGKILL);
                        fprintf(stderr, "%s did not finish within the hang guard\n", program);
                        exit(1);
                }
                if (r <= 0)
                        continue;
                if (cap - len < 1024)
                        CHECK((text = realloc(text, cap *= 2)));
                ssize_t n = read(out[0], text + len, cap - len - 1);
                CHECK(n >= 0 || errno == EINTR);
                if (n == 0)
                        break;
                if (n > 0)
                        len += (size_t) n;
        }
        text[len] = 0;
        close(out[0]);
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        fputs(text, stderr);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "%s exited with status %d\n", program, status);
                exit(1);
        }
        return text;
}

int main(int argc, char **argv) {
        CHECK(argc == 2);
        fprintf(stderr, "run-example %s\n", argv[1]);
        struct test_daemon d;
        daemon_start(&d, NULL);
        setenv("USHER_SOCKET", d.socket, 1);
        for (int round = 1; round <= 2; round++) {
                char *out = run(argv[1]);
                CHECK(strstr(out, "event active_user_changed"));
                CHECK(strstr(out, "a token of "));
                CHECK(strstr(out, "lease l_"));
                if (strstr(out, "another program's switch"))
                        CHECK(strstr(out, "(inhibited)"));
                /* Where the example left things: the anonymous user active, no lease, and its token not printed. */
                usher_t *u = daemon_connect(&d);
                usher_user *user = NULL;
                CHECK_RC(u, usher_current_user(u, NULL, &user), 1);
                CHECK_STR(user->kind, "anonymous");
                char *token = NULL;
                CHECK_RC(u, usher_access_token(u, NULL, 300, &token, NULL), 0);
                CHECK(!strstr(out, token));
                char *leases = NULL;
                CHECK_RC(u, usher_call(u, "list_leases", NULL, &leases), 0);
                CHECK_STR(leases, "{\"leases\":[]}");
                usher_user **users = NULL;
                CHECK_RC(u, usher_list_users(u, &users, NULL), 2);
                /* The list it printed: both users, the active one marked. */
                CHECK(strstr(out, "* u_"));
                for (int i = 0; i < 2; i++)
                        CHECK(strstr(out, users[i]->id));
                usher_user_list_free(users);
                free(leases);
                usher_secret_free(token);
                usher_user_free(user);
                usher_unref(u);
                free(out);
        }
        daemon_stop(&d);
        fprintf(stderr, "run-example %s: ok\n", argv[1]);
        return 0;
}
