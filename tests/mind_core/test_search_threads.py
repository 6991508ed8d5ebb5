"""Mail threads and notes in the ranking: a reply that only acknowledges yields to the message it
answers; a note's sections take their session context at ``note_context_weight``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mind_core.errors import InvalidInputError
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.search import threads
from mind_core.search.config import SearchConfig
from mind_core.search.threads import own_text, own_words
from mind_core.testing.fakes import HashingEmbedder

SUBJECT = "[PATCH] Fix the tag search in threads"
ROOT = (
    "The tag search stopped at the first message of every thread, so a tag added to a later\n"
    "message was never found. This walks the whole thread and checks each message's tags;\n"
    "the test suite gains a case with a tag on the third message of a thread.\n"
)
THREAD = {
    "root": ("<root@example.org>", None, "Ann Author <ann@example.org>", SUBJECT, ROOT),
    "applied": (
        "<applied@example.org>",
        "<root@example.org>",
        "Max Maintainer <max@example.org>",
        f"Re: {SUBJECT}",
        "Ann Author wrote:\n> The tag search stopped at the first message of every thread.\n\nApplied.\n",
    ),
    "thanks": (
        "<thanks-for-applying@example.org>",
        "<applied@example.org>",
        "Ann Author <ann@example.org>",
        f"Re: {SUBJECT}",
        "Max Maintainer wrote:\n> Applied.\n\nThanks!\n",
    ),
    "review": (
        "<review@example.org>",
        "<root@example.org>",
        "Rita Reviewer <rita@example.org>",
        f"Re: {SUBJECT}",
        "I ran the tag search over a mailbox of forty thousand messages with and without the\n"
        "patch: with it every tagged reply is found, and the search is no slower than before.\n",
    ),
    "orphan": (
        "<thanks@example.org>",
        "<gone@example.org>",
        "Max Maintainer <max@example.org>",
        "Re: Calendar export drops the time zone",
        "Thanks!\n",
    ),
    "other": (
        "<other@example.org>",
        None,
        "Bea Builder <bea@example.org>",
        "Nightly build of the documentation",
        "The nightly documentation build failed on the link checker; the broken links are listed.\n",
    ),
}


def write_maildir(folder: Path) -> Path:
    cur = folder / "cur"
    cur.mkdir(parents=True)
    for day, (name, (message_id, parent, sender, subject, body)) in enumerate(THREAD.items(), start=1):
        headers = [f"Message-ID: {message_id}", f"From: {sender}", f"Subject: {subject}"]
        headers.append(f"Date: Mon, {day} Jun 2026 10:00:00 +0000")
        if parent:
            headers.append(f"In-Reply-To: {parent}")
        (cur / f"{day}.{name}:2,S").write_text("\n".join(headers) + "\n\n" + body, encoding="utf-8")
    return folder


@pytest.fixture
def mail_mind(tmp_path):
    mind = Mind.open(tmp_path / "mail.mind", embedder=HashingEmbedder())
    register_source(mind, "email", write_maildir(tmp_path / "box"), "mail")
    harvest(mind, "mail")
    frames = {
        name: mind.db.scalar(
            "SELECT id FROM memory_frames WHERE json_extract(metadata, '$.source.message.message_id') = ?",
            (message_id.strip("<>"),),
        )
        for name, (message_id, *_rest) in THREAD.items()
    }
    with mind:
        yield mind, frames


def ranked(mind: Mind, query: str, config: SearchConfig) -> list[int]:
    mind.search.config = config
    return [result.frame.id for result in mind.search.search(query, limit=10)]


def test_the_default_has_replies_yield_and_validates_the_note_weight():
    assert SearchConfig().replies_yield
    with pytest.raises(InvalidInputError):
        SearchConfig(note_context_weight=1.5)


def test_an_acknowledgement_outranks_the_patch_it_applies_unless_it_yields(mail_mind):
    mind, frames = mail_mind
    query = "fix the tag search in threads"
    without = ranked(mind, query, replace(SearchConfig(), replies_yield=False))
    assert without.index(frames["applied"]) < without.index(frames["root"])  # the failure #35 measured
    order = ranked(mind, query, SearchConfig())
    assert order[0] == frames["root"]
    assert order.index(frames["root"]) < order.index(frames["applied"])
    # "Thanks!" answers "Applied.", which yields too: it passes its match on up to the patch
    assert order.index(frames["root"]) < order.index(frames["thanks"])


def test_a_short_reply_saying_more_of_the_question_than_its_parent_keeps_its_rank(mail_mind):
    mind, frames = mail_mind
    query = "was the patch applied"  # "Applied." holds "applied"; the patch's own text does not
    without = ranked(mind, query, replace(SearchConfig(), replies_yield=False))
    assert without[0] == frames["applied"]
    assert ranked(mind, query, SearchConfig())[0] == frames["applied"]


def test_explain_names_the_message_a_reply_yielded_to(mail_mind):
    mind, frames = mail_mind
    mind.search.config = SearchConfig()
    results = {r.frame.id: r for r in mind.search.search("fix the tag search in threads", limit=10, explain=True)}
    assert results[frames["applied"]].explain["yielded_to"] == frames["root"]
    assert results[frames["thanks"]].explain["yielded_to"] == frames["root"]
    assert "yielded_to" not in results[frames["root"]].explain


def test_a_reply_with_something_to_say_keeps_its_rank(mail_mind):
    mind, frames = mail_mind
    query = "tag search forty thousand messages no slower"
    without = ranked(mind, query, replace(SearchConfig(), replies_yield=False))
    order = ranked(mind, query, SearchConfig())
    assert without[0] == order[0] == frames["review"]
    assert order.index(frames["root"]) < order.index(frames["applied"])


def test_an_acknowledgement_whose_message_is_not_in_the_mind_keeps_its_rank(mail_mind):
    mind, frames = mail_mind
    query = "calendar export time zone"
    assert ranked(mind, query, SearchConfig())[0] == frames["orphan"]


def test_own_text_drops_the_title_and_the_sender():
    assert own_text("[Re: [PATCH] x] Max <m@x>: Applied.", "Max <m@x>") == "Applied."
    assert own_text("[A note]\nThe body", None) == "The body"
    assert own_text("no title here", "Max") == "no title here"
    assert own_words("Acked-by: Ann Author <ann@example.org>\nApplied.") == ["acked", "by", "ann", "author", "applied"]


NOTE = """# Garden

## Tomatoes
Water the tomatoes every morning and tie them to the stakes.

## Budget
The quarterly budget review moved to Thursday afternoon.
"""


def test_a_notes_sections_take_context_at_the_note_weight(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "garden.md").write_text(NOTE, encoding="utf-8")
    with Mind.open(tmp_path / "notes.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, "markdown", vault, "vault")
        harvest(mind, "vault")
        budget = mind.db.scalar("SELECT id FROM memory_frames WHERE content LIKE '%quarterly budget%'")

        def context_of_budget(config: SearchConfig) -> float:
            mind.search.config = config
            results = mind.search.search("water the tomatoes stakes", limit=10, explain=True)
            entry = next(r.explain for r in results if r.frame.id == budget)
            return entry["keyword_context"] + entry["vector_context"]

        assert context_of_budget(replace(SearchConfig(), note_context_weight=0.4, context_weight=0.4)) > 0
        assert context_of_budget(replace(SearchConfig(), note_context_weight=0.0, context_weight=0.4)) == 0


def test_the_kept_mail_frames_are_bounded(mail_mind, monkeypatch):
    mind, frames = mail_mind
    monkeypatch.setattr(threads, "MAX_KEPT_FRAMES", 2)
    mind.search.config = SearchConfig()
    order = [r.frame.id for r in mind.search.search("fix the tag search in threads", limit=10)]
    assert order[0] == frames["root"]
    assert len(mind.search.kept.get("mail_frames", dict)) <= len(frames)


SERIES_SUBJECT = "Remove unnecessary semicolons"
SERIES = {
    "cover": (
        "<cover@example.org>",
        None,
        "Joe Patcher <joe@example.org>",
        f"[PATCH 0/2] {SERIES_SUBJECT}",
        "A trivial series: the drivers end their switch blocks with a semicolon the compiler\n"
        "ignores. Each patch removes them from one driver; nothing else changes.\n\n"
        "Joe Patcher (2):\n  net: remove them\n  scsi: remove them\n\n"
        + "".join(f" drivers/net/card{n}.c | 2 +-\n drivers/scsi/host{n}.c | 4 ++--\n" for n in range(40)),
    ),
    "patch": (
        "<patch-1@example.org>",
        "<cover@example.org>",
        "Joe Patcher <joe@example.org>",
        f"[PATCH 1/2] net: {SERIES_SUBJECT}",
        "Signed-off-by: Joe Patcher <joe@example.org>\n---\n drivers/net/card.c | 2 +-\n 1 file changed\n",
    ),
    "applied": (
        "<applied-1@example.org>",
        "<patch-1@example.org>",
        "Max Maintainer <max@example.org>",
        f"Re: [PATCH 1/2] net: {SERIES_SUBJECT}",
        "Applied the net part of the series, thanks.\n",
    ),
}


def test_a_reply_to_one_patch_of_a_series_yields_past_the_patch_to_the_cover_letter(tmp_path):
    """The reply holds one of the question's words ("series"), its patch none: it does not yield to
    the patch, but to the cover letter above it, which holds more of them (issue: the root of a
    patch series ranked below the replies to its patches)."""
    folder = tmp_path / "box" / "cur"
    folder.mkdir(parents=True)
    for day, (name, (message_id, parent, sender, subject, body)) in enumerate(SERIES.items(), start=1):
        headers = [f"Message-ID: {message_id}", f"From: {sender}", f"Subject: {subject}"]
        headers += [f"Date: Mon, {day} Jun 2026 10:00:00 +0000"] + ([f"In-Reply-To: {parent}"] if parent else [])
        (folder / f"{day}.{name}:2,S").write_text("\n".join(headers) + "\n\n" + body, encoding="utf-8")
    with Mind.open(tmp_path / "series.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, "email", tmp_path / "box", "mail")
        harvest(mind, "mail")
        frames = {
            name: mind.db.scalar(
                "SELECT id FROM memory_frames WHERE json_extract(metadata, '$.source.message.message_id') = ?",
                (message_id.strip("<>"),),
            )
            for name, (message_id, *_rest) in SERIES.items()
        }
        query = "unnecessary semicolons series"
        without = ranked(mind, query, replace(SearchConfig(), replies_yield=False))
        assert without.index(frames["applied"]) < without.index(frames["cover"])
        mind.search.config = SearchConfig()
        results = {r.frame.id: r for r in mind.search.search(query, limit=10, explain=True)}
        order = list(results)
        assert order[0] == frames["cover"]
        assert results[frames["applied"]].explain["yielded_to"] == frames["cover"]
