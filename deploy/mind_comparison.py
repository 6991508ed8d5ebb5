"""A mind harvested on a cluster against the same sources harvested on one machine: everything
but the vectors compared exactly (frames, ledger, full-text index, knowledge graph, sessions), the
vectors frame by frame by cosine. The in-process model quantizes per batch, so a text embedded in
another batch mix (chunks cut differently, a chunk run again) may get a vector a little apart;
a deterministic embedder gives identical ones (cosine 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mind_core.mind import Mind
from mind_core.testing.dump import canonical_dump


@dataclass(frozen=True)
class MindComparison:
    same_content: bool  # frames, ledger, FTS, entities, relations, links, sessions all equal
    differing: tuple[str, ...]  # the parts of the dump that differ
    # frames equal but for their date: an item without a time of its own (a Claude memory) is
    # dated when it is harvested, so two harvests at different times date it differently
    dated_at_harvest: int
    vectors: int  # vectors in the cluster's mind
    reference_vectors: int
    min_cosine: float  # over the frames both minds have a vector for (1.0 when there are none)

    def equal(self, min_cosine: float = 0.999) -> bool:
        return self.same_content and self.vectors == self.reference_vectors and self.min_cosine >= min_cosine

    def describe(self) -> str:
        content = "frames and everything else equal" if self.same_content else f"differ in {', '.join(self.differing)}"
        if self.dated_at_harvest:
            content += f" ({self.dated_at_harvest} frame(s) without a time of their own dated at their harvest)"
        return (
            f"{content}; vectors {self.vectors} (one machine: {self.reference_vectors}), "
            f"lowest cosine to one machine's {self.min_cosine:.6f}"
        )


def mind_dump(path) -> dict[str, Any]:
    with Mind.open(path, readonly=True) as mind:
        return canonical_dump(mind)


def compare_minds(cluster: dict[str, Any], reference: dict[str, Any]) -> MindComparison:
    """Compare two canonical dumps (``mind_core.testing.dump``)."""
    cluster, reference = dict(cluster), dict(reference)
    dated = 0
    if len(cluster["frames"]) == len(reference["frames"]):
        undated = [_undated(a, b) for a, b in zip(cluster["frames"], reference["frames"], strict=True)]
        dated = sum(a != b for a, b in zip(cluster["frames"], reference["frames"], strict=True) if _undated(a, b))
        if all(undated):
            cluster["frames"] = reference["frames"]
    differing = tuple(part for part in reference if part != "vec" and cluster.get(part) != reference[part])
    ours, theirs = dict(cluster["vec"]), dict(reference["vec"])
    cosines = [_cosine(ours[frame], theirs[frame]) for frame in ours.keys() & theirs.keys()]
    return MindComparison(
        same_content=not differing,
        differing=differing,
        dated_at_harvest=dated,
        vectors=len(ours),
        reference_vectors=len(theirs),
        min_cosine=min(cosines, default=1.0),
    )


CREATED_AT = 7  # the frame's date in a canonical dump's frame row


def _undated(a: tuple, b: tuple) -> bool:
    """Equal frames, or equal but for the date."""
    return a[:CREATED_AT] + a[CREATED_AT + 1:] == b[:CREATED_AT] + b[CREATED_AT + 1:]


def _cosine(a: bytes, b: bytes) -> float:
    x, y = np.frombuffer(a, dtype=np.float32), np.frombuffer(b, dtype=np.float32)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else float(np.array_equal(x, y))
