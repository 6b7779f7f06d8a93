"""The package's modules stand in layers: no module imports another that imports it back, directly or round a
circle (imports under ``TYPE_CHECKING`` count too: a circle for the type checker is a circle for the reader). Read
from the sources with ``ast``; and every module imports on its own, in a fresh interpreter."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from typing import Dict, List, Set

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src", "usher")


def modules() -> List[str]:
    return sorted(name[:-3] for name in os.listdir(PACKAGE) if name.endswith(".py"))


def imported(module: str, known: Set[str]) -> Set[str]:
    """The package's modules that ``module`` imports (``__init__`` for the package itself)."""
    with open(os.path.join(PACKAGE, module + ".py"), encoding="utf-8") as file:
        tree = ast.parse(file.read(), filename=module + ".py")
    found: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and not (node.module or "").startswith("usher"):
                continue
            if node.level > 1:
                raise AssertionError(f"{module}.py imports from above the package")
            base = (node.module or "") if node.level == 1 else (node.module or "").partition(".")[2]
            if base:
                found.add(base.partition(".")[0])
            else:  # from . import x: a module, or a name of the package's own
                found.update(alias.name if alias.name in known else "__init__" for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "usher" or alias.name.startswith("usher."):
                    found.add(alias.name.partition(".")[2].partition(".")[0] or "__init__")
    unknown = found - known
    assert not unknown, f"{module}.py imports modules the package does not have: {sorted(unknown)}"
    found.discard(module)
    return found


def cycle(graph: Dict[str, Set[str]]) -> List[str]:
    """One circle of imports (its first module repeated at the end), or an empty list.

    graphlib's (the standard library's) cycle detection: it lists a cycle with each node a predecessor of the next,
    and a node's predecessors here are what it points to, so the list is reversed to read in the edges' direction."""
    try:
        TopologicalSorter({node: set(targets) for node, targets in graph.items()}).prepare()
    except CycleError as error:
        return list(reversed(error.args[1]))
    return []


def test_the_modules_import_each_other_without_a_circle() -> None:
    known = set(modules())
    graph = {module: imported(module, known) for module in known}
    assert "lease" in graph["client"], "the check reads client.py's imports"
    found = cycle(graph)
    assert not found, "the modules import each other in a circle: " + " -> ".join(found)


def test_the_check_finds_a_circle() -> None:
    assert cycle({"client": {"lease"}, "lease": {"client"}, "types": set()}) in (
        ["client", "lease", "client"],
        ["lease", "client", "lease"],
    )
    assert cycle({"client": {"lease"}, "lease": {"types"}, "types": set()}) == []


@pytest.mark.parametrize("module", modules())
def test_each_module_imports_on_its_own(module: str) -> None:
    name = "usher" if module == "__init__" else f"usher.{module}"
    subprocess.run(
        [sys.executable, "-c", f"import {name}"],
        check=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(PACKAGE)},
    )
