"""Typed results about users, accounts and tokens: a dataclass per object of the protocol (``docs/protocol.md``).

Each is built from the daemon's JSON by its ``from_wire`` class method, which checks the types of the fields it
reads and ignores fields it does not know (a newer daemon may add some). Times are timezone-aware
:class:`datetime.datetime` objects in UTC. Secrets (access tokens, API keys) are left out of ``repr()``, so that
logging a result never logs a secret. The daemon's, seats' and events' types are in ``daemon_types`` and exported
here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._wire import _get, _secret, _time, _object, _objects
from .daemon_types import *  # noqa: F401,F403 (exported here too)
from .daemon_types import __all__ as _daemon_names

__all__ = [
    "Registration",
    "Identity",
    "User",
    "Change",
    "UserPage",
    "Logout",
    "Removal",
    "Unlinking",
    "Deletion",
    "PasswordReset",
    "Token",
    "DPoPProof",
    "Refresh",
    "ApiKey",
    "ApiKeyInfo",
    *_daemon_names,
]


@dataclass(frozen=True)
class Registration:
    """The answer to ``register`` and ``change_password``: the account's provider and (normalised) email."""

    provider: str
    email: str

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Registration":
        return cls(provider=_get(obj, "provider", str), email=_get(obj, "email", str))


@dataclass(frozen=True)
class Identity:
    """One way of proving who a user is: ``{provider, kind, subject}`` (never a secret)."""

    provider: str
    #: The credential type that proves it (``email_password``, ``anonymous``, ``password``, ...).
    kind: str
    subject: str

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Identity":
        return cls(provider=_get(obj, "provider", str), kind=_get(obj, "kind", str), subject=_get(obj, "subject", str))


def _identities(obj: Mapping[str, Any], key: str) -> Tuple[Identity, ...]:
    # A daemon from before linked identities sends none.
    if obj.get(key) is None:
        return ()
    return tuple(Identity.from_wire(item) for item in _objects(obj, key))


def _scopes(obj: Mapping[str, Any]) -> Optional[Tuple[str, ...]]:
    scopes = _get(obj, "scopes", list, optional=True)
    return None if scopes is None else tuple(str(scope) for scope in scopes)


def _claims(obj: Mapping[str, Any], key: str) -> Dict[str, Any]:
    # A daemon from before profiles sends none.
    if obj.get(key) is None:
        return {}
    value: Dict[str, Any] = dict(_get(obj, key, dict))
    return value


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
    #: Every identity of the user: the session's first, then those linked to it (``link_credentials``).
    identities: Tuple[Identity, ...] = ()
    #: The standard claims its provider gave (``name``, ``given_name``, ``picture``, ``locale``, ...): never a secret.
    profile: Dict[str, Any] = field(default_factory=dict, hash=False)
    #: The claims the provider's ``custom_claims`` setting names.
    custom_data: Dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def anonymous(self) -> bool:
        """Whether every identity of the user is anonymous (a guest that linked an account is not)."""
        return all(identity.kind == "anonymous" for identity in self.identities) if self.identities else (
            self.kind == "anonymous"
        )

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
            identities=_identities(obj, "identities"),
            profile=_claims(obj, "profile"),
            custom_data=_claims(obj, "custom_data"),
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
class Unlinking:
    """The answer to ``unlink_identity``: the user as it is now (None when it was removed, having only anonymous
    identities left), and whether the session that ended was revoked at its provider."""

    generation: int
    user: Optional[User]
    removed: bool
    revoked: bool

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Unlinking":
        return cls(
            generation=_get(obj, "generation", int),
            user=User.optional_from_wire(obj.get("user")),
            removed=_get(obj, "removed", bool),
            revoked=_get(obj, "revoked", bool),
        )


@dataclass(frozen=True)
class Deletion:
    """The answer to ``delete_user``: the identities whose accounts were deleted at their providers."""

    generation: int
    user_id: str
    deleted: Tuple[Identity, ...]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Deletion":
        return cls(
            generation=_get(obj, "generation", int),
            user_id=_get(obj, "user_id", str),
            deleted=_identities(obj, "deleted"),
        )


@dataclass(frozen=True)
class PasswordReset:
    """The answer to ``reset_password`` and ``complete_password_reset``: the users whose sessions the reset ended."""

    provider: str
    email: str
    logged_out: Tuple[str, ...]
    generation: int

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "PasswordReset":
        ids: List[Any] = _get(obj, "logged_out", list)
        return cls(
            provider=_get(obj, "provider", str),
            email=_get(obj, "email", str),
            logged_out=tuple(str(item) for item in ids),
            generation=_get(obj, "generation", int),
        )


@dataclass(frozen=True)
class Token:
    """An access token (``access_token``). ``repr()`` leaves the token out."""

    user_id: str
    access_token: str = field(repr=False)
    token_type: str
    expires_at: Optional[datetime]
    #: Whole seconds the token stays valid, rounded down, when it was handed out.
    expires_in: int
    #: A narrowed token's audience and scopes (None for the session's own token).
    audience: Optional[str] = None
    scopes: Optional[Tuple[str, ...]] = None

    @property
    def authorization(self) -> str:
        """The value of an HTTP ``Authorization`` header: ``Bearer <token>``, or ``DPoP <token>`` for a token bound to
        the session's key (send a proof from ``dpop_proof`` with it, in a ``DPoP`` header)."""
        return f"{self.token_type} {self.access_token}"

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Token":
        return cls(
            user_id=_get(obj, "user_id", str),
            access_token=_secret(obj, "access_token"),
            token_type=_secret(obj, "token_type"),
            expires_at=_time(obj, "expires_at", optional=False),
            expires_in=_get(obj, "expires_in", int),
            audience=_get(obj, "audience", str, optional=True),
            scopes=_scopes(obj),
        )


@dataclass(frozen=True)
class DPoPProof:
    """A DPoP proof (RFC 9449) for one request, signed by the daemon with the key the session's tokens are bound to
    (``dpop_proof``). ``repr()`` leaves the proof out."""

    user_id: str
    #: The proof JWT: the value of the request's ``DPoP`` header.
    proof: str = field(repr=False)
    #: The expiry of the token the proof's ``ath`` is for: the one ``access_token`` hands out now.
    access_token_expires_at: Optional[datetime]

    @property
    def header(self) -> str:
        """The HTTP header line: ``DPoP: <proof>``."""
        return f"DPoP: {self.proof}"

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "DPoPProof":
        return cls(
            user_id=_get(obj, "user_id", str),
            proof=_secret(obj, "proof"),
            access_token_expires_at=_time(obj, "access_token_expires_at", optional=False),
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
            key=_secret(obj, "key"),
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
