"""File names that are not valid UTF-8 (issue #14, Deliver 2).

Before, one note named ``b"caf\\xe9.md"`` aborted the whole harvest with ``UnicodeEncodeError:
surrogates not allowed`` when its surrogate-escaped name reached SQLite, and the other notes of its
batch were lost. Now such a name is stored as text with ``\\xNN`` escapes, shown with U+FFFD, and
the note is imported like any other; valid names (and so existing keys) are unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mind_harvest.plugins.email import EmailSource

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.items import HarvestError, stable_key
from mind_core.harvest.paths import display_text, stored_text
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.hostile import _has_marker


def write_named(folder: Path, name: bytes, data: bytes) -> None:
    """A file whose name is raw bytes; skips where the file system insists on valid names."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with open(os.path.join(os.fsencode(folder), name), "wb") as handle:
            handle.write(data)
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses file names that are not valid UTF-8")


def provenance(mind: Mind, marker: str) -> dict:
    frame_id = mind.db.scalar("SELECT id FROM memory_frames WHERE content LIKE ?", (f"%{marker}%",))
    return mind.frames.get_by_id(frame_id).metadata["provenance"]


def test_a_note_with_an_undecodable_name_is_imported_with_its_batch(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "sub").mkdir(parents=True)
    (vault / "good.md").write_text("# Good\n\nzqgood text\n")
    write_named(vault, b"caf\xe9.md", b"# Cafe\n\nzqcafe text\n")
    write_named(vault / "sub", b"\xff\xfe.md", b"zqnested text\n")
    (vault / "zzz.md").write_text("# Z\n\nzqzzz text\n")
    with Mind.open(tmp_path / "w.mind", embedder=MockEmbedder(1024)) as mind:
        register_source(mind, "markdown", vault, "vault")
        first = harvest(mind, "vault").imported
        assert first is not None and first.errors == [] and first.frames_new == 4
        assert all(_has_marker(mind, m) for m in ("zqgood", "zqcafe", "zqnested", "zqzzz"))
        cafe = provenance(mind, "zqcafe")
        assert (cafe["path"], cafe["container"], cafe["title"]) == ("caf\\xe9.md", "caf\\xe9.md", "caf\ufffd")
        assert provenance(mind, "zqnested")["path"] == "sub/\\xff\\xfe.md"
        assert provenance(mind, "zqgood")["item_key"] == stable_key("markdown", "good.md")
        again = harvest(mind, "vault", force=True).imported
    assert again is not None and again.frames_new == again.frames_updated == 0
    assert again.frames_unchanged == 4 and again.errors == []


def test_a_maildir_message_with_an_undecodable_name_is_imported(tmp_path: Path) -> None:
    maildir = tmp_path / "Mail"
    (maildir / "new").mkdir(parents=True)
    (maildir / "tmp").mkdir()
    message = (
        b"From: Ann <ann@example.org>\nTo: bob@example.org\nSubject: hello\n"
        b"Message-ID: <m1@example.org>\nDate: Mon, 3 Mar 2025 10:00:00 +0000\n\nzqmailbody text\n"
    )
    write_named(maildir / "cur", b"1700000000.caf\xe9:2,S", message)
    with Mind.open(tmp_path / "w.mind", embedder=MockEmbedder(1024)) as mind:
        register_source(mind, "email", maildir, "mail")
        summary = harvest(mind, "mail").imported
        assert summary is not None and summary.errors == [] and _has_marker(mind, "zqmailbody")
    [thread] = EmailSource().scan(maildir)
    assert thread.metadata["paths"] == ["cur/1700000000.caf\\xe9:2,S"]
    assert thread.messages[0].metadata["maildir_flags"] == "S"


def test_an_error_about_an_undecodable_file_names_it_readably() -> None:
    name = os.fsdecode(b"/notes/caf\xe9.md")
    error = HarvestError(name, f"cannot read: {name}", record="line 3")
    assert str(error) == "/notes/caf\\xe9.md [line 3]: cannot read: /notes/caf\\xe9.md"
    assert display_text(name) == "/notes/caf\ufffd.md"
    assert stored_text("/notes/café.md") == "/notes/café.md"  # a valid name never changes


def test_a_source_folder_with_an_undecodable_name_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    from mind_core.errors import InvalidInputError

    write_named(tmp_path / "v", b"n\xe9.md", b"text")
    odd = os.path.join(os.fsencode(tmp_path), b"v\xe9")
    os.rename(os.path.join(os.fsencode(tmp_path), b"v"), odd)
    with Mind.open(tmp_path / "w.mind", embedder=MockEmbedder(1024)) as mind:
        with pytest.raises(InvalidInputError, match=r"not valid UTF-8: .*/v\\xe9; rename it"):
            register_source(mind, "markdown", os.fsdecode(odd), "v")
