"""The one table printer: aligned plain text for pipes and files, a rich table on a terminal.

Plain text is what scripts and ``grep`` read (header, a dashed rule, one line per row, no ANSI
codes, no box characters), so it is the form whenever the output is not a terminal or
``NO_COLOR`` is set; the rich form only dresses the same cells for a person at a terminal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

# How rows of a query can be printed (``mind analytics``): this table, CSV, or JSON objects.
OUTPUT_FORMATS = ("table", "csv", "json")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def format_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    right_aligned: Sequence[bool] | None = None,
) -> str:
    """Rows as aligned plain text: header, dashed rule, rows (columns flagged in
    ``right_aligned`` are aligned right, as numbers read best)."""
    cells = [[str(h) for h in headers]] + [[_text(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    right = list(right_aligned or [False] * len(headers))

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True)
        ).rstrip()

    lines = [line(row) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def styled_output(stream: IO[str] | None = None) -> bool:
    """Whether ``stream`` (default stdout) is a terminal that may get colour and boxes."""
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def rich_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    right_aligned: Sequence[bool] | None = None,
    title: str | None = None,
) -> Table:
    table = Table(title=title, header_style="bold", show_edge=False)
    for header, right in zip(headers, right_aligned or [False] * len(headers), strict=True):
        table.add_column(str(header), justify="right" if right else "left", overflow="fold")
    for row in rows:
        # cells are text, never markup; ANSI styling already in a cell (highlights) is kept
        table.add_row(*(Text.from_ansi(_text(v)) for v in row))
    return table


def print_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    right_aligned: Sequence[bool] | None = None,
    stream: IO[str] | None = None,
) -> None:
    """Print rows to ``stream`` (default stdout): rich on a terminal, plain text otherwise."""
    stream = stream or sys.stdout
    if styled_output(stream):
        Console(file=stream).print(rich_table(headers, rows, right_aligned))
    else:
        print(format_table(headers, rows, right_aligned), file=stream)
