"""PDF documents written by the test: text per page, the Info metadata, damaged files."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from mind_harvest.plugins.pdf import PdfSource

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.testing.message_exports import write_pdf

SOURCE = PdfSource()


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def test_one_frame_per_page_with_the_documents_metadata_and_time(tmp_path: Path) -> None:
    path = write_pdf(
        tmp_path / "report.pdf",
        ["Quarterly budget review\nspending is down", "", "Appendix (tables)"],
        title="Q3 Report", author="Ada Lovelace", created=datetime(2021, 6, 1, 12, 30),
    )  # fmt: skip
    assert plugins.detect_source(path).kind == "pdf"
    items, errors = scan(path)
    assert errors == []
    item = items[0]
    assert item.title == "Q3 Report" and item.kind == "note"
    assert [(m.metadata["page"], m.text) for m in item.messages] == [
        (1, "Quarterly budget review\nspending is down"),
        (3, "Appendix (tables)"),
    ]
    assert {m.author for m in item.messages} == {"Ada Lovelace"}
    assert {m.timestamp for m in item.messages} == {"2021-06-01T12:30:00.000Z"}
    assert all("dated_by" not in m.metadata for m in item.messages)
    assert item.metadata["pdf"] == {
        "title": "Q3 Report",
        "author": "Ada Lovelace",
        "creation_date": "2021-06-01T12:30:00.000Z",
    }
    assert item.metadata["pages"] == 3 and item.metadata["pages_without_text"] == 1


def test_a_pdf_without_metadata_borrows_the_files_time(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "scan-notes.pdf", ["hello"])
    os.utime(path, (1_650_000_000, 1_650_000_000))
    message = scan(path)[0][0].messages[0]
    assert message.timestamp == "2022-04-15T05:20:00.000Z" and message.metadata["dated_by"] == "file"
    assert scan(path)[0][0].title == "scan-notes"


def test_a_damaged_pdf_is_reported_and_the_folder_goes_on(tmp_path: Path) -> None:
    write_pdf(tmp_path / "good.pdf", ["fine text"])
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog")
    (tmp_path / "notes.txt").write_text("not a pdf")
    items, errors = scan(tmp_path)
    assert [i.metadata["path"] for i in items] == ["good.pdf"]
    assert (
        len(errors) == 1 and errors[0].path.endswith("broken.pdf") and "cannot read PDF" in errors[0].reason
    )
    assert plugins.detect_source(tmp_path / "notes.txt").kind != "pdf"


def test_a_pdf_source_that_is_a_link_to_a_device_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "x.pdf").symlink_to("/dev/zero")
    items, errors = scan(tmp_path / "x.pdf")
    assert items == [] and errors[0].path == str(tmp_path / "x.pdf")
    assert "a character device, not a regular file" in errors[0].reason
