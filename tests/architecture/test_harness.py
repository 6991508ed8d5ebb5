"""The test harness's own rules: benchmarks share code with the tests only through
``mind_core.testing`` (never ``tests/``, so a benchmark runs without the suite's helpers), and the
markers the suite selects by are registered, with ``slow`` on everything that loads the real
model or starts the cluster, so ``pytest -m "not slow"`` stays the quick inner loop."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

BUILT_IN_MARKS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings", "timeout"}
SLOW_WITH = {"real_model", "cluster"}  # the model load (~9 s once) and the cluster start are slow


def imports_of_tests(source: str) -> list[str]:
    """Every import in the source that reaches the ``tests`` package."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "tests"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found += [node.module] if (node.module or "").split(".")[0] == "tests" else []
    return found


def marks_in(node: ast.expr) -> set[str]:
    """The names of ``pytest.mark.<name>`` (called or not) in a decorator or a ``pytestmark``."""
    return {
        n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"
    }


def marks_by_test(tree: ast.Module) -> dict[str, set[str]]:
    """Each test function's marks, the module's ``pytestmark`` included."""
    module = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            module |= marks_in(node.value)
    return {
        node.name: module | {m for d in node.decorator_list for m in marks_in(d)}
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


def files_of_the_suite() -> list[Path]:
    return sorted((REPO_ROOT / "tests").rglob("test_*.py"))


def test_the_import_rule_catches_each_form() -> None:
    forms = ["import tests", "import tests.pipelines.harness as h", "from tests import conftest",
             "from tests.conftest import REPO_ROOT"]
    assert all(imports_of_tests(form) for form in forms)
    others = "from mind_core.testing.exports import WORDS\nimport testsuite\nfrom . import tests"
    assert imports_of_tests(others) == []


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "benchmarks").glob("*.py")), ids=lambda p: p.name)
def test_benchmarks_never_import_the_test_suite(path: Path) -> None:
    assert imports_of_tests(path.read_text(encoding="utf-8")) == []


def test_the_selecting_markers_are_registered(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert {"slow", "real_model", "cluster"} <= registered
    used = set()
    for path in files_of_the_suite():
        for marks in marks_by_test(ast.parse(path.read_text(encoding="utf-8"))).values():
            used |= marks
    assert used - BUILT_IN_MARKS <= registered  # a misspelt marker would select nothing, silently


def test_the_mark_reader_sees_module_and_function_marks() -> None:
    tree = ast.parse(
        "pytestmark = [pytest.mark.cluster, pytest.mark.slow]\n"
        "@pytest.mark.real_model\n@pytest.mark.parametrize('x', [1])\ndef test_a(x): ...\n"
    )
    assert marks_by_test(tree) == {"test_a": {"cluster", "slow", "real_model", "parametrize"}}


def test_real_model_and_cluster_tests_are_also_slow() -> None:
    unmarked = [
        f"{path.relative_to(REPO_ROOT)}::{name}"
        for path in files_of_the_suite()
        for name, marks in marks_by_test(ast.parse(path.read_text(encoding="utf-8"))).items()
        if marks & SLOW_WITH and "slow" not in marks
    ]
    assert unmarked == []
