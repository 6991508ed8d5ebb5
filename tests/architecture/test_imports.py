"""The map's layering rules, checked on every import the code holds (module level, under
``TYPE_CHECKING`` and inside functions alike), so a rule broken in a corner fails here rather than
in a reader's head.

(a) the engine never imports its surfaces (``mind_core.query``, ``mind_core.cli``), no part of
    ``mind_core`` imports Dagster or ``pipelines``, and the product never imports the tests or
    ``mind_core.testing``;
(b) no import cycle: every module can be read, tested and replaced after the modules it uses;
(c) at most 12 modules directly in ``mind_core/``, so its top stays a table of contents;
(d) no module over 700 lines in ``mind_core``, ``plugins`` or ``pipelines``;
(e) each package of ``mind_core`` says its purpose in its ``__init__`` docstring's first line.

Each rule is a function over module sources, so a synthetic source shows it catches a violation.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGES = ("mind_core", "plugins", "pipelines")
SURFACES = ("mind_core.query", "mind_core.cli")
TESTING = "mind_core.testing"
NEVER_IN_MIND_CORE = ("dagster", "mind_harvest", "plugins", "pipelines")
MAX_TOP_MODULES = 12
MAX_LINES = 700

@dataclass(frozen=True)
class Module:
    name: str
    path: str
    source: str

    @property
    def is_package(self) -> bool:
        return self.path.endswith("__init__.py")


def in_scope(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


# the folders plugins/ and pipelines/ install as mind_harvest.plugins and mind_harvest.pipelines
INSTALLED_AS = {"plugins": "mind_harvest.plugins", "pipelines": "mind_harvest.pipelines"}


def module_name(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([INSTALLED_AS.get(parts[0], parts[0]), *parts[1:]])


@cache
def repository_modules() -> dict[str, Module]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            relative = path.relative_to(REPO_ROOT)
            name = module_name(relative)
            modules[name] = Module(name, relative.as_posix(), path.read_text(encoding="utf-8"))
    return modules


def imported_names(module: Module) -> list[str]:
    """Every name an import statement of the module asks for, absolute, wherever it stands; for
    ``from pkg import x`` both ``pkg`` and ``pkg.x`` (``x`` may be a module or a name in ``pkg``)."""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(module.source, module.path)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.append(base)
            names.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def import_graph(modules: Mapping[str, Module]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports. ``from pkg import mod`` imports ``pkg.mod``;
    ``from pkg import name`` imports ``pkg`` (its ``__init__``); ``import a.b`` imports ``a.b``."""
    graph: dict[str, set[str]] = {}
    for name, module in modules.items():
        targets = set()
        for wanted in imported_names(module):
            while wanted and wanted not in modules:
                wanted = wanted.rpartition(".")[0]
            if wanted and wanted != name:
                targets.add(wanted)
        graph[name] = targets
    return _without_redundant_packages(graph, modules)


def _without_redundant_packages(
    graph: dict[str, set[str]], modules: Mapping[str, Module]
) -> dict[str, set[str]]:
    """``from pkg import mod`` yields both ``pkg`` and ``pkg.mod``; it imports only ``pkg.mod``
    unless the same statement (or another) also takes a name defined in ``pkg`` itself."""
    pruned = {}
    for name, module in modules.items():
        package_names = _names_taken_from_packages(module, modules)
        pruned[name] = {t for t in graph[name] if not modules[t].is_package or t in package_names}
    return pruned


def _names_taken_from_packages(module: Module, modules: Mapping[str, Module]) -> set[str]:
    """The packages from which the module takes something that is not a submodule."""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    taken = set()
    for node in ast.walk(ast.parse(module.source, module.path)):
        if isinstance(node, ast.Import):
            taken.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base in modules and any(f"{base}.{alias.name}" not in modules for alias in node.names):
                taken.add(base)
    return taken


def import_cycles(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                lowlink[node] = min(lowlink[node], lowlink[target])
            elif target in on_stack:
                lowlink[node] = min(lowlink[node], index[target])
        if lowlink[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def forbidden_imports(module: Module) -> list[str]:
    """Rule (a): what this module imports that its layer must not."""
    name = module.name
    rules: list[tuple[bool, tuple[str, ...]]] = [
        (in_scope(name, "mind_core"), NEVER_IN_MIND_CORE),
        (in_scope(name, "mind_core") and not any(in_scope(name, s) for s in (*SURFACES, TESTING)), SURFACES),
        (in_scope(name, "mind_core") and not in_scope(name, TESTING), ("tests", TESTING)),
    ]
    found = []
    for wanted in imported_names(module):
        for applies, banned in rules:
            if applies and any(in_scope(wanted, b) for b in banned):
                found.append(wanted)
    return sorted(set(found))


def top_level_modules(modules: Iterable[Module]) -> list[str]:
    """Rule (c): the .py files directly in ``mind_core/``."""
    return sorted(m.path for m in modules if m.path.count("/") == 1 and m.path.startswith("mind_core/"))


def line_count(module: Module) -> int:
    return len(module.source.splitlines())


def states_its_purpose(module: Module) -> bool:
    """Rule (e): a docstring whose first line says what the package is for."""
    docstring = ast.get_docstring(ast.parse(module.source, module.path), clean=False)
    return bool(docstring and docstring.strip() and docstring.splitlines()[0].strip())


@cache
def cyclic_modules() -> dict[str, set[str]]:
    modules = repository_modules()
    return {name: cycle for cycle in import_cycles(import_graph(modules)) for name in cycle}


def module_params(rule: str, select: Callable[[Module], bool] = lambda m: True) -> list[str]:
    """One case per module the rule covers (``rule`` names it for the reader)."""
    return [name for name, module in repository_modules().items() if select(module)]


# -- (a) layers ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", module_params("layers", lambda m: in_scope(m.name, "mind_core")))
def test_module_imports_only_what_its_layer_may(name: str) -> None:
    assert forbidden_imports(repository_modules()[name]) == []


def synthetic(name: str, source: str, path: str | None = None) -> Module:
    path = path or name.replace(".", "/") + ".py"
    return Module(name, path, source)


def test_the_layer_rule_catches_each_forbidden_import() -> None:
    engine = synthetic(
        "mind_core.store.example",
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from mind_core.query.models import Answer\n"
        "def run():\n    import dagster as dg\n    from mind_core.cli import main\n"
        "    from ..testing import fakes\n    import tests.conftest\n    from mind_harvest.pipelines import assets\n",
    )
    assert forbidden_imports(engine) == [
        "dagster",
        "mind_core.cli",
        "mind_core.cli.main",
        "mind_core.query.models",
        "mind_core.query.models.Answer",
        "mind_core.testing",
        "mind_core.testing.fakes",
        "mind_harvest.pipelines",
        "mind_harvest.pipelines.assets",
        "tests.conftest",
    ]
    surface = synthetic("mind_core.cli.example", "from mind_core.query import models\nimport dagster\n")
    assert forbidden_imports(surface) == ["dagster"]
    testing = synthetic(
        "mind_core.testing.example", "from tests import conftest\nfrom mind_core.cli import main\n"
    )
    assert forbidden_imports(testing) == []
    assert (
        forbidden_imports(synthetic("pipelines.example", "import dagster\nfrom mind_core.cli import main\n"))
        == []
    )


# -- (b) no cycle --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", module_params("cycles"))
def test_module_is_in_no_import_cycle(name: str) -> None:
    assert sorted(cyclic_modules().get(name, ())) == []


def test_the_cycle_rule_sees_every_kind_of_import() -> None:
    modules = {
        m.name: m
        for m in (
            synthetic("pkg", "", "pkg/__init__.py"),
            synthetic(
                "pkg.a", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
            ),
            synthetic("pkg.b", "def f():\n    from pkg import c\n"),
            synthetic("pkg.c", "from . import a\n"),
            synthetic("pkg.d", "from pkg import VALUE\n"),
            synthetic("pkg.e", "import pkg.d\n"),
            synthetic("pkg.sub", "from pkg.e import x\n", "pkg/sub/__init__.py"),
            synthetic("pkg.sub.f", "from pkg.sub import x\n"),
        )
    }
    graph = import_graph(modules)
    assert graph["pkg.b"] == {"pkg.c"}  # from pkg import c: the module, not the package
    assert graph["pkg.d"] == {"pkg"}  # from pkg import VALUE: the package's __init__
    assert sorted(map(sorted, import_cycles(graph))) == [["pkg.a", "pkg.b", "pkg.c"]]
    modules["pkg"] = synthetic("pkg", "from pkg.sub import f\n", "pkg/__init__.py")
    cycles = import_cycles(import_graph(modules))
    assert sorted(map(sorted, cycles)) == [
        ["pkg", "pkg.d", "pkg.e", "pkg.sub", "pkg.sub.f"],
        ["pkg.a", "pkg.b", "pkg.c"],
    ]


# -- (c) a short top ------------------------------------------------------------------------------
def test_mind_core_top_holds_at_most_twelve_modules() -> None:
    top = top_level_modules(repository_modules().values())
    assert len(top) <= MAX_TOP_MODULES, top


def test_the_top_rule_counts_only_the_top() -> None:
    modules = [synthetic(f"mind_core.m{i}", "") for i in range(13)] + [synthetic("mind_core.store.db", "")]
    assert len(top_level_modules(modules)) == 13 > MAX_TOP_MODULES
    assert top_level_modules([synthetic("mind_core", "", "mind_core/__init__.py")]) == [
        "mind_core/__init__.py"
    ]


# -- (d) module size -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", module_params("size"))
def test_module_is_at_most_700_lines(name: str) -> None:
    assert line_count(repository_modules()[name]) <= MAX_LINES


def test_the_size_rule_counts_lines() -> None:
    assert line_count(synthetic("mind_core.big", "x = 1\n" * (MAX_LINES + 1))) > MAX_LINES
    assert line_count(synthetic("mind_core.fits", "x = 1\n" * MAX_LINES)) == MAX_LINES


# -- (e) packages say what they are for ----------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    [
        n
        for n, m in repository_modules().items()
        if m.is_package and n.count(".") == 1 and in_scope(n, "mind_core")
    ],
)
def test_package_states_its_purpose(name: str) -> None:
    assert states_its_purpose(repository_modules()[name])


def test_the_purpose_rule_wants_a_first_line() -> None:
    assert states_its_purpose(synthetic("mind_core.x", '"""Where rows live."""\n', "mind_core/x/__init__.py"))
    assert not states_its_purpose(synthetic("mind_core.x", "import os\n", "mind_core/x/__init__.py"))
    assert not states_its_purpose(
        synthetic("mind_core.x", '"""\n\nWhere rows live."""\n', "mind_core/x/__init__.py")
    )
    assert not states_its_purpose(synthetic("mind_core.x", "", "mind_core/x/__init__.py"))
