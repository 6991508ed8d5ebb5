"""Mail threads and notes in the ranking (issue #35): a reply yields to the message it answers
when its own words say less of the question, and a note's sections are a session whose context
has a weight of its own.

Every frame of a mail thread carries the thread's subject as its title (``[subject] From: text``)
and the importer has already cut the quoted lines, so a reply such as "Applied." or "Thanks!" is
the subject and a word or two: to BM25 a short document holding the question's words, to the
vector lane nearly the subject's own vector. It outranks the long message it answers on any
question about that subject, and so does a longer reply that says little of the question. The
title is the same in every frame of the thread; what tells them apart is each message's own text.
So a mail reply yields to the message it answers (``yield_to_parents``) when its own text (without
title and sender) holds none of the question's words (an acknowledgement), or fewer than that
message's own text does, or than the nearest message further up the thread that holds more (a
reply to one patch of a series, whose patch says nothing of the question, yields past it to the
cover letter, which describes the series): its match goes just under that message's, when that
message matched the question itself. When that message yields in turn, the reply yields on up the
thread to the first message that does not ("Thanks!" to "Applied." to the patch). A reply whose own
words say as much of the question keeps its rank, and so does one whose parent is not in the mind
or did not match (it may be all the mind has). Measured: benchmarks/README.md, "Mail and notes".

A note's sections are a session too (``t`` is the section's place in the note), but a section's
neighbours are other topics of the same note more often than a conversation's next turn is the
answer to its question: ``SearchConfig.note_context_weight`` is the context weight for frames of a
note (``provenance.item_kind`` "note": Markdown, plain text, PDF and web pages), chosen on the
notes benchmark leave-one-fold-out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mind_core.search.until_changed import UntilChanged
from mind_core.store.db import IN_LIST, Database, in_list

# how far under its parent's match a yielding reply goes: just under, so it stays next to it
YIELD_SHARE = 0.999
NOTE_ITEM_KIND = "note"
MAIL_ITEM_KIND = "email"  # a mail thread: the item whose messages share its subject as their title
_WORD = re.compile(r"\w+")
_ADDRESS = re.compile(r"\S+@\S+")
_SUFFIXES = ("ing", "ied", "ies", "ed", "es", "s")
MAX_KEPT_FRAMES = 50_000  # frames whose thread and own words are kept at most (then read again)


def own_text(content: str, speaker: str | None) -> str:
    """A harvested frame's text without its ``[title]`` and sender (``importer.frame_content``)."""
    if not content.startswith("["):
        return content
    marker = f"] {speaker}: " if speaker else "]\n"
    at = content.find(marker)
    return content[at + len(marker) :] if at >= 0 else content


def own_words(text: str) -> list[str]:
    """A message's words, lower case, without mail addresses ("Acked-by: Ann <ann@x.org>": 3 words)."""
    return [word.lower() for word in _WORD.findall(_ADDRESS.sub(" ", text))]


def stem(word: str) -> str:
    """A word's light stem, lower case: "issues" and "issue", "applied" and "apply" meet."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class MailFrame:
    """What the rule reads of a mail frame: its thread, the message it answers, its own words' stems."""

    thread: str
    in_reply_to: str | None
    stems: frozenset[str]


class ThreadReplies:
    """Which mail replies yield to which message (``yielding``). The mail frames' threads and own
    words, and each thread's message ids, are kept until the mind changes (``UntilChanged``): a
    long patch's words are read once, not on every search that finds its thread."""

    def __init__(self, db: Database, kept: UntilChanged) -> None:
        self.db = db
        self.kept = kept

    def yielding(self, frame_ids: list[int], question_words: Iterable[str]) -> dict[int, int]:
        """Reply frame -> the frame it yields to, for each of ``frame_ids`` that is a mail reply
        whose own text holds none of ``question_words`` (then: the message it answers) or fewer
        than a message up its thread (then: the nearest such), that message being in the mind; on
        up the thread while that message yields too."""
        asked = {stem(word) for word in question_words}
        frames = self._mail_frames(frame_ids)
        replies = [frame_id for frame_id in frame_ids if frames.get(frame_id) and frames[frame_id].in_reply_to]
        yields = {}
        for reply in replies:
            target, seen = self._message_it_yields_to(reply, frames, asked), {reply}
            while target is not None and target not in seen:
                seen.add(target)
                yields[reply] = target
                target = self._message_it_yields_to(target, frames, asked)
        return yields

    def _message_it_yields_to(self, frame_id: int, frames: dict[int, MailFrame | None], asked: set[str]) -> int | None:
        """The message above ``frame_id`` it yields to: its parent when its own text holds none of
        the question's words, else the nearest message up the thread whose own text holds more of
        them (a reply to one patch of a series yields past the patch to the cover letter)."""
        frame = frames[frame_id]
        if frame is None:
            return None
        held = len(asked & frame.stems)
        seen, current = {frame_id}, frame
        while current.in_reply_to is not None:
            above = self._messages(current.thread).get(current.in_reply_to)
            if above is None or above in seen:
                return None
            seen.add(above)
            if above not in frames:
                frames.update(self._mail_frames([above]))
            current = frames.get(above)
            if current is None:
                return None
            if held == 0 or held < len(asked & current.stems):
                return above
        return None

    def _mail_frames(self, frame_ids: list[int]) -> dict[int, MailFrame | None]:
        kept: dict[int, MailFrame | None] = self.kept.get("mail_frames", dict)
        missing = [frame_id for frame_id in frame_ids if frame_id not in kept]
        if len(kept) + len(missing) > MAX_KEPT_FRAMES:  # a long-running server over a large mind
            kept.clear()
            missing = list(dict.fromkeys(frame_ids))
        if missing:
            kept.update(dict.fromkeys(missing))
            rows = self.db.query(
                "SELECT id, gop_id, content, json_extract(metadata, '$.provenance.author'),"
                " json_extract(metadata, '$.source.message.in_reply_to') FROM memory_frames"
                f" WHERE id IN ({IN_LIST}) AND json_extract(metadata, '$.provenance.item_kind') = ?",
                (in_list(missing), MAIL_ITEM_KIND),
            )
            for frame_id, gop, content, author, in_reply_to in rows:
                stems = frozenset(stem(word) for word in own_words(own_text(content, author)))
                kept[frame_id] = MailFrame(gop, in_reply_to, stems)
        return {frame_id: kept[frame_id] for frame_id in frame_ids}

    def _messages(self, thread: str) -> dict[str, int]:
        """A thread's frames by their message id."""
        kept: dict[str, dict[str, int]] = self.kept.get("thread_messages", dict)
        if thread not in kept:
            rows = self.db.query(
                "SELECT json_extract(metadata, '$.source.message.message_id'), id FROM memory_frames WHERE gop_id = ?",
                (thread,),
            )
            kept[thread] = {message_id: frame_id for message_id, frame_id in rows if message_id}
        return kept[thread]


def yield_to_parents(
    replies: ThreadReplies, match: dict[int, float], matched: set[int], pool: list[int], question_words: Iterable[str]
) -> dict[int, int]:
    """Each yielding reply among ``pool`` (the best-matching frames) that ranks at or above the
    message it yields to, when that message matched on its own (is in ``matched``), goes just
    under it (``yield_scores``). Changes ``match``; returns reply -> message for those replies."""
    yielded = {
        reply: parent
        for reply, parent in replies.yielding(pool, question_words).items()
        if parent in matched and parent in match and match[reply] >= match[parent]
    }
    yield_scores(match, yielded)
    return yielded


def yield_scores(scores: dict[int, float], yielded: dict[int, int]) -> None:
    """A yielding reply's score goes just under the score of the message it yields to."""
    for reply, parent in yielded.items():
        if reply in scores and parent in scores:
            scores[reply] = min(scores[reply], scores[parent] * YIELD_SHARE)


def note_frames(
    db: Database, kept: UntilChanged, frame_ids: set[int], neighbours: dict[int, list[int]]
) -> set[int]:
    """Which of ``frame_ids`` and their session ``neighbours`` are sections of a note. A session's
    frames share their item, so whether a session is a note is read from one of its frames, once
    until the mind changes; a note frame's neighbours are that note's sections."""
    if not frame_ids:
        return set()
    sessions = dict(db.query(f"SELECT id, gop_id FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(sorted(frame_ids)),)))
    is_note: dict[str, bool] = kept.get("note_sessions", dict)
    unknown = sorted(set(sessions.values()) - is_note.keys())
    if unknown:
        is_note.update(dict.fromkeys(unknown, False))
        rows = db.query(
            "SELECT gop_id FROM memory_frames WHERE id IN (SELECT min(id) FROM memory_frames"
            f" WHERE gop_id IN ({IN_LIST}) GROUP BY gop_id) AND json_extract(metadata, '$.provenance.item_kind') = ?",
            (in_list(unknown), NOTE_ITEM_KIND),
        )
        is_note.update((row[0], True) for row in rows)
    notes = {frame_id for frame_id, session in sessions.items() if is_note[session]}
    return notes.union(*(neighbours.get(frame_id, ()) for frame_id in notes))
