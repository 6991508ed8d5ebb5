"""A question about several people, asked of each of them (``SearchConfig.question_parts``).

"What do Jon and Gina both have in common?" needs a turn of Jon's and a turn of Gina's, and the
second shares no word with the question once the names are out of the lanes. Asked whole, it
names both speakers, so the speaker preference prefers neither, and the turns of whichever person
matches the other words best fill the list. So a question that joins two or more of the people it
names ("Jon and Gina", "Jon, Gina and Maria") is also asked once per person, the others' names,
"both" and the joining words left out ("What do Jon have in common?"): each part prefers that
person's turns. The whole question's results and each part's are merged by their score as a share
of their own list's best (a part that matches weakly overall still gets its best turns in), the
best share of a frame counting.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace

from mind_core.search.lanes import topic_words
from mind_core.search.results import SearchResult
from mind_core.search.speakers import without_names

_JOINING = re.compile(r"\b(?:both|and)\b", re.IGNORECASE)


def _alternatives(names: Collection[str]) -> str:
    return "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))


def may_join_people(question: str) -> bool:
    """Whether ``question`` may join people at all ("and" or a comma): the names are read only then."""
    return "," in question or re.search(r"\band\b", question, flags=re.IGNORECASE) is not None


def people_parts(question: str, names: Collection[str]) -> list[str]:
    """One question per person when ``question`` joins two or more of ``names`` (the people it
    names, as it says them) by "and" or a comma; [] when it does not ("What did Jon tell Gina?"
    asks about one exchange, not about each of them)."""
    if len({name.lower() for name in names}) < 2:
        return []
    pattern = _alternatives(names)
    joined = rf"\b(?:{pattern})(?:['\u2019]s)?(?:\s*,\s*|\s+and\s+)(?:{pattern})\b"
    if not re.search(joined, question, flags=re.IGNORECASE):
        return []
    parts = []
    for name in sorted({name.lower(): name for name in names}.values(), key=str.lower):
        others = {other for other in names if other.lower() != name.lower()}
        listed = re.sub(rf"\b(?:{_alternatives(others)})\s*,\s*", " ", question, flags=re.IGNORECASE)  # "Jon, "
        part = without_names(listed, others)
        if not topic_words(re.sub(rf"\b(?:{pattern})\b", " ", part, flags=re.IGNORECASE)):
            return []  # nothing to ask of each but who
        part = re.sub(rf"\b({re.escape(name)}(?:['\u2019]s)?)\s*,", r"\1", _JOINING.sub(" ", part), flags=re.IGNORECASE)
        part = re.sub(r"\s+", " ", part).strip()
        part = re.sub(r"\s+([?.!,])", r"\1", part)
        parts.append(part)
    return list(dict.fromkeys(parts))


def merge_parts(asked: Sequence[tuple[str, list[SearchResult]]], limit: int) -> list[SearchResult]:
    """The results of the whole question and of its parts (``(question asked, results)``, the
    whole first) in one list of at most ``limit``: each list's scores scaled so that its best
    equals the best of all lists, a frame found by several keeping its highest, in that order. With
    ``explain``, a result says which question found it (``question_part``) and by how much its
    list's scores were scaled (``part_scale``), so its score is still the product of its parts."""
    tops = [max((result.score for result in results), default=0.0) for _, results in asked]
    best = max(tops, default=0.0)
    merged: dict[int, SearchResult] = {}
    for (text, results), top in zip(asked, tops, strict=True):
        scale = best / top if top > 0 else 0.0
        for result in results:
            score = result.score * scale
            kept = merged.get(result.frame.id)
            if kept is not None and kept.score >= score:
                continue
            explain = (
                None if result.explain is None
                else {**result.explain, "score": score, "question_part": text, "part_scale": scale}
            )
            merged[result.frame.id] = replace(result, score=score, explain=explain)
    return sorted(merged.values(), key=lambda result: (-result.score, result.frame.id))[:limit]

