/* The daemon's errors: kept on the handle for usher_error_code(3) and friends, and turned into negative errno
 * values. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The one place a protocol error code becomes an errno value (usher_error_code(3) lists it). A code this version
 * does not know (added to the daemon later) is -EREMOTEIO; usher_error_code() still has it. */
static const struct {
        const char *code;
        int error;
} error_table[] = {
        {"invalid_request", EINVAL},
        {"invalid_params", EINVAL},
        {"unknown_method", EOPNOTSUPP},
        {"line_too_long", EMSGSIZE},
        {"provider_not_found", ENOENT},
        {"unsupported_credentials", EOPNOTSUPP},
        {"invalid_credentials", EKEYREJECTED},
        {"account_exists", EEXIST},
        {"registration_disabled", EOPNOTSUPP},
        {"user_not_found", ENOENT},
        {"user_logged_out", ENOKEY},
        {"no_active_user", ENODATA},
        {"conflict", ESTALE},
        {"permission_denied", EACCES},
        {"too_many_connections", EUSERS},
        {"api_key_not_found", ENOENT},
        {"provider_rejected", EKEYREVOKED},
        {"provider_unavailable", EHOSTUNREACH},
        {"internal", EIO},
        {"provider_error", EREMOTEIO},
        {"access_denied", ECANCELED},
        {"expired_token", ETIME},
        {"provider_misconfigured", EREMOTEIO},
        {"shutting_down", ESHUTDOWN},
        {"rate_limited", EAGAIN},
        {"user_active_elsewhere", EALREADY},
        {"inhibited", EBUSY},
        {"seat_not_found", ENOENT},
        {"lease_not_found", ENOENT},
        {"too_many_leases", EDQUOT},
        {"account_unconfirmed", EACCES},
        {"invalid_token", EKEYREJECTED},
        {"invalid_link", EINVAL},
        {"identity_in_use", EEXIST},
        {"not_supported", EOPNOTSUPP},
        {"identity_mismatch", EKEYREJECTED},
        {"seat_locked", EPERM},
        {"pin_incorrect", EKEYREJECTED},
        {"pin_not_set", ENOKEY},
};

int errno_from_code(const char *code) {
        for (size_t i = 0; i < sizeof(error_table) / sizeof(error_table[0]); i++)
                if (strcmp(error_table[i].code, code) == 0)
                        return -error_table[i].error;
        return -EREMOTEIO;
}

void error_clear(usher_t *u) {
        free(u->error_code);
        free(u->error_message);
        free(u->error_data);
        u->error_code = u->error_message = u->error_data = NULL;
}

/* Keeps the daemon's error for usher_error_code() and friends; returns its errno value. */
int error_set(usher_t *u, const char *code, const char *message, json_object *data) {
        error_clear(u);
        u->error_code = strdup(code);
        u->error_message = strdup(message ? message : "");
        if (data) {
                const char *text = json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN);
                u->error_data = text ? strdup(text) : NULL;
        }
        if (!u->error_code || !u->error_message) {
                error_clear(u);
                return -ENOMEM;
        }
        return errno_from_code(code);
}

_public_ const char *usher_error_code(const usher_t *u) {
        return u ? u->error_code : NULL;
}

_public_ const char *usher_error_message(const usher_t *u) {
        return u ? u->error_message : NULL;
}

_public_ const char *usher_error_data(const usher_t *u) {
        return u ? u->error_data : NULL;
}
