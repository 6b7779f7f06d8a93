/* What the daemon said: members of its answers, and its errors as PAM return codes. */
#include <errno.h>
#include <json-c/json.h>
#include <security/pam_ext.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pam_usher.h"

/* The string at a dotted path ("user.id") of a JSON object's text; NULL when absent or not a string. */
char *json_member_string(const char *json, const char *path) {
        if (!json)
                return NULL;
        json_object *root = json_tokener_parse(json), *o = root;
        char *result = NULL;
        char key[64];
        const char *p = path;
        while (o && *p) {
                size_t n = strcspn(p, ".");
                if (n >= sizeof(key) || !json_object_is_type(o, json_type_object))
                        o = NULL;
                else {
                        memcpy(key, p, n);
                        key[n] = '\0';
                        if (!json_object_object_get_ex(o, key, &o))
                                o = NULL;
                }
                p += n + (p[n] == '.');
        }
        if (o && json_object_is_type(o, json_type_string))
                result = strdup(json_object_get_string(o));
        json_object_put(root);
        return result;
}

/* A message to the person through the conversation (PAM_TEXT_INFO, PAM_ERROR_MSG); never a secret. None under
 * PAM_SILENT, as pam_unix keeps its notices to itself then: the log has the reason. */
void message(struct stage *s, int style, const char *format, ...) {
        if (s->silent)
                return;
        va_list ap;
        va_start(ap, format);
        pam_vprompt(s->pamh, style, NULL, format, ap);
        va_end(ap);
}

/* The holders of the block leases of an `inhibited` error, for the person: "who (pid N)", comma-separated. */
static void lease_holders(const char *data, char *out, size_t size) {
        out[0] = '\0';
        json_object *root = data ? json_tokener_parse(data) : NULL, *holders = NULL;
        if (root && json_object_object_get_ex(root, "holders", &holders) &&
            json_object_is_type(holders, json_type_array)) {
                size_t n = json_object_array_length(holders), used = 0;
                for (size_t i = 0; i < n && used + 1 < size; i++) {
                        json_object *h = json_object_array_get_idx(holders, i), *who = NULL, *why = NULL;
                        json_object_object_get_ex(h, "who", &who);
                        json_object_object_get_ex(h, "why", &why);
                        int k = snprintf(out + used, size - used, "%s%.64s (%.128s)", i ? ", " : "",
                                         who ? json_object_get_string(who) : "?",
                                         why ? json_object_get_string(why) : "");
                        if (k < 0)
                                break;
                        used += (size_t) k;
                }
        }
        json_object_put(root);
        /* What the holder named is shown on a terminal: no control characters. */
        for (char *p = out; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        *p = '?';
}

/* The PAM return code of a failed call: `unavailable` when usherd could not be reached or did not answer properly
 * (unreachable, a timeout, garbage, a connection closed mid-answer, the daemon stopping, its provider down);
 * PAM_MAXTRIES for `rate_limited`, with the wait shown; `otherwise` for the daemon's other refusals. Logged. */
int daemon_failure(struct stage *s, int r, int unavailable, int otherwise) {
        const char *code = s->u ? usher_error_code(s->u) : NULL;
        if (!code) {
                pam_syslog(s->pamh, LOG_ERR, "usherd did not answer properly: %s", strerror(-r));
                return unavailable;
        }
        pam_syslog(s->pamh, LOG_NOTICE, "usherd refused for %s: %s", s->user, code);
        if (strcmp(code, "rate_limited") == 0) {
                json_object *root = json_tokener_parse(usher_error_data(s->u) ? usher_error_data(s->u) : "{}"),
                            *after = NULL;
                long seconds = root && json_object_object_get_ex(root, "retry_after", &after)
                        ? (long) json_object_get_int64(after) : 0;
                json_object_put(root);
                message(s, PAM_ERROR_MSG, "Too many failed logins; try again in %ld seconds.", seconds);
                return PAM_MAXTRIES;
        }
        if (strcmp(code, "inhibited") == 0) {
                char holders[512];
                lease_holders(usher_error_data(s->u), holders, sizeof(holders));
                message(s, PAM_ERROR_MSG, "The seat is held by %s.", holders[0] ? holders : "another program");
                pam_syslog(s->pamh, LOG_NOTICE, "the seat is held by %s", holders);
                return otherwise;
        }
        if (strcmp(code, "provider_unavailable") == 0 || strcmp(code, "shutting_down") == 0 ||
            strcmp(code, "internal") == 0 || strcmp(code, "provider_error") == 0 ||
            strcmp(code, "provider_misconfigured") == 0)
                return unavailable;
        return otherwise;
}

/* The provider the module logs in at (provider=, else the daemon's default), from `providers`: its type and which
 * credential types it takes. -ENOENT when the daemon has no such provider. */
int provider_lookup(struct stage *s, struct provider *ret) {
        char *result = NULL;
        *ret = (struct provider) {0};
        int r = daemon_call(s, METHOD_PROVIDERS, NULL, &result);
        if (r < 0)
                return r;
        json_object *root = json_tokener_parse(result), *list = NULL;
        free(result);
        r = -ENOENT;
        if (root && json_object_object_get_ex(root, "providers", &list) && json_object_is_type(list, json_type_array))
                for (size_t i = 0; i < json_object_array_length(list); i++) {
                        json_object *p = json_object_array_get_idx(list, i), *name = NULL, *type = NULL,
                                    *is_default = NULL, *credentials = NULL;
                        json_object_object_get_ex(p, "name", &name);
                        json_object_object_get_ex(p, "type", &type);
                        json_object_object_get_ex(p, "default", &is_default);
                        json_object_object_get_ex(p, "credentials", &credentials);
                        bool chosen = s->opt.provider
                                ? name && strcmp(json_object_get_string(name), s->opt.provider) == 0
                                : is_default && json_object_get_boolean(is_default);
                        if (!chosen || !type)
                                continue;
                        ret->local = strcmp(json_object_get_string(type), "local") == 0;
                        size_t n = json_object_is_type(credentials, json_type_array)
                                ? json_object_array_length(credentials) : 0;
                        for (size_t k = 0; k < n; k++) {
                                const char *c = json_object_get_string(json_object_array_get_idx(credentials, k));
                                if (!c)
                                        continue;
                                if (strcmp(c, "email_password") == 0)
                                        ret->email_password = true;
                                else if (strcmp(c, "password") == 0)
                                        ret->password_grant = true;
                                else if (strcmp(c, "device_code") == 0)
                                        ret->device_code = true;
                        }
                        r = 0;
                        break;
                }
        else
                r = -EBADMSG;
        json_object_put(root);
        return r;
}
