"""Forgetting a person: gone from the bytes of the mind's files, from search, and from re-harvests."""

from __future__ import annotations

import json

from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.privacy.forget import allow_return, forget, plan_forget
from mind_core.privacy.selection import Selector
from mind_core.testing.fakes import HashingEmbedder
from tests.privacy.conftest import ADDRESS, NAME, raw_bytes

TRACES = (NAME.lower().encode(), ADDRESS.encode(), b"quarlesworth", b"zephyrine")


def _harvested(tmp_path, mailbox):
    path = tmp_path / "mind.db"
    mind = Mind.open(path, embedder=HashingEmbedder())
    register_source(mind, "email", mailbox, "mail")
    report = harvest(mind, "mail")
    assert report.imported.frames_new == 5
    return path, mind


def _frame_texts(mind):
    return [row[0] + row[1] for row in mind.db.query("SELECT content, metadata FROM memory_frames")]


def test_a_forgotten_person_leaves_no_byte_in_the_mind_files(tmp_path, mailbox):
    path, mind = _harvested(tmp_path, mailbox)
    assert any("quarlesworth" in t.lower() for t in _frame_texts(mind))
    her = mind.db.scalar("SELECT id FROM knowledge_entities WHERE name = ?", (NAME,))
    mind.knowledge.update_entity(her, properties={"addresses": [ADDRESS], "note": f"{NAME} runs the harbour"})
    assert (
        mind.db.scalar("SELECT COUNT(*) FROM knowledge_versions WHERE kind = 'entity' AND row_id = ?", (her,))
        >= 1
    )
    her_relations = mind.db.scalar(
        "SELECT COUNT(*) FROM knowledge_relations WHERE source_id = ? OR target_id = ?", (her, her)
    )
    assert her_relations >= 2  # sent one mail, received one
    mind.awareness.add("pending", f"Call {NAME} about the harbour permits")
    mind.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    before = raw_bytes(path)
    assert all(trace in before for trace in TRACES)

    plan = plan_forget(mind.db, Selector(person=ADDRESS))  # the address finds the name through the graph
    assert plan.person is not None and NAME in plan.person.names
    assert len(plan.frame_ids) == 1 and len(plan.redacted_ids) == 2  # wrote one, received one, named in one
    result = forget(mind, plan, "tester")
    assert result.counts["frames_deleted"] == 1 and result.counts["entities_deleted"] >= 1
    assert result.counts["relations_deleted"] >= her_relations and result.counts["versions_deleted"] >= 1
    for table, column in (("knowledge_entities", "id"), ("knowledge_versions", "row_id")):
        assert mind.db.scalar(f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", (her,)) == 0
    assert mind.db.scalar("SELECT COUNT(*) FROM kg_entity_frames WHERE entity_id = ?", (her,)) == 0
    assert not result.scrub["wal_busy"] and result.counts["awareness_deleted"] == 1
    assert mind.db.scalar("PRAGMA secure_delete") == 0  # as it was before the forget

    texts = _frame_texts(mind)
    assert len(texts) == 4 and any("[forgotten person]" in t for t in texts)
    assert not any(trace.decode() in t.lower() for t in texts for trace in TRACES)
    for query in (NAME, ADDRESS, "Zephyrine", "budget draft lighthouse restoration"):
        for hit in mind.search.search(query, limit=50):
            assert (
                "quarlesworth" not in hit.frame.content.lower()
                and "restoration" not in hit.frame.content.lower()
            )
    assert mind.db.scalar("SELECT COUNT(*) FROM knowledge_versions WHERE data LIKE '%quarlesworth%'") == 0
    mind.close()
    after = raw_bytes(path)
    assert not [trace for trace in TRACES if trace in after]


def test_a_re_harvest_does_not_bring_a_person_back_unless_allowed(tmp_path, mailbox):
    path, mind = _harvested(tmp_path, mailbox)
    forget(mind, plan_forget(mind.db, Selector(person=NAME)), "tester")
    again = harvest(mind, "mail", force=True)
    assert again.imported.messages_forgotten == 1 and again.imported.frames_new == 0
    texts = _frame_texts(mind)
    assert len(texts) == 4 and not any("quarlesworth" in t.lower() for t in texts)
    assert not any(ADDRESS in t for t in texts)

    preview = allow_return(mind, Selector(person=NAME), "tester", apply=False)
    assert preview["tombstones_removed"] > 0
    assert allow_return(mind, Selector(person=NAME), "tester", apply=True) == preview
    back = harvest(mind, "mail")  # the fingerprint was cleared: the unchanged mailbox is read again
    assert back.imported.frames_new >= 1
    assert any("quarlesworth" in t.lower() for t in _frame_texts(mind))
    mind.close()


def test_the_audit_log_names_no_content(tmp_path, mailbox):
    path, mind = _harvested(tmp_path, mailbox)
    forget(mind, plan_forget(mind.db, Selector(person=NAME)), "dpo@example.org")
    allow_return(mind, Selector(person=NAME), "dpo@example.org", apply=True)
    rows = [dict(row) for row in mind.db.query("SELECT * FROM privacy_audit ORDER BY id")]
    assert [(r["action"], r["actor"], json.loads(r["selector_kinds"])) for r in rows] == [
        ("forget", "dpo@example.org", ["person"]),
        ("allow_return", "dpo@example.org", ["person"]),
    ]
    assert rows[0]["selector"] == rows[1]["selector"] and json.loads(rows[0]["counts"])["frames_deleted"] == 1
    stored = json.dumps(rows).lower() + " ".join(
        row[0] for row in mind.db.query("SELECT digest FROM privacy_tombstones")
    )
    assert "quarlesworth" not in stored and "zq@" not in stored
    mind.close()
