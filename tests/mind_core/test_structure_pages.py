"""A chat source's structure is learned a page of frames at a time (bounded memory, issue #31)
and comes out as it would learned whole: the same entities, relations, validity and evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.knowledge import structure_learning
from mind_core.mind import Mind
from mind_core.testing.exports import chatgpt_conversation, write_json

# three conversations share a title: each is then named by its container too, also when the
# conversations sharing it fall on different pages
TITLES = ["Same title", "Trip plans", "Same title", "Budget", "Same title", "Reading list"]


def export(folder: Path) -> Path:
    conversations = [
        chatgpt_conversation(f"conv-{c}", title, [f"message {m} of talk {c} about {title}" for m in range(5)],
                             1_700_000_000 + 86_400 * c)
        for c, title in enumerate(TITLES)
    ]
    return write_json(folder / "conversations.json", conversations)


def learned_graph(mind: Mind) -> tuple[set, set, set, set]:
    db = mind.db
    entities = {tuple(r) for r in db.query(
        "SELECT entity_type, name, properties, valid_from, valid_to FROM knowledge_entities")}
    relations = {tuple(r) for r in db.query(
        "SELECT s.name, t.name, r.relation_type, r.properties, r.valid_from FROM knowledge_relations r "
        "JOIN knowledge_entities s ON s.id = r.source_id JOIN knowledge_entities t ON t.id = r.target_id")}
    entity_frames = {tuple(r) for r in db.query(
        "SELECT e.entity_type, e.name, l.frame_id FROM kg_entity_frames l JOIN knowledge_entities e ON e.id = l.entity_id")}
    relation_frames = {tuple(r) for r in db.query(
        "SELECT s.name, t.name, r.relation_type, l.frame_id FROM kg_relation_frames l "
        "JOIN knowledge_relations r ON r.id = l.relation_id "
        "JOIN knowledge_entities s ON s.id = r.source_id JOIN knowledge_entities t ON t.id = r.target_id")}
    return entities, relations, entity_frames, relation_frames


def harvested(tmp_path: Path, name: str) -> tuple[set, set, set, set]:
    with Mind.open(tmp_path / f"{name}.mind", embedder=MockEmbedder()) as mind:
        register_source(mind, "chatgpt", export(tmp_path / name), "chats")
        report = harvest(mind, "chats")
        assert report.status == "ok"
        return learned_graph(mind)


def test_a_chat_source_learned_page_by_page_equals_it_learned_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = harvested(tmp_path, "whole")
    monkeypatch.setattr(structure_learning, "STRUCTURE_PAGE", 4)  # 30 frames: 8 pages, conversations split
    paged = harvested(tmp_path, "paged")
    assert paged == whole
    conversations = {name for kind, name, *_ in whole[0] if kind == "conversation"}
    assert {"Same title <conv-0>", "Same title <conv-2>", "Same title <conv-4>", "Trip plans"} <= conversations
    assert len({frame for kind, name, frame in whole[2] if kind == "conversation"}) == 30


def test_frames_of_source_reads_pages_of_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(structure_learning, "STRUCTURE_PAGE", 7)
    with Mind.open(tmp_path / "m.mind", embedder=MockEmbedder()) as mind:
        register_source(mind, "chatgpt", export(tmp_path / "e"), "chats")
        harvest(mind, "chats")
        pages = [len(page) for page in structure_learning.frames_of_source(mind.db, "chats")]
    assert pages == [7, 7, 7, 7, 2]
