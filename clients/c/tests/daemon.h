/* The real usherd for a test: $USHER_BIN/usherd on a temporary socket and state directory. */
#ifndef USHER_TEST_DAEMON_H
#define USHER_TEST_DAEMON_H

#include <sys/types.h>

struct test_daemon {
        pid_t pid;
        int pidfd; /* readable (POLLHUP) once the daemon exited */
        char dir[64];
        char socket[96];
};

/* Starts usherd with extra_config appended to a minimal configuration (a local provider with cheap password hashes)
 * and waits for its READY=1; exits the test on failure. The daemon is stopped at exit whatever happens. */
void daemon_start(struct test_daemon *d, const char *extra_config);
/* SIGTERM, waits for it to exit (hang guard), removes its directory. */
void daemon_stop(struct test_daemon *d);
/* Connects with usher_open_path; exits the test on failure. */
struct usher *daemon_connect(const struct test_daemon *d);

#endif
