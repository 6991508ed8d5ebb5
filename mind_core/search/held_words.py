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
            self._scratch = scratch_fts(self.db, "shown")
        return self._scratch


def scratch_fts(db: Database, table: str) -> Any:
    """A connection to a new in-memory database holding one FTS5 table ``table`` with the
    tokenizer the mind's ``memory_frames_fts`` was made with."""
    made = db.scalar("SELECT sql FROM sqlite_master WHERE name = 'memory_frames_fts'") or ""
    tokenizer = _TOKENIZE.search(made)
    options = f", tokenize='{tokenizer.group(1)}'" if tokenizer else ""
    scratch = driver().connect(":memory:", isolation_level=None, check_same_thread=False)
    scratch.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(content{options})")
    return scratch


class WordTerms:
    """The term the mind's full-text index holds for a keyword (its porter stem: "painting" ->
    "paint"), by FTS5's own tokenizer in a scratch table; None for a keyword that is not one term.
    Kept per keyword (the tokenizer never changes)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._scratch: Any = None
        self._terms: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def terms(self, words: list[str]) -> list[str | None]:
        missing = [word for word in dict.fromkeys(words) if word not in self._terms]
        if missing:
            with self._lock:
                if self._scratch is None:
                    self._scratch = scratch_fts(self.db, "words")
                    self._scratch.execute("CREATE VIRTUAL TABLE words_terms USING fts5vocab(words, instance)")
                self._scratch.executemany("INSERT INTO words (rowid, content) VALUES (?, ?)", list(enumerate(missing)))
                try:
                    found: dict[int, list[str]] = {}
                    for row, term in self._scratch.execute("SELECT doc, term FROM words_terms"):
                        found.setdefault(int(row), []).append(str(term))
                finally:
                    self._scratch.execute("DELETE FROM words")
                for row, word in enumerate(missing):
                    terms = found.get(row, [])
                    self._terms[word] = terms[0] if len(terms) == 1 else None
        return [self._terms[word] for word in words]
