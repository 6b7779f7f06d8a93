// The libraries usherd opens with dlopen() when it first needs them instead of linking them (Sources/CCurl,
// Sources/CSystemd, Sources/CSQLite): each is a `struct usher_library`, loaded once per process, thread-safe, by the
// first call of usher_library_ready().
#ifndef USHER_LOADER_H
#define USHER_LOADER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

// A function to resolve: its name in the library, and where its address goes.
struct usher_symbol {
	const char *name;
	void **slot;
};

struct usher_library {
	const char *soname;
	const struct usher_symbol *symbols;
	size_t count;
	// Run once every symbol is resolved (NULL: nothing to do): 0, or -1 with what failed written to `error`.
	int (*initialize)(char *error, size_t error_size);
	pthread_mutex_t lock;
	// 0 not tried yet, 1 loaded, -1 failed (for good: a process that failed to load it once does not try again).
	atomic_int state;
	// Why it could not be loaded; empty while it is not tried or once it is loaded.
	char error[512];
};

// A library of `soname` whose functions are `symbols` (an array), with `initialize` run after loading.
#define USHER_LIBRARY(soname, symbols, initialize)                                                                     \
	{ (soname), (symbols), sizeof(symbols) / sizeof((symbols)[0]), (initialize), PTHREAD_MUTEX_INITIALIZER, 0, "" }

// Loads the library on the first call (RTLD_NOW | RTLD_LOCAL, every symbol resolved, then `initialize`); returns
// whether it is loaded. Once it has returned, the function pointers are set (when it returned 1) and `error` says why
// not (when it returned 0).
int usher_library_ready(struct usher_library *library);

#endif
