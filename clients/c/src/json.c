/* Reading values out of json-c's objects: the helpers every type's parser (user.c, seat.c, lease.c, event.c) and
 * message.c share. Nothing here knows a type of the protocol, nor the handle. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

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
