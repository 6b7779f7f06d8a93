"""``io.systemd.UserDatabase`` (``[unix_users]``) through the PyPI ``varlink`` client, another client this project did
not write: it reads the interface the daemon serves on the user database socket, checks each call's parameters
against it, and decodes the replies, streamed ones (``more``) included."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
import varlink

from conftest import LOCAL_PROVIDER, address

SERVICE = "io.usher.Users"
CONFIG = LOCAL_PROVIDER + '[unix_users]\nenabled = true\nuid_range = "60300-60399"\ngroups = ["audio", "video"]\n'
PASSWORD = "correct horse"


def userdb_address(daemon: Any) -> str:
    return "unix:" + str(Path(daemon.socket).parent / SERVICE)


@pytest.fixture
def userdb(daemon: Any) -> Iterator[Any]:
    with varlink.Client(address=userdb_address(daemon)) as client:
        with client.open("io.systemd.UserDatabase") as opened:
            yield opened


def log_in(daemon: Any, *emails: str) -> None:
    with varlink.Client(address=address(daemon)) as client, client.open("io.usher.Session") as session:
        for email in emails:
            session.Register(email=email, password=PASSWORD)
            session.Login(credentials={"type": "email_password", "email": email, "password": PASSWORD})


def error_of(call: Any, **parameters: Any) -> str:
    with pytest.raises(varlink.VarlinkError) as raised:
        call(**parameters)
    name = raised.value.error()
    assert isinstance(name, str)
    return name


@pytest.mark.usherd_config(CONFIG)
def test_records_by_name_and_uid(daemon: Any, userdb: Any) -> None:
    log_in(daemon, "ann@example.com", "Ann@example.org")
    reply = userdb.GetUserRecord(userName="ann", service=SERVICE)
    assert reply["incomplete"] is False
    record = reply["record"]
    assert record["userName"] == "ann" and record["uid"] == 60300 and record["gid"] == 60300
    assert record["homeDirectory"] == "/home/ann" and record["shell"] == "/bin/bash"
    assert record["memberOf"] == ["audio", "video"] and record["disposition"] == "regular"
    assert record["service"] == SERVICE
    assert userdb.GetUserRecord(uid=60301, service=SERVICE)["record"]["userName"] == "ann2"
    assert userdb.GetGroupRecord(groupName="ann2", service=SERVICE)["record"]["gid"] == 60301

    assert error_of(userdb.GetUserRecord, userName="zed", service=SERVICE) == "io.systemd.UserDatabase.NoRecordFound"
    assert error_of(userdb.GetUserRecord, userName="ann", service="io.systemd.Home") == (
        "io.systemd.UserDatabase.BadService"
    )
    assert error_of(userdb.GetUserRecord, userName="ann", uid=60301, service=SERVICE) == (
        "io.systemd.UserDatabase.ConflictingRecordFound"
    )


@pytest.mark.usherd_config(CONFIG)
def test_enumerations_stream_with_more(daemon: Any, userdb: Any) -> None:
    log_in(daemon, "bo@example.com", "cy@example.com")
    users = [reply["record"]["userName"] for reply in userdb.GetUserRecord(service=SERVICE, _more=True)]
    assert users == ["bo", "cy"]
    groups = [reply["record"]["groupName"] for reply in userdb.GetGroupRecord(service=SERVICE, _more=True)]
    assert groups == ["bo", "cy"]
    replies = userdb.GetMemberships(groupName="video", service=SERVICE, _more=True)
    memberships = [(reply["userName"], reply["groupName"]) for reply in replies]
    assert memberships == [("bo", "video"), ("cy", "video")]
    assert userdb.GetMemberships(userName="cy", groupName="audio", service=SERVICE) == {
        "userName": "cy",
        "groupName": "audio",
    }


@pytest.mark.usherd_config(CONFIG)
def test_the_socket_describes_its_interface(daemon: Any) -> None:
    with varlink.Client(address=userdb_address(daemon)) as client:
        info = client.get_interfaces()
        assert info == ["org.varlink.service", "io.systemd.UserDatabase"]
        methods = client.get_interface("io.systemd.UserDatabase").members
        assert {"GetUserRecord", "GetGroupRecord", "GetMemberships", "NoRecordFound", "BadService"} <= set(methods)
