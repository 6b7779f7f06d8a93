// libsystemd, loaded when usherd first needs it (Sources/UsherDaemon, Sources/UsherServer).
//
// usherd is the CLI too (Sources/usherd/Usherd.swift), and linked, libsystemd and the libraries it loads (libcap,
// libgcrypt, libgpg-error, liblzma, libzstd, liblz4) would be mapped and relocated by every `usher` the shell or git
// runs, which needs none of them: 0.65 ms of each run. So usherd opens libsystemd.so.0 with dlopen on the first call
// of any function here (once per process, thread-safe), as systemd opens its own optional libraries. The package
// depends on libsystemd0 itself, since dpkg-shlibdeps does not see a library opened so.
//
// Each function is libsystemd's of the same name without the usher_ prefix, with its arguments and results; when
// libsystemd cannot be loaded, or lacks the function, it returns -ELIBACC (and sets no output), as libsystemd
// returns a negative errno for its own failures. usher_sd_load_error() says why, for a log line.
#ifndef USHER_SYSTEMD_H
#define USHER_SYSTEMD_H

#include <sys/types.h>
#include <stdint.h>

// Only the types: the functions of these headers are not linked, and calling one fails the link.
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>

// NULL once libsystemd is loaded; else why it could not be (loads it first if nothing tried yet).
const char *usher_sd_load_error(void);

int usher_sd_notify(int unset_environment, const char *state);
int usher_sd_watchdog_enabled(int unset_environment, uint64_t *usec);
int usher_sd_listen_fds_with_names(int unset_environment, char ***names);

int usher_sd_pid_get_unit(pid_t pid, char **unit);
int usher_sd_pid_get_user_unit(pid_t pid, char **unit);
int usher_sd_pid_get_session(pid_t pid, char **session);
int usher_sd_session_get_seat(const char *session, char **seat);
int usher_sd_get_seats(char ***seats);

int usher_sd_login_monitor_new(const char *category, sd_login_monitor **monitor);
sd_login_monitor *usher_sd_login_monitor_unref(sd_login_monitor *monitor);
int usher_sd_login_monitor_get_fd(sd_login_monitor *monitor);

#endif
