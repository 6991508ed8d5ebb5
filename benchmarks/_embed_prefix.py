"""What the embedded text's prefix costs or gives (issue #35, multi-hop, seventh round; a probe).

The chat importer stores a turn as ``[title] Speaker: text`` (``frame_content``), and its vector
is made from that whole text: "[conv-41 session 15] Assistant: ..." in a mind harvested from a
ChatGPT export, "[John] John: ..." in one from Telegram. This probe re-embeds every frame of a
kept mind with part of that prefix left out and lets the vector lane read those vectors instead
of the stored ones, without touching the mind (the lane's ``knn`` of the open mind is replaced by
an exact numpy scan, as ``_turn_context`` does). The keyword lane and the stored text are unchanged.

Modes: ``full`` (the stored vectors: the product), ``no-speaker`` (the speaker left out only when
it is a generic role word, "User" / "Assistant" ..., the importer's capitalised role; a real
name stays), ``no-title`` (the ``[title]`` left out), ``none`` (the message text alone).

Used by ``select_constants.py --embed-prefix ...`` as a grid axis.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
from _turn_context import scan_instead_of_knn

from mind_core.embeddings.base import Embedder
from mind_core.harvest.importer import TITLE_CHARS
from mind_core.mind import Mind

MODES = ("full", "no-speaker", "no-title", "none")


@dataclass(frozen=True)
class Prefix:
    """A stored frame text taken apart: its title, its speaker (None: none written) and its text."""

    title: str
    speaker: str | None
    text: str
    generic_speaker: bool  # the speaker is the role word the importer writes without an author

    def embedded(self, mode: str) -> str:
        """The text embedded under ``mode`` (``full`` gives back the stored text)."""
        if mode not in MODES:
            raise ValueError(f"unknown embedded prefix {mode!r}")
        keep_title = mode in ("full", "no-speaker")
        keep_speaker = self.speaker is not None and (
            mode == "full" or mode == "no-title" or (mode == "no-speaker" and not self.generic_speaker)
        )
        title = f"[{self.title}]" if keep_title else ""
        if keep_speaker:
            return f"{title} {self.speaker}: {self.text}" if title else f"{self.speaker}: {self.text}"
        if not title:
            return self.text
        return f"{title} {self.text}" if self.speaker is not None else f"{title}\n{self.text}"


def split(content: str, provenance: dict) -> Prefix | None:
    """``content`` taken apart with what the importer wrote it from (the provenance's title,
    author and role); None when it does not start as the importer writes a chat frame."""
    title = " ".join((provenance.get("title") or "Untitled").split())[:TITLE_CHARS]
    author, role = provenance.get("author"), provenance.get("role")
    speaker = author or (role.capitalize() if role else None)
    head = f"[{title}] {speaker}: " if speaker else f"[{title}]\n"
    if not content.startswith(head):
        return None
    return Prefix(title, speaker, content[len(head) :], generic_speaker=not author and speaker is not None)


def texts(mind: Mind, mode: str) -> dict[int, str]:
    """Each frame's text embedded under ``mode``: frames the importer did not write (no chat
    prefix) keep their stored text."""
    result = {}
    for frame_id, content, metadata in mind.db.query("SELECT id, content, metadata FROM memory_frames"):
        try:
            provenance = json.loads(metadata or "{}").get("provenance", {})
        except ValueError:
            provenance = {}
        prefix = split(content, provenance)
        result[int(frame_id)] = prefix.embedded(mode) if prefix else content
    return result


@dataclass
class Reembedded:
    """A mind's frames re-embedded under one mode, as a matrix in the vector table's rowid order."""

    ids: np.ndarray
    vectors: np.ndarray
    embed_cpu_s: float
    changed: int  # frames whose embedded text differs from the stored one

    @classmethod
    def of(cls, mind: Mind, embedder: Embedder, mode: str) -> Reembedded:
        ids = np.array(
            [row[0] for row in mind.db.query("SELECT rowid FROM memory_frames_vec ORDER BY rowid")]
        )
        stored = dict(mind.db.query("SELECT id, content FROM memory_frames"))
        wanted = texts(mind, mode)
        batch = [wanted[int(frame_id)] for frame_id in ids]
        began = time.process_time()
        vectors = np.asarray(embedder.embed_batch(batch), dtype=np.float32)
        cpu = time.process_time() - began
        changed = sum(1 for frame_id, text in zip(ids, batch, strict=True) if stored[int(frame_id)] != text)
        return cls(ids.astype(np.int64), vectors, cpu, changed)


_KEPT: dict[tuple[str, str], Reembedded] = {}


def install(mind: Mind, embedder: Embedder, mode: str) -> None:
    """Make the mind's vector lane read its frames embedded under ``mode`` ("full": the product's
    own lane and stored vectors)."""
    if mode == "full":
        mind.search.vectors.__dict__.pop("knn", None)
        return
    if mode not in MODES:
        raise ValueError(f"unknown embedded prefix {mode!r}")
    if (mind.path, mode) not in _KEPT:
        kept = _KEPT[(mind.path, mode)] = Reembedded.of(mind, embedder, mode)
        print(
            f"  embedded prefix {mode}: {len(kept.ids)} frames re-embedded ({kept.changed} texts changed) "
            f"in {kept.embed_cpu_s:.1f} s CPU",
            flush=True,
        )
    kept = _KEPT[(mind.path, mode)]
    scan_instead_of_knn(mind, kept.ids, lambda query: kept.vectors[:, : len(query)] @ query)
