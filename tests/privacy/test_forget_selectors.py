"""Forgetting by source, frame ids, query and time range, from the engine and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mind_core.cli import EXIT_OK, EXIT_USAGE, main
from mind_core.errors import InvalidInputError
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.privacy.forget import allow_return, forget, plan_forget
from mind_core.privacy.selection import Selector
from mind_core.privacy.snapshots import FORGOTTEN_MARKER, stale_before
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder
from tests.privacy.conftest import raw_bytes


@pytest.fixture
def mind(tmp_path, mailbox):
    mind = Mind.open(tmp_path / "mind.db", embedder=HashingEmbedder())
    register_source(mind, "email", mailbox, "mail")
    harvest(mind, "mail")
    yield mind
    mind.close()


def _contents(mind) -> list[str]:
    return [row[0] for row in mind.db.query("SELECT content FROM memory_frames ORDER BY id")]


def _file_bytes(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _derived_rows(mind, frame_ids) -> int:
    ids = json.dumps(frame_ids)
    return sum(
        mind.db.scalar(sql, (ids,))
        for sql in (
            "SELECT COUNT(*) FROM memory_frames_fts WHERE rowid IN (SELECT value FROM json_each(?))",
            "SELECT COUNT(*) FROM memory_frames_vec WHERE rowid IN (SELECT value FROM json_each(?))",
            "SELECT COUNT(*) FROM vector_int8_codes WHERE row IN (SELECT value FROM json_each(?))",
            "SELECT COUNT(*) FROM kg_entity_frames WHERE frame_id IN (SELECT value FROM json_each(?))",
            "SELECT COUNT(*) FROM harvest_ledger WHERE frame_id IN (SELECT value FROM json_each(?))",
        )
    )


def test_forget_by_query_takes_the_frames_holding_every_word_and_what_derives_from_them(mind):
    plan = plan_forget(mind.db, Selector(query="ferry timetable"))
    assert len(plan.frame_ids) == 1 and _derived_rows(mind, plan.frame_ids) > 0
    vector = mind.db.scalar("SELECT embedding FROM memory_frames_vec WHERE rowid = ?", (plan.frame_ids[0],))
    vector_bytes = vector.strip(b"\x00")[:64]
    assert vector_bytes in _file_bytes(Path(mind.db.path))
    forget(mind, plan, "tester")
    assert vector_bytes not in _file_bytes(
        Path(mind.db.path)
    )  # sqlite-vec's chunk and the pages are rewritten
    assert _derived_rows(mind, plan.frame_ids) == 0
    assert not [c for c in _contents(mind) if "timetable" in c] and len(_contents(mind)) == 4
    assert b"timetable" not in raw_bytes(Path(mind.db.path))
    again = harvest(mind, "mail", force=True)
    assert again.imported.messages_forgotten == 1 and len(_contents(mind)) == 4
    # the same selector however spelled lifts its tombstones; the next harvest reads the source again
    assert (
        allow_return(mind, Selector(query="Ferry  TIMETABLE"), "tester", apply=True)["tombstones_removed"]
        == 2
    )
    assert harvest(mind, "mail").imported.frames_new == 1 and len(_contents(mind)) == 5


def test_forget_by_frame_ids_and_by_time_range(mind):
    ids = [row[0] for row in mind.db.query("SELECT id FROM memory_frames ORDER BY created_at")]
    forget(mind, plan_forget(mind.db, Selector(frame_ids=(ids[0],))), "tester")
    assert mind.frames.get_by_id(ids[0]) is None and len(_contents(mind)) == 4
    plan = plan_forget(mind.db, Selector(since="2023-03-04", until="2023-03-04"))
    assert [mind.frames.get_by_id(i).created_at[:10] for i in plan.frame_ids] == ["2023-03-04"]
    forget(mind, plan, "tester")
    assert len(_contents(mind)) == 3


def test_forget_by_source_empties_it_and_its_sessions(mind):
    plan = plan_forget(mind.db, Selector(source="mail", since="2023-03-03"))
    assert len(plan.frame_ids) == 3
    result = forget(mind, plan, "tester")
    assert len(_contents(mind)) == 2 and result.counts["sessions_deleted"] == 3
    forget(mind, plan_forget(mind.db, Selector(source="mail")), "tester")
    assert _contents(mind) == [] and mind.db.scalar("SELECT COUNT(*) FROM sessions") == 0
    assert harvest(mind, "mail", force=True).imported.messages_forgotten == 5 and _contents(mind) == []


def test_a_selector_must_say_what_and_a_person_stands_alone():
    with pytest.raises(InvalidInputError):
        Selector()
    with pytest.raises(InvalidInputError):
        Selector(person="Bob Smith", source="mail")


def _run(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_the_command_shows_then_forgets_and_marks_snapshots_stale(tmp_path, mailbox, capsys):
    home = tmp_path / "home"
    base = ["--home", str(home), "--embedder", "mock"]
    assert _run(capsys, "sources", "add", "email", str(mailbox), "--name", "mail", "-q", *base)[0] == EXIT_OK
    assert _run(capsys, "harvest", "-q", *base)[0] == EXIT_OK
    (home / "snapshots").mkdir()

    code, out = _run(capsys, "forget", "--query", "kite festival", *base)
    assert code == EXIT_OK and "would forget: frames deleted 1" in out and "northern beach" in out
    code, out = _run(capsys, "forget", "--query", "kite festival", "--json", *base)
    shown = json.loads(out)
    assert shown["applied"] is False and shown["frames"][0]["time"].startswith("2023-03-05")

    code, out = _run(capsys, "forget", "--query", "kite festival", "--yes", "--by", "dpo", "--json", *base)
    done = json.loads(out)
    assert code == EXIT_OK and done["applied"] and done["counts"]["frames_deleted"] == 1
    assert stale_before(home / "snapshots", "default") is not None
    assert done["snapshot_marker"].endswith(FORGOTTEN_MARKER)
    code, out = _run(capsys, "forget", "--query", "kite festival", "--json", *base)
    assert json.loads(out)["counts"]["frames_deleted"] == 0
    code, out = _run(capsys, "forget", "--person", "Nobody Atall", *base)  # says so, not a row of zeros
    assert code == EXIT_OK and out.startswith("nothing matches: no frame to delete")

    with Mind.open(MindHome(str(home)).mind_path("default")) as mind:
        entry = dict(mind.db.query_one("SELECT * FROM privacy_audit"))
    assert entry["actor"] == "dpo" and json.loads(entry["selector_kinds"]) == ["query"]
    assert "kite" not in json.dumps(entry) and "festival" not in json.dumps(entry)
    assert _run(capsys, "forget", *base)[0] == EXIT_USAGE

    code, out = _run(capsys, "forget", "--person", "zq@quarles.example", "--yes", "--json", *base)
    counts = json.loads(out)["counts"]
    assert code == EXIT_OK and counts["frames_deleted"] == 1 and counts["frames_redacted"] == 2
    assert counts["vectors_remade"] == 1  # the frame whose text named her; the other only in its headers
    code, out = _run(capsys, "forget", "--person", "zq@quarles.example", "--allow-return", *base)
    assert code == EXIT_OK and out.startswith("would lift ") and "0 tombstone" not in out


def test_a_forget_makes_the_ann_graph_again_without_the_forgotten_vectors(mind):
    import numpy as np

    from mind_core.search import ann
    from mind_core.store import reconcile

    reconcile.reconcile_indexes(mind.db, mind.embedder, ann_min_vectors=0)
    assert ann.enabled(mind.db)
    plan = plan_forget(mind.db, Selector(query="ferry timetable"))
    stored = mind.db.scalar("SELECT embedding FROM memory_frames_vec WHERE rowid = ?", (plan.frame_ids[0],))
    values = np.frombuffer(stored, dtype=np.float32)
    half = values[np.flatnonzero(values)[0] :][:32].astype(np.float16).tobytes()  # as the graph keeps it

    def graph_bytes() -> bytes:
        return b"".join(p.read_bytes() for p in Path(mind.db.path + ".ann").iterdir())

    assert half in graph_bytes()
    result = forget(mind, plan, "tester")
    assert result.counts["ann_vectors"] == 4 and half not in graph_bytes()
    mind.search.vectors.ann_min_vectors = 0
    assert mind.search.vectors.ann_index() is not None  # the remade graph serves the vector lane
