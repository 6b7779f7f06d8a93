/* One request and its answer; the daemon's errors as negative errno values. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Sends {"id":N,"method":M,"params":P} and reads until its answer; events that come first are queued for
 * usher_process() and usher_next_event(). On success *ret holds the answer (message_done() it); a daemon's error is
 * kept (usher_error_code) and returned as its errno value. A timeout, an overlong or malformed line, more events than
 * the queue holds (-ENOBUFS), or the daemon closing the connection closes it: an answer that came late would
 * otherwise be taken for the next call's. */
int call_method(usher_t *u, const char *method, struct buf *params, struct message *ret) {
        CHECK_HANDLE(u);
        if (!method || !*method)
                return -EINVAL;
        error_clear(u);
        int64_t id = ++u->next_id;
        struct buf line = {0};
        buf_add(&line, "{\"id\":", 6);
        char digits[24];
        int n = snprintf(digits, sizeof(digits), "%lld", (long long) id);
        buf_add(&line, digits, (size_t) n);
        buf_add(&line, ",\"method\":", 10);
        buf_add_json_string(&line, method, strlen(method));
        if (params && params->len) {
                if (params->failed) {
                        buf_free(&line);
                        return -ENOMEM;
                }
                buf_add(&line, ",\"params\":", 10);
                buf_add(&line, params->p, params->len);
        }
        buf_add(&line, "}\n", 2);
        if (line.failed) {
                buf_free(&line);
                return -ENOMEM;
        }
        uint64_t deadline = u->timeout_usec ? now_usec() + u->timeout_usec : 0;
        u->in_call = true;
        int r = io_write_all(u, line.p, line.len, deadline);
        buf_free(&line);
        while (r >= 0) {
                char *text;
                size_t len;
                r = io_take_line(u, &text, &len);
                if (r == 0) {
                        r = io_wait(u, POLLIN, deadline);
                        if (r >= 0)
                                r = io_fill(u);
                        continue;
                }
                if (r < 0)
                        break;
                struct message m;
                r = message_parse(text, len, &m);
                io_consume(u, len + 1);
                if (r < 0)
                        break;
                if (m.is_event) {
                        /* Kept for the program, within the queue's bounds: past them, -ENOBUFS. */
                        r = event_enqueue(u, m.event, len + 1);
                        m.event = NULL;
                        message_done(&m);
                        if (r < 0)
                                break;
                        continue;
                }
                /* Answers come in request order: this one is ours, or the line was not an answer of usherd's. A null
                 * id is the daemon refusing the line before it could read its id. */
                if (m.has_id && m.id != id) {
                        message_done(&m);
                        r = -EPROTO;
                        break;
                }
                if (m.is_error) {
                        r = error_set(u, m.error_code, m.error_message, m.error_data);
                        message_done(&m);
                        u->in_call = false;
                        return r;
                }
                *ret = m;
                u->in_call = false;
                return 0;
        }
        u->in_call = false;
        connection_fail(u);
        return r;
}

_public_ int usher_call(usher_t *u, const char *method, const char *params_json, char **ret_result_json) {
        CHECK_HANDLE(u);
        struct buf params = {0};
        if (params_json) {
                /* Checked here, so that a caller's mistake is -EINVAL rather than the daemon's invalid_request. */
                json_tokener *tok = json_tokener_new();
                if (!tok)
                        return -ENOMEM;
                size_t len = strlen(params_json);
                json_object *o = len <= INT32_MAX ? json_tokener_parse_ex(tok, params_json, (int) len) : NULL;
                bool ok = o && json_object_is_type(o, json_type_object) &&
                        json_tokener_get_error(tok) == json_tokener_success && json_tokener_get_parse_end(tok) == len;
                if (tok->pb && tok->pb->buf)
                        explicit_bzero(tok->pb->buf, (size_t) tok->pb->size);
                json_tokener_free(tok);
                json_wipe(o);
                json_object_put(o);
                if (!ok)
                        return -EINVAL;
                buf_add(&params, params_json, len);
        }
        struct message m;
        int r = call_method(u, method, &params, &m);
        buf_free(&params);
        if (r < 0)
                return r;
        if (ret_result_json) {
                const char *text = m.result ? json_object_to_json_string_ext(m.result, JSON_C_TO_STRING_PLAIN) : "null";
                *ret_result_json = text ? strdup(text) : NULL;
                /* json-c keeps the text it printed with the object; message_done() frees that without zeroing. */
                if (m.result && text)
                        explicit_bzero((char *) text, strlen(text));
                r = *ret_result_json ? 0 : -ENOMEM;
        }
        message_done(&m);
        return r;
}
