"""PDF documents, one file or a folder of them: one note item per document, one frame per page.

Text comes from each page's text layer through pypdf (a pure-Python, maintained reader). What is
kept: the page text (its page number in ``page``), the document's Info metadata (title, author,
subject, creation and modification dates) on the item, the title as the item's title (else the
file name) and the author as each page's author. What is dropped: images, and so the text of a
scanned page without a text layer (no OCR: the page is counted in ``pages_without_text``),
annotations, attachments and form fields.

Time: the document's creation date (``/CreationDate``, ISO 32000-1 §7.9.4) when it has one, else
its modification date, else the file's modification time, marked ``dated_by: file`` as a note
without a date of its own. A PDF cannot be streamed line by line: pypdf reads its cross-reference
table and then one page at a time, so a file larger than ``MAX_PDF_BYTES`` (unless the source sets
its own ``--max-file-size``) is refused with an error rather than parsed. Files are opened and
walked through ``mind_core.harvest.source_files`` (regular files only, links kept inside). An encrypted PDF is opened with the empty password when it allows that, else
reported and skipped; a page whose text cannot be extracted is reported and the others kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from mind_harvest.plugins._file_sources import FileSource, source_hooks

from mind_core.harvest import epoch_to_iso, format_utc
from mind_core.harvest.items import (
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.source_files import current_rules, open_source_file

PDF_SUFFIX = ".pdf"
PDF_MAGIC = b"%PDF-"
MAX_PDF_BYTES = 512 * 2**20
INFO_FIELDS = ("title", "author", "subject", "creator", "producer")


def _info(reader: Any) -> tuple[dict[str, Any], str | None]:
    """The Info dictionary's text fields and dates (ISO), and the document's own time (or None)."""
    try:
        meta = reader.metadata
    except Exception:  # a damaged Info dictionary loses the metadata, not the pages
        meta = None
    if meta is None:
        return {}, None
    kept: dict[str, Any] = {}
    for name in INFO_FIELDS:
        value = getattr(meta, name, None)
        if isinstance(value, str) and value.strip():
            kept[name] = value.strip()
    when = None
    for name in ("creation_date", "modification_date"):
        try:
            value = getattr(meta, name, None)
        except Exception:  # an unreadable date string
            value = None
        if isinstance(value, datetime):
            kept[name] = format_utc(value)
            when = when or kept[name]
    return kept, when


def scan_pdf(file: Path, relpath: str) -> Iterator[ScanEvent]:
    where = str(file)
    try:
        handle = open_source_file(file, streamed=True)
    except OSError as exc:
        yield HarvestError(where, f"cannot read: {exc.strerror or exc}")
        return
    with handle:
        yield from _scan_open_pdf(handle, where, relpath)


def _scan_open_pdf(handle: BinaryIO, where: str, relpath: str) -> Iterator[ScanEvent]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    stat = os.fstat(handle.fileno())
    if stat.st_size > MAX_PDF_BYTES and current_rules().max_file_bytes is None:
        yield HarvestError(where, f"PDF of {stat.st_size:,} bytes is larger than {MAX_PDF_BYTES:,}; skipped")
        return
    try:
        reader = PdfReader(handle)
        if reader.is_encrypted and not reader.decrypt(""):
            yield HarvestError(where, "encrypted PDF that needs a password; skipped")
            return
        pages = reader.pages
        page_count = len(pages)
    except (PyPdfError, OSError, ValueError, KeyError, TypeError, NotImplementedError) as exc:
        yield HarvestError(where, f"cannot read PDF: {type(exc).__name__}: {exc}")
        return
    info, own_time = _info(reader)
    file_time = epoch_to_iso(stat.st_mtime)
    timestamp = own_time or file_time
    author = info.get("author")
    messages: list[HarvestMessage] = []
    without_text = 0
    for number in range(1, page_count + 1):
        try:
            text = (pages[number - 1].extract_text() or "").strip()
        except Exception as exc:  # pypdf raises many kinds on a damaged content stream
            yield HarvestError(
                where, f"cannot extract page text: {type(exc).__name__}: {exc}", record=f"page {number}"
            )
            continue
        if not text:
            without_text += 1
            continue
        metadata: dict[str, Any] = {"page": number}
        if own_time is None:
            metadata["dated_by"] = "file"
        messages.append(
            HarvestMessage(
                key=stable_key("pdf", relpath, number),
                text=text,
                author=author,
                timestamp=timestamp,
                metadata=metadata,
            )
        )
    yield HarvestItem(
        key=stable_key("pdf", relpath),
        kind="note",
        title=info.get("title") or Path(relpath).stem,
        container_key=relpath,
        messages=messages,
        metadata={"path": relpath, "pdf": info, "pages": page_count, "pages_without_text": without_text},
        timestamp=timestamp,
    )


def _is_pdf(path: Path) -> bool:
    try:
        with open_source_file(path, streamed=True) as handle:
            return handle.read(1024).lstrip().startswith(PDF_MAGIC)
    except OSError:
        return False


class PdfSource(FileSource):
    """PDF files or a folder of them: sure of a file that starts as a PDF does, plausible for a
    folder with PDFs at its top."""

    kind = "pdf"
    display_name = "PDF documents"
    suffixes = (PDF_SUFFIX,)
    scan_file = staticmethod(scan_pdf)
    starts_as = staticmethod(_is_pdf)


register_sources, detect_sources = source_hooks(PdfSource)
