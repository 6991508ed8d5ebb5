"""Whose name a question says, in a chat whose export records roles, not names.

An AI chat export (ChatGPT, Claude, Gemini) gives its two sides as ``user`` and ``assistant``. A
question names a person ("What did Caroline paint?"), and with roles only, her name is in the
turns where the other side addresses her ("Wow, that's cool, Caroline!"), not in her own. So a
name one role of a source addresses again and again (as a vocative: a greeting, or set off by
commas and ending a clause) while the other role (almost) never does is read as the other role's
name there. "There" is the source by default (a ChatGPT export has one user); with
``SearchConfig.addressed_scope`` "session" it is each conversation (session) where the name is
addressed, the others getting no role, and with "session-exclusive" the frames of those others
count as said by someone else (one mind holding several people's conversations). The speaker
preference then prefers that role's frames there, and the lanes search the question without the
name, as they do for a speaker named in the export (``mind_core.search.speakers``). A person
only talked about ("my sister Kate said ...") is rarely addressed, so is given to no role.
"""

from __future__ import annotations

import re

from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.schema import FRAME_ROLE_SQL

# the two sides of an AI chat export as the importers record them (Claude's "human" and Gemini's
# "model" included), each the other's partner
PARTNER_ROLES = {"user": "assistant", "assistant": "user"}
MIN_ADDRESSED = 3  # a role must address the name this often (per source; per session: in all) ...
DOMINANCE = 4  # ... and this many times as often as the other role does (in the source or session)
SAMPLED_FRAMES = 400  # the most recent frames holding the name that are read (bounds the cost)
_SOURCE_SQL = "(CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.provenance.source') END)"
_PREFIX = re.compile(r"^\[[^\]\n]*\] [^:\n]{1,80}: ")  # "[title] Speaker: " of a chat frame
_GREETING = (
    r"(?:hi|hey|hello|heya|hiya|thanks|thank you|congrats|congratulations|wow|whoa|woah|oh|yes|yeah|no"
    r"|sure|ok|okay|aw|aww|dear|morning|good morning|good night|night|bye|sorry|welcome)"
)


def vocative(name: str) -> re.Pattern[str]:
    """A pattern for ``name`` said to someone: at the start, after a greeting or after a clause's
    end, and ending a clause ("Hey Caroline!", "Caroline, look", "that's cool, Caroline!")."""
    said = re.escape(name)
    return re.compile(
        rf"(?:^\W*|[,!.?;:]\s+|\b{_GREETING}\W{{0,2}}\s*){said}\b\s*(?:[!?,.;:]|$)|,\s*{said}\s*(?:[!?.;]|$)",
        re.IGNORECASE,
    )


def capitalized_words(query: str) -> list[str]:
    """The words a question writes capitalized after its first word: the names it may say."""
    words = re.findall(r"[^\W\d_]+", query)[1:]
    return list(dict.fromkeys(w for w in words if len(w) > 1 and w[0].isupper() and w[1:].islower()))


class AddressedNames:
    """Reads which role a name belongs to, per session or per source, from the frames that say it."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def roles(self, name: str, scope: str = "source") -> dict[str, str]:
        """Per session (``gop_id``) or per source, the role ``name`` belongs to (see the module),
        from the most recent ``SAMPLED_FRAMES`` frames holding the name; empty when no role
        addresses it enough. Per source: addressed ``MIN_ADDRESSED`` times there, ``DOMINANCE``
        times as often as by the other role. Per session: dominant in the session (once is
        enough there), and ``MIN_ADDRESSED`` times over all the sessions giving it that role."""
        rows = self.db.query(
            "SELECT mf.id, mf.content FROM memory_frames_fts JOIN memory_frames mf ON mf.id = memory_frames_fts.rowid"
            " WHERE memory_frames_fts MATCH ? ORDER BY memory_frames_fts.rowid DESC LIMIT ?",
            (f'"{name.lower()}"', SAMPLED_FRAMES),
        )
        said_to = vocative(name)
        addressing = [frame_id for frame_id, content in rows if said_to.search(_PREFIX.sub("", content, count=1))]
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
