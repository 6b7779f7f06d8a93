/* The lease object (usher_lease): read from an inhibit answer, and freed. */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

/* The lease an inhibit answer names: its id ("lease", required) and seat. */
int lease_from_json(json_object *o, usher_lease **ret) {
        usher_lease *lease = calloc(1, sizeof(*lease));
        if (!lease)
                return -ENOMEM;
        int r = json_dup_string(o, "lease", true, &lease->id);
        if (r >= 0)
                r = json_dup_string(o, "seat", false, &lease->seat);
        if (r < 0) {
                usher_lease_free(lease);
                return r;
        }
        *ret = lease;
        return 0;
}

_public_ usher_lease *usher_lease_free(usher_lease *lease) {
        if (!lease)
                return NULL;
        free(lease->id);
        free(lease->seat);
        free(lease);
        return NULL;
}
