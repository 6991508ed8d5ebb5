"""``make run``: the bundled example exports harvested into the ``demo`` workspace through Dagster.

Registers every example source that exists (``examples/``) in the demo mind, adds their partitions
(as the harvest sensor would), then runs the code location's own jobs against the persistent
Dagster instance of ``$DAGSTER_HOME``: ``harvest_job`` for every source partition,
``mind_upkeep_job`` for the mind and ``memory_snapshot_job`` for today, all with the real
resources (the in-process MiniLM model). Runs execute in this process, one after another, so the
model loads once. Prints what each source gave, the checks, and one hybrid search. The runs are
recorded in the mind home's instance (``mind_harvest.pipelines.instance``), the one ``make ui`` opens.

Run again, it shows that unchanged sources are not harvested twice.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import dagster as dg
from mind_harvest.pipelines.definitions import defs
from mind_harvest.pipelines.instance import prepare_dagster_home
from mind_harvest.pipelines.partitions import (
    harvest_sources,
    mind_workspaces,
    parse_source_partition_key,
    source_partition_key,
)
from mind_harvest.pipelines.resources import EmbedderResource

from mind_core.errors import FingerprintMismatchError
from mind_core.harvest.catalog import read_catalog
from mind_core.harvest.ownership import frames_held
from mind_core.harvest.pipeline import register_source
from mind_core.harvest.summary import (
    SourceSummary,
    is_numeric,
    status_word,
    summary_columns,
    summary_notes,
)
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.text_table import format_table
from mind_core.timestamps import utc_now

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WORKSPACE = "demo"
# (plugin kind, source name, path under examples/)
EXAMPLE_SOURCES = (
    ("chatgpt", "chatgpt", "chatgpt"),
    ("claude", "claude", "claude"),
    ("gemini", "gemini", "gemini/MyActivity.json"),
    ("markdown", "vault", "vault"),
    ("email", "mail", "mail"),
)
SAMPLE_QUERY = "When is the billing database cut over to PostgreSQL?"
SAMPLE_RESULTS = 3
# Run logs kept out of the summary (they are all in the instance, for the UI).
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
# Dagster notes on stderr that a skipped blocking check gated nothing: true (an unchanged source
# skips its whole chain) and not worth a line per source in the summary.
SKIPPED_CHECK_NOTES = "dagster._core.execution.plan.active"


def register_examples(home: MindHome, examples: Path = EXAMPLES) -> list[str]:
    """Register each bundled example that exists; returns the partition keys of the demo sources."""
    keys = []
    with Mind.open(home.mind_path(WORKSPACE)) as mind:
        for kind, name, relative in EXAMPLE_SOURCES:
            if (examples / relative).exists():
                register_source(mind, kind, examples / relative, name)
                keys.append(source_partition_key(WORKSPACE, name))
    return keys


def add_partitions(instance: dg.DagsterInstance, home: MindHome) -> None:
    """What the harvest sensor does on its first tick: a partition per source and per mind."""
    catalog = read_catalog(home)
    sources = [source_partition_key(s.workspace, s.source.source) for s in catalog.sources]
    for partitions_def, keys in ((harvest_sources, sources), (mind_workspaces, list(catalog.minds))):
        missing = [k for k in keys if not instance.has_dynamic_partition(partitions_def.name, k)]
        if missing:
            instance.add_dynamic_partitions(partitions_def.name, missing)


def _metadata(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
    return {
        event.asset_key.to_user_string(): {k: v.value for k, v in event.materialization.metadata.items()}
        for event in result.get_asset_materialization_events()
    }


def _source_summary(key: str, result: dg.ExecuteInProcessResult, held: int) -> SourceSummary:
    """The table row of one source's harvest run; ``held``: the frames the source holds."""
    meta = _metadata(result)
    if "harvest_items" not in meta:
        return SourceSummary.unchanged(key, held)
    imported = meta.get("iframe_imports", {})
    return SourceSummary(
        key,
        status_word("ok") if result.success else "FAILED",
        items=meta["harvest_items"]["items"],
        new_frames=imported.get("frames_new", 0),
        updated_frames=imported.get("frames_updated", 0),
        unchanged_frames=imported.get("frames_unchanged", 0),
        pruned_frames=imported.get("pruned", 0),
        entity_mentions=meta.get("cognified_frames", {}).get("entity_mentions", 0),
        vectors=sum(
            meta.get(asset, {}).get("vectors_written", 0) for asset in ("cognified_frames", "vector_index")
        ),
        errors=meta["harvest_items"]["errors"],
    )


def next_command(home_root: Path, cwd: Path | None = None) -> str:
    """The recall a new user can paste next: the demo home and the venv's ``mind``, relative to
    the working folder when they lie below it (``make run`` runs in the checkout)."""
    cwd = (cwd or Path.cwd()).resolve()
    mind = Path(sys.executable).with_name("mind")

    def shown(path: Path) -> str:
        path = path.resolve() if path.is_absolute() else path
        return str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)

    return f'MIND_HOME={shown(home_root)} {shown(mind)} recall "{SAMPLE_QUERY}" --workspace {WORKSPACE}'


def main() -> int:
    began = time.perf_counter()
    logging.getLogger(SKIPPED_CHECK_NOTES).setLevel(logging.ERROR)
    home = MindHome()
    instance_home = prepare_dagster_home(home)
    os.environ["DAGSTER_HOME"] = str(instance_home)
    print(f"mind home: {home.root}\nDagster home: {instance_home}\n")
    keys = register_examples(home)
    if not keys:
        print(f"no example exports found under {EXAMPLES}", file=sys.stderr)
        return 1
    embedder = EmbedderResource().build()
    try:
        Mind.open(home.mind_path(WORKSPACE), embedder=embedder, readonly=True).close()
    except FingerprintMismatchError:
        # a demo mind left by an earlier version, embedded by another model backend: re-embed it
        print("the demo mind's vectors come from another embedder; re-embedding them (`mind reindex`)\n")
        Mind.open(home.mind_path(WORKSPACE), embedder=embedder, rebuild_vectors=True).close()
    results: dict[str, dg.ExecuteInProcessResult] = {}
    with dg.DagsterInstance.get() as instance:
        add_partitions(instance, home)
        harvest_job = defs.resolve_job_def("harvest_job")
        for key in keys:
            results[key] = harvest_job.execute_in_process(
                QUIET_RUN_CONFIG, instance=instance, partition_key=key, raise_on_error=False
            )
        upkeep = defs.resolve_job_def("mind_upkeep_job").execute_in_process(
            QUIET_RUN_CONFIG, instance=instance, partition_key=WORKSPACE, raise_on_error=False
        )
        snapshot = defs.resolve_job_def("memory_snapshot_job").execute_in_process(
            QUIET_RUN_CONFIG,
            instance=instance,
            partition_key=utc_now().date().isoformat(),
            raise_on_error=False,
        )
    runs = [*results.values(), upkeep, snapshot]
    checks = [c for r in runs for c in r.get_asset_check_evaluations()]

    with Mind.open(home.mind_path(WORKSPACE), embedder=embedder) as mind:
        summaries = [
            _source_summary(key, result, frames_held(mind.db, parse_source_partition_key(key).source))
            for key, result in results.items()
        ]
        columns = summary_columns(summaries)
        print(format_table(columns, [s.row(columns) for s in summaries], [is_numeric(c) for c in columns]))
        for note in summary_notes(summaries):
            print(f"\n{note}")
        totals = {
            "frames": mind.frames.get_stats()["total"],
            "sessions": mind.db.scalar("SELECT COUNT(*) FROM sessions"),
            "entities": mind.knowledge.get_entity_count(),
            "relations": mind.db.scalar("SELECT COUNT(*) FROM knowledge_relations WHERE valid_to IS NULL"),
            "vectors": mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec"),
        }
        print("\nthe demo mind: " + ", ".join(f"{v:,} {k}" for k, v in totals.items()))
        failed = [f"{c.asset_key.to_user_string()}:{c.check_name}" for c in checks if not c.passed]
        skipped = sum(1 for key, result in results.items() if "harvest_items" not in _metadata(result))
        kinds = Counter(c.check_name for c in checks)  # which checks: a run checks more than the sources
        print(
            f"asset checks: {len(checks) - len(failed)} of {len(checks)} passed"
            + f" ({', '.join(f'{name} x{count}' for name, count in sorted(kinds.items()))})"
            + (f"; failed: {', '.join(failed)}" if failed else "")
            + (f" ({skipped} unchanged source{'s' if skipped > 1 else ''}: not scanned, only source_parsed checked)"
               if skipped else "")
        )
        snapshot_meta = _metadata(snapshot).get("memory_snapshots")
        if snapshot_meta:
            print(f"snapshot: {snapshot_meta['snapshot_root']} (report: {snapshot_meta['report']})")
        print(f'\nhybrid search: "{SAMPLE_QUERY}"')
        for n, hit in enumerate(mind.search.search(SAMPLE_QUERY, limit=SAMPLE_RESULTS), 1):
            text = " ".join(hit.frame.content.split())
            print(f"  {n}. [{hit.frame.created_at[:10]}] {text[:110]}{'…' if len(text) > 110 else ''}")
    print(f"\nfinished in {time.perf_counter() - began:.1f}s")
    print(f"\nnext, ask the demo mind yourself:\n  {next_command(home.root)}")
    return 0 if all(r.success for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
