"""The engine never imports a surface: nothing in mind_core outside query/ and cli/ imports
mind_core.query or mind_core.cli (at the top, in a function or for type checking alone)."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "mind_core"
SURFACES = ("mind_core.query", "mind_core.cli")


def imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_engine_module_imports_a_surface():
    offenders = []
    for path in ENGINE.rglob("*.py"):
        if path.relative_to(ENGINE).parts[0] in ("query", "cli"):
            continue
        for name in imported_modules(ast.parse(path.read_text(), str(path))):
            if any(name == surface or name.startswith(surface + ".") for surface in SURFACES):
                offenders.append(f"{path.relative_to(ENGINE.parent)} imports {name}")
    assert offenders == []


def test_the_scan_finds_a_surface_import():
    tree = ast.parse("def f():\n    from mind_core.query.models import requests\nimport mind_core.cli.base\n")
    assert {"mind_core.query.models", "mind_core.cli.base"} <= imported_modules(tree)
