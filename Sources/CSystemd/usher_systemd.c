// See include/usher_systemd.h.
#include "usher_systemd.h"

#include <errno.h>

#include "usher_loader.h"

// The soname of libsystemd since systemd 209 (Debian's libsystemd0).
#define USHER_SYSTEMD_SONAME "libsystemd.so.0"

static struct {
	int (*notify)(int, const char *);
	int (*watchdog_enabled)(int, uint64_t *);
	int (*listen_fds_with_names)(int, char ***);
	int (*pid_get_unit)(pid_t, char **);
	int (*pid_get_user_unit)(pid_t, char **);
	int (*pid_get_session)(pid_t, char **);
	int (*session_get_seat)(const char *, char **);
	int (*get_seats)(char ***);
	int (*login_monitor_new)(const char *, sd_login_monitor **);
	sd_login_monitor *(*login_monitor_unref)(sd_login_monitor *);
	int (*login_monitor_get_fd)(sd_login_monitor *);
	int (*bus_open_system)(sd_bus **);
	sd_bus *(*bus_flush_close_unref)(sd_bus *);
	int (*bus_get_fd)(sd_bus *);
	int (*bus_get_events)(sd_bus *);
	int (*bus_get_timeout)(sd_bus *, uint64_t *);
	int (*bus_process)(sd_bus *, sd_bus_message **);
	int (*bus_add_match)(sd_bus *, sd_bus_slot **, const char *, sd_bus_message_handler_t, void *);
	int (*bus_call_method)(sd_bus *, const char *, const char *, const char *, const char *, sd_bus_error *,
	                       sd_bus_message **, const char *, ...);
	int (*bus_get_property)(sd_bus *, const char *, const char *, const char *, const char *, sd_bus_error *,
	                        sd_bus_message **, const char *);
	int (*bus_get_property_trivial)(sd_bus *, const char *, const char *, const char *, const char *, sd_bus_error *,
	                                char, void *);
	int (*bus_message_enter_container)(sd_bus_message *, char, const char *);
	int (*bus_message_exit_container)(sd_bus_message *);
	int (*bus_message_read_basic)(sd_bus_message *, char, void *);
	sd_bus_message *(*bus_message_unref)(sd_bus_message *);
	const char *(*bus_message_get_path)(sd_bus_message *);
	const char *(*bus_message_get_interface)(sd_bus_message *);
	const char *(*bus_message_get_member)(sd_bus_message *);
	void (*bus_error_free)(sd_bus_error *);
} sd;

// Every function usher calls, and where its address goes.
static const struct usher_symbol symbols[] = {
	{"sd_notify", (void **)&sd.notify},
	{"sd_watchdog_enabled", (void **)&sd.watchdog_enabled},
	{"sd_listen_fds_with_names", (void **)&sd.listen_fds_with_names},
	{"sd_pid_get_unit", (void **)&sd.pid_get_unit},
	{"sd_pid_get_user_unit", (void **)&sd.pid_get_user_unit},
	{"sd_pid_get_session", (void **)&sd.pid_get_session},
	{"sd_session_get_seat", (void **)&sd.session_get_seat},
	{"sd_get_seats", (void **)&sd.get_seats},
	{"sd_login_monitor_new", (void **)&sd.login_monitor_new},
	{"sd_login_monitor_unref", (void **)&sd.login_monitor_unref},
	{"sd_login_monitor_get_fd", (void **)&sd.login_monitor_get_fd},
	{"sd_bus_open_system", (void **)&sd.bus_open_system},
	{"sd_bus_flush_close_unref", (void **)&sd.bus_flush_close_unref},
	{"sd_bus_get_fd", (void **)&sd.bus_get_fd},
	{"sd_bus_get_events", (void **)&sd.bus_get_events},
	{"sd_bus_get_timeout", (void **)&sd.bus_get_timeout},
	{"sd_bus_process", (void **)&sd.bus_process},
	{"sd_bus_add_match", (void **)&sd.bus_add_match},
	{"sd_bus_call_method", (void **)&sd.bus_call_method},
	{"sd_bus_get_property", (void **)&sd.bus_get_property},
	{"sd_bus_get_property_trivial", (void **)&sd.bus_get_property_trivial},
	{"sd_bus_message_enter_container", (void **)&sd.bus_message_enter_container},
	{"sd_bus_message_exit_container", (void **)&sd.bus_message_exit_container},
	{"sd_bus_message_read_basic", (void **)&sd.bus_message_read_basic},
	{"sd_bus_message_unref", (void **)&sd.bus_message_unref},
	{"sd_bus_message_get_path", (void **)&sd.bus_message_get_path},
	{"sd_bus_message_get_interface", (void **)&sd.bus_message_get_interface},
	{"sd_bus_message_get_member", (void **)&sd.bus_message_get_member},
	{"sd_bus_error_free", (void **)&sd.bus_error_free},
};

// Every function fails alike when one is missing, never some of them.
static struct usher_library library = USHER_LIBRARY(USHER_SYSTEMD_SONAME, symbols, NULL);

static int ready(void) { return usher_library_ready(&library); }

const char *usher_sd_load_error(void) { return ready() ? NULL : library.error; }

int usher_sd_notify(int unset_environment, const char *state) {
	return ready() ? sd.notify(unset_environment, state) : -ELIBACC;
}

int usher_sd_watchdog_enabled(int unset_environment, uint64_t *usec) {
	return ready() ? sd.watchdog_enabled(unset_environment, usec) : -ELIBACC;
}

int usher_sd_listen_fds_with_names(int unset_environment, char ***names) {
	return ready() ? sd.listen_fds_with_names(unset_environment, names) : -ELIBACC;
}

int usher_sd_pid_get_unit(pid_t pid, char **unit) { return ready() ? sd.pid_get_unit(pid, unit) : -ELIBACC; }

int usher_sd_pid_get_user_unit(pid_t pid, char **unit) {
	return ready() ? sd.pid_get_user_unit(pid, unit) : -ELIBACC;
}

int usher_sd_pid_get_session(pid_t pid, char **session) {
	return ready() ? sd.pid_get_session(pid, session) : -ELIBACC;
}

int usher_sd_session_get_seat(const char *session, char **seat) {
	return ready() ? sd.session_get_seat(session, seat) : -ELIBACC;
}

int usher_sd_get_seats(char ***seats) { return ready() ? sd.get_seats(seats) : -ELIBACC; }

int usher_sd_login_monitor_new(const char *category, sd_login_monitor **monitor) {
	return ready() ? sd.login_monitor_new(category, monitor) : -ELIBACC;
}

sd_login_monitor *usher_sd_login_monitor_unref(sd_login_monitor *monitor) {
	return ready() && monitor ? sd.login_monitor_unref(monitor) : NULL;
}

int usher_sd_login_monitor_get_fd(sd_login_monitor *monitor) {
	return ready() ? sd.login_monitor_get_fd(monitor) : -ELIBACC;
}

int usher_sd_bus_open_system(sd_bus **bus) { return ready() ? sd.bus_open_system(bus) : -ELIBACC; }

sd_bus *usher_sd_bus_flush_close_unref(sd_bus *bus) {
	return ready() && bus ? sd.bus_flush_close_unref(bus) : NULL;
}

int usher_sd_bus_get_fd(sd_bus *bus) { return ready() ? sd.bus_get_fd(bus) : -ELIBACC; }

int usher_sd_bus_get_events(sd_bus *bus) { return ready() ? sd.bus_get_events(bus) : -ELIBACC; }

int usher_sd_bus_get_timeout(sd_bus *bus, uint64_t *usec) {
	return ready() ? sd.bus_get_timeout(bus, usec) : -ELIBACC;
}

int usher_sd_bus_process(sd_bus *bus, sd_bus_message **message) {
	return ready() ? sd.bus_process(bus, message) : -ELIBACC;
}

int usher_sd_bus_add_match(sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback,
                           void *userdata) {
	return ready() ? sd.bus_add_match(bus, slot, match, callback, userdata) : -ELIBACC;
}

int usher_sd_bus_call_method(sd_bus *bus, const char *destination, const char *path, const char *interface,
                             const char *member, sd_bus_error *error, sd_bus_message **reply) {
	// No types: nothing is appended (sd-bus skips the arguments when the type string is NULL).
	return ready() ? sd.bus_call_method(bus, destination, path, interface, member, error, reply, NULL) : -ELIBACC;
}

int usher_sd_bus_get_property(sd_bus *bus, const char *destination, const char *path, const char *interface,
                              const char *member, sd_bus_error *error, sd_bus_message **reply, const char *type) {
	return ready() ? sd.bus_get_property(bus, destination, path, interface, member, error, reply, type) : -ELIBACC;
}

int usher_sd_bus_get_property_trivial(sd_bus *bus, const char *destination, const char *path, const char *interface,
                                      const char *member, sd_bus_error *error, char type, void *value) {
	return ready() ? sd.bus_get_property_trivial(bus, destination, path, interface, member, error, type, value)
	               : -ELIBACC;
}

int usher_sd_bus_message_enter_container(sd_bus_message *message, char type, const char *contents) {
	return ready() ? sd.bus_message_enter_container(message, type, contents) : -ELIBACC;
}

int usher_sd_bus_message_exit_container(sd_bus_message *message) {
	return ready() ? sd.bus_message_exit_container(message) : -ELIBACC;
}

int usher_sd_bus_message_read_basic(sd_bus_message *message, char type, void *value) {
	return ready() ? sd.bus_message_read_basic(message, type, value) : -ELIBACC;
}

sd_bus_message *usher_sd_bus_message_unref(sd_bus_message *message) {
	return ready() && message ? sd.bus_message_unref(message) : NULL;
}

const char *usher_sd_bus_message_get_path(sd_bus_message *message) {
	return ready() ? sd.bus_message_get_path(message) : NULL;
}

const char *usher_sd_bus_message_get_interface(sd_bus_message *message) {
	return ready() ? sd.bus_message_get_interface(message) : NULL;
}

const char *usher_sd_bus_message_get_member(sd_bus_message *message) {
	return ready() ? sd.bus_message_get_member(message) : NULL;
}

void usher_sd_bus_error_free(sd_bus_error *error) {
	if (ready())
		sd.bus_error_free(error);
}
