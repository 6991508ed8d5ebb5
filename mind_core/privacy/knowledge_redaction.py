"""A new redaction policy reaches what a source's frames taught the mind, not only the frames.

A harvest under a policy that now redacts rewrites the source's frames in place; the knowledge
graph learned from their earlier text keeps what it read (a ``person`` named
``alice@example.com``, ``{"addresses": [...]}``, a relation's or a version's copy of them), and
so do the session summaries made from those frames. ``redact_knowledge`` applies the policy to
each of those rows the source's frames evidence, and to every row no frame evidences any more
(re-reading a rewritten frame unlinks what its earlier text stated, so the ``person``
``alice@example.com`` the old header named is left linked to nothing), in place and without
keeping a version (the earlier version would be the very text to remove):

- an entity whose name is nothing but what the policy redacts (an address, a number) goes, with
  its relations, its versions and its frame links, as a forgotten person's entity does; another
  one is renamed with the placeholders;
- every string in the properties of entities and relations, and in their versions' data, is
  redacted; a list entry that became a bare placeholder (``"[email]"`` among ``addresses``) is
  dropped, so no entity claims a redacted address;
- the summaries of the source's sessions are redacted.

The ``people`` kind is left out here: it replaces the names the graph itself holds, and the
graph needs them to redact the next messages.
"""

from __future__ import annotations

import json
from typing import Any

from mind_core.privacy.forget import delete_knowledge
from mind_core.privacy.redaction import PLACEHOLDER, Redactor
from mind_core.privacy.redaction_policy import RedactionPolicy
from mind_core.store.db import IN_LIST, Database, in_list

_SOURCE_FRAMES = (
    "SELECT id FROM memory_frames WHERE json_valid(metadata) AND json_extract(metadata, '$.provenance.source') = ?"
)


def _bare(value: str) -> bool:
    """Whether nothing but placeholders (and punctuation) is left of a string."""
    rest = PLACEHOLDER.sub("", value)
    return bool(PLACEHOLDER.search(value)) and not any(c.isalnum() for c in rest)


def _redacted(redactor: Redactor, value: Any) -> Any:
    """``value`` with every string redacted and every list entry that became a bare placeholder dropped."""
    if isinstance(value, str):
        return redactor.redact(value)[0]
    if isinstance(value, dict):  # a list left empty by the redaction goes ("addresses": [])
        new = {k: _redacted(redactor, v) for k, v in value.items()}
        return {k: v for k, v in new.items() if v != [] or value[k] == []}
    if isinstance(value, list):
        kept = []
        for item in value:
            new = _redacted(redactor, item)
            if not (isinstance(item, str) and new != item and _bare(new)):
                kept.append(new)
        return kept
    return value


def _redacted_json(redactor: Redactor, text: str | None) -> str | None:
    if not text:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return redactor.redact(text)[0]
    new = _redacted(redactor, value)
    return text if new == value else json.dumps(new)


def redact_knowledge(db: Database, source: str, policy: RedactionPolicy) -> dict[str, int]:
    """Bring the knowledge and summaries the source's frames evidence to ``policy`` (see the
    module); returns how many rows were rewritten or deleted. Call it in the harvest's writing
    connection, then scrub the file."""
    redactor = Redactor(RedactionPolicy(policy.kinds - {"people"}))
    counts = {"entities_redacted": 0, "entities_deleted": 0, "relations_redacted": 0, "versions_redacted": 0}
    if not redactor.active:
        return counts
    with db.transaction():
        entity_ids = [
            r[0]
            for r in db.query(
                f"SELECT DISTINCT entity_id FROM kg_entity_frames WHERE frame_id IN ({_SOURCE_FRAMES})"
                " UNION SELECT id FROM knowledge_entities e WHERE NOT EXISTS"
                " (SELECT 1 FROM kg_entity_frames l WHERE l.entity_id = e.id)",
                (source,),
            )
        ]
        doomed: list[int] = []
        for row in db.query(
            f"SELECT id, name, properties FROM knowledge_entities WHERE id IN ({IN_LIST})", (in_list(entity_ids),)
        ):
            name = redactor.redact(row["name"])[0]
            if name != row["name"] and _bare(name):
                doomed.append(row["id"])
                continue
            properties = _redacted_json(redactor, row["properties"])
            if (name, properties) != (row["name"], row["properties"]):
                db.execute(
                    "UPDATE knowledge_entities SET name = ?, properties = ? WHERE id = ?", (name, properties, row["id"])
                )
                counts["entities_redacted"] += 1
        relation_ids = {
            r[0]
            for r in db.query(
                f"SELECT DISTINCT relation_id FROM kg_relation_frames WHERE frame_id IN ({_SOURCE_FRAMES})"
                " UNION SELECT id FROM knowledge_relations r WHERE NOT EXISTS"
                " (SELECT 1 FROM kg_relation_frames l WHERE l.relation_id = r.id)",
                (source,),
            )
        }
        doomed_relations = {
            r[0]
            for r in db.query(
                f"SELECT id FROM knowledge_relations WHERE source_id IN ({IN_LIST}) OR target_id IN ({IN_LIST})",
                (in_list(doomed), in_list(doomed)),
            )
        }
        delete_knowledge(db, doomed, sorted(doomed_relations))
        counts["entities_deleted"] = len(doomed)
        relation_ids -= doomed_relations
        for row in db.query(
            f"SELECT id, properties FROM knowledge_relations WHERE id IN ({IN_LIST})", (in_list(relation_ids),)
        ):
            properties = _redacted_json(redactor, row["properties"])
            if properties != row["properties"]:
                db.execute("UPDATE knowledge_relations SET properties = ? WHERE id = ?", (properties, row["id"]))
                counts["relations_redacted"] += 1
        for kind, ids in (("entity", set(entity_ids) - set(doomed)), ("relation", relation_ids)):
            for row in db.query(
                f"SELECT id, data FROM knowledge_versions WHERE kind = ? AND row_id IN ({IN_LIST})", (kind, in_list(ids))
            ):
                data = _redacted_json(redactor, row["data"])
                if data != row["data"]:
                    db.execute("UPDATE knowledge_versions SET data = ? WHERE id = ?", (data, row["id"]))
                    counts["versions_redacted"] += 1
        for row in db.query(
            "SELECT gop_id, summary FROM sessions WHERE summary IS NOT NULL AND gop_id IN"
            f" (SELECT gop_id FROM memory_frames WHERE id IN ({_SOURCE_FRAMES}))",
            (source,),
        ):
            summary = redactor.redact(row["summary"])[0]
            if summary != row["summary"]:
                db.execute("UPDATE sessions SET summary = ? WHERE gop_id = ?", (summary, row["gop_id"]))
    return counts
