// See include/usher_loader.h.
#include "usher_loader.h"

#include <dlfcn.h>
#include <stdio.h>

int usher_load_library(const char *soname, const struct usher_symbol *symbols, size_t count, char *error,
		       size_t error_size) {
	void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!library) {
		const char *reason = dlerror();
		snprintf(error, error_size, "cannot load %s: %s", soname, reason ? reason : "?");
		return -1;
	}
	for (size_t i = 0; i < count; i++) {
		*symbols[i].slot = dlsym(library, symbols[i].name);
		if (!*symbols[i].slot) {
			snprintf(error, error_size, "%s has no %s", soname, symbols[i].name);
			return -1;
		}
	}
	return 0;
}
