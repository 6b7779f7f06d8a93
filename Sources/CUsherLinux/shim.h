#ifndef USHER_CUSHERLINUX_SHIM_H
#define USHER_CUSHERLINUX_SHIM_H

// Linux calls that Swift's Glibc module leaves out: prctl is variadic (Swift imports no variadic C function),
// <sys/xattr.h> and <malloc.h> are not part of the module, prlimit is declared only under _GNU_SOURCE, and the
// kernel's netlink headers are not the C library's. Header-only: nothing to link.

#include <errno.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <malloc.h>
#include <poll.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

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

/// RLIMIT_CORE, the same number on every Linux architecture (asm-generic/resource.h). Not from <sys/resource.h>:
/// included by this module, its names can become this module's for Swift (it depends on which module a build makes
/// first), and then Swift code that takes them from Glibc does not build (usherd's RLIMIT_NOFILE, in a clean build).
#define USHER_RLIMIT_CORE 4

/// Sets the calling process's soft core file size limit to `soft`, or to the hard limit when `soft` is above it, and
/// stores the soft limit it had in `*previous` when that is not NULL: prlimit(2) for RLIMIT_CORE, as a system call,
/// since the C library declares prlimit only under _GNU_SOURCE. 0, or -1 with errno set.
static inline int usher_set_core_soft_limit(uint64_t soft, uint64_t *previous) {
    struct {
        uint64_t current, maximum;
    } limit;
    if (syscall(SYS_prlimit64, 0, USHER_RLIMIT_CORE, NULL, &limit) != 0) return -1;
    if (previous != NULL) *previous = limit.current;
    limit.current = soft < limit.maximum ? soft : limit.maximum;
    return (int)syscall(SYS_prlimit64, 0, USHER_RLIMIT_CORE, &limit, NULL);
}

/// The raw value of an extended attribute of an open file (see fgetxattr(2)).
static inline ssize_t usher_fgetxattr(int fd, const char *name, void *value, size_t size) {
    return fgetxattr(fd, name, value, size);
}

/// A file descriptor that refers to process `pid` and becomes readable when it exits (pidfd_open(2), Linux 5.3);
/// -1 with errno set where the kernel lacks it.
static inline int usher_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/// SO_PEERPIDFD (Linux 6.5): a pidfd for the process at the other end of a connected Unix socket, taken when it
/// connected. Older C library headers lack the name.
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
static const int usher_so_peerpidfd = SO_PEERPIDFD;

/// Whether the process a pidfd refers to is still running: 1, 0 when it has exited (its pid may be reused), -1 with
/// errno set. A pidfd polls readable once the process exits; no permission over the process is needed.
static inline int usher_pidfd_is_running(int pidfd) {
    struct pollfd entry = {.fd = pidfd, .events = POLLIN, .revents = 0};
    int ready = poll(&entry, 1, 0);
    if (ready < 0) return -1;
    return ready == 0 ? 1 : 0;
}

/// SO_COOKIE (Linux 4.12): a socket's number, unique for the system's uptime; what unix_diag tells back.
#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif
static const int usher_so_cookie = SO_COOKIE;

/// The inode of the socket connected to the Unix socket whose SO_COOKIE is `cookie`, from one dump of every Unix
/// socket (unix_diag with NLM_F_DUMP and UDIAG_SHOW_PEER): one netlink conversation, whatever the number of sockets
/// the peer holds (asking socket by socket cost two round trips for each of a busy client's descriptors). 0 and
/// *peer set on success; -ENOENT when no socket has that cookie; another negative errno on failure.
///
/// Through syscall(2), with the socket constants by number (the same on every Linux architecture): <sys/socket.h>
/// included here would make its names this module's for Swift, and Swift code that takes SOCK_CLOEXEC from Glibc
/// would not build (see USHER_RLIMIT_CORE).
static inline int usher_unix_diag_peer_of_cookie(uint64_t cookie, uint32_t *peer) {
    enum { family_unix = 1, family_netlink = 16, type_datagram = 2, flag_cloexec = 02000000 };
    int fd = (int)syscall(SYS_socket, family_netlink, type_datagram | flag_cloexec, NETLINK_SOCK_DIAG);
    if (fd < 0) return -errno;
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } message = {
        .header = {.nlmsg_len = sizeof(message), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                   .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1},
        .request = {.sdiag_family = family_unix, .udiag_states = ~0U, .udiag_show = UDIAG_SHOW_PEER},
    };
    struct sockaddr_nl kernel = {.nl_family = family_netlink};
    if (syscall(SYS_sendto, fd, &message, sizeof(message), 0, &kernel, sizeof(kernel)) < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    static __thread union {
        struct nlmsghdr header;
        char bytes[32768];
    } answer;
    int result = -ENOENT;
    for (;;) {
        ssize_t length;
        do length = syscall(SYS_recvfrom, fd, &answer, sizeof(answer), 0, NULL, NULL);
        while (length < 0 && errno == EINTR);
        if (length < 0) {
            result = -errno;
            break;
        }
        if (length == 0) break;
        int done = 0;
        for (struct nlmsghdr *header = &answer.header; NLMSG_OK(header, (size_t)length);
             header = NLMSG_NEXT(header, length)) {
            if (header->nlmsg_type == NLMSG_DONE) {
                done = 1;
                break;
            }
            if (header->nlmsg_type == NLMSG_ERROR) {
                struct nlmsgerr *failure = NLMSG_DATA(header);
                result = failure->error < 0 ? failure->error : -EBADMSG;
                done = 1;
                break;
            }
            if (result == 0 || header->nlmsg_type != SOCK_DIAG_BY_FAMILY
                || header->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
                continue;
            struct unix_diag_msg *found = NLMSG_DATA(header);
            uint64_t own = (uint64_t)found->udiag_cookie[0] | ((uint64_t)found->udiag_cookie[1] << 32);
            if (own != cookie) continue;
            char *attribute = (char *)found + NLMSG_ALIGN(sizeof(struct unix_diag_msg));
            char *end = (char *)header + header->nlmsg_len;
            *peer = 0;
            while (attribute + sizeof(struct nlattr) <= end) {
                struct nlattr *item = (struct nlattr *)attribute;
                if (item->nla_len < sizeof(struct nlattr) || attribute + item->nla_len > end) break;
                if (item->nla_type == UNIX_DIAG_PEER && item->nla_len >= NLA_HDRLEN + sizeof(uint32_t))
                    *peer = *(uint32_t *)(attribute + NLA_HDRLEN);
                attribute += NLA_ALIGN(item->nla_len);
            }
            // Found: the rest of the dump is read to its end all the same (the socket is closed after it).
            result = *peer != 0 ? 0 : -ENOTCONN;
        }
        if (done) break;
    }
    close(fd);
    return result;
}

/// Returns the heap's free memory to the system (glibc's malloc_trim(0)).
static inline int usher_malloc_trim(void) {
    return malloc_trim(0);
}

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

/// Gives back the resident pages of the program's own read-only segments (its code and constants): what only start-up
/// used is reclaimed, and what is used again is faulted back in from the page cache or the file. The code-side
/// counterpart of malloc_trim after loading. Returns the bytes advised, 0 where the kernel lacks MADV_PAGEOUT (< 5.4).
static inline long usher_page_out_own_code(void) {
    // The linker's own bounds of the program image: from its first byte to the end of its code (read-only data and
    // code; never the writable data after it).
    extern char __executable_start[];
    extern char etext[];
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)__executable_start & ~(page - 1);
    uintptr_t end = ((uintptr_t)etext + page - 1) & ~(page - 1);
    // ENOMEM: the range has holes between segments; the advice still applied to every mapped page of it.
    int advised = madvise((void *)start, end - start, MADV_PAGEOUT) == 0 || errno == ENOMEM;
    return advised ? (long)(end - start) : 0;
}

#endif
