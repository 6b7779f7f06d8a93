"""The seat's lock with the blocking and the asyncio client: lock_seat, set_pin, unlock, and their errors."""

from __future__ import annotations

import asyncio

import pytest

import usher
from conftest import HANG_GUARD, Daemon

PASSWORD = "correct horse"


def test_a_locked_seat_refuses_tokens_until_the_pin_unlocks_it(client: usher.Client) -> None:
    client.register("ann@example.com", PASSWORD)
    ann = client.login_email("ann@example.com", PASSWORD).user
    assert client.set_pin("4821") == ann.id
    locked = client.lock_seat()
    assert (locked.locked, locked.by) == (True, "usherd")
    with pytest.raises(usher.SeatLocked) as refused:
        client.access_token()
    assert refused.value.seat == locked.seat
    with pytest.raises(usher.PinIncorrect):
        client.unlock("0000")
    unlocked = client.unlock("4821")
    assert (unlocked.seat, unlocked.locked, unlocked.by) == (locked.seat, False, None)
    assert client.access_token().user_id == ann.id


def test_a_user_without_a_pin_cannot_unlock_and_a_short_pin_is_refused(client: usher.Client) -> None:
    client.register("ann@example.com", PASSWORD)
    client.login_email("ann@example.com", PASSWORD)
    with pytest.raises(usher.InvalidParams):
        client.set_pin("123")
    client.lock_seat()
    with pytest.raises(usher.PinNotSet):
        client.unlock("1234")


def test_the_asyncio_client_locks_and_unlocks(daemon: Daemon) -> None:
    async def run() -> None:
        async with usher.AsyncClient(daemon.socket, timeout=HANG_GUARD) as client:
            await client.register("ann@example.com", PASSWORD)
            ann = (await client.login_email("ann@example.com", PASSWORD)).user
            assert await client.set_pin("246810") == ann.id
            assert (await client.lock_seat()).locked
            with pytest.raises(usher.SeatLocked):
                await client.access_token()
            assert not (await client.unlock("246810")).locked

    asyncio.run(run())
