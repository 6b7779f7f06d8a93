/* The password stage: a local account's password changed with `change_password` (the old one and the new one, asked
 * twice, through the conversation). Accounts of other providers change their password at the provider. */
#include <errno.h>
#include <security/pam_ext.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pam_usher.h"

static int local_provider(struct stage *s) {
        struct provider provider;
        int r = provider_lookup(s, &provider);
        if (r == -ENOENT)
                return PAM_AUTHTOK_ERR;
        if (r < 0)
                return daemon_failure(s, r, PAM_AUTHINFO_UNAVAIL, PAM_AUTHTOK_ERR);
        if (!provider.local || !provider.email_password) {
                message(s, PAM_ERROR_MSG, "This account's password is changed at its identity provider.");
                return PAM_AUTHTOK_ERR;
        }
        return PAM_SUCCESS;
}

static int change(struct stage *s) {
        const char *old = NULL, *new = NULL;
        int r = pam_get_authtok(s->pamh, PAM_OLDAUTHTOK, &old, "Current password: ");
        if (r != PAM_SUCCESS)
                return r == PAM_CONV_AGAIN ? PAM_INCOMPLETE : PAM_AUTHTOK_ERR;
        /* Asks for the new password twice (Retype) unless an earlier module did, with use_authtok. */
        r = pam_get_authtok(s->pamh, PAM_AUTHTOK, &new, NULL);
        if (r != PAM_SUCCESS)
                return r == PAM_CONV_AGAIN ? PAM_INCOMPLETE : PAM_AUTHTOK_ERR;
        if (daemon_connect(s) < 0)
                return PAM_AUTHINFO_UNAVAIL;
        if ((r = stage_account(s)) != PAM_SUCCESS)
                return r == PAM_USER_UNKNOWN ? PAM_AUTHTOK_ERR : r;
        if ((r = local_provider(s)) != PAM_SUCCESS)
                return r;
        struct text params = {0};
        text_add(&params, "{", 1);
        text_member(&params, "provider", s->opt.provider);
        text_member(&params, "email", s->email);
        text_add(&params, "\"old_password\":", 15);
        text_json_string(&params, old, strlen(old));
        text_add(&params, ",\"new_password\":", 16);
        text_json_string(&params, new, strlen(new));
        text_add(&params, "}", 1);
        char *result = NULL;
        int k = daemon_call(s, METHOD_CHANGE_PASSWORD, &params, &result);
        text_free(&params);
        free(result);
        if (k < 0) {
                const char *code = usher_error_code(s->u);
                if (code && strcmp(code, "invalid_params") == 0)
                        message(s, PAM_ERROR_MSG, "%s", usher_error_message(s->u));
                return daemon_failure(s, k, PAM_AUTHINFO_UNAVAIL, PAM_AUTHTOK_ERR);
        }
        pam_syslog(s->pamh, LOG_INFO, "password of %s changed at usherd", s->user);
        return PAM_SUCCESS;
}

PAM_USHER_EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        struct stage s;
        int r = stage_begin(&s, pamh, flags, argc, argv);
        if (r == PAM_SUCCESS) {
                if (flags & PAM_PRELIM_CHECK) {
                        /* Before anything is asked: usherd is there, and the account's password is usher's. */
                        r = daemon_connect(&s) < 0 ? PAM_TRY_AGAIN : local_provider(&s);
                        if (r == PAM_AUTHINFO_UNAVAIL)
                                r = PAM_TRY_AGAIN;
                } else if (flags & PAM_UPDATE_AUTHTOK)
                        r = change(&s);
                else
                        r = PAM_SERVICE_ERR;
        }
        if (s.opt.debug)
                pam_syslog(pamh, LOG_DEBUG, "chauthtok of %s: %s", s.user ? s.user : "?", pam_strerror(pamh, r));
        stage_end(&s);
        return r;
}
