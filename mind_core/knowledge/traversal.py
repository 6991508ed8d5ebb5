"""Walking the graph: entities reachable from others, hop distances, and the frames near them.

Breadth-first, one statement per depth (the whole frontier bound as one JSON list), over active
relations only. Cycles are safe: an entity is visited once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mind_core.knowledge.model import Entity, entity_from_row
from mind_core.knowledge.validation import require_count, require_id
from mind_core.store.db import IN_LIST, Database, in_list


class Traversal:
    """Neighbourhoods and distances of a graph's entities."""

    db: Database

    def traverse(self, start_id: int, relation_type: str, max_depth: int) -> list[Entity]:
        """Active entities reachable along active outgoing ``relation_type`` edges, in BFS order.

        The start is excluded; cycles are safe; a retired entity is neither returned nor crossed.
        """
        require_id(start_id, "start_id")
        require_count(max_depth, "max_depth")
        visited = {start_id}
        frontier = [start_id]
        reached: list[Entity] = []
        for _ in range(max_depth):
            if not frontier:
                break
            next_frontier: list[int] = []
            position = {entity_id: i for i, entity_id in enumerate(frontier)}
            rows = self.db.query(
                "SELECT e.*, r.source_id AS edge_source, r.id AS edge_id FROM knowledge_relations r"
                " JOIN knowledge_entities e ON e.id = r.target_id"
                f" WHERE r.source_id IN ({IN_LIST}) AND r.relation_type = ? AND r.valid_to IS NULL",
                (in_list(frontier), relation_type),
            )
            rows.sort(key=lambda row: (position[row["edge_source"]], row["edge_id"]))
            for row in rows:
                if row["id"] in visited:
                    continue
                visited.add(row["id"])
                if row["valid_to"] is None:
                    reached.append(entity_from_row(row))
                    next_frontier.append(row["id"])
            frontier = next_frontier
        return reached

    def bfs_distances(self, start_id: int, max_depth: int) -> dict[int, int]:
        """``{entity id: hops}`` along active outgoing edges of any type, start excluded.

        As in the original, retired target entities are included (only the edges must be active).
        """
        require_id(start_id, "start_id")
        distances = self._bfs([start_id], require_count(max_depth, "max_depth"), undirected=False)
        distances.pop(start_id, None)
        return distances

    def _bfs(self, seeds: Sequence[int], max_depth: int, *, undirected: bool) -> dict[int, int]:
        distances = {seed: 0 for seed in seeds}
        frontier = list(distances)
        sql = f"SELECT target_id AS n FROM knowledge_relations WHERE source_id IN ({IN_LIST}) AND valid_to IS NULL"
        if undirected:
            sql += f" UNION SELECT source_id AS n FROM knowledge_relations WHERE target_id IN ({IN_LIST}) AND valid_to IS NULL"
        for depth in range(1, max_depth + 1):
            if not frontier:
                break
            ids = in_list(frontier)
            next_frontier: list[int] = []
            for row in self.db.query(sql, (ids, ids) if undirected else (ids,)):
                neighbour = row["n"]
                if neighbour not in distances:
                    distances[neighbour] = depth
                    next_frontier.append(neighbour)
            frontier = next_frontier
        return distances

    def frame_distances_from_entities(
        self, seed_entity_ids: Iterable[int], max_depth: int = 3, frame_ids: Iterable[int] | None = None
    ) -> dict[int, int]:
        """``{frame id: distance}`` for the contextual relevance score.

        Seeds are at distance 0. Distances are hop counts over active relations treated as
        undirected (the graph's edges are mostly co-occurrences, whose stored direction is
        arbitrary, and "Falcon is led by Alice" relates Alice to Falcon as much as the reverse);
        a multi-source BFS gives each entity its minimum distance over all seeds. Each frame
        takes the minimum distance of the entities linked to it in ``kg_entity_frames``.
        ``frame_ids``: only these frames (a search's candidates): a speaker named in a question
        reaches most of a chat mind, whose every frame would otherwise be read.
        """
        seeds = list(dict.fromkeys(require_id(s, "seed entity id") for s in seed_entity_ids))
        require_count(max_depth, "max_depth")
        if not seeds:
            return {}
        entity_distances = self._bfs(seeds, max_depth, undirected=True)
        column, ids = ("entity_id", entity_distances) if frame_ids is None else ("frame_id", frame_ids)
        rows = self.db.query(
            f"SELECT entity_id, frame_id FROM kg_entity_frames WHERE {column} IN ({IN_LIST})", (in_list(ids),)
        )
        frames: dict[int, int] = {}
        for row in rows:
            distance = entity_distances.get(row["entity_id"])
            current = frames.get(row["frame_id"])
            if distance is not None and (current is None or distance < current):
                frames[row["frame_id"]] = distance
        return frames
