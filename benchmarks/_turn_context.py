"""A chat turn's vector that knows what it answers (issue #35, multi-hop, seventh round; a probe).

Chat turns are short and lean on the turn before: "I'm off to go swimming with the kids" answers
"What are you up to this weekend?". The product embeds each frame alone. This probe embeds each
chat turn a second time as its own text plus the previous turn of the other side of the same
conversation (cut to ``CONTEXT_WORDS`` words, marked "in reply to"), and lets the vector lane score
a turn by its own cosine, the context text's, their maximum or a blend, without touching the mind:
the vector lane's ``knn`` of an open mind is replaced by an exact numpy scan over both sets of
vectors (LoCoMo and REALTALK minds hold a few thousand frames). The keyword lane is unchanged.

Used by ``select_constants.py --turn-context ...`` as a grid axis; run alone
(``_turn_context.py MIND ...``), it measures what the context texts add to the embedding CPU.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mind_core.embeddings.base import Embedder
from mind_core.mind import Mind
from mind_core.store.frames import scope_clauses

CONTEXT_WORDS = 30
CHAT_ROLES = ("user", "assistant")
_PREFIX = re.compile(r"^\[[^\]]*\]\s*[^:]{1,40}:\s*")  # "[conv-26 session 1] User: "
MODES = ("off", "max", "blend", "instead")


def turn_text(content: str) -> str:
    """A frame's text without the "[title] Role: " the chat importer writes before it."""
    return _PREFIX.sub("", content, count=1)


def context_texts(mind: Mind, words: int = CONTEXT_WORDS) -> dict[int, str]:
    """For each chat turn answering a turn of the other side (the latest earlier turn of the same
    conversation said by another role), its text plus that turn's first ``words`` words."""
    by_session: dict[str, list[tuple[int, int, str, str]]] = {}
    for frame_id, gop_id, position, content, metadata in mind.db.query(
        "SELECT id, gop_id, t, content, metadata FROM memory_frames WHERE gop_id IS NOT NULL"
    ):
        try:
            role = json.loads(metadata or "{}").get("provenance", {}).get("role")
        except ValueError:
            continue
        if role in CHAT_ROLES:
            by_session.setdefault(gop_id, []).append((int(position), int(frame_id), role, content))
    texts = {}
    for turns in by_session.values():
        turns.sort()
        for index, (_, frame_id, role, content) in enumerate(turns):
            previous = next((t for t in reversed(turns[:index]) if t[2] != role), None)
            if previous is None:
                continue
            asked = " ".join(turn_text(previous[3]).split()[:words])
            texts[frame_id] = f"{content} (in reply to: {asked})"
    return texts


@dataclass
class TurnContext:
    """A mind's own frame vectors and its turns' context vectors, as matrices."""

    ids: np.ndarray
    own: np.ndarray
    context: np.ndarray  # a frame without a context text: its own vector
    words: np.ndarray  # each frame's own words (without the importer's prefix)
    embed_cpu_s: float
    texts: int

    @classmethod
    def of(cls, mind: Mind, embedder: Embedder, words: int = CONTEXT_WORDS) -> TurnContext:
        rows = mind.db.query("SELECT rowid, embedding FROM memory_frames_vec ORDER BY rowid")
        lengths = {
            row[0]: len(turn_text(row[1]).split())
            for row in mind.db.query("SELECT id, content FROM memory_frames")
        }
        ids = np.array([row[0] for row in rows], dtype=np.int64)
        own = np.stack([np.frombuffer(row[1], dtype=np.float32) for row in rows])
        texts = context_texts(mind, words)
        wanted = [(i, texts[int(frame_id)]) for i, frame_id in enumerate(ids) if int(frame_id) in texts]
        began = time.process_time()
        vectors = np.asarray(embedder.embed_batch([text for _, text in wanted]), dtype=np.float32)
        cpu = time.process_time() - began
        context = own.copy()
        for (row, _), vector in zip(wanted, vectors, strict=True):
            context[row, : len(vector)] = vector
        own_words = np.array([lengths.get(int(frame_id), 0) for frame_id in ids], dtype=np.int64)
        return cls(ids, own, context, own_words, cpu, len(wanted))

    def scores(self, query: np.ndarray, mode: str, weight: float, short: int = 0) -> np.ndarray:
        """Each frame's cosine to ``query`` as ``mode`` reads it; ``short`` > 0: only turns of at
        most that many words of their own read their context text, the others their own vector."""
        own = self.own[:, : len(query)] @ query
        if mode == "off":
            return own
        context = self.context[:, : len(query)] @ query
        if mode == "instead":
            read = context
        elif mode == "max":
            read = np.maximum(own, context)
        else:
            read = (1 - weight) * own + weight * context
        return np.where(self.words <= short, read, own) if short > 0 else read


def scan_instead_of_knn(
    mind: Mind, ids: np.ndarray, similarity_of: Callable[[np.ndarray], np.ndarray]
) -> None:
    """Replace the open mind's vector-lane ``knn`` by an exact scan: ``similarity_of(query)`` gives
    each frame's cosine (the frames ``ids``, in its order); the scope filters are the lane's."""

    def knn(
        vector: Any,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        source: Any = None,
    ) -> list[tuple[int, float]]:
        similarity = similarity_of(np.asarray(vector, dtype=np.float32))
        order = np.argsort(-similarity, kind="stable")
        clauses, params = scope_clauses("", gop_id, since, until, source)
        alive = {
            row[0]
            for row in mind.db.query(
                f"SELECT id FROM memory_frames{' WHERE ' + ' AND '.join(clauses) if clauses else ''}", params
            )
        }
        ranked: list[tuple[int, float]] = []
        for row in order:
            frame_id = int(ids[row])
            if frame_id in alive:
                ranked.append((frame_id, math.sqrt(max(0.0, 2.0 - 2.0 * float(similarity[row])))))
                if len(ranked) >= limit:
                    break
        return ranked

    mind.search.vectors.knn = knn  # type: ignore[method-assign]


_KEPT: dict[tuple[str, int], TurnContext] = {}


def install(
    mind: Mind, embedder: Embedder, mode: str, weight: float, words: int = CONTEXT_WORDS, short: int = 0
) -> None:
    """Make the mind's vector lane score frames as ``mode`` says ("off": the product's own lane),
    the previous turn cut to ``words`` words; ``short``: see ``TurnContext.scores``."""
    vectors = mind.search.vectors
    if mode == "off":
        vectors.__dict__.pop("knn", None)
        return
    if (mind.path, words) not in _KEPT:
        kept = _KEPT[(mind.path, words)] = TurnContext.of(mind, embedder, words)
        print(
            f"  turn context: {kept.texts} context texts embedded in {kept.embed_cpu_s:.1f} s CPU", flush=True
        )
    kept = _KEPT[(mind.path, words)]
    scan_instead_of_knn(mind, kept.ids, lambda query: kept.scores(query, mode, weight, short))


def parse(spec: str) -> tuple[str, float, int, int]:
    """ "off", "max", "instead" or "blend0.3" (the context text's share of the cosine), optionally
    followed by ":N", the words kept of the previous turn (default ``CONTEXT_WORDS``), and "@M":
    only turns of at most M words read their context (default: every turn)."""
    spec, _, short = spec.partition("@")
    spec, _, words = spec.partition(":")
    count = int(words) if words else CONTEXT_WORDS
    if spec.startswith("blend"):
        return "blend", float(spec[len("blend") :] or 0.5), count, int(short or 0)
    if spec not in MODES:
        raise ValueError(f"unknown turn context {spec!r}")
    return spec, 0.0, count, int(short or 0)


def specs(values: Sequence[str]) -> list[tuple[str, float, int, int]]:
    return [parse(value) for value in values]


def harvest_cost(paths: Sequence[str], words: int = CONTEXT_WORDS) -> None:
    """What embedding the context texts adds to a harvest's vector stage: per mind, the CPU time
    of embedding every chat turn's own text and its context text, side by side, the same batch size
    as the harvest (``EMBED_BATCH``)."""
    from mind_core.embeddings import InprocessEmbedder
    from mind_core.search.vector_index import EMBED_BATCH

    embedder = InprocessEmbedder()
    embedder.embed("warm up the model")
    for path in paths:
        mind = Mind.open(path, embedder=embedder)
        try:
            texts = context_texts(mind, words)
            own = dict(
                mind.db.query(
                    f"SELECT id, content FROM memory_frames WHERE id IN ({','.join(map(str, texts))})"
                )
            )
            figures = {}
            for name, batch in (("own", [own[i] for i in texts]), ("context", list(texts.values()))):
                began = time.process_time()
                for start in range(0, len(batch), EMBED_BATCH):
                    embedder.embed_batch(batch[start : start + EMBED_BATCH])
                figures[name] = time.process_time() - began
            print(
                f"{path}: {len(texts)} turns; CPU own texts {figures['own']:.1f} s "
                f"({1000 * figures['own'] / len(texts):.1f} ms a turn), context texts {figures['context']:.1f} s "
                f"({1000 * figures['context'] / len(texts):.1f} ms a turn, {figures['context'] / figures['own']:.2f}x)",
                flush=True,
            )
        finally:
            mind.close()


if __name__ == "__main__":
    import sys

    harvest_cost(sys.argv[1:])
