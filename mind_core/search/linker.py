"""MemoryLinker: frames related to a piece of content, through hybrid search.

Score scale: a link's score is the result's ``match_score`` (0..1, at the calibrated lane weights
whatever weights order the results; see ``SearchResult.match_score``). One lane alone gives at most
0.5, so the default threshold 0.6
links a frame only when both the keyword and the vector lane found it near the top. The original
compared the raw final score (at most ~0.04) with 0.1, so it never linked anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from mind_core.search.hybrid import HybridSearch

DEFAULT_LINK_THRESHOLD = 0.6


@dataclass
class MemoryLink:
    frame_id: int
    content: str
    score: float


class MemoryLinker:
    def __init__(self, search: HybridSearch, threshold: float = DEFAULT_LINK_THRESHOLD) -> None:
        self.search = search
        self.threshold = threshold

    def find_related(
        self, content: str, limit: int = 5, exclude_frame_id: int | None = None
    ) -> list[MemoryLink]:
        links = []
        for result in self.search.search(
            content, limit=limit + (1 if exclude_frame_id else 0), time_aware=False
        ):
            if result.frame.id != exclude_frame_id and result.match_score >= self.threshold:
                links.append(MemoryLink(result.frame.id, result.frame.content, result.match_score))
        return links[:limit]
