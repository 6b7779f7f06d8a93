#!/usr/bin/env python3
"""The walk-through of docs/python.md: log in, list users, switch, see the switch as an event, take a token with
min_valid, hold a lease.

It finds the daemon as ``usher`` does (``USHER_SOCKET``, the per-user daemon, the system daemon) and needs the
``manage`` and ``token`` permissions there. It can run again on the same daemon: the account it registers is reused.
"""

import usher

EMAIL = "ann@example.com"
PASSWORD = "correct horse"  # an example: a real program asks for it, and never logs it


def main() -> None:
    with usher.Client() as client:
        # Log in: an anonymous user, then an email/password account (the last login is the active user).
        guest = client.login_anonymous().user
        try:
            client.register(EMAIL, PASSWORD)
        except usher.AccountExists:
            pass
        ann = client.login_email(EMAIL, PASSWORD).user
        print(f"logged in: {guest.id} (anonymous) and {ann.id} ({ann.email})")

        # List users: * marks the active one.
        for user in client.list_users():
            print(f"{'*' if user.active else ' '} {user.id} {user.email or user.kind} {user.state}")

        # Switch, and see the switch as an event (a subscription has a connection of its own).
        with client.subscribe(["active_user_changed"]) as events:
            client.switch_user(guest.id)
            event = next(events)
            print(f"event {event.name}: {event.data['previous_user_id']} -> {event.user_id}")

        # A token valid for at least five more minutes (usherd refreshes it first when needed).
        token = client.access_token(min_valid=300)
        print(f"token for {token.user_id}: {token.token_type}, valid for {token.expires_in} s")

        # Hold a lease: while it is held, nobody switches the active user (without force).
        with client.inhibit(why="card payment") as lease:
            print(f"lease {lease.id} holds seat {lease.seat}")
            try:
                client.switch_user(ann.id)
            except usher.Inhibited as refused:
                print(f"switch refused while the lease is held: {refused.code}")
        print(f"after the lease: {client.switch_user(ann.id).user.email} is active")


if __name__ == "__main__":
    main()
