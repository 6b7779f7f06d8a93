// Opening a shared library with dlopen() and resolving the functions usherd calls in it: the one loader behind the
// libraries usherd opens when it first needs them instead of linking them (Sources/CCurl, Sources/CSystemd,
// Sources/CSQLite).
#ifndef USHER_LOADER_H
#define USHER_LOADER_H

#include <stddef.h>

// A function to resolve: its name in the library, and where its address goes.
struct usher_symbol {
	const char *name;
	void **slot;
};

// Opens `soname` (RTLD_NOW | RTLD_LOCAL) and stores the address of each of the `count` symbols in its slot. Returns 0;
// or -1 with what failed (the library, or the first symbol it lacks) in `error`. The library stays open either way:
// a process that failed to use it once does not try again. Not thread-safe: call it under pthread_once.
int usher_load_library(const char *soname, const struct usher_symbol *symbols, size_t count, char *error,
		       size_t error_size);

#endif
