/* The module's arguments, the PAM user, and the connection a stage uses. */
#include <errno.h>
#include <security/pam_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "pam_usher.h"

static const char *value_of(const char *arg, const char *name) {
        size_t n = strlen(name);
        return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

/* Every argument is optional; unknown ones and bad values are logged and ignored, as PAM modules do. */
void options_parse(pam_handle_t *pamh, int argc, const char **argv, struct options *ret) {
        *ret = (struct options) {.socket = PAM_USHER_DEFAULT_SOCKET, .login = LOGIN_PASSWORD,
                                 .on_close = ON_CLOSE_KEEP};
        for (int i = 0; i < argc; i++) {
                const char *arg = argv[i], *v;
                if ((v = value_of(arg, "socket")) && *v == '/')
                        ret->socket = v;
                else if ((v = value_of(arg, "provider")) && *v)
                        ret->provider = v;
                else if ((v = value_of(arg, "login")) && strcmp(v, "password") == 0)
                        ret->login = LOGIN_PASSWORD;
                else if (v && strcmp(v, "device") == 0)
                        ret->login = LOGIN_DEVICE;
                else if ((v = value_of(arg, "domain")) && *v && !strpbrk(v, "@/"))
                        ret->domain = v;
                else if ((v = value_of(arg, "seat")) && *v)
                        ret->seat = v;
                else if ((v = value_of(arg, "timeout"))) {
                        char *end = NULL;
                        errno = 0;
                        unsigned long long seconds = strtoull(v, &end, 10);
                        if (errno || end == v || *end || seconds == 0 || seconds > 86400 || *v == '-')
                                pam_syslog(pamh, LOG_ERR, "ignoring timeout=%s: not 1 to 86400 seconds", v);
                        else
                                ret->timeout_sec = seconds;
                } else if ((v = value_of(arg, "on_close")) && strcmp(v, "keep") == 0)
                        ret->on_close = ON_CLOSE_KEEP;
                else if (v && strcmp(v, "logout") == 0)
                        ret->on_close = ON_CLOSE_LOGOUT;
                else if (v && strcmp(v, "remove") == 0)
                        ret->on_close = ON_CLOSE_REMOVE;
                else if (strcmp(arg, "debug") == 0)
                        ret->debug = true;
                /* Read by pam_get_authtok() itself. */
                else if (strcmp(arg, "use_first_pass") == 0 || strcmp(arg, "try_first_pass") == 0 ||
                         strcmp(arg, "use_authtok") == 0)
                        continue;
                else
                        pam_syslog(pamh, LOG_ERR, "ignoring unknown or malformed option: %.64s", arg);
        }
        if (!ret->timeout_sec)
                ret->timeout_sec = ret->login == LOGIN_DEVICE ? 300 : 10;
}

/* Refused before anything reaches the socket: empty, longer than PAM_USHER_MAX_USER bytes, a control character
 * (which would forge lines of a log or a terminal), or '/' (a path). */
bool user_name_is_acceptable(const char *user) {
        if (!user || !*user)
                return false;
        size_t n = strnlen(user, PAM_USHER_MAX_USER + 1);
        if (n > PAM_USHER_MAX_USER)
                return false;
        for (const unsigned char *p = (const unsigned char *) user; *p; p++)
                if (*p < 0x20 || *p == 0x7f || *p == '/')
                        return false;
        return true;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* Reads the arguments and the PAM user. Returns PAM_SUCCESS, PAM_USER_UNKNOWN for a user name the module refuses,
 * or what pam_get_user() said. The deadline starts with daemon_connect(), after any conversation. */
int stage_begin(struct stage *s, pam_handle_t *pamh, int flags, int argc, const char **argv) {
        *s = (struct stage) {.pamh = pamh, .silent = flags & PAM_SILENT};
        options_parse(pamh, argc, argv, &s->opt);
        int r = pam_get_user(pamh, &s->user, NULL);
        if (r != PAM_SUCCESS) {
                pam_syslog(pamh, LOG_ERR, "cannot get the user name: %s", pam_strerror(pamh, r));
                return r == PAM_CONV_AGAIN ? PAM_INCOMPLETE : r;
        }
        if (!user_name_is_acceptable(s->user)) {
                pam_syslog(pamh, LOG_NOTICE, "refusing a user name with control characters, '/', or over %d bytes",
                           PAM_USHER_MAX_USER);
                return PAM_USER_UNKNOWN;
        }
        if (s->opt.domain) {
                if (strchr(s->user, '@')) {
                        pam_syslog(pamh, LOG_NOTICE, "refusing user %s: an '@' with domain=", s->user);
                        return PAM_USER_UNKNOWN;
                }
                if (asprintf(&s->email, "%s@%s", s->user, s->opt.domain) < 0) {
                        s->email = NULL;
                        return PAM_BUF_ERR;
                }
        } else if (!strchr(s->user, '@'))
                /* Not an email: the Unix name usherd gives an account ([unix_users]); stage_account() asks for it. */
                s->by_unix_name = true;
        else if (!(s->email = strdup(s->user)))
                return PAM_BUF_ERR;
        return PAM_SUCCESS;
}

void stage_end(struct stage *s) {
        if (s->u)
                usher_unref(s->u);
        s->u = NULL;
        free(s->email);
        s->email = NULL;
}

/* Connects to usherd, with the stage's deadline starting now. */
int daemon_connect(struct stage *s) {
        s->deadline = now_usec() + s->opt.timeout_sec * 1000000u;
        int r = usher_open_path(&s->u, s->opt.socket);
        if (r < 0) {
                s->u = NULL;
                pam_syslog(s->pamh, LOG_ERR, "cannot connect to usherd at %s: %s", s->opt.socket, strerror(-r));
        }
        return r;
}

/* Once connected: the account's email of a PAM user that is a Unix name (by_unix_name), from `user_status`.
 * PAM_USER_UNKNOWN when usherd serves no such Unix user; what daemon_failure() says when it does not answer. */
int stage_account(struct stage *s) {
        if (!s->by_unix_name || s->email)
                return PAM_SUCCESS;
        struct text params = {0};
        text_add(&params, "{", 1);
        text_member(&params, "unix_user", s->user);
        text_close(&params);
        char *result = NULL;
        int r = daemon_call(s, METHOD_USER_STATUS, &params, &result);
        text_free(&params);
        if (r < 0)
                return daemon_failure(s, r, PAM_AUTHINFO_UNAVAIL, PAM_AUTHINFO_UNAVAIL);
        s->email = json_member_string(result, "email");
        free(result);
        if (!s->email) {
                if (s->opt.debug)
                        pam_syslog(s->pamh, LOG_DEBUG, "%s is no Unix user of usherd's and not an email", s->user);
                return PAM_USER_UNKNOWN;
        }
        return PAM_SUCCESS;
}

/* Calls a method within what is left of the deadline: -ETIMEDOUT once it has passed. */
int daemon_call(struct stage *s, const char *method, const struct text *params, char **ret_result) {
        uint64_t now = now_usec();
        if (!s->u)
                return -ENOTCONN;
        if (now >= s->deadline)
                return -ETIMEDOUT;
        if (params && params->failed)
                return -ENOMEM;
        int r = usher_set_timeout(s->u, s->deadline - now);
        if (r < 0)
                return r;
        r = usher_call(s->u, method, params ? params->p : NULL, ret_result);
        if (s->opt.debug)
                pam_syslog(s->pamh, LOG_DEBUG, "%s: %s", method,
                           r >= 0 ? "ok" : usher_error_code(s->u) ? usher_error_code(s->u) : strerror(-r));
        return r;
}
