"""The interface itself: served as the file in the repository says, parsed by a client this project did not write,
and declaring exactly the protocol's methods and error codes."""

from __future__ import annotations

import re
from typing import Any

import varlink

from conftest import INTERFACE_FILE, REPOSITORY, Definition


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def documented(section: str) -> list[str]:
    """The names in the first column of the first table of docs/protocol.md under ``## section``."""
    text = (REPOSITORY / "docs" / "protocol.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    table = body[body.index("\n|") :].split("\n\n", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", table, re.M)


def test_get_info_names_the_service_and_both_interfaces(client: varlink.Client, daemon: Any) -> None:
    with client.open("org.varlink.service") as service:
        info = service.GetInfo()
    assert info["vendor"] == "usher" and info["product"] == "usherd"
    assert info["version"] == (REPOSITORY / "VERSION").read_text().strip()
    assert sorted(info["interfaces"]) == ["io.usher.Session", "org.varlink.service"]


def test_the_served_definition_is_the_shipped_file_byte_for_byte(client: varlink.Client) -> None:
    served = client.get_interface("io.usher.Session").get_description()
    assert served == INTERFACE_FILE.read_text()
    with client.open("org.varlink.service") as service:
        own = service.GetInterfaceDescription("org.varlink.service")["description"]
    # org.varlink.service as the specification defines it: its methods and errors.
    parsed = Definition(own).interface
    assert parsed.name == "org.varlink.service"
    assert set(parsed.members) == {
        "GetInfo",
        "GetInterfaceDescription",
        "InterfaceNotFound",
        "MethodNotFound",
        "MethodNotImplemented",
        "InvalidParameter",
        "PermissionDenied",
        "ExpectedMore",
    }


def test_an_unknown_interface_is_interface_not_found(client: varlink.Client) -> None:
    with client.open("org.varlink.service") as service:
        try:
            service.GetInterfaceDescription("io.example.Nothing")
        except varlink.VarlinkError as error:
            assert error.error() == "org.varlink.service.InterfaceNotFound"
            assert error.parameters()["interface"] == "io.example.Nothing"
        else:
            raise AssertionError("an unknown interface was described")


def test_every_protocol_method_has_its_varlink_method_and_no_other(definition: Definition) -> None:
    methods = documented("Methods")
    assert len(methods) >= 34, methods
    assert sorted(snake_case(name) for name in definition.methods()) == sorted(methods)


def test_every_error_code_has_its_varlink_error(definition: Definition) -> None:
    codes = documented("Error codes")
    # Two codes are Varlink's own errors: an unknown method is org.varlink.service.MethodNotFound, a bad parameter
    # org.varlink.service.InvalidParameter.
    expected = sorted(set(codes) - {"unknown_method", "invalid_params"})
    assert sorted(snake_case(name) for name in definition.errors()) == expected
    for error in definition.errors().values():
        assert "message" in error.type.fields, f"{error.name} has no message"
