"""vCard address books (``.vcf``, RFC 6350 and the older 2426 / 2.1), one file or a folder of
them: one note item per contact, one frame per contact.

A contact is a person the mind should know: its frame's text opens with ``Name <address>`` (the
form the knowledge graph's text extraction reads as a person) and lists the other addresses,
phones, organization and title, postal addresses, birthday and note; the message metadata keeps
the same as ``person`` (name, emails, phones, organization, title, addresses, birthday, uid) and,
in the mail's shape, ``from`` (``Name <first address>``) and ``to`` (the further addresses), so
a structure reader can give the person entity its addresses as it does for mail.

Time: the card's ``REV`` (last revision) when it has one, else the file's modification time
(``dated_by: file``): an address book states when a card changed, never when the person was met.
Dropped: photos and logos (base64 images), sounds, keys, and properties of no person (``PRODID``,
``X-`` extensions). The file is read line by line and each card parsed on its own (vobject), so a
broken card is a located error and the others are kept; a card with neither a name nor an address
is skipped with an error; a line vobject cannot read is left out of its card, and reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mind_harvest.plugins._bounded import read_line
from mind_harvest.plugins._file_sources import FileSource, source_hooks

from mind_core.harvest import epoch_to_iso, normalize_iso
from mind_core.harvest.items import (
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.source_files import open_source_file

VCF_SUFFIXES = (".vcf", ".vcard")
MAX_CARD_LINES = 5_000  # a photo folds into many lines; more than this is not a card
SKIPPED = frozenset({"photo", "logo", "sound", "key"})


def _values(card: Any, name: str) -> list[Any]:
    return list(card.contents.get(name, []))


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v).strip() for v in value if str(v).strip())
    return str(value).strip()


def _name(card: Any) -> str | None:
    formatted = [_text(v.value) for v in _values(card, "fn") if _text(v.value)]
    if formatted:
        return formatted[0]
    for n in _values(card, "n"):
        parts = [getattr(n.value, part, "") for part in ("prefix", "given", "additional", "family", "suffix")]
        text = " ".join(_text(p) for p in parts if _text(p))
        if text:
            return text
    return None


def _address(value: Any) -> str:
    """A postal address (``vobject.vcard.Address``) as one line."""
    parts = [getattr(value, part, "") for part in ("street", "extended", "city", "region", "code", "country")]
    return ", ".join(_text(p) for p in parts if _text(p)) or _text(value)


def card_item(card: Any, relpath: str, index: int, lent_time: str) -> HarvestItem | None:
    """The note item of one parsed card (``vobject`` component), or None when it names no one."""
    name = _name(card)
    emails = list(dict.fromkeys(_text(e.value).lower() for e in _values(card, "email") if _text(e.value)))
    if not name and not emails:
        return None
    name = name or emails[0]
    phones = [_text(t.value) for t in _values(card, "tel") if _text(t.value)]
    organization = next((_text(o.value) for o in _values(card, "org") if _text(o.value)), None)
    title = next((_text(t.value) for t in _values(card, "title") if _text(t.value)), None)
    addresses = [_address(a.value) for a in _values(card, "adr")]
    birthday = next((_text(b.value) for b in _values(card, "bday") if _text(b.value)), None)
    note = next((_text(n.value) for n in _values(card, "note") if _text(n.value)), None)
    uid = next((_text(u.value) for u in _values(card, "uid") if _text(u.value)), None)
    revised = None
    for rev in _values(card, "rev"):
        try:
            revised = normalize_iso(_text(rev.value))
        except ValueError:
            continue
    lines = [f"{name} <{emails[0]}>" if emails else name]
    lines += [f"Email: {email}" for email in emails[1:]]
    lines += [f"Phone: {phone}" for phone in phones]
    if organization:
        lines.append(f"Organization: {organization}")
    if title:
        lines.append(f"Title: {title}")
    lines += [f"Address: {address}" for address in addresses if address]
    if birthday:
        lines.append(f"Birthday: {birthday}")
    if note:
        lines += ["", note]
    person = {
        "name": name,
        "emails": emails,
        "phones": phones,
        "organization": organization,
        "title": title,
        "addresses": addresses,
        "birthday": birthday,
        "uid": uid,
    }
    identity = uid or f"{name}\x00{index}"
    metadata: dict[str, Any] = {
        "person": person,
        "from": f"{name} <{emails[0]}>" if emails else None,
        "to": [f"{name} <{email}>" for email in emails[1:]],
    }
    if revised is None:
        metadata["dated_by"] = "file"
    return HarvestItem(
        key=stable_key("vcard", relpath, identity),
        kind="note",
        title=name,
        container_key=relpath,
        messages=[
            HarvestMessage(
                key=stable_key("vcard", identity),
                text="\n".join(lines),
                timestamp=revised or lent_time,
                metadata=metadata,
            )
        ],
        metadata={"path": relpath, "address_book": relpath},
        timestamp=revised or lent_time,
    )


def card_blocks(handle: Any) -> Iterator[tuple[int, list[str]]]:
    """``(first line, lines)`` of each ``BEGIN:VCARD`` ... ``END:VCARD``, read line by line; the
    lines of properties this source drops (photos) are not kept."""
    lines: list[str] | None = None
    start = number = 0
    skipping = False
    while True:
        raw, _ = read_line(handle)
        if not raw:
            break
        number += 1
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        upper = line.strip().upper()
        if lines is None:
            if upper == "BEGIN:VCARD":
                lines, start, skipping = [line], number, False
            continue
        if line[:1] in (" ", "\t"):  # a folded continuation of the line before
            if not skipping and len(lines) < MAX_CARD_LINES:
                lines.append(line)
            continue
        skipping = line.split(":", 1)[0].split(";", 1)[0].split(".")[-1].strip().lower() in SKIPPED
        if not skipping and len(lines) < MAX_CARD_LINES:
            lines.append(line)
        if upper == "END:VCARD":
            yield start, lines
            lines = None
    if lines is not None:
        yield start, []  # unterminated


def scan_address_book(file: Path, relpath: str) -> Iterator[ScanEvent]:
    import vobject

    where = str(file)
    try:
        handle = open_source_file(file, streamed=True)
        lent_time = epoch_to_iso(os.fstat(handle.fileno()).st_mtime)
    except OSError as exc:
        yield HarvestError(where, f"cannot read: {exc.strerror or exc}")
        return
    with handle:
        for index, (line, lines) in enumerate(card_blocks(handle)):
            if not lines:
                yield HarvestError(
                    where, "card without END:VCARD at the end of the file; skipped", record=f"line {line}"
                )
                continue
            text = "\r\n".join(lines) + "\r\n"
            try:
                try:
                    card = vobject.readOne(text)
                except vobject.base.ParseError as exc:  # one bad line: the card without it, reported
                    card = vobject.readOne(text, ignoreUnreadable=True)
                    reason = re.sub(
                        r"^At line \d+: ", "", str(exc)
                    )  # a line of the card as cut, not of the file
                    yield HarvestError(
                        where, f"card kept without its unreadable lines: {reason}", record=f"line {line}"
                    )
                item = card_item(card, relpath, index, lent_time)
            except Exception as exc:  # vobject raises ParseError, ValueError, and others on bad input
                yield HarvestError(
                    where, f"unreadable card: {type(exc).__name__}: {exc}", record=f"line {line}"
                )
                continue
            if item is None:
                yield HarvestError(
                    where, "card with neither a name nor an address; skipped", record=f"line {line}"
                )
                continue
            yield item


class VCardSource(FileSource):
    """vCard address books or a folder of them: sure of a file that begins ``BEGIN:VCARD``,
    plausible for a folder with .vcf files at its top."""

    kind = "vcard"
    display_name = "vCard contacts (.vcf)"
    suffixes = VCF_SUFFIXES
    scan_file = staticmethod(scan_address_book)
    openings = (b"BEGIN:VCARD",)


register_sources, detect_sources = source_hooks(VCardSource)
