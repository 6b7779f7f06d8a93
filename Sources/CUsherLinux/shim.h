#ifndef USHER_CUSHERLINUX_SHIM_H
#define USHER_CUSHERLINUX_SHIM_H

// Linux calls that Swift's Glibc module leaves out: prctl is variadic (Swift imports no variadic C function), and
// <sys/xattr.h> and <malloc.h> are not part of the module. Header-only: nothing to link.

#include <malloc.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/xattr.h>

/// Makes the calling process a child subreaper: orphaned descendants are reparented to it instead of to init.
static inline int usher_set_child_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);
}

/// Turns core dumps (and ptrace by other processes of the same user) off for the calling process.
static inline int usher_set_not_dumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}

/// Whether the calling process is dumpable: 1, 0, or -1 with errno set.
static inline int usher_is_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}

/// The raw value of an extended attribute of an open file (see fgetxattr(2)).
static inline ssize_t usher_fgetxattr(int fd, const char *name, void *value, size_t size) {
    return fgetxattr(fd, name, value, size);
}

/// Returns the heap's free memory to the system (glibc's malloc_trim(0)).
static inline int usher_malloc_trim(void) {
    return malloc_trim(0);
}

#endif
