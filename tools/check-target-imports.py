#!/usr/bin/env python3
"""Checks that every target of Package.swift declares exactly the modules its sources import.

SwiftPM builds a target that imports a module it does not declare as long as some other target brought that module
into the build, and says nothing about a declared dependency that is never imported. Both make the graph in
Package.swift lie about the code. This reads the manifest (`swift package dump-package`) and every target's sources,
and fails, naming each target and module, when a target imports a module of this package or of a dependency that it
does not declare, or declares one it never imports. A C target imports another C target of the package by including a
header of its include/ directory. The toolchain's own modules (Foundation, Glibc, Testing, ...)
are not declared in a manifest and are not checked.

Usage: tools/check-target-imports.py [PACKAGE_DIR]  (default: the current directory)
"""

import json
import os
import re
import subprocess
import sys

# Modules of the toolchain and the platform: never declared in Package.swift.
TOOLCHAIN_MODULES = {
    "Foundation", "FoundationEssentials", "FoundationNetworking", "FoundationInternationalization", "Glibc", "Musl",
    "Darwin", "Dispatch", "Synchronization", "Testing", "XCTest", "PackagePlugin", "Swift", "_Concurrency",
    "RegexBuilder", "Observation", "os",
}

IMPORT = re.compile(
    r"^\s*(?:@[\w()]+\s+)*(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+"
    r"(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
    re.MULTILINE,
)


# A multi-line string literal (`"""` to `"""`, raw ones too): its text is data, such as a Python script a test runs,
# whose `import socket` is not a Swift import.
MULTILINE_STRING = re.compile(r'#*"""\n.*?\n\s*"""#*', re.DOTALL)


def target_directory(package_dir, target):
    if target.get("path"):
        return os.path.join(package_dir, target["path"])
    parent = {"test": "Tests", "plugin": "Plugins"}.get(target["type"], "Sources")
    return os.path.join(package_dir, parent, target["name"])


# A C target's sources use another C target of the package by including a header of its include/ directory.
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def public_headers(package_dir, targets):
    """The header names of each C target's include/ directory, mapped to the target."""
    headers = {}
    for target in targets:
        include = os.path.join(target_directory(package_dir, target), "include")
        for root, _, files in os.walk(include):
            for name in files:
                if name.endswith(".h"):
                    headers[os.path.relpath(os.path.join(root, name), include)] = target["name"]
    return headers


def imported_modules(directory, headers):
    modules = set()
    for root, _, files in os.walk(directory):
        for name in files:
            if name.endswith(".swift"):
                with open(os.path.join(root, name), encoding="utf-8") as source:
                    modules.update(IMPORT.findall(MULTILINE_STRING.sub("", source.read())))
            elif name.endswith((".c", ".h")):
                with open(os.path.join(root, name), encoding="utf-8") as source:
                    modules.update(headers[header] for header in INCLUDE.findall(source.read()) if header in headers)
    return modules


def declared_modules(target):
    modules = set()
    for dependency in target["dependencies"]:
        kind, value = next(iter(dependency.items()))
        # byName: [name, condition]; target: [name, condition]; product: [name, package, moduleAliases, condition].
        # Every product this package uses is a library whose module has the product's name.
        modules.add(value[0])
    return modules


def main():
    package_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    manifest = json.loads(
        subprocess.run(
            ["swift", "package", "--package-path", package_dir, "dump-package"],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    problems = []
    sources = [target for target in manifest["targets"] if target["type"] not in ("system", "plugin", "binary")]
    headers = public_headers(package_dir, sources)
    for target in manifest["targets"]:
        if target not in sources:
            continue
        imported = imported_modules(target_directory(package_dir, target), headers)
        imported -= TOOLCHAIN_MODULES | {target["name"]}
        declared = declared_modules(target)
        for module in sorted(imported - declared):
            problems.append(f"{target['name']} imports {module} but does not declare it")
        for module in sorted(declared - imported):
            problems.append(f"{target['name']} declares {module} but never imports it")
    for problem in problems:
        print(f"Package.swift: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"Package.swift: every target declares exactly what it imports ({len(manifest['targets'])} targets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
