// See include/usher_loader.h.
#include "usher_loader.h"

#include <dlfcn.h>
#include <stdio.h>

static int load(struct usher_library *library) {
	void *handle = dlopen(library->soname, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		const char *reason = dlerror();
		snprintf(library->error, sizeof library->error, "cannot load %s: %s", library->soname,
			 reason ? reason : "the dynamic loader gave no reason");
		return -1;
	}
	for (size_t i = 0; i < library->count; i++) {
		*library->symbols[i].slot = dlsym(handle, library->symbols[i].name);
		if (!*library->symbols[i].slot) {
			snprintf(library->error, sizeof library->error, "%s has no %s", library->soname,
				 library->symbols[i].name);
			return -1;
		}
	}
	if (library->initialize && library->initialize(library->error, sizeof library->error) != 0) return -1;
	return 1;
}

int usher_library_ready(struct usher_library *library) {
	int state = atomic_load_explicit(&library->state, memory_order_acquire);
	if (state == 0) {
		pthread_mutex_lock(&library->lock);
		state = atomic_load_explicit(&library->state, memory_order_relaxed);
		if (state == 0) {
			state = load(library);
			atomic_store_explicit(&library->state, state, memory_order_release);
		}
		pthread_mutex_unlock(&library->lock);
	}
	return state == 1;
}
