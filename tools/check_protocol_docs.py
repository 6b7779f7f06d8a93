#!/usr/bin/env python3
"""check_protocol_docs.py [PROTOCOL_MD [INTERFACE_FILE]]: docs/protocol.md documents the interface file's methods and
error codes, each once, and nothing else.

- "## Methods": its table has one row per method of varlink/io.usher.Session.varlink, named on the wire (the
  Varlink name in snake_case: ``CurrentUser`` is ``current_user``), and no other row;
- "## Error codes": its table has one row per error of the interface file (``UserLoggedOut`` is
  ``user_logged_out``), and per code the newline-delimited JSON protocol has of its own (``invalid_params``,
  ``unknown_method``: on Varlink they are Varlink's own errors), and no other row.

Run by ``make lint`` (so ``make test``'s lint suite). Standard library only (tools/varlink_idl.py beside it).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from generate_interface import PROTOCOL_ONLY_ERRORS  # noqa: E402
from varlink_idl import IdlError, Interface, load  # noqa: E402

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def table_names(markdown: str, heading: str) -> List[str]:
    """The first column's names (in backquotes) of the first table under the level-2 heading, in order."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", markdown, re.MULTILINE | re.DOTALL)
    if match is None:
        raise ValueError(f'no section "## {heading}"')
    rows: List[str] = []
    in_table = False
    for line in match.group(1).splitlines():
        if line.startswith("|"):
            in_table = True
            cell = line.split("|")[1].strip()
            if re.fullmatch(r"-+|:?-+:?", cell) or not cell.startswith("`"):
                continue  # the header and its rule
            rows.append(cell.strip("`"))
        elif in_table:
            break  # the table ended
    if not rows:
        raise ValueError(f'no table under "## {heading}"')
    return rows


def differences(what: str, documented: List[str], declared: List[str]) -> List[str]:
    problems = [f"{what}: {name} is not documented" for name in declared if name not in documented]
    problems += [f"{what}: {name} is documented, not declared" for name in documented if name not in declared]
    twice = sorted(name for name in set(documented) if documented.count(name) > 1)
    return problems + [f"{what}: {name} is documented twice" for name in twice]


def check(markdown: str, interface: Interface) -> List[str]:
    """What docs/protocol.md's tables and the interface file disagree on; empty when they agree."""
    methods = [method.wire_name for method in interface.methods.values()]
    codes = [error.wire_code for error in interface.errors.values()] + list(PROTOCOL_ONLY_ERRORS)
    tables: Dict[str, List[str]] = {}
    problems: List[str] = []
    for heading in ("Methods", "Error codes"):
        try:
            tables[heading] = table_names(markdown, heading)
        except ValueError as error:
            problems.append(str(error))
    if "Methods" in tables:
        problems += differences('"## Methods"', tables["Methods"], methods)
    if "Error codes" in tables:
        problems += differences('"## Error codes"', tables["Error codes"], codes)
    return problems


def main(arguments: List[str]) -> int:
    protocol = arguments[0] if arguments else os.path.join(REPOSITORY, "docs", "protocol.md")
    idl = arguments[1] if len(arguments) > 1 else os.path.join(REPOSITORY, "varlink", "io.usher.Session.varlink")
    try:
        interface = load(idl)
        with open(protocol, encoding="utf-8") as file:
            markdown = file.read()
    except (OSError, IdlError) as error:
        print(f"check_protocol_docs.py: {error}", file=sys.stderr)
        return 1
    problems = check(markdown, interface)
    for problem in problems:
        print(f"{os.path.relpath(protocol)}: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"{os.path.relpath(protocol)}: its {len(interface.methods)} methods and "
          f"{len(interface.errors) + len(PROTOCOL_ONLY_ERRORS)} error codes are the interface file's")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
