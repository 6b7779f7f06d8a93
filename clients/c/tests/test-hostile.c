/* A daemon gone bad: a socket server of the test's own answers with JSON nested without end, floods events while a
 * call waits for its answer (or between calls), and hands out tokens that cannot go into an HTTP header. libusher
 * bounds what it holds and says so with a negative errno (-EBADMSG, -ENOBUFS), never by growing until the call's
 * timeout, and never crashes (this test also runs under ASan+UBSan and valgrind). */
#include <sys/socket.h>

#include "check.h"
#include "fake-daemon.h"
#include "usher.h"

/* The documented bounds (usher_process(3), docs/c-library.md): events queued and not yet taken. */
#define QUEUED_EVENTS 4096
#define QUEUED_EVENT_BYTES ((size_t) 16 * 1024 * 1024)

enum behaviour {
        ANSWER,            /* every request: reply, with "%ID%" replaced by the request's id */
        FLOOD,             /* every request: events without end (until budget bytes), no answer */
        FLOOD_AFTER_FIRST, /* the first request answered, then events without end (until budget bytes) */
};

struct server {
        struct fake_daemon fake;
        enum behaviour behaviour;
        const char *reply;
        const char *event; /* one event line, for the floods */
        size_t budget;     /* the most a flood sends: a client that bounds nothing waits for its timeout instead of
                            * the machine running out of memory */
        size_t sent;
};

/* False once the client closed the connection: what the test expects of it. */
static bool send_all(struct server *s, int fd, const char *p, size_t n) {
        return fake_daemon_send(fd, p, n, &s->sent);
}

static bool flood(struct server *s, int fd) {
        size_t len = strlen(s->event), copies = 65536 / len + 1;
        char *chunk = malloc(len * copies);
        CHECK(chunk);
        for (size_t i = 0; i < copies; i++)
                memcpy(chunk + i * len, s->event, len);
        bool ok = true;
        while (ok && s->sent < s->budget)
                ok = send_all(s, fd, chunk, len * copies);
        free(chunk);
        return ok;
}

/* The reply with the request's id in place of "%ID%". */
static bool answer(struct server *s, int fd, long id) {
        const char *marker = strstr(s->reply, "%ID%");
        char digits[24];
        int n = snprintf(digits, sizeof(digits), "%ld", id);
        if (!marker)
                return send_all(s, fd, s->reply, strlen(s->reply));
        return send_all(s, fd, s->reply, (size_t) (marker - s->reply)) && send_all(s, fd, digits, (size_t) n) &&
                send_all(s, fd, marker + 4, strlen(marker + 4));
}

static void serve(int fd, void *userdata) {
        struct server *s = userdata;
        /* Each request line is {"id":N,...}, as libusher writes them. */
        char line[65536];
        size_t len = 0;
        long requests = 0;
        bool ok = true;
        while (ok) {
                ssize_t n = recv(fd, line + len, sizeof(line) - len, 0);
                if (n <= 0)
                        break;
                len += (size_t) n;
                char *end;
                while (ok && (end = memchr(line, '\n', len))) {
                        long id = strtol(line + 6, NULL, 10);
                        requests++;
                        if (s->behaviour == ANSWER || (s->behaviour == FLOOD_AFTER_FIRST && requests == 1))
                                ok = answer(s, fd, id);
                        if (ok && (s->behaviour == FLOOD || (s->behaviour == FLOOD_AFTER_FIRST && requests == 1)))
                                ok = flood(s, fd);
                        len -= (size_t) (end + 1 - line);
                        memmove(line, end + 1, len);
                }
        }
}

static void server_start(struct server *s) {
        fake_daemon_start(&s->fake, serve, s);
}

/* Joins the server's thread: it ends when the client closed its connection. */
static void server_stop(struct server *s) {
        fake_daemon_stop(&s->fake);
}

static usher_t *connect_to(const struct server *s) {
        usher_t *u = NULL;
        CHECK(usher_open_path(&u, s->fake.path) == 0);
        CHECK(usher_set_timeout(u, HANG_GUARD_SECONDS * 1000000ULL) == 0);
        return u;
}

/* JSON nested depth levels deep: [[[...]]]. */
static char *nested(size_t depth) {
        char *text = malloc(2 * depth + 1);
        CHECK(text);
        memset(text, '[', depth);
        memset(text + depth, ']', depth);
        text[2 * depth] = 0;
        return text;
}

static char *format(const char *a, const char *b, const char *c) {
        char *text = malloc(strlen(a) + strlen(b) + strlen(c) + 1);
        CHECK(text);
        strcpy(text, a);
        strcat(text, b);
        strcat(text, c);
        return text;
}

/* One call of usher_call against a server answering reply; returns what the call returned. */
static int call_against(const char *reply) {
        struct server s = {.behaviour = ANSWER, .reply = reply};
        server_start(&s);
        usher_t *u = connect_to(&s);
        char *result = NULL;
        int r = usher_call(u, "hello", NULL, &result);
        free(result);
        /* Whatever went wrong, the connection was closed rather than left out of step. */
        if (r < 0)
                CHECK(usher_get_fd(u) == -ENOTCONN);
        usher_unref(u);
        server_stop(&s);
        return r;
}

static int count_event(usher_t *u, const usher_event *event, void *userdata) {
        (void) u, (void) event;
        (*(size_t *) userdata)++;
        return 0;
}

static void flood_during_a_call(const char *event, size_t budget) {
        struct server s = {.behaviour = FLOOD, .event = event, .budget = budget};
        server_start(&s);
        usher_t *u = connect_to(&s);
        CHECK_RC(u, usher_call(u, "hello", NULL, NULL), -ENOBUFS);
        CHECK(usher_error_code(u) == NULL); /* the library's own error, not the daemon's */
        CHECK(usher_get_fd(u) == -ENOTCONN);
        /* What was queued is still handed out, then the end of the connection. */
        usher_event *e = NULL;
        size_t taken = 0;
        while (usher_next_event(u, &e) == 1) {
                usher_event_free(e);
                taken++;
        }
        CHECK(taken > 0 && taken <= QUEUED_EVENTS);
        CHECK(usher_next_event(u, &e) == -ENOTCONN);
        usher_unref(u);
        server_stop(&s);
        /* The library stopped reading at its bound: the daemon could not make it take the whole budget. */
        CHECK(s.sent < budget);
}

static const char small_event[] = "{\"event\":\"user_logged_in\",\"generation\":1,\"data\":{}}\n";

int main(void) {
        fprintf(stderr, "test-hostile\n");

        test_step("an answer nested without end: -EBADMSG, the connection closed");
        {
                static const size_t depths[] = {33, 1000, 100000};
                for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
                        char *deep = nested(depths[i]);
                        char *reply = format("{\"id\":%ID%,\"result\":", deep, "}\n");
                        CHECK(call_against(reply) == -EBADMSG);
                        free(reply);
                        free(deep);
                }
                /* 32 levels with the answer object: read. */
                char *deep = nested(31);
                char *reply = format("{\"id\":%ID%,\"result\":", deep, "}\n");
                CHECK(call_against(reply) == 0);
                free(reply);
                free(deep);
        }

        test_step("an event nested without end, before the answer: -EBADMSG");
        {
                char *deep = nested(100000);
                char *reply = format("{\"event\":\"x\",\"generation\":1,\"data\":{\"x\":", deep,
                                     "}}\n{\"id\":%ID%,\"result\":{}}\n");
                CHECK(call_against(reply) == -EBADMSG);
                free(reply);
                free(deep);
        }

        test_step("a NUL in any string or key: -EBADMSG, the connection closed; the text \\u0000 is fine");
        CHECK(call_against("{\"id\":%ID%,\"result\":{\"note\":[\"fine\",\"not\\u0000fine\"]}}\n") == -EBADMSG);
        CHECK(call_against("{\"id\":%ID%,\"result\":{\"access_token\\u0000x\":\"y\"}}\n") == -EBADMSG);
        CHECK(call_against("{\"id\":%ID%,\"result\":{\"a\":\"\\\\\\u0000\"}}\n") == -EBADMSG);
        CHECK(call_against("{\"id\":%ID%,\"result\":{\"a\":\"\\\\u0000\"}}\n") == 0);

        test_step("events within the bound, before an answer: every one kept");
        {
                size_t len = strlen(small_event);
                char *reply = malloc(QUEUED_EVENTS * len + 64);
                CHECK(reply);
                for (size_t i = 0; i < QUEUED_EVENTS; i++)
                        memcpy(reply + i * len, small_event, len);
                strcpy(reply + QUEUED_EVENTS * len, "{\"id\":%ID%,\"result\":{}}\n");
                struct server s = {.behaviour = ANSWER, .reply = reply};
                server_start(&s);
                usher_t *u = connect_to(&s);
                CHECK_RC(u, usher_call(u, "hello", NULL, NULL), 0);
                size_t seen = 0;
                CHECK(usher_set_event_callback(u, count_event, &seen) == 0);
                CHECK(usher_process(u) == QUEUED_EVENTS);
                CHECK(seen == QUEUED_EVENTS);
                /* Taken, they make room again: the next call's events fit as well. */
                CHECK_RC(u, usher_call(u, "hello", NULL, NULL), 0);
                CHECK(usher_process(u) == QUEUED_EVENTS);
                usher_unref(u);
                server_stop(&s);
                free(reply);
        }

        test_step("a flood of small events while a call waits: -ENOBUFS at 4096 events");
        flood_during_a_call(small_event, 8 * QUEUED_EVENTS * sizeof(small_event));

        test_step("a flood of large events while a call waits: -ENOBUFS at 16 MiB");
        {
                size_t padding = 256 * 1024;
                char *pad = malloc(padding + 1);
                CHECK(pad);
                memset(pad, 'x', padding);
                pad[padding] = 0;
                char *event = format("{\"event\":\"user_logged_in\",\"generation\":1,\"data\":{\"padding\":\"", pad,
                                     "\"}}\n");
                flood_during_a_call(event, 4 * QUEUED_EVENT_BYTES);
                free(event);
                free(pad);
        }

        test_step("a flood between calls: usher_process reads no more than the bound at a time");
        {
                size_t budget = 8 * QUEUED_EVENTS * sizeof(small_event);
                struct server s = {.behaviour = FLOOD_AFTER_FIRST,
                                   .reply = "{\"id\":%ID%,\"result\":{}}\n",
                                   .event = small_event,
                                   .budget = budget};
                server_start(&s);
                usher_t *u = connect_to(&s);
                CHECK_RC(u, usher_call(u, "hello", NULL, NULL), 0);
                size_t seen = 0;
                CHECK(usher_set_event_callback(u, count_event, &seen) == 0);
                /* The main loop's part: wait for the descriptor, then process. Each round hands out at most the
                 * bound, so the program gets control back however fast the daemon writes. */
                while (seen < 3 * QUEUED_EVENTS) {
                        CHECK(usher_wait(u, HANG_GUARD_SECONDS * 1000000ULL) == 1);
                        int r = usher_process(u);
                        CHECK(r >= 0 && r <= QUEUED_EVENTS);
                }
                /* A call now has the flood before its answer: it ends at the bound too. */
                CHECK_RC(u, usher_call(u, "hello", NULL, NULL), -ENOBUFS);
                usher_unref(u);
                server_stop(&s);
                CHECK(s.sent < budget);
        }

        test_step("tokens that cannot go into an HTTP header: -EBADMSG");
        {
                static const char *const bad[] = {"secret\\u0000tail", "secret\\r\\nX-Injected: 1", "secret tail",
                                                  "secret\\u00e9", "secret\\ttail", ""};
                for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                        char *reply = format("{\"id\":%ID%,\"result\":{\"user_id\":\"u_1\",\"access_token\":\"", bad[i],
                                             "\",\"token_type\":\"Bearer\",\"expires_at\":\"2030-01-01T00:00:00Z\","
                                             "\"expires_in\":300}}\n");
                        struct server s = {.behaviour = ANSWER, .reply = reply};
                        server_start(&s);
                        usher_t *u = connect_to(&s);
                        char *token = NULL;
                        int r = usher_access_token(u, NULL, 60, &token, NULL);
                        if (r != -EBADMSG) {
                                fprintf(stderr, "token %zu (%s) gave %d\n", i, bad[i], r);
                                exit(1);
                        }
                        CHECK(token == NULL);
                        usher_unref(u);
                        server_stop(&s);
                        free(reply);
                }
                struct server s = {.behaviour = ANSWER,
                                   .reply = "{\"id\":%ID%,\"result\":{\"proof\":\"secret\\u0000\"}}\n"};
                server_start(&s);
                usher_t *u = connect_to(&s);
                char *proof = NULL;
                CHECK(usher_dpop_proof(u, NULL, NULL, NULL, "GET", "https://api.example.com/", NULL, &proof) ==
                      -EBADMSG);
                CHECK(proof == NULL);
                usher_unref(u);
                server_stop(&s);
        }

        test_step("a well-formed token is taken");
        {
                struct server s = {.behaviour = ANSWER,
                                   .reply = "{\"id\":%ID%,\"result\":{\"user_id\":\"u_1\",\"access_token\":"
                                            "\"eyJ0eXAi.eyJzdWIi.c2ln-_~+/=\",\"token_type\":\"Bearer\",\"expires_at\":"
                                            "\"2030-01-01T00:00:00Z\",\"expires_in\":300}}\n"};
                server_start(&s);
                usher_t *u = connect_to(&s);
                char *token = NULL;
                CHECK_RC(u, usher_access_token(u, NULL, 60, &token, NULL), 0);
                CHECK_STR(token, "eyJ0eXAi.eyJzdWIi.c2ln-_~+/=");
                usher_secret_free(token);
                usher_unref(u);
                server_stop(&s);
        }

        fprintf(stderr, "test-hostile: ok\n");
        return 0;
}
