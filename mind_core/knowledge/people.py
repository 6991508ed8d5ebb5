"""One person, one entity: a name that text mentions joined to the entity it names.

Text extraction names people as a text does ("-Carl" signing a mail, "Hi Carl,"), while mail
headers name them in full (``Carl Worth <cworth@cworth.org>``), so "Carl" and "Carl Worth" were
two persons. After each harvest, over the whole mind (a name in a chat may be a person of the
mail), an active ``person`` that only text extraction found (no source stated it: no
``structure`` extractor, no address) is merged (``KnowledgeGraph.merge_entity``) when:

0. (any two persons) a source states one same address of both: one address is one person
   (an earlier harvest named it "Alex Botero-Lowry", a later one "Alexander Botero-Lowry"); the
   younger is merged into the older, which keeps both names and every address;
1. its name is, up to case and punctuation, the name or an alias (an address's other display
   name) of exactly one person, mailing list or organization a source states ("Aneesh Kumar K. V" is the sender "Aneesh Kumar K.V"; "Mail
   Delivery Subsystem" quoted from a bounce is the ``mailer-daemon@`` mailbox), or is it but
   for middle initials ("Barry A. Warsaw" is the sender "Barry Warsaw");
2. its name is one word, a first name, and every frame that mentions it points to one and the
   same person: the persons of that frame (its sender, its recipients, full names in its text)
   whose first name it is (of their name or of an alias: "Alex" of "Alexander Botero-Lowry",
   also known as "Alex Botero-Lowry"), exactly one; when the frame has none, the only person in the mind
   with that first name and a surname. Two different people, "John" greeted in a mail to John
   Doe and in one to John Smith, keep "John" apart, as does a mind with two Carls and a mention
   next to neither.

3. it is a ``concept`` of two or more words (text extraction typing "Carl Worth wrote" as a
   concept) whose name is, up to case and punctuation, the name of exactly one person a source
   states. A one-word concept is left alone: "notmuch" the program is not the list of that name.

A mention found again later (a new harvest) makes a new entity, which the next run merges again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.knowledge.model import Entity, entity_from_row
from mind_core.knowledge.structure import STRUCTURE_EXTRACTOR, name_key
from mind_core.store.db import IN_LIST, Database, in_list

STATED_GROUP_TYPES = ("mailing_list", "organization")


@dataclass(frozen=True)
class Merge:
    mention: str
    into: str
    rule: str  # "same address", "same name", "same name but initials", "a person's name" or "first name"


def _first_name(name: str) -> str:
    return name.split()[0].strip(".,'\"").casefold() if name.split() else ""


def _stated(entity: Entity) -> bool:
    """Whether a source stated the entity (mail headers, a note, a chat author), not just a text."""
    extractors = entity.properties.get("extractors") or ()
    return (
        entity.properties.get("extractor") == STRUCTURE_EXTRACTOR
        or (isinstance(extractors, list) and STRUCTURE_EXTRACTOR in extractors)
        or bool(entity.properties.get("addresses"))
    )


def _active(db: Database, entity_types: tuple[str, ...]) -> list[Entity]:
    rows = db.query(
        f"SELECT * FROM knowledge_entities WHERE entity_type IN ({IN_LIST}) AND valid_to IS NULL ORDER BY id",
        (in_list(entity_types),),
    )
    return [entity_from_row(r) for r in rows]


def _persons_by_frame(db: Database, entity_ids: list[int]) -> dict[int, dict[int, list[int]]]:
    """``{mentioned entity: {frame: [other active persons linked to that frame]}}``."""
    found: dict[int, dict[int, list[int]]] = {entity_id: {} for entity_id in entity_ids}
    rows = db.query(
        "SELECT m.entity_id AS mention, m.frame_id AS frame, o.entity_id AS other"
        " FROM kg_entity_frames m LEFT JOIN kg_entity_frames o ON o.frame_id = m.frame_id"
        " AND o.entity_id != m.entity_id AND o.entity_id IN"
        " (SELECT id FROM knowledge_entities WHERE entity_type = 'person' AND valid_to IS NULL)"
        f" WHERE m.entity_id IN ({IN_LIST})",
        (in_list(entity_ids),),
    )
    for row in rows:
        others = found[row["mention"]].setdefault(row["frame"], [])
        if row["other"] is not None:
            others.append(row["other"])
    return found


def _first_name_target(
    mention: Entity,
    frames: dict[int, list[int]],
    full_names: dict[str, list[Entity]],
) -> Entity | None:
    """The one person every frame mentioning ``mention`` points to, or None (see rule 2)."""
    candidates = {e.id: e for e in full_names.get(_first_name(mention.name), [])}
    if not frames or not candidates:
        return None
    targets: set[int] = set()
    for others in frames.values():
        in_frame = {other for other in others if other in candidates}
        if len(in_frame) > 1:
            return None
        if not in_frame:
            if len(candidates) != 1:
                return None
            in_frame = set(candidates)
        targets |= in_frame
        if len(targets) > 1:
            return None
    return candidates[targets.pop()]


def _key_without_initials(name: str) -> str:
    """The name key of a name without its middle initials: "Barry A. Warsaw" -> "barry warsaw"."""
    words = name.split()
    if len(words) < 3:
        return name_key(name)
    middle = [w for w in words[1:-1] if len(w.strip(".")) > 1]
    return name_key(" ".join([words[0], *middle, words[-1]]))


NAME_RULES = (("same name", name_key), ("same name but initials", _key_without_initials))


def _addresses(entity: Entity) -> list[str]:
    found = entity.properties.get("addresses")
    return [a.lower() for a in found if isinstance(a, str)] if isinstance(found, list) else []


def _names(entity: Entity) -> list[str]:
    aliases = entity.properties.get("aliases")
    return [entity.name, *(a for a in aliases if isinstance(a, str))] if isinstance(aliases, list) else [entity.name]


def _merge_same_address(persons: list[Entity], knowledge: KnowledgeGraph) -> list[Merge]:
    """Rule 0: a person holding an address an older person holds is that person."""
    merges: list[Merge] = []
    holder: dict[str, Entity] = {}
    for person in persons:  # oldest first
        into = next((holder[a] for a in _addresses(person) if a in holder), None)
        if into is not None and knowledge.merge_entity(person.id, into.id):
            merges.append(Merge(person.name, into.name, "same address"))
            continue
        for address in _addresses(person):
            holder.setdefault(address, person)
    return merges


def resolve_people(db: Database, knowledge: KnowledgeGraph) -> list[Merge]:
    """Merge the person mentions the rules above resolve; returns what was merged (idempotent:
    a second run finds nothing)."""
    with db.transaction():
        merges = _merge_same_address(_active(db, ("person",)), knowledge)
        persons = _active(db, ("person",))
        mentions = [p for p in persons if not _stated(p)]
        stated = [e for e in (*persons, *_active(db, STATED_GROUP_TYPES)) if _stated(e)]
        merged: set[int] = set()
        for rule, key in NAME_RULES:
            named: dict[str, list[Entity]] = defaultdict(list)
            for entity in stated:
                for spelling in {key(n) for n in _names(entity)}:
                    named[spelling].append(entity)
            for mention in mentions:
                found = named.get(key(mention.name), [])
                if mention.id not in merged and len(found) == 1 and knowledge.merge_entity(mention.id, found[0].id):
                    merged.add(mention.id)
                    merges.append(Merge(mention.name, found[0].name, rule))
        stated_persons: dict[str, list[Entity]] = defaultdict(list)
        for person in persons:
            if _stated(person):
                stated_persons[name_key(person.name)].append(person)
        for concept in _active(db, ("concept",)):
            found = stated_persons.get(name_key(concept.name), [])
            full_name = len(concept.name.split()) > 1
            if full_name and not _stated(concept) and len(found) == 1 and knowledge.merge_entity(concept.id, found[0].id):
                merges.append(Merge(concept.name, found[0].name, "a person's name"))
        first_names = [m for m in mentions if len(m.name.split()) == 1 and m.id not in merged]
        full_names: dict[str, list[Entity]] = defaultdict(list)
        for person in _active(db, ("person",)):  # as the merges above left them (aliases taken)
            if person.id not in merged:  # the first name of its name or of another of its full names
                for first in {_first_name(n) for n in _names(person) if len(n.split()) > 1}:
                    full_names[first].append(person)
        frames = _persons_by_frame(db, [m.id for m in first_names])
        for mention in first_names:
            target = _first_name_target(mention, frames[mention.id], full_names)
            if target is not None and knowledge.merge_entity(mention.id, target.id):
                merges.append(Merge(mention.name, target.name, "first name"))
    return merges
