"""The typed results about the daemon, its providers, seats, leases and events (see ``types`` for the rules)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional

from ._wire import _get, _time, _object, _objects, _strings
from .errors import ProtocolError

__all__ = [
    "Peer",
    "Program",
    "Hello",
    "Provider",
    "RefreshCounters",
    "Status",
    "LoginStart",
    "Seat",
    "Seats",
    "SeatLock",
    "LeaseInfo",
    "Event",
]


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
class Program:
    """The program usherd identified at the other end of the connection when it accepted it (rules can name it:
    ``docs/least-privilege.md``). A process that ``exec``s another program afterwards is still the one it was."""

    identified: bool
    executable: Optional[str]
    #: The executable's SHA-256 (lowercase hex), only while some rule in force asks for digests.
    executable_sha256: Optional[str]
    unit: Optional[str]
    user_unit: Optional[str]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Program":
        return cls(
            identified=_get(obj, "identified", bool),
            executable=_get(obj, "executable", str, optional=True),
            executable_sha256=_get(obj, "executable_sha256", str, optional=True),
            unit=_get(obj, "unit", str, optional=True),
            user_unit=_get(obj, "user_unit", str, optional=True),
        )


@dataclass(frozen=True)
class Hello:
    """The answer to ``hello``: the daemon's version and the caller's permissions."""

    protocol: int
    server: str
    version: str
    peer: Peer
    #: What the caller may do: some of ``read``, ``token``, ``manage``.
    permissions: List[str]
    #: The program the daemon identified; None from a daemon older than program identification.
    program: Optional[Program] = None

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Hello":
        program = obj.get("program")
        return cls(
            protocol=_get(obj, "protocol", int),
            server=_get(obj, "server", str),
            version=_get(obj, "version", str),
            peer=Peer.from_wire(_object(obj, "peer")),
            permissions=_strings(obj, "permissions"),
            program=None if program is None else Program.from_wire(_object(obj, "program")),
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
class SeatLock:
    """A seat's lock, as ``lock_seat`` and ``unlock`` answer it."""

    seat: str
    locked: bool
    #: Who locked it: ``usherd`` (``lock_seat``) or ``logind``; None when unlocked.
    by: Optional[str]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "SeatLock":
        by = obj.get("by")
        if by is not None and not isinstance(by, str):
            raise ProtocolError(f"a seat lock whose by is not a string: {by!r:.100}")
        return cls(seat=_get(obj, "seat", str), locked=_get(obj, "locked", bool), by=by)


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
