#!/usr/bin/env python3
"""varlink_idl.py: a reader of Varlink interface definitions, in the standard library alone.

The interface file (varlink/io.usher.Session.varlink) is where usher's methods, their parameters and results, and
its errors are declared once; the Python package's typed definitions and libusher's method names are generated from
it (tools/generate_interface.py), and docs/protocol.md is checked against it (tools/check_protocol_docs.py). This
module reads the file into plain values for them.

It reads the Varlink IDL as the specification (varlink.org, "Interface Definition") gives it: ``interface NAME``;
``type NAME (...)`` with a struct (``name: type`` fields) or an enum (bare names); ``method NAME(...) -> (...)``;
``error NAME (...)``; types ``bool``, ``int``, ``float``, ``string``, ``object``, a type's name, ``?T`` (optional:
null or absent), ``[]T`` (array), ``[string]T`` (map), and inline structs and enums ``(...)``; ``#`` comments, where
the comment lines right before a declaration or a field (no blank line between) are its documentation.

Each method and error has its name on the newline-delimited JSON protocol too: the Varlink name in snake_case
(``CurrentUser`` is ``current_user``, ``UserLoggedOut`` is ``user_logged_out``): :func:`snake_case`.

Run on a file, it prints what it read: ``python3 tools/varlink_idl.py varlink/io.usher.Session.varlink``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

__all__ = ["Type", "Field", "TypeDecl", "Method", "Error", "Interface", "IdlError", "parse", "load", "snake_case"]

PRIMITIVES = ("bool", "int", "float", "string", "object")


class IdlError(ValueError):
    """The text is not a Varlink interface definition; the message names the line."""


@dataclass(frozen=True)
class Type:
    """A type: ``kind`` is ``primitive`` or ``named`` (``name`` says which), ``optional``, ``array`` or ``map``
    (``element`` is what it holds), ``enum`` (``values``) or ``struct`` (``fields``)."""

    kind: str
    name: str = ""
    element: Optional["Type"] = None
    values: Tuple[str, ...] = ()
    fields: Tuple["Field", ...] = ()

    @property
    def optional(self) -> bool:
        return self.kind == "optional"

    def __str__(self) -> str:
        if self.kind in ("primitive", "named"):
            return self.name
        if self.kind == "optional":
            return f"?{self.element}"
        if self.kind == "array":
            return f"[]{self.element}"
        if self.kind == "map":
            return f"[string]{self.element}"
        if self.kind == "enum":
            return f"({', '.join(self.values)})"
        return f"({', '.join(f'{f.name}: {f.type}' for f in self.fields)})"


@dataclass(frozen=True)
class Field:
    name: str
    type: Type
    doc: str = ""


@dataclass(frozen=True)
class TypeDecl:
    """``type NAME (...)``: ``type`` is its struct or enum."""

    name: str
    type: Type
    doc: str = ""


@dataclass(frozen=True)
class Method:
    name: str
    parameters: Tuple[Field, ...]
    results: Tuple[Field, ...]
    doc: str = ""

    @property
    def wire_name(self) -> str:
        """The method's name on the newline-delimited JSON protocol."""
        return snake_case(self.name)


@dataclass(frozen=True)
class Error:
    name: str
    fields: Tuple[Field, ...]
    doc: str = ""

    @property
    def wire_code(self) -> str:
        """The error's code on the newline-delimited JSON protocol."""
        return snake_case(self.name)


@dataclass
class Interface:
    name: str
    doc: str = ""
    types: Dict[str, TypeDecl] = field(default_factory=dict)
    methods: Dict[str, Method] = field(default_factory=dict)
    errors: Dict[str, Error] = field(default_factory=dict)


def snake_case(name: str) -> str:
    """``CurrentUser`` -> ``current_user``, ``HTTPError`` -> ``http_error``: a capital starts a word, and a run of
    capitals is one word (so the IDL spells ``DpopProof`` for ``dpop_proof``)."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


_TOKEN = re.compile(
    r"""(?P<space>[ \t\r]+)
      | (?P<newline>\n)
      | (?P<comment>\#[^\n]*)
      | (?P<arrow>->)
      | (?P<punct>[()\[\]?:,])
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Token:
    kind: str  # "name", "punct" (the text says which), "arrow", "end"
    text: str
    line: int
    doc: str  # the comment lines right before it, when it starts a line


def _tokens(text: str) -> Iterator[_Token]:
    line, position = 1, 0
    comments: List[str] = []
    blank_run = 0  # newlines since the last token or comment: two mean a blank line
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise IdlError(f"line {line}: unexpected {text[position]!r}")
        position = match.end()
        kind = match.lastgroup or ""
        value = match.group()
        if kind == "space":
            continue
        if kind == "newline":
            line += 1
            blank_run += 1
            if blank_run >= 2:
                comments = []  # a blank line: the comment above documents nothing below
            continue
        if kind == "comment":
            comments.append(value[1:][1:] if value.startswith("# ") else value[1:])
            blank_run = 0
            continue
        yield _Token(kind, value, line, "\n".join(comments).strip("\n"))
        comments = []
        blank_run = 0
    yield _Token("end", "", line, "")


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = list(_tokens(text))
        self.at = 0

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self, text: Optional[str] = None, kind: Optional[str] = None) -> _Token:
        token = self.tokens[self.at]
        if (text is not None and token.text != text) or (kind is not None and token.kind != kind):
            wanted = repr(text) if text is not None else {"name": "a name", "arrow": "'->'"}.get(kind or "", kind)
            got = repr(token.text) if token.kind != "end" else "the end of the file"
            raise IdlError(f"line {token.line}: expected {wanted}, found {got}")
        self.at += 1
        return token

    def interface(self) -> Interface:
        keyword = self.take("interface")
        name = self.take(kind="name")
        if not re.fullmatch(r"[A-Za-z](-*[A-Za-z0-9])*(\.[A-Za-z0-9](-*[A-Za-z0-9])*)+", name.text):
            raise IdlError(f"line {name.line}: {name.text!r} is not an interface name (a reverse domain name)")
        result = Interface(name.text, keyword.doc)
        while self.peek().kind != "end":
            token = self.take(kind="name")
            declared = self.take(kind="name")
            if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", declared.text):
                raise IdlError(f"line {declared.line}: {declared.text!r}: names of declarations are CamelCase")
            if declared.text in result.types or declared.text in result.methods or declared.text in result.errors:
                raise IdlError(f"line {declared.line}: {declared.text} is declared twice")
            if token.text == "type":
                body = self.braced()
                result.types[declared.text] = TypeDecl(declared.text, body, token.doc)
            elif token.text == "method":
                parameters = self.struct_fields(self.braced())
                self.take(kind="arrow")
                results = self.struct_fields(self.braced())
                result.methods[declared.text] = Method(declared.text, parameters, results, token.doc)
            elif token.text == "error":
                fields = self.struct_fields(self.braced())
                result.errors[declared.text] = Error(declared.text, fields, token.doc)
            else:
                raise IdlError(f"line {token.line}: expected type, method or error, found {token.text!r}")
        for declaration in result.types.values():
            self.check_names(result, declaration.type)
        for method in result.methods.values():
            for item in method.parameters + method.results:
                self.check_names(result, item.type)
        for error in result.errors.values():
            for item in error.fields:
                self.check_names(result, item.type)
        return result

    def struct_fields(self, body: Type) -> Tuple[Field, ...]:
        if body.kind == "enum" and not body.values:
            return ()  # () is an empty struct as much as an empty enum
        if body.kind != "struct":
            raise IdlError(f"expected fields (name: type), found the enum {body}")
        return body.fields

    def braced(self) -> Type:
        """``( ... )``: a struct when its entries have types, an enum when they are bare names."""
        self.take("(")
        fields: List[Field] = []
        values: List[str] = []
        while self.peek().text != ")":
            name = self.take(kind="name")
            if not re.fullmatch(r"[A-Za-z]([_]?[A-Za-z0-9])*", name.text):
                raise IdlError(f"line {name.line}: {name.text!r} is not a field or enum value name")
            if self.peek().text == ":":
                self.take(":")
                fields.append(Field(name.text, self.type(), name.doc))
            else:
                values.append(name.text)
            if fields and values:
                raise IdlError(f"line {name.line}: a struct's fields and an enum's values mixed")
            if self.peek().text != ")":
                self.take(",")
        self.take(")")
        names = [f.name for f in fields] or values
        if len(set(names)) != len(names):
            raise IdlError(f"line {self.tokens[self.at - 1].line}: a name twice in ({', '.join(names)})")
        if fields:
            return Type("struct", fields=tuple(fields))
        return Type("enum", values=tuple(values))

    def type(self) -> Type:
        token = self.peek()
        if token.text == "?":
            self.take("?")
            if self.peek().text == "?":
                raise IdlError(f"line {token.line}: ?? is not a type")
            return Type("optional", element=self.type())
        if token.text == "[":
            self.take("[")
            if self.peek().text == "]":
                self.take("]")
                return Type("array", element=self.type())
            self.take("string")
            self.take("]")
            return Type("map", element=self.type())
        if token.text == "(":
            return self.braced()
        name = self.take(kind="name")
        if name.text in PRIMITIVES:
            return Type("primitive", name=name.text)
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name.text):
            raise IdlError(f"line {name.line}: {name.text!r} is not a type")
        return Type("named", name=name.text)

    def check_names(self, interface: Interface, type_: Type) -> None:
        if type_.kind == "named" and type_.name not in interface.types:
            raise IdlError(f"the type {type_.name} is used and not declared")
        if type_.element is not None:
            self.check_names(interface, type_.element)
        for item in type_.fields:
            self.check_names(interface, item.type)


def parse(text: str) -> Interface:
    """The interface the text declares; :class:`IdlError` names the line of the first mistake."""
    return _Parser(text).interface()


def load(path: str) -> Interface:
    with open(path, encoding="utf-8") as file:
        return parse(file.read())


def main(arguments: List[str]) -> int:
    if len(arguments) != 1:
        print("usage: varlink_idl.py FILE.varlink", file=sys.stderr)
        return 2
    try:
        interface = load(arguments[0])
    except (OSError, IdlError) as problem:
        print(f"varlink_idl.py: {arguments[0]}: {problem}", file=sys.stderr)
        return 1
    print(f"interface {interface.name}: {len(interface.types)} types, {len(interface.methods)} methods, "
          f"{len(interface.errors)} errors")
    for method in interface.methods.values():
        parameters = ", ".join(f"{f.name}: {f.type}" for f in method.parameters)
        results = ", ".join(f"{f.name}: {f.type}" for f in method.results)
        print(f"  method {method.wire_name}({parameters}) -> ({results})")
    for error in interface.errors.values():
        print(f"  error {error.wire_code}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
