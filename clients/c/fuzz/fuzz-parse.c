/* libFuzzer over everything that reads the daemon's bytes: a line as an answer or an event, and an answer's result as
 * each result type the library decodes (user, user list, seat, token expiry). Run by make test for a bounded number
 * of runs; longer: make -C clients/c test-fuzz FUZZ_RUNS=-1. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct message m;
        if (message_parse((const char *) data, size, &m) < 0)
                return 0;
        if (m.is_event) {
                /* Every field an event hands out is a string the caller may print. */
                if (!m.event->name || !m.event->data)
                        abort();
                message_done(&m);
                return 0;
        }
        if (m.is_error && !m.error_code)
                abort();
        if (m.result) {
                usher_user *user = NULL;
                if (user_from_json(m.result, &user) == 0 && (!user->id || !user->state))
                        abort();
                usher_user_free(user);
                json_object *inner = NULL;
                if (json_object_object_get_ex(m.result, "user", &inner) && user_from_json(inner, &user) == 0)
                        usher_user_free(user);
                usher_seat *seat = NULL;
                if (seat_from_json(m.result, &seat) == 0 && !seat->name)
                        abort();
                usher_seat_free(seat);
                char *expires_at = NULL;
                uint64_t usec;
                if (json_dup_string(m.result, "expires_at", true, &expires_at) == 0)
                        (void) parse_rfc3339_usec(expires_at, &usec);
                free(expires_at);
        }
        message_done(&m);
        return 0;
}
