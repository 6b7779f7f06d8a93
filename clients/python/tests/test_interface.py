"""The package's definitions are the interface file's (varlink/io.usher.Session.varlink): ``usher._interface`` is
what tools/generate_interface.py writes from it, every error code has its exception class, and the reader of the
interface file (tools/varlink_idl.py) reads it as the reference Varlink implementation (the PyPI varlink package)
does."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Dict, List

import pytest
import varlink
import varlink.scanner

import usher
from conftest import REPOSITORY
from usher import _interface as wire
from usher import _protocol

sys.path.insert(0, str(REPOSITORY / "tools"))

import check_protocol_docs  # noqa: E402
import varlink_idl  # noqa: E402

IDL = REPOSITORY / "varlink" / "io.usher.Session.varlink"


def test_the_generated_module_is_what_the_interface_file_gives() -> None:
    # `python3 tools/generate_interface.py` writes it again after the interface file changes.
    result = subprocess.run(
        [sys.executable, str(REPOSITORY / "tools" / "generate_interface.py"), "--check", "python"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_every_error_code_has_its_exception_class_and_no_other() -> None:
    assert set(usher.ERROR_CLASSES) == set(wire.ERROR_CODES)
    assert usher.UserLoggedOut.wire_code == wire.ERROR_USER_LOGGED_OUT == "user_logged_out"
    assert usher.ApiKeyNotFound.wire_code == "api_key_not_found"


def test_the_method_names_are_the_interface_names_in_snake_case() -> None:
    interface = varlink_idl.load(str(IDL))
    assert wire.METHODS == tuple(method.wire_name for method in interface.methods.values())
    assert wire.METHOD_CURRENT_USER == "current_user" and wire.METHOD_DPOP_PROOF == "dpop_proof"
    assert _protocol.hello().method == wire.METHOD_HELLO
    assert _protocol.list_users_page(10, None).method == "list_users"


def test_requests_leave_out_what_was_not_given() -> None:
    call = _protocol.access_token(None, None, "seat0", scopes=["read"])
    assert call.method == "access_token" and call.params == {"seat": "seat0", "scopes": ["read"]}
    assert _protocol.update_profile({"name": None}, None, None).params == {"name": None}  # null removes the claim
    with pytest.raises(ValueError, match="update_profile sets name, picture and locale, not 'email'"):
        _protocol.update_profile({"email": "a@example.com"}, None, None)
    with pytest.raises(ValueError, match='mode must be "block" or "delay"'):
        _protocol.inhibit("why", None, "hold", None)


def test_snake_case() -> None:
    cases = {
        "CurrentUser": "current_user",
        "UserLoggedOut": "user_logged_out",
        "DpopProof": "dpop_proof",
        "Jwks": "jwks",
        "HTTPError": "http_error",
        "ApiKeyNotFound": "api_key_not_found",
        "Status2Fa": "status2_fa",
    }
    assert {name: varlink_idl.snake_case(name) for name in cases} == cases


SAMPLE = """# The sample.
#
# Second paragraph.
interface org.example.sample

# A thing.
type Thing (
  # Its name.
  name: string,
  tags: []string,
  extra: ?[string]int,
  kind: (small, large),
  nested: ?(depth: int, data: object),
  ratio: float
)

# Not a doc comment: a blank line follows.

type Colour (red, green)

method Ping() -> ()

# Finds things.
method Find(colour: ?Colour, limit: int) -> (things: []Thing, more: bool)

error NotFound (name: string)
error Empty ()
"""


def test_the_reader_on_every_construct() -> None:
    interface = varlink_idl.parse(SAMPLE)
    assert interface.name == "org.example.sample"
    assert interface.doc == "The sample.\n\nSecond paragraph."
    thing = interface.types["Thing"]
    assert thing.doc == "A thing." and thing.type.kind == "struct"
    fields = {f.name: f for f in thing.type.fields}
    assert fields["name"].doc == "Its name." and str(fields["name"].type) == "string"
    assert [str(f.type) for f in thing.type.fields] == [
        "string",
        "[]string",
        "?[string]int",
        "(small, large)",
        "?(depth: int, data: object)",
        "float",
    ]
    assert fields["extra"].type.optional and not fields["tags"].type.optional
    colour = interface.types["Colour"]
    assert colour.type.values == ("red", "green") and colour.doc == ""
    ping = interface.methods["Ping"]
    assert ping.parameters == () and ping.results == () and ping.wire_name == "ping"
    find = interface.methods["Find"]
    assert find.doc == "Finds things."
    assert [(f.name, str(f.type)) for f in find.parameters] == [("colour", "?Colour"), ("limit", "int")]
    assert [(f.name, str(f.type)) for f in find.results] == [("things", "[]Thing"), ("more", "bool")]
    assert interface.errors["NotFound"].wire_code == "not_found"
    assert interface.errors["Empty"].fields == ()


@pytest.mark.parametrize(
    "text, message",
    [
        ("type Thing (a: string)", "line 1: expected 'interface', found 'type'"),
        ("interface org.example.x\ntype Thing (a: Missing)", "the type Missing is used and not declared"),
        ("interface org.example.x\ntype Thing (a: string, b)", "line 2: a struct's fields and an enum's values mixed"),
        ("interface org.example.x\ntype Thing (a: string, a: int)", "a name twice"),
        ("interface org.example.x\nmethod Go(a: string) -> (a: ??string)", "line 2: ?? is not a type"),
        ("interface org.example.x\nmethod Go(a: string)", "line 2: expected '->', found the end of the file"),
        ("interface org.example.x\nmethod go() -> ()", "line 2: 'go': names of declarations are CamelCase"),
        ("interface org.example.x\nmethod Go() -> ()\nerror Go ()", "line 3: Go is declared twice"),
        ("interface org.example.x\ntype T (a: string) $", "line 2: unexpected '$'"),
        ("interface x\n", "line 1: 'x' is not an interface name"),
    ],
)
def test_the_reader_names_the_mistake(text: str, message: str) -> None:
    with pytest.raises(varlink_idl.IdlError) as raised:
        varlink_idl.parse(text)
    assert message in str(raised.value)


def _reference(type_: Any) -> str:
    """A type as the PyPI varlink package read it, written as varlink_idl's Type prints it."""
    if isinstance(type_, varlink.scanner._Maybe):
        return "?" + _reference(type_.element_type)
    if isinstance(type_, varlink.scanner._Array):
        return "[]" + _reference(type_.element_type)
    if isinstance(type_, varlink.scanner._Dict):
        return "[string]" + _reference(type_.element_type)
    if isinstance(type_, varlink.scanner._CustomType):
        return str(type_.name)
    if isinstance(type_, varlink.scanner._Object):
        return "object"
    if isinstance(type_, varlink.scanner._Enum):
        return "(" + ", ".join(type_.fields) + ")"
    if isinstance(type_, varlink.scanner._Struct):
        return "(" + ", ".join(f"{name}: {_reference(t)}" for name, t in type_.fields.items()) + ")"
    if isinstance(type_, bool):  # before int: a bool is an int in Python
        return "bool"
    return {str: "string", int: "int", float: "float"}[type(type_)]


def test_the_reader_reads_the_interface_file_as_the_reference_implementation_does() -> None:
    text = IDL.read_text()
    ours = varlink_idl.parse(text)
    theirs = varlink.Interface(text)
    assert ours.name == theirs.name
    members: Dict[str, List[str]] = {"type": [], "method": [], "error": []}
    for name, member in theirs.members.items():
        if isinstance(member, varlink.scanner._Method):
            members["method"].append(name)
            method = ours.methods[name]
            assert str(varlink_idl.Type("struct", fields=method.parameters)) == _reference(member.in_type), name
            assert str(varlink_idl.Type("struct", fields=method.results)) == _reference(member.out_type), name
        elif isinstance(member, varlink.scanner._Error):
            members["error"].append(name)
            assert str(varlink_idl.Type("struct", fields=ours.errors[name].fields)) == _reference(member.type), name
        else:
            members["type"].append(name)
            assert str(ours.types[name].type) == _reference(member.type), name
    assert members["method"] == list(ours.methods)
    assert members["error"] == list(ours.errors)
    assert members["type"] == list(ours.types)



def test_the_check_of_docs_protocol_md() -> None:
    interface = varlink_idl.parse(SAMPLE)
    rows = "| method | params | result |\n|---|---|---|\n| `ping` | — | `{}` |\n| `find` | `limit` | `{..}` |\n"
    errors = "| code | meaning |\n|---|---|\n| `not_found` | .. |\n| `empty` | .. |\n"
    errors += "| `invalid_params` | .. |\n| `unknown_method` | .. |\n"
    agreeing = f"# Protocol\n\n## Methods\n\n{rows}\nText.\n\n## Error codes\n\n{errors}\nCodes are stable.\n"
    assert check_protocol_docs.check(agreeing, interface) == []
    disagreeing = agreeing.replace("| `find` |", "| `finds` |").replace("| `empty` |", "| `not_found` |")
    assert check_protocol_docs.check(disagreeing, interface) == [
        '"## Methods": find is not documented',
        '"## Methods": finds is documented, not declared',
        '"## Error codes": empty is not documented',
        '"## Error codes": not_found is documented twice',
    ]
    assert check_protocol_docs.check("# Protocol\n", interface) == [
        'no section "## Methods"',
        'no section "## Error codes"',
    ]


def test_docs_protocol_md_documents_the_interface() -> None:
    markdown = (REPOSITORY / "docs" / "protocol.md").read_text()
    assert check_protocol_docs.check(markdown, varlink_idl.load(str(IDL))) == []
