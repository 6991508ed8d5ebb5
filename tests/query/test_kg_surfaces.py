"""Knowledge-graph queries on both time axes over HTTP (a real server on 127.0.0.1), MCP and
``mind kg --json``: one request model, one answer, the same JSON on all three (issue #16 §4)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mind_core.cli import EXIT_OK, main
from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.query.http_server import QueryServer
from mind_core.query.mcp_tools import MindTools
from mind_core.query.service import ServiceConfig
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
THREAD = "PostgreSQL migration plan for Falcon"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> MindHome:
    """The example mailbox harvested (mails of 11-12 March 2024), then one person's validity
    ended by an API call: ``end_validity`` at an instant the evidence gives."""
    home = MindHome(tmp_path_factory.mktemp("kg-home"))
    with Mind.open(home.workspace_path("team"), embedder=HashingEmbedder()) as mind:
        register_source(mind, "email", EXAMPLES / "mail", "mail")
        harvest(mind, "mail")
        carol = mind.knowledge.find_entity("person", "Carol Diaz")
        assert carol is not None
        mind.knowledge.end_validity("entity", carol.id, "2024-06-30T00:00:00Z")
    return home


@pytest.fixture(scope="module")
def base(home: MindHome) -> Iterator[str]:
    server = QueryServer(
        ServiceConfig(home=home, default_workspace="team", embedder=HashingEmbedder()), "127.0.0.1", 0
    )
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    yield server.url
    server.stop()
    thread.join(timeout=10)
    server.close()


@pytest.fixture
def tools(home: MindHome) -> Iterator[MindTools]:
    tools = MindTools(home, "team", HashingEmbedder())
    yield tools
    tools.close()


def http(base: str, path: str, **params: object) -> httpx.Response:
    response = httpx.get(base + path, params=params, timeout=10)
    assert (
        response.headers["content-type"].startswith("application/json") and "Traceback" not in response.text
    )
    return response


def cli(capsys, home: MindHome, *argv: str) -> object:
    code = main([*argv, "--home", str(home.root), "--workspace", "team", "--embedder", "mock", "--json"])
    out = capsys.readouterr()
    assert code == EXIT_OK, out.err
    return json.loads(out.out)


def test_entities_on_both_axes_answer_alike_on_every_surface(capsys, home, base, tools) -> None:
    on_the_day = {"valid_at": "2024-03-11T12:00:00Z"}
    answer = http(base, "/kg/entities", type="person", **on_the_day).json()
    assert answer == tools.kg_entities("person", **on_the_day).model_dump(mode="json")
    assert answer == cli(
        capsys, home, "kg", "entities", "--type", "person", "--valid-at", on_the_day["valid_at"]
    )
    names = {e["name"] for e in answer["entities"]}
    assert {"Alice Johnson", "Bob Smith"} <= names and "Carol Diaz" not in names  # her first mail: 12 March
    assert answer["valid_at"] == "2024-03-11T12:00:00Z" and answer["known_at"] is None

    summer = http(base, "/kg/entities", type="person", valid_at="2024-05-01").json()
    assert "Carol Diaz" in {e["name"] for e in summer["entities"]}
    autumn = http(base, "/kg/entities", type="person", valid_at="2024-09-01").json()
    assert "Carol Diaz" not in {e["name"] for e in autumn["entities"]}  # ended 30 June by the API call
    assert http(base, "/kg/entities", known_at="2024-03-12").json()["entities"] == []  # harvested today


def test_what_the_mind_believed_before_an_ending_is_kept(home, base, tools) -> None:
    with Mind.open(home.workspace_path("team"), readonly=True) as mind:
        carol = mind.knowledge.find_entity("person", "Carol Diaz") or next(
            e for e in mind.knowledge.entities_as_of(entity_type="person") if e.name == "Carol Diaz"
        )
        history = mind.knowledge.entity_history(carol.id)
    assert history[-1].valid_to == "2024-06-30T00:00:00.000Z" and history[-2].valid_to is None
    believed = history[-2].recorded_at  # before the ending was recorded, the mind held her valid on
    answer = tools.kg_entities("person", valid_at="2024-09-01", known_at=believed).model_dump(mode="json")
    assert (
        answer == http(base, "/kg/entities", type="person", valid_at="2024-09-01", known_at=believed).json()
    )
    assert "Carol Diaz" in {e["name"] for e in answer["entities"]}


def test_relations_and_neighbours_answer_alike_on_every_surface(capsys, home, base, tools) -> None:
    relations = http(base, "/kg/relations", type="replied_to").json()
    assert relations == tools.kg_relations("replied_to").model_dump(mode="json")
    assert relations == cli(capsys, home, "kg", "relations", "--type", "replied_to")
    assert ("Bob Smith", "person", THREAD, "thread") in {
        (r["source"], r["source_type"], r["target"], r["target_type"]) for r in relations["relations"]
    }

    answer = http(base, "/kg/neighbours", name="bob smith", valid_at="2024-03-12").json()
    assert answer == tools.kg_neighbours("bob smith", valid_at="2024-03-12").model_dump(mode="json")
    assert answer == cli(capsys, home, "kg", "neighbours", "bob", "smith", "--valid-at", "2024-03-12")
    assert [e["name"] for e in answer["entities"]] == ["Bob Smith"]
    assert ("replied_to", "out", THREAD) in {
        (n["relation"]["relation_type"], n["direction"], n["neighbour"]) for n in answer["neighbours"]
    }
    before = http(base, "/kg/neighbours", name="Bob Smith", valid_at="2024-03-10").json()
    assert before["neighbours"] == []  # he wrote nothing before 11 March


def test_invalid_graph_queries_are_refused_alike(base, tools) -> None:
    assert http(base, "/kg/entities", valid_at="someday").status_code == 400
    with pytest.raises(InvalidInputError):
        tools.kg_entities(valid_at="someday")
    assert http(base, "/kg/relations", limit=0).status_code == 400
    assert http(base, "/kg/entities", colour="blue").status_code == 400  # unknown parameter
    missing = http(base, "/kg/neighbours", name="Nobody Here")
    assert missing.status_code == 404 and "no entity named 'Nobody Here'" in missing.json()["error"]
    with pytest.raises(NotFoundError):
        tools.kg_neighbours("Nobody Here")
    elsewhere = http(base, "/kg/entities", workspace="elsewhere")
    assert elsewhere.status_code == 404
    with pytest.raises(NotFoundError) as refused:  # MCP refuses a workspace without a mind alike
        tools.kg_entities(workspace="elsewhere")
    assert str(refused.value) == elsewhere.json()["error"]


def test_the_openapi_document_describes_the_graph_routes(base) -> None:
    spec = http(base, "/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for path, answer in (
        ("/kg/entities", "GraphEntitiesResponse"),
        ("/kg/relations", "GraphRelationsResponse"),
        ("/kg/neighbours", "NeighboursResponse"),
    ):
        operation = spec["paths"][path]["get"]
        assert {"valid_at", "known_at", "limit", "workspace"} <= {p["name"] for p in operation["parameters"]}
        schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema["$ref"].rsplit("/", 1)[1] == answer and "known_at" in schemas[answer]["properties"]
    neighbour = schemas["Neighbour"]["properties"]
    assert {"direction", "neighbour", "relation"} <= set(neighbour)


def test_ended_facts_are_left_out_unless_asked_for_alike_on_every_surface(capsys, home, base, tools) -> None:
    current = http(base, "/kg/entities", type="person").json()
    assert current == tools.kg_entities("person").model_dump(mode="json")
    assert current == cli(capsys, home, "kg", "entities", "--type", "person")
    assert "Carol Diaz" not in {e["name"] for e in current["entities"]}  # ended 30 June 2024
    history = http(base, "/kg/entities", type="person", include_ended="true").json()
    assert history == tools.kg_entities("person", include_ended=True).model_dump(mode="json")
    assert history == cli(capsys, home, "kg", "entities", "--type", "person", "--include-ended")
    assert "Carol Diaz" in {e["name"] for e in history["entities"]} and history["include_ended"] is True
    assert http(base, "/kg/neighbours", name="Carol Diaz").status_code == 404
    assert http(base, "/kg/neighbours", name="Carol Diaz", include_ended="true").json()["neighbours"]


def test_a_filter_nothing_can_match_is_refused_on_every_surface(capsys, home, base, tools) -> None:
    """A type no entity or relation has, or a kind no plugin reads, is a typo: every surface
    refuses it naming the values there are, instead of answering an empty success."""
    entities = http(base, "/kg/entities", type="nosuchtype")
    assert entities.status_code == 400 and "unknown entity type 'nosuchtype'; known types:" in entities.json()["error"]
    assert "person" in entities.json()["error"]
    relations = http(base, "/kg/relations", type="works_on")  # the mail extractors make no works_on
    assert relations.status_code == 400 and "replied_to" in relations.json()["error"]
    named = http(base, "/entities", query="carol", type="nosuchtype")
    assert named.status_code == 400 and named.json()["error"] == entities.json()["error"]
    recalled = http(base, "/recall", query="Falcon", source_kind="nosuchkind")
    assert recalled.status_code == 400 and "source_kind must be an installed plugin's kind" in recalled.json()["error"]
    assert "email" in recalled.json()["error"] and "(got 'nosuchkind')" in recalled.json()["error"]
    for refused, error in (
        (lambda: tools.kg_entities(entity_type="nosuchtype"), entities),
        (lambda: tools.kg_relations(relation_type="works_on"), relations),
        (lambda: tools.search_entities("carol", entity_type="nosuchtype"), named),
        (lambda: tools.recall_memory("Falcon", source_kind="nosuchkind"), recalled),
    ):
        with pytest.raises(InvalidInputError) as raised:
            refused()
        assert str(raised.value) == error.json()["error"]
    assert http(base, "/kg/relations", type="replied_to").status_code == 200
    assert http(base, "/recall", query="Falcon", source_kind="email").json()["results"]


def test_sources_have_one_shape_on_every_surface(capsys, home, base, tools) -> None:
    listed = http(base, "/sources").json()["sources"]
    assert listed == tools.list_sources().model_dump(mode="json")["sources"]
    assert listed == cli(capsys, home, "sources", "list")
    [mail] = listed
    assert mail["workspace"] == "team" and mail["source"] == "mail"
    assert mail["items_imported_total"] > 0 and mail["frames_held"] == mail["frames_created_total"]
    assert not {"items_imported", "frames_created", "last_items", "last_frames", "last_errors"} & set(mail)


def test_scope_current_is_workspace_on_every_surface(base, tools) -> None:
    def frames(answer: dict) -> list[tuple[str, int]]:  # scores move with the clock (recency)
        return [(r["workspace"], r["metadata"]["frame_id"]) for r in answer["results"]]

    current = http(base, "/recall", query="Falcon budget", scope="current").json()
    assert frames(current) == frames(http(base, "/recall", query="Falcon budget", scope="workspace").json())
    assert frames(current) == frames(tools.recall_memory("Falcon budget", scope="current").model_dump(mode="json"))
    assert current["results"] and {workspace for workspace, _ in frames(current)} == {"team"}


def test_a_mail_result_names_its_message_id_without_its_threads_lists(base) -> None:
    [top] = http(base, "/recall", query=THREAD, scope="workspace", limit=1).json()["results"]
    provenance, fields = top["metadata"]["provenance"], top["metadata"]["source_fields"]
    assert provenance["plugin"] == "email" and "@" in provenance["message_id"]  # an RFC 5322 Message-ID
    assert provenance["message_id"] == fields["message"]["message_id"]
    assert provenance["message_key"] and provenance["message_key"] != provenance["message_id"]
    assert fields["item"]["thread_root"] and not {"message_ids", "participants", "paths"} & set(fields["item"])
    frame = http(base, f"/frames/{top['metadata']['frame_id']}").json()
    assert provenance["message_id"] in frame["frame"]["metadata"]["source"]["item"]["message_ids"]
    assert frame["provenance"] == provenance
