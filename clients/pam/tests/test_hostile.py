"""Fail closed, never hang: usherd unreachable, silent, answering garbage or closing mid-answer is
PAM_AUTHINFO_UNAVAIL within timeout=; hostile user names never reach the socket."""

from __future__ import annotations

import json
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


class ScriptedDaemon:
    """A socket that answers the requests of one connection in turn, each with the next of ``answers`` (a result or
    an error object), echoing the request's id as usherd does."""

    def __init__(self, answers: list[dict[str, object]]) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="usher-pam-script-", dir="/tmp"))
        self.path = str(self.directory / "usher.sock")
        self.answers = answers
        self.methods: list[str] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        with connection, connection.makefile("rb") as lines:
            for answer in self.answers:
                line = lines.readline()
                if not line:
                    return
                request = json.loads(line)
                self.methods.append(request["method"])
                connection.sendall(json.dumps({"id": request.get("id"), **answer}).encode() + b"\n")

    def close(self) -> None:
        self.listener.close()
        self.thread.join(HANG_GUARD)
        os.unlink(self.path)
        os.rmdir(self.directory)


def device_start(uri: str = "https://idp.example/device", code: str = "ABCD-EFGH") -> dict[str, object]:
    return {
        "result": {
            "type": "device_code",
            "status": "pending",
            "provider": "idp",
            "login_id": "idp.secret-login-id",
            "verification_uri": uri,
            "verification_uri_complete": None,
            "user_code": code,
            "expires_at": "2026-01-01T00:00:00Z",
        }
    }


@pytest.mark.parametrize("code", ["expired_token", "access_denied"])
def test_a_device_code_that_expires_or_is_denied_is_an_auth_error(pam: Pam, code: str) -> None:
    script = ScriptedDaemon([device_start(), {"error": {"code": code, "message": "the code is no more"}}])
    try:
        service = stack(pam, script.path, "login=device debug")
        outcome = pam.run(service, "ann@example.com", ["authenticate"])
        assert outcome.code == "PAM_AUTH_ERR", outcome
        assert "visit https://idp.example/device and enter the code ABCD-EFGH" in outcome.stdout
        assert script.methods == ["login_begin", "login_wait"]
        assert "secret-login-id" not in outcome.syslog
    finally:
        script.close()


def test_a_verification_uri_that_would_drive_the_terminal_is_not_shown(pam: Pam) -> None:
    script = ScriptedDaemon([device_start(uri="https://idp.example/\x1b]0;owned\x07")])
    try:
        outcome = pam.run(stack(pam, script.path, "login=device"), "ann@example.com", ["authenticate"])
        assert outcome.code == "PAM_AUTHINFO_UNAVAIL", outcome
        assert "\x1b" not in outcome.stdout and script.methods == ["login_begin"]
    finally:
        script.close()
