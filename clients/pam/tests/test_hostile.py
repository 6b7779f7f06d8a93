"""Fail closed, never hang: usherd unreachable, silent, answering garbage or closing mid-answer is
PAM_AUTHINFO_UNAVAIL within timeout=; hostile user names never reach the socket."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from pathlib import Path
from typing import Iterator

import pytest

from conftest import HANG_GUARD, Pam


class FakeDaemon:
    """A socket that accepts connections and answers each line as told: nothing, or fixed bytes then a close."""

    def __init__(self, answer: bytes | None) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="usher-pam-fake-", dir="/tmp"))
        self.path = str(self.directory / "usher.sock")
        self.answer = answer
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(8)
        self.connections = 0
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            if self.answer is None:
                self.held.append(connection)  # never answers
                continue
            connection.settimeout(HANG_GUARD)
            try:
                connection.recv(65536)
                connection.sendall(self.answer)
            except OSError:
                pass
            connection.close()

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()
        os.unlink(self.path)
        os.rmdir(self.directory)


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> Iterator[FakeDaemon]:
    daemon = FakeDaemon(request.param)
    try:
        yield daemon
    finally:
        daemon.close()


def stack(pam: Pam, socket_path: str, options: str = "") -> str:
    line = f"pam_usher socket={socket_path} {options}".strip()
    return pam.service(
        "usher-hostile", [f"auth required {line}", f"account required {line}", f"session required {line}"]
    )


def test_an_unreachable_daemon_is_authinfo_unavail(pam: Pam) -> None:
    service = stack(pam, "/nonexistent/usher.sock")
    assert pam.run(service, "ann@example.com", ["authenticate"], stdin="secret\n").code == "PAM_AUTHINFO_UNAVAIL"
    assert pam.run(service, "ann@example.com", ["acct_mgmt"]).code == "PAM_AUTHINFO_UNAVAIL"
    assert pam.run(service, "ann@example.com", ["open_session"]).code == "PAM_SESSION_ERR"


@pytest.mark.parametrize("fake", [None], indirect=True)
def test_a_silent_daemon_is_authinfo_unavail_once_timeout_passes(pam: Pam, fake: FakeDaemon) -> None:
    service = stack(pam, fake.path, "timeout=1")
    outcome = pam.run(service, "ann@example.com", ["authenticate"], stdin="secret\n")
    assert outcome.code == "PAM_AUTHINFO_UNAVAIL", outcome
    # It waited for the timeout (not failing early), and gave up then (the upper bound is only a hang guard).
    assert 1.0 <= outcome.seconds < HANG_GUARD
    assert pam.run(service, "ann@example.com", ["acct_mgmt"]).code == "PAM_AUTHINFO_UNAVAIL"


@pytest.mark.parametrize(
    "fake",
    [b"garbage\n", b'{"id":1,"result":{"providers":[{"name"', b"\xff" * 9000],
    indirect=True,
)
def test_garbage_or_an_answer_cut_off_is_authinfo_unavail(pam: Pam, fake: FakeDaemon) -> None:
    service = stack(pam, fake.path)
    outcome = pam.run(service, "ann@example.com", ["authenticate"], stdin="secret\n")
    assert outcome.code == "PAM_AUTHINFO_UNAVAIL", outcome
    assert "did not answer properly" in outcome.syslog and "secret" not in outcome.syslog


@pytest.mark.parametrize("fake", [b"{}\n"], indirect=True)
@pytest.mark.parametrize("user", ["ann/../root", "ann\x01", "ann\x1b[2J", "a" * 257, "ann\x7f"])
def test_hostile_user_names_are_refused_before_the_socket(pam: Pam, fake: FakeDaemon, user: str) -> None:
    service = stack(pam, fake.path)
    for operation in ("authenticate", "acct_mgmt"):
        outcome = pam.run(service, user, [operation], stdin="secret\n")
        assert outcome.code == "PAM_USER_UNKNOWN", outcome
    assert fake.connections == 0


@pytest.mark.parametrize("fake", [b'{"id":1,"result":{"providers":[]}}\n'], indirect=True)
def test_a_daemon_without_the_provider_is_authinfo_unavail(pam: Pam, fake: FakeDaemon) -> None:
    outcome = pam.run(stack(pam, fake.path), "ann@example.com", ["authenticate"], stdin="secret\n")
    assert outcome.code == "PAM_AUTHINFO_UNAVAIL", outcome
    assert "usherd has no provider" in outcome.syslog
