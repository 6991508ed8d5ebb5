"""``mind kg``: the knowledge graph, read on both time axes (valid time and transaction time)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from mind_core.cli.base import (
    EXIT_OK,
    CommandArgs,
    common_options,
    example,
    mind_command,
    open_mind,
)
from mind_core.cli.output import TableView, emit
from mind_core.errors import NotFoundError

TIME_AXES_OPTIONS = (
    click.option("--valid-at", metavar="WHEN", help="What held at this instant (valid time; ISO date/time)."),
    click.option(
        "--known-at", metavar="WHEN", help="As the mind believed it at this instant (transaction time)."
    ),
    click.option("--limit", type=int, default=200, show_default=True, help="At most this many rows."),
)


def time_axes_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(TIME_AXES_OPTIONS):
        func = option(func)
    return func


def _kg_axes(args: CommandArgs) -> dict[str, str | None]:
    return {"valid_at": args.valid_at, "known_at": args.known_at}


@click.group("kg", cls=click.Group)
def kg() -> None:
    """The knowledge graph, on both time axes."""


@kg.command("entities", epilog=example("mind kg entities --type person --known-at 2024-06-01"))
@click.option("--type", metavar="TYPE", help="Only entities of this type (person, project, ...).")
@time_axes_options
@common_options
@mind_command
def kg_entities(args: CommandArgs) -> int:
    """Entities (of one --type), as they held and as they were known."""
    with open_mind(args, embed=False, readonly=True) as mind:
        found = mind.knowledge.entities_as_of(**_kg_axes(args), entity_type=args.type, limit=args.limit)
    rows = [
        {
            "id": e.id,
            "type": e.entity_type,
            "name": e.name,
            "valid_from": e.valid_from,
            "valid_to": e.valid_to,
            "recorded_at": e.recorded_at,
            "properties": e.properties,
        }
        for e in found
    ]
    table = TableView(
        ("id", "type", "name", "valid from", "valid to"),
        [(r["id"], r["type"], r["name"], r["valid_from"], r["valid_to"] or "") for r in rows],
    )
    emit(args, rows, table)
    return EXIT_OK


@kg.command("relations", epilog=example("mind kg relations --type works_on --valid-at 2024-03-01"))
@click.option("--type", metavar="TYPE", help="Only relations of this type.")
@time_axes_options
@common_options
@mind_command
def kg_relations(args: CommandArgs) -> int:
    """Relations (of one --type), with the entities they join."""
    with open_mind(args, embed=False, readonly=True) as mind:
        knowledge = mind.knowledge
        found = knowledge.relations_as_of(**_kg_axes(args), relation_type=args.type, limit=args.limit)
        names = {e.id: e.name for e in knowledge.entities_as_of(known_at=args.known_at, limit=10**9)}
    rows = [
        {
            "id": r.id,
            "source": names.get(r.source_id, r.source_id),
            "type": r.relation_type,
            "target": names.get(r.target_id, r.target_id),
            "confidence": r.confidence,
            "valid_from": r.valid_from,
            "valid_to": r.valid_to,
            "recorded_at": r.recorded_at,
        }
        for r in found
    ]
    table = TableView(
        ("source", "relation", "target", "valid from"),
        [(r["source"], r["type"], r["target"], r["valid_from"]) for r in rows],
    )
    emit(args, rows, table)
    return EXIT_OK


@kg.command("neighbours", epilog=example("mind kg neighbours Ada Lovelace"))
@click.argument(
    "name", nargs=-1, required=True, metavar="NAME...", help="The entity's name (words are joined)."
)
@time_axes_options
@common_options
@mind_command
def kg_neighbours(args: CommandArgs) -> int:
    """An entity's relations, in and out, with the entities at their other end."""
    name = " ".join(args.name)
    with open_mind(args, embed=False, readonly=True) as mind:
        knowledge = mind.knowledge
        entities = {e.id: e for e in knowledge.entities_as_of(known_at=args.known_at, limit=10**9)}
        matches = [e for e in entities.values() if e.name.lower() == name.lower()]
        if not matches:
            raise NotFoundError(f"no entity named {name!r} (as known at {args.known_at or 'now'})")
        rows = []
        for entity in matches:
            for relation in knowledge.relations_as_of(
                **_kg_axes(args), entity_id=entity.id, limit=args.limit
            ):
                outgoing = relation.source_id == entity.id
                other = entities.get(relation.target_id if outgoing else relation.source_id)
                rows.append(
                    {
                        "entity": entity.name,
                        "direction": "out" if outgoing else "in",
                        "relation": relation.relation_type,
                        "neighbour": other.name if other else None,
                        "neighbour_type": other.entity_type if other else None,
                        "valid_from": relation.valid_from,
                        "valid_to": relation.valid_to,
                    }
                )
    table = TableView(
        ("relation", "dir", "neighbour", "type", "valid from"),
        [(r["relation"], r["direction"], r["neighbour"], r["neighbour_type"], r["valid_from"]) for r in rows],
    )
    emit(args, rows, table)
    return EXIT_OK
