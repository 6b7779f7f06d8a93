/* The event object (usher_event): read from an event line, and freed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

_public_ usher_event *usher_event_free(usher_event *event) {
        if (!event)
                return NULL;
        free(event->name);
        free(event->data);
        free(event->user_id);
        free(event->previous_user_id);
        free(event->seat);
        free(event);
        return NULL;
}

