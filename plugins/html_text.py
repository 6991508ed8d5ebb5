"""HTML as readable plain text (mail bodies, Gemini answers), with only the stdlib ``html.parser``.

The text reads like Markdown: ``<blockquote>`` lines come out prefixed with ``> `` (so the same
quote stripping as for plain-text mail applies), headings with ``#``, list items as ``- `` or
``1. `` (nested lists indented), table cells separated by `` | ``, an image as its alt text.
Scripts, styles and the document head are dropped; block elements become line breaks.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

SKIPPED = frozenset({"script", "style", "head", "title", "template", "noscript", "svg", "object", "xml"})
PARAGRAPH = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "dl", "pre", "blockquote", "hr", "figure"}
)
LINE = frozenset(
    {
        "div", "section", "article", "header", "footer", "aside", "nav", "main", "form", "center",
        "tr", "li", "dt", "dd", "address", "figcaption", "caption", "tbody", "thead", "tfoot",
    }
)  # fmt: skip
CELLS = frozenset({"td", "th"})
LISTS = frozenset({"ul", "ol"})
HEADINGS = {f"h{level}": level for level in range(1, 7)}
VOID = frozenset(
    {"br", "hr", "img", "meta", "link", "input", "col", "area", "base", "wbr", "source", "param"}
)


class _TextCollector(HTMLParser):
    def __init__(self, image_placeholders: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.image_placeholders = image_placeholders
        self.lines: list[str] = []
        self.current: list[str] = []
        self.pending_breaks = 0
        self.quote_depth = 0
        self.pre_depth = 0
        self.skip_depth = 0
        self.lists: list[list[int | None]] = []  # per open list: [next number] or [None] for bullets
        self.cell_pending = False  # a new cell began on this line: its text gets a " | " before it

    def _flush_line(self) -> None:
        text = "".join(self.current).rstrip()
        self.current = []
        self.cell_pending = False
        if text or self.lines:
            self.lines.append(("> " * self.quote_depth + text).rstrip() if text else "")

    def _request_break(self, count: int) -> None:
        if self.current:
            self._flush_line()
        self.pending_breaks = max(self.pending_breaks, count)

    def _write(self, text: str) -> None:
        if not text:
            return
        if self.cell_pending and text.strip():
            self.cell_pending = False
            self.current = ["".join(self.current).rstrip(), " | "]
            text = text.lstrip()
        if not self.current:
            if self.lines and self.pending_breaks > 1 and self.lines[-1] != "":
                self.lines.append("")
            self.pending_breaks = 0
        self.current.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED:
            if tag not in VOID:
                self.skip_depth += 1
            return
        if self.skip_depth:
            return
        if tag == "br":
            if self.current:
                self._flush_line()
            else:
                self.lines.append("> " * self.quote_depth if self.quote_depth else "")
            return
        if tag == "blockquote":
            self._request_break(2)
            self.quote_depth += 1
            return
        if tag == "pre":
            self.pre_depth += 1
        if tag in LISTS:
            self.lists.append([1 if tag == "ol" else None])
        if tag in LISTS and len(self.lists) > 1:
            self._request_break(1)  # a nested list continues its item's list, without a blank line
        elif tag in PARAGRAPH:
            self._request_break(2)
        elif tag in LINE:
            self._request_break(1)
        elif tag in CELLS and self.current:
            self.cell_pending = True
        if tag in HEADINGS:
            self._write("#" * HEADINGS[tag] + " ")
        elif tag == "img":
            self._write_inline(self._image_label(attrs))
        elif tag == "li":
            marker = "- "
            if self.lists and self.lists[-1][0] is not None:
                number = self.lists[-1][0]
                marker = f"{number}. "
                self.lists[-1][0] = number + 1
            self._write("  " * max(len(self.lists) - 1, 0) + marker)

    def _write_inline(self, label: str) -> None:
        """A label within running text, kept apart from the word before it."""
        if label and self.current and not "".join(self.current).endswith(" "):
            label = " " + label
        self._write(label)

    def _image_label(self, attrs: list[tuple[str, str | None]]) -> str:
        alt = re.sub(r"\s+", " ", dict(attrs).get("alt") or "").strip()
        if alt:
            return f"[Image: {alt}]"
        return "[Image]" if self.image_placeholders else ""

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED:
            self.skip_depth = max(self.skip_depth - 1, 0)
            return
        if self.skip_depth:
            return
        if tag == "blockquote":
            self._request_break(2)
            self.quote_depth = max(self.quote_depth - 1, 0)
            return
        if tag == "pre":
            self.pre_depth = max(self.pre_depth - 1, 0)
        if tag in LISTS and self.lists:
            self.lists.pop()
        if tag in LISTS and self.lists:
            self._request_break(1)
        elif tag in PARAGRAPH:
            self._request_break(2)
        elif tag in LINE:
            self._request_break(1)

    def handle_data(self, data: str) -> None:
        if self.skip_depth:
            return
        if self.pre_depth:
            first, *rest = data.split("\n")
            self._write(first)
            for line in rest:
                self._flush_line()
                self._write(line)
            return
        text = re.sub(r"\s+", " ", data)
        if not self.current or "".join(self.current).endswith(" "):
            text = text.lstrip()
        self._write(text)

    def text(self) -> str:
        if self.current:
            self._flush_line()
        joined = "\n".join(line.rstrip() for line in self.lines)
        return re.sub(r"\n{3,}", "\n\n", joined).strip()


def html_to_text(html: str, *, image_placeholders: bool = False) -> str:
    """Readable text of an HTML document or fragment (never raises on malformed markup).

    An image without alt text is left out, since in mail it is mostly a logo or a tracking pixel;
    ``image_placeholders`` writes ``[Image]`` for it instead, for sources where an image is content.
    """
    collector = _TextCollector(image_placeholders)
    try:
        collector.feed(html)
        collector.close()
    except Exception:  # html.parser is lenient; if it still gives up, keep the text read so far
        collector.skip_depth = 0
    return collector.text()
