"""The auth and account stages: every return code of issue 37, with the password typed through the conversation or
taken from an earlier module."""

from __future__ import annotations

import re
from typing import Any

import pytest

from conftest import Daemon, Pam

PASSWORD = "correct horse 42"


def call(daemon: Daemon, method: str, params: dict[str, Any] | None = None) -> Any:
    with daemon.client() as client:
        return client.call(method, params or {})


def usher_stack(pam: Pam, daemon: Daemon, options: str = "", name: str = "usher-test") -> str:
    line = f"pam_usher socket={daemon.socket} {options}".strip()
    return pam.service(
        name,
        [f"auth required {line}", f"account required {line}", f"session required {line}", f"password required {line}"],
    )


def test_the_right_password_logs_in_without_taking_the_seat(pam: Pam, daemon: Daemon) -> None:
    call(daemon, "register", {"email": "ann@example.com", "password": PASSWORD})
    call(daemon, "register", {"email": "bob@example.com", "password": PASSWORD})
    bob = call(
        daemon,
        "login",
        {"credentials": {"type": "email_password", "email": "bob@example.com", "password": PASSWORD}},
    )
    service = usher_stack(pam, daemon, "debug")
    outcome = pam.run(service, "ann@example.com", ["authenticate", "acct_mgmt"], stdin=PASSWORD + "\n")
    assert outcome.code == "PAM_SUCCESS", outcome
    users = {user["email"]: user for user in call(daemon, "list_users")["users"]}
    assert users["ann@example.com"]["state"] == "logged_in"
    # Like `su ann` in bob's session: bob stays the seat's active user.
    assert call(daemon, "current_user")["user"]["id"] == bob["user"]["id"]
    # Never a secret in the module's log, even with debug.
    assert "ann@example.com" in outcome.syslog and PASSWORD not in outcome.syslog
    assert PASSWORD not in daemon.log


def test_domain_makes_the_pam_user_the_local_part(pam: Pam, daemon: Daemon) -> None:
    call(daemon, "register", {"email": "ann@example.com", "password": PASSWORD})
    service = usher_stack(pam, daemon, "domain=example.com")
    assert pam.run(service, "ann", ["authenticate", "acct_mgmt"], stdin=PASSWORD + "\n").code == "PAM_SUCCESS"
    assert pam.run(service, "ann@example.com", ["authenticate"], stdin=PASSWORD + "\n").code == "PAM_USER_UNKNOWN"


def test_a_wrong_password_is_an_auth_error_counted_by_the_throttle(pam: Pam, daemon: Daemon) -> None:
    call(daemon, "register", {"email": "ann@example.com", "password": PASSWORD})
    service = usher_stack(pam, daemon)
    call(daemon, "login", {"credentials": {"type": "email_password", "email": "ann@example.com", "password": PASSWORD}})
    outcome = pam.run(service, "ann@example.com", ["authenticate"], stdin="guess\n")
    assert outcome.code == "PAM_AUTH_ERR", outcome
    assert "outcome=invalid_credentials" in daemon.log or "invalid_credentials" in daemon.log


@pytest.mark.usherd_config('[login_throttle]\naccount_free_failures = 0\nfirst_delay = "1h"\nmax_delay = "1h"\n')
def test_a_throttled_account_is_maxtries_with_the_wait_shown(pam: Pam, daemon: Daemon) -> None:
    call(daemon, "register", {"email": "ann@example.com", "password": PASSWORD})
    call(daemon, "login", {"credentials": {"type": "email_password", "email": "ann@example.com", "password": PASSWORD}})
    service = usher_stack(pam, daemon)
    assert pam.run(service, "ann@example.com", ["authenticate"], stdin="guess\n").code == "PAM_AUTH_ERR"
    outcome = pam.run(service, "ann@example.com", ["authenticate"], stdin=PASSWORD + "\n")
    assert outcome.code == "PAM_MAXTRIES", outcome
    # The wait the throttle gave (an hour at most: first_delay), shown to the person.
    wait = re.search(r"try again in (\d+) seconds", outcome.stderr + outcome.stdout)
    assert wait and 0 < int(wait[1]) <= 3600, outcome


@pytest.mark.usherd_config('[login_throttle]\naccount_free_failures = 0\nfirst_delay = "1h"\nmax_delay = "1h"\n')
def test_pam_silent_keeps_the_wait_from_the_person_not_the_outcome(pam: Pam, daemon: Daemon) -> None:
    call(daemon, "register", {"email": "ann@example.com", "password": PASSWORD})
    call(daemon, "login", {"credentials": {"type": "email_password", "email": "ann@example.com", "password": PASSWORD}})
    service = usher_stack(pam, daemon)
    assert pam.run(service, "ann@example.com", ["authenticate"], stdin="guess\n").code == "PAM_AUTH_ERR"
    outcome = pam.run(service, "ann@example.com", ["authenticate(PAM_SILENT)"], stdin=PASSWORD + "\n")
    assert outcome.code == "PAM_MAXTRIES", outcome
    assert "try again in" not in outcome.stderr + outcome.stdout, outcome


def test_an_account_usherd_does_not_know_is_user_unknown(pam: Pam, daemon: Daemon) -> None:
    service = usher_stack(pam, daemon)
    assert pam.run(service, "nobody@example.com", ["authenticate"], stdin=PASSWORD + "\n").code == "PAM_USER_UNKNOWN"
    assert pam.run(service, "nobody@example.com", ["acct_mgmt"]).code == "PAM_USER_UNKNOWN"


def test_use_first_pass_takes_the_password_of_an_earlier_module(pam: Pam, daemon: Daemon) -> None:
    call(daemon, "register", {"email": "ann@example.com", "password": PASSWORD})
    for option in ("use_first_pass", "try_first_pass"):
        service = pam.service(
            f"first-{option}",
            ["auth required wrapper:pam_set_items.so", f"auth required pam_usher socket={daemon.socket} {option}"],
        )
        # Nothing on stdin: the password must come from PAM_AUTHTOK, set by pam_set_items.
        outcome = pam.run(service, "ann@example.com", ["authenticate"], env={"PAM_AUTHTOK": PASSWORD})
        assert outcome.code == "PAM_SUCCESS", outcome
    service = pam.service(
        "first-wrong",
        ["auth required wrapper:pam_set_items.so", f"auth required pam_usher socket={daemon.socket} use_first_pass"],
    )
    assert pam.run(service, "ann@example.com", ["authenticate"], env={"PAM_AUTHTOK": "nope"}).code == "PAM_AUTH_ERR"


def test_the_account_stage_says_whether_the_user_is_logged_in(pam: Pam, daemon: Daemon) -> None:
    call(daemon, "register", {"email": "ann@example.com", "password": PASSWORD})
    service = usher_stack(pam, daemon)
    assert pam.run(service, "ann@example.com", ["authenticate"], stdin=PASSWORD + "\n").code == "PAM_SUCCESS"
    assert pam.run(service, "ann@example.com", ["acct_mgmt"]).code == "PAM_SUCCESS"
    # Its session ended (here: logged out; a revocation or an expired refresh token end it the same way).
    (ann,) = call(daemon, "list_users")["users"]
    call(daemon, "logout", {"user_id": ann["id"]})
    outcome = pam.run(service, "ann@example.com", ["acct_mgmt"])
    assert outcome.code == "PAM_ACCT_EXPIRED", outcome
    assert "requested" in outcome.syslog
    # A later auth logs it in again.
    assert pam.run(service, "ann@example.com", ["authenticate", "acct_mgmt"], stdin=PASSWORD + "\n").code == (
        "PAM_SUCCESS"
    )


def test_unknown_arguments_are_logged_and_ignored(pam: Pam, daemon: Daemon) -> None:
    call(daemon, "register", {"email": "ann@example.com", "password": PASSWORD})
    service = usher_stack(pam, daemon, "frobnicate login=sideways timeout=-3")
    outcome = pam.run(service, "ann@example.com", ["authenticate"], stdin=PASSWORD + "\n")
    assert outcome.code == "PAM_SUCCESS", outcome
    assert "frobnicate" in outcome.syslog and "timeout=-3" in outcome.syslog
