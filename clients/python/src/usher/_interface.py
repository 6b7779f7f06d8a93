"""The interface io.usher.Session, as Python types: generated from varlink/io.usher.Session.varlink
by tools/generate_interface.py. Do not edit: write it again with ``python3 tools/generate_interface.py``
(tests/test_interface.py fails while it differs from what the interface file gives).

usherd: who is using this device, and a valid token for them.

Every method is the Varlink form of the newline-delimited JSON method of the same name in snake_case (CurrentUser is
current_user), with the same parameters, results, permissions, audit and limits: see docs/protocol.md and
docs/varlink.md. Times are RFC 3339 UTC strings with milliseconds.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict

INTERFACE = "io.usher.Session"

# The methods' names on the socket: the interface's in snake_case.
METHOD_HELLO = "hello"
METHOD_PROVIDERS = "providers"
METHOD_REGISTER = "register"
METHOD_CHANGE_PASSWORD = "change_password"
METHOD_RESET_PASSWORD = "reset_password"
METHOD_CONFIRM_USER = "confirm_user"
METHOD_RESEND_CONFIRMATION = "resend_confirmation"
METHOD_REQUEST_PASSWORD_RESET = "request_password_reset"
METHOD_COMPLETE_PASSWORD_RESET = "complete_password_reset"
METHOD_LOGIN = "login"
METHOD_LOGIN_BEGIN = "login_begin"
METHOD_LOGIN_WAIT = "login_wait"
METHOD_CURRENT_USER = "current_user"
METHOD_LIST_IDENTITIES = "list_identities"
METHOD_LIST_USERS = "list_users"
METHOD_SWITCH_USER = "switch_user"
METHOD_LOGOUT = "logout"
METHOD_REMOVE_USER = "remove_user"
METHOD_LINK_CREDENTIALS = "link_credentials"
METHOD_UNLINK_IDENTITY = "unlink_identity"
METHOD_DELETE_USER = "delete_user"
METHOD_ACCESS_TOKEN = "access_token"
METHOD_REFRESH = "refresh"
METHOD_DPOP_PROOF = "dpop_proof"
METHOD_REFRESH_PROFILE = "refresh_profile"
METHOD_UPDATE_PROFILE = "update_profile"
METHOD_CREATE_API_KEY = "create_api_key"
METHOD_LIST_API_KEYS = "list_api_keys"
METHOD_DELETE_API_KEY = "delete_api_key"
METHOD_JWKS = "jwks"
METHOD_SUBSCRIBE = "subscribe"
METHOD_STATUS = "status"
METHOD_LIST_SEATS = "list_seats"
METHOD_INHIBIT = "inhibit"
METHOD_RELEASE = "release"
METHOD_LIST_LEASES = "list_leases"
METHOD_LOCK_SEAT = "lock_seat"
METHOD_UNLOCK = "unlock"
METHOD_SET_PIN = "set_pin"
METHOD_OPEN_SESSION = "open_session"
METHOD_CLOSE_SESSION = "close_session"
METHOD_USER_STATUS = "user_status"

#: Every method, in the interface file's order.
METHODS: Tuple[str, ...] = (
    METHOD_HELLO,
    METHOD_PROVIDERS,
    METHOD_REGISTER,
    METHOD_CHANGE_PASSWORD,
    METHOD_RESET_PASSWORD,
    METHOD_CONFIRM_USER,
    METHOD_RESEND_CONFIRMATION,
    METHOD_REQUEST_PASSWORD_RESET,
    METHOD_COMPLETE_PASSWORD_RESET,
    METHOD_LOGIN,
    METHOD_LOGIN_BEGIN,
    METHOD_LOGIN_WAIT,
    METHOD_CURRENT_USER,
    METHOD_LIST_IDENTITIES,
    METHOD_LIST_USERS,
    METHOD_SWITCH_USER,
    METHOD_LOGOUT,
    METHOD_REMOVE_USER,
    METHOD_LINK_CREDENTIALS,
    METHOD_UNLINK_IDENTITY,
    METHOD_DELETE_USER,
    METHOD_ACCESS_TOKEN,
    METHOD_REFRESH,
    METHOD_DPOP_PROOF,
    METHOD_REFRESH_PROFILE,
    METHOD_UPDATE_PROFILE,
    METHOD_CREATE_API_KEY,
    METHOD_LIST_API_KEYS,
    METHOD_DELETE_API_KEY,
    METHOD_JWKS,
    METHOD_SUBSCRIBE,
    METHOD_STATUS,
    METHOD_LIST_SEATS,
    METHOD_INHIBIT,
    METHOD_RELEASE,
    METHOD_LIST_LEASES,
    METHOD_LOCK_SEAT,
    METHOD_UNLOCK,
    METHOD_SET_PIN,
    METHOD_OPEN_SESSION,
    METHOD_CLOSE_SESSION,
    METHOD_USER_STATUS,
)

# The error codes: the interface's errors in snake_case, then the codes of the newline-delimited JSON protocol alone (on
# Varlink: invalid_params is org.varlink.service.InvalidParameter, unknown_method is
# org.varlink.service.MethodNotFound).
ERROR_INVALID_REQUEST = "invalid_request"
ERROR_LINE_TOO_LONG = "line_too_long"
ERROR_PROVIDER_NOT_FOUND = "provider_not_found"
ERROR_UNSUPPORTED_CREDENTIALS = "unsupported_credentials"
ERROR_INVALID_CREDENTIALS = "invalid_credentials"
ERROR_ACCOUNT_EXISTS = "account_exists"
ERROR_REGISTRATION_DISABLED = "registration_disabled"
ERROR_USER_NOT_FOUND = "user_not_found"
ERROR_USER_LOGGED_OUT = "user_logged_out"
ERROR_NO_ACTIVE_USER = "no_active_user"
ERROR_CONFLICT = "conflict"
ERROR_PERMISSION_DENIED = "permission_denied"
ERROR_API_KEY_NOT_FOUND = "api_key_not_found"
ERROR_PROVIDER_UNAVAILABLE = "provider_unavailable"
ERROR_TOO_MANY_CONNECTIONS = "too_many_connections"
ERROR_INTERNAL = "internal"
ERROR_PROVIDER_ERROR = "provider_error"
ERROR_ACCESS_DENIED = "access_denied"
ERROR_EXPIRED_TOKEN = "expired_token"
ERROR_PROVIDER_MISCONFIGURED = "provider_misconfigured"
ERROR_RATE_LIMITED = "rate_limited"
ERROR_SHUTTING_DOWN = "shutting_down"
ERROR_USER_ACTIVE_ELSEWHERE = "user_active_elsewhere"
ERROR_INHIBITED = "inhibited"
ERROR_SEAT_NOT_FOUND = "seat_not_found"
ERROR_LEASE_NOT_FOUND = "lease_not_found"
ERROR_TOO_MANY_LEASES = "too_many_leases"
ERROR_PROVIDER_REJECTED = "provider_rejected"
ERROR_ACCOUNT_UNCONFIRMED = "account_unconfirmed"
ERROR_INVALID_TOKEN = "invalid_token"
ERROR_INVALID_LINK = "invalid_link"
ERROR_IDENTITY_IN_USE = "identity_in_use"
ERROR_NOT_SUPPORTED = "not_supported"
ERROR_SEAT_LOCKED = "seat_locked"
ERROR_PIN_INCORRECT = "pin_incorrect"
ERROR_PIN_NOT_SET = "pin_not_set"
ERROR_IDENTITY_MISMATCH = "identity_mismatch"
ERROR_INVALID_PARAMS = "invalid_params"
ERROR_UNKNOWN_METHOD = "unknown_method"

#: Every error code.
ERROR_CODES: Tuple[str, ...] = (
    ERROR_INVALID_REQUEST,
    ERROR_LINE_TOO_LONG,
    ERROR_PROVIDER_NOT_FOUND,
    ERROR_UNSUPPORTED_CREDENTIALS,
    ERROR_INVALID_CREDENTIALS,
    ERROR_ACCOUNT_EXISTS,
    ERROR_REGISTRATION_DISABLED,
    ERROR_USER_NOT_FOUND,
    ERROR_USER_LOGGED_OUT,
    ERROR_NO_ACTIVE_USER,
    ERROR_CONFLICT,
    ERROR_PERMISSION_DENIED,
    ERROR_API_KEY_NOT_FOUND,
    ERROR_PROVIDER_UNAVAILABLE,
    ERROR_TOO_MANY_CONNECTIONS,
    ERROR_INTERNAL,
    ERROR_PROVIDER_ERROR,
    ERROR_ACCESS_DENIED,
    ERROR_EXPIRED_TOKEN,
    ERROR_PROVIDER_MISCONFIGURED,
    ERROR_RATE_LIMITED,
    ERROR_SHUTTING_DOWN,
    ERROR_USER_ACTIVE_ELSEWHERE,
    ERROR_INHIBITED,
    ERROR_SEAT_NOT_FOUND,
    ERROR_LEASE_NOT_FOUND,
    ERROR_TOO_MANY_LEASES,
    ERROR_PROVIDER_REJECTED,
    ERROR_ACCOUNT_UNCONFIRMED,
    ERROR_INVALID_TOKEN,
    ERROR_INVALID_LINK,
    ERROR_IDENTITY_IN_USE,
    ERROR_NOT_SUPPORTED,
    ERROR_SEAT_LOCKED,
    ERROR_PIN_INCORRECT,
    ERROR_PIN_NOT_SET,
    ERROR_IDENTITY_MISMATCH,
    ERROR_INVALID_PARAMS,
    ERROR_UNKNOWN_METHOD,
)

UserState = Literal["logged_in", "logged_out", "removed"]

UserTokenState = Literal["fresh", "refreshing", "retrying", "none"]

LeaseMode = Literal["block", "delay"]

EventName = Literal[
    "user_logged_in",
    "active_user_changed",
    "user_logged_out",
    "user_removed",
    "user_changed",
    "token_refreshed",
    "refresh_failed",
    "daemon_stopping",
    "seat_added",
    "seat_removed",
    "switch_pending",
    "lease_broken",
    "seat_locked",
    "seat_unlocked",
]

LoginBeginParametersType = Literal["authorization_code", "device_code"]

LoginBeginResultType = Literal["authorization_code", "device_code"]

InhibitParametersMode = Literal["block", "delay"]

CloseSessionParametersOnClose = Literal["keep", "logout", "remove"]

CloseSessionResultOnClose = Literal["keep", "logout", "remove"]


class Identity(TypedDict):
    """One identity of a user: the provider that vouches for it, the credential type and the subject there."""
    provider: str
    #: The credential type that proves it (`email_password`, `anonymous`, `authorization_code`, ...).
    kind: str
    #: Stable for one account at the provider.
    subject: str


class Profile(TypedDict, total=False):
    """The standard OpenID Connect claims the provider gave for the user."""
    name: Optional[str]
    given_name: Optional[str]
    family_name: Optional[str]
    middle_name: Optional[str]
    nickname: Optional[str]
    preferred_username: Optional[str]
    profile: Optional[str]
    picture: Optional[str]
    website: Optional[str]
    email: Optional[str]
    email_verified: Optional[bool]
    gender: Optional[str]
    birthdate: Optional[str]
    zoneinfo: Optional[str]
    locale: Optional[str]
    phone_number: Optional[str]
    phone_number_verified: Optional[bool]
    updated_at: Optional[int]


class _UserRequired(TypedDict):
    id: str
    identities: List[Identity]
    provider: str
    kind: str
    state: UserState
    active: bool
    created_at: str
    token_state: UserTokenState
    profile: Profile
    #: The claims the provider's custom_claims names, as the provider gave them: any JSON.
    custom_data: Dict[str, Any]


class User(_UserRequired, total=False):
    """A user of the device, logged in or out."""
    email: Optional[str]
    name: Optional[str]
    last_login_at: Optional[str]
    last_active_at: Optional[str]
    access_token_expires_at: Optional[str]
    refresh_token_expires_at: Optional[str]
    next_refresh_at: Optional[str]
    retry_at: Optional[str]
    last_refresh_error: Optional[str]


class _CredentialsRequired(TypedDict):
    type: str


class Credentials(_CredentialsRequired, total=False):
    """What logs in: "type" says which, and the fields of that type are given (docs/protocol.md lists them)."""
    email: Optional[str]
    password: Optional[str]
    key: Optional[str]
    token: Optional[str]
    issuer: Optional[str]
    nonce: Optional[str]
    #: The authentication function's input: any JSON object.
    payload: Optional[Dict[str, Any]]
    code: Optional[str]
    code_verifier: Optional[str]
    redirect_uri: Optional[str]
    state: Optional[str]
    username: Optional[str]
    subject_token: Optional[str]
    subject_token_type: Optional[str]


class Provider(TypedDict):
    name: str
    type: str
    credentials: List[str]
    #: Whether requests that name no provider use this one.
    default: bool


class Peer(TypedDict):
    uid: int
    gid: int
    pid: int


class _ProgramRequired(TypedDict):
    #: Whether the process was pinned (pidfd) and its executable read: only then can a rule with `executable`,
    #: `executable_sha256`, `unit` or `user_unit` match it.
    identified: bool


class Program(_ProgramRequired, total=False):
    """The program usherd identified at the other end of the connection when it accepted it (docs/least-privilege.md).
    """
    #: `/proc/PID/exe` at that time; nil when it could not be read.
    executable: Optional[str]
    #: The SHA-256 of the executable's file (lowercase hex): only present when some rule in force asks for one.
    executable_sha256: Optional[str]
    #: The systemd (system) unit the process belongs to (`sd_pid_get_unit`), e.g. `kiosk-app.service`, or
    #: `user@1000.service` for a process of a user's service manager; nil outside systemd's units.
    unit: Optional[str]
    #: The unit of the user's service manager the process belongs to (`sd_pid_get_user_unit`), e.g. `app-firefox.scope`;
    #: nil when it belongs to none.
    user_unit: Optional[str]


class _SeatRequired(TypedDict):
    name: str
    #: `"logind"` (systemd-logind knows it) or `"config"` (declared in `[seats] names`, or the default seat).
    source: str
    #: Whether the seat is there now: a logind seat that went away keeps its state and is not present.
    present: bool


class Seat(_SeatRequired, total=False):
    #: The seat's active user, or null.
    user_id: Optional[str]


class _LeaseRequired(TypedDict):
    lease: str
    seat: str
    mode: LeaseMode
    who: str
    why: str
    pid: int
    uid: int
    since: str


class Lease(_LeaseRequired, total=False):
    #: The holder's executable, when it could be read.
    executable: Optional[str]


class ApiKey(TypedDict):
    name: str
    created_at: str


class _JwkRequired(TypedDict):
    kty: str


class Jwk(_JwkRequired, total=False):
    kid: Optional[str]
    use: Optional[str]
    alg: Optional[str]
    crv: Optional[str]
    x: Optional[str]
    y: Optional[str]
    n: Optional[str]
    e: Optional[str]


class UserCounts(TypedDict):
    logged_in: int
    logged_out: int


class _RefreshCountersRequired(TypedDict):
    scheduled: int
    succeeded: int
    failed: int


class RefreshCounters(_RefreshCountersRequired, total=False):
    next_at: Optional[str]


class EventData(TypedDict, total=False):
    """What an event says; which fields are set depends on the event (docs/protocol.md, Events)."""
    user: Optional[User]
    user_id: Optional[str]
    previous_user_id: Optional[str]
    reason: Optional[str]
    seat: Optional[str]
    source: Optional[str]
    lease: Optional[str]
    deadline: Optional[str]
    access_token_expires_at: Optional[str]
    code: Optional[str]
    message: Optional[str]
    retry_at: Optional[str]
    by: Optional[str]


class HelloParameters(TypedDict):
    """The parameters of ``hello``.

    Who the daemon sees at the other end of the connection, and what it may do.
    """


class _HelloResultRequired(TypedDict):
    protocol: int
    server: str
    version: str
    peer: Peer
    permissions: List[str]


class HelloResult(_HelloResultRequired, total=False):
    """The result of ``hello``."""
    #: The program usherd identified at the other end of this connection, when it accepted it; nil from a daemon older
    #: than program identification.
    program: Optional[Program]


class ProvidersParameters(TypedDict):
    """The parameters of ``providers``.

    The configured identity providers and the credential types each accepts.
    """


class ProvidersResult(TypedDict):
    """The result of ``providers``."""
    providers: List[Provider]


class _RegisterParametersRequired(TypedDict):
    email: str
    password: str


class RegisterParameters(_RegisterParametersRequired, total=False):
    """The parameters of ``register``.

    Creates an email/password account at a provider that supports registration.
    """
    provider: Optional[str]


class _RegisterResultRequired(TypedDict):
    provider: str
    email: str


class RegisterResult(_RegisterResultRequired, total=False):
    """The result of ``register``."""
    #: `false` when the account waits for its confirmation (`confirm = "hook"`: the hook has the token); absent when the
    #: provider confirms accounts itself.
    confirmed: Optional[bool]


class _ChangePasswordParametersRequired(TypedDict):
    email: str
    old_password: str
    new_password: str


class ChangePasswordParameters(_ChangePasswordParametersRequired, total=False):
    """The parameters of ``change_password``.

    Sets a new password for an email/password account, given its current one.
    """
    provider: Optional[str]


class ChangePasswordResult(TypedDict):
    """The result of ``change_password``."""
    provider: str
    email: str


class _ResetPasswordParametersRequired(TypedDict):
    email: str
    new_password: str


class ResetPasswordParameters(_ResetPasswordParametersRequired, total=False):
    """The parameters of ``reset_password``.

    An administrator sets a new password for an email/password account; every session of that account on the device
    ends (`user_logged_out` with reason `password_reset`).
    """
    provider: Optional[str]


class ResetPasswordResult(TypedDict):
    """The result of ``reset_password``."""
    provider: str
    email: str
    #: The users logged out by the reset (`user_logged_out` with reason `password_reset`).
    logged_out: List[str]
    generation: int


class _ConfirmUserParametersRequired(TypedDict):
    token: str


class ConfirmUserParameters(_ConfirmUserParametersRequired, total=False):
    """The parameters of ``confirm_user``.

    Confirms an email/password account with the token the confirmation hook delivered.
    """
    provider: Optional[str]


class ConfirmUserResult(TypedDict):
    """The result of ``confirm_user``."""
    provider: str
    email: str


class _ResendConfirmationParametersRequired(TypedDict):
    email: str


class ResendConfirmationParameters(_ResendConfirmationParametersRequired, total=False):
    """The parameters of ``resend_confirmation``.

    Runs the confirmation hook again for an unconfirmed account, with a new token (the old one stops working). The
    answer is the same whether or not the email has an account.
    """
    provider: Optional[str]


class ResendConfirmationResult(TypedDict):
    """The result of ``resend_confirmation``."""
    provider: str


class _RequestPasswordResetParametersRequired(TypedDict):
    email: str


class RequestPasswordResetParameters(_RequestPasswordResetParametersRequired, total=False):
    """The parameters of ``request_password_reset``.

    Runs the reset hook with a new token for the account with this email, if there is one. The answer is the same
    whether or not the email has an account.
    """
    provider: Optional[str]


class RequestPasswordResetResult(TypedDict):
    """The result of ``request_password_reset``."""
    provider: str


class _CompletePasswordResetParametersRequired(TypedDict):
    token: str
    new_password: str


class CompletePasswordResetParameters(_CompletePasswordResetParametersRequired, total=False):
    """The parameters of ``complete_password_reset``.

    Sets a new password with the token the reset hook delivered (`request_password_reset`); every session of the
    account on the device ends, as with `reset_password`.
    """
    provider: Optional[str]


class CompletePasswordResetResult(TypedDict):
    """The result of ``complete_password_reset``."""
    provider: str
    email: str
    logged_out: List[str]
    generation: int


class _LoginParametersRequired(TypedDict):
    #: `{"type": "email_password", "email", "password"}`, `{"type": "anonymous"}`, `{"type": "api_key", "key"}`, or a
    #: type another provider defines. Holds secrets: never logged.
    credentials: Credentials


class LoginParameters(_LoginParametersRequired, total=False):
    """The parameters of ``login``.

    Logs in and makes the user the seat's active user. expect_email: the account must have this email, else
    IdentityMismatch; activate false: logged in, not made active.
    """
    provider: Optional[str]
    #: The seat the user becomes active on. Default: the caller's seat (logind), else the default seat.
    seat: Optional[str]
    #: Whether a user active on another seat moves here (else `user_active_elsewhere`).
    move: Optional[bool]
    #: Whether a block lease on the seat is broken (needs `manage`; audited as forced).
    force: Optional[bool]
    #: The email the authenticated account must have (case-insensitive); another account is refused with
    #: `identity_mismatch` before anything is committed (`pam_usher`: the PAM user's account).
    expect_email: Optional[str]
    #: Whether the user becomes the seat's active user (default true); false logs it in without changing who is active
    #: (PAM's auth stage: `su bob` in alice's session does not hand the seat to bob).
    activate: Optional[bool]


class _LoginResultRequired(TypedDict):
    generation: int
    user: User


class LoginResult(_LoginResultRequired, total=False):
    """The result of ``login``."""
    seat: Optional[str]


class LoginBeginParameters(TypedDict, total=False):
    """The parameters of ``login_begin``.

    Starts a browser (authorization_code) or device (device_code) login at an OpenID Connect provider.
    """
    provider: Optional[str]
    type: Optional[LoginBeginParametersType]
    redirect_uri: Optional[str]


class _LoginBeginResultRequired(TypedDict):
    #: `authorization_code` or `device_code`.
    type: LoginBeginResultType
    #: `pending`: the login is under way.
    status: str
    #: The provider's name.
    provider: str
    #: When the login can no longer complete.
    expires_at: str


class LoginBeginResult(_LoginBeginResultRequired, total=False):
    """The result of ``login_begin``."""
    #: `device_code`: the id to pass to `login_wait`.
    login_id: Optional[str]
    #: `authorization_code`: the URL to open in a browser.
    authorize_url: Optional[str]
    #: `authorization_code`: the redirect must carry exactly this value.
    state: Optional[str]
    #: `authorization_code`: the PKCE verifier to send back with the code.
    code_verifier: Optional[str]
    #: `authorization_code`: where the browser is sent back to.
    redirect_uri: Optional[str]
    #: `device_code`: where the person enters `user_code`.
    verification_uri: Optional[str]
    #: `device_code`: `verification_uri` with the code filled in, when the provider gives one.
    verification_uri_complete: Optional[str]
    #: `device_code`: the code the person types.
    user_code: Optional[str]


class _LoginWaitParametersRequired(TypedDict):
    login_id: str


class LoginWaitParameters(_LoginWaitParametersRequired, total=False):
    """The parameters of ``login_wait``.

    Waits for a login started with `login_begin` (device flow) to finish, and returns the user, who is then logged in
    and active, as after `login`. Fails with `access_denied` when the person declined, `expired_token` when the code
    expired first.
    """
    #: The seat the user becomes active on. Default: the caller's seat (logind), else the default seat.
    seat: Optional[str]
    #: Whether a user active on another seat moves here (else `user_active_elsewhere`).
    move: Optional[bool]
    #: Whether a block lease on the seat is broken (needs `manage`; audited as forced).
    force: Optional[bool]
    #: Links the identity to this logged-in user (as `link_credentials` does) instead of logging in.
    link_to: Optional[str]
    #: As `login`'s: the email the account must have, else `identity_mismatch` (counted as a failed login of it).
    expect_email: Optional[str]
    #: As `login`'s: false logs the user in without making it active.
    activate: Optional[bool]


class _LoginWaitResultRequired(TypedDict):
    generation: int
    user: User


class LoginWaitResult(_LoginWaitResultRequired, total=False):
    """The result of ``login_wait``."""
    seat: Optional[str]


class CurrentUserParameters(TypedDict, total=False):
    """The parameters of ``current_user``.

    The seat's active user; user is null when nobody is logged in there.
    """
    seat: Optional[str]


class _CurrentUserResultRequired(TypedDict):
    generation: int
    locked: bool


class CurrentUserResult(_CurrentUserResultRequired, total=False):
    """The result of ``current_user``."""
    seat: Optional[str]
    user: Optional[User]


class ListIdentitiesParameters(TypedDict, total=False):
    """The parameters of ``list_identities``.

    The identities of a user (default: the seat's active user): the accounts that prove who it is, the session's
    first.
    """
    user_id: Optional[str]
    seat: Optional[str]


class ListIdentitiesResult(TypedDict):
    """The result of ``list_identities``."""
    user_id: str
    identities: List[Identity]


class ListUsersParameters(TypedDict, total=False):
    """The parameters of ``list_users``.

    Every user, or a page of them with limit and after (docs/protocol.md, Paging).
    """
    limit: Optional[int]
    after: Optional[str]


class _ListUsersResultRequired(TypedDict):
    generation: int
    users: List[User]


class ListUsersResult(_ListUsersResultRequired, total=False):
    """The result of ``list_users``."""
    next: Optional[str]


class _SwitchUserParametersRequired(TypedDict):
    user_id: str


class SwitchUserParameters(_SwitchUserParametersRequired, total=False):
    """The parameters of ``switch_user``.

    Makes another logged-in user active.
    """
    if_generation: Optional[int]
    seat: Optional[str]
    move: Optional[bool]
    force: Optional[bool]


class _SwitchUserResultRequired(TypedDict):
    generation: int
    user: User


class SwitchUserResult(_SwitchUserResultRequired, total=False):
    """The result of ``switch_user``."""
    seat: Optional[str]


class LogoutParameters(TypedDict, total=False):
    """The parameters of ``logout``.

    Discards a user's tokens (revoking them at the provider) and keeps the user, logged out. An anonymous user is
    removed instead.
    """
    user_id: Optional[str]
    seat: Optional[str]
    force: Optional[bool]


class _LogoutResultRequired(TypedDict):
    generation: int
    user: User
    #: Whether the provider confirmed the revocation of the session's tokens (false when it was unreachable or the user
    #: was already logged out).
    revoked: bool


class LogoutResult(_LogoutResultRequired, total=False):
    """The result of ``logout``."""
    #: The seat the user was active on until this logout (absent when none, and on devices that do not name seats).
    seat: Optional[str]


class _RemoveUserParametersRequired(TypedDict):
    user_id: str


class RemoveUserParameters(_RemoveUserParametersRequired, total=False):
    """The parameters of ``remove_user``.

    Logs the user out if needed and deletes everything about it from the device.
    """
    force: Optional[bool]


class RemoveUserResult(TypedDict):
    """The result of ``remove_user``."""
    generation: int
    user_id: str


class _LinkCredentialsParametersRequired(TypedDict):
    #: As `login` takes them (never `anonymous`). Holds secrets: never logged.
    credentials: Credentials


class LinkCredentialsParameters(_LinkCredentialsParametersRequired, total=False):
    """The parameters of ``link_credentials``.

    Authenticates credentials and adds their identity to a logged-in user (default: the seat's active user), whose
    session then belongs to that identity; the user becomes the seat's active user.
    """
    #: The user to link to. Default: the active user of `seat`.
    user_id: Optional[str]
    seat: Optional[str]
    provider: Optional[str]
    #: Whether a user active on another seat moves to `seat` (else `user_active_elsewhere`).
    move: Optional[bool]
    #: Whether a block lease on the seat is broken (needs `manage`; audited as forced).
    force: Optional[bool]


class _LinkCredentialsResultRequired(TypedDict):
    generation: int
    user: User


class LinkCredentialsResult(_LinkCredentialsResultRequired, total=False):
    """The result of ``link_credentials``."""
    seat: Optional[str]


class _UnlinkIdentityParametersRequired(TypedDict):
    user_id: str
    provider: str
    subject: str


class UnlinkIdentityParameters(_UnlinkIdentityParametersRequired, total=False):
    """The parameters of ``unlink_identity``.

    Removes one identity from a user. The last one cannot be removed; removing the session's own identity logs the
    session out.
    """
    force: Optional[bool]


class _UnlinkIdentityResultRequired(TypedDict):
    generation: int
    removed: bool
    revoked: bool


class UnlinkIdentityResult(_UnlinkIdentityResultRequired, total=False):
    """The result of ``unlink_identity``."""
    user: Optional[User]


class _DeleteUserParametersRequired(TypedDict):
    user_id: str


class DeleteUserParameters(_DeleteUserParametersRequired, total=False):
    """The parameters of ``delete_user``.

    Deletes the user's accounts at their providers, then removes the user from the device.
    """
    force: Optional[bool]


class DeleteUserResult(TypedDict):
    """The result of ``delete_user``."""
    generation: int
    user_id: str
    deleted: List[Identity]


class AccessTokenParameters(TypedDict, total=False):
    """The parameters of ``access_token``.

    An access token valid for at least min_valid seconds (default 60), refreshed first when needed; token_type is
    Bearer, or DPoP for a token bound to the session's key (DpopProof). With audience and/or scopes (or for a program
    whose access rule narrows its tokens), a narrowed token: for that audience and no more than those scopes
    (docs/least-privilege.md); PermissionDenied when the program asks for more than its rule gives, NotSupported when
    the user's provider cannot narrow.
    """
    #: Default: the active user.
    user_id: Optional[str]
    #: The seat whose active user is meant when `user_id` is absent. Default: the caller's seat, else the default.
    seat: Optional[str]
    #: How many seconds the returned token must stay valid at least (capped at what a fresh token can give).
    min_valid: Optional[int]
    audience: Optional[str]
    scopes: Optional[List[str]]


class _AccessTokenResultRequired(TypedDict):
    user_id: str
    access_token: str
    token_type: str
    expires_at: str
    expires_in: int


class AccessTokenResult(_AccessTokenResultRequired, total=False):
    """The result of ``access_token``."""
    #: A narrowed token's audience and scopes (absent from the session's own token).
    audience: Optional[str]
    scopes: Optional[List[str]]


class RefreshParameters(TypedDict, total=False):
    """The parameters of ``refresh``.

    Refreshes a user's access token now.
    """
    user_id: Optional[str]
    seat: Optional[str]


class RefreshResult(TypedDict):
    """The result of ``refresh``."""
    user_id: str
    access_token_expires_at: str


class _DpopProofParametersRequired(TypedDict):
    htm: str
    htu: str


class DpopProofParameters(_DpopProofParametersRequired, total=False):
    """The parameters of ``dpop_proof``.

    A DPoP proof (RFC 9449) for one request (htm, htu), signed with the key the session's tokens are bound to, with
    ath for the token the user holds now (the narrowed one, with audience and scopes as AccessToken takes them);
    NotSupported for bearer tokens. The key never leaves the daemon (docs/dpop.md).
    """
    #: The `DPoP-Nonce` the server answered with, when it asked for one (`use_dpop_nonce`).
    nonce: Optional[str]
    #: Default: the active user.
    user_id: Optional[str]
    #: The seat whose active user is meant when `user_id` is absent. Default: the caller's seat, else the default.
    seat: Optional[str]
    audience: Optional[str]
    scopes: Optional[List[str]]


class DpopProofResult(TypedDict):
    """The result of ``dpop_proof``."""
    user_id: str
    #: The proof JWT: the value of the request's `DPoP` header.
    proof: str
    #: When the access token the proof's `ath` names expires: a token fetched before it was refreshed does not match the
    #: proof.
    access_token_expires_at: str


class RefreshProfileParameters(TypedDict, total=False):
    """The parameters of ``refresh_profile``.

    Refreshes a user's tokens and reads its claims at the provider again (the SDK's `refreshCustomData()`); answers
    with the user.
    """
    user_id: Optional[str]
    seat: Optional[str]


class _RefreshProfileResultRequired(TypedDict):
    generation: int
    user: User


class RefreshProfileResult(_RefreshProfileResultRequired, total=False):
    """The result of ``refresh_profile``."""
    seat: Optional[str]


class UpdateProfileParameters(TypedDict, total=False):
    """The parameters of ``update_profile``.

    An empty string removes a field; an absent one is left as it is.
    """
    user_id: Optional[str]
    seat: Optional[str]
    name: Optional[str]
    picture: Optional[str]
    locale: Optional[str]


class _UpdateProfileResultRequired(TypedDict):
    generation: int
    user: User


class UpdateProfileResult(_UpdateProfileResultRequired, total=False):
    """The result of ``update_profile``."""
    seat: Optional[str]


class _CreateApiKeyParametersRequired(TypedDict):
    name: str


class CreateApiKeyParameters(_CreateApiKeyParametersRequired, total=False):
    """The parameters of ``create_api_key``.

    Creates a named API key for a logged-in user of a provider with API keys. The key is shown once.
    """
    user_id: Optional[str]


class CreateApiKeyResult(TypedDict):
    """The result of ``create_api_key``."""
    user_id: str
    name: str
    #: The key itself: returned only here, never again.
    key: str
    created_at: str


class ListApiKeysParameters(TypedDict, total=False):
    """The parameters of ``list_api_keys``.

    The names of a user's API keys (never the keys).
    """
    user_id: Optional[str]


class ListApiKeysResult(TypedDict):
    """The result of ``list_api_keys``."""
    user_id: str
    api_keys: List[ApiKey]


class _DeleteApiKeyParametersRequired(TypedDict):
    name: str


class DeleteApiKeyParameters(_DeleteApiKeyParametersRequired, total=False):
    """The parameters of ``delete_api_key``.

    Deletes a user's API key by name; logging in with it fails from then on.
    """
    user_id: Optional[str]


class DeleteApiKeyResult(TypedDict):
    """The result of ``delete_api_key``."""
    user_id: str
    name: str


class JwksParameters(TypedDict):
    """The parameters of ``jwks``.

    The public keys that verify the local providers' access tokens.
    """


class JwksResult(TypedDict):
    """The result of ``jwks``."""
    keys: List[Jwk]


class SubscribeParameters(TypedDict, total=False):
    """The parameters of ``subscribe``.

    Must be called with "more": the first reply names what is subscribed, every later one carries one event, in
    generation order, each after its change is durable.
    """
    events: Optional[List[EventName]]
    seats: Optional[List[str]]


class _SubscribeResultRequired(TypedDict):
    #: The generation when the subscription started: every later change arrives as events.
    generation: int


class SubscribeResult(_SubscribeResultRequired, total=False):
    """The result of ``subscribe``."""
    subscribed: Optional[List[EventName]]
    event: Optional[EventName]
    data: Optional[EventData]


class StatusParameters(TypedDict):
    """The parameters of ``status``.

    The daemon's health and counters.
    """


class _StatusResultRequired(TypedDict):
    version: str
    uptime_seconds: int
    generation: int
    users: UserCounts
    connections: int
    refresh: RefreshCounters


class StatusResult(_StatusResultRequired, total=False):
    """The result of ``status``."""
    active_user_id: Optional[str]


class ListSeatsParameters(TypedDict):
    """The parameters of ``list_seats``.

    Every seat the daemon knows, with its active user.
    """


class ListSeatsResult(TypedDict):
    """The result of ``list_seats``."""
    generation: int
    default_seat: str
    seats: List[Seat]


class _InhibitParametersRequired(TypedDict):
    mode: InhibitParametersMode
    who: str
    why: str


class InhibitParameters(_InhibitParametersRequired, total=False):
    """The parameters of ``inhibit``.

    A lease on the seat's active user, held until Release or until this connection closes. Called with "more", the
    connection is given to the lease: the first reply names it, later ones carry its switch_pending and lease_broken
    events, and closing the connection releases it.
    """
    seat: Optional[str]


class InhibitResult(TypedDict, total=False):
    """The result of ``inhibit``."""
    #: The lease's id (`l_…`), for `release`.
    lease: Optional[str]
    seat: Optional[str]
    event: Optional[EventName]
    generation: Optional[int]
    data: Optional[EventData]


class ReleaseParameters(TypedDict):
    """The parameters of ``release``.

    Ends a lease this connection holds.
    """
    lease: str


class ReleaseResult(TypedDict):
    """The result of ``release``."""
    lease: str
    released: bool


class ListLeasesParameters(TypedDict):
    """The parameters of ``list_leases``.

    Every lease held now, on every seat.
    """


class ListLeasesResult(TypedDict):
    """The result of ``list_leases``."""
    leases: List[Lease]


class LockSeatParameters(TypedDict, total=False):
    """The parameters of ``lock_seat``.

    Locks the seat as usherd: its active user's tokens are refused with SeatLocked until Unlock.
    """
    seat: Optional[str]


class _LockSeatResultRequired(TypedDict):
    seat: str
    locked: bool


class LockSeatResult(_LockSeatResultRequired, total=False):
    """The result of ``lock_seat``."""
    by: Optional[str]


class _UnlockParametersRequired(TypedDict):
    pin: str


class UnlockParameters(_UnlockParametersRequired, total=False):
    """The parameters of ``unlock``.

    Unlocks the seat with its active user's PIN, checked by usherd alone; a wrong PIN counts as a failed login.
    """
    seat: Optional[str]


class _UnlockResultRequired(TypedDict):
    seat: str
    locked: bool


class UnlockResult(_UnlockResultRequired, total=False):
    """The result of ``unlock``."""
    by: Optional[str]


class _SetPinParametersRequired(TypedDict):
    pin: str


class SetPinParameters(_SetPinParametersRequired, total=False):
    """The parameters of ``set_pin``.

    Sets the PIN (4 to 64 characters) that unlocks the seat of the user (default: the seat's active user).
    """
    user_id: Optional[str]


class SetPinResult(TypedDict):
    """The result of ``set_pin``."""
    user_id: str


class _OpenSessionParametersRequired(TypedDict):
    #: The user's id, or the email of a logged-in user (the most recently logged-in one when several have it): the
    #: session stage may run in another process than the login, which knows the PAM user's email only.
    user: str


class OpenSessionParameters(_OpenSessionParametersRequired, total=False):
    """The parameters of ``open_session``.

    pam_usher's session stage: makes the user (an id, or a logged-in user's email) active on the seat, never breaking
    a lease, and binds the login session to it until CloseSession.
    """
    seat: Optional[str]
    #: logind's id of the login session (XDG_SESSION_ID), when there is one: the seat follows it.
    logind_session: Optional[str]
    #: The PAM service that opened the session (login, gdm-password, sshd), for the record.
    service: Optional[str]
    #: The Unix uid of the person logging in, who owns the user from then on as if they had logged in themselves: the
    #: PAM module logs in as root on their behalf. Only root and usherd's uid may name one.
    uid: Optional[int]


class _OpenSessionResultRequired(TypedDict):
    #: The binding's id, which `close_session` takes.
    binding: str
    generation: int
    user: User


class OpenSessionResult(_OpenSessionResultRequired, total=False):
    """The result of ``open_session``."""
    seat: Optional[str]


class _CloseSessionParametersRequired(TypedDict):
    binding: str


class CloseSessionParameters(_CloseSessionParametersRequired, total=False):
    """The parameters of ``close_session``.

    Ends a binding `open_session` made, and does `on_close` to its user.
    """
    on_close: Optional[CloseSessionParametersOnClose]


class CloseSessionResult(TypedDict):
    """The result of ``close_session``."""
    binding: str
    user_id: str
    on_close: CloseSessionResultOnClose
    generation: int


class UserStatusParameters(TypedDict, total=False):
    """The parameters of ``user_status``.

    pam_usher's account stage, by email or by the Unix name [unix_users] gives the user: status is logged_in,
    logged_out or unknown; ended says why the last session ended.
    """
    email: Optional[str]
    unix_user: Optional[str]


class _UserStatusResultRequired(TypedDict):
    #: `logged_in`, `logged_out`, or `unknown` (no user on the device has this email or Unix name).
    status: str


class UserStatusResult(_UserStatusResultRequired, total=False):
    """The result of ``user_status``."""
    #: The user's id (absent when unknown).
    user_id: Optional[str]
    #: The account's email (absent when unknown).
    email: Optional[str]
    #: Why its last session ended (a `user_logged_out` reason: `requested`, `session_revoked`, `refresh_token_expired`,
    #: ...); absent when logged in, unknown, or ended before usher recorded it.
    ended: Optional[str]


class RateLimitedData(TypedDict):
    """The data of ``rate_limited``.

    Too many failed logins for this account or from this peer's uid: the attempt was refused before the credentials
    were checked. `data.retry_after` says in how many seconds to try again.
    """
    retry_after: int


class UserActiveElsewhereData(TypedDict):
    """The data of ``user_active_elsewhere``.

    The user is active on another seat (`data.seat` names it); send `"move": true` to move them.
    """
    seat: str


class InhibitedData(TypedDict):
    """The data of ``inhibited``.

    A block lease holds the seat's active user in place; `data.holders` lists the leases. `"force": true` from a peer
    with `manage` breaks them.
    """
    seat: str
    holders: List[Lease]


class SeatLockedData(TypedDict):
    """The data of ``seat_locked``.

    The seat is locked (by `lock_seat`, or by logind's lock of the session it follows): its active user's tokens and
    DPoP proofs are refused until `unlock` (or logind) unlocks it. `data.seat` names the seat.
    """
    seat: str
