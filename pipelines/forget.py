"""The forget job: ``mind forget`` as a Dagster run, launched from the UI's launchpad (or by an
API call) with the workspace, the selectors and ``yes`` in its config. A thin call into the one
engine call every surface makes (``mind_core.privacy.requests.forget_in``): a dry run unless
``yes``, the mind written under its OS write lock (a harvest of the same mind waits, or is waited
for), the audit log's actor the run (``dagster:<run id>``), the counts as output metadata.

The run's config (a person's name, a query) stays in Dagster's run storage, which a forget cannot
reach: docs/privacy.md says so. The metadata holds counts and frame ids only, never text.
"""

from typing import Any

import dagster as dg
from mind_harvest.pipelines.resources import EmbedderResource, MindHomeResource

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.privacy.requests import ForgetRequest, forget_in


class ForgetConfig(dg.Config):
    """What to forget, as ``mind forget`` takes it: source, frames, query and since/until combine;
    person stands alone. Without ``yes`` a dry run."""

    workspace: str  # the workspace mind ('personal' for the personal mind)
    source: str | None = None
    frames: list[int] = []
    query: str | None = None
    person: str | None = None
    since: str | None = None
    until: str | None = None
    allow_return: bool = False
    yes: bool = False
    vacuum: bool = True

    def request(self) -> ForgetRequest:
        return ForgetRequest(
            source=self.source,
            frames=tuple(self.frames),
            query=self.query,
            person=self.person,
            since=self.since,
            until=self.until,
            apply=self.yes,
            allow_return=self.allow_return,
            vacuum=self.vacuum,
        )


def forget_metadata(answer: dict[str, Any]) -> dict[str, Any]:
    """What the run shows: the counts (each its own entry, for the UI's plots), whether it was
    applied, the audit entry and the time; the ids of the first frames, not their text."""
    metadata: dict[str, Any] = {
        "workspace": answer["workspace"],
        "action": answer["action"],
        "applied": answer["applied"],
        **{name: int(value) for name, value in (answer.get("counts") or {}).items()},
    }
    if "tombstones_removed" in answer:
        metadata["tombstones_removed"] = answer["tombstones_removed"]
    if answer.get("frames"):
        metadata["first_frame_ids"] = [frame["id"] for frame in answer["frames"]]
    for key in ("audit_id", "seconds", "snapshot_marker", "redaction"):
        if answer.get(key) is not None:
            metadata[key] = answer[key]
    if answer.get("scrub"):
        metadata["wal_busy"] = answer["scrub"]["wal_busy"]
    return metadata


@dg.op(
    description="Forget what the config selects from one mind (a dry run unless yes), with everything "
    "derived from it; the audit log names this run."
)
def forget_selected(
    context: dg.OpExecutionContext,
    config: ForgetConfig,
    mind_home: MindHomeResource,
    embedder: EmbedderResource,
) -> dg.Output[dict[str, Any]]:
    request = config.request()
    try:
        answer = forget_in(
            mind_home.home(),
            config.workspace,
            request,
            f"dagster:{context.run_id}",
            embedder.build() if request.embeds else None,
            snapshot_root=mind_home.snapshot_root(),
        )
    except (InvalidInputError, NotFoundError) as exc:  # the config's fault: its sentence, no traceback
        raise dg.Failure(description=str(exc), metadata={"workspace": config.workspace}) from None
    metadata = forget_metadata(answer)
    verb = "forgot" if answer["applied"] else "would forget (dry run: set yes to forget)"
    context.log.info("%s in %s: %s", verb, config.workspace, answer.get("counts") or answer)
    return dg.Output(metadata, metadata=metadata)


@dg.job(
    description="Forget a person, a source, a query's matches, frames or a time range from one mind "
    "(config: workspace, the selectors, yes). A dry run unless yes.",
    tags={"mind_harvest/kind": "forget"},
)
def forget_job() -> None:
    forget_selected()
