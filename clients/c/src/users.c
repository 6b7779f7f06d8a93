/* The methods about users: login, register, list, current, switch, logout, remove (the user object: user.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Calls a method whose answer has a "user" object, and hands the user to the caller when it asked for it. */
static int call_for_user(usher_t *u, const char *method, struct buf *params, usher_user **ret) {
        struct message m;
        int r = call_method(u, method, params, &m);
        buf_free(params);
        if (r < 0)
                return r;
        json_object *user = NULL;
        if (!m.result || !json_object_object_get_ex(m.result, "user", &user) || !user)
                r = -EBADMSG;
        else if (ret)
                r = user_from_json(user, ret);
        message_done(&m);
        return r;
}

static int login(usher_t *u, const char *provider, struct buf *credentials, const char *seat, usher_user **ret) {
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "provider", provider);
        buf_string(&params, "seat", seat);
        buf_key(&params, "credentials");
        buf_add(&params, credentials->p, credentials->len);
        params.failed |= credentials->failed;
        buf_end(&params);
        buf_free(credentials);
        return call_for_user(u, METHOD_LOGIN, &params, ret);
}

_public_ int usher_login_anonymous(usher_t *u, const char *provider, const char *seat, usher_user **ret) {
        CHECK_HANDLE(u);
        struct buf credentials = {0};
        buf_begin(&credentials);
        buf_string(&credentials, "type", "anonymous");
        buf_end(&credentials);
        return login(u, provider, &credentials, seat, ret);
}

/* The password is a buffer (it need not end in NUL, and is not kept): it goes into the request, whose memory is
 * zeroed once written, and nowhere else. */
_public_ int usher_login_password(usher_t *u, const char *provider, const char *email, const void *password,
                                  size_t password_len, const char *seat, usher_user **ret) {
        CHECK_HANDLE(u);
        if (!email || (!password && password_len))
                return -EINVAL;
        struct buf credentials = {0};
        buf_begin(&credentials);
        buf_string(&credentials, "type", "email_password");
        buf_string(&credentials, "email", email);
        buf_secret(&credentials, "password", password ? password : "", password_len);
        buf_end(&credentials);
        return login(u, provider, &credentials, seat, ret);
}

_public_ int usher_register(usher_t *u, const char *provider, const char *email, const void *password,
                            size_t password_len) {
        CHECK_HANDLE(u);
        if (!email || (!password && password_len))
                return -EINVAL;
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "provider", provider);
        buf_string(&params, "email", email);
        buf_secret(&params, "password", password ? password : "", password_len);
        buf_end(&params);
        struct message m;
        int r = call_method(u, METHOD_REGISTER, &params, &m);
        buf_free(&params);
        if (r >= 0)
                message_done(&m);
        return r;
}

_public_ int usher_list_users(usher_t *u, usher_user ***ret_users, size_t *ret_n) {
        CHECK_HANDLE(u);
        if (!ret_users)
                return -EINVAL;
        struct message m;
        int r = call_method(u, METHOD_LIST_USERS, NULL, &m);
        if (r < 0)
                return r;
        json_object *list = NULL;
        if (!m.result || !json_object_object_get_ex(m.result, "users", &list) ||
            !json_object_is_type(list, json_type_array)) {
                message_done(&m);
                return -EBADMSG;
        }
        size_t n = json_object_array_length(list);
        usher_user **users = calloc(n + 1, sizeof(*users));
        if (!users)
                r = -ENOMEM;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = user_from_json(json_object_array_get_idx(list, i), &users[i]);
        message_done(&m);
        if (r < 0) {
                usher_user_list_free(users);
                return r;
        }
        *ret_users = users;
        if (ret_n)
                *ret_n = n;
        return (int) (n > INT32_MAX ? INT32_MAX : n);
}

/* 1 and the user when the seat has an active user, 0 and NULL when nobody is logged in there. */
_public_ int usher_current_user(usher_t *u, const char *seat, usher_user **ret) {
        CHECK_HANDLE(u);
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "seat", seat);
        buf_end(&params);
        struct message m;
        int r = call_method(u, METHOD_CURRENT_USER, &params, &m);
        buf_free(&params);
        if (r < 0)
                return r;
        json_object *user = NULL;
        if (!m.result || !json_object_object_get_ex(m.result, "user", &user))
                r = -EBADMSG;
        else if (!user) {
                if (ret)
                        *ret = NULL;
                r = 0;
        } else {
                r = ret ? user_from_json(user, ret) : 0;
                if (r >= 0)
                        r = 1;
        }
        message_done(&m);
        return r;
}

_public_ int usher_switch_user(usher_t *u, const char *user_id, const char *seat, usher_user **ret) {
        CHECK_HANDLE(u);
        if (!user_id)
                return -EINVAL;
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "user_id", user_id);
        buf_string(&params, "seat", seat);
        buf_end(&params);
        return call_for_user(u, METHOD_SWITCH_USER, &params, ret);
}

_public_ int usher_logout(usher_t *u, const char *user_id, const char *seat, usher_user **ret) {
        CHECK_HANDLE(u);
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "user_id", user_id);
        buf_string(&params, "seat", seat);
        buf_end(&params);
        return call_for_user(u, METHOD_LOGOUT, &params, ret);
}

_public_ int usher_remove_user(usher_t *u, const char *user_id) {
        CHECK_HANDLE(u);
        if (!user_id)
                return -EINVAL;
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "user_id", user_id);
        buf_end(&params);
        struct message m;
        int r = call_method(u, METHOD_REMOVE_USER, &params, &m);
        buf_free(&params);
        if (r >= 0)
                message_done(&m);
        return r;
}
