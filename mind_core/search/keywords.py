"""The words of a query that count as keywords: what the keyword lane sends to FTS5 and what a
snippet marks. A module of its own so text helpers (snippets, the query models) get them without
importing the search engine and its vector and model stack."""

from __future__ import annotations

import re

FTS_STOP_WORDS = frozenset(
    "the a an is are was were be been being have has had do does did will would could should may might shall "
    "can to of in for on with at by from as into about this that these those it its my your our their what "
    "which who whom how when where why all each every both some any no not and or but".split()
)

NON_WORD = re.compile(r"[^\w]", re.UNICODE)


def keyword_tokens(query: str) -> list[str]:
    """Words of the query with punctuation stripped (Unicode letters kept), stop words and
    words under 3 characters dropped, in order, without repeats."""
    tokens: list[str] = []
    for raw in query.split():
        word = NON_WORD.sub("", raw).replace("_", "")
        if len(word) > 2 and word.lower() not in FTS_STOP_WORDS and word not in tokens:
            tokens.append(word)
    return tokens
