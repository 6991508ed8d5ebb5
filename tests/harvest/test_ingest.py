"""Ingest (mind_core.harvest.ingest): Universal JSON items through the harvest's import path,
located errors per item, the ledger's no-op on a repeat, and never a new mind."""

from __future__ import annotations

import pytest

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.harvest.catalog import read_catalog
from mind_core.harvest.ingest import ingest_into, ingest_items, ingest_source_name
from mind_core.harvest.items import MAX_MESSAGE_CHARS
from mind_core.harvest.pipeline import harvest
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.limits import MAX_INGEST_ITEMS
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.message_exports import universal_items

SOURCE = ingest_source_name("test")


@pytest.fixture
def home(tmp_path) -> MindHome:
    home = MindHome(tmp_path / "home")
    Mind.open(home.mind_path("team"), embedder=HashingEmbedder()).close()
    return home


def test_items_are_imported_cognified_and_embedded_and_a_repeat_writes_nothing(home) -> None:
    items = universal_items(2, 3)
    items.insert(1, {"title": "no text at all", "source": "x", "type": "memory"})
    report = ingest_into(home, "team", SOURCE, items, HashingEmbedder())
    assert (report.items, report.items_read, report.frames_new) == (3, 2, 6)
    assert report.status == "partial" and [(e.item, "no 'content'" in e.reason) for e in report.errors] == [(1, True)]
    assert report.vectors_written == 6
    with Mind.open(home.mind_path("team"), embedder=HashingEmbedder()) as mind:
        rows = mind.db.query(
            "SELECT created_at, json_extract(metadata, '$.provenance.source') FROM memory_frames ORDER BY id"
        )
        assert [tuple(r) for r in rows][0] == ("2023-11-14T22:13:20.000Z", SOURCE)
        assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames WHERE embedded_hash IS NULL") == 0
        source = HarvestSourceStore(mind.db).get_by_source(SOURCE)
        assert source.kind == "universal" and source.source_path is None and source.last_status == "partial"
        # a harvest of every source passes the ingest source over; a scheduler never sees it
        skipped = harvest(mind, SOURCE)
        assert skipped.skipped and skipped.frames_held == 6 and "ingest" in skipped.reason
    assert read_catalog(home).sources == []
    again = ingest_into(home, "team", SOURCE, items, HashingEmbedder())
    assert (again.frames_new, again.frames_updated, again.frames_unchanged) == (0, 0, 6)
    changed = [{**items[0], "messages": [{**items[0]["messages"][0], "text": "Falcon moved to April"}]}]
    updated = ingest_into(home, "team", SOURCE, changed, HashingEmbedder())
    assert updated.frames_updated == 1 and updated.status == "ok"


def test_a_workspace_without_a_mind_is_refused_and_not_created(home) -> None:
    with pytest.raises(NotFoundError, match="no mind for workspace 'tema'"):
        ingest_into(home, "tema", SOURCE, universal_items(1, 1), None)
    assert not home.mind_path("tema").exists()


def test_limits_and_names(home) -> None:
    with Mind.open(home.mind_path("team")) as mind:
        with pytest.raises(InvalidInputError, match=f"at most {MAX_INGEST_ITEMS}"):
            ingest_items(mind, SOURCE, [{}] * (MAX_INGEST_ITEMS + 1))
        with pytest.raises(InvalidInputError, match="non-empty list"):
            ingest_items(mind, SOURCE, [])
        with pytest.raises(InvalidInputError, match="ingest:"):
            ingest_items(mind, "notes", universal_items(1, 1))
        long = {"source": "x", "type": "memory", "title": "long", "content": "word " * (MAX_MESSAGE_CHARS // 4)}
        report = ingest_items(mind, SOURCE, [universal_items(1, 1)[0], long])
        assert report.frames_new == 2 and [e.item for e in report.errors] == [1]
        assert f"cut to its first {MAX_MESSAGE_CHARS:,}" in report.errors[0].reason
