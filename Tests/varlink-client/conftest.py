"""The real usherd for the Varlink tests, and the tools to talk to it: the ``varlink`` package from PyPI (a client this
project did not write), a raw socket for what no well-behaved client sends, and a check of every reply against the
interface definition the daemon serves.

The daemon is the one the Python package's tests start (clients/python/tests/conftest.py: ``USHER_BIN``, a short
temporary socket, READY=1); its Varlink socket is ``io.usher.Session`` next to its main socket. Times are hang guards
only: a test waits for what it expects.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
import varlink
from varlink import scanner

REPOSITORY = Path(__file__).resolve().parents[2]
INTERFACE_FILE = REPOSITORY / "varlink" / "io.usher.Session.varlink"

# The daemon fixture of the Python package's tests (which imports that package: its source is on the path).
sys.path.insert(0, str(REPOSITORY / "clients" / "python" / "src"))
_spec = importlib.util.spec_from_file_location("usher_daemon", REPOSITORY / "clients" / "python" / "tests" / "conftest.py")
assert _spec is not None and _spec.loader is not None
usher_daemon = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(usher_daemon)
Daemon = usher_daemon.Daemon
HANG_GUARD: float = usher_daemon.HANG_GUARD
LOCAL_PROVIDER: str = usher_daemon.LOCAL_PROVIDER

# The varlink package's sockets block without a timeout: the hang guard bounds every read.
socket.setdefaulttimeout(HANG_GUARD)


def varlink_path(daemon: Any) -> str:
    return str(Path(daemon.socket).parent / "io.usher.Session")


def address(daemon: Any) -> str:
    return "unix:" + varlink_path(daemon)


# The daemon fixture (a local provider, or the TOML of ``@pytest.mark.usherd_config("...")``) and its hooks, as the
# Python package's tests have them.
daemon = usher_daemon.daemon
pytest_runtest_makereport = usher_daemon.pytest_runtest_makereport
pytest_configure = usher_daemon.pytest_configure


@pytest.fixture
def client(daemon: Any) -> Iterator[varlink.Client]:
    with varlink.Client(address=address(daemon)) as connected:
        yield connected


@pytest.fixture
def session(client: varlink.Client) -> Iterator[Any]:
    """``io.usher.Session`` through the varlink package: methods by name, replies as dictionaries."""
    with client.open("io.usher.Session") as opened:
        yield opened


class Raw:
    """A Varlink connection by hand: messages in and out as they are on the wire, NUL-terminated JSON."""

    def __init__(self, path: str) -> None:
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.settimeout(HANG_GUARD)
        self.socket.connect(path)
        self.buffer = b""

    def send(self, message: Any) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.socket.sendall(data + b"\0")

    def receive(self) -> Optional[dict[str, Any]]:
        """The next message; None when the daemon closed the connection."""
        while b"\0" not in self.buffer:
            try:
                chunk = self.socket.recv(65536)
            except ConnectionResetError:
                # The daemon closed a connection whose input it had not read (a message past the size limit).
                chunk = b""
            if not chunk:
                assert self.buffer == b"", f"the connection closed inside a message: {self.buffer[:200]!r}"
                return None
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        decoded = json.loads(message)
        assert isinstance(decoded, dict)
        return decoded

    def call(self, method: str, **parameters: Any) -> dict[str, Any]:
        self.send({"method": method, "parameters": parameters})
        reply = self.receive()
        assert reply is not None, f"no reply to {method}"
        return reply

    def close(self) -> None:
        self.socket.close()


class Definition:
    """The interface definition as the daemon serves it, parsed by the varlink package, and a strict check of values
    against its types: every field the type requires is there, no field it does not declare, each of its type."""

    def __init__(self, description: str) -> None:
        self.interface = scanner.Interface(description)

    def method(self, name: str) -> Any:
        return self.interface.get_method(name)

    def errors(self) -> dict[str, Any]:
        return {name: member for name, member in self.interface.members.items() if isinstance(member, scanner._Error)}

    def methods(self) -> dict[str, Any]:
        return {name: member for name, member in self.interface.members.items() if isinstance(member, scanner._Method)}

    def check_reply(self, method: str, parameters: dict[str, Any]) -> None:
        self.check(self.method(method).out_type, parameters, f"{method} reply")

    def check_error(self, error: str, parameters: dict[str, Any]) -> None:
        prefix = self.interface.name + "."
        assert error.startswith(prefix), f"{error} is not an error of {self.interface.name}"
        declared = self.errors().get(error[len(prefix) :])
        assert declared is not None, f"{error} is not declared in the interface"
        self.check(declared.type, parameters, error)

    def check(self, kind: Any, value: Any, path: str) -> None:
        if isinstance(kind, scanner._Maybe):
            if value is None:
                return
            kind = kind.element_type
        assert value is not None, f"{path}: null, and the type is not optional"
        if isinstance(kind, scanner._CustomType):
            kind = self.interface.members[kind.name]
        if isinstance(kind, scanner._Alias):
            kind = kind.type
        if isinstance(kind, scanner._Struct):
            assert isinstance(value, dict), f"{path}: {value!r} is not an object"
            unknown = set(value) - set(kind.fields)
            assert not unknown, f"{path}: fields the interface does not declare: {sorted(unknown)}"
            for name, field in kind.fields.items():
                if name not in value:
                    assert isinstance(field, scanner._Maybe), f"{path}: required field {name} is missing"
                    continue
                self.check(field, value[name], f"{path}.{name}")
        elif isinstance(kind, scanner._Enum):
            assert value in list(kind.fields), f"{path}: {value!r} is not one of {list(kind.fields)}"
        elif isinstance(kind, scanner._Array):
            assert isinstance(value, list), f"{path}: {value!r} is not an array"
            for index, element in enumerate(value):
                self.check(kind.element_type, element, f"{path}[{index}]")
        elif isinstance(kind, scanner._Dict):
            assert isinstance(value, dict), f"{path}: {value!r} is not a map"
            for key, element in value.items():
                self.check(kind.element_type, element, f"{path}[{key}]")
        elif isinstance(kind, scanner._Object):
            pass
        elif isinstance(kind, bool):
            assert isinstance(value, bool), f"{path}: {value!r} is not a bool"
        elif isinstance(kind, int):
            assert isinstance(value, int) and not isinstance(value, bool), f"{path}: {value!r} is not an int"
        elif isinstance(kind, float):
            assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{path}: {value!r} is not a float"
        elif isinstance(kind, str):
            assert isinstance(value, str), f"{path}: {value!r} is not a string"
        else:
            raise AssertionError(f"{path}: unexpected type {kind!r} in the definition")


@pytest.fixture
def definition(client: varlink.Client) -> Definition:
    """The definition the daemon serves (GetInterfaceDescription)."""
    return Definition(client.get_interface("io.usher.Session").get_description())


class Checked:
    """Calls through a raw connection, each reply checked against the definition: a method's reply against its
    output type, an error against its declaration."""

    def __init__(self, raw: Raw, definition: Definition) -> None:
        self.raw = raw
        self.definition = definition
        self.called: set[str] = set()

    def call(self, method: str, **parameters: Any) -> dict[str, Any]:
        """The reply's parameters; fails on an error."""
        reply = self.raw.call("io.usher.Session." + method, **parameters)
        self.called.add(method)
        assert "error" not in reply, f"{method} failed: {reply}"
        assert set(reply) <= {"parameters", "continues"}, reply
        self.definition.check_reply(method, reply.get("parameters", {}))
        return dict(reply.get("parameters", {}))

    def fails(self, method: str, error: str, **parameters: Any) -> dict[str, Any]:
        """The error's parameters; fails unless the call fails with ``error`` (a short name of the interface's)."""
        reply = self.raw.call("io.usher.Session." + method, **parameters)
        self.called.add(method)
        assert reply.get("error") == "io.usher.Session." + error, f"{method}: expected {error}, got {reply}"
        self.definition.check_error(reply["error"], reply.get("parameters", {}))
        return dict(reply.get("parameters", {}))


@pytest.fixture
def raw(daemon: Any) -> Iterator[Raw]:
    connection = Raw(varlink_path(daemon))
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def checked(raw: Raw, definition: Definition) -> Checked:
    return Checked(raw, definition)
