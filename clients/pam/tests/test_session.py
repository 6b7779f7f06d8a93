"""The session stage (the seat's active user, the binding, USHER_SOCKET and USHER_USER, on_close) and the password
stage (chauthtok)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Daemon, Pam
from test_auth import PASSWORD, call

DUMP_ENV = Path(__file__).parent / "dump-env.sh"


def session_stack(pam: Pam, daemon: Daemon, env_file: Path, options: str = "") -> str:
    line = f"pam_usher socket={daemon.socket} {options}".strip()
    return pam.service(
        "usher-session",
        [
            f"auth required {line}",
            f"account required {line}",
            f"session required {line}",
            f"session required pam_exec.so {DUMP_ENV} {env_file}",
        ],
    )


def logged_in_pair(daemon: Daemon) -> str:
    """ann and bob registered; bob logged in and active. Returns bob's id."""
    for email in ("ann@example.com", "bob@example.com"):
        call(daemon, "register", {"email": email, "password": PASSWORD})
    bob = call(
        daemon, "login", {"credentials": {"type": "email_password", "email": "bob@example.com", "password": PASSWORD}}
    )
    return str(bob["user"]["id"])


@pytest.mark.parametrize("on_close", ["keep", "logout", "remove"])
def test_open_session_takes_the_seat_exports_the_environment_and_close_applies_on_close(
    pam: Pam, daemon: Daemon, on_close: str
) -> None:
    logged_in_pair(daemon)
    env_file = pam.directory / "env"
    service = session_stack(pam, daemon, env_file, f"on_close={on_close}")
    outcome = pam.run(
        service,
        "ann@example.com",
        ["authenticate", "acct_mgmt", "open_session", "close_session"],
        stdin=PASSWORD + "\n",
    )
    assert outcome.code == "PAM_SUCCESS", outcome
    users = {user["email"]: user for user in call(daemon, "list_users")["users"]}
    environment = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    assert environment["USHER_SOCKET"] == daemon.socket
    if on_close == "remove":
        assert "ann@example.com" not in users
        assert environment["USHER_USER"].startswith("u")
        return
    ann = users["ann@example.com"]
    assert environment == {"USHER_SOCKET": daemon.socket, "USHER_USER": ann["id"]}
    assert ann["state"] == ("logged_in" if on_close == "keep" else "logged_out")
    if on_close == "keep":
        # open_session made ann the seat's active user (auth alone did not).
        assert call(daemon, "current_user")["user"]["id"] == ann["id"]


def test_a_session_opened_by_another_process_finds_the_user_by_email(pam: Pam, daemon: Daemon) -> None:
    logged_in_pair(daemon)
    env_file = pam.directory / "env"
    service = session_stack(pam, daemon, env_file)
    assert pam.run(service, "ann@example.com", ["authenticate"], stdin=PASSWORD + "\n").code == "PAM_SUCCESS"
    # As sshd with privilege separation: the session stage in a process without the auth stage's data.
    outcome = pam.run(service, "ann@example.com", ["open_session", "close_session"])
    assert outcome.code == "PAM_SUCCESS", outcome
    ann = next(u for u in call(daemon, "list_users")["users"] if u["email"] == "ann@example.com")
    assert call(daemon, "current_user")["user"]["id"] == ann["id"]


def test_a_block_lease_makes_open_session_fail_naming_its_holder(pam: Pam, daemon: Daemon) -> None:
    bob = logged_in_pair(daemon)
    service = session_stack(pam, daemon, pam.directory / "env")
    with daemon.client() as holder:
        holder.call("inhibit", {"mode": "block", "who": "presenter", "why": "slides"})
        outcome = pam.run(service, "ann@example.com", ["authenticate", "open_session"], stdin=PASSWORD + "\n")
        assert outcome.code == "PAM_SESSION_ERR", outcome
        assert "presenter (slides)" in outcome.stderr
        assert call(daemon, "current_user")["user"]["id"] == bob


def test_chauthtok_changes_a_local_password_asking_the_new_one_twice(pam: Pam, daemon: Daemon) -> None:
    call(daemon, "register", {"email": "ann@example.com", "password": PASSWORD})
    line = f"pam_usher socket={daemon.socket}"
    service = pam.service("usher-passwd", [f"auth required {line}", f"password required {line}"])
    mismatch = pam.run(service, "ann@example.com", ["chauthtok"], stdin=f"{PASSWORD}\nnew secret 1\nnew secret 2\n")
    assert mismatch.code == "PAM_AUTHTOK_ERR", mismatch
    wrong_old = pam.run(service, "ann@example.com", ["chauthtok"], stdin="guess\nnew secret 1\nnew secret 1\n")
    assert wrong_old.code == "PAM_AUTHTOK_ERR", wrong_old
    changed = pam.run(service, "ann@example.com", ["chauthtok"], stdin=f"{PASSWORD}\nnew secret 1\nnew secret 1\n")
    assert changed.code == "PAM_SUCCESS", changed
    assert pam.run(service, "ann@example.com", ["authenticate"], stdin="new secret 1\n").code == "PAM_SUCCESS"
    assert pam.run(service, "ann@example.com", ["authenticate"], stdin=PASSWORD + "\n").code == "PAM_AUTH_ERR"
    assert "new secret" not in changed.syslog and PASSWORD not in changed.syslog


@pytest.mark.usherd_config('[unix_users]\nenabled = true\nuid_range = "60300-60399"\n')
def test_a_unix_user_usherd_serves_logs_in_by_its_unix_name(pam: Pam, daemon: Daemon) -> None:
    """Without domain=, a PAM user name that is not an email is the Unix name usherd gives an account
    ([unix_users]): `login bob` is bob@example.com, as the pam-auth-update profile has it."""
    call(daemon, "register", {"email": "bob@example.com", "password": PASSWORD})
    call(daemon, "login", {"credentials": {"type": "email_password", "email": "bob@example.com", "password": PASSWORD}})
    env_file = pam.directory / "env"
    service = session_stack(pam, daemon, env_file, "on_close=logout")
    outcome = pam.run(
        service, "bob", ["authenticate", "acct_mgmt", "open_session", "close_session"], stdin=PASSWORD + "\n"
    )
    assert outcome.code == "PAM_SUCCESS", outcome
    (bob,) = call(daemon, "list_users")["users"]
    assert env_file.read_text().splitlines() == [f"USHER_SOCKET={daemon.socket}", f"USHER_USER={bob['id']}"]
    assert bob["state"] == "logged_out"  # on_close=logout
    # A Unix name usherd does not serve (a local account's) is not usher's.
    assert pam.run(service, "root", ["authenticate"], stdin=PASSWORD + "\n").code == "PAM_USER_UNKNOWN"
    assert pam.run(service, "root", ["acct_mgmt"]).code == "PAM_USER_UNKNOWN"
