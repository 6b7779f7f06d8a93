/* The user object (usher_user): read from an answer, and freed. One place for both, so that a field added to the
 * struct is read and freed side by side. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "internal.h"

int user_from_json(json_object *o, usher_user **ret) {
        static const struct {
                const char *key;
                size_t offset;
                bool required;
        } fields[] = {
#define FIELD(name, required) {#name, offsetof(usher_user, name), required}
                FIELD(id, true), FIELD(provider, true), FIELD(kind, true), FIELD(email, false), FIELD(name, false),
                FIELD(state, true), FIELD(created_at, false), FIELD(last_login_at, false),
                FIELD(last_active_at, false), FIELD(access_token_expires_at, false),
                FIELD(refresh_token_expires_at, false), FIELD(token_state, false), FIELD(next_refresh_at, false),
                FIELD(retry_at, false), FIELD(last_refresh_error, false),
#undef FIELD
        };
        usher_user *user = calloc(1, sizeof(*user));
        if (!user)
                return -ENOMEM;
        int r = 0;
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]) && r >= 0; i++)
                r = json_dup_string(o, fields[i].key, fields[i].required, (char **) ((char *) user + fields[i].offset));
        if (r >= 0)
                r = json_get_bool(o, "active", &user->active);
        if (r < 0) {
                usher_user_free(user);
                return r;
        }
        *ret = user;
        return 0;
}

_public_ usher_user *usher_user_free(usher_user *user) {
        if (!user)
                return NULL;
        char **strings[] = {&user->id, &user->provider, &user->kind, &user->email, &user->name, &user->state,
                            &user->created_at, &user->last_login_at, &user->last_active_at,
                            &user->access_token_expires_at, &user->refresh_token_expires_at, &user->token_state,
                            &user->next_refresh_at, &user->retry_at, &user->last_refresh_error};
        for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
                free(*strings[i]);
        free(user);
        return NULL;
}

_public_ void usher_user_list_free(usher_user **users) {
        if (!users)
                return;
        for (size_t i = 0; users[i]; i++)
                usher_user_free(users[i]);
        free(users);
}
