"""vCard address books written by the test: one person per card, with addresses and phones."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

from mind_harvest.plugins.vcard import VCardSource

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.harvest.source_files import ReadingRules, reading_with
from mind_core.mind import Mind
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.message_exports import write_vcf

SOURCE = VCardSource()
ADA = {
    "name": ("Ada", "Lovelace"),
    "emails": ["Ada@Example.org", "ada@home.example"],
    "phones": ["+44 20 1234 5678"],
    "organization": "Analytical Engines Ltd",
    "title": "Mathematician",
    "address": ("12 St James Sq", "London", "SW1Y 4JH", "UK"),
    "birthday": date(1815, 12, 10),
    "uid": "urn:uuid:ada",
    "note": "Met at the Babbage salon; wants the notes on Bernoulli numbers",
}
GRACE = {"name": ("Grace", "Hopper"), "emails": ["grace@navy.example"], "organization": "US Navy"}
MTIME = 1_650_000_000


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def test_each_card_is_a_person_with_addresses_phones_and_organization(tmp_path: Path) -> None:
    path = write_vcf(tmp_path / "contacts.vcf", [ADA, GRACE])
    os.utime(path, (MTIME, MTIME))
    assert plugins.detect_source(path).kind == "vcard"
    items, errors = scan(path)
    assert errors == [] and [i.title for i in items] == ["Ada Lovelace", "Grace Hopper"]
    message = items[0].messages[0]
    assert message.metadata["person"] == {
        "name": "Ada Lovelace",
        "emails": ["ada@example.org", "ada@home.example"],
        "phones": ["+44 20 1234 5678"],
        "organization": "Analytical Engines Ltd",
        "title": "Mathematician",
        "addresses": ["12 St James Sq, London, SW1Y 4JH, UK"],
        "birthday": "1815-12-10",
        "uid": "urn:uuid:ada",
    }
    assert message.metadata["from"] == "Ada Lovelace <ada@example.org>"
    assert message.metadata["to"] == ["Ada Lovelace <ada@home.example>"]
    assert message.text.splitlines()[:3] == [
        "Ada Lovelace <ada@example.org>",
        "Email: ada@home.example",
        "Phone: +44 20 1234 5678",
    ]
    assert message.text.endswith("wants the notes on Bernoulli numbers")
    assert message.timestamp == "2022-04-15T05:20:00.000Z" and message.metadata["dated_by"] == "file"


def test_photos_are_dropped_and_a_bad_line_does_not_lose_its_card(tmp_path: Path) -> None:
    path = write_vcf(
        tmp_path / "contacts.vcf", [ADA, GRACE, {"name": ("Linus", "T"), "emails": ["l@k.example"]}]
    )
    text = path.read_bytes().decode()
    photo = "PHOTO;ENCODING=b;TYPE=JPEG:" + "QUFB" * 40 + "\r\n " + "QUFB" * 30 + "\r\n"
    text = text.replace("TITLE:Mathematician\r\n", "TITLE:Mathematician\r\n" + photo, 1)
    text = text.replace(
        "FN:Grace Hopper\r\n", "FN:Grace Hopper\r\nEMAIL;TYPE=work\r\n", 1
    )  # no colon: unreadable
    text = text.replace("FN:Linus T\r\n", "FN:Linus T\r\nBDAY;VALUE=date:\r\n ;;;\r\n", 1)
    path.write_bytes(text.encode())
    items, errors = scan(path)
    assert "QUFB" not in items[0].messages[0].text
    assert [i.title for i in items] == ["Ada Lovelace", "Grace Hopper", "Linus T"]
    assert [e.reason for e in errors] == [
        "card kept without its unreadable lines: Failed to parse line: EMAIL;TYPE=work"
    ]
    graces_card = text.split("\r\n").index("BEGIN:VCARD", 1) + 1
    assert errors[0].record == f"line {graces_card}"
    assert items[1].messages[0].metadata["person"]["emails"] == ["grace@navy.example"]


def test_harvested_contacts_are_people_in_the_graph(tmp_path: Path) -> None:
    path = write_vcf(tmp_path / "book" / "contacts.vcf", [ADA, GRACE])
    with Mind.open(tmp_path / "a.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, None, path, "contacts")
        report = harvest(mind, "contacts")
        assert report.imported.errors == [] and report.imported.frames_new == 2
        people = {e.name for e in mind.knowledge.get_entities_by_type("person")}
        assert {"Ada Lovelace", "Grace Hopper"} <= people
        result = mind.search.search("Bernoulli numbers", limit=1)[0]
        assert result.frame.content.startswith("[Ada Lovelace]\nAda Lovelace <ada@example.org>")


def test_an_address_book_linked_from_outside_is_read_only_when_the_source_allows_it(tmp_path: Path) -> None:
    folder, outside = tmp_path / "contacts", tmp_path / "elsewhere"
    write_vcf(folder / "ada.vcf", [ADA])
    write_vcf(outside / "grace.vcf", [GRACE])
    (folder / "grace.vcf").symlink_to(outside / "grace.vcf")
    items, errors = scan(folder)
    assert [i.title for i in items] == ["Ada Lovelace"]
    assert errors[0].path == str(folder / "grace.vcf") and "outside the source's folder" in errors[0].reason
    with reading_with(ReadingRules(follow_outside_links=True)):
        items, errors = scan(folder)
    assert sorted(i.title for i in items) == ["Ada Lovelace", "Grace Hopper"] and errors == []
