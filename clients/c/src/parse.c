/* Reading the daemon's lines: json-c parses, this checks the shape of the protocol (fuzzed by fuzz/fuzz-parse.c). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Answers nest little (a user in a list in a result); deeper than this is not an answer of usherd's. */
#define MAX_DEPTH 32

/* Zeroes every string in the tree, in place: answers carry access tokens and API keys, and json-c frees its memory
 * without zeroing it. */
void json_wipe(json_object *o) {
        if (!o)
                return;
        switch (json_object_get_type(o)) {
        case json_type_string: {
                int len = json_object_get_string_len(o);
                char *s = (char *) json_object_get_string(o);
                if (s && len > 0)
                        explicit_bzero(s, (size_t) len);
                break;
        }
        case json_type_object: {
                json_object_object_foreach(o, key, value) {
                        (void) key;
                        json_wipe(value);
                }
                break;
        }
        case json_type_array: {
                size_t n = json_object_array_length(o);
                for (size_t i = 0; i < n; i++)
                        json_wipe(json_object_array_get_idx(o, i));
                break;
        }
        default:
                break;
        }
}

static json_object *parse_json(const char *line, size_t len) {
        if (len > INT_MAX)
                return NULL;
        json_tokener *tok = json_tokener_new_ex(MAX_DEPTH);
        if (!tok)
                return NULL;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        json_object *root = json_tokener_parse_ex(tok, line, (int) len);
        bool ok = root && json_tokener_get_error(tok) == json_tokener_success &&
                json_tokener_get_parse_end(tok) == len;
        /* The tokener's own buffer held the strings it read (a token, too): zero it before json-c frees it. The
         * fields are public in json-c 0.16 (deprecated for reading, which this does not do). */
        if (tok->pb && tok->pb->buf)
                explicit_bzero(tok->pb->buf, (size_t) tok->pb->size);
        json_tokener_free(tok);
        if (!ok) {
                json_wipe(root);
                json_object_put(root);
                return NULL;
        }
        return root;
}

/* Whether the line holds the escape \u0000 (a NUL in a string or a key): a backslash run of odd length before the
 * "u" makes it an escape, an even one is escaped backslashes followed by the text "u0000". Backslashes appear only in
 * strings in JSON, so this finds every NUL json-c would put in a string, and in a key, which it would cut short
 * without a word ("access_token\u0000x" read as "access_token"). */
static bool has_escaped_nul(const char *line, size_t len) {
        for (const char *p = line; (p = memmem(p, len - (size_t) (p - line), "\\u0000", 6)); p += 6) {
                size_t at = (size_t) (p - line), backslashes = 1; /* line[at] is one */
                while (backslashes <= at && line[at - backslashes] == '\\')
                        backslashes++;
                if (backslashes % 2 == 1)
                        return true;
        }
        return false;
}

int message_parse(const char *line, size_t len, struct message *ret) {
        *ret = (struct message) {0};
        /* "\r\n" is a line end too. */
        if (len > 0 && line[len - 1] == '\r')
                len--;
        if (has_escaped_nul(line, len))
                return -EBADMSG;
        json_object *root = parse_json(line, len);
        if (!root)
                return -EBADMSG;
        ret->root = root;
        if (!json_object_is_type(root, json_type_object))
                goto bad;
        json_object *name;
        if (json_object_object_get_ex(root, "event", &name)) {
                ret->is_event = true;
                int r = event_from_json(root, &ret->event);
                if (r < 0) {
                        message_done(ret);
                        return r;
                }
                return 0;
        }
        json_object *id = NULL;
        if (!json_object_object_get_ex(root, "id", &id))
                goto bad;
        if (id) {
                if (!json_object_is_type(id, json_type_int))
                        goto bad;
                errno = 0;
                ret->id = json_object_get_int64(id);
                if (errno != 0)
                        goto bad;
                ret->has_id = true;
        }
        json_object *error = NULL;
        if (json_object_object_get_ex(root, "result", &ret->result))
                return 0;
        ret->is_error = true;
        if (!json_object_object_get_ex(root, "error", &error) || !json_object_is_type(error, json_type_object))
                goto bad;
        json_object *code = NULL, *message = NULL;
        if (!json_object_object_get_ex(error, "code", &code) || !json_object_is_type(code, json_type_string))
                goto bad;
        ret->error_code = json_object_get_string(code);
        if (strlen(ret->error_code) != (size_t) json_object_get_string_len(code) || !*ret->error_code)
                goto bad;
        if (json_object_object_get_ex(error, "message", &message) && json_object_is_type(message, json_type_string))
                ret->error_message = json_object_get_string(message);
        else
                ret->error_message = "";
        if (json_object_object_get_ex(error, "data", &ret->error_data) && ret->error_data &&
            !json_object_is_type(ret->error_data, json_type_object))
                goto bad;
        return 0;
bad:
        message_done(ret);
        return -EBADMSG;
}

void message_done(struct message *m) {
        if (m->root) {
                json_wipe(m->root);
                json_object_put(m->root);
        }
        usher_event_free(m->event);
        *m = (struct message) {0};
}

int json_dup_string(json_object *o, const char *key, bool required, char **ret) {
        json_object *v = NULL;
        *ret = NULL;
        if (!o || !json_object_is_type(o, json_type_object))
                return -EBADMSG;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return required ? -EBADMSG : 0;
        if (!json_object_is_type(v, json_type_string))
                return -EBADMSG;
        const char *s = json_object_get_string(v);
        size_t len = (size_t) json_object_get_string_len(v);
        /* A NUL inside a string would cut it short without a word: not an answer of usherd's. */
        if (strlen(s) != len)
                return -EBADMSG;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int json_get_uint64(json_object *o, const char *key, uint64_t *ret) {
        json_object *v = NULL;
        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return -EBADMSG;
        errno = 0;
        int64_t signed_value = json_object_get_int64(v);
        if (errno == 0 && signed_value < 0)
                return -EBADMSG;
        *ret = json_object_get_uint64(v);
        return 0;
}

int json_get_bool(json_object *o, const char *key, int *ret) {
        json_object *v = NULL;
        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_boolean))
                return -EBADMSG;
        *ret = json_object_get_boolean(v) ? 1 : 0;
        return 0;
}

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

int seat_from_json(json_object *o, usher_seat **ret) {
        usher_seat *seat = calloc(1, sizeof(*seat));
        if (!seat)
                return -ENOMEM;
        int r = json_dup_string(o, "name", true, &seat->name);
        if (r >= 0)
                r = json_dup_string(o, "source", false, &seat->source);
        if (r >= 0)
                r = json_get_bool(o, "present", &seat->present);
        if (r >= 0)
                r = json_dup_string(o, "user_id", false, &seat->user_id);
        if (r < 0) {
                usher_seat_free(seat);
                return r;
        }
        *ret = seat;
        return 0;
}

int event_from_json(json_object *root, usher_event **ret) {
        json_object *data = NULL;
        usher_event *event = calloc(1, sizeof(*event));
        if (!event)
                return -ENOMEM;
        int r = json_dup_string(root, "event", true, &event->name);
        if (r >= 0)
                r = json_get_uint64(root, "generation", &event->generation);
        if (r >= 0 && (!json_object_object_get_ex(root, "data", &data) || !json_object_is_type(data, json_type_object)))
                r = -EBADMSG;
        if (r >= 0) {
                const char *text = json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN);
                event->data = text ? strdup(text) : NULL;
                if (!event->data)
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = json_dup_string(data, "user_id", false, &event->user_id);
        if (r >= 0)
                r = json_dup_string(data, "previous_user_id", false, &event->previous_user_id);
        if (r >= 0)
                r = json_dup_string(data, "seat", false, &event->seat);
        if (r < 0) {
                usher_event_free(event);
                return r;
        }
        *ret = event;
        return 0;
}

/* "2026-11-21T08:03:58.123Z" (any number of fraction digits, or none; UTC only, as usherd writes them). */
int parse_rfc3339_usec(const char *s, uint64_t *ret) {
        int field[6] = {0};
        static const int width[6] = {4, 2, 2, 2, 2, 2};
        static const char after[6] = {'-', '-', 'T', ':', ':', 0};
        const char *p = s;
        for (int i = 0; i < 6; i++) {
                for (int k = 0; k < width[i]; k++, p++) {
                        if (*p < '0' || *p > '9')
                                return -EBADMSG;
                        field[i] = field[i] * 10 + (*p - '0');
                }
                if (after[i] && *p++ != after[i])
                        return -EBADMSG;
        }
        uint64_t fraction = 0;
        int digits = 0;
        if (*p == '.') {
                for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                        if (digits < 6)
                                fraction = fraction * 10 + (uint64_t) (*p - '0');
                if (digits == 0)
                        return -EBADMSG;
        }
        if (p[0] != 'Z' || p[1] != 0)
                return -EBADMSG;
        for (; digits < 6; digits++)
                fraction *= 10;
        if (field[0] < 1970 || field[1] < 1 || field[1] > 12 || field[2] < 1 || field[2] > 31 || field[3] > 23 ||
            field[4] > 59 || field[5] > 60)
                return -EBADMSG;
        struct tm tm = {
                .tm_year = field[0] - 1900,
                .tm_mon = field[1] - 1,
                .tm_mday = field[2],
                .tm_hour = field[3],
                .tm_min = field[4],
                .tm_sec = field[5],
        };
        time_t t = timegm(&tm);
        if (t < 0)
                return -EBADMSG;
        *ret = (uint64_t) t * 1000000ULL + fraction;
        return 0;
}
