/* The event API driven by a poll(2) loop, as a program's own main loop would drive it, against the real usherd. */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "check.h"
#include "daemon.h"
#include "usher.h"

struct seen {
        char names[32][32];
        char user_ids[32][64];
        char previous_user_ids[32][64];
        uint64_t generations[32];
        size_t n;
        int stop_after; /* the callback returns -ECANCELED once this many were seen (0: never) */
};

static int on_event(usher_t *u, const usher_event *event, void *userdata) {
        struct seen *seen = userdata;
        (void) u;
        CHECK(event->name && event->data && event->data[0] == '{');
        if (seen->n < 32) {
                snprintf(seen->names[seen->n], sizeof(seen->names[0]), "%s", event->name);
                snprintf(seen->user_ids[seen->n], sizeof(seen->user_ids[0]), "%s",
                         event->user_id ? event->user_id : "");
                snprintf(seen->previous_user_ids[seen->n], sizeof(seen->previous_user_ids[0]), "%s",
                         event->previous_user_id ? event->previous_user_id : "");
                seen->generations[seen->n] = event->generation;
                seen->n++;
        }
        if (seen->stop_after && seen->n >= (size_t) seen->stop_after)
                return -ECANCELED;
        return 0;
}

static bool has_switch(const struct seen *seen, const char *previous_user_id, const char *user_id) {
        for (size_t i = 0; i < seen->n; i++)
                if (strcmp(seen->names[i], "active_user_changed") == 0 && strcmp(seen->user_ids[i], user_id) == 0 &&
                    strcmp(seen->previous_user_ids[i], previous_user_id) == 0)
                        return true;
        return false;
}

static bool has_event(const struct seen *seen, const char *name, const char *user_id) {
        for (size_t i = 0; i < seen->n; i++)
                if (strcmp(seen->names[i], name) == 0 && (!user_id || strcmp(seen->user_ids[i], user_id) == 0))
                        return true;
        return false;
}

/* The main loop: process what is there, then poll for more, until the condition holds (hang guard). */
#define RUN_LOOP_UNTIL(u, cond)                                                                         \
        do {                                                                                            \
                time_t loop_end_ = time(NULL) + HANG_GUARD_SECONDS;                                     \
                for (;;) {                                                                              \
                        int loop_r_ = usher_process(u);                                                 \
                        CHECK(loop_r_ >= 0);                                                            \
                        if (cond)                                                                       \
                                break;                                                                  \
                        if (loop_r_ > 0)                                                                \
                                continue;                                                               \
                        uint64_t loop_timeout_;                                                         \
                        CHECK(usher_get_timeout(u, &loop_timeout_) >= 0);                               \
                        struct pollfd loop_p_ = {.fd = usher_get_fd(u), .events = (short) usher_get_events(u)}; \
                        int loop_ms_ = loop_timeout_ == 0 ? 0 : 1000;                                   \
                        CHECK(poll(&loop_p_, 1, loop_ms_) >= 0 || errno == EINTR);                      \
                        CHECK(time(NULL) <= loop_end_);                                                 \
                }                                                                                       \
        } while (0)

static void subscribe_and_poll(const struct test_daemon *d) {
        test_step("subscribe; a switch on another connection arrives through poll + usher_process");
        usher_t *watcher = daemon_connect(d), *actor = daemon_connect(d);
        struct seen seen = {0};
        CHECK_RC(watcher, usher_set_event_callback(watcher, on_event, &seen), 0);
        CHECK_RC(watcher, usher_subscribe(watcher, NULL, NULL), 0);
        CHECK(usher_process(watcher) == 0); /* nothing yet */

        usher_user *anonymous = NULL, *ann = NULL;
        CHECK_RC(actor, usher_login_anonymous(actor, NULL, NULL, &anonymous), 0);
        CHECK_RC(actor, usher_register(actor, NULL, "ann@example.com", "correct horse", 13), 0);
        CHECK_RC(actor, usher_login_password(actor, NULL, "ann@example.com", "correct horse", 13, NULL, &ann), 0);
        CHECK_RC(actor, usher_switch_user(actor, anonymous->id, NULL, NULL), 0);
        /* The last of the events: the anonymous user was made active by its login too, from nobody. */
        RUN_LOOP_UNTIL(watcher, has_switch(&seen, ann->id, anonymous->id));
        CHECK(has_event(&seen, "user_logged_in", NULL));
        for (size_t i = 1; i < seen.n; i++)
                CHECK(seen.generations[i] >= seen.generations[i - 1]);

        test_step("usher_next_event without a callback; events queued during a call are handed out");
        CHECK_RC(watcher, usher_set_event_callback(watcher, NULL, NULL), 0);
        /* The watcher switches itself: the event may come before or after the answer, and is not lost either way. */
        CHECK_RC(watcher, usher_switch_user(watcher, ann->id, NULL, NULL), 0);
        usher_event *event = NULL;
        for (;;) {
                int r = usher_next_event(watcher, &event);
                CHECK(r >= 0);
                if (r > 0 && strcmp(event->name, "active_user_changed") == 0)
                        break;
                event = usher_event_free(event);
                CHECK(usher_wait(watcher, HANG_GUARD_SECONDS * 1000000ULL) == 1);
        }
        CHECK_STR(event->user_id, ann->id);
        CHECK_STR(event->previous_user_id, anonymous->id);
        CHECK(strstr(event->data, ann->id));
        usher_event_free(event);
        CHECK(usher_next_event(watcher, &event) == 0 && event == NULL);
        CHECK(usher_wait(watcher, 0) == 0);

        test_step("a callback's negative return stops usher_process, which returns it");
        seen = (struct seen) {.stop_after = 1};
        CHECK_RC(watcher, usher_set_event_callback(watcher, on_event, &seen), 0);
        CHECK_RC(actor, usher_switch_user(actor, anonymous->id, NULL, NULL), 0);
        time_t end = time(NULL) + HANG_GUARD_SECONDS;
        int r;
        while ((r = usher_process(watcher)) == 0) {
                CHECK(usher_wait(watcher, 1000000) >= 0);
                CHECK(time(NULL) <= end);
        }
        CHECK(r == -ECANCELED && seen.n == 1);

        usher_user_free(anonymous);
        usher_user_free(ann);
        usher_unref(actor);
        usher_unref(watcher);
}

static void filtered(const struct test_daemon *d) {
        test_step("subscribe to one event: the others are not sent");
        usher_t *watcher = daemon_connect(d), *actor = daemon_connect(d);
        const char *const names[] = {"active_user_changed", NULL};
        CHECK_RC(watcher, usher_subscribe(watcher, names, NULL), 0);
        const char *const bad[] = {"no_such_event", NULL};
        usher_t *other = daemon_connect(d);
        CHECK_RC(other, usher_subscribe(other, bad, NULL), -EINVAL);
        usher_unref(other);
        /* A login of a new user sends user_logged_in, then active_user_changed. */
        CHECK_RC(actor, usher_register(actor, NULL, "cat@example.com", "cat's password", 14), 0);
        CHECK_RC(actor, usher_login_password(actor, NULL, "cat@example.com", "cat's password", 14, NULL, NULL), 0);
        usher_event *event = NULL;
        while (usher_next_event(watcher, &event) == 0)
                CHECK(usher_wait(watcher, HANG_GUARD_SECONDS * 1000000ULL) == 1);
        CHECK_STR(event->name, "active_user_changed");
        usher_event_free(event);
        usher_unref(actor);
        usher_unref(watcher);
}

struct switcher {
        usher_t *u;
        const char *user_id;
        int result;
};

static void *switch_in_thread(void *arg) {
        struct switcher *s = arg;
        s->result = usher_switch_user(s->u, s->user_id, NULL, NULL);
        return NULL;
}

static void delay_lease(const struct test_daemon *d) {
        test_step("a delay lease's holder gets switch_pending unsubscribed; the switch waits for its release");
        usher_t *holder = daemon_connect(d), *actor = daemon_connect(d);
        usher_user *anonymous = NULL;
        CHECK_RC(actor, usher_login_anonymous(actor, NULL, NULL, &anonymous), 0); /* active now */
        usher_user **list = NULL;
        CHECK(usher_list_users(actor, &list, NULL) >= 2);
        const char *target = strcmp(list[0]->id, anonymous->id) == 0 ? list[1]->id : list[0]->id;
        usher_lease *lease = NULL;
        CHECK_RC(holder, usher_inhibit(holder, NULL, "delay", "test-events", "finishing up", &lease), 0);
        struct switcher s = {.u = actor, .user_id = target, .result = 1};
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, switch_in_thread, &s) == 0);
        usher_event *event = NULL;
        while (usher_next_event(holder, &event) == 0)
                CHECK(usher_wait(holder, HANG_GUARD_SECONDS * 1000000ULL) == 1);
        CHECK_STR(event->name, "switch_pending");
        CHECK_STR(event->user_id, target);
        CHECK(strstr(event->data, "\"deadline\""));
        usher_event_free(event);
        CHECK_RC(holder, usher_release(holder, lease->id), 0);
        CHECK(pthread_join(thread, NULL) == 0);
        CHECK_RC(actor, s.result, 0);
        usher_user *current = NULL;
        CHECK_RC(actor, usher_current_user(actor, NULL, &current), 1);
        CHECK_STR(current->id, target);
        usher_user_free(current);
        usher_lease_free(lease);
        usher_user_list_free(list);
        usher_user_free(anonymous);
        usher_unref(actor);
        usher_unref(holder);
}

static void daemon_stopping(struct test_daemon *d) {
        test_step("the daemon stopping: daemon_stopping, then usher_process says the connection is gone");
        usher_t *watcher = daemon_connect(d);
        struct seen seen = {0};
        CHECK_RC(watcher, usher_subscribe(watcher, NULL, NULL), 0);
        CHECK_RC(watcher, usher_set_event_callback(watcher, on_event, &seen), 0);
        kill(d->pid, SIGTERM);
        int r;
        time_t end = time(NULL) + HANG_GUARD_SECONDS;
        while ((r = usher_process(watcher)) >= 0) {
                CHECK(usher_wait(watcher, 1000000) >= 0);
                CHECK(time(NULL) <= end);
        }
        CHECK(r == -ECONNRESET);
        CHECK(has_event(&seen, "daemon_stopping", NULL));
        CHECK(usher_get_fd(watcher) == -ENOTCONN);
        CHECK(usher_process(watcher) == -ENOTCONN);
        usher_event *event = NULL;
        CHECK(usher_next_event(watcher, &event) == -ENOTCONN);
        CHECK(usher_call(watcher, "hello", NULL, NULL) == -ENOTCONN);
        usher_unref(watcher);
        daemon_stop(d);
}

int main(void) {
        fprintf(stderr, "test-events\n");
        struct test_daemon d;
        /* The longest delay a lease may give: the switch in delay_lease waits for the release, however slow the
         * machine, rather than for the deadline. */
        daemon_start(&d, "[leases]\nmax_delay = \"60s\"\n");
        subscribe_and_poll(&d);
        filtered(&d);
        delay_lease(&d);
        daemon_stopping(&d);
        fprintf(stderr, "test-events: ok\n");
        return 0;
}
