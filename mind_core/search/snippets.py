"""Readable snippets of recalled text: a window around the query's words, with them marked.

The marked words are the keyword lane's tokens (stop words and short words dropped), matched as
word prefixes so "migrate" also marks "migrated" and "migration", as the FTS5 porter stemmer
finds them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mind_core.search.keywords import keyword_tokens

ELLIPSIS = "\u2026"
DEFAULT_WIDTH = 160


def bold_ansi(text: str) -> str:
    return f"\033[1m{text}\033[0m"


def bold_markdown(text: str) -> str:
    return f"**{text}**"


_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "edly", "ed", "es", "s", "ly")


def _stem(word: str) -> str:
    """A crude English stem: enough to mark inflected forms, never shorter than 4 letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _pattern(query: str) -> re.Pattern[str] | None:
    stems = sorted({_stem(t.lower()) for t in keyword_tokens(query)}, key=len, reverse=True)
    if not stems:
        return None
    return re.compile(r"\b(?:" + "|".join(map(re.escape, stems)) + r")\w*", re.IGNORECASE)


# a quoted line of a mail reply: "> ...", ">> ...", or with the quoted writer's initials ("LK> ...")
_QUOTED_LINE = re.compile(r"^[ \t]*(?:[A-Z][A-Za-z]{0,3})?>")


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut at a word with an ellipsis when too long."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width)
    return text[: cut if cut > width // 2 else width - 1].rstrip(" ,;:-") + ELLIPSIS


def without_mail_quotes(text: str) -> str:
    """A mail's text without the lines it quotes, when words of its own remain (lines other than
    an attribution ending in ':', as "Lars wrote:"); a message that only quotes is kept whole."""
    own = [line for line in text.splitlines() if not _QUOTED_LINE.match(line)]
    if any(line.strip() and not line.rstrip().endswith(":") for line in own):
        return "\n".join(own)
    return text


def own_text(content: str, provenance: dict[str, Any]) -> str:
    """What a snippet is drawn from: a memory's text without the ``[title]`` it opens with (shown
    beside it) and, for mail, without the lines it quotes when it has words of its own."""
    title = provenance.get("title") or ""
    if title and content.startswith(f"[{title}]") and content[len(title) + 2 : len(title) + 3].isspace():
        content = content[len(title) + 3 :]
    return without_mail_quotes(content) if provenance.get("plugin") == "email" else content


def make_snippet(
    content: str, query: str, width: int = DEFAULT_WIDTH, mark: Callable[[str], str] | None = None
) -> str:
    """One line of at most ``width`` characters of ``content`` (plus ellipses), starting a little
    before the query word that opens the window holding the most different query words (the
    first such); each query word in it wrapped by ``mark``. A mail's subject line often names one
    word of the question; the sentence that answers it, several."""
    text = " ".join(content.split())
    pattern = _pattern(query)
    first = _densest_match(pattern, text, width) if pattern else None
    start = 0
    if first is not None and len(text) > width:
        start = max(0, min(first.start() - width // 4, len(text) - width))
        if start > 0:
            space = text.find(" ", start)
            start = space + 1 if 0 <= space < first.start() else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + width // 2 else end
    window = text[start:end]
    if pattern is not None and mark is not None:
        window = pattern.sub(lambda m: mark(m.group(0)), window)
    return (ELLIPSIS if start > 0 else "") + window + (ELLIPSIS if end < len(text) else "")


def _densest_match(pattern: re.Pattern[str], text: str, width: int) -> re.Match[str] | None:
    """The match from which a window of ``width`` holds the most different query words."""
    matches = list(pattern.finditer(text))
    best, best_count = None, 0
    for match in matches:
        reach = match.start() + width - width // 4
        count = len({_stem(m.group(0).lower()) for m in matches if match.start() <= m.start() < reach})
        if count > best_count:
            best, best_count = match, count
    return best
