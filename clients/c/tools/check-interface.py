#!/usr/bin/env python3
"""check-interface.py: libusher agrees with the interface file (varlink/io.usher.Session.varlink).

- src/methods.h, the methods' names libusher calls by, is what tools/generate_interface.py writes from the interface
  file (a method renamed or removed there fails here, and then the build of the function that calls it);
- src/error.c's table, the one place an error code becomes an errno value, has every error code of the protocol (the
  interface's errors in snake_case, and invalid_params and unknown_method) and no other: a code added to the
  interface without its errno value would reach programs as -EREMOTEIO, the value of codes newer than the library.

Run by make -C clients/c test-interface (part of make test-libusher). Standard library only.
"""

from __future__ import annotations

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPOSITORY, "tools"))

import generate_interface  # noqa: E402
import varlink_idl  # noqa: E402


def error_table(path: str) -> list[str]:
    """The codes of error.c's table, in its order."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    table = re.search(r"\berror_table\[\]\s*=\s*\{(.*?)\n\};", text, re.DOTALL)
    if table is None:
        raise SystemExit(f"check-interface: no error_table in {path}")
    return re.findall(r'\{\s*"([a-z_]+)"\s*,\s*E[A-Z0-9]+\s*\}', table.group(1))


def main() -> int:
    failed = generate_interface.main(["--check", "c"])
    interface = varlink_idl.load(generate_interface.IDL)
    protocol = [error.wire_code for error in interface.errors.values()] + list(generate_interface.PROTOCOL_ONLY_ERRORS)
    table = error_table(os.path.join(os.path.dirname(HERE), "src", "error.c"))
    missing = [code for code in protocol if code not in table]
    extra = [code for code in table if code not in protocol]
    twice = sorted({code for code in table if table.count(code) > 1})
    for what, codes in (("has no errno value for", missing), ("maps codes the protocol lacks:", extra),
                        ("maps codes twice:", twice)):
        if codes:
            print(f"check-interface: src/error.c {what} {', '.join(codes)}", file=sys.stderr)
            failed = 1
    if not failed:
        print(f"check-interface: src/error.c maps all {len(protocol)} error codes of the protocol, and no other")
    return failed


if __name__ == "__main__":
    sys.exit(main())
