/* pam_usher: the PAM module of usher (pam_usher(8)). A thin client of usherd's socket through libusher: login,
 * throttling, audit and the session's state stay in the daemon. */
#pragma once

#include <security/pam_modules.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "usher.h"
/* The method names, generated from the interface file (clients/c/src/methods.h). */
#include "methods.h"

/* The service functions libpam looks up (everything else stays hidden, and pam_usher.sym keeps it so). */
#define PAM_USHER_EXPORT __attribute__((visibility("default")))

/* The system daemon's socket: never taken from the environment (a set-uid su or a user's own environment must not
 * point the module at a daemon of the user's choosing). */
#define PAM_USHER_DEFAULT_SOCKET "/run/usher/usher.sock"
/* The longest PAM user name the module sends (bytes). */
#define PAM_USHER_MAX_USER 256

enum login_mode { LOGIN_PASSWORD, LOGIN_DEVICE };
enum on_close { ON_CLOSE_KEEP, ON_CLOSE_LOGOUT, ON_CLOSE_REMOVE };

struct options {
        const char *socket;
        const char *provider;     /* NULL: the daemon's default provider */
        enum login_mode login;
        const char *domain;       /* NULL: the PAM user name is the account's email */
        const char *seat;         /* NULL: XDG_SEAT, else the daemon's default seat */
        uint64_t timeout_sec;     /* 0: the default of the login mode */
        enum on_close on_close;
        bool debug;
};

/* The state of one stage: the options, the PAM user's email and one connection with its deadline. */
struct stage {
        pam_handle_t *pamh;
        struct options opt;
        const char *user;         /* the PAM user, checked */
        char *email;              /* the account's email: user, user@domain, or found by stage_account() */
        bool by_unix_name;        /* no domain= and no '@': the user may be a Unix user usherd serves */
        bool silent;              /* PAM_SILENT: no informational or error messages to the person */
        usher_t *u;
        uint64_t deadline;        /* CLOCK_MONOTONIC microseconds */
};

/* A growable text buffer whose bytes are zeroed when it grows and when it is freed: it may hold a secret. */
struct text {
        char *p;
        size_t len, cap;
        bool failed;
};

/* The provider a login goes to, as `providers` describes it. */
struct provider {
        bool local;
        bool email_password;      /* a local provider's email and password */
        bool password_grant;      /* OpenID Connect's password grant ("password": username and password) */
        bool device_code;
};

/* options.c */
void options_parse(pam_handle_t *pamh, int argc, const char **argv, struct options *ret);
int stage_begin(struct stage *s, pam_handle_t *pamh, int flags, int argc, const char **argv);
void stage_end(struct stage *s);
bool user_name_is_acceptable(const char *user);

/* text.c */
void text_add(struct text *t, const char *p, size_t n);
void text_json_string(struct text *t, const char *s, size_t n);
void text_member(struct text *t, const char *key, const char *value);
void text_close(struct text *t);
void text_free(struct text *t);

/* daemon.c */
int daemon_connect(struct stage *s);
int stage_account(struct stage *s);
int daemon_call(struct stage *s, const char *method, const struct text *params, char **ret_result);
int daemon_failure(struct stage *s, int r, int unavailable, int otherwise);
char *json_member_string(const char *json, const char *path);
int provider_lookup(struct stage *s, struct provider *ret);
void message(struct stage *s, int style, const char *format, ...) __attribute__((format(printf, 3, 4)));

/* Where the user id of a login is kept against the PAM handle until open_session, and the binding until
 * close_session. */
#define DATA_USER_ID "pam_usher_user_id"
#define DATA_BINDING "pam_usher_binding"
void free_data(pam_handle_t *pamh, void *data, int error_status);
