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
