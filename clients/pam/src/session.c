/* The account stage (is the user logged in at usherd?) and the session stage (the seat's active user, the binding,
 * USHER_SOCKET and USHER_USER). */
#include <security/pam_ext.h>
#include <security/pam_modutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pam_usher.h"

PAM_USHER_EXPORT int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        struct stage s;
        int r = stage_begin(&s, pamh, flags, argc, argv);
        if (r != PAM_SUCCESS)
                goto done;
        r = PAM_AUTHINFO_UNAVAIL;
        if (daemon_connect(&s) < 0)
                goto done;
        struct text params = {0};
        text_add(&params, "{", 1);
        if (s.by_unix_name)
                text_member(&params, "unix_user", s.user);
        else
                text_member(&params, "email", s.email);
        text_close(&params);
        char *result = NULL;
        int k = daemon_call(&s, METHOD_USER_STATUS, &params, &result);
        text_free(&params);
        if (k < 0) {
                r = daemon_failure(&s, k, PAM_AUTHINFO_UNAVAIL, PAM_AUTHINFO_UNAVAIL);
                goto done;
        }
        char *status = json_member_string(result, "status"), *ended = json_member_string(result, "ended");
        free(result);
        if (status && strcmp(status, "logged_in") == 0)
                r = PAM_SUCCESS;
        else if (status && strcmp(status, "unknown") == 0)
                r = PAM_USER_UNKNOWN;
        else if (status && strcmp(status, "logged_out") == 0) {
                /* Revoked by the provider, its refresh token expired, or logged out: a new auth logs it in again. */
                pam_syslog(pamh, LOG_NOTICE, "%s is logged out at usherd (%s)", s.user, ended ? ended : "unrecorded");
                message(&s, PAM_ERROR_MSG, "Your usher session has ended; log in again.");
                r = PAM_ACCT_EXPIRED;
        }
        free(status);
        free(ended);
done:
        if (s.opt.debug)
                pam_syslog(pamh, LOG_DEBUG, "account of %s: %s", s.user ? s.user : "?", pam_strerror(pamh, r));
        stage_end(&s);
        return r;
}

PAM_USHER_EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        struct stage s;
        int r = stage_begin(&s, pamh, flags, argc, argv);
        if (r != PAM_SUCCESS) {
                stage_end(&s);
                return PAM_SESSION_ERR;
        }
        /* The user the auth stage logged in, held against this handle; else (auth ran elsewhere: sshd with a key,
         * another process) the PAM user's email, which usherd resolves to its logged-in user. */
        const void *held = NULL;
        const char *seat = s.opt.seat ? s.opt.seat : pam_getenv(pamh, "XDG_SEAT");
        const void *service = NULL;
        pam_get_item(pamh, PAM_SERVICE, &service);
        r = PAM_SESSION_ERR;
        if (daemon_connect(&s) < 0)
                goto done;
        bool is_held = pam_get_data(pamh, DATA_USER_ID, &held) == PAM_SUCCESS && held;
        if (!is_held && stage_account(&s) != PAM_SUCCESS)
                goto done;
        const char *user = is_held ? held : s.email;
        struct text params = {0};
        text_add(&params, "{", 1);
        text_member(&params, "user", user);
        text_member(&params, "seat", seat && *seat ? seat : NULL);
        text_member(&params, "logind_session", pam_getenv(pamh, "XDG_SESSION_ID"));
        text_member(&params, "service", service);
        /* The person logging in owns the usher user from now on (usher pin set, delete_user in their session): the
         * module logged in as root on their behalf. Their uid, when the system knows them (a local account, or one of
         * usherd's own through nss-systemd). */
        const struct passwd *pw = pam_modutil_getpwnam(pamh, s.user);
        char uid[32];
        if (pw && snprintf(uid, sizeof uid, "\"uid\":%u,", (unsigned) pw->pw_uid) < (int) sizeof uid)
                text_add(&params, uid, strlen(uid));
        text_close(&params);
        char *result = NULL;
        int k = daemon_call(&s, METHOD_OPEN_SESSION, &params, &result);
        text_free(&params);
        if (k < 0) {
                r = daemon_failure(&s, k, PAM_SESSION_ERR, PAM_SESSION_ERR);
                goto done;
        }
        char *binding = json_member_string(result, "binding"), *id = json_member_string(result, "user.id");
        free(result);
        char *socket_env = NULL, *user_env = NULL;
        if (binding && id && asprintf(&socket_env, "USHER_SOCKET=%s", s.opt.socket) >= 0 &&
            asprintf(&user_env, "USHER_USER=%s", id) >= 0 && pam_putenv(pamh, socket_env) == PAM_SUCCESS &&
            pam_putenv(pamh, user_env) == PAM_SUCCESS &&
            pam_set_data(pamh, DATA_BINDING, binding, free_data) == PAM_SUCCESS) {
                pam_syslog(pamh, LOG_INFO, "session of %s opened as %s (binding %s)", s.user, id, binding);
                binding = NULL;
                r = PAM_SUCCESS;
        }
        free(socket_env);
        free(user_env);
        free(binding);
        free(id);
done:
        if (s.opt.debug)
                pam_syslog(pamh, LOG_DEBUG, "open_session of %s: %s", s.user, pam_strerror(pamh, r));
        stage_end(&s);
        return r;
}

PAM_USHER_EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        struct stage s;
        int r = stage_begin(&s, pamh, flags, argc, argv);
        if (r != PAM_SUCCESS) {
                stage_end(&s);
                return PAM_SESSION_ERR;
        }
        const void *binding = NULL;
        if (pam_get_data(pamh, DATA_BINDING, &binding) != PAM_SUCCESS || !binding) {
                /* open_session did not succeed in this process: there is nothing of this session to close. */
                pam_syslog(pamh, LOG_NOTICE, "no usher session of %s was opened by this process", s.user);
                stage_end(&s);
                return PAM_SUCCESS;
        }
        static const char *const on_close[] = {"keep", "logout", "remove"};
        r = PAM_SESSION_ERR;
        if (daemon_connect(&s) < 0)
                goto done;
        struct text params = {0};
        text_add(&params, "{", 1);
        text_member(&params, "binding", binding);
        text_member(&params, "on_close", on_close[s.opt.on_close]);
        text_close(&params);
        char *result = NULL;
        int k = daemon_call(&s, METHOD_CLOSE_SESSION, &params, &result);
        text_free(&params);
        free(result);
        if (k < 0)
                r = daemon_failure(&s, k, PAM_SESSION_ERR, PAM_SESSION_ERR);
        else {
                pam_syslog(pamh, LOG_INFO, "session of %s closed (%s)", s.user, on_close[s.opt.on_close]);
                pam_set_data(pamh, DATA_BINDING, NULL, NULL);
                r = PAM_SUCCESS;
        }
done:
        if (s.opt.debug)
                pam_syslog(pamh, LOG_DEBUG, "close_session of %s: %s", s.user, pam_strerror(pamh, r));
        stage_end(&s);
        return r;
}
