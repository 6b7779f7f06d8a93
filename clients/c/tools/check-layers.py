#!/usr/bin/env python3
"""check-layers.py OBJECT.o... | OBJECT_DIRECTORY | --self-test

Fails when libusher's source files call each other in a circle. Given a directory, it reads every object in it; the
Makefile names the objects of the sources there are, so that an object left by a file since removed is not read. The graph is read from the compiled objects, not
the sources: file A depends on file B when A.o leaves undefined a symbol that B.o defines (``nm``), so a call
through a macro or an inline helper counts as much as a written one. A cycle is printed file by file with the
symbols that make each step; without one, the files are printed in their layers (each layer calls only layers
below it), which is what src/internal.h describes.

``--self-test`` compiles two small files that call each other, and one that calls neither, and checks that the
cycle is found and the layers are right: the check itself is tested with the real compiler and ``nm``.

Standard library only; ``nm`` comes with binutils, as the compiler does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from graphlib import CycleError, TopologicalSorter
from typing import Dict, List, Set, Tuple

Graph = Dict[str, Dict[str, Set[str]]]  # file -> file it calls -> the symbols it calls there


def symbols(obj: str) -> Tuple[Set[str], Set[str]]:
    """The symbols the object defines (code and data, local ones left out) and those it leaves undefined."""
    out = subprocess.run(["nm", "--format=posix", obj], check=True, capture_output=True, text=True).stdout
    defined: Set[str] = set()
    undefined: Set[str] = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRCVWG" and kind.isupper():
            defined.add(name)
    return defined, undefined


def graph(objects: List[str]) -> Graph:
    """The graph of the objects' source files (each object named after its source: buf.o is buf.c's)."""
    if not objects:
        raise SystemExit("check-layers: no object files")
    defined: Dict[str, str] = {}
    needs: Dict[str, Set[str]] = {}
    for path in sorted(objects):
        file = os.path.basename(path)[: -len(".o")] + ".c"
        mine, undefined = symbols(path)
        for symbol in mine:
            if symbol in defined:
                raise SystemExit(f"check-layers: {symbol} is defined in {defined[symbol]} and {file}")
            defined[symbol] = file
        needs[file] = undefined
    edges: Graph = {file: {} for file in needs}
    for file, undefined in needs.items():
        for symbol in undefined:
            target = defined.get(symbol)
            if target is not None and target != file:
                edges[file].setdefault(target, set()).add(symbol)
    return edges


def find_cycle(edges: Graph) -> List[str]:
    """One cycle as a list of files (the first repeated at the end), or an empty list.

    graphlib's (the standard library's) cycle detection: it lists a cycle with each node a predecessor of the next,
    and a node's predecessors here are what it points to, so the list is reversed to read in the edges' direction."""
    try:
        TopologicalSorter({node: set(targets) for node, targets in edges.items()}).prepare()
    except CycleError as error:
        return list(reversed(error.args[1]))
    return []


def layers(edges: Graph) -> List[List[str]]:
    """The files by layer: a file's layer is one above the highest layer it calls (layer 0 calls no other file)."""
    level: Dict[str, int] = {}

    def depth(file: str) -> int:
        if file not in level:
            level[file] = 1 + max((depth(target) for target in edges[file]), default=-1)
        return level[file]

    for file in edges:
        depth(file)
    result: List[List[str]] = [[] for _ in range(max(level.values()) + 1)]
    for file in sorted(level):
        result[level[file]].append(file)
    return result


def objects_in(directory: str) -> List[str]:
    return [os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(".o")]


def check(objects: List[str]) -> int:
    edges = graph(objects)
    cycle = find_cycle(edges)
    if cycle:
        print("check-layers: the files call each other in a circle:", file=sys.stderr)
        for source, target in zip(cycle, cycle[1:]):
            print(f"  {source} -> {target} ({', '.join(sorted(edges[source][target]))})", file=sys.stderr)
        return 1
    print(f"check-layers: {len(edges)} files, no cycle; the layers, lowest first:")
    for number, files in enumerate(layers(edges)):
        print(f"  {number}: {' '.join(files)}")
    return 0


def self_test() -> int:
    sources = {
        "a.c": "int b(void); int a(void); int a(void) { return b(); }\n",
        "b.c": "int a(void); int b(void); int b(void) { return a() + 1; }\n",
        "c.c": "int a(void); int c(void); int c(void) { return a(); }\n",
        "d.c": "int d(void); int d(void) { return 0; }\n",
    }
    compiler = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as directory:
        for name, text in sources.items():
            path = os.path.join(directory, name)
            with open(path, "w", encoding="ascii") as file:
                file.write(text)
            subprocess.run([compiler, "-c", "-o", path[:-2] + ".o", path], check=True)
        cycle = find_cycle(graph(objects_in(directory)))
        if sorted(set(cycle)) != ["a.c", "b.c"] or cycle[0] != cycle[-1]:
            print(f"check-layers --self-test: a.c <-> b.c not found as a cycle (found {cycle})", file=sys.stderr)
            return 1
        os.remove(os.path.join(directory, "b.o"))
        edges = graph(objects_in(directory))
        found = layers(edges)
        if find_cycle(edges) or found != [["a.c", "d.c"], ["c.c"]]:
            print(f"check-layers --self-test: wrong layers without b.c: {found}", file=sys.stderr)
            return 1
    print("check-layers --self-test: a cycle found, layers right")
    return 0


def main(arguments: List[str]) -> int:
    if arguments == ["--self-test"]:
        return self_test()
    if not arguments or arguments[0].startswith("-"):
        print(__doc__.split("\n", 1)[0], file=sys.stderr)
        return 2
    if len(arguments) == 1 and os.path.isdir(arguments[0]):
        return check(objects_in(arguments[0]))
    return check(arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
