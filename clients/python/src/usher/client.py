"""The blocking client: :class:`Client`."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Type, TypeVar

from . import _protocol
from ._connection import Connection, deadline_after
from .discovery import SocketLocation, resolve_socket
from .errors import Disconnected, ProtocolError, TooManyEvents
from .lease import Lease
from .subscription import Subscription
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

__all__ = ["Client", "Lease"]  # Lease is defined in .lease

T = TypeVar("T")


class Client:
    """A blocking connection to usherd.

    Every method sends one request and waits for its answer, raising the :class:`usher.UsherError` subclass of the
    error code when the daemon refuses. One request at a time per client (calls from several threads take turns);
    open one client per thread for parallel requests.

    Args:
        socket_path: the daemon's socket; by default found as ``usher`` finds it (``$USHER_SOCKET``, the per-user
            daemon, the system daemon: see :func:`usher.resolve_socket`).
        timeout: how long to wait for an answer, in seconds, as a guard against a daemon that hangs (None: no
            limit). A request that runs out of time closes the connection (its answer would come later) and
            raises ``TimeoutError``. Leave room for changes held back by delay leases (``leases.max_delay``).

    Raises:
        DaemonUnavailable: nothing answers at the socket path.
    """

    def __init__(self, socket_path: Optional[str] = None, *, timeout: Optional[float] = 60.0) -> None:
        #: Where the daemon was found, and every path looked at.
        self.location: SocketLocation = resolve_socket(socket_path)
        self.timeout = timeout
        self._lock = threading.RLock()
        # Events read while a request waited for its answer, until next_event takes them: bounded (TooManyEvents).
        self._events = _protocol.EventQueue()
        self._broken: Set[str] = set()
        self._leases: Dict[str, Lease] = {}
        self._connection: Optional[Connection] = Connection(self.location, timeout)

    # Connection

    def close(self) -> None:
        """Closes the connection; the daemon releases every lease it held."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
            for lease in self._leases.values():
                lease.released = True
            self._leases.clear()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self, kind: Optional[Type[BaseException]], value: Optional[BaseException], trace: Optional[TracebackType]
    ) -> None:
        self.close()

    def call(self, method: str, params: Optional[Mapping[str, Any]] = None) -> Any:
        """Calls any method, including ones added after this version, and returns its ``result`` as parsed JSON.

        Errors are raised as for the typed methods.
        """
        return self._request(_protocol.Call(method, dict(params or {}), lambda result: result))

    def next_event(self, timeout: Optional[float] = None) -> Event:
        """The next event sent to this connection: ``switch_pending`` and ``lease_broken`` reach a lease holder
        without a subscription. (For the other events, use :meth:`subscribe`.) Raises ``TimeoutError`` after
        ``timeout`` seconds, :class:`usher.Disconnected` when the daemon closed the connection, and
        :class:`usher.ProtocolError` (closing the connection) for a line that is not usherd's."""
        with self._lock:
            if self._events:
                return self._events.popleft()
            connection = self._connection
            if connection is None:
                raise Disconnected("the client is closed")
            try:
                message = _protocol.expect_event(connection.read(deadline_after(timeout)))
            except ProtocolError:
                self._lost_connection()
                raise
            self._note(message)
            return message

    def _request(self, call: _protocol.Call[T]) -> T:
        with self._lock:
            connection = self._usable_connection()
            request_id = connection.next_id()
            connection.send(_protocol.encode_request(request_id, call.method, call.params))
            deadline = deadline_after(self.timeout)
            while True:
                try:
                    message = connection.read(deadline)
                    if isinstance(message, Event):
                        self._events.append(message, connection.line_bytes)
                        self._note(message)
                        continue
                except (TimeoutError, Disconnected, TooManyEvents, ProtocolError):
                    # The answer may still come later, or the line was not usherd's: the connection is out of step
                    # and cannot be used for another request.
                    self._lost_connection()
                    raise
                return call.parse(_protocol.result_of(message, request_id, self._lost_connection))

    def _usable_connection(self) -> Connection:
        """The connection, or a new one when the daemon closed it (a restart) and no lease was held on it."""
        connection = self._connection
        if connection is not None and not connection.peer_closed():
            return connection
        if connection is not None:
            # Events it sent before closing (daemon_stopping, lease_broken) are kept for next_event, within the
            # queue's bounds.
            while connection.has_line() and not self._events.full:
                message = connection.read(None)
                if isinstance(message, Event):
                    self._events.append(message, connection.line_bytes)
                    self._note(message)
        if self._leases:
            self._lost_connection()
            raise Disconnected("usherd closed the connection, and the leases held on it with it")
        self._connection = Connection(self.location, self.timeout)
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

    def _lease_broken(self, lease_id: str) -> bool:
        with self._lock:
            connection = self._connection
            if connection is not None:
                connection.peer_closed()  # reads what has arrived, without waiting
                # Up to the queue's bounds: past them the rest waits in the socket until next_event takes some.
                while connection.has_line() and not self._events.full:
                    message = connection.read(None)
                    if isinstance(message, Event):
                        self._events.append(message, connection.line_bytes)
                        self._note(message)
            return lease_id in self._broken

    def _release(self, lease: Lease) -> None:
        with self._lock:
            if self._leases.pop(lease.id, None) is None:
                return
            if self._connection is None or self._connection.peer_closed():
                return  # the daemon released it with the connection
            self._request(_protocol.release(lease.id))

    # Methods: docs/protocol.md has every field and rule.

    def hello(self) -> Hello:
        """The daemon's version and what this caller may do (always allowed)."""
        return self._request(_protocol.hello())

    def providers(self) -> List[Provider]:
        """The configured identity providers and the credential types each accepts."""
        return self._request(_protocol.providers())

    def register(self, email: str, password: str, *, provider: Optional[str] = None) -> Registration:
        """Creates an email/password account at a local provider (permission ``manage``)."""
        return self._request(_protocol.register(email, password, provider))

    def change_password(
        self, email: str, old_password: str, new_password: str, *, provider: Optional[str] = None
    ) -> Registration:
        """Sets a new password for an email/password account, given the current one."""
        return self._request(_protocol.change_password(email, old_password, new_password, provider))

    def login(
        self,
        credentials: Mapping[str, Any],
        *,
        provider: Optional[str] = None,
        seat: Optional[str] = None,
        move: Optional[bool] = None,
        force: Optional[bool] = None,
    ) -> Change:
        """Logs in with any credentials (``{"type": ..., ...}``, as in docs/protocol.md); the user becomes active."""
        return self._request(_protocol.login(credentials, provider, seat, move, force))

    def login_anonymous(
        self, *, provider: Optional[str] = None, seat: Optional[str] = None, move: Optional[bool] = None
    ) -> Change:
        """Logs in the provider's anonymous user (reused while it is logged in)."""
        return self.login({"type": "anonymous"}, provider=provider, seat=seat, move=move)

    def login_email(
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
        return self.login(credentials, provider=provider, seat=seat, move=move)

    def login_api_key(
        self, key: str, *, provider: Optional[str] = None, seat: Optional[str] = None, move: Optional[bool] = None
    ) -> Change:
        """Logs in as the account that created the API key."""
        return self.login({"type": "api_key", "key": key}, provider=provider, seat=seat, move=move)

    def login_begin(
        self, type: Optional[str] = None, *, provider: Optional[str] = None, redirect_uri: Optional[str] = None
    ) -> LoginStart:
        """Starts a browser (``authorization_code``, the default) or ``device_code`` login at an OpenID Connect
        provider."""
        return self._request(_protocol.login_begin(type, provider, redirect_uri))

    def login_wait(
        self, login_id: str, *, seat: Optional[str] = None, move: Optional[bool] = None, force: Optional[bool] = None
    ) -> Change:
        """Waits until a device login completes (``timeout`` must leave room for the person to approve it)."""
        return self._request(_protocol.login_wait(login_id, seat, move, force))

    def current_user(self, *, seat: Optional[str] = None) -> Optional[User]:
        """The active user (of ``seat``, or of the caller's seat), or None when nobody is logged in."""
        return self._request(_protocol.current_user(seat))

    def list_users(self) -> List[User]:
        """Every user on the device, logged in and logged out, in the order they were added."""
        return self._request(_protocol.list_users())

    def list_users_page(self, limit: int, after: Optional[str] = None) -> UserPage:
        """One page of users: pass the page's ``next`` as ``after`` for the next one (see docs/protocol.md,
        Paging)."""
        return self._request(_protocol.list_users_page(limit, after))

    def switch_user(
        self,
        user_id: str,
        *,
        seat: Optional[str] = None,
        move: Optional[bool] = None,
        force: Optional[bool] = None,
        if_generation: Optional[int] = None,
    ) -> Change:
        """Makes a logged-in user active (``UserLoggedOut``, ``UserNotFound``, ``Inhibited``, ``Conflict``...)."""
        return self._request(_protocol.switch_user(user_id, seat, move, force, if_generation))

    def logout(
        self, user_id: Optional[str] = None, *, seat: Optional[str] = None, force: Optional[bool] = None
    ) -> Logout:
        """Logs a user out (the active one by default); the user stays on the device (an anonymous one is removed)."""
        return self._request(_protocol.logout(user_id, seat, force))

    def link_credentials(
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
        return self._request(_protocol.link_credentials(credentials, provider, user_id, seat, move, force))

    def unlink_identity(
        self, user_id: str, provider: str, subject: str, *, force: Optional[bool] = None
    ) -> Unlinking:
        """Removes one identity from a user (never its last one: ``InvalidLink``)."""
        return self._request(_protocol.unlink_identity(user_id, provider, subject, force))

    def delete_user(self, user_id: str, *, force: Optional[bool] = None) -> Deletion:
        """Deletes the user's account at its provider, then removes it from the device (``NotSupported`` where the
        provider cannot delete accounts)."""
        return self._request(_protocol.delete_user(user_id, force))

    def refresh_profile(self, *, user_id: Optional[str] = None, seat: Optional[str] = None) -> Change:
        """Reads the user's profile and custom data at its provider again (the SDKs' ``refreshCustomData``)."""
        return self._request(_protocol.refresh_profile(user_id, seat))

    def update_profile(
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
        return self._request(_protocol.update_profile(changes, user_id, seat))

    def reset_password(self, email: str, new_password: str, *, provider: Optional[str] = None) -> PasswordReset:
        """Sets a local account's password as an administrator (``manage``): every session of it ends."""
        return self._request(_protocol.reset_password(email, new_password, provider))

    def confirm_user(self, token: str, *, provider: Optional[str] = None) -> Registration:
        """Confirms an account with the token its confirmation hook delivered (``InvalidToken`` otherwise)."""
        return self._request(_protocol.confirm_user(token, provider))

    def resend_confirmation(self, email: str, *, provider: Optional[str] = None) -> str:
        """Runs the confirmation hook again with a new token; the same answer whether or not the email has an
        account. Returns the provider's name."""
        return self._request(_protocol.resend_confirmation(email, provider))

    def request_password_reset(self, email: str, *, provider: Optional[str] = None) -> str:
        """Runs the reset hook with a token for the email; the same answer whether or not it has an account."""
        return self._request(_protocol.request_password_reset(email, provider))

    def complete_password_reset(
        self, token: str, new_password: str, *, provider: Optional[str] = None
    ) -> PasswordReset:
        """Sets the password with a reset token: every session of the account ends."""
        return self._request(_protocol.complete_password_reset(token, new_password, provider))

    def remove_user(self, user_id: str, *, force: Optional[bool] = None) -> Removal:
        """Deletes everything about a user from the device."""
        return self._request(_protocol.remove_user(user_id, force))

    def access_token(
        self,
        min_valid: Optional[int] = None,
        *,
        user_id: Optional[str] = None,
        seat: Optional[str] = None,
        audience: Optional[str] = None,
        scopes: Optional[Sequence[str]] = None,
    ) -> Token:
        """An access token valid for at least ``min_valid`` seconds (the daemon's default: 60), refreshed first when
        needed; the active user's unless ``user_id`` is given. ``NoActiveUser`` when nobody is logged in. With
        ``audience`` or ``scopes``, a narrowed token for that audience and no more than those scopes (docs/least-
        privilege.md): ``PermissionDenied`` when the program's rule gives less, ``NotSupported`` when the provider
        cannot narrow."""
        return self._request(_protocol.access_token(min_valid, user_id, seat, audience, scopes))

    def dpop_proof(
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
        """A DPoP proof for one request (its method ``htm`` and URL ``htu``; ``nonce`` is the server's ``DPoP-Nonce``),
        signed by the daemon with the session's key, which never leaves it. ``NotSupported`` for bearer tokens."""
        return self._request(_protocol.dpop_proof(htm, htu, nonce, user_id, seat, audience, scopes))

    def refresh(self, *, user_id: Optional[str] = None, seat: Optional[str] = None) -> Refresh:
        """Refreshes a user's access token now (at most about once a second per user)."""
        return self._request(_protocol.refresh(user_id, seat))

    def create_api_key(self, name: str, *, user_id: Optional[str] = None) -> ApiKey:
        """Creates an API key for a local account's user; the key is in the answer only."""
        return self._request(_protocol.create_api_key(name, user_id))

    def list_api_keys(self, *, user_id: Optional[str] = None) -> List[ApiKeyInfo]:
        """The user's API keys (names and dates, never the keys)."""
        return self._request(_protocol.list_api_keys(user_id))

    def delete_api_key(self, name: str, *, user_id: Optional[str] = None) -> None:
        """Deletes an API key (``ApiKeyNotFound`` when there is none of that name)."""
        self._request(_protocol.delete_api_key(name, user_id))

    def jwks(self) -> List[Dict[str, Any]]:
        """The public keys (JWK) that verify the local providers' access tokens."""
        return self._request(_protocol.jwks())

    def status(self) -> Status:
        """The daemon's state and counters."""
        return self._request(_protocol.status())

    def list_seats(self) -> Seats:
        """Every seat and its active user."""
        return self._request(_protocol.list_seats())

    def inhibit(self, why: str, *, who: Optional[str] = None, mode: str = "block", seat: Optional[str] = None) -> Lease:
        """Takes a lease that holds the seat's active user in place; use it with ``with``.

        Args:
            why: for people: what the program is in the middle of ("card payment").
            who: the holder's name; the program's name by default.
            mode: ``block`` refuses changes (``Inhibited``), ``delay`` holds them back up to ``leases.max_delay``.
            seat: the seat; the caller's seat by default.
        """
        with self._lock:
            lease_id, lease_seat = _protocol.lease_parts(self._request(_protocol.inhibit(why, who, mode, seat)))
            lease = Lease(self, lease_id, lease_seat, mode)
            self._leases[lease_id] = lease
            return lease

    def lock_seat(self, *, seat: Optional[str] = None) -> SeatLock:
        """Locks the seat (the caller's by default): its active user's tokens are refused with ``SeatLocked`` until
        :meth:`unlock`."""
        return self._request(_protocol.lock_seat(seat))

    def unlock(self, pin: str, *, seat: Optional[str] = None) -> SeatLock:
        """Unlocks the seat with its active user's PIN, checked by usherd alone (no network needed).
        ``PinIncorrect`` for a wrong PIN, which counts as a failed login."""
        return self._request(_protocol.unlock(pin, seat))

    def set_pin(self, pin: str, *, user_id: Optional[str] = None) -> str:
        """Sets the PIN (4 to 64 characters) of the user (the active user by default); answers the user's id."""
        return self._request(_protocol.set_pin(pin, user_id))

    def release(self, lease: str) -> None:
        """Releases a lease of this connection by its id (``LeaseNotFound`` for any other)."""
        with self._lock:
            held = self._leases.pop(lease, None)
            if held is not None:
                held.released = True
            self._request(_protocol.release(lease))

    def list_leases(self) -> List[LeaseInfo]:
        """Every lease held on the device."""
        return self._request(_protocol.list_leases())

    def subscribe(
        self,
        events: Optional[Sequence[str]] = None,
        *,
        seats: Optional[Sequence[str]] = None,
        reconnect: bool = True,
    ) -> Subscription:
        """Subscribes on a connection of its own and returns the events as an iterator (see :class:`Subscription`).

        Args:
            events: event names; every event by default.
            seats: only events about these seats; every seat by default.
            reconnect: when the daemon goes away (a restart), connect and subscribe again, and yield a
                ``reconnected`` event; otherwise the iteration ends.
        """
        return Subscription(self.location, events, seats, reconnect=reconnect, timeout=self.timeout)
