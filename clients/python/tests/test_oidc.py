"""login_begin and login_wait against a real OpenID Connect provider: the repository's django-oauth-toolkit test
server (Tests/Fixtures/oidc-server, installed into the test venv by make test-deps) and its scripted browser."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator
from urllib.parse import parse_qs, urlparse

import pytest

import usher
from conftest import HANG_GUARD, REPOSITORY, start_daemon

FIXTURES = REPOSITORY / "Tests" / "Fixtures" / "oidc-server"
sys.path.insert(0, str(FIXTURES))
from serving import running_issuer  # noqa: E402


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The issuer URL of a running test server (the test venv's Python has what it needs)."""
    pytest.importorskip("oauth2_provider", reason="the OpenID Connect test server needs make test-deps's venv")
    with running_issuer(tmp_path_factory.mktemp("oidc") / "state", HANG_GUARD) as issuer:
        yield issuer


def test_a_device_login_begun_and_waited_for(issuer: str) -> None:
    daemon = start_daemon(
        f'[daemon]\ndefault_provider = "device"\n[providers.device]\ntype = "oidc"\nissuer = "{issuer}"\n'
        'client_id = "usher-device"\n'
    )
    try:
        with daemon.client() as client:
            (provider,) = client.providers()
            assert (provider.name, provider.type) == ("device", "oidc") and "device_code" in provider.credentials
            start = client.login_begin("device_code", provider="device")
            assert (start.type, start.provider) == ("device_code", "device")
            assert start.login_id and start.user_code and start.verification_uri
            assert start.authorize_url is None  # the browser flow's fields are null
            # The person approves on another device (the scripted browser), while login_wait waits.
            browser = subprocess.run(
                [sys.executable, str(FIXTURES / "browser.py"), "device", start.verification_uri, start.user_code]
                + ["carol", "carol-password"],
                capture_output=True,
                text=True,
                timeout=HANG_GUARD,
            )
            assert browser.returncode == 0, browser.stderr
            change = client.login_wait(start.login_id)
            assert (change.user.email, change.user.kind, change.user.active) == ("carol@example.com", "device_code", True)
            assert client.access_token(min_valid=60).user_id == change.user.id
            with pytest.raises(usher.ExpiredToken):
                client.login_wait(start.login_id)  # handed to one login_wait only
    finally:
        daemon.remove()


def test_a_browser_login_begun_then_finished_with_login(issuer: str) -> None:
    daemon = start_daemon(
        f'[daemon]\ndefault_provider = "code"\n[providers.code]\ntype = "oidc"\nissuer = "{issuer}"\n'
        'client_id = "usher-code"\n'
    )
    try:
        with daemon.client() as client:
            start = client.login_begin()
            assert (start.type, start.provider) == ("authorization_code", "code")
            assert start.authorize_url and start.state and start.code_verifier and start.redirect_uri
            assert start.code_verifier not in repr(start)  # a secret stays out of repr()
            assert start.user_code is None  # the device flow's fields are null
            # The person logs in at the provider; the client takes the redirect (here printed, not followed).
            browser = subprocess.run(
                [sys.executable, str(FIXTURES / "browser.py"), "authorize", start.authorize_url]
                + ["dave", "dave-password", "--print-redirect"],
                capture_output=True,
                text=True,
                timeout=HANG_GUARD,
            )
            assert browser.returncode == 0, browser.stderr
            query = parse_qs(urlparse(browser.stdout.strip()).query)
            assert query["state"] == [start.state]
            credentials = {
                "type": "authorization_code",
                "code": query["code"][0],
                "code_verifier": start.code_verifier,
                "redirect_uri": start.redirect_uri,
                "state": start.state,
            }
            change = client.login(credentials)
            assert (change.user.email, change.user.kind) == ("dave@example.com", "authorization_code")
    finally:
        daemon.remove()
