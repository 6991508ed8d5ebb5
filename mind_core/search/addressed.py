"""Whose name a question says, in a chat whose export records roles, not names.

An AI chat export (ChatGPT, Claude, Gemini) gives its two sides as ``user`` and ``assistant``. A
question names a person ("What did Caroline paint?"), and with roles only, her name is in the
turns where the other side addresses her ("Wow, that's cool, Caroline!"), not in her own. So a
name one role of a source addresses again and again (as a vocative: a greeting, or set off by
commas and ending a clause) while the other role (almost) never does is read as the other role's
name in that source. The speaker preference then prefers that role's frames there, and the lanes
search the question without the name, as they do for a speaker named in the export
(``mind_core.search.speakers``). A person only talked about ("my sister Kate said ...") is
rarely addressed, so is given to no role.
"""

from __future__ import annotations

import re

from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.schema import FRAME_ROLE_SQL

# the two sides of an AI chat export as the importers record them (Claude's "human" and Gemini's
# "model" included), each the other's partner
PARTNER_ROLES = {"user": "assistant", "assistant": "user"}
MIN_ADDRESSED = 3  # a role must address the name this often in a source ...
DOMINANCE = 4  # ... and this many times as often as the other role does
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
    """Reads which role of a source a name belongs to from the frames that say it."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def roles(self, name: str) -> dict[str, str]:
        """Per source, the role ``name`` belongs to (see the module): from the most recent
        ``SAMPLED_FRAMES`` frames holding the name; empty when no role addresses it enough."""
        rows = self.db.query(
            f"SELECT mf.content, {FRAME_ROLE_SQL}, {_SOURCE_SQL} FROM memory_frames_fts"
            " JOIN memory_frames mf ON mf.id = memory_frames_fts.rowid"
            " WHERE memory_frames_fts MATCH ? ORDER BY memory_frames_fts.rowid DESC LIMIT ?",
            (f'"{name.lower()}"', SAMPLED_FRAMES),
        )
        said_to = vocative(name)
        counts: dict[str, dict[str, int]] = {}
        for content, role, source in rows:
            role = role.lower() if isinstance(role, str) else ""
            if role not in PARTNER_ROLES or not isinstance(source, str):
                continue
            if said_to.search(_PREFIX.sub("", content, count=1)):
                by_role = counts.setdefault(source, {})
                by_role[role] = by_role.get(role, 0) + 1
        found = {}
        for source, by_role in counts.items():
            addresser, times = max(by_role.items(), key=lambda pair: pair[1])
            partner = PARTNER_ROLES[addresser]
            if times >= MIN_ADDRESSED and times >= DOMINANCE * by_role.get(partner, 0):
                found[source] = partner
        return found

    def source_roles(self, frame_ids: list[int]) -> dict[int, tuple[str, str]]:
        """(source, role lower case) of each frame that records both."""
        rows = self.db.query(
            f"SELECT id, {_SOURCE_SQL}, {FRAME_ROLE_SQL} FROM memory_frames WHERE id IN ({IN_LIST})",
            (in_list(frame_ids),),
        )
        return {
            frame_id: (source, role.lower())
            for frame_id, source, role in rows
            if isinstance(source, str) and isinstance(role, str)
        }
