/* The auth stage: a password through the conversation, or a device-code login approved elsewhere. The login is made
 * with `activate: false` (a `su bob` inside alice's session must not hand the seat to bob) and `expect_email` (an
 * account other than the PAM user's is refused by usherd, before anything is committed). */
#include <errno.h>
#include <security/pam_ext.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pam_usher.h"

void free_data(pam_handle_t *pamh, void *data, int error_status) {
        (void) pamh;
        (void) error_status;
        free(data);
}

/* The common tail of login and login_wait's parameters: seat, expect_email, activate; closes the object. */
static void login_tail(struct stage *s, struct text *t) {
        text_member(t, "seat", s->opt.seat);
        text_member(t, "expect_email", s->email);
        text_add(t, "\"activate\":false}", 17);
}

/* After a refused login: PAM_USER_UNKNOWN when usherd has no user with this email either (an account it does not
 * know), else PAM_AUTH_ERR. */
static int refused(struct stage *s) {
        const char *code = usher_error_code(s->u);
        if (!code || strcmp(code, "invalid_credentials") != 0)
                return PAM_AUTH_ERR;
        struct text params = {0};
        text_add(&params, "{", 1);
        text_member(&params, "email", s->email);
        text_close(&params);
        char *result = NULL;
        int r = daemon_call(s, METHOD_USER_STATUS, &params, &result);
        text_free(&params);
        char *status = r >= 0 ? json_member_string(result, "status") : NULL;
        free(result);
        int ret = status && strcmp(status, "unknown") == 0 ? PAM_USER_UNKNOWN : PAM_AUTH_ERR;
        free(status);
        return ret;
}

/* Holds the logged-in user's id against the handle, for open_session. */
static int hold(struct stage *s, const char *result) {
        char *id = json_member_string(result, "user.id");
        if (!id)
                return PAM_AUTHINFO_UNAVAIL;
        pam_syslog(s->pamh, LOG_INFO, "%s logged in at usherd as %s", s->user, id);
        int r = pam_set_data(s->pamh, DATA_USER_ID, id, free_data);
        if (r != PAM_SUCCESS)
                free(id);
        return r;
}

static int login_password(struct stage *s) {
        const char *password = NULL;
        /* Honours use_first_pass and try_first_pass, and leaves the password as PAM_AUTHTOK for later modules. */
        int r = pam_get_authtok(s->pamh, PAM_AUTHTOK, &password, NULL);
        if (r != PAM_SUCCESS) {
                pam_syslog(s->pamh, LOG_NOTICE, "no password for %s: %s", s->user, pam_strerror(s->pamh, r));
                return r == PAM_CONV_AGAIN ? PAM_INCOMPLETE : PAM_AUTH_ERR;
        }
        if (daemon_connect(s) < 0)
                return PAM_AUTHINFO_UNAVAIL;
        if ((r = stage_account(s)) != PAM_SUCCESS)
                return r;
        struct provider provider;
        r = provider_lookup(s, &provider);
        if (r == -ENOENT) {
                pam_syslog(s->pamh, LOG_ERR, "usherd has no provider %s", s->opt.provider ? s->opt.provider : "");
                return PAM_AUTHINFO_UNAVAIL;
        }
        if (r < 0)
                return daemon_failure(s, r, PAM_AUTHINFO_UNAVAIL, PAM_AUTH_ERR);
        if (!provider.email_password && !provider.password_grant) {
                pam_syslog(s->pamh, LOG_ERR, "the provider takes no password: use login=device");
                return PAM_AUTHINFO_UNAVAIL;
        }
        struct text params = {0};
        text_add(&params, "{", 1);
        text_member(&params, "provider", s->opt.provider);
        text_add(&params, "\"credentials\":{", 15);
        if (provider.email_password) {
                text_member(&params, "type", "email_password");
                text_member(&params, "email", s->email);
        } else {
                text_member(&params, "type", "password");
                text_member(&params, "username", s->email);
        }
        text_add(&params, "\"password\":", 11);
        text_json_string(&params, password, strlen(password));
        text_add(&params, "},", 2);
        login_tail(s, &params);
        char *result = NULL;
        r = daemon_call(s, METHOD_LOGIN, &params, &result);
        text_free(&params);
        if (r < 0) {
                int ret = daemon_failure(s, r, PAM_AUTHINFO_UNAVAIL, PAM_AUTH_ERR);
                return ret == PAM_AUTH_ERR ? refused(s) : ret;
        }
        int ret = hold(s, result);
        free(result);
        return ret;
}

static bool printable(const char *p) {
        for (; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return false;
        return true;
}

static int login_device(struct stage *s) {
        if (daemon_connect(s) < 0)
                return PAM_AUTHINFO_UNAVAIL;
        /* A Unix name of usherd's names an account on the device: the device login must be that account. */
        int k = stage_account(s);
        if (k != PAM_SUCCESS)
                return k;
        struct text params = {0};
        text_add(&params, "{", 1);
        text_member(&params, "provider", s->opt.provider);
        text_member(&params, "type", "device_code");
        text_close(&params);
        char *result = NULL;
        int r = daemon_call(s, METHOD_LOGIN_BEGIN, &params, &result);
        text_free(&params);
        if (r < 0)
                return daemon_failure(s, r, PAM_AUTHINFO_UNAVAIL, PAM_AUTH_ERR);
        char *login_id = json_member_string(result, "login_id");
        char *uri = json_member_string(result, "verification_uri");
        char *complete = json_member_string(result, "verification_uri_complete");
        char *code = json_member_string(result, "user_code");
        /* It holds the login's id, with which the login could be collected: zeroed, not only freed. */
        explicit_bzero(result, strlen(result));
        free(result);
        int ret = PAM_AUTHINFO_UNAVAIL;
        /* Shown on the person's terminal: nothing that could move its cursor or rewrite its title. */
        if (login_id && uri && code && printable(uri) && printable(code) && (!complete || printable(complete))) {
                /* Shown even under PAM_SILENT: the code is what this login asks of the person, like a prompt. */
                pam_prompt(s->pamh, PAM_TEXT_INFO, NULL, "To log in, visit %s and enter the code %s", uri, code);
                if (complete)
                        pam_prompt(s->pamh, PAM_TEXT_INFO, NULL, "or visit %s", complete);
                struct text wait = {0};
                text_add(&wait, "{", 1);
                text_member(&wait, "login_id", login_id);
                login_tail(s, &wait);
                r = daemon_call(s, METHOD_LOGIN_WAIT, &wait, &result);
                text_free(&wait);
                if (r < 0)
                        ret = daemon_failure(s, r, PAM_AUTHINFO_UNAVAIL, PAM_AUTH_ERR);
                else {
                        ret = hold(s, result);
                        free(result);
                }
        }
        if (login_id)
                explicit_bzero(login_id, strlen(login_id));
        free(login_id);
        free(uri);
        free(complete);
        free(code);
        return ret;
}

PAM_USHER_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        struct stage s;
        int r = stage_begin(&s, pamh, flags, argc, argv);
        if (r == PAM_SUCCESS)
                r = s.opt.login == LOGIN_DEVICE ? login_device(&s) : login_password(&s);
        if (s.opt.debug)
                pam_syslog(pamh, LOG_DEBUG, "auth for %s: %s", s.user ? s.user : "?", pam_strerror(pamh, r));
        stage_end(&s);
        return r;
}

/* usherd keeps the credentials: nothing to establish or delete here. */
PAM_USHER_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        (void) pamh;
        (void) flags;
        (void) argc;
        (void) argv;
        return PAM_SUCCESS;
}
