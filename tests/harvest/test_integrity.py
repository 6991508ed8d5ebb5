"""Frames belong to sources: shared frames, ledgers tied to a registration, safe pruning, outcomes."""

import json
import shutil

import pytest

from mind_core.errors import InvalidInputError
from mind_core.harvest.audit import duplicate_imports
from mind_core.harvest.health import source_problems
from mind_core.harvest.pipeline import harvest, register_source, remove_source
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.mind import Mind
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder


def open_mind(path):
    return Mind.open(path, embedder=HashingEmbedder())


def edit_message(export, conversation, message, text):
    data = json.loads(export.read_text())
    data[conversation]["mapping"][f"conv-{conversation}-m{message}"]["message"]["content"]["parts"] = [text]
    export.write_text(json.dumps(data))


def frame_texts(mind):
    return [row[0] for row in mind.db.query("SELECT content FROM memory_frames ORDER BY id")]


def ledger_text(mind, source, key_suffix):
    return mind.db.scalar(
        "SELECT f.content FROM harvest_ledger l JOIN memory_frames f ON f.id = l.frame_id "
        "WHERE l.source = ? AND l.item_key LIKE ?",
        (source, f"%{key_suffix}"),
    )


def write_vault(folder, notes):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def twin_exports(tmp_path):
    """The same export in two places (an export and its backup copy): every message is shared."""
    original = write_chatgpt_export(tmp_path / "a" / "conversations.json", conversations=2, messages_each=3)
    backup = tmp_path / "b" / "conversations.json"
    backup.parent.mkdir()
    shutil.copy(original, backup)
    return original, backup


def test_an_edit_in_one_source_leaves_the_shared_frame_to_the_other(tmp_path, twin_exports):
    original, backup = twin_exports
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", original, "main")
        register_source(mind, "chatgpt", backup, "copy")
        harvest(mind, "main")
        assert harvest(mind, "copy").imported.frames_duplicate == 6
        before = ledger_text(mind, "copy", "conv-1-m1")

        edit_message(original, 1, 1, "the zeppelin hangar budget was approved")
        report = harvest(mind, "main")

        assert ledger_text(mind, "copy", "conv-1-m1") == before  # the backup's text is still there
        assert report.imported.frames_updated == 1 and report.status == "ok"
        assert "zeppelin" in ledger_text(mind, "main", "conv-1-m1")
        assert mind.frames.get_stats()["total"] == 7
        rescan = harvest(mind, "copy", force=True)
        # the handed-over frame's source metadata becomes the backup's own; no text changes
        assert rescan.imported.frames_updated == 0 and rescan.imported.frames_restored == 0
        assert rescan.imported.frames_unchanged + rescan.imported.frames_metadata_refreshed == 6
        for source in ("main", "copy"):
            assert duplicate_imports(mind.db, source).ok  # the kept frame now names the backup
        shared = mind.db.scalar(
            "SELECT metadata FROM memory_frames f JOIN harvest_ledger l ON l.frame_id = f.id "
            "WHERE l.source = 'copy' AND l.item_key LIKE '%conv-1-m1'"
        )
        assert json.loads(shared)["provenance"]["source"] == "copy"
        assert source_problems(mind.db) == []


def test_a_frame_rewritten_under_a_source_is_reported_and_restored(tmp_path, twin_exports):
    original, backup = twin_exports
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", original, "main")
        register_source(mind, "chatgpt", backup, "copy")
        harvest(mind, "main")
        harvest(mind, "copy")
        text = ledger_text(mind, "copy", "conv-0-m2")
        shared_id = mind.db.scalar("SELECT id FROM memory_frames WHERE content = ?", (text,))
        mind.frames.update(shared_id, "[x] User: rewritten in place, as the old engine did")

        problems = source_problems(mind.db)
        assert {(p.source, p.status) for p in problems} == {("main", "diverged"), ("copy", "diverged")}
        assert harvest(mind, "copy", force=True).imported.frames_restored == 1
        assert ledger_text(mind, "copy", "conv-0-m2") == text
        assert [p.source for p in source_problems(mind.db)] == ["main"]


def test_a_removed_name_added_again_on_other_files_starts_a_new_ledger(tmp_path):
    first = write_vault(tmp_path / "first", {"plan.md": "# Plan\nmove the servers to Lisbon\n"})
    second = write_vault(tmp_path / "second", {"plan.md": "# Plan\nbuy a boat for the team\n"})
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "markdown", first, "notes")
        harvest(mind, "notes")
        remove_source(mind, "notes")
        register_source(mind, "markdown", second, "notes")
        report = harvest(mind, "notes")
        assert report.imported.frames_new == 1 and report.imported.frames_updated == 0
        texts = " ".join(frame_texts(mind))
        assert "Lisbon" in texts and "boat" in texts


def test_repointing_a_source_never_rewrites_the_old_files_frames(tmp_path):
    first = write_vault(tmp_path / "first", {"plan.md": "# Plan\nmove the servers to Lisbon\n"})
    second = write_vault(tmp_path / "second", {"plan.md": "# Plan\nbuy a boat for the team\n"})
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "markdown", first, "notes")
        harvest(mind, "notes")
        with pytest.raises(InvalidInputError, match="already exists.*--replace"):
            register_source(mind, "markdown", second, "notes")
        register_source(mind, "markdown", first, "notes")  # the same kind and path: nothing changes
        assert HarvestSourceStore(mind.db).get_by_source("notes").last_fingerprint
        register_source(mind, "markdown", second, "notes", replace=True)
        assert HarvestSourceStore(mind.db).get_by_source("notes").last_fingerprint is None
        harvest(mind, "notes")
        texts = " ".join(frame_texts(mind))
        assert "Lisbon" in texts and "boat" in texts


def test_prune_refuses_an_empty_scan_of_a_source_with_frames(tmp_path):
    vault = write_vault(tmp_path / "vault", {f"n{i}.md": f"# Note {i}\nbody number {i}\n" for i in range(3)})
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "markdown", vault, "notes")
        harvest(mind, "notes")
        for note in vault.iterdir():
            note.unlink()  # the folder is there, its files are not: an unmounted drive, a sync not run
        report = harvest(mind, "notes", prune=True)
        assert report.imported.pruned == 0 and "found nothing" in report.imported.prune_refused
        assert report.status == "empty" and mind.frames.get_stats()["total"] == 3
        allowed = harvest(mind, "notes", prune=True, allow_mass_delete=True)
        assert allowed.imported.pruned == 3 and mind.frames.get_stats()["total"] == 0


def test_prune_refuses_an_export_that_is_now_empty(tmp_path):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", conversations=2, messages_each=3)
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
        export.write_text("[]")
        report = harvest(mind, "gpt", prune=True)
        assert report.imported.pruned == 0 and report.imported.prune_refused
        assert mind.frames.get_stats()["total"] == 6


def test_prune_refuses_to_delete_more_than_half_of_a_source(tmp_path):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", conversations=4, messages_each=3)
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
        export.write_text(json.dumps(json.loads(export.read_text())[:1]))
        refused = harvest(mind, "gpt", prune=True)
        assert refused.imported.pruned == 0 and "9 of the source's 12" in refused.imported.prune_refused
        assert mind.frames.get_stats()["total"] == 12
        assert harvest(mind, "gpt", prune=True, allow_mass_delete=True).imported.pruned == 9


def test_prune_compares_the_ledger_even_when_the_fingerprint_is_unchanged(tmp_path):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", conversations=4, messages_each=3)
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
        export.write_text(json.dumps(json.loads(export.read_text())[:3]))
        harvest(mind, "gpt")  # without --prune: records the new fingerprint, keeps the frames
        report = harvest(mind, "gpt", prune=True)
        assert not report.skipped and report.imported.pruned == 3
        assert mind.frames.get_stats()["total"] == 9


def test_prune_keeps_frames_another_source_holds(tmp_path, twin_exports):
    original, backup = twin_exports
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", original, "main")
        register_source(mind, "chatgpt", backup, "copy")
        harvest(mind, "main")
        harvest(mind, "copy")
        original.write_text(json.dumps(json.loads(original.read_text())[:1]))
        report = harvest(mind, "main", prune=True)
        assert report.imported.pruned == 0 and report.imported.prune_refused is None
        assert mind.frames.get_stats()["total"] == 6
        assert duplicate_imports(mind.db, "copy").ok and duplicate_imports(mind.db, "main").ok


@pytest.mark.parametrize(
    ("content", "status", "reason"),
    [
        ("this is { not json", "failed", "every record failed"),
        ("[]", "empty", "looks like"),
    ],
)
def test_a_failed_or_empty_harvest_records_no_fingerprint_and_is_retried(tmp_path, content, status, reason):
    export = tmp_path / "e" / "conversations.json"
    export.parent.mkdir()
    export.write_text(content)
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", export.parent, "gpt", kind_anyway=True)
        report = harvest(mind, "gpt")
        assert report.status == status and reason in report.reason
        source = HarvestSourceStore(mind.db).get_by_source("gpt")
        assert source.last_status == status and source.last_fingerprint is None
        assert not harvest(mind, "gpt").skipped  # tried again, not "unchanged"
        write_chatgpt_export(export, conversations=1, messages_each=2)
        retried = harvest(mind, "gpt")
        assert retried.status == "ok" and retried.imported.frames_new == 2
        assert HarvestSourceStore(mind.db).get_by_source("gpt").last_fingerprint
        assert harvest(mind, "gpt").skipped


def test_a_missing_source_is_reported_and_tried_again(tmp_path):
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\nthe first note\n"})
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "markdown", vault, "notes")
        harvest(mind, "notes")
        vault.rename(tmp_path / "elsewhere")
        report = harvest(mind, "notes")
        assert report.status == "missing" and "does not exist" in report.reason
        source = HarvestSourceStore(mind.db).get_by_source("notes")
        assert source.last_status == "missing" and source.last_frames == 1
        assert [(p.source, p.status) for p in source_problems(mind.db)] == [("notes", "missing")]
        (tmp_path / "elsewhere").rename(vault)
        assert harvest(mind, "notes", force=True).status == "ok"
        assert source_problems(mind.db) == []


def test_a_source_of_the_wrong_kind_is_empty_with_the_reason(tmp_path):
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\nthe first note\n"})
    with open_mind(tmp_path / "w.mind") as mind:
        with pytest.raises(InvalidInputError, match="looks like a Markdown.*not email.*--kind-anyway"):
            register_source(mind, "email", vault, "mail")
        register_source(mind, "email", vault, "mail", kind_anyway=True)
        report = harvest(mind, "mail")
        assert report.status == "empty" and report.reason == f"no file in {vault} looks like an email export"
        assert [(p.source, p.status) for p in source_problems(mind.db)] == [("mail", "empty")]


def test_removing_a_source_hands_its_shared_frames_to_the_others(tmp_path, twin_exports):
    original, backup = twin_exports
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", original, "main")
        register_source(mind, "chatgpt", backup, "copy")
        harvest(mind, "main")
        harvest(mind, "copy")
        assert remove_source(mind, "main")
        assert mind.frames.get_stats()["total"] == 6
        assert mind.db.scalar("SELECT COUNT(*) FROM harvest_ledger WHERE source = 'main'") == 0
        assert duplicate_imports(mind.db, "copy").ok and duplicate_imports(mind.db, "copy").checked == 6
        edit_message(backup, 0, 0, "the copy now says something else")
        assert harvest(mind, "copy").imported.frames_updated == 1
        assert mind.frames.get_stats()["total"] == 6  # the copy made it its own: rewritten in place
