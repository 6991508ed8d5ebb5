"""A harvest reads the mind file through bounded memory (issue #31): no memory map and a small
page cache while it runs, the connection's own bounds after; and it leaves the ANN graph of a
large mind to a reconcile (``mind doctor --repair``), which a search does without until then."""

from __future__ import annotations

from pathlib import Path

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest import pipeline
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.search import ann
from mind_core.store import reconcile
from mind_core.store.db import CACHE_KIB, MMAP_BYTES, Database
from mind_core.testing.exports import write_chatgpt_export


def bounds(db: Database) -> tuple[int, int]:
    return int(db.scalar("PRAGMA mmap_size")), int(db.scalar("PRAGMA cache_size"))


def test_memory_bounds_apply_within_the_block_and_are_restored(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.mind")
    try:
        assert bounds(db) == (MMAP_BYTES, -CACHE_KIB)
        with db.memory_bounds(0, 2048):
            assert bounds(db) == (0, -2048)
        assert bounds(db) == (MMAP_BYTES, -CACHE_KIB)
    finally:
        db.close()


def test_every_stage_of_a_harvest_runs_within_the_harvest_bounds(tmp_path: Path, monkeypatch) -> None:
    seen: dict[str, tuple[int, int]] = {}

    def watched(name, function):
        def call(mind, *args, **kwargs):
            seen[name] = bounds(mind.db)
            return function(mind, *args, **kwargs)
        return call

    for name in ("cognify_frames", "index_vectors", "reconcile_after_harvest"):
        monkeypatch.setattr(pipeline, name, watched(name, getattr(pipeline, name)))
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 4, 10)
    with Mind.open(tmp_path / "m.mind", embedder=MockEmbedder()) as mind:
        register_source(mind, "chatgpt", export, "chats")
        assert harvest(mind, "chats").status == "ok"
        harvest_bounds = (pipeline.HARVEST_MMAP_BYTES, -pipeline.HARVEST_CACHE_KIB)
        assert seen == dict.fromkeys(("cognify_frames", "index_vectors", "reconcile_after_harvest"), harvest_bounds)
        assert bounds(mind.db) == (MMAP_BYTES, -CACHE_KIB)  # a search afterwards maps the file again


def test_a_harvest_leaves_the_ann_graph_to_reconcile(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(reconcile, "ann_needed", lambda db, min_vectors=0: ann.ann_dir(db) is not None)  # a "large" mind
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 6, 10)
    with Mind.open(tmp_path / "m.mind", embedder=MockEmbedder()) as mind:
        register_source(mind, "chatgpt", export, "chats")
        report = harvest(mind, "chats")
        assert report.vectors_written == 60 and report.reconciled.ann_rebuilt == 0
        assert ann.read_manifest(mind.db) is None  # no graph built, none loaded into the harvest
        mind.search.vectors.ann_min_vectors = 0
        assert mind.search.vectors.ann_index() is None
        before = [r.frame.id for r in mind.search.search("Conversation 3", limit=5)]  # the pre-scan / exact path
        assert before
        assert reconcile.reconcile_indexes(mind.db, mind.embedder, ann_min_vectors=0).ann_rebuilt == 60
        assert mind.search.vectors.ann_index() is not None
        assert [r.frame.id for r in mind.search.search("Conversation 3", limit=5)] == before


def test_mind_harvest_says_when_the_graph_waits_for_a_reconcile(tmp_path: Path, monkeypatch, capsys) -> None:
    from mind_core.cli import main

    home = ["--home", str(tmp_path / "home"), "--embedder", "mock"]
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 10)
    assert main(["sources", "add", "chatgpt", str(export), "--name", "chats", "-q", *home]) == 0
    assert main(["harvest", *home]) == 0
    assert "vector graph" not in capsys.readouterr().err  # a small mind keeps none
    monkeypatch.setattr(reconcile, "ann_needed", lambda db, min_vectors=0: ann.ann_dir(db) is not None)
    assert main(["harvest", "--force", *home]) == 0
    err = capsys.readouterr().err
    assert "the vector graph of this large mind is not built (missing)" in err and "mind doctor --repair" in err
    assert main(["doctor", "--repair", *home]) == 0
    capsys.readouterr()
    assert main(["harvest", "--force", *home]) == 0
    assert "vector graph" not in capsys.readouterr().err  # built: nothing to say


def test_mind_harvest_says_when_the_keyword_index_waits_for_a_reconcile(tmp_path: Path, monkeypatch, capsys) -> None:
    from mind_core.cli import main
    from mind_core.search import keyword_index

    home = ["--home", str(tmp_path / "home"), "--embedder", "mock"]
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 10)
    assert main(["sources", "add", "chatgpt", str(export), "--name", "chats", "-q", *home]) == 0
    assert main(["harvest", *home]) == 0
    assert "keyword index" not in capsys.readouterr().err  # a small mind keeps none
    monkeypatch.setattr(keyword_index, "needed", lambda db, params=None: True)  # a "large" mind
    assert main(["harvest", "--force", *home]) == 0
    err = capsys.readouterr().err
    assert "the keyword index of this large mind is not usable (missing)" in err and "mind doctor --repair" in err
    assert main(["doctor", "--repair", *home]) == 0
    capsys.readouterr()
    assert main(["harvest", "--force", *home]) == 0
    assert "keyword index" not in capsys.readouterr().err  # built: nothing to say
