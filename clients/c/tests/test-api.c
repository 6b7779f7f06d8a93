/* Every synchronous function of libusher against the real usherd: what a program sees, answers and errors. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "daemon.h"
#include "usher.h"

static void socket_discovery(void) {
        test_step("usher_socket_path follows the CLI's rules");
        char *path = NULL;
        setenv("USHER_SOCKET", "/tmp/elsewhere.sock", 1);
        CHECK(usher_socket_path(&path) == 0);
        CHECK_STR(path, "/tmp/elsewhere.sock");
        free(path);

        /* A per-user daemon's socket, in a runtime directory anyone may look into. */
        char runtime[] = "/tmp/usher-c-runtime-XXXXXX";
        CHECK(mkdtemp(runtime));
        CHECK(chmod(runtime, 0755) == 0);
        char dir[128], sock[160], with_slash[160];
        snprintf(dir, sizeof(dir), "%s/usher", runtime);
        snprintf(sock, sizeof(sock), "%s/usher.sock", dir);
        snprintf(with_slash, sizeof(with_slash), "%s/", runtime);
        CHECK(mkdir(dir, 0755) == 0);

        /* An empty USHER_SOCKET counts as unset. */
        setenv("USHER_SOCKET", "", 1);
        setenv("XDG_RUNTIME_DIR", runtime, 1);
        CHECK(usher_socket_path(&path) == 0);
        CHECK_STR(path, "/run/usher/usher.sock"); /* nothing there yet */
        free(path);
        int fd = open(sock, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        close(fd);

        /* Someone other than root gets the per-user socket once it exists (with or without a trailing slash on
         * XDG_RUNTIME_DIR); root always gets the system daemon's. */
        if (getuid() == 0) {
                CHECK(usher_socket_path(&path) == 0);
                CHECK_STR(path, "/run/usher/usher.sock");
                free(path);
                pid_t pid = fork();
                CHECK(pid >= 0);
                if (pid == 0) {
                        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                                _exit(2);
                        char *p = NULL;
                        if (usher_socket_path(&p) < 0 || strcmp(p, sock) != 0)
                                _exit(3);
                        free(p);
                        setenv("XDG_RUNTIME_DIR", with_slash, 1);
                        if (usher_socket_path(&p) < 0 || strcmp(p, sock) != 0)
                                _exit(4);
                        free(p);
                        _exit(0);
                }
                int status = 0;
                CHECK(waitpid(pid, &status, 0) == pid);
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        } else {
                CHECK(usher_socket_path(&path) == 0);
                CHECK_STR(path, sock);
                free(path);
                setenv("XDG_RUNTIME_DIR", with_slash, 1);
                CHECK(usher_socket_path(&path) == 0);
                CHECK_STR(path, sock);
                free(path);
        }
        unlink(sock);
        rmdir(dir);
        rmdir(runtime);
        unsetenv("XDG_RUNTIME_DIR");
        unsetenv("USHER_SOCKET");
}

static void opening(const struct test_daemon *d) {
        test_step("usher_open, usher_open_path, usher_ref/unref, usher_close");
        usher_t *u = NULL;
        CHECK(usher_open_path(&u, "/tmp/usher-c-nothing-here.sock") == -ENOENT);
        char long_path[200];
        memset(long_path, 'a', sizeof(long_path) - 1);
        long_path[0] = '/';
        long_path[sizeof(long_path) - 1] = 0;
        CHECK(usher_open_path(&u, long_path) == -ENAMETOOLONG);

        setenv("USHER_SOCKET", d->socket, 1);
        CHECK(usher_open(&u) == 0);
        unsetenv("USHER_SOCKET");
        int fd = usher_get_fd(u);
        CHECK(fd >= 0);
        CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
        CHECK(usher_get_events(u) == POLLIN);

        char *hello = NULL;
        CHECK_RC(u, usher_call(u, "hello", NULL, &hello), 0);
        CHECK(strstr(hello, "\"server\":\"usherd\""));
        free(hello);

        CHECK(usher_ref(u) == u);
        CHECK(usher_unref(u) == NULL); /* one reference left */
        CHECK_RC(u, usher_call(u, "hello", "{}", NULL), 0);
        usher_close(u);
        CHECK(usher_get_fd(u) == -ENOTCONN);
        CHECK(usher_call(u, "hello", NULL, NULL) == -ENOTCONN);
        CHECK(usher_unref(u) == NULL);
        CHECK(usher_unref(NULL) == NULL);
}

static void users(const struct test_daemon *d) {
        usher_t *u = daemon_connect(d);
        usher_user *user = NULL, **list = NULL;
        size_t n = 0;

        test_step("nobody logged in: current_user 0, access_token no_active_user");
        CHECK_RC(u, usher_current_user(u, NULL, &user), 0);
        CHECK(user == NULL);
        char *token = NULL;
        uint64_t expires = 0;
        CHECK_RC(u, usher_access_token(u, NULL, 60, &token, &expires), -ENODATA);
        CHECK_STR(usher_error_code(u), "no_active_user");
        CHECK(usher_error_message(u) && *usher_error_message(u));

        test_step("login anonymous");
        CHECK_RC(u, usher_login_anonymous(u, NULL, NULL, &user), 0);
        CHECK(usher_error_code(u) == NULL); /* a success clears the last error */
        CHECK_STR(user->kind, "anonymous");
        CHECK_STR(user->state, "logged_in");
        CHECK_STR(user->provider, "local");
        CHECK(user->active == 1);
        CHECK(user->email == NULL);
        char *anonymous_id = strdup(user->id);
        user = usher_user_free(user);

        test_step("register and login with a password buffer (not NUL-terminated)");
        const char password[] = "correct horse!!"; /* the last two bytes are not part of it */
        CHECK_RC(u, usher_register(u, NULL, "ann@example.com", password, 13), 0);
        CHECK_RC(u, usher_register(u, NULL, "ann@example.com", password, 13), -EEXIST);
        CHECK_STR(usher_error_code(u), "account_exists");
        CHECK_RC(u, usher_login_password(u, NULL, "ann@example.com", password, 15, NULL, NULL), -EKEYREJECTED);
        CHECK_STR(usher_error_code(u), "invalid_credentials");
        CHECK(!strstr(usher_error_message(u), "horse"));
        CHECK_RC(u, usher_login_password(u, "local", "ann@example.com", password, 13, NULL, &user), 0);
        CHECK_STR(user->email, "ann@example.com");
        CHECK_STR(user->kind, "email_password");
        CHECK(user->active == 1);
        CHECK(user->created_at && user->access_token_expires_at && user->last_login_at);
        char *ann_id = strdup(user->id);
        user = usher_user_free(user);
        CHECK_RC(u, usher_login_anonymous(u, "nope", NULL, NULL), -ENOENT);
        CHECK_STR(usher_error_code(u), "provider_not_found");

        test_step("list_users, current_user");
        CHECK_RC(u, usher_list_users(u, &list, &n), 2);
        CHECK(n == 2 && list[2] == NULL);
        CHECK_STR(list[0]->id, anonymous_id);
        CHECK_STR(list[1]->id, ann_id);
        CHECK(list[0]->active == 0 && list[1]->active == 1);
        usher_user_list_free(list);
        CHECK_RC(u, usher_current_user(u, NULL, &user), 1);
        CHECK_STR(user->id, ann_id);
        user = usher_user_free(user);

        test_step("switch_user");
        CHECK_RC(u, usher_switch_user(u, anonymous_id, NULL, &user), 0);
        CHECK_STR(user->id, anonymous_id);
        CHECK(user->active == 1);
        user = usher_user_free(user);
        CHECK_RC(u, usher_current_user(u, NULL, &user), 1);
        CHECK_STR(user->id, anonymous_id);
        user = usher_user_free(user);
        CHECK_RC(u, usher_switch_user(u, "u_nobody", NULL, NULL), -ENOENT);
        CHECK_STR(usher_error_code(u), "user_not_found");
        CHECK_RC(u, usher_switch_user(u, ann_id, "no-such-seat", NULL), -ENOENT);
        CHECK_STR(usher_error_code(u), "seat_not_found");

        test_step("access_token with min_valid: the daemon's token, and its expiry");
        CHECK_RC(u, usher_access_token(u, NULL, 300, &token, &expires), 0);
        CHECK(strchr(token, '.') && strchr(strchr(token, '.') + 1, '.')); /* a JWT */
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t now_usec = (uint64_t) now.tv_sec * 1000000ULL;
        CHECK(expires > now_usec + 300ULL * 1000000ULL);
        CHECK(expires < now_usec + 31ULL * 60ULL * 1000000ULL); /* the local provider's 30 minutes */
        char *raw = NULL;
        CHECK_RC(u, usher_call(u, "access_token", "{\"min_valid\": 300}", &raw), 0);
        CHECK(strstr(raw, token));
        explicit_bzero(raw, strlen(raw));
        free(raw);
        usher_secret_free(token);

        test_step("a narrowed token: for an audience, with no more than some scopes");
        const char *const scopes[] = {"pay", "balance", NULL};
        char *narrowed = NULL;
        CHECK_RC(u, usher_access_token_narrowed(u, NULL, "https://bank.example", scopes, 60, &narrowed, &expires), 0);
        CHECK(strchr(narrowed, '.') && expires > now_usec);
        /* The daemon holds it for this program: the same narrowing asked by hand answers it, and says what it is. */
        CHECK_RC(u, usher_call(u, "access_token",
                               "{\"audience\": \"https://bank.example\", \"scopes\": [\"balance\", \"pay\"]}", &raw),
                 0);
        CHECK(strstr(raw, narrowed));
        CHECK(strstr(raw, "\"audience\":\"https:") && strstr(raw, "bank.example\"")); /* json-c may escape the slashes */
        CHECK(strstr(raw, "\"scopes\":[\"balance\",\"pay\"]"));
        explicit_bzero(raw, strlen(raw));
        free(raw);
        usher_secret_free(narrowed);
        const char *const none[] = {NULL};
        CHECK(usher_access_token_narrowed(u, NULL, NULL, none, 60, &narrowed, NULL) == -EINVAL);

        test_step("dpop_proof: not_supported for the local provider's bearer tokens");
        char *proof = NULL;
        CHECK_RC(u, usher_dpop_proof(u, NULL, NULL, NULL, "GET", "https://api.example.com/x", NULL, &proof),
                 -EOPNOTSUPP);
        CHECK_STR(usher_error_code(u), "not_supported");
        CHECK(proof == NULL);
        CHECK(usher_dpop_proof(u, NULL, NULL, NULL, NULL, "https://api.example.com/x", NULL, &proof) == -EINVAL);

        test_step("logout and remove_user");
        CHECK_RC(u, usher_logout(u, ann_id, NULL, &user), 0);
        CHECK_STR(user->state, "logged_out");
        CHECK(user->access_token_expires_at == NULL);
        user = usher_user_free(user);
        CHECK_RC(u, usher_switch_user(u, ann_id, NULL, NULL), -ENOKEY);
        CHECK_STR(usher_error_code(u), "user_logged_out");
        CHECK_RC(u, usher_remove_user(u, ann_id), 0);
        CHECK_RC(u, usher_remove_user(u, ann_id), -ENOENT);
        CHECK_RC(u, usher_list_users(u, &list, NULL), 1);
        CHECK_STR(list[0]->id, anonymous_id);
        usher_user_list_free(list);

        test_step("the password is nowhere in the daemon's log");
        char log_path[128];
        snprintf(log_path, sizeof(log_path), "%s/usherd.log", d->dir);
        FILE *log = fopen(log_path, "r");
        CHECK(log);
        char *line = NULL;
        size_t cap = 0;
        size_t lines = 0;
        while (getline(&line, &cap, log) > 0) {
                lines++;
                CHECK(!strstr(line, "correct horse"));
        }
        CHECK(lines > 0);
        free(line);
        fclose(log);

        free(anonymous_id);
        free(ann_id);
        usher_unref(u);
}

static int count_leases(usher_t *u) {
        char *result = NULL;
        CHECK_RC(u, usher_call(u, "list_leases", NULL, &result), 0);
        int n = 0;
        for (const char *p = result; (p = strstr(p, "\"lease\":")); p++)
                n++;
        free(result);
        return n;
}

static void seats_and_leases(const struct test_daemon *d) {
        usher_t *u = daemon_connect(d), *holder = daemon_connect(d);
        usher_user *user = NULL;

        test_step("list_seats");
        CHECK_RC(u, usher_login_anonymous(u, NULL, NULL, &user), 0);
        usher_seat **seats = NULL;
        size_t n = 0;
        CHECK_RC(u, usher_list_seats(u, &seats, &n), 1);
        CHECK(n == 1 && seats[0]->name && seats[0]->present == 1);
        CHECK_STR(seats[0]->user_id, user->id);
        usher_seat_list_free(seats);
        CHECK_RC(u, usher_register(u, NULL, "bob@example.com", "bob's password", 14), 0);
        usher_user *bob = NULL;
        CHECK_RC(u, usher_login_password(u, NULL, "bob@example.com", "bob's password", 14, NULL, &bob), 0);

        test_step("inhibit holds the active user in place; release lets go");
        usher_lease *lease = NULL;
        CHECK_RC(holder, usher_inhibit(holder, NULL, "block", "test-api", "a payment", &lease), 0);
        CHECK(lease->id && strncmp(lease->id, "l_", 2) == 0);
        CHECK_RC(u, usher_switch_user(u, user->id, NULL, NULL), -EBUSY);
        CHECK_STR(usher_error_code(u), "inhibited");
        CHECK(usher_error_data(u) && strstr(usher_error_data(u), "a payment"));
        CHECK_RC(holder, usher_release(holder, lease->id), 0);
        CHECK_RC(holder, usher_release(holder, lease->id), -ENOENT);
        CHECK_STR(usher_error_code(holder), "lease_not_found");
        CHECK_RC(u, usher_switch_user(u, user->id, NULL, NULL), 0);
        lease = usher_lease_free(lease);
        CHECK_RC(holder, usher_inhibit(holder, NULL, "sideways", "test-api", "why", NULL), -EINVAL);
        CHECK_STR(usher_error_code(holder), "invalid_params");

        test_step("a lease lives as long as its connection");
        CHECK_RC(holder, usher_inhibit(holder, NULL, "block", "test-api", "until closed", NULL), 0);
        CHECK_RC(u, usher_switch_user(u, bob->id, NULL, NULL), -EBUSY);
        usher_unref(holder);
        EVENTUALLY(count_leases(u) == 0);
        CHECK_RC(u, usher_switch_user(u, bob->id, NULL, NULL), 0);

        test_step("a locked seat refuses tokens until the PIN unlocks it");
        CHECK_RC(u, usher_set_pin(u, NULL, "4821", 4), 0);
        CHECK_RC(u, usher_set_pin(u, NULL, "12", 2), -EINVAL);
        CHECK_STR(usher_error_code(u), "invalid_params");
        CHECK_RC(u, usher_lock_seat(u, NULL), 0);
        char *token = NULL;
        CHECK_RC(u, usher_access_token(u, NULL, 0, &token, NULL), -EPERM);
        CHECK_STR(usher_error_code(u), "seat_locked");
        CHECK(usher_error_data(u) && strstr(usher_error_data(u), "seat0"));
        CHECK_RC(u, usher_unlock(u, NULL, "0000", 4), -EKEYREJECTED);
        CHECK_STR(usher_error_code(u), "pin_incorrect");
        CHECK_RC(u, usher_unlock(u, NULL, "4821", 4), 0);
        CHECK_RC(u, usher_access_token(u, NULL, 0, &token, NULL), 0);
        usher_secret_free(token);
        CHECK_RC(u, usher_lock_seat(u, "no-such-seat"), -ENOENT);

        usher_user_free(user);
        usher_user_free(bob);
        usher_unref(u);
}

static void generic_call(const struct test_daemon *d) {
        test_step("usher_call: any method, and its errors");
        usher_t *u = daemon_connect(d);
        char *result = NULL;
        CHECK_RC(u, usher_call(u, "no_such_method", NULL, &result), -EOPNOTSUPP);
        CHECK_STR(usher_error_code(u), "unknown_method");
        CHECK(result == NULL);
        CHECK_RC(u, usher_call(u, "list_users", "{\"limit\": \"ten\"}", &result), -EINVAL);
        CHECK_STR(usher_error_code(u), "invalid_params");
        /* Not JSON, or not an object: refused before anything is sent (no daemon error). */
        CHECK_RC(u, usher_call(u, "list_users", "{\"limit\": ", &result), -EINVAL);
        CHECK(usher_error_code(u) == NULL);
        CHECK_RC(u, usher_call(u, "list_users", "[1]", &result), -EINVAL);
        CHECK_RC(u, usher_call(u, "status", "{}", &result), 0);
        CHECK(strstr(result, "\"uptime_seconds\""));
        free(result);
        usher_unref(u);
}

static void overlong_answer(const struct test_daemon *d) {
        test_step("an answer longer than usher_set_max_line is refused and closes the connection");
        usher_t *u = daemon_connect(d);
        CHECK(usher_set_max_line(u, 100) == -EINVAL);
        CHECK_RC(u, usher_set_max_line(u, 4096), 0);
        char email[64];
        for (int i = 0; i < 12; i++) {
                snprintf(email, sizeof(email), "user%d@example.com", i);
                CHECK_RC(u, usher_register(u, NULL, email, "password", 8), 0);
                CHECK_RC(u, usher_login_password(u, NULL, email, "password", 8, NULL, NULL), 0);
        }
        usher_user **list = NULL;
        CHECK_RC(u, usher_list_users(u, &list, NULL), -EMSGSIZE);
        CHECK(usher_get_fd(u) == -ENOTCONN);
        usher_unref(u);
        u = daemon_connect(d);
        CHECK(usher_list_users(u, &list, NULL) >= 12);
        usher_user_list_free(list);
        usher_unref(u);
}

int main(void) {
        fprintf(stderr, "test-api\n");
        socket_discovery();
        struct test_daemon d;
        daemon_start(&d, NULL);
        opening(&d);
        users(&d);
        seats_and_leases(&d);
        generic_call(&d);
        overlong_answer(&d);
        daemon_stop(&d);
        fprintf(stderr, "test-api: ok\n");
        return 0;
}
