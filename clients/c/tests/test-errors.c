/* What libusher does with a peer that does not behave like usherd: a scripted server on a socket of the test's own
 * answers each request with what a case gives, split, late, overlong, malformed, or not at all. Nothing here may
 * crash, hang past the call's timeout, or raise SIGPIPE. */
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "check.h"
#include "fake-daemon.h"
#include "usher.h"

enum behaviour {
        ANSWER,       /* the reply, whole */
        BYTE_BY_BYTE, /* the reply, one byte per write */
        SILENT,       /* read the request and say nothing until the client goes */
        CLOSE,        /* close as soon as the client connects */
        SLOW,         /* the reply after a pause (the client is being interrupted by signals meanwhile) */
};

struct server {
        struct fake_daemon fake;
        enum behaviour behaviour;
        const char *reply; /* "%ID%" is replaced by the request's id */
        size_t reply_len;  /* 0: strlen(reply) */
        size_t request_bytes;
};

/* On the fake daemon's thread, which blocks the signals of the EINTR case: they are for the client's thread. */
static void serve(int fd, void *userdata) {
        struct server *s = userdata;
        if (s->behaviour == CLOSE)
                return;
        /* Reads the request line (however large), taking its id. */
        char chunk[65536], id[32] = "";
        size_t id_len = 0;
        int state = 0; /* 0: looking for "id": 1: in the id 2: past it */
        const char *needle = "{\"id\":";
        size_t matched = 0;
        bool done = false;
        while (!done) {
                ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
                if (n <= 0)
                        break;
                s->request_bytes += (size_t) n;
                for (ssize_t i = 0; i < n; i++) {
                        char c = chunk[i];
                        if (state == 0 && c == needle[matched] && ++matched == strlen(needle))
                                state = 1;
                        else if (state == 1 && c >= '0' && c <= '9' && id_len < sizeof(id) - 1)
                                id[id_len++] = c;
                        else if (state == 1)
                                state = 2;
                        if (c == '\n')
                                done = true;
                }
        }
        if (s->behaviour == SILENT) {
                while (recv(fd, chunk, sizeof(chunk), 0) > 0)
                        ;
                return;
        }
        if (s->behaviour == SLOW)
                poll(NULL, 0, 200);
        size_t len = s->reply_len ? s->reply_len : strlen(s->reply);
        const char *marker = memmem(s->reply, len, "%ID%", 4);
        char *reply = malloc(len + sizeof(id));
        size_t out = 0;
        if (marker) {
                memcpy(reply, s->reply, (size_t) (marker - s->reply));
                out = (size_t) (marker - s->reply);
                memcpy(reply + out, id, id_len);
                out += id_len;
                memcpy(reply + out, marker + 4, len - (size_t) (marker - s->reply) - 4);
                out += len - (size_t) (marker - s->reply) - 4;
        } else {
                memcpy(reply, s->reply, len);
                out = len;
        }
        if (s->behaviour == BYTE_BY_BYTE)
                for (size_t i = 0; i < out; i++)
                        fake_daemon_send(fd, reply + i, 1, NULL);
        else
                fake_daemon_send(fd, reply, out, NULL);
        free(reply);
        /* Keeps the connection until the client closes it, so that "the daemon closed" is never the answer. */
        while (recv(fd, chunk, sizeof(chunk), 0) > 0)
                ;
}

static void server_start(struct server *s, enum behaviour behaviour, const char *reply) {
        s->behaviour = behaviour;
        s->reply = reply;
        fake_daemon_start(&s->fake, serve, s);
}

static void server_stop(struct server *s) {
        fake_daemon_stop(&s->fake);
}

/* One call against a server that behaves as asked; returns usher_call's value, closes everything. */
static int call_with(enum behaviour behaviour, const char *reply, size_t reply_len, uint64_t timeout_usec,
                     char **ret_result) {
        struct server s = {.reply_len = reply_len};
        server_start(&s, behaviour, reply);
        usher_t *u = NULL;
        CHECK(usher_open_path(&u, s.fake.path) == 0);
        if (timeout_usec)
                CHECK(usher_set_timeout(u, timeout_usec) == 0);
        int r = usher_call(u, "hello", NULL, ret_result);
        usher_unref(u);
        server_stop(&s);
        return r;
}

static void on_alarm(int signal) {
        (void) signal;
}

int main(void) {
        fprintf(stderr, "test-errors\n");
        char *result = NULL;

        test_step("an answer written one byte at a time");
        CHECK(call_with(BYTE_BY_BYTE, "{\"id\":%ID%,\"result\":{\"ok\":true}}\r\n", 0, 0, &result) == 0);
        CHECK_STR(result, "{\"ok\":true}");
        free(result);

        test_step("an event read with a call's answer is pending: usher_get_timeout says so, usher_next_event has it");
        {
                struct server s = {0};
                server_start(&s, ANSWER,
                             "{\"id\":%ID%,\"result\":{}}\n{\"event\":\"x\",\"generation\":1,\"data\":{}}\n");
                usher_t *u = NULL;
                CHECK(usher_open_path(&u, s.fake.path) == 0);
                CHECK(usher_call(u, "hello", NULL, NULL) == 0);
                uint64_t usec = 1;
                /* Both lines came in one read: the event is in the buffer, and the descriptor has nothing more. */
                if (usher_wait(u, 0) == 1 && usher_get_timeout(u, &usec) == 1)
                        CHECK(usec == 0);
                usher_event *event = NULL;
                CHECK(usher_next_event(u, &event) == 1);
                CHECK_STR(event->name, "x");
                CHECK(event->generation == 1);
                usher_event_free(event);
                CHECK(usher_get_timeout(u, &usec) == 0 && usec == UINT64_MAX);
                usher_unref(u);
                server_stop(&s);
        }

        test_step("a daemon's error: its code, message and data");
        {
                struct server s = {0};
                server_start(&s, ANSWER,
                             "{\"id\":%ID%,\"error\":{\"code\":\"rate_limited\",\"message\":\"wait\",\"data\":"
                             "{\"retry_after\":30}}}\n");
                usher_t *u = NULL;
                CHECK(usher_open_path(&u, s.fake.path) == 0);
                CHECK(usher_call(u, "hello", NULL, &result) == -EAGAIN);
                CHECK_STR(usher_error_code(u), "rate_limited");
                CHECK_STR(usher_error_message(u), "wait");
                CHECK_STR(usher_error_data(u), "{\"retry_after\":30}");
                usher_unref(u);
                server_stop(&s);
        }
        CHECK(call_with(ANSWER, "{\"id\":%ID%,\"error\":{\"code\":\"a_code_from_the_future\",\"message\":\"\"}}\n", 0,
                        0, NULL) == -EREMOTEIO);

        test_step("answers that are not usherd's: -EBADMSG or -EPROTO, never a crash");
        static const char *const malformed[] = {
                "not json\n",
                "[1,2,3]\n",
                "{\"id\":%ID%}\n",
                "{\"id\":%ID%,\"error\":\"boom\"}\n",
                "{\"id\":%ID%,\"error\":{\"code\":7}}\n",
                "{\"id\":\"%ID%\",\"result\":{}}\n",
                "{\"id\":%ID%,\"result\":{}} trailing\n",
                "{\"id\":%ID%,\"result\":\"\xff\xfe\"}\n",
                "{\"event\":\"x\"}\n",
                "{\"event\":\"x\",\"generation\":-1,\"data\":{}}\n",
                "{\"id\":%ID%,\"result\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}\n",
        };
        for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
                int r = call_with(ANSWER, malformed[i], 0, 0, NULL);
                if (r != -EBADMSG) {
                        fprintf(stderr, "malformed answer %zu gave %d\n", i, r);
                        exit(1);
                }
        }
        CHECK(call_with(ANSWER, "{\"id\":999999,\"result\":{}}\n", 0, 0, NULL) == -EPROTO);
        /* A NUL inside the line. */
        CHECK(call_with(ANSWER, "{\"id\":%ID%,\"result\":{\"a\":1}\0}\n", 30, 0, NULL) == -EBADMSG);

        test_step("an answer without end: -EMSGSIZE at the line limit, not a buffer without bound");
        {
                size_t big = 256 * 1024;
                char *endless = malloc(big);
                memset(endless, ' ', big);
                memcpy(endless, "{\"id\":%ID%,\"result\":\"", 21);
                struct server s = {.reply_len = big};
                server_start(&s, ANSWER, endless);
                usher_t *u = NULL;
                CHECK(usher_open_path(&u, s.fake.path) == 0);
                CHECK(usher_set_max_line(u, 64 * 1024) == 0);
                CHECK(usher_call(u, "hello", NULL, NULL) == -EMSGSIZE);
                CHECK(usher_get_fd(u) == -ENOTCONN);
                usher_unref(u);
                server_stop(&s);
                free(endless);
        }

        test_step("a peer that never answers: -ETIMEDOUT after usher_set_timeout");
        CHECK(call_with(SILENT, NULL, 0, 100000, NULL) == -ETIMEDOUT);

        test_step("a peer that closes: -ECONNRESET, and no SIGPIPE");
        CHECK(call_with(CLOSE, NULL, 0, 0, NULL) == -ECONNRESET);
        {
                /* A request far larger than the socket's buffer, to a peer that is gone: the write fails. */
                struct server s = {0};
                server_start(&s, CLOSE, NULL);
                usher_t *u = NULL;
                CHECK(usher_open_path(&u, s.fake.path) == 0);
                server_stop(&s);
                size_t big = 4 * 1024 * 1024;
                char *params = malloc(big + 16);
                strcpy(params, "{\"x\":\"");
                memset(params + 6, 'a', big);
                strcpy(params + 6 + big, "\"}");
                CHECK(usher_call(u, "hello", params, NULL) == -ECONNRESET);
                CHECK(usher_get_fd(u) == -ENOTCONN);
                free(params);
                usher_unref(u);
        }

        test_step("a large request written in parts; signals interrupting the call (EINTR)");
        {
                struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART: poll and send see EINTR */
                CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
                struct itimerval every_ms = {.it_interval = {0, 10000}, .it_value = {0, 10000}};
                CHECK(setitimer(ITIMER_REAL, &every_ms, NULL) == 0);
                struct server s = {0};
                server_start(&s, SLOW, "{\"id\":%ID%,\"result\":{\"big\":true}}\n");
                usher_t *u = NULL;
                CHECK(usher_open_path(&u, s.fake.path) == 0);
                size_t big = 2 * 1024 * 1024;
                char *params = malloc(big + 16);
                strcpy(params, "{\"x\":\"");
                memset(params + 6, 'a', big);
                strcpy(params + 6 + big, "\"}");
                CHECK(usher_call(u, "hello", params, &result) == 0);
                CHECK_STR(result, "{\"big\":true}");
                free(result);
                free(params);
                usher_unref(u);
                server_stop(&s);
                CHECK(s.request_bytes > big);
                struct itimerval off = {0};
                CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
        }

        test_step("argument checks");
        usher_t *u = NULL;
        CHECK(usher_open_path(NULL, "/x") == -EINVAL);
        CHECK(usher_open_path(&u, NULL) == -EINVAL);
        CHECK(usher_open_path(&u, "") == -EINVAL);
        CHECK(usher_call(NULL, "hello", NULL, NULL) == -EINVAL);
        CHECK(usher_get_fd(NULL) == -EINVAL);
        CHECK(usher_process(NULL) == -EINVAL);
        CHECK(usher_error_code(NULL) == NULL);
        usher_user_free(NULL);
        usher_user_list_free(NULL);
        usher_seat_free(NULL);
        usher_seat_list_free(NULL);
        usher_lease_free(NULL);
        usher_event_free(NULL);
        usher_secret_free(NULL);

        fprintf(stderr, "test-errors: ok\n");
        return 0;
}
