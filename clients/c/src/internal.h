/* What the library's files share; nothing here is exported (libusher.sym lists what is). */
#ifndef USHER_INTERNAL_H
#define USHER_INTERNAL_H

#include <json-c/json.h>
#include <stdbool.h>

#include "methods.h" /* the methods' names, generated from the interface file */
#include "usher.h"

#define USHER_DEFAULT_TIMEOUT_USEC (25ULL * 1000000ULL) /* as sd-bus's method call timeout */
#define USHER_DEFAULT_MAX_LINE ((size_t) 16 * 1024 * 1024)
#define USHER_MIN_MAX_LINE ((size_t) 4096)
#define USHER_SYSTEM_SOCKET "/run/usher/usher.sock"
/* Events queued and not yet handed out (usher_process(3)): at most this many, or this many bytes of their lines (one
 * longer line still fits: max_line bounds it). usher_process() reads no further while the queue is full; a call that
 * must read past a full queue to reach its answer fails with -ENOBUFS and closes the connection, as sd-bus does when
 * its read queue is full. */
#define USHER_MAX_QUEUED_EVENTS ((size_t) 4096)
#define USHER_MAX_QUEUED_EVENT_BYTES ((size_t) 16 * 1024 * 1024)

#define _public_ __attribute__((visibility("default")))

struct event_node {
        usher_event *event;
        size_t size; /* the length of its line, counted against USHER_MAX_QUEUED_EVENT_BYTES */
        struct event_node *next;
};

struct usher {
        unsigned n_ref;
        int fd;                    /* -1 once closed */
        char *rbuf;                /* bytes read and not yet taken as lines; zeroed as they are consumed */
        size_t rlen, rcap;
        size_t max_line;
        uint64_t timeout_usec;     /* 0: calls wait for their answer without a limit */
        int64_t next_id;
        bool in_call;
        char *error_code, *error_message, *error_data;
        struct event_node *events_head, *events_tail;
        size_t n_events, events_bytes;
        usher_event_handler_t handler;
        void *userdata;
};

/* The files stand in layers, each calling only the layers below it (clients/c/tools/check-layers.py checks it from
 * the object files, make -C clients/c test-layers):
 *
 *   buf.c io.c json.c error.c        the request buffer, the socket, json-c helpers, the daemon's last error
 *   user.c seat.c lease.c event.c    each object of the protocol: read from its JSON, and freed
 *   message.c queue.c                one line from the daemon; the handle's queue of events
 *   call.c connection.c              one request and its answer; the handle's life
 *   users.c leases.c events.c locks.c tokens.c   the methods, and the main-loop functions (events.c) */

/* buf.c: a growable buffer for the lines we write. Zeroed when freed: a login's request holds a password. */
struct buf {
        char *p;
        size_t len, cap;
        bool failed; /* an allocation failed: the buffer is unusable, buf_finish() says -ENOMEM */
        bool first;  /* no member written yet in the object being built */
};

void buf_free(struct buf *b);
void buf_add(struct buf *b, const char *s, size_t n);
void buf_add_json_string(struct buf *b, const char *s, size_t n);
/* The params object: buf_begin(), members (a NULL string or list is left out), buf_end(). */
void buf_begin(struct buf *b);
void buf_string(struct buf *b, const char *key, const char *value);
void buf_secret(struct buf *b, const char *key, const void *value, size_t len);
void buf_uint(struct buf *b, const char *key, uint64_t value);
void buf_string_list(struct buf *b, const char *key, const char *const *values);
void buf_key(struct buf *b, const char *key);
void buf_end(struct buf *b);

/* io.c: connection I/O. */
int io_fill(usher_t *u);
int io_take_line(usher_t *u, char **ret_line, size_t *ret_len);
void io_consume(usher_t *u, size_t n);
int io_write_all(usher_t *u, const char *p, size_t n, uint64_t deadline);
int io_wait(usher_t *u, short events, uint64_t deadline);
uint64_t now_usec(void);
void connection_fail(usher_t *u);

/* json.c: field readers over a result object; a missing key or null gives NULL unless required. */
void json_wipe(json_object *o);
int json_dup_string(json_object *o, const char *key, bool required, char **ret);
int json_get_uint64(json_object *o, const char *key, uint64_t *ret);
int json_get_bool(json_object *o, const char *key, int *ret);
int parse_rfc3339_usec(const char *s, uint64_t *ret);

/* user.c, seat.c, lease.c, event.c: the objects, read from their JSON (freed by their public *_free functions). */
int user_from_json(json_object *o, usher_user **ret);
int seat_from_json(json_object *o, usher_seat **ret);
int lease_from_json(json_object *o, usher_lease **ret);
int event_from_json(json_object *root, usher_event **ret);

/* message.c: one line from the daemon, an answer (with an id, or a null id) or an event. */
struct message {
        json_object *root;             /* owned; message_done() zeroes its strings and frees it */
        bool is_event;
        bool is_error;                 /* an answer with "error" (else "result", which may be null) */
        bool has_id;                   /* false for "id": null */
        int64_t id;
        json_object *result;           /* borrowed from root; NULL for an error */
        const char *error_code;        /* borrowed from root */
        const char *error_message;
        json_object *error_data;
        usher_event *event;            /* owned until taken */
};

int message_parse(const char *line, size_t len, struct message *ret);
void message_done(struct message *m);

/* error.c: the daemon's last error on the handle. */
void error_clear(usher_t *u);
int error_set(usher_t *u, const char *code, const char *message, json_object *data);
int errno_from_code(const char *code);

/* queue.c: the handle's events read and not yet handed out. */
int event_enqueue(usher_t *u, usher_event *event, size_t size);
usher_event *event_dequeue(usher_t *u);
bool events_full(const usher_t *u);
void events_clear(usher_t *u);

/* call.c: one request and its answer. */
int call_method(usher_t *u, const char *method, struct buf *params, struct message *ret);

/* At the start of every call: the last call's error is forgotten, whatever this one's outcome. */
#define CHECK_HANDLE(u)                         \
        do {                                    \
                if (!(u))                       \
                        return -EINVAL;         \
                if ((u)->in_call)               \
                        return -EBUSY;          \
                error_clear(u);                 \
                if ((u)->fd < 0)                \
                        return -ENOTCONN;       \
        } while (0)

#endif
