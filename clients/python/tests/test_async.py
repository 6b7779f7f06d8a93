"""The asyncio client: the same behaviour as the blocking one, through AsyncClient."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, TypeVar

import pytest

import usher
from conftest import HANG_GUARD, Daemon

PASSWORD = "correct horse"
T = TypeVar("T")


def run(body: Callable[[], Awaitable[T]]) -> T:
    """Runs a coroutine with a hang guard (the tests need no pytest plug-in)."""

    async def guarded() -> T:
        return await asyncio.wait_for(body(), HANG_GUARD)

    return asyncio.run(guarded())


def test_methods_and_errors(daemon: Daemon) -> None:
    async def body() -> None:
        async with usher.AsyncClient(daemon.socket, timeout=HANG_GUARD) as client:
            assert (await client.hello()).server == "usherd"
            assert [provider.name for provider in await client.providers()] == ["local"]
            assert await client.current_user() is None
            with pytest.raises(usher.NoActiveUser):
                await client.access_token()
            anonymous = (await client.login_anonymous()).user
            await client.register("ann@example.com", PASSWORD)
            ann = (await client.login_email("ann@example.com", PASSWORD)).user
            assert [user.id for user in await client.list_users()] == [anonymous.id, ann.id]
            page = await client.list_users_page(1)
            assert [user.id for user in page.users] == [anonymous.id] and page.next is not None
            token = await client.access_token(min_valid=300)
            assert token.user_id == ann.id and token.expires_in >= 300
            assert (await client.refresh()).user_id == ann.id
            key = await client.create_api_key("kiosk")
            assert [info.name for info in await client.list_api_keys()] == ["kiosk"]
            await client.delete_api_key("kiosk")
            with pytest.raises(usher.ApiKeyNotFound):
                await client.delete_api_key(key.name)
            await client.change_password("ann@example.com", PASSWORD, "battery staple")
            assert (await client.switch_user(anonymous.id)).user.id == anonymous.id
            with pytest.raises(usher.UserNotFound):
                await client.switch_user("u_nobody")
            assert (await client.logout(ann.id)).user.state == "logged_out"
            with pytest.raises(usher.UserLoggedOut):
                await client.switch_user(ann.id)
            assert (await client.remove_user(ann.id)).user_id == ann.id
            assert (await client.status()).users_logged_in == 1
            assert (await client.list_seats()).default_seat == "seat0"
            assert await client.jwks()
            assert (await client.call("current_user"))["user"]["id"] == anonymous.id
            with pytest.raises(usher.UnknownMethod):
                await client.call("no_such_method")
            with pytest.raises(usher.ExpiredToken):
                await client.login_wait("no-such-login")

    run(body)


def test_concurrent_requests_on_one_client_take_turns(daemon: Daemon) -> None:
    async def body() -> None:
        async with usher.AsyncClient(daemon.socket, timeout=HANG_GUARD) as client:
            await client.login_anonymous()
            answers = await asyncio.gather(*(client.current_user() for _ in range(20)), client.hello())
            assert len({user.id for user in answers[:-1] if isinstance(user, usher.User)}) == 1

    run(body)


def test_a_switch_is_seen_as_an_event(daemon: Daemon) -> None:
    async def body() -> None:
        client = await usher.AsyncClient.open(daemon.socket, timeout=HANG_GUARD)
        anonymous = (await client.login_anonymous()).user
        await client.register("ann@example.com", PASSWORD)
        ann = (await client.login_email("ann@example.com", PASSWORD)).user
        async with client.subscribe(["active_user_changed"]) as events:
            change = await client.switch_user(anonymous.id)
            async for event in events:
                assert (event.name, event.generation) == ("active_user_changed", change.generation)
                assert (event.data["previous_user_id"], event.user_id) == (ann.id, anonymous.id)
                break
        await client.close()

    run(body)


def test_a_subscription_reconnects_across_a_restart(daemon: Daemon) -> None:
    async def body() -> None:
        async with usher.AsyncClient(daemon.socket, timeout=HANG_GUARD) as client:
            user = (await client.login_anonymous()).user
            events = await client.subscribe(["user_logged_in", "user_removed"]).start()
            # The blocking restart runs in a thread, so that this loop's subscription sees the daemon go.
            await asyncio.get_running_loop().run_in_executor(None, daemon.restart)
            names = []
            while not names or names[-1] != "reconnected":
                names.append((await events.next(timeout=HANG_GUARD)).name)
            assert set(names[:-1]) <= {"daemon_stopping"}
            removal = await client.logout(user.id)
            event = await events.next(timeout=HANG_GUARD)
            assert (event.name, event.user_id, event.generation) == ("user_removed", user.id, removal.generation)
            await events.close()

    run(body)


def test_a_lease_in_async_with(daemon: Daemon) -> None:
    async def body() -> None:
        async with usher.AsyncClient(daemon.socket, timeout=HANG_GUARD) as holder, usher.AsyncClient(
            daemon.socket, timeout=HANG_GUARD
        ) as other:
            anonymous = (await other.login_anonymous()).user
            await other.register("ann@example.com", PASSWORD)
            await other.login_email("ann@example.com", PASSWORD)
            async with holder.inhibit(why="card payment", who="till") as lease:
                assert [info.lease for info in await other.list_leases()] == [lease.id]
                with pytest.raises(usher.Inhibited):
                    await other.switch_user(anonymous.id)
                await other.switch_user(anonymous.id, force=True)
                event = await holder.next_event(timeout=HANG_GUARD)
                assert (event.name, event.data["lease"]) == ("lease_broken", lease.id)
                assert lease.broken
            assert lease.released and await other.list_leases() == []
            awaited = await holder.inhibit(why="second")
            await holder.release(awaited.id)
            assert awaited.released and await other.list_leases() == []

    run(body)


def test_no_daemon_is_daemon_unavailable() -> None:
    async def body() -> Any:
        return await usher.AsyncClient.open("/tmp/usher-py-no-such-dir/usher.sock")

    with pytest.raises(usher.DaemonUnavailable):
        run(body)


@pytest.mark.usherd_config('[providers.local]\ntype = "local"\ndpop = true\n')
def test_the_async_client_asks_for_dpop_proofs(daemon: Daemon) -> None:
    async def body() -> None:
        async with usher.AsyncClient(daemon.socket, timeout=HANG_GUARD) as client:
            guest = (await client.login_anonymous()).user
            proof = await client.dpop_proof("GET", "https://api.example.com/")
            assert proof.user_id == guest.id and proof.proof.count(".") == 2
            assert (await client.hello()).program is not None

    run(body)
