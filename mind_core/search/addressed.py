"""Whose name a question says, in a chat whose export records roles, not names.

An AI chat export (ChatGPT, Claude, Gemini) gives its two sides as ``user`` and ``assistant``. A
question names a person ("What did Caroline paint?"), and with roles only, her name is in the
turns where the other side addresses her ("Wow, that's cool, Caroline!"), not in her own. So a
name one role of a source addresses again and again (as a vocative: a greeting, or set off by
commas and ending a clause) while the other role (almost) never does is read as the other role's
name there. "There" (``SearchConfig.addressed_scope``) is the source ("source": a ChatGPT export
has one user), each conversation (session) where the name is addressed, the others getting no
role ("session"), the same with the frames of those others counted as said by someone else
("session-exclusive": one export holding several people's conversations), or, by default, one
of the two read from the mind ("auto": per session, exclusive, when the source calls the same
role by other people's names in other conversations, ``AddressedNames.split``). The speaker
preference then prefers that role's frames there, and the lanes search the question without the
name, as they do for a speaker named in the export (``mind_core.search.speakers``). A person
only talked about ("my sister Kate said ...") is rarely addressed, so is given to no role; a
name no turn talks about may stand for the role a source leaves without a name
(``AddressedNames.named_roles``, ``SearchConfig.addressed_unnamed``).
"""

from __future__ import annotations

import re

from mind_core.search.until_changed import UntilChanged
from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.schema import FRAME_ROLE_SQL

# the two sides of an AI chat export as the importers record them (Claude's "human" and Gemini's
# "model" included), each the other's partner
PARTNER_ROLES = {"user": "assistant", "assistant": "user"}
MIN_ADDRESSED = 3  # a role must address the name this often (per source; per session: in all) ...
DOMINANCE = 4  # ... and this many times as often as the other role does (in the source or session)
SAMPLED_FRAMES = 400  # the most recent frames holding the name that are read (bounds the cost)
# how many of a side's most recent frames are read for the names it addresses (outside a name's
# sessions for ``split``; the whole mind for ``named_roles``), and how many of those names (the
# most addressed first) ``split`` checks
SAMPLED_OTHERS = 200
SAMPLED_CHARS = 160  # of a long turn, its first and last this many characters (where a name is said)
CHECKED_OTHERS = 3
_SOURCE_SQL = "(CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.provenance.source') END)"
_PREFIX = re.compile(r"^\[[^\]\n]*\] [^:\n]{1,80}: ")  # "[title] Speaker: " of a chat frame
_GREETING = (
    r"(?:hi|hey|hello|heya|hiya|thanks|thank you|congrats|congratulations|wow|whoa|woah|oh|yes|yeah|no"
    r"|sure|ok|okay|aw|aww|dear|morning|good morning|good night|night|bye|sorry|welcome)"
)

_FILLER = re.compile(rf"{_GREETING}$", re.IGNORECASE)  # "Hi", "Thanks": a greeting is no one's name


# what may come before a name said to someone (after a clause's end, or a greeting) and after it
# (a clause's end); one compiled pattern each for every name (a pattern per name costs more to
# compile than a one-shot search reads)
_BEFORE_VOCATIVE = re.compile(rf"(?:[,!.?;:]\s+|\b{_GREETING}\W{{0,2}}\s*)$", re.IGNORECASE)
_CLAUSE_END = re.compile(r"\s*(?:[!?,.;:]|$)")
_SENTENCE_END = re.compile(r"\s*(?:[!?.;]|$)")
_COMMA_BEFORE = re.compile(r",\s*$")
_LEADING = re.compile(r"\W*")
_WORD = re.compile(r"\w")


def said_to(text: str, name: str) -> bool:
    """Whether ``text`` says ``name`` to someone: at the start, after a greeting or after a clause's
    end, and ending a clause ("Hey Caroline!", "Caroline, look", "that's cool, Caroline!")."""
    for found in re.finditer(re.escape(name), text, re.IGNORECASE):
        start, end = found.span()
        before = text[max(0, start - 40) : start]
        word_ends = end == len(text) or not _WORD.match(text, end)
        if word_ends and _CLAUSE_END.match(text, end):
            if _LEADING.fullmatch(text, 0, start) or _BEFORE_VOCATIVE.search(before):
                return True
        if _SENTENCE_END.match(text, end) and _COMMA_BEFORE.search(before):
            return True
    return False


# a name said to someone, found cheaply in a sample of a role's turns: a capitalized word ending a
# clause, said after a greeting ("Hey Jon!", "Thanks, Jon.") or set off by a comma ("that's cool,
# Jon!"); a clause's first word ("Absolutely, ...") is left out: the fillers are said so
_CAPITALIZED_ENDING = re.compile(r"(?<![^\W\d_])([^\W\d_a-z][^\W\d_]+)(?=\s*([!?,.;:]|$))", re.MULTILINE)
_AFTER_GREETING = re.compile(rf"\b{_GREETING}[,!]?\s+$", re.IGNORECASE)
_AFTER_COMMA = re.compile(r",\s*$")


def addressed_words(text: str) -> list[str]:
    """The capitalized words ``text`` says to someone: after a greeting ("Hey Jon!", "Thanks,
    Jon."), or set off by a comma and ending a clause ("that's cool, Jon!")."""
    found = []
    for match in _CAPITALIZED_ENDING.finditer(text):
        before = text[max(0, match.start() - 24) : match.start()]
        if _AFTER_GREETING.search(before) or (match.group(2) not in ",:" and _AFTER_COMMA.search(before)):
            found.append(match.group(1))
    return found


def capitalized_words(query: str) -> list[str]:
    """The words a question writes capitalized after its first word: the names it may say."""
    words = re.findall(r"[^\W\d_]+", query)[1:]
    return list(dict.fromkeys(w for w in words if len(w) > 1 and w[0].isupper() and w[1:].islower()))


def _names_addressed(rows: list[tuple[str]], besides: str = "") -> list[str]:
    """The capitalized words the frames' ``rows`` (content) say as a vocative ``MIN_ADDRESSED``
    times or more, ``besides`` left out, the most addressed ``CHECKED_OTHERS`` first (``_names_said_to``)."""
    said = _names_said_to([content for (content,) in rows], besides)
    names = [word for word, times in sorted(said.items(), key=lambda pair: -pair[1]) if times >= MIN_ADDRESSED]
    return names[:CHECKED_OTHERS]


def _names_said_to(contents: list[str], besides: str = "") -> dict[str, int]:
    """How often the frames' ``contents`` say each capitalized word as a vocative, ``besides``
    left out; a word the sample also writes in lower case as often ("Thanks", "Wow",
    "Absolutely") is no name. Of a long turn, its first and last ``SAMPLED_CHARS`` characters."""
    said: dict[str, int] = {}
    texts = []
    for content in contents:
        text = _PREFIX.sub("", content, count=1)
        text = text if len(text) <= 2 * SAMPLED_CHARS else f"{text[:SAMPLED_CHARS]}\n{text[-SAMPLED_CHARS:]}"
        texts.append(text)
        for word in addressed_words(text):
            if word[1:].islower() and word.lower() != besides.lower() and not _FILLER.match(word):
                said[word] = said.get(word, 0) + 1
    sample = "\n".join(texts)
    return {
        word: times
        for word, times in said.items()
        if times < MIN_ADDRESSED or len(re.findall(rf"\b{re.escape(word.lower())}\b", sample)) < times
    }


class AddressedNames:
    """Reads which role a name belongs to, per session or per source, from the frames that say it;
    with ``kept``, the frames addressing each name are read once per change of the mind."""

    def __init__(self, db: Database, kept: UntilChanged | None = None) -> None:
        self.db = db
        self.kept = kept

    def addressing(self, name: str) -> list[int]:
        """Of the most recent ``SAMPLED_FRAMES`` frames holding ``name``, those saying it to someone."""
        return self._reading(name)[0]

    def only_addressed(self, name: str) -> bool:
        """Whether every turn saying ``name`` (of the sample) says it to someone, or none says it
        (a conversation's title may: it is read past): a name nobody talks about."""
        addressing, saying = self._reading(name)
        return saying == len(addressing)

    def _reading(self, name: str) -> tuple[list[int], int]:
        """The frames addressing ``name`` and how many turns say it, of the most recent
        ``SAMPLED_FRAMES`` frames holding it; once per change of the mind with ``kept``."""
        if self.kept is not None:
            return self.kept.get(f"addressing:{name.lower()}", lambda: self._read(name))
        return self._read(name)

    def _read(self, name: str) -> tuple[list[int], int]:
        rows = self.db.query(
            "SELECT mf.id, mf.content FROM memory_frames_fts JOIN memory_frames mf ON mf.id = memory_frames_fts.rowid"
            " WHERE memory_frames_fts MATCH ? ORDER BY memory_frames_fts.rowid DESC LIMIT ?",
            (f'"{name.lower()}"', SAMPLED_FRAMES),
        )
        saying = re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)
        bodies = [(frame_id, _PREFIX.sub("", content, count=1)) for frame_id, content in rows]
        addressing = [frame_id for frame_id, body in bodies if said_to(body, name)]
        return addressing, sum(1 for _, body in bodies if saying.search(body))

    def roles(self, name: str, scope: str = "source") -> dict[str, str]:
        """Per session (``gop_id``) or per source, the role ``name`` belongs to (see the module),
        from the most recent ``SAMPLED_FRAMES`` frames holding the name; empty when no role
        addresses it enough. Per source: addressed ``MIN_ADDRESSED`` times there, ``DOMINANCE``
        times as often as by the other role. Per session: dominant in the session (once is
        enough there), and ``MIN_ADDRESSED`` times over all the sessions giving it that role."""
        addressing = self.addressing(name)
        counts: dict[str, dict[str, int]] = {}
        for where, role in self.places_roles(addressing, scope).values():
            if role in PARTNER_ROLES:
                by_role = counts.setdefault(where, {})
                by_role[role] = by_role.get(role, 0) + 1
        least = MIN_ADDRESSED if scope == "source" else 1  # per session: once there is enough
        found, times_per_role = {}, dict.fromkeys(PARTNER_ROLES, 0)
        for where, by_role in counts.items():
            addresser, times = max(by_role.items(), key=lambda pair: pair[1])
            partner = PARTNER_ROLES[addresser]
            if times >= least and times >= DOMINANCE * by_role.get(partner, 0):
                found[where] = partner
                times_per_role[partner] += times
        return {where: role for where, role in found.items() if times_per_role[role] >= MIN_ADDRESSED}

    def split(self, name: str) -> bool:
        """Whether the source where ``name`` stands for a role calls that role by another person's
        name in other sessions: a name the same side addresses (``MIN_ADDRESSED`` times, as
        dominant per session as ``name`` is) in sessions of the same source where ``name`` never
        is. Several people's role-only chats in one source (where the role's name holds per
        session) look so; one person's export (who is the user never changes) does not. A nickname
        said in some of the sessions of the full name ("Mel", "Melanie") shares sessions with it,
        and so is no other person."""
        sessions = self.roles(name, "session")
        if not sessions:
            return False
        rows = self.db.query(
            f"SELECT DISTINCT {_SOURCE_SQL} FROM memory_frames WHERE id IN ({IN_LIST}) AND gop_id IN ({IN_LIST})",
            (in_list(self.addressing(name)), in_list(sorted(sessions))),
        )
        sources = {source for (source,) in rows if isinstance(source, str)}
        for role in set(sessions.values()):
            own = {session for session, said in sessions.items() if said == role}
            # the other names come from the same sources' turns, so stand for the role there
            for other in self._others_addressed(name, PARTNER_ROLES[role], own, sources):
                theirs = {session for session, said in self.roles(other, "session").items() if said == role}
                if theirs and not theirs & own:
                    return True
        return False

    def _others_addressed(self, name: str, addresser: str, own: set[str], sources: set[str]) -> list[str]:
        """The names ``addresser`` says most as a vocative (``_names_addressed``) in its
        ``SAMPLED_OTHERS`` most recent frames of ``sources`` outside the sessions ``own``."""
        rows = self.db.query(
            f"SELECT content FROM memory_frames WHERE {FRAME_ROLE_SQL} = ? AND gop_id NOT IN ({IN_LIST})"
            f" AND {_SOURCE_SQL} IN ({IN_LIST}) ORDER BY id DESC LIMIT ?",
            (addresser, in_list(sorted(own)), in_list(sorted(sources)), SAMPLED_OTHERS),
        )
        return _names_addressed(rows, name)

    def named_roles(self) -> dict[str, set[str]]:
        """Per source, the roles named there: a capitalized word one side says as a vocative in its
        ``SAMPLED_OTHERS`` most recent frames of the mind ``MIN_ADDRESSED`` times or more, and
        ``DOMINANCE`` times as often as the other side's sample does, names the other side."""
        said: dict[str, dict[str, dict[str, int]]] = {}  # addresser -> source -> word -> times
        for addresser in PARTNER_ROLES:
            by_source: dict[str, list[str]] = {}
            for source, content in self.db.query(
                f"SELECT {_SOURCE_SQL}, content FROM memory_frames WHERE {FRAME_ROLE_SQL} = ?"
                " ORDER BY id DESC LIMIT ?",
                (addresser, SAMPLED_OTHERS),
            ):
                if isinstance(source, str):
                    by_source.setdefault(source, []).append(content)
            said[addresser] = {source: _names_said_to(contents) for source, contents in by_source.items()}
        named: dict[str, set[str]] = {}
        for addresser, by_source in said.items():
            for source, words in by_source.items():
                others = said[PARTNER_ROLES[addresser]].get(source, {})
                if any(t >= MIN_ADDRESSED and t >= DOMINANCE * others.get(w, 0) for w, t in words.items()):
                    named.setdefault(source, set()).add(PARTNER_ROLES[addresser])
        return named

    def places_roles(
        self, frame_ids: list[int], scope: str = "source", within: set[str] | None = None
    ) -> dict[int, tuple[str, str]]:
        """(session or source, role lower case) of each frame that records its place; ``within``
        (sessions): the role's JSON is read for the frames in those sessions only, the others'
        role is ""."""
        if not frame_ids:
            return {}
        place = _SOURCE_SQL if scope == "source" else "gop_id"
        role, params = FRAME_ROLE_SQL, [in_list(frame_ids)]
        if within is not None and scope != "source":
            role = f"(CASE WHEN gop_id IN ({IN_LIST}) THEN {FRAME_ROLE_SQL} END)"
            params.insert(0, in_list(sorted(within)))
        rows = self.db.query(f"SELECT id, {place}, {role} FROM memory_frames WHERE id IN ({IN_LIST})", tuple(params))
        return {
            frame_id: (where, said.lower() if isinstance(said, str) else "")
            for frame_id, where, said in rows
            if isinstance(where, str)
        }
