"""Evidence: which frames state which entities and relations, and what happens when they go.

``kg_entity_frames`` links an entity to the frames that mention it, ``kg_relation_frames`` a
relation to the frames that state it. A fact is current while some frame states it: when frames
are deleted (their source item vanished) the facts they stated are noted with the time
(``note_evidence_lost``), and after the knowledge step ``end_facts_without_evidence`` ends those
no other frame states. When frames are folded into one (compaction), their evidence moves along.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mind_core.errors import NotFoundError
from mind_core.knowledge.model import Entity, entity_from_row
from mind_core.knowledge.validation import require_id
from mind_core.knowledge.versions import Versions, not_before
from mind_core.store.db import IN_LIST, in_list


class Evidence(Versions):
    """The entity <-> frame and relation <-> frame links of a graph."""

    def link_entity_to_frame(self, entity_id: int, frame_id: int) -> bool:
        """Record that the frame mentions the entity; False when the link already existed."""
        return self.link_entities_to_frame([entity_id], frame_id) == 1

    def link_entities_to_frame(self, entity_ids: Iterable[int], frame_id: int) -> int:
        """Link many entities to one frame in one statement; returns how many links are new."""
        ids = [require_id(e, "entity_id") for e in entity_ids]
        require_id(frame_id, "frame_id")
        if not ids:
            return 0
        before = self.db.conn.total_changes
        try:
            self.db.executemany(
                "INSERT OR IGNORE INTO kg_entity_frames (entity_id, frame_id) VALUES (?, ?)",
                [(e, frame_id) for e in dict.fromkeys(ids)],
            )
        except self.db.errors.IntegrityError as exc:
            raise NotFoundError(
                f"cannot link entities {ids} to frame {frame_id}: unknown entity or frame"
            ) from exc
        return self.db.conn.total_changes - before

    def link_relations_to_frames(self, links: Iterable[tuple[int, int]]) -> int:
        """Record that frames state relations, from ``(relation id, frame id)`` pairs; returns how
        many links are new. A relation is current while some frame states it."""
        rows = list(dict.fromkeys((require_id(r, "relation_id"), require_id(f, "frame_id")) for r, f in links))
        if not rows:
            return 0
        before = self.db.conn.total_changes
        try:
            self.db.executemany(
                "INSERT OR IGNORE INTO kg_relation_frames (relation_id, frame_id) VALUES (?, ?)", rows
            )
        except self.db.errors.IntegrityError as exc:
            raise NotFoundError(f"cannot link relations to frames {rows[:3]}: unknown relation or frame") from exc
        return self.db.conn.total_changes - before

    def frames_for_relation(self, relation_id: int) -> list[int]:
        rows = self.db.query(
            "SELECT frame_id FROM kg_relation_frames WHERE relation_id = ? ORDER BY frame_id",
            (require_id(relation_id, "relation_id"),),
        )
        return [r["frame_id"] for r in rows]

    def entities_for_frame(self, frame_id: int) -> list[Entity]:
        rows = self.db.query(
            "SELECT e.* FROM kg_entity_frames b JOIN knowledge_entities e ON e.id = b.entity_id"
            " WHERE b.frame_id = ? ORDER BY e.id",
            (require_id(frame_id, "frame_id"),),
        )
        return [entity_from_row(r) for r in rows]

    def frames_for_entity(self, entity_id: int) -> list[int]:
        rows = self.db.query(
            "SELECT frame_id FROM kg_entity_frames WHERE entity_id = ? ORDER BY frame_id",
            (require_id(entity_id, "entity_id"),),
        )
        return [r["frame_id"] for r in rows]

    def move_evidence(self, from_frame_ids: Sequence[int], to_frame_id: int) -> None:
        """What these frames state is now stated by ``to_frame_id`` (their text was folded into it)."""
        ids = in_list(require_id(i, "frame_id") for i in from_frame_ids)
        target = require_id(to_frame_id, "frame_id")
        for table, column in (("kg_entity_frames", "entity_id"), ("kg_relation_frames", "relation_id")):
            self.db.execute(
                f"INSERT OR IGNORE INTO {table} ({column}, frame_id) SELECT {column}, ? FROM {table}"
                f" WHERE frame_id IN ({IN_LIST})",
                (target, ids),
            )

    def note_evidence_lost(self, frame_ids: Sequence[int]) -> None:
        """Remember, with the time, the facts these frames state, before the frames are deleted.

        They are not ended here: a harvest deletes the frames of vanished items before it learns
        from its new ones, and a section whose heading was renamed is a new frame stating the same
        facts. ``end_facts_without_evidence``, run after the knowledge step, ends what has none left.
        """
        ids = in_list(require_id(i, "frame_id") for i in frame_ids)
        now = self.clock()
        for kind, table, column in (
            ("entity", "kg_entity_frames", "entity_id"),
            ("relation", "kg_relation_frames", "relation_id"),
        ):
            self.db.execute(
                f"INSERT OR IGNORE INTO kg_evidence_lost (kind, row_id, lost_at) SELECT DISTINCT ?, {column}, ?"
                f" FROM {table} WHERE frame_id IN ({IN_LIST})",
                (kind, now, ids),
            )

    def end_facts_without_evidence(self) -> dict[str, int]:
        """End the current facts that lost evidence (``note_evidence_lost``) and have none left,
        valid until the instant they lost it; a relation touching an entity so ended ends with it
        (a link to a deleted note no longer resolves). The previous versions are kept, as on every
        ending; facts that still have evidence stay as they are. Returns what was ended."""
        ended = {"entities": 0, "relations": 0}
        with self.db.transaction():
            lost_entities = self.db.query(
                "SELECT e.id, e.valid_from, l.lost_at FROM kg_evidence_lost l JOIN knowledge_entities e"
                " ON l.kind = 'entity' AND e.id = l.row_id WHERE e.valid_to IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM kg_entity_frames b WHERE b.entity_id = e.id) ORDER BY e.id"
            )
            ended_at: dict[int, str] = {}
            for row in lost_entities:
                end = not_before(row["lost_at"], row["valid_from"])
                ended["entities"] += self._retire("entity", row["id"], end)
                ended_at[row["id"]] = row["lost_at"]
            lost_relations = self.db.query(
                "SELECT r.id, r.valid_from, l.lost_at FROM kg_evidence_lost l JOIN knowledge_relations r"
                " ON l.kind = 'relation' AND r.id = l.row_id WHERE r.valid_to IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM kg_relation_frames b WHERE b.relation_id = r.id)"
            )
            ends = {row["id"]: (row["valid_from"], row["lost_at"]) for row in lost_relations}
            if ended_at:
                ended_ids = in_list(sorted(ended_at))
                for row in self.db.query(
                    "SELECT id, valid_from, source_id, target_id FROM knowledge_relations WHERE valid_to IS NULL"
                    f" AND (source_id IN ({IN_LIST}) OR target_id IN ({IN_LIST}))",
                    (ended_ids, ended_ids),
                ):
                    end = ended_at.get(row["source_id"]) or ended_at[row["target_id"]]
                    ends.setdefault(row["id"], (row["valid_from"], end))
            for relation_id, (valid_from, lost_at) in sorted(ends.items()):
                ended["relations"] += self._retire("relation", relation_id, not_before(lost_at, valid_from))
            self.db.execute("DELETE FROM kg_evidence_lost")
        return ended
