"""Every method of io.usher.Session called over the Varlink socket, each reply checked field by field against the
definition the daemon serves; and the rules that make a Varlink call the same request as a line: permissions,
ordering, oneway, leases that live as long as their connection."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import pytest
import varlink

from conftest import HANG_GUARD, Checked, Definition, Raw, address, varlink_path

PASSWORD = "correct horse"


def test_every_method_answers_as_the_definition_says(checked: Checked, definition: Definition) -> None:
    call, fails = checked.call, checked.fails
    hello = call("Hello")
    assert hello["peer"]["pid"] == os.getpid() and "manage" in hello["permissions"]
    # The program is identified on this socket as on the main one (docs/least-privilege.md).
    assert hello["program"]["identified"] is True
    assert hello["program"]["executable"] == os.path.realpath(sys.executable)
    assert [provider["name"] for provider in call("Providers")["providers"]] == ["local"]
    assert call("Jwks")["keys"][0]["alg"] == "ES256"
    assert call("Status")["users"] == {"logged_in": 0, "logged_out": 0}
    assert call("ListSeats")["default_seat"] == "seat0"
    assert call("CurrentUser")["user"] is None

    # Accounts and logins.
    assert call("Register", email="ann@example.com", password=PASSWORD)["email"] == "ann@example.com"
    fails("Register", "AccountExists", email="ann@example.com", password=PASSWORD)
    guest = call("Login", credentials={"type": "anonymous"})["user"]
    ann = call("Login", credentials={"type": "email_password", "email": "ann@example.com", "password": PASSWORD})["user"]
    assert ann["active"] and ann["state"] == "logged_in" and ann["identities"][0]["kind"] == "email_password"
    fails("Login", "InvalidCredentials", credentials={"type": "email_password", "email": "ann@example.com", "password": "x" * 8})
    call("ChangePassword", email="ann@example.com", old_password=PASSWORD, new_password=PASSWORD + "!")
    call("ChangePassword", email="ann@example.com", old_password=PASSWORD + "!", new_password=PASSWORD)
    fails("ConfirmUser", "InvalidToken", token="not-a-token")
    fails("ResendConfirmation", "UnsupportedCredentials", email="ann@example.com")
    fails("RequestPasswordReset", "UnsupportedCredentials", email="ann@example.com")
    fails("CompletePasswordReset", "InvalidToken", token="not-a-token", new_password=PASSWORD)
    fails("LoginBegin", "UnsupportedCredentials")
    fails("LoginWait", "ExpiredToken", login_id="no-such-login")

    # Users.
    listed = call("ListUsers")
    assert [user["id"] for user in listed["users"]] == [guest["id"], ann["id"]]
    page = call("ListUsers", limit=1)
    assert [user["id"] for user in page["users"]] == [guest["id"]] and page["next"]
    assert call("CurrentUser")["user"]["id"] == ann["id"]
    assert call("ListIdentities") == {"user_id": ann["id"], "identities": ann["identities"]}
    fails("ListIdentities", "UserNotFound", user_id="u_nobody")
    assert call("SwitchUser", user_id=guest["id"])["user"]["id"] == guest["id"]
    fails("SwitchUser", "UserNotFound", user_id="u_nobody")
    fails("SwitchUser", "Conflict", user_id=ann["id"], if_generation=1)
    assert call("SwitchUser", user_id=ann["id"])["user"]["active"]

    # Tokens and profiles.
    token = call("AccessToken", min_valid=300)
    assert token["user_id"] == ann["id"] and token["token_type"] == "Bearer" and token["expires_in"] >= 300
    narrowed = call("AccessToken", audience="https://bank.example", scopes=["pay", "balance"])
    assert narrowed["audience"] == "https://bank.example" and narrowed["scopes"] == ["balance", "pay"]
    assert narrowed["access_token"] != token["access_token"]
    fails("DpopProof", "NotSupported", htm="GET", htu="https://api.example.com/photos")
    assert call("Refresh")["user_id"] == ann["id"]
    assert call("UpdateProfile", name="Ann Example", locale="en")["user"]["profile"]["name"] == "Ann Example"
    assert call("RefreshProfile")["user"]["profile"]["locale"] == "en"
    key = call("CreateApiKey", name="kiosk")
    assert key["key"] and key["user_id"] == ann["id"]
    assert [k["name"] for k in call("ListApiKeys")["api_keys"]] == ["kiosk"]
    assert call("DeleteApiKey", name="kiosk")["name"] == "kiosk"
    fails("DeleteApiKey", "ApiKeyNotFound", name="kiosk")

    # Leases (this connection's; more in their own tests).
    lease = call("Inhibit", mode="block", who="test", why="checking the definition")
    assert [held["lease"] for held in call("ListLeases")["leases"]] == [lease["lease"]]
    holders = fails("SwitchUser", "Inhibited", user_id=guest["id"])["holders"]
    assert holders[0]["lease"] == lease["lease"] and holders[0]["pid"] == os.getpid()
    assert call("Release", lease=lease["lease"])["released"] is True
    fails("Release", "LeaseNotFound", lease=lease["lease"])

    # The seat's lock: the PIN is checked by usherd alone.
    assert call("SetPin", pin="4821")["user_id"] == ann["id"]
    assert call("LockSeat") == {"seat": "seat0", "locked": True, "by": "usherd"}
    assert call("CurrentUser")["locked"] is True
    assert fails("AccessToken", "SeatLocked")["seat"] == "seat0"
    fails("Unlock", "PinIncorrect", pin="0000")
    assert call("Unlock", pin="4821")["locked"] is False

    # Linked identities: the guest signs up, keeps its id, and drops its anonymous identity.
    call("Register", email="guest@example.com", password=PASSWORD)
    linked = call(
        "LinkCredentials",
        user_id=guest["id"],
        credentials={"type": "email_password", "email": "guest@example.com", "password": PASSWORD},
    )["user"]
    assert linked["id"] == guest["id"] and len(linked["identities"]) == 2
    anonymous = next(identity for identity in linked["identities"] if identity["kind"] == "anonymous")
    fails("LinkCredentials", "InvalidLink", user_id=guest["id"], credentials={"type": "anonymous"})
    unlinked = call("UnlinkIdentity", user_id=guest["id"], provider="local", subject=anonymous["subject"])
    assert unlinked["user"]["id"] == guest["id"] and unlinked["removed"] is False

    # pam_usher's: a login for the PAM user only, not taking the seat; a session bound to it; the account's status.
    fails(
        "Login",
        "IdentityMismatch",
        credentials={"type": "email_password", "email": "guest@example.com", "password": PASSWORD},
        expect_email="ann@example.com",
    )
    again = call(
        "Login",
        credentials={"type": "email_password", "email": "ann@example.com", "password": PASSWORD},
        expect_email="ann@example.com",
        activate=False,
    )
    assert again["user"]["id"] == ann["id"]
    opened = call("OpenSession", user="ann@example.com", logind_session="c1", service="login")
    assert opened["binding"].startswith("b_") and opened["user"]["id"] == ann["id"]
    status = call("UserStatus", email="ANN@example.com")
    assert status["status"] == "logged_in" and status["user_id"] == ann["id"]
    assert call("CloseSession", binding=opened["binding"], on_close="keep")["user_id"] == ann["id"]
    closed_again = checked.raw.call("io.usher.Session.CloseSession", binding=opened["binding"])
    assert closed_again == {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": "binding"}}

    # Logout, removal, deletion, reset.
    assert call("Logout", user_id=guest["id"])["user"]["state"] == "logged_out"
    reset = call("ResetPassword", email="ann@example.com", new_password=PASSWORD + "?")
    assert reset["logged_out"] == [ann["id"]]
    fails("AccessToken", "NoActiveUser")
    call("Login", credentials={"type": "email_password", "email": "ann@example.com", "password": PASSWORD + "?"})
    deleted = call("DeleteUser", user_id=ann["id"])
    assert deleted["user_id"] == ann["id"] and deleted["deleted"][0]["provider"] == "local"
    assert call("RemoveUser", user_id=guest["id"])["user_id"] == guest["id"]
    assert call("ListUsers")["users"] == []

    # Subscribe is a streaming call: without "more" it is refused as the specification says.
    checked.raw.send({"method": "io.usher.Session.Subscribe"})
    assert checked.raw.receive() == {"error": "org.varlink.service.ExpectedMore", "parameters": {}}
    checked.called.add("Subscribe")
    assert checked.called == set(definition.methods())


def test_subscribe_streams_events_as_replies(daemon: Any, session: Any, definition: Definition) -> None:
    first = session.Login(credentials={"type": "anonymous"})["user"]
    with varlink.Client(address=address(daemon)) as other, other.open("io.usher.Session") as watcher:
        replies = watcher.Subscribe(events=["active_user_changed", "user_logged_in"], _more=True)
        subscribed = next(replies)
        assert sorted(subscribed["subscribed"]) == ["active_user_changed", "user_logged_in"]
        session.Register(email="ann@example.com", password=PASSWORD)
        ann = session.Login(credentials={"type": "email_password", "email": "ann@example.com", "password": PASSWORD})
        logged_in = next(replies)
        definition.check_reply("Subscribe", logged_in)
        assert logged_in["event"] == "user_logged_in" and logged_in["data"]["user"]["id"] == ann["user"]["id"]
        changed = next(replies)
        assert changed["event"] == "active_user_changed"
        assert changed["data"]["user_id"] == ann["user"]["id"] and changed["data"]["previous_user_id"] == first["id"]
        assert changed["generation"] == ann["generation"]


def test_calls_are_answered_in_order_and_oneway_gets_no_reply(session: Any, raw: Raw) -> None:
    guest = session.Login(credentials={"type": "anonymous"})["user"]
    session.Register(email="ann@example.com", password=PASSWORD)
    session.Login(credentials={"type": "email_password", "email": "ann@example.com", "password": PASSWORD})
    # Pipelined: a change that needs the registry, then reads that are answered at once, in the order sent.
    raw.send({"method": "io.usher.Session.SwitchUser", "parameters": {"user_id": guest["id"]}, "oneway": True})
    raw.send({"method": "io.usher.Session.CurrentUser"})
    raw.send({"method": "io.usher.Session.Status"})
    current = raw.receive()
    assert current is not None and current["parameters"]["user"]["id"] == guest["id"]
    status = raw.receive()
    assert status is not None and "uptime_seconds" in status["parameters"]


def test_a_lease_lives_as_long_as_its_varlink_connection(daemon: Any, session: Any) -> None:
    guest = session.Login(credentials={"type": "anonymous"})["user"]
    session.Register(email="ann@example.com", password=PASSWORD)
    session.Login(credentials={"type": "email_password", "email": "ann@example.com", "password": PASSWORD})
    holder = Raw(varlink_path(daemon))
    lease = holder.call("io.usher.Session.Inhibit", mode="block", who="payment", why="card payment")["parameters"]
    try:
        session.SwitchUser(user_id=guest["id"])
    except varlink.VarlinkError as refused:
        assert refused.error() == "io.usher.Session.Inhibited"
        assert refused.parameters()["holders"][0]["lease"] == lease["lease"]
    else:
        raise AssertionError("a switch went through a block lease")
    holder.close()
    # The lease ends when the daemon sees the connection close: each ListLeases waits for the daemon's answer, which
    # says whether it has yet; the deadline is a hang guard only.
    deadline = time.monotonic() + HANG_GUARD
    while session.ListLeases()["leases"]:
        assert time.monotonic() < deadline, "the lease outlived its connection"
    assert session.SwitchUser(user_id=guest["id"])["user"]["id"] == guest["id"]


def test_inhibit_with_more_streams_the_leases_events(daemon: Any, session: Any, definition: Definition) -> None:
    guest = session.Login(credentials={"type": "anonymous"})["user"]
    session.Register(email="ann@example.com", password=PASSWORD)
    session.Login(credentials={"type": "email_password", "email": "ann@example.com", "password": PASSWORD})
    holder = Raw(varlink_path(daemon))
    holder.send(
        {
            "method": "io.usher.Session.Inhibit",
            "parameters": {"mode": "delay", "who": "player", "why": "saving"},
            "more": True,
        }
    )
    first = holder.receive()
    assert first is not None and first.get("continues") is True
    definition.check_reply("Inhibit", first["parameters"])
    switcher = Raw(varlink_path(daemon))
    switcher.send({"method": "io.usher.Session.SwitchUser", "parameters": {"user_id": guest["id"]}})
    pending = holder.receive()
    assert pending is not None and pending.get("continues") is True
    definition.check_reply("Inhibit", pending["parameters"])
    assert pending["parameters"]["event"] == "switch_pending"
    assert pending["parameters"]["data"]["user_id"] == guest["id"]
    # Closing the connection releases the lease: the switch goes through at once, before its deadline.
    holder.close()
    switched = switcher.receive()
    assert switched is not None and switched["parameters"]["user"]["id"] == guest["id"], switched
    switcher.close()


@pytest.mark.usherd_config(
    '[daemon]\nsocket_mode = "0666"\n[providers.local]\ntype = "local"\n[[access.rule]]\nuser = "nobody"\nallow = ["read"]\n'
)
def test_the_access_policy_applies_to_varlink_calls(daemon: Any) -> None:
    """A peer of another uid gets what the rules give that uid: here read, not manage."""
    # The socket's directory is the test's own (0700): let the other uid reach the socket.
    os.chmod(os.path.dirname(varlink_path(daemon)), 0o755)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.setgid(65534)
            os.setuid(65534)
            connection = Raw(varlink_path(daemon))
            replies: Any = [
                connection.call("io.usher.Session.Hello"),
                connection.call("io.usher.Session.CurrentUser"),
                connection.call("io.usher.Session.Login", credentials={"type": "anonymous"}),
            ]
        except BaseException as error:
            replies = {"failed": repr(error)}
        finally:
            os.write(write_end, json.dumps(replies).encode())
            os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(child, 0)
    replies = json.loads(data)
    assert isinstance(replies, list), replies
    hello, current, login = replies
    assert hello["parameters"]["peer"]["uid"] == 65534 and hello["parameters"]["permissions"] == ["read"]
    assert current["parameters"]["user"] is None
    assert login["error"] == "io.usher.Session.PermissionDenied"
    assert "manage" in login["parameters"]["message"]


@pytest.mark.usherd_config('[providers.local]\ntype = "local"\ndpop = true\n')
def test_a_dpop_bound_session_answers_proofs(session: Any, definition: Definition) -> None:
    import base64

    session.Login(credentials={"type": "anonymous"})
    token = session.AccessToken()
    assert token["token_type"] == "DPoP"
    answer = session.DpopProof(htm="POST", htu="https://api.example.com/photos?size=2")
    definition.check_reply("DpopProof", answer)
    header, claims = (
        json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))) for part in answer["proof"].split(".")[:2]
    )
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256" and "d" not in header["jwk"]
    assert claims["htm"] == "POST" and claims["htu"] == "https://api.example.com/photos"
