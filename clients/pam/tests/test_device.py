"""login=device against the repository's OpenID Connect test server (Tests/Fixtures/oidc-server): the code shown as
PAM_TEXT_INFO, approved (or denied) by its scripted browser; the PAM user must be the account approved; a daemon
killed while the module waits."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from typing import Iterator

import pytest

from conftest import HANG_GUARD, REPOSITORY, Daemon, Pam, start_daemon

FIXTURES = REPOSITORY / "Tests" / "Fixtures" / "oidc-server"
sys.path.insert(0, str(FIXTURES))
from serving import running_issuer  # noqa: E402


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("oauth2_provider", reason="the OpenID Connect test server needs make test-deps's venv")
    with running_issuer(tmp_path_factory.mktemp("oidc") / "state", HANG_GUARD) as issuer:
        yield issuer


@pytest.fixture
def oidc_daemon(issuer: str) -> Iterator[Daemon]:
    daemon = start_daemon(
        f'[daemon]\ndefault_provider = "device"\n[providers.device]\ntype = "oidc"\nissuer = "{issuer}"\n'
        'client_id = "usher-device"\n'
    )
    try:
        yield daemon
    finally:
        daemon.remove()


def approve(text: str, username: str, *deny: str) -> None:
    match = re.search(r"visit (\S+) and enter the code (\S+)", text)
    assert match, text
    browser = subprocess.run(
        [sys.executable, str(FIXTURES / "browser.py"), "device", match[1], match[2], username, f"{username}-password"]
        + list(deny),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert browser.returncode == 0, browser.stderr


def device_service(pam: Pam, daemon: Daemon) -> str:
    line = f"pam_usher socket={daemon.socket} login=device domain=example.com debug"
    return pam.service("usher-device", [f"auth required {line}", f"account required {line}"])


def test_the_device_flow_approved_at_the_provider_logs_in(pam: Pam, oidc_daemon: Daemon) -> None:
    running = pam.start(device_service(pam, oidc_daemon), "carol", ["authenticate", "acct_mgmt"])
    text = running.wait_for_output("enter the code")
    approve(text, "carol")
    outcome = running.finish()
    assert outcome.code == "PAM_SUCCESS", outcome
    with oidc_daemon.client() as client:
        (carol,) = client.call("list_users")["users"]
    assert carol["email"] == "carol@example.com" and carol["state"] == "logged_in"
    # The user code and the login's id stay out of the log.
    code = re.search(r"enter the code (\S+)", text)
    assert code and code[1] not in outcome.syslog and "device." not in outcome.syslog


def test_another_account_approved_for_the_pam_user_is_an_auth_error(pam: Pam, oidc_daemon: Daemon) -> None:
    running = pam.start(device_service(pam, oidc_daemon), "alice", ["authenticate"])
    approve(running.wait_for_output("enter the code"), "carol")
    outcome = running.finish()
    assert outcome.code == "PAM_AUTH_ERR", outcome
    with oidc_daemon.client() as client:
        assert client.call("list_users")["users"] == []
    assert "identity_mismatch" in oidc_daemon.log


def test_a_denied_device_code_is_an_auth_error(pam: Pam, oidc_daemon: Daemon) -> None:
    running = pam.start(device_service(pam, oidc_daemon), "carol", ["authenticate"])
    approve(running.wait_for_output("enter the code"), "carol", "--deny")
    outcome = running.finish()
    assert outcome.code == "PAM_AUTH_ERR", outcome


def test_a_daemon_killed_mid_conversation_is_authinfo_unavail(pam: Pam, oidc_daemon: Daemon) -> None:
    running = pam.start(device_service(pam, oidc_daemon), "carol", ["authenticate"])
    running.wait_for_output("enter the code")
    assert oidc_daemon.process is not None
    oidc_daemon.process.send_signal(signal.SIGKILL)
    oidc_daemon.process.wait(HANG_GUARD)
    outcome = running.finish()
    assert outcome.code == "PAM_AUTHINFO_UNAVAIL", outcome


def test_chauthtok_is_refused_for_accounts_of_other_providers(pam: Pam, oidc_daemon: Daemon) -> None:
    line = f"pam_usher socket={oidc_daemon.socket}"
    service = pam.service("usher-oidc-passwd", [f"password required {line}"])
    outcome = pam.run(service, "carol@example.com", ["chauthtok"], stdin="a\nb\nb\n")
    assert outcome.code == "PAM_AUTHTOK_ERR", outcome
    assert "identity provider" in outcome.stderr
