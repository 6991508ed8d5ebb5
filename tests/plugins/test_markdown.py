"""The markdown source on the real Obsidian vaults in ../shared/data and on small hand-made notes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from mind_harvest.plugins.markdown import MarkdownSource, parse_note, parse_wikilink, property_instant

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem

SOURCE = MarkdownSource()


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def write(folder: Path, relpath: str, content: str | bytes) -> Path:
    path = folder / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def notes_on_disk(root: Path) -> set[str]:
    """Independent listing: .md files outside hidden folders, by relative path."""
    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.update(Path(folder, f).relative_to(root).as_posix() for f in files if f.endswith(".md"))
    return found


def wikilinks_outside_code(text: str) -> tuple[list[str], list[str]]:
    """Link and embed targets found by a different method: drop frontmatter, fenced blocks (toggled
    by fence lines) and inline code spans, then split ``[[...]]`` on ``|`` and ``#``."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
        lines = lines[end + 1 :]
    visible, fence = [], None
    for line in lines:
        stripped = line.lstrip(" \t>").lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if fence:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                if not stripped[len(marker.group(1)) :].strip():
                    fence = None
            continue
        if marker:
            fence = marker.group(1)
            continue
        visible.append(re.sub(r"(`+).+?\1", "", line))
    links, embeds = [], []
    for bang, inner in re.findall(r"(!?)\[\[([^\]\n]+?)\]\]", "\n".join(visible)):
        target = inner.split("|")[0].split("#")[0].replace("\\", "").strip()
        target = target[:-3] if target.endswith(".md") else target
        if target:
            (embeds if bang else links).append(target)
    return links, embeds


# --- the real vaults -------------------------------------------------------------------------------


def test_obsidian_help_vault_has_one_item_per_note_and_no_errors(shared_data: Path) -> None:
    root = shared_data / "markdown" / "obsidian-help-en"
    items, errors = scan(root)
    assert errors == []
    assert len(items) == 173
    assert {item.container_key for item in items} == notes_on_disk(root)
    assert all(item.kind == "note" for item in items)
    assert len({item.key for item in items}) == 173
    message_keys = [m.key for item in items for m in item.messages]
    assert len(message_keys) == len(set(message_keys))
    assert all(m.text.strip() for item in items for m in item.messages)


@pytest.mark.parametrize("vault", ["obsidian-help-en", "kepano-obsidian"])
def test_links_and_embeds_match_an_independent_extraction(shared_data: Path, vault: str) -> None:
    root = shared_data / "markdown" / vault
    items, _ = scan(root)
    total_links = total_embeds = 0
    for item in items:
        expected_links, expected_embeds = wikilinks_outside_code(
            (root / item.container_key).read_text("utf-8")
        )
        refs = [ref for m in item.messages for ref in m.metadata["link_refs"]]
        assert sorted(r["target"] for r in refs if not r["embed"]) == sorted(expected_links), (
            item.container_key
        )
        assert sorted(r["target"] for r in refs if r["embed"]) == sorted(expected_embeds), item.container_key
        assert set(expected_embeds) == set(item.metadata["embeds"])
        assert set(expected_links) <= set(item.metadata["links"])
        total_links += len(expected_links)
        total_embeds += len(expected_embeds)
    assert total_links > 0 and total_embeds > 0


def test_every_body_line_lands_in_some_section(shared_data: Path) -> None:
    """Nothing of a note is lost by sectioning: each non-heading body line is in a message."""
    for vault in ("obsidian-help-en", "kepano-obsidian"):
        root = shared_data / "markdown" / vault
        items, _ = scan(root)
        for item in items:
            text = (root / item.container_key).read_text("utf-8")
            body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
            joined = "\n".join(m.text for m in item.messages)
            for line in body.split("\n"):
                if line.strip() and not re.match(r"^ {0,3}#{1,6}(\s|$)", line):
                    assert line.strip() in joined, (item.container_key, line)


def test_heading_sections_of_a_known_note(shared_data: Path) -> None:
    root = shared_data / "markdown" / "obsidian-help-en"
    [item] = [i for i in scan(root)[0] if i.container_key == "Linking notes and files/Internal links.md"]
    headings = [m.metadata["heading"] for m in item.messages]
    assert headings[0] is None  # the text before the first heading is its own section
    assert item.messages[0].text.startswith("Learn how to link to notes")
    assert "Supported formats for internal links" in headings
    section = item.messages[headings.index("Supported formats for internal links")]
    assert section.text.startswith("Supported formats for internal links\n\nObsidian supports")
    assert section.metadata["heading_path"] == ["Supported formats for internal links"]
    # `[[Three laws of motion]]` in that section is inline code, an example and not a link
    assert "Three laws of motion" not in section.metadata["links"]
    assert item.metadata["aliases"] == ["How to/Internal link", "How to/Link to blocks"]
    assert item.metadata["frontmatter"]["permalink"] == "links"


def test_tags_skip_code_numbers_and_css_colours(shared_data: Path) -> None:
    items, _ = scan(shared_data / "markdown" / "obsidian-help-en")
    by_path = {item.container_key: item for item in items}
    tags_note = by_path["Editing and formatting/Tags.md"]
    # the note's prose mentions #y1984, #tag, #TAG, #Tag and four casing styles; #1984 is not a tag
    assert tags_note.metadata["tags"] == [
        "y1984",
        "tag",
        "camelCase",
        "PascalCase",
        "snake_case",
        "kebab-case",
    ]
    everywhere = {tag for item in items for tag in item.metadata["tags"]}
    assert "1984" not in everywhere
    assert "ff0000" not in everywhere  # inside a ```css block in a callout (CSS snippets.md)


def test_kepano_vault_ignores_bases_and_config(shared_data: Path) -> None:
    root = shared_data / "markdown" / "kepano-obsidian"
    items, errors = scan(root)
    assert errors == []
    assert len(items) == 103
    assert {item.container_key for item in items} == notes_on_disk(root)
    assert not any(
        item.container_key.endswith(".base") or ".obsidian" in item.container_key for item in items
    )


def test_kepano_property_links_placeholders_and_empty_properties(shared_data: Path) -> None:
    items, _ = scan(shared_data / "markdown" / "kepano-obsidian")
    by_path = {item.container_key: item for item in items}
    book = by_path["Templates/Book Template.md"]
    assert book.metadata["frontmatter"]["created"] == "{{date}}"  # unquoted template placeholder survived
    assert book.metadata["times_from"]["created"] == "file"  # ... and, not being a date, fell back
    assert book.metadata["frontmatter"]["rating"] is None
    assert book.metadata["property_links"] == {"categories": ["Books"]}
    assert book.metadata["tags"] == ["to-read"]
    (properties,) = book.messages  # only frontmatter: its properties are its one message
    assert properties.metadata["properties_only"] and "categories: [[Books]]" in properties.text
    assert "rating" not in properties.text  # an empty property says nothing

    actor = by_path["Templates/Actor Template.md"]
    assert actor.metadata["property_links"] == {"categories": ["People"], "type": ["Actors"]}
    assert actor.metadata["links"] == ["People", "Actors"]
    assert actor.metadata["embeds"] == ["Movies.base"]
    assert actor.messages[0].metadata["link_refs"] == [
        {"target": "Movies.base", "embed": True, "subpath": "Actor"}
    ]


def test_kepano_dates_in_frontmatter_become_utc(shared_data: Path) -> None:
    root = shared_data / "markdown" / "kepano-obsidian"
    items, _ = scan(root)
    dated = [item for item in items if item.metadata["times_from"]["created"] == "frontmatter"]
    assert dated
    for item in dated:
        raw = str(item.metadata["frontmatter"][item.metadata["date_properties"]["created"]])
        match = re.match(r"(\d{4}-\d{2}-\d{2})", raw)
        assert match and item.timestamp.startswith(match.group(1)) and item.timestamp.endswith("Z")
    keys = {item.metadata["path"]: item.metadata["date_properties"]["created"] for item in dated}
    assert keys["Notes/2023 Japan Trip.md"] == "start"
    assert keys["Clippings/Buy wisely.md"] == "clipped"
    assert keys["References/Well Made 145 Kevin Kelly.md"] == "published"


# --- hand-made edge cases --------------------------------------------------------------------------


def test_broken_frontmatter_keeps_the_body_and_reports_the_line(tmp_path: Path) -> None:
    write(tmp_path, "broken.md", "---\ntitle: ok\ntags: [unclosed\n---\n# Heading\nBody with [[Link]].\n")
    items, errors = scan(tmp_path)
    [error] = errors
    assert error.path.endswith("broken.md") and error.record and error.record.startswith("line ")
    assert "frontmatter ignored" in error.reason
    [item] = items
    assert item.metadata["frontmatter"] == {} and "frontmatter_error" in item.metadata
    assert item.messages[0].text == "Heading\n\nBody with [[Link]]."
    assert item.metadata["links"] == ["Link"]


def test_frontmatter_that_is_not_a_mapping_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "list.md", "---\n- a\n- b\n---\ntext\n")
    items, errors = scan(tmp_path)
    assert len(errors) == 1 and "not a mapping" in errors[0].reason
    assert items[0].messages[0].text == "text"


def test_unclosed_frontmatter_is_body_text(tmp_path: Path) -> None:
    write(tmp_path, "open.md", "---\nnot closed\n\nstill text\n")
    items, errors = scan(tmp_path)
    assert errors == []
    assert "still text" in items[0].messages[0].text


def test_invalid_utf8_is_imported_with_replacement_and_reported(tmp_path: Path) -> None:
    write(tmp_path, "latin1.md", b"# Caf\xe9\n\nna\xefve text\n")
    items, errors = scan(tmp_path)
    [error] = errors
    assert error.record == "byte 5" and "UTF-8" in error.reason
    [item] = items
    assert item.messages[0].text == "Caf\ufffd\n\nna\ufffdve text"
    assert item.metadata["decode_error"] == "invalid UTF-8 at byte 5"


def test_binary_file_named_md_is_skipped_with_an_error(tmp_path: Path) -> None:
    write(tmp_path, "image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    write(tmp_path, "ok.md", "fine")
    items, errors = scan(tmp_path)
    assert [e.path.endswith("image.md") for e in errors] == [True]
    assert [item.container_key for item in items] == ["ok.md"]


def test_empty_note_is_an_item_without_messages(tmp_path: Path) -> None:
    write(tmp_path, "empty.md", "")
    write(tmp_path, "blank.md", "\n\n   \n")
    items, errors = scan(tmp_path)
    assert errors == []
    assert sorted(item.container_key for item in items) == ["blank.md", "empty.md"]
    assert all(item.messages == [] for item in items)


def test_ignored_folders_and_files(tmp_path: Path) -> None:
    write(tmp_path, "note.md", "kept")
    write(tmp_path, "other.markdown", "kept too")
    write(tmp_path, ".obsidian/workspace.md", "config")
    write(tmp_path, ".trash/deleted.md", "deleted")
    write(tmp_path, ".hidden/secret.md", "hidden")
    write(tmp_path, "sub/.dotfile.md", "hidden file")
    write(tmp_path, "Movies.base", "views: []")
    write(tmp_path, "Board.canvas", "{}")
    items, errors = scan(tmp_path)
    assert errors == []
    assert sorted(item.container_key for item in items) == ["note.md", "other.markdown"]


def test_sections_keys_and_heading_paths(tmp_path: Path) -> None:
    text = (
        "Intro line.\n\n# Top\n\nTop text.\n\n## Child\n\nChild text.\n\n## Empty\n\n"
        "# Top\n\nSecond top with the same heading.\n\n### Deep ###\n\nDeep text.\n"
    )
    write(tmp_path, "n.md", text)
    [item] = scan(tmp_path)[0]
    assert [m.metadata["heading_path"] for m in item.messages] == [
        [],
        ["Top"],
        ["Top", "Child"],
        ["Top"],
        ["Top", "Deep"],
    ]
    assert [m.text.split("\n")[0] for m in item.messages] == ["Intro line.", "Top", "Child", "Top", "Deep"]
    assert len({m.key for m in item.messages}) == 5  # the repeated "Top" heading gets its own key
    assert all(m.role is None for m in item.messages)

    # editing one section, or inserting a new one above, leaves the other sections' keys alone
    write(
        tmp_path,
        "n.md",
        "Intro line.\n\n# New\n\nInserted.\n\n" + text.split("\n\n", 1)[1].replace("Child text", "Edited"),
    )
    [edited] = scan(tmp_path)[0]
    assert {m.key for m in item.messages} < {m.key for m in edited.messages}


def test_headings_inside_code_fences_do_not_split(tmp_path: Path) -> None:
    write(tmp_path, "code.md", "# Real\n\n````md\n```\n# not a heading\n```\n````\n\n~~~\n# also not\n~~~\n")
    [item] = scan(tmp_path)[0]
    assert [m.metadata["heading"] for m in item.messages] == ["Real"]
    assert "# not a heading" in item.messages[0].text


def test_wikilink_forms() -> None:
    assert parse_wikilink("Note").target == "Note"
    link = parse_wikilink("Folder/Note#Heading|shown text")
    assert (link.target, link.subpath, link.alias) == ("Folder/Note", "Heading", "shown text")
    assert parse_wikilink("Note#^block-id").subpath == "^block-id"
    assert parse_wikilink("Note.md").target == "Note"
    assert parse_wikilink("Note\\|alias in a table").target == "Note"
    assert parse_wikilink("#Heading in this note") is None


def test_tags_and_links_in_prose(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.md",
        "Tagged #project/falcon and #día and #2024 and #a1.\n"
        "A URL https://example.com/page#fragment and [[Other#Section]] and [x](#anchor).\n"
        "Inline `#notatag` and `[[NotALink]]`; C# is a language; ![[diagram.png]] embedded.\n"
        "```\n#codetag [[CodeLink]]\n```\n",
    )
    [item] = scan(tmp_path)[0]
    assert item.metadata["tags"] == ["project/falcon", "día", "a1"]
    assert item.metadata["links"] == ["Other"]
    assert item.metadata["embeds"] == ["diagram.png"]


def test_frontmatter_metadata_dates_and_author(tmp_path: Path) -> None:
    write(
        tmp_path,
        "meeting.md",
        "---\ntitle: Falcon sync\ncreated: 2024-03-12T15:00:00+01:00\nupdated: 2024-03-13\n"
        'author: "[[Alice Johnson]]"\ntags: falcon, meeting\naliases: Sync\nattendees:\n  - "[[Bob Smith]]"\n---\n'
        "Notes here.\n",
    )
    [item] = scan(tmp_path)[0]
    assert item.title == "Falcon sync"
    assert item.timestamp == "2024-03-12T14:00:00.000Z"
    assert item.metadata["updated"] == "2024-03-13T00:00:00.000Z"  # a date-only value is midnight UTC
    assert item.messages[0].timestamp == "2024-03-13T00:00:00.000Z"
    assert item.messages[0].author == "Alice Johnson"
    assert item.metadata["tags"] == ["falcon", "meeting"]
    assert item.metadata["aliases"] == ["Sync"]
    assert item.metadata["property_links"] == {"author": ["Alice Johnson"], "attendees": ["Bob Smith"]}
    assert item.metadata["frontmatter"]["created"] == "2024-03-12T15:00:00+01:00"


def test_file_times_when_frontmatter_has_no_dates(tmp_path: Path) -> None:
    path = write(tmp_path, "plain.md", "---\ncreated: {{date}}\n---\nText.\n")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    [item] = scan(tmp_path)[0]
    assert item.metadata["updated"] == "2023-11-14T22:13:20.000Z"
    assert item.messages[0].timestamp == "2023-11-14T22:13:20.000Z"
    assert item.metadata["times_from"] == {"created": "file", "updated": "file"}


def test_property_instant_values() -> None:
    assert property_instant("2024-02-29") == "2024-02-29T00:00:00.000Z"
    assert property_instant("2024-02-29 10:30") == "2024-02-29T10:30:00.000Z"
    assert property_instant("2024-02-29T10:30:00Z") == "2024-02-29T10:30:00.000Z"
    assert property_instant("{{date}}") is None
    assert property_instant("") is None
    assert property_instant(None) is None
    assert property_instant(["2024-01-01"]) is None


def test_crlf_and_bom(tmp_path: Path) -> None:
    write(tmp_path, "win.md", "\ufeff---\r\ntags: [x]\r\n---\r\n# H\r\nline\r\n".encode())
    [item] = scan(tmp_path)[0]
    assert item.metadata["tags"] == ["x"]
    assert item.messages[0].text == "H\n\nline"


def test_single_file_and_missing_path(tmp_path: Path) -> None:
    path = write(tmp_path, "deep/one.md", "just one")
    [item] = scan(path)[0]
    assert item.container_key == "one.md"
    _, errors = scan(tmp_path / "nope")
    assert len(errors) == 1 and "no such file" in errors[0].reason


def test_yaml_alias_bomb_is_bounded(tmp_path: Path) -> None:
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"
    write(tmp_path, "bomb.md", bomb + "---\nbody\n")
    [item], [error] = scan(tmp_path)
    assert item.messages[0].text == "body" and item.metadata["frontmatter"] == {}
    assert error.path.endswith("bomb.md") and error.record == "line 2"
    assert "more than 10,000 values" in error.reason and "body is still imported" in error.reason


def test_parse_note_is_pure() -> None:
    note = parse_note("---\na: 1\n---\nx\n# y\nz\n")
    assert note.properties == {"a": 1}
    assert [s.heading for s in note.sections] == ["", "y"]
    assert note.sections[1].line == 5


def test_example_vault_and_plugin_registration() -> None:
    vault = Path(__file__).resolve().parents[2] / "examples" / "vault"
    assert isinstance(plugins.get_source("markdown"), MarkdownSource)
    assert plugins.detect_source(vault).kind == "markdown"
    items, errors = scan(vault)
    assert errors == []
    falcon = next(item for item in items if item.title == "Project Falcon")
    assert falcon.metadata["property_links"] == {"lead": ["Alice Johnson"]}
    assert {"Alice Johnson", "Bob Smith"} <= set(falcon.metadata["links"])
    assert "hashtag" not in falcon.metadata["tags"]  # inside the SQL code block


def test_a_note_says_where_its_date_came_from(tmp_path: Path) -> None:
    write(tmp_path, "plain.md", "# Plan\nShip it.\n")
    write(tmp_path, "daily/2024-05-01 standup.md", "# Standup\nFalcon is late.\n")
    write(tmp_path, "dated.md", "---\ncreated: 2023-02-03\n---\n# Note\nText.\n")
    items, errors = scan(tmp_path)
    assert errors == []
    by_path = {item.metadata["path"]: item for item in items}
    dated_by = {path: {m.metadata["dated_by"] for m in item.messages} for path, item in by_path.items()}
    assert dated_by == {"plain.md": {"file"}, "daily/2024-05-01 standup.md": {"name"}, "dated.md": {"frontmatter"}}
    daily = by_path["daily/2024-05-01 standup.md"]
    assert daily.metadata["times_from"]["created"] == "name"
    assert daily.metadata["created"].startswith("2024-05-01")
    assert {m.timestamp for m in daily.messages} == {daily.metadata["created"]}


def test_common_frontmatter_date_keys_date_a_note(tmp_path: Path) -> None:
    write(tmp_path, "trip.md", "---\nstart: 2023-09-12\nend: 2023-09-30\n---\n# Kyoto\nTemples.\n")
    write(tmp_path, "clip.md", "---\nclipped: 2023-11-18\npublished: 2023-09-29\n---\nBuy wisely.\n")
    write(tmp_path, "episode.md", "---\npublished: 2021-04-15\nlast: 2023-09-12\n---\nAn episode.\n")
    write(tmp_path, "spelled.md", "---\nDate Created: 2022-01-02\nLast-Modified: 2022-03-04\n---\nText.\n")
    write(tmp_path, "both.md", "---\npublished: 2020-01-01\nstart: 2021-01-01\ncreated: 2022-01-01\n---\nText.\n")
    write(tmp_path, "undated.md", "---\nyear: 1982\nend: 2023-09-30\n---\nNo date of its own.\n")
    items, errors = scan(tmp_path)
    assert errors == []
    by_path = {item.metadata["path"]: item for item in items}
    created = {path: item.metadata["created"][:10] for path, item in by_path.items() if path != "undated.md"}
    assert created == {
        "trip.md": "2023-09-12",
        "clip.md": "2023-11-18",  # clipped (when the note was made) before published
        "episode.md": "2021-04-15",  # `last` (last listened) is no date of the note
        "spelled.md": "2022-01-02",
        "both.md": "2022-01-01",  # created, then start, then published
    }
    assert by_path["trip.md"].metadata["date_properties"] == {"created": "start"}
    assert by_path["spelled.md"].metadata["date_properties"] == {
        "created": "Date Created",
        "updated": "Last-Modified",
    }
    assert by_path["spelled.md"].messages[0].timestamp == "2022-03-04T00:00:00.000Z"
    for path, item in by_path.items():
        expected = "file" if path == "undated.md" else "frontmatter"
        assert {m.metadata["dated_by"] for m in item.messages} == {expected}, path
        assert item.metadata["times_from"]["created"] == expected
    assert "date_properties" not in by_path["undated.md"].metadata


def test_a_start_date_beats_the_file_name_date(tmp_path: Path) -> None:
    write(tmp_path, "2024-05-01 plan.md", "---\nstart: 2024-06-10\n---\nThe offsite.\n")
    [item] = scan(tmp_path)[0]
    assert item.timestamp == "2024-06-10T00:00:00.000Z"
    assert item.metadata["times_from"]["created"] == "frontmatter"
