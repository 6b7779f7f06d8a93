#!/bin/sh
# Run by pam_exec after pam_usher in the tests' session stack: pam_exec gives the program the PAM environment, which
# is what the session's programs get. Writes the usher variables to the file the test named.
env | grep '^USHER_' | sort > "$1"
