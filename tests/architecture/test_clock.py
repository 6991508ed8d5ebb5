"""One clock: the engine, the plugins and the Dagster location read "now" only through
``mind_core.timestamps.utc_now``, which the tests pin (``tests/conftest.py``'s ``now`` fixture).

A test once passed or failed with the weekday CI ran on, because the search read the machine's
clock directly; these checks keep any new reading of the machine's clock out of the code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mind_core.timestamps import utc_now
from tests.conftest import FIXED_NOW, REPO_ROOT

PACKAGES = ("mind_core", "plugins", "pipelines")
CLOCK_ITSELF = REPO_ROOT / "mind_core" / "timestamps.py"
# datetime.now(...), datetime.utcnow(), date.today(), and SQLite's own clock in SQL text
READS_THE_MACHINE_CLOCK = re.compile(
    r"\bdatetime\.(?:now|utcnow|today)\(|\bdate\.today\(|(?:date|julianday|strftime)\([^)]*'now'"
)


def sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO_ROOT / package).rglob("*.py") if p != CLOCK_ITSELF)


def test_the_rule_catches_each_form() -> None:
    readings = [
        "datetime.now(UTC)",
        "datetime.utcnow()",
        "date.today()",
        "julianday('now', '-3 days')",
        "strftime('%Y', 'now')",
    ]
    assert all(READS_THE_MACHINE_CLOCK.search(text) for text in readings)
    assert not READS_THE_MACHINE_CLOCK.search("utc_now()")
    assert not READS_THE_MACHINE_CLOCK.search("created_at TEXT NOT NULL DEFAULT (datetime('now'))".replace("'now'", "?"))


@pytest.mark.parametrize("path", sources(), ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_no_module_reads_the_machine_clock(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    found = [
        f"{n}: {line.strip()}"
        for n, line in enumerate(lines, 1)
        if READS_THE_MACHINE_CLOCK.search(line) and "DEFAULT (datetime('now'))" not in line
    ]
    assert found == []


def test_tests_run_at_the_pinned_instant() -> None:
    assert abs((utc_now() - FIXED_NOW).total_seconds()) < 60
