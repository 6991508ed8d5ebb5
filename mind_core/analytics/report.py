"""A static analytics report: PNG charts and an index.html that shows them with small tables.

Charts are drawn on bare ``matplotlib.figure.Figure`` objects (Agg canvas), never through
``pyplot``: no global figure state and no GUI backend, so reports render in servers, Dagster
workers and threads alike.
"""

from __future__ import annotations

import html
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from mind_core import fs_url
from mind_core.analytics.queries import QUERIES, Analytics, cell_text
from mind_core.analytics.snapshot import SnapshotDestinationError
from mind_core.timestamps import utc_now

KG_GROWTH_PNG = "kg_growth.png"
FRAMES_BY_SOURCE_PNG = "frames_by_source.png"
TABLE_ROWS = 20
MAX_SOURCE_SERIES = 12  # more sources than this are summed as "other"


def _save(figure: Figure, path: Path) -> None:
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=110)


def _no_data(axes: Any, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes, color="gray")
    axes.set_xticks([])
    axes.set_yticks([])


def _active_series(rows: Sequence[Sequence[Any]], columns: Sequence[str], kind: str) -> dict[str, list]:
    """workspace -> [(day, active)] for one kind, summed over types, from kg_growth's valid-time rows."""
    at = {name: i for i, name in enumerate(columns)}
    changes: dict[str, dict[date, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        if row[at["basis"]] != "valid_time" or row[at["kind"]] != kind:
            continue
        changes[row[at["workspace"]]][row[at["day"]]] += int(row[at["added"]]) - int(row[at["retired"]])
    series: dict[str, list] = {}
    for workspace, per_day in sorted(changes.items()):
        running = 0
        points = []
        for day in sorted(per_day):
            running += per_day[day]
            points.append((day, running))
        series[workspace] = points
    return series


def plot_kg_growth(columns: Sequence[str], rows: Sequence[Sequence[Any]], path: Path) -> Path:
    figure = Figure(figsize=(9, 6))
    for position, (kind, title) in enumerate(
        (("entity", "Active entities"), ("relation", "Active relations"))
    ):
        axes = figure.add_subplot(2, 1, position + 1)
        series = _active_series(rows, columns, kind)
        if not series:
            _no_data(axes, f"no {kind} history yet")
        for workspace, points in series.items():
            days = [p[0] for p in points]
            values = [p[1] for p in points]
            axes.step(days, values, where="post", label=workspace, marker="o", markersize=3)
        axes.set_title(f"{title} over valid time (latest snapshot)")
        axes.set_ylabel("count")
        axes.set_ylim(bottom=0)
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(True, alpha=0.3)
        if len(series) > 1:
            axes.legend(fontsize="small")
    figure.autofmt_xdate()
    figure.tight_layout()
    _save(figure, path)
    return path


def plot_frames_by_source(columns: Sequence[str], rows: Sequence[Sequence[Any]], path: Path) -> Path:
    at = {name: i for i, name in enumerate(columns)}
    workspaces = {row[at["workspace"]] for row in rows}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        label = row[at["harvest_source"]] or f"({row[at['source']]})"
        if len(workspaces) > 1:
            label = f"{row[at['workspace']]}: {label}"
        counts[label][row[at["month"]] or "unknown"] += int(row[at["frames"]])
    ranked = sorted(counts, key=lambda label: -sum(counts[label].values()))
    if len(ranked) > MAX_SOURCE_SERIES:
        other: dict[str, int] = defaultdict(int)
        for label in ranked[MAX_SOURCE_SERIES - 1 :]:
            for month, n in counts.pop(label).items():
                other[month] += n
        ranked = ranked[: MAX_SOURCE_SERIES - 1] + ["other"]
        counts["other"] = other
    months = sorted({month for per_month in counts.values() for month in per_month})
    figure = Figure(figsize=(9, 4.5))
    axes = figure.add_subplot(1, 1, 1)
    if not months:
        _no_data(axes, "no frames yet")
    bottom = [0] * len(months)
    for label in ranked:
        heights = [counts[label].get(month, 0) for month in months]
        axes.bar(months, heights, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    axes.set_title("Frames per month of event time, by source (latest snapshot)")
    axes.set_ylabel("frames")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.grid(True, axis="y", alpha=0.3)
    if ranked:
        axes.legend(fontsize="small")
    if len(months) > 12:
        axes.set_xticks(range(0, len(months), max(1, len(months) // 12)))
    figure.autofmt_xdate()
    figure.tight_layout()
    _save(figure, path)
    return path


def _html_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell_text(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    if not rows:
        body = f'<tr><td colspan="{len(columns)}">no rows</td></tr>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
img { max-width: 100%; border: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; }
th { background: #f3f3f3; }
p.note { color: #555; }
"""


def write_report(analytics: Analytics, out_dir: str | Path) -> Path | str:
    """Write the charts and ``index.html`` into ``out_dir`` (a folder, or an fsspec URL: drawn in
    a local temporary folder, then uploaded); returns the HTML file's path or URL."""
    url = fs_url.as_url(out_dir)
    local = fs_url.local_path(url)
    if local is not None:
        return _write_report(analytics, local)
    fs, path = fs_url.filesystem(url, SnapshotDestinationError)
    with tempfile.TemporaryDirectory(prefix="mind-harvest-report-") as drawn:
        index = _write_report(analytics, Path(drawn))
        with fs_url.reaching(url, SnapshotDestinationError):
            fs.makedirs(path, exist_ok=True)
            fs.put([str(f) for f in sorted(Path(drawn).iterdir())], path.rstrip("/") + "/")
    return f"{url}/{index.name}"


def _write_report(analytics: Analytics, out: Path) -> Path:
    out = out.expanduser()
    out.mkdir(parents=True, exist_ok=True)
    growth = analytics.run("kg_growth")
    by_source = analytics.run("frames_by_source")
    plot_kg_growth(*growth, out / KG_GROWTH_PNG)
    plot_frames_by_source(*by_source, out / FRAMES_BY_SOURCE_PNG)
    snapshots = analytics.sql(
        "SELECT workspace, snapshot_date, taken_at, frames_rows AS frames, entities_rows AS entities, "
        "relations_rows AS relations, invalid_values FROM snapshots ORDER BY workspace, snapshot_date"
    )
    sections = [
        ("Snapshots", "Every snapshot under the root.", snapshots),
        ("Index health", QUERIES["index_health"].description, analytics.run("index_health")),
        ("Top entities", QUERIES["top_entities"].description, analytics.run("top_entities", {"limit": 10})),
        ("Harvest history", QUERIES["harvest_history"].description, analytics.run("harvest_history")),
    ]
    generated = utc_now().strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>mind-harvest analytics</title>',
        f"<style>{_STYLE}</style></head><body>",
        "<h1>mind-harvest analytics</h1>",
        f'<p class="note">Snapshots in {html.escape(str(analytics.root))}; generated {generated}.</p>',
        "<h2>Knowledge graph growth</h2>",
        f'<p class="note">{html.escape(QUERIES["kg_growth"].description)}</p>',
        f'<img src="{KG_GROWTH_PNG}" alt="Active entities and relations over time">',
        "<h2>Frames per source per month</h2>",
        f'<p class="note">{html.escape(QUERIES["frames_by_source"].description)}</p>',
        f'<img src="{FRAMES_BY_SOURCE_PNG}" alt="Frames per month by source">',
    ]
    for title, note, (columns, rows) in sections:
        shown = rows[-TABLE_ROWS:] if title == "Harvest history" else rows[:TABLE_ROWS]
        parts += [f"<h2>{html.escape(title)}</h2>", f'<p class="note">{html.escape(note)}</p>']
        if len(rows) > len(shown):
            parts.append(f'<p class="note">{len(shown)} of {len(rows)} rows shown.</p>')
        parts.append(_html_table(columns, shown))
    parts.append("</body></html>")
    index = out / "index.html"
    index.write_text("\n".join(parts), encoding="utf-8")
    return index
