"""Subscriptions (a switch seen as an event, reconnection across a restart) and leases, with the blocking client."""

from __future__ import annotations

import threading
import time

import pytest

import usher
from conftest import HANG_GUARD, Daemon

PASSWORD = "correct horse"


def two_users(client: usher.Client) -> tuple[usher.User, usher.User]:
    """An anonymous user and ann, who is active."""
    anonymous = client.login_anonymous().user
    client.register("ann@example.com", PASSWORD)
    return anonymous, client.login_email("ann@example.com", PASSWORD).user


def test_a_switch_is_seen_as_an_event(client: usher.Client) -> None:
    anonymous, ann = two_users(client)
    with client.subscribe() as events:
        change = client.switch_user(anonymous.id)
        event = events.next(timeout=HANG_GUARD)
    assert event.name == "active_user_changed"
    assert event.generation == change.generation
    assert event.data["previous_user_id"] == ann.id
    assert event.user_id == anonymous.id


def test_events_come_in_order_and_filters_apply(client: usher.Client) -> None:
    with client.subscribe(["user_logged_in"]) as logins, client.subscribe() as everything:
        assert logins.subscribed == ["user_logged_in"]
        user = client.login_anonymous().user
        client.logout()
        assert [everything.next(timeout=HANG_GUARD).name for _ in range(3)] == [
            "user_logged_in",
            "active_user_changed",
            "user_removed",
        ]
        event = logins.next(timeout=HANG_GUARD)
        assert (event.name, event.user_id) == ("user_logged_in", user.id)
        with pytest.raises(TimeoutError):
            # The logout's events were filtered out: nothing more comes. (A short wait that expects nothing.)
            logins.next(timeout=0.2)


def test_a_subscription_is_an_iterator(client: usher.Client) -> None:
    events = client.subscribe(["user_logged_in"])
    client.login_anonymous()
    for event in events:
        assert event.name == "user_logged_in"
        break
    events.close()
    assert list(events) == []


def test_a_subscription_reconnects_across_a_restart(daemon: Daemon) -> None:
    with daemon.client() as client:
        anonymous, ann = two_users(client)
        with client.subscribe(["active_user_changed"]) as events:
            generation = events.generation
            daemon.restart()
            names = []
            while True:
                event = events.next(timeout=HANG_GUARD)
                names.append(event.name)
                if event.name == "reconnected":
                    break
            # The gap is announced by "reconnected" (after daemon_stopping, when the filter lets it through).
            assert names[-1] == "reconnected" and set(names[:-1]) <= {"daemon_stopping"}
            assert events.generation == generation
            change = client.switch_user(anonymous.id)
            event = events.next(timeout=HANG_GUARD)
            assert (event.name, event.generation, event.user_id) == ("active_user_changed", change.generation, anonymous.id)


def test_without_reconnect_the_iteration_ends_with_the_daemon(daemon: Daemon) -> None:
    with daemon.client() as client:
        events = client.subscribe(reconnect=False)
        daemon.stop()
        assert [event.name for event in events] == ["daemon_stopping"]


def test_a_block_lease_holds_the_active_user_until_released(daemon: Daemon) -> None:
    with daemon.client() as holder, daemon.client() as other:
        anonymous, ann = two_users(other)
        with holder.inhibit(why="card payment", who="till") as lease:
            assert lease.mode == "block" and lease.seat == "seat0"
            (listed,) = other.list_leases()
            assert (listed.lease, listed.who, listed.why, listed.mode) == (lease.id, "till", "card payment", "block")
            with pytest.raises(usher.Inhibited) as refused:
                other.switch_user(anonymous.id)
            assert [holder_["lease"] for holder_ in refused.value.holders] == [lease.id]
        assert lease.released
        assert other.list_leases() == []
        assert other.switch_user(anonymous.id).user.id == anonymous.id


def test_a_lease_ends_with_its_client(daemon: Daemon) -> None:
    with daemon.client() as other:
        anonymous, _ = two_users(other)
        holder = daemon.client()
        lease = holder.inhibit(why="upload")
        assert [info.lease for info in other.list_leases()] == [lease.id]
        holder.close()
        assert lease.released
        # The daemon releases it when it reads the connection's end: wait for that, with a hang guard.
        deadline = time.monotonic() + HANG_GUARD
        while other.list_leases():
            assert time.monotonic() < deadline, "the lease outlived its connection"
        assert other.switch_user(anonymous.id).user.id == anonymous.id


def test_a_forced_switch_breaks_the_lease_and_the_holder_hears_of_it(daemon: Daemon) -> None:
    with daemon.client() as holder, daemon.client() as other:
        anonymous, _ = two_users(other)
        with holder.inhibit(why="card payment") as lease:
            other.switch_user(anonymous.id, force=True)
            event = holder.next_event(timeout=HANG_GUARD)
            assert (event.name, event.data["lease"], event.data["reason"]) == ("lease_broken", lease.id, "forced")
            assert lease.broken


@pytest.mark.usherd_config('[providers.local]\ntype = "local"\n[leases]\nmax_delay = "60s"\n')
def test_a_delay_lease_hears_of_a_pending_switch_and_lets_it_go_by_releasing(daemon: Daemon) -> None:
    with daemon.client() as holder, daemon.client() as other:
        anonymous, _ = two_users(other)
        lease = holder.inhibit(why="saving", mode="delay")
        answers: list[usher.Change] = []
        switcher = threading.Thread(target=lambda: answers.append(other.switch_user(anonymous.id)))
        switcher.start()
        event = holder.next_event(timeout=HANG_GUARD)
        assert (event.name, event.data["user_id"]) == ("switch_pending", anonymous.id)
        assert answers == []  # held back until the lease is released (or 60 s pass)
        lease.release()
        switcher.join(HANG_GUARD)
        assert [answer.user.id for answer in answers] == [anonymous.id]


def test_a_held_lease_makes_a_restart_an_error_not_a_silent_reconnect(daemon: Daemon) -> None:
    with daemon.client() as holder:
        holder.login_anonymous()
        lease = holder.inhibit(why="payment")
        daemon.restart()
        with pytest.raises(usher.Disconnected):
            holder.hello()
        assert lease.released
        # Told once; then the client connects again.
        assert holder.hello().server == "usherd"
