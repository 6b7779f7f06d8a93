"""Errors: one class per documented code, raised for the daemon's real refusals; unknown codes; secrets."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import tempfile

import pytest

import usher
from conftest import REPOSITORY, Daemon
from usher.errors import error_from_wire


def documented_codes() -> set[str]:
    """The codes of the error table in docs/protocol.md."""
    text = (REPOSITORY / "docs" / "protocol.md").read_text()
    table = text.split("## Error codes", 1)[1].split("\n\n", 2)[1]
    return set(re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE))


def test_every_documented_code_has_its_own_class() -> None:
    codes = documented_codes()
    assert len(codes) > 25  # the table was found
    assert codes == set(usher.ERROR_CLASSES)
    for code, cls in usher.ERROR_CLASSES.items():
        assert issubclass(cls, usher.UsherError) and cls is not usher.UsherError
        assert cls.__name__ in usher.__all__
        error = error_from_wire({"code": code, "message": "m"})
        assert type(error) is cls and error.code == code and error.message == "m"


def test_an_unknown_code_is_the_base_class_with_its_code() -> None:
    error = error_from_wire({"code": "added_next_year", "message": "later", "data": {"x": 1}})
    assert type(error) is usher.UsherError
    assert (error.code, error.message, error.data) == ("added_next_year", "later", {"x": 1})


def test_refusals_raise_their_classes(client: usher.Client) -> None:
    with pytest.raises(usher.NoActiveUser):
        client.access_token()
    with pytest.raises(usher.UserNotFound) as not_found:
        client.switch_user("u_nobody")
    assert not_found.value.code == "user_not_found" and not_found.value.message
    with pytest.raises(usher.InvalidParams):
        client.call("switch_user", {})
    with pytest.raises(usher.ProviderNotFound):
        client.register("ann@example.com", "correct horse", provider="elsewhere")
    client.register("ann@example.com", "correct horse")
    with pytest.raises(usher.AccountExists):
        client.register("ann@example.com", "correct horse")
    with pytest.raises(usher.InvalidCredentials):
        client.login_email("ann@example.com", "wrong password")
    with pytest.raises(usher.SeatNotFound):
        client.current_user(seat="no-such-seat")
    with pytest.raises(usher.LeaseNotFound):
        client.release("l_404")
    with pytest.raises(usher.ExpiredToken):
        client.login_wait("no-such-login")
    with pytest.raises(usher.UnsupportedCredentials):
        client.login({"type": "token_exchange", "subject_token": "x", "subject_token_type": "jwt"})
    with pytest.raises(usher.UnsupportedCredentials):
        client.login_begin("device_code")  # the local provider has no interactive logins
    # The connection is still usable after every refusal.
    assert client.hello().server == "usherd"


@pytest.mark.usherd_config('[providers.local]\ntype = "local"\nallow_registration = false\n')
def test_registration_disabled(client: usher.Client) -> None:
    with pytest.raises(usher.RegistrationDisabled):
        client.register("ann@example.com", "correct horse")


@pytest.mark.usherd_config('[providers.local]\ntype = "local"\n[login_throttle]\naccount_free_failures = 1\n')
def test_rate_limited_says_when_to_retry(client: usher.Client) -> None:
    client.register("ann@example.com", "correct horse")
    for _ in range(2):
        with pytest.raises(usher.InvalidCredentials):
            client.login_email("ann@example.com", "wrong password")
    with pytest.raises(usher.RateLimited) as limited:
        client.login_email("ann@example.com", "wrong password")
    assert limited.value.retry_after is not None and limited.value.retry_after >= 1


def test_a_missing_socket_is_daemon_unavailable_naming_the_path() -> None:
    with pytest.raises(usher.DaemonUnavailable) as unavailable:
        usher.Client("/tmp/usher-py-no-such-dir/usher.sock")
    assert unavailable.value.tried == ["/tmp/usher-py-no-such-dir/usher.sock"]
    assert "/tmp/usher-py-no-such-dir/usher.sock" in str(unavailable.value)


def test_a_line_too_long_is_refused_and_the_client_connects_again(daemon: Daemon) -> None:
    with daemon.client() as client:
        with pytest.raises(usher.LineTooLong):
            client.call("hello", {"padding": "x" * 70000})
        # The daemon closed that connection; the next request gets a new one.
        assert client.hello().server == "usherd"


def test_garbage_from_the_socket_is_a_protocol_error() -> None:
    directory = tempfile.mkdtemp(prefix="usher-py-", dir="/tmp")
    path = os.path.join(directory, "fake.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path)
        server.listen(1)
        with usher.Client(path, timeout=30) as client:
            peer, _ = server.accept()
            peer.sendall(b"this is not json\n")
            with pytest.raises(usher.ProtocolError):
                client.hello()
            peer.close()
    finally:
        server.close()
        shutil.rmtree(directory)


def test_a_daemon_that_never_answers_times_out_and_the_client_starts_afresh() -> None:
    # A socket that accepts and never answers: the timeout is the behaviour under test, and nothing can make the
    # answer come in time, however fast or slow the machine.
    directory = tempfile.mkdtemp(prefix="usher-py-", dir="/tmp")
    path = os.path.join(directory, "silent.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path)
        server.listen(4)
        with usher.Client(path, timeout=0.2) as client:
            with pytest.raises(TimeoutError):
                client.hello()
            first, _ = server.accept()
            # The late answer would come on that connection: the next request opens a new one.
            with pytest.raises(TimeoutError):
                client.hello()
            second, _ = server.accept()
            first.close()
            second.close()

        async def silent() -> None:
            async with usher.AsyncClient(path, timeout=0.2) as client:
                await client.hello()

        with pytest.raises(TimeoutError):
            asyncio.run(silent())
    finally:
        server.close()
        shutil.rmtree(directory)
