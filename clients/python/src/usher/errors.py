"""The exceptions: one class per error code of the protocol.

Every error the daemon answers with is raised as an instance of :class:`UsherError` whose ``code`` is the stable
code from the wire (``docs/protocol.md``, "Error codes"). Each documented code has its own subclass, so a program
can write ``except usher.UserNotFound:``; a code this version does not know yet (one a newer daemon added) is raised
as :class:`UsherError` itself, with the code as sent.

Four classes are the client's own and never sent by the daemon: :class:`DaemonUnavailable` (nothing answered on
the socket path), :class:`Disconnected` (the daemon closed the connection), :class:`ProtocolError` (the daemon sent
something this client cannot read) and :class:`TooManyEvents` (more events came than the client keeps untaken).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Type

from . import _interface as wire

__all__ = [
    "UsherError",
    "DaemonUnavailable",
    "ProtocolError",
    "Disconnected",
    "TooManyEvents",
    "InvalidRequest",
    "UnknownMethod",
    "InvalidParams",
    "LineTooLong",
    "ProviderNotFound",
    "UnsupportedCredentials",
    "InvalidCredentials",
    "AccountExists",
    "RegistrationDisabled",
    "UserNotFound",
    "UserLoggedOut",
    "NoActiveUser",
    "Conflict",
    "PermissionDenied",
    "TooManyConnections",
    "ApiKeyNotFound",
    "ProviderRejected",
    "ProviderUnavailable",
    "InternalError",
    "ProviderError",
    "AccessDenied",
    "ExpiredToken",
    "ProviderMisconfigured",
    "ShuttingDown",
    "RateLimited",
    "UserActiveElsewhere",
    "Inhibited",
    "SeatNotFound",
    "LeaseNotFound",
    "TooManyLeases",
    "AccountUnconfirmed",
    "InvalidToken",
    "InvalidLink",
    "IdentityInUse",
    "IdentityMismatch",
    "NotSupported",
    "SeatLocked",
    "PinIncorrect",
    "PinNotSet",
    "ERROR_CLASSES",
    "error_from_wire",
]


class UsherError(Exception):
    """An error answered by usherd, or met on the way to it.

    Attributes:
        code: the stable snake_case code (``"user_not_found"``); codes are never renamed.
        message: the daemon's message, for people.
        data: machine-readable details for the codes that have them (``rate_limited``: ``retry_after``), else an
            empty dict.
    """

    #: The wire code of this class; the base class's is only a placeholder for codes this version does not know.
    wire_code = ""

    def __init__(self, code: str, message: str, data: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data: Dict[str, Any] = dict(data or {})


class DaemonUnavailable(UsherError):
    """Nothing answered: no daemon listens at the socket path (the client's own error, never on the wire).

    ``tried`` lists every path that was looked at, as ``usher`` names them when it exits 3.
    """

    wire_code = "daemon_unavailable"

    def __init__(self, message: str, tried: Sequence[str] = ()) -> None:
        super().__init__(self.wire_code, message)
        self.tried: List[str] = list(tried)


class ProtocolError(UsherError):
    """The daemon sent a line this client cannot read."""

    wire_code = "protocol_error"

    def __init__(self, message: str) -> None:
        super().__init__(self.wire_code, message)


class Disconnected(UsherError):
    """The daemon closed the connection (it stopped or restarted) before the answer came; the client's own error.

    Leases held on that connection are gone with it. A client holding no lease connects again by itself at its
    next request; a subscription made with ``reconnect=True`` subscribes again.
    """

    wire_code = "disconnected"

    def __init__(self, message: str) -> None:
        super().__init__(self.wire_code, message)


class TooManyEvents(UsherError):
    """More events arrived while a request waited for its answer than the client keeps before the program takes them
    (``MAX_QUEUED_EVENTS`` events or ``MAX_QUEUED_EVENT_BYTES`` of them, docs/python.md); the client's own error.

    usherd sends that many only to a program that never takes its events (``next_event``) or when it is not usherd.
    The client closes the connection, as the daemon drops a subscriber that does not keep up: the events already
    queued stay for ``next_event``, leases held on the connection are gone, and the next request connects again.
    """

    wire_code = "too_many_events"

    def __init__(self, message: str) -> None:
        super().__init__(self.wire_code, message)


class InvalidRequest(UsherError):
    """``invalid_request``: the line is not a JSON object, or ``method``/``id`` are malformed."""

    wire_code = wire.ERROR_INVALID_REQUEST


class UnknownMethod(UsherError):
    """``unknown_method``: no such method (an older daemon than the call expects)."""

    wire_code = wire.ERROR_UNKNOWN_METHOD


class InvalidParams(UsherError):
    """``invalid_params``: a parameter is missing, has the wrong type or is out of range (the message names it)."""

    wire_code = wire.ERROR_INVALID_PARAMS


class LineTooLong(UsherError):
    """``line_too_long``: the request exceeded ``limits.max_line_bytes``; the daemon closed the connection."""

    wire_code = wire.ERROR_LINE_TOO_LONG


class ProviderNotFound(UsherError):
    """``provider_not_found``: no provider with that name."""

    wire_code = wire.ERROR_PROVIDER_NOT_FOUND


class UnsupportedCredentials(UsherError):
    """``unsupported_credentials``: the provider does not accept this credential type."""

    wire_code = wire.ERROR_UNSUPPORTED_CREDENTIALS


class InvalidCredentials(UsherError):
    """``invalid_credentials``: a wrong email or password, an unknown API key, a token that fails a check."""

    wire_code = wire.ERROR_INVALID_CREDENTIALS


class AccountExists(UsherError):
    """``account_exists``: ``register`` of an email that has an account."""

    wire_code = wire.ERROR_ACCOUNT_EXISTS


class RegistrationDisabled(UsherError):
    """``registration_disabled``: ``register`` is turned off for this provider."""

    wire_code = wire.ERROR_REGISTRATION_DISABLED


class UserNotFound(UsherError):
    """``user_not_found``: no such user on the device."""

    wire_code = wire.ERROR_USER_NOT_FOUND


class UserLoggedOut(UsherError):
    """``user_logged_out``: the user is logged out (or its session just ended)."""

    wire_code = wire.ERROR_USER_LOGGED_OUT


class NoActiveUser(UsherError):
    """``no_active_user``: the request needs an active user and nobody is logged in."""

    wire_code = wire.ERROR_NO_ACTIVE_USER


class Conflict(UsherError):
    """``conflict``: ``if_generation`` did not match the current generation; nothing changed."""

    wire_code = wire.ERROR_CONFLICT


class PermissionDenied(UsherError):
    """``permission_denied``: the caller lacks the permission the method needs (the message names it)."""

    wire_code = wire.ERROR_PERMISSION_DENIED


class TooManyConnections(UsherError):
    """``too_many_connections``: the daemon, or this uid, has as many connections as it may."""

    wire_code = wire.ERROR_TOO_MANY_CONNECTIONS


class ApiKeyNotFound(UsherError):
    """``api_key_not_found``: ``delete_api_key`` of a key that does not exist."""

    wire_code = wire.ERROR_API_KEY_NOT_FOUND


class ProviderRejected(UsherError):
    """``provider_rejected``: the provider refused a refresh with an HTTP 4xx and the stored token has expired."""

    wire_code = wire.ERROR_PROVIDER_REJECTED


class ProviderUnavailable(UsherError):
    """``provider_unavailable``: the provider failed transiently; retry later."""

    wire_code = wire.ERROR_PROVIDER_UNAVAILABLE


class InternalError(UsherError):
    """``internal``: an unexpected failure inside the daemon; details are in its log."""

    wire_code = wire.ERROR_INTERNAL


class ProviderError(UsherError):
    """``provider_error``: an OpenID Connect provider answered with an error or with something invalid."""

    wire_code = wire.ERROR_PROVIDER_ERROR


class AccessDenied(UsherError):
    """``access_denied``: the person declined the login at the provider (device flow)."""

    wire_code = wire.ERROR_ACCESS_DENIED


class ExpiredToken(UsherError):
    """``expired_token``: ``login_wait`` of a device code that expired, or of no login under way."""

    wire_code = wire.ERROR_EXPIRED_TOKEN


class ProviderMisconfigured(UsherError):
    """``provider_misconfigured``: the provider refused the daemon's own client configuration."""

    wire_code = wire.ERROR_PROVIDER_MISCONFIGURED


class ShuttingDown(UsherError):
    """``shutting_down``: the daemon is stopping; retry once it is back."""

    wire_code = wire.ERROR_SHUTTING_DOWN


class RateLimited(UsherError):
    """``rate_limited``: too many failed logins; :attr:`retry_after` says in how many seconds to try again."""

    wire_code = wire.ERROR_RATE_LIMITED

    @property
    def retry_after(self) -> Optional[int]:
        """Seconds to wait before the next attempt (``data.retry_after``)."""
        value = self.data.get("retry_after")
        return value if isinstance(value, int) else None


class UserActiveElsewhere(UsherError):
    """``user_active_elsewhere``: the user is active on another seat (:attr:`seat`); pass ``move=True``."""

    wire_code = wire.ERROR_USER_ACTIVE_ELSEWHERE

    @property
    def seat(self) -> Optional[str]:
        """The seat the user is active on (``data.seat``)."""
        value = self.data.get("seat")
        return value if isinstance(value, str) else None


class Inhibited(UsherError):
    """``inhibited``: block leases hold the seat's active user in place; :attr:`holders` lists them."""

    wire_code = wire.ERROR_INHIBITED

    @property
    def holders(self) -> List[Dict[str, Any]]:
        """The leases in the way, as ``list_leases`` shows them (``data.holders``)."""
        value = self.data.get("holders")
        return [holder for holder in value if isinstance(holder, dict)] if isinstance(value, list) else []


class SeatNotFound(UsherError):
    """``seat_not_found``: the request names a seat the daemon does not know."""

    wire_code = wire.ERROR_SEAT_NOT_FOUND


class LeaseNotFound(UsherError):
    """``lease_not_found``: ``release`` of a lease this connection does not hold."""

    wire_code = wire.ERROR_LEASE_NOT_FOUND


class TooManyLeases(UsherError):
    """``too_many_leases``: the caller's uid holds ``leases.max_per_uid`` leases already."""

    wire_code = wire.ERROR_TOO_MANY_LEASES


class AccountUnconfirmed(UsherError):
    """``account_unconfirmed``: the password is right, but the account waits for its confirmation (``confirm_user``)."""

    wire_code = wire.ERROR_ACCOUNT_UNCONFIRMED


class InvalidToken(UsherError):
    """``invalid_token``: a confirmation or reset token that is unknown, used, replaced or expired."""

    wire_code = wire.ERROR_INVALID_TOKEN


class InvalidLink(UsherError):
    """``invalid_link``: anonymous credentials cannot be linked to an existing user; a user's last identity (or one
    it does not have) cannot be unlinked."""

    wire_code = wire.ERROR_INVALID_LINK


class IdentityInUse(UsherError):
    """``identity_in_use``: the identity belongs to another user, who is unchanged."""

    wire_code = wire.ERROR_IDENTITY_IN_USE


class IdentityMismatch(UsherError):
    """``identity_mismatch``: ``login`` or ``login_wait`` with ``expect_email`` authenticated another account; nothing
    was changed, and the attempt counted as a failed login of the expected account."""

    wire_code = wire.ERROR_IDENTITY_MISMATCH


class NotSupported(UsherError):
    """``not_supported``: a provider of the user's identities cannot do this (``delete_user`` without an
    account-deletion endpoint); the message says what can be done instead."""

    wire_code = wire.ERROR_NOT_SUPPORTED


class SeatLocked(UsherError):
    """``seat_locked``: the seat is locked; its active user's tokens are refused until ``unlock`` (:attr:`seat`)."""

    wire_code = wire.ERROR_SEAT_LOCKED

    @property
    def seat(self) -> Optional[str]:
        """The locked seat (``data.seat``)."""
        value = self.data.get("seat")
        return value if isinstance(value, str) else None


class PinIncorrect(UsherError):
    """``pin_incorrect``: ``unlock`` with a wrong PIN; it counted as a failed login of the seat's user."""

    wire_code = wire.ERROR_PIN_INCORRECT


class PinNotSet(UsherError):
    """``pin_not_set``: ``unlock``, but the seat's active user has no PIN (``set_pin``)."""

    wire_code = wire.ERROR_PIN_NOT_SET


#: Every wire code this version knows, and its class.
ERROR_CLASSES: Dict[str, Type[UsherError]] = {
    cls.wire_code: cls
    for cls in (
        InvalidRequest,
        UnknownMethod,
        InvalidParams,
        LineTooLong,
        ProviderNotFound,
        UnsupportedCredentials,
        InvalidCredentials,
        AccountExists,
        RegistrationDisabled,
        UserNotFound,
        UserLoggedOut,
        NoActiveUser,
        Conflict,
        PermissionDenied,
        TooManyConnections,
        ApiKeyNotFound,
        ProviderRejected,
        ProviderUnavailable,
        InternalError,
        ProviderError,
        AccessDenied,
        ExpiredToken,
        ProviderMisconfigured,
        ShuttingDown,
        RateLimited,
        UserActiveElsewhere,
        Inhibited,
        SeatNotFound,
        LeaseNotFound,
        TooManyLeases,
        AccountUnconfirmed,
        InvalidToken,
        InvalidLink,
        IdentityInUse,
        NotSupported,
        IdentityMismatch,
        SeatLocked,
        PinIncorrect,
        PinNotSet,
    )
}


def error_from_wire(error: Any) -> UsherError:
    """The exception for an ``error`` object of a response: its code's class, or :class:`UsherError` for a code
    this version does not know."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return ProtocolError(f"an error without a code: {error!r:.200}")
    code: str = error["code"]
    message = error.get("message")
    data = error.get("data")
    cls = ERROR_CLASSES.get(code, UsherError)
    return cls(code, message if isinstance(message, str) else code, data if isinstance(data, dict) else None)
