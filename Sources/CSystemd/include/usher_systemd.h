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
#include <systemd/sd-bus.h>

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

// sd-bus, for following logind on the system bus (Sources/UsherDaemon/LogindBus.swift). Only the non-variadic
// functions, plus usher_sd_bus_call_method, which is sd_bus_call_method with no arguments to append (Swift cannot call
// a variadic C function).
int usher_sd_bus_open_system(sd_bus **bus);
sd_bus *usher_sd_bus_flush_close_unref(sd_bus *bus);
int usher_sd_bus_get_fd(sd_bus *bus);
int usher_sd_bus_get_events(sd_bus *bus);
int usher_sd_bus_get_timeout(sd_bus *bus, uint64_t *usec);
int usher_sd_bus_process(sd_bus *bus, sd_bus_message **message);
int usher_sd_bus_add_match(sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback,
                           void *userdata);
int usher_sd_bus_call_method(sd_bus *bus, const char *destination, const char *path, const char *interface,
                             const char *member, sd_bus_error *error, sd_bus_message **reply);
int usher_sd_bus_get_property(sd_bus *bus, const char *destination, const char *path, const char *interface,
                              const char *member, sd_bus_error *error, sd_bus_message **reply, const char *type);
int usher_sd_bus_get_property_trivial(sd_bus *bus, const char *destination, const char *path, const char *interface,
                                      const char *member, sd_bus_error *error, char type, void *value);
int usher_sd_bus_message_enter_container(sd_bus_message *message, char type, const char *contents);
int usher_sd_bus_message_exit_container(sd_bus_message *message);
int usher_sd_bus_message_read_basic(sd_bus_message *message, char type, void *value);
sd_bus_message *usher_sd_bus_message_unref(sd_bus_message *message);
const char *usher_sd_bus_message_get_path(sd_bus_message *message);
const char *usher_sd_bus_message_get_interface(sd_bus_message *message);
const char *usher_sd_bus_message_get_member(sd_bus_message *message);
void usher_sd_bus_error_free(sd_bus_error *error);

#endif
