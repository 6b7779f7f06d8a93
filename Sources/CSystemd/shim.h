#ifndef USHER_CSYSTEMD_SHIM_H
#define USHER_CSYSTEMD_SHIM_H

#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>

#endif
