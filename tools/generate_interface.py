#!/usr/bin/env python3
"""generate_interface.py [--check] [python] [c]: the clients' definitions, from the interface file.

varlink/io.usher.Session.varlink declares every method, its parameters and results, and every error, once. From it
this writes, for the clients:

- ``clients/python/src/usher/_interface.py``: for every method its name constant (``METHOD_CURRENT_USER``) and the
  ``TypedDict`` of its parameters and of its result (``CurrentUserParameters``, ``CurrentUserResult``); a
  ``TypedDict`` for every struct type and a ``Literal`` for every enum; the error codes (``ERROR_USER_LOGGED_OUT``).
  The package's requests are built with these types, so ``mypy --strict`` refuses a parameter the interface does not
  have, and its exceptions take their codes from here.
- ``clients/c/src/methods.h``: libusher's method names (``METHOD_CURRENT_USER``), which its functions call by.

Generated, then committed, and checked: ``--check`` writes nothing and fails with a diff when a file is not what
the interface file gives. ``make test-python`` (clients/python/tests/test_interface.py) checks the Python module and
``make test-libusher`` (make -C clients/c test-interface) the C header. Why not at build time: the Python package is
built by flit_core, which has no build hooks (on purpose: a pure-Python package's files are its sources), and the
source tree itself must import, type-check and test without a build step (mypy and pytest read ``src/``); libusher
is also compiled by clients/pam's Makefile and by ``make deb`` for other architectures, which would all need Python
and the interface file at hand. A committed file that a test holds to the interface file gives the same guarantee
without any of that.

Standard library only (with tools/varlink_idl.py beside it). Without arguments it writes both files.
"""

from __future__ import annotations

import difflib
import keyword
import os
import sys
import textwrap
from typing import Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from varlink_idl import Field, Interface, Type, load, snake_case  # noqa: E402

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDL = os.path.join(REPOSITORY, "varlink", "io.usher.Session.varlink")
PYTHON_MODULE = os.path.join(REPOSITORY, "clients", "python", "src", "usher", "_interface.py")
C_HEADER = os.path.join(REPOSITORY, "clients", "c", "src", "methods.h")

#: The error codes the newline-delimited JSON protocol has besides the interface's errors: on Varlink they are
#: Varlink's own errors (docs/varlink.md).
PROTOCOL_ONLY_ERRORS: Dict[str, str] = {
    "invalid_params": "org.varlink.service.InvalidParameter",
    "unknown_method": "org.varlink.service.MethodNotFound",
}

PRIMITIVE_PYTHON = {"bool": "bool", "int": "int", "float": "float", "string": "str", "object": "Dict[str, Any]"}
WIDTH = 120


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _quoted(name: str) -> str:
    """A name of the interface as a Python string literal (names are letters, digits, dots and underscores)."""
    return f'"{name}"'


def _comment(text: str, prefix: str) -> List[str]:
    """Documentation text as comment lines, each paragraph filled to the width."""
    lines: List[str] = []
    for paragraph in text.split("\n\n"):
        lines += textwrap.wrap(" ".join(paragraph.split()), WIDTH - len(prefix), break_on_hyphens=False) or [""]
        lines.append("")
    return [(prefix + line).rstrip() for line in lines[:-1]]


class _Python:
    """The Python module's text, built declaration by declaration."""

    def __init__(self, interface: Interface) -> None:
        self.interface = interface
        self.aliases: List[str] = []  # Literal aliases of inline enums, named after where they stand
        self.classes: List[str] = []

    def type(self, type_: Type, owner: str, name: str) -> str:
        if type_.kind == "primitive":
            return PRIMITIVE_PYTHON[type_.name]
        if type_.kind == "named":
            return type_.name
        if type_.kind == "optional":
            assert type_.element is not None
            return f"Optional[{self.type(type_.element, owner, name)}]"
        if type_.kind == "array":
            assert type_.element is not None
            return f"List[{self.type(type_.element, owner, name)}]"
        if type_.kind == "map":
            assert type_.element is not None
            return f"Dict[str, {self.type(type_.element, owner, name)}]"
        alias = owner + _camel(name)
        if type_.kind == "enum":
            self.aliases.append(self.literal(alias, type_.values, ""))
        else:
            self.classes.append(self.typed_dict(alias, type_.fields, ""))
        return alias

    def literal(self, name: str, values: Tuple[str, ...], doc: str) -> str:
        lines = _comment(doc, "# ") if doc else []
        one_line = f"{name} = Literal[{', '.join(_quoted(v) for v in values)}]"
        if len(one_line) <= WIDTH:
            return "\n".join(lines + [one_line])
        return "\n".join(lines + [f"{name} = Literal["] + [f"    {_quoted(v)}," for v in values] + ["]"])

    def typed_dict(self, name: str, fields: Tuple[Field, ...], doc: str) -> str:
        """A TypedDict: the required fields (not ``?``) must be there; optional ones may be absent or None."""
        required = [f for f in fields if not f.type.optional]
        optional = [f for f in fields if f.type.optional]
        keywords = any(keyword.iskeyword(f.name) for f in fields)
        docstring = self.docstring(doc)

        def body(items: List[Field]) -> List[str]:
            lines: List[str] = []
            for item in items:
                lines += _comment(item.doc, "    #: ") if item.doc else []
                lines.append(f"    {item.name}: {self.type(item.type, name, item.name)}")
            return lines

        def functional(class_name: str, items: List[Field], total: bool) -> str:
            entries = ", ".join(f"{_quoted(item.name)}: {self.type(item.type, name, item.name)}" for item in items)
            flag = "" if total else ", total=False"
            return f'{class_name} = TypedDict("{class_name}", {{{entries}}}{flag})'

        if keywords:  # a field named like a Python keyword: only the functional syntax can name it
            parts = [functional(f"_{name}Required", required, True), functional(f"_{name}Optional", optional, False)]
            last = f"class {name}(_{name}Required, _{name}Optional):\n" + "\n".join(docstring or ["    pass"])
            return "\n\n\n".join(parts + [last])
        if required and optional:
            base = f"class _{name}Required(TypedDict):\n" + "\n".join(body(required))
            return base + f"\n\n\nclass {name}(_{name}Required, total=False):\n" + "\n".join(docstring + body(optional))
        total = "" if optional == [] else ", total=False"
        lines = body(required or optional)
        return f"class {name}(TypedDict{total}):\n" + "\n".join((docstring + lines) or ["    pass"])

    def docstring(self, doc: str) -> List[str]:
        if not doc:
            return []
        lines = [line[3:] for line in _comment(doc, " " * 7)]  # the width of the opening quotes kept free
        lines[0] = '    """' + lines[0].lstrip()
        if len(lines) == 1 and len(lines[0]) + 3 <= WIDTH:
            return [lines[0] + '"""']
        return lines + ['    """']

    def text(self) -> str:
        interface = self.interface
        for declaration in interface.types.values():
            if declaration.type.kind == "enum":
                self.aliases.append(self.literal(declaration.name, declaration.type.values, declaration.doc))
            else:
                self.classes.append(self.typed_dict(declaration.name, declaration.type.fields, declaration.doc))
        for method in interface.methods.values():
            doc = f"The parameters of ``{method.wire_name}``." + (f"\n\n{method.doc}" if method.doc else "")
            self.classes.append(self.typed_dict(f"{method.name}Parameters", method.parameters, doc))
            result_doc = f"The result of ``{method.wire_name}``."
            self.classes.append(self.typed_dict(f"{method.name}Result", method.results, result_doc))
        for error in interface.errors.values():
            doc = f"The data of ``{error.wire_code}``." + (f"\n\n{error.doc}" if error.doc else "")
            fields = tuple(f for f in error.fields if f.name != "message")  # the message is every error's
            if fields:
                self.classes.append(self.typed_dict(f"{error.name}Data", fields, doc))
        methods = [f"METHOD_{snake_case(m.name).upper()}" for m in interface.methods.values()]
        codes = [e.wire_code for e in interface.errors.values()] + list(PROTOCOL_ONLY_ERRORS)
        header = [
            f'"""The interface {interface.name}, as Python types: generated from {os.path.relpath(IDL, REPOSITORY)}',
            "by tools/generate_interface.py. Do not edit: write it again with ``python3 tools/generate_interface.py``",
            "(tests/test_interface.py fails while it differs from what the interface file gives).",
            "",
        ] + _comment(interface.doc, "") + ['"""', "", "from __future__ import annotations", ""]
        header.append("from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict")
        header += ["", f"INTERFACE = {_quoted(interface.name)}", ""]
        header.append("# The methods' names on the socket: the interface's in snake_case.")
        header += [f"{constant} = {_quoted(m.wire_name)}" for constant, m in zip(methods, interface.methods.values())]
        header += ["", "#: Every method, in the interface file's order.", "METHODS: Tuple[str, ...] = ("]
        header += [f"    {constant}," for constant in methods] + [")", ""]
        header += _comment("The error codes: the interface's errors in snake_case, then the codes of the "
                           "newline-delimited JSON protocol alone (on Varlink: "
                           + ", ".join(f"{code} is {name}" for code, name in PROTOCOL_ONLY_ERRORS.items()) + ").", "# ")
        header += [f"ERROR_{code.upper()} = {_quoted(code)}" for code in codes]
        header += ["", "#: Every error code.", "ERROR_CODES: Tuple[str, ...] = ("]
        header += [f"    ERROR_{code.upper()}," for code in codes] + [")"]
        return "\n".join(header) + "\n\n" + "\n\n".join(self.aliases) + "\n\n\n" + "\n\n\n".join(self.classes) + "\n"


def python_module(interface: Interface) -> str:
    return _Python(interface).text()


def c_header(interface: Interface) -> str:
    lines = [
        f"/* The name of every method of {interface.name} on the socket: generated from",
        f" * {os.path.relpath(IDL, REPOSITORY)} by tools/generate_interface.py. Do not edit: write it again with",
        " * python3 tools/generate_interface.py (make -C clients/c test-interface fails while it differs). */",
        "#ifndef USHER_METHODS_H",
        "#define USHER_METHODS_H",
        "",
    ]
    lines += [f'#define METHOD_{m.wire_name.upper()} "{m.wire_name}"' for m in interface.methods.values()]
    return "\n".join(lines + ["", "#endif", ""])


OUTPUTS: Dict[str, Tuple[str, Callable[[Interface], str]]] = {
    "python": (PYTHON_MODULE, python_module),
    "c": (C_HEADER, c_header),
}


def main(arguments: List[str]) -> int:
    check = "--check" in arguments
    names = [a for a in arguments if a != "--check"] or list(OUTPUTS)
    unknown = [n for n in names if n not in OUTPUTS]
    if unknown:
        print(f"usage: generate_interface.py [--check] [{'] ['.join(OUTPUTS)}]", file=sys.stderr)
        return 2
    interface = load(IDL)
    failed = 0
    for name in names:
        path, generate = OUTPUTS[name]
        text = generate(interface)
        relative = os.path.relpath(path, REPOSITORY)
        try:
            with open(path, encoding="utf-8") as file:
                current = file.read()
        except FileNotFoundError:
            current = ""
        if current == text:
            print(f"{relative}: as the interface file gives it")
            continue
        if check:
            failed += 1
            diff = difflib.unified_diff(current.splitlines(True), text.splitlines(True), relative, "generated")
            sys.stderr.writelines(diff)
            print(f"{relative} is not what {os.path.relpath(IDL, REPOSITORY)} gives (the diff above): "
                  "python3 tools/generate_interface.py writes it", file=sys.stderr)
            continue
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        print(f"{relative}: written")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
