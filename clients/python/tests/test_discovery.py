"""Socket discovery: the rules of the usher command (Sources/UsherClient/SocketLocation.swift)."""

from __future__ import annotations

import pytest

import usher
from conftest import Daemon


def test_an_explicit_path_wins() -> None:
    location = usher.resolve_socket("/x.sock", environ={"USHER_SOCKET": "/y.sock"}, is_root=False)
    assert (location.path, location.source) == ("/x.sock", "explicit")


def test_usher_socket_comes_next() -> None:
    environ = {"USHER_SOCKET": "/y.sock", "XDG_RUNTIME_DIR": "/run/user/1000"}
    location = usher.resolve_socket(None, environ=environ, is_root=False, exists=lambda path: True)
    assert (location.path, location.source) == ("/y.sock", "environment")


def test_empty_values_count_as_unset() -> None:
    location = usher.resolve_socket("", environ={"USHER_SOCKET": "", "XDG_RUNTIME_DIR": ""}, is_root=False)
    assert (location.path, location.source) == (usher.SYSTEM_SOCKET, "system")


def test_the_per_user_daemon_when_its_socket_exists() -> None:
    seen = []

    def exists(path: str) -> bool:
        seen.append(path)
        return True

    location = usher.resolve_socket(None, environ={"XDG_RUNTIME_DIR": "/run/user/1000/"}, is_root=False, exists=exists)
    assert (location.path, location.source) == ("/run/user/1000/usher/usher.sock", "runtime_directory")
    assert seen == ["/run/user/1000/usher/usher.sock"]


def test_the_system_daemon_when_the_per_user_socket_is_missing() -> None:
    location = usher.resolve_socket(
        None, environ={"XDG_RUNTIME_DIR": "/run/user/1000"}, is_root=False, exists=lambda path: False
    )
    assert (location.path, location.source) == ("/run/usher/usher.sock", "system")
    assert location.considered == [
        usher.Candidate("/run/user/1000/usher/usher.sock", "runtime_directory", "not found"),
        usher.Candidate("/run/usher/usher.sock", "system"),
    ]


def test_root_skips_the_per_user_daemon() -> None:
    location = usher.resolve_socket(
        None, environ={"XDG_RUNTIME_DIR": "/run/user/0"}, is_root=True, exists=lambda path: True
    )
    assert location.path == usher.SYSTEM_SOCKET
    assert [candidate.path for candidate in location.considered] == [usher.SYSTEM_SOCKET]


def test_clients_find_the_daemon_through_usher_socket(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USHER_SOCKET", daemon.socket)
    with usher.Client() as client:
        assert client.location.source == "environment"
        assert client.hello().server == "usherd"


def test_a_per_user_daemon_is_found_by_its_socket_file(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> None:
    # The real file system decides (the tests may run as root, which never looks there: hence is_root=False).
    runtime = tmp_path_factory.mktemp("runtime")
    environ = {"XDG_RUNTIME_DIR": str(runtime)}
    assert usher.resolve_socket(None, environ=environ, is_root=False).source == "system"
    (runtime / "usher").mkdir()
    (runtime / "usher" / "usher.sock").symlink_to(daemon.socket)
    location = usher.resolve_socket(None, environ=environ, is_root=False)
    assert location.source == "runtime_directory"
    with usher.Client(location.path) as client:
        assert client.hello().server == "usherd"


def test_without_a_daemon_the_error_names_every_path_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("USHER_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/tmp/usher-py-no-runtime-dir")
    try:
        with usher.Client(timeout=5) as client:
            # A system daemon answers on this machine: then it is the one found.
            assert client.location.path == usher.SYSTEM_SOCKET
            assert client.hello().server == "usherd"
    except usher.DaemonUnavailable as error:
        assert usher.SYSTEM_SOCKET in error.tried
        assert usher.SYSTEM_SOCKET in str(error)
