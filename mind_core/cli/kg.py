"""``mind kg``: the knowledge graph, read on both time axes (valid time and transaction time)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mind_core.cli.base import (
    EXIT_OK,
    CommandArgs,
    common_options_hiding,
    example,
    mind_command,
    open_mind,
)
from mind_core.cli.output import TableView, emit
from mind_core.limits import DEFAULT_GRAPH_RESULTS

if TYPE_CHECKING:
    from mind_core.query.models.requests import QueryRequest

RequestT = TypeVar("RequestT", bound="QueryRequest")

TIME_AXES_OPTIONS = (
    click.option("--valid-at", metavar="WHEN", help="What held at this instant (valid time; ISO date/time)."),
    click.option(
        "--known-at", metavar="WHEN", help="As the mind believed it at this instant (transaction time)."
    ),
    click.option(
        "--include-ended",
        is_flag=True,
        help="Also what has ended (a note deleted from its vault, a project marked done); "
        "by default only what holds now (or at --known-at). --valid-at includes it anyway.",
    ),
    click.option(
        "--limit", type=int, default=DEFAULT_GRAPH_RESULTS, show_default=True, help="At most this many rows."
    ),
)


def time_axes_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(TIME_AXES_OPTIONS):
        func = option(func)
    return func


def _graph_request(model: type[RequestT], args: CommandArgs, **values: Any) -> RequestT:
    """The request the HTTP service and the MCP tools take, from the command's options."""
    from mind_core.query.models.requests import parse_request

    return parse_request(
        model,
        {
            "valid_at": args.valid_at,
            "known_at": args.known_at,
            "include_ended": args.include_ended,
            "limit": args.limit,
            **values,
        },
    )


@click.group(
    "kg",
    cls=click.Group,
    epilog=example(
        "mind kg entities --type person",
        "mind kg relations --type replied_to --valid-at 2010-01-01",
        'mind kg neighbours "Carl Worth"',
    ),
)
def kg() -> None:
    """The knowledge graph, on both time axes.

    Entities (people, notes, threads ...) and the relations between them, as they held at a
    time (--valid-at) and as the mind knew them at a time (--known-at).
    """


def _cut_note(truncated: bool, limit: int) -> list[str]:
    """The line under a table that --limit cut, so a missing row is not taken for an absent one."""
    return [f"(the first {limit} rows: more match; raise --limit to see them)"] if truncated else []


@kg.command("entities", epilog=example("mind kg entities --type person --valid-at 2010-01-01"))
@click.option("--type", metavar="TYPE", help="Only entities of this type (person, organization, note, thread ...).")
@time_axes_options
@common_options_hiding("embedder", "quiet")
@mind_command
def kg_entities(args: CommandArgs) -> int:
    """Entities (of one --type), as they held and as they were known."""
    from mind_core.query.graph import graph_entities
    from mind_core.query.models.requests import GraphEntitiesRequest

    request = _graph_request(GraphEntitiesRequest, args, type=args.type)
    with open_mind(args, embed=False, readonly=True) as mind:
        answer = graph_entities(mind.knowledge, request)
    table = TableView(
        ("id", "type", "name", "valid from", "valid to"),
        [(e.id, e.entity_type, e.name, e.valid_from, e.valid_to or "") for e in answer.entities],
    )
    emit(args, answer.model_dump(mode="json"), table, *_cut_note(answer.truncated, args.limit))
    return EXIT_OK


@kg.command("relations", epilog=example("mind kg relations --type replied_to --valid-at 2010-01-01"))
@click.option("--type", metavar="TYPE", help="Only relations of this type (sent, replied_to, to, cc, links_to, tagged, co_occurs_with).")
@time_axes_options
@common_options_hiding("embedder", "quiet")
@mind_command
def kg_relations(args: CommandArgs) -> int:
    """Relations (of one --type), with the entities they join."""
    from mind_core.query.graph import graph_relations
    from mind_core.query.models.requests import GraphRelationsRequest

    request = _graph_request(GraphRelationsRequest, args, type=args.type)
    with open_mind(args, embed=False, readonly=True) as mind:
        answer = graph_relations(mind.knowledge, request)
    table = TableView(
        ("source", "relation", "target", "valid from", "valid to"),
        [(r.source, r.relation_type, r.target, r.valid_from, r.valid_to or "") for r in answer.relations],
    )
    emit(args, answer.model_dump(mode="json"), table, *_cut_note(answer.truncated, args.limit))
    return EXIT_OK


@kg.command("neighbours", epilog=example('mind kg neighbours "Carl Worth"'))
@click.argument(
    "name", nargs=-1, required=True, metavar="NAME...", help="The entity's name (words are joined)."
)
@time_axes_options
@common_options_hiding("embedder", "quiet")
@mind_command
def kg_neighbours(args: CommandArgs) -> int:
    """An entity's relations and the entities at their other end.

    Relations in and out. Every entity of that name answers (a person and a concept may share one); each row names its
    entity (id, type, name). Stated and typed relations come first, then co-occurrences, each by
    confidence and sightings.
    """
    from mind_core.query.graph import neighbours
    from mind_core.query.models.requests import NeighboursRequest

    request = _graph_request(NeighboursRequest, args, name=" ".join(args.name))
    with open_mind(args, embed=False, readonly=True) as mind:
        answer = neighbours(mind.knowledge, request)
    table = TableView(
        ("entity", "relation", "dir", "neighbour", "type", "conf", "valid from", "valid to"),
        [
            (
                f"#{n.entity_id} {n.entity_type} {n.entity}",
                n.relation.relation_type,
                n.direction,
                n.neighbour,
                n.neighbour_type,
                f"{n.relation.confidence:.2f}",
                n.relation.valid_from,
                n.relation.valid_to or "",
            )
            for n in answer.neighbours
        ],
    )
    emit(args, answer.model_dump(mode="json"), table)
    return EXIT_OK
