"""How the results of the harvest checks are worded, for the checks Dagster runs and for the
harvests of the ``mind`` command recorded in the instance (``mind_harvest.pipelines.history``): one
source of wording, so a failure reads the same whichever path found it.

``source_parsed`` is a check of ``harvest_items`` evaluated by the scan step itself
(``SOURCE_PARSED``, blocking): a source that gave no item fails the scan, so its partition is a
failed materialization with a failed ERROR check, and nothing downstream runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

import dagster as dg
from mind_harvest.pipelines.metadata import audit_table, errors_table
from mind_harvest.pipelines.partitions import harvest_sources

from mind_core.harvest.audit import AuditFinding, duplicate_imports, index_gaps, timestamps_not_kept
from mind_core.harvest.items import HarvestError
from mind_core.harvest.stores import FAILING_STATUSES

HARVEST_ITEMS = "harvest_items"
with warnings.catch_warnings():  # partitioned checks: a preview feature, chosen (see checks.py)
    warnings.simplefilter("ignore", dg.PreviewWarning)
    SOURCE_PARSED = dg.AssetCheckSpec(
        "source_parsed",
        asset=HARVEST_ITEMS,
        blocking=True,
        partitions_def=harvest_sources,
        description="The scan read at least one item. A source whose every record failed, that "
        "holds nothing its plugin recognises, or whose path is gone fails its scan with the "
        "reason, and nothing is imported.",
    )


def source_parsed_result(
    status: str, reason: str | None, items: int, errors: Iterable[HarvestError], error_count: int
) -> dg.AssetCheckResult:
    """``source_parsed`` for a scan whose outcome is ``status`` (ok, partial, failed, empty or
    missing)."""
    failed = status in FAILING_STATUSES
    return dg.AssetCheckResult(
        check_name=SOURCE_PARSED.name,
        asset_key=SOURCE_PARSED.asset_key,
        passed=not failed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=f"{status}: {reason}" if failed else f"{items} item(s) read",
        metadata={
            "status": status,
            "items": items,
            "errors": error_count,
            "first_errors": errors_table(errors, error_count),
        },
    )


def error_rate_result(
    errors: Iterable[HarvestError], error_count: int, records: int, max_error_rate: float, **asset: str
) -> dg.AssetCheckResult:
    """``error_rate_below_threshold``: the share of ``records`` that could not be read (a warning)."""
    rate = error_count / records if records else 0.0
    return dg.AssetCheckResult(
        **asset,
        passed=rate <= max_error_rate,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{rate:.1%} of {records} record(s) failed (threshold {max_error_rate:.1%})",
        metadata={
            "error_rate": round(rate, 4),
            "max_error_rate": max_error_rate,
            "errors": error_count,
            "first_errors": errors_table(errors, error_count),
        },
    )


def audit_result(finding: AuditFinding, passed_text: str, failed_text: str, **asset: str) -> dg.AssetCheckResult:
    """An ERROR check over what an audit of the mind found (``mind_core.harvest.audit``)."""
    return dg.AssetCheckResult(
        **asset,
        passed=finding.ok,
        severity=dg.AssetCheckSeverity.ERROR,
        description=passed_text if finding.ok else failed_text.format(failures=finding.failures),
        metadata={
            "checked": finding.checked,
            "failures": finding.failures,
            "examples": audit_table(finding.examples),
        },
    )


# The audits of a source's frames: check name -> (asset, audit, wording when it passes / fails).
AUDITS: dict[str, tuple[str, Callable[[Any, str], AuditFinding], str, str]] = {
    "no_item_imported_twice": (
        "iframe_imports",
        duplicate_imports,
        "every frame is the ledger's one frame of its message",
        "{failures} frame(s) copy a message the ledger maps to another frame (or to none)",
    ),
    "timestamps_kept": (
        "iframe_imports",
        timestamps_not_kept,
        "every timed message kept its time",
        "{failures} frame(s) lost their message's time",
    ),
    "indexes_cover_frames": (
        "vector_index",
        index_gaps,
        "every frame is in the full-text index and has a current vector",
        "{failures} frame(s) missing from the full-text index or without a current vector",
    ),
}


def audit_source(db: Any, source: str, check_name: str) -> dg.AssetCheckResult:
    """The audit check ``check_name`` over the frames of ``source`` in the mind's ``db``."""
    asset, audit, passed_text, failed_text = AUDITS[check_name]
    return audit_result(audit(db, source), passed_text, failed_text, asset_key=asset, check_name=check_name)
