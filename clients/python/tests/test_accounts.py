"""The account lifecycle through the Python client: a guest links an account, unlinks, and deletes it."""

from __future__ import annotations

import pytest

import usher

PASSWORD = "correct horse"


def email(address: str) -> dict[str, str]:
    return {"type": "email_password", "email": address, "password": PASSWORD}


def test_a_guest_links_an_account_and_keeps_its_id(client: usher.Client) -> None:
    client.register("kim@example.com", PASSWORD)
    guest = client.login_anonymous().user
    assert guest.anonymous and [identity.kind for identity in guest.identities] == ["anonymous"]
    linked = client.link_credentials(email("kim@example.com")).user
    assert linked.id == guest.id
    assert not linked.anonymous
    assert [identity.kind for identity in linked.identities] == ["email_password", "anonymous"]
    # Logging out keeps it; logging in with the email finds the same user.
    client.logout()
    assert client.login_email("kim@example.com", PASSWORD).user.id == guest.id

    with pytest.raises(usher.InvalidLink):
        client.link_credentials({"type": "anonymous"})
    client.register("lee@example.com", PASSWORD)
    lee = client.login_email("lee@example.com", PASSWORD).user
    with pytest.raises(usher.IdentityInUse) as refused:
        client.link_credentials(email("kim@example.com"), user_id=lee.id)
    assert refused.value.code == "identity_in_use"

    anonymous = linked.identities[1]
    unlinked = client.unlink_identity(guest.id, anonymous.provider, anonymous.subject)
    assert not unlinked.removed and unlinked.user is not None
    assert [identity.kind for identity in unlinked.user.identities] == ["email_password"]
    with pytest.raises(usher.InvalidLink):
        client.unlink_identity(guest.id, "local", unlinked.user.identities[0].subject)


def test_delete_user_deletes_the_account(client: usher.Client) -> None:
    client.register("kim@example.com", PASSWORD)
    kim = client.login_email("kim@example.com", PASSWORD).user
    deletion = client.delete_user(kim.id)
    assert deletion.user_id == kim.id
    assert [identity.kind for identity in deletion.deleted] == ["email_password"]
    with pytest.raises(usher.InvalidCredentials):
        client.login_email("kim@example.com", PASSWORD)
    assert client.list_users() == []


def test_an_administrator_resets_a_password_and_the_sessions_end(client: usher.Client) -> None:
    client.register("kim@example.com", PASSWORD)
    kim = client.login_email("kim@example.com", PASSWORD).user
    reset = client.reset_password("kim@example.com", "battery staple")
    assert reset.logged_out == (kim.id,)
    with pytest.raises(usher.InvalidCredentials):
        client.login_email("kim@example.com", PASSWORD)
    assert client.login_email("kim@example.com", "battery staple").user.id == kim.id
    # Without a reset hook, a self-service reset is not offered; a wrong token is refused either way.
    with pytest.raises(usher.UnsupportedCredentials):
        client.request_password_reset("kim@example.com")
    with pytest.raises(usher.InvalidToken):
        client.confirm_user("not-a-token")


def test_a_local_account_edits_its_profile(client: usher.Client) -> None:
    client.register("kim@example.com", PASSWORD)
    kim = client.login_email("kim@example.com", PASSWORD).user
    assert kim.profile.get("email") == "kim@example.com"
    changed = client.update_profile(name="Kim Lee", locale="en-GB").user
    assert changed.profile["name"] == "Kim Lee" and changed.profile["locale"] == "en-GB"
    assert client.update_profile(remove=["locale"]).user.profile.get("locale") is None
    assert client.refresh_profile().user.profile["name"] == "Kim Lee"
    with pytest.raises(usher.InvalidParams):
        client.update_profile(picture="http://example.com/not-https.png")


def test_users_stay_hashable_with_their_claims(client: usher.Client) -> None:
    kim = client.login_anonymous().user
    assert kim in {kim}
