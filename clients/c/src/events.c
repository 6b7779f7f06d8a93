/* Events, for the caller's own main loop: usher_get_fd() and usher_get_events() say what to poll for,
 * usher_process() reads what is there without blocking and hands out the events. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Whether usher_process() has something to hand out without the descriptor being readable: events queued during a
 * call, or complete lines that a call's last read brought in after its answer. */
static bool pending(usher_t *u) {
        return u->events_head || (u->rlen > 0 && memchr(u->rbuf, '\n', u->rlen));
}

_public_ int usher_subscribe(usher_t *u, const char *const *events, const char *const *seats) {
        CHECK_HANDLE(u);
        struct buf params = {0};
        buf_begin(&params);
        buf_string_list(&params, "events", events);
        buf_string_list(&params, "seats", seats);
        buf_end(&params);
        struct message m;
        int r = call_method(u, METHOD_SUBSCRIBE, &params, &m);
        buf_free(&params);
        if (r >= 0)
                message_done(&m);
        return r;
}

/* Reads every complete line that is there, without blocking, and queues its events, until the queue is full (what
 * is left waits in the buffer and the socket until the program has taken some). Returns how many were queued, or a
 * negative errno: the daemon closed the connection (-ECONNRESET, after queueing what came before), a line that is
 * too long or not usherd's, or the daemon's last word to a subscriber (an error with a null id, such as
 * permission_denied after a reload took the read permission away: kept for usher_error_code()). */
static int read_available(usher_t *u) {
        int queued = 0;
        if (u->fd < 0)
                return 0;
        for (;;) {
                if (events_full(u))
                        return queued;
                char *text;
                size_t len;
                int r = io_take_line(u, &text, &len);
                if (r == 0) {
                        r = io_fill(u);
                        if (r == 0)
                                return queued;
                        if (r > 0)
                                continue;
                }
                if (r < 0) {
                        connection_fail(u);
                        return r;
                }
                struct message m;
                r = message_parse(text, len, &m);
                io_consume(u, len + 1);
                if (r < 0) {
                        connection_fail(u);
                        return r;
                }
                if (m.is_event) {
                        r = event_enqueue(u, m.event, len + 1);
                        m.event = NULL;
                        message_done(&m);
                        if (r < 0) {
                                connection_fail(u);
                                return r;
                        }
                        if (queued < INT_MAX)
                                queued++;
                        continue;
                }
                /* An answer nobody asked for: only the daemon's last line to a subscriber has no call before it. */
                r = (m.is_error && !m.has_id) ? error_set(u, m.error_code, m.error_message, m.error_data) : -EPROTO;
                message_done(&m);
                connection_fail(u);
                return r;
        }
}

_public_ int usher_process(usher_t *u) {
        if (!u)
                return -EINVAL;
        if (u->in_call)
                return -EBUSY;
        /* Events queued before the connection closed are still handed out; after them, -ENOTCONN. */
        if (u->fd < 0 && !u->events_head)
                return -ENOTCONN;
        int r = read_available(u);
        int handled = 0;
        while (u->handler && u->events_head) {
                usher_event *event = event_dequeue(u);
                int k = u->handler(u, event, u->userdata);
                usher_event_free(event);
                if (handled < INT_MAX)
                        handled++;
                if (k < 0)
                        return k;
        }
        if (r < 0)
                return r;
        return u->handler ? handled : (u->events_head ? 1 : 0);
}

_public_ int usher_next_event(usher_t *u, usher_event **ret) {
        if (!u || !ret)
                return -EINVAL;
        if (u->in_call)
                return -EBUSY;
        if (!u->events_head) {
                if (u->fd < 0)
                        return -ENOTCONN;
                int r = read_available(u);
                if (r < 0 && !u->events_head)
                        return r;
        }
        *ret = event_dequeue(u);
        return *ret ? 1 : 0;
}

_public_ int usher_set_event_callback(usher_t *u, usher_event_handler_t handler, void *userdata) {
        if (!u)
                return -EINVAL;
        u->handler = handler;
        u->userdata = userdata;
        return 0;
}

/* What to pass poll() as the timeout: 0 while events are pending (they came in with a call's answer, so the
 * descriptor will not say so), else UINT64_MAX (no timeout of the library's own). */
_public_ int usher_get_timeout(usher_t *u, uint64_t *ret_usec) {
        if (!u || !ret_usec)
                return -EINVAL;
        bool now = pending(u);
        *ret_usec = now ? 0 : UINT64_MAX;
        return now ? 1 : 0;
}

/* Blocks until an event is queued or the descriptor is readable, at most timeout_usec (UINT64_MAX: no limit).
 * Returns 1 when there is something to process, 0 on timeout. */
_public_ int usher_wait(usher_t *u, uint64_t timeout_usec) {
        if (!u)
                return -EINVAL;
        if (pending(u))
                return 1;
        if (u->fd < 0)
                return -ENOTCONN;
        if (timeout_usec == 0) {
                struct pollfd p = {.fd = u->fd, .events = POLLIN};
                int k;
                while ((k = poll(&p, 1, 0)) < 0 && errno == EINTR)
                        ;
                return k < 0 ? -errno : k > 0;
        }
        uint64_t deadline = timeout_usec == UINT64_MAX ? 0 : now_usec() + timeout_usec;
        int r = io_wait(u, POLLIN, deadline);
        if (r == -ETIMEDOUT)
                return 0;
        return r < 0 ? r : 1;
}
