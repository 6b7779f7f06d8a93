/* The seat's lock: lock_seat, unlock with the active user's PIN, set_pin. */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

/* Calls a method whose answer this library does not keep. The request's memory is zeroed when freed: a PIN may be
 * in it. */
static int call_discarding(usher_t *u, const char *method, struct buf *params) {
        struct message m;
        int r = call_method(u, method, params, &m);
        buf_free(params);
        if (r >= 0)
                message_done(&m);
        return r < 0 ? r : 0;
}

_public_ int usher_lock_seat(usher_t *u, const char *seat) {
        CHECK_HANDLE(u);
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "seat", seat);
        buf_end(&params);
        return call_discarding(u, METHOD_LOCK_SEAT, &params);
}

/* The PIN is a buffer (it need not end in NUL, and is not kept), as a password is. */
_public_ int usher_unlock(usher_t *u, const char *seat, const void *pin, size_t pin_len) {
        CHECK_HANDLE(u);
        if (!pin && pin_len)
                return -EINVAL;
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "seat", seat);
        buf_secret(&params, "pin", pin ? pin : "", pin_len);
        buf_end(&params);
        return call_discarding(u, METHOD_UNLOCK, &params);
}

_public_ int usher_set_pin(usher_t *u, const char *user_id, const void *pin, size_t pin_len) {
        CHECK_HANDLE(u);
        if (!pin && pin_len)
                return -EINVAL;
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "user_id", user_id);
        buf_secret(&params, "pin", pin ? pin : "", pin_len);
        buf_end(&params);
        return call_discarding(u, METHOD_SET_PIN, &params);
}
