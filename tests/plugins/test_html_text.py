"""The one HTML-to-text converter shared by mail bodies and Gemini answers: what each source relied on."""

from __future__ import annotations

import pytest
from mind_harvest.plugins.html_text import html_to_text


def test_quotes_keep_their_marker_through_nested_lists() -> None:
    html = (
        "<p>Earlier:</p><blockquote><ul><li>a<ul><li>b</li></ul></li><li>c</li></ul></blockquote><p>Reply</p>"
    )
    assert html_to_text(html) == "Earlier:\n\n> - a\n>   - b\n> - c\n\nReply"


def test_nested_ordered_lists_number_each_level() -> None:
    html = "<ol><li>one<ol><li>a</li><li>b</li></ol></li><li>two</li></ol><p>after</p>"
    assert html_to_text(html) == "1. one\n  1. a\n  2. b\n2. two\n\nafter"


def test_headings_are_marked_by_level() -> None:
    assert html_to_text("<h1>Title</h1><p>x</p><h3>Part</h3>y") == "# Title\n\nx\n\n### Part\n\ny"


def test_cells_are_separated_only_between_texts() -> None:
    html = "<table><tr><td>1</td><td></td><td> 2 </td></tr><tr><td><b>Logo</b> </td><td>\n</td></tr></table>"
    assert html_to_text(html) == "1 | 2\nLogo"


@pytest.mark.parametrize(
    ("html", "plain", "with_placeholders"),
    [
        ('<p>See <img alt=" the\n chart " src="c.png">here</p>', "See [Image: the chart]here", None),
        ('<p>Logo<img src="logo.png"></p>', "Logo", "Logo [Image]"),
        ('<img src="pixel.gif" width="1" height="1" alt="">', "", "[Image]"),
        ('<style><img alt="hidden"></style>x', "x", None),
    ],
)
def test_images_are_their_alt_text(html: str, plain: str, with_placeholders: str | None) -> None:
    assert html_to_text(html) == plain
    assert html_to_text(html, image_placeholders=True) == (with_placeholders or plain)


def test_no_break_spaces_and_runs_of_whitespace_become_one_space() -> None:
    assert html_to_text("<p>a&nbsp;&nbsp;b \t\n c</p>") == "a b c"
