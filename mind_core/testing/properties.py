"""Property checks shared by tests/reliability (a few dozen examples) and the benchmark (1,000+).

Each ``check_*`` runs one Hypothesis property ``max_examples`` times and returns how many
examples ran; a failure raises Hypothesis' (shrunk) falsifying example.

- Parsers: real samples from ../shared/data, mutated byte-wise (flips, truncations, insertions,
  splices, also of zipped exports); ``scan`` must never raise and must yield only HarvestItem or
  HarvestError.
- Queries: any string (FTS5 syntax, LIKE wildcards, NUL, surrogates, very long) given to
  HybridSearch.search, CombinedRetrieval.search and KnowledgeGraph.search_entities must not raise
  (a blank or overlong recall is refused with InvalidInputError, the validation the service
  relies on), and must never return a deleted frame or a retired entity.
"""

from __future__ import annotations

import io
import json
import random
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mind_core.errors import InvalidInputError
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.limits import MAX_QUERY_CHARS
from mind_core.mind import Mind
from mind_core.plugins import get_source
from mind_core.retrieval import CombinedRetrieval
from mind_core.search.scoring import SCORING_PROFILES
from mind_core.testing.exports import WORDS, chatgpt_conversation

MAX_SAMPLE_BYTES = 128 * 1024


@dataclass(frozen=True)
class Sample:
    """A real file's bytes and the name it is scanned under (plugins look at names)."""

    name: str
    data: bytes


def _zipped(name: str, data: bytes, member: str) -> Sample:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, data)
    return Sample(name, buffer.getvalue())


def parser_samples(shared_data: Path) -> dict[str, list[Sample]]:
    """Per plugin kind, small real files (and, for the chat exports, a zipped export)."""
    chats = shared_data / "chat-exports"
    email = shared_data / "email"

    def read(path: Path, name: str | None = None) -> Sample:
        return Sample(name or path.name, path.read_bytes())

    gpt = read(chats / "chatgpt" / "chatgpt2graph-2023" / "conversations.json")
    claude = read(chats / "claude" / "anthropic-data-2025" / "conversations.json")
    notes = sorted(
        p
        for p in (shared_data / "markdown").rglob("*.md")
        if ".obsidian" not in p.parts and p.stat().st_size <= 8 * 1024
    )
    mails = [
        *sorted((email / "cpython-test_email").glob("msg_*.txt"))[:12],
        *(p for p in sorted((email / "mail-parser").glob("mail_*")) if p.stat().st_size <= MAX_SAMPLE_BYTES),
        *(p for p in sorted((email / "mimekit-mbox").glob("*.mbox")) if p.stat().st_size <= MAX_SAMPLE_BYTES),
    ]
    return {
        "chatgpt": [
            gpt,
            read(
                chats / "chatgpt" / "polylogue-fixtures" / "native-conversation-v1.json", "conversations.json"
            ),
            _zipped("export.zip", gpt.data, "export/conversations.json"),
        ],
        "claude": [
            claude,
            read(chats / "claude" / "anthropic-data-2025" / "projects.json", "conversations.json"),
            read(
                chats / "claude" / "polylogue-fixtures" / "origin-claude-ai-export.json", "conversations.json"
            ),
            _zipped("claude.zip", claude.data, "conversations.json"),
        ],
        "gemini": [read(p) for p in sorted((chats / "gemini" / "polylogue-aistudio").glob("*.json"))],
        "markdown": [read(p) for p in notes[:40]],
        "email": [read(p, p.name if p.suffix else f"{p.name}.eml") for p in mails],
    }


# -- byte mutations --------------------------------------------------------------------------------
def _flip(data: bytes, at: int, value: int) -> bytes:
    if not data:
        return bytes([value])
    at %= len(data)
    return data[:at] + bytes([data[at] ^ (value or 1)]) + data[at + 1 :]


def _truncate(data: bytes, at: int, _value: int) -> bytes:
    return data[: at % (len(data) + 1)]


def _insert(data: bytes, at: int, value: int) -> bytes:
    at %= len(data) + 1
    hostile = (
        b"\x00",
        b"\xff\xfe",
        b'"',
        b"[" * 300,
        b"{",
        b"\\",
        b"\n---\n",
        b"\nFrom x\n",
        b"\xc3(",
        b"}]",
    )
    return data[:at] + hostile[value % len(hostile)] + data[at:]


def _splice(data: bytes, at: int, value: int) -> bytes:
    """Copy a piece of the file over another place (duplicated or misplaced structure)."""
    if not data:
        return data
    start = (at * 7919 + value) % len(data)
    piece = data[start : start + 1 + value * 8]
    at %= len(data) + 1
    return data[:at] + piece + data[at + len(piece) // 2 :]


MUTATIONS: tuple[Callable[[bytes, int, int], bytes], ...] = (_flip, _truncate, _insert, _splice)
MUTATION_STEPS = st.lists(
    st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 2**31), st.integers(0, 255)), min_size=1, max_size=6
)


def mutate(data: bytes, steps: list[tuple[Callable[[bytes, int, int], bytes], int, int]]) -> bytes:
    for mutation, at, value in steps:
        data = mutation(data, at, value)
    return data


def _settings(max_examples: int, derandomize: bool) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=derandomize,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def check_parser_on_mutations(
    kind: str, samples: list[Sample], workdir: Path, max_examples: int, *, derandomize: bool = True
) -> int:
    """Scan mutated real samples with the ``kind`` plugin: never raises, yields only items/errors."""
    source = get_source(kind)
    workdir.mkdir(parents=True, exist_ok=True)
    ran = [0]

    @_settings(max_examples, derandomize)
    @given(sample=st.sampled_from(samples), steps=MUTATION_STEPS)
    def scan_mutated(sample: Sample, steps: list) -> None:
        ran[0] += 1
        path = workdir / sample.name
        path.write_bytes(mutate(sample.data, steps))
        for event in source.scan(path):
            assert isinstance(event, HarvestItem | HarvestError), f"{kind} yielded {type(event).__name__}"
            if isinstance(event, HarvestError):
                assert event.path and event.reason, f"{kind}: an error without a location or reason"

    scan_mutated()
    return ran[0]


# -- query strings ---------------------------------------------------------------------------------
FTS_SYNTAX = st.sampled_from(
    [
        '"',
        "*",
        "^",
        ":",
        "(",
        ")",
        "NEAR(",
        "AND",
        "OR",
        "NOT",
        "-",
        "+",
        "%",
        "_",
        "\\",
        "'",
        ";",
        "\x00",
        "\ud800",
        "NEAR/2",
        "{a b}",
        "col:",
        "''",
        "--",
        "/*",
        "\u202e",
        "\ufeff",
    ]
)


@dataclass
class QueryFixture:
    """Two minds with some frames deleted (and one frame's row removed behind the indexes' back)
    and some entities retired; ``words`` come from the deleted frames so queries aim at them."""

    workspace: Mind
    personal: Mind
    deleted: dict[str, set[int]] = field(default_factory=dict)
    retired: set[int] = field(default_factory=set)
    words: list[str] = field(default_factory=list)


def query_strings(words: list[str]) -> st.SearchStrategy[str]:
    aimed = st.lists(
        st.one_of(st.sampled_from(words), FTS_SYNTAX, st.text(max_size=6)), min_size=1, max_size=12
    ).map(" ".join)
    anything = st.text(alphabet=st.characters(codec=None), max_size=300)
    long = st.integers(1_000, 2 * MAX_QUERY_CHARS).map(lambda n: ("falcon " * n)[:n])
    return st.one_of(aimed, anything, long, FTS_SYNTAX)


def check_queries(fixture: QueryFixture, max_examples: int, *, derandomize: bool = True) -> int:
    """Search, recall and entity search with any string: no crash, nothing deleted returned."""
    retrieval = CombinedRetrieval(fixture.workspace, fixture.personal, record_access_on_recall=False)
    ran = [0]

    @_settings(max_examples, derandomize)
    @given(
        query=query_strings(fixture.words),
        limit=st.integers(1, 100),
        profile=st.sampled_from(tuple(SCORING_PROFILES)),
    )
    def any_query(query: str, limit: int, profile: str) -> None:
        ran[0] += 1
        for mind, gone in (
            (fixture.workspace, fixture.deleted["workspace"]),
            (fixture.personal, fixture.deleted["personal"]),
        ):
            found = mind.search.search(query, limit=limit, profile=profile)
            assert len(found) <= limit
            assert not {r.frame.id for r in found} & gone
        try:
            recalled = retrieval.search(query, limit=limit, profile=profile)
        except InvalidInputError:
            assert not query.strip() or len(query) > MAX_QUERY_CHARS, f"recall refused {query[:80]!r}"
        else:
            assert (
                not {r.metadata["frame_id"] for r in recalled.workspace_results}
                & fixture.deleted["workspace"]
            )
            assert (
                not {r.metadata["frame_id"] for r in recalled.personal_results} & fixture.deleted["personal"]
            )
        entities = fixture.workspace.knowledge.search_entities(query, limit=limit)
        assert len(entities) <= limit and not {e.id for e in entities} & fixture.retired

    any_query()
    return ran[0]


NAMES = (
    "Alice",
    "Bob",
    "Carol",
    "Berlin",
    "Lisbon",
    "Falcon",
    "Postgres",
    "Kubernetes",
    "Acme Corp",
    "Zurich",
)


def _texts(rng: random.Random, count: int) -> list[str]:
    return [
        f"{rng.choice(NAMES)} met {rng.choice(NAMES)} in {rng.choice(NAMES)} about the "
        + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
        + f" (#{i})"
        for i in range(count)
    ]


def build_query_fixture(root: Path, embedder: Any, seed: int = 1) -> QueryFixture:
    """Harvest two small exports, then delete a third of each mind's frames (one of them by
    removing only its row, leaving orphaned FTS and vector rows) and retire some entities."""
    rng = random.Random(seed)
    minds = {}
    deleted: dict[str, set[int]] = {}
    words: list[str] = []
    for label in ("workspace", "personal"):
        export = root / label / "conversations.json"
        export.parent.mkdir(parents=True, exist_ok=True)
        conversations = [
            chatgpt_conversation(f"{label}-{c}", f"{label} {c} {rng.choice(NAMES)}", _texts(rng, 8))
            for c in range(6)
        ]
        export.write_text(json.dumps(conversations))
        mind = Mind.open(root / f"{label}.mind", embedder=embedder)
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
        ids = [row[0] for row in mind.db.query("SELECT id FROM memory_frames ORDER BY id")]
        gone = set(rng.sample(ids, len(ids) // 3))
        orphaned = min(gone)
        for frame_id in gone:
            words += mind.frames.get_by_id(frame_id).content.split()[:6]
            if frame_id != orphaned:
                mind.frames.delete(frame_id)
        with mind.db.transaction():
            mind.db.execute("DELETE FROM kg_entity_frames WHERE frame_id = ?", (orphaned,))
            mind.db.execute("DELETE FROM memory_frames WHERE id = ?", (orphaned,))
        minds[label] = mind
        deleted[label] = gone
    knowledge = minds["workspace"].knowledge
    retired = {entity.id for entity in knowledge.get_entities(limit=1000)[::2]}
    for entity_id in retired:
        knowledge.retire_entity(entity_id)
    assert retired, "the fixture needs entities to retire"
    return QueryFixture(minds["workspace"], minds["personal"], deleted, retired, sorted(set(words)))
