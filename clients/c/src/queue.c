/* The handle's queue of events read and not yet handed out (usher_process(3)), bounded by USHER_MAX_QUEUED_EVENTS
 * and USHER_MAX_QUEUED_EVENT_BYTES: filled by a call that reads events before its answer (call.c) and by
 * usher_process() (events.c), emptied by them and by the handle's last unref (connection.c). */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

/* Whether the queue holds USHER_MAX_QUEUED_EVENTS events or USHER_MAX_QUEUED_EVENT_BYTES of them: the next one would
 * be one too many. */
bool events_full(const usher_t *u) {
        return u->n_events >= USHER_MAX_QUEUED_EVENTS || u->events_bytes >= USHER_MAX_QUEUED_EVENT_BYTES;
}

/* Queues an event whose line was size bytes long, taking it. -ENOBUFS when the queue is full, -ENOMEM: the event is
 * freed then, and the caller closes the connection (an event lost would leave the program out of step). */
int event_enqueue(usher_t *u, usher_event *event, size_t size) {
        if (events_full(u)) {
                usher_event_free(event);
                return -ENOBUFS;
        }
        struct event_node *node = malloc(sizeof(*node));
        if (!node) {
                usher_event_free(event);
                return -ENOMEM;
        }
        *node = (struct event_node) {.event = event, .size = size};
        if (u->events_tail)
                u->events_tail->next = node;
        else
                u->events_head = node;
        u->events_tail = node;
        u->n_events++;
        u->events_bytes += size;
        return 0;
}

/* The oldest queued event, handed to the caller; NULL when none is queued. */
usher_event *event_dequeue(usher_t *u) {
        struct event_node *node = u->events_head;
        if (!node)
                return NULL;
        u->events_head = node->next;
        if (!u->events_head)
                u->events_tail = NULL;
        u->n_events--;
        u->events_bytes -= node->size;
        usher_event *event = node->event;
        free(node);
        return event;
}

/* Frees every queued event (the handle's last unref). */
void events_clear(usher_t *u) {
        usher_event *event;
        while ((event = event_dequeue(u)))
                usher_event_free(event);
}
