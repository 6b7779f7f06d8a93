/* The seat object (usher_seat): read from a list_seats answer, and freed. */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

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

_public_ usher_seat *usher_seat_free(usher_seat *seat) {
        if (!seat)
                return NULL;
        free(seat->name);
        free(seat->source);
        free(seat->user_id);
        free(seat);
        return NULL;
}

_public_ void usher_seat_list_free(usher_seat **seats) {
        if (!seats)
                return;
        for (size_t i = 0; seats[i]; i++)
                usher_seat_free(seats[i]);
        free(seats);
}
