#!/usr/bin/env python3
"""The walk-through of docs/varlink.md with the varlink package from PyPI, which knows nothing of usher: log in, list
users, switch, see the switch as an event, take a token with min_valid, hold a lease.

It needs the manage and token permissions on the daemon at USHER_VARLINK (default: the system daemon's Varlink
socket), and can run again on the same daemon: the account it registers is reused.
"""

import os

import varlink

ADDRESS = os.environ.get("USHER_VARLINK", "unix:/run/usher/io.usher.Session")
EMAIL, PASSWORD = "ann@example.com", "correct horse"

with varlink.Client(address=ADDRESS) as client, client.open("io.usher.Session") as usher:
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
