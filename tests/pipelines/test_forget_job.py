"""The forget job on a real Dagster instance: a dry run unless yes, the counts as metadata, the
audit log naming the run, a bad config failing the step with the engine's sentence."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import dagster as dg
from mind_harvest.pipelines.definitions import defs
from mind_harvest.pipelines.forget import forget_job

from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.exports import SyntheticMail, write_mbox
from mind_core.testing.fakes import HashingEmbedder

PERSON = ("Ottoline Vandersteen", "ov@vandersteen.example")
OTHER = ("Bob Smith", "bob.smith@example.com")


def _mail(n: int, sender, recipient, text: str) -> SyntheticMail:
    return SyntheticMail(
        message_id=f"m{n}@example.com", thread=n, sender=sender, recipient=recipient,
        subject=f"Mail {n}", sent=datetime(2023, 3, 1 + n, 9, 0, tzinfo=UTC), text=text,
    )  # fmt: skip


def _harvested(home, tmp_path) -> None:
    mails = [
        _mail(0, PERSON, OTHER, "The tide tables for the regatta are attached."),
        _mail(1, OTHER, OTHER, f"Ask {PERSON[0]} about the regatta moorings."),
        _mail(2, OTHER, OTHER, "The clubhouse roof needs new slates before winter."),
    ]
    mailbox = write_mbox(tmp_path / "mail" / "inbox.mbox", mails)
    with Mind.open(home.mind_path("crew"), embedder=HashingEmbedder()) as mind:
        register_source(mind, "email", mailbox, "mail")
        assert harvest(mind, "mail").imported.frames_new == 3


def _run(instance, resources, **config) -> dg.ExecuteInProcessResult:
    return forget_job.execute_in_process(
        run_config={"ops": {"forget_selected": {"config": {"workspace": "crew", **config}}}},
        instance=instance,
        resources=resources,
        raise_on_error=False,
    )


def _metadata(result: dg.ExecuteInProcessResult) -> dict:
    [output] = [event for event in result.all_events if event.is_successful_output]
    return {key: value.value for key, value in output.event_specific_data.metadata.items()}


def test_the_forget_job_shows_then_forgets_and_the_run_is_the_actor(home, instance, resources, tmp_path):
    _harvested(home, tmp_path)
    shown = _run(instance, resources, person=PERSON[1])
    assert shown.success
    dry = _metadata(shown)
    assert (dry["applied"], dry["frames_deleted"], dry["frames_redacted"]) == (False, 1, 1)
    assert "would replace" in dry["redaction"] and "regatta" not in json.dumps(dry)

    done = _run(instance, resources, person=PERSON[1], yes=True)
    assert done.success
    applied = _metadata(done)
    assert (applied["applied"], applied["frames_deleted"], applied["frames_redacted"]) == (True, 1, 1)
    assert applied["audit_id"] >= 1 and applied["wal_busy"] is False and applied["tombstones"] >= 1
    with Mind.open(home.mind_path("crew"), readonly=True) as mind:
        texts = [row[0] for row in mind.db.query("SELECT content || metadata FROM memory_frames")]
        [entry] = [dict(row) for row in mind.db.query("SELECT actor, action FROM privacy_audit")]
    assert len(texts) == 2 and not any("vandersteen" in t.lower() for t in texts)
    assert entry == {"actor": f"dagster:{done.run_id}", "action": "forget"}

    lift = _metadata(_run(instance, resources, person=PERSON[1], allow_return=True))
    assert (lift["action"], lift["applied"]) == ("allow_return", False) and lift["tombstones_removed"] >= 1


def test_a_forget_config_that_selects_nothing_fails_the_step_with_the_reason(home, instance, resources, tmp_path):
    _harvested(home, tmp_path)
    result = _run(instance, resources)
    assert not result.success
    [failure] = [event for event in result.all_events if event.is_step_failure]
    assert "say what to forget" in failure.step_failure_data.user_failure_data.description
    missing = forget_job.execute_in_process(
        run_config={"ops": {"forget_selected": {"config": {"workspace": "nosuch", "query": "regatta"}}}},
        instance=instance, resources=resources, raise_on_error=False,
    )  # fmt: skip
    [failure] = [event for event in missing.all_events if event.is_step_failure]
    assert "no mind for workspace 'nosuch'" in failure.step_failure_data.user_failure_data.description
    assert not home.mind_path("nosuch").exists()


def test_the_code_location_offers_the_forget_job():
    assert defs.get_job_def("forget_job").name == "forget_job"


def test_a_forget_marks_the_snapshot_url_and_the_next_snapshot_run_deletes_what_it_held(
    home, instance, resources, tmp_path
):
    import uuid

    import fsspec
    from mind_harvest.pipelines.assets import memory_snapshots
    from mind_harvest.pipelines.resources import MindHomeResource

    from mind_core.analytics.snapshot import write_snapshot
    from tests.pipelines.harness import materialized

    _harvested(home, tmp_path)
    folder = f"/snapshots-{uuid.uuid4().hex}"
    url = f"memory://{folder}"
    resources = {**resources, "mind_home": MindHomeResource(root=str(home.root), snapshot_url=url)}
    write_snapshot(home, "crew", url, date="2026-03-01")
    memory = fsspec.filesystem("memory")
    try:
        done = _metadata(_run(instance, resources, query="clubhouse roof", yes=True))
        assert done["snapshot_marker"] == f"{url}/_forgotten.json" and memory.exists(f"{folder}/_forgotten.json")
        taken = dg.materialize([memory_snapshots], resources=resources, instance=instance, partition_key="2026-03-04")
        assert taken.success and materialized(taken)["memory_snapshots"]["stale_snapshots_deleted"] == 1
        assert not memory.exists(f"{folder}/_forgotten.json")
        assert not memory.exists(f"{folder}/frames/workspace=crew/snapshot_date=2026-03-01")
    finally:
        memory.rm(folder, recursive=True)
