"""The asyncio client: :class:`AsyncClient`, :class:`AsyncLease` and :class:`AsyncSubscription`."""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import Any, Dict, Generator, List, Mapping, Optional, Sequence, Set, Type, TypeVar

from . import _protocol
from ._aconnection import AsyncConnection
from .discovery import SocketLocation, resolve_socket
from .errors import Disconnected, ProtocolError, TooManyEvents
from .aio_subscription import AsyncSubscription
from .types import (
    DPoPProof,
    ApiKey,
    ApiKeyInfo,
    Change,
    Deletion,
    Event,
    PasswordReset,
    Hello,
    LeaseInfo,
    LoginStart,
    Logout,
    Provider,
    Refresh,
    Registration,
    Removal,
    Seats,
    SeatLock,
    Status,
    Token,
    Unlinking,
    User,
    UserPage,
)

__all__ = ["AsyncClient", "AsyncLease"]

T = TypeVar("T")


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class AsyncLease:
    """A lease held on an :class:`AsyncClient`'s connection (``async with client.inhibit(why=...)``).

    It ends at :meth:`release`, at the end of the ``async with`` block, or when the client's connection closes.
    """

    def __init__(self, client: "AsyncClient", lease_id: str, seat: str, mode: str) -> None:
        self._client = client
        #: The daemon's name for the lease (``l_1``).
        self.id = lease_id
        #: The seat whose active user it holds.
        self.seat = seat
        #: ``block`` or ``delay``.
        self.mode = mode
        self.released = False

    @property
    def broken(self) -> bool:
        """Whether a ``lease_broken`` event for this lease has been read on the client's connection (by a request
        or :meth:`AsyncClient.next_event`)."""
        return self.id in self._client._broken

    async def release(self) -> None:
        """Releases the lease. Releasing twice, or after the connection closed (which released it), does nothing."""
        if self.released:
            return
        self.released = True
        await self._client._release(self)

    async def __aenter__(self) -> "AsyncLease":
        return self

    async def __aexit__(
        self, kind: Optional[Type[BaseException]], value: Optional[BaseException], trace: Optional[TracebackType]
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"AsyncLease(id={self.id!r}, seat={self.seat!r}, mode={self.mode!r}, released={self.released})"


class _LeaseRequest:
    """What :meth:`AsyncClient.inhibit` returns: await it for the lease, or use it with ``async with``."""

    def __init__(self, client: "AsyncClient", call: _protocol.Call[Any], mode: str) -> None:
        self._client = client
        self._call = call
        self._mode = mode
        self._lease: Optional[AsyncLease] = None

    async def _take(self) -> AsyncLease:
        lease_id, seat = _protocol.lease_parts(await self._client._request(self._call))
        lease = AsyncLease(self._client, lease_id, seat, self._mode)
        self._client._leases[lease_id] = lease
        return lease

    def __await__(self) -> Generator[Any, None, AsyncLease]:
        return self._take().__await__()

    async def __aenter__(self) -> AsyncLease:
        self._lease = await self._take()
        return self._lease

    async def __aexit__(
        self, kind: Optional[Type[BaseException]], value: Optional[BaseException], trace: Optional[TracebackType]
    ) -> None:
        if self._lease is not None:
            await self._lease.release()


class AsyncClient:
    """An asyncio connection to usherd: the same methods as :class:`usher.Client`, as coroutines.

    ``async with AsyncClient() as client:`` connects (or ``client = await AsyncClient.open()``). Requests on one
    client take turns; the answers come in order. Events sent to the connection itself (``switch_pending`` and
    ``lease_broken``, to a lease holder) are read with :meth:`next_event`; :meth:`subscribe` opens a subscription
    on a connection of its own.

    Args:
        socket_path: the daemon's socket; by default found as ``usher`` finds it.
        timeout: how long to wait for an answer, in seconds (None: no limit). A request that runs out of time
            closes the connection and raises ``TimeoutError``.
    """

    def __init__(self, socket_path: Optional[str] = None, *, timeout: Optional[float] = 60.0) -> None:
        #: Where the daemon was found, and every path looked at.
        self.location: SocketLocation = resolve_socket(socket_path)
        self.timeout = timeout
        self._connection: Optional[AsyncConnection] = None
        # Made in the loop that uses it (Python 3.9's Lock binds to the loop current when it is made).
        self._lock_instance: Optional[asyncio.Lock] = None
        # Events read while a request waited for its answer, until next_event takes them: bounded (TooManyEvents).
        self._events = _protocol.EventQueue()
        self._broken: Set[str] = set()
        self._leases: Dict[str, AsyncLease] = {}

    @property
    def _lock(self) -> asyncio.Lock:
        if self._lock_instance is None:
            self._lock_instance = asyncio.Lock()
        return self._lock_instance

    @classmethod
    async def open(cls, socket_path: Optional[str] = None, *, timeout: Optional[float] = 60.0) -> "AsyncClient":
        """A connected client."""
        client = cls(socket_path, timeout=timeout)
        await client.connect()
        return client

    async def connect(self) -> None:
        """Connects (again); raises :class:`usher.DaemonUnavailable` when nothing answers."""
        if self._connection is None:
            self._connection = await AsyncConnection.open(self.location, self.timeout)

    async def close(self) -> None:
        """Closes the connection; the daemon releases every lease it held."""
        self._lost_connection()

    async def __aenter__(self) -> "AsyncClient":
        await self.connect()
        return self

    async def __aexit__(
        self, kind: Optional[Type[BaseException]], value: Optional[BaseException], trace: Optional[TracebackType]
    ) -> None:
        await self.close()

    async def call(self, method: str, params: Optional[Mapping[str, Any]] = None) -> Any:
        """Calls any method, including ones added after this version, and returns its ``result`` as parsed JSON."""
        return await self._request(_protocol.Call(method, dict(params or {}), lambda result: result))

    async def next_event(self, timeout: Optional[float] = None) -> Event:
        """The next event sent to this connection (``switch_pending``, ``lease_broken``); ``TimeoutError`` after
        ``timeout`` seconds."""
        async with self._lock:
            if self._events:
                return self._events.popleft()
            if self._connection is None:
                raise Disconnected("the client is not connected")
            try:
                message = _protocol.expect_event(await self._connection.read(timeout))
            except ProtocolError:
                self._lost_connection()
                raise
            self._note(message)
            return message

    async def _request(self, call: _protocol.Call[T]) -> T:
        async with self._lock:
            connection = await self._usable_connection()
            request_id = connection.next_id()
            await connection.send(_protocol.encode_request(request_id, call.method, call.params))
            deadline = None if self.timeout is None else time.monotonic() + self.timeout
            while True:
                try:
                    message = await connection.read(_remaining(deadline))
                    if isinstance(message, Event):
                        self._events.append(message, connection.line_bytes)
                        self._note(message)
                        continue
                except (TimeoutError, Disconnected, TooManyEvents, ProtocolError):
                    self._lost_connection()  # out of step: a late answer would be taken for the next request's
                    raise
                return call.parse(_protocol.result_of(message, request_id, self._lost_connection))

    async def _usable_connection(self) -> AsyncConnection:
        """The connection, or a new one when the daemon closed it and no lease was held on it."""
        if self._connection is not None and not self._connection.closed:
            return self._connection
        if self._leases:
            self._lost_connection()
            raise Disconnected("usherd closed the connection, and the leases held on it with it")
        self._lost_connection()
        self._connection = await AsyncConnection.open(self.location, self.timeout)
        return self._connection

    def _lost_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection = None
        for lease in self._leases.values():
            lease.released = True
        self._leases.clear()

    def _note(self, event: Event) -> None:
        if event.name == "lease_broken" and isinstance(event.data.get("lease"), str):
            self._broken.add(event.data["lease"])

    async def _release(self, lease: AsyncLease) -> None:
        if self._leases.pop(lease.id, None) is None:
            return
        if self._connection is None or self._connection.closed:
            return
        await self._request(_protocol.release(lease.id))

    # Methods: as Client's; docs/protocol.md has every field and rule.

    async def hello(self) -> Hello:
        """The daemon's version and what this caller may do."""
        return await self._request(_protocol.hello())

    async def providers(self) -> List[Provider]:
        """The configured identity providers."""
        return await self._request(_protocol.providers())

    async def register(self, email: str, password: str, *, provider: Optional[str] = None) -> Registration:
        """Creates an email/password account at a local provider."""
        return await self._request(_protocol.register(email, password, provider))

    async def change_password(
        self, email: str, old_password: str, new_password: str, *, provider: Optional[str] = None
    ) -> Registration:
        """Sets a new password for an email/password account, given the current one."""
        return await self._request(_protocol.change_password(email, old_password, new_password, provider))

    async def login(
        self,
        credentials: Mapping[str, Any],
        *,
        provider: Optional[str] = None,
        seat: Optional[str] = None,
        move: Optional[bool] = None,
        force: Optional[bool] = None,
    ) -> Change:
        """Logs in with any credentials; the user becomes active."""
        return await self._request(_protocol.login(credentials, provider, seat, move, force))

    async def login_anonymous(
        self, *, provider: Optional[str] = None, seat: Optional[str] = None, move: Optional[bool] = None
    ) -> Change:
        """Logs in the provider's anonymous user."""
        return await self.login({"type": "anonymous"}, provider=provider, seat=seat, move=move)

    async def login_email(
        self,
        email: str,
        password: str,
        *,
        provider: Optional[str] = None,
        seat: Optional[str] = None,
        move: Optional[bool] = None,
    ) -> Change:
        """Logs in with an email and password."""
        credentials = {"type": "email_password", "email": email, "password": password}
        return await self.login(credentials, provider=provider, seat=seat, move=move)

    async def login_api_key(
        self, key: str, *, provider: Optional[str] = None, seat: Optional[str] = None, move: Optional[bool] = None
    ) -> Change:
        """Logs in as the account that created the API key."""
        return await self.login({"type": "api_key", "key": key}, provider=provider, seat=seat, move=move)

    async def login_begin(
        self, type: Optional[str] = None, *, provider: Optional[str] = None, redirect_uri: Optional[str] = None
    ) -> LoginStart:
        """Starts a browser or device login at an OpenID Connect provider."""
        return await self._request(_protocol.login_begin(type, provider, redirect_uri))

    async def login_wait(
        self, login_id: str, *, seat: Optional[str] = None, move: Optional[bool] = None, force: Optional[bool] = None
    ) -> Change:
        """Waits until a device login completes."""
        return await self._request(_protocol.login_wait(login_id, seat, move, force))

    async def current_user(self, *, seat: Optional[str] = None) -> Optional[User]:
        """The active user, or None when nobody is logged in."""
        return await self._request(_protocol.current_user(seat))

    async def list_users(self) -> List[User]:
        """Every user on the device, in the order they were added."""
        return await self._request(_protocol.list_users())

    async def list_users_page(self, limit: int, after: Optional[str] = None) -> UserPage:
        """One page of users (see docs/protocol.md, Paging)."""
        return await self._request(_protocol.list_users_page(limit, after))

    async def switch_user(
        self,
        user_id: str,
        *,
        seat: Optional[str] = None,
        move: Optional[bool] = None,
        force: Optional[bool] = None,
        if_generation: Optional[int] = None,
    ) -> Change:
        """Makes a logged-in user active."""
        return await self._request(_protocol.switch_user(user_id, seat, move, force, if_generation))

    async def logout(
        self, user_id: Optional[str] = None, *, seat: Optional[str] = None, force: Optional[bool] = None
    ) -> Logout:
        """Logs a user out (the active one by default)."""
        return await self._request(_protocol.logout(user_id, seat, force))

    async def link_credentials(
        self,
        credentials: Mapping[str, Any],
        *,
        provider: Optional[str] = None,
        user_id: Optional[str] = None,
        seat: Optional[str] = None,
        move: Optional[bool] = None,
        force: Optional[bool] = None,
    ) -> Change:
        """Links the identity ``credentials`` prove to a logged-in user (the seat's active user unless ``user_id``),
        as the SDKs' ``linkUser``: the user keeps its id, and its session belongs to that identity from now on.
        ``InvalidLink`` for anonymous credentials, ``IdentityInUse`` when another user has the identity."""
        return await self._request(_protocol.link_credentials(credentials, provider, user_id, seat, move, force))

    async def unlink_identity(
        self, user_id: str, provider: str, subject: str, *, force: Optional[bool] = None
    ) -> Unlinking:
        """Removes one identity from a user (never its last one: ``InvalidLink``)."""
        return await self._request(_protocol.unlink_identity(user_id, provider, subject, force))

    async def delete_user(self, user_id: str, *, force: Optional[bool] = None) -> Deletion:
        """Deletes the user's account at its provider, then removes it from the device (``NotSupported`` where the
        provider cannot delete accounts)."""
        return await self._request(_protocol.delete_user(user_id, force))

    async def refresh_profile(self, *, user_id: Optional[str] = None, seat: Optional[str] = None) -> Change:
        """Reads the user's profile and custom data at its provider again (the SDKs' ``refreshCustomData``)."""
        return await self._request(_protocol.refresh_profile(user_id, seat))

    async def update_profile(
        self,
        *,
        name: Optional[str] = None,
        picture: Optional[str] = None,
        locale: Optional[str] = None,
        remove: Sequence[str] = (),
        user_id: Optional[str] = None,
        seat: Optional[str] = None,
    ) -> Change:
        """Sets an email/password account's ``name``, ``picture`` (https) or ``locale``; ``remove`` names claims to
        clear."""
        changes: Dict[str, Optional[str]] = {name: None for name in remove}
        for key, value in (("name", name), ("picture", picture), ("locale", locale)):
            if value is not None:
                changes[key] = value
        return await self._request(_protocol.update_profile(changes, user_id, seat))

    async def reset_password(self, email: str, new_password: str, *, provider: Optional[str] = None) -> PasswordReset:
        """Sets a local account's password as an administrator (``manage``): every session of it ends."""
        return await self._request(_protocol.reset_password(email, new_password, provider))

    async def confirm_user(self, token: str, *, provider: Optional[str] = None) -> Registration:
        """Confirms an account with the token its confirmation hook delivered (``InvalidToken`` otherwise)."""
        return await self._request(_protocol.confirm_user(token, provider))

    async def resend_confirmation(self, email: str, *, provider: Optional[str] = None) -> str:
        """Runs the confirmation hook again with a new token; the same answer whether or not the email has an
        account. Returns the provider's name."""
        return await self._request(_protocol.resend_confirmation(email, provider))

    async def request_password_reset(self, email: str, *, provider: Optional[str] = None) -> str:
        """Runs the reset hook with a token for the email; the same answer whether or not it has an account."""
        return await self._request(_protocol.request_password_reset(email, provider))

    async def complete_password_reset(
        self, token: str, new_password: str, *, provider: Optional[str] = None
    ) -> PasswordReset:
        """Sets the password with a reset token: every session of the account ends."""
        return await self._request(_protocol.complete_password_reset(token, new_password, provider))

    async def remove_user(self, user_id: str, *, force: Optional[bool] = None) -> Removal:
        """Deletes everything about a user from the device."""
        return await self._request(_protocol.remove_user(user_id, force))

    async def access_token(
        self,
        min_valid: Optional[int] = None,
        *,
        user_id: Optional[str] = None,
        seat: Optional[str] = None,
        audience: Optional[str] = None,
        scopes: Optional[Sequence[str]] = None,
    ) -> Token:
        """An access token valid for at least ``min_valid`` seconds, refreshed first when needed."""
        return await self._request(_protocol.access_token(min_valid, user_id, seat, audience, scopes))

    async def dpop_proof(
        self,
        htm: str,
        htu: str,
        *,
        nonce: Optional[str] = None,
        user_id: Optional[str] = None,
        seat: Optional[str] = None,
        audience: Optional[str] = None,
        scopes: Optional[Sequence[str]] = None,
    ) -> DPoPProof:
        """A DPoP proof for one request (see :meth:`Client.dpop_proof`)."""
        return await self._request(_protocol.dpop_proof(htm, htu, nonce, user_id, seat, audience, scopes))

    async def refresh(self, *, user_id: Optional[str] = None, seat: Optional[str] = None) -> Refresh:
        """Refreshes a user's access token now."""
        return await self._request(_protocol.refresh(user_id, seat))

    async def create_api_key(self, name: str, *, user_id: Optional[str] = None) -> ApiKey:
        """Creates an API key; the key is in the answer only."""
        return await self._request(_protocol.create_api_key(name, user_id))

    async def list_api_keys(self, *, user_id: Optional[str] = None) -> List[ApiKeyInfo]:
        """The user's API keys (never the keys themselves)."""
        return await self._request(_protocol.list_api_keys(user_id))

    async def delete_api_key(self, name: str, *, user_id: Optional[str] = None) -> None:
        """Deletes an API key."""
        await self._request(_protocol.delete_api_key(name, user_id))

    async def jwks(self) -> List[Dict[str, Any]]:
        """The public keys that verify the local providers' access tokens."""
        return await self._request(_protocol.jwks())

    async def status(self) -> Status:
        """The daemon's state and counters."""
        return await self._request(_protocol.status())

    async def list_seats(self) -> Seats:
        """Every seat and its active user."""
        return await self._request(_protocol.list_seats())

    async def lock_seat(self, *, seat: Optional[str] = None) -> SeatLock:
        """Locks the seat; as :meth:`usher.Client.lock_seat`."""
        return await self._request(_protocol.lock_seat(seat))

    async def unlock(self, pin: str, *, seat: Optional[str] = None) -> SeatLock:
        """Unlocks the seat with its active user's PIN; as :meth:`usher.Client.unlock`."""
        return await self._request(_protocol.unlock(pin, seat))

    async def set_pin(self, pin: str, *, user_id: Optional[str] = None) -> str:
        """Sets the user's PIN; as :meth:`usher.Client.set_pin`."""
        return await self._request(_protocol.set_pin(pin, user_id))

    def inhibit(
        self, why: str, *, who: Optional[str] = None, mode: str = "block", seat: Optional[str] = None
    ) -> _LeaseRequest:
        """Takes a lease that holds the seat's active user in place: ``async with client.inhibit(why=...):`` (or
        ``lease = await client.inhibit(...)``). Arguments as :meth:`usher.Client.inhibit`."""
        return _LeaseRequest(self, _protocol.inhibit(why, who, mode, seat), mode)

    async def release(self, lease: str) -> None:
        """Releases a lease of this connection by its id."""
        held = self._leases.pop(lease, None)
        if held is not None:
            held.released = True
        await self._request(_protocol.release(lease))

    async def list_leases(self) -> List[LeaseInfo]:
        """Every lease held on the device."""
        return await self._request(_protocol.list_leases())

    def subscribe(
        self, events: Optional[Sequence[str]] = None, *, seats: Optional[Sequence[str]] = None, reconnect: bool = True
    ) -> AsyncSubscription:
        """Events as an async iterator on a connection of its own (``async for event in client.subscribe():``);
        arguments as :meth:`usher.Client.subscribe`."""
        return AsyncSubscription(self.location, events, seats, reconnect=reconnect, timeout=self.timeout)
