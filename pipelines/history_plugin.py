"""The ``harvest_finished`` hook of the pipelines package, registered as a ``mind_harvest`` plugin.

Kept apart from ``pipelines.history`` so that loading the plugins (every ``mind`` command does)
does not import Dagster; only a finished harvest does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mind_core.plugins import hookimpl


@hookimpl
def harvest_finished(mind_home: Path, workspace: str | None, report: Any) -> None:
    from pipelines.history import record_command_line_harvest

    record_command_line_harvest(mind_home, workspace, report)
