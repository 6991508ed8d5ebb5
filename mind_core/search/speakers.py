"""The speakers a question names, and the preference for what they said.

"What did Melanie paint?" is answered by Melanie's turns, while the turns that say her name are
mostly the other speaker addressing her. So a question naming a speaker of the mind (the message
author a chat importer records as ``provenance.role``) prefers that speaker's frames
(``SearchConfig.speaker_weight``), and the lanes search it without the name
(``SearchConfig.drop_speaker_names``): a name says who said it, not what was said. In a chat
exported with roles (``user``/``assistant``), a name the other side addresses stands for a role
(``mind_core.search.addressed``, ``SearchConfig.addressed_names``).
"""

from __future__ import annotations

import calendar
import re

from mind_core.search.addressed import PARTNER_ROLES, AddressedNames, capitalized_words
from mind_core.search.lanes import topic_words
from mind_core.search.until_changed import UntilChanged
from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.schema import FRAME_ROLE_SQL

# The roles an AI chat export gives its two sides name no one a question asks about: "add a user
# to postgres" must not prefer the user's turns over the assistant's answer.
GENERIC_ROLES = frozenset({"user", "assistant", "system", "tool", "model", "human", "unknown"})
# months and weekdays, capitalized in a question but no one's name (``addressed_unnamed``)
CALENDAR_WORDS = frozenset(
    word.lower() for names in (calendar.month_name, calendar.month_abbr, calendar.day_name, calendar.day_abbr)
    for word in names if word
)


def without_names(text: str, names: set[str]) -> str:
    """``text`` without the given names (and their possessive "'s"), unless nothing else of
    substance would be left: "What did Melanie paint?" -> "What did paint?", "Melanie" -> "Melanie"."""
    if not names:
        return text
    pattern = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    left = re.sub(rf"\b(?:{pattern})(?:['\u2019]s)?\b", " ", text, flags=re.IGNORECASE)
    left = re.sub(r"\s+", " ", left).strip()
    return left if topic_words(left) else text


def as_written(text: str, names: set[str]) -> list[str]:
    """The names as ``text`` writes them (a speaker may be known in lower case), sorted."""
    written = set()
    for name in names:
        found = re.search(rf"\b{re.escape(name)}\b", text, flags=re.IGNORECASE)
        written.add(found.group(0) if found else name)
    return sorted(written)


class SpeakerScores(dict[int, float]):
    """Per frame, what the speaker preference multiplies its match by: 1 said by a speaker the
    question names, 0 said by another; and ``said_by``, who said each (the author as the frame
    records it), which explain names."""

    def __init__(self, scores: dict[int, float] | None = None, said_by: dict[int, str] | None = None) -> None:
        super().__init__(scores or {})
        self.said_by: dict[int, str] = said_by or {}


class Speakers:
    """The mind's speakers, read once per change of the mind (``UntilChanged``)."""

    def __init__(self, db: Database, kept: UntilChanged) -> None:
        self.db = db
        self.kept = kept
        self.addressed_names = AddressedNames(db, kept)
        # a name no turn talks about stands for the role a source leaves without a name
        # (``SearchConfig.addressed_unnamed``)
        self.unnamed_roles = False

    def named(self, query: str) -> set[str]:
        """The mind's speakers (lower case) the query names, generic roles left out: by the whole
        name as a word, or by its first name when the speaker's name has several words ("Caroline"
        names "Caroline Smith", a Telegram or Slack display name), capitalized as a name is
        ("what will happen" does not name "Will Smith")."""
        return {speaker for speaker, said in self._mentions(query) if said}

    def spoken(self, query: str, addressed: bool = False, scope: str = "source") -> set[str]:
        """The names as the query says them (whole or first names), for the lanes to leave out;
        ``addressed``: with the names that stand for a role (``addressed``)."""
        names = {name for _, said in self._mentions(query) for name in said}
        return names | set(self.addressed(query, scope)) if addressed else names

    def addressed(self, query: str, scope: str = "source") -> dict[str, dict[str, str]]:
        """The names the query says (capitalized) that stand for a role of a chat exported with
        roles, with that role per session or source (``AddressedNames.roles``; ``scope`` "auto"
        as ``resolved_scope`` reads it); read only in a mind with such roles, and each name once
        per change of the mind."""
        scope = self.resolved_scope(query, scope)
        found, unnamed = {}, {}
        for word in self._role_words(query):
            roles = self.kept.get(
                f"addressed:{scope}:{word.lower()}", lambda word=word: self.addressed_names.roles(word, scope)
            )
            if roles:
                found[word] = roles
            elif self.unnamed_roles and scope == "source" and word.lower() not in CALENDAR_WORDS:
                roles = self.kept.get(f"unnamed:{word.lower()}", lambda word=word: self._unnamed_role(word))
                if roles:
                    unnamed[word] = roles
        if len(unnamed) == 1:  # one role left without a name: two such words cannot both be it
            found.update(unnamed)
        return found

    def _unnamed_role(self, name: str) -> dict[str, str]:
        """Per source, the role ``name`` is read as when no turn talks about it (every turn saying
        it addresses it, or none says it) and the source names one role only, by another name:
        the other role, the one left without a name ("Paola" where the assistant calls the user
        Kevin and nobody says Paola), provided whoever addresses ``name`` there is that named side."""
        names = self.addressed_names
        addressing = names.addressing(name)
        if not names.only_addressed(name):
            return {}
        addressers: dict[str, set[str]] = {}
        for source, role in names.places_roles(addressing, "source").values():
            addressers.setdefault(source, set()).add(role)
        unnamed = {}
        for source, roles in self.kept.get("addressed-named", names.named_roles).items():
            if len(roles) == 1:
                (named,) = roles
                if addressers.get(source, {named}) == {named}:
                    unnamed[source] = PARTNER_ROLES[named]
        return unnamed

    def resolved_scope(self, query: str, scope: str) -> str:
        """``scope``, with "auto" read for this question: "session-exclusive" when a name it says
        stands for a role in a source that calls that role by other people's names in other
        sessions (``AddressedNames.split``: several people's role-only chats in one export),
        else "source" (one person's export: who is the user never changes)."""
        if scope != "auto":
            return scope
        for word in self._role_words(query):
            if self.kept.get(f"addressed-split:{word.lower()}", lambda word=word: self.addressed_names.split(word)):
                return "session-exclusive"
        return "source"

    def _role_words(self, query: str) -> list[str]:
        """The capitalized words of the query that may stand for a role: none in a mind without
        the roles of an AI chat export, nor a speaker's name or a generic role."""
        speakers = self.kept.get("speakers", self._all)
        if not speakers & PARTNER_ROLES.keys():
            return []
        return [
            word
            for word in capitalized_words(query)
            if word.lower() not in speakers and word.lower() not in GENERIC_ROLES
        ]

    def _mentions(self, query: str) -> list[tuple[str, set[str]]]:
        asked = query.lower()
        found = []
        for speaker in self.kept.get("speakers", self._all) - GENERIC_ROLES:
            said = {speaker} if speaker in asked and re.search(rf"\b{re.escape(speaker)}\b", asked) else set()
            first = speaker.split()[0] if " " in speaker.strip() else ""
            if not said and len(first) > 1 and first not in GENERIC_ROLES and first in asked:
                if re.search(rf"\b{re.escape(first.capitalize())}\b", query):
                    said = {first}
            found.append((speaker, said))
        return found

    def scores(
        self, query: str, frame_ids: list[int], addressed: bool = False, scope: str = "source"
    ) -> SpeakerScores:
        """For a question that names some but not all of the candidates' speakers: 1 for a frame
        said by a named speaker, 0 for one said by another, with who said each. A question naming
        no speaker, or every one, leaves all frames alone (empty), and so does a word that is a
        chat's generic role (``GENERIC_ROLES``: "user", "assistant", ...). A question that names
        none of the mind's speakers (most do not) reads no frame's role."""
        asked = self.named(query)
        if not asked:
            if not addressed:
                return SpeakerScores()
            scope = self.resolved_scope(query, scope)
            return self._addressed_scores(self.addressed(query, scope), frame_ids, scope)
        rows = self.db.query(
            f"SELECT id, {FRAME_ROLE_SQL} FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(frame_ids),)
        )
        said_by = {row[0]: row[1].strip() for row in rows if isinstance(row[1], str) and row[1].strip()}
        roles = {frame_id: speaker.lower() for frame_id, speaker in said_by.items()}
        speakers = set(roles.values())
        named = asked & speakers
        if not named or named == speakers:
            return SpeakerScores()
        return SpeakerScores({frame_id: 1.0 if role in named else 0.0 for frame_id, role in roles.items()}, said_by)

    def _addressed_scores(
        self, names: dict[str, dict[str, str]], frame_ids: list[int], scope: str
    ) -> SpeakerScores:
        """For names that stand for a role: in each session (or source) where the question names
        one side, 1 for a frame of that side and 0 for one of the other; frames elsewhere are
        left alone, or 0 with ``session-exclusive``."""
        named: dict[str, set[str]] = {}
        for roles in names.values():
            for where, role in roles.items():
                named.setdefault(where, set()).add(role)
        if not named:
            return SpeakerScores()
        scores, said_by = {}, {}
        exclusive = scope == "session-exclusive"  # frames of the conversations where no name holds: someone else's
        for frame_id, (where, role) in self.addressed_names.places_roles(frame_ids, scope, set(named)).items():
            sides = named.get(where)
            if sides is None and exclusive:
                scores[frame_id] = 0.0
            if sides is None or len(sides) > 1 or role not in PARTNER_ROLES:
                continue
            scores[frame_id] = 1.0 if role in sides else 0.0
            said_by[frame_id] = role
        return SpeakerScores(scores, said_by)

    def _all(self) -> set[str]:
        """Every speaker of the mind, lower case: the distinct roles, read by hopping through
        ``idx_frames_role`` (a loose index scan: its cost grows with the speakers, not the frames)."""
        rows = self.db.query(
            f"WITH RECURSIVE r(v) AS (SELECT MIN({FRAME_ROLE_SQL}) FROM memory_frames UNION ALL"
            f" SELECT (SELECT MIN({FRAME_ROLE_SQL}) FROM memory_frames WHERE {FRAME_ROLE_SQL} > r.v)"
            " FROM r WHERE r.v IS NOT NULL) SELECT v FROM r WHERE v IS NOT NULL"
        )
        return {row[0].lower() for row in rows if isinstance(row[0], str) and row[0].strip()}
