"""A forget as every surface asks for it: ``mind forget``, the MCP tool ``forget_memory``,
``POST /admin/forget`` and the Dagster ``forget_job`` build one ``ForgetRequest`` and make the
one call ``run_forget`` (or ``forget_in``, which opens the workspace's mind for it), so they
select, preview, forget, lift tombstones and mark snapshots alike and answer the same fields.

Without ``apply`` nothing changes: the answer is what would go (``counts``, the first frames,
and for a person how many other frames would have their name and address replaced). With it,
the forget (``forget.forget``) or the lifting of tombstones (``forget.allow_return``) runs and
the snapshots of the workspace under the snapshot root are marked stale
(``snapshots.mark_stale``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mind_core.embeddings.base import Embedder
from mind_core.mind import Mind
from mind_core.privacy import forget as forgetting
from mind_core.privacy.selection import Selector, parse_frame_ids
from mind_core.privacy.snapshots import mark_stale
from mind_core.privacy.tombstones import PLACEHOLDER
from mind_core.store.home import MindHome
from mind_core.store.write_lock import mind_write_lock


@dataclass(frozen=True)
class ForgetRequest:
    """What to forget (the selectors of ``Selector``), whether to do it (``apply``; a dry run
    otherwise), whether to lift an earlier forget's tombstones instead (``allow_return``), and
    whether to VACUUM afterwards."""

    source: str | None = None
    frames: Sequence[int] | str | None = None
    query: str | None = None
    person: str | None = None
    since: str | None = None
    until: str | None = None
    apply: bool = False
    allow_return: bool = False
    vacuum: bool = True

    def selector(self) -> Selector:
        """The selector (``InvalidInputError`` when none is given, or a person with another)."""
        frames = self.frames
        ids = parse_frame_ids(frames) if isinstance(frames, str) else tuple(int(i) for i in frames or ())
        return Selector(
            source=self.source,
            frame_ids=ids,
            query=self.query,
            person=self.person,
            since=self.since,
            until=self.until,
        )

    @property
    def embeds(self) -> bool:
        """Whether the call embeds: only a person's forget does (the frames whose mentions it
        replaced are embedded again); the others need no model."""
        return self.apply and self.person is not None and not self.allow_return


def run_forget(
    mind: Mind,
    request: ForgetRequest,
    actor: str,
    *,
    workspace: str | None = None,
    snapshot_root: str | Path | None = None,
) -> dict[str, Any]:
    """Preview or do ``request`` on ``mind`` (opened writable, under its write lock, to apply) for
    ``actor`` (the audit log's who); the answer every surface gives. Applied, the snapshots of
    ``workspace`` under ``snapshot_root`` are marked stale (when both are given).

    - ``action``: ``forget`` or ``allow_return``; ``applied``: whether anything changed;
    - a forget's ``counts`` (``frames_deleted``, ``frames_redacted`` ...) and, for a person,
      ``redaction`` (what would be or was replaced, in words); a dry run, the first ``frames``
      that would go (id, time, snippet); applied, ``audit_id``, ``scrub``, ``seconds`` and
      ``snapshot_marker`` (and no text of what went);
    - lifting tombstones: ``tombstones_removed``.
    """
    selector = request.selector()
    if request.allow_return:
        counts = forgetting.allow_return(mind, selector, actor, apply=request.apply)
        return {"action": "allow_return", "applied": request.apply, **counts}
    plan = forgetting.plan_forget(mind.db, selector)
    answer: dict[str, Any] = {"action": "forget", "applied": request.apply}
    if plan.person is not None:
        answer["redaction"] = _redaction_sentence(plan, request.apply)
    if not request.apply:  # what would go; once gone, the answer quotes none of it
        return {**answer, "counts": plan.counts(), "frames": forgetting.preview(mind.db, plan)}
    result = forgetting.forget(mind, plan, actor, vacuum=request.vacuum)
    return {
        **answer,
        "counts": result.counts,
        "audit_id": result.audit_id,
        "scrub": result.scrub,
        "seconds": round(result.seconds, 3),
        "snapshot_marker": mark_stale(snapshot_root, workspace, result.audit_id) if workspace else None,
    }


def _redaction_sentence(plan: forgetting.ForgetPlan, applied: bool) -> str:
    """What a person's forget does to the frames that mention them, plainly."""
    count = len(plan.redacted_ids)
    verb = "replaced" if applied else "would replace"
    frames = f"{count} other frame{'s' if count != 1 else ''}"
    return (
        f"{verb} their name and address with {PLACEHOLDER!r} in {frames} (text, full-text index and "
        f"metadata), and in the knowledge graph, session summaries and run reports that quote them"
    )


def forget_in(
    home: MindHome,
    workspace: str,
    request: ForgetRequest,
    actor: str,
    embedder: Embedder | None = None,
    snapshot_root: str | Path | None = None,
) -> dict[str, Any]:
    """``run_forget`` on the mind of ``workspace`` (never created: a missing one is a
    NotFoundError), opened for this call: to apply, writable under its write lock (a harvest of
    the same mind waits, or is waited for); for a dry run, read-only. ``snapshot_root``: where the
    stale marker goes, ``$MIND_HARVEST_SNAPSHOT_URL`` or ``<home>/snapshots`` when None."""
    from mind_core.analytics.snapshot import default_snapshot_root

    path = home.mind_path(workspace)
    if not path.is_file():
        raise home.missing_mind(workspace)
    request.selector()  # a request that says nothing is refused before the mind is opened
    root = snapshot_root if snapshot_root is not None else default_snapshot_root(home)
    with contextlib.ExitStack() as stack:
        if request.apply:
            stack.enter_context(mind_write_lock(path))
        mind = stack.enter_context(
            Mind.open(path, embedder=embedder if request.embeds else None, readonly=not request.apply)
        )
        return {"workspace": workspace, **run_forget(mind, request, actor, workspace=workspace, snapshot_root=root)}
