"""The layering rule of ARCHITECTURE.md for plugins/: of ours, only the item model and the hook marker.

A plugin written against the engine's internals would break with every engine change and could not
be lifted out as a third-party package, which is what the built-in plugins are meant to show.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
ALLOWED = ("mind_core.harvest", "mind_core.plugins", "mind_harvest.plugins")
OURS_AND_HOSTS = ("mind_core", "mind_harvest", "plugins", "pipelines", "dagster")


def imported_modules(source: str) -> list[str]:
    """Every absolute module an import statement names; ``from a import b`` counts as ``a.b``."""
    modules: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def forbidden(module: str) -> bool:
    if module.split(".")[0] not in OURS_AND_HOSTS:
        return False
    return not any(module == allowed or module.startswith(allowed + ".") for allowed in ALLOWED)


def test_the_rule_catches_each_import_form() -> None:
    source = (
        "import mind_core.store.db\nfrom mind_core.timestamps import now_iso\nfrom mind_core.store import frames\n"
        "from mind_core import harvest\nfrom mind_core.harvest.items import HarvestItem\n"
        "from mind_core.plugins import hookimpl\nimport dagster as dg\nimport json\n"
        "from mind_harvest.plugins._jsonstream import items\n"
        "def late():\n    from mind_harvest.pipelines import assets\n"
    )
    found = [m for m in imported_modules(source) if forbidden(m)]
    assert found == [
        "mind_core.store.db",
        "mind_core.timestamps.now_iso",
        "mind_core.store.frames",
        "dagster",
        "mind_harvest.pipelines.assets",
    ]


@pytest.mark.parametrize(
    "path", sorted(PLUGINS.rglob("*.py")), ids=lambda p: p.relative_to(PLUGINS).as_posix()
)
def test_plugin_modules_import_only_the_item_model_and_the_hook_marker(path: Path) -> None:
    imports = imported_modules(path.read_text(encoding="utf-8"))
    assert [m for m in imports if forbidden(m)] == []


def test_every_plugin_module_is_checked() -> None:
    checked = {p.stem for p in PLUGINS.rglob("*.py")}
    assert {"chatgpt", "claude", "gemini", "email", "markdown"} <= checked
