/* Reading the daemon's lines: json-c parses, this checks the shape of the protocol (fuzzed by fuzz/fuzz-parse.c). An
 * event's fields are read by event.c; answers' results by the type files (user.c, seat.c, lease.c) when a method's
 * function takes them. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Answers nest little (a user in a list in a result); deeper than this is not an answer of usherd's. */
#define MAX_DEPTH 32

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
