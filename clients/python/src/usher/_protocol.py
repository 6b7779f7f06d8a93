"""The protocol, shared by :class:`usher.Client` and :class:`usher.AsyncClient`: framing, requests, answers.

Each method of the protocol is a function here that returns a :class:`Call`: the method's name, its parameters
(None values left out, so the daemon applies its defaults) and the function that turns its result into a typed
object. The two clients only move bytes; what a method means lives in one place. The names and the parameters'
types are the interface file's (``_interface``, generated from varlink/io.usher.Session.varlink): a parameter it
does not declare, or of another type, fails ``mypy --strict``.
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Deque,
    Dict,
    Generic,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    cast,
    get_args,
)

from . import _interface as wire
from .errors import ProtocolError, TooManyEvents, UsherError, error_from_wire
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

T = TypeVar("T")

#: The longest line read from the daemon. ``list_users`` of a device with many users is one long line; this only
#: bounds what a broken peer could make the client buffer.
MAX_LINE_BYTES = 256 * 1024 * 1024

#: How deep a line may nest (objects and arrays, the line's own object included). usherd's answers nest little (a
#: user's ``custom_data`` is at most 8 deep, in a user, in a list, in a result); deeper is not usherd, and would make
#: Python's recursive parser and ``repr`` raise ``RecursionError`` in the program. libusher has the same limit.
MAX_JSON_DEPTH = 32

#: The most events a client keeps that the program has not taken yet (``next_event``): events read while a request
#: waited for its answer. One more ends that request with :class:`usher.TooManyEvents` and closes the connection.
MAX_QUEUED_EVENTS = 4096
#: The same bound in bytes of the events' lines (one event longer than this is still kept: the line limit bounds it).
MAX_QUEUED_EVENT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: the method, its parameters, and how to read its result."""

    method: str
    params: Dict[str, Any]
    parse: Callable[[Any], T]


@dataclass(frozen=True)
class Response:
    """An answer line: ``result`` or ``error``, for the request with this ``id``."""

    id: Any
    result: Any
    error: Optional[UsherError]


def encode_request(request_id: int, method: str, params: Optional[Mapping[str, Any]]) -> bytes:
    """The request as one line of JSON ending in a newline."""
    if not isinstance(method, str) or not method:
        raise ValueError("method must be a non-empty string")
    request: Dict[str, Any] = {"id": request_id, "method": method}
    if params:
        request["params"] = dict(params)
    # ensure_ascii keeps the line free of any byte the daemon could read as a line break.
    return json.dumps(request, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"


def take_message(buffer: bytearray, close: Callable[[], None]) -> Optional[Tuple[Union[Response, Event], int]]:
    """The next answer or event taken from the front of ``buffer`` (what a connection read and did not take yet), with
    the length of its line; None while no whole line is buffered. Blank lines are skipped. For more than
    ``MAX_LINE_BYTES`` without a line break, calls ``close`` (the connection's) and raises ProtocolError."""
    while True:
        end = buffer.find(b"\n")
        if end < 0:
            if len(buffer) > MAX_LINE_BYTES:
                close()
                raise ProtocolError(f"a line from usherd longer than {MAX_LINE_BYTES} bytes")
            return None
        line = bytes(buffer[:end])
        del buffer[: end + 1]
        if line.strip():
            return decode_line(line), len(line) + 1


def decode_line(line: bytes) -> Union[Response, Event]:
    """An answer or an event from one line the daemon sent.

    The errors say what is wrong with the line, never what it holds: an answer may carry a token.
    """
    try:
        message = json.loads(line)
    except RecursionError:
        raise ProtocolError(f"the daemon sent a line nested deeper than {MAX_JSON_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as error:
        where = f" ({error.msg} at byte {error.pos})" if isinstance(error, json.JSONDecodeError) else ""
        raise ProtocolError(f"the daemon sent a line of {len(line)} bytes that is not JSON{where}") from None
    # Most lines hold too few brackets to nest too deep and no escaped NUL: only the others are walked.
    if line.count(b"[") + line.count(b"{") > MAX_JSON_DEPTH or b"\\u0000" in line:
        _check_shape(message)
    if not isinstance(message, dict):
        raise ProtocolError(f"the daemon sent a line that is not an object ({type(message).__name__})")
    if "event" in message:
        return Event.from_wire(message)
    if "error" in message:
        return Response(message.get("id"), None, error_from_wire(message["error"]))
    if "result" in message:
        return Response(message.get("id"), message["result"], None)
    keys = f"{sorted(message)!r:.200}"
    raise ProtocolError(f"the daemon sent an object that is neither an answer nor an event (keys {keys})")


def _check_shape(value: Any) -> None:
    """Raises ProtocolError for nesting deeper than MAX_JSON_DEPTH or a NUL in a string (a key or a value), as
    libusher refuses them: a NUL cuts a string short for any C code it reaches. Iterative, so that checking a deep
    value cannot itself run out of stack."""
    stack: List[Tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\0" in item:
                raise ProtocolError("the daemon sent a string with a NUL character in it")
            continue
        if not isinstance(item, (dict, list)):
            continue
        if depth > MAX_JSON_DEPTH:
            raise ProtocolError(f"the daemon sent a line nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(item, dict):
            for key, child in item.items():
                if "\0" in key:
                    raise ProtocolError("the daemon sent a string with a NUL character in it")
                stack.append((child, depth + 1))
        else:
            stack.extend((child, depth + 1) for child in item)


class EventQueue:
    """Events read while waiting for something else, kept until the program takes them, within the bounds
    ``MAX_QUEUED_EVENTS`` and ``MAX_QUEUED_EVENT_BYTES``."""

    def __init__(self) -> None:
        self._events: Deque[Tuple[Event, int]] = deque()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._events)

    @property
    def full(self) -> bool:
        """Whether the next event would be one too many."""
        return len(self._events) >= MAX_QUEUED_EVENTS or self._bytes >= MAX_QUEUED_EVENT_BYTES

    def append(self, event: Event, size: int) -> None:
        """Queues an event whose line was ``size`` bytes long; raises :class:`usher.TooManyEvents` when full."""
        if self.full:
            raise TooManyEvents(
                f"usherd sent more than {MAX_QUEUED_EVENTS} events or {MAX_QUEUED_EVENT_BYTES >> 20} MiB of them "
                "that were not taken: the connection is closed (take events with next_event)"
            )
        self._events.append((event, size))
        self._bytes += size

    def popleft(self) -> Event:
        event, size = self._events.popleft()
        self._bytes -= size
        return event


#: Errors after which the daemon closes the connection: a client must not send on it again.
CLOSING_ERRORS = frozenset({"line_too_long", "too_many_connections"})


def check_response(response: Response, request_id: int) -> Any:
    """The result of the answer to request ``request_id``, or its error raised."""
    if response.error is not None:
        # An error with a null id is about the connection (too_many_connections, a line the daemon could not read):
        # it is the answer this request gets.
        if response.id is None or response.id == request_id:
            raise response.error
    if response.id != request_id:
        raise ProtocolError(f"an answer to request {response.id!r} while waiting for {request_id}")
    return response.result


def result_of(response: Response, request_id: int, lose_connection: Callable[[], None]) -> Any:
    """:func:`check_response`, calling ``lose_connection`` (the client's) first wherever the connection cannot carry
    another request: after an error the daemon closes it with (``CLOSING_ERRORS``; a moment later, so it may not look
    closed yet), and for an answer to another request (out of step: a late answer would be taken for the next one's)."""
    if response.error is not None and response.error.code in CLOSING_ERRORS:
        lose_connection()
    try:
        return check_response(response, request_id)
    except ProtocolError:
        lose_connection()
        raise


def expect_event(message: Union[Response, Event]) -> Event:
    """What a client reads while no request of its waits: an event; an answer then is nobody's, a ProtocolError."""
    if not isinstance(message, Event):
        raise ProtocolError(f"an answer nobody asked for, to request {message.id!r:.20}")
    return message


def params(values: Mapping[str, object]) -> Dict[str, Any]:
    """The parameters that were given (a method's ``TypedDict`` of ``_interface``): None means "the daemon's default"
    and is left out."""
    return {key: value for key, value in values.items() if value is not None}


def default_who() -> str:
    """The name a lease is taken under when the caller gives none: the program's, as ``usher inhibit`` does."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and name != "-c" else "python"


def _object(result: Any) -> Mapping[str, Any]:
    if not isinstance(result, dict):
        raise ProtocolError(f"a result that is not an object: {result!r:.200}")
    return result


def _list(result: Any, key: str) -> List[Any]:
    value = _object(result).get(key)
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ProtocolError(f"field {key!r} is not a list of objects")
    return value


def _raw(result: Any) -> Any:
    return result


# The methods, in the order of the table in docs/protocol.md.


def hello() -> Call[Hello]:
    return Call(wire.METHOD_HELLO, {}, lambda r: Hello.from_wire(_object(r)))


def providers() -> Call[List[Provider]]:
    return Call(wire.METHOD_PROVIDERS, {}, lambda r: [Provider.from_wire(p) for p in _list(r, "providers")])


def register(email: str, password: str, provider: Optional[str]) -> Call[Registration]:
    return Call(
        wire.METHOD_REGISTER,
        params(wire.RegisterParameters(provider=provider, email=email, password=password)),
        lambda r: Registration.from_wire(_object(r)),
    )


def change_password(email: str, old_password: str, new_password: str, provider: Optional[str]) -> Call[Registration]:
    sent = wire.ChangePasswordParameters(
        provider=provider, email=email, old_password=old_password, new_password=new_password
    )
    return Call(wire.METHOD_CHANGE_PASSWORD, params(sent), lambda r: Registration.from_wire(_object(r)))


def _credentials(credentials: Mapping[str, Any]) -> wire.Credentials:
    """Credentials as given: any mapping with a ``type``. A provider may define a type of its own, whose fields are
    not the interface's: the daemon checks them, as it checks the interface's."""
    return cast(wire.Credentials, dict(credentials))


def login(
    credentials: Mapping[str, Any],
    provider: Optional[str],
    seat: Optional[str],
    move: Optional[bool],
    force: Optional[bool],
) -> Call[Change]:
    if not isinstance(credentials.get("type"), str):
        raise ValueError('credentials need a "type" (email_password, anonymous, api_key, ...)')
    sent = wire.LoginParameters(
        provider=provider, credentials=_credentials(credentials), seat=seat, move=move, force=force
    )
    return Call(wire.METHOD_LOGIN, params(sent), lambda r: Change.from_wire(_object(r)))


def login_begin(type: Optional[str], provider: Optional[str], redirect_uri: Optional[str]) -> Call[LoginStart]:
    # A type outside the interface's enum is the daemon's to refuse (invalid_params), as any other wrong value.
    sent = wire.LoginBeginParameters(provider=provider, type=cast(Any, type), redirect_uri=redirect_uri)
    return Call(wire.METHOD_LOGIN_BEGIN, params(sent), lambda r: LoginStart.from_wire(_object(r)))


def login_wait(login_id: str, seat: Optional[str], move: Optional[bool], force: Optional[bool]) -> Call[Change]:
    sent = wire.LoginWaitParameters(login_id=login_id, seat=seat, move=move, force=force)
    return Call(wire.METHOD_LOGIN_WAIT, params(sent), lambda r: Change.from_wire(_object(r)))


def current_user(seat: Optional[str]) -> Call[Optional[User]]:
    return Call(
        wire.METHOD_CURRENT_USER,
        params(wire.CurrentUserParameters(seat=seat)),
        lambda r: User.optional_from_wire(_object(r).get("user")),
    )


def list_users() -> Call[List[User]]:
    return Call(wire.METHOD_LIST_USERS, {}, lambda r: [User.from_wire(u) for u in _list(r, "users")])


def list_users_page(limit: int, after: Optional[str]) -> Call[UserPage]:
    sent = wire.ListUsersParameters(limit=limit, after=after)
    return Call(wire.METHOD_LIST_USERS, params(sent), lambda r: UserPage.from_wire(_object(r)))


def switch_user(
    user_id: str,
    seat: Optional[str],
    move: Optional[bool],
    force: Optional[bool],
    if_generation: Optional[int],
) -> Call[Change]:
    sent = wire.SwitchUserParameters(user_id=user_id, if_generation=if_generation, seat=seat, move=move, force=force)
    return Call(wire.METHOD_SWITCH_USER, params(sent), lambda r: Change.from_wire(_object(r)))


def logout(user_id: Optional[str], seat: Optional[str], force: Optional[bool]) -> Call[Logout]:
    sent = wire.LogoutParameters(user_id=user_id, seat=seat, force=force)
    return Call(wire.METHOD_LOGOUT, params(sent), lambda r: Logout.from_wire(_object(r)))


def remove_user(user_id: str, force: Optional[bool]) -> Call[Removal]:
    sent = wire.RemoveUserParameters(user_id=user_id, force=force)
    return Call(wire.METHOD_REMOVE_USER, params(sent), lambda r: Removal.from_wire(_object(r)))


def link_credentials(
    credentials: Mapping[str, Any],
    provider: Optional[str],
    user_id: Optional[str],
    seat: Optional[str],
    move: Optional[bool],
    force: Optional[bool],
) -> Call[Change]:
    if not isinstance(credentials.get("type"), str):
        raise ValueError('credentials need a "type" (email_password, api_key, id_token, ...)')
    sent = wire.LinkCredentialsParameters(
        user_id=user_id, seat=seat, provider=provider, credentials=_credentials(credentials), move=move, force=force
    )
    return Call(wire.METHOD_LINK_CREDENTIALS, params(sent), lambda r: Change.from_wire(_object(r)))


def unlink_identity(user_id: str, provider: str, subject: str, force: Optional[bool]) -> Call[Unlinking]:
    sent = wire.UnlinkIdentityParameters(user_id=user_id, provider=provider, subject=subject, force=force)
    return Call(wire.METHOD_UNLINK_IDENTITY, params(sent), lambda r: Unlinking.from_wire(_object(r)))


def delete_user(user_id: str, force: Optional[bool]) -> Call[Deletion]:
    sent = wire.DeleteUserParameters(user_id=user_id, force=force)
    return Call(wire.METHOD_DELETE_USER, params(sent), lambda r: Deletion.from_wire(_object(r)))


def refresh_profile(user_id: Optional[str], seat: Optional[str]) -> Call[Change]:
    sent = wire.RefreshProfileParameters(user_id=user_id, seat=seat)
    return Call(wire.METHOD_REFRESH_PROFILE, params(sent), lambda r: Change.from_wire(_object(r)))


#: The claims ``update_profile`` sets: its parameters other than whose profile it is.
PROFILE_FIELDS = tuple(name for name in wire.UpdateProfileParameters.__annotations__ if name not in ("user_id", "seat"))


def update_profile(changes: Mapping[str, Optional[str]], user_id: Optional[str], seat: Optional[str]) -> Call[Change]:
    sent = params(wire.UpdateProfileParameters(user_id=user_id, seat=seat))
    for name, value in changes.items():
        if name not in PROFILE_FIELDS:
            claims = f"{', '.join(PROFILE_FIELDS[:-1])} and {PROFILE_FIELDS[-1]}"
            raise ValueError(f"update_profile sets {claims}, not {name!r}")
        sent[name] = value  # None removes the claim (JSON null)
    return Call(wire.METHOD_UPDATE_PROFILE, sent, lambda r: Change.from_wire(_object(r)))


def reset_password(email: str, new_password: str, provider: Optional[str]) -> Call[PasswordReset]:
    sent = wire.ResetPasswordParameters(provider=provider, email=email, new_password=new_password)
    return Call(wire.METHOD_RESET_PASSWORD, params(sent), lambda r: PasswordReset.from_wire(_object(r)))


def confirm_user(token: str, provider: Optional[str]) -> Call[Registration]:
    sent = wire.ConfirmUserParameters(provider=provider, token=token)
    return Call(wire.METHOD_CONFIRM_USER, params(sent), lambda r: Registration.from_wire(_object(r)))


def _provider_of(result: Any) -> str:
    provider = _object(result).get("provider")
    if not isinstance(provider, str):
        raise ProtocolError(f"an answer without a provider: {result!r:.200}")
    return provider


def resend_confirmation(email: str, provider: Optional[str]) -> Call[str]:
    sent = wire.ResendConfirmationParameters(provider=provider, email=email)
    return Call(wire.METHOD_RESEND_CONFIRMATION, params(sent), _provider_of)


def request_password_reset(email: str, provider: Optional[str]) -> Call[str]:
    sent = wire.RequestPasswordResetParameters(provider=provider, email=email)
    return Call(wire.METHOD_REQUEST_PASSWORD_RESET, params(sent), _provider_of)


def complete_password_reset(token: str, new_password: str, provider: Optional[str]) -> Call[PasswordReset]:
    sent = wire.CompletePasswordResetParameters(provider=provider, token=token, new_password=new_password)
    return Call(wire.METHOD_COMPLETE_PASSWORD_RESET, params(sent), lambda r: PasswordReset.from_wire(_object(r)))


def access_token(
    min_valid: Optional[int],
    user_id: Optional[str],
    seat: Optional[str],
    audience: Optional[str] = None,
    scopes: Optional[Sequence[str]] = None,
) -> Call[Token]:
    sent = wire.AccessTokenParameters(
        user_id=user_id,
        seat=seat,
        min_valid=min_valid,
        audience=audience,
        scopes=None if scopes is None else list(scopes),
    )
    return Call(wire.METHOD_ACCESS_TOKEN, params(sent), lambda r: Token.from_wire(_object(r)))


def dpop_proof(
    htm: str,
    htu: str,
    nonce: Optional[str],
    user_id: Optional[str],
    seat: Optional[str],
    audience: Optional[str] = None,
    scopes: Optional[Sequence[str]] = None,
) -> Call[DPoPProof]:
    sent = wire.DpopProofParameters(
        htm=htm,
        htu=htu,
        nonce=nonce,
        user_id=user_id,
        seat=seat,
        audience=audience,
        scopes=None if scopes is None else list(scopes),
    )
    return Call(wire.METHOD_DPOP_PROOF, params(sent), lambda r: DPoPProof.from_wire(_object(r)))


def refresh(user_id: Optional[str], seat: Optional[str]) -> Call[Refresh]:
    sent = wire.RefreshParameters(user_id=user_id, seat=seat)
    return Call(wire.METHOD_REFRESH, params(sent), lambda r: Refresh.from_wire(_object(r)))


def create_api_key(name: str, user_id: Optional[str]) -> Call[ApiKey]:
    sent = wire.CreateApiKeyParameters(name=name, user_id=user_id)
    return Call(wire.METHOD_CREATE_API_KEY, params(sent), lambda r: ApiKey.from_wire(_object(r)))


def list_api_keys(user_id: Optional[str]) -> Call[List[ApiKeyInfo]]:
    return Call(
        wire.METHOD_LIST_API_KEYS,
        params(wire.ListApiKeysParameters(user_id=user_id)),
        lambda r: [ApiKeyInfo.from_wire(k) for k in _list(r, "api_keys")],
    )


def delete_api_key(name: str, user_id: Optional[str]) -> Call[None]:
    sent = wire.DeleteApiKeyParameters(name=name, user_id=user_id)
    return Call(wire.METHOD_DELETE_API_KEY, params(sent), lambda r: None)


def jwks() -> Call[List[Dict[str, Any]]]:
    return Call(wire.METHOD_JWKS, {}, lambda r: [dict(k) for k in _list(r, "keys")])


def subscribe(events: Optional[Sequence[str]], seats: Optional[Sequence[str]]) -> Call[Any]:
    # Any event name: a newer daemon may send events this version does not know, and the daemon refuses unknown names.
    names = None if events is None else cast(List[wire.EventName], list(events))
    sent = wire.SubscribeParameters(events=names, seats=None if seats is None else list(seats))
    return Call(wire.METHOD_SUBSCRIBE, params(sent), _raw)


def status() -> Call[Status]:
    return Call(wire.METHOD_STATUS, {}, lambda r: Status.from_wire(_object(r)))


def list_seats() -> Call[Seats]:
    return Call(wire.METHOD_LIST_SEATS, {}, lambda r: Seats.from_wire(_object(r)))


#: The modes of a lease.
LEASE_MODES: Tuple[wire.InhibitParametersMode, ...] = get_args(wire.InhibitParametersMode)


def inhibit(why: str, who: Optional[str], mode: str, seat: Optional[str]) -> Call[Any]:
    if mode not in LEASE_MODES:
        raise ValueError('mode must be "block" or "delay"')
    sent = wire.InhibitParameters(seat=seat, mode=mode, who=who or default_who(), why=why)
    return Call(wire.METHOD_INHIBIT, params(sent), _object)


def lock_seat(seat: Optional[str]) -> Call[SeatLock]:
    sent = wire.LockSeatParameters(seat=seat)
    return Call(wire.METHOD_LOCK_SEAT, params(sent), lambda r: SeatLock.from_wire(_object(r)))


def unlock(pin: str, seat: Optional[str]) -> Call[SeatLock]:
    sent = wire.UnlockParameters(seat=seat, pin=pin)
    return Call(wire.METHOD_UNLOCK, params(sent), lambda r: SeatLock.from_wire(_object(r)))


def set_pin(pin: str, user_id: Optional[str]) -> Call[str]:
    return Call(wire.METHOD_SET_PIN, params(wire.SetPinParameters(pin=pin, user_id=user_id)), _user_id_of)


def _user_id_of(result: Any) -> str:
    user_id = _object(result).get("user_id")
    if not isinstance(user_id, str):
        raise ProtocolError(f"an answer without a user_id: {result!r:.200}")
    return user_id


def release(lease: str) -> Call[None]:
    return Call(wire.METHOD_RELEASE, params(wire.ReleaseParameters(lease=lease)), lambda r: None)


def list_leases() -> Call[List[LeaseInfo]]:
    return Call(wire.METHOD_LIST_LEASES, {}, lambda r: [LeaseInfo.from_wire(lease) for lease in _list(r, "leases")])


def subscribed(result: Any) -> Tuple[int, List[str]]:
    """The generation and event names of a ``subscribe`` answer."""
    obj = _object(result)
    generation = obj.get("generation")
    names = obj.get("subscribed")
    if not isinstance(generation, int) or not isinstance(names, list):
        raise ProtocolError(f"a subscribe answer without generation or subscribed: {result!r:.200}")
    return generation, [name for name in names if isinstance(name, str)]


def lease_parts(result: Any) -> Tuple[str, str]:
    """The lease id and seat of an ``inhibit`` answer."""
    obj = _object(result)
    lease, seat = obj.get("lease"), obj.get("seat")
    if not isinstance(lease, str) or not isinstance(seat, str):
        raise ProtocolError(f"an inhibit answer without lease or seat: {result!r:.200}")
    return lease, seat
