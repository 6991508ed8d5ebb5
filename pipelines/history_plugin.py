"""The ``harvest_finished`` hook of the pipelines package, registered as a ``mind_harvest`` plugin.

Kept apart from ``mind_harvest.pipelines.history`` so that loading the plugins (every ``mind`` command does)
does not import Dagster; only a harvest that has something to record does. A source harvested
again unchanged, whose chain the instance already holds, costs a file lookup: the mark that
``mind_harvest.pipelines.history`` leaves beside the instance when it records a source's chain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mind_harvest.pipelines.instance import recorded_mark

from mind_core.plugins import hookimpl
from mind_core.store.home import PERSONAL


@hookimpl
def harvest_finished(mind_home: Path, workspace: str | None, report: Any) -> None:
    if report.skipped and recorded_mark(mind_home, workspace or PERSONAL, report.source).exists():
        return  # unchanged, and already in the history: nothing to record, no Dagster to import
    from mind_harvest.pipelines.history import record_command_line_harvest

    record_command_line_harvest(mind_home, workspace, report)
