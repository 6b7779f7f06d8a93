"""The hand-written readers of the daemon's answers (the ``from_wire`` methods behind ``_protocol``'s calls) agree
with the interface file: each reads an answer of every shape the interface declares for its method, the fullest
(every optional field there) and the barest (none), and reads no field the interface does not declare there.

The readers stay hand-written because they check untrusted input at run time, which a ``TypedDict`` cannot; this
holds them to the interface file instead. The answers are made from the interface's types
(``usher._interface``'s source, read with tools/varlink_idl.py), so a field added, removed or made optional there is
seen here.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Set, Tuple

import pytest

from conftest import REPOSITORY
from usher import _interface as wire
from usher import _protocol

sys.path.insert(0, str(REPOSITORY / "tools"))

import varlink_idl  # noqa: E402

INTERFACE = varlink_idl.load(str(REPOSITORY / "varlink" / "io.usher.Session.varlink"))
TIME = "2026-11-21T08:03:58.123Z"  # a string that is an RFC 3339 time and a token (visible ASCII) alike

#: Every method the package calls, with arguments that make a request of it.
CALLS: Dict[str, Callable[[], _protocol.Call[Any]]] = {
    wire.METHOD_HELLO: _protocol.hello,
    wire.METHOD_PROVIDERS: _protocol.providers,
    wire.METHOD_REGISTER: lambda: _protocol.register("a@example.com", "secret", None),
    wire.METHOD_CHANGE_PASSWORD: lambda: _protocol.change_password("a@example.com", "old", "new", None),
    wire.METHOD_RESET_PASSWORD: lambda: _protocol.reset_password("a@example.com", "new", None),
    wire.METHOD_CONFIRM_USER: lambda: _protocol.confirm_user("token", None),
    wire.METHOD_RESEND_CONFIRMATION: lambda: _protocol.resend_confirmation("a@example.com", None),
    wire.METHOD_REQUEST_PASSWORD_RESET: lambda: _protocol.request_password_reset("a@example.com", None),
    wire.METHOD_COMPLETE_PASSWORD_RESET: lambda: _protocol.complete_password_reset("token", "new", None),
    wire.METHOD_LOGIN: lambda: _protocol.login({"type": "anonymous"}, None, None, None, None),
    wire.METHOD_LOGIN_BEGIN: lambda: _protocol.login_begin(None, None, None),
    wire.METHOD_LOGIN_WAIT: lambda: _protocol.login_wait("login", None, None, None),
    wire.METHOD_CURRENT_USER: lambda: _protocol.current_user(None),
    wire.METHOD_LIST_USERS: lambda: _protocol.list_users_page(10, None),
    wire.METHOD_SWITCH_USER: lambda: _protocol.switch_user("u_1", None, None, None, None),
    wire.METHOD_LOGOUT: lambda: _protocol.logout(None, None, None),
    wire.METHOD_REMOVE_USER: lambda: _protocol.remove_user("u_1", None),
    wire.METHOD_LINK_CREDENTIALS: lambda: _protocol.link_credentials({"type": "api_key"}, None, None, None, None, None),
    wire.METHOD_UNLINK_IDENTITY: lambda: _protocol.unlink_identity("u_1", "local", "s", None),
    wire.METHOD_DELETE_USER: lambda: _protocol.delete_user("u_1", None),
    wire.METHOD_ACCESS_TOKEN: lambda: _protocol.access_token(None, None, None),
    wire.METHOD_REFRESH: lambda: _protocol.refresh(None, None),
    wire.METHOD_DPOP_PROOF: lambda: _protocol.dpop_proof("GET", "https://example.com/", None, None, None),
    wire.METHOD_REFRESH_PROFILE: lambda: _protocol.refresh_profile(None, None),
    wire.METHOD_UPDATE_PROFILE: lambda: _protocol.update_profile({"name": "Ann"}, None, None),
    wire.METHOD_CREATE_API_KEY: lambda: _protocol.create_api_key("ci", None),
    wire.METHOD_LIST_API_KEYS: lambda: _protocol.list_api_keys(None),
    wire.METHOD_DELETE_API_KEY: lambda: _protocol.delete_api_key("ci", None),
    wire.METHOD_JWKS: _protocol.jwks,
    wire.METHOD_SUBSCRIBE: lambda: _protocol.subscribe(None, None),
    wire.METHOD_STATUS: _protocol.status,
    wire.METHOD_LIST_SEATS: _protocol.list_seats,
    wire.METHOD_INHIBIT: lambda: _protocol.inhibit("why", "who", "block", None),
    wire.METHOD_RELEASE: lambda: _protocol.release("l_1"),
    wire.METHOD_LIST_LEASES: _protocol.list_leases,
    wire.METHOD_LOCK_SEAT: lambda: _protocol.lock_seat(None),
    wire.METHOD_UNLOCK: lambda: _protocol.unlock("1234", None),
    wire.METHOD_SET_PIN: lambda: _protocol.set_pin("1234", None),
}

#: What reads a result beyond its call's own reader: the clients take these parts of the two answers they keep raw.
AFTERWARDS: Dict[str, Callable[[Any], Any]] = {
    wire.METHOD_SUBSCRIBE: _protocol.subscribed,
    wire.METHOD_INHIBIT: _protocol.lease_parts,
}

#: The methods of other programs than this package's clients: pam_usher's (clients/pam). A method added to the
#: interface later reaches the package through `Client.call` until it is given a method of its own (docs/architecture.md,
#: "Adding a method": a new method need not touch the clients).
NOT_CALLED = {wire.METHOD_OPEN_SESSION, wire.METHOD_CLOSE_SESSION, wire.METHOD_USER_STATUS}

#: Fields a reader may read and the interface does not declare, and why (none today).
UNDECLARED_READS: Set[Tuple[str, str]] = set()


class Answer(dict):  # type: ignore[type-arg]
    """An object of an answer that notes every field read of it that its type does not declare."""

    def __init__(self, where: str, declared: Set[str], values: Dict[str, Any], strays: List[str]) -> None:
        super().__init__(values)
        self.where, self.declared, self.strays = where, declared, strays

    def _note(self, key: object) -> None:
        if key not in self.declared and (self.where, key) not in UNDECLARED_READS:
            self.strays.append(f"{self.where}.{key}")

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return super().__contains__(key)


def sample(type_: varlink_idl.Type, where: str, full: bool, strays: List[str]) -> Any:
    """A value of the type: with every optional field (full), or with none."""
    if type_.kind == "optional":
        assert type_.element is not None
        return sample(type_.element, where, full, strays) if full else None
    if type_.kind == "array":
        assert type_.element is not None
        return [sample(type_.element, where, full, strays)]
    if type_.kind == "map":
        assert type_.element is not None
        return {"key": sample(type_.element, where, full, strays)}
    if type_.kind == "enum":
        return type_.values[0]
    if type_.kind == "named":
        return sample(INTERFACE.types[type_.name].type, type_.name, full, strays)
    if type_.kind == "struct":
        return struct(type_.fields, where, full, strays)
    return {"bool": True, "int": 1, "float": 1.5, "string": TIME, "object": {}}[type_.name]


def struct(fields: Tuple[varlink_idl.Field, ...], where: str, full: bool, strays: List[str]) -> Answer:
    values = {f.name: sample(f.type, f"{where}.{f.name}", full, strays) for f in fields}
    if not full:
        values = {name: value for name, value in values.items() if value is not None}
    return Answer(where, {f.name for f in fields}, values, strays)


def test_the_package_calls_methods_of_the_interface_only() -> None:
    assert set(CALLS) <= set(wire.METHODS)
    assert not set(CALLS) & NOT_CALLED
    assert all(CALLS[name]().method == name for name in CALLS)


@pytest.mark.parametrize("full", [True, False], ids=["every optional field", "no optional field"])
@pytest.mark.parametrize("method", sorted(CALLS))
def test_the_reader_of_each_answer_agrees_with_the_interface(method: str, full: bool) -> None:
    declared = next(m for m in INTERFACE.methods.values() if m.wire_name == method)
    strays: List[str] = []
    result = struct(declared.results, f"{declared.name}Result", full, strays)
    call = CALLS[method]()
    call.parse(result)
    if method in AFTERWARDS and full:
        # subscribe's subscribed and inhibit's lease and seat are optional in the interface (their later "more"
        # replies carry events instead), and always in the first answer, the one a client reads: the barest answer
        # is not one it can be given.
        AFTERWARDS[method](result)
    assert not strays, f"{method}'s reader reads fields the interface does not declare there: {strays}"


def test_a_field_the_interface_does_not_declare_is_seen() -> None:
    strays: List[str] = []
    answer = struct((varlink_idl.Field("user_id", varlink_idl.Type("primitive", name="string")),), "R", True, strays)
    assert answer.get("user_id") == TIME and not strays
    assert answer.get("expires_at") is None and "token" not in answer
    assert strays == ["R.expires_at", "R.token"]
