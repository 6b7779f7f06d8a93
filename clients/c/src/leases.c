/* The methods about seats and leases: list_seats, inhibit, release (the objects: seat.c, lease.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

_public_ int usher_list_seats(usher_t *u, usher_seat ***ret_seats, size_t *ret_n) {
        CHECK_HANDLE(u);
        if (!ret_seats)
                return -EINVAL;
        struct message m;
        int r = call_method(u, METHOD_LIST_SEATS, NULL, &m);
        if (r < 0)
                return r;
        json_object *list = NULL;
        if (!m.result || !json_object_object_get_ex(m.result, "seats", &list) ||
            !json_object_is_type(list, json_type_array)) {
                message_done(&m);
                return -EBADMSG;
        }
        size_t n = json_object_array_length(list);
        usher_seat **seats = calloc(n + 1, sizeof(*seats));
        if (!seats)
                r = -ENOMEM;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = seat_from_json(json_object_array_get_idx(list, i), &seats[i]);
        message_done(&m);
        if (r < 0) {
                usher_seat_list_free(seats);
                return r;
        }
        *ret_seats = seats;
        if (ret_n)
                *ret_n = n;
        return (int) (n > INT32_MAX ? INT32_MAX : n);
}

/* A lease on the seat's active user: "block" refuses switches, "delay" holds them up to leases.max_delay. It lives
 * until usher_release() or until this connection closes (usher_close(), usher_unref(), the process ending). */
_public_ int usher_inhibit(usher_t *u, const char *seat, const char *mode, const char *who, const char *why,
                           usher_lease **ret) {
        CHECK_HANDLE(u);
        if (!mode || !who || !why)
                return -EINVAL;
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "seat", seat);
        buf_string(&params, "mode", mode);
        buf_string(&params, "who", who);
        buf_string(&params, "why", why);
        buf_end(&params);
        struct message m;
        int r = call_method(u, METHOD_INHIBIT, &params, &m);
        buf_free(&params);
        if (r < 0)
                return r;
        usher_lease *lease = NULL;
        r = lease_from_json(m.result, &lease);
        message_done(&m);
        if (r < 0)
                return r;
        if (ret)
                *ret = lease;
        else
                usher_lease_free(lease);
        return 0;
}

_public_ int usher_release(usher_t *u, const char *lease_id) {
        CHECK_HANDLE(u);
        if (!lease_id)
                return -EINVAL;
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "lease", lease_id);
        buf_end(&params);
        struct message m;
        int r = call_method(u, METHOD_RELEASE, &params, &m);
        buf_free(&params);
        if (r >= 0)
                message_done(&m);
        return r;
}
