"""Structure becomes knowledge: what the plugins read (``metadata.source``) as entities and relations.

A text extractor guesses; a note's wikilinks, a mail's headers and a chat's participants are
facts the source states. They become entities and relations with confidence 1.0, linked to the
frames that state them (``kg_entity_frames``) and valid from the earliest event time of those
frames (``valid_from``); ``recorded_at`` stays the time the mind learned them.

- Markdown: one ``note`` entity per note (named by its title; a frontmatter ``type`` or a tag
  that names an entity type, such as ``person`` or ``project``, gives that type instead), its
  aliases from the frontmatter; ``links_to`` from every wikilink and embed (frontmatter property
  links included) that resolves to a note of the same source; ``tagged`` to a ``tag`` entity per
  tag. Links resolve as Obsidian resolves them: a path (``Folder/Note``) matches the note at that
  path or ending in it; a bare name matches the note with that file name, and when several notes
  share it, the one in the linking note's folder, else the one with the shortest path; then a
  frontmatter alias. ``#heading`` / ``#^block`` parts and ``|labels`` name a place in the target,
  kept as the relation's ``subpath``, not another note. Explicit evidence, the only thing that
  ends validity here: a frontmatter ``status`` such as ``done`` or ``cancelled`` ends the note
  entity's validity at the note's last edit (``updated``); a note that replaces another
  (``supersedes: "[[Old]]"`` in the new note, or ``superseded_by: "[[New]]"`` in the old one)
  ends the old note's validity when the new one was ``created`` and relates them with
  ``supersedes`` (new -> old). A ``superseded_by`` naming no note of the source ends the old
  note at its own last edit. The earliest of these endings wins; removing the evidence later
  does not reopen the entity (its versions keep what was believed).
- Email: one ``person`` entity per address, named by the display name its headers give it most
  often (the address when there is none), as the text extractor would name it ("Dr. Mark K.
  Joseph (lab)" is "Mark K. Joseph"), its other display names its ``aliases`` (one address is one
  person: "Alex Botero-Lowry" and "Alexander Botero-Lowry" from one address are one entity), so
  two addresses are one person only when the headers give them the same name (up to case and
  punctuation); an address that a message's list headers name
  (the plugin's ``mailing_lists``, and Gmane's rewrites of a known list's host) or that is shaped
  like a list is a ``mailing_list`` entity, a role mailbox (``noreply@``, ``postmaster@``) an
  ``organization`` (``mind_core.knowledge.addresses``); one ``thread`` entity per thread (its first
  subject); ``sent`` (a thread's opening mail), ``replied_to`` (a reply), ``to`` and ``cc`` from
  the person, list or mailbox to the thread.
- Chats: one ``conversation`` entity per conversation (its title); the named author of a turn is
  a ``person`` and the model that answered a ``model`` entity, each ``sent`` to the conversation.

Re-running over the same frames changes nothing (relations are not counted twice).
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mind_core.knowledge.addresses import address_kind
from mind_core.knowledge.person_context import person_display_name
from mind_core.timestamps import normalize_iso

log = logging.getLogger(__name__)

STRUCTURE_EXTRACTOR = "structure"
STRUCTURE_CONFIDENCE = 1.0
LINKS_TO, TAGGED, SENT, REPLIED_TO, TO, CC = "links_to", "tagged", "sent", "replied_to", "to", "cc"
SUPERSEDES = "supersedes"
# Frontmatter `type` values and tags that name an entity type (case-insensitive, singular or plural).
TYPE_WORDS = {
    "person": "person",
    "people": "person",
    "project": "project",
    "projects": "project",
    "organization": "organization",
    "organisation": "organization",
    "organizations": "organization",
    "company": "organization",
    "companies": "organization",
    "tool": "tool",
    "tools": "tool",
    "technology": "technology",
}
# A frontmatter `status` saying the thing is over: the note entity's validity ends.
ENDED_STATUSES = frozenset({"done", "completed", "complete", "closed", "finished", "cancelled", "canceled", "archived"})
# Frontmatter properties by which a note says it replaces another (its value: a wikilink or a note
# name, or a list of them); the replaced note's validity ends when the replacing note was created.
SUPERSEDES_KEYS = ("supersedes", "replaces")
SUPERSEDED_BY_KEYS = ("superseded_by", "superseded-by", "replaced_by", "replaced-by")
# What a mail address's kind (mind_core.knowledge.addresses, or the plugin's list headers) makes it in the graph.
ADDRESS_ENTITY_TYPES = {"person": "person", "list": "mailing_list", "role": "organization"}
GMANE_HOST = "public.gmane.org"
MAX_EVIDENCE_FRAMES = 50  # frame ids kept in a relation's properties (all of them link to entities)
_ADDRESS = re.compile(r"^(.*?)\s*<([^<>]+)>$")
_PLACEHOLDER = re.compile(r"\[[a-z: -]+\]")  # what redaction and forgetting leave in a header
_NAME_WORD = re.compile(r"[^\W_]+")
_WIKILINK_VALUE = re.compile(r"\[\[([^\[\]]+)\]\]")


@dataclass
class Fact:
    """An entity the source states, with the frames stating it."""

    entity_type: str
    name: str
    properties: dict[str, Any] = field(default_factory=dict)
    frames: dict[int, str] = field(default_factory=dict)  # frame id -> its event time
    valid_to: str | None = None  # only from explicit evidence (a note whose status says it ended)


@dataclass
class Link:
    source: tuple[str, str]  # (entity type, name) of the facts
    target: tuple[str, str]
    relation_type: str
    frames: dict[int, str] = field(default_factory=dict)
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class Structure:
    facts: dict[tuple[str, str], Fact] = field(default_factory=dict)
    links: dict[tuple[tuple[str, str], tuple[str, str], str], Link] = field(default_factory=dict)

    def fact(self, entity_type: str, name: str, frame_id: int, when: str) -> tuple[str, str]:
        key = (entity_type, name.lower())
        fact = self.facts.setdefault(key, Fact(entity_type, name))
        fact.frames[frame_id] = when
        return key

    def link(
        self,
        source: tuple[str, str],
        target: tuple[str, str],
        relation_type: str,
        frame_id: int,
        when: str,
        **properties: Any,
    ) -> None:
        if source == target:
            return
        link = self.links.setdefault((source, target, relation_type), Link(source, target, relation_type))
        link.frames[frame_id] = when
        for key, value in properties.items():
            if value not in (None, False, ""):
                link.properties.setdefault(key, value)


@dataclass(frozen=True)
class FrameFacts:
    """The part of a frame the structure step reads."""

    id: int
    created_at: str
    provenance: dict[str, Any]
    item: dict[str, Any]
    message: dict[str, Any]


# -- markdown ------------------------------------------------------------------------------------
def _note_stem(path: str) -> str:
    stem = posixpath.basename(path)
    return stem.rsplit(".", 1)[0] if "." in stem else stem


def _note_key(path: str) -> str:
    """A note's path without its extension, lower-cased: what a link path is compared with."""
    return path.rsplit(".", 1)[0].lower() if path.lower().endswith((".md", ".markdown")) else path.lower()


class NoteResolver:
    """Obsidian's link resolution over the notes of one source (see the module docstring)."""

    def __init__(self, paths: Iterable[str], aliases: dict[str, list[str]]) -> None:
        self.by_key = {_note_key(p): p for p in paths}
        self.by_stem: dict[str, list[str]] = {}
        for path in sorted(self.by_key.values()):
            self.by_stem.setdefault(_note_stem(path).lower(), []).append(path)
        self.by_alias: dict[str, set[str]] = {}
        for path, names in aliases.items():
            for alias in names:
                self.by_alias.setdefault(alias.strip().lower(), set()).add(path)

    def resolve(self, target: str, from_path: str) -> str | None:
        wanted = target.strip().replace("\\", "/")
        if not wanted:
            return None
        key = _note_key(wanted.lstrip("/"))
        if "/" in key:
            if key in self.by_key:
                return self.by_key[key]
            relative = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), key)).lower()
            if relative in self.by_key:
                return self.by_key[relative]
            ending = sorted(p for k, p in self.by_key.items() if k.endswith("/" + key))
            if ending:
                return min(ending, key=lambda p: (p.count("/"), len(p), p))
        else:
            candidates = self.by_stem.get(key, [])
            if len(candidates) == 1:
                return candidates[0]
            if candidates:
                folder = posixpath.dirname(from_path)
                same_folder = [p for p in candidates if posixpath.dirname(p) == folder]
                return (same_folder or sorted(candidates, key=lambda p: (p.count("/"), len(p), p)))[0]
        by_alias = self.by_alias.get(wanted.lower(), set())
        return next(iter(by_alias)) if len(by_alias) == 1 else None


def _note_type(item: dict[str, Any]) -> str:
    frontmatter = item.get("frontmatter") if isinstance(item.get("frontmatter"), dict) else {}
    declared = frontmatter.get("type")
    values = declared if isinstance(declared, list) else [declared]
    for value in values:
        if isinstance(value, str):
            link = _WIKILINK_VALUE.search(value)
            word = (link.group(1) if link else value).strip().lower()
            if word in TYPE_WORDS:
                return TYPE_WORDS[word]
    for tag in item.get("tags") or ():
        if isinstance(tag, str) and tag.lower() in TYPE_WORDS:
            return TYPE_WORDS[tag.lower()]
    return "note"


def _instant_or(value: Any, fallback: str) -> str:
    try:
        return normalize_iso(value) if isinstance(value, str) else fallback
    except ValueError:
        return fallback


def _has_ended(item: dict[str, Any]) -> bool:
    frontmatter = item.get("frontmatter") if isinstance(item.get("frontmatter"), dict) else {}
    status = frontmatter.get("status")
    return isinstance(status, str) and status.strip().lower() in ENDED_STATUSES


def _frontmatter_targets(item: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    """The notes named by these frontmatter properties: ``"[[Note#heading|label]]"`` or ``Note``."""
    frontmatter = item.get("frontmatter") if isinstance(item.get("frontmatter"), dict) else {}
    by_key = {str(k).lower(): v for k, v in frontmatter.items()}
    targets = []
    for key in keys:
        value = by_key.get(key)
        for entry in value if isinstance(value, list) else [value]:
            if isinstance(entry, str):
                link = _WIKILINK_VALUE.search(entry)
                target = (link.group(1) if link else entry).split("|")[0].split("#")[0].strip()
                if target:
                    targets.append(target)
    return targets


def _supersessions(
    notes: dict[str, list[FrameFacts]], resolver: NoteResolver
) -> list[tuple[str | None, str, FrameFacts]]:
    """``(replacing note or None, replaced note, the frame stating it)`` from both directions:
    ``supersedes`` in the newer note, ``superseded_by`` in the older one (whose replacement may
    not be in the source: None)."""
    found = []
    for path, group in notes.items():
        stating = min(group, key=lambda f: (f.created_at, f.id))
        for target in _frontmatter_targets(stating.item, SUPERSEDES_KEYS):
            older = resolver.resolve(target, path)
            if older is not None and older != path:
                found.append((path, older, stating))
        for target in _frontmatter_targets(stating.item, SUPERSEDED_BY_KEYS):
            newer = resolver.resolve(target, path)
            found.append((newer if newer != path else None, path, stating))
    return found


def _created(group: list[FrameFacts]) -> str:
    return _instant_or(group[0].item.get("created"), min(f.created_at for f in group))


def _updated(group: list[FrameFacts]) -> str:
    return _instant_or(group[0].item.get("updated"), max(f.created_at for f in group))


def markdown_structure(frames: list[FrameFacts], structure: Structure) -> None:
    notes: dict[str, list[FrameFacts]] = {}
    for frame in frames:
        path = frame.provenance.get("path") or frame.item.get("path")
        if isinstance(path, str) and path:
            notes.setdefault(path, []).append(frame)
    aliases = {
        path: [a for a in (group[0].item.get("aliases") or ()) if isinstance(a, str) and a.strip()]
        for path, group in notes.items()
    }
    resolver = NoteResolver(notes, aliases)
    titles = Counter(str(group[0].provenance.get("title") or _note_stem(path)).lower() for path, group in notes.items())
    note_keys: dict[str, tuple[str, str]] = {}
    for path, group in notes.items():
        title = str(group[0].provenance.get("title") or _note_stem(path))
        name = title if titles[title.lower()] == 1 else path.rsplit(".", 1)[0]
        entity_type = _note_type(group[0].item)
        for frame in group:
            note_keys[path] = structure.fact(entity_type, name, frame.id, frame.created_at)
        fact = structure.facts[note_keys[path]]
        fact.properties.setdefault("path", path)
        if _has_ended(group[0].item):  # ended when the note last said so: its `updated` time
            fact.valid_to = _updated(group)
        if aliases[path]:
            fact.properties.setdefault("aliases", aliases[path])
    for newer, older, stating in _supersessions(notes, resolver):
        # replaced when the replacing note was created; a replacement outside the source: when
        # the replaced note last said so
        ended = _created(notes[newer]) if newer is not None else _updated(notes[older])
        fact = structure.facts[note_keys[older]]
        fact.valid_to = ended if fact.valid_to is None else min(fact.valid_to, ended)
        if newer is not None:
            structure.link(note_keys[newer], note_keys[older], SUPERSEDES, stating.id, stating.created_at)
    for path, group in notes.items():
        source = note_keys[path]
        for frame in group:
            for ref in frame.message.get("link_refs") or ():
                if not isinstance(ref, dict) or not isinstance(ref.get("target"), str):
                    continue
                resolved = resolver.resolve(ref["target"], path)
                if resolved is not None:
                    structure.link(
                        source,
                        note_keys[resolved],
                        LINKS_TO,
                        frame.id,
                        frame.created_at,
                        embed=bool(ref.get("embed")),
                        subpath=ref.get("subpath"),
                    )
            for tag in frame.message.get("tags") or ():
                if isinstance(tag, str) and tag:
                    tag_key = structure.fact("tag", tag.lower(), frame.id, frame.created_at)
                    structure.link(source, tag_key, TAGGED, frame.id, frame.created_at)
        first = min(group, key=lambda f: (f.created_at, f.id))
        properties = first.item.get("property_links") if isinstance(first.item.get("property_links"), dict) else {}
        for name, targets in properties.items():
            for target in targets if isinstance(targets, list) else ():
                resolved = resolver.resolve(target, path) if isinstance(target, str) else None
                if resolved is not None:
                    structure.link(source, note_keys[resolved], LINKS_TO, first.id, first.created_at, property=name)
        body_tags = {t.lower() for f in group for t in (f.message.get("tags") or ()) if isinstance(t, str)}
        for tag in first.item.get("tags") or ():
            if isinstance(tag, str) and tag and tag.lower() not in body_tags:  # frontmatter tags
                tag_key = structure.fact("tag", tag.lower(), first.id, first.created_at)
                structure.link(source, tag_key, TAGGED, first.id, first.created_at)


# -- email ---------------------------------------------------------------------------------------
def split_address(value: str) -> tuple[str, str]:
    """``(display name, address)`` of a header value as the email plugin writes it; a redaction
    placeholder (``[email]``, ``[person]``) is neither: every redacted address is not one person."""
    match = _ADDRESS.match(value.strip())
    if match:
        name, address = match.group(1).strip().strip("\"'"), match.group(2).strip().lower()
        return ("" if _PLACEHOLDER.fullmatch(name) else name), ("" if _PLACEHOLDER.fullmatch(address) else address)
    text = value.strip()
    if _PLACEHOLDER.fullmatch(text):
        return "", ""
    return ("", text.lower()) if "@" in text else (text, "")


def name_key(name: str) -> str:
    """What two spellings of one name share: its words, case-folded, without punctuation
    ("Aneesh Kumar K. V" and "Aneesh Kumar K.V"; but "Anne P. Erson" is not "Anne Person")."""
    return " ".join(_NAME_WORD.findall(name.casefold()))


def _address_types(frames: list[FrameFacts]) -> dict[str, str]:
    """The entity type of every address the frames name: ``mailing_list`` when a message's list
    headers name it (``mailing_lists``, from the plugin) or its shape is a list's, ``organization``
    for a role mailbox, else ``person`` (``mind_core.knowledge.addresses``)."""
    listed = {
        address.strip().lower()
        for frame in frames
        for address in frame.message.get("mailing_lists") or ()
        if isinstance(address, str)
    }
    list_hosts = {_gmane_host(address) for address in listed} - {None}
    types: dict[str, str] = {}
    for frame in frames:
        for value in _people_values(frame.message):
            address = split_address(value)[1]
            if address and address not in types:
                listed_here = address in listed or _gmane_host(address) in list_hosts
                types[address] = ADDRESS_ENTITY_TYPES["list" if listed_here else address_kind(address)]
    return types


def _gmane_host(address: str) -> str | None:
    """The code Gmane's archive puts for the original host in an address it rewrote
    (``linux-cifs-u79uwxl29ty76z2rm5mhxa@public.gmane.org``: ``u79uwxl29ty76z2rm5mhxa`` is
    vger.kernel.org), so one list known on a host makes its other rewritten addresses lists too."""
    local, _, host = address.rpartition("@")
    if host != GMANE_HOST or "-" not in local:
        return None
    return local.rsplit("-", 1)[1] or None


def email_structure(frames: list[FrameFacts], structure: Structure) -> None:
    types = _address_types(frames)
    names: dict[str, Counter[str]] = {}
    spellings: dict[str, Counter[str]] = {}  # a person's name key -> the spellings its headers give
    for frame in frames:
        for value in _people_values(frame.message):
            name, address = split_address(value)
            if address:
                counts = names.setdefault(address, Counter())
                if name and name.lower() != address:
                    if types[address] == "person":
                        name = person_display_name(name)
                        spellings.setdefault(name_key(name), Counter())[name] += 1
                    counts[name] += 1

    def party(value: str, frame: FrameFacts) -> tuple[str, str] | None:
        name, address = split_address(value)
        entity_type = types.get(address, "person")
        if address:
            common = names.get(address)
            name = common.most_common(1)[0][0] if common else address
            if entity_type == "person" and common:  # one spelling for all addresses of a name
                name = spellings[name_key(name)].most_common(1)[0][0]
        if not name:
            return None
        key = structure.fact(entity_type, name, frame.id, frame.created_at)
        if address:
            properties = structure.facts[key].properties
            known = properties.setdefault("addresses", [])
            if address not in known:
                known.append(address)
            others = (names.get(address) or ()) if entity_type == "person" else ()
            for other in others:  # the address's other display names
                if name_key(other) != name_key(name) and other not in properties.setdefault("aliases", []):
                    properties["aliases"].append(other)
        return key

    threads: dict[str, list[FrameFacts]] = {}
    for frame in frames:
        root = frame.item.get("thread_root") or frame.provenance.get("container")
        if isinstance(root, str) and root:
            threads.setdefault(root, []).append(frame)
    subjects = Counter(str(group[0].provenance.get("title") or root).lower() for root, group in threads.items())
    for root, group in threads.items():
        subject = str(group[0].provenance.get("title") or root)
        name = subject if subjects[subject.lower()] == 1 else f"{subject} <{root}>"
        thread = ("thread", name.lower())
        for frame in group:
            structure.fact("thread", name, frame.id, frame.created_at)
        structure.facts[thread].properties.setdefault("thread_root", root)
        for frame in group:
            message = frame.message
            sender = party(message["from"], frame) if isinstance(message.get("from"), str) else None
            if sender is not None:
                kind = REPLIED_TO if message.get("in_reply_to") else SENT
                structure.link(sender, thread, kind, frame.id, frame.created_at)
            for relation_type in (TO, CC):
                for value in message.get(relation_type) or ():
                    key = party(value, frame) if isinstance(value, str) else None
                    if key is not None:
                        structure.link(key, thread, relation_type, frame.id, frame.created_at)


def _people_values(message: dict[str, Any]) -> list[str]:
    values = [message["from"]] if isinstance(message.get("from"), str) else []
    for header in (TO, CC):
        values += [v for v in message.get(header) or () if isinstance(v, str)]
    return values


# -- chats ---------------------------------------------------------------------------------------
def chat_structure(frames: list[FrameFacts], structure: Structure, titles: dict[str, str] | None = None) -> None:
    """Conversations, their authors and models; ``titles``: every conversation's title in the
    source (``chat_titles``), when ``frames`` are a page of it (a title two conversations share
    names each by its container too)."""
    if titles is None:
        titles = {}
        for frame in frames:
            container = frame.provenance.get("container")
            if isinstance(container, str):
                titles.setdefault(container, str(frame.provenance.get("title") or "Untitled"))
    counts = Counter(t.lower() for t in titles.values())
    for frame in frames:
        container = frame.provenance.get("container")
        if not isinstance(container, str):
            continue
        title = titles[container]
        name = title if counts[title.lower()] == 1 else f"{title} <{container}>"
        conversation = structure.fact("conversation", name, frame.id, frame.created_at)
        author = frame.provenance.get("author")
        if isinstance(author, str) and author.strip():
            person = structure.fact("person", author.strip(), frame.id, frame.created_at)
            structure.link(person, conversation, SENT, frame.id, frame.created_at)
            answered = frame.message.get("reply_to_author")  # a messaging app's reply to a message
            if frame.message.get("in_reply_to") and isinstance(answered, str) and answered.strip():
                other = structure.fact("person", answered.strip(), frame.id, frame.created_at)
                structure.link(person, other, REPLIED_TO, frame.id, frame.created_at)
        model = frame.message.get("model")
        if frame.provenance.get("role") == "assistant" and isinstance(model, str) and model.strip():
            structure.link(
                structure.fact("model", model.strip(), frame.id, frame.created_at),
                conversation,
                SENT,
                frame.id,
                frame.created_at,
            )


# -- calendars and address books ------------------------------------------------------------------
ORGANIZES, ATTENDS, WORKS_AT = "organizes", "attends", "works_at"


def _person(structure: Structure, value: Any, frame: FrameFacts) -> tuple[str, str] | None:
    """The person a ``Name <address>`` value names, with its address among the entity's."""
    if not isinstance(value, str):
        return None
    name, address = split_address(value)
    name = person_display_name(name) if name and name.lower() != address else address
    if not name:
        return None
    key = structure.fact("person", name, frame.id, frame.created_at)
    if address:
        known = structure.facts[key].properties.setdefault("addresses", [])
        if address not in known:
            known.append(address)
    return key


def calendar_structure(frames: list[FrameFacts], structure: Structure) -> None:
    """An event is an entity dated by its own start; its organizer organizes it, its attendees
    attend it, each a person with the address the invitation gives."""
    for frame in frames:
        title = frame.provenance.get("title") or frame.message.get("uid")
        if not isinstance(title, str) or not title:
            continue
        event = structure.fact("event", title, frame.id, frame.created_at)
        for name in ("start", "location", "uid"):
            if frame.message.get(name):
                structure.facts[event].properties.setdefault(name, frame.message[name])
        organizer = _person(structure, frame.message.get("from"), frame)
        if organizer is not None:
            structure.link(organizer, event, ORGANIZES, frame.id, frame.created_at)
        for value in frame.message.get("to") or ():
            attendee = _person(structure, value, frame)
            if attendee is not None:
                structure.link(attendee, event, ATTENDS, frame.id, frame.created_at)


def contact_structure(frames: list[FrameFacts], structure: Structure) -> None:
    """A contact is a person with every address, phone and title its card gives, working at
    its card's organization."""
    for frame in frames:
        card = frame.message.get("person")
        if not isinstance(card, dict) or not card.get("name"):
            continue
        person = structure.fact("person", person_display_name(str(card["name"])), frame.id, frame.created_at)
        properties = structure.facts[person].properties
        for address in card.get("emails") or ():
            if address not in properties.setdefault("addresses", []):
                properties["addresses"].append(address)
        for phone in card.get("phones") or ():
            if phone not in properties.setdefault("phones", []):
                properties["phones"].append(phone)
        if card.get("title"):
            properties.setdefault("title", card["title"])
        if card.get("organization"):
            organization = structure.fact("organization", str(card["organization"]), frame.id, frame.created_at)
            structure.link(person, organization, WORKS_AT, frame.id, frame.created_at)


READERS = {
    "markdown": markdown_structure,
    "email": email_structure,
    "icalendar": calendar_structure,
    "vcard": contact_structure,
}
CHAT_ITEM_KINDS = ("conversation",)


def structure_of(frames: list[FrameFacts]) -> Structure:
    """The facts the frames of one source state (pure: reads nothing, writes nothing)."""
    structure = Structure()
    by_plugin: dict[str, list[FrameFacts]] = {}
    for frame in frames:
        by_plugin.setdefault(str(frame.provenance.get("plugin")), []).append(frame)
    for plugin, group in by_plugin.items():
        reader = READERS.get(plugin)
        if reader is not None:
            reader(group, structure)
        else:
            chat_structure([f for f in group if f.provenance.get("item_kind") in CHAT_ITEM_KINDS], structure)
    return structure
