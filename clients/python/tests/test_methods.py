"""Every method the blocking Client wraps, against the real daemon."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
from datetime import datetime, timezone
from typing import Any

import pytest

import usher
from conftest import Daemon

PASSWORD = "correct horse"


def make_account(client: usher.Client, email: str) -> usher.User:
    client.register(email, PASSWORD)
    return client.login_email(email, PASSWORD).user


def test_hello_reports_the_daemon_and_this_process(client: usher.Client) -> None:
    hello = client.hello()
    assert hello.server == "usherd"
    assert hello.protocol == 1
    assert hello.peer.pid == os.getpid()
    assert hello.peer.uid == os.getuid()
    # The tests run as the daemon's own uid, which has every permission.
    assert set(hello.permissions) == {"read", "token", "manage"}
    # The program the daemon identified at this end of the connection: this Python.
    assert hello.program is not None and hello.program.identified
    assert hello.program.executable == os.path.realpath(sys.executable)


def test_providers_lists_the_local_provider(client: usher.Client) -> None:
    (provider,) = client.providers()
    assert provider.name == "local"
    assert provider.type == "local"
    assert provider.default
    assert "anonymous" in provider.credentials and "email_password" in provider.credentials


def test_register_and_log_in_with_email_and_password(client: usher.Client) -> None:
    registration = client.register("ann@example.com", PASSWORD)
    assert registration == usher.Registration(provider="local", email="ann@example.com")
    change = client.login_email("ann@example.com", PASSWORD)
    assert change.user.email == "ann@example.com"
    assert change.user.kind == "email_password"
    assert change.user.logged_in and change.user.active
    assert change.seat is None  # a device that names no seats
    assert isinstance(change.user.created_at, datetime) and change.user.created_at.tzinfo is not None


def test_anonymous_login_current_user_and_list_users(client: usher.Client) -> None:
    assert client.current_user() is None
    anonymous = client.login_anonymous()
    assert anonymous.user.kind == "anonymous"
    assert client.current_user() == client.list_users()[0]
    ann = make_account(client, "ann@example.com")
    users = client.list_users()
    assert [user.id for user in users] == [anonymous.user.id, ann.id]
    assert [user.active for user in users] == [False, True]
    current = client.current_user()
    assert current is not None and current.id == ann.id


def test_list_users_in_pages(client: usher.Client) -> None:
    ids = [client.login_anonymous().user.id]
    for index in range(3):
        ids.append(make_account(client, f"user{index}@example.com").id)
    first = client.list_users_page(limit=3)
    assert [user.id for user in first.users] == ids[:3]
    assert first.next is not None
    second = client.list_users_page(limit=3, after=first.next)
    assert [user.id for user in second.users] == ids[3:]
    assert second.next is None
    assert second.generation == first.generation


def test_switch_user_and_its_generation_check(client: usher.Client) -> None:
    ann = make_account(client, "ann@example.com")
    bob = make_account(client, "bob@example.com")
    change = client.switch_user(ann.id)
    assert change.user.id == ann.id and change.user.active
    current = client.current_user()
    assert current is not None and current.id == ann.id
    with pytest.raises(usher.Conflict):
        client.switch_user(bob.id, if_generation=change.generation - 1)
    assert client.switch_user(bob.id, if_generation=change.generation).generation == change.generation + 1


def test_logout_keeps_the_user_and_remove_user_forgets_it(client: usher.Client) -> None:
    ann = make_account(client, "ann@example.com")
    logout = client.logout()
    assert logout.user.id == ann.id and logout.user.state == "logged_out"
    assert logout.revoked
    assert client.current_user() is None
    assert [user.state for user in client.list_users()] == ["logged_out"]
    with pytest.raises(usher.UserLoggedOut):
        client.switch_user(ann.id)
    removal = client.remove_user(ann.id)
    assert removal.user_id == ann.id and removal.generation == logout.generation + 1
    assert client.list_users() == []


def test_access_token_with_min_valid_is_a_jwt_for_the_active_user(client: usher.Client) -> None:
    ann = make_account(client, "ann@example.com")
    token = client.access_token(min_valid=300)
    assert token.user_id == ann.id
    assert token.token_type == "Bearer"
    assert token.expires_in >= 300
    assert token.expires_at is not None and token.expires_at > datetime.now(timezone.utc)
    assert token.authorization == f"Bearer {token.access_token}"
    payload = token.access_token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["sub"] == ann.id and claims["email"] == "ann@example.com"
    # The key that signed it is among the daemon's public keys.
    header = token.access_token.split(".")[0]
    kid = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["kid"]
    assert kid in [key["kid"] for key in client.jwks()]
    # Secrets stay out of repr(), so that logging a result cannot log them.
    assert token.access_token not in repr(token)


def jwt_part(token: str, index: int) -> Any:
    part = token.split(".")[index]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_dpop_proof_is_not_supported_for_a_bearer_token(client: usher.Client) -> None:
    make_account(client, "ann@example.com")
    with pytest.raises(usher.NotSupported):
        client.dpop_proof("GET", "https://api.example.com/photos")


@pytest.mark.usherd_config('[providers.local]\ntype = "local"\ndpop = true\n')
def test_a_dpop_bound_token_and_its_proofs(client: usher.Client) -> None:
    ann = make_account(client, "ann@example.com")
    token = client.access_token()
    assert token.token_type == "DPoP" and token.authorization == f"DPoP {token.access_token}"
    proof = client.dpop_proof("POST", "https://api.example.com/photos?size=2", nonce="n-1")
    assert proof.user_id == ann.id and proof.access_token_expires_at == token.expires_at
    assert proof.header == f"DPoP: {proof.proof}" and proof.proof not in repr(proof)
    header, claims = jwt_part(proof.proof, 0), jwt_part(proof.proof, 1)
    assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
    assert claims["htm"] == "POST" and claims["htu"] == "https://api.example.com/photos" and claims["nonce"] == "n-1"
    # The token is bound to the proof's key: its cnf.jkt is the key's RFC 7638 thumbprint.
    jwk = header["jwk"]
    canonical = json.dumps({"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]}, separators=(",", ":"))
    thumbprint = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    assert jwt_part(token.access_token, 1)["cnf"]["jkt"] == thumbprint


@pytest.mark.usherd_config('[providers.local]\ntype = "local"\ndpop = true\n')
def test_a_narrowed_token_and_its_proof(client: usher.Client) -> None:
    ann = make_account(client, "ann@example.com")
    full = client.access_token()
    assert full.audience is None and full.scopes is None
    token = client.access_token(audience="https://bank.example", scopes=["pay", "balance"])
    assert token.user_id == ann.id and token.access_token != full.access_token
    assert token.audience == "https://bank.example" and token.scopes == ("balance", "pay")
    claims = jwt_part(token.access_token, 1)
    assert claims["aud"] == "https://bank.example" and claims["scope"] == "balance pay" and "email" not in claims
    assert claims["cnf"] == jwt_part(full.access_token, 1)["cnf"]
    # The proof for the narrowed token names it in ath.
    proof = client.dpop_proof(
        "GET", "https://bank.example/balance", audience="https://bank.example", scopes=["balance", "pay"]
    )
    ath = base64.urlsafe_b64encode(hashlib.sha256(token.access_token.encode()).digest()).rstrip(b"=").decode()
    assert jwt_part(proof.proof, 1)["ath"] == ath
    with pytest.raises(usher.InvalidParams):
        client.access_token(scopes=[])


def test_min_valid_is_sent_to_the_daemon(client: usher.Client) -> None:
    make_account(client, "ann@example.com")
    # The daemon checks the value: a negative one proves the parameter reached it.
    with pytest.raises(usher.InvalidParams):
        client.access_token(min_valid=-1)


def test_refresh_gives_a_new_expiry(client: usher.Client) -> None:
    ann = make_account(client, "ann@example.com")
    before = client.access_token().access_token
    refreshed = client.refresh()
    assert refreshed.user_id == ann.id
    assert refreshed.access_token_expires_at is not None
    assert client.access_token().access_token != before
    assert client.refresh(user_id=ann.id).user_id == ann.id


def test_api_keys_create_list_log_in_and_delete(client: usher.Client) -> None:
    ann = make_account(client, "ann@example.com")
    key = client.create_api_key("laptop")
    assert key.user_id == ann.id and key.name == "laptop" and key.key
    assert key.key not in repr(key)
    assert [info.name for info in client.list_api_keys()] == ["laptop"]
    client.logout()
    assert client.login_api_key(key.key).user.id == ann.id
    client.delete_api_key("laptop", user_id=ann.id)
    assert client.list_api_keys(user_id=ann.id) == []
    with pytest.raises(usher.ApiKeyNotFound):
        client.delete_api_key("laptop")
    client.logout()
    with pytest.raises(usher.InvalidCredentials):
        client.login_api_key(key.key)


def test_change_password(client: usher.Client) -> None:
    client.register("ann@example.com", PASSWORD)
    assert client.change_password("ann@example.com", PASSWORD, "battery staple").email == "ann@example.com"
    with pytest.raises(usher.InvalidCredentials):
        client.login_email("ann@example.com", PASSWORD)
    assert client.login_email("ann@example.com", "battery staple").user.email == "ann@example.com"


def test_status_counts_users(client: usher.Client) -> None:
    anonymous = client.login_anonymous().user
    make_account(client, "ann@example.com")
    client.logout()
    status = client.status()
    assert (status.users_logged_in, status.users_logged_out) == (1, 1)
    assert status.active_user_id == anonymous.id
    assert status.connections >= 1
    assert status.version == client.hello().version


@pytest.mark.usherd_config(
    '[providers.local]\ntype = "local"\n[seats]\nnames = ["driver", "rear"]\ndefault = "driver"\n'
)
def test_seats_each_have_their_active_user(client: usher.Client) -> None:
    ann = make_account(client, "ann@example.com")
    client.register("bob@example.com", PASSWORD)
    bob = client.login_email("bob@example.com", PASSWORD, seat="rear")
    assert bob.seat == "rear"
    seats = client.list_seats()
    assert seats.default_seat == "driver"
    assert {seat.name: seat.user_id for seat in seats.seats} == {"driver": ann.id, "rear": bob.user.id}
    current = client.current_user(seat="rear")
    assert current is not None and current.id == bob.user.id
    assert client.access_token(seat="rear").user_id == bob.user.id
    with pytest.raises(usher.UserActiveElsewhere) as refused:
        client.switch_user(ann.id, seat="rear")
    assert refused.value.seat == "driver"
    assert client.switch_user(ann.id, seat="rear", move=True).seat == "rear"
    assert {seat.name: seat.user_id for seat in client.list_seats().seats}["rear"] == ann.id


def test_call_reaches_any_method_by_name(client: usher.Client) -> None:
    result = client.call("hello")
    assert result["server"] == "usherd"
    client.call("login", {"credentials": {"type": "anonymous"}})
    assert client.call("current_user")["user"]["kind"] == "anonymous"
    with pytest.raises(usher.UnknownMethod) as refused:
        client.call("no_such_method")
    assert refused.value.code == "unknown_method"


def test_the_client_connects_again_after_a_restart(daemon: Daemon) -> None:
    with daemon.client() as client:
        user = client.login_anonymous().user
        daemon.restart()
        # The old connection is gone; holding no lease, the client opens a new one for the next request.
        current = client.current_user()
        assert current is not None and current.id == user.id
