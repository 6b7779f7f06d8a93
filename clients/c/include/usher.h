#ifndef USHER_H
#define USHER_H

/*
 * libusher: the C client of usherd, the multi-user session daemon.
 *
 * Shaped like systemd's sd-bus and sd-login: an opaque handle, functions that return a negative errno-style code on
 * failure (the daemon's own error code and message stay available from usher_error_code() and
 * usher_error_message()), results the caller owns and frees with a named function, and usher_get_fd() /
 * usher_get_events() / usher_process() so that a program's own main loop (poll(2), GLib, libuv, sd-event) drives the
 * events. A handle is not thread-safe: use it from one thread at a time. Every function has its manual page
 * (usher_open(3), ...); docs/c-library.md in the source has the walk-through.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One connection to usherd. */
typedef struct usher usher_t;

/* A user on the device (the protocol's user object). Times are RFC 3339 UTC strings, NULL when the daemon sent null.
 * Allocated by the library only (fields may be added at the end in later versions); free with usher_user_free(). */
typedef struct usher_user {
        char *id;
        char *provider;
        char *kind;
        char *email;
        char *name;
        char *state;        /* "logged_in", "logged_out" ("removed" only in the answer to logout) */
        int active;         /* 1 when this is the active user (of its seat) */
        char *created_at;
        char *last_login_at;
        char *last_active_at;
        char *access_token_expires_at;
        char *refresh_token_expires_at;
        char *token_state;  /* "fresh", "refreshing", "retrying", "none" */
        char *next_refresh_at;
        char *retry_at;
        char *last_refresh_error;
} usher_user;

/* A seat (list_seats). Free with usher_seat_free(). */
typedef struct usher_seat {
        char *name;
        char *source;       /* "config", "logind", ... */
        int present;
        char *user_id;      /* the seat's active user, NULL when none */
} usher_seat;

/* A lease taken with usher_inhibit(). Free with usher_lease_free(). */
typedef struct usher_lease {
        char *id;           /* "l_1": what usher_release() takes */
        char *seat;
} usher_lease;

/* An event (after usher_subscribe(), and switch_pending / lease_broken to a lease's holder). Free with
 * usher_event_free(). The fields below data are taken from data when it has them (NULL otherwise). */
typedef struct usher_event {
        char *name;              /* "active_user_changed", "user_logged_in", ... (docs/protocol.md, Events) */
        uint64_t generation;
        char *data;              /* the event's data object as JSON text */
        char *user_id;
        char *previous_user_id;
        char *seat;
} usher_event;

/* Called by usher_process() for each event when set with usher_set_event_callback(); the event is freed after the
 * callback returns. A negative return value stops usher_process(), which returns it. */
typedef int (*usher_event_handler_t)(usher_t *u, const usher_event *event, void *userdata);

/* Connecting and closing. */
int usher_open(usher_t **ret);
int usher_open_path(usher_t **ret, const char *path);
int usher_socket_path(char **ret);
usher_t *usher_ref(usher_t *u);
usher_t *usher_unref(usher_t *u);
void usher_close(usher_t *u);
int usher_set_timeout(usher_t *u, uint64_t usec);
int usher_set_max_line(usher_t *u, size_t bytes);

/* The daemon's own error of the last call that failed with one (NULL otherwise). */
const char *usher_error_code(const usher_t *u);
const char *usher_error_message(const usher_t *u);
const char *usher_error_data(const usher_t *u);

/* Users. provider and seat may be NULL (the default provider; the caller's seat). */
int usher_login_anonymous(usher_t *u, const char *provider, const char *seat, usher_user **ret);
int usher_login_password(usher_t *u, const char *provider, const char *email, const void *password, size_t password_len,
                         const char *seat, usher_user **ret);
int usher_register(usher_t *u, const char *provider, const char *email, const void *password, size_t password_len);
int usher_list_users(usher_t *u, usher_user ***ret_users, size_t *ret_n);
int usher_current_user(usher_t *u, const char *seat, usher_user **ret);
int usher_switch_user(usher_t *u, const char *user_id, const char *seat, usher_user **ret);
int usher_logout(usher_t *u, const char *user_id, const char *seat, usher_user **ret);
int usher_remove_user(usher_t *u, const char *user_id);
usher_user *usher_user_free(usher_user *user);
void usher_user_list_free(usher_user **users);

/* Tokens. */
int usher_access_token(usher_t *u, const char *seat, uint64_t min_valid, char **ret_token, uint64_t *ret_expires);
int usher_access_token_narrowed(usher_t *u, const char *seat, const char *audience, const char *const *scopes,
                                uint64_t min_valid, char **ret_token, uint64_t *ret_expires);
int usher_dpop_proof(usher_t *u, const char *seat, const char *audience, const char *const *scopes,
                     const char *method, const char *url, const char *nonce, char **ret_proof);
void usher_secret_free(char *secret);

/* Seats and leases. */
int usher_list_seats(usher_t *u, usher_seat ***ret_seats, size_t *ret_n);
usher_seat *usher_seat_free(usher_seat *seat);
void usher_seat_list_free(usher_seat **seats);
int usher_inhibit(usher_t *u, const char *seat, const char *mode, const char *who, const char *why, usher_lease **ret);
int usher_release(usher_t *u, const char *lease_id);
usher_lease *usher_lease_free(usher_lease *lease);

/* The seat's lock (NULL seat: the caller's). A PIN is a buffer of pin_len bytes, not kept. */
int usher_lock_seat(usher_t *u, const char *seat);
int usher_unlock(usher_t *u, const char *seat, const void *pin, size_t pin_len);
int usher_set_pin(usher_t *u, const char *user_id, const void *pin, size_t pin_len);

/* Any method, including ones added after this library: params and the result as JSON text. */
int usher_call(usher_t *u, const char *method, const char *params_json, char **ret_result_json);

/* Events, driven by the caller's main loop. */
int usher_subscribe(usher_t *u, const char *const *events, const char *const *seats);
int usher_get_fd(usher_t *u);
int usher_get_events(usher_t *u);
int usher_get_timeout(usher_t *u, uint64_t *ret_usec);
int usher_process(usher_t *u);
int usher_wait(usher_t *u, uint64_t timeout_usec);
int usher_next_event(usher_t *u, usher_event **ret);
int usher_set_event_callback(usher_t *u, usher_event_handler_t handler, void *userdata);
usher_event *usher_event_free(usher_event *event);

#ifdef __cplusplus
}
#endif

#endif
