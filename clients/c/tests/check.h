/* What the C tests share: checks that say where and what failed, and a hang guard for waiting. */
#ifndef USHER_TEST_CHECK_H
#define USHER_TEST_CHECK_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A wall-clock limit for anything that waits: generous, only there so that a hang fails instead of hanging. */
#define HANG_GUARD_SECONDS 60

#define CHECK(expr)                                                                                \
        do {                                                                                       \
                if (!(expr)) {                                                                     \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr);   \
                        exit(1);                                                                   \
                }                                                                                  \
        } while (0)

/* A call's return value, with the daemon's error when it is not the expected one. */
#define CHECK_RC(u, expr, expected)                                                                      \
        do {                                                                                             \
                int check_rc_ = (expr);                                                                  \
                if (check_rc_ != (expected)) {                                                           \
                        fprintf(stderr, "%s:%d: %s returned %d (%s; daemon: %s: %s), expected %d\n", __FILE__, \
                                __LINE__, #expr, check_rc_, strerror(check_rc_ < 0 ? -check_rc_ : 0),    \
                                usher_error_code(u) ? usher_error_code(u) : "-",                         \
                                usher_error_message(u) ? usher_error_message(u) : "-", (expected));      \
                        exit(1);                                                                         \
                }                                                                                        \
        } while (0)

#define CHECK_STR(actual, expected)                                                                         \
        do {                                                                                                \
                const char *check_a_ = (actual), *check_e_ = (expected);                                    \
                if (!check_a_ || !check_e_ || strcmp(check_a_, check_e_) != 0) {                            \
                        fprintf(stderr, "%s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #actual, \
                                check_a_ ? check_a_ : "(null)", check_e_ ? check_e_ : "(null)");            \
                        exit(1);                                                                            \
                }                                                                                           \
        } while (0)

/* Repeats a condition that another process makes true (as the Swift tests' eventually {}): a short poll(2) pause
 * between tries, and a failure after the hang guard. */
#define EVENTUALLY(cond)                                                                                    \
        do {                                                                                                \
                time_t eventually_end_ = time(NULL) + HANG_GUARD_SECONDS;                                   \
                while (!(cond)) {                                                                           \
                        if (time(NULL) > eventually_end_) {                                                 \
                                fprintf(stderr, "%s:%d: never became true: %s\n", __FILE__, __LINE__, #cond); \
                                exit(1);                                                                    \
                        }                                                                                   \
                        poll(NULL, 0, 10);                                                                  \
                }                                                                                           \
        } while (0)

static inline void test_step(const char *name) {
        fprintf(stderr, "  %s\n", name);
}

#endif
