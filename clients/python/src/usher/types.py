"""The typed results: one dataclass per object of the protocol (``docs/protocol.md``).

Each is built from the daemon's JSON by its ``from_wire`` class method, which checks the types of the fields it
reads and ignores fields it does not know (a newer daemon may add some). Times are timezone-aware
:class:`datetime.datetime` objects in UTC. Secrets (access tokens, API keys) are left out of ``repr()``, so that
logging a result never logs a secret.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional, TypeVar

from .errors import ProtocolError

__all__ = [
    "Peer",
    "Hello",
    "Provider",
    "Registration",
    "User",
    "Change",
    "UserPage",
    "Logout",
    "Removal",
    "Token",
    "Refresh",
    "ApiKey",
    "ApiKeyInfo",
    "RefreshCounters",
    "Status",
    "Seat",
    "Seats",
    "LeaseInfo",
    "LoginStart",
    "Event",
]

_T = TypeVar("_T")


def _get(obj: Mapping[str, Any], key: str, kind: type, optional: bool = False) -> Any:
    value = obj.get(key)
    if value is None and optional:
        return None
    # bool is an int in Python; a number field must not accept true.
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    raise ProtocolError(f"field {key!r} is not a {kind.__name__}: {value!r:.100}")


def _time(obj: Mapping[str, Any], key: str, optional: bool = True) -> Optional[datetime]:
    value = _get(obj, key, str, optional)
    if value is None:
        return None
    text: str = value
    # Python 3.9's fromisoformat takes "+00:00" but not "Z".
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ProtocolError(f"field {key!r} is not an RFC 3339 time: {value!r:.100}") from None


def _object(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value: Mapping[str, Any] = _get(obj, key, dict)
    return value


def _objects(obj: Mapping[str, Any], key: str) -> List[Mapping[str, Any]]:
    items: List[Any] = _get(obj, key, list)
    if not all(isinstance(item, dict) for item in items):
        raise ProtocolError(f"field {key!r} is not a list of objects")
    return items


def _strings(obj: Mapping[str, Any], key: str) -> List[str]:
    items: List[Any] = _get(obj, key, list)
    if not all(isinstance(item, str) for item in items):
        raise ProtocolError(f"field {key!r} is not a list of strings")
    return items


@dataclass(frozen=True)
class Peer:
    """The caller as the daemon sees it (``SO_PEERCRED``)."""

    uid: int
    gid: int
    pid: int

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Peer":
        return cls(uid=_get(obj, "uid", int), gid=_get(obj, "gid", int), pid=_get(obj, "pid", int))


@dataclass(frozen=True)
class Hello:
    """The answer to ``hello``: the daemon's version and the caller's permissions."""

    protocol: int
    server: str
    version: str
    peer: Peer
    #: What the caller may do: some of ``read``, ``token``, ``manage``.
    permissions: List[str]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Hello":
        return cls(
            protocol=_get(obj, "protocol", int),
            server=_get(obj, "server", str),
            version=_get(obj, "version", str),
            peer=Peer.from_wire(_object(obj, "peer")),
            permissions=_strings(obj, "permissions"),
        )


@dataclass(frozen=True)
class Provider:
    """A configured identity provider (``providers``)."""

    name: str
    type: str
    #: The credential types it accepts for ``login``.
    credentials: List[str]
    default: bool

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Provider":
        return cls(
            name=_get(obj, "name", str),
            type=_get(obj, "type", str),
            credentials=_strings(obj, "credentials"),
            default=_get(obj, "default", bool),
        )


@dataclass(frozen=True)
class Registration:
    """The answer to ``register`` and ``change_password``: the account's provider and (normalised) email."""

    provider: str
    email: str

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Registration":
        return cls(provider=_get(obj, "provider", str), email=_get(obj, "email", str))


@dataclass(frozen=True)
class User:
    """A user on the device (the user object of ``docs/protocol.md``)."""

    id: str
    provider: str
    #: The credential type of the last login (``email_password``, ``anonymous``, ``api_key``, ...).
    kind: str
    email: Optional[str]
    name: Optional[str]
    #: ``logged_in`` or ``logged_out`` (``removed`` only in the answer to the logout of an anonymous user).
    state: str
    #: Whether the user is active (on any seat).
    active: bool
    created_at: Optional[datetime]
    last_login_at: Optional[datetime]
    last_active_at: Optional[datetime]
    access_token_expires_at: Optional[datetime]
    refresh_token_expires_at: Optional[datetime]
    #: ``fresh``, ``refreshing``, ``retrying`` or ``none``.
    token_state: str
    next_refresh_at: Optional[datetime]
    retry_at: Optional[datetime]
    last_refresh_error: Optional[str]

    @property
    def logged_in(self) -> bool:
        """Whether the user is logged in."""
        return self.state == "logged_in"

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "User":
        return cls(
            id=_get(obj, "id", str),
            provider=_get(obj, "provider", str),
            kind=_get(obj, "kind", str),
            email=_get(obj, "email", str, optional=True),
            name=_get(obj, "name", str, optional=True),
            state=_get(obj, "state", str),
            active=_get(obj, "active", bool),
            created_at=_time(obj, "created_at"),
            last_login_at=_time(obj, "last_login_at"),
            last_active_at=_time(obj, "last_active_at"),
            access_token_expires_at=_time(obj, "access_token_expires_at"),
            refresh_token_expires_at=_time(obj, "refresh_token_expires_at"),
            token_state=_get(obj, "token_state", str),
            next_refresh_at=_time(obj, "next_refresh_at"),
            retry_at=_time(obj, "retry_at"),
            last_refresh_error=_get(obj, "last_refresh_error", str, optional=True),
        )

    @classmethod
    def optional_from_wire(cls, value: Any) -> Optional["User"]:
        """A user, or None for JSON ``null``."""
        return None if value is None else cls.from_wire(_get({"user": value}, "user", dict))


@dataclass(frozen=True)
class Change:
    """The answer to ``login``, ``login_wait`` and ``switch_user``: the user, now active, and the new generation."""

    generation: int
    user: User
    #: Where the user is active after the change; None on a device that does not name seats.
    seat: Optional[str]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Change":
        return cls(
            generation=_get(obj, "generation", int),
            user=User.from_wire(_object(obj, "user")),
            seat=_get(obj, "seat", str, optional=True),
        )


@dataclass(frozen=True)
class UserPage:
    """One page of ``list_users`` with a ``limit``; pass :attr:`next` as ``after`` for the page after it."""

    generation: int
    users: List[User]
    #: The cursor of the next page; None on the last page.
    next: Optional[str]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "UserPage":
        return cls(
            generation=_get(obj, "generation", int),
            users=[User.from_wire(user) for user in _objects(obj, "users")],
            next=_get(obj, "next", str, optional=True),
        )


@dataclass(frozen=True)
class Logout:
    """The answer to ``logout``."""

    generation: int
    user: User
    #: Whether the provider confirmed that it revoked the session.
    revoked: bool
    #: Where the user was active until then; None when nowhere or on a device that does not name seats.
    seat: Optional[str]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Logout":
        return cls(
            generation=_get(obj, "generation", int),
            user=User.from_wire(_object(obj, "user")),
            revoked=_get(obj, "revoked", bool),
            seat=_get(obj, "seat", str, optional=True),
        )


@dataclass(frozen=True)
class Removal:
    """The answer to ``remove_user``."""

    generation: int
    user_id: str

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Removal":
        return cls(generation=_get(obj, "generation", int), user_id=_get(obj, "user_id", str))


@dataclass(frozen=True)
class Token:
    """An access token (``access_token``). ``repr()`` leaves the token out."""

    user_id: str
    access_token: str = field(repr=False)
    token_type: str
    expires_at: Optional[datetime]
    #: Whole seconds the token stays valid, rounded down, when it was handed out.
    expires_in: int

    @property
    def authorization(self) -> str:
        """The value of an HTTP ``Authorization`` header: ``Bearer <token>``."""
        return f"{self.token_type} {self.access_token}"

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Token":
        return cls(
            user_id=_get(obj, "user_id", str),
            access_token=_get(obj, "access_token", str),
            token_type=_get(obj, "token_type", str),
            expires_at=_time(obj, "expires_at", optional=False),
            expires_in=_get(obj, "expires_in", int),
        )


@dataclass(frozen=True)
class Refresh:
    """The answer to ``refresh``."""

    user_id: str
    access_token_expires_at: Optional[datetime]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Refresh":
        return cls(user_id=_get(obj, "user_id", str), access_token_expires_at=_time(obj, "access_token_expires_at"))


@dataclass(frozen=True)
class ApiKey:
    """A new API key (``create_api_key``): :attr:`key` is shown only here. ``repr()`` leaves the key out."""

    user_id: str
    name: str
    key: str = field(repr=False)
    created_at: Optional[datetime]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "ApiKey":
        return cls(
            user_id=_get(obj, "user_id", str),
            name=_get(obj, "name", str),
            key=_get(obj, "key", str),
            created_at=_time(obj, "created_at"),
        )


@dataclass(frozen=True)
class ApiKeyInfo:
    """An API key as ``list_api_keys`` shows it (without the key)."""

    name: str
    created_at: Optional[datetime]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "ApiKeyInfo":
        return cls(name=_get(obj, "name", str), created_at=_time(obj, "created_at"))


@dataclass(frozen=True)
class RefreshCounters:
    """The refresh counters of ``status`` (calls to providers since the daemon started)."""

    scheduled: int
    next_at: Optional[datetime]
    succeeded: int
    failed: int

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "RefreshCounters":
        return cls(
            scheduled=_get(obj, "scheduled", int),
            next_at=_time(obj, "next_at"),
            succeeded=_get(obj, "succeeded", int),
            failed=_get(obj, "failed", int),
        )


@dataclass(frozen=True)
class Status:
    """The answer to ``status``: the daemon's state and counters."""

    version: str
    uptime_seconds: float
    generation: int
    users_logged_in: int
    users_logged_out: int
    active_user_id: Optional[str]
    connections: int
    refresh: RefreshCounters

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Status":
        users = _object(obj, "users")
        uptime = obj.get("uptime_seconds")
        if not isinstance(uptime, (int, float)) or isinstance(uptime, bool):
            raise ProtocolError(f"field 'uptime_seconds' is not a number: {uptime!r:.100}")
        return cls(
            version=_get(obj, "version", str),
            uptime_seconds=float(uptime),
            generation=_get(obj, "generation", int),
            users_logged_in=_get(users, "logged_in", int),
            users_logged_out=_get(users, "logged_out", int),
            active_user_id=_get(obj, "active_user_id", str, optional=True),
            connections=_get(obj, "connections", int),
            refresh=RefreshCounters.from_wire(_object(obj, "refresh")),
        )


@dataclass(frozen=True)
class Seat:
    """A seat and its active user (``list_seats``)."""

    name: str
    #: ``config`` or ``logind``.
    source: str
    present: bool
    user_id: Optional[str]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Seat":
        return cls(
            name=_get(obj, "name", str),
            source=_get(obj, "source", str),
            present=_get(obj, "present", bool),
            user_id=_get(obj, "user_id", str, optional=True),
        )


@dataclass(frozen=True)
class Seats:
    """The answer to ``list_seats``."""

    generation: int
    default_seat: str
    seats: List[Seat]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Seats":
        return cls(
            generation=_get(obj, "generation", int),
            default_seat=_get(obj, "default_seat", str),
            seats=[Seat.from_wire(seat) for seat in _objects(obj, "seats")],
        )


@dataclass(frozen=True)
class LeaseInfo:
    """A lease as ``list_leases`` (and the ``holders`` of ``inhibited``) show it.

    ``who`` and ``why`` are free text chosen by the holder: escape their control characters before showing them.
    """

    lease: str
    seat: str
    #: ``block`` or ``delay``.
    mode: str
    who: str
    why: str
    pid: Optional[int]
    uid: Optional[int]
    executable: Optional[str]
    since: Optional[datetime]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "LeaseInfo":
        return cls(
            lease=_get(obj, "lease", str),
            seat=_get(obj, "seat", str),
            mode=_get(obj, "mode", str),
            who=_get(obj, "who", str),
            why=_get(obj, "why", str),
            pid=_get(obj, "pid", int, optional=True),
            uid=_get(obj, "uid", int, optional=True),
            executable=_get(obj, "executable", str, optional=True),
            since=_time(obj, "since"),
        )


@dataclass(frozen=True)
class LoginStart:
    """The answer to ``login_begin``: a browser (``authorization_code``) or ``device_code`` login under way.

    The other flow's fields are None. ``code_verifier`` is a secret and left out of ``repr()``.
    """

    type: str
    provider: str
    login_id: Optional[str]
    authorize_url: Optional[str]
    state: Optional[str]
    code_verifier: Optional[str] = field(repr=False)
    redirect_uri: Optional[str]
    verification_uri: Optional[str]
    verification_uri_complete: Optional[str]
    user_code: Optional[str]
    expires_at: Optional[datetime]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "LoginStart":
        return cls(
            type=_get(obj, "type", str),
            provider=_get(obj, "provider", str),
            login_id=_get(obj, "login_id", str, optional=True),
            authorize_url=_get(obj, "authorize_url", str, optional=True),
            state=_get(obj, "state", str, optional=True),
            code_verifier=_get(obj, "code_verifier", str, optional=True),
            redirect_uri=_get(obj, "redirect_uri", str, optional=True),
            verification_uri=_get(obj, "verification_uri", str, optional=True),
            verification_uri_complete=_get(obj, "verification_uri_complete", str, optional=True),
            user_code=_get(obj, "user_code", str, optional=True),
            expires_at=_time(obj, "expires_at"),
        )


@dataclass(frozen=True)
class Event:
    """An event (``{"event", "generation", "data"}``), after ``subscribe`` or to a lease holder.

    :attr:`name` is the wire's ``event`` (``active_user_changed``, ``user_logged_in``, ...). One name is the
    client's own: ``reconnected``, yielded by a subscription that lost its connection and subscribed again (events
    between the two were missed; read the state again).
    """

    name: str
    generation: int
    data: Dict[str, Any]

    @property
    def user_id(self) -> Optional[str]:
        """``data.user_id`` (or ``data.user.id`` for ``user_logged_in``), when the event has one."""
        value = self.data.get("user_id")
        if value is None and isinstance(self.data.get("user"), dict):
            value = self.data["user"].get("id")
        return value if isinstance(value, str) else None

    @property
    def seat(self) -> Optional[str]:
        """``data.seat``, on events about a seat of a device that names seats."""
        value = self.data.get("seat")
        return value if isinstance(value, str) else None

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Event":
        data = obj.get("data")
        return cls(
            name=_get(obj, "event", str),
            generation=_get(obj, "generation", int),
            data=dict(data) if isinstance(data, dict) else {},
        )
