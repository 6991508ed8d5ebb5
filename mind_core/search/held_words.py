"""Which of a question's words each frame shown holds, as the keyword lane matches them: as
written, or through FTS5's porter stems ("painting" in a frame that says "painted"), so the
keyword share a result shows never says 0% of a frame the keyword lane ranked first.

A word a frame does not hold as written is looked up by FTS5 itself, in a scratch in-memory FTS5
table with the mind's tokenizer that holds only the frames shown, not in the mind's index: there
a word's lookup read every frame holding it (the index cannot seek a handful of rows), which at
archive size made common words cost milliseconds each; here it costs the same at any size. (A
frame whose index row is stale, until ``mind doctor --repair`` mends it, is judged by its text as
shown rather than by the stale row.)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from mind_core.store.db import Database, driver
from mind_core.store.frames import Frame

_TOKENIZE = re.compile(r"tokenize\s*=\s*'([^']*)'", re.IGNORECASE)


def _fts_word(word: str) -> str:
    """FTS5 for one word (a keyword token: letters and digits only), quoted."""
    return f'"{word}"'


class HeldWords:
    """``held(words, frames)`` for one mind; the scratch table (with the tokenizer the mind's
    ``memory_frames_fts`` was made with) is made on first need and emptied after each call (one
    call at a time: a lock)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._scratch: Any = None
        self._lock = threading.Lock()

    def held(self, words: list[str], frames: Mapping[int, Frame]) -> dict[int, set[str]]:
        """Which of ``words`` (lower case) each frame holds."""
        held = {frame_id: {word for word in words if word in frame.content.lower()} for frame_id, frame in frames.items()}
        lacking = [frame_id for frame_id, found in held.items() if len(found) < len(words)]
        if not lacking:
            return held
        missing = [word for word in words if any(word not in held[frame_id] for frame_id in lacking)]
        with self._lock:
            scratch = self._table()
            scratch.executemany(
                "INSERT INTO shown (rowid, content) VALUES (?, ?)", [(fid, frames[fid].content) for fid in lacking]
            )
            try:
                for word in missing:
                    for (frame_id,) in scratch.execute("SELECT rowid FROM shown WHERE shown MATCH ?", (_fts_word(word),)):
                        held[frame_id].add(word)
            finally:
                scratch.execute("DELETE FROM shown")
        return held

    def _table(self) -> Any:
        if self._scratch is None:
            made = self.db.scalar("SELECT sql FROM sqlite_master WHERE name = 'memory_frames_fts'") or ""
            tokenizer = _TOKENIZE.search(made)
            options = f", tokenize='{tokenizer.group(1)}'" if tokenizer else ""
            scratch = driver().connect(":memory:", isolation_level=None, check_same_thread=False)
            scratch.execute(f"CREATE VIRTUAL TABLE shown USING fts5(content{options})")
            self._scratch = scratch
        return self._scratch
