#ifndef USHER_CUSHERLINUX_SHIM_H
#define USHER_CUSHERLINUX_SHIM_H

// Linux calls that Swift's Glibc module leaves out: <sys/xattr.h> is not part of the module. Header-only: nothing to
// link.

#include <sys/types.h>
#include <sys/xattr.h>

/// The raw value of an extended attribute of an open file (see fgetxattr(2)).
static inline ssize_t usher_fgetxattr(int fd, const char *name, void *value, size_t size) {
    return fgetxattr(fd, name, value, size);
}

#endif
