#ifndef USHER_CPROCESSCONTROL_SHIM_H
#define USHER_CPROCESSCONTROL_SHIM_H

// prctl(2) is variadic, and Swift cannot call variadic C functions: these fixed-argument wrappers can.

#include <sys/prctl.h>

/// Marks the calling process not dumpable: no core dump, and processes of the same user can no longer ptrace it or
/// read its memory through /proc/PID/mem (its /proc/PID files become root's). Returns 0, or -1 with errno set.
static inline int usher_set_not_dumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/// Whether the calling process is dumpable: 1, 0, or -1 with errno set.
static inline int usher_is_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}

#endif
