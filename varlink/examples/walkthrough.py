#!/usr/bin/env python3
"""The walk-through of docs/varlink.md with the varlink package from PyPI, which knows nothing of usher: log in, list
users, switch, see the switch as an event, take a token with min_valid, hold a lease.

It finds the daemon as usher does, and takes the Varlink socket next to its main socket: io.usher.Session in the
directory of $USHER_SOCKET (as make run prints it); else, for users other than root, in $XDG_RUNTIME_DIR/usher when a
per-user daemon's usher.sock is there; else the system daemon's /run/usher/io.usher.Session. It needs the manage and
token permissions there, and can run again on the same daemon: the account it registers is reused.
"""

import os
import sys

import varlink

EMAIL, PASSWORD = "ann@example.com", "correct horse"


def main_socket() -> str:
    """usherd's main socket, found as usher finds it."""
    if os.environ.get("USHER_SOCKET"):
        return os.environ["USHER_SOCKET"]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.getuid() != 0 and os.path.exists(os.path.join(runtime, "usher", "usher.sock")):
        return os.path.join(runtime, "usher", "usher.sock")
    return "/run/usher/usher.sock"


ADDRESS = "unix:" + os.path.join(os.path.dirname(main_socket()), "io.usher.Session")
try:
    client = varlink.Client(address=ADDRESS)
    usher = client.open("io.usher.Session")
except OSError as error:
    sys.exit(f"usherd does not answer at {ADDRESS}: {error.strerror or error} (is it running? is USHER_SOCKET set?)")

with client, usher:
    # Log in: an anonymous user, then an email/password account (the last login is the active user).
    guest = usher.Login(credentials={"type": "anonymous"})["user"]
    try:
        usher.Register(email=EMAIL, password=PASSWORD)
    except varlink.VarlinkError as error:
        if error.error() != "io.usher.Session.AccountExists":
            raise
    ann = usher.Login(credentials={"type": "email_password", "email": EMAIL, "password": PASSWORD})["user"]
    print(f"logged in: {guest['id']} (anonymous) and {ann['id']} ({ann['email']})")

    # List users: * marks the active one. (The varlink package leaves out fields that are null.)
    for user in usher.ListUsers()["users"]:
        print(f"{'*' if user['active'] else ' '} {user['id']} {user.get('email', user['kind'])} {user['state']}")

    # Switch, and see the switch as an event: Subscribe streams on a connection of its own.
    with client.open("io.usher.Session") as watcher:
        events = watcher.Subscribe(events=["active_user_changed"], _more=True)
        next(events)  # the first reply: what is subscribed
        usher.SwitchUser(user_id=guest["id"])
        event = next(events)
        print(f"event {event['event']}: {event['data']['previous_user_id']} -> {event['data']['user_id']}")

    # A token valid for at least five more minutes (usherd refreshes it first when needed).
    token = usher.AccessToken(min_valid=300)
    print(f"token for {token['user_id']}: {token['token_type']}, valid for {token['expires_in']} s")

    # Hold a lease: while it is held, nobody switches the active user (without force).
    lease = usher.Inhibit(mode="block", who="walk-through", why="card payment")
    print(f"lease {lease['lease']} holds seat {lease['seat']}")
    try:
        usher.SwitchUser(user_id=ann["id"])
    except varlink.VarlinkError as refused:
        print(f"switch refused while the lease is held: {refused.error()}")
    usher.Release(lease=lease["lease"])
    print(f"after the lease: {usher.SwitchUser(user_id=ann['id'])['user']['email']} is active")
