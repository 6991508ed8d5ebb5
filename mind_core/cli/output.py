"""How commands print: JSON, tables (rich on a terminal, plain text otherwise) and stage progress.

Progress goes to stderr so stdout stays the command's result: bars with done/total, rate and
ETA on a terminal; otherwise a plain line when a stage starts and every few seconds after.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from mind_core.cli.base import CommandArgs
from mind_core.text_table import print_table

# The harvest engine's stage names, as a person reads them.
STAGE_LABELS = {"import": "scan/import", "cognify": "cognify/embed", "vectors": "embed"}
PLAIN_INTERVAL_SECONDS = 5.0


@dataclass(frozen=True)
class TableView:
    """A table to print: rich on a terminal, aligned plain text otherwise."""

    headers: Sequence[str]
    rows: Sequence[Sequence[Any]]
    right_aligned: Sequence[bool] | None = None


def emit(args: CommandArgs, data: Any, *parts: str | TableView) -> None:
    """``data`` as JSON with ``--json``; otherwise the text parts in order."""
    if args.json:
        if dataclasses.is_dataclass(data) and not isinstance(data, type):
            data = dataclasses.asdict(data)
        print(json.dumps(data, indent=2, default=str))
        return
    for part in parts:
        if isinstance(part, TableView):
            print_table(part.headers, part.rows, part.right_aligned)
        else:
            print(part)


class RateColumn(ProgressColumn):
    """Items per second."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.0f}/s", style="progress.data.speed")


class StageProgress:
    """The ``progress(stage, done, total)`` callback of a long command, shown on stderr.

    A context manager: on a terminal it runs rich bars (one per stage, labelled with ``label``);
    elsewhere it writes plain lines; disabled (``--quiet``) it shows nothing.
    """

    def __init__(self, label: str, enabled: bool = True) -> None:
        self.label = label
        self.enabled = enabled
        self.terminal = sys.stderr.isatty()
        self.bars: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        self.last_line: dict[str, float] = {}
        self.unshown: dict[str, tuple[int, int | None]] = {}

    def __enter__(self) -> StageProgress:
        if self.enabled and self.terminal:
            self.bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                RateColumn(),
                TimeRemainingColumn(),
                console=Console(file=sys.stderr),
            )
            self.bars.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.bars is not None:
            self.bars.stop()
        self._show_where_stages_ended()

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        if self.bars is not None:
            task = self.tasks.get(stage)
            if task is None:
                label = f"{self.label} {STAGE_LABELS.get(stage, stage)}"
                task = self.tasks[stage] = self.bars.add_task(label, total=total)
            self.bars.update(task, completed=done, total=total)
            return
        now = time.monotonic()
        last = self.last_line.get(stage)
        if last is None:  # a new stage: the earlier ones are over
            self._show_where_stages_ended()
        if last is not None and now - last < PLAIN_INTERVAL_SECONDS and done != total:
            self.unshown[stage] = (done, total)
            return
        self.last_line[stage] = now
        self.unshown.pop(stage, None)
        self._plain_line(stage, done, total)

    def _show_where_stages_ended(self) -> None:
        for stage, (done, total) in self.unshown.items():
            self._plain_line(stage, done, total)
        self.unshown.clear()

    def _plain_line(self, stage: str, done: int, total: int | None) -> None:
        of = f"/{total:,}" if total else ""
        print(f"[{self.label}] {STAGE_LABELS.get(stage, stage)}: {done:,}{of}", file=sys.stderr, flush=True)
