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
title and sender) holds fewer of the question's words than that message's own text does, or none
of them (an acknowledgement): its match goes just under that message's, when that message matched
the question itself. When that message yields in turn, the reply yields on up the thread to the
first message that does not ("Thanks!" to "Applied." to the patch). A reply whose own words say
as much of the question keeps its rank, and so does one whose parent is not in the mind or did
not match (it may be all the mind has). Measured: benchmarks/README.md, "Mail and notes".

A note's sections are a session too (``t`` is the section's place in the note), but a section's
neighbours are other topics of the same note more often than a conversation's next turn is the
answer to its question: ``SearchConfig.note_context_weight`` is the context weight for frames of a
note (``provenance.item_kind`` "note": Markdown, plain text, PDF and web pages), chosen on the
notes benchmark leave-one-fold-out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mind_core.store.db import IN_LIST, Database, in_list

# how far under its parent's match a yielding reply goes: just under, so it stays next to it
YIELD_SHARE = 0.999
NOTE_ITEM_KIND = "note"
MAIL_ITEM_KIND = "email"  # a mail thread: the item whose messages share its subject as their title
_WORD = re.compile(r"\w+")
_ADDRESS = re.compile(r"\S+@\S+")
_SUFFIXES = ("ing", "ied", "ies", "ed", "es", "s")


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


def yielding_replies(db: Database, frame_ids: list[int], question_words: Iterable[str]) -> dict[int, int]:
    """Reply frame -> the frame it yields to, for each of ``frame_ids`` that is a mail reply whose
    own text holds fewer of ``question_words`` than the message it answers (or none), that
    message being in the mind; on up the thread while that message yields too."""
    if not frame_ids:
        return {}
    threads = db.query(
        f"SELECT DISTINCT gop_id FROM memory_frames WHERE id IN ({IN_LIST})"
        " AND json_extract(metadata, '$.provenance.item_kind') = ?"
        " AND json_extract(metadata, '$.source.message.in_reply_to') IS NOT NULL",
        (in_list(frame_ids), MAIL_ITEM_KIND),
    )
    if not threads:
        return {}
    rows = db.query(
        "SELECT id, gop_id, content, json_extract(metadata, '$.provenance.author'),"
        " json_extract(metadata, '$.source.message.message_id'),"
        " json_extract(metadata, '$.source.message.in_reply_to') FROM memory_frames"
        f" WHERE gop_id IN ({IN_LIST})",
        (in_list([row[0] for row in threads]),),
    )
    asked = {stem(word) for word in question_words}
    by_message = {(gop, message_id): frame_id for frame_id, gop, _, _, message_id, _ in rows if message_id}
    held = {
        frame_id: len(asked.intersection(stem(word) for word in own_words(own_text(content, author))))
        for frame_id, _, content, author, _, _ in rows
    }
    parent_of = {}
    for frame_id, gop, _, _, _, in_reply_to in rows:
        parent = by_message.get((gop, in_reply_to)) if in_reply_to else None
        if parent is not None and parent != frame_id and (held[frame_id] == 0 or held[frame_id] < held[parent]):
            parent_of[frame_id] = parent
    yields = {}
    for reply in frame_ids:
        if reply not in parent_of:
            continue
        target, seen = parent_of[reply], {reply}
        while target in parent_of and parent_of[target] not in seen:
            seen.add(target)
            target = parent_of[target]
        yields[reply] = target
    return yields


def yield_to_parents(
    db: Database, match: dict[int, float], matched: set[int], pool: list[int], question_words: Iterable[str]
) -> dict[int, int]:
    """Each yielding reply among ``pool`` (the best-matching frames) that ranks at or above the
    message it yields to, when that message matched on its own (is in ``matched``), goes just
    under it (``yield_scores``). Changes ``match``; returns reply -> message for those replies."""
    yielded = {
        reply: parent
        for reply, parent in yielding_replies(db, pool, question_words).items()
        if parent in matched and parent in match and match[reply] >= match[parent]
    }
    yield_scores(match, yielded)
    return yielded


def yield_scores(scores: dict[int, float], yielded: dict[int, int]) -> None:
    """A yielding reply's score goes just under the score of the message it yields to."""
    for reply, parent in yielded.items():
        if reply in scores and parent in scores:
            scores[reply] = min(scores[reply], scores[parent] * YIELD_SHARE)


def note_frames(db: Database, frame_ids: set[int], neighbours: dict[int, list[int]]) -> set[int]:
    """Which of ``frame_ids`` and their session ``neighbours`` are sections of a note (a session's
    frames share their item, so a note frame's neighbours are that note's sections)."""
    if not frame_ids:
        return set()
    rows = db.query(
        f"SELECT id FROM memory_frames WHERE id IN ({IN_LIST})"
        " AND json_extract(metadata, '$.provenance.item_kind') = ?",
        (in_list(sorted(frame_ids)), NOTE_ITEM_KIND),
    )
    notes = {row[0] for row in rows}
    return notes.union(*(neighbours.get(frame_id, ()) for frame_id in notes))
