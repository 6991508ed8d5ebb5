"""Closing harvested sessions with a short extractive summary.

A harvested conversation, note or thread is complete once imported, so the harvest closes its
session instead of leaving it ``active`` forever (where a later memory written without a session
used to land). The summary is extractive, no model needed: the first turn (what it was about) and
the most central turn (the one sharing the most words with all the others), each cut to
``SUMMARY_TURN_CHARS``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.sessions import SessionStore

SUMMARY_TURN_CHARS = 200
SPEAKER_CHARS = 60  # a "Name <address>: " prefix longer than this is not taken for a speaker
MAX_TURNS_READ = 200  # centrality over the first 200 turns keeps a 10,000-turn thread cheap
_TITLE = re.compile(r"^\[[^\]\n]*\][ \t]*\n?")
_WORD = re.compile(r"[^\W\d_]{3,}")


def _turn_text(content: str) -> str:
    """The turn without its ``[title]`` (brackets balanced: a title may hold ``[PATCH]``)."""
    text = content
    if text.startswith("["):
        depth = 0
        for index, char in enumerate(text):
            depth += {"[": 1, "]": -1}.get(char, 0)
            if depth == 0:
                text = text[index + 1 :]
                break
        else:
            text = _TITLE.sub("", text, count=1)
    return " ".join(text.split())


def _cut(text: str) -> str:
    return text if len(text) <= SUMMARY_TURN_CHARS else text[: SUMMARY_TURN_CHARS - 1].rstrip() + "…"


def extractive_summary(contents: Sequence[str]) -> str | None:
    """The first turn and the most central of the others (cosine of word counts summed over the
    other turns); None for no text."""
    turns = [t for t in (_turn_text(c) for c in contents[:MAX_TURNS_READ]) if t]
    if not turns:
        return None
    # what a turn says, not who says it: a speaker's name would make their shortest turn central
    bodies = [t.split(": ", 1)[1] if ": " in t[:SPEAKER_CHARS] else t for t in turns]
    bags = [Counter(w.lower() for w in _WORD.findall(body)) for body in bodies]
    norms = [math.sqrt(sum(v * v for v in bag.values())) or 1.0 for bag in bags]

    def centrality(i: int) -> float:
        return sum(
            sum(count * bags[j].get(word, 0) for word, count in bags[i].items()) / (norms[i] * norms[j])
            for j in range(len(bags))
            if j != i
        )

    # the first turn is always in; the most central of the others joins it
    central = max(range(1, len(turns)), key=lambda i: (centrality(i), -i)) if len(turns) > 1 else 0
    parts = [_cut(turns[0])] + ([_cut(turns[central])] if central != 0 else [])
    return " … ".join(parts)


def close_harvested_sessions(db: Database, source: str, frame_ids: Sequence[int] = ()) -> int:
    """Close, with their summary, the active sessions of ``source`` (``harvest:<source>:…``) and
    those its new or changed frames ``frame_ids`` belong to (a conversation that went on since
    its session was closed is summarized again); returns how many were closed."""
    sessions = SessionStore(db)
    prefix = f"harvest:{source}:"
    gop_ids = {
        r["gop_id"]
        for r in db.query(
            "SELECT gop_id FROM sessions WHERE status = 'active' AND substr(gop_id, 1, ?) = ?",
            (len(prefix), prefix),
        )
    }
    gop_ids |= {
        r["gop_id"]
        for r in db.query(f"SELECT DISTINCT gop_id FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(frame_ids),))
        if r["gop_id"].startswith(prefix)
    }
    closed = 0
    for gop_id in sorted(gop_ids):
        contents = [
            r["content"]
            for r in db.query(
                "SELECT content FROM memory_frames WHERE gop_id = ? ORDER BY t, id LIMIT ?", (gop_id, MAX_TURNS_READ)
            )
        ]
        with db.transaction():
            closed += sessions.close(gop_id, extractive_summary(contents))
    return closed
